/*
 * metrics.c - the process's metric registry.
 *
 * Metrics are registered once per process and grouped into kinds; a CCT
 * node carries a block per kind it has (cct.h), holding that kind's metrics
 * in registry order. Ids are the order of this table, which is also the
 * order of the metric table in the profile file. Issue by issue, backends
 * add kinds here (GPU operations, CPU counters). Raw metrics are sums;
 * "odd" sums such as registers-times-launches let the analysis recover
 * averages (DESIGN §4).
 */
#include "core/internal.h"
#include "io/io.h"

#define PC_STALL(ID, NAME, WHAT)                                               \
    [GP_M_PC_STALL_##ID] = {"gpu.pc.stall." NAME, "PC samples: " WHAT,        \
                            GPUPROF_IO_U64, GPUPROF_IO_SUM,                    \
                            GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR, false}

static const gp_metric_def metrics[] = {
    [GP_M_REGION_VISITS] = {"region.visits", "times the region was entered",
                            GPUPROF_IO_U64, GPUPROF_IO_SUM,
                            GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_REGION,
                            false},
    [GP_M_REGION_INCL] = {"region.time.incl",
                          "time inside the region, its children included",
                          GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                          GPUPROF_IO_KIND_REGION, true},
    [GP_M_REGION_EXCL] = {"region.time.excl",
                          "time inside the region, outside its child regions",
                          GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                          GPUPROF_IO_KIND_REGION, true},
    [GP_M_GPU_COUNT] = {"gpu.count",
                        "GPU operations that completed (kernels: launches)",
                        GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_COUNT,
                        GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_TIME] = {"gpu.time", "time the operations ran on the device",
                       GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                       GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_BYTES] = {"gpu.bytes", "bytes copied, set or allocated",
                        GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_BYTES,
                        GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_WORK_ITEMS] = {"gpu.work_items",
                             "kernels: global work items, summed over "
                             "launches (divide by gpu.count for the mean)",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM,
                             GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_GROUP_SIZE] = {"gpu.group_size",
                             "kernels: work-group size, summed over launches "
                             "(0 where the runtime chose it)",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM,
                             GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU, false},
    [GP_M_CPU_IDLE] = {"blame.cpu_idle",
                       "CPU_IDLE: time a thread was blocked waiting for "
                       "the device (on the waiting call)",
                       GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                       GPUPROF_IO_KIND_GPU, false},
    [GP_M_CPU_IDLE_CAUSE] = {"blame.cpu_idle_cause",
                             "CPU_IDLE_CAUSE: waiting time blamed on the "
                             "device work that ran during the wait",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                             GPUPROF_IO_KIND_GPU, false},
    [GP_M_DET_JIT_SINGLE] = {"detect.jit_single_device",
                             "program builds that JIT-compile for a single "
                             "device: ahead-of-time compilation would do",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM,
                             GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU, false},
    [GP_M_DET_OUTPUT_AS_INPUT] = {"detect.output_as_input",
                                  "host-to-device copies of data read back "
                                  "from the device: keep it on the device",
                                  GPUPROF_IO_U64, GPUPROF_IO_SUM,
                                  GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                                  false},
    [GP_M_DET_ARGS_NOT_ALIASED] = {"detect.args_not_aliased",
                                   "kernel launches whose buffer arguments "
                                   "do not overlap: restrict is possible",
                                   GPUPROF_IO_U64, GPUPROF_IO_SUM,
                                   GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                                   false},
    [GP_M_DET_MULTI_CONTEXT] = {"detect.kernel_multi_context",
                                "launches of a kernel used in several "
                                "contexts: compiled once per context",
                                GPUPROF_IO_U64, GPUPROF_IO_SUM,
                                GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                                false},
    [GP_M_DET_INORDER_QUEUE] = {"detect.inorder_queue",
                                "in-order queues created: their commands "
                                "never overlap",
                                GPUPROF_IO_U64, GPUPROF_IO_SUM,
                                GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                                false},
    [GP_M_DET_DEVICES_UNUSED] = {"detect.devices_unused",
                                 "devices present that no context of the "
                                 "process used (on its first context)",
                                 GPUPROF_IO_U64, GPUPROF_IO_SUM,
                                 GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                                 false},
    [GP_M_API_TIME] = {"api.time",
                       "operations done on the host (program builds, "
                       "waits, context and queue creation): time in the call",
                       GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                       GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_REGISTERS] = {"gpu.registers",
                            "kernels: registers per thread, summed over "
                            "launches (divide by gpu.count for the mean)",
                            GPUPROF_IO_U64, GPUPROF_IO_SUM,
                            GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU, false},
    [GP_M_GPU_SHARED_MEM] = {"gpu.shared_bytes",
                             "kernels: shared memory per block (static and "
                             "dynamic), summed over launches",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM,
                             GPUPROF_IO_UNIT_BYTES, GPUPROF_IO_KIND_GPU, false},
    [GP_M_DET_LAUNCH_WAIT] = {"detect.launch_wait",
                              "a host wait after every launch: consecutive "
                              "launch->wait pairs at this wait (at least "
                              "100; batch the work and wait once)",
                              GPUPROF_IO_U64, GPUPROF_IO_SUM,
                              GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU,
                              false},
    [GP_M_GPU_IDLE_CAUSE] = {"blame.gpu_idle_cause",
                             "GPU_IDLE_CAUSE: CPU time a thread spent here "
                             "while no kernel was running on any device",
                             GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                             GPUPROF_IO_KIND_CPU, false},
    [GP_M_PC_SAMPLES] = {"gpu.pc.samples",
                         "PC samples of the instruction (all stall reasons)",
                         GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_COUNT,
                         GPUPROF_IO_KIND_INSTR, false},
    [GP_M_PC_LATENCY] = {"gpu.pc.latency_samples",
                         "PC samples taken when no warp of the scheduler "
                         "issued (uncovered latency)",
                         GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_COUNT,
                         GPUPROF_IO_KIND_INSTR, false},
    PC_STALL(SELECTED, "selected", "the warp issued an instruction"),
    PC_STALL(NOT_SELECTED, "not_selected", "eligible but another warp was selected"),
    PC_STALL(BARRIER, "barrier", "waiting at a barrier (__syncthreads)"),
    PC_STALL(BRANCH_RESOLVING, "branch_resolving", "waiting for a branch target"),
    PC_STALL(DISPATCH_STALL, "dispatch_stall", "the dispatcher held the instruction"),
    PC_STALL(DRAIN, "drain", "draining memory stores at exit"),
    PC_STALL(IMC_MISS, "imc_miss", "immediate constant cache miss"),
    PC_STALL(LG_THROTTLE, "lg_throttle", "local/global memory queue full"),
    PC_STALL(LONG_SCOREBOARD, "long_scoreboard", "waiting for L1TEX (global, local, texture) data"),
    PC_STALL(MATH_PIPE_THROTTLE, "math_pipe_throttle", "math pipe busy"),
    PC_STALL(MEMBAR, "membar", "waiting at a memory barrier"),
    PC_STALL(MIO_THROTTLE, "mio_throttle", "MIO (shared memory, special math) queue full"),
    PC_STALL(MISC, "misc", "miscellaneous hardware reason"),
    PC_STALL(NO_INSTRUCTIONS, "no_instructions", "no instruction fetched (instruction cache miss)"),
    PC_STALL(SHORT_SCOREBOARD, "short_scoreboard", "waiting for MIO data (shared memory)"),
    PC_STALL(SLEEPING, "sleeping", "the warp sleeps (nanosleep, yield)"),
    PC_STALL(TEX_THROTTLE, "tex_throttle", "texture unit queue full"),
    PC_STALL(WAIT, "wait", "a fixed-latency dependency"),
    PC_STALL(OTHER, "other", "a reason this build does not name"),
};

#define NMETRICS (sizeof(metrics) / sizeof(metrics[0]))

uint32_t gpuprof__metric_count(void) { return (uint32_t)NMETRICS; }

const gp_metric_def *gpuprof__metric(uint32_t id)
{
    return id < NMETRICS ? &metrics[id] : NULL;
}

void gpuprof__metric_kind_range(uint32_t kind, uint32_t *first,
                                uint32_t *count)
{
    uint32_t f = UINT32_MAX, n = 0;
    for (uint32_t i = 0; i < NMETRICS; i++) {
        if (metrics[i].kind != kind)
            continue;
        if (f == UINT32_MAX)
            f = i;
        n++;
    }
    *first = f == UINT32_MAX ? 0 : f;
    *count = n;
}
