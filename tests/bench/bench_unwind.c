/*
 * bench_unwind.c - the cost of a CPU call path.
 *
 *   unwind_ns_per_frame         gpuprof__callpath from a 30-deep stack into
 *                               a thread's CCT (unwind, module lookup, tree
 *                               insert: the path already exists, as in a
 *                               loop of launches), per frame
 *   unw_backtrace_ns_per_frame  libunwind's unw_backtrace alone, the same
 *                               stack: the same-run baseline
 * Medians of 9 runs of 20,000 captures.
 */
#include <libunwind.h>
#include <stdio.h>

#include "bench/bench.h"
#include "core/unwind.h"

#define DEPTH 30
#define N 20000
#define REPS 9

static gp_cct tree;
static uint32_t unknown;
static int frames;
static void *buf[GP_MAX_FRAMES];

__attribute__((noinline)) static double at_depth(int d, int capture)
{
    if (d > 0) {
        double r = at_depth(d - 1, capture);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        if (capture)
            gpuprof__callpath(&tree, 0, 1, &unknown);
        else
            frames = unw_backtrace(buf, GP_MAX_FRAMES);
    }
    return (bench_now_s() - t0) * 1e9 / N;
}

int main(void)
{
    if (!gpuprof__cct_init(&tree))
        return 1;
    double cap[REPS], raw[REPS];
    at_depth(DEPTH, 1);
    for (int i = 0; i < REPS; i++) {
        cap[i] = at_depth(DEPTH, 1);
        raw[i] = at_depth(DEPTH, 0);
    }
    printf("BENCH unwind_ns_per_frame %.2f ns\n", bench_median(cap, REPS) / (frames - 1));
    printf("BENCH unw_backtrace_ns_per_frame %.2f ns\n", bench_median(raw, REPS) / frames);
    printf("BENCH unwind_frames %d frames\n", frames);
    gpuprof__cct_destroy(&tree);
    return unknown != 0;
}
