/*
 * check_an_report.c - libgpuprof-analysis against profiles with known
 * values (built with tests/support/mkprofile): profile accessors, the
 * merged region tree of a directory (sums, thread and process counts,
 * ordering, flags, counters, the exact printed table), path lookup, errors
 * that name the damaged file, large trees and concurrent use.
 *
 * `check_an_report --write-fixtures DIR` writes the two-process run of
 * write_run() into DIR and exits: tests/scripts/gpuprof-cli.sh runs the
 * gpuprof command on it and compares with the same expected table.
 */
#include <check.h>
#include <pthread.h>
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
    snprintf(dir, sizeof(dir), "%s/an.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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
    ck_assert_uint_eq(
        gpuprof_an_profile_end_ns(p) - gpuprof_an_profile_start_ns(p), 5000);
    ck_assert_uint_eq(gpuprof_an_thread_count(p), 2);
    ck_assert_str_eq(gpuprof_an_thread_name(p, 1), "worker");
    ck_assert_uint_eq(gpuprof_an_thread_flags(p, 1), GPUPROF_AN_THREAD_EXITED);
    ck_assert_uint_eq(gpuprof_an_node_count(p, 0), 3);
    uint32_t incl;
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time.incl", &incl),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_metric_unit(p, incl), GPUPROF_AN_UNIT_NS);
    ck_assert_int_eq(gpuprof_an_metric_find(p, "nope", &incl),
                     GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time.incl", &incl),
                     GPUPROF_OK);
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
    ck_assert_msg(gpuprof_an_report_find(r, path, &n) == GPUPROF_OK, "no %s",
                  path);
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
    ck_assert_uint_eq(gpuprof_an_report_node_count(r),
                      5); /* root app app/solve solve solve/io */
    uint32_t app = node(r, "app"), as = node(r, "app/solve"),
             s = node(r, "solve"), io = node(r, "solve/io");
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
    ck_assert_uint_eq(gpuprof_an_report_node_flags(r, io),
                      GPUPROF_AN_NODE_OPEN);
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
    ck_assert_int_eq(gpuprof_an_report_find(r, "app/io", &n),
                     GPUPROF_E_NOTFOUND);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_report_print(r, mem, 0), GPUPROF_OK);
    fclose(mem);
    ck_assert_ptr_nonnull(strstr(text, "2 profiles, 3 threads"));
    ck_assert_ptr_nonnull(strstr(
        text,
        "warning: region ends that did not match the innermost open region: 2 "
        "(regions.unbalanced)\n"));
    ck_assert_ptr_nonnull(strstr(text, "  io [open]\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "          30     1.900 us     1.900 us   62.3%      2    "
                     "    2   1.05    solve\n"));
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
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_last_error(), "nodeB-r1-p20.gpuprof: truncated"));
    gpuprof_an_profile *p = NULL;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), path));
    /* Temporaries (dot files) and other names are not profiles. */
    snprintf(cmd, sizeof(cmd),
             "rm '%s' && touch '%s/.x.gpuprof.tmp.1.0' '%s/notes.txt'", path,
             dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_profile_count(r), 1);
    gpuprof_an_report_close(r);
    ck_assert_int_eq(gpuprof_an_report_open("/nonexistent/dir", &r),
                     GPUPROF_E_IO);
    ck_assert_int_eq(gpuprof_an_report_open(NULL, &r), GPUPROF_E_INVALID);
}
END_TEST

/* Two processes on two hosts, three threads each (times in ms):
 *   alpha pid 100: main      init{1,2,2} solve{1,6,1} > compute{10,4,4}
 * exchange{10,1,1} worker-1  solve{1,5,0} > compute{10,5,5} worker-2
 * solve{1,4,0.5} > compute{10,3,3} exchange{10,0.5,0.5} records.dropped = 5;
 * starts at 1 s (realtime), runs 10 ms beta pid 200:  main      init{1,3,3}
 * solve{1,8,0} > compute{10,6,6} exchange{10,2,2} worker-1  solve{1,7,1} >
 * compute{10,6,6};  output{1,1,1} [open] worker-2  solve{1,2,0} >
 * exchange{20,2,2} [unbalanced] regions.unbalanced = 1,
 * regions.open_at_finalize = 1; starts at 1.002 s, runs 12 ms: the wall time is
 * 14 ms; its metric table is in the reverse order of alpha's */
#define MS 1000000ull
static int write_alpha(const char *to)
{
    char path[700];
    tp_builder *b = tp_new("alpha", 100, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, "init", 1, 2 * MS, 2 * MS);
    uint32_t s = tp_region(b, 0, "solve", 1, 6 * MS, 1 * MS);
    tp_region(b, s, "compute", 10, 4 * MS, 4 * MS);
    tp_region(b, s, "exchange", 10, 1 * MS, 1 * MS);
    tp_thread(b, "worker-1", 0);
    s = tp_region(b, 0, "solve", 1, 5 * MS, 0);
    tp_region(b, s, "compute", 10, 5 * MS, 5 * MS);
    tp_thread(b, "worker-2", 0);
    s = tp_region(b, 0, "solve", 1, 4 * MS, MS / 2);
    tp_region(b, s, "compute", 10, 3 * MS, 3 * MS);
    tp_region(b, s, "exchange", 10, MS / 2, MS / 2);
    tp_counter(b, "records.dropped", 5);
    tp_counter(b, "regions.unbalanced", 0);
    tp_times(b, 50, 50 + 10 * MS, 1000 * MS, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/alpha-r0-p100.gpuprof", to);
    int rc = tp_write(b, path, 3);
    tp_free(b);
    return rc;
}

static int write_beta(const char *to)
{
    char path[700];
    tp_builder *b = tp_new("beta", 200, 1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, "init", 1, 3 * MS, 3 * MS);
    uint32_t s = tp_region(b, 0, "solve", 1, 8 * MS, 0);
    tp_region(b, s, "compute", 10, 6 * MS, 6 * MS);
    tp_region(b, s, "exchange", 10, 2 * MS, 2 * MS);
    tp_thread(b, "worker-1", 0);
    s = tp_region(b, 0, "solve", 1, 7 * MS, 1 * MS);
    tp_region(b, s, "compute", 10, 6 * MS, 6 * MS);
    uint32_t o = tp_region(b, 0, "output", 1, 1 * MS, 1 * MS);
    tp_flags(b, o, GPUPROF_IO_NODE_OPEN);
    tp_thread(b, "worker-2", 0);
    s = tp_region(b, 0, "solve", 1, 2 * MS, 0);
    uint32_t x = tp_region(b, s, "exchange", 20, 2 * MS, 2 * MS);
    tp_flags(b, x, GPUPROF_IO_NODE_UNBALANCED);
    tp_counter(b, "regions.unbalanced", 1);
    tp_counter(b, "regions.open_at_finalize", 1);
    tp_times(b, 9, 9 + 12 * MS, 1002 * MS, 4, GPUPROF_IO_PROFILE_FINAL);
    tp_reverse_metrics(b); /* the report finds metrics by name */
    snprintf(path, sizeof(path), "%s/beta-r1-p200.gpuprof", to);
    int rc = tp_write(b, path, 0);
    tp_free(b);
    return rc;
}

static int write_run(const char *to)
{
    return write_alpha(to) || write_beta(to);
}

/* The table of write_run(), worked out by hand: solve 6+5+4+8+7+2 = 32 ms
 * over 6 threads (largest 8: imbalance 8 / (32/6) = 1.50); compute
 * 4+5+3+6+6 = 24 on 5 threads (6 / 4.8 = 1.25); exchange 1+0.5+2+2 = 5.5
 * on 4 (2 / 1.375 = 1.45); init 2+3 = 5 (3 / 2.5 = 1.20); the total is
 * 32+5+1 = 38 ms. Shared with tests/scripts/gpuprof-cli.sh. */
static const char expected_run[] =
    "2 profiles, 6 threads, 2 processes on 2 hosts, wall time 14.000 ms\n"
    "warning: region ends that did not match the innermost open region: 1 "
    "(regions.unbalanced)\n"
    "warning: regions still open at finalize: 1 (regions.open_at_finalize)\n"
    "warning: measurement records dropped: 5 (records.dropped)\n"
    "Imbal: the largest inclusive time of one thread over the mean of the "
    "threads that entered "
    "the region (1.00 = balanced)\n"
    "\n"
    "      Visits    Incl time    Excl time   Incl%  Procs  Threads  Imbal  "
    "Region\n"
    "           6    32.000 ms     2.500 ms   84.2%      2        6   1.50  "
    "solve\n"
    "          50    24.000 ms    24.000 ms   63.2%      2        5   1.25    "
    "compute\n"
    "          50     5.500 ms     5.500 ms   14.5%      2        4   1.45    "
    "exchange [unbalanced]\n"
    "           2     5.000 ms     5.000 ms   13.2%      2        2   1.20  "
    "init\n"
    "           1     1.000 ms     1.000 ms    2.6%      1        1   1.00  "
    "output [open]\n";

static char *print_report(const gpuprof_an_report *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(mem);
    ck_assert_int_eq(gpuprof_an_report_print(r, mem, 0), GPUPROF_OK);
    fclose(mem);
    return text;
}

typedef struct row {
    const char *path;
    uint64_t visits, incl, excl, incl_max;
    uint32_t threads, processes, flags;
} row;

START_TEST(report_two_processes_three_threads)
{
    mkdir_tmp();
    ck_assert_int_eq(write_run(dir), 0);
    gpuprof_an_report *r;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_profile_count(r), 2);
    ck_assert_uint_eq(gpuprof_an_report_process_count(r), 2);
    ck_assert_uint_eq(gpuprof_an_report_host_count(r), 2);
    ck_assert_uint_eq(gpuprof_an_report_thread_count(r), 6);
    ck_assert_uint_eq(gpuprof_an_report_wall_ns(r), 14 * MS);
    ck_assert_uint_eq(gpuprof_an_report_counter(r, "records.dropped"), 5);
    ck_assert_uint_eq(gpuprof_an_report_node_count(r), 6);
    static const row rows[] = {
        {"solve", 6, 32 * MS, 5 * MS / 2, 8 * MS, 6, 2, 0},
        {"solve/compute", 50, 24 * MS, 24 * MS, 6 * MS, 5, 2, 0},
        {"solve/exchange", 50, 11 * MS / 2, 11 * MS / 2, 2 * MS, 4, 2,
         GPUPROF_AN_NODE_UNBALANCED},
        {"init", 2, 5 * MS, 5 * MS, 3 * MS, 2, 2, 0},
        {"output", 1, MS, MS, MS, 1, 1, GPUPROF_AN_NODE_OPEN},
    };
    for (uint32_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint32_t n = node(r, rows[i].path);
        ck_assert_uint_eq(n, i + 1); /* depth-first, largest first */
        ck_assert_uint_eq(gpuprof_an_report_node_visits(r, n), rows[i].visits);
        ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, n), rows[i].incl);
        ck_assert_uint_eq(gpuprof_an_report_node_excl_ns(r, n), rows[i].excl);
        ck_assert_uint_eq(gpuprof_an_report_node_incl_max_ns(r, n),
                          rows[i].incl_max);
        ck_assert_uint_eq(gpuprof_an_report_node_threads(r, n),
                          rows[i].threads);
        ck_assert_uint_eq(gpuprof_an_report_node_processes(r, n),
                          rows[i].processes);
        ck_assert_uint_eq(gpuprof_an_report_node_flags(r, n), rows[i].flags);
    }
    ck_assert_str_eq(gpuprof_an_report_node_name(r, 0), "<program>");
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, 0), 38 * MS);
    ck_assert_uint_eq(gpuprof_an_report_node_parent(r, 0), UINT32_MAX);
    ck_assert_uint_eq(gpuprof_an_report_node_parent(r, 3), 1);
    ck_assert_ptr_null(gpuprof_an_report_node_name(r, 6));
    char *text = print_report(r);
    ck_assert_str_eq(text, expected_run);
    free(text);
    gpuprof_an_report_close(r);
}
END_TEST

START_TEST(report_flipped_byte_names_the_file)
{
    mkdir_tmp();
    ck_assert_int_eq(write_run(dir), 0);
    char path[700];
    snprintf(path, sizeof(path), "%s/alpha-r0-p100.gpuprof", dir);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    for (long at = 0; at < size;
         at += size / 7 + 1) { /* header, table, sections */
        ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
        int c = fgetc(f);
        ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
        fputc(c ^ 0x10, f);
        fflush(f);
        gpuprof_an_report *r = NULL;
        ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_E_CORRUPT);
        ck_assert_ptr_null(r);
        ck_assert_msg(strstr(gpuprof_an_last_error(), path) != NULL,
                      "byte %ld: %s", at, gpuprof_an_last_error());
        ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
        fputc(c, f);
        fflush(f);
    }
    fclose(f);
    gpuprof_an_report *r = NULL;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r),
                     GPUPROF_OK); /* restored */
    gpuprof_an_report_close(r);
}
END_TEST

/* Regions beneath call-path nodes count towards the nearest region; a
 * thread that reaches one path twice (through two call paths) is one
 * thread, and its largest share is the sum of both. */
START_TEST(report_folds_call_paths)
{
    mkdir_tmp();
    tp_builder *b = tp_new("h", 1, -1);
    uint32_t mod = tp_module(b, "/usr/lib/libx.so");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t app = tp_region(b, 0, "app", 1, 100, 10);
    uint32_t f1 = tp_frame(b, app, mod, 0x10), f2 = tp_frame(b, app, mod, 0x20);
    tp_region(b, f1, "kern", 2, 30, 30);
    tp_region(b, f2, "kern", 3, 60, 60);
    tp_kernel(b, f2, "saxpy", UINT32_MAX); /* no GPU binary */
    tp_thread(b, "other", 0);
    tp_region(b, tp_frame(b, 0, mod, 0x30), "app", 1, 40, 40);
    char path[700];
    snprintf(path, sizeof(path), "%s/h.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    gpuprof_an_report *r;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_node_count(r),
                      3); /* root, app, app/kern */
    uint32_t a = node(r, "app"), k = node(r, "app/kern");
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, a), 140);
    ck_assert_uint_eq(gpuprof_an_report_node_threads(r, a), 2);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_max_ns(r, a), 100);
    ck_assert_uint_eq(gpuprof_an_report_node_visits(r, k), 5);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_ns(r, k), 90);
    ck_assert_uint_eq(gpuprof_an_report_node_threads(r, k), 1);
    ck_assert_uint_eq(gpuprof_an_report_node_incl_max_ns(r, k), 90);
    ck_assert_uint_eq(gpuprof_an_report_process_count(r), 1);
    ck_assert_uint_eq(gpuprof_an_report_host_count(r), 1);
    gpuprof_an_report_close(r);
}
END_TEST

/* The GPU part of a report on a measurement directory shows C++ kernel
 * names demangled, as databases do. */
START_TEST(report_gpu_demangles)
{
    mkdir_tmp();
    tp_builder *b = tp_new("h", 1, -1);
    uint32_t cnt = tp_metric(b, "gpu.count", GPUPROF_IO_UNIT_COUNT,
                             GPUPROF_IO_KIND_GPU);
    uint32_t tm = tp_metric(b, "gpu.time", GPUPROF_IO_UNIT_NS,
                            GPUPROF_IO_KIND_GPU);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t app = tp_region(b, 0, "app", 1, 100, 100);
    uint32_t op = tp_gpu_op(b, app, 1);
    uint32_t k = tp_kernel(b, op, "_Z5saxpyifPfS_", UINT32_MAX);
    tp_node_value(b, k, cnt, 4);
    tp_node_value(b, k, tm, 2000);
    char path[700];
    snprintf(path, sizeof(path), "%s/h.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_gpu_print(dir, f, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_msg(strstr(text, "kernel saxpy(int, float, float*, float*)\n"),
                  "%s", text);
    ck_assert_ptr_null(strstr(text, "_Z5saxpy"));
    free(text);
}
END_TEST

/* The GPU part of `gpuprof report DIR`, as a person reads it: one thread
 * whose path starts in a C library without symbols (the thread's start:
 * "<thread root>", the frame below it hidden), a call site with 1000
 * launches of 1 us and one with a single 100 ns launch (0.01 %: left out
 * at the default 1 %, and said so), a frame whose name is 300 bytes long
 * (cut in the middle, its module kept), and GPU_IDLE_CAUSE values (the
 * column's full name). With threshold 0 and GPUPROF_AN_RUNTIME_FRAMES,
 * everything. */
START_TEST(report_gpu_readable)
{
    mkdir_tmp();
    tp_builder *b = tp_new("h", 1, -1);
    tp_clear_metrics(b);
    uint32_t cnt = tp_metric(b, "gpu.count", GPUPROF_IO_UNIT_COUNT,
                             GPUPROF_IO_KIND_GPU);
    uint32_t tm = tp_metric(b, "gpu.time", GPUPROF_IO_UNIT_NS,
                            GPUPROF_IO_KIND_GPU);
    uint32_t gi = tp_metric(b, "blame.gpu_idle_cause", GPUPROF_IO_UNIT_NS,
                            GPUPROF_IO_KIND_GPU);
    char longname[400];
    snprintf(longname, sizeof(longname), "/nonexistent/%0300d.so", 7);
    uint32_t libc = tp_module(b, "/nonexistent/libc.so.6"),
             app = tp_module(b, "/nonexistent/app"),
             lng = tp_module(b, longname);
    tp_thread(b, "w", 0);
    uint32_t c1 = tp_frame(b, 0, libc, 0x100);
    uint32_t c2 = tp_frame(b, c1, libc, 0x200);
    uint32_t f = tp_frame(b, c2, app, 0x10);
    tp_node_value(b, f, gi, 5000);
    uint32_t k = tp_kernel(b, tp_gpu_op(b, f, 1), "big", UINT32_MAX);
    tp_node_value(b, k, cnt, 1000);
    tp_node_value(b, k, tm, 1000000);
    f = tp_frame(b, tp_frame(b, c2, lng, 0x30), app, 0x20);
    k = tp_kernel(b, tp_gpu_op(b, f, 1), "small", UINT32_MAX);
    tp_node_value(b, k, cnt, 1);
    tp_node_value(b, k, tm, 100);
    char path[700];
    snprintf(path, sizeof(path), "%s/h.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    char *text = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_gpu_print(dir, o, 0), GPUPROF_OK);
    fclose(o);
    static const char want[] =
        "\nGPU operations by calling context: 1001 operations, 1.000 ms of "
        "device time\n\n"
        "     Count     GPU time        Bytes   Time% GPU_IDLE_CAUSE  Context\n"
        "      1001     1.000 ms               100.0%       5.000 us  "
        "<thread root>\n"
        "      1000     1.000 ms               100.0%       5.000 us    "
        "app+0x10\n"
        "      1000     1.000 ms               100.0%                     "
        "<kernel launch>\n"
        "      1000     1.000 ms               100.0%                       "
        "kernel big\n"
        "(4 contexts under 1% of the run in every column left out: "
        "--threshold 0 shows them)\n"
        "\nCPU-GPU blame shifting\n"
        "  CPU_IDLE                0 ns  threads blocked waiting for the "
        "device\n"
        "  CPU_IDLE_CAUSE          0 ns  that wait, blamed on the device work "
        "running meanwhile\n"
        "  GPU_IDLE_CAUSE      5.000 us  CPU time while no kernel ran on any "
        "device\n"
        "Regions whose CPU work kept the device idle (GPU_IDLE_CAUSE; call "
        "paths in the tree above):\n"
        "      5.000 us  app+0x10 <- <thread root>\n";
    ck_assert_str_eq(text, want);
    free(text);
    text = NULL;
    o = open_memstream(&text, &len);
    ck_assert_int_eq(
        gpuprof_an_gpu_print_ex(dir, o, 0, GPUPROF_AN_RUNTIME_FRAMES),
        GPUPROF_OK);
    fclose(o);
    ck_assert_ptr_nonnull(strstr(text, "  libc.so.6+0x100\n"));
    ck_assert_ptr_nonnull(strstr(text, "    libc.so.6+0x200\n"));
    ck_assert_ptr_nonnull(strstr(text, "kernel small\n"));
    ck_assert_ptr_null(strstr(text, "left out"));
    /* The long name: head, "...", the tail with the module; no longer
     * line than 200 bytes. */
    ck_assert_ptr_nonnull(strstr(text, "00007.so+0x30\n"));
    ck_assert_ptr_nonnull(strstr(text, "..."));
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
        ck_assert_msg(strlen(l) <= 200, "%zu: %s", strlen(l), l);
    free(text);
    o = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_gpu_print_ex(dir, o, 1.5, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_gpu_print_ex(dir, o, 0, 0x1),
                     GPUPROF_E_INVALID);
    fclose(o);
}
END_TEST

/* More merged regions than the first hash table holds, with equal
 * inclusive times so the order falls back on the names. */
START_TEST(report_many_regions)
{
    mkdir_tmp();
    enum { N = 3000 };
    tp_builder *b = tp_new("h", 1, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t top = tp_region(b, 0, "top", 1, 10 * N, 0);
    for (uint32_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof(name), "r%05u", N - 1 - i);
        tp_region(b, i % 2 ? top : 0, name, 1, 10, 10);
    }
    char path[700];
    snprintf(path, sizeof(path), "%s/h.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    gpuprof_an_report *r;
    ck_assert_int_eq(gpuprof_an_report_open(dir, &r), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_node_count(r), N + 2);
    ck_assert_str_eq(gpuprof_an_report_node_name(r, 1), "top");
    ck_assert_str_eq(gpuprof_an_report_node_name(r, 2),
                     "r00000"); /* i = N-1: odd, under top */
    ck_assert_uint_eq(gpuprof_an_report_node_depth(r, 2), 2);
    uint32_t n;
    ck_assert_int_eq(gpuprof_an_report_find(r, "r00001", &n), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_report_node_parent(r, n), 0);
    ck_assert_int_eq(gpuprof_an_report_find(r, "top/r00002", &n), GPUPROF_OK);
    for (uint32_t i = 3; i < N / 2 + 2; i++) /* top's children, by name */
        ck_assert_int_lt(strcmp(gpuprof_an_report_node_name(r, i - 1),
                                gpuprof_an_report_node_name(r, i)),
                         0);
    gpuprof_an_report_close(r);
}
END_TEST

static void *open_and_check(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        gpuprof_an_report *r;
        if (gpuprof_an_report_open(dir, &r) != GPUPROF_OK)
            return "open failed";
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        gpuprof_status st = gpuprof_an_report_print(r, mem, 0);
        fclose(mem);
        int same = st == GPUPROF_OK && !strcmp(text, expected_run);
        free(text);
        gpuprof_an_report_close(r);
        if (!same)
            return "different report";
    }
    return NULL;
}

/* Reports may be opened and printed by several threads at once (TSan). */
START_TEST(report_concurrent_opens)
{
    mkdir_tmp();
    ck_assert_int_eq(write_run(dir), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, open_and_check, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *res;
        ck_assert_int_eq(pthread_join(t[i], &res), 0);
        ck_assert_msg(res == NULL, "thread %d: %s", i, (const char *)res);
    }
}
END_TEST

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-fixtures"))
        return write_run(argv[2]) ? EXIT_FAILURE : EXIT_SUCCESS;
    if (argc == 2 && !strcmp(argv[1], "--expected-report"))
        return fputs(expected_run, stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
    const test_case cases[] = {
        {"profile", profile_accessors, 60},
        {"report", report_merges_exactly, 60},
        {"errors", report_errors_name_the_file, 60},
        {"two_by_three", report_two_processes_three_threads, 60},
        {"flipped_byte", report_flipped_byte_names_the_file, 60},
        {"call_paths", report_folds_call_paths, 60},
        {"gpu_demangles", report_gpu_demangles, 60},
        {"gpu_readable", report_gpu_readable, 60},
        {"many_regions", report_many_regions, 60},
        {"concurrent", report_concurrent_opens, 60},
    };
    return RUN_SUITE("analysis", cases);
}
