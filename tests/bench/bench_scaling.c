/*
 * bench_scaling.c - what an aggregation costs as the work grows:
 * `gpuprof analyze -j 2` (its default memory budget, as users run it) on
 * the SPMD measurements of bench_analysis (support/gen.h: 4 threads per
 * process, fanout 4, depth 8) at 1,024, 4,096 and 16,384 profiles.
 *
 *   aggregate_scaling_us_per_profile_<n>k   wall time / profiles
 *   aggregate_scaling_cpu_us_per_profile_<n>k  CPU time (user + system) /
 *                               profiles: what a busy machine shows better
 *   aggregate_scaling_kb_per_profile_<n>k   peak resident memory / profiles
 *   aggregate_scaling_cpu_ratio_16k_1k      CPU per profile at 16 K / at
 *                               1 K (flat: 1.0)
 *   aggregate_scaling_kb_ratio_16k_1k       the same for memory
 *
 * Each size runs in its own process (fork and exec from this small one, so
 * that its peak is its own), medians of 3 runs (1 at 16 K). The
 * measurements are generated once into $(B)/bench/scaling-data (about 100
 * MB, in a child process) and reused by later runs; the database goes to a
 * temporary directory, removed after each run.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "support/gen.h"

static char cli[PATH_MAX], data[PATH_MAX];

/* The measurements of `procs` processes in data/<procs>, made by a child
 * when its stamp is missing (a run that was cut short left none). */
static int ensure(uint32_t procs, char *dir, size_t n)
{
    char stamp[PATH_MAX + 64];
    snprintf(dir, n, "%s/%u", data, procs);
    snprintf(stamp, sizeof(stamp), "%s/.complete-v1", dir);
    if (access(stamp, F_OK) == 0)
        return 0;
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0 || (mkdir(data, 0755) != 0 && access(data, W_OK) != 0))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        gen_opts o = {.procs = procs, .threads = 4, .seed = 3, .fanout = 4,
                      .depth = 8, .pid0 = 1000, .spmd = 1};
        gen_truth t = {0};
        _exit(mkdir(dir, 0755) != 0 || gen_write(dir, &o, &t) != 0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
        return -1;
    int fd = open(stamp, O_WRONLY | O_CREAT, 0644);
    return fd < 0 ? -1 : close(fd);
}

typedef struct cost {
    double wall, cpu; /* seconds */
    long kb;          /* peak resident KiB */
} cost;

/* One `gpuprof analyze -j 2 -o TMP DIR`; false when it fails. */
static bool analyze(const char *dir, const char *out, cost *c)
{
    double t0 = bench_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        execl(cli, cli, "analyze", "-j", "2", "-o", out, dir, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return false;
    c->wall = bench_now_s() - t0;
    c->cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
             ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    c->kb = ru.ru_maxrss;
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
    return system(cmd) == 0;
}

/* The medians of `reps` runs at `procs` processes, per profile. */
static bool size_cost(uint32_t procs, int reps, const char *out, cost *per)
{
    char dir[PATH_MAX + 16];
    if (ensure(procs, dir, sizeof(dir))) {
        fprintf(stderr, "bench_scaling: cannot write measurements in %s\n",
                data);
        return false;
    }
    double wall[3], cpu[3], kb[3];
    for (int r = 0; r < reps; r++) {
        cost c;
        if (!analyze(dir, out, &c)) {
            fprintf(stderr, "bench_scaling: %s analyze %s failed\n", cli, dir);
            return false;
        }
        wall[r] = c.wall, cpu[r] = c.cpu, kb[r] = (double)c.kb;
    }
    double profiles = 4.0 * procs;
    per->wall = bench_median(wall, reps) / profiles;
    per->cpu = bench_median(cpu, reps) / profiles;
    per->kb = (long)(bench_median(kb, reps) / profiles * 1000); /* 1/1000 */
    printf("BENCH aggregate_scaling_us_per_profile_%uk %.1f us\n", procs / 256,
           per->wall * 1e6);
    printf("BENCH aggregate_scaling_cpu_us_per_profile_%uk %.1f us\n",
           procs / 256, per->cpu * 1e6);
    printf("BENCH aggregate_scaling_kb_per_profile_%uk %.1f KiB\n",
           procs / 256, per->kb / 1000.0);
    fflush(stdout);
    return true;
}

int main(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *bin = dirname(exe);
    snprintf(cli, sizeof(cli), "%s/../bin/gpuprof", bin);
    snprintf(data, sizeof(data), "%s/scaling-data", bin);
    char root[] = "/tmp/gpuprof-bench-scale.XXXXXX";
    if (!mkdtemp(root))
        return 1;
    char out[sizeof(root) + 8];
    snprintf(out, sizeof(out), "%s/db", root);
    cost c1, c4, c16;
    bool ok = size_cost(256, 3, out, &c1) && size_cost(1024, 3, out, &c4) &&
              size_cost(4096, 1, out, &c16);
    rmdir(root);
    if (!ok)
        return 1;
    printf("BENCH aggregate_scaling_cpu_ratio_16k_1k %.2f x\n",
           c16.cpu / c1.cpu);
    printf("BENCH aggregate_scaling_kb_ratio_16k_1k %.2f x\n",
           (double)c16.kb / (double)c1.kb);
    return 0;
}
