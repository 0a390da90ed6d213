/*
 * an_db_view.c - text out of an analysis database:
 *   - views of chosen metrics with inclusive and exclusive sums over
 *     profiles and shares of the whole (a metric its backend flagged:
 *     an odd sum as its mean over its count metric, without a share; one
 *     without meaningful inclusive values with '-' there, its rows sorted
 *     by exclusive values): top-down (the context tree),
 *     bottom-up (each procedure, then its callers, nearest first) and flat
 *     (each procedure once); a procedure is a frame's function without the
 *     call site's offset, or a region's, operation's or kernel's name, and
 *     only its outermost instances add to its inclusive value (recursion
 *     is not counted twice);
 *   - the thread-centric view: one context's values in every profile;
 *   - folded stacks for flame graphs (flamegraph.pl, speedscope, inferno):
 *     one line per context with a non-zero exclusive sum, its path from
 *     the root joined by ';', a space and the value. Folded lines re-sum
 *     to the root's inclusive sum (so flagged metrics, whose sums over a
 *     subtree mean nothing, are refused).
 */
#define _GNU_SOURCE /* qsort_r */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "io/io.h"

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
    if (isnan(v)) /* nothing to show: no meaningful value */
        snprintf(buf, n, "-");
    else if (u == GPUPROF_AN_UNIT_NS)
        gpuprof__an_fmt_ns(buf, n, (uint64_t)llround(v));
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%.4g", v);
}

/* The path of c written to out, names from beneath the root joined by ';'
 * (a ';' or newline inside a name becomes ':' / ' ', which folded stacks
 * cannot carry; an empty name is "<context N>"), the runtime's frames left
 * out unless `flags` has GPUPROF_AN_RUNTIME_FRAMES; the root's own name
 * for the root. Without recursion or a
 * length limit: `chain` has room for every context (the ancestors are
 * collected there through the parent links, as a tree can be tens of
 * thousands deep). */
static void folded_path(const gpuprof_an_db *db, uint32_t c, uint32_t flags,
                        FILE *out, uint32_t *chain)
{
    uint32_t n = 0;
    for (; c != 0 && c != UINT32_MAX; c = gpuprof__an_db_up(db, c, flags))
        chain[n++] = c;
    if (!n) /* the root itself */
        chain[n++] = 0;
    while (n--) {
        char label[48];
        const char *s = gpuprof__an_context_label(db, chain[n], flags, label,
                                                  sizeof(label));
        for (; *s; s++)
            putc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
        if (n)
            putc(';', out);
    }
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_folded(
    const gpuprof_an_db *db, FILE *out, const char *metric, uint32_t flags)
{
    uint32_t mi, me;
    if (!out || (flags & ~GPUPROF_AN_RUNTIME_FRAMES))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    gpuprof_status st = metric_pair(db, metric, &mi, &me);
    if (st != GPUPROF_OK)
        return st;
    if (gpuprof__an_db_no_incl(db, mi) || gpuprof__an_db_no_excl(db, mi) ||
        gpuprof__an_db_mean_of(db, mi) != UINT32_MAX)
        return gpuprof__an_fail(
            GPUPROF_E_INVALID,
            "metric %s %s: a flame graph's frames would sum it over "
            "subtrees (see gpuprof report --sort exclusive)", metric,
            gpuprof__an_db_no_incl(db, mi)
                ? "has no meaningful inclusive values"
            : gpuprof__an_db_no_excl(db, mi)
                ? "is measured inclusive (region.time.excl is its "
                  "exclusive counterpart)"
                : "is an odd sum shown as a mean over its count metric");
    uint32_t *chain = malloc(gpuprof_an_db_context_count(db) * sizeof(*chain));
    if (!chain)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++) {
        double v = gpuprof_an_db_stat(db, c, me, GPUPROF_AN_STAT_SUM);
        if (v == 0 || gpuprof__an_db_hidden(db, c, flags))
            continue; /* a hidden context has no value of its own */
        folded_path(db, c, flags, out, chain);
        if (v == floor(v) && fabs(v) < 1e18)
            fprintf(out, " %.0f\n", v);
        else
            fprintf(out, " %.17g\n", v);
    }
    free(chain);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

/* ---- flat and bottom-up views ----------------------------------------- */

/* The procedure a context stands for, as views group them: a function
 * (from DWARF, inlined or not: "solve (libapp.so)"), a frame's function
 * without the call site's offset (ELF symbols; an address without a symbol
 * stays itself), a region's, operation's or kernel's name; NULL for the
 * root and for source lines. */
static char *proc_key(const gpuprof_an_db *db, uint32_t c, uint32_t flags)
{
    gpuprof_an_node_kind k = gpuprof_an_db_context_kind(db, c);
    const char *name = gpuprof__an_db_label(db, c, flags);
    if (k == GPUPROF_AN_NODE_ROOT || k == GPUPROF_AN_NODE_LINE ||
        k == GPUPROF_AN_NODE_LOOP || !name ||
        gpuprof__an_db_hidden(db, c, flags))
        return NULL; /* a line or loop is a place in its function, not one */
    if (k == GPUPROF_AN_NODE_INLINE && !strncmp(name, "[inlined] ", 10))
        name += 10; /* inlined or not, the same function */
    char *s = strdup(name);
    if (!s || k != GPUPROF_AN_NODE_FRAME)
        return s;
    char *plus = strstr(s, "+0x");
    if (plus) {
        char *e = plus + 3;
        while (isxdigit((unsigned char)*e))
            e++;
        if (*e == ' ') /* "fn+0x1a (lib.so)": drop the offset */
            memmove(plus, e, strlen(e) + 1);
    }
    size_t l = strlen(s), d = l ? l - 1 : 0;
    while (d > 0 && s[l - 1] == ')' && isdigit((unsigned char)s[d - 1]))
        d--;
    if (d > 1 && d < l - 1 && s[d - 1] == ':') /* "f (a.py:42)": a Python */
        memmove(s + d - 1, s + l - 1, 2);      /* frame's line dropped */
    return s;
}

typedef struct procs {
    char **name; /* per procedure */
    uint32_t n, cap;
    uint32_t *of;          /* per context: its procedure, or UINT32_MAX */
    uint32_t *slot, mask;  /* name hash: index + 1 */
    uint8_t *outermost;    /* per context: no ancestor of the same one */
} procs;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static void procs_free(procs *p)
{
    for (uint32_t i = 0; i < p->n; i++)
        free(p->name[i]);
    free(p->name);
    free(p->of);
    free(p->slot);
    free(p->outermost);
}

static gpuprof_status procs_build(const gpuprof_an_db *db, procs *p,
                                  uint32_t flags)
{
    uint32_t n = gpuprof_an_db_context_count(db);
    memset(p, 0, sizeof(*p));
    p->mask = 1;
    while (p->mask < 2 * n + 2)
        p->mask <<= 1;
    p->slot = calloc(p->mask, sizeof(*p->slot));
    p->mask--;
    p->of = malloc((n ? n : 1) * sizeof(*p->of));
    p->outermost = malloc(n ? n : 1);
    if (!p->slot || !p->of || !p->outermost)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t c = 0; c < n; c++) {
        char *k = proc_key(db, c, flags);
        p->of[c] = UINT32_MAX;
        if (!k)
            continue;
        uint32_t h = (uint32_t)str_hash(k) & p->mask;
        while (p->slot[h] && strcmp(p->name[p->slot[h] - 1], k))
            h = (h + 1) & p->mask;
        if (p->slot[h]) {
            free(k);
        } else {
            if (p->n == p->cap) {
                uint32_t cap = p->cap ? 2 * p->cap : 256;
                char **nn = realloc(p->name, cap * sizeof(*nn));
                if (!nn) {
                    free(k);
                    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
                }
                p->name = nn;
                p->cap = cap;
            }
            p->name[p->n++] = k;
            p->slot[h] = p->n;
        }
        p->of[c] = p->slot[h] - 1;
    }
    /* Recursion: only a procedure's outermost instances add to its
     * inclusive value (the inner ones are inside it already). */
    for (uint32_t c = 0; c < n; c++) {
        p->outermost[c] = 1;
        for (uint32_t a = gpuprof_an_db_context_parent(db, c);
             a != UINT32_MAX && p->of[c] != UINT32_MAX;
             a = gpuprof_an_db_context_parent(db, a))
            if (p->of[a] == p->of[c]) {
                p->outermost[c] = 0;
                break;
            }
    }
    return GPUPROF_OK;
}

/* Rows of a view: a tree of (procedure, parent row). Each row sums the
 * measured metrics the columns need (its leaves: a derived metric is
 * evaluated over a row's sums, not summed over contexts), then holds each
 * column's inclusive and exclusive value. */
typedef struct rows {
    uint32_t *proc, *parent, *first, *next;
    double *leaf;        /* [row * nleaf + leaf] */
    double *incl, *excl; /* [row * ncol + col] */
    uint32_t n, cap, ncol, nleaf;
    uint32_t *slot, mask; /* (parent, proc) -> row + 1 */
} rows;

static void rows_free(rows *r)
{
    free(r->proc);
    free(r->parent);
    free(r->first);
    free(r->next);
    free(r->leaf);
    free(r->incl);
    free(r->excl);
    free(r->slot);
}

static bool rows_grow(rows *r)
{
    uint32_t cap = r->cap ? 2 * r->cap : 1024;
    uint32_t **u[] = {&r->proc, &r->parent, &r->first, &r->next};
    for (int i = 0; i < 4; i++) {
        uint32_t *q = realloc(*u[i], cap * sizeof(**u[i]));
        if (!q)
            return false;
        *u[i] = q;
    }
    double **d[] = {&r->incl, &r->excl, &r->leaf};
    for (int i = 0; i < 3; i++) {
        double *q = realloc(*d[i], (size_t)cap * (i < 2 ? r->ncol : r->nleaf) *
                                       sizeof(**d[i]));
        if (!q)
            return false;
        *d[i] = q;
    }
    /* The hash at twice the rows. */
    free(r->slot);
    r->mask = 2 * cap - 1;
    if (!(r->slot = calloc(2 * (size_t)cap, sizeof(*r->slot))))
        return false;
    for (uint32_t i = 0; i < r->n; i++) {
        uint32_t h = (uint32_t)(((uint64_t)r->parent[i] << 32 | r->proc[i]) *
                                0x9e3779b97f4a7c15ull >> 32) & r->mask;
        while (r->slot[h])
            h = (h + 1) & r->mask;
        r->slot[h] = i + 1;
    }
    r->cap = cap;
    return true;
}

/* The row of `proc` beneath row `parent` (UINT32_MAX: top level), added
 * when new; UINT32_MAX when out of memory. */
static uint32_t row_get(rows *r, uint32_t parent, uint32_t proc)
{
    if (r->n == r->cap && !rows_grow(r)) /* the hash stays half empty */
        return UINT32_MAX;
    uint32_t h = (uint32_t)(((uint64_t)parent << 32 | proc) *
                            0x9e3779b97f4a7c15ull >> 32) & r->mask;
    for (; r->slot[h]; h = (h + 1) & r->mask) {
        uint32_t i = r->slot[h] - 1;
        if (r->parent[i] == parent && r->proc[i] == proc)
            return i;
    }
    uint32_t i = r->n++;
    r->proc[i] = proc;
    r->parent[i] = parent;
    r->first[i] = r->next[i] = UINT32_MAX;
    for (uint32_t k = 0; k < r->nleaf; k++)
        r->leaf[(size_t)i * r->nleaf + k] = 0;
    r->slot[h] = i + 1;
    return i;
}

typedef struct sort_arg {
    const rows *r;
    int excl;
} sort_arg;

static int row_desc(const void *x, const void *y, void *arg)
{
    const sort_arg *s = arg;
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    const double *v = s->excl ? s->r->excl : s->r->incl;
    double va = v[(size_t)a * s->r->ncol], vb = v[(size_t)b * s->r->ncol];
    if (va != vb)
        return va > vb ? -1 : 1;
    return (a > b) - (a < b);
}

/* Children lists, largest first by the first column. */
static bool rows_link(rows *r, uint32_t *top, int excl, uint32_t *ntop)
{
    uint32_t *ord = malloc((r->n ? r->n : 1) * sizeof(*ord));
    if (!ord)
        return false;
    for (uint32_t i = 0; i < r->n; i++)
        ord[i] = i;
    sort_arg s = {r, excl};
    qsort_r(ord, r->n, sizeof(*ord), row_desc, &s);
    *ntop = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (r->parent[ord[i]] == UINT32_MAX)
            top[(*ntop)++] = ord[i];
    for (uint32_t i = r->n; i-- > 0;) {
        uint32_t k = ord[i], p = r->parent[k];
        if (p != UINT32_MAX) {
            r->next[k] = r->first[p];
            r->first[p] = k;
        }
    }
    free(ord);
    return true;
}

typedef struct view {
    const gpuprof_an_db *db;
    FILE *out;
    const procs *pr;
    const rows *r;
    uint32_t ncol;
    const uint32_t *mi, *me;
    double *total; /* per column: the whole for shares, 0: no share */
    double min_share;
    uint32_t max_depth;
    int excl;      /* rows kept by their exclusive value (else inclusive) */
    int sort_excl; /* siblings sorted by exclusive values */
    const double *whole; /* per column: the whole as shown */
    const uint32_t *ci;  /* per column: an odd sum's count metric, or none */
} view;

static void print_cols(const view *v, const double *incl, const double *excl)
{
    for (uint32_t k = 0; k < v->ncol; k++) {
        char a[64], b[64];
        gpuprof_an_unit u = gpuprof_an_db_metric_unit(v->db, v->mi[k]);
        fmt_value(a, sizeof(a),
                  gpuprof__an_db_no_incl(v->db, v->mi[k]) ? NAN : incl[k], u);
        fmt_value(b, sizeof(b),
                  gpuprof__an_db_no_excl(v->db, v->mi[k]) ? NAN : excl[k], u);
        if (v->total[k] > 0 && gpuprof__an_db_additive(v->db, v->mi[k]))
            fprintf(v->out, "%14s %6.2f%% %14s ", a,
                    100 * incl[k] / v->total[k], b);
        else /* a ratio or a minimum: no share of a whole */
            fprintf(v->out, "%14s %7s %14s ", a, "", b);
    }
}

static void print_rows(const view *v, uint32_t first, unsigned depth)
{
    const rows *r = v->r;
    for (uint32_t k = first; k != UINT32_MAX; k = r->next[k]) {
        const double *in = r->incl + (size_t)k * r->ncol;
        const double *ex = r->excl + (size_t)k * r->ncol;
        double key = v->excl ? ex[0] : in[0];
        if (key == 0 ||
            (v->total[0] > 0 && fabs(key) / v->total[0] < v->min_share))
            continue;
        print_cols(v, in, ex);
        fprintf(v->out, " %*s%s\n", (int)(2 * depth), "",
                v->pr->name[r->proc[k]]);
        if (!v->max_depth || depth + 1 < v->max_depth)
            print_rows(v, r->first[k], depth + 1);
    }
}

static gpuprof_status print_view_rows(view *v, rows *r, const char *what)
{
    uint32_t *top = malloc((r->n ? r->n : 1) * sizeof(*top)), ntop;
    if (!top || !rows_link(r, top, v->sort_excl, &ntop)) {
        free(top);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    fprintf(v->out, "%s view over %u profiles, by %s %s; the whole:", what,
            gpuprof_an_db_profile_count(v->db),
            v->sort_excl ? "exclusive" : "inclusive",
            gpuprof_an_db_metric_name(v->db, v->mi[0]));
    for (uint32_t k = 0; k < v->ncol; k++) {
        char a[64];
        fmt_value(a, sizeof(a), v->whole[k],
                  gpuprof_an_db_metric_unit(v->db, v->mi[k]));
        fprintf(v->out, "%s %s %s", k ? "," : "",
                gpuprof_an_db_metric_name(v->db, v->mi[k]), a);
        if (v->ci[k] != UINT32_MAX)
            fprintf(v->out, " (mean per %s)",
                    gpuprof_an_db_metric_name(v->db, v->ci[k]));
        if (gpuprof__an_db_no_incl(v->db, v->mi[k]))
            fputs(" (exclusive values only)", v->out);
    }
    fprintf(v->out, "; columns per metric: inclusive, share, exclusive; ");
    if (v->min_share > 0 && (v->ci[0] != UINT32_MAX ||
                             gpuprof__an_db_no_incl(v->db, v->mi[0])))
        fprintf(v->out, "no threshold (%s has no whole)\n",
                gpuprof_an_db_metric_name(v->db, v->mi[0]));
    else
        fprintf(v->out, "under %.2f%% left out\n", 100 * v->min_share);
    /* Column headers: each metric's name over its three columns, then
     * what they are (a ratio has no share). */
    for (uint32_t k = 0; k < v->ncol; k++)
        fprintf(v->out, "%37.37s%s", gpuprof_an_db_metric_name(v->db, v->mi[k]),
                k + 1 < v->ncol ? " " : "\n");
    for (uint32_t k = 0; k < v->ncol; k++)
        fprintf(v->out, "%14s %7s %14s ", "inclusive",
                v->total[k] > 0 && gpuprof__an_db_additive(v->db, v->mi[k])
                    ? "share"
                    : "",
                "exclusive");
    fprintf(v->out, " %s\n", strcmp(what, "top-down") ? "procedure" : "context");
    /* The top level linked as siblings, largest first. */
    for (uint32_t i = 0; i + 1 < ntop; i++)
        r->next[top[i]] = top[i + 1];
    if (ntop)
        r->next[top[ntop - 1]] = UINT32_MAX;
    v->r = r;
    print_rows(v, ntop ? top[0] : UINT32_MAX, 0);
    free(top);
    return GPUPROF_OK;
}

/* The measured metrics behind metric m (itself when measured). */
static bool leaves_of(const gpuprof_an_db *db, uint32_t m, uint32_t *leaf,
                      uint32_t *n, uint32_t max)
{
    const gpuprof__an_formula *f = gpuprof__an_db_formula(db, m);
    if (f) {
        uint32_t ops[GPUPROF__AN_MAX_OPERANDS];
        uint32_t k = gpuprof__an_formula_operands(
            f, gpuprof_an_db_metric_variant(db, m), ops,
            GPUPROF__AN_MAX_OPERANDS);
        for (uint32_t i = 0; i < k; i++)
            if (!leaves_of(db, ops[i], leaf, n, max))
                return false;
        return true;
    }
    for (uint32_t i = 0; i < *n; i++)
        if (leaf[i] == m)
            return true;
    if (*n == max)
        return false;
    leaf[(*n)++] = m;
    return true;
}

typedef struct row_at {
    const gpuprof_an_db *db;
    const rows *r;
    const uint32_t *leaf;
    uint32_t row;
} row_at;

/* Metric m over one row's sums. */
static double row_value(void *arg, uint32_t m)
{
    const row_at *a = arg;
    const gpuprof__an_formula *f = gpuprof__an_db_formula(a->db, m);
    if (f)
        return gpuprof__an_formula_eval(
            f, gpuprof_an_db_metric_variant(a->db, m), row_value, arg);
    for (uint32_t i = 0; i < a->r->nleaf; i++)
        if (a->leaf[i] == m)
            return a->r->leaf[(size_t)a->row * a->r->nleaf + i];
    return 0;
}

/* Column metric m over one row's sums: an odd sum's mean over its count
 * metric c (UINT32_MAX: none). */
static double col_value(row_at *at, uint32_t m, uint32_t c)
{
    double v = row_value(at, m);
    return c == UINT32_MAX ? v : gpuprof__an_mean(v, row_value(at, c));
}

/* Adds v to a row's leaf by the metric's rule. */
static void leaf_add(const gpuprof_an_db *db, rows *r, uint32_t row,
                     const uint32_t *leaf, uint32_t i, double v)
{
    double *d = &r->leaf[(size_t)row * r->nleaf + i];
    int how = gpuprof__an_db_combine(db, leaf[i]);
    if (v == 0)
        return;
    if (*d == 0 || how == GPUPROF_IO_SUM)
        *d = *d == 0 ? v : *d + v;
    else if (how == GPUPROF_IO_MIN ? v < *d : v > *d)
        *d = v;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_view(
    const gpuprof_an_db *db, FILE *out, gpuprof_an_view kind,
    const char *const *metrics, uint32_t nmetrics, double min_share,
    uint32_t max_depth, uint32_t flags)
{
    if (!db || !out || !metrics || !nmetrics || nmetrics > 16 ||
        min_share < 0 || min_share > 1 || kind > GPUPROF_AN_VIEW_FLAT ||
        (flags & ~(GPUPROF_AN_VIEW_SORT_EXCLUSIVE | GPUPROF_AN_RUNTIME_FRAMES)))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    uint32_t mi[16], me[16], ci[16], ce[16], leaf[64], nleaf = 0;
    double total[16], whole[16];
    for (uint32_t k = 0; k < nmetrics; k++) {
        gpuprof_status st = metric_pair(db, metrics[k], &mi[k], &me[k]);
        if (st != GPUPROF_OK)
            return st;
        ci[k] = gpuprof__an_db_mean_of(db, mi[k]);
        ce[k] = gpuprof__an_db_mean_of(db, me[k]);
        if (!leaves_of(db, mi[k], leaf, &nleaf, 64) ||
            !leaves_of(db, me[k], leaf, &nleaf, 64) ||
            (ci[k] != UINT32_MAX && !leaves_of(db, ci[k], leaf, &nleaf, 64)) ||
            (ce[k] != UINT32_MAX && !leaves_of(db, ce[k], leaf, &nleaf, 64)))
            return gpuprof__an_fail(GPUPROF_E_LIMIT,
                                    "more than 64 metrics behind a view");
        whole[k] = total[k] =
            gpuprof_an_db_stat(db, 0, mi[k], GPUPROF_AN_STAT_SUM);
        if (ci[k] != UINT32_MAX) { /* a mean: no share of a whole */
            whole[k] = gpuprof__an_mean(
                whole[k], gpuprof_an_db_stat(db, 0, ci[k], GPUPROF_AN_STAT_SUM));
            total[k] = 0;
        }
        if (gpuprof__an_db_no_incl(db, mi[k])) {
            whole[k] = NAN;
            total[k] = 0;
        }
    }
    procs pr;
    rows r = {.ncol = nmetrics, .nleaf = nleaf};
    gpuprof_status st = procs_build(db, &pr, flags);
    uint32_t n = gpuprof_an_db_context_count(db);
    uint32_t *rowof = malloc((n ? n : 1) * sizeof(*rowof)); /* top-down */
    if (st == GPUPROF_OK && !rowof)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    double lv[64];
    bool incl[64];
    for (uint32_t i = 0; i < nleaf; i++)
        incl[i] = gpuprof_an_db_metric_variant(db, leaf[i]) ==
                  GPUPROF_AN_INCLUSIVE;
    for (uint32_t c = 1; st == GPUPROF_OK && c < n; c++) {
        if (kind != GPUPROF_AN_VIEW_TOPDOWN && pr.of[c] == UINT32_MAX)
            continue;
        if (gpuprof__an_db_hidden(db, c, flags))
            continue; /* the runtime's: no value of its own, children
                         beneath its nearest shown ancestor */
        for (uint32_t i = 0; i < nleaf; i++)
            lv[i] = kind != GPUPROF_AN_VIEW_TOPDOWN && incl[i] &&
                            !pr.outermost[c]
                        ? 0
                        : gpuprof_an_db_stat(db, c, leaf[i],
                                             GPUPROF_AN_STAT_SUM);
        if (kind == GPUPROF_AN_VIEW_TOPDOWN) {
            /* The context tree itself (parents come first), a row's
             * procedure is its context. */
            uint32_t parent = gpuprof__an_db_up(db, c, flags);
            uint32_t row = rowof[c] =
                row_get(&r, parent == 0 ? UINT32_MAX : rowof[parent], c);
            if (row == UINT32_MAX)
                st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            for (uint32_t i = 0; row != UINT32_MAX && i < nleaf; i++)
                leaf_add(db, &r, row, leaf, i, lv[i]);
            continue;
        }
        /* Flat: one row per procedure. Bottom-up: then its callers, the
         * nearest first, each row holding what was spent in the
         * procedure when called along that chain. */
        uint32_t row = UINT32_MAX, a = c, depth = 0;
        while (a != UINT32_MAX && a != 0) {
            row = row_get(&r, row, pr.of[a]);
            if (row == UINT32_MAX) {
                st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
                break;
            }
            for (uint32_t i = 0; i < nleaf; i++)
                leaf_add(db, &r, row, leaf, i, lv[i]);
            if (kind == GPUPROF_AN_VIEW_FLAT ||
                (max_depth && ++depth >= max_depth))
                break;
            do /* the caller: the nearest ancestor standing for one */
                a = gpuprof__an_db_up(db, a, flags);
            while (a != UINT32_MAX && a != 0 && pr.of[a] == UINT32_MAX);
        }
    }
    /* Each column over each row's sums. */
    for (uint32_t row = 0; st == GPUPROF_OK && row < r.n; row++) {
        row_at at = {db, &r, leaf, row};
        for (uint32_t k = 0; k < nmetrics; k++) {
            r.incl[(size_t)row * nmetrics + k] = col_value(&at, mi[k], ci[k]);
            r.excl[(size_t)row * nmetrics + k] = col_value(&at, me[k], ce[k]);
        }
    }
    if (st == GPUPROF_OK) {
        /* Top-down rows name contexts: their procedures are contexts. */
        char **names = pr.name;
        char **ctx_names = NULL;
        if (kind == GPUPROF_AN_VIEW_TOPDOWN) {
            ctx_names = malloc((n ? n : 1) * sizeof(*ctx_names));
            if (!ctx_names)
                st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            for (uint32_t c = 0; ctx_names && c < n; c++)
                ctx_names[c] = (char *)gpuprof__an_db_label(db, c, flags);
            pr.name = ctx_names;
        }
        int ex = !!(flags & GPUPROF_AN_VIEW_SORT_EXCLUSIVE);
        view v = {db,    out,   &pr,   &r,        nmetrics,
                  mi,    me,    total, min_share, max_depth,
                  ex,    ex || gpuprof__an_db_no_incl(db, mi[0]),
                  whole, ci};
        static const char *const what[] = {"top-down", "bottom-up", "flat"};
        if (st == GPUPROF_OK)
            st = print_view_rows(&v, &r, what[kind]);
        pr.name = names;
        free(ctx_names);
    }
    rows_free(&r);
    procs_free(&pr);
    free(rowof);
    if (st == GPUPROF_OK && ferror(out))
        st = gpuprof__an_fail(GPUPROF_E_IO, "write error");
    return st;
}

/* ---- the thread-centric view: one context, every profile ---------------- */
/* The thread-centric view's closing statistics of metric m at context c:
 * sum, min, mean, max, std, cov; for an odd sum (count metric cm) its mean
 * per count alone. */
static void print_stats(const gpuprof_an_db *db, FILE *out, uint32_t c,
                        uint32_t m, uint32_t cm, gpuprof_an_unit u)
{
    static const char *const sn[] = {"sum", "min", "mean", "max", "std"};
    char a[64];
    if (cm != UINT32_MAX) {
        fmt_value(a, sizeof(a),
                  gpuprof__an_mean(
                      gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_SUM),
                      gpuprof_an_db_stat(db, c, cm, GPUPROF_AN_STAT_SUM)),
                  u);
        fprintf(out, " mean per %s %s\n", gpuprof_an_db_metric_name(db, cm), a);
        return;
    }
    for (int s = 0; s < 5; s++) {
        fmt_value(a, sizeof(a),
                  gpuprof_an_db_stat(db, c, m, (gpuprof_an_stat)(s + 1)), u);
        fprintf(out, " %s %s", sn[s], a);
    }
    fprintf(out, " cov %.3f\n", gpuprof_an_db_stat(db, c, m, GPUPROF_AN_STAT_COV));
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_profiles(
    const gpuprof_an_db *db, FILE *out, uint32_t context, const char *metric,
    uint32_t flags)
{
    uint32_t mi, me;
    if (!out || (flags & ~GPUPROF_AN_RUNTIME_FRAMES))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    gpuprof_status st = metric_pair(db, metric, &mi, &me);
    if (st != GPUPROF_OK)
        return st;
    if (context >= gpuprof_an_db_context_count(db))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND, "no context %u (the "
                                "database has %u)", context,
                                gpuprof_an_db_context_count(db));
    uint32_t np = gpuprof_an_db_profile_count(db);
    uint32_t *path = malloc(gpuprof_an_db_context_count(db) * sizeof(*path));
    uint32_t *pi = malloc((np ? np : 1) * sizeof(*pi));
    double *vi = malloc((np ? np : 1) * sizeof(*vi));
    if (!path || !pi || !vi) {
        free(path);
        free(pi);
        free(vi);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    gpuprof_an_unit u = gpuprof_an_db_metric_unit(db, mi);
    /* Flagged metrics: an odd sum per profile as its mean, and without
     * meaningful inclusive values the profiles with an exclusive one. */
    bool noinc = gpuprof__an_db_no_incl(db, mi);
    uint32_t ci = gpuprof__an_db_mean_of(db, mi),
             ce = gpuprof__an_db_mean_of(db, me), sm = noinc ? me : mi;
    fprintf(out, "context %u: ", context);
    if (context)
        folded_path(db, context, flags, out, path);
    else
        fputs("<program root>", out);
    fprintf(out, "\n%s per profile (inclusive, exclusive)%s:\n", metric,
            noinc ? ", exclusive values only" : "");
    if (ci != UINT32_MAX)
        fprintf(out, "(means per %s)\n", gpuprof_an_db_metric_name(db, ci));
    fprintf(out, "%8s %-20s %6s %8s %10s %-16s %14s %14s\n", "profile",
            "host", "rank", "pid", "tid", "thread", "inclusive",
            "exclusive");
    /* Profiles with an inclusive value (a non-zero exclusive value implies
     * one for the additive metrics; for min/max ones both are listed). */
    uint32_t n = gpuprof_an_db_context_values(db, context, sm, pi, vi, np);
    for (uint32_t i = 0; i < n && i < np; i++) {
        uint32_t p = pi[i];
        char a[64], b[64];
        double vin = gpuprof_an_db_value(db, p, context, mi),
               vex = gpuprof_an_db_value(db, p, context, me);
        if (ci != UINT32_MAX) {
            vin = gpuprof__an_mean(vin, gpuprof_an_db_value(db, p, context, ci));
            vex = gpuprof__an_mean(vex, gpuprof_an_db_value(db, p, context, ce));
        }
        fmt_value(a, sizeof(a), noinc ? NAN : vin, u);
        fmt_value(b, sizeof(b), vex, u);
        fprintf(out, "%8u %-20s %6d %8u %10" PRIu64 " %-16s %14s %14s\n", p,
                gpuprof_an_db_profile_host(db, p),
                gpuprof_an_db_profile_rank(db, p),
                gpuprof_an_db_profile_pid(db, p),
                gpuprof_an_db_profile_tid(db, p),
                gpuprof_an_db_profile_thread_name(db, p), a, b);
    }
    fprintf(out, "%s over the %u of %u profiles with a value:",
            noinc ? "exclusive" : "inclusive", n, np);
    print_stats(db, out, context, sm, noinc ? ce : ci, u);
    free(path);
    free(pi);
    free(vi);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_topdown(
    const gpuprof_an_db *db, FILE *out, const char *metric, double min_share,
    uint32_t flags)
{
    if (flags & ~GPUPROF_AN_RUNTIME_FRAMES)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    return gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_TOPDOWN, &metric,
                                    1, min_share, 0, flags);
}

/* ---- the trace database: what each stream holds ------------------------- */
typedef struct ctx_count {
    uint32_t context;
    uint64_t n;
} ctx_count;

static int by_count_desc(const void *x, const void *y)
{
    const ctx_count *a = x, *b = y;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    return (a->context > b->context) - (a->context < b->context);
}

/* kern[c]: the kernel beneath GPU operation context c (UINT32_MAX: none,
 * UINT32_MAX - 1: several). */
static uint32_t *kernels_of(const gpuprof_an_db *db, uint32_t nc)
{
    uint32_t *kern = malloc((nc ? nc : 1) * sizeof(*kern));
    for (uint32_t c = 0; kern && c < nc; c++)
        kern[c] = UINT32_MAX;
    for (uint32_t c = 1; kern && c < nc; c++) {
        uint32_t p = gpuprof_an_db_context_parent(db, c);
        if (gpuprof_an_db_context_kind(db, c) == GPUPROF_AN_NODE_KERNEL &&
            p < nc)
            kern[p] = kern[p] == UINT32_MAX ? c : UINT32_MAX - 1;
    }
    return kern;
}

/* A trace record's context as a person reads it: a GPU operation by its
 * kernel, and where it was called from (the nearest function or frame,
 * and the source line when the database has lines). */
static void trace_label(const gpuprof_an_db *db, const uint32_t *kern,
                        uint32_t nc, uint32_t c, FILE *out)
{
    if (c >= nc) {
        fputs("<unknown context>", out);
        return;
    }
    const char *name = gpuprof_an_db_context_name(db, c);
    if (gpuprof_an_db_context_kind(db, c) != GPUPROF_AN_NODE_GPU_OP) {
        fputs(name, out);
        return;
    }
    if (kern[c] < nc)
        fputs(gpuprof_an_db_context_name(db, kern[c]), out);
    else
        fprintf(out, "%s%s", name,
                kern[c] == UINT32_MAX - 1 ? " (several kernels)" : "");
    const char *line = NULL, *fn = NULL;
    for (uint32_t p = gpuprof_an_db_context_parent(db, c); p < nc && p && !fn;
         p = gpuprof_an_db_context_parent(db, p)) {
        gpuprof_an_node_kind k = gpuprof_an_db_context_kind(db, p);
        if (k == GPUPROF_AN_NODE_LINE && !line)
            line = gpuprof_an_db_context_name(db, p);
        else if (k != GPUPROF_AN_NODE_LINE)
            fn = gpuprof_an_db_context_name(db, p);
    }
    if (fn)
        fprintf(out, "  from %s", fn);
    if (line)
        fprintf(out, " at %s", line);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_trace(
    const gpuprof_an_db *db, FILE *out, uint32_t flags)
{
    if (!db || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    uint32_t ns = gpuprof_an_db_trace_stream_count(db);
    uint32_t nc = gpuprof_an_db_context_count(db);
    static const char *const kind[] = {
        "regions",   "GPU API calls", "device work", "dependency notes",
        "MPI calls", "host synchronization", "CPU samples"};
    fprintf(out, "trace database: %u streams\n", ns);
    uint64_t *per = calloc((size_t)nc + 1, sizeof(*per));
    gpuprof_an_trace_record *rec = malloc(4096 * sizeof(*rec));
    uint32_t *kern = kernels_of(db, nc);
    if (!per || !rec || !kern) {
        free(per);
        free(rec);
        free(kern);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        uint64_t busy = 0, first = 0, last = 0;
        if (s.kind == GPUPROF_AN_TRACE_DEPS || s.kind == GPUPROF_AN_TRACE_MPI ||
            s.kind == GPUPROF_AN_TRACE_HOST) {
            /* notes, MPI calls, host records: records of other layouts */
            fprintf(out, "stream %u: process %u, thread %u \"%s\", %s: "
                    "%" PRIu64 " records\n", i, s.process, s.profile,
                    gpuprof_an_db_profile_thread_name(db, s.profile),
                    kind[s.kind],
                    s.kind == GPUPROF_AN_TRACE_DEPS ? s.records
                                                    : s.records / 2);
            continue;
        }
        memset(per, 0, ((size_t)nc + 1) * sizeof(*per));
        for (uint64_t k = 0, got; k < s.records; k += got) {
            got = gpuprof_an_db_trace_records(db, i, k, rec, 4096);
            if (!got)
                break;
            for (uint64_t j = 0; j < got; j++) {
                if (!k && !j)
                    first = rec[j].start_ns;
                busy += rec[j].end_ns - rec[j].start_ns;
                last = rec[j].end_ns > last ? rec[j].end_ns : last;
                per[rec[j].context < nc ? rec[j].context : nc]++;
            }
        }
        char b[32], span[32];
        gpuprof__an_fmt_ns(b, sizeof(b), busy);
        gpuprof__an_fmt_ns(span, sizeof(span), s.records ? last - first : 0);
        if (s.kind == GPUPROF_AN_TRACE_GPU)
            fprintf(out, "stream %u: process %u, GPU device %u stream %u, %s: "
                    "%" PRIu64 " records, busy %s over %s\n", i, s.process,
                    s.device, s.stream, kind[s.kind], s.records, b, span);
        else
            fprintf(out, "stream %u: process %u, thread %u \"%s\", %s: "
                    "%" PRIu64 " records over %s\n", i, s.process, s.profile,
                    gpuprof_an_db_profile_thread_name(db, s.profile),
                    kind[s.kind], s.records, span);
        /* Its records by context, most first. */
        uint32_t m = 0;
        ctx_count *all = malloc(((size_t)nc + 1) * sizeof(*all));
        if (!all) {
            free(per);
            free(rec);
            free(kern);
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        }
        for (uint32_t c = 0; c <= nc; c++)
            if (per[c])
                all[m++] = (ctx_count){c, per[c]};
        qsort(all, m, sizeof(*all), by_count_desc);
        for (uint32_t k = 0; k < m; k++) {
            fprintf(out, "  %10" PRIu64 "  ", all[k].n);
            trace_label(db, kern, nc, all[k].context, out);
            fputc('\n', out);
        }
        free(all);
    }
    free(per);
    free(rec);
    free(kern);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}
