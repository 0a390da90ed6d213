/*
 * bench.h - what the benchmarks share: a monotonic clock and the thread's
 * CPU clock in seconds, and the median of repeated runs (machines are
 * shared and noisy: medians, never a single time).
 */
#ifndef GPUPROF_BENCH_H
#define GPUPROF_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The calling thread's CPU time in seconds: what a hook costs the thread
 * that makes the call, whatever other threads do on the other core. */
static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v and returns its median. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp);
    return v[n / 2];
}

#endif
