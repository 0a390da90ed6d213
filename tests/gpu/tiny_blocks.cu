/*
 * tiny_blocks.cu - a kernel launched with blocks of one warp, for GPA's
 * Thread Increase (tools/gpu-session.sh; analysis/gpu/an_advise_par.c).
 * Each thread follows a chain of dependent loads through a random cycle
 * (latency-bound: more resident warps overlap more loads). An SM holds at
 * most 32 blocks (16 before Volta-class limits), so 32-thread blocks leave
 * half its warp slots empty; `tiny_blocks fixed` launches the same threads
 * in blocks of 64, the launch the advice should suggest.
 */
#include "parallelism.h"

#define STEPS 64
#define CHAIN (1 << 24) /* entries: 64 MiB, far beyond the L2 */

__global__ void chase_tiny(const unsigned *next, unsigned *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned j = (i * 2654435761u) % CHAIN;
    for (int k = 0; k < STEPS; k++)
        j = next[j];
    out[i] = j;
}

static unsigned *next_d, *out_d;

static void launch(int blocks, int threads)
{
    chase_tiny<<<blocks, threads>>>(next_d, out_d);
}

int main(int argc, char **argv)
{
    int sms = par_sms(), threads = argc > 1 && argv[1][0] == 'f' ? 64 : 32;
    int total = sms * 512 * 32; /* 512 one-warp blocks an SM */
    unsigned *next = (unsigned *)malloc(CHAIN * sizeof(unsigned));
    if (!next)
        return 1;
    /* one random cycle through every entry (Sattolo's shuffle) */
    for (unsigned i = 0; i < CHAIN; i++)
        next[i] = i;
    unsigned long long s = 88172645463325252ull;
    for (unsigned i = CHAIN - 1; i > 0; i--) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        unsigned k = (unsigned)(s % i), t = next[i];
        next[i] = next[k], next[k] = t;
    }
    CK(cudaMalloc(&next_d, CHAIN * sizeof(unsigned)));
    CK(cudaMalloc(&out_d, total * sizeof(unsigned)));
    CK(cudaMemcpy(next_d, next, CHAIN * sizeof(unsigned),
                  cudaMemcpyHostToDevice));
    par_time("chase_tiny", total / threads, threads, launch, 5);
    CK(cudaFree(next_d));
    CK(cudaFree(out_d));
    free(next);
    return 0;
}
