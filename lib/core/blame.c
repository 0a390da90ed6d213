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
 * a wait may still blame them: while a wait-capable operation (SYNC, copy,
 * map) is open or a wait unresolved, nothing is dropped; otherwise what
 * ended before the previous round began is dropped. Bounds: the history
 * keeps at most HIST_MAX activities, a wait unresolved for WAIT_MAX_NS is
 * resolved with what is there, an operation whose activity never came is
 * given up after OPEN_MAX_NS; a flush resolves everything.
 *
 * Launch->wait ("batch the work and wait once"). Per thread, in the order
 * its operations began: a SYNC operation preceded by exactly one kernel
 * launch since the previous SYNC extends the thread's run when it has the
 * same placeholder (calling context) as the run's, else starts a run there;
 * a SYNC after zero or several launches ends the run. A run of at least
 * GP_LAUNCH_WAIT_MIN pairs is reported as detect.launch_wait = its length
 * on the wait's placeholder (beside blame.cpu_idle, the waits' time), once:
 * when it ends, or at a flush (the part not yet reported).
 */
#include <stdlib.h>
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "io/io.h"

#define HIST_MAX (1u << 20)
#define DONE_RING (1u << 16)
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

typedef struct bopen {
    uint64_t corr, seen;
} bopen;

static hist *hv;
static size_t hn, hcap;
static bwait *wv;
static size_t wn, wcap;
static bopen *ov;
static size_t on, ocap;
/* Device operations in record order: seq 1, 2, ...; done[seq % DONE_RING]
 * says its final activity came; `oldest` is the first not done. */
static uint8_t *done;
static uint64_t dseq, oldest = 1;
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
static void note(gp_gpu *g, uint32_t node, uint32_t kind, uint32_t name,
                 uint32_t binary, uint8_t metric, uint64_t value)
{
    gp_act a = {node, kind, name, binary, 0, 0,
                GP_ACT_NOTE | GPUPROF_ACTIVITY_MORE, 1, {metric}, {value}};
    gpuprof__monitor_push(g, &a);
}

static void lw_report(gp_gpu *g)
{
    if (g->lw_run >= GP_LAUNCH_WAIT_MIN && g->lw_run > g->lw_reported) {
        note(g, g->lw_node, GPUPROF_OP_SYNC, 0, (uint32_t)GP_NO_BINARY,
             GP_M_DET_LAUNCH_WAIT, g->lw_run - g->lw_reported);
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
uint64_t gpuprof__blame_op(const gp_rec *r)
{
    lw_op(r->gpu, r->kind, r->node);
    if (may_wait(r->kind) &&
        grow((void **)&ov, &ocap, on, sizeof(*ov)))
        ov[on++] = (bopen){r->corr, prev_round_t};
    if (!is_device(r->kind))
        return 0;
    if (!done && !(done = calloc(DONE_RING, 1)))
        return 0;
    dseq++;
    if (dseq - oldest >= DONE_RING) /* too many in flight: give one up */
        done[oldest++ % DONE_RING] = 1;
    done[dseq % DONE_RING] = 0;
    return dseq;
}

static void op_final(uint64_t corr, uint64_t seq)
{
    for (size_t i = 0; i < on; i++)
        if (ov[i].corr == corr) {
            ov[i] = ov[--on];
            break;
        }
    if (!seq || !done || seq < oldest)
        return;
    done[seq % DONE_RING] = 1;
    while (oldest <= dseq && done[oldest % DONE_RING])
        oldest++;
}

void gpuprof__blame_act(gp_gpu *g, uint32_t node, uint64_t corr, uint64_t seq,
                        const gp_rec *r, uint64_t round)
{
    if (r->flags & GP_ACT_WAIT) {
        if (r->end_ns > r->start_ns &&
            grow((void **)&wv, &wcap, wn, sizeof(*wv)))
            wv[wn++] = (bwait){r->start_ns, r->end_ns, 0, round, 0};
    } else if (is_device(r->kind) &&
               !(r->flags & (GP_ACT_NOTE | GP_ACT_HOST | GP_ACT_INSTR)) &&
               r->end_ns > r->start_ns && hn < HIST_MAX &&
               grow((void **)&hv, &hcap, hn, sizeof(*hv))) {
        hv[hn++] = (hist){g, node, r->kind, r->name, r->binary, r->start_ns,
                          r->end_ns};
        g->mon_refs++;
    }
    if (!(r->flags & GPUPROF_ACTIVITY_MORE))
        op_final(corr, seq);
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
    for (size_t i = 0; i < hn; i++)
        total += overlap(hv[i].start, hv[i].end, w->t0, w->t1);
    if (!total)
        return;
    uint64_t given = 0;
    size_t last = SIZE_MAX;
    for (size_t i = 0; i < hn; i++)
        if (overlap(hv[i].start, hv[i].end, w->t0, w->t1))
            last = i;
    for (size_t i = 0; i < hn; i++) {
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

static void prune(uint64_t now, bool all)
{
    /* Open operations that never got their final activity are given up. */
    for (size_t i = 0; i < on;)
        if (ov[i].seen + OPEN_MAX_NS < now)
            ov[i] = ov[--on];
        else
            i++;
    bool keep = !all && (on || wn);
    size_t k = 0;
    for (size_t i = 0; i < hn; i++) {
        bool drop = all || (!keep && hv[i].end < prev_round_t) ||
                    (hn - i > HIST_MAX / 2 && hv[i].end + WAIT_MAX_NS < now);
        if (drop)
            hv[i].g->mon_refs--;
        else
            hv[k++] = hv[i];
    }
    hn = k;
}

void gpuprof__blame_round(uint64_t round, uint64_t now, bool force)
{
    size_t k = 0;
    for (size_t i = 0; i < wn; i++) {
        bwait *w = &wv[i];
        if (!w->seen)
            w->seen = now;
        if (!w->gen && w->round < round)
            w->gen = dseq ? dseq : 1;
        if (force || (w->gen && oldest > w->gen) ||
            w->seen + WAIT_MAX_NS < now)
            resolve(w);
        else
            wv[k++] = *w;
    }
    wn = k;
    prune(now, false);
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
    hn = hcap = 0;
    wv = NULL;
    wn = wcap = 0;
    ov = NULL;
    on = ocap = 0;
    lwv = NULL;
    lwn = lwcap = 0;
    done = NULL;
    dseq = 0;
    oldest = 1;
}
