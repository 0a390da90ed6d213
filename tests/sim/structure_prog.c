/*
 * structure_prog.c - a small program built with `-g -O2` whose GPU work is
 * launched from a function inlined into another, for
 * tests/scripts/structure.sh: the analysis must attribute the launches to
 * outer() at the line where it calls mid(), then to the inlined mid() at
 * the line of the launch. It prints those lines (__LINE__ on the line of
 * each call) so the script knows what to expect.
 */
#include <stdio.h>

#include "backends/sim/sim.h"

static volatile int line_mid_call, line_launch, line_outer_call;

static inline __attribute__((always_inline)) void mid(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        line_launch = __LINE__; gpuprof__sim_kernel(0, "inlined_work", 1000);
    }
}

void outer(unsigned n);

__attribute__((noinline)) void outer(unsigned n)
{
    line_mid_call = __LINE__; mid(n);
    __asm__ volatile("" ::: "memory"); /* no tail call: outer stays */
}

int main(void)
{
    gpuprof__sim_register(NULL);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "structure_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    line_outer_call = __LINE__; outer(5);
    gpuprof__sim_sync();
    gpuprof_status st = gpuprof_finalize();
    printf("outer_call %d\nmid_call %d\nlaunch %d\n", line_outer_call,
           line_mid_call, line_launch);
    return st == GPUPROF_OK ? 0 : 1;
}
