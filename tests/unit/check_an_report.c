/*
 * check_an_report.c - libgpuprof-analysis against profiles with known
 * values (built with tests/support/mkprofile): profile accessors, the
 * merged region tree of a directory (sums, thread counts, ordering, flags,
 * counters), path lookup, and errors that name the damaged file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char dir[512];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof(dir), "%s/an.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Process A (rank 0): main: app{1, 1000, 100} > solve{10, 900, 900}
 *                     worker: solve{5, 50, 40} > io{1, 10, 10} [open]
 * Process B (rank 1): main: app{1, 2000, 1000} > solve{20, 1000, 1000}
 *                     counters regions.unbalanced = 2 */
static void write_two(void)
{
    char path[700];
    tp_builder *a = tp_new("nodeA", 10, 0);
    tp_thread(a, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t app = tp_region(a, 0, "app", 1, 1000, 100);
    tp_region(a, app, "solve", 10, 900, 900);
    tp_thread(a, "worker", GPUPROF_IO_THREAD_EXITED);
    uint32_t s = tp_region(a, 0, "solve", 5, 50, 40);
    tp_region(a, s, "io", 1, 10, 10);
    tp_flags(a, 2, GPUPROF_IO_NODE_OPEN);
    tp_counter(a, "regions.unbalanced", 0);
    tp_times(a, 100, 100 + 5000, 1000000, 3, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/nodeA-r0-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(a, path, 3), 0);
    tp_free(a);
    tp_builder *b = tp_new("nodeB", 20, 1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    app = tp_region(b, 0, "app", 1, 2000, 1000);
    tp_region(b, app, "solve", 20, 1000, 1000);
    tp_counter(b, "regions.unbalanced", 2);
    tp_times(b, 7, 7 + 8000, 1002000, 1, 0);
    snprintf(path, sizeof(path), "%s/nodeB-r1-p20.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
}

START_TEST(profile_accessors)
{
    mkdir_tmp();
    write_two();
    char path[700];
    snprintf(path, sizeof(path), "%s/nodeA-r0-p10.gpuprof", dir);
    gpuprof_an_profile *p;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_profile_host(p), "nodeA");
    ck_assert_uint_eq(gpuprof_an_profile_pid(p), 10);
    ck_assert_int_eq(gpuprof_an_profile_rank(p), 0);
    ck_assert_uint_eq(gpuprof_an_profile_generation(p), 3);
    ck_assert_uint_eq(gpuprof_an_profile_flags(p), GPUPROF_AN_PROFILE_FINAL);
    ck_assert_uint_eq(gpuprof_an_profile_end_ns(p) - gpuprof_an_profile_start_ns(p), 5000);
    ck_assert_uint_eq(gpuprof_an_thread_count(p), 2);
    ck_assert_str_eq(gpuprof_an_thread_name(p, 1), "worker");
    ck_assert_uint_eq(gpuprof_an_thread_flags(p, 1), GPUPROF_AN_THREAD_EXITED);
    ck_assert_uint_eq(gpuprof_an_node_count(p, 0), 3);
    uint32_t incl;
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time.incl", &incl), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_metric_unit(p, incl), GPUPROF_AN_UNIT_NS);
    ck_assert_int_eq(gpuprof_an_metric_find(p, "nope", &incl), GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time.incl", &incl), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_node_name(p, 0, 2), "solve");
    ck_assert_uint_eq(gpuprof_an_node_parent(p, 0, 2), 1);
    ck_assert_int_eq(gpuprof_an_node_kind_of(p, 0, 2), GPUPROF_AN_NODE_REGION);
    ck_assert_str_eq(gpuprof_an_node_name(p, 0, 0), "root");
    ck_assert_uint_eq(gpuprof_an_node_parent(p, 0, 0), UINT32_MAX);
    ck_assert_uint_eq(gpuprof_an_node_value(p, 0, 2, incl), 900);
    ck_assert_uint_eq(gpuprof_an_node_value(p, 1, 2, incl), 10);
    ck_assert_uint_eq(gpuprof_an_node_flags(p, 1, 2), GPUPROF_AN_NODE_OPEN);
    /* Out of range is harmless. */
    ck_assert_ptr_null(gpuprof_an_node_name(p, 0, 99));
    ck_assert_ptr_null(gpuprof_an_thread_name(p, 9));
    ck_assert_uint_eq(gpuprof_an_node_value(p, 5, 0, incl), 0);
    ck_assert_uint_eq(gpuprof_an_counter_count(p), 1);
    ck_assert_str_eq(gpuprof_an_counter_name(p, 0), "regions.unbalanced");
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_profile_print(p, null, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_profile_print(p, null, 1), GPUPROF_E_INVALID);
    fclose(null);
    gpuprof_an_profile_close(p);
    gpuprof_an_profile_close(NULL);
}
END_TEST

static uint32_t node(const gpuprof_an_report *r, const char *path)
{
    uint32_t n = UINT32_MAX;
    ck_assert_msg(gpuprof_an_report_find(r, path, &n) == GPUPROF_OK, "no %s", path);
    return n;
}

START_TEST(report_merges_exactly)
{
    mkdir_tmp();
    write_two();
    gpuprof_an_report *r;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_profile_count(r), 2);
    ck_assert_uint_eq(gpuprof_an_report_thread_count(r), 3);
    /* realtime starts 1000000 and 1002000; ends +5000 and +8000 */
    ck_assert_uint_eq(gpuprof_an_report_wall_ns(r), 1002000 + 8000 - 1000000);
    ck_assert_uint_eq(gpuprof_an_report_counter(r, "regions.unbalanced"), 2);
    ck_assert_uint_eq(gpuprof_an_report_counter(r, "no.such"), 0);
    ck_assert_uint_eq(gpuprof_an_report_node_count(r), 5); /* root app app/solve solve solve/io */
    uint32_t app = node(r, "app"), as = node(r, "app/solve"), s = node(r, "solve"),
             io = node(r, "solve/io");
    ck_assert_uint_eq(gpuprof_an_report_node_visits(r, app), 2);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, app), 3000);
    ck_assert_uint_eq(gpuprof_an_report_node_excl_ns(r, app), 1100);
    ck_assert_uint_eq(gpuprof_an_report_node_threads(r, app), 2);
    ck_assert_uint_eq(gpuprof_an_report_node_visits(r, as), 30);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, as), 1900);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_max_ns(r, as), 1000);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_max_ns(r, app), 2000);
    ck_assert_uint_eq(gpuprof_an_report_node_visits(r, s), 5);
    ck_assert_uint_eq(gpuprof_an_report_node_threads(r, s), 1);
    ck_assert_uint_eq(gpuprof_an_report_node_flags(r, io), GPUPROF_AN_NODE_OPEN);
    ck_assert_uint_eq(gpuprof_an_report_node_flags(r, app), 0);
    /* Depth-first, larger inclusive time first: root, app, app/solve,
     * solve, solve/io. */
    ck_assert_uint_eq(app, 1);
    ck_assert_uint_eq(as, 2);
    ck_assert_uint_eq(s, 3);
    ck_assert_uint_eq(io, 4);
    ck_assert_uint_eq(gpuprof_an_report_node_parent(r, io), s);
    ck_assert_uint_eq(gpuprof_an_report_node_depth(r, io), 2);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, 0), 3050);
    uint32_t n;
    ck_assert_int_eq(gpuprof_an_report_find(r, "app/io", &n), GPUPROF_E_NOTFOUND);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_report_print(r, mem, 0), GPUPROF_OK);
    fclose(mem);
    ck_assert_ptr_nonnull(strstr(text, "2 profiles, 3 threads"));
    ck_assert_ptr_nonnull(strstr(text, "warning: regions.unbalanced = 2"));
    ck_assert_ptr_nonnull(strstr(text, "  io [open]\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "          30     1.900 us     1.900 us   62.3%        2   1.05    solve\n"));
    free(text);
    gpuprof_an_report_close(r);
}
END_TEST

START_TEST(report_errors_name_the_file)
{
    mkdir_tmp();
    gpuprof_an_report *r = NULL;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "no profiles"));
    write_two();
    char path[700], cmd[3000];
    snprintf(path, sizeof(path), "%s/nodeB-r1-p20.gpuprof", dir);
    snprintf(cmd, sizeof(cmd), "truncate -s 100 '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "nodeB-r1-p20.gpuprof: truncated"));
    gpuprof_an_profile *p = NULL;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(p);
    /* Temporaries (dot files) and other names are not profiles. */
    snprintf(cmd, sizeof(cmd), "rm '%s' && touch '%s/.x.gpuprof.tmp.1.0' '%s/notes.txt'", path, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_profile_count(r), 1);
    gpuprof_an_report_close(r);
    ck_assert_int_eq(gpuprof_an_report_open("/nonexistent/dir", &r), GPUPROF_E_IO);
    ck_assert_int_eq(gpuprof_an_report_open(NULL, &r), GPUPROF_E_INVALID);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"profile", profile_accessors, 60},
        {"report", report_merges_exactly, 60},
        {"errors", report_errors_name_the_file, 60},
    };
    return RUN_SUITE("analysis", cases);
}
