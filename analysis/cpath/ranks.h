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
} cp_deps;

/* An edge from src_act's start (or end) to waiter's end, when that goes
 * forward in measured time, and its dependency of `type` (CP_D_*). */
gpuprof_status cp_link(cp_graph *g, cp_deps *v, uint32_t src_act,
                       bool src_start, uint32_t waiter, uint8_t type);
/* GPUPROF_E_CORRUPT: "<dir>/trace.db: <what>: MPI records missing or
 * damaged; no critical path across ranks". */
gpuprof_status cp_mismatch(const gpuprof_an_db *db, const char *what);
/* The rank an activity ran on. */
static inline int32_t cp_rank(const cp_graph *g, uint32_t a)
{
    return g->lane[g->act[a].lane].rank;
}

/* messages.c: point-to-point messages matched and linked. */
gpuprof_status cp_messages(const gpuprof_an_db *db, cp_graph *g, cp_deps *v);
/* messages.c: collective operations matched and linked. */
gpuprof_status cp_collectives(const gpuprof_an_db *db, cp_graph *g,
                              cp_deps *v);

#endif /* GPUPROF_AN_CPATH_RANKS_H */
