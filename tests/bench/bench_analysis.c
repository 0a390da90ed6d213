/*
 * bench_analysis.c - aggregation speed and database size on synthetic
 * measurements (support/gen.h: 64 processes x 4 threads, one SPMD tree shape).
 *
 *   aggregate_profiles_per_s_j1   profiles aggregated per second, 1 thread
 *   aggregate_profiles_per_s_j2   the same with 2 threads
 *   aggregate_speedup_j2          j1 time / j2 time (target >= 1.8)
 *   aggregate_mb_per_s_j2         input bytes (the profile files) per second
 *   pms_bytes_per_value           profile.db bytes / non-zero values
 *   cms_bytes_per_value           cct.db bytes / non-zero values
 *   aggregate_peak_rss_mb         peak resident memory of a process doing
 *                                 one -j2 aggregation (no budget yet)
 *
 * Times are medians of 5 alternating runs in one process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "gpuprof_analysis.h"
#include "support/gen.h"

#define REPS 5

static char in[256], out[300];

static double run(unsigned threads)
{
    gpuprof_an_analysis *a;
    gpuprof_an_analysis_new(&a);
    gpuprof_an_analysis_add_input(a, in);
    gpuprof_an_analysis_set_output(a, out);
    gpuprof_an_analysis_set_threads(a, threads);
    double t0 = bench_now_s();
    gpuprof_status st = gpuprof_an_analysis_run(a);
    double t = bench_now_s() - t0;
    gpuprof_an_analysis_free(a);
    if (st != GPUPROF_OK) {
        fprintf(stderr, "bench_analysis: %s\n", gpuprof_an_last_error());
        exit(1);
    }
    return t;
}

static uint64_t dir_bytes(const char *dir)
{
    uint64_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[600];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &st) == 0)
            n += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return n;
}

static uint64_t file_bytes(const char *name)
{
    char p[400];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", out, name);
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int main(void)
{
    char root[] = "/tmp/gpuprof-bench-an.XXXXXX";
    if (!mkdtemp(root))
        return 1;
    snprintf(in, sizeof(in), "%s/run", root);
    snprintf(out, sizeof(out), "%s/db", root);
    mkdir(in, 0755);
    gen_opts o = {.procs = 64, .threads = 4, .seed = 3, .fanout = 4,
                  .depth = 7, .pid0 = 1000, .spmd = 1};
    gen_truth t = {0};
    if (gen_write(in, &o, &t)) {
        fprintf(stderr, "bench_analysis: cannot write measurements\n");
        return 1;
    }
    uint32_t profiles = t.profiles;
    gen_truth_free(&t);
    double j1[REPS], j2[REPS];
    run(1); /* warm the page cache */
    for (int r = 0; r < REPS; r++) {
        j1[r] = run(1);
        j2[r] = run(2);
    }
    double m1 = bench_median(j1, REPS), m2 = bench_median(j2, REPS);
    printf("BENCH aggregate_profiles_per_s_j1 %.0f profiles/s\n",
           profiles / m1);
    printf("BENCH aggregate_profiles_per_s_j2 %.0f profiles/s\n",
           profiles / m2);
    printf("BENCH aggregate_speedup_j2 %.2f x\n", m1 / m2);
    printf("BENCH aggregate_mb_per_s_j2 %.1f MB/s\n",
           dir_bytes(in) / 1e6 / m2);
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(out, &db) != GPUPROF_OK) {
        fprintf(stderr, "bench_analysis: %s\n", gpuprof_an_last_error());
        return 1;
    }
    uint64_t values = 0;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        for (uint32_t m = 0; m < gpuprof_an_db_metric_count(db); m++)
            values += gpuprof_an_db_context_values(db, c, m, NULL, NULL, 0);
    gpuprof_an_db_close(db);
    printf("BENCH pms_bytes_per_value %.2f bytes\n",
           (double)file_bytes("profile.db") / (double)values);
    printf("BENCH cms_bytes_per_value %.2f bytes\n",
           (double)file_bytes("cct.db") / (double)values);
    /* Peak memory of one aggregation alone: in a child. */
    pid_t pid = fork();
    if (pid == 0) {
        run(2);
        _exit(0);
    }
    int status;
    struct rusage ru;
    if (pid > 0 && wait4(pid, &status, 0, &ru) == pid)
        printf("BENCH aggregate_peak_rss_mb %.1f MB\n", ru.ru_maxrss / 1024.0);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 0;
}
