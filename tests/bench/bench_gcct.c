/*
 * bench_gcct.c - `make bench`: gpu_cct_samples_per_s, how many sampled GPU
 * instructions (GPU_INSTR nodes: one per instruction a kernel launch's PC
 * samples hit) per second `gpuprof analyze` (gpuprof_an_analysis_run, one
 * thread) turns into database values with their GPU calling contexts
 * rebuilt (agg/an_gcct.c: call graph, paths and the exact split per
 * kernel node, then pass 2 and 3). The input: 256 processes, each the H100
 * fixture's six kernels with Nsight Compute's samples (tests/support/
 * pcfixture.h, 508 instructions); the cubin is listed once (the fixture's
 * nvdisasm stand-in). gpu_cct_off_samples_per_s is the same analysis
 * without nvdisasm (instructions as lines beneath their kernels): the
 * baseline of this run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "gpuprof_analysis.h"
#include "io/io.h"
#include "support/pcfixture.h"

#define RUNS 7
#define PROCS 256

static double analyze_s(const char *m, const char *db)
{
    gpuprof_an_analysis *an;
    double t0 = bench_now_s();
    if (gpuprof_an_analysis_new(&an) || gpuprof_an_analysis_add_input(an, m) ||
        gpuprof_an_analysis_set_output(an, db) || gpuprof_an_analysis_run(an)) {
        fprintf(stderr, "bench_gcct: %s\n", gpuprof_an_last_error());
        exit(1);
    }
    double t = bench_now_s() - t0;
    gpuprof_an_analysis_free(an);
    return t;
}

/* GPU instruction nodes of the profile at `path`. */
static uint64_t instructions(const char *path)
{
    gpuprof__io_profile *p;
    char err[256];
    if (gpuprof__io_read_file(path, &p, err, sizeof(err))) {
        fprintf(stderr, "bench_gcct: %s\n", err);
        exit(1);
    }
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        n += p->nodes[i].kind == GPUPROF_IO_NODE_GPU_INSTR;
    gpuprof__io_profile_free(p);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/gpuprof-bench-gcct-XXXXXX", m[64], db[64], one[128],
         cmd[512];
    if (!mkdtemp(dir))
        return 1;
    snprintf(m, sizeof(m), "%s/m", dir);
    snprintf(db, sizeof(db), "%s/db", dir);
    snprintf(one, sizeof(one), "%s/h100-r0-p7.gpuprof", m);
    if (pcfix_write(FIXTURES, m, 1))
        return 1;
    uint64_t n = instructions(one) * PROCS;
    for (int i = 1; i < PROCS; i++) {
        snprintf(cmd, sizeof(cmd), "cp %s %s/h100-r%d-p%d.gpuprof", one, m, i,
                 100 + i);
        if (system(cmd))
            return 1;
    }
    double on[RUNS], off[RUNS];
    for (int i = 0; i < RUNS; i++) {
        setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
        on[i] = analyze_s(m, db);
        setenv("GPUPROF_NVDISASM", "/nonexistent", 1);
        off[i] = analyze_s(m, db);
    }
    printf("BENCH gpu_cct_samples_per_s %.0f instructions/s\n",
           (double)n / bench_median(on, RUNS));
    printf("BENCH gpu_cct_off_samples_per_s %.0f instructions/s\n",
           (double)n / bench_median(off, RUNS));
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
