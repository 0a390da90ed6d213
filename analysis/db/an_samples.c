/*
 * an_samples.c - a thread's CPU samples in a span of time, by context
 * (an_samples.h). Each of the thread's sample streams (one per trace that
 * holds the thread) is sorted by time: a binary search finds the span's
 * first record, the records up to its end are gathered, sorted by
 * (context, metric) and summed, then ordered by value. Or all of a
 * thread's samples of one metric at once, by time.
 */
#include "an_samples.h"

#include <stdlib.h>

#include "../base/an_buf.h"
#include "../base/an_internal.h"
#include "an_db.h"

/* The first of the stream's n records r[] whose time is t0 or later. */
static uint64_t first_at(const uint8_t *r, uint64_t n, uint64_t t0)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (db_get64(r + mid * DB_TRACE_REC) < t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The next of profile `profile`'s SAMPLES streams from stream *i on: its
 * records (*nr of them), *i moved past it; NULL when there is none. */
static const uint8_t *next_stream(const gpuprof_an_db *db, uint32_t profile,
                                  uint32_t *i, uint64_t *nr)
{
    for (; *i < gpuprof_an_db_trace_stream_count(db); ++*i) {
        gpuprof_an_trace_stream s;
        if (gpuprof_an_db_trace_stream(db, *i, &s) == GPUPROF_OK &&
            s.kind == GPUPROF_AN_TRACE_SAMPLES && s.profile == profile)
            return gpuprof__an_db_trace_raw(db, (*i)++, nr);
    }
    return NULL;
}

static int by_ctx(const void *a, const void *b)
{
    const gpuprof__an_sample_ctx *x = a, *y = b;
    if (x->context != y->context)
        return x->context < y->context ? -1 : 1;
    return (x->metric > y->metric) - (x->metric < y->metric);
}

static int by_value(const void *a, const void *b)
{
    const gpuprof__an_sample_ctx *x = a, *y = b;
    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return by_ctx(a, b);
}

/* Equal (context, metric) entries of v[0..n) summed: the entries left. */
static uint32_t combine(gpuprof__an_sample_ctx *v, uint32_t n)
{
    uint32_t k = 0;
    if (n < 2)
        return n; /* v may be NULL: qsort must not see it */
    qsort(v, n, sizeof(*v), by_ctx);
    for (uint32_t i = 0; i < n; i++) {
        if (k && !by_ctx(&v[k - 1], &v[i])) {
            v[k - 1].samples += v[i].samples;
            v[k - 1].value += v[i].value;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

gpuprof_status gpuprof__an_db_samples_in(const gpuprof_an_db *db,
                                         uint32_t profile, uint64_t t0,
                                         uint64_t t1, uint32_t metric,
                                         gpuprof__an_sample_ctx **out,
                                         uint32_t *n)
{
    if (!db || !out || !n || t1 < t0)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "samples: no database, output or span");
    *out = NULL;
    *n = 0;
    gpuprof__an_sample_ctx *v = NULL;
    uint32_t nv = 0, cap = 0;
    uint64_t nr;
    const uint8_t *r;
    for (uint32_t i = 0; (r = next_stream(db, profile, &i, &nr)) != NULL;) {
        for (uint64_t k = first_at(r, nr, t0); k < nr; k++) {
            const uint8_t *q = r + k * DB_TRACE_REC;
            uint32_t m = db_get32(q + 28);
            if (db_get64(q) > t1)
                break;
            if (metric != UINT32_MAX && m != metric)
                continue;
            if (!GPUPROF_AN_GROW(v, nv, cap)) {
                free(v);
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            }
            v[nv++] = (gpuprof__an_sample_ctx){db_get32(q + 24), m, 1,
                                                db_get64(q + 16)};
        }
        nv = combine(v, nv); /* stays small: distinct contexts */
    }
    if (nv > 1)
        qsort(v, nv, sizeof(*v), by_value);
    if (!nv) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = nv;
    return GPUPROF_OK;
}

static int by_time(const void *a, const void *b)
{
    const gpuprof__an_sample *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->context > y->context) - (x->context < y->context);
}

gpuprof_status gpuprof__an_db_samples_all(const gpuprof_an_db *db,
                                          uint32_t profile, uint32_t metric,
                                          gpuprof__an_sample **v, uint32_t *n,
                                          uint32_t *cap)
{
    if (!db || !v || !n || !cap)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "samples: no database or output");
    uint32_t from = *n;
    uint64_t nr;
    const uint8_t *r;
    for (uint32_t i = 0; (r = next_stream(db, profile, &i, &nr)) != NULL;) {
        for (uint64_t k = 0; k < nr; k++) {
            const uint8_t *q = r + k * DB_TRACE_REC;
            if (db_get32(q + 28) != metric)
                continue;
            if (!GPUPROF_AN_GROW(*v, *n, *cap))
                return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            (*v)[(*n)++] = (gpuprof__an_sample){db_get64(q), db_get64(q + 16),
                                                db_get32(q + 24), 0};
        }
    }
    if (*n - from > 1) /* each stream is sorted; several are merged here */
        qsort(*v + from, *n - from, sizeof(**v), by_time);
    return GPUPROF_OK;
}

bool gpuprof__an_db_sample_metric(const gpuprof_an_db *db, uint32_t *metric)
{
    return gpuprof_an_db_metric_find(db, "cpu.time", GPUPROF_AN_EXCLUSIVE,
                                     metric) == GPUPROF_OK ||
           gpuprof_an_db_metric_find(db, "cpu.wall", GPUPROF_AN_EXCLUSIVE,
                                     metric) == GPUPROF_OK;
}
