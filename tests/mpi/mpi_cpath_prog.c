/*
 * mpi_cpath_prog.c - three MPI ranks exchanging in a scripted pattern,
 * with GPU work on the realtime simulated GPU (the host really waits for
 * the virtual device), whose critical path across ranks and MPI wait
 * states are computed by hand, for tests/scripts/cpath-mpi.sh. Built with
 * mpicc and linked with libgpuprof's objects and libgpuprof-pmpi's
 * wrappers (lib/pmpi/: "by linking"). U = 1 unit (MPI_CPATH_MS, default
 * 10 ms); the ranks' own work is sleeping, so three ranks fit two cores.
 *
 * After MPI_Init and a barrier that aligns the ranks (t = 0):
 *   rank 0: region "r0_prep" 2U; kernel k0 (6U) on stream 0, synchronize
 *           stream 0 (waits ~6U); MPI_Send to rank 1 (tag 7) at ~8U;
 *           MPI_Barrier (arrives ~8U).
 *   rank 1: MPI_Recv from rank 0 (tag 7), posted at 0: LateSender ~8U;
 *           region "r1_work" 3U; MPI_Isend to rank 2 (tag 9) at ~11U,
 *           MPI_Wait; MPI_Barrier (arrives ~11U).
 *   rank 2: MPI_Irecv from rank 1 (tag 9) at 0; region "r2_own" 4U;
 *           MPI_Wait (from ~4U: LateSender ~7U); kernel k2 (5U),
 *           synchronize; MPI_Barrier (arrives ~16U, the last).
 * The barrier: rank 0 waits ~8U, rank 1 ~5U (WaitAtCollective).
 * Critical path from the aligning barrier's end, ~16U: rank 0 r0_prep
 * (2U), k0 (6U), the message to rank 1, rank 1 r1_work (3U), the message
 * to rank 2, rank 2 k2 (5U), rank 2's barrier that ends everyone's.
 *
 * MPI_CPATH_LIE=1: rank 2 also records a receive from rank 1 (tag 9) that
 * never happened (gpuprof_be_mpi_event), records that contradict rank 1's:
 * the analysis must refuse them.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backends/sim/sim.h"
#include "gpuprof.h"
#include "gpuprof_backend.h"

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

static void rank0(void)
{
    int x = 42;
    region_sleep("r0_prep", 2 * U);
    gpuprof__sim_kernel(0, "k0", 6 * U);
    gpuprof__sim_stream_sync(0);
    MPI_Send(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
}

static void rank1(void)
{
    int x = 0;
    MPI_Request r;
    MPI_Recv(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    region_sleep("r1_work", 3 * U);
    MPI_Isend(&x, 1, MPI_INT, 2, 9, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void rank2(void)
{
    int x = 0;
    MPI_Request r;
    MPI_Irecv(&x, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &r);
    region_sleep("r2_own", 4 * U);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    gpuprof__sim_kernel(0, "k2", 5 * U);
    gpuprof__sim_stream_sync(0);
    if (getenv("MPI_CPATH_LIE")) {
        gpuprof_mpi_event e = GPUPROF_MPI_EVENT_INIT;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        e.op = GPUPROF_MPI_RECV;
        e.peer = 1;
        e.tag = 9;
        e.bytes = 4;
        e.start_ns = e.end_ns =
            (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        gpuprof_be_mpi_event(&e);
    }
}

int main(int argc, char **argv)
{
    if (getenv("MPI_CPATH_MS") && atoi(getenv("MPI_CPATH_MS")) > 0)
        U = 1000000ull * (uint64_t)atoi(getenv("MPI_CPATH_MS"));
    gp_sim_config cfg = {0};
    cfg.realtime = true;
    cfg.batch = 1;
    gpuprof__sim_register(&cfg);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "mpi_cpath_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        fprintf(stderr, "mpi_cpath_prog: run it on 3 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        rank0();
    else if (rank == 1)
        rank1();
    else
        rank2();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return gpuprof_finalize() == GPUPROF_OK ? 0 : 1;
}
