/*
 * check_papi.c - the PAPI backend (lib/backends/papi) on the fake libpapi
 * of the test tree (tests/fakepapi/, loaded through GPUPROF_PAPI_LIBRARY),
 * so every machine runs it, PMU or not, with exact answers: each thread
 * scripts its own counts (fakepapi_add: fake::WORK, fake::BYTES), and
 * fake::READS counts the reads of a thread's event set, one per interval
 * the backend gives away. Per region, per thread, nested (exclusive and
 * inclusive), per GPU API call (any backend's hook, the sim backend's),
 * paused, and the lines for events, components and libraries that cannot
 * be used. The same cases against real PAPI and the thread's CPU time:
 * check_papi_real.c.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <papi.h>

#include "backends/sim/sim.h"
#include "core/internal.h"
#include "support/nodes.h"
#include "support/papi_case.h"
#include "support/readback.h"
#include "support/suite.h"

#define W "papi.fake.work"
#define BY "papi.fake.bytes"
#define RD "papi.fake.reads"

static char fake_lib[PATH_MAX];
static int (*fake_add)(const char *, long long);

/* Measures with the fake libpapi and finds its control function. */
static void start_fake(const char *backends, const char *events)
{
    if (!getenv("PAPI_CASE_SAMPLING"))
        unsetenv("GPUPROF_PAPI_SAMPLING");
    pc_beside("libfakepapi.so", fake_lib, sizeof(fake_lib));
    setenv("GPUPROF_PAPI_LIBRARY", fake_lib, 1);
    pc_start(backends, events);
    void *h = dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD);
    ck_assert_msg(h != NULL, "the backend did not load %s", fake_lib);
    *(void **)&fake_add = dlsym(h, "fakepapi_add");
    ck_assert_ptr_nonnull(fake_add);
}

#define ADD(event, n) ck_assert_int_eq(fake_add((event), (n)), 0)

/* ---- per region --------------------------------------------------------- */
/* a { 10 work, 100 bytes } three times, 1000 work at the root after each,
 * b { 7 work } once: exact, the first visit's values written at a flush. */
START_TEST(per_region_exact)
{
    start_fake("papi", "fake::WORK,fake::BYTES");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pc_lines_with("papi: counting 2 event(s) on every "
                                   "thread, in 1 event set(s): fake::WORK, "
                                   "fake::BYTES"),
                     1);
    for (int i = 0; i < 3; i++) {
        gpuprof_region_begin("a");
        ADD("fake::WORK", 10);
        ADD("fake::BYTES", 100);
        gpuprof_region_end("a");
        ADD("fake::WORK", 1000);
        if (i == 0)
            ck_assert_uint_eq(pc_flushed("a", W), 10);
    }
    gpuprof_region_begin("b");
    ADD("fake::WORK", 7);
    gpuprof_region_end("b");
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t a = pc_region(p, t, t->first_node, "a");
    uint32_t b = pc_region(p, t, t->first_node, "b");
    ck_assert_uint_eq(rb_val(p, a, W), 30);
    ck_assert_uint_eq(rb_val(p, a, BY), 300);
    ck_assert_uint_eq(rb_val(p, b, W), 7);
    ck_assert_uint_eq(rb_val(p, b, BY), 0);
    ck_assert_uint_eq(rb_val(p, t->first_node, W), 3000);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, W), 3037);
    /* The metrics carry the event's name, PAPI's description and unit. */
    uint32_t m = rb_metric(p, W);
    ck_assert_str_eq(gpuprof__io_str(p, p->metrics[m].description),
                     "PAPI event fake::WORK: work the thread scripted");
    ck_assert_int_eq(p->metrics[m].unit, GPUPROF_IO_UNIT_COUNT);
    ck_assert_int_eq(p->metrics[rb_metric(p, BY)].unit, GPUPROF_IO_UNIT_BYTES);
    gpuprof__io_profile_free(p);
}
END_TEST

/* outer { 20; inner { 30 }; 10 }, twice, a flush between: exclusive 60
 * and 60, inclusive 120, the first pass half of it. */
static void nested_pass(void)
{
    gpuprof_region_begin("outer");
    ADD("fake::WORK", 20);
    gpuprof_region_begin("inner");
    ADD("fake::WORK", 30);
    gpuprof_region_end("inner");
    ADD("fake::WORK", 10);
    gpuprof_region_end("outer");
}

START_TEST(inclusive_exclusive)
{
    start_fake("papi", "fake::WORK");
    nested_pass();
    ck_assert_uint_eq(pc_flushed("outer", W), 30);
    nested_pass();
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t o = pc_region(p, t, t->first_node, "outer");
    uint32_t in = pc_region(p, t, o, "inner");
    ck_assert_uint_eq(rb_val(p, in, W), 60);
    ck_assert_uint_eq(rb_val(p, o, W), 60);
    ck_assert_uint_eq(pc_incl(p, t, o, W), 120);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- threads ------------------------------------------------------------ */
typedef struct worker {
    long long work;
    uint64_t tid;
} worker;

static pthread_barrier_t bar;

static void *work(void *arg)
{
    worker *w = arg;
    w->tid = pc_tid();
    gpuprof_region_begin("task");
    ADD("fake::WORK", w->work);
    gpuprof_region_end("task");
    pthread_barrier_wait(&bar); /* both counting: the main thread looks */
    pthread_barrier_wait(&bar);
    return NULL;
}

static int (*list_threads)(unsigned long *, int *);

static int papi_threads(void)
{
    unsigned long ids[64];
    int n = 64;
    ck_assert_int_eq(list_threads(ids, &n), 0);
    return n;
}

/* Each thread its own counts, exactly; each registered with PAPI while it
 * counts and unregistered at its exit. */
START_TEST(two_threads)
{
    start_fake("papi", "fake::WORK");
    *(void **)&list_threads = dlsym(dlopen(fake_lib, RTLD_NOW | RTLD_NOLOAD),
                                    "PAPI_list_threads");
    ck_assert_ptr_nonnull(list_threads);
    gpuprof_region_begin("main");
    ADD("fake::WORK", 5);
    int before = papi_threads();
    worker w[2] = {{64, 0}, {16, 0}};
    pthread_t th[2];
    pthread_barrier_init(&bar, NULL, 3);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, work, &w[i]);
    pthread_barrier_wait(&bar);
    ck_assert_int_eq(papi_threads(), before + 2);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(papi_threads(), before);
    ADD("fake::WORK", 6);
    gpuprof_region_end("main");
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    for (int i = 0; i < 2; i++) {
        const gpuprof__io_thread *t = pc_thread(p, w[i].tid);
        uint32_t r = pc_region(p, t, t->first_node, "task");
        ck_assert_uint_eq(rb_val(p, r, W), (uint64_t)w[i].work);
        ck_assert_uint_eq(pc_incl(p, t, t->first_node, W),
                          (uint64_t)w[i].work);
    }
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    ck_assert_uint_eq(rb_val(p, pc_region(p, t, t->first_node, "main"), W),
                      11);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- events, components and libraries that cannot be used -------------- */
START_TEST(unknown_event_named)
{
    start_fake("papi", "bogus::NOPE, fake::WORK,PAPI_TOT_INS,fake::REFUSED");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pc_lines_with("bogus::NOPE"), 1);
    ck_assert_int_eq(pc_lines_with("papi: event bogus::NOPE is unknown to "
                                   "this PAPI (Event does not exist); the "
                                   "other events are counted"),
                     1);
    ck_assert_int_eq(pc_lines_with("papi: event PAPI_TOT_INS cannot be "
                                   "counted here (Event does not exist); "),
                     1);
    /* Accepted into the set, refused when the set starts. */
    ck_assert_int_eq(pc_lines_with("papi: event fake::REFUSED cannot be "
                                   "counted here (Event conflicts with the "
                                   "event set (fake): with the events before "
                                   "it)"),
                     1);
    ck_assert_int_eq(pc_lines_with("no GPU component (cuda, rocm, "
                                   "intel_gpu)"),
                     1);
    ck_assert_int_eq(pc_lines_with("counting 1 event(s) on every thread, in "
                                   "1 event set(s): fake::WORK\n"),
                     1);
    for (int pass = 0; pass < 2; pass++) {
        gpuprof_region_begin("r");
        ADD("fake::WORK", 40);
        gpuprof_region_end("r");
        if (pass == 0)
            ck_assert_uint_eq(pc_flushed("r", W), 40);
    }
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    ck_assert_uint_eq(rb_val(p, pc_region(p, t, t->first_node, "r"), W), 80);
    for (uint32_t i = 0; i < p->metric_count; i++) /* only the one kept */
        ck_assert(strncmp(gpuprof__io_str(p, p->metrics[i].name), "papi.", 5) ||
                  !strcmp(gpuprof__io_str(p, p->metrics[i].name), W));
    gpuprof__io_profile_free(p);
}
END_TEST

/* A GPU component PAPI has but disabled, one it lacks: each said. */
START_TEST(gpu_components_named)
{
    setenv("FAKEPAPI_CUDA_DISABLED", "no driver (fake)", 1);
    start_fake("papi", "cuda:::sm__inst_executed,rocm:::x,fake::WORK");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pc_lines_with("papi: event cuda:::sm__inst_executed is "
                                   "unknown to this PAPI (Event does not "
                                   "exist); PAPI's cuda component is "
                                   "disabled: no driver (fake); the other "
                                   "events are counted"),
                     1);
    ck_assert_int_eq(pc_lines_with("papi: event rocm:::x is unknown to this "
                                   "PAPI (Event does not exist); this PAPI "
                                   "has no rocm component; the other events "
                                   "are counted"),
                     1);
    ck_assert_int_eq(pc_lines_with("papi: GPU components: cuda (disabled: no "
                                   "driver (fake)); their events"),
                     1);
    gpuprof_finalize();
}
END_TEST

/* The program's own regions are measured exactly as without the backend. */
static void regions_unchanged(void)
{
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("r"), GPUPROF_OK);
    }
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "r");
    ck_assert_uint_eq(rb_val(p, r, "region.visits"), 3);
    for (uint32_t i = 0; i < p->metric_count; i++)
        ck_assert(strncmp(gpuprof__io_str(p, p->metrics[i].name), "papi.", 5));
    gpuprof__io_profile_free(p);
}

START_TEST(all_events_unavailable)
{
    start_fake("papi", "bogus::A,PAPI_TOT_INS");
    char why[512] = "";
    ck_assert_int_eq(gpuprof_backend_status("papi", why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_str_eq(why, "none of the events of GPUPROF_PAPI_EVENTS="
                          "bogus::A,PAPI_TOT_INS can be counted (each is "
                          "said above)");
    ck_assert_int_eq(pc_lines_with("backend papi unavailable"), 1);
    regions_unchanged();
}
END_TEST

START_TEST(version_mismatch)
{
    setenv("FAKEPAPI_VERSION", "6.1", 1);
    start_fake("papi", "fake::WORK");
    char why[512] = "", want[128];
    snprintf(want, sizeof(want), "libpapi is version 6.1, this build wants "
             "%d.%d", PAPI_VERSION_MAJOR(PAPI_VERSION),
             PAPI_VERSION_MINOR(PAPI_VERSION));
    ck_assert_int_eq(gpuprof_backend_status("papi", why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_str_eq(why, want);
    regions_unchanged();
}
END_TEST

START_TEST(libpapi_missing)
{
    setenv("GPUPROF_PAPI_LIBRARY", "/nonexistent/libpapi.so.7.0", 1);
    pc_start("papi", "fake::WORK");
    char why[512] = "";
    ck_assert_int_eq(gpuprof_backend_status("papi", why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "GPUPROF_PAPI_LIBRARY=/nonexistent/libpapi.so"
                              ".7.0 cannot be loaded"),
                  "%s", why);
    ck_assert_ptr_null(dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_NOLOAD));
    regions_unchanged();
}
END_TEST

START_TEST(events_not_set)
{
    pc_start("papi", NULL);
    char why[512] = "";
    ck_assert_int_eq(gpuprof_backend_status("papi", why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "GPUPROF_PAPI_EVENTS is not set"), "%s", why);
    ck_assert_ptr_null(dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_NOLOAD));
    regions_unchanged();
}
END_TEST

/* ---- GPU API calls ------------------------------------------------------ */
/* An operation as any backend's hook makes it, with `n` work inside. */
void papi_test_api_call(long long n);
__attribute__((noinline)) void papi_test_api_call(long long n)
{
    uint64_t c = gpuprof_op_begin(GPUPROF_OP_MEMSET, 0);
    ck_assert_uint_ne(c, 0);
    ADD("fake::WORK", n);
    gpuprof_op_end(c);
}

__attribute__((noinline)) static void op_pass(void)
{
    gpuprof_region_begin("r");
    ADD("fake::WORK", 12);
    papi_test_api_call(7);
    ADD("fake::WORK", 3);
    gpuprof_region_end("r");
}

START_TEST(op_context_exact)
{
    start_fake("papi", "fake::WORK");
    for (volatile int pass = 0; pass < 2; pass++) { /* one call path */
        op_pass();
        if (pass == 0)
            gpuprof_flush();
    }
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "r");
    uint32_t ctx = pc_op_context(p, t, r, GPUPROF_OP_MEMSET);
    ck_assert_str_eq(rb_frame_fn(p, ctx), "papi_test_api_call");
    ck_assert_uint_eq(rb_val(p, ctx, W), 14);
    ck_assert_uint_eq(rb_val(p, r, W), 30);
    ck_assert_uint_eq(pc_incl(p, t, r, W), 44);
    gpuprof__io_profile_free(p);
}
END_TEST

void papi_test_launch(void);
__attribute__((noinline)) void papi_test_launch(void)
{
    ck_assert_int_eq(gpuprof__sim_kernel(0, "ka", 1000), GPUPROF_OK);
}

/* 50 launches on the sim backend, 2 work between each two: the calls'
 * context gets one interval per call and no work, the region the work and
 * one interval more than the calls (before each, and after the last). */
START_TEST(sim_api_calls)
{
    ck_assert_int_eq(gpuprof__sim_register(NULL), GPUPROF_OK);
    start_fake("sim,papi", "fake::WORK,fake::READS");
    ck_assert_int_eq(gpuprof_backend_status("sim", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    gpuprof_region_begin("launches");
    for (int i = 0; i < 50; i++) {
        papi_test_launch();
        ADD("fake::WORK", 2);
    }
    gpuprof_region_end("launches");
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "launches");
    uint32_t ctx = pc_op_context(p, t, r, GPUPROF_OP_KERNEL);
    ck_assert_str_eq(rb_frame_fn(p, ctx), "papi_test_launch");
    ck_assert_uint_eq(rb_val(p, ctx, RD), 50);
    ck_assert_uint_eq(rb_val(p, ctx, W), 0);
    ck_assert_uint_eq(rb_val(p, r, RD), 51);
    ck_assert_uint_eq(rb_val(p, r, W), 100);
    ck_assert_uint_eq(pc_incl(p, t, r, RD), 101);
    uint32_t ph = 0;
    rb_find_below(p, t, r, GPUPROF_IO_NODE_GPU_OP, GPUPROF_OP_KERNEL, &ph, 1);
    uint32_t k = rb_child(p, t, ph, GPUPROF_IO_NODE_KERNEL, 0, "ka");
    ck_assert_uint_ne(k, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 50);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- pause -------------------------------------------------------------- */
START_TEST(pause_drops_paused_counts)
{
    start_fake("papi", "fake::WORK");
    for (int pass = 0; pass < 2; pass++) {
        gpuprof_region_begin("r");
        ADD("fake::WORK", 10);
        gpuprof_stop();
        ADD("fake::WORK", 30); /* paused: nobody's */
        gpuprof_start();
        ADD("fake::WORK", 5);
        gpuprof_region_end("r");
        if (pass == 0)
            ck_assert_uint_eq(pc_flushed("r", W), 15);
    }
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    ck_assert_uint_eq(rb_val(p, pc_region(p, t, t->first_node, "r"), W), 30);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, W), 30);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- overflow samples (GPUPROF_PAPI_SAMPLING) --------------------------- */
#define WS "papi.fake.work.sampled"

static void start_sampled(const char *events, const char *sampling)
{
    setenv("PAPI_CASE_SAMPLING", "1", 1);
    setenv("GPUPROF_PAPI_SAMPLING", sampling, 1);
    start_fake("papi", events);
    unsetenv("PAPI_CASE_SAMPLING");
}

/* Metric m summed over the nodes of thread t whose call path passes
 * through a frame of function fn (and, with `region`, beneath it). A TSan
 * build does not unwind in signal handlers (core/unwind.c): samples keep
 * their region without a path, so there `want` is taken as the answer and
 * the suites check the region's sum instead. */
#if defined(__SANITIZE_THREAD__)
#define AT_FN(p, t, fn, region, m, want) (want)
#else
#define AT_FN(p, t, fn, region, m, want) at_fn(p, t, fn, region, m)
#endif
static __attribute__((unused)) uint64_t
at_fn(const gpuprof__io_profile *p, const gpuprof__io_thread *t,
      const char *fn, uint32_t region, const char *m)
{
    uint64_t s = 0;
    for (uint32_t i = t->first_node; i < t->first_node + t->node_count; i++) {
        uint64_t v = rb_val(p, i, m);
        if (!v)
            continue;
        bool in_fn = false, in_region = region == UINT32_MAX;
        for (uint32_t a = i; a != t->first_node;
             a = t->first_node + p->nodes[a].parent) {
            if (p->nodes[a].kind == GPUPROF_IO_NODE_FRAME &&
                !strcmp(rb_frame_fn(p, a), fn))
                in_fn = true;
            if (a == region)
                in_region = true;
        }
        if (in_fn && in_region)
            s += v;
    }
    return s;
}

/* Each call adds 100 work (the threshold): one overflow, one sample. */
void papi_burn_a(int n);
__attribute__((noinline)) void papi_burn_a(int n)
{
    for (int i = 0; i < n; i++)
        ADD("fake::WORK", 100);
    __asm__ volatile("" ::: "memory");
}
void papi_burn_b(int n);
__attribute__((noinline)) void papi_burn_b(int n)
{
    for (int i = 0; i < n; i++)
        ADD("fake::WORK", 50); /* every other call overflows */
    __asm__ volatile("" ::: "memory");
}

typedef struct burner {
    int a, b;
    int regions; /* 0: never calls the library */
    uint64_t tid;
} burner;

static void *burn(void *arg)
{
    burner *w = arg;
    w->tid = pc_tid();
    if (w->regions)
        gpuprof_region_begin("task");
    papi_burn_a(w->a);
    papi_burn_b(w->b);
    if (w->regions)
        gpuprof_region_end("task");
    return NULL;
}

/* fake::WORK sampled every 100: each overflow is one sample of 100 at the
 * call path that crossed the threshold, beneath its region, on every
 * thread (papi.sh samples a thread that never calls the library, which
 * needs lib/host's pthread_create). Counted per region as before. */
START_TEST(overflow_samples_exact)
{
    start_sampled("fake::WORK", "fake::WORK@100");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pc_lines_with("papi: sampling fake::WORK every 100 "
                                   "events on every thread"), 1);
    burner w[2] = {{30, 40, 1, 0}, {7, 4, 0, 0}};
    w[1].regions = 1; /* a thread that never calls the library: papi.sh */
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&th[i], NULL, burn, &w[i]);
        pthread_join(th[i], NULL); /* one at a time: exact call paths */
    }
    gpuprof_region_begin("main");
    papi_burn_a(12);
    papi_burn_b(6);
    gpuprof_region_end("main");
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "main");
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_a", r, WS, 1200), 1200);
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_b", r, WS, 300), 300);
    ck_assert_uint_eq(pc_incl(p, t, r, WS), 1500);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, WS), 1500);
    ck_assert_uint_eq(rb_val(p, r, W), 1500); /* counted, as before */
    t = pc_thread(p, w[0].tid);
    r = pc_region(p, t, t->first_node, "task");
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_a", r, WS, 3000), 3000);
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_b", r, WS, 2000), 2000);
    ck_assert_uint_eq(pc_incl(p, t, r, WS), 5000);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, WS), 5000);
    ck_assert_uint_eq(rb_val(p, r, W), 5000);
    t = pc_thread(p, w[1].tid);
    r = pc_region(p, t, t->first_node, "task");
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_a", r, WS, 700), 700);
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_b", r, WS, 200), 200);
    ck_assert_uint_eq(pc_incl(p, t, r, WS), 900);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, WS), 900);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Paused: overflows take no sample; sampled and not counted when only
 * GPUPROF_PAPI_SAMPLING names the event. */
START_TEST(overflow_sampled_only_and_paused)
{
    start_sampled(NULL, "fake::WORK@100");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pc_lines_with("papi: counting"), 0);
    gpuprof_region_begin("r");
    papi_burn_a(5);
    gpuprof_stop();
    papi_burn_a(9); /* paused: nobody's */
    gpuprof_start();
    papi_burn_b(4);
    gpuprof_region_end("r");
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "r");
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_a", r, WS, 500), 500);
    ck_assert_uint_eq(AT_FN(p, t, "papi_burn_b", r, WS, 200), 200);
    ck_assert_uint_eq(pc_incl(p, t, r, WS), 700);
    ck_assert_uint_eq(pc_incl(p, t, t->first_node, WS), 700);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Settings that cannot be used are said, and the rest still measures. */
START_TEST(overflow_bad_settings)
{
    start_sampled("fake::WORK", "fake::WORK@0,fake::READS@10,fake::BYTES@x,"
                                "perf::PAGE-FAULTS@5");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    ck_assert_int_ge(pc_lines_with("GPUPROF_PAPI_SAMPLING"), 1);
    ck_assert_int_eq(pc_lines_with("cannot be sampled on overflow here"), 1);
    gpuprof_region_begin("r");
    ADD("fake::WORK", 33);
    gpuprof_region_end("r");
    ck_assert_uint_eq(pc_flushed("r", W), 33);
    gpuprof_finalize();
}
END_TEST

/* perf::TASK-CLOCK every 1 ms of the thread's CPU time: the samples of a
 * 60 ms burn fall in the burning function and add up to its CPU time
 * within a tick and a period (the fake's overflow is a CPU-time timer,
 * which the kernel checks at ticks: the first expiration in the burn may
 * carry CPU time from before it). */
void papi_spin(uint64_t ns);
__attribute__((noinline)) void papi_spin(uint64_t ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile uint64_t x = 0;
    do {
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
                 (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec <
             ns);
}

START_TEST(overflow_task_clock)
{
    start_sampled(NULL, "perf::TASK-CLOCK@1000000");
    ck_assert_int_eq(gpuprof_backend_status("papi", NULL, 0), GPUPROF_OK);
    gpuprof_region_begin("spin");
    papi_spin(60000000);
    gpuprof_region_end("spin");
    gpuprof_finalize();
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint32_t r = pc_region(p, t, t->first_node, "spin");
    uint64_t all = pc_incl(p, t, t->first_node, "papi.perf.task_clock.sampled");
    uint64_t at = AT_FN(p, t, "papi_spin", r, "papi.perf.task_clock.sampled",
                        pc_incl(p, t, r, "papi.perf.task_clock.sampled"));
    ck_assert_msg(at >= 48000000 && at <= 67000000, /* a tick and a period */
                  "papi_spin: %llu ns sampled of a 60 ms burn",
                  (unsigned long long)at);
    /* where the CPU time went: at most 10 ms sampled elsewhere (the
     * library's own start and end, slower under the sanitizers) */
    ck_assert_uint_ge(at + 10000000, all);
    gpuprof__io_profile_free(p);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"per_region_exact", per_region_exact, 60},
        {"inclusive_exclusive", inclusive_exclusive, 60},
        {"two_threads", two_threads, 60},
        {"unknown_event_named", unknown_event_named, 60},
        {"gpu_components_named", gpu_components_named, 60},
        {"all_events_unavailable", all_events_unavailable, 60},
        {"version_mismatch", version_mismatch, 60},
        {"libpapi_missing", libpapi_missing, 60},
        {"events_not_set", events_not_set, 60},
        {"op_context_exact", op_context_exact, 60},
        {"sim_api_calls", sim_api_calls, 60},
        {"pause_drops_paused_counts", pause_drops_paused_counts, 60},
        {"overflow_samples_exact", overflow_samples_exact, 60},
        {"overflow_sampled_only_and_paused", overflow_sampled_only_and_paused,
         60},
        {"overflow_bad_settings", overflow_bad_settings, 60},
        {"overflow_task_clock", overflow_task_clock, 60},
    };
    return RUN_SUITE("papi", cases);
}
