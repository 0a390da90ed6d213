/*
 * examples/cuda/event_gate.h - CUDA events that time kernels, not the host.
 *
 * Events recorded around a launch on an idle stream measure more than the
 * kernel: the start event completes at once, and the kernel follows only
 * when the host has made the launch call (microseconds of launch latency,
 * and on the first launch of a module with lazy loading, the loading:
 * milliseconds). The gate holds a stream with a host function until the
 * host has queued all the work to time; then events and kernels run back
 * to back on the device.
 *
 *   load_kernel((const void *)k);     each kernel, before closing a gate:
 *                                     loads its module now (lazily loaded
 *                                     modules may otherwise load, and wait
 *                                     for the device, behind the gate)
 *   gate_close(&g, stream);  ...queue events and launches...  gate_open(&g);
 *
 * Kernel-serialized PC sampling (GPUPROF_CUPTI_PC_SAMPLING set, any mode
 * but continuous) waits for each kernel inside its launch call, which a
 * held stream would never run: there, and with EXAMPLE_GATE=0, the gate
 * does nothing (the event times then include the launch latency).
 * Include after CUDA_CHECK.
 */
#ifndef EXAMPLES_CUDA_EVENT_GATE_H
#define EXAMPLES_CUDA_EVENT_GATE_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct event_gate {
    int open;  /* set by the host, read by the host function */
    int held;  /* gate_close held a stream */
} event_gate;

static int gate_wanted(void)
{
    const char *g = getenv("EXAMPLE_GATE");
    if (g && !strcmp(g, "0"))
        return 0;
    const char *pcs = getenv("GPUPROF_CUPTI_PC_SAMPLING");
    const char *mode = getenv("GPUPROF_CUPTI_PC_SAMPLING_MODE");
    int serialized = pcs && *pcs && strcmp(pcs, "0") &&
                     !(mode && !strcmp(mode, "continuous"));
    return !serialized;
}

/* On a CUDA thread: waits for gate_open (10 s at most: never a hang). */
static void CUDART_CB gate_wait(void *arg)
{
    event_gate *g = (event_gate *)arg;
    struct timespec nap = {0, 20000}, t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE)) {
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) {
            fprintf(stderr, "event_gate: not opened in 10 s: going on\n");
            return;
        }
    }
}

static void load_kernel(const void *kernel)
{
    cudaFuncAttributes a;
    CUDA_CHECK(cudaFuncGetAttributes(&a, kernel));
}

/* Holds `s` until gate_open; one gate may hold several streams. */
static void gate_close(event_gate *g, cudaStream_t s)
{
    __atomic_store_n(&g->open, 0, __ATOMIC_RELEASE);
    if (!gate_wanted())
        return;
    CUDA_CHECK(cudaLaunchHostFunc(s, gate_wait, g));
    g->held = 1;
}

static void gate_open(event_gate *g)
{
    __atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
    g->held = 0;
}

#endif
