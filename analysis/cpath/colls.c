/*
 * colls.c - the collective operations of the ranks' joined graph (ranks.h;
 * how they match is in ranks.c's opening comment): each member's calls on
 * a communicator (its id and leader) numbered in posting order, blocking
 * and nonblocking alike (MPI orders them together); the calls with one
 * number are one operation, which must have every member, once, calling
 * the same thing with the same root (else the records are damaged). A
 * member's part starts when it called (a nonblocking one: posted) and ends
 * when it returned (a nonblocking one: the completion of its request,
 * cp_completions); a posting never seen completing is a source but waits
 * for nothing (counted by cp_completions), a call on a communicator the
 * wrappers do not know is left out, counted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/an_internal.h"
#include "ranks.h"

#define COLL_ALL_PAIRS 32 /* larger collectives: edges from the last only */

typedef struct call {
    uint32_t comm, leader, size, seq;
    int32_t rank, root, tag; /* tag: a scan's rank in the communicator */
    uint8_t op;
    uint32_t act, done; /* posted; ended (CP_NONE: never seen) */
    bool polled;        /* done: by a test, after others (cp_mpi_polled) */
} call;

bool cp_mpi_collective(uint8_t op)
{
    return (op >= CP_MPI_BARRIER && op <= CP_MPI_ALLTOALL) ||
           op == CP_MPI_SCATTER ||
           (op >= CP_MPI_IBARRIER && op <= CP_MPI_EXSCAN);
}

/* The blocking twin of a nonblocking collective; v-collectives as their
 * plain kin. */
static uint8_t shape(uint8_t op)
{
    static const uint8_t twin[] = {CP_MPI_BARRIER, CP_MPI_BCAST,
                                   CP_MPI_REDUCE, CP_MPI_ALLREDUCE,
                                   CP_MPI_GATHER, CP_MPI_ALLGATHER,
                                   CP_MPI_ALLTOALL, CP_MPI_SCATTER,
                                   CP_MPI_GATHER, CP_MPI_SCATTER};
    if (op >= CP_MPI_IBARRIER && op <= CP_MPI_GATHERV + 1)
        return twin[op - CP_MPI_IBARRIER];
    return op;
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
 * communicator; those on unknown communicators counted. */
static call *calls_of(const cp_graph *g, const uint32_t *done, uint64_t *n,
                      cp_mpi_left *left)
{
    call *c = malloc((g->nmpi ? g->nmpi : 1) * sizeof(*c));
    *n = 0;
    for (uint32_t i = 0; c && i < g->nmpi; i++) {
        const cp_mpi *m = &g->mpi[i];
        if (!cp_mpi_collective(m->op))
            continue;
        if (m->comm == UINT32_MAX) {
            left->unknown++;
            continue;
        }
        bool nb = m->op >= CP_MPI_IBARRIER && m->op <= CP_MPI_ISCATTER;
        bool seen = nb && done[i] != UINT32_MAX;
        uint32_t fin = !nb ? m->act : seen ? g->mpi[done[i]].act : CP_NONE;
        c[(*n)++] = (call){m->comm, (uint32_t)m->aux, (uint32_t)(m->aux >> 32),
                           0, cp_rank(g, m->act), m->peer, m->tag, m->op,
                           m->act, fin,
                           seen && cp_mpi_polled(&g->mpi[done[i]])};
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
static gpuprof_status check_op(const gpuprof_an_db *db, const cp_graph *g,
                               const call *c, uint64_t n)
{
    char what[256];
    for (uint64_t i = 0; i < n; i++)
        if (c[i].op != c[0].op || c[i].root != c[0].root ||
            c[i].size != c[0].size || c[i].root < -1 ||
            c[i].root >= (int32_t)g->nranks) {
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

/* Does member w's result wait for member s's contribution? */
static bool feeds(const call *s, const call *w, uint8_t kind)
{
    if (kind == CP_MPI_BCAST || kind == CP_MPI_SCATTER)
        return s->rank == s->root;
    if (kind == CP_MPI_REDUCE || kind == CP_MPI_GATHER)
        return w->rank == w->root;
    if (kind == CP_MPI_SCAN) /* the members before it, by their tag */
        return s->tag <= w->tag;
    if (kind == CP_MPI_EXSCAN)
        return s->tag < w->tag;
    return true;
}

/* Who waits for whom in one operation (ranks.c's opening comment). */
static gpuprof_status operation(cp_graph *g, cp_deps *v, const call *c,
                                uint64_t n)
{
    uint8_t kind = shape(c[0].op);
    bool one_source = kind == CP_MPI_BCAST || kind == CP_MPI_SCATTER;
    uint64_t last = UINT64_MAX; /* for large ones: the latest source */
    for (uint64_t i = 0; i < n; i++)
        if ((!one_source || c[i].rank == c[i].root) &&
            (last == UINT64_MAX ||
             g->act[c[i].act].start > g->act[c[last].act].start))
            last = i;
    gpuprof_status st = GPUPROF_OK;
    for (uint64_t w = 0; w < n && st == GPUPROF_OK; w++) {
        if (c[w].done == CP_NONE)
            continue;
        uint64_t latest = UINT64_MAX; /* of its sources */
        for (uint64_t s = 0; s < n && st == GPUPROF_OK; s++) {
            bool source = feeds(&c[s], &c[w], kind) &&
                          (n <= COLL_ALL_PAIRS || s == last ||
                           kind == CP_MPI_SCAN || kind == CP_MPI_EXSCAN);
            if (s == w || !source)
                continue;
            st = cp_link(g, v, c[s].act, true, c[w].done, CP_D_COLL);
            if (latest == UINT64_MAX ||
                g->act[c[s].act].start > g->act[c[latest].act].start)
                latest = s;
        }
        if (st == GPUPROF_OK && c[w].polled && latest != UINT64_MAX)
            st = cp_poll(g, c[latest].act, c[w].done);
    }
    return st;
}

gpuprof_status cp_collectives(const gpuprof_an_db *db, cp_graph *g,
                              cp_deps *v, const uint32_t *done)
{
    uint64_t n;
    call *c = calls_of(g, done, &n, &v->left);
    if (!c)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    gpuprof_status st = GPUPROF_OK;
    for (uint64_t i = 0, j; i < n && st == GPUPROF_OK; i = j) {
        for (j = i + 1; j < n && c[j].comm == c[i].comm &&
                        c[j].leader == c[i].leader && c[j].seq == c[i].seq;
             j++)
            ;
        st = check_op(db, g, c + i, j - i);
        if (st == GPUPROF_OK)
            st = operation(g, v, c + i, j - i);
    }
    free(c);
    return st;
}
