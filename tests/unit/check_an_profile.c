/*
 * check_an_profile.c - one profile file through libgpuprof-analysis: the
 * accessors of every node kind (regions, CPU frames, GPU operations,
 * kernels, GPU instructions), metrics found by name whatever their index,
 * and the exact text `gpuprof dump` prints. Profiles are built with
 * tests/support/mkprofile, so every expected value is known in advance.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char path[700];

/* host alpha, pid 100, rank 0, generation 2, partial, 2.5 ms:
 *   main: app{1, 2 ms, 0.5 ms} > libfoo+0x1a2b > kernel saxpy > gpu.bin+0x40
 *                              > <gpu copy h2d>
 *         io{3, 1500 ns, 1500 ns} [open]
 *   helper (exited): nothing but its root */
static void write_sample(void)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/anp.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/alpha-r0-p100.gpuprof", dir);
    tp_builder *b = tp_new("alpha", 100, 0);
    uint32_t lib = tp_module(b, "/usr/lib/libfoo.so"),
             bin = tp_gpu_module(b, "gpu.bin");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t app = tp_region(b, 0, "app", 1, 2000000, 500000);
    uint32_t k = tp_kernel(b, tp_frame(b, app, lib, 0x1a2b), "saxpy", bin);
    tp_gpu_instr(b, k, bin, 0x40);
    tp_gpu_op(b, app, 2);
    uint32_t io = tp_region(b, 0, "io", 3, 1500, 1500);
    tp_flags(b, io, GPUPROF_IO_NODE_OPEN);
    tp_thread(b, "helper", GPUPROF_IO_THREAD_EXITED);
    tp_counter(b, "cct.nodes", 0);
    tp_counter(b, "regions.open_at_finalize", 1);
    tp_times(b, 1000, 1000 + 2500000, 5000000, 2, 0);
    ck_assert_int_eq(tp_write(b, path, 3), 0);
    tp_free(b);
}

START_TEST(profile_node_kinds)
{
    write_sample();
    gpuprof_an_profile *p;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_profile_exe(p), "/usr/bin/testprog");
    ck_assert_uint_eq(gpuprof_an_profile_flags(p), 0); /* partial */
    ck_assert_uint_eq(gpuprof_an_profile_start_realtime_ns(p), 5000000);
    ck_assert_uint_eq(gpuprof_an_node_count(p, 0), 7);
    static const struct {
        gpuprof_an_node_kind kind;
        uint32_t parent;
        const char *name;
    } want[] = {
        {GPUPROF_AN_NODE_ROOT, UINT32_MAX, "root"},
        {GPUPROF_AN_NODE_REGION, 0, "app"},
        {GPUPROF_AN_NODE_FRAME, 1, "/usr/lib/libfoo.so+0x1a2b"},
        {GPUPROF_AN_NODE_KERNEL, 2, "kernel saxpy [gpu.bin]"},
        {GPUPROF_AN_NODE_GPU_INSTR, 3, "gpu.bin+0x40"},
        {GPUPROF_AN_NODE_GPU_OP, 1, "<gpu copy h2d>"},
        {GPUPROF_AN_NODE_REGION, 0, "io"},
    };
    for (uint32_t n = 0; n < 7; n++) {
        ck_assert_int_eq(gpuprof_an_node_kind_of(p, 0, n), want[n].kind);
        ck_assert_uint_eq(gpuprof_an_node_parent(p, 0, n), want[n].parent);
        ck_assert_str_eq(gpuprof_an_node_name(p, 0, n), want[n].name);
    }
    ck_assert_uint_eq(gpuprof_an_node_count(p, 1), 1);
    ck_assert_uint_eq(gpuprof_an_node_count(p, 2), 0);
    ck_assert_uint_eq(gpuprof_an_thread_tid(p, 1), 101);
    gpuprof_an_profile_close(p);
}
END_TEST

/* Metrics are found by name; a profile may list them in any order. */
START_TEST(profile_metrics_by_name)
{
    write_sample();
    gpuprof_an_profile *p;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_metric_count(p), 4);
    uint32_t visits, excl;
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.visits", &visits),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time.excl", &excl),
                     GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_metric_name(p, excl), "region.time.excl");
    ck_assert_str_eq(gpuprof_an_metric_description(p, excl), "a metric");
    ck_assert_int_eq(gpuprof_an_metric_unit(p, visits), GPUPROF_AN_UNIT_COUNT);
    ck_assert_uint_eq(gpuprof_an_node_value(p, 0, 6, visits), 3);
    ck_assert_uint_eq(gpuprof_an_node_value(p, 0, 1, excl), 500000);
    ck_assert_uint_eq(gpuprof_an_node_value(p, 0, 2, excl),
                      0); /* a frame: none */
    ck_assert_uint_eq(gpuprof_an_node_value(p, 0, 1, 99), 0);
    ck_assert_ptr_null(gpuprof_an_metric_name(p, 4));
    ck_assert_int_eq(gpuprof_an_metric_find(p, "region.time", &visits),
                     GPUPROF_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "region.time"));
    ck_assert_uint_eq(gpuprof_an_counter_count(p), 2);
    ck_assert_str_eq(gpuprof_an_counter_name(p, 1), "regions.open_at_finalize");
    ck_assert_uint_eq(gpuprof_an_counter_value(p, 1), 1);
    ck_assert_ptr_null(gpuprof_an_counter_name(p, 2));
    gpuprof_an_profile_close(p);
}
END_TEST

START_TEST(profile_dump_text)
{
    write_sample();
    gpuprof_an_profile *p;
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_OK);
    char *text = NULL, want[4096];
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_profile_print(p, mem, 0), GPUPROF_OK);
    fclose(mem);
    snprintf(want, sizeof(want),
             "profile    %s\n"
             "host       alpha  pid 100  rank 0\n"
             "program    testprog --size 10\n"
             "generation 2 (partial: process still running or killed)\n"
             "duration   2.500 ms\n"
             "threads    2\n"
             "counters   regions.open_at_finalize=1\n"
             "\n"
             "thread 0 \"main\" tid 100 [main]\n"
             "  app region.visits=1 region.time.incl=2.000 ms "
             "region.time.excl=500.000 us\n"
             "    /usr/lib/libfoo.so+0x1a2b\n"
             "      kernel saxpy [gpu.bin]\n"
             "        gpu.bin+0x40\n"
             "    <gpu copy h2d>\n"
             "  io region.visits=3 region.time.incl=1.500 us "
             "region.time.excl=1.500 us [open]\n"
             "\n"
             "thread 1 \"helper\" tid 101 [exited]\n",
             path);
    ck_assert_str_eq(text, want);
    free(text);
    gpuprof_an_profile_close(p);
}
END_TEST

START_TEST(profile_errors)
{
    gpuprof_an_profile *p = (gpuprof_an_profile *)&p;
    ck_assert_int_eq(gpuprof_an_profile_open("/nonexistent/x.gpuprof", &p),
                     GPUPROF_E_IO);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_last_error(), "/nonexistent/x.gpuprof: "));
    ck_assert_int_eq(gpuprof_an_profile_open(NULL, &p), GPUPROF_E_INVALID);
    write_sample();
    ck_assert_int_eq(truncate(path, 40), 0);
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), path));
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("not a profile at all, but long enough to have a header......", f);
    fclose(f);
    ck_assert_int_eq(gpuprof_an_profile_open(path, &p), GPUPROF_E_CORRUPT);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), path));
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"node_kinds", profile_node_kinds, 60},
        {"metrics_by_name", profile_metrics_by_name, 60},
        {"dump_text", profile_dump_text, 60},
        {"errors", profile_errors, 60},
    };
    return RUN_SUITE("analysis-profile", cases);
}
