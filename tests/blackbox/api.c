/*
 * api.c - black-box tests of the public contract: only <gpuprof.h>, the
 * shared library, and the behaviour the header documents. Compiled as C99
 * (-Wpedantic -Werror) and as C++11. Check forks every test, so each starts
 * with a library that was never initialized.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpuprof.h>

#include "bb.h"

static char outdir[512];

static gpuprof_status init_in_tmp(const char *backends)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/bb.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = backends;
    o.cpu_sampling = "off"; /* threads counted exactly: only those that
                               call the library (CPU samples register the
                               thread of init and every thread they see) */
    return gpuprof_init(&o);
}

/* Files in outdir matching a pattern; hidden (temporary) files counted
 * separately. */
static int count_files(const char *pattern, int *hidden)
{
    DIR *d = opendir(outdir);
    struct dirent *e;
    int n = 0;
    *hidden = 0;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (e->d_name[0] == '.')
            (*hidden)++;
        else if (fnmatch(pattern, e->d_name, 0) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void my_pattern(char *buf, size_t size, long pid)
{
    char host[256];
    ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
    snprintf(buf, size, "%s-r*-p%ld.gpuprof", host, pid);
}

START_TEST(versions_and_strings)
{
    int s;
    ck_assert_uint_eq(gpuprof_version(), GPUPROF_VERSION_NUMBER);
    ck_assert_str_eq(gpuprof_version_string(), GPUPROF_VERSION_STRING);
    for (s = 0; s <= 12; s++) {
        ck_assert_ptr_nonnull(gpuprof_strerror((gpuprof_status)s));
        ck_assert_str_ne(gpuprof_strerror((gpuprof_status)s), "unknown status");
    }
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)999), "unknown status");
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)-1), "unknown status");
    ck_assert_str_eq(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_register(NULL, NULL), GPUPROF_E_INVALID);
    ck_assert_str_ne(gpuprof_last_error(), "");
}
END_TEST

START_TEST(before_init)
{
    gpuprof_region h = 0;
    char path[64];
    ck_assert_int_eq(gpuprof_start(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_register("a", &h), GPUPROF_OK);
    ck_assert_uint_ne(h, 0);
    ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_thread_set_name("early"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, -1), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 0);
    ck_assert_uint_eq(stat_of("threads.created"), 0);
}
END_TEST

START_TEST(init_twice_and_after_finalize)
{
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_begin("late"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_E_STATE);
}
END_TEST

START_TEST(options_sizes)
{
    struct future { gpuprof_options o; char extra[16]; } f;
    gpuprof_options tiny = GPUPROF_OPTIONS_INIT;
    tiny.size = sizeof(size_t);
    ck_assert_int_eq(gpuprof_init(&tiny), GPUPROF_E_VERSION);
    tiny.size = 0;
    ck_assert_int_eq(gpuprof_init(&tiny), GPUPROF_E_VERSION);
    memset(&f, 0, sizeof(f));
    {
        gpuprof_options init = GPUPROF_OPTIONS_INIT;
        f.o = init;
    }
    f.o.size = sizeof(f);
    f.o.output_dir = "bb-future-dir";
    f.o.flags = GPUPROF_OPT_IGNORE_ENV;
    ck_assert_int_eq(gpuprof_init(&f.o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(bad_option_values)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = "";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_INVALID);
    o.output_dir = "bb-ok";
    o.log_level = 9;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_INVALID);
    o.log_level = GPUPROF_UNSET;
    o.start_paused = 5;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_INVALID);
}
END_TEST

START_TEST(output_file_and_generations)
{
    char pattern[512], path[4096];
    int hidden;
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    my_pattern(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(count_files(pattern, &hidden), 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(count_files(pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    ck_assert_int_eq(strncmp(path, outdir, strlen(outdir)), 0);
    ck_assert_int_eq(fnmatch(pattern, strrchr(path, '/') + 1, 0), 0);
    ck_assert_int_eq(access(path, R_OK), 0);
    ck_assert_int_eq(gpuprof_output_path(path, 5), GPUPROF_E_LIMIT);
    ck_assert_int_eq(gpuprof_output_path(NULL, 5), GPUPROF_E_INVALID);
    ck_assert_uint_eq(stat_of("flush.count"), 2);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("flush.count"), 3);
}
END_TEST

START_TEST(output_dir_errors)
{
    char file[600];
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    FILE *f;
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/bbe.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    snprintf(file, sizeof(file), "%s/plain", outdir);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    strcat(file, "/sub"); /* beneath a regular file: cannot be created */
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = file;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_IO);
    ck_assert_ptr_nonnull(strstr(gpuprof_last_error(), file));
    /* Init did not happen: a corrected retry works. */
    o.output_dir = outdir;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}
END_TEST

START_TEST(unwritable_dir_keeps_running)
{
    if (geteuid() == 0)
        return; /* root writes anyway; nothing to test */
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(chmod(outdir, 0555), 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_IO);
    ck_assert_uint_eq(stat_of("flush.errors"), 1);
    ck_assert_int_eq(gpuprof_region_begin("still"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("still"), GPUPROF_OK);
    ck_assert_int_eq(chmod(outdir, 0755), 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
}
END_TEST

START_TEST(regions_balanced_and_not)
{
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin(""), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end(NULL), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_UNBALANCED);
    ck_assert_uint_eq(stat_of("regions.unbalanced"), 1);
    ck_assert_int_eq(gpuprof_region_begin("outer"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("inner"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("wrong"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("outer"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("outer"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("inner"), GPUPROF_E_UNBALANCED);
    ck_assert_uint_eq(stat_of("regions.unbalanced"), 5);
    ck_assert_uint_eq(stat_of("regions.entered"), 3);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("b"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.open_at_finalize"), 2);
}
END_TEST

START_TEST(pause_and_resume)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/bbp.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.start_paused = 1;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 0);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1);
}
END_TEST

START_TEST(handles)
{
    gpuprof_region a, a2, b;
    ck_assert_int_eq(gpuprof_region_register("hot", &a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("hot", &a2), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("cold", &b), GPUPROF_OK);
    ck_assert_uint_eq(a, a2);
    ck_assert_uint_ne(a, b);
    ck_assert_int_eq(gpuprof_region_register("", &b), GPUPROF_E_INVALID);
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end_handle(0xFFFFFFF0u), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_begin_handle(a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("hot"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("hot"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(b), GPUPROF_E_UNBALANCED);
    ck_assert_uint_eq(stat_of("regions.entered"), 3);
}
END_TEST

#define NTHREADS 3
#define PAIRS 1000

static void *pairs(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < PAIRS; i++) {
        if (gpuprof_region_begin("t") != GPUPROF_OK || gpuprof_region_end("t") != GPUPROF_OK)
            return (void *)1;
    }
    return NULL;
}

START_TEST(threads_exit)
{
    pthread_t th[NTHREADS];
    void *rv;
    int i;
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    for (i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, pairs, NULL), 0);
    for (i = 0; i < NTHREADS; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        ck_assert_ptr_null(rv);
    }
    ck_assert_uint_eq(stat_of("threads.created"), NTHREADS);
    ck_assert_uint_eq(stat_of("threads.exited"), NTHREADS);
    ck_assert_uint_eq(stat_of("regions.entered"), NTHREADS * PAIRS);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

static int spin_stop;
static pthread_mutex_t spin_mu = PTHREAD_MUTEX_INITIALIZER;
static int spinning(void)
{
    int stop;
    pthread_mutex_lock(&spin_mu);
    stop = spin_stop;
    pthread_mutex_unlock(&spin_mu);
    return !stop;
}
static void *spinner(void *arg)
{
    (void)arg;
    while (spinning()) {
        gpuprof_region_begin("spin");
        gpuprof_region_end("spin");
    }
    return NULL;
}

START_TEST(fork_child_file)
{
    char pattern[512];
    pthread_t th;
    int hidden, status;
    pid_t pid;
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, spinner, NULL), 0);
    gpuprof_region_begin("before");
    gpuprof_region_end("before");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(10); /* a deadlock fails the parent's wait instead of hanging */
        int ok = gpuprof_region_begin("child") == GPUPROF_OK &&
                 gpuprof_region_end("child") == GPUPROF_OK &&
                 gpuprof_finalize() == GPUPROF_OK;
        _exit(ok ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    pthread_mutex_lock(&spin_mu);
    spin_stop = 1;
    pthread_mutex_unlock(&spin_mu);
    pthread_join(th, NULL);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    my_pattern(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_files(pattern, &hidden), 1);
    my_pattern(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_files(pattern, &hidden), 1);
}
END_TEST

/* A program that exits without gpuprof_finalize still leaves its file:
 * the child initializes, opens a region and calls exit(). */
START_TEST(exit_without_finalize)
{
    char pattern[512];
    int hidden, status;
    pid_t pid;
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/bbx.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuprof_options o = GPUPROF_OPTIONS_INIT;
        o.flags = GPUPROF_OPT_IGNORE_ENV;
        o.output_dir = outdir;
        if (gpuprof_init(&o) != GPUPROF_OK || gpuprof_region_begin("r") != GPUPROF_OK)
            _exit(1);
        exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    my_pattern(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_files(pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

START_TEST(stats_names)
{
    static const char *const expect[] = {
        "regions.unbalanced", "regions.open_at_finalize", "regions.entered",
        "threads.created", "threads.exited", "flush.count", "flush.errors",
        "records.dropped", "records.unattributed", "backends.active", "cct.nodes"};
    size_t i, n = 0;
    uint64_t v;
    for (i = 0; gpuprof_stat_name(i) != NULL; i++) {
        ck_assert_int_eq(gpuprof_stat_get(gpuprof_stat_name(i), &v), GPUPROF_OK);
        n++;
    }
    ck_assert_uint_ge(n, sizeof(expect) / sizeof(expect[0]));
    for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
        ck_assert_int_eq(gpuprof_stat_get(expect[i], &v), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stat_get("no.such", &v), GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_stat_get(NULL, &v), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_stat_get("cct.nodes", NULL), GPUPROF_E_INVALID);
}
END_TEST

static int log_calls, log_bad;
static void on_log(gpuprof_log_level level, const char *msg, void *user)
{
    size_t n = msg ? strlen(msg) : 0;
    if (!msg || (n && msg[n - 1] == '\n') || user != &log_calls || level > GPUPROF_LOG_DEBUG)
        log_bad++;
    log_calls++;
}

START_TEST(log_callback)
{
    ck_assert_int_eq(gpuprof_set_log(on_log, &log_calls, GPUPROF_LOG_DEBUG), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(on_log, &log_calls, 7), GPUPROF_E_INVALID);
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_gt(log_calls, 0);
    ck_assert_int_eq(log_bad, 0);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, GPUPROF_LOG_OFF), GPUPROF_OK);
    log_calls = 0;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(log_calls, 0);
}
END_TEST

/* A fake backend that counts its callbacks. */
static int n_probe, n_init, n_start, n_stop, n_flush, n_fini;
static gpuprof_status f_probe(void *u, char *r, size_t n) { (void)u; (void)r; (void)n; n_probe++; return GPUPROF_OK; }
static gpuprof_status f_init(void *u) { (void)u; n_init++; return GPUPROF_OK; }
static gpuprof_status f_start(void *u) { (void)u; n_start++; return GPUPROF_OK; }
static gpuprof_status f_stop(void *u) { (void)u; n_stop++; return GPUPROF_OK; }
static gpuprof_status f_flush(void *u) { (void)u; n_flush++; return GPUPROF_OK; }
static void f_fini(void *u) { (void)u; n_fini++; }
static gpuprof_status f_absent(void *u, char *r, size_t n)
{
    (void)u;
    snprintf(r, n, "no device");
    return GPUPROF_E_UNAVAILABLE;
}

static gpuprof_backend fake(const char *name)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = name;
    b.probe = f_probe;
    b.init = f_init;
    b.start = f_start;
    b.stop = f_stop;
    b.flush = f_flush;
    b.fini = f_fini;
    return b;
}

START_TEST(backend_life_cycle)
{
    gpuprof_backend b = fake("fake"), absent = fake("absent");
    char reason[64] = "";
    absent.probe = f_absent;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_register(&absent, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_backend_status("fake", NULL, 0), GPUPROF_E_STATE);
    ck_assert_int_eq(init_in_tmp("fake,absent"), GPUPROF_OK);
    ck_assert_int_eq(n_probe, 1);
    ck_assert_int_eq(n_init, 1);
    ck_assert_int_eq(n_start, 1);
    ck_assert_int_eq(gpuprof_backend_status("fake", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("absent", reason, sizeof(reason)), GPUPROF_E_UNAVAILABLE);
    ck_assert_str_eq(reason, "no device");
    ck_assert_int_eq(gpuprof_backend_status("nope", NULL, 0), GPUPROF_E_NOTFOUND);
    ck_assert_uint_eq(stat_of("backends.active"), 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(n_stop, 1);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(n_start, 2);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(n_flush, 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(n_fini, 1);
    ck_assert_int_eq(n_stop, 2);
    ck_assert_uint_eq(stat_of("backends.active"), 0);
}
END_TEST

START_TEST(backend_registration_errors)
{
    gpuprof_backend b = fake("ok_name");
    ck_assert_int_eq(gpuprof_backend_register(NULL, 0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_register(&b, 1), GPUPROF_E_INVALID);
    b.abi_version = 99;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.abi_version = GPUPROF_BACKEND_ABI;
    b.size = 0;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.size = sizeof(b);
    b.name = "Bad Name";
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_INVALID);
    b.name = "noprobe";
    b.probe = NULL;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_status(NULL, NULL, 0), GPUPROF_E_INVALID);
}
END_TEST

START_TEST(backend_not_selected_and_late)
{
    gpuprof_backend b = fake("fake");
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(n_probe, 0);
    ck_assert_int_eq(gpuprof_backend_status("fake", NULL, 0), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(n_fini, 0);
}
END_TEST

START_TEST(backend_registered_after_init)
{
    gpuprof_backend b = fake("late");
    ck_assert_int_eq(init_in_tmp("auto"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    ck_assert_int_eq(n_probe, 1);
    ck_assert_int_eq(n_init, 1);
    ck_assert_int_eq(n_start, 1);
    ck_assert_int_eq(gpuprof_backend_status("late", NULL, 0), GPUPROF_OK);
}
END_TEST

static void *flusher(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 20; i++) {
        if (gpuprof_flush() != GPUPROF_OK)
            return (void *)1;
        {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void *many_pairs(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 10000; i++) {
        gpuprof_region_begin("w");
        gpuprof_region_begin("x");
        gpuprof_region_end("x");
        gpuprof_region_end("w");
    }
    return NULL;
}

START_TEST(concurrent_flush)
{
    pthread_t th[8], f;
    void *rv;
    int i;
    ck_assert_int_eq(init_in_tmp("none"), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&f, NULL, flusher, NULL), 0);
    for (i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, many_pairs, NULL), 0);
    for (i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    pthread_join(f, &rv);
    ck_assert_ptr_null(rv);
    ck_assert_uint_eq(stat_of("regions.entered"), 8 * 10000 * 2);
    ck_assert_uint_eq(stat_of("regions.unbalanced"), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    struct { const char *name; const TTest *t; } cases[] = {
        {"versions", versions_and_strings}, {"before_init", before_init},
        {"init_twice", init_twice_and_after_finalize}, {"options_sizes", options_sizes},
        {"bad_options", bad_option_values}, {"output", output_file_and_generations},
        {"output_dir_errors", output_dir_errors}, {"unwritable", unwritable_dir_keeps_running},
        {"regions", regions_balanced_and_not}, {"pause", pause_and_resume},
        {"handles", handles}, {"threads_exit", threads_exit}, {"fork", fork_child_file},
        {"exit_without_finalize", exit_without_finalize}, {"stats", stats_names},
        {"log", log_callback}, {"backend", backend_life_cycle},
        {"backend_errors", backend_registration_errors},
        {"backend_not_selected", backend_not_selected_and_late},
        {"backend_late", backend_registered_after_init}, {"concurrent_flush", concurrent_flush},
    };
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(api_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
