/*
 * wrap_more.c - the rest of the MPI calls libgpuprof-pmpi.so wraps
 * (pmpi.h; the first ones are wrap.c's, whose helpers these share):
 *   completions  MPI_Testall, _Testany, _Testsome (a WAIT per request
 *                they completed, as MPI_Waitall and its kin; a test's
 *                WAIT says so, with how many tests found the request not
 *                done before: GP_MPI_TESTED, pmpi.h);
 *                MPI_Request_free of an active request (REQUEST_FREE: its
 *                completion is never seen, the analysis counts it);
 *   persistent   MPI_Send_init, _Ssend_init, _Bsend_init, _Rsend_init,
 *                _Recv_init note what each start will post; MPI_Start and
 *                _Startall record that posting as the ISEND or IRECV it
 *                is, with a new request id each time, so its completion
 *                and its message match as a nonblocking call's do;
 *   probes       MPI_Probe, MPI_Iprobe that found one (PROBE: the
 *                message's source, tag and bytes; the receive that takes
 *                it is what the analysis matches);
 *   collectives  the nonblocking ones (MPI_Ibarrier, _Ibcast, _Ireduce,
 *                _Iallreduce, _Igather, _Iallgather, _Ialltoall,
 *                _Iscatter: posted with a request; the WAIT of that
 *                request completes them) and MPI_Gatherv, _Scatterv,
 *                _Allgatherv, _Alltoallv, _Reduce_scatter,
 *                _Reduce_scatter_block, _Scan, _Exscan;
 *   communicators  MPI_Comm_split_type, MPI_Cart_create, MPI_Cart_sub
 *                (agreed over the parent), MPI_Comm_create_group and
 *                MPI_Intercomm_merge (agreed over the new one; comm.c).
 * Bytes of a v-collective: what this rank sends (the root of a
 * scatterv: all it sends). A scan's tag is the caller's rank in its
 * communicator (it waits for the members before it).
 */
#include <stdlib.h>
#include <string.h>

#include "pmpi.h"

/* ---- completions ------------------------------------------------------- */
/* A test that completed nothing: each of its requests polled once. */
static void polled(int n, const MPI_Request *copy)
{
    for (int i = 0; i < n; i++)
        if (copy[i] != MPI_REQUEST_NULL)
            gp_mpi_req_polled(copy[i]);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    gpuprof_region_begin("MPI_Testall");
    MPI_Request *copy;
    MPI_Status *st;
    if (!gp_mpi_before(n, reqs, statuses, &copy, &st))
        return gp_mpi_ended("MPI_Testall",
                            PMPI_Testall(n, reqs, flag, statuses));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Testall(n, reqs, flag, st);
    uint64_t t1 = gp_mpi_now();
    for (int i = 0; rc == MPI_SUCCESS && *flag && i < n; i++)
        if (copy[i] != MPI_REQUEST_NULL)
            gp_mpi_completed(copy[i], &st[i], t0, t1, 1);
    if (rc == MPI_SUCCESS && !*flag)
        polled(n, copy);
    gp_mpi_after(copy, st, statuses);
    return gp_mpi_ended("MPI_Testall", rc);
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag,
                MPI_Status *status)
{
    gpuprof_region_begin("MPI_Testany");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request *copy = malloc((n > 0 ? (size_t)n : 1) * sizeof(*copy));
    if (!copy)
        return gp_mpi_ended("MPI_Testany",
                            PMPI_Testany(n, reqs, index, flag, status));
    memcpy(copy, reqs, (size_t)(n > 0 ? n : 0) * sizeof(*copy));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Testany(n, reqs, index, flag, st);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED &&
        *index >= 0 && *index < n)
        gp_mpi_completed(copy[*index], st, t0, gp_mpi_now(), 1);
    else if (rc == MPI_SUCCESS && !*flag)
        polled(n, copy);
    free(copy);
    return gp_mpi_ended("MPI_Testany", rc);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    gpuprof_region_begin("MPI_Testsome");
    MPI_Request *copy;
    MPI_Status *st;
    if (!gp_mpi_before(n, reqs, statuses, &copy, &st))
        return gp_mpi_ended("MPI_Testsome", PMPI_Testsome(n, reqs, outcount,
                                                          indices, statuses));
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Testsome(n, reqs, outcount, indices, st);
    uint64_t t1 = gp_mpi_now();
    for (int i = 0; rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED &&
                    i < *outcount;
         i++)
        if (indices[i] >= 0 && indices[i] < n)
            gp_mpi_completed(copy[indices[i]], &st[i], t0, t1, 1);
    if (rc == MPI_SUCCESS && *outcount == 0)
        polled(n, copy);
    gp_mpi_after(copy, st, statuses);
    return gp_mpi_ended("MPI_Testsome", rc);
}

int MPI_Request_free(MPI_Request *req)
{
    gpuprof_region_begin("MPI_Request_free");
    MPI_Request r = *req;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Request_free(req);
    gp_mpi_req q;
    if (rc == MPI_SUCCESS && r != MPI_REQUEST_NULL && gp_mpi_req_free(r, &q))
        gp_mpi_event(GPUPROF_MPI_REQUEST_FREE, gp_mpi_comm_of(q.comm).id, -1,
                     -1, 0, q.id, 0, t0, gp_mpi_now());
    return gp_mpi_ended("MPI_Request_free", rc);
}

/* ---- persistent requests ----------------------------------------------- */
static int persist(int rc, MPI_Request *req, uint32_t op, MPI_Comm comm,
                   int peer, int tag, uint64_t bytes)
{
    if (rc == MPI_SUCCESS)
        gp_mpi_req_persist(*req, (gp_mpi_req){0, op, comm, 1, peer, tag,
                                              bytes, 0});
    return rc;
}

#define SEND_INIT(NAME)                                                        \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest,    \
                   int tag, MPI_Comm comm, MPI_Request *req)                   \
    {                                                                          \
        return persist(PMPI_##NAME(buf, count, type, dest, tag, comm, req),    \
                       req, GPUPROF_MPI_ISEND, comm, dest, tag,                \
                       gp_mpi_bytes(count, type));                             \
    }
SEND_INIT(Send_init)
SEND_INIT(Ssend_init)
SEND_INIT(Bsend_init)
SEND_INIT(Rsend_init)

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source,
                  int tag, MPI_Comm comm, MPI_Request *req)
{
    return persist(PMPI_Recv_init(buf, count, type, source, tag, comm, req),
                   req, GPUPROF_MPI_IRECV, comm, source,
                   tag == MPI_ANY_TAG ? -1 : tag, gp_mpi_bytes(count, type));
}

/* A started persistent request's posting, as MPI_Isend's or _Irecv's. */
static void started(MPI_Request r, uint64_t t0, uint64_t t1)
{
    gp_mpi_req q;
    if (gp_mpi_req_start(r, &q))
        gp_mpi_event(q.op, gp_mpi_comm_of(q.comm).id,
                     gp_mpi_world_rank(q.comm, q.peer), q.tag, q.bytes, q.id,
                     0, t0, t1);
}

int MPI_Start(MPI_Request *req)
{
    gpuprof_region_begin("MPI_Start");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Start(req);
    if (rc == MPI_SUCCESS)
        started(*req, t0, gp_mpi_now());
    return gp_mpi_ended("MPI_Start", rc);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
    gpuprof_region_begin("MPI_Startall");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Startall(n, reqs);
    uint64_t t1 = gp_mpi_now();
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
        started(reqs[i], t0, t1);
    return gp_mpi_ended("MPI_Startall", rc);
}

/* ---- probes ------------------------------------------------------------ */
static void probed(MPI_Comm comm, const MPI_Status *st, uint64_t t0)
{
    int n = 0;
    PMPI_Get_count(st, MPI_BYTE, &n);
    gp_mpi_event(GPUPROF_MPI_PROBE, gp_mpi_comm_of(comm).id,
                 gp_mpi_world_rank(comm, st->MPI_SOURCE), st->MPI_TAG,
                 n == MPI_UNDEFINED || n < 0 ? 0 : (uint64_t)n, 0, 0, t0,
                 gp_mpi_now());
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    gpuprof_region_begin("MPI_Probe");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Probe(source, tag, comm, st);
    if (rc == MPI_SUCCESS && st->MPI_SOURCE != MPI_PROC_NULL)
        probed(comm, st, t0);
    return gp_mpi_ended("MPI_Probe", rc);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
               MPI_Status *status)
{
    gpuprof_region_begin("MPI_Iprobe");
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Iprobe(source, tag, comm, flag, st);
    if (rc == MPI_SUCCESS && *flag && st->MPI_SOURCE != MPI_PROC_NULL)
        probed(comm, st, t0);
    return gp_mpi_ended("MPI_Iprobe", rc);
}

/* ---- nonblocking collectives ------------------------------------------- */
static int icoll(const char *name, int rc, uint32_t op, MPI_Comm comm,
                 int root, uint64_t bytes, MPI_Request *req, uint64_t t0)
{
    uint64_t t1 = gp_mpi_now();
    uint64_t id = rc == MPI_SUCCESS ? gp_mpi_req_add(*req, op, comm) : 0;
    gp_mpi_comm c = gp_mpi_comm_of(comm);
    if (id)
        gp_mpi_event(op, c.id,
                     root < 0 ? -1 : gp_mpi_world_rank(comm, root), -1, bytes,
                     id, (uint64_t)(uint32_t)c.size << 32 |
                             (uint32_t)c.leader,
                     t0, t1);
    return gp_mpi_ended(name, rc);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Ibarrier");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Ibarrier", PMPI_Ibarrier(comm, req),
                 GPUPROF_MPI_IBARRIER, comm, -1, 0, req, t0);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root,
               MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Ibcast");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Ibcast", PMPI_Ibcast(buf, count, type, root, comm, req),
                 GPUPROF_MPI_IBCAST, comm, root, gp_mpi_bytes(count, type),
                 req, t0);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Ireduce");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Ireduce",
                 PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req),
                 GPUPROF_MPI_IREDUCE, comm, root, gp_mpi_bytes(count, type),
                 req, t0);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
                   MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    gpuprof_region_begin("MPI_Iallreduce");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Iallreduce",
                 PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req),
                 GPUPROF_MPI_IALLREDUCE, comm, -1, gp_mpi_bytes(count, type),
                 req, t0);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                MPI_Request *req)
{
    gpuprof_region_begin("MPI_Igather");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Igather",
                 PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root,
                              comm, req),
                 GPUPROF_MPI_IGATHER, comm, root, gp_mpi_bytes(scount, stype),
                 req, t0);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype,
                   void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm,
                   MPI_Request *req)
{
    gpuprof_region_begin("MPI_Iallgather");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Iallgather",
                 PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype,
                                 comm, req),
                 GPUPROF_MPI_IALLGATHER, comm, -1, gp_mpi_bytes(rcount, rtype),
                 req, t0);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype,
                  void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm,
                  MPI_Request *req)
{
    gpuprof_region_begin("MPI_Ialltoall");
    int size = 0;
    PMPI_Comm_size(comm, &size);
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Ialltoall",
                 PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm,
                                req),
                 GPUPROF_MPI_IALLTOALL, comm, -1,
                 gp_mpi_bytes(rcount, rtype) * (uint64_t)(size > 0 ? size : 0),
                 req, t0);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, int root, MPI_Comm comm,
                 MPI_Request *req)
{
    gpuprof_region_begin("MPI_Iscatter");
    uint64_t t0 = gp_mpi_now();
    return icoll("MPI_Iscatter",
                 PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root,
                               comm, req),
                 GPUPROF_MPI_ISCATTER, comm, root, gp_mpi_bytes(rcount, rtype),
                 req, t0);
}

/* ---- v-collectives and scans ------------------------------------------- */
/* The sum of counts[0 .. size of comm) elements of type in bytes. */
static uint64_t vbytes(const int *counts, MPI_Datatype type, MPI_Comm comm)
{
    int size = 0;
    uint64_t b = 0;
    PMPI_Comm_size(comm, &size);
    for (int i = 0; counts && i < size; i++)
        b += gp_mpi_bytes(counts[i], type);
    return b;
}

static int is_root(MPI_Comm comm, int root)
{
    int me = -1;
    PMPI_Comm_rank(comm, &me);
    return me == root;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                const int rcounts[], const int displs[], MPI_Datatype rtype,
                int root, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Gatherv");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
                          root, comm);
    gp_mpi_coll(GPUPROF_MPI_GATHERV, comm, root, gp_mpi_bytes(scount, stype),
                t0);
    return gp_mpi_ended("MPI_Gatherv", rc);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
                 MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Scatterv");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype,
                           root, comm);
    gp_mpi_coll(GPUPROF_MPI_SCATTERV, comm, root,
                is_root(comm, root) ? vbytes(scounts, stype, comm)
                                    : gp_mpi_bytes(rcount, rtype),
                t0);
    return gp_mpi_ended("MPI_Scatterv", rc);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype,
                   void *rbuf, const int rcounts[], const int displs[],
                   MPI_Datatype rtype, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Allgatherv");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs,
                             rtype, comm);
    gp_mpi_coll(GPUPROF_MPI_ALLGATHERV, comm, -1, gp_mpi_bytes(scount, stype),
                t0);
    return gp_mpi_ended("MPI_Allgatherv", rc);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
                  MPI_Datatype stype, void *rbuf, const int rcounts[],
                  const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Alltoallv");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
                            rdispls, rtype, comm);
    gp_mpi_coll(GPUPROF_MPI_ALLTOALLV, comm, -1,
                vbytes(scounts, stype, comm), t0);
    return gp_mpi_ended("MPI_Alltoallv", rc);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
                       MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Reduce_scatter");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
    gp_mpi_coll(GPUPROF_MPI_REDUCE_SCATTER, comm, -1,
                vbytes(rcounts, type, comm), t0);
    return gp_mpi_ended("MPI_Reduce_scatter", rc);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                             MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Reduce_scatter_block");
    int size = 0;
    PMPI_Comm_size(comm, &size);
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
    gp_mpi_coll(GPUPROF_MPI_REDUCE_SCATTER_BLOCK, comm, -1,
                gp_mpi_bytes(rcount, type) * (uint64_t)(size > 0 ? size : 0),
                t0);
    return gp_mpi_ended("MPI_Reduce_scatter_block", rc);
}

/* A scan's event: tag = the caller's rank in comm (whose results it
 * waits for: those before it). */
static void scanned(uint32_t op, MPI_Comm comm, uint64_t bytes, uint64_t t0)
{
    int me = -1;
    PMPI_Comm_rank(comm, &me);
    gp_mpi_comm c = gp_mpi_comm_of(comm);
    gp_mpi_event(op, c.id, -1, me, bytes, 0,
                 (uint64_t)(uint32_t)c.size << 32 | (uint32_t)c.leader, t0,
                 gp_mpi_now());
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
             MPI_Op op, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Scan");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Scan(sbuf, rbuf, count, type, op, comm);
    scanned(GPUPROF_MPI_SCAN, comm, gp_mpi_bytes(count, type), t0);
    return gp_mpi_ended("MPI_Scan", rc);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type,
               MPI_Op op, MPI_Comm comm)
{
    gpuprof_region_begin("MPI_Exscan");
    uint64_t t0 = gp_mpi_now();
    int rc = PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
    scanned(GPUPROF_MPI_EXSCAN, comm, gp_mpi_bytes(count, type), t0);
    return gp_mpi_ended("MPI_Exscan", rc);
}

/* ---- communicators ------------------------------------------------------ */
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
                        MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Comm_split_type");
    int rc = PMPI_Comm_split_type(comm, type, key, info, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return gp_mpi_ended("MPI_Comm_split_type", rc);
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[],
                    const int periods[], int reorder, MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Cart_create");
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return gp_mpi_ended("MPI_Cart_create", rc);
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Cart_sub");
    int rc = PMPI_Cart_sub(comm, remain, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new(comm, made);
    return gp_mpi_ended("MPI_Cart_sub", rc);
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                          MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Comm_create_group");
    int rc = PMPI_Comm_create_group(comm, group, tag, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new_within(made);
    return gp_mpi_ended("MPI_Comm_create_group", rc);
}

int MPI_Intercomm_merge(MPI_Comm inter, int high, MPI_Comm *made)
{
    gpuprof_region_begin("MPI_Intercomm_merge");
    int rc = PMPI_Intercomm_merge(inter, high, made);
    if (rc == MPI_SUCCESS)
        gp_mpi_comm_new_within(made);
    return gp_mpi_ended("MPI_Intercomm_merge", rc);
}
