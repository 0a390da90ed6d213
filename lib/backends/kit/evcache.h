/*
 * evcache.h - what a runtime's event handle last stood for: the
 * correlation id of the operation that recorded it (and where: device,
 * stream), for the dependency notes of the built-in backends
 * (lib/backends/kit: shared, header-only, C library only).
 *
 * A cache, not a map: one slot per hash of the handle, a collision
 * replaces the older entry, and a lookup that misses answers "unknown"
 * (the backend then notes nothing: a wait the analysis does not see),
 * never another event's operation. An event the program destroyed and the
 * runtime handed out again names its old operation until it is recorded
 * again (documented by each backend). One mutex: events are recorded and
 * waited for on API paths that are not hot next to the work they wait for.
 */
#ifndef GPUPROF_BE_KIT_EVCACHE_H
#define GPUPROF_BE_KIT_EVCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define GP_EVCACHE_SLOTS 4096u

typedef struct gp_evrec {
    const void *ev;
    uint64_t corr; /* the operation that last recorded it (0: none) */
    uint32_t device, stream;
} gp_evrec;

typedef struct gp_evcache {
    pthread_mutex_t mu;
    gp_evrec slot[GP_EVCACHE_SLOTS];
} gp_evcache;

#define GP_EVCACHE_INIT {PTHREAD_MUTEX_INITIALIZER, {{0}}}

static inline uint32_t gp_evcache_slot(const void *ev)
{
    uint64_t k = (uint64_t)(uintptr_t)ev * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(k >> 52) & (GP_EVCACHE_SLOTS - 1);
}

/* ev was recorded by operation `corr` on (device, stream). */
static inline void gp_evcache_put(gp_evcache *c, const void *ev, uint64_t corr,
                                  uint32_t device, uint32_t stream)
{
    if (!ev)
        return;
    pthread_mutex_lock(&c->mu);
    c->slot[gp_evcache_slot(ev)] = (gp_evrec){ev, corr, device, stream};
    pthread_mutex_unlock(&c->mu);
}

/* What ev last stood for; false when unknown. */
static inline bool gp_evcache_get(gp_evcache *c, const void *ev, gp_evrec *out)
{
    if (!ev)
        return false;
    pthread_mutex_lock(&c->mu);
    *out = c->slot[gp_evcache_slot(ev)];
    pthread_mutex_unlock(&c->mu);
    return out->ev == ev && out->corr;
}

/* Forgets every event. */
static inline void gp_evcache_clear(gp_evcache *c)
{
    pthread_mutex_lock(&c->mu);
    memset(c->slot, 0, sizeof(c->slot));
    pthread_mutex_unlock(&c->mu);
}

#endif
