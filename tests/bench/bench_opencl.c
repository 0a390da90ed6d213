/*
 * bench_opencl.c - the cost of measuring OpenCL enqueues (PoCL on the CPU).
 *
 * Each round enqueues N kernels from a 30-deep stack into an in-order queue
 * held back by a user event (so the device does not compete for this VM's
 * two cores while the calls are timed), then releases the event and waits
 * with clFinish and for our completion callbacks (the completions: the
 * runtime's work and ours -- callbacks, settling, submitting; a round's
 * callbacks still running would otherwise be timed in the next round).
 * Rounds alternate measuring and paused
 * (the layer passes calls through); figures are medians over rounds of the
 * per-enqueue difference:
 *
 *   opencl_enqueue_overhead_ns       what measuring adds per enqueue, call
 *                                    and completion together
 *   opencl_enqueue_call_overhead_ns  the part the enqueue call itself pays
 *                                    (hook, call path, event, callback set
 *                                    up)
 *   opencl_enqueue_paused_ns         one enqueue and its completion while
 *                                    paused: the baseline of the figures
 *                                    above. Not PoCL alone: the layer
 *                                    passes calls through, and the queue,
 *                                    made while measuring, keeps the
 *                                    profiling the layer turned on
 *   opencl_enqueue_unmeasured_ns     one enqueue and its completion in a
 *                                    process without the library's layer
 *                                    (`bench_opencl --unmeasured`, run by
 *                                    the first): PoCL alone. Paused less
 *                                    unmeasured is what a paused
 *                                    measurement still costs
 *
 * Paused is a whole enqueue, overhead a difference: paused larger than
 * overhead says measuring adds less than PoCL's own cost, not that pausing
 * costs more than measuring. Without an OpenCL platform it says so and
 * prints nothing else.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/opencl/cl.h"
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
    /* The completion callbacks PoCL runs after clFinish returned, and their
     * settling, belong to this round: left running they would fall on the
     * next one (a paused round after a measured one, the old method). */
    gpuprof__cl_quiesce();
    double t2 = bench_now_s();
    clReleaseEvent(gate);
    return (round_t){(t1 - t0) * 1e9 / N, (t2 - t0) * 1e9 / N};
}

/* The same rounds with no layer in this process (the parent's init put
 * OPENCL_LAYERS into the environment it passed on). */
static int unmeasured(void);
static bool setup(cl_program *prog, cl_mem *m);
static void teardown(cl_program prog, cl_mem m);

int main(int argc, char **argv)
{
    char exe[PATH_MAX], layer[PATH_MAX + 64], cache[64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(cache, sizeof(cache), "/tmp/gpuprof-bench-pocl.%d", (int)getpid());
    setenv("POCL_CACHE_DIR", cache, 0);
    if (argc > 1 && !strcmp(argv[1], "--unmeasured"))
        return unmeasured();
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", exe);
    snprintf(layer, sizeof(layer), "%s/../lib/libgpuprof-cl-layer.so",
             dirname(dir));
    setenv("GPUPROF_OPENCL_LAYER", layer, 1);
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
    cl_mem m;
    cl_program prog;
    if (!setup(&prog, &m)) {
        printf("# bench_opencl: no OpenCL platform, skipped\n");
        return 0;
    }
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
    teardown(prog, m);
    gpuprof_finalize();
    char cmd[PATH_MAX + 300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", outdir, cache);
    if (system(cmd) != 0)
        return 0;
    fflush(stdout);
    snprintf(cmd, sizeof(cmd), "'%s' --unmeasured", exe);
    return system(cmd) == 0 ? 0 : 1;
}

static int unmeasured(void)
{
    unsetenv("OPENCL_LAYERS");
    cl_mem m;
    cl_program prog;
    if (!setup(&prog, &m)) {
        printf("# bench_opencl --unmeasured: no OpenCL platform, skipped\n");
        return 0;
    }
    double total[REPS];
    for (int r = 0; r < REPS; r++)
        total[r] = enqueues_at(DEPTH).total_ns;
    printf("BENCH opencl_enqueue_unmeasured_ns %.0f ns\n",
           bench_median(total, REPS));
    teardown(prog, m);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", getenv("POCL_CACHE_DIR"));
    return system(cmd) == 0 ? 0 : 0;
}

/* A context, an in-order queue and the kernel, warm (its first launch
 * compiles); false without a platform. */
static bool setup(cl_program *prog, cl_mem *m)
{
    cl_platform_id p;
    cl_device_id dev;
    cl_int rc;
    if (clGetPlatformIDs(1, &p, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
        return false;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &rc);
    const char *src = "__kernel void nop(__global int *a) { }\n";
    *prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    clBuildProgram(*prog, 1, &dev, "", NULL, NULL);
    k = clCreateKernel(*prog, "nop", &rc);
    *m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &rc);
    clSetKernelArg(k, 0, sizeof(*m), m);
    enqueues_at(DEPTH); /* warm: the first launch compiles */
    return true;
}

static void teardown(cl_program prog, cl_mem m)
{
    clReleaseMemObject(m);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
}
