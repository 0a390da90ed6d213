/*
 * encode.c - in-memory profile -> bytes of a profile file.
 *
 * The writer lays out the sections of doc/FORMATS.md in their fixed order,
 * compresses each with zstd (kept raw when that is not smaller), and fills
 * the checksums last. It refuses a profile the reader would reject
 * (gpuprof__io_check), so a file we write is always readable.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "io/io.h"
#include "io/layout.h"

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} buf;

static uint8_t *reserve(buf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

/* Allocates room for n bytes up front, so large sections are not copied by
 * repeated doubling. A bound larger than needed costs address space only
 * (the pages never touched are never faulted in). On failure the buffer
 * simply grows as it goes. */
static void presize(buf *b, uint64_t n)
{
    if (b->cap || n == 0 || n > SIZE_MAX / 2)
        return;
    b->p = malloc((size_t)n);
    b->cap = b->p ? (size_t)n : 0;
}

static void put_varint(buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7F);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    uint8_t *p = reserve(b, n);
    if (p)
        memcpy(p, tmp, n);
}

static void sec_meta(buf *b, const gpuprof__io_profile *p)
{
    uint8_t *m = reserve(b, META_SIZE);
    if (!m)
        return;
    put32(m, p->host);
    put32(m + 4, p->exe);
    put32(m + 8, p->cmdline);
    put32(m + 12, p->pid);
    put32(m + 16, (uint32_t)p->rank);
    put32(m + 20, p->flags);
    put64(m + 24, p->generation);
    put64(m + 32, p->start_ns);
    put64(m + 40, p->end_ns);
    put64(m + 48, p->start_realtime_ns);
}

static void sec_tables(buf *s, const gpuprof__io_profile *p)
{
    uint8_t *r;
    for (uint32_t i = 0;
         i < p->metric_count && (r = reserve(&s[0], METRIC_SIZE)); i++) {
        const gpuprof__io_metric *m = &p->metrics[i];
        put32(r, m->name);
        put32(r + 4, m->description);
        r[8] = m->type, r[9] = m->combine, r[10] = m->unit, r[11] = m->kind;
    }
    for (uint32_t i = 0;
         i < p->module_count && (r = reserve(&s[1], MODULE_SIZE)); i++) {
        put32(r, p->modules[i].path);
        put32(r + 4, p->modules[i].flags);
        put64(r + 8, p->modules[i].base);
        put64(r + 16, p->modules[i].size);
    }
    for (uint32_t i = 0;
         i < p->thread_count && (r = reserve(&s[2], THREAD_SIZE)); i++) {
        const gpuprof__io_thread *t = &p->threads[i];
        put64(r, t->tid);
        put32(r + 8, t->name);
        put32(r + 12, t->flags);
        put32(r + 16, t->first_node);
        put32(r + 20, t->node_count);
        put64(r + 24, t->start_ns);
        put64(r + 32, t->end_ns);
    }
    for (uint32_t i = 0;
         i < p->counter_count && (r = reserve(&s[3], COUNTER_SIZE)); i++) {
        put32(r, p->counters[i].name);
        put32(r + 4, 0);
        put64(r + 8, p->counters[i].value);
    }
}

/* METRIC_EXT: a record for each metric with flags or a count metric. */
static void sec_metric_ext(buf *b, const gpuprof__io_profile *p)
{
    uint8_t *r;
    for (uint32_t i = 0; i < p->metric_count; i++) {
        const gpuprof__io_metric *m = &p->metrics[i];
        if (!m->flags && !m->count_name)
            continue;
        if (!(r = reserve(b, METRIC_EXT_SIZE)))
            return;
        put32(r, i);
        put32(r + 4, m->flags);
        put32(r + 8, m->count_name);
    }
}

/* DEVICES (format 1.3): one record per device attribute. */
static void sec_devices(buf *b, const gpuprof__io_profile *p)
{
    uint8_t *r;
    for (uint32_t i = 0;
         i < p->devattr_count && (r = reserve(b, DEVICE_SIZE)); i++) {
        const gpuprof__io_device_attr *d = &p->devattrs[i];
        put32(r, d->api);
        put32(r + 4, d->device);
        put32(r + 8, d->key);
        put32(r + 12, d->type);
        put64(r + 16, d->value);
    }
}

static void sec_nodes(buf *nodes, buf *values, const gpuprof__io_profile *p)
{
    uint8_t *r;
    presize(nodes, (uint64_t)p->node_count * NODE_SIZE);
    /* at most 5 bytes of metric index and 10 of value each */
    presize(values, p->value_count <= MAX_RAW ? p->value_count * 15 : 0);
    for (uint32_t i = 0; i < p->node_count && (r = reserve(nodes, NODE_SIZE));
         i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        put32(r, n->parent);
        r[4] = n->kind;
        r[5] = n->flags;
        put16(r + 6, n->value_count);
        put32(r + 8, n->key_a);
        put64(r + 12, n->key_b);
    }
    for (uint64_t i = 0; i < p->value_count; i++) {
        const gpuprof__io_value *v = &p->values[i];
        put_varint(values, v->metric);
        if (p->metrics[v->metric].type == GPUPROF_IO_F64) {
            if ((r = reserve(values, 8)))
                put64(r, v->bits);
        } else {
            put_varint(values, v->bits);
        }
    }
}

/* Appends section `raw` (type t) to out, compressed when that is smaller,
 * and fills its table entry. */
static int add_section(buf *out, size_t entry_at, uint32_t t, const buf *raw,
                       int level)
{
    size_t start = out->len, stored = raw->len;
    uint32_t enc = ENC_RAW;
    if (level > 0 && raw->len > 64) {
        size_t bound = ZSTD_compressBound(raw->len);
        uint8_t *dst = reserve(out, bound);
        if (!dst)
            return GPUPROF_IO_ERR_NOMEM;
        size_t n = ZSTD_compress(dst, bound, raw->p, raw->len, level);
        out->len = start;
        /* The reader refuses larger ratios (layout.h); such a section,
         * unlikely as it is, is stored raw. */
        if (!ZSTD_isError(n) && n < raw->len &&
            raw->len <= (uint64_t)n * MAX_RATIO + RATIO_SLACK) {
            out->len = start + n;
            stored = n;
            enc = ENC_ZSTD;
        }
    }
    if (enc == ENC_RAW) {
        uint8_t *dst = reserve(out, raw->len);
        if (!dst)
            return GPUPROF_IO_ERR_NOMEM;
        if (raw->len)
            memcpy(dst, raw->p, raw->len);
    }
    uint8_t *e = out->p + entry_at;
    put32(e, t);
    put32(e + 4, enc);
    put64(e + 8, start);
    put64(e + 16, stored);
    put64(e + 24, raw->len);
    put32(e + 32, gpuprof__io_crc32c(0, out->p + start, stored));
    put32(e + 36, 0);
    return 0;
}

/* The sections 1..8, METRIC_EXT when it has records and DEVICES when it
 * has (then METRIC_EXT too, empty or not: sections come in type order). A
 * profile without either is the same bytes as in format 1.1 but for the
 * minor version. */
static int assemble(buf *out, buf *raw, int level)
{
    uint32_t nsec = raw[SEC_DEVICES - 1].len      ? SEC_DEVICES
                    : raw[SEC_METRIC_EXT - 1].len ? SEC_METRIC_EXT
                                                  : SEC_REQUIRED;
    uint64_t bound = HDR_SIZE + nsec * ENTRY_SIZE;
    for (uint32_t i = 0; i < nsec; i++)
        bound += level > 0 ? ZSTD_compressBound(raw[i].len) : raw[i].len;
    presize(out, bound);
    if (!reserve(out, HDR_SIZE + nsec * ENTRY_SIZE))
        return GPUPROF_IO_ERR_NOMEM;
    memset(out->p, 0, out->len);
    for (uint32_t t = 1; t <= nsec; t++) {
        int rc = add_section(out, HDR_SIZE + (t - 1) * ENTRY_SIZE, t,
                             &raw[t - 1], level);
        if (rc)
            return rc;
    }
    uint8_t *h = out->p;
    memcpy(h, GPUPROF_IO_MAGIC, 8);
    put16(h + 8, GPUPROF_IO_VERSION_MAJOR);
    put16(h + 10, GPUPROF_IO_VERSION_MINOR);
    put32(h + 12, HDR_SIZE);
    put64(h + 16, out->len);
    put32(h + 24, nsec);
    put32(h + 28, 0);
    put64(h + 32, HDR_SIZE);
    put32(h + 40, gpuprof__io_crc32c(0, h + HDR_SIZE, nsec * ENTRY_SIZE));
    put32(h + HDR_CRC_AT, gpuprof__io_crc32c(0, h, HDR_CRC_AT));
    return 0;
}

int gpuprof__io_encode(const gpuprof__io_profile *p, int level, uint8_t **out,
                       size_t *out_size, char *err, size_t errsize)
{
    *out = NULL;
    *out_size = 0;
    int rc = gpuprof__io_check(p, err, errsize);
    if (rc)
        return GPUPROF_IO_ERR_INVALID;
    buf raw[SEC_KNOWN] = {{0}}, res = {0};
    sec_meta(&raw[SEC_META - 1], p);
    uint8_t *s = reserve(&raw[SEC_STRINGS - 1], p->strings_size);
    if (s)
        memcpy(s, p->strings, p->strings_size);
    buf tabs[4] = {{0}};
    sec_tables(tabs, p);
    raw[SEC_METRICS - 1] = tabs[0];
    raw[SEC_MODULES - 1] = tabs[1];
    raw[SEC_THREADS - 1] = tabs[2];
    raw[SEC_COUNTERS - 1] = tabs[3];
    sec_metric_ext(&raw[SEC_METRIC_EXT - 1], p);
    sec_devices(&raw[SEC_DEVICES - 1], p);
    sec_nodes(&raw[SEC_NODES - 1], &raw[SEC_VALUES - 1], p);
    bool oom = false, big = false;
    for (int i = 0; i < SEC_KNOWN; i++) {
        oom |= raw[i].oom;
        big |= raw[i].len > MAX_RAW; /* the reader's limit per section */
    }
    rc = oom   ? GPUPROF_IO_ERR_NOMEM
         : big ? GPUPROF_IO_ERR_INVALID
               : assemble(&res, raw, level);
    for (int i = 0; i < SEC_KNOWN; i++)
        free(raw[i].p);
    if (rc) {
        free(res.p);
        snprintf(err, errsize,
                 rc == GPUPROF_IO_ERR_INVALID
                     ? "profile too large: a section exceeds 4 GiB"
                     : "out of memory encoding the profile");
        return rc;
    }
    *out = res.p;
    *out_size = res.len;
    return 0;
}
