/*
 * host_prog.c - host threads that wait for each other, whose wait states
 * and critical path are computed by hand, for tests/scripts/host-deps.sh.
 * Built twice: linked with -lgpuprof (GP_LINKED: it calls gpuprof_init and
 * names its regions and threads) and plain, for `gpuprof run` (then it
 * calls nothing of ours and has no regions). U = 1 ms (HOST_MS=N: N ms);
 * "work" of the given length in the named region is slept (work.h; the
 * quiet scenario spins for real).
 *
 *   join      main: "setup" 1 U, creates "worker" ("work" 3 U), joins it
 *             (WaitAtJoin ~3 U, blamed on "work"), "after" 1 U. Path:
 *             setup, the worker's work, after: ~5 U.
 *   barrier   main ("mid" 2 U), "t1" ("light" 1 U), "t2" ("heavy" 4 U)
 *             meet at a barrier, then each "after" 1 U; main joins both.
 *             The three begin their work at one moment (a start line 1 U
 *             after main began, spun outside any region), so that how
 *             long a thread took to start changes nothing.
 *             WaitAtBarrier x2: t1 ~3 U, main ~2 U (5 U), blamed on
 *             "heavy". Path: heavy, after: ~5 U.
 *   mutex     "holder" locks m, "hold" 3 U, unlocks; main "before" 1 U,
 *             locks m (LockContention ~2 U, blamed on "hold"), "crit"
 *             1 U, unlocks; joins. Path: hold, crit: ~4 U.
 *   cond      main waits on a condition until "producer" ("produce" 3 U)
 *             signals (WaitAtCondition ~3 U, blamed on "produce"), then
 *             "consume" 1 U; joins. Path: produce, consume: ~4 U.
 *   quiet     two threads each lock and unlock a mutex of their own
 *             100000 times (never contended), joined: host records are
 *             only the creates, starts, exits and joins (no lock ever
 *             blocked: no LOCK or UNLOCK record, no LockContention).
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "work.h"

typedef struct job {
    const char *thread, *region;
    double units;
} job;

static void *run_job(void *arg)
{
    const job *j = arg;
    NAME(j->thread);
    work(j->region, j->units);
    return NULL;
}

static int join(void)
{
    work("setup", 1);
    pthread_t t;
    job j = {"worker", "work", 3};
    pthread_create(&t, NULL, run_job, &j);
    pthread_join(t, NULL);
    work("after", 1);
    return 0;
}

static pthread_barrier_t bar;
static uint64_t start_line;

static void *at_barrier(void *arg)
{
    const job *j = arg;
    NAME(j->thread);
    sleep_until(start_line);
    work(j->region, j->units);
    pthread_barrier_wait(&bar);
    work("after", 1);
    return NULL;
}

static int barrier(void)
{
    pthread_barrier_init(&bar, NULL, 3);
    start_line = now_ns() + U;
    pthread_t t[2];
    job j[2] = {{"t1", "light", 1}, {"t2", "heavy", 4}};
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, at_barrier, &j[i]);
    job self = {"main", "mid", 2};
    at_barrier(&self);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    return 0;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int locked, ready;

static void *holder(void *arg)
{
    (void)arg;
    NAME("holder");
    pthread_mutex_lock(&mu);
    locked = 1;
    work("hold", 3);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int mutex(void)
{
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    while (!locked)
        sched_yield();
    work("before", 1);
    pthread_mutex_lock(&mu);
    work("crit", 1);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    return 0;
}

static void *producer(void *arg)
{
    (void)arg;
    NAME("producer");
    work("produce", 3);
    pthread_mutex_lock(&mu);
    ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int cond(void)
{
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    pthread_mutex_lock(&mu);
    while (!ready)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    work("consume", 1);
    pthread_join(t, NULL);
    return 0;
}

static void *spin_own(void *arg)
{
    pthread_mutex_t *m = arg;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(m);
        pthread_mutex_unlock(m);
    }
    return NULL;
}

static int quiet(void)
{
    static pthread_mutex_t m[2] = {PTHREAD_MUTEX_INITIALIZER,
                                   PTHREAD_MUTEX_INITIALIZER};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, spin_own, &m[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

int main(int argc, char **argv)
{
    set_unit();
#ifdef GP_LINKED
    if (gpuprof_init(NULL) != GPUPROF_OK)
        fprintf(stderr, "host_prog: %s\n", gpuprof_last_error());
    gpuprof_thread_set_name("main");
#endif
    const char *what = argc > 1 ? argv[1] : "";
    int rc = !strcmp(what, "join")      ? join()
             : !strcmp(what, "barrier") ? barrier()
             : !strcmp(what, "mutex")   ? mutex()
             : !strcmp(what, "cond")    ? cond()
             : !strcmp(what, "quiet")   ? quiet()
                                        : 2;
    if (rc == 2)
        fprintf(stderr, "usage: host_prog join|barrier|mutex|cond|quiet\n");
    return rc;
}
