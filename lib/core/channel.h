/*
 * channel.h - single-producer/single-consumer channels between threads.
 *
 * The measurement pipeline (DESIGN §3) moves operations and activities
 * between application threads, runtime callback threads and the monitor
 * through channels: one producer thread and one consumer thread each, never
 * a lock, and the application side never waits.
 *
 * A channel is a FIFO of fixed-size items kept in a chain of ring segments.
 * Slots are recycled in place: once the consumer has moved its head past a
 * slot the producer writes the next item into it, so the steady state
 * allocates nothing (the "reverse direction" of the seeds' design is the
 * head index travelling back). Each side caches the other side's index and
 * only reloads it when its cached view says full (producer) or empty
 * (consumer), so an item costs a few plain stores and loads, and the cache
 * line holding an index moves between cores once per batch, not per item.
 * See doc/CORE.md for why this replaced the seeds' CAS-pushed stack.
 *
 * When the consumer lags, the producer links a new segment twice as large,
 * up to `max_items` in all; beyond that items are dropped and counted.
 * Old segments are freed by the consumer when it leaves them.
 *
 * Progress: gp_chan_push is wait-free except when it grows the channel
 * (one malloc, at most log2(max/min) times per channel); gp_chan_pop and
 * gp_chan_drain are wait-free. Exactly one thread may push and exactly one
 * (possibly other) thread may pop at any time; gp_chan_init/_destroy need
 * both quiet.
 */
#ifndef GPUPROF_CORE_CHANNEL_H
#define GPUPROF_CORE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/atomics.h"

typedef struct gp_chan_seg {
    struct gp_chan_seg *_Atomic next; /* set by the producer when it moves on */
    uint64_t mask;                    /* slots - 1 */
    unsigned char *slots;
    /* producer's index, published with release; consumer's cached copy */
    _Atomic uint64_t tail GP_ALIGNED_CACHELINE;
    /* consumer's index, published with release; producer's cached copy */
    _Atomic uint64_t head GP_ALIGNED_CACHELINE;
} gp_chan_seg;

typedef struct gp_chan_spsc {
    /* producer side */
    gp_chan_seg *pseg GP_ALIGNED_CACHELINE;
    uint64_t ptail, phead_cache;
    uint64_t capacity;           /* slots in all segments alive */
    _Atomic uint64_t dropped;    /* items refused beyond max_items */
    /* consumer side */
    gp_chan_seg *cseg GP_ALIGNED_CACHELINE;
    uint64_t chead, ctail_cache;
    _Atomic uint64_t released;   /* slots of segments the consumer freed */
    /* fixed */
    size_t item_size GP_ALIGNED_CACHELINE;
    uint64_t max_items;
} gp_chan_spsc;

/* Sets up an empty channel of items of `item_size` bytes, starting with
 * `min_items` slots (rounded up to a power of two) and growing up to
 * `max_items` (0: no bound). false when out of memory. */
bool gpuprof__chan_init(gp_chan_spsc *c, size_t item_size, uint64_t min_items,
                        uint64_t max_items);
void gpuprof__chan_destroy(gp_chan_spsc *c);

/* Producer, in two steps so an item is written in place: _reserve returns
 * the slot for the next item (NULL when the channel is at its bound or
 * cannot grow: the item is dropped and counted), _commit publishes it. */
void *gpuprof__chan_reserve_slow(gp_chan_spsc *c);
static inline void *gpuprof__chan_reserve(gp_chan_spsc *c)
{
    gp_chan_seg *s = c->pseg;
    uint64_t t = c->ptail;
    if (__builtin_expect(t - c->phead_cache > s->mask, 0))
        return gpuprof__chan_reserve_slow(c);
    return s->slots + (t & s->mask) * c->item_size;
}
static inline void gpuprof__chan_commit(gp_chan_spsc *c)
{
    c->ptail++;
    gp_store_release(&c->pseg->tail, c->ptail);
}
/* Producer: copies one item in; false when it was dropped (see above). */
static inline bool gpuprof__chan_push(gp_chan_spsc *c, const void *item)
{
    void *slot = gpuprof__chan_reserve(c);
    if (!slot)
        return false;
    __builtin_memcpy(slot, item, c->item_size);
    gpuprof__chan_commit(c);
    return true;
}
/* Consumer: copies the oldest item out; false when empty. */
bool gpuprof__chan_pop(gp_chan_spsc *c, void *item);
/* Consumer: hands every item present to fn, oldest first, in batches;
 * returns how many. Stops early after `max` items (0: no limit). */
size_t gpuprof__chan_drain(gp_chan_spsc *c,
                           void (*fn)(void *ctx, const void *item), void *ctx,
                           size_t max);
/* Consumer, or anyone as a hint: is there nothing to pop? One relaxed load
 * when the cached view says empty. */
bool gpuprof__chan_empty(gp_chan_spsc *c);
/* Items refused so far (any thread). */
static inline uint64_t gpuprof__chan_dropped(gp_chan_spsc *c)
{
    return gp_load_relaxed(&c->dropped);
}

#endif /* GPUPROF_CORE_CHANNEL_H */
