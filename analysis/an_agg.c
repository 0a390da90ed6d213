/*
 * an_agg.c - aggregation of measurement directories into an analysis
 * database (seed 000 §6.1-6.2; an_db.h; doc/FORMATS.md).
 *
 * Three passes, each over arrays that depend only on the inputs, so the
 * database is the same bytes whatever the thread count, memory budget or
 * number of ranks:
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
 * On several ranks (an_coll.h, `gpuprof-mpi`; the sections "several
 * ranks" at the end, here because they share the run's internals) each
 * rank does pass 1 for a block of files, rank 0 merges the ranks' trees in
 * rank order so that every id is the single-process run's, each rank does
 * pass 2 for its profiles and pass 3 for a range of contexts read back
 * from profile.db, its planes going to a part file of its own that is
 * then copied into place at an offset from an exclusive scan; rank 0
 * writes the tables and headers. The same bytes again.
 *
 * Statistics count only the profiles where a value is non-zero (the data
 * are sparse); `count` says how many, so the mean over all P profiles is
 * sum / P.
 */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_coll.h"
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
    int strict; /* a trace not used whole stops the run */
    gpuprof_an_warning_fn warn;
    void *warn_user;
};

/* ---- the pieces of a run ---------------------------------------------- */
typedef struct src { /* one profile file */
    char *path;
    gpuprof__io_profile *io; /* while a pass holds it */
    gpuprof_status st;
    char *err;
    uint64_t fsize;           /* bytes on disk, when listed */
    uint64_t tsize;           /* its trace's bytes (0: none or empty) */
    uint32_t has_trace;       /* a .gptrace beside it (whatever it is) */
    uint64_t cost;            /* bytes of memory it took in the current pass */
    uint32_t *metric;         /* local metric -> global base metric */
    uint32_t *ctx;            /* absolute node -> context, while io is held */
    uint32_t p0, np;          /* its profiles (threads) */
    uint32_t nodes, nmetrics; /* to see it unchanged in pass 2 */
} src;

typedef struct gmetric {
    uint32_t name, desc; /* strtab offsets (a rank's own, before the merge:
                            its metric strings' table, mst) */
    uint8_t unit, combine, kind, type;
    uint32_t at, src; /* before the merge: the size of the rank's strtab
                         when the metric was added, the file that added it */
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
    /* Several ranks: a rank's planes go to a file of its own (`part`,
     * unlinked when made) until their place in the shared one is known;
     * `origin` is where the planes start. `peer`: rank 0 made `tmp`. */
    int part;
    uint64_t origin;
    bool peer;
    char *aside; /* the earlier database's file, moved aside (dbfile_rename) */
    bool placed; /* put in place where there was none: removed if the run
                    fails before meta.db is written (dbfile_free) */
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
    /* several ranks (an_coll.h); a single process is rank 0 of 1 */
    const gpuprof__an_coll *coll;
    int rank, nranks;
    uint32_t s_lo, s_hi;     /* this rank's files */
    uint32_t c_lo, c_hi;     /* this rank's contexts in pass 3 */
    uint32_t pr_lo, pr_hi;   /* this rank's profiles, after the merge */
    long pid0;               /* rank 0's process id: temporary files' names */
    int blame;               /* the rank a failure is about (-1: the failing) */
    gpuprof__io_strtab *mst; /* a rank's metric strings, before the merge */
    /* a write in pieces (dbfile_put) */
    int put_fd;
    const uint8_t *put_buf;
    uint64_t put_n, put_off;
    uint32_t *put_crc; /* per piece */
    /* a big buffer being populated (big_alloc) */
    uint8_t *pop_buf;
    size_t pop_size;
    bool pop_drop; /* big_free: the slices' pages dropped instead */
    /* an earlier database's files, moved aside (dbfile_rename) */
    dbfile *aside[4];
    uint32_t naside;
    /* what the traces could not give (meta.db): damaged or empty traces,
     * the bytes ignored in them, streams of threads the profile lacks */
    uint32_t tr_damaged, tr_dropped;
    uint64_t tr_ignored;
    uint64_t ident; /* the database's identity (inputs, options) */
    bool made_dir;  /* the output directory is this run's: removed, empty,
                       when the run fails */
} run;

enum { F_PMS, F_CMS, F_STATS };

typedef void (*task_fn)(run *r, uint32_t i);

#define MAX_BASE_METRICS 32767u /* database metric ids are u16 */

/* ---- big buffers -------------------------------------------------------
 * The output files and the transposed values are megabytes written once:
 * their pages are populated before the threads fill them (on a VM a fault
 * costs microseconds, and the faults of threads filling one buffer
 * contend), a slice of POPULATE_SLICE bytes per task on the pool, so that
 * zeroing them -- the kernel's work, tens of milliseconds for 100 MB --
 * scales with the threads (MAP_POPULATE did it on one). Zero-filled. */
#define POPULATE_SLICE (4u << 20)

static void pages_slice(run *r, uint32_t i)
{
    uint8_t *p = r->pop_buf + (size_t)i * POPULATE_SLICE;
    size_t n = r->pop_size - (size_t)i * POPULATE_SLICE;
    if (n > POPULATE_SLICE)
        n = POPULATE_SLICE;
    if (r->pop_drop) { /* freeing: the pages go, the mapping after */
        madvise(p, n, MADV_DONTNEED);
        return;
    }
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t k = 0; k < n; k += 4096) /* kernels before 5.14 */
        ((volatile uint8_t *)p)[k] = 0;
}

static void parallel_for(run *r, uint32_t n, task_fn fn);

static void *big_alloc(run *r, size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    r->pop_buf = p;
    r->pop_size = size;
    r->pop_drop = false;
    parallel_for(r, (uint32_t)((size + POPULATE_SLICE - 1) / POPULATE_SLICE),
                 pages_slice);
    return p;
}

/* Freeing the pages is the kernel's work too: on the pool, slice by
 * slice (MADV_DONTNEED holds the address space's lock shared; munmap
 * alone would free them all on one thread). */
static void big_free(run *r, void *p, size_t size)
{
    if (!p)
        return;
    r->pop_buf = p;
    r->pop_size = size;
    r->pop_drop = true;
    parallel_for(r, (uint32_t)((size + POPULATE_SLICE - 1) / POPULATE_SLICE),
                 pages_slice);
    munmap(p, size ? size : 1);
}

/* ---- a small thread pool ------------------------------------------------ */
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

/* A metric's name or description. One rank of several keeps them apart
 * from its other strings until the merge: whether they are interned there
 * depends on the metrics of the ranks before it. */
static uint32_t intern_metric(run *r, const char *s)
{
    if (!r->mst)
        return intern(r, s);
    uint32_t o = gpuprof__io_strtab_add(r->mst, s ? s : "");
    if (o == UINT32_MAX)
        r->nomem = 1;
    return o == UINT32_MAX ? 0 : o;
}

static const char *metric_str(const run *r, uint32_t off)
{
    uint64_t size;
    return gpuprof__io_strtab_data(r->mst ? r->mst : r->st, &size) + off;
}

static uint32_t metric_unify(run *r, uint32_t file,
                             const gpuprof__io_profile *p, uint32_t i,
                             char *why, size_t wsize)
{
    const gpuprof__io_metric *lm = &p->metrics[i];
    const char *name = gpuprof__io_str(p, lm->name);
    for (uint32_t g = 0; g < r->nm; g++) {
        if (strcmp(metric_str(r, r->m[g].name), name))
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
    uint64_t at;
    gpuprof__io_strtab_data(r->st, &at);
    r->m[r->nm] =
        (gmetric){intern_metric(r, name),
                  intern_metric(r, gpuprof__io_str(p, lm->description)),
                  lm->unit,
                  lm->combine,
                  lm->kind,
                  lm->type,
                  (uint32_t)at,
                  file};
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
    while (size < (r->nc + 1) * 2) /* a whole tree at once (tree_adopt) */
        size *= 2;
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
            if ((s->metric[m] = metric_unify(r, i, p, m, why, sizeof(why))) ==
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
                nd->kind == GPUPROF_IO_NODE_FRAME && r->a->structure &&
                        !gpuprof__an_is_pyframe(gpuprof__io_str(
                            p, p->modules[nd->key_a].path))
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
        return r->s_hi;
    if (ratio <= 0)
        return i + 1;
    double left = (double)room(r);
    uint32_t j = i;
    while (j < r->s_hi) {
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

/* Freed rounds back to the system: the budget is RSS. One call at a time
 * in the process (analyses may run on several threads, as ranks do in
 * check_an_ranks): where glibc's allocator has not been used yet -- under
 * ASan -- the first malloc_trim initializes it, and two threads doing that
 * at once both take the main arena, whose count of attached threads then
 * drops below zero at their exit (glibc aborts: "a->attached_threads > 0"). */
static void trim(void)
{
#ifdef __GLIBC__
    static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&one);
    malloc_trim(0);
    pthread_mutex_unlock(&one);
#endif
}

/* ---- files loaded on the pool, unified in order as they arrive ----------
 * Pass 1's unify is serial (ids follow input order); it overlaps the
 * loading: the pool's threads load files [f0, f0 + n) in order, the calling
 * thread unifies file k as soon as it is there and loads one itself while it
 * is not (with one thread it loads and unifies in turn). */
typedef struct feed {
    run *r;
    uint32_t n;
    _Atomic uint32_t next; /* the next file to claim */
    _Atomic int stop;      /* the caller failed: claim no more */
    uint8_t *done;         /* per file: loaded (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} feed;

static void feed_load(feed *f, uint32_t k)
{
    load_one(f->r, k);
    pthread_mutex_lock(&f->mu);
    f->done[k] = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void *feed_worker(void *arg)
{
    feed *f = arg;
    for (uint32_t k; !atomic_load(&f->stop) &&
                     (k = atomic_fetch_add(&f->next, 1)) < f->n;)
        feed_load(f, k);
    return NULL;
}

static void feed_wait(feed *f, uint32_t k)
{
    for (;;) {
        pthread_mutex_lock(&f->mu);
        bool there = f->done[k];
        pthread_mutex_unlock(&f->mu);
        if (there)
            return;
        uint32_t m = atomic_fetch_add(&f->next, 1);
        if (m < f->n) {
            feed_load(f, m); /* perhaps k, perhaps one after it */
            continue;
        }
        pthread_mutex_lock(&f->mu); /* a worker has it */
        while (!f->done[k])
            pthread_cond_wait(&f->cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
        return;
    }
}

/* Pass 1 for files [i, j): each unified in order once loaded; the first
 * damaged or conflicting file in input order stops it. */
static gpuprof_status unify_round(run *r, uint32_t i, uint32_t j,
                                  double *ratio)
{
    feed f = {.r = r, .n = j - i};
    f.done = calloc(f.n ? f.n : 1, 1);
    if (!f.done)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    pthread_mutex_init(&f.mu, NULL);
    pthread_cond_init(&f.cv, NULL);
    r->f0 = i;
    unsigned t = r->a->threads > 1 ? r->a->threads - 1 : 0;
    if (t > f.n - 1)
        t = f.n - 1; /* the caller loads the last one at least */
    pthread_t *th = t ? calloc(t, sizeof(*th)) : NULL;
    unsigned started = 0;
    while (th && started < t &&
           pthread_create(&th[started], NULL, feed_worker, &f) == 0)
        started++;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++) {
        feed_wait(&f, k - i);
        src *s = &r->s[k];
        if (s->st != GPUPROF_OK) {
            st = gpuprof__an_fail(s->st, "%s", s->err ? s->err : s->path);
            break;
        }
        st = unify_one(r, k, false);
        /* Reading it took the file, its sections and the profile. */
        uint64_t cost = s->fsize + 2 * io_bytes(s->io) +
                        (uint64_t)s->nodes * sizeof(uint32_t);
        if (s->fsize && (double)cost / s->fsize > *ratio)
            *ratio = (double)cost / s->fsize;
        if (r->budget || st != GPUPROF_OK)
            ctx_map_free(s); /* pass 2 reads it again */
    }
    atomic_store(&f.stop, 1);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    free(th);
    pthread_cond_destroy(&f.cv);
    pthread_mutex_destroy(&f.mu);
    free(f.done);
    if (st != GPUPROF_OK || r->budget)
        for (uint32_t k = i; k < j; k++) /* loaded past the failure */
            if (!r->s[k].ctx && r->s[k].io) {
                gpuprof__io_profile_free(r->s[k].io);
                r->s[k].io = NULL;
            }
    return st;
}

/* Pass 1. */
static gpuprof_status unify(run *r)
{
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (ctx_get(r, &root) != 0)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double ratio = 0;
    for (uint32_t i = r->s_lo, j; i < r->s_hi; i = j) {
        j = round_end(r, i, ratio);
        progress(r, "load", i, r->ns);
        gpuprof_status st = unify_round(r, i, j, &ratio);
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

/* The header; crc is the body's: the header's checksum covers the
 * identity (bytes 32..39) and then the body. */
static void header_at(uint8_t *h, const char *magic, uint32_t crc,
                      uint64_t body, uint32_t a, uint32_t c, uint64_t ident)
{
    memcpy(h, magic, 8);
    db_put16(h + 8, DB_MAJOR);
    db_put16(h + 10, DB_MINOR);
    db_put64(h + 16, body);
    db_put32(h + 24, a);
    db_put32(h + 28, c);
    db_put64(h + 32, ident);
    crc = gpuprof__io_crc32c_combine(gpuprof__io_crc32c(0, h + 32, 8), crc,
                                     body);
    db_put32(h + 12, crc);
}

/* A temporary file for `name` with a table of `planes` plane references.
 * Several ranks: rank 0 makes it, the others open it (dbfile_join). */
static gpuprof_status dbfile_open(run *r, dbfile *f, const char *name,
                                  uint32_t planes)
{
    size_t n = strlen(r->a->output) + strlen(name) + 64;
    f->fd = f->part = -1;
    f->path = malloc(n);
    f->tmp = malloc(n);
    f->tabsize = (uint64_t)planes * DB_PLANE_REF;
    f->tab = calloc(f->tabsize ? f->tabsize : 1, 1);
    f->origin = f->at = DB_HEADER + f->tabsize;
    if (!f->path || !f->tmp || !f->tab)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(f->path, n, "%s/%s", r->a->output, name);
    snprintf(f->tmp, n, "%s/.%s.tmp-%ld", r->a->output, name, r->pid0);
    f->peer = r->rank != 0;
    if (f->peer)
        return GPUPROF_OK;
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
    /* One rank of several: into its part, settled later (dbfile_settle). */
    int fd = f->part >= 0 ? f->part : f->fd;
    uint64_t off = f->part >= 0 ? f->at - f->origin : f->at;
    uint32_t pieces = (uint32_t)((n + PUT_PIECE - 1) / PUT_PIECE);
    if (pieces > 1) {
        uint32_t *crc = malloc(pieces * sizeof(*crc));
        if (!crc)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        r->put_fd = fd;
        r->put_buf = buf;
        r->put_n = n;
        r->put_off = off;
        r->put_crc = crc;
        parallel_for(r, pieces, put_piece);
        for (uint32_t i = 0; i < pieces; i++) /* in order */
            f->crc = gpuprof__io_crc32c_combine(
                f->crc, crc[i],
                i + 1 < pieces ? PUT_PIECE : n - (uint64_t)i * PUT_PIECE);
        free(crc);
    } else if (n) {
        f->crc = gpuprof__io_crc32c(f->crc, buf, n);
        if (!pwrite_all(fd, buf, n, off))
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
                                    uint32_t c, uint64_t ident)
{
    bool ok = pwrite_all(f->fd, f->tab, f->tabsize, DB_HEADER);
    uint32_t crc = gpuprof__io_crc32c_combine(
        gpuprof__io_crc32c(0, f->tab, f->tabsize), f->crc,
        f->at - DB_HEADER - f->tabsize);
    uint8_t h[DB_HEADER];
    header_at(h, magic, crc, f->at - DB_HEADER, a, c, ident);
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

/* Into place. An earlier database's file is moved aside first and removed
 * once meta.db is written (drop_aside), or put back if that fails: renaming
 * over it would make ext4 allocate every delayed block of the new file
 * inside rename (auto_da_alloc; 20 ms for 50 MB on our VMs) and free the
 * old file's pages there too, both on one thread. Aside, the allocation is
 * left to writeback and the old files are removed on the pool. A file
 * put where there was none is removed if the run fails (dbfile_free): a
 * failed run leaves the earlier database as it was, never a new file
 * beside it (trace.db beside an untraced database). */
static gpuprof_status dbfile_rename(run *r, dbfile *f)
{
    size_t n = strlen(f->tmp) + 8;
    char *aside = malloc(n);
    if (!aside)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(aside, n, "%s.old", f->tmp);
    bool moved = rename(f->path, aside) == 0;
    if (rename(f->tmp, f->path) != 0) {
        int e = errno;
        if (moved)
            (void)rename(aside, f->path); /* the earlier one back */
        free(aside);
        return gpuprof__an_fail(GPUPROF_E_IO,
                                "%s: cannot rename into "
                                "place: %s",
                                f->path, strerror(e));
    }
    if (moved) {
        f->aside = aside;
        r->aside[r->naside++] = f;
    } else {
        free(aside);
        f->placed = true;
    }
    free(f->tmp);
    f->tmp = NULL;
    return GPUPROF_OK;
}

static void drop_aside(run *r, uint32_t i)
{
    dbfile *f = r->aside[i];
    unlink(f->aside);
    free(f->aside);
    f->aside = NULL;
}

static void dbfile_free(dbfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->part >= 0)
        close(f->part);
    if (f->tmp && !f->peer) /* not renamed: the run failed */
        unlink(f->tmp);
    if (f->aside) /* the run failed after renaming: the earlier one back */
        (void)rename(f->aside, f->path);
    else if (f->placed) /* ... or none where there was none */
        (void)unlink(f->path);
    free(f->aside);
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
    if (!(r->pms = big_alloc(r, size)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    parallel_for(r, r->p1 - r->p0, pms_plane);
    st = dbfile_put(r, &r->f[F_PMS], r->pms, size);
    big_free(r, r->pms, size);
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
    for (uint32_t i = r->s_lo, j; i < r->s_hi; i = j) {
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
    progress(r, "values", r->np, r->np);
    return GPUPROF_OK;
}

/* Values per context (counted by pass 2, summed over the ranks) become
 * where each context's values start. */
static void cstart_prefix(run *r)
{
    for (uint32_t c = 0; c < r->nc; c++)
        r->cstart[c + 1] += r->cstart[c];
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

/* Profile p's entries of contexts [lo, hi), read back from profile.db. */
static void read_rows(run *r, uint32_t p)
{
    const uint8_t *ref = r->f[F_PMS].tab + (size_t)p * DB_PLANE_REF;
    uint64_t off = db_get64(ref);
    uint32_t pairs = db_get32(ref + 8), n = db_get32(ref + 12), a, b;
    row *w = &r->rows[p];
    *w = (row){0};
    uint8_t *all = NULL, *pb = NULL, *vb = NULL;
    if ((uint64_t)pairs * DB_PMS_PAIR <= SMALL_PAIRS) {
        if (!(all = malloc((size_t)pairs * DB_PMS_PAIR + 1)))
            goto nomem;
        if (!pread_all(r->f[F_PMS].fd, all, (size_t)pairs * DB_PMS_PAIR, off))
            goto ioerr;
        a = pairs_lower(all, pairs, r->lo);
        b = pairs_lower(all, pairs, r->hi);
    } else if (!plane_lower(r, off, pairs, r->lo, &a) ||
               !plane_lower(r, off, pairs, r->hi, &b)) {
        goto ioerr;
    }
    if (a == b) {
        free(all);
        return;
    }
    /* Pairs a..b, and the start of the one after them. */
    uint32_t np = b - a + (b < pairs);
    if (all) {
        pb = all + (size_t)a * DB_PMS_PAIR;
    } else {
        if (!(all = malloc((size_t)np * DB_PMS_PAIR)))
            goto nomem;
        pb = all;
        if (!pread_all(r->f[F_PMS].fd, pb, (size_t)np * DB_PMS_PAIR,
                       off + (uint64_t)a * DB_PMS_PAIR))
            goto ioerr;
    }
    uint32_t vs = db_get32(pb + 4);
    uint32_t ve =
        b < pairs ? db_get32(pb + (size_t)(b - a) * DB_PMS_PAIR + 4) : n;
    vb = malloc((size_t)(ve - vs) * DB_PMS_VALUE + 1);
    w->e = malloc((size_t)(ve - vs) * sizeof(*w->e) + 1);
    if (!vb || !w->e)
        goto nomem;
    if (!pread_all(r->f[F_PMS].fd, vb, (size_t)(ve - vs) * DB_PMS_VALUE,
                   off + (uint64_t)pairs * DB_PMS_PAIR +
                       (uint64_t)vs * DB_PMS_VALUE))
        goto ioerr;
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
    free(all);
    free(vb);
    return;
nomem:
    r->nomem = 1;
    errno = 0;
ioerr:
    if (errno)
        r->io_errno = errno; /* any one of them */
    else if (!r->nomem)
        r->io_errno = EIO;
    free(all);
    free(vb);
    free(w->e);
    *w = (row){0};
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
    unsigned vsize = db_cms_value(r->np), pbytes = vsize - 8;
    for (uint32_t k = 0, j; k < n; k = j) {
        double sum = 0, mn = v[k].v, mx = v[k].v, var = 0;
        for (j = k; j < n && v[j].metric == v[k].metric; j++) {
            if (pbytes == 2)
                db_put16(val, (uint16_t)v[j].profile);
            else
                db_put32(val, v[j].profile);
            put_f64(val + pbytes, v[j].v);
            val += vsize;
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
    (2 * sizeof(entry) + 2 * sizeof(cms_val) + 12u + DB_CMS_PAIR +             \
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
    if (!(r->cv = big_alloc(r, r->cv_size)))
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
              (r->cstart[c + 1] - r->cstart[c]) * db_cms_value(r->np);
        sa += (uint64_t)r->cpairs[c] * DB_STATS_REC;
    }
    size_t csize = ca - r->cms_base, ssize = sa - r->sts_base;
    r->cms = big_alloc(r, csize);
    r->sts = big_alloc(r, ssize);
    gpuprof_status st = GPUPROF_OK;
    if (!r->cms || !r->sts)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK) {
        parallel_for(r, hi - lo, cms_plane);
        st = dbfile_put(r, &r->f[F_CMS], r->cms, csize);
    }
    if (st == GPUPROF_OK)
        st = dbfile_put(r, &r->f[F_STATS], r->sts, ssize);
    big_free(r, r->cms, csize);
    big_free(r, r->sts, ssize);
    big_free(r, r->cv, r->cv_size);
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
    for (r->lo = r->c_lo; r->lo < r->c_hi; r->lo = r->hi) {
        progress(r, "transpose", r->lo, r->nc);
        r->hi = r->lo + 1;
        while (r->hi < r->c_hi &&
               r->cstart[r->hi + 1] - r->cstart[r->lo] <= fit)
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

/* A warning (the caller's callback, if any): one line naming the file. */
static void warn(run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(run *r, const char *fmt, ...)
{
    if (!r->a->warn)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->a->warn(msg, r->a->warn_user);
}

/* The profile thread of a trace's thread `seq`: the first with its OS tid;
 * a thread the profile no longer holds on its own was summed into the
 * "exited threads (merged)" state (GPUPROF_KEEP_THREADS): its records are
 * that thread's (*merged set), their nodes mapped by the trace's MERGED
 * chunks (format 1.2; unknown contexts without). UINT32_MAX: none. */
static uint32_t trace_thread(const gpuprof__io_profile *p,
                             const gpuprof__io_trace *t, uint32_t seq,
                             bool *merged)
{
    *merged = false;
    uint32_t q = 0;
    while (q < t->thread_count && t->threads[q].seq != seq)
        q++;
    if (q == t->thread_count)
        return UINT32_MAX;
    uint64_t tid = t->threads[q].tid;
    for (uint32_t k = 0; k < p->thread_count; k++)
        if (p->threads[k].tid == tid &&
            !(p->threads[k].flags & GPUPROF_IO_THREAD_MERGED))
            return k;
    for (uint32_t k = 0; k < p->thread_count; k++)
        if (p->threads[k].flags & GPUPROF_IO_THREAD_MERGED) {
            *merged = true;
            return k;
        }
    return UINT32_MAX;
}

/* One batch of a stream's records into b, contexts mapped. */
static void trace_batch(const src *s, const gpuprof__io_profile *p,
                        const gpuprof__io_trace *t,
                        const gpuprof__io_trace_rec *x, uint32_t n,
                        uint8_t *b)
{
    uint32_t cur_seq = UINT32_MAX, cur = UINT32_MAX;
    bool merged = false;
    for (uint32_t k = 0; k < n; k++, x++) {
        uint32_t seq = (uint32_t)(x->context >> 32);
        uint32_t node = (uint32_t)x->context;
        if (seq != cur_seq) {
            cur_seq = seq;
            cur = trace_thread(p, t, seq, &merged);
        }
        if (merged) /* its node in the merged state, if the trace says */
            node = gpuprof__io_trace_merged_node(t, seq, node);
        uint32_t ctx = UINT32_MAX;
        if (cur != UINT32_MAX && node < p->threads[cur].node_count)
            ctx = s->ctx[p->threads[cur].first_node + node];
        uint8_t *q = b + (size_t)k * DB_TRACE_REC;
        db_put64(q, x->start_ns);
        db_put64(q + 8, x->end_ns);
        db_put64(q + 16, x->corr);
        db_put32(q + 24, ctx);
        db_put32(q + 28, 0);
    }
}

/* A thread's dependency notes (trace 1.3) as trace.db keeps them: the
 * note's what, flags and device, and its stream, in place of a context. */
static void deps_batch(const gpuprof__io_trace_rec *x, uint32_t n, uint8_t *b)
{
    for (uint32_t k = 0; k < n; k++, x++) {
        uint8_t *q = b + (size_t)k * DB_TRACE_REC;
        db_put64(q, x->start_ns);
        db_put64(q + 8, x->end_ns);
        db_put64(q + 16, x->corr);
        db_put32(q + 24, (uint32_t)x->context);
        db_put32(q + 28, (uint32_t)(x->context >> 32 & 0x7FFFFFFF));
    }
}

/* One stream: its records, then its table entry. A thread's stream whose
 * thread the profile does not hold (its profile predates the thread) has
 * no profile to belong to: it is left out, with a warning (strict: the
 * run stops). */
static gpuprof_status trace_stream(run *r, const src *s,
                                   const gpuprof__io_profile *p,
                                   const gpuprof__io_trace *t,
                                   const gpuprof__io_trace_stream *st,
                                   uint8_t kind, const char *path)
{
    if (!st->count)
        return GPUPROF_OK;
    uint32_t own = UINT32_MAX;
    if (kind != DB_TRACE_GPU) {
        bool merged;
        own = trace_thread(p, t, st->id, &merged);
        if (own == UINT32_MAX && r->a->strict)
            return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                    "%s: thread %" PRIu32 " is not in the "
                                    "profile (--strict)", path, st->id);
        if (own == UINT32_MAX) {
            r->tr_dropped++;
            warn(r, "%s: thread %" PRIu32 " is not in the profile: its %"
                 PRIu64 " records are left out", path, st->id, st->count);
            return GPUPROF_OK;
        }
    }
    enum { BATCH = 4096 };
    uint8_t *b = malloc((size_t)BATCH * DB_TRACE_REC);
    if (!b)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint64_t at = r->tr.at;
    gpuprof_status rc = GPUPROF_OK;
    for (uint64_t i = 0; i < st->count && rc == GPUPROF_OK; i += BATCH) {
        uint32_t n =
            st->count - i < BATCH ? (uint32_t)(st->count - i) : BATCH;
        if (kind == DB_TRACE_DEPS)
            deps_batch(&st->recs[i], n, b);
        else
            trace_batch(s, p, t, &st->recs[i], n, b);
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

/* Slack between the profile's start and the trace's (both CLOCK_REALTIME,
 * read microseconds apart at init; the clock may be stepped). */
#define TRACE_START_SLACK_NS 1000000000ull

/* The trace must be its profile's process's: the same pid, tracing
 * started while that process ran. */
static gpuprof_status trace_owner(const src *s, const gpuprof__io_trace *t,
                                  const char *path)
{
    const gpuprof__io_profile *p = s->io;
    uint64_t lo = p->start_realtime_ns, hi = lo + (p->end_ns - p->start_ns);
    if (t->pid != p->pid)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: written by process %" PRIu32
                                ", not by the process of %s (%" PRIu32
                                "): a trace of another process",
                                path, t->pid, s->path, p->pid);
    if (t->start_realtime_ns + TRACE_START_SLACK_NS < lo ||
        t->start_realtime_ns > hi + TRACE_START_SLACK_NS)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: tracing started outside the run of %s: "
                                "another process with pid %" PRIu32
                                " wrote it",
                                path, s->path, t->pid);
    return GPUPROF_OK;
}

/* A trace that is empty or torn before its header ends: nothing to use;
 * said (and counted), or refused when strict. */
static gpuprof_status trace_torn(run *r, const char *path, uint64_t size)
{
    if (r->a->strict)
        return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                "%s: %s (no trace header; --strict)", path,
                                size ? "torn" : "empty");
    r->tr_damaged++;
    r->tr_ignored += size;
    warn(r, "%s: ignored %" PRIu64 " bytes: %s, no trace header", path, size,
         size ? "torn" : "empty");
    return GPUPROF_OK;
}

/* File k's trace, if it has one (its profile and node map are held). */
static gpuprof_status trace_one(run *r, uint32_t k)
{
    const src *s = &r->s[k];
    char path[4200], err[256];
    if (!s->has_trace || !trace_path(s->path, path, sizeof(path)))
        return GPUPROF_OK;
    uint8_t *buf;
    size_t got;
    int rc = gpuprof__io_read_whole(path, &buf, &got, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof__io_trace *t = NULL;
    if (got < GPUPROF_IO_TRACE_HEADER) {
        free(buf);
        return trace_torn(r, path, got);
    }
    rc = gpuprof__io_trace_decode(buf, got, &t, err, sizeof(err));
    free(buf);
    if (rc)
        return gpuprof__an_io_status(rc, path, err);
    gpuprof_status st = trace_owner(s, t, path);
    if (st == GPUPROF_OK && t->ignored_bytes) {
        if (r->a->strict)
            st = gpuprof__an_fail(GPUPROF_E_CORRUPT,
                                  "%s: damaged: %" PRIu64 " bytes at the end "
                                  "cannot be read (%s; --strict)",
                                  path, t->ignored_bytes, t->ignored_why);
        r->tr_damaged++;
        r->tr_ignored += t->ignored_bytes;
        if (st == GPUPROF_OK)
            warn(r, "%s: ignored %" PRIu64 " bytes at the end (%s)", path,
                 t->ignored_bytes, t->ignored_why);
    }
    if (st == GPUPROF_OK)
        gpuprof__io_trace_sort(t);
    for (uint32_t i = 0; i < t->stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(r, s, s->io, t, &t->streams[i],
                          t->streams[i].gpu ? DB_TRACE_GPU : DB_TRACE_REGIONS,
                          path);
    for (uint32_t i = 0; i < t->op_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(r, s, s->io, t, &t->ops[i], DB_TRACE_OPS, path);
    for (uint32_t i = 0; i < t->dep_stream_count && st == GPUPROF_OK; i++)
        st = trace_stream(r, s, s->io, t, &t->deps[i], DB_TRACE_DEPS, path);
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
              r->nstreams, r->np, r->ident);
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
    uint8_t *q = reserve(&b, DB_META_COUNTS);
    if (q) {
        db_put32(q, (uint32_t)ssize);
        db_put32(q + 4, nmetrics);
        db_put32(q + 8, r->np);
        db_put32(q + 12, r->nc);
        db_put32(q + 16, r->tr_damaged);
        db_put32(q + 20, r->tr_dropped);
        db_put64(q + 24, r->tr_ignored);
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
              b.n - DB_HEADER, r->nc, r->np, r->ident);
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

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_strict(gpuprof_an_analysis *a, int on)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->strict = on != 0;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_set_warnings(
    gpuprof_an_analysis *a, gpuprof_an_warning_fn fn, void *user)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->warn = fn;
    a->warn_user = user;
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

/* ---- the database's identity ----------------------------------------------
 * A 64-bit hash of what decides the database's bytes: the format, the
 * options that change them (program structure), and per input file its
 * path, its size and its first bytes -- a profile's 64-byte header holds
 * the checksum of its section table, which holds every section's, so it
 * stands for the whole content; a trace's header holds its process's pid
 * and start, its size how much was appended. Thread counts, budgets and
 * ranks change no byte and are not in it. Rank 0 computes it when it
 * lists the inputs. */
static uint64_t ident_mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) /* FNV-1a */
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t ident_u64(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    db_put64(b, v);
    return ident_mix(h, b, 8);
}

/* The first n bytes of a regular file into b (zeros when unreadable: the
 * run then fails on it, naming it). */
static void ident_head(const char *path, uint8_t *b, size_t n)
{
    memset(b, 0, n);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && !pread_all(fd, b, n, 0))
        memset(b, 0, n); /* shorter: the header is all of it */
    close(fd);
}

static void ident_compute(run *r)
{
    uint64_t h = ident_mix(0xCBF29CE484222325ull, "gpuprof analysis", 16);
    h = ident_u64(h, (uint64_t)DB_MAJOR << 16 | DB_MINOR);
    h = ident_u64(h, (uint64_t)(r->a->structure != 0));
    h = ident_u64(h, r->ns);
    for (uint32_t i = 0; i < r->ns; i++) {
        const src *s = &r->s[i];
        uint8_t head[64];
        char tp[4200];
        h = ident_u64(h, strlen(s->path));
        h = ident_mix(h, s->path, strlen(s->path));
        h = ident_u64(h, s->fsize);
        ident_head(s->path, head, sizeof(head));
        h = ident_mix(h, head, sizeof(head));
        h = ident_u64(h, (uint64_t)s->has_trace << 63 | s->tsize);
        if (s->has_trace && trace_path(s->path, tp, sizeof(tp))) {
            ident_head(tp, head, GPUPROF_IO_TRACE_HEADER);
            h = ident_mix(h, head, GPUPROF_IO_TRACE_HEADER);
        }
    }
    h ^= h >> 33; /* a finalizer: every input bit reaches every output bit */
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    r->ident = h ^ h >> 33;
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
            if (trace_path(files[i], tp, sizeof(tp)) && stat(tp, &sb) == 0) {
                r->s[r->ns].has_trace = 1; /* empty or odd: said later */
                r->s[r->ns].tsize =
                    S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
            }
            r->ns++;
        }
        free(files);
    }
    if (!r->ns)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "no profiles (*.gpuprof) in the inputs");
    ident_compute(r);
    return GPUPROF_OK;
}

static void free_row(run *r, uint32_t p)
{
    free(r->rows[p].e);
    r->rows[p].e = NULL;
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
    if (r->rows) /* on the pool: a heap trimmed as its blocks go is the
                    kernel's work (8 ms on one thread for the bench's) */
        parallel_for(r, r->np, free_row);
    free(r->rows);
    free(r->m);
    free(r->c);
    free(r->slot);
    free(r->p);
    free(r->cstart);
    free(r->slice_count);
    big_free(r, r->cv, r->cv_size);
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
    if (r->mst)
        gpuprof__io_strtab_free(r->mst);
}

/* ---- several ranks (an_coll.h) ------------------------------------------
 * Each step that may fail on one rank is followed by agree(): the ranks
 * stop together, at the same place, with the first failing rank's
 * message, so that none waits in a collective the others never reach.
 * Rank k unifies its block of files (pass 1) into a tree of its own;
 * rank 0 merges the trees in rank order (tree_merge) and every rank
 * adopts the result and maps its own ids onto it; pass 2 writes each
 * rank's profiles, pass 3 each rank's contexts, into parts that
 * dbfile_settle puts in place. */
static gpuprof_status transport_fail(void)
{
    return gpuprof__an_fail(GPUPROF_E_IO,
                            "the ranks could not communicate (MPI failed)");
}

static void put_u32(buf *b, uint32_t v)
{
    uint8_t *q = reserve(b, 4);
    if (q)
        db_put32(q, v);
}

static void put_u64(buf *b, uint64_t v)
{
    uint8_t *q = reserve(b, 8);
    if (q)
        db_put64(q, v);
}

static void put_bytes(buf *b, const void *p, uint64_t n)
{
    uint8_t *q = n ? reserve(b, n) : NULL;
    if (q)
        memcpy(q, p, n);
}

typedef struct rdr { /* reads what put_* wrote */
    const uint8_t *p;
    uint64_t n, at;
    bool bad;
} rdr;

static const uint8_t *get_bytes(rdr *d, uint64_t n)
{
    if (d->bad || n > d->n - d->at) {
        d->bad = true;
        return NULL;
    }
    d->at += n;
    return d->p + d->at - n;
}

static uint32_t get_u32(rdr *d)
{
    const uint8_t *q = get_bytes(d, 4);
    return q ? db_get32(q) : 0;
}

static uint64_t get_u64(rdr *d)
{
    const uint8_t *q = get_bytes(d, 8);
    return q ? db_get64(q) : 0;
}

/* The status every rank ends with: the first failing rank's, with its
 * message naming that rank (or r->blame, the rank a failure is about);
 * GPUPROF_OK when none failed. One process: st. */
static gpuprof_status agree(run *r, gpuprof_status st)
{
    if (r->nranks == 1)
        return st;
    const gpuprof__an_coll *c = r->coll;
    uint64_t first = st != GPUPROF_OK ? (uint64_t)r->rank : (uint64_t)r->nranks;
    if (c->allreduce_u64(c->ctx, &first, 1, GPUPROF__AN_MIN))
        return transport_fail();
    if (first >= (uint64_t)r->nranks)
        return GPUPROF_OK;
    buf b = {0};
    void *blob = NULL;
    uint64_t size = 0;
    if (first == (uint64_t)r->rank) {
        const char *msg = gpuprof_an_last_error();
        put_u32(&b, (uint32_t)st);
        put_u32(&b, (uint32_t)(r->blame >= 0 ? r->blame : r->rank));
        put_bytes(&b, msg, strlen(msg));
        blob = b.nomem ? NULL : b.d;
        size = b.nomem ? 0 : b.n;
    }
    if (c->bcast(c->ctx, (int)first, &blob, &size)) {
        if (blob != b.d)
            free(blob);
        free(b.d);
        return transport_fail();
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

/* The i-th of n equal shares of `total`, rounded down, without overflow. */
static uint64_t share(uint64_t total, uint64_t i, uint64_t n)
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
    r->pid0 = (long)get_u64(&d);
    uint32_t n = get_u32(&d);
    if (d.bad || n > size / 24)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged list of inputs");
    if (!(r->s = calloc((size_t)n + 1, sizeof(*r->s))))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t fsize = get_u64(&d), tsize = get_u64(&d);
        uint32_t has_trace = get_u32(&d), len = get_u32(&d);
        const uint8_t *path = get_bytes(&d, len);
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
static gpuprof_status inputs(run *r)
{
    r->pid0 = (long)getpid();
    if (r->nranks == 1) {
        r->s_hi = 0;
        gpuprof_status st = collect_inputs(r);
        r->s_hi = r->ns;
        return st;
    }
    const gpuprof__an_coll *c = r->coll;
    gpuprof_status st = r->rank == 0 ? collect_inputs(r) : GPUPROF_OK;
    buf b = {0};
    for (uint32_t i = 0; st == GPUPROF_OK && r->rank == 0 && i < r->ns; i++) {
        if (!i) {
            put_u64(&b, (uint64_t)r->pid0);
            put_u32(&b, r->ns);
        }
        put_u64(&b, r->s[i].fsize);
        put_u64(&b, r->s[i].tsize);
        put_u32(&b, r->s[i].has_trace);
        put_u32(&b, (uint32_t)strlen(r->s[i].path));
        put_bytes(&b, r->s[i].path, strlen(r->s[i].path));
    }
    if (st == GPUPROF_OK && b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if ((st = agree(r, st)) != GPUPROF_OK) {
        free(b.d);
        return st;
    }
    void *blob = b.d;
    uint64_t size = b.n;
    if (c->bcast(c->ctx, 0, &blob, &size)) {
        free(b.d);
        return transport_fail();
    }
    if (r->rank != 0) {
        st = inputs_parse(r, blob, size);
        free(blob);
    }
    free(b.d);
    if ((st = agree(r, st)) != GPUPROF_OK)
        return st;
    uint64_t total = 0;
    for (uint32_t i = 0; i < r->ns; i++)
        total += r->s[i].fsize + r->s[i].tsize + 1;
    r->s_lo = file_at(r, share(total, (uint64_t)r->rank, (uint64_t)r->nranks));
    r->s_hi = r->rank + 1 == r->nranks
                  ? r->ns
                  : file_at(r, share(total, (uint64_t)r->rank + 1,
                                     (uint64_t)r->nranks));
    return GPUPROF_OK;
}

/* ---- several ranks: one tree ----------------------------------------------
 * A tree blob: strings, metric strings, metrics, contexts and profiles,
 * each in the order pass 1 made them. A rank's own keeps its metric names
 * apart (mst): which of them the merged strings hold depends on the
 * ranks before it. */
/* Records: a metric is name, desc, unit|combine<<8|kind<<16|type<<24, at,
 * src; a context parent, kind, name, aux, u64 key; a profile src, thread,
 * host, tname, file, pid, flags, rank, u64 tid. */
#define TB_METRIC 20u
#define TB_CTX 24u
#define TB_PROF 40u

static void tree_blob(const run *r, buf *b)
{
    uint64_t ssize = 0, msize = 0;
    const char *sd = gpuprof__io_strtab_data(r->st, &ssize);
    const char *md = r->mst ? gpuprof__io_strtab_data(r->mst, &msize) : NULL;
    put_u64(b, ssize);
    put_bytes(b, sd, ssize);
    put_u64(b, msize);
    put_bytes(b, md, msize);
    put_u32(b, r->structured);
    put_u32(b, r->nm);
    for (uint32_t i = 0; i < r->nm; i++) {
        const gmetric *m = &r->m[i];
        put_u32(b, m->name);
        put_u32(b, m->desc);
        put_u32(b, (uint32_t)m->unit | (uint32_t)m->combine << 8 |
                       (uint32_t)m->kind << 16 | (uint32_t)m->type << 24);
        put_u32(b, m->at);
        put_u32(b, m->src);
    }
    put_u32(b, r->nc);
    for (uint32_t i = 0; i < r->nc; i++) {
        const gctx *c = &r->c[i];
        put_u32(b, c->parent);
        put_u32(b, c->kind);
        put_u32(b, c->name);
        put_u32(b, c->aux);
        put_u64(b, c->key);
    }
    put_u32(b, r->np);
    for (uint32_t i = 0; i < r->np; i++) {
        const gprof *p = &r->p[i];
        uint32_t w[8] = {p->src,  p->thread, p->host,  p->tname,
                         p->file, p->pid,    p->flags, (uint32_t)p->rank};
        for (int k = 0; k < 8; k++)
            put_u32(b, w[k]);
        put_u64(b, p->tid);
    }
}

typedef struct tview { /* a tree blob, read in place */
    const char *s, *ms;
    uint64_t ssize, msize;
    uint32_t structured, nm, nc, np;
    const uint8_t *m, *c, *p;
} tview;

static bool tree_view(const void *blob, uint64_t size, tview *v)
{
    rdr d = {blob, size, 0, false};
    v->ssize = get_u64(&d);
    v->s = (const char *)get_bytes(&d, v->ssize);
    v->msize = get_u64(&d);
    v->ms = (const char *)get_bytes(&d, v->msize);
    v->structured = get_u32(&d);
    v->nm = get_u32(&d);
    v->m = get_bytes(&d, (uint64_t)v->nm * TB_METRIC);
    v->nc = get_u32(&d);
    v->c = get_bytes(&d, (uint64_t)v->nc * TB_CTX);
    v->np = get_u32(&d);
    v->p = get_bytes(&d, (uint64_t)v->np * TB_PROF);
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

/* Metric record q of tree v, in g: found by name, else added. */
static gpuprof_status metric_merge(run *g, const tview *v, const uint8_t *q,
                                   uint32_t *out)
{
    uint32_t name = db_get32(q), desc = db_get32(q + 4), how = db_get32(q + 8);
    uint32_t file = db_get32(q + 16);
    if (name >= v->msize || desc >= v->msize || file >= g->ns)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    gmetric m = {0,
                 0,
                 (uint8_t)how,
                 (uint8_t)(how >> 8),
                 (uint8_t)(how >> 16),
                 (uint8_t)(how >> 24),
                 0,
                 file};
    for (uint32_t i = 0; i < g->nm; i++) {
        if (strcmp(metric_str(g, g->m[i].name), v->ms + name))
            continue;
        if (g->m[i].unit != m.unit || g->m[i].combine != m.combine ||
            g->m[i].type != m.type)
            return gpuprof__an_fail(GPUPROF_E_INVALID,
                                    "%s: metric %s: unit, type or combination "
                                    "differs from an earlier profile",
                                    g->s[file].path, v->ms + name);
        *out = i;
        return GPUPROF_OK;
    }
    if (g->nm == MAX_BASE_METRICS || !GROW(g->m, g->nm, g->capm))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: %s", g->s[file].path,
                                "too many metrics (or out of memory)");
    m.name = intern(g, v->ms + name);
    m.desc = intern(g, v->ms + desc);
    g->m[g->nm] = m;
    *out = g->nm++;
    return GPUPROF_OK;
}

/* Strings and metrics of v into g, in the order the single-process run
 * interns them: each string where v made it, each metric's name and
 * description where v added the metric (when g lacks the metric). */
static gpuprof_status strings_merge(run *g, const tview *v, tmaps *mp)
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
            gpuprof_status st = metric_merge(g, v, q, &mp->metric[mi++]);
            if (st != GPUPROF_OK)
                return st;
            continue;
        }
        mp->sfrom[mp->nstr] = (uint32_t)o;
        mp->sto[mp->nstr++] = intern(g, v->s + o);
        o += strlen(v->s + o) + 1;
    }
    return g->nomem ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                    : GPUPROF_OK;
}

/* Tree v (a rank's, from pass 1) into g after what g holds, ids as the
 * single-process run gives them; its profiles appended when `add`; mp
 * says what v's ids are in g. */
static gpuprof_status tree_merge(run *g, const tview *v, tmaps *mp, bool add)
{
    gpuprof_status st = strings_merge(g, v, mp);
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
        if ((mp->ctx[i] = ctx_get(g, &k)) == UINT32_MAX)
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; st == GPUPROF_OK && add && i < v->np; i++) {
        const uint8_t *q = v->p + (size_t)i * TB_PROF;
        if (!GROW(g->p, g->np, g->capp))
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
    g->structured = g->structured || v->structured;
    if (st == GPUPROF_OK && mp->bad)
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    return st;
}

static void tree_free(run *r)
{
    if (r->st)
        gpuprof__io_strtab_free(r->st);
    if (r->mst)
        gpuprof__io_strtab_free(r->mst);
    free(r->m);
    free(r->c);
    free(r->slot);
    free(r->p);
    r->st = r->mst = NULL;
    r->m = NULL, r->c = NULL, r->slot = NULL, r->p = NULL;
    r->nm = r->capm = r->nc = r->capc = r->slot_mask = r->np = r->capp = 0;
}

/* The merged tree v becomes r's. */
static gpuprof_status tree_adopt(run *r, const tview *v)
{
    tree_free(r);
    if (!(r->st = gpuprof__io_strtab_new()) ||
        !(r->m = calloc((size_t)v->nm + 1, sizeof(*r->m))) ||
        !(r->c = calloc((size_t)v->nc + 1, sizeof(*r->c))) ||
        !(r->p = calloc((size_t)v->np + 1, sizeof(*r->p))))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint64_t o = 1; o < v->ssize; o += strlen(v->s + o) + 1)
        if (intern(r, v->s + o) != o)
            return r->nomem
                       ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                       : gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    for (uint32_t i = 0; i < v->nm; i++) {
        const uint8_t *q = v->m + (size_t)i * TB_METRIC;
        uint32_t how = db_get32(q + 8);
        r->m[i] = (gmetric){db_get32(q),
                            db_get32(q + 4),
                            (uint8_t)how,
                            (uint8_t)(how >> 8),
                            (uint8_t)(how >> 16),
                            (uint8_t)(how >> 24),
                            0,
                            db_get32(q + 16)};
    }
    r->nm = r->capm = v->nm;
    for (uint32_t i = 0; i < v->nc; i++) {
        const uint8_t *q = v->c + (size_t)i * TB_CTX;
        r->c[i] = (gctx){db_get32(q), (uint8_t)db_get32(q + 4), db_get32(q + 8),
                         db_get32(q + 12), db_get64(q + 16)};
    }
    r->nc = r->capc = v->nc;
    for (uint32_t i = 0; i < v->np; i++) {
        const uint8_t *q = v->p + (size_t)i * TB_PROF;
        r->p[i] = (gprof){
            db_get32(q),      db_get32(q + 4),           db_get32(q + 8),
            db_get32(q + 12), db_get32(q + 16),          db_get32(q + 20),
            db_get32(q + 24), (int32_t)db_get32(q + 28), db_get64(q + 32)};
    }
    r->np = r->capp = v->np;
    r->structured = v->structured;
    return ctx_rehash(r) ? GPUPROF_OK
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
    }
    /* Profiles are in file order: this rank's start at its first file's. */
    uint32_t lo = 0, hi = r->np;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->p[mid].src < r->s_lo)
            lo = mid + 1;
        else
            hi = mid;
    }
    r->pr_lo = lo;
    r->pr_hi = lo + own->np;
    if (r->pr_hi > r->np || (own->np && r->p[lo].src != db_get32(own->p)))
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "profiles out of order");
    for (uint32_t i = r->s_lo; i < r->s_hi; i++)
        r->s[i].p0 += r->pr_lo;
    for (uint32_t i = 0; i < r->nsf; i++)
        r->sf[i].module = smap(mp, r->sf[i].module);
    for (uint32_t i = 0; i < r->nlvl; i++) {
        r->lvl[i].fn = smap(mp, r->lvl[i].fn);
        r->lvl[i].module = smap(mp, r->lvl[i].module);
        r->lvl[i].file = smap(mp, r->lvl[i].file);
    }
    if (mp->bad)
        return gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    if (r->nsf && !frames_rehash(r))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

typedef struct merging { /* rank 0 merging the trees in rank order */
    run g;
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
        m->st = tree_merge(&m->g, &v, &mp, true);
    if (m->st != GPUPROF_OK)
        m->blame = rank;
    tmaps_free(&mp);
}

/* After pass 1 (status st): the merged tree on every rank, in the ids the
 * single-process run gives, each rank's own ids mapped onto it. */
static gpuprof_status merge(run *r, gpuprof_status st)
{
    const gpuprof__an_coll *c = r->coll;
    buf own = {0}, all = {0};
    if (st == GPUPROF_OK)
        tree_blob(r, &own);
    if (st == GPUPROF_OK && own.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if ((st = agree(r, st)) != GPUPROF_OK) {
        free(own.d);
        return st;
    }
    merging m = {.g = {.a = r->a, .s = r->s, .ns = r->ns}, .blame = -1};
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (r->rank == 0 &&
        (!(m.g.st = gpuprof__io_strtab_new()) || ctx_get(&m.g, &root) != 0))
        m.st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (c->gather(c->ctx, own.d, own.n, merge_one, &m)) {
        tree_free(&m.g);
        free(own.d);
        return transport_fail();
    }
    if (r->rank == 0 && m.st == GPUPROF_OK) {
        tree_blob(&m.g, &all);
        if (all.nomem)
            m.st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    tree_free(&m.g);
    r->blame = m.blame;
    st = agree(r, m.st);
    r->blame = -1;
    void *blob = all.d;
    uint64_t size = all.n;
    if (st == GPUPROF_OK && c->bcast(c->ctx, 0, &blob, &size))
        st = transport_fail(), blob = all.d;
    if (st != GPUPROF_OK) {
        free(all.d);
        free(own.d);
        return st;
    }
    tview gv, ov;
    tmaps mp = {0};
    if (!tree_view(blob, size, &gv) || !tree_view(own.d, own.n, &ov))
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL, "damaged tree");
    if (st == GPUPROF_OK)
        st = tree_adopt(r, &gv);
    uint32_t nc = r->nc, nm = r->nm;
    uint64_t ssize = 0;
    if (r->st)
        gpuprof__io_strtab_data(r->st, &ssize);
    if (st == GPUPROF_OK)
        st = tree_merge(r, &ov, &mp, false);
    uint64_t after = 0;
    if (r->st)
        gpuprof__io_strtab_data(r->st, &after);
    if (st == GPUPROF_OK && (r->nc != nc || r->nm != nm || after != ssize))
        st = gpuprof__an_fail(GPUPROF_E_INTERNAL,
                              "the merged tree lacks this rank's");
    if (st == GPUPROF_OK)
        st = tree_remap(r, &mp, &ov);
    tmaps_free(&mp);
    if (blob != all.d)
        free(blob);
    free(all.d);
    free(own.d);
    return agree(r, st);
}

/* ---- several ranks: the files ------------------------------------------ */
/* Rank 0 made the temporary files: the others open them; every rank makes
 * a part of its own for each (unlinked at once: nothing to clean up). */
static gpuprof_status dbfile_join(run *r, dbfile *f, const char *name)
{
    if (f->peer && (f->fd = open(f->tmp, O_RDWR | O_CLOEXEC)) < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot open: %s", f->tmp,
                                strerror(errno));
    size_t n = strlen(r->a->output) + strlen(name) + 64;
    char *p = malloc(n);
    if (!p)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(p, n, "%s/.%s.part-%ld-%d", r->a->output, name, r->pid0, r->rank);
    f->part = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = errno;
    if (f->part >= 0)
        unlink(p);
    gpuprof_status st =
        f->part < 0 ? gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", p,
                                       strerror(e))
                    : GPUPROF_OK;
    free(p);
    return st;
}

/* The shared file again, after dbfile_settle closed it and the ranks
 * agreed: what the others wrote is read from it (close-to-open: a network
 * file system writes back at close and revalidates what it cached at
 * open; a local one costs nothing). */
static gpuprof_status dbfile_reopen(dbfile *f)
{
    if ((f->fd = open(f->tmp, O_RDWR | O_CLOEXEC)) < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot open: %s", f->tmp,
                                strerror(errno));
    return GPUPROF_OK;
}

/* n bytes of `from` (from its start) into `to` at `at`. */
static bool copy_part(int from, int to, uint64_t n, uint64_t at)
{
    loff_t in = 0, out = (loff_t)at;
    while (n) { /* in the kernel where it can (same file system) */
        ssize_t c = copy_file_range(from, &in, to, &out,
                                    n < (1u << 30) ? n : (1u << 30), 0);
        if (c < 0 && errno == EINTR)
            continue;
        if (c <= 0)
            break;
        n -= (uint64_t)c;
    }
    enum { CHUNK = 4 << 20 };
    uint8_t *b = n ? malloc(CHUNK) : NULL;
    if (n && !b)
        return false;
    while (n) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        if (!pread_all(from, b, k, (uint64_t)in) ||
            !pwrite_all(to, b, k, (uint64_t)out)) {
            free(b);
            return false;
        }
        in += (loff_t)k, out += (loff_t)k, n -= k;
    }
    free(b);
    return true;
}

/* Every rank's part of files fs[0..n), in rank order, into the shared
 * files: an exclusive scan of their sizes gives each part its place, so
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
        return transport_fail();
    gpuprof_status st = GPUPROF_OK;
    for (int i = 0; i < n; i++) {
        dbfile *f = fs[i];
        if (st == GPUPROF_OK && size[i] &&
            !copy_part(f->part, f->fd, size[i], f->origin + before[i]))
            st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->tmp,
                                  strerror(errno ? errno : EIO));
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
        uint32_t crc = get_u32(&d);
        k->crc[i] = gpuprof__io_crc32c_combine(k->crc[i], crc, get_u64(&d));
    }
    k->tr_damaged += get_u32(&d);
    k->tr_dropped += get_u32(&d);
    k->tr_ignored += get_u64(&d);
    uint32_t streams = get_u32(&d);
    const uint8_t *t = get_bytes(&d, (uint64_t)streams * DB_TRACE_STREAM);
    if (t)
        put_bytes(&k->more, t, (uint64_t)streams * DB_TRACE_STREAM);
    if (d.bad && k->st == GPUPROF_OK)
        k->st =
            gpuprof__an_fail(GPUPROF_E_INTERNAL, "rank %d: damaged part", rank);
}

/* After pass 2: profile.db's and trace.db's parts in place; the plane
 * references and the values per context summed over the ranks (every
 * rank reads profile.db back in pass 3); rank 0 has the checksums and
 * trace.db's streams. */
static gpuprof_status settle_values(run *r, bool traced)
{
    const gpuprof__an_coll *c = r->coll;
    dbfile *pms = &r->f[F_PMS], *fs[2] = {pms, &r->tr};
    uint64_t delta[2], size[2];
    uint32_t crc[2] = {pms->crc, r->tr.crc};
    gpuprof_status st = dbfile_settle(r, fs, traced ? 2 : 1, delta, size);
    for (uint32_t p = r->pr_lo; p < r->pr_hi; p++)
        ref_move(pms, p, delta[0]);
    for (uint32_t i = 0; traced && i < r->nstreams; i++)
        db_put64(r->ttab + (size_t)i * DB_TRACE_STREAM + 32,
                 db_get64(r->ttab + (size_t)i * DB_TRACE_STREAM + 32) +
                     delta[1]);
    if ((st = agree(r, st)) != GPUPROF_OK)
        return st;
    st = dbfile_reopen(pms); /* pass 3 reads it back */
    if (st == GPUPROF_OK && traced && r->rank == 0)
        st = dbfile_reopen(&r->tr); /* for the table and the header */
    if (c->allreduce_u64(c->ctx, (uint64_t *)(void *)pms->tab,
                         (size_t)r->np * DB_PLANE_REF / 8, GPUPROF__AN_SUM) ||
        c->allreduce_u64(c->ctx, r->cstart, (size_t)r->nc + 1, GPUPROF__AN_SUM))
        return transport_fail();
    buf b = {0};
    for (int i = 0; i < 2; i++) {
        put_u32(&b, i == 0 || traced ? crc[i] : 0);
        put_u64(&b, i == 0 || traced ? size[i] : 0);
    }
    put_u32(&b, r->tr_damaged);
    put_u32(&b, r->tr_dropped);
    put_u64(&b, r->tr_ignored);
    put_u32(&b, traced ? r->nstreams : 0);
    put_bytes(&b, r->ttab,
              traced ? (uint64_t)r->nstreams * DB_TRACE_STREAM : 0);
    collect k = {.r = r, .st = GPUPROF_OK};
    int rc = c->gather(c->ctx, b.nomem ? NULL : b.d, b.nomem ? 0 : b.n,
                       collect_values, &k);
    free(b.d);
    if (rc) {
        free(k.more.d);
        return transport_fail();
    }
    if (st == GPUPROF_OK && b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (r->rank == 0) {
        if (st == GPUPROF_OK && k.more.nomem)
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        if (st == GPUPROF_OK)
            st = k.st;
        pms->crc = k.crc[0];
        r->tr.crc = k.crc[1];
        r->tr_damaged = k.tr_damaged;
        r->tr_dropped = k.tr_dropped;
        r->tr_ignored = k.tr_ignored;
        free(r->ttab);
        r->ttab = k.more.d;
        r->nstreams = (uint32_t)(k.more.n / DB_TRACE_STREAM);
        r->captab = r->nstreams;
    } else {
        free(k.more.d);
    }
    return agree(r, st);
}

static void collect_contexts(void *arg, int rank, const void *blob, uint64_t n)
{
    collect *k = arg;
    rdr d = {blob, n, 0, false};
    uint32_t lo = get_u32(&d), hi = get_u32(&d);
    for (int i = 0; i < 2; i++) {
        uint32_t crc = get_u32(&d);
        k->crc[i] = gpuprof__io_crc32c_combine(k->crc[i], crc, get_u64(&d));
    }
    for (int i = 0; i < 2 && !d.bad; i++) {
        dbfile *f = &k->r->f[i ? F_STATS : F_CMS];
        const uint8_t *t =
            lo <= hi && hi <= k->r->nc
                ? get_bytes(&d, (uint64_t)(hi - lo) * DB_PLANE_REF)
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
static gpuprof_status settle_contexts(run *r)
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
    if ((st = agree(r, st)) != GPUPROF_OK)
        return st;
    for (int i = 0; i < 2 && st == GPUPROF_OK && r->rank == 0; i++)
        st = dbfile_reopen(fs[i]); /* for the tables and the headers */
    buf b = {0};
    put_u32(&b, r->c_lo);
    put_u32(&b, r->c_hi);
    for (int i = 0; i < 2; i++) {
        put_u32(&b, crc[i]);
        put_u64(&b, size[i]);
    }
    for (int i = 0; i < 2; i++)
        put_bytes(&b, fs[i]->tab + (size_t)r->c_lo * DB_PLANE_REF,
                  (uint64_t)(r->c_hi - r->c_lo) * DB_PLANE_REF);
    collect k = {.r = r, .st = GPUPROF_OK};
    int rc = c->gather(c->ctx, b.nomem ? NULL : b.d, b.nomem ? 0 : b.n,
                       collect_contexts, &k);
    free(b.d);
    if (rc)
        return transport_fail();
    if (b.nomem)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (r->rank == 0) {
        if (st == GPUPROF_OK)
            st = k.st;
        fs[0]->crc = k.crc[0];
        fs[1]->crc = k.crc[1];
    }
    return agree(r, st);
}

/* The first context with at least `want` values before it. */
static uint32_t ctx_at(const run *r, uint64_t want)
{
    uint32_t lo = 0, hi = r->nc;
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
static void rank_contexts(run *r)
{
    uint64_t total = r->cstart[r->nc], k = (uint64_t)r->rank,
             n = (uint64_t)r->nranks;
    r->c_lo = r->rank ? ctx_at(r, share(total, k, n)) : 0;
    r->c_hi = k + 1 == n ? r->nc : ctx_at(r, share(total, k + 1, n));
}

/* ---- a run ----------------------------------------------------------- */
/* Bytes the process needs beside the run's own (code, libraries, stacks):
 * what a budget must leave aside. */
#define BUDGET_BASE (8u << 20)

/* Rank 0, at the end: the tables and headers, the files renamed into
 * place, meta.db last. */
static gpuprof_status finish(run *r, bool traced)
{
    progress(r, "write", 0, 4);
    gpuprof_status st = dbfile_finish(&r->f[F_STATS], DB_STATS_MAGIC, r->nc,
                                      2 * r->nm, r->ident);
    if (st == GPUPROF_OK)
        st = dbfile_finish(&r->f[F_CMS], DB_CMS_MAGIC, r->nc, r->np, r->ident);
    if (st == GPUPROF_OK)
        st = dbfile_finish(&r->f[F_PMS], DB_PMS_MAGIC, r->np, r->nc, r->ident);
    if (st == GPUPROF_OK && traced)
        st = trace_finish(r);
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++) /* stats, cct, profile */
        st = dbfile_rename(r, &r->f[2 - i]);
    if (st == GPUPROF_OK && traced)
        st = dbfile_rename(r, &r->tr);
    if (st == GPUPROF_OK && !traced) { /* none from an earlier run */
        dbfile *f = &r->tr; /* unused: the earlier one goes aside */
        size_t n = strlen(r->a->output) + 64;
        if (!(f->path = malloc(n)) || !(f->aside = malloc(n)))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        snprintf(f->path, n, "%s/trace.db", r->a->output);
        snprintf(f->aside, n, "%s/.trace.db.tmp-%ld.old", r->a->output,
                 r->pid0);
        if (rename(f->path, f->aside) == 0) {
            r->aside[r->naside++] = f;
        } else {
            int e = errno;
            free(f->aside);
            f->aside = NULL;
            if (e != ENOENT)
                st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot remove: %s",
                                      f->path, strerror(e));
        }
    }
    if (st == GPUPROF_OK) /* last: a reader checks the others agree */
        st = write_meta(r);
    if (st == GPUPROF_OK) {
        parallel_for(r, r->naside, drop_aside);
        for (int i = 0; i < 3; i++)
            r->f[i].placed = false; /* the database's now */
        r->tr.placed = false;
        progress(r, "write", 4, 4);
    }
    return st;
}

/* Makes the output directory and the files (every rank joins rank 0's). */
static gpuprof_status open_files(run *r, bool traced)
{
    gpuprof_status st = GPUPROF_OK;
    if (r->rank == 0 && mkdir(r->a->output, 0755) == 0)
        r->made_dir = true;
    else if (r->rank == 0 && errno != EEXIST)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s",
                              r->a->output, strerror(errno));
    if (st == GPUPROF_OK)
        st = dbfile_open(r, &r->f[F_PMS], "profile.db", r->np);
    if (st == GPUPROF_OK)
        st = dbfile_open(r, &r->f[F_CMS], "cct.db", r->nc);
    if (st == GPUPROF_OK)
        st = dbfile_open(r, &r->f[F_STATS], "stats.db", r->nc);
    if (st == GPUPROF_OK && traced)
        st = dbfile_open(r, &r->tr, "trace.db", 0);
    if ((st = agree(r, st)) != GPUPROF_OK || r->nranks == 1)
        return st;
    static const char *const names[] = {"profile.db", "cct.db", "stats.db"};
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++)
        st = dbfile_join(r, &r->f[i], names[i]);
    if (st == GPUPROF_OK && traced)
        st = dbfile_join(r, &r->tr, "trace.db");
    return agree(r, st);
}

/* Before any work: an output that can never be written is said at once,
 * not after minutes of reading (rank 0 looks, the ranks agree). */
static gpuprof_status output_usable(run *r)
{
    const char *out = r->a->output;
    struct stat st;
    if (r->rank != 0)
        return GPUPROF_OK;
    if (stat(out, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return gpuprof__an_fail(GPUPROF_E_IO,
                                    "%s: exists and is not a directory", out);
        if (access(out, W_OK | X_OK) != 0)
            return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", out,
                                    strerror(errno));
        return GPUPROF_OK;
    }
    if (errno != ENOENT)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", out, strerror(errno));
    size_t n = strlen(out); /* to be made: its parent must take it */
    char *parent = malloc(n + 2);
    if (!parent)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    memcpy(parent, out, n + 1);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash)
        strcpy(parent, ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    gpuprof_status r0 = GPUPROF_OK;
    if (access(parent, W_OK | X_OK) != 0)
        r0 = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s: %s", out,
                              parent, strerror(errno));
    free(parent);
    return r0;
}

/* The passes, the ranks agreeing after each step that may fail. */
static gpuprof_status run_steps(run *r)
{
    bool many = r->nranks > 1;
    gpuprof_status st = agree(r, output_usable(r));
    if (st == GPUPROF_OK)
        st = inputs(r);
    if (st != GPUPROF_OK)
        return st;
    if (!(r->st = gpuprof__io_strtab_new()) ||
        (many && !(r->mst = gpuprof__io_strtab_new())))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK)
        st = unify(r);
    if (many && (st = merge(r, st)) != GPUPROF_OK)
        return st;
    if (st == GPUPROF_OK && r->budget && kept_bytes(r) >= r->budget)
        st = gpuprof__an_fail(
            GPUPROF_E_LIMIT,
            "a memory budget of %llu MiB is too small: the "
            "calling context tree and tables of these profiles take %llu MiB",
            (unsigned long long)(r->a->memory >> 20),
            (unsigned long long)((kept_bytes(r) + BUDGET_BASE) >> 20) + 1);
    if ((st = agree(r, st)) != GPUPROF_OK)
        return st;
    bool traced = false;
    for (uint32_t i = 0; i < r->ns; i++)
        traced = traced || r->s[i].has_trace;
    if ((st = open_files(r, traced)) != GPUPROF_OK)
        return st;
    if ((st = agree(r, values_pass(r))) != GPUPROF_OK)
        return st;
    if (many && (st = settle_values(r, traced)) != GPUPROF_OK)
        return st;
    cstart_prefix(r);
    if (many)
        rank_contexts(r);
    else
        r->c_lo = 0, r->c_hi = r->nc;
    if ((st = agree(r, transpose(r))) != GPUPROF_OK)
        return st;
    if (many && (st = settle_contexts(r)) != GPUPROF_OK)
        return st;
    return agree(r, r->rank == 0 ? finish(r, traced) : GPUPROF_OK);
}

static gpuprof_status run_ranks(gpuprof_an_analysis *a,
                                const gpuprof__an_coll *c)
{
    if (!a || !a->ninputs || !a->output)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "an analysis needs inputs and an output");
    run r = {.a = a,
             .f = {{.fd = -1, .part = -1},
                   {.fd = -1, .part = -1},
                   {.fd = -1, .part = -1}},
             .tr = {.fd = -1, .part = -1},
             .coll = c,
             .rank = c ? c->rank : 0,
             .nranks = c ? c->size : 1,
             .blame = -1};
    r.budget = a->memory ? a->memory - BUDGET_BASE : 0;
    /* Several ranks read every profile's values back from profile.db. */
    r.keep_rows = !a->memory && r.nranks == 1;
    gpuprof_status st = run_steps(&r);
    run_free(&r);
    if (st != GPUPROF_OK && r.made_dir)
        (void)rmdir(a->output); /* nothing written: no directory either */
    return st;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_run(gpuprof_an_analysis *a)
{
    return run_ranks(a, NULL);
}

gpuprof_status gpuprof__an_analysis_run_ranks(gpuprof_an_analysis *a,
                                              const gpuprof__an_coll *c)
{
    if (!c || c->size < 1 || c->rank < 0 || c->rank >= c->size)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad ranks");
    return run_ranks(a, c);
}
