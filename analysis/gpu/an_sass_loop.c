/*
 * an_sass_loop.c - natural loops of a GPU function's CFG and distances
 * along it (an_sass.h).
 *
 * A back edge n -> h (h dominates n) makes a natural loop: h plus every
 * block that reaches n without passing through h (seed 000 §5, as
 * hpcstruct finds loop nests). Back edges to one header are one loop.
 * Loops are kept outer first (more blocks first); each one's parent is
 * the smallest other loop holding its header, each block's loop the
 * innermost holding it.
 *
 * gpuprof__sass_distance is the instruction count of the shortest path
 * between two instructions (Dijkstra over blocks, a block costing its
 * instructions): the blame's latency pruning and path-length weights
 * (seed 003 §3.2.1) use it.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

/* Marks the body of the loop with header h and back edge source n. */
static void body(const sass_func *f, uint32_t h, uint32_t n, uint8_t *in,
                 uint32_t *stack)
{
    uint32_t sp = 0;
    in[h] = 1;
    if (!in[n]) {
        in[n] = 1;
        stack[sp++] = n;
    }
    while (sp) {
        uint32_t v = stack[--sp];
        for (uint32_t k = 0; k < f->blocks[v].npred; k++) {
            uint32_t u = f->blocks[v].pred[k];
            if (!in[u]) {
                in[u] = 1;
                stack[sp++] = u;
            }
        }
    }
}

static int by_size(const void *a, const void *b)
{
    const sass_loop *x = a, *y = b;
    if (x->nblocks != y->nblocks)
        return x->nblocks > y->nblocks ? -1 : 1;
    return x->header < y->header ? -1 : x->header > y->header;
}

/* One loop per header with back edges into it. */
static gpuprof_status find(sass_func *f, uint32_t *stack)
{
    for (uint32_t h = 0; h < f->nblocks; h++) {
        uint8_t *in = NULL;
        for (uint32_t k = 0; k < f->blocks[h].npred; k++) {
            uint32_t n = f->blocks[h].pred[k];
            if (!gpuprof__sass_dominates(f, h, n))
                continue;
            if (!in && !(in = calloc(f->nblocks, 1)))
                return GPUPROF_E_NOMEM;
            body(f, h, n, in, stack);
        }
        if (!in)
            continue;
        sass_loop *nl = realloc(f->loops, (f->nloops + 1) * sizeof(*nl));
        if (!nl) {
            free(in);
            return GPUPROF_E_NOMEM;
        }
        f->loops = nl;
        sass_loop *l = &nl[f->nloops++];
        memset(l, 0, sizeof(*l));
        l->header = h;
        l->in = in;
        for (uint32_t x = 0; x < f->nblocks; x++)
            l->nblocks += in[x];
    }
    return GPUPROF_OK;
}

/* Parents, depths and each block's innermost loop. */
static void nest(sass_func *f)
{
    if (f->nloops > 1)
        qsort(f->loops, f->nloops, sizeof(*f->loops), by_size);
    for (uint32_t x = 0; x < f->nblocks; x++)
        f->blocks[x].loop = SASS_NONE;
    for (uint32_t i = 0; i < f->nloops; i++) {
        sass_loop *l = &f->loops[i];
        l->parent = SASS_NONE;
        for (uint32_t j = 0; j < i; j++) /* later ones are smaller */
            if (f->loops[j].in[l->header])
                l->parent = j;
        l->depth = l->parent == SASS_NONE ? 1 : f->loops[l->parent].depth + 1;
        for (uint32_t x = 0; x < f->nblocks; x++)
            if (l->in[x])
                f->blocks[x].loop = i;
    }
}

gpuprof_status gpuprof__sass_loops(sass_func *f)
{
    if (!f->nblocks)
        return GPUPROF_OK;
    uint32_t *stack = malloc(f->nblocks * sizeof(*stack));
    if (!stack)
        return GPUPROF_E_NOMEM;
    gpuprof_status st = find(f, stack);
    free(stack);
    if (st == GPUPROF_OK)
        nest(f);
    return st;
}

/* ---- distances ------------------------------------------------------------ */
uint32_t gpuprof__sass_distance(const gpuprof__sass_bin *b, uint32_t from,
                                uint32_t to)
{
    const sass_insn *a = &b->insn[from], *z = &b->insn[to];
    if (a->func != z->func || a->block == SASS_NONE || z->block == SASS_NONE)
        return UINT32_MAX;
    const sass_func *f = &b->func[a->func];
    if (a->block == z->block && from < to)
        return to - from - 1;
    /* leave a's block, then enter blocks until z's, paying for each */
    uint32_t n = f->nblocks, *dist = malloc(n * sizeof(*dist));
    uint8_t *done = calloc(n, 1);
    uint32_t best = UINT32_MAX;
    if (!dist || !done)
        goto out;
    for (uint32_t x = 0; x < n; x++)
        dist[x] = UINT32_MAX;
    uint32_t out_a = f->blocks[a->block].last - from; /* a's tail */
    for (uint32_t k = 0; k < f->blocks[a->block].nsucc; k++)
        dist[f->blocks[a->block].succ[k]] = out_a;
    for (;;) { /* dist[x]: instructions before entering x */
        uint32_t v = UINT32_MAX, dv = UINT32_MAX;
        for (uint32_t x = 0; x < n; x++)
            if (!done[x] && dist[x] < dv)
                dv = dist[v = x];
        if (v == UINT32_MAX)
            break;
        if (v == z->block) {
            best = dv + (to - f->blocks[v].first);
            break;
        }
        done[v] = 1;
        uint32_t cost = dv + (f->blocks[v].last - f->blocks[v].first + 1);
        for (uint32_t k = 0; k < f->blocks[v].nsucc; k++) {
            uint32_t w = f->blocks[v].succ[k];
            if (!done[w] && cost < dist[w])
                dist[w] = cost;
        }
    }
out:
    free(dist);
    free(done);
    return best;
}
