/*
 * an_export_hatchet.c - an analysis database as files that Python tools
 * load:
 *   - Hatchet's literal format (LLNL hatchet, GraphFrame.from_literal): a
 *     list with one root, each node {"frame": {"name", "type", "context"},
 *     "metrics": {...}, "children": [...]}; every context is one node;
 *   - a table for pandas (pandas.read_csv): one row per (context, profile)
 *     with a value, the context's identity, the profile's, and each
 *     metric's values.
 * Per metric M both give the exclusive and inclusive value ("M", "M
 * (inc)": Hatchet's convention, a name holding "(inc)" is inclusive), then
 * the minimum, mean and maximum over the context's profiles with a
 * non-zero value, as gpuprof_an_db_stat gives them: "M (min)", "M (mean)",
 * "M (max)", and "M (min) (inc)", "M (mean) (inc)", "M (max) (inc)".
 * Metrics their backend flagged (doc/ANALYSIS.md "Metric flags"): an odd
 * sum's values are its means over its count metric (a context's: the sum
 * over profiles of the one over that of the other; a row's: the profile's;
 * the statistics are those of the profiles' means), and a metric without
 * meaningful inclusive values has no inclusive fields.
 *
 * Cost. The tree is walked through first-child and next-sibling arrays
 * and parent links: no recursion and no stack, since a calling context
 * tree can be tens of thousands of levels deep. The table reads each
 * context's range of cct.db through gpuprof__an_rows, which yields the
 * profiles with a value in order with all their values, so it costs
 * O(values + rows x metrics), never O(contexts x profiles). Statistics of
 * measured metrics come from stats.db; those of derived metrics are
 * computed from the same rows (one more pass over the context's range,
 * rather than holding its rows: memory stays O(metrics)).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

static const char *kind_name(gpuprof_an_node_kind k)
{
    static const char *const n[] = {
        "root",   "region",          "frame",    "gpu op",
        "kernel", "gpu instruction", "function", "inlined",
        "line",   "gpu function",    "loop"};
    return (unsigned)k < sizeof(n) / sizeof(n[0]) ? n[k] : "other";
}

/* The fields of a metric, in output order: [0] exclusive value, [1]
 * inclusive, then the exclusive variant's min, mean, max and the
 * inclusive variant's. */
enum { NFIELDS = 8 };
static const char *const suffix[NFIELDS] = {
    "",       " (inc)",       " (min)",        " (mean)",
    " (max)", " (min) (inc)", " (mean) (inc)", " (max) (inc)"};

/* A pair's six statistics as CSV fields: ",min,mean,max" twice, each
 * number at most 24 bytes. */
#define STAT_TEXT (6 * 25 + 1)

/* Per metric of a derived formula, at most this many operands are
 * followed (as gpuprof_an_db_context_values does). */
#define MAX_OPS GPUPROF__AN_MAX_OPERANDS

typedef struct mstat {
    double min, mean, max;
} mstat;

/* What both exports share: the metrics, a row of values and the current
 * context's statistics. Metric ids: 0 .. measured-1 measured, then
 * derived ones, each after the metrics its formula uses. */
typedef struct xport {
    const gpuprof_an_db *db;
    uint32_t nm, measured;
    uint32_t npairs;
    uint32_t *incl, *excl; /* per pair: the two variants' ids */
    char **field;          /* per pair, NFIELDS names: "M", "M (inc)", ... */
    char **jkey;           /* the same as JSON keys: "\"M\": " */
    gpuprof__an_rows *rows;
    double *v;      /* the current row: every metric's value */
    uint8_t *has;   /* whether it counts for the statistics */
    uint32_t *ops;  /* a derived metric's operands, MAX_OPS per metric */
    uint32_t *nops; /* how many */
    mstat *st;      /* the current context's statistics, per metric */
    char *text;     /* the table: st as CSV fields, STAT_TEXT per pair */
    double *sum;    /* derived metrics' sums and counts, while computing */
    uint32_t *cnt;
    uint32_t at_p, at_c; /* the current row (table metrics read it) */
    uint8_t *used; /* per pair: some row has a non-zero value of it */
    uint8_t *noinc; /* per pair: no inclusive fields (NO_INCLUSIVE) */
    uint8_t *noexc; /* per pair: no exclusive fields (values measured
                       inclusive already: gpuprof__an_db_no_excl) */
    uint32_t *mcount; /* per metric: an odd sum's count metric, or none */
    bool rowstats;    /* some measured metric's statistics come from rows */
    uint32_t flags;   /* GPUPROF_AN_RUNTIME_FRAMES: the runtime's frames */
    bool stats;    /* Hatchet: the statistics fields too */
} xport;

static void x_free(xport *x)
{
    for (uint32_t i = 0; x->field && i < x->npairs * NFIELDS; i++) {
        free(x->field[i]);
        free(x->jkey[i]);
    }
    free(x->field);
    free(x->jkey);
    free(x->incl);
    free(x->excl);
    gpuprof__an_rows_free(x->rows);
    free(x->v);
    free(x->has);
    free(x->ops);
    free(x->nops);
    free(x->st);
    free(x->sum);
    free(x->cnt);
    free(x->text);
    free(x->used);
    free(x->noinc);
    free(x->noexc);
    free(x->mcount);
}

/* Every metric with both variants, named once (by its inclusive id). */
static gpuprof_status x_pairs(xport *x)
{
    for (uint32_t m = 0; m < x->nm; m++) {
        if (gpuprof_an_db_metric_variant(x->db, m) != GPUPROF_AN_INCLUSIVE)
            continue;
        const char *name = gpuprof_an_db_metric_name(x->db, m);
        uint32_t e;
        if (gpuprof_an_db_metric_find(x->db, name, GPUPROF_AN_EXCLUSIVE, &e) !=
            GPUPROF_OK)
            continue;
        uint32_t k = x->npairs++;
        x->incl[k] = m;
        x->excl[k] = e;
        x->noinc[k] = gpuprof__an_db_no_incl(x->db, m);
        x->noexc[k] = gpuprof__an_db_no_excl(x->db, m);
        size_t len = strlen(name) + 16, jlen;
        for (int i = 0; i < NFIELDS; i++) {
            char **f = &x->field[k * NFIELDS + i];
            char **j = &x->jkey[k * NFIELDS + i];
            FILE *ms;
            if (!(*f = malloc(len)) || !(ms = open_memstream(j, &jlen)))
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            snprintf(*f, len, "%s%s", name, suffix[i]);
            gpuprof__an_json_str(ms, *f);
            fputs(": ", ms);
            if (fclose(ms) != 0)
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        }
    }
    return GPUPROF_OK;
}

static gpuprof_status x_init(xport *x, const gpuprof_an_db *db)
{
    *x = (xport){.db = db};
    x->nm = gpuprof_an_db_metric_count(db);
    x->measured = gpuprof__an_db_measured(db);
    size_t nm = x->nm ? x->nm : 1, nd = x->nm - x->measured + 1;
    x->incl = malloc(nm * sizeof(*x->incl));
    x->excl = malloc(nm * sizeof(*x->excl));
    x->field = calloc(nm * NFIELDS, sizeof(*x->field));
    x->jkey = calloc(nm * NFIELDS, sizeof(*x->jkey));
    x->rows = gpuprof__an_rows_new(db);
    x->v = malloc(nm * sizeof(*x->v));
    x->has = malloc(nm);
    x->ops = malloc(nd * MAX_OPS * sizeof(*x->ops));
    x->nops = malloc(nd * sizeof(*x->nops));
    x->st = calloc(nm, sizeof(*x->st));
    x->sum = malloc(nm * sizeof(*x->sum));
    x->cnt = malloc(nm * sizeof(*x->cnt));
    x->text = malloc(nm * STAT_TEXT);
    x->used = calloc(nm, 1);
    x->noinc = calloc(nm, 1);
    x->noexc = calloc(nm, 1);
    x->mcount = malloc(nm * sizeof(*x->mcount));
    if (!x->noinc || !x->noexc || !x->mcount)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t m = 0; m < x->nm; m++) {
        x->mcount[m] = m < x->measured ? gpuprof__an_db_mean_of(db, m)
                                       : UINT32_MAX;
        x->rowstats |= x->mcount[m] != UINT32_MAX;
    }
    if (!x->used || !x->incl || !x->excl || !x->field || !x->jkey || !x->rows || !x->v ||
        !x->has || !x->ops || !x->nops || !x->st || !x->sum || !x->cnt ||
        !x->text)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t m = x->measured; m < x->nm; m++) {
        uint32_t d = m - x->measured;
        x->nops[d] = 0;
        if (gpuprof__an_db_formula(db, m)) /* else a table metric */
            x->nops[d] = gpuprof__an_formula_operands(
            gpuprof__an_db_formula(db, m),
            gpuprof_an_db_metric_variant(db, m) == GPUPROF_AN_EXCLUSIVE,
            x->ops + (size_t)d * MAX_OPS, MAX_OPS);
    }
    return x_pairs(x);
}

/* Metric m's value in the current row as shown: an odd sum's mean. */
static double x_shown(const xport *x, uint32_t m)
{
    uint32_t c = x->mcount[m];
    return c == UINT32_MAX ? x->v[m] : gpuprof__an_mean(x->v[m], x->v[c]);
}

/* Statistics of metric m from the rows (derived metrics, odd sums)? */
static bool rowstat(const xport *x, uint32_t m)
{
    return m >= x->measured || x->mcount[m] != UINT32_MAX;
}

static double row_fetch(void *arg, uint32_t m)
{
    const xport *x = arg;
    return m < x->nm ? x->v[m] : 0;
}

/* Completes the row in x->v (measured values filled): the derived
 * metrics' values, in id order (each uses earlier ones only), and which
 * values count for statistics: non-zero, and for a derived metric only
 * where one of its operands counts (gpuprof_an_db_context_values). */
static void x_row(xport *x)
{
    for (uint32_t m = 0; m < x->measured; m++)
        x->has[m] = x->v[m] != 0;
    for (uint32_t m = x->measured; m < x->nm; m++) {
        uint32_t d = m - x->measured;
        if (!gpuprof__an_db_formula(x->db, m)) { /* a table metric */
            x->v[m] = gpuprof_an_db_value(x->db, x->at_p, x->at_c, m);
            x->has[m] = x->v[m] != 0;
            continue;
        }
        x->v[m] = gpuprof__an_formula_eval(
            gpuprof__an_db_formula(x->db, m),
            gpuprof_an_db_metric_variant(x->db, m) == GPUPROF_AN_EXCLUSIVE,
            row_fetch, x);
        bool any = false;
        for (uint32_t i = 0; i < x->nops[d] && !any; i++)
            any = x->has[x->ops[(size_t)d * MAX_OPS + i]];
        x->has[m] = any && x->v[m] != 0;
    }
}

/* Marks the pairs that some row fills (a non-zero value of either
 * variant): one pass over cct.db, so that the exports leave out the
 * metrics nothing measured. */
static void x_used(xport *x)
{
    uint32_t p, left = x->npairs;
    for (uint32_t c = 0; left && c < gpuprof_an_db_context_count(x->db); c++) {
        gpuprof__an_rows_start(x->rows, c);
        while (left && gpuprof__an_rows_next(x->rows, &p, x->v)) {
            x->at_p = p;
            x->at_c = c;
            x_row(x);
            for (uint32_t k = 0; k < x->npairs; k++)
                if (!x->used[k] &&
                    (x->v[x->excl[k]] != 0 || x->v[x->incl[k]] != 0)) {
                    x->used[k] = 1;
                    left--;
                }
        }
    }
}

/* The statistics of every metric at context c into x->st. */
static void x_stats(xport *x, uint32_t c)
{
    for (uint32_t m = 0; m < x->measured; m++)
        x->st[m] =
            (mstat){gpuprof_an_db_stat(x->db, c, m, GPUPROF_AN_STAT_MIN),
                    gpuprof_an_db_stat(x->db, c, m, GPUPROF_AN_STAT_MEAN),
                    gpuprof_an_db_stat(x->db, c, m, GPUPROF_AN_STAT_MAX)};
    if (x->nm == x->measured && !x->rowstats)
        return;
    for (uint32_t m = 0; m < x->nm; m++) {
        if (!rowstat(x, m))
            continue;
        x->st[m] = (mstat){0, 0, 0};
        x->sum[m] = 0;
        x->cnt[m] = 0;
    }
    uint32_t p;
    gpuprof__an_rows_start(x->rows, c);
    while (gpuprof__an_rows_next(x->rows, &p, x->v)) {
        x->at_p = p;
        x->at_c = c;
        x_row(x);
        for (uint32_t m = 0; m < x->nm; m++) {
            if (!rowstat(x, m) || !x->has[m])
                continue;
            double v = x_shown(x, m);
            mstat *s = &x->st[m];
            s->min = !x->cnt[m] || v < s->min ? v : s->min;
            s->max = !x->cnt[m] || v > s->max ? v : s->max;
            x->sum[m] += v;
            x->cnt[m]++;
        }
    }
    for (uint32_t m = 0; m < x->nm; m++)
        if (rowstat(x, m))
            x->st[m].mean = x->cnt[m] ? x->sum[m] / x->cnt[m] : 0;
}

/* Pair k's fields: the two values, then the statistics. */
static void x_values(const xport *x, uint32_t k, double out[NFIELDS],
                     double excl, double incl)
{
    const mstat *e = &x->st[x->excl[k]], *i = &x->st[x->incl[k]];
    double f[NFIELDS] = {excl,   incl,   e->min,  e->mean,
                         e->max, i->min, i->mean, i->max};
    memcpy(out, f, sizeof(f));
}

/* Field i of pair k is left out (an inclusive one of a metric without
 * meaningful inclusive values, an exclusive one of a metric measured
 * inclusive)? */
static bool x_skip(const xport *x, uint32_t k, int i)
{
    return (x->noinc[k] && (i == 1 || i >= 5)) ||
           (x->noexc[k] && (i == 0 || (i >= 2 && i <= 4)));
}

/* Metric m's sum over profiles at context c as shown (an odd sum's mean). */
static double x_sum(const xport *x, uint32_t c, uint32_t m)
{
    double v = gpuprof_an_db_stat(x->db, c, m, GPUPROF_AN_STAT_SUM);
    uint32_t n = x->mcount[m];
    return n == UINT32_MAX
               ? v
               : gpuprof__an_mean(
                     v, gpuprof_an_db_stat(x->db, c, n, GPUPROF_AN_STAT_SUM));
}

/* ---- Hatchet ----------------------------------------------------------- */
/* What Hatchet's literal reader (GraphFrame.from_literal) needs beyond
 * the format's shape, read from its documentation and source:
 *   - a node is made per distinct frame: a frame equal to one seen before
 *     anywhere in the tree ({"name": "<kernel launch>", "type": "gpu op"}
 *     beneath two call sites) is taken as that same node, with the first
 *     one's metrics, and the tree becomes a graph. Every frame here has a
 *     "callpath" too: a hash of the names from the root (and of its rank
 *     among siblings of the same name), unique in the tree and the same
 *     in every run of the program, so that two runs' nodes still match
 *     (GraphFrame subtraction);
 *   - the metric names are those of the root's "metrics", and a name
 *     holding "(inc)" is an inclusive one;
 *   - gf.tree() with no metric_column shows the GraphFrame's default
 *     metric, which from_literal leaves at "time": without a field "time"
 *     it fails (KeyError). So the time metric the export leads with
 *     (below) is also written as "time" and "time (inc)". */
typedef struct htree {
    uint32_t *first, *next; /* the shown tree's children, context order */
    uint64_t *id;           /* per context: its "callpath" */
    uint8_t *keep;          /* per context: written (--metric prunes) */
    uint32_t flags;         /* GPUPROF_AN_RUNTIME_FRAMES */
    uint32_t time;          /* the pair written as "time", or UINT32_MAX */
} htree;

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return (h ^ 0x1f) * 0x100000001b3ull; /* a separator */
}

static void hatchet_node(xport *x, const htree *t, FILE *out, uint32_t c,
                         uint32_t depth)
{
    char label[48];
    const char *name = gpuprof__an_context_label(x->db, c, t->flags, label,
                                                 sizeof(label));
    const char *bin = gpuprof_an_db_context_binary(x->db, c);
    gpuprof_an_node_kind kind = gpuprof_an_db_context_kind(x->db, c);
    fprintf(out, "\n%*s{\"frame\": {\"name\": ", (int)(depth < 64 ? depth : 64),
            "");
    gpuprof__an_json_str(out, name);
    fprintf(out, ", \"type\": \"%s\", \"callpath\": \"%016" PRIx64 "\"}, ",
            kind_name(kind), t->id[c]);
    if (bin) {
        fputs("\"binary\": ", out);
        gpuprof__an_json_str(out, bin);
        fputs(", ", out);
    }
    fputs("\"metrics\": {", out);
    if (x->stats)
        x_stats(x, c);
    bool first = true;
    if (t->time != UINT32_MAX) {
        fputs("\"time\": ", out);
        gpuprof__an_num(out, x_sum(x, c, x->excl[t->time]), "null");
        fputs(", \"time (inc)\": ", out);
        gpuprof__an_num(out, x_sum(x, c, x->incl[t->time]), "null");
        first = false;
    }
    for (uint32_t k = 0; k < x->npairs; k++) {
        if (!x->used[k])
            continue;
        double f[NFIELDS];
        x_values(x, k, f, x_sum(x, c, x->excl[k]), x_sum(x, c, x->incl[k]));
        for (int i = 0; i < (x->stats ? NFIELDS : 2); i++) {
            if (x_skip(x, k, i))
                continue;
            fputs(first ? "" : ", ", out);
            first = false;
            fputs(x->jkey[k * NFIELDS + i], out);
            gpuprof__an_num(out, f[i], "null");
        }
    }
    fputs("}, \"children\": [", out);
}

/* The next written sibling after c (UINT32_MAX: none). */
static uint32_t next_kept(const htree *t, uint32_t c)
{
    do
        c = t->next[c];
    while (c != UINT32_MAX && !t->keep[c]);
    return c;
}

static uint32_t first_kept(const htree *t, uint32_t c)
{
    c = t->first[c];
    return c == UINT32_MAX || t->keep[c] ? c : next_kept(t, c);
}

/* Depth first, children in context order, without recursion: down through
 * first[], across through next[], up through the shown parents. */
static void hatchet_tree(xport *x, const htree *t, FILE *out)
{
    uint32_t c = 0, depth = 0;
    hatchet_node(x, t, out, 0, 0);
    for (;;) {
        uint32_t down = first_kept(t, c);
        if (down != UINT32_MAX) {
            c = down;
            hatchet_node(x, t, out, c, ++depth);
            continue;
        }
        /* c and all beneath it are written: close it, and each ancestor
         * whose last child it was. */
        for (;;) {
            fputs("]}", out);
            if (c == 0)
                return;
            if (next_kept(t, c) != UINT32_MAX)
                break;
            c = gpuprof__an_db_up(x->db, c, t->flags);
            depth--;
        }
        c = next_kept(t, c);
        fputs(",", out);
        hatchet_node(x, t, out, c, depth);
    }
}

/* Keeps the pairs named in metrics[0..n) (all when n is 0). */
static gpuprof_status x_choose(xport *x, const char *const *metrics,
                               uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m;
        if (!metrics[i] || gpuprof_an_db_metric_find(x->db, metrics[i],
                                                     GPUPROF_AN_INCLUSIVE,
                                                     &m) != GPUPROF_OK)
            return gpuprof__an_fail(GPUPROF_E_NOTFOUND, "no metric %s",
                                    metrics[i] ? metrics[i] : "(null)");
    }
    for (uint32_t k = 0; n && k < x->npairs; k++) {
        const char *name = gpuprof_an_db_metric_name(x->db, x->incl[k]);
        bool named = false;
        for (uint32_t i = 0; i < n && !named; i++)
            named = !strcmp(name, metrics[i]);
        x->used[k] = x->used[k] && named;
    }
    return GPUPROF_OK;
}

/* Pair k can be written as "time": a time with both variants. */
static bool time_ok(const xport *x, uint32_t k)
{
    return k < x->npairs && x->used[k] && !x->noinc[k] && !x->noexc[k] &&
           gpuprof_an_db_metric_unit(x->db, x->incl[k]) == GPUPROF_AN_UNIT_NS;
}

static uint32_t pair_named(const xport *x, const char *name)
{
    for (uint32_t k = 0; k < x->npairs; k++)
        if (!strcmp(gpuprof_an_db_metric_name(x->db, x->incl[k]), name))
            return k;
    return UINT32_MAX;
}

/* The pair written as "time" (UINT32_MAX: none, or a metric named "time"
 * is written): the first of the metrics named that is a time, else (none
 * named) gpu.time, cpu.time or region.time.excl, the first of them
 * written, else any time written. */
static uint32_t time_pair(const xport *x, const char *const *metrics,
                          uint32_t n)
{
    static const char *const pref[] = {"gpu.time", "cpu.time",
                                       "region.time.excl"};
    uint32_t own = pair_named(x, "time");
    if (own != UINT32_MAX && x->used[own])
        return UINT32_MAX; /* a metric of that name is written anyway */
    for (uint32_t i = 0; i < n; i++)
        if (time_ok(x, pair_named(x, metrics[i])))
            return pair_named(x, metrics[i]);
    for (uint32_t i = 0; !n && i < 3; i++)
        if (time_ok(x, pair_named(x, pref[i])))
            return pair_named(x, pref[i]);
    for (uint32_t k = 0; !n && k < x->npairs; k++)
        if (time_ok(x, k))
            return k;
    return UINT32_MAX;
}

/* Whether context c has a non-zero value of a written metric. */
static bool has_value(const xport *x, uint32_t c)
{
    for (uint32_t k = 0; k < x->npairs; k++)
        if (x->used[k] && (gpuprof_an_db_stat(x->db, c, x->excl[k],
                                              GPUPROF_AN_STAT_SUM) != 0 ||
                           gpuprof_an_db_stat(x->db, c, x->incl[k],
                                              GPUPROF_AN_STAT_SUM) != 0))
            return true;
    return false;
}

/* The shown tree: children lists (context order: linked back to front),
 * callpath ids (parents first) and which contexts are written: with
 * `prune`, those with a value of a written metric or beneath which one
 * is (children first). */
static gpuprof_status htree_build(const xport *x, htree *t, bool prune)
{
    uint32_t n = gpuprof_an_db_context_count(x->db);
    size_t sz = n ? n : 1;
    t->first = malloc(sz * sizeof(*t->first));
    t->next = malloc(sz * sizeof(*t->next));
    t->id = malloc(sz * sizeof(*t->id));
    t->keep = malloc(sz);
    uint32_t mask = 1;
    while (mask < 2 * n)
        mask <<= 1;
    uint64_t *seen = calloc(mask, sizeof(*seen)); /* ids so far */
    uint32_t *same = calloc(mask, sizeof(*same)); /* per id: how many */
    if (!t->first || !t->next || !t->id || !t->keep || !same || !seen) {
        free(same);
        free(seen);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    for (uint32_t c = 0; c < n; c++) {
        t->first[c] = t->next[c] = UINT32_MAX;
        t->keep[c] = !gpuprof__an_db_hidden(x->db, c, t->flags) &&
                     (!prune || c == 0 || has_value(x, c));
    }
    for (uint32_t c = n; c-- > 1;) {
        if (gpuprof__an_db_hidden(x->db, c, t->flags))
            continue;
        uint32_t p = gpuprof__an_db_up(x->db, c, t->flags);
        t->next[c] = t->first[p];
        t->first[p] = c;
        t->keep[p] |= t->keep[c];
    }
    for (uint32_t c = 0; c < n; c++) {
        char label[48];
        uint64_t h = fnv(c ? t->id[gpuprof__an_db_up(x->db, c, t->flags)]
                           : 0xcbf29ce484222325ull,
                         gpuprof__an_context_label(x->db, c, t->flags, label,
                                                   sizeof(label)));
        /* A sibling of the same name before: this one's rank too. */
        uint32_t j = (uint32_t)(h >> 32) & (mask - 1);
        while (seen[j] && seen[j] != h)
            j = (j + 1) & (mask - 1);
        if (seen[j]) {
            char rank[24];
            snprintf(rank, sizeof(rank), "#%" PRIu32, ++same[j]);
            h = fnv(h, rank);
        } else {
            seen[j] = h;
        }
        t->id[c] = h;
    }
    free(same);
    free(seen);
    return GPUPROF_OK;
}

static void htree_free(htree *t)
{
    free(t->first);
    free(t->next);
    free(t->id);
    free(t->keep);
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_db_export_hatchet(const gpuprof_an_db *db, FILE *out, uint32_t flags)
{
    return gpuprof_an_db_export_hatchet_metrics(db, out, NULL, 0, flags);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_hatchet_metrics(
    const gpuprof_an_db *db, FILE *out, const char *const *metrics,
    uint32_t nmetrics, uint32_t flags)
{
    if (!db || !out ||
        (flags & ~(GPUPROF_AN_HATCHET_STATS | GPUPROF_AN_RUNTIME_FRAMES)) ||
        (nmetrics && !metrics))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    xport x;
    htree t = {.flags = flags & GPUPROF_AN_RUNTIME_FRAMES};
    gpuprof_status st = x_init(&x, db);
    x.stats = flags & GPUPROF_AN_HATCHET_STATS;
    if (st == GPUPROF_OK) {
        x_used(&x);
        st = x_choose(&x, metrics, nmetrics);
    }
    if (st == GPUPROF_OK)
        st = htree_build(&x, &t, nmetrics > 0);
    if (st == GPUPROF_OK) {
        t.time = time_pair(&x, metrics, nmetrics);
        fputs("[", out);
        hatchet_tree(&x, &t, out);
        fputs("\n]\n", out);
        if (ferror(out))
            st = gpuprof__an_fail(GPUPROF_E_IO, "write error");
    }
    htree_free(&t);
    x_free(&x);
    return st;
}

/* ---- the table ----------------------------------------------------------- */
static void table_header(const xport *x, FILE *out)
{
    fputs("context,parent,kind,name,binary,profile,host,rank,pid,tid,thread",
          out);
    for (uint32_t i = 0; i < x->npairs * NFIELDS; i++) {
        if (!x->used[i / NFIELDS] || x_skip(x, i / NFIELDS, (int)(i % NFIELDS)))
            continue;
        fputs(",", out);
        gpuprof__an_csv_str(out, x->field[i]);
    }
    fputs("\n", out);
}

/* The context's statistics as CSV text, once per context rather than
 * per row (most of a row's numbers are these). */
static void table_stats(xport *x)
{
    for (uint32_t k = 0; k < x->npairs; k++) {
        double f[NFIELDS];
        char *t = x->text + (size_t)k * STAT_TEXT;
        x_values(x, k, f, 0, 0);
        for (int i = 2; i < NFIELDS; i++) {
            if (x_skip(x, k, i))
                continue;
            *t++ = ',';
            if (isfinite(f[i]))
                gpuprof__an_fmt_num(t, 25, f[i]);
            else
                *t = '\0';
            t += strlen(t);
        }
    }
}

/* Profile p's row at context c (x->v holds its values, x->text the
 * context's statistics). */
static void table_row(const xport *x, FILE *out, uint32_t c, uint32_t p)
{
    const gpuprof_an_db *db = x->db;
    char label[48];
    uint32_t parent = gpuprof__an_db_up(db, c, x->flags);
    const char *bin = gpuprof_an_db_context_binary(db, c);
    fprintf(out, "%" PRIu32 ",", c);
    if (parent != UINT32_MAX)
        fprintf(out, "%" PRIu32, parent);
    fprintf(out, ",%s,", kind_name(gpuprof_an_db_context_kind(db, c)));
    gpuprof__an_csv_str(out, gpuprof__an_context_label(db, c, x->flags, label,
                                                       sizeof(label)));
    fputs(",", out);
    if (bin)
        gpuprof__an_csv_str(out, bin);
    fprintf(out, ",%" PRIu32 ",", p);
    gpuprof__an_csv_str(out, gpuprof_an_db_profile_host(db, p));
    fprintf(out, ",%" PRId32 ",%" PRIu32 ",%" PRIu64 ",",
            gpuprof_an_db_profile_rank(db, p), gpuprof_an_db_profile_pid(db, p),
            gpuprof_an_db_profile_tid(db, p));
    gpuprof__an_csv_str(out, gpuprof_an_db_profile_thread_name(db, p));
    for (uint32_t k = 0; k < x->npairs; k++) {
        if (!x->used[k])
            continue;
        if (!x->noexc[k]) {
            fputs(",", out);
            gpuprof__an_num(out, x_shown(x, x->excl[k]), "");
        }
        if (!x->noinc[k]) {
            fputs(",", out);
            gpuprof__an_num(out, x_shown(x, x->incl[k]), "");
        }
        fputs(x->text + (size_t)k * STAT_TEXT, out);
    }
    fputs("\n", out);
}

/* Profile p's long rows at context c: "context,profile,metric,value" per
 * non-zero value, exclusive ("M") before inclusive ("M (inc)"). */
static void table_long_rows(const xport *x, FILE *out, uint32_t c, uint32_t p)
{
    for (uint32_t k = 0; k < x->npairs; k++)
        for (int i = 0; i < 2; i++) {
            double v = x_shown(x, i ? x->incl[k] : x->excl[k]);
            if (v == 0 || x_skip(x, k, i))
                continue;
            fprintf(out, "%" PRIu32 ",%" PRIu32 ",", c, p);
            gpuprof__an_csv_str(out, x->field[k * NFIELDS + i]);
            fputs(",", out);
            gpuprof__an_num(out, v, "");
            fputs("\n", out);
        }
}

static void table_long(xport *x, FILE *out)
{
    fputs("context,profile,metric,value\n", out);
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(x->db); c++) {
        uint32_t p;
        if (gpuprof__an_db_hidden(x->db, c, x->flags))
            continue; /* no value of its own: its children's */
        gpuprof__an_rows_start(x->rows, c);
        while (gpuprof__an_rows_next(x->rows, &p, x->v)) {
            x->at_p = p;
            x->at_c = c;
            x_row(x);
            table_long_rows(x, out, c, p);
        }
    }
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_db_export_table(const gpuprof_an_db *db, FILE *out, uint32_t flags)
{
    if (!db || !out ||
        (flags & ~(GPUPROF_AN_TABLE_LONG | GPUPROF_AN_RUNTIME_FRAMES)))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    xport x;
    gpuprof_status st = x_init(&x, db);
    x.flags = flags & GPUPROF_AN_RUNTIME_FRAMES;
    if (st == GPUPROF_OK && (flags & GPUPROF_AN_TABLE_LONG)) {
        table_long(&x, out);
    } else if (st == GPUPROF_OK) {
        x_used(&x);
        table_header(&x, out);
        for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++) {
            if (gpuprof__an_db_hidden(db, c, x.flags))
                continue; /* no value of its own: its children's */
            x_stats(&x, c);
            table_stats(&x);
            uint32_t p;
            gpuprof__an_rows_start(x.rows, c);
            while (gpuprof__an_rows_next(x.rows, &p, x.v)) {
                x.at_p = p;
                x.at_c = c;
                x_row(&x);
                table_row(&x, out, c, p);
            }
        }
        if (ferror(out))
            st = gpuprof__an_fail(GPUPROF_E_IO, "write error");
    }
    x_free(&x);
    return st;
}
