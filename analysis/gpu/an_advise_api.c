/*
 * an_advise_api.c - gpuprof_an_db_advise and its accessors
 * (include/gpuprof_analysis.h), and the text report `gpuprof advise`
 * prints: per kernel its samples, its best suggestions with estimated
 * speedups, hints and hotspots, then its GPU calling contexts.
 *
 * Each cubin is listed once by nvdisasm (an_sass_parse.c) however many
 * kernels it holds; one that cannot be listed leaves its kernels with
 * kernel-level advice and the note says why once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_advise.h"
#include "../base/an_internal.h"

typedef struct listing {
    char *path;
    gpuprof__sass_bin *bin; /* NULL: could not be listed */
} listing;

static void note(gpuprof_an_advice *a, const char *what)
{
    size_t l = strlen(a->note);
    if (strstr(a->note, what))
        return;
    snprintf(a->note + l, sizeof(a->note) - l, "%s%s", l ? "; " : "", what);
}

/* The listing of `path`, made on first use. */
static const gpuprof__sass_bin *bin_of(gpuprof_an_advice *a, listing **ls,
                                       uint32_t *n, const char *path)
{
    for (uint32_t i = 0; i < *n; i++)
        if (!strcmp((*ls)[i].path, path))
            return (*ls)[i].bin;
    listing *nl = realloc(*ls, (*n + 1) * sizeof(*nl));
    if (!nl)
        return NULL;
    *ls = nl;
    listing *l = &nl[(*n)++];
    l->bin = NULL;
    l->path = strdup(path);
    if (gpuprof__sass_open(path, &l->bin) != GPUPROF_OK) {
        char msg[900];
        snprintf(msg, sizeof(msg), "%s: advice per kernel only (no blame, "
                 "loops or calling contexts)", gpuprof_an_last_error());
        note(a, msg);
    }
    return l->bin;
}

static int by_samples(const void *x, const void *y)
{
    const adv_kernel *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Gathers nothing, analyzes what `a` holds: shared by the database
 * entry point and the tests' one-profile entry point. */
gpuprof_status gpuprof__adv_analyze(gpuprof_an_advice *a)
{
    gpuprof__adv_sampled_only(a);
    if (!a->nk)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "no kernel has PC samples "
                                "(GPUPROF_CUPTI_PC_SAMPLING)");
    listing *ls = NULL;
    uint32_t nl = 0;
    gpuprof__an_cubin *lines = NULL;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = 0; st == GPUPROF_OK && k < a->nk; k++) {
        const gpuprof__sass_bin *bin = bin_of(a, &ls, &nl, a->k[k].binary);
        st = gpuprof__adv_kernel(&a->k[k], bin, &lines);
        if (st == GPUPROF_OK && bin && !a->k[k].instruction_level)
            note(a, "some samples lie outside the listed code: those "
                    "kernels get advice per kernel only");
    }
    for (uint32_t i = 0; i < nl; i++) {
        gpuprof__sass_free(ls[i].bin);
        free(ls[i].path);
    }
    free(ls);
    gpuprof__an_cubin_free(lines);
    if (st == GPUPROF_OK)
        qsort(a->k, a->nk, sizeof(*a->k), by_samples);
    return st;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_advise(const gpuprof_an_db *db,
                                                   uint32_t flags,
                                                   gpuprof_an_advice **out)
{
    if (!db || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_db_advise: invalid arguments");
    *out = NULL;
    gpuprof_an_advice *a = calloc(1, sizeof(*a));
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    gpuprof_status st = gpuprof__adv_gather(db, a);
    if (st == GPUPROF_OK)
        st = gpuprof__adv_analyze(a);
    if (st != GPUPROF_OK) {
        gpuprof_an_advice_free(a);
        return st;
    }
    *out = a;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_advice_free(gpuprof_an_advice *a)
{
    if (!a)
        return;
    for (uint32_t k = 0; k < a->nk; k++) {
        gpuprof__adv_kernel_clear(&a->k[k]);
        free(a->k[k].name);
        free(a->k[k].binary);
        free(a->k[k].pc);
    }
    free(a->k);
    free(a->rank);
    free(a);
}

/* ---- accessors ------------------------------------------------------------ */
static const adv_kernel *K(const gpuprof_an_advice *a, uint32_t k)
{
    return a && k < a->nk ? &a->k[k] : NULL;
}

static const adv_sugg *S(const gpuprof_an_advice *a, uint32_t k, uint32_t s)
{
    const adv_kernel *x = K(a, k);
    return x && s < x->nsugg ? &x->sugg[s] : NULL;
}

static const adv_hot *H(const gpuprof_an_advice *a, uint32_t k, uint32_t s,
                        uint32_t h)
{
    const adv_sugg *x = S(a, k, s);
    return x && h < x->nhot ? &x->hot[h] : NULL;
}

static const adv_ctx *C(const gpuprof_an_advice *a, uint32_t k, uint32_t c)
{
    const adv_kernel *x = K(a, k);
    return x && c < x->nctx ? &x->ctx[c] : NULL;
}

GPUPROF_AN_API const char *gpuprof_an_advice_note(const gpuprof_an_advice *a)
{
    return a ? a->note : "";
}
GPUPROF_AN_API uint32_t gpuprof_an_advice_kernel_count(const gpuprof_an_advice *a)
{
    return a ? a->nk : 0;
}
GPUPROF_AN_API const char *gpuprof_an_advice_kernel_name(const gpuprof_an_advice *a,
                                                         uint32_t k)
{
    return K(a, k) ? K(a, k)->name : NULL;
}
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_binary(const gpuprof_an_advice *a, uint32_t k)
{
    return K(a, k) ? K(a, k)->binary : NULL;
}
GPUPROF_AN_API double gpuprof_an_advice_kernel_samples(const gpuprof_an_advice *a,
                                                       uint32_t k)
{
    return K(a, k) ? K(a, k)->total : 0;
}
GPUPROF_AN_API int gpuprof_an_advice_kernel_detailed(const gpuprof_an_advice *a,
                                                     uint32_t k)
{
    return K(a, k) ? K(a, k)->instruction_level : 0;
}
GPUPROF_AN_API uint32_t gpuprof_an_advice_count(const gpuprof_an_advice *a,
                                                uint32_t k)
{
    return K(a, k) ? K(a, k)->nsugg : 0;
}
GPUPROF_AN_API const char *gpuprof_an_advice_name(const gpuprof_an_advice *a,
                                                  uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->name : NULL;
}
GPUPROF_AN_API const char *gpuprof_an_advice_kind(const gpuprof_an_advice *a,
                                                  uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->kind : NULL;
}
GPUPROF_AN_API double gpuprof_an_advice_speedup(const gpuprof_an_advice *a,
                                                uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->speedup : 0;
}
GPUPROF_AN_API double gpuprof_an_advice_matched(const gpuprof_an_advice *a,
                                                uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->matched : 0;
}
GPUPROF_AN_API const char *gpuprof_an_advice_hint(const gpuprof_an_advice *a,
                                                  uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->hint : NULL;
}
GPUPROF_AN_API double gpuprof_an_advice_support(const gpuprof_an_advice *a,
                                                uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->support : 0;
}
GPUPROF_AN_API int gpuprof_an_advice_confident(const gpuprof_an_advice *a,
                                               uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->support >= ADV_MIN_SAMPLES : 0;
}
GPUPROF_AN_API double gpuprof_an_advice_run_gain(const gpuprof_an_advice *a,
                                                 uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->run_gain : NAN;
}
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_note(const gpuprof_an_advice *a, uint32_t k)
{
    return K(a, k) ? K(a, k)->note ? K(a, k)->note : "" : NULL;
}
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_limit(const gpuprof_an_advice *a, uint32_t k)
{
    return K(a, k) ? gpuprof__adv_limit_name[K(a, k)->occ_limit] : NULL;
}

/* The numbers gpuprof_an_advice_kernel_value names. */
static double kernel_value(const adv_kernel *x, const char *what)
{
    const adv_launch *l = &x->launch;
    double n = l->launches > 0 ? l->launches : NAN;
    struct {
        const char *name;
        double v;
    } t[] = {
        {"samples", x->total},
        {"latency_samples", x->latency},
        {"after_exit_samples", x->after_exit},
        {"launches", l->launches},
        {"blocks", l->block > 0 ? round(l->threads / l->block) : NAN},
        {"threads_per_block", round(l->block / n)},
        {"registers", round(l->registers / n)},
        {"shared_bytes", round(l->shared / n)},
        {"sm_count", x->dev.known ? x->dev.sms : NAN},
        {"warps_per_sm", x->occ_warps},
        {"max_warps_per_sm", x->occ_max},
        {"sms_busy", x->sms_busy},
        {"path_share", x->path_share},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(t[i].name, what))
            return t[i].v;
    return NAN;
}

GPUPROF_AN_API double gpuprof_an_advice_kernel_value(const gpuprof_an_advice *a,
                                                     uint32_t k,
                                                     const char *what)
{
    return K(a, k) && what ? kernel_value(K(a, k), what) : NAN;
}

GPUPROF_AN_API uint32_t gpuprof_an_advice_hotspot_count(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s)
{
    return S(a, k, s) ? S(a, k, s)->nhot : 0;
}
GPUPROF_AN_API uint64_t gpuprof_an_advice_hotspot_offset(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->offset : 0;
}
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_source(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->where : NULL;
}
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_loop(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->loop : NULL;
}
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_function(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->function : NULL;
}
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_instruction(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->insn : NULL;
}
GPUPROF_AN_API double gpuprof_an_advice_hotspot_samples(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h)
{
    return H(a, k, s, h) ? H(a, k, s, h)->samples : 0;
}
GPUPROF_AN_API uint32_t
gpuprof_an_advice_context_count(const gpuprof_an_advice *a, uint32_t k)
{
    return K(a, k) ? K(a, k)->nctx : 0;
}
GPUPROF_AN_API uint32_t gpuprof_an_advice_context_parent(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c)
{
    return C(a, k, c) ? C(a, k, c)->parent : UINT32_MAX;
}
GPUPROF_AN_API const char *gpuprof_an_advice_context_name(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c)
{
    return C(a, k, c) ? C(a, k, c)->name : NULL;
}
GPUPROF_AN_API double gpuprof_an_advice_context_samples(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c)
{
    return C(a, k, c) ? C(a, k, c)->samples : 0;
}
GPUPROF_AN_API int gpuprof_an_advice_context_recursive(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c)
{
    return C(a, k, c) ? C(a, k, c)->recursive : 0;
}

/* ---- the report --------------------------------------------------------- */
static void print_contexts(FILE *out, const adv_kernel *k)
{
    if (!k->nctx)
        return;
    fprintf(out, "  GPU calling contexts (samples apportioned to call sites):\n");
    for (uint32_t c = 0; c < k->nctx; c++) {
        unsigned depth = 0;
        for (uint32_t p = k->ctx[c].parent; p != UINT32_MAX; p = k->ctx[p].parent)
            depth++;
        fprintf(out, "    %*s%s%s  %.0f (%.1f%%)\n", 2 * depth, "",
                k->ctx[c].name, k->ctx[c].recursive ? " [recursive]" : "",
                k->ctx[c].samples,
                k->total > 0 ? 100.0 * k->ctx[c].samples / k->total : 0);
    }
}

/* "  N. NAME: estimated speedup ..." and what the run would gain. */
static void print_sugg(FILE *out, const adv_kernel *k, const adv_sugg *x,
                       uint32_t n)
{
    fprintf(out, "  %u. %s: estimated speedup %.2fx (%s", n, x->name,
            x->speedup, x->kind);
    if (x->matched > 0)
        fprintf(out, ", %.0f samples, %.1f%%", x->matched,
                k->total > 0 ? 100.0 * x->matched / k->total : 0);
    fprintf(out, ")%s\n", x->support < ADV_MIN_SAMPLES
                              ? " [low support: the estimate rests on fewer "
                                "than 10 samples]"
                              : "");
    if (!isnan(x->run_gain))
        fprintf(out, "     kernel ~ %.2fx -> run -%.1f%% (kernel on the "
                     "critical path: %.1f%%)\n",
                x->speedup, 100.0 * x->run_gain,
                isnan(k->path_share) ? 0 : 100.0 * k->path_share);
    fprintf(out, "     %s\n", x->hint);
    for (uint32_t h = 0; h < x->nhot; h++)
        fprintf(out, "     at %s in %s%s%s: +0x%llx %s (%.0f)\n",
                x->hot[h].where, x->hot[h].function,
                x->hot[h].loop[0] ? ", " : "", x->hot[h].loop,
                (unsigned long long)x->hot[h].offset, x->hot[h].insn,
                x->hot[h].samples);
}

static void print_kernel(FILE *out, const adv_kernel *k, uint32_t top)
{
    char *dm = gpuprof__an_demangle(k->name);
    fprintf(out, "kernel %s [%s]\n", dm ? dm : k->name, k->binary);
    free(dm);
    fprintf(out, "  %.0f PC samples, %.1f%% with no warp issuing%s\n", k->total,
            k->total > 0 ? 100.0 * k->latency / k->total : 0,
            k->instruction_level ? "" : " (advice per kernel: stall reasons only)");
    for (const char *p = k->note; p && *p;) { /* one sentence a line */
        const char *e = strstr(p, "; ");
        int len = e ? (int)(e - p) : (int)strlen(p);
        fprintf(out, "  note: %.*s\n", len, p);
        p = e ? e + 2 : NULL;
    }
    uint32_t n = top && top < k->nsugg ? top : k->nsugg;
    if (!n)
        fprintf(out, "  no suggestion\n");
    for (uint32_t s = 0; s < n; s++)
        print_sugg(out, k, &k->sugg[s], s + 1);
    print_contexts(out, k);
}

/* The whole-program ranking (gpuprof_an_advice_project), or what ranks
 * the suggestions without one. */
static void print_ranking(FILE *out, const gpuprof_an_advice *a, uint32_t top)
{
    if (!a->rank) {
        fprintf(out, "ranking: per kernel, by estimated speedup (kernels by "
                     "samples); a trace (GPUPROF_TRACE=1) ranks them by what "
                     "the whole run would gain\n\n");
        return;
    }
    fprintf(out, "ranking by projected gain of the whole run (the trace's "
                 "critical path replayed with each kernel faster):\n");
    uint32_t n = top && top < a->nrank ? top : a->nrank;
    for (uint32_t i = 0; i < n; i++) {
        const adv_kernel *k = &a->k[a->rank[i].k];
        const adv_sugg *x = &k->sugg[a->rank[i].s];
        char *dm = gpuprof__an_demangle(k->name);
        fprintf(out, "  %u. kernel %s: %s, kernel ~ %.2fx -> run -%.1f%% (on "
                     "the critical path %.1f%%)%s\n",
                i + 1, dm ? dm : k->name, x->name, x->speedup,
                isnan(x->run_gain) ? 0 : 100.0 * x->run_gain,
                isnan(k->path_share) ? 0 : 100.0 * k->path_share,
                x->support < ADV_MIN_SAMPLES ? " [low support]" : "");
        free(dm);
    }
    fputc('\n', out);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_advice_print(
    const gpuprof_an_advice *a, FILE *out, uint32_t top, uint32_t flags)
{
    if (!a || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_advice_print: invalid arguments");
    if (a->note[0])
        fprintf(out, "note: %s\n", a->note);
    print_ranking(out, a, top);
    for (uint32_t k = 0; k < a->nk; k++) {
        if (k)
            fputc('\n', out);
        print_kernel(out, &a->k[k], top);
    }
    if (fflush(out) != 0 || ferror(out))
        return gpuprof__an_fail(GPUPROF_E_IO, "advice: write failed");
    return GPUPROF_OK;
}
