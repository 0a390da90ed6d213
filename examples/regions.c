/*
 * regions.c - a multi-threaded program measured with libgpuprof regions.
 *
 * Copy from here: initialize once in main, name your threads, bracket the
 * phases you care about, use a pre-registered handle in hot loops, and let
 * gpuprof_finalize (or exit) write the profile.
 *
 * Build:  cc regions.c $(pkg-config --cflags --libs gpuprof) -pthread -lm
 * Run:    ./a.out && gpuprof report gpuprof-a.out-measurements
 *
 * Four threads: "main" and "worker-0" .. "worker-2". Known visit counts
 * (what `gpuprof report` must show, summed over the threads; checked by
 * tests/scripts/demo-visits.sh):
 *   setup                  1   (main thread)
 *   solve                 30   (10 per worker)
 *     solve/assemble      30
 *     solve/iterate       60   (2 per solve)
 *       solve/iterate/smooth     300  (5 per iterate)
 *       solve/iterate/residual    60
 *   exchange            3000   (1000 per worker, pre-registered handle)
 *   output                 1   (main thread)
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpuprof.h>

#define WORKERS 3
#define SOLVES 10
#define ITERATES 2
#define SMOOTHS 5
#define EXCHANGES 1000
#define N 2000

static gpuprof_region exchange; /* registered once, used by every thread */
static double weight[N];        /* computed in "setup", read by the workers */

static void check(gpuprof_status st, const char *what)
{
    if (st != GPUPROF_OK) {
        fprintf(stderr, "regions: %s: %s (%s)\n", what, gpuprof_strerror(st),
                gpuprof_last_error());
        exit(1);
    }
}

/* A little real work so the times are not zero. */
static double smooth(double *v)
{
    double s = 0;
    for (int i = 1; i < N - 1; i++) {
        v[i] = 0.25 * v[i - 1] + 0.5 * v[i] + 0.25 * v[i + 1];
        s += v[i];
    }
    return s;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%d", id);
    check(gpuprof_thread_set_name(name), "thread name");
    double *v = malloc(N * sizeof(*v)), acc = 0;
    if (!v) {
        fprintf(stderr, "regions: out of memory\n");
        exit(1);
    }
    for (int s = 0; s < SOLVES; s++) {
        check(gpuprof_region_begin("solve"), "begin solve");
        check(gpuprof_region_begin("assemble"), "begin assemble");
        for (int i = 0; i < N; i++)
            v[i] = weight[i] * sin(i * 0.001 * (id + 1) + s);
        check(gpuprof_region_end("assemble"), "end assemble");
        for (int it = 0; it < ITERATES; it++) {
            check(gpuprof_region_begin("iterate"), "begin iterate");
            for (int k = 0; k < SMOOTHS; k++) {
                check(gpuprof_region_begin("smooth"), "begin smooth");
                acc += smooth(v);
                check(gpuprof_region_end("smooth"), "end smooth");
            }
            check(gpuprof_region_begin("residual"), "begin residual");
            acc += fabs(v[N / 2]);
            check(gpuprof_region_end("residual"), "end residual");
            check(gpuprof_region_end("iterate"), "end iterate");
        }
        check(gpuprof_region_end("solve"), "end solve");
    }
    for (int e = 0; e < EXCHANGES; e++) { /* a hot loop: use the handle */
        check(gpuprof_region_begin_handle(exchange), "begin exchange");
        acc += v[e % N];
        check(gpuprof_region_end_handle(exchange), "end exchange");
    }
    free(v);
    return (void *)(long)(acc > 0);
}

int main(void)
{
    check(gpuprof_init(NULL), "init"); /* options from GPUPROF_* variables */
    check(gpuprof_thread_set_name("main"), "thread name");
    check(gpuprof_region_register("exchange", &exchange), "register");

    check(gpuprof_region_begin("setup"), "begin setup");
    for (int i = 0; i < N; i++)
        weight[i] = 1.0 + 0.5 * cos(i * 0.01);
    check(gpuprof_region_end("setup"), "end setup");

    pthread_t th[WORKERS];
    for (long i = 0; i < WORKERS; i++) {
        if (pthread_create(&th[i], NULL, worker, (void *)i) != 0) {
            fprintf(stderr, "regions: cannot start a thread\n");
            return 1;
        }
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);

    check(gpuprof_region_begin("output"), "begin output");
    char path[4096];
    check(gpuprof_output_path(path, sizeof(path)), "output path");
    check(gpuprof_region_end("output"), "end output");
    check(gpuprof_finalize(), "finalize");

    printf("regions: %d workers x %d solves; expected visits: setup 1, solve %d, "
           "assemble %d, iterate %d, smooth %d, residual %d, exchange %d, output 1\n",
           WORKERS, SOLVES, WORKERS * SOLVES, WORKERS * SOLVES,
           WORKERS * SOLVES * ITERATES, WORKERS * SOLVES * ITERATES * SMOOTHS,
           WORKERS * SOLVES * ITERATES, WORKERS * EXCHANGES);
    printf("regions: profile written to %s\n", path);
    return 0;
}
