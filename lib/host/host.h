/*
 * host.h - the host layer: how the threads of a measured program wait for
 * each other, recorded into its trace (HOST_RECORDS, io/trace.h) so the
 * analysis can follow host-thread dependencies on the critical path
 * (doc/ANALYSIS.md "Host threads").
 *
 * Three rooms:
 *   host.c       what the others share: whether to record, the record
 *                itself (onto the calling thread's trace), which call sites
 *                are the program's (a runtime's own locks and threads are
 *                how it implements what its own records already say), and
 *                the table of threads blocked per object (so a release is
 *                recorded only when a thread waited for it);
 *   interpose.c  the pthread functions libgpuprof.so defines in front of
 *                libc's (create, join, barriers, mutexes, condition
 *                variables) and ompt_start_tool; the only file with globals
 *                not named gpuprof_, linked into libgpuprof.so only (never
 *                into the static archive or the white-box test programs:
 *                doc/CORE.md "Host threads");
 *   ompt.c       the OpenMP tool (OMPT, LLVM's libomp): parallel regions,
 *                implicit and explicit barriers, taskwait.
 *
 * Nothing here prints or blocks on its own; the uncontended paths record
 * nothing (a trylock, one load).
 */
#ifndef GPUPROF_HOST_H
#define GPUPROF_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/atomics.h"

/* Is the process measuring with tracing on, and the calling thread not the
 * library's or a backend's own (records are wanted)? Two relaxed loads and
 * one of TLS. */
bool gpuprof__host_recording(void);
/* One record of the calling thread (io/trace.h GPUPROF_IO_HOST_*; times in
 * ticks, gp_ticks): nothing when not recording or the thread has no trace.
 * May register the thread (its first record). */
void gpuprof__host_record(uint32_t op, uint32_t flags, uint64_t t0,
                          uint64_t t1, uint64_t object, uint64_t aux);

/* Is the call whose return address is `ra` the program's own: made from
 * the program or a library of its, not from inside a GPU, MPI or OpenMP
 * runtime, the C library, the dynamic loader or libgpuprof itself? The
 * answer per loaded object is cached on the thread (4 entries); the first
 * look at an object walks the loaded objects (microseconds). */
bool gpuprof__host_user_site(const void *ra);
/* The file-name prefixes that mark an object as a runtime's (for the
 * tests and doc/CORE.md), NULL-terminated. */
extern GP_HIDDEN const char *const gpuprof__host_runtimes[];
bool gpuprof__host_runtime_name(const char *path);

/* Threads blocked on object o (a mutex, a condition variable), counted
 * around the blocking call so that whoever releases o knows whether to
 * record it. Hashed: a collision records a release no one waited for,
 * which the analysis matches with nothing. */
#define GP_HOST_WAITERS 4096u
extern GP_HIDDEN _Atomic uint32_t gpuprof__host_waiters[GP_HOST_WAITERS];
static inline uint32_t gpuprof__host_slot(const void *o)
{
    uintptr_t x = (uintptr_t)o;
    return (uint32_t)((x >> 4) ^ (x >> 16)) & (GP_HOST_WAITERS - 1u);
}
static inline void gpuprof__host_wait_begin(const void *o)
{
    gp_fetch_add_relaxed(&gpuprof__host_waiters[gpuprof__host_slot(o)], 1u);
}
static inline void gpuprof__host_wait_end(const void *o)
{
    gp_fetch_add_relaxed(&gpuprof__host_waiters[gpuprof__host_slot(o)],
                         UINT32_MAX); /* - 1 */
}
static inline bool gpuprof__host_waited(const void *o)
{
    return gp_load_relaxed(&gpuprof__host_waiters[gpuprof__host_slot(o)]) !=
           0;
}

/* A thread created through the interposed pthread_create begins (the
 * trampoline, on the new thread): registers it (gpuprof__thread_started,
 * the core's thread-start hook point) and records START; `creation` is
 * the number its CREATE record carries. */
void gpuprof__host_thread_begins(uint64_t creation);
/* ... and ends (returned, pthread_exit, cancelled): EXIT. */
void gpuprof__host_thread_ends(void);
/* A new creation number (process-wide, from 1). */
uint64_t gpuprof__host_creation(void);

/* From gpuprof_init: says once (info) what host dependencies this run
 * will lack: pthreads not interposed (libgpuprof.so not ahead of libc:
 * `gpuprof run` preloads it), GCC's libgomp (no OMPT). */
void gpuprof__host_init(void);

/* ompt.c: the tool libomp starts (ompt_start_tool, interpose.c, hands it
 * over); NULL when OMPT is turned off (GPUPROF_OMPT=0). */
struct ompt_start_tool_result_t;
struct ompt_start_tool_result_t *gpuprof__ompt_tool(unsigned int version,
                                                    const char *runtime);
/* Did an OpenMP runtime start our tool (libomp found us)? */
bool gpuprof__ompt_started(void);

#endif /* GPUPROF_HOST_H */
