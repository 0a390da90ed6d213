/*
 * bench_cupti.c - the CUPTI backend's record path, offline (no GPU needed):
 * buffers of Kernel10 records decoded by libcupti's own
 * cuptiActivityGetNextRecord, looked up in the correlation ring and
 * submitted through the monitor to the thread that launched them, on a
 * thread of their own as CUPTI's worker would. Baseline in the same run:
 * the bare record walk with no attribution.
 *
 *   BENCH cupti_records_per_s      records attributed per second (median)
 *   BENCH cupti_record_cost_ratio  its time per record / the bare walk's
 *   BENCH cupti_pc_records_per_s   PC sampling records (4 stall reasons
 *                                  each) submitted per second, on the
 *                                  launching thread as after a
 *                                  kernel-serialized launch (median)
 *
 * The launch overhead (cupti_launch_overhead_ns, cupti_launch_floor_ns) and
 * PC sampling's cost per mode (pc_sampling_overhead_ratio_serialized,
 * _continuous) need a GPU: see tests/bench/cupti_launch.cu where nvcc and
 * a GPU are present (it prints "skipped" lines otherwise).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"
#include "bench/bench.h"
#include "core/internal.h"

enum { RECORDS = 20000, REPS = 15 };

static uint8_t *buf;
static size_t valid;
static double ours[REPS], bare[REPS];
static _Atomic int ready, finished; /* reps prepared, reps decoded */

/* CUPTI's worker: decodes each buffer once its launches are begun. */
static void *decoder(void *arg)
{
    (void)arg;
    for (int r = 0; r < REPS; r++) {
        while (atomic_load(&ready) <= r)
            ;
        double t0 = bench_now_s();
        size_t n = gpuprof__cupti_decode(buf, valid);
        ours[r] = (bench_now_s() - t0) / (double)n;
        CUpti_Activity *rec = NULL;
        uint64_t sum = 0;
        t0 = bench_now_s();
        while (gpuprof__cu.ActivityGetNextRecord(buf, valid, &rec) ==
               CUPTI_SUCCESS)
            sum += ((const CUpti_ActivityKernel10 *)rec)->correlationId;
        bare[r] = (bench_now_s() - t0) / RECORDS;
        if (sum == 1) /* keep the walk */
            puts("");
        atomic_store(&finished, r + 1);
    }
    return NULL;
}

/* PC records of one launch: PCS instructions, 4 stall reasons each, as
 * gpuprof__cupti_pcs_submit gets them; records per second (median). */
enum { PCS = 4096, PC_REPS = 9 };
static double pc_records(void)
{
    static CUpti_PCSamplingPCData pcs[PCS];
    static CUpti_PCSamplingStallReason st[PCS][4];
    static char name[] = "kernel_a";
    uint32_t map[8] = {GP_M_PC_STALL_SELECTED, GP_M_PC_STALL_LONG_SCOREBOARD,
                       GP_M_PC_STALL_LONG_SCOREBOARD | GP_CU_LATENCY,
                       GP_M_PC_STALL_BARRIER};
    double t[PC_REPS];
    gpuprof_region_begin("pcs");
    for (int r = 0; r < PC_REPS; r++) {
        uint32_t id = 0x40000000u + (uint32_t)r;
        uint64_t c = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
        gpuprof__cupti_ring_note(id, c, false);
        for (uint32_t i = 0; i < PCS; i++) {
            for (uint32_t k = 0; k < 4; k++)
                st[i][k] = (CUpti_PCSamplingStallReason){k, 1 + (i + k) % 7};
            pcs[i] = (CUpti_PCSamplingPCData){
                sizeof(pcs[i]), 0xabc, (uint64_t)i * 16, 0, 0, name, 4, st[i],
                id};
        }
        CUpti_PCSamplingData d;
        memset(&d, 0, sizeof(d));
        d.size = sizeof(d);
        d.totalNumPcs = PCS;
        d.pPcData = pcs;
        uint64_t lost = 0;
        double t0 = bench_now_s();
        gpuprof__cupti_pcs_submit(&d, map, 8, &lost);
        t[r] = (bench_now_s() - t0) / PCS;
        /* Closed as a kernel record would close it. */
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = c;
        a.kind = GPUPROF_OP_KERNEL;
        a.name = name;
        gpuprof_activity_submit(&a);
        gpuprof_op_end(c);
    }
    gpuprof_region_end("pcs");
    return 1.0 / bench_median(t, PC_REPS);
}

int main(void)
{
    char why[256];
    if (!gpuprof__cupti_load(why, sizeof(why))) {
        printf("# cupti: %s\n", why);
        printf("# bench_cupti: no libcupti, skipped\n");
        return 0;
    }
    char dir[] = "/tmp/gpuprof-bench-cupti.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = dir;
    o.backends = "none";
    o.signals = 0;
    if (gpuprof_init(&o) != GPUPROF_OK)
        return 1;
    gpuprof__cupti_set_clock_offset(0);
    static const char *names[4] = {"kernel_a", "kernel_b", "kernel_c",
                                   "kernel_d"};
    valid = RECORDS * sizeof(CUpti_ActivityKernel10);
    buf = aligned_alloc(8, valid);
    memset(buf, 0, valid);
    for (uint32_t i = 0; i < RECORDS; i++) {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)buf + i;
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->name = names[i % 4];
        k->start = 1000 + (uint64_t)i * 10;
        k->end = k->start + 7;
        k->gridX = k->gridY = k->gridZ = 1;
        k->blockX = 256;
        k->blockY = k->blockZ = 1;
        k->registersPerThread = 32;
        k->streamId = i % 4;
    }
    pthread_t t;
    pthread_create(&t, NULL, decoder, NULL);
    gpuprof_region_begin("bench");
    for (int r = 0; r < REPS; r++) {
        /* One launch per record, as a program makes them; then the
         * launching thread applies what reaches it, as an application
         * thread does at its next call. */
        for (uint32_t i = 0; i < RECORDS; i++) {
            uint32_t id = (uint32_t)r * RECORDS + i + 1;
            uint64_t c = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
            gpuprof__cupti_ring_note(id, c, false);
            gpuprof_op_end(c);
            ((CUpti_ActivityKernel10 *)buf + i)->correlationId = id;
        }
        atomic_store(&ready, r + 1);
        while (atomic_load(&finished) <= r) {
            gpuprof_region_begin("poll");
            gpuprof_region_end("poll");
        }
    }
    pthread_join(t, NULL);
    gpuprof_region_end("bench");
    double pc = pc_records();
    double m = bench_median(ours, REPS), b = bench_median(bare, REPS);
    printf("BENCH cupti_records_per_s %.0f records/s\n", 1.0 / m);
    printf("BENCH cupti_record_cost_ratio %.1f x\n", m / b);
    printf("BENCH cupti_pc_records_per_s %.0f records/s\n", pc);
    gpuprof_flush();
    uint64_t dropped = 0, unattributed = 0;
    gpuprof_stat_get("records.dropped", &dropped);
    gpuprof_stat_get("records.unattributed", &unattributed);
    if (dropped || unattributed)
        printf("# warning: %llu records dropped, %llu unattributed\n",
               (unsigned long long)dropped, (unsigned long long)unattributed);
    gpuprof_finalize();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
