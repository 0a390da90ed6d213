/*
 * an_advise_par.c - GPA's parallelism optimizers (seed 003 §3.3, Table 2;
 * §3.4.2, equations 7-11): Block Increase, when a kernel's blocks are
 * fewer than the SMs, and Thread Increase, when its occupancy is limited
 * by the number of threads per block (its blocks are so small that the
 * SM's limit on resident blocks binds before its warps, registers or
 * shared memory do).
 *
 * The model (GPA's, written out so that a test can compute it by hand):
 * each warp scheduler issues for the warps it holds; it is issuing when at
 * least one of its W resident warps is ready, so with R_I the share of
 * samples that issued (stall reason "selected"), its issue rate is
 * I(W) = 1 - (1 - R_I)^W (equations 9, 10). A configuration of B blocks of
 * w warps on N SMs of K schedulers, L blocks resident per SM, gives the
 * busiest SM ceil(B / N) blocks; each of its schedulers holds
 * W_r = max(1, min(L, ceil(B / N)) w / K) warps at a time and runs
 * W_a = max(1, ceil(B / N) w / K) over the kernel, in a time proportional
 * to W_a / I(W_r). The speedup of a new configuration is the ratio of the
 * two times: S = (1 / C_W) C_I f (equation 11) with C_W = W_a' / W_a
 * (equation 7; in one wave W_a = W_r, GPA's active warps) and
 * C_I = I(W_r') / I(W_r) (equation 8). f = 1, except when the new
 * configuration leaves a scheduler a single warp where it had several:
 * then no warp waits for another (GPA: no pipe, memory throttle or
 * not-selected stalls), f = T / (T - F) with F those samples.
 *
 * Block Increase keeps the kernel's threads and splits them into blocks
 * of w' = ceil(B w / N) warps, so that every SM gets one. Thread Increase
 * tries every larger block (w + 1 warps up to the device's largest block,
 * the same threads in fewer blocks; shared memory per block as it was)
 * and suggests the fastest (the smallest of equal ones). A kernel's launch
 * is the mean of its launches. Either is suggested only when S > 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_advise.h"

typedef struct par {
    const adv_device *d;
    double n, k, warp; /* SMs, schedulers per SM, threads per warp */
    double ri, f;      /* R_I; F / T */
    uint32_t regs;
    uint64_t shared;
} par;

typedef struct cfg {
    double blocks, warps, per_sm; /* B, w, L */
} cfg;

static double issue(double ri, double w)
{
    return ri > 0 ? -expm1(w * log1p(-ri)) : w; /* R_I = 0: the limit's ratio */
}

/* The time of c (W_a / I(W_r)); *wr gets W_r. */
static double cost(const par *p, const cfg *c, double *wr)
{
    double bs = ceil(c->blocks / p->n);
    double br = bs < c->per_sm ? bs : c->per_sm;
    *wr = fmax(1, br * c->warps / p->k);
    double wa = fmax(1, bs * c->warps / p->k);
    return wa / issue(p->ri, *wr);
}

static double speedup(const par *p, const cfg *old, const cfg *nw)
{
    double wr0, wr1;
    double s = cost(p, old, &wr0) / cost(p, nw, &wr1);
    if (wr0 > 1 && wr1 <= 1 && p->f < 1)
        s /= 1 - p->f;
    return s;
}

/* The configuration of B blocks of w warps (its resident blocks). */
static cfg config(const par *p, double blocks, double warps)
{
    adv_limit l;
    return (cfg){blocks, warps,
                 gpuprof__adv_blocks_per_sm(p->d, (uint32_t)(warps * p->warp),
                                            p->regs, p->shared, &l)};
}

static gpuprof_status add(adv_kernel *k, const char *name, double s,
                          const char *hint)
{
    adv_sugg x = {.name = name, .kind = "parallelism", .speedup = s,
                  .matched = 0, .support = k->total, .run_gain = NAN,
                  .hint = strdup(hint)};
    if (!x.hint || !gpuprof__adv_add(k, &x))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    return GPUPROF_OK;
}

static gpuprof_status block_increase(adv_kernel *k, const par *p,
                                     const cfg *old, double threads)
{
    if (old->blocks >= p->n)
        return GPUPROF_OK;
    double w = ceil(old->blocks * old->warps / p->n);
    cfg nw = config(p, ceil(old->blocks * old->warps / w), w);
    double s = nw.per_sm > 0 ? speedup(p, old, &nw) : 1;
    if (!(s > 1))
        return GPUPROF_OK;
    char hint[512];
    snprintf(hint, sizeof(hint),
             "only %.0f of the SMs have work (one block each): split the "
             "same threads into %.0f blocks of %.0f threads, one per SM "
             "(blocks of %.0f threads now)",
             old->blocks, nw.blocks, w * p->warp, threads);
    return add(k, "Block Increase", s, hint);
}

static gpuprof_status thread_increase(adv_kernel *k, const par *p,
                                      const cfg *old, double threads)
{
    if (k->occ_limit != ADV_LIMIT_BLOCKS)
        return GPUPROF_OK;
    double total = old->blocks * threads, most = 1024;
    if (p->d->max_threads_block)
        most = p->d->max_threads_block;
    double best = 1;
    cfg pick = {0, 0, 0};
    for (double w = old->warps + 1; w * p->warp <= most; w++) {
        cfg nw = config(p, ceil(total / (w * p->warp)), w);
        double s = nw.per_sm > 0 ? speedup(p, old, &nw) : 0;
        if (s > best) {
            best = s;
            pick = nw;
        }
    }
    if (!(best > 1))
        return GPUPROF_OK;
    char hint[512];
    snprintf(hint, sizeof(hint),
             "occupancy is limited by the SM's resident blocks: launch "
             "blocks of %.0f threads (%.0f blocks, %.0f resident per SM) "
             "instead of %.0f threads, so that more warps hide each other's "
             "latency",
             pick.warps * p->warp, pick.blocks, pick.per_sm, threads);
    return add(k, "Thread Increase", best, hint);
}

/* R_I and F / T from the kernel's samples. */
static void shares(const adv_kernel *k, par *p)
{
    static const sass_reason CONTEND[] = {SR_NOT_SELECTED, SR_MATH,
                                          SR_LG_THROTTLE, SR_MIO, SR_TEX};
    double sel = 0, f = 0;
    for (uint32_t i = 0; i < k->npc; i++) {
        sel += k->pc[i].v[SR_SELECTED];
        for (size_t r = 0; r < sizeof(CONTEND) / sizeof(CONTEND[0]); r++)
            f += k->pc[i].v[CONTEND[r]];
    }
    p->ri = k->total > 0 ? sel / k->total : 0;
    p->f = k->total > 0 ? f / k->total : 0;
}

/* The launch and its occupancy, in k's fields and note: 1, 0 when there
 * is none (said), -1 out of memory. */
static int describe(adv_kernel *k, par *p, cfg *old, double *threads)
{
    const adv_launch *l = &k->launch;
    if (!(l->launches > 0 && l->block > 0 && l->threads > 0))
        return gpuprof__adv_note(k, "no launch configuration recorded: no "
                                    "parallelism advice")
                   ? 0
                   : -1;
    if (!k->dev.known || !k->dev.sms)
        return gpuprof__adv_note(k, "the profile describes no CUDA device "
                                    "(measured before devices were "
                                    "recorded?): no parallelism advice")
                   ? 0
                   : -1;
    *threads = round(l->block / l->launches);
    p->regs = (uint32_t)round(l->registers / l->launches);
    p->shared = (uint64_t)round(l->shared / l->launches);
    double blocks = round(l->threads / l->block);
    *old = config(p, blocks, ceil(*threads / p->warp));
    k->occ_limit = ADV_LIMIT_NONE;
    gpuprof__adv_blocks_per_sm(p->d, (uint32_t)*threads, p->regs, p->shared,
                               &k->occ_limit);
    double bs = ceil(blocks / p->n);
    k->occ_warps = (bs < old->per_sm ? bs : old->per_sm) * old->warps;
    k->occ_max = p->d->max_threads_sm ? p->d->max_threads_sm / p->warp : 0;
    k->sms_busy = blocks < p->n ? blocks : p->n;
    return gpuprof__adv_note(
               k,
               "launch: %.0f blocks of %.0f threads, %u registers per thread, %llu "
        "bytes of shared memory per block (%s%.0f launch%s): %.0f of %.0f "
        "warps resident per SM (limited by %s), blocks on %.0f of %.0f SMs",
        blocks, *threads, p->regs, (unsigned long long)p->shared,
        l->launches > 1 ? "the mean of " : "", l->launches,
        l->launches > 1 ? "es" : "", k->occ_warps, k->occ_max,
        gpuprof__adv_limit_name[k->occ_limit], k->sms_busy, p->n)
               ? 1
               : -1;
}

gpuprof_status gpuprof__adv_parallelism(adv_kernel *k)
{
    par p = {.d = &k->dev};
    cfg old;
    double threads = 0;
    p.n = k->dev.sms;
    p.k = gpuprof__adv_schedulers(&k->dev);
    p.warp = k->dev.warp ? k->dev.warp : 32;
    k->occ_warps = k->occ_max = k->sms_busy = NAN;
    k->occ_limit = ADV_LIMIT_NONE;
    int d = describe(k, &p, &old, &threads);
    if (d <= 0)
        return d ? gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory")
                 : GPUPROF_OK;
    if (old.per_sm == 0)
        return GPUPROF_OK; /* the launch cannot run on this device */
    shares(k, &p);
    gpuprof_status st = block_increase(k, &p, &old, threads);
    if (st == GPUPROF_OK)
        st = thread_increase(k, &p, &old, threads);
    return st;
}
