/*
 * an_ranks_tree.c - one tree from the ranks' (agg/an_agg.h): after pass 1
 * each rank sends its tree as a blob, rank 0 merges them in rank order
 * into the ids the single-process run gives, broadcasts the result, and
 * every rank adopts it and maps its own ids onto it.
 */
#include <stdlib.h>
#include <string.h>

#include "../agg/an_agg.h"
#include "../base/an_buf.h"

typedef gpuprof__an_buf buf;
typedef gpuprof__an_rdr rdr;

/* ---- several ranks: one tree ----------------------------------------------
 * A tree blob: strings, metric strings, metrics, contexts and profiles,
 * each in the order pass 1 made them. A rank's own keeps its metric names
 * apart (mst): which of them the merged strings hold depends on the
 * ranks before it. */
/* Records: a metric is name, desc, unit|combine<<8|kind<<16|type<<24, at,
 * src, flags, count; a context parent, kind, name, aux, u64 key; a profile
 * src, thread, host, tname, file, pid, flags, rank, u64 tid; a device
 * attribute src, api, device, key, type, u64 value. The tree's flags: 1
 * structured, 2 GPU calling contexts rebuilt. */
#define TB_METRIC 28u
#define TB_CTX 24u
#define TB_PROF 40u
#define TB_DEV 28u

static void tree_blob(const an_tree *t, buf *b)
{
    uint64_t ssize = 0, msize = 0;
    const char *sd = gpuprof__io_strtab_data(t->st, &ssize);
    const char *md = t->mst ? gpuprof__io_strtab_data(t->mst, &msize) : NULL;
    gpuprof__an_put_u64(b, ssize);
    gpuprof__an_put_bytes(b, sd, ssize);
    gpuprof__an_put_u64(b, msize);
    gpuprof__an_put_bytes(b, md, msize);
    gpuprof__an_put_u32(b, (uint32_t)t->structured | (uint32_t)t->gcct << 1);
    gpuprof__an_put_u32(b, t->nm);
    for (uint32_t i = 0; i < t->nm; i++) {
        const gmetric *m = &t->m[i];
        gpuprof__an_put_u32(b, m->name);
        gpuprof__an_put_u32(b, m->desc);
        gpuprof__an_put_u32(b, (uint32_t)m->unit | (uint32_t)m->combine << 8 |
                                   (uint32_t)m->kind << 16 |
                                   (uint32_t)m->type << 24);
        gpuprof__an_put_u32(b, m->at);
        gpuprof__an_put_u32(b, m->src);
        gpuprof__an_put_u32(b, m->flags);
        gpuprof__an_put_u32(b, m->count);
    }
    gpuprof__an_put_u32(b, t->nc);
    for (uint32_t i = 0; i < t->nc; i++) {
        const gctx *c = &t->c[i];
        gpuprof__an_put_u32(b, c->parent);
        gpuprof__an_put_u32(b, c->kind);
        gpuprof__an_put_u32(b, c->name);
        gpuprof__an_put_u32(b, c->aux);
        gpuprof__an_put_u64(b, c->key);
    }
    gpuprof__an_put_u32(b, t->np);
    for (uint32_t i = 0; i < t->np; i++) {
        const gprof *p = &t->p[i];
        uint32_t w[8] = {p->src,  p->thread, p->host,  p->tname,
                         p->file, p->pid,    p->flags, (uint32_t)p->rank};
        for (int k = 0; k < 8; k++)
            gpuprof__an_put_u32(b, w[k]);
        gpuprof__an_put_u64(b, p->tid);
    }
    gpuprof__an_put_u32(b, t->nd);
    for (uint32_t i = 0; i < t->nd; i++) {
        const gdev *d = &t->d[i];
        uint32_t w[5] = {d->src, d->api, d->device, d->key, d->type};
        for (int k = 0; k < 5; k++)
            gpuprof__an_put_u32(b, w[k]);
        gpuprof__an_put_u64(b, d->value);
    }
}

/* Device attribute record q of a blob, strings through `str` (NULL: as
 * they are). */
static gdev dev_rec(const uint8_t *q, uint32_t (*str)(void *, uint32_t),
                    void *ctx)
{
    gdev d = {db_get32(q),      db_get32(q + 4),  db_get32(q + 8),
              db_get32(q + 12), db_get32(q + 16), db_get64(q + 20)};
    if (str) {
        d.api = str(ctx, d.api);
        d.key = str(ctx, d.key);
        if (d.type == GPUPROF_IO_ATTR_STR)
            d.value = d.value < UINT32_MAX ? str(ctx, (uint32_t)d.value)
                                           : UINT32_MAX;
    }
    return d;
}

typedef struct tview { /* a tree blob, read in place */
    const char *s, *ms;
    uint64_t ssize, msize;
    uint32_t structured, nm, nc, np, nd;
    const uint8_t *m, *c, *p, *d;
} tview;

static bool tree_view(const void *blob, uint64_t size, tview *v)
{
    rdr d = {blob, size, 0, false};
    v->ssize = gpuprof__an_get_u64(&d);
    v->s = (const char *)gpuprof__an_get_bytes(&d, v->ssize);
    v->msize = gpuprof__an_get_u64(&d);
    v->ms = (const char *)gpuprof__an_get_bytes(&d, v->msize);
    v->structured = gpuprof__an_get_u32(&d);
    v->nm = gpuprof__an_get_u32(&d);
    v->m = gpuprof__an_get_bytes(&d, (uint64_t)v->nm * TB_METRIC);
    v->nc = gpuprof__an_get_u32(&d);
    v->c = gpuprof__an_get_bytes(&d, (uint64_t)v->nc * TB_CTX);
    v->np = gpuprof__an_get_u32(&d);
    v->p = gpuprof__an_get_bytes(&d, (uint64_t)v->np * TB_PROF);
    v->nd = gpuprof__an_get_u32(&d);
    v->d = gpuprof__an_get_bytes(&d, (uint64_t)v->nd * TB_DEV);
    return !d.bad && d.at == size && v->ssize && !v->s[v->ssize - 1] &&
           (!v->msize || !v->ms[v->msize - 1]);
}

typedef struct tmaps {           /* a rank's ids -> the merged tree's */
    uint32_t *sfrom, *sto, nstr; /* strings, sfrom ascending */
    uint32_t *metric, *ctx;
    bool bad; /* an offset that is no string */
} tmaps;

static void tmaps_free(tmaps *mp)
{
    free(mp->sfrom);
    free(mp->sto);
    free(mp->metric);
    free(mp->ctx);
    *mp = (tmaps){0};
}

static uint32_t smap(tmaps *mp, uint32_t off)
{
    uint32_t lo = 0, hi = mp->nstr;
    while (off && lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mp->sfrom[mid] == off)
            return mp->sto[mid];
        if (mp->sfrom[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    mp->bad = mp->bad || off;
    return 0;
}

static uint32_t smap_cb(void *mp, uint32_t off)
{
    return smap(mp, off);
}

/* Metric record q of tree v, in g: found by name, else added. */
static gpuprof_status metric_merge(an_tree *g, const src *s, uint32_t ns,
                                   const tview *v, const uint8_t *q,
                                   uint32_t *out)
{
    uint32_t name = db_get32(q), desc = db_get32(q + 4), how = db_get32(q + 8);
    uint32_t file = db_get32(q + 16);
    if (name >= v->msize || desc >= v->msize || file >= ns)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    gmetric m = {0,
                 0,
                 (uint8_t)how,
                 (uint8_t)(how >> 8),
                 (uint8_t)(how >> 16),
                 (uint8_t)(how >> 24),
                 0,
                 file,
                 db_get32(q + 20),
                 0}; /* the count: once every metric is merged */
    for (uint32_t i = 0; i < g->nm; i++) {
        if (strcmp(gpuprof__an_tree_metric_str(g, g->m[i].name), v->ms + name))
            continue;
        if (g->m[i].unit != m.unit || g->m[i].combine != m.combine ||
            g->m[i].type != m.type)
            return gpuprof__an_fail(GPUPROF_E_INVALID,
                                    "%s: metric %s: unit, type or combination "
                                    "differs from an earlier profile",
                                    s[file].path, v->ms + name);
        *out = i;
        return GPUPROF_OK;
    }
    if (g->nm == MAX_BASE_METRICS || !GPUPROF_AN_GROW(g->m, g->nm, g->capm))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: %s", s[file].path,
                                "too many metrics (or out of memory)");
    m.name = gpuprof__an_tree_intern(g, v->ms + name);
    m.desc = gpuprof__an_tree_intern(g, v->ms + desc);
    g->m[g->nm] = m;
    *out = g->nm++;
    return GPUPROF_OK;
}

/* Strings and metrics of v into g, in the order the single-process run
 * interns them: each string where v made it, each metric's name and
 * description where v added the metric (when g lacks the metric). */
static gpuprof_status strings_merge(an_tree *g, const src *s, uint32_t ns,
                                    const tview *v, tmaps *mp)
{
    uint32_t n = 0;
    for (uint64_t o = 1; o < v->ssize; o += strlen(v->s + o) + 1)
        n++;
    mp->sfrom = malloc(((size_t)n + 1) * sizeof(uint32_t));
    mp->sto = malloc(((size_t)n + 1) * sizeof(uint32_t));
    mp->metric = malloc(((size_t)v->nm + 1) * sizeof(uint32_t));
    if (!mp->sfrom || !mp->sto || !mp->metric)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t o = 1;
    for (uint32_t mi = 0; o < v->ssize || mi < v->nm;) {
        const uint8_t *q = v->m + (size_t)mi * TB_METRIC;
        if (mi < v->nm && (o >= v->ssize || db_get32(q + 12) <= o)) {
            gpuprof_status st = metric_merge(g, s, ns, v, q, &mp->metric[mi++]);
            if (st != GPUPROF_OK)
                return st;
            continue;
        }
        mp->sfrom[mp->nstr] = (uint32_t)o;
        mp->sto[mp->nstr++] = gpuprof__an_tree_intern(g, v->s + o);
        o += strlen(v->s + o) + 1;
    }
    for (uint32_t mi = 0; mi < v->nm; mi++) { /* odd sums' counts */
        const uint8_t *q = v->m + (size_t)mi * TB_METRIC;
        uint32_t count = db_get32(q + 24);
        gmetric *m = &g->m[mp->metric[mi]];
        if (count > v->nm)
            return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
        if (count && !m->count && m->src == db_get32(q + 16))
            m->count = mp->metric[count - 1] + 1;
    }
    return g->nomem ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                    : GPUPROF_OK;
}

/* Tree v (a rank's, from pass 1) into g after what g holds, ids as the
 * single-process run gives them; its profiles appended when `add`; mp
 * says what v's ids are in g. */
static gpuprof_status tree_merge(an_tree *g, const src *s, uint32_t ns,
                                 const tview *v, tmaps *mp, bool add)
{
    gpuprof_status st = strings_merge(g, s, ns, v, mp);
    if (st == GPUPROF_OK &&
        !(mp->ctx = malloc(((size_t)v->nc + 1) * sizeof(uint32_t))))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t i = 0; st == GPUPROF_OK && i < v->nc; i++) {
        const uint8_t *q = v->c + (size_t)i * TB_CTX;
        uint32_t parent = db_get32(q);
        if (parent != UINT32_MAX && parent >= i)
            return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
        gctx k = {parent == UINT32_MAX ? UINT32_MAX : mp->ctx[parent],
                  (uint8_t)db_get32(q + 4), smap(mp, db_get32(q + 8)),
                  smap(mp, db_get32(q + 12)), db_get64(q + 16)};
        if ((mp->ctx[i] = gpuprof__an_tree_ctx(g, &k)) == UINT32_MAX)
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; st == GPUPROF_OK && add && i < v->np; i++) {
        const uint8_t *q = v->p + (size_t)i * TB_PROF;
        if (!GPUPROF_AN_GROW(g->p, g->np, g->capp))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        g->p[g->np++] = (gprof){db_get32(q),
                                db_get32(q + 4),
                                smap(mp, db_get32(q + 8)),
                                smap(mp, db_get32(q + 12)),
                                smap(mp, db_get32(q + 16)),
                                db_get32(q + 20),
                                db_get32(q + 24),
                                (int32_t)db_get32(q + 28),
                                db_get64(q + 32)};
    }
    for (uint32_t i = 0; st == GPUPROF_OK && add && i < v->nd; i++) {
        if (!GPUPROF_AN_GROW(g->d, g->nd, g->capd))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        g->d[g->nd++] = dev_rec(v->d + (size_t)i * TB_DEV, smap_cb, mp);
    }
    g->structured = g->structured || (v->structured & 1);
    g->gcct = g->gcct || (v->structured & 2);
    if (st == GPUPROF_OK && mp->bad)
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    return st;
}

/* The merged tree v becomes r's. */
static gpuprof_status tree_adopt(run *r, const tview *v)
{
    gpuprof__an_tree_free(&r->t);
    if (!(r->t.st = gpuprof__io_strtab_new()) ||
        !(r->t.m = calloc((size_t)v->nm + 1, sizeof(*r->t.m))) ||
        !(r->t.c = calloc((size_t)v->nc + 1, sizeof(*r->t.c))) ||
        !(r->t.p = calloc((size_t)v->np + 1, sizeof(*r->t.p))) ||
        !(r->t.d = calloc((size_t)v->nd + 1, sizeof(*r->t.d))))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint64_t o = 1; o < v->ssize; o += strlen(v->s + o) + 1)
        if (gpuprof__an_tree_intern(&r->t, v->s + o) != o)
            return r->t.nomem
                       ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                       : gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    for (uint32_t i = 0; i < v->nm; i++) {
        const uint8_t *q = v->m + (size_t)i * TB_METRIC;
        uint32_t how = db_get32(q + 8);
        r->t.m[i] = (gmetric){db_get32(q),
                              db_get32(q + 4),
                              (uint8_t)how,
                              (uint8_t)(how >> 8),
                              (uint8_t)(how >> 16),
                              (uint8_t)(how >> 24),
                              0,
                              db_get32(q + 16),
                              db_get32(q + 20),
                              db_get32(q + 24)};
    }
    r->t.nm = r->t.capm = v->nm;
    for (uint32_t i = 0; i < v->nc; i++) {
        const uint8_t *q = v->c + (size_t)i * TB_CTX;
        r->t.c[i] = (gctx){db_get32(q), (uint8_t)db_get32(q + 4),
                           db_get32(q + 8), db_get32(q + 12), db_get64(q + 16)};
    }
    r->t.nc = r->t.capc = v->nc;
    for (uint32_t i = 0; i < v->np; i++) {
        const uint8_t *q = v->p + (size_t)i * TB_PROF;
        r->t.p[i] = (gprof){
            db_get32(q),      db_get32(q + 4),           db_get32(q + 8),
            db_get32(q + 12), db_get32(q + 16),          db_get32(q + 20),
            db_get32(q + 24), (int32_t)db_get32(q + 28), db_get64(q + 32)};
    }
    r->t.np = r->t.capp = v->np;
    for (uint32_t i = 0; i < v->nd; i++)
        r->t.d[i] = dev_rec(v->d + (size_t)i * TB_DEV, NULL, NULL);
    r->t.nd = r->t.capd = v->nd;
    r->t.structured = v->structured & 1;
    r->t.gcct = (v->structured & 2) != 0;
    return gpuprof__an_tree_rehash(&r->t)
               ? GPUPROF_OK
               : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

/* This rank's files, profiles and frames in the merged tree's ids. */
static gpuprof_status tree_remap(run *r, tmaps *mp, const tview *own)
{
    for (uint32_t i = r->s_lo; i < r->s_hi; i++) {
        src *s = &r->s[i];
        for (uint32_t m = 0; m < s->nmetrics; m++)
            s->metric[m] = mp->metric[s->metric[m]];
        for (uint32_t n = 0; s->ctx && n < s->nodes; n++)
            s->ctx[n] = mp->ctx[s->ctx[n]];
        gpuprof__an_gcct_remap(&s->split, mp->ctx);
    }
    /* Profiles are in file order: this rank's start at its first file's. */
    uint32_t lo = 0, hi = r->t.np;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->t.p[mid].src < r->s_lo)
            lo = mid + 1;
        else
            hi = mid;
    }
    r->pr_lo = lo;
    r->pr_hi = lo + own->np;
    if (r->pr_hi > r->t.np || (own->np && r->t.p[lo].src != db_get32(own->p)))
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "profiles out of order");
    for (uint32_t i = r->s_lo; i < r->s_hi; i++)
        r->s[i].p0 += r->pr_lo;
    for (uint32_t i = 0; i < r->sx.nsf; i++)
        r->sx.sf[i].module = smap(mp, r->sx.sf[i].module);
    for (uint32_t i = 0; i < r->sx.nlvl; i++) {
        r->sx.lvl[i].fn = smap(mp, r->sx.lvl[i].fn);
        r->sx.lvl[i].module = smap(mp, r->sx.lvl[i].module);
        r->sx.lvl[i].file = smap(mp, r->sx.lvl[i].file);
    }
    if (mp->bad)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    if (r->sx.nsf && !gpuprof__an_frames_rehash(&r->sx))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

typedef struct merging { /* rank 0 merging the trees in rank order */
    an_tree g;
    const src *s; /* the files (for messages) */
    uint32_t ns;
    gpuprof_status st;
    int blame;
} merging;

static void merge_one(void *arg, int rank, const void *blob, uint64_t size)
{
    merging *m = arg;
    tview v;
    tmaps mp = {0};
    if (m->st != GPUPROF_OK)
        return;
    if (!tree_view(blob, size, &v))
        m->st = gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    else
        m->st = tree_merge(&m->g, m->s, m->ns, &v, &mp, true);
    if (m->st != GPUPROF_OK)
        m->blame = rank;
    tmaps_free(&mp);
}

/* Rank 0 merges the ranks' trees, gathered in rank order, into `all`.
 * Collective: the status the ranks agree on. */
static gpuprof_status gather_trees(run *r, const buf *own, buf *all)
{
    const gpuprof__an_coll *c = r->coll;
    merging m = {.s = r->s, .ns = r->ns, .blame = -1};
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (r->rank == 0 && (!(m.g.st = gpuprof__io_strtab_new()) ||
                         gpuprof__an_tree_ctx(&m.g, &root) != 0))
        m.st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (c->gather(c->ctx, own->d, own->n, merge_one, &m)) {
        gpuprof__an_tree_free(&m.g);
        return gpuprof__an_transport_fail();
    }
    if (r->rank == 0 && m.st == GPUPROF_OK) {
        tree_blob(&m.g, all);
        if (all->nomem)
            m.st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    gpuprof__an_tree_free(&m.g);
    r->blame = m.blame;
    gpuprof_status st = gpuprof__an_agree(r, m.st);
    r->blame = -1;
    return st;
}

/* The merged tree (blob) becomes this rank's; its own (`own`, from pass
 * 1) must be in it whole: its ids are mapped onto the merged ones. */
static gpuprof_status adopt_merged(run *r, const void *blob, uint64_t size,
                                   const buf *own)
{
    tview gv, ov;
    tmaps mp = {0};
    gpuprof_status st = GPUPROF_OK;
    if (!tree_view(blob, size, &gv) || !tree_view(own->d, own->n, &ov))
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    if (st == GPUPROF_OK)
        st = tree_adopt(r, &gv);
    uint32_t nc = r->t.nc, nm = r->t.nm;
    uint64_t ssize = 0, after = 0;
    if (r->t.st)
        gpuprof__io_strtab_data(r->t.st, &ssize);
    if (st == GPUPROF_OK)
        st = tree_merge(&r->t, r->s, r->ns, &ov, &mp, false);
    if (r->t.st)
        gpuprof__io_strtab_data(r->t.st, &after);
    if (st == GPUPROF_OK && (r->t.nc != nc || r->t.nm != nm || after != ssize))
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL,
                              "the merged tree lacks this rank's");
    if (st == GPUPROF_OK)
        st = tree_remap(r, &mp, &ov);
    tmaps_free(&mp);
    return st;
}

/* After pass 1 (status st): the merged tree on every rank, in the ids the
 * single-process run gives, each rank's own ids mapped onto it. */
gpuprof_status gpuprof__an_merge(run *r, gpuprof_status st)
{
    const gpuprof__an_coll *c = r->coll;
    buf own = {0}, all = {0};
    if (st == GPUPROF_OK)
        tree_blob(&r->t, &own);
    if (st == GPUPROF_OK && own.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if ((st = gpuprof__an_agree(r, st)) == GPUPROF_OK)
        st = gather_trees(r, &own, &all);
    void *blob = all.d;
    uint64_t size = all.n;
    if (st == GPUPROF_OK && c->bcast(c->ctx, 0, &blob, &size))
        st = gpuprof__an_transport_fail(), blob = all.d;
    if (st != GPUPROF_OK) {
        free(all.d);
        free(own.d);
        return st;
    }
    st = adopt_merged(r, blob, size, &own);
    if (blob != all.d)
        free(blob);
    free(all.d);
    free(own.d);
    return gpuprof__an_agree(r, st);
}
