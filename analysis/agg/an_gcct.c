/*
 * an_gcct.c - GPU calling contexts beneath kernels (an_gcct.h): per kernel
 * node of a thread, its sampled instructions' samples give the call sites'
 * weights (gpu/an_sass_cg.c: the call graph, Tarjan's SCCs), the tree of
 * call paths by call site gives each path its share of its function's
 * calls, and each instruction gets one context per path of its function
 * (plus, for what no path accounts for, its plain lines beneath the
 * kernel). Cubins are listed once per analysis (nvdisasm, or the listing
 * GPUPROF_NVDISASM names); one that cannot be listed is not tried again.
 * Without nvdisasm the analysis's warning callback gets one note, at the
 * first kernel with PC samples of a cubin: what was looked for and what
 * is lost (the instructions stay lines beneath their kernels).
 * Everything here is deterministic: pass 2 and the ranks make the same
 * contexts again.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_buf.h"
#include "../db/an_db.h"
#include "../gpu/an_sass.h"
#include "an_gcct.h"

/* Tree nodes per kernel: a DAG splits exponentially. */
#define MAX_PATHS 4096u

typedef struct gbin {
    char *path;
    gpuprof__sass_bin *b; /* NULL: could not be listed */
    double *samples;      /* per instruction; zero between kernels */
} gbin;

struct gpuprof__an_gcct {
    gbin *bin;
    uint32_t n, cap;
    bool told; /* the note that nvdisasm is missing was given */
};

/* Once per analysis: nvdisasm was not found (the first time a cubin with
 * PC samples could not be listed for want of it). */
static void tell_no_nvdisasm(const an_structure *x, gpuprof__an_gcct *c,
                             const char *cubin)
{
    char tool[4096], why[512], msg[5120];
    if (c->told || !x->warn ||
        gpuprof__sass_find_nvdisasm(tool, sizeof(tool), why, sizeof(why)))
        return;
    c->told = true;
    snprintf(msg, sizeof(msg),
             "note: %s: the PC samples of GPU binaries (first %s) stay "
             "instruction lines beneath their kernels, and no GPU calling "
             "contexts (device functions, their call paths, loops) are "
             "built; set GPUPROF_NVDISASM or CUDA_HOME to the CUDA "
             "toolkit's nvdisasm and analyze again",
             why, cubin);
    x->warn(msg, x->warn_user);
}

/* nvdisasm ran and failed on a cubin (said once per cubin: each is
 * listed once): how it ended and what it said. */
static void tell_failed(const an_structure *x, const char *cubin)
{
    char msg[5120];
    snprintf(msg, sizeof(msg),
             "note: %s: the PC samples of %s stay instruction lines beneath "
             "their kernels (no GPU calling contexts)",
             gpuprof_an_last_error(), cubin);
    x->warn(msg, x->warn_user);
}

/* The listing of the cubin at `path`, listed the first time; NULL when it
 * cannot be (or out of memory: *nomem). */
static gbin *bin_get(an_structure *x, const char *path, bool *nomem)
{
    gpuprof__an_gcct **cp = &x->gcct;
    if (!*cp && !(*cp = calloc(1, sizeof(**cp))))
        return *nomem = true, NULL;
    gpuprof__an_gcct *c = *cp;
    for (uint32_t i = 0; i < c->n; i++)
        if (!strcmp(c->bin[i].path, path))
            return c->bin[i].b ? &c->bin[i] : NULL;
    if (!GPUPROF_AN_GROW(c->bin, c->n, c->cap))
        return *nomem = true, NULL;
    gbin *g = &c->bin[c->n];
    *g = (gbin){strdup(path), NULL, NULL};
    if (!g->path)
        return *nomem = true, NULL;
    c->n++;
    size_t len = strlen(path);
    /* Only cubins are listed (an OpenCL binary is no CUDA ELF). */
    if (len < 6 || strcmp(path + len - 6, ".cubin"))
        return g->b = NULL, NULL;
    gpuprof_status st = gpuprof__sass_open(path, &g->b);
    if (st == GPUPROF_E_NOTFOUND)
        tell_no_nvdisasm(x, c, path);
    else if (st != GPUPROF_OK && st != GPUPROF_E_NOMEM && x->warn)
        tell_failed(x, path);
    if (st != GPUPROF_OK)
        return g->b = NULL, NULL;
    if (!(g->samples = calloc(g->b->ninsn + 1, sizeof(double)))) {
        gpuprof__sass_free(g->b);
        g->b = NULL;
        return *nomem = true, NULL;
    }
    return g;
}

void gpuprof__an_gcct_free(gpuprof__an_gcct *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n; i++) {
        free(c->bin[i].path);
        gpuprof__sass_free(c->bin[i].b);
        free(c->bin[i].samples);
    }
    free(c->bin);
    free(c);
}

/* ---- a thread's instructions by kernel ----------------------------------- */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

bool gpuprof__an_gcct_begin(gcct_thread *g, const gpuprof__io_profile *p,
                            const gpuprof__io_thread *th)
{
    *g = (gcct_thread){0};
    const gpuprof__io_node *nd = &p->nodes[th->first_node];
    uint32_t n = 0, cap = 0;
    for (uint32_t i = 1; i < th->node_count; i++) {
        if (nd[i].kind != GPUPROF_IO_NODE_GPU_INSTR ||
            nd[nd[i].parent].kind != GPUPROF_IO_NODE_KERNEL)
            continue;
        if (!GPUPROF_AN_GROW(g->pair, n, cap))
            return false;
        g->pair[n++] = (uint64_t)nd[i].parent << 32 | i;
    }
    if (!n)
        return true;
    qsort(g->pair, n, sizeof(*g->pair), cmp_u64);
    g->n = n;
    return (g->done = calloc(th->node_count, 1)) != NULL;
}

void gpuprof__an_gcct_end(gcct_thread *g)
{
    free(g->pair);
    free(g->done);
    *g = (gcct_thread){0};
}

/* ---- one kernel ---------------------------------------------------------- */
typedef struct kjob {
    an_structure *x;
    an_tree *t;
    const char *profile;
    const gpuprof__io_profile *p;
    const gpuprof__io_node *kernel;
    const char *kname;
    uint32_t kctx, module; /* the kernel's context, its binary's index */
    uint32_t mname;        /* strtab: the binary's path as the profile has it */
    gbin *gb;
    const gpuprof__sass_bin *b;
    uint32_t kf; /* the kernel's function */
    gpuprof__sass_cg *cg;
    sass_path *path;
    uint32_t npath;
    uint32_t *pctx;            /* per path: its function's context */
    uint32_t *by_scc, *scc_at; /* paths grouped by SCC: [scc_at[s], [s+1]) */
} kjob;

/* The loops holding instruction insn beneath `parent` (its function's
 * context), outermost first: LOOP contexts by the source line of their
 * header's first instruction (as nvdisasm lists it; two loops of one line
 * are one context, as two instructions of one line are). The innermost's
 * context; UINT32_MAX when out of memory. */
static uint32_t loops_ctx(const kjob *j, uint32_t parent, uint32_t insn)
{
    enum { MAX_DEPTH = 64 };
    const sass_insn *in = &j->b->insn[insn];
    const sass_func *f = &j->b->func[in->func];
    uint32_t chain[MAX_DEPTH], n = 0;
    for (uint32_t l = in->block != SASS_NONE ? f->blocks[in->block].loop
                                             : SASS_NONE;
         l != SASS_NONE && n < MAX_DEPTH; l = f->loops[l].parent)
        chain[n++] = l;
    while (n-- > 0 && parent != UINT32_MAX) {
        const sass_insn *h =
            &j->b->insn[f->blocks[f->loops[chain[n]].header].first];
        gctx k = {parent, DB_KIND_LOOP,
                  gpuprof__an_tree_intern(j->t, h->file ? h->file : ""),
                  j->mname, h->line};
        parent = gpuprof__an_tree_ctx(j->t, &k);
    }
    return parent;
}

/* The context of instruction insn beneath `parent` (its function's
 * context): its loops, then its lines (with inlined functions), or
 * itself by address without them. */
static uint32_t insn_ctx(const kjob *j, uint32_t parent, uint32_t insn)
{
    uint64_t offset = j->b->insn[insn].offset - j->b->func[j->kf].start;
    if ((parent = loops_ctx(j, parent, insn)) == UINT32_MAX)
        return UINT32_MAX;
    gpuprof__io_node nd = {
        .kind = GPUPROF_IO_NODE_GPU_INSTR, .key_a = j->module, .key_b = offset};
    gctx k = {parent, GPUPROF_IO_NODE_GPU_INSTR, j->mname, 0, offset};
    return gpuprof__an_instr_ctx(j->x, j->t, j->profile, j->p, j->kernel, &nd,
                                 &k);
}

/* Each SCC's first function (the name of a recursive SCC's context). */
static uint32_t scc_rep(const kjob *j, uint32_t scc)
{
    for (uint32_t f = 0; f < j->b->nfunc; f++)
        if (j->cg->scc[f] == scc)
            return f;
    return j->kf;
}

/* A device function's name without its kernel: `$kernel$name` is name. */
static const char *short_name(const char *sym)
{
    const char *d = strrchr(sym, '$');
    return d ? d + 1 : sym;
}

/* Path i's function context: beneath the line of its call site in its
 * parent's function. */
static uint32_t path_ctx(kjob *j, uint32_t i)
{
    const sass_path *pt = &j->path[i];
    if (pt->parent == SASS_NONE)
        return j->kctx;
    uint32_t line =
        insn_ctx(j, j->pctx[pt->parent], j->cg->site[pt->site].insn);
    if (line == UINT32_MAX)
        return UINT32_MAX;
    const char *fn = short_name(j->b->func[scc_rep(j, pt->scc)].name);
    gctx k = {line, DB_KIND_GPU_FUNCTION, gpuprof__an_tree_intern(j->t, fn),
              j->mname, gpuprof__sass_recursive(j->cg, pt->scc) ? 1u : 0u};
    return gpuprof__an_tree_ctx(j->t, &k);
}

/* The paths' contexts, and the paths grouped by SCC. */
static bool paths_ctx(kjob *j)
{
    uint32_t ns = j->cg->nscc;
    j->pctx = malloc((j->npath + 1) * sizeof(uint32_t));
    j->by_scc = malloc((j->npath + 1) * sizeof(uint32_t));
    j->scc_at = calloc(ns + 2, sizeof(uint32_t));
    if (!j->pctx || !j->by_scc || !j->scc_at)
        return false;
    for (uint32_t i = 0; i < j->npath; i++) {
        if ((j->pctx[i] = path_ctx(j, i)) == UINT32_MAX)
            return false;
        j->scc_at[j->path[i].scc + 1]++;
    }
    for (uint32_t s = 0; s < ns; s++)
        j->scc_at[s + 1] += j->scc_at[s];
    uint32_t *fill = malloc((ns + 1) * sizeof(uint32_t));
    if (!fill)
        return false;
    memcpy(fill, j->scc_at, (ns + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < j->npath; i++)
        j->by_scc[fill[j->path[i].scc]++] = i;
    free(fill);
    return true;
}

/* Appends a target to the split being made (one of ctx already there:
 * its share grows). */
static bool target_add(gsplits *sp, uint32_t head, uint32_t ctx, double w)
{
    for (uint32_t i = head + 1; i < sp->nt; i++)
        if (sp->t[i].ctx == ctx) {
            sp->t[i].w += w;
            return true;
        }
    if (!GPUPROF_AN_GROW(sp->t, sp->nt, sp->capt))
        return false;
    sp->t[sp->nt++] = (gsplit){ctx, w};
    sp->t[head].ctx++;
    return true;
}

/* Instruction node `node` (absolute; instruction insn of the listing): its
 * contexts, one per path of its function's SCC, the rest beneath the
 * kernel; *ctx the first. */
static bool insn_split(kjob *j, uint32_t node, uint32_t insn, uint32_t *ctx,
                       gsplits *sp, uint32_t nodes)
{
    uint32_t scc = j->cg->scc[j->b->insn[insn].func];
    if (!sp->at && !(sp->at = calloc(nodes, sizeof(uint32_t))))
        return false;
    if (!GPUPROF_AN_GROW(sp->t, sp->nt, sp->capt))
        return false;
    uint32_t head = sp->nt;
    sp->t[sp->nt++] = (gsplit){0, 0};
    double sum = 0;
    for (uint32_t k = j->scc_at[scc]; k < j->scc_at[scc + 1]; k++) {
        const sass_path *pt = &j->path[j->by_scc[k]];
        uint32_t c = insn_ctx(j, j->pctx[j->by_scc[k]], insn);
        if (c == UINT32_MAX || !target_add(sp, head, c, pt->share))
            return false;
        sum += pt->share;
    }
    if (sum < 1 - 1e-9) { /* callers no path reached: without a path */
        uint32_t c = insn_ctx(j, j->kctx, insn);
        if (c == UINT32_MAX || !target_add(sp, head, c, 1 - sum))
            return false;
    }
    *ctx = sp->t[head + 1].ctx;
    if (sp->t[head].ctx == 1) /* one context: no split */
        sp->nt = head;
    else
        sp->at[node] = head + 1;
    return true;
}

/* The samples metric's index in p; UINT32_MAX when it has none. */
static uint32_t samples_metric(const gpuprof__io_profile *p)
{
    for (uint32_t m = 0; m < p->metric_count; m++)
        if (!strcmp(gpuprof__io_str(p, p->metrics[m].name), "gpu.pc.samples"))
            return m;
    return UINT32_MAX;
}

static double node_value(const gpuprof__io_profile *p, uint32_t node,
                         uint32_t m)
{
    const gpuprof__io_node *nd = &p->nodes[node];
    for (uint32_t v = 0; v < nd->value_count; v++)
        if (p->values[nd->first_value + v].metric == m)
            return p->metrics[m].type == GPUPROF_IO_F64
                       ? 0 /* samples are counts */
                       : (double)p->values[nd->first_value + v].bits;
    return 0;
}

/* Samples filed after an EXIT, at the entry of a function that never ran
 * (an_sass_exit.c): the node is the EXIT's, its samples too. Only a
 * function's first instruction can be such a node, and moving it leaves
 * other functions' samples as they were. (Drain samples on the entry of a
 * function that did run stay: a node's values go together.) */
static void exits_own(const gpuprof__sass_bin *b, uint32_t *insn, uint32_t n,
                      double *samples)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t e = insn[k] == SASS_NONE
                         ? SASS_NONE
                         : gpuprof__sass_exit_owner(b, insn[k], samples, 0,
                                                    b->ninsn);
        if (e == SASS_NONE)
            continue;
        samples[e] += samples[insn[k]];
        samples[insn[k]] = 0;
        insn[k] = e;
    }
}

/* Group [lo, hi) of g: each instruction in the listing (insn[k], or
 * SASS_NONE), its samples into the listing's scratch array; the call graph
 * and the paths. GPUPROF_E_NOTFOUND: no samples metric (nothing to do). */
static gpuprof_status kernel_graph(kjob *j, const gcct_thread *g, uint32_t lo,
                                   uint32_t hi, uint32_t first, uint32_t *insn)
{
    gbin *gb = j->gb;
    uint32_t m = samples_metric(j->p);
    for (uint32_t k = lo; k < hi; k++) {
        uint32_t rel = (uint32_t)g->pair[k], node = first + rel;
        const gpuprof__io_node *nd = &j->p->nodes[node];
        insn[k - lo] = SASS_NONE;
        if (nd->key_a >= j->p->module_count ||
            strcmp(gpuprof__io_str(j->p, j->p->modules[nd->key_a].path),
                   gpuprof__io_str(j->p, j->p->modules[j->module].path)))
            continue; /* another binary than its kernel's */
        insn[k - lo] = gpuprof__sass_insn_at(j->b, j->kname, nd->key_b);
        if (insn[k - lo] != SASS_NONE && m != UINT32_MAX)
            gb->samples[insn[k - lo]] += node_value(j->p, node, m);
    }
    exits_own(j->b, insn, hi - lo, gb->samples);
    gpuprof_status st =
        m == UINT32_MAX
            ? GPUPROF_E_NOTFOUND
            : gpuprof__sass_cg_new(j->b, j->kname, gb->samples, &j->cg);
    for (uint32_t k = 0; k < hi - lo; k++) /* zero again for the next */
        if (insn[k] != SASS_NONE)
            gb->samples[insn[k]] = 0;
    if (st == GPUPROF_OK)
        st = gpuprof__sass_paths(j->cg, j->kf, MAX_PATHS, &j->path, &j->npath);
    return st;
}

static void kjob_free(kjob *j)
{
    gpuprof__sass_cg_free(j->cg);
    free(j->path);
    free(j->pctx);
    free(j->by_scc);
    free(j->scc_at);
}

/* The kernel's binary, listed; false (nothing to do) when there is none. */
static bool kernel_bin(kjob *j, bool *nomem)
{
    const gpuprof__io_profile *p = j->p;
    if (j->kernel->key_b >= p->module_count)
        return false;
    j->module = (uint32_t)j->kernel->key_b;
    const char *bin = gpuprof__io_str(p, p->modules[j->module].path);
    char path[4200];
    gpuprof__an_binary_path(j->profile, bin, path, sizeof(path));
    gbin *gb = bin_get(j->x, path, nomem);
    if (!gb)
        return false;
    j->gb = gb;
    j->b = gb->b;
    j->kname = gpuprof__io_str(p, j->kernel->key_a);
    j->kf = gpuprof__sass_func_find(j->b, j->kname);
    j->mname = gpuprof__an_tree_intern(j->t, bin);
    return j->kf != SASS_NONE;
}

gpuprof_status gpuprof__an_gcct_kernel(an_structure *x, an_tree *t,
                                       gcct_thread *g, const char *profile,
                                       const gpuprof__io_profile *p,
                                       const gpuprof__io_thread *th,
                                       uint32_t kn, uint32_t *ctx, gsplits *sp)
{
    uint32_t lo = 0, hi = g->n, first = th->first_node;
    while (lo < hi) { /* the group's start */
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->pair[mid] >> 32 < kn)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (hi = lo; hi < g->n && g->pair[hi] >> 32 == kn;)
        hi++;
    kjob j = {.x = x,
              .t = t,
              .profile = profile,
              .p = p,
              .kernel = &p->nodes[first + kn],
              .kctx = ctx[first + kn]};
    bool nomem = false;
    if (lo == hi || !kernel_bin(&j, &nomem))
        return nomem ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                     : GPUPROF_OK;
    uint32_t *insn = malloc((hi - lo) * sizeof(uint32_t));
    gpuprof_status st =
        insn ? kernel_graph(&j, g, lo, hi, first, insn) : GPUPROF_E_NOMEM;
    bool ok = st == GPUPROF_OK || st == GPUPROF_E_NOTFOUND;
    if (st == GPUPROF_OK) {
        t->structured = t->gcct = true;
        ok = paths_ctx(&j);
        for (uint32_t k = lo; ok && k < hi; k++) {
            uint32_t rel = (uint32_t)g->pair[k];
            if (insn[k - lo] == SASS_NONE)
                continue; /* unified alone, as without a listing */
            ok = insn_split(&j, first + rel, insn[k - lo], &ctx[first + rel],
                            sp, p->node_count);
            g->done[rel] = 1;
        }
    }
    free(insn);
    kjob_free(&j);
    return ok ? GPUPROF_OK : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

/* ---- the apportioned samples metric --------------------------------------- */
gpuprof_status gpuprof__an_gcct_metric(an_tree *t)
{
    uint32_t samples = UINT32_MAX;
    for (uint32_t m = 0; m < t->nm; m++) {
        const char *n = gpuprof__an_tree_metric_str(t, t->m[m].name);
        if (!strcmp(n, GCCT_APPORTIONED))
            return GPUPROF_OK; /* a profile has one: not ours to add */
        if (!strcmp(n, "gpu.pc.samples"))
            samples = m;
    }
    if (!t->gcct || samples == UINT32_MAX)
        return GPUPROF_OK;
    if (t->nm == MAX_BASE_METRICS || !GPUPROF_AN_GROW(t->m, t->nm, t->capm))
        return gpuprof__an_fail(GPUPROF_E_LIMIT,
                                "too many metrics (or out of memory)");
    t->m[t->nm] = (gmetric){
        gpuprof__an_tree_intern_metric(t, GCCT_APPORTIONED),
        gpuprof__an_tree_intern_metric(
            t, "PC samples of instructions that sit in several GPU calling "
               "contexts, as apportioned to this one (gprof's assumption: "
               "every call of a function costs the same); the rest of "
               "gpu.pc.samples was measured here alone"),
        GPUPROF_IO_UNIT_COUNT,
        GPUPROF_IO_SUM,
        GPUPROF_IO_KIND_INSTR,
        GPUPROF_IO_U64,
        0,
        0,
        0,
        0};
    t->apportioned = ++t->nm;
    t->apportioned_of = samples;
    return t->nomem ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                    : GPUPROF_OK;
}

/* ---- pass 2: the values -------------------------------------------------- */
typedef struct frac {
    double f;
    uint32_t i;
} frac;

static int by_frac(const void *a, const void *b)
{
    const frac *x = a, *y = b;
    if (x->f != y->f)
        return x->f > y->f ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

void gpuprof__an_gcct_apportion(double v, bool sums, const gsplit *t,
                                uint32_t n, double *out)
{
    double w = 0;
    for (uint32_t i = 0; i < n; i++)
        w += t[i].w;
    if (!sums || w <= 0) {
        for (uint32_t i = 0; i < n; i++)
            out[i] = sums && i ? 0 : v;
        return;
    }
    if (v != floor(v) || fabs(v) >= 9007199254740992.0) {
        double left = v;
        for (uint32_t i = 0; i + 1 < n; i++)
            left -= (out[i] = v * t[i].w / w);
        out[n - 1] = left;
        return;
    }
    enum { SMALL = 16 };
    frac small[SMALL], *fr = n <= SMALL ? small : malloc(n * sizeof(*fr));
    double left = v;
    for (uint32_t i = 0; i < n; i++) {
        double exact = v * t[i].w / w;
        out[i] = floor(exact);
        left -= out[i];
        if (fr)
            fr[i] = (frac){exact - out[i], i};
    }
    if (fr) /* the largest remainders take what the floors left */
        qsort(fr, n, sizeof(*fr), by_frac);
    for (uint32_t k = 0; left >= 1 && n; k = (k + 1) % n, left -= 1)
        out[fr ? fr[k].i : k] += 1;
    if (fr != small)
        free(fr);
}

void gpuprof__an_gcct_remap(gsplits *sp, const uint32_t *map)
{
    for (uint32_t i = 0; i < sp->nt;) {
        uint32_t n = sp->t[i].ctx;
        for (uint32_t k = 1; k <= n; k++)
            sp->t[i + k].ctx = map[sp->t[i + k].ctx];
        i += n + 1;
    }
}

uint64_t gpuprof__an_gcct_bytes(const gsplits *sp, uint32_t nodes)
{
    return (sp->at ? (uint64_t)nodes * sizeof(uint32_t) : 0) +
           (uint64_t)sp->capt * sizeof(gsplit);
}

void gpuprof__an_gcct_splits_free(gsplits *sp)
{
    free(sp->at);
    free(sp->t);
    *sp = (gsplits){0};
}
