/*
 * gpu.c - black-box tests of the backend service API as a third-party
 * backend uses it: an asynchronous backend registered through the public
 * vtable hooks "launches" on application threads (gpuprof_op_begin/_end)
 * and delivers activities from its own completion thread
 * (gpuprof_activity_submit); every activity is attributed, counted exactly,
 * and the calls behave as documented before init, after finalize and on bad
 * input. Only <gpuprof.h> and the shared library; C99 -Wpedantic and C++11.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuprof.h>

#include "bb.h"

/* ---- a fake asynchronous runtime and its backend ---------------------- */
#define QCAP 4096

typedef struct job {
    uint64_t corr;
    uint64_t dur;
} job;

typedef struct fake_dev {
    pthread_mutex_t mu;
    pthread_cond_t cv, done;
    job q[QCAP];
    int head, tail; /* q[head..tail) waiting */
    int stop, running;
    uint64_t delivered, queued;
    pthread_t thr;
} fake_dev;

static fake_dev dev;

static void *completion_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&dev.mu);
    for (;;) {
        while (dev.head == dev.tail && !dev.stop)
            pthread_cond_wait(&dev.cv, &dev.mu);
        if (dev.head == dev.tail && dev.stop)
            break;
        job j = dev.q[dev.head++ % QCAP];
        pthread_mutex_unlock(&dev.mu);
        if (j.corr) {
            gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
            a.correlation = j.corr;
            a.kind = GPUPROF_OP_KERNEL;
            a.start_ns = 1000;
            a.end_ns = 1000 + j.dur;
            a.name = "bb_kernel";
            ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_OK);
        }
        pthread_mutex_lock(&dev.mu);
        dev.delivered++;
        pthread_cond_broadcast(&dev.done);
    }
    pthread_mutex_unlock(&dev.mu);
    return NULL;
}

static gpuprof_status be_probe(void *u, char *r, size_t n)
{
    (void)u, (void)r, (void)n;
    return GPUPROF_OK;
}

static gpuprof_status be_init(void *u)
{
    (void)u;
    pthread_mutex_init(&dev.mu, NULL);
    pthread_cond_init(&dev.cv, NULL);
    pthread_cond_init(&dev.done, NULL);
    dev.running = pthread_create(&dev.thr, NULL, completion_thread, NULL) == 0;
    return dev.running ? GPUPROF_OK : GPUPROF_E_NOMEM;
}

static void wait_all(void)
{
    pthread_mutex_lock(&dev.mu);
    while (dev.delivered < dev.queued)
        pthread_cond_wait(&dev.done, &dev.mu);
    pthread_mutex_unlock(&dev.mu);
}

static gpuprof_status be_flush(void *u)
{
    (void)u;
    wait_all(); /* every completed operation reaches the library */
    return GPUPROF_OK;
}

static void be_fini(void *u)
{
    (void)u;
    wait_all();
    pthread_mutex_lock(&dev.mu);
    dev.stop = 1;
    pthread_cond_signal(&dev.cv);
    pthread_mutex_unlock(&dev.mu);
    pthread_join(dev.thr, NULL);
}

/* The runtime's launch API with its hook: the library records the call path
 * here and hands back the id the runtime tags the operation with. */
static void fake_launch(uint64_t dur)
{
    uint64_t c = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
    pthread_mutex_lock(&dev.mu);
    dev.q[dev.tail++ % QCAP].corr = c;
    dev.q[(dev.tail - 1) % QCAP].dur = dur;
    dev.queued++;
    pthread_cond_signal(&dev.cv);
    pthread_mutex_unlock(&dev.mu);
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_OK);
}

static char outdir[1024];

static void start(void)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    const char *tmp = getenv("TMPDIR");
    b.name = "bbgpu";
    b.caps = GPUPROF_BACKEND_CAP_ASYNC;
    b.probe = be_probe;
    b.init = be_init;
    b.flush = be_flush;
    b.fini = be_fini;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    snprintf(outdir, sizeof(outdir), "%s/bbgpu.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "bbgpu";
    o.signals = 0;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("bbgpu", NULL, 0), GPUPROF_OK);
}

enum { LAUNCHES = 500 };

static void *app_thread(void *arg)
{
    int i;
    (void)arg;
    gpuprof_region_begin("app");
    for (i = 0; i < LAUNCHES; i++)
        fake_launch((uint64_t)(i % 10));
    gpuprof_region_end("app");
    return NULL;
}

START_TEST(async_backend_attributed)
{
    pthread_t th[2];
    int i;
    start();
    for (i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, app_thread, NULL);
    for (i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("gpu.operations"), 2 * LAUNCHES);
    ck_assert_uint_eq(stat_of("gpu.activities"), 2 * LAUNCHES);
    ck_assert_uint_eq(stat_of("records.unattributed"), 0);
    ck_assert_uint_eq(stat_of("records.dropped"), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(count_in(outdir, "*.gpuprof", NULL), 1);
}
END_TEST

START_TEST(calls_outside_measurement)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = 5;
    a.kind = GPUPROF_OP_COPY_H2D;
    ck_assert_uint_eq(gpuprof_op_begin(GPUPROF_OP_KERNEL, 0), 0);
    ck_assert_int_eq(gpuprof_op_end(0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_STATE);
    start();
    ck_assert_int_eq(gpuprof_activity_submit(NULL), GPUPROF_E_INVALID);
    a.size = 8; /* older than any version */
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_INVALID);
    a.size = sizeof(a);
    a.kind = GPUPROF_OP_KIND_COUNT;
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_INVALID);
    a.kind = GPUPROF_OP_KERNEL;
    a.start_ns = 10;
    a.end_ns = 5; /* ends before it starts */
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_op_end(12345), GPUPROF_E_INVALID);
    ck_assert_uint_eq(gpuprof_op_begin((gpuprof_op_kind)0, 0), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_op_begin(GPUPROF_OP_KERNEL, 0), 0);
    a.end_ns = 20;
    ck_assert_int_eq(gpuprof_activity_submit(&a), GPUPROF_E_STATE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bb_gpu");
    TCase *tc = tcase_create("gpu");
    SRunner *sr;
    int failed;
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, async_backend_attributed);
    tcase_add_test(tc, calls_outside_measurement);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
