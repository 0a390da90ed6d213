/*
 * proj_cl.c - the projection experiment's programs in OpenCL (PoCL here:
 * the kernels run on the CPU's cores, so kernels of two queues share
 * them), for tests/bench/projection.sh; a plain OpenCL program that never
 * calls libgpuprof (measured with `gpuprof run`). The same four shapes as
 * tests/sim/proj_prog.c, with the same names and units:
 *
 *   a W   one thread, one queue: host 2 U, "work" W U, clFinish.
 *   b W   one thread, two queues linked by events: "work" W U on q0 (its
 *         event e); "fixed" 3 U on q1, then "post" 1 U on q1 waiting for
 *         e; host 1 U; clFinish(q1).
 *   c W   two threads, a queue each, joined: host 1 U, "work" W U,
 *         clFinish; the other host 2 U, "fixed" 2 U, clFinish.
 *   d W   an OpenMP region of 2 threads per iteration (clang -fopenmp;
 *         else exit 3): thread 0 "work" W U, clFinish(q0); thread 1 host
 *         1 U, "fixed" 2 U, clFinish(q1); then the main thread's host 1 U.
 *
 * A device unit is PROJ_CL_UNIT iterations of the kernels' loop per work
 * item (256 items in groups of 32); the script calibrates it to about
 * PROJ_MS ms on an idle device. Host work is slept. N iterations
 * (PROJ_ITERS, default 8). Prints "elapsed_ns T" (from before the first
 * launch to after the last wait); exit 3 when OpenCL fails.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "work.h"

#define BODY                                                                 \
    "{ size_t i = get_global_id(0); float v = a[i];"                         \
    "  for (int k = 0; k < n; k++) v = v * 0.999f + 0.001f;"                 \
    "  a[i] = v; }\n"
static const char *src =
    "__kernel void work(__global float *a, int n) " BODY
    "__kernel void fixed(__global float *a, int n) " BODY
    "__kernel void post(__global float *a, int n) " BODY;

static double U_ITERS = 20000; /* PROJ_CL_UNIT */
static uint64_t UNIT = 1000000ull; /* PROJ_MS: host unit */
static int N = 8;
static double W = 4;
static cl_context ctx;
static cl_command_queue q[2];
static cl_kernel kwork[2], kfixed[2], kpost;
static cl_mem buf[2];

/* Host work: `units` U slept (work.h). */
static void host(double units)
{
    sleep_until(now_ns() + (uint64_t)(units * (double)UNIT));
}

static int failed;

/* Kernel k for `units` device units on queue i. */
static void launch(cl_kernel k, int i, double units, cl_uint nwait,
                   const cl_event *wait, cl_event *ev)
{
    cl_int n = (cl_int)(units * U_ITERS + 0.5);
    size_t global = 256, local = 32;
    if (clSetKernelArg(k, 0, sizeof(buf[i]), &buf[i]) ||
        clSetKernelArg(k, 1, sizeof(n), &n) ||
        clEnqueueNDRangeKernel(q[i], k, 1, NULL, &global, &local, nwait, wait,
                               ev))
        failed = 1;
}

static void finish(int i)
{
    if (clFinish(q[i]))
        failed = 1;
}

static void case_a(void)
{
    for (int it = 0; it < N; it++) {
        host(2);
        launch(kwork[0], 0, W, 0, NULL, NULL);
        finish(0);
    }
}

static void case_b(void)
{
    for (int it = 0; it < N; it++) {
        cl_event e;
        launch(kwork[0], 0, W, 0, NULL, &e);
        launch(kfixed[1], 1, 3, 0, NULL, NULL);
        launch(kpost, 1, 1, 1, &e, NULL);
        clFlush(q[0]);
        clFlush(q[1]);
        host(1);
        finish(1);
        clReleaseEvent(e);
    }
    finish(0);
}

static void *gpu_side(void *arg)
{
    (void)arg;
    for (int it = 0; it < N; it++) {
        host(1);
        launch(kwork[0], 0, W, 0, NULL, NULL);
        finish(0);
    }
    return NULL;
}

static void *other_side(void *arg)
{
    (void)arg;
    for (int it = 0; it < N; it++) {
        host(2);
        launch(kfixed[1], 1, 2, 0, NULL, NULL);
        finish(1);
    }
    return NULL;
}

static void case_c(void)
{
    pthread_t g, o;
    if (pthread_create(&g, NULL, gpu_side, NULL) ||
        pthread_create(&o, NULL, other_side, NULL)) {
        failed = 1;
        return;
    }
    pthread_join(g, NULL);
    pthread_join(o, NULL);
}

static int case_d(void)
{
#ifdef _OPENMP
    for (int it = 0; it < N; it++) {
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                launch(kwork[0], 0, W, 0, NULL, NULL);
                finish(0);
            } else {
                host(1);
                launch(kfixed[1], 1, 2, 0, NULL, NULL);
                finish(1);
            }
        }
        host(1);
    }
    return 0;
#else
    fprintf(stderr, "proj_cl: case d needs OpenMP (built without)\n");
    return 3;
#endif
}

static int setup(void)
{
    cl_platform_id pl;
    cl_device_id dev;
    cl_int err;
    if (clGetPlatformIDs(1, &pl, NULL) ||
        clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
        return 3;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err)
        return 3;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err || clBuildProgram(p, 1, &dev, "", NULL, NULL))
        return 3;
    float init[256] = {0};
    for (int i = 0; i < 2; i++) {
        q[i] = clCreateCommandQueue(ctx, dev, 0, &err);
        if (err)
            return 3;
        buf[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                sizeof(init), init, &err);
        if (err)
            return 3;
        /* a kernel object per queue: threads set arguments at once */
        kwork[i] = clCreateKernel(p, "work", &err);
        kfixed[i] = clCreateKernel(p, "fixed", &err);
    }
    kpost = clCreateKernel(p, "post", &err);
    return err ? 3 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || strlen(argv[1]) != 1 || !strchr("abcd", argv[1][0]) ||
        !(atof(argv[2]) > 0)) {
        fprintf(stderr, "usage: proj_cl a|b|c|d W\n");
        return 2;
    }
    const char *e = getenv("PROJ_MS");
    if (e && atof(e) > 0)
        UNIT = (uint64_t)(atof(e) * 1e6);
    if ((e = getenv("PROJ_ITERS")) && atoi(e) > 0)
        N = atoi(e);
    if ((e = getenv("PROJ_CL_UNIT")) && atof(e) > 0)
        U_ITERS = atof(e);
    W = atof(argv[2]);
    if (setup()) {
        fprintf(stderr, "proj_cl: OpenCL set-up failed\n");
        return 3;
    }
    launch(kfixed[0], 0, 0.1, 0, NULL, NULL); /* warm: first-launch costs */
    finish(0);
    int rc = 0;
    uint64_t t0 = now_ns();
    switch (argv[1][0]) {
    case 'a': case_a(); break;
    case 'b': case_b(); break;
    case 'c': case_c(); break;
    default: rc = case_d(); break;
    }
    uint64_t t1 = now_ns();
    if (failed) {
        fprintf(stderr, "proj_cl: an OpenCL call failed\n");
        return 3;
    }
    if (!rc)
        printf("elapsed_ns %llu\n", (unsigned long long)(t1 - t0));
    return rc;
}
