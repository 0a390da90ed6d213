/*
 * lifecycle.c - black-box tests of the life cycle around the measurement:
 * options and environment variables, the state machine init..finalize,
 * the profile file (name, generations, errors), periodic flush, fork, exit
 * without finalize, SIGTERM/SIGINT, per-thread last_error and logging.
 *
 * Only <gpuprof.h>, the shared library, and what the header (and the
 * README / doc/ABI.md / doc/CORE.md where noted) promise. Compiled as C99
 * (-Wpedantic -Werror) and as C++11. Check forks every test, so each test
 * starts with a library that was never initialized.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
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

/* ------------------------------------------------------------ helpers -- */

static char outdir[1024];

static void make_tmpdir(char *buf, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Forgets every GPUPROF_* variable a test might be influenced by (the
 * runner sets GPUPROF_OUTPUT); tests that want one set it afterwards. */
static void clear_env(void)
{
    static const char *const vars[] = {
        "GPUPROF_OUTPUT", "GPUPROF_BACKENDS", "GPUPROF_START_PAUSED", "GPUPROF_TRACE",
        "GPUPROF_TRACE_THREADS", "GPUPROF_FLUSH_PERIOD_MS", "GPUPROF_LOG", "GPUPROF_RANK",
        "GPUPROF_CLOCK", "GPUPROF_KEEP_THREADS", "GPUPROF_SIGNALS"};
    size_t i;
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

/* Options that depend on nothing outside the test: IGNORE_ENV, a fresh
 * output directory, no backends. */
static gpuprof_options quiet_opts(void)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    clear_env();
    make_tmpdir(outdir, sizeof(outdir), "bbl");
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "none";
    return o;
}

static int count_all(const char *dir)
{
    return count_in(dir, "*", NULL);
}

static void host_name(char *buf, size_t size)
{
    ck_assert_int_eq(gethostname(buf, size), 0);
    buf[size - 1] = '\0';
}

/* <host>-r*-p<pid>.gpuprof */
static void pattern_for(char *buf, size_t size, long pid)
{
    char host[256];
    host_name(host, sizeof(host));
    snprintf(buf, size, "%s-r*-p%ld.gpuprof", host, pid);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Waits at most `seconds` for a child; kills it (SIGKILL) past that. */
static int wait_child(pid_t pid, int seconds)
{
    int status = 0, i;
    for (i = 0; i < seconds * 100; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        ck_assert_int_eq(r, 0);
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ck_abort_msg("child %ld did not finish within %d s (deadlock?)", (long)pid, seconds);
    return status;
}

/* In a forked child: the first failing expectation is the exit status. */
static int child_step;
#define CHILD_EXPECT(cond)                                                     \
    do {                                                                       \
        child_step++;                                                          \
        if (!(cond))                                                           \
            _exit(child_step);                                                 \
    } while (0)

/* Check's runner leaves its own SIGALRM/SIGINT/SIGTERM handlers in test
 * processes; a grandchild that wants the default actions restores them. */
static void child_defaults(void)
{
    signal(SIGALRM, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    child_step = 0;
    alarm(20); /* a hang ends as SIGALRM instead of a stuck test */
}

#define ASSERT_EXITED_0(st)                                                    \
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,                       \
                  "child: exited=%d code/step=%d signaled=%d sig=%d",          \
                  WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : -1,         \
                  WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : -1)

/* -------------------------------------------------- options and init -- */

START_TEST(init_null_opts_uses_environment)
{
    char dir[1024], pattern[512], path[4096];
    clear_env();
    make_tmpdir(dir, sizeof(dir), "bbnull");
    strcat(dir, "/out"); /* does not exist yet: init creates it */
    ck_assert_int_eq(setenv("GPUPROF_OUTPUT", dir, 1), 0);
    ck_assert_int_eq(setenv("GPUPROF_BACKENDS", "none", 1), 0);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_OK);
    ck_assert_msg(is_dir(dir), "init did not create %s", dir);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(dir, pattern, NULL), 1);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    ck_assert_int_eq(strncmp(path, dir, strlen(dir)), 0);
}
END_TEST

/* doc/ABI.md: a size too small to hold the first version (0.1, this one)
 * or implausibly large is refused with GPUPROF_E_VERSION; a newer caller's
 * larger struct is read up to the library's own size. */
START_TEST(options_struct_sizes)
{
    gpuprof_options o;
    size_t tiny;
    struct future {
        gpuprof_options o;
        unsigned char extra[16];
    } f;
    for (tiny = 0; tiny < offsetof(gpuprof_options, flags) + sizeof(uint32_t); tiny++) {
        o = quiet_opts();
        o.size = tiny;
        ck_assert_msg(gpuprof_init(&o) == GPUPROF_E_VERSION, "size %zu", tiny);
    }
    o = quiet_opts();
    o.size = SIZE_MAX;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_VERSION);
    o.size = SIZE_MAX / 2;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_VERSION);
    o.size = (size_t)1 << 30;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_VERSION);
    /* None of the refusals initialized anything. */
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    memset(&f, 0, sizeof(f));
    f.o = quiet_opts();
    f.o.size = sizeof(f);
    ck_assert_int_eq(gpuprof_init(&f.o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
}
END_TEST

/* doc/ABI.md: 0.1 is the first version, so a struct without all of its
 * fields is "too small to hold the first version". */
START_TEST(options_size_lacking_fields)
{
    gpuprof_options o = quiet_opts();
    o.size = offsetof(gpuprof_options, signals); /* lacks the last 0.1 field */
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_VERSION);
    o.size = offsetof(gpuprof_options, output_dir);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_VERSION);
    o.size = sizeof(gpuprof_options);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}
END_TEST

/* "GPUPROF_E_INVALID for a bad value"; a refused init leaves the library
 * uninitialized, so a corrected call then works. Ranges from the README. */
struct bad_value {
    const char *what;
    int field;
    int64_t value;
};
enum { F_START_PAUSED, F_TRACE, F_TRACE_THREADS, F_FLUSH, F_LOG, F_RANK, F_CLOCK, F_KEEP, F_SIGNALS };
static const struct bad_value bad_values[] = {
    {"start_paused=2", F_START_PAUSED, 2},  {"start_paused=-2", F_START_PAUSED, -2},
    {"trace=2", F_TRACE, 2},                {"trace_threads=0", F_TRACE_THREADS, 0},
    {"trace_threads=65", F_TRACE_THREADS, 65}, {"flush_period_ms=-5", F_FLUSH, -5},
    {"log_level=5", F_LOG, 5},              {"log_level=-2", F_LOG, -2},
    {"rank=-5", F_RANK, -5},                {"clock=3", F_CLOCK, 3},
    {"clock=-2", F_CLOCK, -2},              {"keep_threads=-5", F_KEEP, -5},
    {"signals=2", F_SIGNALS, 2},            {"signals=-7", F_SIGNALS, -7},
};

static void set_field(gpuprof_options *o, int field, int64_t v)
{
    switch (field) {
    case F_START_PAUSED: o->start_paused = (int32_t)v; break;
    case F_TRACE: o->trace = (int32_t)v; break;
    case F_TRACE_THREADS: o->trace_threads = (int32_t)v; break;
    case F_FLUSH: o->flush_period_ms = v; break;
    case F_LOG: o->log_level = (int32_t)v; break;
    case F_RANK: o->rank = (int32_t)v; break;
    case F_CLOCK: o->clock = (int32_t)v; break;
    case F_KEEP: o->keep_threads = (int32_t)v; break;
    default: o->signals = (int32_t)v; break;
    }
}

START_TEST(bad_option_value)
{
    const struct bad_value *b = &bad_values[_i];
    gpuprof_options o = quiet_opts();
    set_field(&o, b->field, b->value);
    ck_assert_msg(gpuprof_init(&o) == GPUPROF_E_INVALID, "%s accepted", b->what);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_E_STATE);
    set_field(&o, b->field, GPUPROF_UNSET);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}
END_TEST

START_TEST(bad_option_strings)
{
    gpuprof_options o = quiet_opts();
    o.backends = "";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_INVALID);
    o.backends = "none";
    o.output_dir = "";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_INVALID);
    o.output_dir = outdir;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}
END_TEST

/* Values at the edges of the documented ranges are accepted. */
START_TEST(good_option_edges)
{
    gpuprof_options o = quiet_opts();
    o.clock = 2;   /* tsc: falls back to monotonic without one */
    o.trace = 1;   /* accepted, writes nothing yet */
    o.trace_threads = 64;
    o.log_level = 0;
    o.rank = 0;
    o.keep_threads = 1;
    o.signals = 0;
    o.start_paused = 0;
    o.flush_period_ms = 0;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("r"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Options are only read during the call: strings are copied. */
START_TEST(option_strings_copied)
{
    char dir[1024], pattern[512];
    gpuprof_options o = quiet_opts();
    strcpy(dir, outdir);
    o.output_dir = dir;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    memset(dir, 'Z', 64);
    memset(&o, 0xA5, sizeof(o));
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
}
END_TEST

/* ----------------------------------------------------- state machine -- */

START_TEST(everything_after_finalize_is_state)
{
    gpuprof_options o = quiet_opts();
    gpuprof_region h;
    ck_assert_int_eq(gpuprof_region_register("h", &h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_E_STATE);
    ck_assert_str_ne(gpuprof_last_error(), "");
    /* Nothing was recorded after finalize. */
    ck_assert_uint_eq(stat_of("regions.entered"), 0);
    ck_assert_uint_eq(stat_of("regions.unbalanced"), 0);
}
END_TEST

START_TEST(before_init_is_state_and_records_nothing)
{
    gpuprof_region h = 0;
    gpuprof_status st;
    size_t i;
    const char *name;
    uint64_t v;
    /* Every counter reads zero before init (header: "before init: zeros"). */
    for (i = 0; (name = gpuprof_stat_name(i)) != NULL; i++) {
        v = 77;
        ck_assert_int_eq(gpuprof_stat_get(name, &v), GPUPROF_OK);
        ck_assert_msg(v == 0, "%s = %llu before init", name, (unsigned long long)v);
    }
    ck_assert_uint_ge(i, 14); /* the README lists 14 */
    ck_assert_ptr_null(gpuprof_stat_name(i + 1));
    ck_assert_ptr_null(gpuprof_stat_name((size_t)-1));
    ck_assert_int_eq(gpuprof_start(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_E_STATE);
    st = gpuprof_region_begin(NULL);
    ck_assert_msg(st == GPUPROF_E_STATE || st == GPUPROF_E_INVALID, "begin(NULL) = %d", st);
    ck_assert_int_eq(gpuprof_region_register("a", &h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_thread_set_name("early bird"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, GPUPROF_LOG_ERROR), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, -1), GPUPROF_OK);
    /* Nothing above was measured. */
    for (i = 0; (name = gpuprof_stat_name(i)) != NULL; i++) {
        v = 77;
        ck_assert_int_eq(gpuprof_stat_get(name, &v), GPUPROF_OK);
        if (strcmp(name, "memory.bytes") != 0)
            ck_assert_msg(v == 0, "%s = %llu before init", name, (unsigned long long)v);
    }
    /* And init still works after all that. */
    {
        gpuprof_options o = quiet_opts();
        ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
        ck_assert_uint_eq(stat_of("regions.entered"), 1);
        ck_assert_uint_eq(stat_of("threads.created"), 1);
    }
}
END_TEST

static void *finalize_elsewhere(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)gpuprof_finalize();
}

/* "Any thread, once": finalize from a thread that did not init. */
START_TEST(finalize_from_another_thread)
{
    gpuprof_options o = quiet_opts();
    pthread_t th;
    void *rv;
    char pattern[512];
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("main"), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, finalize_elsewhere, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_int_eq((int)(intptr_t)rv, GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("main"), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_uint_eq(stat_of("regions.open_at_finalize"), 1);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
}
END_TEST

/* ------------------------------------------------------------ output -- */

START_TEST(output_path_exact_fit)
{
    gpuprof_options o = quiet_opts();
    char path[4096], small[4096], pattern[512];
    size_t n;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    n = strlen(path);
    ck_assert_uint_gt(n, strlen(outdir) + 1);
    ck_assert_int_eq(strncmp(path, outdir, strlen(outdir)), 0);
    ck_assert_int_eq(path[strlen(outdir)], '/');
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(fnmatch(pattern, path + strlen(outdir) + 1, 0), 0);
    /* Nothing written yet: the period is 0, so only flush and exit write. */
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(count_all(outdir), 0);
    memset(small, 'Z', sizeof(small));
    ck_assert_int_eq(gpuprof_output_path(small, n + 1), GPUPROF_OK);
    ck_assert_str_eq(small, path);
    ck_assert_int_eq(small[n + 1], 'Z');
    memset(small, 'Z', sizeof(small));
    ck_assert_int_eq(gpuprof_output_path(small, n), GPUPROF_E_LIMIT);
    ck_assert_int_eq(small[n], 'Z'); /* at most `size` bytes touched */
    {
        /* size 0: "did not fit" (LIMIT) or "out of range" (INVALID); the
         * header does not say which, but nothing may be written. */
        gpuprof_status st = gpuprof_output_path(small, 0);
        ck_assert_msg(st == GPUPROF_E_LIMIT || st == GPUPROF_E_INVALID, "size 0: %d", st);
        ck_assert_int_eq(small[0], 'Z');
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(access(path, R_OK), 0);
}
END_TEST

/* README: <dir>/<host>-r<rank>-p<pid>.gpuprof, "rx" when the rank is
 * unknown. */
START_TEST(file_name_rank)
{
    gpuprof_options o = quiet_opts();
    char host[256], want[2048], path[4096];
    host_name(host, sizeof(host));
    o.rank = 3;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    snprintf(want, sizeof(want), "%s/%s-r3-p%ld.gpuprof", outdir, host, (long)getpid());
    ck_assert_str_eq(path, want);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(access(want, R_OK), 0);
}
END_TEST

START_TEST(file_name_rank_unknown)
{
    gpuprof_options o = quiet_opts();
    char host[256], want[2048], path[4096];
    host_name(host, sizeof(host));
    /* Even if the environment names a rank, IGNORE_ENV ignores it. */
    setenv("GPUPROF_RANK", "9", 1);
    setenv("SLURM_PROCID", "8", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    snprintf(want, sizeof(want), "%s/%s-rx-p%ld.gpuprof", outdir, host, (long)getpid());
    ck_assert_str_eq(path, want);
}
END_TEST

static const char *const rank_vars[] = {"GPUPROF_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                        "PMI_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK"};

/* GPUPROF_RANK, else the launchers' variables in the README's order. */
START_TEST(file_name_rank_from_environment)
{
    char host[256], want[2048], path[4096], value[16];
    size_t i;
    gpuprof_options o = quiet_opts();
    host_name(host, sizeof(host));
    o.flags = 0;
    for (i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++)
        unsetenv(rank_vars[i]);
    /* Variable _i is set, and every later one too (with other values):
     * the earliest in the list wins. */
    for (i = (size_t)_i; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
        snprintf(value, sizeof(value), "%d", (int)(10 + i));
        setenv(rank_vars[i], value, 1);
    }
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    snprintf(want, sizeof(want), "%s/%s-r%d-p%ld.gpuprof", outdir, host, 10 + _i,
             (long)getpid());
    ck_assert_str_eq(path, want);
}
END_TEST

/* The option wins over the environment. */
START_TEST(rank_option_wins)
{
    char host[256], want[2048], path[4096];
    gpuprof_options o = quiet_opts();
    host_name(host, sizeof(host));
    o.flags = 0;
    o.rank = 4;
    setenv("GPUPROF_RANK", "9", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    snprintf(want, sizeof(want), "%s/%s-r4-p%ld.gpuprof", outdir, host, (long)getpid());
    ck_assert_str_eq(path, want);
}
END_TEST

/* README: the default directory is ./gpuprof-<program>-measurements. */
START_TEST(default_output_dir)
{
    char exe[PATH_MAX], dir[1024], sub[PATH_MAX + 1100], pattern[512];
    const char *prog;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    prog = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    make_tmpdir(dir, sizeof(dir), "bbdef");
    ck_assert_int_eq(chdir(dir), 0);
    setenv("GPUPROF_OUTPUT", "/nonexistent-should-be-ignored", 1);
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.backends = "none";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    snprintf(sub, sizeof(sub), "%s/gpuprof-%s-measurements", dir, prog);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_msg(count_in(sub, pattern, NULL) == 1, "no profile in %s", sub);
    ck_assert_int_eq(count_all(dir), 1);
}
END_TEST

/* README: resolved at init, so a later chdir does not move it. */
START_TEST(relative_dir_resolved_at_init)
{
    char dir[1024], other[1200], rel[1200], pattern[512], path[4096];
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    make_tmpdir(dir, sizeof(dir), "bbrel");
    ck_assert_int_eq(chdir(dir), 0);
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.backends = "none";
    o.output_dir = "rel";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    snprintf(other, sizeof(other), "%s/other", dir);
    ck_assert_int_eq(mkdir(other, 0755), 0);
    ck_assert_int_eq(chdir(other), 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    snprintf(rel, sizeof(rel), "%s/rel", dir);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(rel, pattern, NULL), 1);
    ck_assert_int_eq(count_all(other), 0);
    /* The reported path still names the file from the new directory. */
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    ck_assert_msg(access(path, R_OK) == 0, "output_path %s not readable after chdir", path);
}
END_TEST

/* README: "created if missing" - also two levels down. */
START_TEST(nested_output_dir_created)
{
    char dir[1024], deep[1200], pattern[512];
    gpuprof_options o = quiet_opts();
    snprintf(dir, sizeof(dir), "%s", outdir);
    snprintf(deep, sizeof(deep), "%s/a/b", dir);
    o.output_dir = deep;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert(is_dir(deep));
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(deep, pattern, NULL), 1);
}
END_TEST

START_TEST(env_output_bad_fails_init_unless_ignored)
{
    char file[1200];
    FILE *f;
    gpuprof_options o = quiet_opts();
    snprintf(file, sizeof(file), "%s/plain", outdir);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    strcat(file, "/sub");
    setenv("GPUPROF_OUTPUT", file, 1);
    setenv("GPUPROF_BACKENDS", "none", 1);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_IO);
    ck_assert_ptr_nonnull(strstr(gpuprof_last_error(), file));
    /* The environment is ignored with IGNORE_ENV: o's directory is used. */
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}
END_TEST

/* A flush is atomic: the previous generation stays complete for a reader
 * that has it open, and the new one is a different file that replaced it. */
START_TEST(generations_replace_atomically)
{
    gpuprof_options o = quiet_opts();
    char path[4096], pattern[512];
    struct stat before, old_again, after;
    int fd, hidden, i;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fstat(fd, &before), 0);
    ck_assert_int_gt(before.st_size, 0);
    for (i = 0; i < 50; i++) {
        char name[32];
        snprintf(name, sizeof(name), "r%d", i);
        ck_assert_int_eq(gpuprof_region_begin(name), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end(name), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(fstat(fd, &old_again), 0);
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_msg(after.st_ino != before.st_ino,
                  "flush rewrote the file in place (not atomic)");
    ck_assert_int_eq(old_again.st_size, before.st_size);
    ck_assert_int_gt(after.st_size, 0);
    close(fd);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
    ck_assert_int_eq(count_all(outdir), 1);
    ck_assert_uint_eq(stat_of("flush.count"), 2);
    ck_assert_uint_eq(stat_of("flush.errors"), 0);
}
END_TEST

/* Root can write anywhere, so the directory is replaced by a regular file:
 * no temporary file can be created in it, whoever we are. */
static void break_dir(void)
{
    char cmd_path[1400];
    FILE *f;
    DIR *d = opendir(outdir);
    struct dirent *e;
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(cmd_path, sizeof(cmd_path), "%s/%s", outdir, e->d_name);
        ck_assert_int_eq(unlink(cmd_path), 0);
    }
    closedir(d);
    ck_assert_int_eq(rmdir(outdir), 0);
    f = fopen(outdir, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

static void repair_dir(void)
{
    ck_assert_int_eq(unlink(outdir), 0);
    ck_assert_int_eq(mkdir(outdir, 0755), 0);
}

START_TEST(flush_error_then_recovery)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("kept"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("kept"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    break_dir();
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_IO);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_ptr_nonnull(strstr(gpuprof_last_error(), outdir));
    ck_assert_uint_eq(stat_of("flush.errors"), 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_IO);
    ck_assert_uint_eq(stat_of("flush.errors"), 2);
    /* The program keeps running and measuring. */
    ck_assert_int_eq(gpuprof_region_begin("kept"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("kept"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 2);
    repair_dir();
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    ck_assert_uint_eq(stat_of("flush.errors"), 2);
}
END_TEST

/* "Returns the status of the final write." */
START_TEST(finalize_reports_write_error)
{
    gpuprof_options o = quiet_opts();
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    break_dir();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_IO);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    repair_dir(); /* for the atexit handler: it must not write now */
}
END_TEST

START_TEST(finalize_writes_without_flush)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("a"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("a"), GPUPROF_OK);
    ck_assert_int_eq(count_all(outdir), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    ck_assert_int_eq(count_all(outdir), 1);
}
END_TEST

/* ---------------------------------------------------- periodic flush -- */

START_TEST(periodic_flush_writes)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    int i;
    o.flush_period_ms = 20;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("long"), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    for (i = 0; i < 500 && stat_of("flush.count") < 3; i++)
        sleep_ms(10);
    ck_assert_uint_ge(stat_of("flush.count"), 3);
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    ck_assert_int_eq(gpuprof_region_end("long"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(no_period_no_file_until_the_end)
{
    gpuprof_options o = quiet_opts();
    o.flush_period_ms = 0;
    setenv("GPUPROF_FLUSH_PERIOD_MS", "10", 1); /* ignored: IGNORE_ENV */
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    sleep_ms(300);
    ck_assert_uint_eq(stat_of("flush.count"), 0);
    ck_assert_int_eq(count_all(outdir), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(count_all(outdir), 1);
}
END_TEST

START_TEST(period_from_environment)
{
    gpuprof_options o = quiet_opts();
    int i;
    o.flags = 0;
    setenv("GPUPROF_FLUSH_PERIOD_MS", "10", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    for (i = 0; i < 500 && stat_of("flush.count") < 2; i++)
        sleep_ms(10);
    ck_assert_uint_ge(stat_of("flush.count"), 2);
}
END_TEST

/* ------------------------------------------------------- environment -- */

struct onoff {
    const char *text;
    int paused;
};
static const struct onoff onoff_values[] = {
    {"1", 1}, {"yes", 1}, {"on", 1}, {"true", 1}, {"0", 0}, {"no", 0}, {"off", 0}, {"false", 0},
};

START_TEST(env_start_paused_values)
{
    gpuprof_options o = quiet_opts();
    o.flags = 0;
    setenv("GPUPROF_START_PAUSED", onoff_values[_i].text, 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("r"), GPUPROF_OK);
    ck_assert_msg(stat_of("regions.entered") == (onoff_values[_i].paused ? 0u : 1u),
                  "GPUPROF_START_PAUSED=%s", onoff_values[_i].text);
}
END_TEST

static int err_msgs, any_msgs, newline_msgs, bad_user;
static gpuprof_log_level max_level_seen;
static int log_tag;
static void count_log(gpuprof_log_level level, const char *msg, void *user)
{
    any_msgs++;
    if (user != &log_tag)
        bad_user++;
    if (level == GPUPROF_LOG_ERROR)
        err_msgs++;
    if (level > max_level_seen)
        max_level_seen = level;
    if (!msg || strchr(msg, '\n'))
        newline_msgs++;
}

/* README: a malformed value is logged (at the default error level) and the
 * default is used instead; init does not fail. */
START_TEST(env_malformed_value)
{
    gpuprof_options o = quiet_opts();
    o.flags = 0;
    unsetenv("GPUPROF_LOG");
    setenv("GPUPROF_START_PAUSED", "banana", 1);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_ge(err_msgs, 1);
    ck_assert_int_eq(bad_user, 0);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1); /* default: measuring */
}
END_TEST

START_TEST(option_wins_over_env)
{
    gpuprof_options o = quiet_opts();
    o.flags = 0;
    o.start_paused = 0;
    setenv("GPUPROF_START_PAUSED", "1", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1);
}
END_TEST

START_TEST(ignore_env_ignores_env)
{
    gpuprof_options o = quiet_opts();
    setenv("GPUPROF_START_PAUSED", "1", 1);
    setenv("GPUPROF_OUTPUT", "/proc/definitely/not/writable", 1);
    setenv("GPUPROF_LOG", "banana", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("r"), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("regions.entered"), 1);
}
END_TEST

/* -------------------------------------------------------- last_error -- */

static void *fresh_thread_errors(void *arg)
{
    uint64_t v;
    int ok = strcmp(gpuprof_last_error(), "") == 0;
    ok = ok && gpuprof_stat_get("no.such.counter", &v) == GPUPROF_E_NOTFOUND;
    ok = ok && strcmp(gpuprof_last_error(), "") != 0;
    (void)arg;
    return (void *)(intptr_t)ok;
}

START_TEST(last_error_per_thread)
{
    gpuprof_options o = quiet_opts();
    char mine[512];
    pthread_t th;
    void *rv;
    ck_assert_str_eq(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_begin(NULL), GPUPROF_E_INVALID);
    ck_assert_str_ne(gpuprof_last_error(), "");
    snprintf(mine, sizeof(mine), "%s", gpuprof_last_error());
    ck_assert_int_eq(pthread_create(&th, NULL, fresh_thread_errors, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_msg(rv != NULL, "a new thread saw another thread's error, or none of its own");
    ck_assert_str_eq(gpuprof_last_error(), mine);
}
END_TEST

/* Every kind of failing call leaves a message. */
START_TEST(last_error_after_each_failure)
{
    gpuprof_options o = quiet_opts();
    char small[2];
    uint64_t v;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_STATE);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_E_EXISTS);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_begin(""), GPUPROF_E_INVALID);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_end("never"), GPUPROF_E_UNBALANCED);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_output_path(small, sizeof(small)), GPUPROF_E_LIMIT);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_stat_get("no.such", &v), GPUPROF_E_NOTFOUND);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(gpuprof_region_begin_handle(0), GPUPROF_E_INVALID);
    ck_assert_str_ne(gpuprof_last_error(), "");
}
END_TEST

START_TEST(strerror_all)
{
    int s;
    for (s = 0; s <= 12; s++) {
        const char *m = gpuprof_strerror((gpuprof_status)s);
        ck_assert_ptr_nonnull(m);
        ck_assert_uint_gt(strlen(m), 0);
        ck_assert_str_ne(m, "unknown status");
    }
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)13), "unknown status");
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)999), "unknown status");
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)-1), "unknown status");
    ck_assert_str_eq(gpuprof_strerror((gpuprof_status)INT_MIN), "unknown status");
    ck_assert_uint_eq(gpuprof_version(), GPUPROF_VERSION_NUMBER);
    ck_assert_uint_eq(gpuprof_version(), 100);
    ck_assert_str_eq(gpuprof_version_string(), GPUPROF_VERSION_STRING);
    ck_assert_str_eq(gpuprof_version_string(), "0.1.0");
}
END_TEST

/* --------------------------------------------------------------- log -- */

START_TEST(log_levels_filter)
{
    gpuprof_options o = quiet_opts();
    o.log_level = GPUPROF_LOG_WARN;
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, GPUPROF_LOG_WARN), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_msg(max_level_seen <= GPUPROF_LOG_WARN, "a level-%d message got through at WARN",
                  (int)max_level_seen);
    ck_assert_int_eq(newline_msgs, 0);
    ck_assert_int_eq(bad_user, 0);
}
END_TEST

/* INFO is "one line per important event (file written)". A negative level
 * keeps the current one. */
START_TEST(log_info_on_write_and_keep_level)
{
    gpuprof_options o = quiet_opts();
    int before;
    o.log_level = GPUPROF_LOG_INFO;
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, GPUPROF_LOG_INFO), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    before = any_msgs;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_gt(any_msgs, before);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, -1), GPUPROF_OK);
    before = any_msgs;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_gt(any_msgs, before);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, GPUPROF_LOG_OFF), GPUPROF_OK);
    before = any_msgs;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("nothing open"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(any_msgs, before);
    ck_assert_int_le(max_level_seen, GPUPROF_LOG_INFO);
    ck_assert_int_eq(newline_msgs, 0);
}
END_TEST

/* GPUPROF_LOG sets the level the callback gets after init. */
START_TEST(log_level_from_environment)
{
    gpuprof_options o = quiet_opts();
    int before;
    o.flags = 0;
    setenv("GPUPROF_LOG", "info", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, -1), GPUPROF_OK);
    before = any_msgs;
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_gt(any_msgs, before);
    ck_assert_int_le(max_level_seen, GPUPROF_LOG_INFO);
}
END_TEST

START_TEST(log_level_from_environment_off)
{
    gpuprof_options o = quiet_opts();
    o.flags = 0;
    setenv("GPUPROF_LOG", "off", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    break_dir();
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_E_IO);
    repair_dir();
    ck_assert_int_eq(any_msgs, 0);
}
END_TEST

START_TEST(set_log_rejects_bad_level)
{
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, 5), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, 1000), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_set_log(count_log, &log_tag, GPUPROF_LOG_DEBUG), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_set_log(NULL, NULL, -5), GPUPROF_OK); /* negative: keep */
}
END_TEST

/* The default log: lines prefixed "gpuprof: " written to standard error. */
START_TEST(default_log_to_stderr)
{
    gpuprof_options o = quiet_opts();
    int fds[2], saved, n, lines = 0;
    char buf[65536], *line, *save = NULL;
    size_t got = 0;
    ck_assert_int_eq(pipe(fds), 0);
    saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_eq(dup2(fds[1], 2), 2);
    close(fds[1]);
    o.log_level = GPUPROF_LOG_INFO;
    gpuprof_set_log(NULL, NULL, GPUPROF_LOG_INFO);
    gpuprof_init(&o);
    gpuprof_flush();
    gpuprof_set_log(NULL, NULL, GPUPROF_LOG_OFF);
    dup2(saved, 2);
    close(saved);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    while (got < sizeof(buf) - 1 && (n = (int)read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fds[0]);
    ck_assert_uint_gt(got, 0);
    ck_assert_int_eq(buf[got - 1], '\n');
    for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        ck_assert_msg(strncmp(line, "gpuprof: ", 9) == 0, "stderr line without prefix: %s", line);
        lines++;
    }
    ck_assert_int_ge(lines, 1);
}
END_TEST

/* -------------------------------------------------------------- fork -- */

static int spin_stop;
static pthread_mutex_t spin_mu = PTHREAD_MUTEX_INITIALIZER;
static int keep_spinning(void)
{
    int stop;
    pthread_mutex_lock(&spin_mu);
    stop = spin_stop;
    pthread_mutex_unlock(&spin_mu);
    return !stop;
}
static void stop_spinning(void)
{
    pthread_mutex_lock(&spin_mu);
    spin_stop = 1;
    pthread_mutex_unlock(&spin_mu);
}
static void *region_spinner(void *arg)
{
    (void)arg;
    while (keep_spinning()) {
        gpuprof_region_begin("spin");
        gpuprof_region_begin("inner");
        gpuprof_region_end("inner");
        gpuprof_region_end("spin");
    }
    return NULL;
}
static void *flush_spinner(void *arg)
{
    (void)arg;
    while (keep_spinning())
        gpuprof_flush();
    return NULL;
}
static void *register_spinner(void *arg)
{
    unsigned i = 0;
    (void)arg;
    while (keep_spinning()) {
        char name[32];
        gpuprof_region h;
        snprintf(name, sizeof(name), "n%u", i++ % 5000);
        gpuprof_region_register(name, &h);
        gpuprof_stat_get("cct.nodes", NULL);
    }
    return NULL;
}

/* The child checks what the header and doc/CORE.md promise after fork. */
static void fork_child_body(const char *parent_path)
{
    char path[4096], expect_tail[64];
    uint64_t v = 99;
    child_defaults();
    CHILD_EXPECT(gpuprof_init(NULL) == GPUPROF_E_EXISTS);
    CHILD_EXPECT(gpuprof_output_path(path, sizeof(path)) == GPUPROF_OK);
    CHILD_EXPECT(strcmp(path, parent_path) != 0); /* the name changes */
    snprintf(expect_tail, sizeof(expect_tail), "-p%ld.gpuprof", (long)getpid());
    CHILD_EXPECT(strlen(path) > strlen(expect_tail) &&
                 strcmp(path + strlen(path) - strlen(expect_tail), expect_tail) == 0);
    /* CORE.md: counters restart in the child. */
    CHILD_EXPECT(gpuprof_stat_get("regions.entered", &v) == GPUPROF_OK && v == 0);
    CHILD_EXPECT(gpuprof_region_begin("child") == GPUPROF_OK);
    CHILD_EXPECT(gpuprof_region_end("child") == GPUPROF_OK);
    CHILD_EXPECT(gpuprof_stat_get("regions.entered", &v) == GPUPROF_OK && v == 1);
    /* CORE.md: the forking thread's open regions go on in the child. */
    CHILD_EXPECT(gpuprof_region_end("open_at_fork") == GPUPROF_OK);
    CHILD_EXPECT(gpuprof_flush() == GPUPROF_OK);
    CHILD_EXPECT(access(path, R_OK) == 0);
    CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
    CHILD_EXPECT(gpuprof_region_begin("late") == GPUPROF_E_STATE);
    _exit(0);
}

static void fork_and_check(void *(*busy)(void *))
{
    gpuprof_options o = quiet_opts();
    char parent_path[4096], pattern[512];
    pthread_t th[2];
    int st, hidden, i, nbusy = busy ? 2 : 0;
    pid_t pid;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(parent_path, sizeof(parent_path)), GPUPROF_OK);
    for (i = 0; i < nbusy; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, busy, NULL), 0);
    ck_assert_int_eq(gpuprof_region_begin("before"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("before"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("open_at_fork"), GPUPROF_OK);
    sleep_ms(20);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        fork_child_body(parent_path);
    st = wait_child(pid, 30);
    stop_spinning();
    for (i = 0; i < nbusy; i++)
        pthread_join(th[i], NULL);
    ASSERT_EXITED_0(st);
    /* The parent goes on as if nothing happened. */
    ck_assert_int_eq(gpuprof_region_end("open_at_fork"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
    ck_assert_int_eq(count_all(outdir), 2);
}

START_TEST(fork_quiet)
{
    fork_and_check(NULL);
}
END_TEST

START_TEST(fork_while_regions_run)
{
    fork_and_check(region_spinner);
}
END_TEST

START_TEST(fork_while_flushing)
{
    fork_and_check(flush_spinner);
}
END_TEST

START_TEST(fork_while_registering)
{
    fork_and_check(register_spinner);
}
END_TEST

static void *fork_from_thread(void *arg)
{
    pid_t pid = fork();
    (void)arg;
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_region_begin("t") == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_region_end("t") == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
        _exit(0);
    }
    return (void *)(intptr_t)pid;
}

START_TEST(fork_from_other_thread)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    pthread_t th;
    void *rv;
    int st;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("main"), GPUPROF_OK);
    ck_assert_int_eq(pthread_create(&th, NULL, fork_from_thread, NULL), 0);
    ck_assert_int_eq(pthread_join(th, &rv), 0);
    ck_assert_int_gt((int)(intptr_t)rv, 0);
    st = wait_child((pid_t)(intptr_t)rv, 30);
    ASSERT_EXITED_0(st);
    pattern_for(pattern, sizeof(pattern), (long)(intptr_t)rv);
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
}
END_TEST

/* A child forked before init measures itself independently. */
START_TEST(fork_before_init)
{
    char pattern[512];
    int st;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_region_begin("c") == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_region_end("c") == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
        _exit(0);
    }
    st = wait_child(pid, 30);
    ASSERT_EXITED_0(st);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    ck_assert_int_eq(count_all(outdir), 2);
}
END_TEST

/* A child forked after finalize inherits a finalized library. */
START_TEST(fork_after_finalize)
{
    gpuprof_options o = quiet_opts();
    int st;
    pid_t pid;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_E_STATE);
        CHILD_EXPECT(gpuprof_region_begin("c") == GPUPROF_E_STATE);
        CHILD_EXPECT(gpuprof_flush() == GPUPROF_E_STATE);
        exit(0);
    }
    st = wait_child(pid, 30);
    ASSERT_EXITED_0(st);
    ck_assert_int_eq(count_all(outdir), 1); /* the parent's only */
}
END_TEST

/* ------------------------------------------------- exit without finalize */

/* The child forked after init exits with exit(): the inherited atexit
 * handler writes the child's own file. */
START_TEST(fork_child_exit_writes_own_file)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    int st;
    pid_t pid;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    /* Under ASan the child's exit() runs LeakSanitizer, which hangs if
     * fork() caught a thread inside ASan's malloc (its allocator is not
     * fork-safe in GCC 12): let the library's service thread start first. */
    sleep_ms(100);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_region_begin("c") == GPUPROF_OK);
        exit(0);
    }
    st = wait_child(pid, 30);
    ASSERT_EXITED_0(st);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, NULL), 0); /* parent: not yet */
}
END_TEST

static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int parked;
static void *park_in_region(void *arg)
{
    (void)arg;
    gpuprof_region_begin("parked");
    pthread_mutex_lock(&park_mu);
    parked = 1;
    pthread_cond_broadcast(&park_cv);
    for (;;)
        pthread_cond_wait(&park_cv, &park_mu); /* until the process exits */
    return NULL;
}

/* exit() while other threads sit in open regions or hammer the library. */
START_TEST(exit_with_busy_threads)
{
    char pattern[512];
    int st, hidden;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t a, b, c;
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(pthread_create(&a, NULL, park_in_region, NULL) == 0);
        CHILD_EXPECT(pthread_create(&b, NULL, region_spinner, NULL) == 0);
        CHILD_EXPECT(pthread_create(&c, NULL, region_spinner, NULL) == 0);
        pthread_mutex_lock(&park_mu);
        while (!parked)
            pthread_cond_wait(&park_cv, &park_mu);
        pthread_mutex_unlock(&park_mu);
        CHILD_EXPECT(gpuprof_region_begin("main open") == GPUPROF_OK);
        sleep_ms(50);
        exit(0);
    }
    st = wait_child(pid, 30);
    ASSERT_EXITED_0(st);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* ----------------------------------------------------------- signals -- */

static const int term_signals[] = {SIGTERM, SIGINT};

/* README/CORE.md: with signals on (the default) and the default action
 * left in place, SIGTERM/SIGINT write the final profile and the process
 * still dies of the signal. */
START_TEST(signal_writes_profile_and_dies)
{
    char pattern[512];
    int st, hidden, sig = term_signals[_i];
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_region_begin("work") == GPUPROF_OK);
        raise(sig);
        for (;;)
            pause(); /* the library finalizes on its own thread, then re-raises */
    }
    st = wait_child(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == sig, "status 0x%x, wanted death by %d", st,
                  sig);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* Same, but the signal comes from outside while two threads are busy. */
START_TEST(sigterm_from_outside_while_busy)
{
    char pattern[512], c;
    int st, hidden, ready[2];
    pid_t pid;
    gpuprof_options o = quiet_opts();
    ck_assert_int_eq(pipe(ready), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t a, b;
        child_defaults();
        close(ready[0]);
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(pthread_create(&a, NULL, region_spinner, NULL) == 0);
        CHILD_EXPECT(pthread_create(&b, NULL, region_spinner, NULL) == 0);
        CHILD_EXPECT(write(ready[1], "r", 1) == 1);
        region_spinner(NULL);
        _exit(50);
    }
    close(ready[1]);
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    sleep_ms(50);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    st = wait_child(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status 0x%x", st);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* signals = 0: the library never touches them; nothing is written. */
START_TEST(signals_off)
{
    int st;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    o.signals = 0;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_region_begin("work") == GPUPROF_OK);
        raise(SIGTERM);
        _exit(60);
    }
    st = wait_child(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status 0x%x", st);
    ck_assert_int_eq(count_all(outdir), 0);
}
END_TEST

static void exit_42(int sig)
{
    (void)sig;
    _exit(42);
}

/* A handler the program installed before init is left alone. */
START_TEST(program_handler_left_alone)
{
    int st;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        signal(SIGTERM, exit_42);
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        raise(SIGTERM);
        _exit(61);
    }
    st = wait_child(pid, 30);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status 0x%x", st);
    ck_assert_int_eq(count_all(outdir), 0);
}
END_TEST

/* An ignored signal stays ignored. */
START_TEST(ignored_signal_stays_ignored)
{
    int st;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        signal(SIGINT, SIG_IGN);
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        raise(SIGINT);
        sleep_ms(100);
        CHILD_EXPECT(gpuprof_region_begin("alive") == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
        _exit(7);
    }
    st = wait_child(pid, 30);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status 0x%x", st);
    ck_assert_int_eq(count_all(outdir), 1);
}
END_TEST

/* After finalize the signal acts as if the library were not there. */
START_TEST(signal_after_finalize)
{
    int st;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
        raise(SIGTERM);
        for (;;)
            pause();
    }
    st = wait_child(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status 0x%x", st);
    ck_assert_int_eq(count_all(outdir), 1);
}
END_TEST

/* "Any thread, once": of several concurrent finalize calls exactly one
 * does the work and returns OK; the others get E_STATE. */
static pthread_barrier_t fin_barrier;
static void *finalize_at_barrier(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&fin_barrier);
    return (void *)(intptr_t)gpuprof_finalize();
}

START_TEST(concurrent_finalize_once)
{
    gpuprof_options o = quiet_opts();
    pthread_t th[4];
    void *rv;
    int i, ok = 0, state = 0;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(pthread_barrier_init(&fin_barrier, NULL, 4), 0);
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, finalize_at_barrier, NULL), 0);
    for (i = 0; i < 4; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        if ((int)(intptr_t)rv == GPUPROF_OK)
            ok++;
        else if ((int)(intptr_t)rv == GPUPROF_E_STATE)
            state++;
    }
    ck_assert_int_eq(ok, 1);
    ck_assert_int_eq(state, 3);
    ck_assert_int_eq(count_all(outdir), 1);
}
END_TEST

/* finalize while other threads flush: flushes end with OK or E_STATE. */
static void *flush_until_state(void *arg)
{
    gpuprof_status st;
    (void)arg;
    while ((st = gpuprof_flush()) == GPUPROF_OK)
        ;
    return (void *)(intptr_t)st;
}

START_TEST(finalize_while_flushing)
{
    gpuprof_options o = quiet_opts();
    pthread_t th[3];
    void *rv;
    int i, hidden;
    char pattern[512];
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, flush_until_state, NULL), 0);
    sleep_ms(50);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        ck_assert_int_eq((int)(intptr_t)rv, GPUPROF_E_STATE);
    }
    pattern_for(pattern, sizeof(pattern), (long)getpid());
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* SIGTERM while the main thread is inside gpuprof_flush again and again:
 * the final write must not deadlock with the flushes. */
START_TEST(sigterm_while_flushing)
{
    char pattern[512], c;
    int st, hidden, ready[2];
    pid_t pid;
    gpuprof_options o = quiet_opts();
    ck_assert_int_eq(pipe(ready), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t a;
        child_defaults();
        close(ready[0]);
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(pthread_create(&a, NULL, region_spinner, NULL) == 0);
        CHILD_EXPECT(write(ready[1], "r", 1) == 1);
        for (;;)
            gpuprof_flush();
    }
    close(ready[1]);
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    sleep_ms(50);
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    st = wait_child(pid, 30);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status 0x%x", st);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* fork() while the service thread writes a generation every millisecond. */
START_TEST(fork_during_periodic_flush)
{
    gpuprof_options o = quiet_opts();
    char pattern[512];
    int i, st;
    pid_t pid;
    o.flush_period_ms = 1;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    for (i = 0; i < 20; i++) {
        sleep_ms(3);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            child_defaults();
            CHILD_EXPECT(gpuprof_region_begin("c") == GPUPROF_OK);
            CHILD_EXPECT(gpuprof_region_end("c") == GPUPROF_OK);
            CHILD_EXPECT(gpuprof_flush() == GPUPROF_OK);
            CHILD_EXPECT(gpuprof_finalize() == GPUPROF_OK);
            _exit(0);
        }
        st = wait_child(pid, 30);
        ASSERT_EXITED_0(st);
        pattern_for(pattern, sizeof(pattern), (long)pid);
        ck_assert_int_eq(count_in(outdir, pattern, NULL), 1);
    }
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* exit() called by a worker thread while main is busy in regions. */
static void *exit_from_worker(void *arg)
{
    (void)arg;
    sleep_ms(50);
    exit(0);
    return NULL;
}

START_TEST(exit_from_worker_thread)
{
    char pattern[512];
    int st, hidden;
    pid_t pid;
    gpuprof_options o = quiet_opts();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t a;
        child_defaults();
        CHILD_EXPECT(gpuprof_init(&o) == GPUPROF_OK);
        CHILD_EXPECT(pthread_create(&a, NULL, exit_from_worker, NULL) == 0);
        region_spinner(NULL);
        _exit(70);
    }
    st = wait_child(pid, 30);
    ASSERT_EXITED_0(st);
    pattern_for(pattern, sizeof(pattern), (long)pid);
    ck_assert_int_eq(count_in(outdir, pattern, &hidden), 1);
    ck_assert_int_eq(hidden, 0);
}
END_TEST

/* ------------------------------------------------------------- suite -- */

struct tc {
    const char *name;
    const TTest *test;
    int loop_end; /* > 0: a loop test over 0..loop_end-1 */
};

static Suite *lifecycle_suite(void)
{
    const struct tc cases[] = {
        {"init_null_opts", init_null_opts_uses_environment, 0},
        {"options_sizes", options_struct_sizes, 0},
        {"options_size_lacking", options_size_lacking_fields, 0},
        {"bad_option_value", bad_option_value, (int)(sizeof(bad_values) / sizeof(bad_values[0]))},
        {"bad_option_strings", bad_option_strings, 0},
        {"good_option_edges", good_option_edges, 0},
        {"option_strings_copied", option_strings_copied, 0},
        {"after_finalize", everything_after_finalize_is_state, 0},
        {"before_init", before_init_is_state_and_records_nothing, 0},
        {"finalize_other_thread", finalize_from_another_thread, 0},
        {"output_path_exact_fit", output_path_exact_fit, 0},
        {"file_name_rank", file_name_rank, 0},
        {"file_name_rank_unknown", file_name_rank_unknown, 0},
        {"file_name_rank_env", file_name_rank_from_environment,
         (int)(sizeof(rank_vars) / sizeof(rank_vars[0]))},
        {"rank_option_wins", rank_option_wins, 0},
        {"default_output_dir", default_output_dir, 0},
        {"relative_dir", relative_dir_resolved_at_init, 0},
        {"nested_output_dir", nested_output_dir_created, 0},
        {"env_output_bad", env_output_bad_fails_init_unless_ignored, 0},
        {"generations_atomic", generations_replace_atomically, 0},
        {"flush_error_recovery", flush_error_then_recovery, 0},
        {"finalize_write_error", finalize_reports_write_error, 0},
        {"finalize_writes", finalize_writes_without_flush, 0},
        {"periodic_flush", periodic_flush_writes, 0},
        {"no_period", no_period_no_file_until_the_end, 0},
        {"period_env", period_from_environment, 0},
        {"env_start_paused", env_start_paused_values,
         (int)(sizeof(onoff_values) / sizeof(onoff_values[0]))},
        {"env_malformed", env_malformed_value, 0},
        {"option_wins", option_wins_over_env, 0},
        {"ignore_env", ignore_env_ignores_env, 0},
        {"last_error_per_thread", last_error_per_thread, 0},
        {"last_error_each", last_error_after_each_failure, 0},
        {"strerror_version", strerror_all, 0},
        {"log_filter", log_levels_filter, 0},
        {"log_info_keep", log_info_on_write_and_keep_level, 0},
        {"log_env", log_level_from_environment, 0},
        {"log_env_off", log_level_from_environment_off, 0},
        {"set_log_bad", set_log_rejects_bad_level, 0},
        {"default_log_stderr", default_log_to_stderr, 0},
        {"fork_quiet", fork_quiet, 0},
        {"fork_regions", fork_while_regions_run, 0},
        {"fork_flushing", fork_while_flushing, 0},
        {"fork_registering", fork_while_registering, 0},
        {"fork_other_thread", fork_from_other_thread, 0},
        {"fork_before_init", fork_before_init, 0},
        {"fork_after_finalize", fork_after_finalize, 0},
        {"fork_child_exit", fork_child_exit_writes_own_file, 0},
        {"exit_busy_threads", exit_with_busy_threads, 0},
        {"signal_dies", signal_writes_profile_and_dies,
         (int)(sizeof(term_signals) / sizeof(term_signals[0]))},
        {"sigterm_busy", sigterm_from_outside_while_busy, 0},
        {"signals_off", signals_off, 0},
        {"handler_left_alone", program_handler_left_alone, 0},
        {"ignored_signal", ignored_signal_stays_ignored, 0},
        {"signal_after_finalize", signal_after_finalize, 0},
        {"concurrent_finalize", concurrent_finalize_once, 0},
        {"finalize_while_flushing", finalize_while_flushing, 0},
        {"sigterm_while_flushing", sigterm_while_flushing, 0},
        {"fork_periodic_flush", fork_during_periodic_flush, 0},
        {"exit_from_worker", exit_from_worker_thread, 0},
    };
    Suite *s = suite_create("lifecycle");
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        if (cases[i].loop_end > 0)
            tcase_add_loop_test(tc, cases[i].test, 0, cases[i].loop_end);
        else
            tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return bb_run(lifecycle_suite());
}
