/*
 * parallelism.h - what tiny_blocks.cu and few_blocks.cu share: checked
 * CUDA calls, the device's SM count, and the time of a kernel launched
 * over and over (CUDA events, after a warm-up launch), printed as
 *
 *   DEVICE <name> sms <n>
 *   CONFIG <kernel> blocks <b> threads <t>
 *   MS <kernel> <ms per launch>
 *
 * for tools/gpu-session.sh, which compares the estimated speedup of
 * `gpuprof advise` (run once under `gpuprof run --pc-sampling`) with the
 * one achieved by the suggested launch ("fixed" as the argument).
 */
#ifndef GPUPROF_TESTS_GPU_PARALLELISM_H
#define GPUPROF_TESTS_GPU_PARALLELISM_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(call) par_check((call), #call, __LINE__)
static void par_check(cudaError_t rc, const char *what, int line)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "line %d: %s: %s\n", line, what, cudaGetErrorString(rc));
        exit(1);
    }
}

static int par_sms(void)
{
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("DEVICE %s sms %d\n", p.name, p.multiProcessorCount);
    return p.multiProcessorCount;
}

/* Runs launch() `reps` times after one warm-up; prints ms per launch. */
static void par_time(const char *name, int blocks, int threads,
                     void (*launch)(int blocks, int threads), int reps)
{
    cudaEvent_t a, b;
    printf("CONFIG %s blocks %d threads %d\n", name, blocks, threads);
    launch(blocks, threads);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a));
    for (int i = 0; i < reps; i++)
        launch(blocks, threads);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    printf("MS %s %.4f\n", name, ms / reps);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
}

#endif
