/*
 * an_frames.c - CPU frames and GPU instructions expanded into their
 * program structure (an_frames.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_buf.h"
#include "../db/an_db.h"
#include "an_frames.h"
#include "an_gcct.h"

static uint64_t frame_hash(uint32_t module, uint64_t offset)
{
    uint64_t h = (offset ^ ((uint64_t)module << 40)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

bool gpuprof__an_frames_rehash(an_structure *x)
{
    uint32_t size = x->sf_mask ? (x->sf_mask + 1) * 2 : 1024;
    uint32_t *s = calloc(size, sizeof(*s));
    if (!s)
        return false;
    for (uint32_t i = 0; i < x->nsf; i++) {
        uint32_t h =
            (uint32_t)frame_hash(x->sf[i].module, x->sf[i].offset) & (size - 1);
        while (s[h])
            h = (h + 1) & (size - 1);
        s[h] = i + 1;
    }
    free(x->sf_slot);
    x->sf_slot = s;
    x->sf_mask = size - 1;
    return true;
}

const sframe *gpuprof__an_frame_structure(an_structure *x, an_tree *t,
                                          uint32_t module, const char *path,
                                          uint64_t offset)
{
    if ((x->nsf + 1) * 2 > x->sf_mask + 1 && !gpuprof__an_frames_rehash(x))
        return NULL;
    uint32_t h = (uint32_t)frame_hash(module, offset) & x->sf_mask;
    for (; x->sf_slot[h]; h = (h + 1) & x->sf_mask) {
        const sframe *f = &x->sf[x->sf_slot[h] - 1];
        if (f->module == module && f->offset == offset)
            return f;
    }
    enum { MAX_LEVELS = 64 };
    gpuprof__an_srclevel lv[MAX_LEVELS];
    uint32_t n = gpuprof__an_dwarf_lookup(&x->dw, path, offset, lv, MAX_LEVELS);
    if (!GPUPROF_AN_GROW(x->sf, x->nsf, x->capsf))
        return NULL;
    while (x->nlvl + n > x->caplvl) /* doubled until n more fit */
        if (!gpuprof__an_grow((void **)&x->lvl, &x->caplvl, x->caplvl,
                              sizeof(*x->lvl)))
            return NULL;
    sframe *f = &x->sf[x->nsf];
    *f = (sframe){module, offset, x->nlvl, n};
    for (uint32_t i = 0; i < n; i++)
        x->lvl[x->nlvl++] =
            (slevel){gpuprof__an_tree_intern(t, lv[i].function), module,
                     gpuprof__an_tree_intern(t, lv[i].file), lv[i].line};
    x->sf_slot[h] = ++x->nsf;
    return f;
}

uint32_t gpuprof__an_frame_expand(an_tree *t, const an_structure *x,
                                  uint32_t parent, const sframe *f)
{
    t->structured = true;
    for (uint32_t i = 0; i < f->n && parent != UINT32_MAX; i++) {
        const slevel *l = &x->lvl[f->first + i];
        gctx fn = {parent, (uint8_t)(i ? DB_KIND_INLINE : DB_KIND_FUNCTION),
                   l->fn, l->module, 0};
        parent = gpuprof__an_tree_ctx(t, &fn);
        if (parent == UINT32_MAX)
            break;
        gctx line = {parent, DB_KIND_LINE, l->file, 0, l->line};
        parent = gpuprof__an_tree_ctx(t, &line);
    }
    return parent;
}

/* A GPU binary's path is relative to its measurement directory: the
 * profile's directory. */
void gpuprof__an_binary_path(const char *profile, const char *bin, char *out,
                             size_t size)
{
    const char *slash = strrchr(profile, '/');
    if (bin[0] == '/' || !slash)
        snprintf(out, size, "%s", bin);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - profile), profile, bin);
}

/* ---- GPU instructions (an_gpudwarf.c) ----------------------------------
 * A GPU instruction (kind GPU_INSTR: cubin, offset in the function its
 * kernel node names) whose cubin's line table describes it becomes LINE
 * (where it is) beneath the kernel, or with inlining LINE (the call site in
 * the kernel) -> INLINE -> LINE ...: the kernel is the function. Its values
 * go to the last line; instructions of one line are one context. */
uint32_t gpuprof__an_instr_ctx(an_structure *x, an_tree *t, const char *profile,
                               const gpuprof__io_profile *p,
                               const gpuprof__io_node *kernel,
                               const gpuprof__io_node *nd, const gctx *k)
{
    char path[4200];
    gpuprof__an_binary_path(profile,
                            gpuprof__io_str(p, p->modules[nd->key_a].path),
                            path, sizeof(path));
    enum { MAX_LEVELS = 64 };
    gpuprof__an_srclevel lv[MAX_LEVELS];
    uint32_t n = kernel->kind == GPUPROF_IO_NODE_KERNEL
                     ? gpuprof__an_cubin_lookup(
                           &x->cubins, path, gpuprof__io_str(p, kernel->key_a),
                           nd->key_b, lv, MAX_LEVELS)
                     : 0;
    if (!n)
        return gpuprof__an_tree_ctx(t, k);
    t->structured = true;
    uint32_t parent = k->parent;
    for (uint32_t i = 0; i < n && parent != UINT32_MAX; i++) {
        if (i) {
            gctx fn = {parent, DB_KIND_INLINE,
                       gpuprof__an_tree_intern(t, lv[i].function), k->name, 0};
            if ((parent = gpuprof__an_tree_ctx(t, &fn)) == UINT32_MAX)
                break;
        }
        gctx line = {parent, DB_KIND_LINE,
                     gpuprof__an_tree_intern(t, lv[i].file), 0, lv[i].line};
        parent = gpuprof__an_tree_ctx(t, &line);
    }
    return parent;
}

uint64_t gpuprof__an_structure_bytes(const an_structure *x)
{
    return (uint64_t)x->capsf * sizeof(sframe) +
           ((uint64_t)x->sf_mask + 1) * sizeof(uint32_t) +
           (uint64_t)x->caplvl * sizeof(slevel);
}

void gpuprof__an_structure_free(an_structure *x)
{
    free(x->sf);
    free(x->sf_slot);
    free(x->lvl);
    gpuprof__an_dwarf_free(x->dw);
    gpuprof__an_cubin_free(x->cubins);
    gpuprof__an_gcct_free(x->gcct);
    *x = (an_structure){0};
}
