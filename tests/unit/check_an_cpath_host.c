/*
 * check_an_cpath_host.c - host threads in the trace analysis
 * (analysis/cpath/host.c) on hand-made traces (tests/support/mkprofile,
 * the lib/io trace writer's HOST_RECORDS) whose answers are computed by
 * hand in the comments: a join, a barrier, a mutex hand-off, a condition
 * variable hand-off, an OpenMP parallel region with its barriers and an
 * idle worker, a taskwait; each with its wait states, blame, critical
 * path step by step and a projection. Releases no one waited for, and a
 * timed wait that timed out, make no edge. Host records of an unknown
 * kind are refused.
 *
 * Threads: k = 0 "main", 1 "t1", 2 "t2" (tid 100 + k, seq k); each has
 * its own regions, node 1 + i for its i-th name. Times are ns.
 *
 * Device work (gpu_blocking_read_join): thread gk launches it; beneath
 * its first region, per kernel p a call site, its placeholder (node
 * GPH(nregions, p), the launch's and the work's node) and the kernel; on
 * device 0 stream 0, with gk's dependency notes.
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

#define NT 3
enum { CREATE = 1, START, EXIT, JOIN, BARRIER, LOCK, UNLOCK, COND_WAIT,
       SIGNAL, FORK, IDLE, TASKWAIT, TASK_END };
#define OMP GPUPROF_IO_HOST_OMP
#define ARRIVAL GPUPROF_IO_HOST_ARRIVAL

typedef struct ht { /* a trace being made */
    const char *names[NT][6]; /* each thread's region names */
    gpuprof__io_trace_rec reg[NT][16], ops[4];
    gpuprof__io_host_rec host[NT][16];
    uint32_t nreg[NT], nhost[NT], nops; /* ops: gk's GPU API calls */
    gpuprof__io_trace_rec gpu[8], deps[8];
    const char *kernels[8];
    uint32_t ngpu, ndeps, nk, gk;
    /* CPU samples: thread k's frame f, of /usr/lib/libw.so at offset
     * 0x10 * (1 + f + 4 k), beneath a region (its node, 0 the root), is
     * node 1 + (its regions) + (gk: its GPU nodes) + f; samples (time,
     * cpu.time ns, frame) */
    uint32_t fparent[NT][4], nframe[NT];
    gpuprof__io_trace_rec smp[NT][8];
    uint32_t nsmp[NT];
} ht;

/* Thread gk's placeholder of kernel p, after its nr regions. */
#define GPH(nr, p) ((nr) + 2u + 3u * (p))

/* Thread gk's call sites, placeholders and kernels (GPH). */
static void gpu_nodes(const ht *t, tp_builder *b, uint32_t nr)
{
    uint32_t mod = t->nk ? tp_module(b, "/bin/app") : 0;
    for (uint32_t p = 0; p < t->nk; p++) {
        ck_assert_uint_eq(tp_frame(b, 1, mod, 0x100 + 16 * p), GPH(nr, p) - 1);
        ck_assert_uint_eq(tp_gpu_op(b, GPH(nr, p) - 1, 1), GPH(nr, p));
        ck_assert_uint_eq(tp_kernel(b, GPH(nr, p), t->kernels[p], UINT32_MAX),
                          GPH(nr, p) + 1);
    }
}

static char dir[512], dbdir[600];

/* Thread k's region `name` over [s, e). */
static void region(ht *t, uint32_t k, const char *name, uint64_t s, uint64_t e)
{
    uint32_t i = 0;
    while (t->names[k][i] && strcmp(t->names[k][i], name))
        i++;
    t->names[k][i] = name;
    t->reg[k][t->nreg[k]++] =
        (gpuprof__io_trace_rec){s, e, (uint64_t)k << 32 | (1 + i), 0};
}

static void host(ht *t, uint32_t k, uint8_t op, uint8_t flags, uint64_t s,
                 uint64_t e, uint64_t object, uint64_t aux)
{
    t->host[k][t->nhost[k]++] =
        (gpuprof__io_host_rec){s, e, object, aux, op, flags};
}

static void write_run(const ht *t)
{
    snprintf(dir, sizeof(dir), "%s/ch.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[700];
    static const char *const thread[NT] = {"main", "t1", "t2"};
    tp_builder *b = tp_new("host", 10, 0);
    uint32_t mod = tp_module(b, "/usr/lib/libw.so");
    uint32_t m = tp_metric(b, "cpu.time", GPUPROF_IO_UNIT_NS,
                           GPUPROF_IO_KIND_CPU);
    uint32_t frame0[NT];
    for (uint32_t k = 0; k < NT; k++) {
        tp_thread(b, thread[k], k ? 0 : GPUPROF_IO_THREAD_MAIN);
        uint32_t i = 0;
        for (; i < 6 && t->names[k][i]; i++)
            ck_assert_uint_eq(tp_region(b, 0, t->names[k][i], 1, 1, 1), 1 + i);
        if (k == t->gk)
            gpu_nodes(t, b, i);
        frame0[k] = 1 + i + (k == t->gk ? 3 * t->nk : 0);
        for (uint32_t f = 0; f < t->nframe[k]; f++)
            ck_assert_uint_eq(tp_frame(b, t->fparent[k][f], mod,
                                       0x10 * (1 + f + 4 * k)),
                              frame0[k] + f);
    }
    tp_times(b, 0, 100000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    static uint8_t buf[65536];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    for (uint32_t k = 0; k < NT; k++) {
        off += gpuprof__io_trace_thread_chunk(buf + off, k, 100 + k,
                                              thread[k]);
        if (t->nreg[k])
            off += gpuprof__io_trace_records(buf + off, 0, 0, k, t->reg[k],
                                             t->nreg[k]);
        if (t->nhost[k])
            off += gpuprof__io_trace_host_records(buf + off, k, t->host[k],
                                                  t->nhost[k]);
        if (k == t->gk && t->nops)
            off += gpuprof__io_trace_corr_records(buf + off, 0, 0, k, t->ops,
                                                  t->nops);
        if (k == t->gk && t->ndeps)
            off += gpuprof__io_trace_dep_records(buf + off, 0, k, t->deps,
                                                 t->ndeps);
        gpuprof__io_trace_rec smp[8];
        for (uint32_t i = 0; i < t->nsmp[k]; i++) /* frame f: its node */
            smp[i] = (gpuprof__io_trace_rec){
                t->smp[k][i].start_ns, t->smp[k][i].end_ns,
                (uint64_t)k << 32 | (frame0[k] + t->smp[k][i].context), m};
        if (t->nsmp[k])
            off += gpuprof__io_trace_sample_records(buf + off, smp,
                                                    t->nsmp[k]);
    }
    if (t->ngpu)
        off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU,
                                              0, 0, t->gpu, t->ngpu);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gptrace", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
    fclose(f);
    ap_analyze(dir, dbdir, sizeof(dbdir));
}

/* Blame by name: cb of gpuprof_an_cpath_print_waits is not public, so the
 * metric wait.blame at the region's context. */
static double blamed(gpuprof_an_db *db, const char *region)
{
    uint32_t m, c;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "wait.blame",
                                               GPUPROF_AN_EXCLUSIVE, &m),
                     GPUPROF_OK);
    double sum = 0;
    for (c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (!strcmp(gpuprof_an_db_context_name(db, c), region))
            sum += gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_SUM);
    return sum;
}

/* wait.blame at the placeholder above the context named `kernel`. */
static double placeholder_blame(gpuprof_an_db *db, const char *kernel)
{
    uint32_t m, c = 0, n = gpuprof_an_db_context_count(db);
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "wait.blame",
                                               GPUPROF_AN_EXCLUSIVE, &m),
                     GPUPROF_OK);
    while (c < n && strcmp(gpuprof_an_db_context_name(db, c), kernel))
        c++;
    ck_assert_uint_lt(c, n);
    return gpuprof_an_db_stat(db, gpuprof_an_db_context_parent(db, c), m,
                              GPUPROF_AN_STAT_SUM);
}

/* Metric m (variant) summed over the contexts named `name`, all
 * profiles. */
static double at_named(gpuprof_an_db *db, const char *m, gpuprof_an_variant v,
                       const char *name)
{
    uint32_t id;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, m, v, &id), GPUPROF_OK);
    double sum = 0;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (!strcmp(gpuprof_an_db_context_name(db, c), name))
            sum += gpuprof_an_db_stat(db, c, id, GPUPROF_AN_STAT_SUM);
    return sum;
}

typedef struct analysed {
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp;
    gpuprof_an_wait_totals w;
    char path[1024];
} analysed;

static void analyse(analysed *x)
{
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &x->db), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_cpath_new(x->db, NULL, NULL, &x->cp),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_process_count(x->cp), 1);
    ck_assert_int_eq(gpuprof_an_cpath_waits(x->cp, 0, &x->w), GPUPROF_OK);
    ap_path_text(x->cp, 0, x->path, sizeof(x->path));
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(x->db, x->cp),
                     GPUPROF_OK);
}

/* The run projected with `rule`: its run time. */
static uint64_t projected(const analysed *x, const char *rule)
{
    gpuprof_an_cpath *pj;
    uint64_t touched;
    ck_assert_int_eq(gpuprof_an_cpath_project(x->cp, &rule, 1, &touched, &pj),
                     GPUPROF_OK);
    ck_assert_uint_gt(touched, 0);
    uint64_t run = gpuprof_an_cpath_run_ns(pj, 0);
    gpuprof_an_cpath_free(pj);
    return run;
}

static void done(analysed *x)
{
    gpuprof_an_cpath_free(x->cp);
    gpuprof_an_db_close(x->db);
}

/* Only kind k has waits: count and ns. */
static void only_waits(const gpuprof_an_wait_totals *w, int k, uint64_t count,
                       uint64_t ns)
{
    for (int i = 0; i < GPUPROF_AN_WAIT_KINDS; i++) {
        ck_assert_uint_eq(w->count[i], i == k ? count : 0);
        ck_assert_uint_eq(w->ns[i], i == k ? ns : 0);
    }
}

/* join_exact's trace (below). */
static void join_trace(ht *t)
{
    region(t, 0, "R", 0, 10000);
    host(t, 0, CREATE, 0, 1000, 1100, 0xA1, 1);
    host(t, 0, JOIN, 0, 2000, 7500, 0xA1, 0);
    host(t, 1, START, 0, 1200, 1200, 0xA1, 1);
    region(t, 1, "W", 1300, 7200);
    host(t, 1, EXIT, 0, 7300, 7300, 0xA1, 0);
}

/* join: main R [0, 10000] creates t1 [1000, 1100] (creation 1, thread
 * 0xA1) and joins it [2000, 7500]; t1 starts at 1200, W [1300, 7200],
 * exits at 7300. WaitAtJoin [2000, 7300) = 5300, blamed on what t1 ran:
 * W 5200, its root 100. Path: R 1000, the creation 200 (create to start,
 * the creating call's), t1 100, W 5900, 100, the join after the exit 200,
 * R 2500 = 10000. W twice as fast: t1 exits at 4350, the join returns at
 * 4550, the run ends at 7050. */
START_TEST(join_exact)
{
    ht t = {0};
    join_trace(&t);
    write_run(&t);
    analysed x;
    analyse(&x);
    only_waits(&x.w, GPUPROF_AN_WAIT_AT_JOIN, 1, 5300);
    ck_assert_str_eq(x.path, "R:1000,pthread_create:200,<no region>:100,"
                             "W:5900,<no region>:100,pthread_join:200,"
                             "R:2500,");
    ck_assert_uint_eq(gpuprof_an_cpath_length(x.cp, 0), 10000);
    ck_assert_double_eq(blamed(x.db, "W"), 5200);
    ck_assert_uint_eq(projected(&x, "region:W=2"), 7050);
    done(&x);
}
END_TEST

/* barrier 0xB0: main M [0, 2000] arrives at 2000 (leaves 6100, then M2
 * [6100, 7000]); t1 A [0, 3000] at 3000 (leaves 6050, A2 [6050, 6500]);
 * t2 B [0, 6000] at 6000, the last (leaves 6080, B2 [6080, 8000]).
 * WaitAtBarrier x2: main 4000 + t1 3000, all blamed on B. Path: B 6000,
 * t2's own 80, B2 1920 = 8000. B twice as fast: t2 and t1 arrive at 3000,
 * t2 leaves 80 later, B2 ends at 5000 = the run. */
START_TEST(barrier_exact)
{
    ht t = {0};
    region(&t, 0, "M", 0, 2000);
    host(&t, 0, BARRIER, 0, 2000, 6100, 0xB0, 0);
    region(&t, 0, "M2", 6100, 7000);
    region(&t, 1, "A", 0, 3000);
    host(&t, 1, BARRIER, 0, 3000, 6050, 0xB0, 0);
    region(&t, 1, "A2", 6050, 6500);
    region(&t, 2, "B", 0, 6000);
    host(&t, 2, BARRIER, 0, 6000, 6080, 0xB0, 0);
    region(&t, 2, "B2", 6080, 8000);
    write_run(&t);
    analysed x;
    analyse(&x);
    only_waits(&x.w, GPUPROF_AN_WAIT_AT_BARRIER, 2, 7000);
    ck_assert_str_eq(x.path, "B:6000,pthread_barrier_wait:80,B2:1920,");
    ck_assert_double_eq(blamed(x.db, "B"), 7000);
    ck_assert_uint_eq(projected(&x, "region:B=2"), 5000);
    done(&x);
}
END_TEST

/* mutex 0x3C: main R [0, 8000] releases it at 500 (no one waited: a
 * record of a hashed collision) and at 5000; t1 C [0, 1000] blocks in the
 * lock [1000, 5200], D [5200, 9000], releases at 9000 itself. Only the
 * release at 5000 falls in the wait: LockContention [1000, 5000) = 4000,
 * blamed on R (main held it). Path: R 500, R 4500 (the moments split it),
 * the lock after the release 200, D 3800 = 9000. R twice as fast: the
 * release at 2500, the lock at 2700, D to 6500. */
START_TEST(mutex_exact)
{
    ht t = {0};
    region(&t, 0, "R", 0, 8000);
    host(&t, 0, UNLOCK, 0, 500, 500, 0x3C, 0);
    host(&t, 0, UNLOCK, 0, 5000, 5000, 0x3C, 0);
    region(&t, 1, "C", 0, 1000);
    host(&t, 1, LOCK, 0, 1000, 5200, 0x3C, 0);
    region(&t, 1, "D", 5200, 9000);
    host(&t, 1, UNLOCK, 0, 9000, 9000, 0x3C, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    only_waits(&x.w, GPUPROF_AN_WAIT_LOCK_CONTENTION, 1, 4000);
    ck_assert_str_eq(x.path, "R:500,R:4500,pthread_mutex_lock (blocked):200,"
                             "D:3800,");
    ck_assert_double_eq(blamed(x.db, "R"), 4000);
    ck_assert_uint_eq(projected(&x, "region:R=2"), 6500);
    done(&x);
}
END_TEST

/* condition 0xC0 (mutex 0x3C): main R [0, 10000] waits [1000, 6300]; t1
 * P [0, 6000] signals at 6000, Q [6000, 7000], signals again at 7200
 * while main's timed wait [6500, 7500] times out (no edge). WaitAtCondition
 * [1000, 6000) = 5000, blamed on P. Path: P 6000, the wait after the
 * signal 300, R 200, the timed wait 1000 (its own time), R 2500 = 10000.
 * P twice as fast: main's wait returns at 3300, the rest follows: 7000. */
START_TEST(cond_exact)
{
    ht t = {0};
    region(&t, 0, "R", 0, 10000);
    host(&t, 0, COND_WAIT, 0, 1000, 6300, 0xC0, 0x3C);
    host(&t, 0, COND_WAIT, GPUPROF_IO_HOST_TIMEOUT, 6500, 7500, 0xC0, 0x3C);
    region(&t, 1, "P", 0, 6000);
    host(&t, 1, SIGNAL, 0, 6000, 6000, 0xC0, 0);
    region(&t, 1, "Q", 6000, 7000);
    host(&t, 1, SIGNAL, 0, 7200, 7200, 0xC0, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    only_waits(&x.w, GPUPROF_AN_WAIT_AT_CONDITION, 1, 5000);
    ck_assert_str_eq(x.path, "P:6000,pthread_cond_wait:300,R:200,"
                             "pthread_cond_wait:1000,R:2500,");
    ck_assert_double_eq(blamed(x.db, "P"), 5000);
    ck_assert_uint_eq(projected(&x, "region:P=2"), 7000);
    done(&x);
}
END_TEST

/* OpenMP: main (the master) R [0, 12000] forks region 7 at 1000 (M [1000,
 * 4000], explicit barrier [4000, 6000], M [6000, 8000], implicit barrier
 * [8000, 9100]) and region 8 at 10000 (M3 [10000, 11000], barrier [11000,
 * 11600]). Worker t1: idle [500, 1200] for region 7, W1 [1200, 5900],
 * barrier [5900, 6050] (last), W2 [6050, 9000], arrives at region 7's
 * last barrier at 9000 (last: LLVM says no more, its wait is the idle
 * that follows), idle [9000, 10100] for region 8, W3 [10100, 11500],
 * arrives at 11500 (last). WaitAtBarrier x3: main 1900 + 1000 + 500 =
 * 3400 (blamed on W1 1900, W2 1000, W3 500); WaitAtFork x2: t1 500 +
 * 1000 = 1500 (blamed on main: R 500 + 900 and the last 100 of its
 * barrier, in R too). The path
 * goes back and forth: R 1000, t1's idle after the fork 200, W1 4700,
 * t1's barrier 150, W2 2950, main's barrier after t1's arrival 100, R
 * 900, t1's idle 100, W3 1400, main's barrier 100, R 400 = 12000. */
START_TEST(openmp_exact)
{
    ht t = {0};
    region(&t, 0, "R", 0, 12000);
    host(&t, 0, FORK, OMP, 1000, 1000, 7, 2);
    region(&t, 0, "M", 1000, 4000);
    host(&t, 0, BARRIER, OMP, 4000, 6000, 7, 0);
    region(&t, 0, "M", 6000, 8000);
    host(&t, 0, BARRIER, OMP, 8000, 9100, 7, 0);
    host(&t, 0, FORK, OMP, 10000, 10000, 8, 2);
    region(&t, 0, "M3", 10000, 11000);
    host(&t, 0, BARRIER, OMP, 11000, 11600, 8, 0);
    host(&t, 1, IDLE, OMP, 500, 1200, 7, 1);
    region(&t, 1, "W1", 1200, 5900);
    host(&t, 1, BARRIER, OMP, 5900, 6050, 7, 0);
    region(&t, 1, "W2", 6050, 9000);
    host(&t, 1, BARRIER, OMP | ARRIVAL, 9000, 9000, 7, 0);
    host(&t, 1, IDLE, OMP, 9000, 10100, 8, 1);
    region(&t, 1, "W3", 10100, 11500);
    host(&t, 1, BARRIER, OMP | ARRIVAL, 11500, 11500, 8, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    for (int i = 0; i < GPUPROF_AN_WAIT_KINDS; i++)
        if (i != GPUPROF_AN_WAIT_AT_BARRIER && i != GPUPROF_AN_WAIT_AT_FORK)
            ck_assert_uint_eq(x.w.count[i], 0);
    ck_assert_uint_eq(x.w.count[GPUPROF_AN_WAIT_AT_BARRIER], 3);
    ck_assert_uint_eq(x.w.ns[GPUPROF_AN_WAIT_AT_BARRIER], 3400);
    ck_assert_uint_eq(x.w.count[GPUPROF_AN_WAIT_AT_FORK], 2);
    ck_assert_uint_eq(x.w.ns[GPUPROF_AN_WAIT_AT_FORK], 1500);
    ck_assert_str_eq(x.path, "R:1000,OpenMP idle:200,W1:4700,"
                             "OpenMP barrier:150,W2:2950,OpenMP barrier:100,"
                             "R:900,OpenMP idle:100,W3:1400,"
                             "OpenMP barrier:100,R:400,");
    ck_assert_uint_eq(gpuprof_an_cpath_length(x.cp, 0), 12000);
    ck_assert_double_eq(blamed(x.db, "W1"), 1900);
    ck_assert_double_eq(blamed(x.db, "W2"), 1000);
    ck_assert_double_eq(blamed(x.db, "W3"), 500);
    ck_assert_double_eq(blamed(x.db, "R"), 1500);
    done(&x);
}
END_TEST

/* OpenMP, a worker early at the barrier that ends a region: main R [0,
 * 10000] forks region 3 at 1000 (M [1000, 5000], its last barrier [5000,
 * 5100], the last to arrive) and region 4 at 7000 (M4 [7000, 8000],
 * barrier [8000, 8100], the last again). Worker t1: idle [500, 1100] for
 * region 3, W [1100, 2000], arrives at 2000, idle [2000, 7100] for region
 * 4, W4 [7100, 7900], arrives at 7900 (LLVM tells no more: its wait
 * there is not seen). The idle after its arrival waits first for main's
 * arrival at 5000 (WaitAtBarrier 3000, blamed on M), then for the fork at
 * 7000 (WaitAtFork 2000, blamed on R: main's barrier 100, R 1900); the
 * first idle waits 500 for the first fork (R). The path stays on main:
 * R 1000, M 4000, its barrier 100, R 1900, M4 1000, its barrier 100, R
 * 1900. */
START_TEST(openmp_early_worker)
{
    ht t = {0};
    region(&t, 0, "R", 0, 10000);
    host(&t, 0, FORK, OMP, 1000, 1000, 3, 2);
    region(&t, 0, "M", 1000, 5000);
    host(&t, 0, BARRIER, OMP, 5000, 5100, 3, 0);
    host(&t, 0, FORK, OMP, 7000, 7000, 4, 2);
    region(&t, 0, "M4", 7000, 8000);
    host(&t, 0, BARRIER, OMP, 8000, 8100, 4, 0);
    host(&t, 1, IDLE, OMP, 500, 1100, 3, 1);
    region(&t, 1, "W", 1100, 2000);
    host(&t, 1, BARRIER, OMP | ARRIVAL, 2000, 2000, 3, 0);
    host(&t, 1, IDLE, OMP, 2000, 7100, 4, 1);
    region(&t, 1, "W4", 7100, 7900);
    host(&t, 1, BARRIER, OMP | ARRIVAL, 7900, 7900, 4, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    ck_assert_uint_eq(x.w.count[GPUPROF_AN_WAIT_AT_BARRIER], 1);
    ck_assert_uint_eq(x.w.ns[GPUPROF_AN_WAIT_AT_BARRIER], 3000);
    ck_assert_uint_eq(x.w.count[GPUPROF_AN_WAIT_AT_FORK], 2);
    ck_assert_uint_eq(x.w.ns[GPUPROF_AN_WAIT_AT_FORK], 2500);
    ck_assert_str_eq(x.path, "R:1000,M:4000,OpenMP barrier:100,R:1900,"
                             "M4:1000,OpenMP barrier:100,R:1900,");
    ck_assert_double_eq(blamed(x.db, "M"), 3000);
    ck_assert_double_eq(blamed(x.db, "R"), 2500);
    done(&x);
}
END_TEST

/* taskwait of task 5: main R [0, 5000] waits [1000, 4000]; t1 runs the
 * child T [500, 3500], which ends at 3500. WaitAtJoin [1000, 3500) =
 * 2500, blamed on T. Path: T 3000, the taskwait after the end 500, R 1000
 * (t1's lane begins at 500: the path's length is 4500 of a 5000 run). */
START_TEST(taskwait_exact)
{
    ht t = {0};
    region(&t, 0, "R", 0, 5000);
    host(&t, 0, TASKWAIT, OMP, 1000, 4000, 5, 0);
    region(&t, 1, "T", 500, 3500);
    host(&t, 1, TASK_END, OMP, 3500, 3500, 5, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    only_waits(&x.w, GPUPROF_AN_WAIT_AT_JOIN, 1, 2500);
    ck_assert_str_eq(x.path, "T:3000,OpenMP taskwait:500,R:1000,");
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(x.cp, 0), 5000);
    ck_assert_double_eq(blamed(x.db, "T"), 2500);
    done(&x);
}
END_TEST

/* The wait of a device stream's blocking read, inside a join (issue 23:
 * jacobi blamed the read's copy for the kernels queued ahead of it). main
 * R [0, 10000] creates t1 [100, 200] and joins it [1000, 9500]; t1 starts
 * at 300, G [300, 9200], launches k0, k1, k2 ([400, 500], [500, 600],
 * [600, 700]) and a blocking read [700, 9000], exits at 9100. Stream 0:
 * k0 [1000, 3000], k1 [3000, 5500], k2 [5600, 8000], the copy [8000,
 * 8800].
 *   t1's BlameKernel [700, 8800) = 8100: k0 2000, k1 2500, k2 2400, the
 *   copy its 800 and the stream's gaps (300 before k0, 100 before k2).
 *   main's WaitAtJoin [1000, 9100) = 8100: t1 ran the read [1000, 9000)
 *   and G [9000, 9100). The read's part while the stream ran (to 8800)
 *   goes to the same kernels as they overlap it: k0 2000, k1 2500, k2
 *   2400, the copy 800 and the gap 100; its return [8800, 9000) to the
 *   read call (200, the copy's placeholder too); G 100.
 * wait.blame at the placeholders: k0 4000, k1 5000, k2 4800, the copy
 * 1200 + 900 + the call's 200 = 2300 (all on the copy, 8000 of the join
 * among them, before the fix). */
START_TEST(gpu_blocking_read_join)
{
    ht t = {.gk = 1, .nk = 4, .kernels = {"k0", "k1", "k2", "copy"}};
    region(&t, 0, "R", 0, 10000);
    host(&t, 0, CREATE, 0, 100, 200, 0xA1, 1);
    host(&t, 0, JOIN, 0, 1000, 9500, 0xA1, 0);
    host(&t, 1, START, 0, 300, 300, 0xA1, 1);
    region(&t, 1, "G", 300, 9200);
    host(&t, 1, EXIT, 0, 9100, 9100, 0xA1, 0);
    static const uint64_t call[4][2] = {{400, 500}, {500, 600}, {600, 700},
                                        {700, 9000}};
    static const uint64_t dev[4][2] = {{1000, 3000}, {3000, 5500},
                                       {5600, 8000}, {8000, 8800}};
    for (uint32_t p = 0; p < 4; p++) {
        uint64_t c = 1ull << 40 | (1 + p), node = 1ull << 32 | GPH(1, p);
        t.ops[t.nops++] = (gpuprof__io_trace_rec){call[p][0], call[p][1],
                                                  node, c};
        t.gpu[t.ngpu++] = (gpuprof__io_trace_rec){dev[p][0], dev[p][1],
                                                  node, c};
    }
    t.deps[t.ndeps++] = (gpuprof__io_trace_rec){
        700, 0, GPUPROF_IO_DEP_INFO(8 /* LAUNCH */, 0x2u /* blocking */, 0, 0),
        1ull << 40 | 4};
    write_run(&t);
    analysed x;
    analyse(&x);
    for (int i = 0; i < GPUPROF_AN_WAIT_KINDS; i++) {
        bool mine = i == GPUPROF_AN_WAIT_BLAME_KERNEL ||
                    i == GPUPROF_AN_WAIT_AT_JOIN;
        ck_assert_uint_eq(x.w.count[i], mine ? 1 : 0);
        ck_assert_uint_eq(x.w.ns[i], mine ? 8100 : 0);
    }
    static const double want[4] = {4000, 5000, 4800, 2300};
    for (uint32_t p = 0; p < 4; p++) {
        char name[32];
        snprintf(name, sizeof(name), "kernel %s", t.kernels[p]);
        ck_assert_double_eq(placeholder_blame(x.db, name), want[p]);
    }
    ck_assert_double_eq(blamed(x.db, "G"), 100);
    done(&x);
}
END_TEST

/* A lock that blocked inside a GPU API call of its thread (a runtime's
 * callback running user code there): left out, said once in the report;
 * the call and the rest are as measured. main R [0, 5000], the call
 * [1000, 2000] (its own context R), the lock [1200, 1500]. */
START_TEST(inside_a_call_left_out)
{
    ht t = {0};
    region(&t, 0, "R", 0, 5000);
    t.ops[t.nops++] = (gpuprof__io_trace_rec){1000, 2000, 1, 1ull << 40 | 1};
    host(&t, 0, LOCK, 0, 1200, 1500, 0x3C, 0);
    write_run(&t);
    analysed x;
    analyse(&x);
    ck_assert_str_eq(x.path, "R:1000,R:1000,R:3000,"); /* R, the call, R */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_cpath_print_path(x.cp, f, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "note, process 0: 1 host record(s) "
                                       "left out"));
    free(text);
    done(&x);
}
END_TEST

/* A host record of a kind the reader does not know: refused, named. */
START_TEST(unknown_op_refused)
{
    ht t = {0};
    region(&t, 0, "R", 0, 1000);
    host(&t, 0, 99, 0, 100, 200, 1, 0);
    write_run(&t);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    gpuprof_an_cpath *cp = NULL;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp),
                     GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                 "host record of an unknown kind"));
    ck_assert_ptr_null(cp);
    gpuprof_an_db_close(db);
}
END_TEST


/* Thread k's frame f beneath its region `in` (NULL: the root). */
static void frame(ht *t, uint32_t k, const char *in)
{
    uint32_t i = 0;
    while (in && t->names[k][i] && strcmp(t->names[k][i], in))
        i++;
    t->fparent[k][t->nframe[k]++] = in ? 1 + i : 0;
}

static void sample(ht *t, uint32_t k, uint64_t at, uint64_t ns, uint32_t f)
{
    t->smp[k][t->nsmp[k]++] = (gpuprof__io_trace_rec){at, ns, f, 0};
}

/* CPU samples name the CPU steps of join_exact's path (the procedure
 * most of their time was in, in its region), what `report
 * --critical-path` prints beneath them, and the ratings (path + blame
 * under one name). main: frame 0x10 in R, sampled at 500 (700 ns) and at
 * 5000 (50 ns, inside the join: no CPU step); t1: 0x50 and 0x60 in W,
 * 0x70 at its root; 0x50 at 2000 and 3000 (300 ns each), 0x60 at 4000
 * (500), 0x70 at 7250 (100). Steps: R [0, 1000] is "0x10 in R" (1 sample,
 * 700 ns); W [1300, 7200] "0x50 in W" (0x50: 2 samples 600 ns 54.5 %,
 * 0x60: 1, 500 ns 45.5 %); t1's root [7200, 7300] "0x70"; R [7500,
 * 10000] no sample: "R". The join's wait (5300) is blamed on t1's W
 * (5200, named by all its samples: "0x50 in W", rated 0.590 + 5200/5300)
 * and on its root piece before the exit (100: "0x70", 0.010 + 0.019).
 * cpath.time in the database follows the samples the same way. */
START_TEST(samples_name_steps)
{
    ht t = {0};
    join_trace(&t);
    frame(&t, 0, "R");
    sample(&t, 0, 500, 700, 0);
    sample(&t, 0, 5000, 50, 0);
    frame(&t, 1, "W");
    frame(&t, 1, "W");
    frame(&t, 1, NULL);
    sample(&t, 1, 2000, 300, 0);
    sample(&t, 1, 3000, 300, 0);
    sample(&t, 1, 4000, 500, 1);
    sample(&t, 1, 7250, 100, 2);
    write_run(&t);
    analysed x;
    analyse(&x);
    ck_assert_str_eq(x.path, "libw.so+0x10:1000,pthread_create:200,"
                             "<no region>:100,libw.so+0x50:5900,"
                             "libw.so+0x70:100,pthread_join:200,R:2500,");
    gpuprof_an_path_step st[7];
    char name[128];
    ck_assert_uint_eq(gpuprof_an_cpath_steps(x.cp, 0, 0, st, 7), 7);
    ck_assert_str_eq(gpuprof_an_cpath_step_name(x.cp, &st[3], name,
                                                sizeof(name)),
                     "libw.so+0x50 in W");
    gpuprof_an_sampled v[3] = {{0}};
    ck_assert_uint_eq(gpuprof_an_cpath_step_samples(x.cp, &st[3], v, 1), 2);
    ck_assert_uint_eq(v[1].samples, 0); /* max 1: one written */
    ck_assert_uint_eq(gpuprof_an_cpath_step_samples(x.cp, &st[3], v, 3), 2);
    ck_assert_str_eq(gpuprof_an_db_context_name(x.db, v[0].context),
                     "libw.so+0x50");
    ck_assert_uint_eq(v[0].samples, 2);
    ck_assert_uint_eq(v[0].ns, 600);
    ck_assert_str_eq(gpuprof_an_db_context_name(x.db, v[1].context),
                     "libw.so+0x60");
    ck_assert_uint_eq(v[1].samples, 1);
    ck_assert_uint_eq(v[1].ns, 500);
    ck_assert_uint_eq(gpuprof_an_cpath_step_samples(x.cp, &st[0], v, 3), 1);
    ck_assert_uint_eq(v[0].ns, 700); /* not the one inside the join */
    for (int i = 5; i < 7; i++) /* the join (no CPU work), R unsampled */
        ck_assert_uint_eq(gpuprof_an_cpath_step_samples(x.cp, &st[i], v, 3),
                          0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_cpath_print_path(x.cp, f, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "  sampled (3): libw.so+0x50  54.5%, "
                                       "libw.so+0x60  45.5%\n"));
    ck_assert_ptr_nonnull(strstr(text, "  sampled (1): libw.so+0x10 100.0%\n"));
    ck_assert_ptr_nonnull(strstr(text, "   0.590  0.981  1.571  libw.so+0x50 "
                                       "in W\n"));
    ck_assert_ptr_nonnull(strstr(text, "   0.010  0.019  0.029  "
                                       "libw.so+0x70\n"));
    ck_assert_ptr_null(strstr(text, "  W\n")); /* no rating of W alone */
    free(text);
    /* cpath.time in the views: a sampled step's path time at the
     * procedures its samples saw, in proportion (W's 5900 ns: 600/1100 to
     * 0x50, 500/1100 to 0x60), an unsampled one at its region */
    const gpuprof_an_variant E = GPUPROF_AN_EXCLUSIVE, I = GPUPROF_AN_INCLUSIVE;
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "libw.so+0x10"),
                            1000, 1e-6);
    /* R: its unsampled 2500 and the calls pthread_create and join (200
     * each) made in it */
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "R"), 2900, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", I, "R"), 3900, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "libw.so+0x50"),
                            5900.0 * 600 / 1100, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "libw.so+0x60"),
                            5900.0 * 500 / 1100, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "W"), 0, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", I, "W"), 5900, 1e-6);
    ck_assert_double_eq_tol(at_named(x.db, "cpath.time", E, "libw.so+0x70"),
                            100, 1e-6);
    ck_assert_uint_eq(projected(&x, "region:W=2"), 7050);
    done(&x);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"join", join_exact, 30},
        {"barrier", barrier_exact, 30},
        {"mutex", mutex_exact, 30},
        {"cond", cond_exact, 30},
        {"openmp", openmp_exact, 30},
        {"openmp early worker", openmp_early_worker, 30},
        {"taskwait", taskwait_exact, 30},
        {"gpu blocking read join", gpu_blocking_read_join, 30},
        {"inside a call", inside_a_call_left_out, 30},
        {"unknown op", unknown_op_refused, 30},
        {"samples name steps", samples_name_steps, 30},
    };
    return RUN_SUITE("an_cpath_host", cases);
}
