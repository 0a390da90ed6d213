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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

static int grow_slots(gpuprof_an_report *r)
{
    uint32_t mask = r->mask ? r->mask * 2 + 1 : 255;
    uint32_t *s = calloc((size_t)mask + 1, sizeof(*s));
    if (!s)
        return -1;
    for (uint32_t i = 0; i < r->count; i++) {
        uint32_t j = (uint32_t)gpuprof__an_hkey(r->n[i].parent, r->n[i].name);
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
    uint32_t j = (uint32_t)gpuprof__an_hkey(parent, name);
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
    m->last_profile = UINT32_MAX;
    if (!m->name)
        return UINT32_MAX;
    r->slots[j & r->mask] = r->count + 1;
    return r->count++;
}

static void free_procs(gpuprof_an_report *r)
{
    for (uint32_t i = 0; r->procs && i < r->profiles; i++)
        free(r->procs[i].host);
    free(r->procs);
    r->procs = NULL;
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

/* Metric indices of the region metrics in one profile (UINT32_MAX: the
 * profile has no such metric, its value counts as 0). Looked up by name. */
typedef struct region_metrics {
    uint32_t visits, incl, excl;
} region_metrics;

static uint64_t value_of(const gpuprof__io_profile *p, uint32_t i, uint32_t m)
{
    return m == UINT32_MAX ? 0 : gpuprof__an_value(p, i, m);
}

/* Adds absolute node i of p, which belongs to the report's latest thread
 * and profile, into merged node x. */
static void accumulate(const gpuprof_an_report *r, mnode *x,
                       const gpuprof__io_profile *p, uint32_t i,
                       const region_metrics *m)
{
    uint32_t thread = r->threads - 1, profile = r->profiles - 1;
    uint64_t incl = value_of(p, i, m->incl);
    x->visits += value_of(p, i, m->visits);
    x->incl += incl;
    x->excl += value_of(p, i, m->excl);
    x->flags |= p->nodes[i].flags;
    if (x->last_thread != thread) {
        x->last_thread = thread;
        x->threads++;
        x->thread_incl = 0;
    }
    /* A thread may reach one region path more than once (through different
     * call paths between two regions): its share is summed first. */
    x->thread_incl += incl;
    if (x->thread_incl > x->incl_max)
        x->incl_max = x->thread_incl;
    if (x->last_profile != profile) {
        x->last_profile = profile;
        x->processes++;
    }
}

/* Merges one thread; map[] translates its nodes to merged nodes. Nodes
 * that are not regions map to their nearest region (or the root). */
static int add_thread(gpuprof_an_report *r, const gpuprof__io_profile *p,
                      uint32_t t, uint32_t *map, const region_metrics *m)
{
    const gpuprof__io_thread *th = &p->threads[t];
    r->threads++;
    map[0] = 0;
    for (uint32_t i = 1; i < th->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + i];
        if (n->kind != GPUPROF_IO_NODE_REGION) {
            map[i] = map[n->parent];
            continue;
        }
        uint32_t c = child(r, map[n->parent], gpuprof__io_str(p, n->key_a));
        if (c == UINT32_MAX)
            return -1;
        map[i] = c;
        accumulate(r, &r->n[c], p, th->first_node + i, m);
    }
    return 0;
}

/* Remembers who wrote p, to count processes and hosts at the end. */
static int add_proc(gpuprof_an_report *r, const gpuprof__io_profile *p)
{
    if (r->profiles == r->procs_cap) {
        uint32_t cap = r->procs_cap ? r->procs_cap * 2 : 16;
        proc_id *v = realloc(r->procs, cap * sizeof(*v));
        if (!v)
            return -1;
        r->procs = v;
        r->procs_cap = cap;
    }
    proc_id *id = &r->procs[r->profiles];
    id->pid = p->pid;
    id->host = strdup(gpuprof__io_str(p, p->host));
    return id->host ? 0 : -1;
}

static gpuprof_status add_profile(gpuprof_an_report *r,
                                  const gpuprof__io_profile *p,
                                  const char *path)
{
    region_metrics m = {gpuprof__an_metric(p, "region.visits"),
                        gpuprof__an_metric(p, "region.time.incl"),
                        gpuprof__an_metric(p, "region.time.excl")};
    uint64_t rt0 = p->start_realtime_ns, rt1 = rt0 + (p->end_ns - p->start_ns);
    if (r->profiles == 0 || rt0 < r->first_rt)
        r->first_rt = rt0;
    if (rt1 > r->last_rt)
        r->last_rt = rt1;
    if (add_proc(r, p))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    r->profiles++;
    if (add_counters(r, p))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    for (uint32_t t = 0; t < p->thread_count; t++) {
        uint32_t *map = malloc(p->threads[t].node_count * sizeof(*map));
        int rc = map ? add_thread(r, p, t, map, &m) : -1;
        free(map);
        if (rc)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    }
    return GPUPROF_OK;
}

static int cmp_proc(const void *a, const void *b)
{
    const proc_id *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* Counts distinct (host, pid) and distinct hosts; frees the list. */
static void count_processes(gpuprof_an_report *r)
{
    qsort(r->procs, r->profiles, sizeof(*r->procs), cmp_proc);
    for (uint32_t i = 0; i < r->profiles; i++) {
        const proc_id *id = &r->procs[i], *prev = i ? id - 1 : NULL;
        if (!prev || strcmp(prev->host, id->host)) {
            r->hosts++;
            r->processes++;
        } else if (prev->pid != id->pid) {
            r->processes++;
        }
    }
    free_procs(r);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile files of dir, sorted; NULL with *st set on failure. */
char **gpuprof__an_list_dir(const char *dir, uint32_t *n, gpuprof_status *st)
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
        if (e->d_name[0] == '.' || l <= sl ||
            strcmp(e->d_name + l - sl, GPUPROF_IO_SUFFIX))
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
    if (*st == GPUPROF_OK && c == 0 &&
        gpuprof__an_dir_kind(dir) == GPUPROF__AN_DIR_DATABASE)
        *st = gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                               "%s is an analysis database, not a measurement "
                               "directory (of *%s files)", dir,
                               GPUPROF_IO_SUFFIX);
    else if (*st == GPUPROF_OK && c == 0)
        *st = gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                               "%s: no profiles (*%s) in this directory", dir,
                               GPUPROF_IO_SUFFIX);
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

/* Sort key of a sibling: no global state, so reports may be opened by
 * several threads at once. */
typedef struct sibling {
    uint64_t incl;
    const char *name;
    uint32_t index;
} sibling;

static int cmp_sibling(const void *a, const void *b)
{
    const sibling *x = a, *y = b;
    if (x->incl != y->incl)
        return x->incl > y->incl ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* kids[start[i] .. start[i + 1]) = the children of i, ordered for
 * printing. Also gives the root the sum of the top-level regions. */
static void sort_children(gpuprof_an_report *r, uint32_t *kids, uint32_t *start,
                          uint32_t *fill, sibling *keys)
{
    uint32_t n = r->count;
    for (uint32_t i = 1; i < n; i++) {
        start[r->n[i].parent + 1]++;
        if (r->n[i].parent == 0)
            r->n[0].incl += r->n[i].incl;
    }
    for (uint32_t i = 0; i < n; i++)
        start[i + 1] += start[i];
    for (uint32_t i = 1; i < n; i++)
        kids[start[r->n[i].parent] + fill[r->n[i].parent]++] = i;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k0 = start[i], kn = start[i + 1] - start[i];
        for (uint32_t k = 0; k < kn; k++)
            keys[k] = (sibling){r->n[kids[k0 + k]].incl,
                                r->n[kids[k0 + k]].name, kids[k0 + k]};
        qsort(keys, kn, sizeof(*keys), cmp_sibling);
        for (uint32_t k = 0; k < kn; k++)
            kids[k0 + k] = keys[k].index;
    }
}

/* Renumbers the nodes depth-first along the ordered child lists into nn. */
static void renumber(const gpuprof_an_report *r, const uint32_t *kids,
                     const uint32_t *start, uint32_t *stack, uint32_t *newidx,
                     mnode *nn)
{
    uint32_t sp = 0, k = 0;
    stack[sp++] = 0;
    while (sp) {
        uint32_t c = stack[--sp];
        newidx[c] = k;
        nn[k] = r->n[c];
        if (c != 0) /* a parent is numbered before its children */
            nn[k].parent = newidx[r->n[c].parent];
        k++;
        for (uint32_t j = start[c + 1]; j-- > start[c];)
            stack[sp++] = kids[j];
    }
}

/* Sorts siblings and stores the tree in depth-first order. */
static gpuprof_status order(gpuprof_an_report *r, const char *dir)
{
    uint32_t n = r->count, *kids = malloc(n * sizeof(*kids)),
             *start = calloc(n + 1, sizeof(*start)),
             *fill = calloc(n, sizeof(*fill)),
             *stack = malloc(n * sizeof(*stack)),
             *newidx = malloc(n * sizeof(*newidx));
    sibling *keys = malloc(n * sizeof(*keys));
    mnode *nn = malloc(n * sizeof(*nn));
    bool ok = kids && start && fill && stack && newidx && keys && nn;
    if (ok) {
        sort_children(r, kids, start, fill, keys);
        renumber(r, kids, start, stack, newidx, nn);
        free(r->n);
        r->n = nn;
        r->cap = n;
        nn = NULL;
        free(r->slots); /* the (parent, name) index served the merge only */
        r->slots = NULL;
        r->mask = 0;
    }
    gpuprof_status st =
        ok ? GPUPROF_OK
           : gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
    free(kids), free(start), free(fill), free(stack), free(newidx), free(keys),
        free(nn);
    return st;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_report_open(const char *dir,
                                                     gpuprof_an_report **out)
{
    if (!dir || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_report_open: NULL argument");
    *out = NULL;
    gpuprof_status st;
    uint32_t nfiles = 0;
    char **files = gpuprof__an_list_dir(dir, &nfiles, &st);
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
    if (st == GPUPROF_OK) {
        count_processes(r);
        st = order(r, dir);
    }
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
    free_procs(r);
    free(r->n);
    free(r->slots);
    free(r->counters);
    free(r);
}
