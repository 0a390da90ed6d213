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
 * call; a thread's creation: of the creating call), so the steps add up to
 * the path's length exactly, and a wait (the
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
           kind == CP_E_COLL || kind == CP_E_HOST;
}

/* Node v's inputs: first the edge from node v - 1 that the graph does not
 * store (an activity's own edge into its end; program order into a start,
 * unless the activity is the first of its lane), then its edges in the
 * index. */
typedef struct ins {
    uint64_t v;
    uint32_t imp, n; /* the implicit edge (0 or 1), all inputs */
    const cp_edge *e;
} ins;

typedef struct input {
    uint64_t src;
    uint8_t kind;
} input;

static ins ins_of(const cp_graph *g, uint64_t v)
{
    uint64_t a = v / 2;
    uint32_t imp = v % 2 || (v && g->act[a - 1].lane == g->act[a].lane);
    uint32_t lo = g->in[a], hi = g->in[a + 1], mid = lo;
    while (mid < hi && g->edge[mid].dst == 2 * a) /* into its start first */
        mid++;
    if (v % 2)
        lo = mid;
    else
        hi = mid;
    return (ins){v, imp, imp + hi - lo, &g->edge[lo]};
}

static input ins_at(const ins *x, uint32_t k)
{
    if (k < x->imp)
        return (input){x->v - 1, x->v % 2 ? CP_E_OWN : CP_E_ORDER};
    const cp_edge *e = &x->e[k - x->imp];
    return (input){e->src, e->kind};
}

/* What the measured weights of the inputs of node v depend on: at a
 * start, the first input from the latest source (`ref` its time); at an
 * end, the latest source of a wait (`ref`, INT64_MIN none). */
typedef struct refs {
    int64_t tv, ws, ref;
    uint32_t best;
} refs;

static refs refs_of(const cp_graph *g, const ins *x)
{
    uint64_t v = x->v;
    refs r = {t0(g, v), v % 2 ? t0(g, v - 1) : 0, INT64_MIN, UINT32_MAX};
    for (uint32_t k = 0; k < x->n; k++) {
        input in = ins_at(x, k);
        int64_t s = t0(g, in.src);
        if (v % 2 ? waits(in.kind) && s > r.ref : s > r.ref)
            r.ref = s, r.best = k;
    }
    return r;
}

/* Input k of node v as measured: into a start, the binding input's gap
 * and a poll's, 0 for the others; into an end, every wait and the own edge
 * weigh the post after the latest of the waits' sources and its start (so
 * the latest binds and, replayed, each input moves the end only when it is
 * the latest: a wait for several streams, ranks or members), 0 for
 * others. */
static int64_t measured_w(const cp_graph *g, const refs *r, uint64_t v,
                          uint32_t k, input in)
{
    if (v % 2 == 0)
        return in.kind == CP_E_POLL || k == r->best ? r->tv - t0(g, in.src)
                                                    : 0;
    if (waits(in.kind) || in.kind == CP_E_OWN)
        return r->tv - (r->ref > r->ws ? r->ref : r->ws);
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
           : kind == CP_E_CREATE ? 4
           : kind == CP_E_DEVICE ? 3
           : kind == CP_E_ORDER  ? 2
                                 : 1;
}

/* The input of node x->v that gives its time (*bt), its inputs timed in t
 * (own edges' durations scaled by `scale`); UINT32_MAX when it has none. */
static uint32_t binding(const cp_graph *g, const double *scale,
                        const int64_t *t, const ins *x, int64_t *bt)
{
    if (!x->n)
        return UINT32_MAX;
    uint64_t v = x->v;
    refs r = refs_of(g, x);
    double f = scale && v % 2 ? scale[v / 2] : 1.0;
    uint32_t best = UINT32_MAX;
    uint8_t bk = 0;
    for (uint32_t k = 0; k < x->n; k++) {
        input in = ins_at(x, k);
        int64_t w = measured_w(g, &r, v, k, in);
        if (in.kind == CP_E_OWN && f != 1.0)
            w = (int64_t)((double)w * f + 0.5);
        int64_t tk = t[in.src] + w;
        if (best == UINT32_MAX || tk > *bt ||
            (tk == *bt && rank(v, in.kind) > rank(v, bk)))
            *bt = tk, best = k, bk = in.kind;
    }
    return best;
}

/* Depth-first visit state: two bits per node. */
#define SEEN(m, v) ((m)[(v) / 32] >> ((v) % 32 * 2) & 1u)
#define DONE(m, v) ((m)[(v) / 32] >> ((v) % 32 * 2 + 1) & 1u)
#define MARK(m, v, b) ((m)[(v) / 32] |= (uint64_t)(b) << ((v) % 32 * 2))

typedef struct frame {
    ins x;
    uint32_t next; /* its next input to visit */
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
    d->f[d->n++] = (frame){ins_of(g, v), 0};
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
        if (f->next == f->x.n) {
            int64_t bt = 0;
            uint64_t v = f->x.v;
            tm->t[v] = binding(g, scale, tm->t, &f->x, &bt) == UINT32_MAX
                           ? t0(g, v)
                           : bt;
            MARK(d->mark, v, 2u);
            d->n--;
            continue;
        }
        uint64_t u = ins_at(&f->x, f->next++).src;
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
    dfs d = {.mark = calloc(nn / 32 + 1, sizeof(uint64_t))};
    gpuprof_status st = GPUPROF_OK;
    if (!tm->t || !d.mark)
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

gpuprof_status cp_path(const cp_graph *g, const cp_times *tm,
                       const double *scale, cp_step **out, uint64_t *n,
                       void (*spent)(void *arg, uint32_t act, int64_t ns),
                       void *arg)
{
    *out = NULL;
    *n = 0;
    uint64_t cap = 0;
    if (!g->nact)
        return GPUPROF_OK;
    uint64_t v = tm->last;
    for (;;) {
        ins x = ins_of(g, v);
        int64_t bt = 0;
        uint32_t k = binding(g, scale, tm->t, &x, &bt);
        if (k == UINT32_MAX)
            break;
        input e = ins_at(&x, k);
        int64_t d = tm->t[v] - tm->t[e.src];
        /* An edge is its destination's time, but a launch's latency is
         * the launching call's (the call ran until the work started), a
         * new thread's the creating call's. */
        uint32_t a = (uint32_t)((e.kind == CP_E_LAUNCH ||
                                         e.kind == CP_E_CREATE
                                     ? e.src
                                     : v) /
                                2);
        if (spent)
            spent(arg, a, d);
        if ((d > 0 || (*n && (*out)[*n - 1].act == a)) &&
            !push(out, n, &cap, (cp_step){a, tm->t[e.src], tm->t[v]}))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        v = e.src;
    }
    for (uint64_t i = 0; i < *n / 2; i++) { /* into time order */
        cp_step t = (*out)[i];
        (*out)[i] = (*out)[*n - 1 - i];
        (*out)[*n - 1 - i] = t;
    }
    return GPUPROF_OK;
}
