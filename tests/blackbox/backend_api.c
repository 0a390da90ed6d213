/*
 * backend_api.c - black-box tests of the backend service interface
 * (include/gpuprof_backend.h): a backend built only on the public headers
 * registers metrics (accepted descriptors, refusals, the same name again,
 * the limit of 32), submits activities with extra values (which metric ids
 * an activity may carry), reaches the counters, the clock, the measuring
 * state (paused operations), hidden ranges, the interception-layer
 * table and the thread observer. Values in files are checked by tests/scripts/thirdparty-backend.sh;
 * here, what the calls return. Compiled as C99 (-Wpedantic -Werror) and as
 * C++11; Check forks every test.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuprof.h>
#include <gpuprof_backend.h>

#include "bb.h"

static char outdir[1024];

static gpuprof_status ok_probe(void *user, char *reason, size_t size)
{
    (void)user;
    (void)reason;
    (void)size;
    return GPUPROF_OK;
}
static gpuprof_status ok_init(void *user)
{
    (void)user;
    return GPUPROF_OK;
}

/* Initializes with one backend "bapi" and an output directory of its own. */
static void init_with_backend(int paused)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    const char *tmp = getenv("TMPDIR");
    b.name = "bapi";
    b.probe = ok_probe;
    b.init = ok_init;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    snprintf(outdir, sizeof(outdir), "%s/bba.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "bapi";
    o.start_paused = paused;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

static gpuprof_metric_desc desc(const char *name, uint32_t combine)
{
    gpuprof_metric_desc d = GPUPROF_METRIC_DESC_INIT;
    d.name = name;
    d.combine = combine;
    if (combine == GPUPROF_METRIC_ODD_SUM)
        d.count_metric = "gpu.count";
    return d;
}

/* Two metrics of different combinations get consecutive ids after the
 * built-in ones; the same descriptor again gives the same id, another one
 * or a built-in name is a clash; bad descriptors are refused with a
 * reason; registration works before init too. */
START_TEST(metric_registration)
{
    uint32_t a = 0, b = 0, c = 0;
    gpuprof_metric_desc d = desc("bapi.sum_before_init", GPUPROF_METRIC_SUM);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &a), GPUPROF_OK);
    ck_assert_uint_eq(a, GPUPROF_METRIC_CPU_WALL_SAMPLES + 1);
    init_with_backend(0);
    d = desc("bapi.odd", GPUPROF_METRIC_ODD_SUM);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &b), GPUPROF_OK);
    ck_assert_uint_eq(b, a + 1);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_OK);
    ck_assert_uint_eq(c, b);
    d.count_metric = "region.visits"; /* same name, another descriptor */
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_EXISTS);
    d = desc("gpu.time", GPUPROF_METRIC_SUM);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_EXISTS);
    d = desc("Bad-Name", GPUPROF_METRIC_SUM);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_last_error(), "[a-z0-9_.]"));
    d = desc("bapi.x", GPUPROF_METRIC_SUM);
    d.count_metric = "gpu.count"; /* a count for a plain sum */
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    d = desc("bapi.x", 7);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    d = desc("bapi.x", GPUPROF_METRIC_MAX);
    d.attach = 9;
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    d.attach = GPUPROF_METRIC_ON_GPU_OPS;
    d.flags = 0x80;
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    d.flags = 0;
    d.size = 8;
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_be_metric_register(NULL, &c), GPUPROF_E_INVALID);
    d = desc("bapi.x", GPUPROF_METRIC_MAX);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &c), GPUPROF_OK);
    ck_assert_uint_eq(c, b + 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* 32 registered metrics at most; the 33rd is refused and changes nothing. */
START_TEST(metric_limit)
{
    char name[32];
    uint32_t id = 0, first = 0;
    int i;
    for (i = 0; i < 32; i++) {
        gpuprof_metric_desc d;
        snprintf(name, sizeof(name), "bapi.m%d", i);
        d = desc(name, GPUPROF_METRIC_SUM);
        ck_assert_int_eq(gpuprof_be_metric_register(&d, &id), GPUPROF_OK);
        if (i == 0)
            first = id;
        ck_assert_uint_eq(id, first + (uint32_t)i);
    }
    {
        gpuprof_metric_desc d = desc("bapi.one_more", GPUPROF_METRIC_SUM);
        ck_assert_int_eq(gpuprof_be_metric_register(&d, &id), GPUPROF_E_LIMIT);
        d = desc("bapi.m5", GPUPROF_METRIC_SUM); /* known: still fine */
        ck_assert_int_eq(gpuprof_be_metric_register(&d, &id), GPUPROF_OK);
        ck_assert_uint_eq(id, first + 5);
    }
}
END_TEST

/* What an activity's extra values may name: GPU-operation metrics (built-in
 * or registered for GPU operations) on operations, GPU-instruction metrics
 * only with GPUPROF_ACTIVITY_INSTR; never CPU-path or region metrics, ids
 * nobody registered, or more than GPUPROF_EXTRA_MAX values. */
START_TEST(activity_extra_values)
{
    uint32_t gpu_m = 0, cpu_m = 0;
    gpuprof_metric_desc d = desc("bapi.gpu", GPUPROF_METRIC_MAX);
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &gpu_m), GPUPROF_OK);
    d = desc("bapi.cpu", GPUPROF_METRIC_SUM);
    d.attach = GPUPROF_METRIC_ON_CPU_PATHS;
    ck_assert_int_eq(gpuprof_be_metric_register(&d, &cpu_m), GPUPROF_OK);
    init_with_backend(0);
    {
        uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 0);
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
        ck_assert(corr != 0 && corr != GPUPROF_CORR_PAUSED);
        a.correlation = corr;
        a.kind = GPUPROF_OP_KERNEL;
        a.start_ns = gpuprof_be_now_ns();
        a.end_ns = a.start_ns + 10;
        a.name = "k";
        x.count = 2;
        x.metric[0] = gpu_m, x.value[0] = 7;
        x.metric[1] = GPUPROF_METRIC_GPU_WORK_ITEMS, x.value[1] = 64;
        a.flags = GPUPROF_ACTIVITY_MORE;
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_OK);
        x.metric[1] = cpu_m;
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.metric[1] = GPUPROF_METRIC_GPU_IDLE_CAUSE; /* CPU kind */
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.metric[1] = GPUPROF_METRIC_PC_SAMPLES; /* without INSTR */
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.metric[1] = cpu_m + 100; /* nobody registered it */
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.metric[1] = 0; /* region.visits */
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.count = GPUPROF_EXTRA_MAX + 1;
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, &x), GPUPROF_E_INVALID);
        x.count = 0;
        a.flags = 0;
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, NULL), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_be_op_end(corr), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("gpu.activities"), 2);
    ck_assert_uint_eq(stat_of("records.unattributed"), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Paused: gpuprof_be_op_begin returns GPUPROF_CORR_PAUSED (the public
 * gpuprof_op_begin 0), activities carrying it are counted records.paused;
 * gpuprof_be_measuring follows start/stop. */
START_TEST(paused_operations)
{
    init_with_backend(1);
    ck_assert_int_eq(gpuprof_be_measuring(), 0);
    ck_assert_uint_eq(gpuprof_op_begin(GPUPROF_OP_KERNEL, 0), 0);
    {
        uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 0);
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        ck_assert(corr == GPUPROF_CORR_PAUSED);
        ck_assert_int_eq(gpuprof_be_op_end(corr), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_be_measuring(), 1);
        a.correlation = corr;
        a.kind = GPUPROF_OP_KERNEL;
        ck_assert_int_eq(gpuprof_be_activity_submit(&a, NULL), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("records.paused"), 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_measuring(), 0);
    ck_assert_int_eq(gpuprof_be_forked(), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Counters, the clock, hidden ranges, samples outside a region. */
START_TEST(services)
{
    uint64_t t0, t1;
    init_with_backend(0);
    ck_assert_int_eq(gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 3),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_count(GPUPROF_COUNTER_GPU_TOOL_OVERHEAD_NS, 40),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_count((gpuprof_counter)99, 1),
                     GPUPROF_E_INVALID);
    ck_assert_uint_eq(stat_of("records.dropped"), 3);
    ck_assert_uint_eq(stat_of("gpu.tool_overhead_ns"), 40);
    t0 = gpuprof_be_now_ns();
    t1 = gpuprof_be_now_ns();
    ck_assert(t0 > 0 && t1 >= t0);
    ck_assert_uint_eq(gpuprof_be_clock_to_host(1000, 500), 1500);
    ck_assert_uint_eq(gpuprof_be_clock_to_host(1000, -5000), 0);
    ck_assert_int_eq(gpuprof_be_hide(10, 10, GPUPROF_HIDE_LOADER),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_be_hide(10, 20, 3), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_be_hide(0x1000, 0x2000, GPUPROF_HIDE_ALWAYS),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_in_self(), 0);
    gpuprof_be_self_begin();
    ck_assert_int_eq(gpuprof_be_in_self(), 1);
    gpuprof_be_self_end();
    ck_assert_uint_eq(gpuprof_be_sample_region(), 0); /* no region open */
    ck_assert_int_eq(
        gpuprof_be_sample_add(0, NULL, 0, 0, GPUPROF_METRIC_GPU_WORK_ITEMS, 1),
        GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* The layer table: an API answered by the function registered for it,
 * NULL for any other; a second function for the same API is refused, NULL
 * removes it. */
static int table[3];
static const void *fake_dispatch(const void *target, unsigned entries,
                                 unsigned *out_entries)
{
    (void)target;
    *out_entries = entries + 1;
    return table;
}
static const void *other_dispatch(const void *target, unsigned entries,
                                  unsigned *out_entries)
{
    (void)target;
    (void)entries;
    (void)out_entries;
    return NULL;
}
START_TEST(layer_dispatch)
{
    int target[2] = {0, 0};
    unsigned n = 0;
    ck_assert_int_eq(gpuprof_be_layer_register("fakeapi", fake_dispatch),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_layer_register("fakeapi", fake_dispatch),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_layer_register("fakeapi", other_dispatch),
                     GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_be_layer_register("", fake_dispatch),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_eq(gpuprof_layer_dispatch("fakeapi", target, 2, &n), table);
    ck_assert_uint_eq(n, 3);
    ck_assert_ptr_null(gpuprof_layer_dispatch("otherapi", target, 2, &n));
    ck_assert_ptr_null(gpuprof_layer_dispatch("fakeapi", target, 2, NULL));
    ck_assert_int_eq(gpuprof_be_layer_register("fakeapi", NULL), GPUPROF_OK);
    ck_assert_ptr_null(gpuprof_layer_dispatch("fakeapi", target, 2, &n));
}
END_TEST

/* ---- the thread observer ---------------------------------------------- */
/* What the observer was told, in order: kind ('R' region, 'B' op begin,
 * 'E' op end, 'X' thread exit), two values, and on which thread (0 main). */
typedef struct seen {
    char kind;
    uint32_t a, b;
    int worker;
} seen;
static seen evs[64];
static int nev;
static __thread int on_worker;

static void note(char kind, uint32_t a, uint32_t b)
{
    if (nev < 64) {
        evs[nev].kind = kind;
        evs[nev].a = a;
        evs[nev].b = b;
        evs[nev].worker = on_worker;
        nev++;
    }
}
static void obs_region(void *user, uint32_t from, uint32_t to)
{
    ck_assert_ptr_eq(user, (void *)evs);
    note('R', from, to);
}
static void obs_op_begin(void *user, uint32_t region, uint32_t context)
{
    (void)user;
    note('B', region, context);
}
static void obs_op_end(void *user)
{
    (void)user;
    note('E', 0, 0);
}
static void obs_exit(void *user)
{
    (void)user;
    note('X', 0, 0);
}

static void expect(int i, char kind, uint32_t a, uint32_t b)
{
    ck_assert_int_gt(nev, i);
    ck_assert_msg(evs[i].kind == kind && evs[i].a == a && evs[i].b == b,
                  "event %d: %c %u %u, want %c %u %u", i, evs[i].kind,
                  evs[i].a, evs[i].b, kind, a, b);
}

static void *observed_worker(void *arg)
{
    (void)arg;
    on_worker = 1;
    gpuprof_region_begin("t"); /* left open: closed at exit */
    return NULL;
}

/* Region changes (from, to) with the node ids sample_add takes, outermost
 * operation begin/end (nested ones and paused ones not told), regions an
 * unbalanced end closes, a thread's exit; one observer at a time. */
START_TEST(thread_observer)
{
    gpuprof_observer o = GPUPROF_OBSERVER_INIT;
    uint32_t a, b;
    uint64_t c;
    pthread_t th;
    init_with_backend(0);
    o.user = evs;
    o.region = obs_region;
    o.op_begin = obs_op_begin;
    o.op_end = obs_op_end;
    o.thread_exit = obs_exit;
    ck_assert_int_eq(gpuprof_be_observe(&o, 1), GPUPROF_E_INVALID);
    o.size = 8;
    ck_assert_int_eq(gpuprof_be_observe(&o, 0), GPUPROF_E_INVALID);
    o.size = sizeof(o);
    ck_assert_int_eq(gpuprof_be_observe(&o, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_be_observe(&o, 0), GPUPROF_E_EXISTS);
    gpuprof_region_begin("a");
    a = gpuprof_be_sample_region();
    gpuprof_region_begin("b");
    b = gpuprof_be_sample_region();
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(b, a);
    c = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 0);
    ck_assert_uint_eq(gpuprof_be_op_begin(GPUPROF_OP_COPY_H2D, 0), c);
    ck_assert_int_eq(gpuprof_be_op_end(c), GPUPROF_OK); /* the nested one */
    ck_assert_int_eq(gpuprof_be_op_end(c), GPUPROF_OK);
    gpuprof_region_end("b");
    gpuprof_region_end("a");
    expect(0, 'R', 0, a);
    expect(1, 'R', a, b);
    ck_assert_int_eq(evs[2].kind, 'B');
    ck_assert_uint_eq(evs[2].a, b);
    ck_assert_uint_ne(evs[2].b, b); /* the call path's innermost frame */
    ck_assert_uint_ne(evs[2].b, 0);
    expect(3, 'E', 0, 0);
    expect(4, 'R', b, a);
    expect(5, 'R', a, 0);
    ck_assert_int_eq(nev, 6);
    gpuprof_region_begin("a");
    gpuprof_region_begin("b");
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_UNBALANCED);
    expect(6, 'R', 0, a);
    expect(7, 'R', a, b);
    expect(8, 'R', b, a);
    expect(9, 'R', a, 0);
    ck_assert_int_eq(nev, 10);
    gpuprof_stop();
    gpuprof_region_begin("a");
    gpuprof_region_end("a");
    ck_assert_int_eq(nev, 10); /* nothing while paused */
    gpuprof_start();
    ck_assert_int_eq(pthread_create(&th, NULL, observed_worker, NULL), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(nev, 13);
    ck_assert_int_eq(evs[10].worker + evs[11].worker + evs[12].worker, 3);
    ck_assert_int_eq(evs[10].kind, 'R');
    ck_assert_uint_eq(evs[10].a, 0);
    expect(11, 'R', evs[10].b, 0);
    expect(12, 'X', 0, 0);
    ck_assert_int_eq(gpuprof_be_observe(NULL, 0), GPUPROF_OK);
    gpuprof_region_begin("a");
    gpuprof_region_end("a");
    ck_assert_int_eq(nev, 13);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* thread_start: told on each thread the library sees created, before the
 * thread runs its own code, even one that never calls the library (under
 * the sanitizers, at its first call); not told through an observer of
 * the older size (without the field). */
static volatile int started; /* written by threads joined before reads */
static pthread_t started_by;
static void obs_start(void *user)
{
    (void)user;
    started++;
    started_by = pthread_self();
}
static void *silent_worker(void *arg)
{
    *(pthread_t *)arg = pthread_self();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* The sanitizer's pthread_create comes before libgpuprof's: the thread
     * is seen at its first call into the library instead. */
    gpuprof_region_begin("seen");
    gpuprof_region_end("seen");
#endif
    return NULL;
}

START_TEST(thread_observer_start)
{
    gpuprof_observer o = GPUPROF_OBSERVER_INIT;
    pthread_t th, tid;
    init_with_backend(0);
    o.thread_start = obs_start;
    o.size = offsetof(gpuprof_observer, thread_start); /* an older size */
    ck_assert_int_eq(gpuprof_be_observe(&o, 0), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, silent_worker, &tid), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(started, 0);
    ck_assert_int_eq(gpuprof_be_observe(NULL, 0), GPUPROF_OK);
    o.size = sizeof(o);
    ck_assert_int_eq(gpuprof_be_observe(&o, 0), GPUPROF_OK);
    ck_assert_int_eq(started, 0); /* not for threads already there */
    ck_assert_int_eq(pthread_create(&th, NULL, silent_worker, &tid), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(started, 1);
    ck_assert(pthread_equal(started_by, tid));
    ck_assert_int_eq(gpuprof_be_observe(NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, silent_worker, &tid), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(started, 1); /* removed: no more */
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backend_api");
    SRunner *sr;
    int failed;
    TCase *tc = tcase_create("backend_api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, metric_registration);
    tcase_add_test(tc, thread_observer_start);
    tcase_add_test(tc, metric_limit);
    tcase_add_test(tc, activity_extra_values);
    tcase_add_test(tc, paused_operations);
    tcase_add_test(tc, services);
    tcase_add_test(tc, layer_dispatch);
    tcase_add_test(tc, thread_observer);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
