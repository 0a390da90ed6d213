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

#define PCFIX_HASH "0123456789abcdef0123456789abcdef"

/* Writes `dir` (created) from the fixture directory `fixtures`, with the
 * samples multiplied by `scale` (1: as measured); 0 on success, -1 with a
 * message on stderr. The profile is DIR/h100-r0-p7.gpuprof. */
int pcfix_write(const char *fixtures, const char *dir, unsigned scale);

#endif
