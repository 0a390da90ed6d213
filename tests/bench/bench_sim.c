/*
 * bench_sim.c - the cost of measuring GPU launches, on the simulated GPU.
 *
 *   hook_ns_30_frames     what measuring adds to one launch made from a
 *                         30-deep stack: a sim launch while measuring minus
 *                         the same launch while paused (same run, medians);
 *                         the hook is gpuprof_op_begin/_end: unwind, path
 *                         insert, placeholder, correlation id, record push
 *   sim_launch_paused_ns  the launch while paused (the simulated runtime's
 *                         own cost: a queue under a mutex): the baseline
 *   sim_overhead_ratio    a launch-heavy program (per iteration: a region,
 *                         a kernel, a copy, ~2 us of host work; 20 frames
 *                         deep) measured / paused, same run, medians of 7
 *   sim_activities_per_s  activities attributed per second of the monitor's
 *                         work during that program (all threads included)
 *   hook_traced_ns_30_frames  hook_ns_30_frames with traces recorded
 *                         (GPUPROF_TRACE=1: the call's interval pushed to
 *                         the thread's trace channel, device records to the
 *                         stream's; the process clock is then
 *                         CLOCK_MONOTONIC), measured in a second process
 *                         (`bench_sim --traced`, run by the first)
 *   blame_sample_cost_ns  one GPU_IDLE_CAUSE sample taken while no GPU work
 *                         is in flight, 30 frames deep: the handler's
 *                         capture (unwind into the thread's ring) plus its
 *                         attribution to the calling context at the next
 *                         drain (core idle.c), median of REPS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sim/sim.h"
#include "bench/bench.h"
#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"

#define DEPTH 30
#define N 20000
#define REPS 9

static volatile double sink;

__attribute__((noinline)) static double launches_at(int d)
{
    if (d > 0) {
        double r = launches_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++)
        gpuprof__sim_kernel((unsigned)(i & 3), "bench_kernel", 1000);
    double t = (bench_now_s() - t0) * 1e9 / N;
    gpuprof__sim_sync();
    return t;
}

/* ~2 us of host work between launches. */
static void host_work(void)
{
    double x = 1.0;
    for (int i = 0; i < 400; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

#define ITERS 20000

__attribute__((noinline)) static double samples_at(int d)
{
    if (d > 0) {
        double r = samples_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    /* Drained in batches, as the sampler's thread drains every 20 ms. */
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        gpuprof__idle_sample_now();
        if (i % 64 == 63)
            gpuprof__sampler_drain_all();
    }
    gpuprof__sampler_drain_all();
    return (bench_now_s() - t0) * 1e9 / N;
}

__attribute__((noinline)) static double program_at(int d)
{
    if (d > 0) {
        double r = program_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < ITERS; i++) {
        gpuprof_region_begin("step");
        gpuprof__sim_kernel((unsigned)(i & 3), "step_kernel", 5000);
        host_work();
        gpuprof__sim_copy((unsigned)(i & 3), GPUPROF_OP_COPY_D2H, 4096, 800);
        gpuprof_region_end("step");
    }
    gpuprof__sim_sync();
    return bench_now_s() - t0;
}

int main(int argc, char **argv)
{
    int traced = argc > 1 && !strcmp(argv[1], "--traced");
    char dir[] = "/tmp/bench_sim.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gp_sim_config sc = {4, 256, 1, 1000, false, false};
    gpuprof__sim_register(&sc);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = dir;
    o.backends = "sim";
    o.signals = 0;
    o.trace = traced;
    if (gpuprof_init(&o) != GPUPROF_OK)
        return 1;
    double on[REPS], off[REPS];
    launches_at(DEPTH); /* warm: the path exists afterwards */
    for (int i = 0; i < REPS; i++) {
        on[i] = launches_at(DEPTH);
        gpuprof_stop();
        off[i] = launches_at(DEPTH);
        gpuprof_start();
    }
    double mon = bench_median(on, REPS), moff = bench_median(off, REPS);
    if (traced) {
        printf("BENCH hook_traced_ns_30_frames %.1f ns\n", mon - moff);
        gpuprof_finalize();
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : 1;
    }
    printf("BENCH hook_ns_30_frames %.1f ns\n", mon - moff);
    printf("BENCH sim_launch_paused_ns %.1f ns\n", moff);

    enum { PREPS = 7 };
    double pm[PREPS], pp[PREPS];
    uint64_t a0 = gpuprof__stat_read(GP_STAT_GPU_ACTIVITIES);
    double measured_s = 0;
    program_at(20);
    for (int i = 0; i < PREPS; i++) {
        pm[i] = program_at(20);
        measured_s += pm[i];
        gpuprof_stop();
        pp[i] = program_at(20);
        gpuprof_start();
    }
    uint64_t acts = gpuprof__stat_read(GP_STAT_GPU_ACTIVITIES) - a0;
    double rm = bench_median(pm, PREPS), rp = bench_median(pp, PREPS);
    printf("BENCH sim_overhead_ratio %.3f x\n", rm / rp);
    printf("BENCH sim_activities_per_s %.3g activities/s\n",
           (double)acts / measured_s);
    if (gpuprof__idle_period_ns() && gpuprof__gpu_busy_count() == 0) {
        double sv[REPS];
        samples_at(DEPTH); /* warm: the paths exist afterwards */
        for (int i = 0; i < REPS; i++)
            sv[i] = samples_at(DEPTH);
        printf("BENCH blame_sample_cost_ns %.1f ns\n", bench_median(sv, REPS));
    } else {
        printf("# blame_sample_cost_ns: GPU_IDLE_CAUSE not sampled in this "
               "build, skipped\n");
    }
    uint64_t dropped = gpuprof__stat_read(GP_STAT_RECORDS_DROPPED);
    uint64_t unattributed = gpuprof__stat_read(GP_STAT_RECORDS_UNATTRIBUTED);
    gpuprof_finalize();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    if (dropped || unattributed) {
        fprintf(stderr, "bench_sim: %llu dropped, %llu unattributed\n",
                (unsigned long long)dropped, (unsigned long long)unattributed);
        return 1;
    }
    /* The traced hook, in a fresh process (tracing is chosen at init). */
    fflush(stdout);
    char self[4200];
    snprintf(self, sizeof(self), "'%s' --traced", argv[0]);
    return system(self) == 0 ? 0 : 1;
}
