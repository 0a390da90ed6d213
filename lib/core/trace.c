/*
 * trace.c - tracing threads and their channels (trace.h).
 *
 * Every stream (a GPU stream, fed by the monitor; a CPU thread, fed by
 * itself) has one SPSC channel of (start, end, context, corr) records and,
 * on the consumer side, a chunk buffer: a GPU stream's records go out as
 * CORR_RECORDS chunks; a CPU thread's regions (corr 0) as RECORDS chunks
 * and its operations (corr != 0) as CORR_RECORDS chunks, from a second
 * buffer allocated when its first operation arrives (dependency notes and
 * MPI calls likewise, MPI_RECORDS; an MPI call takes two items; host
 * records, HOST_RECORDS, two items too). Streams are on one list:
 * producers link a stream at its head under `reg_mu` once every field is set
 * and publish it with a release store; the tracing threads load the head
 * with acquire, never taking the lock. Tracing thread k owns the streams
 * whose index is k modulo the thread count. A tracing thread drains its streams, appends
 * a chunk when a buffer is full, and on a flush request writes every partial
 * buffer before it acknowledges. One write(2) per chunk under `wmu`, on an
 * O_APPEND descriptor. Idle threads sleep 20 ms (a condition variable: a
 * flush or stop wakes them at once).
 */
#include "core/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/channel.h"
#include "core/internal.h"
#include "io/trace.h"

#define CHUNK_RECS 4096u
#define MPI_CHUNK_RECS 1024u
/* An MPI call is two channel items: context bit 63 (as dependency notes)
 * and one of these in its low byte, which no note's `what` takes. */
#define MPI_ITEM1 0xF1u
#define MPI_ITEM2 0xF2u
#define HOST_ITEM1 0xF3u /* a host record: likewise */
#define HOST_ITEM2 0xF4u
#define HOST_CHUNK_RECS 1024u
_Static_assert(MPI_CHUNK_RECS * GPUPROF_IO_TRACE_MPI_RECORD <=
                   CHUNK_RECS * GPUPROF_IO_TRACE_CORR_RECORD,
               "an MPI chunk fits the scratch buffer");
_Static_assert(HOST_CHUNK_RECS * GPUPROF_IO_TRACE_HOST_RECORD <=
                   CHUNK_RECS * GPUPROF_IO_TRACE_CORR_RECORD,
               "a host chunk fits the scratch buffer");
#define MAX_TRACE_THREADS 64
#define GPU_HASH 256u

struct gp_trace_thread { /* a stream, GPU or CPU */
    gp_chan_spsc ch;
    struct gp_trace_thread *next; /* the global list (reg_mu) */
    struct gp_trace_thread *hnext; /* GPU: the monitor's hash chain */
    uint32_t index;  /* creation order: decides its tracing thread */
    uint32_t gpu, device, id; /* id: GPU stream, or CPU thread_seq */
    bool samples;    /* the sampler's: every thread's samples */
    uint64_t tid;
    char name[64];
    _Atomic int closed; /* CPU: the producer exited */
    /* consumer side (its tracing thread) */
    bool announced;  /* CPU: THREAD chunk written */
    bool ooo;        /* out of order since the last chunk */
    bool dead;       /* closed and written: skip */
    uint64_t last_start; /* GPU: last start; CPU: last end */
    uint32_t n;
    /* CPU: operation records (allocated on the first) */
    bool op_ooo;
    uint32_t op_n;
    uint64_t op_last_end;
    gpuprof__io_trace_rec *op_buf;
    uint32_t dep_n; /* CPU: dependency notes (allocated on the first) */
    gpuprof__io_trace_rec *dep_buf;
    uint32_t mpi_n; /* CPU: MPI calls (allocated on the first) */
    bool mpi_half;  /* the first item of a call came, the second not yet */
    gpuprof__io_trace_rec half;
    gpuprof__io_mpi_rec *mpi_buf;
    uint32_t host_n; /* CPU: host records (allocated on the first) */
    bool host_half;  /* as mpi_half */
    gpuprof__io_trace_rec host_first;
    gpuprof__io_host_rec *host_buf;
    gpuprof__io_trace_rec buf[CHUNK_RECS];
};

typedef struct gp_trace_thread tstream;

static _Atomic int on;
static int fd = -1;
static int nthreads;
static uint64_t max_items;
static pthread_t thr[MAX_TRACE_THREADS];
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv, ack_cv;
static tstream *_Atomic all; /* written under reg_mu, published with release */
static uint32_t nstreams;
static tstream *gpu_hash[GPU_HASH]; /* monitor-only */
static uint64_t flush_req, acked[MAX_TRACE_THREADS]; /* under cv_mu */
static bool stopping;
static _Atomic uint64_t dropped;
/* Under wmu: the end of the last whole chunk, and whether writing stopped
 * (a write failed, or the disk is short: the profile goes first). */
static uint64_t good_end;
static bool write_failed;
static _Atomic uint64_t reserve = GP_TRACE_MIN_RESERVE;
/* Under wmu: where each whole chunk ends and how many records it holds, so
 * the file can be cut back chunk by chunk for the profile. */
typedef struct chunk_end {
    uint64_t end, records;
} chunk_end;
static chunk_end *ends;
static size_t nends, capends;

bool gpuprof__trace_on(void) { return gp_load_relaxed(&on) != 0; }
uint64_t gpuprof__trace_dropped(void) { return gp_load_relaxed(&dropped); }

static void drop(uint64_t n)
{
    gp_fetch_add_relaxed(&dropped, n);
    gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, n);
}

void gpuprof__trace_reserve(uint64_t profile_bytes)
{
    uint64_t r = 2 * profile_bytes;
    gp_store_relaxed(&reserve, r > GP_TRACE_MIN_RESERVE ? r
                                                        : GP_TRACE_MIN_RESERVE);
}

/* Stops writing the trace for good; under wmu. `why` NULL: the disk is
 * short. A torn chunk is cut off, so the file ends with a whole one. */
static void stop_writing(const char *why, uint64_t avail)
{
    if (why)
        gpuprof__log(GPUPROF_LOG_ERROR, "cannot write the trace: %s; trace "
                     "writing stops, later records are dropped (counted)",
                     why);
    else
        gpuprof__log(GPUPROF_LOG_ERROR, "the disk of the trace is nearly "
                     "full (%llu bytes left): trace writing stops so that the "
                     "profile can be written; later records are dropped "
                     "(counted)", (unsigned long long)avail);
    if (ftruncate(fd, (off_t)good_end) != 0)
        gpuprof__log(GPUPROF_LOG_DEBUG, "cannot cut the trace back: %s",
                     strerror(errno));
    write_failed = true;
}

/* A whole chunk of `records` records now ends at good_end; under wmu. Out
 * of memory: not noted (the file can only be cut back less far). */
static void note_end(uint64_t records)
{
    if (nends == capends) {
        size_t cap = capends ? capends * 2 : 256;
        chunk_end *n = realloc(ends, cap * sizeof(*n));
        if (!n)
            return;
        ends = n;
        capends = cap;
    }
    ends[nends++] = (chunk_end){good_end, records};
}

/* Is there room for `size` more bytes and the profile's reserve? */
static bool room_for(size_t size, uint64_t *avail)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0 || !v.f_blocks)
        return true; /* cannot tell: write, a failure is handled */
    *avail = (uint64_t)v.f_bavail * v.f_frsize;
    return *avail >= size + gp_load_relaxed(&reserve);
}

/* Appends one chunk to the file; when it cannot, its records are counted
 * dropped and the trace stops where its last whole chunk ends. */
static void put(const uint8_t *b, size_t size, uint64_t records)
{
    pthread_mutex_lock(&wmu);
    size_t done = 0;
    uint64_t avail = 0;
    if (fd >= 0 && !write_failed && !room_for(size, &avail))
        stop_writing(NULL, avail);
    while (fd >= 0 && !write_failed && done < size) {
        ssize_t w = write(fd, b + done, size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            stop_writing(w < 0 ? strerror(errno) : "short write", 0);
            break;
        }
        done += (size_t)w;
    }
    if (done == size) {
        good_end += size;
        note_end(records);
    }
    pthread_mutex_unlock(&wmu);
    if (done < size)
        drop(records);
}

uint64_t gpuprof__trace_make_room(uint64_t bytes, uint64_t *records)
{
    *records = 0;
    pthread_mutex_lock(&wmu);
    /* The latest chunk end that frees enough (at most back to the header,
     * ends[0]). */
    size_t k = nends;
    while (k > 1 && good_end - ends[k - 1].end < bytes)
        k--;
    uint64_t freed = 0;
    if (fd >= 0 && k >= 1 && k < nends &&
        ftruncate(fd, (off_t)ends[k - 1].end) == 0) {
        for (size_t i = k; i < nends; i++)
            *records += ends[i].records;
        freed = good_end - ends[k - 1].end;
        good_end = ends[k - 1].end;
        nends = k;
        write_failed = true; /* the profile has the room now */
    }
    pthread_mutex_unlock(&wmu);
    if (*records)
        drop(*records);
    return freed;
}

/* Writes the stream's buffered records (a CPU thread's: its THREAD chunk
 * first, then a chunk of regions and one of operations); tracing thread. */
static void emit(tstream *s, uint8_t *scratch)
{
    if (s->samples) {
        if (s->n)
            put(scratch,
                gpuprof__io_trace_sample_records(scratch, s->buf, s->n), s->n);
        s->n = 0;
        return;
    }
    if (!s->gpu && !s->announced) {
        size_t n = gpuprof__io_trace_thread_chunk(scratch, s->id, s->tid,
                                                  s->name);
        put(scratch, n, 0);
        s->announced = true;
    }
    if (s->gpu) {
        if (s->n)
            put(scratch,
                gpuprof__io_trace_corr_records(
                    scratch, GPUPROF_IO_TRACE_GPU |
                                 (s->ooo ? GPUPROF_IO_TRACE_OUT_OF_ORDER : 0),
                    s->device, s->id, s->buf, s->n),
                s->n);
        s->n = 0;
        s->ooo = false;
        return;
    }
    if (s->n)
        put(scratch,
            gpuprof__io_trace_records(
                scratch, s->ooo ? GPUPROF_IO_TRACE_OUT_OF_ORDER : 0, 0, s->id,
                s->buf, s->n),
            s->n);
    if (s->op_n)
        put(scratch,
            gpuprof__io_trace_corr_records(
                scratch, s->op_ooo ? GPUPROF_IO_TRACE_OUT_OF_ORDER : 0, 0,
                s->id, s->op_buf, s->op_n),
            s->op_n);
    if (s->dep_n)
        put(scratch,
            gpuprof__io_trace_dep_records(scratch, 0, s->id, s->dep_buf,
                                          s->dep_n),
            s->dep_n);
    if (s->mpi_n)
        put(scratch,
            gpuprof__io_trace_mpi_records(scratch, s->id, s->mpi_buf,
                                          s->mpi_n),
            s->mpi_n);
    if (s->host_n)
        put(scratch,
            gpuprof__io_trace_host_records(scratch, s->id, s->host_buf,
                                           s->host_n),
            s->host_n);
    s->n = s->op_n = s->dep_n = s->mpi_n = s->host_n = 0;
    s->ooo = s->op_ooo = false;
}


typedef struct drain_ctx {
    tstream *s;
    uint8_t *scratch;
    gp_clock_conv conv; /* CPU records are ticks: converted when taken */
} drain_ctx;

/* A CPU thread's dependency note (context bit 63): only its start is a
 * time (end is the target's correlation id). */
static void take_dep(tstream *s, const gp_clock_conv *conv,
                     gpuprof__io_trace_rec r, uint8_t *scratch)
{
    if (!s->dep_buf &&
        !(s->dep_buf = malloc(CHUNK_RECS * sizeof(*s->dep_buf)))) {
        drop(1);
        return;
    }
    r.start_ns = gp_conv_at(conv, r.start_ns);
    s->dep_buf[s->dep_n++] = r;
    if (s->dep_n == CHUNK_RECS)
        emit(s, scratch);
}

/* A CPU thread's MPI call: its first item waits for its second (times
 * are ns already). A half without its other half was counted dropped by
 * the producer; it is let go. */
static void take_mpi(tstream *s, gpuprof__io_trace_rec r, uint8_t *scratch)
{
    if ((r.context & 0xFF) == MPI_ITEM1) {
        s->half = r;
        s->mpi_half = true;
        return;
    }
    if (!s->mpi_half)
        return;
    s->mpi_half = false;
    if (!s->mpi_buf &&
        !(s->mpi_buf = malloc(MPI_CHUNK_RECS * sizeof(*s->mpi_buf)))) {
        drop(1);
        return;
    }
    const gpuprof__io_trace_rec *h = &s->half;
    s->mpi_buf[s->mpi_n++] = (gpuprof__io_mpi_rec){
        h->start_ns, h->end_ns, h->corr, r.start_ns, r.end_ns,
        (uint32_t)(r.context >> 8), (int32_t)(uint32_t)r.corr,
        (int32_t)(uint32_t)(r.corr >> 32), (uint8_t)(h->context >> 8),
        (uint8_t)(h->context >> 16)};
    if (s->mpi_n == MPI_CHUNK_RECS)
        emit(s, scratch);
}

/* A CPU thread's host record: its first item (times in ticks, op,
 * flags, object) waits for its second (aux). */
static void take_host(tstream *s, const gp_clock_conv *conv,
                      gpuprof__io_trace_rec r, uint8_t *scratch)
{
    if ((r.context & 0xFF) == HOST_ITEM1) {
        s->host_first = r;
        s->host_half = true;
        return;
    }
    if (!s->host_half)
        return;
    s->host_half = false;
    if (!s->host_buf &&
        !(s->host_buf = malloc(HOST_CHUNK_RECS * sizeof(*s->host_buf)))) {
        drop(1);
        return;
    }
    const gpuprof__io_trace_rec *h = &s->host_first;
    s->host_buf[s->host_n++] = (gpuprof__io_host_rec){
        gp_conv_at(conv, h->start_ns), gp_conv_at(conv, h->end_ns), h->corr,
        r.start_ns, (uint8_t)(h->context >> 8), (uint8_t)(h->context >> 16)};
    if (s->host_n == HOST_CHUNK_RECS)
        emit(s, scratch);
}

static void take(void *ctx, const void *item)
{
    drain_ctx *c = ctx;
    tstream *s = c->s;
    gpuprof__io_trace_rec rec = *(const gpuprof__io_trace_rec *)item;
    const gpuprof__io_trace_rec *r = &rec;
    if (!s->gpu && (rec.context >> 63) &&
        ((rec.context & 0xFF) == MPI_ITEM1 ||
         (rec.context & 0xFF) == MPI_ITEM2)) {
        take_mpi(s, rec, c->scratch);
        return;
    }
    if (!s->gpu && (rec.context >> 63) &&
        ((rec.context & 0xFF) == HOST_ITEM1 ||
         (rec.context & 0xFF) == HOST_ITEM2)) {
        take_host(s, &c->conv, rec, c->scratch);
        return;
    }
    if (!s->gpu && (rec.context >> 63)) {
        take_dep(s, &c->conv, rec, c->scratch);
        return;
    }
    if (s->samples) { /* only the time is ticks */
        rec.start_ns = gp_conv_at(&c->conv, rec.start_ns);
        s->buf[s->n++] = rec;
        if (s->n == CHUNK_RECS)
            emit(s, c->scratch);
        return;
    }
    if (!s->gpu) {
        rec.start_ns = gp_conv_at(&c->conv, rec.start_ns);
        rec.end_ns = gp_conv_at(&c->conv, rec.end_ns);
    }
    if (!s->gpu && r->corr) { /* a CPU thread's operation: by end too */
        if (!s->op_buf &&
            !(s->op_buf = malloc(CHUNK_RECS * sizeof(*s->op_buf)))) {
            drop(1);
            return;
        }
        if (r->end_ns < s->op_last_end)
            s->op_ooo = true;
        s->op_last_end = r->end_ns;
        s->op_buf[s->op_n++] = *r;
        if (s->op_n == CHUNK_RECS)
            emit(s, c->scratch);
        return;
    }
    /* GPU records should arrive by start; a thread's regions are recorded
     * when they close, so by end (an outer region starts earlier). */
    uint64_t key = s->gpu ? r->start_ns : r->end_ns;
    if (key < s->last_start)
        s->ooo = true;
    s->last_start = key;
    s->buf[s->n++] = *r;
    if (s->n == CHUNK_RECS)
        emit(s, c->scratch);
}

/* One pass over thread k's streams; `all_out`: write partial buffers. */
static size_t pass(int k, bool all_out, uint8_t *scratch)
{
    size_t work = 0;
    /* A stream is published whole (stream_new): acquire sees its fields. */
    tstream *head = gp_load_acquire(&all);
    /* CPU records are ticks. With tracing on, ticks are CLOCK_MONOTONIC ns
     * unless GPUPROF_CLOCK=tsc (gpuprof_init): then identity. TSC ticks are
     * converted with the rate fitted now, anchored at readings taken now
     * (the records are at most one pass old), which keeps them within tens
     * of ns of CLOCK_MONOTONIC, the clock of GPU records. */
    drain_ctx c = {NULL, scratch, {1.0, 0, 0}};
    gpuprof__clock_conv(&c.conv);
    if (gpuprof__clock_mode == GP_CLOCK_TSC) {
        c.conv.origin_ticks = gp_ticks();
        c.conv.origin_ns = gp_mono_ns();
    } else {
        c.conv.ns_per_tick = 1.0;
        c.conv.origin_ns = c.conv.origin_ticks;
    }
    /* The list only grows at its head: what we hold stays valid. */
    for (tstream *s = head; s; s = s->next) {
        if (s->index % (uint32_t)nthreads != (uint32_t)k || s->dead)
            continue;
        int closed = gp_load_acquire(&s->closed);
        c.s = s;
        work += gpuprof__chan_drain(&s->ch, take, &c, 0);
        if (all_out || closed)
            emit(s, scratch);
        if (closed) {
            gpuprof__chan_destroy(&s->ch);
            free(s->op_buf);
            free(s->dep_buf);
            free(s->mpi_buf);
            free(s->host_buf);
            s->op_buf = NULL;
            s->dep_buf = NULL;
            s->mpi_buf = NULL;
            s->host_buf = NULL;
            s->dead = true; /* its memory stays: the list keeps it */
        }
    }
    return work;
}

static void *trace_main(void *arg)
{
    int k = (int)(intptr_t)arg;
    uint8_t *scratch = malloc(GPUPROF_IO_TRACE_CHUNK_HEADER +
                              (size_t)CHUNK_RECS *
                                  GPUPROF_IO_TRACE_CORR_RECORD);
    if (!scratch)
        return NULL;
    for (;;) {
        pthread_mutex_lock(&cv_mu);
        uint64_t want = flush_req;
        bool stop = stopping;
        pthread_mutex_unlock(&cv_mu);
        bool all_out = want > acked[k] || stop;
        size_t work = pass(k, all_out, scratch);
        pthread_mutex_lock(&cv_mu);
        if (all_out) {
            acked[k] = want;
            pthread_cond_broadcast(&ack_cv);
        }
        if (stop) {
            pthread_mutex_unlock(&cv_mu);
            break;
        }
        if (!work && flush_req == acked[k] && !stopping) {
            struct timespec ts;
            gpuprof__deadline(&ts, 20 * 1000000u);
            pthread_cond_timedwait(&cv, &cv_mu, &ts);
        }
        pthread_mutex_unlock(&cv_mu);
    }
    free(scratch);
    return NULL;
}

static void cv_init(void)
{
    gpuprof__cond_init_monotonic(&cv);
    gpuprof__cond_init_monotonic(&ack_cv);
}

bool gpuprof__trace_start(const char *path, int n, uint64_t items)
{
    if (gp_load_relaxed(&on))
        return true;
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
    if (f < 0) {
        gpuprof__log(GPUPROF_LOG_ERROR, "cannot create trace '%s': %s; "
                     "tracing is off", path, strerror(errno));
        return false;
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint8_t h[GPUPROF_IO_TRACE_HEADER];
    gpuprof__io_trace_header(h, (uint32_t)getpid(),
                             (uint64_t)rt.tv_sec * 1000000000u +
                                 (uint64_t)rt.tv_nsec);
    fd = f;
    write_failed = false;
    good_end = 0;
    nends = 0;
    put(h, sizeof(h), 0);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cv_init);
    nthreads = n < 1 ? 1 : n > MAX_TRACE_THREADS ? MAX_TRACE_THREADS : n;
    max_items = items;
    stopping = false;
    flush_req = 0;
    int started = 0;
    for (int k = 0; k < nthreads; k++) {
        acked[k] = 0;
        if (gpuprof__spawn(&thr[k], trace_main, (void *)(intptr_t)k) != 0)
            break;
        started++;
    }
    if (started < nthreads) {
        gpuprof__log(GPUPROF_LOG_ERROR, "cannot start tracing threads; "
                     "tracing is off");
        pthread_mutex_lock(&cv_mu);
        stopping = true;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&cv_mu);
        for (int k = 0; k < started; k++)
            pthread_join(thr[k], NULL);
        close(fd);
        fd = -1;
        return false;
    }
    gp_store_release(&on, 1);
    return true;
}

void gpuprof__trace_flush(void)
{
    if (!gp_load_acquire(&on))
        return;
    pthread_mutex_lock(&cv_mu);
    uint64_t want = ++flush_req;
    pthread_cond_broadcast(&cv);
    struct timespec ts;
    gpuprof__deadline(&ts, 5000000000u); /* never hang the program */
    for (int k = 0; k < nthreads; k++)
        while (acked[k] < want && !stopping &&
               pthread_cond_timedwait(&ack_cv, &cv_mu, &ts) != ETIMEDOUT)
            ;
    pthread_mutex_unlock(&cv_mu);
}

void gpuprof__trace_stop(void)
{
    if (!gp_load_acquire(&on))
        return;
    gp_store_release(&on, 0); /* producers stop pushing */
    pthread_mutex_lock(&cv_mu);
    stopping = true; /* each thread writes everything, then exits */
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&cv_mu);
    for (int k = 0; k < nthreads; k++)
        pthread_join(thr[k], NULL);
    pthread_mutex_lock(&wmu);
    if (fd >= 0 && fsync(fd) != 0 && errno != EINVAL)
        gpuprof__log(GPUPROF_LOG_ERROR, "cannot sync the trace: %s",
                     strerror(errno));
    if (fd >= 0)
        close(fd);
    fd = -1;
    pthread_mutex_unlock(&wmu);
}

void gpuprof__trace_atfork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    pthread_mutex_lock(&wmu);
}

void gpuprof__trace_atfork_parent(void)
{
    pthread_mutex_unlock(&wmu);
    pthread_mutex_unlock(&reg_mu);
}

void gpuprof__trace_atfork_child(void)
{
    /* The parent's trace is the parent's: no threads here, no writes. */
    gp_store_relaxed(&on, 0);
    if (fd >= 0)
        close(fd);
    fd = -1;
    gp_store_relaxed(&all, NULL); /* leaked with the parent's other state */
    nstreams = 0;
    memset(gpu_hash, 0, sizeof(gpu_hash));
    pthread_mutex_unlock(&wmu);
    pthread_mutex_unlock(&reg_mu);
    pthread_mutex_init(&cv_mu, NULL);
    cv_init();
}

/* ---- producers ------------------------------------------------------- */
/* A new stream, linked at the list's head only once every field the
 * tracing threads read is set (release; pass() loads the head acquire). */
static tstream *stream_new(uint32_t gpu, uint32_t device, uint32_t id,
                           uint64_t tid, const char *name, bool samples)
{
    tstream *s = calloc(1, sizeof(*s));
    if (!s || !gpuprof__chan_init(&s->ch, sizeof(gpuprof__io_trace_rec), 256,
                                  max_items)) {
        free(s);
        return NULL;
    }
    s->gpu = gpu;
    s->samples = samples;
    s->device = device;
    s->id = id;
    s->tid = tid;
    snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
    pthread_mutex_lock(&reg_mu);
    s->index = nstreams++;
    s->next = gp_load_relaxed(&all);
    gp_store_release(&all, s);
    pthread_mutex_unlock(&reg_mu);
    return s;
}

void gpuprof__trace_gpu(uint32_t device, uint32_t stream, uint64_t start_ns,
                        uint64_t end_ns, uint64_t context, uint64_t corr)
{
    if (!gp_load_relaxed(&on))
        return;
    uint32_t h = (device * 31u + stream) & (GPU_HASH - 1);
    tstream *s = gpu_hash[h];
    while (s && (s->device != device || s->id != stream))
        s = s->hnext;
    if (!s) {
        if (!(s = stream_new(1, device, stream, 0, NULL, false))) {
            drop(1);
            return;
        }
        s->hnext = gpu_hash[h];
        gpu_hash[h] = s;
    }
    gpuprof__io_trace_rec r = {start_ns, end_ns, context, corr};
    if (!gpuprof__chan_push(&s->ch, &r))
        drop(1);
}

gp_trace_thread *gpuprof__trace_thread_open(uint32_t seq, uint64_t tid,
                                            const char *name)
{
    if (!gp_load_acquire(&on))
        return NULL;
    return stream_new(0, 0, seq, tid, name, false);
}

void gpuprof__trace_region(gp_trace_thread *s, uint64_t start_ticks,
                           uint64_t end_ticks, uint32_t node)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec r = {start_ticks, end_ticks,
                               ((uint64_t)s->id << 32) | node, 0};
    if (!gpuprof__chan_push(&s->ch, &r))
        drop(1);
}

void gpuprof__trace_op(gp_trace_thread *s, uint64_t start_ticks,
                       uint64_t end_ticks, uint32_t node, uint64_t corr)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec r = {start_ticks, end_ticks,
                               ((uint64_t)s->id << 32) | node, corr};
    if (!gpuprof__chan_push(&s->ch, &r))
        drop(1);
}

void gpuprof__trace_dep(gp_trace_thread *s, uint64_t start_ticks,
                        uint64_t info, uint64_t target, uint64_t corr)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec r = {start_ticks, target, info | 1ull << 63, corr};
    if (!gpuprof__chan_push(&s->ch, &r))
        drop(1);
}

void gpuprof__trace_mpi(gp_trace_thread *s, const gpuprof__io_mpi_rec *m)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec a = {
        m->start_ns, m->end_ns,
        1ull << 63 | MPI_ITEM1 | (uint64_t)m->op << 8 |
            (uint64_t)m->flags << 16,
        m->bytes};
    gpuprof__io_trace_rec b = {
        m->request, m->aux, 1ull << 63 | MPI_ITEM2 | (uint64_t)m->comm << 8,
        (uint64_t)(uint32_t)m->peer | (uint64_t)(uint32_t)m->tag << 32};
    if (!gpuprof__chan_push(&s->ch, &a) || !gpuprof__chan_push(&s->ch, &b))
        drop(1);
}

void gpuprof__trace_host(gp_trace_thread *s, uint32_t op, uint32_t flags,
                         uint64_t start_ticks, uint64_t end_ticks,
                         uint64_t object, uint64_t aux)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec a = {
        start_ticks, end_ticks,
        1ull << 63 | HOST_ITEM1 | (uint64_t)(op & 0xFF) << 8 |
            (uint64_t)(flags & 0xFF) << 16,
        object};
    gpuprof__io_trace_rec b = {aux, 0, 1ull << 63 | HOST_ITEM2, 0};
    if (!gpuprof__chan_push(&s->ch, &a) || !gpuprof__chan_push(&s->ch, &b))
        drop(1);
}

gp_trace_thread *gpuprof__trace_samples_open(void)
{
    if (!gp_load_acquire(&on))
        return NULL;
    return stream_new(0, 0, 0, 0, NULL, true);
}

void gpuprof__trace_sample(gp_trace_thread *s, uint64_t ticks,
                           uint64_t context, uint64_t value, uint32_t metric)
{
    if (!gp_load_relaxed(&on))
        return;
    gpuprof__io_trace_rec r = {ticks, value, context & ~(1ull << 63), metric};
    if (!gpuprof__chan_push(&s->ch, &r))
        drop(1);
}

void gpuprof__trace_thread_close(gp_trace_thread *s)
{
    if (s)
        gp_store_release(&s->closed, 1);
}

void gpuprof__trace_merged(uint32_t seq, const uint32_t *map, uint32_t n)
{
    if (!gp_load_relaxed(&on) || !n)
        return;
    uint32_t per = n < GPUPROF_IO_TRACE_MAX_MERGED ? n
                                                   : GPUPROF_IO_TRACE_MAX_MERGED;
    uint8_t *b = malloc(GPUPROF_IO_TRACE_CHUNK_HEADER + 8 + 4 * (size_t)per);
    if (!b) /* its records' contexts are then unknown to the analysis */
        return;
    for (uint32_t first = 0; first < n; first += per) {
        uint32_t k = n - first < per ? n - first : per;
        put(b, gpuprof__io_trace_merged_chunk(b, seq, first, map + first, k),
            0);
    }
    free(b);
}
