/*
 * work.h - what the host-thread test programs (host_prog.c, omp_prog.c)
 * share: the unit U (1 ms; HOST_MS=N: N ms) and "work" of some units in a
 * named region, slept rather than spun, so that threads do not compete for
 * the CPUs of a loaded machine (the trace sees a region either way). With
 * GP_LINKED the programs are linked with -lgpuprof and name their regions;
 * without, they call nothing of ours (`gpuprof run`).
 */
#ifndef GPUPROF_TEST_RUN_WORK_H
#define GPUPROF_TEST_RUN_WORK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#ifdef GP_LINKED
#include <gpuprof.h>
#define BEGIN(n) gpuprof_region_begin(n)
#define END(n) gpuprof_region_end(n)
#define NAME(n) gpuprof_thread_set_name(n)
#else
#define BEGIN(n) ((void)0)
#define END(n) ((void)0)
#define NAME(n) ((void)0)
#endif

static uint64_t U = 1000000ull;

static inline void set_unit(void)
{
    const char *ms = getenv("HOST_MS");
    if (ms && atof(ms) > 0)
        U = (uint64_t)(atof(ms) * 1e6);
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps until CLOCK_MONOTONIC `end` (ns). */
static inline void sleep_until(uint64_t end)
{
    for (uint64_t t = now_ns(); t < end; t = now_ns()) {
        struct timespec ts = {(time_t)((end - t) / 1000000000u),
                              (long)((end - t) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

/* `units` U of "work" in region `name`. */
static inline void work(const char *name, double units)
{
    BEGIN(name);
    sleep_until(now_ns() + (uint64_t)(units * (double)U));
    END(name);
}

#endif
