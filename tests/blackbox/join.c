/*
 * join.c - black-box tests of a program's own gpuprof_init joining a
 * measurement a launcher started first with GPUPROF_OPT_JOINABLE (what
 * `gpuprof run`'s preload library does): the program's init returns
 * GPUPROF_OK; the measurement keeps its output directory and profile; the
 * program's regions are measured in it; start_paused applies; every other
 * setting that differs is logged at WARN by name, and nothing else is; a
 * further init, or an init after a launcher that did not ask for joining,
 * is GPUPROF_E_EXISTS; bad options still fail (gpuprof.h, gpuprof_init).
 *
 * Only <gpuprof.h> and the shared library. Compiled as C99 (-Wpedantic
 * -Werror) and as C++11. Check forks every test, so each test starts with
 * a library that was never initialized.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuprof.h>

#include "bb.h"

/* ------------------------------------------------------------ helpers -- */

static char launcher_dir[1024], program_dir[1024];

static void make_tmpdir(char *buf, size_t size, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, size, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

/* Removes a directory of files the test made (a checked teardown: after a
 * test that passed). */
static void remove_dir(const char *dir)
{
    char path[2048];
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void teardown(void)
{
    (void)gpuprof_finalize(); /* else the profile appears at exit */
    remove_dir(launcher_dir);
    remove_dir(program_dir);
}

/* The launcher's options: what the preload library gives, made
 * independent of the test's environment. */
static gpuprof_options launcher_opts(void)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    make_tmpdir(launcher_dir, sizeof(launcher_dir), "bbjoinl");
    o.flags = GPUPROF_OPT_IGNORE_ENV | GPUPROF_OPT_JOINABLE;
    o.output_dir = launcher_dir;
    o.backends = "none";
    return o;
}

/* The same settings, as the program asks for them (no JOINABLE). */
static gpuprof_options program_opts(void)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = launcher_dir;
    o.backends = "none";
    return o;
}

/* The WARN messages of the log, joined by '|'; INFO ones counted. */
static char warns[4096];
static int nwarn, joined_info;
static void keep_log(gpuprof_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level == GPUPROF_LOG_WARN) {
        size_t n = strlen(warns);
        snprintf(warns + n, sizeof(warns) - n, "%s|", msg);
        nwarn++;
    }
    if (level == GPUPROF_LOG_INFO &&
        strstr(msg, "gpuprof_init: joined the measurement its launcher "
                    "started; profile: "))
        joined_info++;
}

static void log_everything(void)
{
    warns[0] = '\0';
    nwarn = joined_info = 0;
    ck_assert_int_eq(gpuprof_set_log(keep_log, NULL, GPUPROF_LOG_DEBUG),
                     GPUPROF_OK);
}

static void one_region(const char *name)
{
    ck_assert_int_eq(gpuprof_region_begin(name), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end(name), GPUPROF_OK);
}

/* --------------------------------------------------------------- join -- */

/* The program asks for the very settings that run: it joins without a
 * warning, its regions count, and the one profile is where it was. */
START_TEST(same_settings_join_silently)
{
    char before[4096], after[4096];
    gpuprof_options l = launcher_opts(), p;
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(before, sizeof(before)), GPUPROF_OK);
    log_everything();
    p = program_opts();
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    ck_assert_int_eq(nwarn, 0);
    ck_assert_int_eq(joined_info, 1);
    ck_assert_int_eq(gpuprof_output_path(after, sizeof(after)), GPUPROF_OK);
    ck_assert_str_eq(before, after);
    uint64_t entered = stat_of("regions.entered");
    one_region("program's own");
    ck_assert_uint_eq(stat_of("regions.entered"), entered + 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(count_in(launcher_dir, "*.gpuprof", NULL), 1);
}
END_TEST

/* Settings that cannot apply once measuring: each named at WARN with the
 * value asked and the value in use; the directory asked for stays empty. */
START_TEST(other_settings_are_named)
{
    char want[4096];
    gpuprof_options l = launcher_opts(), p;
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    log_everything();
    make_tmpdir(program_dir, sizeof(program_dir), "bbjoinp");
    p = program_opts();
    p.output_dir = program_dir;
    p.trace = 1;
    p.flush_period_ms = 250;
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    ck_assert_int_eq(nwarn, 3);
    snprintf(want, sizeof(want),
             "gpuprof_init: joined a running measurement: GPUPROF_OUTPUT=%s "
             "cannot apply any more (in use: %s)|",
             program_dir, launcher_dir);
    ck_assert_msg(strstr(warns, want), "%s", warns);
    ck_assert_msg(strstr(warns, "GPUPROF_TRACE=1 cannot apply any more (in "
                                "use: 0)|"),
                  "%s", warns);
    ck_assert_msg(strstr(warns, "GPUPROF_FLUSH_PERIOD_MS=250 cannot apply "
                                "any more (in use: 0)|"),
                  "%s", warns);
    one_region("program's own");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(count_in(launcher_dir, "*.gpuprof", NULL), 1);
    ck_assert_int_eq(count_in(program_dir, "*", NULL), 0);
}
END_TEST

/* start_paused applies: the program's regions count only after its
 * gpuprof_start, as they would had it been first. */
START_TEST(start_paused_applies)
{
    gpuprof_options l = launcher_opts(), p;
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    log_everything();
    p = program_opts();
    p.start_paused = 1;
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    ck_assert_int_eq(nwarn, 0);
    uint64_t entered = stat_of("regions.entered");
    one_region("paused");
    ck_assert_uint_eq(stat_of("regions.entered"), entered);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    one_region("measured");
    ck_assert_uint_eq(stat_of("regions.entered"), entered + 1);
}
END_TEST

/* Joining happens once; a launcher that did not ask for it gets the
 * program's init refused as ever. */
START_TEST(join_once_and_only_when_asked)
{
    gpuprof_options l = launcher_opts(), p = program_opts();
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_init(NULL), GPUPROF_E_EXISTS);
}
END_TEST

START_TEST(not_joinable_is_exists)
{
    gpuprof_options l = launcher_opts(), p = program_opts();
    l.flags = GPUPROF_OPT_IGNORE_ENV;
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_E_EXISTS);
}
END_TEST

/* Bad options fail as they always do, and leave the join for a good init. */
START_TEST(bad_options_fail_then_join)
{
    gpuprof_options l = launcher_opts(), p = program_opts();
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    p.size = 8;
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_E_VERSION);
    p = program_opts();
    p.trace_threads = 65;
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_E_INVALID);
    p = program_opts();
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    one_region("after the join");
}
END_TEST

/* The program's finalize ends the joined measurement: later calls are
 * GPUPROF_E_STATE, and the launcher's directory holds the final profile. */
START_TEST(program_finalizes)
{
    gpuprof_options l = launcher_opts(), p = program_opts();
    ck_assert_int_eq(gpuprof_init(&l), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_init(&p), GPUPROF_E_STATE);
    ck_assert_int_eq(count_in(launcher_dir, "*.gpuprof", NULL), 1);
}
END_TEST

static Suite *join_suite(void)
{
    Suite *s = suite_create("join");
    TCase *tc = tcase_create("join");
    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, same_settings_join_silently);
    tcase_add_test(tc, other_settings_are_named);
    tcase_add_test(tc, start_paused_applies);
    tcase_add_test(tc, join_once_and_only_when_asked);
    tcase_add_test(tc, not_joinable_is_exists);
    tcase_add_test(tc, bad_options_fail_then_join);
    tcase_add_test(tc, program_finalizes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return bb_run(join_suite());
}
