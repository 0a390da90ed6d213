/*
 * gen_measure.c - synthetic measurements for the scripts (support/gen.h):
 *
 *   gen_measure DIR PROCS THREADS SEED [PID0 [spmd]]
 *
 * writes PROCS profile files of THREADS threads each into DIR (which must
 * exist), with random calling context trees (regions, frames of made-up
 * modules, GPU operations and kernels) and values. `spmd`: every thread
 * runs the same tree shape, so contexts are shared as in an SPMD program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gen.h"

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7 || (argc == 7 && strcmp(argv[6], "spmd"))) {
        fprintf(stderr,
                "usage: gen_measure DIR PROCS THREADS SEED [PID0 [spmd]]\n");
        return 2;
    }
    gen_opts o = {.procs = (uint32_t)strtoul(argv[2], NULL, 10),
                  .threads = (uint32_t)strtoul(argv[3], NULL, 10),
                  .seed = (uint32_t)strtoul(argv[4], NULL, 10),
                  .fanout = 4,
                  .depth = 6,
                  .pid0 = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 100,
                  .spmd = argc > 6};
    gen_truth t = {0};
    int rc = gen_write(argv[1], &o, &t);
    gen_truth_free(&t);
    if (rc) {
        fprintf(stderr, "gen_measure: cannot write into %s\n", argv[1]);
        return 1;
    }
    return 0;
}
