/*
 * cpath_prog.c - programs on the simulated GPU (realtime mode: the host
 * really waits for the virtual device) whose wait states, GPU idleness and
 * critical path are computed by hand, for tests/scripts/cpath.sh. White-box:
 * the sim backend's test API (lib/backends/sim/sim.h). MS = 1 ms of device
 * time (CPATH_MS=N: N ms, so a loaded machine's scheduling delays weigh
 * less); the host's own work is a busy loop of the given length.
 *
 *   cpath_prog basic [F]   one thread, streams 0 and 1: kA (20 MS / F) on
 *                          0, kB (5 MS) on 1; sync 1 (waits ~5: BlameKernel,
 *                          kB); region "cpu" busy 10; sync 0 (waits until
 *                          kA ends: ~5 when F = 1: BlameKernel, kA); sync 0
 *                          again (nothing left: BlameSync). Path: kA then
 *                          the last syncs, ~20; with F = 2 (kA 10 MS): kB,
 *                          "cpu", ~15.
 *   cpath_prog events      kE1 (10) on 0, event e1 on 0; stream 1 waits for
 *                          e1, kE2 (5) on 1 (StreamWait ~10, kE1); event e2
 *                          on 1, polled every 1 MS until done (EventQuery,
 *                          kE2); stream 0 polled once done (no wait); kE3
 *                          (4) on 0, polled until done (StreamQuery, kE3);
 *                          event-synchronize e2 late (BlameSync).
 *   cpath_prog null        stream 0 is the legacy default stream: kX (10)
 *                          on 1, kN (2) on 0 waits for it (NullStream, kX),
 *                          kY (3) on 2 waits for kN (NullStream, kN); a
 *                          blocking copy (4) on 2 after kY (BlameKernel).
 *   cpath_prog threads     thread "t1": region "gpu_side", kT (10) on 0,
 *                          sync 0; thread "t2": region "cpu_side" busy 30.
 *                          The GPU is idle from ~10 to ~30 while only t2
 *                          runs: ~20 idleness blamed on "cpu_side"; the
 *                          path is t2's work, ~30.
 *   cpath_prog join [F]    host threads (built as cpath_host_prog, with
 *                          lib/host's pthread functions linked in, for
 *                          tests/scripts/host-deps.sh): main "setup" busy
 *                          1, starts "g" (region "gpu_side": kJ (10 MS /
 *                          F) on 0, sync 0) and "c" (region "cpu_side"
 *                          busy 4), joins g (WaitAtJoin ~10 with F = 1:
 *                          g was waiting for kJ, which is blamed), joins c
 *                          (done long before: no wait), "post" busy 2. The
 *                          path: setup, g's launch, kJ, the sync, the
 *                          join, post: ~13; with F = 2: ~8.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/sim/sim.h"

static uint64_t MS = 1000000ull; /* CPATH_MS */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void busy(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull),
                          (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static int basic(double f)
{
    gpuprof__sim_kernel(0, "kA", (uint64_t)(20 * MS / f));
    gpuprof__sim_kernel(1, "kB", 5 * MS);
    gpuprof__sim_stream_sync(1);
    gpuprof_region_begin("cpu");
    busy(10 * MS);
    gpuprof_region_end("cpu");
    gpuprof__sim_stream_sync(0);
    gpuprof__sim_stream_sync(0);
    return 0;
}

static int events(void)
{
    uint32_t e1, e2;
    bool done = false;
    gpuprof__sim_kernel(0, "kE1", 10 * MS);
    gpuprof__sim_event_record(0, &e1);
    gpuprof__sim_stream_wait_event(1, e1);
    gpuprof__sim_kernel(1, "kE2", 5 * MS);
    gpuprof__sim_event_record(1, &e2);
    while (gpuprof__sim_event_query(e2, &done) == GPUPROF_OK && !done)
        sleep_ns(MS);
    gpuprof__sim_stream_query(0, &done);
    gpuprof__sim_kernel(0, "kE3", 4 * MS);
    done = false;
    while (gpuprof__sim_stream_query(0, &done) == GPUPROF_OK && !done)
        sleep_ns(MS);
    gpuprof__sim_event_sync(e2);
    return done ? 0 : 1;
}

static int null_stream(void)
{
    gpuprof__sim_kernel(1, "kX", 10 * MS);
    gpuprof__sim_kernel(0, "kN", 2 * MS);
    gpuprof__sim_kernel(2, "kY", 3 * MS);
    gpuprof__sim_copy_sync(2, GPUPROF_OP_COPY_H2D, 1u << 20, 4 * MS);
    gpuprof__sim_sync();
    return 0;
}

static void *t1(void *arg)
{
    (void)arg;
    gpuprof_thread_set_name("t1");
    gpuprof_region_begin("gpu_side");
    gpuprof__sim_kernel(0, "kT", 10 * MS);
    gpuprof__sim_stream_sync(0);
    gpuprof_region_end("gpu_side");
    return NULL;
}

static void *t2(void *arg)
{
    (void)arg;
    gpuprof_thread_set_name("t2");
    gpuprof_region_begin("cpu_side");
    busy(30 * MS);
    gpuprof_region_end("cpu_side");
    return NULL;
}

static double kj_f = 1.0;

static void *g_side(void *arg)
{
    (void)arg;
    gpuprof_thread_set_name("g");
    gpuprof_region_begin("gpu_side");
    gpuprof__sim_kernel(0, "kJ", (uint64_t)(10 * MS / kj_f));
    gpuprof__sim_stream_sync(0);
    gpuprof_region_end("gpu_side");
    return NULL;
}

static void *c_side(void *arg)
{
    (void)arg;
    gpuprof_thread_set_name("c");
    gpuprof_region_begin("cpu_side");
    busy(4 * MS);
    gpuprof_region_end("cpu_side");
    return NULL;
}

static int join(double f)
{
    kj_f = f;
    gpuprof_region_begin("setup");
    busy(MS);
    gpuprof_region_end("setup");
    pthread_t g, c;
    pthread_create(&g, NULL, g_side, NULL);
    pthread_create(&c, NULL, c_side, NULL);
    pthread_join(g, NULL);
    pthread_join(c, NULL);
    gpuprof_region_begin("post");
    busy(2 * MS);
    gpuprof_region_end("post");
    return 0;
}

static int threads(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, t1, NULL);
    pthread_create(&b, NULL, t2, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (getenv("CPATH_MS") && atoi(getenv("CPATH_MS")) > 0)
        MS = 1000000ull * (uint64_t)atoi(getenv("CPATH_MS"));
    gp_sim_config cfg = {0};
    cfg.realtime = true;
    cfg.batch = 1;
    cfg.null_stream = !strcmp(argv[1], "null");
    gpuprof__sim_register(&cfg);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "cpath_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    int rc = 2;
    if (!strcmp(argv[1], "basic"))
        rc = basic(argc > 2 ? atof(argv[2]) : 1.0);
    else if (!strcmp(argv[1], "events"))
        rc = events();
    else if (!strcmp(argv[1], "null"))
        rc = null_stream();
    else if (!strcmp(argv[1], "threads"))
        rc = threads();
    else if (!strcmp(argv[1], "join"))
        rc = join(argc > 2 ? atof(argv[2]) : 1.0);
    gpuprof_status st = gpuprof_finalize();
    return st == GPUPROF_OK ? rc : 1;
}
