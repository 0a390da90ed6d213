/*
 * check.c - structural validation of an in-memory profile.
 *
 * Checksums catch damage; this catches files that are well-formed bytes but
 * wrong content (a fuzzer, a buggy writer, a future writer that broke the
 * rules): every string offset inside the table, every parent before its
 * child, every thread's node range contiguous, every metric index known,
 * no zero values. Code above lib/io relies on these guarantees and does no
 * bounds checks of its own.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "io/io.h"
#include "io/layout.h"

static int bad(char *err, size_t errsize, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errsize, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errsize)
        vsnprintf(err, errsize, fmt, ap);
    va_end(ap);
    return GPUPROF_IO_ERR_FORMAT;
}

#define STR_OK(off) ((uint64_t)(off) < p->strings_size)

/* A metric this reader cannot interpret: in a file of a later minor
 * version that is a version the reader lacks (refused naming both
 * versions and the metric); otherwise the file is damaged. */
static int newer(const gpuprof__io_profile *p, char *err, size_t es, uint32_t i)
{
    const gpuprof__io_metric *m = &p->metrics[i];
    if (p->format_minor <= GPUPROF_IO_VERSION_MINOR)
        return bad(err, es, "metric %u: field out of range", i);
    if (err && es)
        snprintf(err, es,
                 "format %u.%u is newer than this reader's %u.%u: "
                 "metric '%s' (type %u, combine %u, unit %u, kind %u, flags "
                 "%#x) needs a newer gpuprof",
                 GPUPROF_IO_VERSION_MAJOR, p->format_minor,
                 GPUPROF_IO_VERSION_MAJOR, GPUPROF_IO_VERSION_MINOR,
                 p->strings + m->name, m->type, m->combine, m->unit, m->kind,
                 m->flags);
    return GPUPROF_IO_ERR_VERSION;
}

/* DEVICES (format 1.3): names in the string table, a known value type (a
 * later minor's type is a version this reader lacks), string values in
 * the table. */
static int check_devices(const gpuprof__io_profile *p, char *err, size_t es)
{
    for (uint32_t i = 0; i < p->devattr_count; i++) {
        const gpuprof__io_device_attr *d = &p->devattrs[i];
        if (!STR_OK(d->api) || !STR_OK(d->key) || !p->strings[d->key])
            return bad(err, es, "device attribute %u: bad name", i);
        if (d->type > GPUPROF_IO_ATTR_STR) {
            if (p->format_minor <= GPUPROF_IO_VERSION_MINOR)
                return bad(err, es, "device attribute %u: type %u unknown",
                           i, d->type);
            if (err && es)
                snprintf(err, es,
                         "format %u.%u is newer than this reader's %u.%u: "
                         "device attribute '%s' (type %u) needs a newer "
                         "gpuprof",
                         GPUPROF_IO_VERSION_MAJOR, p->format_minor,
                         GPUPROF_IO_VERSION_MAJOR, GPUPROF_IO_VERSION_MINOR,
                         p->strings + d->key, d->type);
            return GPUPROF_IO_ERR_VERSION;
        }
        if (d->type == GPUPROF_IO_ATTR_STR && !STR_OK(d->value))
            return bad(err, es, "device attribute %u: string out of range",
                       i);
    }
    return 0;
}

static int check_tables(const gpuprof__io_profile *p, char *err, size_t es)
{
    if (!p->strings || p->strings_size == 0 || p->strings_size > MAX_RAW ||
        p->strings[0] != '\0' || p->strings[p->strings_size - 1] != '\0')
        return bad(err, es, "string table must start and end with NUL");
    if (!STR_OK(p->host) || !STR_OK(p->exe) || !STR_OK(p->cmdline))
        return bad(err, es, "identity: string offset out of range");
    for (uint32_t i = 0; i < p->metric_count; i++) {
        const gpuprof__io_metric *m = &p->metrics[i];
        if (!STR_OK(m->name) || !STR_OK(m->description) ||
            !STR_OK(m->count_name))
            return bad(err, es, "metric %u: string offset out of range", i);
        if (m->type > GPUPROF_IO_F64 || m->combine > GPUPROF_IO_MAX ||
            m->unit > GPUPROF_IO_UNIT_BYTES ||
            m->kind > GPUPROF_IO_KIND_INSTR ||
            (m->flags & ~GPUPROF_IO_METRIC_FLAGS))
            return newer(p, err, es, i);
        if (!(m->flags & GPUPROF_IO_METRIC_ODD) != !m->count_name)
            return bad(err, es,
                       "metric %u: an odd sum needs its count "
                       "metric, and only an odd sum has one",
                       i);
    }
    for (uint32_t i = 0; i < p->module_count; i++)
        if (!STR_OK(p->modules[i].path))
            return bad(err, es, "module %u: path offset out of range", i);
    for (uint32_t i = 0; i < p->counter_count; i++)
        if (!STR_OK(p->counters[i].name))
            return bad(err, es, "counter %u: name offset out of range", i);
    return check_devices(p, err, es);
}

static int check_node(const gpuprof__io_profile *p, uint32_t rel,
                      const gpuprof__io_node *n, char *err, size_t es)
{
    if (rel == 0)
        return n->kind == GPUPROF_IO_NODE_ROOT && n->parent == GPUPROF_IO_NONE
                   ? 0
                   : bad(err, es, "a thread's first node is not its root");
    if (n->kind == GPUPROF_IO_NODE_ROOT ||
        n->kind >= GPUPROF_IO_NODE_KIND_COUNT)
        return bad(err, es, "node kind %u not valid here", n->kind);
    if (n->parent >= rel)
        return bad(err, es, "node parent %u does not precede node %u",
                   n->parent, rel);
    if ((n->kind == GPUPROF_IO_NODE_REGION ||
         n->kind == GPUPROF_IO_NODE_KERNEL) &&
        !STR_OK(n->key_a))
        return bad(err, es, "node name offset out of range");
    if ((n->kind == GPUPROF_IO_NODE_FRAME ||
         n->kind == GPUPROF_IO_NODE_GPU_INSTR) &&
        n->key_a >= p->module_count)
        return bad(err, es, "node module index %u out of range", n->key_a);
    if ((n->kind == GPUPROF_IO_NODE_FRAME ||
         n->kind == GPUPROF_IO_NODE_GPU_INSTR) &&
        !(p->modules[n->key_a].flags & GPUPROF_IO_MODULE_GPU) !=
            (n->kind == GPUPROF_IO_NODE_FRAME))
        return bad(err, es, "node module %u is not a %s", n->key_a,
                   n->kind == GPUPROF_IO_NODE_FRAME ? "CPU load module"
                                                    : "GPU binary");
    if (n->kind == GPUPROF_IO_NODE_KERNEL && n->key_b != GPUPROF_IO_NONE &&
        (n->key_b >= p->module_count ||
         !(p->modules[n->key_b].flags & GPUPROF_IO_MODULE_GPU)))
        return bad(err, es, "kernel node names GPU binary %" PRIu64
                   " that is not one", n->key_b);
    return 0;
}

static int check_values(const gpuprof__io_profile *p, const gpuprof__io_node *n,
                        uint64_t first, char *err, size_t es)
{
    if (n->first_value != first || first + n->value_count > p->value_count)
        return bad(err, es, "node values are not contiguous");
    for (uint32_t k = 0; k < n->value_count; k++) {
        const gpuprof__io_value *v = &p->values[first + k];
        if (v->metric >= p->metric_count)
            return bad(err, es, "value metric %u out of range", v->metric);
        if (v->bits == 0)
            return bad(err, es, "zero value stored (only non-zero allowed)");
    }
    return 0;
}

int gpuprof__io_check(const gpuprof__io_profile *p, char *err, size_t es)
{
    int rc = check_tables(p, err, es);
    if (rc)
        return rc;
    uint64_t node = 0, value = 0;
    for (uint32_t t = 0; t < p->thread_count; t++) {
        const gpuprof__io_thread *th = &p->threads[t];
        if (!STR_OK(th->name))
            return bad(err, es, "thread %u: name offset out of range", t);
        if (th->first_node != node || th->node_count == 0 ||
            node + th->node_count > p->node_count)
            return bad(err, es, "thread %u: node range not contiguous", t);
        for (uint32_t i = 0; i < th->node_count; i++) {
            const gpuprof__io_node *n = &p->nodes[node + i];
            if ((rc = check_node(p, i, n, err, es)) ||
                (rc = check_values(p, n, value, err, es)))
                return rc;
            value += n->value_count;
        }
        node += th->node_count;
    }
    if (node != p->node_count)
        return bad(err, es, "%llu nodes belong to no thread",
                   (unsigned long long)(p->node_count - node));
    if (value != p->value_count)
        return bad(err, es, "%llu values belong to no node",
                   (unsigned long long)(p->value_count - value));
    return 0;
}
