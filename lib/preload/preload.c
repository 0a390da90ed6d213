/*
 * preload.c - libgpuprof-preload.so, what `gpuprof run` puts in LD_PRELOAD.
 *
 * A program that never calls libgpuprof is measured by loading this small
 * library into it before its own code runs: its constructor calls
 * gpuprof_init with GPUPROF_OPT_JOINABLE and nothing else set, so every
 * setting comes from the GPUPROF_* variables that `gpuprof run` set from
 * its options, and a program that calls gpuprof_init itself joins this
 * measurement instead of failing (gpuprof.h). The library finalizes as it
 * always does (its atexit handler, SIGTERM/SIGINT, fork children). The
 * OpenCL backend points OPENCL_LAYERS at its layer during that init, before
 * the program's first OpenCL call, so an unmodified OpenCL program is seen
 * through the ICD loader.
 *
 * The program that does the work is measured, not the wrappers that start
 * it (doc/CORE.md "gpuprof run"):
 *  - A wrapper -- a shell (sh, bash, dash, zsh, ksh, mksh, ash) or a
 *    launcher that only runs one command (env, nice, nohup, stdbuf,
 *    taskset, numactl, timeout, setsid, chrt, ionice, time) -- measures
 *    nothing and leaves this library in LD_PRELOAD, so what it execs and
 *    the children it starts get it too: a pyenv-style shim (a script that
 *    execs the real interpreter, or starts it and waits) passes it on.
 *  - A wrapper's helper -- a program started by a wrapper, other than the
 *    process `gpuprof run` started, whose standard output the wrapper reads
 *    (a command substitution such as $(readlink x)) -- computes a value for
 *    the wrapper: it is not measured, and neither is what it starts.
 *    `gpuprof run` names the process it started in GPUPROF_RUN_PID.
 *  - Any other program is measured. Unless GPUPROF_FOLLOW_CHILDREN is 1, it
 *    takes this library out of LD_PRELOAD first, so a program it execs (a
 *    compiler that PoCL starts, a shell command) runs unmeasured and writes
 *    nothing. A fork child that does not exec is the same process image and
 *    is measured as the library always measures fork children.
 *    OPENCL_LAYERS stays: the ICD loader of this process reads it lazily,
 *    at the first OpenCL call, and in a child without libgpuprof the layer
 *    passes every call through.
 *
 * `gpuprof run` preloads libgpuprof.so too, ahead of the C library, so that
 * the pthread functions it defines (lib/host) see the program's threads
 * wait for each other; "this library" above means both.
 *
 * Nothing here prints: the library's log (GPUPROF_LOG) says what fails.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuprof.h"

#define SELF "libgpuprof-preload.so"
#define LIB "libgpuprof.so" /* and .so.N, .so.N.M.P */

/* Whether one LD_PRELOAD entry (len bytes at e) names this library or
 * libgpuprof.so. */
static int is_self(const char *e, size_t len)
{
    size_t n = sizeof(SELF) - 1;
    if (len >= n && memcmp(e + len - n, SELF, n) == 0 &&
        (len == n || e[len - n - 1] == '/'))
        return 1;
    const char *base = e + len;
    while (base > e && base[-1] != '/')
        base--;
    n = sizeof(LIB) - 1;
    return (size_t)(e + len - base) >= n && memcmp(base, LIB, n) == 0 &&
           (base[n] == '.' || base + n == e + len);
}

/* LD_PRELOAD without this library (entries are separated by ':' or ' ');
 * unset when nothing else is left. */
static void drop_self(void)
{
    const char *cur = getenv("LD_PRELOAD");
    if (!cur)
        return;
    size_t size = strlen(cur) + 1;
    char *keep = malloc(size);
    if (!keep)
        return;
    size_t used = 0;
    for (const char *p = cur; *p;) {
        size_t len = strcspn(p, ": ");
        if (len && !is_self(p, len)) {
            if (used)
                keep[used++] = ':';
            memcpy(keep + used, p, len);
            used += len;
        }
        p += len;
        p += *p != '\0';
    }
    keep[used] = '\0';
    if (used)
        setenv("LD_PRELOAD", keep, 1);
    else
        unsetenv("LD_PRELOAD");
    free(keep);
}

/* Whether process `pid` (0: this one) runs a wrapper program, by the name
 * of its executable file. */
static bool is_wrapper(long pid)
{
    static const char *const names[] = {
        "sh",   "bash",    "dash",   "zsh",     "ksh",   "mksh",  "ash",
        "env",  "nice",    "nohup",  "stdbuf",  "taskset", "numactl",
        "timeout", "setsid", "chrt", "ionice",  "time"};
    char link[64], exe[4096];
    if (pid)
        snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
    else
        snprintf(link, sizeof(link), "/proc/self/exe");
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(base, names[i]))
            return true;
    return false;
}

/* The parent of process `pid`, from /proc/PID/stat; 0 when unknown. */
static long parent_of(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold anything */
    long ppid = 0;
    return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : 0;
}

/* Whether process `pid` holds the pipe `pipe` open for reading: its fd
 * links in /proc carry the open mode in their permission bits. */
static bool reads_pipe(long pid, const struct stat *pipe)
{
    char path[64], fd[64 + 256];
    snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        struct stat st, lst;
        snprintf(fd, sizeof(fd), "%s/%s", path, e->d_name);
        found = e->d_name[0] != '.' && stat(fd, &st) == 0 &&
                st.st_ino == pipe->st_ino && st.st_dev == pipe->st_dev &&
                lstat(fd, &lst) == 0 && (lst.st_mode & S_IRUSR) &&
                !(lst.st_mode & S_IWUSR);
    }
    closedir(d);
    return found;
}

/* A wrapper's helper: not the process `gpuprof run` started
 * (GPUPROF_RUN_PID), and a wrapper among its ancestors reads its standard
 * output. The ancestors looked at are wrappers, up to that process (never
 * above it: a shell reading `gpuprof run`'s own output is not a wrapper of
 * the run), or the parent alone when no run is known. */
static bool is_helper(void)
{
    const char *v = getenv("GPUPROF_RUN_PID");
    long run = v ? strtol(v, NULL, 10) : 0, pid = (long)getpid();
    struct stat out;
    if (run == pid || fstat(1, &out) != 0 || !S_ISFIFO(out.st_mode))
        return false;
    for (int depth = 0; depth < 16; depth++) {
        pid = parent_of(pid);
        if (pid <= 1 || !is_wrapper(pid))
            return false;
        if (reads_pipe(pid, &out))
            return true;
        if (pid == run || run <= 0)
            return false;
    }
    return false;
}

__attribute__((constructor)) static void gpuprof_preload_init(void)
{
    if (is_wrapper(0))
        return; /* passes the library on, measures nothing */
    if (is_helper()) {
        drop_self();
        return;
    }
    const char *follow = getenv("GPUPROF_FOLLOW_CHILDREN");
    if (!follow || strcmp(follow, "1") != 0)
        drop_self();
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_JOINABLE;
    (void)gpuprof_init(&o);
}
