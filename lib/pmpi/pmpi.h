/*
 * pmpi.h - libgpuprof-pmpi.so, the optional MPI interposition library:
 * each MPI call of the program (through the PMPI profiling interface,
 * with LD_PRELOAD or linked before libmpi) becomes an event of its calling
 * thread's trace (gpuprof_be_mpi_event, include/gpuprof_backend.h; trace
 * format 1.4 MPI_RECORDS), so the analysis can join the ranks' event
 * dependency graphs (analysis/cpath/ranks.c). The only files built with
 * mpicc next to analysis/mpi/; libgpuprof itself never links MPI.
 *
 * Two rooms: comm.c (an id per communicator, the same on every member,
 * with its ranks in MPI_COMM_WORLD; the requests of nonblocking calls
 * until they complete) and wrap.c (the wrappers). Internal to the
 * library (gp_mpi_ prefix, hidden).
 */
#ifndef GPUPROF_PMPI_H
#define GPUPROF_PMPI_H

#include <mpi.h>
#include <stdint.h>

#include "gpuprof_backend.h"

#define GP_HIDE __attribute__((visibility("hidden")))

/* What the wrappers know of a communicator. */
typedef struct gp_mpi_comm {
    uint32_t id;
    int size;
    int leader; /* the lowest world rank among its members */
} gp_mpi_comm;

/* Called from MPI_Init*: the keyval and MPI_COMM_WORLD's id (0). */
GP_HIDE void gp_mpi_comm_setup(void);
/* comm's id and shape (an unknown communicator: id UINT32_MAX). */
GP_HIDE gp_mpi_comm gp_mpi_comm_of(MPI_Comm comm);
/* A communicator's rank r in world terms (-1 for MPI_PROC_NULL, -2 for
 * MPI_ANY_SOURCE, r itself when unknown). */
GP_HIDE int gp_mpi_world_rank(MPI_Comm comm, int r);
/* A new communicator made by a collective call over `parent`: agree on
 * its id over the parent (collective: every member of parent calls it),
 * attach it, record a GPUPROF_MPI_COMM event. */
GP_HIDE void gp_mpi_comm_new(MPI_Comm parent, MPI_Comm *made);

/* Requests of nonblocking calls: what was posted, until it completes. */
typedef struct gp_mpi_req {
    uint64_t id;
    uint32_t op; /* GPUPROF_MPI_ISEND or _IRECV */
    MPI_Comm comm;
} gp_mpi_req;
/* Notes a posted request; returns its id (0 when the table is full). */
GP_HIDE uint64_t gp_mpi_req_add(MPI_Request r, uint32_t op, MPI_Comm comm);
/* Takes a request out when it completed (found: 1, *out set). */
GP_HIDE int gp_mpi_req_take(MPI_Request r, gp_mpi_req *out);

/* CLOCK_MONOTONIC ns. */
GP_HIDE uint64_t gp_mpi_now(void);
/* Records one event. */
GP_HIDE void gp_mpi_event(uint32_t op, uint32_t comm, int peer, int tag,
                          uint64_t bytes, uint64_t request, uint64_t aux,
                          uint64_t t0, uint64_t t1);
/* count elements of type in bytes (0 when unknown). */
GP_HIDE uint64_t gp_mpi_bytes(int count, MPI_Datatype type);

#endif /* GPUPROF_PMPI_H */
