/*
 * bench_otf2.c - the OTF2 export's speed (gpuprof_an_db_export_otf2) on a
 * generated trace of about a million events: one process, two threads,
 * each with a region around 1,000 step regions and 125,000 kernel
 * launches, and two GPU streams with the 125,000 kernels: 502,002 records,
 * 1,004,004 events. Every launch has its dependency note (the stream its
 * kernel goes to), so the export computes the critical path and writes
 * the critical_path attributes, as it does for a trace of sim, OpenCL or
 * CUPTI. The measurement (a profile written with
 * support/mkprofile, a trace with lib/io's chunk writer) is analyzed once,
 * untimed; then the export runs REPS times into a fresh directory.
 *
 *   otf2_export_events_per_s   events written per second (median), the
 *                              archive on disk included
 *   otf2_export_bytes_per_event  the archive's size per event
 *
 * Says "skipped" (and prints no figure) when built without OTF2 support
 * or without libotf2 at run time.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "gpuprof_analysis.h"
#include "io/trace.h"
#include "support/mkprofile.h"

#define REPS 5
#define STEPS 1000
#define LAUNCHES 125000 /* per thread */

static char root[256];
static uint64_t archive_bytes;

/* Records of one stream in chunks of at most the format's maximum (corr:
 * 0 plain records, 1 with correlation ids, 2 dependency notes). */
static void put(FILE *f, uint32_t flags, uint32_t dev, uint32_t id,
                const gpuprof__io_trace_rec *r, uint64_t n, int corr)
{
    static uint8_t
        buf[GPUPROF_IO_TRACE_CHUNK_HEADER +
            GPUPROF_IO_TRACE_MAX_RECORDS * GPUPROF_IO_TRACE_CORR_RECORD];
    for (uint64_t i = 0; i < n; i += GPUPROF_IO_TRACE_MAX_RECORDS) {
        uint32_t k = (uint32_t)(n - i < GPUPROF_IO_TRACE_MAX_RECORDS
                                    ? n - i
                                    : GPUPROF_IO_TRACE_MAX_RECORDS);
        size_t len =
            corr == 2 ? gpuprof__io_trace_dep_records(buf, flags, id, r + i, k)
            : corr    ? gpuprof__io_trace_corr_records(buf, flags, dev, id,
                                                       r + i, k)
                      : gpuprof__io_trace_records(buf, flags, dev, id, r + i, k);
        fwrite(buf, 1, len, f);
    }
}

/* Thread t: run (node 1) > step (node 2) > launch (node 3) > kernel. */
static int write_measurement(const char *dir)
{
    char path[512];
    tp_builder *b = tp_new("bench", 7, -1);
    for (uint32_t t = 0; t < 2; t++) {
        tp_thread(b, t ? "worker" : "main", t ? 0 : GPUPROF_IO_THREAD_MAIN);
        uint32_t run = tp_region(b, 0, "run", 1, 1, 1);
        uint32_t step = tp_region(b, run, "step", STEPS, 1, 1);
        tp_kernel(b, tp_gpu_op(b, step, 1), t ? "_Z6updatePfi" : "saxpy",
                  UINT32_MAX);
    }
    tp_times(b, 0, 1000000000, 1700000000000000000ull, 1,
             GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/bench-p7.gpuprof", dir);
    int rc = tp_write(b, path, 1);
    tp_free(b);
    snprintf(path, sizeof(path), "%s/bench-p7.gptrace", dir);
    FILE *f = fopen(path, "wb");
    gpuprof__io_trace_rec *r = malloc(LAUNCHES * sizeof(*r));
    if (rc || !f || !r)
        return -1;
    uint8_t hdr[GPUPROF_IO_TRACE_HEADER + 128];
    gpuprof__io_trace_header(hdr, 7, 1700000000000000000ull);
    fwrite(hdr, 1, GPUPROF_IO_TRACE_HEADER, f);
    for (uint32_t t = 0; t < 2; t++) {
        uint64_t ctx = (uint64_t)t << 32, per = LAUNCHES / STEPS;
        fwrite(hdr, 1,
               gpuprof__io_trace_thread_chunk(hdr, t, 100 + t,
                                              t ? "worker" : "main"),
               f);
        r[0] =
            (gpuprof__io_trace_rec){1000, 1000 + LAUNCHES * 1000, ctx | 1, 0};
        for (uint32_t s = 0; s < STEPS; s++)
            r[1 + s] = (gpuprof__io_trace_rec){1000 + s * per * 1000 + 10,
                                               1000 + (s + 1) * per * 1000 - 10,
                                               ctx | 2, 0};
        put(f, 0, 0, t, r, STEPS + 1, 0);
        for (uint64_t i = 0; i < LAUNCHES; i++)
            r[i] = (gpuprof__io_trace_rec){1000 + i * 1000 + 100,
                                           1000 + i * 1000 + 400, ctx | 3,
                                           ctx | (i + 1)};
        put(f, 0, 0, t, r, LAUNCHES, 1);
        for (uint64_t i = 0; i < LAUNCHES; i++)
            r[i] = (gpuprof__io_trace_rec){1000 + i * 1000 + 500,
                                           1000 + i * 1000 + 900, ctx | 3,
                                           ctx | (i + 1)};
        put(f, GPUPROF_IO_TRACE_GPU, 0, t, r, LAUNCHES, 1);
        for (uint64_t i = 0; i < LAUNCHES; i++) /* LAUNCH (8) onto stream t */
            r[i] = (gpuprof__io_trace_rec){1000 + i * 1000 + 100, 0,
                                           GPUPROF_IO_DEP_INFO(8, 0, 0, t),
                                           ctx | (i + 1)};
        put(f, 0, 0, t, r, LAUNCHES, 2);
    }
    free(r);
    return fclose(f) ? -1 : 0;
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *w)
{
    (void)fl;
    (void)w;
    if (S_ISREG(st->st_mode))
        archive_bytes += (uint64_t)st->st_size;
    return remove(p);
}

static void rm_tree(const char *p)
{
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    snprintf(root, sizeof(root), "%s/bench-otf2.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root))
        return 1;
    char in[300], db_dir[300], out[300];
    snprintf(in, sizeof(in), "%s/in", root);
    snprintf(db_dir, sizeof(db_dir), "%s/db", root);
    snprintf(out, sizeof(out), "%s/x", root);
    gpuprof_an_analysis *a = NULL;
    gpuprof_an_db *db = NULL;
    int bad = mkdir(in, 0777) || write_measurement(in) ||
              gpuprof_an_analysis_new(&a) != GPUPROF_OK ||
              gpuprof_an_analysis_add_input(a, in) != GPUPROF_OK ||
              gpuprof_an_analysis_set_output(a, db_dir) != GPUPROF_OK ||
              gpuprof_an_analysis_set_structure(a, 0) != GPUPROF_OK ||
              gpuprof_an_analysis_run(a) != GPUPROF_OK ||
              gpuprof_an_db_open(db_dir, &db) != GPUPROF_OK;
    gpuprof_an_analysis_free(a);
    uint64_t events = 0;
    for (uint32_t i = 0; !bad && i < gpuprof_an_db_trace_stream_count(db);
         i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        events += 2 * s.records;
    }
    double t[REPS];
    for (int k = 0; k < REPS && !bad; k++) {
        double t0 = bench_now_s();
        gpuprof_status st = gpuprof_an_db_export_otf2(db, out, NULL, 0);
        t[k] = bench_now_s() - t0;
        if (st == GPUPROF_E_UNAVAILABLE) {
            printf("BENCH otf2_export_events_per_s skipped (%s)\n",
                   gpuprof_an_last_error());
            break;
        }
        archive_bytes = 0;
        rm_tree(out);
        if (st != GPUPROF_OK || k < REPS - 1)
            bad |= st != GPUPROF_OK;
        else
            printf("BENCH otf2_export_events_per_s %.0f events/s\n"
                   "BENCH otf2_export_bytes_per_event %.2f bytes\n",
                   (double)events / bench_median(t, REPS),
                   (double)archive_bytes / (double)events);
    }
    if (bad)
        fprintf(stderr, "bench_otf2: %s\n", gpuprof_an_last_error());
    gpuprof_an_db_close(db);
    rm_tree(root);
    return bad;
}
