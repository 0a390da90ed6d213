/*
 * an_export_hatchet.c - an analysis database as JSON that Python tools
 * load:
 *   - Hatchet's literal format (LLNL hatchet, GraphFrame.from_literal): a
 *     list with one root, each node {"frame": {"name", "type", "context"},
 *     "metrics": {"M": exclusive sum, "M (inc)": inclusive sum, ...},
 *     "children": [...]}; every context of the database is one node;
 *   - a table for pandas (pandas.read_csv): one row per (context, profile)
 *     with a value, the context's identity, the profile's, and each
 *     metric's inclusive and exclusive value.
 * Both are written as they go; the tree is walked with an explicit stack
 * (calling context trees can be deep).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static const char *kind_name(gpuprof_an_node_kind k)
{
    static const char *const n[] = {"root",   "region",   "frame",
                                     "gpu op", "kernel",   "gpu instruction",
                                     "function", "inlined", "line"};
    return (unsigned)k < sizeof(n) / sizeof(n[0]) ? n[k] : "other";
}

/* A number as JSON (no NaN or infinity there: null). */
static void jnum(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.17g", v);
}

/* The measured metrics (inclusive ids): name -> both variants. */
typedef struct mpair {
    const char *name;
    uint32_t incl, excl;
} mpair;

static uint32_t metric_pairs(const gpuprof_an_db *db, mpair *out)
{
    uint32_t n = 0;
    for (uint32_t m = 0; m < gpuprof_an_db_metric_count(db); m++) {
        if (gpuprof_an_db_metric_variant(db, m) != GPUPROF_AN_INCLUSIVE)
            continue;
        const char *name = gpuprof_an_db_metric_name(db, m);
        uint32_t e;
        if (gpuprof_an_db_metric_find(db, name, GPUPROF_AN_EXCLUSIVE, &e) ==
            GPUPROF_OK)
            out[n++] = (mpair){name, m, e};
    }
    return n;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_hatchet(
    const gpuprof_an_db *db, FILE *out, uint32_t flags)
{
    if (!db || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    uint32_t n = gpuprof_an_db_context_count(db);
    uint32_t nm = gpuprof_an_db_metric_count(db);
    uint32_t *first = malloc((n ? n : 1) * sizeof(*first));
    uint32_t *next = malloc((n ? n : 1) * sizeof(*next));
    uint32_t *stack = malloc((n ? n : 1) * sizeof(*stack));
    mpair *mp = malloc((nm ? nm : 1) * sizeof(*mp));
    if (!first || !next || !stack || !mp) {
        free(first);
        free(next);
        free(stack);
        free(mp);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    uint32_t np = metric_pairs(db, mp);
    /* Children in context order: linked back to front. */
    for (uint32_t c = 0; c < n; c++)
        first[c] = next[c] = UINT32_MAX;
    for (uint32_t c = n; c-- > 1;) {
        uint32_t p = gpuprof_an_db_context_parent(db, c);
        next[c] = first[p];
        first[p] = c;
    }
    fputs("[", out);
    uint32_t depth = 0;
    if (n)
        stack[depth++] = 0;
    bool opened = false; /* the top of the stack was written */
    while (depth) {
        uint32_t c = stack[depth - 1];
        if (!opened) {
            fprintf(out, "\n%*s{\"frame\": {\"name\": ", (int)(depth - 1) % 64,
                    "");
            gpuprof__an_json_str(out, gpuprof_an_db_context_name(db, c));
            fprintf(out, ", \"type\": \"%s\", \"context\": %" PRIu32
                    "}, \"metrics\": {",
                    kind_name(gpuprof_an_db_context_kind(db, c)), c);
            for (uint32_t k = 0; k < np; k++) {
                fputs(k ? ", " : "", out);
                gpuprof__an_json_str(out, mp[k].name);
                fputs(": ", out);
                jnum(out, gpuprof_an_db_stat(db, c, mp[k].excl,
                                             GPUPROF_AN_STAT_SUM));
                fputs(", ", out);
                char inc[300];
                snprintf(inc, sizeof(inc), "%s (inc)", mp[k].name);
                gpuprof__an_json_str(out, inc);
                fputs(": ", out);
                jnum(out, gpuprof_an_db_stat(db, c, mp[k].incl,
                                             GPUPROF_AN_STAT_SUM));
            }
            fputs("}, \"children\": [", out);
            if (first[c] != UINT32_MAX) {
                stack[depth++] = first[c]; /* descend */
                continue;
            }
        }
        /* c is done: close it, then its next sibling or its parent. */
        fputs("]}", out);
        depth--;
        opened = false;
        if (depth && next[c] != UINT32_MAX) {
            fputs(",", out);
            stack[depth++] = next[c];
        } else if (depth) {
            opened = true; /* the parent: its children are written */
        }
    }
    fputs("\n]\n", out);
    free(first);
    free(next);
    free(stack);
    free(mp);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    putc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            putc('"', f);
        putc(*s, f);
    }
    putc('"', f);
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_table(
    const gpuprof_an_db *db, FILE *out, uint32_t flags)
{
    if (!db || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    uint32_t n = gpuprof_an_db_context_count(db);
    uint32_t nm = gpuprof_an_db_metric_count(db);
    uint32_t nprof = gpuprof_an_db_profile_count(db);
    mpair *mp = malloc((nm ? nm : 1) * sizeof(*mp));
    uint32_t *pl = malloc((nprof ? nprof : 1) * sizeof(*pl));
    uint8_t *has = malloc(nprof ? nprof : 1);
    if (!mp || !pl || !has) {
        free(mp);
        free(pl);
        free(has);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    uint32_t np = metric_pairs(db, mp);
    fputs("context,parent,kind,name,profile,host,rank,pid,tid,thread", out);
    for (uint32_t k = 0; k < np; k++) {
        fputs(",", out);
        csv_str(out, mp[k].name);
        fputs(",", out);
        char inc[300];
        snprintf(inc, sizeof(inc), "%s (inc)", mp[k].name);
        csv_str(out, inc);
    }
    fputs("\n", out);
    for (uint32_t c = 0; c < n; c++) {
        /* The profiles with any value here (inclusive values cover the
         * exclusive ones of additive metrics; both are looked at). */
        memset(has, 0, nprof ? nprof : 1);
        for (uint32_t k = 0; k < np; k++)
            for (int v = 0; v < 2; v++) {
                uint32_t got = gpuprof_an_db_context_values(
                    db, c, v ? mp[k].excl : mp[k].incl, pl, NULL, nprof);
                for (uint32_t i = 0; i < got && i < nprof; i++)
                    has[pl[i]] = 1;
            }
        uint32_t parent = gpuprof_an_db_context_parent(db, c);
        for (uint32_t p = 0; p < nprof; p++) {
            if (!has[p])
                continue;
            fprintf(out, "%" PRIu32 ",", c);
            if (parent != UINT32_MAX)
                fprintf(out, "%" PRIu32, parent);
            fprintf(out, ",%s,", kind_name(gpuprof_an_db_context_kind(db, c)));
            csv_str(out, gpuprof_an_db_context_name(db, c));
            fprintf(out, ",%" PRIu32 ",", p);
            csv_str(out, gpuprof_an_db_profile_host(db, p));
            fprintf(out, ",%" PRId32 ",%" PRIu32 ",%" PRIu64 ",",
                    gpuprof_an_db_profile_rank(db, p),
                    gpuprof_an_db_profile_pid(db, p),
                    gpuprof_an_db_profile_tid(db, p));
            csv_str(out, gpuprof_an_db_profile_thread_name(db, p));
            for (uint32_t k = 0; k < np; k++) {
                fputs(",", out);
                jnum(out, gpuprof_an_db_value(db, p, c, mp[k].excl));
                fputs(",", out);
                jnum(out, gpuprof_an_db_value(db, p, c, mp[k].incl));
            }
            fputs("\n", out);
        }
    }
    free(mp);
    free(pl);
    free(has);
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}
