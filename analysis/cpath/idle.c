/*
 * idle.c - GPU idleness blame (seed 000 §7.2; cpath.h): while no GPU
 * stream of the process runs anything and at least one of its CPU threads
 * is active (between its first and last record), that time is shared
 * equally among the active threads, and each thread's share goes to what
 * it ran then (CPU work in a region, or a GPU API call). A process without
 * device work blames nothing.
 */
#include <stdlib.h>

#include "../base/an_internal.h"
#include "cpath.h"

typedef struct span {
    uint64_t s, e;
} span;

static int by_s(const void *x, const void *y)
{
    const span *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

static int by_u64(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return (*a > *b) - (*a < *b);
}

typedef struct idle_ctx {
    const cp_graph *g;
    double *blame;
    uint64_t *cut;
} idle_ctx;

/* Lane li's share of [x, y), to what it ran then. */
static void charge(const idle_ctx *c, uint32_t li, uint64_t x, uint64_t y,
                   double share)
{
    const cp_lane *l = &c->g->lane[li];
    const cp_act *a = c->g->act;
    uint32_t lo = l->first, hi = l->first + l->n; /* first ending after x */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid].end <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo; i < l->first + l->n && a[i].start < y; i++) {
        uint64_t s = a[i].start > x ? a[i].start : x;
        uint64_t e = a[i].end < y ? a[i].end : y;
        if (e > s)
            c->blame[i] += (double)(e - s) * share;
    }
}

static bool active(const cp_graph *g, uint32_t li, uint64_t x, uint64_t y)
{
    const cp_lane *l = &g->lane[li];
    return !l->gpu && l->n && g->act[l->first].start <= x &&
           g->act[l->first + l->n - 1].end >= y;
}

/* One idle interval [a, b): pieces between the threads' starts and ends. */
static void idle_span(const idle_ctx *c, uint64_t a, uint64_t b)
{
    const cp_graph *g = c->g;
    uint32_t n = 0;
    c->cut[n++] = a;
    c->cut[n++] = b;
    for (uint32_t li = 0; li < g->nlane; li++) {
        const cp_lane *l = &g->lane[li];
        if (l->gpu || !l->n)
            continue;
        uint64_t lo = g->act[l->first].start, hi = g->act[l->first + l->n - 1].end;
        if (lo > a && lo < b)
            c->cut[n++] = lo;
        if (hi > a && hi < b)
            c->cut[n++] = hi;
    }
    qsort(c->cut, n, sizeof(*c->cut), by_u64);
    for (uint32_t k = 0; k + 1 < n; k++) {
        uint64_t x = c->cut[k], y = c->cut[k + 1];
        if (y <= x)
            continue;
        uint32_t na = 0;
        for (uint32_t li = 0; li < g->nlane; li++)
            na += active(g, li, x, y);
        for (uint32_t li = 0; na && li < g->nlane; li++)
            if (active(g, li, x, y))
                charge(c, li, x, y, 1.0 / na);
    }
}

gpuprof_status cp_idle(const cp_graph *g, double *blame)
{
    for (uint32_t i = 0; i < g->nact; i++)
        blame[i] = 0;
    uint64_t ng = 0, lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < g->nact; i++) {
        ng += g->act[i].kind == CP_GPU;
        lo = g->act[i].start < lo ? g->act[i].start : lo;
        hi = g->act[i].end > hi ? g->act[i].end : hi;
    }
    if (!ng)
        return GPUPROF_OK;
    span *busy = malloc(ng * sizeof(*busy));
    idle_ctx c = {g, blame, malloc((2 * (size_t)g->nlane + 2) * sizeof(uint64_t))};
    if (!busy || !c.cut) {
        free(busy);
        free(c.cut);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    uint64_t m = 0;
    for (uint32_t i = 0; i < g->nact; i++)
        if (g->act[i].kind == CP_GPU)
            busy[m++] = (span){g->act[i].start, g->act[i].end};
    qsort(busy, m, sizeof(*busy), by_s);
    uint64_t t = lo; /* the end of the busy time so far */
    for (uint64_t i = 0; i < m; i++) {
        if (busy[i].s > t)
            idle_span(&c, t, busy[i].s);
        t = busy[i].e > t ? busy[i].e : t;
    }
    if (hi > t)
        idle_span(&c, t, hi);
    free(busy);
    free(c.cut);
    return GPUPROF_OK;
}
