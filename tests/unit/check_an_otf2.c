/*
 * check_an_otf2.c - the OTF2 export (gpuprof_an_db_export_otf2) on a
 * hand-made trace whose events are known: a thread with region R [1000,
 * 9000] and inside it region S [1000, 4000] and the launch L1 [1000, 1500]
 * (all three start together: entered R, S, L1 although trace.db sorts them
 * S, R), then the launch L2 [8500, 9500] that outlasts R (cut at 9000);
 * on GPU 0 stream 3 the kernel three times, [2000, 3000], [2500, 3500]
 * (concurrent with the first: cut at 3000) and [5000, 6000]. otf2-print
 * reads the archive back; the events, their order, times (the monotonic
 * ns of trace.db) and the critical_path attribute
 * from marks given through the internal entry are compared exactly; the
 * note says two records were cut; the kernel's region is named without its
 * binary (an OpenCL one: paradigm OPENCL). Three processes on two hosts:
 * a system tree node per host, a group per process, the later-booted
 * host's times moved onto the first's clock by the difference of their
 * realtime offsets (a host's is its first process's: they share its
 * monotonic clock), the clock properties' offset, length and date exact.
 * The critical path of a trace with dependency notes (check_an_cpath's
 * basic): exactly its records' events carry critical_path 1, with their
 * time on it; a trace without notes, and one the analysis refuses, export
 * without the attributes and say why. CPU samples become calling-context
 * samples between the regions, each with its calling context (a thread
 * with samples alone gets a location), the definitions exact. Also:
 * bad arguments, no traces, and a build without OTF2 support (then only that it
 * says so).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/export/an_otf2.h"
#include "gpuprof_analysis.h"
#include "gpuprof_backend.h"
#include "io/trace.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char dir[512];

static void write_file(const char *name, const uint8_t *buf, size_t n)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/in/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* A fresh `dir` with its input directory dir/in. */
static void new_dir(void)
{
    snprintf(dir, sizeof(dir), "%s/otf2.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[700];
    snprintf(path, sizeof(path), "%s/in", dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
}

/* Every one of want[0..n) is in text. */
static void has_all(const char *text, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(strstr(text, want[i]), "no \"%s\" in\n%s", want[i], text);
}

/* Thread "main" (tid 100, seq 0): R (node 1) > S (node 2); R > kernel
 * launch (node 3) > kernel "k" (node 4). */
static void write_run(int traced)
{
    new_dir();
    char path[700];
    tp_builder *b = tp_new("h1", 10, 2);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, "R", 1, 8000, 5000);
    tp_region(b, r, "S", 1, 3000, 3000);
    uint32_t op = tp_gpu_op(b, r, 1);
    tp_kernel(b, op, "k", tp_gpu_module(b, "binaries/4a88.clbin"));
    tp_times(b, 500, 10000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/in/h1-r2-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    if (!traced)
        return;
    uint8_t buf[4096];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    gpuprof__io_trace_rec reg[2] = {{1000, 9000, 1, 0}, {1000, 4000, 2, 0}};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, reg, 2);
    gpuprof__io_trace_rec l[2] = {{1000, 1500, 3, 0x11}, {8500, 9500, 3, 0x12}};
    off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 0, l, 2);
    gpuprof__io_trace_rec k[3] = {
        {2000, 3000, 3, 0x11}, {2500, 3500, 3, 0x12}, {5000, 6000, 3, 0x12}};
    off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU, 0, 3,
                                          k, 3);
    write_file("h1-r2-p10.gptrace", buf, off);
}

static gpuprof_an_db *analyze(void)
{
    char in[600], out[600];
    snprintf(in, sizeof(in), "%s/in", dir);
    snprintf(out, sizeof(out), "%s/db", dir);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_structure(a, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(a), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(out, &db), GPUPROF_OK);
    return db;
}

/* Marks: the first record of every stream is on the path, for 100 ns
 * times its stream's number + 1 (trace.db's streams: regions 0, the GPU
 * stream 1, API calls 2). */
static int first_on_path(void *arg, uint32_t stream, uint64_t record,
                         uint64_t *ns)
{
    ++*(int *)arg;
    *ns = 100 * (stream + 1);
    return record == 0;
}

static bool without_otf2(gpuprof_status st)
{
    return st == GPUPROF_E_UNAVAILABLE &&
           strstr(gpuprof_an_last_error(), "built without OTF2 support");
}

/* db exported to dir/x (its path in archive) through the public entry;
 * false (db closed) in a build without OTF2 support. */
static bool exported(gpuprof_an_db *db, char *archive, size_t size)
{
    snprintf(archive, size, "%s/x", dir);
    gpuprof_status st = gpuprof_an_db_export_otf2(db, archive, NULL, 0);
    if (without_otf2(st)) {
        gpuprof_an_db_close(db);
        return false;
    }
    ck_assert_int_eq(st, GPUPROF_OK);
    return true;
}

/* otf2-print's event lines, attributes as " cp=N" on the line of their
 * event; calling-context samples as "SAMPLE loc time context unwind=N". */
static char *events_of(const char *archive)
{
    char cmd[800], line[1024], *text = NULL;
    size_t size = 0;
    snprintf(cmd, sizeof(cmd), "otf2-print %s/traces.otf2 2>&1", archive);
    FILE *p = popen(cmd, "r"), *out = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(p);
    bool open_line = false;
    while (fgets(line, sizeof(line), p)) {
        char ev[16], region[128];
        unsigned loc;
        uint64_t ts;
        unsigned cp;
        int used = 0;
        uint64_t ns;
        unsigned unwind;
        if (sscanf(line, "%15s %u %" SCNu64 " Region: \"%127[^\"]\"", ev, &loc,
                   &ts, region) == 4) {
            fprintf(out, "%s%s %u %" PRIu64 " %s", open_line ? "\n" : "", ev,
                    loc, ts, region);
            open_line = true;
        } else if (sscanf(line,
                          "CALLING_CONTEXT_SAMPLE %u %" SCNu64
                          " Calling Context: \"%127[^\"]\" <%*u>, Unwind "
                          "Distance: %u, Interrupt Generator: \"cpu.time\"",
                          &loc, &ts, region, &unwind) == 4) {
            fprintf(out, "%sSAMPLE %u %" PRIu64 " %s unwind=%u",
                    open_line ? "\n" : "", loc, ts, region, unwind);
            open_line = true;
        } else if (sscanf(line,
                          " ADDITIONAL ATTRIBUTES: (\"critical_path\" "
                          "<0>; UINT8; %u)%n",
                          &cp, &used) == 1) {
            fprintf(out, " cp=%u", cp);
            if (sscanf(line + used,
                       ", (\"critical_path_ns\" <1>; UINT64; %" SCNu64 ")",
                       &ns) == 1)
                fprintf(out, " ns=%" PRIu64, ns);
        } else if (strncmp(line, "===", 3) && strncmp(line, "Event ", 6) &&
                   strncmp(line, "-----", 5) && strcmp(line, "\n")) {
            fprintf(out, "%sUNEXPECTED %s", open_line ? "\n" : "", line);
            open_line = false;
        }
    }
    if (open_line)
        fputc('\n', out);
    ck_assert_int_eq(pclose(p), 0);
    fclose(out);
    return text;
}

/* otf2-print -G's definitions of the archive. */
static char *defs_of(const char *archive)
{
    char cmd[800], *text = NULL;
    size_t size = 0;
    snprintf(cmd, sizeof(cmd), "otf2-print -G %s/traces.otf2 2>&1", archive);
    FILE *p = popen(cmd, "r"), *out = open_memstream(&text, &size);
    ck_assert_ptr_nonnull(p);
    int c;
    while ((c = fgetc(p)) != EOF)
        fputc(c, out);
    ck_assert_int_eq(pclose(p), 0);
    fclose(out);
    return text;
}

START_TEST(exact_events)
{
    write_run(1);
    gpuprof_an_db *db = analyze();
    gpuprof_an_trace_stream s;
    ck_assert_int_eq(gpuprof_an_db_trace_stream(db, 0, &s), GPUPROF_OK);
    ck_assert_int_eq(s.realtime_offset_ns, 1000000 - 500);
    int asked = 0;
    gpuprof__an_cpath_marks m = {first_on_path, NULL, &asked, NULL};
    char archive[600], *note = NULL;
    size_t nsize = 0;
    snprintf(archive, sizeof(archive), "%s/x", dir);
    FILE *notes = open_memstream(&note, &nsize);
    gpuprof_status st = gpuprof__an_export_otf2(db, archive, notes, &m);
    fclose(notes);
    if (without_otf2(st)) {
        ck_assert_int_eq(access(archive, F_OK), -1);
        gpuprof_an_db_close(db);
        free(note);
        return;
    }
    ck_assert_int_eq(st, GPUPROF_OK);
    ck_assert_int_eq(asked, 7); /* once per record */
    char want_note[800];
    snprintf(want_note, sizeof(want_note),
             "gpuprof: %s: 2 records overlapped "
             "the one enclosing it on its thread or stream without ending "
             "inside it; cut at that one's end (OTF2 regions nest)\n",
             archive);
    ck_assert_str_eq(note, want_note);
    free(note);
    /* trace.db's streams: regions (S, R), API calls (L1, L2) and the GPU
     * stream, in this order: the thread is location 0, the GPU stream 1.
     * Records that start together on location 0 are printed in the order
     * written. */
    char *text = events_of(archive);
    ck_assert_str_eq(text, "ENTER 0 1000 R cp=0\n"
                           "ENTER 0 1000 S cp=1 ns=100\n"
                           "ENTER 0 1000 kernel launch: k cp=1 ns=300\n"
                           "LEAVE 0 1500 kernel launch: k cp=1 ns=300\n"
                           "ENTER 1 2000 k cp=1 ns=200\n"
                           "ENTER 1 2500 k cp=0\n"
                           "LEAVE 1 3000 k cp=0\n"
                           "LEAVE 1 3000 k cp=1 ns=200\n"
                           "LEAVE 0 4000 S cp=1 ns=100\n"
                           "ENTER 1 5000 k cp=0\n"
                           "LEAVE 1 6000 k cp=0\n"
                           "ENTER 0 8500 kernel launch: k cp=0\n"
                           "LEAVE 0 9000 kernel launch: k cp=0\n"
                           "LEAVE 0 9000 R cp=0\n");
    free(text);
    /* The rank names its process's group; names as trace.db has them. */
    text = defs_of(archive);
    static const char *const want[] = {
        "Name: \"rank 2 (pid 10)\" <2>, Type: PROCESS, Parent: "
        "\"node::h1\" <1>, Creator: UNDEFINED",
        "Name: \"GPU 0 of rank 2 (pid 10)\" <4>, Type: ACCELERATOR, Parent: "
        "\"node::h1\" <1>, Creator: \"rank 2 (pid 10)\" <0>",
        "Name: \"main (tid 100)\" <3>, Type: CPU_THREAD, # Events: 8, Group: "
        "\"rank 2 (pid 10)\" <0>",
        "Name: \"GPU 0 stream 3\" <5>, Type: ACCELERATOR_STREAM, # Events: 6, "
        "Group: \"GPU 0 of rank 2 (pid 10)\" <1>",
        "Name: \"k\" <10> (Aka. \"k\" <10>), Descr.: \"kernel k "
        "[binaries/4a88.clbin]\" <9>, Role: FUNCTION, Paradigm: OPENCL",
        "Name: \"kernel launch: k\" <8> (Aka. \"kernel launch: k\" <8>), "
        "Descr.: \"kernel k [binaries/4a88.clbin]\" <9>, Role: WRAPPER, "
        "Paradigm: OPENCL",
        "Name: \"R\" <6> (Aka. \"R\" <6>), Descr.: \"\" <0>, Role: CODE, "
        "Paradigm: USER"};
    has_all(text, want, sizeof(want) / sizeof(want[0]));
    free(text);
    /* Through the public entry: the trace has no dependency notes, so no
     * critical path (no attributes, and the notes say why); an earlier
     * export is replaced. */
    notes = open_memstream(&note, &nsize);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(db, archive, notes, 0),
                     GPUPROF_OK);
    fclose(notes);
    ck_assert_msg(strstr(note, "gpuprof: ") && strstr(note, archive) &&
                      strstr(note, ": no critical_path attributes: trace.db "
                                   "holds no dependency notes"),
                  "%s", note);
    free(note);
    text = events_of(archive);
    ck_assert_ptr_null(strstr(text, "cp="));
    ck_assert_ptr_nonnull(strstr(text, "ENTER 0 1000 R\nENTER 0 1000 S\n"));
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

/* Process `pid` on `host` (realtime at its start `rt`): one thread, one
 * region "P<pid>" [t, t + 1000]. */
static void write_proc(const char *host, uint32_t pid, uint64_t rt, uint64_t t)
{
    char path[700], name[32];
    snprintf(name, sizeof(name), "P%u", (unsigned)pid);
    tp_builder *b = tp_new(host, pid, -1);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, name, 1, 1000, 1000);
    tp_times(b, 500, 10000, rt, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/in/%s-p%u.gpuprof", dir, host,
             (unsigned)pid);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, pid, rt);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    gpuprof__io_trace_rec r = {t, t + 1000, 1, 0};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, &r, 1);
    snprintf(name, sizeof(name), "%s-p%u.gptrace", host, (unsigned)pid);
    write_file(name, buf, off);
}

START_TEST(hosts_share_a_clock)
{
    /* h1: pid 10 (realtime offset 1e9 - 500) and pid 30 (its own offset
     * 3e9 - 500, but h1's processes share CLOCK_MONOTONIC: the host's
     * first offset applies); h2, booted half a second earlier: pid 20
     * (offset 5e8 - 500). h2's clock is the base: h1's times move by
     * 5e8. */
    new_dir();
    write_proc("h1", 10, 1000000000, 1000);
    write_proc("h2", 20, 500000000, 3000);
    write_proc("h1", 30, 3000000000u, 5000);
    gpuprof_an_db *db = analyze();
    char archive[600];
    if (!exported(db, archive, sizeof(archive)))
        return;
    /* Files sorted by name: h1-p10, h1-p30, h2-p20 (locations 0, 1, 2). */
    char *text = events_of(archive);
    ck_assert_str_eq(text, "ENTER 2 3000 P20\nLEAVE 2 4000 P20\n"
                           "ENTER 0 500001000 P10\nLEAVE 0 500002000 P10\n"
                           "ENTER 1 500005000 P30\nLEAVE 1 500006000 P30\n");
    free(text);
    text = defs_of(archive);
    static const char *const defs[] = {
        "SYSTEM_TREE_NODE                       1  Name: \"h1\"",
        "SYSTEM_TREE_NODE                       2  Name: \"h2\"",
        "Name: \"pid 10\" <2>, Type: PROCESS, Parent: \"node::h1\" <1>",
        "Name: \"pid 30\" <4>, Type: PROCESS, Parent: \"node::h1\" <1>",
        "Name: \"pid 20\" <6>, Type: PROCESS, Parent: \"node::h2\" <2>",
        /* the first event at 3000 on h2: realtime 3000 + 5e8 - 500 */
        "Global Offset: 3000, Length: 500003000, Date: 1970-01-01 "
        "00:00:00.500002500"};
    has_all(text, defs, sizeof(defs) / sizeof(defs[0]));
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(no_traces_and_bad_arguments)
{
    write_run(0);
    gpuprof_an_db *db = analyze();
    char archive[600];
    snprintf(archive, sizeof(archive), "%s/x", dir);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(db, archive, NULL, 0),
                     GPUPROF_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "no traces"));
    ck_assert_int_eq(access(archive, F_OK), -1);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(NULL, archive, NULL, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(db, NULL, NULL, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(db, "", NULL, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_export_otf2(db, archive, NULL, 1),
                     GPUPROF_E_INVALID);
    gpuprof_an_db_close(db);
}
END_TEST

/* The critical path of a trace with dependency notes (check_an_cpath's
 * "basic", computed by hand there): region R [0, 22000] > region cpu
 * [6500, 16500]; launches L1 [1000, 1100] (kA on stream 0 [1200, 21200])
 * and L2 [1200, 1300] (kB on stream 1 [1400, 6400]); S1 [2000, 6500]
 * synchronizes stream 1, S2 [16500, 21300] and S3 [21400, 21500] stream 0.
 * The path: R 1000, L1 200 (until kA starts), kA 20000, S2 100, R 100, S3
 * 100, R 500. So R (1600 ns in all), L1, kA, S2 and S3 carry
 * critical_path 1 with their time on it; cpu, L2, S1 and kB 0. With
 * `sampled`, cpu.time samples at 500 in R (CPU work on the path), 10000
 * in cpu (off it: the path is in kA then) and 21350 in R (on it, between
 * S2 and S3). */
static void write_cpath_run(int damaged, int sampled)
{
    new_dir();
    char path[700];
    tp_builder *b = tp_new("h1", 10, -1);
    uint32_t m = sampled ? tp_metric(b, "cpu.time", GPUPROF_IO_UNIT_NS,
                                     GPUPROF_IO_KIND_CPU)
                         : 0;
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, "R", 1, 22000, 22000);   /* 1 */
    tp_region(b, r, "cpu", 1, 10000, 10000);                /* 2 */
    uint32_t mod = tp_gpu_module(b, "binaries/4a88.cubin"); /* no node */
    uint32_t la = tp_gpu_op(b, r, GPUPROF_OP_KERNEL);       /* 3 */
    tp_kernel(b, la, "kA", mod);                            /* 4 */
    uint32_t lb = tp_gpu_op(b, 2, GPUPROF_OP_KERNEL);       /* 5 */
    tp_kernel(b, lb, "kB", mod);                            /* 6 */
    tp_gpu_op(b, r, GPUPROF_OP_SYNC);                       /* 7 */
    tp_times(b, 0, 100000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/in/h1-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    uint8_t buf[4096];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    gpuprof__io_trace_rec reg[2] = {{0, 22000, 1, 0}, {6500, 16500, 2, 0}};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, reg, 2);
    gpuprof__io_trace_rec ops[5] = {{1000, 1100, 3, 1},
                                    {1200, 1300, 5, 2},
                                    {2000, 6500, 7, 3},
                                    {16500, 21300, 7, 4},
                                    {21400, 21500, 7, 5}};
    off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 0, ops, 5);
    gpuprof__io_trace_rec ka = {1200, 21200, 3, 1}, kb = {1400, 6400, 5, 2};
    off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU, 0,
                                          0, &ka, 1);
    off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU, 0,
                                          1, &kb, 1);
    gpuprof__io_trace_rec deps[3] = {
        {2000, 0, GPUPROF_IO_DEP_INFO(GPUPROF_DEP_SYNC_STREAM, 0, 0, 1), 3},
        {16500, 0, GPUPROF_IO_DEP_INFO(GPUPROF_DEP_SYNC_STREAM, 0, 0, 0), 4},
        {21400, 0, GPUPROF_IO_DEP_INFO(GPUPROF_DEP_SYNC_STREAM, 0, 0, 0), 5}};
    if (damaged) /* a note naming a call the trace does not hold */
        deps[2].corr = 99;
    off += gpuprof__io_trace_dep_records(buf + off, 0, 0, deps, 3);
    gpuprof__io_trace_rec smp[3] = {
        {500, 10, 1, m}, {10000, 10, 2, m}, {21350, 10, 1, m}};
    if (sampled)
        off += gpuprof__io_trace_sample_records(buf + off, smp, 3);
    write_file("h1-p10.gptrace", buf, off);
}

START_TEST(critical_path_exact)
{
    write_cpath_run(0, 0);
    gpuprof_an_db *db = analyze();
    char archive[600], *note = NULL;
    size_t nsize = 0;
    snprintf(archive, sizeof(archive), "%s/x", dir);
    FILE *notes = open_memstream(&note, &nsize);
    gpuprof_status st = gpuprof_an_db_export_otf2(db, archive, notes, 0);
    fclose(notes);
    if (without_otf2(st)) {
        gpuprof_an_db_close(db);
        free(note);
        return;
    }
    ck_assert_int_eq(st, GPUPROF_OK);
    ck_assert_str_eq(note, ""); /* nothing cut, the path known */
    free(note);
    /* Location 0 the thread, 1 and 2 the streams. */
    char *text = events_of(archive);
    ck_assert_str_eq(text, "ENTER 0 0 R cp=1 ns=1600\n"
                           "ENTER 0 1000 kernel launch: kA cp=1 ns=200\n"
                           "LEAVE 0 1100 kernel launch: kA cp=1 ns=200\n"
                           "ENTER 0 1200 kernel launch: kB cp=0\n"
                           "ENTER 1 1200 kA cp=1 ns=20000\n"
                           "LEAVE 0 1300 kernel launch: kB cp=0\n"
                           "ENTER 2 1400 kB cp=0\n"
                           "ENTER 0 2000 sync cp=0\n"
                           "LEAVE 2 6400 kB cp=0\n"
                           "LEAVE 0 6500 sync cp=0\n"
                           "ENTER 0 6500 cpu cp=0\n"
                           "LEAVE 0 16500 cpu cp=0\n"
                           "ENTER 0 16500 sync cp=1 ns=100\n"
                           "LEAVE 1 21200 kA cp=1 ns=20000\n"
                           "LEAVE 0 21300 sync cp=1 ns=100\n"
                           "ENTER 0 21400 sync cp=1 ns=100\n"
                           "LEAVE 0 21500 sync cp=1 ns=100\n"
                           "LEAVE 0 22000 R cp=1 ns=1600\n");
    free(text);
    text = defs_of(archive);
    ck_assert_msg(strstr(text, "Name: \"critical_path_ns\""), "%s", text);
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

/* CPU samples on the critical path (write_cpath_run's, sampled): those of
 * CPU work on the path carry critical_path 1, the one in cpu (off the
 * path) 0; none carries critical_path_ns. */
START_TEST(critical_path_samples)
{
    write_cpath_run(0, 1);
    gpuprof_an_db *db = analyze();
    char archive[600];
    if (!exported(db, archive, sizeof(archive)))
        return;
    char *text = events_of(archive);
    ck_assert_msg(strstr(text, "ENTER 0 0 R cp=1 ns=1600\n"
                               "SAMPLE 0 500 R unwind=1 cp=1\n"
                               "ENTER 0 1000 kernel launch: kA cp=1 ns=200\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "ENTER 0 6500 cpu cp=0\n"
                               "SAMPLE 0 10000 cpu unwind=2 cp=0\n"
                               "LEAVE 0 16500 cpu cp=0\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "LEAVE 0 21300 sync cp=1 ns=100\n"
                               "SAMPLE 0 21350 R unwind=1 cp=1\n"
                               "ENTER 0 21400 sync cp=1 ns=100\n"),
                  "%s", text);
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

/* A trace the analysis refuses (a note naming a call it does not hold):
 * exported all the same, without the attributes, the note saying why. */
START_TEST(critical_path_refused)
{
    write_cpath_run(1, 0);
    gpuprof_an_db *db = analyze();
    char archive[600], *note = NULL;
    size_t nsize = 0;
    snprintf(archive, sizeof(archive), "%s/x", dir);
    FILE *notes = open_memstream(&note, &nsize);
    gpuprof_status st = gpuprof_an_db_export_otf2(db, archive, notes, 0);
    fclose(notes);
    if (without_otf2(st)) {
        gpuprof_an_db_close(db);
        free(note);
        return;
    }
    ck_assert_int_eq(st, GPUPROF_OK);
    ck_assert_msg(strstr(note, ": no critical_path attributes: ") &&
                      strstr(note, "a dependency note names an API call the "
                                   "trace does not hold") &&
                      strchr(note, '\n') == note + strlen(note) - 1,
                  "%s", note);
    free(note);
    char *text = events_of(archive);
    ck_assert_ptr_null(strstr(text, "cp="));
    ck_assert_ptr_nonnull(strstr(text, "ENTER 1 1200 kA\n"));
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST


/* CPU samples (cpu.time) as calling-context samples. Thread "main" (tid
 * 100): R (node 1) > S (node 2), and frame libw.so+0x10 (node 3) beneath
 * R; regions R [1000, 9000], S [1000, 4000]; samples at 2000 and 5000 in
 * the frame, at 9000 in S (after R is left: it ended then). Thread
 * "worker" (tid 101) ran no region and no call: a location for its
 * samples alone, at 3000 and 3500 in frame libw.so+0x20 (node 1) at its
 * root. Calling contexts as first sampled: R (0, no parent), its frame
 * (1, unwind distance 2), S (2, beneath R), the worker's frame (3, at the
 * top: distance 1). The interrupt generator's period is the smallest
 * sample (10 ns). */
START_TEST(cpu_samples_exact)
{
    new_dir();
    char path[700];
    tp_builder *b = tp_new("h1", 10, -1);
    uint32_t mod = tp_module(b, "/usr/lib/libw.so");
    uint32_t m = tp_metric(b, "cpu.time", GPUPROF_IO_UNIT_NS,
                           GPUPROF_IO_KIND_CPU);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, "R", 1, 8000, 5000);
    ck_assert_uint_eq(tp_region(b, r, "S", 1, 3000, 3000), 2);
    ck_assert_uint_eq(tp_frame(b, r, mod, 0x10), 3);
    tp_thread(b, "worker", 0);
    ck_assert_uint_eq(tp_frame(b, 0, mod, 0x20), 1);
    tp_times(b, 500, 10000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/in/h1-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    uint8_t buf[4096];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "main");
    off += gpuprof__io_trace_thread_chunk(buf + off, 1, 101, "worker");
    gpuprof__io_trace_rec reg[2] = {{1000, 9000, 1, 0}, {1000, 4000, 2, 0}};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, reg, 2);
    gpuprof__io_trace_rec smp[5] = {
        {2000, 10, 3, m}, {5000, 30, 3, m}, {9000, 20, 2, m},
        {3000, 20, 1ull << 32 | 1, m}, {3500, 20, 1ull << 32 | 1, m}};
    off += gpuprof__io_trace_sample_records(buf + off, smp, 5);
    write_file("h1-p10.gptrace", buf, off);
    gpuprof_an_db *db = analyze();
    char archive[600];
    if (!exported(db, archive, sizeof(archive)))
        return;
    char *text = events_of(archive);
    ck_assert_str_eq(text, "ENTER 0 1000 R\n" /* otf2-print: by time */
                           "ENTER 0 1000 S\n"
                           "SAMPLE 0 2000 libw.so+0x10 unwind=2\n"
                           "SAMPLE 1 3000 libw.so+0x20 unwind=1\n"
                           "SAMPLE 1 3500 libw.so+0x20 unwind=1\n"
                           "LEAVE 0 4000 S\n"
                           "SAMPLE 0 5000 libw.so+0x10 unwind=2\n"
                           "LEAVE 0 9000 R\n"
                           "SAMPLE 0 9000 S unwind=2\n");
    free(text);
    text = defs_of(archive);
    static const char *const want[] = {
        "Name: \"main (tid 100)\" <3>, Type: CPU_THREAD, # Events: 7, ",
        "Name: \"worker (tid 101)\" <4>, Type: CPU_THREAD, # Events: 2, ",
        "Name: \"cpu.time\" <",
        ">, Mode: TIME, Base: DECIMAL, Exponent: -9, Period: 10\n",
        "CALLING_CONTEXT                        0  Region: \"R\" <",
        ">, Source code location: UNDEFINED, Parent: UNDEFINED\n"
        "CALLING_CONTEXT                        1  Region: \"libw.so+0x10\" <",
        ">, Source code location: UNDEFINED, Parent: \"R\" <0>\n"
        "CALLING_CONTEXT                        2  Region: \"S\" <",
        ">, Source code location: UNDEFINED, Parent: \"R\" <0>\n"
        "CALLING_CONTEXT                        3  Region: \"libw.so+0x20\" <",
        ">, Source code location: UNDEFINED, Parent: UNDEFINED\n"};
    has_all(text, want, sizeof(want) / sizeof(want[0]));
    ck_assert_ptr_null(strstr(text, "CALLING_CONTEXT                        4"));
    free(text);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"exact_events", exact_events, 30},
        {"hosts_share_a_clock", hosts_share_a_clock, 30},
        {"no_traces_and_bad_arguments", no_traces_and_bad_arguments, 30},
        {"critical_path_exact", critical_path_exact, 30},
        {"critical_path_refused", critical_path_refused, 30},
        {"cpu_samples_exact", cpu_samples_exact, 30},
        {"critical_path_samples", critical_path_samples, 30},
    };
    return RUN_SUITE("an_otf2", cases);
}
