/*
 * bench_cpusample.c - CPU samples (GPUPROF_CPU_SAMPLING, lib/core/sampler.c):
 *
 *   cpu_sample_cost_ns          one sample taken and attributed, 30 frames
 *                               deep: the signal sent to the thread and
 *                               delivered, the handler's capture, and the
 *                               drain's share (drained in batches of 64, as
 *                               the sampler's thread drains every 20 ms),
 *                               less the same loop without signals
 *   cpu_sample_work_ns          the sampler's own share of it: less the same
 *                               signals while paused (the handler takes
 *                               nothing)
 *   cpu_sampling_overhead_ratio a CPU-bound program at the default setting,
 *                               measured / not measured: the CPU time the
 *                               process spends on 50 ms of work on its
 *                               main thread (with its handlers, and the
 *                               sampler's thread draining) with the
 *                               thread's CPU-time timer armed, over the
 *                               same with it stopped: the median of 41
 *                               such pairs run back to back in the same
 *                               process. CPU time, not wall time: on a
 *                               shared machine other load blurs wall
 *                               times by more than the effect. The goal is
 *                               <= 1.01
 *   cpu_sampling_default_period_us  the default period, for the record
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "core/internal.h"
#include "core/sampler.h"

#define DEPTH 30
#define N 4000
#define REPS 9
#define RUNS 41

static volatile double sink;

/* N samples at depth d (signal = false: the same loop without them). */
__attribute__((noinline)) static double raise_at(int d, bool signal)
{
    if (d > 0) {
        double r = raise_at(d - 1, signal);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        if (signal)
            gpuprof__sampler_raise(GP_SRC_CPUTIME);
        if (i % 64 == 63)
            gpuprof__sampler_drain_all();
    }
    gpuprof__sampler_drain_all();
    return (bench_now_s() - t0) * 1e9 / N;
}

/* CPU-bound work: about `iters` * 2.5 ns. */
__attribute__((noinline)) static void work(long iters)
{
    double x = 1.0;
    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's CPU time over one stretch of the work on this thread,
 * its timers armed or not; drained before the clock stops (the sampler's
 * share included). */
static double one_run(bool measured)
{
    gpuprof__sampler_thread_timers(measured);
    double t0 = process_cpu_s();
    work(20000000);
    gpuprof__sampler_drain_all();
    double t = process_cpu_s() - t0;
    gpuprof__sampler_thread_timers(true);
    return t;
}

int main(void)
{
    char dir[] = "/tmp/bench_cpusample.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = dir;
    o.backends = "none";
    o.signals = 0;
    if (gpuprof_init(&o) != GPUPROF_OK)
        return 1;
    uint64_t period = gpuprof__sampler_period(GP_SRC_CPUTIME);
    if (!period) /* the default is off: no figures */
        return 1;
    gpuprof__cpu_sampling_thread_start(gpuprof__thread_get());
    double on[REPS], off[REPS];
    raise_at(DEPTH, true); /* warm: the path exists afterwards */
    for (int i = 0; i < REPS; i++) {
        on[i] = raise_at(DEPTH, true);
        off[i] = raise_at(DEPTH, false);
    }
    printf("BENCH cpu_sample_cost_ns %.1f ns\n",
           bench_median(on, REPS) - bench_median(off, REPS));
    /* The sampler's own share: the same signals while paused (the
     * handler takes nothing) taken away. */
    for (int i = 0; i < REPS; i++) {
        on[i] = raise_at(DEPTH, true);
        gpuprof_stop();
        off[i] = raise_at(DEPTH, true);
        gpuprof_start();
    }
    printf("BENCH cpu_sample_work_ns %.1f ns\n",
           bench_median(on, REPS) - bench_median(off, REPS));

    double ratio[RUNS];
    gpuprof_region_begin("work");
    one_run(true);
    for (int i = 0; i < RUNS; i++) { /* pairs: load drifts cancel */
        bool first = i & 1; /* and neither goes first always */
        double a = one_run(first), b = one_run(!first);
        ratio[i] = first ? a / b : b / a;
    }
    gpuprof_region_end("work");
    printf("BENCH cpu_sampling_overhead_ratio %.4f x\n",
           bench_median(ratio, RUNS));
    printf("BENCH cpu_sampling_default_period_us %.0f us\n", period / 1e3);
    gpuprof_finalize();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
