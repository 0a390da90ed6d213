/* tests/fakeze/fz_cmdlist.c - where work happens in the fake driver:
 * command lists (regular ones record struct fz_cmd, immediate ones submit
 * each append at once), command queues, and the engine timelines. A
 * submitted command becomes an fz_op in its engine's FIFO; fz_advance()
 * gives the head op its start and end ticks once every event it waits for
 * has one (README.md "Scheduling"), signals its event and fence, and writes
 * the FAKEZE_TRACE line. Copies and fills move their bytes at submission. */
#include "fakeze.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [FZ_OP_KERNEL] = "kernel",      [FZ_OP_COPY] = "copy",
    [FZ_OP_FILL] = "fill",          [FZ_OP_BARRIER] = "barrier",
    [FZ_OP_SIGNAL] = "signal",      [FZ_OP_WAIT] = "wait",
    [FZ_OP_RESET] = "reset",        [FZ_OP_TIMESTAMP] = "timestamp",
    [FZ_OP_QUERY_TS] = "timestamp",
};

void fz_cmd_free(struct fz_cmd *c)
{
    free(c->waits);
    free(c->events);
    free(c->offsets);
    c->waits = c->events = NULL;
    c->offsets = NULL;
}

/* Deep copy of the arrays a command owns. */
static bool cmd_copy(struct fz_cmd *dst, const struct fz_cmd *src)
{
    *dst = *src;
    dst->waits = NULL;
    dst->events = NULL;
    dst->offsets = NULL;
    size_t ew = sizeof(ze_event_handle_t);
    if ((src->n_waits && !(dst->waits = malloc(src->n_waits * ew))) ||
        (src->n_events && !(dst->events = malloc(src->n_events * ew))) ||
        (src->offsets &&
         !(dst->offsets = malloc(src->n_events * sizeof(size_t))))) {
        fz_cmd_free(dst);
        return false;
    }
    if (src->n_waits)
        memcpy(dst->waits, src->waits, src->n_waits * ew);
    if (src->n_events)
        memcpy(dst->events, src->events, src->n_events * ew);
    if (src->offsets)
        memcpy(dst->offsets, src->offsets, src->n_events * sizeof(size_t));
    return true;
}

struct fz_engine *fz_engine_of(struct _ze_device_handle_t *dev,
                               uint32_t ordinal, uint32_t index)
{
    if (ordinal == 0 && index < fz.k.compute_engines)
        return &dev->compute[index];
    if (ordinal == 1 && index < fz.k.copy_engines)
        return &dev->copy[index];
    return NULL;
}

void fz_queue_init(struct fz_queue_state *q, struct fz_engine *e, bool sync)
{
    memset(q, 0, sizeof *q);
    q->engine = e;
    q->synchronous = sync;
    q->id = ++fz.next_id;
}

/* ----------------------------------------------------------- scheduling -- */

static uint64_t op_ns(const struct fz_cmd *c)
{
    switch (c->kind) {
    case FZ_OP_KERNEL:
        return fz_kernel_ns(c->name);
    case FZ_OP_COPY:
    case FZ_OP_FILL: {
        unsigned __int128 t = (unsigned __int128)c->bytes * 1000000000u;
        return fz.k.copy_ns +
               (uint64_t)((t + fz.k.copy_bps - 1) / fz.k.copy_bps);
    }
    default:
        return 0;
    }
}

static void trace_op(const struct fz_op *op, uint64_t start, uint64_t end)
{
    const struct fz_cmd *c = &op->cmd;
    const struct fz_engine *e = op->queue->engine;
    fprintf(fz.trace,
            "op=%s dev=%" PRIu32 " engine=%" PRIu32 ".%" PRIu32
            " name=%s bytes=%zu src=%s "
            "dst=%s start=%" PRIu64 " end=%" PRIu64 " host_start=%" PRIu64
            " host_end=%" PRIu64 " queue=%" PRIu64 " list=%" PRIu64 "\n",
            kind_names[c->kind], e->dev->id, e->ordinal, e->index,
            c->kind == FZ_OP_KERNEL ? c->name : "-", c->bytes,
            c->kind == FZ_OP_COPY ? fz_mem_kind(c->src) : "-",
            c->kind == FZ_OP_COPY || c->kind == FZ_OP_FILL ? fz_mem_kind(c->dst)
                                                           : "-",
            start, end, fz_host_of(start), fz_host_of(end), op->queue->id,
            op->list_id);
    fflush(fz.trace);
}

static void op_effects(struct fz_op *op, uint64_t start)
{
    struct fz_cmd *c = &op->cmd;
    if (c->kind == FZ_OP_RESET) {
        for (uint32_t i = 0; i < c->n_events; i++) {
            c->events[i]->scheduled = false;
            fz_event_change(c->events[i], start, false, 0, 0);
        }
    } else if (c->kind == FZ_OP_TIMESTAMP) {
        uint64_t v = start & fz_mask(fz.k.ts_valid_bits);
        memcpy(c->dst, &v, sizeof v);
    } else if (c->kind == FZ_OP_QUERY_TS) {
        for (uint32_t i = 0; i < c->n_events; i++) {
            ze_kernel_timestamp_result_t r;
            fz_event_timestamp(c->events[i], &r);
            size_t off = c->offsets ? c->offsets[i] : i * sizeof r;
            memcpy((char *)c->dst + off, &r, sizeof r);
        }
    }
}

/* Schedules the op at the head of e if its waits allow; true if it did. */
static bool schedule_head(struct fz_engine *e)
{
    struct fz_op *op = e->head;
    uint64_t start = e->free_tick > op->earliest ? e->free_tick : op->earliest;
    for (uint32_t i = 0; i < op->cmd.n_waits; i++) {
        ze_event_handle_t w = op->cmd.waits[i];
        if (!w->scheduled)
            return false;
        if (w->end > start)
            start = w->end;
    }
    uint64_t end = start + fz_ticks_of_ns(op_ns(&op->cmd));
    op_effects(op, start);
    if (op->cmd.signal != NULL) {
        op->cmd.signal->start = start;
        op->cmd.signal->end = end;
        op->cmd.signal->scheduled = true;
        fz_event_change(op->cmd.signal, end, true, start, end);
    }
    if (op->fence != NULL) {
        op->fence->end = end;
        op->fence->scheduled = true;
    }
    e->free_tick = end;
    op->queue->pending--;
    if (end > op->queue->last_end)
        op->queue->last_end = end;
    if (fz.trace != NULL && !op->silent)
        trace_op(op, start, end);
    e->head = op->next;
    if (e->head == NULL)
        e->tail = NULL;
    fz_cmd_free(&op->cmd);
    free(op);
    return true;
}

static bool advance_engine(struct fz_engine *e)
{
    bool progress = false;
    while (e->head != NULL && schedule_head(e))
        progress = true;
    return progress;
}

void fz_advance(void)
{
    bool progress = true;
    while (progress) {
        progress = false;
        for (uint32_t d = 0; d < fz.k.devices; d++) {
            struct _ze_device_handle_t *dev = &fz.devices[d];
            for (uint32_t i = 0; i < fz.k.compute_engines; i++)
                progress |= advance_engine(&dev->compute[i]);
            for (uint32_t i = 0; i < fz.k.copy_engines; i++)
                progress |= advance_engine(&dev->copy[i]);
        }
    }
}

/* The bytes of a copy or fill move now (README: "Data"). */
static void data_effects(const struct fz_cmd *c)
{
    if (c->kind == FZ_OP_COPY && c->bytes > 0) {
        memmove(c->dst, c->src, c->bytes);
    } else if (c->kind == FZ_OP_FILL) {
        unsigned char *d = c->dst;
        for (size_t i = 0; i < c->bytes; i++)
            d[i] = c->pattern[i % c->pattern_size];
    }
}

/* Puts a command on q's engine; fz.lock held. */
static ze_result_t enqueue(struct fz_queue_state *q, const struct fz_cmd *c,
                           uint64_t earliest, ze_fence_handle_t fence,
                           uint64_t list_id, bool silent)
{
    struct fz_op *op = calloc(1, sizeof *op);
    if (op == NULL || !cmd_copy(&op->cmd, c)) {
        free(op);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    data_effects(c);
    op->earliest = earliest;
    op->queue = q;
    op->fence = fence;
    op->list_id = list_id;
    op->silent = silent;
    struct fz_engine *e = q->engine;
    if (e->tail != NULL)
        e->tail->next = op;
    else
        e->head = op;
    e->tail = op;
    q->pending++;
    return ZE_RESULT_SUCCESS;
}

static uint64_t submit_tick(void)
{
    return fz_tick_ceil(fz_now() + fz.k.submit_ns);
}

/* ------------------------------------------------------------ recording -- */

static ze_result_t record(ze_command_list_handle_t l, struct fz_cmd *c)
{
    if (l == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (c->kind == FZ_OP_KERNEL && l->ordinal != 0)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* no kernels on copy engines
                                                  */
    if (l->immediate) {
        pthread_mutex_lock(&fz.lock);
        ze_result_t r = enqueue(&l->q, c, submit_tick(), NULL, l->id, false);
        fz_advance();
        pthread_mutex_unlock(&fz.lock);
        if (r == ZE_RESULT_SUCCESS && l->q.synchronous)
            r = fz_wait(fz_queue_ready, &l->q, UINT64_MAX);
        return r;
    }
    if (l->closed)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (l->n_cmds == l->cap_cmds) {
        size_t cap = l->cap_cmds ? 2 * l->cap_cmds : 16;
        struct fz_cmd *n = realloc(l->cmds, cap * sizeof *n);
        if (n == NULL)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        l->cmds = n;
        l->cap_cmds = cap;
    }
    if (!cmd_copy(&l->cmds[l->n_cmds], c))
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->n_cmds++;
    return ZE_RESULT_SUCCESS;
}

static struct fz_cmd cmd_of(enum fz_op_kind kind, ze_event_handle_t signal,
                            uint32_t n_waits, ze_event_handle_t *waits)
{
    return (struct fz_cmd){.kind = kind,
                           .signal = signal,
                           .n_waits = waits ? n_waits : 0,
                           .waits = waits};
}

static ze_result_t launch(ze_command_list_handle_t l, ze_kernel_handle_t k,
                          ze_event_handle_t signal, uint32_t n,
                          ze_event_handle_t *waits)
{
    if (k == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    struct fz_cmd c = cmd_of(FZ_OP_KERNEL, signal, n, waits);
    strcpy(c.name, k->name);
    return record(l, &c);
}

static ze_result_t append_launch(ze_command_list_handle_t l,
                                 ze_kernel_handle_t k,
                                 const ze_group_count_t *g,
                                 ze_event_handle_t signal, uint32_t n,
                                 ze_event_handle_t *waits)
{
    if (g == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return launch(l, k, signal, n, waits);
}

static ze_result_t append_launch_multiple(ze_command_list_handle_t l,
                                          uint32_t nk, ze_kernel_handle_t *ks,
                                          const uint32_t *count,
                                          const ze_group_count_t *g,
                                          ze_event_handle_t signal, uint32_t n,
                                          ze_event_handle_t *waits)
{
    if (ks == NULL || count == NULL || g == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint32_t m = *count < nk ? *count : nk;
    ze_result_t r = ZE_RESULT_SUCCESS;
    for (uint32_t i = 0; i < m && r == ZE_RESULT_SUCCESS; i++)
        r = launch(l, ks[i], i + 1 == m ? signal : NULL, i == 0 ? n : 0,
                   i == 0 ? waits : NULL);
    return r;
}

static ze_result_t append_copy(ze_command_list_handle_t l, void *dst,
                               const void *src, size_t size,
                               ze_event_handle_t signal, uint32_t n,
                               ze_event_handle_t *waits)
{
    if (dst == NULL || src == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct fz_cmd c = cmd_of(FZ_OP_COPY, signal, n, waits);
    c.dst = dst;
    c.src = src;
    c.bytes = size;
    return record(l, &c);
}

static ze_result_t append_copy_ctx(ze_command_list_handle_t l, void *dst,
                                   ze_context_handle_t sc, const void *src,
                                   size_t size, ze_event_handle_t signal,
                                   uint32_t n, ze_event_handle_t *waits)
{
    return append_copy(l, dst, src, size, signal, n, waits);
}

static ze_result_t append_fill(ze_command_list_handle_t l, void *dst,
                               const void *pattern, size_t psize, size_t size,
                               ze_event_handle_t signal, uint32_t n,
                               ze_event_handle_t *waits)
{
    if (dst == NULL || pattern == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (psize == 0 || psize > FZ_PATTERN_MAX || (psize & (psize - 1)))
        return ZE_RESULT_ERROR_INVALID_SIZE;
    struct fz_cmd c = cmd_of(FZ_OP_FILL, signal, n, waits);
    c.dst = dst;
    c.bytes = size;
    memcpy(c.pattern, pattern, psize);
    c.pattern_size = psize;
    return record(l, &c);
}

static ze_result_t append_barrier(ze_command_list_handle_t l,
                                  ze_event_handle_t signal, uint32_t n,
                                  ze_event_handle_t *waits)
{
    struct fz_cmd c = cmd_of(FZ_OP_BARRIER, signal, n, waits);
    return record(l, &c);
}

static ze_result_t append_ranges_barrier(ze_command_list_handle_t l,
                                         uint32_t nr, const size_t *sizes,
                                         const void **ranges,
                                         ze_event_handle_t signal, uint32_t n,
                                         ze_event_handle_t *waits)
{
    return append_barrier(l, signal, n, waits);
}

static ze_result_t append_signal(ze_command_list_handle_t l,
                                 ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    struct fz_cmd c = cmd_of(FZ_OP_SIGNAL, e, 0, NULL);
    return record(l, &c);
}

static ze_result_t append_wait(ze_command_list_handle_t l, uint32_t n,
                               ze_event_handle_t *waits)
{
    if (waits == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct fz_cmd c = cmd_of(FZ_OP_WAIT, NULL, n, waits);
    return record(l, &c);
}

static ze_result_t append_reset(ze_command_list_handle_t l, ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    struct fz_cmd c = cmd_of(FZ_OP_RESET, NULL, 0, NULL);
    c.n_events = 1;
    c.events = &e;
    return record(l, &c);
}

static ze_result_t append_timestamp(ze_command_list_handle_t l, uint64_t *dst,
                                    ze_event_handle_t signal, uint32_t n,
                                    ze_event_handle_t *waits)
{
    if (dst == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct fz_cmd c = cmd_of(FZ_OP_TIMESTAMP, signal, n, waits);
    c.dst = dst;
    return record(l, &c);
}

static ze_result_t append_query_ts(ze_command_list_handle_t l, uint32_t ne,
                                   ze_event_handle_t *events, void *dst,
                                   const size_t *offsets,
                                   ze_event_handle_t signal, uint32_t n,
                                   ze_event_handle_t *waits)
{
    if (events == NULL || dst == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct fz_cmd c = cmd_of(FZ_OP_QUERY_TS, signal, n, waits);
    c.dst = dst;
    c.n_events = ne;
    c.events = events;
    c.offsets = (size_t *)offsets;
    return record(l, &c);
}

static ze_result_t append_prefetch(ze_command_list_handle_t l, const void *p,
                                   size_t size)
{
    return l ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t append_advise(ze_command_list_handle_t l,
                                 ze_device_handle_t d, const void *p,
                                 size_t size, ze_memory_advice_t a)
{
    return l ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

/* -------------------------------------------------------- command lists -- */

static ze_result_t list_new(ze_device_handle_t dev, uint32_t ordinal,
                            ze_command_list_handle_t *out)
{
    if (dev == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (fz_engine_of(dev, ordinal, 0) == NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    struct _ze_command_list_handle_t *l = fz_new(sizeof *l);
    if (l == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->dev = dev;
    l->ordinal = ordinal;
    pthread_mutex_lock(&fz.lock);
    l->id = ++fz.next_id;
    pthread_mutex_unlock(&fz.lock);
    *out = l;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_create(ze_context_handle_t c, ze_device_handle_t dev,
                               const ze_command_list_desc_t *desc,
                               ze_command_list_handle_t *out)
{
    if (desc == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return list_new(dev, desc->commandQueueGroupOrdinal, out);
}

static ze_result_t list_create_immediate(ze_context_handle_t c,
                                         ze_device_handle_t dev,
                                         const ze_command_queue_desc_t *desc,
                                         ze_command_list_handle_t *out)
{
    if (desc == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (dev != NULL && fz_engine_of(dev, desc->ordinal, desc->index) == NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    ze_result_t r = list_new(dev, desc->ordinal, out);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    (*out)->immediate = true;
    pthread_mutex_lock(&fz.lock);
    fz_queue_init(&(*out)->q, fz_engine_of(dev, desc->ordinal, desc->index),
                  desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    (*out)->q.id = (*out)->id;
    pthread_mutex_unlock(&fz.lock);
    return ZE_RESULT_SUCCESS;
}

static void list_clear(ze_command_list_handle_t l)
{
    for (size_t i = 0; i < l->n_cmds; i++)
        fz_cmd_free(&l->cmds[i]);
    l->n_cmds = 0;
    l->closed = false;
}

static ze_result_t list_destroy(ze_command_list_handle_t l)
{
    if (l == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    list_clear(l);
    free(l->cmds);
    fz_delete(l);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_close(ze_command_list_handle_t l)
{
    if (l == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    l->closed = true;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t list_reset(ze_command_list_handle_t l)
{
    if (l == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    list_clear(l);
    return ZE_RESULT_SUCCESS;
}

void fz_fill_command_list(ze_command_list_dditable_t *t)
{
    t->pfnCreate = list_create;
    t->pfnCreateImmediate = list_create_immediate;
    t->pfnDestroy = list_destroy;
    t->pfnClose = list_close;
    t->pfnReset = list_reset;
    t->pfnAppendWriteGlobalTimestamp = append_timestamp;
    t->pfnAppendBarrier = append_barrier;
    t->pfnAppendMemoryRangesBarrier = append_ranges_barrier;
    t->pfnAppendMemoryCopy = append_copy;
    t->pfnAppendMemoryFill = append_fill;
    t->pfnAppendMemoryCopyFromContext = append_copy_ctx;
    t->pfnAppendMemoryPrefetch = append_prefetch;
    t->pfnAppendMemAdvise = append_advise;
    t->pfnAppendSignalEvent = append_signal;
    t->pfnAppendWaitOnEvents = append_wait;
    t->pfnAppendEventReset = append_reset;
    /* Read when the loader asks for the table (at its zeInit): a driver
     * without the call, for the profiler's fallback. */
    const char *no_q = getenv("FAKEZE_NO_QUERY_TS");
    if (!no_q || !*no_q || !strcmp(no_q, "0"))
        t->pfnAppendQueryKernelTimestamps = append_query_ts;
    t->pfnAppendLaunchKernel = append_launch;
    t->pfnAppendLaunchCooperativeKernel = append_launch;
    t->pfnAppendLaunchKernelIndirect = append_launch;
    t->pfnAppendLaunchMultipleKernelsIndirect = append_launch_multiple;
}

/* ------------------------------------------------------- command queues -- */

static ze_result_t queue_create(ze_context_handle_t c, ze_device_handle_t dev,
                                const ze_command_queue_desc_t *desc,
                                ze_command_queue_handle_t *out)
{
    if (dev == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == NULL || out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct fz_engine *e = fz_engine_of(dev, desc->ordinal, desc->index);
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    struct _ze_command_queue_handle_t *q = fz_new(sizeof *q);
    if (q == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    q->dev = dev;
    pthread_mutex_lock(&fz.lock);
    fz_queue_init(&q->q, e, desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    pthread_mutex_unlock(&fz.lock);
    *out = q;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_destroy(ze_command_queue_handle_t q)
{
    fz_delete(q);
    return ZE_RESULT_SUCCESS;
}

/* Enqueues every command of the lists; the last op (or a silent one when
 * there is none) carries the fence. fz.lock held. */
static ze_result_t execute_locked(ze_command_queue_handle_t q, uint32_t n,
                                  ze_command_list_handle_t *lists,
                                  ze_fence_handle_t fence)
{
    uint64_t earliest = submit_tick();
    ze_result_t r = ZE_RESULT_SUCCESS;
    for (uint32_t i = 0; i < n && r == ZE_RESULT_SUCCESS; i++) {
        ze_command_list_handle_t l = lists[i];
        for (size_t j = 0; j < l->n_cmds && r == ZE_RESULT_SUCCESS; j++) {
            bool last = i + 1 == n && j + 1 == l->n_cmds;
            r = enqueue(&q->q, &l->cmds[j], earliest, last ? fence : NULL,
                        l->id, false);
        }
    }
    if (r == ZE_RESULT_SUCCESS && lists[n - 1]->n_cmds == 0 && fence != NULL) {
        struct fz_cmd c = cmd_of(FZ_OP_BARRIER, NULL, 0, NULL);
        r = enqueue(&q->q, &c, earliest, fence, 0, true);
    }
    fz_advance();
    return r;
}

static ze_result_t queue_execute(ze_command_queue_handle_t q, uint32_t n,
                                 ze_command_list_handle_t *lists,
                                 ze_fence_handle_t fence)
{
    if (q == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (lists == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (n == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        if (lists[i] == NULL)
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        if (lists[i]->immediate || !lists[i]->closed)
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (lists[i]->ordinal != q->q.engine->ordinal)
            return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    }
    pthread_mutex_lock(&fz.lock);
    if (fence != NULL)
        fence->scheduled = false;
    ze_result_t r = execute_locked(q, n, lists, fence);
    pthread_mutex_unlock(&fz.lock);
    if (r == ZE_RESULT_SUCCESS && q->q.synchronous)
        r = fz_wait(fz_queue_ready, &q->q, UINT64_MAX);
    return r;
}

static ze_result_t queue_sync(ze_command_queue_handle_t q, uint64_t timeout)
{
    if (q == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return fz_wait(fz_queue_ready, &q->q, timeout);
}

void fz_fill_command_queue(ze_command_queue_dditable_t *t)
{
    t->pfnCreate = queue_create;
    t->pfnDestroy = queue_destroy;
    t->pfnExecuteCommandLists = queue_execute;
    t->pfnSynchronize = queue_sync;
}
