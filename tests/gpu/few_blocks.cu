/*
 * few_blocks.cu - a kernel launched with fewer blocks than the GPU has
 * SMs, for GPA's Block Increase (tools/gpu-session.sh;
 * analysis/gpu/an_advise_par.c). Each thread runs four independent FMA
 * chains (issue-bound: an SM's schedulers are kept busy), in half as many
 * 1024-thread blocks as there are SMs: half the SMs idle. `few_blocks
 * fixed` launches the same threads in blocks of 512, one per SM, the
 * launch the advice should suggest.
 */
#include "parallelism.h"

#define ITERS 4096

__global__ void fma_few(float *out)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = 1.0f + i * 1e-9f, x = 1, y = 2, z = 3, w = 4;
    for (int k = 0; k < ITERS; k++) {
        x = x * a + 0.5f;
        y = y * a + 0.25f;
        z = z * a + 0.125f;
        w = w * a + 0.0625f;
    }
    out[i] = x + y + z + w;
}

static float *out_d;

static void launch(int blocks, int threads)
{
    fma_few<<<blocks, threads>>>(out_d);
}

int main(int argc, char **argv)
{
    int sms = par_sms(), fixed = argc > 1 && argv[1][0] == 'f';
    int total = sms / 2 * 1024; /* half the SMs' worth of 1024-thread blocks */
    CK(cudaMalloc(&out_d, total * sizeof(float)));
    int threads = fixed ? 512 : 1024;
    par_time("fma_few", total / threads, threads, launch, 20);
    CK(cudaFree(out_d));
    return 0;
}
