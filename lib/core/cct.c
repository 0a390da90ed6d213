/*
 * cct.c - the per-thread calling context tree (see cct.h for the rules that
 * let a flush read it while its owner keeps inserting).
 *
 * Memory: nodes come in chunks of GP_CCT_CHUNK; metric blocks come from a
 * bump arena of 64 KiB pieces. Nothing is freed before the tree is
 * destroyed, which keeps every pointer a reader may hold valid. The child
 * index is a power-of-two open-addressing table at most half full.
 */
#include "core/cct.h"

#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io/io.h"

struct gp_arena_chunk {
    gp_arena_chunk *prev;
    size_t size;
    _Alignas(16) unsigned char mem[];
};

/* Arena pieces start at 4 KiB and double up to 64 KiB, so a thread that
 * enters a handful of regions costs a few KiB, not a fixed large block. */
#define ARENA_FIRST (4u * 1024u)
#define ARENA_MAX (64u * 1024u)

static void *arena_alloc(gp_cct *t, size_t n)
{
    n = (n + 15u) & ~(size_t)15u;
    if (!t->arena || t->arena_left < n) {
        size_t sz = t->arena ? t->arena->size * 2 : ARENA_FIRST;
        sz = sz > ARENA_MAX ? ARENA_MAX : sz;
        sz = n > sz ? n : sz;
        gp_arena_chunk *c = malloc(sizeof(*c) + sz);
        if (!c)
            return NULL;
        c->prev = t->arena;
        c->size = sz;
        t->arena = c;
        t->arena_left = sz;
        gp_owner_add(&t->bytes, sizeof(*c) + sz);
    }
    void *p = t->arena->mem + (t->arena->size - t->arena_left);
    t->arena_left -= n;
    return p;
}

static gp_mblock *block_new(gp_cct *t, uint32_t mkind)
{
    uint32_t first, n;
    gpuprof__metric_kind_range(mkind, &first, &n);
    gp_mblock *b = arena_alloc(t, sizeof(*b) + n * sizeof(b->v[0]));
    if (!b)
        return NULL;
    atomic_init(&b->next, NULL);
    b->kind = mkind;
    b->first_metric = first;
    b->n = n;
    for (uint32_t i = 0; i < n; i++)
        atomic_init(&b->v[i], 0);
    return b;
}

static bool dir_grow(gp_cct *t)
{
    gp_cct_dir *old = gp_load_relaxed(&t->dir);
    uint32_t cap = old ? old->cap * 2 : 16;
    gp_cct_dir *d = calloc(1, sizeof(*d) + cap * sizeof(d->chunk[0]));
    if (!d)
        return false;
    d->cap = cap;
    d->prev = old;
    if (old)
        memcpy(d->chunk, old->chunk, old->cap * sizeof(d->chunk[0]));
    gp_owner_add(&t->bytes, sizeof(*d) + cap * sizeof(d->chunk[0]));
    gp_store_release(&t->dir, d);
    return true;
}

/* Appends a node; returns its index or GP_CCT_NONE. Owner only. */
static uint32_t node_append(gp_cct *t, uint32_t parent, uint8_t kind,
                            uint32_t key_a, uint64_t key_b, uint32_t mkind)
{
    uint32_t i = gp_load_relaxed(&t->count);
    if (i == GP_CCT_NONE - 1)
        return GP_CCT_NONE;
    gp_cct_dir *d = gp_load_relaxed(&t->dir);
    uint32_t c = i >> GP_CCT_CHUNK_SHIFT;
    if (!d || c >= d->cap) {
        if (!dir_grow(t))
            return GP_CCT_NONE;
        d = gp_load_relaxed(&t->dir);
    }
    if (!d->chunk[c]) {
        d->chunk[c] = calloc(GP_CCT_CHUNK, sizeof(gp_node));
        if (!d->chunk[c])
            return GP_CCT_NONE;
        gp_owner_add(&t->bytes, GP_CCT_CHUNK * sizeof(gp_node));
    }
    gp_mblock *b = NULL;
    if (mkind != UINT32_MAX && !(b = block_new(t, mkind)))
        return GP_CCT_NONE;
    gp_node *n = gp_cct_node(d, i);
    n->parent = parent;
    n->kind = kind;
    n->key_a = key_a;
    n->key_b = key_b;
    atomic_init(&n->flags, 0);
    atomic_init(&n->blocks, b);
    gp_store_release(&t->count, i + 1); /* publish */
    return i;
}

bool gpuprof__cct_init(gp_cct *t)
{
    memset(t, 0, sizeof(*t));
    t->slot_mask = 63;
    t->slots = malloc((t->slot_mask + 1) * sizeof(*t->slots));
    t->name_mask = 63;
    t->names = calloc(t->name_mask + 1, sizeof(*t->names));
    if (!t->slots || !t->names) {
        free(t->slots);
        free(t->names);
        return false;
    }
    for (uint32_t i = 0; i <= t->slot_mask; i++)
        t->slots[i].parent = GP_CCT_NONE;
    gp_owner_add(&t->bytes, (t->slot_mask + 1) * sizeof(*t->slots) +
                                (t->name_mask + 1) * sizeof(*t->names));
    if (node_append(t, GP_CCT_NONE, GPUPROF_IO_NODE_ROOT, 0, 0, UINT32_MAX) !=
        0) {
        gpuprof__cct_destroy(t);
        return false;
    }
    return true;
}

void gpuprof__cct_destroy(gp_cct *t)
{
    gp_cct_dir *d = gp_load_relaxed(&t->dir);
    if (d)
        for (uint32_t c = 0; c < d->cap; c++)
            free(d->chunk[c]);
    while (d) {
        gp_cct_dir *p = d->prev;
        free(d);
        d = p;
    }
    while (t->arena) {
        gp_arena_chunk *p = t->arena->prev;
        free(t->arena);
        t->arena = p;
    }
    free(t->slots);
    free(t->names);
    memset(t, 0, sizeof(*t));
}

static inline uint32_t slot_hash(uint32_t parent, uint8_t kind, uint32_t a,
                                 uint64_t b)
{
    uint64_t h = ((uint64_t)parent << 32 | a) * 0x9E3779B97F4A7C15ull;
    h ^= (b + kind) * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(h >> 32);
}

static bool slots_grow(gp_cct *t)
{
    uint32_t mask = t->slot_mask * 2 + 1;
    gp_cct_slot *s = malloc((size_t)(mask + 1) * sizeof(*s));
    if (!s)
        return false;
    for (uint32_t i = 0; i <= mask; i++)
        s[i].parent = GP_CCT_NONE;
    for (uint32_t i = 0; i <= t->slot_mask; i++) {
        gp_cct_slot *o = &t->slots[i];
        if (o->parent == GP_CCT_NONE)
            continue;
        uint32_t h = slot_hash(o->parent, (uint8_t)o->kind, o->key_a, o->key_b);
        while (s[h & mask].parent != GP_CCT_NONE)
            h++;
        s[h & mask] = *o;
    }
    gp_owner_add(&t->bytes, (size_t)(t->slot_mask + 1) * sizeof(*s));
    free(t->slots);
    t->slots = s;
    t->slot_mask = mask;
    return true;
}

uint32_t gpuprof__cct_child(gp_cct *t, uint32_t parent, uint8_t kind,
                            uint32_t key_a, uint64_t key_b, uint32_t mkind)
{
    uint32_t h = slot_hash(parent, kind, key_a, key_b);
    for (;; h++) {
        gp_cct_slot *s = &t->slots[h & t->slot_mask];
        if (s->parent == GP_CCT_NONE)
            break;
        if (s->parent == parent && s->key_a == key_a && s->key_b == key_b &&
            s->kind == kind)
            return s->node;
    }
    if ((t->slot_used + 1) * 2 > t->slot_mask + 1) {
        if (!slots_grow(t))
            return GP_CCT_NONE;
        return gpuprof__cct_child(t, parent, kind, key_a, key_b, mkind);
    }
    uint32_t n = node_append(t, parent, kind, key_a, key_b, mkind);
    if (n == GP_CCT_NONE)
        return n;
    gp_cct_slot *s = &t->slots[h & t->slot_mask];
    s->parent = parent;
    s->kind = kind;
    s->key_a = key_a;
    s->key_b = key_b;
    s->node = n;
    t->slot_used++;
    return n;
}

static void name_insert(gp_name_slot *tab, uint32_t mask, gp_name_slot e)
{
    uint32_t i = (uint32_t)(e.hash >> 32);
    while (tab[i & mask].hash != 0)
        i++;
    tab[i & mask] = e;
}

void gpuprof__cct_name_put(gp_cct *t, uint32_t parent, uint64_t hash,
                           uint32_t node, const char *name, gp_mblock *blk)
{
    if ((t->name_used + 1) * 2 > t->name_mask + 1) {
        uint32_t mask = t->name_mask * 2 + 1;
        gp_name_slot *n = calloc((size_t)mask + 1, sizeof(*n));
        if (!n)
            return; /* only a cache: the slow path still works */
        for (uint32_t i = 0; i <= t->name_mask; i++)
            if (t->names[i].hash)
                name_insert(n, mask, t->names[i]);
        gp_owner_add(&t->bytes, (size_t)(t->name_mask + 1) * sizeof(*n));
        free(t->names);
        t->names = n;
        t->name_mask = mask;
    }
    uint64_t k = (hash ^ ((uint64_t)parent * 0x9E3779B97F4A7C15ull)) | 1;
    name_insert(t->names, t->name_mask,
                (gp_name_slot){.hash = k, .parent = parent, .node = node,
                               .name = name, .blk = blk});
    t->name_used++;
}

gp_mblock *gpuprof__cct_block(gp_cct *t, uint32_t i, uint32_t mkind)
{
    gp_node *n = gp_cct_node(gp_load_relaxed(&t->dir), i);
    gp_mblock *b = gp_load_relaxed(&n->blocks), *last = NULL;
    for (; b; last = b, b = gp_load_relaxed(&b->next))
        if (b->kind == mkind)
            return b;
    if (!(b = block_new(t, mkind)))
        return NULL;
    if (last)
        gp_store_release(&last->next, b);
    else
        gp_store_release(&n->blocks, b);
    return b;
}

void gpuprof__cct_zero(gp_cct *t)
{
    gp_cct_dir *d = gp_load_relaxed(&t->dir);
    uint32_t count = gp_load_relaxed(&t->count);
    for (uint32_t i = 0; i < count; i++) {
        gp_node *n = gp_cct_node(d, i);
        gp_store_relaxed(&n->flags, 0);
        for (gp_mblock *b = gp_load_relaxed(&n->blocks); b;
             b = gp_load_relaxed(&b->next))
            for (uint32_t k = 0; k < b->n; k++)
                gp_store_relaxed(&b->v[k], 0);
    }
}

bool gpuprof__cct_merge_ex(gp_cct *dst, const gp_cct *src, uint32_t *map,
                           const uint32_t *root_key_map, uint32_t root_key_n)
{
    uint32_t count = gp_load_acquire(&src->count);
    const gp_cct_dir *d = gp_load_acquire(&src->dir);
    uint32_t *own = map ? NULL : malloc(count * sizeof(*own));
    if (!map && !(map = own))
        return false;
    map[0] = 0;
    bool ok = true;
    for (uint32_t i = 1; i < count && ok; i++) {
        const gp_node *n = gp_cct_node(d, i);
        uint32_t key_a = n->key_a;
        if (root_key_map && n->parent == 0) {
            if (key_a >= root_key_n) { /* names nothing that was merged */
                map[i] = GP_CCT_NONE;
                continue;
            }
            key_a = root_key_map[key_a];
        }
        if (map[n->parent] == GP_CCT_NONE) {
            map[i] = GP_CCT_NONE;
            continue;
        }
        uint32_t m = gpuprof__cct_child(dst, map[n->parent], n->kind, key_a,
                                        n->key_b, UINT32_MAX);
        if ((ok = m != GP_CCT_NONE)) {
            map[i] = m;
            gp_node *out = gp_cct_node(gp_load_relaxed(&dst->dir), m);
            atomic_fetch_or_explicit(&out->flags, gp_load_relaxed(&n->flags),
                                     memory_order_relaxed);
        }
        for (gp_mblock *b = gp_load_acquire(&n->blocks); ok && b;
             b = gp_load_acquire(&b->next)) {
            gp_mblock *to = gpuprof__cct_block(dst, map[i], b->kind);
            if (!(ok = to != NULL))
                break;
            for (uint32_t k = 0; k < b->n; k++)
                gpuprof__metric_merge(&to->v[k], b->first_metric + k,
                                      gp_load_relaxed(&b->v[k]));
        }
    }
    free(own);
    return ok;
}

bool gpuprof__cct_merge(gp_cct *dst, const gp_cct *src)
{
    return gpuprof__cct_merge_ex(dst, src, NULL, NULL, 0);
}
