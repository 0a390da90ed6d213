# tests/bench.mk - `make bench`: every hot path's figure, one line each:
#   BENCH <name> <value> <unit>
# Each program under tests/bench/bench_<name>.c is white-box (linked with the
# library objects) and prints its own BENCH lines, with a same-run baseline
# where one exists. Targets live here, never in timed unit tests.

BENCH_SRCS := $(wildcard tests/bench/bench_*.c)
ifneq ($(HAVE_OPENCL),1)
BENCH_SRCS := $(filter-out tests/bench/bench_opencl.c,$(BENCH_SRCS))
endif
ifneq ($(HAVE_CUPTI),1)
BENCH_SRCS := $(filter-out tests/bench/bench_cupti.c,$(BENCH_SRCS))
endif
ifneq ($(HAVE_PAPI),1)
BENCH_SRCS := $(filter-out tests/bench/bench_papi.c,$(BENCH_SRCS))
endif
ifneq ($(HAVE_LEVELZERO),1)
BENCH_SRCS := $(filter-out tests/bench/bench_levelzero.c,$(BENCH_SRCS))
endif
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(B)/bench/%)
# The benchmarks link the dlclose interposition and export it, as
# libgpuprof.so has it: the hook's loader check is then what it is there.
DL_EXPORT := $(DL_EXPORT_OBJ) -Wl,--export-dynamic-symbol=dlclose

# The Level Zero append benchmark: the real loader (linked, as programs do)
# and the fake driver (tests/fakeze) beside the tests.
$(B)/bench/bench_levelzero: tests/bench/bench_levelzero.c $(LIB_OBJS) $(DL_EXPORT_OBJ) $(FAKEZE_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_OBJS) $(DL_EXPORT) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm -lze_loader

$(B)/bench/bench_cupti: tests/bench/bench_cupti.c $(LIB_OBJS) $(DL_EXPORT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests -isystem $(CUDA_HOME)/include \
	  -isystem $(CUPTI_INC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(DL_EXPORT) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm

$(B)/bench/bench_%: tests/bench/bench_%.c $(LIB_OBJS) $(DL_EXPORT_OBJ) $(AN_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_OBJS) $(DL_EXPORT) $(AN_OBJS) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm $(DW_LIBS)

# The host layer's mutex hook is libgpuprof.so's (lib/host/interpose.c):
# its benchmark links the shared library, not the objects.
$(B)/bench/bench_mutex: tests/bench/bench_mutex.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS) -ldl

# The analysis benchmark generates its measurements (tests/support).
$(B)/bench/bench_analysis: tests/bench/bench_analysis.c $(AN_OBJS) $(IO_OBJS) \
    $(B)/obj/tests/support/gen.o $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(AN_OBJS) $(IO_OBJS) \
	  $(B)/obj/tests/support/gen.o $(B)/obj/tests/support/mkprofile.o \
	  $(LDFLAGS) -lzstd -ldl -lpthread -lm $(DW_LIBS)

# The scaling benchmark generates its measurements once (support/gen.c) and
# runs the gpuprof command on them.
$(B)/bench/bench_scaling: tests/bench/bench_scaling.c $(IO_OBJS) \
    $(B)/obj/tests/support/gen.o $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(IO_OBJS) \
	  $(B)/obj/tests/support/gen.o $(B)/obj/tests/support/mkprofile.o \
	  $(LDFLAGS) -lzstd -lpthread -lm

# The trace analysis benchmark makes its trace (tests/support/mkprofile).
$(B)/bench/bench_cpath: tests/bench/bench_cpath.c $(AN_OBJS) $(IO_OBJS) \
    $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(AN_OBJS) $(IO_OBJS) \
	  $(B)/obj/tests/support/mkprofile.o \
	  $(LDFLAGS) -lzstd -ldl -lpthread -lm $(DW_LIBS)

# The advisor's benchmark reads the H100 fixture (tests/support/pcfixture.c).
$(B)/bench/bench_advise: tests/bench/bench_advise.c $(AN_OBJS) $(IO_OBJS) \
    $(B)/obj/tests/support/pcfixture.o $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests \
	  -DFIXTURES='"$(abspath tests/fixtures/gpu-sm90)"' $(CFLAGS) -o $@ $< \
	  $(AN_OBJS) $(IO_OBJS) $(B)/obj/tests/support/pcfixture.o \
	  $(B)/obj/tests/support/mkprofile.o $(LDFLAGS) -lzstd -ldl -lpthread -lm \
	  $(DW_LIBS)

# GPU calling contexts at analyze time, on the same fixture.
$(B)/bench/bench_gcct: tests/bench/bench_gcct.c $(AN_OBJS) $(IO_OBJS) \
    $(B)/obj/tests/support/pcfixture.o $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests \
	  -DFIXTURES='"$(abspath tests/fixtures/gpu-sm90)"' $(CFLAGS) -o $@ $< \
	  $(AN_OBJS) $(IO_OBJS) $(B)/obj/tests/support/pcfixture.o \
	  $(B)/obj/tests/support/mkprofile.o $(LDFLAGS) -lzstd -ldl -lpthread -lm \
	  $(DW_LIBS)

$(B)/bench/bench_opencl: tests/bench/bench_opencl.c $(LIB_OBJS) $(DL_EXPORT_OBJ) $(AN_OBJS) $(CL_LAYER)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -rdynamic -o $@ $< $(LIB_OBJS) $(DL_EXPORT) \
	  $(AN_OBJS) $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm -lOpenCL $(DW_LIBS)

# The CUPTI launch benchmark is a CUDA program (built by nvcc when it is
# found, like the CUDA examples) on the public API; it compares processes of
# itself measured and not, and says "skipped" where there is no GPU.
CUPTI_LAUNCH_BENCH := $(if $(filter 1,$(HAVE_NVCC)),$(B)/bench/cupti_launch)
$(B)/bench/cupti_launch: tests/bench/cupti_launch.cu tests/bench/bench.h $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -Iinclude \
	  -Itests -isystem $(CUPTI_INC) -o $@ $< -L$(B)/lib -lgpuprof -ldl \
	  -Xlinker -rpath,'$$ORIGIN/../lib' $(NVCC_LDFLAGS)

bench: deps-bench
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS) $(CUPTI_LAUNCH_BENCH) $(PROJ_PROGS)
	$(Q)for b in $(BENCH_BINS) $(CUPTI_LAUNCH_BENCH); do $$b || exit 1; done
ifeq ($(HAVE_OPENCL),1)
	$(Q)B=$(B) tests/bench/opencl_demo.sh
	$(Q)B=$(B) bash tests/bench/jacobi_projection.sh
endif
	$(Q)B=$(B) bash tests/bench/projection.sh
	$(Q)B=$(B) PROJ_BACKENDS=pocl PROJ_DEVICES=free bash tests/bench/projection.sh

# The OTF2 export's benchmark writes its measurement with
# tests/support/mkprofile.c and lib/io's trace writer.
$(B)/bench/bench_otf2: tests/bench/bench_otf2.c $(AN_OBJS) $(IO_OBJS) \
    $(B)/obj/tests/support/mkprofile.o
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(AN_OBJS) $(IO_OBJS) \
	  $(B)/obj/tests/support/mkprofile.o $(LDFLAGS) -lzstd -ldl -lpthread -lm \
	  $(DW_LIBS)

# Python frames' cost embeds CPython 3.11 (python3.11-dev); left out without it.
PY311_CONFIG := $(wildcard /usr/bin/python3.11-config)
ifeq ($(PY311_CONFIG),)
BENCH_BINS := $(filter-out $(B)/bench/bench_pyframes,$(BENCH_BINS))
endif
$(B)/bench/bench_pyframes: tests/bench/bench_pyframes.c $(LIB_OBJS) $(DL_EXPORT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(shell $(PY311_CONFIG) --includes) \
	  $(CFLAGS) -o $@ $< $(LIB_OBJS) $(DL_EXPORT) $(LDFLAGS) \
	  $(shell $(PY311_CONFIG) --embed --ldflags) -lzstd -lunwind -ldl \
	  -lpthread -lm

# make bench-compare BASE=<rev> [ROUNDS=3] [BENCHES="sim unwind ..."]: every
# figure of the working tree against revision BASE's, both built here and
# run in interleaved rounds; medians, ratios, and the figures that got worse
# by more than the noise measured (tests/bench/compare.sh, doc/BENCH.md).
.PHONY: bench-compare
bench-compare: deps-bench
	$(Q)BASE="$(or $(BASE),main)" ROUNDS="$(or $(ROUNDS),3)" \
	  BENCHES="$(BENCHES)" B=$(B) tests/bench/compare.sh

# make bench-ir: the hook in instructions per call under callgrind
# (tests/bench/hook_ir.sh; valgrind's counts do not move with the load).
$(B)/bench/hook_ir: tests/bench/hook_ir.c $(LIB_OBJS) $(DL_EXPORT_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Itests $(CFLAGS) -o $@ $< $(LIB_OBJS) $(DL_EXPORT) \
	  $(LDFLAGS) -lzstd -lunwind -ldl -lpthread -lm
.PHONY: bench-ir
bench-ir: $(B)/bench/hook_ir
	$(Q)B=$(B) tests/bench/hook_ir.sh
