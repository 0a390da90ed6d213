/*
 * an_sass_cfg.c - basic blocks, control flow graph, dominators and natural
 * loops of one GPU function (an_sass.h), the way nvdisasm -bbcfg draws
 * them: a block starts at the function's entry, at every label (branch
 * and BSSY targets) and after a branch, call, return or exit; a
 * conditional branch has two successors, a call falls through (calls are
 * the call graph's business, an_sass_cg.c), a return or exit has none
 * unless predicated. Only blocks reachable from the entry are kept (the
 * trap loop `BRA self` and padding NOPs after the last return are not).
 *
 * Dominators by Cooper, Harvey and Kennedy's iteration over reverse
 * postorder; loops are natural loops (seed 000 §5: hpcstruct's loop
 * nests): a back edge n -> h where h dominates n, the body the blocks that
 * reach n without passing h; back edges to one header are one loop, and
 * loops nest by containment. Irreducible cycles (no dominating header)
 * are not loops here.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

static bool ends_block(const sass_insn *in)
{
    return in->cls == SC_BRANCH || in->cls == SC_CALL || in->cls == SC_RET ||
           in->cls == SC_EXIT;
}

static bool falls_through(const sass_insn *in)
{
    if (in->cls == SC_CALL)
        return true;
    if (in->cls == SC_BRANCH || in->cls == SC_RET || in->cls == SC_EXIT)
        return in->pred >= 0 || strstr(in->op, ".DIV") != NULL;
    return true;
}

static bool add_edge(uint32_t **a, uint32_t *n, uint32_t v)
{
    for (uint32_t k = 0; k < *n; k++)
        if ((*a)[k] == v)
            return true;
    uint32_t *na = realloc(*a, (*n + 1) * sizeof(**a));
    if (!na)
        return false;
    *a = na;
    na[(*n)++] = v;
    return true;
}

/* The block (of `nb` starting at the instructions in `start`) holding
 * the instruction at `offset`; SASS_NONE. */
static uint32_t block_at(const gpuprof__sass_bin *b, const sass_func *f,
                         const uint32_t *blk_of, uint32_t offset)
{
    if (offset < f->start || offset >= f->end)
        return SASS_NONE;
    for (uint32_t i = f->first; i < f->first + f->count; i++)
        if (b->insn[i].offset == offset)
            return blk_of[i - f->first];
    return SASS_NONE;
}

/* All blocks of f (reachable or not) with their edges. */
static gpuprof_status split_blocks(gpuprof__sass_bin *b, sass_func *f,
                                   uint32_t *blk_of)
{
    uint32_t nb = 0;
    for (uint32_t k = 0; k < f->count; k++) {
        const sass_insn *in = &b->insn[f->first + k];
        if (k == 0 || in->label || ends_block(in - 1))
            nb++;
        blk_of[k] = nb - 1;
    }
    f->blocks = calloc(nb ? nb : 1, sizeof(*f->blocks));
    if (!f->blocks)
        return GPUPROF_E_NOMEM;
    f->nblocks = nb;
    for (uint32_t k = 0; k < f->count; k++) {
        sass_block *bl = &f->blocks[blk_of[k]];
        if (k == 0 || blk_of[k] != blk_of[k - 1])
            bl->first = f->first + k;
        bl->last = f->first + k;
    }
    for (uint32_t x = 0; x < nb; x++) {
        sass_block *bl = &f->blocks[x];
        const sass_insn *in = &b->insn[bl->last];
        uint32_t t = in->cls == SC_BRANCH && in->target != SASS_NONE
                         ? block_at(b, f, blk_of, in->target)
                         : SASS_NONE;
        if (t != SASS_NONE && !add_edge(&bl->succ, &bl->nsucc, t))
            return GPUPROF_E_NOMEM;
        for (uint32_t j = 0; in->cls == SC_BRANCH && j < b->njump; j++)
            if (b->jump[j].insn == bl->last &&
                (t = block_at(b, f, blk_of, b->jump[j].offset)) != SASS_NONE &&
                !add_edge(&bl->succ, &bl->nsucc, t))
                return GPUPROF_E_NOMEM;
        if (falls_through(in) && x + 1 < nb &&
            !add_edge(&bl->succ, &bl->nsucc, x + 1))
            return GPUPROF_E_NOMEM;
    }
    return GPUPROF_OK;
}

/* Depth-first order from the entry: post[] gets blocks in postorder. */
static uint32_t postorder(const sass_func *f, uint32_t *post, uint8_t *seen)
{
    uint32_t *stack = malloc(f->nblocks * sizeof(*stack) * 2), sp = 0, np = 0;
    if (!stack)
        return 0;
    uint32_t *next = stack + f->nblocks; /* per stack entry: next succ */
    stack[sp] = 0;
    next[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        uint32_t v = stack[sp - 1];
        if (next[sp - 1] < f->blocks[v].nsucc) {
            uint32_t w = f->blocks[v].succ[next[sp - 1]++];
            if (!seen[w]) {
                seen[w] = 1;
                stack[sp] = w;
                next[sp++] = 0;
            }
        } else {
            post[np++] = v;
            sp--;
        }
    }
    free(stack);
    return np;
}

/* Keeps the reachable blocks, in address order, and renumbers edges. */
static gpuprof_status prune(gpuprof__sass_bin *b, sass_func *f, uint8_t *seen)
{
    uint32_t *map = malloc(f->nblocks * sizeof(*map)), n = 0;
    if (!map)
        return GPUPROF_E_NOMEM;
    for (uint32_t x = 0; x < f->nblocks; x++)
        map[x] = seen[x] ? n++ : SASS_NONE;
    for (uint32_t x = 0; x < f->nblocks; x++) {
        sass_block *bl = &f->blocks[x];
        for (uint32_t i = bl->first; i <= bl->last; i++)
            b->insn[i].block = map[x];
        if (!seen[x]) {
            free(bl->succ);
            continue;
        }
        for (uint32_t k = 0; k < bl->nsucc; k++)
            bl->succ[k] = map[bl->succ[k]];
        f->blocks[map[x]] = *bl;
    }
    f->nblocks = n;
    f->nedges = 0;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t x = 0; x < n; x++) {
        f->blocks[x].pred = NULL;
        f->blocks[x].npred = 0;
    }
    for (uint32_t x = 0; x < n && st == GPUPROF_OK; x++)
        for (uint32_t k = 0; k < f->blocks[x].nsucc; k++, f->nedges++) {
            sass_block *t = &f->blocks[f->blocks[x].succ[k]];
            if (!add_edge(&t->pred, &t->npred, x))
                st = GPUPROF_E_NOMEM;
        }
    free(map);
    return st;
}

static uint32_t intersect(const sass_func *f, uint32_t a, uint32_t c)
{
    while (a != c) {
        while (f->blocks[a].rpo > f->blocks[c].rpo)
            a = f->blocks[a].idom;
        while (f->blocks[c].rpo > f->blocks[a].rpo)
            c = f->blocks[c].idom;
    }
    return a;
}

/* Cooper-Harvey-Kennedy: iterate idom over reverse postorder. */
static void dominators(sass_func *f, const uint32_t *post, uint32_t np)
{
    for (uint32_t k = 0; k < np; k++) {
        f->blocks[post[k]].rpo = np - 1 - k;
        f->blocks[post[k]].idom = SASS_NONE;
    }
    f->blocks[0].idom = 0;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t k = np; k-- > 0;) {
            uint32_t v = post[k], nd = SASS_NONE;
            if (v == 0)
                continue;
            for (uint32_t p = 0; p < f->blocks[v].npred; p++) {
                uint32_t u = f->blocks[v].pred[p];
                if (f->blocks[u].idom == SASS_NONE)
                    continue;
                nd = nd == SASS_NONE ? u : intersect(f, u, nd);
            }
            if (nd != f->blocks[v].idom) {
                f->blocks[v].idom = nd;
                changed = true;
            }
        }
    }
}

bool gpuprof__sass_dominates(const sass_func *f, uint32_t a, uint32_t d)
{
    for (uint32_t x = d;; x = f->blocks[x].idom) {
        if (x == a)
            return true;
        if (x == 0 || x == SASS_NONE)
            return false;
    }
}

gpuprof_status gpuprof__sass_cfg(gpuprof__sass_bin *b, uint32_t fi)
{
    sass_func *f = &b->func[fi];
    for (uint32_t i = f->first; i < f->first + f->count; i++)
        b->insn[i].block = SASS_NONE;
    if (!f->count)
        return GPUPROF_OK;
    uint32_t *blk_of = malloc(f->count * sizeof(*blk_of));
    if (!blk_of)
        return GPUPROF_E_NOMEM;
    gpuprof_status st = split_blocks(b, f, blk_of);
    free(blk_of);
    uint8_t *seen = st == GPUPROF_OK ? calloc(f->nblocks, 1) : NULL;
    uint32_t *post = seen ? malloc(f->nblocks * sizeof(*post)) : NULL;
    uint32_t np = post ? postorder(f, post, seen) : 0;
    if (!np)
        st = GPUPROF_E_NOMEM;
    if (st == GPUPROF_OK)
        st = prune(b, f, seen);
    if (st == GPUPROF_OK) {
        np = postorder(f, post, memset(seen, 0, f->nblocks));
        dominators(f, post, np);
        st = gpuprof__sass_loops(f);
    }
    free(post);
    free(seen);
    return st;
}
