/*
 * an_tree.c - strings, metrics and the context hash of the unified tree
 * (an_tree.h): open addressing, linear probing, kept at most half full.
 */
#include <stdlib.h>

#include "../base/an_buf.h"
#include "an_tree.h"

uint32_t gpuprof__an_tree_intern(an_tree *t, const char *s)
{
    uint32_t o = gpuprof__io_strtab_add(t->st, s ? s : "");
    if (o == UINT32_MAX)
        t->nomem = true;
    return o == UINT32_MAX ? 0 : o;
}

uint32_t gpuprof__an_tree_intern_metric(an_tree *t, const char *s)
{
    if (!t->mst)
        return gpuprof__an_tree_intern(t, s);
    uint32_t o = gpuprof__io_strtab_add(t->mst, s ? s : "");
    if (o == UINT32_MAX)
        t->nomem = true;
    return o == UINT32_MAX ? 0 : o;
}

const char *gpuprof__an_tree_metric_str(const an_tree *t, uint32_t off)
{
    uint64_t size;
    return gpuprof__io_strtab_data(t->mst ? t->mst : t->st, &size) + off;
}

static uint64_t ctx_hash(const gctx *c)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint64_t w[4] = {c->parent, (uint64_t)c->kind << 32 | c->name, c->aux,
                     c->key};
    for (int i = 0; i < 4; i++) {
        h ^= w[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

bool gpuprof__an_tree_rehash(an_tree *t)
{
    uint32_t size = t->slot_mask ? (t->slot_mask + 1) * 2 : 1024;
    while (size < (t->nc + 1) * 2) /* a whole tree at once (a rank's) */
        size *= 2;
    uint32_t *s = calloc(size, sizeof(*s));
    if (!s)
        return false;
    for (uint32_t i = 0; i < t->nc; i++) {
        uint32_t h = (uint32_t)ctx_hash(&t->c[i]) & (size - 1);
        while (s[h])
            h = (h + 1) & (size - 1);
        s[h] = i + 1;
    }
    free(t->slot);
    t->slot = s;
    t->slot_mask = size - 1;
    return true;
}

uint32_t gpuprof__an_tree_ctx(an_tree *t, const gctx *k)
{
    if ((t->nc + 1) * 2 > t->slot_mask + 1 && !gpuprof__an_tree_rehash(t))
        return UINT32_MAX;
    uint32_t h = (uint32_t)ctx_hash(k) & t->slot_mask;
    for (; t->slot[h]; h = (h + 1) & t->slot_mask) {
        const gctx *c = &t->c[t->slot[h] - 1];
        if (c->parent == k->parent && c->kind == k->kind &&
            c->name == k->name && c->aux == k->aux && c->key == k->key)
            return t->slot[h] - 1;
    }
    if (!GPUPROF_AN_GROW(t->c, t->nc, t->capc))
        return UINT32_MAX;
    t->c[t->nc] = *k;
    t->slot[h] = t->nc + 1;
    return t->nc++;
}

void gpuprof__an_tree_free(an_tree *t)
{
    if (t->st)
        gpuprof__io_strtab_free(t->st);
    if (t->mst)
        gpuprof__io_strtab_free(t->mst);
    free(t->m);
    free(t->c);
    free(t->slot);
    free(t->p);
    free(t->d);
    *t = (an_tree){0};
}
