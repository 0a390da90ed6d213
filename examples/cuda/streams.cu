/*
 * examples/cuda/streams.cu - a CUDA program that keeps several streams busy,
 * measured by libgpuprof's CUPTI backend.
 *
 * A long vector is cut into CHUNKS chunks handed round-robin to STREAMS
 * CUDA streams. On its stream, each chunk is copied to the device
 * (cudaMemcpyAsync from pinned memory), its partial sums are cleared
 * (cudaMemsetAsync), the kernel scale_bias runs twice and block_sums once,
 * and the partial sums are copied back. The whole pipeline runs ROUNDS
 * times; after each round the host waits for every stream
 * (cudaStreamSynchronize), and at the end for the device
 * (cudaDeviceSynchronize) before it adds up the partial sums.
 *
 *   build:  nvcc -g -lineinfo streams.cu -lgpuprof
 *   run:    GPUPROF_BACKENDS=cupti GPUPROF_TRACE=1 ./a.out
 *           gpuprof report gpuprof-a.out-measurements
 *
 * What the report shows (see the constants below for the numbers):
 *   region "pipeline" > "enqueue": the call path main -> enqueue_chunk, and
 *     beneath it "<kernel launch>" with the kernels scale_bias (2 per chunk
 *     and round) and block_sums (1 per chunk and round), "<copy h2d>",
 *     "<copy d2h>" and "<memset>" with their counts and bytes. Launches are
 *     asynchronous: the device time is attributed to where the work was
 *     queued, not to where the host waited for it.
 *   region "pipeline" > "wait": "<sync>" for the stream synchronizations,
 *     with the time the host spent waiting (api.time, blame.cpu_idle).
 *   region "verify": the device synchronization.
 *   With GPUPROF_TRACE=1, `gpuprof dump <profile>.gptrace` lists the
 *   STREAMS streams, each with its copies, memsets and kernels in time
 *   order; `gpuprof export --chrome` draws them as a timeline.
 *
 * Kernel names in profiles are CUPTI's, mangled (_Z10scale_biasPfiffi);
 * the lines printed below use the short names. Lines for
 * tests/scripts/cupti-gpu.sh:
 *   BACKEND cupti active | unavailable <why> | absent | off
 *   KERNEL <name> launches <n>
 *   EVENT_MS <name> <ms>      device time per kernel name from CUDA events
 *                             recorded around each launch on its stream;
 *                             each round's streams are held until all its
 *                             work is queued (event_gate.h), so an event
 *                             pair brackets its kernel, not the host's
 *                             launch calls in between
 *   WHERE <name> region <r> function <f>
 *   OPS <copy_h2d|copy_d2h|memset|sync> <count> [bytes <n>]
 *   STREAM_OPS <streams> <device operations on each stream>
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <gpuprof.h>

#define STREAMS 4
#define CHUNKS 16       /* 4 per stream */
#define CHUNK (1 << 20) /* floats per chunk: 4 MiB */
#define ROUNDS 2
#define THREADS 256 /* per block */
#define GRID 16     /* scale_bias' blocks */
#define BLOCKS 32   /* block_sums' blocks: partial sums per chunk */
#define REPS 256    /* scale_bias' work per element */
#define LAUNCHES (ROUNDS * CHUNKS * 3)

#define CUDA_CHECK(call) cuda_check((call), #call, __LINE__)
static void cuda_check(cudaError_t rc, const char *what, int line)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "streams: line %d: %s: %s (%s)\n", line, what,
                cudaGetErrorName(rc), cudaGetErrorString(rc));
        exit(1);
    }
}

#include "event_gate.h"

static void check(gpuprof_status st, const char *what)
{
    if (st != GPUPROF_OK) {
        fprintf(stderr, "streams: %s: %s (%s)\n", what, gpuprof_strerror(st),
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

/* The kernels use small grids (GRID, BLOCKS), so the four streams' kernels
 * fit on the device side by side and none waits for another's blocks to
 * finish: the events around a launch then bracket its own kernel only. */

/* x = a * x + b, reps times: enough arithmetic to take a while. */
__global__ void scale_bias(float *x, int n, float a, float b, int reps)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x) {
        float v = x[i];
        for (int r = 0; r < reps; r++)
            v = a * v + b;
        x[i] = v;
    }
}

/* partial[block] += sum of the elements this block strides over (the
 * partial sums were cleared by cudaMemsetAsync). */
__global__ void block_sums(const float *x, int n, float *partial)
{
    __shared__ float s[THREADS];
    float v = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += blockDim.x * gridDim.x)
        v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(&partial[blockIdx.x], s[0]);
}

/* ---- device time per kernel name, from CUDA events ------------------- */
enum { K_SCALE_BIAS, K_BLOCK_SUMS, NKERNELS };
static const char *const kernel_name[NKERNELS] = {"scale_bias", "block_sums"};

typedef struct timing {
    int kernel;
    cudaEvent_t start, stop;
} timing;
static timing timings[LAUNCHES];
static int ntimings;

/* Records the event before a launch on `s`; returns the launch's entry. */
static timing *timing_begin(int kernel, cudaStream_t s)
{
    if (ntimings == LAUNCHES) {
        fprintf(stderr, "streams: more launches than LAUNCHES\n");
        exit(1);
    }
    timing *t = &timings[ntimings++];
    t->kernel = kernel;
    CUDA_CHECK(cudaEventCreate(&t->start));
    CUDA_CHECK(cudaEventCreate(&t->stop));
    CUDA_CHECK(cudaEventRecord(t->start, s));
    return t;
}

static void timing_end(timing *t, cudaStream_t s)
{
    CUDA_CHECK(cudaGetLastError()); /* the launch itself */
    CUDA_CHECK(cudaEventRecord(t->stop, s));
}

/* After the device is idle: KERNEL and EVENT_MS lines. */
static void print_kernels(void)
{
    int n[NKERNELS] = {0};
    double ms[NKERNELS] = {0};
    for (int i = 0; i < ntimings; i++) {
        float e;
        CUDA_CHECK(cudaEventElapsedTime(&e, timings[i].start, timings[i].stop));
        n[timings[i].kernel]++;
        ms[timings[i].kernel] += e;
        CUDA_CHECK(cudaEventDestroy(timings[i].start));
        CUDA_CHECK(cudaEventDestroy(timings[i].stop));
    }
    for (int k = 0; k < NKERNELS; k++) {
        printf("KERNEL %s launches %d\n", kernel_name[k], n[k]);
        printf("EVENT_MS %s %.6f\n", kernel_name[k], ms[k]);
        printf("WHERE %s region enqueue function enqueue_chunk\n",
               kernel_name[k]);
    }
}

/* ---- the pipeline ---------------------------------------------------- */
typedef struct lane { /* one stream and the device memory it reuses */
    cudaStream_t stream;
    float *x, *partial;
} lane;

/* Queues one chunk's work on its lane's stream; returns at once. */
static void enqueue_chunk(lane *l, const float *host_in, float *host_partial)
{
    cudaStream_t s = l->stream;
    CUDA_CHECK(cudaMemcpyAsync(l->x, host_in, CHUNK * sizeof(float),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemsetAsync(l->partial, 0, BLOCKS * sizeof(float), s));
    for (int k = 0; k < 2; k++) {
        timing *t = timing_begin(K_SCALE_BIAS, s);
        scale_bias<<<GRID, THREADS, 0, s>>>(l->x, CHUNK, 0.999f, 0.001f, REPS);
        timing_end(t, s);
    }
    timing *t = timing_begin(K_BLOCK_SUMS, s);
    block_sums<<<BLOCKS, THREADS, 0, s>>>(l->x, CHUNK, l->partial);
    timing_end(t, s);
    CUDA_CHECK(cudaMemcpyAsync(host_partial, l->partial, BLOCKS * sizeof(float),
                               cudaMemcpyDeviceToHost, s));
}

/* What the device computes, summed over n inputs whose sum is sum_x0:
 * 2 * REPS steps of v = a v + b take x0 to a^k x0 + b (1 - a^k) / (1 - a). */
static double expected_sum(double sum_x0, double n)
{
    double ak = pow(0.999, 2.0 * REPS);
    return ak * sum_x0 + n * 0.001 * (1 - ak) / (1 - 0.999);
}

int main(void)
{
    check(gpuprof_init(NULL), "init"); /* options from GPUPROF_* variables */
    print_backend();

    check(gpuprof_region_begin("setup"), "begin setup");
    float *in, *partial; /* pinned: asynchronous copies need it */
    CUDA_CHECK(cudaMallocHost(&in, (size_t)CHUNKS * CHUNK * sizeof(float)));
    CUDA_CHECK(cudaMallocHost(&partial, CHUNKS * BLOCKS * sizeof(float)));
    for (size_t i = 0; i < (size_t)CHUNKS * CHUNK; i++)
        in[i] = (float)(i % 1000) / 1000.0f;
    lane lanes[STREAMS];
    for (int s = 0; s < STREAMS; s++) {
        CUDA_CHECK(
            cudaStreamCreateWithFlags(&lanes[s].stream, cudaStreamNonBlocking));
        CUDA_CHECK(cudaMalloc(&lanes[s].x, CHUNK * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&lanes[s].partial, BLOCKS * sizeof(float)));
    }
    check(gpuprof_region_end("setup"), "end setup");

    load_kernel((const void *)scale_bias);
    load_kernel((const void *)block_sums);
    check(gpuprof_region_begin("pipeline"), "begin pipeline");
    for (int r = 0; r < ROUNDS; r++) {
        event_gate gate;
        for (int s = 0; s < STREAMS; s++)
            gate_close(&gate, lanes[s].stream);
        check(gpuprof_region_begin("enqueue"), "begin enqueue");
        for (int c = 0; c < CHUNKS; c++)
            enqueue_chunk(&lanes[c % STREAMS], in + (size_t)c * CHUNK,
                          partial + c * BLOCKS);
        check(gpuprof_region_end("enqueue"), "end enqueue");
        gate_open(&gate);
        check(gpuprof_region_begin("wait"), "begin wait");
        for (int s = 0; s < STREAMS; s++)
            CUDA_CHECK(cudaStreamSynchronize(lanes[s].stream));
        check(gpuprof_region_end("wait"), "end wait");
    }
    check(gpuprof_region_end("pipeline"), "end pipeline");

    check(gpuprof_region_begin("verify"), "begin verify");
    CUDA_CHECK(cudaDeviceSynchronize());
    double got = 0, sum_in = 0;
    for (int i = 0; i < CHUNKS * BLOCKS; i++)
        got += partial[i];
    for (size_t i = 0; i < (size_t)CHUNKS * CHUNK; i++)
        sum_in += in[i];
    double want = expected_sum(sum_in, (double)CHUNKS * CHUNK);
    int ok = fabs(got - want) <= 1e-3 * fabs(want);
    check(gpuprof_region_end("verify"), "end verify");

    print_kernels();
    for (int s = 0; s < STREAMS; s++) {
        CUDA_CHECK(cudaFree(lanes[s].x));
        CUDA_CHECK(cudaFree(lanes[s].partial));
        CUDA_CHECK(cudaStreamDestroy(lanes[s].stream));
    }
    CUDA_CHECK(cudaFreeHost(in));
    CUDA_CHECK(cudaFreeHost(partial));
    char path[4096];
    check(gpuprof_output_path(path, sizeof(path)), "output path");
    check(gpuprof_finalize(), "finalize"); /* after the last CUDA work */

    int copies = ROUNDS * CHUNKS;
    printf("OPS copy_h2d %d bytes %llu\n", copies,
           (unsigned long long)copies * CHUNK * sizeof(float));
    printf("OPS copy_d2h %d bytes %llu\n", copies,
           (unsigned long long)copies * BLOCKS * sizeof(float));
    printf("OPS memset %d bytes %llu\n", copies,
           (unsigned long long)copies * BLOCKS * sizeof(float));
    printf("OPS sync %d\n", ROUNDS * STREAMS + 1);
    /* Per stream and round: CHUNKS / STREAMS chunks of 6 operations. */
    printf("STREAM_OPS %d %d\n", STREAMS, ROUNDS * (CHUNKS / STREAMS) * 6);
    printf("streams: sum %.6g, expected %.6g: %s\n", got, want,
           ok ? "ok" : "FAILED");
    printf("streams: profile written to %s\n", path);
    return !ok;
}
