/*
 * metrics.c - the process's metric registry.
 *
 * Metrics are registered once per process and grouped into kinds; a CCT
 * node carries a block per kind it has (cct.h), holding that kind's metrics
 * in registry order (CPU samples' metrics, appended after the instruction
 * kind, have a block of their own: a block holds consecutive ids). Ids are the order of this table, which is also the
 * order of the metric table in the profile file. The built-in metrics
 * (ids 0..GP_M_CPU_LAST) are the table below; backends register more at run
 * time (gpuprof_be_metric_register, include/gpuprof_backend.h): ids from
 * GP_M_REG_FIRST on, at most GP_REG_MAX, appended under reg_mu and published
 * by a release store of the count, so any thread reads a registered
 * metric's definition without a lock. Their values sit in one block kind of
 * their own (GP_BLOCK_REG, GP_REG_MAX values: every registered id, whenever
 * it was registered), on GPU-tree nodes or region-tree nodes as the metric
 * attaches; the profile's metric table gets their descriptors and the
 * METRIC_EXT section says how they combine (sum, odd sum with a count, max)
 * and whether inclusive values mean anything. Raw metrics are sums; "odd"
 * sums such as registers-times-launches let the analysis recover averages
 * (DESIGN §4).
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "gpuprof_backend.h"
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
    [GP_M_CPU_TIME] = {"cpu.time",
                       "CPU time sampled here: CPU-time timer expirations "
                       "times their period (GPUPROF_CPU_SAMPLING cputime)",
                       GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                       GPUPROF_IO_KIND_CPU, false},
    [GP_M_CPU_SAMPLES] = {"cpu.samples",
                          "CPU-time timer expirations sampled here",
                          GPUPROF_IO_U64, GPUPROF_IO_SUM,
                          GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_CPU, false},
    [GP_M_CPU_WALL] = {"cpu.wall",
                       "wall-clock time sampled here, blocked time included: "
                       "expirations times their period (realtime)",
                       GPUPROF_IO_U64, GPUPROF_IO_SUM, GPUPROF_IO_UNIT_NS,
                       GPUPROF_IO_KIND_CPU, false},
    [GP_M_CPU_WALL_SAMPLES] = {"cpu.wall_samples",
                               "wall-clock timer expirations sampled here",
                               GPUPROF_IO_U64, GPUPROF_IO_SUM,
                               GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_CPU,
                               false},
};

#define NMETRICS (sizeof(metrics) / sizeof(metrics[0]))
_Static_assert(NMETRICS == GP_M_REG_FIRST, "registered ids follow built-ins");

/* Registered metrics: definitions and the strings they own. */
typedef struct reg_metric {
    gp_metric_def d;
    char name[GP_REG_NAME_MAX + 1];
    char description[256];
    char count_metric[GP_REG_NAME_MAX + 1];
} reg_metric;
static reg_metric reg[GP_REG_MAX];
static _Atomic uint32_t nreg;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;

uint32_t gpuprof__metric_count(void)
{
    return (uint32_t)NMETRICS + gp_load_acquire(&nreg);
}

const gp_metric_def *gpuprof__metric(uint32_t id)
{
    if (id < NMETRICS)
        return &metrics[id];
    return id - NMETRICS < gp_load_acquire(&nreg) ? &reg[id - NMETRICS].d
                                                  : NULL;
}

void gpuprof__metric_merge(_Atomic uint64_t *to, uint32_t id, uint64_t v)
{
    const gp_metric_def *m = id >= NMETRICS ? gpuprof__metric(id) : NULL;
    if (m && m->combine == GPUPROF_IO_MAX) {
        if (v > gp_load_relaxed(to))
            gp_store_relaxed(to, v);
    } else {
        gp_owner_add(to, v);
    }
}

static bool name_ok(const char *n)
{
    size_t len = n ? strlen(n) : 0;
    if (len == 0 || len > GP_REG_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
              n[i] == '_' || n[i] == '.'))
            return false;
    return true;
}

/* Is the descriptor usable? The reason in *why when not. */
static bool desc_ok(const gpuprof_metric_desc *d, const char **why)
{
    *why = NULL;
    if (!d ||
        d->size < offsetof(gpuprof_metric_desc, count_metric) +
                      sizeof(d->count_metric) ||
        d->size > (1u << 16))
        *why = "descriptor NULL or of an unknown size";
    else if (!name_ok(d->name))
        *why = "name must be 1-63 bytes of [a-z0-9_.]";
    else if (d->unit > GPUPROF_METRIC_UNIT_BYTES)
        *why = "unknown unit";
    else if (d->combine > GPUPROF_METRIC_MAX)
        *why = "unknown combination";
    else if (d->attach != GPUPROF_METRIC_ON_GPU_OPS &&
             d->attach != GPUPROF_METRIC_ON_CPU_PATHS)
        *why = "unknown attachment";
    else if (d->flags & ~GPUPROF_METRIC_NO_INCLUSIVE)
        *why = "unknown flags";
    else if ((d->combine == GPUPROF_METRIC_ODD_SUM) !=
             (d->count_metric != NULL))
        *why = "an odd sum, and only an odd sum, names its count metric";
    else if (d->count_metric && !name_ok(d->count_metric))
        *why = "count metric name must be 1-63 bytes of [a-z0-9_.]";
    return *why == NULL;
}

/* The definition a descriptor gives (strings still the caller's). */
static gp_metric_def def_of(const gpuprof_metric_desc *d)
{
    gp_metric_def m = {
        d->name,
        d->description ? d->description : "",
        GPUPROF_IO_U64,
        d->combine == GPUPROF_METRIC_MAX ? GPUPROF_IO_MAX : GPUPROF_IO_SUM,
        (uint8_t)d->unit,
        d->attach == GPUPROF_METRIC_ON_GPU_OPS ? GPUPROF_IO_KIND_GPU
                                               : GPUPROF_IO_KIND_CPU,
        false,
        0,
        d->count_metric};
    if (d->combine == GPUPROF_METRIC_ODD_SUM)
        m.ext_flags |= GPUPROF_IO_METRIC_ODD;
    if (d->flags & GPUPROF_METRIC_NO_INCLUSIVE)
        m.ext_flags |= GPUPROF_IO_METRIC_NO_INCLUSIVE;
    return m;
}

static bool same_def(const gp_metric_def *a, const gp_metric_def *b)
{
    return a->combine == b->combine && a->unit == b->unit &&
           a->kind == b->kind && a->ext_flags == b->ext_flags &&
           strcmp(a->description, b->description) == 0 &&
           strcmp(a->count_metric ? a->count_metric : "",
                  b->count_metric ? b->count_metric : "") == 0;
}

gpuprof_status gpuprof__metric_register(const gpuprof_metric_desc *d,
                                        uint32_t *id)
{
    const char *why;
    if (!id || !desc_ok(d, &why))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_be_metric_register(%s): %s",
                             d && d->name ? d->name : "?",
                             id ? why : "NULL id");
    gp_metric_def want = def_of(d);
    gpuprof_status st = GPUPROF_OK;
    pthread_mutex_lock(&reg_mu);
    uint32_t n = gp_load_relaxed(&nreg), i = 0;
    for (; i < NMETRICS + n; i++)
        if (strcmp(gpuprof__metric(i)->name, d->name) == 0)
            break;
    if (i < NMETRICS + n) {
        /* Again with the same descriptor (a backend initialized twice):
         * the same id; anything else is a clash. */
        if (i < NMETRICS || !same_def(&reg[i - NMETRICS].d, &want))
            st = gpuprof__fail(GPUPROF_E_EXISTS, GPUPROF_LOG_WARN,
                               "gpuprof_be_metric_register: metric '%s' "
                               "exists with another definition",
                               d->name);
        *id = i;
    } else if (n == GP_REG_MAX) {
        st = gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_WARN,
                           "gpuprof_be_metric_register(%s): more than %d "
                           "registered metrics",
                           d->name, GP_REG_MAX);
    } else {
        reg_metric *r = &reg[n];
        snprintf(r->name, sizeof(r->name), "%s", d->name);
        snprintf(r->description, sizeof(r->description), "%s",
                 want.description);
        snprintf(r->count_metric, sizeof(r->count_metric), "%s",
                 d->count_metric ? d->count_metric : "");
        r->d = want;
        r->d.name = r->name;
        r->d.description = r->description;
        r->d.count_metric = d->count_metric ? r->count_metric : NULL;
        gp_store_release(&nreg, n + 1);
        *id = (uint32_t)NMETRICS + n;
        gpuprof__log(GPUPROF_LOG_DEBUG, "metric %s registered (id %u)", d->name,
                     *id);
    }
    pthread_mutex_unlock(&reg_mu);
    return st;
}

/* The block a built-in metric's values sit in: its kind's, but CPU
 * samples' own (their ids do not follow GPU_IDLE_CAUSE's). */
static uint32_t block_of(uint32_t id)
{
    return id >= GP_M_CPU_TIME && id <= GP_M_CPU_LAST ? GP_BLOCK_SAMPLE
                                                      : metrics[id].kind;
}

uint32_t gpuprof__metric_block(uint32_t id)
{
    return id < NMETRICS ? block_of(id) : GP_BLOCK_REG;
}

void gpuprof__metric_kind_range(uint32_t kind, uint32_t *first,
                                uint32_t *count)
{
    if (kind == GP_BLOCK_REG) {
        *first = (uint32_t)NMETRICS;
        *count = GP_REG_MAX;
        return;
    }
    uint32_t f = UINT32_MAX, n = 0;
    for (uint32_t i = 0; i < NMETRICS; i++) {
        if (block_of(i) != kind)
            continue;
        if (f == UINT32_MAX)
            f = i;
        n++;
    }
    *first = f == UINT32_MAX ? 0 : f;
    *count = n;
}
