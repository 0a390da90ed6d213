/*
 * interpose.c - the pthread functions libgpuprof.so defines in front of
 * the C library's (host.h), and ompt_start_tool. Linked into libgpuprof.so
 * only: its globals are the functions' own names (doc/CORE.md "Host
 * threads", tests/scripts/check-symbols.sh lists them), exported
 * unversioned so that they stand in for libc's whatever version a caller
 * asked for, in the program and in every library after libgpuprof in the
 * search order (a linked program: -lgpuprof comes before libc; `gpuprof
 * run` preloads libgpuprof.so itself). Each calls the next definition
 * (dlsym RTLD_NEXT: libc's, or another interposer's), so the program's
 * semantics are the C library's.
 *
 * The uncontended paths record nothing and stay cheap (make bench:
 * mutex_hook_ns): a lock is a trylock first, and only a lock that would
 * block takes the slow path; an unlock or a signal loads one counter (did
 * any thread block on this object?). Blocking calls (join, barrier wait,
 * condition wait, a lock that blocked) are recorded when they return, with
 * their times; releases and signals only while a thread waits. A thread
 * made by pthread_create starts in a trampoline that registers it with the
 * core (the thread-start hook point) and records START, and records EXIT
 * when its function returns, calls pthread_exit or is cancelled (a
 * cleanup handler). Under a sanitizer (ASan, TSan: they own thread start)
 * threads are not trampolined.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/internal.h"
#include "host/host.h"
#include "io/trace.h"

#define EXPORT __attribute__((visibility("default")))
#define RA __builtin_return_address(0)
#define unlikely(x) __builtin_expect(!!(x), 0)
/* A trylock's answer is the lock's unless the lock would block. */
#define likely_ok(rc) __builtin_expect((rc) != EBUSY, 1)

static struct {
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                  void *);
    int (*join)(pthread_t, void **);
    int (*barrier_wait)(pthread_barrier_t *);
    int (*lock)(pthread_mutex_t *);
    int (*trylock)(pthread_mutex_t *);
    int (*timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*unlock)(pthread_mutex_t *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
                          const struct timespec *);
    int (*signal)(pthread_cond_t *);
    int (*broadcast)(pthread_cond_t *);
} real;
static _Atomic int resolved;
static bool sanitized;

/* The next definitions, once (a benign race: every thread finds the
 * same). Early: a library's constructor may lock before ours runs. */
static void resolve(void)
{
    real.create = dlsym(RTLD_NEXT, "pthread_create");
    real.join = dlsym(RTLD_NEXT, "pthread_join");
    real.barrier_wait = dlsym(RTLD_NEXT, "pthread_barrier_wait");
    real.lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real.trylock = dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    real.timedlock = dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
    real.unlock = dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    real.cond_wait = dlsym(RTLD_NEXT, "pthread_cond_wait");
    real.cond_timedwait = dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    real.signal = dlsym(RTLD_NEXT, "pthread_cond_signal");
    real.broadcast = dlsym(RTLD_NEXT, "pthread_cond_broadcast");
    sanitized = dlsym(RTLD_DEFAULT, "__tsan_init") ||
                dlsym(RTLD_DEFAULT, "__asan_init");
    gp_store_release(&resolved, 1);
}

#define READY()                                                                 \
    do {                                                                        \
        if (unlikely(!gp_load_acquire(&resolved)))                              \
            resolve();                                                          \
    } while (0)

__attribute__((constructor(101))) static void interpose_init(void)
{
    READY();
}

static bool wanted(const void *ra)
{
    return gpuprof__host_recording() && gpuprof__host_user_site(ra);
}

/* ---- threads ------------------------------------------------------------- */
typedef struct tramp {
    void *(*fn)(void *);
    void *arg;
    uint64_t creation;
} tramp;

static void ended(void *unused)
{
    (void)unused;
    gpuprof__host_thread_ends();
}

static void *trampoline(void *p)
{
    tramp a = *(tramp *)p;
    free(p);
    gpuprof__host_thread_begins(a.creation);
    void *ret;
    pthread_cleanup_push(ended, NULL);
    ret = a.fn(a.arg);
    pthread_cleanup_pop(1);
    return ret;
}

static int create_impl(pthread_t *th, const pthread_attr_t *attr,
                       void *(*fn)(void *), void *arg)
{
    READY();
    int mode = gp_mode();
    if (sanitized || mode == GP_MODE_UNINIT || mode == GP_MODE_FINALIZED ||
        gpuprof__own_thread || !gpuprof__host_user_site(RA))
        return real.create(th, attr, fn, arg);
    tramp *a = malloc(sizeof(*a));
    if (!a)
        return real.create(th, attr, fn, arg);
    uint64_t creation = gpuprof__host_creation(), t0 = gp_ticks();
    *a = (tramp){fn, arg, creation};
    int rc = real.create(th, attr, trampoline, a);
    if (rc) {
        free(a);
        return rc;
    }
    gpuprof__host_record(GPUPROF_IO_HOST_CREATE, 0, t0, gp_ticks(),
                         (uint64_t)*th, creation);
    return 0;
}
extern __typeof(create_impl) pthread_create
    __attribute__((alias("create_impl"), visibility("default")));
/* For host.c: whether the program's calls reach us (dlsym compares). */
GP_HIDDEN const void *const gpuprof__host_own_create = (const void *)create_impl;

EXPORT int pthread_join(pthread_t th, void **ret)
{
    READY();
    if (!wanted(RA))
        return real.join(th, ret);
    uint64_t t0 = gp_ticks();
    int rc = real.join(th, ret);
    if (rc == 0)
        gpuprof__host_record(GPUPROF_IO_HOST_JOIN, 0, t0, gp_ticks(),
                             (uint64_t)th, 0);
    return rc;
}

EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    READY();
    if (!wanted(RA))
        return real.barrier_wait(b);
    uint64_t t0 = gp_ticks();
    int rc = real.barrier_wait(b);
    if (rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD)
        gpuprof__host_record(GPUPROF_IO_HOST_BARRIER, 0, t0, gp_ticks(),
                             (uint64_t)(uintptr_t)b, 0);
    return rc;
}

/* ---- mutexes ------------------------------------------------------------- */
/* A lock that would block (`timed`: pthread_mutex_timedlock's deadline). */
static int lock_slow(pthread_mutex_t *m, const struct timespec *timed,
                     const void *ra)
{
    if (!wanted(ra))
        return timed ? real.timedlock(m, timed) : real.lock(m);
    uint64_t t0 = gp_ticks();
    gpuprof__host_wait_begin(m);
    int rc = timed ? real.timedlock(m, timed) : real.lock(m);
    gpuprof__host_wait_end(m);
    if (rc == 0)
        gpuprof__host_record(GPUPROF_IO_HOST_LOCK, 0, t0, gp_ticks(),
                             (uint64_t)(uintptr_t)m, 0);
    return rc;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    READY();
    int rc = real.trylock(m); /* what lock would do, unless it blocks */
    return likely_ok(rc) ? rc : lock_slow(m, NULL, RA);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m,
                                   const struct timespec *deadline)
{
    READY();
    int rc = real.trylock(m);
    return likely_ok(rc) ? rc : lock_slow(m, deadline, RA);
}

static int unlock_slow(pthread_mutex_t *m, const void *ra)
{
    if (!wanted(ra))
        return real.unlock(m);
    uint64_t t = gp_ticks(); /* before the release: before the acquire */
    int rc = real.unlock(m);
    if (rc == 0)
        gpuprof__host_record(GPUPROF_IO_HOST_UNLOCK, 0, t, t,
                             (uint64_t)(uintptr_t)m, 0);
    return rc;
}

EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    READY();
    if (unlikely(gpuprof__host_waited(m)))
        return unlock_slow(m, RA);
    return real.unlock(m);
}

/* ---- condition variables ------------------------------------------------- */
static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m,
                     const struct timespec *timed, const void *ra)
{
    if (!wanted(ra))
        return timed ? real.cond_timedwait(c, m, timed) : real.cond_wait(c, m);
    uint64_t t0 = gp_ticks();
    gpuprof__host_wait_begin(c);
    int rc = timed ? real.cond_timedwait(c, m, timed) : real.cond_wait(c, m);
    gpuprof__host_wait_end(c);
    if (rc == 0 || rc == ETIMEDOUT)
        gpuprof__host_record(GPUPROF_IO_HOST_COND_WAIT,
                             rc ? GPUPROF_IO_HOST_TIMEOUT : 0, t0, gp_ticks(),
                             (uint64_t)(uintptr_t)c, (uint64_t)(uintptr_t)m);
    return rc;
}

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    READY();
    return cond_wait(c, m, NULL, RA);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                  const struct timespec *deadline)
{
    READY();
    return cond_wait(c, m, deadline, RA);
}

static int signal_slow(pthread_cond_t *c, bool all, const void *ra)
{
    int (*fn)(pthread_cond_t *) = all ? real.broadcast : real.signal;
    if (!wanted(ra))
        return fn(c);
    uint64_t t = gp_ticks();
    int rc = fn(c);
    if (rc == 0)
        gpuprof__host_record(GPUPROF_IO_HOST_SIGNAL, 0, t, t,
                             (uint64_t)(uintptr_t)c, all);
    return rc;
}

EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    READY();
    if (unlikely(gpuprof__host_waited(c)))
        return signal_slow(c, false, RA);
    return real.signal(c);
}

EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    READY();
    if (unlikely(gpuprof__host_waited(c)))
        return signal_slow(c, true, RA);
    return real.broadcast(c);
}

/* ---- OpenMP -------------------------------------------------------------- */
/* libomp looks this up when it starts (OMPT, OpenMP 5.0 §4.2.1). */
EXPORT struct ompt_start_tool_result_t *
ompt_start_tool(unsigned int omp_version, const char *runtime_version);
EXPORT struct ompt_start_tool_result_t *
ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    return gpuprof__ompt_tool(omp_version, runtime_version);
}
