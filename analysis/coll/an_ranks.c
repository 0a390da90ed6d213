/*
 * an_ranks.c - the aggregation on several ranks (an_coll.h, agg/an_agg.h):
 * the ranks agreeing on every step's status, the inputs listed by rank 0
 * and split into blocks, and the ranks' parts of profile.db, trace.db,
 * cct.db and stats.db settled into the shared files after passes 2 and 3.
 * The trees' merge after pass 1 is in an_ranks_tree.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../agg/an_agg.h"
#include "../base/an_buf.h"

typedef gpuprof__an_buf buf;
typedef gpuprof__an_rdr rdr;

/* ---- several ranks (an_coll.h) ------------------------------------------
 * Each step that may fail on one rank is followed by agree(): the ranks
 * stop together, at the same place, with the first failing rank's
 * message, so that none waits in a collective the others never reach.
 * Rank k unifies its block of files (pass 1) into a tree of its own;
 * rank 0 merges the trees in rank order (tree_merge) and every rank
 * adopts the result and maps its own ids onto it; pass 2 writes each
 * rank's profiles, pass 3 each rank's contexts, into parts that
 * dbfile_settle puts in place. */
gpuprof_status gpuprof__an_transport_fail(void)
{
    return gpuprof__an_fail(GPUPROF_E_IO,
                            "the ranks could not communicate (MPI failed)");
}
/* The status every rank ends with: the first failing rank's, with its
 * message naming that rank (or r->blame, the rank a failure is about);
 * GPUPROF_OK when none failed. One process: st. */
gpuprof_status gpuprof__an_agree(run *r, gpuprof_status st)
{
    if (r->nranks == 1)
        return st;
    const gpuprof__an_coll *c = r->coll;
    uint64_t first = st != GPUPROF_OK ? (uint64_t)r->rank : (uint64_t)r->nranks;
    if (c->allreduce_u64(c->ctx, &first, 1, GPUPROF__AN_MIN))
        return gpuprof__an_transport_fail();
    if (first >= (uint64_t)r->nranks)
        return GPUPROF_OK;
    buf b = {0};
    void *blob = NULL;
    uint64_t size = 0;
    if (first == (uint64_t)r->rank) {
        const char *msg = gpuprof_an_last_error();
        gpuprof__an_put_u32(&b, (uint32_t)st);
        gpuprof__an_put_u32(&b, (uint32_t)(r->blame >= 0 ? r->blame : r->rank));
        gpuprof__an_put_bytes(&b, msg, strlen(msg));
        blob = b.nomem ? NULL : b.d;
        size = b.nomem ? 0 : b.n;
    }
    if (c->bcast(c->ctx, (int)first, &blob, &size)) {
        if (blob != b.d)
            free(blob);
        free(b.d);
        return gpuprof__an_transport_fail();
    }
    const uint8_t *q = blob;
    gpuprof_status agreed = size >= 8 ? (gpuprof_status)db_get32(q) : st;
    if (agreed == GPUPROF_OK) /* cannot be: a failure was agreed */
        agreed = GPUPROF_E_INTERNAL;
    if (size >= 8)
        gpuprof__an_fail(agreed, "rank %u: %.*s", db_get32(q + 4),
                         (int)(size - 8), (const char *)q + 8);
    else
        gpuprof__an_fail(GPUPROF_E_NOMEM, "rank %u: out of memory",
                         (unsigned)first);
    if (blob != b.d)
        free(blob);
    free(b.d);
    return agreed;
}

uint64_t gpuprof__an_share(uint64_t total, uint64_t i, uint64_t n)
{
    return total / n * i + total % n * i / n;
}

/* The first file whose bytes before it are at least `want`. */
static uint32_t file_at(const run *r, uint64_t want)
{
    uint64_t at = 0;
    for (uint32_t i = 0; i < r->ns; i++) {
        if (at >= want)
            return i;
        at += r->s[i].fsize + r->s[i].tsize + 1;
    }
    return r->ns;
}

static gpuprof_status inputs_parse(run *r, const void *blob, uint64_t size)
{
    rdr d = {blob, size, 0, false};
    r->pid0 = (long)gpuprof__an_get_u64(&d);
    uint32_t n = gpuprof__an_get_u32(&d);
    if (d.bad || n > size / 24)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged list of inputs");
    if (!(r->s = calloc((size_t)n + 1, sizeof(*r->s))))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t fsize = gpuprof__an_get_u64(&d),
                 tsize = gpuprof__an_get_u64(&d);
        uint32_t has_trace = gpuprof__an_get_u32(&d),
                 len = gpuprof__an_get_u32(&d);
        const uint8_t *path = gpuprof__an_get_bytes(&d, len);
        if (!path)
            return gpuprof__an_fail(GPUPROF_E_INTERNAL,
                                    "damaged list of inputs");
        r->s[i] = (src){.path = strndup((const char *)path, len),
                        .fsize = fsize,
                        .tsize = tsize,
                        .has_trace = has_trace};
        r->ns = i + 1;
        if (!r->s[i].path)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    return GPUPROF_OK;
}

/* The input files, listed by rank 0 (the others take its list, so that
 * all agree even while files appear), and this rank's block of them:
 * contiguous, in input order, of about equal bytes. */
gpuprof_status gpuprof__an_inputs(run *r)
{
    r->pid0 = (long)getpid();
    if (r->nranks == 1) {
        r->s_hi = 0;
        gpuprof_status st = gpuprof__an_collect_inputs(r);
        r->s_hi = r->ns;
        return st;
    }
    const gpuprof__an_coll *c = r->coll;
    gpuprof_status st =
        r->rank == 0 ? gpuprof__an_collect_inputs(r) : GPUPROF_OK;
    buf b = {0};
    for (uint32_t i = 0; st == GPUPROF_OK && r->rank == 0 && i < r->ns; i++) {
        if (!i) {
            gpuprof__an_put_u64(&b, (uint64_t)r->pid0);
            gpuprof__an_put_u32(&b, r->ns);
        }
        gpuprof__an_put_u64(&b, r->s[i].fsize);
        gpuprof__an_put_u64(&b, r->s[i].tsize);
        gpuprof__an_put_u32(&b, r->s[i].has_trace);
        gpuprof__an_put_u32(&b, (uint32_t)strlen(r->s[i].path));
        gpuprof__an_put_bytes(&b, r->s[i].path, strlen(r->s[i].path));
    }
    if (st == GPUPROF_OK && b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if ((st = gpuprof__an_agree(r, st)) != GPUPROF_OK) {
        free(b.d);
        return st;
    }
    void *blob = b.d;
    uint64_t size = b.n;
    if (c->bcast(c->ctx, 0, &blob, &size)) {
        free(b.d);
        return gpuprof__an_transport_fail();
    }
    if (r->rank != 0) {
        st = inputs_parse(r, blob, size);
        free(blob);
    }
    free(b.d);
    if ((st = gpuprof__an_agree(r, st)) != GPUPROF_OK)
        return st;
    uint64_t total = 0;
    for (uint32_t i = 0; i < r->ns; i++)
        total += r->s[i].fsize + r->s[i].tsize + 1;
    r->s_lo = file_at(
        r, gpuprof__an_share(total, (uint64_t)r->rank, (uint64_t)r->nranks));
    r->s_hi = r->rank + 1 == r->nranks
                  ? r->ns
                  : file_at(r, gpuprof__an_share(total, (uint64_t)r->rank + 1,
                                                 (uint64_t)r->nranks));
    return GPUPROF_OK;
}

/* Every rank's part of files fs[0..n), in rank order, into the shared
 * files (rank 0's is there: it wrote in place, first): an exclusive scan
 * of their sizes gives each part its place, so
 * the planes are where the single-process run puts them; what a rank's
 * plane references say moves by delta[i]. Afterwards f->at is where the
 * whole file's planes end, and the shared file is closed (dbfile_reopen).
 * Collective; the caller agrees on the status. */
static gpuprof_status dbfile_settle(run *r, dbfile **fs, int n, uint64_t *delta,
                                    uint64_t *size)
{
    const gpuprof__an_coll *c = r->coll;
    uint64_t before[4], total[4];
    for (int i = 0; i < n; i++)
        size[i] = before[i] = total[i] = fs[i]->at - fs[i]->origin;
    if (c->exscan_u64(c->ctx, before, (size_t)n) ||
        c->allreduce_u64(c->ctx, total, (size_t)n, GPUPROF__AN_SUM))
        return gpuprof__an_transport_fail();
    gpuprof_status st = GPUPROF_OK;
    for (int i = 0; i < n; i++) {
        dbfile *f = fs[i];
        if (st == GPUPROF_OK && size[i] && f->part >= 0 && /* 0: in place */
            !gpuprof__an_copy_part(f->part, f->fd, size[i],
                                   f->origin + before[i]))
            st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->tmp,
                                  strerror(errno ? errno : EIO));
        if (f->part >= 0)
            close(f->part);
        f->part = -1;
        if (close(f->fd) != 0 && st == GPUPROF_OK) /* NFS: written back */
            st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->tmp,
                                  strerror(errno));
        f->fd = -1;
        delta[i] = before[i];
        f->at = f->origin + total[i];
    }
    return st;
}

/* A plane reference's offset (table entry i of f) moved by d. */
static void ref_move(dbfile *f, uint64_t i, uint64_t d)
{
    uint8_t *q = f->tab + i * DB_PLANE_REF;
    db_put64(q, db_get64(q) + d);
}

typedef struct collect { /* rank 0 putting the ranks' pieces together */
    run *r;
    uint32_t crc[2];
    buf more; /* trace streams */
    gpuprof_status st;
    uint32_t tr_damaged, tr_dropped; /* summed over the ranks */
    uint64_t tr_ignored;
} collect;

static void collect_values(void *arg, int rank, const void *blob, uint64_t n)
{
    collect *k = arg;
    rdr d = {blob, n, 0, false};
    for (int i = 0; i < 2; i++) {
        uint32_t crc = gpuprof__an_get_u32(&d);
        k->crc[i] =
            gpuprof__io_crc32c_combine(k->crc[i], crc, gpuprof__an_get_u64(&d));
    }
    k->tr_damaged += gpuprof__an_get_u32(&d);
    k->tr_dropped += gpuprof__an_get_u32(&d);
    k->tr_ignored += gpuprof__an_get_u64(&d);
    uint32_t streams = gpuprof__an_get_u32(&d);
    const uint8_t *t =
        gpuprof__an_get_bytes(&d, (uint64_t)streams * DB_TRACE_STREAM);
    if (t)
        gpuprof__an_put_bytes(&k->more, t, (uint64_t)streams * DB_TRACE_STREAM);
    if (d.bad && k->st == GPUPROF_OK)
        k->st =
            gpuprof__an_fail(GPUPROF_E_INTERNAL, "rank %d: damaged part", rank);
}

/* This rank's counts, checksums and trace streams for rank 0. */
static void values_blob(const run *r, bool traced, const uint32_t *crc,
                        const uint64_t *size, buf *b)
{
    const gpuprof__an_tracedb *tr = &r->tr;
    for (int i = 0; i < 2; i++) {
        gpuprof__an_put_u32(b, i == 0 || traced ? crc[i] : 0);
        gpuprof__an_put_u64(b, i == 0 || traced ? size[i] : 0);
    }
    gpuprof__an_put_u32(b, tr->damaged);
    gpuprof__an_put_u32(b, tr->dropped);
    gpuprof__an_put_u64(b, tr->ignored);
    gpuprof__an_put_u32(b, traced ? tr->nstreams : 0);
    gpuprof__an_put_bytes(
        b, tr->tab, traced ? (uint64_t)tr->nstreams * DB_TRACE_STREAM : 0);
}

/* Rank 0: what the ranks sent becomes the whole files'. */
static gpuprof_status values_collected(run *r, collect *k, gpuprof_status st)
{
    gpuprof__an_tracedb *tr = &r->tr;
    if (st == GPUPROF_OK && k->more.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK)
        st = k->st;
    r->f[F_PMS].crc = k->crc[0];
    tr->f.crc = k->crc[1];
    tr->damaged = k->tr_damaged;
    tr->dropped = k->tr_dropped;
    tr->ignored = k->tr_ignored;
    free(tr->tab);
    tr->tab = k->more.d;
    tr->nstreams = (uint32_t)(k->more.n / DB_TRACE_STREAM);
    tr->cap = tr->nstreams;
    return st;
}

/* profile.db's and trace.db's parts in place, their plane references
 * moved; the status the ranks agree on. */
static gpuprof_status values_parts(run *r, bool traced, uint32_t *crc,
                                   uint64_t *size)
{
    dbfile *pms = &r->f[F_PMS], *fs[2] = {pms, &r->tr.f};
    uint64_t delta[2];
    crc[0] = pms->crc;
    crc[1] = r->tr.f.crc;
    gpuprof_status st = dbfile_settle(r, fs, traced ? 2 : 1, delta, size);
    for (uint32_t p = r->pr_lo; p < r->pr_hi; p++)
        ref_move(pms, p, delta[0]);
    for (uint32_t i = 0; traced && i < r->tr.nstreams; i++) {
        uint8_t *e = r->tr.tab + (size_t)i * DB_TRACE_STREAM + 32;
        db_put64(e, db_get64(e) + delta[1]);
    }
    return gpuprof__an_agree(r, st);
}

/* After pass 2: profile.db's and trace.db's parts in place; the plane
 * references and the values per context summed over the ranks (every
 * rank reads profile.db back in pass 3); rank 0 has the checksums and
 * trace.db's streams. */
gpuprof_status gpuprof__an_settle_values(run *r, bool traced)
{
    const gpuprof__an_coll *c = r->coll;
    uint32_t crc[2];
    uint64_t size[2] = {0, 0};
    gpuprof_status st = values_parts(r, traced, crc, size);
    if (st != GPUPROF_OK)
        return st;
    st = gpuprof__an_dbfile_reopen(&r->f[F_PMS]); /* pass 3 reads it back */
    if (st == GPUPROF_OK && traced && r->rank == 0)
        st = gpuprof__an_dbfile_reopen(&r->tr.f); /* table and header */
    if (c->allreduce_u64(c->ctx, (uint64_t *)(void *)r->f[F_PMS].tab,
                         (size_t)r->t.np * DB_PLANE_REF / 8, GPUPROF__AN_SUM) ||
        c->allreduce_u64(c->ctx, r->cstart, (size_t)r->t.nc + 1,
                         GPUPROF__AN_SUM))
        return gpuprof__an_transport_fail();
    buf b = {0};
    values_blob(r, traced, crc, size, &b);
    collect k = {.r = r, .st = GPUPROF_OK};
    int rc = c->gather(c->ctx, b.nomem ? NULL : b.d, b.nomem ? 0 : b.n,
                       collect_values, &k);
    free(b.d);
    if (rc) {
        free(k.more.d);
        return gpuprof__an_transport_fail();
    }
    if (st == GPUPROF_OK && b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (r->rank == 0)
        st = values_collected(r, &k, st);
    else
        free(k.more.d);
    return gpuprof__an_agree(r, st);
}

static void collect_contexts(void *arg, int rank, const void *blob, uint64_t n)
{
    collect *k = arg;
    rdr d = {blob, n, 0, false};
    uint32_t lo = gpuprof__an_get_u32(&d), hi = gpuprof__an_get_u32(&d);
    for (int i = 0; i < 2; i++) {
        uint32_t crc = gpuprof__an_get_u32(&d);
        k->crc[i] =
            gpuprof__io_crc32c_combine(k->crc[i], crc, gpuprof__an_get_u64(&d));
    }
    for (int i = 0; i < 2 && !d.bad; i++) {
        dbfile *f = &k->r->f[i ? F_STATS : F_CMS];
        const uint8_t *t =
            lo <= hi && hi <= k->r->t.nc
                ? gpuprof__an_get_bytes(&d, (uint64_t)(hi - lo) * DB_PLANE_REF)
                : NULL;
        if (t)
            memcpy(f->tab + (size_t)lo * DB_PLANE_REF, t,
                   (size_t)(hi - lo) * DB_PLANE_REF);
        else
            d.bad = true;
    }
    if (d.bad && k->st == GPUPROF_OK)
        k->st =
            gpuprof__an_fail(GPUPROF_E_INTERNAL, "rank %d: damaged part", rank);
}

/* After pass 3: cct.db's and stats.db's parts in place, rank 0 has their
 * plane references and checksums. */
gpuprof_status gpuprof__an_settle_contexts(run *r)
{
    const gpuprof__an_coll *c = r->coll;
    dbfile *fs[2] = {&r->f[F_CMS], &r->f[F_STATS]};
    uint64_t delta[2], size[2];
    uint32_t crc[2] = {fs[0]->crc, fs[1]->crc};
    gpuprof_status st = dbfile_settle(r, fs, 2, delta, size);
    for (uint32_t i = r->c_lo; i < r->c_hi; i++) {
        ref_move(fs[0], i, delta[0]);
        ref_move(fs[1], i, delta[1]);
    }
    if ((st = gpuprof__an_agree(r, st)) != GPUPROF_OK)
        return st;
    for (int i = 0; i < 2 && st == GPUPROF_OK && r->rank == 0; i++)
        st = gpuprof__an_dbfile_reopen(
            fs[i]); /* for the tables and the headers */
    buf b = {0};
    gpuprof__an_put_u32(&b, r->c_lo);
    gpuprof__an_put_u32(&b, r->c_hi);
    for (int i = 0; i < 2; i++) {
        gpuprof__an_put_u32(&b, crc[i]);
        gpuprof__an_put_u64(&b, size[i]);
    }
    for (int i = 0; i < 2; i++)
        gpuprof__an_put_bytes(&b, fs[i]->tab + (size_t)r->c_lo * DB_PLANE_REF,
                              (uint64_t)(r->c_hi - r->c_lo) * DB_PLANE_REF);
    collect k = {.r = r, .st = GPUPROF_OK};
    int rc = c->gather(c->ctx, b.nomem ? NULL : b.d, b.nomem ? 0 : b.n,
                       collect_contexts, &k);
    free(b.d);
    if (rc)
        return gpuprof__an_transport_fail();
    if (b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (r->rank == 0) {
        if (st == GPUPROF_OK)
            st = k.st;
        fs[0]->crc = k.crc[0];
        fs[1]->crc = k.crc[1];
    }
    return gpuprof__an_agree(r, st);
}

/* The first context with at least `want` values before it. */
static uint32_t ctx_at(const run *r, uint64_t want)
{
    uint32_t lo = 0, hi = r->t.nc;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->cstart[mid] < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Pass 3's contexts for this rank: ranges of about equal value counts. */
void gpuprof__an_rank_contexts(run *r)
{
    uint64_t total = r->cstart[r->t.nc], k = (uint64_t)r->rank,
             n = (uint64_t)r->nranks;
    r->c_lo = r->rank ? ctx_at(r, gpuprof__an_share(total, k, n)) : 0;
    r->c_hi =
        k + 1 == n ? r->t.nc : ctx_at(r, gpuprof__an_share(total, k + 1, n));
}
