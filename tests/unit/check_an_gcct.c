/*
 * check_an_gcct.c - GPU calling contexts in the database (agg/an_gcct.c;
 * doc/ANALYSIS.md, "GPU calling contexts"): `gpuprof analyze` rebuilds the
 * tree beneath each kernel from its cubin (the H100 fixture's, listed by
 * the fixture's nvdisasm stand-in) and splits each sampled instruction's
 * values among its call paths gprof-style, exactly.
 *
 * The hand-computed case samples known instructions of kernels.cu's
 * `calls` kernel (kernel -> middle -> leaf, kernel -> leaf, kernel -> fib,
 * fib -> fib): CALL samples give the call sites' weights, leaf's samples
 * go 3:1 to its calls from middle (line 49, two call sites in two loops
 * of that line) and from the kernel (line 56), rounded by largest
 * remainder; fib is one recursive context. The whole fixture checks that every
 * kernel keeps its totals, and the database format: 4 with GPU calling contexts
 * or metric flags, 3 (as before) without.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "support/files.h"
#include "support/mkprofile.h"
#include "support/pcfixture.h"
#include "support/suite.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/gpu-sm90"
#endif
#define BIN "binaries/" PCFIX_HASH ".cubin"
#define KCALLS "kernel calls(float*, int*, int)" /* its binary: BIN */
#define CUBIN_NAME PCFIX_HASH ".cubin"

static void in_case_dir(void)
{
    char d[] = "caseXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(d));
    ck_assert_int_eq(chdir(d), 0);
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
    unsetenv("GPUPROF_DEMANGLE");
}

/* dir/binaries/<hash>.cubin: the fixture's cubin. */
static void with_cubin(const char *dir)
{
    char p[256];
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(p, sizeof(p), "%s/binaries", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    unsigned char *img;
    size_t n = tf_slurp(FIXTURES "/kernels.sm_90.cubin", &img);
    snprintf(p, sizeof(p), "%s/" BIN, dir);
    tf_spill(p, img, n);
    free(img);
}

typedef struct sample {
    uint64_t offset, samples, latency;
} sample;

/* A measurement `dir` whose one thread launched `calls` once, sampled at
 * the given instructions (offsets from the kernel's start). */
static void calls_measurement(const char *dir, const sample *s, size_t n,
                              bool odd_metric)
{
    with_cubin(dir);
    tp_builder *b = tp_new("h100", 9, 0);
    tp_clear_metrics(b);
    uint32_t ms = tp_metric(b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR);
    uint32_t ml = tp_metric(b, "gpu.pc.latency_samples", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR);
    uint32_t mc =
        tp_metric(b, "gpu.count", GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_GPU);
    uint32_t mr = odd_metric ? tp_metric(b, "x.regs", GPUPROF_IO_UNIT_COUNT,
                                         GPUPROF_IO_KIND_GPU)
                             : 0;
    if (odd_metric)
        tp_metric_ext(b, mr, GPUPROF_IO_SUM, GPUPROF_IO_METRIC_ODD,
                      "gpu.count");
    uint32_t bin = tp_gpu_module(b, BIN);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t op = tp_gpu_op(b, tp_region(b, 0, "main", 0, 0, 0), 1);
    uint32_t k = tp_kernel(b, op, "_Z5callsPfPii", bin);
    tp_node_value(b, k, mc, 1);
    if (odd_metric)
        tp_node_value(b, k, mr, 40);
    for (size_t i = 0; i < n; i++) {
        uint32_t nd = tp_gpu_instr(b, k, bin, s[i].offset);
        tp_node_value(b, nd, ms, s[i].samples);
        if (s[i].latency)
            tp_node_value(b, nd, ml, s[i].latency);
    }
    char p[256];
    snprintf(p, sizeof(p), "%s/h100-r0-p9.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, p, 1), 0);
    tp_free(b);
}

static gpuprof_an_db *analyze(const char *in, const char *out, unsigned threads,
                              uint64_t memory)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(a, threads), GPUPROF_OK);
    if (memory)
        ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, memory), GPUPROF_OK);
    ck_assert_msg(gpuprof_an_analysis_run(a) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(out, &db), GPUPROF_OK);
    return db;
}

/* The child of `parent` named `name`; UINT32_MAX when none. */
static uint32_t child(const gpuprof_an_db *db, uint32_t parent,
                      const char *name)
{
    uint32_t found = UINT32_MAX;
    for (uint32_t c = 1; c < gpuprof_an_db_context_count(db); c++)
        if (gpuprof_an_db_context_parent(db, c) == parent &&
            !strcmp(gpuprof_an_db_context_name(db, c), name)) {
            ck_assert_msg(found == UINT32_MAX, "two contexts %s", name);
            found = c;
        }
    return found;
}

/* The context at the end of a path of names from the root (NULL ends). */
static uint32_t at(const gpuprof_an_db *db, const char *const *names)
{
    uint32_t c = 0;
    for (; *names; names++) {
        c = child(db, c, *names);
        ck_assert_msg(c != UINT32_MAX, "no context %s", *names);
    }
    return c;
}

static uint32_t metric(const gpuprof_an_db *db, const char *name,
                       gpuprof_an_variant v)
{
    uint32_t m;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, name, v, &m), GPUPROF_OK);
    return m;
}

static double val(const gpuprof_an_db *db, uint32_t c, const char *name,
                  gpuprof_an_variant v)
{
    return gpuprof_an_db_value(db, 0, c, metric(db, name, v));
}

#define KPATH "main", "<kernel launch>", KCALLS
#define FN(f) f " (" CUBIN_NAME ")"
#define EXC GPUPROF_AN_EXCLUSIVE
#define INC GPUPROF_AN_INCLUSIVE

/* The call samples of the hand-computed case (doc in the file's head). */
static const sample HAND[] = {
    {0xa0, 3, 0},   /* kernel: CALL middle, line 56 */
    {0xd0, 1, 0},   /* kernel: CALL leaf, line 56 */
    {0x140, 2, 0},  /* kernel: CALL fib, line 57 */
    {0x1a0, 10, 0}, /* fib, line 52 */
    {0x270, 7, 0},  /* fib: CALL fib (recursion) */
    {0x380, 5, 0},  /* leaf, line 46 */
    {0x3a0, 8, 3},  /* leaf */
    {0x3c0, 6, 0},  /* middle, line 49 */
    {0x480, 2, 0},  /* middle: CALL leaf */
    {0x530, 1, 0},  /* middle: CALL leaf */
};

START_TEST(hand_computed)
{
    in_case_dir();
    calls_measurement("m", HAND, sizeof(HAND) / sizeof(*HAND), false);
    gpuprof_an_db *db = analyze("m", "db", 1, 0);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 4);
    const char *k[] = {KPATH, NULL};
    const char *l56[] = {KPATH, "kernels.cu:56", NULL};
    const char *mid[] = {KPATH, "kernels.cu:56", FN("middle(float, int)"),
                         NULL};
    const char *mid49[] = {KPATH, "kernels.cu:56", FN("middle(float, int)"),
                           "kernels.cu:49", NULL};
    const char *leaf_m[] = {KPATH,
                            "kernels.cu:56",
                            FN("middle(float, int)"),
                            "loop at kernels.cu:49",
                            "kernels.cu:49",
                            FN("leaf(float)"),
                            "kernels.cu:46",
                            NULL};
    const char *leaf_k[] = {KPATH, "kernels.cu:56", FN("leaf(float)"),
                            "kernels.cu:46", NULL};
    const char *l57[] = {KPATH, "kernels.cu:57", NULL};
    const char *fib[] = {KPATH, "kernels.cu:57", FN("fib(int) [recursive]"),
                         NULL};
    const char *fib52[] = {KPATH, "kernels.cu:57", FN("fib(int) [recursive]"),
                           "kernels.cu:52", NULL};
    /* leaf's 8 + 5 samples: 3/4 through middle (2 + 1 of 4 calls), 1/4
     * from the kernel: 6 + 3.75 -> 6 + 4, 2 + 1.25 -> 2 + 1 */
    ck_assert_double_eq(val(db, at(db, leaf_m), "gpu.pc.samples", EXC), 10);
    ck_assert_double_eq(val(db, at(db, leaf_k), "gpu.pc.samples", EXC), 3);
    /* latency 3: 2.25 + 0.75 -> 2 + 1 (the larger remainder) */
    ck_assert_double_eq(val(db, at(db, leaf_m), "gpu.pc.latency_samples", EXC),
                        2);
    ck_assert_double_eq(val(db, at(db, leaf_k), "gpu.pc.latency_samples", EXC),
                        1);
    /* middle's own: 6 before its loops, its calls' 2 + 1 in them */
    ck_assert_double_eq(val(db, at(db, mid49), "gpu.pc.samples", EXC), 6);
    const char *loop49[] = {KPATH,
                            "kernels.cu:56",
                            FN("middle(float, int)"),
                            "loop at kernels.cu:49",
                            "kernels.cu:49",
                            NULL};
    ck_assert_double_eq(val(db, at(db, loop49), "gpu.pc.samples", EXC), 3);
    ck_assert_int_eq(gpuprof_an_db_context_kind(
                         db, gpuprof_an_db_context_parent(db, at(db, loop49))),
                     GPUPROF_AN_NODE_LOOP);
    ck_assert_double_eq(val(db, at(db, mid), "gpu.pc.samples", INC), 19);
    ck_assert_double_eq(val(db, at(db, mid), "gpu.pc.samples", EXC), 0);
    ck_assert_double_eq(val(db, at(db, l56), "gpu.pc.samples", EXC), 4);
    ck_assert_double_eq(val(db, at(db, l56), "gpu.pc.samples", INC), 26);
    ck_assert_double_eq(val(db, at(db, l57), "gpu.pc.samples", EXC), 2);
    ck_assert_double_eq(val(db, at(db, fib52), "gpu.pc.samples", EXC), 17);
    ck_assert_double_eq(val(db, at(db, fib), "gpu.pc.samples", INC), 17);
    ck_assert_double_eq(val(db, at(db, k), "gpu.pc.samples", INC), 45);
    ck_assert_double_eq(val(db, at(db, k), "gpu.pc.latency_samples", INC), 3);
    /* what was apportioned is said: leaf's instructions sit in two
     * contexts (10 + 3 of their 13 samples), middle's and fib's in one */
    const char *ap = "gpu.pc.apportioned_samples";
    ck_assert_double_eq(val(db, at(db, leaf_m), ap, EXC), 10);
    ck_assert_double_eq(val(db, at(db, leaf_k), ap, EXC), 3);
    ck_assert_double_eq(val(db, at(db, mid49), ap, EXC), 0);
    ck_assert_double_eq(val(db, at(db, fib52), ap, EXC), 0);
    ck_assert_double_eq(val(db, at(db, mid), ap, INC), 10);
    ck_assert_double_eq(val(db, at(db, k), ap, INC), 13);
    /* the recursion is one context: fib's context has no fib beneath */
    uint32_t fibs = 0;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (gpuprof_an_db_context_kind(db, c) == GPUPROF_AN_NODE_GPU_FUNCTION &&
            strstr(gpuprof_an_db_context_name(db, c), "fib"))
            fibs++;
    ck_assert_uint_eq(fibs, 1);
    gpuprof_an_db_close(db);
}
END_TEST

/* No CALL sampled: every call site of a sampled function weighs 1 (seed
 * 000 §6.3 step 2): leaf's 8 samples go 5:1 to middle's five call sites
 * (one line) and the kernel's; 6.67 + 1.33 -> 7 + 1. */
START_TEST(static_weights)
{
    in_case_dir();
    static const sample s[] = {{0x3a0, 8, 0}};
    calls_measurement("m", s, 1, false);
    gpuprof_an_db *db = analyze("m", "db", 1, 0);
    const char *leaf_m[] = {KPATH,
                            "kernels.cu:56",
                            FN("middle(float, int)"),
                            "loop at kernels.cu:49",
                            "kernels.cu:49",
                            FN("leaf(float)"),
                            "kernels.cu:46",
                            NULL};
    const char *leaf_k[] = {KPATH, "kernels.cu:56", FN("leaf(float)"),
                            "kernels.cu:46", NULL};
    ck_assert_double_eq(val(db, at(db, leaf_m), "gpu.pc.samples", EXC), 7);
    ck_assert_double_eq(val(db, at(db, leaf_k), "gpu.pc.samples", EXC), 1);
    gpuprof_an_db_close(db);
}
END_TEST

/* Context c's subtree: the sum of exclusive values of metric m. */
static double subtree(const gpuprof_an_db *db, uint32_t c, uint32_t m)
{
    double sum = gpuprof_an_db_value(db, 0, c, m);
    for (uint32_t k = c + 1; k < gpuprof_an_db_context_count(db); k++)
        if (gpuprof_an_db_context_parent(db, k) == c)
            sum += subtree(db, k, m);
    return sum;
}

/* Every kernel of the fixture (Nsight Compute's samples): with its GPU
 * calling contexts, each metric's inclusive value is what it was without
 * them, and the exclusive values beneath it add up to it exactly. */
START_TEST(kernel_totals)
{
    in_case_dir();
    ck_assert_int_eq(pcfix_write(FIXTURES, "m", 1), 0);
    gpuprof_an_db *db = analyze("m", "db", 2, 0);
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
    gpuprof_an_db *plain = analyze("m", "plain", 1, 0);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 4);
    ck_assert_uint_eq(gpuprof_an_db_format(plain), 3);
    uint32_t kernels = 0, gpu_functions = 0;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++) {
        gpu_functions +=
            gpuprof_an_db_context_kind(db, c) == GPUPROF_AN_NODE_GPU_FUNCTION;
        if (gpuprof_an_db_context_kind(db, c) != GPUPROF_AN_NODE_KERNEL)
            continue;
        kernels++;
        const char *path[] = {"main", "<kernel launch>",
                              gpuprof_an_db_context_name(db, c), NULL};
        uint32_t pc = at(plain, path);
        /* the plain database lacks only gpu.pc.apportioned_samples, the
         * last of db's */
        ck_assert_uint_eq(gpuprof_an_db_metric_count(db),
                          gpuprof_an_db_metric_count(plain) + 2);
        for (uint32_t m = 0; m < gpuprof_an_db_metric_count(plain); m += 2) {
            double inc = gpuprof_an_db_value(db, 0, c, m);
            ck_assert_double_eq(inc, gpuprof_an_db_value(plain, 0, pc, m));
            ck_assert_double_eq(subtree(db, c, m + 1), inc);
        }
    }
    ck_assert_uint_eq(kernels, 6);
    /* fib, middle, leaf twice; not divergent's sqrt slow path, whose only
     * samples (at its entry, just after the kernel's EXIT) are the EXIT's */
    ck_assert_uint_eq(gpu_functions, 4);
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(plain); c++)
        ck_assert_int_ne(gpuprof_an_db_context_kind(plain, c),
                         GPUPROF_AN_NODE_GPU_FUNCTION);
    gpuprof_an_db_close(db);
    gpuprof_an_db_close(plain);
}
END_TEST

/* Samples filed after an EXIT (an_sass_exit.c), on the fixture as Nsight
 * Compute measured it: `divergent` ends with EXIT at 0xaf0 (line 43, 2
 * samples), and its 32 samples at 0xb00 -- 20 of them drain stalls --
 * sit on the first instruction of the sqrt slow path, which never ran (0
 * executions): with the listing they are the EXIT's line's, and no
 * context names the slow path (before, its GPU_FUNCTION held them);
 * without the listing the line table already puts 0xb00 on line 43 (the
 * slow path has no rows of its own). */
START_TEST(samples_after_exit)
{
    in_case_dir();
    ck_assert_int_eq(pcfix_write(FIXTURES, "m", 1), 0);
    gpuprof_an_db *db = analyze("m", "db", 1, 0);
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
    gpuprof_an_db *plain = analyze("m", "plain", 1, 0);
    const char *k[] = {"main", "<kernel launch>",
                       "kernel divergent(float*, int, int)", NULL};
    uint32_t kd = at(db, k), kp = at(plain, k);
    uint32_t l43 = child(db, kd, "kernels.cu:43");
    uint32_t p43 = child(plain, kp, "kernels.cu:43");
    ck_assert_uint_ne(l43, UINT32_MAX);
    ck_assert_uint_ne(p43, UINT32_MAX);
    ck_assert_double_eq(val(plain, p43, "gpu.pc.samples", EXC), 2 + 32);
    ck_assert_double_eq(val(db, l43, "gpu.pc.samples", EXC), 2 + 32);
    ck_assert_double_eq(val(db, l43, "gpu.pc.stall.drain", EXC), 20);
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        ck_assert_msg(!strstr(gpuprof_an_db_context_name(db, c), "sqrt"),
                      "%s", gpuprof_an_db_context_name(db, c));
    ck_assert_double_eq(val(db, kd, "gpu.pc.samples", INC),
                        val(plain, kp, "gpu.pc.samples", INC));
    gpuprof_an_db_close(db);
    gpuprof_an_db_close(plain);
}
END_TEST

static bool same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    void *x = tf_read(a, &na), *y = tf_read(b, &nb);
    bool same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* The same bytes with two threads and with a memory budget (pass 2 reads
 * the file again and rebuilds the same contexts). */
START_TEST(deterministic)
{
    in_case_dir();
    ck_assert_int_eq(pcfix_write(FIXTURES, "m", 1), 0);
    gpuprof_an_db_close(analyze("m", "a", 1, 0));
    gpuprof_an_db_close(analyze("m", "b", 2, 16u << 20));
    static const char *const files[] = {"meta.db", "profile.db", "cct.db",
                                        "stats.db"};
    for (int i = 0; i < 4; i++) {
        char x[64], y[64];
        snprintf(x, sizeof(x), "a/%s", files[i]);
        snprintf(y, sizeof(y), "b/%s", files[i]);
        ck_assert_msg(same_file(x, y), "%s differs", files[i]);
    }
}
END_TEST

/* Metric flags: an odd sum and its count metric reach the database
 * (format 4); without flags and GPU calling contexts it is format 3. */
START_TEST(metric_flags)
{
    in_case_dir();
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
    calls_measurement("m", HAND, 1, true);
    gpuprof_an_db *db = analyze("m", "db", 1, 0);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 4);
    for (int v = 0; v < 2; v++) {
        uint32_t m = metric(db, "x.regs", (gpuprof_an_variant)v), cm = 0;
        ck_assert_uint_eq(gpuprof_an_db_metric_flags(db, m),
                          GPUPROF_AN_METRIC_ODD);
        ck_assert_int_eq(gpuprof_an_db_metric_count_metric(db, m, &cm),
                         GPUPROF_OK);
        ck_assert_uint_eq(cm, metric(db, "gpu.count", (gpuprof_an_variant)v));
        m = metric(db, "gpu.count", (gpuprof_an_variant)v);
        ck_assert_uint_eq(gpuprof_an_db_metric_flags(db, m), 0);
        ck_assert_int_eq(gpuprof_an_db_metric_count_metric(db, m, &cm),
                         GPUPROF_E_NOTFOUND);
    }
    gpuprof_an_db_close(db);
    /* the same without the odd metric: format 3 */
    ck_assert_int_eq(system("rm -rf m2"), 0);
    calls_measurement("m2", HAND, 1, false);
    db = analyze("m2", "db2", 1, 0);
    ck_assert_uint_eq(gpuprof_an_db_format(db), 3);
    ck_assert_uint_eq(
        gpuprof_an_db_metric_flags(db, metric(db, "gpu.count", EXC)), 0);
    gpuprof_an_db_close(db);
}
END_TEST

/* A database of a newer format than the reader's is refused, naming the
 * version. */
START_TEST(newer_format)
{
    in_case_dir();
    setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
    calls_measurement("m", HAND, 1, false);
    gpuprof_an_db_close(analyze("m", "db", 1, 0));
    unsigned char *img;
    size_t n = tf_slurp("db/meta.db", &img);
    img[8] = 6; /* major 6 */
    tf_spill("db/meta.db", img, n);
    free(img);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open("db", &db), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_last_error(),
               "database format 6 is newer than this reader's 5"));
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"hand_computed", hand_computed, 60},
        {"static_weights", static_weights, 60},
        {"kernel_totals", kernel_totals, 120},
        {"samples_after_exit", samples_after_exit, 120},
        {"deterministic", deterministic, 120},
        {"metric_flags", metric_flags, 60},
        {"newer_format", newer_format, 60},
    };
    return RUN_SUITE("an_gcct", cases);
}
