/*
 * an_advise.c - GPA's optimizers and speedup estimators (seed 003 §3.3,
 * §3.4, Table 2) over one kernel's blamed PC samples.
 *
 * Each optimizer matches the samples its optimization could remove: a
 * rule over the instruction a stall is blamed on (an_blame.c: its class,
 * its function, its loop) and the stall's reason. Stall elimination
 * optimizers estimate equation (3), S = T / (T - M): T the kernel's
 * samples, M the matched ones. Latency hiding ones remove only latency
 * samples and are bounded by the active samples that could fill the gap:
 * equation (5), S = T / (T - min(A, M_L)), kernel-wide for code
 * reordering, and equation (6) per loop for unrolling (A and M_L of the
 * loop and the loops nested in it; the best loop is the suggestion). The
 * backend records which samples had no warp issuing per instruction, not
 * per reason, so M_L is M times the kernel's latency share.
 *
 * The rules themselves are in an_advise_rules.c, the parallelism
 * optimizers (from launches and the device) in an_advise_par.c. Without
 * nvdisasm, the stall reasons that name their cause give coarse
 * kernel-level suggestions; the others are said, not advised on. An
 * estimate resting on fewer than ADV_MIN_SAMPLES samples comes after the
 * confident ones, marked.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_advise.h"
#include "../base/an_internal.h"

/* ---- hotspots ------------------------------------------------------------ */
static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "?";
}

/* A function's readable name: a device function `$kernel$name` is name. */
static char *func_name(const char *sym)
{
    const char *d = strrchr(sym, '$');
    const char *s = d ? d + 1 : sym;
    char *dm = gpuprof__an_demangle(s);
    return dm ? dm : strdup(s);
}

static char *where(const adv_kernel *k, const sass_insn *in,
                   gpuprof__an_cubin **lines)
{
    gpuprof__an_srclevel lv[16];
    uint32_t n = lines ? gpuprof__an_cubin_lookup(lines, k->binary, k->name,
                                                  in->offset, lv, 16)
                       : 0;
    char buf[1024];
    if (n > 1) {
        char *fn = func_name(lv[n - 1].function);
        snprintf(buf, sizeof(buf), "%s:%u [inlined %s]",
                 base_name(lv[n - 1].file), lv[n - 1].line, fn ? fn : "?");
        free(fn);
    } else if (n == 1) {
        snprintf(buf, sizeof(buf), "%s:%u", base_name(lv[0].file), lv[0].line);
    } else if (in->line) {
        snprintf(buf, sizeof(buf), "%s:%u", base_name(in->file), in->line);
    } else {
        snprintf(buf, sizeof(buf), "%s+0x%x", k->name, in->offset);
    }
    return strdup(buf);
}

static char *loop_of(const gpuprof__sass_bin *b, const sass_insn *in)
{
    if (in->block == SASS_NONE)
        return strdup("");
    const sass_func *f = &b->func[in->func];
    uint32_t l = f->blocks[in->block].loop;
    if (l == SASS_NONE)
        return strdup("");
    const sass_insn *h = &b->insn[f->blocks[f->loops[l].header].first];
    char buf[512];
    if (h->line)
        snprintf(buf, sizeof(buf), "loop at %s:%u", base_name(h->file), h->line);
    else
        snprintf(buf, sizeof(buf), "loop at +0x%x", h->offset);
    return strdup(buf);
}

/* The (up to) three instructions with most matched samples; `in_loop`
 * limits them to a loop (function f, loop l). */
static void hotspots(const adv_ctx_t *c, const adv_kernel *k, const adv_optimizer *o,
                     adv_sugg *s, gpuprof__an_cubin **lines,
                     const sass_loop *in_loop, uint32_t lf)
{
    uint32_t best[3] = {SASS_NONE, SASS_NONE, SASS_NONE};
    double bv[3] = {0, 0, 0};
    for (uint32_t x = 0; x < c->bl->n; x++) {
        const sass_insn *in = INSN(c, x);
        if (in_loop && (in->func != lf || in->block == SASS_NONE ||
                        !in_loop->in[in->block]))
            continue;
        double v = o->match(c, x);
        for (int j = 0; j < 3; j++)
            if (v > bv[j]) {
                for (int m = 2; m > j; m--)
                    bv[m] = bv[m - 1], best[m] = best[m - 1];
                bv[j] = v, best[j] = x;
                break;
            }
    }
    for (int j = 0; j < 3 && best[j] != SASS_NONE; j++) {
        const sass_insn *in = INSN(c, best[j]);
        adv_hot *h = &s->hot[s->nhot++];
        h->offset = in->offset;
        h->samples = bv[j];
        h->where = where(k, in, lines);
        h->loop = loop_of(c->b, in);
        h->function = func_name(c->b->func[in->func].name);
        h->insn = strdup(in->text);
    }
}

/* ---- estimators (equations 3, 5, 6) -------------------------------------- */
static double eliminate(double t, double m)
{
    return m <= 0 || t <= 0 ? 1.0 : t / (t - (m < t * 0.999 ? m : t * 0.999));
}

static double hide(double t, double active, double ml)
{
    double x = active < ml ? active : ml;
    return eliminate(t, x);
}

/* Equation (6): the best loop of the section; *lf, *ll say which. */
static double best_loop(const adv_ctx_t *c, const adv_optimizer *o, double *matched,
                        uint32_t *lf, uint32_t *ll)
{
    double best = 1.0, t = c->bl->total;
    *lf = *ll = SASS_NONE;
    for (uint32_t x = 0; x < c->bl->n; x++) {
        const sass_insn *in = INSN(c, x);
        if (x && INSN(c, x - 1)->func == in->func)
            continue; /* once per function */
        const sass_func *f = &c->b->func[in->func];
        for (uint32_t l = 0; l < f->nloops; l++) {
            double a = 0, m = 0;
            for (uint32_t i = f->first; i < f->first + f->count; i++) {
                const sass_insn *y = &c->b->insn[i];
                if (y->block == SASS_NONE || !f->loops[l].in[y->block])
                    continue;
                uint32_t yx = i - c->bl->first;
                double all = 0;
                for (unsigned r = 0; r < SR_COUNT; r++)
                    all += STALL(c, yx, r);
                a += all - c->bl->lat[yx] > 0 ? all - c->bl->lat[yx] : 0;
                m += o->match(c, yx);
            }
            double s = hide(t, a, m * c->latfrac);
            if (s > best) {
                best = s;
                *matched = m;
                *lf = in->func;
                *ll = l;
            }
        }
    }
    return best;
}

bool gpuprof__adv_add(adv_kernel *k, adv_sugg *s)
{
    adv_sugg *ns = realloc(k->sugg, (k->nsugg + 1) * sizeof(*ns));
    if (!ns) {
        free(s->hint);
        return false;
    }
    k->sugg = ns;
    ns[k->nsugg++] = *s;
    return true;
}

bool gpuprof__adv_note(adv_kernel *k, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    size_t have = k->note ? strlen(k->note) : 0;
    char *n = realloc(k->note, have + strlen(buf) + 3);
    if (!n)
        return false;
    snprintf(n + have, strlen(buf) + 3, "%s%s", have ? "; " : "", buf);
    k->note = n;
    return true;
}

static char *loop_hint(const adv_ctx_t *c, const adv_optimizer *o, uint32_t lf,
                       uint32_t ll)
{
    const sass_func *f = &c->b->func[lf];
    char buf[1024], *lp = loop_of(c->b, &c->b->insn[f->blocks[f->loops[ll].header].first]);
    snprintf(buf, sizeof(buf), "%s (%s)", o->hint, lp ? lp : "");
    free(lp);
    return strdup(buf);
}

/* The hint, completed for recursion: an SCC cannot be inlined. */
static char *inline_hint(const adv_ctx_t *c, const adv_optimizer *o,
                         const gpuprof__sass_cg *cg)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", o->hint);
    for (uint32_t f = 0; cg && f < c->b->nfunc; f++) {
        bool self = false;
        for (uint32_t s = 0; s < cg->nsite; s++)
            self |= cg->site[s].caller == f && cg->site[s].callee == f;
        if (!self && cg->scc_size[cg->scc[f]] < 2)
            continue;
        char *n = func_name(c->b->func[f].name);
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof(buf) - l,
                 "; %s is recursive and cannot be inlined: make it iterative "
                 "(an explicit stack) to remove its frames",
                 n ? n : "?");
        free(n);
        break;
    }
    return strdup(buf);
}

static gpuprof_status suggest(const adv_ctx_t *c, adv_kernel *k,
                              const gpuprof__sass_cg *cg,
                              gpuprof__an_cubin **lines)
{
    double t = c->bl->total, active = t - c->bl->latency;
    for (size_t i = 0; i < gpuprof__adv_nopt; i++) {
        const adv_optimizer *o = &gpuprof__adv_opt[i];
        adv_sugg s = {.name = o->name, .run_gain = NAN};
        uint32_t lf = SASS_NONE, ll = SASS_NONE;
        for (uint32_t x = 0; x < c->bl->n && o->est != HIDE_LOOP; x++)
            s.matched += o->match(c, x);
        s.kind = o->est == ELIM ? "stall elimination" : "latency hiding";
        s.speedup = o->est == ELIM ? eliminate(t, s.matched)
                    : o->est == HIDE
                        ? hide(t, active, s.matched * c->latfrac)
                        : best_loop(c, o, &s.matched, &lf, &ll);
        if (s.matched <= 0 || s.speedup <= 1.0)
            continue;
        s.hint = lf != SASS_NONE ? loop_hint(c, o, lf, ll)
                 : o->calls ? inline_hint(c, o, cg)
                                        : strdup(o->hint);
        s.support = s.matched;
        hotspots(c, k, o, &s, lines,
                 lf != SASS_NONE ? &c->b->func[lf].loops[ll] : NULL, lf);
        if (!s.hint || !gpuprof__adv_add(k, &s))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    return GPUPROF_OK;
}

/* ---- without the code: stall reasons of the kernel ------------------------
 * Only the reasons that name their cause whatever the instruction: a
 * barrier, a branch, instruction fetch, latency. Short scoreboard and MIO
 * (shared memory, or MUFU, S2R, constant loads), LG and texture throttle
 * (global, or local memory: spills) and math pipe throttle (which pipe?)
 * need the instruction that stalled: without it they are said, not
 * advised on. */
typedef struct coarse {
    const char *name;
    adv_estimator est;
    unsigned r[2];
} coarse;

static const coarse COARSE[] = {
    {"Warp Balance", ELIM, {SR_BARRIER, SR_COUNT}},
    {"Divergence Reduction", ELIM, {SR_BRANCH_RESOLVING, SR_COUNT}},
    {"Function Split", ELIM, {SR_NO_INST, SR_COUNT}},
    {"Code Reordering", HIDE, {SR_LONG_SB, SR_WAIT}},
};

static const sass_reason NEEDS_CODE[] = {SR_SHORT_SB, SR_MIO, SR_LG_THROTTLE,
                                         SR_TEX, SR_MATH};

/* The samples whose optimization depends on the instruction, said. */
static bool unread(adv_kernel *k)
{
    double v[sizeof(NEEDS_CODE) / sizeof(NEEDS_CODE[0])] = {0}, all = 0;
    char buf[512] = "";
    for (uint32_t p = 0; p < k->npc; p++)
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
            v[i] += k->pc[p].v[NEEDS_CODE[i]];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        size_t l = strlen(buf);
        all += v[i];
        if (v[i] > 0)
            snprintf(buf + l, sizeof(buf) - l, "%s%s %.0f", l ? ", " : "",
                     gpuprof__sass_reason_name[NEEDS_CODE[i]], v[i]);
    }
    if (all <= 0)
        return true;
    return gpuprof__adv_note(
        k,
        "%.1f%% of the samples stalled for reasons whose optimization "
        "depends on the instruction (%s): without the kernel's code "
        "(nvdisasm) they are not advised on",
        k->total > 0 ? 100.0 * all / k->total : 0, buf);
}

static gpuprof_status kernel_level(adv_kernel *k)
{
    double t = k->total, active = t - k->latency;
    for (size_t i = 0; i < sizeof(COARSE) / sizeof(COARSE[0]); i++) {
        adv_sugg s = {.name = COARSE[i].name, .run_gain = NAN};
        for (uint32_t p = 0; p < k->npc; p++)
            for (int j = 0; j < 2; j++)
                if (COARSE[i].r[j] < SR_COUNT)
                    s.matched += k->pc[p].v[COARSE[i].r[j]];
        s.kind = COARSE[i].est == ELIM ? "stall elimination" : "latency hiding";
        s.speedup = COARSE[i].est == ELIM
                        ? eliminate(t, s.matched)
                        : hide(t, active, t > 0 ? s.matched * k->latency / t : 0);
        s.support = s.matched;
        if (s.matched <= 0 || s.speedup <= 1.0)
            continue;
        for (size_t o = 0; o < gpuprof__adv_nopt; o++)
            if (!strcmp(gpuprof__adv_opt[o].name, s.name))
                s.hint = strdup(gpuprof__adv_opt[o].hint);
        if (!s.hint || !gpuprof__adv_add(k, &s))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    return unread(k) ? GPUPROF_OK
                     : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

/* ---- calling contexts --------------------------------------------------- */
static gpuprof_status contexts(const gpuprof__sass_bin *b, adv_kernel *k,
                               const gpuprof__blame *bl, gpuprof__sass_cg **cgp)
{
    double *per_insn = calloc(b->ninsn + 1, sizeof(double)),
           *per_func = calloc(b->nfunc + 1, sizeof(double));
    gpuprof_status st = per_insn && per_func ? GPUPROF_OK : GPUPROF_E_NOMEM;
    for (uint32_t x = 0; st == GPUPROF_OK && x < bl->n; x++)
        for (unsigned r = 0; r < SR_COUNT; r++) {
            per_insn[bl->first + x] += STALL_OF(bl, x, r);
            per_func[b->insn[bl->first + x].func] += STALL_OF(bl, x, r);
        }
    gpuprof__sass_cg *cg = NULL;
    sass_cct *t = NULL;
    uint32_t n = 0;
    if (st == GPUPROF_OK)
        st = gpuprof__sass_cg_new(b, k->name, per_insn, &cg);
    if (st == GPUPROF_OK && cg->nsite)
        st = gpuprof__sass_cct(b, cg, gpuprof__sass_func_find(b, k->name),
                               per_func, &t, &n);
    if (st == GPUPROF_OK && n && !(k->ctx = calloc(n, sizeof(*k->ctx))))
        st = GPUPROF_E_NOMEM;
    for (uint32_t i = 0; st == GPUPROF_OK && i < n; i++, k->nctx++) {
        k->ctx[i] = (adv_ctx){t[i].parent, func_name(b->func[t[i].func].name),
                              t[i].total, t[i].scc};
        if (!k->ctx[i].name)
            st = GPUPROF_E_NOMEM;
    }
    free(t), free(per_insn), free(per_func);
    *cgp = cg;
    return st == GPUPROF_OK ? st : gpuprof__an_fail(st, "out of memory");
}

/* Confident suggestions first (ADV_MIN_SAMPLES), then by speedup. */
static int by_speedup(const void *a, const void *b)
{
    const adv_sugg *x = a, *y = b;
    bool cx = x->support >= ADV_MIN_SAMPLES, cy = y->support >= ADV_MIN_SAMPLES;
    if (cx != cy)
        return cx ? -1 : 1;
    return x->speedup > y->speedup ? -1 : x->speedup < y->speedup;
}

/* Moves instruction x's samples (all, or its drain stalls) to the EXIT e
 * (both in the section); the samples moved. */
static double to_exit(gpuprof__blame *bl, uint32_t x, uint32_t e, bool all)
{
    double moved = 0;
    for (unsigned r = 0; r < SR_COUNT; r++) {
        if (!all && r != SR_DRAIN)
            continue;
        double v = bl->stall[(size_t)x * SR_COUNT + r];
        bl->stall[(size_t)e * SR_COUNT + r] += v;
        bl->stall[(size_t)x * SR_COUNT + r] = 0;
        moved += v;
    }
    double lat = all ? bl->lat[x] : moved < bl->lat[x] ? moved : bl->lat[x];
    bl->lat[e] += lat;
    bl->lat[x] -= lat;
    return moved;
}

/* Samples filed after an EXIT are the EXIT's (an_sass_exit.c): every one
 * of a never-run function's entry, the drain stalls elsewhere. Decided on
 * the samples as placed. */
static gpuprof_status exits(const gpuprof__sass_bin *b, adv_kernel *k,
                            gpuprof__blame *bl)
{
    double *tot = calloc(bl->n + 1, sizeof(double));
    if (!tot)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t x = 0; x < bl->n; x++)
        for (unsigned r = 0; r < SR_COUNT; r++)
            tot[x] += bl->stall[(size_t)x * SR_COUNT + r];
    for (uint32_t x = 0; x < bl->n; x++) {
        uint32_t i = bl->first + x, e;
        if (tot[x] <= 0 || (e = gpuprof__sass_exit_before(b, i)) == SASS_NONE ||
            e < bl->first)
            continue;
        bool all = gpuprof__sass_exit_owner(b, i, tot, bl->first, bl->n) == e;
        k->after_exit += to_exit(bl, x, e - bl->first, all);
    }
    free(tot);
    return GPUPROF_OK;
}

/* The kernel's samples onto its instructions; offsets that are none
 * (another build of the cubin, a bad offset) count for the kernel only. */
static void place(const gpuprof__sass_bin *b, adv_kernel *k, gpuprof__blame *bl)
{
    for (uint32_t p = 0; p < k->npc; p++) {
        const adv_pc *pc = &k->pc[p];
        uint32_t i = pc->offset < UINT32_MAX
                         ? gpuprof__sass_insn_at(b, k->name, (uint32_t)pc->offset)
                         : SASS_NONE;
        if (i == SASS_NONE || i < bl->first || i >= bl->first + bl->n) {
            k->unmapped += pc->samples;
            continue;
        }
        for (unsigned r = 0; r < SR_COUNT; r++)
            bl->stall[(size_t)(i - bl->first) * SR_COUNT + r] += pc->v[r];
        bl->lat[i - bl->first] += pc->latency;
    }
}

gpuprof_status gpuprof__adv_kernel(adv_kernel *k, const gpuprof__sass_bin *bin,
                                   gpuprof__an_cubin **lines)
{
    k->total = k->latency = k->unmapped = k->after_exit = 0;
    k->path_share = NAN;
    for (uint32_t p = 0; p < k->npc; p++) {
        k->total += k->pc[p].samples;
        k->latency += k->pc[p].latency;
    }
    gpuprof__blame *bl = NULL;
    gpuprof_status st = bin ? gpuprof__blame_new(bin, k->name, &bl)
                            : GPUPROF_E_NOTFOUND;
    if (st == GPUPROF_OK) {
        place(bin, k, bl);
        st = exits(bin, k, bl);
    }
    if (st == GPUPROF_OK)
        st = gpuprof__blame_run(bin, bl);
    if (st == GPUPROF_OK && bl->total > 0 && k->unmapped < k->total * 0.5) {
        adv_ctx_t c = {.b = bin, .bl = bl, .flag = calloc(bl->n + 1, 1),
                  .latfrac = bl->total > 0 ? bl->latency / bl->total : 0};
        gpuprof__sass_cg *cg = NULL;
        st = c.flag ? gpuprof__adv_flags(&c) : GPUPROF_E_NOMEM;
        if (st == GPUPROF_OK)
            st = contexts(bin, k, bl, &cg);
        if (st == GPUPROF_OK)
            st = suggest(&c, k, cg, lines);
        k->instruction_level = st == GPUPROF_OK;
        gpuprof__sass_cg_free(cg);
        free(c.flag);
    } else if (st != GPUPROF_E_NOMEM) {
        st = kernel_level(k);
    }
    gpuprof__blame_free(bl);
    if (st == GPUPROF_OK)
        st = gpuprof__adv_parallelism(k);
    if (st == GPUPROF_OK && k->after_exit > 0 &&
        !gpuprof__adv_note(k, "%.0f samples filed just after an EXIT are "
                              "the EXIT's (warps that had exited)",
                           k->after_exit))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK && k->nsugg > 1)
        qsort(k->sugg, k->nsugg, sizeof(*k->sugg), by_speedup);
    return st;
}

void gpuprof__adv_kernel_clear(adv_kernel *k)
{
    for (uint32_t s = 0; s < k->nsugg; s++) {
        free(k->sugg[s].hint);
        for (uint32_t h = 0; h < k->sugg[s].nhot; h++) {
            adv_hot *x = &k->sugg[s].hot[h];
            free(x->where), free(x->loop), free(x->function), free(x->insn);
        }
    }
    free(k->sugg);
    for (uint32_t c = 0; c < k->nctx; c++)
        free(k->ctx[c].name);
    free(k->ctx);
    free(k->note);
    k->note = NULL;
    k->sugg = NULL;
    k->ctx = NULL;
    k->nsugg = k->nctx = 0;
    k->instruction_level = false;
}
