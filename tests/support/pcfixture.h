/*
 * pcfixture.h - a measurement directory with the PC samples of the H100
 * fixture (tests/fixtures/gpu-sm90): what the CUPTI backend would write
 * had it sampled kernels.cu's six kernels as Nsight Compute did
 * (ncu-samples.txt, made by ncu-samples.py from ncu-source-sass.csv):
 * the cubin saved under binaries/, one profile whose thread launched
 * each kernel, each sampled instruction a GPU_INSTR node beneath its
 * kernel with gpu.pc.samples, gpu.pc.latency_samples and
 * gpu.pc.stall.<reason>.
 */
#ifndef GPUPROF_TEST_PCFIXTURE_H
#define GPUPROF_TEST_PCFIXTURE_H

#include <stddef.h>
#include <stdint.h>

#define PCFIX_HASH "0123456789abcdef0123456789abcdef"

/* Writes `dir` (created) from the fixture directory `fixtures`, with the
 * samples multiplied by `scale` (1: as measured); 0 on success, -1 with a
 * message on stderr. The profile is DIR/h100-r0-p7.gpuprof. */
int pcfix_write(const char *fixtures, const char *dir, unsigned scale);

/* A kernel's launches, as the CUPTI backend records them (means per
 * launch here; the profile holds their sums over `launches`). */
typedef struct pcfix_launch {
    const char *kernel; /* the symbol: "_Z5chasePKiPii" */
    uint64_t launches, blocks, threads, registers, shared;
} pcfix_launch;

/* pcfix_write, and the launches of `n` kernels on their kernel nodes
 * (gpu.count, gpu.work_items, gpu.group_size, gpu.registers,
 * gpu.shared_bytes); with `h100`, the profile describes CUDA device 0 as
 * the H100 that measured the fixture (132 SMs, compute capability 9.0,
 * 2048 threads, 32 blocks, 65536 registers and 228 KiB of shared memory
 * per SM, 1 KiB of it reserved per block). */
int pcfix_write_launches(const char *fixtures, const char *dir,
                         unsigned scale, const pcfix_launch *l, size_t n,
                         int h100);

#endif
