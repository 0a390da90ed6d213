/*
 * nodes.h - finding nodes in a decoded profile, for the suites that
 * measure through the library and read the file back (readback.h). Header
 * only; define _GNU_SOURCE before any include (dladdr).
 */
#ifndef GPUPROF_TEST_NODES_H
#define GPUPROF_TEST_NODES_H

#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "io/io.h"

/* Absolute node index of the child of `parent` (absolute) in thread `t`
 * with this kind and key (key_a compared as a string when `name` is given:
 * regions and kernels); UINT32_MAX when there is none. */
static inline uint32_t rb_child(const gpuprof__io_profile *p,
                                const gpuprof__io_thread *t, uint32_t parent,
                                uint8_t kind, uint32_t key, const char *name)
{
    for (uint32_t i = parent + 1; i < t->first_node + t->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (t->first_node + n->parent != parent || n->kind != kind)
            continue;
        if (name ? !strcmp(gpuprof__io_str(p, n->key_a), name)
                 : n->key_a == key)
            return i;
    }
    return UINT32_MAX;
}

/* Every node of `kind` with key_a `key` beneath `top` (absolute), in
 * thread `t`: how many, the first `max` of them in out[]. */
static inline uint32_t rb_find_below(const gpuprof__io_profile *p,
                                     const gpuprof__io_thread *t, uint32_t top,
                                     uint8_t kind, uint32_t key, uint32_t *out,
                                     uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = top + 1; i < t->first_node + t->node_count; i++) {
        if (p->nodes[i].kind != kind || p->nodes[i].key_a != key)
            continue;
        for (uint32_t a = i; a != top && a != t->first_node;
             a = t->first_node + p->nodes[a].parent)
            if (t->first_node + p->nodes[a].parent == top) {
                if (n < max)
                    out[n] = i;
                n++;
                break;
            }
    }
    return n;
}

/* The function a FRAME node's return address lies in (dladdr: this
 * process's own code), "?" when it has no exported name. */
static inline const char *rb_frame_fn(const gpuprof__io_profile *p,
                                      uint32_t node)
{
    const gpuprof__io_node *n = &p->nodes[node];
    ck_assert_int_eq(n->kind, GPUPROF_IO_NODE_FRAME);
    uintptr_t pc = (uintptr_t)(p->modules[n->key_a].base + n->key_b);
    Dl_info di;
    if (!dladdr((void *)(pc - 1), &di) || !di.dli_sname)
        return "?";
    return di.dli_sname;
}

#endif
