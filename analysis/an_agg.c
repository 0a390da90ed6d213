/*
 * an_agg.c - aggregation of measurement directories into an analysis
 * database (seed 000 §6.1-6.2; an_db.h; doc/FORMATS.md).
 *
 * Three passes, each over arrays that depend only on the inputs, so the
 * database is the same bytes whatever the thread count or memory budget:
 *   1. load and unify (files read in parallel, unified serially in input
 *      order): metrics by name; every thread's nodes into one calling
 *      context tree keyed by (parent, kind, name, aux, key), module indices
 *      replaced by paths, so contexts mean the same in every process and
 *      run (several runs merge). A damaged file stops the run with a
 *      message naming it; nothing is written;
 *   2. values (parallel over profiles = threads): each node's own values
 *      (exclusive) and its subtree's (inclusive, combined by the metric's
 *      rule), as sparse rows sorted by context and metric, encoded as the
 *      profile's profile.db plane and counted per context;
 *   3. transpose (parallel over ranges of contexts): every profile's
 *      entries of the range, ordered by metric, encoded as the contexts'
 *      cct.db planes with their statistics (stats.db).
 * Then the plane tables, checksums and headers; the files are renamed into
 * place, meta.db last (doc/ANALYSIS.md).
 *
 * Without a memory budget each pass is one round over everything, and the
 * rows of pass 2 stay in memory for pass 3. With one (set_memory), passes 1
 * and 2 take the files in rounds that fit it (the bytes one file costs are
 * measured per file byte and the largest ratio seen is used, the first
 * round being one file), pass 2 reads each file again and keeps nothing but
 * what it wrote, and pass 3 takes ranges of contexts whose values fit,
 * reading them back from profile.db. What the whole run keeps -- the
 * unified tree, the strings, per context and per profile a few words -- is
 * counted against the budget first.
 *
 * Statistics count only the profiles where a value is non-zero (the data
 * are sparse); `count` says how many, so the mean over all P profiles is
 * sum / P.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_db.h"
#include "an_internal.h"
#include "io/trace.h"

struct gpuprof_an_analysis {
    char **inputs;
    uint32_t ninputs;
    unsigned threads;
    uint64_t memory; /* bytes; 0: no budget */
    int structure;   /* expand CPU frames with DWARF */
    char *output;
    gpuprof_an_progress_fn progress;
    void *user;
};

/* ---- the pieces of a run ---------------------------------------------- */
typedef struct src { /* one profile file */
    char *path;
    gpuprof__io_profile *io; /* while a pass holds it */
    gpuprof_status st;
    char *err;
    uint64_t fsize;           /* bytes on disk, when listed */
    uint64_t tsize;           /* its trace's bytes (0: none) */
    uint64_t cost;            /* bytes of memory it took in the current pass */
    uint32_t *metric;         /* local metric -> global base metric */
    uint32_t *ctx;            /* absolute node -> context, while io is held */
    uint32_t p0, np;          /* its profiles (threads) */
    uint32_t nodes, nmetrics; /* to see it unchanged in pass 2 */
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

typedef struct slevel { /* one level of a frame's structure (strtab) */
    uint32_t fn, module, file, line;
} slevel;

typedef struct sframe { /* a CPU frame's structure, looked up once */
    uint32_t module;   /* strtab offset of the module path */
    uint64_t offset;
    uint32_t first, n; /* its levels in run.lvl; n = 0: none (symbols) */
} sframe;

typedef struct gprof { /* one thread of one file */
    uint32_t src, thread;
    uint32_t host, tname, file; /* strtab offsets */
    uint32_t pid, flags;
    int32_t rank;
    uint64_t tid;
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
    uint64_t peak;  /* bytes its computation took at most */
} row;

typedef struct cms_val {
    uint16_t metric;
    uint32_t profile;
    double v;
} cms_val;

/* A database file being written: a temporary file beside its final name,
 * the plane table kept in memory until the end. */
typedef struct dbfile {
    int fd;
    char *tmp, *path;
    uint8_t *tab; /* DB_PLANE_REF per plane */
    uint64_t tabsize;
    uint64_t at;  /* where the next plane goes */
    uint32_t crc; /* of the planes written so far (CRC-32C) */
} dbfile;

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
    /* program structure: frames looked up, their levels */
    gpuprof__an_dwarf *dw;
    sframe *sf;
    uint32_t nsf, capsf;
    uint32_t *sf_slot, sf_mask;
    slevel *lvl;
    uint32_t nlvl, caplvl;
    bool structured; /* some frame was expanded */
    /* GPU instructions: their binaries, opened (instr_ctx) */
    gpuprof__an_cubin *cubins;
    /* memory budget: 0, or the bytes rounds may use beside what stays */
    uint64_t budget;
    bool keep_rows; /* rows stay for pass 3 (no budget) */
    uint32_t f0;    /* the round's first file */
    /* the round of pass 2: profiles [p0, p1) */
    uint32_t p0, p1;
    uint32_t *slice_count; /* per slice of profiles: values per context */
    uint32_t nslices;
    uint64_t *cstart; /* per context: values before it; [nc] = total */
    /* the round of pass 3: contexts [lo, hi), their values from cbase */
    uint32_t lo, hi;
    uint64_t cbase;
    cms_val *cv;
    size_t cv_size;
    uint32_t *cpairs; /* per context: distinct metrics */
    uint32_t *chunk;  /* context ranges of the parallel fill: [i, i+1) */
    uint32_t nchunks;
    /* planes being encoded: the round's bytes and their file offset */
    uint8_t *pms, *cms, *sts;
    uint64_t pms_base, cms_base, sts_base;
    uint64_t *poff, *coff, *soff; /* plane offsets */
    dbfile f[3];                  /* profile.db, cct.db, stats.db */
    /* trace.db: records appended as files are read, the table kept */
    dbfile tr;
    uint8_t *ttab;
    uint32_t nstreams, captab;
    _Atomic int io_errno;         /* a failed read or write on the pool */
    /* a write in pieces (dbfile_put) */
    int put_fd;
    const uint8_t *put_buf;
    uint64_t put_n, put_off;
    uint32_t *put_crc; /* per piece */
} run;

enum { F_PMS, F_CMS, F_STATS };

#define MAX_BASE_METRICS 32767u /* database metric ids are u16 */

/* ---- big buffers -------------------------------------------------------
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

/* ---- pass 1: load and unify ---------------------------------------------- */
static void load_one(run *r, uint32_t i)
{
    src *s = &r->s[r->f0 + i];
    if (s->io)
        return;
    free(s->err);
    s->err = NULL;
    s->st = gpuprof__an_load(s->path, &s->io);
    if (s->st != GPUPROF_OK)
        s->err = strdup(gpuprof_an_last_error());
}

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
            snprintf(why, wsize,
                     "metric %s: unit, type or combination "
                     "differs from an earlier profile",
                     name);
            return UINT32_MAX;
        }
        return g;
    }
    if (r->nm == MAX_BASE_METRICS || !GROW(r->m, r->nm, r->capm)) {
        snprintf(why, wsize, "too many metrics (or out of memory)");
        return UINT32_MAX;
    }
    r->m[r->nm] = (gmetric){
        intern(r, name), intern(r, gpuprof__io_str(p, lm->description)),
        lm->unit,        lm->combine,
        lm->kind,        lm->type};
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

/* ---- program structure (an_dwarf.c) --------------------------------------
 * A CPU frame (module, offset) becomes, when the module's DWARF describes
 * it: FUNCTION -> LINE (the call site of the next level) -> INLINE -> LINE
 * ... -> LINE (where the frame is), the frame's children beneath the last
 * line. Each distinct frame is looked up once (unify is serial). */
static uint64_t frame_hash(uint32_t module, uint64_t offset)
{
    uint64_t h = (offset ^ ((uint64_t)module << 40)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static bool frames_rehash(run *r)
{
    uint32_t size = r->sf_mask ? (r->sf_mask + 1) * 2 : 1024;
    uint32_t *s = calloc(size, sizeof(*s));
    if (!s)
        return false;
    for (uint32_t i = 0; i < r->nsf; i++) {
        uint32_t h = (uint32_t)frame_hash(r->sf[i].module, r->sf[i].offset) &
                     (size - 1);
        while (s[h])
            h = (h + 1) & (size - 1);
        s[h] = i + 1;
    }
    free(r->sf_slot);
    r->sf_slot = s;
    r->sf_mask = size - 1;
    return true;
}

/* The structure of frame (module, offset); NULL when out of memory. */
static const sframe *frame_structure(run *r, uint32_t module,
                                     const char *path, uint64_t offset)
{
    if ((r->nsf + 1) * 2 > r->sf_mask + 1 && !frames_rehash(r))
        return NULL;
    uint32_t h = (uint32_t)frame_hash(module, offset) & r->sf_mask;
    for (; r->sf_slot[h]; h = (h + 1) & r->sf_mask) {
        const sframe *f = &r->sf[r->sf_slot[h] - 1];
        if (f->module == module && f->offset == offset)
            return f;
    }
    enum { MAX_LEVELS = 64 };
    gpuprof__an_srclevel lv[MAX_LEVELS];
    uint32_t n =
        gpuprof__an_dwarf_lookup(&r->dw, path, offset, lv, MAX_LEVELS);
    if (!GROW(r->sf, r->nsf, r->capsf))
        return NULL;
    while (r->nlvl + n > r->caplvl)
        if (!grow((void **)&r->lvl, &r->caplvl, sizeof(*r->lvl)))
            return NULL;
    sframe *f = &r->sf[r->nsf];
    *f = (sframe){module, offset, r->nlvl, n};
    for (uint32_t i = 0; i < n; i++)
        r->lvl[r->nlvl++] = (slevel){intern(r, lv[i].function), module,
                                     intern(r, lv[i].file), lv[i].line};
    r->sf_slot[h] = ++r->nsf;
    return f;
}

/* The contexts of a structured frame beneath `parent`; the last line's,
 * UINT32_MAX when out of memory. */
static uint32_t expand(run *r, uint32_t parent, const sframe *f)
{
    r->structured = true;
    for (uint32_t i = 0; i < f->n && parent != UINT32_MAX; i++) {
        const slevel *l = &r->lvl[f->first + i];
        gctx fn = {parent, (uint8_t)(i ? DB_KIND_INLINE : DB_KIND_FUNCTION),
                   l->fn, l->module, 0};
        parent = ctx_get(r, &fn);
        if (parent == UINT32_MAX)
            break;
        gctx line = {parent, DB_KIND_LINE, l->file, 0, l->line};
        parent = ctx_get(r, &line);
    }
    return parent;
}

/* ---- GPU instructions (an_gpudwarf.c) ----------------------------------
 * A GPU instruction (kind GPU_INSTR: cubin, offset in the function its
 * kernel node names) whose cubin's line table describes it becomes LINE
 * (where it is) beneath the kernel, or with inlining LINE (the call site in
 * the kernel) -> INLINE -> LINE ...: the kernel is the function. Its values
 * go to the last line; instructions of one line are one context. */
static uint32_t instr_ctx(run *r, const src *s, const gpuprof__io_profile *p,
                          const gpuprof__io_node *kernel,
                          const gpuprof__io_node *nd, const gctx *k)
{
    /* A GPU binary's path is relative to its measurement directory: the
     * profile's directory. */
    const char *bin = gpuprof__io_str(p, p->modules[nd->key_a].path),
               *slash = strrchr(s->path, '/');
    char path[4200];
    if (bin[0] == '/' || !slash)
        snprintf(path, sizeof(path), "%s", bin);
    else
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - s->path), s->path,
                 bin);
    enum { MAX_LEVELS = 64 };
    gpuprof__an_srclevel lv[MAX_LEVELS];
    uint32_t n = kernel->kind == GPUPROF_IO_NODE_KERNEL
                     ? gpuprof__an_cubin_lookup(
                           &r->cubins, path, gpuprof__io_str(p, kernel->key_a),
                           nd->key_b, lv, MAX_LEVELS)
                     : 0;
    if (!n)
        return ctx_get(r, k);
    r->structured = true;
    uint32_t parent = k->parent;
    for (uint32_t i = 0; i < n && parent != UINT32_MAX; i++) {
        if (i) {
            gctx fn = {parent, DB_KIND_INLINE, intern(r, lv[i].function),
                       k->name, 0};
            if ((parent = ctx_get(r, &fn)) == UINT32_MAX)
                break;
        }
        gctx line = {parent, DB_KIND_LINE, intern(r, lv[i].file), 0,
                     lv[i].line};
        parent = ctx_get(r, &line);
    }
    return parent;
}

/* Bytes a decoded profile holds. */
static uint64_t io_bytes(const gpuprof__io_profile *p)
{
    return p->strings_size + (uint64_t)p->metric_count * sizeof(*p->metrics) +
           (uint64_t)p->module_count * sizeof(*p->modules) +
           (uint64_t)p->thread_count * sizeof(*p->threads) +
           (uint64_t)p->node_count * sizeof(*p->nodes) +
           p->value_count * sizeof(*p->values) +
           (uint64_t)p->counter_count * sizeof(*p->counters) + sizeof(*p);
}

static void ctx_map_free(src *s)
{
    free(s->ctx);
    s->ctx = NULL;
    if (s->io)
        gpuprof__io_profile_free(s->io);
    s->io = NULL;
}

/* Maps file i's nodes to contexts (added when new, in pass 1; in pass 2
 * every one must already be there: the file is read a second time). */
static gpuprof_status unify_one(run *r, uint32_t i, bool again)
{
    char why[256];
    src *s = &r->s[i];
    const gpuprof__io_profile *p = s->io;
    if (again && (p->node_count != s->nodes || p->thread_count != s->np ||
                  p->metric_count != s->nmetrics))
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "%s: changed during the analysis", s->path);
    if (!again) {
        s->metric =
            calloc(p->metric_count ? p->metric_count : 1, sizeof(*s->metric));
        if (!s->metric)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        for (uint32_t m = 0; m < p->metric_count; m++)
            if ((s->metric[m] = metric_unify(r, p, m, why, sizeof(why))) ==
                UINT32_MAX)
                return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: %s", s->path,
                                        why);
        s->nodes = p->node_count;
        s->nmetrics = p->metric_count;
        s->p0 = r->np;
        s->np = p->thread_count;
    }
    s->ctx = calloc(p->node_count ? p->node_count : 1, sizeof(*s->ctx));
    if (!s->ctx)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint32_t host = again ? 0 : intern(r, gpuprof__io_str(p, p->host));
    uint32_t file = again ? 0 : intern(r, s->path);
    uint32_t known = r->nc;
    for (uint32_t t = 0; t < p->thread_count; t++) {
        const gpuprof__io_thread *th = &p->threads[t];
        if (!again) {
            if (!GROW(r->p, r->np, r->capp))
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            r->p[r->np++] =
                (gprof){i,         t,
                        host,      intern(r, gpuprof__io_str(p, th->name)),
                        file,      p->pid,
                        th->flags, p->rank,
                        th->tid};
        }
        s->ctx[th->first_node] = 0; /* every root is the one root */
        for (uint32_t n = 1; n < th->node_count; n++) {
            const gpuprof__io_node *nd = &p->nodes[th->first_node + n];
            gctx k = node_key(r, p, nd, s->ctx[th->first_node + nd->parent]);
            const sframe *f =
                nd->kind == GPUPROF_IO_NODE_FRAME && r->a->structure
                    ? frame_structure(
                          r, k.name,
                          gpuprof__io_str(p, p->modules[nd->key_a].path),
                          nd->key_b)
                    : NULL;
            uint32_t c =
                f && f->n ? expand(r, k.parent, f)
                : nd->kind == GPUPROF_IO_NODE_GPU_INSTR && r->a->structure
                    ? instr_ctx(r, s, p, &p->nodes[th->first_node + nd->parent],
                                nd, &k)
                    : ctx_get(r, &k);
            if (c == UINT32_MAX)
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            s->ctx[th->first_node + n] = c;
        }
    }
    if (r->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (again && r->nc != known)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "%s: changed during the analysis", s->path);
    return GPUPROF_OK;
}

/* What the whole run keeps, in bytes: counted against the budget. */
static uint64_t kept_bytes(const run *r)
{
    uint64_t ssize;
    gpuprof__io_strtab_data(r->st, &ssize);
    return ssize * 2 + (uint64_t)r->capc * sizeof(gctx) +
           ((uint64_t)r->slot_mask + 1) * sizeof(uint32_t) +
           (uint64_t)r->nc * (sizeof(uint64_t) + sizeof(uint32_t) +
                              2 * DB_PLANE_REF + 2 * sizeof(uint64_t)) +
           (uint64_t)r->capp * sizeof(gprof) +
           (uint64_t)r->np * (sizeof(row) + DB_PLANE_REF + sizeof(uint64_t)) +
           (uint64_t)r->ns * (sizeof(src) + 256) +
           (uint64_t)r->ns * r->nm * sizeof(uint32_t) + /* metric maps */
           (uint64_t)r->capsf * sizeof(sframe) +
           ((uint64_t)r->sf_mask + 1) * sizeof(uint32_t) +
           (uint64_t)r->caplvl * sizeof(slevel);
}

/* Room for a round beside what the run keeps (at least 1 byte). */
static uint64_t room(const run *r)
{
    uint64_t k = kept_bytes(r);
    return r->budget > k ? r->budget - k : 1;
}

/* The end of the round that starts at file i: the files that fit at
 * `ratio` bytes of memory per file byte (the largest seen; none yet: one
 * file), and always one. */
static uint32_t round_end(const run *r, uint32_t i, double ratio)
{
    if (!r->budget)
        return r->ns;
    if (ratio <= 0)
        return i + 1;
    double left = (double)room(r);
    uint32_t j = i;
    while (j < r->ns) {
        double need = ratio * (double)(r->s[j].fsize ? r->s[j].fsize : 1);
        if (j > i && need > left)
            break;
        left -= need;
        j++;
    }
    return j;
}

static gpuprof_status first_error(run *r, uint32_t i, uint32_t j)
{
    for (; i < j; i++) /* the first damaged file, in order */
        if (r->s[i].st != GPUPROF_OK)
            return gpuprof__an_fail(r->s[i].st, "%s",
                                    r->s[i].err ? r->s[i].err : r->s[i].path);
    return GPUPROF_OK;
}

/* Reads files [i, j) in parallel. */
static void load_range(run *r, uint32_t i, uint32_t j)
{
    r->f0 = i;
    parallel_for(r, j - i, load_one);
}

static void trim(void)
{
#ifdef __GLIBC__
    malloc_trim(0); /* freed rounds back to the system: the budget is RSS */
#endif
}

/* Pass 1. */
static gpuprof_status unify(run *r)
{
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (ctx_get(r, &root) != 0)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double ratio = 0;
    for (uint32_t i = 0, j; i < r->ns; i = j) {
        j = round_end(r, i, ratio);
        progress(r, "load", i, r->ns);
        load_range(r, i, j);
        gpuprof_status st = first_error(r, i, j);
        for (uint32_t k = i; k < j && st == GPUPROF_OK; k++) {
            st = unify_one(r, k, false);
            /* Reading it took the file, its sections and the profile. */
            uint64_t b = io_bytes(r->s[k].io);
            uint64_t cost = r->s[k].fsize + 2 * b +
                            (uint64_t)r->s[k].nodes * sizeof(uint32_t);
            if (r->s[k].fsize && (double)cost / r->s[k].fsize > ratio)
                ratio = (double)cost / r->s[k].fsize;
            if (r->budget || st != GPUPROF_OK)
                ctx_map_free(&r->s[k]); /* pass 2 reads it again */
        }
        if (st != GPUPROF_OK)
            return st;
        if (r->budget)
            trim();
    }
    progress(r, "load", r->ns, r->ns);
    return GPUPROF_OK;
}

/* ---- pass 2: per-profile values ------------------------------------------ */
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
                    e[n++] =
                        (entry){s->ctx[first + i],
                                (uint16_t)(2 * s->metric[m] + DB_EXCLUSIVE), d};
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
            uint16_t dm = (uint16_t)(2 * s->metric[m] + DB_INCLUSIVE);
            if (n == cap && !grow((void **)&e, &cap, sizeof(*e)))
                goto nomem;
            e[n++] = (entry){s->ctx[first + i], dm, inc[i]};
            if (!i || !r->structured)
                continue;
            /* A structured frame: its function, inlined functions and call
             * site lines above it hold its subtree too. */
            uint32_t stop = s->ctx[first + p->nodes[first + i].parent];
            for (uint32_t c = r->c[s->ctx[first + i]].parent;
                 c != stop && c != UINT32_MAX; c = r->c[c].parent) {
                if (n == cap && !grow((void **)&e, &cap, sizeof(*e)))
                    goto nomem;
                e[n++] = (entry){c, dm, inc[i]};
            }
        }
    }
    /* Sorted by (context, metric); two nodes of one thread can be one
     * context (a module loaded twice at one path): their values combine. */
    if (!sort_entries(e, n))
        goto nomem;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (k && e[k - 1].ctx == e[i].ctx && e[k - 1].metric == e[i].metric)
            e[k - 1].v =
                combine(r->m[e[i].metric / 2].combine, e[k - 1].v, e[i].v);
        else
            e[k++] = e[i];
    }
    uint32_t pairs = 0;
    for (uint32_t i = 0; i < k; i++)
        pairs += !i || e[i].ctx != e[i - 1].ctx;
    /* At most: the entries as grown, the sort's copy, the inclusive
     * values. */
    uint64_t peak = (uint64_t)cap * sizeof(*e) +
                    (n >= 128 ? (uint64_t)n * sizeof(*e) : 0) +
                    (uint64_t)nn * sizeof(*inc) + p->metric_count;
    if (k && k < cap) {
        entry *shrunk = realloc(e, (size_t)k * sizeof(*e));
        if (shrunk)
            e = shrunk;
    }
    r->rows[pi] = (row){e, k, pairs, peak};
    free(inc);
    free(used);
    return;
nomem:
    r->nomem = 1;
    free(e);
    free(inc);
    free(used);
}

/* ---- the database files -------------------------------------------------- */
static bool pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        p += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return true;
}

static bool pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t g = pread(fd, p, n, (off_t)off);
        if (g < 0 && errno == EINTR)
            continue;
        if (g <= 0) {
            if (g == 0)
                errno = EIO;
            return false;
        }
        p += g, n -= (size_t)g, off += (uint64_t)g;
    }
    return true;
}

static void header_at(uint8_t *h, const char *magic, uint32_t crc,
                      uint64_t body, uint32_t a, uint32_t c)
{
    memcpy(h, magic, 8);
    db_put16(h + 8, DB_MAJOR);
    db_put16(h + 10, DB_MINOR);
    db_put32(h + 12, crc);
    db_put64(h + 16, body);
    db_put32(h + 24, a);
    db_put32(h + 28, c);
}

/* A temporary file for `name` with a table of `planes` plane references. */
static gpuprof_status dbfile_open(run *r, dbfile *f, const char *name,
                                  uint32_t planes)
{
    size_t n = strlen(r->a->output) + strlen(name) + 48;
    f->fd = -1;
    f->path = malloc(n);
    f->tmp = malloc(n);
    f->tabsize = (uint64_t)planes * DB_PLANE_REF;
    f->tab = calloc(f->tabsize ? f->tabsize : 1, 1);
    f->at = DB_HEADER + f->tabsize;
    if (!f->path || !f->tmp || !f->tab)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(f->path, n, "%s/%s", r->a->output, name);
    snprintf(f->tmp, n, "%s/.%s.tmp-%ld", r->a->output, name, (long)getpid());
    f->fd = open(f->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", f->tmp,
                                strerror(errno));
    return GPUPROF_OK;
}

/* Appends the planes of a round. */
/* Writes of many megabytes go in pieces on the pool's threads: copying
 * into the page cache is the kernel's work, and it scales. */
#define PUT_PIECE (4u << 20)

static void put_piece(run *r, uint32_t i)
{
    uint64_t at = (uint64_t)i * PUT_PIECE;
    uint64_t n = r->put_n - at < PUT_PIECE ? r->put_n - at : PUT_PIECE;
    r->put_crc[i] = gpuprof__io_crc32c(0, r->put_buf + at, n);
    if (!pwrite_all(r->put_fd, r->put_buf + at, n, r->put_off + at))
        r->io_errno = errno ? errno : EIO;
}

static gpuprof_status dbfile_put(run *r, dbfile *f, const uint8_t *buf,
                                 uint64_t n)
{
    r->io_errno = 0;
    uint32_t pieces = (uint32_t)((n + PUT_PIECE - 1) / PUT_PIECE);
    if (pieces > 1 && r->a->threads > 1) {
        uint32_t *crc = malloc(pieces * sizeof(*crc));
        if (!crc)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        r->put_fd = f->fd;
        r->put_buf = buf;
        r->put_n = n;
        r->put_off = f->at;
        r->put_crc = crc;
        parallel_for(r, pieces, put_piece);
        for (uint32_t i = 0; i < pieces; i++) /* in order */
            f->crc = gpuprof__io_crc32c_combine(
                f->crc, crc[i],
                i + 1 < pieces ? PUT_PIECE : n - (uint64_t)i * PUT_PIECE);
        free(crc);
    } else if (n) {
        f->crc = gpuprof__io_crc32c(f->crc, buf, n);
        if (!pwrite_all(f->fd, buf, n, f->at))
            r->io_errno = errno ? errno : EIO;
    }
    if (r->io_errno)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->path,
                                strerror(r->io_errno));
    f->at += n;
    return GPUPROF_OK;
}

/* The table, then the header with the checksum of the body: the table's,
 * combined with the planes' (accumulated as they were written). */
static gpuprof_status dbfile_finish(dbfile *f, const char *magic, uint32_t a,
                                    uint32_t c)
{
    bool ok = pwrite_all(f->fd, f->tab, f->tabsize, DB_HEADER);
    uint32_t crc = gpuprof__io_crc32c_combine(
        gpuprof__io_crc32c(0, f->tab, f->tabsize), f->crc,
        f->at - DB_HEADER - f->tabsize);
    uint8_t h[DB_HEADER];
    header_at(h, magic, crc, f->at - DB_HEADER, a, c);
    ok = ok && pwrite_all(f->fd, h, DB_HEADER, 0);
    int e = errno;
    if (close(f->fd) != 0 && ok)
        ok = false, e = errno;
    f->fd = -1;
    if (!ok)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->path,
                                strerror(e));
    return GPUPROF_OK;
}

static gpuprof_status dbfile_rename(dbfile *f)
{
    if (rename(f->tmp, f->path) != 0)
        return gpuprof__an_fail(GPUPROF_E_IO,
                                "%s: cannot rename into "
                                "place: %s",
                                f->path, strerror(errno));
    free(f->tmp);
    f->tmp = NULL;
    return GPUPROF_OK;
}

static void dbfile_free(dbfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->tmp) /* not renamed: the run failed */
        unlink(f->tmp);
    free(f->tmp);
    free(f->path);
    free(f->tab);
}

static void put_f64(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    db_put64(p, bits);
}

/* ---- pass 2: rounds, profile.db ---------------------------------------- */
static void values_rel(run *r, uint32_t i)
{
    values_one(r, r->p0 + i);
}

static void count_slice(run *r, uint32_t k)
{
    uint32_t *cnt = r->slice_count + (size_t)k * r->nc;
    for (uint32_t p = r->p0 + k; p < r->p1; p += r->nslices)
        for (uint32_t i = 0; i < r->rows[p].n; i++)
            cnt[r->rows[p].e[i].ctx]++;
}

static void pms_plane(run *r, uint32_t i)
{
    uint32_t p = r->p0 + i;
    const row *w = &r->rows[p];
    uint8_t *ref = r->f[F_PMS].tab + (size_t)p * DB_PLANE_REF;
    db_put64(ref, r->poff[p]);
    db_put32(ref + 8, w->pairs);
    db_put32(ref + 12, w->n);
    uint8_t *q = r->pms + (r->poff[p] - r->pms_base);
    uint8_t *val = q + (size_t)w->pairs * DB_PMS_PAIR;
    for (uint32_t k = 0; k < w->n; k++) {
        if (!k || w->e[k].ctx != w->e[k - 1].ctx) {
            db_put32(q, w->e[k].ctx);
            db_put32(q + 4, k);
            q += DB_PMS_PAIR;
        }
        db_put16(val, w->e[k].metric);
        put_f64(val + 2, w->e[k].v);
        val += DB_PMS_VALUE;
    }
}

static gpuprof_status trace_one(run *r, uint32_t k); /* trace.db */

/* The profiles of files [i, j): values, counts per context, planes. */
static gpuprof_status values_round(run *r, uint32_t i, uint32_t j,
                                   double *ratio)
{
    load_range(r, i, j);
    gpuprof_status st = first_error(r, i, j);
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++) {
        if (!r->s[k].ctx)
            st = unify_one(r, k, true);
        r->s[k].cost = r->s[k].fsize + 2 * io_bytes(r->s[k].io) +
                       (uint64_t)r->s[k].nodes * sizeof(uint32_t) +
                       2 * r->s[k].tsize; /* the trace, read whole */
    }
    if (st != GPUPROF_OK)
        return st;
    r->p0 = r->s[i].p0;
    r->p1 = r->s[j - 1].p0 + r->s[j - 1].np;
    parallel_for(r, r->p1 - r->p0, values_rel);
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++)
        if (r->tr.fd >= 0)
            st = trace_one(r, k);
    for (uint32_t k = i; k < j; k++)
        ctx_map_free(&r->s[k]);
    if (st != GPUPROF_OK)
        return st;
    if (r->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    memset(r->slice_count, 0, (size_t)r->nslices * r->nc * sizeof(uint32_t));
    parallel_for(r, r->nslices, count_slice);
    for (uint32_t k = 0; k < r->nslices; k++)
        for (uint32_t c = 0; c < r->nc; c++)
            r->cstart[c + 1] += r->slice_count[(size_t)k * r->nc + c];
    /* The planes, in profile order after the previous round's. */
    r->pms_base = r->f[F_PMS].at;
    uint64_t at = r->pms_base;
    for (uint32_t p = r->p0; p < r->p1; p++) {
        r->poff[p] = at;
        at += (uint64_t)r->rows[p].pairs * DB_PMS_PAIR +
              (uint64_t)r->rows[p].n * DB_PMS_VALUE;
    }
    size_t size = at - r->pms_base;
    if (!(r->pms = big_alloc(size)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->p1 - r->p0, pms_plane);
    st = dbfile_put(r, &r->f[F_PMS], r->pms, size);
    big_free(r->pms, size);
    r->pms = NULL;
    /* What these files cost per file byte, for the next round's size. */
    for (uint32_t k = i; k < j; k++) {
        src *s = &r->s[k];
        for (uint32_t p = s->p0; p < s->p0 + s->np; p++)
            s->cost += r->rows[p].peak +
                       (uint64_t)r->rows[p].pairs * DB_PMS_PAIR +
                       (uint64_t)r->rows[p].n * DB_PMS_VALUE;
        if (s->fsize && (double)s->cost / s->fsize > *ratio)
            *ratio = (double)s->cost / s->fsize;
    }
    if (!r->keep_rows)
        for (uint32_t p = r->p0; p < r->p1; p++) {
            free(r->rows[p].e);
            r->rows[p] = (row){0};
        }
    return st;
}

static gpuprof_status values_pass(run *r)
{
    r->cstart = calloc((size_t)r->nc + 1, sizeof(*r->cstart));
    r->poff = malloc(((size_t)r->np + 1) * sizeof(*r->poff));
    r->rows = calloc(r->np ? r->np : 1, sizeof(*r->rows));
    r->nslices = r->a->threads < r->np ? r->a->threads : (r->np ? r->np : 1);
    r->slice_count = calloc((size_t)r->nslices * r->nc, sizeof(uint32_t));
    if (!r->cstart || !r->poff || !r->rows || !r->slice_count)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double ratio = 0;
    for (uint32_t i = 0, j; i < r->ns; i = j) {
        j = round_end(r, i, ratio);
        progress(r, "values", r->s[i].p0, r->np);
        gpuprof_status st = values_round(r, i, j, &ratio);
        if (st != GPUPROF_OK)
            return st;
        if (r->budget)
            trim();
    }
    free(r->slice_count);
    r->slice_count = NULL;
    for (uint32_t c = 0; c < r->nc; c++)
        r->cstart[c + 1] += r->cstart[c];
    progress(r, "values", r->np, r->np);
    return GPUPROF_OK;
}

/* ---- pass 3: transpose, cct.db and stats.db -------------------------- */
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

/* The first pair of profile.db plane `ref` whose context is >= c. */
static bool plane_lower(const run *r, uint64_t off, uint32_t pairs, uint32_t c,
                        uint32_t *at)
{
    uint32_t lo = 0, hi = pairs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint8_t b[4];
        if (!pread_all(r->f[F_PMS].fd, b, 4, off + (uint64_t)mid * 8))
            return false;
        if (db_get32(b) < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return true;
}

/* Profile p's entries of contexts [lo, hi), read back from profile.db. */
static void read_rows(run *r, uint32_t p)
{
    const uint8_t *ref = r->f[F_PMS].tab + (size_t)p * DB_PLANE_REF;
    uint64_t off = db_get64(ref);
    uint32_t pairs = db_get32(ref + 8), n = db_get32(ref + 12), a, b;
    row *w = &r->rows[p];
    *w = (row){0};
    if (!plane_lower(r, off, pairs, r->lo, &a) ||
        !plane_lower(r, off, pairs, r->hi, &b))
        goto ioerr;
    if (a == b)
        return;
    /* Pairs a..b, and the start of the one after them. */
    uint32_t np = b - a + (b < pairs);
    uint8_t *pb = malloc((size_t)np * DB_PMS_PAIR);
    if (!pb) {
        r->nomem = 1;
        return;
    }
    if (!pread_all(r->f[F_PMS].fd, pb, (size_t)np * DB_PMS_PAIR,
                   off + (uint64_t)a * DB_PMS_PAIR)) {
        free(pb);
        goto ioerr;
    }
    uint32_t vs = db_get32(pb + 4);
    uint32_t ve =
        b < pairs ? db_get32(pb + (size_t)(b - a) * DB_PMS_PAIR + 4) : n;
    uint8_t *vb = malloc((size_t)(ve - vs) * DB_PMS_VALUE + 1);
    w->e = malloc((size_t)(ve - vs) * sizeof(*w->e) + 1);
    if (!vb || !w->e) {
        free(pb);
        free(vb);
        free(w->e);
        w->e = NULL;
        r->nomem = 1;
        return;
    }
    if (!pread_all(r->f[F_PMS].fd, vb, (size_t)(ve - vs) * DB_PMS_VALUE,
                   off + (uint64_t)pairs * DB_PMS_PAIR +
                       (uint64_t)vs * DB_PMS_VALUE)) {
        free(pb);
        free(vb);
        goto ioerr;
    }
    for (uint32_t k = 0; k < b - a; k++) {
        uint32_t ctx = db_get32(pb + (size_t)k * DB_PMS_PAIR);
        uint32_t from = db_get32(pb + (size_t)k * DB_PMS_PAIR + 4);
        uint32_t to =
            k + 1 < np ? db_get32(pb + (size_t)(k + 1) * DB_PMS_PAIR + 4) : ve;
        for (uint32_t v = from; v < to; v++) {
            const uint8_t *q = vb + (size_t)(v - vs) * DB_PMS_VALUE;
            uint64_t bits = db_get64(q + 2);
            double d;
            memcpy(&d, &bits, sizeof(d));
            w->e[v - vs] = (entry){ctx, db_get16(q), d};
        }
    }
    w->n = ve - vs;
    w->pairs = b - a;
    free(pb);
    free(vb);
    return;
ioerr:
    free(w->e);
    *w = (row){0};
    r->io_errno = errno ? errno : EIO; /* any one of them */
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
    for (uint32_t c = lo; c < hi; c++)
        fill[c - lo] = r->cstart[c] - r->cbase;
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
        cms_val *v = r->cv + (r->cstart[c] - r->cbase);
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

/* A context's cct.db plane and stats.db records: runs of one metric. */
static void cms_plane(run *r, uint32_t i)
{
    uint32_t c = r->lo + i;
    const cms_val *v = r->cv + (r->cstart[c] - r->cbase);
    uint32_t n = (uint32_t)(r->cstart[c + 1] - r->cstart[c]);
    uint32_t pairs = r->cpairs[c];
    uint8_t *ref = r->f[F_CMS].tab + (size_t)c * DB_PLANE_REF;
    db_put64(ref, r->coff[c]);
    db_put32(ref + 8, pairs);
    db_put32(ref + 12, n);
    ref = r->f[F_STATS].tab + (size_t)c * DB_PLANE_REF;
    db_put64(ref, r->soff[c]);
    db_put32(ref + 8, pairs);
    uint8_t *q = r->cms + (r->coff[c] - r->cms_base);
    uint8_t *sq = r->sts + (r->soff[c] - r->sts_base);
    uint8_t *val = q + (size_t)pairs * DB_CMS_PAIR;
    for (uint32_t k = 0, j; k < n; k = j) {
        double sum = 0, mn = v[k].v, mx = v[k].v, var = 0;
        for (j = k; j < n && v[j].metric == v[k].metric; j++) {
            db_put32(val, v[j].profile);
            put_f64(val + 4, v[j].v);
            val += DB_CMS_VALUE;
            sum += v[j].v;
            mn = v[j].v < mn ? v[j].v : mn;
            mx = v[j].v > mx ? v[j].v : mx;
        }
        db_put16(q, v[k].metric);
        db_put32(q + 4, k);
        q += DB_CMS_PAIR;
        /* Statistics over the j - k profiles with a value. */
        double mean = sum / (j - k);
        for (uint32_t x = k; x < j; x++)
            var += (v[x].v - mean) * (v[x].v - mean);
        double sd = sqrt(var / (j - k));
        db_put16(sq, v[k].metric);
        db_put32(sq + 4, j - k);
        put_f64(sq + 8, sum);
        put_f64(sq + 16, mn);
        put_f64(sq + 24, mean);
        put_f64(sq + 32, mx);
        put_f64(sq + 40, sd);
        put_f64(sq + 48, mean != 0 ? sd / mean : 0);
        sq += DB_STATS_REC;
    }
}

/* Bytes one value of pass 3 costs at most: its entry read back, its
 * transposed copy and the sort's, its cct.db bytes and stats record. */
#define T_BYTES_PER_VALUE                                                      \
    (2 * sizeof(entry) + 2 * sizeof(cms_val) + DB_CMS_VALUE + DB_CMS_PAIR +    \
     DB_STATS_REC + DB_PMS_VALUE)

/* Contexts [lo, hi): transposed, encoded and appended. */
static gpuprof_status transpose_round(run *r)
{
    uint32_t lo = r->lo, hi = r->hi;
    if (!r->keep_rows) {
        parallel_for(r, r->np, read_rows);
        if (r->io_errno)
            return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot read back: %s",
                                    r->f[F_PMS].tmp, strerror(r->io_errno));
        if (r->nomem)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    /* Chunks of about equal numbers of values. */
    r->cbase = r->cstart[lo];
    uint64_t total = r->cstart[hi] - r->cbase;
    for (uint32_t k = 1, c = lo; k < r->nchunks; k++) {
        uint64_t want = r->cbase + total * k / r->nchunks;
        while (c < hi && r->cstart[c] < want)
            c++;
        r->chunk[k] = c;
    }
    r->chunk[0] = lo;
    r->chunk[r->nchunks] = hi;
    r->cv_size = total * sizeof(*r->cv);
    if (!(r->cv = big_alloc(r->cv_size)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->nchunks, fill_chunk);
    if (!r->keep_rows)
        for (uint32_t p = 0; p < r->np; p++) {
            free(r->rows[p].e);
            r->rows[p] = (row){0};
        }
    if (r->nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    r->cms_base = r->f[F_CMS].at;
    r->sts_base = r->f[F_STATS].at;
    uint64_t ca = r->cms_base, sa = r->sts_base;
    for (uint32_t c = lo; c < hi; c++) {
        r->coff[c] = ca;
        r->soff[c] = sa;
        ca += (uint64_t)r->cpairs[c] * DB_CMS_PAIR +
              (r->cstart[c + 1] - r->cstart[c]) * DB_CMS_VALUE;
        sa += (uint64_t)r->cpairs[c] * DB_STATS_REC;
    }
    size_t csize = ca - r->cms_base, ssize = sa - r->sts_base;
    r->cms = big_alloc(csize);
    r->sts = big_alloc(ssize);
    gpuprof_status st = GPUPROF_OK;
    if (!r->cms || !r->sts)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        parallel_for(r, hi - lo, cms_plane);
        st = dbfile_put(r, &r->f[F_CMS], r->cms, csize);
    }
    if (st == GPUPROF_OK)
        st = dbfile_put(r, &r->f[F_STATS], r->sts, ssize);
    big_free(r->cms, csize);
    big_free(r->sts, ssize);
    big_free(r->cv, r->cv_size);
    r->cms = r->sts = NULL;
    r->cv = NULL;
    return st;
}

static gpuprof_status transpose(run *r)
{
    r->cpairs = calloc((size_t)r->nc + 1, sizeof(*r->cpairs));
    r->coff = malloc(((size_t)r->nc + 1) * sizeof(*r->coff));
    r->soff = malloc(((size_t)r->nc + 1) * sizeof(*r->soff));
    r->nchunks = r->a->threads > 1 ? 8 * r->a->threads : 1;
    r->chunk = calloc((size_t)r->nchunks + 1, sizeof(*r->chunk));
    if (!r->cpairs || !r->coff || !r->soff || !r->chunk)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t fit = r->budget ? room(r) / T_BYTES_PER_VALUE : UINT64_MAX;
    for (r->lo = 0; r->lo < r->nc; r->lo = r->hi) {
        progress(r, "transpose", r->lo, r->nc);
        r->hi = r->lo + 1;
        while (r->hi < r->nc && r->cstart[r->hi + 1] - r->cstart[r->lo] <= fit)
            r->hi++;
        gpuprof_status st = transpose_round(r);
        if (st != GPUPROF_OK)
            return st;
        if (r->budget)
            trim();
    }
    progress(r, "transpose", r->nc, r->nc);
    return GPUPROF_OK;
}

/* ---- trace.db -----------------------------------------------------------
 * Each input's trace, while its node map is held (pass 2): every stream's
 * records sorted by time, contexts as database contexts, appended in input
 * order; the table of streams at the end (doc/FORMATS.md). */
#define GP_TRACE_EXT ".gptrace"

/* The trace beside a profile: NAME.gpuprof -> NAME.gptrace. */
static bool trace_path(const char *profile, char *out, size_t size)
{
    size_t n = strlen(profile);
    if (n < 8 || strcmp(profile + n - 8, ".gpuprof") ||
        n - 8 + sizeof(GP_TRACE_EXT) > size)
        return false;
    memcpy(out, profile, n - 8);
    memcpy(out + n - 8, GP_TRACE_EXT, sizeof(GP_TRACE_EXT));
    return true;
}

static gpuprof_status trace_put(run *r, const void *b, size_t n)
{
    return dbfile_put(r, &r->tr, b, n);
}

/* One stream: its records, then its table entry. */
static gpuprof_status trace_stream(run *r, const src *s,
                                   const gpuprof__io_profile *p,
                                   const gpuprof__io_trace *t,
                                   const gpuprof__io_trace_stream *st,
                                   uint8_t kind)
{
    if (!st->count)
        return GPUPROF_OK;
    /* The profile thread of each record's context: the trace's thread
     * sequence numbers map to OS tids, and those to the profile's threads
     * (the first with that tid). */
    uint32_t cur_seq = UINT32_MAX, cur_thread = UINT32_MAX;
    uint32_t own = UINT32_MAX;
    enum { BATCH = 4096 };
    uint8_t *b = malloc((size_t)BATCH * DB_TRACE_REC);
    if (!b)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t at = r->tr.at;
    gpuprof_status rc = GPUPROF_OK;
    for (uint64_t i = 0; i < st->count && rc == GPUPROF_OK; i += BATCH) {
        uint32_t n =
            st->count - i < BATCH ? (uint32_t)(st->count - i) : BATCH;
        for (uint32_t k = 0; k < n; k++) {
            const gpuprof__io_trace_rec *x = &st->recs[i + k];
            uint32_t seq = (uint32_t)(x->context >> 32);
            uint32_t node = (uint32_t)x->context;
            if (seq != cur_seq) {
                cur_seq = seq;
                cur_thread = UINT32_MAX;
                uint64_t tid = 0;
                bool known = false;
                for (uint32_t q = 0; q < t->thread_count && !known; q++)
                    if (t->threads[q].seq == seq)
                        tid = t->threads[q].tid, known = true;
                for (uint32_t q = 0; known && q < p->thread_count; q++)
                    if (p->threads[q].tid == tid) {
                        cur_thread = q;
                        break;
                    }
            }
            uint32_t ctx = UINT32_MAX;
            if (cur_thread != UINT32_MAX &&
                node < p->threads[cur_thread].node_count)
                ctx = s->ctx[p->threads[cur_thread].first_node + node];
            if (kind != DB_TRACE_GPU && own == UINT32_MAX)
                own = cur_thread;
            uint8_t *q = b + (size_t)k * DB_TRACE_REC;
            db_put64(q, x->start_ns);
            db_put64(q + 8, x->end_ns);
            db_put64(q + 16, x->corr);
            db_put32(q + 24, ctx);
            db_put32(q + 28, 0);
        }
        rc = trace_put(r, b, (size_t)n * DB_TRACE_REC);
    }
    free(b);
    if (rc != GPUPROF_OK)
        return rc;
    if (r->nstreams == r->captab &&
        !grow((void **)&r->ttab, &r->captab, DB_TRACE_STREAM))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint8_t *e = r->ttab + (size_t)r->nstreams++ * DB_TRACE_STREAM;
    memset(e, 0, DB_TRACE_STREAM);
    db_put32(e, own == UINT32_MAX ? UINT32_MAX : s->p0 + own);
    db_put32(e + 4, s->p0);
    e[8] = kind;
    db_put32(e + 12, kind == DB_TRACE_GPU ? st->device : 0);
    db_put32(e + 16, kind == DB_TRACE_GPU ? st->id : 0);
    db_put64(e + 24, p->start_realtime_ns - p->start_ns);
    db_put64(e + 32, at);
    db_put64(e + 40, st->count);
    return GPUPROF_OK;
}

/* File k's trace, if it has one (its profile and node map are held). */
static gpuprof_status trace_one(run *r, uint32_t k)
{
    const src *s = &r->s[k];
    char path[4200], err[256];
    if (!s->tsize || !trace_path(s->path, path, sizeof(path)))
        return GPUPROF_OK;
    gpuprof__io_trace *t = NULL;
    int rc = gpuprof__io_trace_read_file(path, &t, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof__io_trace_sort(t);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < t->stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(r, s, s->io, t, &t->streams[i],
                          t->streams[i].gpu ? DB_TRACE_GPU : DB_TRACE_REGIONS);
    for (uint32_t i = 0; i < t->op_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(r, s, s->io, t, &t->ops[i], DB_TRACE_OPS);
    gpuprof__io_trace_free(t);
    return st;
}

/* The table, then the header (its checksum accumulated as written). */
static gpuprof_status trace_finish(run *r)
{
    gpuprof_status st =
        trace_put(r, r->ttab, (size_t)r->nstreams * DB_TRACE_STREAM);
    uint8_t h[DB_HEADER];
    header_at(h, DB_TRACE_MAGIC, r->tr.crc, r->tr.at - DB_HEADER,
              r->nstreams, r->np);
    if (st == GPUPROF_OK && !pwrite_all(r->tr.fd, h, DB_HEADER, 0))
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s",
                              r->tr.path, strerror(errno));
    if (close(r->tr.fd) != 0 && st == GPUPROF_OK)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s",
                              r->tr.path, strerror(errno));
    r->tr.fd = -1;
    return st;
}

/* ---- meta.db ----------------------------------------------------------- */
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
        if (!(q = reserve(&b, DB_PROFILE_REC)))
            break;
        db_put32(q, p->host);
        db_put32(q + 4, p->tname);
        db_put32(q + 8, p->file);
        db_put32(q + 12, p->pid);
        db_put32(q + 16, (uint32_t)p->rank);
        db_put32(q + 20, p->flags);
        db_put64(q + 24, p->tid);
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
    if (b.nomem) {
        free(b.d);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    header_at(b.d, DB_META_MAGIC,
              gpuprof__io_crc32c(0, b.d + DB_HEADER, b.n - DB_HEADER),
              b.n - DB_HEADER, r->nc, r->np);
    char path[4200], err[256];
    snprintf(path, sizeof(path), "%s/meta.db", r->a->output);
    gpuprof_status st = GPUPROF_OK;
    if (gpuprof__io_write_replace(path, b.d, b.n, false, err, sizeof(err)))
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", path, err);
    free(b.d);
    return st;
}

/* ---- the public API ---------------------------------------------------- */
GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_new(gpuprof_an_analysis **out)
{
    if (!out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    (*out)->threads = 1;
    (*out)->structure = 1;
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
        return gpuprof__an_fail(GPUPROF_E_INVALID, "threads must be 1..1024");
    a->threads = threads;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_structure(gpuprof_an_analysis *a, int on)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->structure = on != 0;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_memory(gpuprof_an_analysis *a, uint64_t bytes)
{
    if (!a || (bytes && bytes < GPUPROF_AN_MIN_MEMORY))
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "a memory budget is 0 (none) or at least "
                                "%u MiB",
                                GPUPROF_AN_MIN_MEMORY >> 20);
    a->memory = bytes;
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

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_set_progress(
    gpuprof_an_analysis *a, gpuprof_an_progress_fn fn, void *user)
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
        for (uint32_t i = 0; i < n; i++) {
            struct stat sb;
            char tp[4200];
            r->s[r->ns] = (src){
                .path = files[i],
                .fsize = stat(files[i], &sb) == 0 ? (uint64_t)sb.st_size : 0};
            if (trace_path(files[i], tp, sizeof(tp)) && stat(tp, &sb) == 0)
                r->s[r->ns].tsize = (uint64_t)sb.st_size;
            r->ns++;
        }
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
        ctx_map_free(&r->s[i]);
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
    free(r->slice_count);
    big_free(r->cv, r->cv_size);
    free(r->cpairs);
    free(r->chunk);
    free(r->poff);
    free(r->coff);
    free(r->soff);
    free(r->sf);
    free(r->sf_slot);
    free(r->lvl);
    gpuprof__an_dwarf_free(r->dw);
    gpuprof__an_cubin_free(r->cubins);
    for (int i = 0; i < 3; i++)
        dbfile_free(&r->f[i]);
    dbfile_free(&r->tr);
    free(r->ttab);
    if (r->st)
        gpuprof__io_strtab_free(r->st);
}

/* Bytes the process needs beside the run's own (code, libraries, stacks):
 * what a budget must leave aside. */
#define BUDGET_BASE (8u << 20)

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_run(gpuprof_an_analysis *a)
{
    if (!a || !a->ninputs || !a->output)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "an analysis needs inputs and an output");
    run r = {
        .a = a, .f = {{.fd = -1}, {.fd = -1}, {.fd = -1}}, .tr = {.fd = -1}};
    r.budget = a->memory ? a->memory - BUDGET_BASE : 0;
    r.keep_rows = !a->memory;
    gpuprof_status st = collect_inputs(&r);
    if (st == GPUPROF_OK && !(r.st = gpuprof__io_strtab_new()))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK)
        st = unify(&r);
    if (st == GPUPROF_OK && r.budget && kept_bytes(&r) >= r.budget)
        st = gpuprof__an_fail(
            GPUPROF_E_LIMIT,
            "a memory budget of %llu MiB is too small: the "
            "calling context tree and tables of these profiles take %llu MiB",
            (unsigned long long)(a->memory >> 20),
            (unsigned long long)((kept_bytes(&r) + BUDGET_BASE) >> 20) + 1);
    if (st == GPUPROF_OK && mkdir(a->output, 0755) != 0 && errno != EEXIST)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", a->output,
                              strerror(errno));
    if (st == GPUPROF_OK)
        st = dbfile_open(&r, &r.f[F_PMS], "profile.db", r.np);
    if (st == GPUPROF_OK)
        st = dbfile_open(&r, &r.f[F_CMS], "cct.db", r.nc);
    if (st == GPUPROF_OK)
        st = dbfile_open(&r, &r.f[F_STATS], "stats.db", r.nc);
    bool traced = false;
    for (uint32_t i = 0; i < r.ns; i++)
        traced = traced || r.s[i].tsize;
    if (st == GPUPROF_OK && traced)
        st = dbfile_open(&r, &r.tr, "trace.db", 0);
    if (st == GPUPROF_OK)
        st = values_pass(&r);
    if (st == GPUPROF_OK)
        st = transpose(&r);
    if (st == GPUPROF_OK) {
        progress(&r, "write", 0, 4);
        st = dbfile_finish(&r.f[F_STATS], DB_STATS_MAGIC, r.nc, 2 * r.nm);
    }
    if (st == GPUPROF_OK)
        st = dbfile_finish(&r.f[F_CMS], DB_CMS_MAGIC, r.nc, r.np);
    if (st == GPUPROF_OK)
        st = dbfile_finish(&r.f[F_PMS], DB_PMS_MAGIC, r.np, r.nc);
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++) /* stats, cct, profile */
        st = dbfile_rename(&r.f[2 - i]);
    if (st == GPUPROF_OK && traced)
        st = trace_finish(&r);
    if (st == GPUPROF_OK && traced)
        st = dbfile_rename(&r.tr);
    if (st == GPUPROF_OK && !traced) { /* none from an earlier run */
        char tp[4200];
        snprintf(tp, sizeof(tp), "%s/trace.db", a->output);
        if (unlink(tp) != 0 && errno != ENOENT)
            st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot remove: %s", tp,
                                  strerror(errno));
    }
    if (st == GPUPROF_OK) /* last: a reader checks the others agree */
        st = write_meta(&r);
    if (st == GPUPROF_OK)
        progress(&r, "write", 4, 4);
    run_free(&r);
    return st;
}
