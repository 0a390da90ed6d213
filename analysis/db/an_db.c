/*
 * an_db.c - reading an analysis database (an_db.h, doc/FORMATS.md): the
 * files are read whole, every header, checksum, count and offset is
 * checked at open (a damaged or mismatched file is refused with its name),
 * so the queries below index without further checks.
 *
 *   value(profile, context, metric)    profile.db: the profile's plane,
 *                                      binary search for the context, then
 *                                      for the metric
 *   values(context, metric)            cct.db: the context's plane, binary
 *                                      search for the metric: one
 *                                      contiguous run of (profile, value)
 *   stat(context, metric, which)       stats.db, likewise
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_db.h"
#include "an_runtime.h"
#include "../base/an_buf.h"
#include "../base/an_internal.h"
#include "../cpath/table.h"

typedef struct dbfile {
    uint8_t *d;
    size_t n;
    uint32_t a, b;  /* the header's counts */
    uint64_t ident; /* the analysis that wrote it */
    unsigned major; /* its format */
} dbfile;

struct gpuprof_an_db {
    dbfile meta, pms, cms, stats, trace; /* trace: n = 0 when none */
    const char *strings;
    uint32_t ssize, nmetrics, nprofiles, ncontexts;
    uint32_t tr_damaged, tr_dropped; /* what the traces could not give */
    uint64_t tr_ignored;
    unsigned cms_value;  /* bytes of a cct.db value (db_cms_value) */
    unsigned metric_rec; /* bytes of a metric record (db_metric_rec) */
    const uint8_t *metrics, *profiles, *contexts;
    const uint8_t *devattrs; /* format 5: device attribute records */
    uint32_t ndevattrs;
    char **names; /* display names of contexts */
    uint8_t *cflags; /* per context: GPUPROF_AN_CONTEXT_* (an_runtime.h) */
    char *dir;
    uint32_t im_i, im_e; /* region.time.incl's ids (measured inclusive
                            already), UINT32_MAX when absent */
    gpuprof__an_table *im; /* its inclusive values as the reader gives them
                              (incl_measured below) */
    gpuprof__an_formula **der; /* derived metrics: ids nmetrics + 2k + v */
    gpuprof__an_table **tab;   /* per derived id k: a table metric (then
                                  der[k] is NULL), else NULL */
    uint32_t nder;
};

/* ---- open and check -------------------------------------------------------- */
static gpuprof_status read_file(const char *dir, const char *name,
                                const char *magic, dbfile *f)
{
    char path[4200], err[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = gpuprof__io_read_whole(path, &f->d, &f->n, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    const uint8_t *h = f->d;
    if (f->n < DB_HEADER || memcmp(h, magic, 8))
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: not an analysis database file", path);
    f->major = db_get16(h + 8);
    if (f->major > DB_MAJOR)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: database format %u is newer than this "
                                "reader's %u: it needs a newer gpuprof",
                                path, f->major, DB_MAJOR);
    if (f->major < DB_MAJOR_OLDEST)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: database version %u, this reader reads "
                                "%u to %u (analyze the measurements again)",
                                path, f->major, DB_MAJOR_OLDEST, DB_MAJOR);
    if (db_get64(h + 16) != f->n - DB_HEADER)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: truncated (%zu bytes of %" PRIu64 ")",
                                path, f->n - DB_HEADER, db_get64(h + 16));
    if (db_get32(h + 12) != gpuprof__io_crc32c(0, f->d + 32, f->n - 32))
        return gpuprof__an_fail(GPUPROF_E_CORRUPT, "%s: checksum mismatch "
                                "(damaged)", path);
    f->a = db_get32(h + 24);
    f->b = db_get32(h + 28);
    f->ident = db_get64(h + 32);
    return GPUPROF_OK;
}

/* A file of the database read after meta.db: written by the same analysis
 * (the identity in its header), with the counts meta.db implies. */
static gpuprof_status same_run(const gpuprof_an_db *db, const char *name,
                               const dbfile *f, uint32_t a, uint32_t b)
{
    if (f->ident != db->meta.ident)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s/%s: written by another analysis than "
                                "meta.db (identity %016" PRIx64 ", meta.db's "
                                "%016" PRIx64 "): files of two databases "
                                "are mixed",
                                db->dir, name, f->ident, db->meta.ident);
    if (f->a != a || f->b != b || f->major != db->meta.major)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s/%s: its counts or format disagree with "
                                "meta.db",
                                db->dir, name);
    return GPUPROF_OK;
}

static gpuprof_status bad(const gpuprof_an_db *db, const char *name,
                          const char *what)
{
    return gpuprof__an_fail(GPUPROF_E_CORRUPT, "%s/%s: %s", db->dir, name,
                            what);
}

#define STR_OK(o) ((o) < db->ssize)

static gpuprof_status check_meta(gpuprof_an_db *db)
{
    const dbfile *f = &db->meta;
    const uint8_t *b = f->d + DB_HEADER;
    size_t n = f->n - DB_HEADER;
    if (n < DB_META_COUNTS)
        return bad(db, "meta.db", "too short");
    db->ssize = db_get32(b);
    db->nmetrics = db_get32(b + 4);
    db->nprofiles = db_get32(b + 8);
    db->ncontexts = db_get32(b + 12);
    db->tr_damaged = db_get32(b + 16);
    db->tr_dropped = db_get32(b + 20);
    db->tr_ignored = db_get64(b + 24);
    db->metric_rec = db_metric_rec(f->major);
    uint64_t need = DB_META_COUNTS + (uint64_t)db->ssize +
                    (uint64_t)db->nmetrics * db->metric_rec +
                    (uint64_t)db->nprofiles * DB_PROFILE_REC +
                    (uint64_t)db->ncontexts * DB_CONTEXT_REC;
    if (f->major >= 5) { /* the devices' attributes */
        if (need + 4 > n)
            return bad(db, "meta.db", "sizes do not add up");
        db->ndevattrs = db_get32(b + need);
        db->devattrs = b + need + 4;
        need += 4 + (uint64_t)db->ndevattrs * DB_DEVICE_REC;
    }
    if (need != n || db->ssize == 0 || db->ncontexts == 0 ||
        db->nmetrics % 2 || f->a != db->ncontexts || f->b != db->nprofiles)
        return bad(db, "meta.db", "sizes do not add up");
    db->strings = (const char *)b + DB_META_COUNTS;
    if (db->strings[0] || db->strings[db->ssize - 1])
        return bad(db, "meta.db", "string table not terminated");
    db->metrics = b + DB_META_COUNTS + db->ssize;
    db->profiles = db->metrics + (size_t)db->nmetrics * db->metric_rec;
    db->contexts = db->profiles + (size_t)db->nprofiles * DB_PROFILE_REC;
    for (uint32_t m = 0; m < db->nmetrics; m++) {
        const uint8_t *r = db->metrics + (size_t)m * db->metric_rec;
        if (!STR_OK(db_get32(r)) || !STR_OK(db_get32(r + 4)) ||
            r[8] > GPUPROF_IO_UNIT_BYTES || r[11] != m % 2)
            return bad(db, "meta.db", "bad metric record");
        if (f->major < 4)
            continue;
        uint32_t flags = db_get32(r + 12), cm = db_get32(r + 16);
        if ((flags & ~(uint32_t)(DB_METRIC_ODD | DB_METRIC_NO_INCLUSIVE)) ||
            (cm != UINT32_MAX && (cm >= db->nmetrics || cm % 2 != m % 2 ||
                                  !(flags & DB_METRIC_ODD))))
            return bad(db, "meta.db", "bad metric record");
    }
    for (uint32_t p = 0; p < db->nprofiles; p++) {
        const uint8_t *r = db->profiles + (size_t)p * DB_PROFILE_REC;
        if (!STR_OK(db_get32(r)) || !STR_OK(db_get32(r + 4)) ||
            !STR_OK(db_get32(r + 8)))
            return bad(db, "meta.db", "bad profile record");
    }
    for (uint32_t i = 0; i < db->ndevattrs; i++) {
        const uint8_t *r = db->devattrs + (size_t)i * DB_DEVICE_REC;
        uint32_t p = db_get32(r), type = db_get32(r + 16);
        if ((p >= db->nprofiles && p != UINT32_MAX) ||
            !STR_OK(db_get32(r + 4)) || !STR_OK(db_get32(r + 12)) ||
            type > GPUPROF_IO_ATTR_STR || db_get32(r + 20) ||
            (type == GPUPROF_IO_ATTR_STR && !STR_OK(db_get64(r + 24))))
            return bad(db, "meta.db", "bad device record");
    }
    for (uint32_t c = 0; c < db->ncontexts; c++) {
        const uint8_t *r = db->contexts + (size_t)c * DB_CONTEXT_REC;
        uint32_t parent = db_get32(r);
        if ((c == 0) != (parent == UINT32_MAX) || (c && parent >= c) ||
            r[4] >= (f->major < 4 ? DB_KIND_COUNT_3 : DB_KIND_COUNT) ||
            (c == 0) != (r[4] == 0) || !STR_OK(db_get32(r + 8)) ||
            !STR_OK(db_get32(r + 12)))
            return bad(db, "meta.db", "bad context record");
    }
    return GPUPROF_OK;
}

/* A table of `count` planes after the header. A plane with values (PMS,
 * CMS): `pairs` (key, start) pairs, keys strictly ascending below
 * `key_max`, the first start 0 and each run non-empty, then `vals` values
 * whose key (`vkey_bytes` wide at offset 0) is below `vkey_max` and
 * strictly ascending within a run (binary searches rely on it). A plane
 * without values (stats): records with keys strictly ascending. */
typedef struct plane_fmt {
    const char *name;
    uint32_t pair_size, value_size, key_bytes, vkey_bytes;
} plane_fmt;

static uint32_t key_at(const uint8_t *q, uint32_t bytes)
{
    return bytes == 2 ? db_get16(q) : db_get32(q);
}

static gpuprof_status check_planes(const gpuprof_an_db *db, const dbfile *f,
                                   const plane_fmt *fmt, uint32_t count,
                                   uint32_t key_max, uint32_t vkey_max)
{
    if ((uint64_t)f->n < DB_HEADER + (uint64_t)count * DB_PLANE_REF)
        return bad(db, fmt->name, "plane table truncated");
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *ref = f->d + DB_HEADER + (size_t)i * DB_PLANE_REF;
        uint64_t off = db_get64(ref);
        uint32_t pairs = db_get32(ref + 8), vals = db_get32(ref + 12);
        uint64_t size = (uint64_t)pairs * fmt->pair_size +
                        (uint64_t)vals * fmt->value_size;
        if (off < DB_HEADER || off > f->n || size > f->n - off ||
            (fmt->value_size ? pairs > vals : vals != 0))
            return bad(db, fmt->name, "plane out of bounds");
        const uint8_t *p = f->d + off, *v = p + (size_t)pairs * fmt->pair_size;
        for (uint32_t k = 0; k < pairs; k++) {
            const uint8_t *q = p + (size_t)k * fmt->pair_size;
            uint32_t key = key_at(q, fmt->key_bytes);
            if (key >= key_max ||
                (k && key <= key_at(q - fmt->pair_size, fmt->key_bytes)))
                return bad(db, fmt->name, "bad index pair");
            if (!fmt->value_size)
                continue;
            uint32_t start = db_get32(q + 4);
            uint32_t end = k + 1 < pairs ? db_get32(q + fmt->pair_size + 4)
                                         : vals;
            if ((k == 0 && start != 0) || start >= end || end > vals)
                return bad(db, fmt->name, "bad index pair");
            for (uint32_t j = start; j < end; j++) {
                const uint8_t *e = v + (size_t)j * fmt->value_size;
                uint32_t vk = key_at(e, fmt->vkey_bytes);
                if (vk >= vkey_max ||
                    (j > start && vk <= key_at(e - fmt->value_size,
                                               fmt->vkey_bytes)))
                    return bad(db, fmt->name, "bad value index");
            }
        }
    }
    return GPUPROF_OK;
}

static const char *dstr(const gpuprof_an_db *db, uint32_t o)
{
    return db->strings + o;
}

/* Context c as the runtime's frames see it (an_runtime.h): its level in
 * a frame and, for a frame, what it is (`fn`: a CPU frame's function from
 * the symbol tables, NULL when none). */
static gpuprof__an_rt_node rt_node(const gpuprof_an_db *db, uint32_t c,
                                   const char *fn)
{
    const uint8_t *r = db->contexts + (size_t)c * DB_CONTEXT_REC;
    const char *name = dstr(db, db_get32(r + 8));
    gpuprof__an_rt_node n = {db_get32(r), GPUPROF__AN_RT_OTHER, 0, 0};
    if (r[4] == GPUPROF_IO_NODE_FRAME) {
        n.level = GPUPROF__AN_RT_FRAME;
        n.what = (uint8_t)gpuprof__an_rt_classify(name, fn);
    } else if (r[4] == DB_KIND_FUNCTION) {
        n.level = GPUPROF__AN_RT_FRAME;
        n.what = (uint8_t)gpuprof__an_rt_classify(dstr(db, db_get32(r + 12)),
                                                  name);
    } else if (r[4] == DB_KIND_INLINE || r[4] == DB_KIND_LINE) {
        n.level = GPUPROF__AN_RT_INNER;
    }
    return n;
}

/* Whether context c has an exclusive value of a measured metric. */
static bool own_value(const gpuprof_an_db *db, uint32_t c);

/* The runtime's frames among the contexts (an_runtime.h): a candidate
 * (a frame of a class the runtime's frames have, or a part of one) is
 * asked for values of its own; the flags go to db->cflags. */
static gpuprof_status mark_runtime(gpuprof_an_db *db, gpuprof__an_rt_node *rt)
{
    uint8_t *cls = malloc(db->ncontexts);
    if (!(db->cflags = malloc(db->ncontexts)) || !cls) {
        free(cls);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t c = 0; c < db->ncontexts; c++) {
        uint32_t p = rt[c].parent;
        cls[c] = rt[c].level == GPUPROF__AN_RT_FRAME ? rt[c].what
                 : rt[c].level == GPUPROF__AN_RT_INNER && p < c ? cls[p]
                                                             : 0;
        rt[c].own = cls[c] != GPUPROF__AN_RT_NO &&
                    cls[c] != GPUPROF__AN_RT_PYTHON && own_value(db, c);
    }
    free(cls);
    if (gpuprof__an_rt_mark(rt, db->ncontexts, db->cflags))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

static gpuprof_status make_names(gpuprof_an_db *db)
{
    db->names = calloc(db->ncontexts, sizeof(*db->names));
    gpuprof__an_rt_node *rt = malloc(db->ncontexts * sizeof(*rt));
    if (!db->names || !rt) {
        free(rt);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    gpuprof__an_symtab *syms = NULL;
    for (uint32_t c = 0; c < db->ncontexts; c++) {
        const uint8_t *r = db->contexts + (size_t)c * DB_CONTEXT_REC;
        const char *name = dstr(db, db_get32(r + 8));
        char *readable = NULL; /* a demangled C++ name */
        const char *aux = dstr(db, db_get32(r + 12));
        uint64_t key = db_get64(r + 16), delta;
        char buf[4400];
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        rt[c] = rt_node(db, c, NULL);
        switch (r[4]) {
        case GPUPROF_IO_NODE_ROOT:
            snprintf(buf, sizeof(buf), "<program root>");
            break;
        case GPUPROF_IO_NODE_REGION:
            snprintf(buf, sizeof(buf), "%s", name);
            break;
        case GPUPROF_IO_NODE_FRAME: {
            if (gpuprof__an_pyframe(name, key, buf, sizeof(buf)))
                break;
            const char *fn = gpuprof__an_symbolize(&syms, name, key, &delta);
            rt[c] = rt_node(db, c, fn);
            if (fn && (readable = gpuprof__an_demangle(fn)))
                fn = readable;
            if (fn)
                snprintf(buf, sizeof(buf), "%s+0x%" PRIx64 " (%s)", fn, delta,
                         base);
            else
                snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, key);
            break;
        }
        case GPUPROF_IO_NODE_GPU_OP:
            snprintf(buf, sizeof(buf), "<%s>",
                     gpuprof__an_op_name((uint32_t)key));
            break;
        case DB_KIND_FUNCTION: {
            const char *mb = strrchr(aux, '/');
            if ((readable = gpuprof__an_demangle(name)))
                name = readable;
            snprintf(buf, sizeof(buf), "%s (%s)", *name ? name : "<unknown>",
                     mb ? mb + 1 : aux);
            break;
        }
        case DB_KIND_INLINE: {
            const char *mb = strrchr(aux, '/');
            if ((readable = gpuprof__an_demangle(name)))
                name = readable;
            snprintf(buf, sizeof(buf), "[inlined] %s (%s)",
                     *name ? name : "<unknown>", mb ? mb + 1 : aux);
            break;
        }
        case DB_KIND_GPU_FUNCTION: {
            const char *mb = strrchr(aux, '/');
            if ((readable = gpuprof__an_demangle(name)))
                name = readable;
            snprintf(buf, sizeof(buf), "%s%s (%s)", *name ? name : "<unknown>",
                     key & 1 ? " [recursive]" : "", mb ? mb + 1 : aux);
            break;
        }
        case DB_KIND_LOOP:
            snprintf(buf, sizeof(buf), "loop at %s:%" PRIu64,
                     *base ? base : "??", key);
            break;
        case DB_KIND_LINE:
            if (key)
                snprintf(buf, sizeof(buf), "%s:%" PRIu64, *base ? base : "??",
                         key);
            else
                snprintf(buf, sizeof(buf), "%s", *base ? base : "??");
            break;
        case GPUPROF_IO_NODE_KERNEL: /* its binary: context_binary */
            if ((readable = gpuprof__an_demangle(name)))
                name = readable;
            snprintf(buf, sizeof(buf), "kernel %s", name);
            break;
        default:
            snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, key);
        }
        free(readable);
        if (!(db->names[c] = strdup(buf))) {
            gpuprof__an_symtab_free(syms);
            free(rt);
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        }
    }
    gpuprof__an_symtab_free(syms);
    gpuprof_status st = mark_runtime(db, rt);
    free(rt);
    return st;
}

/* trace.db, when there is one: every stream's records within the records
 * area, sorted, contexts and profiles in range. */
static gpuprof_status read_trace(gpuprof_an_db *db)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/trace.db", db->dir);
    if (access(path, F_OK) != 0)
        return GPUPROF_OK;
    gpuprof_status st =
        read_file(db->dir, "trace.db", DB_TRACE_MAGIC, &db->trace);
    if (st != GPUPROF_OK)
        return st;
    const dbfile *f = &db->trace;
    uint64_t body = f->n - DB_HEADER, ns = f->a;
    if ((st = same_run(db, "trace.db", f, f->a, db->nprofiles)) != GPUPROF_OK)
        return st;
    if (ns * DB_TRACE_STREAM > body ||
        (body - ns * DB_TRACE_STREAM) % DB_TRACE_REC)
        return bad(db, "trace.db", "bad stream table");
    uint64_t recs_end = f->n - ns * DB_TRACE_STREAM;
    for (uint64_t i = 0; i < ns; i++) {
        const uint8_t *e = f->d + recs_end + i * DB_TRACE_STREAM;
        uint32_t prof = db_get32(e), proc = db_get32(e + 4);
        uint64_t off = db_get64(e + 32), n = db_get64(e + 40);
        bool two = e[8] == DB_TRACE_MPI || e[8] == DB_TRACE_HOST;
        if (e[8] > DB_TRACE_SAMPLES)
            return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                    "%s/trace.db: stream kind %u is not one "
                                    "this reader knows (written by a newer "
                                    "gpuprof?)", db->dir, e[8]);
        if (proc >= db->nprofiles ||
            (prof != UINT32_MAX && prof >= db->nprofiles) ||
            (e[8] == DB_TRACE_GPU) != (prof == UINT32_MAX) ||
            (two && n % 2) ||
            off < DB_HEADER || (off - DB_HEADER) % DB_TRACE_REC ||
            n > (recs_end - off) / DB_TRACE_REC || off > recs_end)
            return bad(db, "trace.db", "bad stream record");
        uint64_t last_s = 0, last_e = 0;
        for (uint64_t k = 0; two && k < n; k += 2) {
            const uint8_t *r = f->d + off + k * DB_TRACE_REC;
            uint64_t s0 = db_get64(r), e0 = db_get64(r + 8);
            if (e0 < s0 || s0 < last_s)
                return bad(db, "trace.db", e[8] == DB_TRACE_MPI
                                               ? "bad or unsorted MPI record"
                                               : "bad or unsorted host "
                                                 "record");
            last_s = s0;
        }
        for (uint64_t k = 0; !two && k < n; k++) {
            const uint8_t *r = f->d + off + k * DB_TRACE_REC;
            uint64_t s0 = db_get64(r), e0 = db_get64(r + 8);
            uint32_t c = db_get32(r + 24);
            if (e[8] == DB_TRACE_DEPS) { /* notes: by start only */
                if (s0 < last_s)
                    return bad(db, "trace.db", "unsorted dependency note");
                last_s = s0;
                continue;
            }
            if (e0 < s0 || (c != UINT32_MAX && c >= db->ncontexts) ||
                s0 < last_s || (s0 == last_s && k && e0 < last_e))
                return bad(db, "trace.db", "bad or unsorted record");
            last_s = s0;
            last_e = e0;
        }
    }
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_db_trace_ignored(const gpuprof_an_db *db,
                                                uint32_t *damaged_traces,
                                                uint32_t *streams_left_out,
                                                uint64_t *bytes)
{
    if (damaged_traces)
        *damaged_traces = db ? db->tr_damaged : 0;
    if (streams_left_out)
        *streams_left_out = db ? db->tr_dropped : 0;
    if (bytes)
        *bytes = db ? db->tr_ignored : 0;
}

GPUPROF_AN_API uint32_t
gpuprof_an_db_trace_stream_count(const gpuprof_an_db *db)
{
    return db && db->trace.d ? db->trace.a : 0;
}

static const uint8_t *trace_entry(const gpuprof_an_db *db, uint32_t i)
{
    if (!db || !db->trace.d || i >= db->trace.a)
        return NULL;
    return db->trace.d + db->trace.n -
           (uint64_t)(db->trace.a - i) * DB_TRACE_STREAM;
}

const char *gpuprof__an_db_dir(const gpuprof_an_db *db)
{
    return db->dir;
}

const uint8_t *gpuprof__an_db_trace_raw(const gpuprof_an_db *db, uint32_t i,
                                        uint64_t *n)
{
    const uint8_t *e = trace_entry(db, i);
    *n = e ? db_get64(e + 40) : 0;
    return e ? db->trace.d + db_get64(e + 32) : NULL;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_trace_stream(
    const gpuprof_an_db *db, uint32_t i, gpuprof_an_trace_stream *out)
{
    const uint8_t *e = trace_entry(db, i);
    if (!e || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "no trace stream %u", i);
    out->kind = (gpuprof_an_trace_kind)e[8];
    out->profile = db_get32(e);
    out->process = db_get32(e + 4);
    out->device = db_get32(e + 12);
    out->stream = db_get32(e + 16);
    out->realtime_offset_ns = (int64_t)db_get64(e + 24);
    out->records = db_get64(e + 40);
    return GPUPROF_OK;
}

GPUPROF_AN_API uint64_t gpuprof_an_db_trace_records(
    const gpuprof_an_db *db, uint32_t i, uint64_t first,
    gpuprof_an_trace_record *out, uint64_t max)
{
    const uint8_t *e = trace_entry(db, i);
    if (!e || !out)
        return 0;
    uint64_t n = db_get64(e + 40), got = 0;
    const uint8_t *r = db->trace.d + db_get64(e + 32);
    for (uint64_t k = first; k < n && got < max; k++, got++) {
        const uint8_t *q = r + k * DB_TRACE_REC;
        out[got] = (gpuprof_an_trace_record){db_get64(q), db_get64(q + 8),
                                             db_get64(q + 16),
                                             db_get32(q + 24)};
    }
    return got;
}

/* A directory without meta.db: what it is instead (a measurement
 * directory, another directory, nothing at all); st otherwise. */
static gpuprof_status wrong_kind(const char *dir, gpuprof_status st)
{
    char meta[4200];
    struct stat sb;
    snprintf(meta, sizeof(meta), "%s/meta.db", dir);
    if (stat(meta, &sb) == 0)
        return st; /* there, but damaged: its own message stands */
    if (stat(dir, &sb) != 0)
        return gpuprof__an_fail(st, "%s: %s", dir, strerror(errno));
    if (gpuprof__an_dir_kind(dir) == GPUPROF__AN_DIR_MEASUREMENTS)
        return gpuprof__an_fail(st, "%s is a measurement directory, not an "
                                "analysis database: run 'gpuprof analyze -o "
                                "DB %s' first", dir, dir);
    if (S_ISDIR(sb.st_mode))
        return gpuprof__an_fail(st, "%s is not an analysis database (it has "
                                "no meta.db)", dir);
    return st;
}

static gpuprof_status incl_measured(gpuprof_an_db *db);

GPUPROF_AN_API gpuprof_status gpuprof_an_db_open(const char *dir,
                                                 gpuprof_an_db **out)
{
    if (!dir || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = NULL;
    gpuprof_an_db *db = calloc(1, sizeof(*db));
    if (!db || !(db->dir = strdup(dir))) {
        free(db);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    static const plane_fmt pms = {"profile.db", DB_PMS_PAIR, DB_PMS_VALUE, 4,
                                  2};
    plane_fmt cms = {"cct.db", DB_CMS_PAIR, 12, 2, 4}; /* sized below */
    static const plane_fmt sts = {"stats.db", DB_STATS_REC, 0, 2, 0};
    gpuprof_status st = read_file(dir, "meta.db", DB_META_MAGIC, &db->meta);
    if (st != GPUPROF_OK)
        st = wrong_kind(dir, st);
    if (st == GPUPROF_OK)
        st = check_meta(db);
    if (st == GPUPROF_OK)
        st = read_file(dir, "profile.db", DB_PMS_MAGIC, &db->pms);
    if (st == GPUPROF_OK)
        st = same_run(db, "profile.db", &db->pms, db->nprofiles,
                      db->ncontexts);
    if (st == GPUPROF_OK)
        st = check_planes(db, &db->pms, &pms, db->nprofiles, db->ncontexts,
                          db->nmetrics);
    db->cms_value = db_cms_value(db->nprofiles);
    cms.value_size = db->cms_value;
    cms.vkey_bytes = db->cms_value - 8;
    if (st == GPUPROF_OK)
        st = read_file(dir, "cct.db", DB_CMS_MAGIC, &db->cms);
    if (st == GPUPROF_OK)
        st = same_run(db, "cct.db", &db->cms, db->ncontexts, db->nprofiles);
    if (st == GPUPROF_OK)
        st = check_planes(db, &db->cms, &cms, db->ncontexts, db->nmetrics,
                          db->nprofiles);
    if (st == GPUPROF_OK)
        st = read_file(dir, "stats.db", DB_STATS_MAGIC, &db->stats);
    if (st == GPUPROF_OK)
        st = same_run(db, "stats.db", &db->stats, db->ncontexts,
                      db->nmetrics);
    if (st == GPUPROF_OK)
        st = check_planes(db, &db->stats, &sts, db->ncontexts, db->nmetrics,
                          0);
    if (st == GPUPROF_OK)
        st = read_trace(db);
    if (st == GPUPROF_OK)
        st = make_names(db);
    if (st == GPUPROF_OK)
        st = incl_measured(db);
    if (st != GPUPROF_OK) {
        gpuprof_an_db_close(db);
        return st;
    }
    *out = db;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_db_close(gpuprof_an_db *db)
{
    if (!db)
        return;
    for (uint32_t c = 0; db->names && c < db->ncontexts; c++)
        free(db->names[c]);
    free(db->names);
    free(db->cflags);
    gpuprof__an_table_free(db->im);
    free(db->meta.d);
    free(db->pms.d);
    free(db->cms.d);
    free(db->stats.d);
    free(db->trace.d);
    free(db->dir);
    for (uint32_t i = 0; i < db->nder; i++) {
        gpuprof__an_formula_free(db->der[i]);
        gpuprof__an_table_free(db->tab[i]);
    }
    free(db->der);
    free(db->tab);
    free(db);
}

/* ---- identity ------------------------------------------------------------------ */
#define CTX(c) (db->contexts + (size_t)(c) * DB_CONTEXT_REC)
#define MET(m) (db->metrics + (size_t)(m)*db->metric_rec)
#define PRO(p) (db->profiles + (size_t)(p) * DB_PROFILE_REC)

GPUPROF_AN_API uint32_t gpuprof_an_db_context_count(const gpuprof_an_db *db)
{
    return db ? db->ncontexts : 0;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_context_parent(const gpuprof_an_db *db,
                                                     uint32_t c)
{
    return db && c < db->ncontexts ? db_get32(CTX(c)) : UINT32_MAX;
}

GPUPROF_AN_API gpuprof_an_node_kind
gpuprof_an_db_context_kind(const gpuprof_an_db *db, uint32_t c)
{
    return db && c < db->ncontexts ? (gpuprof_an_node_kind)CTX(c)[4]
                                   : GPUPROF_AN_NODE_ROOT;
}

GPUPROF_AN_API const char *gpuprof_an_db_context_name(const gpuprof_an_db *db,
                                                      uint32_t c)
{
    return db && c < db->ncontexts ? db->names[c] : NULL;
}

GPUPROF_AN_API const char *
gpuprof_an_db_context_binary(const gpuprof_an_db *db, uint32_t c)
{
    if (!db || c >= db->ncontexts || CTX(c)[4] != GPUPROF_IO_NODE_KERNEL)
        return NULL;
    const char *aux = dstr(db, db_get32(CTX(c) + 12));
    return *aux ? aux : NULL;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_context_flags(const gpuprof_an_db *db,
                                                    uint32_t c)
{
    return db && c < db->ncontexts ? db->cflags[c] : 0;
}

uint32_t gpuprof__an_db_up(const gpuprof_an_db *db, uint32_t c, uint32_t flags)
{
    uint32_t p = gpuprof_an_db_context_parent(db, c);
    if (flags & GPUPROF_AN_RUNTIME_FRAMES)
        return p;
    while (p != UINT32_MAX && (db->cflags[p] & GPUPROF_AN_CONTEXT_RUNTIME))
        p = db_get32(CTX(p));
    return p;
}

bool gpuprof__an_db_hidden(const gpuprof_an_db *db, uint32_t c, uint32_t flags)
{
    return !(flags & GPUPROF_AN_RUNTIME_FRAMES) && c < db->ncontexts &&
           (db->cflags[c] & GPUPROF_AN_CONTEXT_RUNTIME);
}

const char *gpuprof__an_db_label(const gpuprof_an_db *db, uint32_t c,
                                 uint32_t flags)
{
    if (!(flags & GPUPROF_AN_RUNTIME_FRAMES) && c < db->ncontexts &&
        (db->cflags[c] & GPUPROF_AN_CONTEXT_THREAD_ROOT))
        return "<thread root>";
    return gpuprof_an_db_context_name(db, c);
}

GPUPROF_AN_API uint32_t gpuprof_an_db_metric_count(const gpuprof_an_db *db)
{
    return db ? db->nmetrics + 2 * db->nder : 0;
}

/* The derived metric behind id m (>= nmetrics), or NULL. */
static const gpuprof__an_formula *derived(const gpuprof_an_db *db, uint32_t m)
{
    return db && m >= db->nmetrics && m - db->nmetrics < 2 * db->nder
               ? db->der[(m - db->nmetrics) / 2]
               : NULL;
}

/* The table metric behind id m (>= nmetrics), or NULL. */
static const gpuprof__an_table *table_of(const gpuprof_an_db *db, uint32_t m)
{
    return db && m >= db->nmetrics && m - db->nmetrics < 2 * db->nder
               ? db->tab[(m - db->nmetrics) / 2]
               : NULL;
}

GPUPROF_AN_API const char *gpuprof_an_db_metric_name(const gpuprof_an_db *db,
                                                     uint32_t m)
{
    if (table_of(db, m))
        return gpuprof__an_table_name(table_of(db, m));
    if (derived(db, m))
        return gpuprof__an_formula_name(derived(db, m));
    return db && m < db->nmetrics ? dstr(db, db_get32(MET(m))) : NULL;
}

GPUPROF_AN_API gpuprof_an_variant
gpuprof_an_db_metric_variant(const gpuprof_an_db *db, uint32_t m)
{
    if (derived(db, m) || table_of(db, m))
        return (m - db->nmetrics) % 2 ? GPUPROF_AN_EXCLUSIVE
                                      : GPUPROF_AN_INCLUSIVE;
    return db && m < db->nmetrics && MET(m)[11] ? GPUPROF_AN_EXCLUSIVE
                                                : GPUPROF_AN_INCLUSIVE;
}

GPUPROF_AN_API gpuprof_an_unit gpuprof_an_db_metric_unit(const gpuprof_an_db *db,
                                                         uint32_t m)
{
    if (derived(db, m))
        return gpuprof__an_formula_unit(derived(db, m));
    if (table_of(db, m))
        return gpuprof__an_table_unit(table_of(db, m));
    return db && m < db->nmetrics ? (gpuprof_an_unit)MET(m)[8]
                                  : GPUPROF_AN_UNIT_COUNT;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_metric_flags(const gpuprof_an_db *db,
                                                   uint32_t m)
{
    if (!db || m >= db->nmetrics)
        return 0;
    uint32_t f = db->meta.major >= 4 ? db_get32(MET(m) + 12) : 0;
    return f | (m == db->im_i || m == db->im_e ? GPUPROF_AN_METRIC_NO_EXCLUSIVE
                                               : 0);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_metric_count_metric(
    const gpuprof_an_db *db, uint32_t m, uint32_t *count)
{
    if (!db || !count || m >= gpuprof_an_db_metric_count(db))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "no metric %u", m);
    uint32_t c = gpuprof_an_db_metric_flags(db, m) & DB_METRIC_ODD
                     ? db_get32(MET(m) + 16)
                     : UINT32_MAX;
    if (c == UINT32_MAX)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "metric %s is not an odd sum with a count",
                                gpuprof_an_db_metric_name(db, m));
    *count = c;
    return GPUPROF_OK;
}

GPUPROF_AN_API unsigned gpuprof_an_db_format(const gpuprof_an_db *db)
{
    return db ? db->meta.major : 0;
}

const uint8_t *gpuprof__an_db_devattrs(const gpuprof_an_db *db, uint32_t *n)
{
    *n = db ? db->ndevattrs : 0;
    return db ? db->devattrs : NULL;
}

const char *gpuprof__an_db_str(const gpuprof_an_db *db, uint64_t off)
{
    return db && off < db->ssize ? db->strings + off : "";
}

const char *gpuprof__an_db_context_raw(const gpuprof_an_db *db, uint32_t c)
{
    return db && c < db->ncontexts ? dstr(db, db_get32(CTX(c) + 8)) : NULL;
}

const gpuprof__an_formula *gpuprof__an_db_formula(const gpuprof_an_db *db,
                                                  uint32_t m)
{
    return derived(db, m);
}

int gpuprof__an_db_combine(const gpuprof_an_db *db, uint32_t m)
{
    return db && m < db->nmetrics ? MET(m)[9] : GPUPROF_IO_SUM;
}

uint32_t gpuprof__an_db_mean_of(const gpuprof_an_db *db, uint32_t m)
{
    if (!db || m >= db->nmetrics ||
        !(gpuprof_an_db_metric_flags(db, m) & DB_METRIC_ODD))
        return UINT32_MAX;
    uint32_t c = db_get32(MET(m) + 16);
    return c < db->nmetrics ? c : UINT32_MAX;
}

bool gpuprof__an_db_no_incl(const gpuprof_an_db *db, uint32_t m)
{
    return (gpuprof_an_db_metric_flags(db, m) & DB_METRIC_NO_INCLUSIVE) != 0;
}

bool gpuprof__an_db_no_excl(const gpuprof_an_db *db, uint32_t m)
{
    return (gpuprof_an_db_metric_flags(db, m) &
            GPUPROF_AN_METRIC_NO_EXCLUSIVE) != 0;
}

double gpuprof__an_mean(double value, double count)
{
    return count != 0 ? value / count : value == 0 ? 0 : NAN;
}

int gpuprof__an_db_additive(const gpuprof_an_db *db, uint32_t m)
{
    const gpuprof__an_formula *f = derived(db, m);
    if (f) {
        uint32_t ops[GPUPROF__AN_MAX_OPERANDS];
        uint32_t n = gpuprof__an_formula_operands(f, 0, ops,
                                                  GPUPROF__AN_MAX_OPERANDS);
        int ok = gpuprof__an_formula_additive(f);
        for (uint32_t i = 0; ok && i < n; i++)
            ok = gpuprof__an_db_additive(db, ops[i]);
        return ok;
    }
    if (table_of(db, m))
        return 1;
    return db && m < db->nmetrics && MET(m)[9] == GPUPROF_IO_SUM;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_metric_find(
    const gpuprof_an_db *db, const char *name, gpuprof_an_variant v,
    uint32_t *m)
{
    if (!db || !name || !m)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    for (uint32_t i = (v == GPUPROF_AN_EXCLUSIVE); i < db->nmetrics; i += 2)
        if (!strcmp(dstr(db, db_get32(MET(i))), name)) {
            *m = i;
            return GPUPROF_OK;
        }
    for (uint32_t i = 0; i < db->nder; i++)
        if (!strcmp(db->der[i] ? gpuprof__an_formula_name(db->der[i])
                               : gpuprof__an_table_name(db->tab[i]),
                    name)) {
            *m = db->nmetrics + 2 * i + (v == GPUPROF_AN_EXCLUSIVE);
            return GPUPROF_OK;
        }
    return gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s: no metric named '%s'",
                            db->dir, name);
}

GPUPROF_AN_API uint32_t gpuprof_an_db_profile_count(const gpuprof_an_db *db)
{
    return db ? db->nprofiles : 0;
}

GPUPROF_AN_API const char *gpuprof_an_db_profile_host(const gpuprof_an_db *db,
                                                      uint32_t p)
{
    return db && p < db->nprofiles ? dstr(db, db_get32(PRO(p))) : NULL;
}

GPUPROF_AN_API const char *
gpuprof_an_db_profile_thread_name(const gpuprof_an_db *db, uint32_t p)
{
    return db && p < db->nprofiles ? dstr(db, db_get32(PRO(p) + 4)) : NULL;
}

GPUPROF_AN_API const char *gpuprof_an_db_profile_file(const gpuprof_an_db *db,
                                                      uint32_t p)
{
    return db && p < db->nprofiles ? dstr(db, db_get32(PRO(p) + 8)) : NULL;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_profile_pid(const gpuprof_an_db *db,
                                                  uint32_t p)
{
    return db && p < db->nprofiles ? db_get32(PRO(p) + 12) : 0;
}

GPUPROF_AN_API int32_t gpuprof_an_db_profile_rank(const gpuprof_an_db *db,
                                                  uint32_t p)
{
    return db && p < db->nprofiles ? (int32_t)db_get32(PRO(p) + 16) : -1;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_profile_flags(const gpuprof_an_db *db,
                                                    uint32_t p)
{
    return db && p < db->nprofiles ? db_get32(PRO(p) + 20) : 0;
}

GPUPROF_AN_API uint64_t gpuprof_an_db_profile_tid(const gpuprof_an_db *db,
                                                  uint32_t p)
{
    return db && p < db->nprofiles ? db_get64(PRO(p) + 24) : 0;
}

/* ---- values ---------------------------------------------------------------------- */
static double get_f64(const uint8_t *p)
{
    uint64_t bits = db_get64(p);
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* The plane of entry i: its pairs, its pair and value counts. */
static const uint8_t *plane(const dbfile *f, uint32_t i, uint32_t *pairs,
                            uint32_t *vals)
{
    const uint8_t *ref = f->d + DB_HEADER + (size_t)i * DB_PLANE_REF;
    *pairs = db_get32(ref + 8);
    *vals = db_get32(ref + 12);
    return f->d + db_get64(ref);
}

/* Binary search of `key` among n pairs of `size` bytes whose key is
 * `kbytes` wide at offset 0; the pair's index or -1. */
static int64_t find_pair(const uint8_t *p, uint32_t n, uint32_t size,
                         uint32_t kbytes, uint32_t key)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const uint8_t *q = p + (size_t)mid * size;
        uint32_t k = kbytes == 2 ? db_get16(q) : db_get32(q);
        if (k == key)
            return mid;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

typedef struct at {
    const gpuprof_an_db *db;
    uint32_t p, c;
} at;

static double fetch_value(void *arg, uint32_t m)
{
    const at *a = arg;
    return gpuprof_an_db_value(a->db, a->p, a->c, m);
}

static double fetch_sum(void *arg, uint32_t m)
{
    const at *a = arg;
    return gpuprof_an_db_stat(a->db, a->c, m, GPUPROF_AN_STAT_SUM);
}

/* Profile p's measured value of metric m at context c (its plane pl). */
static double pms_at(const uint8_t *pl, uint32_t pairs, uint32_t vals,
                     uint32_t c, uint32_t m)
{
    int64_t k = find_pair(pl, pairs, DB_PMS_PAIR, 4, c);
    if (k < 0)
        return 0;
    uint32_t start = db_get32(pl + (size_t)k * DB_PMS_PAIR + 4);
    uint32_t end = (uint32_t)k + 1 < pairs
                       ? db_get32(pl + (size_t)(k + 1) * DB_PMS_PAIR + 4)
                       : vals;
    const uint8_t *v = pl + (size_t)pairs * DB_PMS_PAIR;
    int64_t i = find_pair(v + (size_t)start * DB_PMS_VALUE, end - start,
                          DB_PMS_VALUE, 2, m);
    return i < 0 ? 0 : get_f64(v + (size_t)(start + i) * DB_PMS_VALUE + 2);
}

GPUPROF_AN_API double gpuprof_an_db_value(const gpuprof_an_db *db, uint32_t p,
                                          uint32_t c, uint32_t m)
{
    if (table_of(db, m))
        return gpuprof__an_table_value(table_of(db, m),
                                       (m - db->nmetrics) % 2, p, c);
    const gpuprof__an_formula *f = derived(db, m);
    if (f && p < db->nprofiles && c < db->ncontexts) {
        at a = {db, p, c};
        return gpuprof__an_formula_eval(f, (m - db->nmetrics) % 2,
                                        fetch_value, &a);
    }
    if (!db || p >= db->nprofiles || c >= db->ncontexts || m >= db->nmetrics)
        return 0;
    if (m == db->im_i)
        return gpuprof__an_table_value(db->im, 0, p, c);
    uint32_t pairs, vals;
    const uint8_t *pl = plane(&db->pms, p, &pairs, &vals);
    return pms_at(pl, pairs, vals, c, m);
}

/* A derived metric's non-zero values at context c, in profile order: the
 * formula at each profile where an operand has a value. */
static uint32_t derived_values(const gpuprof_an_db *db, uint32_t c,
                               uint32_t m, uint32_t *profiles, double *values,
                               uint32_t max)
{
    const gpuprof__an_formula *f = derived(db, m);
    unsigned v = (m - db->nmetrics) % 2;
    uint32_t ops[GPUPROF__AN_MAX_OPERANDS];
    uint32_t nops = gpuprof__an_formula_operands(f, v, ops,
                                                 GPUPROF__AN_MAX_OPERANDS);
    uint32_t np = db->nprofiles, n = 0;
    uint8_t *has = calloc(np ? np : 1, 1);
    uint32_t *pl = malloc((size_t)(np ? np : 1) * sizeof(*pl));
    if (!has || !pl) {
        free(has);
        free(pl);
        gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        return 0;
    }
    for (uint32_t k = 0; k < nops; k++) {
        uint32_t got = gpuprof_an_db_context_values(db, c, ops[k], pl, NULL,
                                                    np);
        for (uint32_t i = 0; i < got && i < np; i++)
            has[pl[i]] = 1;
    }
    for (uint32_t p = 0; p < np; p++) {
        if (!has[p])
            continue;
        at a = {db, p, c};
        double d = gpuprof__an_formula_eval(f, v, fetch_value, &a);
        if (d == 0)
            continue;
        if (n < max) {
            if (profiles)
                profiles[n] = p;
            if (values)
                values[n] = d;
        }
        n++;
    }
    free(has);
    free(pl);
    return n;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_context_values(
    const gpuprof_an_db *db, uint32_t c, uint32_t m, uint32_t *profiles,
    double *values, uint32_t max)
{
    if (table_of(db, m))
        return gpuprof__an_table_values(table_of(db, m),
                                        (m - db->nmetrics) % 2, c, profiles,
                                        values, max);
    if (derived(db, m) && c < db->ncontexts)
        return derived_values(db, c, m, profiles, values, max);
    if (!db || c >= db->ncontexts || m >= db->nmetrics)
        return 0;
    if (m == db->im_i)
        return gpuprof__an_table_values(db->im, 0, c, profiles, values, max);
    uint32_t pairs, vals;
    const uint8_t *pl = plane(&db->cms, c, &pairs, &vals);
    int64_t k = find_pair(pl, pairs, DB_CMS_PAIR, 2, m);
    if (k < 0)
        return 0;
    uint32_t start = db_get32(pl + (size_t)k * DB_CMS_PAIR + 4);
    uint32_t end = (uint32_t)k + 1 < pairs
                       ? db_get32(pl + (size_t)(k + 1) * DB_CMS_PAIR + 4)
                       : vals;
    const uint8_t *v = pl + (size_t)pairs * DB_CMS_PAIR;
    unsigned w = db->cms_value;
    for (uint32_t i = start; i < end && i - start < max; i++) {
        const uint8_t *q = v + (size_t)i * w;
        if (profiles)
            profiles[i - start] = key_at(q, w - 8);
        if (values)
            values[i - start] = get_f64(q + w - 8);
    }
    return end - start;
}

/* Statistics of a derived metric: SUM is the formula over the operands'
 * sums (a ratio of totals, as views show it); the others are over its
 * non-zero per-profile values, as for a measured metric. */
static double derived_stat(const gpuprof_an_db *db, uint32_t c, uint32_t m,
                           gpuprof_an_stat which)
{
    if (which == GPUPROF_AN_STAT_SUM) {
        at a = {db, 0, c};
        return gpuprof__an_formula_eval(derived(db, m), (m - db->nmetrics) % 2,
                                        fetch_sum, &a);
    }
    uint32_t np = db->nprofiles;
    double *v = malloc((size_t)(np ? np : 1) * sizeof(*v));
    if (!v)
        return 0;
    uint32_t n = derived_values(db, c, m, NULL, v, np);
    double sum = 0, mn = n ? v[0] : 0, mx = mn, var = 0;
    for (uint32_t i = 0; i < n; i++) {
        sum += v[i];
        mn = v[i] < mn ? v[i] : mn;
        mx = v[i] > mx ? v[i] : mx;
    }
    double mean = n ? sum / n : 0;
    for (uint32_t i = 0; i < n; i++)
        var += (v[i] - mean) * (v[i] - mean);
    free(v);
    double sd = n ? sqrt(var / n) : 0;
    switch (which) {
    case GPUPROF_AN_STAT_COUNT:
        return n;
    case GPUPROF_AN_STAT_MIN:
        return mn;
    case GPUPROF_AN_STAT_MEAN:
        return mean;
    case GPUPROF_AN_STAT_MAX:
        return mx;
    case GPUPROF_AN_STAT_STD:
        return sd;
    default:
        return mean != 0 ? sd / mean : 0;
    }
}

GPUPROF_AN_API double gpuprof_an_db_stat(const gpuprof_an_db *db, uint32_t c,
                                         uint32_t m, gpuprof_an_stat which)
{
    if (table_of(db, m) && which <= GPUPROF_AN_STAT_COV)
        return gpuprof__an_table_stat(table_of(db, m), (m - db->nmetrics) % 2,
                                      c, which);
    if (derived(db, m) && c < db->ncontexts && which <= GPUPROF_AN_STAT_COV)
        return derived_stat(db, c, m, which);
    if (!db || c >= db->ncontexts || m >= db->nmetrics ||
        which > GPUPROF_AN_STAT_COV)
        return 0;
    if (m == db->im_i)
        return gpuprof__an_table_stat(db->im, 0, c, which);
    uint32_t pairs, vals;
    const uint8_t *pl = plane(&db->stats, c, &pairs, &vals);
    int64_t k = find_pair(pl, pairs, DB_STATS_REC, 2, m);
    if (k < 0)
        return 0;
    const uint8_t *r = pl + (size_t)k * DB_STATS_REC;
    if (which == GPUPROF_AN_STAT_COUNT)
        return db_get32(r + 4);
    return get_f64(r + 8 + 8 * ((int)which - 1));
}

/* ---- a metric measured inclusive ---------------------------------------
 * region.time.incl is measured inclusive: a region's value already holds
 * its child regions' time. The aggregation sums every metric up the tree,
 * which for this one counts a nested region again inside every enclosing
 * one (10 ms around 6 ms would give 16 ms). The reader replaces those sums
 * with what an inclusive value means: a context's own measured value
 * where it has one, else the sum over its children. It builds them as a
 * table metric (cpath/table.h) whose exclusive cells roll up to exactly
 * that: each measured value at its context, less at the nearest ancestor
 * with a measured value of its own (whose value holds it already). */


static gpuprof_status incl_measured(gpuprof_an_db *db)
{
    db->im_i = db->im_e = UINT32_MAX;
    for (uint32_t m = 0; m + 1 < db->nmetrics; m += 2)
        if (!strcmp(dstr(db, db_get32(MET(m))), "region.time.incl") &&
            MET(m)[10] == GPUPROF_IO_KIND_REGION)
            db->im_i = m, db->im_e = m + 1;
    if (db->im_i == UINT32_MAX)
        return GPUPROF_OK;
    gpuprof__an_cell *cell = NULL;
    uint32_t n = 0, cap = 0;
    for (uint32_t p = 0; p < db->nprofiles; p++) {
        uint32_t pairs, vals;
        const uint8_t *pl = plane(&db->pms, p, &pairs, &vals);
        for (uint32_t k = 0; k < pairs; k++) {
            uint32_t c = db_get32(pl + (size_t)k * DB_PMS_PAIR);
            double v = pms_at(pl, pairs, vals, c, db->im_e), w = 0;
            uint32_t a = c;
            if (v == 0)
                continue;
            while (a != 0 && w == 0) { /* the nearest one measured above */
                a = db_get32(CTX(a));
                w = pms_at(pl, pairs, vals, a, db->im_e);
            }
            if (!GPUPROF_AN_GROW(cell, n + 1, cap)) {
                free(cell);
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            }
            cell[n++] = (gpuprof__an_cell){p, c, v};
            if (w != 0)
                cell[n++] = (gpuprof__an_cell){p, a, -v};
        }
    }
    db->im = gpuprof__an_table_new(db, "region.time.incl", GPUPROF_AN_UNIT_NS,
                                   cell, n);
    free(cell);
    return db->im ? GPUPROF_OK
                  : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

static bool own_value(const gpuprof_an_db *db, uint32_t c)
{
    uint32_t pairs, vals;
    const uint8_t *pl = plane(&db->stats, c, &pairs, &vals);
    for (uint32_t k = 0; k < pairs; k++) {
        const uint8_t *r = pl + (size_t)k * DB_STATS_REC;
        uint32_t m = db_get16(r);
        if (m < db->nmetrics && MET(m)[11] == DB_EXCLUSIVE &&
            get_f64(r + 8) != 0)
            return true;
    }
    return false;
}

/* ---- a context's rows (the exports) ---------------------------------------
 * cct.db holds a context's values as one run of (profile, value) per
 * metric, each sorted by profile: merging the runs gives the profiles with
 * any value in order, each with all its values, reading the context's
 * range once. */
typedef struct rrun {
    uint32_t metric, i, end;
    const uint8_t *v; /* the plane's values */
} rrun;

struct gpuprof__an_rows {
    const gpuprof_an_db *db;
    uint32_t n; /* runs of the current context */
    uint32_t c; /* the current context */
    rrun run[];
};

uint32_t gpuprof__an_db_measured(const gpuprof_an_db *db)
{
    return db->nmetrics;
}

gpuprof__an_rows *gpuprof__an_rows_new(const gpuprof_an_db *db)
{
    gpuprof__an_rows *r =
        calloc(1, sizeof(*r) + (size_t)db->nmetrics * sizeof(rrun));
    if (r)
        r->db = db;
    return r;
}

void gpuprof__an_rows_start(gpuprof__an_rows *r, uint32_t c)
{
    uint32_t pairs, vals;
    const uint8_t *pl = plane(&r->db->cms, c, &pairs, &vals);
    const uint8_t *v = pl + (size_t)pairs * DB_CMS_PAIR;
    r->c = c;
    r->n = pairs; /* at most one per metric: checked at open */
    for (uint32_t k = 0; k < pairs; k++) {
        const uint8_t *q = pl + (size_t)k * DB_CMS_PAIR;
        r->run[k] =
            (rrun){db_get16(q), db_get32(q + 4),
                   k + 1 < pairs ? db_get32(q + DB_CMS_PAIR + 4) : vals, v};
    }
}

bool gpuprof__an_rows_next(gpuprof__an_rows *r, uint32_t *profile,
                           double *values)
{
    unsigned w = r->db->cms_value;
    uint32_t p = UINT32_MAX;
    for (uint32_t k = 0; k < r->n; k++)
        if (r->run[k].i < r->run[k].end) {
            uint32_t q = key_at(r->run[k].v + (size_t)r->run[k].i * w, w - 8);
            p = q < p ? q : p;
        }
    if (p == UINT32_MAX)
        return false;
    memset(values, 0, r->db->nmetrics * sizeof(*values));
    for (uint32_t k = 0; k < r->n; k++) {
        rrun *u = &r->run[k];
        const uint8_t *e = u->v + (size_t)u->i * w;
        if (u->i < u->end && key_at(e, w - 8) == p) {
            values[u->metric] = get_f64(e + w - 8);
            u->i++;
        }
    }
    /* The stored inclusive values of a metric measured inclusive are
     * replaced; they are non-zero where the replacements are. */
    if (r->db->im_i != UINT32_MAX)
        values[r->db->im_i] =
            gpuprof__an_table_value(r->db->im, 0, p, r->c);
    *profile = p;
    return true;
}

void gpuprof__an_rows_free(gpuprof__an_rows *r)
{
    free(r);
}

/* Room for one more derived id. */
static gpuprof_status grow_derived(gpuprof_an_db *db)
{
    gpuprof__an_formula **d = realloc(db->der, (db->nder + 1) * sizeof(*d));
    if (d)
        db->der = d;
    gpuprof__an_table **t =
        d ? realloc(db->tab, (db->nder + 1) * sizeof(*t)) : NULL;
    if (t)
        db->tab = t;
    return t ? GPUPROF_OK : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_derive(gpuprof_an_db *db,
                                                   const char *name,
                                                   const char *formula)
{
    if (!db || !name || !formula)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    if (db->nmetrics + 2 * (uint64_t)db->nder + 2 > UINT16_MAX)
        return gpuprof__an_fail(GPUPROF_E_LIMIT, "too many metrics");
    gpuprof__an_formula *f;
    gpuprof_status st = gpuprof__an_formula_compile(db, name, formula, &f);
    if (st != GPUPROF_OK)
        return st;
    st = grow_derived(db);
    if (st != GPUPROF_OK) {
        gpuprof__an_formula_free(f);
        return st;
    }
    db->der[db->nder] = f;
    db->tab[db->nder++] = NULL;
    return GPUPROF_OK;
}

gpuprof_status gpuprof__an_db_add_table(gpuprof_an_db *db,
                                        gpuprof__an_table *t)
{
    uint32_t m;
    gpuprof_status st = GPUPROF_OK;
    if (db->nmetrics + 2 * (uint64_t)db->nder + 2 > UINT16_MAX)
        st = gpuprof__an_fail(GPUPROF_E_LIMIT, "too many metrics");
    else if (gpuprof_an_db_metric_find(db, gpuprof__an_table_name(t),
                                       GPUPROF_AN_INCLUSIVE, &m) == GPUPROF_OK)
        st = gpuprof__an_fail(GPUPROF_E_INVALID, "%s: a metric named '%s' "
                              "exists", db->dir, gpuprof__an_table_name(t));
    if (st == GPUPROF_OK)
        st = grow_derived(db);
    if (st != GPUPROF_OK) {
        gpuprof__an_table_free(t);
        return st;
    }
    db->der[db->nder] = NULL;
    db->tab[db->nder++] = t;
    return GPUPROF_OK;
}
