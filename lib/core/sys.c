/*
 * sys.c - what the library's own threads share: starting one with every
 * signal blocked (the program's handlers must never run on them), and
 * condition variables that wait on CLOCK_MONOTONIC (a wall-clock step must
 * not stretch a sleep).
 */
#include <signal.h>

#include "core/internal.h"

int gpuprof__spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    /* The new thread inherits the mask: no signal can reach it, not even
     * before its first instruction. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}

void gpuprof__cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

void gpuprof__deadline(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    uint64_t nsec = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(nsec / 1000000000u);
    ts->tv_nsec = (long)(nsec % 1000000000u);
}
