/*
 * decode.c - bytes of a profile file -> a validated in-memory profile.
 *
 * Order of trust: size, magic and header checksum first; then the section
 * table (its checksum, contiguous sections ending exactly at the end of the
 * file, sane sizes); then each section's checksum; only then decompression
 * and parsing, which check every count against the bytes present; last,
 * gpuprof__io_check validates the content. No byte of the input is read
 * before the check that keeps the read in bounds, and no allocation is
 * larger than a limit derived from the input's size.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "io/io.h"
#include "io/layout.h"

typedef struct sec {
    const uint8_t *stored;
    uint64_t stored_size, raw_size;
    uint32_t enc;
    uint8_t *raw; /* owned when decompressed */
} sec;

static int fail(char *err, size_t es, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t es, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && es)
        vsnprintf(err, es, fmt, ap);
    va_end(ap);
    return rc;
}

static const char *sec_name(uint32_t t)
{
    static const char *const n[] = {
        "?",       "META",  "STRINGS", "METRICS",  "MODULES",
        "THREADS", "NODES", "VALUES",  "COUNTERS", "METRIC_EXT",
        "DEVICES"};
    return t <= SEC_KNOWN ? n[t] : "?";
}

static int read_header(const uint8_t *b, size_t size, uint32_t *nsec, char *err,
                       size_t es)
{
    if (size < HDR_SIZE)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "truncated: %zu bytes, a header needs %u", size, HDR_SIZE);
    if (memcmp(b, GPUPROF_IO_MAGIC, 8) != 0)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "not a gpuprof profile (bad magic)");
    if (get32(b + HDR_CRC_AT) != gpuprof__io_crc32c(0, b, HDR_CRC_AT))
        return fail(err, es, GPUPROF_IO_ERR_FORMAT, "header checksum mismatch");
    if (get16(b + 8) != GPUPROF_IO_VERSION_MAJOR)
        return fail(err, es, GPUPROF_IO_ERR_VERSION,
                    "unsupported format version %u.%u (this reader reads %u.x)",
                    get16(b + 8), get16(b + 10), GPUPROF_IO_VERSION_MAJOR);
    uint64_t fsize = get64(b + 16);
    if (fsize != size)
        return fail(
            err, es, GPUPROF_IO_ERR_FORMAT,
            fsize > size
                ? "truncated: header says %llu bytes, file has %zu"
                : "header says %llu bytes, file has %zu (trailing bytes)",
            (unsigned long long)fsize, size);
    *nsec = get32(b + 24);
    for (unsigned i = 44; i < HDR_CRC_AT; i++)
        if (b[i])
            return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                        "header: reserved bytes set");
    if (get32(b + 12) != HDR_SIZE || get64(b + 32) != HDR_SIZE ||
        get32(b + 28) || *nsec < SEC_REQUIRED || *nsec > 64 ||
        (uint64_t)HDR_SIZE + (uint64_t)*nsec * ENTRY_SIZE > size)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "header: bad section table");
    if (get32(b + 40) !=
        gpuprof__io_crc32c(0, b + HDR_SIZE, *nsec * ENTRY_SIZE))
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "section table checksum mismatch");
    return 0;
}

static int read_entry(const uint8_t *b, size_t size, const uint8_t *e,
                      uint64_t *expect, sec *secs, char *err, size_t es)
{
    uint32_t type = get32(e), enc = get32(e + 4);
    uint64_t off = get64(e + 8), stored = get64(e + 16), raw = get64(e + 24);
    if (off != *expect || stored > size - off || get32(e + 36) != 0 ||
        enc > ENC_ZSTD || raw > MAX_RAW || (enc == ENC_RAW && raw != stored) ||
        (enc == ENC_ZSTD && raw > stored * MAX_RATIO + RATIO_SLACK))
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "section %s: bad table entry", sec_name(type));
    if (get32(e + 32) != gpuprof__io_crc32c(0, b + off, stored))
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "section %s: checksum mismatch", sec_name(type));
    *expect = off + stored;
    if (type == 0 || type > SEC_KNOWN)
        return 0; /* a section of a later minor version: skipped */
    sec *s = &secs[type - 1];
    if (s->stored)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT, "section %s appears twice",
                    sec_name(type));
    *s = (sec){b + off, stored, raw, enc, NULL};
    return 0;
}

static int inflate(sec *s, uint32_t type, char *err, size_t es)
{
    if (s->enc == ENC_RAW)
        return 0;
    unsigned long long fcs =
        ZSTD_getFrameContentSize(s->stored, s->stored_size);
    if (fcs != s->raw_size)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "section %s: compressed size header disagrees",
                    sec_name(type));
    s->raw = malloc(s->raw_size ? s->raw_size : 1);
    if (!s->raw)
        return fail(err, es, GPUPROF_IO_ERR_NOMEM, "out of memory");
    size_t n = ZSTD_decompress(s->raw, s->raw_size, s->stored, s->stored_size);
    if (ZSTD_isError(n) || n != s->raw_size)
        return fail(err, es, GPUPROF_IO_ERR_FORMAT,
                    "section %s: cannot decompress: %s", sec_name(type),
                    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
    return 0;
}

static const uint8_t *raw_of(const sec *s)
{
    return s->raw ? s->raw : s->stored;
}

#define BAD(...) fail(err, es, GPUPROF_IO_ERR_FORMAT, __VA_ARGS__)

/* Allocates the records of section `type` (rec bytes each in the file, elem
 * bytes in memory) unless *rc already holds an error; sets *rc on failure. */
static void *records(const sec *secs, uint32_t type, size_t rec, size_t elem,
                     uint32_t *count, int *rc, char *err, size_t es)
{
    const sec *s = &secs[type - 1];
    if (*rc)
        return NULL;
    if (s->raw_size % rec || s->raw_size / rec >= UINT32_MAX) {
        *rc = BAD(
            "section %s: %llu bytes is not a whole number of %zu-byte records",
            sec_name(type), (unsigned long long)s->raw_size, rec);
        return NULL;
    }
    *count = (uint32_t)(s->raw_size / rec);
    void *p = calloc(*count ? *count : 1, elem);
    if (!p)
        *rc = fail(err, es, GPUPROF_IO_ERR_NOMEM, "out of memory");
    return p;
}

#define REC(type, i, size) (raw_of(&s[(type)-1]) + (size_t)(i) * (size))

/* Section METRIC_EXT (format 1.2; absent before): 12-byte records, u32
 * metric index (ascending, each once), u32 flags, u32 string offset of the
 * count metric. Its ranges are checked with the metrics (check.c). */
static int parse_metric_ext(gpuprof__io_profile *p, const sec *x, char *err,
                            size_t es)
{
    if (!x->stored && !x->raw)
        return 0;
    if (x->raw_size % METRIC_EXT_SIZE)
        return BAD("section METRIC_EXT: %llu bytes is not a whole number of "
                   "%u-byte records",
                   (unsigned long long)x->raw_size, METRIC_EXT_SIZE);
    const uint8_t *r = raw_of(x);
    uint64_t n = x->raw_size / METRIC_EXT_SIZE;
    for (uint64_t i = 0; i < n; i++, r += METRIC_EXT_SIZE) {
        uint32_t m = get32(r);
        if (m >= p->metric_count || (i && m <= get32(r - METRIC_EXT_SIZE)))
            return BAD("section METRIC_EXT: record %llu: metric %u out of "
                       "range or out of order",
                       (unsigned long long)i, m);
        p->metrics[m].flags = get32(r + 4);
        p->metrics[m].count_name = get32(r + 8);
    }
    return 0;
}

static int parse_tables(gpuprof__io_profile *p, const sec *s, char *err,
                        size_t es)
{
    int rc = 0;
    const uint8_t *r;
    p->metrics = records(s, SEC_METRICS, METRIC_SIZE, sizeof(*p->metrics),
                         &p->metric_count, &rc, err, es);
    for (uint32_t i = 0; !rc && i < p->metric_count; i++) {
        r = REC(SEC_METRICS, i, METRIC_SIZE);
        p->metrics[i] = (gpuprof__io_metric){get32(r), get32(r + 4), r[8], r[9],
                                             r[10],    r[11],        0,    0};
    }
    if (!rc && (rc = parse_metric_ext(p, &s[SEC_METRIC_EXT - 1], err, es)))
        return rc;
    p->modules = records(s, SEC_MODULES, MODULE_SIZE, sizeof(*p->modules),
                         &p->module_count, &rc, err, es);
    for (uint32_t i = 0; !rc && i < p->module_count; i++) {
        r = REC(SEC_MODULES, i, MODULE_SIZE);
        p->modules[i] = (gpuprof__io_module){get32(r), get32(r + 4),
                                             get64(r + 8), get64(r + 16)};
    }
    p->threads = records(s, SEC_THREADS, THREAD_SIZE, sizeof(*p->threads),
                         &p->thread_count, &rc, err, es);
    for (uint32_t i = 0; !rc && i < p->thread_count; i++) {
        r = REC(SEC_THREADS, i, THREAD_SIZE);
        p->threads[i] = (gpuprof__io_thread){
            get64(r),      get32(r + 8),  get32(r + 12), get32(r + 16),
            get32(r + 20), get64(r + 24), get64(r + 32)};
    }
    p->counters = records(s, SEC_COUNTERS, COUNTER_SIZE, sizeof(*p->counters),
                          &p->counter_count, &rc, err, es);
    for (uint32_t i = 0; !rc && i < p->counter_count; i++) {
        r = REC(SEC_COUNTERS, i, COUNTER_SIZE);
        if (get32(r + 4) != 0)
            rc = BAD("section COUNTERS: record %u: reserved field set", i);
        p->counters[i] = (gpuprof__io_counter){get32(r), get64(r + 8)};
    }
    /* DEVICES (format 1.3, optional): 24-byte records, checked in check.c */
    if (!rc && s[SEC_DEVICES - 1].stored) {
        p->devattrs = records(s, SEC_DEVICES, DEVICE_SIZE, sizeof(*p->devattrs),
                              &p->devattr_count, &rc, err, es);
        for (uint32_t i = 0; !rc && i < p->devattr_count; i++) {
            r = REC(SEC_DEVICES, i, DEVICE_SIZE);
            p->devattrs[i] = (gpuprof__io_device_attr){
                get32(r), get32(r + 4), get32(r + 8), get32(r + 12),
                get64(r + 16)};
        }
    }
    return rc;
}

static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t c = *(*p)++;
        if (shift == 63 && c > 1)
            return false; /* overflows 64 bits */
        x |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            if (c == 0 && shift > 0)
                return false; /* overlong */
            *v = x;
            return true;
        }
    }
    return false;
}

/* The VALUES stream: p->value_count entries, ending exactly at its end. */
static int parse_values(gpuprof__io_profile *p, const sec *vs, char *err,
                        size_t es)
{
    const uint8_t *c = raw_of(vs), *end = c + vs->raw_size;
    for (uint64_t i = 0; i < p->value_count; i++) {
        uint64_t m, v = 0;
        if (!get_varint(&c, end, &m))
            return BAD("section VALUES: value %llu: bad metric varint",
                       (unsigned long long)i);
        if (m >= p->metric_count)
            return BAD(
                "section VALUES: value %llu: metric index %llu out of range",
                (unsigned long long)i, (unsigned long long)m);
        if (p->metrics[m].type == GPUPROF_IO_F64) {
            if (end - c < 8)
                return BAD("section VALUES: value %llu: f64 cut short",
                           (unsigned long long)i);
            v = get64(c);
            c += 8;
        } else if (!get_varint(&c, end, &v)) {
            return BAD("section VALUES: value %llu: bad value varint",
                       (unsigned long long)i);
        }
        p->values[i] = (gpuprof__io_value){(uint32_t)m, v};
    }
    if (c != end)
        return BAD("section VALUES: %zu bytes after the last value",
                   (size_t)(end - c));
    return 0;
}

static int parse_nodes(gpuprof__io_profile *p, const sec *s, char *err,
                       size_t es)
{
    int rc = 0;
    p->nodes = records(s, SEC_NODES, NODE_SIZE, sizeof(*p->nodes),
                       &p->node_count, &rc, err, es);
    uint64_t total = 0;
    for (uint32_t i = 0; !rc && i < p->node_count; i++) {
        const uint8_t *r = REC(SEC_NODES, i, NODE_SIZE);
        p->nodes[i] = (gpuprof__io_node){
            get32(r),        r[4],         r[5], get16(r + 6), get32(r + 8),
            (uint32_t)total, get64(r + 12)};
        total += p->nodes[i].value_count;
    }
    if (rc)
        return rc;
    /* Each value takes at least two bytes: a bound before allocating. */
    const sec *vs = &s[SEC_VALUES - 1];
    if (total > vs->raw_size / 2 || total >= UINT32_MAX)
        return BAD("section VALUES: %llu bytes cannot hold the %llu values "
                   "NODES counts",
                   (unsigned long long)vs->raw_size, (unsigned long long)total);
    p->value_count = total;
    p->values = calloc(total ? total : 1, sizeof(*p->values));
    if (!p->values)
        return fail(err, es, GPUPROF_IO_ERR_NOMEM, "out of memory");
    return parse_values(p, vs, err, es);
}

static int parse_meta(gpuprof__io_profile *p, const sec *s, char *err,
                      size_t es)
{
    const uint8_t *m = raw_of(&s[SEC_META - 1]);
    const sec *st = &s[SEC_STRINGS - 1];
    if (s[SEC_META - 1].raw_size < META_SIZE) /* longer: a later minor */
        return BAD("section META: %llu bytes, at least %u needed",
                   (unsigned long long)s[SEC_META - 1].raw_size, META_SIZE);
    if (st->raw_size == 0)
        return BAD(
            "section STRINGS: empty (it holds at least the empty string)");
    p->host = get32(m), p->exe = get32(m + 4), p->cmdline = get32(m + 8);
    p->pid = get32(m + 12), p->rank = (int32_t)get32(m + 16),
    p->flags = get32(m + 20);
    p->generation = get64(m + 24), p->start_ns = get64(m + 32);
    p->end_ns = get64(m + 40), p->start_realtime_ns = get64(m + 48);
    p->strings_size = st->raw_size;
    p->strings = malloc(st->raw_size);
    if (!p->strings)
        return fail(err, es, GPUPROF_IO_ERR_NOMEM, "out of memory");
    memcpy(p->strings, raw_of(st), st->raw_size);
    return 0;
}

static int parse(const uint8_t *b, size_t size, uint32_t nsec, sec *secs,
                 gpuprof__io_profile *p, char *err, size_t es)
{
    uint64_t expect = HDR_SIZE + (uint64_t)nsec * ENTRY_SIZE;
    int rc;
    for (uint32_t i = 0; i < nsec; i++)
        if ((rc = read_entry(b, size, b + HDR_SIZE + i * ENTRY_SIZE, &expect,
                             secs, err, es)))
            return rc;
    if (expect != size)
        return BAD("sections end at byte %llu, the file at %zu",
                   (unsigned long long)expect, size);
    for (uint32_t t = 1; t <= SEC_KNOWN; t++) {
        if (!secs[t - 1].stored && t <= SEC_REQUIRED)
            return BAD("section %s missing", sec_name(t));
        if (secs[t - 1].stored && (rc = inflate(&secs[t - 1], t, err, es)))
            return rc;
    }
    p->format_minor = get16(b + 10);
    if ((rc = parse_meta(p, secs, err, es)) ||
        (rc = parse_tables(p, secs, err, es)) ||
        (rc = parse_nodes(p, secs, err, es)))
        return rc;
    return gpuprof__io_check(p, err, es);
}

int gpuprof__io_decode(const uint8_t *b, size_t size, gpuprof__io_profile **out,
                       char *err, size_t es)
{
    *out = NULL;
    uint32_t nsec = 0;
    int rc = read_header(b, size, &nsec, err, es);
    if (rc)
        return rc;
    gpuprof__io_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return fail(err, es, GPUPROF_IO_ERR_NOMEM, "out of memory");
    sec secs[SEC_KNOWN];
    memset(secs, 0, sizeof(secs));
    rc = parse(b, size, nsec, secs, p, err, es);
    for (int i = 0; i < SEC_KNOWN; i++)
        free(secs[i].raw);
    if (rc) {
        gpuprof__io_profile_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void gpuprof__io_profile_free(gpuprof__io_profile *p)
{
    if (!p)
        return;
    free(p->strings);
    free(p->metrics);
    free(p->modules);
    free(p->threads);
    free(p->nodes);
    free(p->values);
    free(p->counters);
    free(p->devattrs);
    free(p);
}
