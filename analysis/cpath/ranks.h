/*
 * ranks.h - what ranks.c (joining the ranks' graphs) shares with
 * messages.c (matching their messages and collectives): the MPI
 * dependencies gathered before they are added sorted by waiter, and the
 * error for records that contradict each other. Internal to analysis/cpath.
 */
#ifndef GPUPROF_AN_CPATH_RANKS_H
#define GPUPROF_AN_CPATH_RANKS_H

#include "cpath.h"

typedef struct cp_deps {
    cp_dep *d;
    uint64_t n, cap;
    cp_mpi_left left; /* what messages.c and colls.c left out */
} cp_deps;

/* An edge from src_act's start (or end) to waiter's end, when that goes
 * forward in measured time, and its dependency of `type` (CP_D_*). */
gpuprof_status cp_link(cp_graph *g, cp_deps *v, uint32_t src_act,
                       bool src_start, uint32_t waiter, uint8_t type);
/* A completion by an MPI_Test* that others of the same request found not
 * done before (the program polled; gpuprof_be_mpi_event's WAIT aux). */
static inline bool cp_mpi_polled(const cp_mpi *m)
{
    return (m->aux >> 32 & 1) && (uint32_t)m->aux > 0;
}
/* A polled completion `test` of what src_act's start made ready: an edge
 * (CP_E_POLL, as a GPU query's) from that start to the test's start, when
 * it goes forward, so that the path follows the source rather than the
 * polling loop (the poll interval stays the program's). */
gpuprof_status cp_poll(cp_graph *g, uint32_t src_act, uint32_t test);
/* GPUPROF_E_CORRUPT: "<dir>/trace.db: <what>: MPI records missing or
 * damaged; no critical path across ranks". */
gpuprof_status cp_mismatch(const gpuprof_an_db *db, const char *what);
/* The rank an activity ran on. */
static inline int32_t cp_rank(const cp_graph *g, uint32_t a)
{
    return g->lane[g->act[a].lane].rank;
}

/* messages.c: per MPI event of g, the event of its completion (postings
 * of requests: ISEND, IRECV, the nonblocking collectives), else
 * UINT32_MAX; requests checked (damaged: GPUPROF_E_CORRUPT), what never
 * completed or completes nothing counted in v->left. *out freed by the
 * caller. */
gpuprof_status cp_completions(const gpuprof_an_db *db, const cp_graph *g,
                              cp_deps *v, uint32_t **out);
/* messages.c: point-to-point messages matched and linked. */
gpuprof_status cp_messages(const gpuprof_an_db *db, cp_graph *g, cp_deps *v,
                           const uint32_t *done);
/* colls.c: collective operations matched and linked. */
gpuprof_status cp_collectives(const gpuprof_an_db *db, cp_graph *g,
                              cp_deps *v, const uint32_t *done);
/* colls.c: is op a (blocking or nonblocking) collective? */
bool cp_mpi_collective(uint8_t op);

#endif /* GPUPROF_AN_CPATH_RANKS_H */
