/*
 * check_io.c - the measurement format: checksums, string tables, exact round
 * trips, refusal of inconsistent profiles, atomic files, and the damage
 * property: every single-byte change and every truncation of a valid file
 * is reported as an error (never accepted, never a crash; `make check`
 * runs this suite under ASan+UBSan too).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "io/layout.h"
#include "support/mkprofile.h"
#include "support/suite.h"

/* Three threads, nested regions, flags, an f64 value, a huge value. */
static tp_builder *sample(void)
{
    tp_builder *b = tp_new("node-17", 4242, 3);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t m = tp_region(b, 0, "main", 1, 5000000000ull, 1000);
    uint32_t s = tp_region(b, m, "solve", 10, 4000000000ull, 300);
    tp_region(b, s, "smooth", 50, 3999999700ull, 3999999700ull);
    tp_ratio(b, 3, 0.125);
    tp_region(b, m, "io", 2, UINT64_MAX, UINT64_MAX - 1);
    tp_flags(b, 4, GPUPROF_IO_NODE_OPEN);
    tp_thread(b, "worker", GPUPROF_IO_THREAD_EXITED);
    uint32_t w = tp_region(b, 0, "solve", 7, 700, 600);
    tp_region(b, w, "smooth", 1, 100, 100);
    tp_flags(b, 2, GPUPROF_IO_NODE_UNBALANCED);
    tp_thread(b, "idle", 0); /* a thread with only its root */
    tp_counter(b, "regions.unbalanced", 1);
    tp_counter(b, "records.dropped", 0);
    return b;
}

static uint8_t *encode(tp_builder *b, int level, size_t *size)
{
    uint8_t *buf;
    char err[256];
    int rc =
        gpuprof__io_encode(tp_profile(b), level, &buf, size, err, sizeof(err));
    ck_assert_msg(rc == 0, "encode: %s", err);
    return buf;
}

static void assert_same(const gpuprof__io_profile *a,
                        const gpuprof__io_profile *b)
{
    ck_assert_uint_eq(a->pid, b->pid);
    ck_assert_int_eq(a->rank, b->rank);
    ck_assert_uint_eq(a->flags, b->flags);
    ck_assert_uint_eq(a->generation, b->generation);
    ck_assert_uint_eq(a->start_ns, b->start_ns);
    ck_assert_uint_eq(a->end_ns, b->end_ns);
    ck_assert_uint_eq(a->start_realtime_ns, b->start_realtime_ns);
    ck_assert_str_eq(gpuprof__io_str(a, a->host), gpuprof__io_str(b, b->host));
    ck_assert_str_eq(gpuprof__io_str(a, a->cmdline),
                     gpuprof__io_str(b, b->cmdline));
    ck_assert_uint_eq(a->strings_size, b->strings_size);
    ck_assert_int_eq(memcmp(a->strings, b->strings, a->strings_size), 0);
    ck_assert_uint_eq(a->metric_count, b->metric_count);
    ck_assert_int_eq(
        memcmp(a->metrics, b->metrics, a->metric_count * sizeof(*a->metrics)),
        0);
    ck_assert_uint_eq(a->thread_count, b->thread_count);
    ck_assert_int_eq(
        memcmp(a->threads, b->threads, a->thread_count * sizeof(*a->threads)),
        0);
    ck_assert_uint_eq(a->node_count, b->node_count);
    for (uint32_t i = 0; i < a->node_count; i++) {
        const gpuprof__io_node *x = &a->nodes[i], *y = &b->nodes[i];
        ck_assert_uint_eq(x->parent, y->parent);
        ck_assert_uint_eq(x->kind, y->kind);
        ck_assert_uint_eq(x->flags, y->flags);
        ck_assert_uint_eq(x->value_count, y->value_count);
        ck_assert_uint_eq(x->key_a, y->key_a);
        ck_assert_uint_eq(x->key_b, y->key_b);
        ck_assert_uint_eq(x->first_value, y->first_value);
    }
    ck_assert_uint_eq(a->value_count, b->value_count);
    for (uint64_t i = 0; i < a->value_count; i++) {
        ck_assert_uint_eq(a->values[i].metric, b->values[i].metric);
        ck_assert_uint_eq(a->values[i].bits, b->values[i].bits);
    }
    ck_assert_uint_eq(a->counter_count, b->counter_count);
    for (uint32_t i = 0; i < a->counter_count; i++) {
        ck_assert_uint_eq(a->counters[i].name, b->counters[i].name);
        ck_assert_uint_eq(a->counters[i].value, b->counters[i].value);
    }
    ck_assert_uint_eq(a->devattr_count, b->devattr_count);
    if (a->devattr_count)
        ck_assert_int_eq(memcmp(a->devattrs, b->devattrs,
                                a->devattr_count * sizeof(*a->devattrs)),
                         0);
}

START_TEST(crc_vectors)
{
    ck_assert_uint_eq(gpuprof__io_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(gpuprof__io_crc32c(0, "", 0), 0);
    /* Incremental equals one shot, across the 8-byte stride. */
    const char *s = "The quick brown fox jumps over the lazy dog";
    uint32_t one = gpuprof__io_crc32c(0, s, strlen(s));
    ck_assert_uint_eq(gpuprof__io_crc32c(gpuprof__io_crc32c(0, s, 13), s + 13,
                                         strlen(s) - 13),
                      one);
    ck_assert_uint_eq(one, 0x22620404u);
    ck_assert_uint_eq(gpuprof__io_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    /* The hardware path (where there is one) equals the software one at
     * every length and alignment, continued or not. */
    static unsigned char buf[1100];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof(buf); n += 1 + n / 7)
            ck_assert_uint_eq(gpuprof__io_crc32c(0x1234u, buf + off, n),
                              gpuprof__io_crc32c_sw(0x1234u, buf + off, n));
    /* Combining: the CRC of A || B from those of A and B, at every split. */
    uint32_t whole = gpuprof__io_crc32c(0, buf, sizeof(buf));
    for (size_t cut = 0; cut <= sizeof(buf); cut += 1 + cut / 5)
        ck_assert_uint_eq(
            gpuprof__io_crc32c_combine(gpuprof__io_crc32c(0, buf, cut),
                                       gpuprof__io_crc32c(0, buf + cut,
                                                          sizeof(buf) - cut),
                                       sizeof(buf) - cut),
            whole);
}
END_TEST

START_TEST(strtab_dedupe)
{
    gpuprof__io_strtab *t = gpuprof__io_strtab_new();
    ck_assert_uint_eq(gpuprof__io_strtab_add(t, ""), 0);
    uint32_t a = gpuprof__io_strtab_add(t, "alpha");
    uint32_t b = gpuprof__io_strtab_add(t, "beta");
    ck_assert_uint_eq(a, 1);
    ck_assert_uint_eq(b, 7);
    ck_assert_uint_eq(gpuprof__io_strtab_add(t, "alpha"), a);
    char name[32];
    for (int i = 0; i < 5000; i++) { /* forces rehashing and buffer growth */
        snprintf(name, sizeof(name), "name-%d", i);
        uint32_t off = gpuprof__io_strtab_add(t, name);
        ck_assert_uint_eq(gpuprof__io_strtab_add(t, name), off);
    }
    uint64_t size;
    const char *d = gpuprof__io_strtab_data(t, &size);
    ck_assert_str_eq(d + b, "beta");
    ck_assert_int_eq(d[0], 0);
    ck_assert_int_eq(d[size - 1], 0);
    gpuprof__io_strtab_free(t);
}
END_TEST

static void round_trip(int level)
{
    tp_builder *b = sample();
    size_t size;
    uint8_t *buf = encode(b, level, &size);
    gpuprof__io_profile *p;
    char err[256];
    ck_assert_msg(gpuprof__io_decode(buf, size, &p, err, sizeof(err)) == 0,
                  "%s", err);
    assert_same(tp_profile(b), p);
    double d;
    memcpy(&d, &p->values[p->nodes[3].first_value + 3].bits, sizeof(d));
    ck_assert(d == 0.125);
    /* Encoding what was read gives the same bytes. */
    uint8_t *again;
    size_t again_size;
    ck_assert_int_eq(
        gpuprof__io_encode(p, level, &again, &again_size, err, sizeof(err)), 0);
    ck_assert_uint_eq(again_size, size);
    ck_assert_int_eq(memcmp(again, buf, size), 0);
    free(again);
    free(buf);
    gpuprof__io_profile_free(p);
    tp_free(b);
}

START_TEST(round_trip_raw)
{
    round_trip(0);
}
END_TEST
START_TEST(round_trip_zstd)
{
    round_trip(3);
}
END_TEST

/* A section zstd shrinks more than the reader's ratio limit (a 3 MiB name
 * of one letter) is stored raw, so the file still reads. */
START_TEST(round_trip_extreme_ratio)
{
    tp_builder *b = sample();
    size_t n = 3u << 20;
    char *name = malloc(n + 1);
    memset(name, 'a', n);
    name[n] = '\0';
    tp_thread(b, name, 0);
    free(name);
    size_t size;
    uint8_t *buf = encode(b, 3, &size);
    ck_assert_uint_gt(size, n);
    gpuprof__io_profile *p;
    char err[256];
    ck_assert_msg(gpuprof__io_decode(buf, size, &p, err, sizeof(err)) == 0,
                  "%s", err);
    assert_same(tp_profile(b), p);
    gpuprof__io_profile_free(p);
    free(buf);
    tp_free(b);
}
END_TEST

static void expect_invalid(tp_builder *b, const char *what)
{
    uint8_t *buf = NULL;
    size_t size;
    char err[256] = "";
    ck_assert_int_eq(
        gpuprof__io_encode(tp_profile(b), 3, &buf, &size, err, sizeof(err)),
        GPUPROF_IO_ERR_INVALID);
    ck_assert_ptr_null(buf);
    ck_assert_msg(strstr(err, what), "message '%s' lacks '%s'", err, what);
}

START_TEST(encode_refuses_inconsistent)
{
    tp_builder *b = sample();
    gpuprof__io_profile *p = (gpuprof__io_profile *)tp_profile(b);
    p->nodes[2].parent = 2; /* its own parent */
    expect_invalid(b, "parent");
    p->nodes[2].parent = 1;
    p->values[0].metric = 99;
    expect_invalid(b, "metric");
    p->values[0].metric = 0;
    p->values[1].bits = 0;
    expect_invalid(b, "zero");
    p->values[1].bits = 5;
    p->threads[0].name = (uint32_t)p->strings_size;
    expect_invalid(b, "name");
    p->threads[0].name = 0;
    p->threads[1].first_node++;
    expect_invalid(b, "contiguous");
    p->threads[1].first_node--;
    p->nodes[1].kind = GPUPROF_IO_NODE_FRAME; /* no module table */
    expect_invalid(b, "module");
    tp_free(b);
}
END_TEST

START_TEST(atomic_file)
{
    char dir[256], path[512], err[256];
    snprintf(dir, sizeof(dir), "%s/io.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/p.gpuprof", dir);
    tp_builder *b = sample();
    ck_assert_int_eq(tp_write(b, path, 3), 0);
    ck_assert_int_eq(tp_write(b, path, 3), 0); /* replaces */
    gpuprof__io_profile *p;
    ck_assert_msg(gpuprof__io_read_file(path, &p, err, sizeof(err)) == 0, "%s",
                  err);
    assert_same(tp_profile(b), p);
    gpuprof__io_profile_free(p);
    /* Only the file itself: no temporaries left behind. */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s' | wc -l)\" = 1", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/missing/p.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 3), GPUPROF_IO_ERR_IO);
    ck_assert_int_eq(gpuprof__io_write_atomic(path, (const uint8_t *)"x", 1,
                                              err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    ck_assert_msg(strstr(err, "No such file"), "%s", err);
    ck_assert_int_eq(gpuprof__io_read_file(path, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "No such file"));
    ck_assert_int_eq(gpuprof__io_read_file(dir, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    tp_free(b);
}
END_TEST

static void damage(int level)
{
    tp_builder *b = sample();
    size_t size;
    uint8_t *buf = encode(b, level, &size);
    char err[256];
    gpuprof__io_profile *p;
    for (size_t i = 0; i < size; i++) {
        static const uint8_t masks[] = {0xFF, 0x01, 0x80};
        for (size_t k = 0; k < sizeof(masks); k++) {
            uint8_t *copy = malloc(size); /* exact size: ASan sees overreads */
            memcpy(copy, buf, size);
            copy[i] ^= masks[k];
            p = NULL;
            int rc = gpuprof__io_decode(copy, size, &p, err, sizeof(err));
            ck_assert_msg(rc != 0, "byte %zu ^ 0x%02x accepted", i, masks[k]);
            ck_assert_ptr_null(p);
            ck_assert_msg(err[0] != '\0', "no message for byte %zu", i);
            free(copy);
        }
    }
    for (size_t len = 0; len < size; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        p = NULL;
        ck_assert_msg(gpuprof__io_decode(copy, len, &p, err, sizeof(err)) != 0,
                      "truncation to %zu bytes accepted", len);
        free(copy);
    }
    /* One more byte is refused too. */
    uint8_t *longer = calloc(1, size + 1);
    memcpy(longer, buf, size);
    ck_assert_int_ne(gpuprof__io_decode(longer, size + 1, &p, err, sizeof(err)),
                     0);
    ck_assert_ptr_nonnull(strstr(err, "trailing"));
    free(longer);
    free(buf);
    tp_free(b);
}

START_TEST(damage_raw)
{
    damage(0);
}
END_TEST
START_TEST(damage_zstd)
{
    damage(3);
}
END_TEST

/* Re-checksums a raw-level file after a test edits its content. */
static void rechecksum(uint8_t *buf)
{
    uint32_t n = get32(buf + 24);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = buf + HDR_SIZE + i * ENTRY_SIZE;
        put32(e + 32, gpuprof__io_crc32c(0, buf + get64(e + 8), get64(e + 16)));
    }
    put32(buf + 40, gpuprof__io_crc32c(0, buf + HDR_SIZE, n * ENTRY_SIZE));
    put32(buf + HDR_CRC_AT, gpuprof__io_crc32c(0, buf, HDR_CRC_AT));
}

static uint8_t *section(uint8_t *buf, uint32_t type)
{
    for (uint32_t i = 0; i < get32(buf + 24); i++) {
        uint8_t *e = buf + HDR_SIZE + i * ENTRY_SIZE;
        if (get32(e) == type)
            return buf + get64(e + 8);
    }
    ck_abort_msg("no section %u", type);
    return NULL;
}

START_TEST(valid_checksums_bad_content)
{
    tp_builder *b = sample();
    size_t size;
    uint8_t *buf = encode(b, 0, &size);
    char err[256];
    gpuprof__io_profile *p = NULL;
    struct {
        uint32_t sec, at;
        uint8_t value;
        const char *msg;
        int rc;
    } cases[] = {
        {SEC_NODES, 2 * NODE_SIZE + 0, 7, "parent", GPUPROF_IO_ERR_FORMAT},
        {SEC_NODES, 1 * NODE_SIZE + 4, 9, "kind", GPUPROF_IO_ERR_FORMAT},
        {SEC_NODES, 0 * NODE_SIZE + 4, 1, "root", GPUPROF_IO_ERR_FORMAT},
        {SEC_NODES, 1 * NODE_SIZE + 6, 200, "cannot hold",
         GPUPROF_IO_ERR_FORMAT},
        {SEC_METRICS, 8, 7, "metric", GPUPROF_IO_ERR_FORMAT},
        {SEC_STRINGS, 0, 'x', "string table", GPUPROF_IO_ERR_FORMAT},
        {SEC_THREADS, 16, 1, "thread", GPUPROF_IO_ERR_FORMAT},
        {SEC_VALUES, 0, 0x7F, "metric index 127 out of range",
         GPUPROF_IO_ERR_FORMAT},
        {SEC_VALUES, 1, 0x80, "section VALUES", GPUPROF_IO_ERR_FORMAT},
        {SEC_NODES, 1 * NODE_SIZE + 11, 0x40, "name offset",
         GPUPROF_IO_ERR_FORMAT},
        {SEC_NODES, 1 * NODE_SIZE + 4, GPUPROF_IO_NODE_FRAME, "module",
         GPUPROF_IO_ERR_FORMAT},
        {SEC_THREADS, 20, 0, "thread",
         GPUPROF_IO_ERR_FORMAT}, /* node_count 0 */
        {SEC_META, 3, 0x10, "identity", GPUPROF_IO_ERR_FORMAT},
        {SEC_COUNTERS, 4, 1, "reserved", GPUPROF_IO_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t *copy = malloc(size);
        memcpy(copy, buf, size);
        section(copy, cases[i].sec)[cases[i].at] = cases[i].value;
        rechecksum(copy);
        int rc = gpuprof__io_decode(copy, size, &p, err, sizeof(err));
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d (%s)", i, rc, err);
        ck_assert_msg(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                      err, cases[i].msg);
        free(copy);
    }
    /* An overlong varint: the first value (visits 1, bytes 00 01) written
     * as 00 81 00 -- the same number, two bytes -- is refused. */
    uint8_t *copy = malloc(size);
    memcpy(copy, buf, size);
    uint8_t *v = section(copy, SEC_VALUES);
    ck_assert_uint_eq(v[0], 0);
    ck_assert_uint_eq(v[1], 1);
    v[1] = 0x81, v[2] = 0x00;
    rechecksum(copy);
    ck_assert_int_eq(gpuprof__io_decode(copy, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "section VALUES: value 0: bad value varint");
    free(copy);
    /* A newer major version is refused as such. */
    put16(buf + 8, GPUPROF_IO_VERSION_MAJOR + 1);
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_VERSION);
    char want[32];
    snprintf(want, sizeof(want), "version 2.%d", GPUPROF_IO_VERSION_MINOR);
    ck_assert_ptr_nonnull(strstr(err, want));
    free(buf);
    tp_free(b);
}
END_TEST

/* A copy of the level-0 file `buf` with one more section (type, bytes)
 * appended and every checksum redone: what a later minor version writes. */
static uint8_t *with_section(const uint8_t *buf, size_t size, uint32_t type,
                             const void *data, uint32_t len, size_t *out_size)
{
    uint32_t n = get32(buf + 24);
    size_t table_end = HDR_SIZE + (size_t)n * ENTRY_SIZE;
    *out_size = size + ENTRY_SIZE + len;
    uint8_t *b = calloc(1, *out_size);
    memcpy(b, buf, table_end);
    memcpy(b + table_end + ENTRY_SIZE, buf + table_end, size - table_end);
    memcpy(b + size + ENTRY_SIZE, data, len);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = b + HDR_SIZE + i * ENTRY_SIZE;
        put64(e + 8, get64(e + 8) + ENTRY_SIZE);
    }
    uint8_t *e = b + table_end;
    put32(e, type);
    put64(e + 8, size + ENTRY_SIZE);
    put64(e + 16, len);
    put64(e + 24, len);
    put32(b + 24, n + 1);
    put64(b + 16, *out_size);
    rechecksum(b);
    return b;
}

START_TEST(version_policy)
{
    tp_builder *b = sample();
    size_t size, big_size;
    uint8_t *buf = encode(b, 0, &size);
    char err[256];
    gpuprof__io_profile *p = NULL;
    /* A later minor version: accepted, its unknown section skipped. */
    put16(buf + 10, GPUPROF_IO_VERSION_MINOR + 1);
    rechecksum(buf);
    uint8_t *big = with_section(buf, size, 99, "future", 6, &big_size);
    ck_assert_msg(gpuprof__io_decode(big, big_size, &p, err, sizeof(err)) == 0,
                  "%s", err);
    assert_same(tp_profile(b), p);
    gpuprof__io_profile_free(p);
    free(big);
    /* A known section twice is refused. */
    big = with_section(buf, size, SEC_COUNTERS, "", 0, &big_size);
    ck_assert_int_eq(gpuprof__io_decode(big, big_size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "twice"));
    free(big);
    /* Without its checksums redone, the added section is damage. */
    big = with_section(buf, size, 99, "future", 6, &big_size);
    big[big_size - 1] ^= 1;
    ck_assert_int_eq(gpuprof__io_decode(big, big_size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "section ?: checksum mismatch");
    free(big);
    free(buf);
    tp_free(b);
}
END_TEST

/* Format 1.2: metric descriptors (odd sum with its count metric, max, no
 * inclusive) round-trip through section METRIC_EXT; a profile without such
 * metrics has no such section (8 sections, as in 1.1) and reads with flags
 * 0; a metric this reader cannot interpret is damage in a file of its own
 * minor version, and a version it lacks -- naming both versions and the
 * metric -- in a newer one. */
START_TEST(metric_descriptors)
{
    tp_builder *b = sample();
    size_t size;
    char err[256];
    gpuprof__io_profile *p = NULL;
    uint8_t *buf = encode(b, 0, &size);
    ck_assert_uint_eq(get32(buf + 24), SEC_REQUIRED);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)), 0);
    for (uint32_t i = 0; i < p->metric_count; i++)
        ck_assert(p->metrics[i].flags == 0 && p->metrics[i].count_name == 0);
    ck_assert_uint_eq(p->format_minor, GPUPROF_IO_VERSION_MINOR);
    gpuprof__io_profile_free(p);
    free(buf);

    uint32_t regs =
        tp_metric(b, "x.regs", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    uint32_t peak =
        tp_metric(b, "x.peak", GPUPROF_IO_UNIT_BYTES, GPUPROF_IO_KIND_GPU);
    tp_metric_ext(b, regs, GPUPROF_IO_SUM, GPUPROF_IO_METRIC_ODD, "gpu.count");
    tp_metric_ext(b, peak, GPUPROF_IO_MAX, GPUPROF_IO_METRIC_NO_INCLUSIVE,
                  NULL);
    buf = encode(b, 1, &size);
    ck_assert_uint_eq(get32(buf + 24), SEC_METRIC_EXT);
    ck_assert_msg(gpuprof__io_decode(buf, size, &p, err, sizeof(err)) == 0,
                  "%s", err);
    assert_same(tp_profile(b), p);
    ck_assert_uint_eq(p->metrics[regs].flags, GPUPROF_IO_METRIC_ODD);
    ck_assert_str_eq(gpuprof__io_str(p, p->metrics[regs].count_name),
                     "gpu.count");
    ck_assert_uint_eq(p->metrics[peak].combine, GPUPROF_IO_MAX);
    ck_assert_uint_eq(p->metrics[peak].flags, GPUPROF_IO_METRIC_NO_INCLUSIVE);
    ck_assert_uint_eq(p->metrics[peak].count_name, 0);
    gpuprof__io_profile_free(p);
    free(buf);

    /* An unknown flag bit: damage at this minor, a newer version above. */
    buf = encode(b, 0, &size);
    uint8_t *x = section(buf, SEC_METRIC_EXT);
    ck_assert_uint_eq(get32(x + METRIC_EXT_SIZE), peak);
    put32(x + METRIC_EXT_SIZE + 4, 0x10);
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "metric 5: field out of range");
    put16(buf + 10, GPUPROF_IO_VERSION_MINOR + 1);
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_VERSION);
    char want[128];
    snprintf(want, sizeof(want),
             "format 1.%d is newer than this reader's "
             "1.%d: metric 'x.peak'",
             GPUPROF_IO_VERSION_MINOR + 1, GPUPROF_IO_VERSION_MINOR);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);
    /* An odd sum without its count metric is damage. */
    put16(buf + 10, GPUPROF_IO_VERSION_MINOR);
    put32(x + METRIC_EXT_SIZE + 4, 0);
    put32(x + 8, 0);
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "needs its count metric"));
    free(buf);
    tp_free(b);
}
END_TEST

/* Format 1.3: devices' attributes round-trip through section DEVICES
 * (numbers and strings); with it, METRIC_EXT is written too (empty here:
 * sections come in type order); a value type this reader does not know is
 * damage at its own minor and a version it lacks in a newer one; a string
 * value out of the table is damage. */
START_TEST(device_attributes)
{
    tp_builder *b = sample();
    tp_device_attr(b, "cuda", 0, "name", "NVIDIA H100 80GB HBM3", 0);
    tp_device_attr(b, "cuda", 0, "sm_count", NULL, 132);
    tp_device_attr(b, "opencl", 3, "shared_bytes_per_block", NULL, 65536);
    size_t size;
    char err[256];
    gpuprof__io_profile *p = NULL;
    for (int level = 0; level <= 1; level++) {
        uint8_t *buf = encode(b, level, &size);
        ck_assert_uint_eq(get32(buf + 24), SEC_DEVICES);
        ck_assert_msg(gpuprof__io_decode(buf, size, &p, err, sizeof(err)) ==
                          0,
                      "%s", err);
        assert_same(tp_profile(b), p);
        ck_assert_uint_eq(p->devattr_count, 3);
        ck_assert_str_eq(gpuprof__io_str(p, p->devattrs[0].api), "cuda");
        ck_assert_uint_eq(p->devattrs[0].type, GPUPROF_IO_ATTR_STR);
        ck_assert_str_eq(gpuprof__io_str(p, (uint32_t)p->devattrs[0].value),
                         "NVIDIA H100 80GB HBM3");
        ck_assert_str_eq(gpuprof__io_str(p, p->devattrs[1].key), "sm_count");
        ck_assert_uint_eq(p->devattrs[1].value, 132);
        ck_assert_uint_eq(p->devattrs[2].device, 3);
        ck_assert_uint_eq(p->devattrs[2].value, 65536);
        for (uint32_t m = 0; m < p->metric_count; m++)
            ck_assert_uint_eq(p->metrics[m].flags, 0);
        gpuprof__io_profile_free(p);
        free(buf);
    }
    uint8_t *buf = encode(b, 0, &size);
    uint8_t *d = section(buf, SEC_DEVICES);
    put32(d + DEVICE_SIZE + 12, 7); /* an unknown value type */
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "device attribute 1: type 7 unknown");
    put16(buf + 10, GPUPROF_IO_VERSION_MINOR + 1);
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_VERSION);
    ck_assert_ptr_nonnull(strstr(err, "device attribute 'sm_count'"));
    put16(buf + 10, GPUPROF_IO_VERSION_MINOR);
    put32(d + DEVICE_SIZE + 12, GPUPROF_IO_ATTR_U64);
    put32(d + 12, GPUPROF_IO_ATTR_STR);
    put64(d + 16, UINT64_C(1) << 40); /* a string far outside the table */
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "device attribute 0: string out of range");
    free(buf);
    tp_free(b);
}
END_TEST

/* A zstd section whose table entry claims another raw size, checksums
 * redone: the frame's own content size disagrees and wins. */
START_TEST(zstd_size_disagrees)
{
    tp_builder *b = sample();
    size_t size;
    uint8_t *buf = encode(b, 3, &size);
    char err[256];
    gpuprof__io_profile *p = NULL;
    int found = 0;
    for (uint32_t i = 0; i < get32(buf + 24); i++) {
        uint8_t *e = buf + HDR_SIZE + i * ENTRY_SIZE;
        if (get32(e + 4) != 1)
            continue;
        found = 1;
        put64(e + 24, get64(e + 24) + NODE_SIZE * 12); /* still a multiple */
        rechecksum(buf);
        ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)),
                         GPUPROF_IO_ERR_FORMAT);
        ck_assert_msg(strstr(err, "size header disagrees"), "%s", err);
        put64(e + 24, get64(e + 24) - NODE_SIZE * 12);
    }
    ck_assert_msg(found, "level 3 compressed no section");
    rechecksum(buf);
    ck_assert_int_eq(gpuprof__io_decode(buf, size, &p, err, sizeof(err)), 0);
    gpuprof__io_profile_free(p);
    free(buf);
    tp_free(b);
}
END_TEST

/* A write that fails at its last step (rename over a directory) leaves the
 * directory as it was: no temporary, the old file intact. */
START_TEST(atomic_failure)
{
    char dir[256], path[512], cmd[700], err[256];
    snprintf(dir, sizeof(dir), "%s/io.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sub", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/sub/keep", dir);
    ck_assert_int_eq(gpuprof__io_write_atomic(path, (const uint8_t *)"old", 3,
                                              err, sizeof(err)),
                     0);
    snprintf(path, sizeof(path), "%s/sub", dir);
    ck_assert_int_eq(gpuprof__io_write_atomic(path, (const uint8_t *)"new", 3,
                                              err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    ck_assert_msg(strstr(err, "rename failed: "), "%s", err);
    snprintf(
        cmd, sizeof(cmd),
        "test \"$(ls -A '%s')\" = sub && test \"$(cat '%s/sub/keep')\" = old",
        dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    /* Names that cannot be a file. */
    ck_assert_int_eq(
        gpuprof__io_write_atomic("", (const uint8_t *)"x", 1, err, sizeof(err)),
        GPUPROF_IO_ERR_IO);
    snprintf(path, sizeof(path), "%s/", dir);
    ck_assert_int_eq(gpuprof__io_write_atomic(path, (const uint8_t *)"x", 1,
                                              err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    char *longname = malloc(5000);
    memset(longname, 'a', 4999);
    longname[4999] = '\0';
    ck_assert_int_eq(gpuprof__io_write_atomic(longname, (const uint8_t *)"x", 1,
                                              err, sizeof(err)),
                     GPUPROF_IO_ERR_IO);
    ck_assert_msg(strstr(err, "too long"), "%s", err);
    free(longname);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(not_a_profile)
{
    char err[256];
    gpuprof__io_profile *p;
    const char text[] = "this is not a gpuprof profile, but it is long enough "
                        "to have a header of 64 bytes";
    ck_assert_int_eq(gpuprof__io_decode((const uint8_t *)text, sizeof(text), &p,
                                        err, sizeof(err)),
                     GPUPROF_IO_ERR_FORMAT);
    ck_assert_str_eq(err, "not a gpuprof profile (bad magic)");
    ck_assert_int_eq(
        gpuprof__io_decode((const uint8_t *)text, 10, &p, err, sizeof(err)),
        GPUPROF_IO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "truncated"));
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"crc", crc_vectors, 120},
        {"strtab", strtab_dedupe, 120},
        {"round_trip_raw", round_trip_raw, 120},
        {"round_trip_zstd", round_trip_zstd, 120},
        {"round_trip_ratio", round_trip_extreme_ratio, 120},
        {"encode_refuses", encode_refuses_inconsistent, 120},
        {"atomic_file", atomic_file, 120},
        {"damage_raw", damage_raw, 120},
        {"damage_zstd", damage_zstd, 120},
        {"bad_content", valid_checksums_bad_content, 120},
        {"version_policy", version_policy, 120},
        {"metric_descriptors", metric_descriptors, 120},
        {"device_attributes", device_attributes, 120},
        {"zstd_size_disagrees", zstd_size_disagrees, 120},
        {"atomic_failure", atomic_failure, 120},
        {"not_a_profile", not_a_profile, 120},
    };
    return RUN_SUITE("io", cases);
}
