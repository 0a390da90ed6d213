/*
 * api.c - the public face of the trace analysis (gpuprof_analysis.h,
 * gpuprof_an_cpath_*): per process a graph (graph.c) with its wait states
 * (waits.c) and GPU idleness blame (idle.c), shared by the measured
 * analysis and its projections, each of which has its own node times and
 * critical path (path.c); the metrics they add to a database (table.c) and
 * the reports of `gpuprof report --waits / --critical-path` and `gpuprof
 * project`. The processes of an MPI run (their traces hold MPI calls) are
 * one entry: their graphs joined (ranks.c), its path crossing ranks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "../db/an_samples.h"
#include "cpath.h"
#include "table.h"

/* Metric cells (table.h); for integer values (ns on the path) summed by
 * (profile, context) as they come (the sums are exact in any order, so
 * the table's are the same), without a cell per activity. Fractional ones
 * (idleness blame) stay a cell per activity: the table's sums depend on
 * their order. */
typedef struct cells {
    gpuprof__an_cell *c;
    uint64_t n, cap;
    uint32_t *slot; /* keyed: per slot its cell + 1, 0 empty */
    uint64_t mask;
} cells;

typedef struct shared {
    cp_graph g;
    cp_wait *w;
    uint64_t nw;
    double *idle; /* per activity, until its cells are made */
    cells idle_cells; /* a cell per activity with idleness blame */
    int refs;
    cp_mpi_left left; /* an MPI run's records left out */
} shared;

/* Every profile's samples of one metric (cpu.time, else cpu.wall), read
 * once when the analysis is made (an_samples.h), each context made its
 * procedure (procedure_of), sorted by (profile, time): a step's samples
 * are a binary search away, so naming a path of S steps over N samples
 * costs O(S log N + N), not a pass over every trace stream per step. */
typedef struct samples {
    gpuprof__an_sample *v; /* context: its procedure */
    uint32_t n;
    uint32_t *first; /* per profile: its first sample; [nprof] = n */
    uint32_t nprof;
} samples;

typedef struct proc {
    shared *s;
    cp_times tm;
    cp_step *path;
    uint64_t npath;
    cells path_cells; /* each activity's time on the path, summed */
    cp_devmodel *dev; /* a projection's device models */
    uint32_t ndev;
} proc;

struct gpuprof_an_cpath {
    const gpuprof_an_db *db;
    uint32_t n;
    proc *p;
    uint32_t *kern; /* per context: its one kernel child, CP_NONE, or
                       UINT32_MAX - 1 for several */
    samples *smp;   /* the CPU samples; NULL in a projection */
    bool projected;
};

#define SEVERAL (UINT32_MAX - 1)

static gpuprof_status samples_load(gpuprof_an_cpath *cp);

static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

static void shared_drop(shared *s)
{
    if (s && --s->refs == 0) {
        cp_graph_free(&s->g);
        free(s->w);
        free(s->idle);
        free(s->idle_cells.c);
        free(s->idle_cells.slot);
        free(s);
    }
}

static void samples_drop(samples *m)
{
    if (m) {
        free(m->v);
        free(m->first);
        free(m);
    }
}

GPUPROF_AN_API void gpuprof_an_cpath_free(gpuprof_an_cpath *cp)
{
    if (!cp)
        return;
    for (uint32_t i = 0; i < cp->n; i++) {
        shared_drop(cp->p[i].s);
        cp_times_free(&cp->p[i].tm);
        free(cp->p[i].path);
        free(cp->p[i].path_cells.c);
        free(cp->p[i].path_cells.slot);
        free(cp->p[i].dev);
    }
    free(cp->p);
    free(cp->kern);
    samples_drop(cp->smp);
    free(cp);
}

static bool cell_add(cells *v, uint32_t profile, uint32_t context,
                     double value)
{
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? v->cap * 2 : 256;
        gpuprof__an_cell *n = realloc(v->c, cap * sizeof(*n));
        if (!n)
            return false;
        v->c = n;
        v->cap = cap;
    }
    v->c[v->n++] = (gpuprof__an_cell){profile, context, value};
    return true;
}

static uint64_t key_slot(const cells *v, uint32_t profile, uint32_t context)
{
    uint64_t h = ((uint64_t)profile << 32 | context) * 0x9E3779B97F4A7C15ull;
    for (h >>= 20;; h++) {
        uint32_t i = v->slot[h & v->mask];
        if (!i || (v->c[i - 1].profile == profile &&
                   v->c[i - 1].context == context))
            return h & v->mask;
    }
}

static bool rekey(cells *v)
{
    uint64_t size = v->mask ? 2 * (v->mask + 1) : 256;
    free(v->slot);
    v->slot = calloc(size, sizeof(*v->slot));
    v->mask = size - 1;
    for (uint64_t i = 0; v->slot && i < v->n; i++)
        v->slot[key_slot(v, v->c[i].profile, v->c[i].context)] =
            (uint32_t)i + 1;
    return v->slot != NULL;
}

/* Adds value to the cell of (profile, context); zeros make no cell. */
static bool keyed_add(cells *v, uint32_t profile, uint32_t context,
                      double value)
{
    if (value == 0)
        return true;
    if (2 * (v->n + 1) > v->mask && !rekey(v))
        return false;
    uint64_t h = key_slot(v, profile, context);
    if (v->slot[h]) {
        v->c[v->slot[h] - 1].value += value;
        return true;
    }
    if (!cell_add(v, profile, context, value))
        return false;
    v->slot[h] = (uint32_t)v->n;
    return true;
}

/* Where an activity's metrics go: its thread's profile (device work: the
 * launching thread's, else its process's) and context. */
static uint32_t profile_of(const cp_graph *g, uint32_t a)
{
    uint32_t p = g->act[a].profile;
    return p == CP_NONE ? g->lane[g->act[a].lane].process : p;
}

/* Per-activity values into v: idle a cell each (but zeros), on_path
 * summed by key. */
static gpuprof_status sum_cells(const cp_graph *g, const double *idle,
                                const int64_t *on_path, cells *v)
{
    for (uint32_t a = 0; a < g->nact; a++)
        if (idle ? idle[a] != 0 && !cell_add(v, profile_of(g, a),
                                             g->act[a].context, idle[a])
                 : !keyed_add(v, profile_of(g, a), g->act[a].context,
                              (double)on_path[a]))
            return nomem();
    free(v->slot); /* summed: no more keys */
    v->slot = NULL;
    v->mask = 0;
    return GPUPROF_OK;
}

/* The walk's time per activity into cells by key, each activity's total
 * at once (a total of 0 makes no cell, as with an array per activity):
 * an activity's edges come one after another, so its total is known when
 * the next one's begin. One met again (`seen`) sends the walk round once
 * more into an array per activity. */
typedef struct walk {
    const cp_graph *g;
    cells *v;
    uint64_t *seen; /* a bit per activity: its total given */
    uint32_t act;
    int64_t sum;
    bool any, again, nomem;
} walk;

static void flush(walk *w)
{
    if (!w->any)
        return;
    w->any = false;
    if (w->seen[w->act / 64] >> (w->act % 64) & 1)
        w->again = true;
    w->seen[w->act / 64] |= 1ull << (w->act % 64);
    if (!keyed_add(w->v, profile_of(w->g, w->act), w->g->act[w->act].context,
                   (double)w->sum))
        w->nomem = true;
}

static void spent_run(void *arg, uint32_t act, int64_t ns)
{
    walk *w = arg;
    if (w->any && act != w->act)
        flush(w);
    if (!w->any) {
        w->act = act;
        w->sum = 0;
        w->any = true;
    }
    w->sum += ns;
}

static void spent_array(void *arg, uint32_t act, int64_t ns)
{
    ((int64_t *)arg)[act] += ns;
}

/* The walk again, its time per activity in an array first. */
static gpuprof_status walk_again(proc *p, const double *scale)
{
    const cp_graph *g = &p->s->g;
    free(p->path);
    free(p->path_cells.c);
    free(p->path_cells.slot);
    p->path = NULL;
    p->npath = 0;
    p->path_cells = (cells){0};
    int64_t *on_path = calloc(g->nact ? g->nact : 1, sizeof(*on_path));
    gpuprof_status st =
        on_path ? cp_path(g, &p->tm, scale, &p->path, &p->npath, spent_array,
                          on_path)
                : nomem();
    if (st == GPUPROF_OK)
        st = sum_cells(g, NULL, on_path, &p->path_cells);
    free(on_path);
    return st;
}

/* Times and the critical path of p (scale NULL: as measured). */
static gpuprof_status timed(proc *p, const double *scale)
{
    const cp_graph *g = &p->s->g;
    gpuprof_status st = cp_replay(g, scale, &p->tm);
    walk w = {g, &p->path_cells, calloc(g->nact / 64 + 1, sizeof(uint64_t)),
              0, 0, false, false, false};
    if (st == GPUPROF_OK && !w.seen)
        st = nomem();
    if (st == GPUPROF_OK)
        st = cp_path(g, &p->tm, scale, &p->path, &p->npath, spent_run, &w);
    if (st == GPUPROF_OK)
        flush(&w);
    free(w.seen);
    free(p->path_cells.slot); /* summed: no more keys */
    p->path_cells.slot = NULL;
    p->path_cells.mask = 0;
    if (st == GPUPROF_OK && w.nomem)
        st = nomem();
    return st == GPUPROF_OK && w.again ? walk_again(p, scale) : st;
}

/* A process's graph with its GPU wait states and idleness blame; without
 * `full`, its graph only. */
static gpuprof_status part_of(const gpuprof_an_db *db, uint32_t process,
                              cp_part *pt, bool full)
{
    memset(pt, 0, sizeof(*pt));
    gpuprof_status st = cp_graph_build(db, process, &pt->g);
    if (st != GPUPROF_OK || !full)
        return st;
    pt->idle = malloc((pt->g.nact ? pt->g.nact : 1) * sizeof(*pt->idle));
    st = pt->idle ? cp_idle(&pt->g, pt->idle) : nomem();
    if (st == GPUPROF_OK)
        st = cp_waits(&pt->g, &pt->w, &pt->nw);
    return st == GPUPROF_OK ? cp_host_wait_states(&pt->g, &pt->w, &pt->nw)
                            : st;
}

static void part_drop(cp_part *pt)
{
    cp_graph_free(&pt->g);
    free(pt->w);
    free(pt->idle);
}

/* An entry from a part (taken over), timed as measured; without `full`,
 * its critical path only (no MPI wait states). */
static gpuprof_status one(cp_part *pt, proc *p, bool full)
{
    shared *s = calloc(1, sizeof(*s));
    if (!s) {
        part_drop(pt);
        return nomem();
    }
    *s = (shared){pt->g, pt->w, pt->nw, pt->idle, {0}, 1, pt->left};
    p->s = s;
    gpuprof_status st = GPUPROF_OK;
    if (full && s->g.nranks)
        st = cp_mpi_waits(&s->g, &s->w, &s->nw);
    if (st == GPUPROF_OK && s->idle)
        st = sum_cells(&s->g, s->idle, NULL, &s->idle_cells);
    free(s->idle); /* what the replay does not need, before it */
    s->idle = NULL;
    cp_graph_drop_waits(&s->g);
    return st == GPUPROF_OK ? timed(p, NULL) : st;
}

/* The parts of processes with MPI calls joined into parts[first]; the
 * others move up after it. *n: parts left. */
static gpuprof_status join_ranks(const gpuprof_an_db *db, cp_part *parts,
                                 uint32_t *n)
{
    uint32_t k = 0, m = 0, first = UINT32_MAX;
    cp_part *mpi = malloc((*n ? *n : 1) * sizeof(*mpi));
    if (!mpi)
        return nomem();
    for (uint32_t i = 0; i < *n; i++) {
        if (cp_has_mpi(&parts[i].g)) {
            first = first == UINT32_MAX ? k++ : first;
            mpi[m++] = parts[i];
        } else {
            parts[k++] = parts[i];
        }
    }
    gpuprof_status st = GPUPROF_OK;
    if (m) {
        cp_part joined;
        st = cp_join(db, mpi, m, &joined);
        if (st == GPUPROF_OK) /* the first MPI process's place */
            parts[first] = joined;
        else /* its place is empty: close the gap */
            memmove(&parts[first], &parts[first + 1],
                    (size_t)(k - first - 1) * sizeof(*parts)), k--;
    }
    free(mpi);
    *n = k;
    return st;
}

static gpuprof_status kernels(gpuprof_an_cpath *cp)
{
    uint32_t nc = gpuprof_an_db_context_count(cp->db);
    cp->kern = malloc((nc ? nc : 1) * sizeof(*cp->kern));
    if (!cp->kern)
        return nomem();
    for (uint32_t c = 0; c < nc; c++)
        cp->kern[c] = CP_NONE;
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t p = gpuprof_an_db_context_parent(cp->db, c);
        if (gpuprof_an_db_context_kind(cp->db, c) != GPUPROF_AN_NODE_KERNEL ||
            p >= nc)
            continue;
        /* Kernels of one name (each thread's build of a program, say)
         * are one kernel to a reader; only different names are several. */
        if (cp->kern[p] == CP_NONE)
            cp->kern[p] = c;
        else if (cp->kern[p] != SEVERAL &&
                 strcmp(gpuprof_an_db_context_name(cp->db, cp->kern[p]),
                        gpuprof_an_db_context_name(cp->db, c)))
            cp->kern[p] = SEVERAL;
    }
    return GPUPROF_OK;
}

/* Without `full`: each process's graph and critical path only, ranks not
 * joined (what the OTF2 export marks: trace.db records are per process). */
static gpuprof_status cpath_new(const gpuprof_an_db *db, bool full,
                                gpuprof_an_progress_fn fn, void *user,
                                gpuprof_an_cpath **out)
{
    if (!db || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = NULL;
    if (!gpuprof_an_db_trace_stream_count(db))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "%s: no trace.db (measure with "
                                "GPUPROF_TRACE=1)",
                                gpuprof__an_db_dir(db));
    gpuprof_an_cpath *cp = calloc(1, sizeof(*cp));
    uint32_t np = gpuprof_an_db_profile_count(db);
    uint32_t *ids = malloc((np ? np : 1) * sizeof(*ids));
    if (!cp || !ids) {
        free(cp);
        free(ids);
        return nomem();
    }
    cp->db = db;
    uint32_t n = cp_processes(db, ids, np), built = 0;
    cp_part *parts = calloc(n ? n : 1, sizeof(*parts));
    cp->p = calloc(n ? n : 1, sizeof(*cp->p));
    gpuprof_status st = cp->p && parts ? kernels(cp) : nomem();
    if (st == GPUPROF_OK)
        st = samples_load(cp);
    for (uint32_t i = 0; i < n && st == GPUPROF_OK; i++) {
        if (fn)
            fn("cpath", i, n, user);
        st = part_of(db, ids[i], &parts[i], full);
        built = i + 1;
    }
    if (st == GPUPROF_OK && full)
        st = join_ranks(db, parts, &built);
    uint32_t used = 0;
    for (; used < built && st == GPUPROF_OK; used++) {
        cp->n = used + 1;
        st = one(&parts[used], &cp->p[used], full);
    }
    for (uint32_t i = used; i < built; i++)
        part_drop(&parts[i]);
    if (fn && st == GPUPROF_OK)
        fn("cpath", n, n, user);
    free(parts);
    free(ids);
    if (st != GPUPROF_OK) {
        gpuprof_an_cpath_free(cp);
        return st;
    }
    *out = cp;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_new(const gpuprof_an_db *db,
                                                   gpuprof_an_progress_fn fn,
                                                   void *user,
                                                   gpuprof_an_cpath **out)
{
    return cpath_new(db, true, fn, user, out);
}

gpuprof_status gpuprof__an_cpath_new_path(const gpuprof_an_db *db,
                                          gpuprof_an_cpath **out)
{
    return cpath_new(db, false, NULL, NULL, out);
}

const cp_graph *gpuprof__an_cpath_path(const gpuprof_an_cpath *cp, uint32_t i,
                                       const cp_step **steps, uint64_t *n)
{
    *steps = cp->p[i].path;
    *n = cp->p[i].npath;
    return &cp->p[i].s->g;
}

GPUPROF_AN_API uint32_t
gpuprof_an_cpath_process_count(const gpuprof_an_cpath *cp)
{
    return cp ? cp->n : 0;
}

GPUPROF_AN_API uint32_t gpuprof_an_cpath_process(const gpuprof_an_cpath *cp,
                                                 uint32_t i)
{
    return cp && i < cp->n ? cp->p[i].s->g.process : UINT32_MAX;
}

GPUPROF_AN_API uint32_t
gpuprof_an_cpath_rank_count(const gpuprof_an_cpath *cp, uint32_t i)
{
    return cp && i < cp->n ? cp->p[i].s->g.nranks : 0;
}

/* Appends ", N what" to buf (at *at) when n. */
static void reason(char *buf, size_t size, size_t *at, uint64_t n,
                   const char *what)
{
    if (!n || *at >= size)
        return;
    int k = snprintf(buf + *at, size - *at, "%s%" PRIu64 " %s",
                     *at ? "; " : "", n, what);
    *at += k > 0 ? (size_t)k : 0;
}

GPUPROF_AN_API uint64_t gpuprof_an_cpath_mpi_left_out(
    const gpuprof_an_cpath *cp, uint32_t i, char *why, size_t size)
{
    if (why && size)
        why[0] = '\0';
    if (!cp || i >= cp->n)
        return 0;
    const cp_mpi_left *l = &cp->p[i].s->left;
    size_t at = 0;
    if (why && size) {
        reason(why, size, &at, l->unpaired,
               "send(s) and receive(s) pairing with none (their "
               "communicator, peers and tag hold more of one than of the "
               "other: the other side's call unwrapped, or never made)");
        reason(why, size, &at, l->unknown,
               "on communicator(s) the wrappers do not know "
               "(intercommunicators, MPI_Comm_idup's)");
        reason(why, size, &at, l->pending,
               "nonblocking posting(s) never seen completing (completed by "
               "a call the wrappers do not see, freed, or pending at the "
               "end)");
        reason(why, size, &at, l->orphan,
               "completion(s) or free(s) whose posting is not in the trace");
    }
    return l->unpaired + l->unknown + l->pending + l->orphan;
}

GPUPROF_AN_API const char *gpuprof_an_wait_kind_name(gpuprof_an_wait_kind k)
{
    static const char *const n[] = {"BlameKernel",     "BlameSync",
                                    "EventQuery",      "StreamQuery",
                                    "NullStream",      "StreamWait",
                                    "LateSender",      "LateReceiver",
                                    "WaitAtCollective", "WaitAtJoin",
                                    "WaitAtBarrier",   "LockContention",
                                    "WaitAtCondition", "WaitAtFork"};
    return (unsigned)k < GPUPROF_AN_WAIT_KINDS ? n[k] : "?";
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_waits(
    const gpuprof_an_cpath *cp, uint32_t i, gpuprof_an_wait_totals *out)
{
    if (!cp || !out || i >= cp->n)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    memset(out, 0, sizeof(*out));
    const shared *s = cp->p[i].s;
    for (uint64_t k = 0; k < s->nw; k++) {
        out->count[s->w[k].kind] += !s->w[k].part;
        out->ns[s->w[k].kind] += s->w[k].ns;
        out->opencl[s->w[k].kind] += s->w[k].opencl && !s->w[k].part;
    }
    return GPUPROF_OK;
}

GPUPROF_AN_API uint64_t gpuprof_an_cpath_length(const gpuprof_an_cpath *cp,
                                                uint32_t i)
{
    if (!cp || i >= cp->n || !cp->p[i].npath)
        return 0;
    const proc *p = &cp->p[i];
    return (uint64_t)(p->path[p->npath - 1].to - p->path[0].from);
}

GPUPROF_AN_API uint64_t gpuprof_an_cpath_run_ns(const gpuprof_an_cpath *cp,
                                                uint32_t i)
{
    if (!cp || i >= cp->n || !cp->p[i].s->g.nact)
        return 0;
    const proc *p = &cp->p[i];
    int64_t lo = INT64_MAX;
    for (uint64_t v = 0; v < 2 * (uint64_t)p->s->g.nact; v++)
        lo = p->tm.t[v] < lo ? p->tm.t[v] : lo;
    return (uint64_t)(p->tm.t[p->tm.last] - lo);
}

/* Activity a as a step (times, path part: the caller's). */
static gpuprof_an_path_step step_at(const cp_graph *g, uint32_t a)
{
    const cp_act *x = &g->act[a];
    const cp_lane *l = &g->lane[x->lane];
    const cp_mpi *m = x->kind == CP_MPI ? &g->mpi[x->note] : NULL;
    const cp_host *h = x->kind == CP_HOST ? &g->host[x->note] : NULL;
    return (gpuprof_an_path_step){(gpuprof_an_activity_kind)x->kind,
                                  x->context,
                                  x->profile,
                                  l->gpu ? l->device : 0,
                                  l->gpu ? l->stream : 0,
                                  x->start,
                                  x->end,
                                  0,
                                  0,
                                  l->rank,
                                  m   ? m->op
                                  : h ? (uint32_t)h->op | (uint32_t)h->flags
                                                              << 8
                                      : 0,
                                  m ? m->peer : -1};
}

static void step_of(const proc *p, const cp_step *x, gpuprof_an_path_step *o)
{
    *o = step_at(&p->s->g, x->act);
    o->start_ns = (uint64_t)p->tm.t[2 * (uint64_t)x->act];
    o->end_ns = (uint64_t)p->tm.t[2 * (uint64_t)x->act + 1];
    o->path_ns = (uint64_t)(x->to - x->from);
    o->path_from_ns = (uint64_t)x->from;
}

GPUPROF_AN_API uint64_t gpuprof_an_cpath_steps(const gpuprof_an_cpath *cp,
                                               uint32_t i, uint64_t first,
                                               gpuprof_an_path_step *out,
                                               uint64_t max)
{
    if (!cp || i >= cp->n)
        return 0;
    const proc *p = &cp->p[i];
    uint64_t k = 0;
    for (; first + k < p->npath && k < max && out; k++)
        step_of(p, &p->path[first + k], &out[k]);
    return out ? k : p->npath;
}

/* ---- CPU samples on the path ---------------------------------------- */
/* The procedure a sampled context lies in: its nearest function, inlined
 * function or frame (the context itself when there is none). */
static uint32_t procedure_of(const gpuprof_an_db *db, uint32_t c)
{
    uint32_t nc = gpuprof_an_db_context_count(db);
    for (uint32_t a = c; a && a < nc; a = gpuprof_an_db_context_parent(db, a)) {
        gpuprof_an_node_kind k = gpuprof_an_db_context_kind(db, a);
        if (k == GPUPROF_AN_NODE_FUNCTION || k == GPUPROF_AN_NODE_INLINE ||
            k == GPUPROF_AN_NODE_FRAME)
            return a;
        if (k == GPUPROF_AN_NODE_REGION)
            break;
    }
    return c;
}

static int by_ns(const void *x, const void *y)
{
    const gpuprof_an_sampled *a = x, *b = y;
    if (a->ns != b->ns)
        return a->ns < b->ns ? 1 : -1;
    return (a->context > b->context) - (a->context < b->context);
}

/* cp->smp: the database's samples by profile and time (none: NULL). */
static gpuprof_status samples_load(gpuprof_an_cpath *cp)
{
    uint32_t m, np = gpuprof_an_db_profile_count(cp->db);
    if (!gpuprof__an_db_sample_metric(cp->db, &m))
        return GPUPROF_OK;
    samples *x = calloc(1, sizeof(*x));
    if (!x || !(x->first = calloc((size_t)np + 1, sizeof(*x->first)))) {
        free(x);
        return nomem();
    }
    x->nprof = np;
    uint32_t cap = 0;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t p = 0; p < np && st == GPUPROF_OK; p++) {
        x->first[p] = x->n;
        st = gpuprof__an_db_samples_all(cp->db, p, m, &x->v, &x->n, &cap);
    }
    if (st != GPUPROF_OK) {
        samples_drop(x);
        return st;
    }
    x->first[np] = x->n;
    for (uint32_t i = 0; i < x->n; i++)
        if (x->v[i].context != UINT32_MAX)
            x->v[i].context = procedure_of(cp->db, x->v[i].context);
    cp->smp = x;
    return GPUPROF_OK;
}

/* The first of profile p's samples at t or later. */
static uint32_t sample_at(const samples *x, uint32_t p, uint64_t t)
{
    uint32_t lo = x->first[p], hi = x->first[p + 1];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (x->v[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int by_context(const void *x, const void *y)
{
    const gpuprof_an_sampled *a = x, *b = y;
    return (a->context > b->context) - (a->context < b->context);
}

GPUPROF_AN_API uint32_t gpuprof_an_cpath_step_samples(
    const gpuprof_an_cpath *cp, const gpuprof_an_path_step *s,
    gpuprof_an_sampled *out, uint32_t max)
{
    if (!cp || cp->projected || !s || s->kind != GPUPROF_AN_ACTIVITY_CPU ||
        !s->path_ns || !cp->smp || s->profile >= cp->smp->nprof)
        return 0; /* a projection's times are replayed: no samples there */
    const samples *x = cp->smp;
    uint64_t t1 = s->path_from_ns + s->path_ns, k = sample_at(x, s->profile,
                                                               s->path_from_ns);
    uint64_t end = k;
    while (end < x->first[s->profile + 1] && x->v[end].t <= t1)
        end++;
    if (end == k)
        return 0;
    gpuprof_an_sampled few[32], *p = few; /* most steps hold a few */
    if (end - k > 32 && !(p = malloc((end - k) * sizeof(*p))))
        return 0;
    for (uint64_t i = k; i < end; i++)
        p[i - k] = (gpuprof_an_sampled){x->v[i].context, 1, x->v[i].value};
    uint32_t np = 0; /* by procedure */
    if (end - k > 1)
        qsort(p, end - k, sizeof(*p), by_context);
    for (uint64_t i = 0; i < end - k; i++) {
        if (np && p[np - 1].context == p[i].context) {
            p[np - 1].samples += p[i].samples;
            p[np - 1].ns += p[i].ns;
        } else {
            p[np++] = p[i];
        }
    }
    if (np > 1)
        qsort(p, np, sizeof(*p), by_ns);
    if (out && max)
        memcpy(out, p, (np < max ? np : max) * sizeof(*p));
    if (p != few)
        free(p);
    return np;
}

GPUPROF_AN_API const char *gpuprof_an_cpath_step_name(
    const gpuprof_an_cpath *cp, const gpuprof_an_path_step *s, char *buf,
    size_t size)
{
    if (!cp || !s || !buf || !size)
        return "";
    uint32_t c = s->context, nc = gpuprof_an_db_context_count(cp->db);
    gpuprof_an_sampled top;
    if (c >= nc) {
        snprintf(buf, size, "<unknown context>");
        return buf;
    }
    const char *name = gpuprof_an_db_context_name(cp->db, c);
    uint32_t parent = gpuprof_an_db_context_parent(cp->db, c);
    if (s->kind == GPUPROF_AN_ACTIVITY_HOST)
        snprintf(buf, size, "%s in %s",
                 cp_host_name((uint8_t)s->mpi_op, (uint8_t)(s->mpi_op >> 8)),
                 c ? name : "<no region>");
    else if (s->kind == GPUPROF_AN_ACTIVITY_MPI && !strncmp(name, "MPI_", 4))
        snprintf(buf, size, "%s%s%s", name, parent && parent < nc ? " in " : "",
                 parent && parent < nc
                     ? gpuprof_an_db_context_name(cp->db, parent)
                     : ""); /* the wrapper's region, beneath the caller's */
    else if (s->kind == GPUPROF_AN_ACTIVITY_MPI)
        snprintf(buf, size, "%s in %s", cp_mpi_name(s->mpi_op),
                 c ? name : "<no region>");
    else if (s->kind == GPUPROF_AN_ACTIVITY_GPU && cp->kern[c] != CP_NONE &&
        cp->kern[c] != SEVERAL)
        snprintf(buf, size, "%s", gpuprof_an_db_context_name(cp->db,
                                                             cp->kern[c]));
    else if (s->kind == GPUPROF_AN_ACTIVITY_GPU && cp->kern[c] == SEVERAL)
        snprintf(buf, size, "%s (several kernels)", name);
    else if (s->kind != GPUPROF_AN_ACTIVITY_CPU && parent < nc)
        snprintf(buf, size, "%s in %s", name,
                 gpuprof_an_db_context_name(cp->db, parent));
    else if (s->kind == GPUPROF_AN_ACTIVITY_CPU &&
             gpuprof_an_cpath_step_samples(cp, s, &top, 1) &&
             top.context < nc)
        snprintf(buf, size, c ? "%s in %s" : "%s",
                 gpuprof_an_db_context_name(cp->db, top.context), name);
    else
        snprintf(buf, size, "%s", c ? name : "<no region>");
    return buf;
}

const gpuprof_an_db *gpuprof__an_cpath_db(const gpuprof_an_cpath *cp)
{
    return cp->db;
}

uint64_t gpuprof__an_cpath_host_left(const gpuprof_an_cpath *cp, uint32_t i)
{
    return cp->p[i].s->g.host_left;
}

void gpuprof__an_cpath_blames(const gpuprof_an_cpath *cp, uint32_t i,
                              void (*cb)(void *arg, const char *name,
                                         uint64_t ns),
                              void *arg)
{
    const proc *p = &cp->p[i];
    const cp_graph *g = &p->s->g;
    char name[512];
    for (uint64_t k = 0; k < p->s->nw; k++) {
        gpuprof_an_path_step s = step_at(g, p->s->w[k].cause);
        /* CPU work is named by the samples of all of it, as on the path
         * by those of its part there, so a rating sums both under one
         * name. */
        s.path_from_ns = s.start_ns;
        s.path_ns = s.end_ns - s.start_ns;
        cb(arg, gpuprof_an_cpath_step_name(cp, &s, name, sizeof(name)),
           p->s->w[k].ns);
    }
}

/* ---- metrics ---------------------------------------------------------- */

static bool cell(cells *v, const cp_graph *g, uint32_t a, double value)
{
    return value == 0 ||
           cell_add(v, profile_of(g, a), g->act[a].context, value);
}

static gpuprof_status add_metric(gpuprof_an_db *db, const char *name,
                                 cells *v)
{
    gpuprof__an_table *t =
        gpuprof__an_table_new(db, name, GPUPROF_AN_UNIT_NS, v->c, v->n);
    free(v->c);
    *v = (cells){0};
    return t ? gpuprof__an_db_add_table(db, t) : nomem();
}

/* cpath.time of each CPU step whose piece on the path CPU samples saw
 * moves from the step's context (its region) to the procedures they saw
 * there, in proportion to their sampled time (a share for samples of no
 * known context stays): so every view shows which host code is on the
 * path, as `report --critical-path` names it. */
static bool path_to_samples(const gpuprof_an_cpath *cp, const proc *p,
                            cells *v)
{
    gpuprof_an_sampled *smp = NULL; /* one array for the whole path */
    uint32_t cap = 0;
    bool ok = true;
    for (uint64_t j = 0; j < p->npath && ok; j++) {
        gpuprof_an_path_step st;
        step_of(p, &p->path[j], &st);
        uint32_t n = gpuprof_an_cpath_step_samples(cp, &st, NULL, 0);
        if (!n)
            continue;
        if (n > cap) {
            gpuprof_an_sampled *b = realloc(smp, n * sizeof(*b));
            if (!(ok = b != NULL))
                break;
            smp = b;
            cap = n;
        }
        n = gpuprof_an_cpath_step_samples(cp, &st, smp, n);
        double all = 0, known = 0;
        for (uint32_t k = 0; k < n; k++) {
            all += (double)smp[k].ns;
            if (smp[k].context != UINT32_MAX)
                known += (double)smp[k].ns;
        }
        if (known <= 0)
            continue;
        double t = (double)st.path_ns;
        ok = cell_add(v, st.profile, st.context, -t * known / all);
        for (uint32_t k = 0; k < n && ok; k++)
            if (smp[k].context != UINT32_MAX && smp[k].ns)
                ok = cell_add(v, st.profile, smp[k].context,
                              t * (double)smp[k].ns / all);
    }
    free(smp);
    return ok;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_cpath_metrics(
    gpuprof_an_db *db, const gpuprof_an_cpath *cp)
{
    if (!db || !cp || cp->db != db)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "bad argument (the analysis of another "
                                "database?)");
    uint32_t m;
    if (gpuprof_an_db_metric_find(db, "cpath.time", GPUPROF_AN_INCLUSIVE,
                                  &m) == GPUPROF_OK)
        return GPUPROF_OK;
    static const char *const names[] = {"wait.time", "wait.blame",
                                        "gpu.idle_blame", "cpath.time"};
    gpuprof_status st = GPUPROF_OK;
    for (int k = 0; k < 4 && st == GPUPROF_OK; k++) {
        cells v = {0};
        bool ok = true;
        for (uint32_t i = 0; i < cp->n && ok; i++) {
            const shared *s = cp->p[i].s;
            const cp_graph *g = &s->g;
            for (uint64_t j = 0; k < 2 && j < s->nw && ok; j++)
                ok = cell(&v, g, k ? s->w[j].cause : s->w[j].waiter,
                          (double)s->w[j].ns);
            const cells *sum = k == 2 ? &s->idle_cells
                               : k == 3 ? &cp->p[i].path_cells
                                        : NULL;
            for (uint64_t j = 0; sum && j < sum->n && ok; j++)
                ok = cell_add(&v, sum->c[j].profile, sum->c[j].context,
                              sum->c[j].value);
            if (k == 3 && ok)
                ok = path_to_samples(cp, &cp->p[i], &v);
        }
        st = ok ? add_metric(db, names[k], &v) : nomem();
        free(v.c);
    }
    return st;
}

/* ---- projection ---------------------------------------------------------- */
/* Device `device` of process `process` in the database's devices table
 * (UINT32_MAX: not described). */
static uint32_t device_of(const gpuprof_an_db *db, uint32_t process,
                          uint32_t device)
{
    for (uint32_t d = 0; d < gpuprof_an_db_device_count(db); d++)
        if (gpuprof_an_db_device_profile(db, d) == process &&
            gpuprof_an_db_device_number(db, d) == device)
            return d;
    return UINT32_MAX;
}

static double kstat(const gpuprof_an_db *db, uint32_t c, const char *name)
{
    uint32_t m;
    if (gpuprof_an_db_metric_find(db, name, GPUPROF_AN_EXCLUSIVE, &m) !=
        GPUPROF_OK)
        return 0;
    return gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_SUM);
}

/* Whether the launches of kernel context kc fill device d: as many
 * work-groups (blocks) a launch as the device holds at once (compute
 * units times the groups one holds: max_blocks_per_sm, fewer when
 * max_threads_per_sm allows fewer of this size; 1 when unknown).
 * CP_K_UNKNOWN without launch sizes or a device description. */
static uint8_t fills(const gpuprof_an_db *db, uint32_t kc, uint32_t d)
{
    uint64_t units = 0, blocks = 0, threads = 0;
    if (d == UINT32_MAX ||
        !gpuprof_an_db_device_attr(db, d, "sm_count", &units, NULL) || !units)
        return CP_K_UNKNOWN;
    double items = kstat(db, kc, "gpu.work_items"),
           group = kstat(db, kc, "gpu.group_size"),
           count = kstat(db, kc, "gpu.count");
    if (!(items > 0 && group > 0 && count > 0))
        return CP_K_UNKNOWN;
    double per_unit = 1, size = group / count;
    if (gpuprof_an_db_device_attr(db, d, "max_blocks_per_sm", &blocks, NULL) &&
        blocks)
        per_unit = (double)blocks;
    if (gpuprof_an_db_device_attr(db, d, "max_threads_per_sm", &threads,
                                  NULL) &&
        threads && size > 0)
        per_unit = fmin(per_unit, fmax(1, floor((double)threads / size)));
    return items / group >= (double)units * per_unit ? CP_K_FILLS
                                                     : CP_K_ROOM;
}

/* How p's kernels share their devices (device.c): scale adjusted, the
 * models kept. Each kernel says whether its launches fill its device
 * (each kernel context and device worked out once). */
static gpuprof_status devices(const gpuprof_an_cpath *x, proc *p, int mode,
                              double *scale)
{
    const cp_graph *g = &p->s->g;
    uint32_t nc = gpuprof_an_db_context_count(x->db);
    uint8_t *kind = malloc(g->nact ? g->nact : 1);
    uint8_t *known = calloc(nc ? nc : 1, 1); /* per context: fills + 1 */
    if (!kind || !known) {
        free(kind);
        free(known);
        return nomem();
    }
    for (uint32_t a = 0; a < g->nact; a++) {
        uint32_t c = g->act[a].context;
        kind[a] = CP_K_NONE;
        if (g->act[a].kind != CP_GPU || c >= nc || x->kern[c] == CP_NONE)
            continue;
        if (!known[c]) { /* one device per context in practice */
            const cp_lane *l = &g->lane[g->act[a].lane];
            known[c] = 1 + (x->kern[c] == SEVERAL
                                ? CP_K_UNKNOWN
                                : fills(x->db, x->kern[c],
                                        device_of(x->db, l->process,
                                                  l->device)));
        }
        kind[a] = (uint8_t)(known[c] - 1);
    }
    free(known);
    gpuprof_status st =
        cp_device_project(g, kind, mode, scale, &p->dev, &p->ndev);
    free(kind);
    return st;
}

GPUPROF_AN_API uint32_t gpuprof_an_cpath_device_models(
    const gpuprof_an_cpath *cp, gpuprof_an_device_model *out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; cp && cp->projected && i < cp->n; i++)
        for (uint32_t j = 0; j < cp->p[i].ndev; j++, n++)
            if (out && n < max)
                out[n] = cp->p[i].dev[j];
    return n;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_project(
    const gpuprof_an_cpath *cp, const char *const *rules, uint32_t nrules,
    uint64_t *touched, gpuprof_an_cpath **out)
{
    if (!cp || (!rules && nrules) || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = NULL;
    cp_rule *r = NULL;
    uint32_t nr = 0;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < nrules && st == GPUPROF_OK; i++)
        st = cp_rules_parse(rules[i], &r, &nr);
    gpuprof_an_cpath *x = st == GPUPROF_OK ? calloc(1, sizeof(*x)) : NULL;
    if (st == GPUPROF_OK && (!x || !(x->p = calloc(cp->n ? cp->n : 1,
                                                     sizeof(*x->p)))))
        st = nomem();
    uint32_t nc = gpuprof_an_db_context_count(cp->db);
    if (st == GPUPROF_OK && (x->kern = malloc((nc ? nc : 1) *
                                              sizeof(*x->kern))) == NULL)
        st = nomem();
    if (st == GPUPROF_OK) {
        memcpy(x->kern, cp->kern, nc * sizeof(*x->kern));
        x->db = cp->db;
        x->projected = true;
    }
    uint64_t hits = 0;
    for (uint32_t i = 0; i < cp->n && st == GPUPROF_OK; i++) {
        proc *p = &x->p[i];
        p->s = cp->p[i].s;
        p->s->refs++;
        x->n = i + 1;
        const cp_graph *g = &p->s->g;
        double *scale = malloc((g->nact ? g->nact : 1) * sizeof(*scale));
        if (!scale) {
            st = nomem();
            break;
        }
        hits += cp_rules_apply(cp->db, g, r, nr, scale);
        st = devices(x, p, cp_rules_device_mode(r, nr), scale);
        if (st == GPUPROF_OK)
            st = timed(p, scale);
        free(scale);
    }
    cp_rules_free(r, nr);
    if (st != GPUPROF_OK) {
        gpuprof_an_cpath_free(x);
        return st;
    }
    if (touched)
        *touched = hits;
    *out = x;
    return GPUPROF_OK;
}
