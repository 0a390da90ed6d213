/*
 * device.c - kernels that share a device, in the projection (cpath.h;
 * seed 004 §6 names the assumption that independent kernels overlap
 * freely as the projection's main error where kernels share a device).
 *
 * A device is modelled one of two ways. Free: each kernel runs at its own
 * speed whatever else runs (the replay's own edges as they are: right for
 * devices with room to spare, and for the simulated GPU). Shared: the
 * kernels running at once share one device's worth of speed equally
 * (processor sharing), as on a device that one kernel fills (PoCL's CPU
 * cores; large kernels on a GPU). Under sharing, a kernel's work is what
 * it got of the device while it ran as measured (the integral of 1/k over
 * its interval, k the kernels running then), its rule's factor divides
 * that, and the projected timeline gives it back its share: the replay
 * (path.c) is run with the kernels' durations adjusted until the starts
 * it gives and the durations sharing gives agree (a fixed point; without
 * rules the measured timeline is one at once).
 *
 * Which model: the trace decides where it can. A kernel (a context) that
 * ran both alone and mostly beside others shows by how much company
 * slowed it (the median over such kernels of their median durations
 * beside others over alone): 1.25 times or more is shared, less is free.
 * Without such a kernel, the launches decide: where every kernel whose
 * launch size and device are known fills the device (api.c: as many
 * work-groups as its compute units hold at once), it is shared; else it
 * stays free (what the projection did before). `device:shared` or
 * `device:free` among the rules decides instead. Devices are told apart
 * per process (a joined graph holds the ranks' processes).
 *
 * Waiting for the device. A device may also start one stream's work
 * only as another's runs out (PoCL's CPU device hands out the work-groups
 * of the kernels of two queues in turn; a full GPU starts a kernel as
 * another one's last blocks drain): work that started later than its
 * launch and the work before it on its stream allowed, launched before
 * some work on another stream of its device ended and started while that
 * ran (or within QUEUED after it ended), waited for the device. The graph
 * gets an edge from that work's end to its start (CP_E_DEVICE, with the
 * measured gap, which may be negative: it started as the other drained),
 * so the replay starts it when what held it ends, however long that takes
 * in a projection, and the critical path runs through what it waited
 * for. Work that started when it could waited for nothing and gets none.
 */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

#define ALONE 0.1  /* below this share of its time beside others: alone */
#define BESIDE 0.5 /* above it: beside others */
#define SLOWED 1.25
#define ROUNDS 64  /* fixed-point rounds at most */
#define SETTLED 1000.0 /* ns: durations that move less have settled */
#define QUEUED 50000u  /* ns: work starting this soon after another ended */

typedef struct kern kern;

/* qsort_r's context: the graph and, for by_lane, the kernels. */
typedef struct sorting {
    const cp_graph *g;
    const kern *k;
} sorting;

/* A device: its process and number. */
static uint64_t key_of(const cp_graph *g, uint32_t a)
{
    const cp_lane *l = &g->lane[g->act[a].lane];
    return (uint64_t)l->process << 32 | l->device;
}

/* Activities by device, then activity index. */
static int by_key(const void *x, const void *y, void *arg)
{
    const cp_graph *g = ((const sorting *)arg)->g;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    uint64_t ka = key_of(g, a), kb = key_of(g, b);
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return (a > b) - (a < b);
}

struct kern {
    uint32_t act, ctx;
    double start, end;  /* ns, measured or projected */
    double work;        /* shared: what it got of the device */
    double over;        /* measured time beside other kernels */
};

static int by_lane(const void *x, const void *y, void *arg)
{
    const sorting *o = arg;
    const cp_act *a = &o->g->act[o->k[*(const uint32_t *)x].act];
    const cp_act *b = &o->g->act[o->k[*(const uint32_t *)y].act];
    if (a->lane != b->lane)
        return a->lane < b->lane ? -1 : 1;
    return (a > b) - (a < b);
}

/* Kernels of one device, with the share each got over [start, end): a
 * sweep over their starts and ends with the set running then. */
typedef struct ev {
    double t;
    uint32_t k;
    int8_t d; /* +1 start, -1 end */
} ev;

static int by_time(const void *x, const void *y)
{
    const ev *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->d - b->d; /* ends before starts at one time */
}

static gpuprof_status measure(kern *k, uint32_t n)
{
    ev *e = malloc((2 * (size_t)n + 1) * sizeof(*e));
    uint32_t *run = malloc(((size_t)n + 1) * sizeof(*run)), nrun = 0;
    if (!e || !run) {
        free(e);
        free(run);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    uint64_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        k[i].work = k[i].over = 0;
        if (k[i].end <= k[i].start)
            continue; /* no time: no work, never running */
        e[ne++] = (ev){k[i].start, i, 1};
        e[ne++] = (ev){k[i].end, i, -1};
    }
    qsort(e, ne, sizeof(*e), by_time);
    double t = 0;
    for (uint64_t j = 0; j < ne; j++) {
        double dt = e[j].t - t;
        for (uint32_t r = 0; dt > 0 && r < nrun; r++) {
            k[run[r]].work += dt / nrun;
            if (nrun > 1)
                k[run[r]].over += dt;
        }
        t = e[j].t;
        if (e[j].d > 0) {
            run[nrun++] = e[j].k;
            continue;
        }
        for (uint32_t r = 0; r < nrun; r++)
            if (run[r] == e[j].k) {
                run[r] = run[--nrun];
                break;
            }
    }
    free(e);
    free(run);
    return GPUPROF_OK;
}

static int by_ctx(const void *x, const void *y)
{
    const kern *a = x, *b = y;
    if (a->ctx != b->ctx)
        return a->ctx < b->ctx ? -1 : 1;
    return (a->act > b->act) - (a->act < b->act);
}

static int by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, uint32_t n)
{
    qsort(v, n, sizeof(*v), by_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The slowdown kernels showed beside others (0: no evidence), and how
 * many kernels (contexts) showed it. k is sorted by context here. */
static double slowdown(kern *k, uint32_t n, uint32_t *evidence)
{
    double *alone = malloc(((size_t)n + 1) * sizeof(double));
    double *beside = malloc(((size_t)n + 1) * sizeof(double));
    double *ratio = malloc(((size_t)n + 1) * sizeof(double));
    uint32_t nr = 0;
    qsort(k, n, sizeof(*k), by_ctx);
    for (uint32_t i = 0; alone && beside && ratio && i < n;) {
        uint32_t j = i, na = 0, nb = 0;
        for (; j < n && k[j].ctx == k[i].ctx; j++) {
            double d = k[j].end - k[j].start;
            if (d <= 0)
                continue;
            if (k[j].over < ALONE * d)
                alone[na++] = d;
            else if (k[j].over > BESIDE * d)
                beside[nb++] = d;
        }
        if (na && nb)
            ratio[nr++] = median(beside, nb) / median(alone, na);
        i = j;
    }
    double s = nr ? median(ratio, nr) : 0;
    free(alone);
    free(beside);
    free(ratio);
    *evidence = nr;
    return s;
}

/* Processor sharing from the starts in k: each kernel's end once it got
 * its work (equal shares of one device among those running), a kernel
 * starting no sooner than the one before it on its lane (stream) ended
 * (its start then moves). Those ready to start are at most one per
 * lane. */
static gpuprof_status share(const cp_graph *g, kern *k, uint32_t n)
{
    uint32_t *order = malloc(((size_t)n + 1) * sizeof(*order));
    uint32_t *after = malloc(((size_t)n + 1) * sizeof(*after));
    uint32_t *run = malloc(((size_t)n + 1) * sizeof(*run)), nrun = 0;
    uint32_t *wait = malloc(((size_t)n + 1) * sizeof(*wait)), nwait = 0;
    double *left = malloc(((size_t)n + 1) * sizeof(*left));
    double *ready = malloc(((size_t)n + 1) * sizeof(*ready));
    gpuprof_status st = GPUPROF_OK;
    if (!order || !after || !run || !wait || !left || !ready) {
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        goto out;
    }
    /* by lane, then activity (a lane's activities are in time order) */
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    sorting o = {g, k};
    qsort_r(order, n, sizeof(*order), by_lane, &o);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = order[i];
        bool first = !i || g->act[k[order[i - 1]].act].lane !=
                               g->act[k[x].act].lane;
        after[x] = i + 1 < n && g->act[k[order[i + 1]].act].lane ==
                                    g->act[k[x].act].lane
                       ? order[i + 1]
                       : UINT32_MAX;
        left[x] = k[x].work;
        ready[x] = k[x].start;
        if (first)
            wait[nwait++] = x;
    }
    double t = -INFINITY;
    while (nrun || nwait) {
        double arrive = INFINITY;
        for (uint32_t w = 0; w < nwait; w++)
            arrive = fmin(arrive, ready[wait[w]]);
        if (!nrun)
            t = fmax(t, arrive);
        for (uint32_t w = 0; w < nwait;) /* those ready by t start */
            if (ready[wait[w]] <= t) {
                k[wait[w]].start = t; /* the lane may have held it back */
                run[nrun++] = wait[w];
                wait[w] = wait[--nwait];
            } else {
                w++;
            }
        arrive = INFINITY;
        for (uint32_t w = 0; w < nwait; w++)
            arrive = fmin(arrive, ready[wait[w]]);
        double least = INFINITY;
        for (uint32_t r = 0; r < nrun; r++)
            least = fmin(least, left[run[r]]);
        double done = t + least * nrun; /* the first to finish */
        double until = fmin(done, arrive);
        double got = (until - t) / nrun;
        t = until;
        for (uint32_t r = 0; r < nrun;) {
            uint32_t x = run[r];
            left[x] -= got;
            if (left[x] > 1e-6 * (k[x].work + 1)) {
                r++;
                continue;
            }
            k[x].end = t;
            run[r] = run[--nrun];
            if (after[x] != UINT32_MAX) {
                ready[after[x]] = fmax(k[after[x]].start, t);
                wait[nwait++] = after[x];
            }
        }
    }
out:
    free(order);
    free(after);
    free(run);
    free(wait);
    free(left);
    free(ready);
    return st;
}

/* ---- waiting for the device -------------------------------------------- */
/* One device's activities by end. */
static int by_end(const void *x, const void *y, void *arg)
{
    const cp_graph *g = ((const sorting *)arg)->g;
    const cp_act *a = &g->act[*(const uint32_t *)x];
    const cp_act *b = &g->act[*(const uint32_t *)y];
    return (a->end > b->end) - (a->end < b->end);
}

/* In [lo, hi) of `ends` (one device's work by end): the work on another
 * lane than a's that was running when a started, or had ended within
 * QUEUED before, whose end is nearest a's start; CP_NONE when none. */
static uint32_t held_by(const cp_graph *g, const uint32_t *ends, uint32_t lo,
                        uint32_t hi, uint32_t a)
{
    const cp_act *x = &g->act[a];
    uint32_t l = lo, h = hi; /* the first ending after x's start - QUEUED */
    uint64_t from = x->start > QUEUED ? x->start - QUEUED : 0;
    while (l < h) {
        uint32_t m = l + (h - l) / 2;
        if (g->act[ends[m]].end < from)
            l = m + 1;
        else
            h = m;
    }
    uint32_t best = CP_NONE;
    uint64_t far = UINT64_MAX;
    for (uint32_t i = l; i < hi; i++) {
        const cp_act *y = &g->act[ends[i]];
        uint64_t d = y->end > x->start ? y->end - x->start
                                       : x->start - y->end;
        if (y->end > x->start && d > far)
            break; /* by end: the rest are further */
        if (y->lane != x->lane && y->start < x->start && d < far)
            best = ends[i], far = d;
    }
    return best;
}

/* Whether work a started later than what it needed of its own: its
 * launch call and the work before it on its lane ended over QUEUED / 10
 * before it started. */
static bool late(const cp_graph *g, uint32_t a)
{
    const cp_act *x = &g->act[a];
    uint64_t need = g->act[x->call].end;
    if (a > g->lane[x->lane].first && g->act[a - 1].end > need)
        need = g->act[a - 1].end;
    return x->start > need + QUEUED / 10;
}

gpuprof_status cp_device_edges(cp_graph *g)
{
    uint32_t n = 0;
    for (uint32_t a = 0; a < g->nact; a++)
        n += g->act[a].kind == CP_GPU;
    if (!n)
        return GPUPROF_OK;
    uint32_t *ends = malloc(n * sizeof(*ends));
    if (!ends)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    n = 0;
    for (uint32_t a = 0; a < g->nact; a++)
        if (g->act[a].kind == CP_GPU)
            ends[n++] = a;
    sorting o = {g, NULL};
    qsort_r(ends, n, sizeof(*ends), by_key, &o);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t lo = 0, hi; lo < n; lo = hi) { /* per device, by end */
        for (hi = lo + 1; hi < n && key_of(g, ends[hi]) == key_of(g, ends[lo]);)
            hi++;
        qsort_r(ends + lo, hi - lo, sizeof(*ends), by_end, &o);
        for (uint32_t i = lo; i < hi && st == GPUPROF_OK; i++) {
            uint32_t a = ends[i], c = g->act[a].call;
            if (c == CP_NONE || g->act[c].start >= g->act[a].start ||
                !late(g, a))
                continue;
            uint32_t h = held_by(g, ends, lo, hi, a);
            /* launched before what held it ended: it waited */
            if (h != CP_NONE && g->act[c].end <= g->act[h].end)
                st = cp_edge_add(g, 2 * h + 1, 2 * a, CP_E_DEVICE);
        }
    }
    free(ends);
    return st;
}

/* ---- the model ---------------------------------------------------------- */
/* The kernels of device group [lo, hi) of `idx` (activity indices). */
typedef struct group {
    uint32_t lo, hi;
    cp_devmodel m;
} group;

/* Decides a group's model; fills k[lo..hi) with its measured kernels
 * and the work each got of the device. */
static gpuprof_status decide(const cp_graph *g, const uint8_t *kind,
                             const uint32_t *idx, group *gr, kern *k,
                             int mode)
{
    uint32_t full = 0, room = 0;
    for (uint32_t i = gr->lo; i < gr->hi; i++) {
        const cp_act *a = &g->act[idx[i]];
        k[i] = (kern){idx[i], a->context, (double)a->start, (double)a->end,
                      0, 0};
        full += kind[idx[i]] == CP_K_FILLS;
        room += kind[idx[i]] == CP_K_ROOM;
    }
    uint32_t n = gr->hi - gr->lo;
    gpuprof_status st = measure(k + gr->lo, n);
    if (st != GPUPROF_OK)
        return st;
    gr->m.kernels = n;
    gr->m.slowdown = slowdown(k + gr->lo, n, &gr->m.evidence);
    gr->m.forced = mode != CP_DEV_AUTO;
    gr->m.filled = full && !room;
    if (mode != CP_DEV_AUTO)
        gr->m.shared = mode == CP_DEV_SHARED;
    else if (gr->m.evidence)
        gr->m.shared = gr->m.slowdown >= SLOWED;
    else
        gr->m.shared = gr->m.filled;
    return GPUPROF_OK;
}

/* One round: from the replay's times, the durations sharing gives the
 * shared groups' kernels, as scale factors of their measured ones; the
 * largest change of a duration (ns). */
static gpuprof_status round_of(const cp_graph *g, const cp_times *tm,
                               const group *gr, uint32_t ng, kern *k,
                               uint32_t round, double *scale, double *moved)
{
    *moved = 0;
    for (uint32_t j = 0; j < ng; j++) {
        if (!gr[j].m.shared)
            continue;
        for (uint32_t i = gr[j].lo; i < gr[j].hi; i++)
            k[i].start = (double)tm->t[2 * (uint64_t)k[i].act];
        gpuprof_status st = share(g, k + gr[j].lo, gr[j].hi - gr[j].lo);
        if (st != GPUPROF_OK)
            return st;
        for (uint32_t i = gr[j].lo; i < gr[j].hi; i++) {
            const cp_act *a = &g->act[k[i].act];
            double measured = (double)(a->end - a->start);
            double was = (double)(tm->t[2 * (uint64_t)k[i].act + 1] -
                                  tm->t[2 * (uint64_t)k[i].act]);
            double now = k[i].end - k[i].start;
            if (measured > 0) /* damped after two rounds: the replay
                               * and sharing can push each other to and fro */
                scale[k[i].act] = round < 2 ? now / measured
                                            : (scale[k[i].act] +
                                               now / measured) / 2;
            *moved = fmax(*moved, fabs(now - was));
        }
    }
    return GPUPROF_OK;
}

gpuprof_status cp_device_project(const cp_graph *g, const uint8_t *kind,
                                 int mode, double *scale, cp_devmodel **out,
                                 uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    uint32_t n = 0;
    for (uint32_t a = 0; a < g->nact; a++)
        n += kind[a] != CP_K_NONE;
    if (!n)
        return GPUPROF_OK;
    uint32_t *idx = malloc(n * sizeof(*idx));
    kern *k = malloc(n * sizeof(*k));
    group *gr = malloc(n * sizeof(*gr));
    double *rule = malloc((g->nact ? g->nact : 1) * sizeof(*rule));
    gpuprof_status st = GPUPROF_OK;
    if (!idx || !k || !gr || !rule)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint32_t ng = 0;
    if (st == GPUPROF_OK) {
        n = 0;
        for (uint32_t a = 0; a < g->nact; a++)
            if (kind[a] != CP_K_NONE)
                idx[n++] = a;
        sorting o = {g, NULL};
        qsort_r(idx, n, sizeof(*idx), by_key, &o);
        for (uint32_t i = 0; i < n; i++)
            if (!i || key_of(g, idx[i]) != key_of(g, idx[i - 1])) {
                if (ng)
                    gr[ng - 1].hi = i;
                gr[ng] = (group){i, n, {0}};
                gr[ng].m.process = (uint32_t)(key_of(g, idx[i]) >> 32);
                gr[ng].m.device = (uint32_t)key_of(g, idx[i]);
                ng++;
            }
        memcpy(rule, scale, g->nact * sizeof(*rule));
    }
    bool any = false;
    for (uint32_t j = 0; j < ng && st == GPUPROF_OK; j++) {
        st = decide(g, kind, idx, &gr[j], k, mode);
        any |= gr[j].m.shared;
        /* its work under the rules: a kernel made F times faster has
         * 1/F of its work */
        for (uint32_t i = gr[j].lo; st == GPUPROF_OK && i < gr[j].hi; i++)
            k[i].work *= rule[k[i].act];
    }
    for (uint32_t r = 0; any && st == GPUPROF_OK && r < ROUNDS; r++) {
        cp_times tm;
        double moved;
        st = cp_replay(g, scale, &tm);
        if (st != GPUPROF_OK)
            break;
        st = round_of(g, &tm, gr, ng, k, r, scale, &moved);
        cp_times_free(&tm);
        for (uint32_t j = 0; j < ng; j++)
            gr[j].m.rounds = gr[j].m.shared ? r + 1 : 0;
        if (moved < SETTLED)
            break;
    }
    cp_devmodel *m = st == GPUPROF_OK ? malloc((ng ? ng : 1) * sizeof(*m))
                                      : NULL;
    if (st == GPUPROF_OK && !m)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t j = 0; m && j < ng; j++)
        m[j] = gr[j].m;
    if (m) {
        *out = m;
        *nout = ng;
    }
    free(idx);
    free(k);
    free(gr);
    free(rule);
    return st;
}
