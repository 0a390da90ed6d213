/*
 * sys.c - what the library's own threads share: starting one with every
 * signal blocked (the program's handlers must never run on them), marked
 * as the library's own (lib/host records nothing of them: their waits are
 * the library's, not the program's), and condition variables that wait on
 * CLOCK_MONOTONIC (a wall-clock step must not stretch a sleep).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "core/internal.h"

__thread bool gpuprof__own_thread __attribute__((tls_model("initial-exec")));

typedef struct spawned {
    void *(*fn)(void *);
    void *arg;
} spawned;

static void *own(void *p)
{
    spawned s = *(spawned *)p;
    free(p);
    gpuprof__own_thread = true;
    return s.fn(s.arg);
}

int gpuprof__spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    spawned *s = malloc(sizeof(*s));
    if (!s)
        return ENOMEM;
    *s = (spawned){fn, arg};
    /* The new thread inherits the mask: no signal can reach it, not even
     * before its first instruction. Creating it, the caller counts as our
     * own too: lib/host's pthread_create lets it through untouched. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool was = gpuprof__own_thread;
    gpuprof__own_thread = true;
    int e = pthread_create(t, NULL, own, s);
    gpuprof__own_thread = was;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e)
        free(s);
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
