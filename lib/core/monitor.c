/*
 * monitor.c - matches activities with the operations that caused them
 * (DESIGN §3 step 3).
 *
 * A round, under mon_mu: drain every source (operation records go into the
 * correlation table; activities are matched at once when their operation is
 * known, else kept pending), then resolve what is pending. An activity can
 * overtake its operation record only across sources, and the operation was
 * committed before the runtime ever saw the operation, so one further full
 * round always finds it: an activity still unmatched after a round that
 * started after it was read has an unknown correlation and is counted
 * unattributed. Matched activities go to the owning thread's activity
 * channel (gpu.c applies them); for a thread that has exited, the monitor
 * applies them itself.
 *
 * Rounds run on the monitor thread, which sleeps between them (200 us after
 * a round that found work, doubling up to 20 ms when idle: no wake-up cost
 * on the producers' path), and inline on a flushing thread
 * (gpuprof__monitor_sync), which needs every activity in before it writes.
 *
 * A round takes at most ROUND_BATCH records from each source. Without a
 * bound, a producer as fast as the monitor kept one round going for ever:
 * no entry retired, the table grew by every operation (page faults and TLB
 * shootdowns the application paid for), and nothing was counted. A round
 * cut short is not a full round: pending activities are declared
 * unattributed only at the end of an uncut one, and the thread starts the
 * next round at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/trace.h"

/* ---- correlation table: open addressing, linear probing, backward-shift
 * deletion (no tombstones); key 0 is empty (ids are never 0). ---------- */
typedef struct entry {
    uint64_t corr;
    gp_gpu *gpu;
    uint32_t node, kind;
    uint64_t retire; /* round after which it goes (0: not final yet) */
    uint64_t seq[2]; /* blame.c's sequence numbers (0: none) */
} entry;

/* An operation's final activity (no GPUPROF_ACTIVITY_MORE) retires its
 * entry, but not at once: siblings delivered out of order around it (the
 * kernels of a graph launch, shuffled in one buffer) still find it for
 * RETIRE_ROUNDS more rounds. */
#define RETIRE_ROUNDS 2
typedef struct retiring {
    uint64_t corr, round;
} retiring;

typedef struct pend {
    gp_rec rec;
    uint32_t age; /* rounds completed since it was read */
} pend;

static pthread_mutex_t mon_mu = PTHREAD_MUTEX_INITIALIZER; /* one round */
static entry *tab;
static uint64_t tab_mask, tab_used;
static pend *pending;
static size_t npending, pending_cap;
static retiring *retq; /* FIFO: rounds ascend */
static size_t retq_head, retq_n, retq_cap;
static gp_gpu **touched;
static size_t ntouched, touched_cap;
static uint64_t round_no;
static uint64_t round_acts; /* activities forwarded in this round */
static bool round_cut;       /* a source had more than ROUND_BATCH records */
#define ROUND_BATCH 4096

/* The thread, and the sleep between rounds. */
static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sleep_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cv;
static pthread_t thr;
static bool running, stopped_for_good;
static _Atomic int stop_req;
static _Atomic int held; /* test hook: no rounds on the thread */

void gpuprof__monitor_hold(bool hold);
void gpuprof__monitor_hold(bool hold) { gp_store_release(&held, hold); }

static inline uint64_t slot_of(uint64_t corr)
{
    return (corr * 0x9E3779B97F4A7C15ull) >> 20;
}

static bool tab_grow(void)
{
    uint64_t mask = tab ? tab_mask * 2 + 1 : 4095;
    entry *n = calloc(mask + 1, sizeof(*n));
    if (!n)
        return false;
    for (uint64_t i = 0; tab && i <= tab_mask; i++) {
        if (!tab[i].corr)
            continue;
        uint64_t j = slot_of(tab[i].corr);
        while (n[j & mask].corr)
            j++;
        n[j & mask] = tab[i];
    }
    free(tab);
    tab = n;
    tab_mask = mask;
    return true;
}

static entry *tab_find(uint64_t corr)
{
    if (!tab)
        return NULL;
    for (uint64_t j = slot_of(corr);; j++) {
        entry *e = &tab[j & tab_mask];
        if (e->corr == corr)
            return e;
        if (!e->corr)
            return NULL;
    }
}

/* Not bounded: it holds the operations in flight, which the runtime holds
 * too; refusing one would turn its activity into an unattributed one. */
static entry *tab_put(const gp_rec *r)
{
    if ((!tab || (tab_used + 1) * 2 > tab_mask + 1) && !tab_grow())
        return NULL;
    uint64_t j = slot_of(r->corr);
    while (tab[j & tab_mask].corr && tab[j & tab_mask].corr != r->corr)
        j++;
    entry *e = &tab[j & tab_mask];
    if (!e->corr)
        tab_used++;
    else
        e->gpu->mon_open--; /* an id reused: the old entry is replaced */
    *e = (entry){r->corr, r->gpu, r->node, r->kind, 0, {0, 0}};
    r->gpu->mon_open++;
    return e;
}

static void tab_del(entry *e)
{
    e->gpu->mon_open--;
    uint64_t i = (uint64_t)(e - tab);
    for (uint64_t j = i + 1;; j++) {
        entry *n = &tab[j & tab_mask];
        if (!n->corr)
            break;
        uint64_t home = slot_of(n->corr);
        /* n may move to the hole at i if its home is not in (i, j]. */
        if (((j - home) & tab_mask) >= ((j - i) & tab_mask)) {
            tab[i & tab_mask] = *n;
            i = j;
        }
    }
    tab[i & tab_mask].corr = 0;
    tab_used--;
}

/* ---- a round --------------------------------------------------------- */
static bool push_touched(gp_gpu *g)
{
    if (g->mon_mark == round_no)
        return true;
    if (ntouched == touched_cap) {
        size_t cap = touched_cap ? touched_cap * 2 : 64;
        gp_gpu **n = realloc(touched, cap * sizeof(*n));
        if (!n)
            return false;
        touched = n;
        touched_cap = cap;
    }
    g->mon_mark = round_no;
    touched[ntouched++] = g;
    return true;
}

static void retire_later(entry *e)
{
    if (retq_head + retq_n == retq_cap) {
        if (retq_head) { /* compact */
            memmove(retq, retq + retq_head, retq_n * sizeof(*retq));
            retq_head = 0;
        }
        if (retq_n == retq_cap) {
            size_t cap = retq_cap ? retq_cap * 2 : 1024;
            retiring *n = realloc(retq, cap * sizeof(*n));
            if (!n) { /* no memory to wait: retire now */
                tab_del(e);
                return;
            }
            retq = n;
            retq_cap = cap;
        }
    }
    e->retire = round_no + RETIRE_ROUNDS;
    retq[retq_head + retq_n++] = (retiring){e->corr, e->retire};
}

/* Deletes the entries whose grace has passed; at the start of a round. */
static void retire_due(void)
{
    while (retq_n && retq[retq_head].round < round_no) {
        entry *e = tab_find(retq[retq_head].corr);
        if (e)
            tab_del(e);
        retq_head++;
        retq_n--;
    }
    if (!retq_n)
        retq_head = 0;
}

static void forward(entry *e, const gp_rec *r)
{
    gp_gpu *g = e->gpu;
    gp_act a = {e->node, r->kind, r->name, r->binary, r->end_ns - r->start_ns,
                r->bytes, r->flags, r->nx, {0}, {0}};
    for (unsigned i = 0; i < r->nx && i < GP_XN; i++) {
        a.xm[i] = r->xm[i];
        a.xv[i] = r->xv[i];
    }
    if (gpuprof__trace_on() && !(r->flags & (GP_ACT_NOTE | GP_ACT_HOST)))
        gpuprof__trace_gpu(r->device, r->stream, r->start_ns, r->end_ns,
                           ((uint64_t)g->thread->seq << 32) | e->node,
                           r->corr);
    if (!push_touched(g) || !gpuprof__chan_push(&g->act, &a)) {
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
    } else {
        gp_store_release(&g->forwarded, gp_load_relaxed(&g->forwarded) + 1);
        round_acts++;
    }
    gpuprof__blame_act(g, e->node, e->seq, r, round_no);
    if (!(r->flags & GPUPROF_ACTIVITY_MORE) && !e->retire)
        retire_later(e);
}

void gpuprof__monitor_push(gp_gpu *g, const gp_act *a)
{
    if (!push_touched(g) || !gpuprof__chan_push(&g->act, a))
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
    else
        gp_store_release(&g->forwarded, gp_load_relaxed(&g->forwarded) + 1);
}

static bool pend_add(const gp_rec *r)
{
    if (npending == pending_cap) { /* records are line-aligned: no realloc */
        size_t cap = pending_cap ? pending_cap * 2 : 256;
        pend *n;
        if (posix_memalign((void **)&n, GP_CACHELINE, cap * sizeof(*n)))
            return false;
        if (npending)
            memcpy(n, pending, npending * sizeof(*n));
        free(pending);
        pending = n;
        pending_cap = cap;
    }
    pending[npending++] = (pend){*r, 0};
    return true;
}

static void on_rec(void *ctx, const void *item)
{
    (void)ctx;
    const gp_rec *r = item;
    if (r->type == GP_REC_OP) {
        r->gpu->mon_seen++;
        entry *e = tab_put(r);
        if (!e)
            gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
        else
            gpuprof__blame_op(r, e->seq);
        return;
    }
    entry *e = tab_find(r->corr);
    if (e)
        forward(e, r);
    else if (!pend_add(r))
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
}

/* One round; returns how many records it handled. Under mon_mu. */
static size_t round_locked(void)
{
    size_t work = 0;
    round_no++;
    round_acts = 0;
    round_cut = false;
    ntouched = 0;
    retire_due();
    uint32_t n = gpuprof__src_count();
    for (uint32_t i = 0; i < n; i++) {
        gp_src *s = gpuprof__src_at(i);
        if (!s)
            continue;
        /* Read `closed` first: a closed source gets nothing after it. */
        int closed = gp_load_acquire(&s->closed);
        size_t got = gpuprof__chan_drain(&s->ch, on_rec, NULL, ROUND_BATCH);
        work += got;
        if (got == ROUND_BATCH)
            round_cut = true; /* more may wait: the source stays */
        else if (closed)
            gpuprof__src_free(s);
    }
    size_t keep = 0;
    for (size_t i = 0; i < npending; i++) {
        pend *p = &pending[i];
        entry *e = tab_find(p->rec.corr);
        if (e)
            forward(e, &p->rec);
        else if (p->age >= 1 && !round_cut) /* a full round since */
            gpuprof__stat_add(GP_STAT_RECORDS_UNATTRIBUTED, 1);
        else {
            p->age = 1;
            pending[keep++] = *p;
        }
    }
    work += npending - keep;
    npending = keep;
    gpuprof__blame_round(round_no, gp_mono_ns(), false);
    /* Threads that exited get no more hooks: apply for them (Dekker with
     * gpuprof__gpu_thread_exit: we pushed, fence, then read `gone`). */
    if (ntouched)
        gp_fence_seq_cst();
    for (size_t i = 0; i < ntouched; i++)
        if (atomic_load_explicit(&touched[i]->gone, memory_order_relaxed))
            gpuprof__gpu_apply(touched[i]);
    if (round_acts) /* one shared update per round, not per activity */
        gpuprof__stat_add(GP_STAT_GPU_ACTIVITIES, round_acts);
    return work;
}

void gpuprof__monitor_sync(void)
{
    pthread_mutex_lock(&mon_mu);
    do
        round_locked();
    while (round_cut);
    for (int i = 0; i < 3 && npending; i++)
        round_locked();
    pthread_mutex_unlock(&mon_mu);
}

void gpuprof__monitor_blame_flush(void)
{
    pthread_mutex_lock(&mon_mu);
    round_no++; /* notes pushed now are applied by the caller's sync */
    ntouched = 0;
    gpuprof__blame_flush(gp_mono_ns());
    if (ntouched)
        gp_fence_seq_cst();
    for (size_t i = 0; i < ntouched; i++)
        if (atomic_load_explicit(&touched[i]->gone, memory_order_relaxed))
            gpuprof__gpu_apply(touched[i]);
    pthread_mutex_unlock(&mon_mu);
}

void gpuprof__monitor_settle(void)
{
    pthread_mutex_lock(&mon_mu);
    for (int i = 0; i <= RETIRE_ROUNDS && retq_n; i++)
        round_locked();
    pthread_mutex_unlock(&mon_mu);
}

bool gpuprof__monitor_quiescent(gp_gpu *g)
{
    pthread_mutex_lock(&mon_mu);
    bool q = g->mon_seen == gp_load_relaxed(&g->ops) && g->mon_open == 0 &&
             g->mon_refs == 0 &&
             gp_load_relaxed(&g->forwarded) == gp_load_relaxed(&g->applied);
    pthread_mutex_unlock(&mon_mu);
    return q;
}

/* ---- the thread ------------------------------------------------------ */
static void *monitor_main(void *arg)
{
    (void)arg;
    long sleep_us = 200;
    uint64_t last_sweep = 0;
    while (!gp_load_acquire(&stop_req)) {
        /* About once a second, merge exited GPU threads that are done
         * (bounded memory for a thread per task); never wait for a flush. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t now_s = (uint64_t)now.tv_sec;
        if (now_s != last_sweep && pthread_mutex_trylock(&G.flush_lock) == 0) {
            last_sweep = now_s;
            if (!G.final_written)
                gpuprof__threads_merge_gpu();
            pthread_mutex_unlock(&G.flush_lock);
        }
        size_t work = 0;
        bool more = false;
        if (!gp_load_acquire(&held)) {
            pthread_mutex_lock(&mon_mu);
            work = round_locked();
            more = round_cut;
            pthread_mutex_unlock(&mon_mu);
        }
        if (more)
            continue; /* records left behind: no sleep */
        sleep_us = work ? 200 : (sleep_us * 2 > 20000 ? 20000 : sleep_us * 2);
        struct timespec ts;
        gpuprof__deadline(&ts, (uint64_t)sleep_us * 1000);
        pthread_mutex_lock(&sleep_mu);
        while (!gp_load_acquire(&stop_req) &&
               pthread_cond_timedwait(&sleep_cv, &sleep_mu, &ts) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&sleep_mu);
    }
    return NULL;
}

static void cv_init(void) { gpuprof__cond_init_monotonic(&sleep_cv); }

void gpuprof__monitor_ensure(void)
{
    static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
    pthread_once(&cv_once, cv_init);
    pthread_mutex_lock(&thr_mu);
    if (!running && !stopped_for_good && !G.forked) {
        gp_store_relaxed(&stop_req, 0);
        int e = gpuprof__spawn(&thr, monitor_main, NULL);
        if (e == 0)
            running = true;
        else
            gpuprof__log(GPUPROF_LOG_ERROR, "cannot start the monitor thread "
                         "(%s); activities are attributed at flushes only",
                         strerror(e));
    }
    pthread_mutex_unlock(&thr_mu);
}

void gpuprof__monitor_stop(void)
{
    pthread_mutex_lock(&thr_mu);
    stopped_for_good = true;
    if (running) {
        pthread_mutex_lock(&sleep_mu);
        gp_store_release(&stop_req, 1);
        pthread_cond_signal(&sleep_cv);
        pthread_mutex_unlock(&sleep_mu);
        pthread_join(thr, NULL);
        running = false;
    }
    pthread_mutex_unlock(&thr_mu);
}

void gpuprof__monitor_atfork_prepare(void)
{
    pthread_mutex_lock(&thr_mu);
    pthread_mutex_lock(&mon_mu);
}

void gpuprof__monitor_atfork_parent(void)
{
    pthread_mutex_unlock(&mon_mu);
    pthread_mutex_unlock(&thr_mu);
}

void gpuprof__monitor_atfork_child(void)
{
    /* No monitor thread here; the table's threads are the parent's. */
    pthread_mutex_unlock(&mon_mu); /* taken by the prepare handler */
    pthread_mutex_unlock(&thr_mu);
    pthread_mutex_init(&sleep_mu, NULL); /* the monitor may have held it */
    cv_init();
    running = false;
    stopped_for_good = true;
    tab = NULL; /* leaked with the parent's other state */
    tab_mask = tab_used = 0;
    pending = NULL;
    npending = pending_cap = 0;
    touched = NULL;
    ntouched = touched_cap = 0;
    retq = NULL;
    retq_head = retq_n = retq_cap = 0;
    gpuprof__blame_atfork_child();
}
