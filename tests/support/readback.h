/*
 * readback.h - white-box suites that measure through the library read the
 * profile it wrote back through lib/io and look values up by name. Header
 * only: it calls gpuprof_output_path, so only suites linked with the core
 * include it.
 */
#ifndef GPUPROF_TEST_READBACK_H
#define GPUPROF_TEST_READBACK_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gpuprof.h"
#include "io/io.h"

/* This process's current profile, decoded (the test fails if it cannot). */
static inline gpuprof__io_profile *rb_load(void)
{
    char path[1024], err[256];
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    gpuprof__io_profile *p = NULL;
    int rc = gpuprof__io_read_file(path, &p, err, sizeof(err));
    ck_assert_msg(rc == 0, "read %s: %s", path, err);
    return p;
}

/* The index of a metric by name (the test fails if there is none). */
static inline uint32_t rb_metric(const gpuprof__io_profile *p, const char *name)
{
    for (uint32_t i = 0; i < p->metric_count; i++)
        if (!strcmp(gpuprof__io_str(p, p->metrics[i].name), name))
            return i;
    ck_abort_msg("no metric %s", name);
    return 0;
}

/* The value of metric `m` at absolute node `node` (0 when not stored). */
static inline uint64_t rb_val(const gpuprof__io_profile *p, uint32_t node,
                              const char *m)
{
    uint32_t id = rb_metric(p, m);
    const gpuprof__io_node *n = &p->nodes[node];
    for (uint32_t i = 0; i < n->value_count; i++)
        if (p->values[n->first_value + i].metric == id)
            return p->values[n->first_value + i].bits;
    return 0;
}

/* Attribute `key` of device `dev` of `api` in the profile's DEVICES (a
 * string's offset for a string), UINT64_MAX when it has none. */
static inline uint64_t rb_device(const gpuprof__io_profile *p, const char *api,
                                 uint32_t dev, const char *key)
{
    for (uint32_t i = 0; i < p->devattr_count; i++) {
        const gpuprof__io_device_attr *a = &p->devattrs[i];
        if (a->device == dev && !strcmp(gpuprof__io_str(p, a->api), api) &&
            !strcmp(gpuprof__io_str(p, a->key), key))
            return a->value;
    }
    return UINT64_MAX;
}

/* A counter by name (the test fails if there is none). */
static inline uint64_t rb_counter(const gpuprof__io_profile *p,
                                  const char *name)
{
    for (uint32_t i = 0; i < p->counter_count; i++)
        if (!strcmp(gpuprof__io_str(p, p->counters[i].name), name))
            return p->counters[i].value;
    ck_abort_msg("no counter %s", name);
    return 0;
}

/* Is absolute node i beneath a region named `region`? NULL: anywhere. */
static inline bool rb_under_region(const gpuprof__io_profile *p, uint32_t i,
                                   const char *region)
{
    if (!region)
        return true;
    const gpuprof__io_thread *th = NULL;
    for (uint32_t t = 0; t < p->thread_count && !th; t++)
        if (i >= p->threads[t].first_node &&
            i < p->threads[t].first_node + p->threads[t].node_count)
            th = &p->threads[t];
    ck_assert_ptr_nonnull(th);
    for (uint32_t r = i - th->first_node; r != 0;
         r = p->nodes[th->first_node + r].parent) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + r];
        if (n->kind == GPUPROF_IO_NODE_REGION &&
            !strcmp(gpuprof__io_str(p, n->key_a), region))
            return true;
    }
    return false;
}

/* Sum of `metric` over GPU-operation placeholders of op `kind` (0: any)
 * beneath `region` (NULL: anywhere), or over kernel nodes named `kname`
 * when given. */
static inline uint64_t rb_sum(const gpuprof__io_profile *p, const char *metric,
                              uint32_t kind, const char *kname,
                              const char *region)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        bool hit = kname ? n->kind == GPUPROF_IO_NODE_KERNEL &&
                               !strcmp(gpuprof__io_str(p, n->key_a), kname)
                         : n->kind == GPUPROF_IO_NODE_GPU_OP &&
                               (!kind || n->key_a == kind);
        if (hit && rb_under_region(p, i, region))
            s += rb_val(p, i, metric);
    }
    return s;
}

/* Flushes this process's measurement and decodes its profile. */
static inline gpuprof__io_profile *rb_flush_and_load(void)
{
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    return rb_load();
}

#endif
