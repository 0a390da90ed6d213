/*
 * stats.c - the counters behind gpuprof_stat_get (jemalloc mallctl style
 * dotted names).
 *
 * Rare events (an unbalanced region, a flush error) bump a process-wide
 * relaxed atomic. Frequent ones live in the thread state and are summed on
 * read, so no hot path touches a shared cache line. Names are part of the
 * API: they are never renamed, only added.
 */
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"

static _Atomic uint64_t counters[GP_STAT_COUNT];

static const char *const names[GP_STAT_COUNT] = {
    [GP_STAT_REGIONS_UNBALANCED] = "regions.unbalanced",
    [GP_STAT_REGIONS_OPEN_AT_FINALIZE] = "regions.open_at_finalize",
    [GP_STAT_REGIONS_OPEN_AT_THREAD_EXIT] = "regions.open_at_thread_exit",
    [GP_STAT_REGIONS_DEPTH_EXCEEDED] = "regions.depth_exceeded",
    [GP_STAT_REGIONS_ENTERED] = "regions.entered",
    [GP_STAT_THREADS_CREATED] = "threads.created",
    [GP_STAT_THREADS_EXITED] = "threads.exited",
    [GP_STAT_FLUSH_COUNT] = "flush.count",
    [GP_STAT_FLUSH_ERRORS] = "flush.errors",
    [GP_STAT_RECORDS_DROPPED] = "records.dropped",
    [GP_STAT_RECORDS_UNATTRIBUTED] = "records.unattributed",
    [GP_STAT_BACKENDS_ACTIVE] = "backends.active",
    [GP_STAT_CCT_NODES] = "cct.nodes",
    [GP_STAT_MEMORY_BYTES] = "memory.bytes",
    [GP_STAT_GPU_OPS] = "gpu.operations",
    [GP_STAT_GPU_ACTIVITIES] = "gpu.activities",
    [GP_STAT_GPU_BINARIES] = "gpu.binaries",
    [GP_STAT_GPU_BINARIES_FAILED] = "gpu.binaries_failed",
    [GP_STAT_GPU_TOOL_OVERHEAD_NS] = "gpu.tool_overhead_ns",
    [GP_STAT_RECORDS_PAUSED] = "records.paused",
    [GP_STAT_CALLPATHS_TRUNCATED] = "callpaths.truncated",
    [GP_STAT_SELF_NS] = "gpuprof.self_ns",
};

void gpuprof__stat_add(enum gp_stat s, uint64_t v)
{
    gp_fetch_add_relaxed(&counters[s], v);
}

const char *gpuprof__stat_name(enum gp_stat s) { return names[s]; }

void gpuprof__stats_reset(void)
{
    for (int i = 0; i < GP_STAT_COUNT; i++)
        gp_store_relaxed(&counters[i], 0);
}

/* Sums a per-thread figure over every thread state. */
static uint64_t thread_sum(enum gp_stat s)
{
    uint64_t sum = 0;
    pthread_mutex_lock(&G.lock);
    for (gp_thread *t = G.threads; t; t = t->next_all) {
        if (s == GP_STAT_REGIONS_ENTERED)
            sum += gp_load_relaxed(&t->entered);
        else if (s == GP_STAT_CCT_NODES)
            sum += gp_load_acquire(&t->cct.count);
        else if (s == GP_STAT_GPU_OPS) {
            gp_gpu *g = gp_load_acquire(&t->gpu);
            sum += g ? gp_load_relaxed(&g->ops) : 0;
        }
        else {
            gp_gpu *g = gp_load_acquire(&t->gpu);
            sum += gp_load_relaxed(&t->cct.bytes) + sizeof(*t);
            sum += g ? gp_load_relaxed(&g->tree.bytes) + sizeof(*g) : 0;
        }
    }
    pthread_mutex_unlock(&G.lock);
    return sum;
}

uint64_t gpuprof__stat_read(enum gp_stat s)
{
    if (s == GP_STAT_REGIONS_ENTERED || s == GP_STAT_CCT_NODES ||
        s == GP_STAT_MEMORY_BYTES || s == GP_STAT_GPU_OPS)
        return thread_sum(s);
    return gp_load_relaxed(&counters[s]);
}

GPUPROF_API gpuprof_status gpuprof_stat_get(const char *name, uint64_t *value)
{
    if (!name || !value)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_stat_get: NULL argument");
    for (int i = 0; i < GP_STAT_COUNT; i++) {
        if (strcmp(name, names[i]) == 0) {
            *value = gpuprof__stat_read((enum gp_stat)i);
            return GPUPROF_OK;
        }
    }
    return gpuprof__fail(GPUPROF_E_NOTFOUND, GPUPROF_LOG_DEBUG,
                         "gpuprof_stat_get: no counter named '%s'", name);
}

GPUPROF_API const char *gpuprof_stat_name(size_t index)
{
    return index < GP_STAT_COUNT ? names[index] : NULL;
}
