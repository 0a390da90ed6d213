/*
 * graph.c - one process's event dependency graph from trace.db (cpath.h;
 * seed 004 §4.1).
 *
 * Lanes: each CPU thread (its GPU API calls, and the CPU work between
 * them split where its innermost region changes, so the lane is tiled
 * from its first record to its last) and each GPU stream (its device
 * work). Each activity has a start and an end node; edges carry program
 * order on a lane, a launch to its device work, a blocking wait to the
 * device work it waited for, a ready query to what it found done, a
 * stream's work after a stream-wait-event to the event's work, and the
 * legacy default stream's serialization with every other stream.
 *
 * A thread's MPI calls (trace format 1.4) are activities of its lane too,
 * with their events in graph.mpi; ranks.c joins the ranks' graphs by them.
 * So are its host records (1.5: joins, barriers, blocked locks, condition
 * waits, OpenMP's; moments such as a thread's start or an unlock are
 * activities of no length), in graph.host; host.c adds their edges. A host
 * record inside another call of its thread (a callback of a runtime run
 * inside its API call) is left out, counted in graph.host_left.
 *
 * What a wait targets comes from the dependency notes (trace format 1.3):
 * "the work launched on stream S before this call" is the last device work
 * of that lane whose launch call started before the call; an event is the
 * work before its record on its stream (CUDA), or the command that made it
 * (OpenCL). A trace without notes gives launches and program order only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../db/an_db.h"
#include "../base/an_internal.h"
#include "cpath.h"

/* ---- growable arrays and the correlation map ----------------------------- */
static bool grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return true;
    uint64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * size);
    if (!n)
        return false;
    *p = n;
    *cap = c;
    return true;
}

typedef struct corrmap {
    uint64_t *key;
    uint32_t *val;
    uint64_t mask;
} corrmap;

static bool map_init(corrmap *m, uint64_t n)
{
    uint64_t size = 64; /* at most 2/3 full */
    while (size < n + n / 2)
        size *= 2;
    m->key = calloc(size, sizeof(*m->key));
    m->val = malloc(size * sizeof(*m->val));
    m->mask = size - 1;
    return m->key && m->val;
}

static void map_free(corrmap *m)
{
    free(m->key);
    free(m->val);
}

static uint64_t slot(const corrmap *m, uint64_t k)
{
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> 17;
    while (m->key[h & m->mask] && m->key[h & m->mask] != k)
        h++;
    return h & m->mask;
}

static void map_put(corrmap *m, uint64_t k, uint32_t v)
{
    uint64_t s = slot(m, k);
    m->key[s] = k;
    m->val[s] = v;
}

static uint32_t map_get(const corrmap *m, uint64_t k)
{
    uint64_t s = k ? slot(m, k) : 0;
    return k && m->key[s] == k ? m->val[s] : CP_NONE;
}

/* ---- the build's own context ------------------------------------------ */
typedef struct thread_in {
    uint32_t profile;
    const uint8_t *reg, *ops, *deps, *mpi, *host; /* raw trace.db records */
    uint64_t nreg, nops, ndeps, nmpi, nhost; /* nmpi, nhost: 64 bytes each */
} thread_in;

typedef struct build {
    const gpuprof_an_db *db;
    cp_graph *g;
    thread_in *th;
    uint32_t nth;
    uint64_t capact, caplane, capnote, capmpi, caphost;
    corrmap calls;     /* call correlation id -> activity */
    uint64_t *corr;    /* per activity: its correlation id (0: CPU work) */
    uint64_t capcorr;
    uint64_t ngpu;     /* device work records */
    uint32_t *work_of; /* call -> its last device work */
    uint64_t *launch;  /* per activity of a GPU lane (from gpu0 on, after
                          the threads' lanes): when it was launched */
    uint32_t gpu0;
} build;

/* The call with correlation id corr. Device work and notes mostly come in
 * the order of their calls, so the few activities after the last one found
 * (*hint) are tried before the map: a hash probe into a table of millions
 * is a cache miss, those are not. Calls' ids are unique (cpu_lane). */
static uint32_t call_of(const build *b, uint64_t corr, uint32_t *hint)
{
    const cp_graph *g = b->g;
    for (uint32_t k = *hint; k < g->nact && k < *hint + 4; k++)
        if (b->corr[k] == corr && g->act[k].kind == CP_CALL && corr) {
            *hint = k + 1;
            return k;
        }
    uint32_t c = map_get(&b->calls, corr);
    if (c != CP_NONE)
        *hint = c + 1;
    return c;
}

static gpuprof_status nomem(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

static gpuprof_status add_act(build *b, cp_act a, uint64_t corr)
{
    cp_graph *g = b->g;
    uint64_t cap = b->capact;
    if (!grow((void **)&g->act, &cap, (uint64_t)g->nact + 1, sizeof(cp_act)) ||
        !grow((void **)&b->corr, &b->capcorr, (uint64_t)g->nact + 1,
              sizeof(*b->corr)))
        return nomem();
    b->capact = cap;
    a.call = a.note = CP_NONE;
    b->corr[g->nact] = corr;
    g->act[g->nact++] = a;
    return GPUPROF_OK;
}

static cp_lane *add_lane(build *b, uint8_t gpu, uint32_t profile,
                         uint32_t device, uint32_t stream)
{
    cp_graph *g = b->g;
    if (!grow((void **)&g->lane, &b->caplane, (uint64_t)g->nlane + 1,
              sizeof(cp_lane)))
        return NULL;
    cp_lane *l = &g->lane[g->nlane++];
    *l = (cp_lane){gpu, -1, g->process, profile, device, stream, g->nact, 0};
    return l;
}

static gpuprof_status edge(cp_graph *g, uint32_t src, uint32_t dst,
                           uint8_t kind)
{
    if (!grow((void **)&g->edge, &g->capedge, g->nedge + 1, sizeof(cp_edge)))
        return nomem();
    g->edge[g->nedge++] = (cp_edge){.src = src, .kind = kind, .dst = dst};
    return GPUPROF_OK;
}

static gpuprof_status dep(cp_graph *g, uint32_t waiter, uint32_t cause,
                          uint8_t type, uint8_t flags)
{
    if (!grow((void **)&g->dep, &g->capdep, g->ndep + 1, sizeof(cp_dep)))
        return nomem();
    g->dep[g->ndep++] = (cp_dep){waiter, cause, type, flags};
    return GPUPROF_OK;
}

static gpuprof_status corrupt(const build *b, const char *what)
{
    return gpuprof__an_fail(GPUPROF_E_CORRUPT,
                            "%s/trace.db: process %u: %s (damaged or "
                            "records dropped); no critical path",
                            gpuprof__an_db_dir(b->db), b->g->process, what);
}

/* ---- inputs ------------------------------------------------------------- */
static thread_in *thread_of(build *b, uint32_t profile, uint64_t *cap)
{
    for (uint32_t i = 0; i < b->nth; i++)
        if (b->th[i].profile == profile)
            return &b->th[i];
    if (!grow((void **)&b->th, cap, (uint64_t)b->nth + 1, sizeof(thread_in)))
        return NULL;
    thread_in *t = &b->th[b->nth++];
    memset(t, 0, sizeof(*t));
    t->profile = profile;
    return t;
}

/* The process's streams: threads' inputs, and a lane per GPU stream with
 * its device work. */
static gpuprof_status gather(build *b)
{
    uint64_t capth = 0;
    uint32_t ns = gpuprof_an_db_trace_stream_count(b->db);
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(b->db, i, &s);
        if (s.process != b->g->process)
            continue;
        uint64_t n;
        const uint8_t *r = gpuprof__an_db_trace_raw(b->db, i, &n);
        if (s.kind == GPUPROF_AN_TRACE_GPU) {
            b->ngpu += n;
            continue; /* after the calls (device work joins them) */
        }
        thread_in *t = thread_of(b, s.profile, &capth);
        if (!t)
            return nomem();
        if (s.kind == GPUPROF_AN_TRACE_REGIONS)
            t->reg = r, t->nreg = n;
        else if (s.kind == GPUPROF_AN_TRACE_OPS)
            t->ops = r, t->nops = n;
        else if (s.kind == GPUPROF_AN_TRACE_MPI)
            t->mpi = r, t->nmpi = n / 2;
        else if (s.kind == GPUPROF_AN_TRACE_HOST)
            t->host = r, t->nhost = n / 2;
        else if (s.kind == GPUPROF_AN_TRACE_DEPS)
            t->deps = r, t->ndeps = n;
        /* CPU samples name no dependency: the path's host segments ask
         * for them by time (db/an_samples.h) */
    }
    return GPUPROF_OK;
}

/* ---- CPU lanes ---------------------------------------------------------- */
static int by_start_outer_first(const void *x, const void *y)
{
    const cp_region *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end < b->end) - (a->end > b->end);
}

void cp_sweep_to(cp_rsweep *s, uint64_t t)
{
    for (;;) {
        while (s->depth && s->r[s->stack[s->depth - 1]].end <= t)
            s->depth--;
        if (s->next < s->n && s->r[s->next].start <= t) {
            if (s->r[s->next].end > t)
                s->stack[s->depth++] = (uint32_t)s->next;
            s->next++;
            continue;
        }
        return;
    }
}

uint64_t cp_sweep_next(const cp_rsweep *s, uint64_t e)
{
    if (s->depth && s->r[s->stack[s->depth - 1]].end < e)
        e = s->r[s->stack[s->depth - 1]].end;
    if (s->next < s->n && s->r[s->next].start < e)
        e = s->r[s->next].start;
    return e;
}

/* CPU work on [a, b): pieces where the innermost region changes. */
static gpuprof_status work(build *b, cp_lane *l, cp_rsweep *s, uint64_t a,
                           uint64_t e)
{
    while (a < e) {
        cp_sweep_to(s, a);
        uint64_t nb = cp_sweep_next(s, e);
        uint32_t ctx = s->depth ? s->r[s->stack[s->depth - 1]].context : 0;
        cp_graph *g = b->g;
        cp_act *prev = l->n ? &g->act[g->nact - 1] : NULL;
        if (prev && prev->kind == CP_WORK && prev->context == ctx &&
            prev->end == a) {
            prev->end = nb;
        } else {
            gpuprof_status st = add_act(
                b,
                (cp_act){.start = a, .end = nb, .lane = l - g->lane,
                         .context = ctx, .profile = l->profile,
                         .kind = CP_WORK},
                0);
            if (st != GPUPROF_OK)
                return st;
            l->n++;
        }
        a = nb;
    }
    return GPUPROF_OK;
}

gpuprof_status cp_regions_load(const uint8_t *raw, uint64_t n, cp_rsweep *s)
{
    memset(s, 0, sizeof(*s));
    s->r = malloc((n ? n : 1) * sizeof(*s->r));
    s->stack = malloc((n ? n : 1) * sizeof(*s->stack));
    if (!s->r || !s->stack)
        return nomem();
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *q = raw + i * DB_TRACE_REC;
        s->r[i] = (cp_region){db_get64(q), db_get64(q + 8), db_get32(q + 24),
                              (uint32_t)i};
        if (s->r[i].context == UINT32_MAX)
            s->r[i].context = 0;
    }
    s->n = n;
    qsort(s->r, s->n, sizeof(*s->r), by_start_outer_first);
    return GPUPROF_OK;
}

void cp_rsweep_free(cp_rsweep *s)
{
    free(s->r);
    free(s->stack);
    memset(s, 0, sizeof(*s));
}

/* ---- MPI calls ----------------------------------------------------------- */
#define MREC(t, j) ((t)->mpi + (uint64_t)(j) * DB_TRACE_MPI_REC)
#define HREC(t, k) ((t)->host + (uint64_t)(k) * DB_TRACE_HOST_REC)

/* Whether MPI event j of t is one this reader knows. */
static bool mpi_known(const uint8_t *q)
{
    uint8_t op = q[52];
    bool req = op == CP_MPI_ISEND || op == CP_MPI_IRECV || op == CP_MPI_WAIT;
    return op >= CP_MPI_INIT && op < CP_MPI_OPS && (!req || db_get64(q + 24));
}

/* The MPI call of t from event *j on (its events share start and end) as
 * an activity of lane l at [cs, ce); *j moves past it. */
static gpuprof_status mpi_call(build *b, cp_lane *l, cp_rsweep *s,
                               const thread_in *t, uint64_t *j, uint64_t cs,
                               uint64_t ce)
{
    cp_graph *g = b->g;
    uint64_t k = *j, s0 = db_get64(MREC(t, k)), e0 = db_get64(MREC(t, k) + 8);
    while (k < t->nmpi && db_get64(MREC(t, k)) == s0 &&
           db_get64(MREC(t, k) + 8) == e0)
        k++;
    if (k - *j > UINT16_MAX)
        return gpuprof__an_fail(GPUPROF_E_LIMIT, "process %u: an MPI call "
                                "completing more than %u requests",
                                g->process, UINT16_MAX);
    cp_sweep_to(s, cs);
    uint32_t ctx = s->depth ? s->r[s->stack[s->depth - 1]].context : 0;
    gpuprof_status st = add_act(
        b,
        (cp_act){.start = cs, .end = ce, .lane = l - g->lane, .context = ctx,
                 .profile = l->profile, .kind = CP_MPI},
        0);
    if (st != GPUPROF_OK)
        return st;
    l->n++;
    g->act[g->nact - 1].note = g->nmpi;
    g->act[g->nact - 1].nnotes = (uint16_t)(k - *j);
    for (; *j < k; (*j)++) {
        const uint8_t *q = MREC(t, *j);
        if (!mpi_known(q))
            return corrupt(b, "an MPI record of an unknown kind, or a "
                              "nonblocking one without its request");
        if (!grow((void **)&g->mpi, &b->capmpi, (uint64_t)g->nmpi + 1,
                  sizeof(cp_mpi)))
            return nomem();
        g->mpi[g->nmpi++] = (cp_mpi){
            db_get64(q + 16), db_get64(q + 24), db_get64(q + 32),
            g->nact - 1, db_get32(q + 40), (int32_t)db_get32(q + 44),
            (int32_t)db_get32(q + 48), q[52]};
    }
    return GPUPROF_OK;
}

/* An MPI call at [*cs, *ce) that its wrapper's region (libgpuprof-pmpi
 * opens one named after the function around it) holds: the call spans the
 * region, no earlier than `cur` (its prologue and epilogue are the call's,
 * not CPU work). */
static void mpi_span(const build *b, const cp_rsweep *s, uint64_t cur,
                     uint64_t *cs, uint64_t *ce)
{
    uint64_t lo = 0, hi = s->n; /* the last region starting at or before */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].start <= *cs)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return;
    const cp_region *r = &s->r[lo - 1];
    const char *name = r->context < gpuprof_an_db_context_count(b->db)
                           ? gpuprof_an_db_context_name(b->db, r->context)
                           : "";
    if (r->end < *ce || strncmp(name, "MPI_", 4))
        return;
    *cs = r->start > cur ? r->start : cur;
    *ce = r->end > *cs ? r->end : *cs;
}

/* The span of a thread's records: [*lo, *hi). */
static void span(const thread_in *t, const cp_rsweep *s, uint64_t *lo,
                 uint64_t *hi)
{
    for (uint64_t i = 0; i < s->n; i++) {
        *lo = s->r[i].start < *lo ? s->r[i].start : *lo;
        *hi = s->r[i].end > *hi ? s->r[i].end : *hi;
    }
    for (uint64_t i = 0; i < t->nops; i++) {
        uint64_t a = db_get64(t->ops + i * DB_TRACE_REC);
        uint64_t e = db_get64(t->ops + i * DB_TRACE_REC + 8);
        *lo = a < *lo ? a : *lo;
        *hi = e > *hi ? e : *hi;
    }
    for (uint64_t i = 0; i < t->nmpi; i++) {
        uint64_t a = db_get64(MREC(t, i)), e = db_get64(MREC(t, i) + 8);
        *lo = a < *lo ? a : *lo;
        *hi = e > *hi ? e : *hi;
    }
    for (uint64_t i = 0; i < t->nhost; i++) {
        uint64_t a = db_get64(HREC(t, i)), e = db_get64(HREC(t, i) + 8);
        *lo = a < *lo ? a : *lo;
        *hi = e > *hi ? e : *hi;
    }
}

/* A host record of the thread as an activity of lane l at [cs, ce). */
static gpuprof_status host_call(build *b, cp_lane *l, cp_rsweep *s,
                                const uint8_t *q, uint64_t cs, uint64_t ce)
{
    cp_graph *g = b->g;
    if (!q[32] || q[32] >= CP_H_OPS)
        return corrupt(b, "a host record of an unknown kind");
    cp_sweep_to(s, cs);
    uint32_t ctx = s->depth ? s->r[s->stack[s->depth - 1]].context : 0;
    gpuprof_status st = add_act(
        b,
        (cp_act){.start = cs, .end = ce, .lane = l - g->lane, .context = ctx,
                 .profile = l->profile, .kind = CP_HOST},
        0);
    if (st != GPUPROF_OK)
        return st;
    l->n++;
    if (!grow((void **)&g->host, &b->caphost, (uint64_t)g->nhost + 1,
              sizeof(cp_host)))
        return nomem();
    g->act[g->nact - 1].note = g->nhost;
    g->act[g->nact - 1].nnotes = 1;
    g->host[g->nhost++] = (cp_host){db_get64(q + 16), db_get64(q + 24),
                                    g->nact - 1, q[32], q[33]};
    return GPUPROF_OK;
}

/* A GPU API call of the thread as an activity of lane l at [cs, ce). */
static gpuprof_status api_call(build *b, cp_lane *l, const thread_in *t,
                               const uint8_t *q, uint64_t cs, uint64_t ce)
{
    uint64_t corr = db_get64(q + 16);
    uint32_t ctx = db_get32(q + 24);
    gpuprof_status st = add_act(
        b,
        (cp_act){.start = cs, .end = ce, .lane = l - b->g->lane,
                 .context = ctx == UINT32_MAX ? 0 : ctx,
                 .profile = t->profile, .kind = CP_CALL},
        corr);
    if (st != GPUPROF_OK)
        return st;
    l->n++;
    if (map_get(&b->calls, corr) != CP_NONE)
        return corrupt(b, "two API calls with one correlation id");
    map_put(&b->calls, corr, b->g->nact - 1);
    return GPUPROF_OK;
}

/* Which of a thread's records comes next in time: its next API call, MPI
 * call or host record (the earliest; an API call on a tie). */
enum { NEXT_OP, NEXT_MPI, NEXT_HOST };
static int next_of(const thread_in *t, uint64_t i, uint64_t j, uint64_t k)
{
    uint64_t to = i < t->nops ? db_get64(t->ops + i * DB_TRACE_REC)
                              : UINT64_MAX;
    uint64_t tm = j < t->nmpi ? db_get64(MREC(t, j)) : UINT64_MAX;
    uint64_t th = k < t->nhost ? db_get64(HREC(t, k)) : UINT64_MAX;
    if (tm < to && tm <= th)
        return NEXT_MPI;
    return th < to && th < tm ? NEXT_HOST : NEXT_OP;
}

/* A thread's lane: GPU API calls, MPI calls and host records in time
 * order, and CPU work tiling the rest of its span. */
static gpuprof_status cpu_lane(build *b, const thread_in *t)
{
    cp_lane *l = add_lane(b, 0, t->profile, 0, 0);
    cp_rsweep s = {0};
    gpuprof_status st = l ? cp_regions_load(t->reg, t->nreg, &s) : nomem();
    uint64_t lo = UINT64_MAX, hi = 0, cur, i = 0, j = 0, k = 0;
    if (st == GPUPROF_OK)
        span(t, &s, &lo, &hi);
    cur = lo;
    while (st == GPUPROF_OK && (i < t->nops || j < t->nmpi || k < t->nhost)) {
        int next = next_of(t, i, j, k);
        const uint8_t *q = next == NEXT_MPI    ? MREC(t, j)
                           : next == NEXT_HOST ? HREC(t, k)
                                               : t->ops + i * DB_TRACE_REC;
        uint64_t cs = db_get64(q), ce = db_get64(q + 8);
        if (next == NEXT_HOST && cs < cur) { /* inside the call before */
            b->g->host_left++, k++;
            continue;
        }
        if (cs < cur) /* overlapping calls: clock jitter; keep the order */
            cs = cur;
        if (ce < cs)
            ce = cs;
        if (next == NEXT_MPI)
            mpi_span(b, &s, cur, &cs, &ce);
        st = work(b, l, &s, cur, cs);
        if (st == GPUPROF_OK && next == NEXT_MPI)
            st = mpi_call(b, l, &s, t, &j, cs, ce);
        else if (st == GPUPROF_OK && next == NEXT_HOST)
            st = host_call(b, l, &s, q, cs, ce), k++;
        else if (st == GPUPROF_OK)
            st = api_call(b, l, t, q, cs, ce), i++;
        cur = ce;
    }
    if (st == GPUPROF_OK && hi > cur && lo != UINT64_MAX)
        st = work(b, l, &s, cur, hi);
    cp_rsweep_free(&s);
    return st;
}

/* ---- GPU lanes ---------------------------------------------------------- */
static gpuprof_status gpu_lanes(build *b)
{
    uint32_t ns = gpuprof_an_db_trace_stream_count(b->db);
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(b->db, i, &s);
        if (s.process != b->g->process || s.kind != GPUPROF_AN_TRACE_GPU)
            continue;
        uint64_t n;
        const uint8_t *r = gpuprof__an_db_trace_raw(b->db, i, &n);
        cp_lane *l = add_lane(b, 1, CP_NONE, s.device, s.stream);
        if (!l)
            return nomem();
        uint32_t li = (uint32_t)(l - b->g->lane), hint = 0;
        for (uint64_t k = 0; k < n; k++) {
            const uint8_t *q = r + k * DB_TRACE_REC;
            uint64_t corr = db_get64(q + 16);
            uint32_t call = call_of(b, corr, &hint), ctx = db_get32(q + 24);
            gpuprof_status st = add_act(
                b,
                (cp_act){.start = db_get64(q), .end = db_get64(q + 8),
                         .lane = li, .context = ctx == UINT32_MAX ? 0 : ctx,
                         .profile = call == CP_NONE
                                        ? CP_NONE
                                        : b->g->act[call].profile,
                         .kind = CP_GPU},
                corr);
            if (st != GPUPROF_OK)
                return st;
            b->g->act[b->g->nact - 1].call = call;
            b->g->lane[li].n++;
        }
    }
    return GPUPROF_OK;
}

/* ---- notes -------------------------------------------------------------- */
static int by_call(const void *x, const void *y)
{
    const cp_note *a = x, *b = y;
    return (a->call > b->call) - (a->call < b->call);
}

static gpuprof_status notes(build *b)
{
    cp_graph *g = b->g;
    for (uint32_t i = 0; i < b->nth; i++) {
        const thread_in *t = &b->th[i];
        uint32_t hint = 0;
        for (uint64_t k = 0; k < t->ndeps; k++) {
            const uint8_t *q = t->deps + k * DB_TRACE_REC;
            uint32_t call = call_of(b, db_get64(q + 16), &hint);
            uint32_t info = db_get32(q + 24);
            if (call == CP_NONE)
                return corrupt(b, "a dependency note names an API call the "
                                  "trace does not hold");
            if (!grow((void **)&g->note, &b->capnote, (uint64_t)g->nnote + 1,
                      sizeof(cp_note)))
                return nomem();
            g->note[g->nnote++] =
                (cp_note){call, (uint8_t)info, (uint8_t)(info >> 8),
                          (uint16_t)(info >> 16), db_get32(q + 28),
                          db_get64(q + 8)};
        }
    }
    bool sorted = true; /* mostly: threads' lanes and their notes both
                           come in thread order */
    for (uint32_t k = 1; k < g->nnote && sorted; k++)
        sorted = g->note[k - 1].call <= g->note[k].call;
    if (!sorted)
        qsort(g->note, g->nnote, sizeof(*g->note), by_call);
    for (uint32_t k = 0; k < g->nnote; k++) {
        cp_act *a = &g->act[g->note[k].call];
        if (a->note == CP_NONE)
            a->note = k;
        a->nnotes++;
    }
    return GPUPROF_OK;
}

/* ---- resolving targets -------------------------------------------------- */
static uint32_t lane_of(const cp_graph *g, uint32_t device, uint32_t stream)
{
    for (uint32_t i = 0; i < g->nlane; i++)
        if (g->lane[i].gpu && g->lane[i].device == device &&
            g->lane[i].stream == stream)
            return i;
    return CP_NONE;
}

/* The last device work of lane li launched before time t, or CP_NONE. */
static uint32_t last_before(const build *b, uint32_t li, uint64_t t)
{
    const cp_lane *l = &b->g->lane[li];
    uint32_t lo = 0, hi = l->n; /* first launched at or after t */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->launch[l->first + mid - b->gpu0] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? l->first + lo - 1 : CP_NONE;
}

/* The first device work of lane li launched at or after t, or CP_NONE. */
static uint32_t first_after(const build *b, uint32_t li, uint64_t t)
{
    uint32_t k = last_before(b, li, t);
    const cp_lane *l = &b->g->lane[li];
    uint32_t i = k == CP_NONE ? l->first : k + 1;
    return i < l->first + l->n ? i : CP_NONE;
}

/* The device work an event stands for, or CP_NONE. */
static uint32_t event_work(const build *b, uint64_t target)
{
    const cp_graph *g = b->g;
    uint32_t c = map_get(&b->calls, target);
    if (c == CP_NONE)
        return CP_NONE;
    const cp_act *a = &g->act[c];
    for (uint32_t k = 0; a->note != CP_NONE && k < a->nnotes; k++) {
        const cp_note *n = &g->note[a->note + k];
        if (n->what == CP_EVENT_RECORD) {
            uint32_t li = lane_of(g, n->device, n->stream);
            return li == CP_NONE ? CP_NONE : last_before(b, li, a->start);
        }
    }
    return b->work_of[c];
}

/* ---- edges -------------------------------------------------------------- */
#define S(a) (2 * (a))
#define E(a) (2 * (a) + 1)

static gpuprof_status sync_to(build *b, uint32_t call, uint32_t k,
                              uint8_t type, uint8_t flags)
{
    if (k == CP_NONE)
        return GPUPROF_OK;
    gpuprof_status st = edge(b->g, E(k), E(call), type);
    return st == GPUPROF_OK ? dep(b->g, call, k, type, flags) : st;
}

static gpuprof_status blocking(build *b, uint32_t a, const cp_note *n)
{
    const cp_graph *g = b->g;
    gpuprof_status st = GPUPROF_OK;
    uint64_t t = g->act[a].start;
    if (n->what == CP_SYNC_STREAM) {
        uint32_t li = lane_of(g, n->device, n->stream);
        if (li != CP_NONE)
            st = sync_to(b, a, last_before(b, li, t), CP_E_SYNC, n->flags);
    } else if (n->what == CP_SYNC_DEVICE) {
        for (uint32_t li = 0; li < g->nlane && st == GPUPROF_OK; li++)
            if (g->lane[li].gpu && g->lane[li].device == n->device)
                st = sync_to(b, a, last_before(b, li, t), CP_E_SYNC, n->flags);
    } else if (n->what == CP_SYNC_EVENT) {
        st = sync_to(b, a, event_work(b, n->target), CP_E_SYNC, n->flags);
    } else if (n->what == CP_LAUNCH && (n->flags & CP_F_BLOCKING)) {
        st = sync_to(b, a, b->work_of[a], CP_E_SYNC, n->flags);
    }
    return st;
}

/* The legacy default stream: its work waits for every other stream's
 * earlier work, and their later work waits for it. */
static gpuprof_status null_stream(build *b, uint32_t a, const cp_note *n)
{
    cp_graph *g = b->g;
    uint32_t w = b->work_of[a];
    if (w == CP_NONE)
        return GPUPROF_OK;
    uint32_t own = g->act[w].lane;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t li = 0; li < g->nlane && st == GPUPROF_OK; li++) {
        if (!g->lane[li].gpu || li == own ||
            g->lane[li].device != g->lane[own].device)
            continue;
        uint32_t k = last_before(b, li, g->act[a].start);
        if (k != CP_NONE && (st = edge(g, E(k), S(w), CP_E_NULL)) == GPUPROF_OK)
            st = dep(g, w, k, CP_E_NULL, n->flags);
        uint32_t f = first_after(b, li, g->act[a].start);
        if (st == GPUPROF_OK && f != CP_NONE &&
            (st = edge(g, E(w), S(f), CP_E_NULL)) == GPUPROF_OK)
            st = dep(g, f, w, CP_E_NULL, n->flags);
    }
    return st;
}

static gpuprof_status stream_wait(build *b, uint32_t a, const cp_note *n)
{
    cp_graph *g = b->g;
    uint32_t k = event_work(b, n->target), li = lane_of(g, n->device, n->stream);
    uint32_t f = li == CP_NONE ? CP_NONE : first_after(b, li, g->act[a].start);
    if (k == CP_NONE || f == CP_NONE)
        return GPUPROF_OK;
    gpuprof_status st = edge(g, E(k), S(f), CP_E_STREAM);
    return st == GPUPROF_OK ? dep(g, f, k, CP_E_STREAM, n->flags) : st;
}

/* Queries on one thread: failed ones wait for what the next ready query of
 * the same target finds done. `pend` holds the failed ones so far. */
typedef struct polls {
    uint32_t *act;
    uint64_t n, cap;
} polls;

static bool same_target(const cp_graph *g, uint32_t a, const cp_note *n)
{
    const cp_act *x = &g->act[a];
    for (uint32_t k = 0; k < x->nnotes; k++) {
        const cp_note *m = &g->note[x->note + k];
        if (m->what == n->what && m->device == n->device &&
            (n->what == CP_QUERY_STREAM ? m->stream == n->stream
                                        : m->target == n->target))
            return true;
    }
    return false;
}

static gpuprof_status query(build *b, polls *p, uint32_t a, const cp_note *n)
{
    cp_graph *g = b->g;
    if (!(n->flags & CP_F_READY)) {
        if (!grow((void **)&p->act, &p->cap, p->n + 1, sizeof(*p->act)))
            return nomem();
        p->act[p->n++] = a;
        return GPUPROF_OK;
    }
    uint32_t k = CP_NONE;
    if (n->what == CP_QUERY_EVENT) {
        k = event_work(b, n->target);
    } else {
        uint32_t li = lane_of(g, n->device, n->stream);
        k = li == CP_NONE ? CP_NONE : last_before(b, li, g->act[a].start);
    }
    gpuprof_status st = sync_to(b, a, k, CP_E_QUERY, n->flags);
    bool polled = false;
    uint64_t m = 0;
    for (uint64_t i = 0; i < p->n && st == GPUPROF_OK; i++) {
        if (!same_target(g, p->act[i], n)) {
            p->act[m++] = p->act[i];
            continue;
        }
        if (k != CP_NONE && g->act[p->act[i]].start < g->act[k].end) {
            st = dep(g, p->act[i], k, CP_E_POLL, n->flags);
            polled = true;
        }
    }
    p->n = m;
    if (st == GPUPROF_OK && polled)
        st = edge(g, E(k), S(a), CP_E_POLL);
    return st;
}

static gpuprof_status call_edges(build *b, polls *p, uint32_t a)
{
    const cp_act *x = &b->g->act[a];
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = 0; k < x->nnotes && st == GPUPROF_OK; k++) {
        const cp_note *n = &b->g->note[x->note + k];
        if (n->what == CP_QUERY_STREAM || n->what == CP_QUERY_EVENT)
            st = query(b, p, a, n);
        else if (n->what == CP_STREAM_WAIT)
            st = stream_wait(b, a, n);
        else if (n->what == CP_LAUNCH && (n->flags & CP_F_NULL))
            st = null_stream(b, a, n);
        if (st == GPUPROF_OK)
            st = blocking(b, a, n);
    }
    return st;
}

static gpuprof_status edges(build *b)
{
    cp_graph *g = b->g;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t li = 0; li < g->nlane && st == GPUPROF_OK; li++) {
        const cp_lane *l = &g->lane[li];
        for (uint32_t i = l->first; i < l->first + l->n && st == GPUPROF_OK;
             i++) {
            if (g->act[i].end < g->act[i].start)
                return corrupt(b, "an activity ends before it starts");
            /* own and program order edges: implicit (cpath.h cp_edge) */
            if (g->act[i].call != CP_NONE)
                st = edge(g, S(g->act[i].call), S(i), CP_E_LAUNCH);
        }
    }
    polls p = {0};
    for (uint32_t li = 0; li < g->nlane && st == GPUPROF_OK; li++) {
        const cp_lane *l = &g->lane[li];
        p.n = 0;
        for (uint32_t i = l->first; !l->gpu && i < l->first + l->n &&
                                    st == GPUPROF_OK;
             i++)
            if (g->act[i].nnotes && g->act[i].kind == CP_CALL)
                st = call_edges(b, &p, i);
    }
    free(p.act);
    return st;
}

/* Edges sorted by their destination, in place (a counting sort's places,
 * then the permutation's cycles: 4 bytes an edge more, not a copy), with
 * each activity's first (into its start, then into its end). */
gpuprof_status cp_graph_index(cp_graph *g)
{
    free(g->in);
    g->in = NULL;
    uint64_t nn = 2 * (uint64_t)g->nact;
    if (g->nedge >= UINT32_MAX)
        return gpuprof__an_fail(GPUPROF_E_LIMIT, "process %u: more than "
                                "4G dependencies", g->process);
    uint32_t *at = calloc(nn + 1, sizeof(*at)); /* per node, while sorting */
    uint32_t *to = malloc((g->nedge ? g->nedge : 1) * sizeof(*to));
    if (!at || !to) {
        free(at);
        free(to);
        return nomem();
    }
    for (uint64_t i = 0; i < g->nedge; i++)
        at[g->edge[i].dst + 1]++;
    for (uint64_t v = 0; v < nn; v++)
        at[v + 1] += at[v];
    for (uint64_t i = 0; i < g->nedge; i++)
        to[i] = at[g->edge[i].dst]++;
    for (uint64_t i = 0; i < g->nedge; i++)
        while (to[i] != i) {
            uint32_t j = to[i];
            cp_edge e = g->edge[j];
            g->edge[j] = g->edge[i];
            g->edge[i] = e;
            to[i] = to[j];
            to[j] = j;
        }
    free(to);
    /* at[v] is now the end of node v's edges: activity a's first is the
     * end of node 2a - 1's */
    for (uint64_t a = 1; a <= g->nact; a++) /* 2a - 1 >= a: not yet written */
        at[a] = at[2 * a - 1];
    at[0] = 0;
    uint32_t *in = realloc(at, ((uint64_t)g->nact + 1) * sizeof(*in));
    g->in = in ? in : at;
    return GPUPROF_OK;
}

/* Launch times per device work (prefix maximum: a stream runs its work in
 * launch order) and each call's last device work. */
static gpuprof_status launches(build *b)
{
    cp_graph *g = b->g;
    b->launch = malloc(((size_t)(g->nact - b->gpu0) + 1) * sizeof(*b->launch));
    b->work_of = malloc(((size_t)g->nact + 1) * sizeof(*b->work_of));
    if (!b->launch || !b->work_of)
        return nomem();
    for (uint32_t i = 0; i < g->nact; i++)
        b->work_of[i] = CP_NONE;
    for (uint32_t li = 0; li < g->nlane; li++) {
        const cp_lane *l = &g->lane[li];
        uint64_t m = 0;
        for (uint32_t i = l->first; l->gpu && i < l->first + l->n; i++) {
            const cp_act *a = &g->act[i];
            uint64_t t = a->call != CP_NONE ? g->act[a->call].start : a->start;
            m = t > m ? t : m;
            b->launch[i - b->gpu0] = m;
            if (a->call != CP_NONE)
                b->work_of[a->call] = i;
        }
    }
    return GPUPROF_OK;
}

static void shrink(cp_graph *g)
{
    void *p = realloc(g->act, (g->nact ? g->nact : 1) * sizeof(*g->act));
    if (p)
        g->act = p;
    p = realloc(g->edge, (g->nedge ? g->nedge : 1) * sizeof(*g->edge));
    if (p) {
        g->edge = p;
        g->capedge = g->nedge;
    }
}

/* Room for what the trace will most likely give at once, rather than by
 * doubling (each doubling copies everything so far): a call and the CPU
 * work before it per call, two pieces per region, the device work; a
 * launch edge per device work and a wait per 8 calls. */
static bool reserve(build *b)
{
    uint64_t n = b->ngpu + 1;
    for (uint32_t i = 0; i < b->nth; i++)
        n += 2 * (b->th[i].nops + b->th[i].nreg + b->th[i].nmpi +
                  b->th[i].nhost);
    if (n >= CP_MAX_NODES)
        return true; /* refused later, by count */
    uint64_t cap = b->capact;
    cp_graph *g = b->g;
    if (!grow((void **)&g->act, &cap, n, sizeof(cp_act)) ||
        !grow((void **)&b->corr, &b->capcorr, n, sizeof(*b->corr)))
        return false;
    b->capact = cap;
    return grow((void **)&g->edge, &g->capedge, b->ngpu + n / 16 + 64,
                sizeof(cp_edge));
}

gpuprof_status cp_graph_build(const gpuprof_an_db *db, uint32_t process,
                              cp_graph *g)
{
    memset(g, 0, sizeof(*g));
    g->process = process;
    build b = {.db = db, .g = g};
    gpuprof_status st = gather(&b);
    uint64_t ncalls = 0;
    for (uint32_t i = 0; i < b.nth; i++)
        ncalls += b.th[i].nops;
    if (st == GPUPROF_OK && !map_init(&b.calls, ncalls))
        st = nomem();
    if (st == GPUPROF_OK && !reserve(&b))
        st = nomem();
    for (uint32_t i = 0; i < b.nth && st == GPUPROF_OK; i++)
        st = cpu_lane(&b, &b.th[i]);
    b.gpu0 = g->nact;
    if (st == GPUPROF_OK)
        st = gpu_lanes(&b);
    if (st == GPUPROF_OK)
        st = notes(&b);
    free(b.corr); /* what each phase no longer needs, before the next */
    b.corr = NULL;
    if (st == GPUPROF_OK && 2 * (uint64_t)g->nact >= CP_MAX_NODES)
        st = gpuprof__an_fail(GPUPROF_E_LIMIT, "process %u: %u activities, "
                              "more than the analysis takes (%u)", process,
                              g->nact, CP_MAX_NODES / 2);
    if (st == GPUPROF_OK)
        st = launches(&b);
    if (st == GPUPROF_OK)
        st = edges(&b);
    if (st == GPUPROF_OK && g->nhost)
        st = cp_host_edges(g);
    if (st == GPUPROF_OK)
        st = cp_device_edges(g);
    map_free(&b.calls);
    free(b.th);
    free(b.work_of);
    free(b.launch);
    if (st == GPUPROF_OK) /* give back what growing by doubling left */
        shrink(g);
    if (st == GPUPROF_OK)
        st = cp_graph_index(g);
    if (st != GPUPROF_OK)
        cp_graph_free(g);
    return st;
}

void cp_graph_free(cp_graph *g)
{
    free(g->act);
    free(g->lane);
    free(g->note);
    free(g->edge);
    free(g->in);
    free(g->dep);
    free(g->mpi);
    free(g->host);
    memset(g, 0, sizeof(*g));
}

void cp_graph_drop_waits(cp_graph *g)
{
    free(g->note);
    free(g->dep);
    g->note = NULL;
    g->dep = NULL;
    g->nnote = 0;
    g->ndep = g->capdep = 0;
}

gpuprof_status cp_edge_add(cp_graph *g, uint32_t src, uint32_t dst,
                           uint8_t kind)
{
    return edge(g, src, dst, kind);
}

gpuprof_status cp_dep_add(cp_graph *g, uint32_t waiter, uint32_t cause,
                          uint8_t type, uint8_t flags)
{
    return dep(g, waiter, cause, type, flags);
}

uint32_t cp_processes(const gpuprof_an_db *db, uint32_t *out, uint32_t max)
{
    uint32_t n = 0, ns = gpuprof_an_db_trace_stream_count(db);
    for (uint32_t i = 0; i < ns; i++) {
        gpuprof_an_trace_stream s;
        gpuprof_an_db_trace_stream(db, i, &s);
        uint32_t k = 0;
        while (k < n && k < max && out[k] != s.process)
            k++;
        if (k == n && n < max)
            out[n++] = s.process;
    }
    for (uint32_t i = 1; i < n; i++) /* few: insertion sort */
        for (uint32_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            uint32_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}
