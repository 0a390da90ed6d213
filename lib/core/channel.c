/*
 * channel.c - the SPSC channel of channel.h: a chain of rings, cached
 * indices, growth up to a bound, drops counted.
 *
 * Memory order, in one place: the producer writes a slot, then stores
 * `tail` with release; the consumer loads `tail` with acquire before
 * reading slots. The consumer reads a slot, then stores `head` with
 * release; the producer loads `head` with acquire before writing over the
 * slot. When the producer leaves a segment it stores `next` with release
 * after its last `tail` store, so a consumer that sees `next` and then
 * reloads `tail` sees every item of the old segment.
 */
#include "core/channel.h"

#include <stdlib.h>
#include <string.h>

static gp_chan_seg *seg_new(uint64_t slots, size_t item_size)
{
    gp_chan_seg *s;
    if (posix_memalign((void **)&s, GP_CACHELINE, sizeof(*s)))
        return NULL;
    memset(s, 0, sizeof(*s));
    /* Slots from a line boundary: items of whole lines stay whole. */
    if (posix_memalign((void **)&s->slots, GP_CACHELINE, slots * item_size))
        s->slots = NULL;
    if (!s->slots) {
        free(s);
        return NULL;
    }
    s->mask = slots - 1;
    atomic_init(&s->next, NULL);
    atomic_init(&s->tail, 0);
    atomic_init(&s->head, 0);
    return s;
}

static void seg_free(gp_chan_seg *s)
{
    free(s->slots);
    free(s);
}

bool gpuprof__chan_init(gp_chan_spsc *c, size_t item_size, uint64_t min_items,
                        uint64_t max_items)
{
    memset(c, 0, sizeof(*c));
    uint64_t n = 2;
    while (n < min_items)
        n *= 2;
    if (max_items && n > max_items) /* a bound below min: honour the bound */
        while (n > 2 && n > max_items)
            n /= 2;
    c->item_size = item_size;
    c->max_items = max_items;
    c->pseg = c->cseg = seg_new(n, item_size);
    c->capacity = n;
    return c->pseg != NULL;
}

void gpuprof__chan_destroy(gp_chan_spsc *c)
{
    gp_chan_seg *s = c->cseg;
    while (s) {
        gp_chan_seg *next = gp_load_relaxed(&s->next);
        seg_free(s);
        s = next;
    }
    memset(c, 0, sizeof(*c));
}

/* Producer: links a larger segment; NULL when at the bound or OOM. */
static gp_chan_seg *grow(gp_chan_spsc *c)
{
    gp_chan_seg *old = c->pseg;
    uint64_t live = c->capacity - gp_load_acquire(&c->released);
    uint64_t n = (old->mask + 1) * 2;
    if (c->max_items) {
        while (n > 2 && live + n > c->max_items)
            n /= 2;
        if (live + n > c->max_items)
            return NULL;
    }
    gp_chan_seg *s = seg_new(n, c->item_size);
    if (!s)
        return NULL;
    c->capacity += n;
    gp_store_release(&old->next, s);
    c->pseg = s;
    c->ptail = 0;
    c->phead_cache = 0;
    return s;
}

void *gpuprof__chan_reserve_slow(gp_chan_spsc *c)
{
    gp_chan_seg *s = c->pseg;
    uint64_t t = c->ptail;
    c->phead_cache = gp_load_acquire(&s->head);
    if (t - c->phead_cache > s->mask) {
        if (!(s = grow(c))) {
            gp_fetch_add_relaxed(&c->dropped, 1);
            return NULL;
        }
        t = 0;
    }
    return s->slots + (t & s->mask) * c->item_size;
}

/* Consumer: makes c->cseg a segment with items, if there are any. */
static bool refill(gp_chan_spsc *c)
{
    for (;;) {
        gp_chan_seg *s = c->cseg;
        c->ctail_cache = gp_load_acquire(&s->tail);
        if (c->chead != c->ctail_cache)
            return true;
        gp_chan_seg *next = gp_load_acquire(&s->next);
        if (!next)
            return false;
        c->ctail_cache = gp_load_acquire(&s->tail); /* final, now */
        if (c->chead != c->ctail_cache)
            return true;
        gp_fetch_add_relaxed(&c->released, s->mask + 1);
        seg_free(s);
        c->cseg = next;
        c->chead = 0;
        c->ctail_cache = 0;
    }
}

bool gpuprof__chan_pop(gp_chan_spsc *c, void *item)
{
    if (c->chead == c->ctail_cache && !refill(c))
        return false;
    gp_chan_seg *s = c->cseg;
    uint64_t h = c->chead;
    memcpy(item, s->slots + (h & s->mask) * c->item_size, c->item_size);
    c->chead = h + 1;
    gp_store_release(&s->head, h + 1);
    return true;
}

size_t gpuprof__chan_drain(gp_chan_spsc *c,
                           void (*fn)(void *ctx, const void *item), void *ctx,
                           size_t max)
{
    size_t done = 0;
    while ((!max || done < max) &&
           (c->chead != c->ctail_cache || refill(c))) {
        gp_chan_seg *s = c->cseg;
        uint64_t h = c->chead, end = c->ctail_cache;
        if (max && end - h > max - done)
            end = h + (max - done);
        for (; h != end; h++)
            fn(ctx, s->slots + (h & s->mask) * c->item_size);
        done += (size_t)(end - c->chead);
        c->chead = end;
        gp_store_release(&s->head, end); /* the slots go back at once */
    }
    return done;
}

bool gpuprof__chan_empty(gp_chan_spsc *c)
{
    return c->chead == c->ctail_cache && !refill(c);
}
