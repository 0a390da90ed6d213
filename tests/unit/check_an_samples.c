/*
 * check_an_samples.c - the query of a thread's sampled contexts in a span
 * (analysis/db/an_samples.c) on a hand-made run: a profile of two threads
 * (tests/support/mkprofile) and a trace whose SAMPLE_RECORDS (lib/io's
 * writer) the analysis carries into trace.db. Answers by hand below.
 *
 * Threads: k = 0 "main", 1 "t1" (tid 100 + k, seq k); each has regions
 * "a" (node 1) and "b" (node 2). Samples, (time, value, thread, node):
 *   main: (100, 10, a) (200, 10, a) (300, 30, b) (900, 10, b)
 *   t1:   (250, 10, a)
 * Times are ns.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analysis/db/an_samples.h"
#include "gpuprof_analysis.h"
#include "io/trace.h"
#include "support/an_paths.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char dir[512], dbdir[600];

static void write_run(void)
{
    snprintf(dir, sizeof(dir), "%s/sm.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[700];
    static const char *const thread[2] = {"main", "t1"};
    tp_builder *b = tp_new("host", 10, 0);
    uint32_t m = tp_metric(b, "cpu.time", GPUPROF_IO_UNIT_NS,
                           GPUPROF_IO_KIND_CPU);
    for (uint32_t k = 0; k < 2; k++) {
        tp_thread(b, thread[k], k ? 0 : GPUPROF_IO_THREAD_MAIN);
        ck_assert_uint_eq(tp_region(b, 0, "a", 1, 1, 1), 1);
        ck_assert_uint_eq(tp_region(b, 0, "b", 1, 1, 1), 2);
        tp_node_value(b, 1, m, k ? 10 : 20);
        if (!k)
            tp_node_value(b, 2, m, 40);
    }
    tp_times(b, 0, 100000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    const gpuprof__io_trace_rec s[5] = {
        {100, 10, 0ull << 32 | 1, m}, {200, 10, 0ull << 32 | 1, m},
        {250, 10, 1ull << 32 | 1, m}, {300, 30, 0ull << 32 | 2, m},
        {900, 10, 0ull << 32 | 2, m}};
    static uint8_t buf[8192];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    for (uint32_t k = 0; k < 2; k++)
        off += gpuprof__io_trace_thread_chunk(buf + off, k, 100 + k,
                                              thread[k]);
    off += gpuprof__io_trace_sample_records(buf + off, s, 5);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gptrace", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
    fclose(f);
    ap_analyze(dir, dbdir, sizeof(dbdir));
}

static uint32_t profile_of(const gpuprof_an_db *db, uint64_t tid)
{
    for (uint32_t p = 0; p < gpuprof_an_db_profile_count(db); p++)
        if (gpuprof_an_db_profile_tid(db, p) == tid)
            return p;
    ck_abort_msg("no profile of tid %llu", (unsigned long long)tid);
    return 0;
}

static void is(const gpuprof_an_db *db, const gpuprof__an_sample_ctx *c,
               const char *name, uint64_t samples, uint64_t value)
{
    ck_assert_uint_ne(c->context, UINT32_MAX);
    ck_assert_str_eq(gpuprof_an_db_context_name(db, c->context), name);
    ck_assert_uint_eq(c->samples, samples);
    ck_assert_uint_eq(c->value, value);
}

START_TEST(contexts_in_span)
{
    write_run();
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    uint32_t main_p = profile_of(db, 100), t1 = profile_of(db, 101), mt;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "cpu.time",
                                               GPUPROF_AN_EXCLUSIVE, &mt),
                     GPUPROF_OK);
    gpuprof__an_sample_ctx *v;
    uint32_t n;
    /* main in [100, 300]: b 30 (one sample) before a 20 (two). */
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, main_p, 100, 300,
                                               UINT32_MAX, &v, &n),
                     GPUPROF_OK);
    ck_assert_uint_eq(n, 2);
    is(db, &v[0], "b", 1, 30);
    is(db, &v[1], "a", 2, 20);
    ck_assert_uint_eq(v[0].metric, mt);
    free(v);
    /* Bounds are inclusive; (100, 300) exclusive of both ends: a once. */
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, main_p, 101, 299, mt, &v,
                                               &n),
                     GPUPROF_OK);
    ck_assert_uint_eq(n, 1);
    is(db, &v[0], "a", 1, 10);
    free(v);
    /* Nothing sampled in [301, 899]. */
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, main_p, 301, 899,
                                               UINT32_MAX, &v, &n),
                     GPUPROF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(v);
    /* t1's own sample only. */
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, t1, 0, 1000, UINT32_MAX,
                                               &v, &n),
                     GPUPROF_OK);
    ck_assert_uint_eq(n, 1);
    is(db, &v[0], "a", 1, 10);
    free(v);
    /* Another metric: none of these. */
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, main_p, 0, 1000, mt + 1000,
                                               &v, &n),
                     GPUPROF_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(gpuprof__an_db_samples_in(db, main_p, 10, 5, UINT32_MAX,
                                               &v, &n),
                     GPUPROF_E_INVALID);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {{"contexts_in_span", contexts_in_span, 60}};
    return RUN_SUITE("an_samples", cases);
}
