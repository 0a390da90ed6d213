/*
 * check_an_hatchet.c - the exports for Python (gpuprof_an_db_export_hatchet,
 * gpuprof_an_db_export_table) and folded stacks, byte for byte, on
 * databases built by hand (tests/support/mkprofile): a small one whose
 * every value is worked out below (nested regions in two threads, a
 * derived metric, names that need JSON escaping and CSV quoting, a region
 * without a name), and a 20,000-deep chain of regions exported on a
 * thread with a 256 KiB stack (a recursive walk would overflow it); and
 * the shared writers (an_common.c) on their own: CSV fields, JSON
 * strings, numbers.
 */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/base/an_internal.h"
#include "gpuprof_analysis.h"
#include "support/callpath.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char tmp[512];

static gpuprof_an_db *analyze_open(tp_builder *b)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anhx.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    char in[600], db[600], path[700];
    snprintf(in, sizeof(in), "%s/run", tmp);
    snprintf(db, sizeof(db), "%s/db", tmp);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    snprintf(path, sizeof(path), "%s/p.gpuprof", in);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, db), GPUPROF_OK);
    ck_assert_msg(gpuprof_an_analysis_run(a) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *d;
    ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_OK);
    return d;
}

/* ---- the small database --------------------------------------------------
 * Host "node,1", pid 42, rank 3; metrics time (ns) and calls only; thread
 * 0 "main" (tid 100) and thread 1 `w"1` (tid 101):
 *
 *   context           thread 0 time, calls   thread 1 time, calls
 *   1 solve            100, 2                  50, 1
 *   2   ""              30, 1                  10, -
 *   3 "a,b\nc"           7, -                   -
 *
 * Inclusive time: root 137 | 60 (sum 197), solve 130 | 60 (190), context
 * 2 30 | 10 (40), context 3 7; inclusive calls: root and solve 3 | 1 (4),
 * context 2 1. Statistics are over the profiles with a non-zero value:
 * root time (inc) min 60, mean (137 + 60) / 2 = 98.5, max 137.
 * The derived metric per_call = time / calls: its sums are the formula
 * over the sums (root inclusive 197 / 4 = 49.25, solve exclusive 150 / 3
 * = 50, inclusive 190 / 4 = 47.5, context 2 40 / 1 = 40, context 3 7 / 0
 * = 0); its statistics are over per-profile values where an operand has
 * one and the value is not 0: root inclusive 137 / 3 = 45.666666666666664
 * and 60 / 1 = 60 (mean 52.83333333333333), solve inclusive 130 / 3 =
 * 43.333333333333336 and 60 (mean 51.66666666666667), context 2 only
 * thread 0's 30 / 1 (thread 1 has time but no calls: 10 / 0 = 0). Numbers
 * are the shortest text that reads back as the same double. */
static gpuprof_an_db *small_db(void)
{
    tp_builder *b = tp_new("node,1", 42, 3);
    tp_clear_metrics(b);
    uint32_t t =
        tp_metric(b, "time", GPUPROF_IO_UNIT_NS, GPUPROF_IO_KIND_REGION);
    uint32_t n =
        tp_metric(b, "calls", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_REGION);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t s = tp_region(b, 0, "solve", 0, 0, 0);
    uint32_t e = tp_region(b, s, "", 0, 0, 0);
    uint32_t w = tp_region(b, 0, "a,b\nc", 0, 0, 0);
    tp_node_value(b, s, t, 100);
    tp_node_value(b, s, n, 2);
    tp_node_value(b, e, t, 30);
    tp_node_value(b, e, n, 1);
    tp_node_value(b, w, t, 7);
    tp_thread(b, "w\"1", 0);
    s = tp_region(b, 0, "solve", 0, 0, 0);
    e = tp_region(b, s, "", 0, 0, 0);
    tp_node_value(b, s, t, 50);
    tp_node_value(b, s, n, 1);
    tp_node_value(b, e, t, 10);
    gpuprof_an_db *db = analyze_open(b);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "per_call", "time / calls"),
                     GPUPROF_OK);
    return db;
}

typedef gpuprof_status (*export_fn)(const gpuprof_an_db *, FILE *, uint32_t);

static char *export_text(const gpuprof_an_db *db, export_fn fn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_msg(fn(db, f, 0) == GPUPROF_OK, "%s", gpuprof_an_last_error());
    fclose(f);
    return text;
}

/* The first difference, for a readable failure. */
static void assert_same(const char *got, const char *want)
{
    size_t i = 0;
    while (got[i] && got[i] == want[i])
        i++;
    ck_assert_msg(got[i] == want[i],
                  "differs at byte %zu:\n got: ...%.80s\nwant: ...%.80s", i,
                  got + (i > 20 ? i - 20 : 0), want + (i > 20 ? i - 20 : 0));
}

static const char small_json[] =
    "[\n"
    "{\"frame\": {\"name\": \"<program root>\", \"type\": \"root\"}, "
    "\"metrics\": {"
    "\"time\": 0, \"time (inc)\": 197, \"time (min)\": 0, \"time (mean)\": 0, "
    "\"time (max)\": 0, \"time (min) (inc)\": 60, \"time (mean) (inc)\": 98.5, "
    "\"time (max) (inc)\": 137, "
    "\"calls\": 0, \"calls (inc)\": 4, \"calls (min)\": 0, \"calls (mean)\": "
    "0, \"calls (max)\": 0, \"calls (min) (inc)\": 1, \"calls (mean) (inc)\": "
    "2, \"calls (max) (inc)\": 3, "
    "\"per_call\": 0, \"per_call (inc)\": 49.25, \"per_call (min)\": 0, "
    "\"per_call (mean)\": 0, \"per_call (max)\": 0, \"per_call (min) (inc)\": "
    "45.666666666666664, \"per_call (mean) (inc)\": 52.83333333333333, "
    "\"per_call (max) (inc)\": 60}, \"children\": [\n"
    " {\"frame\": {\"name\": \"solve\", \"type\": \"region\"}, "
    "\"metrics\": {"
    "\"time\": 150, \"time (inc)\": 190, \"time (min)\": 50, \"time (mean)\": "
    "75, \"time (max)\": 100, \"time (min) (inc)\": 60, \"time (mean) (inc)\": "
    "95, \"time (max) (inc)\": 130, "
    "\"calls\": 3, \"calls (inc)\": 4, \"calls (min)\": 1, \"calls (mean)\": "
    "1.5, \"calls (max)\": 2, \"calls (min) (inc)\": 1, \"calls (mean) "
    "(inc)\": 2, \"calls (max) (inc)\": 3, "
    "\"per_call\": 50, \"per_call (inc)\": 47.5, \"per_call (min)\": 50, "
    "\"per_call (mean)\": 50, \"per_call (max)\": 50, \"per_call (min) "
    "(inc)\": 43.333333333333336, \"per_call (mean) (inc)\": "
    "51.66666666666667, \"per_call (max) (inc)\": 60}, \"children\": [\n"
    "  {\"frame\": {\"name\": \"<context 2>\", \"type\": \"region\"}, "
    "\"metrics\": {"
    "\"time\": 40, \"time (inc)\": 40, \"time (min)\": 10, \"time (mean)\": "
    "20, \"time (max)\": 30, \"time (min) (inc)\": 10, \"time (mean) (inc)\": "
    "20, \"time (max) (inc)\": 30, "
    "\"calls\": 1, \"calls (inc)\": 1, \"calls (min)\": 1, \"calls (mean)\": "
    "1, \"calls (max)\": 1, \"calls (min) (inc)\": 1, \"calls (mean) (inc)\": "
    "1, \"calls (max) (inc)\": 1, "
    "\"per_call\": 40, \"per_call (inc)\": 40, \"per_call (min)\": 30, "
    "\"per_call (mean)\": 30, \"per_call (max)\": 30, \"per_call (min) "
    "(inc)\": 30, \"per_call (mean) (inc)\": 30, \"per_call (max) (inc)\": "
    "30}, \"children\": []}]},\n"
    " {\"frame\": {\"name\": \"a,b\\nc\", \"type\": \"region\"}, "
    "\"metrics\": {"
    "\"time\": 7, \"time (inc)\": 7, \"time (min)\": 7, \"time (mean)\": 7, "
    "\"time (max)\": 7, \"time (min) (inc)\": 7, \"time (mean) (inc)\": 7, "
    "\"time (max) (inc)\": 7, "
    "\"calls\": 0, \"calls (inc)\": 0, \"calls (min)\": 0, \"calls (mean)\": "
    "0, \"calls (max)\": 0, \"calls (min) (inc)\": 0, \"calls (mean) (inc)\": "
    "0, \"calls (max) (inc)\": 0, "
    "\"per_call\": 0, \"per_call (inc)\": 0, \"per_call (min)\": 0, "
    "\"per_call (mean)\": 0, \"per_call (max)\": 0, \"per_call (min) (inc)\": "
    "0, \"per_call (mean) (inc)\": 0, \"per_call (max) (inc)\": 0}, "
    "\"children\": []}]}\n"
    "]\n";

/* Per metric: the row's exclusive and inclusive value, then the context's
 * min, mean, max of each variant. Quoted: the host (a comma), thread 1's
 * name (a quote, doubled), context 3's name (a comma and a line break). */
static const char small_csv[] =
    "context,parent,kind,name,binary,profile,host,rank,pid,tid,thread,"
    "time,time (inc),time (min),time (mean),time (max),time (min) (inc),"
    "time (mean) (inc),time (max) (inc),"
    "calls,calls (inc),calls (min),calls (mean),calls (max),calls (min) (inc),"
    "calls (mean) (inc),calls (max) (inc),"
    "per_call,per_call (inc),per_call (min),per_call (mean),per_call (max),"
    "per_call (min) (inc),per_call (mean) (inc),per_call (max) (inc)\n"
    "0,,root,<program root>,,0,\"node,1\",3,42,100,main,"
    "0,137,0,0,0,60,98.5,137,"
    "0,3,0,0,0,1,2,3,"
    "0,45.666666666666664,0,0,0,45.666666666666664,52.83333333333333,60\n"
    "0,,root,<program root>,,1,\"node,1\",3,42,101,\"w\"\"1\","
    "0,60,0,0,0,60,98.5,137,"
    "0,1,0,0,0,1,2,3,"
    "0,60,0,0,0,45.666666666666664,52.83333333333333,60\n"
    "1,0,region,solve,,0,\"node,1\",3,42,100,main,"
    "100,130,50,75,100,60,95,130,"
    "2,3,1,1.5,2,1,2,3,"
    "50,43.333333333333336,50,50,50,43.333333333333336,51.66666666666667,60\n"
    "1,0,region,solve,,1,\"node,1\",3,42,101,\"w\"\"1\","
    "50,60,50,75,100,60,95,130,"
    "1,1,1,1.5,2,1,2,3,"
    "50,60,50,50,50,43.333333333333336,51.66666666666667,60\n"
    "2,1,region,<context 2>,,0,\"node,1\",3,42,100,main,"
    "30,30,10,20,30,10,20,30,"
    "1,1,1,1,1,1,1,1,"
    "30,30,30,30,30,30,30,30\n"
    "2,1,region,<context 2>,,1,\"node,1\",3,42,101,\"w\"\"1\","
    "10,10,10,20,30,10,20,30,"
    "0,0,1,1,1,1,1,1,"
    "0,0,30,30,30,30,30,30\n"
    "3,0,region,\"a,b\nc\",,0,\"node,1\",3,42,100,main,"
    "7,7,7,7,7,7,7,7,"
    "0,0,0,0,0,0,0,0,"
    "0,0,0,0,0,0,0,0\n";

static const char small_json_plain_root[] =
    "[\n{\"frame\": {\"name\": \"<program root>\", \"type\": \"root\"}, "
    "\"metrics\": {\"time\": 0, \"time (inc)\": 197, \"calls\": 0, "
    "\"calls (inc)\": 4, \"per_call\": 0, \"per_call (inc)\": 49.25}, "
    "\"children\": [\n {\"frame\": {\"name\": \"solve\", \"type\": "
    "\"region\"}, \"metrics\": {\"time\": 150, \"time (inc)\": 190, ";
static const char small_json_calls_root[] =
    "[\n{\"frame\": {\"name\": \"<program root>\", \"type\": \"root\"}, "
    "\"metrics\": {\"calls\": 0, \"calls (inc)\": 4}, \"children\": [\n";

static gpuprof_status hatchet_stats(const gpuprof_an_db *db, FILE *f,
                                    uint32_t flags)
{
    (void)flags;
    return gpuprof_an_db_export_hatchet(db, f, GPUPROF_AN_HATCHET_STATS);
}

START_TEST(small_database_exact_bytes)
{
    gpuprof_an_db *db = small_db();
    ck_assert_uint_eq(gpuprof_an_db_context_count(db), 4);
    ck_assert_str_eq(gpuprof_an_db_context_name(db, 2), "");
    char *json = export_text(db, hatchet_stats);
    ck_assert_uint_eq(strip_callpaths(json), 4); /* every context, once */
    assert_same(json, small_json);
    free(json);
    /* By default: no statistics, no context ids (frames of two runs match).
     * The metric named "time" is Hatchet's default as it is. */
    json = export_text(db, gpuprof_an_db_export_hatchet);
    strip_callpaths(json);
    ck_assert_int_eq(strncmp(json, small_json_plain_root,
                             strlen(small_json_plain_root)), 0);
    ck_assert_ptr_null(strstr(json, "(min)"));
    ck_assert_ptr_nonnull(strstr(json, "a,b\\nc"));
    free(json);
    /* --metric: the named ones only, and the contexts where one has a
     * value (or beneath which one has): "a,b\nc" has no calls; an unknown
     * one is refused. */
    const char *pick[1] = {"calls"};
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    ck_assert_int_eq(gpuprof_an_db_export_hatchet_metrics(db, mf, pick, 1, 0),
                     GPUPROF_OK);
    fclose(mf);
    ck_assert_uint_eq(strip_callpaths(text), 3);
    ck_assert_int_eq(strncmp(text, small_json_calls_root,
                             strlen(small_json_calls_root)), 0);
    ck_assert_ptr_null(strstr(text, "a,b"));
    ck_assert_ptr_nonnull(strstr(text, "<context 2>"));
    free(text);
    pick[0] = "nope";
    mf = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_export_hatchet_metrics(db, mf, pick, 1, 0),
                     GPUPROF_E_NOTFOUND);
    fclose(mf);
    char *csv = export_text(db, gpuprof_an_db_export_table);
    assert_same(csv, small_csv);
    free(csv);
    /* Folded stacks name context 2 too. */
    text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_db_print_folded(db, f, "time", 0), GPUPROF_OK);
    fclose(f);
    ck_assert_str_eq(text, "solve 150\nsolve;<context 2> 40\na,b c 7\n");
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

/* The long form: (context, profile, metric, value) per non-zero value,
 * derived metrics included. */
static const char small_long[] =
    "context,profile,metric,value\n"
    "0,0,time (inc),137\n0,0,calls (inc),3\n"
    "0,0,per_call (inc),45.666666666666664\n"
    "0,1,time (inc),60\n0,1,calls (inc),1\n0,1,per_call (inc),60\n"
    "1,0,time,100\n1,0,time (inc),130\n1,0,calls,2\n1,0,calls (inc),3\n"
    "1,0,per_call,50\n1,0,per_call (inc),43.333333333333336\n"
    "1,1,time,50\n1,1,time (inc),60\n1,1,calls,1\n1,1,calls (inc),1\n"
    "1,1,per_call,50\n1,1,per_call (inc),60\n"
    "2,0,time,30\n2,0,time (inc),30\n2,0,calls,1\n2,0,calls (inc),1\n"
    "2,0,per_call,30\n2,0,per_call (inc),30\n"
    "2,1,time,10\n2,1,time (inc),10\n"
    "3,0,time,7\n3,0,time (inc),7\n";

static gpuprof_status table_long(const gpuprof_an_db *db, FILE *f,
                                 uint32_t flags)
{
    (void)flags;
    return gpuprof_an_db_export_table(db, f, GPUPROF_AN_TABLE_LONG);
}

START_TEST(long_table_and_unused_metrics)
{
    gpuprof_an_db *db = small_db();
    char *csv = export_text(db, table_long);
    assert_same(csv, small_long);
    free(csv);
    gpuprof_an_db_close(db);
    /* A metric that nothing filled has no columns in the wide table. */
    tp_builder *b = tp_new("h", 7, 0);
    tp_clear_metrics(b);
    uint32_t t = tp_metric(b, "time", GPUPROF_IO_UNIT_NS, GPUPROF_IO_KIND_REGION);
    tp_metric(b, "unused", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_REGION);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_node_value(b, tp_region(b, 0, "r", 0, 0, 0), t, 5);
    db = analyze_open(b);
    csv = export_text(db, gpuprof_an_db_export_table);
    assert_same(csv, "context,parent,kind,name,binary,profile,host,rank,pid,"
                     "tid,thread,"
                     "time,time (inc),time (min),time (mean),time (max),"
                     "time (min) (inc),time (mean) (inc),time (max) (inc)\n"
                     "0,,root,<program root>,,0,h,0,7,100,main,0,5,0,0,0,5,5,5\n"
                     "1,0,region,r,,0,h,0,7,100,main,5,5,5,5,5,5,5,5\n");
    free(csv);
    gpuprof_an_db_close(db);
}
END_TEST

/* The statistics the exports write are gpuprof_an_db_stat's, derived
 * metrics included (computed there from its own per-profile values). */
START_TEST(statistics_are_the_databases)
{
    gpuprof_an_db *db = small_db();
    static const gpuprof_an_stat which[] = {
        GPUPROF_AN_STAT_MIN, GPUPROF_AN_STAT_MEAN, GPUPROF_AN_STAT_MAX};
    uint32_t m;
    ck_assert_int_eq(
        gpuprof_an_db_metric_find(db, "per_call", GPUPROF_AN_INCLUSIVE, &m),
        GPUPROF_OK);
    static const double want[4][3] = {
        {45.666666666666664, 52.83333333333333, 60},
        {43.333333333333336, 51.66666666666667, 60},
        {30, 30, 30},
        {0, 0, 0}};
    for (uint32_t c = 0; c < 4; c++)
        for (int s = 0; s < 3; s++)
            ck_assert_msg(gpuprof_an_db_stat(db, c, m, which[s]) == want[c][s],
                          "context %u stat %d: %.17g", c, s,
                          gpuprof_an_db_stat(db, c, m, which[s]));
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(bad_arguments)
{
    gpuprof_an_db *db = small_db();
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_export_hatchet(NULL, null, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_hatchet(db, NULL, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_hatchet(db, null, 2),
                     GPUPROF_E_INVALID); /* 1 is GPUPROF_AN_HATCHET_STATS */
    ck_assert_int_eq(gpuprof_an_db_export_table(NULL, null, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_table(db, null, 2),
                     GPUPROF_E_INVALID); /* 1 is GPUPROF_AN_TABLE_LONG */
    fclose(null);
    /* A stream that cannot be written. */
    FILE *ro = fopen("/dev/null", "r");
    ck_assert_int_eq(gpuprof_an_db_export_table(db, ro, 0), GPUPROF_E_IO);
    fclose(ro);
    gpuprof_an_db_close(db);
}
END_TEST

/* ---- the writers --------------------------------------------------------- */
typedef void (*str_fn)(FILE *, const char *);

static char *written(str_fn fn, const char *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fn(f, s);
    fclose(f);
    return text;
}

START_TEST(writers)
{
    static const struct {
        const char *in, *csv, *json;
    } str[] = {
        {"plain", "plain", "\"plain\""},
        {"", "", "\"\""},
        {"a,b", "\"a,b\"", "\"a,b\""},
        {"q\"x", "\"q\"\"x\"", "\"q\\\"x\""},
        {"l\nm\rn", "\"l\nm\rn\"", "\"l\\nm\\u000dn\""},
        {"t\tb\\\x01", "t\tb\\\x01", "\"t\\tb\\\\\\u0001\""},
        {"caf\xc3\xa9", "caf\xc3\xa9", "\"caf\xc3\xa9\""},
        /* not UTF-8: a stray byte, a truncated sequence, an overlong one */
        {"x\xffy", "x\xef\xbf\xbdy", "\"x\\ufffdy\""},
        {"e\xe2\x82", "e\xef\xbf\xbd\xef\xbf\xbd", "\"e\\ufffd\\ufffd\""},
        {"\xc0\xaf,", "\"\xef\xbf\xbd\xef\xbf\xbd,\"", "\"\\ufffd\\ufffd,\""},
    };
    for (unsigned i = 0; i < sizeof(str) / sizeof(str[0]); i++) {
        char *c = written(gpuprof__an_csv_str, str[i].in);
        char *j = written(gpuprof__an_json_str, str[i].in);
        ck_assert_msg(!strcmp(c, str[i].csv), "csv %u: [%s]", i, c);
        ck_assert_msg(!strcmp(j, str[i].json), "json %u: [%s]", i, j);
        free(c);
        free(j);
    }
    /* Numbers: the shortest text that reads back (Python's repr). */
    static const struct {
        double v;
        const char *text;
    } num[] = {
        {0, "0"},
        {-0.0, "0"},
        {42, "42"},
        {-7, "-7"},
        {1e15, "1000000000000000"},
        {9007199254740991.0, "9007199254740991"},
        {9007199254740992.0, "9007199254740992"},
        {0.1, "0.1"},
        {1.0 / 3, "0.3333333333333333"},
        {2.0 / 3, "0.6666666666666666"},
        {137.0 / 3, "45.666666666666664"},
        {-2.5, "-2.5"},
        {1e-7, "1e-07"},
        {1e300, "1e+300"},
    };
    for (unsigned i = 0; i < sizeof(num) / sizeof(num[0]); i++) {
        char buf[40];
        gpuprof__an_fmt_num(buf, sizeof(buf), num[i].v);
        ck_assert_msg(!strcmp(buf, num[i].text), "%.17g: %s, want %s", num[i].v,
                      buf, num[i].text);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gpuprof__an_num(f, NAN, "null");
    gpuprof__an_num(f, -INFINITY, "");
    gpuprof__an_num(f, 3, "null");
    fclose(f);
    ck_assert_str_eq(text, "null3");
    free(text);
}
END_TEST

/* ---- a 20,000-deep chain ---------------------------------------------------
 * Regions "r" nested 20,000 deep in one thread, time 1 on the deepest:
 * context d (0 the root) is at depth d, its exclusive time 1 at d = DEEP
 * and 0 above, its inclusive time 1 everywhere. */
enum { DEEP = 20000 };

typedef struct deep_out {
    const gpuprof_an_db *db;
    char *json, *csv, *folded, *profiles;
    gpuprof_status st[4];
} deep_out;

static void *deep_exports(void *arg)
{
    deep_out *o = arg;
    size_t len;
    FILE *f = open_memstream(&o->json, &len);
    o->st[0] = gpuprof_an_db_export_hatchet(o->db, f, 0);
    fclose(f);
    f = open_memstream(&o->csv, &len);
    o->st[1] = gpuprof_an_db_export_table(o->db, f, 0);
    fclose(f);
    f = open_memstream(&o->folded, &len);
    o->st[2] = gpuprof_an_db_print_folded(o->db, f, "time", 0);
    fclose(f);
    f = open_memstream(&o->profiles, &len);
    o->st[3] = gpuprof_an_db_print_profiles(o->db, f, DEEP, "time", 0);
    fclose(f);
    return NULL;
}

/* The expected text, built here line by line. */
static char *deep_json(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("[", f);
    for (int d = 0; d <= DEEP; d++) {
        int x = d == DEEP;
        fprintf(f,
                "\n%*s{\"frame\": {\"name\": \"%s\", \"type\": \"%s\"}, "
                "\"metrics\": {\"time\": %d, \"time (inc)\": 1}, "
                "\"children\": [",
                d < 64 ? d : 64, "", d ? "r" : "<program root>",
                d ? "region" : "root", x);
    }
    for (int d = 0; d <= DEEP; d++)
        fputs("]}", f);
    fputs("\n]\n", f);
    fclose(f);
    return text;
}

static char *deep_csv(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fputs("context,parent,kind,name,binary,profile,host,rank,pid,tid,thread,"
          "time,time (inc),time (min),time (mean),time (max),time (min) (inc),"
          "time (mean) (inc),time (max) (inc)\n",
          f);
    fputs("0,,root,<program root>,,0,deep,-1,9,100,main,0,1,0,0,0,1,1,1\n", f);
    for (int d = 1; d <= DEEP; d++) {
        int x = d == DEEP;
        fprintf(f, "%d,%d,region,r,,0,deep,-1,9,100,main,%d,1,%d,%d,%d,1,1,1\n",
                d, d - 1, x, x, x, x);
    }
    fclose(f);
    return text;
}

START_TEST(deep_tree_without_recursion)
{
    tp_builder *b = tp_new("deep", 9, -1);
    tp_clear_metrics(b);
    uint32_t t =
        tp_metric(b, "time", GPUPROF_IO_UNIT_NS, GPUPROF_IO_KIND_REGION);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t n = 0;
    for (int d = 0; d < DEEP; d++)
        n = tp_region(b, n, "r", 0, 0, 0);
    tp_node_value(b, n, t, 1);
    gpuprof_an_db *db = analyze_open(b);
    ck_assert_uint_eq(gpuprof_an_db_context_count(db), DEEP + 1);
    ck_assert_uint_eq(gpuprof_an_db_context_parent(db, DEEP), DEEP - 1);

    /* On a thread whose stack a recursion per level would overflow. */
    deep_out o = {.db = db};
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    ck_assert_int_eq(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
    ck_assert_int_eq(pthread_create(&th, &attr, deep_exports, &o), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(o.st[i], GPUPROF_OK);

    char *want = deep_json();
    ck_assert_uint_eq(strip_callpaths(o.json), DEEP + 1);
    assert_same(o.json, want);
    free(want);
    want = deep_csv();
    assert_same(o.csv, want);
    free(want);
    /* One folded line, the whole path (no length limit). */
    size_t len = strlen(o.folded);
    ck_assert_uint_eq(len, 2 * DEEP + 2);
    for (int d = 0; d < DEEP; d++)
        ck_assert_int_eq(o.folded[2 * d], 'r');
    ck_assert_str_eq(o.folded + 2 * DEEP - 1, " 1\n");
    ck_assert_int_eq(strncmp(o.profiles, "context 20000: r;r;r;", 21), 0);
    free(o.json);
    free(o.csv);
    free(o.folded);
    free(o.profiles);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"small_exact", small_database_exact_bytes, 60},
        {"statistics", statistics_are_the_databases, 60},
        {"bad_arguments", bad_arguments, 60},
        {"writers", writers, 60},
        {"deep_tree", deep_tree_without_recursion, 120},
        {"long_table", long_table_and_unused_metrics, 60},
    };
    return RUN_SUITE("an_hatchet", cases);
}
