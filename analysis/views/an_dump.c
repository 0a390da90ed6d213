/*
 * an_dump.c - the text form of one profile (`gpuprof dump`): identity,
 * non-zero counters, the devices described, then every thread's tree, indented two spaces per
 * level, children in the order they were created, with each node's
 * non-zero metrics (times human-readable). Output is deterministic.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

static void print_value(FILE *out, const gpuprof__io_profile *p, uint32_t m,
                        uint64_t v)
{
    char buf[64];
    const char *name = gpuprof__io_str(p, p->metrics[m].name);
    if (p->metrics[m].type == GPUPROF_IO_F64) {
        double d;
        memcpy(&d, &v, sizeof(d));
        fprintf(out, " %s=%g", name, d);
    } else if (p->metrics[m].unit == GPUPROF_IO_UNIT_NS) {
        gpuprof__an_fmt_ns(buf, sizeof(buf), v);
        fprintf(out, " %s=%s", name, buf);
    } else {
        fprintf(out, " %s=%" PRIu64, name, v);
    }
}

/* "device    cuda 0: name=... sm_count=132 ...", one line per device
 * (format 1.3 profiles: section DEVICES), in the order described. */
static void print_devices(const gpuprof__io_profile *p, FILE *out)
{
    for (uint32_t i = 0; i < p->devattr_count; i++) {
        const gpuprof__io_device_attr *a = &p->devattrs[i];
        bool next = i == 0 || a->api != p->devattrs[i - 1].api ||
                    a->device != p->devattrs[i - 1].device;
        if (next)
            fprintf(out, "%sdevice     %s %" PRIu32 ":", i ? "\n" : "",
                    gpuprof__io_str(p, a->api), a->device);
        if (a->type == GPUPROF_IO_ATTR_STR)
            fprintf(out, " %s=\"%s\"", gpuprof__io_str(p, a->key),
                    gpuprof__io_str(p, (uint32_t)a->value));
        else
            fprintf(out, " %s=%" PRIu64, gpuprof__io_str(p, a->key),
                    a->value);
    }
    if (p->devattr_count)
        fputc('\n', out);
}

static void print_header(const gpuprof_an_profile *ap, FILE *out)
{
    const gpuprof__io_profile *p = ap->io;
    char dur[64];
    gpuprof__an_fmt_ns(dur, sizeof(dur), p->end_ns - p->start_ns);
    fprintf(out, "profile    %s\n", ap->path);
    fprintf(out, "host       %s  pid %" PRIu32 "  rank ",
            gpuprof__io_str(p, p->host), p->pid);
    if (p->rank < 0)
        fprintf(out, "-\n");
    else
        fprintf(out, "%" PRId32 "\n", p->rank);
    fprintf(out, "program    %s\n", gpuprof__io_str(p, p->cmdline));
    fprintf(out, "generation %" PRIu64 " (%s%s)\n", p->generation,
            p->flags & GPUPROF_IO_PROFILE_FINAL
                ? "final"
                : "partial: process still running or killed",
            p->flags & GPUPROF_IO_PROFILE_FORKED ? ", fork child" : "");
    fprintf(out, "duration   %s\n", dur);
    fprintf(out, "threads    %" PRIu32 "\n", p->thread_count);
    fprintf(out, "counters  ");
    int any = 0;
    for (uint32_t i = 0; i < p->counter_count; i++)
        if (p->counters[i].value) {
            fprintf(out, " %s=%" PRIu64,
                    gpuprof__io_str(p, p->counters[i].name),
                    p->counters[i].value);
            any = 1;
        }
    fprintf(out, "%s\n", any ? "" : " (all zero)");
    print_devices(p, out);
}

static void print_node(const gpuprof_an_profile *ap, FILE *out, uint32_t t,
                       uint32_t n, uint32_t depth)
{
    const gpuprof__io_profile *p = ap->io;
    uint32_t i = p->threads[t].first_node + n;
    const gpuprof__io_node *node = &p->nodes[i];
    fprintf(out, "%*s%s", (int)(2 * depth + 2), "",
            gpuprof_an_node_name(ap, t, n));
    for (uint32_t k = 0; k < node->value_count; k++)
        print_value(out, p, p->values[node->first_value + k].metric,
                    p->values[node->first_value + k].bits);
    if (node->flags & GPUPROF_IO_NODE_OPEN)
        fprintf(out, " [open]");
    if (node->flags & GPUPROF_IO_NODE_UNBALANCED)
        fprintf(out, " [unbalanced]");
    fputc('\n', out);
}

static void print_thread_line(const gpuprof__io_profile *p, FILE *out,
                              uint32_t t)
{
    const gpuprof__io_thread *th = &p->threads[t];
    fprintf(out, "\nthread %" PRIu32 " \"%s\" tid %" PRIu64 "%s%s%s\n", t,
            gpuprof__io_str(p, th->name), th->tid,
            th->flags & GPUPROF_IO_THREAD_MAIN ? " [main]" : "",
            th->flags & GPUPROF_IO_THREAD_EXITED ? " [exited]" : "",
            th->flags & GPUPROF_IO_THREAD_MERGED ? " [merged]" : "");
}

/* Prints thread t's tree depth-first, children in file order. Parents
 * precede children in the file, so one pass builds the child lists (first
 * child, next sibling); the walk then needs no stack. */
static int print_thread(const gpuprof_an_profile *ap, FILE *out, uint32_t t)
{
    const gpuprof__io_profile *p = ap->io;
    const gpuprof__io_node *nodes = &p->nodes[p->threads[t].first_node];
    uint32_t n = p->threads[t].node_count, *first = malloc(n * sizeof(*first)),
             *next = malloc(n * sizeof(*next)),
             *last = malloc(n * sizeof(*last));
    int ok = first && next && last;
    if (ok) {
        print_thread_line(p, out, t);
        for (uint32_t i = 0; i < n; i++)
            first[i] = next[i] = UINT32_MAX;
        for (uint32_t i = 1; i < n; i++) {
            uint32_t par = nodes[i].parent;
            if (first[par] == UINT32_MAX)
                first[par] = i;
            else
                next[last[par]] = i;
            last[par] = i;
        }
        uint32_t c = first[0], depth = 0;
        while (c != UINT32_MAX) {
            print_node(ap, out, t, c, depth);
            if (first[c] != UINT32_MAX) {
                c = first[c], depth++;
                continue;
            }
            while (c != 0 && next[c] == UINT32_MAX)
                c = nodes[c].parent, depth--;
            c = c == 0 ? UINT32_MAX : next[c];
        }
    }
    free(first), free(next), free(last);
    return ok;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_profile_print(
    const gpuprof_an_profile *ap, FILE *out, uint32_t flags)
{
    if (!ap || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_profile_print: bad argument");
    print_header(ap, out);
    for (uint32_t t = 0; t < ap->io->thread_count; t++)
        if (!print_thread(ap, out, t))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory",
                                    ap->path);
    if (fflush(out) != 0 || ferror(out))
        return gpuprof__an_fail(GPUPROF_E_IO, "cannot write the dump");
    return GPUPROF_OK;
}
