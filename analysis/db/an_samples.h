/*
 * an_samples.h - which calling contexts a thread's CPU samples saw in a
 * span of time (trace.db, streams of kind DB_TRACE_SAMPLES): what the
 * critical path asks to name the host code of a segment it follows.
 */
#ifndef GPUPROF_AN_SAMPLES_H
#define GPUPROF_AN_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_analysis.h"

/* One context samples saw, per database metric they went to. */
typedef struct gpuprof__an_sample_ctx {
    uint32_t context; /* UINT32_MAX: unknown (not in the profile) */
    uint32_t metric;  /* the database metric (exclusive variant),
                         UINT32_MAX: unknown */
    uint64_t samples; /* records */
    uint64_t value;   /* their values' sum (ns for cpu.time, cpu.wall) */
} gpuprof__an_sample_ctx;

/* The contexts the samples of profile `profile` (a CPU thread) saw with
 * times in [t0, t1] (the process clock, ns, as trace.db's records), only
 * those of database metric `metric` unless it is UINT32_MAX: one entry per
 * (context, metric), the largest value first (then the lower context).
 * *out is the caller's to free (NULL when *n is 0). No trace.db, no
 * samples: *n = 0 and GPUPROF_OK. Errors: GPUPROF_E_INVALID (no database,
 * NULL outputs, t1 < t0), GPUPROF_E_NOMEM. Read-only: any thread. */
gpuprof_status gpuprof__an_db_samples_in(const gpuprof_an_db *db,
                                         uint32_t profile, uint64_t t0,
                                         uint64_t t1, uint32_t metric,
                                         gpuprof__an_sample_ctx **out,
                                         uint32_t *n);

/* The database metric CPU samples name host code by: cpu.time's
 * exclusive variant, else cpu.wall's (a run sampled on wall-clock time
 * only); false when the database has neither. */
bool gpuprof__an_db_sample_metric(const gpuprof_an_db *db, uint32_t *metric);

/* One sample record: its time (the process clock, ns), what it added to
 * its metric, its context (UINT32_MAX: unknown). */
typedef struct gpuprof__an_sample {
    uint64_t t, value;
    uint32_t context, pad;
} gpuprof__an_sample;

/* Every sample of profile `profile` and database metric `metric` (all of
 * the thread's SAMPLES streams), sorted by time (then context): appended
 * to *v (n records, room for cap; GPUPROF_AN_GROW's). What the critical
 * path reads once to name all its steps. GPUPROF_E_NOMEM (*v keeps what
 * it had). Read-only: any thread. */
gpuprof_status gpuprof__an_db_samples_all(const gpuprof_an_db *db,
                                          uint32_t profile, uint32_t metric,
                                          gpuprof__an_sample **v, uint32_t *n,
                                          uint32_t *cap);

#endif /* GPUPROF_AN_SAMPLES_H */
