/* tests/fakeze/fz_event.c - time in the fake driver: the host clock and the
 * device tick clock derived from it (README.md "The model"), host waits
 * that really sleep until a scripted end, and the objects that are waited
 * on: event pools, events (with kernel timestamps that wrap at
 * kernelTimestampValidBits) and fences. */
#include "fakeze.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- clock -- */

uint64_t fz_now(void)
{
    struct timespec ts;
    clock_gettime(fz.k.clock ? fz.k.clock : CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t since_h0(uint64_t host_ns)
{
    return host_ns > fz.h0 ? host_ns - fz.h0 : 0;
}

uint64_t fz_tick_floor(uint64_t host_ns)
{
    unsigned __int128 t = (unsigned __int128)since_h0(host_ns) * fz.k.timer_hz;
    return fz.k.ts_start + (uint64_t)(t / 1000000000u);
}

uint64_t fz_tick_ceil(uint64_t host_ns)
{
    unsigned __int128 t = (unsigned __int128)since_h0(host_ns) * fz.k.timer_hz;
    return fz.k.ts_start + (uint64_t)((t + 999999999u) / 1000000000u);
}

uint64_t fz_host_of(uint64_t tick)
{
    uint64_t d = tick > fz.k.ts_start ? tick - fz.k.ts_start : 0;
    unsigned __int128 t = (unsigned __int128)d * 1000000000u;
    return fz.h0 + (uint64_t)((t + fz.k.timer_hz - 1) / fz.k.timer_hz);
}

uint64_t fz_ticks_of_ns(uint64_t ns)
{
    unsigned __int128 t = (unsigned __int128)ns * fz.k.timer_hz;
    return (uint64_t)((t + 999999999u) / 1000000000u);
}

uint64_t fz_mask(uint32_t bits)
{
    return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

/* Sleeps ns of the driver's clock (relative: clock_nanosleep does not
 * take CLOCK_MONOTONIC_RAW); the caller re-reads the clock. */
static void nap(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

ze_result_t fz_wait(bool (*ready)(void *arg, uint64_t *end_tick), void *arg,
                    uint64_t timeout_ns)
{
    uint64_t begin = fz_now();
    uint64_t deadline =
        timeout_ns > UINT64_MAX - begin ? UINT64_MAX : begin + timeout_ns;
    for (;;) {
        uint64_t end_tick = 0;
        pthread_mutex_lock(&fz.lock);
        fz_advance();
        bool known = ready(arg, &end_tick);
        uint64_t done_at = known ? fz_host_of(end_tick) : UINT64_MAX;
        pthread_mutex_unlock(&fz.lock);
        uint64_t now = fz_now();
        if (now >= done_at)
            return ZE_RESULT_SUCCESS;
        if (now >= deadline)
            return ZE_RESULT_NOT_READY;
        uint64_t until = done_at < deadline ? done_at : deadline;
        uint64_t step = until - now;
        if (!known && step > 100000)
            step = 100000; /* poll: another thread may schedule it */
        nap(step);
    }
}

bool fz_queue_ready(void *queue_state, uint64_t *end_tick)
{
    struct fz_queue_state *q = queue_state;
    *end_tick = q->last_end;
    return q->pending == 0;
}

/* ----------------------------------------------------------- event pool -- */

static ze_result_t pool_create(ze_context_handle_t c,
                               const ze_event_pool_desc_t *desc, uint32_t n,
                               ze_device_handle_t *devs,
                               ze_event_pool_handle_t *out)
{
    if (desc == NULL || out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->count == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    struct _ze_event_pool_handle_t *p = fz_new(sizeof *p);
    if (p == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    p->flags = desc->flags;
    p->count = desc->count;
    *out = p;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t pool_destroy(ze_event_pool_handle_t p)
{
    fz_delete(p);
    return ZE_RESULT_SUCCESS;
}

/* ---------------------------------------------------------------- event -- */

static ze_result_t event_create(ze_event_pool_handle_t pool,
                                const ze_event_desc_t *desc,
                                ze_event_handle_t *out)
{
    if (pool == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == NULL || out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->index >= pool->count)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    struct _ze_event_handle_t *e = fz_new(sizeof *e);
    if (e == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    e->pool = pool;
    e->index = desc->index;
    *out = e;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_destroy(ze_event_handle_t e)
{
    if (e != NULL)
        free(e->hist);
    fz_delete(e);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t event_host_signal(ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&fz.lock);
    e->start = e->end = fz_tick_floor(fz_now());
    e->scheduled = true;
    fz_event_change(e, e->end, true, e->start, e->end);
    fz_advance();
    pthread_mutex_unlock(&fz.lock);
    return ZE_RESULT_SUCCESS;
}

/* The host's view now: the last change at or before now (NULL: none). */
static const struct fz_sig *view(ze_event_handle_t e, uint64_t now)
{
    /* host(at) <= now exactly when at <= tick_floor(now); by halves */
    uint64_t t = fz_tick_floor(now);
    uint32_t lo = 0, hi = e->nhist; /* the first change after t */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e->hist[mid].at <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &e->hist[lo - 1] : NULL;
}

void fz_event_change(ze_event_handle_t e, uint64_t at, bool on,
                     uint64_t start, uint64_t end)
{
    /* The past before the current state is gone. */
    uint64_t now = fz_now();
    const struct fz_sig *v = view(e, now);
    uint32_t drop = v ? (uint32_t)(v - e->hist) : 0;
    if (drop) {
        memmove(e->hist, e->hist + drop,
                (e->nhist - drop) * sizeof(*e->hist));
        e->nhist -= drop;
    }
    if (e->nhist == e->caphist) {
        uint32_t cap = e->caphist ? 2 * e->caphist : 8;
        struct fz_sig *h = realloc(e->hist, cap * sizeof(*h));
        if (h == NULL)
            return;
        e->hist = h;
        e->caphist = cap;
    }
    uint32_t i = e->nhist;
    while (i > 0 && e->hist[i - 1].at > at)
        i--;
    if (i < e->nhist)
        memmove(e->hist + i + 1, e->hist + i,
                (e->nhist - i) * sizeof(*e->hist));
    e->hist[i] = (struct fz_sig){at, on, start, end};
    e->nhist++;
}

/* Signalled now (the tick it was), or the next signal to come. */
static bool event_ready(void *arg, uint64_t *end_tick)
{
    ze_event_handle_t e = arg;
    uint64_t now = fz_now();
    const struct fz_sig *v = view(e, now);
    if (v != NULL && v->on) {
        *end_tick = v->at;
        return true;
    }
    for (uint32_t i = v ? (uint32_t)(v - e->hist) + 1 : 0; i < e->nhist; i++)
        if (e->hist[i].on) {
            *end_tick = e->hist[i].at;
            return true;
        }
    return false;
}

static ze_result_t event_host_sync(ze_event_handle_t e, uint64_t timeout)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return fz_wait(event_ready, e, timeout);
}

static ze_result_t event_query(ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return fz_wait(event_ready, e, 0);
}

static ze_result_t event_host_reset(ze_event_handle_t e)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&fz.lock);
    e->scheduled = false;
    e->start = e->end = 0;
    fz_event_change(e, fz_tick_floor(fz_now()), false, 0, 0);
    pthread_mutex_unlock(&fz.lock);
    return ZE_RESULT_SUCCESS;
}

void fz_event_timestamp(ze_event_handle_t e, ze_kernel_timestamp_result_t *out)
{
    uint64_t m = fz_mask(fz.k.kernel_ts_valid_bits);
    uint64_t off = fz.k.context_ts_offset;
    out->global.kernelStart = e->start & m;
    out->global.kernelEnd = e->end & m;
    out->context.kernelStart = (e->start - off) & m;
    out->context.kernelEnd = (e->end - off) & m;
}

static ze_result_t event_kernel_timestamp(ze_event_handle_t e,
                                          ze_kernel_timestamp_result_t *out)
{
    if (e == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!(e->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    ze_result_t r = fz_wait(event_ready, e, 0);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    pthread_mutex_lock(&fz.lock);
    const struct fz_sig *v = view(e, fz_now());
    if (v == NULL || !v->on) { /* reset since the wait saw it */
        pthread_mutex_unlock(&fz.lock);
        return ZE_RESULT_NOT_READY;
    }
    struct _ze_event_handle_t seen = {.start = v->start, .end = v->end};
    fz_event_timestamp(&seen, out);
    pthread_mutex_unlock(&fz.lock);
    return ZE_RESULT_SUCCESS;
}

/* ---------------------------------------------------------------- fence -- */

static ze_result_t fence_create(ze_command_queue_handle_t q,
                                const ze_fence_desc_t *desc,
                                ze_fence_handle_t *out)
{
    if (q == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    struct _ze_fence_handle_t *f = fz_new(sizeof *f);
    if (f == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    f->queue = q;
    if (desc != NULL && (desc->flags & ZE_FENCE_FLAG_SIGNALED)) {
        f->scheduled = true;
        f->end = fz.k.ts_start;
    }
    *out = f;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_destroy(ze_fence_handle_t f)
{
    fz_delete(f);
    return ZE_RESULT_SUCCESS;
}

static bool fence_ready(void *arg, uint64_t *end_tick)
{
    ze_fence_handle_t f = arg;
    *end_tick = f->end;
    return f->scheduled;
}

static ze_result_t fence_host_sync(ze_fence_handle_t f, uint64_t timeout)
{
    if (f == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return fz_wait(fence_ready, f, timeout);
}

static ze_result_t fence_query(ze_fence_handle_t f)
{
    if (f == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return fz_wait(fence_ready, f, 0);
}

static ze_result_t fence_reset(ze_fence_handle_t f)
{
    if (f == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&fz.lock);
    f->scheduled = false;
    f->end = 0;
    pthread_mutex_unlock(&fz.lock);
    return ZE_RESULT_SUCCESS;
}

/* --------------------------------------------------------------- tables -- */

void fz_fill_event_pool(ze_event_pool_dditable_t *t)
{
    t->pfnCreate = pool_create;
    t->pfnDestroy = pool_destroy;
}

void fz_fill_event(ze_event_dditable_t *t)
{
    t->pfnCreate = event_create;
    t->pfnDestroy = event_destroy;
    t->pfnHostSignal = event_host_signal;
    t->pfnHostSynchronize = event_host_sync;
    t->pfnQueryStatus = event_query;
    t->pfnHostReset = event_host_reset;
    t->pfnQueryKernelTimestamp = event_kernel_timestamp;
}

void fz_fill_fence(ze_fence_dditable_t *t)
{
    t->pfnCreate = fence_create;
    t->pfnDestroy = fence_destroy;
    t->pfnHostSynchronize = fence_host_sync;
    t->pfnQueryStatus = fence_query;
    t->pfnReset = fence_reset;
}
