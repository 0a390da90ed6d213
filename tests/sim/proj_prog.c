/*
 * proj_prog.c - the projection experiment's programs on the realtime
 * simulated GPU (tests/bench/projection.sh): a loop whose kernel "work"
 * lasts W units, with host work and other device work around it, in four
 * shapes. The experiment traces a run at W, projects `kernel:work=2` and
 * compares the projected change with real runs at W/2. U = 1 ms (PROJ_MS=N:
 * N ms); host work is slept (a loaded machine delays a sleeping thread
 * less than a spinning one), N iterations (PROJ_ITERS, default 8).
 *
 *   proj_prog a W   one thread, stream 0: host 2 U, "work" W U, sync.
 *   proj_prog b W   one thread, two streams linked by events: "work" W U
 *                   on 0 and an event after it; "fixed" 3 U on 1, which
 *                   then waits for the event; "post" 1 U on 1; host 1 U;
 *                   sync 1.
 *   proj_prog c W   two threads, one stream each, joined: "gpu" host 1 U,
 *                   "work" W U on 0, sync 0; "other" host 2 U, "fixed"
 *                   2 U on 1, sync 1 (each N times).
 *   proj_prog d W   an OpenMP parallel region of 2 threads per iteration
 *                   (built with clang -fopenmp; else it says so and exits
 *                   3): thread 0 "work" W U on 0, sync 0; thread 1 host
 *                   1 U, "fixed" 2 U on 1, sync 1; then the main thread's
 *                   host 1 U.
 *
 * W may be fractional (W/2). Prints "elapsed_ns T": from before the first
 * launch to after the last wait. White-box: the sim backend's test API
 * (lib/backends/sim/sim.h); built with lib/host's pthread functions (and
 * OMPT) linked in, so joins and barriers are in the trace.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/sim/sim.h"
#include "../run/work.h"

static uint64_t UNIT = 1000000ull; /* PROJ_MS */
static int N = 8;                /* PROJ_ITERS */
static double W = 4;

/* Host work: `units` U slept (work.h). */
static void host(double units)
{
    sleep_until(now_ns() + (uint64_t)(units * (double)UNIT));
}

static uint64_t units(double u) { return (uint64_t)(u * (double)UNIT); }

static void case_a(void)
{
    for (int i = 0; i < N; i++) {
        host(2);
        gpuprof__sim_kernel(0, "work", units(W));
        gpuprof__sim_stream_sync(0);
    }
}

static void case_b(void)
{
    for (int i = 0; i < N; i++) {
        uint32_t ev;
        gpuprof__sim_kernel(0, "work", units(W));
        gpuprof__sim_event_record(0, &ev);
        gpuprof__sim_kernel(1, "fixed", units(3));
        gpuprof__sim_stream_wait_event(1, ev);
        gpuprof__sim_kernel(1, "post", units(1));
        host(1);
        gpuprof__sim_stream_sync(1);
    }
}

static void *gpu_side(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++) {
        host(1);
        gpuprof__sim_kernel(0, "work", units(W));
        gpuprof__sim_stream_sync(0);
    }
    return NULL;
}

static void *other_side(void *arg)
{
    (void)arg;
    for (int i = 0; i < N; i++) {
        host(2);
        gpuprof__sim_kernel(1, "fixed", units(2));
        gpuprof__sim_stream_sync(1);
    }
    return NULL;
}

static int case_c(void)
{
    pthread_t g, o;
    if (pthread_create(&g, NULL, gpu_side, NULL) ||
        pthread_create(&o, NULL, other_side, NULL))
        return 1;
    pthread_join(g, NULL);
    pthread_join(o, NULL);
    return 0;
}

static int case_d(void)
{
#ifdef _OPENMP
    for (int i = 0; i < N; i++) {
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                gpuprof__sim_kernel(0, "work", units(W));
                gpuprof__sim_stream_sync(0);
            } else {
                host(1);
                gpuprof__sim_kernel(1, "fixed", units(2));
                gpuprof__sim_stream_sync(1);
            }
        }
        host(1);
    }
    return 0;
#else
    fprintf(stderr, "proj_prog: case d needs OpenMP (built without)\n");
    return 3;
#endif
}

int main(int argc, char **argv)
{
    if (argc < 3 || strlen(argv[1]) != 1 || !strchr("abcd", argv[1][0]) ||
        !(atof(argv[2]) > 0)) {
        fprintf(stderr, "usage: proj_prog a|b|c|d W\n");
        return 2;
    }
    const char *e = getenv("PROJ_MS");
    if (e && atof(e) > 0)
        UNIT = (uint64_t)(atof(e) * 1e6);
    if ((e = getenv("PROJ_ITERS")) && atoi(e) > 0)
        N = atoi(e);
    W = atof(argv[2]);
    gp_sim_config cfg = {0};
    cfg.realtime = true;
    cfg.batch = 1;
    gpuprof__sim_register(&cfg);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "proj_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    int rc = 0;
    uint64_t t0 = now_ns();
    switch (argv[1][0]) {
    case 'a': case_a(); break;
    case 'b': case_b(); break;
    case 'c': rc = case_c(); break;
    default: rc = case_d(); break;
    }
    uint64_t t1 = now_ns();
    if (!rc)
        printf("elapsed_ns %llu\n", (unsigned long long)(t1 - t0));
    gpuprof_status st = gpuprof_finalize();
    return st == GPUPROF_OK ? rc : 1;
}
