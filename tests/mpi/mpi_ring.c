/*
 * mpi_ring.c - a plain MPI program that knows nothing of libgpuprof, for
 * `gpuprof run --mpi` (libgpuprof-pmpi.so through LD_PRELOAD;
 * tests/scripts/cpath-mpi.sh): each rank sends a token to the next rank
 * around a ring (MPI_Sendrecv), then MPI_Allreduce and MPI_Barrier on a
 * duplicate of MPI_COMM_WORLD.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, token, sum = 0;
    MPI_Comm dup;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 3, &token, 1, MPI_INT,
                 (rank + size - 1) % size, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, dup);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
