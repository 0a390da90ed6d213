/*
 * path.c - node times and the critical path (cpath.h; seed 004 §4, §5).
 *
 * Weights come from the measured times. An activity's own edge is its
 * duration; a blocking wait or ready query (a receive, a collective) ends
 * `post` after what it waited for, where post is what it ran after the
 * latest of that and its own start: end = max(start, each target) + post.
 * Into a start node, the edge that bound it (the latest source) keeps its
 * measured gap (a launch latency), the others weigh 0: if the binding
 * source moves, the node follows the next one at once. Polling keeps its
 * gap (the host polled until then). Replaying with these weights gives
 * every node its measured time back; replaying with some own edges
 * scaled is the projection.
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

/* A blocking call's end: it ran `post` after the latest of what it waited
 * for and its own start; every input edge weighs that post, so the latest
 * binds and, replayed, each input moves the end only when it is the
 * latest (a wait for several streams, ranks or members). */
static void end_weights(cp_graph *g, uint64_t v)
{
    int64_t we = t0(g, v), ws = t0(g, v - 1), tk = INT64_MIN;
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++)
        if (waits(g->edge[i].kind)) {
            int64_t s = t0(g, g->edge[i].src);
            tk = s > tk ? s : tk;
        }
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++)
        if (waits(g->edge[i].kind) || g->edge[i].kind == CP_E_OWN)
            g->edge[i].w = we - (tk > ws ? tk : ws);
}

static void start_weights(cp_graph *g, uint64_t v)
{
    uint64_t best = UINT64_MAX;
    int64_t bt = INT64_MIN, tv = t0(g, v);
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++) {
        cp_edge *e = &g->edge[i];
        int64_t s = t0(g, e->src);
        e->w = e->kind == CP_E_POLL ? tv - s : 0;
        if (s > bt)
            bt = s, best = i;
    }
    if (best != UINT64_MAX && g->edge[best].kind != CP_E_POLL)
        g->edge[best].w = tv - bt;
}

void cp_weights(cp_graph *g)
{
    uint64_t nn = 2 * (uint64_t)g->nact;
    for (uint64_t v = 0; v < nn; v++) {
        if (v % 2 == 0) {
            start_weights(g, v);
            continue;
        }
        bool w = false;
        for (uint64_t i = g->in[v]; i < g->in[v + 1] && !w; i++)
            w = waits(g->edge[i].kind);
        if (w) {
            end_weights(g, v);
            continue;
        }
        for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++)
            if (g->edge[i].kind == CP_E_OWN)
                g->edge[i].w = t0(g, v) - t0(g, v - 1);
    }
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

static int64_t weight(const cp_graph *g, const cp_edge *e, const double *scale)
{
    if (e->kind != CP_E_OWN || !scale || scale[e->dst / 2] == 1.0)
        return e->w;
    return (int64_t)((double)e->w * scale[e->dst / 2] + 0.5);
}

/* Node v's time from its inputs (all already timed). */
static void settle(const cp_graph *g, const double *scale, cp_times *tm,
                   uint64_t v)
{
    uint64_t best = UINT64_MAX;
    int64_t bt = 0;
    for (uint64_t i = g->in[v]; i < g->in[v + 1]; i++) {
        const cp_edge *e = &g->edge[i];
        int64_t t = tm->t[e->src] + weight(g, e, scale);
        if (best == UINT64_MAX || t > bt ||
            (t == bt && rank(v, e->kind) > rank(v, g->edge[best].kind)))
            bt = t, best = i;
    }
    tm->t[v] = best == UINT64_MAX ? t0(g, v) : bt;
    tm->bind[v] = best == UINT64_MAX ? UINT32_MAX : (uint32_t)best;
}

gpuprof_status cp_replay(const cp_graph *g, const double *scale, cp_times *tm)
{
    uint64_t nn = 2 * (uint64_t)g->nact;
    memset(tm, 0, sizeof(*tm));
    tm->t = malloc((nn ? nn : 1) * sizeof(*tm->t));
    tm->bind = malloc((nn ? nn : 1) * sizeof(*tm->bind));
    tm->order = malloc((nn ? nn : 1) * sizeof(*tm->order));
    uint32_t *out = calloc(nn + 1, sizeof(*out)); /* edges < 4G: graph.c */
    uint32_t *deg = malloc((nn ? nn : 1) * sizeof(*deg));
    uint32_t *oe = malloc((g->nedge ? g->nedge : 1) * sizeof(*oe));
    gpuprof_status st = GPUPROF_OK;
    if (!tm->t || !tm->bind || !tm->order || !out || !deg || !oe) {
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        goto done;
    }
    for (uint64_t i = 0; i < g->nedge; i++)
        out[g->edge[i].src + 1]++;
    for (uint64_t v = 0; v < nn; v++) {
        out[v + 1] += out[v];
        deg[v] = (uint32_t)(g->in[v + 1] - g->in[v]);
    }
    uint32_t *at = malloc((nn ? nn : 1) * sizeof(*at)); /* fill positions */
    if (!at) {
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        goto done;
    }
    memcpy(at, out, nn * sizeof(*at));
    for (uint64_t i = 0; i < g->nedge; i++)
        oe[at[g->edge[i].src]++] = (uint32_t)i;
    free(at);
    uint64_t head = 0, tail = 0;
    for (uint64_t v = 0; v < nn; v++)
        if (!deg[v])
            tm->order[tail++] = (uint32_t)v;
    while (head < tail) {
        uint64_t v = tm->order[head++];
        settle(g, scale, tm, v);
        for (uint64_t k = out[v]; k < out[v + 1]; k++)
            if (--deg[g->edge[oe[k]].dst] == 0)
                tm->order[tail++] = g->edge[oe[k]].dst;
    }
    if (tail < nn) {
        st = gpuprof__an_fail(GPUPROF_E_CORRUPT,
                              "trace.db: process %u%s: the trace's dependencies "
                              "form a cycle (damaged trace); no critical path",
                              g->process,
                              g->nranks > 1 ? " and the ranks joined to it"
                                            : "");
        goto done;
    }
    tm->last = 0;
    for (uint64_t v = 1; v < nn; v++)
        if (tm->t[v] > tm->t[tm->last] ||
            (tm->t[v] == tm->t[tm->last] && v % 2 && !(tm->last % 2)))
            tm->last = v;
done:
    free(out);
    free(deg);
    free(oe);
    if (st != GPUPROF_OK)
        cp_times_free(tm);
    return st;
}

void cp_times_free(cp_times *tm)
{
    free(tm->t);
    free(tm->bind);
    free(tm->order);
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
