/*
 * check_an_cpath_mpi.c - the critical path across MPI ranks (analysis/cpath
 * ranks.c, messages.c) on hand-made traces of three ranks (the lib/io
 * trace writer's MPI_RECORDS, trace format 1.4) whose answers are computed
 * by hand below: the joined path step by step with its ranks, the MPI wait
 * states and their blame, a projection across ranks, the path step's
 * rank and MPI call; records a correct program leaves unmatchable (a
 * message whose receive says another tag, a send completed where the
 * wrappers do not see) left out, counted, the path computed without their
 * edges; a nonblocking barrier joined through its completions; damaged
 * records (a collective called as different operations, an unknown MPI
 * record, two processes of one rank, a request posted twice, a peer
 * beyond the run, a nonblocking record without its request) refused
 * naming what is wrong, never a path.
 *
 * Each rank r: process 10 + r, thread "main" (tid 100, seq 0),
 * region R (node 1) over everything and its work regions (nodes 2, 3)
 * inside R ([0,700]). Times are ns, one clock (one host).
 *
 *   rank 0: INIT [0,0]; w0 [0,300]; Send to 1 tag 5 [300,310];
 *           Barrier [310,700].
 *   rank 1: INIT; Recv from 0 tag 5 [0,320] (LateSender 300, blamed on
 *           w0); w1 [320,520]; Isend to 2 tag 6 (request 1) [520,525];
 *           Wait [525,530]; Barrier [530,700].
 *   rank 2: INIT; Irecv from any source, any tag (request 7) [0,5]; w2
 *           [5,105]; Wait [105,540], rank 1's tag 6 (LateSender 415,
 *           blamed on w1); w2b [540,690];
 *           Barrier [690,700] (the last: rank 0 waits 380, rank 1 160,
 *           blamed on w2b).
 *   Path (from rank 0's barrier end, the first of the ends at 700): w0
 *   300 (rank 0), MPI_Recv 20 (rank 1: from the send's start), w1 200,
 *   MPI_Wait 20 (rank 2), w2b 150, MPI_Barrier 10 (rank 0: from rank 2's
 *   barrier start): 700.
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

enum { INIT = 1, SEND, RECV, ISEND, IRECV, WAIT, BARRIER, BCAST, REDUCE,
       ALLREDUCE, IBARRIER = 19 };

typedef struct rk { /* one rank's trace being made */
    gpuprof__io_trace_rec reg[8];
    gpuprof__io_mpi_rec mpi[16];
    uint32_t nreg, nmpi;
    const char *work[2]; /* names of nodes 2, 3 */
} rk;

static char dir[512], dbdir[600];

static void region(rk *r, uint64_t s, uint64_t e, uint32_t node)
{
    r->reg[r->nreg++] = (gpuprof__io_trace_rec){s, e, node, 0};
}

static void mpi(rk *r, uint8_t op, uint64_t s, uint64_t e, int32_t peer,
                int32_t tag, uint64_t req, uint64_t aux)
{
    r->mpi[r->nmpi++] =
        (gpuprof__io_mpi_rec){s, e, 4, req, aux, 0, peer, tag, op, 0};
}

static void write_rank(const rk *r, int32_t rank)
{
    char path[700];
    uint32_t pid = 10 + (uint32_t)rank;
    tp_builder *b = tp_new("host", pid, rank);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t root = tp_region(b, 0, "R", 1, 1000, 100);
    ck_assert_uint_eq(root, 1);
    for (int k = 0; k < 2; k++)
        if (r->work[k])
            ck_assert_uint_eq(tp_region(b, root, r->work[k], 1, 100, 100),
                              2 + (uint32_t)k);
    tp_times(b, 0, 100000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r%d-p%u.gpuprof", dir, rank, pid);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    static uint8_t buf[65536];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, pid, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, r->reg, r->nreg);
    off += gpuprof__io_trace_mpi_records(buf + off, 0, r->mpi, r->nmpi);
    snprintf(path, sizeof(path), "%s/h-r%d-p%u.gptrace", dir, rank, pid);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
    fclose(f);
}

#define COLL_AUX (3ull << 32 | 0) /* 3 members, the lowest rank 0 */

/* The run above; `damage` changes one thing (0: none). */
static void write_run(int damage)
{
    snprintf(dir, sizeof(dir), "%s/cpm.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    rk r[3] = {{.work = {"w0", NULL}}, {.work = {"w1", NULL}},
               {.work = {"w2", "w2b"}}};
    for (int k = 0; k < 3; k++) {
        region(&r[k], 0, 700, 1);
        mpi(&r[k], INIT, 0, 0, damage == 4 && k == 2 ? 1 : k, -1, 0, 3);
    }
    region(&r[0], 0, 300, 2);
    mpi(&r[0], SEND, 300, 310, damage == 9 ? 5 : 1, 5, 0, 0);
    mpi(&r[1], RECV, 0, 320, 0, 5, 0, 0);
    region(&r[1], 320, 520, 2);
    mpi(&r[1], ISEND, 520, 525, 2, 6, 1, 0);
    if (damage == 8) /* the same request posted again */
        mpi(&r[1], ISEND, 525, 525, 2, 6, 1, 0);
    if (damage != 5) /* 5: completed by a call the wrappers do not see */
        mpi(&r[1], WAIT, 525, 530, -1, -1, 1, 0);
    mpi(&r[2], IRECV, 0, 5, -2, -1, 7, 0); /* any source, any tag */
    region(&r[2], 5, 105, 2);
    if (damage == 11) /* an MPI_Test that 5 tests before found not done */
        mpi(&r[2], WAIT, 535, 540, 1, 6, 7, 1ull << 32 | 5);
    else
        mpi(&r[2], WAIT, 105, 540, 1, damage == 1 ? 8 : 6, 7, 0);
    region(&r[2], 540, 690, 3);
    if (damage == 7 || damage == 10) { /* MPI_Ibarrier, then MPI_Wait */
        uint64_t req = damage == 10 ? 0 : 3;
        mpi(&r[0], IBARRIER, 310, 312, -1, -1, req, COLL_AUX);
        mpi(&r[0], WAIT, 312, 700, -1, -1, 3, 0);
        mpi(&r[1], IBARRIER, 530, 532, -1, -1, 2, COLL_AUX);
        mpi(&r[1], WAIT, 532, 700, -1, -1, 2, 0);
        mpi(&r[2], IBARRIER, 690, 692, -1, -1, 9, COLL_AUX);
        mpi(&r[2], WAIT, 692, 700, -1, -1, 9, 0);
    } else {
        mpi(&r[0], BARRIER, 310, 700, -1, -1, 0, COLL_AUX);
        mpi(&r[1], damage == 2 ? ALLREDUCE : BARRIER, 530, 700, -1, -1, 0,
            COLL_AUX);
        mpi(&r[2], damage == 3 ? 99 : BARRIER, 690, 700, -1, -1, 0,
            COLL_AUX);
    }
    for (int k = 0; k < 3; k++)
        write_rank(&r[k], k);
    ap_analyze(dir, dbdir, sizeof(dbdir));
}

/* The path as "rank:name:ns," steps. */
static void path_text(const gpuprof_an_cpath *cp, char *out, size_t size)
{
    ap_path_text(cp, 1, out, size);
}

START_TEST(path_across_ranks)
{
    write_run(0);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_process_count(cp), 1);
    ck_assert_uint_eq(gpuprof_an_cpath_rank_count(cp, 0), 3);
    char text[1024];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, "0:w0:300,1:MPI_Recv in R:20,1:w1:200,"
                           "2:MPI_Wait in R:20,2:w2b:150,"
                           "0:MPI_Barrier in R:10,");
    ck_assert_uint_eq(gpuprof_an_cpath_length(cp, 0), 700);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(cp, 0), 700);
    gpuprof_an_path_step s[8];
    ck_assert_uint_eq(gpuprof_an_cpath_steps(cp, 0, 1, s, 1), 1);
    ck_assert_int_eq(s[0].kind, GPUPROF_AN_ACTIVITY_MPI);
    ck_assert_uint_eq(s[0].mpi_op, RECV);
    ck_assert_int_eq(s[0].peer, 0);
    ck_assert_uint_eq(s[0].start_ns, 0);
    ck_assert_uint_eq(s[0].end_ns, 320);
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_LATE_SENDER], 2);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_LATE_SENDER], 300 + 415);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_LATE_RECEIVER], 0);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_AT_COLLECTIVE], 2);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_AT_COLLECTIVE], 380 + 160);
    ck_assert_str_eq(gpuprof_an_wait_kind_name(GPUPROF_AN_WAIT_AT_COLLECTIVE),
                     "WaitAtCollective");
    /* Blame at the contexts: w0 300, w1 415, w2b 540. */
    ck_assert_int_eq(gpuprof_an_db_add_cpath_metrics(db, cp), GPUPROF_OK);
    uint32_t m;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "wait.blame",
                                               GPUPROF_AN_EXCLUSIVE, &m),
                     GPUPROF_OK);
    const char *names[] = {"w0", "w1", "w2b"};
    const double want[] = {300, 415, 540};
    for (int k = 0; k < 3; k++) {
        uint32_t c = 0;
        while (c < gpuprof_an_db_context_count(db) &&
               strcmp(gpuprof_an_db_context_name(db, c), names[k]))
            c++;
        ck_assert_uint_lt(c, gpuprof_an_db_context_count(db));
        ck_assert_double_eq(gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_SUM),
                            want[k]);
    }
    /* Rank 1's w1 twice as fast: its send 100 sooner, and so rank 2's
     * wait, w2b and the barrier: the run ends at 600. */
    const char *rules[] = {"region:w1=2"};
    gpuprof_an_cpath *pj;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, rules, 1, NULL, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(pj, 0), 600);
    path_text(pj, text, sizeof(text));
    ck_assert_str_eq(text, "0:w0:300,1:MPI_Recv in R:20,1:w1:100,"
                           "2:MPI_Wait in R:20,2:w2b:150,"
                           "0:MPI_Barrier in R:10,");
    gpuprof_an_cpath_free(pj);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Records that contradict each other: a clear error naming them. */
static void refused(int d, const char *want)
{
    write_run(d);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    gpuprof_an_cpath *cp = (gpuprof_an_cpath *)1;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp),
                     GPUPROF_E_CORRUPT);
    ck_assert_ptr_null(cp);
    ck_assert_msg(strstr(gpuprof_an_last_error(), want), "%s",
                  gpuprof_an_last_error());
    gpuprof_an_db_close(db);
}

/* An analysis of the run with one change that leaves records out:
 * `want` the path, `left` how many, `why` a part of the reason. */
static gpuprof_an_cpath *left_out(int d, gpuprof_an_db **db, const char *want,
                                  uint64_t left, const char *why)
{
    write_run(d);
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, db), GPUPROF_OK);
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(*db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_rank_count(cp, 0), 3);
    char text[1024], w[1024];
    path_text(cp, text, sizeof(text));
    ck_assert_str_eq(text, want);
    ck_assert_uint_eq(gpuprof_an_cpath_mpi_left_out(cp, 0, w, sizeof(w)),
                      left);
    ck_assert_msg(strstr(w, why), "%s", w);
    return cp;
}

/* Rank 2's completion says tag 8: rank 1's send (tag 6) and rank 2's
 * receive (tag 8) pair with none: both left out, counted; rank 2's wait is
 * its own (from its start, 105), not rank 1's message: the path runs on
 * rank 2 from the start, one LateSender (rank 1's, 300) is left. */
START_TEST(left_out_message)
{
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp = left_out(
        1, &db,
        "2:MPI_Irecv in R:5,2:w2:100,2:MPI_Wait in R:435,2:w2b:150,"
        "0:MPI_Barrier in R:10,",
        2, "2 send(s) and receive(s) pairing with none");
    ck_assert_uint_eq(gpuprof_an_cpath_length(cp, 0), 700);
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_LATE_SENDER], 1);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_LATE_SENDER], 300);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_AT_COLLECTIVE], 2);
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    ck_assert_int_eq(gpuprof_an_cpath_print_path(cp, f, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_msg(strstr(buf, "note, process 0 (3 MPI ranks): 2 MPI "
                              "record(s) left out, their edges missing, the "
                              "rest joined: 2 send(s) and receive(s) "
                              "pairing with none"),
                  "%s", buf);
    free(buf);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Rank 1's MPI_Isend completed by a call the wrappers do not see: its
 * message still joins rank 2's wait; the path is the full run's. */
START_TEST(left_out_completion)
{
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp = left_out(
        5, &db,
        "0:w0:300,1:MPI_Recv in R:20,1:w1:200,2:MPI_Wait in R:20,"
        "2:w2b:150,0:MPI_Barrier in R:10,",
        1, "1 nonblocking posting(s) never seen completing");
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_LATE_SENDER], 300 + 415);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* The barrier as MPI_Ibarrier + MPI_Wait on each rank: the waits end at
 * rank 2's posting (690); rank 0 waits 690 - 312, rank 1 690 - 532.
 * Nothing is left out. */
START_TEST(nonblocking_collective)
{
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp = left_out(
        7, &db,
        "0:w0:300,1:MPI_Recv in R:20,1:w1:200,2:MPI_Wait in R:20,"
        "2:w2b:150,0:MPI_Wait in R:10,",
        0, "");
    ck_assert_uint_eq(gpuprof_an_cpath_length(cp, 0), 700);
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_AT_COLLECTIVE], 2);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_AT_COLLECTIVE], 378 + 158);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

/* Rank 2 polls for rank 1's message with MPI_Test from 105 on; the test
 * that completes it runs [535, 540]. The path follows the sender (its
 * start, 520, to the test's start: the poll interval, 15, stays), not
 * the polling loop: the same steps as a blocking wait's. */
START_TEST(polled_completion)
{
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp = left_out(
        11, &db,
        "0:w0:300,1:MPI_Recv in R:20,1:w1:200,2:MPI_Wait in R:20,"
        "2:w2b:150,0:MPI_Barrier in R:10,",
        0, "");
    gpuprof_an_wait_totals w;
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, &w), GPUPROF_OK);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_LATE_SENDER], 1); /* rank 1 */
    /* Rank 1's w1 twice as fast: its send at 420, but rank 2's polling
     * loop is CPU work, which a projection keeps (doc/ANALYSIS.md
     * "Projection"): its test still begins at 535, the run still ends at
     * 700; with a blocking wait it ends at 600 (path_across_ranks). */
    const char *rules[] = {"region:w1=2"};
    gpuprof_an_cpath *pj;
    ck_assert_int_eq(gpuprof_an_cpath_project(cp, rules, 1, NULL, &pj),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_cpath_run_ns(pj, 0), 700);
    gpuprof_an_cpath_free(pj);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(damaged_request_twice)
{
    refused(8, "rank 1: request 1 posted twice: MPI records missing or "
               "damaged; no critical path across ranks");
}
END_TEST

START_TEST(damaged_peer)
{
    refused(9, "rank 0: MPI_Send names rank 5 (tag 5) in a run of 3 ranks");
}
END_TEST

START_TEST(damaged_no_request)
{
    refused(10, "a nonblocking MPI record without its request");
}
END_TEST

START_TEST(damaged_collective)
{
    refused(2, "collective #1 on communicator 0: rank 0 called MPI_Barrier "
               "(root -1), rank 1 MPI_Allreduce (root -1)");
}
END_TEST

START_TEST(damaged_unknown_op)
{
    refused(3, "an MPI record of an unknown kind");
}
END_TEST

START_TEST(damaged_two_ranks)
{
    refused(4, "processes 1 and 2 are both rank 1");
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"path_across_ranks", path_across_ranks, 20},
        {"left_out_message", left_out_message, 20},
        {"left_out_completion", left_out_completion, 20},
        {"nonblocking_collective", nonblocking_collective, 20},
        {"polled_completion", polled_completion, 20},
        {"damaged_request_twice", damaged_request_twice, 20},
        {"damaged_peer", damaged_peer, 20},
        {"damaged_no_request", damaged_no_request, 20},
        {"damaged_collective", damaged_collective, 20},
        {"damaged_unknown_op", damaged_unknown_op, 20},
        {"damaged_two_ranks", damaged_two_ranks, 20},
    };
    return RUN_SUITE("an_cpath_mpi", cases);
}
