/*
 * outdir.c - the output directory, looked at when measurement starts.
 *
 * Writable? gpuprof_init creates the directory (snapshot.c) and then
 * creates and removes one file there: when that fails the program hears at
 * once, not after a long run, and measuring goes on -- every later write
 * tries again (the directory may become writable).
 *
 * Stale temporaries: a profile is written to a temporary file that is
 * renamed into place (lib/io/file.c: ".<base>.tmp.<pid>.<n>"); a process
 * killed meanwhile leaves it behind. At init those of dead processes of
 * this host are removed: only names of exactly the library's pattern for
 * this host, ".<host>-<...>-p<pid>.gpuprof.tmp.<pid>.<n>" (the profile's
 * own pid twice), and only when no process of that pid runs here. The
 * probe file follows the same pattern, so a probe left by a kill goes too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

#define TMP_MARK ".gpuprof.tmp."

/* Parses a run of decimal digits at *s (advanced past it); -1 if none. */
static long digits(const char **s)
{
    const char *p = *s;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 100000000L)
        v = v * 10 + (*p++ - '0');
    if (p == *s || (*p >= '0' && *p <= '9'))
        return -1;
    *s = p;
    return v;
}

/* The pid of a temporary this library names for `host`, or -1. */
static long stale_pid(const char *name, const char *host)
{
    size_t hl = strlen(host);
    if (name[0] != '.' || strncmp(name + 1, host, hl) || name[1 + hl] != '-')
        return -1;
    const char *mark = strstr(name + 1 + hl, TMP_MARK);
    if (!mark)
        return -1;
    const char *p = mark + strlen(TMP_MARK);
    long pid = digits(&p);
    if (pid <= 0 || *p++ != '.' || digits(&p) < 0 || *p)
        return -1;
    /* "...-p<pid>" right before the mark: the same pid. */
    char tail[32];
    int tn = snprintf(tail, sizeof(tail), "-p%ld", pid);
    if (mark - name < 1 + (long)hl + tn ||
        strncmp(mark - tn, tail, (size_t)tn) != 0)
        return -1;
    return pid;
}

static bool alive(long pid)
{
    return pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
           errno == EPERM;
}

/* Removes the stale temporaries in `dir`; returns how many. */
static unsigned remove_stale(const char *dir, const char *host)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = stale_pid(e->d_name, host);
        if (pid > 0 && !alive(pid) && unlinkat(dirfd(d), e->d_name, 0) == 0)
            n++;
    }
    closedir(d);
    return n;
}

void gpuprof__outdir_check(const char *dir, const char *host)
{
    unsigned stale = remove_stale(dir, host);
    if (stale)
        gpuprof__log(GPUPROF_LOG_INFO, "removed %u temporary file(s) that "
                     "killed processes left in '%s'", stale, dir);
    char probe[4096 + 600];
    long pid = (long)getpid();
    snprintf(probe, sizeof(probe), "%s/.%s-probe-p%ld" TMP_MARK "%ld.0", dir,
             host, pid, pid);
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        gpuprof__log(GPUPROF_LOG_ERROR, "cannot create files in the output "
                     "directory '%s': %s; measuring goes on, and the profile "
                     "is written when the directory becomes writable", dir,
                     strerror(errno));
        return;
    }
    close(fd);
    unlink(probe);
}
