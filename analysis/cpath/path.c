/*
 * path.c - node times and the critical path (cpath.h; seed 004 §4, §5).
 *
 * Weights come from the measured times, worked out where the replay needs
 * them (measured_w) rather than stored per edge. An activity's own edge is
 * its duration; a blocking wait or ready query (a receive, a collective)
 * ends `post` after what it waited for, where post is what it ran after
 * the latest of that and its own start: end = max(start, each target) +
 * post. Into a start node, the edge that bound it (the latest source)
 * keeps its measured gap (a launch latency), the others weigh 0: if the
 * binding source moves, the node follows the next one at once. Polling
 * keeps its gap (the host polled until then). Replaying with these weights
 * gives every node its measured time back; replaying with some own edges
 * scaled is the projection.
 *
 * The replay visits the nodes depth first along their input edges (the
 * graph's index holds those; no copy of the edges by source), timing a
 * node once all its inputs are timed; an input met again while its own
 * inputs are still being visited is a cycle.
 *
 * The critical path is walked back from the node that ends last along
 * each node's binding edge (the one that gives its time; on a tie an
 * activity's own edge into its end, and at a start a dependency on
 * another lane before program order before a launch). Every edge's weight
 * is time of its destination's activity (a launch's: of the launching
 * call), so the steps add up to the path's length exactly, and a wait (the
 * part of a blocking call before what it waited for ended) is never on it.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

static int64_t t0(const cp_graph *g, uint64_t v)
{
    const cp_act *a = &g->act[v / 2];
    return (int64_t)(v % 2 ? a->end : a->start);
}

static bool waits(uint8_t kind)
{
    return kind == CP_E_SYNC || kind == CP_E_QUERY || kind == CP_E_MSG ||
           kind == CP_E_COLL;
}

/* What the measured weights of the edges into node v depend on: at a
 * start, the first edge from the latest source (`ref` its time); at an
 * end, the latest source of a wait (`ref`, INT64_MIN none). */
typedef struct inputs {
    int64_t tv, ws, ref;
    uint64_t best;
} inputs;

static inputs inputs_of(const cp_graph *g, uint64_t v)
{
    inputs x = {t0(g, v), v % 2 ? t0(g, v - 1) : 0, INT64_MIN, UINT64_MAX};
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++) {
        const cp_edge *e = &g->edge[i];
        int64_t s = t0(g, e->src);
        if (v % 2 ? waits(e->kind) && s > x.ref : s > x.ref)
            x.ref = s, x.best = i;
    }
    return x;
}

/* Edge i into node v as measured: into a start, the binding edge's gap
 * and a poll's, 0 for the others; into an end, every wait and the own edge
 * weigh the post after the latest of the waits' sources and its start (so
 * the latest binds and, replayed, each input moves the end only when it is
 * the latest: a wait for several streams, ranks or members), 0 for
 * others. */
static int64_t measured_w(const cp_graph *g, const inputs *x, uint64_t v,
                          uint64_t i)
{
    const cp_edge *e = &g->edge[i];
    if (v % 2 == 0)
        return e->kind == CP_E_POLL || i == x->best ? x->tv - t0(g, e->src)
                                                    : 0;
    if (waits(e->kind) || e->kind == CP_E_OWN)
        return x->tv - (x->ref > x->ws ? x->ref : x->ws);
    return 0;
}

/* Which edge wins a tie into node v. */
static int rank(uint64_t v, uint8_t kind)
{
    if (v % 2)
        return kind == CP_E_OWN ? 2 : 1;
    return kind == CP_E_POLL     ? 5
           : kind == CP_E_STREAM ? 4
           : kind == CP_E_NULL   ? 4
           : kind == CP_E_ORDER  ? 2
                                 : 1;
}

/* Node v's time from its inputs (all already timed). */
static void settle(const cp_graph *g, const double *scale, cp_times *tm,
                   uint64_t v)
{
    if (g->in[v] == g->in[v + 1]) {
        tm->t[v] = t0(g, v);
        tm->bind[v] = UINT32_MAX;
        return;
    }
    inputs x = inputs_of(g, v);
    double f = scale && v % 2 ? scale[v / 2] : 1.0;
    uint64_t best = UINT64_MAX;
    int64_t bt = 0;
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++) {
        const cp_edge *e = &g->edge[i];
        int64_t w = measured_w(g, &x, v, i);
        if (e->kind == CP_E_OWN && f != 1.0)
            w = (int64_t)((double)w * f + 0.5);
        int64_t t = tm->t[e->src] + w;
        if (best == UINT64_MAX || t > bt ||
            (t == bt && rank(v, e->kind) > rank(v, g->edge[best].kind)))
            bt = t, best = i;
    }
    tm->t[v] = bt;
    tm->bind[v] = (uint32_t)best;
}

/* Depth-first visit state: two bits per node. */
#define SEEN(m, v) ((m)[(v) / 32] >> ((v) % 32 * 2) & 1u)
#define DONE(m, v) ((m)[(v) / 32] >> ((v) % 32 * 2 + 1) & 1u)
#define MARK(m, v, b) ((m)[(v) / 32] |= (uint64_t)(b) << ((v) % 32 * 2))

typedef struct frame {
    uint32_t v, next; /* the node, its next input edge to visit */
} frame;

typedef struct dfs {
    frame *f;
    uint64_t n, cap;
    uint64_t *mark;
} dfs;

static bool dfs_push(dfs *d, const cp_graph *g, uint64_t v)
{
    if (d->n == d->cap) {
        uint64_t cap = d->cap ? 2 * d->cap : 1024;
        frame *f = realloc(d->f, cap * sizeof(*f));
        if (!f)
            return false;
        d->f = f;
        d->cap = cap;
    }
    d->f[d->n++] = (frame){(uint32_t)v, g->in[v]};
    MARK(d->mark, v, 1u);
    return true;
}

/* Times every node that root depends on, and root; GPUPROF_E_CORRUPT on a
 * cycle. */
static gpuprof_status visit(const cp_graph *g, const double *scale,
                            cp_times *tm, dfs *d, uint64_t root)
{
    if (!dfs_push(d, g, root))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    while (d->n) {
        frame *f = &d->f[d->n - 1];
        if (f->next == g->in[f->v + 1]) {
            settle(g, scale, tm, f->v);
            MARK(d->mark, f->v, 2u);
            d->n--;
            continue;
        }
        uint64_t u = g->edge[f->next++].src;
        if (!SEEN(d->mark, u)) {
            if (!dfs_push(d, g, u))
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        } else if (!DONE(d->mark, u)) {
            return gpuprof__an_fail(
                GPUPROF_E_CORRUPT,
                "trace.db: process %u%s: the trace's dependencies form a "
                "cycle (damaged trace); no critical path",
                g->process,
                g->nranks > 1 ? " and the ranks joined to it" : "");
        }
    }
    return GPUPROF_OK;
}

gpuprof_status cp_replay(const cp_graph *g, const double *scale, cp_times *tm)
{
    uint64_t nn = 2 * (uint64_t)g->nact;
    memset(tm, 0, sizeof(*tm));
    tm->t = malloc((nn ? nn : 1) * sizeof(*tm->t));
    tm->bind = malloc((nn ? nn : 1) * sizeof(*tm->bind));
    dfs d = {.mark = calloc(nn / 32 + 1, sizeof(uint64_t))};
    gpuprof_status st = GPUPROF_OK;
    if (!tm->t || !tm->bind || !d.mark)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint64_t v = 0; v < nn && st == GPUPROF_OK; v++)
        if (!SEEN(d.mark, v))
            st = visit(g, scale, tm, &d, v);
    free(d.f);
    free(d.mark);
    if (st != GPUPROF_OK) {
        cp_times_free(tm);
        return st;
    }
    tm->last = 0;
    for (uint64_t v = 1; v < nn; v++)
        if (tm->t[v] > tm->t[tm->last] ||
            (tm->t[v] == tm->t[tm->last] && v % 2 && !(tm->last % 2)))
            tm->last = v;
    return GPUPROF_OK;
}

void cp_times_free(cp_times *tm)
{
    free(tm->t);
    free(tm->bind);
    memset(tm, 0, sizeof(*tm));
}

static bool push(cp_step **s, uint64_t *n, uint64_t *cap, cp_step x)
{
    if (*n && (*s)[*n - 1].act == x.act) { /* the same activity: extend */
        (*s)[*n - 1].from = x.from;
        return true;
    }
    if (*n == *cap) {
        uint64_t c = *cap ? *cap * 2 : 64;
        cp_step *g = realloc(*s, c * sizeof(**s));
        if (!g)
            return false;
        *s = g;
        *cap = c;
    }
    (*s)[(*n)++] = x;
    return true;
}

gpuprof_status cp_path(const cp_graph *g, const cp_times *tm, cp_step **out,
                       uint64_t *n, int64_t *on_path)
{
    *out = NULL;
    *n = 0;
    uint64_t cap = 0;
    if (!g->nact)
        return GPUPROF_OK;
    uint64_t v = tm->last;
    while (tm->bind[v] != UINT32_MAX) {
        const cp_edge *e = &g->edge[tm->bind[v]];
        int64_t d = tm->t[v] - tm->t[e->src];
        /* An edge is its destination's time, but a launch's latency is
         * the launching call's (the call ran until the work started). */
        uint32_t a = (uint32_t)((e->kind == CP_E_LAUNCH ? e->src : v) / 2);
        if (on_path)
            on_path[a] += d;
        if ((d > 0 || (*n && (*out)[*n - 1].act == a)) &&
            !push(out, n, &cap, (cp_step){a, tm->t[e->src], tm->t[v]}))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        v = e->src;
    }
    for (uint64_t i = 0; i < *n / 2; i++) { /* into time order */
        cp_step t = (*out)[i];
        (*out)[i] = (*out)[*n - 1 - i];
        (*out)[*n - 1 - i] = t;
    }
    return GPUPROF_OK;
}
