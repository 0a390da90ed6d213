/*
 * check_fakeze.c - the fake Level Zero driver (tests/fakeze) through the
 * real loader (libze_loader.so.1, linked here: this is a test, not the
 * library) and, where a case says so, the real tracing layer.
 *
 * Each case runs in its own process (Check's fork mode): it sets the
 * driver's knobs (tests/fakeze/README.md), then zeInit loads
 * libfakeze.so from beside this program through ZE_ENABLE_ALT_DRIVERS.
 * The driver's FAKEZE_TRACE file is the ground truth the cases compare the
 * API's answers with: exact ticks, durations, the 32-bit wrap, engine
 * overlap, and host waits that last until the scripted end.
 */
#include <check.h>
#include <inttypes.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/ze_api.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/suite.h"
#include "support/ze_fixture.h"

static uint64_t raw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The knobs (zf_knobs), the objects and the driver's trace: see
 * support/ze_fixture.h. A case sets its own knobs, then start(): zeInit,
 * then the one driver, its device and a context. */
static void start(void)
{
    ZE_OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    zf_open();
}

/* ---------------------------------------------------------- helpers -- */

/* A kernel of that name in a module of its own. */
static ze_kernel_handle_t kernel(const char *name)
{
    static const uint8_t native[] =
        "not SPIR-V: the fake driver keeps any bytes";
    return zf_kernel_in(zf_module(native, sizeof native), name);
}

static ze_event_pool_handle_t pool(ze_event_pool_flags_t flags, uint32_t count)
{
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = flags | ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = count};
    ze_event_pool_handle_t p;
    ZE_OK(zeEventPoolCreate(zf_ctx, &pd, 1, &zf_dev, &p));
    return p;
}

static ze_event_handle_t event(ze_event_pool_handle_t p, uint32_t index)
{
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                          .index = index};
    ze_event_handle_t e;
    ZE_OK(zeEventCreate(p, &ed, &e));
    return e;
}

static ze_kernel_timestamp_result_t kts(ze_event_handle_t e)
{
    ze_kernel_timestamp_result_t r;
    ZE_OK(zeEventQueryKernelTimestamp(e, &r));
    return r;
}

/* ------------------------------------------------------------ cases -- */

START_TEST(no_driver_is_uninitialized)
{
    unsetenv("ZE_ENABLE_ALT_DRIVERS");
    ck_assert_int_eq(zeInit(ZE_INIT_FLAG_GPU_ONLY),
                     ZE_RESULT_ERROR_UNINITIALIZED);
}
END_TEST

START_TEST(failing_init_leaves_no_driver)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_INIT_RESULT", "0x78000001", 1);
    /* The loader has no driver then. (Loader 1.8.12 unloads the driver but
     * keeps its table: a zeDriverGet now would jump into unmapped code.) */
    ck_assert_int_eq(zeInit(ZE_INIT_FLAG_GPU_ONLY),
                     ZE_RESULT_ERROR_UNINITIALIZED);
}
END_TEST

START_TEST(bad_knob_fails_init)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "vadd=100,oops", 1);
    /* The loader passes its only driver's answer on. */
    ck_assert_int_eq(zeInit(ZE_INIT_FLAG_GPU_ONLY),
                     ZE_RESULT_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(properties_follow_the_knobs)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_TIMER_HZ", "19200000", 1);
    setenv("FAKEZE_TS_VALID_BITS", "36", 1);
    setenv("FAKEZE_COMPUTE_ENGINES", "3", 1);
    setenv("FAKEZE_COPY_ENGINES", "2", 1);
    setenv("FAKEZE_DEVICES", "2", 1);
    start();
    uint32_t n = 0;
    ZE_OK(zeDeviceGet(zf_drv, &n, NULL));
    ck_assert_uint_eq(n, 2);
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ZE_OK(zeDeviceGetProperties(zf_dev, &p));
    ck_assert_int_eq(p.type, ZE_DEVICE_TYPE_GPU);
    ck_assert_uint_eq(p.timerResolution, 52); /* 52.083 ns, rounded */
    ck_assert_uint_eq(p.timestampValidBits, 36);
    ck_assert_uint_eq(p.kernelTimestampValidBits, 32);
    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
    ZE_OK(zeDeviceGetProperties(zf_dev, &p));
    ck_assert_uint_eq(p.timerResolution, 19200000); /* cycles per second */
    ze_command_queue_group_properties_t g[4];
    n = 4;
    ZE_OK(zeDeviceGetCommandQueueGroupProperties(zf_dev, &n, g));
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(g[0].numQueues, 3);
    ck_assert(g[0].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE);
    ck_assert_uint_eq(g[1].numQueues, 2);
    ck_assert_uint_eq(g[1].flags, ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY);
    /* No such engine: */
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = 1,
                                  .index = 2};
    ze_command_queue_handle_t q;
    ck_assert_int_eq(zeCommandQueueCreate(zf_ctx, zf_dev, &qd, &q),
                     ZE_RESULT_ERROR_INVALID_ARGUMENT);
    /* No images (but the query answers), and no image calls: a NULL table
     * entry, answered by the loader. */
    ze_device_image_properties_t ip = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES,
        .maxImageDims2D = 7};
    ZE_OK(zeDeviceGetImageProperties(zf_dev, &ip));
    ck_assert_uint_eq(ip.maxImageDims2D, 0);
    ze_image_desc_t id = {.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC};
    ze_image_handle_t img;
    ck_assert_int_eq(zeImageCreate(zf_ctx, zf_dev, &id, &img),
                     ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
}
END_TEST

/* With 1 GHz ticks the device clock is the host clock plus a constant:
 * S - h0, S = FAKEZE_TS_START. The mask is timestampValidBits. */
START_TEST(global_timestamps_are_host_plus_offset)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_TIMER_HZ", "1000000000", 1);
    setenv("FAKEZE_TS_START", "0x123400000000", 1);
    start();
    uint64_t h1, d1, h2, d2;
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h1, &d1));
    usleep(20000);
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h2, &d2));
    ck_assert_uint_eq(d2 - d1, h2 - h1);
    ck_assert_uint_ge(h2 - h1, 20000000);
    ck_assert_uint_ge(d1, 0x123400000000ull);
    ck_assert_uint_lt(d1 - 0x123400000000ull,
                      10000000000ull); /* zeInit was < 10 s ago */
    /* The host clock is CLOCK_MONOTONIC_RAW: */
    uint64_t before = raw_now();
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h1, &d1));
    ck_assert_uint_ge(h1, before);
    ck_assert_uint_le(h1, raw_now());
}
END_TEST

START_TEST(global_timestamps_masked_to_valid_bits)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_TIMER_HZ", "1000000000", 1);
    setenv("FAKEZE_TS_START", "0x123400000000", 1);
    setenv("FAKEZE_TS_VALID_BITS", "36", 1);
    start();
    uint64_t h, d;
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h, &d));
    ck_assert_uint_eq(d >> 36, 0);
    ck_assert_uint_ge(d, 0x400000000ull); /* 0x1234_0000_0000 mod 2^36 */
}
END_TEST

/* One kernel on an immediate list: its scripted 1 ms is 12500 ticks at
 * 12.5 MHz; the kernel timestamps are the trace's ticks, masked to 32 bits,
 * the context ones 1000 ticks less; the host wait ends after host_end. */
START_TEST(immediate_kernel_exact_times)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "vadd=100000000,other=5", 1);
    start();
    ze_kernel_handle_t k = kernel("vadd");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 2);
    ze_event_handle_t e = event(p, 0);
    ze_command_list_handle_t l = zf_immediate(0, 0);
    uint64_t h1, d1, h2, d2;
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h1, &d1));
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &zf_groups, e, 0, NULL));
    ck_assert_int_eq(zeEventQueryStatus(e), ZE_RESULT_NOT_READY);
    ze_kernel_timestamp_result_t r;
    ck_assert_int_eq(zeEventQueryKernelTimestamp(e, &r), ZE_RESULT_NOT_READY);
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    uint64_t after = raw_now();
    ZE_OK(zeEventQueryStatus(e));
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h2, &d2));
    zf_op o[4];
    ck_assert_uint_eq(zf_read_ops(o, 4), 1);
    ck_assert_str_eq(o[0].kind, "kernel");
    ck_assert_str_eq(o[0].name, "vadd");
    ck_assert_uint_eq(o[0].ordinal, 0);
    ck_assert_uint_eq(o[0].end - o[0].start, 1250000);
    ck_assert_uint_eq(o[0].host_end - o[0].host_start, 100000000);
    ck_assert_uint_ge(after, o[0].host_end);
    ck_assert_uint_ge(o[0].start, d1);
    ck_assert_uint_le(o[0].end, d2);
    r = kts(e);
    ck_assert_uint_eq(r.global.kernelStart, o[0].start & 0xffffffffu);
    ck_assert_uint_eq(r.global.kernelEnd, o[0].end & 0xffffffffu);
    ck_assert_uint_eq(r.context.kernelStart, (o[0].start - 1000) & 0xffffffffu);
    ck_assert_uint_eq(r.context.kernelEnd, (o[0].end - 1000) & 0xffffffffu);
    /* The device clock maps to the host's: host_start from d1/h1. */
    int64_t mapped =
        (int64_t)(o[0].host_start - h1) - (int64_t)(o[0].start - d1) * 80;
    ck_assert_int_lt(mapped < 0 ? -mapped : mapped, 80);
}
END_TEST

/* FAKEZE_TS_START puts the 32-bit wrap 500 ms after zeInit; a 1 s kernel
 * launched at once spans it. (The default puts it at 200 ms.) */
START_TEST(kernel_timestamps_wrap_at_32_bits)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "long=1000000000", 1);
    setenv("FAKEZE_TS_START", "0x7ffa0a1f0",
           1); /* 0x7_0000_0000 + 2^32 - 6250000 */
    start();
    ze_kernel_handle_t k = kernel("long");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
    ze_event_handle_t e = event(p, 0);
    ze_command_list_handle_t l = zf_immediate(0, 0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &zf_groups, e, 0, NULL));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    zf_op o[2];
    ck_assert_uint_eq(zf_read_ops(o, 2), 1);
    const uint64_t wrap = 0x800000000ull; /* 0x7_0000_0000 + 2^32 */
    ck_assert_uint_lt(o[0].start, wrap);
    ck_assert_uint_gt(o[0].end, wrap);
    ze_kernel_timestamp_result_t r = kts(e);
    ck_assert_uint_lt(r.global.kernelEnd, r.global.kernelStart);
    ck_assert_uint_eq((r.global.kernelEnd - r.global.kernelStart) & 0xffffffffu,
                      12500000);
    ck_assert_uint_eq(r.global.kernelEnd, o[0].end - wrap);
    /* The 64-bit global timestamps do not wrap there. */
    uint64_t h, d;
    ZE_OK(zeDeviceGetGlobalTimestamps(zf_dev, &h, &d));
    ck_assert_uint_gt(d, wrap);
}
END_TEST

/* A regular list of kernel, copy, fill, kernel run twice through a queue
 * with a fence: back to back on the engine, bytes really moved, fence and
 * queue waits that time out before the end and succeed after it. */
START_TEST(regular_list_queue_and_fence)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "a=200000000,b=3000000", 1);
    setenv("FAKEZE_COPY_BPS", "1000000000", 1); /* 1 byte per ns */
    setenv("FAKEZE_COPY_NS", "800", 1);
    start();
    ze_kernel_handle_t ka = kernel("a"), kb = kernel("b");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 4);
    ze_event_handle_t ea = event(p, 0), ec = event(p, 1), eb = event(p, 2);
    size_t bytes = 1 << 20;
    void *host, *devmem;
    ze_host_mem_alloc_desc_t hd = {.stype =
                                       ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_device_mem_alloc_desc_t dd = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ZE_OK(zeMemAllocHost(zf_ctx, &hd, bytes, 64, &host));
    ZE_OK(zeMemAllocDevice(zf_ctx, &dd, bytes, 64, zf_dev, &devmem));
    memset(host, 0x5a, bytes);
    ze_command_list_handle_t l = zf_regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, ka, &zf_groups, ea, 0, NULL));
    ZE_OK(zeCommandListAppendMemoryCopy(l, devmem, host, bytes, ec, 0, NULL));
    uint32_t pattern = 0x01020304;
    ZE_OK(zeCommandListAppendMemoryFill(l, host, &pattern, 4, 4096, NULL, 0,
                                        NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l, kb, &zf_groups, eb, 0, NULL));
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = zf_queue(0, 1);
    ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
    ze_fence_handle_t f;
    ZE_OK(zeFenceCreate(q, &fd, &f));
    ck_assert_int_eq(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    uint64_t t0 = raw_now();
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    ck_assert_int_eq(((unsigned char *)devmem)[bytes - 1], 0x5a);
    ck_assert_int_eq(((unsigned char *)host)[4], 0x04);
    ck_assert_int_eq(zeFenceHostSynchronize(f, 1000000), ZE_RESULT_NOT_READY);
    ck_assert_int_eq(zeCommandQueueSynchronize(q, 0), ZE_RESULT_NOT_READY);
    ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
    ck_assert_uint_ge(raw_now() - t0,
                      200000000 + 1049376 + 800 + 4096 + 800 + 3000000 - 400);
    ZE_OK(zeFenceQueryStatus(f));
    ZE_OK(zeCommandQueueSynchronize(q, 0));
    ZE_OK(zeEventQueryStatus(eb));
    zf_op o[8];
    ck_assert_uint_eq(zf_read_ops(o, 8), 4);
    ck_assert_str_eq(o[1].kind, "copy");
    ck_assert_uint_eq(o[1].bytes, bytes);
    ck_assert_str_eq(o[1].src, "host");
    ck_assert_str_eq(o[1].dst, "device");
    ck_assert_str_eq(o[2].kind, "fill");
    ck_assert_uint_eq(o[1].end - o[1].start, (1048576 + 800 + 79) / 80);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(o[i].index, 1);
    for (int i = 1; i < 4; i++)
        ck_assert_uint_eq(o[i].start, o[i - 1].end);
    ck_assert_uint_eq(kts(ec).global.kernelStart, kts(ea).global.kernelEnd);
    ck_assert_uint_eq(kts(eb).global.kernelEnd - kts(eb).global.kernelStart,
                      37500);
    /* Again, after a reset of the fence and the events: later times. */
    ZE_OK(zeFenceReset(f));
    ZE_OK(zeEventHostReset(ea));
    ck_assert_int_eq(zeEventQueryStatus(ea), ZE_RESULT_NOT_READY);
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ZE_OK(zeFenceQueryStatus(f));
    ck_assert_uint_eq(zf_read_ops(o, 8), 8);
    ck_assert_uint_ge(o[4].start, o[3].end);
    ck_assert_uint_eq(o[7].end - o[7].start, 37500);
    /* Appending to a closed list, executing an open one: refused. */
    ck_assert_int_ne(zeCommandListAppendBarrier(l, NULL, 0, NULL),
                     ZE_RESULT_SUCCESS);
    ZE_OK(zeCommandListReset(l));
    ck_assert_int_ne(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL),
                     ZE_RESULT_SUCCESS);
    ZE_OK(zeMemFree(zf_ctx, host));
    ZE_OK(zeMemFree(zf_ctx, devmem));
}
END_TEST

/* Sleeps until the driver's host clock passes h. */
static void until_raw(uint64_t h)
{
    for (uint64_t now = raw_now(); now < h; now = raw_now())
        nanosleep(&(struct timespec){0, (long)(h - now)}, NULL);
}

/* A list run three times at once, a timestamp query and a device reset
 * between the first two runs: the query reads run 1 in the engine's order;
 * the host sees the event reset from its tick on, and each later run's
 * signal only from that run's end on (not the last one scheduled). */
START_TEST(host_sees_signals_at_their_ticks)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "a=20000000", 1);
    start();
    ze_kernel_handle_t ka = kernel("a");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP |
                                        ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                    2);
    ze_event_handle_t e = event(p, 0);
    ze_command_list_handle_t l = zf_regular(0), r = zf_regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, ka, &zf_groups, e, 0, NULL));
    ZE_OK(zeCommandListClose(l));
    ze_kernel_timestamp_result_t *mem;
    ze_host_mem_alloc_desc_t hd = {.stype =
                                       ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ZE_OK(zeMemAllocHost(zf_ctx, &hd, sizeof(*mem), 64, (void **)&mem));
    ZE_OK(zeCommandListAppendQueryKernelTimestamps(r, 1, &e, mem, NULL, NULL, 1,
                                                   &e));
    ZE_OK(zeCommandListAppendEventReset(r, e));
    ZE_OK(zeCommandListClose(r));
    ze_command_queue_handle_t q = zf_queue(0, 0);
    uint64_t t0 = raw_now();
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &r, NULL));
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    ck_assert_int_eq(zeEventQueryStatus(e), ZE_RESULT_NOT_READY);
    ck_assert_uint_lt(raw_now() - t0, 15000000); /* before run 1 ended */
    zf_op o[8];
    ck_assert_uint_eq(zf_read_ops(o, 8), 5); /* kernel, query, reset, 2 k */
    ck_assert_str_eq(o[1].kind, "timestamp");
    ck_assert_str_eq(o[2].kind, "reset");
    uint64_t m = 0xffffffffu;
    ck_assert_uint_eq(mem->global.kernelStart, o[0].start & m);
    ck_assert_uint_eq(mem->global.kernelEnd, o[0].end & m);
    until_raw(o[2].host_end + 5000000); /* reset, run 2 not ended */
    ck_assert_int_eq(zeEventQueryStatus(e), ZE_RESULT_NOT_READY);
    for (int k = 3; k < 5; k++) {
        until_raw(o[k].host_end + 1000000);
        ZE_OK(zeEventQueryStatus(e));
        ck_assert_uint_eq(kts(e).global.kernelStart, o[k].start & m);
        ck_assert_uint_eq(kts(e).global.kernelEnd, o[k].end & m);
    }
    ZE_OK(zeMemFree(zf_ctx, mem));
}
END_TEST

/* Engines 0.0 and 0.1 run in parallel; two queues on 0.0 share its one
 * timeline; the copy engine 1.0 is a third timeline. */
START_TEST(engines_are_independent_timelines)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "k=200000000", 1);
    setenv("FAKEZE_COPY_BPS", "1000000", 1); /* 4096 bytes: 4.096 ms */
    start();
    ze_kernel_handle_t k = kernel("k");
    ze_command_list_handle_t l00 = zf_immediate(0, 0);
    ze_command_list_handle_t l00b = zf_immediate(0, 0);
    ze_command_list_handle_t l01 = zf_immediate(0, 1);
    ze_command_list_handle_t l10 = zf_immediate(1, 0);
    static char a[4096], b[4096];
    ze_event_pool_handle_t p = pool(0, 4);
    ze_event_handle_t e[4] = {event(p, 0), event(p, 1), event(p, 2),
                              event(p, 3)};
    ZE_OK(zeCommandListAppendLaunchKernel(l00, k, &zf_groups, e[0], 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l00b, k, &zf_groups, e[1], 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l01, k, &zf_groups, e[2], 0, NULL));
    ZE_OK(zeCommandListAppendMemoryCopy(l10, a, b, sizeof a, e[3], 0, NULL));
    /* No kernels on a copy engine. */
    ck_assert_int_ne(
        zeCommandListAppendLaunchKernel(l10, k, &zf_groups, NULL, 0, NULL),
        ZE_RESULT_SUCCESS);
    for (int i = 0; i < 4; i++)
        ZE_OK(zeEventHostSynchronize(e[i], UINT64_MAX));
    zf_op o[8];
    ck_assert_uint_eq(zf_read_ops(o, 8), 4);
    ck_assert_uint_eq(o[1].start, o[0].end); /* same engine: after */
    ck_assert_uint_lt(o[2].start, o[0].end); /* other engine: beside */
    ck_assert_uint_lt(o[3].start, o[0].end);
    ck_assert_uint_eq(o[3].ordinal, 1);
    ck_assert_uint_eq(o[3].end - o[3].start, 4096 * 1000 / 80);
}
END_TEST

/* A kernel waiting on an event the host signals later starts then; one on
 * another engine waiting on a kernel's event starts at its end. */
START_TEST(waits_on_events)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "k=2000000", 1);
    start();
    ze_kernel_handle_t k = kernel("k");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 4);
    ze_event_handle_t host_ev = event(p, 0), e1 = event(p, 1), e2 = event(p, 2);
    ze_command_list_handle_t l0 = zf_immediate(0, 0);
    ze_command_list_handle_t l1 = zf_immediate(0, 1);
    ZE_OK(zeCommandListAppendWaitOnEvents(l0, 1, &host_ev));
    ZE_OK(zeCommandListAppendLaunchKernel(l0, k, &zf_groups, e1, 0, NULL));
    ZE_OK(zeCommandListAppendLaunchKernel(l1, k, &zf_groups, e2, 1, &e1));
    usleep(10000);
    ck_assert_int_eq(zeEventQueryStatus(e1), ZE_RESULT_NOT_READY);
    ck_assert_int_eq(zeEventHostSynchronize(e2, 1000000), ZE_RESULT_NOT_READY);
    uint64_t before = raw_now();
    ZE_OK(zeEventHostSignal(host_ev));
    ZE_OK(zeEventHostSynchronize(e2, UINT64_MAX));
    ck_assert_uint_ge(raw_now() - before, 4000000);
    zf_op o[4];
    ck_assert_uint_eq(zf_read_ops(o, 4), 3);
    ck_assert_str_eq(o[0].kind, "wait");
    ck_assert_uint_ge(o[0].host_start, before - 80);
    ck_assert_uint_eq(o[1].start, o[0].end);
    ck_assert_uint_eq(o[2].start, o[1].end);
    ck_assert_uint_eq(o[2].index, 1);
    ck_assert_uint_eq(kts(e2).global.kernelStart, kts(e1).global.kernelEnd);
    ze_kernel_timestamp_result_t r;
    ZE_OK(zeEventQueryKernelTimestamp(host_ev, &r));
    ck_assert_uint_eq(r.global.kernelStart, r.global.kernelEnd);
    /* An event of a pool without KERNEL_TIMESTAMP has no timestamps. */
    ze_event_handle_t plain = event(pool(0, 1), 0);
    ZE_OK(zeEventHostSignal(plain));
    ZE_OK(zeEventQueryStatus(plain));
    ck_assert_int_eq(zeEventQueryKernelTimestamp(plain, &r),
                     ZE_RESULT_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* A synchronous immediate list returns from the append after the kernel;
 * a barrier, signal and reset travel in order; global-timestamp writes and
 * kernel-timestamp queries land in memory. */
START_TEST(synchronous_list_and_commands)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNELS", "k=3000000", 1);
    start();
    ze_kernel_handle_t k = kernel("k");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 4);
    ze_event_handle_t e = event(p, 0), s = event(p, 1);
    ze_command_list_handle_t l =
        zf_immediate_mode(0, 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    uint64_t t0 = raw_now();
    ZE_OK(zeCommandListAppendLaunchCooperativeKernel(l, k, &zf_groups, e, 0,
                                                     NULL));
    ck_assert_uint_ge(raw_now() - t0, 3000000);
    ZE_OK(zeEventQueryStatus(e));
    uint64_t stamp = 0;
    ze_kernel_timestamp_result_t got[1];
    ZE_OK(zeCommandListAppendWriteGlobalTimestamp(l, &stamp, NULL, 0, NULL));
    ZE_OK(zeCommandListAppendQueryKernelTimestamps(l, 1, &e, got, NULL, NULL, 0,
                                                   NULL));
    ZE_OK(zeCommandListAppendBarrier(l, s, 0, NULL));
    ZE_OK(zeEventQueryStatus(s));
    ZE_OK(zeCommandListAppendEventReset(l, s));
    ck_assert_int_eq(zeEventQueryStatus(s), ZE_RESULT_NOT_READY);
    ZE_OK(zeCommandListAppendSignalEvent(l, s));
    ZE_OK(zeEventQueryStatus(s));
    ze_group_count_t g = {2, 1, 1};
    ZE_OK(zeCommandListAppendLaunchKernelIndirect(l, k, &g, NULL, 0, NULL));
    zf_op o[16];
    size_t n = zf_read_ops(o, 16);
    ck_assert_uint_eq(n, 7);
    ck_assert_str_eq(o[1].kind, "timestamp");
    ck_assert_uint_eq(stamp, o[1].start);
    ck_assert_uint_eq(got[0].global.kernelStart, kts(e).global.kernelStart);
    ck_assert_uint_eq(got[0].context.kernelEnd, kts(e).context.kernelEnd);
    ck_assert_str_eq(o[3].kind, "barrier");
    ck_assert_str_eq(o[4].kind, "reset");
    ck_assert_str_eq(o[5].kind, "signal");
    ck_assert_str_eq(o[6].kind, "kernel");
    ck_assert_uint_eq(o[6].end - o[6].start, 37500);
}
END_TEST

/* SPIR-V: the entry points are the kernels; the native binary is the
 * bytes given. Other bytes take any kernel name. */
START_TEST(modules_keep_their_bytes)
{
    zf_knobs("fakeze-ops");
    start();
    /* Header, OpEntryPoint Kernel %1 "vadd", OpEntryPoint Kernel %2 "scale". */
    const uint32_t spv[] = {0x07230203,      0x00010000, 0, 3,          0,
                            (5u << 16) | 15, 6,          1, 0x64646176, 0,
                            (5u << 16) | 15, 6,          2, 0x6c616373, 0x65};
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = sizeof spv,
                           .pInputModule = (const uint8_t *)spv};
    ze_module_handle_t m;
    ze_module_build_log_handle_t log;
    ZE_OK(zeModuleCreate(zf_ctx, zf_dev, &md, &m, &log));
    size_t size = 0;
    ZE_OK(zeModuleBuildLogGetString(log, &size, NULL));
    ZE_OK(zeModuleBuildLogDestroy(log));
    ZE_OK(zeModuleGetNativeBinary(m, &size, NULL));
    ck_assert_uint_eq(size, sizeof spv);
    uint8_t back[sizeof spv];
    ZE_OK(zeModuleGetNativeBinary(m, &size, back));
    ck_assert_int_eq(memcmp(back, spv, sizeof spv), 0);
    uint32_t n = 0;
    ZE_OK(zeModuleGetKernelNames(m, &n, NULL));
    ck_assert_uint_eq(n, 2);
    const char *names[2];
    ZE_OK(zeModuleGetKernelNames(m, &n, names));
    ck_assert_str_eq(names[0], "vadd");
    ck_assert_str_eq(names[1], "scale");
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = "scale"};
    ze_kernel_handle_t k;
    ZE_OK(zeKernelCreate(m, &kd, &k));
    char name[16];
    size = sizeof name;
    ZE_OK(zeKernelGetName(k, &size, name));
    ck_assert_str_eq(name, "scale");
    kd.pKernelName = "nope";
    ck_assert_int_eq(zeKernelCreate(m, &kd, &k),
                     ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    uint32_t gx, gy, gz;
    ZE_OK(zeKernelSuggestGroupSize(k, 1000, 1, 1, &gx, &gy, &gz));
    ck_assert_uint_eq(gx, 8);
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void *), &k));
}
END_TEST

START_TEST(memory_types)
{
    zf_knobs("fakeze-ops");
    start();
    void *h, *d, *s;
    ze_host_mem_alloc_desc_t hd = {.stype =
                                       ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_device_mem_alloc_desc_t dd = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ZE_OK(zeMemAllocHost(zf_ctx, &hd, 100, 0, &h));
    ZE_OK(zeMemAllocDevice(zf_ctx, &dd, 100, 256, zf_dev, &d));
    ZE_OK(zeMemAllocShared(zf_ctx, &dd, &hd, 100, 0, zf_dev, &s));
    ck_assert_uint_eq((uintptr_t)d % 256, 0);
    ze_memory_allocation_properties_t p = {
        .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ZE_OK(zeMemGetAllocProperties(zf_ctx, h, &p, NULL));
    ck_assert_int_eq(p.type, ZE_MEMORY_TYPE_HOST);
    ZE_OK(zeMemGetAllocProperties(zf_ctx, (char *)d + 50, &p, NULL));
    ck_assert_int_eq(p.type, ZE_MEMORY_TYPE_DEVICE);
    ZE_OK(zeMemGetAllocProperties(zf_ctx, s, &p, NULL));
    ck_assert_int_eq(p.type, ZE_MEMORY_TYPE_SHARED);
    int stack;
    ZE_OK(zeMemGetAllocProperties(zf_ctx, &stack, &p, NULL));
    ck_assert_int_eq(p.type, ZE_MEMORY_TYPE_UNKNOWN);
    void *base;
    size_t size;
    ZE_OK(zeMemGetAddressRange(zf_ctx, (char *)d + 99, &base, &size));
    ck_assert_ptr_eq(base, d);
    ck_assert_uint_eq(size, 100);
    ZE_OK(zeMemFree(zf_ctx, h));
    ZE_OK(zeMemFree(zf_ctx, d));
    ZE_OK(zeMemFree(zf_ctx, s));
    ck_assert_int_ne(zeMemFree(zf_ctx, h), ZE_RESULT_SUCCESS);
}
END_TEST

/* Two host threads, each with its own immediate list on its own engine,
 * submit at once: every launch is on the trace, and each engine's kernels
 * run back to back (the driver's one lock under TSan in make check). */
enum { THREAD_LAUNCHES = 40 };

static void *submitter(void *arg)
{
    uint32_t index = (uint32_t)(uintptr_t)arg;
    ze_kernel_handle_t k = kernel(index ? "t1" : "t0");
    ze_event_pool_handle_t p = pool(0, 1);
    ze_event_handle_t e = event(p, 0);
    ze_command_list_handle_t l =
        zf_immediate_mode(0, index, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    for (int i = 0; i < THREAD_LAUNCHES; i++)
        ZE_OK(zeCommandListAppendLaunchKernel(
            l, k, &zf_groups, i + 1 == THREAD_LAUNCHES ? e : NULL, 0, NULL));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    return NULL;
}

START_TEST(threads_submit_to_their_engines)
{
    zf_knobs("fakeze-ops");
    setenv("FAKEZE_KERNEL_NS", "20000", 1);
    start();
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, submitter, (void *)i), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    static zf_op o[2 * THREAD_LAUNCHES + 1];
    ck_assert_uint_eq(zf_read_ops(o, 2 * THREAD_LAUNCHES + 1),
                      2 * THREAD_LAUNCHES);
    uint64_t last_end[2] = {0, 0};
    unsigned count[2] = {0, 0};
    for (int i = 0; i < 2 * THREAD_LAUNCHES; i++) {
        unsigned e = o[i].index;
        ck_assert_uint_lt(e, 2);
        ck_assert_str_eq(o[i].name, e ? "t1" : "t0");
        ck_assert_uint_eq(o[i].end - o[i].start, 250);
        ck_assert_uint_ge(o[i].start, last_end[e]);
        last_end[e] = o[i].end;
        count[e]++;
    }
    ck_assert_uint_eq(count[0], THREAD_LAUNCHES);
    ck_assert_uint_eq(count[1], THREAD_LAUNCHES);
}
END_TEST

/* ------------------------------------------------------ tracing layer -- */

static int n_launch_pro, n_launch_epi, n_sync_epi, n_exec_pro;
static ze_result_t last_launch_result = (ze_result_t)-1;

static void launch_pro(ze_command_list_append_launch_kernel_params_t *params,
                       ze_result_t r, void *user, void **inst)
{
    ck_assert_ptr_eq(user, &n_launch_pro);
    n_launch_pro++;
    *inst = *params->phKernel;
}

static void launch_epi(ze_command_list_append_launch_kernel_params_t *params,
                       ze_result_t r, void *user, void **inst)
{
    ck_assert_ptr_eq(*inst, *params->phKernel);
    n_launch_epi++;
    last_launch_result = r;
}

static void sync_epi(ze_event_host_synchronize_params_t *params, ze_result_t r,
                     void *user, void **inst)
{
    n_sync_epi++;
}

static void exec_pro(ze_command_queue_execute_command_lists_params_t *params,
                     ze_result_t r, void *user, void **inst)
{
    n_exec_pro += (int)*params->pnumCommandLists;
}

static zel_tracer_handle_t tracer(void)
{
    zel_tracer_desc_t td = {.stype = ZEL_STRUCTURE_TYPE_TRACER_DESC,
                            .pUserData = &n_launch_pro};
    zel_tracer_handle_t t;
    ZE_OK(zelTracerCreate(&td, &t));
    zel_core_callbacks_t pro = {0}, epi = {0};
    pro.CommandList.pfnAppendLaunchKernelCb = launch_pro;
    pro.CommandQueue.pfnExecuteCommandListsCb = exec_pro;
    epi.CommandList.pfnAppendLaunchKernelCb = launch_epi;
    epi.Event.pfnHostSynchronizeCb = sync_epi;
    ZE_OK(zelTracerSetPrologues(t, &pro));
    ZE_OK(zelTracerSetEpilogues(t, &epi));
    ZE_OK(zelTracerSetEnabled(t, 1));
    return t;
}

static void traced_work(void)
{
    ze_kernel_handle_t k = kernel("k");
    ze_event_pool_handle_t p = pool(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
    ze_event_handle_t e = event(p, 0);
    ze_command_list_handle_t il = zf_immediate(0, 0);
    for (int i = 0; i < 3; i++)
        ZE_OK(
            zeCommandListAppendLaunchKernel(il, k, &zf_groups, NULL, 0, NULL));
    ze_command_list_handle_t l = zf_regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &zf_groups, e, 0, NULL));
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    zf_op o[8];
    ck_assert_uint_eq(zf_read_ops(o, 8), 4);
    ck_assert_uint_eq(kts(e).global.kernelEnd, o[3].end & 0xffffffffu);
}

START_TEST(tracing_layer_sees_the_calls)
{
    zf_knobs("fakeze-ops");
    setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
    start();
    zel_tracer_handle_t t = tracer();
    traced_work();
    ck_assert_int_eq(n_launch_pro, 4);
    ck_assert_int_eq(n_launch_epi, 4);
    ck_assert_int_eq(last_launch_result, ZE_RESULT_SUCCESS);
    ck_assert_int_eq(n_exec_pro, 1);
    ck_assert_int_eq(n_sync_epi, 1);
    ZE_OK(zelTracerSetEnabled(t, 0));
    ZE_OK(zelTracerDestroy(t));
}
END_TEST

/* Without ZE_ENABLE_TRACING_LAYER the same work runs, and no tracer can
 * be made. */
START_TEST(no_tracing_layer_no_tracer)
{
    zf_knobs("fakeze-ops");
    unsetenv("ZE_ENABLE_TRACING_LAYER");
    start();
    zel_tracer_desc_t td = {.stype = ZEL_STRUCTURE_TYPE_TRACER_DESC};
    zel_tracer_handle_t t;
    ck_assert_int_eq(zelTracerCreate(&td, &t), ZE_RESULT_ERROR_UNINITIALIZED);
    traced_work();
    ck_assert_int_eq(n_launch_pro, 0);
}
END_TEST

int main(void)
{
    if (!zf_find_driver("/proc/self/exe"))
        return EXIT_FAILURE;
    unsetenv("ZE_ENABLE_TRACING_LAYER");
    const test_case cases[] = {
        {"no_driver", no_driver_is_uninitialized, 30},
        {"failing_init", failing_init_leaves_no_driver, 30},
        {"bad_knob", bad_knob_fails_init, 30},
        {"properties", properties_follow_the_knobs, 30},
        {"global_timestamps", global_timestamps_are_host_plus_offset, 30},
        {"global_timestamps_masked", global_timestamps_masked_to_valid_bits,
         30},
        {"immediate_exact", immediate_kernel_exact_times, 30},
        {"wrap", kernel_timestamps_wrap_at_32_bits, 30},
        {"regular_queue_fence", regular_list_queue_and_fence, 30},
        {"host_sees_signals_at_their_ticks", host_sees_signals_at_their_ticks,
         30},
        {"engines", engines_are_independent_timelines, 30},
        {"waits", waits_on_events, 30},
        {"synchronous_and_commands", synchronous_list_and_commands, 30},
        {"modules", modules_keep_their_bytes, 30},
        {"memory", memory_types, 30},
        {"threads", threads_submit_to_their_engines, 30},
        {"tracing_layer", tracing_layer_sees_the_calls, 30},
        {"no_tracing_layer", no_tracing_layer_no_tracer, 30},
    };
    return RUN_SUITE("fakeze", cases);
}
