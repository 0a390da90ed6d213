/*
 * check_io_trace.c - the trace file format: chunks round-trip exactly; a
 * torn last chunk (every truncation point) leaves the earlier chunks intact
 * and is reported as ignored; a flipped byte anywhere stops reading at its
 * chunk (or refuses a damaged header); out-of-order flags; sorting.
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
    gpuprof__io_trace_rec g[3] = {{100, 150, 1}, {50, 90, 2}, {200, 260, 3}};
    off += gpuprof__io_trace_records(buf + off,
                                     GPUPROF_IO_TRACE_GPU |
                                         GPUPROF_IO_TRACE_OUT_OF_ORDER,
                                     1, 7, g, 3);
    *cut = off; /* the last chunk starts here */
    gpuprof__io_trace_rec c[2] = {{10, 20, (3ull << 32) | 5},
                                  {5, 30, (3ull << 32) | 4}};
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

int main(void)
{
    const test_case cases[] = {
        {"round_trip", round_trip, 10},
        {"torn_tail_every_byte", torn_tail_every_byte, 10},
        {"flips_detected", flips_detected, 30},
    };
    return RUN_SUITE("io_trace", cases);
}
