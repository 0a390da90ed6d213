/*
 * an_tracedb.h - writing trace.db (an_db.h, doc/FORMATS.md): each input's
 * trace, read while its profile and node map are held (pass 2 of the
 * aggregation), every stream's records sorted by time with contexts as
 * the database's, appended in input order; the table of streams at the
 * end. What the traces could not give -- damaged or empty traces, the
 * bytes ignored in them, streams of threads the profile lacks -- is
 * counted for meta.db and said through the warning callback (strict: the
 * run stops instead).
 */
#ifndef GPUPROF_AN_TRACEDB_H
#define GPUPROF_AN_TRACEDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "an_dbwrite.h"
#include "gpuprof_analysis.h"
#include "io/io.h"

typedef struct gpuprof__an_tracedb {
    gpuprof__an_dbfile f;
    uint8_t *tab; /* DB_TRACE_STREAM per stream */
    uint32_t nstreams, cap;
    uint32_t damaged, dropped; /* traces; thread streams left out */
    uint64_t ignored;          /* bytes */
    /* what the analysis was asked */
    int strict;
    gpuprof_an_warning_fn warn;
    void *warn_user;
    unsigned threads;
} gpuprof__an_tracedb;

/* The trace beside a profile: NAME.gpuprof -> NAME.gptrace (false when
 * the name does not end so or does not fit). */
bool gpuprof__an_trace_path(const char *profile, char *out, size_t size);
/* The trace of the profile at `path` (decoded as p; its absolute nodes'
 * contexts in ctx, its metrics' base metrics in metric; its first profile
 * p0) appended. */
gpuprof_status gpuprof__an_tracedb_add(gpuprof__an_tracedb *t, const char *path,
                                       const gpuprof__io_profile *p,
                                       const uint32_t *ctx,
                                       const uint32_t *metric, uint32_t p0);
/* The table, then the header (its checksum accumulated as written). */
gpuprof_status gpuprof__an_tracedb_finish(gpuprof__an_tracedb *t,
                                          uint32_t profiles, uint64_t ident,
                                          unsigned major);

#endif /* GPUPROF_AN_TRACEDB_H */
