/*
 * check_an_faults.c - the analysis under faults and odd inputs (issue 18):
 * a damaged or empty trace is said (the bytes ignored, as `gpuprof dump`
 * says them), counted in the database, or refused when strict; a trace of
 * another process is refused naming it; the trace streams of threads
 * summed into the "exited threads (merged)" profile belong to it; files of
 * two analyses are never read together; a run that fails (disk full at
 * meta.db or another file: this program's open() or write() says ENOSPC)
 * leaves the earlier database as it was; FIFOs and directories where files belong are refused, never
 * waited on (each case's timeout turns a hang into a failure).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/files.h"
#include "support/gen.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char tmp[512];

/* ---- disk full on demand ----------------------------------------------------
 * This program's own open(), write() and pwrite(): the analysis objects are
 * linked into it, so their calls come here. A path containing `full_at`
 * fails with ENOSPC, as on a full disk: at open, or (full_on_write) at its
 * first write once 100 bytes are in; every other call goes to the kernel. */
static const char *full_at;
static bool full_on_write;
static int full_fd = -1;

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    bool full = full_at && strstr(path, full_at);
    if (full && !full_on_write) {
        errno = ENOSPC;
        return -1;
    }
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
    if (full)
        full_fd = fd;
    return fd;
}

static ssize_t full_write(int fd, const void *b, size_t n, off_t off,
                          bool at)
{
    if (fd == full_fd && full_at) {
        if (n > 100)
            n = 100; /* a short write, then the disk is full */
        else {
            errno = ENOSPC;
            return -1;
        }
    }
    return at ? syscall(SYS_pwrite64, fd, b, n, off)
              : syscall(SYS_write, fd, b, n);
}

ssize_t write(int fd, const void *b, size_t n)
{
    return full_write(fd, b, n, 0, false);
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
    return full_write(fd, b, n, off, true);
}

/* ---- helpers ---------------------------------------------------------------- */
static void mkdir_tmp(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anfault.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void sub(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmp, name);
}

typedef struct said { /* the warnings of a run */
    char text[4096];
    int n;
} said;

static void on_warning(const char *msg, void *user)
{
    said *s = user;
    size_t l = strlen(s->text);
    snprintf(s->text + l, sizeof(s->text) - l, "%s\n", msg);
    s->n++;
}

static gpuprof_status analyze(const char *in, const char *out, unsigned threads,
                              int strict, said *s)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(a, threads), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_strict(a, strict), GPUPROF_OK);
    if (s) {
        memset(s, 0, sizeof(*s));
        ck_assert_int_eq(gpuprof_an_analysis_set_warnings(a, on_warning, s),
                         GPUPROF_OK);
    }
    gpuprof_status st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    return st;
}


static const char *const dbfiles[] = {"meta.db", "profile.db", "cct.db",
                                      "stats.db", "trace.db"};

/* The bytes of a database's files and its analysis.txt (NULL for one
 * that is not there). */
#define SNAP 6
static const char *snap_name(int i)
{
    return i < 5 ? dbfiles[i] : "analysis.txt";
}

typedef struct snap {
    unsigned char *b[SNAP];
    size_t n[SNAP];
} snap;

static snap take(const char *db)
{
    snap s = {{0}, {0}};
    for (int i = 0; i < SNAP; i++) {
        char p[700];
        snprintf(p, sizeof(p), "%s/%s", db, snap_name(i));
        s.b[i] = tf_read(p, &s.n[i]);
    }
    return s;
}

static void snap_free(snap *s)
{
    for (int i = 0; i < SNAP; i++)
        free(s->b[i]);
}

/* The first n of them (5: the database's own, whatever the options; SNAP:
 * and analysis.txt, as one run made them). */
static void same_as(const snap *s, const char *db, int n, const char *what)
{
    snap now = take(db);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(!s->b[i] == !now.b[i], "%s: %s %s", what, snap_name(i),
                      s->b[i] ? "is gone" : "appeared");
        ck_assert_msg(!s->b[i] || (s->n[i] == now.n[i] &&
                                   !memcmp(s->b[i], now.b[i], s->n[i])),
                      "%s: %s changed", what, snap_name(i));
    }
    snap_free(&now);
}

/* gen's profiles: process pid0 + p in gen-p<pid>.gpuprof, thread k tid
 * 100 + k, CLOCK_REALTIME start 1.7e18 for a second (mkprofile.c). */
#define GEN_REALTIME 1700000000000000000ull

static const gen_opts small = {.procs = 2, .threads = 2, .seed = 5,
                               .fanout = 3, .depth = 4, .pid0 = 100};

/* A trace beside gen's profile of process `pid`, written by process
 * `writer` at `realtime`: thread 0 (tid 100), then seven GPU streams of two
 * records each, each in a chunk of its own, naming thread 0's node 1.
 * Returns the file's size; *second: where the second GPU chunk starts. */
static size_t write_trace(const char *dir, uint32_t pid, uint32_t writer,
                          uint64_t realtime, size_t *second)
{
    uint8_t buf[4096];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, writer, realtime);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "worker-0");
    for (uint32_t k = 0; k < 7; k++) {
        if (k == 1 && second)
            *second = off;
        gpuprof__io_trace_rec r[2] = {{10 + k, 20 + k, 1, 1 + k},
                                      {30 + k, 40 + k, 1, 11 + k}};
        off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU,
                                              0, k, r, 2);
    }
    char path[700];
    snprintf(path, sizeof(path), "%s/gen-p%06u.gptrace", dir, pid);
    tf_spill(path, buf, off);
    return off;
}

static void flip(const char *path, size_t at)
{
    unsigned char *b;
    size_t n = tf_slurp(path, &b);
    ck_assert_uint_lt(at, n);
    b[at] ^= 0x01;
    tf_spill(path, b, n);
    free(b);
}

static void ignored(const char *db, uint32_t damaged, uint32_t left_out,
                    uint64_t bytes, uint32_t streams)
{
    gpuprof_an_db *d;
    ck_assert_msg(gpuprof_an_db_open(db, &d) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    uint32_t a, b;
    uint64_t c;
    gpuprof_an_db_trace_ignored(d, &a, &b, &c);
    ck_assert_uint_eq(a, damaged);
    ck_assert_uint_eq(b, left_out);
    ck_assert_uint_eq(c, bytes);
    ck_assert_uint_eq(gpuprof_an_db_trace_stream_count(d), streams);
    gpuprof_an_db_close(d);
}

/* ---- damaged traces ------------------------------------------------------------ */
START_TEST(damaged_trace_is_said_counted_or_refused)
{
    mkdir_tmp();
    char in[600], db[600], db2[600], tp[700], want[900];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    sub(db2, sizeof(db2), "db2");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &small, &t), 0);
    gen_truth_free(&t);
    size_t second = 0;
    size_t size = write_trace(in, 100, 100, GEN_REALTIME + 5, &second);
    snprintf(tp, sizeof(tp), "%s/gen-p000100.gptrace", in);
    said s;
    ck_assert_int_eq(analyze(in, db, 2, 0, &s), GPUPROF_OK);
    ck_assert_int_eq(s.n, 0);
    ignored(db, 0, 0, 0, 7);
    /* One flipped byte in the second GPU chunk: it and all after are
     * lost -- 6 of 7 streams -- and said, as gpuprof dump says it. */
    flip(tp, second + 40);
    ck_assert_int_eq(analyze(in, db, 2, 0, &s), GPUPROF_OK);
    snprintf(want, sizeof(want),
             "%s: ignored %zu bytes at the end (chunk checksum mismatch)\n",
             tp, size - second);
    ck_assert_int_eq(s.n, 1);
    ck_assert_str_eq(s.text, want);
    ignored(db, 1, 0, size - second, 1);
    /* Strict: refused, naming the trace; nothing written. */
    ck_assert_int_eq(analyze(in, db2, 2, 1, &s), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), tp));
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "--strict"));
    ck_assert_int_ne(access(db2, F_OK), 0);
    /* An empty trace: said and counted, refused when strict. */
    tf_spill(tp, "", 0);
    ck_assert_int_eq(analyze(in, db, 1, 0, &s), GPUPROF_OK);
    snprintf(want, sizeof(want),
             "%s: ignored 0 bytes: empty, no trace header\n", tp);
    ck_assert_str_eq(s.text, want);
    ignored(db, 1, 0, 0, 0);
    ck_assert_int_eq(analyze(in, db2, 1, 1, &s), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "empty"));
    ck_assert_int_ne(access(db2, F_OK), 0);
    /* A torn header (12 bytes): likewise. */
    tf_spill(tp, "GPTRACE\0\1\0\1\0", 12);
    ck_assert_int_eq(analyze(in, db, 1, 0, &s), GPUPROF_OK);
    ignored(db, 1, 0, 12, 0);
}
END_TEST

/* ---- a trace of another process ------------------------------------------------ */
START_TEST(trace_of_another_process_is_refused)
{
    mkdir_tmp();
    char in[600], db[600], tp[700];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &small, &t), 0);
    gen_truth_free(&t);
    snprintf(tp, sizeof(tp), "%s/gen-p000101.gptrace", in);
    /* Process 100's trace beside process 101's profile. */
    write_trace(in, 101, 100, GEN_REALTIME + 5, NULL);
    ck_assert_int_eq(analyze(in, db, 2, 0, NULL), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), tp));
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "process 100"));
    ck_assert_int_ne(access(db, F_OK), 0);
    /* The same pid, another run of it (a day later). */
    write_trace(in, 101, 101, GEN_REALTIME + 86400000000000ull, NULL);
    ck_assert_int_eq(analyze(in, db, 2, 0, NULL), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), tp));
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "outside the run"));
    /* Its own. */
    write_trace(in, 101, 101, GEN_REALTIME + 5, NULL);
    ck_assert_msg(analyze(in, db, 2, 0, NULL) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
}
END_TEST

/* ---- threads merged past GPUPROF_KEEP_THREADS ---------------------------------- */
START_TEST(merged_threads_streams_are_the_merged_profiles)
{
    mkdir_tmp();
    char in[600], db[600], path[700];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    /* main (tid 100) and the merged state, as libgpuprof writes them. */
    tp_builder *b = tp_new("h", 7, -1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, "work", 1, 10, 10);
    tp_thread(b, "exited threads (merged)",
              GPUPROF_IO_THREAD_EXITED | GPUPROF_IO_THREAD_MERGED);
    tp_region(b, 0, "work", 2, 20, 20);
    snprintf(path, sizeof(path), "%s/h-rx-p7.gpuprof", in);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    /* The trace: main (seq 0) and two threads merged away (seq 1 and 2,
     * tids the profile does not hold), each with its regions and one GPU
     * API call; a GPU stream with one record of each thread. Thread 1's
     * nodes went to the merged state's (its node 1 to node 1: a MERGED
     * chunk, written before its THREAD chunk, as a thread that exits
     * before its tracing thread announces it has it); thread 2's map is
     * not there (a trace of format 1.1): its contexts are unknown. */
    uint8_t buf[4096];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 7, GEN_REALTIME + 1);
    static const uint32_t map[] = {0, 1};
    off += gpuprof__io_trace_merged_chunk(buf + off, 1, 0, map, 2);
    static const uint64_t tids[] = {100, 555, 556};
    for (uint32_t seq = 0; seq < 3; seq++) {
        off += gpuprof__io_trace_thread_chunk(buf + off, seq, tids[seq], "t");
        gpuprof__io_trace_rec r = {100 + seq, 200, (uint64_t)seq << 32 | 1, 0};
        off += gpuprof__io_trace_records(buf + off, 0, 0, seq, &r, 1);
        r.corr = 1 + seq;
        off += gpuprof__io_trace_corr_records(buf + off, 0, 0, seq, &r, 1);
    }
    gpuprof__io_trace_rec g[3];
    for (uint32_t seq = 0; seq < 3; seq++)
        g[seq] = (gpuprof__io_trace_rec){300 + seq, 400,
                                         (uint64_t)seq << 32 | 1, 1 + seq};
    off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU, 0,
                                          0, g, 3);
    snprintf(path, sizeof(path), "%s/h-rx-p7.gptrace", in);
    tf_spill(path, buf, off);
    said s;
    ck_assert_msg(analyze(in, db, 1, 0, &s) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    ck_assert_int_eq(s.n, 0);
    gpuprof_an_db *d;
    ck_assert_msg(gpuprof_an_db_open(db, &d) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    /* A GPU stream, three threads' regions, their API calls. */
    ck_assert_uint_eq(gpuprof_an_db_trace_stream_count(d), 7);
    uint32_t work = UINT32_MAX;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(d); c++)
        if (!strcmp(gpuprof_an_db_context_name(d, c), "work"))
            work = c;
    ck_assert_uint_ne(work, UINT32_MAX);
    for (uint32_t i = 0; i < 7; i++) {
        gpuprof_an_trace_stream st;
        gpuprof_an_trace_record r[3];
        ck_assert_int_eq(gpuprof_an_db_trace_stream(d, i, &st), GPUPROF_OK);
        uint64_t n = gpuprof_an_db_trace_records(d, i, 0, r, 3);
        if (st.kind == GPUPROF_AN_TRACE_GPU) {
            ck_assert_int_eq(st.kind, GPUPROF_AN_TRACE_GPU);
            ck_assert_uint_eq(n, 3);
            ck_assert_uint_eq(r[0].context, work); /* main's */
            ck_assert_uint_eq(r[1].context, work); /* mapped */
            ck_assert_uint_eq(r[2].context, UINT32_MAX);
            continue;
        }
        uint32_t seq = (uint32_t)(r[0].start_ns - 100);
        ck_assert_uint_lt(seq, 3);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(st.profile, seq ? 1 : 0); /* merged: profile 1 */
        ck_assert_uint_eq(r[0].start_ns, 100 + seq);
        ck_assert_uint_eq(r[0].context, seq == 2 ? UINT32_MAX : work);
    }
    gpuprof_an_db_close(d);
    /* A profile without a merged state (an earlier generation, written
     * before the threads began): their streams are left out, said and
     * counted. */
    b = tp_new("h", 7, -1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, "work", 1, 10, 10);
    snprintf(path, sizeof(path), "%s/h-rx-p7.gpuprof", in);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    ck_assert_int_eq(analyze(in, db, 1, 0, &s), GPUPROF_OK);
    ck_assert_int_eq(s.n, 4);
    ck_assert_ptr_nonnull(strstr(s.text, "thread 1 is not in the profile"));
    ignored(db, 0, 4, 0, 3);
    char db2[600];
    sub(db2, sizeof(db2), "db2");
    ck_assert_int_eq(analyze(in, db2, 1, 1, &s), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "h-rx-p7.gptrace: "
                                                          "thread 1 is not in "
                                                          "the profile"));
    ck_assert_int_ne(access(db2, F_OK), 0);
}
END_TEST

/* ---- files of two analyses ----------------------------------------------------- */
START_TEST(files_of_two_analyses_are_refused)
{
    mkdir_tmp();
    char r1[600], r2[600], d1[600], d2[600], a[700], b[700];
    sub(r1, sizeof(r1), "run1");
    sub(r2, sizeof(r2), "run2");
    sub(d1, sizeof(d1), "db1");
    sub(d2, sizeof(d2), "db2");
    ck_assert_int_eq(mkdir(r1, 0755), 0);
    ck_assert_int_eq(mkdir(r2, 0755), 0);
    /* The same program run twice: the same trees and counts, other pids
     * (and so other values nowhere: only the identity tells them apart). */
    gen_truth t = {0};
    gen_opts o = small;
    ck_assert_int_eq(gen_write(r1, &o, &t), 0);
    o.pid0 = 200;
    ck_assert_int_eq(gen_write(r2, &o, &t), 0);
    gen_truth_free(&t);
    write_trace(r1, 100, 100, GEN_REALTIME + 5, NULL);
    write_trace(r2, 200, 200, GEN_REALTIME + 5, NULL);
    ck_assert_int_eq(analyze(r1, d1, 1, 0, NULL), GPUPROF_OK);
    ck_assert_int_eq(analyze(r2, d2, 2, 0, NULL), GPUPROF_OK);
    for (int i = 0; i < 5; i++) {
        unsigned char *x, *y;
        snprintf(a, sizeof(a), "%s/%s", d1, dbfiles[i]);
        snprintf(b, sizeof(b), "%s/%s", d2, dbfiles[i]);
        size_t nx = tf_slurp(a, &x), ny = tf_slurp(b, &y);
        ck_assert_uint_eq(memcmp(x + 24, y + 24, 8), 0); /* same counts */
        ck_assert_uint_ne(memcmp(x + 32, y + 32, 8), 0); /* identities */
        tf_spill(a, y, ny); /* db2's file in db1 */
        gpuprof_an_db *d;
        ck_assert_int_eq(gpuprof_an_db_open(d1, &d), GPUPROF_E_CORRUPT);
        const char *e = gpuprof_an_last_error();
        ck_assert_msg(strstr(e, dbfiles[i]) && strstr(e, "another analysis"),
                      "%s: %s", dbfiles[i], e);
        tf_spill(a, x, nx);
        ck_assert_int_eq(gpuprof_an_db_open(d1, &d), GPUPROF_OK);
        gpuprof_an_db_close(d);
        free(x);
        free(y);
    }
    /* The identity is the inputs', not the run's: -j and a memory budget
     * give the same bytes. */
    snap s = take(d1);
    gpuprof_an_analysis *an;
    ck_assert_int_eq(gpuprof_an_analysis_new(&an), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(an, r1), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(an, d2), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(an, 3), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(an, 16u << 20),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(an), GPUPROF_OK);
    gpuprof_an_analysis_free(an);
    same_as(&s, d2, 5, "-j3 --memory 16M");
    snap_free(&s);
    /* A database of format 2 is refused by its version. */
    snprintf(a, sizeof(a), "%s/meta.db", d1);
    unsigned char *x;
    size_t nx = tf_slurp(a, &x);
    x[8] = 2, x[9] = 0;
    tf_spill(a, x, nx);
    free(x);
    gpuprof_an_db *d;
    ck_assert_int_eq(gpuprof_an_db_open(d1, &d), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                 "meta.db: database version 2, this reader "
                                 "reads 3"));
}
END_TEST

/* ---- a failed run keeps the earlier database ----------------------------------- */
START_TEST(failed_run_keeps_the_earlier_database)
{
    mkdir_tmp();
    char in[600], in2[600], db[600];
    sub(in, sizeof(in), "run");
    sub(in2, sizeof(in2), "run2");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    ck_assert_int_eq(mkdir(in2, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &small, &t), 0);
    gen_opts o = small;
    o.pid0 = 300, o.seed = 9;
    ck_assert_int_eq(gen_write(in2, &o, &t), 0);
    gen_truth_free(&t);
    /* An earlier untraced database; a traced analysis into it fails with
     * the disk full at meta.db: its trace.db must not stay beside the
     * earlier files, which stay as they were. */
    ck_assert_int_eq(analyze(in, db, 2, 0, NULL), GPUPROF_OK);
    snap s = take(db);
    ck_assert_ptr_null(s.b[4]);
    write_trace(in2, 300, 300, GEN_REALTIME + 5, NULL);
    static const char *const at[] = {".meta.db.tmp", ".trace.db.tmp",
                                     ".stats.db.tmp", ".analysis.txt.tmp"};
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "%.15s", at[i % 4] + 1); /* x.db */
        *strchr(name + 1, '.') = '\0';
        full_at = at[i % 4];
        full_on_write = i >= 4; /* at open, then while writing */
        gpuprof_status st = analyze(in2, db, 2, 0, NULL);
        full_at = NULL;
        full_fd = -1;
        ck_assert_int_eq(st, GPUPROF_E_IO);
        ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), name));
        ck_assert_ptr_nonnull(
            strstr(gpuprof_an_last_error(), strerror(ENOSPC)));
        same_as(&s, db, SNAP, at[i % 4]);
        ck_assert_int_eq(tf_dir_entries(db), 5); /* analysis.txt too */
    }
    snap_free(&s);
    /* An earlier traced database; an untraced analysis (its trace.db
     * goes aside) and a traced one both fail at meta.db: all five stay. */
    ck_assert_int_eq(analyze(in2, db, 2, 0, NULL), GPUPROF_OK);
    s = take(db);
    ck_assert_ptr_nonnull(s.b[4]);
    const char *const ins[] = {in, in2};
    for (int i = 0; i < 2; i++) {
        full_at = ".meta.db.tmp";
        gpuprof_status st = analyze(ins[i], db, 1, 0, NULL);
        full_at = NULL;
        ck_assert_int_eq(st, GPUPROF_E_IO);
        same_as(&s, db, SNAP,
                i ? "traced over traced" : "untraced over traced");
        ck_assert_int_eq(tf_dir_entries(db), 6);
    }
    snap_free(&s);
}
END_TEST

/* ---- special files -------------------------------------------------------------- */
START_TEST(special_files_are_refused)
{
    mkdir_tmp();
    char in[600], db[600], path[800], fifo[700];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &small, &t), 0);
    gen_truth_free(&t);
    ck_assert_int_eq(analyze(in, db, 1, 0, NULL), GPUPROF_OK);
    /* A FIFO in place of each database file, then a directory. */
    for (int i = 0; i < 4; i++)
        for (int dir = 0; dir < 2; dir++) {
            char keep[900];
            snprintf(path, sizeof(path), "%s/%s", db, dbfiles[i]);
            snprintf(keep, sizeof(keep), "%s.keep", path);
            ck_assert_int_eq(rename(path, keep), 0);
            ck_assert_int_eq(dir ? mkdir(path, 0755) : mkfifo(path, 0644), 0);
            gpuprof_an_db *d;
            ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_E_IO);
            char want[900];
            snprintf(want, sizeof(want), "%s: not a regular file (%s)", path,
                     dir ? "a directory" : "a FIFO");
            ck_assert_str_eq(gpuprof_an_last_error(), want);
            ck_assert_int_eq(dir ? rmdir(path) : unlink(path), 0);
            ck_assert_int_eq(rename(keep, path), 0);
        }
    /* trace.db too. */
    snprintf(path, sizeof(path), "%s/trace.db", db);
    ck_assert_int_eq(mkfifo(path, 0644), 0);
    gpuprof_an_db *d;
    ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_E_IO);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "trace.db"));
    /* A FIFO trace beside a profile. */
    snprintf(fifo, sizeof(fifo), "%s/gen-p000100.gptrace", in);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    ck_assert_int_eq(analyze(in, db, 1, 0, NULL), GPUPROF_E_IO);
    snprintf(path, sizeof(path), "%s: not a regular file (a FIFO)", fifo);
    ck_assert_str_eq(gpuprof_an_last_error(), path);
    ck_assert_int_eq(unlink(fifo), 0);
    /* A FIFO named like a profile: analyze, dump and report. */
    snprintf(fifo, sizeof(fifo), "%s/zz.gpuprof", in);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    snprintf(path, sizeof(path), "%s: not a regular file (a FIFO)", fifo);
    ck_assert_int_eq(analyze(in, db, 1, 0, NULL), GPUPROF_E_IO);
    ck_assert_str_eq(gpuprof_an_last_error(), path);
    gpuprof_an_profile *p;
    ck_assert_int_eq(gpuprof_an_profile_open(fifo, &p), GPUPROF_E_IO);
    ck_assert_str_eq(gpuprof_an_last_error(), path);
    gpuprof_an_report *r;
    ck_assert_int_ne(gpuprof_an_report_open(in, &r), GPUPROF_OK);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "zz.gpuprof"));
    ck_assert_int_eq(unlink(fifo), 0);
    /* A load module that is a FIFO (a profile may name any path): its
     * frames are named by offset, neither analyze nor the reader waits. */
    char in2[600], db2[600];
    sub(in2, sizeof(in2), "run2");
    sub(db2, sizeof(db2), "db2");
    ck_assert_int_eq(mkdir(in2, 0755), 0);
    snprintf(fifo, sizeof(fifo), "%s/libfifo.so", tmp);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    tp_builder *b = tp_new("h", 9, -1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t reg = tp_region(b, 0, "work", 1, 10, 10);
    tp_frame(b, reg, tp_module(b, fifo), 0x10);
    snprintf(path, sizeof(path), "%s/h-rx-p9.gpuprof", in2);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
    ck_assert_msg(analyze(in2, db2, 1, 0, NULL) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    ck_assert_msg(gpuprof_an_db_open(db2, &d) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    bool named = false;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(d); c++)
        named = named || !strcmp(gpuprof_an_db_context_name(d, c),
                                 "libfifo.so+0x10");
    ck_assert(named);
    gpuprof_an_db_close(d);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"damaged_trace", damaged_trace_is_said_counted_or_refused, 30},
        {"trace_of_another_process", trace_of_another_process_is_refused, 30},
        {"merged_threads", merged_threads_streams_are_the_merged_profiles, 30},
        {"files_of_two_analyses", files_of_two_analyses_are_refused, 60},
        {"failed_run", failed_run_keeps_the_earlier_database, 60},
        {"special_files", special_files_are_refused, 30},
    };
    return RUN_SUITE("an_faults", cases);
}
