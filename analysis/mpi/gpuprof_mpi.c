/*
 * gpuprof_mpi.c - the `gpuprof-mpi` command: `gpuprof analyze` across the
 * ranks of an MPI job, writing the same database bytes.
 *
 *   mpirun -np N gpuprof-mpi analyze [-j N] [--memory SIZE]
 *                                    [--no-structure] [--strict] [-o DB]
 *                                    DIR...
 *
 * The only file built with mpicc and linked with MPI: it fills the
 * library's table of collective operations (analysis/coll/an_coll.h) with MPI
 * calls and runs gpuprof__an_analysis_run_ranks on every rank; the
 * analysis library itself never links MPI. How the work is split:
 * doc/ANALYSIS.md, "On several processes". -j and --memory are per rank;
 * the default budget is shared by the ranks of a node.
 * Messages come from rank 0 only; every rank exits 1 when the run failed
 * (the same message on all), 2 on bad usage.
 *
 * Messages are sent on a duplicate of MPI_COMM_WORLD; byte counts above
 * INT_MAX go in pieces.
 */
#define _GNU_SOURCE /* sched_getaffinity (an_cli.h) */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli/an_cli.h"
#include "../coll/an_coll.h"
#include "gpuprof_analysis.h"

/* ---- the collective operations with MPI ------------------------------- */
#define PIECE (1 << 30) /* bytes per message, below INT_MAX */
enum { TAG_SIZE = 1, TAG_DATA = 2 };

static MPI_Comm comm;

/* A rank that waits in a collective for a slower one would spin there
 * (MPI's default when it has a core per rank), taking a core from
 * whatever else runs -- its own threads, the other ranks on a shared or
 * oversubscribed node. Operations here are started non-blocking and
 * waited for politely: polled a while, then with sleeps that grow to
 * POLL_MAX_NS, each poll moving MPI's progress on. */
#define POLL_SPINS 64
#define POLL_MAX_NS 200000L

static int wait_for(MPI_Request *rq)
{
    long ns = 1000;
    for (int n = 0;; n++) {
        int done = 0;
        if (MPI_Test(rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 1;
        if (done)
            return 0;
        if (n < POLL_SPINS)
            continue;
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns * 2 < POLL_MAX_NS ? ns * 2 : POLL_MAX_NS;
    }
}

static int m_barrier(void *ctx)
{
    (void)ctx;
    MPI_Request rq;
    return MPI_Ibarrier(comm, &rq) != MPI_SUCCESS || wait_for(&rq);
}

static MPI_Op mpi_op(gpuprof__an_op op)
{
    return op == GPUPROF__AN_MIN   ? MPI_MIN
           : op == GPUPROF__AN_MAX ? MPI_MAX
                                   : MPI_SUM;
}

static int m_allreduce(void *ctx, uint64_t *v, size_t n, gpuprof__an_op op)
{
    (void)ctx;
    for (size_t at = 0; at < n;) { /* counts are ints */
        int k = n - at < PIECE / 8 ? (int)(n - at) : PIECE / 8;
        MPI_Request rq;
        if (MPI_Iallreduce(MPI_IN_PLACE, v + at, k, MPI_UINT64_T, mpi_op(op),
                           comm, &rq) != MPI_SUCCESS ||
            wait_for(&rq))
            return 1;
        at += (size_t)k;
    }
    return 0;
}

static int m_exscan(void *ctx, uint64_t *v, size_t n)
{
    (void)ctx;
    int rank;
    MPI_Comm_rank(comm, &rank);
    uint64_t *in = malloc((n ? n : 1) * sizeof(*in));
    if (!in)
        return 1;
    memcpy(in, v, n * sizeof(*v));
    int rc = 0;
    for (size_t at = 0; at < n && !rc;) {
        int k = n - at < PIECE / 8 ? (int)(n - at) : PIECE / 8;
        MPI_Request rq;
        rc = MPI_Iexscan(in + at, v + at, k, MPI_UINT64_T, MPI_SUM, comm,
                         &rq) != MPI_SUCCESS ||
             wait_for(&rq);
        at += (size_t)k;
    }
    free(in);
    if (rank == 0) /* MPI leaves rank 0's result undefined */
        memset(v, 0, n * sizeof(*v));
    return rc;
}

static int send_blob(const void *blob, uint64_t size, int to)
{
    if (MPI_Send(&size, 1, MPI_UINT64_T, to, TAG_SIZE, comm) != MPI_SUCCESS)
        return 1;
    for (uint64_t at = 0; at < size;) {
        int k = size - at < PIECE ? (int)(size - at) : PIECE;
        if (MPI_Send((const char *)blob + at, k, MPI_BYTE, to, TAG_DATA,
                     comm) != MPI_SUCCESS)
            return 1;
        at += (uint64_t)k;
    }
    return 0;
}

/* A blob from `from`; *out NULL when it could not be held (received and
 * dropped: the sender must not wait), -1 when MPI failed. */
static int recv_blob(int from, void **out, uint64_t *size)
{
    MPI_Request rq; /* rank 0 may wait long for a slower rank's tree */
    if (MPI_Irecv(size, 1, MPI_UINT64_T, from, TAG_SIZE, comm, &rq) !=
            MPI_SUCCESS ||
        wait_for(&rq))
        return -1;
    char *b = *size ? malloc(*size) : NULL;
    char *sink = NULL;
    for (uint64_t at = 0; at < *size;) {
        int k = *size - at < PIECE ? (int)(*size - at) : PIECE;
        if (!b && !sink && !(sink = malloc((size_t)PIECE)))
            return -1;
        if (MPI_Recv(b ? b + at : sink, k, MPI_BYTE, from, TAG_DATA, comm,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            free(b);
            free(sink);
            return -1;
        }
        at += (uint64_t)k;
    }
    free(sink);
    *out = b;
    return 0;
}

static int m_gather(void *ctx, const void *blob, uint64_t size,
                    gpuprof__an_blob_fn each, void *arg)
{
    (void)ctx;
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    if (rank != 0)
        return send_blob(blob, size, 0);
    each(arg, 0, blob, size);
    for (int k = 1; k < n; k++) { /* one at a time: rank 0 holds one */
        void *b = NULL;
        uint64_t got = 0;
        if (recv_blob(k, &b, &got))
            return 1;
        /* Out of memory here: an empty blob, which the library refuses. */
        each(arg, k, b, b ? got : 0);
        free(b);
    }
    return 0;
}

static int m_bcast(void *ctx, int root, void **blob, uint64_t *size)
{
    (void)ctx;
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Request rq; /* the others may wait long for the root */
    if (MPI_Ibcast(size, 1, MPI_UINT64_T, root, comm, &rq) != MPI_SUCCESS ||
        wait_for(&rq))
        return 1;
    char *b = rank == root ? *blob : NULL;
    if (rank != root && *size && !(b = malloc(*size)))
        MPI_Abort(comm, 1); /* the others wait for it in the pieces */
    for (uint64_t at = 0; at < *size;) {
        int k = *size - at < PIECE ? (int)(*size - at) : PIECE;
        if (MPI_Bcast(b + at, k, MPI_BYTE, root, comm) != MPI_SUCCESS) {
            if (rank != root)
                free(b);
            return 1;
        }
        at += (uint64_t)k;
    }
    if (rank != root)
        *blob = b;
    return 0;
}

/* ---- the command ------------------------------------------------------- */
static int rank0;

static int usage(int rc)
{
    if (rank0)
        fprintf(rc ? stderr : stdout,
                "usage: mpirun [-np N] gpuprof-mpi analyze [-j N] "
                "[--memory SIZE] [--no-structure]\n"
                "                                  [--strict] [-o DB] DIR...\n"
                "       gpuprof-mpi --version\n"
                "Aggregates measurement directories into an analysis database "
                "on every rank\nof the MPI job: the same database as "
                "`gpuprof analyze`. -j and --memory are\nper rank; inputs "
                "and DB must be on a file system every rank sees.\n");
    return rc;
}

/* GPUPROF_MPI_PHASES=FILE (for benchmarks): rank 0 writes there where the
 * ranks' time went -- `init` (MPI_Init on rank 0), `run` (the whole
 * analysis) and each step of it (an_coll.h), in seconds, the slowest
 * rank's -- one `NAME SECONDS` line each. Collective: every rank calls it
 * after the run (the run's status is the same on all). */
static double init_s;

static void phases(const gpuprof_an_analysis *a, double run_s)
{
    double v[GPUPROF__AN_PHASES + 1];
    for (unsigned i = 0; i < GPUPROF__AN_PHASES; i++)
        v[i] = gpuprof__an_phase_s(a, i);
    v[GPUPROF__AN_PHASES] = run_s;
    if (MPI_Allreduce(MPI_IN_PLACE, v, GPUPROF__AN_PHASES + 1, MPI_DOUBLE,
                      MPI_MAX, comm) != MPI_SUCCESS)
        return;
    const char *path = getenv("GPUPROF_MPI_PHASES");
    FILE *f = rank0 && path && *path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "init %.6f\nrun %.6f\n", init_s, v[GPUPROF__AN_PHASES]);
    for (unsigned i = 0; i < GPUPROF__AN_PHASES; i++)
        fprintf(f, "%s %.6f\n", gpuprof__an_phase_name(i), v[i]);
    fclose(f);
}

static int analyze(int argc, char **argv, int rank, int size)
{
    /* Every rank parses the same argv; rank 0 speaks. */
    cli_analyze o;
    int rc = cli_analyze_parse(argc, argv, "gpuprof-mpi", rank0, &o);
    if (rc)
        return rc < 0 ? usage(2) : rc;
    gpuprof_an_analysis *a;
    gpuprof_status st = cli_analysis_new(&o, argc, argv, &a);
    bool tty = rank0 && isatty(2);
    MPI_Comm node; /* the ranks on this node share its memory */
    int local = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                            &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    if (a)
        gpuprof__an_analysis_set_node_ranks(a, (unsigned)local);
    if (st == GPUPROF_OK && rank0 && o.verbose)
        cli_say_memory(a, &o, (unsigned)local); /* rank 0's node's */
    if (st == GPUPROF_OK && tty)
        st = gpuprof_an_analysis_set_progress(
            a, cli_show_progress, (void *)"gpuprof-mpi analyze (rank 0)");
    /* The settings are the same on every rank (the same argv), so a bad
     * one fails every rank here, before any collective. */
    if (st == GPUPROF_OK) {
        gpuprof__an_coll c = {rank,        size,     NULL,     m_barrier,
                              m_allreduce, m_exscan, m_gather, m_bcast};
        double t0 = MPI_Wtime();
        st = gpuprof__an_analysis_run_ranks(a, &c);
        phases(a, MPI_Wtime() - t0);
    }
    gpuprof_an_analysis_free(a);
    if (st != GPUPROF_OK) {
        if (rank0)
            fprintf(stderr, "%sgpuprof-mpi: %s\n", tty ? "\n" : "",
                    gpuprof_an_last_error());
        return 1;
    }
    if (rank0)
        printf("gpuprof-mpi: database written to %s (%d ranks)\n", o.out, size);
    return 0;
}

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "gpuprof-mpi: MPI_Init failed\n");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    init_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    rank0 = rank == 0;
    int rc;
    if (argc == 2 &&
        (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        if (rank0)
            printf("gpuprof-mpi %s\n", GPUPROF_VERSION_STRING);
        rc = 0;
    } else if (argc == 2 &&
               (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
                !strcmp(argv[1], "help"))) {
        rc = usage(0);
    } else if (argc >= 3 && !strcmp(argv[1], "analyze")) {
        rc = analyze(argc, argv, rank, size);
    } else {
        rc = usage(2);
    }
    fflush(stdout);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return rc;
}
