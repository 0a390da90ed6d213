/*
 * bench_analysis.c - aggregation speed and database size on synthetic
 * measurements (support/gen.h: 512 processes x 4 threads, one SPMD tree shape).
 *
 *   aggregate_profiles_per_s_j1   profiles aggregated per second, 1 thread
 *   aggregate_profiles_per_s_j2   the same with 2 threads
 *   aggregate_speedup_j2          j1 time / j2 time (target >= 1.8)
 *   machine_two_thread_ceiling    what two threads can gain on this machine
 *                                 at best: a loop with nothing shared
 *                                 (random reads and writes over 32 MiB of
 *                                 each thread's own) alone, then on two
 *                                 threads at once: 2 x alone / together, in
 *                                 wall time (a VM whose vCPUs slow each
 *                                 other, or share caches and memory, gives
 *                                 < 2); median of 5
 *   aggregate_speedup_j2_of_ceiling  aggregate_speedup_j2 / that ceiling
 *                                 (and aggregate_mpi_np2_speedup_of_ceiling
 *                                 for the two ranks, below)
 *   aggregate_mb_per_s_j2         input bytes (the profile files) per second
 *   pms_bytes_per_value           profile.db bytes / non-zero values
 *   cms_bytes_per_value           cct.db bytes / non-zero values
 *   aggregate_budget_mb           the memory budget given to the next two
 *                                 (--memory 64M: about a quarter of what
 *                                 the aggregation takes without one)
 *   aggregate_peak_rss_mb         peak resident memory of the process doing
 *                                 one -j2 aggregation within that budget
 *   aggregate_budget_slowdown     its time / the -j2 time without a budget
 *   aggregate_peak_rss_mb_unbudgeted  the same without a budget
 * On two ranks, when gpuprof-mpi is built and mpirun found, on a larger
 * input (1024 processes x 4 threads, 20 MB: MPI's start-up, a third of a
 * second here, is measured apart and reported, not hidden in the figure):
 *   aggregate_mpi_j1_profiles_per_s   `gpuprof analyze -j 1` on that input
 *   aggregate_mpi_j2_profiles_per_s   `gpuprof analyze -j 2` on that input
 *   aggregate_mpi_startup_s       `mpirun -np 2 gpuprof-mpi --version`: MPI's
 *                                 start and end
 *   aggregate_mpi_np2_profiles_per_s  `mpirun -np 2 gpuprof-mpi analyze -j 1`,
 *                                 its time less the start-up
 *   aggregate_mpi_np2_wall_profiles_per_s  the same, start-up included
 *   aggregate_mpi_np2_speedup     the j1 time / the np2 time less start-up
 *                                 (target >= 1.6)
 *   aggregate_mpi_np2_cpu_ratio   CPU seconds of both ranks (less those of
 *                                 the start-up) / those of j1: the work the
 *                                 ranks add, which a busy machine shows
 *                                 better than the times do (a waiting rank
 *                                 spins in MPI's collectives: counted)
 *   aggregate_mpi_np2_phase_<step>_ms  where the ranks' time goes, from
 *                                 gpuprof-mpi's GPUPROF_MPI_PHASES (the
 *                                 slowest rank's, median): init (MPI_Init),
 *                                 run (the analysis), and its steps inputs,
 *                                 load, merge (the trees' exchange), values,
 *                                 settle_values (parts copied, tables and
 *                                 counts reduced), transpose,
 *                                 settle_contexts, write (an_coll.h)
 *
 * Times are medians of 5 alternating runs of the `gpuprof analyze` command
 * (each a fresh process, as users run it: one that ran before would find
 * its heap already faulted in), start-up included.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
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

/* `gpuprof analyze -j N` as a user runs it (a fresh process: a forked
 * child would pay copy-on-write faults on the generator's heap instead). */
static char cli[PATH_MAX];

/* Peak resident KiB of one `gpuprof analyze -j 2 [--memory M]`; -1 when
 * it fails. */
static long peak_rss_kb(const char *memory, double *secs)
{
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        if (memory)
            execl(cli, cli, "analyze", "-j", "2", "--memory", memory, "-o", out,
                  in, (char *)NULL);
        else
            execl(cli, cli, "analyze", "-j", "2", "-o", out, in, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_analysis: %s analyze failed\n", cli);
        return -1;
    }
    *secs = bench_now_s() - t0;
    return ru.ru_maxrss;
}

/* CPU seconds (user and system) of the last command waited for, its
 * children (MPI's ranks) included. */
static double last_cpu;

static bool reap(pid_t pid, int *status)
{
    struct rusage ru;
    if (wait4(pid, status, 0, &ru) != pid)
        return false;
    last_cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
               ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    return true;
}

/* `mpirun -np 2 gpuprof-mpi analyze` (or --version), its seconds; -1
 * when it fails. */
static double ceiling; /* machine_two_thread_ceiling (0: not measured) */
static char mpi_cli[PATH_MAX + 16];
static char mpi_in[256], mpi_phases[300];
static double run_mpi(int version)
{
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1), dup2(devnull, 2);
        if (version)
            execlp("mpirun", "mpirun", "--allow-run-as-root", "--oversubscribe",
                   "-np", "2", mpi_cli, "--version", (char *)NULL);
        setenv("GPUPROF_MPI_PHASES", mpi_phases, 1);
        execlp("mpirun", "mpirun", "--allow-run-as-root", "--oversubscribe",
               "-np", "2", mpi_cli, "analyze", "-j", "1", "-o", out, mpi_in,
               (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || !reap(pid, &status) || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    return bench_now_s() - t0;
}

static double run_fresh_in(const char *dir, unsigned threads)
{
    char j[16];
    snprintf(j, sizeof(j), "%u", threads);
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        execl(cli, cli, "analyze", "-j", j, "-o", out, dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || !reap(pid, &status) || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_analysis: %s analyze failed\n", cli);
        exit(1);
    }
    return bench_now_s() - t0;
}

static double run_fresh(unsigned threads)
{
    return run_fresh_in(in, threads);
}

/* The steps gpuprof-mpi reports (GPUPROF_MPI_PHASES), in its order. */
#define MPI_STEPS 10
static const char *const mpi_steps[MPI_STEPS] = {
    "init",   "run",           "inputs",    "load",            "merge",
    "values", "settle_values", "transpose", "settle_contexts", "write"};

/* The last np2 run's seconds per step into ph[k][rep]; false when the
 * file lacks one. */
static bool read_phases(double ph[MPI_STEPS][REPS], int rep)
{
    FILE *f = fopen(mpi_phases, "r");
    int seen = 0;
    char name[64];
    double v;
    while (f && fscanf(f, "%63s %lf", name, &v) == 2)
        for (int k = 0; k < MPI_STEPS; k++)
            if (!strcmp(name, mpi_steps[k]))
                ph[k][rep] = v, seen++;
    if (f)
        fclose(f);
    return seen == MPI_STEPS;
}

/* The figures on two ranks, against one process on the same input. */
static void mpi_figures(const char *root)
{
    snprintf(mpi_cli, sizeof(mpi_cli), "%s-mpi", cli);
    snprintf(mpi_in, sizeof(mpi_in), "%s/mpi", root);
    snprintf(mpi_phases, sizeof(mpi_phases), "%s/phases", root);
    mkdir(mpi_in, 0755);
    gen_opts o = {.procs = 1024, .threads = 4, .seed = 3, .fanout = 4,
                  .depth = 8, .pid0 = 1000, .spmd = 1};
    gen_truth t = {0};
    int ok = access(mpi_cli, X_OK) == 0 && gen_write(mpi_in, &o, &t) == 0 &&
             run_mpi(0) > 0;
    double profiles = t.profiles;
    gen_truth_free(&t);
    double j1[REPS], j2[REPS], np2[REPS], up[REPS], ph[MPI_STEPS][REPS];
    double cpu1[REPS], cpu2[REPS], cpuup[REPS];
    for (int r = 0; ok && r < REPS; r++) {
        j1[r] = run_fresh_in(mpi_in, 1);
        cpu1[r] = last_cpu;
        j2[r] = run_fresh_in(mpi_in, 2);
        ok = (np2[r] = run_mpi(0)) > 0 && read_phases(ph, r);
        cpu2[r] = last_cpu;
        ok = ok && (up[r] = run_mpi(1)) > 0;
        cpuup[r] = last_cpu;
    }
    if (!ok) {
        fprintf(stderr, "bench_analysis: no gpuprof-mpi or mpirun: no "
                        "aggregate_mpi_* figures\n");
        return;
    }
    double m1 = bench_median(j1, REPS), m2 = bench_median(j2, REPS);
    double mn = bench_median(np2, REPS), mu = bench_median(up, REPS);
    double work = mn - mu > 1e-3 ? mn - mu : 1e-3;
    printf("BENCH aggregate_mpi_j1_profiles_per_s %.0f profiles/s\n",
           profiles / m1);
    printf("BENCH aggregate_mpi_j2_profiles_per_s %.0f profiles/s\n",
           profiles / m2);
    printf("BENCH aggregate_mpi_startup_s %.2f s\n", mu);
    printf("BENCH aggregate_mpi_np2_profiles_per_s %.0f profiles/s\n",
           profiles / work);
    printf("BENCH aggregate_mpi_np2_wall_profiles_per_s %.0f profiles/s\n",
           profiles / mn);
    printf("BENCH aggregate_mpi_np2_speedup %.2f x\n", m1 / work);
    if (ceiling > 0)
        printf("BENCH aggregate_mpi_np2_speedup_of_ceiling %.2f x\n",
               m1 / work / ceiling);
    double c2 = bench_median(cpu2, REPS) - bench_median(cpuup, REPS);
    printf("BENCH aggregate_mpi_np2_cpu_ratio %.2f x\n",
           c2 / bench_median(cpu1, REPS));
    for (int k = 0; k < MPI_STEPS; k++)
        printf("BENCH aggregate_mpi_np2_phase_%s_ms %.1f ms\n", mpi_steps[k],
               1e3 * bench_median(ph[k], REPS));
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

/* ---- the machine's own two-thread ceiling ---------------------------- */
static volatile uint64_t spin_sink;

static void *spin(void *arg)
{
    /* random reads and a stream of writes over 32 MiB of its own: past the
     * private caches, into the shared one and memory, as aggregation goes */
    size_t n = (size_t)4 << 20;
    uint64_t *b = malloc(n * sizeof(*b)), s = 0, j = (uintptr_t)arg;
    for (size_t i = 0; b && i < n; i++)
        b[i] = i * 2654435761u;
    for (int r = 0; b && r < 6; r++)
        for (size_t i = 0; i < n; i++) {
            j = (j * 1103515245u + 12345u) & (n - 1);
            s += b[j];
            b[i] += s;
        }
    spin_sink = s;
    free(b);
    return NULL;
}

/* Wall seconds of the loop on `threads` threads at once. */
static double spin_wall(int threads)
{
    pthread_t th[2];
    double t0 = bench_now_s();
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, spin, (void *)(uintptr_t)(i + 1)))
            return 0;
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return bench_now_s() - t0;
}

static double two_thread_ceiling(void)
{
    double one[5], two[5];
    for (int r = 0; r < 5; r++) {
        one[r] = spin_wall(1);
        two[r] = spin_wall(2);
    }
    double m2 = bench_median(two, 5);
    return m2 > 0 ? 2 * bench_median(one, 5) / m2 : 0;
}

int main(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(cli, sizeof(cli), "%s/../bin/gpuprof", dirname(exe));
    char root[] = "/tmp/gpuprof-bench-an.XXXXXX";
    if (!mkdtemp(root))
        return 1;
    snprintf(in, sizeof(in), "%s/run", root);
    snprintf(out, sizeof(out), "%s/db", root);
    mkdir(in, 0755);
    gen_opts o = {.procs = 512, .threads = 4, .seed = 3, .fanout = 4,
                  .depth = 8, .pid0 = 1000, .spmd = 1};
    gen_truth t = {0};
    if (gen_write(in, &o, &t)) {
        fprintf(stderr, "bench_analysis: cannot write measurements\n");
        return 1;
    }
    uint32_t profiles = t.profiles;
    gen_truth_free(&t);
    double j1[REPS], j2[REPS];
    run_fresh(1); /* warm the page cache */
    for (int r = 0; r < REPS; r++) {
        j1[r] = run_fresh(1);
        j2[r] = run_fresh(2);
    }
    double m1 = bench_median(j1, REPS), m2 = bench_median(j2, REPS);
    printf("BENCH aggregate_profiles_per_s_j1 %.0f profiles/s\n",
           profiles / m1);
    printf("BENCH aggregate_profiles_per_s_j2 %.0f profiles/s\n",
           profiles / m2);
    printf("BENCH aggregate_speedup_j2 %.2f x\n", m1 / m2);
    ceiling = two_thread_ceiling();
    printf("BENCH machine_two_thread_ceiling %.2f x\n", ceiling);
    if (ceiling > 0)
        printf("BENCH aggregate_speedup_j2_of_ceiling %.2f x\n",
               m1 / m2 / ceiling);
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
    /* Peak memory of one -j2 aggregation by the command, with and without
     * a budget. */
    double secs = 0;
    long budgeted = peak_rss_kb("64M", &secs);
    printf("BENCH aggregate_budget_mb 64 MB\n");
    printf("BENCH aggregate_peak_rss_mb %.1f MB\n", budgeted / 1024.0);
    printf("BENCH aggregate_budget_slowdown %.2f x\n", secs / m2);
    printf("BENCH aggregate_peak_rss_mb_unbudgeted %.1f MB\n",
           peak_rss_kb(NULL, &secs) / 1024.0);
    mpi_figures(root);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 0;
}
