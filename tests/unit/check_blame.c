/*
 * check_blame.c - CPU-GPU blame and the launch->wait detector in the core
 * (lib/core/blame.c), driven by the simulated GPU with scripted times: the
 * device work's intervals and the host waits are exact, so CPU_IDLE,
 * CPU_IDLE_CAUSE and detect.launch_wait are hand-computed below.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sim/sim.h"
#include "core/gpu.h"
#include "core/internal.h"
#include "io/io.h"
#include "support/nodes.h"
#include "support/readback.h"
#include "support/suite.h"

static char outdir[512];

static void start(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/blame.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gp_sim_config sc = {3, 16, 7, 500, false, false};
    ck_assert_int_eq(gpuprof__sim_register(&sc), GPUPROF_OK);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "sim";
    o.signals = 0;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

/* Is absolute node `i` of thread `t` beneath the top-level region `reg`? */
static bool beneath(const gpuprof__io_profile *p, const gpuprof__io_thread *t,
                    uint32_t i, const char *reg)
{
    for (uint32_t a = i; a != t->first_node; a = t->first_node + p->nodes[a].parent) {
        const gpuprof__io_node *n = &p->nodes[a];
        if (n->kind == GPUPROF_IO_NODE_REGION &&
            t->first_node + n->parent == t->first_node)
            return !strcmp(gpuprof__io_str(p, n->key_a), reg);
    }
    return false;
}

/* The sum of metric `m` over the main thread's nodes beneath region `reg`:
 * placeholders of `kind` (0: any node), or kernels named `kernel`. */
static uint64_t sum(const gpuprof__io_profile *p, const char *m,
                    const char *reg, uint32_t kind, const char *kernel)
{
    const gpuprof__io_thread *t = &p->threads[0];
    uint64_t s = 0;
    for (uint32_t i = t->first_node + 1; i < t->first_node + t->node_count;
         i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (kernel && (n->kind != GPUPROF_IO_NODE_KERNEL ||
                       strcmp(gpuprof__io_str(p, n->key_a), kernel)))
            continue;
        if (kind && (n->kind != GPUPROF_IO_NODE_GPU_OP || n->key_a != kind))
            continue;
        if (beneath(p, t, i, reg))
            s += rb_val(p, i, m);
    }
    return s;
}

/* sum() of a metric the profile may lack (detect.launch_wait is registered
 * when first reported): 0 then. */
static uint64_t sum_opt(const gpuprof__io_profile *p, const char *m,
                        const char *reg)
{
    for (uint32_t i = 0; i < p->metric_count; i++)
        if (!strcmp(gpuprof__io_str(p, p->metrics[i].name), m))
            return sum(p, m, reg, 0, NULL);
    return 0;
}

/* Far enough ahead that nothing scripted is in the past while a test runs. */
static uint64_t base(void) { return gp_mono_ns() + 60000000000ull; }

/* ---- CPU_IDLE and CPU_IDLE_CAUSE ----------------------------------------
 * Device (streams 0-2), times relative to B:
 *   kA  stream 0 [0, 1000)      kB stream 1 [200, 800)
 *   H2D stream 0 [1000, 1400)   (launched at 300, queued behind kA)
 *   kC  stream 2 [3000, 3300)
 * Waits: w1 [500, 1200) = 700: overlaps kA 500, kB 300, H2D 200 (of 1000)
 *        -> kA 350, kB 210, H2D 140;
 *        w2 [2000, 2500) = 500: nothing runs, nothing blamed;
 *        w3 [3100, 3400) = 300: only kC (overlap 200) -> kC 300. */
START_TEST(cpu_idle_and_cause_exact)
{
    start();
    uint64_t B = base();
    gpuprof_region_begin("launch");
    gpuprof__sim_clock(B);
    ck_assert_int_eq(gpuprof__sim_kernel(0, "kA", 1000), GPUPROF_OK);
    gpuprof__sim_clock(B + 200);
    ck_assert_int_eq(gpuprof__sim_kernel(1, "kB", 600), GPUPROF_OK);
    gpuprof__sim_clock(B + 300);
    ck_assert_int_eq(gpuprof__sim_copy(0, GPUPROF_OP_COPY_H2D, 4096, 400),
                     GPUPROF_OK);
    gpuprof__sim_clock(B + 3000);
    ck_assert_int_eq(gpuprof__sim_kernel(2, "kC", 300), GPUPROF_OK);
    gpuprof__sim_clock(0);
    gpuprof_region_end("launch");
    gpuprof_region_begin("w1");
    ck_assert_int_eq(gpuprof__sim_wait(B + 500, B + 1200), GPUPROF_OK);
    gpuprof_region_end("w1");
    gpuprof_region_begin("w2");
    ck_assert_int_eq(gpuprof__sim_wait(B + 2000, B + 2500), GPUPROF_OK);
    gpuprof_region_end("w2");
    gpuprof_region_begin("w3");
    ck_assert_int_eq(gpuprof__sim_wait(B + 3100, B + 3400), GPUPROF_OK);
    gpuprof_region_end("w3");
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const char *I = "blame.cpu_idle", *C = "blame.cpu_idle_cause";
    ck_assert_uint_eq(sum(p, I, "w1", GPUPROF_OP_SYNC, NULL), 700);
    ck_assert_uint_eq(sum(p, I, "w2", GPUPROF_OP_SYNC, NULL), 500);
    ck_assert_uint_eq(sum(p, I, "w3", GPUPROF_OP_SYNC, NULL), 300);
    ck_assert_uint_eq(sum(p, C, "launch", 0, "kA"), 350);
    ck_assert_uint_eq(sum(p, C, "launch", 0, "kB"), 210);
    ck_assert_uint_eq(sum(p, C, "launch", GPUPROF_OP_COPY_H2D, NULL), 140);
    ck_assert_uint_eq(sum(p, C, "launch", 0, "kC"), 300);
    /* Nothing else is blamed: the waits' time, exactly, over the work. */
    ck_assert_uint_eq(sum(p, C, "launch", 0, NULL), 1000);
    ck_assert_uint_eq(sum(p, C, "w1", 0, NULL) + sum(p, C, "w2", 0, NULL) +
                          sum(p, C, "w3", 0, NULL),
                      0);
    /* Blame is a note: it counts no activity and adds no device time. */
    ck_assert_uint_eq(sum(p, "gpu.count", "launch", 0, "kA"), 1);
    ck_assert_uint_eq(sum(p, "gpu.time", "launch", 0, "kA"), 1000);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 4 + 3);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- launch->wait --------------------------------------------------------
 * `pairs` iterations of: launch kl (100 ns at B + i*1000), wait over
 * [B + i*1000 + 20, B + i*1000 + 70) (50 ns, all of it kl's). */
void gp_test_pairs(uint64_t B, int pairs);
__attribute__((noinline)) void gp_test_pairs(uint64_t B, int pairs)
{
    for (int i = 0; i < pairs; i++) {
        uint64_t t = B + (uint64_t)i * 1000;
        gpuprof__sim_clock(t);
        ck_assert_int_eq(gpuprof__sim_kernel(0, "kl", 100), GPUPROF_OK);
        ck_assert_int_eq(gpuprof__sim_wait(t + 20, t + 70), GPUPROF_OK);
    }
    gpuprof__sim_clock(0);
    __asm__ volatile("" ::: "memory");
}

START_TEST(launch_wait_fires_on_200_pairs)
{
    start();
    gpuprof_region_begin("loop");
    gp_test_pairs(base(), 200);
    gpuprof_region_end("loop");
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t top = rb_child(p, t, t->first_node, GPUPROF_IO_NODE_REGION, 0,
                            "loop");
    uint32_t sp[2];
    /* One calling context for the 200 waits: reported once there. */
    ck_assert_uint_eq(rb_find_below(p, t, top, GPUPROF_IO_NODE_GPU_OP,
                                    GPUPROF_OP_SYNC, sp, 2), 1);
    ck_assert_uint_eq(rb_val(p, sp[0], "detect.launch_wait"), 200);
    ck_assert_uint_eq(rb_val(p, sp[0], "blame.cpu_idle"), 200 * 50);
    ck_assert_uint_eq(sum(p, "blame.cpu_idle_cause", "loop", 0, "kl"),
                      200 * 50);
    gpuprof__io_profile_free(p);
    /* A second flush reports nothing again (the run was reported). */
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    p = rb_load();
    ck_assert_uint_eq(sum(p, "detect.launch_wait", "loop", 0, NULL), 200);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(launch_wait_silent_when_batched)
{
    start();
    uint64_t B = base();
    gpuprof_region_begin("batched");
    for (int i = 0; i < 200; i++) {
        gpuprof__sim_clock(B + (uint64_t)i * 100);
        ck_assert_int_eq(gpuprof__sim_kernel(0, "kb", 100), GPUPROF_OK);
    }
    gpuprof__sim_clock(0);
    ck_assert_int_eq(gpuprof__sim_wait(B, B + 200 * 100), GPUPROF_OK);
    gpuprof_region_end("batched");
    /* Below the threshold: 99 pairs, then two launches before a wait. */
    gpuprof_region_begin("short");
    gp_test_pairs(B + 1000000, 99);
    ck_assert_int_eq(gpuprof__sim_kernel(0, "kx", 10), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_kernel(0, "kx", 10), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    gpuprof_region_end("short");
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_opt(p, "detect.launch_wait", "batched"), 0);
    ck_assert_uint_eq(sum_opt(p, "detect.launch_wait", "short"), 0);
    /* The one wait: all 200 kernels ran during it, 100 ns of 20000 each. */
    ck_assert_uint_eq(sum(p, "blame.cpu_idle", "batched", 0, NULL), 20000);
    ck_assert_uint_eq(sum(p, "blame.cpu_idle_cause", "batched", 0, "kb"),
                      20000);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- the detectors' shared bookkeeping (core detect.c) -------------------
 * Read back into buf, then: its second half sent again (fires), another
 * buffer sent (silent); kernel k2 launched in contexts 7, 7, 8 (the third
 * fires), k1 twice in context 7 (silent). */
START_TEST(detectors_on_sim)
{
    start();
    static char buf[4096], other[4096];
    const char *O = "detect.output_as_input", *M = "detect.kernel_multi_context";
    gpuprof_region_begin("readback");
    ck_assert_int_eq(gpuprof__sim_copy_host(0, GPUPROF_OP_COPY_D2H, buf,
                                            sizeof(buf), 100), GPUPROF_OK);
    gpuprof_region_end("readback");
    gpuprof_region_begin("sent_again");
    ck_assert_int_eq(gpuprof__sim_copy_host(0, GPUPROF_OP_COPY_H2D,
                                            buf + 2048, 2048, 100), GPUPROF_OK);
    gpuprof_region_end("sent_again");
    gpuprof_region_begin("fresh");
    ck_assert_int_eq(gpuprof__sim_copy_host(0, GPUPROF_OP_COPY_H2D, other,
                                            sizeof(other), 100), GPUPROF_OK);
    gpuprof_region_end("fresh");
    gpuprof_region_begin("contexts");
    const uint32_t ctx[3] = {7, 7, 8};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(gpuprof__sim_kernel_in(1, "k2", ctx[i], 10),
                         GPUPROF_OK);
    gpuprof_region_end("contexts");
    gpuprof_region_begin("one_context");
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(gpuprof__sim_kernel_in(1, "k1", 7, 10), GPUPROF_OK);
    gpuprof_region_end("one_context");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum(p, O, "readback", 0, NULL), 0);
    ck_assert_uint_eq(sum(p, O, "sent_again", GPUPROF_OP_COPY_H2D, NULL), 1);
    ck_assert_uint_eq(sum(p, O, "fresh", 0, NULL), 0);
    ck_assert_uint_eq(sum(p, M, "contexts", GPUPROF_OP_KERNEL, NULL), 1);
    ck_assert_uint_eq(sum(p, M, "one_context", 0, NULL), 0);
    /* A finding is a note: the copies still count once each. */
    ck_assert_uint_eq(sum(p, "gpu.count", "sent_again", GPUPROF_OP_COPY_H2D,
                          NULL), 1);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- GPU_IDLE_CAUSE ------------------------------------------------------
 * Samples taken by hand (gpuprof__idle_sample_now: what the SIGPROF handler
 * does), with a period of 60 s of CPU time so that the timer itself never
 * fires: each sample weighs exactly 60 s. 5 samples with no kernel in
 * flight count; 3 taken while a kernel is in flight (launched, held in the
 * simulator: no activity yet) do not; 2 more after it completed count. */
void gp_test_idle_samples(int n);
__attribute__((noinline)) void gp_test_idle_samples(int n)
{
    for (int i = 0; i < n; i++)
        gpuprof__idle_sample_now();
    __asm__ volatile("" ::: "memory");
}

START_TEST(gpu_idle_cause_exact)
{
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    setenv("GPUPROF_IDLE_PERIOD_US", "60000000", 1);
    start();
    unsetenv("GPUPROF_IDLE_PERIOD_US");
    const uint64_t P = 60000000000ull;
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK); /* this thread's timer */
    ck_assert_uint_eq(gpuprof__idle_period_ns(), P);
    gpuprof_region_begin("idle");
    gp_test_idle_samples(5);
    gpuprof_region_end("idle");
    gpuprof__sim_hold(true);
    gpuprof_region_begin("busy");
    ck_assert_int_eq(gpuprof__sim_kernel(0, "kbusy", 1000), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof__gpu_busy_count(), 1);
    gp_test_idle_samples(3);
    gpuprof_region_end("busy");
    gpuprof__sim_hold(false);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK); /* delivered: done */
    ck_assert_uint_eq(gpuprof__gpu_busy_count(), 0);
    gpuprof_region_begin("after");
    gp_test_idle_samples(2);
    gpuprof_region_end("after");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK); /* drains */
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const char *GI = "blame.gpu_idle_cause";
    ck_assert_uint_eq(sum(p, GI, "idle", 0, NULL), 5 * P);
    ck_assert_uint_eq(sum(p, GI, "busy", 0, NULL), 0);
    ck_assert_uint_eq(sum(p, GI, "after", 0, NULL), 2 * P);
    /* On the sampling function's own frame, beneath the region. */
    const gpuprof__io_thread *t = &p->threads[0];
    uint64_t on_fn = 0;
    for (uint32_t i = t->first_node; i < t->first_node + t->node_count; i++)
        if (p->nodes[i].kind == GPUPROF_IO_NODE_FRAME && rb_val(p, i, GI) &&
            !strcmp(rb_frame_fn(p, i), "gp_test_idle_samples"))
            on_fn += rb_val(p, i, GI);
    ck_assert_uint_eq(on_fn, 7 * P);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"cpu_idle_and_cause_exact", cpu_idle_and_cause_exact, 60},
        {"launch_wait_fires_on_200_pairs", launch_wait_fires_on_200_pairs, 60},
        {"launch_wait_silent_when_batched", launch_wait_silent_when_batched,
         60},
        {"gpu_idle_cause_exact", gpu_idle_cause_exact, 60},
        {"detectors_on_sim", detectors_on_sim, 60},
    };
    return RUN_SUITE("blame", cases);
}
