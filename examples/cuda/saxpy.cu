/*
 * examples/cuda/saxpy.cu - the smallest CUDA program measured by
 * libgpuprof: one kernel, launched a known number of times.
 *
 * Copy from here: call gpuprof_init first thing in main (the CUPTI backend
 * then sees every CUDA call the program makes), put user regions around the
 * phases you care about, and call gpuprof_finalize after the last CUDA work
 * has finished (it collects CUPTI's last records and writes the profile).
 *
 *   build:  nvcc -g -lineinfo saxpy.cu -lgpuprof
 *   run:    GPUPROF_BACKENDS=cupti ./a.out
 *           gpuprof report gpuprof-a.out-measurements
 *
 * What the report shows: beneath the region "saxpy" and the call path
 * main -> run_saxpy, a placeholder "<kernel launch>" with the kernel
 * beneath it (CUPTI's name for it, mangled: _Z5saxpyifPKfPf) with
 * gpu.count = LAUNCHES and its device time in gpu.time; "<copy h2d>" and
 * "<copy d2h>" with their bytes beneath the region "copies"; "<alloc>" and
 * "<free>" for cudaMalloc and cudaFree.
 *
 * It prints lines for tests/scripts/cupti-gpu.sh (which checks the
 * profile against them):
 *   BACKEND cupti active | unavailable <why> | absent | off
 *   KERNEL <name> launches <n>     launches made
 *   EVENT_MS <name> <ms>           their device time, summed, measured by
 *                                  CUDA events around each launch, all
 *                                  queued before the device starts them
 *                                  (event_gate.h: no launch latency, no
 *                                  lazy module loading in the events)
 *   WHERE <name> region <r> function <f>   where they were launched
 *   OPS <copy_h2d|copy_d2h|sync> <count> [bytes <n>]   other operations
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <gpuprof.h>

#define N (1 << 24) /* 16 Mi floats: 64 MiB per vector */
#define LAUNCHES 10

/* Every CUDA call is checked; a failure names the call and stops. */
#define CUDA_CHECK(call) cuda_check((call), #call, __LINE__)
static void cuda_check(cudaError_t rc, const char *what, int line)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "saxpy: line %d: %s: %s (%s)\n", line, what,
                cudaGetErrorName(rc), cudaGetErrorString(rc));
        exit(1);
    }
}

#include "event_gate.h"

static void check(gpuprof_status st, const char *what)
{
    if (st != GPUPROF_OK) {
        fprintf(stderr, "saxpy: %s: %s (%s)\n", what, gpuprof_strerror(st),
                gpuprof_last_error());
        exit(1);
    }
}

/* Whether the CUPTI backend measures this run, in one line. */
static void print_backend(void)
{
    char why[256] = "";
    gpuprof_status st = gpuprof_backend_status("cupti", why, sizeof(why));
    if (st == GPUPROF_OK)
        printf("BACKEND cupti active\n");
    else if (st == GPUPROF_E_UNAVAILABLE)
        printf("BACKEND cupti unavailable %s\n", why);
    else if (st == GPUPROF_E_NOTFOUND) /* built without CUDA's headers */
        printf("BACKEND cupti absent\n");
    else /* GPUPROF_BACKENDS does not name it */
        printf("BACKEND cupti off\n");
}

__global__ void saxpy(int n, float a, const float *x, float *y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

/* LAUNCHES launches of saxpy, each between two CUDA events, queued behind a
 * gate; returns the sum of their elapsed times in ms. */
static float run_saxpy(const float *x, float *y)
{
    cudaEvent_t start[LAUNCHES], stop[LAUNCHES];
    for (int i = 0; i < LAUNCHES; i++) {
        CUDA_CHECK(cudaEventCreate(&start[i]));
        CUDA_CHECK(cudaEventCreate(&stop[i]));
    }
    load_kernel((const void *)saxpy);
    event_gate gate;
    gate_close(&gate, 0);
    for (int i = 0; i < LAUNCHES; i++) {
        CUDA_CHECK(cudaEventRecord(start[i]));
        saxpy<<<1024, 256>>>(N, 0.5f, x, y);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop[i]));
    }
    gate_open(&gate);
    CUDA_CHECK(cudaDeviceSynchronize());
    float total = 0;
    for (int i = 0; i < LAUNCHES; i++) {
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));
        total += ms;
        CUDA_CHECK(cudaEventDestroy(start[i]));
        CUDA_CHECK(cudaEventDestroy(stop[i]));
    }
    return total;
}

int main(void)
{
    check(gpuprof_init(NULL), "init"); /* options from GPUPROF_* variables */
    print_backend();

    float *hx = (float *)malloc(N * sizeof(float));
    float *hy = (float *)malloc(N * sizeof(float));
    if (!hx || !hy) {
        fprintf(stderr, "saxpy: out of memory\n");
        return 1;
    }
    for (int i = 0; i < N; i++) {
        hx[i] = 2.0f;
        hy[i] = 1.0f;
    }
    float *x, *y;
    CUDA_CHECK(cudaMalloc(&x, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, N * sizeof(float)));

    check(gpuprof_region_begin("copies"), "begin copies");
    CUDA_CHECK(cudaMemcpy(x, hx, N * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y, hy, N * sizeof(float), cudaMemcpyHostToDevice));
    check(gpuprof_region_end("copies"), "end copies");

    check(gpuprof_region_begin("saxpy"), "begin saxpy");
    float ms = run_saxpy(x, y);
    check(gpuprof_region_end("saxpy"), "end saxpy");

    check(gpuprof_region_begin("copies"), "begin copies");
    CUDA_CHECK(cudaMemcpy(hy, y, N * sizeof(float), cudaMemcpyDeviceToHost));
    check(gpuprof_region_end("copies"), "end copies");

    /* y = 1 + LAUNCHES * 0.5 * 2 everywhere. */
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += hy[i] != 1.0f + LAUNCHES;
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    free(hx);
    free(hy);

    char path[4096];
    check(gpuprof_output_path(path, sizeof(path)), "output path");
    check(gpuprof_finalize(), "finalize"); /* after the last CUDA work */

    printf("KERNEL saxpy launches %d\n", LAUNCHES);
    printf("EVENT_MS saxpy %.6f\n", ms);
    printf("WHERE saxpy region saxpy function run_saxpy\n");
    printf("OPS copy_h2d 2 bytes %llu\n", 2ull * N * sizeof(float));
    printf("OPS copy_d2h 1 bytes %llu\n", 1ull * N * sizeof(float));
    printf("OPS sync 1\n"); /* the cudaDeviceSynchronize in run_saxpy */
    printf("saxpy: %d wrong values: %s\n", bad, bad ? "FAILED" : "ok");
    printf("saxpy: profile written to %s\n", path);
    return bad != 0;
}
