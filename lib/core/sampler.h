/*
 * sampler.h - timer and counter samples of application threads into their
 * own calling context trees (DESIGN §3 "CPU samples"; seed 000 §4.7).
 *
 * One sampler serves every kind of sample (a "source"): GPU_IDLE_CAUSE
 * (idle.c: CPU time while no kernel is in flight), CPU time and wall-clock
 * time (cpusample.c: GPUPROF_CPU_SAMPLING), and a backend's counter
 * overflows (gpuprof_be_sample_thread, gpuprof_be_sample_take). Each armed thread has a POSIX timer
 * per timer source that signals that very thread (SIGEV_THREAD_ID) with one
 * real-time signal the sampler owns. The handler only writes the
 * interrupted call path, the innermost open region and the time into the
 * thread's own ring (no lock, no allocation); samples reach the tree at a
 * drain: the sampler's thread every 20 ms, every flush, the thread's exit.
 *
 * A thread's tree has one writer at a time. Its owner writes it inside
 * guarded spans (gpuprof__cct_enter/_leave: region first-use, operation
 * begin, a backend's sample); a drain on another thread claims it only
 * while no span is open (an asymmetric handshake: the owner pays two plain
 * stores and a load, the drainer a membarrier; without membarrier both sides
 * fence). So samples go into the very nodes GPU operations use, trace
 * records name stable nodes, and threads that never call the library are
 * sampled all the same.
 */
#ifndef GPUPROF_CORE_SAMPLER_H
#define GPUPROF_CORE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

/* Sources (pinned only within a process; traces name metrics instead). */
enum gp_sample_src {
    GP_SRC_IDLE = 0,     /* GPU_IDLE_CAUSE: CPU time, no kernel in flight */
    GP_SRC_CPUTIME = 1,  /* cpu.time: the thread's CPU-time clock */
    GP_SRC_REALTIME = 2, /* cpu.wall: CLOCK_MONOTONIC, blocked threads too */
    GP_SRC_BACKEND = 3,  /* a backend's sample (PAPI overflow): no timer */
    GP_SRC_N = 4
};

/* A timer source's setting: its period (0: off), the metric a sample adds
 * its value to (cputime, realtime: its clock's time since the thread's
 * previous signal; else period * expirations), and the one counting
 * expirations (UINT32_MAX:
 * none); `want`, when set, is asked in the handler whether this sample
 * counts (async-signal-safe). From gpuprof_init, before any thread arms. */
void gpuprof__sampler_source(unsigned src, uint64_t period_ns,
                             uint32_t metric, uint32_t count_metric,
                             bool (*want)(void));
/* The period of a timer source (0: off). */
uint64_t gpuprof__sampler_period(unsigned src);
/* The calling thread's timer for `src`, once per measurement (the owner
 * of `t`, the calling thread's state). false: not armed (off, no timer, no
 * signal, or out of memory: said at debug level). */
bool gpuprof__sampler_arm(gp_thread *t, unsigned src);
/* The thread's exit (its state's destructor, on the thread): timers
 * deleted, what it sampled drained, its ring freed. */
void gpuprof__sampler_thread_exit(gp_thread *t);
/* Every sample taken so far into the trees (a flush, under
 * G.flush_lock); a thread inside a guarded span keeps its samples for the
 * next drain. */
void gpuprof__sampler_drain_all(void);
/* Finalize, on its thread while still measuring: the time since that
 * thread's last signal goes where its last sample went (as at a thread's
 * exit), its samples drained first. Other live threads' last intervals
 * (under a period each) are not counted. */
void gpuprof__sampler_finish_self(void);
/* Finalize: no more samples, every timer deleted, the sampler's thread
 * stopped, everything drained. */
void gpuprof__sampler_stop(void);
void gpuprof__sampler_atfork_prepare(void);
void gpuprof__sampler_atfork_parent(void);
/* The forking thread's timers made again (POSIX timers are not
 * inherited), the parent's samples dropped. */
void gpuprof__sampler_atfork_child(void);

/* One sample of the calling thread's path, taken as the handler takes it,
 * its path starting at the frame whose return address is `until` (a
 * caller's __builtin_return_address(0)); tests and make bench. */
void gpuprof__sampler_sample_from(unsigned src, const void *until);
/* A sample of `src` through the signal and the handler, on the calling
 * thread (armed), as its timer would take it; make bench. */
void gpuprof__sampler_raise(unsigned src);
/* From a signal handler (a backend's overflow): one sample of the
 * interrupted path with `value` of metric `metric` (CPU kind). `uc` is the
 * handler's third argument (NULL: the path is cut after the signal
 * trampoline). Async-signal-safe. false: not taken (no ring on this
 * thread, paused, or the ring is full: counted on the region). */
bool gpuprof__sampler_take_backend(uint32_t metric, uint64_t value, void *uc);
/* The calling thread's ring (t: its state), so that a backend's signal
 * handler may take samples there (gpuprof_be_sample_thread); false: out of
 * memory. Not in a signal handler. */
bool gpuprof__sampler_backend_thread(gp_thread *t);
/* The calling thread's timers stopped (false) or started again (true);
 * make bench compares the same thread measured and not. */
void gpuprof__sampler_thread_timers(bool on);
/* The signal the sampler's timers send (0 before the first arm). */
int gpuprof__sampler_signal(void);
/* Timers the sampler holds right now (tests: nothing leaks). */
uint64_t gpuprof__sampler_timers(void);

/* ---- The owner's guarded spans ---------------------------------------- */
/* A drainer on another thread takes t's tree only while t->cct_busy is 0;
 * the owner sets it for its spans and waits while a drain holds the tree.
 * Spans nest. Owner only; never inside a signal handler. */
extern GP_HIDDEN _Atomic int gpuprof__guard_fence; /* 1: no membarrier */
void gpuprof__cct_wait(gp_thread *t);
static inline void gpuprof__cct_enter(gp_thread *t)
{
    if (t->cct_depth++)
        return;
#if defined(__SANITIZE_THREAD__)
    atomic_store_explicit(&t->cct_busy, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&t->cct_claim, memory_order_seq_cst))
        gpuprof__cct_wait(t);
#else
    gp_store_relaxed(&t->cct_busy, 1);
    if (gp_load_relaxed(&gpuprof__guard_fence))
        gp_fence_seq_cst();
    else
        atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(gp_load_acquire(&t->cct_claim) != 0, 0))
        gpuprof__cct_wait(t);
#endif
}
static inline void gpuprof__cct_leave(gp_thread *t)
{
    if (--t->cct_depth == 0)
        gp_store_release(&t->cct_busy, 0);
}

/* ---- cpusample.c: GPUPROF_CPU_SAMPLING -------------------------------- */
/* The setting, from gpuprof_init (before the backends start). */
void gpuprof__cpu_sampling_init(const char *setting);
/* A thread the library has just learned of (its state made, on that
 * thread): its CPU-time and wall-clock timers. Any thread-start path may
 * call it (lib/host's trampoline, a thread's first call into the
 * library); it has the shape of a thread-start hook. */
void gpuprof__cpu_sampling_thread_start(gp_thread *t);

#endif /* GPUPROF_CORE_SAMPLER_H */
