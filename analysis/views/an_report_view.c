/*
 * an_report_view.c - reading a merged report: accessors, path lookup, and
 * the table `gpuprof report` prints.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../base/an_internal.h"

#define NODE_OK(r, i) ((i) < (r)->count)

GPUPROF_AN_API uint32_t
gpuprof_an_report_profile_count(const gpuprof_an_report *r)
{
    return r->profiles;
}
GPUPROF_AN_API uint32_t
gpuprof_an_report_thread_count(const gpuprof_an_report *r)
{
    return r->threads;
}
GPUPROF_AN_API uint32_t
gpuprof_an_report_process_count(const gpuprof_an_report *r)
{
    return r->processes;
}
GPUPROF_AN_API uint32_t gpuprof_an_report_host_count(const gpuprof_an_report *r)
{
    return r->hosts;
}
GPUPROF_AN_API uint64_t gpuprof_an_report_wall_ns(const gpuprof_an_report *r)
{
    return r->last_rt > r->first_rt ? r->last_rt - r->first_rt : 0;
}

GPUPROF_AN_API uint64_t gpuprof_an_report_counter(const gpuprof_an_report *r,
                                                  const char *name)
{
    for (uint32_t i = 0; name && i < r->ncounters; i++)
        if (!strcmp(r->counters[i].name, name))
            return r->counters[i].value;
    return 0;
}

GPUPROF_AN_API uint32_t gpuprof_an_report_node_count(const gpuprof_an_report *r)
{
    return r->count;
}
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_parent(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].parent : UINT32_MAX;
}
GPUPROF_AN_API uint32_t gpuprof_an_report_node_depth(const gpuprof_an_report *r,
                                                     uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].depth : 0;
}
GPUPROF_AN_API const char *
gpuprof_an_report_node_name(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].name : NULL;
}
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_visits(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].visits : 0;
}
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_incl_ns(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].incl : 0;
}
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_excl_ns(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].excl : 0;
}
GPUPROF_AN_API uint32_t gpuprof_an_report_node_flags(const gpuprof_an_report *r,
                                                     uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].flags : 0;
}
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_threads(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].threads : 0;
}

GPUPROF_AN_API uint32_t
gpuprof_an_report_node_processes(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].processes : 0;
}

GPUPROF_AN_API uint64_t
gpuprof_an_report_node_incl_max_ns(const gpuprof_an_report *r, uint32_t n)
{
    return NODE_OK(r, n) ? r->n[n].incl_max : 0;
}

/* max / mean of the threads' inclusive times: 1.00 when balanced. */
static double imbalance(const mnode *m)
{
    if (!m->threads || !m->incl)
        return 0.0;
    return (double)m->incl_max * m->threads / (double)m->incl;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_report_find(const gpuprof_an_report *r,
                                                     const char *path,
                                                     uint32_t *out)
{
    if (!r || !path || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_report_find: NULL argument");
    uint32_t cur = 0;
    const char *p = path;
    while (*p) {
        size_t len = strcspn(p, "/");
        uint32_t next = UINT32_MAX;
        for (uint32_t i = cur + 1;
             i < r->count && r->n[i].depth > r->n[cur].depth; i++)
            if (r->n[i].parent == cur && strlen(r->n[i].name) == len &&
                !strncmp(r->n[i].name, p, len))
                next = i;
        if (next == UINT32_MAX)
            return gpuprof__an_fail(GPUPROF_E_NOTFOUND, "no region at '%s'",
                                    path);
        cur = next;
        p += len;
        p += *p == '/';
    }
    *out = cur;
    return GPUPROF_OK;
}

/* Counters that mean the measurement is incomplete or suspect, with what
 * they count in words. Printed when non-zero. */
static const struct {
    const char *name, *what;
} warnings[] = {
    {"regions.unbalanced",
     "region ends that did not match the innermost open region"},
    {"regions.open_at_finalize", "regions still open at finalize"},
    {"regions.open_at_thread_exit",
     "regions still open when their thread exited"},
    {"regions.depth_exceeded", "regions not recorded: nesting too deep"},
    {"records.dropped", "measurement records dropped"},
    {"records.unattributed", "measurement records without a calling context"},
    {"flush.errors", "profile writes that failed"},
};

static const char *plural(uint32_t n)
{
    return n == 1 ? "" : "s";
}

static void print_summary(const gpuprof_an_report *r, FILE *out)
{
    char wall[64];
    gpuprof__an_fmt_ns(wall, sizeof(wall), gpuprof_an_report_wall_ns(r));
    fprintf(out,
            "%" PRIu32 " profile%s, %" PRIu32 " thread%s, %" PRIu32
            " process%s on %" PRIu32 " host%s, wall time %s\n",
            r->profiles, plural(r->profiles), r->threads, plural(r->threads),
            r->processes, r->processes == 1 ? "" : "es", r->hosts,
            plural(r->hosts), wall);
    for (size_t i = 0; i < sizeof(warnings) / sizeof(warnings[0]); i++) {
        uint64_t v = gpuprof_an_report_counter(r, warnings[i].name);
        if (v)
            fprintf(out, "warning: %s: %" PRIu64 " (%s)\n", warnings[i].what, v,
                    warnings[i].name);
    }
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_report_print(const gpuprof_an_report *r, FILE *out, uint32_t flags)
{
    if (!r || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_report_print: bad argument");
    print_summary(r, out);
    fprintf(out, "Imbal: the largest inclusive time of one thread over the "
                 "mean of the threads "
                 "that entered the region (1.00 = balanced)\n");
    fprintf(out, "\n%12s %12s %12s %7s %6s %8s %6s  %s\n", "Visits",
            "Incl time", "Excl time", "Incl%", "Procs", "Threads", "Imbal",
            "Region");
    uint64_t total = r->n[0].incl;
    for (uint32_t i = 1; i < r->count; i++) {
        const mnode *m = &r->n[i];
        char incl[32], excl[32];
        gpuprof__an_fmt_ns(incl, sizeof(incl), m->incl);
        gpuprof__an_fmt_ns(excl, sizeof(excl), m->excl);
        fprintf(out,
                "%12" PRIu64 " %12s %12s %6.1f%% %6" PRIu32 " %8" PRIu32
                " %6.2f  %*s%s%s%s\n",
                m->visits, incl, excl,
                total ? 100.0 * (double)m->incl / (double)total : 0.0,
                m->processes, m->threads, imbalance(m),
                (int)(2 * (m->depth - 1)), "", m->name,
                m->flags & GPUPROF_IO_NODE_OPEN ? " [open]" : "",
                m->flags & GPUPROF_IO_NODE_UNBALANCED ? " [unbalanced]" : "");
    }
    if (r->count == 1)
        fprintf(out, "(no regions were recorded)\n");
    if (fflush(out) != 0 || ferror(out))
        return gpuprof__an_fail(GPUPROF_E_IO, "cannot write the report");
    return GPUPROF_OK;
}
