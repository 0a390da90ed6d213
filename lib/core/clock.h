/*
 * clock.h - the process clock: cheap ticks on the hot path, nanoseconds in
 * files.
 *
 * Hot paths read "ticks": the invariant TSC on x86-64 when the CPU says it is
 * constant and non-stop (about 10 ns here against 26 ns for clock_gettime on
 * kvm-clock), CLOCK_MONOTONIC nanoseconds otherwise. Metrics accumulate in
 * ticks and are converted when a profile is written, with a rate fitted
 * between the start of measurement and the moment of writing, so long runs
 * convert with a tiny error. Every timestamp written to a file is
 * CLOCK_MONOTONIC nanoseconds (doc/FORMATS.md). Tests can install a fake
 * clock whose ticks are nanoseconds they set by hand.
 */
#ifndef GPUPROF_CLOCK_H
#define GPUPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "core/atomics.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define GP_HAVE_TSC 1
#else
#define GP_HAVE_TSC 0
#endif

enum gp_clock_mode { GP_CLOCK_MONOTONIC = 1, GP_CLOCK_TSC = 2, GP_CLOCK_FAKE = 3 };

extern GP_HIDDEN int gpuprof__clock_mode;
extern GP_HIDDEN _Atomic uint64_t gpuprof__clock_fake_ns;

static inline uint64_t gp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gp_ticks(void)
{
#if GP_HAVE_TSC
    if (__builtin_expect(gpuprof__clock_mode == GP_CLOCK_TSC, 1))
        return __rdtsc();
#endif
    if (gpuprof__clock_mode == GP_CLOCK_FAKE)
        return gp_load_relaxed(&gpuprof__clock_fake_ns);
    return gp_mono_ns();
}

/* Chooses the clock: 0 = auto, 1 = monotonic, 2 = tsc (falls back to
 * monotonic without an invariant TSC), 3 = fake. Records the origin pair.
 * Call before any thread reads ticks (gpuprof_init). */
void gpuprof__clock_setup(int requested);
/* A conversion from ticks to nanoseconds, fitted once per batch (a flush). */
typedef struct gp_clock_conv {
    double ns_per_tick;
    uint64_t origin_ticks;
    uint64_t origin_ns;
} gp_clock_conv;
void gpuprof__clock_conv(gp_clock_conv *c);

static inline uint64_t gp_conv_dur(const gp_clock_conv *c, uint64_t ticks)
{
    return (uint64_t)((double)ticks * c->ns_per_tick + 0.5);
}
static inline uint64_t gp_conv_at(const gp_clock_conv *c, uint64_t ticks)
{
    if (ticks >= c->origin_ticks)
        return c->origin_ns + gp_conv_dur(c, ticks - c->origin_ticks);
    uint64_t back = gp_conv_dur(c, c->origin_ticks - ticks);
    return back < c->origin_ns ? c->origin_ns - back : 0;
}

/* Test hook: switch to the fake clock reading `ns`. */
void gpuprof__clock_fake_set(uint64_t ns);

#endif /* GPUPROF_CLOCK_H */
