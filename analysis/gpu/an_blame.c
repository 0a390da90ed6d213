/*
 * an_blame.c - instruction stall blame (seed 003 §3.2.1, GPA's sampling
 * mode): a PC sample names the instruction that waited; the instruction
 * that made it wait is usually an earlier one. Each stall of a dependency
 * reason is moved to the instructions that produced what the stalled one
 * needs:
 *
 *   1. backward slicing: the reaching definitions (an_sass_du.c) of every
 *      register the stalled instruction reads, and for scoreboard stalls
 *      the variable-latency instructions before it (in its block, then at
 *      the ends of its predecessors) that read a register it writes
 *      (write-after-read, §3.2.3);
 *   2. three pruning rules: by opcode (long scoreboard -> global, local,
 *      generic and texture memory; short scoreboard -> shared memory, MUFU,
 *      S2R and constant loads; wait -> fixed-latency arithmetic; barrier
 *      and membar -> the synchronization before it), by dominance (a
 *      source is dropped when an unpredicated instruction using the same
 *      register lies on every path to the stall: after the source in its
 *      block or before the stall in its block) and by latency (a
 *      fixed-latency source further away than its latency in instructions
 *      cannot still be pending);
 *   3. apportioning (equation 1): each remaining source gets a share
 *      proportional to its issued samples (1 each when none has any)
 *      divided by its distance to the stall (the shortest path, in
 *      instructions, for GPA's path length).
 *
 * A stall with no source left, and every stall of another reason
 * (throttles, branch resolving, fetch, selection), stays on its own
 * instruction. Nothing is lost: the causes sum to the samples.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

const char *const gpuprof__sass_reason_name[SR_COUNT] = {
    "selected",  "not_selected",    "barrier",      "branch_resolving",
    "dispatch_stall", "drain",      "imc_miss",     "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle",
    "misc",      "no_instructions", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",         "other"};

#define MAX_SRC 64
#define FIXED_LATENCY 6   /* ALU results, in instructions (cycles) */
#define FP64_LATENCY 10   /* DFMA and friends on sm_90 */

gpuprof_status gpuprof__blame_new(const gpuprof__sass_bin *b,
                                  const char *kernel, gpuprof__blame **out)
{
    *out = NULL;
    uint32_t k = gpuprof__sass_func_find(b, kernel);
    if (k == SASS_NONE)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "kernel %s is not in the GPU binary", kernel);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t f = 0; f < b->nfunc; f++)
        if (!strcmp(b->func[f].section, b->func[k].section)) {
            lo = b->func[f].first < lo ? b->func[f].first : lo;
            hi = b->func[f].first + b->func[f].count > hi
                     ? b->func[f].first + b->func[f].count
                     : hi;
        }
    gpuprof__blame *bl = calloc(1, sizeof(*bl));
    if (!bl)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    bl->first = lo;
    bl->n = hi > lo ? hi - lo : 0;
    bl->stall = calloc((size_t)bl->n * SR_COUNT + 1, sizeof(double));
    bl->cause = calloc((size_t)bl->n * SR_COUNT + 1, sizeof(double));
    bl->lat = calloc(bl->n + 1, sizeof(double));
    if (!bl->stall || !bl->cause || !bl->lat) {
        gpuprof__blame_free(bl);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    *out = bl;
    return GPUPROF_OK;
}

void gpuprof__blame_free(gpuprof__blame *bl)
{
    if (!bl)
        return;
    free(bl->stall);
    free(bl->cause);
    free(bl->lat);
    free(bl);
}

/* ---- rules ---------------------------------------------------------------- */
static bool rule_opcode(sass_reason r, const sass_insn *src)
{
    switch (r) {
    case SR_LONG_SB:
        return src->cls == SC_GLOBAL || src->cls == SC_LOCAL ||
               src->cls == SC_GENERIC || src->cls == SC_TEX;
    case SR_SHORT_SB:
        return src->cls == SC_SHARED || src->cls == SC_SFU ||
               src->cls == SC_SPECIAL || src->cls == SC_CONST;
    case SR_WAIT:
        return src->cls == SC_ALU || src->cls == SC_FP64;
    default:
        return false;
    }
}

static uint32_t latency(const sass_insn *src)
{
    return src->cls == SC_ALU    ? FIXED_LATENCY
           : src->cls == SC_FP64 ? FP64_LATENCY
                                 : UINT32_MAX;
}

/* Dominance pruning: an unpredicated instruction between i and j (after i
 * in i's block, or before j in j's block) reading register r. */
static bool shadowed(const gpuprof__sass_bin *b, uint32_t i, uint32_t j,
                     uint32_t r)
{
    const sass_insn *si = &b->insn[i], *sj = &b->insn[j];
    const sass_func *f = &b->func[si->func];
    uint32_t end_i = si->block == sj->block && i < j
                         ? j
                         : f->blocks[si->block].last + 1;
    for (uint32_t k = i + 1; k < end_i; k++)
        if (b->insn[k].pred < 0 && gpuprof__sass_reads(&b->insn[k], r))
            return true;
    if (si->block == sj->block && i < j)
        return false;
    for (uint32_t k = f->blocks[sj->block].first; k < j; k++)
        if (b->insn[k].pred < 0 && gpuprof__sass_reads(&b->insn[k], r))
            return true;
    return false;
}

typedef struct source {
    uint32_t insn;
    uint32_t dist;
} source;

static void add_source(source *s, uint32_t *n, uint32_t insn, uint32_t dist)
{
    for (uint32_t k = 0; k < *n; k++)
        if (s[k].insn == insn)
            return;
    if (*n < MAX_SRC)
        s[(*n)++] = (source){insn, dist};
}

/* Read-after-write sources of instruction j for reason r. */
static void raw_sources(const gpuprof__sass_bin *b, const gpuprof__sass_du *du,
                        uint32_t j, sass_reason r, source *s, uint32_t *n)
{
    const sass_insn *in = &b->insn[j];
    uint32_t defs[MAX_SRC];
    for (uint8_t u = 0; u < in->nuse; u++) {
        uint32_t m = gpuprof__sass_du_defs(du, j, in->use[u], defs, MAX_SRC);
        for (uint32_t k = 0; k < m && k < MAX_SRC; k++) {
            const sass_insn *src = &b->insn[defs[k]];
            if (!rule_opcode(r, src) || shadowed(b, defs[k], j, in->use[u]))
                continue;
            uint32_t d = gpuprof__sass_distance(b, defs[k], j);
            if (d != UINT32_MAX && (latency(src) == UINT32_MAX ||
                                    d < latency(src)))
                add_source(s, n, defs[k], d);
        }
    }
}

/* Readers of register r among instructions [lo, from) of one block, last
 * first, until a write of r; `dist0` instructions lie between `from` and
 * the stalled one. Returns whether a write ended the search. */
static bool war_scan(const gpuprof__sass_bin *b, uint32_t lo, uint32_t from,
                     uint32_t r, sass_reason why, uint32_t dist0, source *s,
                     uint32_t *n)
{
    for (uint32_t k = from; k-- > lo;) {
        const sass_insn *x = &b->insn[k];
        if (gpuprof__sass_reads(x, r) && rule_opcode(why, x))
            add_source(s, n, k, dist0 + (from - k - 1));
        if (gpuprof__sass_writes(x, r) && x->pred < 0)
            return true;
    }
    return false;
}

/* Write-after-read: variable-latency instructions still reading a
 * register j overwrites (stores, addresses), before j in its block and,
 * when the block does not write it first, at the ends of its
 * predecessors (a loop's previous iteration). */
static void war_sources(const gpuprof__sass_bin *b, uint32_t j, sass_reason r,
                        source *s, uint32_t *n)
{
    const sass_insn *in = &b->insn[j];
    const sass_func *f = &b->func[in->func];
    const sass_block *blk = &f->blocks[in->block];
    for (uint8_t w = 0; w < in->ndef; w++) {
        if (war_scan(b, blk->first, j, in->def[w], r, 0, s, n))
            continue;
        for (uint32_t p = 0; p < blk->npred; p++) {
            const sass_block *pb = &f->blocks[blk->pred[p]];
            war_scan(b, pb->first, pb->last + 1, in->def[w], r, j - blk->first,
                     s, n);
        }
    }
}

/* The synchronization a barrier (membar) stall waits at: the nearest BAR
 * (MEMBAR) before j, back through single predecessors; j itself if none. */
static uint32_t sync_source(const gpuprof__sass_bin *b, uint32_t j,
                            sass_reason r)
{
    const char *want = r == SR_BARRIER ? "BAR" : "MEMBAR";
    const sass_func *f = &b->func[b->insn[j].func];
    uint32_t blk = b->insn[j].block, k = j + 1;
    for (uint32_t hops = 0; hops < 64; hops++) {
        for (; k-- > f->blocks[blk].first;)
            if (!strncmp(b->insn[k].op, want, strlen(want)) &&
                (b->insn[k].op[strlen(want)] == '.' ||
                 !b->insn[k].op[strlen(want)]))
                return k;
        if (f->blocks[blk].npred != 1)
            break;
        blk = f->blocks[blk].pred[0];
        k = f->blocks[blk].last + 1;
    }
    return j;
}

/* Equation (1): shares by issued samples over distance. */
static void apportion(gpuprof__blame *bl, const source *s, uint32_t n,
                      uint32_t j, sass_reason r, double stalls)
{
    double w[MAX_SRC], sum = 0, issued = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t x = s[k].insn - bl->first;
        double all = 0;
        for (unsigned q = 0; q < SR_COUNT; q++)
            all += bl->stall[(size_t)x * SR_COUNT + q];
        w[k] = all - bl->lat[x] > 0 ? all - bl->lat[x] : 0;
        issued += w[k];
    }
    for (uint32_t k = 0; k < n; k++) {
        w[k] = (issued > 0 ? w[k] : 1.0) / (1.0 + s[k].dist);
        sum += w[k];
    }
    if (!n || sum <= 0) {
        bl->cause[(size_t)(j - bl->first) * SR_COUNT + r] += stalls;
        return;
    }
    for (uint32_t k = 0; k < n; k++)
        bl->cause[(size_t)(s[k].insn - bl->first) * SR_COUNT + r] +=
            stalls * w[k] / sum;
}

static void blame_one(const gpuprof__sass_bin *b, const gpuprof__sass_du *du,
                      gpuprof__blame *bl, uint32_t j, sass_reason r)
{
    double stalls = bl->stall[(size_t)(j - bl->first) * SR_COUNT + r];
    source s[MAX_SRC];
    uint32_t n = 0;
    if (b->insn[j].block == SASS_NONE || !du) {
        n = 0;
    } else if (r == SR_BARRIER || r == SR_MEMBAR) {
        add_source(s, &n, sync_source(b, j, r), 0);
    } else if (r == SR_LONG_SB || r == SR_SHORT_SB || r == SR_WAIT) {
        raw_sources(b, du, j, r, s, &n);
        if (r != SR_WAIT)
            war_sources(b, j, r, s, &n);
    }
    apportion(bl, s, n, j, r, stalls);
}

gpuprof_status gpuprof__blame_run(const gpuprof__sass_bin *b,
                                  gpuprof__blame *bl)
{
    memset(bl->cause, 0, (size_t)bl->n * SR_COUNT * sizeof(double));
    bl->total = bl->latency = 0;
    gpuprof__sass_du *du = NULL;
    uint32_t du_func = SASS_NONE;
    for (uint32_t x = 0; x < bl->n; x++) {
        uint32_t j = bl->first + x;
        bl->latency += bl->lat[x];
        for (unsigned r = 0; r < SR_COUNT; r++) {
            if (bl->stall[(size_t)x * SR_COUNT + r] <= 0)
                continue;
            bl->total += bl->stall[(size_t)x * SR_COUNT + r];
            if (b->insn[j].func != du_func) {
                gpuprof__sass_du_free(du);
                du = NULL;
                du_func = b->insn[j].func;
                gpuprof_status st = gpuprof__sass_du_new(b, du_func, &du);
                if (st != GPUPROF_OK)
                    return st;
            }
            blame_one(b, du, bl, j, (sass_reason)r);
        }
    }
    gpuprof__sass_du_free(du);
    return GPUPROF_OK;
}
