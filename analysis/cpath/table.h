/*
 * table.h - metrics an analysis of the traces computes (wait states, blame,
 * GPU idleness blame, critical-path time: analysis/cpath), added to an open
 * database beside its measured and derived metrics. A table metric holds
 * exclusive values per (profile, context), given by the analysis, and the
 * inclusive ones rolled up the calling context tree; every accessor of
 * an_db.c (values, context values, statistics) answers for it as for a
 * measured metric, so every view and export shows it.
 */
#ifndef GPUPROF_AN_CPATH_TABLE_H
#define GPUPROF_AN_CPATH_TABLE_H

#include <stdint.h>

#include "gpuprof_analysis.h"

typedef struct gpuprof__an_table gpuprof__an_table;

/* One exclusive value of a table metric; several for the same (profile,
 * context) add up. */
typedef struct gpuprof__an_cell {
    uint32_t profile, context;
    double value;
} gpuprof__an_cell;

/* Builds the metric from n cells (reordered); NULL when out of memory.
 * Cells naming a context or profile outside the database are ignored. */
gpuprof__an_table *gpuprof__an_table_new(const gpuprof_an_db *db,
                                         const char *name,
                                         gpuprof_an_unit unit,
                                         gpuprof__an_cell *cells, uint64_t n);
void gpuprof__an_table_free(gpuprof__an_table *t);
const char *gpuprof__an_table_name(const gpuprof__an_table *t);
gpuprof_an_unit gpuprof__an_table_unit(const gpuprof__an_table *t);
/* variant: 0 inclusive, 1 exclusive. */
double gpuprof__an_table_value(const gpuprof__an_table *t, unsigned variant,
                               uint32_t p, uint32_t c);
uint32_t gpuprof__an_table_values(const gpuprof__an_table *t,
                                  unsigned variant, uint32_t c,
                                  uint32_t *profiles, double *values,
                                  uint32_t max);
double gpuprof__an_table_stat(const gpuprof__an_table *t, unsigned variant,
                              uint32_t c, gpuprof_an_stat which);

/* an_db.c: adds a table metric to the database (it takes t; freed with
 * the database, or at once on failure). GPUPROF_E_EXISTS-like refusal
 * (GPUPROF_E_INVALID) when a metric of that name exists. */
gpuprof_status gpuprof__an_db_add_table(gpuprof_an_db *db,
                                        gpuprof__an_table *t);

#endif /* GPUPROF_AN_CPATH_TABLE_H */
