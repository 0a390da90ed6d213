# libgpuprof - one plain GNU Makefile.
#
#   make            build the libraries, the gpuprof command and the examples
#                   (and gpuprof-mpi when mpicc is found)
#   make check      install missing Debian packages, build, run every test
#   make demo       install missing Debian packages, build, measure an
#                   OpenCL program traced and print its trees, wait states,
#                   critical path and a projection
#   make bench      print BENCH lines (see README.md)
#   make check-gpu  the CUDA examples on an NVIDIA GPU, measured by the
#                   CUPTI backend (SKIP without a GPU)
#   make install    PREFIX, DESTDIR, LIBDIR, INCLUDEDIR, BINDIR honoured
#   make format     clang-format every C and CUDA file
#
# Honours CC, CXX, CFLAGS, LDFLAGS, V=1 (and NVCC, NVCCFLAGS, NVCC_ARCH,
# NVCC_LDFLAGS, CUDA_HOME for the CUDA examples). The version comes from
# the header.

VERSION_MAJOR := $(shell sed -n 's/^\#define GPUPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' include/gpuprof.h)
VERSION_MINOR := $(shell sed -n 's/^\#define GPUPROF_VERSION_MINOR \([0-9]*\).*/\1/p' include/gpuprof.h)
VERSION_PATCH := $(shell sed -n 's/^\#define GPUPROF_VERSION_PATCH \([0-9]*\).*/\1/p' include/gpuprof.h)
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)

PREFIX ?= /usr/local
EXEC_PREFIX ?= $(PREFIX)
LIBDIR ?= $(EXEC_PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(EXEC_PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=

CC ?= cc
CXX ?= c++
CFLAGS ?= -O2 -g
LDFLAGS ?=
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat=2 -Wvla -Wno-unused-parameter
B := build
# -I$(B): the generated headers, $(B)/gen/*.h.
BASE_CFLAGS := -std=gnu11 -pthread $(WARN) -Iinclude -Ilib -I$(B)
LIB_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -DGPUPROF_BUILDING_LIBRARY

ifeq ($(V),1)
Q :=
else
Q := @
endif

# `make` alone builds `all` (the first rules below are generated headers').
.DEFAULT_GOAL := all
SONAME := libgpuprof.so.$(VERSION_MAJOR)
AN_SONAME := libgpuprof-analysis.so.$(VERSION_MAJOR)
LIB_SO := $(B)/lib/libgpuprof.so.$(VERSION)
AN_SO := $(B)/lib/libgpuprof-analysis.so.$(VERSION)
GPUPROF_BIN := $(B)/bin/gpuprof

IO_SRCS := $(wildcard lib/io/*.c)
CORE_SRCS := $(filter-out lib/core/dl.c,$(wildcard lib/core/*.c)) \
             $(wildcard lib/backends/sim/*.c) \
             $(filter-out lib/host/interpose.c,$(wildcard lib/host/*.c))
# lib/core/dl.c defines dlclose in front of the C library's (lib/exports.txt):
# libgpuprof.so only, never the static archive; the benchmarks and
# check_unwind link it too, exporting it as the library does.
DL_EXPORT_OBJ := $(B)/obj/lib/core/dl.o
# lib/host/interpose.c defines the pthread functions (and ompt_start_tool)
# in front of libc's: libgpuprof.so only, never the static archive or the
# white-box programs linked with the objects (doc/CORE.md "Host threads").
HOST_EXPORT_OBJ := $(B)/obj/lib/host/interpose.o

# What is installed decides what is built. Each feature found below is
# named in FEATURES, and $(B)/gen/features.h says so to the sources
# ("#define GPUPROF_HAVE_<NAME> 1", or a comment that it was not found),
# never the command line: a source that tests a feature includes
# "gen/features.h", its object depends on that file (its .d file), and the
# file is rewritten only when its text changes. So installing or removing
# a package rebuilds exactly what it affects. FEATURE_NAMES: every feature
# the build may look for (tests/tests.mk adds its own).
FEATURE_NAMES := OPENCL CUPTI LEVELZERO OTF2 PAPI MPI
FEATURES :=

# The OpenCL backend is built when the Khronos headers are there (Debian:
# opencl-headers); it never links libOpenCL. Its ICD layer is a separate
# small library installed beside libgpuprof.
HAVE_OPENCL := $(shell printf '\043include <CL/cl_layer.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
CL_LAYER := $(B)/lib/libgpuprof-cl-layer.so
PRELOAD_SO := $(B)/lib/libgpuprof-preload.so
ifeq ($(HAVE_OPENCL),1)
CORE_SRCS += lib/backends/opencl/opencl.c lib/backends/opencl/cl_hooks.c \
             lib/backends/opencl/cl_deps.c
FEATURES += OPENCL
CL_LAYER_TARGET := $(CL_LAYER)
endif
# The CUPTI backend is built when CUPTI's headers are there (CUDA_HOME,
# default /usr/local/cuda); libcupti is dlopened at run time, never linked.
CUDA_HOME ?= /usr/local/cuda
CUPTI_INC := $(firstword $(dir $(wildcard $(CUDA_HOME)/include/cupti.h \
                                          $(CUDA_HOME)/extras/CUPTI/include/cupti.h)))
ifneq ($(CUPTI_INC),)
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
HAVE_CUPTI := 1
CUPTI_SRCS := $(wildcard lib/backends/cupti/*.c)
CORE_SRCS += $(CUPTI_SRCS)
FEATURES += CUPTI
$(CUPTI_SRCS:%.c=$(B)/obj/%.o): LIB_CFLAGS += -isystem $(CUDA_HOME)/include \
    -isystem $(CUPTI_INC)
endif
endif
# The Level Zero backend is built when the loader's headers are there
# (Debian: libze-dev, with layers/zel_tracing_api.h); libze_loader is
# dlopened at run time, never linked.
HAVE_LEVELZERO := $(shell printf '\043include <level_zero/ze_api.h>\n\043include <level_zero/layers/zel_tracing_api.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_LEVELZERO),1)
CORE_SRCS += $(wildcard lib/backends/levelzero/*.c)
FEATURES += LEVELZERO
endif
# The analysis library: every room of analysis/ (analysis/README.md) but
# the command (cli/) and the MPI driver (mpi/), which link it.
AN_LIB_SRCS := $(filter-out analysis/cli/% analysis/mpi/%,\
                 $(wildcard analysis/*.c analysis/*/*.c))
# The OTF2 export is built when OTF2 3.0's headers are there (Debian:
# libotf2-trace-dev); libotf2 is dlopened when an export runs, never
# linked (analysis/export/an_otf2.h). Without them the export says so.
HAVE_OTF2 := $(shell printf '\043include <otf2/otf2.h>\n\043if OTF2_VERSION_MAJOR < 3\n\043error\n\043endif\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_OTF2),1)
FEATURES += OTF2
endif

# The built-in backends: each folder of lib/backends/ compiled into the
# library above, except sim (registered by the programs that use it). The
# core registers exactly these, from the list written here
# ($(B)/gen/backends.h: one GPUPROF_BUILTIN(name) line each; the folder
# defines gpuprof__backend_<name>_register). The file is rewritten only
# when the list changes. tests/scripts/backend-isolation.sh checks it.
BUILTIN_BACKENDS := $(if $(filter 1,$(HAVE_OPENCL)),opencl) \
                    $(if $(filter 1,$(HAVE_CUPTI)),cupti) \
                    $(if $(filter 1,$(HAVE_LEVELZERO)),levelzero)
GEN_BACKENDS := $(B)/gen/backends.h
GEN_FEATURES := $(B)/gen/features.h
# A generated header: $(call gen_header,COMMANDS) is its recipe, COMMANDS
# (a variable: commas) print its text; it runs on every make and replaces
# the file only when the text changed.
.PHONY: gen-force
define gen_header
	@mkdir -p $(dir $@)
	$(Q){ $(1); } >$@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
endef
backends_text = echo '/* Generated by the Makefile: the built-in backends of this build. */'; \
  for b in $(BUILTIN_BACKENDS); do echo "GPUPROF_BUILTIN($$b)"; done
$(GEN_BACKENDS): gen-force
	$(call gen_header,$(backends_text))
$(B)/obj/lib/core/backend.o: $(GEN_BACKENDS)
# GPUPROF_CUDA_HOME: where the CUPTI backend looks for CUDA at run time.
features_text = echo '/* Generated by the Makefile: what this build found installed. */'; \
  for f in $(FEATURE_NAMES); do case " $(FEATURES) " in \
    *" $$f "*) printf '\043define GPUPROF_HAVE_%s 1\n' $$f ;; \
    *) echo "/* GPUPROF_HAVE_$$f: not found */" ;; esac; done \
  $(if $(filter 1,$(HAVE_CUPTI)),; printf '\043define GPUPROF_CUDA_HOME "%s"\n' '$(CUDA_HOME)')
$(GEN_FEATURES): gen-force
	$(call gen_header,$(features_text))
# The PAPI backend is built when papi.h is there (Debian: libpapi-dev);
# libpapi is dlopened at run time, never linked.
HAVE_PAPI := $(shell printf '\043include <papi.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_PAPI),1)
CORE_SRCS += $(wildcard lib/backends/papi/*.c)
BUILTIN_BACKENDS += papi
FEATURES += PAPI
endif

# gpuprof-mpi (the aggregation on the ranks of an MPI job) is built when
# mpicc is found (Debian: libopenmpi-dev). Only its own file is compiled
# and linked with mpicc; the analysis library never links MPI.
MPICC ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo 1)
GPUPROF_MPI_BIN := $(B)/bin/gpuprof-mpi
ifeq ($(HAVE_MPI),1)
MPI_TARGET := $(GPUPROF_MPI_BIN)
FEATURES += MPI
endif
# libgpuprof-pmpi.so (lib/pmpi/): MPI calls as trace events, through the
# PMPI interface; built with mpicc when found, else skipped with a note.
PMPI_SO := $(B)/lib/libgpuprof-pmpi.so
ifeq ($(HAVE_MPI),1)
PMPI_TARGET := $(PMPI_SO)
else
PMPI_TARGET := pmpi-note
endif

IO_OBJS := $(IO_SRCS:%.c=$(B)/obj/%.o)
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/obj/%.o)
AN_OBJS := $(AN_LIB_SRCS:%.c=$(B)/obj/%.o)
LIB_OBJS := $(CORE_OBJS) $(IO_OBJS)

LIB_LIBS := -lzstd -lunwind -ldl -lpthread
# libdw (elfutils): DWARF source structure of CPU frames (an_dwarf.c).
DW_LIBS := -ldw -lelf
AN_LIBS := -lzstd -lpthread -lm $(DW_LIBS)

EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
ifeq ($(HAVE_OPENCL),1)
EXAMPLES += $(patsubst examples/opencl/%.c,$(B)/examples/opencl/%,$(wildcard examples/opencl/*.c))
endif
# The Level Zero example (examples/levelzero/) is built when the loader's
# headers are there (Debian: libze-dev); it links libze_loader like any
# Level Zero program. Its kernel's SPIR-V is built beside it when clang-15
# and llvm-spirv-15 are found (LZ_CLANG, LZ_LLVM_SPIRV).
HAVE_ZE_HEADERS := $(shell printf '\043include <level_zero/ze_api.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
LZ_CLANG ?= clang-15
LZ_LLVM_SPIRV ?= llvm-spirv-15
HAVE_LZ_SPIRV := $(shell command -v $(LZ_CLANG) >/dev/null 2>&1 && command -v $(LZ_LLVM_SPIRV) >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_ZE_HEADERS),1)
EXAMPLES += $(patsubst examples/levelzero/%.c,$(B)/examples/levelzero/%,$(wildcard examples/levelzero/*.c))
ifeq ($(HAVE_LZ_SPIRV),1)
EXAMPLES += $(patsubst examples/levelzero/%.cl,$(B)/examples/levelzero/%.spv,$(wildcard examples/levelzero/*.cl))
endif
endif
# The CUDA examples (examples/cuda/*.cu) are built when nvcc works (NVCC,
# default $(CUDA_HOME)/bin/nvcc); a machine without CUDA builds the rest.
# NVCC_ARCH: the GPUs to build machine code for, plus PTX that newer GPUs
# compile at load. `make HAVE_NVCC=` leaves them out.
NVCC ?= $(CUDA_HOME)/bin/nvcc
NVCC_ARCH ?= -gencode arch=compute_75,code=compute_75 \
             -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCCFLAGS ?= -O2 -g -lineinfo
NVCC_LDFLAGS ?=
HAVE_NVCC := $(shell $(NVCC) --version >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_NVCC),1)
EXAMPLES += $(patsubst examples/cuda/%.cu,$(B)/examples/cuda/%,$(wildcard examples/cuda/*.cu))
endif

.PHONY: all lib analysis examples check demo bench install uninstall clean \
        format deps-check deps-demo deps-bench tests stress sanitize sim-demo \
        demo-run check-gpu
.DELETE_ON_ERROR:

all: lib analysis examples

lib: $(LIB_SO) $(B)/lib/libgpuprof.a $(CL_LAYER_TARGET) $(PRELOAD_SO) $(PMPI_TARGET)
analysis: $(AN_SO) $(GPUPROF_BIN) $(MPI_TARGET)
examples: $(EXAMPLES)

# Order only: the generated header exists before any source is compiled;
# the objects whose sources include it depend on it through their .d.
$(B)/obj/%.o: %.c | $(GEN_FEATURES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(LIB_CFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

$(LIB_SO): $(LIB_OBJS) $(DL_EXPORT_OBJ) $(HOST_EXPORT_OBJ) lib/libgpuprof.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -pthread -Wl,-soname,$(SONAME) -Wl,--version-script,lib/libgpuprof.map \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $(LIB_OBJS) $(DL_EXPORT_OBJ) $(HOST_EXPORT_OBJ) $(LIB_LIBS)
	$(Q)ln -sf libgpuprof.so.$(VERSION) $(B)/lib/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/lib/libgpuprof.so

$(CL_LAYER): lib/backends/opencl/cl_layer.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden $(CFLAGS) -shared \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $< -ldl

# `gpuprof run`'s preload library: its constructor calls gpuprof_init.
$(PRELOAD_SO): lib/preload/preload.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden $(CFLAGS) -shared \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN'

PMPI_SRCS := lib/pmpi/comm.c lib/pmpi/wrap.c lib/pmpi/wrap_more.c
$(PMPI_SO): $(PMPI_SRCS) lib/pmpi/pmpi.h $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPICC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden -Ilib/pmpi $(CFLAGS) \
	  -shared -Wl,--no-undefined $(LDFLAGS) -o $@ $(PMPI_SRCS) \
	  -L$(B)/lib -lgpuprof -Wl,-rpath,'$$ORIGIN' -pthread

.PHONY: pmpi-note
pmpi-note:
	@echo "  NOTE    $(MPICC) not found: libgpuprof-pmpi.so (MPI calls in traces) not built"

$(B)/lib/libgpuprof.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(AN_SO): $(AN_OBJS) $(IO_OBJS) analysis/libgpuprof-analysis.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -pthread -Wl,-soname,$(AN_SONAME) \
	  -Wl,--version-script,analysis/libgpuprof-analysis.map -Wl,--no-undefined \
	  $(LDFLAGS) -o $@ $(AN_OBJS) $(IO_OBJS) $(AN_LIBS)
	$(Q)ln -sf libgpuprof-analysis.so.$(VERSION) $(B)/lib/$(AN_SONAME)
	$(Q)ln -sf $(AN_SONAME) $(B)/lib/libgpuprof-analysis.so

# The command uses only the public analysis header.
$(GPUPROF_BIN): analysis/cli/gpuprof.c analysis/cli/an_cli.h analysis/cli/an_help.h \
                analysis/cli/an_run.h $(AN_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) -Iinclude $(CFLAGS) -o $@ analysis/cli/gpuprof.c \
	  -L$(B)/lib -lgpuprof-analysis -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS)

# gpuprof-mpi links the library's objects: it calls the internal
# interface of analysis/coll/an_coll.h, which the shared library does not export.
$(B)/obj/analysis/mpi/gpuprof_mpi.o: analysis/mpi/gpuprof_mpi.c | $(GEN_FEATURES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $<")
	$(Q)$(MPICC) $(BASE_CFLAGS) -Ianalysis $(CFLAGS) -MMD -MP -c $< -o $@

$(GPUPROF_MPI_BIN): $(B)/obj/analysis/mpi/gpuprof_mpi.o $(AN_OBJS) $(IO_OBJS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MPICC   $@")
	$(Q)$(MPICC) -pthread $(CFLAGS) $(LDFLAGS) -o $@ $^ $(AN_LIBS)

$(B)/examples/opencl/%: examples/opencl/%.c $(LIB_SO) $(CL_LAYER_TARGET)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS) -lOpenCL -lm

$(B)/examples/levelzero/%: examples/levelzero/%.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS) -lze_loader

# OpenCL C -> LLVM bitcode -> SPIR-V (what zeModuleCreate takes).
$(B)/examples/levelzero/%.spv: examples/levelzero/%.cl
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  SPIRV   $@")
	$(Q)$(LZ_CLANG) -cl-std=CL2.0 -target spir64 -O2 -emit-llvm -c -o $@.bc $<
	$(Q)$(LZ_LLVM_SPIRV) $@.bc -o $@ && rm -f $@.bc

# -lineinfo: device code keeps its source lines (for the CUPTI backend's
# cubins); -g: host DWARF, so reports show the host functions and lines.
$(B)/examples/cuda/%: examples/cuda/%.cu $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -Xcompiler -Wall,-Wextra -Iinclude \
	  -o $@ $< -L$(B)/lib -lgpuprof -Xlinker -rpath,'$$ORIGIN/../../lib' \
	  $(NVCC_LDFLAGS)

$(B)/examples/%: examples/%.c $(LIB_SO)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< -L$(B)/lib -lgpuprof \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS) -lm

# ---------------------------------------------------------------- setup ----
deps-check:
	$(Q)tools/install-deps.sh check
deps-demo:
	$(Q)tools/install-deps.sh demo
deps-bench:
	$(Q)tools/install-deps.sh bench

# ---------------------------------------------------------------- demo -----
# The main job: a real OpenCL program (examples/opencl/jacobi.c) on the
# default OpenCL device (PoCL on the CPU when there is no GPU), measured,
# analysed, reported. Run in a sub-make, which sees the headers that
# deps-demo may just have installed.
DEMO_DIR := $(B)/demo
demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory demo-run

# The run is traced (GPUPROF_TRACE=1): after the trees, what the traces
# tell -- wait states, the critical path, a projection -- each introduced
# by one sentence of what it means.
DEMO_DB := $(DEMO_DIR)/database
demo-run:
	$(Q)rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR)
ifeq ($(HAVE_OPENCL),1)
	@echo "== running examples/opencl/jacobi (2 host threads, 2 queues, OpenCL), traced =="
	$(Q)POCL_CACHE_DIR=$(DEMO_DIR)/pocl-cache GPUPROF_OUTPUT=$(DEMO_DIR)/measurements \
	  GPUPROF_TRACE=1 $(B)/examples/opencl/jacobi
else
	@echo "== no OpenCL headers: running examples/regions (4 threads, nested regions) =="
	$(Q)GPUPROF_OUTPUT=$(DEMO_DIR)/measurements $(B)/examples/regions
endif
	@echo "== gpuprof report $(DEMO_DIR)/measurements =="
	$(Q)$(GPUPROF_BIN) report $(DEMO_DIR)/measurements
	@echo "== gpuprof analyze: the analysis database, with source lines and inlined code =="
	$(Q)$(GPUPROF_BIN) analyze -j 2 -o $(DEMO_DB) $(DEMO_DIR)/measurements
	@echo "== gpuprof report --metric gpu.time --threshold 5 $(DEMO_DB) =="
	$(Q)$(GPUPROF_BIN) report --metric gpu.time --threshold 5 $(DEMO_DB)
ifeq ($(HAVE_OPENCL),1)
	@echo "== gpuprof report --waits $(DEMO_DB) =="
	@echo "Wait states: the time host threads sat blocked on the device, by pattern (BlameKernel: waiting for a kernel), then the device work each wait is blamed on."
	$(Q)$(GPUPROF_BIN) report --waits $(DEMO_DB) | grep -v '^  [A-Za-z]* *0 *0 ns'
	@echo "== gpuprof report --critical-path $(DEMO_DB) (its first 30 steps, then its ratings) =="
	@echo "Critical path: the chain of dependent activities across threads and queues that sets the run's length; only making these faster shortens the run."
	$(Q)$(GPUPROF_BIN) report --critical-path $(DEMO_DB) >$(DEMO_DIR)/critical-path.txt
	$(Q)sed -n '1,/^ratings/p' $(DEMO_DIR)/critical-path.txt | sed '$$d' | head -n 32
	$(Q)echo "   ... ($$(sed -n '/^ratings/q;p' $(DEMO_DIR)/critical-path.txt | wc -l) lines in all: $(DEMO_DIR)/critical-path.txt)"
	$(Q)sed -n '/^ratings/,$$p' $(DEMO_DIR)/critical-path.txt | head -n 12
	@echo "== gpuprof project --speedup kernel:jacobi=2 $(DEMO_DB) (without its new path) =="
	@echo "Projection: the traced run replayed with every jacobi kernel twice as fast, and the run time the analysis predicts for it; then how it treated kernels that ran at once on the device."
	$(Q)$(GPUPROF_BIN) project --speedup kernel:jacobi=2 $(DEMO_DB) | grep -E '^(projection|devices),'
endif

# The asynchronous pipeline on the simulated GPU: regions -> call paths ->
# GPU operation placeholders -> kernels.
sim-demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all $(B)/tests/sim_demo
	$(Q)rm -rf $(DEMO_DIR)/sim && mkdir -p $(DEMO_DIR)/sim
	@echo "== running tests/sim/sim_demo (2 host threads, simulated GPU) =="
	$(Q)GPUPROF_OUTPUT=$(DEMO_DIR)/sim/measurements GPUPROF_BACKENDS=sim \
	  $(B)/tests/sim_demo
	@echo "== gpuprof report $(DEMO_DIR)/sim/measurements =="
	$(Q)$(GPUPROF_BIN) report $(DEMO_DIR)/sim/measurements

# ---------------------------------------------------------------- tests ----
include tests/tests.mk

# ---------------------------------------------------------------- bench ----
include tests/bench.mk

# ---------------------------------------------------------------- install --
install: lib analysis
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) \
	  $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 include/gpuprof.h include/gpuprof_backend.h include/gpuprof_analysis.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(LIB_SO) $(AN_SO) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(B)/lib/libgpuprof.a $(DESTDIR)$(LIBDIR)/
	$(if $(CL_LAYER_TARGET),install -m 755 $(CL_LAYER) $(DESTDIR)$(LIBDIR)/)
	install -m 755 $(PRELOAD_SO) $(DESTDIR)$(LIBDIR)/
	$(if $(filter $(PMPI_SO),$(PMPI_TARGET)),install -m 755 $(PMPI_SO) $(DESTDIR)$(LIBDIR)/)
	ln -sf libgpuprof.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libgpuprof.so
	ln -sf libgpuprof-analysis.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(AN_SONAME)
	ln -sf $(AN_SONAME) $(DESTDIR)$(LIBDIR)/libgpuprof-analysis.so
	install -m 755 $(GPUPROF_BIN) $(DESTDIR)$(BINDIR)/gpuprof
	$(if $(MPI_TARGET),install -m 755 $(GPUPROF_MPI_BIN) $(DESTDIR)$(BINDIR)/gpuprof-mpi)
	for pc in gpuprof gpuprof-analysis; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	      -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	      pkgconfig/$$pc.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/$$pc.pc; \
	done

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/gpuprof.h $(DESTDIR)$(INCLUDEDIR)/gpuprof_backend.h $(DESTDIR)$(INCLUDEDIR)/gpuprof_analysis.h
	rm -f $(DESTDIR)$(LIBDIR)/libgpuprof.so* $(DESTDIR)$(LIBDIR)/libgpuprof.a
	rm -f $(DESTDIR)$(LIBDIR)/libgpuprof-analysis.so*
	rm -f $(DESTDIR)$(LIBDIR)/libgpuprof-cl-layer.so $(DESTDIR)$(LIBDIR)/libgpuprof-preload.so $(DESTDIR)$(LIBDIR)/libgpuprof-pmpi.so
	rm -f $(DESTDIR)$(BINDIR)/gpuprof $(DESTDIR)$(BINDIR)/gpuprof-mpi
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/gpuprof.pc $(DESTDIR)$(PKGCONFIGDIR)/gpuprof-analysis.pc

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

clean:
	rm -rf $(B)
