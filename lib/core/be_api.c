/*
 * be_api.c - the backend service interface (include/gpuprof_backend.h):
 * thin, checked entry points over the core's internals, so that backends
 * (built-in or not) reach the core through exported, versioned functions
 * only. Each function here validates what a backend hands it and calls the
 * internal function that did the work before the interface existed; the
 * hot ones (op begin/end, activity submit, measuring) add one call and a
 * few compares. Layer dispatch lives here too: backends register the
 * function that answers gpuprof_layer_dispatch for their API, so the core
 * names no backend.
 */
#include <stdarg.h>
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/trace.h"
#include "core/unwind.h"
#include "gpuprof_backend.h"
#include "io/io.h"
#include "io/trace.h"

/* The public metric ids are the core's (a renumbering of the built-in
 * table fails here, not in a backend's profile), and so are the flags. */
#define SAME_ID(x)                                                             \
    _Static_assert((int)GPUPROF_METRIC_##x == (int)GP_M_##x, "metric id " #x)
SAME_ID(GPU_WORK_ITEMS);
SAME_ID(GPU_GROUP_SIZE);
SAME_ID(CPU_IDLE);
SAME_ID(CPU_IDLE_CAUSE);
SAME_ID(DET_JIT_SINGLE);
SAME_ID(DET_OUTPUT_AS_INPUT);
SAME_ID(DET_ARGS_NOT_ALIASED);
SAME_ID(DET_MULTI_CONTEXT);
SAME_ID(DET_INORDER_QUEUE);
SAME_ID(DET_DEVICES_UNUSED);
SAME_ID(GPU_REGISTERS);
SAME_ID(GPU_SHARED_MEM);
SAME_ID(GPU_IDLE_CAUSE);
SAME_ID(PC_SAMPLES);
SAME_ID(PC_LATENCY);
SAME_ID(PC_STALL_SELECTED);
SAME_ID(PC_STALL_NOT_SELECTED);
SAME_ID(PC_STALL_BARRIER);
SAME_ID(PC_STALL_BRANCH_RESOLVING);
SAME_ID(PC_STALL_DISPATCH_STALL);
SAME_ID(PC_STALL_DRAIN);
SAME_ID(PC_STALL_IMC_MISS);
SAME_ID(PC_STALL_LG_THROTTLE);
SAME_ID(PC_STALL_LONG_SCOREBOARD);
SAME_ID(PC_STALL_MATH_PIPE_THROTTLE);
SAME_ID(PC_STALL_MEMBAR);
SAME_ID(PC_STALL_MIO_THROTTLE);
SAME_ID(PC_STALL_MISC);
SAME_ID(PC_STALL_NO_INSTRUCTIONS);
SAME_ID(PC_STALL_SHORT_SCOREBOARD);
SAME_ID(PC_STALL_SLEEPING);
SAME_ID(PC_STALL_TEX_THROTTLE);
SAME_ID(PC_STALL_WAIT);
SAME_ID(PC_STALL_OTHER);
SAME_ID(CPU_TIME);
SAME_ID(CPU_SAMPLES);
SAME_ID(CPU_WALL);
SAME_ID(CPU_WALL_SAMPLES);
_Static_assert(GP_M_REG_FIRST == GPUPROF_METRIC_CPU_WALL_SAMPLES + 1,
               "registered metrics follow the built-in ones");
_Static_assert(GPUPROF_ACTIVITY_NOTE == GP_ACT_NOTE &&
                   GPUPROF_ACTIVITY_HOST == GP_ACT_HOST &&
                   GPUPROF_ACTIVITY_INSTR == GP_ACT_INSTR &&
                   GPUPROF_ACTIVITY_WAIT == GP_ACT_WAIT &&
                   GPUPROF_ACTIVITY_DONE == GP_ACT_DONE &&
                   GPUPROF_NO_BINARY == GP_NO_BINARY &&
                   GPUPROF_EXTRA_MAX == GP_XN &&
                   GPUPROF_CORR_PAUSED == GP_CORR_PAUSED,
               "public flags are the core's");

/* ---- operations ------------------------------------------------------- */
GPUPROF_API uint64_t gpuprof_be_op_begin(gpuprof_op_kind kind,
                                         unsigned skip_frames)
{
    uint64_t c = gpuprof__op_begin((uint32_t)kind, skip_frames + 1);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return c;
}

GPUPROF_API gpuprof_status gpuprof_be_op_end(uint64_t correlation)
{
    return gpuprof__op_end(correlation);
}

_Static_assert((int)GPUPROF_DEP_SYNC_DEVICE == (int)GP_DEP_SYNC_DEVICE &&
                   (int)GPUPROF_DEP_SYNC_STREAM == (int)GP_DEP_SYNC_STREAM &&
                   (int)GPUPROF_DEP_SYNC_EVENT == (int)GP_DEP_SYNC_EVENT &&
                   (int)GPUPROF_DEP_QUERY_STREAM == (int)GP_DEP_QUERY_STREAM &&
                   (int)GPUPROF_DEP_QUERY_EVENT == (int)GP_DEP_QUERY_EVENT &&
                   (int)GPUPROF_DEP_EVENT_RECORD == (int)GP_DEP_EVENT_RECORD &&
                   (int)GPUPROF_DEP_STREAM_WAIT == (int)GP_DEP_STREAM_WAIT &&
                   (int)GPUPROF_DEP_LAUNCH == (int)GP_DEP_LAUNCH &&
                   GPUPROF_DEP_READY == GP_DEP_READY &&
                   GPUPROF_DEP_BLOCKING == GP_DEP_BLOCKING &&
                   GPUPROF_DEP_NULL == GP_DEP_NULL &&
                   GPUPROF_DEP_OPENCL == GP_DEP_OPENCL &&
                   GPUPROF_DEP_ALL == GP_DEP_ALL,
               "the public dependency notes are the core's");

GPUPROF_API void gpuprof_be_op_dep(uint64_t correlation, uint32_t what,
                                   uint32_t flags, uint32_t device,
                                   uint32_t stream, uint64_t target)
{
    gpuprof__op_dep(correlation, what, flags, device, stream, target);
}

GPUPROF_API gpuprof_status gpuprof_be_mpi_event(const gpuprof_mpi_event *e)
{
    bool needs_req = e && (e->op == GPUPROF_MPI_ISEND ||
                           e->op == GPUPROF_MPI_IRECV ||
                           e->op == GPUPROF_MPI_WAIT ||
                           e->op == GPUPROF_MPI_REQUEST_FREE ||
                           (e->op >= GPUPROF_MPI_IBARRIER &&
                            e->op <= GPUPROF_MPI_ISCATTER));
    if (!e || e->size < sizeof(gpuprof_mpi_event) || e->size > 65536 ||
        e->op < GPUPROF_MPI_INIT || e->op > GPUPROF_MPI_OP_LAST ||
        e->end_ns < e->start_ns || (needs_req && !e->request))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_mpi_event: invalid event");
    gp_thread *t = gpuprof__trace_on() ? gpuprof__thread_get() : NULL;
    if (t && t->trace)
        gpuprof__trace_mpi(t->trace, &(gpuprof__io_mpi_rec){
                                         e->start_ns, e->end_ns, e->bytes,
                                         e->request, e->aux, e->comm, e->peer,
                                         e->tag, (uint8_t)e->op, 0});
    return GPUPROF_OK;
}

GPUPROF_API void gpuprof_be_own_thread(void)
{
    gpuprof__own_thread = true;
}

GPUPROF_API int gpuprof_be_tracing(void)
{
    return gpuprof__trace_on();
}

GPUPROF_API int gpuprof_be_measuring(void)
{
    return gp_mode() == GP_MODE_MEASURING;
}

GPUPROF_API int gpuprof_be_forked(void)
{
    return G.forked;
}

/* ---- activities ------------------------------------------------------- */
GPUPROF_API gpuprof_status gpuprof_be_activity_submit(
    const gpuprof_activity *a, const gpuprof_activity_extra *x)
{
    if (!x)
        return gpuprof__activity_submit_x(a, (uint32_t)GP_NO_BINARY, 0, NULL,
                                          NULL);
    uint32_t nm = gpuprof__metric_count();
    if (x->size < offsetof(gpuprof_activity_extra, value) + sizeof(x->value) ||
        x->count > GPUPROF_EXTRA_MAX)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_activity_submit: bad extra values");
    uint8_t xm[GPUPROF_EXTRA_MAX];
    for (uint32_t i = 0; i < x->count; i++) {
        const gp_metric_def *m =
            x->metric[i] < nm ? gpuprof__metric(x->metric[i]) : NULL;
        if (!m || x->metric[i] > UINT8_MAX ||
            (m->kind != GPUPROF_IO_KIND_GPU &&
             m->kind != GPUPROF_IO_KIND_INSTR) ||
            (m->kind == GPUPROF_IO_KIND_INSTR) !=
                !!(a && (a->flags & GPUPROF_ACTIVITY_INSTR)))
            return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                                 "gpuprof_be_activity_submit: metric %u is "
                                 "not one of GPU %s",
                                 x->metric[i],
                                 a && (a->flags & GPUPROF_ACTIVITY_INSTR)
                                     ? "instructions"
                                     : "operations");
        xm[i] = (uint8_t)x->metric[i];
    }
    return gpuprof__activity_submit_x(a, x->binary, x->count, xm, x->value);
}

GPUPROF_API void gpuprof_be_patient(int on)
{
    gpuprof__activity_patient(on != 0);
}

/* ---- binaries, hidden code -------------------------------------------- */
GPUPROF_API uint32_t gpuprof_be_gpu_binary(const void *data, size_t size,
                                           const char *ext)
{
    if (!data || !size || !ext)
        return GPUPROF_NO_BINARY;
    return gpuprof__gpu_binary(data, size, ext);
}

GPUPROF_API int gpuprof_be_gpu_binaries_wanted(void)
{
    return gpuprof__gpu_binaries_wanted();
}

GPUPROF_API gpuprof_status gpuprof_be_hide(uintptr_t lo, uintptr_t hi,
                                           uint32_t flags)
{
    if (lo >= hi ||
        (flags != GPUPROF_HIDE_LOADER && flags != GPUPROF_HIDE_ALWAYS))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_hide: empty range or bad flags %#x",
                             flags);
    if (flags == GPUPROF_HIDE_LOADER)
        gpuprof__unwind_hide(lo, hi);
    else
        gpuprof__unwind_hide_always(lo, hi);
    return GPUPROF_OK;
}

/* ---- metrics ---------------------------------------------------------- */
GPUPROF_API gpuprof_status
gpuprof_be_metric_register(const gpuprof_metric_desc *desc, uint32_t *id)
{
    return gpuprof__metric_register(desc, id);
}

/* ---- CPU-time samples ------------------------------------------------- */
GPUPROF_API uint32_t gpuprof_be_sample_region(void)
{
    gp_thread *th = gpuprof__tls_self;
    uint32_t d = th ? gp_load_relaxed(&th->depth) : 0;
    return d && d <= GP_MAX_DEPTH ? gp_load_relaxed(&th->stack[d - 1].node) : 0;
}

GPUPROF_API int gpuprof_be_backtrace_in_signal(void **ip, int max)
{
    return gpuprof__backtrace_in_signal(ip, max);
}

GPUPROF_API int gpuprof_be_in_self(void)
{
    return gpuprof__in_self();
}

GPUPROF_API gpuprof_status gpuprof_be_sample_add(uint32_t region,
                                                 void *const *ip, int n,
                                                 int truncated, uint32_t metric,
                                                 uint64_t value)
{
    gp_thread *th = gpuprof__tls_self;
    const gp_metric_def *m = gpuprof__metric(metric);
    uint32_t blk = gpuprof__metric_block(metric);
    if (!th || !m || m->kind != GPUPROF_IO_KIND_CPU || n < 0 || (n && !ip) ||
        region >= gp_load_relaxed(&th->cct.count))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_sample_add: bad region or metric");
    uint32_t unknown = 0, at = region;
    gpuprof__cct_enter(th); /* a sample drain waits (core/sampler.h) */
    if (n)
        at = gpuprof__callpath_ips(&th->cct, region, ip, n, truncated != 0,
                                   &unknown);
    gp_mblock *b =
        at == GP_CCT_NONE ? NULL : gpuprof__cct_block(&th->cct, at, blk);
    if (b)
        gpuprof__metric_merge(&b->v[metric - b->first_metric], metric, value);
    gpuprof__cct_leave(th);
    if (!b) {
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
        return GPUPROF_E_NOMEM;
    }
    return GPUPROF_OK;
}

/* ---- time, log, counters ---------------------------------------------- */
GPUPROF_API uint64_t gpuprof_be_now_ns(void)
{
    return gp_mono_ns();
}

GPUPROF_API void gpuprof_be_log(gpuprof_log_level level, const char *fmt, ...)
{
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    gpuprof__log_v((int)level, fmt, ap);
    va_end(ap);
}

GPUPROF_API void gpuprof_be_setting_ignored(const char *var, const char *value,
                                            const char *want,
                                            const char *instead)
{
    gpuprof__setting_ignored(var ? var : "?", value ? value : "",
                             want ? want : "?", instead ? instead : "?");
}

GPUPROF_API gpuprof_status gpuprof_be_count(gpuprof_counter counter,
                                            uint64_t delta)
{
    switch (counter) {
    case GPUPROF_COUNTER_RECORDS_DROPPED:
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, delta);
        return GPUPROF_OK;
    case GPUPROF_COUNTER_RECORDS_UNATTRIBUTED:
        gpuprof__stat_add(GP_STAT_RECORDS_UNATTRIBUTED, delta);
        return GPUPROF_OK;
    case GPUPROF_COUNTER_GPU_TOOL_OVERHEAD_NS:
        gpuprof__stat_add(GP_STAT_GPU_TOOL_OVERHEAD_NS, delta);
        return GPUPROF_OK;
    }
    return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                         "gpuprof_be_count: unknown counter %d", (int)counter);
}

GPUPROF_API void gpuprof_be_self_begin(void)
{
    gpuprof__self_begin();
}
GPUPROF_API void gpuprof_be_self_end(void)
{
    gpuprof__self_end();
}
GPUPROF_API void gpuprof_be_helpers_begin(void)
{
    gpuprof__helpers_begin();
}
GPUPROF_API void gpuprof_be_helpers_end(void)
{
    gpuprof__helpers_end();
}
GPUPROF_API void gpuprof_be_helpers_busy(int64_t delta)
{
    gpuprof__helpers_busy(delta);
}

GPUPROF_API gpuprof_status gpuprof_be_sample_thread(void)
{
    int mode = gp_mode();
    if (mode == GP_MODE_UNINIT || mode == GP_MODE_FINALIZED)
        return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_sample_thread: not initialized, or "
                             "already finalized");
    if (!gpuprof__sampler_backend_thread(gpuprof__thread_get()))
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_DEBUG,
                             "gpuprof_be_sample_thread: no memory for the "
                             "thread's samples");
    return GPUPROF_OK;
}

GPUPROF_API int gpuprof_be_sample_take(uint32_t metric, uint64_t value,
                                       void *ucontext)
{
    const gp_metric_def *m = gpuprof__metric(metric); /* lock-free */
    if (!m || m->kind != GPUPROF_IO_KIND_CPU)
        return 0;
    return gpuprof__sampler_take_backend(metric, value, ucontext);
}

/* ---- the observer of application threads ----------------------------- */
/* Installed copies live in slots that are never reused, so a callback still
 * running on another thread after a removal reads a struct nobody writes. */
#define MAX_OBSERVERS 8
static gpuprof_observer observers[MAX_OBSERVERS];
static int observers_used;
static pthread_mutex_t observers_mu = PTHREAD_MUTEX_INITIALIZER;
const gpuprof_observer *_Atomic gpuprof__observer;

/* The thread-start hook of an observer with thread_start (thread.c runs
 * it on each new thread). */
static void observe_started(gp_thread *t)
{
    (void)t;
    const gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
    if (o && o->thread_start)
        o->thread_start(o->user);
}

GPUPROF_API gpuprof_status gpuprof_be_observe(const gpuprof_observer *obs,
                                              uint32_t flags)
{
    if (flags || (obs && (obs->size < offsetof(gpuprof_observer, thread_exit) +
                                          sizeof(obs->thread_exit) ||
                          obs->size > (1u << 16))))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_be_observe: bad struct or flags");
    gpuprof_status st = GPUPROF_OK;
    pthread_mutex_lock(&observers_mu);
    if (!obs)
        gp_store_release(&gpuprof__observer, NULL);
    else if (gp_load_relaxed(&gpuprof__observer))
        st = gpuprof__fail(GPUPROF_E_EXISTS, GPUPROF_LOG_WARN,
                           "gpuprof_be_observe: another observer is "
                           "installed");
    else if (observers_used == MAX_OBSERVERS)
        st = gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_WARN,
                           "gpuprof_be_observe: more than %d installations",
                           MAX_OBSERVERS);
    else {
        gpuprof_observer *o = &observers[observers_used++];
        memcpy(o, obs, obs->size < sizeof(*o) ? obs->size : sizeof(*o));
        o->size = sizeof(*o);
        gp_store_release(&gpuprof__observer, o);
        /* threads started from now on are told (a thread-start hook) */
        if (o->thread_start && !gpuprof__thread_hook_add(observe_started))
            gpuprof__log(GPUPROF_LOG_WARN, "gpuprof_be_observe: no room for "
                         "one more thread-start hook: thread_start is not "
                         "told");
    }
    pthread_mutex_unlock(&observers_mu);
    return st;
}

void gpuprof__observe_region(const gpuprof_observer *o, uint32_t from,
                             uint32_t to)
{
    if (o->region)
        o->region(o->user, from, to);
}

void gpuprof__observe_op_begin(const gpuprof_observer *o, uint32_t region,
                               uint32_t context)
{
    if (o->op_begin)
        o->op_begin(o->user, region, context);
}

void gpuprof__observe_op_end(const gpuprof_observer *o)
{
    if (o->op_end)
        o->op_end(o->user);
}

void gpuprof__observe_thread_exit(void)
{
    const gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
    if (o && o->thread_exit)
        o->thread_exit(o->user);
}

/* ---- blame and detectors (blame.c, idle.c, detect.c) ------------------ */
GPUPROF_API void gpuprof_be_gpu_done(void) { gpuprof__gpu_done(); }

GPUPROF_API void gpuprof_be_detect_note(uint64_t correlation, uint32_t metric,
                                        uint64_t value)
{
    const gp_metric_def *m = metric < gpuprof__metric_count() && metric <= 255
                                 ? gpuprof__metric(metric)
                                 : NULL;
    if (m && m->kind == GPUPROF_IO_KIND_GPU)
        gpuprof__detect_note(correlation, (uint8_t)metric, value);
}

GPUPROF_API void gpuprof_be_detect_readback(const void *ptr, size_t size)
{
    gpuprof__detect_readback(ptr, size);
}

GPUPROF_API int gpuprof_be_detect_sent_again(const void *ptr, size_t size)
{
    return gpuprof__detect_sent_again(ptr, size);
}

GPUPROF_API int gpuprof_be_detect_kernel_context(const char *name,
                                                 uintptr_t context)
{
    return gpuprof__detect_kernel_context(name, context);
}

/* ---- layer dispatch --------------------------------------------------- */
#define MAX_LAYERS 8
static struct {
    const char *api;
    gpuprof_layer_fn fn;
} layers[MAX_LAYERS];
static pthread_mutex_t layers_mu = PTHREAD_MUTEX_INITIALIZER;

GPUPROF_API gpuprof_status gpuprof_be_layer_register(const char *api,
                                                     gpuprof_layer_fn fn)
{
    if (!api || !*api)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_be_layer_register: no API name");
    gpuprof_status st = GPUPROF_OK;
    int free_at = -1, at = -1;
    pthread_mutex_lock(&layers_mu);
    for (int i = 0; i < MAX_LAYERS; i++) {
        if (layers[i].api && strcmp(layers[i].api, api) == 0)
            at = i;
        else if (!layers[i].api && free_at < 0)
            free_at = i;
    }
    if (at >= 0 && fn && layers[at].fn != fn)
        st = gpuprof__fail(GPUPROF_E_EXISTS, GPUPROF_LOG_WARN,
                           "layer '%s' already has a backend", api);
    else if (at >= 0 && !fn)
        layers[at].api = NULL, layers[at].fn = NULL;
    else if (at < 0 && fn && free_at < 0)
        st = gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_WARN,
                           "more than %d layer APIs", MAX_LAYERS);
    else if (at < 0 && fn)
        layers[free_at].api = api, layers[free_at].fn = fn;
    pthread_mutex_unlock(&layers_mu);
    return st;
}

GPUPROF_API const void *gpuprof_layer_dispatch(const char *api,
                                               const void *target,
                                               unsigned entries,
                                               unsigned *out_entries)
{
    if (!api || !target || !out_entries)
        return NULL;
    gpuprof_layer_fn fn = NULL;
    pthread_mutex_lock(&layers_mu);
    for (int i = 0; i < MAX_LAYERS && !fn; i++)
        if (layers[i].api && strcmp(layers[i].api, api) == 0)
            fn = layers[i].fn;
    pthread_mutex_unlock(&layers_mu);
    return fn ? fn(target, entries, out_entries) : NULL;
}
