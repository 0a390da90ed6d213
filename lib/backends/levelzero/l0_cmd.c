/*
 * l0_cmd.c - Level Zero device work from submission to activity: the
 * instances of immediate appends and of executed regular lists, their
 * settling (event status, kernel timestamps, conversion to the process
 * clock) and submission, and the host waits' activities. Design: l0.h.
 *
 * Clocks. Kernel timestamps count device timer ticks in their low
 * kernelTimestampValidBits bits (32 on current Intel GPUs: they wrap every
 * few minutes). Settling reads, once per device and batch, the device's
 * global timestamp pair (host ns, device ticks; zeDeviceGetGlobalTimestamps)
 * just after the work was seen complete: the work ended (D - end) mod 2^bits
 * ticks before D, and began (end - start) mod 2^bits ticks before its end,
 * so neither the wrap nor the device epoch matters as long as the work is
 * read within 2^bits ticks of its end. Ticks become nanoseconds by the
 * timer frequency, and the pair's host clock (found per device,
 * l0_objs.c) is mapped to the process clock once per batch.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/levelzero/l0.h"

#define MU gpuprof__l0_mu

/* Pending instances, oldest submission first (under MU; the count is
 * also read without it, as a hint). */
static l0_inst pending = {.next = &pending, .prev = &pending};
static uint32_t npending;

static void link_tail(l0_inst *i)
{
    i->prev = pending.prev;
    i->next = &pending;
    pending.prev->next = i;
    pending.prev = i;
    __atomic_store_n(&npending, npending + 1, __ATOMIC_RELAXED);
}

static void unlink_inst(l0_inst *i)
{
    i->prev->next = i->next;
    i->next->prev = i->prev;
    __atomic_store_n(&npending, npending - 1, __ATOMIC_RELAXED);
}

/* Under MU: an instance leaves the pending list with what it holds: its
 * list event's reading (`reset`: the run was read, so the event is reset
 * for the list's next run, here, before that run can be filed), the
 * harvest it reads, the one it waits for. */
static void inst_leave(l0_inst *i, bool reset)
{
    unlink_inst(i);
    if (i->ours && i->ours->inst == i) {
        i->ours->inst = NULL;
        if (reset && i->ours->refs > 1 && i->ours->ctx)
            L0_CALL(Z.EventHostReset(i->ev));
    }
    if (i->hv)
        gpuprof__l0_harv_unuse(i->hv);
    if (i->after)
        gpuprof__l0_harv_unuse(i->after);
    i->hv = i->after = NULL;
}

static void exec_free(l0_exec *ex)
{
    free(ex->lists);
    free(ex->harv);
    free(ex);
}

/* Instances come from a pool (under MU) refilled as they are submitted:
 * an append then allocates nothing of ours. */
#define POOL_MAX 4096
static l0_inst *inst_pool;
static uint32_t inst_pool_n;

static l0_inst *inst_alloc_locked(void)
{
    l0_inst *i = inst_pool;
    if (i) {
        inst_pool = i->next;
        inst_pool_n--;
        memset(i, 0, sizeof(*i));
        return i;
    }
    return calloc(1, sizeof(*i));
}

static void inst_free(l0_inst *i)
{
    pthread_mutex_lock(&MU);
    if (inst_pool_n < POOL_MAX) {
        i->next = inst_pool;
        inst_pool = i;
        inst_pool_n++;
        i = NULL;
    }
    pthread_mutex_unlock(&MU);
    free(i);
}

/* Under MU. */
static l0_inst *inst_new(const l0_tmpl *t, uint64_t corr, const l0_engine *e)
{
    l0_inst *i = inst_alloc_locked();
    if (!i)
        return NULL;
    i->corr = corr;
    i->kind = t->kind;
    i->dev = e->dev;
    i->device = e->dev ? e->dev->index : 0;
    i->stream = e->stream;
    i->name = t->kind == GPUPROF_OP_KERNEL ? t->name : NULL;
    i->binary = t->binary;
    i->bytes = t->bytes;
    i->items = t->items;
    i->group = t->group;
    i->ev = t->ev;
    i->ours = t->ours;
    i->status = 1;
    return i;
}

void gpuprof__l0_file(const l0_tmpl *t, uint64_t corr, const l0_engine *e)
{
    pthread_mutex_lock(&MU);
    l0_inst *i = e && t->ev ? inst_new(t, corr, e) : NULL;
    if (i)
        link_tail(i);
    pthread_mutex_unlock(&MU);
    if (!i) {
        if (t->ours)
            gpuprof__l0_ev_put(t->ours);
        /* Not timed: the operation is closed with nothing measured. */
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = corr;
        a.kind = t->kind;
        a.flags = GPUPROF_ACTIVITY_NOTE;
        gpuprof_be_activity_submit(&a, NULL);
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
    }
}

/* ---- executes of regular lists ---------------------------------------- */

/* The order operations of one execute are begun in. */
static const uint32_t kinds[] = {GPUPROF_OP_KERNEL,     GPUPROF_OP_COPY_H2D,
                                 GPUPROF_OP_COPY_D2H,   GPUPROF_OP_COPY_D2D,
                                 GPUPROF_OP_COPY_OTHER, GPUPROF_OP_MEMSET,
                                 GPUPROF_OP_OTHER};


/* Our events that ran unmeasured (dirty) must not be read for a measured
 * run before they were reset. Those that one unmeasured run may signal
 * and that show signalled (so that run is done with them) are reset here,
 * on the host (under MU); the others are reset by a harvest, on the device
 * after the unmeasured runs signalled them: with two runs queued, the
 * first one's signal shows while the second is still to come. */
static void reset_dirty(uint32_t n, ze_command_list_handle_t *lists)
{
    for (uint32_t l = 0; l < n; l++) {
        uint32_t nt;
        l0_tmpl *t = (l0_tmpl *)gpuprof__l0_list_tmpl(lists[l], &nt);
        for (uint32_t j = 0; j < nt; j++)
            if (t[j].dirty == 1 && t[j].ours && !t[j].ours->inst &&
                L0_CALL(Z.EventQueryStatus(t[j].ev)) == ZE_RESULT_SUCCESS) {
                L0_CALL(Z.EventHostReset(t[j].ev));
                t[j].dirty = 0;
            }
    }
}

static uint32_t count_kinds(uint32_t n, ze_command_list_handle_t *lists,
                            uint32_t *per_kind)
{
    uint32_t total = 0;
    for (uint32_t l = 0; l < n; l++) {
        uint32_t nt;
        const l0_tmpl *t = gpuprof__l0_list_tmpl(lists[l], &nt);
        for (uint32_t j = 0; j < nt; j++)
            if (t[j].ev && t[j].kind < GPUPROF_OP_KIND_COUNT) {
                per_kind[t[j].kind]++;
                total++;
            }
    }
    return total;
}

/* What the operation of `kind` states while it is open (under MU): the
 * events its commands wait for and the program's events they signal
 * (traces), the detectors' facts. */
static void kind_facts(uint64_t corr, uint32_t kind, uint32_t n,
                       ze_command_list_handle_t *lists, const l0_engine *e)
{
    bool multi = false, again = false, tracing = gpuprof_be_tracing();
    for (uint32_t l = 0; l < n; l++) {
        uint32_t nt;
        const l0_tmpl *t = gpuprof__l0_list_tmpl(lists[l], &nt);
        for (uint32_t j = 0; j < nt; j++) {
            if (t[j].kind != kind)
                continue;
            for (uint32_t w = 0; tracing && w < t[j].nwait; w++) {
                uint64_t target = gpuprof__l0_event_corr(t[j].wait[w]);
                if (target)
                    gpuprof_be_op_dep(corr, GPUPROF_DEP_STREAM_WAIT, 0,
                                      e->dev->index, e->stream, target);
            }
            if (tracing && !t[j].ours)
                gpuprof__l0_event_note(t[j].ev, corr);
            if (kind == GPUPROF_OP_KERNEL && t[j].name && !multi)
                multi = gpuprof_be_detect_kernel_context(t[j].name, t[j].ctx);
            if (kind == GPUPROF_OP_COPY_H2D && t[j].src && !again)
                again = gpuprof_be_detect_sent_again(t[j].src, t[j].bytes);
        }
    }
    if (multi)
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_MULTI_CONTEXT, 1);
    if (again)
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_OUTPUT_AS_INPUT, 1);
}

/* One operation per kind of work, in the execute's calling context (our
 * frames above it: this, gpuprof__l0_execute, the prologue). */
__attribute__((noinline)) static void begin_ops(l0_exec *ex,
                                                const uint32_t *per_kind,
                                                const l0_engine *e, uint32_t n,
                                                ze_command_list_handle_t *lists)
{
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        uint32_t kind = kinds[k];
        if (!per_kind[kind])
            continue;
        uint64_t corr = gpuprof_be_op_begin(kind, 3);
        __asm__ volatile("" ::: "memory");
        if (corr && corr != GPUPROF_CORR_PAUSED) {
            ex->corr[kind] = corr;
            gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH, 0, e->dev->index,
                              e->stream, 0);
            pthread_mutex_lock(&MU);
            kind_facts(corr, kind, n, lists, e);
            pthread_mutex_unlock(&MU);
        }
        gpuprof_be_op_end(corr);
    }
}

/* Instances of one list's templates (under MU), after harvest h (when
 * given) took its unread run; what cannot be timed is counted and taken
 * out of its operation's count. Returns whether h is used. */
static bool file_list(l0_exec *ex, ze_command_list_handle_t l,
                      const l0_engine *e, l0_harv *h, bool measured)
{
    uint32_t nt;
    l0_tmpl *t = (l0_tmpl *)gpuprof__l0_list_tmpl(l, &nt);
    bool used = h && gpuprof__l0_harv_switch(h, t, nt, measured);
    for (uint32_t j = 0; j < nt; j++) {
        if (!t[j].ev || t[j].kind >= GPUPROF_OP_KIND_COUNT ||
            !ex->corr[t[j].kind])
            continue;
        l0_inst *i = NULL;
        if (!(t[j].ours && (t[j].ours->inst || t[j].dirty)))
            i = inst_new(&t[j], ex->corr[t[j].kind], e);
        if (!i) { /* a run not read (or unmeasured, running) and no
                   * harvest, or no memory */
            ex->left[t[j].kind]--;
            gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
            continue;
        }
        if (i->ours) {
            i->ours->refs++;
            i->ours->inst = i;
            if (used) { /* its event is this run's once h ran */
                i->after = h;
                h->users++;
            }
        }
        i->ex = ex;
        ex->refs++;
        link_tail(i);
    }
    return used;
}

/* Under MU: every list's instances; with harvests, the array the driver
 * gets (ex->lists: each used harvest right before its list). */
static void file_templates(l0_exec *ex, uint32_t n,
                           ze_command_list_handle_t *lists, const l0_engine *e,
                           l0_harv **hv, bool measured)
{
    uint32_t k = 0;
    for (uint32_t l = 0; l < n; l++) {
        bool used = file_list(ex, lists[l], e, hv ? hv[l] : NULL, measured);
        if (used) {
            ex->harv[ex->nharv++] = hv[l];
            hv[l]->inflight = true;
        }
        if (ex->lists && used)
            ex->lists[k++] = hv[l]->h;
        if (ex->lists)
            ex->lists[k++] = lists[l];
        if (hv && hv[l])
            gpuprof__l0_harv_untake(hv[l]);
    }
    ex->nlists = k;
    if (ex->lists && !ex->nharv) { /* all read meanwhile: as given */
        free(ex->lists);
        ex->lists = NULL;
    }
}

/* Operations left with no instance are closed now (a note). */
static void close_empty(const uint64_t *corr, const uint32_t *filed)
{
    for (uint32_t k = 1; k < GPUPROF_OP_KIND_COUNT; k++) {
        if (!corr[k] || filed[k])
            continue;
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = corr[k];
        a.kind = k;
        a.flags = GPUPROF_ACTIVITY_NOTE;
        gpuprof_be_activity_submit(&a, NULL);
    }
}

__attribute__((noinline)) l0_exec *
gpuprof__l0_execute(ze_command_queue_handle_t q, uint32_t n,
                    ze_command_list_handle_t *lists)
{
    const l0_engine *e = gpuprof__l0_engine(q);
    if (!e || !n || !lists)
        return NULL;
    uint32_t per_kind[GPUPROF_OP_KIND_COUNT] = {0};
    pthread_mutex_lock(&MU);
    reset_dirty(n, lists);
    uint32_t total = count_kinds(n, lists, per_kind);
    pthread_mutex_unlock(&MU);
    l0_exec *ex = total ? calloc(1, sizeof(*ex)) : NULL;
    if (!ex)
        return NULL;
    l0_harv *stack[16], **mem = n <= 16 ? stack : calloc(n, sizeof(*mem));
    l0_harv **hv =
        mem ? gpuprof__l0_harv_for(ex, n, lists, e, mem, true) : NULL;
    memcpy(ex->left, per_kind, sizeof(per_kind));
    ex->refs = 1; /* the caller's, until its epilogue */
    begin_ops(ex, per_kind, e, n, lists);
    pthread_mutex_lock(&MU);
    file_templates(ex, n, lists, e, hv, true);
    uint32_t filed[GPUPROF_OP_KIND_COUNT];
    uint64_t corr[GPUPROF_OP_KIND_COUNT];
    memcpy(filed, ex->left, sizeof(filed));
    memcpy(corr, ex->corr, sizeof(corr));
    pthread_mutex_unlock(&MU);
    if (mem != stack)
        free(mem);
    close_empty(corr, filed);
    return ex;
}

void gpuprof__l0_mark_dirty(uint32_t n, ze_command_list_handle_t *lists)
{
    pthread_mutex_lock(&MU);
    for (uint32_t l = 0; lists && l < n; l++) {
        uint32_t nt;
        l0_tmpl *t = (l0_tmpl *)gpuprof__l0_list_tmpl(lists[l], &nt);
        for (uint32_t j = 0; j < nt; j++)
            if (t[j].ours && t[j].dirty < 2)
                t[j].dirty++;
    }
    pthread_mutex_unlock(&MU);
}

l0_exec *gpuprof__l0_execute_unmeasured(ze_command_queue_handle_t q,
                                        uint32_t n,
                                        ze_command_list_handle_t *lists)
{
    /* A measured run still unread is harvested before this one overwrites
     * its events (no operation: ex->corr stays 0, nothing is filed). */
    const l0_engine *e = gpuprof__l0_engine(q);
    l0_exec *ex = e && n && lists ? calloc(1, sizeof(*ex)) : NULL;
    if (!ex)
        return NULL;
    l0_harv *stack[16], **mem = n <= 16 ? stack : calloc(n, sizeof(*mem));
    l0_harv **hv =
        mem ? gpuprof__l0_harv_for(ex, n, lists, e, mem, false) : NULL;
    if (hv) {
        pthread_mutex_lock(&MU);
        file_templates(ex, n, lists, e, hv, false);
        pthread_mutex_unlock(&MU);
    }
    if (mem != stack)
        free(mem);
    if (!ex->lists) {
        exec_free(ex);
        return NULL;
    }
    ex->refs = 1;
    return ex;
}

void gpuprof__l0_exec_release(l0_exec *ex)
{
    if (!ex)
        return;
    pthread_mutex_lock(&MU);
    bool last = --ex->refs == 0;
    pthread_mutex_unlock(&MU);
    if (last)
        exec_free(ex);
}

/* ---- submission -------------------------------------------------------- */
/* Under MU: the instance leaves; true when its activity closes its
 * operation. */
static bool inst_final(l0_inst *i)
{
    if (!i->ex)
        return true;
    bool last = --i->ex->left[i->kind] == 0;
    if (--i->ex->refs == 0)
        exec_free(i->ex);
    i->ex = NULL;
    return last;
}

static void submit(const l0_inst *i, bool final)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = i->corr;
    a.kind = i->kind;
    a.flags = final ? 0 : GPUPROF_ACTIVITY_MORE;
    if (i->status != 0) {
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
        if (!final)
            return;
        a.flags |= GPUPROF_ACTIVITY_NOTE; /* closes it, nothing measured */
        gpuprof_be_activity_submit(&a, NULL);
        return;
    }
    a.device = i->device;
    a.stream = i->stream;
    a.start_ns = i->start_ns;
    a.end_ns = i->end_ns;
    a.bytes = i->bytes;
    a.name = i->name;
    gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
    if (i->kind == GPUPROF_OP_KERNEL) {
        x.binary = i->binary;
        x.count = 2;
        x.metric[0] = GPUPROF_METRIC_GPU_WORK_ITEMS;
        x.value[0] = i->items;
        x.metric[1] = GPUPROF_METRIC_GPU_GROUP_SIZE;
        x.value[1] = i->group;
    }
    gpuprof_be_activity_submit(&a, &x);
}

/* ---- clocks ------------------------------------------------------------ */
static const clockid_t host_clocks[] = {CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC,
                                        CLOCK_REALTIME, CLOCK_BOOTTIME};

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ticks_ns(const l0_dev *d, uint64_t ticks)
{
    return (uint64_t)((unsigned __int128)ticks * 1000000000u / d->hz);
}

/* A device's reference for one batch: process-clock ns and device ticks
 * of one moment after the batch's work was seen complete. */
typedef struct dev_ref {
    const l0_dev *dev;
    uint64_t host, ticks;
    bool ok;
} dev_ref;

/* CLOCK_MONOTONIC minus clock c, from the tightest of three brackets (a
 * preemption between two readings would otherwise be in the offset). */
static int64_t clock_offset(clockid_t c)
{
    int64_t best = 0;
    uint64_t width = UINT64_MAX;
    for (int k = 0; k < 3; k++) {
        uint64_t a = clock_ns(c), m = clock_ns(CLOCK_MONOTONIC),
                 b = clock_ns(c);
        if (b - a < width) {
            width = b - a;
            best = (int64_t)(m - a - (b - a) / 2);
        }
    }
    return best;
}

static void ref_take(dev_ref *r, const l0_dev *d)
{
    uint64_t h = 0, t = 0;
    r->dev = d;
    r->ok =
        L0_CALL(Z.DeviceGetGlobalTimestamps(d->h, &h, &t)) == ZE_RESULT_SUCCESS;
    if (r->ok && d->clock >= 0 && d->clock != 1) /* RAW, REALTIME, BOOT */
        h = h + clock_offset(host_clocks[d->clock]);
    else if (r->ok && d->clock < 0) /* unknown: read it now */
        h = gpuprof_be_now_ns();
    r->host = h;
    r->ticks = t;
}

/* Kernel timestamps (device ticks, kmask bits) -> process clock. */
static void convert(l0_inst *i, const dev_ref *r, uint64_t ks, uint64_t ke)
{
    const l0_dev *d = r->dev;
    uint64_t ago_end = (r->ticks - ke) & d->kmask;
    uint64_t ago_start = ago_end + ((ke - ks) & d->kmask);
    int64_t off = (int64_t)r->host; /* offset of tick "0 ago" */
    i->end_ns =
        gpuprof_be_clock_to_host(0, off - (int64_t)ticks_ns(d, ago_end));
    i->start_ns =
        gpuprof_be_clock_to_host(0, off - (int64_t)ticks_ns(d, ago_start));
}

/* ---- settling ---------------------------------------------------------- */
#define BATCH 64
#define MAX_REFS 8

static const dev_ref *ref_for(dev_ref *refs, int *nrefs, const l0_dev *d)
{
    for (int k = 0; k < *nrefs; k++)
        if (refs[k].dev == d)
            return refs[k].ok ? &refs[k] : NULL;
    if (*nrefs == MAX_REFS)
        return NULL;
    ref_take(&refs[*nrefs], d);
    return refs[(*nrefs)++].ok ? &refs[*nrefs - 1] : NULL;
}

/* Under MU: is `i` complete (1), not yet (0)? Reads its timestamps. */
static int inst_poll(l0_inst *i, ze_kernel_timestamp_result_t *ts)
{
    ze_result_t r;
    if (i->hv) { /* harvested: its harvest's memory, once it ran */
        l0_harv *h = i->hv;
        if (!h->buf || !h->done || !h->done->ctx)
            return -1;
        if (h->inflight) { /* one query per run of the harvest */
            r = L0_CALL(Z.EventQueryStatus(h->done->h));
            if (r == ZE_RESULT_NOT_READY)
                return 0;
            if (r != ZE_RESULT_SUCCESS)
                return -1;
            h->inflight = false;
        }
        *ts = h->buf[i->slot];
        return 1;
    }
    if (i->after) { /* the event still holds the run before, until then */
        l0_harv *h = i->after;
        if (h->inflight && h->done && h->done->ctx) {
            if (L0_CALL(Z.EventQueryStatus(h->done->h)) == ZE_RESULT_NOT_READY)
                return 0;
            h->inflight = false;
        }
        gpuprof__l0_harv_unuse(i->after);
        i->after = NULL;
    }
    if (i->ours && !i->ours->ctx)
        return -1; /* its context was destroyed */
    r = L0_CALL(Z.EventQueryStatus(i->ev));
    if (r == ZE_RESULT_NOT_READY)
        return 0;
    if (r != ZE_RESULT_SUCCESS ||
        L0_CALL(Z.EventQueryKernelTimestamp(i->ev, ts)) != ZE_RESULT_SUCCESS)
        return -1;
    return 1;
}

/* One batch: takes up to BATCH complete instances out (querying at most
 * `max`, 0: no limit; a bounded pass stops at the first not complete),
 * then reads each device's reference -- after every query of the batch,
 * so that all the work it saw complete ended before it -- and converts.
 * Returns whether more may be complete. */
static bool settle_batch(unsigned max)
{
    l0_inst *out[BATCH];
    uint64_t ks[BATCH], ke[BATCH];
    bool fin[BATCH];
    int nout = 0;
    unsigned asked = 0;
    dev_ref refs[MAX_REFS];
    int nrefs = 0;
    bool more = false;
    pthread_mutex_lock(&MU);
    for (l0_inst *i = pending.next, *n; i != &pending; i = n) {
        n = i->next;
        if (nout == BATCH || (max && asked == max)) {
            more = nout == BATCH;
            break;
        }
        asked++;
        ze_kernel_timestamp_result_t ts;
        int st = inst_poll(i, &ts);
        if (st == 0) {
            if (max)
                break;
            continue;
        }
        i->status = st > 0 ? 0 : -1;
        ks[nout] = ts.global.kernelStart;
        ke[nout] = ts.global.kernelEnd;
        inst_leave(i, true);
        fin[nout] = inst_final(i);
        out[nout++] = i;
    }
    for (int k = 0; k < nout; k++) {
        if (out[k]->status != 0)
            continue;
        const dev_ref *r = ref_for(refs, &nrefs, out[k]->dev);
        if (r)
            convert(out[k], r, ks[k], ke[k]);
        else
            out[k]->status = -1;
    }
    pthread_mutex_unlock(&MU);
    for (int k = 0; k < nout; k++) {
        submit(out[k], fin[k]);
        if (out[k]->ours)
            gpuprof__l0_ev_put(out[k]->ours);
        inst_free(out[k]);
    }
    return more;
}

void gpuprof__l0_settle(unsigned max)
{
    if (!__atomic_load_n(&npending, __ATOMIC_RELAXED))
        return;
    while (settle_batch(max) && !max)
        ;
}

/* The driver refused an execute: the runs its harvests took read their
 * events again. */
static void revert_harvests(l0_exec *ex)
{
    pthread_mutex_lock(&MU);
    for (uint32_t k = 0; k < ex->nharv; k++)
        ex->harv[k]->inflight = false; /* never ran */
    for (l0_inst *i = pending.next; ex->nharv && i != &pending; i = i->next)
        for (uint32_t k = 0; i->hv && k < ex->nharv; k++)
            if (i->hv == ex->harv[k]) {
                gpuprof__l0_harv_unuse(i->hv);
                i->hv = NULL;
                if (i->ours && !i->ours->inst)
                    i->ours->inst = i;
            }
    pthread_mutex_unlock(&MU);
}

void gpuprof__l0_exec_failed(l0_exec *ex)
{
    if (!ex)
        return;
    l0_inst *out[BATCH];
    bool fin[BATCH];
    for (;;) {
        int nout = 0;
        pthread_mutex_lock(&MU);
        for (l0_inst *i = pending.next, *n; i != &pending && nout < BATCH;
             i = n) {
            n = i->next;
            if (i->ex != ex)
                continue;
            inst_leave(i, false);
            i->status = -1;
            fin[nout] = inst_final(i); /* ex stays: the caller's ref */
            out[nout++] = i;
        }
        pthread_mutex_unlock(&MU);
        for (int k = 0; k < nout; k++) {
            submit(out[k], fin[k]);
            if (out[k]->ours)
                gpuprof__l0_ev_put(out[k]->ours);
            inst_free(out[k]);
        }
        if (nout < BATCH)
            break;
    }
    revert_harvests(ex);
    gpuprof__l0_exec_release(ex);
}

/* Work still running at finalize gets up to 100 ms to end (the program
 * may finalize right after its last launch): waited for oldest first. */
static void grace(void)
{
    uint64_t deadline = gpuprof_be_now_ns() + 100000000u;
    for (;;) {
        pthread_mutex_lock(&MU);
        ze_event_handle_t ev = NULL;
        for (l0_inst *i = pending.next; i != &pending && !ev; i = i->next)
            if ((!i->ours || i->ours->ctx) &&
                L0_CALL(Z.EventQueryStatus(i->ev)) == ZE_RESULT_NOT_READY)
                ev = i->ev;
        pthread_mutex_unlock(&MU);
        uint64_t now = gpuprof_be_now_ns();
        if (!ev || now >= deadline)
            return;
        if (L0_CALL(Z.EventHostSynchronize(ev, deadline - now)) !=
            ZE_RESULT_SUCCESS)
            return;
    }
}

void gpuprof__l0_drain(void)
{
    grace();
    gpuprof__l0_settle(0);
    uint32_t lost = 0;
    for (;;) {
        pthread_mutex_lock(&MU);
        l0_inst *i = pending.next != &pending ? pending.next : NULL;
        bool fin = false;
        if (i) {
            inst_leave(i, false);
            i->status = -1;
            fin = inst_final(i);
        }
        pthread_mutex_unlock(&MU);
        if (!i)
            break;
        submit(i, fin);
        if (i->ours)
            gpuprof__l0_ev_put(i->ours);
        inst_free(i);
        lost++;
    }
    if (lost)
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "levelzero: %u commands had not completed at finalize "
                       "(counted in records.dropped)",
                       lost);
}

/* ---- host waits -------------------------------------------------------- */
void gpuprof__l0_wait_done(uint64_t corr, uint64_t t0)
{
    uint64_t t1 = gpuprof_be_now_ns();
    gpuprof__l0_settle(0); /* what the wait saw finish, in first */
    if (!corr || corr == GPUPROF_CORR_PAUSED)
        return;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_SYNC;
    a.flags = GPUPROF_ACTIVITY_HOST;
    a.start_ns = t0;
    a.end_ns = t1 > t0 ? t1 : t0 + 1;
    gpuprof_be_activity_submit(&a, NULL);
}

uint64_t gpuprof__l0_exec_corr(const l0_exec *ex)
{
    for (size_t k = 0; ex && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (ex->corr[kinds[k]])
            return ex->corr[kinds[k]];
    return 0;
}
