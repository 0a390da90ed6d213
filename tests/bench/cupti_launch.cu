/*
 * cupti_launch.cu - what the CUPTI backend adds to a kernel launch on a
 * real GPU: cudaLaunchKernel of an empty kernel from a 30-deep call stack,
 * timed in processes measured by libgpuprof (GPUPROF_BACKENDS=cupti) and in
 * processes of the same program that are not (GPUPROF_BACKENDS=none: the
 * library initialized, no backend). The program runs itself again as
 * `cupti_launch --child`, alternating measured and unmeasured, PROCS times
 * each. A child times ROUNDS rounds of N launches (the launch calls only;
 * the device catches up between rounds, so the queue never fills) and
 * reports the median per launch. Figures:
 *
 *   cupti_launch_overhead_ns     what measuring adds per launch call: the
 *                                median over pairs of processes of
 *                                measured - unmeasured (the hook's unwind
 *                                of 30 frames, CUPTI's callback and record)
 *   cupti_launch_unmeasured_ns   one launch call unmeasured (the CUDA
 *                                runtime and driver alone: the baseline)
 *   cupti_launch_overhead_ratio  median measured / median unmeasured
 *
 * Built by nvcc against the public API (make bench, when nvcc is found).
 * Without a CUDA device, or when the backend is not active, it prints one
 * "# cupti_launch: ..., skipped" line and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <gpuprof.h>

#include "bench/bench.h"

#define DEPTH 30
#define N 1000
#define ROUNDS 21
#define PROCS 5

__global__ void empty_kernel(void) {}

static int launch_errors;

/* N launches from `d` frames deeper; ns per launch call. */
__attribute__((noinline)) static double launches_at(int d)
{
    if (d > 0) {
        double r = launches_at(d - 1);
        __asm__ volatile("" ::: "memory"); /* no tail call: the frames stay */
        return r;
    }
    void *args[1] = {NULL};
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++)
        launch_errors += cudaLaunchKernel((const void *)empty_kernel, dim3(1),
                                          dim3(1), args, 0, 0) != cudaSuccess;
    double t1 = bench_now_s();
    return (t1 - t0) * 1e9 / N;
}

/* One measured or unmeasured process: prints "NS <median ns per launch>",
 * or "INACTIVE <why>" when the backend it was asked for is not active. */
static int child(void)
{
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        printf("INACTIVE gpuprof_init: %s\n", gpuprof_last_error());
        return 0;
    }
    const char *want = getenv("GPUPROF_BACKENDS");
    char why[256] = "";
    if (want && strcmp(want, "cupti") == 0 &&
        gpuprof_backend_status("cupti", why, sizeof(why)) != GPUPROF_OK) {
        printf("INACTIVE %s\n", why[0] ? why : "not built into libgpuprof");
        return 0;
    }
    if (cudaFree(0) != cudaSuccess) /* the context, before timing */
        return 1;
    launches_at(DEPTH); /* warm: the module loads on the first launch */
    cudaDeviceSynchronize();
    double ns[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        ns[r] = launches_at(DEPTH);
        if (cudaDeviceSynchronize() != cudaSuccess || launch_errors)
            return 1;
    }
    printf("NS %.1f\n", bench_median(ns, ROUNDS));
    gpuprof_finalize();
    return 0;
}

/* Runs `exe --child` with GPUPROF_BACKENDS=backends; its median in *ns, or
 * its reason in why (returns 1) or a failure (returns -1). */
static int run_child(const char *exe, const char *backends, double *ns,
                     char *why, size_t why_size)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("GPUPROF_BACKENDS", backends, 1);
        execl(exe, exe, "--child", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[512] = "";
    FILE *f = fdopen(fd[0], "r");
    if (!f || !fgets(line, sizeof(line), f))
        line[0] = '\0';
    if (f)
        fclose(f);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "INACTIVE ", 9) == 0) {
        snprintf(why, why_size, "%s", line + 9);
        return 1;
    }
    return sscanf(line, "NS %lf", ns) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    int devices = 0;
    cudaError_t rc = cudaGetDeviceCount(&devices);
    if (rc != cudaSuccess || devices == 0) {
        printf("# cupti_launch: no CUDA device (%s), skipped\n",
               rc != cudaSuccess ? cudaGetErrorString(rc) : "none found");
        return 0;
    }
    char exe[4096], outdir[] = "/tmp/gpuprof-bench-cupti.XXXXXX";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0 || !mkdtemp(outdir))
        return 1;
    exe[n] = '\0';
    setenv("GPUPROF_OUTPUT", outdir, 1);
    double on[PROCS], off[PROCS], diff[PROCS];
    char why[512]; /* a child's line, less its first word */
    int st = 0;
    for (int p = 0; p < PROCS && st == 0; p++) {
        st = run_child(exe, "cupti", &on[p], why, sizeof(why));
        if (st == 0)
            st = run_child(exe, "none", &off[p], why, sizeof(why));
        if (st == 0)
            diff[p] = on[p] - off[p];
    }
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cupti_launch: could not remove %s\n", outdir);
    if (st == 1) {
        printf("# cupti_launch: backend cupti not active (%s), skipped\n", why);
        return 0;
    }
    if (st != 0) {
        fprintf(stderr, "cupti_launch: a child process failed\n");
        return 1;
    }
    double d = bench_median(diff, PROCS), m_on = bench_median(on, PROCS),
           m_off = bench_median(off, PROCS);
    printf("BENCH cupti_launch_overhead_ns %.0f ns\n", d < 0 ? 0 : d);
    printf("BENCH cupti_launch_unmeasured_ns %.0f ns\n", m_off);
    printf("BENCH cupti_launch_overhead_ratio %.2f x\n", m_on / m_off);
    return 0;
}
