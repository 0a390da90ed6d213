/*
 * an_advise_rules.c - the optimizers of seed 003's Table 2 as rules over
 * blamed samples (an_advise.h): what each matches at an instruction, its
 * estimator and its hint, and what the rules need to know of each
 * instruction (an address computed from a loaded value, a function's
 * call frame, CUDA's math slow paths, a branch target).
 *
 * This is GPA's sampling mode (no instrumentation: no instruction or
 * memory efficiencies), so its hybrid-only optimizers are absent, and two
 * are phrased for what samples show: divergence reduction (branch
 * resolving and reconvergence stalls, in place of branch elimination) and
 * function inlining as removing call overhead (the CALL/RET and the
 * callee's frame: registers saved to and restored from local memory, the
 * stack pointer, the convergence barrier) rather than as latency hiding.
 */
#include <stdlib.h>
#include <string.h>

#include "an_advise.h"
#include "../base/an_internal.h"

static double all_causes(const adv_ctx_t *c, uint32_t x)
{
    double s = 0;
    for (unsigned r = 0; r < SR_COUNT; r++)
        s += CAUSE(c, x, r);
    return s;
}

static bool in_kernel(const adv_ctx_t *c, uint32_t x)
{
    return c->b->func[INSN(c, x)->func].kernel;
}

/* ---- matchers: the samples an optimizer could remove at instruction x ---- */
static double m_indirect(const adv_ctx_t *c, uint32_t x)
{
    return c->flag[x] & F_CHAINED ? CAUSE(c, x, SR_LONG_SB) : 0;
}

static double m_register(const adv_ctx_t *c, uint32_t x)
{
    return INSN(c, x)->cls == SC_LOCAL && in_kernel(c, x)
               ? CAUSE(c, x, SR_LONG_SB) + CAUSE(c, x, SR_LG_THROTTLE)
               : 0;
}

static double m_strength(const adv_ctx_t *c, uint32_t x)
{
    uint8_t k = INSN(c, x)->cls;
    return k == SC_FP64 || k == SC_SFU
               ? CAUSE(c, x, SR_WAIT) + CAUSE(c, x, SR_SHORT_SB) +
                     CAUSE(c, x, SR_MATH)
               : 0;
}

static double m_fastmath(const adv_ctx_t *c, uint32_t x)
{
    return c->flag[x] & F_MATHFN ? all_causes(c, x) : 0;
}

static double m_split(const adv_ctx_t *c, uint32_t x)
{
    return c->flag[x] & F_REJOIN ? 0 : CAUSE(c, x, SR_NO_INST);
}

static double m_warp(const adv_ctx_t *c, uint32_t x)
{
    return CAUSE(c, x, SR_BARRIER);
}

static double m_gmem(const adv_ctx_t *c, uint32_t x)
{
    uint8_t k = INSN(c, x)->cls;
    return k == SC_GLOBAL || k == SC_GENERIC || k == SC_TEX
               ? CAUSE(c, x, SR_LG_THROTTLE) + CAUSE(c, x, SR_TEX)
               : 0;
}

static double m_smem(const adv_ctx_t *c, uint32_t x)
{
    return INSN(c, x)->cls == SC_SHARED
               ? CAUSE(c, x, SR_MIO) + CAUSE(c, x, SR_SHORT_SB)
               : 0;
}

static double m_diverge(const adv_ctx_t *c, uint32_t x)
{
    const sass_insn *in = INSN(c, x);
    bool rejoin = !strncmp(in->op, "BSSY", 4) || !strncmp(in->op, "BSYNC", 5) ||
                  !strncmp(in->op, "WARPSYNC", 8);
    return rejoin ? all_causes(c, x)
                  : CAUSE(c, x, SR_BRANCH_RESOLVING) +
                        (c->flag[x] & F_REJOIN ? CAUSE(c, x, SR_NO_INST) : 0);
}

static double m_inline(const adv_ctx_t *c, uint32_t x)
{
    return c->flag[x] & F_FRAME ? all_causes(c, x) : 0;
}

static double m_latency(const adv_ctx_t *c, uint32_t x)
{
    uint8_t k = INSN(c, x)->cls;
    return (k == SC_GLOBAL || k == SC_GENERIC || k == SC_TEX
                ? CAUSE(c, x, SR_LONG_SB)
                : 0) +
           (k == SC_ALU || k == SC_FP64 ? CAUSE(c, x, SR_WAIT) : 0);
}

const adv_optimizer gpuprof__adv_opt[] = {
    {"Indirect Memory Access Reduction", ELIM, m_indirect, false,
     "each load's address comes from an earlier load (a pointer chase): the "
     "loads cannot overlap; break the chain (precompute or prefetch the "
     "indices, follow several independent chains per thread, change the "
     "data layout)"},
    {"Register Increase", ELIM, m_register, false,
     "local memory in the kernel (register spills or per-thread arrays): "
     "allow more registers (__launch_bounds__, -maxrregcount) or shrink the "
     "arrays"},
    {"Strength Reduction", ELIM, m_strength, false,
     "long-latency arithmetic (FP64, MUFU) stalls its users and throttles "
     "its pipe: use FP32 or cheaper operations where precision allows"},
    {"Fast Math", ELIM, m_fastmath, false,
     "slow paths of CUDA math functions: use intrinsics or -use_fast_math "
     "where accuracy allows"},
    {"Function Split", ELIM, m_split, false,
     "instruction fetch stalls: the code is large or jumps far; split the "
     "kernel, unroll or inline less"},
    {"Warp Balance", ELIM, m_warp, false,
     "warps wait at a barrier for the others of their block: balance the "
     "work done before __syncthreads() across the block's warps"},
    {"Global Memory Transaction Reduction", ELIM, m_gmem, false,
     "global memory requests throttled: coalesce the accesses, use wider "
     "loads, issue fewer memory instructions"},
    {"Shared Memory Transaction Reduction", ELIM, m_smem, false,
     "shared memory stalls (bank conflicts, many requests): pad the array or "
     "change the stride so that a warp's lanes hit different banks"},
    {"Divergence Reduction", ELIM, m_diverge, false,
     "warps diverge at branches and wait to reconverge: make conditions "
     "uniform across a warp (group the work by branch) or compute without "
     "branching"},
    {"Function Inlining", ELIM, m_inline, true,
     "calls cost a frame (registers saved to local memory and restored, the "
     "return): inline the callee (__forceinline__)"},
    {"Code Reordering", HIDE, m_latency, false,
     "memory and arithmetic latency not hidden: move independent work "
     "between each producer and its users, load earlier"},
    {"Loop Unrolling", HIDE_LOOP, m_latency, false,
     "latency inside a loop: unroll it (#pragma unroll) so that later "
     "iterations' loads overlap earlier ones"},
};
const size_t gpuprof__adv_nopt =
    sizeof(gpuprof__adv_opt) / sizeof(gpuprof__adv_opt[0]);

/* ---- what the matchers need to know of each instruction ------------------ */
static bool is_load(const sass_insn *in)
{
    return in->ndef && (in->cls == SC_GLOBAL || in->cls == SC_GENERIC ||
                        in->cls == SC_LOCAL || in->cls == SC_TEX);
}

/* Whether a register instruction i reads comes from a load, directly or
 * through at most `depth` arithmetic instructions (address arithmetic). */
static bool from_load(const gpuprof__sass_bin *b, const gpuprof__sass_du *du,
                      uint32_t i, unsigned depth)
{
    const sass_insn *in = &b->insn[i];
    uint32_t defs[16];
    for (uint8_t u = 0; u < in->nuse; u++) {
        if (in->use[u] >= SASS_P0)
            continue;
        uint32_t n = gpuprof__sass_du_defs(du, i, in->use[u], defs, 16);
        for (uint32_t k = 0; k < n && k < 16; k++)
            if (is_load(&b->insn[defs[k]]) ||
                (depth && b->insn[defs[k]].cls == SC_ALU &&
                 from_load(b, du, defs[k], depth - 1)))
                return true;
    }
    return false;
}

static bool math_function(const char *name)
{
    return strstr(name, "__internal_") || strstr(name, "__cuda_sm");
}

static uint8_t frame_flags(const gpuprof__sass_bin *b, const sass_insn *in)
{
    uint8_t f = 0;
    const sass_func *fn = &b->func[in->func];
    if (in->cls == SC_CALL || in->cls == SC_RET)
        f |= F_FRAME;
    if (!fn->kernel && (in->cls == SC_LOCAL || !strncmp(in->op, "BMOV", 4) ||
                        gpuprof__sass_writes(in, SASS_R0 + 1)))
        f |= F_FRAME;
    if (math_function(fn->name))
        f |= F_MATHFN;
    if (in->cls == SC_CALL && in->target != SASS_NONE)
        for (uint32_t g = 0; g < b->nfunc; g++)
            if (b->func[g].start == in->target && b->func[g].count &&
                !strcmp(b->func[g].section, fn->section) &&
                math_function(b->func[g].name))
                f |= F_MATHFN;
    return f;
}

gpuprof_status gpuprof__adv_flags(adv_ctx_t *c)
{
    const gpuprof__sass_bin *b = c->b;
    const gpuprof__blame *bl = c->bl;
    gpuprof__sass_du *du = NULL;
    uint32_t du_func = SASS_NONE;
    for (uint32_t x = 0; x < bl->n; x++) {
        const sass_insn *in = &b->insn[bl->first + x];
        c->flag[x] = frame_flags(b, in);
        if (in->block == SASS_NONE)
            continue;
        const sass_block *blk = &b->func[in->func].blocks[in->block];
        if (blk->first == bl->first + x && x > 0 &&
            (in->label || in[-1].cls == SC_BRANCH))
            c->flag[x] |= F_REJOIN;
        if (!is_load(in) || in->cls == SC_LOCAL)
            continue;
        if (in->func != du_func) {
            gpuprof__sass_du_free(du);
            du = NULL;
            du_func = in->func;
            gpuprof_status st = gpuprof__sass_du_new(b, du_func, &du);
            if (st != GPUPROF_OK)
                return st;
        }
        if (from_load(b, du, bl->first + x, 3))
            c->flag[x] |= F_CHAINED;
    }
    gpuprof__sass_du_free(du);
    return GPUPROF_OK;
}
