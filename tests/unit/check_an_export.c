/*
 * check_an_export.c - gpuprof_an_export_chrome on a hand-made trace and
 * profile (tests/support/mkprofile and the lib/io trace writer): the exact
 * JSON of one process (names from the profile, JSON escaping of quotes,
 * backslashes, control characters and invalid UTF-8, times in us from the
 * earliest record, one flow from the launch to its device record), a 1.0
 * trace (no correlation ids: no flows), and bad arguments.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "io/trace.h"
#include "support/mkprofile.h"
#include "support/suite.h"

static char dir[512];

/* Thread "main" (tid 100, seq 0): region R (node 1) > kernel launch (node
 * 2) > kernel "k\"1" (node 3); a region [1000, 9000], the launch [2000,
 * 2500], on GPU 0 stream 3 the kernel [3000, 4000]. */
static void write_run(const char *region, int corr)
{
    snprintf(dir, sizeof(dir), "%s/ex.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[700];
    tp_builder *b = tp_new("h\"ost", 10, 0);
    tp_thread(b, "ma\\in", GPUPROF_IO_THREAD_MAIN);
    uint32_t r = tp_region(b, 0, region, 1, 8000, 8000);
    uint32_t op = tp_gpu_op(b, r, 1);
    tp_kernel(b, op, "k\"1", UINT32_MAX);
    tp_times(b, 500, 10000, 1000000, 1, GPUPROF_IO_PROFILE_FINAL);
    snprintf(path, sizeof(path), "%s/h-r0-p10.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    uint8_t buf[1024];
    size_t off = GPUPROF_IO_TRACE_HEADER;
    gpuprof__io_trace_header(buf, 10, 1000000);
    off += gpuprof__io_trace_thread_chunk(buf + off, 0, 100, "ma\\in");
    gpuprof__io_trace_rec reg = {1000, 9000, 1, 0};
    off += gpuprof__io_trace_records(buf + off, 0, 0, 0, &reg, 1);
    gpuprof__io_trace_rec l = {2000, 2500, 2, 0x10000000001ull};
    gpuprof__io_trace_rec k = {3000, 4000, 2, 0x10000000001ull};
    if (corr) {
        off += gpuprof__io_trace_corr_records(buf + off, 0, 0, 0, &l, 1);
        off += gpuprof__io_trace_corr_records(buf + off, GPUPROF_IO_TRACE_GPU,
                                              0, 3, &k, 1);
    } else { /* as format 1.0 wrote it */
        k.corr = 0;
        off += gpuprof__io_trace_records(buf + off, GPUPROF_IO_TRACE_GPU, 0, 3,
                                         &k, 1);
    }
    snprintf(path, sizeof(path), "%s/h-r0-p10.gptrace", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
    fclose(f);
}

static char *export_text(void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    const char *dirs[1] = {dir};
    ck_assert_int_eq(gpuprof_an_export_chrome(dirs, 1, out, NULL, 0),
                     GPUPROF_OK);
    fclose(out);
    return text;
}

#define HEAD                                                                   \
    "{\"otherData\":{\"generator\":\"gpuprof "                               \
    GPUPROF_VERSION_STRING "\",\"origin_monotonic_ns\":\"1000\"},"             \
    "\"traceEvents\":[\n"                                                      \
    "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":"    \
    "{\"name\":\"h\\\"ost pid 10 rank 0\"}},\n"                                \
    "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_sort_index\","       \
    "\"args\":{\"sort_index\":1}},\n"                                          \
    "{\"ph\":\"M\",\"pid\":1,\"tid\":100,\"name\":\"thread_name\",\"args\":"   \
    "{\"name\":\"ma\\\\in (tid 100)\"}},\n"                                    \
    "{\"ph\":\"M\",\"pid\":1,\"tid\":100,\"name\":\"thread_sort_index\","      \
    "\"args\":{\"sort_index\":0}},\n"                                          \
    "{\"ph\":\"X\",\"pid\":1,\"tid\":100,\"ts\":0.000,\"dur\":8.000,"          \
    "\"cat\":\"region\",\"name\":\"q\\\"b\\\\s\\n\\u0001\\ufffd\xc3\xa9\\ufffd"\
    "\\ufffdx\",\"args\":{}},\n"

START_TEST(exact_json)
{
    /* quote, backslash, newline, ^A, a lone 0xFF, e-acute, a truncated
     * 3-byte sequence */
    write_run("q\"b\\s\n\x01\xff\xc3\xa9\xe2\x82x", 1);
    char *text = export_text();
    const char *want =
        HEAD
        "{\"ph\":\"X\",\"pid\":1,\"tid\":100,\"ts\":1.000,\"dur\":0.500,"
        "\"cat\":\"gpu\",\"name\":\"kernel launch: k\\\"1\",\"args\":{\"corr\":"
        "\"0x10000000001\"}},\n"
        "{\"ph\":\"M\",\"pid\":1,\"tid\":1073741824,\"name\":\"thread_name\","
        "\"args\":{\"name\":\"GPU 0 stream 3\"}},\n"
        "{\"ph\":\"M\",\"pid\":1,\"tid\":1073741824,\"name\":"
        "\"thread_sort_index\",\"args\":{\"sort_index\":1073741827}},\n"
        "{\"ph\":\"X\",\"pid\":1,\"tid\":1073741824,\"ts\":2.000,\"dur\":1.000,"
        "\"cat\":\"gpu\",\"name\":\"k\\\"1\",\"args\":{\"corr\":"
        "\"0x10000000001\"}},\n"
        "{\"ph\":\"s\",\"bp\":\"e\",\"id\":1,\"pid\":1,\"tid\":100,"
        "\"ts\":1.000,\"cat\":\"gpu\",\"name\":\"launch\"},\n"
        "{\"ph\":\"f\",\"bp\":\"e\",\"id\":1,\"pid\":1,\"tid\":1073741824,"
        "\"ts\":2.000,\"cat\":\"gpu\",\"name\":\"launch\"}\n]}\n";
    ck_assert_str_eq(text, want);
    free(text);
}
END_TEST

START_TEST(format_1_0_no_flows)
{
    write_run("q\"b\\s\n\x01\xff\xc3\xa9\xe2\x82x", 0);
    char *text = export_text();
    ck_assert_ptr_nonnull(strstr(text, HEAD));
    ck_assert_ptr_nonnull(strstr(text, "\"cat\":\"gpu\",\"name\":\"k\\\"1\","
                                       "\"args\":{}}\n]}\n"));
    ck_assert_ptr_null(strstr(text, "\"ph\":\"s\""));
    ck_assert_ptr_null(strstr(text, "kernel launch"));
    free(text);
}
END_TEST

START_TEST(bad_arguments)
{
    const char *dirs[1] = {"/nonexistent-gpuprof-dir"};
    ck_assert_int_eq(gpuprof_an_export_chrome(dirs, 0, stdout, NULL, 0),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_export_chrome(dirs, 1, stdout, NULL, 1),
                     GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_export_chrome(dirs, 1, stdout, NULL, 0),
                     GPUPROF_E_IO);
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_last_error(), "/nonexistent-gpuprof-dir: "));
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"exact_json", exact_json, 10},
        {"format_1_0_no_flows", format_1_0_no_flows, 10},
        {"bad_arguments", bad_arguments, 10},
    };
    return RUN_SUITE("an_export", cases);
}
