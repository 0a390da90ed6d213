/*
 * an_values.c - pass 2 of the aggregation (an_agg.h): per profile (a
 * thread of a file), each node's own values (exclusive) and its subtree's
 * (inclusive, combined by the metric's rule) as a sparse row sorted by
 * context and metric, encoded as the profile's profile.db plane; the
 * values per context counted for pass 3. Files go in the rounds pass 1
 * made (read again under a memory budget); their traces go to trace.db
 * while their node maps are held.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_buf.h"
#include "../base/an_pool.h"
#include "../db/an_db.h"
#include "an_agg.h"

/* One round's parallel work: the profiles [p0, p1) of its files. */
typedef struct vround {
    const src *s;
    const an_tree *t;
    row *rows;
    uint32_t p0, p1;
    uint32_t *slice_count; /* per slice of profiles: values per context */
    uint32_t nslices;
    uint8_t *pms; /* the round's planes, from file offset pms_base */
    uint64_t pms_base;
    const uint64_t *poff; /* per profile: its plane's offset */
    uint8_t *tab;         /* profile.db's table */
    _Atomic int nomem;
} vround;

static double as_double(const gmetric *m, uint64_t bits)
{
    if (m->type == GPUPROF_IO_F64) {
        double d;
        memcpy(&d, &bits, sizeof(d));
        return d;
    }
    return (double)bits;
}

static double combine(uint8_t how, double a, double b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    if (how == GPUPROF_IO_MIN)
        return a < b ? a : b;
    if (how == GPUPROF_IO_MAX)
        return a > b ? a : b;
    return a + b;
}

static int by_ctx_metric(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->ctx != b->ctx)
        return a->ctx < b->ctx ? -1 : 1;
    return (a->metric > b->metric) - (a->metric < b->metric);
}

/* Sorts by (context, metric): LSD radix over the 48-bit key (context <<
 * 16 | metric) in 8-bit digits, all six histograms from one read, a pass
 * skipped when its digit never varies (small contexts and metric ids leave
 * three passes); stable; qsort for short rows. false when out of memory. */
static bool sort_entries(entry *e, uint32_t n)
{
    if (n < 128) {
        if (n > 1)
            qsort(e, n, sizeof(*e), by_ctx_metric);
        return true;
    }
    entry *tmp = malloc((size_t)n * sizeof(*tmp));
    if (!tmp)
        return false;
    uint32_t count[6][256];
    memset(count, 0, sizeof(count));
    for (uint32_t i = 0; i < n; i++) {
        uint64_t k = (uint64_t)e[i].ctx << 16 | e[i].metric;
        for (int d = 0; d < 6; d++)
            count[d][(k >> (8 * d)) & 0xFF]++;
    }
    entry *from = e, *to = tmp;
    uint64_t k0 = (uint64_t)e[0].ctx << 16 | e[0].metric;
    for (int d = 0; d < 6; d++) {
        if (count[d][(k0 >> (8 * d)) & 0xFF] == n)
            continue; /* one digit value: already in order for it */
        uint32_t sum = 0;
        for (int b = 0; b < 256; b++) {
            uint32_t c = count[d][b];
            count[d][b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint64_t k = (uint64_t)from[i].ctx << 16 | from[i].metric;
            to[count[d][(k >> (8 * d)) & 0xFF]++] = from[i];
        }
        entry *t = from;
        from = to;
        to = t;
    }
    if (from != e)
        memcpy(e, from, (size_t)n * sizeof(*e));
    free(tmp);
    return true;
}

typedef struct ents { /* a row being built */
    entry *e;
    uint32_t n, cap;
} ents;

static bool ents_add(ents *x, uint32_t ctx, uint16_t metric, double v)
{
    if (!gpuprof__an_grow((void **)&x->e, &x->cap, x->n, sizeof(*x->e)))
        return false;
    x->e[x->n++] = (entry){ctx, metric, v};
    return true;
}

/* One thread's nodes, as values_one reads them. */
typedef struct thr {
    const src *s;
    const gpuprof__io_profile *p;
    uint32_t first, nn; /* its absolute nodes */
} thr;

/* Value v of split node i (its targets t, n of them) divided among its
 * contexts (an_gcct.h); with `up`, each part also on the contexts above
 * its target up to `stop` (inclusive values). */
static bool split_add(const vround *v, const gmetric *gm, uint16_t dm,
                      double val, const gsplit *t, uint32_t n, uint32_t stop,
                      bool up, ents *x)
{
    enum { SMALL = 32 };
    double small[SMALL], *part = n <= SMALL ? small : malloc(n * sizeof(*part));
    if (!part)
        return false;
    gpuprof__an_gcct_apportion(val, gm->combine == GPUPROF_IO_SUM, t, n, part);
    bool ok = true;
    for (uint32_t k = 0; k < n && ok; k++) {
        if (part[k] == 0)
            continue;
        ok = ents_add(x, t[k].ctx, dm, part[k]);
        for (uint32_t c = up ? v->t->c[t[k].ctx].parent : stop;
             ok && c != stop && c != UINT32_MAX; c = v->t->c[c].parent)
            ok = ents_add(x, c, dm, part[k]);
    }
    if (part != small)
        free(part);
    return ok;
}

/* Local metric m's values at the thread's nodes into inc (as stored),
 * the non-zero ones added as exclusive entries of base metric `gid`; with
 * `split_only`, only the values of nodes split among GPU calling contexts
 * (the others are 0: gpu.pc.apportioned_samples). */
static bool metric_exclusive(const vround *vr, const thr *h, uint32_t m,
                             const gmetric *gm, uint32_t gid, bool split_only,
                             double *inc, ents *x)
{
    const gpuprof__io_profile *p = h->p;
    uint16_t dm = (uint16_t)(2 * gid + DB_EXCLUSIVE);
    memset(inc, 0, h->nn * sizeof(*inc));
    for (uint32_t i = 0; i < h->nn; i++) {
        const gpuprof__io_node *nd = &p->nodes[h->first + i];
        for (uint32_t v = 0; v < nd->value_count; v++) {
            const gpuprof__io_value *val = &p->values[nd->first_value + v];
            if (val->metric != m)
                continue;
            double d = as_double(gm, val->bits);
            uint32_t nt;
            const gsplit *t =
                gpuprof__an_gcct_targets(&h->s->split, h->first + i, &nt);
            if (split_only && !t)
                continue;
            inc[i] = d;
            if (d != 0 && t && !split_add(vr, gm, dm, d, t, nt, 0, false, x))
                return false;
            if (d != 0 && !t && !ents_add(x, h->s->ctx[h->first + i], dm, d))
                return false;
        }
    }
    return true;
}

/* inc made inclusive by a reverse pass (parents precede children), the
 * non-zero ones added as inclusive entries; a structured frame's
 * function, inlined functions and call site lines above it hold its
 * subtree too. */
static bool metric_inclusive(const vround *v, const thr *h, uint32_t gid,
                             const gmetric *gm, double *inc, ents *x)
{
    const gpuprof__io_profile *p = h->p;
    const uint32_t *ctx = h->s->ctx;
    for (uint32_t i = h->nn - 1; i > 0; i--) {
        uint32_t par = p->nodes[h->first + i].parent;
        inc[par] = combine(gm->combine, inc[par], inc[i]);
    }
    uint16_t dm = (uint16_t)(2 * gid + DB_INCLUSIVE);
    for (uint32_t i = 0; i < h->nn; i++) {
        if (inc[i] == 0)
            continue;
        uint32_t nt;
        const gsplit *t =
            i ? gpuprof__an_gcct_targets(&h->s->split, h->first + i, &nt)
              : NULL;
        if (t) { /* in several GPU calling contexts */
            if (!split_add(v, gm, dm, inc[i], t, nt,
                           ctx[h->first + p->nodes[h->first + i].parent], true,
                           x))
                return false;
            continue;
        }
        if (!ents_add(x, ctx[h->first + i], dm, inc[i]))
            return false;
        if (!i || !v->t->structured)
            continue;
        uint32_t stop = ctx[h->first + p->nodes[h->first + i].parent];
        for (uint32_t c = v->t->c[ctx[h->first + i]].parent;
             c != stop && c != UINT32_MAX; c = v->t->c[c].parent)
            if (!ents_add(x, c, dm, inc[i]))
                return false;
    }
    return true;
}

/* Sorted by (context, metric); two nodes of one thread can be one context
 * (a module loaded twice at one path): their values combine. The number
 * of entries left. */
static uint32_t combine_same(const an_tree *t, entry *e, uint32_t n)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (k && e[k - 1].ctx == e[i].ctx && e[k - 1].metric == e[i].metric)
            e[k - 1].v =
                combine(t->m[e[i].metric / 2].combine, e[k - 1].v, e[i].v);
        else
            e[k++] = e[i];
    }
    return k;
}

/* Profile pi's row (a task of the round). */
static void values_one(vround *v, uint32_t pi)
{
    const gprof *gp = &v->t->p[pi];
    const src *s = &v->s[gp->src];
    const gpuprof__io_profile *p = s->io;
    const gpuprof__io_thread *th = &p->threads[gp->thread];
    thr h = {s, p, th->first_node, th->node_count};
    double *inc = calloc(h.nn, sizeof(*inc));
    uint8_t *used = calloc(p->metric_count ? p->metric_count : 1, 1);
    ents x = {0};
    if (!inc || !used)
        goto nomem;
    for (uint32_t i = h.first; i < h.first + h.nn; i++)
        for (uint32_t k = 0; k < p->nodes[i].value_count; k++)
            used[p->values[p->nodes[i].first_value + k].metric] = 1;
    for (uint32_t m = 0; m < p->metric_count; m++) { /* one at a time */
        uint32_t g = s->metric[m];
        const gmetric *gm = &v->t->m[g];
        if (used[m] && (!metric_exclusive(v, &h, m, gm, g, false, inc, &x) ||
                        !metric_inclusive(v, &h, g, gm, inc, &x)))
            goto nomem;
        /* the samples of split nodes once more, as apportioned ones */
        uint32_t ap = v->t->apportioned;
        if (used[m] && ap && s->split.at && g == v->t->apportioned_of &&
            (!metric_exclusive(v, &h, m, gm, ap - 1, true, inc, &x) ||
             !metric_inclusive(v, &h, ap - 1, &v->t->m[ap - 1], inc, &x)))
            goto nomem;
    }
    if (!sort_entries(x.e, x.n))
        goto nomem;
    uint32_t k = combine_same(v->t, x.e, x.n), pairs = 0;
    for (uint32_t i = 0; i < k; i++)
        pairs += !i || x.e[i].ctx != x.e[i - 1].ctx;
    /* At most: the entries as grown, the sort's copy, the inclusive
     * values. */
    uint64_t peak = (uint64_t)x.cap * sizeof(*x.e) +
                    (x.n >= 128 ? (uint64_t)x.n * sizeof(*x.e) : 0) +
                    (uint64_t)h.nn * sizeof(*inc) + p->metric_count;
    if (k && k < x.cap) {
        entry *shrunk = realloc(x.e, (size_t)k * sizeof(*x.e));
        if (shrunk)
            x.e = shrunk;
    }
    v->rows[pi] = (row){x.e, k, pairs, peak};
    free(inc);
    free(used);
    return;
nomem:
    v->nomem = 1;
    free(x.e);
    free(inc);
    free(used);
}

static void values_rel(void *ctx, uint32_t i)
{
    vround *v = ctx;
    values_one(v, v->p0 + i);
}

/* Values per context of slice k of the round's profiles. */
static void count_slice(void *ctx, uint32_t k)
{
    vround *v = ctx;
    uint32_t nc = v->t->nc;
    uint32_t *cnt = v->slice_count + (size_t)k * nc;
    for (uint32_t p = v->p0 + k; p < v->p1; p += v->nslices)
        for (uint32_t i = 0; i < v->rows[p].n; i++)
            cnt[v->rows[p].e[i].ctx]++;
}

/* Profile p0 + i's profile.db plane and table entry. */
static void pms_plane(void *ctx, uint32_t i)
{
    vround *v = ctx;
    uint32_t p = v->p0 + i;
    const row *w = &v->rows[p];
    uint8_t *ref = v->tab + (size_t)p * DB_PLANE_REF;
    db_put64(ref, v->poff[p]);
    db_put32(ref + 8, w->pairs);
    db_put32(ref + 12, w->n);
    uint8_t *q = v->pms + (v->poff[p] - v->pms_base);
    uint8_t *val = q + (size_t)w->pairs * DB_PMS_PAIR;
    for (uint32_t k = 0; k < w->n; k++) {
        if (!k || w->e[k].ctx != w->e[k - 1].ctx) {
            db_put32(q, w->e[k].ctx);
            db_put32(q + 4, k);
            q += DB_PMS_PAIR;
        }
        db_put16(val, w->e[k].metric);
        gpuprof__an_put_f64(val + 2, w->e[k].v);
        val += DB_PMS_VALUE;
    }
}

/* Files [i, j) loaded again where pass 1 let them go, their node maps
 * made, their costs begun; their traces to trace.db. */
static gpuprof_status round_files(run *r, uint32_t i, uint32_t j)
{
    gpuprof__an_load_files(r, i, j);
    gpuprof_status st = gpuprof__an_first_error(r, i, j);
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++) {
        src *s = &r->s[k];
        if (!s->ctx)
            st = gpuprof__an_unify_file(r, k, true);
        s->cost = s->fsize + 2 * gpuprof__an_io_bytes(s->io) +
                  (uint64_t)s->nodes * sizeof(uint32_t) +
                  gpuprof__an_gcct_bytes(&s->split, s->nodes) +
                  2 * s->tsize; /* the trace, read whole */
    }
    return st;
}

static gpuprof_status round_traces(run *r, uint32_t i, uint32_t j)
{
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++)
        if (r->tr.f.fd >= 0 && r->s[k].has_trace)
            st = gpuprof__an_tracedb_add(&r->tr, r->s[k].path, r->s[k].io,
                                         r->s[k].ctx, r->s[k].metric,
                                         r->s[k].p0);
    return st;
}

/* The round's values per context, added to r->cstart. */
static void round_counts(run *r, vround *v)
{
    uint32_t nc = r->t.nc;
    memset(v->slice_count, 0, (size_t)v->nslices * nc * sizeof(uint32_t));
    gpuprof__an_parallel_for(r->a->threads, v->nslices, count_slice, v);
    for (uint32_t k = 0; k < v->nslices; k++)
        for (uint32_t c = 0; c < nc; c++)
            r->cstart[c + 1] += v->slice_count[(size_t)k * nc + c];
}

/* The round's planes, in profile order after the previous round's. */
static gpuprof_status round_planes(run *r, vround *v)
{
    dbfile *f = &r->f[F_PMS];
    v->pms_base = f->at;
    uint64_t at = v->pms_base;
    for (uint32_t p = v->p0; p < v->p1; p++) {
        r->poff[p] = at;
        at += (uint64_t)r->rows[p].pairs * DB_PMS_PAIR +
              (uint64_t)r->rows[p].n * DB_PMS_VALUE;
    }
    size_t size = at - v->pms_base;
    unsigned threads = r->a->threads;
    if (!(v->pms = gpuprof__an_big_alloc(threads, size)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    gpuprof__an_parallel_for(threads, v->p1 - v->p0, pms_plane, v);
    gpuprof_status st = gpuprof__an_dbfile_put(f, v->pms, size, threads);
    gpuprof__an_big_free(threads, v->pms, size);
    v->pms = NULL;
    return st;
}

/* What files [i, j) cost per file byte, for the next round's size. */
static void round_cost(run *r, uint32_t i, uint32_t j, double *ratio)
{
    for (uint32_t k = i; k < j; k++) {
        src *s = &r->s[k];
        for (uint32_t p = s->p0; p < s->p0 + s->np; p++)
            s->cost += r->rows[p].peak +
                       (uint64_t)r->rows[p].pairs * DB_PMS_PAIR +
                       (uint64_t)r->rows[p].n * DB_PMS_VALUE;
        if (s->fsize && (double)s->cost / s->fsize > *ratio)
            *ratio = (double)s->cost / s->fsize;
    }
}

/* The profiles of files [i, j): values, counts per context, planes. */
static gpuprof_status values_round(run *r, vround *v, uint32_t i, uint32_t j,
                                   double *ratio)
{
    gpuprof_status st = round_files(r, i, j);
    if (st != GPUPROF_OK)
        return st;
    v->p0 = r->s[i].p0;
    v->p1 = r->s[j - 1].p0 + r->s[j - 1].np;
    gpuprof__an_parallel_for(r->a->threads, v->p1 - v->p0, values_rel, v);
    st = round_traces(r, i, j);
    for (uint32_t k = i; k < j; k++)
        gpuprof__an_src_release(&r->s[k]);
    if (st != GPUPROF_OK)
        return st;
    if (v->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    round_counts(r, v);
    st = round_planes(r, v);
    round_cost(r, i, j, ratio);
    if (!r->keep_rows)
        for (uint32_t p = v->p0; p < v->p1; p++) {
            free(r->rows[p].e);
            r->rows[p] = (row){0};
        }
    return st;
}

gpuprof_status gpuprof__an_values(run *r)
{
    uint32_t np = r->t.np, nc = r->t.nc;
    r->cstart = calloc((size_t)nc + 1, sizeof(*r->cstart));
    r->poff = malloc(((size_t)np + 1) * sizeof(*r->poff));
    r->rows = calloc(np ? np : 1, sizeof(*r->rows));
    vround v = {.s = r->s,
                .t = &r->t,
                .rows = r->rows,
                .poff = r->poff,
                .tab = r->f[F_PMS].tab};
    v.nslices = r->a->threads < np ? r->a->threads : (np ? np : 1);
    v.slice_count = calloc((size_t)v.nslices * nc, sizeof(uint32_t));
    gpuprof_status st = GPUPROF_OK;
    if (!r->cstart || !r->poff || !r->rows || !v.slice_count)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double ratio = 0;
    for (uint32_t i = r->s_lo, j; i < r->s_hi && st == GPUPROF_OK; i = j) {
        j = gpuprof__an_round_end(r, i, ratio);
        gpuprof__an_progress(r, "values", r->s[i].p0, np);
        st = values_round(r, &v, i, j, &ratio);
        if (st == GPUPROF_OK && r->budget)
            gpuprof__an_trim();
    }
    free(v.slice_count);
    if (st == GPUPROF_OK)
        gpuprof__an_progress(r, "values", np, np);
    return st;
}
