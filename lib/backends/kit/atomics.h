/*
 * atomics.h - memory orders named as the core names them (lib/core's
 * atomics.h, which backends may not include), for the built-in backends
 * (lib/backends/kit: shared, header-only, C library only).
 */
#ifndef GPUPROF_BE_KIT_ATOMICS_H
#define GPUPROF_BE_KIT_ATOMICS_H

#include <stdatomic.h>

#define gp_load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define gp_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define gp_store_relaxed(p, v)                                                 \
    atomic_store_explicit((p), (v), memory_order_relaxed)
#define gp_store_release(p, v)                                                 \
    atomic_store_explicit((p), (v), memory_order_release)
#define gp_fetch_add_relaxed(p, v)                                             \
    atomic_fetch_add_explicit((p), (v), memory_order_relaxed)

#endif
