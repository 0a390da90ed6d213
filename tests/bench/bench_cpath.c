/*
 * bench_cpath.c - the trace analysis's figures (analysis/cpath):
 *
 *   cpath_events_per_s   trace.db records (API calls, device work,
 *                        dependency notes, regions) per second through
 *                        gpuprof_an_cpath_new: graph build, wait states,
 *                        GPU idleness and the critical path, per second of
 *                        the analysing thread's CPU time (it runs on one
 *                        thread; CPU time, not wall time, so a machine
 *                        shared with other work gives the same figure),
 *                        median of 3; goal >= 1e6
 *   cpath_peak_rss_mb    peak resident MB of a process that opens the
 *                        database and analyses it, per million records
 *   advise_projected_per_s  GPU advice suggestions projected per second
 *                        (gpuprof_an_advice_project: each one replays the
 *                        run with its kernel faster) on a trace of about a
 *                        million records (350,000 launches), the kernels'
 *                        PC samples on their nodes (advice per kernel)
 *   cpath_name_steps_ns  ns of the analysing thread's CPU time to name one
 *                        step of the critical path (gpuprof_an_cpath_step_name
 *                        over the whole path of a trace of 100,000 launches
 *                        whose thread has a cpu.time sample in each piece of
 *                        CPU work between calls, on 4 frames in turn: every
 *                        CPU step is named by its samples)
 *
 * The trace is made here: one thread launching kernels round-robin onto 4
 * streams, every 4th launch followed by a stream synchronize, every 16th
 * by an event record and a stream wait, every 32nd by a failed and a ready
 * stream query; `gpuprof analyze` (the library, untimed) makes trace.db.
 * The measured part runs in a fresh process of this program (argument
 * "child DB") so its peak RSS is its own.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "gpuprof_analysis.h"
#include "io/trace.h"
#include "support/mkprofile.h"

#define STEPS 200000u
#define CHUNK 65536u

typedef struct recs {
    gpuprof__io_trace_rec *r;
    uint32_t n;
} recs;

static void push(recs *v, gpuprof__io_trace_rec x)
{
    if ((v->n & (v->n - 1)) == 0) {
        v->r = realloc(v->r, (v->n ? 2 * (size_t)v->n : 1) * sizeof(*v->r));
        if (!v->r)
            abort();
    }
    v->r[v->n++] = x;
}

static FILE *trace_file;
static uint64_t total;

/* kind: 0 API calls, 1 GPU stream `stream`, 2 dependency notes, 3 CPU
 * samples. */
static void write_chunks(recs *v, int kind, uint32_t stream)
{
    static uint8_t buf[GPUPROF_IO_TRACE_CHUNK_HEADER + CHUNK * 32];
    for (uint32_t i = 0; i < v->n; i += CHUNK) {
        uint32_t n = v->n - i < CHUNK ? v->n - i : CHUNK;
        size_t len =
            kind == 0   ? gpuprof__io_trace_corr_records(buf, 0, 0, 0, v->r + i, n)
            : kind == 1 ? gpuprof__io_trace_corr_records(
                              buf, GPUPROF_IO_TRACE_GPU, 0, stream, v->r + i, n)
            : kind == 2 ? gpuprof__io_trace_dep_records(buf, 0, 0, v->r + i, n)
                        : gpuprof__io_trace_sample_records(buf, v->r + i, n);
        fwrite(buf, 1, len, trace_file);
    }
    total += v->n;
    free(v->r);
}

/* Placeholders: 4 kernel launch sites (node 4 + 3p under frame 3 + 3p),
 * then sync (p 4), event (5), wait (6), query (7). */
#define PH(p) (4u + 3u * (p))

/* With `sampled`, a cpu.time sample (1000 ns) at the middle of each piece
 * of CPU work between two launches, in frame 3 + 3 (i % 4) beneath R. */
static void make(const char *dir, uint32_t steps, bool sampled)
{
    char path[512];
    tp_builder *b = tp_new("host", 10, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, "R", 1, 1000, 1000);
    tp_region(b, r, "cpu", 0, 0, 0); /* node 2, as in check_an_cpath */
    uint32_t mod = tp_module(b, "/bin/app"), pc[4];
    for (uint32_t p = 0; p < 8; p++) {
        tp_frame(b, r, mod, 0x100 + 16 * p);
        tp_gpu_op(b, PH(p) - 1, p < 4 ? 1 : p == 4 ? 9 : 12);
        char k[16];
        snprintf(k, sizeof(k), "k%u", p);
        if (p < 4) /* PC samples: 1/(p+2) of them at a barrier */
            pc[p] = tp_kernel(b, PH(p), k, UINT32_MAX);
        else /* keep the node numbering */
            tp_region(b, 0, k, 0, 0, 0);
    }
    uint32_t ms = tp_metric(b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR),
             mb = tp_metric(b, "gpu.pc.stall.barrier", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR);
    for (uint32_t p = 0; p < 4; p++) {
        tp_node_value(b, pc[p], ms, 1200);
        tp_node_value(b, pc[p], mb, 1200 / (p + 2));
    }
    uint32_t mc = sampled ? tp_metric(b, "cpu.time", GPUPROF_IO_UNIT_NS,
                                      GPUPROF_IO_KIND_CPU)
                          : 0;
    tp_times(b, 0, 1000000000000ull, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gpuprof", dir);
    int rc = tp_write(b, path, 0);
    if (rc) {
        fprintf(stderr, "bench_cpath: cannot write %s (%d)\n", path, rc);
        exit(1);
    }
    tp_free(b);
    recs ops = {0}, deps = {0}, gpu[4] = {{0}}, smp = {0};
    uint64_t t = 1000, clk[4] = {0}, corr = 1ull << 40, ev = 0;
    for (uint32_t i = 0; i < steps; i++) {
        uint32_t j = i % 4;
        uint64_t c = ++corr, s = clk[j] > t + 200 ? clk[j] : t + 200;
        push(&ops, (gpuprof__io_trace_rec){t, t + 1000, PH(j), c});
        push(&gpu[j], (gpuprof__io_trace_rec){s, s + 3000, PH(j), c});
        clk[j] = s + 3000;
        if (sampled)
            push(&smp, (gpuprof__io_trace_rec){t + 1250, 1000, 3 + 3 * j, mc});
        t += 1500;
        if (i % 4 == 3) { /* sync stream j */
            uint64_t e = clk[j] + 100 > t + 500 ? clk[j] + 100 : t + 500;
            push(&ops, (gpuprof__io_trace_rec){t, e, PH(4), ++corr});
            push(&deps, (gpuprof__io_trace_rec){
                            t, 0, GPUPROF_IO_DEP_INFO(2, 0, 0, j), corr});
            t = e + 100;
        }
        if (i % 16 == 15) { /* event on j, stream j+1 waits for it */
            push(&ops, (gpuprof__io_trace_rec){t, t + 100, PH(5), ev = ++corr});
            push(&deps, (gpuprof__io_trace_rec){
                            t, 0, GPUPROF_IO_DEP_INFO(6, 0, 0, j), corr});
            t += 200;
            push(&ops, (gpuprof__io_trace_rec){t, t + 100, PH(6), ++corr});
            push(&deps, (gpuprof__io_trace_rec){
                            t, ev, GPUPROF_IO_DEP_INFO(7, 0, 0, (j + 1) % 4),
                            corr});
            t += 200;
        }
        if (i % 32 == 31) { /* query stream j: not done, then done */
            push(&ops, (gpuprof__io_trace_rec){t, t + 100, PH(7), ++corr});
            push(&deps, (gpuprof__io_trace_rec){
                            t, 0, GPUPROF_IO_DEP_INFO(4, 0, 0, j), corr});
            t = (clk[j] > t + 200 ? clk[j] : t + 200) + 50;
            push(&ops, (gpuprof__io_trace_rec){t, t + 100, PH(7), ++corr});
            push(&deps, (gpuprof__io_trace_rec){
                            t, 0, GPUPROF_IO_DEP_INFO(4, 1, 0, j), corr});
            t += 200;
        }
    }
    snprintf(path, sizeof(path), "%s/h-r0-p10.gptrace", dir);
    trace_file = fopen(path, "wb");
    uint8_t h[GPUPROF_IO_TRACE_HEADER + 128];
    gpuprof__io_trace_header(h, 10, 1000000);
    size_t n = GPUPROF_IO_TRACE_HEADER;
    n += gpuprof__io_trace_thread_chunk(h + n, 0, 100, "main");
    gpuprof__io_trace_rec reg = {0, t + 1000, r, 0};
    n += gpuprof__io_trace_records(h + n, 0, 0, 0, &reg, 1);
    fwrite(h, 1, n, trace_file);
    total = 1;
    write_chunks(&ops, 0, 0);
    for (uint32_t j = 0; j < 4; j++)
        write_chunks(&gpu[j], 1, j);
    write_chunks(&deps, 2, 0);
    if (sampled)
        write_chunks(&smp, 3, 0);
    fclose(trace_file);
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int child(const char *db_dir)
{
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(db_dir, &db) != GPUPROF_OK)
        return 1;
    uint64_t events = 0;
    for (uint32_t i = 0; i < gpuprof_an_db_trace_stream_count(db); i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        events += s.records;
    }
    double t[3];
    for (int k = 0; k < 3; k++) {
        gpuprof_an_cpath *cp;
        double t0 = thread_cpu_s();
        if (gpuprof_an_cpath_new(db, NULL, NULL, &cp) != GPUPROF_OK) {
            fprintf(stderr, "bench_cpath: %s\n", gpuprof_an_last_error());
            return 1;
        }
        t[k] = thread_cpu_s() - t0;
        gpuprof_an_cpath_free(cp);
    }
    printf("%llu %.9f\n", (unsigned long long)events, bench_median(t, 3));
    gpuprof_an_db_close(db);
    return 0;
}

/* The trace of `steps` launches in dir, analyzed into dir/db. */
static int made(const char *dir, uint32_t steps, bool sampled, char *db,
                size_t size)
{
    snprintf(db, size, "%s/db", dir);
    make(dir, steps, sampled);
    gpuprof_an_analysis *a;
    if (gpuprof_an_analysis_new(&a) != GPUPROF_OK ||
        gpuprof_an_analysis_add_input(a, dir) != GPUPROF_OK ||
        gpuprof_an_analysis_set_output(a, db) != GPUPROF_OK ||
        gpuprof_an_analysis_run(a) != GPUPROF_OK) {
        fprintf(stderr, "bench_cpath: %s\n", gpuprof_an_last_error());
        return 1;
    }
    gpuprof_an_analysis_free(a);
    return 0;
}

/* advise_projected_per_s: the advice's suggestions projected on the
 * trace, per second of this thread's CPU time (the advice and the
 * critical path made beforehand, untimed). */
static int projected(const char *dir)
{
    char db_dir[300];
    if (made(dir, 350000, false, db_dir, sizeof(db_dir)))
        return 1;
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1); /* no cubin: per kernel */
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp;
    gpuprof_an_advice *a;
    if (gpuprof_an_db_open(db_dir, &db) != GPUPROF_OK ||
        gpuprof_an_cpath_new(db, NULL, NULL, &cp) != GPUPROF_OK ||
        gpuprof_an_db_advise(db, 0, &a) != GPUPROF_OK) {
        fprintf(stderr, "bench_cpath: %s\n", gpuprof_an_last_error());
        return 1;
    }
    double t0 = thread_cpu_s();
    if (gpuprof_an_advice_project(a, db, cp, 0, 0) != GPUPROF_OK) {
        fprintf(stderr, "bench_cpath: %s\n", gpuprof_an_last_error());
        return 1;
    }
    double secs = thread_cpu_s() - t0;
    uint32_t n = 0;
    while (gpuprof_an_advice_ranked(a, n, NULL, NULL))
        n++;
    printf("BENCH advise_projected_per_s %.2f suggestions/s\n", n / secs);
    gpuprof_an_advice_free(a);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
    return 0;
}

/* cpath_name_steps_ns: every step of the path named, per step, median of
 * 3 (the critical path made beforehand, untimed); fails when no CPU step
 * is named by a sampled frame. */
static int named(const char *dir)
{
    char db_dir[300];
    if (made(dir, 100000, true, db_dir, sizeof(db_dir)))
        return 1;
    gpuprof_an_db *db;
    gpuprof_an_cpath *cp;
    if (gpuprof_an_db_open(db_dir, &db) != GPUPROF_OK ||
        gpuprof_an_cpath_new(db, NULL, NULL, &cp) != GPUPROF_OK) {
        fprintf(stderr, "bench_cpath: %s\n", gpuprof_an_last_error());
        return 1;
    }
    uint64_t n = gpuprof_an_cpath_steps(cp, 0, 0, NULL, 0), by_frame = 0;
    double t[3];
    for (int k = 0; k < 3; k++) {
        gpuprof_an_path_step st[256];
        char name[512];
        uint64_t got;
        by_frame = 0;
        double t0 = thread_cpu_s();
        for (uint64_t first = 0;
             (got = gpuprof_an_cpath_steps(cp, 0, first, st, 256)) > 0;
             first += got)
            for (uint64_t i = 0; i < got; i++)
                by_frame += !strncmp(gpuprof_an_cpath_step_name(
                                         cp, &st[i], name, sizeof(name)),
                                     "app+0x", 6);
        t[k] = thread_cpu_s() - t0;
    }
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
    if (!n || !by_frame) {
        fprintf(stderr, "bench_cpath: no step named by its samples\n");
        return 1;
    }
    printf("BENCH cpath_name_steps_ns %.1f ns/step\n",
           bench_median(t, 3) * 1e9 / (double)n);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "child"))
        return child(argv[2]);
    char dir[256], db[300];
    snprintf(dir, sizeof(dir), "%s/bench_cpath.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    if (made(dir, STEPS, false, db, sizeof(db)))
        return 1;
    int fd[2];
    if (pipe(fd))
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        execl("/proc/self/exe", argv[0], "child", db, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[128] = "";
    FILE *f = fdopen(fd[0], "r");
    if (!f || !fgets(line, sizeof(line), f))
        line[0] = '\0';
    int status = 0;
    struct rusage ru;
    unsigned long long events = 0;
    double secs = 0;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) || sscanf(line, "%llu %lf", &events, &secs) != 2 ||
        !events || secs <= 0) {
        fprintf(stderr, "bench_cpath: the analysis failed\n");
        return 1;
    }
    printf("BENCH cpath_events_per_s %.0f events/s\n", (double)events / secs);
    printf("BENCH cpath_peak_rss_mb %.1f MB per million events\n",
           (double)ru.ru_maxrss / 1024.0 / ((double)events / 1e6));
    char big[300];
    snprintf(big, sizeof(big), "%s/big", dir);
    if (mkdir(big, 0755) || projected(big))
        return 1;
    char smp[300];
    snprintf(smp, sizeof(smp), "%s/sampled", dir);
    if (mkdir(smp, 0755) || named(smp))
        return 1;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
