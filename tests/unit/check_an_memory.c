/*
 * check_an_memory.c - the aggregation's default memory budget
 * (analysis/agg/an_memory.c): a quarter of the memory available, read from
 * a machine the test makes (GPUPROF_AN_SYSROOT: its own /proc/meminfo,
 * /proc/self/cgroup and cgroup files), with the exact bytes each case must
 * give; then a run on that machine whose default budget binds: the same
 * database bytes as without a budget, done in rounds, said in
 * analysis.txt and by `gpuprof analyze -v`, and the command's peak
 * resident memory within the budget.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuprof_analysis.h"
#include "support/files.h"
#include "support/gen.h"
#include "support/suite.h"

#define MiB (1ull << 20)

static char tmp[512];

static void mkdir_tmp(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anmem.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

/* ROOT/rel holds `text`, its directories made. */
static void put(const char *root, const char *rel, const char *text)
{
    char p[1200];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    tf_spill(p, text, strlen(text));
}

/* A machine of its own: a fresh sysroot whose files `files` (pairs of
 * path and text, NULL-ended) say; the budget a default analysis takes on
 * it and the memory available it is a share of. */
static uint64_t budget_on(const char *const *files, uint64_t *avail)
{
    static int n;
    char root[600];
    snprintf(root, sizeof(root), "%s/sys%d", tmp, n++);
    ck_assert_int_eq(mkdir(root, 0755), 0);
    for (; *files; files += 2)
        put(root, files[0], files[1]);
    setenv("GPUPROF_AN_SYSROOT", root, 1);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    uint64_t b = gpuprof_an_analysis_memory(a, avail);
    gpuprof_an_analysis_free(a);
    unsetenv("GPUPROF_AN_SYSROOT");
    return b;
}

#define MEMINFO(avail_kb)                                                      \
    "proc/meminfo", "MemTotal:       33554432 kB\nMemFree:         1048576 "    \
                    "kB\nMemAvailable:   " avail_kb " kB\nCached:  524288 kB\n"

START_TEST(default_budget_reads_the_machine)
{
    mkdir_tmp();
    uint64_t avail;
    /* MemAvailable alone: 4 GiB, a quarter of it. */
    const char *const m[] = {MEMINFO("4194304"), NULL};
    ck_assert_uint_eq(budget_on(m, &avail), 1024 * MiB);
    ck_assert_uint_eq(avail, 4096 * MiB);
    /* A cgroup v2 limit leaves less: 1 GiB less the 256 MiB in use. */
    const char *const v2[] = {MEMINFO("4194304"),
                              "proc/self/cgroup", "0::/job\n",
                              "sys/fs/cgroup/job/memory.max", "1073741824\n",
                              "sys/fs/cgroup/job/memory.current", "268435456\n",
                              NULL};
    ck_assert_uint_eq(budget_on(v2, &avail), 192 * MiB);
    ck_assert_uint_eq(avail, 768 * MiB);
    /* A parent's limit counts too ("max": none at the job's level). */
    const char *const nested[] = {
        MEMINFO("4194304"),
        "proc/self/cgroup", "0::/a/b\n",
        "sys/fs/cgroup/a/b/memory.max", "max\n",
        "sys/fs/cgroup/a/b/memory.current", "1048576\n",
        "sys/fs/cgroup/a/memory.max", "536870912\n",
        "sys/fs/cgroup/a/memory.current", "134217728\n",
        NULL};
    ck_assert_uint_eq(budget_on(nested, &avail), 96 * MiB);
    ck_assert_uint_eq(avail, 384 * MiB);
    /* cgroup v1's memory controller among others; its "unlimited" top. */
    const char *const v1[] = {
        MEMINFO("4194304"),
        "proc/self/cgroup", "7:cpu,cpuacct:/job\n4:memory,blkio:/job\n",
        "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "629145600\n",
        "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "209715200\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n",
        NULL};
    ck_assert_uint_eq(budget_on(v1, &avail), 100 * MiB);
    ck_assert_uint_eq(avail, 400 * MiB);
    /* In a container the host's path is missing: the top's limit. */
    const char *const ct[] = {
        MEMINFO("4194304"),
        "proc/self/cgroup", "4:memory:/host/path\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes", "838860800\n",
        "sys/fs/cgroup/memory/memory.usage_in_bytes", "0\n",
        NULL};
    ck_assert_uint_eq(budget_on(ct, &avail), 200 * MiB);
    ck_assert_uint_eq(avail, 800 * MiB);
    /* A kernel before MemAvailable: MemFree + Cached (1.5 GiB). */
    const char *const old[] = {
        "proc/meminfo", "MemTotal: 33554432 kB\nMemFree: 1048576 kB\n"
                        "Buffers: 4096 kB\nCached: 524288 kB\n",
        NULL};
    ck_assert_uint_eq(budget_on(old, &avail), 384 * MiB);
    ck_assert_uint_eq(avail, 1536 * MiB);
    /* Little memory: never below the smallest budget. */
    const char *const tiny[] = {MEMINFO("40960"), NULL};
    ck_assert_uint_eq(budget_on(tiny, &avail), GPUPROF_AN_MIN_MEMORY);
    ck_assert_uint_eq(avail, 40 * MiB);
    /* Nothing known: no budget. */
    const char *const none[] = {NULL};
    ck_assert_uint_eq(budget_on(none, &avail), 0);
    ck_assert_uint_eq(avail, 0);
    /* A budget set is what it says; 0 is none. */
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, 64 * MiB), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_analysis_memory(a, &avail), 64 * MiB);
    ck_assert_uint_eq(avail, 0);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, 0), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_analysis_memory(a, NULL), 0);
    ck_assert_int_eq(
        gpuprof_an_analysis_set_memory(a, GPUPROF_AN_MEMORY_AUTO), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
}
END_TEST

/* The files of two databases are the same bytes. */
static void same_db(const char *d1, const char *d2)
{
    static const char *const files[] = {"meta.db", "profile.db", "cct.db",
                                        "stats.db"};
    for (int i = 0; i < 4; i++) {
        char a[700], b[700];
        size_t na = 0, nb = 0;
        snprintf(a, sizeof(a), "%s/%s", d1, files[i]);
        snprintf(b, sizeof(b), "%s/%s", d2, files[i]);
        unsigned char *x = tf_read(a, &na), *y = tf_read(b, &nb);
        ck_assert_msg(x && y && na == nb && !memcmp(x, y, na), "%s differs",
                      files[i]);
        free(x);
        free(y);
    }
}

/* The number after `key ` in analysis.txt of db. */
static uint64_t info(const char *db, const char *key)
{
    char p[700];
    snprintf(p, sizeof(p), "%s/analysis.txt", db);
    size_t n = 0;
    char *t = tf_read(p, &n), *at = NULL;
    ck_assert_ptr_nonnull(t);
    t[n - 1] = '\0';
    char k[64];
    snprintf(k, sizeof(k), "\n%s ", key);
    ck_assert_msg((at = strstr(t, k)), "analysis.txt has no %s", key);
    uint64_t v = strtoull(at + strlen(k), NULL, 10);
    free(t);
    return v;
}

static gpuprof_status analyze(const char *in, const char *out, uint64_t mem)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_threads(a, 2), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_memory(a, mem), GPUPROF_OK);
    gpuprof_status st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    return st;
}

/* `gpuprof analyze -v` beside this program (build/bin from build/tests),
 * stderr into `err`; its peak resident KiB, -1 when it failed. */
static long cli_analyze(const char *in, const char *out, const char *err)
{
    char exe[PATH_MAX], cli[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(cli, sizeof(cli), "%s/../bin/gpuprof", dirname(exe));
    if (access(cli, X_OK) != 0)
        return -2;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY), e = creat(err, 0644);
        dup2(fd, 1);
        dup2(e, 2);
        execl(cli, "gpuprof", "analyze", "-v", "-j", "2", "-o", out, in,
              (char *)NULL);
        _exit(127);
    }
    struct rusage ru;
    int status = 0;
    ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ru.ru_maxrss : -1;
}

/* 192 profiles whose unbudgeted analysis takes several times 16 MiB, on a
 * machine with 64 MiB available: the default budget (16 MiB) binds. */
START_TEST(default_budget_binds)
{
    mkdir_tmp();
    char in[600], d0[600], d1[600], d2[600], root[600], err[600];
    snprintf(in, sizeof(in), "%s/run", tmp);
    snprintf(d0, sizeof(d0), "%s/db0", tmp);
    snprintf(d1, sizeof(d1), "%s/db1", tmp);
    snprintf(d2, sizeof(d2), "%s/db2", tmp);
    snprintf(root, sizeof(root), "%s/machine", tmp);
    snprintf(err, sizeof(err), "%s/err", tmp);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    ck_assert_int_eq(mkdir(root, 0755), 0);
    put(root, "proc/meminfo", "MemTotal: 1048576 kB\nMemAvailable: 65536 kB\n");
    /* Written by a child: a process exec'd later starts its peak at what
     * its parent holds (Linux counts the forked copy), so this one stays
     * small until the command has run. */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gen_truth t = {0};
        gen_opts o = {.procs = 48, .threads = 4, .seed = 3, .fanout = 4,
                      .depth = 8, .pid0 = 500, .spmd = 1};
        _exit(gen_write(in, &o, &t) != 0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(status, 0);

    /* The command says so, and stays within it (only the plain build:
     * sanitizers multiply memory). */
    setenv("GPUPROF_AN_SYSROOT", root, 1);
    long kib = cli_analyze(in, d2, err);
    unsetenv("GPUPROF_AN_SYSROOT");
    if (kib == -2)
        printf("SKIP default_budget_binds (the command): no gpuprof beside "
               "this test\n");
    ck_assert_msg(kib > 0 || kib == -2, "gpuprof analyze -v failed");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    if (kib > 0)
        ck_assert_msg(kib <= 16 * 1024, "peak %ld KiB over 16 MiB", kib);
#endif
    char *text = kib > 0 ? tf_read(err, &(size_t){0}) : NULL;
    ck_assert_msg(kib < 0 || (text && strstr(text, "gpuprof: memory budget 16 "
                                                   "MiB (a quarter of the 64 "
                                                   "MiB available; --memory "
                                                   "sets another)\n")),
                  "said: %s", text ? text : "nothing");
    free(text);

    /* The library, on the same machine: the same bytes as without a
     * budget, in rounds, and analysis.txt says why. */
    ck_assert_int_eq(analyze(in, d0, 0), GPUPROF_OK);
    ck_assert_uint_eq(info(d0, "rounds"), 1); /* pass 1: one round */
    ck_assert_uint_eq(info(d0, "files-decoded-twice"), 0);
    ck_assert_uint_eq(info(d0, "profiles-read-back"), 0);

    setenv("GPUPROF_AN_SYSROOT", root, 1);
    ck_assert_int_eq(analyze(in, d1, GPUPROF_AN_MEMORY_AUTO), GPUPROF_OK);
    unsetenv("GPUPROF_AN_SYSROOT");
    same_db(d0, d1);
    ck_assert_uint_eq(info(d1, "memory-budget"), 16 * MiB);
    ck_assert_uint_gt(info(d1, "rounds"), 2);
    ck_assert_uint_gt(info(d1, "files-decoded-twice"), 0);
    ck_assert_uint_gt(info(d1, "profiles-read-back"), 0);
    char p[700];
    snprintf(p, sizeof(p), "%s/analysis.txt", d1);
    text = tf_read(p, &(size_t){0});
    ck_assert_ptr_nonnull(strstr(text, "memory-budget 16777216 (the default: "
                                       "a quarter of 67108864 bytes "
                                       "available)\n"));
    free(text);
    if (kib > 0)
        same_db(d0, d2);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"default_budget", default_budget_reads_the_machine, 60},
        {"default_budget_binds", default_budget_binds, 240},
    };
    return RUN_SUITE("an_memory", cases);
}
