/*
 * an_tracedb.c - trace.db's writer (an_tracedb.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/an_buf.h"
#include "../base/an_internal.h"
#include "an_tracedb.h"
#include "io/trace.h"

#define GP_TRACE_EXT ".gptrace"

bool gpuprof__an_trace_path(const char *profile, char *out, size_t size)
{
    size_t n = strlen(profile);
    if (n < 8 || strcmp(profile + n - 8, ".gpuprof") ||
        n - 8 + sizeof(GP_TRACE_EXT) > size)
        return false;
    memcpy(out, profile, n - 8);
    memcpy(out + n - 8, GP_TRACE_EXT, sizeof(GP_TRACE_EXT));
    return true;
}

static gpuprof_status trace_put(gpuprof__an_tracedb *d, const void *b, size_t n)
{
    return gpuprof__an_dbfile_put(&d->f, b, n, d->threads);
}

/* The profile whose trace is being read: its path, decoding, node map and
 * first profile in the database. */
typedef struct owner {
    const char *path;
    const gpuprof__io_profile *p;
    const uint32_t *ctx;
    const uint32_t *metric; /* local metric -> base metric */
    uint32_t p0;
} owner;

/* A warning (the caller's callback, if any): one line naming the file. */
static void warn(const gpuprof__an_tracedb *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const gpuprof__an_tracedb *d, const char *fmt, ...)
{
    if (!d->warn)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    d->warn(msg, d->warn_user);
}

/* The profile thread of a trace's thread `seq`: the first with its OS tid;
 * a thread the profile no longer holds on its own was summed into the
 * "exited threads (merged)" state (GPUPROF_KEEP_THREADS): its records are
 * that thread's (*merged set), their nodes mapped by the trace's MERGED
 * chunks (format 1.2; unknown contexts without). UINT32_MAX: none. */
static uint32_t trace_thread(const gpuprof__io_profile *p,
                             const gpuprof__io_trace *t, uint32_t seq,
                             bool *merged)
{
    *merged = false;
    uint32_t q = 0;
    while (q < t->thread_count && t->threads[q].seq != seq)
        q++;
    if (q == t->thread_count)
        return UINT32_MAX;
    uint64_t tid = t->threads[q].tid;
    for (uint32_t k = 0; k < p->thread_count; k++)
        if (p->threads[k].tid == tid &&
            !(p->threads[k].flags & GPUPROF_IO_THREAD_MERGED))
            return k;
    for (uint32_t k = 0; k < p->thread_count; k++)
        if (p->threads[k].flags & GPUPROF_IO_THREAD_MERGED) {
            *merged = true;
            return k;
        }
    return UINT32_MAX;
}

/* A sample's metric (the profile's index) as the database's: the
 * exclusive variant of its base metric. */
static uint32_t sample_metric(const owner *o, uint64_t local)
{
    return o->metric && local < o->p->metric_count
               ? 2 * o->metric[local] + GPUPROF_AN_EXCLUSIVE
               : UINT32_MAX;
}

/* One batch of a stream's records into b, contexts mapped; samples (trace
 * 1.5) keep their time as start and end, their value as correlation. */
static void trace_batch(const owner *o, const gpuprof__io_trace *t,
                        const gpuprof__io_trace_rec *x, uint32_t n, uint8_t *b,
                        bool samples)
{
    const gpuprof__io_profile *p = o->p;
    uint32_t cur_seq = UINT32_MAX, cur = UINT32_MAX;
    bool merged = false;
    for (uint32_t k = 0; k < n; k++, x++) {
        uint32_t seq = (uint32_t)(x->context >> 32);
        uint32_t node = (uint32_t)x->context;
        if (seq != cur_seq) {
            cur_seq = seq;
            cur = trace_thread(p, t, seq, &merged);
        }
        if (merged) /* its node in the merged state, if the trace says */
            node = gpuprof__io_trace_merged_node(t, seq, node);
        uint32_t ctx = UINT32_MAX;
        if (cur != UINT32_MAX && node < p->threads[cur].node_count)
            ctx = o->ctx[p->threads[cur].first_node + node];
        uint8_t *q = b + (size_t)k * DB_TRACE_REC;
        db_put64(q, x->start_ns);
        db_put64(q + 8, samples ? x->start_ns : x->end_ns);
        db_put64(q + 16, samples ? x->end_ns : x->corr);
        db_put32(q + 24, ctx);
        db_put32(q + 28, samples ? sample_metric(o, x->corr) : 0);
    }
}

/* A thread's dependency notes (trace 1.3) as trace.db keeps them: the
 * note's what, flags and device, and its stream, in place of a context. */
static void deps_batch(const gpuprof__io_trace_rec *x, uint32_t n, uint8_t *b)
{
    for (uint32_t k = 0; k < n; k++, x++) {
        uint8_t *q = b + (size_t)k * DB_TRACE_REC;
        db_put64(q, x->start_ns);
        db_put64(q + 8, x->end_ns);
        db_put64(q + 16, x->corr);
        db_put32(q + 24, (uint32_t)x->context);
        db_put32(q + 28, (uint32_t)(x->context >> 32 & 0x7FFFFFFF));
    }
}

/* A thread's MPI calls (trace 1.4) as trace.db keeps them: the trace's
 * 64-byte layout, two slots each. */
static void mpi_batch(const gpuprof__io_mpi_rec *x, uint32_t n, uint8_t *b)
{
    for (uint32_t k = 0; k < n; k++, x++) {
        uint8_t *q = b + (size_t)k * DB_TRACE_MPI_REC;
        memset(q, 0, DB_TRACE_MPI_REC);
        db_put64(q, x->start_ns);
        db_put64(q + 8, x->end_ns);
        db_put64(q + 16, x->bytes);
        db_put64(q + 24, x->request);
        db_put64(q + 32, x->aux);
        db_put32(q + 40, x->comm);
        db_put32(q + 44, (uint32_t)x->peer);
        db_put32(q + 48, (uint32_t)x->tag);
        q[52] = x->op;
        q[53] = x->flags;
    }
}

/* A thread's host records (trace 1.5) as trace.db keeps them: two slots
 * each. */
static void host_batch(const gpuprof__io_host_rec *x, uint32_t n, uint8_t *b)
{
    for (uint32_t k = 0; k < n; k++, x++) {
        uint8_t *q = b + (size_t)k * DB_TRACE_HOST_REC;
        memset(q, 0, DB_TRACE_HOST_REC);
        db_put64(q, x->start_ns);
        db_put64(q + 8, x->end_ns);
        db_put64(q + 16, x->object);
        db_put64(q + 24, x->aux);
        q[32] = x->op;
        q[33] = x->flags;
    }
}

/* One stream: its records, then its table entry. A thread's stream whose
 * thread the profile does not hold (its profile predates the thread) has
 * no profile to belong to: it is left out, with a warning (strict: the
 * run stops). */
static gpuprof_status trace_stream(gpuprof__an_tracedb *d, const owner *o,
                                   const gpuprof__io_trace *t,
                                   const gpuprof__io_trace_stream *st,
                                   uint8_t kind, const char *path,
                                   const void *wide)
{
    if (!st->count)
        return GPUPROF_OK;
    uint32_t own = UINT32_MAX;
    if (kind != DB_TRACE_GPU) {
        bool merged;
        own = trace_thread(o->p, t, st->id, &merged);
        if (own == UINT32_MAX && d->strict)
            return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                    "%s: thread %" PRIu32 " is not in the "
                                    "profile (--strict)",
                                    path, st->id);
        if (own == UINT32_MAX) {
            d->dropped++;
            warn(d,
                 "%s: thread %" PRIu32 " is not in the profile: its %" PRIu64
                 " records are left out",
                 path, st->id, st->count);
            return GPUPROF_OK;
        }
    }
    enum { BATCH = 4096 };
    uint8_t *b = malloc((size_t)BATCH * DB_TRACE_MPI_REC);
    if (!b)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t at = d->f.at;
    gpuprof_status rc = GPUPROF_OK;
    for (uint64_t i = 0; i < st->count && rc == GPUPROF_OK; i += BATCH) {
        uint32_t n = st->count - i < BATCH ? (uint32_t)(st->count - i) : BATCH;
        size_t size = DB_TRACE_REC;
        if (kind == DB_TRACE_MPI) {
            mpi_batch(&((const gpuprof__io_mpi_rec *)wide)[i], n, b);
            size = DB_TRACE_MPI_REC;
        } else if (kind == DB_TRACE_HOST) {
            host_batch(&((const gpuprof__io_host_rec *)wide)[i], n, b);
            size = DB_TRACE_HOST_REC;
        } else if (kind == DB_TRACE_DEPS) {
            deps_batch(&st->recs[i], n, b);
        } else {
            trace_batch(o, t, &st->recs[i], n, b, kind == DB_TRACE_SAMPLES);
        }
        rc = trace_put(d, b, (size_t)n * size);
    }
    free(b);
    if (rc != GPUPROF_OK)
        return rc;
    if (!gpuprof__an_grow((void **)&d->tab, &d->cap, d->nstreams,
                          DB_TRACE_STREAM))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint8_t *e = d->tab + (size_t)d->nstreams++ * DB_TRACE_STREAM;
    memset(e, 0, DB_TRACE_STREAM);
    db_put32(e, own == UINT32_MAX ? UINT32_MAX : o->p0 + own);
    db_put32(e + 4, o->p0);
    e[8] = kind;
    db_put32(e + 12, kind == DB_TRACE_GPU ? st->device : 0);
    db_put32(e + 16, kind == DB_TRACE_GPU ? st->id : 0);
    db_put64(e + 24, o->p->start_realtime_ns - o->p->start_ns);
    db_put64(e + 32, at);
    db_put64(e + 40, kind == DB_TRACE_MPI || kind == DB_TRACE_HOST
                         ? 2 * st->count
                         : st->count);
    return GPUPROF_OK;
}

/* Slack between the profile's start and the trace's (both CLOCK_REALTIME,
 * read microseconds apart at init; the clock may be stepped). */
#define TRACE_START_SLACK_NS 1000000000ull

/* The trace must be its profile's process's: the same pid, tracing
 * started while that process ran. */
static gpuprof_status trace_owner(const owner *o, const gpuprof__io_trace *t,
                                  const char *path)
{
    const gpuprof__io_profile *p = o->p;
    uint64_t lo = p->start_realtime_ns, hi = lo + (p->end_ns - p->start_ns);
    if (t->pid != p->pid)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: written by process %" PRIu32
                                ", not by the process of %s (%" PRIu32
                                "): a trace of another process",
                                path, t->pid, o->path, p->pid);
    if (t->start_realtime_ns + TRACE_START_SLACK_NS < lo ||
        t->start_realtime_ns > hi + TRACE_START_SLACK_NS)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: tracing started outside the run of %s: "
                                "another process with pid %" PRIu32 " wrote it",
                                path, o->path, t->pid);
    return GPUPROF_OK;
}

/* A trace that is empty or torn before its header ends: nothing to use;
 * said (and counted), or refused when strict. */
static gpuprof_status trace_torn(gpuprof__an_tracedb *d, const char *path,
                                 uint64_t size)
{
    if (d->strict)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: %s (no trace header; --strict)", path,
                                size ? "torn" : "empty");
    d->damaged++;
    d->ignored += size;
    warn(d, "%s: ignored %" PRIu64 " bytes: %s, no trace header", path, size,
         size ? "torn" : "empty");
    return GPUPROF_OK;
}

/* The trace's header, then whether its bytes can all be used. */
static gpuprof_status trace_check(gpuprof__an_tracedb *d, const owner *o,
                                  const gpuprof__io_trace *t, const char *path)
{
    gpuprof_status st = trace_owner(o, t, path);
    if (st != GPUPROF_OK || !t->ignored_bytes)
        return st;
    if (d->strict)
        st = gpuprof__an_fail(GPUPROF_E_CORRUPT,
                              "%s: damaged: %" PRIu64 " bytes at the end "
                              "cannot be read (%s; --strict)",
                              path, t->ignored_bytes, t->ignored_why);
    d->damaged++;
    d->ignored += t->ignored_bytes;
    if (st == GPUPROF_OK)
        warn(d, "%s: ignored %" PRIu64 " bytes at the end (%s)", path,
             t->ignored_bytes, t->ignored_why);
    return st;
}

gpuprof_status gpuprof__an_tracedb_add(gpuprof__an_tracedb *d,
                                       const char *profile,
                                       const gpuprof__io_profile *p,
                                       const uint32_t *ctx,
                                       const uint32_t *metric, uint32_t p0)
{
    const owner o = {profile, p, ctx, metric, p0};
    char path[4200], err[256];
    if (!gpuprof__an_trace_path(profile, path, sizeof(path)))
        return GPUPROF_OK;
    uint8_t *buf;
    size_t got;
    int rc = gpuprof__io_read_whole(path, &buf, &got, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof__io_trace *t = NULL;
    if (got < GPUPROF_IO_TRACE_HEADER) {
        free(buf);
        return trace_torn(d, path, got);
    }
    rc = gpuprof__io_trace_decode(buf, got, &t, err, sizeof(err));
    free(buf);
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof_status st = trace_check(d, &o, t, path);
    if (st == GPUPROF_OK)
        gpuprof__io_trace_sort(t);
    for (uint32_t i = 0; i < t->stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(d, &o, t, &t->streams[i],
                          t->streams[i].gpu ? DB_TRACE_GPU : DB_TRACE_REGIONS,
                          path, NULL);
    for (uint32_t i = 0; i < t->op_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(d, &o, t, &t->ops[i], DB_TRACE_OPS, path, NULL);
    for (uint32_t i = 0; i < t->dep_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(d, &o, t, &t->deps[i], DB_TRACE_DEPS, path, NULL);
    for (uint32_t i = 0; i < t->sample_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(d, &o, t, &t->samples[i], DB_TRACE_SAMPLES, path,
                          NULL);
    for (uint32_t i = 0; i < t->mpi_count && st == GPUPROF_OK; i++) {
        /* a thread's MPI calls: a stream of its own (records elsewhere) */
        gpuprof__io_trace_stream ms = {0, 0, t->mpi[i].id, 0, NULL,
                                       t->mpi[i].count, 0};
        st = trace_stream(d, &o, t, &ms, DB_TRACE_MPI, path, t->mpi[i].recs);
    }
    for (uint32_t i = 0; i < t->host_count && st == GPUPROF_OK; i++) {
        gpuprof__io_trace_stream hs = {0, 0, t->host[i].id, 0, NULL,
                                       t->host[i].count, 0};
        st = trace_stream(d, &o, t, &hs, DB_TRACE_HOST, path,
                          t->host[i].recs);
    }
    gpuprof__io_trace_free(t);
    return st;
}

gpuprof_status gpuprof__an_tracedb_finish(gpuprof__an_tracedb *d,
                                          uint32_t profiles, uint64_t ident,
                                          unsigned major)
{
    gpuprof_status st =
        trace_put(d, d->tab, (size_t)d->nstreams * DB_TRACE_STREAM);
    uint8_t h[DB_HEADER];
    gpuprof__an_db_header(h, DB_TRACE_MAGIC, d->f.crc, d->f.at - DB_HEADER,
                          d->nstreams, profiles, ident, major);
    if (st == GPUPROF_OK && !gpuprof__an_pwrite_all(d->f.fd, h, DB_HEADER, 0))
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", d->f.path,
                              strerror(errno));
    if (close(d->f.fd) != 0 && st == GPUPROF_OK)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", d->f.path,
                              strerror(errno));
    d->f.fd = -1;
    return st;
}
