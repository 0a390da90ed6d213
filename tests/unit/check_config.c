/*
 * check_config.c - settings that cannot be used are said, once, at the
 * default log level (errors only): every GPUPROF_* variable of the core with
 * a malformed value gives exactly one line naming the variable, the value
 * and what is used instead, and the configuration holds that value; a
 * backend list naming no backend lists the known ones; a backend asked for
 * by name that is unavailable says so, while an unavailable one that "auto"
 * merely tried stays quiet. Good values give no line at all. The lines are
 * caught through the log callback, installed without a level (the default
 * one stays).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sim/sim.h"
#include "core/internal.h"
#include "support/suite.h"

enum { MAXLINES = 16 };
static char lines[MAXLINES][512];
static int nlines;

static void catch_line(gpuprof_log_level level, const char *msg, void *user)
{
    (void)user;
    ck_assert_int_le(level, GPUPROF_LOG_ERROR); /* the default level */
    if (nlines < MAXLINES)
        snprintf(lines[nlines], sizeof(lines[0]), "%s", msg);
    nlines++;
}

/* Initializes from the environment (GPUPROF_OUTPUT: run-tests.sh's); the
 * sim backend is registered, so GPUPROF_BACKENDS may name it. */
static void init_env(const char *backends)
{
    setenv("GPUPROF_BACKENDS", backends, 1);
    unsetenv("GPUPROF_LOG");
    ck_assert_int_eq(gpuprof_set_log(catch_line, NULL, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_register(NULL), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_OK);
}

/* Exactly one line was logged, and it has every one of `parts`. */
static void one_line(const char *const *parts)
{
    ck_assert_msg(nlines == 1, "%d lines, first: %s", nlines,
                  nlines ? lines[0] : "");
    for (; *parts; parts++)
        ck_assert_msg(strstr(lines[0], *parts), "no '%s' in: %s", *parts,
                      lines[0]);
}

static void bad_var(const char *var, const char *value, const char *instead)
{
    setenv(var, value, 1);
    init_env("sim");
    char want[128], used[128];
    snprintf(want, sizeof(want), "%s=%s", var, value);
    snprintf(used, sizeof(used), "using %s", instead);
    const char *parts[] = {want, used, NULL};
    one_line(parts);
}

START_TEST(bad_start_paused)
{
    bad_var("GPUPROF_START_PAUSED", "maybe", "0");
    ck_assert(!G.cfg.start_paused);
}
END_TEST

START_TEST(bad_trace)
{
    bad_var("GPUPROF_TRACE", "abc", "0");
    ck_assert(!G.cfg.trace);
}
END_TEST

START_TEST(bad_trace_threads)
{
    bad_var("GPUPROF_TRACE_THREADS", "0", "1");
    ck_assert_int_eq(G.cfg.trace_threads, 1);
}
END_TEST

START_TEST(bad_flush_period)
{
    bad_var("GPUPROF_FLUSH_PERIOD_MS", "1s", "0");
    ck_assert_int_eq(G.cfg.flush_period_ms, 0);
}
END_TEST

START_TEST(bad_keep_threads)
{
    bad_var("GPUPROF_KEEP_THREADS", "-1", "256");
    ck_assert_int_eq(G.cfg.keep_threads, 256);
}
END_TEST

START_TEST(bad_signals)
{
    bad_var("GPUPROF_SIGNALS", "2", "1");
    ck_assert(G.cfg.signals);
}
END_TEST

START_TEST(bad_gpu_binaries)
{
    bad_var("GPUPROF_GPU_BINARIES", "all", "1");
    ck_assert(G.cfg.gpu_binaries);
}
END_TEST

START_TEST(bad_channel_items)
{
    bad_var("GPUPROF_CHANNEL_ITEMS", "3", "16");
    ck_assert_int_eq(G.cfg.channel_items, 16);
}
END_TEST

START_TEST(bad_log)
{
    setenv("GPUPROF_LOG", "abc", 1); /* init_env leaves the default level */
    ck_assert_int_eq(gpuprof_set_log(catch_line, NULL, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_register(NULL), GPUPROF_OK);
    setenv("GPUPROF_BACKENDS", "sim", 1);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_OK);
    const char *parts[] = {"GPUPROF_LOG=abc", "using error", NULL};
    one_line(parts);
    ck_assert_int_eq(G.cfg.log_level, -1); /* the default: error */
}
END_TEST

START_TEST(bad_clock)
{
    bad_var("GPUPROF_CLOCK", "rdtsc", "auto");
    ck_assert_int_eq(G.cfg.clock, 0);
}
END_TEST

START_TEST(bad_rank)
{
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMIX_RANK");
    unsetenv("PMI_RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("MV2_COMM_WORLD_RANK");
    bad_var("GPUPROF_RANK", "abc", "no rank");
    ck_assert_int_eq(G.cfg.rank, -1);
}
END_TEST

/* A malformed GPUPROF_RANK: the launcher's variable is used, and said. */
START_TEST(bad_rank_falls_back)
{
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMIX_RANK");
    setenv("PMI_RANK", "3", 1);
    bad_var("GPUPROF_RANK", "yes", "rank 3 from PMI_RANK");
    ck_assert_int_eq(G.cfg.rank, 3);
}
END_TEST

START_TEST(unknown_backend)
{
    init_env("openc");
    const char *parts[] = {"GPUPROF_BACKENDS=openc", "ignoring openc",
                           "known: sim", "using none", NULL};
    one_line(parts);
    ck_assert_int_eq(gpuprof_backend_status("sim", NULL, 0), GPUPROF_E_STATE);
}
END_TEST

START_TEST(unknown_backend_beside_a_known_one)
{
    init_env("sim,openc");
    const char *parts[] = {"GPUPROF_BACKENDS=sim,openc", "ignoring openc",
                           "known: sim", "using sim", NULL};
    one_line(parts);
    ck_assert_int_eq(gpuprof_backend_status("sim", NULL, 0), GPUPROF_OK);
}
END_TEST

/* A backend whose runtime is missing (probe: GPUPROF_E_UNAVAILABLE). */
static gpuprof_status absent_probe(void *user, char *reason, size_t size)
{
    (void)user;
    snprintf(reason, size, "no such runtime");
    return GPUPROF_E_UNAVAILABLE;
}

static gpuprof_status no_init(void *user)
{
    (void)user;
    return GPUPROF_OK;
}

static void register_absent(void)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "absent";
    b.probe = absent_probe;
    b.init = no_init;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
}

START_TEST(named_backend_unavailable)
{
    register_absent();
    init_env("sim,absent");
    const char *parts[] = {"backend absent unavailable", "no such runtime",
                           NULL};
    one_line(parts);
}
END_TEST

/* "auto" tries every backend: "absent" is skipped without a line at the
 * default level (the built-in ones may say theirs: only "absent" is looked
 * for). */
START_TEST(auto_backend_unavailable_is_quiet)
{
    register_absent();
    init_env("auto");
    for (int i = 0; i < nlines && i < MAXLINES; i++)
        ck_assert_msg(!strstr(lines[i], "absent"), "%s", lines[i]);
    ck_assert_int_eq(gpuprof_backend_status("absent", NULL, 0),
                     GPUPROF_E_UNAVAILABLE);
}
END_TEST

START_TEST(good_values_are_quiet)
{
    setenv("GPUPROF_START_PAUSED", "off", 1);
    setenv("GPUPROF_TRACE_THREADS", "2", 1);
    setenv("GPUPROF_KEEP_THREADS", "10", 1);
    setenv("GPUPROF_CLOCK", "monotonic", 1);
    setenv("GPUPROF_RANK", "7", 1);
    init_env("sim");
    ck_assert_int_eq(nlines, 0);
    ck_assert_int_eq(G.cfg.rank, 7);
    ck_assert_int_eq(G.cfg.trace_threads, 2);
}
END_TEST

/* A log level the program chose applies to the settings' lines too. */
START_TEST(program_log_level_applies)
{
    setenv("GPUPROF_TRACE", "abc", 1);
    setenv("GPUPROF_BACKENDS", "sim", 1);
    ck_assert_int_eq(gpuprof_set_log(catch_line, NULL, -1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__sim_register(NULL), GPUPROF_OK);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.log_level = GPUPROF_LOG_OFF;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(nlines, 0);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"bad_start_paused", bad_start_paused, 30},
        {"bad_trace", bad_trace, 30},
        {"bad_trace_threads", bad_trace_threads, 30},
        {"bad_flush_period", bad_flush_period, 30},
        {"bad_keep_threads", bad_keep_threads, 30},
        {"bad_signals", bad_signals, 30},
        {"bad_gpu_binaries", bad_gpu_binaries, 30},
        {"bad_channel_items", bad_channel_items, 30},
        {"bad_log", bad_log, 30},
        {"bad_clock", bad_clock, 30},
        {"bad_rank", bad_rank, 30},
        {"bad_rank_falls_back", bad_rank_falls_back, 30},
        {"unknown_backend", unknown_backend, 30},
        {"unknown_backend_beside_a_known_one",
         unknown_backend_beside_a_known_one, 30},
        {"named_backend_unavailable", named_backend_unavailable, 30},
        {"auto_backend_unavailable_is_quiet", auto_backend_unavailable_is_quiet,
         30},
        {"good_values_are_quiet", good_values_are_quiet, 30},
        {"program_log_level_applies", program_log_level_applies, 30},
    };
    return RUN_SUITE("config", cases);
}
