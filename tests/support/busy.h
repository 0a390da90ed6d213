/*
 * busy.h - CPU work of a known length for the suites that sample it
 * (check_opencl, check_levelzero): busy_cpu spins until this thread has
 * used `ns` of CPU time (CLOCK_THREAD_CPUTIME_ID). Exported and never
 * inlined: the cases find it on the samples' call paths by name (dladdr).
 */
#ifndef GPUPROF_TEST_BUSY_H
#define GPUPROF_TEST_BUSY_H

#include <stdint.h>

double busy_cpu(uint64_t ns);

#endif
