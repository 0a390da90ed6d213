/*
 * check_an_cpath.c - the trace analysis (analysis/cpath) on hand-made
 * traces and profiles (tests/support/mkprofile, the lib/io trace writer)
 * whose answers are computed by hand in the comments: wait states by
 * kind, blame, GPU idleness blame, the critical path step by step, the
 * projection with a kernel twice as fast, the metrics added to the
 * database; a trace without dependency notes (format 1.1); damaged traces
 * (a note naming a call the trace lacks, dependencies forming a cycle) are
 * refused with a clear error, never a path.
 *
 * One thread "main" (tid 100, seq 0): region R (node 1) holds everything;
 * each call is a placeholder (its own node) beneath R, kernels beneath
 * theirs. Times are ns.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "io/trace.h"
#include "support/an_paths.h"
#include "support/mkprofile.h"
#include "support/suite.h"

/* lib/core/gpu.h's note kinds and flags (pinned in doc/FORMATS.md). */
enum { SYNC_DEVICE = 1, SYNC_STREAM, SYNC_EVENT, QUERY_STREAM, QUERY_EVENT,
       EVENT_RECORD, STREAM_WAIT, LAUNCH };
#define READY 0x1u
#define NULLS 0x4u

typedef struct tb { /* a trace being made */
    gpuprof__io_trace_rec ops[64], deps[64], gpu[4][16], reg[8];
    uint32_t nops, ndeps, ngpu[4], nreg;
} tb;

static char dir[512], dbdir[600];
static uint64_t corr_n;
/* PC samples of kernel p (on its kernel node: no binary), `pc_barrier[p]`
 * of them at a barrier, the rest issued; none when 0. */
static uint64_t pc_samples[8], pc_barrier[8];

static uint64_t call(tb *t, uint64_t s, uint64_t e, uint32_t node)
{
    uint64_t c = (1ull << 40) | ++corr_n;
    t->ops[t->nops++] = (gpuprof__io_trace_rec){s, e, node, c};
    return c;
}

static void note(tb *t, uint64_t c, uint64_t s, uint32_t what, uint32_t flags,
                 uint32_t stream, uint64_t target)
{
    t->deps[t->ndeps++] = (gpuprof__io_trace_rec){
        s, target, GPUPROF_IO_DEP_INFO(what, flags, 0, stream), c};
}

static void work(tb *t, uint32_t stream, uint64_t s, uint64_t e,
                 uint32_t node, uint64_t c)
{
    t->gpu[stream][t->ngpu[stream]++] = (gpuprof__io_trace_rec){s, e, node, c};
}

static void region(tb *t, uint64_t s, uint64_t e, uint32_t node)
{
    t->reg[t->nreg++] = (gpuprof__io_trace_rec){s, e, node, 0};
}

/* Nodes of the profile: 1 R, 2 "cpu" in R, then per placeholder p (from
 * 0) a call site (frame) 3 + 3p in R, the placeholder 4 + 3p beneath it
 * and its kernel 5 + 3p: each placeholder a context of its own. */
#define PH(p) (4u + 3u * (p))

static void write_run(const tb *t, uint32_t nph, const char *const *kernels)
{
    snprintf(dir, sizeof(dir), "%s/cp.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[700];
    tp_builder *b = tp_new("host", 10, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, "R", 1, 25000, 25000);
    ck_assert_uint_eq(r, 1);
    ck_assert_uint_eq(tp_region(b, r, "cpu", 1, 10000, 10000), 2);
    uint32_t mod = tp_module(b, "/bin/app");
    for (uint32_t p = 0; p < nph; p++) {
        ck_assert_uint_eq(tp_frame(b, r, mod, 0x100 + 16 * p), PH(p) - 1);
        ck_assert_uint_eq(tp_gpu_op(b, PH(p) - 1, 1), PH(p));
        ck_assert_uint_eq(tp_kernel(b, PH(p), kernels[p], UINT32_MAX),
                          PH(p) + 1);
    }
    if (pc_samples[0]) {
        uint32_t ms = tp_metric(b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                                GPUPROF_IO_KIND_INSTR);
        uint32_t mb = tp_metric(b, "gpu.pc.stall.barrier",
                                GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR);
        uint32_t mi = tp_metric(b, "gpu.pc.stall.selected",
                                GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR);
        for (uint32_t p = 0; p < nph && pc_samples[p]; p++) {
            tp_node_value(b, PH(p) + 1, ms, pc_samples[p]);
            tp_node_value(b, PH(p) + 1, mb, pc_barrier[p]);
            tp_node_value(b, PH(p) + 1, mi, pc_samples[p] - pc_barrier[p]);
        }
    }
    tp_times(b, 0, 100000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    static uint8_t buf[65536];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    if (t->nreg)
        off += gpuprof__io_trace_records(buf + off, 0, 0, 0, t->reg, t->nreg);
    off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 0, t->ops, t->nops);
    for (uint32_t s = 0; s < 4; s++)
        if (t->ngpu[s])
            off += gpuprof__io_trace_corr_records(
                buf + off, GPUPROF_IO_TRACE_GPU, 0, s, t->gpu[s], t->ngpu[s]);
    if (t->ndeps)
        off += gpuprof__io_trace_dep_records(buf + off, 0, 0, t->deps,
                                             t->ndeps);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gptrace", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
    fclose(f);
    ap_analyze(dir, dbdir, sizeof(dbdir));
}

static gpuprof_an_db *open_db(void)
{
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    return db;
}

/* The database context of profile node `node` (by its name's place). */
static uint32_t ctx_named(const gpuprof_an_db *db, const char *name)
{
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (!strcmp(gpuprof_an_db_context_name(db, c), name))
            return c;
    ck_abort_msg("no context %s", name);
    return 0;
}

/* The path as "name:ns," steps. */
static void path_text(const gpuprof_an_cpath *cp, char *out, size_t size)
{
    ap_path_text(cp, 0, out, size);
}

static double metric_at(const gpuprof_an_db *db, const char *metric,
                        uint32_t c, gpuprof_an_variant v)
{
    uint32_t m;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, metric, v, &m), GPUPROF_OK);
    return gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_SUM);
}

/* basic: kA (placeholder 0) on stream 0 [1200, 21200] launched by L1 [1000,
 * 1100]; kB (1) on stream 1 [1400, 6400] by L2 [1200, 1300]; S1 (2) syncs
 * stream 1 [2000, 6500]: waits 4400 for kB (BlameKernel); region cpu
 * [6500, 16500]; S2 (3) syncs stream 0 [16500, 21300]: waits 4700 for kA;
 * S3 (3) syncs stream 0 again [21400, 21500]: late (BlameSync 100); R
 * [0, 22000]. */
static void basic_run(void)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 22000, 1);
    region(&t, 6500, 16500, 2);
    uint64_t l1 = call(&t, 1000, 1100, PH(0));
    uint64_t l2 = call(&t, 1200, 1300, PH(1));
    uint64_t s1 = call(&t, 2000, 6500, PH(2));
    uint64_t s2 = call(&t, 16500, 21300, PH(3));
    uint64_t s3 = call(&t, 21400, 21500, PH(3));
    work(&t, 0, 1200, 21200, PH(0), l1);
    work(&t, 1, 1400, 6400, PH(1), l2);
    note(&t, s1, 2000, SYNC_STREAM, 0, 1, 0);
    note(&t, s2, 16500, SYNC_STREAM, 0, 0, 0);
    note(&t, s3, 21400, SYNC_STREAM, 0, 0, 0);
    static const char *const k[] = {"kA", "kB", "sync1", "sync0"};
    write_run(&t, 4, k);
}

START_TEST(basic_exact)
{
    basic_run();
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_process_count(cp), 1);
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_BLAME_KERNEL], 2);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_BLAME_KERNEL], 4400 + 4700);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_BLAME_SYNC], 1);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_BLAME_SYNC], 100);
    /* The path: R 1000, L1's launch 200, kA 20000, S2 after kA 100, R 100,
     * S3 100, R 500 = the run, 22000. */
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 22000);
    ck_assert_uint_eq(gpuprof_an_cpath_length(cp, 0), 22000);
    char text[2048];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, "R:1000,<kernel launch>:200,kernel kA:20000,"
                           "<kernel launch>:100,R:100,<kernel launch>:100,"
                           "R:500,");
    /* kA twice as fast: kA [1200, 11200]; S2 no longer waits: it ends at
     * 16500 + 100, S3 at 16700 + 100, R at 17300. The new path: R 1000,
     * L1 100, R 100, L2's launch 200, kB 5000, S1 100, cpu 10000, S2 100,
     * R 100, S3 100, R 500. */
    const char *rules[] = {"kernel:kA=2"};
    gpuprof_an_cpath *pj;
    uint64_t touched;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, rules, 1, &touched, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(touched, 1);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(pj, 0), 17300);
    path_text(pj, text, sizeof(text));
    ck_assert_str_eq(text, "R:1000,<kernel launch>:100,R:100,"
                           "<kernel launch>:200,kernel kB:5000,"
                           "<kernel launch>:100,cpu:10000,"
                           "<kernel launch>:100,R:100,<kernel launch>:100,"
                           "R:500,");
    gpuprof_an_cpath_free(pj);
    /* Metrics: GPU idle [0, 1200] and [21200, 22000]: R 1000 + 100 + 500,
     * L1 100, S2 100, S3 100. Waiting at S1 4400 and S2 + S3 (one
     * placeholder) 4800; blame at kA 4700, kB 4400, S3 100. */
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(db, cp), GPUPROF_OK);
    uint32_t R = ctx_named(db, "R"), cpu = ctx_named(db, "cpu");
    ck_assert_double_eq(metric_at(db, "gpu.idle_blame", R, GPUPROF_AN_EXCLUSIVE),
                        1700);
    ck_assert_double_eq(metric_at(db, "gpu.idle_blame", R, GPUPROF_AN_INCLUSIVE),
                        2000);
    ck_assert_double_eq(metric_at(db, "gpu.idle_blame", cpu,
                                  GPUPROF_AN_INCLUSIVE),
                        0);
    ck_assert_double_eq(metric_at(db, "wait.time", R, GPUPROF_AN_INCLUSIVE),
                        9200);
    ck_assert_double_eq(metric_at(db, "wait.blame", R, GPUPROF_AN_INCLUSIVE),
                        9200);
    ck_assert_double_eq(metric_at(db, "cpath.time", R, GPUPROF_AN_INCLUSIVE),
                        22000);
    ck_assert_double_eq(metric_at(db, "cpath.time", R, GPUPROF_AN_EXCLUSIVE),
                        1600);
    ck_assert_double_eq(metric_at(db, "cpath.time", 0, GPUPROF_AN_INCLUSIVE),
                        22000);
    /* Twice adds nothing. */
    uint32_t nm = gpuprof_an_db_metric_count(db);
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(db, cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* The GPU advice ranked by the projected gain of the whole run
 * (analysis/rank): basic's kernels with PC samples on their nodes (no
 * cubin: advice per kernel, from stall reasons), kA 1000 samples of which
 * 500 at a barrier -- Warp Balance, S = 1000 / (1000 - 500) = 2 (seed 003
 * eq. 3) -- and kB 1000 of which 750: S = 4. kA twice as fast: the run of
 * 22000 ns becomes 17300 (basic_exact), -4700 ns, 21.36 %; kA is 20000 of
 * the 22000 ns critical path (90.91 %). kB four times as fast, [1400,
 * 2650]: S1 ends at 2750, "cpu" [2750, 12750], S2 still waits for kA until
 * 21300, S3 [21400, 21500], R ends at 22000: no gain, kB is not on the
 * path. So kA's 2x ranks before kB's 4x. */
START_TEST(advice_ranked_by_run)
{
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
    pc_samples[0] = pc_samples[1] = 1000;
    pc_barrier[0] = 500;
    pc_barrier[1] = 750;
    basic_run();
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_advice_kernel_count(a), 2);
    uint32_t k, s;
    ck_assert_int_eq(gpuprof_an_advice_ranked(a, 0, &k, &s), 0);
    ck_assert_int_eq(gpuprof_an_advice_project(a, db, cp, 0, 1),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_advice_project(a, db, cp, 0, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_advice_ranked(a, 0, &k, &s), 1);
    ck_assert_str_eq(gpuprof_an_advice_kernel_name(a, k), "kA");
    ck_assert_str_eq(gpuprof_an_advice_name(a, k, s), "Warp Balance");
    ck_assert_double_eq(gpuprof_an_advice_speedup(a, k, s), 2);
    ck_assert_double_eq_tol(gpuprof_an_advice_run_gain(a, k, s),
                            4700.0 / 22000.0, 1e-12);
    ck_assert_double_eq_tol(gpuprof_an_advice_kernel_value(a, k, "path_share"),
                            20000.0 / 22000.0, 1e-12);
    ck_assert_int_eq(gpuprof_an_advice_ranked(a, 1, &k, &s), 1);
    ck_assert_str_eq(gpuprof_an_advice_kernel_name(a, k), "kB");
    ck_assert_double_eq(gpuprof_an_advice_speedup(a, k, s), 4);
    ck_assert_double_eq(gpuprof_an_advice_run_gain(a, k, s), 0);
    ck_assert_double_eq(gpuprof_an_advice_kernel_value(a, k, "path_share"), 0);
    ck_assert_int_eq(gpuprof_an_advice_ranked(a, 2, &k, &s), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_advice_print(a, f, 0, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_msg(strstr(text, "  1. kernel kA: Warp Balance, kernel ~ 2.00x "
                               "-> run -21.4% (on the critical path "
                               "90.9%)\n  2. kernel kB: Warp Balance, "
                               "kernel ~ 4.00x -> run -0.0% (on the "
                               "critical path 0.0%)\n"),
                  "%s", text);
    free(text);
    gpuprof_an_advice_free(a);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
    pc_samples[0] = pc_samples[1] = 0;
}
END_TEST

/* events: kE1 (0) on 0 [1200, 11200] by L1 [1000, 1100]; event E1 (4)
 * recorded on 0 [1100, 1150]; stream 1 waits for E1 [1150, 1200] (4); kE2
 * (1) on 1 [11200, 16200] by L2 [1200, 1300]: StreamWait 11200 - 1200 =
 * 10000, kE1; E2 recorded on 1 [1300, 1350]; queries of E2 at [2000,
 * 2100] and [8000, 8100] not done, [17000, 17100] done: EventQuery 6000 +
 * (16200 - 8000) = 14200, kE2; kE3 (2) on 0 [18200, 22200] by L3 [18000,
 * 18100]; stream 0 queried [19000, 19100] not done, [23000, 23100] done:
 * StreamQuery 3200, kE3; E2 synchronized [24000, 24500]: late (500); R
 * [0, 25000]. */
START_TEST(events_exact)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 25000, 1);
    uint64_t l1 = call(&t, 1000, 1100, PH(0));
    uint64_t e1 = call(&t, 1100, 1150, PH(4));
    uint64_t w = call(&t, 1150, 1200, PH(4));
    uint64_t l2 = call(&t, 1200, 1300, PH(1));
    uint64_t e2 = call(&t, 1300, 1350, PH(4));
    uint64_t q1 = call(&t, 2000, 2100, PH(3));
    uint64_t q2 = call(&t, 8000, 8100, PH(3));
    uint64_t q3 = call(&t, 17000, 17100, PH(3));
    uint64_t l3 = call(&t, 18000, 18100, PH(2));
    uint64_t q4 = call(&t, 19000, 19100, PH(3));
    uint64_t q5 = call(&t, 23000, 23100, PH(3));
    uint64_t s = call(&t, 24000, 24500, PH(3));
    work(&t, 0, 1200, 11200, PH(0), l1);
    work(&t, 1, 11200, 16200, PH(1), l2);
    work(&t, 0, 18200, 22200, PH(2), l3);
    note(&t, e1, 1100, EVENT_RECORD, 0, 0, 0);
    note(&t, w, 1150, STREAM_WAIT, 0, 1, e1);
    note(&t, e2, 1300, EVENT_RECORD, 0, 1, 0);
    note(&t, q1, 2000, QUERY_EVENT, 0, 1, e2);
    note(&t, q2, 8000, QUERY_EVENT, 0, 1, e2);
    note(&t, q3, 17000, QUERY_EVENT, READY, 1, e2);
    note(&t, q4, 19000, QUERY_STREAM, 0, 0, 0);
    note(&t, q5, 23000, QUERY_STREAM, READY, 0, 0);
    note(&t, s, 24000, SYNC_EVENT, 0, 1, e2);
    static const char *const k[] = {"kE1", "kE2", "kE3", "q", "ev"};
    write_run(&t, 5, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    gpuprof_an_wait_totals wt;
    gpuprof_an_cpath_waits(cp, 0, &wt);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_STREAM_WAIT], 1);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_STREAM_WAIT], 10000);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_EVENT_QUERY], 2);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_EVENT_QUERY], 14200);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_STREAM_QUERY], 1);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_STREAM_QUERY], 3200);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_BLAME_SYNC], 1);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_BLAME_SYNC], 500);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_BLAME_KERNEL], 0);
    /* The path skips the polling (a wait): R 1000, L1 200, kE1 10000, kE2
     * 5000, the ready query 900 (from kE2's end), R 900, L3 200, kE3 4000,
     * the ready query 900, R 900, the sync 500, R 500 = 25000. */
    char text[2048];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, "R:1000,<kernel launch>:200,kernel kE1:10000,"
                           "kernel kE2:5000,<kernel launch>:900,R:900,"
                           "<kernel launch>:200,kernel kE3:4000,"
                           "<kernel launch>:900,R:900,<kernel launch>:500,"
                           "R:500,");
    ck_assert_uint_eq(gpuprof_an_cpath_length(cp, 0), 25000);
    /* Blame by kernel context: kE2 14200, kE1 10000, kE3 3200. */
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(db, cp), GPUPROF_OK);
    uint32_t ph = gpuprof_an_db_context_parent(db, ctx_named(db, "kernel kE2"));
    ck_assert_double_eq(metric_at(db, "wait.blame", ph, GPUPROF_AN_EXCLUSIVE),
                        14200);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* The legacy default stream (0): kX (0) on 1 [1200, 11200] by L1 [1000,
 * 1100]; kN (1) on 0 [11200, 13200] by L2 [1100, 1200] waits for kX
 * (NullStream 11200 - 1100 = 10100); kY (2) on 2 [13200, 16200] by L3
 * [1200, 1300] waits for kN (NullStream 13200 - 1200 = 12000); R [0,
 * 16000]. Path: R 1000, L1's launch 200, kX 10000, kN 2000, kY 3000. */
START_TEST(null_stream_exact)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 16000, 1);
    uint64_t l1 = call(&t, 1000, 1100, PH(0));
    uint64_t l2 = call(&t, 1100, 1200, PH(1));
    uint64_t l3 = call(&t, 1200, 1300, PH(2));
    work(&t, 1, 1200, 11200, PH(0), l1);
    work(&t, 0, 11200, 13200, PH(1), l2);
    work(&t, 2, 13200, 16200, PH(2), l3);
    note(&t, l2, 1100, LAUNCH, NULLS, 0, 0);
    static const char *const k[] = {"kX", "kN", "kY"};
    write_run(&t, 3, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    gpuprof_an_wait_totals wt;
    gpuprof_an_cpath_waits(cp, 0, &wt);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_NULL_STREAM], 2);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_NULL_STREAM], 22100);
    char text[2048];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, "R:1000,<kernel launch>:200,kernel kX:10000,"
                           "kernel kN:2000,kernel kY:3000,");
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 16200);
    /* kX twice as fast: the device work 5000 earlier, done by 11200; the
     * thread's R, to 16000, ends the run. */
    const char *rules[] = {"kernel:kX=2"};
    gpuprof_an_cpath *pj;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, rules, 1, NULL, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(pj, 0), 16000);
    gpuprof_an_cpath_free(pj);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* A blocking copy (1) [1100, 7300] behind kernel k0 (0) [1200, 5200] on
 * stream 0; its work [5200, 7200]: BlameKernel once, 6100 ns, blamed 4000
 * on k0 (it ran then) and 2100 on the copy (its own 2000, and the 100
 * before k0 started). */
START_TEST(blocking_copy_split)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 8000, 1);
    uint64_t l = call(&t, 1000, 1100, PH(0));
    uint64_t cp = call(&t, 1100, 7300, PH(1));
    work(&t, 0, 1200, 5200, PH(0), l);
    work(&t, 0, 5200, 7200, PH(1), cp);
    note(&t, cp, 1100, LAUNCH, 0x2u, 0, 0);
    static const char *const k[] = {"k0", "copy"};
    write_run(&t, 2, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *c;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &c), GPUPROF_OK);
    gpuprof_an_wait_totals wt;
    gpuprof_an_cpath_waits(c, 0, &wt);
    ck_assert_uint_eq(wt.count[GPUPROF_AN_WAIT_BLAME_KERNEL], 1);
    ck_assert_uint_eq(wt.ns[GPUPROF_AN_WAIT_BLAME_KERNEL], 6100);
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(db, c), GPUPROF_OK);
    uint32_t p0 = gpuprof_an_db_context_parent(db, ctx_named(db, "kernel k0"));
    uint32_t p1 = gpuprof_an_db_context_parent(db, ctx_named(db, "kernel copy"));
    ck_assert_double_eq(metric_at(db, "wait.blame", p0, GPUPROF_AN_EXCLUSIVE),
                        4000);
    ck_assert_double_eq(metric_at(db, "wait.blame", p1, GPUPROF_AN_EXCLUSIVE),
                        2100);
    ck_assert_double_eq(metric_at(db, "wait.time", p1, GPUPROF_AN_EXCLUSIVE),
                        6100);
    gpuprof_an_cpath_free(c);
    gpuprof_an_db_close(db);
}
END_TEST

/* Format 1.1 (no notes): launches and program order only, no waits. */
START_TEST(no_notes)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 5000, 1);
    uint64_t l1 = call(&t, 1000, 1100, PH(0));
    work(&t, 0, 1200, 9200, PH(0), l1);
    static const char *const k[] = {"k"};
    write_run(&t, 1, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    gpuprof_an_wait_totals wt;
    gpuprof_an_cpath_waits(cp, 0, &wt);
    for (int k2 = 0; k2 < GPUPROF_AN_WAIT_KINDS; k2++)
        ck_assert_uint_eq(wt.count[k2], 0);
    char text[512];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, "R:1000,<kernel launch>:200,kernel k:8000,");
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 9200);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* A note naming a call the trace does not hold. */
START_TEST(damaged_unknown_call)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 5000, 1);
    uint64_t l1 = call(&t, 1000, 1100, PH(0));
    work(&t, 0, 1200, 2200, PH(0), l1);
    note(&t, l1 + 77, 1000, SYNC_DEVICE, 0, GPUPROF_IO_DEP_ALL, 0);
    static const char *const k[] = {"k"};
    write_run(&t, 1, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp = (gpuprof_an_cpath *)1;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp),
                     GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(cp);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                 "a dependency note names an API call"));
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "no critical path"));
    gpuprof_an_db_close(db);
}
END_TEST

/* Two stream waits that contradict each other: K1 (stream 0, launched at
 * 1500) waits for an event recorded after K2 (stream 1, launched at
 * 1000), and K2 for one recorded after K1: a cycle. */
START_TEST(damaged_cycle)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 5000, 1);
    uint64_t w1 = call(&t, 900, 950, PH(2));
    uint64_t l2 = call(&t, 1000, 1100, PH(1));
    uint64_t e2 = call(&t, 1300, 1350, PH(2));
    uint64_t w0 = call(&t, 1400, 1450, PH(2));
    uint64_t l1 = call(&t, 1500, 1550, PH(0));
    uint64_t e1 = call(&t, 2000, 2050, PH(2));
    work(&t, 0, 1600, 2600, PH(0), l1);
    work(&t, 1, 1100, 2100, PH(1), l2);
    note(&t, w1, 900, STREAM_WAIT, 0, 1, e1);
    note(&t, e2, 1300, EVENT_RECORD, 0, 1, 0);
    note(&t, w0, 1400, STREAM_WAIT, 0, 0, e2);
    note(&t, e1, 2000, EVENT_RECORD, 0, 0, 0);
    static const char *const k[] = {"k1", "k2", "ev"};
    write_run(&t, 3, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp = (gpuprof_an_cpath *)1;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp),
                     GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(cp);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "cycle"));
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(bad_rules)
{
    basic_run();
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp, *pj;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    static const char *const bad[] = {"kernel:kA", "kern:kA=2", "kernel:kA=0",
                                      "kernel:=2", "context:x=2",
                                      "kernel:kA=2x"};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(gpuprof_an_cpath_project(cp, &bad[i], 1, NULL, &pj),
                         GPUPROF_E_INVALID);
        ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), bad[i]));
    }
    /* region:cpu=2: the region's 10000 ns become 5000; S2 then waits for
     * kA until 21200 as before: the run is unchanged. */
    const char *r[] = {"region:cpu=2"};
    uint64_t touched;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, r, 1, &touched, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(touched, 1);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(pj, 0), 22000);
    gpuprof_an_cpath_free(pj);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Kernels that share their device (analysis/cpath/device.c). kB runs
 * alone, then beside kA on another stream; as if the device gave the
 * kernels running at once equal shares (kA 3000 ns of work, kB 1000):
 * La [0, 100] launches kB#1 on stream 1 [100, 1100] (alone), Sa [100,
 * 1200] syncs stream 1; Lb [1200, 1300] launches kA on stream 0 [1300,
 * 5300], Lc [1300, 1400] kB#2 on stream 1 [1400, 3400] (kA alone 100 ns,
 * both at half speed until kB's 1000 are done at 3400, kA's last 1900
 * alone); Sb1 [1500, 3500] syncs stream 1, Sb2 [3500, 5400] stream 0; R
 * [0, 5500]. kB took 2000 beside kA against 1000 alone: shared. */
static void shared_run(void)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 5500, 1);
    uint64_t la = call(&t, 0, 100, PH(0));
    uint64_t sa = call(&t, 100, 1200, PH(2));
    uint64_t lb = call(&t, 1200, 1300, PH(1));
    uint64_t lc = call(&t, 1300, 1400, PH(0));
    uint64_t sb1 = call(&t, 1500, 3500, PH(2));
    uint64_t sb2 = call(&t, 3500, 5400, PH(3));
    work(&t, 1, 100, 1100, PH(0), la);
    work(&t, 0, 1300, 5300, PH(1), lb);
    work(&t, 1, 1400, 3400, PH(0), lc);
    note(&t, sa, 100, SYNC_STREAM, 0, 1, 0);
    note(&t, sb1, 1500, SYNC_STREAM, 0, 1, 0);
    note(&t, sb2, 3500, SYNC_STREAM, 0, 0, 0);
    static const char *const k[] = {"kB", "kA", "sync1", "sync0"};
    write_run(&t, 4, k);
}

/* The run projected with the rules: its run time; *m its one device. */
static uint64_t projected_run(gpuprof_an_cpath *cp, const char *const *r,
                              uint32_t n, gpuprof_an_device_model *m)
{
    gpuprof_an_cpath *pj;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, r, n, NULL, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_device_models(pj, m, 1), 1);
    ck_assert_uint_eq(gpuprof_an_cpath_device_models(cp, NULL, 0), 0);
    uint64_t ns = gpuprof_an_cpath_run_ns(pj, 0);
    gpuprof_an_cpath_free(pj);
    return ns;
}

START_TEST(device_shared_exact)
{
    shared_run();
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 5500);
    gpuprof_an_device_model m;
    /* As measured, sharing gives back the measured run. */
    const char *same[] = {"kernel:kA=1"};
    ck_assert_uint_eq(projected_run(cp, same, 1, &m), 5500);
    ck_assert_uint_eq(m.shared, 1);
    ck_assert_uint_eq(m.forced, 0);
    ck_assert_uint_eq(m.kernels, 3);
    ck_assert_uint_eq(m.evidence, 1);
    ck_assert_double_eq(m.slowdown, 2.0);
    /* kA twice as fast (1500 of work): alone to 1400 (100), then half
     * speed beside kB until kB ends at 3400 (1000 more), its last 400
     * alone: [1300, 3800]. Sb1 ends at 3500, Sb2 at 3800 + 100, R at
     * 4000. */
    const char *fast[] = {"kernel:kA=2"};
    ck_assert_uint_eq(projected_run(cp, fast, 1, &m), 4000);
    ck_assert_uint_eq(m.shared, 1);
    /* Overlapping freely, kA would take 2000 ([1300, 3300]): Sb2 ends at
     * 3600, R at 3700, the run 300 ns shorter than sharing allows. */
    const char *free_[] = {"kernel:kA=2", "device:free"};
    ck_assert_uint_eq(projected_run(cp, free_, 2, &m), 3700);
    ck_assert_uint_eq(m.shared, 0);
    ck_assert_uint_eq(m.forced, 1);
    /* kB twice as fast instead: kB#1 [100, 600] lets Sa end at 700 and
     * the later calls start 500 ns sooner: kA from 800, kB#2 from 900;
     * kA alone 100, both at half speed until kB#2's 500 are done at 1900
     * (kA has 600 then), kA's last 2400 alone: [800, 4300]. Sb1 [1000,
     * 2000], Sb2 [2000, 4400], R 4500. */
    const char *both[] = {"kernel:kA=1", "kernel:kB=2"};
    ck_assert_uint_eq(projected_run(cp, both, 2, &m), 4500);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Without a kernel measured both alone and beside others (basic: kA and
 * kB each once), the device stays free: the projection as before; asked
 * to share, kA [1200, 21200] and kB [1400, 6400] had 20000 - 2500 and
 * 2500 of work (they ran at half speed together 1400..6400), and kA at
 * twice the speed (8750) has 2700 of it where they part at 6400, then
 * 6050 alone: [1200, 12450]; S2 [16500, ...] no longer waits for it:
 * ends 16600 as in the free projection, the run 17300 either way. */
START_TEST(device_free_without_evidence)
{
    basic_run();
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    gpuprof_an_device_model m;
    const char *r[] = {"kernel:kA=2"};
    ck_assert_uint_eq(projected_run(cp, r, 1, &m), 17300);
    ck_assert_uint_eq(m.shared, 0);
    ck_assert_uint_eq(m.evidence, 0);
    ck_assert_uint_eq(m.kernels, 2);
    const char *s[] = {"device:shared", "kernel:kA=2"};
    ck_assert_uint_eq(projected_run(cp, s, 2, &m), 17300);
    ck_assert_uint_eq(m.shared, 1);
    ck_assert_uint_eq(m.forced, 1);
    const char *bad[] = {"device:half"};
    gpuprof_an_cpath *pj;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, bad, 1, NULL, &pj),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "device:half"));
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Work that waited for its device (device.c, CP_E_DEVICE): kA on stream
 * 0 [10000, 50000] (La [9000, 10000]); kB launched on stream 1 by Lb
 * [11000, 12000] starts only at 48000, as kA drains, 2000 before kA ends,
 * and runs to 68000; S1 [13000, 69000] syncs stream 1; R [0, 70000].
 * kB's start follows kA's end: the path runs through kA, and with kA
 * twice as fast ([10000, 30000]) kB runs [28000, 48000], S1 ends at
 * 49000, the run at 50000 (without the edge kB would keep its 36000
 * after its launch: 70000). */
START_TEST(device_wait_exact)
{
    tb t = {0};
    corr_n = 0;
    region(&t, 0, 70000, 1);
    uint64_t la = call(&t, 9000, 10000, PH(0));
    uint64_t lb = call(&t, 11000, 12000, PH(1));
    uint64_t s1 = call(&t, 13000, 69000, PH(2));
    work(&t, 0, 10000, 50000, PH(0), la);
    work(&t, 1, 48000, 68000, PH(1), lb);
    note(&t, s1, 13000, SYNC_STREAM, 0, 1, 0);
    static const char *const k[] = {"kA", "kB", "sync1"};
    write_run(&t, 3, k);
    gpuprof_an_db *db = open_db();
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 70000);
    char text[2048];
    path_text(cp, text, sizeof(text));
    /* kA whole, kB less the 2000 it ran beside kA (counted once) */
    ck_assert_str_eq(text, "R:9000,<kernel launch>:1000,kernel kA:40000,"
                           "kernel kB:18000,<kernel launch>:1000,R:1000,");
    gpuprof_an_device_model m;
    const char *r[] = {"kernel:kA=2"};
    ck_assert_uint_eq(projected_run(cp, r, 1, &m), 50000);
    ck_assert_uint_eq(m.shared, 0); /* no evidence, no launch sizes */
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"basic_exact", basic_exact, 20},
        {"advice_ranked_by_run", advice_ranked_by_run, 30},
        {"events_exact", events_exact, 20},
        {"null_stream_exact", null_stream_exact, 20},
        {"blocking_copy_split", blocking_copy_split, 20},
        {"no_notes", no_notes, 20},
        {"damaged_unknown_call", damaged_unknown_call, 20},
        {"damaged_cycle", damaged_cycle, 20},
        {"bad_rules", bad_rules, 20},
        {"device_shared_exact", device_shared_exact, 20},
        {"device_free_without_evidence", device_free_without_evidence, 20},
        {"device_wait_exact", device_wait_exact, 20},
    };
    return RUN_SUITE("an_cpath", cases);
}
