/*
 * check_levelzero.c - the Level Zero backend end to end: the real Debian
 * loader (linked here, as programs do) and its real tracing layer, and the
 * fake driver of tests/fakeze (ZE_ENABLE_ALT_DRIVERS), whose kernels take
 * scripted times on per-engine timelines and stamp events with 32-bit
 * wrapping kernel timestamps. Each case runs in its own process (fork
 * mode): gpuprof_init first (it enables the tracing layer and calls
 * zeInit), then the program's Level Zero calls, then the profile (and
 * trace) read back: exact counts, bytes, kinds, kernel names and binaries,
 * device times against the driver's ground truth (FAKEZE_TRACE), call
 * paths, blame, dependency notes; a missing driver or a zeInit before
 * gpuprof_init said clearly, the program unchanged.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <level_zero/ze_api.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "gpuprof_backend.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/readback.h"
#include "support/suite.h"

#define ZE_OK(call) ck_assert_int_eq((call), ZE_RESULT_SUCCESS)

/* The cases leave the fake driver's objects to the process's end. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfakeze\nleak:libze_loader\nleak:libze_tracing_layer\n";
}

static char driver_path[PATH_MAX], trace_path[PATH_MAX], outdir[512];
static ze_driver_handle_t drv;
static ze_device_handle_t dev;
static ze_context_handle_t ctx;
static int want_trace;

/* ---- measurement and the fake driver ---------------------------------- */
static void knobs(void)
{
    setenv("ZE_ENABLE_ALT_DRIVERS", driver_path, 1);
    const char *tmp = getenv("TMPDIR");
    snprintf(trace_path, sizeof(trace_path), "%s/l0-ops-%d", tmp ? tmp : "/tmp",
             (int)getpid());
    unlink(trace_path);
    setenv("FAKEZE_TRACE", trace_path, 1);
}

static gpuprof_status start_gpuprof(char *why, size_t wsize)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/l0.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "levelzero";
    o.signals = 0;
    o.trace = want_trace;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    why[0] = '\0';
    return gpuprof_backend_status("levelzero", why, wsize);
}

/* gpuprof first, then the program's own zeInit and objects. */
static void start(void)
{
    char why[300];
    ck_assert_msg(start_gpuprof(why, sizeof(why)) == GPUPROF_OK,
                  "levelzero backend: %s", why);
    ZE_OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    uint32_t n = 1;
    ZE_OK(zeDriverGet(&n, &drv));
    n = 1;
    ZE_OK(zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ZE_OK(zeContextCreate(drv, &cd, &ctx));
}

static const uint8_t native_a[] = "module A: native bytes the fake keeps";
static const uint8_t native_b[] = "module B: other native bytes";

static ze_module_handle_t module(const uint8_t *bytes, size_t n)
{
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE,
                           .inputSize = n,
                           .pInputModule = bytes};
    ze_module_handle_t m;
    ZE_OK(zeModuleCreate(ctx, dev, &md, &m, NULL));
    return m;
}

static ze_kernel_handle_t kernel_in(ze_module_handle_t m, const char *name)
{
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = name};
    ze_kernel_handle_t k;
    ZE_OK(zeKernelCreate(m, &kd, &k));
    ZE_OK(zeKernelSetGroupSize(k, 64, 1, 1));
    return k;
}

static ze_command_list_handle_t immediate(uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreateImmediate(ctx, dev, &qd, &l));
    return l;
}

static ze_command_queue_handle_t queue(uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_queue_handle_t q;
    ZE_OK(zeCommandQueueCreate(ctx, dev, &qd, &q));
    return q;
}

static ze_command_list_handle_t regular(uint32_t ordinal)
{
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                                 .commandQueueGroupOrdinal = ordinal};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreate(ctx, dev, &ld, &l));
    return l;
}

/* A pool as a program makes it: no timestamps asked for. */
static ze_event_handle_t app_event(ze_event_pool_handle_t *pool)
{
    ze_event_pool_desc_t pd = {
        .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = 0, .count = 4};
    ZE_OK(zeEventPoolCreate(ctx, &pd, 1, &dev, pool));
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                          .index = 0,
                          .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e;
    ZE_OK(zeEventCreate(*pool, &ed, &e));
    return e;
}

static void *dev_mem(size_t n)
{
    ze_device_mem_alloc_desc_t d = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    ZE_OK(zeMemAllocDevice(ctx, &d, n, 64, dev, &p));
    return p;
}

static const ze_group_count_t groups = {4, 1, 1};

/* ---- the driver's ground truth ----------------------------------------- */
typedef struct op {
    char kind[16], name[64], src[16], dst[16];
    unsigned ordinal, index;
    size_t bytes;
    uint64_t start, end, host_start, host_end;
} op;

static size_t read_ops(op *ops, size_t max)
{
    FILE *f = fopen(trace_path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = 0;
    char line[512];
    while (n < max && fgets(line, sizeof(line), f)) {
        op *o = &ops[n];
        unsigned d;
        int got = sscanf(line,
                         "op=%15s dev=%u engine=%u.%u name=%63s bytes=%zu "
                         "src=%15s dst=%15s start=%" SCNu64 " end=%" SCNu64
                         " host_start=%" SCNu64 " host_end=%" SCNu64,
                         o->kind, &d, &o->ordinal, &o->index, o->name,
                         &o->bytes, o->src, o->dst, &o->start, &o->end,
                         &o->host_start, &o->host_end);
        ck_assert_int_eq(got, 12);
        n++;
    }
    fclose(f);
    return n;
}

/* CLOCK_MONOTONIC_RAW (the fake's host clock) -> the process clock. */
static int64_t raw_to_mono(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    return ((int64_t)a.tv_sec - b.tv_sec) * 1000000000 +
           ((int64_t)a.tv_nsec - b.tv_nsec);
}

/* ---- the profile ------------------------------------------------------- */
static gpuprof__io_profile *flush_and_load(void)
{
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    return rb_load();
}

static bool under_region(const gpuprof__io_profile *p, uint32_t i,
                         const char *region)
{
    if (!region)
        return true;
    const gpuprof__io_thread *th = NULL;
    for (uint32_t t = 0; t < p->thread_count && !th; t++)
        if (i >= p->threads[t].first_node &&
            i < p->threads[t].first_node + p->threads[t].node_count)
            th = &p->threads[t];
    ck_assert_ptr_nonnull(th);
    for (uint32_t r = i - th->first_node; r != 0;
         r = p->nodes[th->first_node + r].parent) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + r];
        if (n->kind == GPUPROF_IO_NODE_REGION &&
            !strcmp(gpuprof__io_str(p, n->key_a), region))
            return true;
    }
    return false;
}

/* Sum of `metric` over placeholders of `kind` (0: any) beneath `region`,
 * or over kernel nodes named `kname`. */
static uint64_t sum_at(const gpuprof__io_profile *p, const char *metric,
                       uint32_t kind, const char *kname, const char *region)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        bool hit = kname ? n->kind == GPUPROF_IO_NODE_KERNEL &&
                               !strcmp(gpuprof__io_str(p, n->key_a), kname)
                         : n->kind == GPUPROF_IO_NODE_GPU_OP &&
                               (!kind || n->key_a == kind);
        if (hit && under_region(p, i, region))
            s += rb_val(p, i, metric);
    }
    return s;
}

/* The function of the frame right above placeholder i (the innermost
 * frame of its call path). */
static const char *caller_of(const gpuprof__io_profile *p, uint32_t i)
{
    const gpuprof__io_thread *th = NULL;
    for (uint32_t t = 0; t < p->thread_count && !th; t++)
        if (i >= p->threads[t].first_node &&
            i < p->threads[t].first_node + p->threads[t].node_count)
            th = &p->threads[t];
    uint32_t par = p->nodes[i].parent;
    const gpuprof__io_node *n = &p->nodes[th->first_node + par];
    if (n->kind != GPUPROF_IO_NODE_FRAME)
        return "(not a frame)";
    const gpuprof__io_module *mod = &p->modules[n->key_a];
    Dl_info di;
    if (dladdr((void *)(uintptr_t)(mod->base + n->key_b), &di) && di.dli_sname)
        return di.dli_sname;
    static char buf[512];
    snprintf(buf, sizeof(buf), "(unknown: %s+0x%llx)",
             gpuprof__io_str(p, mod->path), (unsigned long long)n->key_b);
    return buf;
}

/* Every placeholder of `kind` with a count is called from `fn`. */
static void all_called_from(const gpuprof__io_profile *p, uint32_t kind,
                            const char *fn)
{
    int seen = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (n->kind != GPUPROF_IO_NODE_GPU_OP || n->key_a != kind)
            continue;
        ck_assert_msg(!strcmp(caller_of(p, i), fn), "kind %u called from %s",
                      kind, caller_of(p, i));
        seen++;
    }
    ck_assert_int_gt(seen, 0);
}

/* ---- cases ------------------------------------------------------------- */
/* The program's calls, made from functions of their own (call paths). */
void launch_here(ze_command_list_handle_t l, ze_kernel_handle_t k,
                 ze_event_handle_t ev);
__attribute__((noinline)) void launch_here(ze_command_list_handle_t l,
                                           ze_kernel_handle_t k,
                                           ze_event_handle_t ev)
{
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &groups, ev, 0, NULL));
    __asm__ volatile("" ::: "memory");
}
void copy_here(ze_command_list_handle_t l, void *dst, const void *src,
               size_t n);
__attribute__((noinline)) void copy_here(ze_command_list_handle_t l, void *dst,
                                         const void *src, size_t n)
{
    ZE_OK(zeCommandListAppendMemoryCopy(l, dst, src, n, NULL, 0, NULL));
    __asm__ volatile("" ::: "memory");
}
void execute_here(ze_command_queue_handle_t q, ze_command_list_handle_t l,
                  ze_fence_handle_t f);
__attribute__((noinline)) void execute_here(ze_command_queue_handle_t q,
                                            ze_command_list_handle_t l,
                                            ze_fence_handle_t f)
{
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    __asm__ volatile("" ::: "memory");
}

/* Immediate list: kernels (our event each), copies both ways, a fill and a
 * barrier; one event of the program's (a pool without timestamps) waited
 * for. Exact counts, bytes, kinds, names, durations; the call paths end at
 * the program's functions; the wait is CPU_IDLE. */
START_TEST(immediate_list_exact)
{
    knobs();
    /* Kernels long enough that the hooks' own time around the wait (slow
     * under TSan on a busy machine) is a small part of it. */
    setenv("FAKEZE_KERNELS", "k_a=10000000,k_b=400000", 1);
    start();
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_kernel_handle_t kb =
        kernel_in(module(native_b, sizeof(native_b)), "k_b");
    ze_command_list_handle_t l = immediate(0, 0);
    enum { N = 1 << 20 };
    char *host = malloc(N);
    memset(host, 1, N);
    void *d = dev_mem(N);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    gpuprof_region_begin("imm");
    for (int i = 0; i < 3; i++)
        launch_here(l, ka, NULL);
    launch_here(l, kb, NULL);
    copy_here(l, d, host, N);
    copy_here(l, host, d, N / 2);
    uint32_t pattern = 7;
    ZE_OK(
        zeCommandListAppendMemoryFill(l, d, &pattern, 4, 4096, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendBarrier(l, done, 0, NULL));
    uint64_t w0 = gpuprof_be_now_ns();
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    uint64_t w1 = gpuprof_be_now_ns();
    gpuprof_region_end("imm");
    gpuprof__io_profile *p = flush_and_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", "imm"), 3);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_b", "imm"), 1);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", "imm"), 3 * 10000000);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_b", "imm"), 400000);
    ck_assert_uint_eq(sum_at(p, "gpu.work_items", 0, "k_a", "imm"), 3 * 4 * 64);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      1);
    ck_assert_uint_eq(sum_at(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      N);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_COPY_D2H, NULL, "imm"),
                      1);
    ck_assert_uint_eq(sum_at(p, "gpu.bytes", GPUPROF_OP_COPY_D2H, NULL, "imm"),
                      N / 2);
    /* 1 MiB at the fake's 10 GB/s: 104858 ns, in whole 80 ns ticks */
    ck_assert_uint_eq(sum_at(p, "gpu.time", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      (104858 + 79) / 80 * 80);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_MEMSET, NULL, "imm"),
                      1);
    ck_assert_uint_eq(sum_at(p, "gpu.bytes", GPUPROF_OP_MEMSET, NULL, "imm"),
                      4096);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_OTHER, NULL, "imm"), 1);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_SYNC, NULL, "imm"), 1);
    /* The wait is CPU_IDLE: the call's time less our hooks' work. */
    uint64_t idle = sum_at(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, "imm");
    ck_assert_uint_le(idle, w1 - w0);
    ck_assert_uint_ge(idle + 200000 + (w1 - w0) / 10, w1 - w0);
    all_called_from(p, GPUPROF_OP_KERNEL, "launch_here");
    all_called_from(p, GPUPROF_OP_COPY_H2D, "copy_here");
    all_called_from(p, GPUPROF_OP_COPY_D2H, "copy_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    /* Device times: each kernel's start and end within a tick of the
     * driver's ground truth, on the process clock. */
    op ops[32];
    size_t nops = read_ops(ops, 32);
    ck_assert_uint_eq(nops, 8);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* The trace of this measurement (after gpuprof_finalize). */
static char prof_path[1024];
static gpuprof__io_trace *load_trace(void)
{
    char trace[1100], err[256];
    snprintf(trace, sizeof(trace), "%.*s.gptrace",
             (int)(strrchr(prof_path, '.') - prof_path), prof_path);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    gpuprof__io_trace_sort(t);
    return t;
}

/* Kernels whose kernel timestamps wrap (the device timer's low 32 bits
 * pass 2^32 400 ms after zeInit): launched in groups, waited for, until the
 * device clock is past the wrap, whatever the machine's speed. Each
 * kernel's start and end on the process clock within a tick (80 ns) and
 * the clocks' sampling of the driver's own account; durations exact. */
START_TEST(device_times_across_the_wrap)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=5000000", 1);
    /* 0x700000000 + 2^32 - 5000000 ticks: the wrap 400 ms after zeInit */
    setenv("FAKEZE_TS_START", "0x7FFB3B4C0", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = immediate(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    int launched = 0;
    for (uint64_t host = 0, ticks = 0;
         ticks < 0x800000000ull + 62500 && launched < 1000;) {
        for (int i = 0; i < 4; i++, launched++)
            launch_here(l, ka, i == 3 ? done : NULL);
        ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
        ZE_OK(zeEventHostReset(done));
        ZE_OK(zeDeviceGetGlobalTimestamps(dev, &host, &ticks));
    }
    int64_t raw2mono = raw_to_mono();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    static op ops[1100];
    size_t nops = read_ops(ops, 1100);
    ck_assert_uint_eq(nops, (size_t)launched);
    bool before = false, after = false;
    for (size_t i = 0; i < nops; i++) {
        before = before || (ops[i].start >> 32) == 7;
        after = after || (ops[i].end >> 32) == 8;
    }
    ck_assert_msg(before && after,
                  "the kernels do not cross the wrap: %zu, ticks %" PRIx64
                  "..%" PRIx64,
                  nops, ops[0].start, ops[nops - 1].end);
    gpuprof__io_trace *t = load_trace();
    const gpuprof__io_trace_stream *st = NULL;
    for (uint32_t i = 0; i < t->stream_count; i++)
        if (t->streams[i].gpu && t->streams[i].count)
            st = &t->streams[i];
    ck_assert_ptr_nonnull(st);
    ck_assert_uint_eq(st->count, (uint64_t)launched);
    ck_assert_uint_eq(st->id, 0); /* engine 0.0 */
    for (uint64_t i = 0; i < st->count; i++) {
        const gpuprof__io_trace_rec *r = &st->recs[i];
        int64_t ws = (int64_t)ops[i].host_start + raw2mono,
                we = (int64_t)ops[i].host_end + raw2mono;
        ck_assert_uint_eq(r->end_ns - r->start_ns, 5000000);
        ck_assert_msg(llabs((int64_t)r->start_ns - ws) < 20000 &&
                          llabs((int64_t)r->end_ns - we) < 20000,
                      "kernel %d: %llu..%llu, driver %lld..%lld", (int)i,
                      (unsigned long long)r->start_ns,
                      (unsigned long long)r->end_ns, (long long)ws,
                      (long long)we);
    }
    gpuprof__io_trace_free(t);
}
END_TEST

/* Regular lists: recorded at append, device work at each execute, under
 * the execute's call path; two queues on two engines (two trace streams);
 * fence and queue waits; dependency notes. */
START_TEST(regular_lists_on_two_queues)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=5000000,k_b=15000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_module_handle_t m = module(native_a, sizeof(native_a));
    ze_kernel_handle_t ka = kernel_in(m, "k_a"), kb = kernel_in(m, "k_b");
    enum { N = 65536 };
    char *host = calloc(1, N);
    void *d = dev_mem(N);
    ze_command_list_handle_t l1 = regular(0), l2 = regular(0);
    launch_here(l1, ka, NULL);
    copy_here(l1, d, host, N);
    launch_here(l1, ka, NULL);
    ZE_OK(zeCommandListClose(l1));
    launch_here(l2, kb, NULL);
    ZE_OK(zeCommandListClose(l2));
    ze_command_queue_handle_t q0 = queue(0, 0), q1 = queue(0, 1);
    ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
    ze_fence_handle_t f;
    ZE_OK(zeFenceCreate(q0, &fd, &f));
    gpuprof_region_begin("run");
    for (int i = 0; i < 3; i++) {
        execute_here(q0, l1, f);
        execute_here(q1, l2, NULL);
        ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
        ZE_OK(zeFenceReset(f));
        ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    }
    gpuprof_region_end("run");
    gpuprof__io_profile *p = flush_and_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", "run"), 6);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_b", "run"), 3);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", "run"), 6 * 5000000);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_b", "run"), 3 * 15000000);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "run"),
                      3);
    ck_assert_uint_eq(sum_at(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "run"),
                      3 * N);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_SYNC, NULL, "run"), 6);
    /* Each round waits for k_b (15 ms) less what the executes took after
     * it started: up to 5 ms a round allowed (TSan, a busy machine). */
    ck_assert_uint_ge(sum_at(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, "run"),
                      3 * (15000000 - 5000000));
    all_called_from(p, GPUPROF_OP_KERNEL, "execute_here");
    all_called_from(p, GPUPROF_OP_COPY_H2D, "execute_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);

    gpuprof__io_trace *t = load_trace();
    uint64_t per[2] = {0, 0};
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *st = &t->streams[i];
        if (!st->gpu || !st->count)
            continue;
        ck_assert_uint_lt(st->id, 2); /* engines 0.0 and 0.1 */
        per[st->id] += st->count;
        /* in order, within a tick (80 ns) and the clocks' sampling: each
         * settling maps the device clock anew */
        for (uint64_t j = 1; j < st->count; j++)
            ck_assert_uint_ge(st->recs[j].start_ns + 200,
                              st->recs[j - 1].end_ns);
    }
    ck_assert_uint_eq(per[0], 9); /* 3 x (k_a, copy, k_a) */
    ck_assert_uint_eq(per[1], 3);
    uint32_t n[9] = {0};
    for (uint32_t s = 0; s < t->dep_stream_count; s++)
        for (uint64_t i = 0; i < t->deps[s].count; i++) {
            uint32_t what = GPUPROF_IO_DEP_WHAT(t->deps[s].recs[i].context);
            ck_assert_uint_lt(what, 9);
            n[what]++;
        }
    ck_assert_uint_eq(n[8], 3 * 3); /* LAUNCH: kernels, copy; kernel */
    ck_assert_uint_eq(n[2], 6);     /* SYNC_STREAM: fence, queue */
    gpuprof__io_trace_free(t);
}
END_TEST

/* A kernel waited for through the program's event: the wait is CPU_IDLE
 * and CPU_IDLE_CAUSE of that kernel; the event wait names the kernel's
 * operation (SYNC_EVENT). */
START_TEST(event_wait_blames_the_kernel)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_long=30000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t k =
        kernel_in(module(native_a, sizeof(native_a)), "k_long");
    ze_command_list_handle_t l = immediate(0, 1);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    launch_here(l, k, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    gpuprof__io_profile *p = flush_and_load();
    uint64_t idle = sum_at(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, NULL);
    uint64_t cause = sum_at(p, "blame.cpu_idle_cause", 0, "k_long", NULL);
    ck_assert_uint_ge(idle, 25000000);
    ck_assert_uint_le(idle, 300000000);
    ck_assert_uint_ge(cause, 25000000);
    ck_assert_uint_le(cause, idle);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = load_trace();
    uint64_t launch = 0, waited = 0;
    for (uint32_t s = 0; s < t->dep_stream_count; s++)
        for (uint64_t i = 0; i < t->deps[s].count; i++) {
            const gpuprof__io_trace_rec *r = &t->deps[s].recs[i];
            if (GPUPROF_IO_DEP_WHAT(r->context) == 8)
                launch = r->corr;
            if (GPUPROF_IO_DEP_WHAT(r->context) == 3)
                waited = r->end_ns;
        }
    ck_assert_uint_ne(launch, 0);
    ck_assert_uint_eq(waited, launch);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Module binaries: saved once per content, named by their kernels. */
START_TEST(binaries_saved_once)
{
    knobs();
    start();
    ze_kernel_handle_t k1 =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_kernel_handle_t k2 =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_kernel_handle_t k3 =
        kernel_in(module(native_b, sizeof(native_b)), "k_b");
    ze_command_list_handle_t l = immediate(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    launch_here(l, k1, NULL);
    launch_here(l, k2, NULL);
    launch_here(l, k3, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    gpuprof__io_profile *p = flush_and_load();
    ck_assert_uint_eq(rb_counter(p, "gpu.binaries"), 2);
    uint32_t ma = UINT32_MAX, mb = UINT32_MAX;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (n->kind != GPUPROF_IO_NODE_KERNEL)
            continue;
        ck_assert_uint_lt(n->key_b, p->module_count);
        ck_assert(p->modules[n->key_b].flags & GPUPROF_IO_MODULE_GPU);
        bool a = !strcmp(gpuprof__io_str(p, n->key_a), "k_a");
        uint32_t *m = a ? &ma : &mb;
        ck_assert(*m == UINT32_MAX || *m == n->key_b);
        *m = (uint32_t)n->key_b;
    }
    ck_assert_uint_ne(ma, UINT32_MAX);
    ck_assert_uint_ne(mb, UINT32_MAX);
    ck_assert_uint_ne(ma, mb);
    ck_assert_uint_eq(p->modules[ma].size, sizeof(native_a));
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", outdir,
             gpuprof__io_str(p, p->modules[ma].path));
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    uint8_t got[sizeof(native_a) + 1];
    ck_assert_uint_eq(fread(got, 1, sizeof(got), f), sizeof(native_a));
    fclose(f);
    ck_assert_int_eq(memcmp(got, native_a, sizeof(native_a)), 0);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_BUILD, NULL, NULL), 3);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* No driver: unavailable with the reason, zeInit never called by us, and
 * the program's own zeInit answers as without gpuprof. */
START_TEST(no_driver_is_unavailable)
{
    unsetenv("ZE_ENABLE_ALT_DRIVERS");
    char why[300];
    ck_assert_int_eq(start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "no Level Zero driver"), "%s", why);
    ck_assert_int_ne(zeInit(0), ZE_RESULT_SUCCESS);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* A driver whose zeInit fails: said with the result. */
START_TEST(failing_driver_is_unavailable)
{
    knobs();
    setenv("FAKEZE_INIT_RESULT", "0x78000001", 1);
    char why[300];
    ck_assert_int_eq(start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "zeInit: 0x78000001"), "%s", why);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* The program initialized Level Zero before gpuprof_init: the tracing
 * layer cannot be loaded any more; the reason says what to do, and the
 * program's calls go on working. */
START_TEST(zeinit_before_gpuprof_is_said)
{
    knobs();
    unsetenv("ZE_ENABLE_TRACING_LAYER");
    ZE_OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    char why[400];
    ck_assert_int_eq(start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "zeInit ran before gpuprof_init"), "%s", why);
    ck_assert_msg(strstr(why, "ZE_ENABLE_TRACING_LAYER=1"), "%s", why);
    uint32_t n = 1;
    ZE_OK(zeDriverGet(&n, &drv));
    n = 1;
    ZE_OK(zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ZE_OK(zeContextCreate(drv, &cd, &ctx));
    ze_kernel_handle_t k = kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = immediate(0, 0);
    launch_here(l, k, NULL);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_ptr_null(getenv("ZE_ENABLE_TRACING_LAYER"));
}
END_TEST

/* Threads appending to their own immediate lists at once, each waiting
 * for its own event: every kernel counted once (and the sanitizer builds
 * look at the locking). */
#define THREADS 4
#define PER_THREAD 50
static ze_kernel_handle_t thread_kernel;

static void *appender(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    ze_command_list_handle_t l = immediate(0, (uint32_t)(id % 2));
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    for (int i = 0; i < PER_THREAD; i++) {
        launch_here(l, thread_kernel, i % 10 == 9 ? done : NULL);
        if (i % 10 == 9) {
            ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
            ZE_OK(zeEventHostReset(done));
        }
    }
    ZE_OK(zeCommandListDestroy(l));
    return NULL;
}

START_TEST(threads_append_at_once)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_t=20000", 1);
    start();
    thread_kernel = kernel_in(module(native_a, sizeof(native_a)), "k_t");
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, appender, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    gpuprof__io_profile *p = flush_and_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_t", NULL),
                      THREADS * PER_THREAD);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_t", NULL),
                      THREADS * PER_THREAD * 20000);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_SYNC, NULL, NULL),
                      THREADS * PER_THREAD / 10);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* A synchronous immediate list returns when its work is done: the time
 * the append blocked is CPU_IDLE on the append's own operation. */
START_TEST(synchronous_list_blocks_in_the_append)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_s=10000000", 1);
    start();
    ze_kernel_handle_t k = kernel_in(module(native_a, sizeof(native_a)), "k_s");
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreateImmediate(ctx, dev, &qd, &l));
    uint64_t t0 = gpuprof_be_now_ns();
    launch_here(l, k, NULL);
    launch_here(l, k, NULL);
    uint64_t t1 = gpuprof_be_now_ns();
    ck_assert_uint_ge(t1 - t0, 20000000);
    gpuprof__io_profile *p = flush_and_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_s", NULL), 2);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_s", NULL), 20000000);
    uint64_t idle = sum_at(p, "blame.cpu_idle", GPUPROF_OP_KERNEL, NULL, NULL);
    ck_assert_uint_ge(idle, 19000000);
    ck_assert_uint_le(idle, t1 - t0);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Each Level Zero detector on its positive and negative case: JIT from
 * SPIR-V (not from a native binary), a write of host memory that received
 * a read-back, a kernel name in a second context, a device nobody used. */
START_TEST(detectors_fire_and_stay_silent)
{
    knobs();
    setenv("FAKEZE_DEVICES", "2", 1);
    start();
    static const uint8_t il[] = "IL bytes the fake accepts";
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = sizeof(il),
                           .pInputModule = il};
    ze_module_handle_t mil;
    gpuprof_region_begin("jit");
    ZE_OK(zeModuleCreate(ctx, dev, &md, &mil, NULL));
    gpuprof_region_end("jit");
    gpuprof_region_begin("aot");
    ze_module_handle_t mn = module(native_a, sizeof(native_a));
    gpuprof_region_end("aot");
    ze_kernel_handle_t k1 = kernel_in(mn, "k_a");
    ze_command_list_handle_t l = immediate(0, 0);
    enum { N = 4096 };
    char *h = calloc(1, N), *other = calloc(1, N);
    void *d = dev_mem(N);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = app_event(&pool);
    launch_here(l, k1, NULL);
    copy_here(l, h, d, N); /* read back */
    gpuprof_region_begin("again");
    copy_here(l, d, h, N); /* sent again */
    gpuprof_region_end("again");
    gpuprof_region_begin("fresh");
    copy_here(l, d, other, N);
    gpuprof_region_end("fresh");
    /* The same kernel name in a second context. */
    ze_context_handle_t c2;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ZE_OK(zeContextCreate(drv, &cd, &c2));
    ze_context_handle_t c1 = ctx;
    ctx = c2;
    ze_kernel_handle_t k2 =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l2 = immediate(0, 1);
    gpuprof_region_begin("second");
    launch_here(l2, k2, NULL);
    gpuprof_region_end("second");
    ctx = c1;
    ZE_OK(zeCommandListAppendBarrier(l, done, 0, NULL));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "detect.jit_single_device", 0, NULL, "jit"), 1);
    ck_assert_uint_eq(sum_at(p, "detect.jit_single_device", 0, NULL, "aot"), 0);
    ck_assert_uint_eq(sum_at(p, "detect.output_as_input", 0, NULL, "again"), 1);
    ck_assert_uint_eq(sum_at(p, "detect.output_as_input", 0, NULL, "fresh"), 0);
    ck_assert_uint_eq(
        sum_at(p, "detect.kernel_multi_context", 0, NULL, "second"), 1);
    ck_assert_uint_eq(sum_at(p, "detect.kernel_multi_context", 0, NULL, NULL),
                      1);
    ck_assert_uint_eq(
        sum_at(p, "detect.devices_unused", GPUPROF_OP_OTHER, NULL, NULL), 1);
    gpuprof__io_profile_free(p);
    free(h);
    free(other);
}
END_TEST

/* Regular lists on two queues linked by the program's event: the waiting
 * execute's kernel operation waits (STREAM_WAIT) for the signalling one's,
 * and a wait for that event names it (SYNC_EVENT). */
START_TEST(regular_list_event_deps)
{
    knobs();
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_module_handle_t m = module(native_a, sizeof(native_a));
    ze_kernel_handle_t ka = kernel_in(m, "k_a"), kb = kernel_in(m, "k_b");
    ze_event_pool_handle_t pool;
    ze_event_handle_t e1 = app_event(&pool);
    ze_command_list_handle_t l1 = regular(0), l2 = regular(0);
    launch_here(l1, ka, e1);
    ZE_OK(zeCommandListClose(l1));
    ZE_OK(zeCommandListAppendLaunchKernel(l2, kb, &groups, NULL, 1, &e1));
    ZE_OK(zeCommandListClose(l2));
    ze_command_queue_handle_t q0 = queue(0, 0), q1 = queue(0, 1);
    execute_here(q0, l1, NULL);
    execute_here(q1, l2, NULL);
    ZE_OK(zeEventHostSynchronize(e1, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = load_trace();
    uint64_t launch[2] = {0, 0}, waiter = 0, waited = 0, synced = 0;
    int nl = 0;
    for (uint32_t s = 0; s < t->dep_stream_count; s++)
        for (uint64_t i = 0; i < t->deps[s].count; i++) {
            const gpuprof__io_trace_rec *r = &t->deps[s].recs[i];
            uint32_t what = GPUPROF_IO_DEP_WHAT(r->context);
            if (what == 8 && nl < 2)
                launch[nl++] = r->corr;
            if (what == 7) {
                waiter = r->corr;
                waited = r->end_ns;
            }
            if (what == 3)
                synced = r->end_ns;
        }
    ck_assert_int_eq(nl, 2);
    ck_assert_uint_eq(waiter, launch[1]);
    ck_assert_uint_eq(waited, launch[0]);
    ck_assert_uint_eq(synced, launch[0]);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Paused: objects made meanwhile are still known, and work run meanwhile
 * is not counted. A regular list run while paused is timed right when it
 * runs again measured: its kernel waits for a gate the host opens later,
 * and a settling meanwhile must not take our event, still signalled by the
 * paused run, for the new run's (it is reset first). */
START_TEST(paused_then_measured)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=1000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_event_pool_handle_t pool, pool2;
    ze_event_handle_t gate = app_event(&pool), done = app_event(&pool2);
    ze_command_list_handle_t l = regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, ka, &groups, NULL, 1, &gate));
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    ze_command_list_handle_t imm = immediate(0, 1);
    ZE_OK(zeEventHostSignal(gate));
    execute_here(q, l, NULL);
    launch_here(imm, ka, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ZE_OK(zeEventHostReset(gate));
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    uint64_t t0 = gpuprof_be_now_ns();
    execute_here(q, l, NULL); /* held by the gate */
    launch_here(imm, ka, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX)); /* settles all */
    ZE_OK(zeEventHostSignal(gate));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 2);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", NULL), 2000000);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    /* The measured kernels ran after gpuprof_start (nothing stale). */
    gpuprof__io_trace *t = load_trace();
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        for (uint64_t j = 0; t->streams[i].gpu && j < t->streams[i].count;
             j++) {
            ck_assert_msg(t->streams[i].recs[j].start_ns >= t0,
                          "stream %u record %llu starts %llu, before %llu",
                          t->streams[i].id, (unsigned long long)j,
                          (unsigned long long)t->streams[i].recs[j].start_ns,
                          (unsigned long long)t0);
            n++;
        }
    ck_assert_uint_eq(n, 2);
    gpuprof__io_trace_free(t);
}
END_TEST

/* CPU time sampled while no kernel is in flight is GPU_IDLE_CAUSE; while
 * a long kernel is in flight (not yet seen complete), none is. */
double busy_cpu(uint64_t ns);
__attribute__((noinline)) double busy_cpu(uint64_t ns)
{
    struct timespec ts;
    double x = 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t end =
        (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ns;
    for (;;) {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        if ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec >= end)
            break;
    }
    return x;
}

START_TEST(gpu_idle_cause_only_while_no_kernel_runs)
{
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    knobs();
    setenv("FAKEZE_KERNELS", "k_long=10000000000", 1); /* 10 s */
    start();
    ze_kernel_handle_t k =
        kernel_in(module(native_a, sizeof(native_a)), "k_long");
    ze_command_list_handle_t l = immediate(0, 0);
    gpuprof_region_begin("cpu only");
    volatile double x = busy_cpu(200000000); /* 200 ms of CPU */
    gpuprof_region_end("cpu only");
    launch_here(l, k, NULL); /* drains the samples; in flight from now */
    gpuprof_region_begin("gpu busy");
    x = busy_cpu(100000000);
    gpuprof_region_end("gpu busy");
    (void)x;
    launch_here(l, k, NULL); /* drains again */
    gpuprof__io_profile *p = flush_and_load();
    const char *m = "blame.gpu_idle_cause";
    uint64_t idle = 0, busy = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        idle += under_region(p, i, "cpu only") ? rb_val(p, i, m) : 0;
        busy += under_region(p, i, "gpu busy") ? rb_val(p, i, m) : 0;
    }
    /* 2 ms samples of CPU time: 200 ms give about 100 of them. */
    ck_assert_uint_ge(idle, 120000000);
    ck_assert_uint_le(idle, 260000000);
    ck_assert_uint_eq(busy, 0);
    gpuprof__io_profile_free(p);
    /* The 10 s kernels are not waited for: finalize gives them 100 ms and
     * counts them dropped. */
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* A regular list run twice, measured: the second run waits for a gate the
 * host opens later, and a settling meanwhile must not read the first
 * run's timestamps again for it (our event is reset once read). */
START_TEST(list_run_again_is_not_read_stale)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=1000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_event_pool_handle_t pool, pool2;
    ze_event_handle_t gate = app_event(&pool), done = app_event(&pool2);
    ze_command_list_handle_t l = regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, ka, &groups, NULL, 1, &gate));
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    ze_command_list_handle_t imm = immediate(0, 1);
    ZE_OK(zeEventHostSignal(gate));
    execute_here(q, l, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ZE_OK(zeEventHostReset(gate));
    uint64_t t0 = gpuprof_be_now_ns();
    execute_here(q, l, NULL); /* held by the gate */
    launch_here(imm, ka, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX)); /* settles all */
    ZE_OK(zeEventHostSignal(gate));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 3);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    gpuprof__io_trace *t = load_trace();
    uint64_t after = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        for (uint64_t j = 0; t->streams[i].gpu && j < t->streams[i].count; j++)
            after += t->streams[i].recs[j].start_ns >= t0;
    ck_assert_uint_eq(after, 2); /* the second run and the immediate one */
    gpuprof__io_trace_free(t);
}
END_TEST

/* ---- a list run again before its last run was read --------------------- */
/* The GPU trace's records on engine ordinal.index against the driver's
 * kernels and copies there but the [skip_from, skip_to)th (unmeasured),
 * one to one in order: durations exact, start and end within 20 us of the
 * driver's account (a tick and the clocks' sampling). Returns how many
 * matched. */
static uint64_t match_first(const gpuprof__io_trace *t, const op *ops,
                            size_t nops, unsigned ordinal, unsigned index,
                            int64_t raw2mono, uint64_t skip_from,
                            uint64_t skip_to)
{
    const gpuprof__io_trace_stream *st = NULL;
    for (uint32_t i = 0; i < t->stream_count; i++)
        if (t->streams[i].gpu && t->streams[i].id == (ordinal << 8 | index))
            st = &t->streams[i];
    ck_assert_ptr_nonnull(st);
    uint64_t k = 0, seen = 0;
    for (size_t i = 0; i < nops; i++) {
        const op *o = &ops[i];
        if (o->ordinal != ordinal || o->index != index ||
            (strcmp(o->kind, "kernel") && strcmp(o->kind, "copy")))
            continue;
        if (seen++ >= skip_from && seen <= skip_to)
            continue;
        ck_assert_uint_lt(k, st->count);
        const gpuprof__io_trace_rec *r = &st->recs[k++];
        int64_t ws = (int64_t)o->host_start + raw2mono,
                we = (int64_t)o->host_end + raw2mono;
        ck_assert_uint_eq(r->end_ns - r->start_ns, (o->end - o->start) * 80);
        ck_assert_msg(llabs((int64_t)r->start_ns - ws) < 20000 &&
                          llabs((int64_t)r->end_ns - we) < 20000,
                      "op %llu: %llu..%llu, driver %lld..%lld",
                      (unsigned long long)k, (unsigned long long)r->start_ns,
                      (unsigned long long)r->end_ns, (long long)ws,
                      (long long)we);
    }
    ck_assert_uint_eq(k, st->count);
    return k;
}

/* All of them. */
static uint64_t match_engine(const gpuprof__io_trace *t, const op *ops,
                             size_t nops, unsigned ordinal, unsigned index,
                             int64_t raw2mono)
{
    return match_first(t, ops, nops, ordinal, index, raw2mono, UINT64_MAX,
                       UINT64_MAX);
}

/* Of the driver's ops: how many of `kind` (engine any), and their ticks. */
static size_t count_ops(const op *ops, size_t nops, const char *kind,
                        uint64_t *ticks)
{
    size_t c = 0;
    *ticks = 0;
    for (size_t i = 0; i < nops; i++)
        if (!strcmp(ops[i].kind, kind)) {
            c++;
            *ticks += ops[i].end - ops[i].start;
        }
    return c;
}

/* The common loop: one list (2 kernels and a copy) executed 50 times, then
 * one synchronize. Every run timed: 100 kernels and 50 copies, each as the
 * driver ran it; the harvests (a run takes 5 ms, so each execute finds the
 * one before unread) ran as timestamp queries. */
START_TEST(list_run_fifty_times_before_one_wait)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=2000000,k_b=3000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_module_handle_t m = module(native_a, sizeof(native_a));
    ze_kernel_handle_t ka = kernel_in(m, "k_a"), kb = kernel_in(m, "k_b");
    enum { N = 65536 };
    char *host = calloc(1, N);
    void *d = dev_mem(N);
    ze_command_list_handle_t l = regular(0);
    launch_here(l, ka, NULL);
    copy_here(l, d, host, N);
    launch_here(l, kb, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    gpuprof_region_begin("loop");
    for (int i = 0; i < 50; i++)
        execute_here(q, l, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    gpuprof_region_end("loop");
    int64_t raw2mono = raw_to_mono();
    gpuprof__io_profile *p = flush_and_load();
    static op ops[1000];
    size_t nops = read_ops(ops, 1000);
    uint64_t copy_ticks, kticks, tticks;
    ck_assert_uint_eq(count_ops(ops, nops, "kernel", &kticks), 100);
    ck_assert_uint_eq(count_ops(ops, nops, "copy", &copy_ticks), 50);
    /* a harvest wherever the run before was unread (all 49 unless the
     * host stalled for a whole run) */
    size_t harvests = count_ops(ops, nops, "timestamp", &tticks);
    ck_assert_uint_ge(harvests, 40);
    ck_assert_uint_le(harvests, 49);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", "loop"), 50);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_b", "loop"), 50);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", "loop"), 50 * 2000000);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_b", "loop"), 50 * 3000000);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", "loop") +
                          sum_at(p, "gpu.time", 0, "k_b", "loop"),
                      kticks * 80);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      50);
    ck_assert_uint_eq(sum_at(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      50 * N);
    ck_assert_uint_eq(sum_at(p, "gpu.time", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      copy_ticks * 80);
    all_called_from(p, GPUPROF_OP_KERNEL, "execute_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = load_trace();
    ck_assert_uint_eq(match_engine(t, ops, nops, 0, 0, raw2mono), 150);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Two lists alternated on two queues (two engines), each run 20 times
 * before the waits: every run of both timed, on its own engine. */
START_TEST(two_lists_alternate_on_two_queues)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=300000,k_b=100000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_module_handle_t m = module(native_a, sizeof(native_a));
    ze_kernel_handle_t ka = kernel_in(m, "k_a"), kb = kernel_in(m, "k_b");
    enum { N = 4096 };
    char *host = calloc(1, N);
    void *d = dev_mem(N);
    ze_command_list_handle_t la = regular(0), lb = regular(0);
    launch_here(la, ka, NULL);
    copy_here(la, host, d, N);
    ZE_OK(zeCommandListClose(la));
    launch_here(lb, kb, NULL);
    launch_here(lb, kb, NULL);
    ZE_OK(zeCommandListClose(lb));
    ze_command_queue_handle_t q0 = queue(0, 0), q1 = queue(0, 1);
    for (int i = 0; i < 20; i++) {
        execute_here(q0, la, NULL);
        execute_here(q1, lb, NULL);
    }
    ZE_OK(zeCommandQueueSynchronize(q0, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    int64_t raw2mono = raw_to_mono();
    gpuprof__io_profile *p = flush_and_load();
    static op ops[1000];
    size_t nops = read_ops(ops, 1000);
    uint64_t ticks;
    ck_assert_uint_eq(count_ops(ops, nops, "kernel", &ticks), 60);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 20);
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_b", NULL), 40);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", NULL), 20 * 300000);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_b", NULL), 40 * 100000);
    ck_assert_uint_eq(sum_at(p, "gpu.count", GPUPROF_OP_COPY_D2H, NULL, NULL),
                      20);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = load_trace();
    ck_assert_uint_eq(match_engine(t, ops, nops, 0, 0, raw2mono), 40);
    ck_assert_uint_eq(match_engine(t, ops, nops, 0, 1, raw2mono), 40);
    gpuprof__io_trace_free(t);
}
END_TEST

/* A list executed with a fence, then again twice while that fence is
 * still pending (runs of 40 ms); the fence waited for, then the queue. */
START_TEST(list_run_again_while_fence_pending)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=20000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = regular(0);
    launch_here(l, ka, NULL);
    launch_here(l, ka, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
    ze_fence_handle_t f;
    ZE_OK(zeFenceCreate(q, &fd, &f));
    execute_here(q, l, f);
    ck_assert_int_eq(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    execute_here(q, l, NULL);
    execute_here(q, l, NULL);
    ck_assert_int_eq(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    int64_t raw2mono = raw_to_mono();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 6);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", NULL), 6 * 20000000);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    static op ops[100];
    size_t nops = read_ops(ops, 100);
    gpuprof__io_trace *t = load_trace();
    ck_assert_uint_eq(match_engine(t, ops, nops, 0, 0, raw2mono), 6);
    gpuprof__io_trace_free(t);
}
END_TEST

/* A driver without zeCommandListAppendQueryKernelTimestamps: no harvest,
 * so the execute waits on the host for the list's unread run (counted in
 * gpu.tool_overhead_ns); every run still timed. */
START_TEST(no_harvest_waits_for_the_previous_run)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=1000000", 1);
    setenv("FAKEZE_NO_QUERY_TS", "1", 1);
    want_trace = 0;
    start();
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = regular(0);
    launch_here(l, ka, NULL);
    launch_here(l, ka, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    uint64_t t0 = gpuprof_be_now_ns();
    for (int i = 0; i < 5; i++)
        execute_here(q, l, NULL);
    uint64_t t1 = gpuprof_be_now_ns();
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    /* the host waited for 4 runs of 2 ms each */
    ck_assert_uint_ge(t1 - t0, 4 * 2000000 - 100000);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 10);
    ck_assert_uint_eq(sum_at(p, "gpu.time", 0, "k_a", NULL), 10 * 1000000);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_ge(rb_counter(p, "gpu.tool_overhead_ns"),
                      3 * 2000000 - 100000);
    gpuprof__io_profile_free(p);
    static op ops[100];
    size_t nops = read_ops(ops, 100);
    uint64_t ticks;
    ck_assert_uint_eq(count_ops(ops, nops, "timestamp", &ticks), 0);
}
END_TEST

/* Measuring stops in the middle of the loop: the runs measured are read
 * from harvests, never from the events the unmeasured runs signal later
 * (each measured kernel's times are the driver's for that run). */
START_TEST(list_loop_paused_midway)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=1000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = regular(0);
    launch_here(l, ka, NULL);
    launch_here(l, ka, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    for (int i = 0; i < 3; i++)
        execute_here(q, l, NULL);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    for (int i = 0; i < 3; i++)
        execute_here(q, l, NULL);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    int64_t raw2mono = raw_to_mono();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 6);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    static op ops[100];
    size_t nops = read_ops(ops, 100);
    uint64_t ticks;
    ck_assert_uint_eq(count_ops(ops, nops, "kernel", &ticks), 12);
    gpuprof__io_trace *t = load_trace();
    ck_assert_uint_eq(match_first(t, ops, nops, 0, 0, raw2mono, 6, 12), 6);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Measured, paused, measured again while the unmeasured runs still run:
 * the later measured runs never read the events the unmeasured ones
 * signal (a harvest resets them on the device first), even when the
 * program settles while those signals show. */
START_TEST(list_loop_measured_again_after_pause)
{
    knobs();
    setenv("FAKEZE_KERNELS", "k_a=1000000", 1);
    want_trace = 1;
    start();
    ck_assert_int_eq(gpuprof_output_path(prof_path, sizeof(prof_path)),
                     GPUPROF_OK);
    ze_kernel_handle_t ka =
        kernel_in(module(native_a, sizeof(native_a)), "k_a");
    ze_command_list_handle_t l = regular(0);
    launch_here(l, ka, NULL);
    launch_here(l, ka, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = queue(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t poke = app_event(&pool);
    uint64_t t0 = gpuprof_be_now_ns();
    for (int i = 0; i < 5; i++) { /* runs of 2 ms from t0 on */
        if (i == 2)
            ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
        if (i == 4)
            ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
        execute_here(q, l, NULL);
    }
    /* At 7 ms the events show the unmeasured runs' signals, not run 5's:
     * a query the program makes then settles what looks done. */
    uint64_t until = t0 + 7000000, now = gpuprof_be_now_ns();
    if (now < until)
        nanosleep(&(struct timespec){0, (long)(until - now)}, NULL);
    ZE_OK(zeEventHostSignal(poke));
    ZE_OK(zeEventQueryStatus(poke));
    execute_here(q, l, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    int64_t raw2mono = raw_to_mono();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(sum_at(p, "gpu.count", 0, "k_a", NULL), 8);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    static op ops[100];
    size_t nops = read_ops(ops, 100);
    gpuprof__io_trace *t = load_trace();
    /* runs 1, 2, 5, 6 measured: kernels 0-3 and 8-11 */
    ck_assert_uint_eq(match_first(t, ops, nops, 0, 0, raw2mono, 4, 8), 8);
    gpuprof__io_trace_free(t);
}
END_TEST

int main(int argc, char **argv)
{
    (void)argc;
    char self[PATH_MAX];
    if (!realpath(argv[0], self))
        return EXIT_FAILURE;
    snprintf(driver_path, sizeof(driver_path), "%s/libfakeze.so",
             dirname(self));
    const test_case cases[] = {
        {"immediate_list_exact", immediate_list_exact, 60},
        {"device_times_across_the_wrap", device_times_across_the_wrap, 60},
        {"regular_lists_on_two_queues", regular_lists_on_two_queues, 60},
        {"event_wait_blames_the_kernel", event_wait_blames_the_kernel, 60},
        {"binaries_saved_once", binaries_saved_once, 60},
        {"no_driver_is_unavailable", no_driver_is_unavailable, 60},
        {"failing_driver_is_unavailable", failing_driver_is_unavailable, 60},
        {"zeinit_before_gpuprof_is_said", zeinit_before_gpuprof_is_said, 60},
        {"threads_append_at_once", threads_append_at_once, 120},
        {"detectors_fire_and_stay_silent", detectors_fire_and_stay_silent, 60},
        {"regular_list_event_deps", regular_list_event_deps, 60},
        {"paused_then_measured", paused_then_measured, 60},
        {"list_run_again_is_not_read_stale", list_run_again_is_not_read_stale,
         60},
        {"gpu_idle_cause_only_while_no_kernel_runs",
         gpu_idle_cause_only_while_no_kernel_runs, 60},
        {"synchronous_list_blocks_in_the_append",
         synchronous_list_blocks_in_the_append, 60},
        {"list_run_fifty_times_before_one_wait",
         list_run_fifty_times_before_one_wait, 60},
        {"two_lists_alternate_on_two_queues", two_lists_alternate_on_two_queues,
         60},
        {"list_run_again_while_fence_pending",
         list_run_again_while_fence_pending, 60},
        {"no_harvest_waits_for_the_previous_run",
         no_harvest_waits_for_the_previous_run, 60},
        {"list_loop_paused_midway", list_loop_paused_midway, 60},
        {"list_loop_measured_again_after_pause",
         list_loop_measured_again_after_pause, 60},
    };
    return RUN_SUITE("levelzero", cases);
}
