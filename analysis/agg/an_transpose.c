/*
 * an_transpose.c - pass 3 of the aggregation (an_agg.h): ranges of
 * contexts whose values fit (a budget's room, and at most RANGE_VALUES
 * values: buffers of a bounded size, reused from range to range), each
 * every profile's entries for it -- from pass 2's rows, or read back from
 * profile.db -- in profile order, sorted by metric, encoded as the
 * contexts' cct.db planes with their statistics (stats.db). On several
 * ranks each does the contexts gpuprof__an_rank_contexts gave it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_pool.h"
#include "../db/an_db.h"
#include "an_agg.h"

typedef struct cms_val {
    uint16_t metric;
    uint32_t profile;
    double v;
} cms_val;

/* Pass 3's work: what it reads, and the round of contexts [lo, hi) with
 * their values from cbase. */
typedef struct tpass {
    const uint64_t *cstart; /* per context: values before it */
    row *rows;              /* kept: pass 2 left them whole */
    uint32_t *cur, *nxt; /* per profile: where a kept row's entries of this
                            range start, at most (the last range's end) */
    uint32_t np, nm, nc;
    int pms_fd;             /* profile.db, to read rows back from */
    const uint8_t *pms_tab; /* its plane table */
    uint32_t lo, hi;
    uint64_t cbase;
    cms_val *cv; /* the round's values, transposed */
    gpuprof__an_big cvb, cmsb, stsb; /* cv, cms, sts: every range's */
    uint32_t *cpairs; /* per context: distinct metrics */
    uint32_t *chunk;  /* context ranges of the parallel fill: [i, i+1) */
    uint32_t nchunks, most_chunks; /* this range's; room for */
    uint64_t *coff, *soff; /* per context: plane offsets */
    uint8_t *cms, *sts;    /* the round's planes, from the bases */
    uint64_t cms_base, sts_base;
    uint8_t *ctab, *stab; /* cct.db's and stats.db's tables */
    _Atomic int nomem, io_errno;
} tpass;

static int by_u16(const void *x, const void *y)
{
    uint16_t a = *(const uint16_t *)x, b = *(const uint16_t *)y;
    return (a > b) - (a < b);
}

/* First entry of a row at or after `from` whose context is >= c: in
 * steps that double from `from` (a range's entries follow the last
 * range's: they are near), then a binary search. */
static uint32_t row_lower(const row *w, uint32_t from, uint32_t c)
{
    if (from >= w->n || w->e[from].ctx >= c)
        return from;
    uint32_t lo = from + 1, step = 1, hi;
    while ((hi = lo + step) < w->n && w->e[hi - 1].ctx < c) {
        lo = hi;
        step *= 2;
    }
    if (hi > w->n)
        hi = w->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->e[mid].ctx < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first pair of the profile.db plane at `off` whose context is >= c,
 * by a binary search of reads. */
static bool plane_lower(const tpass *x, uint64_t off, uint32_t pairs,
                        uint32_t c, uint32_t *at)
{
    uint32_t lo = 0, hi = pairs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint8_t b[4];
        if (!gpuprof__an_pread_all(x->pms_fd, b, 4, off + (uint64_t)mid * 8))
            return false;
        if (db_get32(b) < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return true;
}

/* The first of `pairs` pairs in memory whose context is >= c. */
static uint32_t pairs_lower(const uint8_t *pb, uint32_t pairs, uint32_t c)
{
    uint32_t lo = 0, hi = pairs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (db_get32(pb + (size_t)mid * DB_PMS_PAIR) < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A plane with at most this many bytes of pairs has them read whole: one
 * read rather than a binary search by reads (several ranks read every
 * profile back, a few contexts each time). */
#define SMALL_PAIRS (64u << 10)

enum { READ_OK, READ_NOMEM, READ_IOERR };

typedef struct span {  /* a plane's pairs of the round's contexts */
    uint8_t *all;      /* what was read (freed by the caller) */
    const uint8_t *pb; /* pair a, then up to the one after pair b - 1 */
    uint32_t a, b;
} span;

static int read_pairs(const tpass *x, uint64_t off, uint32_t pairs, span *sp)
{
    if ((uint64_t)pairs * DB_PMS_PAIR <= SMALL_PAIRS) {
        if (!(sp->all = malloc((size_t)pairs * DB_PMS_PAIR + 1)))
            return READ_NOMEM;
        if (!gpuprof__an_pread_all(x->pms_fd, sp->all,
                                   (size_t)pairs * DB_PMS_PAIR, off))
            return READ_IOERR;
        sp->a = pairs_lower(sp->all, pairs, x->lo);
        sp->b = pairs_lower(sp->all, pairs, x->hi);
    } else if (!plane_lower(x, off, pairs, x->lo, &sp->a) ||
               !plane_lower(x, off, pairs, x->hi, &sp->b)) {
        return READ_IOERR;
    }
    if (sp->a == sp->b)
        return READ_OK;
    /* Pairs a..b, and the start of the one after them. */
    uint32_t np = sp->b - sp->a + (sp->b < pairs);
    if (sp->all) {
        sp->pb = sp->all + (size_t)sp->a * DB_PMS_PAIR;
        return READ_OK;
    }
    if (!(sp->all = malloc((size_t)np * DB_PMS_PAIR)))
        return READ_NOMEM;
    sp->pb = sp->all;
    if (!gpuprof__an_pread_all(x->pms_fd, sp->all, (size_t)np * DB_PMS_PAIR,
                               off + (uint64_t)sp->a * DB_PMS_PAIR))
        return READ_IOERR;
    return READ_OK;
}

/* The values of pairs [a, b) into w's entries (*vb: the bytes read). */
static int read_values(const tpass *x, row *w, uint64_t off, uint32_t pairs,
                       uint32_t n, const span *sp, uint8_t **vb)
{
    const uint8_t *pb = sp->pb;
    uint32_t a = sp->a, b = sp->b, np = b - a + (b < pairs);
    uint32_t vs = db_get32(pb + 4);
    uint32_t ve =
        b < pairs ? db_get32(pb + (size_t)(b - a) * DB_PMS_PAIR + 4) : n;
    *vb = malloc((size_t)(ve - vs) * DB_PMS_VALUE + 1);
    w->e = malloc((size_t)(ve - vs) * sizeof(*w->e) + 1);
    if (!*vb || !w->e)
        return READ_NOMEM;
    if (!gpuprof__an_pread_all(x->pms_fd, *vb, (size_t)(ve - vs) * DB_PMS_VALUE,
                               off + (uint64_t)pairs * DB_PMS_PAIR +
                                   (uint64_t)vs * DB_PMS_VALUE))
        return READ_IOERR;
    for (uint32_t k = 0; k < b - a; k++) {
        uint32_t ctx = db_get32(pb + (size_t)k * DB_PMS_PAIR);
        uint32_t from = db_get32(pb + (size_t)k * DB_PMS_PAIR + 4);
        uint32_t to =
            k + 1 < np ? db_get32(pb + (size_t)(k + 1) * DB_PMS_PAIR + 4) : ve;
        for (uint32_t v = from; v < to; v++) {
            const uint8_t *q = *vb + (size_t)(v - vs) * DB_PMS_VALUE;
            uint64_t bits = db_get64(q + 2);
            double d;
            memcpy(&d, &bits, sizeof(d));
            w->e[v - vs] = (entry){ctx, db_get16(q), d};
        }
    }
    w->n = ve - vs;
    w->pairs = b - a;
    return READ_OK;
}

/* Profile p's entries of contexts [lo, hi), read back from profile.db (a
 * task; a failure is recorded in x). */
static void read_rows(void *ctx, uint32_t p)
{
    tpass *x = ctx;
    if (x->rows[p].kept)
        return;
    const uint8_t *ref = x->pms_tab + (size_t)p * DB_PLANE_REF;
    uint64_t off = db_get64(ref);
    uint32_t pairs = db_get32(ref + 8), n = db_get32(ref + 12);
    row *w = &x->rows[p];
    *w = (row){0};
    span sp = {0};
    uint8_t *vb = NULL;
    int rc = read_pairs(x, off, pairs, &sp);
    if (rc == READ_OK && sp.a != sp.b)
        rc = read_values(x, w, off, pairs, n, &sp, &vb);
    if (rc == READ_NOMEM) {
        x->nomem = 1;
        errno = 0;
    }
    if (rc != READ_OK) {
        if (errno)
            x->io_errno = errno; /* any one of them */
        else if (!x->nomem)
            x->io_errno = EIO;
        free(w->e);
        *w = (row){0};
    }
    free(sp.all);
    free(vb);
}

/* Context c's values (in profile order) sorted by metric, stably: a
 * counting sort over the metrics present, so each metric's values stay
 * in profile order. mcount (zero) and ids hold 2 * nm + 1; tmp the
 * context's values. */
static void sort_context(tpass *x, uint32_t c, uint32_t *mcount, uint16_t *ids,
                         cms_val *tmp)
{
    uint64_t n = x->cstart[c + 1] - x->cstart[c];
    cms_val *v = x->cv + (x->cstart[c] - x->cbase);
    uint32_t pairs = 0;
    for (uint64_t i = 0; i < n; i++)
        if (mcount[v[i].metric]++ == 0)
            ids[pairs++] = v[i].metric;
    if (pairs <= 32) {
        for (uint32_t a = 1; a < pairs; a++) /* insertion sort */
            for (uint32_t b = a; b && ids[b - 1] > ids[b]; b--) {
                uint16_t t = ids[b];
                ids[b] = ids[b - 1];
                ids[b - 1] = t;
            }
    } else {
        qsort(ids, pairs, sizeof(*ids), by_u16);
    }
    uint32_t sum = 0;
    for (uint32_t a = 0; a < pairs; a++) {
        uint32_t cnt = mcount[ids[a]];
        mcount[ids[a]] = sum;
        sum += cnt;
    }
    for (uint64_t i = 0; i < n; i++)
        tmp[mcount[v[i].metric]++] = v[i];
    memcpy(v, tmp, n * sizeof(*v));
    for (uint32_t a = 0; a < pairs; a++) /* clean for the next one */
        mcount[ids[a]] = 0;
    x->cpairs[c] = pairs;
}

/* Every profile's entries of contexts [lo, hi) into the transposed
 * values, in profile order (rows are sorted by context). The chunk that
 * ends the range says where each kept row's next range starts. */
static bool gather(tpass *x, uint32_t lo, uint32_t hi, bool last)
{
    uint64_t *fill = malloc((size_t)(hi - lo + 1) * sizeof(*fill));
    if (!fill)
        return false;
    for (uint32_t c = lo; c < hi; c++)
        fill[c - lo] = x->cstart[c] - x->cbase;
    for (uint32_t p = 0; p < x->np; p++) {
        const row *w = &x->rows[p];
        uint32_t i = row_lower(w, w->kept ? x->cur[p] : 0, lo);
        for (; i < w->n && w->e[i].ctx < hi; i++)
            x->cv[fill[w->e[i].ctx - lo]++] =
                (cms_val){w->e[i].metric, p, w->e[i].v};
        if (last && w->kept)
            x->nxt[p] = i;
    }
    free(fill);
    return true;
}

/* Chunk k of the round's contexts: gathered, each context sorted by
 * metric (a task). */
static void fill_chunk(void *ctx, uint32_t k)
{
    tpass *x = ctx;
    uint32_t lo = x->chunk[k], hi = x->chunk[k + 1];
    bool last = k + 1 == x->nchunks; /* says where kept rows go on */
    if (lo == hi && !last)
        return;
    uint64_t most = 0;
    for (uint32_t c = lo; c < hi; c++)
        if (x->cstart[c + 1] - x->cstart[c] > most)
            most = x->cstart[c + 1] - x->cstart[c];
    uint32_t *mcount = calloc(2 * (size_t)x->nm + 1, sizeof(*mcount));
    uint16_t *ids = malloc((2 * (size_t)x->nm + 1) * sizeof(*ids));
    cms_val *tmp = malloc((most ? most : 1) * sizeof(*tmp));
    if (mcount && ids && tmp && gather(x, lo, hi, last))
        for (uint32_t c = lo; c < hi; c++)
            sort_context(x, c, mcount, ids, tmp);
    else
        x->nomem = 1;
    free(ids);
    free(tmp);
    free(mcount);
}

/* Statistics over the n profiles with a value of one metric: count, sum,
 * min, mean, max, population standard deviation, coefficient of
 * variation. */
static void stats_record(uint8_t *sq, const cms_val *v, uint32_t n)
{
    double sum = 0, mn = v[0].v, mx = v[0].v, var = 0;
    for (uint32_t j = 0; j < n; j++) {
        sum += v[j].v;
        mn = v[j].v < mn ? v[j].v : mn;
        mx = v[j].v > mx ? v[j].v : mx;
    }
    double mean = sum / n;
    for (uint32_t j = 0; j < n; j++)
        var += (v[j].v - mean) * (v[j].v - mean);
    double sd = sqrt(var / n);
    db_put16(sq, v[0].metric);
    db_put16(sq + 2, 0);
    db_put32(sq + 4, n);
    gpuprof__an_put_f64(sq + 8, sum);
    gpuprof__an_put_f64(sq + 16, mn);
    gpuprof__an_put_f64(sq + 24, mean);
    gpuprof__an_put_f64(sq + 32, mx);
    gpuprof__an_put_f64(sq + 40, sd);
    gpuprof__an_put_f64(sq + 48, mean != 0 ? sd / mean : 0);
}

/* Context lo + i's cct.db plane and stats.db records: runs of one metric
 * (a task). */
static void cms_plane(void *ctx, uint32_t i)
{
    tpass *x = ctx;
    uint32_t c = x->lo + i;
    const cms_val *v = x->cv + (x->cstart[c] - x->cbase);
    uint32_t n = (uint32_t)(x->cstart[c + 1] - x->cstart[c]);
    uint32_t pairs = x->cpairs[c];
    uint8_t *ref = x->ctab + (size_t)c * DB_PLANE_REF;
    db_put64(ref, x->coff[c]);
    db_put32(ref + 8, pairs);
    db_put32(ref + 12, n);
    ref = x->stab + (size_t)c * DB_PLANE_REF;
    db_put64(ref, x->soff[c]);
    db_put32(ref + 8, pairs);
    uint8_t *q = x->cms + (x->coff[c] - x->cms_base);
    uint8_t *sq = x->sts + (x->soff[c] - x->sts_base);
    uint8_t *val = q + (size_t)pairs * DB_CMS_PAIR;
    unsigned vsize = db_cms_value(x->np), pbytes = vsize - 8;
    for (uint32_t k = 0, j; k < n; k = j) {
        for (j = k; j < n && v[j].metric == v[k].metric; j++) {
            if (pbytes == 2)
                db_put16(val, (uint16_t)v[j].profile);
            else
                db_put32(val, v[j].profile);
            gpuprof__an_put_f64(val + pbytes, v[j].v);
            val += vsize;
        }
        db_put16(q, v[k].metric);
        db_put16(q + 2, 0); /* the buffer is the last range's */
        db_put32(q + 4, k);
        q += DB_CMS_PAIR;
        stats_record(sq, v + k, j - k);
        sq += DB_STATS_REC;
    }
}

/* Bytes one value of pass 3 costs at most: its entry read back, its
 * transposed copy and the sort's, its cct.db bytes and stats record. */
#define T_BYTES_PER_VALUE                                                      \
    (2 * sizeof(entry) + 2 * sizeof(cms_val) + 12u + DB_CMS_PAIR +             \
     DB_STATS_REC + DB_PMS_VALUE)

/* The round's rows read back from profile.db: all of them under a budget,
 * on several ranks the other ranks' profiles. */
static gpuprof_status read_back(run *r, tpass *x)
{
    gpuprof__an_parallel_for(r->a->threads, x->np, read_rows, x);
    if (x->io_errno)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot read back: %s",
                                r->f[F_PMS].tmp, strerror(x->io_errno));
    if (x->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

/* The round's values transposed: chunks of about equal numbers of values
 * filled on the pool. */
static gpuprof_status transpose_values(run *r, tpass *x)
{
    uint32_t lo = x->lo, hi = x->hi;
    x->cbase = x->cstart[lo];
    uint64_t total = x->cstart[hi] - x->cbase;
    /* Each chunk visits every profile: chunks of at least 16 values per
     * profile (64 Ki at least) keep that small beside the values. */
    uint64_t per = (uint64_t)x->np * 16 > 65536 ? (uint64_t)x->np * 16 : 65536;
    x->nchunks = (uint32_t)(total / per);
    if (x->nchunks > x->most_chunks)
        x->nchunks = x->most_chunks;
    if (x->nchunks < r->a->threads)
        x->nchunks = r->a->threads < x->most_chunks ? r->a->threads
                                                    : x->most_chunks;
    for (uint32_t k = 1, c = lo; k < x->nchunks; k++) {
        uint64_t want = x->cbase + total * k / x->nchunks;
        while (c < hi && x->cstart[c] < want)
            c++;
        x->chunk[k] = c;
    }
    x->chunk[0] = lo;
    x->chunk[x->nchunks] = hi;
    x->cv = (cms_val *)gpuprof__an_big_reserve(r->a->threads, &x->cvb,
                                               total * sizeof(*x->cv));
    if (!x->cv)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    gpuprof__an_parallel_for(r->a->threads, x->nchunks, fill_chunk, x);
    uint32_t *t = x->cur; /* where the next range starts */
    x->cur = x->nxt;
    x->nxt = t;
    for (uint32_t p = 0; p < x->np; p++) /* those read back */
        if (!x->rows[p].kept) {
            free(x->rows[p].e);
            x->rows[p] = (row){0};
        }
    return x->nomem ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                    : GPUPROF_OK;
}

/* The round's planes encoded and appended to cct.db and stats.db. */
static gpuprof_status write_planes(run *r, tpass *x)
{
    unsigned threads = r->a->threads;
    x->cms_base = r->f[F_CMS].at;
    x->sts_base = r->f[F_STATS].at;
    uint64_t ca = x->cms_base, sa = x->sts_base;
    for (uint32_t c = x->lo; c < x->hi; c++) {
        x->coff[c] = ca;
        x->soff[c] = sa;
        ca += (uint64_t)x->cpairs[c] * DB_CMS_PAIR +
              (x->cstart[c + 1] - x->cstart[c]) * db_cms_value(x->np);
        sa += (uint64_t)x->cpairs[c] * DB_STATS_REC;
    }
    size_t csize = ca - x->cms_base, ssize = sa - x->sts_base;
    x->cms = gpuprof__an_big_reserve(threads, &x->cmsb, csize);
    x->sts = gpuprof__an_big_reserve(threads, &x->stsb, ssize);
    gpuprof_status st = GPUPROF_OK;
    if (!x->cms || !x->sts)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        gpuprof__an_parallel_for(threads, x->hi - x->lo, cms_plane, x);
        st = gpuprof__an_dbfile_put(&r->f[F_CMS], x->cms, csize, threads);
    }
    if (st == GPUPROF_OK)
        st = gpuprof__an_dbfile_put(&r->f[F_STATS], x->sts, ssize, threads);
    return st;
}

/* Contexts [lo, hi): transposed, encoded and appended. */
static gpuprof_status transpose_round(run *r, tpass *x, bool all_kept)
{
    gpuprof_status st = all_kept ? GPUPROF_OK : read_back(r, x);
    if (st == GPUPROF_OK)
        st = transpose_values(r, x);
    if (st == GPUPROF_OK)
        st = write_planes(r, x);
    return st;
}

static void tpass_free(tpass *x, unsigned threads)
{
    gpuprof__an_big_release(threads, &x->cvb);
    gpuprof__an_big_release(threads, &x->cmsb);
    gpuprof__an_big_release(threads, &x->stsb);
    free(x->cur);
    free(x->nxt);
    free(x->cpairs);
    free(x->coff);
    free(x->soff);
    free(x->chunk);
}

/* A range holds RANGE_PER_PROFILE values per profile, at least RANGE_MIN
 * and at most RANGE_MAX: its buffers (the transposed values, the planes:
 * about 40 bytes a value) are reused by the next, so that pass 3 faults in
 * a bounded number of pages -- a kilobyte or two per profile -- however
 * large the database (the rows it reads from are there already); and each
 * range visits every profile, a cost that many values per profile make
 * small. */
#define RANGE_PER_PROFILE 64u
#define RANGE_MIN (256u << 10)
#define RANGE_MAX (4u << 20)

static uint64_t range_values(uint32_t np)
{
    uint64_t v = (uint64_t)np * RANGE_PER_PROFILE;
    return v < RANGE_MIN ? RANGE_MIN : v > RANGE_MAX ? RANGE_MAX : v;
}

gpuprof_status gpuprof__an_transpose(run *r)
{
    uint32_t nc = r->t.nc;
    tpass x = {.cstart = r->cstart,
               .rows = r->rows,
               .np = r->t.np,
               .nm = r->t.nm,
               .nc = nc,
               .pms_fd = r->f[F_PMS].fd,
               .pms_tab = r->f[F_PMS].tab,
               .ctab = r->f[F_CMS].tab,
               .stab = r->f[F_STATS].tab};
    uint32_t kept = 0;
    for (uint32_t p = 0; p < x.np; p++)
        kept += r->rows[p].kept;
    r->readback = x.np - kept;
    x.cur = calloc(x.np ? x.np : 1, sizeof(*x.cur));
    x.nxt = calloc(x.np ? x.np : 1, sizeof(*x.nxt));
    x.cpairs = calloc((size_t)nc + 1, sizeof(*x.cpairs));
    x.coff = malloc(((size_t)nc + 1) * sizeof(*x.coff));
    x.soff = malloc(((size_t)nc + 1) * sizeof(*x.soff));
    x.most_chunks = r->a->threads > 1 ? 8 * r->a->threads : 1;
    x.chunk = calloc((size_t)x.most_chunks + 1, sizeof(*x.chunk));
    gpuprof_status st = GPUPROF_OK;
    if (!x.cur || !x.nxt || !x.cpairs || !x.coff || !x.soff || !x.chunk)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t fit =
        r->budget ? gpuprof__an_room(r) / T_BYTES_PER_VALUE : UINT64_MAX;
    if (fit > range_values(x.np))
        fit = range_values(x.np);
    for (x.lo = r->c_lo; x.lo < r->c_hi && st == GPUPROF_OK; x.lo = x.hi) {
        gpuprof__an_progress(r, "transpose", x.lo, nc);
        x.hi = x.lo + 1;
        while (x.hi < r->c_hi && x.cstart[x.hi + 1] - x.cstart[x.lo] <= fit)
            x.hi++;
        st = transpose_round(r, &x, kept == x.np);
        r->rounds[2]++;
        if (st == GPUPROF_OK && r->tight)
            gpuprof__an_trim();
    }
    tpass_free(&x, r->a->threads);
    if (st == GPUPROF_OK)
        gpuprof__an_progress(r, "transpose", nc, nc);
    return st;
}
