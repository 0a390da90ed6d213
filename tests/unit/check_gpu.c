/*
 * check_gpu.c - the asynchronous pipeline with the simulated GPU: exact
 * attribution of every activity (T threads x N launches x S streams) under
 * the right region, call path and placeholder, with exact durations and
 * bytes; graph launches; unknown correlations; drops exactly counted at the
 * channel bound; threads that exit with work in flight; fork while work is
 * in flight; flushes during heavy traffic; the public op/activity API from a
 * foreign "runtime" thread. Run plain, under ASan/UBSan and under TSan.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/sim/sim.h"
#include "core/gpu.h"
#include "core/internal.h"
#include "io/io.h"
#include "support/nodes.h"
#include "support/readback.h"
#include "support/suite.h"

static char outdir[512];
static int keep_threads = GPUPROF_UNSET;

static int start_paused; /* the next start: GPUPROF_START_PAUSED */

static void start_with(int64_t channel_items, unsigned batch)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/gpu.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gp_sim_config sc = {3, batch, 7, 500, false, false};
    ck_assert_int_eq(gpuprof__sim_register(&sc), GPUPROF_OK);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "sim";
    o.cpu_sampling = "off"; /* threads counted exactly */
    o.signals = 0;
    o.channel_items = channel_items;
    o.keep_threads = keep_threads;
    o.start_paused = start_paused;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("sim", NULL, 0), GPUPROF_OK);
}

static void start(void) { start_with(GPUPROF_UNSET, 16); }




static const gpuprof__io_thread *thread_named(const gpuprof__io_profile *p,
                                              const char *name)
{
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (!strcmp(gpuprof__io_str(p, p->threads[i].name), name))
            return &p->threads[i];
    ck_abort_msg("no thread %s", name);
    return NULL;
}

static uint32_t region(const gpuprof__io_profile *p,
                       const gpuprof__io_thread *t, const char *name)
{
    uint32_t r = rb_child(p, t, t->first_node, GPUPROF_IO_NODE_REGION, 0, name);
    ck_assert_msg(r != UINT32_MAX, "no region %s", name);
    return r;
}

/* The one placeholder of `kind` beneath the top-level region `name`. */
static uint32_t placeholder(const gpuprof__io_profile *p,
                            const gpuprof__io_thread *t, const char *name,
                            uint32_t kind)
{
    uint32_t out[2];
    ck_assert_uint_eq(rb_find_below(p, t, region(p, t, name),
                                 GPUPROF_IO_NODE_GPU_OP, kind, out, 2), 1);
    return out[0];
}

/* ---- exact attribution: T threads x N launches x S streams ------------ */
enum { T = 4, N = 300, S = 3 };

static uint64_t kdur(int k, int i) { return 1000 + (uint64_t)k * 100 + (uint64_t)(i % 7); }
static uint64_t cbytes(int k, int i) { return 4096 * (uint64_t)(k + 1) + (uint64_t)i; }
static uint64_t cdur(int k, int i) { return 500 + (uint64_t)(i % 5) + (uint64_t)k; }

/* Non-static and not inlined: the innermost frame of every path. */
void gp_test_launch_all(int k);
__attribute__((noinline)) void gp_test_launch_all(int k)
{
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(gpuprof__sim_kernel((unsigned)(i % S),
                                             i % 2 ? "kern_b" : "kern_a",
                                             kdur(k, i)),
                         GPUPROF_OK);
        ck_assert_int_eq(gpuprof__sim_copy((unsigned)(i % S), GPUPROF_OP_COPY_H2D,
                                           cbytes(k, i), cdur(k, i)),
                         GPUPROF_OK);
    }
    __asm__ volatile("" ::: "memory");
}

/* Non-static too: dladdr must name it on the path. */
void *gp_test_worker(void *arg);
void *gp_test_worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof(name), "w%d", k);
    gpuprof_thread_set_name(name);
    gpuprof_region_begin("phase");
    gp_test_launch_all(k);
    gpuprof_region_end("phase");
    __asm__ volatile("" ::: "memory"); /* keep its frame: no tail call */
    return NULL; /* exits with its work in flight */
}

static void check_worker(const gpuprof__io_profile *p, int k)
{
    char name[16];
    snprintf(name, sizeof(name), "w%d", k);
    const gpuprof__io_thread *t = thread_named(p, name);
    uint32_t ph = region(p, t, "phase");
    uint32_t kp[4], cp[4];
    ck_assert_uint_eq(rb_find_below(p, t, ph, GPUPROF_IO_NODE_GPU_OP,
                                 GPUPROF_OP_KERNEL, kp, 4), 1);
    ck_assert_uint_eq(rb_find_below(p, t, ph, GPUPROF_IO_NODE_GPU_OP,
                                 GPUPROF_OP_COPY_H2D, cp, 4), 1);
    /* The innermost frame is the launching function, for both (two call
     * sites: two frames with one parent). */
    uint32_t kf = t->first_node + p->nodes[kp[0]].parent;
    uint32_t cf = t->first_node + p->nodes[cp[0]].parent;
    ck_assert_str_eq(rb_frame_fn(p, kf), "gp_test_launch_all");
    ck_assert_str_eq(rb_frame_fn(p, cf), "gp_test_launch_all");
    ck_assert_uint_ne(kf, cf);
    ck_assert_uint_eq(p->nodes[kf].parent, p->nodes[cf].parent);
    /* ... beneath the worker's own frame, beneath the region. */
    bool saw_worker = false;
    for (uint32_t a = kf; a != ph; a = t->first_node + p->nodes[a].parent) {
        ck_assert_int_eq(p->nodes[a].kind, GPUPROF_IO_NODE_FRAME);
        ck_assert_msg(a != t->first_node, "path does not reach the region");
        saw_worker |= !strcmp(rb_frame_fn(p, a), "gp_test_worker");
    }
    ck_assert_msg(saw_worker, "the thread's function is on the path");
    uint64_t ta = 0, tb = 0, cb = 0, ct = 0;
    for (int i = 0; i < N; i++) {
        *(i % 2 ? &tb : &ta) += kdur(k, i);
        cb += cbytes(k, i);
        ct += cdur(k, i);
    }
    uint32_t ka = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "kern_a");
    uint32_t kb = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "kern_b");
    ck_assert_uint_ne(ka, UINT32_MAX);
    ck_assert_uint_ne(kb, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, ka, "gpu.count"), N / 2);
    ck_assert_uint_eq(rb_val(p, kb, "gpu.count"), N / 2);
    ck_assert_uint_eq(rb_val(p, ka, "gpu.time"), ta);
    ck_assert_uint_eq(rb_val(p, kb, "gpu.time"), tb);
    ck_assert_uint_eq(rb_val(p, ka, "gpu.bytes"), 0);
    ck_assert_uint_eq(rb_val(p, kp[0], "gpu.count"), 0); /* all on kernels */
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.count"), N);
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.bytes"), cb);
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.time"), ct);
    ck_assert(t->flags & GPUPROF_IO_THREAD_EXITED);
}

START_TEST(exact_attribution)
{
    start();
    pthread_t th[T];
    for (int k = 0; k < T; k++)
        pthread_create(&th[k], NULL, gp_test_worker, (void *)(intptr_t)k);
    for (int k = 0; k < T; k++)
        pthread_join(th[k], NULL);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    for (int k = 0; k < T; k++)
        check_worker(p, k);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 2 * T * N);
    ck_assert_uint_eq(rb_counter(p, "gpu.operations"), 2 * T * N + 1);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    /* The sync placeholder of the main thread, beneath its root's path. */
    const gpuprof__io_thread *m = NULL;
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].flags & GPUPROF_IO_THREAD_MAIN)
            m = &p->threads[i];
    ck_assert_ptr_nonnull(m);
    uint32_t sp[2];
    ck_assert_uint_eq(rb_find_below(p, m, m->first_node, GPUPROF_IO_NODE_GPU_OP,
                                 GPUPROF_OP_SYNC, sp, 2), 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- graph launches: kernels sharing one correlation ------------------ */
START_TEST(graph_launch)
{
    start();
    const char *names[5] = {"g_a", "g_b", "g_a", "g_c", "g_a"};
    const uint64_t durs[5] = {10, 20, 30, 40, 50};
    gpuprof_region_begin("graph");
    for (int r = 0; r < 3; r++)
        ck_assert_int_eq(gpuprof__sim_graph(1, 5, names, durs), GPUPROF_OK);
    gpuprof_region_end("graph");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[1] = {placeholder(p, t, "graph", GPUPROF_OP_KERNEL)};
    uint32_t a = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "g_a");
    uint32_t b = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "g_b");
    uint32_t c = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "g_c");
    ck_assert_uint_eq(rb_val(p, a, "gpu.count"), 9);
    ck_assert_uint_eq(rb_val(p, a, "gpu.time"), 3 * (10 + 30 + 50));
    ck_assert_uint_eq(rb_val(p, b, "gpu.time"), 3 * 20);
    ck_assert_uint_eq(rb_val(p, c, "gpu.count"), 3);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 15);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- the public API, as a third-party backend uses it ----------------- */
typedef struct fake_rt {
    pthread_mutex_t mu;
    uint64_t corr[64];
    int n;
} fake_rt;
static fake_rt rt = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};

/* A "runtime API" that calls its "driver API": both hooked. */
static uint64_t driver_call(void)
{
    uint64_t c = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
    gpuprof_op_end(c);
    return c;
}

void gp_test_runtime_launch(void);
__attribute__((noinline)) void gp_test_runtime_launch(void)
{
    uint64_t c = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0); /* hook frame kept */
    ck_assert_uint_ne(c, 0);
    ck_assert_uint_eq(driver_call(), c); /* nested: same operation */
    ck_assert_int_eq(gpuprof_op_end(c + 1), GPUPROF_E_INVALID);
    pthread_mutex_lock(&rt.mu);
    rt.corr[rt.n++] = c;
    pthread_mutex_unlock(&rt.mu);
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_OK);
    __asm__ volatile("" ::: "memory");
}

static void *runtime_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < rt.n; i++) {
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = rt.corr[i];
        a.kind = GPUPROF_OP_KERNEL;
        a.start_ns = 100;
        a.end_ns = 100 + 7 * (uint64_t)(i + 1);
        a.name = "rt_kernel";
        ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_OK);
    }
    /* The same correlation again right after its final activity (still
     * attributed: siblings may arrive out of order), and one unknown. */
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = rt.corr[0];
    a.kind = GPUPROF_OP_KERNEL;
    a.end_ns = 1;
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_OK);
    a.correlation = 0xABCDEF;
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_OK);
    a.correlation = 0; /* invalid */
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_INVALID);
    return NULL;
}

START_TEST(public_api)
{
    start();
    gpuprof_region_begin("rt");
    volatile int times = 4; /* one call site: no unrolling */
    for (int i = 0; i < times; i++)
        gp_test_runtime_launch();
    gpuprof_region_end("rt");
    pthread_t th;
    pthread_create(&th, NULL, runtime_thread, NULL);
    pthread_join(th, NULL);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[1] = {placeholder(p, t, "rt", GPUPROF_OP_KERNEL)};
    ck_assert_str_eq(rb_frame_fn(p, t->first_node + p->nodes[kp[0]].parent),
                     "gp_test_runtime_launch");
    uint32_t k = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "rt_kernel");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 4);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 7 * (1 + 2 + 3 + 4));
    ck_assert_uint_eq(rb_val(p, kp[0], "gpu.count"), 1); /* the unnamed one */
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 1);
    ck_assert_uint_eq(rb_counter(p, "gpu.operations"), 4);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = 1;
    a.kind = GPUPROF_OP_KERNEL;
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_STATE);
}
END_TEST

/* ---- the bound: drops exactly counted --------------------------------- */
START_TEST(drops_counted_at_bound)
{
    enum { B = 16, L = 40 };
    start_with(B, 64);
    gpuprof__monitor_hold(true);
    gpuprof__sim_hold(true);
    gpuprof_region_begin("burst");
    for (int i = 0; i < L; i++)
        ck_assert_int_eq(gpuprof__sim_kernel(0, "k", 3), GPUPROF_OK);
    gpuprof_region_end("burst");
    uint64_t v;
    ck_assert_int_eq(gpuprof_stat_get("records.dropped", &v), GPUPROF_OK);
    ck_assert_uint_eq(v, L - B); /* the operation channel held B */
    gpuprof__monitor_hold(false);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[1] = {placeholder(p, t, "burst", GPUPROF_OP_KERNEL)};
    uint32_t k = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "k");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), B);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 3 * B);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), L - B);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), B);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

START_TEST(no_drops_below_bound)
{
    enum { B = 64 };
    start_with(B, 64);
    gpuprof__monitor_hold(true);
    gpuprof__sim_hold(true);
    for (int i = 0; i < B; i++)
        ck_assert_int_eq(gpuprof__sim_kernel(2, "k", 5), GPUPROF_OK);
    gpuprof__monitor_hold(false);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), B);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- activities that arrive after their thread is gone ---------------- */
static void *short_lived(void *arg)
{
    (void)arg;
    gpuprof_thread_set_name("short");
    gpuprof_region_begin("r");
    for (int i = 0; i < 100; i++)
        gpuprof__sim_copy(1, GPUPROF_OP_COPY_D2H, 8, 2);
    gpuprof_region_end("r");
    return NULL;
}

START_TEST(after_thread_exit)
{
    start();
    gpuprof__sim_hold(true); /* nothing completes before the thread exits */
    pthread_t th;
    pthread_create(&th, NULL, short_lived, NULL);
    pthread_join(th, NULL);
    gpuprof__sim_hold(false);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    /* Let the monitor thread apply them itself (the owner is gone). */
    for (int i = 0; i < 200; i++) {
        uint64_t v;
        gpuprof_stat_get("gpu.activities", &v);
        if (v == 100)
            break;
        usleep(5000);
    }
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = thread_named(p, "short");
    uint32_t cp[1] = {placeholder(p, t, "r", GPUPROF_OP_COPY_D2H)};
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.count"), 100);
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.bytes"), 800);
    ck_assert_uint_eq(rb_val(p, cp[0], "gpu.time"), 200);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- fork while work is in flight ------------------------------------- */
START_TEST(fork_in_flight)
{
    start();
    gpuprof__sim_hold(true);
    gpuprof_region_begin("before");
    for (int i = 0; i < 50; i++)
        gpuprof__sim_kernel(0, "pre", 4);
    gpuprof_region_end("before");
    pid_t pid = fork();
    ck_assert_int_ne(pid, -1);
    if (pid == 0) {
        /* The child has no simulated device and no monitor: launches are
         * refused, regions still work, and it writes its own profile. */
        int bad = gpuprof__sim_kernel(0, "child", 1) != GPUPROF_E_STATE;
        bad |= gpuprof_region_begin("child") != GPUPROF_OK;
        bad |= gpuprof_op_begin(GPUPROF_OP_KERNEL, 0) != 0;
        bad |= gpuprof_region_end("child") != GPUPROF_OK;
        bad |= gpuprof_finalize() != GPUPROF_OK;
        _exit(bad);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gpuprof__sim_hold(false);
    for (int i = 0; i < 50; i++)
        gpuprof__sim_kernel(0, "post", 6);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 100);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[1] = {placeholder(p, t, "before", GPUPROF_OP_KERNEL)};
    uint32_t k = rb_child(p, t, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "pre");
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 200);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- flushes during heavy traffic ------------------------------------ */
static _Atomic int stop_traffic;
static long traffic_cap = 200000; /* launches per thread */

static void *traffic(void *arg)
{
    long *n = arg;
    gpuprof_region_begin("traffic");
    while (!atomic_load(&stop_traffic) && *n < traffic_cap) {
        gpuprof__sim_kernel((unsigned)(*n % S), "t", 1);
        ++*n;
    }
    gpuprof_region_end("traffic");
    return NULL;
}

START_TEST(flush_under_traffic)
{
    const char *stress = getenv("GPUPROF_STRESS");
    double secs = 0.5;
    if (stress && !strcmp(stress, "long")) {
        traffic_cap = 50000000;
        secs = 20;
    }
    start();
    long n[2] = {0, 0};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, traffic, &n[i]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int flushes = 0;
    do { /* flushes while both threads launch: for `secs`, and at least
          * twice however slow a flush is (its fsync on a busy machine) */
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
        flushes++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while (flushes < 2 || (double)(t1.tv_sec - t0.tv_sec) +
                                    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 <
                                secs);
    atomic_store(&stop_traffic, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    /* The launch loops outrun the pipeline: beyond the bound records are
     * dropped, and every launch is either attributed or counted dropped. */
    uint64_t got = rb_counter(p, "gpu.activities");
    ck_assert_uint_eq(got + rb_counter(p, "records.dropped"),
                      (uint64_t)(n[0] + n[1]));
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        if (p->nodes[i].kind == GPUPROF_IO_NODE_KERNEL)
            sum += rb_val(p, i, "gpu.count");
    ck_assert_uint_eq(sum, got);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- a thread per task: sources freed and their slots reused --------- */
static void *one_task(void *arg)
{
    (void)arg;
    gpuprof_region_begin("task");
    gpuprof__sim_kernel(2, "task_kernel", 9);
    gpuprof_region_end("task");
    return NULL;
}

static void tasks_attributed(const gpuprof__io_profile *p, uint64_t tasks)
{
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), tasks);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        if (p->nodes[i].kind == GPUPROF_IO_NODE_KERNEL) {
            ck_assert_uint_eq(rb_val(p, i, "gpu.time"), 9 * rb_val(p, i, "gpu.count"));
            sum += rb_val(p, i, "gpu.count");
        }
    ck_assert_uint_eq(sum, tasks);
}

static void run_tasks(int tasks)
{
    for (int i = 0; i < tasks; i++) {
        pthread_t th;
        pthread_create(&th, NULL, one_task, NULL);
        pthread_join(th, NULL);
        if (i % 50 == 49) /* the monitor frees closed sources meanwhile */
            ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}

START_TEST(thread_per_task)
{
    enum { TASKS = 300 };
    start();
    run_tasks(TASKS);
    gpuprof__io_profile *p = rb_load();
    tasks_attributed(p, TASKS);
    uint64_t exited = 0;
    for (uint32_t t = 0; t < p->thread_count; t++)
        exited += (p->threads[t].flags & GPUPROF_IO_THREAD_EXITED) != 0;
    ck_assert_uint_eq(exited, 256 + 1); /* kept apart (default), merged */
    gpuprof__io_profile_free(p);
}
END_TEST

/* Beyond keep_threads, exited GPU threads are merged once the monitor is
 * done with them: bounded memory, nothing lost. */
START_TEST(thread_per_task_merged)
{
    enum { TASKS = 300, KEEP = 4 };
    keep_threads = KEEP;
    start();
    run_tasks(TASKS);
    gpuprof__io_profile *p = rb_load();
    tasks_attributed(p, TASKS);
    ck_assert_uint_eq(p->thread_count, KEEP + 2); /* + merged + main */
    const gpuprof__io_thread *m = thread_named(p, "exited threads (merged)");
    ck_assert(m->flags & GPUPROF_IO_THREAD_MERGED);
    uint32_t kp[1] = {placeholder(p, m, "task", GPUPROF_OP_KERNEL)};
    uint32_t k = rb_child(p, m, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "task_kernel");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), TASKS - KEEP);
    ck_assert_uint_eq(rb_val(p, region(p, m, "task"), "region.visits"),
                      TASKS - KEEP);
    ck_assert_uint_eq(rb_counter(p, "gpu.operations"), TASKS + 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Threads that exit before their activities arrive (beyond keep_threads):
 * flushes meanwhile must not merge them; once the activities are in, they
 * are merged with them. */
static uint64_t late_corr[64];

static void *late_task(void *arg)
{
    int i = (int)(intptr_t)arg;
    gpuprof_region_begin("late");
    late_corr[i] = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
    gpuprof_op_end(late_corr[i]);
    gpuprof_region_end("late");
    return NULL;
}

START_TEST(merge_waits_for_activities)
{
    enum { TASKS = 64, KEEP = 2 };
    keep_threads = KEEP;
    start();
    for (int i = 0; i < TASKS; i++) {
        pthread_t th;
        pthread_create(&th, NULL, late_task, (void *)(intptr_t)i);
        pthread_join(th, NULL);
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->thread_count, TASKS); /* none merged yet */
    gpuprof__io_profile_free(p);
    for (int i = 0; i < TASKS; i++) {
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = late_corr[i];
        a.kind = GPUPROF_OP_KERNEL;
        a.start_ns = 1000;
        a.end_ns = 1000 + (uint64_t)i;
        a.name = "late_kernel";
        ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    p = rb_load();
    ck_assert_uint_eq(p->thread_count, KEEP + 1); /* + merged */
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), TASKS);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    uint64_t count = 0, time = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        if (p->nodes[i].kind == GPUPROF_IO_NODE_KERNEL) {
            count += rb_val(p, i, "gpu.count");
            time += rb_val(p, i, "gpu.time");
        }
    ck_assert_uint_eq(count, TASKS);
    ck_assert_uint_eq(time, TASKS * (TASKS - 1) / 2);
    const gpuprof__io_thread *m = thread_named(p, "exited threads (merged)");
    uint32_t kp[1] = {placeholder(p, m, "late", GPUPROF_OP_KERNEL)};
    uint32_t k = rb_child(p, m, kp[0], GPUPROF_IO_NODE_KERNEL, 0, "late_kernel");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), TASKS - KEEP);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- paused: nothing recorded, nothing unattributed ------------------- */
START_TEST(paused_records_nothing)
{
    start();
    /* Paused while an operation is open: nesting still balances. */
    uint64_t c = gpuprof_op_begin(GPUPROF_OP_SYNC, 0);
    ck_assert_uint_ne(c, 0);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_op_begin(GPUPROF_OP_SYNC, 0), c);
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_op_begin(GPUPROF_OP_SYNC, 0), 0); /* paused */
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_E_INVALID); /* closed */
    for (int i = 0; i < 10; i++)
        gpuprof__sim_kernel(0, "paused", 1);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    gpuprof__sim_kernel(0, "live", 1);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 1);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "records.paused"), 10);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Work launched while paused whose records arrive after gpuprof_start
 * (the runtime delivers late: the simulator holds its records): counted
 * records.paused, exactly, never records.unattributed; what was launched
 * measuring is attributed as ever. */
START_TEST(paused_launches_counted_paused)
{
    start_paused = 1;
    start();
    gpuprof__sim_hold(true);
    const char *names[3] = {"ga", "gb", "gc"};
    const uint64_t d[3] = {5, 6, 7};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(gpuprof__sim_kernel(0, "early", 10), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_graph(1, 3, names, d), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_copy(2, GPUPROF_OP_COPY_H2D, 64, 3),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_copy(2, GPUPROF_OP_COPY_D2H, 64, 3),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(gpuprof__sim_kernel(0, "live", 10), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(gpuprof__sim_kernel(1, "stopped", 10), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    gpuprof__sim_hold(false);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "records.paused"), 7 + 3 + 2 + 4);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 5);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- call paths cut at the depth limit -------------------------------- */
/* Launches from 300 frames deep (GP_MAX_FRAMES is 128): their paths lack
 * the outermost frames, so they go beneath one <truncated> node under the
 * region, each counted; a shallow launch's path stays whole beside it.
 *
 * callpaths.truncated counts every path cut, GPU_IDLE_CAUSE samples' too
 * (idle.c: 40 frames): the SIGPROF timer that a thread's first launch
 * starts (every 2 ms of its CPU time) lands in deep() whenever unwinding
 * 300 frames three times takes that long, as under ASan, and no kernel is
 * in flight there (they last 10 ns). So the count of the launches' cut
 * paths is exact only with the timer off (GPUPROF_IDLE_PERIOD_US=0), and
 * a sample taken in deep() on purpose adds exactly one. */
enum { DEEP = 300, DEEP_LAUNCHES = 3 };
static volatile int deep_sink;
static int deep_sample; /* deep() takes one GPU_IDLE_CAUSE sample there */

__attribute__((noinline)) static void deep(int n)
{
    if (n > 0)
        deep(n - 1);
    else {
        for (int i = 0; i < DEEP_LAUNCHES; i++)
            gpuprof__sim_kernel(0, "deepk", 10);
        if (deep_sample) { /* none in flight: the sample is taken */
            while (gpuprof__gpu_busy_count() != 0) /* no unwinding here */
                nanosleep(&(struct timespec){0, 1000000}, NULL);
            gpuprof__idle_sample_now();
        }
    }
    deep_sink++; /* no tail call: every level keeps its frame */
}

/* start() with the GPU_IDLE_CAUSE timer's period (microseconds). */
static void start_idle_period(const char *us, uint64_t want_ns)
{
    setenv("GPUPROF_IDLE_PERIOD_US", us, 1);
    start();
    unsetenv("GPUPROF_IDLE_PERIOD_US");
    ck_assert_uint_eq(gpuprof__idle_period_ns(), want_ns);
}

/* Is absolute node `n` beneath absolute node `top`? */
static bool beneath(const gpuprof__io_profile *p, const gpuprof__io_thread *t,
                    uint32_t n, uint32_t top)
{
    while (n != top && p->nodes[n].parent != GPUPROF_IO_NONE)
        n = t->first_node + p->nodes[n].parent;
    return n == top;
}

/* The main thread, its region "deep", and the <truncated> node beneath
 * it: one, beside exactly one other frame (the whole paths' root). */
static uint32_t deep_cut(const gpuprof__io_profile *p,
                         const gpuprof__io_thread **tp, uint32_t *rp)
{
    const gpuprof__io_thread *t = NULL;
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].flags & GPUPROF_IO_THREAD_MAIN)
            t = &p->threads[i];
    ck_assert_ptr_nonnull(t);
    uint32_t r = region(p, t, "deep"), cut = UINT32_MAX, frames = 0;
    for (uint32_t i = r + 1; i < t->first_node + t->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (t->first_node + n->parent != r || n->kind != GPUPROF_IO_NODE_FRAME)
            continue;
        frames++;
        if (!strcmp(gpuprof__io_str(p, p->modules[n->key_a].path),
                    "<truncated>")) {
            ck_assert_uint_eq(n->key_b, 0);
            cut = i;
        }
    }
    ck_assert_uint_ne(cut, UINT32_MAX);
    ck_assert_uint_eq(frames, 2); /* <truncated> and the whole paths' root */
    *tp = t;
    *rp = r;
    return cut;
}

START_TEST(deep_paths_beneath_truncated)
{
    start_idle_period("0", 0); /* only the launches unwind */
    gpuprof_region_begin("deep");
    deep(DEEP);
    gpuprof__sim_kernel(0, "shallowk", 10);
    gpuprof_region_end("deep");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "callpaths.truncated"), DEEP_LAUNCHES);
    const gpuprof__io_thread *t;
    uint32_t r, cut = deep_cut(p, &t, &r);
    /* Every deep launch beneath <truncated> (an unwinder may see the three
     * launches' paths differ: count over every deepk node), the shallow
     * one not. */
    uint64_t deep_count = 0, shallow_count = 0;
    for (uint32_t i = r + 1; i < t->first_node + t->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (n->kind != GPUPROF_IO_NODE_KERNEL)
            continue;
        const char *name = gpuprof__io_str(p, n->key_a);
        if (!strcmp(name, "deepk")) {
            ck_assert(beneath(p, t, i, cut));
            deep_count += rb_val(p, i, "gpu.count");
        }
        if (!strcmp(name, "shallowk")) {
            ck_assert(!beneath(p, t, i, cut));
            shallow_count += rb_val(p, i, "gpu.count");
        }
    }
    ck_assert_uint_eq(deep_count, DEEP_LAUNCHES);
    ck_assert_uint_eq(shallow_count, 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* A GPU_IDLE_CAUSE sample taken 300 frames deep is cut too: counted, its
 * one period of blame beneath the same <truncated> node (the timer's
 * period is a minute: no sample but this one). */
START_TEST(deep_sample_counted_truncated)
{
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    const uint64_t period = 60000000000ull;
    start_idle_period("60000000", period);
    deep_sample = 1;
    gpuprof_region_begin("deep");
    deep(DEEP);
    gpuprof__sim_kernel(0, "shallowk", 10); /* drains the sample */
    gpuprof_region_end("deep");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "callpaths.truncated"), DEEP_LAUNCHES + 1);
    const gpuprof__io_thread *t;
    uint32_t r, cut = deep_cut(p, &t, &r);
    uint64_t blame = 0, blame_cut = 0;
    for (uint32_t i = r; i < t->first_node + t->node_count; i++) {
        uint64_t v = rb_val(p, i, "blame.gpu_idle_cause");
        blame += v;
        blame_cut += beneath(p, t, i, cut) ? v : 0;
    }
    ck_assert_uint_eq(blame, period);
    ck_assert_uint_eq(blame_cut, period);
    gpuprof__io_profile_free(p);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"exact_attribution", exact_attribution, 120},
        {"graph_launch", graph_launch, 30},
        {"public_api", public_api, 30},
        {"drops_counted_at_bound", drops_counted_at_bound, 30},
        {"no_drops_below_bound", no_drops_below_bound, 30},
        {"after_thread_exit", after_thread_exit, 30},
        {"fork_in_flight", fork_in_flight, 60},
        {"flush_under_traffic", flush_under_traffic, 600},
        {"paused_records_nothing", paused_records_nothing, 30},
        {"paused_launches_counted_paused", paused_launches_counted_paused, 30},
        {"deep_paths_beneath_truncated", deep_paths_beneath_truncated, 60},
        {"deep_sample_counted_truncated", deep_sample_counted_truncated, 60},
        {"thread_per_task", thread_per_task, 120},
        {"thread_per_task_merged", thread_per_task_merged, 120},
        {"merge_waits_for_activities", merge_waits_for_activities, 60},
    };
    return RUN_SUITE("gpu", cases);
}
