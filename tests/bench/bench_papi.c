/*
 * bench_papi.c - the cost of a region begin+end pair while the PAPI backend
 * counts (lib/backends/papi), beside the same pair without it, in one run.
 *
 * A process is measured once, so each figure comes from its own child,
 * forked before gpuprof_init: one with GPUPROF_BACKENDS=none, one with
 * papi counting perf::TASK-CLOCK and perf::PAGE-FAULTS (the software events
 * this VM has; ../shared/PLATFORM.md). A pair with papi costs two
 * PAPI_read calls (one per change of the innermost region) and the
 * attribution of their differences. Prints BENCH lines:
 * papi_region_pair_ns, papi_region_pair_base_ns (region_pair_ns of this
 * run, without papi) and their ratio. Each figure is the median of 15 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuprof.h"
#include "bench/bench.h"

#define REPS 15
#define N 100000

static double run_named(void)
{
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++) {
        gpuprof_region_begin("solver_iteration");
        gpuprof_region_end("solver_iteration");
    }
    return (bench_now_s() - t0) * 1e9 / N;
}

/* In a child: the median pair cost with `backends`, or -1 when `want` is
 * not active. */
static double child(const char *backends, const char *want)
{
    char dir[] = "/tmp/gpuprof-bench-papi-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.output_dir = dir;
    o.backends = backends;
    double v[REPS], r = -1;
    if (gpuprof_init(&o) == GPUPROF_OK &&
        (!want || gpuprof_backend_status(want, NULL, 0) == GPUPROF_OK)) {
        gpuprof_region_begin("main");
        run_named(); /* warm up */
        for (int i = 0; i < REPS; i++)
            v[i] = run_named();
        gpuprof_region_end("main");
        r = bench_median(v, REPS);
    }
    gpuprof_finalize();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        r = -1;
    return r;
}

/* Runs child() in a forked process and returns its figure. */
static double forked(const char *backends, const char *want)
{
    int fd[2];
    double r = -1;
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        r = child(backends, want);
        _exit(write(fd[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0 || read(fd[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
        r = -1;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    return r;
}

int main(void)
{
    setenv("GPUPROF_PAPI_EVENTS", "perf::TASK-CLOCK,perf::PAGE-FAULTS", 1);
    double base = forked("none", NULL);
    double papi = forked("papi", "papi");
    if (base <= 0)
        return 1;
    if (papi <= 0) {
        printf("# bench_papi: the papi backend is not active here (no "
               "libpapi or no perf events): skipped\n");
        return 0;
    }
    printf("BENCH papi_region_pair_ns %.2f ns\n", papi);
    printf("BENCH papi_region_pair_base_ns %.2f ns\n", base);
    printf("BENCH papi_region_pair_ratio %.2f ratio\n", papi / base);
    return 0;
}
