/*
 * check_an_ranks.c - the aggregation on several ranks (an_coll.h) without
 * MPI: the ranks are threads of this process, their collective operations
 * done in lockstep through a barrier. Every database file must be the
 * same bytes as the single-process run's, for any number of ranks (more
 * than there are files included), with a memory budget, and where the
 * merge order matters: a metric whose description differs from an
 * earlier file's (not interned), a metric that appears late, strings that
 * are both a metric's description and a region's name. A damaged file on
 * one rank fails every rank with its message and leaves nothing behind.
 * (tests/scripts/mpi-analyze.sh does the same through gpuprof-mpi.)
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/coll/an_coll.h"
#include "gpuprof_analysis.h"
#include "io/io.h"
#include "support/files.h"
#include "support/gen.h"
#include "support/mkprofile.h"
#include "support/pcfixture.h"
#include "support/suite.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/gpu-sm90"
#endif

/* ---- ranks as threads ------------------------------------------------ */
#define MAX_RANKS 8

typedef struct shared {
    int size;
    pthread_barrier_t bar;
    uint64_t *vec[MAX_RANKS];
    const void *blob[MAX_RANKS];
    uint64_t bsize[MAX_RANKS];
} shared;

typedef struct tctx {
    shared *sh;
    int rank;
} tctx;

static int t_barrier(void *ctx)
{
    tctx *t = ctx;
    pthread_barrier_wait(&t->sh->bar);
    return 0;
}

/* v = op over ranks [0, upto) of their v (upto = size: allreduce). */
static int t_reduce(tctx *t, uint64_t *v, size_t n, gpuprof__an_op op, int upto)
{
    shared *sh = t->sh;
    sh->vec[t->rank] = v;
    uint64_t *out = calloc(n ? n : 1, sizeof(*out));
    if (!out)
        return 1;
    t_barrier(t);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = op == GPUPROF__AN_MIN ? UINT64_MAX : 0;
        for (int k = 0; k < upto; k++) {
            uint64_t y = sh->vec[k][i];
            x = op == GPUPROF__AN_SUM   ? x + y
                : op == GPUPROF__AN_MIN ? (y < x ? y : x)
                                        : (y > x ? y : x);
        }
        out[i] = x;
    }
    t_barrier(t); /* everyone has read every v */
    memcpy(v, out, n * sizeof(*v));
    free(out);
    return 0;
}

static int t_allreduce(void *ctx, uint64_t *v, size_t n, gpuprof__an_op op)
{
    tctx *t = ctx;
    return t_reduce(t, v, n, op, t->sh->size);
}

static int t_exscan(void *ctx, uint64_t *v, size_t n)
{
    tctx *t = ctx;
    return t_reduce(t, v, n, GPUPROF__AN_SUM, t->rank);
}

static int t_gather(void *ctx, const void *blob, uint64_t size,
                    gpuprof__an_blob_fn each, void *arg)
{
    tctx *t = ctx;
    t->sh->blob[t->rank] = blob;
    t->sh->bsize[t->rank] = size;
    t_barrier(t);
    for (int k = 0; t->rank == 0 && k < t->sh->size; k++)
        each(arg, k, t->sh->blob[k], t->sh->bsize[k]);
    t_barrier(t);
    return 0;
}

static int t_bcast(void *ctx, int root, void **blob, uint64_t *size)
{
    tctx *t = ctx;
    if (t->rank == root) {
        t->sh->blob[0] = *blob;
        t->sh->bsize[0] = *size;
    }
    t_barrier(t);
    if (t->rank != root) {
        *size = t->sh->bsize[0];
        *blob = *size ? malloc(*size) : NULL;
        if (*size)
            memcpy(*blob, t->sh->blob[0], *size);
    }
    t_barrier(t);
    return 0;
}

typedef struct job {
    tctx t;
    gpuprof__an_coll c;
    const char *const *in;
    unsigned nin;
    const char *out;
    uint64_t memory;
    gpuprof_status st;
    char err[1024];
} job;

static void *rank_main(void *arg)
{
    job *j = arg;
    gpuprof_an_analysis *a;
    if (gpuprof_an_analysis_new(&a) != GPUPROF_OK)
        return NULL;
    for (unsigned i = 0; i < j->nin; i++)
        gpuprof_an_analysis_add_input(a, j->in[i]);
    gpuprof_an_analysis_set_output(a, j->out);
    gpuprof_an_analysis_set_threads(a, 2);
    gpuprof_an_analysis_set_memory(a, j->memory);
    j->st = gpuprof__an_analysis_run_ranks(a, &j->c);
    snprintf(j->err, sizeof(j->err), "%s", gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    return NULL;
}

/* The analysis on `n` ranks; rank 0's status (every rank's must agree). */
static gpuprof_status analyze_ranks(const char *const *in, unsigned nin,
                                    const char *out, int n, uint64_t memory,
                                    char *err, size_t esize)
{
    shared sh = {.size = n};
    job j[MAX_RANKS];
    pthread_t th[MAX_RANKS];
    ck_assert_int_le(n, MAX_RANKS);
    pthread_barrier_init(&sh.bar, NULL, (unsigned)n);
    for (int k = 0; k < n; k++) {
        j[k] = (job){.t = {&sh, k},
                     .in = in,
                     .nin = nin,
                     .out = out,
                     .memory = memory,
                     .st = GPUPROF_E_INTERNAL};
        j[k].c = (gpuprof__an_coll){k,           n,        &j[k].t,  t_barrier,
                                    t_allreduce, t_exscan, t_gather, t_bcast};
        ck_assert_int_eq(pthread_create(&th[k], NULL, rank_main, &j[k]), 0);
    }
    for (int k = 0; k < n; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&sh.bar);
    for (int k = 1; k < n; k++) {
        ck_assert_int_eq(j[k].st, j[0].st);
        ck_assert_str_eq(j[k].err, j[0].err);
    }
    snprintf(err, esize, "%s", j[0].err);
    return j[0].st;
}

/* ---- the tests ------------------------------------------------------- */
static char tmp[512];

static void mkdir_tmp(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anranks.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void sub(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmp, name);
}

static gpuprof_status analyze(const char *const *in, unsigned nin,
                              const char *out)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    for (unsigned i = 0; i < nin; i++)
        ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in[i]), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    gpuprof_status st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    return st;
}

static const char *const dbfiles[] = {"meta.db", "profile.db", "cct.db",
                                      "stats.db", "trace.db"};

/* Every file of database a is in b, the same bytes; b holds nothing else
 * (no temporary files left). */
static void same_db(const char *a, const char *b, const char *what)
{
    for (int i = 0; i < 5; i++) {
        char pa[700], pb[700];
        size_t na = 0, nb = 0;
        snprintf(pa, sizeof(pa), "%s/%s", a, dbfiles[i]);
        snprintf(pb, sizeof(pb), "%s/%s", b, dbfiles[i]);
        char *da = tf_read(pa, &na), *db = tf_read(pb, &nb);
        ck_assert_msg(!da == !db, "%s: %s only in one", what, dbfiles[i]);
        if (da)
            ck_assert_msg(na == nb && !memcmp(da, db, na),
                          "%s: %s differs from the single-process run's", what,
                          dbfiles[i]);
        free(da);
        free(db);
    }
    DIR *d = opendir(b);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));)
        ck_assert_msg(e->d_name[0] != '.' || !strcmp(e->d_name, ".") ||
                          !strcmp(e->d_name, ".."),
                      "%s: %s left behind", what, e->d_name);
    closedir(d);
}

static const gen_opts base = {
    .procs = 3, .threads = 3, .seed = 11, .fanout = 4, .depth = 5, .pid0 = 100};

START_TEST(the_same_bytes_on_any_number_of_ranks)
{
    mkdir_tmp();
    char r1[600], r2[600], one[600], many[600];
    sub(r1, sizeof(r1), "run1");
    sub(r2, sizeof(r2), "run2");
    sub(one, sizeof(one), "one");
    ck_assert_int_eq(mkdir(r1, 0755), 0);
    ck_assert_int_eq(mkdir(r2, 0755), 0);
    gen_truth t = {0};
    gen_opts o = base;
    ck_assert_int_eq(gen_write(r1, &o, &t), 0);
    o.seed = 5, o.pid0 = 500, o.procs = 2, o.spmd = 1;
    ck_assert_int_eq(gen_write(r2, &o, &t), 0);
    gen_truth_free(&t);
    const char *ins[] = {r1, r2};
    ck_assert_int_eq(analyze(ins, 2, one), GPUPROF_OK);
    char err[1024], what[64];
    /* 5 files: 7 ranks leave some with none. */
    static const int ranks[] = {1, 2, 3, 5, 7};
    for (int i = 0; i < 5; i++) {
        snprintf(many, sizeof(many), "%s/db%d", tmp, ranks[i]);
        ck_assert_msg(analyze_ranks(ins, 2, many, ranks[i], 0, err,
                                    sizeof(err)) == GPUPROF_OK,
                      "%d ranks: %s", ranks[i], err);
        snprintf(what, sizeof(what), "%d ranks", ranks[i]);
        same_db(one, many, what);
    }
    /* A memory budget: rounds on every rank, profile.db read back. */
    snprintf(many, sizeof(many), "%s/budget", tmp);
    ck_assert_msg(analyze_ranks(ins, 2, many, 3, 16u << 20, err, sizeof(err)) ==
                      GPUPROF_OK,
                  "with a budget: %s", err);
    same_db(one, many, "3 ranks, 16 MiB each");
}
END_TEST

/* A file whose metric table differs from the others': region.time.excl
 * described otherwise (the single-process run never interns that
 * description: the metric is known), test.ratio renamed late.metric (new:
 * its name and description interned where the file's metrics are), both
 * strings also region names further down. */
static void odd_file(const char *path, uint32_t pid)
{
    tp_builder *b = tp_new("otherhost", pid, 3);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t a = tp_region(b, 0, "solve", 1, 50, 20);
    uint32_t d1 = tp_region(b, a, "excl described otherwise", 2, 30, 30);
    tp_region(b, 0, "late.metric", 1, 7, 7);
    tp_region(b, d1, "late description", 1, 0, 0);
    tp_ratio(b, a, 0.25);
    gpuprof__io_profile *p = (gpuprof__io_profile *)tp_profile(b);
    ck_assert_uint_eq(p->metric_count, 4);
    p->metrics[TP_EXCL].description = p->nodes[d1].key_a;
    p->metrics[TP_RATIO].name = p->nodes[3].key_a;
    p->metrics[TP_RATIO].description = p->nodes[4].key_a;
    ck_assert_str_eq(gpuprof__io_str(p, p->metrics[TP_RATIO].name),
                     "late.metric");
    ck_assert_str_eq(gpuprof__io_str(p, p->metrics[TP_RATIO].description),
                     "late description");
    /* Devices (database format 5): strings new to the merge, and one the
     * file has as a region name too. */
    tp_device_attr(b, "cuda", 0, "name", "odd GPU", 0);
    tp_device_attr(b, "cuda", 0, "sm_count", NULL, pid);
    tp_device_attr(b, "opencl", 2, "late.metric", "solve", 0);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
}

START_TEST(merge_order_of_strings_and_metrics)
{
    mkdir_tmp();
    char in[600], one[600], many[600], path[700];
    sub(in, sizeof(in), "run");
    sub(one, sizeof(one), "one");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    ck_assert_int_eq(gen_write(in, &base, &t), 0);
    gen_truth_free(&t);
    /* One sorted after the first generated file (rank 0 has both: the
     * new metric comes after that file's strings), one last (the last
     * rank's first file: its metric table is new there, known to the
     * merge). */
    snprintf(path, sizeof(path), "%s/gen-p000100x-odd.gpuprof", in);
    odd_file(path, 900);
    snprintf(path, sizeof(path), "%s/zz-odd.gpuprof", in);
    odd_file(path, 901);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, one), GPUPROF_OK);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(one, &db), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 5);
    ck_assert_uint_eq(gpuprof_an_db_device_count(db), 4);
    gpuprof_an_db_close(db);
    char err[1024], what[64];
    for (int n = 2; n <= 5; n++) {
        snprintf(many, sizeof(many), "%s/db%d", tmp, n);
        ck_assert_msg(analyze_ranks(ins, 1, many, n, 0, err, sizeof(err)) ==
                          GPUPROF_OK,
                      "%d ranks: %s", n, err);
        snprintf(what, sizeof(what), "%d ranks", n);
        same_db(one, many, what);
    }
}
END_TEST

START_TEST(a_damaged_file_fails_every_rank)
{
    mkdir_tmp();
    char in[600], db[600], path[700], err[1024];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    gen_truth t = {0};
    gen_opts o = base;
    o.procs = 4;
    ck_assert_int_eq(gen_write(in, &o, &t), 0);
    gen_truth_free(&t);
    /* The last file: the last rank's. */
    snprintf(path, sizeof(path), "%s/zz-damaged.gpuprof", in);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("GPUPROF? this is no profile", f);
    fclose(f);
    const char *ins[] = {in};
    gpuprof_status st = analyze_ranks(ins, 1, db, 3, 0, err, sizeof(err));
    ck_assert_int_ne(st, GPUPROF_OK);
    ck_assert_msg(strstr(err, "rank 2: ") && strstr(err, "zz-damaged.gpuprof"),
                  "%s", err);
    struct stat sb;
    ck_assert_int_ne(stat(db, &sb), 0); /* nothing was made */
}
END_TEST

/* A metric that differs in unit between files on different ranks: the
 * merge on rank 0 finds it and names the later file. */
START_TEST(a_metric_conflict_across_ranks_names_the_file)
{
    mkdir_tmp();
    char in[600], db[600], path[700], err[1024];
    sub(in, sizeof(in), "run");
    sub(db, sizeof(db), "db");
    ck_assert_int_eq(mkdir(in, 0755), 0);
    for (int i = 0; i < 2; i++) {
        tp_builder *b = tp_new("h", 10 + (uint32_t)i, i);
        tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
        tp_region(b, 0, "solve", 1, 5, 5);
        gpuprof__io_profile *p = (gpuprof__io_profile *)tp_profile(b);
        if (i)
            p->metrics[TP_VISITS].unit = GPUPROF_IO_UNIT_BYTES;
        snprintf(path, sizeof(path), "%s/p%d.gpuprof", in, i);
        ck_assert_int_eq(tp_write(b, path, 1), 0);
        tp_free(b);
    }
    const char *ins[] = {in};
    ck_assert_int_ne(analyze(ins, 1, db), GPUPROF_OK);
    char single[1024];
    snprintf(single, sizeof(single), "%s", gpuprof_an_last_error());
    ck_assert_int_ne(analyze_ranks(ins, 1, db, 2, 0, err, sizeof(err)),
                     GPUPROF_OK);
    ck_assert_msg(strstr(err, "rank 1: ") && strstr(err, single), "%s / %s",
                  err, single);
}
END_TEST

/* A profile whose odd sum comes before its count metric in the table,
 * one node of each. */
static void odd_sum_file(const char *path)
{
    tp_builder *b = tp_new("gpuhost", 42, 1);
    tp_clear_metrics(b);
    uint32_t mr =
        tp_metric(b, "x.regs", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    uint32_t mc =
        tp_metric(b, "x.launches", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    tp_metric_ext(b, mr, GPUPROF_IO_SUM, GPUPROF_IO_METRIC_ODD, "x.launches");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t op = tp_gpu_op(b, tp_region(b, 0, "main", 0, 0, 0), 1);
    uint32_t k = tp_kernel(b, op, "k", UINT32_MAX);
    tp_node_value(b, k, mr, 64);
    tp_node_value(b, k, mc, 2);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
}

/* GPU calling contexts (the H100 fixture's PC samples, its cubin listed
 * by the fixture's nvdisasm stand-in; the split nodes' contexts renamed
 * into the merged tree's ids) and an odd sum whose count metric comes
 * after it: the same bytes. */
START_TEST(gpu_calling_contexts_and_metric_flags)
{
    mkdir_tmp();
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
    char in[600], one[600], many[600], path[800], cmd[2000];
    sub(in, sizeof(in), "run");
    sub(one, sizeof(one), "one");
    ck_assert_int_eq(pcfix_write(FIXTURES, in, 1), 0);
    for (int i = 1; i < 3; i++) {
        snprintf(cmd, sizeof(cmd),
                 "cp %s/h100-r0-p7.gpuprof %s/h100-r%d-p%d.gpuprof", in, in, i,
                 7 + i);
        ck_assert_int_eq(system(cmd), 0);
    }
    /* First: the ranks after rank 0 have contexts of other ids. */
    snprintf(path, sizeof(path), "%s/a-odd.gpuprof", in);
    odd_sum_file(path);
    const char *ins[] = {in};
    ck_assert_int_eq(analyze(ins, 1, one), GPUPROF_OK);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(one, &db), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 4);
    uint32_t m, cm;
    ck_assert_int_eq(
        gpuprof_an_db_metric_find(db, "x.regs", GPUPROF_AN_EXCLUSIVE, &m),
        GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_metric_count_metric(db, m, &cm), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_db_metric_name(db, cm), "x.launches");
    gpuprof_an_db_close(db);
    char err[1024], what[64];
    for (int n = 2; n <= 4; n++) {
        snprintf(many, sizeof(many), "%s/db%d", tmp, n);
        ck_assert_msg(analyze_ranks(ins, 1, many, n, n == 3 ? 16u << 20 : 0,
                                    err, sizeof(err)) == GPUPROF_OK,
                      "%d ranks: %s", n, err);
        snprintf(what, sizeof(what), "%d ranks", n);
        same_db(one, many, what);
    }
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"gpu_calling_contexts_and_metric_flags",
         gpu_calling_contexts_and_metric_flags, 120},
        {"the_same_bytes_on_any_number_of_ranks",
         the_same_bytes_on_any_number_of_ranks, 120},
        {"merge_order_of_strings_and_metrics",
         merge_order_of_strings_and_metrics, 60},
        {"a_damaged_file_fails_every_rank", a_damaged_file_fails_every_rank,
         60},
        {"a_metric_conflict_across_ranks_names_the_file",
         a_metric_conflict_across_ranks_names_the_file, 60},
    };
    return RUN_SUITE("an_ranks", cases);
}
