/*
 * cct.h - a thread's sparse calling context tree.
 *
 * One tree per application thread; only that thread inserts nodes or
 * changes values, and any thread may read a published prefix of the nodes
 * at any time (a flush). So:
 *   - nodes live in fixed-size chunks that never move; a chunk directory
 *     grows by copying, and old directories stay allocated until the tree is
 *     destroyed, so a reader holding an old directory still reads valid
 *     chunks;
 *   - `count` is stored with release order after a node is complete, and
 *     readers load it with acquire order;
 *   - metric values sit in per-kind blocks attached to the node (a node
 *     carries only the kinds it has) and change through relaxed atomics
 *     written by the owner only (atomics.h, gp_owner_add).
 * Child lookup is an owner-only open-addressing hash table keyed by
 * (parent, kind, key_a, key_b): one probe on the hot path, never read by
 * other threads, so it may be resized freely.
 */
#ifndef GPUPROF_CORE_CCT_H
#define GPUPROF_CORE_CCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/atomics.h"

#define GP_CCT_CHUNK_SHIFT 8 /* 256 nodes, 8 KiB: small threads stay small */
#define GP_CCT_CHUNK (1u << GP_CCT_CHUNK_SHIFT)
#define GP_CCT_NONE UINT32_MAX

/* A block of one metric kind's values. */
typedef struct gp_mblock {
    struct gp_mblock *_Atomic next;
    uint32_t kind;
    uint32_t first_metric; /* values are metrics first_metric .. +n */
    uint32_t n;
    _Atomic uint64_t v[];
} gp_mblock;

typedef struct gp_node {
    uint32_t parent; /* index in this tree; GP_CCT_NONE for the root */
    uint8_t kind;    /* GPUPROF_IO_NODE_* */
    _Atomic uint8_t flags;
    uint32_t key_a; /* REGION: intern id (not a string offset) */
    uint64_t key_b;
    gp_mblock *_Atomic blocks;
} gp_node;

typedef struct gp_cct_dir {
    struct gp_cct_dir *prev; /* older directories, freed with the tree */
    uint32_t cap;            /* chunk pointers */
    gp_node *chunk[];
} gp_cct_dir;

/* Owner-only child index entry. */
typedef struct gp_cct_slot {
    uint32_t parent; /* GP_CCT_NONE = empty */
    uint32_t key_a;
    uint64_t key_b;
    uint32_t kind;
    uint32_t node;
} gp_cct_slot;

/* Owner-only string-keyed region index: (parent, name hash) -> node. */
typedef struct gp_name_slot {
    uint64_t hash; /* 0 = empty */
    uint32_t parent;
    uint32_t node;
    const char *name; /* the interned name, to confirm a hit */
    struct gp_mblock *blk; /* the node's first metric block */
} gp_name_slot;

typedef struct gp_arena_chunk gp_arena_chunk;

typedef struct gp_cct {
    _Atomic uint32_t count;         /* published nodes */
    gp_cct_dir *_Atomic dir;        /* current directory */
    gp_cct_slot *slots;             /* owner-only */
    uint32_t slot_mask, slot_used;
    gp_name_slot *names;            /* owner-only */
    uint32_t name_mask, name_used;
    gp_arena_chunk *arena;          /* metric blocks; owner-only */
    size_t arena_left;
    _Atomic uint64_t bytes;         /* memory held, for stats */
} gp_cct;

/* Sets up an empty tree holding only its root (node 0). false: no memory. */
bool gpuprof__cct_init(gp_cct *t);
/* Frees everything; only when no other thread can read the tree. */
void gpuprof__cct_destroy(gp_cct *t);

static inline gp_node *gp_cct_node(const gp_cct_dir *d, uint32_t i)
{
    return &d->chunk[i >> GP_CCT_CHUNK_SHIFT][i & (GP_CCT_CHUNK - 1)];
}

/* The child of `parent` with this key, created (with a block of metric kind
 * `mkind`, or none when mkind is UINT32_MAX) if missing. Owner only.
 * Returns GP_CCT_NONE when out of memory. */
uint32_t gpuprof__cct_child(gp_cct *t, uint32_t parent, uint8_t kind,
                            uint32_t key_a, uint64_t key_b, uint32_t mkind);

/* The string-keyed cache in front of gpuprof__cct_child for regions:
 * the slot for (parent, hash), or NULL. The caller confirms the name. */
static inline const gp_name_slot *
gpuprof__cct_name_find(const gp_cct *t, uint32_t parent, uint64_t hash)
{
    uint64_t k = (hash ^ ((uint64_t)parent * 0x9E3779B97F4A7C15ull)) | 1;
    for (uint32_t i = (uint32_t)(k >> 32);; i++) { /* 0 marks an empty slot */
        const gp_name_slot *s = &t->names[i & t->name_mask];
        if (s->hash == 0)
            return NULL;
        if (s->hash == k && s->parent == parent)
            return s;
    }
}
void gpuprof__cct_name_put(gp_cct *t, uint32_t parent, uint64_t hash,
                           uint32_t node, const char *name, gp_mblock *blk);

/* The first metric block of node i (owner, or any reader of a published
 * node). */
static inline gp_mblock *gp_cct_blocks(const gp_cct *t, uint32_t i)
{
    return gp_load_acquire(&gp_cct_node(gp_load_acquire(&t->dir), i)->blocks);
}

/* The block of metric kind `mkind` of node `i`, attached if missing
 * (owner only; NULL when out of memory). */
gp_mblock *gpuprof__cct_block(gp_cct *t, uint32_t i, uint32_t mkind);

/* Adds every node and value of `src` into `dst` (same keys, values
 * summed, flags OR-ed). The caller owns both trees. false: out of memory
 * (dst then holds part of src). */
bool gpuprof__cct_merge(gp_cct *dst, const gp_cct *src);
/* The same, recording in map[i] (src's count entries, when map is not NULL)
 * the dst node of src node i; with root_key_map, the key_a of each child of
 * src's root is translated through it first (a GPU subtree's mirrors name
 * region-CCT nodes); children of the root whose key_a is root_key_n or
 * more are skipped with their subtrees (map: GP_CCT_NONE). */
bool gpuprof__cct_merge_ex(gp_cct *dst, const gp_cct *src, uint32_t *map,
                           const uint32_t *root_key_map, uint32_t root_key_n);

/* Zeroes every value (fork child; single-threaded). */
void gpuprof__cct_zero(gp_cct *t);

#endif /* GPUPROF_CORE_CCT_H */
