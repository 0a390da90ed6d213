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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cupti/cupti.h"
#include "core/gpu.h"
#include "core/internal.h"
#include "io/io.h"
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

/* Measurement with no backend: records are fed by hand. */
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
        {"cudaEventRecord_v3020", 0},
        {"cuModuleLoadData", 0},
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
    struct {
        void *dst;
        const void *src;
        size_t n;
        enum cudaMemcpyKind k;
    } cp = {NULL, NULL, 512, cudaMemcpyDeviceToHost};
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
    ck_assert_uint_eq(rb_counter(p, "gpu.operations"), 5);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 1); /* paused */
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

int main(void)
{
    const test_case cases[] = {
        {"decode_exact", decode_exact, 60},
        {"clock_offset", clock_offset, 60},
        {"graph_launch", graph_launch, 60},
        {"ring_reuse_is_a_miss", ring_reuse_is_a_miss, 30},
        {"classify_names", classify_names, 60},
        {"hooks_offline", hooks_offline, 60},
        {"cubin_kernels", cubin_kernels, 60},
        {"static_cudart_range", static_cudart_range, 60},
        {"stall_reason_names", stall_reason_names, 30},
        {"pc_samples_exact", pc_samples_exact, 60},
        {"unavailable_without_gpu", unavailable_without_gpu, 60},
        {"subscribe_without_gpu", subscribe_without_gpu, 60},
        {"unavailable_without_library", unavailable_without_library, 60},
    };
    return RUN_SUITE("cupti", cases);
}
