/*
 * bench_hook.c - where the GPU API hook's time goes: each stage of
 * gpuprof__op_begin/_end timed alone, from a 30-deep stack, by calling the
 * code the hook runs (lib/core gpu.c, unwind.c, cct.c, idle.c, trace.c),
 * with the hook as a whole (a sim launch measured less paused) in the same
 * run. Medians of REPS runs of N calls. Stages, per launch:
 *
 *   hook_stage_unwind_ns       the return addresses: the loader check and
 *                              libunwind's unw_backtrace (gpuprof__unwind_here,
 *                              inlined as the hook inlines it)
 *   hook_stage_modules_ns      of the unwind stage: has the loader unloaded
 *                              anything (gpuprof__modules_check: with
 *                              dlclose interposed, as this program links
 *                              it, a load and a compare)
 *   hook_stage_path_ns         the captured path into the thread's CCT
 *                              through its last-path cache, the path the
 *                              same as the last (a loop's launches): hidden
 *                              frames, the Python check and the compare
 *   hook_stage_path_miss_ns    the same with nothing cached (a first launch
 *                              from its call site): every frame's module
 *                              and node looked up
 *   hook_stage_python_ns       of the path stage: Python frames, in this
 *                              program without Python
 *   hook_stage_placeholder_ns  the operation's placeholder node
 *   hook_stage_push_ns         the correlation id and the operation record
 *                              onto the thread's channel
 *   hook_stage_apply_ns        one activity the monitor forwarded, added
 *                              beneath its placeholder (the thread's hooks
 *                              do it, GP_APPLY_BATCH at a time; per
 *                              activity, 64 at a time)
 *   hook_stage_blame_ns        the kernel counted in flight (GPU_IDLE_CAUSE
 *                              samples are drained off the hook: sampler.h)
 *   hook_stage_observers_ns    is an observer installed (begin and end)
 *   hook_stage_deps_ns         a dependency note while not tracing
 *   hook_stages_sum_ns         unwind + path + placeholder + push + apply +
 *                              blame + observers + deps
 *   hook_total_ns              the whole hook, this run: a sim launch from
 *                              the same depth, one call site, measured less
 *                              paused, in this thread's CPU time (as
 *                              bench_sim's hook_ns_30_frames_repeat)
 *   hook_unaccounted_ns        total less the sum: what the stages alone do
 *                              not show (lines the monitor's core wrote,
 *                              calls and checks between the stages)
 *   hook_stage_trace_ns        with GPUPROF_TRACE (a second process,
 *                              `bench_hook --traced`): the call's clock
 *                              reads and its trace record
 *   hook_capture_ns            the capture alone (loader check, unwind,
 *                              path through a cache, unchanged) in this
 *                              thread's CPU time, into a tree of its own
 *   hook_capture_ns_mt         the same on each of MT threads at once (each
 *                              its own tree, as each thread has): the mean
 *                              of their medians
 *   hook_capture_mt_ratio      _mt / alone: a lock or a written cache line
 *                              the captures share would raise it (no
 *                              monitor or simulator thread runs here)
 *   unw_backtrace_mt_ratio     the same ratio for libunwind's unw_backtrace
 *                              alone, the same stack: what running MT
 *                              threads at once costs on this machine
 *                              whatever they share (its two vCPUs slow
 *                              each other: unw_backtrace beside a loop of
 *                              multiplications takes ~1.9x as long); the
 *                              capture's ratio over this one is what the
 *                              hook's own sharing adds
 *
 * The stages run alone, so each finds its data in cache: the sum is a
 * floor, and the unaccounted part says how far the whole is above it.
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
#include "core/trace.h"
#include "core/unwind.h"
#include "io/io.h"

#define DEPTH 30
#define N 20000
#define REPS 9
#define BATCH 64
#define MT 2 /* the cores of the machines this runs on */

enum stage {
    S_UNWIND, S_MODULES, S_PATH, S_PATH_MISS, S_PYTHON, S_PLACEHOLDER,
    S_PUSH, S_APPLY, S_BLAME, S_OBSERVERS, S_DEPS, S_TRACE, S_LAUNCH,
    S_COUNT
};
/* Each stage's line, whole (doc-drift matches BENCH names to doc/BENCH.md). */
static const char *const lines[S_COUNT] = {
    "BENCH hook_stage_unwind_ns",
    "BENCH hook_stage_modules_ns",
    "BENCH hook_stage_path_ns",
    "BENCH hook_stage_path_miss_ns",
    "BENCH hook_stage_python_ns",
    "BENCH hook_stage_placeholder_ns",
    "BENCH hook_stage_push_ns",
    "BENCH hook_stage_apply_ns",
    "BENCH hook_stage_blame_ns",
    "BENCH hook_stage_observers_ns",
    "BENCH hook_stage_deps_ns",
    "BENCH hook_stage_trace_ns",
    NULL};

static volatile uint64_t sink;

/* What the stages work on: the bench thread's own state, a private channel
 * and a private GPU state (nothing the monitor reads). */
static struct {
    gp_thread *t;
    gp_gpu *g;        /* the thread's (its launch counter) */
    gp_gpu *g2;       /* a thread state of nobody's: apply's target */
    gp_thread other;
    gp_chan_spsc ch;  /* push's channel, emptied off the clock */
    gp_path_cache cache;
    void *buf[GP_MAX_FRAMES];
    int n;
    uint32_t leaf, ph, kernel;
    uint64_t corr;
} B;

static void drop(void *ctx, const void *item)
{
    (void)ctx;
    (void)item;
}

/* `count` activities on the placeholder, as the monitor forwards them. */
static void forward(int count)
{
    gp_act a = {B.ph, GPUPROF_OP_KERNEL, B.kernel, (uint32_t)GP_NO_BINARY,
                1000, 0, 0, 0, {0}, {0}};
    for (int i = 0; i < count; i++)
        gpuprof__chan_push(&B.g2->act, &a);
    gp_store_release(&B.g2->forwarded,
                     gp_load_relaxed(&B.g2->forwarded) + (uint64_t)count);
}

/* Stages that need a clock stopped between batches. */
static double batched(enum stage s)
{
    double sum = 0;
    for (int i = 0; i < N; i += BATCH) {
        if (s == S_APPLY)
            forward(BATCH);
        double t0 = bench_now_s();
        if (s == S_APPLY) {
            gpuprof__gpu_poll(B.g2);
        } else {
            for (int k = 0; k < BATCH; k++)
                gpuprof__op_record(&B.ch, GPUPROF_OP_KERNEL,
                                   ((uint64_t)(B.t->seq + 1)
                                    << GP_CORR_SEQ_BITS) |
                                       (++B.corr &
                                        ((1ull << GP_CORR_SEQ_BITS) - 1)),
                                   B.g, B.ph);
        }
        sum += bench_now_s() - t0;
        if (s == S_PUSH)
            gpuprof__chan_drain(&B.ch, drop, NULL, 0);
    }
    return sum * 1e9 / N;
}

static void one(enum stage s)
{
    uint32_t unknown = 0;
    switch (s) {
    case S_UNWIND:
        sink += (uint64_t)gpuprof__unwind_here(B.buf, GP_MAX_FRAMES);
        break;
    case S_PATH_MISS:
        B.cache.tree = NULL; /* forget the last path */
        /* fall through */
    case S_PATH:
        sink += gpuprof__callpath_insert(&B.t->cct, 0, B.buf, B.n, 1,
                                         &unknown, &B.cache);
        break;
    case S_MODULES:
        sink += (uintptr_t)gpuprof__modules_check();
        break;
    case S_PYTHON:
        sink += gpuprof__pyframes_active();
        break;
    case S_PLACEHOLDER:
        sink += gpuprof__cct_child(&B.t->cct, B.leaf, GPUPROF_IO_NODE_GPU_OP,
                                   GPUPROF_OP_KERNEL, 0, UINT32_MAX);
        break;
    case S_BLAME: /* the launch's part; GPU_IDLE_CAUSE samples are drained
                     off the hook by the sampler (sampler.h) */
        gpuprof__gpu_busy(B.g->busy_slot);
        break;
    case S_OBSERVERS: {
        const struct gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
        if (o)
            gpuprof__observe_op_begin(o, 0, B.leaf);
        o = gp_load_acquire(&gpuprof__observer);
        if (o)
            gpuprof__observe_op_end(o);
        break;
    }
    case S_DEPS:
        gpuprof__op_dep(B.corr, GP_DEP_LAUNCH, GP_DEP_NULL, 0, 0, 0);
        break;
    case S_TRACE: {
        uint64_t t0 = gp_ticks();
        gpuprof__trace_op(B.t->trace, t0, gp_ticks(), B.ph, ++B.corr);
        break;
    }
    case S_LAUNCH:
        gpuprof__sim_kernel(0, "bench_kernel", 1000);
        break;
    default:
        break;
    }
}

/* Stage s, N times from `d` frames deeper; ns per call (launches: CPU
 * time, as bench_sim). */
__attribute__((noinline)) static double at_depth(int d, enum stage s)
{
    if (d > 0) {
        double r = at_depth(d - 1, s);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    if (s == S_PATH || s == S_PATH_MISS) /* this stack's path */
        B.n = gpuprof__unwind_capture(B.buf, GP_MAX_FRAMES);
    if (s == S_PUSH || s == S_APPLY)
        return batched(s);
    double (*clock)(void) = s == S_LAUNCH ? bench_cpu_s : bench_now_s;
    double t0 = clock();
    for (int i = 0; i < N; i++)
        one(s);
    double ns = (clock() - t0) * 1e9 / N;
    if (s == S_LAUNCH)
        gpuprof__sim_sync();
    return ns;
}

static double median_of(enum stage s)
{
    double v[REPS];
    at_depth(DEPTH, s); /* warm */
    for (int i = 0; i < REPS; i++)
        v[i] = at_depth(DEPTH, s);
    if (s == S_BLAME) /* the kernels counted never ran: end them */
        for (int i = 0; i < (REPS + 1) * N; i++)
            gpuprof__gpu_done();
    return bench_median(v, REPS);
}

/* The whole hook: a sim launch measured less paused, alternating. */
static double hook_total(void)
{
    double on[REPS], off[REPS];
    at_depth(DEPTH, S_LAUNCH);
    for (int i = 0; i < REPS; i++) {
        on[i] = at_depth(DEPTH, S_LAUNCH);
        gpuprof_stop();
        off[i] = at_depth(DEPTH, S_LAUNCH);
        gpuprof_start();
    }
    return bench_median(on, REPS) - bench_median(off, REPS);
}

/* The capture alone (or, raw, unw_backtrace alone), in a thread of its
 * own or not: its tree and cache. */
typedef struct cap_arg {
    gp_cct tree;
    gp_path_cache cache;
    bool raw;
    double ns[REPS];
} cap_arg;
static pthread_barrier_t cap_bar;

__attribute__((noinline)) static double capture_at(int d, cap_arg *a)
{
    if (d > 0) {
        double r = capture_at(d - 1, a);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    void *buf[GP_MAX_FRAMES];
    uint32_t unknown = 0;
    double t0 = bench_cpu_s();
    for (int i = 0; i < N && a->raw; i++)
        sink += (uint64_t)unw_backtrace(buf, GP_MAX_FRAMES);
    for (int i = 0; i < N && !a->raw; i++) {
        int n = gpuprof__unwind_here(buf, GP_MAX_FRAMES);
        sink += gpuprof__callpath_insert(&a->tree, 0, buf, n, 1, &unknown,
                                         &a->cache);
    }
    return (bench_cpu_s() - t0) * 1e9 / N;
}

/* REPS rounds of N captures (after one to warm), each round started with
 * the others when `together`; the median. */
static double capture_rounds(cap_arg *a, bool together)
{
    capture_at(DEPTH, a);
    for (int i = 0; i < REPS; i++) {
        if (together)
            pthread_barrier_wait(&cap_bar);
        a->ns[i] = capture_at(DEPTH, a);
    }
    return bench_median(a->ns, REPS);
}

static void *capture_thread(void *p)
{
    capture_rounds(p, true);
    return NULL;
}

/* The capture (raw: unw_backtrace) alone, and *mt the mean of MT
 * threads' at once; false when a tree or a thread cannot be made. */
static bool capture_alone_and_mt(bool raw, double *alone, double *mt)
{
    static cap_arg arg[MT + 1]; /* large: not on the stack */
    memset(arg, 0, sizeof(arg));
    for (int k = 0; k <= MT; k++) {
        arg[k].raw = raw;
        if (!gpuprof__cct_init(&arg[k].tree))
            return false;
    }
    *alone = capture_rounds(&arg[MT], false);
    pthread_t th[MT];
    if (pthread_barrier_init(&cap_bar, NULL, MT))
        return false;
    for (int k = 0; k < MT; k++)
        if (pthread_create(&th[k], NULL, capture_thread, &arg[k])) {
            fprintf(stderr, "bench_hook: cannot start %d threads\n", MT);
            exit(1); /* the barrier would never open */
        }
    *mt = 0;
    for (int k = 0; k < MT; k++) {
        pthread_join(th[k], NULL);
        *mt += bench_median(arg[k].ns, REPS) / MT;
    }
    pthread_barrier_destroy(&cap_bar);
    for (int k = 0; k <= MT; k++)
        gpuprof__cct_destroy(&arg[k].tree);
    return true;
}

static bool setup(void)
{
    gpuprof__sim_kernel(0, "bench_kernel", 1000); /* the thread's states */
    gpuprof__sim_sync();
    B.t = gpuprof__tls_self;
    B.g = B.t ? gp_load_relaxed(&B.t->gpu) : NULL;
    if (!B.g || !gpuprof__chan_init(&B.ch, sizeof(gp_rec), 256, 0))
        return false;
    B.n = gpuprof__unwind_capture(B.buf, GP_MAX_FRAMES);
    uint32_t unknown = 0;
    B.leaf = gpuprof__callpath_insert(&B.t->cct, 0, B.buf, B.n, 1, &unknown,
                                      NULL);
    B.ph = gpuprof__cct_child(&B.t->cct, B.leaf, GPUPROF_IO_NODE_GPU_OP,
                              GPUPROF_OP_KERNEL, 0, UINT32_MAX);
    B.kernel = gpuprof__intern("bench_kernel", 12,
                               gpuprof__hash_str("bench_kernel",
                                                 &(size_t){0}));
    B.g2 = gpuprof__gpu_attach(&B.other);
    return B.leaf != GP_CCT_NONE && B.ph != GP_CCT_NONE && B.kernel && B.g2;
}

static int finish(char *dir, int rc)
{
    gpuprof_finalize();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? rc : 1;
}

int main(int argc, char **argv)
{
    int traced = argc > 1 && !strcmp(argv[1], "--traced");
    char dir[] = "/tmp/bench_hook.XXXXXX";
    if (!bench_sim_start(dir, traced))
        return 1;
    if (!setup())
        return finish(dir, 1);
    if (traced) {
        if (!B.t->trace)
            return finish(dir, 1);
        printf("%s %.1f ns\n", lines[S_TRACE], median_of(S_TRACE));
        return finish(dir, 0);
    }
    double v[S_COUNT];
    for (int s = 0; s < S_TRACE; s++)
        v[s] = median_of((enum stage)s);
    double total = hook_total();
    double sum = v[S_UNWIND] + v[S_PATH] + v[S_PLACEHOLDER] + v[S_PUSH] +
                 v[S_APPLY] + v[S_BLAME] + v[S_OBSERVERS] + v[S_DEPS];
    for (int s = 0; s < S_TRACE; s++)
        printf("%s %.1f ns\n", lines[s], v[s]);
    printf("BENCH hook_stages_sum_ns %.1f ns\n", sum);
    printf("BENCH hook_total_ns %.1f ns\n", total);
    printf("BENCH hook_unaccounted_ns %.1f ns\n", total - sum);
    double alone, mt, raw_alone, raw_mt;
    if (!capture_alone_and_mt(false, &alone, &mt) ||
        !capture_alone_and_mt(true, &raw_alone, &raw_mt))
        return finish(dir, 1);
    printf("BENCH hook_capture_ns %.1f ns\n", alone);
    printf("BENCH hook_capture_ns_mt %.1f ns\n", mt);
    printf("BENCH hook_capture_mt_ratio %.3f x\n", mt / alone);
    printf("BENCH unw_backtrace_mt_ratio %.3f x\n", raw_mt / raw_alone);
    gpuprof__chan_destroy(&B.ch);
    gpuprof__gpu_destroy(B.g2);
    int rc = finish(dir, 0);
    if (rc)
        return rc;
    fflush(stdout);
    char self[4200];
    snprintf(self, sizeof(self), "'%s' --traced", argv[0]);
    return system(self) == 0 ? 0 : 1;
}
