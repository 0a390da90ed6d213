/*
 * l0_harv.c - harvests: how a regular list executed again before its
 * previous run was read keeps every run timed. Design: l0.h, l0_cmd.c.
 *
 * A regular list's commands keep their kernel-timestamp events from run
 * to run, so a run that starts while the previous one is unread would
 * overwrite what the host has not read yet (the loop `for (i..N)
 * zeCommandQueueExecuteCommandLists(q, 1, &list, NULL)` before one
 * synchronize). A harvest is a small command list of ours, made for one
 * list's device, context and engine group: it waits for the events of the
 * run still unread, copies their kernel timestamps into host memory of its
 * own (zeCommandListAppendQueryKernelTimestamps), resets them
 * (zeCommandListAppendEventReset) and signals an event of ours when done
 * (a barrier). The execute's prologue puts it in the list array the driver
 * gets, right before the list (an engine runs the lists of a queue in
 * order), and the unread run's instances then read the harvest's memory
 * once its event is signalled, while the new run's read the events only
 * after it. Harvests are made once and reused when idle (no instance
 * reads them any more): a list executed N times before one wait needs N-1
 * of them, each built once for the list's events (rebuilt only when the
 * set of unread events differs). All of a process's harvests are on one
 * list under MU, the idle ones first (a harvest moves to the front when it
 * goes idle, to the back when taken), so that taking one looks at idle
 * harvests only. For an execute (l0_cmd.c), this file also says which
 * lists need one (gpuprof__l0_harv_for, with the host-wait fallback) and
 * moves an unread run onto one (gpuprof__l0_harv_switch).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/levelzero/l0.h"

#define MU gpuprof__l0_mu

static l0_harv all = {.next = &all, .prev = &all}; /* under MU */
/* The driver cannot query kernel timestamps into memory: no harvests (the
 * execute then waits on the host, l0_cmd.c). */
static _Atomic int unsupported;

/* Can the driver append a kernel-timestamp query? Tried once per harvest
 * made, on its own done event (not appended with waits: never run). */
static bool can_query(l0_harv *h)
{
    ze_result_t r = L0_CALL(Z.AppendQueryKernelTimestamps(
        h->h, 1, &h->done->h, h->buf, NULL, NULL, 0, NULL));
    if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE ||
        r == ZE_RESULT_ERROR_UNINITIALIZED)
        atomic_store(&unsupported, 1);
    return r == ZE_RESULT_SUCCESS &&
           L0_CALL(Z.CommandListReset(h->h)) == ZE_RESULT_SUCCESS;
}

/* Its driver objects (MU may be held: our event goes back locked). */
static void harv_destroy_objs(l0_harv *h, bool locked)
{
    if (h->h)
        L0_CALL(Z.CommandListDestroy(h->h));
    if (h->buf)
        L0_CALL(Z.MemFree(h->ctx, h->buf));
    if (h->done) {
        if (locked)
            gpuprof__l0_ev_put_locked(h->done);
        else
            gpuprof__l0_ev_put(h->done);
    }
    h->h = NULL;
    h->buf = NULL;
    h->done = NULL;
}

static void harv_unlink(l0_harv *h)
{
    h->prev->next = h->next;
    h->next->prev = h->prev;
}

/* At the front (idle) or the back (busy). */
static void harv_place(l0_harv *h, bool idle)
{
    l0_harv *at = idle ? &all : all.prev;
    h->prev = at;
    h->next = at->next;
    at->next->prev = h;
    at->next = h;
}

static bool harv_idle(const l0_harv *h)
{
    return !h->users && !h->taken;
}

/* Under MU: a harvest gone idle goes to the front, or goes when it is an
 * orphan. */
static void harv_maybe_free(l0_harv *h)
{
    if (!harv_idle(h))
        return;
    harv_unlink(h);
    if (h->list) {
        harv_place(h, true);
        return;
    }
    harv_destroy_objs(h, true);
    free(h->evs);
    free(h);
}

static l0_harv *harv_new(ze_command_list_handle_t list, const l0_engine *e,
                         ze_context_handle_t ctx, uint32_t cap)
{
    l0_harv *h = calloc(1, sizeof(*h));
    ze_event_handle_t *evs = calloc(cap, sizeof(*evs));
    if (!h || !evs) {
        free(h);
        free(evs);
        return NULL;
    }
    h->list = list;
    h->ctx = ctx;
    h->dev = e->dev->h;
    h->ordinal = e->stream >> 8;
    h->cap = cap;
    h->evs = evs;
    ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL,
                                 h->ordinal, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL,
                                   0};
    void *buf = NULL;
    bool ok = L0_CALL(Z.CommandListCreate(ctx, h->dev, &ld, &h->h)) ==
                  ZE_RESULT_SUCCESS &&
              L0_CALL(Z.MemAllocHost(ctx, &hd, cap * sizeof(*h->buf), 64,
                                     &buf)) == ZE_RESULT_SUCCESS;
    h->buf = buf;
    ok = ok && (h->done = gpuprof__l0_ev_get(ctx)) != NULL && can_query(h);
    if (!ok) {
        harv_destroy_objs(h, false);
        free(evs);
        free(h);
        return NULL;
    }
    return h;
}

/* Under MU: an idle harvest may still run on the device (nobody read
 * through it: its runs' instances went, or it only reset events): it is
 * taken again only once its done event says it ran. */
static bool still_running(l0_harv *h)
{
    if (h->inflight && h->done && h->done->ctx &&
        L0_CALL(Z.EventQueryStatus(h->done->h)) == ZE_RESULT_SUCCESS)
        h->inflight = false;
    return h->inflight;
}

l0_harv *gpuprof__l0_harv_take(ze_command_list_handle_t list,
                               const l0_engine *e, ze_context_handle_t ctx,
                               uint32_t cap)
{
    if (!e || !e->dev || !ctx || !cap || atomic_load(&unsupported))
        return NULL;
    uint32_t ordinal = e->stream >> 8;
    pthread_mutex_lock(&MU);
    l0_harv *h = all.next;
    for (; h != &all && harv_idle(h); h = h->next)
        if (h->list == list && h->h && h->ordinal == ordinal &&
            h->dev == e->dev->h && h->cap >= cap && !still_running(h))
            break;
    if (h == &all || !harv_idle(h))
        h = NULL;
    if (h) {
        h->taken = true;
        harv_unlink(h);
        harv_place(h, false);
    }
    bool reset = h && h->ran;
    pthread_mutex_unlock(&MU);
    if (reset) /* idle: its last run was seen done */
        L0_CALL(Z.EventHostReset(h->done->h));
    if (h)
        return h;
    h = harv_new(list, e, ctx, cap);
    if (!h)
        return NULL;
    pthread_mutex_lock(&MU);
    h->taken = true;
    harv_place(h, false);
    pthread_mutex_unlock(&MU);
    return h;
}

bool gpuprof__l0_harv_build(l0_harv *h, uint32_t n,
                            const ze_event_handle_t *evs)
{
    if (n > h->cap || !h->h)
        return false;
    h->ran = true;
    if (n == h->n && !memcmp(evs, h->evs, n * sizeof(*evs)))
        return true;
    if (h->n && L0_CALL(Z.CommandListReset(h->h)) != ZE_RESULT_SUCCESS)
        return false;
    h->n = 0;
    memcpy(h->evs, evs, n * sizeof(*evs));
    bool ok = L0_CALL(Z.AppendQueryKernelTimestamps(
                  h->h, n, h->evs, h->buf, NULL, NULL, n, h->evs)) ==
              ZE_RESULT_SUCCESS;
    for (uint32_t k = 0; ok && k < n; k++)
        ok = L0_CALL(Z.AppendEventReset(h->h, h->evs[k])) == ZE_RESULT_SUCCESS;
    ok = ok &&
         L0_CALL(Z.AppendBarrier(h->h, h->done->h, 0, NULL)) ==
             ZE_RESULT_SUCCESS &&
         L0_CALL(Z.CommandListClose(h->h)) == ZE_RESULT_SUCCESS;
    if (ok)
        h->n = n;
    else /* a list we cannot trust: never taken again */
        h->list = NULL;
    return ok;
}

void gpuprof__l0_harv_untake(l0_harv *h)
{
    h->taken = false;
    harv_maybe_free(h);
}

void gpuprof__l0_harv_unuse(l0_harv *h)
{
    if (h->users)
        h->users--;
    harv_maybe_free(h);
}

void gpuprof__l0_harv_list_gone(ze_command_list_handle_t list)
{
    pthread_mutex_lock(&MU);
    for (l0_harv *h = all.next, *n; h != &all; h = n) {
        n = h->next;
        if (h->list != list)
            continue;
        h->list = NULL;
        harv_maybe_free(h);
    }
    pthread_mutex_unlock(&MU);
}

/* Its command lists and memory go before the context does; harvests still
 * read keep their struct (their instances then read nothing). */
void gpuprof__l0_harv_ctx_gone(ze_context_handle_t c)
{
    pthread_mutex_lock(&MU);
    for (l0_harv *h = all.next, *n; h != &all; h = n) {
        n = h->next;
        if (h->ctx != c)
            continue;
        h->list = NULL;
        if (h->h)
            L0_CALL(Z.CommandListDestroy(h->h));
        if (h->buf)
            L0_CALL(Z.MemFree(h->ctx, h->buf));
        h->h = NULL;
        h->buf = NULL;
        harv_maybe_free(h);
    }
    pthread_mutex_unlock(&MU);
}

/* ---- an execute's harvests --------------------------------------------- */
/* Our events in list l (a harvest's size); *unread: a run of it is not
 * read yet, or (dirty_too) its events ran unmeasured (under MU). */
static uint32_t list_ours(ze_command_list_handle_t l, bool *unread,
                          bool dirty_too)
{
    uint32_t nt, c = 0;
    const l0_tmpl *t = gpuprof__l0_list_tmpl(l, &nt);
    for (uint32_t j = 0; j < nt; j++)
        if (t[j].ours) {
            c++;
            *unread |= t[j].ours->inst != NULL || (dirty_too && t[j].dirty);
        }
    return c;
}

/* The fallback when no harvest can be had: the host waits for the list's
 * unread run (that list only), counted in gpu.tool_overhead_ns. */
static void wait_previous(ze_command_list_handle_t l)
{
    static _Atomic int said;
    uint64_t t0 = gpuprof_be_now_ns();
    for (bool waited = false;; waited = true) {
        gpuprof__l0_settle(0);
        ze_event_handle_t ev = NULL;
        pthread_mutex_lock(&MU);
        uint32_t nt;
        const l0_tmpl *t = gpuprof__l0_list_tmpl(l, &nt);
        for (uint32_t j = 0; j < nt && !ev; j++)
            if (t[j].ours && t[j].ours->inst)
                ev = t[j].ev;
        pthread_mutex_unlock(&MU);
        if (!ev) {
            if (waited)
                gpuprof_be_count(GPUPROF_COUNTER_GPU_TOOL_OVERHEAD_NS,
                                 gpuprof_be_now_ns() - t0);
            return;
        }
        if (!waited && !atomic_exchange(&said, 1))
            gpuprof_be_log(GPUPROF_LOG_WARN,
                           "levelzero: no harvest list for a list run again "
                           "before its last run was read; the host waits "
                           "for that run (gpu.tool_overhead_ns)");
        if (L0_CALL(Z.EventHostSynchronize(ev, 1000000)) == ZE_RESULT_SUCCESS)
            nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

/* Before an execute: a harvest for each list whose last run is unread
 * (or that comes twice; for a measured execute, whose events ran
 * unmeasured and may still be signalled), taken outside MU (it may be
 * made); ex gets room for them. Where none can be had, the host waits for
 * that run. Returns hv (NULL: no harvest needed). */
l0_harv **gpuprof__l0_harv_for(l0_exec *ex, uint32_t n,
                               ze_command_list_handle_t *lists,
                               const l0_engine *e, l0_harv **hv,
                               bool measured)
{
    uint32_t stack[16], *want = n <= 16 ? stack : calloc(n, sizeof(*want));
    uint32_t nh = 0;
    if (!want)
        return NULL;
    pthread_mutex_lock(&MU);
    for (uint32_t l = 0; l < n; l++) {
        bool unread = false;
        uint32_t c = list_ours(lists[l], &unread, measured);
        for (uint32_t m = 0; m < l && !unread; m++)
            unread = lists[m] == lists[l];
        want[l] = unread ? c : 0;
        nh += want[l] != 0;
    }
    pthread_mutex_unlock(&MU);
    if (!nh) {
        if (want != stack)
            free(want);
        return NULL;
    }
    ex->lists = malloc((n + nh) * sizeof(*ex->lists));
    ex->harv = malloc(nh * sizeof(*ex->harv));
    for (uint32_t l = 0; l < n; l++) {
        hv[l] = want[l] && ex->lists && ex->harv
                    ? gpuprof__l0_harv_take(lists[l], e, e->ctx, want[l])
                    : NULL;
        if (want[l] && !hv[l])
            wait_previous(lists[l]);
    }
    if (want != stack)
        free(want);
    return hv;
}

/* Under MU: the list's unread run (its instances reading our events)
 * goes to harvest h, which is built for those events and the dirty ones
 * (reset by it); false when there are none or h cannot be built. */
bool gpuprof__l0_harv_switch(l0_harv *h, l0_tmpl *t, uint32_t nt,
                             bool measured)
{
    ze_event_handle_t stack[64], *evs = stack;
    if (nt > 64 && !(evs = malloc(nt * sizeof(*evs))))
        return false;
    uint32_t k = 0;
    for (uint32_t j = 0; j < nt; j++)
        if (t[j].ours && (t[j].ours->inst || t[j].dirty))
            evs[k++] = t[j].ev;
    bool ok = k && gpuprof__l0_harv_build(h, k, evs);
    if (evs != stack)
        free(evs);
    for (uint32_t j = 0, s = 0; ok && j < nt; j++) {
        l0_inst *i = t[j].ours ? t[j].ours->inst : NULL;
        if (!i && !(t[j].ours && t[j].dirty))
            continue;
        uint32_t slot = s++;
        /* The harvest resets it on the device. Before an unmeasured run,
         * which signals it again (and is counted once the driver took
         * it), the host cannot tell the harvest's reset happened: a
         * signal it sees may be the unread run's, so the event needs a
         * reset on the device again (dirty 2). */
        t[j].dirty = measured ? 0 : 1;
        if (!i)
            continue;
        if (i->after)
            gpuprof__l0_harv_unuse(i->after);
        i->after = NULL;
        i->hv = h;
        i->slot = slot;
        h->users++;
        t[j].ours->inst = NULL;
    }
    return ok;
}

