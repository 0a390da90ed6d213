/*
 * gen_pc_measure.c - writes a measurement directory with the H100
 * fixture's PC samples (tests/support/pcfixture.h) for the scripts and
 * the benchmarks:  gen_pc_measure FIXTURES DIR [SCALE]
 */
#include <stdio.h>
#include <stdlib.h>

#include "support/pcfixture.h"

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: gen_pc_measure FIXTURES DIR [SCALE]\n");
        return 2;
    }
    unsigned scale = argc == 4 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
    return pcfix_write(argv[1], argv[2], scale ? scale : 1) ? 1 : 0;
}
