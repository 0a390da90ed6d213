/*
 * mpi_more_prog.c - three MPI ranks using the MPI calls real programs add
 * to the plain ones (a Cartesian communicator, an MPI_Testall polling
 * loop, MPI_Request_free on a send, MPI_Iallreduce + MPI_Wait,
 * MPI_Allgatherv), in a scripted pattern whose critical path across ranks
 * is computed by hand, for tests/scripts/cpath-mpi.sh. Built with mpicc
 * and linked with libgpuprof's objects and libgpuprof-pmpi's wrappers. U
 * = 1 unit (MPI_CPATH_MS, default 10 ms); the ranks' work is sleeping.
 *
 * After MPI_Init, MPI_Cart_create (1-D, 3, no reordering) and a barrier
 * that aligns the ranks (t = 0), all messages on the Cartesian
 * communicator:
 *   rank 0: region "a0" 3U; MPI_Isend to rank 1 (tag 1), MPI_Wait (at
 *           ~3U); MPI_Iallreduce, MPI_Wait (until ~9U); region "c0" 2U;
 *           MPI_Allgatherv (the last to arrive, ~11U).
 *   rank 1: MPI_Irecv from rank 0 (tag 1) at 0, then MPI_Testall every
 *           U/10 until it completes (~3U); region "a1" 2U; MPI_Isend to
 *           rank 2 (tag 2) at ~5U, MPI_Request_free of it (its completion
 *           is never seen: the one record the analysis leaves out);
 *           MPI_Iallreduce, MPI_Wait (until ~9U); MPI_Allgatherv.
 *   rank 2: MPI_Recv from rank 1 (tag 2), posted at 0 (LateSender ~5U);
 *           region "a2" 4U; MPI_Iallreduce (the last, ~9U), MPI_Wait;
 *           MPI_Allgatherv.
 * Then rank 0 sends rank 2 two messages through persistent requests (one
 * MPI_Send_init, one MPI_Recv_init, each started twice), a barrier and
 * MPI_Finalize. Critical path from the aligning
 * barrier's end, ~11U: rank 0 a0 (3U), the message to rank 1's completing
 * MPI_Testall, a1 (2U), the message to rank 2's MPI_Recv, a2 (4U), rank 2's
 * MPI_Iallreduce posting to rank 0's MPI_Wait, c0 (2U), rank 0's
 * MPI_Allgatherv that ends everyone's.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpuprof.h"

static uint64_t U = 10000000ull;

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull),
                          (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts))
        ;
}

static void region_sleep(const char *name, uint64_t ns)
{
    gpuprof_region_begin(name);
    sleep_ns(ns);
    gpuprof_region_end(name);
}

static int x0 = 42, x1, x2 = 7;

static void phase_a(int rank, MPI_Comm cart)
{
    MPI_Request r;
    if (rank == 0) {
        region_sleep("a0", 3 * U);
        MPI_Isend(&x0, 1, MPI_INT, 1, 1, cart, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        int done = 0;
        MPI_Irecv(&x1, 1, MPI_INT, 0, 1, cart, &r);
        while (MPI_Testall(1, &r, &done, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
               !done)
            sleep_ns(U / 10);
        region_sleep("a1", 2 * U);
        MPI_Isend(&x2, 1, MPI_INT, 2, 2, cart, &r);
        MPI_Request_free(&r);
    } else {
        MPI_Recv(&x1, 1, MPI_INT, 1, 2, cart, MPI_STATUS_IGNORE);
        region_sleep("a2", 4 * U);
    }
}

static void phase_b(int rank, MPI_Comm cart)
{
    MPI_Request r;
    int in = rank, sum = 0, counts[3] = {1, 2, 3}, displs[3] = {0, 1, 3};
    int got[6];
    MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rank == 0)
        region_sleep("c0", 2 * U);
    int mine[3] = {rank, rank, rank};
    MPI_Allgatherv(mine, counts[rank], MPI_INT, got, counts, displs, MPI_INT,
                   cart);
    if (sum != 3 || got[0] != 0 || got[2] != 1 || got[5] != 2) {
        fprintf(stderr, "mpi_more_prog: wrong results\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* Persistent requests: rank 0 sends rank 2 two messages (tag 3) through
 * one MPI_Send_init, rank 2 takes them through one MPI_Recv_init; each
 * MPI_Start is a posting of its own, so both messages match (the note
 * still counts one record). */
static void phase_c(int rank)
{
    MPI_Request r;
    int v = 5;
    if (rank == 1)
        return;
    if (rank == 0)
        MPI_Send_init(&v, 1, MPI_INT, 2, 3, MPI_COMM_WORLD, &r);
    else
        MPI_Recv_init(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &r);
    for (int i = 0; i < 2; i++) {
        MPI_Start(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&r);
}

int main(int argc, char **argv)
{
    if (getenv("MPI_CPATH_MS") && atoi(getenv("MPI_CPATH_MS")) > 0)
        U = 1000000ull * (uint64_t)atoi(getenv("MPI_CPATH_MS"));
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "mpi_more_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0, dims[1] = {3}, periods[1] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        fprintf(stderr, "mpi_more_prog: run it on 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Barrier(MPI_COMM_WORLD);
    phase_a(rank, cart);
    phase_b(rank, cart);
    phase_c(rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return gpuprof_finalize() == GPUPROF_OK ? 0 : 1;
}
