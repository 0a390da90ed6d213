/*
 * an_frames.h - program structure in the unified tree (pass 1): a CPU
 * frame (module, offset) whose module's DWARF describes it becomes
 * FUNCTION -> LINE (the call site of the next level) -> INLINE -> LINE ...
 * -> LINE (where the frame is), the frame's children beneath the last
 * line (structure/an_dwarf.c); a GPU instruction whose cubin's line table
 * describes it becomes LINE beneath its kernel, or with inlining LINE ->
 * INLINE -> LINE ... (structure/an_gpudwarf.c). Each distinct frame is
 * looked up once (unify is serial).
 */
#ifndef GPUPROF_AN_FRAMES_H
#define GPUPROF_AN_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/an_internal.h"
#include "an_tree.h"

typedef struct slevel { /* one level of a frame's structure (strtab) */
    uint32_t fn, module, file, line;
} slevel;

typedef struct sframe { /* a CPU frame's structure, looked up once */
    uint32_t module;    /* strtab offset of the module path */
    uint64_t offset;
    uint32_t first, n; /* its levels in lvl; n = 0: none (symbols) */
} sframe;

typedef struct gpuprof__an_gcct gpuprof__an_gcct; /* an_gcct.c */

typedef struct an_structure {
    gpuprof__an_dwarf *dw; /* CPU modules opened */
    sframe *sf;
    uint32_t nsf, capsf;
    uint32_t *sf_slot, sf_mask; /* frame hash: index + 1 */
    slevel *lvl;
    uint32_t nlvl, caplvl;
    gpuprof__an_cubin *cubins; /* GPU binaries opened */
    gpuprof__an_gcct *gcct;    /* GPU binaries listed by nvdisasm */
    gpuprof_an_warning_fn warn; /* the analysis's warnings (NULL: none) */
    void *warn_user;
} an_structure;

/* The structure of frame (module: strtab offset of `path`, offset); NULL
 * when out of memory. Its levels' strings are interned in t. */
const sframe *gpuprof__an_frame_structure(an_structure *x, an_tree *t,
                                          uint32_t module, const char *path,
                                          uint64_t offset);
/* The contexts of a structured frame beneath `parent`; the last line's,
 * UINT32_MAX when out of memory. */
uint32_t gpuprof__an_frame_expand(an_tree *t, const an_structure *x,
                                  uint32_t parent, const sframe *f);
/* The context of GPU instruction nd (key k) beneath `kernel` of profile p
 * (read from `profile`: GPU binaries' paths are relative to its
 * directory); UINT32_MAX when out of memory. */
uint32_t gpuprof__an_instr_ctx(an_structure *x, an_tree *t, const char *profile,
                               const gpuprof__io_profile *p,
                               const gpuprof__io_node *kernel,
                               const gpuprof__io_node *nd, const gctx *k);
/* The path of GPU binary `bin` (as a profile names it: relative to its
 * measurement directory) of the profile file `profile` into out. */
void gpuprof__an_binary_path(const char *profile, const char *bin, char *out,
                             size_t size);
/* The frame hash rebuilt (after the ranks' merge renamed modules). */
bool gpuprof__an_frames_rehash(an_structure *x);
/* Bytes the structure keeps (counted against a memory budget). */
uint64_t gpuprof__an_structure_bytes(const an_structure *x);
void gpuprof__an_structure_free(an_structure *x);

#endif /* GPUPROF_AN_FRAMES_H */
