/*
 * an_agg.c - aggregation of measurement directories into an analysis
 * database (seed 000 §6.1-6.2; an_db.h; doc/FORMATS.md).
 *
 * Phases, each a pass over arrays that depend only on the inputs, so the
 * database is the same bytes whatever the thread count:
 *   1. load (parallel over files): every *.gpuprof of every input
 *      directory, decoded and validated (a damaged file stops the run with
 *      a message naming it; nothing is written);
 *   2. unify (serial, input order): metrics by name; every thread's nodes
 *      into one calling context tree keyed by (parent, kind, name, aux,
 *      key), module indices replaced by paths, so contexts mean the same in
 *      every process and run (several runs merge);
 *   3. values (parallel over profiles = threads): each node's own values
 *      (exclusive) and its subtree's (inclusive, combined by the metric's
 *      rule), as sparse rows sorted by context and metric;
 *   4. transpose (parallel: values counted by slices of profiles, then
 *      ranges of contexts filled and ordered by metric): the
 *      context-major planes;
 *   5. write (planes encoded in parallel, with the statistics over
 *      profiles): stats.db, cct.db, profile.db, then meta.db, each
 *      replaced atomically (doc/ANALYSIS.md).
 *
 * Statistics count only the profiles where a value is non-zero (the data
 * are sparse); `count` says how many, so the mean over all P profiles is
 * sum / P.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "an_db.h"
#include "an_internal.h"

struct gpuprof_an_analysis {
    char **inputs;
    uint32_t ninputs;
    unsigned threads;
    char *output;
    gpuprof_an_progress_fn progress;
    void *user;
};

/* ---- the pieces of a run ---------------------------------------------- */
typedef struct src { /* one profile file */
    char *path;
    gpuprof__io_profile *io;
    gpuprof_status st;
    char *err;
    uint32_t *metric; /* local metric -> global base metric */
    uint32_t *ctx;    /* absolute node -> context */
} src;

typedef struct gmetric {
    uint32_t name, desc; /* strtab offsets */
    uint8_t unit, combine, kind, type;
} gmetric;

typedef struct gctx {
    uint32_t parent;
    uint8_t kind;
    uint32_t name, aux;
    uint64_t key;
} gctx;

typedef struct gprof { /* one thread of one file */
    uint32_t src, thread;
    uint32_t host, tname, file; /* strtab offsets */
} gprof;

typedef struct entry { /* one non-zero value of a profile */
    uint32_t ctx;
    uint16_t metric; /* database metric: 2 * base + variant */
    double v;
} entry;

typedef struct row {
    entry *e;
    uint32_t n;
    uint32_t pairs; /* distinct contexts */
} row;

typedef struct cms_val {
    uint16_t metric;
    uint32_t profile;
    double v;
} cms_val;

typedef struct run {
    gpuprof_an_analysis *a;
    src *s;
    uint32_t ns;
    gpuprof__io_strtab *st;
    gmetric *m;
    uint32_t nm, capm;
    gctx *c;
    uint32_t nc, capc;
    uint32_t *slot, slot_mask; /* context hash: index + 1 */
    gprof *p;
    uint32_t np, capp;
    row *rows;
    _Atomic int nomem;
    /* transpose */
    uint64_t *cstart; /* per context: first CMS value; [nc] = total */
    cms_val *cv;
    size_t cv_size;
    uint32_t *cpairs; /* per context: distinct metrics */
    uint32_t *chunk;  /* context ranges of the parallel fill: [i, i+1) */
    uint32_t nchunks;
    uint32_t *slice_count; /* per slice of profiles: values per context */
    uint32_t nslices;
    /* files being encoded */
    uint8_t *pms, *cms, *sts;
    uint64_t *poff, *coff, *soff; /* plane offsets */
} run;

#define MAX_BASE_METRICS 32767u /* database metric ids are u16 */

/* ---- big buffers ------------------------------------------------------------
 * The output files and the transposed values are megabytes written once:
 * mapped with their pages populated in one call, not faulted in one by one
 * by the threads filling them (on a VM a fault costs microseconds, and the
 * faults of threads in one process contend). Zero-filled. */
static void *big_alloc(size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void big_free(void *p, size_t size)
{
    if (p)
        munmap(p, size ? size : 1);
}

/* ---- a small thread pool ------------------------------------------------ */
typedef void (*task_fn)(run *r, uint32_t i);
typedef struct pool {
    run *r;
    task_fn fn;
    uint32_t n;
    _Atomic uint32_t next;
} pool;

static void *pool_worker(void *arg)
{
    pool *p = arg;
    for (uint32_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        p->fn(p->r, i);
    return NULL;
}

/* fn(r, i) for i in [0, n), on up to r->a->threads threads (the caller is
 * one of them). */
static void parallel_for(run *r, uint32_t n, task_fn fn)
{
    pool p = {r, fn, n, 0};
    unsigned t = r->a->threads > 1 ? r->a->threads - 1 : 0;
    if (t > n)
        t = n;
    pthread_t *th = t ? calloc(t, sizeof(*th)) : NULL;
    unsigned started = 0;
    for (unsigned i = 0; th && i < t; i++)
        if (pthread_create(&th[i], NULL, pool_worker, &p) == 0)
            started++;
        else
            break;
    pool_worker(&p);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
}

static void progress(run *r, const char *phase, uint64_t done, uint64_t total)
{
    if (r->a->progress)
        r->a->progress(phase, done, total, r->a->user);
}

/* ---- phase 1: load ------------------------------------------------------- */
static void load_one(run *r, uint32_t i)
{
    src *s = &r->s[i];
    s->st = gpuprof__an_load(s->path, &s->io);
    if (s->st != GPUPROF_OK)
        s->err = strdup(gpuprof_an_last_error());
}

/* ---- phase 2: unify ------------------------------------------------------ */
static uint32_t intern(run *r, const char *s)
{
    uint32_t o = gpuprof__io_strtab_add(r->st, s ? s : "");
    if (o == UINT32_MAX)
        r->nomem = 1;
    return o == UINT32_MAX ? 0 : o;
}

#define GROW(arr, n, cap)                                                      \
    ((n) < (cap) || grow((void **)&(arr), &(cap), sizeof(*(arr))))

static bool grow(void **arr, uint32_t *cap, size_t el)
{
    uint32_t c = *cap ? *cap * 2 : 64;
    void *n = realloc(*arr, (size_t)c * el);
    if (!n)
        return false;
    *arr = n;
    *cap = c;
    return true;
}

static uint32_t metric_unify(run *r, const gpuprof__io_profile *p, uint32_t i,
                             char *why, size_t wsize)
{
    const gpuprof__io_metric *lm = &p->metrics[i];
    const char *name = gpuprof__io_str(p, lm->name);
    for (uint32_t g = 0; g < r->nm; g++) {
        uint64_t size;
        if (strcmp(gpuprof__io_strtab_data(r->st, &size) + r->m[g].name, name))
            continue;
        if (r->m[g].unit != lm->unit || r->m[g].combine != lm->combine ||
            r->m[g].type != lm->type) {
            snprintf(why, wsize, "metric %s: unit, type or combination "
                     "differs from an earlier profile", name);
            return UINT32_MAX;
        }
        return g;
    }
    if (r->nm == MAX_BASE_METRICS || !GROW(r->m, r->nm, r->capm)) {
        snprintf(why, wsize, "too many metrics (or out of memory)");
        return UINT32_MAX;
    }
    r->m[r->nm] = (gmetric){intern(r, name),
                            intern(r, gpuprof__io_str(p, lm->description)),
                            lm->unit, lm->combine, lm->kind, lm->type};
    return r->nm++;
}

static uint64_t ctx_hash(const gctx *c)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint64_t w[4] = {c->parent, (uint64_t)c->kind << 32 | c->name, c->aux,
                     c->key};
    for (int i = 0; i < 4; i++) {
        h ^= w[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static bool ctx_rehash(run *r)
{
    uint32_t size = r->slot_mask ? (r->slot_mask + 1) * 2 : 1024;
    uint32_t *s = calloc(size, sizeof(*s));
    if (!s)
        return false;
    for (uint32_t i = 0; i < r->nc; i++) {
        uint32_t h = (uint32_t)ctx_hash(&r->c[i]) & (size - 1);
        while (s[h])
            h = (h + 1) & (size - 1);
        s[h] = i + 1;
    }
    free(r->slot);
    r->slot = s;
    r->slot_mask = size - 1;
    return true;
}

/* The context of `k`, added when new; UINT32_MAX when out of memory. */
static uint32_t ctx_get(run *r, const gctx *k)
{
    if ((r->nc + 1) * 2 > r->slot_mask + 1 && !ctx_rehash(r))
        return UINT32_MAX;
    uint32_t h = (uint32_t)ctx_hash(k) & r->slot_mask;
    for (; r->slot[h]; h = (h + 1) & r->slot_mask) {
        const gctx *c = &r->c[r->slot[h] - 1];
        if (c->parent == k->parent && c->kind == k->kind &&
            c->name == k->name && c->aux == k->aux && c->key == k->key)
            return r->slot[h] - 1;
    }
    if (!GROW(r->c, r->nc, r->capc))
        return UINT32_MAX;
    r->c[r->nc] = *k;
    r->slot[h] = r->nc + 1;
    return r->nc++;
}

/* The key of node i of profile p beneath context `parent`. */
static gctx node_key(run *r, const gpuprof__io_profile *p,
                     const gpuprof__io_node *n, uint32_t parent)
{
    gctx k = {parent, n->kind, 0, 0, 0};
    switch (n->kind) {
    case GPUPROF_IO_NODE_REGION:
        k.name = intern(r, gpuprof__io_str(p, n->key_a));
        break;
    case GPUPROF_IO_NODE_FRAME:
    case GPUPROF_IO_NODE_GPU_INSTR:
        k.name = intern(r, gpuprof__io_str(p, p->modules[n->key_a].path));
        k.key = n->key_b;
        break;
    case GPUPROF_IO_NODE_GPU_OP:
        k.key = n->key_a;
        break;
    case GPUPROF_IO_NODE_KERNEL:
        k.name = intern(r, gpuprof__io_str(p, n->key_a));
        if (n->key_b < p->module_count)
            k.aux = intern(r, gpuprof__io_str(p, p->modules[n->key_b].path));
        break;
    default:
        break;
    }
    return k;
}

static gpuprof_status unify(run *r)
{
    char why[256];
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (ctx_get(r, &root) != 0)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < r->ns; i++) {
        src *s = &r->s[i];
        const gpuprof__io_profile *p = s->io;
        s->metric = calloc(p->metric_count ? p->metric_count : 1,
                           sizeof(*s->metric));
        s->ctx = calloc(p->node_count ? p->node_count : 1, sizeof(*s->ctx));
        if (!s->metric || !s->ctx)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        for (uint32_t m = 0; m < p->metric_count; m++)
            if ((s->metric[m] = metric_unify(r, p, m, why, sizeof(why))) ==
                UINT32_MAX)
                return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: %s", s->path,
                                        why);
        uint32_t host = intern(r, gpuprof__io_str(p, p->host));
        uint32_t file = intern(r, s->path);
        for (uint32_t t = 0; t < p->thread_count; t++) {
            const gpuprof__io_thread *th = &p->threads[t];
            if (!GROW(r->p, r->np, r->capp))
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            r->p[r->np++] = (gprof){i, t, host,
                                    intern(r, gpuprof__io_str(p, th->name)),
                                    file};
            s->ctx[th->first_node] = 0; /* every root is the one root */
            for (uint32_t n = 1; n < th->node_count; n++) {
                const gpuprof__io_node *nd = &p->nodes[th->first_node + n];
                gctx k = node_key(r, p, nd, s->ctx[th->first_node +
                                                   nd->parent]);
                uint32_t c = ctx_get(r, &k);
                if (c == UINT32_MAX)
                    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
                s->ctx[th->first_node + n] = c;
            }
        }
        if (r->nomem)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    return GPUPROF_OK;
}

/* ---- phase 3: per-profile values ----------------------------------------- */
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

static void values_one(run *r, uint32_t pi)
{
    const gprof *gp = &r->p[pi];
    const src *s = &r->s[gp->src];
    const gpuprof__io_profile *p = s->io;
    const gpuprof__io_thread *th = &p->threads[gp->thread];
    uint32_t first = th->first_node, nn = th->node_count;
    double *inc = calloc(nn, sizeof(*inc));
    uint8_t *used = calloc(p->metric_count ? p->metric_count : 1, 1);
    uint32_t cap = 0, n = 0;
    entry *e = NULL;
    if (!inc || !used)
        goto nomem;
    for (uint32_t i = first; i < first + nn; i++)
        for (uint32_t v = 0; v < p->nodes[i].value_count; v++)
            used[p->values[p->nodes[i].first_value + v].metric] = 1;
    /* One metric at a time: exclusive values as stored, inclusive by a
     * reverse pass (parents precede children). */
    for (uint32_t m = 0; m < p->metric_count; m++) {
        if (!used[m])
            continue;
        const gmetric *gm = &r->m[s->metric[m]];
        memset(inc, 0, nn * sizeof(*inc));
        for (uint32_t i = 0; i < nn; i++) {
            const gpuprof__io_node *nd = &p->nodes[first + i];
            for (uint32_t v = 0; v < nd->value_count; v++) {
                const gpuprof__io_value *val = &p->values[nd->first_value + v];
                if (val->metric != m)
                    continue;
                double d = as_double(gm, val->bits);
                inc[i] = d;
                if (d != 0) {
                    if (n == cap && !grow((void **)&e, &cap, sizeof(*e)))
                        goto nomem;
                    e[n++] = (entry){s->ctx[first + i],
                                     (uint16_t)(2 * s->metric[m] +
                                                DB_EXCLUSIVE),
                                     d};
                }
            }
        }
        for (uint32_t i = nn - 1; i > 0; i--) {
            uint32_t par = p->nodes[first + i].parent;
            inc[par] = combine(gm->combine, inc[par], inc[i]);
        }
        for (uint32_t i = 0; i < nn; i++) {
            if (inc[i] == 0)
                continue;
            if (n == cap && !grow((void **)&e, &cap, sizeof(*e)))
                goto nomem;
            e[n++] = (entry){s->ctx[first + i],
                             (uint16_t)(2 * s->metric[m] + DB_INCLUSIVE),
                             inc[i]};
        }
    }
    /* Sorted by (context, metric); two nodes of one thread can be one
     * context (a module loaded twice at one path): their values combine. */
    if (!sort_entries(e, n))
        goto nomem;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (k && e[k - 1].ctx == e[i].ctx && e[k - 1].metric == e[i].metric)
            e[k - 1].v = combine(r->m[e[i].metric / 2].combine, e[k - 1].v,
                                 e[i].v);
        else
            e[k++] = e[i];
    }
    uint32_t pairs = 0;
    for (uint32_t i = 0; i < k; i++)
        pairs += !i || e[i].ctx != e[i - 1].ctx;
    r->rows[pi] = (row){e, k, pairs};
    free(inc);
    free(used);
    return;
nomem:
    r->nomem = 1;
    free(e);
    free(inc);
    free(used);
}

/* ---- phase 4: transpose and statistics ------------------------------------ */
static int by_u16(const void *x, const void *y)
{
    uint16_t a = *(const uint16_t *)x, b = *(const uint16_t *)y;
    return (a > b) - (a < b);
}

/* First entry of a row whose context is >= c. */
static uint32_t row_lower(const row *w, uint32_t c)
{
    uint32_t lo = 0, hi = w->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->e[mid].ctx < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One range of contexts: every profile's entries for it, in profile order
 * (rows are sorted by context), then each context sorted by metric. */
static void fill_chunk(run *r, uint32_t k)
{
    uint32_t lo = r->chunk[k], hi = r->chunk[k + 1];
    if (lo == hi)
        return;
    uint64_t *fill = malloc((size_t)(hi - lo) * sizeof(*fill));
    uint32_t *mcount = calloc(2 * (size_t)r->nm + 1, sizeof(*mcount));
    uint16_t *ids = malloc((2 * (size_t)r->nm + 1) * sizeof(*ids));
    cms_val *tmp = NULL;
    uint64_t most = 0;
    for (uint32_t c = lo; c < hi; c++)
        if (r->cstart[c + 1] - r->cstart[c] > most)
            most = r->cstart[c + 1] - r->cstart[c];
    if (fill && mcount && !(tmp = malloc((most ? most : 1) * sizeof(*tmp))))
        free(fill), fill = NULL;
    if (!fill || !mcount || !ids) {
        free(fill);
        free(mcount);
        free(ids);
        r->nomem = 1;
        return;
    }
    memcpy(fill, r->cstart + lo, (size_t)(hi - lo) * sizeof(*fill));
    for (uint32_t p = 0; p < r->np; p++) {
        const row *w = &r->rows[p];
        for (uint32_t i = row_lower(w, lo); i < w->n && w->e[i].ctx < hi; i++)
            r->cv[fill[w->e[i].ctx - lo]++] =
                (cms_val){w->e[i].metric, p, w->e[i].v};
    }
    free(fill);
    /* By metric, stably (a counting sort over the metrics present): each
     * metric's values stay in profile order. */
    for (uint32_t c = lo; c < hi; c++) {
        uint64_t n = r->cstart[c + 1] - r->cstart[c];
        cms_val *v = r->cv + r->cstart[c];
        uint32_t pairs = 0;
        for (uint64_t i = 0; i < n; i++)
            if (mcount[v[i].metric]++ == 0)
                ids[pairs++] = v[i].metric;
        if (pairs <= 32) {
            for (uint32_t x = 1; x < pairs; x++) /* insertion sort */
                for (uint32_t y = x; y && ids[y - 1] > ids[y]; y--) {
                    uint16_t t = ids[y];
                    ids[y] = ids[y - 1];
                    ids[y - 1] = t;
                }
        } else {
            qsort(ids, pairs, sizeof(*ids), by_u16);
        }
        uint32_t sum = 0;
        for (uint32_t x = 0; x < pairs; x++) {
            uint32_t cnt = mcount[ids[x]];
            mcount[ids[x]] = sum;
            sum += cnt;
        }
        for (uint64_t i = 0; i < n; i++)
            tmp[mcount[v[i].metric]++] = v[i];
        memcpy(v, tmp, n * sizeof(*v));
        for (uint32_t x = 0; x < pairs; x++) /* clean for the next one */
            mcount[ids[x]] = 0;
        r->cpairs[c] = pairs;
    }
    free(ids);
    free(tmp);
    free(mcount);
}

static void count_slice(run *r, uint32_t k)
{
    uint32_t *cnt = r->slice_count + (size_t)k * r->nc;
    for (uint32_t p = k; p < r->np; p += r->nslices)
        for (uint32_t i = 0; i < r->rows[p].n; i++)
            cnt[r->rows[p].e[i].ctx]++;
}

static gpuprof_status transpose(run *r)
{
    r->cstart = calloc((size_t)r->nc + 1, sizeof(*r->cstart));
    r->cpairs = calloc((size_t)r->nc + 1, sizeof(*r->cpairs));
    r->nchunks = r->a->threads > 1 ? 8 * r->a->threads : 1;
    r->chunk = calloc((size_t)r->nchunks + 1, sizeof(*r->chunk));
    if (!r->cstart || !r->cpairs || !r->chunk)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    /* Values per context: each slice of profiles counts into its own array,
     * then the arrays add up (in order: the sums do not depend on it). */
    r->nslices = r->a->threads < r->np ? r->a->threads : (r->np ? r->np : 1);
    r->slice_count = calloc((size_t)r->nslices * r->nc, sizeof(uint32_t));
    if (!r->slice_count)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->nslices, count_slice);
    for (uint32_t k = 0; k < r->nslices; k++)
        for (uint32_t c = 0; c < r->nc; c++)
            r->cstart[c + 1] += r->slice_count[(size_t)k * r->nc + c];
    free(r->slice_count);
    r->slice_count = NULL;
    for (uint32_t c = 0; c < r->nc; c++)
        r->cstart[c + 1] += r->cstart[c];
    uint64_t total = r->cstart[r->nc];
    /* Chunks of about equal numbers of values. */
    for (uint32_t k = 1, c = 0; k < r->nchunks; k++) {
        uint64_t want = total * k / r->nchunks;
        while (c < r->nc && r->cstart[c] < want)
            c++;
        r->chunk[k] = c;
    }
    r->chunk[r->nchunks] = r->nc;
    r->cv_size = total * sizeof(*r->cv);
    r->cv = big_alloc(r->cv_size);
    if (!r->cv)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->nchunks, fill_chunk);
    if (r->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

/* ---- phase 5: the files ----------------------------------------------------- */
typedef struct buf {
    uint8_t *d;
    size_t n, cap;
    bool nomem;
} buf;

static uint8_t *reserve(buf *b, size_t n)
{
    if (b->nomem)
        return NULL;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *d = realloc(b->d, cap);
        if (!d) {
            b->nomem = true;
            return NULL;
        }
        b->d = d;
        b->cap = cap;
    }
    uint8_t *p = b->d + b->n;
    memset(p, 0, n);
    b->n += n;
    return p;
}

static void put_f64(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    db_put64(p, bits);
}

static void header(buf *b, const char *magic, uint32_t a, uint32_t c)
{
    uint8_t *h = b->d;
    memcpy(h, magic, 8);
    db_put16(h + 8, DB_MAJOR);
    db_put16(h + 10, DB_MINOR);
    db_put32(h + 12, gpuprof__io_crc32c(0, b->d + DB_HEADER,
                                        b->n - DB_HEADER));
    db_put64(h + 16, b->n - DB_HEADER);
    db_put32(h + 24, a);
    db_put32(h + 28, c);
}

static gpuprof_status write_buf(run *r, const char *name, buf *b)
{
    if (b->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    char path[4200], err[256];
    snprintf(path, sizeof(path), "%s/%s", r->a->output, name);
    if (gpuprof__io_write_replace(path, b->d, b->n, false, err, sizeof(err)))
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", path, err);
    return GPUPROF_OK;
}

static gpuprof_status write_meta(run *r)
{
    buf b = {0};
    uint64_t ssize;
    const char *sdata = gpuprof__io_strtab_data(r->st, &ssize);
    uint32_t nmetrics = 2 * r->nm;
    reserve(&b, DB_HEADER);
    uint8_t *q = reserve(&b, 16);
    if (q) {
        db_put32(q, (uint32_t)ssize);
        db_put32(q + 4, nmetrics);
        db_put32(q + 8, r->np);
        db_put32(q + 12, r->nc);
    }
    if ((q = reserve(&b, ssize)))
        memcpy(q, sdata, ssize);
    for (uint32_t m = 0; m < nmetrics; m++) {
        const gmetric *g = &r->m[m / 2];
        if (!(q = reserve(&b, DB_METRIC_REC)))
            break;
        db_put32(q, g->name);
        db_put32(q + 4, g->desc);
        q[8] = g->unit;
        q[9] = g->combine;
        q[10] = g->kind;
        q[11] = (uint8_t)(m % 2);
    }
    for (uint32_t i = 0; i < r->np; i++) {
        const gprof *p = &r->p[i];
        const gpuprof__io_profile *io = r->s[p->src].io;
        const gpuprof__io_thread *th = &io->threads[p->thread];
        if (!(q = reserve(&b, DB_PROFILE_REC)))
            break;
        db_put32(q, p->host);
        db_put32(q + 4, p->tname);
        db_put32(q + 8, p->file);
        db_put32(q + 12, io->pid);
        db_put32(q + 16, (uint32_t)io->rank);
        db_put32(q + 20, th->flags);
        db_put64(q + 24, th->tid);
    }
    for (uint32_t i = 0; i < r->nc; i++) {
        const gctx *c = &r->c[i];
        if (!(q = reserve(&b, DB_CONTEXT_REC)))
            break;
        db_put32(q, c->parent);
        q[4] = c->kind;
        db_put32(q + 8, c->name);
        db_put32(q + 12, c->aux);
        db_put64(q + 16, c->key);
    }
    if (!b.nomem)
        header(&b, DB_META_MAGIC, r->nc, r->np);
    gpuprof_status st = write_buf(r, "meta.db", &b);
    free(b.d);
    return st;
}

/* Plane offsets: the table after the header, then the planes in order. */
static uint8_t *planes_alloc(uint32_t count, const uint64_t *size,
                             uint64_t **off, size_t *total)
{
    *off = malloc(((size_t)count + 1) * sizeof(**off));
    if (!*off)
        return NULL;
    uint64_t at = DB_HEADER + (uint64_t)count * DB_PLANE_REF;
    for (uint32_t i = 0; i < count; i++) {
        (*off)[i] = at;
        at += size[i];
    }
    (*off)[count] = at;
    *total = at;
    return big_alloc(at);
}

static void pms_plane(run *r, uint32_t p)
{
    const row *w = &r->rows[p];
    uint8_t *ref = r->pms + DB_HEADER + (size_t)p * DB_PLANE_REF;
    db_put64(ref, r->poff[p]);
    db_put32(ref + 8, w->pairs);
    db_put32(ref + 12, w->n);
    uint8_t *q = r->pms + r->poff[p];
    uint8_t *val = q + (size_t)w->pairs * DB_PMS_PAIR;
    for (uint32_t i = 0; i < w->n; i++) {
        if (!i || w->e[i].ctx != w->e[i - 1].ctx) {
            db_put32(q, w->e[i].ctx);
            db_put32(q + 4, i);
            q += DB_PMS_PAIR;
        }
        db_put16(val, w->e[i].metric);
        put_f64(val + 2, w->e[i].v);
        val += DB_PMS_VALUE;
    }
}

static gpuprof_status write_pms(run *r)
{
    uint64_t *size = malloc(((size_t)r->np + 1) * sizeof(*size));
    buf b = {0};
    if (size) {
        for (uint32_t p = 0; p < r->np; p++)
            size[p] = (uint64_t)r->rows[p].pairs * DB_PMS_PAIR +
                      (uint64_t)r->rows[p].n * DB_PMS_VALUE;
        b.d = r->pms = planes_alloc(r->np, size, &r->poff, &b.n);
    }
    free(size);
    if (!b.d)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->np, pms_plane);
    header(&b, DB_PMS_MAGIC, r->np, r->nc);
    gpuprof_status st = write_buf(r, "profile.db", &b);
    big_free(b.d, b.n);
    r->pms = NULL;
    return st;
}

/* A context's cct.db plane and stats.db records: runs of one metric. */
static void cms_plane(run *r, uint32_t c)
{
    const cms_val *v = r->cv + r->cstart[c];
    uint32_t n = (uint32_t)(r->cstart[c + 1] - r->cstart[c]);
    uint32_t pairs = r->cpairs[c];
    uint8_t *ref = r->cms + DB_HEADER + (size_t)c * DB_PLANE_REF;
    db_put64(ref, r->coff[c]);
    db_put32(ref + 8, pairs);
    db_put32(ref + 12, n);
    ref = r->sts + DB_HEADER + (size_t)c * DB_PLANE_REF;
    db_put64(ref, r->soff[c]);
    db_put32(ref + 8, pairs);
    uint8_t *q = r->cms + r->coff[c], *sq = r->sts + r->soff[c];
    uint8_t *val = q + (size_t)pairs * DB_CMS_PAIR;
    for (uint32_t i = 0, j; i < n; i = j) {
        double sum = 0, mn = v[i].v, mx = v[i].v, var = 0;
        for (j = i; j < n && v[j].metric == v[i].metric; j++) {
            db_put32(val, v[j].profile);
            put_f64(val + 4, v[j].v);
            val += DB_CMS_VALUE;
            sum += v[j].v;
            mn = v[j].v < mn ? v[j].v : mn;
            mx = v[j].v > mx ? v[j].v : mx;
        }
        db_put16(q, v[i].metric);
        db_put32(q + 4, i);
        q += DB_CMS_PAIR;
        /* Statistics over the j - i profiles with a value. */
        double mean = sum / (j - i);
        for (uint32_t k = i; k < j; k++)
            var += (v[k].v - mean) * (v[k].v - mean);
        double sd = sqrt(var / (j - i));
        db_put16(sq, v[i].metric);
        db_put32(sq + 4, j - i);
        put_f64(sq + 8, sum);
        put_f64(sq + 16, mn);
        put_f64(sq + 24, mean);
        put_f64(sq + 32, mx);
        put_f64(sq + 40, sd);
        put_f64(sq + 48, mean != 0 ? sd / mean : 0);
        sq += DB_STATS_REC;
    }
}

static gpuprof_status write_cms_stats(run *r)
{
    uint64_t *size = malloc(((size_t)r->nc + 1) * sizeof(*size));
    uint64_t *ssize = malloc(((size_t)r->nc + 1) * sizeof(*ssize));
    buf b = {0}, s = {0};
    if (size && ssize) {
        for (uint32_t c = 0; c < r->nc; c++) {
            size[c] = (uint64_t)r->cpairs[c] * DB_CMS_PAIR +
                      (r->cstart[c + 1] - r->cstart[c]) * DB_CMS_VALUE;
            ssize[c] = (uint64_t)r->cpairs[c] * DB_STATS_REC;
        }
        b.d = r->cms = planes_alloc(r->nc, size, &r->coff, &b.n);
        s.d = r->sts = planes_alloc(r->nc, ssize, &r->soff, &s.n);
    }
    free(size);
    free(ssize);
    gpuprof_status st = GPUPROF_OK;
    if (!b.d || !s.d)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        parallel_for(r, r->nc, cms_plane);
        header(&b, DB_CMS_MAGIC, r->nc, r->np);
        header(&s, DB_STATS_MAGIC, r->nc, 2 * r->nm);
        st = write_buf(r, "stats.db", &s);
    }
    if (st == GPUPROF_OK)
        st = write_buf(r, "cct.db", &b);
    big_free(b.d, b.n);
    big_free(s.d, s.n);
    r->cms = r->sts = NULL;
    return st;
}

/* ---- the public API ------------------------------------------------------- */
GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_new(gpuprof_an_analysis **out)
{
    if (!out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    (*out)->threads = 1;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_add_input(gpuprof_an_analysis *a, const char *dir)
{
    if (!a || !dir)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    char **n = realloc(a->inputs, (a->ninputs + 1) * sizeof(*n));
    if (!n)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    a->inputs = n;
    if (!(n[a->ninputs] = strdup(dir)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    a->ninputs++;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_threads(gpuprof_an_analysis *a, unsigned threads)
{
    if (!a || threads == 0 || threads > 1024)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "threads must be 1..1024");
    a->threads = threads;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_output(gpuprof_an_analysis *a, const char *db_dir)
{
    if (!a || !db_dir || !*db_dir)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "no output directory");
    char *d = strdup(db_dir);
    if (!d)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    free(a->output);
    a->output = d;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_progress(gpuprof_an_analysis *a,
                                 gpuprof_an_progress_fn fn, void *user)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->progress = fn;
    a->user = user;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_analysis_free(gpuprof_an_analysis *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->ninputs; i++)
        free(a->inputs[i]);
    free(a->inputs);
    free(a->output);
    free(a);
}

static gpuprof_status collect_inputs(run *r)
{
    for (uint32_t d = 0; d < r->a->ninputs; d++) {
        uint32_t n = 0;
        gpuprof_status st;
        char **files = gpuprof__an_list_dir(r->a->inputs[d], &n, &st);
        if (!files)
            return st;
        src *s = realloc(r->s, (r->ns + n + 1) * sizeof(*s));
        if (!s) {
            for (uint32_t i = 0; i < n; i++)
                free(files[i]);
            free(files);
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        }
        r->s = s;
        for (uint32_t i = 0; i < n; i++)
            r->s[r->ns++] = (src){.path = files[i]};
        free(files);
    }
    if (!r->ns)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "no profiles (*.gpuprof) in the inputs");
    return GPUPROF_OK;
}

static void run_free(run *r)
{
    for (uint32_t i = 0; i < r->ns; i++) {
        free(r->s[i].path);
        free(r->s[i].err);
        free(r->s[i].metric);
        free(r->s[i].ctx);
        if (r->s[i].io)
            gpuprof__io_profile_free(r->s[i].io);
    }
    free(r->s);
    for (uint32_t p = 0; r->rows && p < r->np; p++)
        free(r->rows[p].e);
    free(r->rows);
    free(r->m);
    free(r->c);
    free(r->slot);
    free(r->p);
    free(r->cstart);
    big_free(r->cv, r->cv_size);
    free(r->cpairs);
    free(r->chunk);
    free(r->poff);
    free(r->coff);
    free(r->soff);
    if (r->st)
        gpuprof__io_strtab_free(r->st);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_run(gpuprof_an_analysis *a)
{
    if (!a || !a->ninputs || !a->output)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "an analysis needs inputs and an output");
    run r = {.a = a};
    gpuprof_status st = collect_inputs(&r);
    if (st == GPUPROF_OK && !(r.st = gpuprof__io_strtab_new()))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        progress(&r, "load", 0, r.ns);
        parallel_for(&r, r.ns, load_one);
        for (uint32_t i = 0; i < r.ns && st == GPUPROF_OK; i++)
            if (r.s[i].st != GPUPROF_OK) /* the first damaged file, in order */
                st = gpuprof__an_fail(r.s[i].st, "%s",
                                      r.s[i].err ? r.s[i].err : r.s[i].path);
        progress(&r, "load", r.ns, r.ns);
    }
    if (st == GPUPROF_OK) {
        progress(&r, "unify", 0, r.ns);
        st = unify(&r);
        progress(&r, "unify", r.ns, r.ns);
    }
    if (st == GPUPROF_OK && !(r.rows = calloc(r.np ? r.np : 1,
                                              sizeof(*r.rows))))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        progress(&r, "values", 0, r.np);
        parallel_for(&r, r.np, values_one);
        if (r.nomem)
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        progress(&r, "values", r.np, r.np);
    }
    if (st == GPUPROF_OK) {
        progress(&r, "transpose", 0, r.nc);
        st = transpose(&r);
        progress(&r, "transpose", r.nc, r.nc);
    }
    if (st == GPUPROF_OK && mkdir(a->output, 0755) != 0 && errno != EEXIST)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s",
                              a->output, strerror(errno));
    if (st == GPUPROF_OK) {
        progress(&r, "write", 0, 4);
        st = write_cms_stats(&r);
        if (st == GPUPROF_OK)
            st = write_pms(&r);
        if (st == GPUPROF_OK) /* last: a reader checks the others agree */
            st = write_meta(&r);
        progress(&r, "write", 4, 4);
    }
    run_free(&r);
    return st;
}
