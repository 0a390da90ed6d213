/*
 * regions.c - black-box tests of regions, handles, threads, counters and
 * concurrency: exact counter values for what the header (and the README /
 * doc/CORE.md where noted) promise.
 *
 * Only <gpuprof.h> and the shared library. Compiled as C99 (-Wpedantic
 * -Werror) and as C++11. Check forks every test, so each test starts with
 * a library that was never initialized.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <gpuprof.h>

#include "bb.h"

/* ------------------------------------------------------------ helpers -- */

static char outdir[1024];

static gpuprof_options quiet_opts(void)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/bbr.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "none";
    o.cpu_sampling = "off"; /* threads counted exactly: only those that
                               call the library (CPU samples register the
                               thread of init and every thread they see) */
    return o;
}

static void init_quiet(void)
{
    gpuprof_options o = quiet_opts();
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

#define ASSERT_STAT(name, value)                                               \
    do {                                                                       \
        uint64_t got_ = stat_of(name);                                         \
        ck_assert_msg(got_ == (uint64_t)(value), "%s = %llu, expected %llu",   \
                      name, (unsigned long long)got_,                          \
                      (unsigned long long)(uint64_t)(value));                  \
    } while (0)

/* A flag threads poll, with a lock so TSan builds stay quiet. */
static pthread_mutex_t flag_mu = PTHREAD_MUTEX_INITIALIZER;
static int stop_flag;
static int should_run(void)
{
    int s;
    pthread_mutex_lock(&flag_mu);
    s = stop_flag;
    pthread_mutex_unlock(&flag_mu);
    return !s;
}
static void stop_all(void)
{
    pthread_mutex_lock(&flag_mu);
    stop_flag = 1;
    pthread_mutex_unlock(&flag_mu);
}

/* ----------------------------------------------------------- regions -- */

START_TEST(nested_balanced)
{
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("b"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("c"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("c"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("c"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("c"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("b"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 4);
    ASSERT_STAT("regions.unbalanced", 0);
    /* Everything is closed: one more end is unbalanced. */
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("regions.open_at_finalize", 0);
}
END_TEST

START_TEST(invalid_names)
{
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin(""), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end(""), GPUPROF_E_INVALID);
    ASSERT_STAT("regions.entered", 0);
    ASSERT_STAT("regions.unbalanced", 0);
    /* An invalid end changes nothing: the open region is still open. */
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 0);
}
END_TEST

START_TEST(unbalanced_cases)
{
    init_quiet();
    /* An end with nothing open. */
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 1);
    /* An end naming no open region changes nothing. */
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("wrong"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 2);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 2);
    /* An end naming an outer region closes the inner ones too. */
    ck_assert_int_eq(gpuprof_region_begin("outer"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("mid"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("inner"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("outer"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 3);
    ck_assert_int_eq(gpuprof_region_end("inner"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("mid"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("outer"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 6);
    /* A middle one: closes inner, leaves outer open. */
    ck_assert_int_eq(gpuprof_region_begin("outer"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("mid"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("inner"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("mid"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("outer"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 7);
    ASSERT_STAT("regions.entered", 7);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("regions.open_at_finalize", 0);
}
END_TEST

/* Recursion: the same name nested; an end closes the innermost. */
START_TEST(same_name_nested)
{
    int i;
    init_quiet();
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(gpuprof_region_begin("rec"), GPUPROF_OK);
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(gpuprof_region_end("rec"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("rec"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.entered", 10);
    ASSERT_STAT("regions.unbalanced", 1);
}
END_TEST

/* "copied on first use; any bytes up to the NUL": regions match by
 * content, not by pointer. */
START_TEST(names_by_content)
{
    char buf[64], longname[1001];
    const char odd[] = "\xff\x01 spaces/slash\tand\xc3\xa9";
    init_quiet();
    strcpy(buf, "abc");
    ck_assert_int_eq(gpuprof_region_begin(buf), GPUPROF_OK);
    strcpy(buf, "xyz");
    ck_assert_int_eq(gpuprof_region_end("abc"), GPUPROF_OK);
    strcpy(buf, "abc");
    ck_assert_int_eq(gpuprof_region_begin(buf), GPUPROF_OK);
    strcpy(buf, "xyz");
    ck_assert_int_eq(gpuprof_region_end(buf), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("abc"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin(odd), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end(odd), GPUPROF_OK);
    memset(longname, 'L', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    ck_assert_int_eq(gpuprof_region_begin(longname), GPUPROF_OK);
    longname[999] = 'M'; /* differs only in the last byte */
    ck_assert_int_eq(gpuprof_region_end(longname), GPUPROF_E_UNBALANCED);
    longname[999] = 'L';
    ck_assert_int_eq(gpuprof_region_end(longname), GPUPROF_OK);
    /* Prefixes are different names. */
    ck_assert_int_eq(gpuprof_region_begin("prefix"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("pre"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("prefix_"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("prefix"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 5);
    ASSERT_STAT("regions.unbalanced", 4);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
}
END_TEST

START_TEST(open_at_finalize_counted)
{
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("b"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK); /* open regions included */
    ASSERT_STAT("regions.open_at_finalize", 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("regions.open_at_finalize", 2);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_region_end("b"), GPUPROF_E_STATE);
}
END_TEST

/* doc/CORE.md: the open-region stack is 256 deep; deeper begins are
 * counted in regions.depth_exceeded and their ends swallowed. */
START_TEST(depth_limit)
{
    int i;
    init_quiet();
    for (i = 0; i < 256; i++)
        ck_assert_int_eq(gpuprof_region_begin("d"), GPUPROF_OK);
    ASSERT_STAT("regions.depth_exceeded", 0);
    for (i = 0; i < 4; i++)
        gpuprof_region_begin("d"); /* status not pinned by the header */
    ASSERT_STAT("regions.depth_exceeded", 4);
    for (i = 0; i < 4; i++)
        gpuprof_region_end("d");
    for (i = 0; i < 256; i++)
        ck_assert_msg(gpuprof_region_end("d") == GPUPROF_OK, "end %d", i);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_region_end("d"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("regions.open_at_finalize", 0);
}
END_TEST

/* -------------------------------------------------------------- pause -- */

START_TEST(paused_begin_records_nothing)
{
    init_quiet();
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("p"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 0);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    /* "p" was never opened, so its end is unbalanced (and counted). */
    ck_assert_int_eq(gpuprof_region_end("p"), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 1);
    ASSERT_STAT("regions.entered", 0);
}
END_TEST

START_TEST(paused_end_records_nothing)
{
    gpuprof_region h;
    init_quiet();
    ck_assert_int_eq(gpuprof_region_register("hq", &h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("q"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("q"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("never opened"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 0);
    ASSERT_STAT("regions.entered", 2);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    /* Both are still open: the paused ends recorded nothing. */
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("q"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_region_end("q"), GPUPROF_E_UNBALANCED);
}
END_TEST

START_TEST(start_paused_option)
{
    gpuprof_options o = quiet_opts();
    o.start_paused = 1;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 0);
    ASSERT_STAT("threads.created", 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK); /* flush works paused */
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 1);
    ASSERT_STAT("threads.created", 1);
}
END_TEST

static void *start_elsewhere(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)gpuprof_start();
}

/* start/stop work from any thread and affect every thread. */
START_TEST(start_from_other_thread)
{
    gpuprof_options o = quiet_opts();
    pthread_t th;
    void *rv;
    o.start_paused = 1;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, start_elsewhere, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_int_eq((int)(intptr_t)rv, GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 1);
}
END_TEST

/* ------------------------------------------------------------ handles -- */

START_TEST(handle_basics)
{
    gpuprof_region a = 0, a2 = 0, b = 0, keep = 77;
    ck_assert_int_eq(gpuprof_region_register("hot", &a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("hot", &a2), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("cold", &b), GPUPROF_OK);
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(b, 0);
    ck_assert_uint_eq(a, a2);
    ck_assert_uint_ne(a, b);
    ck_assert_int_eq(gpuprof_region_register(NULL, &keep), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_register("", &keep), GPUPROF_E_INVALID);
    ck_assert_uint_eq(keep, 77); /* untouched on failure */
    ck_assert_int_eq(gpuprof_region_register("x", NULL), GPUPROF_E_INVALID);
    init_quiet();
    /* Registering after init gives the same handle as before init. */
    ck_assert_int_eq(gpuprof_region_register("hot", &a2), GPUPROF_OK);
    ck_assert_uint_eq(a, a2);
    ck_assert_int_eq(gpuprof_region_begin_handle(0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end_handle(0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin_handle(0xFFFFFFF0u), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end_handle(0xFFFFFFF0u), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin_handle(0xFFFFFFFFu), GPUPROF_E_INVALID);
    ASSERT_STAT("regions.entered", 0);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_region_begin_handle(a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(b), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(b), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(a), GPUPROF_OK);
    ASSERT_STAT("regions.entered", 2);
    ASSERT_STAT("regions.unbalanced", 0);
}
END_TEST

/* Handles and names are the same regions. */
START_TEST(handles_mix_with_names)
{
    gpuprof_region outer, inner, late;
    ck_assert_int_eq(gpuprof_region_register("outer", &outer), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("inner", &inner), GPUPROF_OK);
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("outer"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(inner), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("inner"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(outer), GPUPROF_OK);
    /* A name first used by begin, registered afterwards. */
    ck_assert_int_eq(gpuprof_region_begin("late"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("late", &late), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(late), GPUPROF_OK);
    /* end_handle of an outer region closes the inner ones. */
    ck_assert_int_eq(gpuprof_region_begin_handle(outer), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(inner), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(outer), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end_handle(outer), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end_handle(inner), GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 3);
    ASSERT_STAT("regions.entered", 5);
}
END_TEST

#define REG_THREADS 8
#define REG_NAMES 200
static gpuprof_region shared_handle[REG_THREADS];
static gpuprof_region own_handles[REG_THREADS][REG_NAMES];

static void *register_many(void *arg)
{
    int t = (int)(intptr_t)arg, i;
    char name[32];
    if (gpuprof_region_register("shared", &shared_handle[t]) != GPUPROF_OK)
        return (void *)1;
    for (i = 0; i < REG_NAMES; i++) {
        snprintf(name, sizeof(name), "t%d.n%d", t, i);
        if (gpuprof_region_register(name, &own_handles[t][i]) != GPUPROF_OK)
            return (void *)1;
    }
    return NULL;
}

static int cmp_region(const void *a, const void *b)
{
    gpuprof_region x = *(const gpuprof_region *)a, y = *(const gpuprof_region *)b;
    return x < y ? -1 : x > y;
}

/* "Any thread, concurrently": one name gives one handle everywhere;
 * different names give different handles. */
START_TEST(register_concurrently)
{
    pthread_t th[REG_THREADS];
    gpuprof_region *all;
    void *rv;
    int t, i, n = REG_THREADS * REG_NAMES;
    for (t = 0; t < REG_THREADS; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, register_many, (void *)(intptr_t)t), 0);
    for (t = 0; t < REG_THREADS; t++) {
        ck_assert_int_eq(pthread_join(th[t], &rv), 0);
        ck_assert_ptr_null(rv);
    }
    for (t = 1; t < REG_THREADS; t++)
        ck_assert_uint_eq(shared_handle[t], shared_handle[0]);
    all = (gpuprof_region *)malloc(sizeof(gpuprof_region) * (size_t)(n + 1));
    ck_assert_ptr_nonnull(all);
    memcpy(all, own_handles, sizeof(gpuprof_region) * (size_t)n);
    all[n] = shared_handle[0];
    qsort(all, (size_t)n + 1, sizeof(all[0]), cmp_region);
    ck_assert_uint_ne(all[0], 0);
    for (i = 1; i <= n; i++)
        ck_assert_msg(all[i] != all[i - 1], "handle %u issued twice", (unsigned)all[i]);
    free(all);
    /* Each handle still means its name. */
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("t3.n17"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(own_handles[3][17]), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(own_handles[5][199]), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("t5.n199"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 0);
}
END_TEST

/* ------------------------------------------------------------ threads -- */

#define NT 4
#define PAIRS 1000

static void *do_pairs(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < PAIRS; i++)
        if (gpuprof_region_begin("t") != GPUPROF_OK || gpuprof_region_end("t") != GPUPROF_OK)
            return (void *)1;
    return NULL;
}

static void *do_nothing(void *arg)
{
    uint64_t v;
    (void)arg;
    gpuprof_stat_get("regions.entered", &v); /* not a measured call */
    return NULL;
}

START_TEST(thread_counters)
{
    pthread_t th[NT], idle[2];
    void *rv;
    int i;
    init_quiet();
    ASSERT_STAT("threads.created", 0);
    for (i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&idle[i], NULL, do_nothing, NULL), 0);
    for (i = 0; i < NT; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, do_pairs, NULL), 0);
    for (i = 0; i < NT; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        ck_assert_ptr_null(rv);
    }
    for (i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(idle[i], NULL), 0);
    ASSERT_STAT("threads.created", NT);
    ASSERT_STAT("threads.exited", NT);
    ASSERT_STAT("regions.entered", NT * PAIRS);
    ck_assert_int_eq(gpuprof_region_begin("main"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("main"), GPUPROF_OK);
    ASSERT_STAT("threads.created", NT + 1);
    ASSERT_STAT("threads.exited", NT);
    ASSERT_STAT("regions.entered", NT * PAIRS + 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("threads.created", NT + 1);
    ASSERT_STAT("regions.open_at_finalize", 0);
    ASSERT_STAT("regions.open_at_thread_exit", 0);
}
END_TEST

static void *exit_inside_regions(void *arg)
{
    (void)arg;
    if (gpuprof_region_begin("a") != GPUPROF_OK || gpuprof_region_begin("b") != GPUPROF_OK)
        return (void *)1;
    return NULL;
}

/* README/CORE.md: a thread that exits with open regions has them closed
 * and counted in regions.open_at_thread_exit; its data is kept. */
START_TEST(thread_exits_with_open_regions)
{
    pthread_t th;
    void *rv;
    init_quiet();
    ck_assert_int_eq(pthread_create(&th, NULL, exit_inside_regions, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_ptr_null(rv);
    ASSERT_STAT("threads.exited", 1);
    ASSERT_STAT("regions.open_at_thread_exit", 2);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ASSERT_STAT("regions.open_at_finalize", 0);
}
END_TEST

/* More threads than GPUPROF_KEEP_THREADS: the later ones are merged, the
 * counters stay exact and flushes keep working. */
static void keep_threads_run(int keep, int total)
{
    gpuprof_options o = quiet_opts();
    pthread_t th[16];
    void *rv;
    int done = 0, i, batch;
    char pattern[64];
    if (keep > 0)
        o.keep_threads = keep;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    while (done < total) {
        batch = total - done < 16 ? total - done : 16;
        for (i = 0; i < batch; i++)
            ck_assert_int_eq(pthread_create(&th[i], NULL, exit_inside_regions, NULL), 0);
        for (i = 0; i < batch; i++) {
            ck_assert_int_eq(pthread_join(th[i], &rv), 0);
            ck_assert_ptr_null(rv);
        }
        done += batch;
        if (done % 64 == 0)
            ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    }
    ASSERT_STAT("threads.created", total);
    ASSERT_STAT("threads.exited", total);
    ASSERT_STAT("regions.entered", 2 * total);
    ASSERT_STAT("regions.open_at_thread_exit", 2 * total);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    snprintf(pattern, sizeof(pattern), "*-p%ld.gpuprof", (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
}

START_TEST(many_threads_default_keep)
{
    keep_threads_run(0, 300);
}
END_TEST

START_TEST(many_threads_keep_two)
{
    keep_threads_run(2, 40);
}
END_TEST

START_TEST(thread_names)
{
    char longname[200];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    ck_assert_int_eq(gpuprof_thread_set_name("before init"), GPUPROF_OK);
    init_quiet();
    ck_assert_int_eq(gpuprof_thread_set_name("main"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_thread_set_name(longname), GPUPROF_OK); /* 63 kept */
    ck_assert_int_eq(gpuprof_thread_set_name(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
}
END_TEST

/* -------------------------------------------------------------- stats -- */

START_TEST(stat_names)
{
    static const char *const readme[] = {
        "regions.unbalanced", "regions.open_at_finalize", "regions.open_at_thread_exit",
        "regions.depth_exceeded", "regions.entered", "threads.created", "threads.exited",
        "flush.count", "flush.errors", "records.dropped", "records.unattributed",
        "backends.active", "cct.nodes", "memory.bytes"};
    size_t i, j, n, k;
    uint64_t v;
    for (n = 0; gpuprof_stat_name(n) != NULL; n++) {
        const char *name = gpuprof_stat_name(n);
        ck_assert_ptr_eq(name, gpuprof_stat_name(n)); /* static storage */
        ck_assert_ptr_nonnull(strchr(name, '.'));
        ck_assert_int_eq(gpuprof_stat_get(name, &v), GPUPROF_OK);
        for (j = 0; j < n; j++)
            ck_assert_str_ne(name, gpuprof_stat_name(j));
    }
    for (k = 0; k < sizeof(readme) / sizeof(readme[0]); k++) {
        int found = 0;
        for (i = 0; i < n; i++)
            found |= strcmp(gpuprof_stat_name(i), readme[k]) == 0;
        ck_assert_msg(found, "%s not enumerated", readme[k]);
        ck_assert_int_eq(gpuprof_stat_get(readme[k], &v), GPUPROF_OK);
    }
    ck_assert_ptr_null(gpuprof_stat_name(n));
    ck_assert_ptr_null(gpuprof_stat_name(n + 1000));
    ck_assert_int_eq(gpuprof_stat_get("no.such", &v), GPUPROF_E_NOTFOUND);
    {
        /* "" is both empty (INVALID) and an unknown name (NOTFOUND). */
        gpuprof_status st = gpuprof_stat_get("", &v);
        ck_assert_msg(st == GPUPROF_E_INVALID || st == GPUPROF_E_NOTFOUND, "stat \"\": %d", st);
    }
    ck_assert_int_eq(gpuprof_stat_get("regions", &v), GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_stat_get("regions.entered.x", &v), GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_stat_get(NULL, &v), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_stat_get("regions.entered", NULL), GPUPROF_E_INVALID);
}
END_TEST

/* Without backends nothing is dropped or unattributed; flush counts. */
START_TEST(stat_values_quiet_run)
{
    int i;
    init_quiet();
    for (i = 0; i < 100; i++) {
        ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    }
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ASSERT_STAT("flush.count", 3);
    ASSERT_STAT("flush.errors", 0);
    ASSERT_STAT("records.dropped", 0);
    ASSERT_STAT("records.unattributed", 0);
    ASSERT_STAT("backends.active", 0);
    ASSERT_STAT("regions.entered", 100);
    ck_assert_uint_gt(stat_of("cct.nodes"), 0);
    ck_assert_uint_gt(stat_of("memory.bytes"), 0);
}
END_TEST

/* Calling context nodes: a new context adds nodes, a revisit does not. */
START_TEST(cct_nodes_grow_with_contexts)
{
    uint64_t n0, n1, n2;
    int i;
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("warm"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("warm"), GPUPROF_OK);
    n0 = stat_of("cct.nodes");
    ck_assert_int_eq(gpuprof_region_begin("p"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("q"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("r"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("q"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("p"), GPUPROF_OK);
    n1 = stat_of("cct.nodes");
    ck_assert_uint_ge(n1, n0 + 3);
    for (i = 0; i < 50; i++) {
        ck_assert_int_eq(gpuprof_region_begin("p"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_begin("q"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("r"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("q"), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("p"), GPUPROF_OK);
    }
    n2 = stat_of("cct.nodes");
    ck_assert_uint_eq(n2, n1);
}
END_TEST

/* --------------------------------------------------------- concurrency -- */

#define CT 8
#define CPAIRS 10000
static gpuprof_region hot_handle;

struct worker_result {
    int bad_status;
    int first_bad;
};

static void *hammer(void *arg)
{
    struct worker_result *r = (struct worker_result *)arg;
    int i;
    gpuprof_status st;
    for (i = 0; i < CPAIRS; i++) {
        if ((st = gpuprof_region_begin("w")) != GPUPROF_OK ||
            (st = gpuprof_region_begin_handle(hot_handle)) != GPUPROF_OK ||
            (st = gpuprof_region_end_handle(hot_handle)) != GPUPROF_OK ||
            (st = gpuprof_region_end("w")) != GPUPROF_OK) {
            r->bad_status = (int)st;
            r->first_bad = i;
            return NULL;
        }
    }
    return NULL;
}

static int flushes_done, flush_failures;
static void *flush_loop(void *arg)
{
    (void)arg;
    while (should_run()) {
        if (gpuprof_flush() != GPUPROF_OK)
            flush_failures++;
        flushes_done++;
        sleep_ms(2);
    }
    return NULL;
}

static int stat_regressions;
static uint64_t stat_reads;
static void *stat_reader(void *arg)
{
    uint64_t last = 0, v;
    (void)arg;
    while (should_run()) {
        if (gpuprof_stat_get("regions.entered", &v) != GPUPROF_OK || v < last)
            stat_regressions++;
        last = v;
        stat_reads++;
    }
    return NULL;
}

START_TEST(hammer_with_flushes)
{
    pthread_t th[CT], fl, rd;
    struct worker_result res[CT];
    int i, hidden;
    char pattern[64];
    memset(res, 0, sizeof(res));
    ck_assert_int_eq(gpuprof_region_register("hot", &hot_handle), GPUPROF_OK);
    init_quiet();
    ck_assert_int_eq(pthread_create(&fl, NULL, flush_loop, NULL), 0);
    ck_assert_int_eq(pthread_create(&rd, NULL, stat_reader, NULL), 0);
    for (i = 0; i < CT; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &res[i]), 0);
    for (i = 0; i < CT; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    stop_all();
    ck_assert_int_eq(pthread_join(fl, NULL), 0);
    ck_assert_int_eq(pthread_join(rd, NULL), 0);
    for (i = 0; i < CT; i++)
        ck_assert_msg(res[i].bad_status == 0, "thread %d: status %d at pair %d", i,
                      res[i].bad_status, res[i].first_bad);
    ck_assert_int_eq(flush_failures, 0);
    ck_assert_int_gt(flushes_done, 0);
    ck_assert_int_eq(stat_regressions, 0);
    ASSERT_STAT("regions.entered", (uint64_t)CT * CPAIRS * 2);
    ASSERT_STAT("regions.unbalanced", 0);
    ASSERT_STAT("threads.created", CT);
    ASSERT_STAT("threads.exited", CT);
    ASSERT_STAT("flush.count", flushes_done);
    ASSERT_STAT("flush.errors", 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    snprintf(pattern, sizeof(pattern), "*-p%ld.gpuprof", (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

static void *flush_n(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 25; i++)
        if (gpuprof_flush() != GPUPROF_OK)
            return (void *)1;
    return NULL;
}

/* Flushes from several threads at once: all succeed, each is counted, one
 * file remains and no temporary file is left behind. */
START_TEST(concurrent_flushes)
{
    pthread_t th[4];
    void *rv;
    int i, hidden;
    char pattern[64];
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("open during flushes"), GPUPROF_OK);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, flush_n, NULL), 0);
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        ck_assert_ptr_null(rv);
    }
    ASSERT_STAT("flush.count", 100);
    ASSERT_STAT("flush.errors", 0);
    snprintf(pattern, sizeof(pattern), "*-p%ld.gpuprof", (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

struct stop_result {
    int bad;
    int saw_state;
};

static void *until_finalized(void *arg)
{
    struct stop_result *r = (struct stop_result *)arg;
    gpuprof_status b, e;
    for (;;) {
        b = gpuprof_region_begin("loop");
        if (b == GPUPROF_E_STATE) {
            r->saw_state = 1;
            e = gpuprof_region_end("loop");
            if (e != GPUPROF_E_STATE)
                r->bad = 100 + (int)e;
            return NULL;
        }
        e = gpuprof_region_end("loop");
        if (b != GPUPROF_OK || (e != GPUPROF_OK && e != GPUPROF_E_STATE)) {
            r->bad = (int)(b != GPUPROF_OK ? b : e);
            return NULL;
        }
    }
}

/* finalize while threads are inside region calls: no crash, and they see
 * only OK, then E_STATE. */
START_TEST(finalize_under_load)
{
    pthread_t th[CT];
    struct stop_result res[CT];
    int i;
    memset(res, 0, sizeof(res));
    init_quiet();
    for (i = 0; i < CT; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, until_finalized, &res[i]), 0);
    sleep_ms(100);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    for (i = 0; i < CT; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_msg(res[i].bad == 0, "thread %d saw status %d", i, res[i].bad);
        ck_assert(res[i].saw_state);
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
}
END_TEST

static void *toggler(void *arg)
{
    int n = 0;
    (void)arg;
    while (should_run()) {
        if (gpuprof_stop() != GPUPROF_OK || gpuprof_start() != GPUPROF_OK)
            return (void *)1;
        n++;
    }
    return NULL;
}

struct toggle_result {
    int bad;
    int limited; /* begins refused at the depth limit */
};

static void *pairs_under_toggle(void *arg)
{
    struct toggle_result *r = (struct toggle_result *)arg;
    int i;
    gpuprof_status b, e;
    for (i = 0; i < CPAIRS; i++) {
        b = gpuprof_region_begin("tog");
        e = gpuprof_region_end("tog");
        /* Pausing in between may make the end unbalanced, and regions left
         * open that way add up: past the depth limit a begin is refused
         * (documented, counted in regions.depth_exceeded). Nothing else. */
        if ((b != GPUPROF_OK && b != GPUPROF_E_LIMIT) ||
            (e != GPUPROF_OK && e != GPUPROF_E_UNBALANCED)) {
            r->bad = 1000 * (int)b + (int)e;
            return NULL;
        }
        r->limited += b == GPUPROF_E_LIMIT;
    }
    return NULL;
}

START_TEST(stop_start_under_load)
{
    pthread_t th[4], tg;
    struct toggle_result res[4];
    void *rv;
    int i;
    memset(res, 0, sizeof(res));
    init_quiet();
    ck_assert_int_eq(pthread_create(&tg, NULL, toggler, NULL), 0);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, pairs_under_toggle, &res[i]), 0);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    stop_all();
    ck_assert_int_eq(pthread_join(tg, &rv), 0);
    ck_assert_ptr_null(rv);
    for (i = 0; i < 4; i++) {
        ck_assert_msg(res[i].bad == 0, "thread %d: begin*1000+end = %d", i, res[i].bad);
        if (res[i].limited)
            ck_assert_uint_ge(stat_of("regions.depth_exceeded"),
                              (uint64_t)res[i].limited);
    }
    ck_assert_uint_le(stat_of("regions.entered"), 4 * CPAIRS);
    ck_assert_uint_le(stat_of("regions.unbalanced"), 4 * CPAIRS);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Region stacks are per thread: an end on another thread does not close
 * this thread's region. */
static void *end_foreign(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)gpuprof_region_end("mine");
}

START_TEST(stacks_are_per_thread)
{
    pthread_t th;
    void *rv;
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin("mine"), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, end_foreign, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_int_eq((int)(intptr_t)rv, GPUPROF_E_UNBALANCED);
    ASSERT_STAT("regions.unbalanced", 1);
    ck_assert_int_eq(gpuprof_region_end("mine"), GPUPROF_OK);
    ASSERT_STAT("regions.unbalanced", 1);
}
END_TEST

/* "any bytes up to the NUL": a very long name, and many distinct ones. */
START_TEST(long_and_many_names)
{
    size_t n = 100000;
    char *big = (char *)malloc(n + 1);
    char name[32];
    int i;
    ck_assert_ptr_nonnull(big);
    memset(big, 'b', n);
    big[n] = '\0';
    init_quiet();
    ck_assert_int_eq(gpuprof_region_begin(big), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end(big), GPUPROF_OK);
    for (i = 0; i < 20000; i++) {
        snprintf(name, sizeof(name), "name_%d", i);
        ck_assert_int_eq(gpuprof_region_begin(name), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end(name), GPUPROF_OK);
    }
    ASSERT_STAT("regions.entered", 20001);
    ASSERT_STAT("regions.unbalanced", 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    free(big);
}
END_TEST

/* Threads exiting past keep_threads are merged while flushes run. */
static void *short_lived_spawner(void *arg)
{
    int *n = (int *)arg, i;
    pthread_t t;
    void *rv;
    for (i = 0; i < 200; i++) {
        if (pthread_create(&t, NULL, exit_inside_regions, NULL) != 0)
            return (void *)1;
        pthread_join(t, &rv);
        if (rv != NULL)
            return (void *)2;
        (*n)++;
    }
    return NULL;
}

START_TEST(merge_while_flushing)
{
    gpuprof_options o = quiet_opts();
    pthread_t sp[3], fl;
    int made[3] = {0, 0, 0}, i;
    void *rv;
    o.keep_threads = 1;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&fl, NULL, flush_loop, NULL), 0);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&sp[i], NULL, short_lived_spawner, &made[i]), 0);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(pthread_join(sp[i], &rv), 0);
        ck_assert_ptr_null(rv);
    }
    stop_all();
    ck_assert_int_eq(pthread_join(fl, NULL), 0);
    ck_assert_int_eq(flush_failures, 0);
    ASSERT_STAT("threads.created", 600);
    ASSERT_STAT("threads.exited", 600);
    ASSERT_STAT("regions.entered", 1200);
    ASSERT_STAT("regions.open_at_thread_exit", 1200);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ------------------------------------------------------------- suite -- */

struct tc {
    const char *name;
    const TTest *test;
    int timeout;
};

static Suite *regions_suite(void)
{
    const struct tc cases[] = {
        {"nested_balanced", nested_balanced, 30},
        {"invalid_names", invalid_names, 30},
        {"unbalanced", unbalanced_cases, 30},
        {"same_name_nested", same_name_nested, 30},
        {"names_by_content", names_by_content, 30},
        {"open_at_finalize", open_at_finalize_counted, 30},
        {"depth_limit", depth_limit, 30},
        {"paused_begin", paused_begin_records_nothing, 30},
        {"paused_end", paused_end_records_nothing, 30},
        {"start_paused", start_paused_option, 30},
        {"start_other_thread", start_from_other_thread, 30},
        {"handle_basics", handle_basics, 30},
        {"handles_mix", handles_mix_with_names, 30},
        {"register_concurrently", register_concurrently, 60},
        {"thread_counters", thread_counters, 30},
        {"thread_open_at_exit", thread_exits_with_open_regions, 30},
        {"many_threads_default_keep", many_threads_default_keep, 120},
        {"many_threads_keep_two", many_threads_keep_two, 60},
        {"thread_names", thread_names, 30},
        {"stat_names", stat_names, 30},
        {"stat_values", stat_values_quiet_run, 30},
        {"cct_nodes", cct_nodes_grow_with_contexts, 30},
        {"hammer_with_flushes", hammer_with_flushes, 120},
        {"concurrent_flushes", concurrent_flushes, 60},
        {"finalize_under_load", finalize_under_load, 60},
        {"stop_start_under_load", stop_start_under_load, 120},
        {"stacks_per_thread", stacks_are_per_thread, 30},
        {"long_and_many_names", long_and_many_names, 60},
        {"merge_while_flushing", merge_while_flushing, 120},
    };
    Suite *s = suite_create("regions");
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, cases[i].timeout);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return bb_run(regions_suite());
}
