/*
 * ptrmap.h - what the built-in backends share: a map from runtime handles
 * (pointers) to the backend's own records. Header-only and built on the C
 * library alone, so a backend including it still depends on nothing of the
 * core (tests/scripts/backend-isolation.sh allows lib/backends/kit/ and
 * nothing else outside a backend's own folder).
 *
 * Open addressing with linear probing over a power-of-two table kept at
 * most half full; deletion shifts later entries back (no tombstones), so
 * lookups stay short however many handles come and go. A NULL key is never
 * stored (runtimes never hand out NULL handles). Not thread-safe: each
 * backend guards its maps with its own lock.
 */
#ifndef GPUPROF_BE_KIT_PTRMAP_H
#define GPUPROF_BE_KIT_PTRMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct gp_ptrmap {
    void **key, **val;
    uint32_t cap, n;
} gp_ptrmap;

static inline uint32_t gp_ptrmap_slot(const void *p, uint32_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32) & (cap - 1);
}

/* The value of k, NULL when absent. */
static inline void *gp_ptrmap_get(const gp_ptrmap *t, const void *k)
{
    if (!t->n || !k)
        return NULL;
    for (uint32_t i = gp_ptrmap_slot(k, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (!t->key[i])
            return NULL;
        if (t->key[i] == k)
            return t->val[i];
    }
}

static inline bool gp_ptrmap_grow(gp_ptrmap *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    void **nk = calloc(cap, sizeof(void *)), **nv = calloc(cap, sizeof(void *));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return false;
    }
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->key[i])
            continue;
        uint32_t j = gp_ptrmap_slot(t->key[i], cap);
        while (nk[j])
            j = (j + 1) & (cap - 1);
        nk[j] = t->key[i];
        nv[j] = t->val[i];
    }
    free(t->key);
    free(t->val);
    t->key = nk;
    t->val = nv;
    t->cap = cap;
    return true;
}

/* Sets k's value (replacing an earlier one); false: out of memory or a NULL
 * key, and the map is unchanged. */
static inline bool gp_ptrmap_put(gp_ptrmap *t, void *k, void *v)
{
    if (!k || ((t->n + 1) * 2 > t->cap && !gp_ptrmap_grow(t)))
        return false;
    uint32_t i = gp_ptrmap_slot(k, t->cap);
    while (t->key[i] && t->key[i] != k)
        i = (i + 1) & (t->cap - 1);
    if (!t->key[i])
        t->n++;
    t->key[i] = k;
    t->val[i] = v;
    return true;
}

/* Removes k and returns its value (NULL when absent). */
static inline void *gp_ptrmap_del(gp_ptrmap *t, const void *k)
{
    if (!t->n || !k)
        return NULL;
    uint32_t i = gp_ptrmap_slot(k, t->cap);
    while (t->key[i] != k) {
        if (!t->key[i])
            return NULL;
        i = (i + 1) & (t->cap - 1);
    }
    void *v = t->val[i];
    t->n--;
    for (uint32_t j = (i + 1) & (t->cap - 1); t->key[j];
         j = (j + 1) & (t->cap - 1)) {
        uint32_t h = gp_ptrmap_slot(t->key[j], t->cap);
        /* Move j back to i when its home is not in (i, j]. */
        if (((j - h) & (t->cap - 1)) >= ((j - i) & (t->cap - 1))) {
            t->key[i] = t->key[j];
            t->val[i] = t->val[j];
            i = j;
        }
    }
    t->key[i] = t->val[i] = NULL;
    return v;
}

/* Frees the table (not the values). */
static inline void gp_ptrmap_free(gp_ptrmap *t)
{
    free(t->key);
    free(t->val);
    t->key = t->val = NULL;
    t->cap = t->n = 0;
}

#endif
