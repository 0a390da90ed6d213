/*
 * bench_opencl.c - the cost of measuring OpenCL enqueues (PoCL on the CPU).
 *
 * Each round enqueues N kernels from a 30-deep stack into an in-order queue
 * held back by a user event (so the device does not compete for this VM's
 * two cores while the calls are timed), then releases the event and waits
 * with clFinish (the completions: the runtime's work and ours -- completion
 * callbacks, settling, submitting). Rounds alternate measuring and paused
 * (the layer passes calls through); figures are medians over rounds of the
 * per-enqueue difference:
 *
 *   opencl_enqueue_overhead_ns       what measuring adds per enqueue, call
 *                                    and completion together
 *   opencl_enqueue_call_overhead_ns  the part the enqueue call itself pays
 *                                    (hook, call path, event, callback set
 *                                    up)
 *   opencl_enqueue_paused_ns         one enqueue and its completion while
 *                                    paused: the baseline (PoCL alone)
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
#define REPS 15

static cl_command_queue q;
static cl_kernel k;

typedef struct round_t {
    double call_ns, total_ns; /* per enqueue */
} round_t;

static cl_context ctx;

__attribute__((noinline)) static round_t enqueues_at(int d)
{
    if (d > 0) {
        round_t r = enqueues_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    size_t g = 1;
    cl_int rc;
    cl_event gate = clCreateUserEvent(ctx, &rc);
    double t0 = bench_now_s();
    clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &gate, NULL);
    for (int i = 1; i < N; i++)
        clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    double t1 = bench_now_s();
    clSetUserEventStatus(gate, CL_COMPLETE);
    clFinish(q);
    double t2 = bench_now_s();
    clReleaseEvent(gate);
    return (round_t){(t1 - t0) * 1e9 / N, (t2 - t0) * 1e9 / N};
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
    cl_context c = ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    q = clCreateCommandQueueWithProperties(c, dev, NULL, &rc);
    const char *src = "__kernel void nop(__global int *a) { }\n";
    cl_program prog = clCreateProgramWithSource(c, 1, &src, NULL, &rc);
    clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    k = clCreateKernel(prog, "nop", &rc);
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE, 64, NULL, &rc);
    clSetKernelArg(k, 0, sizeof(m), &m);
    enqueues_at(DEPTH); /* warm: the first launch compiles */
    double call[REPS], total[REPS], off[REPS];
    for (int r = 0; r < REPS; r++) {
        gpuprof_start();
        round_t on = enqueues_at(DEPTH);
        gpuprof_stop();
        round_t paused = enqueues_at(DEPTH);
        call[r] = on.call_ns - paused.call_ns;
        total[r] = on.total_ns - paused.total_ns;
        off[r] = paused.total_ns;
    }
    gpuprof_start();
    double t = bench_median(total, REPS), c1 = bench_median(call, REPS);
    printf("BENCH opencl_enqueue_overhead_ns %.0f ns\n", t < 0 ? 0 : t);
    printf("BENCH opencl_enqueue_call_overhead_ns %.0f ns\n", c1 < 0 ? 0 : c1);
    printf("BENCH opencl_enqueue_paused_ns %.0f ns\n", bench_median(off, REPS));
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
