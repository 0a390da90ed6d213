/*
 * messages.c - the messages and collective operations of the ranks' joined
 * graph (ranks.h; how they match is in ranks.c's opening comment).
 *
 * Messages: every send and every receive becomes an end of a message
 * keyed (communicator, source, destination, tag) with the time it was
 * posted; nonblocking ones find their completion (the MPI_Wait* event of
 * the same request in the same process) first. Both lists are sorted by
 * key, then posting time, and paired in order; a key whose counts differ
 * is an error. Collectives: each member's calls on a communicator (id and
 * leader) numbered in time order; the calls with one number are one
 * operation, which must have every member, once, calling the same thing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/an_internal.h"
#include "ranks.h"

#define COLL_ALL_PAIRS 32 /* larger collectives: edges from the last only */

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
        "MPI_Comm (new)", "MPI_Finalize", "MPI_Scatter"};
    return op && op < CP_MPI_OPS ? n[op] : "MPI";
}

/* ---- messages ------------------------------------------------------------ */
typedef struct end {
    uint32_t comm;
    int32_t src, dst, tag;
    uint64_t t;          /* posted */
    uint32_t post, done; /* activities (done: CP_NONE when never completed) */
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

/* Events with a request, by (process, request): a posting and then its
 * completion side by side. */
typedef struct req {
    uint32_t process;
    uint32_t wait; /* 1 for the completion */
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
    return (a->wait > b->wait) - (a->wait < b->wait);
}

/* Per event: its completion's event (postings), else UINT32_MAX. */
static uint32_t *completions(const cp_graph *g)
{
    req *ix = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*ix));
    uint32_t *done = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*done));
    uint32_t n = 0;
    if (!ix || !done) {
        free(ix);
        free(done);
        return NULL;
    }
    for (uint32_t i = 0; i < g->nmpi; i++) {
        const cp_mpi *m = &g->mpi[i];
        done[i] = UINT32_MAX;
        if (m->request)
            ix[n++] = (req){g->lane[g->act[m->act].lane].process,
                            m->op == CP_MPI_WAIT, m->request, i};
    }
    if (n)
        qsort(ix, n, sizeof(*ix), by_request);
    for (uint32_t i = 0; i + 1 < n; i++)
        if (!ix[i].wait && ix[i + 1].wait &&
            ix[i].request == ix[i + 1].request &&
            ix[i].process == ix[i + 1].process)
            done[ix[i].event] = ix[i + 1].event;
    free(ix);
    return done;
}

/* The sends and receives of the graph. */
static bool gather(const cp_graph *g, const uint32_t *done, ends *sends,
                   ends *recvs)
{
    for (uint32_t i = 0; i < g->nmpi; i++) {
        const cp_mpi *m = &g->mpi[i];
        uint32_t a = m->act, d = done[i];
        int32_t me = cp_rank(g, a);
        uint64_t t = g->act[a].start;
        if (m->comm == UINT32_MAX || m->peer == -1)
            continue; /* an unknown communicator, MPI_PROC_NULL (-2, an
                         MPI_Irecv from MPI_ANY_SOURCE: its completion's) */
        bool ok = true;
        if (m->op == CP_MPI_SEND)
            ok = push(sends, (end){m->comm, me, m->peer, m->tag, t, a, a});
        else if (m->op == CP_MPI_ISEND)
            ok = push(sends, (end){m->comm, me, m->peer, m->tag, t, a,
                                   d == UINT32_MAX ? CP_NONE : g->mpi[d].act});
        else if (m->op == CP_MPI_RECV)
            ok = push(recvs, (end){m->comm, m->peer, me, m->tag, t, a, a});
        else if (m->op == CP_MPI_IRECV && d != UINT32_MAX &&
                 g->mpi[d].peer >= 0) /* source and tag: the completion's */
            ok = push(recvs, (end){m->comm, g->mpi[d].peer, me,
                                   g->mpi[d].tag, t, a, g->mpi[d].act});
        if (!ok)
            return false;
    }
    return true;
}

/* One message: the send's start to the receive's end; a late receiver's
 * posting to the send's completion. */
static gpuprof_status message(cp_graph *g, cp_deps *v, const end *s,
                              const end *r)
{
    gpuprof_status st = GPUPROF_OK;
    if (r->done != CP_NONE)
        st = cp_link(g, v, s->post, true, r->done, CP_D_LATE_SENDER);
    const cp_act *sd = s->done != CP_NONE ? &g->act[s->done] : NULL;
    uint64_t posted = g->act[r->post].start;
    if (st == GPUPROF_OK && sd && sd->start < posted && sd->end >= posted)
        st = cp_link(g, v, r->post, true, s->done, CP_D_LATE_RECEIVER);
    return st;
}

static gpuprof_status unmatched(const gpuprof_an_db *db, const end *k,
                                uint64_t sent, uint64_t got)
{
    char what[256];
    snprintf(what, sizeof(what),
             "rank %d sent %" PRIu64 " message(s) to rank %d (communicator "
             "%u, tag %d) of which rank %d received %" PRIu64,
             k->src, sent, k->dst, k->comm, k->tag, k->dst, got);
    return cp_mismatch(db, what);
}

gpuprof_status cp_messages(const gpuprof_an_db *db, cp_graph *g, cp_deps *v)
{
    ends s = {0}, r = {0};
    uint32_t *done = completions(g);
    gpuprof_status st =
        done && gather(g, done, &s, &r) ? GPUPROF_OK : nomem();
    free(done);
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
        if (i1 - i != j1 - j) {
            st = unmatched(db, k, i1 - i, j1 - j);
            break;
        }
        for (; i < i1 && st == GPUPROF_OK; i++, j++)
            st = message(g, v, &s.e[i], &r.e[j]);
    }
    free(s.e);
    free(r.e);
    return st;
}

/* ---- collectives ----------------------------------------------------------- */
typedef struct call {
    uint32_t comm, leader, size, seq;
    int32_t rank, root;
    uint8_t op;
    uint32_t act;
} call;

static bool collective(uint8_t op)
{
    return (op >= CP_MPI_BARRIER && op <= CP_MPI_ALLTOALL) ||
           op == CP_MPI_SCATTER;
}

static int by_member(const void *x, const void *y)
{
    const call *a = x, *b = y;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->leader != b->leader)
        return a->leader < b->leader ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->act > b->act) - (a->act < b->act); /* a lane's: in time */
}

static int by_operation(const void *x, const void *y)
{
    const call *a = x, *b = y;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->leader != b->leader)
        return a->leader < b->leader ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The collective calls, each numbered within its member's calls on its
 * communicator. */
static call *calls_of(const cp_graph *g, uint64_t *n)
{
    call *c = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*c));
    *n = 0;
    for (uint32_t i = 0; c && i < g->nmpi; i++) {
        const cp_mpi *m = &g->mpi[i];
        if (collective(m->op) && m->comm != UINT32_MAX)
            c[(*n)++] = (call){m->comm, (uint32_t)m->aux,
                               (uint32_t)(m->aux >> 32), 0,
                               cp_rank(g, m->act), m->peer, m->op, m->act};
    }
    if (!c || !*n)
        return c;
    qsort(c, *n, sizeof(*c), by_member);
    for (uint64_t i = 1; i < *n; i++)
        if (c[i].comm == c[i - 1].comm && c[i].leader == c[i - 1].leader &&
            c[i].rank == c[i - 1].rank)
            c[i].seq = c[i - 1].seq + 1;
    qsort(c, *n, sizeof(*c), by_operation);
    return c;
}

/* The members of one operation c[0 .. n): all there, all alike. */
static gpuprof_status check_op(const gpuprof_an_db *db, const call *c,
                               uint64_t n)
{
    char what[256];
    for (uint64_t i = 1; i < n; i++)
        if (c[i].op != c[0].op || c[i].root != c[0].root ||
            c[i].size != c[0].size) {
            snprintf(what, sizeof(what), "collective #%u on communicator %u: "
                     "rank %d called %s (root %d), rank %d %s (root %d)",
                     c[0].seq + 1, c[0].comm, c[0].rank, cp_mpi_name(c[0].op),
                     c[0].root, c[i].rank, cp_mpi_name(c[i].op), c[i].root);
            return cp_mismatch(db, what);
        }
    if (n != c[0].size) {
        snprintf(what, sizeof(what), "collective #%u on communicator %u "
                 "(%s): %" PRIu64 " of its %u members called it",
                 c[0].seq + 1, c[0].comm, cp_mpi_name(c[0].op), n, c[0].size);
        return cp_mismatch(db, what);
    }
    return GPUPROF_OK;
}

/* Who waits for whom in one operation (ranks.c's opening comment). */
static gpuprof_status operation(cp_graph *g, cp_deps *v, const call *c,
                                uint64_t n)
{
    uint8_t op = c[0].op;
    bool one_source = op == CP_MPI_BCAST || op == CP_MPI_SCATTER;
    bool one_waiter = op == CP_MPI_REDUCE || op == CP_MPI_GATHER;
    uint64_t last = UINT64_MAX; /* for large ones: the latest source */
    for (uint64_t i = 0; i < n; i++)
        if ((!one_source || c[i].rank == c[i].root) &&
            (last == UINT64_MAX ||
             g->act[c[i].act].start > g->act[c[last].act].start))
            last = i;
    gpuprof_status st = GPUPROF_OK;
    for (uint64_t w = 0; w < n && st == GPUPROF_OK; w++) {
        if (one_waiter && c[w].rank != c[w].root)
            continue;
        for (uint64_t s = 0; s < n && st == GPUPROF_OK; s++) {
            bool source = (!one_source || c[s].rank == c[s].root) &&
                          (n <= COLL_ALL_PAIRS || s == last);
            if (s != w && source)
                st = cp_link(g, v, c[s].act, true, c[w].act, CP_D_COLL);
        }
    }
    return st;
}

gpuprof_status cp_collectives(const gpuprof_an_db *db, cp_graph *g,
                              cp_deps *v)
{
    uint64_t n;
    call *c = calls_of(g, &n);
    if (!c)
        return nomem();
    gpuprof_status st = GPUPROF_OK;
    for (uint64_t i = 0, j; i < n && st == GPUPROF_OK; i = j) {
        for (j = i + 1; j < n && c[j].comm == c[i].comm &&
                        c[j].leader == c[i].leader && c[j].seq == c[i].seq;
             j++)
            ;
        st = check_op(db, c + i, j - i);
        if (st == GPUPROF_OK)
            st = operation(g, v, c + i, j - i);
    }
    free(c);
    return st;
}
