/*
 * report.c - the trace analysis as text (gpuprof_an_cpath_print_*):
 * `gpuprof report --waits` (wait states by kind, then the most blamed
 * activities by name), `gpuprof report --critical-path` (one line per
 * activity on the path: where it ran, its name and share, then each name's
 * rating: its share of the path plus its share of the blame, seed 004
 * §4.3) and `gpuprof project` (the projected run against the measured).
 * Only public accessors are used.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

typedef struct rated {
    char *name;
    uint64_t path_ns, blame_ns;
    double rating; /* set before sorting by it */
} rated;

typedef struct ratings {
    rated *r;
    uint32_t n, cap;
} ratings;

static rated *rating_of(ratings *v, const char *name)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (!strcmp(v->r[i].name, name))
            return &v->r[i];
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 32;
        rated *n = realloc(v->r, cap * sizeof(*n));
        if (!n)
            return NULL;
        v->r = n;
        v->cap = cap;
    }
    rated *x = &v->r[v->n];
    *x = (rated){strdup(name), 0, 0, 0};
    if (!x->name)
        return NULL;
    v->n++;
    return x;
}

static void ratings_free(ratings *v)
{
    for (uint32_t i = 0; i < v->n; i++)
        free(v->r[i].name);
    free(v->r);
}

/* gpuprof__an_cpath_blames' callback: blame by name. */
static void add_blame(void *arg, const char *name, uint64_t ns)
{
    rated *r = rating_of(arg, name);
    if (r)
        r->blame_ns += ns;
}

static int by_rating(const void *x, const void *y)
{
    const rated *a = x, *b = y;
    if (a->rating != b->rating)
        return a->rating > b->rating ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Where a step ran: "[rank R ]GPU d/s", "[rank R ]<thread name>". */
static void where(const gpuprof_an_db *db, const gpuprof_an_path_step *s,
                  char *buf, size_t size)
{
    const char *t = s->profile < gpuprof_an_db_profile_count(db)
                        ? gpuprof_an_db_profile_thread_name(db, s->profile)
                        : NULL;
    char r[24] = "";
    if (s->rank >= 0)
        snprintf(r, sizeof(r), "rank %d ", s->rank);
    if (s->kind == GPUPROF_AN_ACTIVITY_GPU)
        snprintf(buf, size, "%sGPU %u/%u", r, s->device, s->stream);
    else if (t && *t)
        snprintf(buf, size, "%s%s", r, t);
    else
        snprintf(buf, size, "%sthread %u", r, s->profile);
}

/* "process P" or, for an MPI run, "process P (N MPI ranks)". */
static const char *entry(const gpuprof_an_cpath *cp, uint32_t i, char *buf,
                         size_t size)
{
    uint32_t r = gpuprof_an_cpath_rank_count(cp, i);
    if (r)
        snprintf(buf, size, "process %u (%u MPI ranks)",
                 gpuprof_an_cpath_process(cp, i), r);
    else
        snprintf(buf, size, "process %u", gpuprof_an_cpath_process(cp, i));
    return buf;
}

static const char *pct(char *buf, size_t size, uint64_t part, uint64_t whole)
{
    snprintf(buf, size, "%5.1f%%", whole ? 100.0 * (double)part / (double)whole
                                          : 0.0);
    return buf;
}

/* Entry i's one note on the MPI records its joining left out, and one on
 * the host records its graph left out, if any. */
static void left_note(const gpuprof_an_cpath *cp, uint32_t i, FILE *out)
{
    char why[1024], e[64];
    uint64_t n = gpuprof_an_cpath_mpi_left_out(cp, i, why, sizeof(why));
    if (n)
        fprintf(out, "note, %s: %" PRIu64 " MPI record(s) left out, their "
                "edges missing, the rest joined: %s\n",
                entry(cp, i, e, sizeof(e)), n, why);
    n = gpuprof__an_cpath_host_left(cp, i);
    if (n)
        fprintf(out, "note, %s: %" PRIu64 " host record(s) left out: made "
                "inside another call of their thread (a callback run by a "
                "runtime in its API call)\n",
                entry(cp, i, e, sizeof(e)), n);
}

/* Beneath a CPU step that CPU samples saw: the procedures they were in,
 * the first three with their shares of the samples' time. */
static void sampled_line(const gpuprof_an_db *db, const gpuprof_an_cpath *cp,
                         const gpuprof_an_path_step *s, FILE *out)
{
    gpuprof_an_sampled few[16], *v = few;
    uint32_t n = gpuprof_an_cpath_step_samples(cp, s, few, 16), all = 0;
    if (!n)
        return;
    if (n > 16 && (v = malloc(n * sizeof(*v))) != NULL &&
        gpuprof_an_cpath_step_samples(cp, s, v, n) != n) {
        free(v);
        v = NULL;
    }
    uint64_t total = 0;
    for (uint32_t k = 0; v && k < n; k++)
        total += v[k].ns, all += v[k].samples;
    const gpuprof_an_sampled *top = v ? v : few;
    fprintf(out, "  %12s %12s %6s  %-16s   sampled (%u):", "", "", "", "",
            all);
    for (uint32_t k = 0; k < n && k < 3; k++) {
        char c[16];
        const char *name = top[k].context < gpuprof_an_db_context_count(db)
                               ? gpuprof_an_db_context_name(db, top[k].context)
                               : "<unknown>";
        fprintf(out, "%s %.40s %s", k ? "," : "", name,
                pct(c, sizeof(c), top[k].ns, total));
    }
    fputs(n > 3 ? ", ...\n" : "\n", out);
    if (v != few)
        free(v);
}

/* One process's path: a line per step, then the ratings of its names. */
static int print_process(const gpuprof_an_cpath *cp, const gpuprof_an_db *db,
                         uint32_t i, FILE *out, ratings *rv)
{
    uint64_t len = gpuprof_an_cpath_length(cp, i),
             run = gpuprof_an_cpath_run_ns(cp, i);
    uint64_t n = gpuprof_an_cpath_steps(cp, i, 0, NULL, 0), t0 = 0;
    char a[32], b[32], c[16], w[80], name[512], e[64];
    gpuprof__an_fmt_ns(a, sizeof(a), len);
    gpuprof__an_fmt_ns(b, sizeof(b), run);
    fprintf(out, "critical path, %s: %s of a %s run, %" PRIu64
            " activities\n", entry(cp, i, e, sizeof(e)), a, b, n);
    left_note(cp, i, out);
    fprintf(out, "  %12s %12s %6s  %-16s %s\n", "at", "on path", "share",
            "where", "activity");
    for (uint64_t k = 0; k < n; k++) {
        gpuprof_an_path_step s;
        gpuprof_an_cpath_steps(cp, i, k, &s, 1);
        if (!k)
            t0 = s.path_from_ns;
        gpuprof__an_fmt_ns(a, sizeof(a), s.path_from_ns - t0);
        gpuprof__an_fmt_ns(b, sizeof(b), s.path_ns);
        where(db, &s, w, sizeof(w));
        gpuprof_an_cpath_step_name(cp, &s, name, sizeof(name));
        fprintf(out, "  %12s %12s %s  %-16s %s\n", a, b,
                pct(c, sizeof(c), s.path_ns, len), w, name);
        sampled_line(db, cp, &s, out);
        rated *r = rv ? rating_of(rv, name) : NULL;
        if (r)
            r->path_ns += s.path_ns;
    }
    return ferror(out) ? -1 : 0;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_path(
    const gpuprof_an_cpath *cp, FILE *out, uint32_t flags)
{
    if (!cp || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    const gpuprof_an_db *db = gpuprof__an_cpath_db(cp);
    for (uint32_t i = 0; i < gpuprof_an_cpath_process_count(cp); i++) {
        ratings rv = {0};
        print_process(cp, db, i, out, &rv);
        gpuprof__an_cpath_blames(cp, i, add_blame, &rv);
        uint64_t len = gpuprof_an_cpath_length(cp, i), blame = 0;
        for (uint32_t k = 0; k < rv.n; k++)
            blame += rv.r[k].blame_ns;
        for (uint32_t k = 0; k < rv.n; k++)
            rv.r[k].rating =
                (len ? (double)rv.r[k].path_ns / (double)len : 0) +
                (blame ? (double)rv.r[k].blame_ns / (double)blame : 0);
        if (rv.n)
            qsort(rv.r, rv.n, sizeof(*rv.r), by_rating);
        char e[64];
        fprintf(out, "ratings (share of the critical path + share of the "
                "blame), %s:\n", entry(cp, i, e, sizeof(e)));
        fprintf(out, "  %6s %6s %6s  %s\n", "path", "blame", "rating",
                "activity");
        for (uint32_t k = 0; k < rv.n; k++) {
            double ps = len ? (double)rv.r[k].path_ns / (double)len : 0;
            double bs = blame ? (double)rv.r[k].blame_ns / (double)blame : 0;
            fprintf(out, "  %6.3f %6.3f %6.3f  %s\n", ps, bs, ps + bs,
                    rv.r[k].name);
        }
        ratings_free(&rv);
    }
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_waits(
    const gpuprof_an_cpath *cp, FILE *out, uint32_t flags)
{
    if (!cp || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    for (uint32_t i = 0; i < gpuprof_an_cpath_process_count(cp); i++) {
        gpuprof_an_wait_totals t;
        gpuprof_an_cpath_waits(cp, i, &t);
        uint64_t all = 0;
        for (int k = 0; k < GPUPROF_AN_WAIT_KINDS; k++)
            all += t.ns[k];
        char a[32], c[16], e[64];
        gpuprof__an_fmt_ns(a, sizeof(a), all);
        fprintf(out, "wait states, %s: %s waiting\n",
                entry(cp, i, e, sizeof(e)), a);
        left_note(cp, i, out);
        fprintf(out, "  %-16s %8s %12s %6s %8s\n", "pattern", "count", "time",
                "share", "OpenCL");
        for (int k = 0; k < GPUPROF_AN_WAIT_KINDS; k++) {
            gpuprof__an_fmt_ns(a, sizeof(a), t.ns[k]);
            fprintf(out, "  %-16s %8" PRIu64 " %12s %s %8" PRIu64 "\n",
                    gpuprof_an_wait_kind_name((gpuprof_an_wait_kind)k),
                    t.count[k], a, pct(c, sizeof(c), t.ns[k], all),
                    t.opencl[k]);
        }
        ratings rv = {0};
        gpuprof__an_cpath_blames(cp, i, add_blame, &rv);
        for (uint32_t k = 0; k < rv.n; k++)
            rv.r[k].rating = (double)rv.r[k].blame_ns;
        if (rv.n)
            qsort(rv.r, rv.n, sizeof(*rv.r), by_rating);
        fprintf(out, "blamed, %s:\n", entry(cp, i, e, sizeof(e)));
        for (uint32_t k = 0; k < rv.n; k++) {
            gpuprof__an_fmt_ns(a, sizeof(a), rv.r[k].blame_ns);
            fprintf(out, "  %12s %s  %s\n", a,
                    pct(c, sizeof(c), rv.r[k].blame_ns, all), rv.r[k].name);
        }
        ratings_free(&rv);
    }
    return ferror(out) ? gpuprof__an_fail(GPUPROF_E_IO, "write error")
                       : GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_projection(
    const gpuprof_an_cpath *measured, const gpuprof_an_cpath *projected,
    FILE *out, uint32_t flags)
{
    if (!measured || !projected || !out || flags ||
        gpuprof_an_cpath_process_count(measured) !=
            gpuprof_an_cpath_process_count(projected))
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    for (uint32_t i = 0; i < gpuprof_an_cpath_process_count(measured); i++) {
        uint64_t m = gpuprof_an_cpath_run_ns(measured, i),
                 p = gpuprof_an_cpath_run_ns(projected, i);
        char a[32], b[32], e[64];
        gpuprof__an_fmt_ns(a, sizeof(a), m);
        gpuprof__an_fmt_ns(b, sizeof(b), p);
        fprintf(out, "projection, %s: run %s -> %s (%+.1f%%)\n",
                entry(measured, i, e, sizeof(e)), a, b,
                m ? 100.0 * ((double)p - (double)m) / (double)m : 0.0);
    }
    return gpuprof_an_cpath_print_path(projected, out, 0);
}
