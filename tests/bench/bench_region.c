/*
 * bench_region.c - the cost of a region begin+end pair, against the
 * same-run baseline of two clock reads (a region pair cannot be cheaper).
 *
 * Prints BENCH lines: clock_pair_ns, region_pair_ns, region_pair_handle_ns,
 * region_pair_paused_ns, region_pair_2threads_ns (each of two threads at
 * once: no shared cache line on the hot path), and the ratio of a pair to
 * the clock baseline. Each figure is the median of 15 runs of 1M pairs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "bench/bench.h"

#define REPS 15
#define N 1000000

static volatile uint64_t sink;


static double run_clock(void)
{
    double t0 = bench_now_s();
    uint64_t s = 0;
    for (int i = 0; i < N; i++) {
        uint64_t a = gp_ticks();
        uint64_t b = gp_ticks();
        s += b - a;
    }
    sink = s;
    return (bench_now_s() - t0) * 1e9 / N;
}

static double run_named(void)
{
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        gpuprof_region_begin("solver_iteration");
        gpuprof_region_end("solver_iteration");
    }
    return (bench_now_s() - t0) * 1e9 / N;
}

static gpuprof_region handle;

static double run_handle(void)
{
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        gpuprof_region_begin_handle(handle);
        gpuprof_region_end_handle(handle);
    }
    return (bench_now_s() - t0) * 1e9 / N;
}

static double measure(double (*fn)(void))
{
    double v[REPS];
    fn(); /* warm up: first-use paths, caches */
    for (int i = 0; i < REPS; i++)
        v[i] = fn();
    return bench_median(v, REPS);
}

static void *two_threads_body(void *arg)
{
    gpuprof_region_begin("thread");
    *(double *)arg = measure(run_named);
    gpuprof_region_end("thread");
    return NULL;
}

int main(void)
{
    char dir[] = "/tmp/gpuprof-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.output_dir = dir;
    o.backends = "none";
    if (gpuprof_init(&o) != GPUPROF_OK)
        return 1;
    gpuprof_region_register("solver_iteration_h", &handle);
    gpuprof_region_begin("main");

    double clk = measure(run_clock);
    double named = measure(run_named);
    double hnd = measure(run_handle);
    double both[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, two_threads_body, &both[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    gpuprof_stop();
    double paused = measure(run_named);
    gpuprof_start();
    gpuprof_region_end("main");
    gpuprof_finalize();

    printf("BENCH clock_pair_ns %.2f ns\n", clk);
    printf("BENCH region_pair_ns %.2f ns\n", named);
    printf("BENCH region_pair_handle_ns %.2f ns\n", hnd);
    printf("BENCH region_pair_paused_ns %.2f ns\n", paused);
    printf("BENCH region_pair_2threads_ns %.2f ns\n",
           both[0] > both[1] ? both[0] : both[1]);
    printf("BENCH region_pair_vs_clock_ratio %.2f ratio\n", named / clk);
    printf("BENCH clock_is_tsc %d bool\n", gpuprof__clock_mode == GP_CLOCK_TSC);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
