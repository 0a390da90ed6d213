/*
 * cupti_act.c - CUPTI activity records: the correlation ring, decoding,
 * graph launches (cupti.h).
 *
 * Records are read with the library's own cuptiActivityGetNextRecord (so
 * the offline tests exercise the real decoder on hand-made buffers) and
 * turned into gpuprof activities on the thread that delivers the buffer:
 * CUPTI's worker, or whoever called cuptiActivityFlushAll. That thread is
 * patient (gpu.h): a full channel makes it wait for the monitor instead of
 * dropping what the device measured.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"

/* ---- the correlation ring ---------------------------------------------- */
#define RING_SIZE (1u << GP_CU_RING_BITS)
#define TAG_VALID (1ull << 63)
#define TAG_GRAPH (1ull << 62)

typedef struct ring_slot {
    _Atomic uint64_t tag; /* TAG_VALID | flags | CUPTI id; 0: empty */
    _Atomic uint64_t corr;
} ring_slot;

static ring_slot *ring;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void ring_alloc(void)
{
    /* calloc: pages are touched only as ids reach them. */
    ring = calloc(RING_SIZE, sizeof(ring_slot));
}

void gpuprof__cupti_ring_note(uint32_t id, uint64_t corr, bool graph)
{
    pthread_once(&ring_once, ring_alloc);
    if (!ring || !corr)
        return;
    ring_slot *s = &ring[id & (RING_SIZE - 1)];
    /* Seqlock writer: invalidate, fence, value, then the new tag. Two
     * writers of one slot need ids 2^18 apart at the same moment; the
     * reader's tag check turns that into a miss, never a wrong answer. */
    atomic_store_explicit(&s->tag, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->corr, corr, memory_order_relaxed);
    atomic_store_explicit(&s->tag, TAG_VALID | (graph ? TAG_GRAPH : 0) | id,
                          memory_order_release);
}

bool gpuprof__cupti_ring_find(uint32_t id, uint64_t *corr, bool *graph)
{
    if (!ring)
        return false;
    ring_slot *s = &ring[id & (RING_SIZE - 1)];
    uint64_t t1 = atomic_load_explicit(&s->tag, memory_order_acquire);
    if (!(t1 & TAG_VALID) || (uint32_t)t1 != id)
        return false;
    uint64_t c = atomic_load_explicit(&s->corr, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->tag, memory_order_relaxed) != t1)
        return false;
    *corr = c;
    *graph = (t1 & TAG_GRAPH) != 0;
    return true;
}

void gpuprof__cupti_ring_reset(void)
{
    pthread_once(&ring_once, ring_alloc);
    if (ring)
        memset(ring, 0, (size_t)RING_SIZE * sizeof(ring_slot));
}

/* ---- counters ---------------------------------------------------------- */
static pthread_mutex_t dec_mu = PTHREAD_MUTEX_INITIALIZER; /* all below */
static gp_cupti_counts counts;
static int64_t clock_offset;

void gpuprof__cupti_counts(gp_cupti_counts *out)
{
    pthread_mutex_lock(&dec_mu);
    *out = counts;
    pthread_mutex_unlock(&dec_mu);
}

void gpuprof__cupti_counts_reset(void)
{
    pthread_mutex_lock(&dec_mu);
    memset(&counts, 0, sizeof(counts));
    pthread_mutex_unlock(&dec_mu);
}

void gpuprof__cupti_set_clock_offset(int64_t offset_ns)
{
    pthread_mutex_lock(&dec_mu);
    clock_offset = offset_ns;
    pthread_mutex_unlock(&dec_mu);
}

static uint64_t to_process(uint64_t t)
{
    int64_t v = (int64_t)t + clock_offset;
    return v < 0 ? 0 : (uint64_t)v;
}

/* ---- open graph launches ------------------------------------------------
 * The kernels (and copies, memsets) of one graph launch share its
 * correlation, and nothing says which is the last: each goes with
 * GPUPROF_ACTIVITY_MORE, and the launch is closed later by an empty final
 * activity -- at finalize, or oldest first once GRAPHS_OPEN_MAX are open.
 * Their values are applied as they arrive; an open launch only keeps the
 * monitor's table entry. A launch is remembered in a set (membership) and a
 * FIFO (age). */
#define GRAPHS_OPEN_MAX 4096
static uint64_t *gset;    /* open addressing, 0 = empty */
static uint32_t gset_cap; /* power of two, 2x GRAPHS_OPEN_MAX */
static uint64_t *gfifo;   /* insertion order */
static uint32_t gfifo_n;

static uint32_t gslot(uint64_t c)
{
    return (uint32_t)((c * 0x9E3779B97F4A7C15ull) >> 32) & (gset_cap - 1);
}

static bool gset_has(uint64_t c)
{
    if (!gset)
        return false;
    for (uint32_t i = gslot(c);; i = (i + 1) & (gset_cap - 1)) {
        if (gset[i] == 0)
            return false;
        if (gset[i] == c)
            return true;
    }
}

static void gset_rebuild(void)
{
    memset(gset, 0, (size_t)gset_cap * sizeof(uint64_t));
    for (uint32_t k = 0; k < gfifo_n; k++) {
        uint32_t i = gslot(gfifo[k]);
        while (gset[i])
            i = (i + 1) & (gset_cap - 1);
        gset[i] = gfifo[k];
    }
}

static void close_one(uint64_t corr)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_KERNEL;
    /* No values: it only closes the operation (its first record ended it
     * in the core's count of kernels in flight). */
    a.flags = GPUPROF_ACTIVITY_NOTE | GPUPROF_ACTIVITY_DONE;
    be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
    counts.graph_closed++;
}

/* Closes the oldest n open launches; under dec_mu. */
static void graphs_close_locked(uint32_t n)
{
    if (n > gfifo_n)
        n = gfifo_n;
    for (uint32_t k = 0; k < n; k++)
        close_one(gfifo[k]);
    memmove(gfifo, gfifo + n, (size_t)(gfifo_n - n) * sizeof(uint64_t));
    gfifo_n -= n;
    if (gset)
        gset_rebuild();
}

/* Remembers an open launch; true the first time (its first record). */
static bool graph_open(uint64_t corr)
{
    if (!gset) {
        gset_cap = 2 * GRAPHS_OPEN_MAX;
        gset = calloc(gset_cap, sizeof(uint64_t));
        gfifo = calloc(GRAPHS_OPEN_MAX, sizeof(uint64_t));
        if (!gset || !gfifo) {
            free(gset);
            free(gfifo);
            gset = gfifo = NULL;
            return false; /* the launch stays open: the table entry leaks */
        }
    }
    if (gset_has(corr))
        return false;
    if (gfifo_n == GRAPHS_OPEN_MAX)
        graphs_close_locked(GRAPHS_OPEN_MAX / 2);
    gfifo[gfifo_n++] = corr;
    uint32_t i = gslot(corr);
    while (gset[i])
        i = (i + 1) & (gset_cap - 1);
    gset[i] = corr;
    return true;
}

void gpuprof__cupti_graphs_close(void)
{
    pthread_mutex_lock(&dec_mu);
    graphs_close_locked(gfifo_n);
    pthread_mutex_unlock(&dec_mu);
}

/* ---- decoding ------------------------------------------------------------ */
static uint32_t copy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return GPUPROF_OP_COPY_H2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return GPUPROF_OP_COPY_D2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return GPUPROF_OP_COPY_D2D;
    default:
        return GPUPROF_OP_COPY_OTHER;
    }
}

static bool attribute_first(uint32_t id, gpuprof_activity *a, bool *first);
/* Our correlation for a record, with the activity flags it needs; false
 * (counted) when the call that began it is not known. */
static bool attribute(uint32_t id, gpuprof_activity *a)
{
    return attribute_first(id, a, NULL);
}

/* attribute(), and *first: is this the first record of its launch? */
static bool attribute_first(uint32_t id, gpuprof_activity *a, bool *first)
{
    uint64_t corr;
    bool graph;
    if (id == 0 || !gpuprof__cupti_ring_find(id, &corr, &graph)) {
        counts.unattributed++;
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_UNATTRIBUTED, 1);
        return false;
    }
    a->correlation = corr;
    bool fresh = true;
    if (graph) {
        a->flags |= GPUPROF_ACTIVITY_MORE;
        fresh = graph_open(corr);
    }
    if (first)
        *first = fresh;
    return true;
}

static void times(gpuprof_activity *a, uint64_t start, uint64_t end)
{
    a->start_ns = to_process(start);
    a->end_ns = end >= start ? to_process(end) : a->start_ns;
}

static void kernel(const CUpti_ActivityKernel10 *k)
{
    counts.kernels++;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    bool first = false;
    if (!attribute_first(k->correlationId, &a, &first))
        return;
    /* The launch's first record ends it in the core's count of kernels in
     * flight (GPU_IDLE_CAUSE): a graph's or a held launch's final activity
     * comes later, carrying GPUPROF_ACTIVITY_DONE. */
    if (first)
        gpuprof_be_gpu_done();
    a.flags |= GPUPROF_ACTIVITY_DONE;
    /* A kernel (by name) launched in more than one context (core
     * detect.c); the note goes before the record that may close it. */
    if (first && k->name &&
        gpuprof_be_detect_kernel_context(k->name, (uintptr_t)k->contextId + 1))
        gpuprof_be_detect_note(a.correlation, GPUPROF_METRIC_DET_MULTI_CONTEXT, 1);
    a.kind = GPUPROF_OP_KERNEL;
    a.device = k->deviceId;
    gpuprof__cupti_device_used(k->deviceId);
    a.stream = k->streamId;
    a.name = k->name;
    times(&a, k->start, k->end);
    uint64_t block = (uint64_t)(uint32_t)k->blockX * (uint32_t)k->blockY *
                     (uint32_t)k->blockZ;
    uint64_t grid =
        (uint64_t)(uint32_t)k->gridX * (uint32_t)k->gridY * (uint32_t)k->gridZ;
    uint32_t xm[GPUPROF_EXTRA_MAX] = {
        GPUPROF_METRIC_GPU_WORK_ITEMS, GPUPROF_METRIC_GPU_GROUP_SIZE,
        GPUPROF_METRIC_GPU_REGISTERS, GPUPROF_METRIC_GPU_SHARED_MEM};
    uint64_t xv[GPUPROF_EXTRA_MAX] = {
        grid * block, block, k->registersPerThread,
        (uint64_t)(uint32_t)k->staticSharedMemory +
            (uint32_t)k->dynamicSharedMemory};
    uint32_t bin =
        k->name ? gpuprof__cupti_kernel_binary(k->name) : GPUPROF_NO_BINARY;
    /* Continuous PC sampling may still bring samples: the launch stays
     * open until cupti_pcs_submit.c closes it. */
    bool graph = (a.flags & GPUPROF_ACTIVITY_MORE) != 0;
    bool held = !graph && gpuprof__cupti_pcs_held(a.correlation);
    if (graph)
        gpuprof__cupti_pcs_note_graph_kernel(k->name, a.correlation);
    if (held)
        a.flags |= GPUPROF_ACTIVITY_MORE;
    be_submit(&a, bin, 4, xm, xv);
    if (held)
        gpuprof__cupti_pcs_record_in(a.correlation);
}

/* A copy or memset: its bytes on a device stream. */
static void transfer(uint32_t id, uint32_t kind, uint64_t bytes,
                     uint64_t start, uint64_t end, uint32_t dev,
                     uint32_t stream)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    if (!attribute(id, &a))
        return;
    a.kind = kind;
    a.device = dev;
    a.stream = stream;
    a.bytes = bytes;
    gpuprof__cupti_device_used(dev);
    times(&a, start, end);
    be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
}

/* A synchronization is time the thread spent in the call: api.time and
 * (core blame.c) blame.cpu_idle on the sync's placeholder and
 * blame.cpu_idle_cause on the device work that ran meanwhile; no device
 * stream record. */
static void sync_rec(const CUpti_ActivitySynchronization2 *s)
{
    /* Only the waits we hook: stream-wait-event is the device's, and
     * queries (type unknown) return at once. */
    if (s->type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
        s->type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE &&
        s->type != CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE)
        return;
    counts.syncs++;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    if (!attribute(s->correlationId, &a))
        return;
    a.kind = GPUPROF_OP_SYNC;
    a.stream =
        s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId;
    times(&a, s->start, s->end);
    a.flags |= GPUPROF_ACTIVITY_HOST; /* a SYNC: the core adds CPU_IDLE
                                         and blames it */
    be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
}

static void one(const CUpti_Activity *r)
{
    counts.records++;
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        kernel((const CUpti_ActivityKernel10 *)r);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
        counts.copies++;
        transfer(m->correlationId, copy_kind(m->copyKind), m->bytes, m->start,
                 m->end, m->deviceId, m->streamId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m =
            (const CUpti_ActivityMemcpyPtoP4 *)r;
        counts.copies++;
        transfer(m->correlationId, GPUPROF_OP_COPY_D2D, m->bytes, m->start,
                 m->end, m->deviceId, m->streamId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
        counts.memsets++;
        transfer(m->correlationId, GPUPROF_OP_MEMSET, m->bytes, m->start,
                 m->end, m->deviceId, m->streamId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        sync_rec((const CUpti_ActivitySynchronization2 *)r);
        break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)r;
        uint64_t d = o->end > o->start ? o->end - o->start : 0;
        counts.overhead_ns += d;
        gpuprof_be_count(GPUPROF_COUNTER_GPU_TOOL_OVERHEAD_NS, d);
        break;
    }
    default:
        counts.unknown_kinds++;
        break;
    }
}

size_t gpuprof__cupti_decode(uint8_t *buf, size_t valid)
{
    if (!gpuprof__cu.ActivityGetNextRecord || !buf || !valid)
        return 0;
    pthread_mutex_lock(&dec_mu);
    gpuprof_be_patient(1);
    CUpti_Activity *r = NULL;
    size_t n = 0;
    while (gpuprof__cu.ActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        one(r);
        n++;
    }
    gpuprof_be_patient(0);
    pthread_mutex_unlock(&dec_mu);
    return n;
}
