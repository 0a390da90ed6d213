/*
 * an_report.c - a measurement directory merged into one region tree
 * (`gpuprof report`).
 *
 * Every thread of every profile contributes its region nodes; a region is
 * identified by its path of names from the top, so "solve" under "main" in
 * rank 0 thread 3 and in rank 7 thread 0 are the same row. Nodes that are
 * not regions (call paths, GPU operations: later work) fold into their
 * nearest region. The merged tree is then ordered (inclusive time, largest
 * first; ties by name) and stored in depth-first order, which is the order
 * of the printed table and of the public accessors.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static uint64_t hkey(uint32_t parent, const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull ^ parent;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    return h;
}

static int grow_slots(gpuprof_an_report *r)
{
    uint32_t mask = r->mask ? r->mask * 2 + 1 : 255;
    uint32_t *s = calloc((size_t)mask + 1, sizeof(*s));
    if (!s)
        return -1;
    for (uint32_t i = 0; i < r->count; i++) {
        uint32_t j = (uint32_t)hkey(r->n[i].parent, r->n[i].name);
        while (s[j & mask])
            j++;
        s[j & mask] = i + 1;
    }
    free(r->slots);
    r->slots = s;
    r->mask = mask;
    return 0;
}

/* The merged child `name` of `parent`, created if new; UINT32_MAX: OOM. */
static uint32_t child(gpuprof_an_report *r, uint32_t parent, const char *name)
{
    if ((r->count + 1) * 2 > r->mask + 1 && grow_slots(r))
        return UINT32_MAX;
    uint32_t j = (uint32_t)hkey(parent, name);
    for (;; j++) {
        uint32_t s = r->slots[j & r->mask];
        if (!s)
            break;
        if (r->n[s - 1].parent == parent && !strcmp(r->n[s - 1].name, name))
            return s - 1;
    }
    if (r->count == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 64;
        mnode *n = realloc(r->n, cap * sizeof(*n));
        if (!n)
            return UINT32_MAX;
        r->n = n;
        r->cap = cap;
    }
    mnode *m = &r->n[r->count];
    memset(m, 0, sizeof(*m));
    m->name = strdup(name);
    m->parent = parent;
    m->depth = parent == UINT32_MAX ? 0 : r->n[parent].depth + 1;
    m->last_thread = UINT32_MAX;
    if (!m->name)
        return UINT32_MAX;
    r->slots[j & r->mask] = r->count + 1;
    return r->count++;
}

static int add_counters(gpuprof_an_report *r, const gpuprof__io_profile *p)
{
    for (uint32_t i = 0; i < p->counter_count; i++) {
        const char *name = gpuprof__io_str(p, p->counters[i].name);
        uint32_t k = 0;
        while (k < r->ncounters && strcmp(r->counters[k].name, name))
            k++;
        if (k == r->ncounters) {
            counter *c = realloc(r->counters, (k + 1) * sizeof(*c));
            if (!c)
                return -1;
            r->counters = c;
            if (!(c[k].name = strdup(name)))
                return -1;
            c[k].value = 0;
            r->ncounters++;
        }
        r->counters[k].value += p->counters[i].value;
    }
    return 0;
}

/* Merges one thread; map[] translates its nodes to merged nodes. */
static int add_thread(gpuprof_an_report *r, const gpuprof__io_profile *p,
                      uint32_t t, uint32_t *map, const uint32_t m[3])
{
    const gpuprof__io_thread *th = &p->threads[t];
    uint32_t tid = r->threads++;
    map[0] = 0;
    for (uint32_t i = 1; i < th->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + i];
        uint32_t par = map[n->parent];
        if (n->kind != GPUPROF_IO_NODE_REGION) {
            map[i] = par;
            continue;
        }
        uint32_t c = child(r, par, gpuprof__io_str(p, n->key_a));
        if (c == UINT32_MAX)
            return -1;
        map[i] = c;
        mnode *x = &r->n[c];
        uint32_t abs = th->first_node + i;
        uint64_t incl = m[1] == UINT32_MAX ? 0 : gpuprof__an_value(p, abs, m[1]);
        x->visits += m[0] == UINT32_MAX ? 0 : gpuprof__an_value(p, abs, m[0]);
        x->incl += incl;
        if (incl > x->incl_max) /* a path is once in a thread's tree */
            x->incl_max = incl;
        x->excl += m[2] == UINT32_MAX ? 0 : gpuprof__an_value(p, abs, m[2]);
        x->flags |= n->flags;
        if (x->last_thread != tid) {
            x->last_thread = tid;
            x->threads++;
        }
    }
    return 0;
}

static gpuprof_status add_profile(gpuprof_an_report *r, const gpuprof__io_profile *p,
                                  const char *path)
{
    uint32_t m[3] = {gpuprof__an_metric(p, "region.visits"),
                     gpuprof__an_metric(p, "region.time.incl"),
                     gpuprof__an_metric(p, "region.time.excl")};
    uint64_t rt0 = p->start_realtime_ns, rt1 = rt0 + (p->end_ns - p->start_ns);
    if (r->profiles == 0 || rt0 < r->first_rt)
        r->first_rt = rt0;
    if (rt1 > r->last_rt)
        r->last_rt = rt1;
    r->profiles++;
    if (add_counters(r, p))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    for (uint32_t t = 0; t < p->thread_count; t++) {
        uint32_t *map = malloc(p->threads[t].node_count * sizeof(*map));
        int rc = map ? add_thread(r, p, t, map, m) : -1;
        free(map);
        if (rc)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    }
    return GPUPROF_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile files of dir, sorted; NULL with *st set on failure. */
static char **list_dir(const char *dir, uint32_t *n, gpuprof_status *st)
{
    DIR *d = opendir(dir);
    if (!d) {
        *st = gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    char **v = NULL;
    uint32_t c = 0;
    *st = GPUPROF_OK;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), sl = strlen(GPUPROF_IO_SUFFIX);
        if (e->d_name[0] == '.' || l <= sl || strcmp(e->d_name + l - sl, GPUPROF_IO_SUFFIX))
            continue;
        char **nv = realloc(v, (c + 1) * sizeof(*v));
        size_t len = strlen(dir) + l + 2;
        char *path = malloc(len);
        if (!nv || !path) {
            free(path);
            v = nv ? nv : v;
            *st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        v = nv;
        snprintf(path, len, "%s/%s", dir, e->d_name);
        v[c++] = path;
    }
    closedir(d);
    if (*st == GPUPROF_OK && c == 0)
        *st = gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s: no profiles (*%s) in this directory",
                               dir, GPUPROF_IO_SUFFIX);
    if (*st != GPUPROF_OK) {
        for (uint32_t i = 0; i < c; i++)
            free(v[i]);
        free(v);
        return NULL;
    }
    qsort(v, c, sizeof(*v), cmp_str);
    *n = c;
    return v;
}

static const mnode *sort_base;

static int cmp_sibling(const void *a, const void *b)
{
    const mnode *x = &sort_base[*(const uint32_t *)a], *y = &sort_base[*(const uint32_t *)b];
    if (x->incl != y->incl)
        return x->incl > y->incl ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Sorts siblings and renumbers the tree in depth-first order. */
static gpuprof_status order(gpuprof_an_report *r, const char *dir)
{
    uint32_t n = r->count, *kids = malloc(n * sizeof(*kids)),
             *start = calloc(n + 1, sizeof(*start)), *fill = calloc(n, sizeof(*fill)),
             *neworder = malloc(n * sizeof(*neworder)), *stack = malloc(n * sizeof(*stack)),
             *newidx = malloc(n * sizeof(*newidx));
    mnode *nn = malloc(n * sizeof(*nn));
    gpuprof_status st = GPUPROF_OK;
    if (!kids || !start || !fill || !neworder || !stack || !newidx || !nn) {
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
        goto out;
    }
    for (uint32_t i = 1; i < n; i++) {
        start[r->n[i].parent + 1]++;
        if (r->n[i].parent == 0) /* the root spans the top-level regions */
            r->n[0].incl += r->n[i].incl;
    }
    for (uint32_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (uint32_t i = 1; i < n; i++)
        kids[start[r->n[i].parent] + fill[r->n[i].parent]++] = i;
    sort_base = r->n;
    for (uint32_t i = 0; i < n; i++)
        qsort(kids + start[i], start[i + 1] - start[i], sizeof(*kids), cmp_sibling);
    uint32_t sp = 0, k = 0;
    stack[sp++] = 0;
    while (sp) {
        uint32_t c = stack[--sp];
        neworder[k] = c;
        newidx[c] = k++;
        for (uint32_t j = start[c + 1]; j-- > start[c];)
            stack[sp++] = kids[j];
    }
    for (uint32_t i = 0; i < n; i++) {
        nn[i] = r->n[neworder[i]];
        if (i)
            nn[i].parent = newidx[nn[i].parent];
    }
    free(r->n);
    r->n = nn;
    r->cap = n;
    nn = NULL;
    r->mask = 0;
    if (grow_slots(r))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
out:
    free(kids), free(start), free(fill), free(neworder), free(stack), free(newidx), free(nn);
    return st;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_report_open(const char *dir, gpuprof_an_report **out)
{
    if (!dir || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "gpuprof_an_report_open: NULL argument");
    *out = NULL;
    gpuprof_status st;
    uint32_t nfiles = 0;
    char **files = list_dir(dir, &nfiles, &st);
    if (!files)
        return st;
    gpuprof_an_report *r = calloc(1, sizeof(*r));
    if (!r || child(r, UINT32_MAX, "<program>") != 0)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
    for (uint32_t i = 0; i < nfiles && st == GPUPROF_OK; i++) {
        gpuprof__io_profile *p = NULL;
        if ((st = gpuprof__an_load(files[i], &p)) == GPUPROF_OK)
            st = add_profile(r, p, files[i]);
        gpuprof__io_profile_free(p);
    }
    for (uint32_t i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    if (st == GPUPROF_OK)
        st = order(r, dir);
    if (st != GPUPROF_OK) {
        gpuprof_an_report_close(r);
        return st;
    }
    *out = r;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_report_close(gpuprof_an_report *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->count; i++)
        free(r->n[i].name);
    for (uint32_t i = 0; i < r->ncounters; i++)
        free(r->counters[i].name);
    free(r->n);
    free(r->slots);
    free(r->counters);
    free(r);
}
