/*
 * an_gpu.c - GPU operations by calling context (`gpuprof report`, second
 * part): every thread of every profile in a directory merged into one tree
 * of regions -> CPU frames (function names from the symbol tables, else
 * module+offset) -> operation placeholders -> kernels, with the inclusive
 * GPU metrics (gpu.count, gpu.time, gpu.bytes) of each node; only the nodes
 * beneath which the GPU did something are printed, largest GPU time first.
 * A node is identified by its path of keys from the top (region names,
 * frames by module path and offset, operation kinds, kernel names), so the
 * same call site in two threads or two processes is one row.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

typedef struct gnode {
    char *key;  /* merge key (unique among siblings) */
    char *name; /* what is printed */
    uint32_t parent, depth;
    uint64_t v[3]; /* exclusive, then inclusive: count, time, bytes */
} gnode;

typedef struct gtree {
    gnode *n;
    uint32_t count, cap;
    uint32_t *slots, mask;
    gpuprof__an_symtab *syms;
} gtree;

static int regrow(gtree *g)
{
    uint32_t mask = g->mask ? g->mask * 2 + 1 : 255;
    uint32_t *s = calloc((size_t)mask + 1, sizeof(*s));
    if (!s)
        return -1;
    for (uint32_t i = 0; i < g->count; i++) {
        uint32_t j = (uint32_t)gpuprof__an_hkey(g->n[i].parent, g->n[i].key);
        while (s[j & mask])
            j++;
        s[j & mask] = i + 1;
    }
    free(g->slots);
    g->slots = s;
    g->mask = mask;
    return 0;
}

/* The merged child `key` of `parent` (UINT32_MAX: top), created with
 * `name` if new; UINT32_MAX when out of memory. */
static uint32_t child(gtree *g, uint32_t parent, const char *key,
                      const char *name)
{
    if ((g->count + 1) * 2 > g->mask + 1 && regrow(g))
        return UINT32_MAX;
    uint32_t j = (uint32_t)gpuprof__an_hkey(parent, key);
    for (;; j++) {
        uint32_t s = g->slots[j & g->mask];
        if (!s)
            break;
        if (g->n[s - 1].parent == parent && !strcmp(g->n[s - 1].key, key))
            return s - 1;
    }
    if (g->count == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 64;
        gnode *n = realloc(g->n, cap * sizeof(*n));
        if (!n)
            return UINT32_MAX;
        g->n = n;
        g->cap = cap;
    }
    gnode *m = &g->n[g->count];
    memset(m, 0, sizeof(*m));
    m->key = strdup(key);
    m->name = strdup(name);
    m->parent = parent;
    m->depth = parent == UINT32_MAX ? 0 : g->n[parent].depth + 1;
    if (!m->key || !m->name) {
        free(m->key);
        free(m->name);
        return UINT32_MAX;
    }
    g->slots[j & g->mask] = g->count + 1;
    return g->count++;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Key and display name of a node that is not a root. */
static void describe(gtree *g, const gpuprof__io_profile *p,
                     const gpuprof__io_node *n, char *key, size_t ks,
                     char *name, size_t ns)
{
    switch (n->kind) {
    case GPUPROF_IO_NODE_REGION:
        snprintf(key, ks, "r:%s", gpuprof__io_str(p, n->key_a));
        snprintf(name, ns, "%s", gpuprof__io_str(p, n->key_a));
        break;
    case GPUPROF_IO_NODE_FRAME: {
        const char *path = gpuprof__io_str(p, p->modules[n->key_a].path);
        uint64_t d = 0;
        const char *fn = gpuprof__an_symbolize(&g->syms, path, n->key_b, &d);
        snprintf(key, ks, "f:%s+%" PRIx64, path, n->key_b);
        if (fn)
            snprintf(name, ns, "%s+0x%" PRIx64 " (%s)", fn, d, base_name(path));
        else
            snprintf(name, ns, "%s+0x%" PRIx64, base_name(path), n->key_b);
        break;
    }
    case GPUPROF_IO_NODE_GPU_OP:
        snprintf(key, ks, "g:%u", n->key_a);
        snprintf(name, ns, "<%s>", gpuprof__an_op_name(n->key_a));
        break;
    case GPUPROF_IO_NODE_KERNEL:
        snprintf(key, ks, "k:%s", gpuprof__io_str(p, n->key_a));
        snprintf(name, ns, "kernel %s", gpuprof__io_str(p, n->key_a));
        break;
    default:
        snprintf(key, ks, "i:%u:%" PRIx64, n->key_a, n->key_b);
        snprintf(name, ns, "instruction +0x%" PRIx64, n->key_b);
    }
}

static int add_profile(gtree *g, const gpuprof__io_profile *p)
{
    uint32_t m[3] = {gpuprof__an_metric(p, "gpu.count"),
                     gpuprof__an_metric(p, "gpu.time"),
                     gpuprof__an_metric(p, "gpu.bytes")};
    if (m[0] == UINT32_MAX && m[1] == UINT32_MAX)
        return 0; /* no GPU metrics in this profile */
    uint32_t *map = malloc((p->node_count ? p->node_count : 1) * sizeof(*map));
    if (!map)
        return -1;
    char key[4200], name[4200];
    for (uint32_t t = 0; t < p->thread_count; t++) {
        const gpuprof__io_thread *th = &p->threads[t];
        for (uint32_t r = 0; r < th->node_count; r++) {
            uint32_t i = th->first_node + r;
            const gpuprof__io_node *n = &p->nodes[i];
            if (r == 0) {
                map[i] = UINT32_MAX; /* the thread's root: the top */
                continue;
            }
            describe(g, p, n, key, sizeof(key), name, sizeof(name));
            uint32_t x = child(g, map[th->first_node + n->parent], key, name);
            if (x == UINT32_MAX) {
                free(map);
                return -1;
            }
            map[i] = x;
            for (int k = 0; k < 3; k++)
                if (m[k] != UINT32_MAX)
                    g->n[x].v[k] += gpuprof__an_value(p, i, m[k]);
        }
    }
    free(map);
    return 0;
}

typedef struct kid {
    uint64_t time, count;
    const char *name;
    uint32_t index;
} kid;

static int cmp_kid(const void *a, const void *b)
{
    const kid *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* Prints node i's subtree (or the top when i is UINT32_MAX). */
static int print_tree(const gtree *g, const uint64_t *incl, uint32_t i,
                      uint64_t total, FILE *out)
{
    uint32_t nk = 0;
    for (uint32_t j = 0; j < g->count; j++)
        if (g->n[j].parent == i && (incl[3 * j] || incl[3 * j + 1]))
            nk++;
    if (!nk)
        return 0;
    kid *k = malloc(nk * sizeof(*k));
    if (!k)
        return -1;
    nk = 0;
    for (uint32_t j = 0; j < g->count; j++)
        if (g->n[j].parent == i && (incl[3 * j] || incl[3 * j + 1]))
            k[nk++] = (kid){incl[3 * j + 1], incl[3 * j], g->n[j].name, j};
    qsort(k, nk, sizeof(*k), cmp_kid);
    int rc = 0;
    for (uint32_t a = 0; a < nk && !rc; a++) {
        uint32_t j = k[a].index;
        char t[32], bytes[32] = "";
        gpuprof__an_fmt_ns(t, sizeof(t), incl[3 * j + 1]);
        if (incl[3 * j + 2])
            snprintf(bytes, sizeof(bytes), "%" PRIu64, incl[3 * j + 2]);
        if (fprintf(out, "%10" PRIu64 " %12s %12s %6.1f%%  %*s%s\n",
                    incl[3 * j], t, bytes,
                    total ? 100.0 * (double)incl[3 * j + 1] / (double)total : 0.0,
                    (int)(2 * g->n[j].depth), "", g->n[j].name) < 0)
            rc = -1;
        else
            rc = print_tree(g, incl, j, total, out);
    }
    free(k);
    return rc;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_gpu_print(const char *dir, FILE *out,
                                                   uint32_t flags)
{
    if (!dir || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_gpu_print: bad argument");
    uint32_t nfiles = 0;
    gpuprof_status st;
    char **files = gpuprof__an_list_dir(dir, &nfiles, &st);
    if (!files)
        return st;
    gtree g;
    memset(&g, 0, sizeof(g));
    for (uint32_t f = 0; f < nfiles && st == GPUPROF_OK; f++) {
        gpuprof__io_profile *p = NULL;
        if ((st = gpuprof__an_load(files[f], &p)) != GPUPROF_OK)
            break;
        if (add_profile(&g, p))
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory",
                                  files[f]);
        gpuprof__io_profile_free(p);
    }
    uint64_t *incl = NULL;
    if (st == GPUPROF_OK &&
        !(incl = calloc((size_t)(g.count ? g.count : 1) * 3, sizeof(*incl))))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
    if (st == GPUPROF_OK) {
        uint64_t total = 0, ops = 0;
        for (uint32_t j = 0; j < g.count; j++)
            memcpy(&incl[3 * j], g.n[j].v, sizeof(g.n[j].v));
        for (uint32_t j = g.count; j-- > 0;) { /* children follow parents */
            if (g.n[j].parent != UINT32_MAX)
                for (int k = 0; k < 3; k++)
                    incl[3 * g.n[j].parent + k] += incl[3 * j + k];
            else {
                total += incl[3 * j + 1];
                ops += incl[3 * j];
            }
        }
        if (ops || total) {
            char t[32];
            gpuprof__an_fmt_ns(t, sizeof(t), total);
            if (fprintf(out, "\nGPU operations by calling context: %" PRIu64
                        " operations, %s of device time\n\n%10s %12s %12s "
                        "%7s  %s\n", ops, t, "Count", "GPU time", "Bytes",
                        "Time%", "Context") < 0 ||
                print_tree(&g, incl, UINT32_MAX, total, out) ||
                fflush(out) != 0)
                st = gpuprof__an_fail(GPUPROF_E_IO, "cannot write the report");
        }
    }
    free(incl);
    for (uint32_t j = 0; j < g.count; j++) {
        free(g.n[j].key);
        free(g.n[j].name);
    }
    free(g.n);
    free(g.slots);
    gpuprof__an_symtab_free(g.syms);
    for (uint32_t f = 0; f < nfiles; f++)
        free(files[f]);
    free(files);
    return st;
}
