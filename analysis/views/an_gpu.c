/*
 * an_gpu.c - GPU operations by calling context (`gpuprof report`, second
 * part): every thread of every profile in a directory merged into one tree
 * of regions -> CPU frames (function names from the symbol tables, else
 * module+offset) -> operation placeholders -> kernels, with the inclusive
 * GPU metrics (gpu.count, gpu.time, gpu.bytes; api.time and the blame
 * columns when a profile has them) of each node; only the nodes beneath
 * which something was measured are printed, largest GPU time first. Then
 * the blame-shifting summary (seed 002 §IV.A) and the inefficiency
 * detectors that fired (§IV.B), each with the contexts it fired in.
 * A node is identified by its path of keys from the top (region names,
 * frames by module path and offset, operation kinds, kernel names), so the
 * same call site in two threads or two processes is one row. Metrics that
 * backends registered (any GPU- or CPU-kind metric of a profile's table
 * that is not one of the built-in ones read here) follow, each with its
 * unit and combination as the profile describes it (sum, odd sum with the
 * mean over its count metric, max) and the contexts with the largest
 * values.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

/* The metrics read, in this order (a profile may lack some). */
static const char *const metric_names[] = {
    "gpu.count", "gpu.time", "gpu.bytes", "api.time", "blame.cpu_idle",
    "blame.cpu_idle_cause", "blame.gpu_idle_cause",
    "detect.jit_single_device", "detect.output_as_input",
    "detect.args_not_aliased", "detect.kernel_multi_context",
    "detect.inorder_queue", "detect.devices_unused", "detect.launch_wait"};
enum { NDET = 7 };
enum { M_COUNT, M_TIME, M_BYTES, M_API, M_IDLE, M_IDLE_CAUSE, M_GPU_IDLE,
       M_DET0, NM = M_DET0 + NDET };

static const char *const det_text[NDET] = {
    "program compiled at run time (JIT) where an offline binary would do "
    "(OpenCL: built for a single device; CUDA: a module loaded from PTX; "
    "Level Zero: a module created from SPIR-V): "
    "compile ahead of time and skip the build",
    "data read back from the device is sent to it again: keep it on the "
    "device",
    "kernel buffer arguments never overlap: declare them restrict "
    "(reordering becomes legal)",
    "kernel used in more than one context: it is compiled once per context; "
    "share one context",
    "work serialized: an in-order queue (OpenCL) or launches on CUDA's "
    "legacy default stream never overlap other work; use an out-of-order "
    "queue with events, or streams of your own",
    "devices present that no context used",
    "a host wait after every launch (at least 100 launch->wait pairs at "
    "this wait; blame.cpu_idle is their time): batch the work and wait "
    "once"};

/* Built-in GPU- and CPU-kind metrics this report does not show as
 * columns: odd sums per launch (the database views show them). */
static const char *const builtin_other[] = {
    "gpu.work_items", "gpu.group_size", "gpu.registers", "gpu.shared_bytes"};

/* Metrics registered by backends, as the profiles describe them. */
#define XMAX 64
typedef struct xmetric {
    char *name, *count_name; /* count_name: odd sums, else NULL */
    uint8_t unit, combine;
    uint32_t flags;
} xmetric;

typedef struct gnode {
    char *key;  /* merge key (unique among siblings) */
    char *name; /* what is printed */
    uint32_t parent, depth;
    uint64_t v[NM]; /* exclusive values */
    uint64_t *xv;   /* registered metrics' values (XMAX), NULL: none */
} gnode;

typedef struct gtree {
    gnode *n;
    uint32_t count, cap;
    uint32_t *slots, mask;
    gpuprof__an_symtab *syms;
    xmetric x[XMAX];
    uint32_t nx;
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
        if (gpuprof__an_pyframe(path, n->key_b, name, ns)) {
            snprintf(key, ks, "f:%s+%" PRIx64, path, n->key_b);
            break;
        }
        const char *fn = gpuprof__an_symbolize(&g->syms, path, n->key_b, &d);
        char *readable = gpuprof__an_demangle(fn); /* C++: as the database */
        snprintf(key, ks, "f:%s+%" PRIx64, path, n->key_b);
        if (fn)
            snprintf(name, ns, "%s+0x%" PRIx64 " (%s)",
                     readable ? readable : fn, d, base_name(path));
        else
            snprintf(name, ns, "%s+0x%" PRIx64, base_name(path), n->key_b);
        free(readable);
        break;
    }
    case GPUPROF_IO_NODE_GPU_OP:
        snprintf(key, ks, "g:%u", n->key_a);
        snprintf(name, ns, "<%s>", gpuprof__an_op_name(n->key_a));
        break;
    case GPUPROF_IO_NODE_KERNEL: {
        const char *kn = gpuprof__io_str(p, n->key_a);
        char *readable = gpuprof__an_demangle(kn);
        snprintf(key, ks, "k:%s", kn);
        snprintf(name, ns, "kernel %s", readable ? readable : kn);
        free(readable);
        break;
    }
    default:
        snprintf(key, ks, "i:%u:%" PRIx64, n->key_a, n->key_b);
        snprintf(name, ns, "instruction +0x%" PRIx64, n->key_b);
    }
}

/* Is metric i of p one a backend registered (shown by name here)? */
static bool registered(const gpuprof__io_profile *p, uint32_t i)
{
    const gpuprof__io_metric *m = &p->metrics[i];
    const char *name = gpuprof__io_str(p, m->name);
    if ((m->kind != GPUPROF_IO_KIND_GPU && m->kind != GPUPROF_IO_KIND_CPU) ||
        m->type != GPUPROF_IO_U64)
        return false;
    for (int k = 0; k < NM; k++)
        if (!strcmp(name, metric_names[k]))
            return false;
    for (size_t k = 0; k < sizeof(builtin_other) / sizeof(*builtin_other); k++)
        if (!strcmp(name, builtin_other[k]))
            return false;
    return true;
}

/* Slots of p's registered metrics in g->x (UINT32_MAX: not one, or past
 * XMAX); -1 when out of memory. */
static int map_registered(gtree *g, const gpuprof__io_profile *p,
                          uint32_t *slot)
{
    for (uint32_t i = 0; i < p->metric_count; i++) {
        slot[i] = UINT32_MAX;
        if (!registered(p, i))
            continue;
        const gpuprof__io_metric *m = &p->metrics[i];
        const char *name = gpuprof__io_str(p, m->name);
        uint32_t k = 0;
        while (k < g->nx && strcmp(g->x[k].name, name))
            k++;
        if (k == XMAX)
            continue;
        if (k == g->nx) {
            xmetric *x = &g->x[k];
            x->name = strdup(name);
            x->count_name = m->count_name
                                ? strdup(gpuprof__io_str(p, m->count_name))
                                : NULL;
            x->unit = m->unit, x->combine = m->combine, x->flags = m->flags;
            if (!x->name || (m->count_name && !x->count_name))
                return -1;
            g->nx++;
        }
        slot[i] = k;
    }
    return 0;
}

/* Node i's values of registered metrics into x (merged by their rule). */
static int add_registered(gtree *g, const gpuprof__io_profile *p, uint32_t i,
                          const uint32_t *slot, uint32_t x)
{
    const gpuprof__io_node *n = &p->nodes[i];
    for (uint32_t k = 0; k < n->value_count; k++) {
        const gpuprof__io_value *v = &p->values[n->first_value + k];
        uint32_t s = slot[v->metric];
        if (s == UINT32_MAX)
            continue;
        if (!g->n[x].xv && !(g->n[x].xv = calloc(XMAX, sizeof(uint64_t))))
            return -1;
        uint64_t *to = &g->n[x].xv[s];
        *to = g->x[s].combine == GPUPROF_IO_MAX
                  ? (v->bits > *to ? v->bits : *to)
                  : *to + v->bits;
    }
    return 0;
}

static int add_profile(gtree *g, const gpuprof__io_profile *p)
{
    uint32_t m[NM];
    bool any = false;
    for (int k = 0; k < NM; k++)
        any |= (m[k] = gpuprof__an_metric(p, metric_names[k])) != UINT32_MAX;
    uint32_t *slot =
        malloc((p->metric_count ? p->metric_count : 1) * sizeof(*slot));
    if (!slot || map_registered(g, p, slot)) {
        free(slot);
        return -1;
    }
    for (uint32_t i = 0; i < p->metric_count; i++)
        any |= slot[i] != UINT32_MAX;
    if (!any) {
        free(slot);
        return 0; /* no GPU metrics in this profile */
    }
    uint32_t *map = malloc((p->node_count ? p->node_count : 1) * sizeof(*map));
    if (!map) {
        free(slot);
        return -1;
    }
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
            if (x == UINT32_MAX || add_registered(g, p, i, slot, x)) {
                free(map);
                free(slot);
                return -1;
            }
            map[i] = x;
            for (int k = 0; k < NM; k++)
                if (m[k] != UINT32_MAX)
                    g->n[x].v[k] += gpuprof__an_value(p, i, m[k]);
        }
    }
    free(map);
    free(slot);
    return 0;
}

typedef struct kid {
    uint64_t time, api, count;
    const char *name;
    uint32_t index;
} kid;

static int cmp_kid(const void *a, const void *b)
{
    const kid *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? 1 : -1;
    if (x->api != y->api)
        return x->api < y->api ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

static bool shown(const uint64_t *v)
{
    for (int k = 0; k < NM; k++)
        if (k != M_BYTES && v[k])
            return true;
    return false;
}

/* Optional columns: API time, CPU_IDLE, CPU_IDLE_CAUSE, GPU_IDLE_CAUSE. */
static const int opt_cols[4] = {M_API, M_IDLE, M_IDLE_CAUSE, M_GPU_IDLE};
static const char *const opt_head[4] = {"API time", "CPU_IDLE",
                                        "IDLE_CAUSE", "GPU_IDLE_C"};

/* Prints node i's subtree (or the top when i is UINT32_MAX). */
static int print_tree(const gtree *g, const uint64_t *incl, uint32_t i,
                      uint64_t total, const bool *cols, FILE *out)
{
    uint32_t nk = 0;
    for (uint32_t j = 0; j < g->count; j++)
        if (g->n[j].parent == i && shown(&incl[NM * j]))
            nk++;
    if (!nk)
        return 0;
    kid *k = malloc(nk * sizeof(*k));
    if (!k)
        return -1;
    nk = 0;
    for (uint32_t j = 0; j < g->count; j++)
        if (g->n[j].parent == i && shown(&incl[NM * j]))
            k[nk++] = (kid){incl[NM * j + M_TIME], incl[NM * j + M_API],
                            incl[NM * j + M_COUNT], g->n[j].name, j};
    qsort(k, nk, sizeof(*k), cmp_kid);
    int rc = 0;
    for (uint32_t a = 0; a < nk && !rc; a++) {
        uint32_t j = k[a].index;
        const uint64_t *v = &incl[NM * j];
        char t[32], bytes[32] = "", extra[80] = "";
        gpuprof__an_fmt_ns(t, sizeof(t), v[M_TIME]);
        if (v[M_BYTES])
            snprintf(bytes, sizeof(bytes), "%" PRIu64, v[M_BYTES]);
        size_t at = 0;
        for (int c = 0; c < 4; c++) {
            if (!cols[c])
                continue;
            char x[32] = "";
            if (v[opt_cols[c]])
                gpuprof__an_fmt_ns(x, sizeof(x), v[opt_cols[c]]);
            at += (size_t)snprintf(extra + at, sizeof(extra) - at, " %11s", x);
        }
        if (fprintf(out, "%10" PRIu64 " %12s %12s %6.1f%%%s  %*s%s\n",
                    v[M_COUNT], t, bytes,
                    total ? 100.0 * (double)v[M_TIME] / (double)total : 0.0,
                    extra, (int)(2 * g->n[j].depth), "", g->n[j].name) < 0)
            rc = -1;
        else
            rc = print_tree(g, incl, j, total, cols, out);
    }
    free(k);
    return rc;
}

/* "innermost <- ... <- outermost", at most `levels` names. */
static void context_text(const gtree *g, uint32_t j, int levels, char *buf,
                         size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int l = 0; j != UINT32_MAX && l < levels && at < size;
         l++, j = g->n[j].parent)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", l ? " <- " : "",
                               g->n[j].name);
    if (j != UINT32_MAX && at < size)
        snprintf(buf + at, size - at, " <- ...");
}

typedef struct top {
    uint64_t v;
    uint32_t j;
    double key; /* what ranks it: v, or an odd sum's mean */
} top;

static int cmp_top(const void *a, const void *b)
{
    const top *x = a, *y = b;
    return x->key != y->key ? (x->key < y->key ? 1 : -1)
                            : (x->j > y->j) - (x->j < y->j);
}

/* Node j's exclusive value of metric k (k >= NM: registered metric
 * k - NM). */
static uint64_t value_of(const gtree *g, uint32_t j, int k)
{
    if (k < NM)
        return g->n[j].v[k];
    return g->n[j].xv ? g->n[j].xv[k - NM] : 0;
}

/* The (at most `n`) nodes with the largest exclusive value of metric k;
 * with `by_region`, values are first moved up to the nearest region. */
static int print_top_of(const gtree *g, int k, int n, bool ns,
                        bool by_region, int cm, FILE *out);

static int print_top(const gtree *g, int k, int n, bool ns, bool by_region,
                     FILE *out)
{
    return print_top_of(g, k, n, ns, by_region, -1, out);
}

/* print_top, and for an odd sum (cm: its count metric, else -1) each
 * context's mean over its count instead of its sum, ranked by it. */
static int print_top_of(const gtree *g, int k, int n, bool ns,
                        bool by_region, int cm, FILE *out)
{
    uint64_t *v = calloc(g->count ? g->count : 1, sizeof(*v));
    if (!v)
        return -1;
    for (uint32_t j = 0; j < g->count; j++) {
        uint32_t at = j;
        while (by_region && at != UINT32_MAX && strncmp(g->n[at].key, "r:", 2))
            at = g->n[at].parent;
        if (at == UINT32_MAX)
            at = j; /* outside every region: where it is */
        v[at] += value_of(g, j, k);
    }
    uint32_t m = 0;
    for (uint32_t j = 0; j < g->count; j++)
        m += v[j] != 0;
    if (!m) {
        free(v);
        return 0;
    }
    top *t = malloc(m * sizeof(*t));
    if (!t) {
        free(v);
        return -1;
    }
    m = 0;
    for (uint32_t j = 0; j < g->count; j++)
        if (v[j]) {
            double c = cm >= 0 ? (double)g->n[j].v[cm] : 1;
            t[m++] = (top){v[j], j, gpuprof__an_mean((double)v[j], c)};
        }
    free(v);
    qsort(t, m, sizeof(*t), cmp_top);
    int rc = 0;
    for (uint32_t a = 0; a < m && a < (uint32_t)n && !rc; a++) {
        char val[32], ctx[1024];
        if (ns)
            gpuprof__an_fmt_ns(val, sizeof(val), t[a].v);
        else if (cm >= 0 && isnan(t[a].key)) /* a value without a count */
            snprintf(val, sizeof(val), "-");
        else if (cm >= 0)
            snprintf(val, sizeof(val), "%.4g", t[a].key);
        else
            snprintf(val, sizeof(val), "%" PRIu64 "%s", t[a].v,
                     k < NM ? "x" : "");
        context_text(g, t[a].j, 4, ctx, sizeof(ctx));
        if (fprintf(out, "  %12s  %s\n", val, ctx) < 0)
            rc = -1;
    }
    if (!rc && m > (uint32_t)n &&
        fprintf(out, "  %12s  (%u more)\n", "", m - (uint32_t)n) < 0)
        rc = -1;
    free(t);
    return rc;
}

/* Blame shifting and detectors, from the exclusive values. */
static int print_findings(const gtree *g, FILE *out)
{
    uint64_t sum[NM] = {0};
    for (uint32_t j = 0; j < g->count; j++)
        for (int k = 0; k < NM; k++)
            sum[k] += g->n[j].v[k];
    int rc = 0;
    if (sum[M_IDLE] || sum[M_IDLE_CAUSE] || sum[M_GPU_IDLE]) {
        char a[32], b[32], c[32];
        gpuprof__an_fmt_ns(a, sizeof(a), sum[M_IDLE]);
        gpuprof__an_fmt_ns(b, sizeof(b), sum[M_IDLE_CAUSE]);
        gpuprof__an_fmt_ns(c, sizeof(c), sum[M_GPU_IDLE]);
        if (fprintf(out, "\nCPU-GPU blame shifting\n"
                    "  CPU_IDLE        %12s  threads blocked waiting for the "
                    "device\n"
                    "  CPU_IDLE_CAUSE  %12s  that wait, blamed on the device "
                    "work running meanwhile\n"
                    "  GPU_IDLE_CAUSE  %12s  CPU time while no kernel ran on "
                    "any device\n", a, b, c) < 0)
            return -1;
        if (sum[M_IDLE] && (fprintf(out, "Where threads waited (CPU_IDLE):\n") < 0 ||
                            print_top(g, M_IDLE, 5, true, false, out)))
            return -1;
        if (sum[M_IDLE_CAUSE] &&
            (fprintf(out, "What they waited for (CPU_IDLE_CAUSE):\n") < 0 ||
             print_top(g, M_IDLE_CAUSE, 5, true, false, out)))
            return -1;
        if (sum[M_GPU_IDLE] &&
            (fprintf(out, "Regions whose CPU work kept the device idle "
                     "(GPU_IDLE_CAUSE; call paths in the tree above):\n") < 0 ||
             print_top(g, M_GPU_IDLE, 5, true, true, out)))
            return -1;
    }
    bool any = false;
    for (int d = 0; d < NDET; d++)
        any |= sum[M_DET0 + d] != 0;
    if (!any)
        return 0;
    if (fprintf(out, "\nInefficiencies detected\n") < 0)
        return -1;
    for (int d = 0; d < NDET && !rc; d++) {
        if (!sum[M_DET0 + d])
            continue;
        if (fprintf(out, "  [%s] %s (%" PRIu64 "x)\n",
                    metric_names[M_DET0 + d] + 7, det_text[d],
                    sum[M_DET0 + d]) < 0)
            rc = -1;
        else
            rc = print_top(g, M_DET0 + d, 3, false, false, out);
    }
    return rc;
}

/* The metrics backends registered: total (a maximum for max metrics; an
 * odd sum also as its mean over its count metric) and where it is
 * largest (an odd sum: where its mean is, shown as the mean). */
static int print_registered(const gtree *g, FILE *out)
{
    static const char *const units[] = {"", " ns", " bytes"};
    if (g->nx && fprintf(out, "\nMetrics registered by backends\n") < 0)
        return -1;
    for (uint32_t k = 0; k < g->nx; k++) {
        const xmetric *x = &g->x[k];
        uint64_t total = 0, count = 0;
        int cm = -1;
        for (int c = 0; x->count_name && c < NM; c++)
            if (!strcmp(metric_names[c], x->count_name))
                cm = c;
        for (uint32_t j = 0; j < g->count; j++) {
            uint64_t v = value_of(g, j, NM + (int)k);
            total = x->combine == GPUPROF_IO_MAX ? (v > total ? v : total)
                                                 : total + v;
            count += cm >= 0 ? g->n[j].v[cm] : 0;
        }
        char mean[96] = "";
        if (x->count_name && count)
            snprintf(mean, sizeof(mean), ", mean %.3g per %s",
                     (double)total / (double)count, x->count_name);
        const char *how = x->combine == GPUPROF_IO_MAX ? "max"
                          : x->count_name              ? "odd sum"
                                                       : "sum";
        if (fprintf(out, "  %s (%s%s): %" PRIu64 "%s%s\n", x->name, how,
                    x->flags & GPUPROF_IO_METRIC_NO_INCLUSIVE
                        ? ", exclusive only"
                        : "",
                    total, units[x->unit <= 2 ? x->unit : 0], mean) < 0 ||
            print_top_of(g, NM + (int)k, 3, false, false, count ? cm : -1,
                         out))
            return -1;
    }
    return 0;
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
        !(incl = calloc((size_t)(g.count ? g.count : 1) * NM, sizeof(*incl))))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
    if (st == GPUPROF_OK) {
        uint64_t total = 0, ops = 0;
        bool cols[4] = {false, false, false, false};
        for (uint32_t j = 0; j < g.count; j++) {
            memcpy(&incl[NM * j], g.n[j].v, sizeof(g.n[j].v));
            for (int c = 0; c < 4; c++)
                cols[c] |= g.n[j].v[opt_cols[c]] != 0;
        }
        for (uint32_t j = g.count; j-- > 0;) { /* children follow parents */
            if (g.n[j].parent != UINT32_MAX)
                for (int k = 0; k < NM; k++)
                    incl[NM * g.n[j].parent + k] += incl[NM * j + k];
            else {
                total += incl[NM * j + M_TIME];
                ops += incl[NM * j + M_COUNT];
            }
        }
        bool xany = false;
        for (uint32_t j = 0; j < g.count && !xany; j++)
            xany = g.n[j].xv != NULL;
        if (ops || total || xany) {
            char t[32], head[80] = "";
            size_t at = 0;
            for (int c = 0; c < 4; c++)
                if (cols[c])
                    at += (size_t)snprintf(head + at, sizeof(head) - at,
                                           " %11s", opt_head[c]);
            gpuprof__an_fmt_ns(t, sizeof(t), total);
            if (fprintf(out,
                        "\nGPU operations by calling context: %" PRIu64
                        " operations, %s of device time\n\n%10s %12s %12s "
                        "%7s%s  %s\n",
                        ops, t, "Count", "GPU time", "Bytes", "Time%", head,
                        "Context") < 0 ||
                print_tree(&g, incl, UINT32_MAX, total, cols, out) ||
                print_findings(&g, out) || print_registered(&g, out) ||
                fflush(out) != 0)
                st = gpuprof__an_fail(GPUPROF_E_IO, "cannot write the report");
        }
    }
    free(incl);
    for (uint32_t j = 0; j < g.count; j++) {
        free(g.n[j].key);
        free(g.n[j].name);
        free(g.n[j].xv);
    }
    for (uint32_t k = 0; k < g.nx; k++) {
        free(g.x[k].name);
        free(g.x[k].count_name);
    }
    free(g.n);
    free(g.slots);
    gpuprof__an_symtab_free(g.syms);
    for (uint32_t f = 0; f < nfiles; f++)
        free(files[f]);
    free(files);
    return st;
}
