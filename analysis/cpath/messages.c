/*
 * messages.c - the point-to-point messages of the ranks' joined graph
 * (ranks.h; how they match, and what is left out rather than refused, is
 * in ranks.c's opening comment), and the requests every nonblocking
 * posting is completed by (cp_completions, which colls.c uses too).
 *
 * Requests: the events with a request id, by (process, request): at most
 * one posting, one completion (a WAIT) or one MPI_Request_free each, the
 * completion not before the posting; anything else is damage. A posting
 * without its completion, or a completion or free without its posting, is
 * counted and left out. Messages: every send and every receive becomes an
 * end keyed (communicator, source, destination, tag) with the time it was
 * posted; nonblocking ones find their completion first. Both lists are
 * sorted by key, then posting time, and paired in order; a key whose
 * counts differ is left out, counted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/an_internal.h"
#include "ranks.h"

static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

const char *cp_mpi_name(uint32_t op)
{
    static const char *const n[CP_MPI_OPS] = {
        "?", "MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv",
        "MPI_Wait", "MPI_Barrier", "MPI_Bcast", "MPI_Reduce",
        "MPI_Allreduce", "MPI_Gather", "MPI_Allgather", "MPI_Alltoall",
        "MPI_Comm (new)", "MPI_Finalize", "MPI_Scatter", "MPI_Request_free",
        "MPI_Probe", "MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce",
        "MPI_Iallreduce", "MPI_Igather", "MPI_Iallgather", "MPI_Ialltoall",
        "MPI_Iscatter", "MPI_Gatherv", "MPI_Scatterv", "MPI_Allgatherv",
        "MPI_Alltoallv", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
        "MPI_Scan", "MPI_Exscan"};
    return op && op < CP_MPI_OPS ? n[op] : "MPI";
}

/* ---- messages ------------------------------------------------------------ */
typedef struct end {
    uint32_t comm;
    int32_t src, dst, tag;
    uint64_t t;          /* posted */
    uint32_t post, done; /* activities (done: CP_NONE when never completed) */
    bool polled;         /* done: a test after others found it not done */
} end;

typedef struct ends {
    end *e;
    uint64_t n, cap;
} ends;

static bool push(ends *v, end x)
{
    if (v->n == v->cap) {
        uint64_t cap = v->cap ? v->cap * 2 : 256;
        end *n = realloc(v->e, cap * sizeof(*n));
        if (!n)
            return false;
        v->e = n;
        v->cap = cap;
    }
    v->e[v->n++] = x;
    return true;
}

static int by_key(const void *x, const void *y)
{
    const end *a = x, *b = y;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    if (a->tag != b->tag)
        return a->tag < b->tag ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->post > b->post) - (a->post < b->post);
}

static bool same_key(const end *a, const end *b)
{
    return a->comm == b->comm && a->src == b->src && a->dst == b->dst &&
           a->tag == b->tag;
}

/* Events with a request, by (process, request): a posting, then its
 * completion, then a free. */
typedef struct req {
    uint32_t process;
    uint32_t kind; /* 0 posting, 1 completion, 2 MPI_Request_free */
    uint64_t request;
    uint32_t event;
} req;

static int by_request(const void *x, const void *y)
{
    const req *a = x, *b = y;
    if (a->process != b->process)
        return a->process < b->process ? -1 : 1;
    if (a->request != b->request)
        return a->request < b->request ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return (a->event > b->event) - (a->event < b->event);
}

static bool posting(uint8_t op)
{
    return op == CP_MPI_ISEND || op == CP_MPI_IRECV ||
           (op >= CP_MPI_IBARRIER && op <= CP_MPI_ISCATTER);
}

static gpuprof_status bad_request(const gpuprof_an_db *db, const cp_graph *g,
                                  const req *r, const char *what)
{
    char s[200];
    snprintf(s, sizeof(s), "rank %d: request %" PRIu64 " %s",
             cp_rank(g, g->mpi[r->event].act), r->request, what);
    return cp_mismatch(db, s);
}

/* One request's events ix[0 .. n) (n >= 1): checked, paired. */
static gpuprof_status one_request(const gpuprof_an_db *db, const cp_graph *g,
                                  const req *ix, uint32_t n, cp_deps *v,
                                  uint32_t *done)
{
    uint32_t k[3] = {0, 0, 0}, at[3] = {0, 0, 0};
    for (uint32_t i = 0; i < n; i++)
        k[ix[i].kind]++, at[ix[i].kind] = ix[i].event;
    if (k[0] > 1 || k[1] > 1 || k[2] > 1)
        return bad_request(db, g, ix, k[0] > 1 ? "posted twice"
                                      : k[1] > 1 ? "completed twice"
                                                 : "freed twice");
    if (k[1] && k[2])
        return bad_request(db, g, ix, "both completed and freed");
    if (!k[0]) { /* its posting is not in the trace */
        v->left.orphan++;
        return GPUPROF_OK;
    }
    if (k[1] && g->act[g->mpi[at[1]].act].end <
                    g->act[g->mpi[at[0]].act].start)
        return bad_request(db, g, ix, "completed before it was posted");
    if (k[1])
        done[at[0]] = at[1];
    else if (g->mpi[at[0]].comm != UINT32_MAX) /* else counted as unknown */
        v->left.pending++;
    return GPUPROF_OK;
}

gpuprof_status cp_completions(const gpuprof_an_db *db, const cp_graph *g,
                              cp_deps *v, uint32_t **out)
{
    req *ix = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*ix));
    uint32_t *done = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*done));
    uint32_t n = 0;
    *out = NULL;
    if (!ix || !done) {
        free(ix);
        free(done);
        return nomem();
    }
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < g->nmpi && st == GPUPROF_OK; i++) {
        const cp_mpi *m = &g->mpi[i];
        bool p = posting(m->op);
        done[i] = UINT32_MAX;
        if (!m->request && (p || m->op == CP_MPI_REQUEST_FREE))
            st = cp_mismatch(db, "a nonblocking MPI record without its "
                                 "request");
        else if (p || m->op == CP_MPI_WAIT || m->op == CP_MPI_REQUEST_FREE)
            ix[n++] = (req){g->lane[g->act[m->act].lane].process,
                            p ? 0 : m->op == CP_MPI_WAIT ? 1 : 2, m->request,
                            i};
    }
    if (st == GPUPROF_OK && n)
        qsort(ix, n, sizeof(*ix), by_request);
    for (uint32_t i = 0, j; st == GPUPROF_OK && i < n; i = j) {
        for (j = i + 1; j < n && ix[j].process == ix[i].process &&
                        ix[j].request == ix[i].request;
             j++)
            ;
        st = one_request(db, g, ix + i, j - i, v, done);
    }
    free(ix);
    if (st != GPUPROF_OK) {
        free(done);
        return st;
    }
    *out = done;
    return GPUPROF_OK;
}

/* A point-to-point record's peer and tag: a rank of the run (-1 none, -2
 * any), a tag or -1; else damage. */
static gpuprof_status check_peer(const gpuprof_an_db *db, const cp_graph *g,
                                 const cp_mpi *m)
{
    char what[200];
    if (m->peer >= -2 && m->peer < (int32_t)g->nranks && m->tag >= -1)
        return GPUPROF_OK;
    snprintf(what, sizeof(what), "rank %d: %s names rank %d (tag %d) in a "
             "run of %u ranks", cp_rank(g, m->act), cp_mpi_name(m->op),
             m->peer, m->tag, g->nranks);
    return cp_mismatch(db, what);
}

static bool p2p(uint8_t op)
{
    return op == CP_MPI_SEND || op == CP_MPI_RECV || op == CP_MPI_ISEND ||
           op == CP_MPI_IRECV;
}

/* One send or receive of event i as an end (or none: an unknown
 * communicator, MPI_PROC_NULL, a cancelled receive, one whose source or
 * tag is unknowable: counted). */
static bool gather_one(const cp_graph *g, const uint32_t *done, uint32_t i,
                       ends *sends, ends *recvs, cp_mpi_left *left)
{
    const cp_mpi *m = &g->mpi[i];
    uint32_t a = m->act, d = done[i];
    int32_t me = cp_rank(g, a);
    uint64_t t = g->act[a].start;
    uint32_t fin = d == UINT32_MAX ? CP_NONE : g->mpi[d].act;
    if (m->comm == UINT32_MAX) {
        left->unknown++;
        return true;
    }
    if (m->peer == -1)
        return true; /* MPI_PROC_NULL */
    if (m->op == CP_MPI_SEND || m->op == CP_MPI_ISEND)
        return push(sends, (end){m->comm, me, m->peer, m->tag, t, a,
                                 m->op == CP_MPI_SEND ? a : fin, false});
    if (m->op == CP_MPI_RECV)
        return push(recvs,
                    (end){m->comm, m->peer, me, m->tag, t, a, a, false});
    if (d != UINT32_MAX) /* source and tag: the completion's (-1: none,
                            a cancelled receive) */
        return g->mpi[d].peer < 0 ||
               push(recvs, (end){m->comm, g->mpi[d].peer, me, g->mpi[d].tag,
                                 t, a, fin, cp_mpi_polled(&g->mpi[d])});
    if (m->peer >= 0 && m->tag >= 0) /* never seen completing, as asked */
        return push(recvs, (end){m->comm, m->peer, me, m->tag, t, a,
                                 CP_NONE, false});
    return true; /* any source or tag, never seen completing: counted as
                    pending; its send will be unpaired */
}

/* The sends and receives of the graph. */
static gpuprof_status gather(const gpuprof_an_db *db, const cp_graph *g,
                             const uint32_t *done, ends *sends, ends *recvs,
                             cp_mpi_left *left)
{
    for (uint32_t i = 0; i < g->nmpi; i++) {
        const cp_mpi *m = &g->mpi[i];
        if (!p2p(m->op))
            continue;
        gpuprof_status st = m->comm == UINT32_MAX ? GPUPROF_OK
                                                  : check_peer(db, g, m);
        if (st == GPUPROF_OK && !gather_one(g, done, i, sends, recvs, left))
            st = nomem();
        if (st != GPUPROF_OK)
            return st;
    }
    return GPUPROF_OK;
}

/* One message: the send's start to the receive's end; a late receiver's
 * posting to the send's completion; a polled completion's start to the
 * send's start. */
static gpuprof_status message(cp_graph *g, cp_deps *v, const end *s,
                              const end *r)
{
    gpuprof_status st = GPUPROF_OK;
    if (r->done != CP_NONE)
        st = cp_link(g, v, s->post, true, r->done, CP_D_LATE_SENDER);
    if (st == GPUPROF_OK && r->done != CP_NONE && r->polled)
        st = cp_poll(g, s->post, r->done);
    const cp_act *sd = s->done != CP_NONE ? &g->act[s->done] : NULL;
    uint64_t posted = g->act[r->post].start;
    if (st == GPUPROF_OK && sd && sd->start < posted && sd->end >= posted)
        st = cp_link(g, v, r->post, true, s->done, CP_D_LATE_RECEIVER);
    return st;
}

gpuprof_status cp_messages(const gpuprof_an_db *db, cp_graph *g, cp_deps *v,
                           const uint32_t *done)
{
    ends s = {0}, r = {0};
    gpuprof_status st = gather(db, g, done, &s, &r, &v->left);
    if (st == GPUPROF_OK && s.n)
        qsort(s.e, s.n, sizeof(*s.e), by_key);
    if (st == GPUPROF_OK && r.n)
        qsort(r.e, r.n, sizeof(*r.e), by_key);
    uint64_t i = 0, j = 0;
    while (st == GPUPROF_OK && (i < s.n || j < r.n)) {
        const end *k = i < s.n && (j >= r.n || by_key(&s.e[i], &r.e[j]) <= 0 ||
                                   same_key(&s.e[i], &r.e[j]))
                           ? &s.e[i]
                           : &r.e[j];
        uint64_t i1 = i, j1 = j;
        while (i1 < s.n && same_key(&s.e[i1], k))
            i1++;
        while (j1 < r.n && same_key(&r.e[j1], k))
            j1++;
        if (i1 - i != j1 - j) { /* which pairs with which is unknowable */
            v->left.unpaired += (i1 - i) + (j1 - j);
            i = i1, j = j1;
            continue;
        }
        for (; i < i1 && st == GPUPROF_OK; i++, j++)
            st = message(g, v, &s.e[i], &r.e[j]);
    }
    free(s.e);
    free(r.e);
    return st;
}
