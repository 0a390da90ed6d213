/*
 * an_sass_cg.c - GPU calling contexts reconstructed from a kernel's code
 * and its PC samples (seed 000 §6.3, seed 001): PC samples carry no call
 * stack, so the tree beneath a kernel is rebuilt in four steps:
 *
 *   1. the static call graph of the kernel's section from its CALL
 *      instructions, each call site weighted by the samples of its CALL;
 *   2. a function with samples whose incoming call sites all weigh 0 gets
 *      weight 1 on each of them, and so on up through its callers, until
 *      every function with samples (or sampled callees) is reached;
 *   3. Tarjan's strongly connected components: recursion (fib calling
 *      itself, or a cycle through several functions) becomes one node,
 *      the calls inside it dropped;
 *   4. the condensed graph split into a tree gprof-style: every call of a
 *      function is assumed to cost the same, so a function's samples go
 *      to its call sites in proportion to their weights, and whatever it
 *      calls follows that share down.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

#define MAX_CCT 100000 /* nodes per kernel: a DAG splits exponentially */

static bool same_section(const gpuprof__sass_bin *b, uint32_t f,
                         const char *kernel_section)
{
    return !strcmp(b->func[f].section, kernel_section);
}

static gpuprof_status sites(const gpuprof__sass_bin *b, const char *section,
                            const double *samples, gpuprof__sass_cg *cg)
{
    for (uint32_t f = 0; f < b->nfunc; f++) {
        if (!same_section(b, f, section))
            continue;
        const sass_func *fn = &b->func[f];
        for (uint32_t i = fn->first; i < fn->first + fn->count; i++) {
            const sass_insn *in = &b->insn[i];
            if (in->cls != SC_CALL || in->block == SASS_NONE)
                continue;
            sass_callsite *ns =
                realloc(cg->site, (cg->nsite + 1) * sizeof(*ns));
            if (!ns)
                return GPUPROF_E_NOMEM;
            cg->site = ns;
            uint32_t callee = SASS_NONE;
            for (uint32_t g = 0; g < b->nfunc && in->target != SASS_NONE; g++)
                if (same_section(b, g, section) && b->func[g].count &&
                    b->func[g].start == in->target)
                    callee = g;
            ns[cg->nsite++] =
                (sass_callsite){i, f, callee, samples ? samples[i] : 0};
        }
    }
    return GPUPROF_OK;
}

/* Step 2: functions with samples (or sampled callees) reached. */
static void propagate(const gpuprof__sass_bin *b, gpuprof__sass_cg *cg,
                      const double *samples)
{
    if (!samples)
        return;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t f = 0; f < b->nfunc; f++) {
            if (b->func[f].kernel)
                continue;
            bool live = false, reached = false, called = false;
            for (uint32_t i = b->func[f].first;
                 i < b->func[f].first + b->func[f].count && !live; i++)
                live = samples[i] > 0;
            for (uint32_t s = 0; s < cg->nsite; s++) {
                if (cg->site[s].caller == f && cg->site[s].weight > 0)
                    live = true;
                if (cg->site[s].callee == f) {
                    called = true;
                    reached |= cg->site[s].weight > 0;
                }
            }
            for (uint32_t s = 0; live && called && !reached && s < cg->nsite;
                 s++)
                if (cg->site[s].callee == f) {
                    cg->site[s].weight = 1;
                    changed = true;
                }
        }
    }
}

/* ---- Tarjan --------------------------------------------------------------- */
typedef struct tarjan {
    const gpuprof__sass_cg *cg;
    uint32_t *index, *low, *stack, sp, next;
    uint8_t *on;
    uint32_t *scc, nscc;
} tarjan;

static void strongconnect(tarjan *t, uint32_t v)
{
    t->index[v] = t->low[v] = t->next++;
    t->stack[t->sp++] = v;
    t->on[v] = 1;
    for (uint32_t s = 0; s < t->cg->nsite; s++) {
        if (t->cg->site[s].caller != v || t->cg->site[s].callee == SASS_NONE)
            continue;
        uint32_t w = t->cg->site[s].callee;
        if (t->index[w] == SASS_NONE) {
            strongconnect(t, w);
            t->low[v] = t->low[w] < t->low[v] ? t->low[w] : t->low[v];
        } else if (t->on[w] && t->index[w] < t->low[v]) {
            t->low[v] = t->index[w];
        }
    }
    if (t->low[v] != t->index[v])
        return;
    uint32_t w;
    do {
        w = t->stack[--t->sp];
        t->on[w] = 0;
        t->scc[w] = t->nscc;
    } while (w != v);
    t->nscc++;
}

static gpuprof_status sccs(const gpuprof__sass_bin *b, gpuprof__sass_cg *cg)
{
    uint32_t n = b->nfunc;
    tarjan t = {.cg = cg};
    t.index = malloc(n * sizeof(uint32_t));
    t.low = malloc(n * sizeof(uint32_t));
    t.stack = malloc(n * sizeof(uint32_t));
    t.on = calloc(n, 1);
    cg->scc = malloc(n * sizeof(uint32_t));
    t.scc = cg->scc;
    gpuprof_status st = GPUPROF_E_NOMEM;
    if (t.index && t.low && t.stack && t.on && t.scc) {
        memset(t.index, 0xff, n * sizeof(uint32_t));
        for (uint32_t v = 0; v < n; v++)
            if (t.index[v] == SASS_NONE)
                strongconnect(&t, v);
        cg->nscc = t.nscc;
        cg->scc_size = calloc(t.nscc + 1, sizeof(uint32_t));
        if (cg->scc_size) {
            for (uint32_t v = 0; v < n; v++)
                cg->scc_size[cg->scc[v]]++;
            st = GPUPROF_OK;
        }
    }
    free(t.index), free(t.low), free(t.stack), free(t.on);
    return st;
}

gpuprof_status gpuprof__sass_cg_new(const gpuprof__sass_bin *b,
                                    const char *kernel, const double *samples,
                                    gpuprof__sass_cg **out)
{
    *out = NULL;
    uint32_t k = gpuprof__sass_func_find(b, kernel);
    if (k == SASS_NONE)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "kernel %s is not in the GPU binary", kernel);
    gpuprof__sass_cg *cg = calloc(1, sizeof(*cg));
    gpuprof_status st = cg ? sites(b, b->func[k].section, samples, cg)
                           : GPUPROF_E_NOMEM;
    if (st == GPUPROF_OK) {
        propagate(b, cg, samples);
        st = sccs(b, cg);
    }
    if (st != GPUPROF_OK) {
        gpuprof__sass_cg_free(cg);
        return gpuprof__an_fail(st, "out of memory");
    }
    *out = cg;
    return GPUPROF_OK;
}

void gpuprof__sass_cg_free(gpuprof__sass_cg *cg)
{
    if (!cg)
        return;
    free(cg->site);
    free(cg->scc);
    free(cg->scc_size);
    free(cg);
}

/* ---- the tree --------------------------------------------------------------- */
typedef struct builder {
    const gpuprof__sass_bin *b;
    const gpuprof__sass_cg *cg;
    double *scc_samples, *in_weight; /* per SCC */
    uint32_t *rep;                   /* per SCC: its first function */
    sass_cct *node;
    uint32_t n, cap;
} builder;

static bool recursive(const builder *t, uint32_t scc)
{
    if (t->cg->scc_size[scc] > 1)
        return true;
    for (uint32_t s = 0; s < t->cg->nsite; s++)
        if (t->cg->site[s].callee != SASS_NONE &&
            t->cg->scc[t->cg->site[s].caller] == scc &&
            t->cg->scc[t->cg->site[s].callee] == scc)
            return true;
    return false;
}

/* The SCC site s calls from SCC `from` (SASS_NONE: another caller, an
 * unresolved callee or a call inside the SCC). */
static uint32_t callee_scc(const builder *t, uint32_t from, uint32_t s)
{
    const sass_callsite *cs = &t->cg->site[s];
    if (cs->callee == SASS_NONE || t->cg->scc[cs->caller] != from ||
        t->cg->scc[cs->callee] == from)
        return SASS_NONE;
    return t->cg->scc[cs->callee];
}

static bool add_node(builder *t, uint32_t parent, uint32_t scc, uint32_t site,
                     double share)
{
    if (t->n == MAX_CCT)
        return true; /* the rest stays with the parent */
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 16;
        sass_cct *nn = realloc(t->node, nc * sizeof(*nn));
        if (!nn)
            return false;
        t->node = nn;
        t->cap = nc;
    }
    uint32_t me = t->n++;
    t->node[me] = (sass_cct){parent, t->rep[scc], site, recursive(t, scc),
                             share * t->scc_samples[scc], 0};
    /* one child per callee (its sites from here summed), in site order */
    for (uint32_t s = 0; s < t->cg->nsite; s++) {
        uint32_t to = callee_scc(t, scc, s);
        if (to == SASS_NONE || t->in_weight[to] <= 0)
            continue;
        double w = 0;
        bool first = true;
        for (uint32_t o = 0; o < t->cg->nsite; o++)
            if (callee_scc(t, scc, o) == to) {
                first &= o >= s;
                w += t->cg->site[o].weight;
            }
        if (first && !add_node(t, me, to, s, share * w / t->in_weight[to]))
            return false;
    }
    return true;
}

gpuprof_status gpuprof__sass_cct(const gpuprof__sass_bin *b,
                                 const gpuprof__sass_cg *cg, uint32_t kernel,
                                 const double *fsamples, sass_cct **out,
                                 uint32_t *n)
{
    builder t = {.b = b, .cg = cg};
    *out = NULL;
    *n = 0;
    t.scc_samples = calloc(cg->nscc + 1, sizeof(double));
    t.in_weight = calloc(cg->nscc + 1, sizeof(double));
    t.rep = malloc((cg->nscc + 1) * sizeof(uint32_t));
    bool ok = t.scc_samples && t.in_weight && t.rep;
    for (uint32_t f = b->nfunc; ok && f-- > 0;) {
        t.scc_samples[cg->scc[f]] += fsamples ? fsamples[f] : 0;
        t.rep[cg->scc[f]] = f;
    }
    for (uint32_t s = 0; ok && s < cg->nsite; s++)
        if (cg->site[s].callee != SASS_NONE &&
            cg->scc[cg->site[s].caller] != cg->scc[cg->site[s].callee])
            t.in_weight[cg->scc[cg->site[s].callee]] += cg->site[s].weight;
    ok = ok && add_node(&t, SASS_NONE, cg->scc[kernel], SASS_NONE, 1.0);
    for (uint32_t i = t.n; ok && i-- > 0;) { /* children after parents */
        t.node[i].total += t.node[i].self;
        if (t.node[i].parent != SASS_NONE)
            t.node[t.node[i].parent].total += t.node[i].total;
    }
    free(t.scc_samples), free(t.in_weight), free(t.rep);
    if (!ok) {
        free(t.node);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    *out = t.node;
    *n = t.n;
    return GPUPROF_OK;
}

/* ---- the tree by call site (the database's, agg/an_gcct.c) --------------
 * As gpuprof__sass_cct, but one child per call site rather than per
 * callee (a function called from two lines is two contexts, as a CPU
 * function is), and each node keeps its share: the fraction of its SCC's
 * samples that are its own, the product of site weight over the callee's
 * incoming weight along its path. The shares of an SCC's nodes add up to
 * 1 when every caller is reached, less otherwise (the rest stays with the
 * kernel). */
typedef struct pbuild {
    const gpuprof__sass_cg *cg;
    double *in_weight; /* per SCC, from other SCCs */
    sass_path *node;
    uint32_t n, cap, max;
} pbuild;

static bool path_add(pbuild *t, uint32_t parent, uint32_t scc, uint32_t site,
                     double share)
{
    if (t->n == t->max)
        return true; /* the rest stays with the kernel */
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 16;
        sass_path *nn = realloc(t->node, nc * sizeof(*nn));
        if (!nn)
            return false;
        t->node = nn;
        t->cap = nc;
    }
    uint32_t me = t->n++;
    t->node[me] = (sass_path){parent, scc, site, share};
    for (uint32_t s = 0; s < t->cg->nsite; s++) {
        const sass_callsite *cs = &t->cg->site[s];
        if (cs->callee == SASS_NONE || t->cg->scc[cs->caller] != scc ||
            t->cg->scc[cs->callee] == scc || cs->weight <= 0)
            continue;
        uint32_t to = t->cg->scc[cs->callee];
        if (!path_add(t, me, to, s, share * cs->weight / t->in_weight[to]))
            return false;
    }
    return true;
}

gpuprof_status gpuprof__sass_paths(const gpuprof__sass_cg *cg, uint32_t kernel,
                                   uint32_t max, sass_path **out, uint32_t *n)
{
    pbuild t = {.cg = cg, .max = max ? max : 1};
    *out = NULL;
    *n = 0;
    t.in_weight = calloc(cg->nscc + 1, sizeof(double));
    bool ok = t.in_weight != NULL;
    for (uint32_t s = 0; ok && s < cg->nsite; s++)
        if (cg->site[s].callee != SASS_NONE &&
            cg->scc[cg->site[s].caller] != cg->scc[cg->site[s].callee])
            t.in_weight[cg->scc[cg->site[s].callee]] += cg->site[s].weight;
    ok = ok && path_add(&t, SASS_NONE, cg->scc[kernel], SASS_NONE, 1.0);
    free(t.in_weight);
    if (!ok) {
        free(t.node);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    *out = t.node;
    *n = t.n;
    return GPUPROF_OK;
}

bool gpuprof__sass_recursive(const gpuprof__sass_cg *cg, uint32_t scc)
{
    if (cg->scc_size[scc] > 1)
        return true;
    for (uint32_t s = 0; s < cg->nsite; s++)
        if (cg->site[s].callee != SASS_NONE &&
            cg->scc[cg->site[s].caller] == scc &&
            cg->scc[cg->site[s].callee] == scc)
            return true;
    return false;
}
