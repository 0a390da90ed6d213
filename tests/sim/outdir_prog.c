/*
 * outdir_prog.c - a traced run on the simulated GPU for
 * tests/scripts/output-faults.sh: `outdir_prog KERNELS [GO_FILE]` measures
 * (settings from the environment) KERNELS kernels of 100 ns on one stream
 * beneath a region, then, given GO_FILE, says "waiting" and waits until
 * that file exists, then finalizes. It exits 0 when the final profile was
 * written, 1 when not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backends/sim/sim.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long n = atol(argv[1]);
    gp_sim_config sc = {1, 64, 1, 100, false, false};
    if (gpuprof__sim_register(&sc) != GPUPROF_OK ||
        gpuprof_init(NULL) != GPUPROF_OK)
        return 2;
    gpuprof_region_begin("work");
    for (long i = 0; i < n; i++)
        gpuprof__sim_kernel(0, "k", 100);
    gpuprof_region_end("work");
    gpuprof__sim_sync();
    if (argc > 2) {
        printf("waiting\n");
        fflush(stdout);
        struct timespec ms = {0, 10000000};
        while (access(argv[2], F_OK) != 0)
            nanosleep(&ms, NULL);
    }
    return gpuprof_finalize() == GPUPROF_OK ? 0 : 1;
}
