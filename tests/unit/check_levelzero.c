/*
 * check_levelzero.c - the Level Zero backend end to end on immediate
 * lists: the real Debian loader (linked here, as programs do) and its real
 * tracing layer, and the fake driver of tests/fakeze
 * (ZE_ENABLE_ALT_DRIVERS), whose kernels take scripted times on per-engine
 * timelines and stamp events with 32-bit wrapping kernel timestamps. Each
 * case runs in its own process (fork mode): gpuprof_init first (it enables
 * the tracing layer and calls zeInit), then the program's Level Zero calls,
 * then the profile (and trace) read back: exact counts, bytes, kinds,
 * kernel names and binaries, device times against the driver's ground
 * truth (FAKEZE_TRACE), call paths, blame, detectors; a missing driver or a
 * zeInit before gpuprof_init said clearly, the program unchanged. Regular
 * lists, their executes and harvests are check_levelzero_lists.c's; the
 * setup both share is tests/support/ze_measure.h.
 */
#define _GNU_SOURCE
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof_backend.h"
#include "support/busy.h"
#include "support/readback.h"
#include "support/suite.h"
#include "support/ze_measure.h"

/* ---- cases ------------------------------------------------------------- */
/* Immediate list: kernels (our event each), copies both ways, a fill and a
 * barrier; one event of the program's (a pool without timestamps) waited
 * for. Exact counts, bytes, kinds, names, durations; the call paths end at
 * the program's functions; the wait is CPU_IDLE. */
START_TEST(immediate_list_exact)
{
    /* Kernels long enough that the hooks' own time around the wait (slow
     * under TSan on a busy machine) is a small part of it. */
    zm_case("k_a=10000000,k_b=400000", 0);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_kernel_handle_t kb =
        zf_kernel_in(zf_module(zm_native_b, sizeof(zm_native_b)), "k_b");
    ze_command_list_handle_t l = zf_immediate(0, 0);
    enum { N = 1 << 20 };
    char *host = malloc(N);
    memset(host, 1, N);
    void *d = zm_dev_mem(N);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
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
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", "imm"), 3);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_b", "imm"), 1);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", "imm"), 3 * 10000000);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_b", "imm"), 400000);
    ck_assert_uint_eq(rb_sum(p, "gpu.work_items", 0, "k_a", "imm"), 3 * 4 * 64);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      1);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      N);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_D2H, NULL, "imm"),
                      1);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_D2H, NULL, "imm"),
                      N / 2);
    /* 1 MiB at the fake's 10 GB/s: 104858 ns, in whole 80 ns ticks */
    ck_assert_uint_eq(rb_sum(p, "gpu.time", GPUPROF_OP_COPY_H2D, NULL, "imm"),
                      (104858 + 79) / 80 * 80);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_MEMSET, NULL, "imm"),
                      1);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_MEMSET, NULL, "imm"),
                      4096);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_OTHER, NULL, "imm"), 1);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_SYNC, NULL, "imm"), 1);
    /* The wait is CPU_IDLE: the call's time less our hooks' work. How much
     * of the call the hooks took depends on the machine's load and the
     * sanitizer (TSan: 246 of 312 us once), so only the bounds are exact:
     * some idle, never more than the call. */
    uint64_t idle = rb_sum(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, "imm");
    ck_assert_uint_le(idle, w1 - w0);
    ck_assert_uint_gt(idle, 0);
    /* The device, as the driver describes it: 1 slice of 4 subslices of 8
     * EUs of 8 threads of SIMD 8; work-groups up to 1024, 64 KiB of SLM. */
    ck_assert_uint_eq(rb_device(p, "levelzero", 0, "sm_count"), 4);
    ck_assert_uint_eq(rb_device(p, "levelzero", 0, "warp_size"), 8);
    ck_assert_uint_eq(rb_device(p, "levelzero", 0, "max_threads_per_sm"),
                      8 * 8 * 8);
    ck_assert_uint_eq(rb_device(p, "levelzero", 0, "max_threads_per_block"),
                      1024);
    ck_assert_uint_eq(rb_device(p, "levelzero", 0, "shared_bytes_per_block"),
                      65536);
    uint64_t name = rb_device(p, "levelzero", 0, "name");
    ck_assert_uint_ne(name, UINT64_MAX);
    ck_assert_str_eq(gpuprof__io_str(p, (uint32_t)name), "fakeze GPU 0");
    zm_all_called_from(p, GPUPROF_OP_KERNEL, "launch_here");
    zm_all_called_from(p, GPUPROF_OP_COPY_H2D, "copy_here");
    zm_all_called_from(p, GPUPROF_OP_COPY_D2H, "copy_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    /* Device times: each kernel's start and end within a tick of the
     * driver's ground truth, on the process clock. */
    zf_op ops[32];
    size_t nops = zf_read_ops(ops, 32);
    ck_assert_uint_eq(nops, 8);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Kernels whose kernel timestamps wrap (the device timer's low 32 bits
 * pass 2^32 400 ms after zeInit): launched in groups, waited for, until the
 * device clock is past the wrap, whatever the machine's speed. Each
 * kernel's start and end on the process clock within a tick (80 ns) and
 * the clocks' sampling of the driver's own account; durations exact. */
START_TEST(device_times_across_the_wrap)
{
    /* 0x700000000 + 2^32 - 5000000 ticks: the wrap 400 ms after zeInit */
    setenv("FAKEZE_TS_START", "0x7FFB3B4C0", 1);
    zm_case("k_a=5000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zf_immediate(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
    int launched = 0;
    for (uint64_t host = 0, ticks = 0;
         ticks < 0x800000000ull + 62500 && launched < 1000;) {
        for (int i = 0; i < 4; i++, launched++)
            launch_here(l, ka, i == 3 ? done : NULL);
        ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
        ZE_OK(zeEventHostReset(done));
        ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &host, &ticks));
    }
    static zf_op ops[1100];
    int64_t raw2mono;
    size_t nops = zm_finish_and_read(ops, 1100, &raw2mono);
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
    gpuprof__io_trace *t = zm_load_trace();
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

/* A kernel waited for through the program's event: the wait is CPU_IDLE
 * and CPU_IDLE_CAUSE of that kernel; the event wait names the kernel's
 * operation (SYNC_EVENT). */
START_TEST(event_wait_blames_the_kernel)
{
    zm_case("k_long=30000000", 1);
    ze_kernel_handle_t k = zm_kernel_a("k_long");
    ze_command_list_handle_t l = zf_immediate(0, 1);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
    launch_here(l, k, done);
    uint64_t w0 = gpuprof_be_now_ns();
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    uint64_t w1 = gpuprof_be_now_ns();
    gpuprof__io_profile *p = rb_flush_and_load();
    uint64_t idle = rb_sum(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, NULL);
    uint64_t cause = rb_sum(p, "blame.cpu_idle_cause", 0, "k_long", NULL);
    /* How much of the 30 ms kernel is left when the wait begins depends on
     * the machine's load and the sanitizer (ASan: 24.6 ms once): the wait
     * is idle, never more than the call, and all of it the kernel's. */
    ck_assert_uint_gt(idle, 0);
    ck_assert_uint_le(idle, w1 - w0);
    ck_assert_uint_gt(cause, 0);
    ck_assert_uint_le(cause, idle);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = zm_load_trace();
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
    zm_case(NULL, 0);
    ze_kernel_handle_t k1 = zm_kernel_a("k_a");
    ze_kernel_handle_t k2 = zm_kernel_a("k_a");
    ze_kernel_handle_t k3 =
        zf_kernel_in(zf_module(zm_native_b, sizeof(zm_native_b)), "k_b");
    ze_command_list_handle_t l = zf_immediate(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
    launch_here(l, k1, NULL);
    launch_here(l, k2, NULL);
    launch_here(l, k3, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    gpuprof__io_profile *p = rb_flush_and_load();
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
    ck_assert_uint_eq(p->modules[ma].size, sizeof(zm_native_a));
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", zm_outdir,
             gpuprof__io_str(p, p->modules[ma].path));
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    uint8_t got[sizeof(zm_native_a) + 1];
    ck_assert_uint_eq(fread(got, 1, sizeof(got), f), sizeof(zm_native_a));
    fclose(f);
    ck_assert_int_eq(memcmp(got, zm_native_a, sizeof(zm_native_a)), 0);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_BUILD, NULL, NULL), 3);
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
    ck_assert_int_eq(zm_start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "no Level Zero driver"), "%s", why);
    ck_assert_int_ne(zeInit(0), ZE_RESULT_SUCCESS);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* A driver whose zeInit fails: said with the result. */
START_TEST(failing_driver_is_unavailable)
{
    zf_knobs("l0-ops");
    setenv("FAKEZE_INIT_RESULT", "0x78000001", 1);
    char why[300];
    ck_assert_int_eq(zm_start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "zeInit: 0x78000001"), "%s", why);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* The program initialized Level Zero before gpuprof_init: the tracing
 * layer cannot be loaded any more; the reason says what to do, and the
 * program's calls go on working. */
START_TEST(zeinit_before_gpuprof_is_said)
{
    zf_knobs("l0-ops");
    unsetenv("ZE_ENABLE_TRACING_LAYER");
    ZE_OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    char why[400];
    ck_assert_int_eq(zm_start_gpuprof(why, sizeof(why)), GPUPROF_E_UNAVAILABLE);
    ck_assert_msg(strstr(why, "zeInit ran before gpuprof_init"), "%s", why);
    ck_assert_msg(strstr(why, "ZE_ENABLE_TRACING_LAYER=1"), "%s", why);
    zf_open();
    ze_kernel_handle_t k = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zf_immediate(0, 0);
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
    ze_command_list_handle_t l = zf_immediate(0, (uint32_t)(id % 2));
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
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
    zm_case("k_t=20000", 0);
    thread_kernel = zm_kernel_a("k_t");
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, appender, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_t", NULL),
                      THREADS * PER_THREAD);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_t", NULL),
                      THREADS * PER_THREAD * 20000);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_SYNC, NULL, NULL),
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
    zm_case("k_s=10000000", 0);
    ze_kernel_handle_t k = zm_kernel_a("k_s");
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreateImmediate(zf_ctx, zf_dev, &qd, &l));
    uint64_t t0 = gpuprof_be_now_ns();
    launch_here(l, k, NULL);
    launch_here(l, k, NULL);
    uint64_t t1 = gpuprof_be_now_ns();
    ck_assert_uint_ge(t1 - t0, 20000000);
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_s", NULL), 2);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_s", NULL), 20000000);
    uint64_t idle = rb_sum(p, "blame.cpu_idle", GPUPROF_OP_KERNEL, NULL, NULL);
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
    setenv("FAKEZE_DEVICES", "2", 1);
    zm_case(NULL, 0);
    static const uint8_t il[] = "IL bytes the fake accepts";
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = sizeof(il),
                           .pInputModule = il};
    ze_module_handle_t mil;
    gpuprof_region_begin("jit");
    ZE_OK(zeModuleCreate(zf_ctx, zf_dev, &md, &mil, NULL));
    gpuprof_region_end("jit");
    gpuprof_region_begin("aot");
    ze_module_handle_t mn = zf_module(zm_native_a, sizeof(zm_native_a));
    gpuprof_region_end("aot");
    ze_kernel_handle_t k1 = zf_kernel_in(mn, "k_a");
    ze_command_list_handle_t l = zf_immediate(0, 0);
    enum { N = 4096 };
    char *h = calloc(1, N), *other = calloc(1, N);
    void *d = zm_dev_mem(N);
    ze_event_pool_handle_t pool;
    ze_event_handle_t done = zm_app_event(&pool);
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
    ZE_OK(zeContextCreate(zf_drv, &cd, &c2));
    ze_context_handle_t c1 = zf_ctx;
    zf_ctx = c2;
    ze_kernel_handle_t k2 = zm_kernel_a("k_a");
    ze_command_list_handle_t l2 = zf_immediate(0, 1);
    gpuprof_region_begin("second");
    launch_here(l2, k2, NULL);
    gpuprof_region_end("second");
    zf_ctx = c1;
    ZE_OK(zeCommandListAppendBarrier(l, done, 0, NULL));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_sum(p, "detect.jit_single_device", 0, NULL, "jit"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.jit_single_device", 0, NULL, "aot"), 0);
    ck_assert_uint_eq(rb_sum(p, "detect.output_as_input", 0, NULL, "again"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.output_as_input", 0, NULL, "fresh"), 0);
    ck_assert_uint_eq(
        rb_sum(p, "detect.kernel_multi_context", 0, NULL, "second"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.kernel_multi_context", 0, NULL, NULL),
                      1);
    ck_assert_uint_eq(
        rb_sum(p, "detect.devices_unused", GPUPROF_OP_OTHER, NULL, NULL), 1);
    gpuprof__io_profile_free(p);
    free(h);
    free(other);
}
END_TEST

/* CPU time sampled while no kernel is in flight is GPU_IDLE_CAUSE; while
 * a long kernel is in flight (not yet seen complete), none is. */
START_TEST(gpu_idle_cause_only_while_no_kernel_runs)
{
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    zm_case("k_long=10000000000", 0); /* 10 s */
    ze_kernel_handle_t k = zm_kernel_a("k_long");
    ze_command_list_handle_t l = zf_immediate(0, 0);
    gpuprof_region_begin("cpu only");
    volatile double x = busy_cpu(200000000); /* 200 ms of CPU */
    gpuprof_region_end("cpu only");
    launch_here(l, k, NULL); /* drains the samples; in flight from now */
    gpuprof_region_begin("gpu busy");
    x = busy_cpu(100000000);
    gpuprof_region_end("gpu busy");
    (void)x;
    launch_here(l, k, NULL); /* drains again */
    gpuprof__io_profile *p = rb_flush_and_load();
    const char *m = "blame.gpu_idle_cause";
    uint64_t idle = 0, busy = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        idle += rb_under_region(p, i, "cpu only") ? rb_val(p, i, m) : 0;
        busy += rb_under_region(p, i, "gpu busy") ? rb_val(p, i, m) : 0;
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

int main(int argc, char **argv)
{
    (void)argc;
    if (!zf_find_driver(argv[0]))
        return EXIT_FAILURE;
    const test_case cases[] = {
        {"immediate_list_exact", immediate_list_exact, 60},
        {"device_times_across_the_wrap", device_times_across_the_wrap, 60},
        {"event_wait_blames_the_kernel", event_wait_blames_the_kernel, 60},
        {"binaries_saved_once", binaries_saved_once, 60},
        {"no_driver_is_unavailable", no_driver_is_unavailable, 60},
        {"failing_driver_is_unavailable", failing_driver_is_unavailable, 60},
        {"zeinit_before_gpuprof_is_said", zeinit_before_gpuprof_is_said, 60},
        {"threads_append_at_once", threads_append_at_once, 120},
        {"synchronous_list_blocks_in_the_append",
         synchronous_list_blocks_in_the_append, 60},
        {"detectors_fire_and_stay_silent", detectors_fire_and_stay_silent, 60},
        {"gpu_idle_cause_only_while_no_kernel_runs",
         gpu_idle_cause_only_while_no_kernel_runs, 60},
    };
    return RUN_SUITE("levelzero", cases);
}
