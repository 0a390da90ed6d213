/*
 * an_gcct.h - GPU calling contexts in the unified tree (pass 1; seed 000
 * §6.3, seed 001): PC samples carry no call stack, so a sampled
 * instruction of a device function has as many calling contexts as the
 * kernel has call paths to its function. With the kernel's cubin listed
 * by nvdisasm (gpu/an_sass*.c) the tree beneath the kernel is rebuilt from
 * the call graph (call sites weighted by the samples of their CALLs,
 * recursion collapsed into one node per strongly connected component) and
 * each instruction's values are split among its contexts gprof-style, in
 * proportion to each path's share of its function's calls (an_gcct.c).
 *
 * A context per path: the kernel -> the line of a CALL (with its inlined
 * functions, as a GPU instruction's lines) -> GPU_FUNCTION (the callee,
 * or a recursive SCC by its first function, key 1) -> ... -> the
 * instruction's lines. What no path reaches (a function called only
 * through an unresolved call, or past the path limit) stays where it is
 * without reconstruction: its lines beneath the kernel.
 *
 * A split node's targets are kept with its file (gsplits) for pass 2
 * (agg/an_values.c), which divides every value exactly: the parts add up
 * to the value (gpuprof__an_gcct_apportion).
 */
#ifndef GPUPROF_AN_GCCT_H
#define GPUPROF_AN_GCCT_H

#include <stdbool.h>
#include <stdint.h>

#include "an_frames.h"
#include "an_tree.h"

typedef struct gsplit { /* one context of a split node */
    uint32_t ctx;
    double w; /* its share: a node's shares add up to 1 */
} gsplit;

typedef struct gsplits { /* a file's split nodes */
    uint32_t *at;        /* per absolute node: 0, or 1 + the index in t of its
                            header, whose ctx is the number of targets after it */
    gsplit *t;
    uint32_t nt, capt;
} gsplits;

/* One thread's GPU instructions grouped by kernel node, while its node map
 * is made. */
typedef struct gcct_thread {
    uint64_t *pair; /* kernel node << 32 | instruction node (relative) */
    uint32_t n;
    uint8_t *done; /* per node of the thread: its context already made */
} gcct_thread;

/* The groups of thread th of p; nothing (n = 0) when it has no GPU
 * instruction beneath a kernel. false when out of memory. */
bool gpuprof__an_gcct_begin(gcct_thread *g, const gpuprof__io_profile *p,
                            const gpuprof__io_thread *th);
void gpuprof__an_gcct_end(gcct_thread *g);

/* Kernel node kn (relative to thread th) of file `profile` (decoded as p),
 * whose context ctx[first + kn] is made: when its cubin can be listed and
 * its instructions carry gpu.pc.samples, the contexts of its instructions
 * (ctx[] set, g->done marked, splits added to sp). Otherwise nothing, and
 * the instructions are unified one by one as without it. GPUPROF_E_NOMEM
 * only. */
gpuprof_status gpuprof__an_gcct_kernel(an_structure *x, an_tree *t,
                                       gcct_thread *g, const char *profile,
                                       const gpuprof__io_profile *p,
                                       const gpuprof__io_thread *th,
                                       uint32_t kn, uint32_t *ctx, gsplits *sp);

/* Value v divided among the n targets of a split node by their shares,
 * into out[0..n): the parts add up to v exactly (an integer v gives
 * integers, by largest remainder; ties to the earlier target). A metric
 * that does not add (min, max) gives every target v whole (`sums`
 * false). */
void gpuprof__an_gcct_apportion(double v, bool sums, const gsplit *t,
                                uint32_t n, double *out);

/* The targets of absolute node `node` of a file, *n of them; NULL when it
 * is not split. */
static inline const gsplit *gpuprof__an_gcct_targets(const gsplits *sp,
                                                     uint32_t node, uint32_t *n)
{
    if (!sp->at || !sp->at[node])
        return NULL;
    const gsplit *h = &sp->t[sp->at[node] - 1];
    *n = h->ctx;
    return h + 1;
}

/* Context ids renamed through map (after the ranks' merge). */
void gpuprof__an_gcct_remap(gsplits *sp, const uint32_t *map);
uint64_t gpuprof__an_gcct_bytes(const gsplits *sp, uint32_t nodes);
void gpuprof__an_gcct_splits_free(gsplits *sp);

/* After pass 1 (every rank alike): with GPU calling contexts rebuilt, the
 * base metric GCCT_APPORTIONED (pass 2 gives it, at each context, the
 * samples it got as a share of split instructions; doc/FORMATS.md). */
#define GCCT_APPORTIONED "gpu.pc.apportioned_samples"
gpuprof_status gpuprof__an_gcct_metric(an_tree *t);
/* The listed cubins (an_structure's). */
void gpuprof__an_gcct_free(gpuprof__an_gcct *c);

#endif /* GPUPROF_AN_GCCT_H */
