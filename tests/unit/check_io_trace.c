/*
 * check_io_trace.c - the trace file format: chunks round-trip exactly; a
 * torn last chunk (every truncation point) leaves the earlier chunks intact
 * and is reported as ignored; a flipped byte anywhere stops reading at its
 * chunk (or refuses a damaged header); out-of-order flags; sorting.
 * Format 1.1: CORR_RECORDS chunks carry correlation ids, a GPU stream's
 * into its stream and a CPU thread's operations into `ops`, every byte as
 * doc/FORMATS.md says; a 1.0 file (frozen bytes) is still read, and chunk
 * types the reader does not know are skipped. Format 1.2: MERGED chunks
 * map a merged thread's nodes (every byte as doc/FORMATS.md says; lookups
 * across chunks, in any order; a chunk whose sizes disagree is damage).
 * Format 1.5: HOST_RECORDS, 40-byte host synchronization records, every
 * byte where doc/FORMATS.md puts it, read back per thread and sorted.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/trace.h"
#include "support/suite.h"

/* header + THREAD chunk + GPU chunk (3 recs, out of order) + CPU chunk. */
static size_t build(uint8_t *buf, size_t *cut)
{
    size_t off = 0;
    gpuprof__io_trace_header(buf, 4242, 77);
    off += GPUPROF_IO_TRACE_HEADER;
    off += gpuprof__io_trace_thread_chunk(buf + off, 3, 9999, "worker");
    gpuprof__io_trace_rec g[3] = {
        {100, 150, 1, 0}, {50, 90, 2, 0}, {200, 260, 3, 0}};
    off += gpuprof__io_trace_records(buf + off,
                                     GPUPROF_IO_TRACE_GPU |
                                         GPUPROF_IO_TRACE_OUT_OF_ORDER,
                                     1, 7, g, 3);
    *cut = off; /* the last chunk starts here */
    gpuprof__io_trace_rec c[2] = {{10, 20, (3ull << 32) | 5, 0},
                                  {5, 30, (3ull << 32) | 4, 0}};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 3, c, 2);
    return off;
}

static gpuprof__io_trace *decode_ok(const uint8_t *b, size_t n)
{
    gpuprof__io_trace *t = NULL;
    char err[160];
    int rc = gpuprof__io_trace_decode(b, n, &t, err, sizeof(err));
    ck_assert_msg(rc == 0, "decode: %s", err);
    return t;
}

START_TEST(round_trip)
{
    uint8_t buf[1024];
    size_t cut, n = build(buf, &cut);
    gpuprof__io_trace *t = decode_ok(buf, n);
    ck_assert_uint_eq(t->pid, 4242);
    ck_assert_uint_eq(t->start_realtime_ns, 77);
    ck_assert_uint_eq(t->chunks, 3);
    ck_assert_uint_eq(t->ignored_bytes, 0);
    ck_assert_uint_eq(t->thread_count, 1);
    ck_assert_uint_eq(t->threads[0].seq, 3);
    ck_assert_uint_eq(t->threads[0].tid, 9999);
    ck_assert_str_eq(t->threads[0].name, "worker");
    ck_assert_uint_eq(t->stream_count, 2);
    const gpuprof__io_trace_stream *g = &t->streams[0], *c = &t->streams[1];
    ck_assert_uint_eq(g->gpu, 1);
    ck_assert_uint_eq(g->device, 1);
    ck_assert_uint_eq(g->id, 7);
    ck_assert_uint_eq(g->out_of_order, 1);
    ck_assert_uint_eq(g->count, 3);
    ck_assert_uint_eq(g->recs[1].start_ns, 50);
    ck_assert_uint_eq(g->recs[1].end_ns, 90);
    ck_assert_uint_eq(g->recs[1].context, 2);
    ck_assert_uint_eq(c->gpu, 0);
    ck_assert_uint_eq(c->id, 3);
    ck_assert_uint_eq(c->out_of_order, 0);
    ck_assert_uint_eq(c->recs[1].context, (3ull << 32) | 4);
    gpuprof__io_trace_sort(t);
    ck_assert_uint_eq(g->recs[0].start_ns, 50);
    ck_assert_uint_eq(g->recs[1].start_ns, 100);
    ck_assert_uint_eq(g->recs[2].start_ns, 200);
    ck_assert_uint_eq(c->recs[0].start_ns, 5);
    gpuprof__io_trace_free(t);
}
END_TEST

START_TEST(torn_tail_every_byte)
{
    uint8_t buf[1024];
    size_t cut, n = build(buf, &cut);
    for (size_t k = cut; k < n; k++) { /* killed while writing the last */
        gpuprof__io_trace *t = decode_ok(buf, k);
        ck_assert_uint_eq(t->chunks, 2);
        ck_assert_uint_eq(t->ignored_bytes, k - cut);
        ck_assert_uint_eq(t->stream_count, 1);
        ck_assert_uint_eq(t->streams[0].count, 3);
        if (k > cut)
            ck_assert(t->ignored_why[0] != '\0');
        gpuprof__io_trace_free(t);
    }
    /* Header only: an empty, valid trace. */
    gpuprof__io_trace *t = decode_ok(buf, GPUPROF_IO_TRACE_HEADER);
    ck_assert_uint_eq(t->chunks, 0);
    ck_assert_uint_eq(t->stream_count, 0);
    gpuprof__io_trace_free(t);
}
END_TEST

START_TEST(flips_detected)
{
    uint8_t buf[1024];
    size_t cut, n = build(buf, &cut);
    for (size_t i = 0; i < n; i++) {
        buf[i] ^= 0x10;
        gpuprof__io_trace *t = NULL;
        char err[160];
        int rc = gpuprof__io_trace_decode(buf, n, &t, err, sizeof(err));
        if (i < GPUPROF_IO_TRACE_HEADER) {
            ck_assert_msg(rc != 0, "header flip at %zu accepted", i);
        } else {
            /* The damaged chunk and what follows are ignored. */
            ck_assert_msg(rc == 0, "flip at %zu: %s", i, err);
            ck_assert_msg(t->ignored_bytes > 0, "flip at %zu unnoticed", i);
            ck_assert_uint_lt(t->chunks, 3);
            gpuprof__io_trace_free(t);
        }
        buf[i] ^= 0x10;
    }
    gpuprof__io_trace *t = NULL;
    char err[160];
    ck_assert_int_eq(gpuprof__io_trace_decode(buf, 10, &t, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    buf[8] = 9; /* another major: refused by name */
    ck_assert_int_ne(gpuprof__io_trace_decode(buf, n, &t, err, sizeof(err)), 0);
    ck_assert_ptr_null(t);
}
END_TEST

/* header + GPU CORR_RECORDS (2) + CPU CORR_RECORDS (operations, 2) + CPU
 * RECORDS (a region). */
static size_t build_corr(uint8_t *buf)
{
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 77, 5);
    gpuprof__io_trace_rec g[2] = {{300, 340, (2ull << 32) | 9, 0x1000000002ull},
                                  {340, 400, (2ull << 32) | 9, 0x1000000003ull}};
    off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU, 0,
                                          1, g, 2);
    gpuprof__io_trace_rec o[2] = {{100, 120, (2ull << 32) | 9, 0x1000000002ull},
                                  {130, 150, (2ull << 32) | 9, 0x1000000003ull}};
    off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 2, o, 2);
    gpuprof__io_trace_rec r[1] = {{90, 160, (2ull << 32) | 4, 0}};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 2, r, 1);
    return off;
}

START_TEST(corr_records)
{
    uint8_t buf[1024];
    size_t n = build_corr(buf);
    ck_assert_uint_eq(n, 32 + (32 + 2 * 32) * 2 + 32 + 24);
    /* The bytes of the GPU chunk, as doc/FORMATS.md has them. */
    const uint8_t *h = buf + GPUPROF_IO_TRACE_HEADER;
    ck_assert_uint_eq(buf[10] | buf[11] << 8, 5); /* minor (1.5) */
    ck_assert_uint_eq(h[4] | h[5] << 8, GPUPROF_IO_TRACE_CORR_RECORDS);
    ck_assert_uint_eq(h[4], 3);
    ck_assert_uint_eq(h[6], GPUPROF_IO_TRACE_GPU);
    ck_assert_uint_eq(h[12], 1);  /* stream */
    ck_assert_uint_eq(h[16], 2);  /* count */
    ck_assert_uint_eq(h[20], 64); /* payload */
    const uint8_t *r1 = h + 32 + 32; /* second record */
    ck_assert_uint_eq(r1[0] | r1[1] << 8, 340);
    ck_assert_uint_eq(r1[16], 9);
    ck_assert_uint_eq(r1[20], 2);
    ck_assert_uint_eq(r1[24], 3);
    ck_assert_uint_eq(r1[28], 0x10);
    gpuprof__io_trace *t = decode_ok(buf, n);
    ck_assert_uint_eq(t->minor, 5);
    ck_assert_uint_eq(t->chunks, 3);
    ck_assert_uint_eq(t->stream_count, 2);
    ck_assert_uint_eq(t->op_stream_count, 1);
    const gpuprof__io_trace_stream *gs = &t->streams[0], *cs = &t->streams[1],
                                   *os = &t->ops[0];
    ck_assert_uint_eq(gs->gpu, 1);
    ck_assert_uint_eq(gs->id, 1);
    ck_assert_uint_eq(gs->count, 2);
    ck_assert_uint_eq(gs->recs[1].start_ns, 340);
    ck_assert_uint_eq(gs->recs[1].end_ns, 400);
    ck_assert_uint_eq(gs->recs[1].context, (2ull << 32) | 9);
    ck_assert_uint_eq(gs->recs[1].corr, 0x1000000003ull);
    ck_assert_uint_eq(os->gpu, 0);
    ck_assert_uint_eq(os->id, 2);
    ck_assert_uint_eq(os->count, 2);
    ck_assert_uint_eq(os->recs[0].start_ns, 100);
    ck_assert_uint_eq(os->recs[0].end_ns, 120);
    ck_assert_uint_eq(os->recs[0].corr, 0x1000000002ull);
    ck_assert_uint_eq(cs->gpu, 0);
    ck_assert_uint_eq(cs->count, 1);
    ck_assert_uint_eq(cs->recs[0].start_ns, 90);
    ck_assert_uint_eq(cs->recs[0].corr, 0);
    gpuprof__io_trace_free(t);
    /* A count that disagrees with the payload (24-byte records) ends the
     * readable part there. */
    uint8_t bad[1024];
    memcpy(bad, buf, n);
    bad[GPUPROF_IO_TRACE_HEADER + 16] = 3; /* count 3: 96 != 64 bytes */
    uint32_t crc = gpuprof__io_crc32c(0, bad + GPUPROF_IO_TRACE_HEADER, 28);
    crc = gpuprof__io_crc32c(crc, bad + GPUPROF_IO_TRACE_HEADER + 32, 64);
    memcpy(bad + GPUPROF_IO_TRACE_HEADER + 28, &crc, 4); /* little-endian */
    t = decode_ok(bad, n);
    ck_assert_uint_eq(t->chunks, 0);
    ck_assert_uint_eq(t->ignored_bytes, n - GPUPROF_IO_TRACE_HEADER);
    ck_assert_str_eq(t->ignored_why, "record count 3 does not match 64 bytes");
    gpuprof__io_trace_free(t);
    /* Torn inside the last CORR chunk's records: the chunks before stay. */
    size_t cut = GPUPROF_IO_TRACE_HEADER + 96 + 96;
    for (size_t k = GPUPROF_IO_TRACE_HEADER + 96 + 1; k < cut; k++) {
        t = decode_ok(buf, k);
        ck_assert_uint_eq(t->chunks, 1);
        ck_assert_uint_eq(t->op_stream_count, 0);
        ck_assert_uint_eq(t->streams[0].count, 2);
        gpuprof__io_trace_free(t);
    }
}
END_TEST

/* A trace written by format 1.0 (frozen bytes; pid 4242, realtime 77): a
 * THREAD chunk (seq 3, tid 9999, "worker"), a GPU RECORDS chunk (device 1,
 * stream 7, {100, 150, 1}) and a CPU RECORDS chunk (thread 3, {10, 20,
 * 3<<32|5}). */
static const uint8_t v10[] = {
    0x47, 0x50, 0x54, 0x52, 0x41, 0x43, 0x45, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x92, 0x10, 0x00, 0x00, 0x4d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x31, 0x04, 0x24, 0xc2, 0x54, 0x43, 0x48, 0x4b,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2c, 0x73, 0xa5, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x0f, 0x27, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x77, 0x6f, 0x72, 0x6b,
    0x65, 0x72, 0x00, 0x54, 0x43, 0x48, 0x4b, 0x01, 0x00, 0x01, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x18,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd5, 0x1a, 0x98, 0xf3, 0x64,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x96, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x54,
    0x43, 0x48, 0x4b, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x61, 0x9c, 0x6e, 0xf9, 0x0a, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00};

START_TEST(old_minor_read)
{
    gpuprof__io_trace *t = decode_ok(v10, sizeof(v10));
    ck_assert_uint_eq(t->minor, 0);
    ck_assert_uint_eq(t->pid, 4242);
    ck_assert_uint_eq(t->start_realtime_ns, 77);
    ck_assert_uint_eq(t->chunks, 3);
    ck_assert_uint_eq(t->ignored_bytes, 0);
    ck_assert_uint_eq(t->thread_count, 1);
    ck_assert_str_eq(t->threads[0].name, "worker");
    ck_assert_uint_eq(t->threads[0].tid, 9999);
    ck_assert_uint_eq(t->stream_count, 2);
    ck_assert_uint_eq(t->op_stream_count, 0);
    const gpuprof__io_trace_stream *g = &t->streams[0], *c = &t->streams[1];
    ck_assert_uint_eq(g->gpu, 1);
    ck_assert_uint_eq(g->device, 1);
    ck_assert_uint_eq(g->id, 7);
    ck_assert_uint_eq(g->count, 1);
    ck_assert_uint_eq(g->recs[0].start_ns, 100);
    ck_assert_uint_eq(g->recs[0].end_ns, 150);
    ck_assert_uint_eq(g->recs[0].context, 1);
    ck_assert_uint_eq(g->recs[0].corr, 0);
    ck_assert_uint_eq(c->gpu, 0);
    ck_assert_uint_eq(c->id, 3);
    ck_assert_uint_eq(c->recs[0].context, (3ull << 32) | 5);
    ck_assert_uint_eq(c->recs[0].corr, 0);
    gpuprof__io_trace_free(t);
}
END_TEST

/* A chunk type from a later minor (here 9) is skipped, what follows read. */
START_TEST(unknown_chunk_skipped)
{
    uint8_t buf[1024];
    size_t n = build_corr(buf);
    uint8_t *h = buf + GPUPROF_IO_TRACE_HEADER + 96; /* the CPU CORR chunk */
    h[4] = 9;
    uint32_t crc = gpuprof__io_crc32c(0, h, 28);
    crc = gpuprof__io_crc32c(crc, h + 32, 64);
    memcpy(h + 28, &crc, 4);
    gpuprof__io_trace *t = decode_ok(buf, n);
    ck_assert_uint_eq(t->chunks, 3);
    ck_assert_uint_eq(t->ignored_bytes, 0);
    ck_assert_uint_eq(t->op_stream_count, 0);
    ck_assert_uint_eq(t->stream_count, 2);
    ck_assert_uint_eq(t->streams[1].count, 1);
    gpuprof__io_trace_free(t);
}
END_TEST

/* 1.3: a thread's dependency notes (DEP_RECORDS, type 5), 32-byte records
 * read back into t->deps with the note's fields where doc/FORMATS.md puts
 * them; a reader skipping type 5 (as 1.2 readers do) sees the rest. */
START_TEST(dep_records)
{
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 77, 5);
    gpuprof__io_trace_rec o = {100, 150, (2ull << 32) | 9, 0x1000000002ull};
    off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 2, &o, 1);
    gpuprof__io_trace_rec d[2] = {
        {100, 0x1000000001ull, GPUPROF_IO_DEP_INFO(3, 0, 1, 7),
         0x1000000002ull},
        {100, 0, GPUPROF_IO_DEP_INFO(4, 1, 0, GPUPROF_IO_DEP_ALL),
         0x1000000002ull}};
    size_t at = off;
    off += gpuprof__io_trace_dep_records(buf + off, 0, 2, d, 2);
    ck_assert_uint_eq(off - at, 32 + 2 * 32);
    const uint8_t *h = buf + at;
    ck_assert_uint_eq(h[4] | h[5] << 8, GPUPROF_IO_TRACE_DEP_RECORDS);
    ck_assert_uint_eq(h[4], 5);
    ck_assert_uint_eq(h[12], 2); /* thread_seq */
    const uint8_t *r = h + 32;
    ck_assert_uint_eq(r[8], 1);     /* target, low byte */
    ck_assert_uint_eq(r[16], 3);    /* what */
    ck_assert_uint_eq(r[17], 0);    /* flags */
    ck_assert_uint_eq(r[18], 1);    /* device */
    ck_assert_uint_eq(r[20], 7);    /* stream */
    ck_assert_uint_eq(r[23], 0x80); /* bit 63 */
    ck_assert_uint_eq(r[24], 2);    /* the call's correlation id */
    gpuprof__io_trace *t = decode_ok(buf, off);
    ck_assert_uint_eq(t->dep_stream_count, 1);
    ck_assert_uint_eq(t->op_stream_count, 1);
    const gpuprof__io_trace_stream *ds = &t->deps[0];
    ck_assert_uint_eq(ds->id, 2);
    ck_assert_uint_eq(ds->count, 2);
    ck_assert_uint_eq(GPUPROF_IO_DEP_WHAT(ds->recs[0].context), 3);
    ck_assert_uint_eq(GPUPROF_IO_DEP_DEVICE(ds->recs[0].context), 1);
    ck_assert_uint_eq(GPUPROF_IO_DEP_STREAM(ds->recs[0].context), 7);
    ck_assert_uint_eq(ds->recs[0].end_ns, 0x1000000001ull);
    ck_assert_uint_eq(GPUPROF_IO_DEP_FLAGS(ds->recs[1].context), 1);
    ck_assert_uint_eq(GPUPROF_IO_DEP_STREAM(ds->recs[1].context),
                      GPUPROF_IO_DEP_ALL);
    gpuprof__io_trace_free(t);
    /* A count that disagrees with the payload ends the readable part. */
    uint8_t bad[1024];
    memcpy(bad, buf, off);
    bad[at + 16] = 3;
    uint32_t crc = gpuprof__io_crc32c(0, bad + at, 28);
    crc = gpuprof__io_crc32c(crc, bad + at + 32, 64);
    for (int i = 0; i < 4; i++)
        bad[at + 28 + i] = (uint8_t)(crc >> (8 * i));
    t = decode_ok(bad, off);
    ck_assert_uint_eq(t->dep_stream_count, 0);
    ck_assert_uint_eq(t->ignored_bytes, off - at);
    gpuprof__io_trace_free(t);
}
END_TEST

/* buf[0 .. off) with the record count of its chunk at `at` (3 records,
 * `payload` bytes) made 2 and the checksum mended: read up to that chunk,
 * the rest ignored as damage. */
static gpuprof__io_trace *miscounted(const uint8_t *buf, size_t off,
                                     size_t at, uint32_t payload)
{
    static uint8_t bad[1024];
    memcpy(bad, buf, off);
    bad[at + 16] = 2;
    uint32_t crc = gpuprof__io_crc32c(0, bad + at, 28);
    crc = gpuprof__io_crc32c(crc, bad + at + 32, payload);
    for (int i = 0; i < 4; i++)
        bad[at + 28 + i] = (uint8_t)(crc >> (8 * i));
    gpuprof__io_trace *t = decode_ok(bad, off);
    ck_assert_uint_eq(t->ignored_bytes, off - at);
    return t;
}

/* 1.4: a thread's MPI calls (MPI_RECORDS, type 6), 64-byte records with
 * their fields where doc/FORMATS.md puts them, read back sorted by start
 * (a call's events keep their times); a count that disagrees with the
 * payload is damage like any other. */
START_TEST(mpi_records)
{
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 77, 5);
    gpuprof__io_mpi_rec m[3] = {
        {500, 700, 0, 9, 0, 0, -1, -1, 6, 0},      /* a Wait, later */
        {100, 200, 4096, 0, 0, 3, 2, 17, 2, 0},    /* a Send to 2 */
        {300, 400, 8, 0, 3ull << 32 | 1, 5, -1, -1, 10, 0}}; /* Allreduce */
    size_t at = off;
    off += gpuprof__io_trace_mpi_records(buf + off, 4, m, 3);
    ck_assert_uint_eq(off - at, 32 + 3 * 64);
    const uint8_t *h = buf + at;
    ck_assert_uint_eq(h[4] | h[5] << 8, GPUPROF_IO_TRACE_MPI_RECORDS);
    ck_assert_uint_eq(h[4], 6);
    ck_assert_uint_eq(h[12], 4); /* thread_seq */
    ck_assert_uint_eq(h[16], 3); /* count */
    const uint8_t *r = h + 32 + 64; /* the Send */
    ck_assert_uint_eq(r[0], 100);
    ck_assert_uint_eq(r[8], 200);
    ck_assert_uint_eq(r[17], 0x10); /* bytes 4096 */
    ck_assert_uint_eq(r[40], 3);    /* comm */
    ck_assert_uint_eq(r[44], 2);    /* peer */
    ck_assert_uint_eq(r[48], 17);   /* tag */
    ck_assert_uint_eq(r[52], 2);    /* op */
    ck_assert_uint_eq(h[32 + 24], 9); /* the Wait's request */
    ck_assert_uint_eq(h[32 + 128 + 36], 3); /* the Allreduce's size */
    gpuprof__io_trace *t = decode_ok(buf, off);
    gpuprof__io_trace_sort(t);
    ck_assert_uint_eq(t->mpi_count, 1);
    ck_assert_uint_eq(t->mpi[0].id, 4);
    ck_assert_uint_eq(t->mpi[0].count, 3);
    const gpuprof__io_mpi_rec *x = t->mpi[0].recs;
    ck_assert_uint_eq(x[0].start_ns, 100);
    ck_assert_int_eq(x[0].peer, 2);
    ck_assert_int_eq(x[0].tag, 17);
    ck_assert_uint_eq(x[0].bytes, 4096);
    ck_assert_uint_eq(x[1].op, 10);
    ck_assert_uint_eq(x[1].aux, 3ull << 32 | 1);
    ck_assert_int_eq(x[2].peer, -1);
    ck_assert_uint_eq(x[2].request, 9);
    gpuprof__io_trace_free(t);
    t = miscounted(buf, off, at, 3 * 64);
    ck_assert_uint_eq(t->mpi_count, 0);
    gpuprof__io_trace_free(t);
}
END_TEST

/* 1.5: a thread's host records (HOST_RECORDS, type 8): 40 bytes each,
 * read back sorted by start; a count that disagrees with the payload is
 * damage. */
START_TEST(host_records)
{
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 77, 5);
    gpuprof__io_host_rec h[3] = {
        {900, 900, 0x7f00aa, 0, GPUPROF_IO_HOST_UNLOCK, 0},
        {100, 700, 0x7f00aa, 0x55, GPUPROF_IO_HOST_COND_WAIT,
         GPUPROF_IO_HOST_TIMEOUT},
        {300, 450, 7, 0, GPUPROF_IO_HOST_BARRIER, GPUPROF_IO_HOST_OMP}};
    size_t at = off;
    off += gpuprof__io_trace_host_records(buf + off, 3, h, 3);
    ck_assert_uint_eq(off - at, 32 + 3 * 40);
    const uint8_t *c = buf + at;
    ck_assert_uint_eq(c[4], 8); /* type */
    ck_assert_uint_eq(c[12], 3); /* thread_seq */
    ck_assert_uint_eq(c[16], 3); /* count */
    const uint8_t *r = c + 32 + 40; /* the condition wait */
    ck_assert_uint_eq(r[0], 100);
    ck_assert_uint_eq(r[8] | r[9] << 8, 700);
    ck_assert_uint_eq(r[16], 0xaa);
    ck_assert_uint_eq(r[18], 0x7f);
    ck_assert_uint_eq(r[24], 0x55); /* aux */
    ck_assert_uint_eq(r[32], GPUPROF_IO_HOST_COND_WAIT);
    ck_assert_uint_eq(r[33], GPUPROF_IO_HOST_TIMEOUT);
    for (int i = 34; i < 40; i++)
        ck_assert_uint_eq(r[i], 0);
    gpuprof__io_trace *t = decode_ok(buf, off);
    gpuprof__io_trace_sort(t);
    ck_assert_uint_eq(t->host_count, 1);
    ck_assert_uint_eq(t->host[0].id, 3);
    ck_assert_uint_eq(t->host[0].count, 3);
    const gpuprof__io_host_rec *x = t->host[0].recs;
    ck_assert_uint_eq(x[0].start_ns, 100);
    ck_assert_uint_eq(x[0].end_ns, 700);
    ck_assert_uint_eq(x[0].object, 0x7f00aa);
    ck_assert_uint_eq(x[0].aux, 0x55);
    ck_assert_uint_eq(x[0].flags, GPUPROF_IO_HOST_TIMEOUT);
    ck_assert_uint_eq(x[1].op, GPUPROF_IO_HOST_BARRIER);
    ck_assert_uint_eq(x[1].flags, GPUPROF_IO_HOST_OMP);
    ck_assert_uint_eq(x[2].op, GPUPROF_IO_HOST_UNLOCK);
    ck_assert_uint_eq(x[2].start_ns, x[2].end_ns);
    gpuprof__io_trace_free(t);
    t = miscounted(buf, off, at, 3 * 40);
    ck_assert_uint_eq(t->host_count, 0);
    gpuprof__io_trace_free(t);
}
END_TEST

/* MERGED chunks: thread 5's nodes 0-2 in one chunk, 3-4 in a later one
 * (written first: order does not matter), thread 2's node 0. */
START_TEST(merged_maps)
{
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 1, 2);
    static const uint32_t a[] = {0, 7, UINT32_MAX}, b[] = {9, 8}, c[] = {4};
    size_t first = off;
    off += gpuprof__io_trace_merged_chunk(buf + off, 5, 3, b, 2);
    off += gpuprof__io_trace_merged_chunk(buf + off, 2, 0, c, 1);
    off += gpuprof__io_trace_merged_chunk(buf + off, 5, 0, a, 3);
    /* The first chunk's bytes: header (type 4, id = seq 5, count 2,
     * payload 16), then seq, first, the two entries. */
    static const uint8_t want[] = {0x54, 0x43, 0x48, 0x4b, 4, 0, 0, 0, 0, 0,
                                   0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0,
                                   0, 0, 0, 0};
    ck_assert_mem_eq(buf + first, want, sizeof(want));
    static const uint8_t pay[] = {5, 0, 0, 0, 3, 0, 0, 0,
                                  9, 0, 0, 0, 8, 0, 0, 0};
    ck_assert_mem_eq(buf + first + 32, pay, sizeof(pay));
    gpuprof__io_trace *t = decode_ok(buf, off);
    ck_assert_uint_eq(t->chunks, 3);
    ck_assert_uint_eq(t->merge_count, 3);
    static const struct {
        uint32_t seq, node, to;
    } q[] = {{5, 0, 0},          {5, 1, 7}, {5, 2, UINT32_MAX},
             {5, 3, 9},          {5, 4, 8}, {5, 5, UINT32_MAX},
             {2, 0, 4},          {2, 1, UINT32_MAX},
             {1, 0, UINT32_MAX}, {6, 0, UINT32_MAX}};
    for (unsigned i = 0; i < sizeof(q) / sizeof(q[0]); i++)
        ck_assert_msg(gpuprof__io_trace_merged_node(t, q[i].seq, q[i].node) ==
                          q[i].to,
                      "thread %u node %u", q[i].seq, q[i].node);
    gpuprof__io_trace_free(t);
    /* A count that disagrees with the payload ends the readable part. */
    uint8_t *h = buf + first;
    h[16] = 3;
    uint32_t crc = gpuprof__io_crc32c(0, h, 28);
    crc = gpuprof__io_crc32c(crc, h + 32, 16);
    memcpy(h + 28, &crc, 4);
    t = decode_ok(buf, off);
    ck_assert_uint_eq(t->merge_count, 0);
    ck_assert_uint_eq(t->ignored_bytes, off - first);
    ck_assert_str_eq(t->ignored_why, "bad merged-thread chunk");
    gpuprof__io_trace_free(t);
}
END_TEST

/* SAMPLE_RECORDS: records of two threads in one chunk, each onto its
 * thread's stream with the metric in corr; a reserved word set is damage. */
START_TEST(sample_records)
{
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 77, 5);
    const gpuprof__io_trace_rec s[3] = {{500, 10000, 2ull << 32 | 7, 41},
                                        {100, 20000, 2ull << 32 | 3, 43},
                                        {300, 10000, 4ull << 32 | 1, 41}};
    size_t at = off;
    off += gpuprof__io_trace_sample_records(buf + off, s, 3);
    ck_assert_uint_eq(off - at, 32 + 3 * 32);
    ck_assert_uint_eq(buf[at + 4], 7); /* type */
    ck_assert_uint_eq(buf[at + 16], 3); /* count */
    gpuprof__io_trace *t = decode_ok(buf, off);
    gpuprof__io_trace_sort(t);
    ck_assert_uint_eq(t->sample_stream_count, 2);
    const gpuprof__io_trace_stream *a = &t->samples[0], *b = &t->samples[1];
    if (a->id != 2) {
        const gpuprof__io_trace_stream *x = a;
        a = b;
        b = x;
    }
    ck_assert_uint_eq(a->id, 2);
    ck_assert_uint_eq(a->count, 2);
    ck_assert_uint_eq(a->recs[0].start_ns, 100); /* sorted by time */
    ck_assert_uint_eq(a->recs[0].end_ns, 20000);
    ck_assert_uint_eq(a->recs[0].context, 2ull << 32 | 3);
    ck_assert_uint_eq(a->recs[0].corr, 43);
    ck_assert_uint_eq(a->recs[1].corr, 41);
    ck_assert_uint_eq(b->id, 4);
    ck_assert_uint_eq(b->count, 1);
    ck_assert_uint_eq(b->recs[0].start_ns, 300);
    gpuprof__io_trace_free(t);
    buf[at + 32 + 32 + 28] = 1; /* the second record's reserved word */
    uint32_t crc = gpuprof__io_crc32c(0, buf + at, 28);
    crc = gpuprof__io_crc32c(crc, buf + at + 32, 3 * 32);
    memcpy(buf + at + 28, &crc, 4); /* little-endian */
    t = decode_ok(buf, off);
    ck_assert_uint_eq(t->sample_stream_count, 0);
    ck_assert_uint_eq(t->ignored_bytes, off - at);
    ck_assert_str_eq(t->ignored_why, "reserved sample bits set");
    gpuprof__io_trace_free(t);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"dep_records", dep_records, 10},
        {"mpi_records", mpi_records, 10},
        {"host_records", host_records, 10},
        {"sample_records", sample_records, 10},
        {"round_trip", round_trip, 10},
        {"torn_tail_every_byte", torn_tail_every_byte, 10},
        {"flips_detected", flips_detected, 30},
        {"corr_records", corr_records, 10},
        {"old_minor_read", old_minor_read, 10},
        {"unknown_chunk_skipped", unknown_chunk_skipped, 10},
        {"merged_maps", merged_maps, 10},
    };
    return RUN_SUITE("io_trace", cases);
}
