/*
 * ranks.c - the critical path across the ranks of an MPI run (cpath.h;
 * seed 004 §4.1): the event dependency graphs of the processes whose
 * traces hold MPI calls (libgpuprof-pmpi.so, trace format 1.4) joined
 * into one graph, with an edge per message and per collective, so that
 * the path, the replay (projection) and the MPI wait states cross ranks.
 *
 * Ranks: each process's MPI_Init event names its MPI_COMM_WORLD rank and
 * the world's size (without one, the database's rank of the process). The
 * joined graph holds every rank of the world once, or nothing is joined.
 * Clocks: ranks on one host share CLOCK_MONOTONIC; when hosts differ, each
 * process's times move by its CLOCK_REALTIME offset against the first's.
 *
 * Messages: the sends of a (communicator, source, destination, tag), in
 * the order they were posted, are the receives of that key in the order
 * those were posted (MPI's non-overtaking rule); a receive's source and
 * tag are the message's (its status). Edge: the send's start (MPI_Send,
 * MPI_Isend) to the receive's end (MPI_Recv, or the MPI_Wait* / Test*
 * that completed the MPI_Irecv); when the send's completion ran across the
 * moment the receive was posted and ended after it, also the receive's
 * start to that completion's end (late receiver).
 * Collectives (colls.c): the i-th collective call of each member of a
 * communicator (its id and lowest world rank), blocking or nonblocking, is
 * one operation; every member's end (a nonblocking one's: its request's
 * completion) depends on the other members' starts (a broadcast's or
 * scatter's only on the root's; a reduction's or gather's only the root's
 * on the others'; a scan's on the members before it).
 * An edge goes only forward in measured time.
 *
 * Left out, counted (cp_mpi_left; doc/ANALYSIS.md draws the line): what a
 * correct program produces when some of its MPI calls are not wrapped or
 * never complete: a key whose sends and receives differ in number (all its
 * messages: which pairs with which is unknowable), a posting never seen
 * completing (its completion's edges), a completion whose posting is not
 * in the trace, records on a communicator the wrappers do not know.
 * Refused (GPUPROF_E_CORRUPT, naming it; never a path that crosses ranks
 * where the run did not): what no run through the wrappers can produce:
 * a record of an unknown kind, a nonblocking one without its request, a
 * request posted, completed or freed twice in a process, or completed
 * before it was posted, a peer or root outside the run, a collective some
 * member lacks or calls as another operation, two processes of one rank,
 * a rank missing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"
#include "ranks.h"

#define S(a) (2 * (uint64_t)(a))
#define E(a) (2 * (uint64_t)(a) + 1)


static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

gpuprof_status cp_mismatch(const gpuprof_an_db *db, const char *what)
{
    return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                            "%s/trace.db: %s: MPI records missing or damaged; "
                            "no critical path across ranks",
                            gpuprof__an_db_dir(db), what);
}

/* ---- ranks and clocks -------------------------------------------------- */
static int32_t rank_of(const gpuprof_an_db *db, const cp_graph *g,
                       int64_t *world)
{
    for (uint32_t i = 0; i < g->nmpi; i++)
        if (g->mpi[i].op == CP_MPI_INIT) {
            *world = (int64_t)g->mpi[i].aux;
            return g->mpi[i].peer;
        }
    *world = -1;
    return gpuprof_an_db_profile_rank(db, g->process);
}

static gpuprof_status ranks(const gpuprof_an_db *db, const cp_part *p,
                            uint32_t n, int32_t *rank)
{
    int64_t world = -1;
    char what[200];
    for (uint32_t k = 0; k < n; k++) {
        int64_t w;
        rank[k] = rank_of(db, &p[k].g, &w);
        if (rank[k] < 0) {
            snprintf(what, sizeof(what), "process %u has MPI calls but no "
                     "rank", p[k].g.process);
            return cp_mismatch(db, what);
        }
        if (w >= 0 && world >= 0 && w != world) {
            snprintf(what, sizeof(what), "process %u says the run has %"
                     PRId64 " ranks, another %" PRId64, p[k].g.process, w,
                     world);
            return cp_mismatch(db, what);
        }
        world = w >= 0 ? w : world;
        for (uint32_t j = 0; j < k; j++)
            if (rank[j] == rank[k]) {
                snprintf(what, sizeof(what), "processes %u and %u are both "
                         "rank %d", p[j].g.process, p[k].g.process, rank[k]);
                return cp_mismatch(db, what);
            }
    }
    if (world >= 0 && world != (int64_t)n) {
        snprintf(what, sizeof(what), "the run had %" PRId64 " ranks, the "
                 "traces hold %u of them", world, n);
        return cp_mismatch(db, what);
    }
    return GPUPROF_OK;
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC of a process (its streams'). */
static int64_t realtime_of(const gpuprof_an_db *db, uint32_t process)
{
    for (uint32_t i = 0; i < gpuprof_an_db_trace_stream_count(db); i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        if (s.process == process)
            return s.realtime_offset_ns;
    }
    return 0;
}

/* Processes on other hosts than the first: their times onto its clock. */
static void align(const gpuprof_an_db *db, cp_part *p, uint32_t n)
{
    const char *h0 = gpuprof_an_db_profile_host(db, p[0].g.process);
    bool one_host = true;
    for (uint32_t k = 1; k < n && h0; k++) {
        const char *h = gpuprof_an_db_profile_host(db, p[k].g.process);
        one_host = one_host && h && !strcmp(h, h0);
    }
    if (one_host)
        return;
    int64_t r0 = realtime_of(db, p[0].g.process);
    for (uint32_t k = 1; k < n; k++) {
        int64_t d = realtime_of(db, p[k].g.process) - r0;
        for (uint32_t a = 0; a < p[k].g.nact; a++) {
            p[k].g.act[a].start = (uint64_t)((int64_t)p[k].g.act[a].start + d);
            p[k].g.act[a].end = (uint64_t)((int64_t)p[k].g.act[a].end + d);
        }
    }
}

/* ---- one graph of all ------------------------------------------------- */
#define CAT(dst, src, n, type)                                                 \
    do {                                                                       \
        if (n)                                                                 \
            memcpy((dst), (src), (size_t)(n) * sizeof(type));                  \
    } while (0)

static gpuprof_status concat(cp_part *p, uint32_t n, const int32_t *rank,
                             cp_part *out, uint32_t *aoff)
{
    uint64_t na = 0, nl = 0, nn = 0, ne = 0, nd = 0, nm = 0, nw = 0, nh = 0;
    for (uint32_t k = 0; k < n; k++) {
        aoff[k] = (uint32_t)na;
        na += p[k].g.nact, nl += p[k].g.nlane, nn += p[k].g.nnote;
        ne += p[k].g.nedge, nd += p[k].g.ndep, nm += p[k].g.nmpi;
        nw += p[k].nw, nh += p[k].g.nhost;
    }
    if (2 * na >= CP_MAX_NODES)
        return gpuprof__an_fail(GPUPROF_E_LIMIT, "the ranks hold %" PRIu64
                                " activities, more than the analysis takes "
                                "(%u)", na, CP_MAX_NODES / 2);
    cp_graph *g = &out->g;
    memset(out, 0, sizeof(*out));
    g->process = p[0].g.process;
    g->nranks = n;
    g->act = malloc((na ? na : 1) * sizeof(*g->act));
    g->lane = malloc((nl ? nl : 1) * sizeof(*g->lane));
    g->note = malloc((nn ? nn : 1) * sizeof(*g->note));
    g->edge = malloc((ne ? ne : 1) * sizeof(*g->edge));
    g->dep = malloc((nd ? nd : 1) * sizeof(*g->dep));
    g->mpi = malloc((nm ? nm : 1) * sizeof(*g->mpi));
    g->host = malloc((nh ? nh : 1) * sizeof(*g->host));
    out->w = malloc((nw ? nw : 1) * sizeof(*out->w));
    out->idle = malloc((na ? na : 1) * sizeof(*out->idle));
    if (!g->act || !g->lane || !g->note || !g->edge || !g->dep || !g->mpi ||
        !g->host || !out->w || !out->idle)
        return nomem();
    g->capedge = ne;
    g->capdep = nd;
    for (uint32_t k = 0; k < n; k++) {
        const cp_graph *x = &p[k].g;
        uint32_t o = aoff[k];
        CAT(g->act + g->nact, x->act, x->nact, cp_act);
        CAT(out->idle + g->nact, p[k].idle, x->nact, double);
        for (uint32_t i = 0; i < x->nact; i++) {
            cp_act *a = &g->act[g->nact + i];
            a->lane += g->nlane;
            a->call = a->call == CP_NONE ? CP_NONE : a->call + o;
            if (a->note != CP_NONE)
                a->note += a->kind == CP_MPI    ? g->nmpi
                           : a->kind == CP_HOST ? g->nhost
                                                : g->nnote;
        }
        for (uint32_t i = 0; i < x->nlane; i++) {
            cp_lane l = x->lane[i];
            l.first += o;
            l.rank = rank[k];
            g->lane[g->nlane + i] = l;
        }
        for (uint32_t i = 0; i < x->nnote; i++) {
            g->note[g->nnote + i] = x->note[i];
            g->note[g->nnote + i].call += o;
        }
        for (uint64_t i = 0; i < x->nedge; i++) {
            cp_edge e = x->edge[i];
            e.src += 2 * o;
            e.dst += 2 * o;
            g->edge[g->nedge + i] = e;
        }
        for (uint64_t i = 0; i < x->ndep; i++) {
            cp_dep d = x->dep[i];
            d.waiter += o;
            d.cause += o;
            g->dep[g->ndep + i] = d;
        }
        for (uint32_t i = 0; i < x->nmpi; i++) {
            g->mpi[g->nmpi + i] = x->mpi[i];
            g->mpi[g->nmpi + i].act += o;
        }
        for (uint32_t i = 0; i < x->nhost; i++) {
            g->host[g->nhost + i] = x->host[i];
            g->host[g->nhost + i].act += o;
        }
        for (uint64_t i = 0; i < p[k].nw; i++) {
            cp_wait w = p[k].w[i];
            w.waiter += o;
            w.cause += o;
            out->w[out->nw + i] = w;
        }
        g->nact += x->nact, g->nlane += x->nlane, g->nnote += x->nnote;
        g->nedge += x->nedge, g->ndep += x->ndep, g->nmpi += x->nmpi;
        g->nhost += x->nhost, g->host_left += x->host_left;
        out->nw += p[k].nw;
    }
    return GPUPROF_OK;
}

/* ---- the MPI dependencies, gathered then added sorted by waiter ------ */
gpuprof_status cp_link(cp_graph *g, cp_deps *v, uint32_t src_act,
                       bool src_start, uint32_t waiter, uint8_t type)
{
    const cp_act *s = &g->act[src_act], *w = &g->act[waiter];
    if ((src_start ? s->start : s->end) > w->end) /* not forward in time */
        return GPUPROF_OK;
    gpuprof_status st = cp_edge_add(g, (uint32_t)(src_start ? S(src_act)
                                                            : E(src_act)),
                                    (uint32_t)E(waiter),
                                    type == CP_D_COLL ? CP_E_COLL : CP_E_MSG);
    if (st != GPUPROF_OK)
        return st;
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? v->cap * 2 : 256;
        cp_dep *nd = realloc(v->d, cap * sizeof(*nd));
        if (!nd)
            return nomem();
        v->d = nd;
        v->cap = cap;
    }
    v->d[v->n++] = (cp_dep){waiter, src_act, type, 0};
    return GPUPROF_OK;
}

gpuprof_status cp_poll(cp_graph *g, uint32_t src_act, uint32_t test)
{
    if (g->act[src_act].start > g->act[test].start)
        return GPUPROF_OK; /* it was ready before the test began */
    return cp_edge_add(g, (uint32_t)S(src_act), (uint32_t)S(test), CP_E_POLL);
}

static int by_waiter(const void *x, const void *y)
{
    const cp_dep *a = x, *b = y;
    if (a->waiter != b->waiter)
        return a->waiter < b->waiter ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    return (a->cause > b->cause) - (a->cause < b->cause);
}

static gpuprof_status add_deps(cp_graph *g, cp_deps *v)
{
    if (v->n)
        qsort(v->d, v->n, sizeof(*v->d), by_waiter);
    gpuprof_status st = GPUPROF_OK;
    for (uint64_t i = 0; i < v->n && st == GPUPROF_OK; i++)
        st = cp_dep_add(g, v->d[i].waiter, v->d[i].cause, v->d[i].type, 0);
    return st;
}

static void part_free(cp_part *p)
{
    cp_graph_free(&p->g);
    free(p->w);
    free(p->idle);
    memset(p, 0, sizeof(*p));
}

gpuprof_status cp_join(const gpuprof_an_db *db, cp_part *parts, uint32_t n,
                       cp_part *out)
{
    memset(out, 0, sizeof(*out));
    int32_t *rank = malloc((n ? n : 1) * sizeof(*rank));
    uint32_t *aoff = malloc((n ? n : 1) * sizeof(*aoff));
    gpuprof_status st = rank && aoff ? ranks(db, parts, n, rank) : nomem();
    if (st == GPUPROF_OK) {
        align(db, parts, n);
        st = concat(parts, n, rank, out, aoff);
    }
    for (uint32_t k = 0; k < n; k++)
        part_free(&parts[k]);
    cp_deps v = {0};
    uint32_t *done = NULL;
    if (st == GPUPROF_OK)
        st = cp_completions(db, &out->g, &v, &done);
    if (st == GPUPROF_OK)
        st = cp_messages(db, &out->g, &v, done);
    if (st == GPUPROF_OK)
        st = cp_collectives(db, &out->g, &v, done);
    free(done);
    if (st == GPUPROF_OK)
        st = add_deps(&out->g, &v);
    out->left = v.left;
    if (st == GPUPROF_OK)
        st = cp_graph_index(&out->g);
    free(v.d);
    free(rank);
    free(aoff);
    if (st != GPUPROF_OK)
        part_free(out);
    return st;
}
