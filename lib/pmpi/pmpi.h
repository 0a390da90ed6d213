/*
 * pmpi.h - libgpuprof-pmpi.so, the optional MPI interposition library:
 * each MPI call of the program (through the PMPI profiling interface,
 * with LD_PRELOAD or linked before libmpi) becomes an event of its calling
 * thread's trace (gpuprof_be_mpi_event, include/gpuprof_backend.h; trace
 * format 1.4 MPI_RECORDS), so the analysis can join the ranks' event
 * dependency graphs (analysis/cpath/ranks.c). The only files built with
 * mpicc next to analysis/mpi/; libgpuprof itself never links MPI.
 *
 * Three rooms: comm.c (an id per communicator, the same on every member,
 * with its ranks in MPI_COMM_WORLD; the requests of nonblocking calls
 * until they complete), wrap.c (the wrappers of point-to-point calls,
 * their completions, the first collectives, communicators) and
 * wrap_more.c (the other completions, persistent requests, probes,
 * nonblocking and v- collectives, more communicators). Internal to the
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

/* A new communicator made by a collective call over itself only (its
 * members: MPI_Comm_create_group, MPI_Intercomm_merge): the same, agreed
 * over *made. */
GP_HIDE void gp_mpi_comm_new_within(MPI_Comm *made);

/* Requests of nonblocking calls: what was posted, until it completes.
 * Persistent requests (MPI_Send_init, _Recv_init) stay in the table from
 * their init to their MPI_Request_free; each MPI_Start activates them
 * with a new id (0 while inactive). */
typedef struct gp_mpi_req {
    uint64_t id;
    uint32_t op; /* GPUPROF_MPI_ISEND, _IRECV, or a nonblocking collective */
    MPI_Comm comm;
    int persistent; /* then what each start posts: */
    int peer, tag;  /* as asked (the communicator's ranks) */
    uint64_t bytes;
    uint32_t polls; /* MPI_Test* calls that found it not done */
} gp_mpi_req;
/* Notes a posted request; returns its id (0 when the table is full). */
GP_HIDE uint64_t gp_mpi_req_add(MPI_Request r, uint32_t op, MPI_Comm comm);
/* Notes a persistent request (inactive); 0 when the table is full. */
GP_HIDE int gp_mpi_req_persist(MPI_Request r, gp_mpi_req q);
/* MPI_Start of r: a persistent request activated with a new id (1, *out
 * set), else 0. */
GP_HIDE int gp_mpi_req_start(MPI_Request r, gp_mpi_req *out);
/* Takes a request out when it completed (found and active: 1, *out set;
 * a persistent one stays, inactive). */
GP_HIDE int gp_mpi_req_take(MPI_Request r, gp_mpi_req *out);
/* An MPI_Test* call found r not done (counted while it is active). */
GP_HIDE void gp_mpi_req_polled(MPI_Request r);
/* MPI_Request_free of r: out of the table whatever it is; 1 and *out set
 * when it was active. */
GP_HIDE int gp_mpi_req_free(MPI_Request r, gp_mpi_req *out);

/* CLOCK_MONOTONIC ns. */
GP_HIDE uint64_t gp_mpi_now(void);
/* Records one event. */
GP_HIDE void gp_mpi_event(uint32_t op, uint32_t comm, int peer, int tag,
                          uint64_t bytes, uint64_t request, uint64_t aux,
                          uint64_t t0, uint64_t t1);
/* count elements of type in bytes (0 when unknown). */
GP_HIDE uint64_t gp_mpi_bytes(int count, MPI_Datatype type);

/* A WAIT's aux: bit 32 when an MPI_Test* completed it, and the low 32
 * bits the MPI_Test* calls that found it not done before (the program
 * polled: the analysis follows the sender, not the polling loop). */
#define GP_MPI_TESTED (1ull << 32)
/* wrap.c, for wrap_more.c: the region closed, rc returned; a request
 * (its handle before the call) that completed with status st (`tested`:
 * by an MPI_Test*); a
 * blocking collective's event (root -1: none) from t0 until now; room
 * for n handles and statuses around a multiple completion (0: out of
 * memory, record nothing) and its release. */
GP_HIDE int gp_mpi_ended(const char *name, int rc);
GP_HIDE void gp_mpi_completed(MPI_Request r, const MPI_Status *st,
                              uint64_t t0, uint64_t t1, int tested);
GP_HIDE void gp_mpi_coll(uint32_t op, MPI_Comm comm, int root,
                         uint64_t bytes, uint64_t t0);
GP_HIDE int gp_mpi_before(int n, const MPI_Request *reqs,
                          MPI_Status *statuses, MPI_Request **copy,
                          MPI_Status **st);
GP_HIDE void gp_mpi_after(MPI_Request *copy, MPI_Status *st,
                          MPI_Status *statuses);

#endif /* GPUPROF_PMPI_H */
