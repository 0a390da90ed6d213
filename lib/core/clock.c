/*
 * clock.c - choosing the tick source and converting ticks to nanoseconds.
 *
 * The rate of the TSC is not known in advance. We keep the pair (tsc, ns)
 * taken at setup and fit the rate against a fresh pair at each conversion
 * batch: over a run of seconds the error is a few parts per million. Runs
 * shorter than a millisecond spin until one has passed, once, so that even a
 * tiny test gets a sane rate. See clock.h for the why.
 */
#include "core/clock.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if GP_HAVE_TSC
#include <cpuid.h>
#endif

int gpuprof__clock_mode = GP_CLOCK_MONOTONIC;
_Atomic uint64_t gpuprof__clock_fake_ns;

static uint64_t origin_ticks, origin_ns;
static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static double ns_per_tick = 1.0;

static bool tsc_invariant(void)
{
#if GP_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1u; /* "Invariant TSC" */
#else
    return false;
#endif
}

void gpuprof__clock_setup(int requested)
{
    int mode = GP_CLOCK_MONOTONIC;
    if (requested == GP_CLOCK_FAKE || gpuprof__clock_mode == GP_CLOCK_FAKE)
        mode = GP_CLOCK_FAKE; /* a test installed the fake clock first */
    else if (requested != GP_CLOCK_MONOTONIC && tsc_invariant())
        mode = GP_CLOCK_TSC;
    gpuprof__clock_mode = mode;
    origin_ticks = gp_ticks();
    origin_ns = mode == GP_CLOCK_FAKE ? origin_ticks : gp_mono_ns();
    ns_per_tick = 1.0;
}

/* Refits the TSC rate against CLOCK_MONOTONIC; returns it. */
static double fit_rate(void)
{
    uint64_t t1 = gp_ticks(), n1 = gp_mono_ns();
    while (n1 - origin_ns < 1000000u) { /* at least 1 ms of baseline */
        t1 = gp_ticks();
        n1 = gp_mono_ns();
    }
    if (t1 <= origin_ticks)
        return ns_per_tick;
    return (double)(n1 - origin_ns) / (double)(t1 - origin_ticks);
}

void gpuprof__clock_conv(gp_clock_conv *c)
{
    c->origin_ticks = origin_ticks;
    c->origin_ns = origin_ns;
    c->ns_per_tick = 1.0;
    if (gpuprof__clock_mode != GP_CLOCK_TSC)
        return;
    pthread_mutex_lock(&rate_lock);
    ns_per_tick = fit_rate();
    c->ns_per_tick = ns_per_tick;
    pthread_mutex_unlock(&rate_lock);
}

void gpuprof__clock_fake_set(uint64_t ns)
{
    gpuprof__clock_mode = GP_CLOCK_FAKE;
    gp_store_relaxed(&gpuprof__clock_fake_ns, ns);
}
