/*
 * an_unify.c - pass 1 of the aggregation (an_agg.h): every file loaded
 * (in parallel) and unified (serially, in input order) into the one tree:
 * metrics by name, nodes into contexts, frames and GPU instructions into
 * their structure (an_frames.c). Under a memory budget the files go in
 * rounds that fit it; what a file cost is measured per file byte and the
 * largest ratio seen sizes the next round. Pass 2 reads files again with
 * the same functions.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_buf.h"
#include "../base/an_pool.h"
#include "../db/an_db.h"
#include "an_agg.h"

/* Decodes file i of `files` (a task: ctx is the first file of a round);
 * a failure is kept with the file, said in input order later. */
static void load_one(void *ctx, uint32_t i)
{
    src *s = (src *)ctx + i;
    if (s->io)
        return;
    free(s->err);
    s->err = NULL;
    s->st = gpuprof__an_load(s->path, &s->io);
    if (s->st != GPUPROF_OK)
        s->err = strdup(gpuprof_an_last_error());
}

/* Local metric i of file `file` (decoded as p) as a base metric of the
 * tree, added when new; UINT32_MAX (why says why) when it conflicts with
 * an earlier one of its name, or there are too many. */
static uint32_t metric_unify(an_tree *t, uint32_t file,
                             const gpuprof__io_profile *p, uint32_t i,
                             char *why, size_t wsize)
{
    const gpuprof__io_metric *lm = &p->metrics[i];
    const char *name = gpuprof__io_str(p, lm->name);
    for (uint32_t g = 0; g < t->nm; g++) {
        if (strcmp(gpuprof__an_tree_metric_str(t, t->m[g].name), name))
            continue;
        if (t->m[g].unit != lm->unit || t->m[g].combine != lm->combine ||
            t->m[g].type != lm->type) {
            snprintf(why, wsize,
                     "metric %s: unit, type or combination "
                     "differs from an earlier profile",
                     name);
            return UINT32_MAX;
        }
        return g;
    }
    if (t->nm == MAX_BASE_METRICS || !GPUPROF_AN_GROW(t->m, t->nm, t->capm)) {
        snprintf(why, wsize, "too many metrics (or out of memory)");
        return UINT32_MAX;
    }
    uint64_t at;
    gpuprof__io_strtab_data(t->st, &at);
    t->m[t->nm] = (gmetric){
        gpuprof__an_tree_intern_metric(t, name),
        gpuprof__an_tree_intern_metric(t, gpuprof__io_str(p, lm->description)),
        lm->unit,
        lm->combine,
        lm->kind,
        lm->type,
        (uint32_t)at,
        file,
        lm->flags,
        0};
    return t->nm++;
}

/* The key of node i of profile p beneath context `parent`. */
static gctx node_key(an_tree *t, const gpuprof__io_profile *p,
                     const gpuprof__io_node *n, uint32_t parent)
{
    gctx k = {parent, n->kind, 0, 0, 0};
    switch (n->kind) {
    case GPUPROF_IO_NODE_REGION:
        k.name = gpuprof__an_tree_intern(t, gpuprof__io_str(p, n->key_a));
        break;
    case GPUPROF_IO_NODE_FRAME:
    case GPUPROF_IO_NODE_GPU_INSTR:
        k.name = gpuprof__an_tree_intern(
            t, gpuprof__io_str(p, p->modules[n->key_a].path));
        k.key = n->key_b;
        break;
    case GPUPROF_IO_NODE_GPU_OP:
        k.key = n->key_a;
        break;
    case GPUPROF_IO_NODE_KERNEL:
        k.name = gpuprof__an_tree_intern(t, gpuprof__io_str(p, n->key_a));
        if (n->key_b < p->module_count)
            k.aux = gpuprof__an_tree_intern(
                t, gpuprof__io_str(p, p->modules[n->key_b].path));
        break;
    default:
        break;
    }
    return k;
}

uint64_t gpuprof__an_io_bytes(const gpuprof__io_profile *p)
{
    return p->strings_size + (uint64_t)p->metric_count * sizeof(*p->metrics) +
           (uint64_t)p->module_count * sizeof(*p->modules) +
           (uint64_t)p->thread_count * sizeof(*p->threads) +
           (uint64_t)p->node_count * sizeof(*p->nodes) +
           p->value_count * sizeof(*p->values) +
           (uint64_t)p->counter_count * sizeof(*p->counters) + sizeof(*p);
}

void gpuprof__an_src_release(src *s)
{
    free(s->ctx);
    s->ctx = NULL;
    gpuprof__an_gcct_splits_free(&s->split);
    if (s->io)
        gpuprof__io_profile_free(s->io);
    s->io = NULL;
}

/* File i's metrics as base metrics, and where its profiles start. */
static gpuprof_status unify_metrics(run *r, uint32_t i)
{
    char why[256];
    src *s = &r->s[i];
    const gpuprof__io_profile *p = s->io;
    s->metric =
        calloc(p->metric_count ? p->metric_count : 1, sizeof(*s->metric));
    if (!s->metric)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t m = 0; m < p->metric_count; m++)
        if ((s->metric[m] = metric_unify(&r->t, i, p, m, why, sizeof(why))) ==
            UINT32_MAX)
            return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: %s", s->path, why);
    for (uint32_t m = 0; m < p->metric_count; m++) { /* odd sums' counts */
        gmetric *g = &r->t.m[s->metric[m]];
        const char *cn = gpuprof__io_str(p, p->metrics[m].count_name);
        for (uint32_t c = 0;
             *cn && g->src == i && !g->count && c < p->metric_count; c++)
            if (!strcmp(gpuprof__io_str(p, p->metrics[c].name), cn))
                g->count = s->metric[c] + 1;
    }
    s->nodes = p->node_count;
    s->nmetrics = p->metric_count;
    s->p0 = r->t.np;
    s->np = p->thread_count;
    return GPUPROF_OK;
}

/* The context of node `n` of thread th of file s: its key, expanded into
 * program structure where there is some; UINT32_MAX when out of memory. */
static uint32_t node_ctx(run *r, const src *s, const gpuprof__io_thread *th,
                         uint32_t n)
{
    const gpuprof__io_profile *p = s->io;
    const gpuprof__io_node *nd = &p->nodes[th->first_node + n];
    gctx k = node_key(&r->t, p, nd, s->ctx[th->first_node + nd->parent]);
    bool structure = r->a->structure != 0;
    const char *mod = nd->kind == GPUPROF_IO_NODE_FRAME
                          ? gpuprof__io_str(p, p->modules[nd->key_a].path)
                          : NULL;
    const sframe *f = mod && structure && !gpuprof__an_is_pyframe(mod)
                          ? gpuprof__an_frame_structure(&r->sx, &r->t, k.name,
                                                        mod, nd->key_b)
                          : NULL;
    if (f && f->n)
        return gpuprof__an_frame_expand(&r->t, &r->sx, k.parent, f);
    if (nd->kind == GPUPROF_IO_NODE_GPU_INSTR && structure)
        return gpuprof__an_instr_ctx(&r->sx, &r->t, s->path, p,
                                     &p->nodes[th->first_node + nd->parent], nd,
                                     &k);
    return gpuprof__an_tree_ctx(&r->t, &k);
}

/* Thread `th` (number tn) of file i: its profile (the first time), its
 * nodes' contexts. */
static gpuprof_status unify_thread(run *r, uint32_t i, uint32_t tn, bool again,
                                   uint32_t host, uint32_t file)
{
    src *s = &r->s[i];
    const gpuprof__io_profile *p = s->io;
    const gpuprof__io_thread *th = &p->threads[tn];
    an_tree *t = &r->t;
    if (!again) {
        if (!GPUPROF_AN_GROW(t->p, t->np, t->capp))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        t->p[t->np++] = (gprof){
            i,         tn,
            host,      gpuprof__an_tree_intern(t, gpuprof__io_str(p, th->name)),
            file,      p->pid,
            th->flags, p->rank,
            th->tid};
    }
    s->ctx[th->first_node] = 0; /* every root is the one root */
    gcct_thread g = {0};
    if (r->a->structure && !gpuprof__an_gcct_begin(&g, p, th))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t n = 1; n < th->node_count && st == GPUPROF_OK; n++) {
        if (g.done && g.done[n])
            continue; /* made with its kernel's calling contexts */
        uint32_t c = node_ctx(r, s, th, n);
        if (c == UINT32_MAX)
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        s->ctx[th->first_node + n] = c;
        if (g.n && p->nodes[th->first_node + n].kind == GPUPROF_IO_NODE_KERNEL)
            st = gpuprof__an_gcct_kernel(&r->sx, &r->t, &g, s->path, p, th, n,
                                         s->ctx, &s->split);
    }
    gpuprof__an_gcct_end(&g);
    return st;
}

/* A profile file's path as the database keeps it: absolute, so that what
 * reads the profiles again (gpuprof advise) finds them from any working
 * directory; as given when it cannot be resolved. */
static uint32_t intern_path(an_tree *t, const char *path)
{
    char *abs = realpath(path, NULL);
    uint32_t off = gpuprof__an_tree_intern(t, abs ? abs : path);
    free(abs);
    return off;
}

/* File i's devices' attributes (format 1.3 profiles), in its order. */
static gpuprof_status unify_devices(run *r, uint32_t i)
{
    const gpuprof__io_profile *p = r->s[i].io;
    an_tree *t = &r->t;
    for (uint32_t k = 0; k < p->devattr_count; k++) {
        const gpuprof__io_device_attr *a = &p->devattrs[k];
        if (!GPUPROF_AN_GROW(t->d, t->nd, t->capd))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        gdev d = {i,
                  gpuprof__an_tree_intern(t, gpuprof__io_str(p, a->api)),
                  a->device,
                  gpuprof__an_tree_intern(t, gpuprof__io_str(p, a->key)),
                  a->type, a->value};
        if (a->type == GPUPROF_IO_ATTR_STR)
            d.value = gpuprof__an_tree_intern(
                t, gpuprof__io_str(p, (uint32_t)a->value));
        t->d[t->nd++] = d;
    }
    return GPUPROF_OK;
}

gpuprof_status gpuprof__an_unify_file(run *r, uint32_t i, bool again)
{
    src *s = &r->s[i];
    const gpuprof__io_profile *p = s->io;
    if (again && (p->node_count != s->nodes || p->thread_count != s->np ||
                  p->metric_count != s->nmetrics))
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "%s: changed during the analysis", s->path);
    gpuprof_status st = again ? GPUPROF_OK : unify_metrics(r, i);
    if (st != GPUPROF_OK)
        return st;
    s->ctx = calloc(p->node_count ? p->node_count : 1, sizeof(*s->ctx));
    if (!s->ctx)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    uint32_t host =
        again ? 0 : gpuprof__an_tree_intern(&r->t, gpuprof__io_str(p, p->host));
    uint32_t file = again ? 0 : intern_path(&r->t, s->path);
    uint32_t known = r->t.nc;
    for (uint32_t tn = 0; tn < p->thread_count && st == GPUPROF_OK; tn++)
        st = unify_thread(r, i, tn, again, host, file);
    if (st == GPUPROF_OK && !again)
        st = unify_devices(r, i);
    if (st != GPUPROF_OK)
        return st;
    if (r->t.nomem)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (again && r->t.nc != known)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "%s: changed during the analysis", s->path);
    return GPUPROF_OK;
}

uint64_t gpuprof__an_kept_bytes(const run *r)
{
    const an_tree *t = &r->t;
    uint64_t ssize;
    gpuprof__io_strtab_data(t->st, &ssize);
    return ssize * 2 + (uint64_t)t->capc * sizeof(gctx) +
           ((uint64_t)t->slot_mask + 1) * sizeof(uint32_t) +
           (uint64_t)t->nc * (sizeof(uint64_t) + sizeof(uint32_t) +
                              2 * DB_PLANE_REF + 2 * sizeof(uint64_t)) +
           (uint64_t)t->capp * sizeof(gprof) + (uint64_t)t->capd * sizeof(gdev) +
           (uint64_t)t->np * (sizeof(row) + DB_PLANE_REF + sizeof(uint64_t)) +
           (uint64_t)r->ns * (sizeof(src) + 256) +
           (uint64_t)r->ns * t->nm * sizeof(uint32_t) + /* metric maps */
           gpuprof__an_structure_bytes(&r->sx);
}

uint64_t gpuprof__an_room(const run *r)
{
    uint64_t k = gpuprof__an_kept_bytes(r);
    return r->budget > k ? r->budget - k : 1;
}

/* The files that fit at `ratio` bytes of memory per file byte (none yet:
 * one file), and always one. */
uint32_t gpuprof__an_round_end(const run *r, uint32_t i, double ratio)
{
    if (!r->budget)
        return r->s_hi;
    if (ratio <= 0)
        return i + 1;
    double left = (double)gpuprof__an_room(r);
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

gpuprof_status gpuprof__an_first_error(const run *r, uint32_t i, uint32_t j)
{
    for (; i < j; i++) /* the first damaged file, in order */
        if (r->s[i].st != GPUPROF_OK)
            return gpuprof__an_fail(r->s[i].st, "%s",
                                    r->s[i].err ? r->s[i].err : r->s[i].path);
    return GPUPROF_OK;
}

void gpuprof__an_load_files(run *r, uint32_t i, uint32_t j)
{
    gpuprof__an_parallel_for(r->a->threads, j - i, load_one, &r->s[i]);
}

/* ---- files loaded on the pool, unified in order as they arrive ----------
 * Pass 1's unify is serial (ids follow input order); it overlaps the
 * loading: the pool's threads load files [f0, f0 + n) in order, the calling
 * thread unifies file k as soon as it is there and loads one itself while it
 * is not (with one thread it loads and unifies in turn). */
typedef struct feed {
    src *s; /* the round's first file */
    uint32_t n;
    _Atomic uint32_t next; /* the next file to claim */
    _Atomic int stop;      /* the caller failed: claim no more */
    uint8_t *done;         /* per file: loaded (under mu) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} feed;

static void feed_load(feed *f, uint32_t k)
{
    load_one(f->s, k);
    pthread_mutex_lock(&f->mu);
    f->done[k] = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void *feed_worker(void *arg)
{
    feed *f = arg;
    for (uint32_t k;
         !atomic_load(&f->stop) && (k = atomic_fetch_add(&f->next, 1)) < f->n;)
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

static bool feed_init(feed *f, src *first, uint32_t n)
{
    *f = (feed){.s = first, .n = n};
    if (!(f->done = calloc(n ? n : 1, 1)))
        return false;
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    return true;
}

/* Up to threads - 1 loaders (the caller loads the last file at least);
 * how many started, their ids in *th (free it after feed_stop). */
static unsigned feed_start(feed *f, unsigned threads, pthread_t **th)
{
    unsigned t = threads > 1 ? threads - 1 : 0;
    if (t > f->n - 1)
        t = f->n - 1;
    *th = t ? calloc(t, sizeof(**th)) : NULL;
    unsigned started = 0;
    while (*th && started < t &&
           pthread_create(&(*th)[started], NULL, feed_worker, f) == 0)
        started++;
    return started;
}

static void feed_stop(feed *f, pthread_t *th, unsigned started)
{
    atomic_store(&f->stop, 1);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    free(th);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f->done);
}

/* File k, loaded: unified; what it cost raises *ratio. */
static gpuprof_status unify_loaded(run *r, uint32_t k, double *ratio)
{
    src *s = &r->s[k];
    if (s->st != GPUPROF_OK)
        return gpuprof__an_fail(s->st, "%s", s->err ? s->err : s->path);
    gpuprof_status st = gpuprof__an_unify_file(r, k, false);
    /* Reading it took the file, its sections and the profile. */
    uint64_t cost = s->fsize + 2 * gpuprof__an_io_bytes(s->io) +
                    (uint64_t)s->nodes * sizeof(uint32_t) +
                    gpuprof__an_gcct_bytes(&s->split, s->nodes);
    if (s->fsize && (double)cost / s->fsize > *ratio)
        *ratio = (double)cost / s->fsize;
    if (r->budget || st != GPUPROF_OK)
        gpuprof__an_src_release(s); /* pass 2 reads it again */
    return st;
}

/* Pass 1 for files [i, j): each unified in order once loaded; the first
 * damaged or conflicting file in input order stops it. */
static gpuprof_status unify_round(run *r, uint32_t i, uint32_t j, double *ratio)
{
    feed f;
    pthread_t *th;
    if (!feed_init(&f, &r->s[i], j - i))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    unsigned started = feed_start(&f, r->a->threads, &th);
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = i; k < j && st == GPUPROF_OK; k++) {
        feed_wait(&f, k - i);
        st = unify_loaded(r, k, ratio);
    }
    feed_stop(&f, th, started);
    if (st != GPUPROF_OK || r->budget)
        for (uint32_t k = i; k < j; k++) /* loaded past the failure */
            if (!r->s[k].ctx && r->s[k].io) {
                gpuprof__io_profile_free(r->s[k].io);
                r->s[k].io = NULL;
            }
    return st;
}

gpuprof_status gpuprof__an_unify(run *r)
{
    gctx root = {UINT32_MAX, GPUPROF_IO_NODE_ROOT, 0, 0, 0};
    if (gpuprof__an_tree_ctx(&r->t, &root) != 0)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double ratio = 0;
    for (uint32_t i = r->s_lo, j; i < r->s_hi; i = j) {
        j = gpuprof__an_round_end(r, i, ratio);
        gpuprof__an_progress(r, "load", i, r->ns);
        gpuprof_status st = unify_round(r, i, j, &ratio);
        if (st != GPUPROF_OK)
            return st;
        if (r->budget)
            gpuprof__an_trim();
    }
    gpuprof__an_progress(r, "load", r->ns, r->ns);
    return GPUPROF_OK;
}
