/*
 * waits.c - wait states and their blame (cpath.h; seed 004 §3), from the
 * dependencies the graph found and the measured times.
 *
 *   BlameKernel   a blocking wait (stream, device or event synchronize, a
 *                 blocking copy; OpenCL clFinish, clWaitForEvents) started
 *                 before the device work it waited for ended: it waited
 *                 from its start until that end; the work that ended last
 *                 and the work before it on its stream are blamed for the
 *                 parts of the wait they ran in (an idle gap of the stream
 *                 goes to the last).
 *   BlameSync     the same wait started after all of it had ended (late
 *                 synchronization): the devices' streams waited for the
 *                 call the whole time it ran; the call itself is blamed.
 *   EventQuery,   a query that answered "not done" before one of the same
 *   StreamQuery   target that answered "done": the host polled from it
 *                 until the next query (or until the work ended); the work
 *                 the ready query found done is blamed.
 *   StreamWait    device work that started later than its stream and its
 *                 launch allowed because of a stream-wait-event (OpenCL:
 *                 an event wait list): from when it could have started
 *                 until the event's work ended; that work is blamed.
 *   NullStream    the same because of the legacy default stream's
 *                 serialization.
 * MPI (cp_mpi_waits, on the ranks' joined graph; the names are Scalasca's):
 *   LateSender    a receive (MPI_Recv, or the MPI_Wait* completing an
 *                 MPI_Irecv) began before its message was sent: it waited
 *                 from its start until the send began.
 *   LateReceiver  a send that returned only after its receive was posted
 *                 (a synchronous or rendezvous send) began before that: it
 *                 waited until then.
 *   WaitAtCollective  a member of a collective began before the last
 *                 member it waits for (every member; a broadcast's or
 *                 scatter's root, a reduction's or gather's members at
 *                 the root): it waited until then.
 *   The late side's activities since its previous MPI call (what made it
 *   late) are blamed in proportion to their time.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

typedef struct waits_ctx {
    const cp_graph *g;
    cp_wait *w;
    uint64_t n, cap;
    uint32_t *cause; /* per activity: the dependency that ended last */
    uint8_t *type, *flags;
} waits_ctx;

static bool add(waits_ctx *c, cp_wait w)
{
    if (!w.ns)
        return true;
    if (c->n == c->cap) {
        uint64_t cap = c->cap ? c->cap * 2 : 64;
        cp_wait *n = realloc(c->w, cap * sizeof(*n));
        if (!n)
            return false;
        c->w = n;
        c->cap = cap;
    }
    c->w[c->n++] = w;
    return true;
}

static uint8_t note_what(const cp_graph *g, uint32_t a)
{
    const cp_act *x = &g->act[a];
    for (uint32_t k = 0; k < x->nnotes; k++) {
        uint8_t w = g->note[x->note + k].what;
        if (w == CP_QUERY_EVENT || w == CP_QUERY_STREAM)
            return w;
    }
    return 0;
}

/* Failed queries deps[i..j) that a ready query q resolved to work k. */
static bool polls(waits_ctx *c, uint64_t i, uint64_t j, uint32_t q)
{
    const cp_graph *g = c->g;
    for (uint64_t d = i; d < j; d++) {
        const cp_dep *p = &g->dep[d];
        uint64_t s = g->act[p->waiter].start;
        uint64_t e = d + 1 < j ? g->act[g->dep[d + 1].waiter].start
                               : g->act[q].start;
        uint64_t ke = g->act[p->cause].end;
        e = e < ke ? e : ke;
        uint8_t kind = note_what(g, p->waiter) == CP_QUERY_EVENT
                           ? CP_W_EVENT_QUERY
                           : CP_W_STREAM_QUERY;
        if (e > s && !add(c, (cp_wait){p->waiter, p->cause, kind,
                                      (p->flags & CP_F_OPENCL) != 0, 0,
                                      e - s}))
            return false;
    }
    return true;
}

/* Device work held back by another stream: from when its own stream and
 * its launch let it start until the cause ended. */
static uint64_t held(const cp_graph *g, uint32_t f, uint32_t k)
{
    const cp_act *a = &g->act[f];
    const cp_lane *l = &g->lane[a->lane];
    uint64_t could = a->call != CP_NONE ? g->act[a->call].start : 0;
    if (f > l->first && g->act[f - 1].end > could)
        could = g->act[f - 1].end;
    uint64_t until = g->act[k].end < a->start ? g->act[k].end : a->start;
    return until > could ? until - could : 0;
}

/* A blocking wait [ws, until) for work k: blame k and the work before it
 * on its stream for the parts they ran in; what no work covered, to k. */
static bool blame_kernel(waits_ctx *c, uint32_t a, uint32_t k, uint64_t until,
                         bool cl)
{
    const cp_graph *g = c->g;
    const cp_lane *l = &g->lane[g->act[k].lane];
    uint64_t ws = g->act[a].start, left = until - ws;
    uint64_t first = c->n;
    for (uint32_t i = k + 1; i-- > l->first && g->act[i].end > ws;) {
        uint64_t s = g->act[i].start > ws ? g->act[i].start : ws;
        uint64_t e = g->act[i].end < until ? g->act[i].end : until;
        if (e <= s)
            continue;
        if (!add(c, (cp_wait){a, i, CP_W_BLAME_KERNEL, cl, c->n > first,
                              e - s}))
            return false;
        left -= e - s;
    }
    return add(c, (cp_wait){a, k, CP_W_BLAME_KERNEL, cl, c->n > first, left});
}

static bool settle_one(waits_ctx *c, uint32_t a)
{
    const cp_graph *g = c->g;
    uint32_t k = c->cause[a];
    const cp_act *x = &g->act[a];
    bool cl = (c->flags[a] & CP_F_OPENCL) != 0;
    if (c->type[a] == CP_E_SYNC) {
        uint64_t ke = g->act[k].end;
        if (ke > x->start)
            return blame_kernel(c, a, k, ke < x->end ? ke : x->end, cl);
        return add(c,
                   (cp_wait){a, a, CP_W_BLAME_SYNC, cl, 0, x->end - x->start});
    }
    return add(c, (cp_wait){a, k,
                            c->type[a] == CP_E_NULL ? CP_W_NULL_STREAM
                                                    : CP_W_STREAM_WAIT,
                            cl, 0, held(g, a, k)});
}

gpuprof_status cp_waits(const cp_graph *g, cp_wait **out, uint64_t *n)
{
    waits_ctx c = {.g = g};
    size_t na = g->nact ? g->nact : 1;
    c.cause = malloc(na * sizeof(*c.cause));
    c.type = calloc(na, 1);
    c.flags = calloc(na, 1);
    bool ok = c.cause && c.type && c.flags;
    for (uint64_t d = 0; ok && d < g->ndep; d++) {
        const cp_dep *p = &g->dep[d];
        if (p->type == CP_E_QUERY) { /* then its failed queries */
            uint64_t j = d + 1;
            while (j < g->ndep && g->dep[j].type == CP_E_POLL &&
                   g->dep[j].cause == p->cause)
                j++;
            ok = polls(&c, d + 1, j, p->waiter);
            d = j - 1;
            continue;
        }
        if (p->type == CP_E_POLL || p->type >= CP_D_LATE_SENDER)
            continue; /* MPI's: cp_mpi_waits; host threads': host.c */
        if (!c.type[p->waiter] ||
            g->act[p->cause].end > g->act[c.cause[p->waiter]].end) {
            c.cause[p->waiter] = p->cause;
            c.type[p->waiter] = p->type;
            c.flags[p->waiter] = p->flags;
        }
    }
    for (uint32_t a = 0; ok && a < g->nact; a++)
        if (c.type[a])
            ok = settle_one(&c, a);
    free(c.cause);
    free(c.type);
    free(c.flags);
    if (!ok) {
        free(c.w);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    *out = c.w;
    *n = c.n;
    return GPUPROF_OK;
}

/* ---- MPI ------------------------------------------------------------------ */
/* A wait of `ns` caused by MPI call c being late: blamed on what c's lane
 * ran since its previous MPI call, in proportion to their time (the
 * first part counted, the others marked parts); on c itself when nothing
 * ran. */
static bool blame_late(waits_ctx *c, uint32_t waiter, uint32_t cause,
                       uint8_t kind, uint64_t ns)
{
    const cp_graph *g = c->g;
    uint32_t first = g->lane[g->act[cause].lane].first, a = cause;
    uint64_t all = 0;
    while (a > first && g->act[a - 1].kind != CP_MPI)
        a--, all += g->act[a].end - g->act[a].start;
    if (!all)
        return add(c, (cp_wait){waiter, cause, kind, 0, 0, ns});
    uint64_t given = 0, n0 = c->n;
    for (uint32_t i = a; i < cause; i++) {
        uint64_t d = g->act[i].end - g->act[i].start;
        uint64_t part = i + 1 == cause ? ns - given
                                       : (uint64_t)((double)ns * (double)d /
                                                    (double)all);
        part = part > ns - given ? ns - given : part;
        given += part;
        if (!add(c, (cp_wait){waiter, i, kind, 0, c->n > n0, part}))
            return false;
    }
    return true;
}

/* Per waiting MPI call, the cause that began last of each type. */
gpuprof_status cp_mpi_waits(const cp_graph *g, cp_wait **out, uint64_t *n)
{
    waits_ctx c = {.g = g, .w = *out, .n = *n, .cap = *n};
    bool ok = true;
    static const uint8_t kind[] = {[CP_D_LATE_SENDER] = CP_W_LATE_SENDER,
                                   [CP_D_COLL] = CP_W_WAIT_COLL,
                                   [CP_D_LATE_RECEIVER] = CP_W_LATE_RECEIVER};
    uint64_t d = 0;
    while (ok && d < g->ndep) {
        const cp_dep *p = &g->dep[d];
        uint64_t j = d + 1, last = d;
        if (!cp_dep_mpi(p->type)) {
            d++;
            continue;
        }
        /* ranks.c adds a waiter's dependencies of one type together */
        while (j < g->ndep && g->dep[j].waiter == p->waiter &&
               g->dep[j].type == p->type) {
            if (g->act[g->dep[j].cause].start > g->act[g->dep[last].cause].start)
                last = j;
            j++;
        }
        const cp_act *w = &g->act[p->waiter];
        uint64_t until = g->act[g->dep[last].cause].start;
        until = until < w->end ? until : w->end;
        if (until > w->start)
            ok = blame_late(&c, p->waiter, g->dep[last].cause, kind[p->type],
                            until - w->start);
        d = j;
    }
    *out = c.w;
    *n = c.n;
    return ok ? GPUPROF_OK
              : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}
