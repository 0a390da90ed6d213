/*
 * idle.c - GPU_IDLE_CAUSE (seed 002 §IV.A), for every backend: CPU code
 * that ran while no kernel was in flight on any device.
 *
 * Kernels in flight: the core counts each KERNEL operation from its
 * gpuprof__op_begin to its final activity (gpu.c), or, for a backend that
 * learns of completion before it submits (OpenCL's event callback), to its
 * gpuprof__gpu_done(); a launch that failed is given back the same way.
 *
 * The samples are the sampler's (sampler.h), source GP_SRC_IDLE: each
 * thread that begins an operation gets a timer on its own CPU-time clock
 * (GPUPROF_IDLE_PERIOD_US, default 2000; 0 turns this off), and a sample
 * counts only when no kernel is in flight, adding one period of
 * blame.gpu_idle_cause to its call path beneath the innermost open region.
 * Timers count CPU time: a blocked thread is never interrupted.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"

static long period_us = 2000; /* 0: off */

/* Kernels in flight, all devices: launched - done. A launch adds to its
 * thread's own counter (a plain store: no read-modify-write, no line shared
 * with a completing thread), completing threads (a runtime's, the
 * simulator's) to one shared counter; the handler sums. Threads beyond
 * NSLOTS share one counter (an atomic add). A `done` with no launch counted
 * (a backend's mistake, or an operation of an earlier measurement) makes
 * the difference negative: read as none in flight. */
#define NSLOTS 4096
typedef struct counter {
    _Alignas(64) _Atomic uint64_t v;
    char pad[64 - sizeof(uint64_t)];
} counter;
static counter slots[NSLOTS]; /* bss: pages touched as threads come */
static _Atomic uint32_t nslots;
static counter shared_launched, done_c;

_Atomic uint64_t *gpuprof__gpu_busy_slot(void)
{
    uint32_t i = atomic_fetch_add_explicit(&nslots, 1, memory_order_relaxed);
    if (i >= NSLOTS) {
        atomic_store_explicit(&nslots, NSLOTS, memory_order_relaxed);
        return NULL;
    }
    return &slots[i].v;
}

void gpuprof__gpu_busy(_Atomic uint64_t *slot)
{
    if (slot) /* its owner is the only writer */
        atomic_store_explicit(
            slot, atomic_load_explicit(slot, memory_order_relaxed) + 1,
            memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&shared_launched.v, 1, memory_order_relaxed);
}

void gpuprof__gpu_done(void)
{
    atomic_fetch_add_explicit(&done_c.v, 1, memory_order_relaxed);
}

static uint64_t launched_total(void)
{
    uint32_t n = atomic_load_explicit(&nslots, memory_order_relaxed);
    uint64_t l = atomic_load_explicit(&shared_launched.v, memory_order_relaxed);
    for (uint32_t i = 0; i < n && i < NSLOTS; i++)
        l += atomic_load_explicit(&slots[i].v, memory_order_relaxed);
    return l;
}

uint64_t gpuprof__gpu_busy_count(void)
{
    /* done first: every done counted follows its launch. */
    uint64_t d = atomic_load_explicit(&done_c.v, memory_order_relaxed);
    uint64_t l = launched_total();
    return (int64_t)(l - d) > 0 ? l - d : 0;
}

/* GPUPROF_IDLE_PERIOD_US, read once at gpuprof_init: a value that is
 * not a number of microseconds says so and the default is used; one under
 * 100 is raised to 100. */
static void idle_config(void)
{
    const char *env = getenv("GPUPROF_IDLE_PERIOD_US");
    period_us = 2000;
    if (!env || !*env)
        return;
    char *end;
    errno = 0;
    long us = strtol(env, &end, 10);
    if (errno || end == env || *end || us < 0 || us > 60000000) {
        gpuprof__setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                 "microseconds in 0..60000000, 0: off",
                                 "2000");
        return;
    }
    if (us > 0 && us < 100) {
        gpuprof__setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                 "at least 100, or 0: off", "100");
        us = 100;
    }
    period_us = us;
}

/* The handler's question: no kernel in flight? (async-signal-safe) */
static bool no_kernel_in_flight(void) { return gpuprof__gpu_busy_count() == 0; }

/* gpuprof_init: the period; a sample weighs one period of
 * blame.gpu_idle_cause. Timers start at each thread's first operation. */
void gpuprof__idle_init(void)
{
    idle_config();
    /* Kernels an earlier measurement left in flight are not this one's. */
    atomic_store_explicit(&done_c.v, launched_total(), memory_order_relaxed);
    gpuprof__sampler_source(GP_SRC_IDLE, (uint64_t)period_us * 1000u,
                            GP_M_GPU_IDLE_CAUSE, UINT32_MAX,
                            no_kernel_in_flight);
}

void gpuprof__idle_thread(void)
{
    gp_thread *t = gpuprof__tls_self;
    if (t)
        gpuprof__sampler_arm(t, GP_SRC_IDLE);
}

__attribute__((noinline)) void gpuprof__idle_sample_now(void)
{
    gpuprof__sampler_sample_from(GP_SRC_IDLE, __builtin_return_address(0));
    __asm__ volatile("" ::: "memory"); /* keep this frame */
}

uint64_t gpuprof__idle_period_ns(void)
{
    return gpuprof__sampler_period(GP_SRC_IDLE);
}

void gpuprof__idle_stop(void) { gpuprof__sampler_stop(); }
