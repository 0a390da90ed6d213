/*
 * an_tree.h - the unified calling context tree an aggregation builds and
 * meta.db holds: its strings, its metrics (by name), its contexts (keyed
 * by parent, kind, name, aux and key: one hash lookup per node) and its
 * profiles (one per thread of each file), each in the order pass 1 made
 * them, so that ids depend only on the inputs, and the files' device
 * attributes. Pass 1 (an_unify.c) adds
 * to it, the program structure (an_frames.c) expands frames into it, the
 * ranks (coll/) merge theirs into one, db/an_metadb.c writes it.
 */
#ifndef GPUPROF_AN_TREE_H
#define GPUPROF_AN_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"

#define MAX_BASE_METRICS 32767u /* database metric ids are u16 */

typedef struct gmetric {
    uint32_t name, desc; /* strtab offsets (a rank's own, before the merge:
                            its metric strings' table, mst) */
    uint8_t unit, combine, kind, type;
    uint32_t at, src; /* before the merge: the size of the rank's strtab
                         when the metric was added, the file that added it */
    uint32_t flags;   /* GPUPROF_IO_METRIC_* (the adding file's) */
    uint32_t count;   /* an odd sum's count metric + 1; 0: none */
} gmetric;

typedef struct gctx {
    uint32_t parent;
    uint8_t kind;
    uint32_t name, aux;
    uint64_t key;
} gctx;

typedef struct gprof { /* one thread of one file */
    uint32_t src, thread;
    uint32_t host, tname, file; /* strtab offsets */
    uint32_t pid, flags;
    int32_t rank;
    uint64_t tid;
} gprof;

typedef struct gdev { /* one attribute of a device of one file (DEVICES) */
    uint32_t src, api, device, key, type; /* api, key: strtab offsets */
    uint64_t value; /* a number, or (GPUPROF_IO_ATTR_STR) a strtab offset */
} gdev;

typedef struct an_tree {
    gpuprof__io_strtab *st;
    gpuprof__io_strtab *mst; /* a rank's metric strings, before the merge */
    gmetric *m;
    uint32_t nm, capm;
    gctx *c;
    uint32_t nc, capc;
    uint32_t *slot, slot_mask; /* context hash: index + 1 */
    gprof *p;
    uint32_t np, capp;
    gdev *d; /* devices' attributes, in file order */
    uint32_t nd, capd;
    uint32_t apportioned;    /* gpu.pc.apportioned_samples + 1; 0: none */
    uint32_t apportioned_of; /* the base metric it apportions */
    bool structured; /* some frame or instruction was expanded */
    bool gcct;       /* some kernel's GPU calling contexts were rebuilt */
    bool nomem;      /* a string could not be added */
} an_tree;

/* A string's offset in t->st (added when new); 0 and t->nomem when out of
 * memory. A metric's name or description: in t->mst where there is one
 * (one rank of several keeps them apart from its other strings until the
 * merge: whether they are interned there depends on the ranks before). */
uint32_t gpuprof__an_tree_intern(an_tree *t, const char *s);
uint32_t gpuprof__an_tree_intern_metric(an_tree *t, const char *s);
const char *gpuprof__an_tree_metric_str(const an_tree *t, uint32_t off);
/* The context of `k`, added when new; UINT32_MAX when out of memory. */
uint32_t gpuprof__an_tree_ctx(an_tree *t, const gctx *k);
/* The context hash rebuilt, at least twice the contexts' size. */
bool gpuprof__an_tree_rehash(an_tree *t);
/* Everything freed; t is empty again. */
void gpuprof__an_tree_free(an_tree *t);

#endif /* GPUPROF_AN_TREE_H */
