/*
 * wrap.c - the MPI calls libgpuprof-pmpi.so wraps (pmpi.h): each calls
 * its PMPI_ twin, timed, and records what it did as gpuprof_mpi_event(s)
 * of the calling thread: point-to-point (Send, Ssend, Recv, Isend, Irecv,
 * Sendrecv; Wait, Waitall, Waitany, Waitsome, Test completing requests),
 * collectives (Barrier, Bcast, Reduce, Allreduce, Gather, Allgather,
 * Alltoall, Scatter), communicators (Comm_dup, _split, _create: ids,
 * comm.c), Init and Finalize. Peers are translated to MPI_COMM_WORLD
 * ranks; a receive's peer, tag and bytes are the message's (its status).
 * Each runs inside a region named after its function (`ended`), so MPI
 * time, waits and blame land on contexts of their own. Anything else
 * passes straight to the MPI library.
 */
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

/* Each wrapper runs in a region named after its MPI function (opened
 * before the call, closed after its events), so an MPI call's time, its
 * waits and its blame have a calling context of their own, beneath the
 * caller's region. */
static int ended(const char *name, int rc)
{
    gpuprof_region_end(name);
    return rc;
}

/* ---- point-to-point ----------------------------------------------------- */
static void p2p(uint32_t op, MPI_Comm comm, int peer, int tag, uint64_t bytes,
                uint64_t req, uint64_t t0, uint64_t t1)
{
    gp_mpi_event(op, gp_mpi_comm_of(comm).id, gp_mpi_world_rank(comm, peer),
                 tag, bytes, req, 0, t0, t1);
}

/* A received message's event from its status. */
static void received(uint32_t op, MPI_Comm comm, const MPI_Status *st,
                     uint64_t req, uint64_t t0, uint64_t t1)
{
    int n = 0;
    PMPI_Get_count(st, MPI_BYTE, &n);
    p2p(op, comm, st->MPI_SOURCE, st->MPI_TAG,
        n == MPI_UNDEFINED || n < 0 ? 0 : (uint64_t)n, req, t0, t1);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Send");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Send(buf, count, type, dest, tag, comm);
    p2p(GPUPROF_MPI_SEND, comm, dest, tag, gp_mpi_bytes(count, type), 0, t0,
        gp_mpi_now());
    return ended("MPI_Send", rc);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest,
              int tag, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Ssend");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Ssend(buf, count, type, dest, tag, comm);
    p2p(GPUPROF_MPI_SEND, comm, dest, tag, gp_mpi_bytes(count, type), 0, t0,
        gp_mpi_now());
    return ended("MPI_Ssend", rc);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Recv");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
    uint64_t t1 = gp_mpi_now();
    if (rc == MPI_SUCCESS && st->MPI_SOURCE != MPI_PROC_NULL)
        received(GPUPROF_MPI_RECV, comm, st, 0, t0, t1);
    return ended("MPI_Recv", rc);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest,
              int tag, MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Isend");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Isend(buf, count, type, dest, tag, comm, req);
    uint64_t t1 = gp_mpi_now();
    uint64_t id = rc == MPI_SUCCESS
                      ? gp_mpi_req_add(*req, GPUPROF_MPI_ISEND, comm)
                      : 0;
    if (id)
        p2p(GPUPROF_MPI_ISEND, comm, dest, tag, gp_mpi_bytes(count, type), id,
            t0, t1);
    return ended("MPI_Isend", rc);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Irecv");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
    uint64_t t1 = gp_mpi_now();
    uint64_t id = rc == MPI_SUCCESS
                      ? gp_mpi_req_add(*req, GPUPROF_MPI_IRECV, comm)
                      : 0;
    if (id)
        p2p(GPUPROF_MPI_IRECV, comm, source,
            tag == MPI_ANY_TAG ? -1 : tag, gp_mpi_bytes(count, type), id, t0,
            t1);
    return ended("MPI_Irecv", rc);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
                 int stag, void *rbuf, int rcount, MPI_Datatype rtype,
                 int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Sendrecv");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount,
                           rtype, source, rtag, comm, st);
    uint64_t t1 = gp_mpi_now();
    if (rc != MPI_SUCCESS)
        return ended("MPI_Sendrecv", rc);
    if (dest != MPI_PROC_NULL)
        p2p(GPUPROF_MPI_SEND, comm, dest, stag, gp_mpi_bytes(scount, stype),
            0, t0, t1);
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        received(GPUPROF_MPI_RECV, comm, st, 0, t0, t1);
    return ended("MPI_Sendrecv", rc);
}

/* ---- completions ------------------------------------------------------- */
/* Request `r` (its handle before the call) completed with status st. */
static void completed(MPI_Request r, const MPI_Status *st, uint64_t t0,
                      uint64_t t1)
{
    gp_mpi_req q;
    if (!gp_mpi_req_take(r, &q))
        return;
    if (q.op == GPUPROF_MPI_IRECV && st->MPI_SOURCE != MPI_PROC_NULL)
        received(GPUPROF_MPI_WAIT, q.comm, st, q.id, t0, t1);
    else
        gp_mpi_event(GPUPROF_MPI_WAIT, gp_mpi_comm_of(q.comm).id, -1, -1, 0,
                     q.id, 0, t0, t1);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Wait");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request r = *req;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Wait(req, st);
    if (rc == MPI_SUCCESS && r != MPI_REQUEST_NULL)
        completed(r, st, t0, gp_mpi_now());
    return ended("MPI_Wait", rc);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Test");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request r = *req;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Test(req, flag, st);
    if (rc == MPI_SUCCESS && *flag && r != MPI_REQUEST_NULL)
        completed(r, st, t0, gp_mpi_now());
    return ended("MPI_Test", rc);
}

/* Copies of n request handles and room for n statuses (the caller's when
 * it gave some); 0 when out of memory (then nothing is recorded). */
static int before(int n, const MPI_Request *reqs, MPI_Status *statuses,
                  MPI_Request **copy, MPI_Status **st)
{
    size_t k = n > 0 ? (size_t)n : 1;
    *copy = malloc(k * sizeof(**copy));
    *st = statuses == MPI_STATUSES_IGNORE ? malloc(k * sizeof(**st))
                                          : statuses;
    if (!*copy || !*st) {
        free(*copy);
        if (statuses == MPI_STATUSES_IGNORE)
            free(*st);
        return 0;
    }
    memcpy(*copy, reqs, (size_t)(n > 0 ? n : 0) * sizeof(**copy));
    return 1;
}

static void after(MPI_Request *copy, MPI_Status *st, MPI_Status *statuses)
{
    free(copy);
    if (statuses == MPI_STATUSES_IGNORE)
        free(st);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    gpuprof_region_begin("MPI_Waitall");
    MPI_Request *copy;
    MPI_Status *st;
    if (!before(n, reqs, statuses, &copy, &st))
        return ended("MPI_Waitall", PMPI_Waitall(n, reqs, statuses));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Waitall(n, reqs, st);
    uint64_t t1 = gp_mpi_now();
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
        if (copy[i] != MPI_REQUEST_NULL)
            completed(copy[i], &st[i], t0, t1);
    after(copy, st, statuses);
    return ended("MPI_Waitall", rc);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Waitany");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request *copy = malloc((n > 0 ? (size_t)n : 1) * sizeof(*copy));
    if (!copy)
        return ended("MPI_Waitany", PMPI_Waitany(n, reqs, index, status));
    memcpy(copy, reqs, (size_t)(n > 0 ? n : 0) * sizeof(*copy));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Waitany(n, reqs, index, st);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 &&
        *index < n)
        completed(copy[*index], st, t0, gp_mpi_now());
    free(copy);
    return ended("MPI_Waitany", rc);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    gpuprof_region_begin("MPI_Waitsome");
    MPI_Request *copy;
    MPI_Status *st;
    if (!before(n, reqs, statuses, &copy, &st))
        return ended("MPI_Waitsome", PMPI_Waitsome(n, reqs, outcount, indices, statuses));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, st);
    uint64_t t1 = gp_mpi_now();
    for (int i = 0; rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED &&
                    i < *outcount;
         i++)
        if (indices[i] >= 0 && indices[i] < n)
            completed(copy[indices[i]], &st[i], t0, t1);
    after(copy, st, statuses);
    return ended("MPI_Waitsome", rc);
}

/* ---- collectives ------------------------------------------------------- */
static void coll(uint32_t op, MPI_Comm comm, int root, uint64_t bytes,
                 uint64_t t0)
{
    uint64_t t1 = gp_mpi_now();
    gp_mpi_comm c = gp_mpi_comm_of(comm);
    gp_mpi_event(op, c.id, root < 0 ? -1 : gp_mpi_world_rank(comm, root), -1,
                 bytes, 0,
                 (uint64_t)(uint32_t)c.size << 32 | (uint32_t)c.leader, t0,
                 t1);
}

int MPI_Barrier(MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Barrier");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Barrier(comm);
    coll(GPUPROF_MPI_BARRIER, comm, -1, 0, t0);
    return ended("MPI_Barrier", rc);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root,
              MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Bcast");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    coll(GPUPROF_MPI_BCAST, comm, root, gp_mpi_bytes(count, type), t0);
    return ended("MPI_Bcast", rc);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
               MPI_Op op, int root, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Reduce");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    coll(GPUPROF_MPI_REDUCE, comm, root, gp_mpi_bytes(count, type), t0);
    return ended("MPI_Reduce", rc);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Allreduce");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    coll(GPUPROF_MPI_ALLREDUCE, comm, -1, gp_mpi_bytes(count, type), t0);
    return ended("MPI_Allreduce", rc);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
               int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Gather");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    coll(GPUPROF_MPI_GATHER, comm, root, gp_mpi_bytes(scount, stype), t0);
    return ended("MPI_Gather", rc);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Allgather");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    coll(GPUPROF_MPI_ALLGATHER, comm, -1, gp_mpi_bytes(rcount, rtype), t0);
    return ended("MPI_Allgather", rc);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Alltoall");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    int size = 0;
    PMPI_Comm_size(comm, &size);
    coll(GPUPROF_MPI_ALLTOALL, comm, -1,
         gp_mpi_bytes(rcount, rtype) * (uint64_t)(size > 0 ? size : 0), t0);
    return ended("MPI_Alltoall", rc);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Scatter");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root,
                          comm);
    coll(GPUPROF_MPI_SCATTER, comm, root, gp_mpi_bytes(rcount, rtype), t0);
    return ended("MPI_Scatter", rc);
}

/* ---- communicators, init, finalize ------------------------------------- */
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Comm_dup");
    int rc = PMPI_Comm_dup(comm, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return ended("MPI_Comm_dup", rc);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Comm_split");
    int rc = PMPI_Comm_split(comm, color, key, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return ended("MPI_Comm_split", rc);
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Comm_create");
    int rc = PMPI_Comm_create(comm, group, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return ended("MPI_Comm_create", rc);
}

static void initialized(uint64_t t0)
{
    int rank = 0, size = 0;
    gp_mpi_comm_setup();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    gp_mpi_event(GPUPROF_MPI_INIT, 0, rank, -1, 0, 0, (uint64_t)size, t0,
                 gp_mpi_now());
}

int MPI_Init(int *argc, char ***argv)
{
    gpuprof_region_begin("MPI_Init");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        initialized(t0);
    return ended("MPI_Init", rc);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    gpuprof_region_begin("MPI_Init_thread");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        initialized(t0);
    return ended("MPI_Init_thread", rc);
}

int MPI_Finalize(void)
{
    gpuprof_region_begin("MPI_Finalize");
    uint64_t t = gp_mpi_now();
    gp_mpi_event(GPUPROF_MPI_FINALIZE, 0, -1, -1, 0, 0, 0, t, t);
    return ended("MPI_Finalize", PMPI_Finalize());
}
