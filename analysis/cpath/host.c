/*
 * host.c - host threads are event streams too (cpath.h; seed 004 §4.1,
 * ref. [12] for lock contention): the dependencies between a process's
 * threads that its host records (trace format 1.5; lib/host) show, as
 * edges of its graph and as wait states.
 *
 * Matching, per object (a thread's id, a lock, a condition, a barrier, an
 * OpenMP region or task), on other threads only, never backwards in time:
 *   CREATE -> START     the creation number both carry: the create call's
 *                       start to the new thread's start;
 *   EXIT -> JOIN        the last exit of the joined thread's id at or
 *                       before the join returned (ids are reused only
 *                       after a join), to the join's end;
 *   BARRIER             one object's arrivals sorted by start are one
 *                       episode while each starts before every earlier
 *                       member's end (a thread that left the barrier
 *                       arrives again only after every member arrived):
 *                       every member's start to every other's end (from
 *                       the last to arrive only, beyond 32 members);
 *   UNLOCK -> LOCK      the last release of the lock while the blocked
 *                       lock waited (releases are recorded only while a
 *                       thread waited), to its end;
 *   SIGNAL -> COND_WAIT the last signal or broadcast of the condition
 *                       while it waited (none when it timed out);
 *   FORK -> IDLE        an OpenMP region's fork to the end of each
 *                       worker's wait for it (and to its start when the
 *                       runtime started the worker for it: its first);
 *   TASK_END -> TASKWAIT  the last of the task's children to end while
 *                       it waited.
 * A wait (a call of cp_host_waits) without a match keeps its time as
 * measured: nothing shows whom it waited for.
 *
 * OpenMP: a worker's arrival at the barrier that ends a region is a moment
 * (flag ARRIVAL: the runtime tells its end only at the next fork, as the
 * IDLE that follows); it counts as an arrival of that barrier's episode,
 * and the IDLE after it waits first for the episode's last arrival, then
 * for the fork. An arrival whose thread also has the full record (a
 * barrier inside the region) is that record's.
 *
 * Wait states, from the dependencies (one per wait, two for such an
 * IDLE): the waiter waited from its start (or the end of its previous
 * cause) until its cause happened (the last arrival's start, the exit,
 * the unlock, the signal, the fork), at most until it returned:
 *   WaitAtJoin        a join before the thread ended (pthread_join,
 *                     OpenMP taskwait: a join of child tasks);
 *   WaitAtBarrier     a barrier member before the last one arrived;
 *   LockContention    a lock held by another thread;
 *   WaitAtCondition   a condition wait before it was signalled;
 *   WaitAtFork        an OpenMP worker idle before its region forked.
 * Blame goes to what the late thread ran meanwhile (its activities'
 * overlap with the wait: the code that held the lock, the last arrival's
 * work, the joined thread's), the rest to the cause itself; where the late
 * thread itself waited for the GPU then (a wait state of waits.c: a
 * blocking read, clFinish), to the device work of that stream that ran
 * meanwhile (the kernels queued ahead of a blocking read, each its
 * overlap; the read's own copy only for its own interval), the stream's
 * gaps to the work waited for, the call's return after it to the call.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

#define S(a) (2 * (uint32_t)(a))
#define E(a) (2 * (uint32_t)(a) + 1)
#define BARRIER_ALL_PAIRS 32

static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

const char *cp_host_name(uint8_t op, uint8_t flags)
{
    static const char *const posix[CP_H_OPS] = {
        "?",
        "pthread_create",
        "thread start",
        "thread exit",
        "pthread_join",
        "pthread_barrier_wait",
        "pthread_mutex_lock (blocked)",
        "pthread_mutex_unlock",
        "pthread_cond_wait",
        "pthread_cond_signal",
        "OpenMP fork",
        "OpenMP idle",
        "OpenMP taskwait",
        "OpenMP task end"};
    if (op == CP_H_BARRIER && (flags & CP_H_OMP))
        return "OpenMP barrier";
    return op < CP_H_OPS ? posix[op] : "?";
}

/* A host record's place: what it is, when, on which lane. */
typedef struct ref {
    uint64_t object, t, end;
    uint32_t act, lane;
    uint8_t op, flags;
} ref;

static int by_object_time(const void *x, const void *y)
{
    const ref *a = x, *b = y;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if ((a->flags & CP_H_OMP) != (b->flags & CP_H_OMP))
        return (a->flags & CP_H_OMP) ? 1 : -1;
    if (a->object != b->object)
        return a->object < b->object ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->act > b->act) - (a->act < b->act);
}

/* The records of op `op`: r[*lo .. *hi) (r sorted by by_object_time). */
static void range_of(const ref *r, uint32_t n, uint8_t op, uint32_t *lo,
                     uint32_t *hi)
{
    uint32_t a = 0, b = n;
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (r[m].op < op)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    for (b = a; b < n && r[b].op == op; b++)
        ;
    *hi = b;
}

/* The last of r[lo .. hi) with w's object (and OpenMP flag) at a time in
 * [from, to], on another lane than w's; UINT32_MAX none. */
static uint32_t last_in(const ref *r, uint32_t lo, uint32_t hi, const ref *w,
                        uint64_t from, uint64_t to)
{
    uint32_t a = lo, b = hi; /* first after (object, to) */
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        bool after = (r[m].flags & CP_H_OMP) != (w->flags & CP_H_OMP)
                         ? (r[m].flags & CP_H_OMP) > (w->flags & CP_H_OMP)
                     : r[m].object != w->object ? r[m].object > w->object
                                                : r[m].t > to;
        if (after)
            b = m;
        else
            a = m + 1;
    }
    while (a > lo) {
        const ref *c = &r[--a];
        if (c->object != w->object ||
            (c->flags & CP_H_OMP) != (w->flags & CP_H_OMP) || c->t < from)
            return UINT32_MAX;
        if (c->lane != w->lane)
            return a;
    }
    return UINT32_MAX;
}

/* An edge from node src to the end of waiter w, and the dependency. */
static gpuprof_status link_wait(cp_graph *g, uint32_t src, const ref *w,
                                uint32_t cause, uint8_t type)
{
    gpuprof_status st = cp_edge_add(g, src, E(w->act), CP_E_HOST);
    return st == GPUPROF_OK ? cp_dep_add(g, w->act, cause, type, 0) : st;
}

/* Waits of op `wop` on the moments of op `cop` within [from, to]: the
 * waiter's start (or, join, from the beginning) to its end. */
static gpuprof_status pairs(cp_graph *g, const ref *r, uint32_t n, uint8_t wop,
                            uint8_t cop, uint8_t type, bool from_start)
{
    uint32_t wl, wh, cl, ch;
    range_of(r, n, wop, &wl, &wh);
    range_of(r, n, cop, &cl, &ch);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = wl; i < wh && st == GPUPROF_OK; i++) {
        if (r[i].flags & CP_H_TIMEOUT)
            continue;
        uint32_t c = last_in(r, cl, ch, &r[i], from_start ? r[i].t : 0,
                             r[i].end);
        if (c != UINT32_MAX)
            st = link_wait(g, E(r[c].act), &r[i], r[c].act, type);
    }
    return st;
}

static int by_aux(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y; /* (creation, ref) pairs */
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Create to start: by the creation number (aux), unique in a process. */
static gpuprof_status creations(cp_graph *g, const ref *r, uint32_t n,
                                const uint64_t *aux)
{
    uint32_t cl, ch, sl, sh;
    range_of(r, n, CP_H_CREATE, &cl, &ch);
    range_of(r, n, CP_H_START, &sl, &sh);
    uint64_t *s = malloc(2 * (size_t)(sh - sl + 1) * sizeof(*s));
    if (!s)
        return nomem();
    for (uint32_t k = sl; k < sh; k++)
        s[2 * (k - sl)] = aux[r[k].act], s[2 * (k - sl) + 1] = k;
    qsort(s, sh - sl, 2 * sizeof(*s), by_aux);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = cl; i < ch && st == GPUPROF_OK; i++) {
        uint64_t key[2] = {aux[r[i].act], 0};
        const uint64_t *f =
            key[0] ? bsearch(key, s, sh - sl, 2 * sizeof(*s), by_aux) : NULL;
        const ref *k = f ? &r[f[1]] : NULL;
        if (k && k->lane != r[i].lane && k->t >= r[i].t)
            st = cp_edge_add(g, S(r[i].act), S(k->act), CP_E_CREATE);
    }
    free(s);
    return st;
}

/* A barrier member's end for grouping: an OpenMP worker's arrival (a
 * moment, flag ARRIVAL) has none yet. */
static uint64_t end_of(const ref *x)
{
    return x->flags & CP_H_ARRIVAL ? UINT64_MAX : x->end;
}

/* One barrier episode, members m[0 .. k) (indices into r): the last to
 * arrive; each member that waited (not an arrival moment) depends on the
 * others' arrivals; an arrival moment not the last is noted in late[] for
 * the IDLE after it. */
static gpuprof_status episode(cp_graph *g, const ref *r, const uint32_t *m,
                              uint32_t k, uint32_t *late)
{
    uint32_t last = m[0];
    for (uint32_t i = 0; i < k; i++)
        last = r[m[i]].t > r[last].t ? m[i] : last;
    bool all = k <= BARRIER_ALL_PAIRS;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < k && st == GPUPROF_OK; i++) {
        const ref *w = &r[m[i]];
        if (w->flags & CP_H_ARRIVAL) {
            late[w->act] = m[i] == last ? CP_NONE : r[last].act;
            continue;
        }
        if (m[i] != last)
            st = cp_dep_add(g, w->act, r[last].act, CP_D_BARRIER, 0);
        /* beyond 32 members: the others wait for the last, the last for
         * the others */
        for (uint32_t j = 0; j < k && st == GPUPROF_OK; j++)
            if (j != i && (all || m[j] == last || m[i] == last))
                st = cp_edge_add(g, S(r[m[j]].act), E(w->act), CP_E_HOST);
    }
    return st;
}

/* Is r[i] an arrival moment whose lane also has the full record of that
 * barrier (a barrier within the region: it ended there)? */
static bool shadowed(const ref *r, uint32_t lo, uint32_t hi, uint32_t i)
{
    if (!(r[i].flags & CP_H_ARRIVAL))
        return false;
    for (uint32_t j = i; j-- > lo && r[j].object == r[i].object &&
                         r[j].t == r[i].t;)
        if (r[j].lane == r[i].lane && !(r[j].flags & CP_H_ARRIVAL))
            return true;
    for (uint32_t j = i + 1; j < hi && r[j].object == r[i].object &&
                             r[j].t == r[i].t;
         j++)
        if (r[j].lane == r[i].lane && !(r[j].flags & CP_H_ARRIVAL))
            return true;
    return false;
}

static gpuprof_status barriers(cp_graph *g, const ref *r, uint32_t n,
                               uint32_t *late)
{
    uint32_t lo, hi;
    range_of(r, n, CP_H_BARRIER, &lo, &hi);
    uint32_t *m = malloc((hi - lo + 1) * sizeof(*m));
    if (!m)
        return nomem();
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t a = lo, b; a < hi && st == GPUPROF_OK; a = b) {
        uint64_t first_end = UINT64_MAX;
        uint32_t k = 0;
        for (b = a; b < hi && r[b].object == r[a].object &&
                    (r[b].flags & CP_H_OMP) == (r[a].flags & CP_H_OMP) &&
                    (b == a || r[b].t < first_end);
             b++) {
            if (shadowed(r, lo, hi, b))
                continue;
            m[k++] = b;
            first_end = end_of(&r[b]) < first_end ? end_of(&r[b]) : first_end;
        }
        if (k > 1)
            st = episode(g, r, m, k, late);
    }
    free(m);
    return st;
}

/* OpenMP workers' idle waits: for the fork of their region, and first,
 * when the idle began at an arrival at the barrier that ended the region
 * before, for the last member to arrive there. */
static gpuprof_status idles(cp_graph *g, const ref *r, uint32_t n,
                            const uint32_t *late)
{
    uint32_t wl, wh, cl, ch;
    range_of(r, n, CP_H_IDLE, &wl, &wh);
    range_of(r, n, CP_H_FORK, &cl, &ch);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = wl; i < wh && st == GPUPROF_OK; i++) {
        uint32_t a = r[i].act, before = a - 1;
        if (a > g->lane[r[i].lane].first && late[before] != CP_NONE &&
            g->act[before].kind == CP_HOST)
            st = link_wait(g, S(late[before]), &r[i], late[before],
                           CP_D_BARRIER);
        uint32_t c = last_in(r, cl, ch, &r[i], 0, r[i].end);
        if (c != UINT32_MAX && st == GPUPROF_OK)
            st = link_wait(g, E(r[c].act), &r[i], r[c].act, CP_D_FORK);
        /* a worker the runtime started for this fork: made by it */
        if (c != UINT32_MAX && st == GPUPROF_OK &&
            a == g->lane[r[i].lane].first && r[c].t <= r[i].t)
            st = cp_edge_add(g, E(r[c].act), S(a), CP_E_CREATE);
    }
    return st;
}

gpuprof_status cp_host_edges(cp_graph *g)
{
    ref *r = malloc((g->nhost ? g->nhost : 1) * sizeof(*r));
    uint64_t *aux = malloc((g->nact ? g->nact : 1) * sizeof(*aux));
    uint32_t *late = malloc((g->nact ? g->nact : 1) * sizeof(*late));
    if (!r || !aux || !late) {
        free(r);
        free(aux);
        free(late);
        return nomem();
    }
    for (uint32_t i = 0; i < g->nact; i++)
        late[i] = CP_NONE;
    for (uint32_t i = 0; i < g->nhost; i++) {
        const cp_host *h = &g->host[i];
        const cp_act *a = &g->act[h->act];
        r[i] = (ref){h->object, a->start, a->end, h->act, a->lane, h->op,
                     h->flags};
        aux[h->act] = h->aux;
    }
    qsort(r, g->nhost, sizeof(*r), by_object_time);
    uint32_t n = g->nhost;
    gpuprof_status st = creations(g, r, n, aux);
    if (st == GPUPROF_OK)
        st = pairs(g, r, n, CP_H_JOIN, CP_H_EXIT, CP_D_JOIN, false);
    if (st == GPUPROF_OK)
        st = barriers(g, r, n, late);
    if (st == GPUPROF_OK)
        st = pairs(g, r, n, CP_H_LOCK, CP_H_UNLOCK, CP_D_LOCK, true);
    if (st == GPUPROF_OK)
        st = pairs(g, r, n, CP_H_COND_WAIT, CP_H_SIGNAL, CP_D_COND, true);
    if (st == GPUPROF_OK)
        st = idles(g, r, n, late);
    if (st == GPUPROF_OK)
        st = pairs(g, r, n, CP_H_TASKWAIT, CP_H_TASK_END, CP_D_JOIN, true);
    free(r);
    free(aux);
    free(late);
    return st;
}

/* ---- wait states ---------------------------------------------------------- */
typedef struct wlist {
    cp_wait *w;
    uint64_t n, cap;
} wlist;

static bool put(wlist *v, cp_wait w)
{
    if (!w.ns)
        return true;
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? 2 * v->cap : 64;
        cp_wait *x = realloc(v->w, cap * sizeof(*x));
        if (!x)
            return false;
        v->w = x;
        v->cap = cap;
    }
    v->w[v->n++] = w;
    return true;
}

/* One wait's blame as it is handed out: who waited, of what kind, and
 * where its pieces began (the first counted, the others parts). */
typedef struct share {
    wlist *v;
    uint32_t waiter;
    uint8_t kind;
    uint64_t n0;
} share;

static bool give(share *h, uint32_t who, uint64_t ns)
{
    return put(h->v, (cp_wait){h->waiter, who, h->kind, 0, h->v->n > h->n0,
                               ns});
}

/* Activities [first, end) of one lane over [ws, until): each its overlap,
 * a host GPU wait (via) through the device work it waited for; *left:
 * what none covered. */
static bool spread(share *h, const cp_graph *g, const uint32_t *via,
                   uint32_t first, uint32_t end, uint64_t ws, uint64_t until,
                   uint64_t *left);

/* Host activity i's [s, e) while it waited for device work k (a blocking
 * read queued behind kernels, a clFinish): the work of k's stream up to k
 * that ran then, each its overlap, the gaps to k; after k ended, the call
 * returning, to i itself. */
static bool through(share *h, const cp_graph *g, uint32_t i, uint32_t k,
                    uint64_t s, uint64_t e)
{
    uint64_t ke = g->act[k].end, mid = ke < s ? s : ke < e ? ke : e;
    uint64_t gap = 0;
    if (mid > s &&
        (!spread(h, g, NULL, g->lane[g->act[k].lane].first, k + 1, s, mid,
                 &gap) ||
         (gap && !give(h, k, gap))))
        return false;
    return e == mid || give(h, i, e - mid); /* no pieces of no time */
}

static bool spread(share *h, const cp_graph *g, const uint32_t *via,
                   uint32_t first, uint32_t end, uint64_t ws, uint64_t until,
                   uint64_t *left)
{
    uint32_t lo = first, hi = end; /* first ending after ws */
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (g->act[m].end <= ws)
            lo = m + 1;
        else
            hi = m;
    }
    *left = until - ws;
    for (uint32_t i = lo; i < end && g->act[i].start < until; i++) {
        uint64_t s = g->act[i].start > ws ? g->act[i].start : ws;
        uint64_t e = g->act[i].end < until ? g->act[i].end : until;
        if (e <= s)
            continue;
        bool ok = via && via[i] != CP_NONE ? through(h, g, i, via[i], s, e)
                                           : give(h, i, e - s);
        if (!ok)
            return false;
        *left -= e - s;
    }
    return true;
}

/* A wait of waiter over [ws, until) caused by `cause`: blamed on what the
 * cause's lane ran then (spread), what none covered on the cause. */
static bool blame(wlist *v, const cp_graph *g, const uint32_t *via,
                  uint32_t waiter, uint32_t cause, uint8_t kind, uint64_t ws,
                  uint64_t until)
{
    const cp_lane *l = &g->lane[g->act[cause].lane];
    share h = {v, waiter, kind, v->n};
    uint64_t left = 0;
    return spread(&h, g, via, l->first, l->first + l->n, ws, until, &left) &&
           give(&h, cause, left);
}

static uint8_t kind_of(uint8_t type)
{
    return type == CP_D_JOIN      ? CP_W_AT_JOIN
           : type == CP_D_BARRIER ? CP_W_AT_BARRIER
           : type == CP_D_LOCK    ? CP_W_LOCK_CONTENTION
           : type == CP_D_COND    ? CP_W_AT_CONDITION
                                  : CP_W_AT_FORK;
}

gpuprof_status cp_host_wait_states(const cp_graph *g, cp_wait **out,
                                   uint64_t *n)
{
    wlist v = {*out, *n, *n};
    /* The device work each GPU wait of waits.c waited for (its first
     * part: the work that ended last). */
    uint32_t *via = malloc((g->nact ? g->nact : 1) * sizeof(*via));
    if (!via)
        return nomem();
    for (uint32_t a = 0; a < g->nact; a++)
        via[a] = CP_NONE;
    for (uint64_t k = 0; k < *n; k++) {
        const cp_wait *w = &(*out)[k];
        if (!w->part && w->kind <= CP_W_STREAM_WAIT && w->cause != w->waiter &&
            g->act[w->cause].kind == CP_GPU)
            via[w->waiter] = w->cause;
    }
    bool ok = true;
    uint32_t prev = CP_NONE; /* a waiter's causes come one after another */
    uint64_t from = 0;
    for (uint64_t d = 0; ok && d < g->ndep; d++) {
        const cp_dep *p = &g->dep[d];
        if (p->type < CP_D_JOIN || p->type > CP_D_FORK)
            continue;
        const cp_act *w = &g->act[p->waiter];
        uint64_t ws = p->waiter == prev && from > w->start ? from : w->start;
        uint64_t until = g->act[p->cause].start;
        until = until < w->end ? until : w->end;
        if (until > ws)
            ok = blame(&v, g, via, p->waiter, p->cause, kind_of(p->type), ws,
                       until);
        prev = p->waiter;
        from = until > ws ? until : ws;
    }
    free(via);
    *out = v.w;
    *n = v.n;
    return ok ? GPUPROF_OK : nomem();
}
