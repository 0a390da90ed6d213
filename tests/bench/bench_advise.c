/*
 * bench_advise.c - `make bench`: advise_kernels_per_s, how many kernels
 * per second gpuprof_an_db_advise advises on the H100 fixture
 * (tests/support/pcfixture.h: six kernels of kernels.cu with Nsight
 * Compute's stall samples per instruction): reading the samples back
 * from the profile, listing the cubin (nvdisasm: here the fixture's
 * stand-in, which decompresses the listing nvdisasm printed; a real
 * nvdisasm takes longer), parsing, CFG, loops, def-use, blame, call
 * graph and the optimizers. Also advise_blame_kernels_per_s: the same
 * with the listing parsed once (the analysis without nvdisasm's run).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analysis/gpu/an_advise.h"
#include "../../analysis/base/an_internal.h"
#include "bench.h"
#include "gpuprof_analysis.h"
#include "support/pcfixture.h"

#define RUNS 9

static double advise_s(const gpuprof_an_db *db, uint32_t *kernels)
{
    double t0 = bench_now_s();
    gpuprof_an_advice *a;
    if (gpuprof_an_db_advise(db, 0, &a) != GPUPROF_OK) {
        fprintf(stderr, "bench_advise: %s\n", gpuprof_an_last_error());
        exit(1);
    }
    double t = bench_now_s() - t0;
    *kernels = gpuprof_an_advice_kernel_count(a);
    gpuprof_an_advice_free(a);
    return t;
}

/* The analysis of every kernel with one listing (no nvdisasm run). */
static double analysis_s(const gpuprof__sass_bin *bin, const char *profile)
{
    gpuprof_an_advice a = {0};
    double t0 = bench_now_s();
    if (gpuprof__adv_gather_file(profile, &a) != GPUPROF_OK)
        exit(1);
    gpuprof__an_cubin *lines = NULL;
    for (uint32_t k = 0; k < a.nk; k++)
        if (gpuprof__adv_kernel(&a.k[k], bin, &lines) != GPUPROF_OK)
            exit(1);
    double t = bench_now_s() - t0;
    gpuprof__an_cubin_free(lines);
    for (uint32_t k = 0; k < a.nk; k++) {
        gpuprof__adv_kernel_clear(&a.k[k]);
        free(a.k[k].name), free(a.k[k].binary), free(a.k[k].pc);
    }
    free(a.k);
    return t;
}

int main(void)
{
    char dir[] = "/tmp/gpuprof-bench-advise-XXXXXX", m[64], db_dir[64],
         profile[128], cmd[128];
    if (!mkdtemp(dir))
        return 1;
    snprintf(m, sizeof(m), "%s/m", dir);
    snprintf(db_dir, sizeof(db_dir), "%s/db", dir);
    snprintf(profile, sizeof(profile), "%s/h100-r0-p7.gpuprof", m);
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
    gpuprof_an_analysis *an;
    if (pcfix_write(FIXTURES, m, 1) || gpuprof_an_analysis_new(&an) ||
        gpuprof_an_analysis_add_input(an, m) ||
        gpuprof_an_analysis_set_output(an, db_dir) ||
        gpuprof_an_analysis_run(an)) {
        fprintf(stderr, "bench_advise: %s\n", gpuprof_an_last_error());
        return 1;
    }
    gpuprof_an_analysis_free(an);
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(db_dir, &db))
        return 1;
    double v[RUNS], w[RUNS];
    uint32_t kernels = 0;
    gpuprof__sass_bin *bin;
    char cubin[160];
    snprintf(cubin, sizeof(cubin), "%s/binaries/" PCFIX_HASH ".cubin", m);
    if (gpuprof__sass_open(cubin, &bin))
        return 1;
    for (int i = 0; i < RUNS; i++) {
        v[i] = advise_s(db, &kernels);
        w[i] = analysis_s(bin, profile);
    }
    printf("BENCH advise_kernels_per_s %.0f kernels/s\n",
           kernels / bench_median(v, RUNS));
    printf("BENCH advise_blame_kernels_per_s %.0f kernels/s\n",
           kernels / bench_median(w, RUNS));
    gpuprof__sass_free(bin);
    gpuprof_an_db_close(db);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
