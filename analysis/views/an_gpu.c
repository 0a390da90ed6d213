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
#include "../db/an_runtime.h"

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
    uint8_t what; /* a frame's gpuprof__an_rt_what (an_runtime.h) */
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
    uint8_t *rt;  /* per node: GPUPROF__AN_RT_* (the runtime's frames) */
    uint32_t *up; /* per node: the nearest ancestor shown (UINT32_MAX: top) */
    uint32_t flags; /* GPUPROF_AN_RUNTIME_FRAMES: nothing hidden */
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
                      const char *name, uint8_t what)
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
    m->what = what;
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

/* Key and display name of a node that is not a root, and what a frame is
 * (an_runtime.h: the runtime's frames are recognized as in a database). */
static void describe(gtree *g, const gpuprof__io_profile *p,
                     const gpuprof__io_node *n, char *key, size_t ks,
                     char *name, size_t ns, uint8_t *what)
{
    *what = GPUPROF__AN_RT_NO;
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
            *what = GPUPROF__AN_RT_PYTHON;
            break;
        }
        const char *fn = gpuprof__an_symbolize(&g->syms, path, n->key_b, &d);
        *what = (uint8_t)gpuprof__an_rt_classify(path, fn);
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
            uint8_t what;
            describe(g, p, n, key, sizeof(key), name, sizeof(name), &what);
            uint32_t x =
                child(g, map[th->first_node + n->parent], key, name, what);
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
                                        "CPU_IDLE_CAUSE", "GPU_IDLE_CAUSE"};

/* Lines are at most LINE_WIDTH bytes: a name longer than its room keeps
 * its head and its " (module)" (gpuprof__an_fit), and beyond INDENT_MAX
 * the indentation stops growing and the row says how much deeper it is. */
enum { LINE_WIDTH = 200, INDENT_MAX = 40 };

/* The runtime's frames (an_runtime.h): which nodes are hidden and each
 * node's nearest shown ancestor, into g->rt and g->up. */
static int mark_runtime(gtree *g)
{
    gpuprof__an_rt_node *n = malloc((g->count ? g->count : 1) * sizeof(*n));
    g->rt = malloc(g->count ? g->count : 1);
    g->up = malloc((g->count ? g->count : 1) * sizeof(*g->up));
    if (!n || !g->rt || !g->up) {
        free(n);
        return -1;
    }
    for (uint32_t j = 0; j < g->count; j++) {
        const gnode *m = &g->n[j];
        bool own = false;
        for (int k = 0; k < NM; k++)
            own |= m->v[k] != 0;
        for (uint32_t k = 0; m->xv && k < g->nx; k++)
            own |= m->xv[k] != 0;
        n[j] = (gpuprof__an_rt_node){
            m->parent,
            !strncmp(m->key, "f:", 2) ? GPUPROF__AN_RT_FRAME
                                      : GPUPROF__AN_RT_OTHER,
            m->what, own};
    }
    int rc = gpuprof__an_rt_mark(n, g->count, g->rt);
    if (g->flags & GPUPROF_AN_RUNTIME_FRAMES)
        memset(g->rt, 0, g->count);
    for (uint32_t j = 0; !rc && j < g->count; j++)
        g->up[j] = gpuprof__an_rt_up(n, g->rt, j);
    free(n);
    return rc;
}

static const char *node_name(const gtree *g, uint32_t j)
{
    return g->rt[j] & GPUPROF__AN_RT_THREAD_ROOT ? "<thread root>"
                                                 : g->n[j].name;
}

/* The tree as printed: children of each shown node (UINT32_MAX: the top
 * is at index count), the run's whole per column, the threshold. */
typedef struct gview {
    const gtree *g;
    const uint64_t *incl;
    uint32_t *first, *next; /* shown children, linked */
    uint64_t whole[NM];
    double min_share;
    bool cols[4];
    uint32_t left_out; /* rows under the threshold (with what is beneath) */
    FILE *out;
} gview;

/* Whether a row with inclusive values v is printed: something measured
 * beneath it, and at least min_share of the whole in some column. */
static bool row_kept(const gview *w, const uint64_t *v)
{
    if (!shown(v))
        return false;
    if (w->min_share <= 0)
        return true;
    static const int base_cols[3] = {M_COUNT, M_TIME, M_BYTES};
    for (int c = 0; c < 7; c++) {
        int k = c < 3 ? base_cols[c] : opt_cols[c - 3];
        if ((c < 3 || w->cols[c - 3]) && w->whole[k] &&
            (double)v[k] >= w->min_share * (double)w->whole[k])
            return true;
    }
    return false;
}

/* Rows beneath j that are shown(), j included: what a cut leaves out. */
static uint32_t rows_under(const gview *w, uint32_t j)
{
    uint32_t n = shown(&w->incl[NM * j]) ? 1 : 0;
    for (uint32_t k = w->first[j]; k != UINT32_MAX; k = w->next[k])
        n += rows_under(w, k);
    return n;
}

static int print_row(gview *w, uint32_t j, uint32_t depth)
{
    const uint64_t *v = &w->incl[NM * j];
    char count[24] = "", t[32] = "", bytes[32] = "", extra[80] = "",
         name[LINE_WIDTH + 1], deeper[24] = "";
    if (v[M_COUNT]) /* zeros blank: what a row holds stands out */
        snprintf(count, sizeof(count), "%" PRIu64, v[M_COUNT]);
    if (v[M_TIME])
        gpuprof__an_fmt_ns(t, sizeof(t), v[M_TIME]);
    if (v[M_BYTES])
        snprintf(bytes, sizeof(bytes), "%" PRIu64, v[M_BYTES]);
    size_t at = 0;
    for (int c = 0; c < 4; c++) {
        if (!w->cols[c])
            continue;
        char x[32] = "";
        if (v[opt_cols[c]])
            gpuprof__an_fmt_ns(x, sizeof(x), v[opt_cols[c]]);
        at += (size_t)snprintf(extra + at, sizeof(extra) - at, " %14s", x);
    }
    int indent = (int)(2 * depth);
    if (indent > INDENT_MAX) {
        snprintf(deeper, sizeof(deeper), "(+%d) ", (indent - INDENT_MAX) / 2);
        indent = INDENT_MAX;
    }
    size_t room = LINE_WIDTH - 46 - at - (size_t)indent - strlen(deeper);
    gpuprof__an_fit(node_name(w->g, j), room, name, sizeof(name));
    return fprintf(w->out, "%10s %12s %12s %6.1f%%%s  %*s%s%s\n",
                   count, t, bytes,
                   w->whole[M_TIME] ? 100.0 * (double)v[M_TIME] /
                                          (double)w->whole[M_TIME]
                                    : 0.0,
                   extra, indent, "", deeper, name) < 0
               ? -1
               : 0;
}

/* Prints the shown children of node i (the top when i is count). */
static int print_tree(gview *w, uint32_t i, uint32_t depth)
{
    const gtree *g = w->g;
    uint32_t nk = 0;
    for (uint32_t j = w->first[i]; j != UINT32_MAX; j = w->next[j])
        nk++;
    if (!nk)
        return 0;
    kid *k = malloc(nk * sizeof(*k));
    if (!k)
        return -1;
    nk = 0;
    for (uint32_t j = w->first[i]; j != UINT32_MAX; j = w->next[j]) {
        const uint64_t *v = &w->incl[NM * j];
        if (!row_kept(w, v)) {
            w->left_out += rows_under(w, j);
            continue;
        }
        k[nk++] = (kid){v[M_TIME], v[M_API], v[M_COUNT], node_name(g, j), j};
    }
    qsort(k, nk, sizeof(*k), cmp_kid);
    int rc = 0;
    for (uint32_t a = 0; a < nk && !rc; a++)
        if (!(rc = print_row(w, k[a].index, depth)))
            rc = print_tree(w, k[a].index, depth + 1);
    free(k);
    return rc;
}

/* The tree of GPU operations with its header and, when rows were left
 * out, a line saying how many and how to see them. */
static int print_gpu_tree(const gtree *g, const uint64_t *incl,
                          double min_share, const bool *cols, uint64_t ops,
                          FILE *out)
{
    gview w = {.g = g, .incl = incl, .min_share = min_share, .out = out};
    memcpy(w.cols, cols, sizeof(w.cols));
    w.first = malloc(((size_t)g->count + 1) * sizeof(*w.first));
    w.next = malloc(((size_t)g->count + 1) * sizeof(*w.next));
    if (!w.first || !w.next) {
        free(w.first);
        free(w.next);
        return -1;
    }
    for (uint32_t j = 0; j <= g->count; j++)
        w.first[j] = w.next[j] = UINT32_MAX;
    for (uint32_t j = g->count; j-- > 0;) {
        if (g->rt[j] & GPUPROF__AN_RT_HIDDEN)
            continue;
        uint32_t p = g->up[j] == UINT32_MAX ? g->count : g->up[j];
        w.next[j] = w.first[p];
        w.first[p] = j;
        if (p == g->count)
            for (int k = 0; k < NM; k++)
                w.whole[k] += incl[NM * j + k];
    }
    char t[32], head[80] = "";
    size_t at = 0;
    for (int c = 0; c < 4; c++)
        if (cols[c])
            at += (size_t)snprintf(head + at, sizeof(head) - at, " %14s",
                                   opt_head[c]);
    gpuprof__an_fmt_ns(t, sizeof(t), w.whole[M_TIME]);
    int rc = fprintf(out,
                     "\nGPU operations by calling context: %" PRIu64
                     " operations, %s of device time\n\n%10s %12s %12s "
                     "%7s%s  %s\n",
                     ops, t, "Count", "GPU time", "Bytes", "Time%", head,
                     "Context") < 0
                 ? -1
                 : print_tree(&w, g->count, 0);
    if (!rc && w.left_out &&
        fprintf(out, "(%" PRIu32 " context%s under %g%% of the run in every "
                "column left out: --threshold 0 shows them)\n",
                w.left_out, w.left_out == 1 ? "" : "s",
                100 * min_share) < 0)
        rc = -1;
    free(w.first);
    free(w.next);
    return rc;
}

/* "innermost <- ... <- outermost", at most `levels` names, the runtime's
 * frames left out as in the tree. */
static void context_text(const gtree *g, uint32_t j, int levels, char *buf,
                         size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    if (g->rt[j] & GPUPROF__AN_RT_HIDDEN)
        j = g->up[j];
    for (int l = 0; j != UINT32_MAX && l < levels && at < size;
         l++, j = g->up[j]) {
        char name[48]; /* four of them and the values fit LINE_WIDTH */
        gpuprof__an_fit(node_name(g, j), 40, name, sizeof(name));
        at += (size_t)snprintf(buf + at, size - at, "%s%s", l ? " <- " : "",
                               name);
    }
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

/* `text` from column `col` on, in lines of at most 100 bytes broken at
 * spaces, the lines after the first indented by 6. */
static int print_wrapped(const char *text, size_t col, FILE *out)
{
    bool first = true;
    while (*text) {
        size_t w = strcspn(text, " ");
        if (!first && col + 1 + w > 100) {
            if (fputs("\n      ", out) < 0)
                return -1;
            col = 6;
        } else if (!first) {
            if (fputc(' ', out) == EOF)
                return -1;
            col++;
        }
        if (fwrite(text, 1, w, out) != w)
            return -1;
        col += w;
        first = false;
        text += w;
        text += strspn(text, " ");
    }
    return fputc('\n', out) == EOF ? -1 : 0;
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
        int at = fprintf(out, "  [%s] (%" PRIu64 "x) ",
                         metric_names[M_DET0 + d] + 7, sum[M_DET0 + d]);
        if (at < 0 || print_wrapped(det_text[d], (size_t)at, out))
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
    if (flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_gpu_print: bad argument");
    return gpuprof_an_gpu_print_ex(dir, out, GPUPROF_AN_REPORT_THRESHOLD, 0);
}

/* The inclusive values (children follow parents), the optional columns
 * with data, and the totals of the top. */
static void roll_up(const gtree *g, uint64_t *incl, bool *cols,
                    uint64_t *total, uint64_t *ops)
{
    *total = *ops = 0;
    for (uint32_t j = 0; j < g->count; j++) {
        memcpy(&incl[NM * j], g->n[j].v, sizeof(g->n[j].v));
        for (int c = 0; c < 4; c++)
            cols[c] |= g->n[j].v[opt_cols[c]] != 0;
    }
    for (uint32_t j = g->count; j-- > 0;) {
        if (g->n[j].parent != UINT32_MAX)
            for (int k = 0; k < NM; k++)
                incl[NM * g->n[j].parent + k] += incl[NM * j + k];
        else {
            *total += incl[NM * j + M_TIME];
            *ops += incl[NM * j + M_COUNT];
        }
    }
}

GPUPROF_AN_API gpuprof_status gpuprof_an_gpu_print_ex(const char *dir,
                                                      FILE *out,
                                                      double min_share,
                                                      uint32_t flags)
{
    if (!dir || !out || (flags & ~GPUPROF_AN_RUNTIME_FRAMES) ||
        !(min_share >= 0 && min_share <= 1))
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_gpu_print: bad argument");
    uint32_t nfiles = 0;
    gpuprof_status st;
    char **files = gpuprof__an_list_dir(dir, &nfiles, &st);
    if (!files)
        return st;
    gtree g;
    memset(&g, 0, sizeof(g));
    g.flags = flags;
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
        (!(incl = calloc((size_t)(g.count ? g.count : 1) * NM,
                         sizeof(*incl))) ||
         mark_runtime(&g)))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", dir);
    if (st == GPUPROF_OK) {
        uint64_t total, ops;
        bool cols[4] = {false, false, false, false};
        roll_up(&g, incl, cols, &total, &ops);
        bool xany = false;
        for (uint32_t j = 0; j < g.count && !xany; j++)
            xany = g.n[j].xv != NULL;
        if ((ops || total || xany) &&
            (print_gpu_tree(&g, incl, min_share, cols, ops, out) ||
             print_findings(&g, out) || print_registered(&g, out) ||
             fflush(out) != 0))
            st = gpuprof__an_fail(GPUPROF_E_IO, "cannot write the report");
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
    free(g.rt);
    free(g.up);
    gpuprof__an_symtab_free(g.syms);
    for (uint32_t f = 0; f < nfiles; f++)
        free(files[f]);
    free(files);
    return st;
}
