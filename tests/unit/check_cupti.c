/*
 * check_cupti.c - the CUPTI backend offline, with the real libcupti:
 * hand-made activity records of the current struct versions (Kernel10,
 * Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, Overhead3) decoded by
 * libcupti's own cuptiActivityGetNextRecord and attributed exactly; the
 * API hooks driven as CUPTI would call them (runtime call with its nested
 * driver call, allocations with their size); graph launches; the
 * correlation ring; API classification by CUPTI's callback names; cubins
 * mapped to their kernels; and the no-driver path (unavailable, program
 * unchanged).
 *
 * Built only where CUPTI's headers are (CUDA_HOME); where libcupti cannot
 * be loaded at run time every case says so and passes.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/cpath/cpath.h"
#include "backends/cupti/cupti.h"
#include "core/gpu.h"
#include "gpuprof_analysis.h"
#include "core/internal.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/files.h"
#include "support/nodes.h"
#include "support/readback.h"
#include "support/suite.h"

/* LeakSanitizer (glibc 2.36) crashes reading the dynamic TLS that
 * libcupti allocates, so this suite scans no TLS roots: a thread's channel
 * state, which only its TLS holds, then looks leaked (the other suites
 * check it), and libcupti keeps what cuptiSubscribe allocates. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "use_tls=0";
}
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libcupti\nleak:src_register\nleak:_dlerror_run\n";
}

void gpuprof__cupti_test_callback(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                  const void *data);
void gpuprof__cupti_test_on(int on);
uint64_t gpuprof__cupti_api_failed(void);
unsigned gpuprof__cupti_classify_all(void);
uint32_t gpuprof__cupti_class_of(int driver, uint32_t id);

static char outdir[512];

/* libcupti here? (every case needs it) */
static bool have_cupti(void)
{
    char why[256];
    if (gpuprof__cupti_load(why, sizeof(why)))
        return true;
    fprintf(stderr, "check_cupti: libcupti not loadable (%s): case skipped\n",
            why);
    return false;
}

/* Measurement with no backend: records are fed by hand (with a trace
 * when want_trace is set). */
static int want_trace;
static void init_with(const char *backends)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/cupti.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = backends;
    o.signals = 0;
    o.trace = want_trace;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

static void start(void)
{
    init_with("none");
    gpuprof__cupti_ring_reset();
    gpuprof__cupti_counts_reset();
    gpuprof__cupti_set_clock_offset(0);
}

/* The placeholders of `kind` anywhere beneath region `name`. */
static uint32_t placeholders(const gpuprof__io_profile *p,
                             const gpuprof__io_thread *t, const char *name,
                             uint32_t kind, uint32_t *out, uint32_t max)
{
    uint32_t top =
        rb_child(p, t, t->first_node, GPUPROF_IO_NODE_REGION, 0, name);
    ck_assert_msg(top != UINT32_MAX, "no region %s", name);
    return rb_find_below(p, t, top, GPUPROF_IO_NODE_GPU_OP, kind, out, max);
}

static uint32_t one_placeholder(const gpuprof__io_profile *p,
                                const gpuprof__io_thread *t, const char *region,
                                uint32_t kind)
{
    uint32_t out[2];
    uint32_t n = placeholders(p, t, region, kind, out, 2);
    ck_assert_uint_eq(n, 1);
    return out[0];
}

/* ---- record builders ---------------------------------------------------- */
typedef struct rbuf {
    uint8_t *b;
    size_t n;
} rbuf;

static void *put(rbuf *r, size_t size)
{
    r->b = realloc(r->b, r->n + size);
    ck_assert_ptr_nonnull(r->b);
    void *at = r->b + r->n;
    memset(at, 0, size);
    r->n += size;
    return at;
}

static void kernel_rec(rbuf *r, uint32_t corr, const char *name, uint64_t t0,
                       uint64_t t1, int gx, int bx, uint16_t regs, int ssm,
                       int dsm, uint32_t stream)
{
    CUpti_ActivityKernel10 *k = put(r, sizeof(*k));
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->correlationId = corr;
    k->name = name;
    k->start = t0;
    k->end = t1;
    k->gridX = gx;
    k->gridY = 2;
    k->gridZ = 1;
    k->blockX = bx;
    k->blockY = 1;
    k->blockZ = 1;
    k->registersPerThread = regs;
    k->staticSharedMemory = ssm;
    k->dynamicSharedMemory = dsm;
    k->deviceId = 0;
    k->streamId = stream;
}

static void memcpy_rec(rbuf *r, uint32_t corr, uint8_t kind, uint64_t bytes,
                       uint64_t t0, uint64_t t1)
{
    CUpti_ActivityMemcpy6 *m = put(r, sizeof(*m));
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = kind;
    m->bytes = bytes;
    m->start = t0;
    m->end = t1;
    m->correlationId = corr;
    m->streamId = 13;
}

static size_t decode(rbuf *r)
{
    size_t n = gpuprof__cupti_decode(r->b, r->n);
    free(r->b);
    r->b = NULL;
    r->n = 0;
    return n;
}

/* An operation begun on this thread under the current region, noted in the
 * ring with CUPTI id `id` (and `nested` for its driver call when not 0). */
static uint64_t op(uint32_t kind, uint32_t id, uint32_t nested, bool graph)
{
    uint64_t c = gpuprof_op_begin(kind, 0);
    ck_assert_uint_ne(c, 0);
    gpuprof__cupti_ring_note(id, c, graph);
    if (nested)
        gpuprof__cupti_ring_note(nested, c, graph);
    ck_assert_int_eq(gpuprof_op_end(c), GPUPROF_OK);
    return c;
}

/* ---- decoding: every record kind, exact values ----------------------------
 */
START_TEST(decode_exact)
{
    if (!have_cupti())
        return;
    start();
    gpuprof_region_begin("work");
    op(GPUPROF_OP_KERNEL, 101, 0, false);
    op(GPUPROF_OP_COPY_H2D, 102, 103, false);
    op(GPUPROF_OP_MEMSET, 104, 0, false);
    op(GPUPROF_OP_SYNC, 105, 0, false);
    op(GPUPROF_OP_COPY_D2D, 106, 0, false);
    gpuprof_region_end("work");

    rbuf r = {0};
    /* Two launches' worth on one correlation is impossible; one kernel. */
    kernel_rec(&r, 101, "kA", 1000, 1700, 4, 128, 32, 1024, 512, 7);
    memcpy_rec(&r, 103, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 2000, 2300);
    CUpti_ActivityMemset4 *ms = put(&r, sizeof(*ms));
    ms->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms->bytes = 256;
    ms->start = 2400;
    ms->end = 2450;
    ms->correlationId = 104;
    CUpti_ActivitySynchronization2 *sy = put(&r, sizeof(*sy));
    sy->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sy->start = 3000;
    sy->end = 3500;
    sy->correlationId = 105;
    sy->streamId = 7;
    /* A query: not a wait we hook, ignored (not unattributed). */
    sy = put(&r, sizeof(*sy));
    sy->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN;
    sy->correlationId = 777;
    CUpti_ActivityMemcpyPtoP4 *pp = put(&r, sizeof(*pp));
    pp->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    pp->bytes = 1 << 20;
    pp->start = 4000;
    pp->end = 4100;
    pp->correlationId = 106;
    CUpti_ActivityOverhead3 *ov = put(&r, sizeof(*ov));
    ov->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    ov->start = 10;
    ov->end = 60;
    /* Work nobody launched under measurement. */
    kernel_rec(&r, 999, "stray", 5000, 5100, 1, 32, 8, 0, 0, 7);
    ck_assert_uint_eq(decode(&r), 8);

    gp_cupti_counts c;
    gpuprof__cupti_counts(&c);
    ck_assert_uint_eq(c.records, 8);
    ck_assert_uint_eq(c.kernels, 2);
    ck_assert_uint_eq(c.copies, 2);
    ck_assert_uint_eq(c.memsets, 1);
    ck_assert_uint_eq(c.syncs, 1);
    ck_assert_uint_eq(c.overhead_ns, 50);
    ck_assert_uint_eq(c.unattributed, 1);

    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp = one_placeholder(p, t, "work", GPUPROF_OP_KERNEL);
    uint32_t k = rb_child(p, t, kp, GPUPROF_IO_NODE_KERNEL, 0, "kA");
    ck_assert_uint_ne(k, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 700);
    ck_assert_uint_eq(rb_val(p, k, "gpu.work_items"), 4 * 2 * 128);
    ck_assert_uint_eq(rb_val(p, k, "gpu.group_size"), 128);
    ck_assert_uint_eq(rb_val(p, k, "gpu.registers"), 32);
    ck_assert_uint_eq(rb_val(p, k, "gpu.shared_bytes"), 1536);
    ck_assert_uint_eq(p->nodes[k].key_b, GP_NO_BINARY); /* no cubin loaded */

    uint32_t cp = one_placeholder(p, t, "work", GPUPROF_OP_COPY_H2D);
    ck_assert_uint_eq(rb_val(p, cp, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, cp, "gpu.time"), 300);
    ck_assert_uint_eq(rb_val(p, cp, "gpu.bytes"), 4096);
    uint32_t mp = one_placeholder(p, t, "work", GPUPROF_OP_MEMSET);
    ck_assert_uint_eq(rb_val(p, mp, "gpu.bytes"), 256);
    ck_assert_uint_eq(rb_val(p, mp, "gpu.time"), 50);
    uint32_t sp = one_placeholder(p, t, "work", GPUPROF_OP_SYNC);
    ck_assert_uint_eq(rb_val(p, sp, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, sp, "gpu.time"), 0);
    ck_assert_uint_eq(rb_val(p, sp, "api.time"), 500);
    ck_assert_uint_eq(rb_val(p, sp, "blame.cpu_idle"), 500);
    uint32_t dp = one_placeholder(p, t, "work", GPUPROF_OP_COPY_D2D);
    ck_assert_uint_eq(rb_val(p, dp, "gpu.bytes"), 1 << 20);
    ck_assert_uint_eq(rb_val(p, dp, "gpu.time"), 100);

    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 1);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 5);
    ck_assert_uint_eq(rb_counter(p, "gpu.tool_overhead_ns"), 50);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- devices: the driver's attributes into the profile's DEVICES ---------
 * A driver of the test's own: ordinal d is handle 100 + d; device 0 has
 * an H100's limits, device 2 refuses its registers per block (left out of
 * the profile, as every attribute the driver does not give). */
static CUresult fake_get(CUdevice *dev, int ordinal)
{
    *dev = 100 + ordinal;
    return ordinal < 4 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult fake_attr(int *v, CUdevice_attribute a, CUdevice dev)
{
    static const struct {
        CUdevice_attribute a;
        int h100, small;
    } t[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9, 8},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0, 6},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132, 10},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32, 32},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024, 1024},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048, 1536},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32, 16},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536, 65536},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536, -1},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472,
         102400},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448, 101376},
        {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024, 1024},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (t[i].a == a) {
            int x = dev == 100 ? t[i].h100 : t[i].small;
            if (x < 0)
                return CUDA_ERROR_NOT_SUPPORTED;
            *v = x;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_name(char *name, int len, CUdevice dev)
{
    snprintf(name, (size_t)len, "%s",
             dev == 100 ? "NVIDIA H100 80GB HBM3" : "small GPU");
    return CUDA_SUCCESS;
}

START_TEST(devices_offline)
{
    if (!have_cupti())
        return;
    gp_cu_driver d = {fake_get, fake_attr, fake_name};
    gpuprof__cupti_devices_test_driver(&d);
    start();
    gpuprof_region_begin("work");
    op(GPUPROF_OP_KERNEL, 201, 0, false);
    op(GPUPROF_OP_KERNEL, 202, 0, false);
    gpuprof_region_end("work");
    rbuf r = {0};
    kernel_rec(&r, 201, "kA", 1000, 1700, 4, 128, 32, 0, 0, 7);
    kernel_rec(&r, 202, "kB", 2000, 2700, 4, 128, 32, 0, 0, 9);
    ((CUpti_ActivityKernel10 *)(r.b + r.n - sizeof(CUpti_ActivityKernel10)))
        ->deviceId = 2;
    ck_assert_uint_eq(decode(&r), 2);
    ck_assert_uint_eq(gpuprof__cupti_devices_used(), 0x5);
    /* Nothing is asked of the driver on the records' way: only now. */
    gpuprof__cupti_devices_describe_used();
    gpuprof__cupti_devices_describe_used(); /* once per device */
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(p->format_minor, GPUPROF_IO_VERSION_MINOR);
    ck_assert_uint_eq(p->devattr_count, 12 + 12); /* name and 11 of 12 each */
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "sm_count"), 132);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "compute_major"), 9);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "compute_minor"), UINT64_MAX); /* 0 */
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "max_threads_per_sm"), 2048);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "max_blocks_per_sm"), 32);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "registers_per_sm"), 65536);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "shared_bytes_per_sm"), 233472);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "shared_bytes_per_block"), 232448);
    ck_assert_uint_eq(rb_device(p, "cuda", 0, "shared_bytes_reserved"), 1024);
    ck_assert_str_eq(gpuprof__io_str(p, (uint32_t)rb_device(p, "cuda", 0, "name")),
                     "NVIDIA H100 80GB HBM3");
    ck_assert_uint_eq(rb_device(p, "cuda", 2, "sm_count"), 10);
    ck_assert_uint_eq(rb_device(p, "cuda", 2, "compute_minor"), 6);
    ck_assert_uint_eq(rb_device(p, "cuda", 2, "registers_per_block"), UINT64_MAX);
    ck_assert_uint_eq(rb_device(p, "cuda", 1, "sm_count"), UINT64_MAX);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
    gpuprof__cupti_devices_test_driver(NULL);
}
END_TEST

/* Blame from offline records (core blame.c): a stream sync [1600, 2400)
 * (800 ns) while kB1 [1000, 2000), kB2 [1500, 1700) and a D2H copy
 * [2000, 2600) ran: overlaps 400, 100, 400 of 900 -> 355, 88, and the
 * last (record order) takes the rest, 357. */
START_TEST(blame_offline)
{
    if (!have_cupti())
        return;
    start();
    gpuprof_region_begin("blame");
    op(GPUPROF_OP_KERNEL, 201, 0, false);
    op(GPUPROF_OP_KERNEL, 202, 0, false);
    op(GPUPROF_OP_COPY_D2H, 203, 0, false);
    op(GPUPROF_OP_SYNC, 204, 0, false);
    gpuprof_region_end("blame");
    /* The records' times are small numbers: put them just after the calls
     * on the process clock. The monitor keeps device work for blame only
     * while a wait begun after it may still come; work that seemed to end
     * long before its launch was read could be dropped in a round between
     * the kernels' records and the sync's (seen under TSan on a busy
     * machine: blame 0 instead of 355). */
    gpuprof__cupti_set_clock_offset((int64_t)gpuprof_be_now_ns());
    rbuf r = {0};
    kernel_rec(&r, 201, "kB1", 1000, 2000, 1, 32, 8, 0, 0, 7);
    kernel_rec(&r, 202, "kB2", 1500, 1700, 1, 32, 8, 0, 0, 8);
    memcpy_rec(&r, 203, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 64, 2000, 2600);
    CUpti_ActivitySynchronization2 *sy = put(&r, sizeof(*sy));
    sy->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sy->start = 1600;
    sy->end = 2400;
    sy->correlationId = 204;
    sy->streamId = 7;
    ck_assert_uint_eq(decode(&r), 4);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[2];
    ck_assert_uint_eq(placeholders(p, t, "blame", GPUPROF_OP_KERNEL, kp, 2), 2);
    uint32_t k1 = UINT32_MAX, k2 = UINT32_MAX;
    for (int i = 0; i < 2; i++) {
        uint32_t a = rb_child(p, t, kp[i], GPUPROF_IO_NODE_KERNEL, 0, "kB1");
        uint32_t b = rb_child(p, t, kp[i], GPUPROF_IO_NODE_KERNEL, 0, "kB2");
        if (a != UINT32_MAX)
            k1 = a;
        if (b != UINT32_MAX)
            k2 = b;
    }
    ck_assert_uint_ne(k1, UINT32_MAX);
    ck_assert_uint_ne(k2, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, k1, "blame.cpu_idle_cause"), 355);
    ck_assert_uint_eq(rb_val(p, k2, "blame.cpu_idle_cause"), 88);
    uint32_t cp = one_placeholder(p, t, "blame", GPUPROF_OP_COPY_D2H);
    ck_assert_uint_eq(rb_val(p, cp, "blame.cpu_idle_cause"), 357);
    ck_assert_uint_eq(rb_val(p, cp, "gpu.count"), 1);
    uint32_t sp = one_placeholder(p, t, "blame", GPUPROF_OP_SYNC);
    ck_assert_uint_eq(rb_val(p, sp, "blame.cpu_idle"), 800);
    ck_assert_uint_eq(rb_val(p, sp, "blame.cpu_idle_cause"), 0);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* Device timestamps in another clock: the offset moves them. */
START_TEST(clock_offset)
{
    if (!have_cupti())
        return;
    start();
    gpuprof_region_begin("r");
    op(GPUPROF_OP_KERNEL, 5, 0, false);
    gpuprof_region_end("r");
    gpuprof__cupti_set_clock_offset(-1000);
    rbuf r = {0};
    /* start 900 - 1000 clamps at 0; the duration is then 1100 - 1000. */
    kernel_rec(&r, 5, "k", 900, 2100, 1, 1, 1, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t k = rb_child(p, t, one_placeholder(p, t, "r", GPUPROF_OP_KERNEL),
                          GPUPROF_IO_NODE_KERNEL, 0, "k");
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 1100);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- graph launches ----------------------------------------------------- */
START_TEST(graph_launch)
{
    if (!have_cupti())
        return;
    start();
    gpuprof_region_begin("graph");
    op(GPUPROF_OP_KERNEL, 201, 202, true);
    op(GPUPROF_OP_KERNEL, 203, 0, true);
    gpuprof_region_end("graph");
    rbuf r = {0};
    /* The first launch's kernels come in two buffers, the second's in one;
     * one launch's memset is a graph node too. */
    kernel_rec(&r, 202, "g1", 100, 110, 1, 32, 16, 0, 0, 3);
    kernel_rec(&r, 202, "g2", 110, 130, 1, 32, 16, 0, 0, 3);
    kernel_rec(&r, 203, "g1", 200, 210, 1, 32, 16, 0, 0, 3);
    ck_assert_uint_eq(decode(&r), 3);
    kernel_rec(&r, 201, "g1", 130, 140, 1, 32, 16, 0, 0, 3);
    CUpti_ActivityMemset4 *ms = put(&r, sizeof(*ms));
    ms->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms->bytes = 64;
    ms->start = 140;
    ms->end = 141;
    ms->correlationId = 201;
    ck_assert_uint_eq(decode(&r), 2);
    gp_cupti_counts c;
    gpuprof__cupti_counts(&c);
    ck_assert_uint_eq(c.graph_closed, 0);
    gpuprof__cupti_graphs_close();
    gpuprof__cupti_counts(&c);
    ck_assert_uint_eq(c.graph_closed, 2);
    gpuprof__cupti_graphs_close(); /* nothing left open */
    gpuprof__cupti_counts(&c);
    ck_assert_uint_eq(c.graph_closed, 2);

    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp[2];
    ck_assert_uint_eq(placeholders(p, t, "graph", GPUPROF_OP_KERNEL, kp, 2), 2);
    uint64_t g1 = 0, g2 = 0, placeholder_count = 0, bytes = 0;
    for (int i = 0; i < 2; i++) {
        uint32_t a = rb_child(p, t, kp[i], GPUPROF_IO_NODE_KERNEL, 0, "g1");
        uint32_t b = rb_child(p, t, kp[i], GPUPROF_IO_NODE_KERNEL, 0, "g2");
        g1 += a == UINT32_MAX ? 0 : rb_val(p, a, "gpu.count");
        g2 += b == UINT32_MAX ? 0 : rb_val(p, b, "gpu.count");
        placeholder_count += rb_val(p, kp[i], "gpu.count");
        bytes += rb_val(p, kp[i], "gpu.bytes");
    }
    ck_assert_uint_eq(g1, 3);
    ck_assert_uint_eq(g2, 1);
    /* The memset on the placeholder; the closing notes add nothing. */
    ck_assert_uint_eq(placeholder_count, 1);
    ck_assert_uint_eq(bytes, 64);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- the ring -------------------------------------------------------------
 */
START_TEST(ring_reuse_is_a_miss)
{
    gpuprof__cupti_ring_reset();
    uint64_t c;
    bool g;
    ck_assert(!gpuprof__cupti_ring_find(7, &c, &g));
    gpuprof__cupti_ring_note(7, 70, false);
    ck_assert(gpuprof__cupti_ring_find(7, &c, &g));
    ck_assert_uint_eq(c, 70);
    ck_assert(!g);
    /* The same slot, a later id: the old one is gone, not confused. */
    gpuprof__cupti_ring_note(7 + (1u << GP_CU_RING_BITS), 80, true);
    ck_assert(!gpuprof__cupti_ring_find(7, &c, &g));
    ck_assert(gpuprof__cupti_ring_find(7 + (1u << GP_CU_RING_BITS), &c, &g));
    ck_assert_uint_eq(c, 80);
    ck_assert(g);
    gpuprof__cupti_ring_note(9, 0, false); /* nothing recorded: no op */
    ck_assert(!gpuprof__cupti_ring_find(9, &c, &g));
}
END_TEST

/* ---- classification by CUPTI's own callback names ------------------------ */
START_TEST(classify_names)
{
    static const struct {
        const char *name;
        uint32_t cls;
    } cases[] = {
        {"cudaLaunchKernel_v7000", GPUPROF_OP_KERNEL},
        {"cudaLaunchKernelExC_v11060", GPUPROF_OP_KERNEL},
        {"cuLaunchKernel", GPUPROF_OP_KERNEL},
        {"cudaGraphLaunch_v10000", GPUPROF_OP_KERNEL | GP_CU_GRAPH},
        {"cuGraphLaunch_ptsz", GPUPROF_OP_KERNEL | GP_CU_GRAPH},
        {"cudaLaunchHostFunc_v10000", 0},
        {"cudaMemcpyAsync_v3020", GPUPROF_OP_COPY_OTHER},
        {"cuMemcpyHtoDAsync_v2", GPUPROF_OP_COPY_H2D},
        {"cuMemcpyDtoH_v2", GPUPROF_OP_COPY_D2H},
        {"cudaMemcpyPeerAsync_v4000", GPUPROF_OP_COPY_D2D},
        {"cudaMemcpyToSymbol_v3020", GPUPROF_OP_COPY_H2D},
        {"cudaMemsetAsync_v3020", GPUPROF_OP_MEMSET},
        {"cuMemsetD32_v2", GPUPROF_OP_MEMSET},
        {"cudaMalloc_v3020", GPUPROF_OP_ALLOC | GP_CU_HOSTDONE},
        {"cuMemAlloc_v2", GPUPROF_OP_ALLOC | GP_CU_HOSTDONE},
        {"cudaFree_v3020", GPUPROF_OP_FREE | GP_CU_HOSTDONE},
        {"cuMemFreeAsync", GPUPROF_OP_FREE | GP_CU_HOSTDONE},
        {"cudaStreamSynchronize_v3020", GPUPROF_OP_SYNC},
        {"cuCtxSynchronize", GPUPROF_OP_SYNC},
        {"cudaEventSynchronize_v3020", GPUPROF_OP_SYNC},
        {"cudaGetLastError_v3020", 0},
        {"cudaEventRecord_v3020",
         GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED},
        {"cuStreamWaitEvent_ptsz",
         GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED},
        {"cudaStreamQuery_v3020",
         GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED},
        {"cuEventQuery", GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED},
        {"cuEventSynchronize", GPUPROF_OP_SYNC},
        {"cuModuleLoadData", GPUPROF_OP_BUILD | GP_CU_HOSTDONE},
        {"cuLibraryLoadData", GPUPROF_OP_BUILD | GP_CU_HOSTDONE},
        {"cudaLibraryLoadData", 0},
        {"cuModuleGetFunction", 0},
        {"curandGenerate", 0},
        {NULL, 0},
    };
    for (int i = 0; cases[i].name; i++)
        ck_assert_msg(
            gpuprof__cupti_classify_name(cases[i].name) == cases[i].cls,
            "%s: %#x, want %#x", cases[i].name,
            gpuprof__cupti_classify_name(cases[i].name), cases[i].cls);
    ck_assert_uint_eq(gpuprof__cupti_classify_name(NULL), 0);
    if (!have_cupti())
        return;
    /* The ids libcupti names: what gets enabled. */
    unsigned n = gpuprof__cupti_classify_all();
    ck_assert_uint_gt(n, 100);
    ck_assert_uint_eq(gpuprof__cupti_class_of(
                          0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
                      GPUPROF_OP_KERNEL);
    ck_assert_uint_eq(
        gpuprof__cupti_class_of(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
        GPUPROF_OP_KERNEL);
    ck_assert_uint_eq(gpuprof__cupti_class_of(
                          0, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000),
                      GPUPROF_OP_KERNEL | GP_CU_GRAPH);
    ck_assert_uint_eq(
        gpuprof__cupti_class_of(
            0, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020),
        GPUPROF_OP_SYNC);
    ck_assert_uint_eq(gpuprof__cupti_class_of(
                          0, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020),
                      0);
    ck_assert_uint_eq(gpuprof__cupti_class_of(
                          1, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2),
                      GPUPROF_OP_COPY_D2H);
}
END_TEST

/* ---- the hooks, called as CUPTI calls them --------------------------------
 */
static CUpti_CallbackData cbd(CUpti_ApiCallbackSite site, uint32_t id,
                              const void *params, uint64_t *slot)
{
    CUpti_CallbackData d;
    memset(&d, 0, sizeof(d));
    d.callbackSite = site;
    d.correlationId = id;
    d.functionParams = params;
    d.correlationData = slot;
    return d;
}

/* One API call as CUPTI reports it: its enter, a nested driver call's
 * enter and exit (when `drv` is not 0), its exit returning `ret`. Not
 * inlined, exported: a frame of the paths. */
__attribute__((noinline)) void
cupti_test_api_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                    uint32_t id, CUpti_CallbackId drv, uint32_t drv_id,
                    const void *params, int ret);
__attribute__((noinline)) void
cupti_test_api_call(CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                    uint32_t id, CUpti_CallbackId drv, uint32_t drv_id,
                    const void *params, int ret)
{
    uint64_t s1 = 0, s2 = 0;
    CUpti_CallbackData d = cbd(CUPTI_API_ENTER, id, params, &s1);
    gpuprof__cupti_test_callback(dom, cbid, &d);
    if (drv) {
        CUpti_CallbackData e = cbd(CUPTI_API_ENTER, drv_id, params, &s2);
        gpuprof__cupti_test_callback(CUPTI_CB_DOMAIN_DRIVER_API, drv, &e);
        e.callbackSite = CUPTI_API_EXIT;
        gpuprof__cupti_test_callback(CUPTI_CB_DOMAIN_DRIVER_API, drv, &e);
    }
    d.callbackSite = CUPTI_API_EXIT;
    d.functionReturnValue = &ret;
    gpuprof__cupti_test_callback(dom, cbid, &d);
    __asm__ volatile("" ::: "memory"); /* keep this frame */
}

/* cudaLaunchKernel and the cuLaunchKernel it makes: the user's call. */
__attribute__((noinline)) void cupti_test_launch(uint32_t rt_id,
                                                 uint32_t drv_id);
__attribute__((noinline)) void cupti_test_launch(uint32_t rt_id,
                                                 uint32_t drv_id)
{
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, rt_id,
                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, drv_id, NULL,
                        0);
    __asm__ volatile("" ::: "memory");
}

START_TEST(hooks_offline)
{
    if (!have_cupti())
        return;
    start();
    gpuprof__cupti_classify_all();
    gpuprof__cupti_test_on(1);
    gpuprof_region_begin("hooks");
    /* One call site twice: the first launch's record carries the driver's
     * id, the second's the runtime's. */
    volatile uint32_t twice = 2; /* a loop the compiler cannot peel */
    for (uint32_t i = 0; i < twice; i++)
        cupti_test_launch(301 + 2 * i, 302 + 2 * i);
    /* cudaMalloc(1 MiB) -> cuMemAlloc_v2: closed at exit with its size. */
    struct {
        void **p;
        size_t size;
    } mp = {NULL, 1u << 20};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 305,
                        CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, 306, &mp, 0);
    /* cudaMemcpy(..., cudaMemcpyDeviceToHost): the direction from its
     * argument. */
    struct { /* cudaMemcpyAsync's parameters (cudaMemcpy's first four) */
        void *dst;
        const void *src;
        size_t n;
        enum cudaMemcpyKind k;
        void *stream;
    } cp = {NULL, NULL, 512, cudaMemcpyDeviceToHost, (void *)(uintptr_t)7};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 307, 0, 0,
                        &cp, 0);
    /* A memset that fails (cudaErrorInvalidValue, 1): its operation is
     * closed at exit, no record will come. */
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 320, 0,
                        0, NULL, 1);
    ck_assert_uint_eq(gpuprof__cupti_api_failed(), 1);
    /* Not ours: no operation. */
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, 308, 0,
                        0, NULL, 0);
    /* Paused: hooks record nothing. */
    gpuprof__cupti_test_on(0);
    cupti_test_launch(309, 310);
    gpuprof__cupti_test_on(1);
    gpuprof_region_end("hooks");

    rbuf r = {0};
    kernel_rec(&r, 302, "kh", 100, 150, 1, 64, 20, 0, 0, 1);
    kernel_rec(&r, 303, "kh", 200, 260, 1, 64, 20, 0, 0, 1);
    memcpy_rec(&r, 307, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 512, 300, 310);
    kernel_rec(&r, 310, "kh", 400, 410, 1, 64, 20, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 4);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t kp = one_placeholder(p, t, "hooks", GPUPROF_OP_KERNEL);
    uint32_t k = rb_child(p, t, kp, GPUPROF_IO_NODE_KERNEL, 0, "kh");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 2);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 110);
    /* One unwind per user call, the hook's own frames dropped:
     * placeholder <- (the stand-in for CUPTI) <- the call <- launch. */
    uint32_t f = t->first_node + p->nodes[kp].parent;
    const gpuprof__io_node *fn = &p->nodes[f];
    uintptr_t pc = (uintptr_t)(p->modules[fn->key_a].base + fn->key_b);
    uintptr_t cb = (uintptr_t)gpuprof__cupti_test_callback;
    ck_assert_msg(pc > cb && pc < cb + 256,
                  "innermost frame %#lx, want "
                  "gpuprof__cupti_test_callback at %#lx",
                  (unsigned long)pc, (unsigned long)cb);
    uint32_t up = t->first_node + fn->parent;
    ck_assert_str_eq(rb_frame_fn(p, up), "cupti_test_api_call");
    ck_assert_str_eq(rb_frame_fn(p, t->first_node + p->nodes[up].parent),
                     "cupti_test_launch");
    uint32_t ap = one_placeholder(p, t, "hooks", GPUPROF_OP_ALLOC);
    ck_assert_uint_eq(rb_val(p, ap, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, ap, "gpu.bytes"), 1u << 20);
    ck_assert_uint_eq(rb_val(p, ap, "gpu.time"), 0);
    uint32_t dp = one_placeholder(p, t, "hooks", GPUPROF_OP_COPY_D2H);
    ck_assert_uint_eq(rb_val(p, dp, "gpu.bytes"), 512);
    uint32_t none[1];
    ck_assert_uint_eq(
        placeholders(p, t, "hooks", GPUPROF_OP_COPY_OTHER, none, 1), 0);
    uint32_t fp = one_placeholder(p, t, "hooks", GPUPROF_OP_MEMSET);
    ck_assert_uint_eq(rb_val(p, fp, "gpu.count"), 0); /* closed, nothing ran */
    /* Five calls, and the devices' operation the first call begins
     * (detect.devices_unused): its one device ran kernels. */
    ck_assert_uint_eq(rb_counter(p, "gpu.operations"), 6);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 1); /* paused */
    gpuprof__io_profile_free(p);
    gpuprof__cupti_devices_report(1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    p = rb_load();
    t = &p->threads[0];
    uint32_t op_other = one_placeholder(p, t, "hooks", GPUPROF_OP_OTHER);
    ck_assert_uint_eq(rb_val(p, op_other, "detect.devices_unused"), 0);
    /* On the first call's path (the user's frames; the exit callback
     * comes from elsewhere in CUPTI's stand-in). */
    bool in_launch = false;
    for (uint32_t a = t->first_node + p->nodes[op_other].parent;
         a != t->first_node && !in_launch; a = t->first_node + p->nodes[a].parent)
        in_launch = p->nodes[a].kind == GPUPROF_IO_NODE_FRAME &&
                    !strcmp(rb_frame_fn(p, a), "cupti_test_launch");
    ck_assert(in_launch);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- the detectors from API parameters and records (core detect.c) ------
 * The value of `metric` summed over the placeholders of `kind` beneath
 * region `reg`. */
static uint64_t det_sum(const gpuprof__io_profile *p, const char *reg,
                        uint32_t kind, const char *metric)
{
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t out[8];
    uint32_t n = placeholders(p, t, reg, kind, out, 8);
    ck_assert_uint_ge(n, 1);
    uint64_t v = 0;
    for (uint32_t i = 0; i < n && i < 8; i++)
        v += rb_val(p, out[i], metric);
    return v;
}

typedef struct {
    void *result;
    const void *image;
} t_load;

typedef struct {
    void *dst;
    const void *src;
    size_t n;
    enum cudaMemcpyKind k;
} t_copy;

typedef struct {
    const void *func;
    dim3 grid, block;
    void **args;
    size_t shared;
    cudaStream_t stream;
} t_launch;

START_TEST(detectors_offline)
{
    if (!have_cupti())
        return;
    start();
    gpuprof__cupti_classify_all();
    gpuprof__cupti_test_on(1);
    void *mod = NULL;
    static const char ptx[] = "//\n// Generated by NVIDIA NVVM Compiler\n"
                              ".version 8.0\n.target sm_90\n";
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    gpuprof_region_begin("ptx");
    t_load lp = {&mod, ptx};
    cupti_test_api_call(CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, 501, 0, 0,
                        &lp, 0);
    gpuprof_region_end("ptx");
    gpuprof_region_begin("cubin");
    t_load lc = {&mod, elf};
    cupti_test_api_call(CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx, 502, 0, 0,
                        &lc, 0);
    gpuprof_region_end("cubin");
    /* Read back into buf, then sent again from its second half. */
    static char buf[4096], other[4096];
    gpuprof_region_begin("readback");
    t_copy d2h = {buf, (void *)0x1000, sizeof(buf), cudaMemcpyDeviceToHost};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 503, 0, 0,
                        &d2h, 0);
    gpuprof_region_end("readback");
    gpuprof_region_begin("sent_again");
    t_copy h2d = {(void *)0x1000, buf + 2048, 2048, cudaMemcpyHostToDevice};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 504, 0, 0,
                        &h2d, 0);
    gpuprof_region_end("sent_again");
    gpuprof_region_begin("fresh");
    t_copy h2o = {(void *)0x1000, other, sizeof(other), cudaMemcpyHostToDevice};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 505, 0, 0,
                        &h2o, 0);
    gpuprof_region_end("fresh");
    /* Launches: on the legacy default stream (0, then cudaStreamLegacy),
     * and on a stream of the program's. */
    gpuprof_region_begin("legacy");
    t_launch l0 = {NULL, {1, 1, 1}, {32, 1, 1}, NULL, 0, NULL};
    t_launch l1 = {NULL, {1, 1, 1}, {32, 1, 1}, NULL, 0, cudaStreamLegacy};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 506,
                        0, 0, &l0, 0);
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 507,
                        0, 0, &l1, 0);
    gpuprof_region_end("legacy");
    gpuprof_region_begin("stream");
    t_launch ls = {NULL, {1, 1, 1}, {32, 1, 1}, NULL, 0,
                   (cudaStream_t)(uintptr_t)0x5000};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 508,
                        0, 0, &ls, 0);
    gpuprof_region_end("stream");
    /* A kernel name in two contexts, another in one. */
    gpuprof_region_begin("contexts");
    for (uint32_t i = 0; i < 3; i++)
        op(GPUPROF_OP_KERNEL, 510 + i, 0, false);
    gpuprof_region_end("contexts");
    gpuprof_region_begin("one_context");
    for (uint32_t i = 0; i < 2; i++)
        op(GPUPROF_OP_KERNEL, 520 + i, 0, false);
    gpuprof_region_end("one_context");
    rbuf r = {0};
    const uint32_t ctx[3] = {1, 1, 2};
    for (uint32_t i = 0; i < 3; i++) {
        kernel_rec(&r, 510 + i, "k_multi", 100 * i, 100 * i + 50, 1, 32, 8,
                   0, 0, 1);
        ((CUpti_ActivityKernel10 *)(r.b + r.n - sizeof(CUpti_ActivityKernel10)))
            ->contextId = ctx[i];
    }
    for (uint32_t i = 0; i < 2; i++) {
        kernel_rec(&r, 520 + i, "k_single", 400 + 100 * i, 450 + 100 * i, 1,
                   32, 8, 0, 0, 1);
        ((CUpti_ActivityKernel10 *)(r.b + r.n - sizeof(CUpti_ActivityKernel10)))
            ->contextId = 1;
    }
    ck_assert_uint_eq(decode(&r), 5);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const char *J = "detect.jit_single_device", *O = "detect.output_as_input",
               *Q = "detect.inorder_queue", *M = "detect.kernel_multi_context";
    ck_assert_uint_eq(det_sum(p, "ptx", GPUPROF_OP_BUILD, J), 1);
    ck_assert_uint_eq(det_sum(p, "cubin", GPUPROF_OP_BUILD, J), 0);
    ck_assert_uint_eq(det_sum(p, "readback", GPUPROF_OP_COPY_D2H, O), 0);
    ck_assert_uint_eq(det_sum(p, "sent_again", GPUPROF_OP_COPY_H2D, O), 1);
    ck_assert_uint_eq(det_sum(p, "fresh", GPUPROF_OP_COPY_H2D, O), 0);
    ck_assert_uint_eq(det_sum(p, "legacy", GPUPROF_OP_KERNEL, Q), 2);
    ck_assert_uint_eq(det_sum(p, "stream", GPUPROF_OP_KERNEL, Q), 0);
    /* The third launch is the one in a second context. */
    ck_assert_uint_eq(det_sum(p, "contexts", GPUPROF_OP_KERNEL, M), 1);
    ck_assert_uint_eq(det_sum(p, "one_context", GPUPROF_OP_KERNEL, M), 0);
    /* The module loads are host operations with their time in the call. */
    ck_assert_uint_eq(det_sum(p, "ptx", GPUPROF_OP_BUILD, "gpu.count"), 1);
    gpuprof__io_profile_free(p);
    /* Three devices present, every record on device 0: two never used, on
     * the operation the first call (the PTX load) began. */
    gpuprof__cupti_devices_report(3);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    p = rb_load();
    ck_assert_uint_eq(det_sum(p, "ptx", GPUPROF_OP_OTHER,
                              "detect.devices_unused"), 2);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- cubins
 * ------------------------------------------------------------------ */
static void count_fn(void *ctx, const char *name)
{
    (void)name;
    (*(int *)ctx)++;
}

/* CUPTI's CRC of a cubin (the name PC samples give it). */
static uint64_t cubin_crc(const void *cubin, size_t size)
{
    CUpti_GetCubinCrcParams cp;
    memset(&cp, 0, sizeof(cp));
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubinSize = size;
    cp.cubin = cubin;
    ck_assert_int_eq(gpuprof__cu.GetCubinCrc(&cp), CUPTI_SUCCESS);
    return cp.cubinCrc;
}

START_TEST(cubin_kernels)
{
    char exe[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    snprintf(path, sizeof(path), "%s/cupti_fixture.cubin", dirname(exe));
    size_t size;
    uint8_t *cubin = tf_read(path, &size);
    if (!cubin) {
        fprintf(stderr, "check_cupti: no %s (nvcc missing): case skipped\n",
                path);
        return;
    }
    /* Damage: truncated, or a symbol table past the end: nothing named. */
    int calls = 0;
    ck_assert(!gpuprof__cubin_functions(cubin, 40, count_fn, &calls));
    ck_assert(!gpuprof__cubin_functions(cubin, size / 2, count_fn, &calls));
    ck_assert_int_eq(calls, 0);
    ck_assert(gpuprof__cubin_functions(cubin, size, count_fn, &calls));
    ck_assert_int_ge(calls, 2);

    bool cupti = have_cupti(); /* loaded first, as a real run has it */
    start();
    gpuprof__cupti_module_loaded(cubin, size);
    uint32_t a = gpuprof__cupti_kernel_binary("fixture_scale");
    uint32_t b = gpuprof__cupti_kernel_binary("_Z14fixture_squarePfi");
    ck_assert_uint_ne(a, GP_NO_BINARY);
    ck_assert_uint_eq(a, b);
    ck_assert_uint_eq(gpuprof__cupti_kernel_binary("not_there"), GP_NO_BINARY);
    /* PC samples name their cubin by CUPTI's CRC of it. */
    if (gpuprof__cu.GetCubinCrc) {
        uint64_t crc = cubin_crc(cubin, size);
        ck_assert_uint_eq(gpuprof__cupti_crc_binary(crc), a);
        ck_assert_uint_eq(gpuprof__cupti_crc_binary(crc + 1), GP_NO_BINARY);
    }
    /* The same pointer twice: the cache answers the same. */
    const char *nm = "fixture_scale";
    ck_assert_uint_eq(gpuprof__cupti_kernel_binary(nm), a);
    ck_assert_uint_eq(gpuprof__cupti_kernel_binary(nm), a);
    /* Saved once under binaries/, named by content. */
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/binaries", outdir);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int cubins = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        cubins += strstr(de->d_name, ".cubin") != NULL;
    closedir(d);
    ck_assert_int_eq(cubins, 1);
    /* A kernel record of it names the binary. */
    if (cupti) {
        gpuprof_region_begin("c");
        op(GPUPROF_OP_KERNEL, 11, 0, false);
        gpuprof_region_end("c");
        /* Its PC samples: instruction nodes in that cubin. */
        uint64_t crc = 0;
        if (gpuprof__cu.GetCubinCrc)
            crc = cubin_crc(cubin, size);
        uint32_t map[2] = {GP_M_PC_STALL_WAIT,
                           GP_M_PC_STALL_WAIT | GP_CU_LATENCY};
        CUpti_PCSamplingStallReason s0[2] = {{0, 6}, {1, 2}}, s1[1] = {{0, 1}};
        char kname[] = "fixture_scale";
        CUpti_PCSamplingPCData pcs[2] = {
            {sizeof(pcs[0]), crc, 0x40, 0, 0, kname, 2, s0, 11},
            {sizeof(pcs[0]), crc, 0x70, 0, 0, kname, 1, s1, 11}};
        CUpti_PCSamplingData pd;
        memset(&pd, 0, sizeof(pd));
        pd.size = sizeof(pd);
        pd.totalNumPcs = 2;
        pd.pPcData = pcs;
        uint64_t lost = 0;
        ck_assert_uint_eq(gpuprof__cupti_pcs_submit(&pd, map, 2, &lost), 2);
        rbuf r = {0};
        kernel_rec(&r, 11, "fixture_scale", 10, 20, 1, 1, 1, 0, 0, 1);
        ck_assert_uint_eq(decode(&r), 1);
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
        gpuprof__io_profile *p = rb_load();
        const gpuprof__io_thread *t = &p->threads[0];
        uint32_t k =
            rb_child(p, t, one_placeholder(p, t, "c", GPUPROF_OP_KERNEL),
                     GPUPROF_IO_NODE_KERNEL, 0, "fixture_scale");
        ck_assert_uint_eq(p->nodes[k].key_b, a);
        ck_assert(p->modules[a].flags & GPUPROF_IO_MODULE_GPU);
        if (gpuprof__cu.GetCubinCrc) {
            uint32_t i40 =
                rb_child(p, t, k, GPUPROF_IO_NODE_GPU_INSTR, a, NULL);
            ck_assert_uint_ne(i40, UINT32_MAX);
            uint32_t ninstr = 0;
            for (uint32_t i = k + 1; i < t->first_node + t->node_count; i++) {
                const gpuprof__io_node *nd = &p->nodes[i];
                if (t->first_node + nd->parent != k)
                    continue;
                ck_assert_int_eq(nd->kind, GPUPROF_IO_NODE_GPU_INSTR);
                ck_assert_uint_eq(nd->key_a, a);
                ck_assert_uint_eq(rb_val(p, i, "gpu.pc.samples"),
                                  nd->key_b == 0x40 ? 6 : 1);
                ck_assert_uint_eq(rb_val(p, i, "gpu.pc.latency_samples"),
                                  nd->key_b == 0x40 ? 2 : 0);
                ck_assert_uint_eq(rb_val(p, i, "gpu.pc.stall.wait"),
                                  nd->key_b == 0x40 ? 6 : 1);
                ninstr++;
            }
            ck_assert_uint_eq(ninstr, 2);
        }
        gpuprof__io_profile_free(p);
    }
    gpuprof_finalize();
    gpuprof__cupti_cubins_reset();
    free(cubin);
}
END_TEST

/* ---- a static CUDA runtime ------------------------------------------------
 */
/* The address of `name` in `path`, as nm says (0: none). */
static uint64_t nm_addr(const char *path, const char *name)
{
    char cmd[PATH_MAX + 64], line[1024];
    snprintf(cmd, sizeof(cmd), "nm --defined-only '%s'", path);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    uint64_t at = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long a;
        char type, sym[900];
        if (sscanf(line, "%llx %c %899s", &a, &type, sym) == 3 &&
            !strcmp(sym, name))
            at = a;
    }
    pclose(f);
    return at;
}

START_TEST(static_cudart_range)
{
    char exe[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", exe); /* dirname writes into it */
    snprintf(path, sizeof(path), "%s/cupti_static_prog", dirname(dir));
    size_t size;
    uint8_t *elf = tf_read(path, &size);
    if (!elf) {
        fprintf(stderr, "check_cupti: no %s (nvcc missing): case skipped\n",
                path);
        return;
    }
    uint64_t lo, hi;
    ck_assert(gpuprof__cupti_cudart_range(elf, size, &lo, &hi));
    /* The runtime's entry points inside, the program's own code outside. */
    const char *in[] = {"cudaLaunchKernel", "cudaMalloc", "cudaFree",
                        "cudaDeviceSynchronize"};
    for (int i = 0; i < 4; i++) {
        uint64_t a = nm_addr(path, in[i]);
        ck_assert_msg(a && a >= lo && a < hi, "%s at %#llx, range %#llx-%#llx",
                      in[i], (unsigned long long)a, (unsigned long long)lo,
                      (unsigned long long)hi);
    }
    const char *out[] = {"main", "_Z12fixture_fillPff",
                         "_Z33__device_stub__Z12fixture_fillPffPff"};
    for (int i = 0; i < 3; i++) {
        uint64_t a = nm_addr(path, out[i]);
        ck_assert_msg(a && (a < lo || a >= hi), "%s at %#llx is inside", out[i],
                      (unsigned long long)a);
    }
    /* This test program has no CUDA runtime; damaged input: no range. */
    size_t tsize;
    uint8_t *self = tf_read(exe, &tsize);
    ck_assert_ptr_nonnull(self);
    ck_assert(!gpuprof__cupti_cudart_range(self, tsize, &lo, &hi));
    ck_assert(!gpuprof__cupti_cudart_range(elf, 100, &lo, &hi));
    free(self);
    free(elf);
}
END_TEST

/* ---- PC sampling -------------------------------------------------------- */
START_TEST(stall_reason_names)
{
    const char *pre = "smsp__pcsamp_warps_issue_stalled_";
    char n[128];
    snprintf(n, sizeof(n), "%slong_scoreboard", pre);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n),
                      GP_M_PC_STALL_LONG_SCOREBOARD);
    snprintf(n, sizeof(n), "%slong_scoreboard_not_issued", pre);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n),
                      GP_M_PC_STALL_LONG_SCOREBOARD | GP_CU_LATENCY);
    snprintf(n, sizeof(n), "%sselected", pre);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n), GP_M_PC_STALL_SELECTED);
    snprintf(n, sizeof(n), "%snot_selected", pre);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n),
                      GP_M_PC_STALL_NOT_SELECTED);
    snprintf(n, sizeof(n), "%smath_pipe_throttle_not_issued", pre);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n),
                      GP_M_PC_STALL_MATH_PIPE_THROTTLE | GP_CU_LATENCY);
    snprintf(n, sizeof(n), "%sgmma", pre); /* a newer reason: other */
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(n), GP_M_PC_STALL_OTHER);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric("barrier"),
                      GP_M_PC_STALL_BARRIER);
    ck_assert_uint_eq(gpuprof__cupti_stall_metric(NULL), GP_M_PC_STALL_OTHER);
}
END_TEST

START_TEST(pc_samples_exact)
{
    if (!have_cupti())
        return;
    start();
    gpuprof_region_begin("pcs");
    op(GPUPROF_OP_KERNEL, 51, 0, false);
    gpuprof_region_end("pcs");
    /* Stall reason indices as a device reports them, not dense. */
    uint32_t map[10] = {0};
    map[2] = GP_M_PC_STALL_SELECTED;
    map[5] = GP_M_PC_STALL_LONG_SCOREBOARD;
    map[6] = GP_M_PC_STALL_LONG_SCOREBOARD | GP_CU_LATENCY;
    map[9] = GP_M_PC_STALL_BARRIER;
    CUpti_PCSamplingStallReason ra[4] = {{2, 5}, {5, 7}, {6, 4}, {9, 2}};
    CUpti_PCSamplingStallReason rb[1] = {{5, 3}};
    CUpti_PCSamplingStallReason rc[2] = {{2, 1}, {7, 8}}; /* 7: unmapped */
    char name[] = "kA";
    CUpti_PCSamplingPCData pcs[3];
    memset(pcs, 0, sizeof(pcs));
    pcs[0] = (CUpti_PCSamplingPCData){sizeof(pcs[0]), 0xabc, 0x100, 0, 0,
                                      name,           4,     ra,    51};
    pcs[1] = (CUpti_PCSamplingPCData){sizeof(pcs[0]), 0xabc, 0x180, 0, 0,
                                      name,           1,     rb,    51};
    pcs[2] = (CUpti_PCSamplingPCData){
        sizeof(pcs[0]), 0xabc, 0x200, 0,   0,
        name,           2,     rc,    4242}; /* launch not measured */
    CUpti_PCSamplingData d;
    memset(&d, 0, sizeof(d));
    d.size = sizeof(d);
    d.totalNumPcs = 3;
    d.pPcData = pcs;
    uint64_t lost = 0;
    ck_assert_uint_eq(gpuprof__cupti_pcs_submit(&d, map, 10, &lost), 2);
    ck_assert_uint_eq(lost, 9);
    /* The kernel's own record closes the launch. */
    rbuf r = {0};
    kernel_rec(&r, 51, "kA", 100, 900, 1, 32, 16, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t k = rb_child(p, t, one_placeholder(p, t, "pcs", GPUPROF_OP_KERNEL),
                          GPUPROF_IO_NODE_KERNEL, 0, "kA");
    ck_assert_uint_ne(k, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 800);
    /* CRC 0xabc names no cubin we saw: the samples stay on the kernel. */
    for (uint32_t i = k + 1; i < t->first_node + t->node_count; i++)
        ck_assert_uint_ne(t->first_node + p->nodes[i].parent, k);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 17);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.latency_samples"), 4);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.selected"), 5);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.long_scoreboard"), 10);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.barrier"), 2);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 4); /* 2 + 1 + kernel */
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* ---- PC sampling's call sequence, against a recording fake -----------------
 * The fake behaves as cupti_pcsampling.h describes CUPTI: the records of a
 * finished range are staged in the buffer named in the configuration;
 * GetData copies them into the caller's buffer and empties the staging
 * count; Disable leaves the last range's records in the configured buffer.
 * It records every call, the context it named and the attributes set. */
#define FK_CALLS 64
#define FK_PCS 8
static struct {
    const char *call[FK_CALLS];
    CUcontext ctx[FK_CALLS];
    unsigned ncalls;
    CUpti_PCSamplingConfigurationInfo attr[8];
    unsigned nattr;
    uint32_t sel[8]; /* the stall reason indices selected */
    CUpti_PCSamplingData *cfg; /* the configured buffer */
    bool aliased;              /* GetData was handed the configured buffer */
    uint64_t range;
    /* the next range's records, staged by fk_end_range / at Disable */
    CUpti_PCSamplingPCData pcs[FK_PCS];
    CUpti_PCSamplingStallReason st[FK_PCS][4];
    unsigned npcs;
    bool at_disable;
    CUptiResult get_result;
} fk;

static const uint32_t fk_idx[4] = {0, 3, 5, 9}; /* not dense */
static const char *fk_names[4] = {
    "smsp__pcsamp_warps_issue_stalled_selected",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
    "smsp__pcsamp_warps_issue_stalled_barrier"};

static void fk_log(const char *call, CUcontext ctx)
{
    ck_assert_uint_lt(fk.ncalls, FK_CALLS);
    fk.ctx[fk.ncalls] = ctx;
    fk.call[fk.ncalls++] = call;
}

static CUptiResult CUPTIAPI fk_enable(CUpti_PCSamplingEnableParams *p)
{
    ck_assert_uint_eq(p->size, CUpti_PCSamplingEnableParamsSize);
    fk_log("Enable", p->ctx);
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI fk_num(CUpti_PCSamplingGetNumStallReasonsParams *p)
{
    fk_log("GetNumStallReasons", p->ctx);
    *p->numStallReasons = 4;
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI fk_reasons(CUpti_PCSamplingGetStallReasonsParams *p)
{
    fk_log("GetStallReasons", p->ctx);
    ck_assert_uint_eq(p->numStallReasons, 4);
    for (int i = 0; i < 4; i++) {
        p->stallReasonIndex[i] = fk_idx[i];
        snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s",
                 fk_names[i]);
    }
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI
fk_config(CUpti_PCSamplingConfigurationInfoParams *p)
{
    fk_log("SetConfig", p->ctx);
    ck_assert_uint_le(p->numAttributes, 8);
    fk.nattr = (unsigned)p->numAttributes;
    for (unsigned i = 0; i < fk.nattr; i++) {
        CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];
        fk.attr[i] = *a;
        a->attributeStatus = CUPTI_SUCCESS;
        if (a->attributeType ==
            CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
            fk.cfg = a->attributeData.samplingDataBufferData.samplingDataBuffer;
        if (a->attributeType ==
            CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON)
            for (size_t k = 0;
                 k < a->attributeData.stallReasonData.stallReasonCount && k < 8;
                 k++)
                fk.sel[k] = a->attributeData.stallReasonData.pStallReasonIndex[k];
    }
    return CUPTI_SUCCESS;
}

/* Copies the staged records of `from` into `to` (as CUPTI fills a buffer). */
static void fk_copy(CUpti_PCSamplingData *to, const CUpti_PCSamplingPCData *from,
                    unsigned n)
{
    ck_assert_uint_ge(to->collectNumPcs, n);
    uint64_t samples = 0;
    for (unsigned i = 0; i < n; i++) {
        CUpti_PCSamplingPCData *d = &to->pPcData[i];
        CUpti_PCSamplingStallReason *keep = d->stallReason;
        *d = from[i];
        d->stallReason = keep;
        memcpy(keep, from[i].stallReason,
               from[i].stallReasonCount * sizeof(*keep));
        for (size_t k = 0; k < from[i].stallReasonCount; k++)
            samples += from[i].stallReason[k].samples;
    }
    to->totalNumPcs = n;
    to->remainingNumPcs = 0;
    to->totalSamples = samples;
    to->rangeId = fk.range;
}

/* A range ends (serialized: a kernel): its records are staged. */
static void fk_end_range(void)
{
    ck_assert_ptr_nonnull(fk.cfg);
    fk.range++;
    fk_copy(fk.cfg, fk.pcs, fk.npcs);
    fk.npcs = 0;
}

static CUptiResult CUPTIAPI fk_get(CUpti_PCSamplingGetDataParams *p)
{
    fk_log("GetData", p->ctx);
    ck_assert_uint_eq(p->size, CUpti_PCSamplingGetDataParamsSize);
    CUpti_PCSamplingData *out = p->pcSamplingData;
    if (out == fk.cfg) {
        fk.aliased = true;
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    if (fk.get_result != CUPTI_SUCCESS) {
        out->hardwareBufferFull = fk.get_result == CUPTI_ERROR_OUT_OF_MEMORY;
        return fk.get_result;
    }
    unsigned n = (unsigned)fk.cfg->totalNumPcs;
    fk_copy(out, fk.cfg->pPcData, n);
    out->rangeId = fk.cfg->rangeId;
    fk.cfg->totalNumPcs = 0; /* handed out */
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI fk_disable(CUpti_PCSamplingDisableParams *p)
{
    fk_log("Disable", p->ctx);
    if (fk.at_disable)
        fk_end_range();
    return CUPTI_SUCCESS;
}

static const gp_pcs_api fk_api = {fk_enable,  fk_disable, fk_num,
                                  fk_reasons, fk_config,  fk_get};

/* One PC record of the next range: samples per reason (index order of
 * fk_idx), for CUPTI correlation id `id` (0: continuous) and function fn. */
static void fk_pc(uint32_t id, char *fn, uint64_t off, uint32_t sel,
                  uint32_t ls, uint32_t ls_lat, uint32_t bar)
{
    ck_assert_uint_lt(fk.npcs, FK_PCS);
    unsigned i = fk.npcs++;
    uint32_t v[4] = {sel, ls, ls_lat, bar};
    size_t n = 0;
    for (int k = 0; k < 4; k++)
        if (v[k])
            fk.st[i][n++] = (CUpti_PCSamplingStallReason){fk_idx[k], v[k]};
    fk.pcs[i] = (CUpti_PCSamplingPCData){sizeof(fk.pcs[i]), 0xabc, off, 0, 0,
                                         fn, n, fk.st[i], id};
}

static void fk_expect(const char *const *calls, unsigned n)
{
    for (unsigned i = 0; i < n && i < fk.ncalls; i++)
        ck_assert_msg(!strcmp(fk.call[i], calls[i]), "call %u: %s, not %s", i,
                      fk.call[i], calls[i]);
    ck_assert_uint_eq(fk.ncalls, n);
}

static const CUpti_PCSamplingConfigurationInfo *
fk_attr(CUpti_PCSamplingConfigurationAttributeType t)
{
    for (unsigned i = 0; i < fk.nattr; i++)
        if (fk.attr[i].attributeType == t)
            return &fk.attr[i];
    return NULL;
}

/* The attributes every mode sets: all four reasons selected by index,
 * start/stop control off, parsed output, our buffer last. */
static void fk_common_attrs(unsigned nattr)
{
    ck_assert_uint_eq(fk.nattr, nattr);
    const CUpti_PCSamplingConfigurationInfo *a =
        fk_attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(a->attributeData.stallReasonData.stallReasonCount, 4);
    for (int k = 0; k < 4; k++)
        ck_assert_uint_eq(fk.sel[k], fk_idx[k]);
    a = fk_attr(
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(
        a->attributeData.enableStartStopControlData.enableStartStopControl, 0);
    a = fk_attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->attributeData.outputDataFormatData.outputDataFormat,
                     CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED);
    ck_assert_int_eq(fk.attr[nattr - 1].attributeType,
                     CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
    ck_assert_ptr_nonnull(fk.cfg);
    ck_assert_uint_eq(fk.cfg->size, sizeof(CUpti_PCSamplingData));
    ck_assert_uint_ge(fk.cfg->collectNumPcs, FK_PCS);
}

static int fk_mode(void)
{
    const CUpti_PCSamplingConfigurationInfo *a =
        fk_attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
    ck_assert_ptr_nonnull(a);
    return a->attributeData.collectionModeData.collectionMode;
}

/* The kernel node `name` beneath region's one kernel placeholder. */
static uint32_t kernel_under(const gpuprof__io_profile *p,
                             const gpuprof__io_thread *t, const char *region,
                             const char *name)
{
    uint32_t k = rb_child(p, t, one_placeholder(p, t, region, GPUPROF_OP_KERNEL),
                          GPUPROF_IO_NODE_KERNEL, 0, name);
    ck_assert_msg(k != UINT32_MAX, "no kernel %s under %s", name, region);
    return k;
}

START_TEST(pcs_sequence_serialized)
{
    if (!have_cupti())
        return;
    memset(&fk, 0, sizeof(fk));
    setenv("GPUPROF_CUPTI_PC_SAMPLING", "7", 1);
    unsetenv("GPUPROF_CUPTI_PC_SAMPLING_MODE");
    gpuprof__cupti_pcs_test_api(&fk_api);
    ck_assert(gpuprof__cupti_pcs_wanted());
    ck_assert_int_eq(gpuprof__cupti_pcs_mode(), GP_PCS_SERIALIZED);
    start();
    CUcontext ctx = (CUcontext)0x1000;
    gpuprof__cupti_pcs_context(ctx); /* CONTEXT_CREATED */
    const char *setup[] = {"Enable", "GetNumStallReasons", "GetStallReasons",
                           "SetConfig"};
    fk_expect(setup, 4);
    for (unsigned i = 0; i < fk.ncalls; i++)
        ck_assert_ptr_eq(fk.ctx[i], ctx);
    fk_common_attrs(6);
    ck_assert_int_eq(fk_mode(), CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED);
    const CUpti_PCSamplingConfigurationInfo *a =
        fk_attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(a->attributeData.samplingPeriodData.samplingPeriod, 7);
    /* A launch in a context already on: nothing more. */
    gpuprof__cupti_pcs_launch(ctx, "kA", 1);
    ck_assert_uint_eq(fk.ncalls, 4);

    gpuprof_region_begin("one");
    op(GPUPROF_OP_KERNEL, 51, 0, false);
    gpuprof_region_end("one");
    gpuprof_region_begin("two");
    op(GPUPROF_OP_KERNEL, 52, 0, false);
    gpuprof_region_end("two");
    char kA[] = "kA";
    /* Launch 51 ends: its range is staged, taken after the launch. */
    fk_pc(51, kA, 0x100, 5, 7, 4, 2);
    fk_pc(51, kA, 0x180, 0, 3, 0, 0);
    fk_pc(4242, kA, 0x200, 1, 0, 0, 0); /* a launch not measured */
    fk_end_range();
    gpuprof__cupti_pcs_collect(ctx, false);
    ck_assert(!fk.aliased);
    ck_assert_uint_eq(fk.cfg->totalNumPcs, 0);
    /* Launch 52's samples come with Disable, at the end. */
    fk_pc(52, kA, 0x100, 0, 0, 0, 6);
    fk.at_disable = true;
    gpuprof__cupti_pcs_fini();
    const char *all[] = {"Enable",    "GetNumStallReasons", "GetStallReasons",
                         "SetConfig", "GetData",            "GetData",
                         "Disable"};
    fk_expect(all, 7);
    ck_assert_int_eq(gpuprof__cupti_pcs_mode(), GP_PCS_OFF);
    rbuf r = {0};
    kernel_rec(&r, 51, "kA", 100, 900, 1, 32, 16, 0, 0, 1);
    kernel_rec(&r, 52, "kA", 1000, 1500, 1, 32, 16, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 2);
    gpuprof__cupti_pcs_done();
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t k = kernel_under(p, t, "one", "kA");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 17);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.latency_samples"), 4);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.selected"), 5);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.long_scoreboard"), 10);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.barrier"), 2);
    k = kernel_under(p, t, "two", "kA");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 6);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.barrier"), 6);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* Continuous: records name no launch; each goes to the latest launch of
 * its function, held open until its record is in and a later launch of
 * the function replaced it (or flush). A context created before us is
 * enabled at its first launch. */
START_TEST(pcs_sequence_continuous)
{
    if (!have_cupti())
        return;
    memset(&fk, 0, sizeof(fk));
    setenv("GPUPROF_CUPTI_PC_SAMPLING", "1", 1);
    setenv("GPUPROF_CUPTI_PC_SAMPLING_MODE", "continuous", 1);
    gpuprof__cupti_pcs_test_api(&fk_api);
    ck_assert(gpuprof__cupti_pcs_wanted());
    ck_assert_int_eq(gpuprof__cupti_pcs_mode(), GP_PCS_CONTINUOUS);
    start();
    CUcontext ctx = (CUcontext)0x2000;
    gpuprof_region_begin("early");
    uint64_t c1 = op(GPUPROF_OP_KERNEL, 61, 0, false);
    gpuprof__cupti_pcs_launch(ctx, "kC", c1);
    gpuprof_region_end("early");
    const char *setup[] = {"Enable", "GetNumStallReasons", "GetStallReasons",
                           "SetConfig"};
    fk_expect(setup, 4);
    fk_common_attrs(5); /* no period: CUPTI's default */
    ck_assert_ptr_null(
        fk_attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD));
    ck_assert_int_eq(fk_mode(), CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
    /* Launch 1's record comes: it stays open (held). */
    rbuf r = {0};
    kernel_rec(&r, 61, "kC", 100, 900, 1, 32, 16, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 1);
    gpuprof_region_begin("late");
    uint64_t c2 = op(GPUPROF_OP_KERNEL, 62, 0, false);
    gpuprof__cupti_pcs_launch(ctx, "kC", c2);
    gpuprof_region_end("late");
    /* Launch 2's record comes before its samples, and the monitor goes
     * through rounds meanwhile: only the hold keeps the launch open. */
    kernel_rec(&r, 62, "kC", 1000, 1400, 1, 32, 16, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 1);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    /* A graph launch: its kernel is known by its record. */
    gpuprof_region_begin("graph");
    op(GPUPROF_OP_KERNEL, 71, 0, true);
    gpuprof_region_end("graph");
    kernel_rec(&r, 71, "kG", 2000, 2100, 1, 32, 16, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 1);
    char kC[] = "kC", kX[] = "kX", kG[] = "kG";
    fk_pc(0, kC, 0x100, 2, 3, 1, 0);
    fk_pc(0, kX, 0x100, 9, 0, 0, 0); /* a function never launched */
    fk_pc(0, kG, 0x80, 0, 0, 0, 4);
    fk_end_range();
    gpuprof__cupti_pcs_collect(ctx, true);
    ck_assert(!fk.aliased);
    /* Launch 1 was replaced and its record is in: closed; launch 2 is the
     * latest: held until flush. */
    ck_assert(!gpuprof__cupti_pcs_held(c1));
    ck_assert(gpuprof__cupti_pcs_held(c2));
    ck_assert_uint_eq(gpuprof__cupti_pcs_release(true), 1); /* at flush */
    ck_assert(!gpuprof__cupti_pcs_held(c2));
    gpuprof__cupti_graphs_close(); /* cupti_act.c ends the graph launch */
    /* A launch whose record never comes: held until the end, closed then. */
    gpuprof_region_begin("never");
    uint64_t c3 = op(GPUPROF_OP_KERNEL, 63, 0, false);
    gpuprof__cupti_pcs_launch(ctx, "kC", c3);
    gpuprof_region_end("never");
    ck_assert(gpuprof__cupti_pcs_held(c3));
    gpuprof__cupti_pcs_fini();
    gpuprof__cupti_pcs_done();
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t k = kernel_under(p, t, "early", "kC");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 800);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 0);
    k = kernel_under(p, t, "late", "kC");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.time"), 400);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 5);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.latency_samples"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.selected"), 2);
    k = kernel_under(p, t, "graph", "kG");
    ck_assert_uint_eq(rb_val(p, k, "gpu.count"), 1);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.samples"), 4);
    ck_assert_uint_eq(rb_val(p, k, "gpu.pc.stall.barrier"), 4);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    /* 3 kernels + 2 PCs + 3 final activities of held launches + the
     * graph's */
    ck_assert_uint_eq(rb_counter(p, "gpu.activities"), 9);
    gpuprof__io_profile_free(p);
    gpuprof_finalize();
}
END_TEST

/* Launch threads note launches while a record thread marks them in and
 * a collecting thread releases: every hold ends, none twice (TSan build:
 * no race). Corrs are made up: the activities go to no operation. */
#define HT_THREADS 3
#define HT_LAUNCHES 3000
static _Atomic int ht_done;
static void *ht_launcher(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    char name[8];
    for (uint64_t i = 1; i <= HT_LAUNCHES; i++) {
        snprintf(name, sizeof(name), "k%u", (unsigned)(i % 5));
        gpuprof__cupti_pcs_note_launch(name, (t << 32) | i);
    }
    atomic_fetch_add(&ht_done, 1);
    return NULL;
}
static void *ht_records(void *arg)
{
    (void)arg;
    while (atomic_load(&ht_done) < HT_THREADS)
        for (uintptr_t t = 1; t <= HT_THREADS; t++)
            for (uint64_t i = 1; i <= HT_LAUNCHES; i += 97)
                if (gpuprof__cupti_pcs_held((t << 32) | i))
                    gpuprof__cupti_pcs_record_in((t << 32) | i);
    return NULL;
}

START_TEST(pcs_holds_threads)
{
    start();
    gpuprof__cupti_pcs_hold_on(true);
    pthread_t th[HT_THREADS + 1];
    for (uintptr_t t = 0; t < HT_THREADS; t++)
        pthread_create(&th[t], NULL, ht_launcher, (void *)(t + 1));
    pthread_create(&th[HT_THREADS], NULL, ht_records, NULL);
    unsigned closed = 0;
    while (atomic_load(&ht_done) < HT_THREADS)
        closed += gpuprof__cupti_pcs_release(false);
    for (int t = 0; t <= HT_THREADS; t++)
        pthread_join(th[t], NULL);
    /* Every launch not yet in comes in; all end. */
    for (uintptr_t t = 1; t <= HT_THREADS; t++)
        for (uint64_t i = 1; i <= HT_LAUNCHES; i++)
            gpuprof__cupti_pcs_record_in((t << 32) | i);
    closed += gpuprof__cupti_pcs_release(true);
    uint64_t all, refused;
    gpuprof__cupti_pcs_forget(true, &all, &refused);
    ck_assert_uint_ge(all, closed); /* and those closed to make room */
    ck_assert_uint_eq(all + refused, HT_THREADS * HT_LAUNCHES);
    for (uintptr_t t = 1; t <= HT_THREADS; t++)
        ck_assert(!gpuprof__cupti_pcs_held((t << 32) | 1));
    gpuprof__cupti_pcs_hold_on(false);
    gpuprof_finalize();
}
END_TEST

static char logged[8][256];
static unsigned nlogged;
static void keep_log(gpuprof_log_level level, const char *msg, void *user)
{
    (void)user;
    if (level <= GPUPROF_LOG_WARN && nlogged < 8)
        snprintf(logged[nlogged++], sizeof(logged[0]), "%s", msg);
}

/* A misspelt mode: one warning naming it, PC sampling off. A hardware
 * buffer that filled up: one warning, whatever else was collected kept. */
START_TEST(pcs_settings_and_errors)
{
    memset(&fk, 0, sizeof(fk));
    nlogged = 0;
    gpuprof_set_log(keep_log, NULL, GPUPROF_LOG_WARN);
    gpuprof__cupti_pcs_test_api(&fk_api);
    setenv("GPUPROF_CUPTI_PC_SAMPLING", "1", 1);
    setenv("GPUPROF_CUPTI_PC_SAMPLING_MODE", "contnuous", 1);
    ck_assert(!gpuprof__cupti_pcs_wanted());
    ck_assert_int_eq(gpuprof__cupti_pcs_mode(), GP_PCS_OFF);
    ck_assert_uint_eq(nlogged, 1);
    ck_assert_str_eq(logged[0],
                     "cupti: GPUPROF_CUPTI_PC_SAMPLING_MODE=contnuous: want "
                     "serialized or continuous; PC sampling off");
    setenv("GPUPROF_CUPTI_PC_SAMPLING", "4", 1);
    setenv("GPUPROF_CUPTI_PC_SAMPLING_MODE", "serialized", 1);
    ck_assert(!gpuprof__cupti_pcs_wanted());
    ck_assert_uint_eq(nlogged, 2);
    ck_assert_msg(strstr(logged[1], "GPUPROF_CUPTI_PC_SAMPLING=4") != NULL,
                  "%s", logged[1]);
    /* Nothing was called while off. */
    gpuprof__cupti_pcs_context((CUcontext)0x3000);
    gpuprof__cupti_pcs_launch((CUcontext)0x3000, "k", 1);
    ck_assert_uint_eq(fk.ncalls, 0);
    setenv("GPUPROF_CUPTI_PC_SAMPLING", "1", 1);
    ck_assert(gpuprof__cupti_pcs_wanted());
    gpuprof__cupti_pcs_context((CUcontext)0x3000);
    fk.get_result = CUPTI_ERROR_OUT_OF_MEMORY;
    gpuprof__cupti_pcs_collect(NULL, true);
    gpuprof__cupti_pcs_collect(NULL, true);
    ck_assert_uint_eq(nlogged, 3);
    ck_assert_msg(strstr(logged[2], "hardware buffer was full") != NULL, "%s",
                  logged[2]);
    fk.get_result = CUPTI_SUCCESS;
    gpuprof__cupti_pcs_fini();
    ck_assert_str_eq(fk.call[fk.ncalls - 1], "Disable");
    gpuprof_set_log(NULL, NULL, -1);
    unsetenv("GPUPROF_CUPTI_PC_SAMPLING");
    unsetenv("GPUPROF_CUPTI_PC_SAMPLING_MODE");
}
END_TEST

/* ---- a failed init leaves no subscription --------------------------------
 * gpuprof__cu holds fakes: callbacks can be enabled, activity kinds too,
 * until the step under test fails. */
static unsigned fi_unsub, fi_disabled, fi_enabled;
static int fi_fail; /* 1: register callbacks fails; 2: no kernel kind */

static CUptiResult CUPTIAPI fi_name(CUpti_CallbackDomain d, CUpti_CallbackId id,
                                    const char **name)
{
    (void)d;
    *name = id == 5 ? "cuLaunchKernel" : "cuCtxGetDevice";
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_cb(uint32_t on, CUpti_SubscriberHandle s,
                                  CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    (void)on, (void)s, (void)d, (void)id;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_dom(uint32_t on, CUpti_SubscriberHandle s,
                                   CUpti_CallbackDomain d)
{
    (void)on, (void)s, (void)d;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_ts(CUpti_TimestampCallbackFunc f)
{
    (void)f;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_reg(CUpti_BuffersCallbackRequestFunc a,
                                   CUpti_BuffersCallbackCompleteFunc b)
{
    (void)a, (void)b;
    return fi_fail == 1 ? CUPTI_ERROR_NOT_INITIALIZED : CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_act_on(CUpti_ActivityKind k)
{
    if (fi_fail == 2 && (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
                         k == CUPTI_ACTIVITY_KIND_KERNEL))
        return CUPTI_ERROR_NOT_SUPPORTED;
    fi_enabled++;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_act_off(CUpti_ActivityKind k)
{
    (void)k;
    fi_disabled++;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_flush(uint32_t f)
{
    (void)f;
    return CUPTI_SUCCESS;
}
static CUptiResult CUPTIAPI fi_unsubscribe(CUpti_SubscriberHandle s)
{
    (void)s;
    fi_unsub++;
    return CUPTI_SUCCESS;
}

gpuprof_status gpuprof__cupti_test_init(void);
int gpuprof__cupti_test_subscribed(void);

START_TEST(init_failure_unsubscribes)
{
    for (fi_fail = 1; fi_fail <= 2; fi_fail++) {
        memset(&gpuprof__cu, 0, sizeof(gpuprof__cu));
        gpuprof__cu.GetCallbackName = fi_name;
        gpuprof__cu.EnableCallback = fi_cb;
        gpuprof__cu.EnableDomain = fi_dom;
        gpuprof__cu.RegisterTimestampCallback = fi_ts;
        gpuprof__cu.ActivityRegisterCallbacks = fi_reg;
        gpuprof__cu.ActivityEnable = fi_act_on;
        gpuprof__cu.ActivityDisable = fi_act_off;
        gpuprof__cu.ActivityFlushAll = fi_flush;
        gpuprof__cu.Unsubscribe = fi_unsubscribe;
        fi_unsub = fi_disabled = fi_enabled = 0;
        ck_assert_int_eq(gpuprof__cupti_test_init(), GPUPROF_E_UNAVAILABLE);
        ck_assert_uint_eq(fi_unsub, 1);
        ck_assert(!gpuprof__cupti_test_subscribed());
        /* Every kind it turned on is off again (2: the five others). */
        ck_assert_uint_eq(fi_enabled, fi_fail == 1 ? 0 : 5);
        ck_assert_uint_eq(fi_disabled, fi_enabled);
    }
    memset(&gpuprof__cu, 0, sizeof(gpuprof__cu));
}
END_TEST

/* ---- no driver: unavailable, the program unchanged ------------------------
 */
static bool driver_here(void)
{
    void *d = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (d)
        dlclose(d);
    return d != NULL;
}

static int find_cupti(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libcupti"))
        *(int *)found = 1;
    return 0;
}

static bool cupti_in_process(void)
{
    int found = 0;
    dl_iterate_phdr(find_cupti, &found);
    return found != 0;
}

START_TEST(unavailable_without_gpu)
{
    ck_assert(!cupti_in_process());
    init_with("cupti");
    char why[512] = "";
    gpuprof_status st = gpuprof_backend_status("cupti", why, sizeof(why));
    if (st == GPUPROF_OK) {
        fprintf(stderr, "check_cupti: a GPU is here: the no-GPU case does not "
                        "apply\n");
    } else if (!driver_here()) {
        /* No driver: libcupti is never loaded. */
        ck_assert_int_eq(st, GPUPROF_E_UNAVAILABLE);
        ck_assert_str_eq(why, "no CUDA driver (libcuda.so.1 not found); "
                              "libcupti not loaded");
        ck_assert(!cupti_in_process());
    } else {
        ck_assert_int_eq(st, GPUPROF_E_UNAVAILABLE);
        ck_assert_msg(strstr(why, "cuptiSubscribe") != NULL, "reason: %s", why);
    }
    /* Measurement goes on. */
    gpuprof_region_begin("still");
    gpuprof_region_end("still");
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = &p->threads[0];
    uint32_t r =
        rb_child(p, t, t->first_node, GPUPROF_IO_NODE_REGION, 0, "still");
    ck_assert_uint_ne(r, UINT32_MAX);
    ck_assert_uint_eq(rb_val(p, r, "region.visits"), 1);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* The probe's second half where libcupti is there but the driver is not
 * (or cannot reach a GPU): CUPTI's 999, named with its cause. */
START_TEST(subscribe_without_gpu)
{
    if (!have_cupti())
        return;
    char why[512] = "";
    gpuprof_status st = gpuprof__cupti_subscribe(why, sizeof(why));
    if (st == GPUPROF_OK) {
        fprintf(stderr, "check_cupti: a GPU is here: the no-GPU case does not "
                        "apply\n");
        return;
    }
    ck_assert_int_eq(st, GPUPROF_E_UNAVAILABLE);
    if (driver_here())
        ck_assert_msg(strstr(why, "cuptiSubscribe: ") == why &&
                          strstr(why, "driver is there but no usable GPU"),
                      "reason: %s", why);
    else
        ck_assert_str_eq(why, "cuptiSubscribe: CUPTI_ERROR_UNKNOWN (999): "
                              "no CUDA driver (libcuda.so.1 not found)");
}
END_TEST

START_TEST(unavailable_without_library)
{
    setenv("GPUPROF_CUPTI_LIBRARY", "/nonexistent/libcupti.so", 1);
    char why[512] = "";
    ck_assert(!gpuprof__cupti_load(why, sizeof(why)));
    ck_assert_msg(strstr(why, "GPUPROF_CUPTI_LIBRARY=/nonexistent/libcupti.so"),
                  "reason: %s", why);
    /* Through init: unavailable with that reason (or, first, for want of a
     * driver), measurement unchanged. */
    init_with("cupti");
    ck_assert_int_eq(gpuprof_backend_status("cupti", why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, driver_here() ? "GPUPROF_CUPTI_LIBRARY"
                                            : "no CUDA driver"),
                  "reason: %s", why);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    unsetenv("GPUPROF_CUPTI_LIBRARY");
}
END_TEST

/* ---- dependency notes for the trace analysis (trace format 1.3) --------
 * Offline: cudaDeviceSynchronize notes a device wait, cudaMemcpy (and the
 * driver's cuMemcpyDtoH_v2) a blocking launch; cudaStreamSynchronize with
 * no context (CUPTI cannot name its stream) and cudaMemcpyAsync note
 * nothing. */
uint32_t gpuprof__cupti_dep_role(const char *name);

/* The offline dependency-note cases start here: measurement with no
 * backend, recording a trace; CUPTI's ring and counts reset. */
static void start_traced(void)
{
    want_trace = 1;
    init_with("none");
    gpuprof__cupti_ring_reset();
    gpuprof__cupti_counts_reset();
}

/* ... and end here: gpuprof_finalize, then the trace it wrote. */
static gpuprof__io_trace *finish_traced(void)
{
    char prof[1024], trace[1100], err[256];
    ck_assert_int_eq(gpuprof_output_path(prof, sizeof(prof)), GPUPROF_OK);
    snprintf(trace, sizeof(trace), "%.*s.gptrace",
             (int)(strrchr(prof, '.') - prof), prof);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    return t;
}

/* A dependency note: its kind, flags, stream (device 0), the operation it
 * names (end_ns: a correlation id, 0 none) and its own call's. */
static void expect_note(const gpuprof__io_trace_rec *n, uint32_t what,
                        uint32_t flags, uint32_t stream, uint64_t names,
                        uint64_t corr)
{
    ck_assert_uint_eq(GPUPROF_IO_DEP_WHAT(n->context), what);
    ck_assert_uint_eq(GPUPROF_IO_DEP_FLAGS(n->context), flags);
    ck_assert_uint_eq(GPUPROF_IO_DEP_DEVICE(n->context), 0);
    ck_assert_uint_eq(GPUPROF_IO_DEP_STREAM(n->context), stream);
    ck_assert_uint_eq(n->end_ns, names);
    ck_assert_uint_eq(n->corr, corr);
}

START_TEST(dependency_notes_offline)
{
    if (!have_cupti())
        return;
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaStreamSynchronize_ptsz_v7000"),
                      4);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaMemcpyAsync_v3020"), 12);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuMemcpyDtoH_v2"), 5);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaMemcpy_ptds_v7000"),
                      5 | 0x40);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuCtxSynchronize"), 2);
    ck_assert_uint_eq(gpuprof__cupti_dep_role(NULL), 1);
    start_traced();
    gpuprof__cupti_classify_all();
    gpuprof__cupti_test_on(1);
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                        401, 0, 0, NULL, 0);
    struct { /* cudaMemcpyAsync's parameters (cudaMemcpy's first four) */
        void *dst;
        const void *src;
        size_t n;
        enum cudaMemcpyKind k;
        void *stream;
    } cp = {NULL, NULL, 512, cudaMemcpyDeviceToHost, (void *)(uintptr_t)7};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 402, 0, 0,
                        &cp, 0);
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 403, 0,
                        0, &cp, 0);
    struct {
        void *stream;
    } sp = {NULL};
    cupti_test_api_call(CUPTI_CB_DOMAIN_RUNTIME_API,
                        CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                        404, 0, 0, &sp, 0);
    gpuprof__cupti_test_on(0);
    gpuprof__io_trace *t = finish_traced();
    ck_assert_uint_eq(t->dep_stream_count, 1);
    const gpuprof__io_trace_stream *ds = &t->deps[0];
    ck_assert_uint_eq(ds->count, 2);
    ck_assert_uint_eq(GPUPROF_IO_DEP_WHAT(ds->recs[0].context), 1);
    ck_assert_uint_eq(GPUPROF_IO_DEP_STREAM(ds->recs[0].context),
                      GPUPROF_IO_DEP_ALL);
    ck_assert_uint_eq(GPUPROF_IO_DEP_WHAT(ds->recs[1].context), 8);
    /* a blocking copy on the legacy default stream */
    ck_assert_uint_eq(GPUPROF_IO_DEP_FLAGS(ds->recs[1].context),
                      GPUPROF_DEP_BLOCKING | GPUPROF_DEP_NULL);
    ck_assert_uint_ne(ds->recs[0].corr, ds->recs[1].corr);
    gpuprof__io_trace_free(t);
}
END_TEST

/* ---- event notes, and the graph the analysis builds from them ----------
 * Offline, with CUPTI's stream ids from a stand-in for cuptiGetStreamIdEx
 * (a stream handle's id is its value; the per-thread default stream 99)
 * and a context that is only a non-NULL pointer. The program: kA launched
 * on stream 7; event E1 recorded on 7 (cudaEventRecord); stream 8 waits
 * for E1 (cudaStreamWaitEvent); kB launched on 8; E2 recorded on 8 (the
 * driver's cuEventRecord); E2 polled: cudaEventQuery not ready, 2 ms later
 * cuEventQuery not ready, 2 ms later cudaEventQuery ready; then
 * cudaEventSynchronize(E2), cuStreamQuery_ptsz on the per-thread default
 * stream (ready), cudaStreamQuery(7) (ready); an unknown event queried and
 * E2 queried with an error note nothing. The device: kA from 1 us after
 * its launch to 0.5 ms after the first query, kB from kA's end (it waited
 * for E1) to 0.5 ms after the second query. The analysis (analysis/cpath)
 * must find: kB waited for kA (a stream wait), the two failed queries
 * polled kB (an EventQuery wait from the first query's start to kB's
 * end), the ready query and the synchronization found kB done, the stream
 * query kA. */
uint32_t gpuprof__cupti_dep_role(const char *name);
void gpuprof__cupti_deps_reset(void);

static CUptiResult CUPTIAPI fake_stream_id(CUcontext ctx, CUstream s,
                                           uint8_t pt, uint32_t *id)
{
    (void)ctx;
    *id = s ? (uint32_t)(uintptr_t)s : pt ? 99u : 1u;
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI fake_device_id(CUcontext ctx, uint32_t *dev)
{
    (void)ctx;
    *dev = 0;
    return CUPTI_SUCCESS;
}

/* One call (no nested driver call) in a context, returning `ret`; its
 * operation's start and end (process clock) around it. */
__attribute__((noinline)) static void ctx_call(CUpti_CallbackDomain dom,
                                               CUpti_CallbackId cbid,
                                               uint32_t id, const void *params,
                                               int ret)
{
    uint64_t slot = 0;
    CUpti_CallbackData d = cbd(CUPTI_API_ENTER, id, params, &slot);
    d.context = (CUcontext)(uintptr_t)0xC0;
    gpuprof__cupti_test_callback(dom, cbid, &d);
    d.callbackSite = CUPTI_API_EXIT;
    d.functionReturnValue = &ret;
    gpuprof__cupti_test_callback(dom, cbid, &d);
    __asm__ volatile("" ::: "memory");
}

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API

/* The program above; kernel times from the clock around its calls. */
static void event_program(uint64_t *ka, uint64_t *kb)
{
    void *e1 = (void *)(uintptr_t)0xE1, *e2 = (void *)(uintptr_t)0xE2;
    CUstream s7 = (CUstream)(uintptr_t)7, s8 = (CUstream)(uintptr_t)8;
    struct { void *ev; CUstream s; } rec1 = {e1, s7}, rec2 = {e2, s8};
    struct { CUstream s; void *ev; unsigned f; } wait = {s8, e1, 0};
    struct { void *h; } q2 = {e2}, qn = {(void *)(uintptr_t)0xE3},
                        st7 = {s7}, ptds = {NULL};
    uint64_t t0 = gpuprof_be_now_ns();
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 601, NULL, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 602, &rec1, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, 603,
             &wait, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 604, NULL, 0);
    ctx_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, 605, &rec2, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 606, &q2,
             cudaErrorNotReady);
    uint64_t q1 = gpuprof_be_now_ns();
    usleep(2000);
    ctx_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuEventQuery, 607, &q2,
             CUDA_ERROR_NOT_READY);
    uint64_t q2e = gpuprof_be_now_ns();
    usleep(2000);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 608, &q2, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, 609,
             &q2, 0);
    ctx_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz, 610, &ptds, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, 611, &st7, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 612, &qn, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, 613, &q2,
             cudaErrorInvalidResourceHandle);
    ka[0] = t0 + 1000;
    ka[1] = q1 + 500000;
    kb[0] = ka[1];
    kb[1] = q2e + 500000;
    rbuf r = {0};
    kernel_rec(&r, 601, "kA", ka[0], ka[1], 1, 32, 8, 0, 0, 7);
    kernel_rec(&r, 604, "kB", kb[0], kb[1], 1, 32, 8, 0, 0, 8);
    ck_assert_uint_eq(decode(&r), 2);
}

/* The trace's notes: what, flags, stream, and the target's place among
 * the program's operations (-1: none), in the order made; the thread's
 * operations begin with `skip` others. */
static void check_notes(const gpuprof__io_trace *t, uint32_t skip)
{
    static const uint32_t want[][4] = {
        {GPUPROF_DEP_EVENT_RECORD, 0, 7, UINT32_MAX},
        {GPUPROF_DEP_STREAM_WAIT, 0, 8, 1},
        {GPUPROF_DEP_EVENT_RECORD, 0, 8, UINT32_MAX},
        {GPUPROF_DEP_QUERY_EVENT, 0, 8, 4},
        {GPUPROF_DEP_QUERY_EVENT, 0, 8, 4},
        {GPUPROF_DEP_QUERY_EVENT, GPUPROF_DEP_READY, 8, 4},
        {GPUPROF_DEP_SYNC_EVENT, 0, 8, 4},
        {GPUPROF_DEP_QUERY_STREAM, GPUPROF_DEP_READY, 99, UINT32_MAX},
        {GPUPROF_DEP_QUERY_STREAM, GPUPROF_DEP_READY, 7, UINT32_MAX}};
    /* the notes' calls: operations 1, 2, 4, 5, 6, 7, 8, 9, 10 */
    static const uint32_t call[] = {1, 2, 4, 5, 6, 7, 8, 9, 10};
    ck_assert_uint_eq(t->op_stream_count, 1);
    ck_assert_uint_eq(t->dep_stream_count, 1);
    const gpuprof__io_trace_stream *ops = &t->ops[0], *ds = &t->deps[0];
    /* Every call an operation, after the one the devices detector begins
     * at the first measured call (claimed before the program). */
    ck_assert_uint_eq(ops->count, 13 + skip);
    ck_assert_uint_eq(ds->count, 9);
    for (uint32_t i = 0; i < 9; i++) {
        const gpuprof__io_trace_rec *n = &ds->recs[i];
        expect_note(n, want[i][0], want[i][1], want[i][2],
                    want[i][3] == UINT32_MAX
                        ? 0
                        : ops->recs[skip + want[i][3]].corr,
                    ops->recs[skip + call[i]].corr);
        ck_assert_uint_eq(n->start_ns, ops->recs[skip + call[i]].start_ns);
    }
}

/* The database of the measurement in outdir. */
static gpuprof_an_db *analyzed(void)
{
    char db_dir[600];
    snprintf(db_dir, sizeof(db_dir), "%s/db", outdir);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, outdir), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, db_dir), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_structure(a, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(a), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(db_dir, &db), GPUPROF_OK);
    return db;
}

/* The k-th activity of `kind` on lane l, CP_NONE none. */
static uint32_t kth_of(const cp_graph *g, const cp_lane *l, uint64_t k,
                       uint8_t kind)
{
    for (uint32_t a = l->first; a < l->first + l->n; a++)
        if (g->act[a].kind == kind && k-- == 0)
            return a;
    return CP_NONE;
}

/* The graph's API call (CP_CALL) or device work (CP_GPU) of an operation
 * (the graph keeps no correlation ids): the record with id corr of the
 * lane's trace.db stream (a thread's OPS, a GPU stream's own), whose k-th
 * record is the lane's k-th call or device work. */
static uint32_t act_of(const gpuprof_an_db *db, const cp_graph *g,
                       uint64_t corr, uint8_t kind)
{
    for (uint32_t li = 0; li < g->nlane; li++) {
        const cp_lane *l = &g->lane[li];
        if (l->gpu != (kind == CP_GPU))
            continue;
        for (uint32_t i = 0; i < gpuprof_an_db_trace_stream_count(db); i++) {
            gpuprof_an_trace_stream s;
            gpuprof_an_db_trace_stream(db, i, &s);
            bool mine = s.process == l->process &&
                        (l->gpu ? s.kind == GPUPROF_AN_TRACE_GPU &&
                                      s.device == l->device &&
                                      s.stream == l->stream
                                : s.kind == GPUPROF_AN_TRACE_OPS &&
                                      s.profile == l->profile);
            gpuprof_an_trace_record r;
            for (uint64_t k = 0;
                 mine && gpuprof_an_db_trace_records(db, i, k, &r, 1); k++)
                if (r.correlation == corr)
                    return kth_of(g, l, k, kind);
        }
    }
    return CP_NONE;
}

/* The graph's dependency of `type` from waiter to cause, counted. */
static uint32_t deps_of(const cp_graph *g, uint8_t type, uint32_t waiter,
                        uint32_t cause)
{
    uint32_t n = 0;
    for (uint64_t i = 0; i < g->ndep; i++)
        n += g->dep[i].type == type && g->dep[i].waiter == waiter &&
             g->dep[i].cause == cause;
    return n;
}

/* CUPTI's stream and device ids from the stand-ins, clock offset 0, no
 * notes yet, every callback classified; returns the table to restore. */
static gp_cupti_api fake_ids_on(void)
{
    gpuprof__cupti_set_clock_offset(0);
    gpuprof__cupti_deps_reset();
    gp_cupti_api keep = gpuprof__cu;
    gpuprof__cu.GetStreamIdEx = fake_stream_id;
    gpuprof__cu.GetDeviceId = fake_device_id;
    gpuprof__cupti_classify_all();
    return keep;
}

/* The graph of the database's one process. */
static void graph_of(const gpuprof_an_db *db, cp_graph *g)
{
    uint32_t proc;
    ck_assert_uint_eq(cp_processes(db, &proc, 1), 1);
    ck_assert_int_eq(cp_graph_build(db, proc, g), GPUPROF_OK);
}

/* The wait states of the critical path's process 0. */
static void waits_of(const gpuprof_an_db *db, gpuprof_an_wait_totals *w)
{
    gpuprof_an_cpath *cp;
    ck_assert_int_eq(gpuprof_an_cpath_new(db, NULL, NULL, &cp), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_cpath_waits(cp, 0, w), GPUPROF_OK);
    gpuprof_an_cpath_free(cp);
}

START_TEST(event_notes_offline)
{
    if (!have_cupti())
        return;
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaEventRecord_v3020"), 6);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuEventRecordWithFlags_ptsz"),
                      6 | 0x40);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaStreamWaitEvent_v3020"), 7);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuEventSynchronize"), 8);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuEventQuery"), 9);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaStreamQuery_ptsz_v7000"),
                      10 | 0x40);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuStreamWaitValue32"), 1);
    start_traced();
    gp_cupti_api keep = fake_ids_on();
    /* Traced: event records, waits and queries are operations. */
    ck_assert_uint_eq(gpuprof__cupti_class_of(
                          0, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020),
                      GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED);
    gpuprof__cupti_test_on(1);
    gpuprof__cupti_devices_first_call(); /* its operation before ours */
    uint64_t ka[2], kb[2];
    event_program(ka, kb);
    gpuprof__cupti_test_on(0);
    gpuprof__cu = keep;
    ck_assert_uint_eq(gpuprof__cupti_api_failed(), 0); /* not ready is no
                                                          failure */
    gpuprof__io_trace *t = finish_traced();
    uint32_t skip = t->ops[0].count - 13;
    ck_assert_uint_le(skip, 1);
    check_notes(t, skip);
    const gpuprof__io_trace_rec *op = t->ops[0].recs + skip;
    uint64_t corr[13], q1s = op[5].start_ns, lb = op[3].start_ns; /* the
                                         first poll; kB's launch */
    for (int i = 0; i < 13; i++)
        corr[i] = op[i].corr;
    gpuprof__io_trace_free(t);

    gpuprof_an_db *db = analyzed();
    cp_graph g;
    graph_of(db, &g);
    uint32_t a = act_of(db, &g, corr[0], CP_GPU);
    uint32_t b = act_of(db, &g, corr[3], CP_GPU);
    ck_assert_uint_ne(a, CP_NONE);
    ck_assert_uint_ne(b, CP_NONE);
    uint32_t c[13];
    for (int i = 0; i < 13; i++)
        c[i] = act_of(db, &g, corr[i], CP_CALL);
    ck_assert_uint_eq(deps_of(&g, CP_E_STREAM, b, a), 1);
    ck_assert_uint_eq(deps_of(&g, CP_E_POLL, c[5], b), 1);
    ck_assert_uint_eq(deps_of(&g, CP_E_POLL, c[6], b), 1);
    ck_assert_uint_eq(deps_of(&g, CP_E_QUERY, c[7], b), 1);
    ck_assert_uint_eq(deps_of(&g, CP_E_SYNC, c[8], b), 1);
    ck_assert_uint_eq(deps_of(&g, CP_E_QUERY, c[10], a), 1);
    ck_assert_uint_eq(g.ndep, 6); /* and nothing else */
    cp_graph_free(&g);
    /* The wait states: a stream wait of kB from its launch to its start,
     * an event query from the first poll to kB's end. */
    gpuprof_an_wait_totals w;
    waits_of(db, &w);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_STREAM_WAIT], 1);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_STREAM_WAIT], kb[0] - lb);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_EVENT_QUERY], kb[1] - q1s);
    ck_assert_uint_gt(w.count[GPUPROF_AN_WAIT_EVENT_QUERY], 0);
    gpuprof_an_db_close(db);
}
END_TEST

/* ---- launches onto the legacy default stream -------------------------------
 * Offline as above (stream ids: a handle's value, the legacy default
 * stream 1, the per-thread one 99). The program: kA launched on stream 7
 * (cudaLaunchKernel), kN on the NULL stream (cudaLaunchKernel), kP on
 * NULL through cudaLaunchKernel_ptsz (the per-thread default stream),
 * kQ on cudaStreamPerThread (0x2) through cuLaunchKernel, kL on
 * CU_STREAM_LEGACY (0x1) through cuLaunchKernel_ptsz, a copy on
 * cudaStreamLegacy through cudaMemcpyAsync_ptsz, a memset on stream 7
 * (cudaMemsetAsync). Only kN, kL and the copy go to the legacy default
 * stream: exactly their three LAUNCH | NULL notes on stream 1. On the
 * device kN starts when kA ends, which the analysis must find as a
 * NullStream wait of kN caused by kA, from kN's launch to its start. */
typedef struct { unsigned x, y, z; } t_dim3;
typedef struct {
    const void *func;
    t_dim3 grid, block;
    void **args;
    size_t shared;
    CUstream stream;
} t_rt_launch;
typedef struct {
    void *f;
    unsigned grid[3], block[3], shared;
    CUstream stream;
    void **params, **extra;
} t_drv_launch;

START_TEST(null_stream_offline)
{
    if (!have_cupti())
        return;
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaLaunchKernel_v7000"), 11);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaLaunchKernel_ptsz_v7000"),
                      11 | 0x40);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuLaunchCooperativeKernel"),
                      11);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaMemsetAsync_ptsz_v7000"),
                      13 | 0x40);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cudaLaunchKernelExC_v11060"),
                      1);
    ck_assert_uint_eq(gpuprof__cupti_dep_role("cuMemcpyHtoDAsync_v2"), 1);
    start_traced();
    gp_cupti_api keep = fake_ids_on();
    gpuprof__cupti_test_on(1);
    gpuprof__cupti_devices_first_call();
    CUstream s7 = (CUstream)(uintptr_t)7;
    t_rt_launch la = {NULL, {1, 1, 1}, {32, 1, 1}, NULL, 0, s7},
                ln = {NULL, {1, 1, 1}, {32, 1, 1}, NULL, 0, NULL},
                lp = ln;
    t_drv_launch lq = {NULL, {1, 1, 1}, {32, 1, 1}, 0, CU_STREAM_PER_THREAD,
                       NULL, NULL},
                 ll = {NULL, {1, 1, 1}, {32, 1, 1}, 0, CU_STREAM_LEGACY,
                       NULL, NULL};
    struct { void *d; const void *s; size_t n; int k; CUstream st; } cp = {
        NULL, NULL, 64, cudaMemcpyDeviceToHost, CU_STREAM_LEGACY};
    struct { void *d; int v; size_t n; CUstream st; } ms = {NULL, 0, 64, s7};
    uint64_t t0 = gpuprof_be_now_ns();
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 701, &la, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 702, &ln, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, 703, &lp,
             0);
    ctx_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 704, &lq, 0);
    ctx_call(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, 705, &ll, 0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, 706, &cp,
             0);
    ctx_call(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 707, &ms, 0);
    uint64_t t1 = gpuprof_be_now_ns();
    usleep(1000);
    rbuf r = {0};
    uint64_t ka1 = t1 + 500000;
    kernel_rec(&r, 701, "kA", t0 + 1000, ka1, 1, 32, 8, 0, 0, 7);
    kernel_rec(&r, 702, "kN", ka1, ka1 + 100000, 1, 32, 8, 0, 0, 1);
    ck_assert_uint_eq(decode(&r), 2);
    gpuprof__cupti_test_on(0);
    gpuprof__cu = keep;
    gpuprof__io_trace *t = finish_traced();
    ck_assert_uint_eq(t->op_stream_count, 1);
    ck_assert_uint_eq(t->dep_stream_count, 1);
    uint32_t skip = t->ops[0].count - 7;
    ck_assert_uint_le(skip, 1);
    const gpuprof__io_trace_rec *op = t->ops[0].recs + skip;
    const gpuprof__io_trace_stream *ds = &t->deps[0];
    static const uint32_t noted[] = {1, 4, 5}; /* kN, kL, the copy */
    ck_assert_uint_eq(ds->count, 3);
    for (uint32_t i = 0; i < 3; i++) {
        expect_note(&ds->recs[i], GPUPROF_DEP_LAUNCH, GPUPROF_DEP_NULL, 1, 0,
                    op[noted[i]].corr);
    }
    uint64_t corr_a = op[0].corr, corr_n = op[1].corr, ln0 = op[1].start_ns;
    gpuprof__io_trace_free(t);

    gpuprof_an_db *db = analyzed();
    cp_graph g;
    graph_of(db, &g);
    uint32_t a = act_of(db, &g, corr_a, CP_GPU);
    uint32_t n = act_of(db, &g, corr_n, CP_GPU);
    ck_assert_uint_ne(a, CP_NONE);
    ck_assert_uint_ne(n, CP_NONE);
    ck_assert_uint_eq(deps_of(&g, CP_E_NULL, n, a), 1);
    ck_assert_uint_eq(g.ndep, 1); /* and nothing else */
    cp_graph_free(&g);
    gpuprof_an_wait_totals w;
    waits_of(db, &w);
    ck_assert_uint_eq(w.count[GPUPROF_AN_WAIT_NULL_STREAM], 1);
    ck_assert_uint_eq(w.ns[GPUPROF_AN_WAIT_NULL_STREAM], ka1 - ln0);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"decode_exact", decode_exact, 60},
        {"devices_offline", devices_offline, 60},
        {"blame_offline", blame_offline, 60},
        {"detectors_offline", detectors_offline, 60},
        {"clock_offset", clock_offset, 60},
        {"graph_launch", graph_launch, 60},
        {"ring_reuse_is_a_miss", ring_reuse_is_a_miss, 30},
        {"classify_names", classify_names, 60},
        {"hooks_offline", hooks_offline, 60},
        {"dependency_notes_offline", dependency_notes_offline, 60},
        {"event_notes_offline", event_notes_offline, 60},
        {"null_stream_offline", null_stream_offline, 60},
        {"cubin_kernels", cubin_kernels, 60},
        {"static_cudart_range", static_cudart_range, 60},
        {"stall_reason_names", stall_reason_names, 30},
        {"pc_samples_exact", pc_samples_exact, 60},
        {"pcs_sequence_serialized", pcs_sequence_serialized, 60},
        {"pcs_sequence_continuous", pcs_sequence_continuous, 60},
        {"pcs_settings_and_errors", pcs_settings_and_errors, 30},
        {"pcs_holds_threads", pcs_holds_threads, 60},
        {"init_failure_unsubscribes", init_failure_unsubscribes, 30},
        {"unavailable_without_gpu", unavailable_without_gpu, 60},
        {"subscribe_without_gpu", subscribe_without_gpu, 60},
        {"unavailable_without_library", unavailable_without_library, 60},
    };
    return RUN_SUITE("cupti", cases);
}
