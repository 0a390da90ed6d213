/*
 * bench_mutex.c - what the host layer (lib/host/interpose.c) costs an
 * uncontended mutex: a lock/unlock pair as the program calls it, through
 * libgpuprof.so's pthread_mutex_lock and _unlock (a trylock first, one
 * load on unlock), beside the bare pair (the C library's own functions,
 * found in libc.so.6 itself), in the same run, measuring with tracing on.
 * Linked with the shared library (not the objects: interposition is
 * libgpuprof.so's). Median of 15 rounds of 2,000,000 pairs each,
 * alternating.
 *
 * Prints BENCH lines: mutex_hook_ns (the interposed pair), mutex_bare_ns,
 * mutex_hook_ratio.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "gpuprof.h"

enum { ROUNDS = 15, PAIRS = 2000000 };

typedef int (*mutex_fn)(pthread_mutex_t *);

static double round_ns(mutex_fn lock, mutex_fn unlock, pthread_mutex_t *m)
{
    double t0 = bench_now_s();
    for (int i = 0; i < PAIRS; i++) {
        lock(m);
        unlock(m);
    }
    return (bench_now_s() - t0) * 1e9 / PAIRS;
}

int main(void)
{
    char dir[] = "/tmp/bench_mutex.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = dir;
    o.backends = "none";
    o.trace = 1;
    if (gpuprof_init(&o) != GPUPROF_OK) {
        fprintf(stderr, "bench_mutex: %s\n", gpuprof_last_error());
        return 1;
    }
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    mutex_fn bare_lock = libc ? (mutex_fn)dlsym(libc, "pthread_mutex_lock")
                              : NULL;
    mutex_fn bare_unlock =
        libc ? (mutex_fn)dlsym(libc, "pthread_mutex_unlock") : NULL;
    mutex_fn hook_lock = (mutex_fn)dlsym(RTLD_DEFAULT, "pthread_mutex_lock");
    mutex_fn hook_unlock =
        (mutex_fn)dlsym(RTLD_DEFAULT, "pthread_mutex_unlock");
    Dl_info di;
    if (!bare_lock || !bare_unlock || !hook_lock || !hook_unlock ||
        hook_lock == bare_lock || !dladdr((void *)hook_lock, &di) ||
        !di.dli_fname || !strstr(di.dli_fname, "libgpuprof")) {
        fprintf(stderr, "bench_mutex: pthread_mutex_lock is not "
                        "libgpuprof's here: skipped\n");
        return 0;
    }
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    double hook[ROUNDS], bare[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        bare[r] = round_ns(bare_lock, bare_unlock, &m);
        hook[r] = round_ns(hook_lock, hook_unlock, &m);
    }
    double h = bench_median(hook, ROUNDS), b = bench_median(bare, ROUNDS);
    printf("BENCH mutex_hook_ns %.2f ns\n", h);
    printf("BENCH mutex_bare_ns %.2f ns\n", b);
    printf("BENCH mutex_hook_ratio %.2f x\n", h / b);
    gpuprof_finalize();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) != 0;
}
