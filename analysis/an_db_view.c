/*
 * an_db_view.c - text out of an analysis database: the top-down view of
 * one metric (contexts with their inclusive and exclusive sums over
 * profiles and shares of the whole) and folded stacks for flame graphs
 * (flamegraph.pl, speedscope, inferno): one line per context with a
 * non-zero exclusive sum, its path from the root joined by ';', a space and
 * the value. Folded lines re-sum to the root's inclusive sum.
 */
#define _GNU_SOURCE /* qsort_r */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

/* Children lists of the context tree, largest inclusive sum first. */
typedef struct tree {
    uint32_t *first, *next; /* per context: first child, next sibling */
    double *incl, *excl;
} tree;

static int by_incl_desc(const void *x, const void *y, void *arg)
{
    const double *incl = arg;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    if (incl[a] != incl[b])
        return incl[a] > incl[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static gpuprof_status tree_build(const gpuprof_an_db *db, uint32_t mi,
                                 uint32_t me, tree *t)
{
    uint32_t n = gpuprof_an_db_context_count(db);
    t->first = malloc(n * sizeof(*t->first));
    t->next = malloc(n * sizeof(*t->next));
    t->incl = malloc(n * sizeof(*t->incl));
    t->excl = malloc(n * sizeof(*t->excl));
    uint32_t *kids = malloc(n * sizeof(*kids));
    if (!t->first || !t->next || !t->incl || !t->excl || !kids) {
        free(kids);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t c = 0; c < n; c++) {
        t->first[c] = t->next[c] = UINT32_MAX;
        t->incl[c] = gpuprof_an_db_stat(db, c, mi, GPUPROF_AN_STAT_SUM);
        t->excl[c] = gpuprof_an_db_stat(db, c, me, GPUPROF_AN_STAT_SUM);
    }
    /* Contexts sorted by inclusive sum (stable by id), then linked to their
     * parents back to front: each list comes out largest first. */
    for (uint32_t c = 0; c < n; c++)
        kids[c] = c;
    qsort_r(kids, n, sizeof(*kids), by_incl_desc, t->incl);
    for (uint32_t i = n; i-- > 0;) {
        uint32_t c = kids[i], p = gpuprof_an_db_context_parent(db, c);
        if (p == UINT32_MAX)
            continue;
        t->next[c] = t->first[p];
        t->first[p] = c;
    }
    free(kids);
    return GPUPROF_OK;
}

static void tree_free(tree *t)
{
    free(t->first);
    free(t->next);
    free(t->incl);
    free(t->excl);
}

static gpuprof_status metric_pair(const gpuprof_an_db *db, const char *name,
                                  uint32_t *mi, uint32_t *me)
{
    if (!db || !name)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    gpuprof_status st =
        gpuprof_an_db_metric_find(db, name, GPUPROF_AN_INCLUSIVE, mi);
    return st ? st
              : gpuprof_an_db_metric_find(db, name, GPUPROF_AN_EXCLUSIVE, me);
}

static void fmt_value(char *buf, size_t n, double v, gpuprof_an_unit u)
{
    if (u == GPUPROF_AN_UNIT_NS)
        gpuprof__an_fmt_ns(buf, n, (uint64_t)llround(v));
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%.4g", v);
}

static void print_node(const gpuprof_an_db *db, const tree *t, FILE *out,
                       uint32_t c, unsigned depth, double total,
                       double min_share, gpuprof_an_unit u)
{
    for (uint32_t k = t->first[c]; k != UINT32_MAX; k = t->next[k]) {
        double share = total > 0 ? t->incl[k] / total : 0;
        if (t->incl[k] == 0 || share < min_share)
            continue; /* the rest are smaller still */
        char a[64], b[64];
        fmt_value(a, sizeof(a), t->incl[k], u);
        fmt_value(b, sizeof(b), t->excl[k], u);
        fprintf(out, "%14s %6.2f%% %14s  %*s%s\n", a, 100 * share, b,
                (int)(2 * depth), "", gpuprof_an_db_context_name(db, k));
        print_node(db, t, out, k, depth + 1, total, min_share, u);
    }
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_topdown(
    const gpuprof_an_db *db, FILE *out, const char *metric, double min_share,
    uint32_t flags)
{
    uint32_t mi, me;
    if (!out || flags || min_share < 0 || min_share > 1)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    gpuprof_status st = metric_pair(db, metric, &mi, &me);
    tree t = {0};
    if (st == GPUPROF_OK)
        st = tree_build(db, mi, me, &t);
    if (st != GPUPROF_OK) {
        tree_free(&t);
        return st;
    }
    gpuprof_an_unit u = gpuprof_an_db_metric_unit(db, mi);
    char total[64];
    fmt_value(total, sizeof(total), t.incl[0], u);
    fprintf(out, "%s over %u profiles: %s (inclusive, share, exclusive; "
            "contexts under %.2f%% left out)\n", metric,
            gpuprof_an_db_profile_count(db), total, 100 * min_share);
    print_node(db, &t, out, 0, 0, t.incl[0], min_share, u);
    tree_free(&t);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

/* The path of c into buf, names joined by ';' (a ';' or newline inside a
 * name becomes ':' / ' ', which folded stacks cannot carry). */
static size_t folded_path(const gpuprof_an_db *db, uint32_t c, char *buf,
                          size_t size)
{
    uint32_t p = gpuprof_an_db_context_parent(db, c);
    size_t n = p == UINT32_MAX || p == 0 ? 0 : folded_path(db, p, buf, size);
    if (n && n + 1 < size)
        buf[n++] = ';';
    for (const char *s = gpuprof_an_db_context_name(db, c); *s && n + 1 < size;
         s++)
        buf[n++] = *s == ';' ? ':' : *s == '\n' ? ' ' : *s;
    buf[n < size ? n : size - 1] = '\0';
    return n;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_folded(
    const gpuprof_an_db *db, FILE *out, const char *metric, uint32_t flags)
{
    uint32_t mi, me;
    if (!out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    gpuprof_status st = metric_pair(db, metric, &mi, &me);
    if (st != GPUPROF_OK)
        return st;
    char *buf = malloc(65536);
    if (!buf)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++) {
        double v = gpuprof_an_db_stat(db, c, me, GPUPROF_AN_STAT_SUM);
        if (v == 0)
            continue;
        folded_path(db, c, buf, 65536);
        if (v == floor(v) && fabs(v) < 1e18)
            fprintf(out, "%s %.0f\n", buf, v);
        else
            fprintf(out, "%s %.17g\n", buf, v);
    }
    free(buf);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}
