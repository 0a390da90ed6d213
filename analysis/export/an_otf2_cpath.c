/*
 * an_otf2_cpath.c - critical-path membership of trace.db's records for the
 * OTF2 export (an_otf2.h, gpuprof__an_otf2_cpath): the critical path of
 * each process (analysis/cpath: its graph and path only, without wait
 * states or idleness blame) mapped back onto the records the export turns
 * into events.
 *
 * A path step is an activity of the process's graph (cpath.h) with its
 * part of the path [from, to). The activities come from trace.db in a
 * known order (graph.c): a thread's lane holds its API calls in the order
 * of its OPS stream, a GPU stream's lane its device work in the order of
 * its GPU stream; so a call or device work is record k of that stream. CPU
 * work between calls is no record of its own: its part of the path goes
 * to the innermost region record open then (swept over the thread's
 * REGIONS stream as graph.c splits the work), none outside every region;
 * so does a host thread's synchronization (a join, a barrier, a blocked
 * lock: trace.db's host records are no events of the export).
 *
 * The marks: per trace.db stream, the records on the path with their time
 * on it (ns), sorted; a lookup is a binary search in its stream's part.
 * And the CPU work steps as spans [from, to] of their thread, sorted by
 * (thread, from): a CPU sample is on the path when a span holds its time
 * (the spans of a thread are disjoint: the path is one chain in time).
 * Without dependency notes in trace.db (format before 1.3, or a backend
 * that writes none) the path would be program order and launches alone:
 * no marks, and the export says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "../cpath/cpath.h"
#include "../db/an_db.h"
#include "an_otf2.h"

typedef struct mark {
    uint32_t stream;
    uint64_t rec, ns;
} mark;

typedef struct span {
    uint32_t profile;
    uint64_t from, to;
} span;

typedef struct marks {
    mark *m;
    uint64_t n, cap;
    uint64_t *first; /* per stream: its first mark; [nstreams] = n */
    uint32_t nstreams;
    span *sp;
    uint64_t nsp, cap_sp;
} marks;

static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

static gpuprof_status add(marks *k, uint32_t stream, uint64_t rec, uint64_t ns)
{
    if (k->n == k->cap) {
        uint64_t cap = k->cap ? 2 * k->cap : 256;
        mark *v = realloc(k->m, cap * sizeof(*v));
        if (!v)
            return nomem();
        k->m = v;
        k->cap = cap;
    }
    k->m[k->n++] = (mark){stream, rec, ns};
    return GPUPROF_OK;
}

static gpuprof_status add_span(marks *k, uint32_t profile, int64_t from,
                               int64_t to)
{
    if (k->nsp == k->cap_sp) {
        uint64_t cap = k->cap_sp ? 2 * k->cap_sp : 256;
        span *v = realloc(k->sp, cap * sizeof(*v));
        if (!v)
            return nomem();
        k->sp = v;
        k->cap_sp = cap;
    }
    k->sp[k->nsp++] = (span){profile, (uint64_t)from, (uint64_t)to};
    return GPUPROF_OK;
}

/* The trace.db stream of process `process` of kind `kind` and profile
 * `profile` (GPU streams: the k-th of the process), UINT32_MAX none. */
static uint32_t stream_of(const gpuprof_an_db *db, uint32_t process,
                          gpuprof_an_trace_kind kind, uint32_t profile,
                          uint32_t k)
{
    uint32_t ns = gpuprof_an_db_trace_stream_count(db);
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        if (s.process != process || s.kind != kind)
            continue;
        if (kind == GPUPROF_AN_TRACE_GPU ? k-- == 0 : s.profile == profile)
            return i;
    }
    return UINT32_MAX;
}

/* A lane's streams: a thread's OPS and REGIONS, a GPU stream's own. */
typedef struct lane_streams {
    uint32_t main, regions;
} lane_streams;

static void lanes(const gpuprof_an_db *db, const cp_graph *g,
                  lane_streams *ls)
{
    uint32_t gpu = 0;
    for (uint32_t li = 0; li < g->nlane; li++) {
        const cp_lane *l = &g->lane[li];
        if (l->gpu) {
            ls[li].main = stream_of(db, g->process, GPUPROF_AN_TRACE_GPU, 0,
                                    gpu++);
            ls[li].regions = UINT32_MAX;
        } else {
            ls[li].main = stream_of(db, g->process, GPUPROF_AN_TRACE_OPS,
                                    l->profile, 0);
            ls[li].regions = stream_of(db, g->process,
                                       GPUPROF_AN_TRACE_REGIONS, l->profile, 0);
        }
    }
}

/* Per activity: its record in its lane's main stream (calls: counted on
 * the lane; device work: its place on the lane; CPU work: none). */
static uint32_t *records(const cp_graph *g)
{
    uint32_t *rec = malloc((g->nact ? g->nact : 1) * sizeof(*rec));
    if (!rec)
        return NULL;
    for (uint32_t li = 0; li < g->nlane; li++) {
        const cp_lane *l = &g->lane[li];
        uint32_t calls = 0;
        for (uint32_t a = l->first; a < l->first + l->n; a++)
            rec[a] = l->gpu                       ? a - l->first
                     : g->act[a].kind == CP_CALL ? calls++
                                                 : UINT32_MAX;
    }
    return rec;
}

/* The CPU work steps of lane li onto its regions: each piece's time to the
 * innermost region record open then. */
static gpuprof_status work_steps(const gpuprof_an_db *db, const cp_graph *g,
                                 uint32_t li, uint32_t rstream,
                                 const cp_step *steps, uint64_t n, marks *k)
{
    uint64_t nr = 0;
    const uint8_t *raw = gpuprof__an_db_trace_raw(db, rstream, &nr);
    cp_rsweep s;
    gpuprof_status st = cp_regions_load(raw, nr, &s);
    for (uint64_t i = 0; i < n && st == GPUPROF_OK; i++) {
        const cp_act *a = &g->act[steps[i].act];
        if (a->lane != li || (a->kind != CP_WORK && a->kind != CP_HOST))
            continue;
        uint64_t t = (uint64_t)steps[i].from, e = (uint64_t)steps[i].to;
        while (t < e && st == GPUPROF_OK) {
            cp_sweep_to(&s, t);
            uint64_t nb = cp_sweep_next(&s, e);
            if (s.depth)
                st = add(k, rstream, s.r[s.stack[s.depth - 1]].rec, nb - t);
            t = nb;
        }
    }
    cp_rsweep_free(&s);
    return st;
}

/* Process i's path as marks. */
static gpuprof_status process_marks(const gpuprof_an_db *db,
                                    const gpuprof_an_cpath *cp, uint32_t i,
                                    marks *k)
{
    const cp_step *steps;
    uint64_t n;
    const cp_graph *g = gpuprof__an_cpath_path(cp, i, &steps, &n);
    lane_streams *ls = malloc((g->nlane ? g->nlane : 1) * sizeof(*ls));
    uint32_t *rec = records(g);
    gpuprof_status st = ls && rec ? GPUPROF_OK : nomem();
    if (st == GPUPROF_OK)
        lanes(db, g, ls);
    for (uint64_t j = 0; j < n && st == GPUPROF_OK; j++) {
        const cp_act *a = &g->act[steps[j].act];
        uint32_t s = ls[a->lane].main;
        if (a->kind != CP_WORK && a->kind != CP_HOST && s != UINT32_MAX)
            st = add(k, s, rec[steps[j].act],
                     (uint64_t)(steps[j].to - steps[j].from));
        else if (a->kind == CP_WORK && !g->lane[a->lane].gpu)
            st = add_span(k, g->lane[a->lane].profile, steps[j].from,
                          steps[j].to);
    }
    for (uint32_t li = 0; li < g->nlane && st == GPUPROF_OK; li++)
        if (!g->lane[li].gpu && ls[li].regions != UINT32_MAX)
            st = work_steps(db, g, li, ls[li].regions, steps, n, k);
    free(ls);
    free(rec);
    return st;
}

static int by_place(const void *x, const void *y)
{
    const mark *a = x, *b = y;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    return (a->rec > b->rec) - (a->rec < b->rec);
}

static int by_start(const void *x, const void *y)
{
    const span *a = x, *b = y;
    if (a->profile != b->profile)
        return a->profile < b->profile ? -1 : 1;
    return (a->from > b->from) - (a->from < b->from);
}

/* Sorted, one mark per record (times summed), each stream's first; the
 * spans sorted. */
static gpuprof_status index_marks(marks *k, uint32_t nstreams)
{
    if (k->nsp > 1)
        qsort(k->sp, k->nsp, sizeof(*k->sp), by_start);
    if (k->n)
        qsort(k->m, k->n, sizeof(*k->m), by_place);
    uint64_t w = 0;
    for (uint64_t r = 0; r < k->n; r++) {
        if (w && k->m[w - 1].stream == k->m[r].stream &&
            k->m[w - 1].rec == k->m[r].rec)
            k->m[w - 1].ns += k->m[r].ns;
        else
            k->m[w++] = k->m[r];
    }
    k->n = w;
    k->nstreams = nstreams;
    k->first = calloc((size_t)nstreams + 1, sizeof(*k->first));
    if (!k->first)
        return nomem();
    for (uint64_t r = 0; r < k->n; r++)
        k->first[k->m[r].stream + 1]++;
    for (uint32_t s = 0; s < nstreams; s++)
        k->first[s + 1] += k->first[s];
    return GPUPROF_OK;
}

static int on_path(void *arg, uint32_t stream, uint64_t record, uint64_t *ns)
{
    const marks *k = arg;
    if (stream >= k->nstreams)
        return 0;
    uint64_t lo = k->first[stream], hi = k->first[stream + 1];
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (k->m[mid].rec < record)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == k->first[stream + 1] || k->m[lo].rec != record)
        return 0;
    *ns = k->m[lo].ns;
    return 1;
}

/* The last span starting at or before (profile, t) holds t, or none. */
static int sample_on_path(void *arg, uint32_t profile, uint64_t t)
{
    const marks *k = arg;
    uint64_t lo = 0, hi = k->nsp; /* first span after (profile, t) */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const span *v = &k->sp[mid];
        if (v->profile < profile || (v->profile == profile && v->from <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && k->sp[lo - 1].profile == profile && k->sp[lo - 1].to >= t;
}

static void release(void *arg)
{
    marks *k = arg;
    free(k->sp);
    free(k->m);
    free(k->first);
    free(k);
}

/* Dependency notes (GPU waits) or host records (threads' waits): without
 * either the path is program order and launches alone. */
static bool has_notes(const gpuprof_an_db *db)
{
    uint32_t ns = gpuprof_an_db_trace_stream_count(db);
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        if ((s.kind == GPUPROF_AN_TRACE_DEPS ||
             s.kind == GPUPROF_AN_TRACE_HOST) &&
            s.records)
            return true;
    }
    return false;
}

bool gpuprof__an_otf2_cpath(const gpuprof_an_db *db,
                            gpuprof__an_cpath_marks *out, char *why,
                            size_t size)
{
    if (!has_notes(db)) {
        snprintf(why, size, "trace.db holds no dependency notes and no "
                            "host records (a trace format before 1.3, or "
                            "backends that write none): no critical path");
        return false;
    }
    gpuprof_an_cpath *cp = NULL;
    marks *k = calloc(1, sizeof(*k));
    gpuprof_status st = k ? gpuprof__an_cpath_new_path(db, &cp) : nomem();
    for (uint32_t i = 0; st == GPUPROF_OK && i < gpuprof_an_cpath_process_count(cp);
         i++)
        st = process_marks(db, cp, i, k);
    if (st == GPUPROF_OK)
        st = index_marks(k, gpuprof_an_db_trace_stream_count(db));
    gpuprof_an_cpath_free(cp);
    if (st != GPUPROF_OK) {
        snprintf(why, size, "%s", gpuprof_an_last_error());
        if (k)
            release(k);
        return false;
    }
    *out = (gpuprof__an_cpath_marks){on_path, release, k, sample_on_path};
    return true;
}
