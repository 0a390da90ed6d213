/*
 * check_an_db.c - aggregation into an analysis database, against the truth
 * of synthetic measurements (support/gen.h): every (profile, context,
 * metric) value, inclusive and exclusive, equals what the generator's
 * strings imply; profile.db and cct.db agree on every value; statistics
 * equal sums, minima, maxima, means, deviations computed here; the bytes
 * do not depend on the thread count or a memory budget (the process stays
 * within it); runs merge; damage is refused with the file's name.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "io/io.h"
#include "support/gen.h"
#include "support/mkprofile.h"
#include "support/files.h"
#include "support/suite.h"

static char tmp[512];

static void mkdir_tmp(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/andb.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void sub(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmp, name);
}

static gpuprof_status analyze(const char *const *in, unsigned nin,
                              const char *out, unsigned threads)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    for (unsigned i = 0; i < nin; i++)
        ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in[i]), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(a, threads), GPUPROF_OK);
    gpuprof_status st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    return st;
}

static const char *const mnames[] = {"region.visits", "region.time.incl",
                                     "region.time.excl", "test.ratio"};

/* Expected values: [path][metric][variant] -> one value per profile. */
typedef struct expect {
    uint32_t npaths, nprof;
    double *v; /* npaths * 4 * 2 * nprof */
} expect;

static double *ev(expect *e, uint32_t path, uint32_t m, uint32_t var,
                  uint32_t p)
{
    return &e->v[(((size_t)path * 4 + m) * 2 + var) * e->nprof + p];
}

/* Inclusive = the sum over every path it is a prefix of (all metrics here
 * sum), but region.time.incl (TP_INCL), which is measured inclusive: a
 * path's own value where it has one, else the sum over the paths beneath
 * it: each value goes to its path and to the prefixes above it up to (not
 * into) the nearest one with a value of its own, and to the root (*root,
 * per profile) when there is none. Computed from the strings alone. */
static void expect_from(const gen_truth *t, expect *e, double *root)
{
    e->npaths = t->npaths;
    e->nprof = t->profiles;
    e->v = calloc((size_t)t->npaths * 8 * t->profiles, sizeof(double));
    for (uint32_t i = 0; i < t->nvals; i++) {
        const gen_value *g = &t->vals[i];
        *ev(e, g->path, g->metric, GPUPROF_AN_EXCLUSIVE, g->profile) += g->v;
    }
    for (uint32_t i = 0; i < t->nvals; i++) {
        const gen_value *g = &t->vals[i];
        /* The path and each of its prefixes (cut at every '/'). */
        char buf[4096];
        snprintf(buf, sizeof(buf), "%s", t->paths[g->path]);
        bool to_root = true;
        for (bool self = true;; self = false) {
            uint32_t q = gen_path_find(t, buf);
            ck_assert_uint_ne(q, UINT32_MAX); /* every prefix is a node */
            if (g->metric == TP_INCL && !self &&
                *ev(e, q, TP_INCL, GPUPROF_AN_EXCLUSIVE, g->profile) != 0) {
                to_root = false; /* measured there: it holds this one */
                break;
            }
            *ev(e, q, g->metric, GPUPROF_AN_INCLUSIVE, g->profile) += g->v;
            char *slash = strrchr(buf, GEN_SEP[0]);
            if (!slash)
                break;
            *slash = '\0';
        }
        if (root && g->metric == TP_INCL && to_root)
            root[g->profile] += g->v;
    }
}

/* The path of context c, as the generator spells it. */
static void ctx_path(const gpuprof_an_db *db, uint32_t c, char *out,
                     size_t n)
{
    if (c == 0) {
        out[0] = '\0';
        return;
    }
    char parent[4096];
    ctx_path(db, gpuprof_an_db_context_parent(db, c), parent,
             sizeof(parent));
    const char *name = gpuprof_an_db_context_name(db, c);
    size_t lp = strlen(parent), ln = strlen(name);
    ck_assert_uint_lt(lp + ln + 2, n);
    memcpy(out, parent, lp);
    if (lp)
        out[lp++] = GEN_SEP[0];
    memcpy(out + lp, name, ln + 1);
}

static void check_against(const char *dbdir, const gen_truth *t)
{
    gpuprof_an_db *db;
    ck_assert_msg(gpuprof_an_db_open(dbdir, &db) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    expect e;
    double *incl_root = calloc(t->profiles, sizeof(double));
    expect_from(t, &e, incl_root);
    uint32_t nc = gpuprof_an_db_context_count(db);
    ck_assert_uint_eq(gpuprof_an_db_profile_count(db), t->profiles);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), 8);
    /* Every generated path is a context and every context a path. */
    uint32_t *path_of = malloc(nc * sizeof(*path_of));
    bool *seen = calloc(t->npaths + 1, 1);
    uint32_t root = gen_path_find(t, "");
    for (uint32_t c = 0; c < nc; c++) {
        char p[4096];
        ctx_path(db, c, p, sizeof(p));
        path_of[c] = gen_path_find(t, p);
        if (c == 0) {
            ck_assert_uint_eq(gpuprof_an_db_context_parent(db, 0), UINT32_MAX);
            continue;
        }
        ck_assert_msg(path_of[c] != UINT32_MAX, "context %u '%s' not generated",
                      c, p);
        ck_assert_msg(!seen[path_of[c]], "path '%s' twice", p);
        seen[path_of[c]] = true;
    }
    ck_assert_uint_eq(nc - 1, t->npaths - (root != UINT32_MAX));
    uint32_t mid[4][2];
    for (uint32_t m = 0; m < 4; m++)
        for (uint32_t v = 0; v < 2; v++) {
            ck_assert_int_eq(gpuprof_an_db_metric_find(
                                 db, mnames[m], (gpuprof_an_variant)v,
                                 &mid[m][v]),
                             GPUPROF_OK);
            ck_assert_int_eq(gpuprof_an_db_metric_variant(db, mid[m][v]),
                             (int)v);
        }
    uint32_t *prof = malloc(t->profiles * sizeof(*prof));
    double *val = malloc(t->profiles * sizeof(*val));
    uint64_t checked = 0;
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t m = 0; m < 4; m++)
            for (uint32_t v = 0; v < 2; v++) {
                uint32_t dm = mid[m][v];
                /* PMS: every profile's value exactly. */
                double sum = 0, mn = 0, mx = 0;
                uint32_t cnt = 0;
                for (uint32_t p = 0; p < t->profiles; p++) {
                    double want = 0;
                    if (c == 0 && v == GPUPROF_AN_INCLUSIVE && m == TP_INCL)
                        want = incl_root[p]; /* its outermost values */
                    else if (c == 0 && v == GPUPROF_AN_INCLUSIVE) /* all */
                        for (uint32_t i = 0; i < t->nvals; i++)
                            want += t->vals[i].profile == p &&
                                            t->vals[i].metric == m
                                        ? t->vals[i].v
                                        : 0;
                    else if (c != 0)
                        want = *ev(&e, path_of[c], m, v, p);
                    double got = gpuprof_an_db_value(db, p, c, dm);
                    ck_assert_msg(got == want,
                                  "profile %u context %u metric %s/%u: %g, "
                                  "want %g", p, c, mnames[m], v, got, want);
                    if (want != 0) {
                        mn = cnt == 0 || want < mn ? want : mn;
                        mx = cnt == 0 || want > mx ? want : mx;
                        sum += want;
                        cnt++;
                    }
                    checked++;
                }
                /* CMS: the same values, by ascending profile, only non-zero. */
                uint32_t n = gpuprof_an_db_context_values(db, c, dm, prof, val,
                                                          t->profiles);
                ck_assert_uint_eq(n, cnt);
                for (uint32_t i = 0; i < n; i++) {
                    ck_assert(i == 0 || prof[i] > prof[i - 1]);
                    ck_assert(val[i] ==
                              gpuprof_an_db_value(db, prof[i], c, dm));
                }
                /* Statistics over the profiles with a value. */
                ck_assert(gpuprof_an_db_stat(db, c, dm,
                                             GPUPROF_AN_STAT_COUNT) == cnt);
                if (!cnt)
                    continue;
                double mean = sum / cnt, var = 0;
                for (uint32_t i = 0; i < n; i++)
                    var += (val[i] - mean) * (val[i] - mean);
                double sd = sqrt(var / cnt);
                ck_assert(gpuprof_an_db_stat(db, c, dm, GPUPROF_AN_STAT_SUM) ==
                          sum);
                ck_assert(gpuprof_an_db_stat(db, c, dm, GPUPROF_AN_STAT_MIN) ==
                          mn);
                ck_assert(gpuprof_an_db_stat(db, c, dm, GPUPROF_AN_STAT_MAX) ==
                          mx);
                ck_assert(fabs(gpuprof_an_db_stat(db, c, dm,
                                                  GPUPROF_AN_STAT_MEAN) -
                               mean) <= 1e-12 * fabs(mean));
                ck_assert(fabs(gpuprof_an_db_stat(db, c, dm,
                                                  GPUPROF_AN_STAT_STD) -
                               sd) <= 1e-9 * (sd + 1));
                ck_assert(fabs(gpuprof_an_db_stat(db, c, dm,
                                                  GPUPROF_AN_STAT_COV) -
                               sd / mean) <= 1e-9 * (sd / mean + 1));
            }
    ck_assert_uint_gt(checked, 1000);
    free(prof);
    free(val);
    free(path_of);
    free(seen);
    free(e.v);
    free(incl_root);
    gpuprof_an_db_close(db);
}

static bool same_file(const char *a, const char *b)
{
    FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    int c, d;
    bool same = true;
    do {
        c = fgetc(x);
        d = fgetc(y);
        same = c == d;
    } while (same && c != EOF);
    fclose(x);
    fclose(y);
    return same;
}


static void same_db(const char *x, const char *y, const char *what)
{
    static const char *const files[] = {"meta.db", "profile.db", "cct.db",
                                        "stats.db"};
    for (int i = 0; i < 4; i++) {
        char a[700], b[700];
        snprintf(a, sizeof(a), "%s/%s", x, files[i]);
        snprintf(b, sizeof(b), "%s/%s", y, files[i]);
        ck_assert_msg(same_file(a, b), "%s differs %s", files[i], what);
    }
}

static const gen_opts base = {.procs = 3, .threads = 4, .seed = 7,
                              .fanout = 4, .depth = 6, .pid0 = 100};

START_TEST(aggregates_equal_the_truth_and_threads_change_no_byte)
{
    mkdir_tmp();
    char in[600], d1[600], d2[600];
    sub(in, sizeof(in), "run");
    sub(d1, sizeof(d1), "db1");
    sub(d2, sizeof(d2), "db2");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, d1, 1), GPUPROF_OK);
    ck_assert_msg(analyze(ins, 1, d2, 2) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    same_db(d1, d2, "between -j1 and -j2");
    check_against(d1, &t);
    gen_truth_free(&t);
}
END_TEST

/* A database written over an earlier one (its files are moved aside, then
 * removed) is the same bytes as one written afresh and leaves nothing
 * beside it; a run that fails keeps the earlier one whole -- also when it
 * fails after its own files were put in place (meta.db cannot be). */
START_TEST(rewrite_in_place)
{
    mkdir_tmp();
    char in[600], in2[600], d1[600], d2[600], path[700];
    sub(in, sizeof(in), "run");
    sub(in2, sizeof(in2), "run2");
    sub(d1, sizeof(d1), "db1");
    sub(d2, sizeof(d2), "db2");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    ck_assert_int_eq(mkdir(in2, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    gen_opts o = base;
    o.seed = 8, o.procs = 2;
    ck_assert_int_eq(gen_write(in2, &o, &t), 0);
    gen_truth_free(&t);
    const char *ins[] = {in}, *ins2[] = {in2};
    ck_assert_int_eq(analyze(ins, 1, d1, 2), GPUPROF_OK);
    /* Over a database of other inputs, with -j1 and -j2. */
    ck_assert_int_eq(analyze(ins2, 1, d2, 1), GPUPROF_OK);
    ck_assert_int_eq(analyze(ins, 1, d2, 1), GPUPROF_OK);
    same_db(d1, d2, "written over another database (-j1)");
    ck_assert_int_eq(analyze(ins2, 1, d2, 2), GPUPROF_OK);
    /* An earlier trace.db goes when the new inputs have no traces. */
    snprintf(path, sizeof(path), "%s/trace.db", d2);
    tf_spill(path, "old trace", 9);
    ck_assert_int_eq(analyze(ins, 1, d2, 2), GPUPROF_OK);
    same_db(d1, d2, "written over another database (-j2)");
    ck_assert_int_eq(tf_dir_entries(d2), 4);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* A damaged input: the earlier database stays. */
    snprintf(path, sizeof(path), "%s/zz-broken.gpuprof", in2);
    FILE *f = fopen(path, "wb");
    fputs("GPUPROF\0 not really", f);
    fclose(f);
    ck_assert_int_ne(analyze(ins2, 1, d2, 2), GPUPROF_OK);
    same_db(d1, d2, "after a failed run");
    ck_assert_int_eq(tf_dir_entries(d2), 4);
    ck_assert_int_eq(unlink(path), 0);
    /* meta.db cannot be replaced (a directory in its place): the run fails
     * after putting profile.db, cct.db and stats.db in place, and puts the
     * earlier ones back. */
    snprintf(path, sizeof(path), "%s/trace.db", d2);
    tf_spill(path, "old trace", 9);
    snprintf(path, sizeof(path), "%s/meta.db", d2);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/meta.db/keep", d2);
    fclose(fopen(path, "w"));
    ck_assert_int_ne(analyze(ins2, 1, d2, 2), GPUPROF_OK);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "meta.db"));
    static const char *const data[] = {"profile.db", "cct.db", "stats.db"};
    for (int i = 0; i < 3; i++) {
        char a[700], b[700];
        snprintf(a, sizeof(a), "%s/%s", d1, data[i]);
        snprintf(b, sizeof(b), "%s/%s", d2, data[i]);
        ck_assert_msg(same_file(a, b), "%s not put back", data[i]);
    }
    snprintf(path, sizeof(path), "%s/trace.db", d2);
    size_t n = 0;
    char *back = tf_read(path, &n);
    ck_assert_msg(back && n == 9 && !memcmp(back, "old trace", 9),
                  "trace.db not put back");
    free(back);
    ck_assert_int_eq(tf_dir_entries(d2), 5); /* four files and meta.db/ */
}
END_TEST

START_TEST(runs_merge)
{
    mkdir_tmp();
    char r1[600], r2[600], db[600];
    sub(r1, sizeof(r1), "run1");
    sub(r2, sizeof(r2), "run2");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(r1, 0755), 0);
    ck_assert_int_eq(mkdir(r2, 0755), 0);
    gen_truth t = {0};
    gen_opts o = base;
    ck_assert_int_eq(gen_write(r1, &o, &t), 0);
    o.seed = 99, o.pid0 = 500, o.procs = 2, o.threads = 3;
    o.spmd = 1; /* shared contexts, as an SPMD program has */
    ck_assert_int_eq(gen_write(r2, &o, &t), 0);
    const char *ins[] = {r1, r2};
    ck_assert_int_eq(analyze(ins, 2, db, 2), GPUPROF_OK);
    check_against(db, &t);
    gpuprof_an_db *d;
    ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_profile_count(d), 3 * 4 + 2 * 3);
    ck_assert_uint_eq(gpuprof_an_db_profile_pid(d, 12), 500);
    ck_assert_int_eq(gpuprof_an_db_profile_rank(d, 13), 0);
    ck_assert_uint_eq(gpuprof_an_db_profile_tid(d, 13), 101);
    ck_assert_str_eq(gpuprof_an_db_profile_thread_name(d, 13), "worker-1");
    ck_assert_str_eq(gpuprof_an_db_profile_host(d, 0), "genhost");
    gpuprof_an_db_close(d);
    gen_truth_free(&t);
}
END_TEST

START_TEST(damage_is_refused_with_the_file_name)
{
    mkdir_tmp();
    char in[600], db[600], path[700];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    gen_opts o = base;
    o.procs = 1;
    ck_assert_int_eq(gen_write(in, &o, &t), 0);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, db, 1), GPUPROF_OK);
    /* Every byte of every database file matters: flip one in each. */
    static const char *const files[] = {"meta.db", "profile.db", "cct.db",
                                        "stats.db"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s", db, files[i]);
        FILE *f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        fseek(f, 40, SEEK_SET);
        int c = fgetc(f);
        fseek(f, 40, SEEK_SET);
        fputc(c ^ 0x5a, f);
        fclose(f);
        gpuprof_an_db *d;
        ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_E_CORRUPT);
        ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), files[i]));
        f = fopen(path, "r+b");
        fseek(f, 40, SEEK_SET);
        fputc(c, f);
        fclose(f);
        ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_OK);
        gpuprof_an_db_close(d);
    }
    /* A damaged profile stops the run, names the file, writes nothing. */
    char db2[600];
    sub(db2, sizeof(db2), "db2");
    snprintf(path, sizeof(path), "%s/zz-broken.gpuprof", in);
    FILE *f = fopen(path, "wb");
    fputs("GPUPROF\0 not really", f);
    fclose(f);
    ck_assert_int_ne(analyze(ins, 1, db2, 2), GPUPROF_OK);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "zz-broken"));
    snprintf(path, sizeof(path), "%s/meta.db", db2);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* No inputs at all. */
    char empty[600];
    sub(empty, sizeof(empty), "empty");
    ck_assert_int_eq(mkdir(empty, 0755), 0);
    const char *e[] = {empty};
    ck_assert_int_eq(analyze(e, 1, db2, 1), GPUPROF_E_NOTFOUND);
    gen_truth_free(&t);
}
END_TEST

/* Folded stacks re-sum to the whole; the top-down view lists every
 * context with a value once, beneath the header. */
START_TEST(views_resum)
{
    mkdir_tmp();
    char in[600], dbdir[600];
    sub(in, sizeof(in), "run");
    sub(dbdir, sizeof(dbdir), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, dbdir, 2), GPUPROF_OK);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    expect e;
    double *incl_root = calloc(t.profiles, sizeof(double));
    expect_from(&t, &e, incl_root);
    free(e.v);
    for (uint32_t m = 0; m < 4; m++) {
        uint32_t mi, me, nc = gpuprof_an_db_context_count(db);
        gpuprof_an_db_metric_find(db, mnames[m], GPUPROF_AN_INCLUSIVE, &mi);
        gpuprof_an_db_metric_find(db, mnames[m], GPUPROF_AN_EXCLUSIVE, &me);
        double whole = 0, folded = 0;
        for (uint32_t i = 0; i < t.nvals; i++)
            whole += t.vals[i].metric == m ? t.vals[i].v : 0;
        if (m == TP_INCL) { /* measured inclusive: its outermost values */
            whole = 0;
            for (uint32_t p = 0; p < t.profiles; p++)
                whole += incl_root[p];
        }
        ck_assert(gpuprof_an_db_stat(db, 0, mi, GPUPROF_AN_STAT_SUM) == whole);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (m == TP_INCL) { /* a flame graph would count nested values twice */
            ck_assert_int_eq(gpuprof_an_db_print_folded(db, f, mnames[m], 0),
                             GPUPROF_E_INVALID);
            ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(),
                                         "measured inclusive"));
            fclose(f);
            free(text);
            continue;
        }
        ck_assert_int_eq(gpuprof_an_db_print_folded(db, f, mnames[m], 0),
                         GPUPROF_OK);
        fclose(f);
        uint32_t lines = 0, with_excl = 0, with_incl = 0;
        for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
            folded += strtod(strrchr(l, ' ') + 1, NULL);
            lines++;
        }
        free(text);
        for (uint32_t c = 0; c < nc; c++) {
            with_excl += gpuprof_an_db_stat(db, c, me, GPUPROF_AN_STAT_SUM) != 0;
            with_incl +=
                c && gpuprof_an_db_stat(db, c, mi, GPUPROF_AN_STAT_SUM) != 0;
        }
        ck_assert(fabs(folded - whole) <= 1e-9 * whole);
        ck_assert_uint_eq(lines, with_excl);
        text = NULL;
        f = open_memstream(&text, &len);
        ck_assert_int_eq(gpuprof_an_db_print_topdown(db, f, mnames[m], 0, 0),
                         GPUPROF_OK);
        fclose(f);
        lines = 0;
        for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
            lines++;
        ck_assert_uint_eq(lines, 3 + with_incl); /* a summary, 2 headers */
        ck_assert_ptr_nonnull(strstr(text, mnames[m]));
        free(text);
    }
    free(incl_root);
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_print_topdown(db, null, "no.such", 0, 0),
                     GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_an_db_print_topdown(db, null, mnames[0], 2, 0),
                     GPUPROF_E_INVALID);
    fclose(null);
    gpuprof_an_db_close(db);
    gen_truth_free(&t);
}
END_TEST

/* Crafted damage with a valid checksum: the reader's structural checks
 * (indices, orderings, counts) refuse each, naming the file. */
static void put32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* The header's bytes (doc/FORMATS.md: 40 since format 3, its identity at
 * 32). */
#define DBH 40

/* Writes b with the header's CRC (offset 12, over bytes 32..: the identity
 * and the body) made valid. */
static void spit_valid(const char *path, uint8_t *b, size_t n)
{
    put32le(b + 12, gpuprof__io_crc32c(0, b + 32, n - 32));
    FILE *f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

START_TEST(crafted_content_is_refused)
{
    mkdir_tmp();
    char in[600], db[600], path[700];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    gen_opts o = base;
    o.procs = 2;
    ck_assert_int_eq(gen_write(in, &o, &t), 0);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, db, 1), GPUPROF_OK);
    static const struct {
        const char *file;
        uint32_t at; /* 0: the first plane's first pair key */
        uint32_t value;
    } cases[] = {
        {"profile.db", 0, 0x7FFFFFFF}, /* context beyond the count */
        {"cct.db", 0, 0xFFFF},         /* metric beyond the count */
        {"stats.db", 0, 0xFFFF},       /* metric beyond the count */
        {"profile.db", 1, 0},          /* plane offset inside the header */
        {"cct.db", 2, 0x7FFFFFFF},     /* more pairs than values */
        {"meta.db", 3, 0},             /* context 1's parent is itself */
    };
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n;
        snprintf(path, sizeof(path), "%s/%s", db, cases[i].file);
        uint8_t *orig = tf_read(path, &n), *b = malloc(n);
        ck_assert_ptr_nonnull(orig);
        memcpy(b, orig, n);
        if (cases[i].at == 0) { /* plane 0: the first with pairs */
            uint32_t k = 0;
            while (get32le(b + DBH + 16 * k + 8) == 0)
                k++;
            uint32_t off = get32le(b + DBH + 16 * k);
            if (strcmp(cases[i].file, "profile.db"))
                b[off] = (uint8_t)cases[i].value,
                b[off + 1] = (uint8_t)(cases[i].value >> 8);
            else
                put32le(b + off, cases[i].value);
        } else if (cases[i].at == 1) {
            put32le(b + DBH, cases[i].value);
            put32le(b + DBH + 4, 0);
        } else if (cases[i].at == 2) {
            put32le(b + DBH + 8, cases[i].value);
        } else { /* meta.db: after 32 count bytes, strings, metrics, profiles */
            uint32_t ss = get32le(b + DBH), nm = get32le(b + DBH + 4),
                     np = get32le(b + DBH + 8);
            size_t ctx1 = DBH + 32 + ss + (size_t)nm * 12 + (size_t)np * 40 + 24;
            put32le(b + ctx1, 1);
        }
        spit_valid(path, b, n);
        gpuprof_an_db *d;
        ck_assert_msg(gpuprof_an_db_open(db, &d) == GPUPROF_E_CORRUPT,
                      "case %u (%s) accepted", i, cases[i].file);
        ck_assert_msg(strstr(gpuprof_an_last_error(), cases[i].file), "%s",
                      gpuprof_an_last_error());
        FILE *f = fopen(path, "wb"); /* put it back */
        fwrite(orig, 1, n, f);
        fclose(f);
        ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_OK);
        gpuprof_an_db_close(d);
        free(orig);
        free(b);
    }
    gen_truth_free(&t);
}
END_TEST

/* The text of a view (metric region.visits, every row). */
static char *view_text(const gpuprof_an_db *db, gpuprof_an_view v,
                       const char *const *m, uint32_t nm, uint32_t depth)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_msg(gpuprof_an_db_print_view(db, f, v, m, nm, 0, depth, 0) ==
                      GPUPROF_OK,
                  "%s", gpuprof_an_last_error());
    fclose(f);
    return text;
}

/* A formula combines at most 64 distinct metrics (issue 14 item 5): one of
 * 64 is evaluated from all of them at every (profile, context); one of 65
 * fails with a clear error and adds nothing (before, the operands past the
 * 64th were dropped and the profiles where only they had values lost). */
START_TEST(derived_operand_limit)
{
    mkdir_tmp();
    char in[600], dbdir[600];
    sub(in, sizeof(in), "run");
    sub(dbdir, sizeof(dbdir), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    gen_truth_free(&t);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, dbdir, 2), GPUPROF_OK);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    char name[32], formula[65 * 8];
    size_t len = 0;
    formula[0] = '\0';
    for (int k = 0; k < 65; k++) {
        snprintf(name, sizeof(name), "d%d", k);
        ck_assert_int_eq(gpuprof_an_db_derive(db, name, "region.visits"),
                         GPUPROF_OK);
        len += (size_t)snprintf(formula + len, sizeof(formula) - len, "%sd%d",
                                k ? "+" : "", k);
        if (k == 63)
            ck_assert_int_eq(gpuprof_an_db_derive(db, "sum64", formula),
                             GPUPROF_OK);
    }
    uint32_t nm = gpuprof_an_db_metric_count(db);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "sum65", formula),
                     GPUPROF_E_LIMIT);
    ck_assert_msg(
        strstr(gpuprof_an_last_error(), "names 65 distinct metrics") &&
            strstr(gpuprof_an_last_error(), "at most 64"),
        "%s", gpuprof_an_last_error());
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm);
    uint32_t s_i, s_e, v_i, v_e;
    ck_assert_int_eq(
        gpuprof_an_db_metric_find(db, "sum64", GPUPROF_AN_INCLUSIVE, &s_i),
        GPUPROF_OK);
    gpuprof_an_db_metric_find(db, "sum64", GPUPROF_AN_EXCLUSIVE, &s_e);
    gpuprof_an_db_metric_find(db, "region.visits", GPUPROF_AN_INCLUSIVE, &v_i);
    gpuprof_an_db_metric_find(db, "region.visits", GPUPROF_AN_EXCLUSIVE, &v_e);
    uint32_t nc = gpuprof_an_db_context_count(db);
    uint32_t np = gpuprof_an_db_profile_count(db);
    double seen = 0;
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t p = 0; p < np; p++) {
            double vi = gpuprof_an_db_value(db, p, c, v_i);
            double ve = gpuprof_an_db_value(db, p, c, v_e);
            ck_assert(gpuprof_an_db_value(db, p, c, s_i) == 64 * vi);
            ck_assert(gpuprof_an_db_value(db, p, c, s_e) == 64 * ve);
            seen += vi;
        }
    ck_assert(seen > 0);
    gpuprof_an_db_close(db);
}
END_TEST

/* Derived metrics equal the formula computed here at every (profile,
 * context) and over sums; the flat view sums each procedure's contexts
 * (inclusive: outermost instances only); bottom-up at depth 1 is the flat
 * view; the thread-centric view lists every profile with a value. */
START_TEST(derived_metrics_and_views)
{
    mkdir_tmp();
    char in[600], dbdir[600];
    sub(in, sizeof(in), "run");
    sub(dbdir, sizeof(dbdir), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    gen_truth_free(&t);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, dbdir, 2), GPUPROF_OK);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    uint32_t nm = gpuprof_an_db_metric_count(db);
    uint32_t nc = gpuprof_an_db_context_count(db);
    uint32_t np = gpuprof_an_db_profile_count(db);

    /* Errors. */
    ck_assert_int_eq(gpuprof_an_db_derive(db, "x", "region.visits +"),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "offset 15"));
    ck_assert_int_eq(gpuprof_an_db_derive(db, "x", "(region.visits"),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "x", "no.such * 2"),
                     GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "region.visits", "1"),
                     GPUPROF_E_INVALID);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm);

    ck_assert_int_eq(gpuprof_an_db_derive(db, "per_visit",
                                          "region.time.incl / region.visits"),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "twice",
                                          "-(-2 * \"region.visits\") - 0"),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "inner", "per_visit / 0"),
                     GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm + 6);
    uint32_t t_i, v_i, pv_i, pv_e, tw_i, in_e, v_e;
    gpuprof_an_db_metric_find(db, "region.time.incl", GPUPROF_AN_INCLUSIVE,
                              &t_i);
    gpuprof_an_db_metric_find(db, "region.visits", GPUPROF_AN_INCLUSIVE, &v_i);
    gpuprof_an_db_metric_find(db, "region.visits", GPUPROF_AN_EXCLUSIVE, &v_e);
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "per_visit",
                                               GPUPROF_AN_INCLUSIVE, &pv_i),
                     GPUPROF_OK);
    ck_assert_uint_eq(pv_i, nm);
    gpuprof_an_db_metric_find(db, "per_visit", GPUPROF_AN_EXCLUSIVE, &pv_e);
    ck_assert_uint_eq(pv_e, nm + 1);
    gpuprof_an_db_metric_find(db, "twice", GPUPROF_AN_INCLUSIVE, &tw_i);
    gpuprof_an_db_metric_find(db, "inner", GPUPROF_AN_EXCLUSIVE, &in_e);
    ck_assert_str_eq(gpuprof_an_db_metric_name(db, pv_e), "per_visit");
    ck_assert_int_eq(gpuprof_an_db_metric_variant(db, pv_e),
                     GPUPROF_AN_EXCLUSIVE);
    ck_assert_int_eq(gpuprof_an_db_metric_unit(db, tw_i),
                     GPUPROF_AN_UNIT_COUNT);
    uint32_t *pl = malloc(np * sizeof(*pl));
    double *vl = malloc(np * sizeof(*vl));
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t with = 0;
        for (uint32_t p = 0; p < np; p++) {
            double tv = gpuprof_an_db_value(db, p, c, t_i);
            double vv = gpuprof_an_db_value(db, p, c, v_i);
            ck_assert(gpuprof_an_db_value(db, p, c, pv_i) ==
                      (vv != 0 ? tv / vv : 0));
            ck_assert(gpuprof_an_db_value(db, p, c, tw_i) == 2 * vv);
            ck_assert(gpuprof_an_db_value(db, p, c, in_e) == 0);
            with += vv != 0;
        }
        /* Its values where an operand has one, non-zero only. */
        uint32_t n = gpuprof_an_db_context_values(db, c, tw_i, pl, vl, np);
        ck_assert_uint_eq(n, with);
        for (uint32_t i = 0; i < n; i++)
            ck_assert(vl[i] == 2 * gpuprof_an_db_value(db, pl[i], c, v_i));
        ck_assert_uint_eq(gpuprof_an_db_context_values(db, c, in_e, pl, vl,
                                                       np),
                          0);
        /* SUM over the operands' sums; the others over per-profile
         * values. */
        double st = gpuprof_an_db_stat(db, c, t_i, GPUPROF_AN_STAT_SUM);
        double sv = gpuprof_an_db_stat(db, c, v_i, GPUPROF_AN_STAT_SUM);
        ck_assert(gpuprof_an_db_stat(db, c, pv_i, GPUPROF_AN_STAT_SUM) ==
                  (sv != 0 ? st / sv : 0));
        ck_assert(gpuprof_an_db_stat(db, c, tw_i, GPUPROF_AN_STAT_MAX) ==
                  2 * gpuprof_an_db_stat(db, c, v_i, GPUPROF_AN_STAT_MAX));
        ck_assert(gpuprof_an_db_stat(db, c, tw_i, GPUPROF_AN_STAT_COUNT) ==
                  gpuprof_an_db_stat(db, c, v_i, GPUPROF_AN_STAT_COUNT));
    }

    /* Functions: max, min, whole (the root's inclusive sum). */
    ck_assert_int_eq(gpuprof_an_db_derive(db, "f1", "max(region.visits, 3)"),
                     GPUPROF_OK);
    ck_assert_int_eq(
        gpuprof_an_db_derive(db, "f2",
                             "min(region.visits, 3) / whole(region.visits)"),
        GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "f3", "max(region.visits)"),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "f3", "log(region.visits)"),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "unknown function"));
    ck_assert_int_eq(gpuprof_an_db_derive(db, "f3", "whole(nope)"),
                     GPUPROF_E_NOTFOUND);
    uint32_t f1, f2;
    gpuprof_an_db_metric_find(db, "f1", GPUPROF_AN_INCLUSIVE, &f1);
    gpuprof_an_db_metric_find(db, "f2", GPUPROF_AN_INCLUSIVE, &f2);
    double wv = gpuprof_an_db_stat(db, 0, v_i, GPUPROF_AN_STAT_SUM);
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t p = 0; p < np; p++) {
            double vv = gpuprof_an_db_value(db, p, c, v_i);
            ck_assert(gpuprof_an_db_value(db, p, c, f1) == (vv > 3 ? vv : 3));
            ck_assert(gpuprof_an_db_value(db, p, c, f2) ==
                      (vv < 3 ? vv : 3) / wv);
        }
    /* Importance: this database has region time but no GPU metrics, so
     * only cpu_importance = region.time.excl rolled up / its whole. */
    uint32_t before = gpuprof_an_db_metric_count(db), ci, gi;
    ck_assert_int_eq(gpuprof_an_db_add_importance(db, 0), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), before + 2);
    ck_assert_int_eq(gpuprof_an_db_add_importance(db, 0), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), before + 2);
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "gpu_api_importance",
                                               GPUPROF_AN_INCLUSIVE, &gi),
                     GPUPROF_E_NOTFOUND);
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "cpu_importance",
                                               GPUPROF_AN_INCLUSIVE, &ci),
                     GPUPROF_OK);
    uint32_t x_i;
    gpuprof_an_db_metric_find(db, "region.time.excl", GPUPROF_AN_INCLUSIVE,
                              &x_i);
    double wx = gpuprof_an_db_stat(db, 0, x_i, GPUPROF_AN_STAT_SUM);
    for (uint32_t c = 0; c < nc; c++)
        ck_assert(gpuprof_an_db_stat(db, c, ci, GPUPROF_AN_STAT_SUM) ==
                  gpuprof_an_db_stat(db, c, x_i, GPUPROF_AN_STAT_SUM) / wx);

    /* Flat: each name's rows, from the contexts computed here. */
    static const char *const visits[] = {"region.visits"};
    char *flat = view_text(db, GPUPROF_AN_VIEW_FLAT, visits, 1, 0);
    uint32_t rows = 0;
    char *save = NULL;
    for (char *l = strtok_r(flat, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        if (!rows++) {
            ck_assert_ptr_nonnull(strstr(l, "flat view over 12 profiles"));
            continue;
        }
        if (rows == 2) { /* the column headers */
            ck_assert_str_eq(l, "                        region.visits");
            continue;
        }
        if (rows == 3) {
            ck_assert_str_eq(l, "     inclusive   share      exclusive  "
                                "procedure");
            continue;
        }
        char *end;
        double incl = strtod(l, &end);
        strtod(end, &end); /* the share: "12.34%" parses as 12.34 */
        end++;
        double excl = strtod(end, &end);
        while (*end == ' ')
            end++;
        double want_i = 0, want_e = 0;
        for (uint32_t c = 1; c < nc; c++) {
            if (strcmp(gpuprof_an_db_context_name(db, c), end))
                continue;
            want_e += gpuprof_an_db_stat(db, c, v_e, GPUPROF_AN_STAT_SUM);
            bool outer = true;
            for (uint32_t a = gpuprof_an_db_context_parent(db, c);
                 a != UINT32_MAX; a = gpuprof_an_db_context_parent(db, a))
                outer = outer && strcmp(gpuprof_an_db_context_name(db, a), end);
            if (outer)
                want_i += gpuprof_an_db_stat(db, c, v_i, GPUPROF_AN_STAT_SUM);
        }
        ck_assert_msg(incl == want_i && excl == want_e,
                      "%s: %g %g, want %g %g", end, incl, excl, want_i,
                      want_e);
    }
    ck_assert_uint_gt(rows, 3);
    free(flat);
    /* Bottom-up at depth 1: the flat rows. */
    flat = view_text(db, GPUPROF_AN_VIEW_FLAT, visits, 1, 0);
    char *bu = view_text(db, GPUPROF_AN_VIEW_BOTTOMUP, visits, 1, 1);
    ck_assert_str_eq(strchr(flat, '\n'), strchr(bu, '\n'));
    free(bu);
    /* Bottom-up: the callers beneath a procedure hold no more than it. */
    bu = view_text(db, GPUPROF_AN_VIEW_BOTTOMUP, visits, 1, 0);
    ck_assert_uint_gt(strlen(bu), strlen(flat));
    free(bu);
    free(flat);
    /* A derived column is evaluated over each row's sums: per_visit's
     * top-down inclusive column equals the stat computed above. */
    static const char *const two[] = {"region.visits", "per_visit"};
    char *td = view_text(db, GPUPROF_AN_VIEW_TOPDOWN, two, 2, 1);
    ck_assert_ptr_nonnull(strstr(td, ", per_visit "));
    uint32_t checked = 0;
    for (char *l = strtok_r(strchr(td, '\n') + 1, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        char *end;
        strtod(l, &end);               /* visits, inclusive */
        strtod(end, &end);             /* its share */
        strtod(end + 1, &end);         /* visits, exclusive */
        double pv = strtod(end, &end); /* per_visit: no share */
        strtod(end, &end);
        while (*end == ' ')
            end++;
        for (uint32_t c = 1; c < nc; c++)
            if (gpuprof_an_db_context_parent(db, c) == 0 &&
                !strcmp(gpuprof_an_db_context_name(db, c), end)) {
                double want =
                    gpuprof_an_db_stat(db, c, pv_i, GPUPROF_AN_STAT_SUM);
                ck_assert_msg(fabs(pv - want) <= 1e-3 * fabs(want),
                              "%s: %g, want %g", end, pv, want);
                checked++;
            }
    }
    ck_assert_uint_gt(checked, 0);
    free(td);

    /* Thread-centric: one line per profile with a value. */
    uint32_t c = 1;
    while (c < nc &&
           gpuprof_an_db_stat(db, c, v_i, GPUPROF_AN_STAT_COUNT) < 2)
        c++;
    ck_assert_uint_lt(c, nc);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_db_print_profiles(db, f, c, "region.visits",
                                                  0),
                     GPUPROF_OK);
    fclose(f);
    uint32_t lines = 0, n = gpuprof_an_db_context_values(db, c, v_i, pl, vl,
                                                          np);
    for (char *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        unsigned p;
        if (lines++ < 3)
            continue;
        if (sscanf(l, "%u", &p) != 1)
            break;
        ck_assert_uint_eq(p, pl[lines - 4]);
    }
    ck_assert_uint_eq(lines, 3 + n + 1);
    free(text);
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_print_profiles(db, null, nc, "region.visits",
                                                  0),
                     GPUPROF_E_NOTFOUND);
    fclose(null);
    free(pl);
    free(vl);
    gpuprof_an_db_close(db);
}
END_TEST

/* The database of the profiles b[0..n) (written into a new measurement
 * directory, in this order, and freed), analyzed on `threads` threads. */
static gpuprof_an_db *db_of(tp_builder **b, int n, unsigned threads)
{
    mkdir_tmp();
    char in[600], dbdir[600], path[700];
    sub(in, sizeof(in), "run");
    sub(dbdir, sizeof(dbdir), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/p%03d.gpuprof", in, i);
        ck_assert_int_eq(tp_write(b[i], path, 0), 0);
        tp_free(b[i]);
    }
    const char *ins[] = {in};
    ck_assert_msg(analyze(ins, 1, dbdir, threads) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    return db;
}

/* ---- importance metrics on nested regions, computed by hand ----------
 *
 * One process, two threads (profiles 0 and 1); times in ns:
 *
 *   thread 0 "main"                          thread 1 "worker"
 *   outer   incl 1000, excl 400              outer   incl 500, excl 500
 *     inner incl 600,  excl 600                <sync>  api.time 100
 *       <sync>  api.time 150
 *     <kernel launch>
 *       kernel k  gpu.time 300
 *
 * region.time.excl rolled up (inclusive), per profile and summed:
 *   root  = outer  p0 400 + 600 = 1000, p1 500: 1500
 *   inner          p0 600:                      600
 * whole(region.time.excl) = 1500, the wall time of both threads' regions.
 * (region.time.incl rolled up would give the root p0 1000 + 600 = 1600:
 * inner's 600 counted twice, inside outer's 1000 and on its own.)
 * api.time rolled up: root = outer = 150 + 100 = 250, inner 150;
 * whole(api.time) = 250, whole(gpu.time) = 300.
 *
 * cpu_importance = max(CPU - API, 0) / 1500, inclusive, over sums:
 *   root, outer  (1500 - 250) / 1500 = 1250 / 1500
 *   inner        (600 - 150) / 1500  = 450 / 1500
 *   operations   max(0 - api, 0)     = 0
 * per profile at outer: p0 (1000 - 150) / 1500 = 850 / 1500,
 *                       p1 (500 - 100) / 1500  = 400 / 1500;
 * exclusive (each context's own value): outer (400 + 500) / 1500 = 900 /
 * 1500, inner 600 / 1500 (api.time is on the <sync> beneath it).
 * gpu_api_importance = (gpu.time + api.time) / (300 + 250):
 *   root, outer 550 / 550 = 1; inner and its <sync> 150 / 550;
 *   <kernel launch> and kernel k 300 / 550; outer's <sync> 100 / 550;
 *   exclusive: <kernel launch> 0 (the time is on the kernel). */
static gpuprof_an_db *importance_db(void)
{
    tp_builder *b = tp_new("imp", 7, 0);
    uint32_t gpu =
        tp_metric(b, "gpu.time", GPUPROF_IO_UNIT_NS, GPUPROF_IO_KIND_GPU);
    uint32_t api =
        tp_metric(b, "api.time", GPUPROF_IO_UNIT_NS, GPUPROF_IO_KIND_GPU);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t outer = tp_region(b, 0, "outer", 1, 1000, 400);
    uint32_t inner = tp_region(b, outer, "inner", 2, 600, 600);
    uint32_t sync = tp_gpu_op(b, inner, GPUPROF_OP_SYNC);
    uint32_t launch = tp_gpu_op(b, outer, GPUPROF_OP_KERNEL);
    uint32_t k = tp_kernel(b, launch, "k", UINT32_MAX);
    tp_node_value(b, sync, api, 150);
    tp_node_value(b, k, gpu, 300);
    tp_thread(b, "worker", 0);
    outer = tp_region(b, 0, "outer", 1, 500, 500);
    sync = tp_gpu_op(b, outer, GPUPROF_OP_SYNC);
    tp_node_value(b, sync, api, 60);
    tp_node_value(b, sync, api, 40); /* adds up: 100 */
    return db_of(&b, 1, 1);
}

/* The context named `name` beneath `parent`. */
static uint32_t child_named(const gpuprof_an_db *db, uint32_t parent,
                            const char *name)
{
    for (uint32_t c = 1; c < gpuprof_an_db_context_count(db); c++)
        if (gpuprof_an_db_context_parent(db, c) == parent &&
            !strcmp(gpuprof_an_db_context_name(db, c), name))
            return c;
    ck_abort_msg("no context '%s' beneath %u", name, parent);
    return UINT32_MAX;
}

static uint32_t metric_id(const gpuprof_an_db *db, const char *name,
                          gpuprof_an_variant v)
{
    uint32_t m;
    ck_assert_msg(gpuprof_an_db_metric_find(db, name, v, &m) == GPUPROF_OK,
                  "%s", gpuprof_an_last_error());
    return m;
}

START_TEST(importance_of_nested_regions)
{
    gpuprof_an_db *db = importance_db();
    ck_assert_uint_eq(gpuprof_an_db_profile_count(db), 2);
    ck_assert_uint_eq(gpuprof_an_db_context_count(db), 7);
    uint32_t outer = child_named(db, 0, "outer");
    uint32_t inner = child_named(db, outer, "inner");
    uint32_t isync = child_named(db, inner, "<sync>");
    uint32_t launch = child_named(db, outer, "<kernel launch>");
    uint32_t k = child_named(db, launch, "kernel k");
    uint32_t osync = child_named(db, outer, "<sync>");
    /* The inputs are what the comment above says. */
    uint32_t rx = metric_id(db, "region.time.excl", GPUPROF_AN_INCLUSIVE);
    uint32_t ri = metric_id(db, "region.time.incl", GPUPROF_AN_INCLUSIVE);
    ck_assert(gpuprof_an_db_stat(db, 0, rx, GPUPROF_AN_STAT_SUM) == 1500);
    /* region.time.incl is measured inclusive: never summed again (inner's
     * 600 is inside outer's 1000): the root holds p0's 1000 and p1's 500,
     * outer its own 1500, inner its 600, as region.time.excl rolled up. */
    ck_assert(gpuprof_an_db_stat(db, 0, ri, GPUPROF_AN_STAT_SUM) == 1500);
    ck_assert(gpuprof_an_db_stat(db, outer, ri, GPUPROF_AN_STAT_SUM) == 1500);
    ck_assert(gpuprof_an_db_stat(db, inner, ri, GPUPROF_AN_STAT_SUM) == 600);
    ck_assert(gpuprof_an_db_value(db, 0, 0, ri) == 1000);
    ck_assert(gpuprof_an_db_value(db, 1, 0, ri) == 500);
    ck_assert(gpuprof_an_db_stat(db, 0, ri, GPUPROF_AN_STAT_MAX) == 1000);
    ck_assert_uint_eq(gpuprof_an_db_context_values(db, 0, ri, NULL, NULL, 9),
                      2);
    ck_assert_uint_eq(gpuprof_an_db_metric_flags(db, ri),
                      GPUPROF_AN_METRIC_NO_EXCLUSIVE);
    ck_assert_uint_eq(gpuprof_an_db_metric_flags(db, rx), 0);
    ck_assert(gpuprof_an_db_stat(
                  db, osync, metric_id(db, "api.time", GPUPROF_AN_EXCLUSIVE),
                  GPUPROF_AN_STAT_SUM) == 100);

    ck_assert_int_eq(gpuprof_an_db_add_importance(db, 0), GPUPROF_OK);
    uint32_t ci = metric_id(db, "cpu_importance", GPUPROF_AN_INCLUSIVE);
    uint32_t ce = metric_id(db, "cpu_importance", GPUPROF_AN_EXCLUSIVE);
    uint32_t gi = metric_id(db, "gpu_api_importance", GPUPROF_AN_INCLUSIVE);
    uint32_t ge = metric_id(db, "gpu_api_importance", GPUPROF_AN_EXCLUSIVE);
    static const gpuprof_an_stat S = GPUPROF_AN_STAT_SUM;
    /* cpu_importance, inclusive, over sums. */
    ck_assert(gpuprof_an_db_stat(db, 0, ci, S) == 1250.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, outer, ci, S) == 1250.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, inner, ci, S) == 450.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, isync, ci, S) == 0);
    ck_assert(gpuprof_an_db_stat(db, launch, ci, S) == 0);
    ck_assert(gpuprof_an_db_stat(db, k, ci, S) == 0);
    ck_assert(gpuprof_an_db_stat(db, osync, ci, S) == 0);
    /* Per profile, and the statistics over them. */
    ck_assert(gpuprof_an_db_value(db, 0, outer, ci) == 850.0 / 1500);
    ck_assert(gpuprof_an_db_value(db, 1, outer, ci) == 400.0 / 1500);
    ck_assert(gpuprof_an_db_value(db, 0, inner, ci) == 450.0 / 1500);
    ck_assert(gpuprof_an_db_value(db, 1, inner, ci) == 0);
    ck_assert(gpuprof_an_db_stat(db, outer, ci, GPUPROF_AN_STAT_MIN) ==
              400.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, outer, ci, GPUPROF_AN_STAT_MAX) ==
              850.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, outer, ci, GPUPROF_AN_STAT_COUNT) == 2);
    /* Exclusive: each context's own time. */
    ck_assert(gpuprof_an_db_stat(db, 0, ce, S) == 0);
    ck_assert(gpuprof_an_db_stat(db, outer, ce, S) == 900.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, inner, ce, S) == 600.0 / 1500);
    ck_assert(gpuprof_an_db_stat(db, isync, ce, S) == 0);
    /* gpu_api_importance. */
    ck_assert(gpuprof_an_db_stat(db, 0, gi, S) == 1);
    ck_assert(gpuprof_an_db_stat(db, outer, gi, S) == 1);
    ck_assert(gpuprof_an_db_stat(db, inner, gi, S) == 150.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, isync, gi, S) == 150.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, launch, gi, S) == 300.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, k, gi, S) == 300.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, osync, gi, S) == 100.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, launch, ge, S) == 0);
    ck_assert(gpuprof_an_db_stat(db, k, ge, S) == 300.0 / 550);
    ck_assert(gpuprof_an_db_stat(db, osync, ge, S) == 100.0 / 550);
    /* Adding them again adds nothing. */
    uint32_t nm = gpuprof_an_db_metric_count(db);
    ck_assert_int_eq(gpuprof_an_db_add_importance(db, 0), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm);
    ck_assert_int_eq(gpuprof_an_db_add_importance(db, 1), GPUPROF_E_INVALID);
    gpuprof_an_db_close(db);
}
END_TEST

/* C++ and CUDA names are shown demangled; a name that only looks mangled
 * stays as it is; GPUPROF_DEMANGLE=0 keeps every name as measured. */
static gpuprof_an_db *mangled_db(void)
{
    tp_builder *b = tp_new("cxx", 3, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t launch = tp_gpu_op(b, 0, GPUPROF_OP_KERNEL);
    tp_kernel(b, launch, "_Z10scale_biasPfiffi", UINT32_MAX);
    tp_kernel(b, launch, "_Znot_really", UINT32_MAX);
    tp_kernel(b, launch, "plain_c", UINT32_MAX);
    return db_of(&b, 1, 1);
}

/* ---- devices: profiles' DEVICES into meta.db (format 5) ----------------
 * Two processes with devices and one without, in input order: process 0
 * (two threads, profiles 0-1) a CUDA device and an OpenCL one, process 1
 * (profile 2) none, process 2 (profile 3) CUDA device 1. Each device's
 * process is its first profile; attributes by name, numbers and strings;
 * a database without devices stays format 3. */
START_TEST(devices_in_meta_db)
{
    tp_builder *b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = tp_new("dev", 10 + (uint32_t)i, -1);
        tp_thread(b[i], "main", GPUPROF_IO_THREAD_MAIN);
        tp_region(b[i], 0, "main", 1, 100, 100);
    }
    tp_thread(b[0], "worker", 0);
    tp_region(b[0], 0, "work", 1, 50, 50);
    tp_device_attr(b[0], "cuda", 0, "name", "NVIDIA H100 80GB HBM3", 0);
    tp_device_attr(b[0], "cuda", 0, "sm_count", NULL, 132);
    tp_device_attr(b[0], "cuda", 0, "max_threads_per_sm", NULL, 2048);
    tp_device_attr(b[0], "opencl", 0, "sm_count", NULL, 2);
    tp_device_attr(b[2], "cuda", 1, "sm_count", NULL, 108);
    gpuprof_an_db *db = db_of(b, 3, 1);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 5);
    ck_assert_uint_eq(gpuprof_an_db_device_count(db), 3);
    ck_assert_str_eq(gpuprof_an_db_device_api(db, 0), "cuda");
    ck_assert_uint_eq(gpuprof_an_db_device_number(db, 0), 0);
    ck_assert_uint_eq(gpuprof_an_db_device_profile(db, 0), 0);
    uint64_t v = 0;
    const char *text = "x";
    ck_assert_int_eq(gpuprof_an_db_device_attr(db, 0, "sm_count", &v, &text),
                     1);
    ck_assert_uint_eq(v, 132);
    ck_assert_ptr_null(text);
    ck_assert_int_eq(gpuprof_an_db_device_attr(db, 0, "name", &v, &text), 1);
    ck_assert_str_eq(text, "NVIDIA H100 80GB HBM3");
    ck_assert_int_eq(gpuprof_an_db_device_attr(db, 0, "warp_size", &v, NULL),
                     0);
    ck_assert_str_eq(gpuprof_an_db_device_key(db, 0, 2), "max_threads_per_sm");
    ck_assert_ptr_null(gpuprof_an_db_device_key(db, 0, 3));
    ck_assert_str_eq(gpuprof_an_db_device_api(db, 1), "opencl");
    ck_assert_uint_eq(gpuprof_an_db_device_profile(db, 1), 0);
    ck_assert_str_eq(gpuprof_an_db_device_api(db, 2), "cuda");
    ck_assert_uint_eq(gpuprof_an_db_device_number(db, 2), 1);
    ck_assert_uint_eq(gpuprof_an_db_device_profile(db, 2), 3);
    ck_assert_str_eq(gpuprof_an_db_profile_thread_name(db, 3), "main");
    ck_assert_int_eq(gpuprof_an_db_device_attr(db, 2, "sm_count", &v, NULL),
                     1);
    ck_assert_uint_eq(v, 108);
    ck_assert_ptr_null(gpuprof_an_db_device_api(db, 3));
    ck_assert_uint_eq(gpuprof_an_db_device_profile(db, 3), UINT32_MAX);
    gpuprof_an_db_close(db);

    tp_builder *plain = tp_new("dev", 20, -1);
    tp_thread(plain, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(plain, 0, "main", 1, 100, 100);
    db = db_of(&plain, 1, 1);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 3);
    ck_assert_uint_eq(gpuprof_an_db_device_count(db), 0);
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(demangled_names)
{
    gpuprof_an_db *db = mangled_db();
    uint32_t launch = child_named(db, 0, "<kernel launch>");
    child_named(db, launch, "kernel scale_bias(float*, int, float, float, int)");
    child_named(db, launch, "kernel _Znot_really");
    child_named(db, launch, "kernel plain_c");
    gpuprof_an_db_close(db);
}
END_TEST

START_TEST(demangle_off)
{
    setenv("GPUPROF_DEMANGLE", "0", 1);
    gpuprof_an_db *db = mangled_db();
    uint32_t launch = child_named(db, 0, "<kernel launch>");
    child_named(db, launch, "kernel _Z10scale_biasPfiffi");
    gpuprof_an_db_close(db);
    unsetenv("GPUPROF_DEMANGLE");
}
END_TEST

/* cct.db values carry the profile as a u16 up to 65,536 profiles and as
 * a u32 past that: one process of 65,537 threads (profiles), thread i
 * with region "r" visited i + 1 times, read back through both layouts'
 * reader (context-major and the profile-major check). */
START_TEST(cms_wide_profile_ids)
{
    enum { NT = 65537 };
    tp_builder *b = tp_new("wide", 5, 0);
    for (uint32_t t = 0; t < NT; t++) {
        tp_thread(b, t ? "w" : "main", t ? 0 : GPUPROF_IO_THREAD_MAIN);
        tp_region(b, 0, "r", t + 1, 0, 0);
    }
    gpuprof_an_db *db = db_of(&b, 1, 2);
    ck_assert_uint_eq(gpuprof_an_db_profile_count(db), NT);
    uint32_t r = child_named(db, 0, "r");
    uint32_t m = metric_id(db, "region.visits", GPUPROF_AN_EXCLUSIVE);
    uint32_t *prof = malloc(NT * sizeof(uint32_t));
    double *val = malloc(NT * sizeof(double));
    ck_assert_uint_eq(gpuprof_an_db_context_values(db, r, m, prof, val, NT), NT);
    for (uint32_t i = 0; i < NT; i++) {
        ck_assert_uint_eq(prof[i], i);
        /* The profile's own value, as profile.db has it. */
        ck_assert(val[i] == gpuprof_an_db_value(db, prof[i], r, m));
    }
    ck_assert(gpuprof_an_db_value(db, NT - 1, r, m) == NT);
    ck_assert(gpuprof_an_db_stat(db, r, m, GPUPROF_AN_STAT_SUM) ==
              (double)NT * (NT + 1) / 2);
    free(prof);
    free(val);
    gpuprof_an_db_close(db);
}
END_TEST

/* PC samples (seed 001): one kernel, two sampled instructions in one
 * profile, one in the other.
 *   +0x40: 6 samples, 2 latency (profile 0); 4 samples, 4 latency (1)
 *   +0x70: 1 sample, none latency (profile 0)
 * issue rate = (S - S_L) / S: +0x40 (10 - 6) / 10 = 0.4, +0x70 1, the
 * kernel (11 - 6) / 11; shares 10/11 and 1/11. */
START_TEST(pc_metrics)
{
    tp_builder *bs[2];
    for (int r = 0; r < 2; r++) {
        tp_builder *b = bs[r] = tp_new("pcs", 10 + (uint32_t)r, r);
        uint32_t s = tp_metric(b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                               GPUPROF_IO_KIND_INSTR);
        uint32_t l = tp_metric(b, "gpu.pc.latency_samples",
                               GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR);
        uint32_t bin = tp_gpu_module(b, "binaries/aa.cubin");
        tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
        uint32_t launch = tp_gpu_op(b, 0, GPUPROF_OP_KERNEL);
        uint32_t k = tp_kernel(b, launch, "k", bin);
        uint32_t i40 = tp_gpu_instr(b, k, bin, 0x40);
        tp_node_value(b, i40, s, r ? 4 : 6);
        tp_node_value(b, i40, l, r ? 4 : 2);
        if (!r) {
            uint32_t i70 = tp_gpu_instr(b, k, bin, 0x70);
            tp_node_value(b, i70, s, 1);
        }
    }
    gpuprof_an_db *db = db_of(bs, 2, 1);
    uint32_t launch = child_named(db, 0, "<kernel launch>");
    uint32_t k = child_named(db, launch, "kernel k");
    ck_assert_str_eq(gpuprof_an_db_context_binary(db, k), "binaries/aa.cubin");
    ck_assert_ptr_null(gpuprof_an_db_context_binary(db, launch));
    uint32_t i40 = child_named(db, k, "aa.cubin+0x40");
    uint32_t i70 = child_named(db, k, "aa.cubin+0x70");
    ck_assert_int_eq(gpuprof_an_db_add_pc_metrics(db, 0), GPUPROF_OK);
    uint32_t ir = metric_id(db, "gpu.pc.issue_rate", GPUPROF_AN_INCLUSIVE);
    uint32_t sh = metric_id(db, "gpu.pc.sample_share", GPUPROF_AN_INCLUSIVE);
    static const gpuprof_an_stat S = GPUPROF_AN_STAT_SUM;
    ck_assert(gpuprof_an_db_stat(db, i40, ir, S) == 0.4);
    ck_assert(gpuprof_an_db_stat(db, i70, ir, S) == 1);
    ck_assert(gpuprof_an_db_stat(db, k, ir, S) == 5.0 / 11);
    ck_assert(gpuprof_an_db_stat(db, 0, ir, S) == 5.0 / 11);
    ck_assert(gpuprof_an_db_stat(db, i40, sh, S) == 10.0 / 11);
    ck_assert(gpuprof_an_db_stat(db, i70, sh, S) == 1.0 / 11);
    /* Per profile: +0x40 issued 4 of 6 in one, none of 4 in the other. */
    ck_assert(gpuprof_an_db_value(db, 0, i40, ir) == 4.0 / 6);
    ck_assert(gpuprof_an_db_value(db, 1, i40, ir) == 0);
    /* Twice: nothing more. */
    uint32_t n = gpuprof_an_db_metric_count(db);
    ck_assert_int_eq(gpuprof_an_db_add_pc_metrics(db, 0), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), n);
    ck_assert_int_eq(gpuprof_an_db_add_pc_metrics(db, 1), GPUPROF_E_INVALID);
    gpuprof_an_db_close(db);
    /* A database without PC samples says so. */
    gpuprof_an_db *db2 = importance_db();
    ck_assert_int_eq(gpuprof_an_db_add_pc_metrics(db2, 0), GPUPROF_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "GPUPROF_CUPTI_PC_SAMPLING"));
    gpuprof_an_db_close(db2);
}
END_TEST

/* Each formula error: its status, and a message that says what is wrong
 * and at which byte offset; nothing is added. */
START_TEST(formula_errors)
{
    gpuprof_an_db *db = importance_db();
    uint32_t nm = gpuprof_an_db_metric_count(db);
    char longname[400], nested[200], many[1000];
    snprintf(longname, sizeof(longname), "\"%0300d\" + 1", 0);
    memset(nested, '-', 100);
    snprintf(nested + 100, sizeof(nested) - 100, "1");
    for (int i = 0; i < 300; i++)
        memcpy(many + 2 * i, "1+", 2);
    snprintf(many + 600, sizeof(many) - 600, "1");
    const struct {
        const char *formula;
        gpuprof_status st;
        const char *message; /* after "formula '...': " */
    } cases[] = {
        {"region.visits +", GPUPROF_E_INVALID,
         "a metric name, number or '(' expected at offset 15"},
        {"", GPUPROF_E_INVALID,
         "a metric name, number or '(' expected at offset 0"},
        {"(region.visits", GPUPROF_E_INVALID, "')' expected at offset 14"},
        {"region.visits )", GPUPROF_E_INVALID, "unexpected ')' at offset 14"},
        {"region.visits # 2", GPUPROF_E_INVALID, "unexpected '#' at offset 14"},
        {"region.visits \x01", GPUPROF_E_INVALID,
         "unexpected byte 0x01 at offset 14"},
        {"no.such * 2", GPUPROF_E_NOTFOUND,
         "no metric named 'no.such' at offset 0"},
        {"2 * no.such", GPUPROF_E_NOTFOUND,
         "no metric named 'no.such' at offset 4"},
        {"0x10", GPUPROF_E_INVALID, "bad number at offset 0"},
        {"1 + 2x", GPUPROF_E_INVALID, "bad number at offset 4"},
        {"1e999", GPUPROF_E_INVALID, "bad number at offset 0"},
        {"max(region.visits)", GPUPROF_E_INVALID,
         "',' expected: max and min take two arguments at offset 17"},
        {"min(1, 2, 3)", GPUPROF_E_INVALID,
         "max and min take two arguments at offset 8"},
        {"max(1, 2", GPUPROF_E_INVALID, "')' expected at offset 8"},
        {"log(region.visits)", GPUPROF_E_INVALID,
         "unknown function 'log' (max, min, whole) at offset 0"},
        {"whole()", GPUPROF_E_INVALID,
         "whole() takes one metric name at offset 6"},
        {"whole((region.visits))", GPUPROF_E_INVALID,
         "whole() takes one metric name at offset 6"},
        {"whole(region.visits + 1)", GPUPROF_E_INVALID,
         "')' expected: whole() takes one metric name at offset 20"},
        {"whole(region.visits", GPUPROF_E_INVALID,
         "')' expected: whole() takes one metric name at offset 19"},
        {"1 / whole(nope)", GPUPROF_E_NOTFOUND,
         "no metric named 'nope' at offset 10"},
        {"whole(\"a)b\")", GPUPROF_E_NOTFOUND,
         "no metric named 'a)b' at offset 6"},
        {"\"region.visits", GPUPROF_E_INVALID, "unterminated name at offset 0"},
        {"1 + \"\"", GPUPROF_E_INVALID, "empty name at offset 4"},
        {longname, GPUPROF_E_INVALID, "name longer than 255 bytes at offset 0"},
        {nested, GPUPROF_E_INVALID, "nested too deeply at offset 64"},
        {many, GPUPROF_E_INVALID, "too long at offset "},
    };
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpuprof_status st = gpuprof_an_db_derive(db, "x", cases[i].formula);
        const char *e = gpuprof_an_last_error();
        ck_assert_msg(st == cases[i].st, "'%s': status %d, want %d (%s)",
                      cases[i].formula, st, cases[i].st, e);
        char want[1500];
        snprintf(want, sizeof(want), "formula '%s': %s", cases[i].formula,
                 cases[i].message);
        ck_assert_msg(!strncmp(e, want, strlen(want)), "'%s': got \"%s\"",
                      cases[i].formula, e);
    }
    ck_assert_uint_eq(gpuprof_an_db_metric_count(db), nm);
    /* What is allowed: spaces, quoted names in whole(), nesting to 64. */
    ck_assert_int_eq(
        gpuprof_an_db_derive(db, "ok1", "whole( \"region.visits\" )"),
        GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "ok2", "max( 1e3 , .5 ) - -(1)"),
                     GPUPROF_OK);
    ck_assert(gpuprof_an_db_value(db, 0, 1,
                                  metric_id(db, "ok1", GPUPROF_AN_INCLUSIVE)) ==
              gpuprof_an_db_stat(
                  db, 0, metric_id(db, "region.visits", GPUPROF_AN_INCLUSIVE),
                  GPUPROF_AN_STAT_SUM));
    ck_assert(gpuprof_an_db_value(db, 0, 1,
                                  metric_id(db, "ok2", GPUPROF_AN_EXCLUSIVE)) ==
              1001);
    memset(nested, '-', 63);
    snprintf(nested + 63, sizeof(nested) - 63, "1");
    ck_assert_int_eq(gpuprof_an_db_derive(db, "ok3", nested), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_derive(db, "ok3", "1"), GPUPROF_E_INVALID);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "exists already"));
    ck_assert_int_eq(gpuprof_an_db_derive(db, "", "1"), GPUPROF_E_INVALID);
    gpuprof_an_db_close(db);
}
END_TEST

typedef struct rounds {
    unsigned values, transpose; /* progress calls */
} rounds;

static void count_rounds(const char *phase, uint64_t done, uint64_t total,
                         void *user)
{
    rounds *n = user;
    (void)done, (void)total;
    n->values += !strcmp(phase, "values");
    n->transpose += !strcmp(phase, "transpose");
}

/* Input several times larger than what a 16 MiB budget leaves for rounds:
 * the same bytes as without one, done in rounds, and the command stays
 * within the budget (peak resident memory of the process). */
START_TEST(memory_budget_changes_no_byte)
{
    mkdir_tmp();
    char in[600], d1[600], d2[600];
    sub(in, sizeof(in), "run");
    sub(d1, sizeof(d1), "db1");
    sub(d2, sizeof(d2), "db2");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    gen_opts o = {.procs = 48,
                  .threads = 4,
                  .seed = 3,
                  .fanout = 4,
                  .depth = 8,
                  .pid0 = 500,
                  .spmd = 1};
    ck_assert_int_eq(gen_write(in, &o, &t), 0);
    gen_truth_free(&t);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, d1, 1), GPUPROF_OK);

    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, 1u << 20),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, GPUPROF_AN_MIN_MEMORY),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, d2), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(a, 2), GPUPROF_OK);
    rounds n = {0};
    ck_assert_int_eq(gpuprof_an_analysis_set_progress(a, count_rounds, &n),
                     GPUPROF_OK);
    ck_assert_msg(gpuprof_an_analysis_run(a) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    /* Start, end and one call per further round. */
    ck_assert_uint_gt(n.values, 3);
    ck_assert_uint_gt(n.transpose, 3);
    same_db(d1, d2, "with a memory budget");
    /* No temporary file is left beside them. */
    char tmpf[800];
    snprintf(tmpf, sizeof(tmpf), "%s/.profile.db.tmp-%ld", d2, (long)getpid());
    ck_assert_int_ne(access(tmpf, F_OK), 0);

    /* The command, as a user runs it, within the budget: only from the
     * plain build (sanitizers multiply memory). */
    const char *b = getenv("B");
    if (b && strcmp(b, "build"))
        return;
    if (access("build/bin/gpuprof", X_OK) != 0)
        return;
    struct rusage ru;
    int status = 0;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char d3[700];
        snprintf(d3, sizeof(d3), "%s/db3", tmp);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execl("build/bin/gpuprof", "gpuprof", "analyze", "-j", "2", "--memory",
              "16M", "-o", d3, in, (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "gpuprof analyze --memory 16M failed");
    ck_assert_msg(ru.ru_maxrss <= 16 * 1024, "peak %ld KiB over 16 MiB",
                  ru.ru_maxrss);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"truth_and_threads",
         aggregates_equal_the_truth_and_threads_change_no_byte, 120},
        {"rewrite_in_place", rewrite_in_place, 120},
        {"runs_merge", runs_merge, 120},
        {"damage", damage_is_refused_with_the_file_name, 120},
        {"views", views_resum, 120},
        {"crafted", crafted_content_is_refused, 120},
        {"memory_budget", memory_budget_changes_no_byte, 240},
        {"derived_views", derived_metrics_and_views, 120},
        {"derived_operand_limit", derived_operand_limit, 60},
        {"pc_metrics", pc_metrics, 60},
        {"cms_wide_profile_ids", cms_wide_profile_ids, 240},
        {"devices_in_meta_db", devices_in_meta_db, 60},
        {"demangled_names", demangled_names, 60},
        {"demangle_off", demangle_off, 60},
        {"importance", importance_of_nested_regions, 60},
        {"formula_errors", formula_errors, 60},
    };
    return RUN_SUITE("an_db", cases);
}
