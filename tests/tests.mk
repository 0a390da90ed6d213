# tests/tests.mk - the test build, included by the top-level Makefile.
#
# Conventions, so that adding a test is adding a file:
#   tests/unit/check_<name>.c      white-box Check suite: linked with the
#                                  library objects (internals visible)
#   tests/blackbox/<name>.c        public header only; linked with the shared
#                                  library; compiled as C and as C++
#   tests/scripts/<name>.sh        end-to-end scripts (exit 0 = pass); they
#                                  print "PASS <what>" / "FAIL <what>" lines
#   tests/fuzz/fuzz_<name>.c       libFuzzer targets; their corpus under
#                                  tests/fuzz/corpus/<name>/ is replayed
# `make check` runs the plain build, then the unit suites again under
# ASan+UBSan and the concurrency suites under TSan (sanitize target), then
# the scripts; tests/run-tests.sh prints one closing line for all of them.

CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt)
TEST_LIBS := $(CHECK_LIBS) -lzstd -lunwind -ldl -lpthread -lm

UNIT_SRCS := $(wildcard tests/unit/check_*.c)
ifneq ($(HAVE_OPENCL),1)
UNIT_SRCS := $(filter-out tests/unit/check_opencl.c,$(UNIT_SRCS))
endif
ifneq ($(HAVE_CUPTI),1)
UNIT_SRCS := $(filter-out tests/unit/check_cupti.c,$(UNIT_SRCS))
endif
ifneq ($(HAVE_PAPI),1)
UNIT_SRCS := $(filter-out tests/unit/check_papi%.c,$(UNIT_SRCS))
endif
ifneq ($(HAVE_ZE_HEADERS),1)
UNIT_SRCS := $(filter-out tests/unit/check_fakeze.c,$(UNIT_SRCS))
endif
ifneq ($(HAVE_LEVELZERO),1)
UNIT_SRCS := $(filter-out tests/unit/check_levelzero.c,$(UNIT_SRCS))
UNIT_SRCS := $(filter-out tests/unit/check_levelzero_lists.c,$(UNIT_SRCS))
endif
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/%)
BB_SRCS := $(wildcard tests/blackbox/*.c)
BB_BINS := $(BB_SRCS:tests/blackbox/%.c=$(B)/tests/bb_%) \
           $(BB_SRCS:tests/blackbox/%.c=$(B)/tests/bbxx_%)
TEST_HELPER_SRCS := $(wildcard tests/support/*.c)
# The Level Zero fixture needs the loader: linked only into the suites on
# the fake driver (below).
ZE_HELPER_SRCS := tests/support/ze_fixture.c tests/support/ze_measure.c
TEST_HELPER_SRCS := $(filter-out $(ZE_HELPER_SRCS),$(TEST_HELPER_SRCS))
ZE_FIXTURE_OBJ := $(B)/obj/tests/support/ze_fixture.o
ZE_MEASURE_OBJS := $(ZE_FIXTURE_OBJ) $(B)/obj/tests/support/ze_measure.o
# launch_here and its kind are found by name (dladdr): exported.
$(ZE_MEASURE_OBJS): LIB_CFLAGS += -Itests -fvisibility=default
TEST_HELPER_OBJS := $(TEST_HELPER_SRCS:%.c=$(B)/obj/%.o)

# Link sets: check_io*.c links lib/io only, check_an*.c the analysis library
# objects, every other suite the measurement library (core + io). So a suite
# builds while an unrelated module is being edited.
define unit_link
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CHECK_CFLAGS) $(CFLAGS) -o $@ $< \
	  $(1) $(TEST_HELPER_OBJS) -rdynamic $(LDFLAGS) $(TEST_LIBS)
endef
$(B)/tests/check_io%: tests/unit/check_io%.c $(IO_OBJS) $(TEST_HELPER_OBJS)
	$(call unit_link,$(IO_OBJS))
$(B)/tests/check_an%: tests/unit/check_an%.c $(AN_OBJS) $(IO_OBJS) $(TEST_HELPER_OBJS)
	$(call unit_link,$(AN_OBJS) $(IO_OBJS) $(DW_LIBS))
# check_an_dwarf reads the DWARF 4 and DWARF 5 of a fixture it dlopens from
# beside itself. Fixed flags, not CFLAGS: the test asserts what -O2 inlines
# (and the sanitizer builds need no instrumented fixture).
# A non-PIE executable of it prints its addresses (ET_EXEC: offsets are
# addresses).
DWARF_FIXTURES := $(B)/tests/dwarf_fixture4.so $(B)/tests/dwarf_fixture5.so \
                  $(B)/tests/dwarf_fixture_exec
$(B)/tests/dwarf_fixture%.so: tests/unit/fixtures/dwarf_fixture.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -Wall -Wextra -O2 -gdwarf-$* -fPIC -shared -o $@ $<
$(B)/tests/dwarf_fixture_exec: tests/unit/fixtures/dwarf_fixture.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -Wall -Wextra -O2 -g -fno-pie -no-pie -DDWF_MAIN -o $@ $<
$(B)/tests/check_an_dwarf: $(DWARF_FIXTURES)
# check_unwind's dlclose cases: one library built twice under two names
# (fixed flags: the same bytes in both), and one that calls dlclose. The
# suite links the dlclose interposition (exported: -rdynamic) as the
# shared library has it.
UNWIND_FIXTURES := $(B)/tests/unwind_lib_a.so $(B)/tests/unwind_lib_b.so \
                   $(B)/tests/unwind_closer.so
$(B)/tests/unwind_lib_%.so: tests/unit/fixtures/unwind_lib.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -Wall -Wextra -O2 -fPIC -shared -o $@ $<
$(B)/tests/unwind_closer.so: tests/unit/fixtures/unwind_closer.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -Wall -Wextra -O2 -fPIC -shared -o $@ $< -ldl
# check_fasttrace's dlclose case: one library built with two frame sizes
# (tests/unit/fixtures/unwind_frame.c).
FRAME_FIXTURES := $(B)/tests/unwind_frame_a.so $(B)/tests/unwind_frame_b.so
$(B)/tests/unwind_frame_a.so: FRAME_SIZE := 256
$(B)/tests/unwind_frame_b.so: FRAME_SIZE := 4096
$(B)/tests/unwind_frame_%.so: tests/unit/fixtures/unwind_frame.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=gnu11 -Wall -Wextra -O2 -fPIC -shared -DFRAME=$(FRAME_SIZE) -o $@ $<
$(B)/tests/check_fasttrace: tests/unit/check_fasttrace.c $(LIB_OBJS) $(DL_EXPORT_OBJ) \
    $(TEST_HELPER_OBJS) $(FRAME_FIXTURES)
	$(call unit_link,$(LIB_OBJS) $(DL_EXPORT_OBJ))
$(B)/tests/check_unwind: tests/unit/check_unwind.c $(LIB_OBJS) $(DL_EXPORT_OBJ) \
    $(TEST_HELPER_OBJS) $(UNWIND_FIXTURES)
	$(call unit_link,$(LIB_OBJS) $(DL_EXPORT_OBJ))
# The OpenCL suite runs real OpenCL (through the ICD loader) and needs the
# layer beside the library.
$(B)/tests/check_opencl: tests/unit/check_opencl.c $(LIB_OBJS) $(TEST_HELPER_OBJS) $(CL_LAYER)
	$(call unit_link,$(LIB_OBJS) -lOpenCL)
# The CUPTI suite compiles against CUPTI's headers and reads a cubin built
# beside it (when nvcc is there; its case says so and passes otherwise).
CUPTI_NVCC := $(CUDA_HOME)/bin/nvcc
CUPTI_FIXTURE := $(if $(wildcard $(CUPTI_NVCC)),$(B)/tests/cupti_fixture.cubin)
$(B)/tests/cupti_fixture.cubin: tests/unit/fixtures/cupti_kernels.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(CUPTI_NVCC) -cubin -arch=sm_90 -lineinfo -o $@ $<
CUPTI_FIXTURE += $(if $(wildcard $(CUPTI_NVCC)),$(B)/tests/cupti_static_prog)
$(B)/tests/cupti_static_prog: tests/unit/fixtures/cupti_static_prog.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(CUPTI_NVCC) -arch=sm_90 -o $@ $<
# It also analyses what it measured (the trace analysis on its dependency
# notes): the analysis objects come along.
$(B)/tests/check_cupti: tests/unit/check_cupti.c $(LIB_OBJS) $(AN_OBJS) $(TEST_HELPER_OBJS) $(CUPTI_FIXTURE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests -isystem $(CUDA_HOME)/include \
	  -isystem $(CUPTI_INC) $(CHECK_CFLAGS) $(CFLAGS) -o $@ $< \
	  $(LIB_OBJS) $(AN_OBJS) $(TEST_HELPER_OBJS) -rdynamic $(LDFLAGS) \
	  $(TEST_LIBS) $(DW_LIBS)
# check_an_gpudwarf reads the line tables of a cubin built beside it, as
# nvcc makes it (ET_EXEC) and with -rdc (ET_REL), and compares them with
# the rows binutils' readelf decodes (tests/support/cubin-lines.sh). No
# nvcc: its cases say so and pass.
GPUDWARF_FIXTURES := $(if $(wildcard $(CUPTI_NVCC)),\
    $(B)/tests/gpu_lines.cubin $(B)/tests/gpu_lines.lines \
    $(B)/tests/gpu_lines_rdc.cubin $(B)/tests/gpu_lines_rdc.lines)
$(B)/tests/gpu_lines.cubin: tests/unit/fixtures/gpu_lines.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(CUPTI_NVCC) -cubin -arch=sm_90 -lineinfo -o $@ $<
$(B)/tests/gpu_lines_rdc.cubin: tests/unit/fixtures/gpu_lines.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(CUPTI_NVCC) -cubin -rdc=true -arch=sm_90 -lineinfo -o $@ $<
$(B)/tests/%.lines: $(B)/tests/%.cubin tests/support/cubin-lines.sh
	$(Q)tests/support/cubin-lines.sh $< >$@
$(B)/tests/check_an_gpudwarf: $(GPUDWARF_FIXTURES)
$(B)/tests/check_%: tests/unit/check_%.c $(LIB_OBJS) $(TEST_HELPER_OBJS)
	$(call unit_link,$(LIB_OBJS))

# Black-box: the shared library and the public header only, as C ...
$(B)/tests/bb_%: tests/blackbox/%.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=c99 -Wall -Wextra -Wpedantic -Werror -Iinclude $(CHECK_CFLAGS) \
	  $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof -Wl,-rpath,'$$ORIGIN/../lib' \
	  $(LDFLAGS) $(CHECK_LIBS) -lpthread
# ... and as C++.
$(B)/tests/bbxx_%: tests/blackbox/%.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)$(CXX) -x c++ -std=c++11 -Wall -Wextra -Werror -Iinclude $(CHECK_CFLAGS) \
	  $(CFLAGS) -o $@ $< -x none -L$(B)/lib -lgpuprof -Wl,-rpath,'$$ORIGIN/../lib' \
	  $(LDFLAGS) $(CHECK_LIBS) -lpthread

# The fuzz targets' corpus replay: a plain program, any compiler.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/tests/%_replay)
$(B)/tests/fuzz_%_replay: tests/fuzz/fuzz_%.c $(IO_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -DGPUPROF_FUZZ_REPLAY $(CFLAGS) -o $@ $< $(IO_OBJS) \
	  $(LDFLAGS) -lzstd -lpthread

# The simulated-GPU demo program (white-box: the sim backend's test API).
SIM_DEMO := $(B)/tests/sim_demo
$(SIM_DEMO): tests/sim/sim_demo.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDFLAGS) \
	  -lzstd -lunwind -ldl -lpthread

# Hand-computed wait states and critical paths on the realtime simulated
# GPU (tests/scripts/cpath.sh).
CPATH_PROG := $(B)/tests/cpath_prog
$(CPATH_PROG): tests/sim/cpath_prog.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDFLAGS) \
	  -lzstd -lunwind -ldl -lpthread

# The same programs with lib/host's pthread functions linked in: host
# threads on the realtime simulated GPU (tests/scripts/host-deps.sh).
CPATH_HOST_PROG := $(B)/tests/cpath_host_prog
$(CPATH_HOST_PROG): tests/sim/cpath_prog.c $(LIB_OBJS) $(HOST_EXPORT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(HOST_EXPORT_OBJ) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread

# The projection experiment (tests/bench/projection.sh): its programs on
# the realtime simulated GPU with lib/host linked in, OpenMP (case d) with
# clang -fopenmp and LLVM's libomp where found (ompt_start_tool exported
# from the program: -rdynamic); the OpenCL ones where OpenCL is. Not in
# the sanitizer builds (timing experiments; the scripts run the plain
# build's).
PROJ_PROGS := $(if $(findstring -fsanitize,$(CFLAGS)),,$(B)/tests/proj_prog \
    $(if $(filter 1,$(HAVE_OPENCL)),$(B)/tests/proj_cl))
$(B)/tests/proj_prog: tests/sim/proj_prog.c tests/run/work.h $(LIB_OBJS) $(HOST_EXPORT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(if $(HAVE_OMP),$(OMP_CC) -fopenmp,$(CC)) -O2 -g $(BASE_CFLAGS) -o $@ $< \
	  $(LIB_OBJS) $(HOST_EXPORT_OBJ) -rdynamic $(LDFLAGS) -lzstd -lunwind -ldl -lpthread
$(B)/tests/proj_cl: tests/run/proj_cl.c tests/run/work.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(if $(HAVE_OMP),$(OMP_CC) -fopenmp,$(CC)) -O2 -g -o $@ $< -lOpenCL -lpthread

# A program built with -g -O2 whatever CFLAGS say: the analysis reads its
# DWARF (tests/scripts/structure.sh).
STRUCT_PROG := $(B)/tests/structure_prog
$(STRUCT_PROG): tests/sim/structure_prog.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -g -O2 -o $@ $< $(LIB_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread

# Exact calling context trees, the runtime's frames above them
# (tests/scripts/runtime-frames.sh); -g -O2 as structure_prog.
TREE_PROG := $(B)/tests/tree_prog
$(TREE_PROG): tests/sim/tree_prog.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -g -O2 -o $@ $< $(LIB_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread

# A traced run that can wait between measuring and writing
# (tests/scripts/output-faults.sh).
OUTDIR_PROG := $(B)/tests/outdir_prog
$(OUTDIR_PROG): tests/sim/outdir_prog.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDFLAGS) \
	  -lzstd -lunwind -ldl -lpthread

# Synthetic measurements for the scripts (tests/support/gen.c).
GEN_MEASURE := $(B)/tests/gen_measure
$(GEN_MEASURE): tests/tools/gen_measure.c $(B)/obj/tests/support/gen.o \
    $(B)/obj/tests/support/mkprofile.o $(IO_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $^ $(LDFLAGS) -lzstd -lpthread

# Programs that never call libgpuprof, for `gpuprof run`
# (tests/scripts/gpuprof-run.sh): no -lgpuprof.
RUN_PROGS := $(B)/tests/run_plain $(B)/tests/run_cpu_burn \
             $(if $(filter 1,$(HAVE_OPENCL)),$(B)/tests/run_cl_plain)
$(B)/tests/run_cpu_burn: tests/run/cpu_burn.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -O1 -fno-omit-frame-pointer -o $@ $< $(LDFLAGS) -pthread
$(B)/tests/run_plain: tests/run/plain.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS)
$(B)/tests/run_cl_plain: tests/run/cl_plain.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -lOpenCL

# Host threads waiting for each other (tests/scripts/host-deps.sh): linked
# with the shared library (its pthread functions stand in front of libc's)
# and plain for `gpuprof run`; the OpenMP program with clang -fopenmp and
# LLVM's libomp (OMPT) when they are there, and with GCC's libgomp (no
# OMPT: said once). Not in the sanitizer builds (a clang program beside a
# gcc-instrumented library; the script runs the plain build's).
OMP_CC ?= clang
HAVE_OMP := $(shell printf '\043include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n' | $(OMP_CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo 1)
HOST_PROGS := $(if $(findstring -fsanitize,$(CFLAGS)),,$(B)/tests/host_prog \
    $(B)/tests/run_host_prog $(B)/tests/gomp_prog \
    $(if $(HAVE_OMP),$(B)/tests/omp_prog $(B)/tests/run_omp_prog))
$(B)/tests/host_prog: tests/run/host_prog.c tests/run/work.h $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -DGP_LINKED -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS)
$(B)/tests/run_host_prog: tests/run/host_prog.c tests/run/work.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS)
$(B)/tests/omp_prog: tests/run/omp_prog.c tests/run/work.h $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(OMP_CC) -O2 -g -fopenmp -Iinclude -DGP_LINKED -o $@ $< -L$(B)/lib \
	  -lgpuprof -Wl,-rpath,'$$ORIGIN/../lib'
$(B)/tests/run_omp_prog: tests/run/omp_prog.c tests/run/work.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(OMP_CC) -O2 -g -fopenmp -o $@ $<
$(B)/tests/gomp_prog: tests/run/omp_prog.c tests/run/work.h $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -O2 -g -fopenmp -Iinclude -DGP_LINKED -o $@ $< -L$(B)/lib \
	  -lgpuprof -Wl,-rpath,'$$ORIGIN/../lib'

# The H100 fixture's PC samples as a measurement (tests/support/pcfixture.c).
GEN_PC_MEASURE := $(B)/tests/gen_pc_measure
$(GEN_PC_MEASURE): tests/tools/gen_pc_measure.c \
    $(B)/obj/tests/support/pcfixture.o $(B)/obj/tests/support/mkprofile.o \
    $(IO_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $^ $(LDFLAGS) -lzstd -lpthread

# The fake Level Zero driver (tests/fakeze/README.md), which the real loader
# loads through ZE_ENABLE_ALT_DRIVERS; check_fakeze drives it through the
# loader (linked to the loader: a test, not the library).
FAKEZE_SO := $(if $(filter 1,$(HAVE_ZE_HEADERS)),$(B)/tests/libfakeze.so)
FAKEZE_SRCS := $(wildcard tests/fakeze/*.c)
$(B)/tests/libfakeze.so: $(FAKEZE_SRCS) tests/fakeze/fakeze.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden $(CFLAGS) -shared \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $(FAKEZE_SRCS) -lpthread
# The Level Zero backend's suite: the library objects, the real loader
# (linked, as programs do) and the fake driver beside it.
$(B)/tests/check_levelzero: tests/unit/check_levelzero.c $(LIB_OBJS) $(TEST_HELPER_OBJS) $(ZE_MEASURE_OBJS) $(FAKEZE_SO)
	$(call unit_link,$(LIB_OBJS) $(ZE_MEASURE_OBJS) -lze_loader)
$(B)/tests/check_levelzero_lists: tests/unit/check_levelzero_lists.c $(LIB_OBJS) $(TEST_HELPER_OBJS) $(ZE_MEASURE_OBJS) $(FAKEZE_SO)
	$(call unit_link,$(LIB_OBJS) $(ZE_MEASURE_OBJS) -lze_loader)
$(B)/tests/check_fakeze: tests/unit/check_fakeze.c $(ZE_FIXTURE_OBJ) $(FAKEZE_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CHECK_CFLAGS) $(CFLAGS) -o $@ $< \
	  $(ZE_FIXTURE_OBJ) $(LDFLAGS) -lze_loader $(CHECK_LIBS)

# The fake libpapi (tests/fakepapi/README.md), which the PAPI backend loads
# through GPUPROF_PAPI_LIBRARY, and papi_probe (tests/tools/papi_probe.c),
# which says whether the real one counts here: the PAPI tests' aids, built
# with the PAPI backend.
PAPI_AIDS := $(if $(filter 1,$(HAVE_PAPI)),$(B)/tests/libfakepapi.so $(B)/tests/papi_probe)
FAKEPAPI_SRCS := $(wildcard tests/fakepapi/*.c)
$(B)/tests/libfakepapi.so: $(FAKEPAPI_SRCS) tests/fakepapi/fakepapi.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden $(CFLAGS) -shared \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $(FAKEPAPI_SRCS) -lpthread
$(B)/tests/papi_probe: tests/tools/papi_probe.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -ldl
$(B)/tests/check_papi $(B)/tests/check_papi_real: $(PAPI_AIDS)

# Three MPI ranks on the realtime simulated GPU with the MPI wrappers
# linked in (tests/scripts/cpath-mpi.sh); built when mpicc is found.
MPI_CPATH_PROG := $(B)/tests/mpi_cpath_prog
MPI_RING := $(B)/tests/mpi_ring
MPI_MORE_PROG := $(B)/tests/mpi_more_prog
ifeq ($(HAVE_MPI),1)
MPI_CPATH_TARGET := $(MPI_CPATH_PROG) $(MPI_RING) $(MPI_MORE_PROG)
endif
$(MPI_RING): tests/mpi/mpi_ring.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPICC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS)

$(MPI_CPATH_PROG): tests/mpi/mpi_cpath_prog.c $(PMPI_SRCS) \
    lib/pmpi/pmpi.h $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPICC) $(BASE_CFLAGS) -Ilib/pmpi $(CFLAGS) -o $@ \
	  tests/mpi/mpi_cpath_prog.c $(PMPI_SRCS) $(LIB_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread

# The MPI calls real programs add (Testall polling, Request_free,
# Iallreduce, Allgatherv, a Cartesian communicator), wrappers linked in.
$(MPI_MORE_PROG): tests/mpi/mpi_more_prog.c $(PMPI_SRCS) lib/pmpi/pmpi.h \
    $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPICC) $(BASE_CFLAGS) -Ilib/pmpi $(CFLAGS) -o $@ \
	  tests/mpi/mpi_more_prog.c $(PMPI_SRCS) $(LIB_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread

# A Level Zero program as users write them, for `gpuprof run` on the fake
# driver (tests/scripts/levelzero-pipeline.sh); linked to the loader.
ZE_PIPELINE := $(if $(filter 1,$(HAVE_ZE_HEADERS)),$(B)/tests/run_ze_pipeline)
$(B)/tests/run_ze_pipeline: tests/run/ze_pipeline.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -lze_loader

# The GPU programs of tools/gpu-session.sh (GPA's parallelism optimizers on
# real kernels): CUDA programs, built when nvcc works, like the examples.
GPU_PROGS := $(if $(filter 1,$(HAVE_NVCC)),$(B)/tests/gpu/tiny_blocks \
               $(B)/tests/gpu/few_blocks)
$(B)/tests/gpu/%: tests/gpu/%.cu tests/gpu/parallelism.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -o $@ $< \
	  $(NVCC_LDFLAGS)

# A program linked with -lgpuprof that launches from a library, closes it
# and launches from another at its address (tests/scripts/dlclose.sh).
DL_REUSE := $(B)/tests/run_dl_reuse
$(DL_REUSE): tests/run/dl_reuse.c $(LIB_SO) $(UNWIND_FIXTURES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS) -ldl

tests: all $(UNIT_BINS) $(BB_BINS) $(FUZZ_BINS) $(SIM_DEMO) $(STRUCT_PROG) \
       $(TREE_PROG) \
       $(CPATH_PROG) $(CPATH_HOST_PROG) $(MPI_CPATH_TARGET) \
       $(GEN_MEASURE) $(RUN_PROGS) $(GEN_PC_MEASURE) $(OUTDIR_PROG) $(FAKEZE_SO) \
       $(ZE_PIPELINE) $(PAPI_AIDS) $(GPU_PROGS) $(DL_REUSE) $(HOST_PROGS) \
       $(PROJ_PROGS)

# Runs what is built in $(B); used by check and by the sanitizer builds.
tests-run: tests
	$(Q)B=$(B) tests/run-tests.sh $(UNIT_BINS) $(BB_BINS)

SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
             -fno-sanitize-recover=undefined
TSAN_FLAGS := -O1 -g -fsanitize=thread

# The CUDA examples are not built with sanitizers (nvcc takes neither
# CFLAGS nor LDFLAGS; cupti-gpu.sh runs the plain build's).
sanitize:
	$(Q)$(MAKE) --no-print-directory B=build/asan CFLAGS="$(SAN_FLAGS)" \
	  LDFLAGS="-fsanitize=address,undefined" HAVE_NVCC= tests
	$(Q)$(MAKE) --no-print-directory B=build/tsan CFLAGS="$(TSAN_FLAGS)" \
	  LDFLAGS="-fsanitize=thread" HAVE_NVCC= tests

check: deps-check
	$(Q)$(MAKE) --no-print-directory all tests sanitize
	$(Q)GPUPROF_STRESS=$(or $(GPUPROF_STRESS),short) tests/run-tests.sh --all

# A longer run of the concurrency stress tests.
stress:
	$(Q)$(MAKE) --no-print-directory all tests sanitize
	$(Q)GPUPROF_STRESS=long tests/run-tests.sh --all

# The CUDA examples on a real NVIDIA GPU, measured by the CUPTI backend and
# checked against their own counts and CUDA event times
# (tests/scripts/cupti-gpu.sh). `make check` runs the script too; it says
# SKIP where no GPU is found. Here, with a GPU, a backend that is not built
# in or examples that could not be built fail instead of skipping.
check-gpu:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)B=$(B) GPUPROF_GPU_REQUIRED=1 bash tests/scripts/cupti-gpu.sh

# The GPU advisor's suites read the H100 fixtures (tests/fixtures/gpu-sm90)
# from wherever the tests run.
GPU_SM90_FIXTURES := -DFIXTURES='"$(abspath tests/fixtures/gpu-sm90)"'
$(B)/tests/check_an_sass $(B)/tests/check_an_advise $(B)/tests/check_an_gcct \
    $(B)/tests/check_an_ranks: \
    BASE_CFLAGS += $(GPU_SM90_FIXTURES)

# Python frames: check_pyframes checks pyframes_layout.h against CPython
# 3.11's internal headers where python3.11-dev installed them.
# (GPUPROF_HAVE_PY311_HEADERS in gen/features.h).
PY311_INC := $(if $(wildcard /usr/include/python3.11/internal/pycore_frame.h),/usr/include/python3.11)
FEATURE_NAMES += PY311_HEADERS
FEATURES += $(if $(PY311_INC),PY311_HEADERS)
$(B)/tests/check_pyframes: tests/unit/check_pyframes.c $(LIB_OBJS) $(TEST_HELPER_OBJS) $(GEN_FEATURES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CHECK_CFLAGS) \
	  $(if $(PY311_INC),-isystem $(PY311_INC)) \
	  $(CFLAGS) -o $@ $< $(LIB_OBJS) $(TEST_HELPER_OBJS) -rdynamic $(LDFLAGS) \
	  $(TEST_LIBS)
