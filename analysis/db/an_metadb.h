/*
 * an_metadb.h - meta.db's writer (an_metadb.c).
 */
#ifndef GPUPROF_AN_METADB_H
#define GPUPROF_AN_METADB_H

#include <stdint.h>

#include "../agg/an_tree.h"
#include "gpuprof_analysis.h"

typedef struct gpuprof__an_meta_traces { /* what the traces could not give */
    uint32_t damaged, dropped;
    uint64_t ignored;
} gpuprof__an_meta_traces;

/* DIR/meta.db of format `major` for tree t, replaced atomically. */
gpuprof_status gpuprof__an_metadb_write(const char *dir, const an_tree *t,
                                        const gpuprof__an_meta_traces *tr,
                                        uint64_t ident, unsigned major);

#endif /* GPUPROF_AN_METADB_H */
