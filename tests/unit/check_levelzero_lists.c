/*
 * check_levelzero_lists.c - the Level Zero backend on regular command
 * lists, through the real loader and tracing layer and the fake driver of
 * tests/fakeze (as check_levelzero.c, whose setup it shares:
 * tests/support/ze_measure.h): work recorded at append and timed at each
 * execute, on several queues and engines; fences, queue and event waits and
 * their dependency notes; a list run again before its last run was read
 * (harvests), with and without the driver's timestamp queries; measuring
 * paused and resumed around the runs. Each case's device times are held
 * against the driver's own account (FAKEZE_TRACE).
 */
#define _GNU_SOURCE
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof_backend.h"
#include "support/readback.h"
#include "support/suite.h"
#include "support/ze_measure.h"

/* ---- cases ------------------------------------------------------------- */
/* A module of zm_native_a with the kernels k_a and k_b. */
static void kernels_ab(ze_kernel_handle_t *ka, ze_kernel_handle_t *kb)
{
    ze_module_handle_t m = zf_module(zm_native_a, sizeof(zm_native_a));
    *ka = zf_kernel_in(m, "k_a");
    *kb = zf_kernel_in(m, "k_b");
}

/* After gpuprof_finalize: the profile counts `count` runs of k_a, of
 * `each_ns` each (not checked when 0), and nothing dropped. */
static void expect_runs(uint64_t count, uint64_t each_ns)
{
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", NULL), count);
    if (each_ns)
        ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", NULL),
                          count * each_ns);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
}

/* Regular lists: recorded at append, device work at each execute, under
 * the execute's call path; two queues on two engines (two trace streams);
 * fence and queue waits; dependency notes. */
START_TEST(regular_lists_on_two_queues)
{
    zm_case("k_a=5000000,k_b=15000000", 1);
    ze_kernel_handle_t ka, kb;
    kernels_ab(&ka, &kb);
    enum { N = 65536 };
    char *host = calloc(1, N);
    void *d = zm_dev_mem(N);
    ze_command_list_handle_t l1 = zf_regular(0), l2 = zf_regular(0);
    launch_here(l1, ka, NULL);
    copy_here(l1, d, host, N);
    launch_here(l1, ka, NULL);
    ZE_OK(zeCommandListClose(l1));
    launch_here(l2, kb, NULL);
    ZE_OK(zeCommandListClose(l2));
    ze_command_queue_handle_t q0 = zf_queue(0, 0), q1 = zf_queue(0, 1);
    ze_fence_handle_t f = zm_fence(q0);
    gpuprof_region_begin("run");
    for (int i = 0; i < 3; i++) {
        execute_here(q0, l1, f);
        execute_here(q1, l2, NULL);
        ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
        ZE_OK(zeFenceReset(f));
        ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    }
    gpuprof_region_end("run");
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", "run"), 6);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_b", "run"), 3);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", "run"), 6 * 5000000);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_b", "run"), 3 * 15000000);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "run"),
                      3);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "run"),
                      3 * N);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_SYNC, NULL, "run"), 6);
    /* Each round waits for k_b (15 ms) less what the executes took after
     * it started: up to 5 ms a round allowed (TSan, a busy machine). */
    ck_assert_uint_ge(rb_sum(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, "run"),
                      3 * (15000000 - 5000000));
    zm_all_called_from(p, GPUPROF_OP_KERNEL, "execute_here");
    zm_all_called_from(p, GPUPROF_OP_COPY_H2D, "execute_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);

    gpuprof__io_trace *t = zm_load_trace();
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
    uint32_t n[9];
    zm_dep_counts(t, n);
    ck_assert_uint_eq(n[8], 3 * 3); /* LAUNCH: kernels, copy; kernel */
    ck_assert_uint_eq(n[2], 6);     /* SYNC_STREAM: fence, queue */
    gpuprof__io_trace_free(t);
}
END_TEST

/* Regular lists on two queues linked by the program's event: the waiting
 * execute's kernel operation waits (STREAM_WAIT) for the signalling one's,
 * and a wait for that event names it (SYNC_EVENT). */
START_TEST(regular_list_event_deps)
{
    zm_case(NULL, 1);
    ze_kernel_handle_t ka, kb;
    kernels_ab(&ka, &kb);
    ze_event_pool_handle_t pool;
    ze_event_handle_t e1 = zm_app_event(&pool);
    ze_command_list_handle_t l1 = zf_regular(0), l2 = zf_regular(0);
    launch_here(l1, ka, e1);
    ZE_OK(zeCommandListClose(l1));
    ZE_OK(zeCommandListAppendLaunchKernel(l2, kb, &zf_groups, NULL, 1, &e1));
    ZE_OK(zeCommandListClose(l2));
    ze_command_queue_handle_t q0 = zf_queue(0, 0), q1 = zf_queue(0, 1);
    execute_here(q0, l1, NULL);
    execute_here(q1, l2, NULL);
    ZE_OK(zeEventHostSynchronize(e1, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = zm_load_trace();
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

/* ---- a run held by a gate ------------------------------------------------ */
/* A regular list whose one launch of k waits for the program's `gate`. */
static ze_command_list_handle_t gated_list(ze_kernel_handle_t k,
                                           ze_event_handle_t gate)
{
    ze_command_list_handle_t l = zf_regular(0);
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &zf_groups, NULL, 1, &gate));
    ZE_OK(zeCommandListClose(l));
    return l;
}

/* l run on q, held by the gate; meanwhile k on the immediate list,
 * waited for through `done` (a settling of all); then the gate opened and
 * q waited for. */
static void run_held_by_gate(ze_command_queue_handle_t q,
                             ze_command_list_handle_t l, ze_event_handle_t gate,
                             ze_command_list_handle_t imm, ze_kernel_handle_t k,
                             ze_event_handle_t done)
{
    execute_here(q, l, NULL);
    launch_here(imm, k, done);
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    ZE_OK(zeEventHostSignal(gate));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
}

/* The trace's GPU records: how many, and (*from) how many start at t0 or
 * later. */
static uint64_t gpu_records(uint64_t t0, uint64_t *from)
{
    gpuprof__io_trace *t = zm_load_trace();
    uint64_t n = 0;
    *from = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        for (uint64_t j = 0; t->streams[i].gpu && j < t->streams[i].count;
             j++, n++)
            *from += t->streams[i].recs[j].start_ns >= t0;
    gpuprof__io_trace_free(t);
    return n;
}

/* Paused: objects made meanwhile are still known, and work run meanwhile
 * is not counted. A regular list run while paused is timed right when it
 * runs again measured: its kernel waits for a gate the host opens later,
 * and a settling meanwhile must not take our event, still signalled by the
 * paused run, for the new run's (it is reset first). */
START_TEST(paused_then_measured)
{
    zm_case("k_a=1000000", 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_event_pool_handle_t pool, pool2;
    ze_event_handle_t gate = zm_app_event(&pool), done = zm_app_event(&pool2);
    ze_command_list_handle_t l = gated_list(ka, gate);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ze_command_list_handle_t imm = zf_immediate(0, 1);
    ZE_OK(zeEventHostSignal(gate));
    execute_here(q, l, NULL);
    launch_here(imm, ka, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ZE_OK(zeEventHostReset(gate));
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    uint64_t t0 = gpuprof_be_now_ns();
    run_held_by_gate(q, l, gate, imm, ka, done);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    expect_runs(2, 1000000);
    /* The measured kernels ran after gpuprof_start (nothing stale). */
    uint64_t from_t0;
    ck_assert_uint_eq(gpu_records(t0, &from_t0), 2);
    ck_assert_uint_eq(from_t0, 2);
}
END_TEST

/* A regular list run twice, measured: the second run waits for a gate the
 * host opens later, and a settling meanwhile must not read the first
 * run's timestamps again for it (our event is reset once read). */
START_TEST(list_run_again_is_not_read_stale)
{
    zm_case("k_a=1000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_event_pool_handle_t pool, pool2;
    ze_event_handle_t gate = zm_app_event(&pool), done = zm_app_event(&pool2);
    ze_command_list_handle_t l = gated_list(ka, gate);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ze_command_list_handle_t imm = zf_immediate(0, 1);
    ZE_OK(zeEventHostSignal(gate));
    execute_here(q, l, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ZE_OK(zeEventHostReset(gate));
    uint64_t t0 = gpuprof_be_now_ns();
    run_held_by_gate(q, l, gate, imm, ka, done);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    expect_runs(3, 0);
    uint64_t after;
    ck_assert_uint_eq(gpu_records(t0, &after), 3);
    ck_assert_uint_eq(after, 2); /* the second run and the immediate one */
}
END_TEST

/* ---- a list run again before its last run was read --------------------- */
/* The common loop: one list (2 kernels and a copy) executed 50 times, then
 * one synchronize. Every run timed: 100 kernels and 50 copies, each as the
 * driver ran it; the harvests (a run takes 5 ms, so each execute finds the
 * one before unread) ran as timestamp queries. */
START_TEST(list_run_fifty_times_before_one_wait)
{
    zm_case("k_a=2000000,k_b=3000000", 1);
    ze_kernel_handle_t ka, kb;
    kernels_ab(&ka, &kb);
    enum { N = 65536 };
    char *host = calloc(1, N);
    void *d = zm_dev_mem(N);
    ze_command_list_handle_t l = zf_regular(0);
    launch_here(l, ka, NULL);
    copy_here(l, d, host, N);
    launch_here(l, kb, NULL);
    ZE_OK(zeCommandListClose(l));
    ze_command_queue_handle_t q = zf_queue(0, 0);
    gpuprof_region_begin("loop");
    for (int i = 0; i < 50; i++)
        execute_here(q, l, NULL);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    gpuprof_region_end("loop");
    int64_t raw2mono = zf_raw_to_mono();
    gpuprof__io_profile *p = rb_flush_and_load();
    static zf_op ops[1000];
    size_t nops = zf_read_ops(ops, 1000);
    uint64_t copy_ticks, kticks, tticks;
    ck_assert_uint_eq(zm_count_ops(ops, nops, "kernel", &kticks), 100);
    ck_assert_uint_eq(zm_count_ops(ops, nops, "copy", &copy_ticks), 50);
    /* a harvest wherever the run before was unread (all 49 unless the
     * host stalled for a whole run) */
    size_t harvests = zm_count_ops(ops, nops, "timestamp", &tticks);
    ck_assert_uint_ge(harvests, 40);
    ck_assert_uint_le(harvests, 49);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", "loop"), 50);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_b", "loop"), 50);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", "loop"), 50 * 2000000);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_b", "loop"), 50 * 3000000);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", "loop") +
                          rb_sum(p, "gpu.time", 0, "k_b", "loop"),
                      kticks * 80);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      50);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      50 * N);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", GPUPROF_OP_COPY_H2D, NULL, "loop"),
                      copy_ticks * 80);
    zm_all_called_from(p, GPUPROF_OP_KERNEL, "execute_here");
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    zm_expect_engine(ops, nops, 0, 0, raw2mono, 150);
}
END_TEST

/* Two lists alternated on two queues (two engines), each run 20 times
 * before the waits: every run of both timed, on its own engine. */
START_TEST(two_lists_alternate_on_two_queues)
{
    zm_case("k_a=300000,k_b=100000", 1);
    ze_kernel_handle_t ka, kb;
    kernels_ab(&ka, &kb);
    enum { N = 4096 };
    char *host = calloc(1, N);
    void *d = zm_dev_mem(N);
    ze_command_list_handle_t la = zf_regular(0), lb = zf_regular(0);
    launch_here(la, ka, NULL);
    copy_here(la, host, d, N);
    ZE_OK(zeCommandListClose(la));
    launch_here(lb, kb, NULL);
    launch_here(lb, kb, NULL);
    ZE_OK(zeCommandListClose(lb));
    ze_command_queue_handle_t q0 = zf_queue(0, 0), q1 = zf_queue(0, 1);
    for (int i = 0; i < 20; i++) {
        execute_here(q0, la, NULL);
        execute_here(q1, lb, NULL);
    }
    ZE_OK(zeCommandQueueSynchronize(q0, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q1, UINT64_MAX));
    int64_t raw2mono = zf_raw_to_mono();
    gpuprof__io_profile *p = rb_flush_and_load();
    static zf_op ops[1000];
    size_t nops = zf_read_ops(ops, 1000);
    uint64_t ticks;
    ck_assert_uint_eq(zm_count_ops(ops, nops, "kernel", &ticks), 60);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", NULL), 20);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_b", NULL), 40);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", NULL), 20 * 300000);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_b", NULL), 40 * 100000);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_D2H, NULL, NULL),
                      20);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    gpuprof__io_profile_free(p);
    free(host);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    zm_expect_engine(ops, nops, 0, 0, raw2mono, 40);
    zm_expect_engine(ops, nops, 0, 1, raw2mono, 40);
}
END_TEST

/* A list executed with a fence, then again twice while that fence is
 * still pending (runs of 40 ms); the fence waited for, then the queue. */
START_TEST(list_run_again_while_fence_pending)
{
    zm_case("k_a=20000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zm_list_of(ka, 2);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ze_fence_handle_t f = zm_fence(q);
    execute_here(q, l, f);
    ck_assert_int_eq(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    execute_here(q, l, NULL);
    execute_here(q, l, NULL);
    ck_assert_int_eq(zeFenceQueryStatus(f), ZE_RESULT_NOT_READY);
    ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    static zf_op ops[100];
    int64_t raw2mono;
    size_t nops = zm_finish_and_read(ops, 100, &raw2mono);
    expect_runs(6, 20000000);
    zm_expect_engine(ops, nops, 0, 0, raw2mono, 6);
}
END_TEST

/* A driver without zeCommandListAppendQueryKernelTimestamps: no harvest,
 * so the execute waits on the host for the list's unread run (counted in
 * gpu.tool_overhead_ns); every run still timed. */
START_TEST(no_harvest_waits_for_the_previous_run)
{
    setenv("FAKEZE_NO_QUERY_TS", "1", 1);
    zm_case("k_a=1000000", 0);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zm_list_of(ka, 2);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    uint64_t t0 = gpuprof_be_now_ns();
    for (int i = 0; i < 5; i++)
        execute_here(q, l, NULL);
    uint64_t t1 = gpuprof_be_now_ns();
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    /* the host waited for 4 runs of 2 ms each */
    ck_assert_uint_ge(t1 - t0, 4 * 2000000 - 100000);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_a", NULL), 10);
    ck_assert_uint_eq(rb_sum(p, "gpu.time", 0, "k_a", NULL), 10 * 1000000);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_ge(rb_counter(p, "gpu.tool_overhead_ns"),
                      3 * 2000000 - 100000);
    gpuprof__io_profile_free(p);
    static zf_op ops[100];
    size_t nops = zf_read_ops(ops, 100);
    uint64_t ticks;
    ck_assert_uint_eq(zm_count_ops(ops, nops, "timestamp", &ticks), 0);
}
END_TEST

/* Measuring stops in the middle of the loop: the runs measured are read
 * from harvests, never from the events the unmeasured runs signal later
 * (each measured kernel's times are the driver's for that run). */
START_TEST(list_loop_paused_midway)
{
    zm_case("k_a=1000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zm_list_of(ka, 2);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    for (int i = 0; i < 3; i++)
        execute_here(q, l, NULL);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    for (int i = 0; i < 3; i++)
        execute_here(q, l, NULL);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    static zf_op ops[100];
    int64_t raw2mono;
    size_t nops = zm_finish_and_read(ops, 100, &raw2mono);
    expect_runs(6, 0);
    uint64_t ticks;
    ck_assert_uint_eq(zm_count_ops(ops, nops, "kernel", &ticks), 12);
    gpuprof__io_trace *t = zm_load_trace();
    ck_assert_uint_eq(zm_match_first(t, ops, nops, 0, 0, raw2mono, 6, 12), 6);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Measured, paused, measured again while the unmeasured runs still run:
 * the later measured runs never read the events the unmeasured ones
 * signal (a harvest resets them on the device first), even when the
 * program settles while those signals show. */
START_TEST(list_loop_measured_again_after_pause)
{
    zm_case("k_a=1000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zm_list_of(ka, 2);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t poke = zm_app_event(&pool);
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
    static zf_op ops[100];
    int64_t raw2mono;
    size_t nops = zm_finish_and_read(ops, 100, &raw2mono);
    expect_runs(8, 0);
    gpuprof__io_trace *t = zm_load_trace();
    /* runs 1, 2, 5, 6 measured: kernels 0-3 and 8-11 */
    ck_assert_uint_eq(zm_match_first(t, ops, nops, 0, 0, raw2mono, 4, 8), 8);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Measuring resumes between two unmeasured runs queued back to back: at
 * the measured run's execute the first one's signals show while the
 * second is still to signal the same events, so a reset on the host then
 * would let the measured run read the second's times once it shows (a
 * query the program makes 7 ms into run 4 settles what looks done). Each
 * measured kernel's times are the driver's for that run (runs 1, 2 and 5;
 * runs of 10 ms from t0 on, the resume 3 ms into run 4). */
START_TEST(list_resumed_between_two_unmeasured_runs)
{
    zm_case("k_a=5000000", 1);
    ze_kernel_handle_t ka = zm_kernel_a("k_a");
    ze_command_list_handle_t l = zm_list_of(ka, 2);
    ze_command_queue_handle_t q = zf_queue(0, 0);
    ze_event_pool_handle_t pool;
    ze_event_handle_t poke = zm_app_event(&pool);
    uint64_t t0 = gpuprof_be_now_ns();
    for (int i = 0; i < 4; i++) {
        if (i == 2)
            ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
        execute_here(q, l, NULL);
    }
    uint64_t until = t0 + 33000000, now = gpuprof_be_now_ns();
    if (now < until)
        nanosleep(&(struct timespec){0, (long)(until - now)}, NULL);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    execute_here(q, l, NULL);
    until = t0 + 37000000, now = gpuprof_be_now_ns();
    if (now < until)
        nanosleep(&(struct timespec){0, (long)(until - now)}, NULL);
    ZE_OK(zeEventHostSignal(poke));
    ZE_OK(zeEventQueryStatus(poke));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    static zf_op ops[100];
    int64_t raw2mono;
    size_t nops = zm_finish_and_read(ops, 100, &raw2mono);
    expect_runs(6, 5000000);
    gpuprof__io_trace *t = zm_load_trace();
    ck_assert_uint_eq(zm_match_first(t, ops, nops, 0, 0, raw2mono, 4, 8), 6);
    gpuprof__io_trace_free(t);
}
END_TEST

int main(int argc, char **argv)
{
    (void)argc;
    if (!zf_find_driver(argv[0]))
        return EXIT_FAILURE;
    const test_case cases[] = {
        {"regular_lists_on_two_queues", regular_lists_on_two_queues, 60},
        {"regular_list_event_deps", regular_list_event_deps, 60},
        {"paused_then_measured", paused_then_measured, 60},
        {"list_run_again_is_not_read_stale", list_run_again_is_not_read_stale,
         60},
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
        {"list_resumed_between_two_unmeasured_runs",
         list_resumed_between_two_unmeasured_runs, 60},
    };
    return RUN_SUITE("levelzero_lists", cases);
}
