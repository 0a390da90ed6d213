/*
 * examples/cuda/graph.cu - a time-stepping loop whose step is a CUDA graph,
 * measured by libgpuprof's CUPTI backend.
 *
 * One step of a 1-D heat equation (zero boundaries) is recorded once from a
 * stream with stream capture: clear the energy accumulator (a memset node),
 * four `diffuse` kernels (the field goes a -> b -> a -> b -> a), the kernel
 * `energy` (sum of squares into the accumulator) and a copy of the energy
 * to the host (a memcpy node). The graph is instantiated and launched STEPS
 * times; the host reads the energy after each launch (it never grows: the
 * check at the end).
 *
 *   build:  nvcc -g -lineinfo graph.cu -lgpuprof
 *   run:    GPUPROF_BACKENDS=cupti ./a.out
 *           gpuprof report gpuprof-a.out-measurements
 *
 * What the report shows: the kernels of a graph launch are attributed to
 * the cudaGraphLaunch call that ran them -- region "timesteps", call path
 * main -> run_steps -- beneath its "<kernel launch>" placeholder: diffuse
 * with gpu.count = 4 * STEPS and energy with gpu.count = STEPS, each with
 * its device time. The launches made while capturing ran nothing on the
 * device: the region "capture" has no kernels. The graph's memset and copy
 * share the launch's correlation, so their time and bytes are on the same
 * placeholder.
 *
 * Device time per kernel from CUDA events: an event recorded with
 * cudaEventRecordExternal during capture becomes an event-record node of
 * the graph, so each kernel node sits between two such nodes and
 * cudaEventElapsedTime gives its time after every launch.
 *
 * Lines for tests/scripts/cupti-gpu.sh:
 *   BACKEND cupti active | unavailable <why> | absent | off
 *   KERNEL <name> launches <n>       kernels executed (graph nodes x STEPS)
 *   EVENT_MS <name> <ms>
 *   WHERE <name> region <r> function <f>
 *   OPS <copy_h2d|sync> <count> [bytes <n>]
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <gpuprof.h>

#define N (1 << 24) /* cells: 64 MiB per field */
#define STEPS 20
#define DIFFUSE_PER_STEP 4 /* even: the step ends in field a */
#define THREADS 256
#define ENERGY_BLOCKS 256

#define CUDA_CHECK(call) cuda_check((call), #call, __LINE__)
static void cuda_check(cudaError_t rc, const char *what, int line)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "graph: line %d: %s: %s (%s)\n", line, what,
                cudaGetErrorName(rc), cudaGetErrorString(rc));
        exit(1);
    }
}

static void check(gpuprof_status st, const char *what)
{
    if (st != GPUPROF_OK) {
        fprintf(stderr, "graph: %s: %s (%s)\n", what, gpuprof_strerror(st),
                gpuprof_last_error());
        exit(1);
    }
}

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

/* One explicit step of u_t = u_xx, u = 0 beyond both ends. */
__global__ void diffuse(const float *in, float *out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x) {
        float l = i > 0 ? in[i - 1] : 0.0f, r = i < n - 1 ? in[i + 1] : 0.0f;
        out[i] = in[i] + 0.25f * (l - 2.0f * in[i] + r);
    }
}

/* *sum += sum of u^2 (cleared by the memset node before). */
__global__ void energy(const float *u, int n, float *sum)
{
    __shared__ float s[THREADS];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        v += u[i] * u[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(sum, s[0]);
}

/* Event pairs around the graph's kernel nodes: DIFFUSE_PER_STEP diffuse,
 * then one energy. */
#define TIMED (DIFFUSE_PER_STEP + 1)
static cudaEvent_t ev_start[TIMED], ev_stop[TIMED];

/* Records one step into a graph and instantiates it. */
static cudaGraphExec_t capture_step(cudaStream_t s, float *a, float *b,
                                    float *d_energy, float *h_energy)
{
    int grid = (N + THREADS - 1) / THREADS;
    cudaGraph_t graph;
    /* ThreadLocal: only this thread must not make unsafe calls meanwhile. */
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_CHECK(cudaMemsetAsync(d_energy, 0, sizeof(float), s));
    for (int k = 0; k < DIFFUSE_PER_STEP; k++) {
        CUDA_CHECK(
            cudaEventRecordWithFlags(ev_start[k], s, cudaEventRecordExternal));
        if (k % 2 == 0)
            diffuse<<<grid, THREADS, 0, s>>>(a, b, N);
        else
            diffuse<<<grid, THREADS, 0, s>>>(b, a, N);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(
            cudaEventRecordWithFlags(ev_stop[k], s, cudaEventRecordExternal));
    }
    int e = DIFFUSE_PER_STEP;
    CUDA_CHECK(
        cudaEventRecordWithFlags(ev_start[e], s, cudaEventRecordExternal));
    energy<<<ENERGY_BLOCKS, THREADS, 0, s>>>(a, N, d_energy);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(
        cudaEventRecordWithFlags(ev_stop[e], s, cudaEventRecordExternal));
    CUDA_CHECK(cudaMemcpyAsync(h_energy, d_energy, sizeof(float),
                               cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph)); /* the executable graph stays */
    return exec;
}

/* STEPS launches of the graph; the energy after each in energies[], the
 * kernels' event times summed into ms_diffuse and ms_energy. */
static void run_steps(cudaGraphExec_t exec, cudaStream_t s,
                      const float *h_energy, float *energies,
                      double *ms_diffuse, double *ms_energy)
{
    for (int step = 0; step < STEPS; step++) {
        CUDA_CHECK(cudaGraphLaunch(exec, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        energies[step] = *h_energy;
        /* The events are recorded again by the next launch: read now. */
        for (int k = 0; k < TIMED; k++) {
            float ms;
            CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start[k], ev_stop[k]));
            *(k < DIFFUSE_PER_STEP ? ms_diffuse : ms_energy) += ms;
        }
    }
}

int main(void)
{
    check(gpuprof_init(NULL), "init"); /* options from GPUPROF_* variables */
    print_backend();

    check(gpuprof_region_begin("setup"), "begin setup");
    float *host = (float *)malloc(N * sizeof(float));
    if (!host) {
        fprintf(stderr, "graph: out of memory\n");
        return 1;
    }
    for (int i = 0; i < N; i++) /* a square wave: much to smooth */
        host[i] = i % 64 < 32 ? 1.0f : 0.0f;
    float *a, *b, *d_energy, *h_energy;
    CUDA_CHECK(cudaMalloc(&a, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&b, N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_energy, sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&h_energy, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(a, host, N * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int k = 0; k < TIMED; k++) {
        CUDA_CHECK(cudaEventCreate(&ev_start[k]));
        CUDA_CHECK(cudaEventCreate(&ev_stop[k]));
    }
    check(gpuprof_region_end("setup"), "end setup");

    check(gpuprof_region_begin("capture"), "begin capture");
    cudaGraphExec_t exec = capture_step(s, a, b, d_energy, h_energy);
    check(gpuprof_region_end("capture"), "end capture");

    check(gpuprof_region_begin("timesteps"), "begin timesteps");
    float energies[STEPS];
    double ms_diffuse = 0, ms_energy = 0;
    run_steps(exec, s, h_energy, energies, &ms_diffuse, &ms_energy);
    check(gpuprof_region_end("timesteps"), "end timesteps");

    /* The scheme never adds energy (up to float rounding of the sums). */
    int ok = energies[STEPS - 1] < energies[0];
    for (int i = 1; i < STEPS; i++)
        ok &= energies[i] <= energies[i - 1] * (1 + 1e-5f);

    CUDA_CHECK(cudaGraphExecDestroy(exec));
    for (int k = 0; k < TIMED; k++) {
        CUDA_CHECK(cudaEventDestroy(ev_start[k]));
        CUDA_CHECK(cudaEventDestroy(ev_stop[k]));
    }
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(d_energy));
    CUDA_CHECK(cudaFreeHost(h_energy));
    free(host);
    char path[4096];
    check(gpuprof_output_path(path, sizeof(path)), "output path");
    check(gpuprof_finalize(), "finalize"); /* after the last CUDA work */

    printf("KERNEL diffuse launches %d\n", STEPS * DIFFUSE_PER_STEP);
    printf("EVENT_MS diffuse %.6f\n", ms_diffuse);
    printf("WHERE diffuse region timesteps function run_steps\n");
    printf("KERNEL energy launches %d\n", STEPS);
    printf("EVENT_MS energy %.6f\n", ms_energy);
    printf("WHERE energy region timesteps function run_steps\n");
    /* The upload in setup and the waits in run_steps; the graph's own
     * memset and copy belong to its launches (see above). */
    printf("OPS copy_h2d 1 bytes %llu\n", 1ull * N * sizeof(float));
    printf("OPS sync %d\n", STEPS);
    printf("graph: energy %.6g -> %.6g over %d launches: %s\n", energies[0],
           energies[STEPS - 1], STEPS, ok ? "ok" : "FAILED");
    printf("graph: profile written to %s\n", path);
    return !ok;
}
