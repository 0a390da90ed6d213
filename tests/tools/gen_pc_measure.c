/*
 * gen_pc_measure.c - writes a measurement directory with the H100
 * fixture's PC samples (tests/support/pcfixture.h) for the scripts and
 * the benchmarks:
 *
 *   gen_pc_measure FIXTURES DIR [SCALE [KERNEL=LAUNCHES,BLOCKS,THREADS,REGS,SHARED ...]]
 *
 * With launches (per launch: blocks, threads per block, registers per
 * thread, shared bytes per block), those kernels' launch configurations
 * and the H100 as the profile's CUDA device 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/pcfixture.h"

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 3 + 1 + 16) {
        fprintf(stderr, "usage: gen_pc_measure FIXTURES DIR [SCALE "
                        "[KERNEL=LAUNCHES,BLOCKS,THREADS,REGS,SHARED ...]]\n");
        return 2;
    }
    unsigned scale = argc >= 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    pcfix_launch l[16];
    size_t n = 0;
    for (int i = 4; i < argc; i++, n++) {
        char *eq = strchr(argv[i], '=');
        unsigned long long v[5];
        if (!eq || sscanf(eq + 1, "%llu,%llu,%llu,%llu,%llu", &v[0], &v[1],
                          &v[2], &v[3], &v[4]) != 5) {
            fprintf(stderr, "gen_pc_measure: bad launch '%s'\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        l[n] = (pcfix_launch){argv[i], v[0], v[1], v[2], v[3], v[4]};
    }
    return pcfix_write_launches(argv[1], argv[2], scale ? scale : 1, l, n,
                                n > 0)
               ? 1
               : 0;
}
