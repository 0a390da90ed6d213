/*
 * an_memory.c - the default memory budget of an aggregation (an_agg.h,
 * gpuprof_an_analysis_set_memory): a quarter of the memory this process
 * may take now -- the system's available memory (MemAvailable of
 * /proc/meminfo) or, when less, what its control group and the groups
 * above it leave (cgroup v2: memory.max - memory.current; v1:
 * memory.limit_in_bytes - memory.usage_in_bytes), never below
 * GPUPROF_AN_MIN_MEMORY; the ranks of gpuprof-mpi on one node share it
 * (gpuprof__an_analysis_set_node_ranks). A quarter leaves room for the page cache the
 * database goes through and for whatever else runs beside the analysis;
 * a budget that holds everything costs nothing (an_agg.h), so it only
 * matters where the analysis would otherwise grow past it.
 *
 * GPUPROF_AN_SYSROOT=DIR reads DIR/proc/... and DIR/sys/fs/cgroup/...
 * instead, so that tests can give the analysis a machine of their own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "an_agg.h"
#include "gpuprof.h"

/* Limits at or above this are "none" (cgroup v1 says so with
 * 9223372036854771712). */
#define NO_LIMIT (1ull << 62)

/* DIR/path under GPUPROF_AN_SYSROOT (path itself without it). */
static void sys_path(char *out, size_t n, const char *path)
{
    const char *root = getenv("GPUPROF_AN_SYSROOT");
    snprintf(out, n, "%s%s", root ? root : "", path);
}

/* The first number in file `path`, or `none` when it says "max" or
 * cannot be read. */
static uint64_t read_u64(const char *path, uint64_t none)
{
    FILE *f = fopen(path, "re");
    char b[64];
    uint64_t v = none;
    if (f && fgets(b, sizeof(b), f) && strncmp(b, "max", 3)) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(b, &end, 10);
        if (end != b && !errno)
            v = x;
    }
    if (f)
        fclose(f);
    return v;
}

/* MemAvailable in bytes (MemFree + Cached before Linux 3.14); 0 when
 * unknown. */
static uint64_t meminfo_available(void)
{
    char p[4200], line[256];
    sys_path(p, sizeof(p), "/proc/meminfo");
    FILE *f = fopen(p, "re");
    uint64_t avail = 0, other = 0;
    bool seen = false;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            avail = (uint64_t)kb << 10, seen = true;
        else if (sscanf(line, "MemFree: %llu kB", &kb) == 1 ||
                 sscanf(line, "Cached: %llu kB", &kb) == 1)
            other += (uint64_t)kb << 10;
    }
    if (f)
        fclose(f);
    return seen ? avail : other;
}

/* What the groups from `dir` up to `top` leave (limit - usage, the
 * least of them); `lim` and `use` are the files' names. */
static uint64_t group_room(char *dir, size_t top, const char *lim,
                           const char *use, uint64_t room)
{
    for (;;) {
        char p[4400];
        snprintf(p, sizeof(p), "%s/%s", dir, lim);
        uint64_t max = read_u64(p, UINT64_MAX);
        if (max < NO_LIMIT) {
            snprintf(p, sizeof(p), "%s/%s", dir, use);
            uint64_t cur = read_u64(p, 0);
            uint64_t left = max > cur ? max - cur : 0;
            room = left < room ? left : room;
        }
        char *slash = strlen(dir) > top ? strrchr(dir + top, '/') : NULL;
        if (!slash)
            return room;
        *slash = '\0'; /* the parent; the top is the last */
    }
}

/* What this process's control groups leave (UINT64_MAX: no limit). A
 * line of /proc/self/cgroup is "0::/path" (v2) or "N:memory,...:/path"
 * (v1); in a container the path may be the host's, missing under the
 * container's /sys/fs/cgroup: its top is then the container's group. */
static uint64_t cgroup_room(void)
{
    char p[4200], line[4096];
    sys_path(p, sizeof(p), "/proc/self/cgroup");
    FILE *f = fopen(p, "re");
    uint64_t room = UINT64_MAX;
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        bool v2 = !strcmp(c1 + 1, "");
        if (!v2 && !strstr(c1 + 1, "memory"))
            continue;
        char top[4200], dir[4400];
        sys_path(top, sizeof(top), v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory");
        snprintf(dir, sizeof(dir), "%s%s", top, strcmp(c2 + 1, "/") ? c2 + 1 : "");
        room = v2 ? group_room(dir, strlen(top), "memory.max", "memory.current",
                               room)
                  : group_room(dir, strlen(top), "memory.limit_in_bytes",
                               "memory.usage_in_bytes", room);
    }
    if (f)
        fclose(f);
    return room;
}

uint64_t gpuprof__an_memory_available(void)
{
    uint64_t avail = meminfo_available(), group = cgroup_room();
    if (!avail)
        return group == UINT64_MAX ? 0 : group;
    return group < avail ? group : avail;
}

uint64_t gpuprof__an_default_budget(uint64_t available, unsigned ranks)
{
    if (!available)
        return 0; /* nothing known: no budget */
    uint64_t b = available / 4 / (ranks ? ranks : 1);
    return b < GPUPROF_AN_MIN_MEMORY ? GPUPROF_AN_MIN_MEMORY : b;
}

/* ---- analysis.txt -------------------------------------------------------
 * How the database was made, for the people who read it later: the
 * budget (and where a default one came from) and what it made the run do.
 * A text file beside the others, put in place with them (before meta.db):
 * its bytes depend on the machine and the options, the other files' never
 * do (doc/FORMATS.md). */
static void info_text(const run *r, char *b, size_t n)
{
    const gpuprof_an_analysis *a = r->a;
    char budget[160];
    if (!a->used_memory)
        snprintf(budget, sizeof(budget), "none");
    else if (a->available && a->node_ranks > 1)
        snprintf(budget, sizeof(budget),
                 "%llu (the default: a quarter of %llu bytes available, "
                 "shared by %u ranks)",
                 (unsigned long long)a->used_memory,
                 (unsigned long long)a->available, a->node_ranks);
    else if (a->available)
        snprintf(budget, sizeof(budget),
                 "%llu (the default: a quarter of %llu bytes available)",
                 (unsigned long long)a->used_memory,
                 (unsigned long long)a->available);
    else
        snprintf(budget, sizeof(budget), "%llu",
                 (unsigned long long)a->used_memory);
    snprintf(b, n,
             "# How this database was made (gpuprof analyze); its other\n"
             "# files do not depend on any of it.\n"
             "gpuprof-analysis %s\n"
             "files %u\n"
             "profiles %u\n"
             "contexts %u\n"
             "threads %u\n"
             "ranks %d\n"
             "memory-budget %s\n"
             "rounds %u %u %u (pass 1 and 2: of files; 3: of contexts)\n"
             "files-decoded-twice %u\n"
             "profiles-read-back %u\n",
             GPUPROF_VERSION_STRING, r->ns, r->t.np, r->t.nc, a->threads,
             r->nranks, budget, r->rounds[0], r->rounds[1], r->rounds[2],
             r->reread, r->readback);
}

gpuprof_status gpuprof__an_info_write(run *r)
{
    char text[1024];
    info_text(r, text, sizeof(text));
    dbfile *f = &r->info;
    gpuprof_status st = gpuprof__an_dbfile_open(f, r->a->output,
                                                "analysis.txt", 0, r->pid0,
                                                false);
    if (st != GPUPROF_OK)
        return st;
    bool ok = gpuprof__an_pwrite_all(f->fd, text, strlen(text), 0);
    int e = errno;
    if (close(f->fd) != 0 && ok)
        ok = false, e = errno;
    f->fd = -1;
    return ok ? GPUPROF_OK
              : gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s",
                                 f->tmp, strerror(e));
}
