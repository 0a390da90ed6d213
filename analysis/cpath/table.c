/*
 * table.c - table metrics (table.h): cells sorted by (context, profile),
 * one array per variant with an index of each context's first cell, so a
 * value is a binary search within its context and a context's values are
 * one contiguous run in profile order, as cct.db gives a measured metric.
 */
#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct tvar {
    gpuprof__an_cell *cell; /* sorted by context, then profile; merged */
    uint64_t n;
    uint64_t *first; /* per context: its first cell; [ncontexts] = n */
} tvar;

struct gpuprof__an_table {
    char *name;
    gpuprof_an_unit unit;
    uint32_t ncontexts;
    tvar v[2]; /* 0 inclusive, 1 exclusive */
};

static int by_cp(const void *x, const void *y)
{
    const gpuprof__an_cell *a = x, *b = y;
    if (a->context != b->context)
        return a->context < b->context ? -1 : 1;
    return (a->profile > b->profile) - (a->profile < b->profile);
}

/* Sorts and merges cells[0..n) into v (taking the array). */
static int settle(tvar *v, gpuprof__an_cell *cell, uint64_t n, uint32_t nc)
{
    qsort(cell, n, sizeof(*cell), by_cp);
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (m && cell[m - 1].context == cell[i].context &&
            cell[m - 1].profile == cell[i].profile)
            cell[m - 1].value += cell[i].value;
        else
            cell[m++] = cell[i];
    }
    uint64_t kept = 0; /* cells that cancelled out (moved elsewhere) go */
    for (uint64_t i = 0; i < m; i++)
        if (cell[i].value != 0)
            cell[kept++] = cell[i];
    m = kept;
    v->cell = cell;
    v->n = m;
    v->first = malloc(((size_t)nc + 1) * sizeof(*v->first));
    if (!v->first)
        return -1;
    uint64_t k = 0;
    for (uint32_t c = 0; c <= nc; c++) {
        while (k < m && cell[k].context < c)
            k++;
        v->first[c] = k;
    }
    return 0;
}

/* The inclusive cells: each exclusive one added to its context and every
 * ancestor (the calling context tree lists parents first). */
static gpuprof__an_cell *roll_up(const gpuprof_an_db *db,
                                 const gpuprof__an_cell *ex, uint64_t n,
                                 uint64_t *out_n)
{
    uint64_t cap = n ? n * 4 : 1, m = 0;
    gpuprof__an_cell *in = malloc(cap * sizeof(*in));
    for (uint64_t i = 0; in && i < n; i++)
        for (uint32_t c = ex[i].context; c != UINT32_MAX;
             c = gpuprof_an_db_context_parent(db, c)) {
            if (m == cap) {
                gpuprof__an_cell *g = realloc(in, 2 * cap * sizeof(*in));
                if (!g) {
                    free(in);
                    return NULL;
                }
                in = g;
                cap *= 2;
            }
            in[m++] = (gpuprof__an_cell){ex[i].profile, c, ex[i].value};
            if (c == 0)
                break;
        }
    *out_n = m;
    return in;
}

gpuprof__an_table *gpuprof__an_table_new(const gpuprof_an_db *db,
                                         const char *name,
                                         gpuprof_an_unit unit,
                                         gpuprof__an_cell *cells, uint64_t n)
{
    uint32_t nc = gpuprof_an_db_context_count(db);
    uint32_t np = gpuprof_an_db_profile_count(db);
    gpuprof__an_table *t = calloc(1, sizeof(*t));
    gpuprof__an_cell *ex = malloc((n ? n : 1) * sizeof(*ex));
    if (!t || !ex || !(t->name = strdup(name))) {
        free(ex);
        gpuprof__an_table_free(t);
        return NULL;
    }
    t->unit = unit;
    t->ncontexts = nc;
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (cells[i].context < nc && cells[i].profile < np &&
            cells[i].value != 0)
            ex[m++] = cells[i];
    uint64_t nin = 0;
    gpuprof__an_cell *in = roll_up(db, ex, m, &nin);
    if (!in || settle(&t->v[1], ex, m, nc) || settle(&t->v[0], in, nin, nc)) {
        if (!t->v[1].cell)
            free(ex);
        if (!t->v[0].cell)
            free(in);
        gpuprof__an_table_free(t);
        return NULL;
    }
    return t;
}

void gpuprof__an_table_free(gpuprof__an_table *t)
{
    if (!t)
        return;
    for (int k = 0; k < 2; k++) {
        free(t->v[k].cell);
        free(t->v[k].first);
    }
    free(t->name);
    free(t);
}

const char *gpuprof__an_table_name(const gpuprof__an_table *t)
{
    return t->name;
}

gpuprof_an_unit gpuprof__an_table_unit(const gpuprof__an_table *t)
{
    return t->unit;
}

double gpuprof__an_table_value(const gpuprof__an_table *t, unsigned variant,
                               uint32_t p, uint32_t c)
{
    const tvar *v = &t->v[variant ? 1 : 0];
    if (c >= t->ncontexts)
        return 0;
    uint64_t lo = v->first[c], hi = v->first[c + 1];
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (v->cell[mid].profile == p)
            return v->cell[mid].value;
        if (v->cell[mid].profile < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

uint32_t gpuprof__an_table_values(const gpuprof__an_table *t,
                                  unsigned variant, uint32_t c,
                                  uint32_t *profiles, double *values,
                                  uint32_t max)
{
    const tvar *v = &t->v[variant ? 1 : 0];
    if (c >= t->ncontexts)
        return 0;
    uint64_t a = v->first[c], b = v->first[c + 1];
    for (uint64_t i = a; i < b && i - a < max; i++) {
        if (profiles)
            profiles[i - a] = v->cell[i].profile;
        if (values)
            values[i - a] = v->cell[i].value;
    }
    return (uint32_t)(b - a);
}

double gpuprof__an_table_stat(const gpuprof__an_table *t, unsigned variant,
                              uint32_t c, gpuprof_an_stat which)
{
    const tvar *v = &t->v[variant ? 1 : 0];
    if (c >= t->ncontexts)
        return 0;
    uint64_t a = v->first[c], b = v->first[c + 1], n = b - a;
    double sum = 0, mn = n ? v->cell[a].value : 0, mx = mn, var = 0;
    for (uint64_t i = a; i < b; i++) {
        double x = v->cell[i].value;
        sum += x;
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
    }
    double mean = n ? sum / (double)n : 0;
    for (uint64_t i = a; i < b; i++)
        var += (v->cell[i].value - mean) * (v->cell[i].value - mean);
    double sd = n ? sqrt(var / (double)n) : 0;
    switch (which) {
    case GPUPROF_AN_STAT_COUNT:
        return (double)n;
    case GPUPROF_AN_STAT_SUM:
        return sum;
    case GPUPROF_AN_STAT_MIN:
        return mn;
    case GPUPROF_AN_STAT_MEAN:
        return mean;
    case GPUPROF_AN_STAT_MAX:
        return mx;
    case GPUPROF_AN_STAT_STD:
        return sd;
    default:
        return mean != 0 ? sd / mean : 0;
    }
}
