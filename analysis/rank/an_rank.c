/*
 * an_rank.c - the GPU advice ranked by what the whole run would gain
 * (gpuprof_an_advice_project, include/gpuprof_analysis.h): each
 * suggestion's kernel speedup is fed to the projection of the traced run
 * (gpuprof_an_cpath_project: the run replayed with that kernel's device
 * work that many times faster, seed 004 §5), and the suggestions of every
 * kernel are ranked together by the share of the run they would save. A
 * kernel 3x faster that never lies on the critical path saves nothing; a
 * 1.1x on the kernel the run waits for most may save a tenth.
 *
 * Its own room (analysis/README.md): gpu/ (the advice) and cpath/ (the
 * projection) are siblings that never call each other; this module joins
 * them from above, through the advice's structures and the projection's
 * public API only, and the command (cli/) calls it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "../gpu/an_advise.h"

/* The kernel's contexts' names in db, distinct ("kernel NAME [binary]":
 * one per binary the kernel came from); how many, at most `max`. */
static uint32_t kernel_names(const gpuprof_an_db *db, const char *sym,
                             const char **out, uint32_t max)
{
    uint32_t n = 0, nc = gpuprof_an_db_context_count(db);
    for (uint32_t c = 0; c < nc && n < max; c++) {
        const char *raw = gpuprof__an_db_context_raw(db, c);
        if (gpuprof_an_db_context_kind(db, c) != GPUPROF_AN_NODE_KERNEL ||
            !raw || strcmp(raw, sym))
            continue;
        const char *name = gpuprof_an_db_context_name(db, c);
        uint32_t k = 0;
        while (k < n && strcmp(out[k], name))
            k++;
        if (k == n)
            out[n++] = name;
    }
    return n;
}

/* The share of the critical path (all processes) that is device work of
 * a kernel named `names` (a launch of several kernels, a graph's, is
 * none's); the paths' total length in *len. */
static double path_share(const gpuprof_an_cpath *cp, const char *const *names,
                         uint32_t n, double *len)
{
    gpuprof_an_path_step st[256];
    char buf[4400];
    double mine = 0;
    *len = 0;
    for (uint32_t i = 0; i < gpuprof_an_cpath_process_count(cp); i++) {
        *len += (double)gpuprof_an_cpath_length(cp, i);
        uint64_t got;
        for (uint64_t first = 0;
             (got = gpuprof_an_cpath_steps(cp, i, first, st, 256)) > 0;
             first += got)
            for (uint64_t s = 0; s < got; s++) {
                if (st[s].kind != GPUPROF_AN_ACTIVITY_GPU)
                    continue;
                gpuprof_an_cpath_step_name(cp, &st[s], buf, sizeof(buf));
                for (uint32_t k = 0; k < n; k++)
                    if (!strcmp(buf, names[k])) {
                        mine += (double)st[s].path_ns;
                        break;
                    }
            }
    }
    return *len > 0 ? mine / *len : 0;
}

static double run_ns(const gpuprof_an_cpath *cp)
{
    double t = 0;
    for (uint32_t i = 0; i < gpuprof_an_cpath_process_count(cp); i++)
        t += (double)gpuprof_an_cpath_run_ns(cp, i);
    return t;
}

/* The run with the kernels `names` `factor` times faster (a projection
 * rule "kernel:NAME=F" each, NAME as the database shows it): the share of
 * `measured` ns saved in *gain. */
static gpuprof_status project_one(const gpuprof_an_cpath *cp,
                                  const char *const *names, uint32_t n,
                                  double factor, double measured, double *gain)
{
    char text[8][4400];
    const char *rules[8];
    for (uint32_t k = 0; k < n; k++) {
        const char *nm = names[k] + (strncmp(names[k], "kernel ", 7) ? 0 : 7);
        const char *br = strrchr(nm, '[');
        int len = br && br > nm + 1 && br[-1] == ' ' ? (int)(br - 1 - nm)
                                                     : (int)strlen(nm);
        snprintf(text[k], sizeof(text[k]), "kernel:%.*s=%.17g", len, nm,
                 factor);
        rules[k] = text[k];
    }
    gpuprof_an_cpath *proj = NULL;
    gpuprof_status st = gpuprof_an_cpath_project(cp, rules, n, NULL, &proj);
    *gain = st == GPUPROF_OK && measured > 0
                ? (measured - run_ns(proj)) / measured
                : NAN;
    gpuprof_an_cpath_free(proj);
    return st;
}

/* What a suggestion ranks by, beside its place. */
typedef struct keyed {
    adv_rank r;
    bool confident;
    double gain, speedup;
} keyed;

/* Confident suggestions first; among them the best projected gain (an
 * unprojected one, NAN, after), then the estimated speedup. */
static int by_gain(const void *x, const void *y)
{
    const keyed *p = x, *q = y;
    if (p->confident != q->confident)
        return p->confident ? -1 : 1;
    if (isnan(p->gain) != isnan(q->gain))
        return isnan(p->gain) ? 1 : -1;
    if (!isnan(p->gain) && p->gain != q->gain)
        return p->gain > q->gain ? -1 : 1;
    if (p->speedup != q->speedup)
        return p->speedup > q->speedup ? -1 : 1;
    if (p->r.k != q->r.k)
        return p->r.k < q->r.k ? -1 : 1;
    return (p->r.s > q->r.s) - (p->r.s < q->r.s);
}

static void rank_sort(gpuprof_an_advice *a)
{
    keyed *t = malloc((a->nrank ? a->nrank : 1) * sizeof(*t));
    if (!t)
        return; /* kernel order then: still a ranking */
    for (uint32_t i = 0; i < a->nrank; i++) {
        const adv_sugg *x = &a->k[a->rank[i].k].sugg[a->rank[i].s];
        t[i] = (keyed){a->rank[i], x->support >= ADV_MIN_SAMPLES, x->run_gain,
                       x->speedup};
    }
    qsort(t, a->nrank, sizeof(*t), by_gain);
    for (uint32_t i = 0; i < a->nrank; i++)
        a->rank[i] = t[i].r;
    free(t);
}

/* Kernel k's `top` best suggestions projected; into a->rank. */
static gpuprof_status project_kernel(gpuprof_an_advice *a, uint32_t k,
                                     const gpuprof_an_db *db,
                                     const gpuprof_an_cpath *cp, uint32_t top,
                                     double measured)
{
    adv_kernel *x = &a->k[k];
    const char *names[8];
    uint32_t n = kernel_names(db, x->name, names, 8), m = x->nsugg;
    double len;
    x->path_share = n ? path_share(cp, names, n, &len) : 0;
    if (top && top < m)
        m = top;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t s = 0; s < m && st == GPUPROF_OK; s++) {
        x->sugg[s].run_gain = 0; /* a kernel the trace never ran */
        if (n)
            st = project_one(cp, names, n, x->sugg[s].speedup, measured,
                             &x->sugg[s].run_gain);
        a->rank[a->nrank++] = (adv_rank){k, s};
    }
    return st;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_advice_project(gpuprof_an_advice *a, const gpuprof_an_db *db,
                          const gpuprof_an_cpath *cp, uint32_t top,
                          uint32_t flags)
{
    if (!a || !db || !cp || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_advice_project: invalid arguments");
    uint32_t total = 0;
    for (uint32_t k = 0; k < a->nk; k++)
        total += top && top < a->k[k].nsugg ? top : a->k[k].nsugg;
    free(a->rank);
    a->nrank = 0;
    a->rank = malloc((total ? total : 1) * sizeof(*a->rank));
    gpuprof_status st = a->rank ? GPUPROF_OK : GPUPROF_E_NOMEM;
    double measured = run_ns(cp);
    for (uint32_t k = 0; k < a->nk && st == GPUPROF_OK; k++)
        st = project_kernel(a, k, db, cp, top, measured);
    if (st != GPUPROF_OK) {
        free(a->rank);
        a->rank = NULL;
        a->nrank = 0;
        return st == GPUPROF_E_NOMEM ? gpuprof__an_fail(st, "out of memory")
                                     : st;
    }
    rank_sort(a);
    return GPUPROF_OK;
}

GPUPROF_AN_API int gpuprof_an_advice_ranked(const gpuprof_an_advice *a,
                                            uint32_t i, uint32_t *k,
                                            uint32_t *s)
{
    if (!a || !a->rank || i >= a->nrank)
        return 0;
    if (k)
        *k = a->rank[i].k;
    if (s)
        *s = a->rank[i].s;
    return 1;
}
