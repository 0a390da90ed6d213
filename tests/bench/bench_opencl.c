/*
 * bench_opencl.c - the cost of measuring OpenCL enqueues (PoCL on the CPU).
 *
 *   opencl_enqueue_overhead_ns  what measuring adds to one
 *                               clEnqueueNDRangeKernel made from a 30-deep
 *                               stack: measuring minus paused (the layer
 *                               passes calls through), same run, medians of
 *                               alternating rounds; includes the hook, the
 *                               event we make, its completion callback set
 *                               up, and settling completed commands
 *   opencl_enqueue_paused_ns    the same enqueue while paused: the baseline
 *
 * Without an OpenCL platform it says so and prints nothing else.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/internal.h"

#define DEPTH 30
#define N 2000
#define REPS 9

static cl_command_queue q;
static cl_kernel k;

__attribute__((noinline)) static double enqueues_at(int d)
{
    if (d > 0) {
        double r = enqueues_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    size_t g = 1;
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++)
        clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    double t = (bench_now_s() - t0) * 1e9 / N;
    clFinish(q);
    return t;
}

int main(void)
{
    char exe[PATH_MAX], layer[PATH_MAX + 64], cache[64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(layer, sizeof(layer), "%s/../lib/libgpuprof-cl-layer.so",
             dirname(exe));
    setenv("GPUPROF_OPENCL_LAYER", layer, 1);
    snprintf(cache, sizeof(cache), "/tmp/gpuprof-bench-pocl.%d", (int)getpid());
    setenv("POCL_CACHE_DIR", cache, 0);
    char outdir[] = "/tmp/gpuprof-bench-cl.XXXXXX";
    if (!mkdtemp(outdir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "opencl";
    o.signals = 0;
    if (gpuprof_init(&o) != GPUPROF_OK ||
        gpuprof_backend_status("opencl", NULL, 0) != GPUPROF_OK) {
        printf("# bench_opencl: no OpenCL backend here, skipped\n");
        return 0;
    }
    cl_platform_id p;
    cl_device_id dev;
    cl_int rc;
    if (clGetPlatformIDs(1, &p, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        printf("# bench_opencl: no OpenCL platform, skipped\n");
        return 0;
    }
    cl_context c = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    q = clCreateCommandQueueWithProperties(c, dev, NULL, &rc);
    const char *src = "__kernel void nop(__global int *a) { }\n";
    cl_program prog = clCreateProgramWithSource(c, 1, &src, NULL, &rc);
    clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    k = clCreateKernel(prog, "nop", &rc);
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE, 64, NULL, &rc);
    clSetKernelArg(k, 0, sizeof(m), &m);
    enqueues_at(DEPTH); /* warm: first launch compiles */
    double on[REPS], off[REPS], diff[REPS];
    for (int r = 0; r < REPS; r++) {
        gpuprof_start();
        on[r] = enqueues_at(DEPTH);
        gpuprof_stop();
        off[r] = enqueues_at(DEPTH);
        diff[r] = on[r] - off[r];
    }
    gpuprof_start();
    double d = bench_median(diff, REPS);
    printf("BENCH opencl_enqueue_overhead_ns %.0f ns\n", d < 0 ? 0 : d);
    printf("BENCH opencl_enqueue_paused_ns %.0f ns\n", bench_median(off, REPS));
    (void)on;
    clReleaseMemObject(m);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(c);
    gpuprof_finalize();
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", outdir, cache);
    return system(cmd) == 0 ? 0 : 0;
}
