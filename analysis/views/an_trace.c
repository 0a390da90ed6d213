/*
 * an_trace.c - reading a trace file (`gpuprof dump FILE.gptrace`): what it
 * holds per stream (GPU streams, threads' regions, threads' operations,
 * threads' CPU samples), sorted by time, with correlation ids where the
 * format has them, and whether anything was cut off.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "../base/an_internal.h"
#include "io/trace.h"

static const char *thread_name(const gpuprof__io_trace *t, uint32_t seq,
                               uint64_t *tid)
{
    for (uint32_t i = 0; i < t->thread_count; i++)
        if (t->threads[i].seq == seq) {
            *tid = t->threads[i].tid;
            return t->threads[i].name;
        }
    *tid = 0;
    return "";
}

/* One stream: a header line, then its first five records. */
static int print_stream(FILE *out, const gpuprof__io_trace *t,
                        const gpuprof__io_trace_stream *s, bool ops)
{
    uint64_t busy = 0, first = s->count ? s->recs[0].start_ns : 0, last = 0;
    for (uint64_t j = 0; j < s->count; j++) {
        busy += s->recs[j].end_ns - s->recs[j].start_ns;
        if (s->recs[j].end_ns > last)
            last = s->recs[j].end_ns;
    }
    char b[32], span[32];
    gpuprof__an_fmt_ns(b, sizeof(b), busy);
    gpuprof__an_fmt_ns(span, sizeof(span), last - first);
    int w;
    if (s->gpu) {
        w = fprintf(out, "\ngpu device %" PRIu32 " stream %" PRIu32
                    ": %" PRIu64 " records, busy %s over %s%s\n",
                    s->device, s->id, s->count, b, span,
                    s->out_of_order ? " (arrived out of order; sorted)" : "");
    } else {
        uint64_t tid;
        const char *name = thread_name(t, s->id, &tid);
        w = fprintf(out, "\nthread %" PRIu32 " \"%s\" tid %" PRIu64
                    ": %" PRIu64 " %s records over %s\n", s->id, name, tid,
                    s->count, ops ? "operation" : "region", span);
    }
    for (uint64_t j = 0; j < s->count && j < 5 && w >= 0; j++) {
        const gpuprof__io_trace_rec *r = &s->recs[j];
        w = fprintf(out, "  %" PRIu64 " .. %" PRIu64 "  thread %" PRIu64
                    " node %" PRIu64, r->start_ns - first, r->end_ns - first,
                    r->context >> 32, r->context & 0xFFFFFFFFu);
        if (w >= 0)
            w = r->corr ? fprintf(out, " corr %#" PRIx64 "\n", r->corr)
                        : fprintf(out, "\n");
    }
    if (s->count > 5 && w >= 0)
        w = fprintf(out, "  ... %" PRIu64 " more\n", s->count - 5);
    return w;
}

/* A thread's CPU samples (format 1.5): a header line with their number
 * and their values' sum, then the first five (time, node, value and the
 * profile's metric index). */
static int print_samples(FILE *out, const gpuprof__io_trace *t,
                         const gpuprof__io_trace_stream *s)
{
    uint64_t sum = 0, first = s->count ? s->recs[0].start_ns : 0;
    for (uint64_t j = 0; j < s->count; j++)
        sum += s->recs[j].end_ns;
    uint64_t tid, last = s->count ? s->recs[s->count - 1].start_ns : 0;
    const char *name = thread_name(t, s->id, &tid);
    char span[32];
    gpuprof__an_fmt_ns(span, sizeof(span), last - first);
    int w = fprintf(out, "\nthread %" PRIu32 " \"%s\" tid %" PRIu64
                    ": %" PRIu64 " samples over %s, values summing to %"
                    PRIu64 "\n", s->id, name, tid, s->count, span, sum);
    for (uint64_t j = 0; j < s->count && j < 5 && w >= 0; j++) {
        const gpuprof__io_trace_rec *r = &s->recs[j];
        w = fprintf(out, "  %" PRIu64 "  node %" PRIu64 " value %" PRIu64
                    " metric %" PRIu64 "\n", r->start_ns - first,
                    r->context & 0xFFFFFFFFu, r->end_ns, r->corr);
    }
    if (s->count > 5 && w >= 0)
        w = fprintf(out, "  ... %" PRIu64 " more\n", s->count - 5);
    return w;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_trace_print(const char *path,
                                                     FILE *out, uint32_t flags)
{
    if (!path || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_trace_print: bad argument");
    gpuprof__io_trace *t = NULL;
    char err[256];
    int rc = gpuprof__io_trace_read_file(path, &t, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof__io_trace_sort(t);
    int w = fprintf(out, "trace      %s\nformat     %d.%" PRIu32 "\npid        %"
                    PRIu32 "\nchunks     %" PRIu64 "\nstreams    %" PRIu32
                    "\n", path, GPUPROF_IO_TRACE_MAJOR, t->minor, t->pid,
                    t->chunks, t->stream_count + t->op_stream_count);
    if (t->ignored_bytes)
        w = fprintf(out, "ignored    %" PRIu64 " bytes at the end (%s)\n",
                    t->ignored_bytes, t->ignored_why);
    uint32_t merged = 0; /* threads with node maps (sorted by thread) */
    for (uint32_t i = 0; i < t->merge_count; i++)
        merged += !i || t->merges[i].seq != t->merges[i - 1].seq;
    if (merged && w >= 0)
        w = fprintf(out, "merged     %" PRIu32 " thread%s summed into the "
                    "merged state (node maps)\n", merged, merged == 1 ? "" : "s");
    uint32_t n = t->stream_count + t->op_stream_count;
    for (uint32_t i = 0; i < n && w >= 0; i++)
        w = print_stream(out, t, i < t->stream_count
                                     ? &t->streams[i]
                                     : &t->ops[i - t->stream_count],
                         i >= t->stream_count);
    for (uint32_t i = 0; i < t->sample_stream_count && w >= 0; i++)
        w = print_samples(out, t, &t->samples[i]);
    gpuprof__io_trace_free(t);
    if (w < 0 || fflush(out) != 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "cannot write the trace listing");
    return GPUPROF_OK;
}
