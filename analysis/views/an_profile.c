/*
 * an_profile.c - one profile file behind the public analysis API, and the
 * text dump `gpuprof dump` prints.
 *
 * The object wraps a profile that lib/io has validated, so accessors only
 * check the caller's indices. Display names of nodes that are not regions
 * (CPU frames, GPU operations, kernels, instructions) are made once at open,
 * so the object is read-only afterwards and safe to share between threads.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

/* One line describing a non-region node. */
static void describe(const gpuprof__io_profile *p, const gpuprof__io_node *n,
                     char *buf, size_t size)
{
    switch (n->kind) {
    case GPUPROF_IO_NODE_FRAME:
        if (!gpuprof__an_pyframe(gpuprof__io_str(p, p->modules[n->key_a].path),
                                 n->key_b, buf, size))
            snprintf(buf, size, "%s+0x%" PRIx64,
                     gpuprof__io_str(p, p->modules[n->key_a].path), n->key_b);
        break;
    case GPUPROF_IO_NODE_GPU_OP:
        snprintf(buf, size, "<gpu %s>", gpuprof__an_op_name(n->key_a));
        break;
    case GPUPROF_IO_NODE_KERNEL:
        if (n->key_b < p->module_count) /* its GPU binary (checked) */
            snprintf(buf, size, "kernel %s [%s]", gpuprof__io_str(p, n->key_a),
                     gpuprof__io_str(p, p->modules[n->key_b].path));
        else
            snprintf(buf, size, "kernel %s", gpuprof__io_str(p, n->key_a));
        break;
    case GPUPROF_IO_NODE_GPU_INSTR:
        snprintf(buf, size, "%s+0x%" PRIx64,
                 gpuprof__io_str(p, p->modules[n->key_a].path), n->key_b);
        break;
    default:
        snprintf(buf, size, "root");
    }
}

static bool make_names(gpuprof_an_profile *ap)
{
    const gpuprof__io_profile *p = ap->io;
    size_t cap = 256, len = 0;
    ap->names = malloc(cap);
    ap->name_off =
        malloc((p->node_count ? p->node_count : 1) * sizeof(uint32_t));
    if (!ap->names || !ap->name_off)
        return false;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        ap->name_off[i] = UINT32_MAX;
        if (n->kind == GPUPROF_IO_NODE_REGION)
            continue;
        char line[512];
        describe(p, n, line, sizeof(line));
        size_t l = strlen(line) + 1;
        if (len + l > cap) {
            while (len + l > cap)
                cap *= 2;
            char *nn = realloc(ap->names, cap);
            if (!nn)
                return false;
            ap->names = nn;
        }
        memcpy(ap->names + len, line, l);
        ap->name_off[i] = (uint32_t)len;
        len += l;
    }
    return true;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_profile_open(const char *path,
                                                      gpuprof_an_profile **out)
{
    if (!path || !out)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_profile_open: NULL argument");
    *out = NULL;
    gpuprof_an_profile *ap = calloc(1, sizeof(*ap));
    if (!ap)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    gpuprof_status st = gpuprof__an_load(path, &ap->io);
    if (st == GPUPROF_OK && (!(ap->path = strdup(path)) || !make_names(ap)))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: out of memory", path);
    if (st != GPUPROF_OK) {
        gpuprof_an_profile_close(ap);
        return st;
    }
    *out = ap;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_profile_close(gpuprof_an_profile *p)
{
    if (!p)
        return;
    gpuprof__io_profile_free(p->io);
    free(p->path);
    free(p->names);
    free(p->name_off);
    free(p);
}

#define IO(p) ((p)->io)
GPUPROF_AN_API const char *gpuprof_an_profile_host(const gpuprof_an_profile *p)
{
    return gpuprof__io_str(IO(p), IO(p)->host);
}
GPUPROF_AN_API const char *gpuprof_an_profile_exe(const gpuprof_an_profile *p)
{
    return gpuprof__io_str(IO(p), IO(p)->exe);
}
GPUPROF_AN_API const char *
gpuprof_an_profile_cmdline(const gpuprof_an_profile *p)
{
    return gpuprof__io_str(IO(p), IO(p)->cmdline);
}
GPUPROF_AN_API uint32_t gpuprof_an_profile_pid(const gpuprof_an_profile *p)
{
    return IO(p)->pid;
}
GPUPROF_AN_API int32_t gpuprof_an_profile_rank(const gpuprof_an_profile *p)
{
    return IO(p)->rank;
}
GPUPROF_AN_API uint64_t
gpuprof_an_profile_generation(const gpuprof_an_profile *p)
{
    return IO(p)->generation;
}
GPUPROF_AN_API uint32_t gpuprof_an_profile_flags(const gpuprof_an_profile *p)
{
    return IO(p)->flags;
}
GPUPROF_AN_API uint64_t gpuprof_an_profile_start_ns(const gpuprof_an_profile *p)
{
    return IO(p)->start_ns;
}
GPUPROF_AN_API uint64_t gpuprof_an_profile_end_ns(const gpuprof_an_profile *p)
{
    return IO(p)->end_ns;
}
GPUPROF_AN_API uint64_t
gpuprof_an_profile_start_realtime_ns(const gpuprof_an_profile *p)
{
    return IO(p)->start_realtime_ns;
}

GPUPROF_AN_API uint32_t gpuprof_an_metric_count(const gpuprof_an_profile *p)
{
    return IO(p)->metric_count;
}

GPUPROF_AN_API const char *gpuprof_an_metric_name(const gpuprof_an_profile *p,
                                                  uint32_t m)
{
    return m < IO(p)->metric_count
               ? gpuprof__io_str(IO(p), IO(p)->metrics[m].name)
               : NULL;
}

GPUPROF_AN_API const char *
gpuprof_an_metric_description(const gpuprof_an_profile *p, uint32_t m)
{
    return m < IO(p)->metric_count
               ? gpuprof__io_str(IO(p), IO(p)->metrics[m].description)
               : NULL;
}

GPUPROF_AN_API gpuprof_an_unit
gpuprof_an_metric_unit(const gpuprof_an_profile *p, uint32_t m)
{
    return m < IO(p)->metric_count ? (gpuprof_an_unit)IO(p)->metrics[m].unit
                                   : GPUPROF_AN_UNIT_COUNT;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_metric_find(
    const gpuprof_an_profile *p, const char *name, uint32_t *m)
{
    if (!name || !m)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_metric_find: NULL argument");
    *m = gpuprof__an_metric(IO(p), name);
    return *m == UINT32_MAX
               ? gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s: no metric '%s'",
                                  p->path, name)
               : GPUPROF_OK;
}

GPUPROF_AN_API uint32_t gpuprof_an_thread_count(const gpuprof_an_profile *p)
{
    return IO(p)->thread_count;
}

#define THREAD_OK(p, t) ((t) < IO(p)->thread_count)
GPUPROF_AN_API uint64_t gpuprof_an_thread_tid(const gpuprof_an_profile *p,
                                              uint32_t t)
{
    return THREAD_OK(p, t) ? IO(p)->threads[t].tid : 0;
}
GPUPROF_AN_API const char *gpuprof_an_thread_name(const gpuprof_an_profile *p,
                                                  uint32_t t)
{
    return THREAD_OK(p, t) ? gpuprof__io_str(IO(p), IO(p)->threads[t].name)
                           : NULL;
}
GPUPROF_AN_API uint32_t gpuprof_an_thread_flags(const gpuprof_an_profile *p,
                                                uint32_t t)
{
    return THREAD_OK(p, t) ? IO(p)->threads[t].flags : 0;
}
GPUPROF_AN_API uint32_t gpuprof_an_node_count(const gpuprof_an_profile *p,
                                              uint32_t t)
{
    return THREAD_OK(p, t) ? IO(p)->threads[t].node_count : 0;
}

/* The absolute index of (t, n), or UINT32_MAX when out of range. */
static uint32_t node_at(const gpuprof_an_profile *p, uint32_t t, uint32_t n)
{
    if (!THREAD_OK(p, t) || n >= IO(p)->threads[t].node_count)
        return UINT32_MAX;
    return IO(p)->threads[t].first_node + n;
}

GPUPROF_AN_API uint32_t gpuprof_an_node_parent(const gpuprof_an_profile *p,
                                               uint32_t t, uint32_t n)
{
    uint32_t i = node_at(p, t, n);
    return i == UINT32_MAX ? UINT32_MAX : IO(p)->nodes[i].parent;
}
GPUPROF_AN_API gpuprof_an_node_kind
gpuprof_an_node_kind_of(const gpuprof_an_profile *p, uint32_t t, uint32_t n)
{
    uint32_t i = node_at(p, t, n);
    return i == UINT32_MAX ? GPUPROF_AN_NODE_ROOT
                           : (gpuprof_an_node_kind)IO(p)->nodes[i].kind;
}
GPUPROF_AN_API uint32_t gpuprof_an_node_flags(const gpuprof_an_profile *p,
                                              uint32_t t, uint32_t n)
{
    uint32_t i = node_at(p, t, n);
    return i == UINT32_MAX ? 0 : IO(p)->nodes[i].flags;
}
GPUPROF_AN_API const char *gpuprof_an_node_name(const gpuprof_an_profile *p,
                                                uint32_t t, uint32_t n)
{
    uint32_t i = node_at(p, t, n);
    if (i == UINT32_MAX)
        return NULL;
    if (IO(p)->nodes[i].kind == GPUPROF_IO_NODE_REGION)
        return gpuprof__io_str(IO(p), IO(p)->nodes[i].key_a);
    return p->names + p->name_off[i];
}
GPUPROF_AN_API uint64_t gpuprof_an_node_value(const gpuprof_an_profile *p,
                                              uint32_t t, uint32_t n,
                                              uint32_t m)
{
    uint32_t i = node_at(p, t, n);
    return i == UINT32_MAX ? 0 : gpuprof__an_value(IO(p), i, m);
}

GPUPROF_AN_API uint32_t gpuprof_an_counter_count(const gpuprof_an_profile *p)
{
    return IO(p)->counter_count;
}
GPUPROF_AN_API const char *gpuprof_an_counter_name(const gpuprof_an_profile *p,
                                                   uint32_t i)
{
    return i < IO(p)->counter_count
               ? gpuprof__io_str(IO(p), IO(p)->counters[i].name)
               : NULL;
}
GPUPROF_AN_API uint64_t gpuprof_an_counter_value(const gpuprof_an_profile *p,
                                                 uint32_t i)
{
    return i < IO(p)->counter_count ? IO(p)->counters[i].value : 0;
}
