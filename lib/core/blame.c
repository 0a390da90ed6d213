/*
 * blame.c - CPU-GPU blame shifting and the launch->wait detector, for every
 * backend (seed 002 §IV.A-B; doc/CORE.md "Blame").
 *
 * This runs inside the monitor (monitor.c calls it under its lock), the one
 * place that sees every operation record and every activity of every
 * backend, already matched to (thread, placeholder). What it needs from a
 * backend is only what the generic pipeline carries:
 *  - device work: activities of kind KERNEL, COPY_* or MEMSET (not NOTE,
 *    not HOST) with their start and end on the process clock;
 *  - host waits: an activity flagged GP_ACT_WAIT (gpu.c sets it on every
 *    SYNC activity; a backend sets it on a note carrying the wait of a
 *    blocking transfer), whose [start, end] is the time the thread was
 *    blocked. gpu.c adds CPU_IDLE = end - start to it.
 *
 * CPU_IDLE_CAUSE. A wait is resolved once every device operation whose
 * record the monitor had read by the end of the round after the wait's
 * (so every operation begun before the wait ended) has had its final
 * activity: its time is then split over the device activities that ran
 * during it, in proportion to their overlap with it (the sum is exact; the
 * last one takes the rounding). The shares go to each activity's node as a
 * note (no count, no time). Device activities are kept in a history while
 * a wait may still blame them: one is dropped once it ended before every
 * unresolved wait began, before the previous round began (so before any
 * operation whose record is still unread), and before the round ahead of
 * the oldest open operation that may report a wait (SYNC, copy, map).
 * Bounds: the history keeps at most HIST_MAX activities, a wait unresolved
 * for WAIT_MAX_NS is resolved with what is there, an operation whose final
 * activity never came is given up after OPEN_MAX_NS; a flush resolves
 * every wait.
 *
 * Launch->wait ("batch the work and wait once"). Per thread, in the order
 * its operations began: a SYNC operation preceded by exactly one kernel
 * launch since the previous SYNC extends the thread's run when it has the
 * same placeholder (calling context) as the run's, else starts a run there;
 * a SYNC after zero or several launches ends the run. A run of at least
 * GP_LAUNCH_WAIT_MIN pairs is reported as detect.launch_wait (a metric the
 * core registers when it first reports) = its length on the wait's placeholder (beside blame.cpu_idle, the waits' time), once:
 * when it ends, or at a flush (the part not yet reported).
 */
#include <stdlib.h>
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "gpuprof_backend.h"
#include "io/io.h"

#define HIST_MAX (1u << 18)
#define RING_N (1u << 16)
#define WAIT_MAX_NS 10000000000ull  /* 10 s */
#define OPEN_MAX_NS 10000000000ull

typedef struct hist {
    gp_gpu *g;
    uint32_t node, kind, name, binary;
    uint64_t start, end;
} hist;

typedef struct bwait {
    uint64_t t0, t1;
    uint64_t gen;   /* device ops up to this one must be final; 0: not yet */
    uint64_t round; /* read in this round */
    uint64_t seen;  /* monitor clock when read */
} bwait;

/* Operations in the order their records were read: seq 1, 2, ...; a slot
 * says whether the operation's final activity came and when the monitor
 * read it; `oldest` is the first not final (last + 1: none). Operations
 * that never end are given up after OPEN_MAX_NS, and when more than
 * RING_N are open. */
typedef struct seqring {
    uint8_t *done;
    uint64_t *since;
    uint64_t last, oldest;
} seqring;

/* History: hv[hh, hn) in arrival order; the front goes first. */
static hist *hv;
static size_t hh, hn, hcap;
static bwait *wv;
static size_t wn, wcap;
static seqring dev = {NULL, NULL, 0, 1};  /* device work */
static seqring maywait = {NULL, NULL, 0, 1}; /* SYNC, copies, maps */
static uint64_t prev_round_t;
/* Threads with a launch->wait run of at least the minimum. */
static gp_gpu **lwv;
static size_t lwn, lwcap;

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, c * size);
    if (!p)
        return false;
    *v = p;
    *cap = c;
    return true;
}

static uint64_t sr_add(seqring *r, uint64_t since)
{
    if (!r->done && (!(r->done = calloc(RING_N, 1)) ||
                     !(r->since = calloc(RING_N, sizeof(uint64_t))))) {
        free(r->done);
        r->done = NULL;
        return 0;
    }
    r->last++;
    if (r->last - r->oldest >= RING_N) /* too many open: give one up */
        r->done[r->oldest++ % RING_N] = 1;
    r->done[r->last % RING_N] = 0;
    r->since[r->last % RING_N] = since;
    return r->last;
}

static void sr_advance(seqring *r, uint64_t now)
{
    while (r->oldest <= r->last &&
           (r->done[r->oldest % RING_N] ||
            r->since[r->oldest % RING_N] + OPEN_MAX_NS < now))
        r->oldest++;
}

static void sr_done(seqring *r, uint64_t seq)
{
    if (seq && r->done && seq >= r->oldest)
        r->done[seq % RING_N] = 1;
}

static bool is_device(uint32_t kind)
{
    return kind == GPUPROF_OP_KERNEL || kind == GPUPROF_OP_MEMSET ||
           (kind >= GPUPROF_OP_COPY_H2D && kind <= GPUPROF_OP_COPY_OTHER);
}

/* Operations that may report a host wait (their own, or a blocking
 * transfer's or map's). */
static bool may_wait(uint32_t kind)
{
    return kind == GPUPROF_OP_SYNC || kind == GPUPROF_OP_MAP ||
           (kind >= GPUPROF_OP_COPY_H2D && kind <= GPUPROF_OP_COPY_OTHER);
}

/* ---- launch->wait ------------------------------------------------------ */
/* detect.launch_wait is a metric the core registers (the built-in ids are
 * pinned by gpuprof_backend.h) when it first reports a run, so a program
 * without one leaves every registered slot to its backends; 0: not yet, or
 * it could not be (then nothing is reported). Monitor only. */
static uint32_t launch_wait_id;
static bool launch_wait_tried;

static void register_launch_wait(void)
{
    launch_wait_tried = true;
    gpuprof_metric_desc d = GPUPROF_METRIC_DESC_INIT;
    d.name = "detect.launch_wait";
    d.description = "a host wait after every launch: consecutive "
                    "launch->wait pairs at this wait (at least 100; batch "
                    "the work and wait once)";
    d.unit = GPUPROF_METRIC_UNIT_COUNT;
    d.combine = GPUPROF_METRIC_SUM;
    d.attach = GPUPROF_METRIC_ON_GPU_OPS;
    uint32_t id = 0;
    if (gpuprof__metric_register(&d, &id) == GPUPROF_OK && id < 256)
        launch_wait_id = id;
}

static void note(gp_gpu *g, uint32_t node, uint32_t kind, uint32_t name,
                 uint32_t binary, uint8_t metric, uint64_t value)
{
    gp_act a = {node, kind, name, binary, 0, 0,
                GP_ACT_NOTE | GPUPROF_ACTIVITY_MORE, 1, {metric}, {value}};
    gpuprof__monitor_push(g, &a);
}

static void lw_report(gp_gpu *g)
{
    if (g->lw_run < GP_LAUNCH_WAIT_MIN || g->lw_run <= g->lw_reported)
        return;
    if (!launch_wait_tried)
        register_launch_wait();
    uint32_t id = launch_wait_id;
    if (id) {
        note(g, g->lw_node, GPUPROF_OP_SYNC, 0, (uint32_t)GP_NO_BINARY,
             (uint8_t)id, g->lw_run - g->lw_reported);
        g->lw_reported = g->lw_run;
    }
}

static void lw_drop(gp_gpu *g)
{
    for (size_t i = 0; i < lwn; i++)
        if (lwv[i] == g) {
            lwv[i] = lwv[--lwn];
            g->mon_refs--;
            return;
        }
}

static void lw_end(gp_gpu *g)
{
    if (g->lw_run >= GP_LAUNCH_WAIT_MIN) {
        lw_report(g);
        lw_drop(g);
    }
    g->lw_run = g->lw_reported = 0;
}

static void lw_op(gp_gpu *g, uint32_t kind, uint32_t node)
{
    if (kind == GPUPROF_OP_KERNEL) {
        g->lw_launches++;
        return;
    }
    if (kind != GPUPROF_OP_SYNC)
        return;
    uint64_t launches = g->lw_launches;
    g->lw_launches = 0;
    if (launches == 1 && g->lw_run && g->lw_node == node) {
        if (++g->lw_run == GP_LAUNCH_WAIT_MIN &&
            grow((void **)&lwv, &lwcap, lwn, sizeof(*lwv))) {
            lwv[lwn++] = g;
            g->mon_refs++;
        }
        return;
    }
    lw_end(g);
    if (launches == 1) {
        g->lw_node = node;
        g->lw_run = 1;
    }
}

/* ---- operations and activities ----------------------------------------- */
void gpuprof__blame_op(const gp_rec *r, uint64_t seq[2])
{
    lw_op(r->gpu, r->kind, r->node);
    seq[0] = is_device(r->kind) ? sr_add(&dev, prev_round_t) : 0;
    seq[1] = may_wait(r->kind) ? sr_add(&maywait, prev_round_t) : 0;
}

void gpuprof__blame_act(gp_gpu *g, uint32_t node, const uint64_t seq[2],
                        const gp_rec *r, uint64_t round)
{
    if (r->flags & GP_ACT_WAIT) {
        if (r->end_ns > r->start_ns &&
            grow((void **)&wv, &wcap, wn, sizeof(*wv)))
            wv[wn++] = (bwait){r->start_ns, r->end_ns, 0, round, 0};
    } else if (is_device(r->kind) &&
               !(r->flags & (GP_ACT_NOTE | GP_ACT_HOST | GP_ACT_INSTR)) &&
               r->end_ns > r->start_ns && hn - hh < HIST_MAX) {
        if (hh && hn == hcap) { /* the front went: compact */
            memmove(hv, hv + hh, (hn - hh) * sizeof(*hv));
            hn -= hh;
            hh = 0;
        }
        if (grow((void **)&hv, &hcap, hn, sizeof(*hv))) {
            hv[hn++] = (hist){g, node, r->kind, r->name, r->binary,
                              r->start_ns, r->end_ns};
            g->mon_refs++;
        }
    }
    if (!(r->flags & GPUPROF_ACTIVITY_MORE)) {
        sr_done(&dev, seq[0]);
        sr_done(&maywait, seq[1]);
    }
}

/* ---- a round's end ------------------------------------------------------ */
static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

static void resolve(const bwait *w)
{
    uint64_t total = 0, wait = w->t1 - w->t0;
    for (size_t i = hh; i < hn; i++)
        total += overlap(hv[i].start, hv[i].end, w->t0, w->t1);
    if (!total)
        return;
    uint64_t given = 0;
    size_t last = SIZE_MAX;
    for (size_t i = hh; i < hn; i++)
        if (overlap(hv[i].start, hv[i].end, w->t0, w->t1))
            last = i;
    for (size_t i = hh; i < hn; i++) {
        uint64_t o = overlap(hv[i].start, hv[i].end, w->t0, w->t1);
        if (!o)
            continue;
        uint64_t b = i == last ? wait - given
                               : (uint64_t)((unsigned __int128)wait * o / total);
        given += b;
        if (b)
            note(hv[i].g, hv[i].node, hv[i].kind, hv[i].name, hv[i].binary,
                 GP_M_CPU_IDLE_CAUSE, b);
    }
}

/* Drops the history's front while no wait can still blame it: it ended
 * before the round ahead of every operation that may yet report a wait,
 * and before every unresolved wait began. */
static void prune(uint64_t now)
{
    sr_advance(&dev, now);
    sr_advance(&maywait, now);
    uint64_t horizon = prev_round_t;
    if (maywait.oldest <= maywait.last &&
        maywait.since[maywait.oldest % RING_N] < horizon)
        horizon = maywait.since[maywait.oldest % RING_N];
    for (size_t i = 0; i < wn; i++)
        if (wv[i].t0 < horizon)
            horizon = wv[i].t0;
    while (hh < hn && (hv[hh].end < horizon || hn - hh > HIST_MAX)) {
        hv[hh].g->mon_refs--;
        hh++;
    }
    if (hh == hn)
        hh = hn = 0;
}

void gpuprof__blame_round(uint64_t round, uint64_t now, bool force)
{
    size_t k = 0;
    for (size_t i = 0; i < wn; i++) {
        bwait *w = &wv[i];
        if (!w->seen)
            w->seen = now;
        if (!w->gen && w->round < round)
            w->gen = dev.last ? dev.last : 1;
        if (force || (w->gen && dev.oldest > w->gen) ||
            w->seen + WAIT_MAX_NS < now)
            resolve(w);
        else
            wv[k++] = *w;
    }
    wn = k;
    prune(now);
    prev_round_t = now;
}

void gpuprof__blame_flush(uint64_t now)
{
    gpuprof__blame_round(UINT64_MAX, now, true);
    for (size_t i = 0; i < lwn;) {
        gp_gpu *g = lwv[i];
        lw_report(g);
        if (gp_load_relaxed(&g->gone)) /* no more operations: it may go */
            lw_drop(g);
        else
            i++;
    }
}

void gpuprof__blame_atfork_child(void)
{
    hv = NULL; /* leaked with the parent's other state */
    hh = hn = hcap = 0;
    wv = NULL;
    wn = wcap = 0;
    lwv = NULL;
    lwn = lwcap = 0;
    dev = (seqring){NULL, NULL, 0, 1};
    maywait = (seqring){NULL, NULL, 0, 1};
}
