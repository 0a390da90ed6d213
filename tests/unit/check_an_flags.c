/*
 * check_an_flags.c - the views and exports of metrics their backend
 * flagged (gpuprof_be_metric_register; doc/ANALYSIS.md "Metric flags"),
 * exact lines on a database worked out by hand.
 *
 * Two profiles (processes 1 and 2, one thread each); every kernel under
 * region "main", "<kernel launch>". Metrics: gpu.count (launches), x.regs
 * an odd sum counted by gpu.count (registers per thread summed over
 * launches), x.peak a sum without meaningful inclusive values, x.occ both
 * (an odd sum whose inclusive values mean nothing):
 *
 *              gpu.count  x.regs  x.peak  x.occ
 *   p0  k1         2        64       7      10
 *   p0  k2         1        40       5       4
 *   p1  k1         2        48       9       6
 *
 * Over the profiles: k1 count 4, x.regs 112 (mean 28), x.peak 16, x.occ
 * 16 (mean 4); k2 count 1, x.regs 40 (mean 40), x.peak 5, x.occ 4 (mean
 * 4); "<kernel launch>", main and the root: count 5, x.regs 152 (mean
 * 30.4), x.peak and x.occ no inclusive value. Per profile at k1: x.regs p0
 * 32, p1 24 (mean of the means 28).
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuprof_analysis.h"
#include "io/io.h"
#include "support/callpath.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char tmp[512];

static tp_builder *profile(uint32_t pid, const uint64_t (*k)[4], int nk)
{
    tp_builder *b = tp_new("flags", pid, 0);
    tp_clear_metrics(b);
    uint32_t m[4];
    m[0] = tp_metric(b, "gpu.count", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    m[1] = tp_metric(b, "x.regs", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    m[2] = tp_metric(b, "x.peak", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    m[3] = tp_metric(b, "x.occ", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    tp_metric_ext(b, m[1], GPUPROF_IO_SUM, GPUPROF_IO_METRIC_ODD, "gpu.count");
    tp_metric_ext(b, m[2], GPUPROF_IO_SUM, GPUPROF_IO_METRIC_NO_INCLUSIVE, NULL);
    tp_metric_ext(b, m[3], GPUPROF_IO_SUM,
                  GPUPROF_IO_METRIC_ODD | GPUPROF_IO_METRIC_NO_INCLUSIVE,
                  "gpu.count");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t main_r = tp_region(b, 0, "main", 0, 0, 0);
    for (int i = 0; i < nk; i++) {
        uint32_t launch = tp_gpu_op(b, main_r, GPUPROF_OP_KERNEL);
        uint32_t kn = tp_kernel(b, launch, i ? "k2" : "k1", UINT32_MAX);
        for (int j = 0; j < 4; j++)
            tp_node_value(b, kn, m[j], k[i][j]);
    }
    return b;
}

static gpuprof_an_db *flags_db(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anflags.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    static const uint64_t p0[2][4] = {{2, 64, 7, 10}, {1, 40, 5, 4}};
    static const uint64_t p1[1][4] = {{2, 48, 9, 6}};
    char in[600], out[600], path[700];
    snprintf(in, sizeof(in), "%s/run", tmp);
    snprintf(out, sizeof(out), "%s/db", tmp);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    tp_builder *b[2] = {profile(1, p0, 2), profile(2, p1, 1)};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/p%d.gpuprof", in, i);
        ck_assert_int_eq(tp_write(b[i], path, 0), 0);
        tp_free(b[i]);
    }
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_msg(gpuprof_an_analysis_run(a) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(out, &db), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 4);
    return db;
}

static void rm_tmp(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}

/* What `call` (writing to `out`) writes, after it returned GPUPROF_OK;
 * the caller frees it. */
static char *mem_text;
static size_t mem_len;
#define TEXT_OF(call)                                                          \
    ({                                                                         \
        FILE *out = open_memstream(&mem_text, &mem_len);                       \
        gpuprof_status st_ = (call);                                           \
        fclose(out);                                                           \
        ck_assert_msg(st_ == GPUPROF_OK, "%s", gpuprof_an_last_error());      \
        mem_text;                                                              \
    })

static void same_text(char *got, const char *want)
{
    ck_assert_msg(!strcmp(got, want), "got:\n%s\nwant:\n%s", got, want);
    free(got);
}

static uint32_t context_named(const gpuprof_an_db *db, const char *name)
{
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (!strcmp(gpuprof_an_db_context_name(db, c), name))
            return c;
    ck_abort_msg("no context %s", name);
    return 0;
}

START_TEST(views)
{
    gpuprof_an_db *db = flags_db();
    const char *m3[] = {"x.regs", "x.peak", "gpu.count"};
    /* Top-down by x.regs: means, sorted by the inclusive mean (k2's 40
     * before k1's 28); x.peak's inclusive '-'; no share for either. */
    same_text(
        TEXT_OF(gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_TOPDOWN, m3,
                                         3, 0, 0, 0)),
        "top-down view over 2 profiles, by inclusive x.regs; the whole: "
        "x.regs 30.4 (mean per gpu.count), x.peak - (exclusive values "
        "only), gpu.count 5; columns per metric: inclusive, share, "
        "exclusive; under 0.00% left out\n"
        "                               x.regs"
        "                                x.peak"
        "                             gpu.count\n"
        "     inclusive              exclusive "
        "     inclusive              exclusive "
        "     inclusive   share      exclusive  context\n"
        "          30.4                      0 "
        "             -                      0 "
        "             5 100.00%              0  main\n"
        "          30.4                      0 "
        "             -                      0 "
        "             5 100.00%              0    <kernel launch>\n"
        "            40                     40 "
        "             -                      5 "
        "             1  20.00%              1      kernel k2\n"
        "            28                     28 "
        "             -                     16 "
        "             4  80.00%              4      kernel k1\n");
    /* By x.peak (no inclusive values): sorted by exclusive values, k1's
     * 16 before k2's 5, without being asked to. */
    const char *m1[] = {"x.peak"};
    same_text(
        TEXT_OF(gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_TOPDOWN, m1,
                                         1, 0.5, 0, 0)),
        "top-down view over 2 profiles, by exclusive x.peak; the whole: "
        "x.peak - (exclusive values only); columns per metric: inclusive, "
        "share, exclusive; no threshold (x.peak has no whole)\n"
        "                               x.peak\n"
        "     inclusive              exclusive  context\n"
        "             -                      0  main\n"
        "             -                      0    <kernel launch>\n"
        "             -                     16      kernel k1\n"
        "             -                      5      kernel k2\n");
    /* Flat, both flags: x.occ's exclusive means only. */
    const char *mo[] = {"x.occ"};
    same_text(
        TEXT_OF(gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_FLAT, mo, 1,
                                         0, 0, 0)),
        "flat view over 2 profiles, by exclusive x.occ; the whole: x.occ - "
        "(mean per gpu.count) (exclusive values only); columns per metric: "
        "inclusive, share, exclusive; under 0.00% left out\n"
        "                                x.occ\n"
        "     inclusive              exclusive  procedure\n"
        "             -                      4  kernel k1\n"
        "             -                      4  kernel k2\n"
        "             -                      0  main\n"
        "             -                      0  <kernel launch>\n");
    gpuprof_an_db_close(db);
    rm_tmp();
}
END_TEST

START_TEST(thread_centric_and_folded)
{
    gpuprof_an_db *db = flags_db();
    uint32_t k1 = context_named(db, "kernel k1");
    char *t = TEXT_OF(gpuprof_an_db_print_profiles(db, out, k1, "x.regs", 0));
    ck_assert_ptr_nonnull(strstr(
        t, "x.regs per profile (inclusive, exclusive):\n"
           "(means per gpu.count)\n"));
    ck_assert_ptr_nonnull(strstr(t, "             32             32\n"));
    ck_assert_ptr_nonnull(strstr(t, "             24             24\n"));
    ck_assert_ptr_nonnull(strstr(
        t, "\ninclusive over the 2 of 2 profiles with a value: mean per "
           "gpu.count 28\n"));
    free(t);
    t = TEXT_OF(gpuprof_an_db_print_profiles(db, out, k1, "x.peak", 0));
    ck_assert_ptr_nonnull(strstr(
        t, "x.peak per profile (inclusive, exclusive), exclusive values "
           "only:\n"));
    ck_assert_ptr_nonnull(strstr(t, "              -              7\n"));
    ck_assert_ptr_nonnull(strstr(t, "              -              9\n"));
    ck_assert_ptr_nonnull(strstr(
        t, "\nexclusive over the 2 of 2 profiles with a value: sum 16 min 7 "
           "mean 8 max 9 std 1 cov 0.125\n"));
    free(t);
    /* No profile has an exclusive x.peak at the launch: none listed. */
    t = TEXT_OF(gpuprof_an_db_print_profiles(
        db, out, context_named(db, "<kernel launch>"), "x.peak", 0));
    ck_assert_ptr_nonnull(
        strstr(t, "\nexclusive over the 0 of 2 profiles with a value: sum 0 "));
    free(t);
    /* Folded stacks sum over subtrees: refused for flagged metrics. */
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_print_folded(db, null, "x.peak", 0),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                 "metric x.peak has no meaningful inclusive"));
    ck_assert_int_eq(gpuprof_an_db_print_folded(db, null, "x.regs", 0),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                 "x.regs is an odd sum shown as a mean"));
    fclose(null);
    same_text(TEXT_OF(gpuprof_an_db_print_folded(db, out, "gpu.count", 0)),
              "main;<kernel launch>;kernel k1 4\n"
              "main;<kernel launch>;kernel k2 1\n");
    gpuprof_an_db_close(db);
    rm_tmp();
}
END_TEST

START_TEST(exports)
{
    gpuprof_an_db *db = flags_db();
    const char *m2[] = {"x.regs", "x.peak"};
    char *t = TEXT_OF(gpuprof_an_db_export_hatchet_metrics(
        db, out, m2, 2, GPUPROF_AN_HATCHET_STATS));
    strip_callpaths(t);
    ck_assert_ptr_nonnull(strstr(
        t, "{\"frame\": {\"name\": \"kernel k1\", \"type\": \"kernel\"}, "
           "\"metrics\": {\"x.regs\": 28, \"x.regs (inc)\": 28, "
           "\"x.regs (min)\": 24, \"x.regs (mean)\": 28, \"x.regs (max)\": "
           "32, \"x.regs (min) (inc)\": 24, \"x.regs (mean) (inc)\": 28, "
           "\"x.regs (max) (inc)\": 32, \"x.peak\": 16, \"x.peak (min)\": 7, "
           "\"x.peak (mean)\": 8, \"x.peak (max)\": 9}"));
    ck_assert_ptr_nonnull(strstr(
        t, "{\"frame\": {\"name\": \"<program root>\", \"type\": \"root\"}, "
           "\"metrics\": {\"x.regs\": 0, \"x.regs (inc)\": 30.4, "));
    ck_assert_ptr_null(strstr(t, "x.peak (inc)"));
    free(t);
    /* The table: x.peak and x.occ without inclusive columns; rows of
     * profile means. */
    t = TEXT_OF(gpuprof_an_db_export_table(db, out, 0));
    char *nl = strchr(t, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    ck_assert_str_eq(
        t, "context,parent,kind,name,binary,profile,host,rank,pid,tid,thread,"
           "gpu.count,gpu.count (inc),gpu.count (min),gpu.count (mean),"
           "gpu.count (max),gpu.count (min) (inc),gpu.count (mean) (inc),"
           "gpu.count (max) (inc),"
           "x.regs,x.regs (inc),x.regs (min),x.regs (mean),x.regs (max),"
           "x.regs (min) (inc),x.regs (mean) (inc),x.regs (max) (inc),"
           "x.peak,x.peak (min),x.peak (mean),x.peak (max),"
           "x.occ,x.occ (min),x.occ (mean),x.occ (max)");
    uint32_t k1 = context_named(db, "kernel k1");
    char want[512];
    snprintf(want, sizeof(want),
             "\n%u,%u,kernel,kernel k1,,0,flags,0,1,100,main,"
             "2,2,2,2,2,2,2,2,32,32,24,28,32,24,28,32,7,7,8,9,5,3,4,5\n", k1,
             gpuprof_an_db_context_parent(db, k1));
    ck_assert_msg(strstr(nl + 1, want + 1), "no row %s in\n%s", want + 1,
                  nl + 1);
    free(t);
    t = TEXT_OF(gpuprof_an_db_export_table(db, out, GPUPROF_AN_TABLE_LONG));
    snprintf(want, sizeof(want),
             "\n%u,1,gpu.count,2\n%u,1,gpu.count (inc),2\n%u,1,x.regs,24\n"
             "%u,1,x.regs (inc),24\n%u,1,x.peak,9\n%u,1,x.occ,3\n",
             k1, k1, k1, k1, k1, k1);
    ck_assert_msg(strstr(t, want), "no rows %s in\n%s", want, t);
    ck_assert_ptr_null(strstr(t, "x.peak (inc)"));
    ck_assert_ptr_null(strstr(t, "x.occ (inc)"));
    free(t);
    gpuprof_an_db_close(db);
    rm_tmp();
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"views", views, 60},
        {"thread_centric_and_folded", thread_centric_and_folded, 60},
        {"exports", exports, 60},
    };
    return RUN_SUITE("an_flags", cases);
}
