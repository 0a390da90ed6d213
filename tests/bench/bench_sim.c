/*
 * bench_sim.c - the cost of measuring GPU launches, on the simulated GPU.
 *
 * The hook figures are what measuring adds to a launch: a sim launch while
 * measuring less the same launch while paused, in the launching thread's
 * CPU time (the hook never blocks; the simulator's and the monitor's
 * threads share this machine's two cores with it, which wall time would
 * count as the hook's), medians of REPS interleaved runs of N launches.
 * Each launch is made 30 frames below the loop (DEPTH):
 *
 *   hook_ns_30_frames         launches from two call sites in turn, in one
 *                             function 30 frames deep: each path differs
 *                             from the last in its innermost frame (a step
 *                             that launches one kernel after another); the
 *                             hook is gpuprof_op_begin/_end: unwind, path
 *                             insert, placeholder, correlation id, record
 *                             push, activities applied (bench_hook says
 *                             where the time goes)
 *   hook_ns_30_frames_repeat  one call site in a loop: the path cache
 *                             reuses every frame of the last path
 *   hook_ns_30_frames_first   two 30-deep stacks in turn that have no frame
 *                             of the 30 in common: every frame looked up,
 *                             as for the first launch from a call site
 *   hook_ns_30_frames_mt      hook_ns_30_frames on each of MT threads
 *                             launching at the same time (each into a
 *                             stream of its own), per launch in each
 *                             thread's CPU time, the mean over the threads
 *                             of each one's fastest measuring round less
 *                             its fastest paused one (with MT launchers on
 *                             MT cores the monitor and simulator threads
 *                             preempt them in most rounds, and the caches
 *                             they leave cost CPU time: the median swings
 *                             by 2x); bench_hook's hook_capture_mt_ratio
 *                             isolates the hook's own shared state
 *   hook_mt_threads           MT, the threads of the line above
 *   sim_launch_paused_ns      the launch while paused (the simulated
 *                             runtime's own cost: a queue under a mutex):
 *                             the baseline
 *   sim_overhead_ratio        a launch-heavy program (per iteration: a
 *                             region, a kernel, a copy and 2 us of host
 *                             work, 20 frames deep) measured / paused, wall
 *                             time, same run, medians of 7
 *   sim_activities_per_s      activities the pipeline attributes per second
 *                             of its own work: 20,000 kernels' activities
 *                             waiting, one monitor sync (match, blame,
 *                             forward) and the owner's apply into its GPU
 *                             subtree, on one thread; median of 5
 *   hook_traced_ns_30_frames  hook_ns_30_frames_repeat with traces recorded
 *                             (GPUPROF_TRACE=1: the call's interval pushed
 *                             to the thread's trace channel, device records
 *                             to the stream's; the process clock is then
 *                             CLOCK_MONOTONIC), measured in a second
 *                             process (`bench_sim --traced`, run by the
 *                             first)
 *   blame_sample_cost_ns      one GPU_IDLE_CAUSE sample taken while no GPU
 *                             work is in flight, 30 frames deep: the
 *                             handler's capture (unwind into the thread's
 *                             ring) plus its attribution to the calling
 *                             context at the next drain (core idle.c),
 *                             median of REPS
 *
 * The simulator delivers activities in batches of 4,096 (simstart.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sim/sim.h"
#include "bench/bench.h"
#include "bench/simstart.h"
#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"

#define DEPTH 30
#define N 20000
#define REPS 15
#define MT 2 /* the cores of the machines this runs on */

void gpuprof__monitor_hold(bool hold); /* monitor.c's test hook */

static volatile double sink;

/* The stream this thread launches into. */
static __thread unsigned stream = 1;

/* The two call sites of one function (distinct return addresses). */
__attribute__((noinline)) static void launch_here(int site)
{
    if (site)
        gpuprof__sim_kernel(stream, "bench_kernel", 1000);
    else
        gpuprof__sim_kernel(stream, "bench_kernel", 1000);
    __asm__ volatile("" ::: "memory");
}

/* Two recursions of distinct functions: their frames share nothing. */
__attribute__((noinline)) static void a_at(int d, int site)
{
    if (d > 0)
        a_at(d - 1, site);
    else
        launch_here(site);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void b_at(int d, int site)
{
    if (d > 0)
        b_at(d - 1, site);
    else
        launch_here(site);
    __asm__ volatile("" ::: "memory");
}

enum kind { MIXED, REPEAT, FIRST };

/* N launches of `kind`, each DEPTH frames below; CPU ns per launch. */
static double launches(enum kind k)
{
    double t0 = bench_cpu_s();
    for (int i = 0; i < N; i++) {
        if (k == FIRST && (i & 1))
            b_at(DEPTH, 0);
        else
            a_at(DEPTH, k == MIXED ? i & 1 : 0);
    }
    double t = (bench_cpu_s() - t0) * 1e9 / N;
    gpuprof__sim_stream_sync(stream);
    return t;
}

/* Measuring less paused, interleaved; *paused gets the paused median. */
static double hook_ns(enum kind k, double *paused)
{
    double on[REPS], off[REPS];
    launches(k); /* warm: the paths exist afterwards */
    for (int i = 0; i < REPS; i++) {
        on[i] = launches(k);
        gpuprof_stop();
        off[i] = launches(k);
        gpuprof_start();
    }
    double moff = bench_median(off, REPS);
    if (paused)
        *paused = moff;
    return bench_median(on, REPS) - moff;
}

/* hook_ns_30_frames on MT threads at once. Every round: all launch while
 * measuring, then all while paused (the main thread pauses and resumes
 * between barriers). */
static pthread_barrier_t mt_bar;

typedef struct mt_arg {
    unsigned stream;
    double on[REPS], off[REPS];
} mt_arg;

static void *mt_launcher(void *p)
{
    mt_arg *a = p;
    stream = a->stream;
    launches(MIXED); /* warm: this thread's states and paths */
    for (int i = 0; i < REPS; i++) {
        pthread_barrier_wait(&mt_bar);
        a->on[i] = launches(MIXED);
        pthread_barrier_wait(&mt_bar); /* the main thread pauses */
        pthread_barrier_wait(&mt_bar);
        a->off[i] = launches(MIXED);
        pthread_barrier_wait(&mt_bar); /* the main thread resumes */
    }
    return NULL;
}

static double min_of(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* The mean over MT threads of each one's fastest measuring round less its
 * fastest paused round. */
static double hook_mt_ns(void)
{
    pthread_t th[MT];
    mt_arg arg[MT];
    int started = 0;
    double sum = 0;
    if (pthread_barrier_init(&mt_bar, NULL, MT + 1))
        return 0;
    for (int k = 0; k < MT; k++) {
        arg[k].stream = (unsigned)k + 2;
        if (pthread_create(&th[k], NULL, mt_launcher, &arg[k]))
            break;
        started++;
    }
    if (started < MT) { /* the barrier would never open */
        fprintf(stderr, "bench_sim: cannot start %d threads\n", MT);
        exit(1);
    }
    for (int i = 0; i < REPS; i++) {
        pthread_barrier_wait(&mt_bar);
        pthread_barrier_wait(&mt_bar);
        gpuprof_stop();
        pthread_barrier_wait(&mt_bar);
        pthread_barrier_wait(&mt_bar);
        gpuprof_start();
    }
    for (int k = 0; k < MT; k++) {
        pthread_join(th[k], NULL);
        sum += min_of(arg[k].on, REPS) - min_of(arg[k].off, REPS);
    }
    pthread_barrier_destroy(&mt_bar);
    return sum / MT;
}

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

/* 2 us of host work, by the clock (a fixed loop's time varies by CPU). */
static void host_work(void)
{
    double t0 = bench_now_s(), x = 1.0;
    while (bench_now_s() - t0 < 2e-6)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

#define ITERS 20000

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

/* Activities attributed per second of the pipeline's work: launches
 * while the monitor is held, their activities delivered, then one timed
 * monitor sync and apply. */
static double activities_per_s(void)
{
    enum { AREPS = 5 };
    double v[AREPS];
    gp_thread *t = gpuprof__tls_self;
    gp_gpu *g = t ? gp_load_relaxed(&t->gpu) : NULL;
    for (int r = 0; r < AREPS && g; r++) {
        gpuprof__monitor_hold(true);
        for (int i = 0; i < N; i++)
            gpuprof__sim_kernel((unsigned)(i & 3), "bench_kernel", 1000);
        gpuprof__sim_sync(); /* submitted: on the simulator's channel */
        uint64_t a0 = gpuprof__stat_read(GP_STAT_GPU_ACTIVITIES);
        double t0 = bench_now_s();
        gpuprof__monitor_sync();
        gpuprof__gpu_apply(g);
        double s = bench_now_s() - t0;
        uint64_t acts = gpuprof__stat_read(GP_STAT_GPU_ACTIVITIES) - a0;
        gpuprof__monitor_hold(false);
        v[r] = (double)acts / s;
    }
    return g ? bench_median(v, AREPS) : 0;
}

static int finish(const char *dir)
{
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
    return 0;
}

int main(int argc, char **argv)
{
    int traced = argc > 1 && !strcmp(argv[1], "--traced");
    char dir[] = "/tmp/bench_sim.XXXXXX";
    if (!bench_sim_start(dir, traced))
        return 1;
    if (traced) {
        printf("BENCH hook_traced_ns_30_frames %.1f ns\n",
               hook_ns(REPEAT, NULL));
        return finish(dir);
    }
    double paused;
    printf("BENCH hook_ns_30_frames %.1f ns\n", hook_ns(MIXED, &paused));
    printf("BENCH hook_ns_30_frames_repeat %.1f ns\n", hook_ns(REPEAT, NULL));
    printf("BENCH hook_ns_30_frames_first %.1f ns\n", hook_ns(FIRST, NULL));
    printf("BENCH sim_launch_paused_ns %.1f ns\n", paused);

    enum { PREPS = 7 };
    double pm[PREPS], pp[PREPS];
    program_at(20);
    for (int i = 0; i < PREPS; i++) {
        pm[i] = program_at(20);
        gpuprof_stop();
        pp[i] = program_at(20);
        gpuprof_start();
    }
    double rm = bench_median(pm, PREPS), rp = bench_median(pp, PREPS);
    printf("BENCH sim_overhead_ratio %.3f x\n", rm / rp);
    printf("BENCH sim_activities_per_s %.3g activities/s\n",
           activities_per_s());
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
    /* Last: threads that launched and exited leave the monitor and the
     * simulator work that would fall on the figures above. */
    printf("BENCH hook_ns_30_frames_mt %.1f ns\n", hook_mt_ns());
    printf("BENCH hook_mt_threads %d threads\n", MT);
    if (finish(dir))
        return 1;
    /* The traced hook, in a fresh process (tracing is chosen at init). */
    fflush(stdout);
    char self[4200];
    snprintf(self, sizeof(self), "'%s' --traced", argv[0]);
    return system(self) == 0 ? 0 : 1;
}
