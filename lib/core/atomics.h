/*
 * atomics.h - the one place the core names memory orders.
 *
 * Thin, 1:1 wrappers over C11 <stdatomic.h> so every access says which
 * order it uses; there are no ad-hoc barriers anywhere else. The "owner"
 * helpers encode the pattern the CCT relies on: a value that exactly one
 * thread writes and other threads may read. The writer uses a relaxed load
 * and a relaxed store (no read-modify-write, so no lock prefix on x86), the
 * readers relaxed loads: each read sees some whole value the owner stored.
 */
#ifndef GPUPROF_ATOMICS_H
#define GPUPROF_ATOMICS_H

#include <stdatomic.h>
#include <stdint.h>

#define gp_load_relaxed(p) atomic_load_explicit((p), memory_order_relaxed)
#define gp_load_acquire(p) atomic_load_explicit((p), memory_order_acquire)
#define gp_store_relaxed(p, v)                                                  \
    atomic_store_explicit((p), (v), memory_order_relaxed)
#define gp_store_release(p, v)                                                  \
    atomic_store_explicit((p), (v), memory_order_release)
#define gp_fetch_add_relaxed(p, v)                                              \
    atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define gp_fetch_add_release(p, v)                                              \
    atomic_fetch_add_explicit((p), (v), memory_order_release)
#define gp_exchange_acq_rel(p, v)                                               \
    atomic_exchange_explicit((p), (v), memory_order_acq_rel)
/* On failure *expected gets the value found. */
#define gp_cas_weak_release(p, expected, v)                                     \
    atomic_compare_exchange_weak_explicit((p), (expected), (v),                 \
                                          memory_order_release,                 \
                                          memory_order_relaxed)

/* A full fence: the store-then-load handshakes (thread exit against the
 * monitor, gpu.c) need a store and a later load ordered both ways. */
#define gp_fence_seq_cst() atomic_thread_fence(memory_order_seq_cst)

/* Single-writer add: only the owning thread may call it on `p`. */
static inline void gp_owner_add(_Atomic uint64_t *p, uint64_t v)
{
    gp_store_relaxed(p, gp_load_relaxed(p) + v);
}

/* Internal objects shared between files: hidden, so the hot paths reach
 * them PC-relative rather than through the GOT. */
#define GP_HIDDEN __attribute__((visibility("hidden")))

#define GP_CACHELINE 64
#define GP_ALIGNED_CACHELINE __attribute__((aligned(GP_CACHELINE)))

#endif /* GPUPROF_ATOMICS_H */
