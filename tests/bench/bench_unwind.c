/*
 * bench_unwind.c - the cost of a CPU call path, per frame unwound.
 *
 *   unwind_ns_per_frame         the hook's capture (gpuprof__callpath_cached)
 *                               from a 30-deep stack into a thread's CCT, in
 *                               a loop from one call site, as a loop of
 *                               launches takes it: unwind, loader check,
 *                               compare with the last path (nothing new to
 *                               insert)
 *   unwind_miss_ns_per_frame    the same path with nothing cached
 *                               (gpuprof__callpath): every frame's module
 *                               and node looked up in a tree that has them
 *   unw_backtrace_ns_per_frame  libunwind's unw_backtrace alone, the same
 *                               stack: the same-run baseline
 *   unwind_frames               frames the baseline unwinds
 * Each figure is its time over the frames its own unwind walked (the
 * capture's own frames included). Medians of 9 runs of 20,000 captures,
 * the three kinds interleaved.
 */
#include <libunwind.h>
#include <stdio.h>

#include "bench/bench.h"
#include "core/unwind.h"

#define DEPTH 30
#define N 20000
#define REPS 9

enum kind { CACHED, MISS, RAW };

static gp_cct tree;
static gp_path_cache cache;
static uint32_t unknown;
static int frames;
static void *buf[GP_MAX_FRAMES];

__attribute__((noinline)) static double at_depth(int d, enum kind k)
{
    if (d > 0) {
        double r = at_depth(d - 1, k);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        if (k == CACHED)
            gpuprof__callpath_cached(&tree, 0, 1, &unknown, &cache);
        else if (k == MISS)
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
    double v[3][REPS];
    for (int k = 0; k < 3; k++)
        at_depth(DEPTH, (enum kind)k); /* warm: the path exists after */
    for (int i = 0; i < REPS; i++)
        for (int k = 0; k < 3; k++)
            v[k][i] = at_depth(DEPTH, (enum kind)k);
    /* The captures walk two frames the baseline does not: the capture's
     * own (gpuprof__unwind_capture, gpuprof__callpath[_cached]). */
    int walked = frames + 2;
    printf("BENCH unwind_ns_per_frame %.2f ns\n",
           bench_median(v[CACHED], REPS) / walked);
    printf("BENCH unwind_miss_ns_per_frame %.2f ns\n",
           bench_median(v[MISS], REPS) / walked);
    printf("BENCH unw_backtrace_ns_per_frame %.2f ns\n",
           bench_median(v[RAW], REPS) / frames);
    printf("BENCH unwind_frames %d frames\n", frames);
    gpuprof__cct_destroy(&tree);
    return unknown != 0;
}
