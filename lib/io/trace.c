/*
 * trace.c - the trace file format: chunk encoding for the writer and a
 * validating reader (trace.h, doc/FORMATS.md "Trace files"). The reader
 * takes every 1.x file: 1.0 files have no CORR_RECORDS chunks (their
 * records' corr is 0), files before 1.2 no MERGED chunks, before 1.3 no
 * DEP_RECORDS, before 1.4 no MPI_RECORDS, before 1.5 no SAMPLE_RECORDS
 * nor HOST_RECORDS, and chunk types it does not know are skipped.
 */
#include "io/trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/layout.h"

void gpuprof__io_trace_header(uint8_t *out, uint32_t pid,
                              uint64_t start_realtime_ns)
{
    memset(out, 0, GPUPROF_IO_TRACE_HEADER);
    memcpy(out, GPUPROF_IO_TRACE_MAGIC, 8);
    put16(out + 8, GPUPROF_IO_TRACE_MAJOR);
    put16(out + 10, GPUPROF_IO_TRACE_MINOR);
    put32(out + 12, pid);
    put64(out + 16, start_realtime_ns);
    /* 24..27 reserved (0) */
    put32(out + 28, gpuprof__io_crc32c(0, out, 28));
}

static void chunk_header(uint8_t *out, uint32_t type, uint32_t flags,
                         uint32_t device, uint32_t id, uint32_t count,
                         uint32_t payload)
{
    put32(out, GPUPROF_IO_TRACE_CHUNK_MAGIC);
    put16(out + 4, (uint16_t)type);
    put16(out + 6, (uint16_t)flags);
    put32(out + 8, device);
    put32(out + 12, id);
    put32(out + 16, count);
    put32(out + 20, payload);
    put32(out + 24, 0); /* reserved */
}

static void chunk_seal(uint8_t *out, uint32_t payload)
{
    uint32_t crc = gpuprof__io_crc32c(0, out, 28);
    crc = gpuprof__io_crc32c(crc, out + GPUPROF_IO_TRACE_CHUNK_HEADER, payload);
    put32(out + 28, crc);
}

size_t gpuprof__io_trace_records(uint8_t *out, uint32_t flags, uint32_t device,
                                 uint32_t id, const gpuprof__io_trace_rec *r,
                                 uint32_t n)
{
    uint32_t payload = n * GPUPROF_IO_TRACE_RECORD;
    chunk_header(out, GPUPROF_IO_TRACE_RECORDS, flags, device, id, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_RECORD) {
        put64(p, r[i].start_ns);
        put64(p + 8, r[i].end_ns);
        put64(p + 16, r[i].context);
    }
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

static size_t records32(uint8_t *out, uint32_t type, uint32_t flags,
                        uint32_t device, uint32_t id,
                        const gpuprof__io_trace_rec *r, uint32_t n)
{
    uint32_t payload = n * GPUPROF_IO_TRACE_CORR_RECORD;
    chunk_header(out, type, flags, device, id, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_CORR_RECORD) {
        put64(p, r[i].start_ns);
        put64(p + 8, r[i].end_ns);
        put64(p + 16, r[i].context);
        put64(p + 24, r[i].corr);
    }
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

size_t gpuprof__io_trace_corr_records(uint8_t *out, uint32_t flags,
                                      uint32_t device, uint32_t id,
                                      const gpuprof__io_trace_rec *r,
                                      uint32_t n)
{
    return records32(out, GPUPROF_IO_TRACE_CORR_RECORDS, flags, device, id, r,
                     n);
}

size_t gpuprof__io_trace_dep_records(uint8_t *out, uint32_t flags,
                                     uint32_t id,
                                     const gpuprof__io_trace_rec *r,
                                     uint32_t n)
{
    return records32(out, GPUPROF_IO_TRACE_DEP_RECORDS, flags, 0, id, r, n);
}

size_t gpuprof__io_trace_sample_records(uint8_t *out,
                                        const gpuprof__io_trace_rec *r,
                                        uint32_t n)
{
    uint32_t payload = n * GPUPROF_IO_TRACE_CORR_RECORD;
    chunk_header(out, GPUPROF_IO_TRACE_SAMPLE_RECORDS, 0, 0, 0, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_CORR_RECORD) {
        put64(p, r[i].start_ns);
        put64(p + 8, r[i].end_ns);
        put64(p + 16, r[i].context);
        put32(p + 24, (uint32_t)r[i].corr);
        put32(p + 28, 0);
    }
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

size_t gpuprof__io_trace_mpi_records(uint8_t *out, uint32_t id,
                                     const gpuprof__io_mpi_rec *r, uint32_t n)
{
    uint32_t payload = n * GPUPROF_IO_TRACE_MPI_RECORD;
    chunk_header(out, GPUPROF_IO_TRACE_MPI_RECORDS, 0, 0, id, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_MPI_RECORD) {
        memset(p, 0, GPUPROF_IO_TRACE_MPI_RECORD);
        put64(p, r[i].start_ns);
        put64(p + 8, r[i].end_ns);
        put64(p + 16, r[i].bytes);
        put64(p + 24, r[i].request);
        put64(p + 32, r[i].aux);
        put32(p + 40, r[i].comm);
        put32(p + 44, (uint32_t)r[i].peer);
        put32(p + 48, (uint32_t)r[i].tag);
        p[52] = r[i].op;
        p[53] = r[i].flags;
    }
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

size_t gpuprof__io_trace_host_records(uint8_t *out, uint32_t id,
                                      const gpuprof__io_host_rec *r,
                                      uint32_t n)
{
    uint32_t payload = n * GPUPROF_IO_TRACE_HOST_RECORD;
    chunk_header(out, GPUPROF_IO_TRACE_HOST_RECORDS, 0, 0, id, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_HOST_RECORD) {
        memset(p, 0, GPUPROF_IO_TRACE_HOST_RECORD);
        put64(p, r[i].start_ns);
        put64(p + 8, r[i].end_ns);
        put64(p + 16, r[i].object);
        put64(p + 24, r[i].aux);
        p[32] = r[i].op;
        p[33] = r[i].flags;
    }
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

size_t gpuprof__io_trace_thread_chunk(uint8_t *out, uint32_t seq, uint64_t tid,
                                      const char *name)
{
    size_t len = name ? strnlen(name, 63) : 0;
    uint32_t payload = (uint32_t)(16 + len + 1);
    chunk_header(out, GPUPROF_IO_TRACE_THREAD, 0, 0, seq, 0, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    put32(p, seq);
    put32(p + 4, 0);
    put64(p + 8, tid);
    if (len)
        memcpy(p + 16, name, len);
    p[16 + len] = '\0';
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

size_t gpuprof__io_trace_merged_chunk(uint8_t *out, uint32_t seq,
                                      uint32_t first, const uint32_t *map,
                                      uint32_t n)
{
    uint32_t payload = 8 + 4 * n;
    chunk_header(out, GPUPROF_IO_TRACE_MERGED, 0, 0, seq, n, payload);
    uint8_t *p = out + GPUPROF_IO_TRACE_CHUNK_HEADER;
    put32(p, seq);
    put32(p + 4, first);
    for (uint32_t i = 0; i < n; i++)
        put32(p + 8 + 4 * i, map[i]);
    chunk_seal(out, payload);
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

/* ---- reader ------------------------------------------------------------ */
/* The stream (gpu, device, id) of the array *v of *count streams, added
 * when new; NULL when out of memory. */
static gpuprof__io_trace_stream *stream_of(gpuprof__io_trace_stream **v,
                                           uint32_t *count, uint32_t gpu,
                                           uint32_t device, uint32_t id)
{
    for (uint32_t i = 0; i < *count; i++) {
        gpuprof__io_trace_stream *s = &(*v)[i];
        if (s->gpu == gpu && s->device == device && s->id == id)
            return s;
    }
    if ((*count & (*count - 1)) == 0) { /* grow at 2^k */
        size_t cap = *count ? (size_t)*count * 2 : 4;
        void *n = realloc(*v, cap * sizeof(**v));
        if (!n)
            return NULL;
        *v = n;
    }
    gpuprof__io_trace_stream *s = &(*v)[(*count)++];
    memset(s, 0, sizeof(*s));
    s->gpu = gpu;
    s->device = device;
    s->id = id;
    return s;
}

/* Room for `need` elements of `size` bytes in *v (*cap of them now). */
static int reserve(void **v, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*v, c * size);
    if (!n)
        return GPUPROF_IO_ERR_NOMEM;
    *v = n;
    *cap = c;
    return 0;
}

/* Appends n records of `size` bytes (RECORD, or CORR_RECORD with the
 * correlation id last). */
static int add_records(gpuprof__io_trace_stream *s, const uint8_t *p,
                       uint32_t n, uint32_t size)
{
    if (reserve((void **)&s->recs, &s->cap_, s->count + n, sizeof(*s->recs)))
        return GPUPROF_IO_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++, p += size)
        s->recs[s->count++] = (gpuprof__io_trace_rec){
            get64(p), get64(p + 8), get64(p + 16),
            size == GPUPROF_IO_TRACE_CORR_RECORD ? get64(p + 24) : 0};
    return 0;
}

/* One chunk at buf[off..size): its size, or 0 (with the reason) when it is
 * torn or damaged. */
static size_t chunk_ok(const uint8_t *buf, size_t size, size_t off,
                       char *why, size_t ws)
{
    size_t left = size - off;
    if (left < GPUPROF_IO_TRACE_CHUNK_HEADER) {
        snprintf(why, ws, "torn chunk header (%zu bytes)", left);
        return 0;
    }
    const uint8_t *h = buf + off;
    if (get32(h) != GPUPROF_IO_TRACE_CHUNK_MAGIC) {
        snprintf(why, ws, "no chunk magic");
        return 0;
    }
    uint32_t payload = get32(h + 20);
    if (payload > left - GPUPROF_IO_TRACE_CHUNK_HEADER) {
        snprintf(why, ws, "torn chunk (%u payload bytes, %zu present)",
                 payload, left - GPUPROF_IO_TRACE_CHUNK_HEADER);
        return 0;
    }
    uint32_t crc = gpuprof__io_crc32c(0, h, 28);
    crc = gpuprof__io_crc32c(crc, h + GPUPROF_IO_TRACE_CHUNK_HEADER, payload);
    if (crc != get32(h + 28)) {
        snprintf(why, ws, "chunk checksum mismatch");
        return 0;
    }
    uint32_t type = get16(h + 4), flags = get16(h + 6), count = get32(h + 16);
    if (get32(h + 24) != 0 || (flags & ~(GPUPROF_IO_TRACE_GPU |
                                         GPUPROF_IO_TRACE_OUT_OF_ORDER))) {
        snprintf(why, ws, "reserved chunk bits set");
        return 0;
    }
    uint32_t rsize = type == GPUPROF_IO_TRACE_RECORDS ? GPUPROF_IO_TRACE_RECORD
                     : type == GPUPROF_IO_TRACE_CORR_RECORDS ||
                               type == GPUPROF_IO_TRACE_DEP_RECORDS ||
                               type == GPUPROF_IO_TRACE_SAMPLE_RECORDS
                         ? GPUPROF_IO_TRACE_CORR_RECORD
                     : type == GPUPROF_IO_TRACE_MPI_RECORDS
                         ? GPUPROF_IO_TRACE_MPI_RECORD
                     : type == GPUPROF_IO_TRACE_HOST_RECORDS
                         ? GPUPROF_IO_TRACE_HOST_RECORD
                         : 0;
    if (rsize && (count > GPUPROF_IO_TRACE_MAX_RECORDS ||
                  (uint64_t)count * rsize != payload)) {
        snprintf(why, ws, "record count %u does not match %u bytes", count,
                 payload);
        return 0;
    }
    for (uint32_t i = 0; type == GPUPROF_IO_TRACE_SAMPLE_RECORDS && i < count;
         i++)
        if (get32(h + GPUPROF_IO_TRACE_CHUNK_HEADER + 32 * (size_t)i + 28)) {
            snprintf(why, ws, "reserved sample bits set");
            return 0;
        }
    if (type == GPUPROF_IO_TRACE_MERGED &&
        (count > GPUPROF_IO_TRACE_MAX_MERGED || payload != 8 + 4 * count ||
         get32(h + GPUPROF_IO_TRACE_CHUNK_HEADER) != get32(h + 12))) {
        snprintf(why, ws, "bad merged-thread chunk");
        return 0;
    }
    if (type == GPUPROF_IO_TRACE_THREAD &&
        (payload < 17 || payload > 16 + 64 || h[GPUPROF_IO_TRACE_CHUNK_HEADER +
                                                 payload - 1] != '\0')) {
        snprintf(why, ws, "bad thread chunk");
        return 0;
    }
    return GPUPROF_IO_TRACE_CHUNK_HEADER + payload;
}

/* The index of thread id's entry in a per-thread array *v of *count
 * entries of `size` bytes whose first field is the u32 id (MPI and host
 * records), added zeroed when new; UINT32_MAX when out of memory. */
static uint32_t thread_slot(void **v, uint32_t *count, size_t size,
                            uint32_t id)
{
    for (uint32_t i = 0; i < *count; i++)
        if (*(const uint32_t *)((const uint8_t *)*v + i * size) == id)
            return i;
    if ((*count & (*count - 1)) == 0) { /* grow at 2^k */
        size_t cap = *count ? (size_t)*count * 2 : 4;
        void *nv = realloc(*v, cap * size);
        if (!nv)
            return UINT32_MAX;
        *v = nv;
    }
    uint8_t *e = (uint8_t *)*v + (size_t)*count * size;
    memset(e, 0, size);
    memcpy(e, &id, sizeof(id));
    return (*count)++;
}

/* An MPI_RECORDS chunk's records (sizes checked by chunk_ok) onto thread
 * id's. */
static int add_mpi(gpuprof__io_trace *t, uint32_t id, const uint8_t *p,
                   uint32_t n)
{
    uint32_t i = thread_slot((void **)&t->mpi, &t->mpi_count,
                             sizeof(*t->mpi), id);
    if (i == UINT32_MAX)
        return GPUPROF_IO_ERR_NOMEM;
    gpuprof__io_trace_mpi *m = &t->mpi[i];
    if (reserve((void **)&m->recs, &m->cap_, m->count + n, sizeof(*m->recs)))
        return GPUPROF_IO_ERR_NOMEM;
    for (uint32_t k = 0; k < n; k++, p += GPUPROF_IO_TRACE_MPI_RECORD)
        m->recs[m->count++] = (gpuprof__io_mpi_rec){
            get64(p), get64(p + 8), get64(p + 16), get64(p + 24),
            get64(p + 32), get32(p + 40), (int32_t)get32(p + 44),
            (int32_t)get32(p + 48), p[52], p[53]};
    return 0;
}

/* A HOST_RECORDS chunk's records onto thread id's. */
static int add_host(gpuprof__io_trace *t, uint32_t id, const uint8_t *p,
                    uint32_t n)
{
    uint32_t i = thread_slot((void **)&t->host, &t->host_count,
                             sizeof(*t->host), id);
    if (i == UINT32_MAX)
        return GPUPROF_IO_ERR_NOMEM;
    gpuprof__io_trace_host *h = &t->host[i];
    if (reserve((void **)&h->recs, &h->cap_, h->count + n, sizeof(*h->recs)))
        return GPUPROF_IO_ERR_NOMEM;
    for (uint32_t k = 0; k < n; k++, p += GPUPROF_IO_TRACE_HOST_RECORD)
        h->recs[h->count++] = (gpuprof__io_host_rec){
            get64(p), get64(p + 8), get64(p + 16), get64(p + 24), p[32],
            p[33]};
    return 0;
}

/* A SAMPLE_RECORDS chunk's records (checked by chunk_ok), each onto its
 * thread's stream. */
static int add_samples(gpuprof__io_trace *t, const uint8_t *p, uint32_t n)
{
    gpuprof__io_trace_stream *s = NULL;
    for (uint32_t i = 0; i < n; i++, p += GPUPROF_IO_TRACE_CORR_RECORD) {
        uint32_t seq = (uint32_t)(get64(p + 16) >> 32);
        if ((!s || s->id != seq) &&
            !(s = stream_of(&t->samples, &t->sample_stream_count, 0, 0, seq)))
            return GPUPROF_IO_ERR_NOMEM;
        int rc = add_records(s, p, 1, GPUPROF_IO_TRACE_CORR_RECORD);
        if (rc)
            return rc;
        s->recs[s->count - 1].corr &= 0xFFFFFFFFu; /* the metric */
    }
    return 0;
}

/* A MERGED chunk's map (checked by chunk_ok). */
static int add_merge(gpuprof__io_trace *t, const uint8_t *p, uint32_t n)
{
    if ((t->merge_count & (t->merge_count - 1)) == 0) {
        size_t cap = t->merge_count ? (size_t)t->merge_count * 2 : 4;
        void *nm = realloc(t->merges, cap * sizeof(*t->merges));
        if (!nm)
            return GPUPROF_IO_ERR_NOMEM;
        t->merges = nm;
    }
    uint32_t *map = malloc((n ? n : 1) * sizeof(*map));
    if (!map)
        return GPUPROF_IO_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        map[i] = get32(p + 8 + 4 * i);
    t->merges[t->merge_count++] =
        (gpuprof__io_trace_merge){get32(p), get32(p + 4), n, map};
    return 0;
}

static int merge_cmp(const void *a, const void *b)
{
    const gpuprof__io_trace_merge *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* Binary search over the merges, sorted by (seq, first) at the end of
 * decoding: the last one at or before (seq, node). */
uint32_t gpuprof__io_trace_merged_node(const gpuprof__io_trace *t,
                                       uint32_t seq, uint32_t node)
{
    uint32_t lo = 0, hi = t->merge_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const gpuprof__io_trace_merge *m = &t->merges[mid];
        if (m->seq < seq || (m->seq == seq && m->first <= node))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return UINT32_MAX;
    const gpuprof__io_trace_merge *m = &t->merges[lo - 1];
    return m->seq == seq && node - m->first < m->count
               ? m->map[node - m->first]
               : UINT32_MAX;
}

int gpuprof__io_trace_decode(const uint8_t *buf, size_t size,
                             gpuprof__io_trace **out, char *err, size_t es)
{
    *out = NULL;
    if (size < GPUPROF_IO_TRACE_HEADER || memcmp(buf, GPUPROF_IO_TRACE_MAGIC, 8)) {
        snprintf(err, es, "not a gpuprof trace (bad magic or too short)");
        return GPUPROF_IO_ERR_FORMAT;
    }
    if (gpuprof__io_crc32c(0, buf, 28) != get32(buf + 28) || get32(buf + 24)) {
        snprintf(err, es, "trace header damaged (checksum mismatch)");
        return GPUPROF_IO_ERR_FORMAT;
    }
    if (get16(buf + 8) != GPUPROF_IO_TRACE_MAJOR) {
        snprintf(err, es, "unsupported trace format version %u.%u",
                 get16(buf + 8), get16(buf + 10));
        return GPUPROF_IO_ERR_VERSION;
    }
    gpuprof__io_trace *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, es, "out of memory");
        return GPUPROF_IO_ERR_NOMEM;
    }
    t->minor = get16(buf + 10);
    t->pid = get32(buf + 12);
    t->start_realtime_ns = get64(buf + 16);
    size_t off = GPUPROF_IO_TRACE_HEADER;
    while (off < size) {
        size_t n = chunk_ok(buf, size, off, t->ignored_why,
                            sizeof(t->ignored_why));
        if (!n) {
            t->ignored_bytes = size - off;
            break;
        }
        const uint8_t *h = buf + off, *p = h + GPUPROF_IO_TRACE_CHUNK_HEADER;
        uint32_t type = get16(h + 4), flags = get16(h + 6);
        int rc = 0;
        if (type == GPUPROF_IO_TRACE_RECORDS ||
            type == GPUPROF_IO_TRACE_CORR_RECORDS) {
            uint32_t gpu = (flags & GPUPROF_IO_TRACE_GPU) != 0;
            bool ops = type == GPUPROF_IO_TRACE_CORR_RECORDS && !gpu;
            gpuprof__io_trace_stream *s =
                ops ? stream_of(&t->ops, &t->op_stream_count, 0, get32(h + 8),
                                get32(h + 12))
                    : stream_of(&t->streams, &t->stream_count, gpu,
                                get32(h + 8), get32(h + 12));
            rc = s ? add_records(s, p, get32(h + 16),
                                 type == GPUPROF_IO_TRACE_RECORDS
                                     ? GPUPROF_IO_TRACE_RECORD
                                     : GPUPROF_IO_TRACE_CORR_RECORD)
                   : GPUPROF_IO_ERR_NOMEM;
            if (s && (flags & GPUPROF_IO_TRACE_OUT_OF_ORDER))
                s->out_of_order = 1;
        } else if (type == GPUPROF_IO_TRACE_DEP_RECORDS) {
            gpuprof__io_trace_stream *s = stream_of(
                &t->deps, &t->dep_stream_count, 0, 0, get32(h + 12));
            rc = s ? add_records(s, p, get32(h + 16),
                                 GPUPROF_IO_TRACE_CORR_RECORD)
                   : GPUPROF_IO_ERR_NOMEM;
        } else if (type == GPUPROF_IO_TRACE_MPI_RECORDS) {
            rc = add_mpi(t, get32(h + 12), p, get32(h + 16));
        } else if (type == GPUPROF_IO_TRACE_HOST_RECORDS) {
            rc = add_host(t, get32(h + 12), p, get32(h + 16));
        } else if (type == GPUPROF_IO_TRACE_SAMPLE_RECORDS) {
            rc = add_samples(t, p, get32(h + 16));
        } else if (type == GPUPROF_IO_TRACE_THREAD) {
            if ((t->thread_count & (t->thread_count - 1)) == 0) {
                size_t cap = t->thread_count ? (size_t)t->thread_count * 2 : 4;
                void *nt = realloc(t->threads, cap * sizeof(*t->threads));
                if (!nt)
                    rc = GPUPROF_IO_ERR_NOMEM;
                else
                    t->threads = nt;
            }
            if (!rc) {
                gpuprof__io_trace_thread *th = &t->threads[t->thread_count++];
                th->seq = get32(p);
                th->tid = get64(p + 8);
                snprintf(th->name, sizeof(th->name), "%s", (const char *)p + 16);
            }
        } else if (type == GPUPROF_IO_TRACE_MERGED) {
            rc = add_merge(t, p, get32(h + 16));
        } /* unknown types (a later minor) are skipped */
        if (rc) {
            gpuprof__io_trace_free(t);
            snprintf(err, es, "out of memory");
            return rc;
        }
        t->chunks++;
        off += n;
    }
    if (t->merge_count > 1)
        qsort(t->merges, t->merge_count, sizeof(*t->merges), merge_cmp);
    *out = t;
    return 0;
}

int gpuprof__io_trace_read_file(const char *path, gpuprof__io_trace **out,
                                char *err, size_t es)
{
    *out = NULL;
    uint8_t *buf;
    size_t got;
    int rc = gpuprof__io_read_whole(path, &buf, &got, err, es);
    if (rc)
        return rc;
    rc = gpuprof__io_trace_decode(buf, got, out, err, es);
    free(buf);
    return rc;
}

static int rec_cmp(const void *a, const void *b)
{
    const gpuprof__io_trace_rec *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->context != y->context)
        return x->context < y->context ? -1 : 1;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static void sort_streams(gpuprof__io_trace_stream *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].count > 1)
            qsort(v[i].recs, v[i].count, sizeof(gpuprof__io_trace_rec),
                  rec_cmp);
}

/* MPI records by start, then end, then what they are (a call's records
 * share its times). */
static int mpi_cmp(const void *a, const void *b)
{
    const gpuprof__io_mpi_rec *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return (x->request > y->request) - (x->request < y->request);
}

static void sort_mpi(gpuprof__io_trace_mpi *m)
{
    if (m->count > 1)
        qsort(m->recs, m->count, sizeof(*m->recs), mpi_cmp);
}

/* Host records by start, then end, then op (a thread's calls come in
 * order: sorting only mends a clock that stepped). */
static int host_cmp(const void *a, const void *b)
{
    const gpuprof__io_host_rec *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    return (x->op > y->op) - (x->op < y->op);
}

void gpuprof__io_trace_sort(gpuprof__io_trace *t)
{
    sort_streams(t->streams, t->stream_count);
    sort_streams(t->ops, t->op_stream_count);
    sort_streams(t->deps, t->dep_stream_count);
    sort_streams(t->samples, t->sample_stream_count);
    for (uint32_t i = 0; i < t->mpi_count; i++)
        sort_mpi(&t->mpi[i]);
    for (uint32_t i = 0; i < t->host_count; i++)
        if (t->host[i].count > 1)
            qsort(t->host[i].recs, t->host[i].count,
                  sizeof(*t->host[i].recs), host_cmp);
}

void gpuprof__io_trace_free(gpuprof__io_trace *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->stream_count; i++)
        free(t->streams[i].recs);
    free(t->streams);
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        free(t->ops[i].recs);
    free(t->ops);
    for (uint32_t i = 0; i < t->dep_stream_count; i++)
        free(t->deps[i].recs);
    free(t->deps);
    for (uint32_t i = 0; i < t->sample_stream_count; i++)
        free(t->samples[i].recs);
    free(t->samples);
    for (uint32_t i = 0; i < t->mpi_count; i++)
        free(t->mpi[i].recs);
    free(t->mpi);
    for (uint32_t i = 0; i < t->host_count; i++)
        free(t->host[i].recs);
    free(t->host);
    free(t->threads);
    for (uint32_t i = 0; i < t->merge_count; i++)
        free(t->merges[i].map);
    free(t->merges);
    free(t);
}
