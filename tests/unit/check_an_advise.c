/*
 * check_an_advise.c - stall blame (an_blame.c), GPU calling contexts
 * (an_sass_cg.c) and the advisor (an_advise*.c) on real H100 data.
 *
 * tests/support/pcfixture.c writes a measurement directory holding the
 * fixture's cubin and a profile with Nsight Compute's per-instruction
 * warp-stall samples of the six kernels of kernels.cu (both launches
 * summed), as the CUPTI backend would record PC samples. Each kernel was
 * built to have one dominant cause of stalls; the blame must land on the
 * instruction that causes them (not where Nsight Compute saw the warps
 * wait), the recursion must be one SCC, and the top suggestion of each
 * kernel must be the optimization for its cause, through the database and
 * the public API. nvdisasm is the fixture's stand-in (check_an_sass.c).
 */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/gpu/an_advise.h"
#include "../../analysis/base/an_internal.h"
#include "gpuprof_analysis.h"
#include "support/mkprofile.h"
#include "support/pcfixture.h"
#include "support/suite.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/gpu-sm90"
#endif
#define CUBIN FIXTURES "/kernels.sm_90.cubin"

static const char *const K_CHASE = "_Z5chasePKiPii",
                         *const K_BANK = "_Z13bank_conflictPfi",
                         *const K_DIV = "_Z9divergentPfii",
                         *const K_CALLS = "_Z5callsPfPii",
                         *const K_BAR = "_Z12barrier_waitPfi",
                         *const K_FP64 = "_Z4fp64Pdi";

static void use_fixture_nvdisasm(void)
{
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
}

/* The measurement in ./m, in a directory of the case's own (the cases
 * share the program's temporary directory; each is a process): the
 * fixture's samples, and the kernels' launches `l` on the H100 (none: as
 * a profile without launches or devices). */
static void measurement_with(const pcfix_launch *l, size_t n)
{
    char d[] = "caseXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(d));
    ck_assert_int_eq(chdir(d), 0);
    ck_assert_int_eq(pcfix_write_launches(FIXTURES, "m", 1, l, n, n > 0), 0);
}

static void measurement(void)
{
    measurement_with(NULL, 0);
}

/* The samples gathered and the kernel's blame; the caller frees. */
typedef struct blamed {
    gpuprof__sass_bin *bin;
    gpuprof__blame *bl;
    gpuprof_an_advice a;
} blamed;

static const adv_kernel *kernel(const gpuprof_an_advice *a, const char *name)
{
    for (uint32_t k = 0; k < a->nk; k++)
        if (!strcmp(a->k[k].name, name))
            return &a->k[k];
    ck_abort_msg("no kernel %s", name);
    return NULL;
}

static void blame(blamed *x, const char *name)
{
    use_fixture_nvdisasm();
    measurement();
    memset(x, 0, sizeof(*x));
    ck_assert_int_eq(gpuprof__adv_gather_file("m/h100-r0-p7.gpuprof", &x->a),
                     GPUPROF_OK);
    ck_assert_uint_eq(x->a.nk, 6);
    ck_assert_int_eq(gpuprof__sass_open(CUBIN, &x->bin), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__blame_new(x->bin, name, &x->bl), GPUPROF_OK);
    const adv_kernel *k = kernel(&x->a, name);
    for (uint32_t p = 0; p < k->npc; p++) {
        uint32_t i = gpuprof__sass_insn_at(x->bin, name, (uint32_t)k->pc[p].offset);
        ck_assert_msg(i != SASS_NONE, "%s+%#llx: no instruction", name,
                      (unsigned long long)k->pc[p].offset);
        for (unsigned r = 0; r < SR_COUNT; r++)
            x->bl->stall[(size_t)(i - x->bl->first) * SR_COUNT + r] += k->pc[p].v[r];
        x->bl->lat[i - x->bl->first] += k->pc[p].latency;
    }
    ck_assert_int_eq(gpuprof__blame_run(x->bin, x->bl), GPUPROF_OK);
    /* nothing is lost: the causes add up to the samples */
    double s = 0, c = 0, t = 0;
    for (size_t v = 0; v < (size_t)x->bl->n * SR_COUNT; v++)
        s += x->bl->stall[v], c += x->bl->cause[v];
    for (uint32_t p = 0; p < k->npc; p++)
        t += k->pc[p].samples;
    ck_assert_msg(fabs(s - c) < 1e-6 * s && s == t, "%g vs %g (%g)", s, c, t);
}

static void unblame(blamed *x)
{
    gpuprof__blame_free(x->bl);
    gpuprof__sass_free(x->bin);
    for (uint32_t k = 0; k < x->a.nk; k++) {
        free(x->a.k[k].name), free(x->a.k[k].binary), free(x->a.k[k].pc);
    }
    free(x->a.k);
}

static uint32_t X(const blamed *x, const char *k, uint32_t off)
{
    uint32_t i = gpuprof__sass_insn_at(x->bin, k, off);
    ck_assert_msg(i != SASS_NONE, "%s+%#x", k, off);
    return i - x->bl->first;
}
#define STL(x, i, r) ((x)->bl->stall[(size_t)(i)*SR_COUNT + (r)])
#define CAU(x, i, r) ((x)->bl->cause[(size_t)(i)*SR_COUNT + (r)])

/* The instruction with the most samples (stall) or blame (cause) of r. */
static uint32_t argmax(const blamed *x, const double *v, sass_reason r)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < x->bl->n; i++)
        if (v[(size_t)i * SR_COUNT + r] > v[(size_t)best * SR_COUNT + r])
            best = i;
    return best;
}

/* chase: Nsight Compute sees warps wait (long scoreboard) on the address
 * arithmetic that uses each load's value; the load is the cause. */
START_TEST(blame_pointer_chase)
{
    blamed x;
    blame(&x, K_CHASE);
    const sass_insn *in = x.bin->insn + x.bl->first;
    uint32_t seen = argmax(&x, x.bl->stall, SR_LONG_SB),
             blamed_on = argmax(&x, x.bl->cause, SR_LONG_SB);
    ck_assert_str_eq(in[seen].op, "IMAD.WIDE");
    ck_assert_str_eq(in[blamed_on].op, "LDG.E");
    /* IMAD.WIDE R8, R7 (0x1a0) waits for LDG.E R7 (0x190): all of it */
    uint32_t use = X(&x, K_CHASE, 0x1a0), load = X(&x, K_CHASE, 0x190);
    ck_assert(STL(&x, use, SR_LONG_SB) > 4000);
    ck_assert(CAU(&x, use, SR_LONG_SB) == 0);
    ck_assert(CAU(&x, load, SR_LONG_SB) >= STL(&x, use, SR_LONG_SB));
    /* every long-scoreboard stall of the kernel lands on a load */
    double on_loads = 0, all = 0;
    for (uint32_t i = 0; i < x.bl->n; i++) {
        all += STL(&x, i, SR_LONG_SB);
        if (in[i].cls == SC_GLOBAL)
            on_loads += CAU(&x, i, SR_LONG_SB);
    }
    ck_assert_msg(fabs(on_loads - all) < 1e-6 * all, "%g of %g", on_loads, all);
    /* the loop-carried use at the loop's head (0x180, R19) goes to the
     * previous iteration's last load (0x390) and the loads before the loop
     * with distance weights: 0x390 (issued samples, closer) gets most */
    ck_assert(CAU(&x, X(&x, K_CHASE, 0x390), SR_LONG_SB) > 0);
    unblame(&x);
}
END_TEST

/* barrier_wait: the barrier stalls sampled on the store after BAR.SYNC
 * are the barrier's; calls: the return waits for its address (LDL R20). */
START_TEST(blame_barrier_and_return)
{
    blamed x;
    blame(&x, K_BAR);
    uint32_t bar = X(&x, K_BAR, 0x4c0), st = X(&x, K_BAR, 0x4d0);
    ck_assert_str_eq(x.bin->insn[x.bl->first + bar].op, "BAR.SYNC.DEFER_BLOCKING");
    ck_assert(STL(&x, st, SR_BARRIER) == 4568);
    ck_assert(CAU(&x, bar, SR_BARRIER) == 4568);
    ck_assert(CAU(&x, st, SR_BARRIER) == 0);
    unblame(&x);

    blame(&x, K_CALLS);
    uint32_t ret = X(&x, K_CALLS, 0x370), ldl = X(&x, K_CALLS, 0x2f0);
    ck_assert_str_eq(x.bin->insn[x.bl->first + ret].op, "RET.REL.NODEC");
    ck_assert(STL(&x, ret, SR_LONG_SB) > 70000);
    ck_assert(CAU(&x, ret, SR_LONG_SB) == 0);
    ck_assert(CAU(&x, ldl, SR_LONG_SB) >= STL(&x, ret, SR_LONG_SB));
    /* BMOV.32.CLEAR R16 (0x1f0) overwrites R16 while STL [R1+0x4], R16
     * (0x1d0) may still read it: write-after-read, blamed on the store */
    uint32_t bmov = X(&x, K_CALLS, 0x1f0), stl = X(&x, K_CALLS, 0x1d0);
    ck_assert(STL(&x, bmov, SR_LONG_SB) > 50000);
    ck_assert(CAU(&x, bmov, SR_LONG_SB) == 0);
    ck_assert(CAU(&x, stl, SR_LONG_SB) > 0);
    unblame(&x);
}
END_TEST

/* bank_conflict: short-scoreboard stalls on the adds land on the shared
 * loads; fp64: each DFMA's wait goes to the DFMA before it. */
START_TEST(blame_shared_and_fp64)
{
    blamed x;
    blame(&x, K_BANK);
    const sass_insn *in = x.bin->insn + x.bl->first;
    double on_lds = 0, all = 0;
    for (uint32_t i = 0; i < x.bl->n; i++) {
        all += STL(&x, i, SR_SHORT_SB);
        if (in[i].cls == SC_SHARED)
            on_lds += CAU(&x, i, SR_SHORT_SB);
    }
    ck_assert_msg(all > 15000 && on_lds > 0.99 * all, "%g of %g", on_lds, all);
    ck_assert_str_eq(in[argmax(&x, x.bl->cause, SR_SHORT_SB)].op, "LDS");
    ck_assert_str_ne(in[argmax(&x, x.bl->stall, SR_SHORT_SB)].op, "LDS");
    unblame(&x);

    blame(&x, K_FP64);
    in = x.bin->insn + x.bl->first;
    double on_dfma = 0;
    all = 0;
    for (uint32_t i = 0; i < x.bl->n; i++) {
        if (!strcmp(in[i].op, "DFMA"))
            all += STL(&x, i, SR_WAIT), on_dfma += CAU(&x, i, SR_WAIT);
    }
    ck_assert(all > 5000);
    /* the chain's stalls stay on DFMAs; the loop's first DFMA (0x1c0)
     * takes those of the second (0x1e0) */
    ck_assert_msg(on_dfma > 0.95 * all, "%g of %g", on_dfma, all);
    ck_assert(CAU(&x, X(&x, K_FP64, 0x1c0), SR_WAIT) >
              STL(&x, X(&x, K_FP64, 0x1c0), SR_WAIT));
    unblame(&x);
}
END_TEST

/* Per instruction (bin-wide) and per function: the samples. */
static void sample_sums(const blamed *x, double **per_insn, double **per_func)
{
    *per_insn = calloc(x->bin->ninsn, sizeof(double));
    *per_func = calloc(x->bin->nfunc, sizeof(double));
    for (uint32_t i = 0; i < x->bl->n; i++)
        for (unsigned r = 0; r < SR_COUNT; r++) {
            (*per_insn)[x->bl->first + i] += STL(x, i, r);
            (*per_func)[x->bin->insn[x->bl->first + i].func] += STL(x, i, r);
        }
}

/* calls: kernel -> middle -> leaf (5 call sites), kernel -> leaf,
 * kernel -> fib -> fib (twice): fib is one recursive SCC; leaf's samples
 * split between its two callers by their calls' weights (gprof). */
START_TEST(recursion_is_one_scc)
{
    blamed x;
    blame(&x, K_CALLS);
    double *pi, *pf;
    sample_sums(&x, &pi, &pf);
    gpuprof__sass_cg *cg;
    ck_assert_int_eq(gpuprof__sass_cg_new(x.bin, K_CALLS, pi, &cg), GPUPROF_OK);
    ck_assert_uint_eq(cg->nsite, 10);
    uint32_t fk = gpuprof__sass_func_find(x.bin, K_CALLS),
             fib = gpuprof__sass_func_find(x.bin, "$_Z5callsPfPii$_Z3fibi"),
             mid = gpuprof__sass_func_find(x.bin, "$_Z5callsPfPii$_Z6middlefi"),
             leaf = gpuprof__sass_func_find(x.bin, "$_Z5callsPfPii$_Z4leaff");
    /* four functions, four SCCs; fib's holds fib alone and its calls */
    ck_assert(cg->scc[fk] != cg->scc[fib] && cg->scc[fib] != cg->scc[mid] &&
              cg->scc[mid] != cg->scc[leaf] && cg->scc[leaf] != cg->scc[fk]);
    ck_assert_uint_eq(cg->scc_size[cg->scc[fib]], 1);
    double w_kernel = 0, w_middle = 0;
    uint32_t self = 0;
    for (uint32_t s = 0; s < cg->nsite; s++) {
        self += cg->site[s].caller == fib && cg->site[s].callee == fib;
        if (cg->site[s].callee == leaf)
            *(cg->site[s].caller == fk ? &w_kernel : &w_middle) += cg->site[s].weight;
        /* call counts from the CALLs' samples; middle's remainder loop's
         * call (0x530) had none, and leaf has sampled callers: 0 */
        bool r530 = x.bin->insn[cg->site[s].insn].offset == 0x530;
        ck_assert(r530 ? cg->site[s].weight == 0 : cg->site[s].weight > 0);
    }
    ck_assert_uint_eq(self, 2);
    sass_cct *t;
    uint32_t n;
    ck_assert_int_eq(gpuprof__sass_cct(x.bin, cg, fk, pf, &t, &n), GPUPROF_OK);
    ck_assert_uint_eq(n, 5); /* calls, middle, leaf, leaf, fib */
    ck_assert(t[0].func == fk && t[0].parent == SASS_NONE);
    ck_assert_msg(fabs(t[0].total - 1007392) < 1e-6, "%g", t[0].total);
    double leaf_total = 0;
    for (uint32_t i = 0; i < n; i++) {
        ck_assert_int_eq(t[i].scc, t[i].func == fib);
        if (t[i].func != leaf)
            continue;
        double want = pf[leaf] * (t[t[i].parent].func == fk ? w_kernel : w_middle) /
                      (w_kernel + w_middle);
        ck_assert_msg(fabs(t[i].self - want) < 1e-6, "%g vs %g", t[i].self, want);
        leaf_total += t[i].self;
    }
    ck_assert(fabs(leaf_total - pf[leaf]) < 1e-6);
    free(t);
    gpuprof__sass_cg_free(cg);
    free(pi), free(pf);
    unblame(&x);
}
END_TEST

/* A cycle through two functions (A calls B calls A) is one SCC, one
 * node of the tree; an unsampled callee's call gets weight 1 when it has
 * samples (seed 000 §6.3 step 2). */
START_TEST(mutual_recursion)
{
    static const char listing[] =
        "//--------------------- .text.K ---------------------------\n"
        "        .global         K\n"
        "K:\n"
        ".text.K:\n"
        "        /*0000*/                   CALL.REL.NOINC `($K$A) ;\n"
        "        /*0010*/                   EXIT ;\n"
        "$K$A:\n"
        "        /*0020*/                   CALL.REL.NOINC `($K$B) ;\n"
        "        /*0030*/                   RET.REL.NODEC R20 `(K) ;\n"
        "$K$B:\n"
        "        /*0040*/                   CALL.REL.NOINC `($K$A) ;\n"
        "        /*0050*/                   RET.REL.NODEC R20 `(K) ;\n"
        "//--------------------- SYMBOLS ---------------------------\n";
    gpuprof__sass_bin *b;
    ck_assert_int_eq(gpuprof__sass_parse(strdup(listing), &b), GPUPROF_OK);
    ck_assert_uint_eq(b->nfunc, 3);
    ck_assert(b->func[0].kernel && !b->func[1].kernel);
    double pi[6] = {0, 0, 0, 5, 0, 0}, pf[3] = {0, 5, 0}; /* A's RET */
    gpuprof__sass_cg *cg;
    ck_assert_int_eq(gpuprof__sass_cg_new(b, "K", pi, &cg), GPUPROF_OK);
    ck_assert_uint_eq(cg->nsite, 3);
    ck_assert_uint_eq(cg->scc[1], cg->scc[2]);
    ck_assert_uint_eq(cg->scc_size[cg->scc[1]], 2);
    ck_assert(cg->site[0].weight == 1); /* K -> A: reached from A's samples */
    sass_cct *t;
    uint32_t n;
    ck_assert_int_eq(gpuprof__sass_cct(b, cg, 0, pf, &t, &n), GPUPROF_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(t[1].scc && t[1].parent == 0 && t[1].self == 5 && t[0].total == 5);
    free(t);
    gpuprof__sass_cg_free(cg);
    gpuprof__sass_free(b);
}
END_TEST

/* ---- through the database and the public API -------------------------- */
static gpuprof_an_db *database_with(const pcfix_launch *l, size_t n)
{
    measurement_with(l, n);
    char cwd[2048], in[2100];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    snprintf(in, sizeof(in), "%s/m", cwd);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, "db"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(a), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open("db", &db), GPUPROF_OK);
    return db;
}

static gpuprof_an_db *database(void)
{
    return database_with(NULL, 0);
}

static uint32_t find_kernel(const gpuprof_an_advice *a, const char *name)
{
    for (uint32_t k = 0; k < gpuprof_an_advice_kernel_count(a); k++)
        if (!strcmp(gpuprof_an_advice_kernel_name(a, k), name))
            return k;
    ck_abort_msg("no kernel %s", name);
    return 0;
}

typedef struct want {
    const char *kernel, *top;
    double samples;
} want;

static const want WANT[] = {
    {"_Z5callsPfPii", "Function Inlining", 1007392},
    {"_Z5chasePKiPii", "Indirect Memory Access Reduction", 97134},
    {"_Z9divergentPfii", "Divergence Reduction", 68000},
    {"_Z13bank_conflictPfi", "Shared Memory Transaction Reduction", 20492},
    {"_Z4fp64Pdi", "Strength Reduction", 19784},
    {"_Z12barrier_waitPfi", "Warp Balance", 5452},
};

/* The top suggestion of each kernel is the optimization of the cause it
 * was built with (kernels.cu), kernels by descending samples. */
START_TEST(top_advice_per_kernel)
{
    use_fixture_nvdisasm();
    gpuprof_an_db *db = database();
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_advice_note(a), "");
    ck_assert_uint_eq(gpuprof_an_advice_kernel_count(a), 6);
    for (uint32_t k = 0; k < 6; k++) {
        ck_assert_str_eq(gpuprof_an_advice_kernel_name(a, k), WANT[k].kernel);
        ck_assert(gpuprof_an_advice_kernel_samples(a, k) == WANT[k].samples);
        ck_assert_int_eq(gpuprof_an_advice_kernel_detailed(a, k), 1);
        ck_assert_uint_ge(gpuprof_an_advice_count(a, k), 2);
        ck_assert_str_eq(gpuprof_an_advice_name(a, k, 0), WANT[k].top);
        for (uint32_t s = 1; s < gpuprof_an_advice_count(a, k); s++)
            ck_assert(gpuprof_an_advice_speedup(a, k, s) <=
                      gpuprof_an_advice_speedup(a, k, s - 1));
        /* equation (3) for the top (stall elimination) suggestions */
        double t = WANT[k].samples, m = gpuprof_an_advice_matched(a, k, 0);
        ck_assert_str_eq(gpuprof_an_advice_kind(a, k, 0), "stall elimination");
        ck_assert(fabs(gpuprof_an_advice_speedup(a, k, 0) - t / (t - m)) < 1e-9);
    }
    /* chase: the loads of the unrolled loop at line 12 */
    uint32_t c = find_kernel(a, K_CHASE);
    ck_assert_uint_eq(gpuprof_an_advice_hotspot_count(a, c, 0), 3);
    ck_assert_str_eq(gpuprof_an_advice_hotspot_source(a, c, 0, 0), "kernels.cu:12");
    ck_assert_str_eq(gpuprof_an_advice_hotspot_loop(a, c, 0, 0),
                     "loop at kernels.cu:12");
    ck_assert_str_eq(gpuprof_an_advice_hotspot_function(a, c, 0, 0),
                     "chase(int const*, int*, int)");
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_advice_hotspot_instruction(a, c, 0, 0), "LDG.E"));
    /* barrier_wait: all of it on the barrier, line 67 */
    c = find_kernel(a, K_BAR);
    ck_assert_uint_eq(gpuprof_an_advice_hotspot_count(a, c, 0), 1);
    ck_assert_uint_eq(gpuprof_an_advice_hotspot_offset(a, c, 0, 0), 0x4c0);
    ck_assert_str_eq(gpuprof_an_advice_hotspot_source(a, c, 0, 0), "kernels.cu:67");
    ck_assert(gpuprof_an_advice_matched(a, c, 0) == 4568);
    /* divergent: the reconvergence barriers of the loop at line 37 */
    c = find_kernel(a, K_DIV);
    ck_assert_str_eq(gpuprof_an_advice_hotspot_loop(a, c, 0, 0),
                     "loop at kernels.cu:37");
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_advice_hotspot_instruction(a, c, 0, 0), "BSSY"));
    /* calls: fib's frame, and the hint says it is recursive */
    c = find_kernel(a, K_CALLS);
    ck_assert_str_eq(gpuprof_an_advice_hotspot_function(a, c, 0, 0), "fib(int)");
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_hint(a, c, 0),
                                 "fib(int) is recursive"));
    ck_assert_uint_eq(gpuprof_an_advice_context_count(a, c), 5);
    ck_assert_str_eq(gpuprof_an_advice_context_name(a, c, 0),
                     "calls(float*, int*, int)");
    ck_assert(gpuprof_an_advice_context_samples(a, c, 0) == 1007392);
    uint32_t fib = 0;
    for (uint32_t i = 0; i < 5; i++)
        if (gpuprof_an_advice_context_recursive(a, c, i)) {
            fib = i;
            ck_assert_str_eq(gpuprof_an_advice_context_name(a, c, i), "fib(int)");
        }
    ck_assert_uint_eq(gpuprof_an_advice_context_parent(a, c, fib), 0);
    ck_assert_uint_eq(gpuprof_an_advice_context_count(a, find_kernel(a, K_FP64)), 0);
    /* the report */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_advice_print(a, f, 1, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "kernel chase(int const*, int*, int) ["));
    ck_assert_ptr_nonnull(strstr(text, "  1. Warp Balance: estimated speedup "));
    ck_assert_ptr_null(strstr(text, "  2. "));
    ck_assert_ptr_nonnull(strstr(text, "fib(int) [recursive]"));
    free(text);
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* No nvdisasm: per-kernel advice from stall reasons, said once. */
START_TEST(kernel_level_without_nvdisasm)
{
    setenv("GPUPROF_NVDISASM", "/nonexistent/nvdisasm", 1);
    gpuprof_an_db *db = database();
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_OK);
    const char *note = gpuprof_an_advice_note(a);
    ck_assert_ptr_nonnull(strstr(note, "GPUPROF_NVDISASM"));
    ck_assert_ptr_nonnull(strstr(note, "advice per kernel only"));
    ck_assert_ptr_null(strstr(strstr(note, "per kernel only") + 1,
                              "per kernel only")); /* said once */
    ck_assert_uint_eq(gpuprof_an_advice_kernel_count(a), 6);
    for (uint32_t k = 0; k < 6; k++) {
        ck_assert_int_eq(gpuprof_an_advice_kernel_detailed(a, k), 0);
        ck_assert_uint_eq(gpuprof_an_advice_context_count(a, k), 0);
        ck_assert(gpuprof_an_advice_kernel_samples(a, k) == WANT[k].samples);
    }
    ck_assert_str_eq(gpuprof_an_advice_name(a, find_kernel(a, K_BAR), 0),
                     "Warp Balance");
    ck_assert_str_eq(gpuprof_an_advice_name(a, find_kernel(a, K_DIV), 0),
                     "Divergence Reduction");
    /* Stall reasons whose optimization depends on the instruction (short
     * scoreboard: shared memory or MUFU; math pipe: which pipe?) are
     * said, not advised on: bank_conflict is not told to fix shared
     * memory nor fp64 to reduce strength without its code. */
    for (uint32_t k = 0; k < 6; k++)
        for (uint32_t x = 0; x < gpuprof_an_advice_count(a, k); x++) {
            const char *n = gpuprof_an_advice_name(a, k, x);
            ck_assert_msg(strcmp(n, "Shared Memory Transaction Reduction") &&
                              strcmp(n, "Global Memory Transaction "
                                        "Reduction") &&
                              strcmp(n, "Strength Reduction"),
                          "%s: %s", gpuprof_an_advice_kernel_name(a, k), n);
        }
    const char *bank = gpuprof_an_advice_kernel_note(a, find_kernel(a, K_BANK));
    /* 16092 short scoreboard of 20492 samples */
    ck_assert_msg(strstr(bank, "78.5% of the samples stalled for reasons "
                               "whose optimization depends on the "
                               "instruction (short_scoreboard 16092)"),
                  "%s", bank);
    ck_assert_ptr_nonnull(
        strstr(gpuprof_an_advice_kernel_note(a, find_kernel(a, K_FP64)),
               "math_pipe_throttle 5582"));
    ck_assert_uint_eq(gpuprof_an_advice_hotspot_count(a, 0, 0), 0);
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* ---- parallelism (an_occupancy.c, an_advise_par.c) --------------------- */
/* The H100 as pcfixture.c describes it. */
static adv_device h100(void)
{
    adv_device d = {0};
    static const struct {
        const char *k;
        uint64_t v;
    } a[] = {{"compute_major", 9},           {"sm_count", 132},
             {"warp_size", 32},              {"max_threads_per_block", 1024},
             {"max_threads_per_sm", 2048},   {"max_blocks_per_sm", 32},
             {"registers_per_sm", 65536},    {"registers_per_block", 65536},
             {"shared_bytes_per_sm", 233472}, {"shared_bytes_per_block", 232448},
             {"shared_bytes_reserved", 1024}};
    for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
        gpuprof__adv_device_set(&d, a[i].k, a[i].v);
    return d;
}

/* Blocks per SM of the six fixture kernels as Nsight Compute launched
 * them (ncu-details.csv: block size, registers per thread, static shared
 * memory), and its "Waves Per SM" = grid / (132 SMs x blocks per SM):
 *   256 threads = 8 warps: 64 / 8 = 8 blocks by warps; registers 22 ->
 *     704 -> 768 a warp, 16384 / 768 = 21 warps a sub-partition, 84 an
 *     SM, 10 blocks; shared 0 + 1024 reserved: 228; 32 blocks: 8 (warps),
 *     4096 / (132 x 8) = 3.88 (chase; divergent, calls, barrier_wait,
 *     fp64 alike with 16 or 24 registers);
 *   bank_conflict, 32 threads = 1 warp, 32 registers (1024 a warp: 64
 *     warps), 4096 + 1024 bytes of shared memory (45 blocks): 32 by the
 *     blocks limit, 64 / (132 x 32) = 0.015 -> 0.02. */
START_TEST(occupancy_matches_ncu)
{
    static const struct {
        const char *kernel;
        uint32_t threads, regs, shared, grid, blocks;
        adv_limit limit;
        const char *waves;
    } k[] = {
        {"chase", 256, 22, 0, 4096, 8, ADV_LIMIT_WARPS, "3.88"},
        {"bank_conflict", 32, 32, 4096, 64, 32, ADV_LIMIT_BLOCKS, "0.02"},
        {"divergent", 256, 16, 0, 4096, 8, ADV_LIMIT_WARPS, "3.88"},
        {"calls", 256, 24, 0, 4096, 8, ADV_LIMIT_WARPS, "3.88"},
        {"barrier_wait", 256, 16, 0, 4096, 8, ADV_LIMIT_WARPS, "3.88"},
        {"fp64", 256, 16, 0, 4096, 8, ADV_LIMIT_WARPS, "3.88"},
    };
    adv_device d = h100();
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        adv_limit l;
        uint32_t b = gpuprof__adv_blocks_per_sm(&d, k[i].threads, k[i].regs,
                                                k[i].shared, &l);
        ck_assert_msg(b == k[i].blocks && l == k[i].limit, "%s: %u (%s)",
                      k[i].kernel, b, gpuprof__adv_limit_name[l]);
        char waves[16];
        snprintf(waves, sizeof(waves), "%.2f",
                 (double)k[i].grid / (132.0 * b));
        ck_assert_str_eq(waves, k[i].waves);
    }
    /* more registers than a block may have, a block too large: 0 */
    adv_limit l;
    ck_assert_uint_eq(gpuprof__adv_blocks_per_sm(&d, 1024, 255, 0, &l), 0);
    ck_assert_uint_eq(gpuprof__adv_blocks_per_sm(&d, 2048, 16, 0, &l), 0);
    /* a device that said nothing: no limit known */
    adv_device none = {0};
    ck_assert_uint_eq(gpuprof__adv_blocks_per_sm(&none, 256, 32, 0, &l),
                      UINT32_MAX);
    ck_assert_int_eq(l, ADV_LIMIT_NONE);
}
END_TEST

/* I(W) = 1 - (1 - R_I)^W (seed 003, equations 9, 10). */
static double issue_rate(double ri, double w)
{
    return 1 - pow(1 - ri, w);
}

/* The suggestion of kernel k named `name`; UINT32_MAX when none. */
static uint32_t sugg(const gpuprof_an_advice *a, uint32_t k, const char *name)
{
    for (uint32_t s = 0; s < gpuprof_an_advice_count(a, k); s++)
        if (!strcmp(gpuprof_an_advice_name(a, k, s), name))
            return s;
    return UINT32_MAX;
}

static gpuprof_an_advice *advise_with(const pcfix_launch *l, size_t n,
                                      gpuprof_an_db **db)
{
    use_fixture_nvdisasm();
    *db = database_with(l, n);
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(*db, 0, &a), GPUPROF_OK);
    return a;
}

/* Thread Increase: chase's samples (97134, 90 issued: R_I = 90 / 97134)
 * launched as 67584 = 132 x 512 blocks of 32 threads (22 registers): one
 * warp a block, and an SM holds only 32 blocks (by warps 64, registers
 * 84, shared memory 228): 32 of 64 warps, limited by blocks per SM. Each
 * SM runs 512 blocks: W_a = 512 x 1 / 4 = 128 warps per scheduler, W_r =
 * 32 x 1 / 4 = 8 at a time. Blocks of 64 threads (33792 blocks, 256 per
 * SM, 32 resident: warps 64 / 2 = 32, registers 84 / 2 = 42): W_a = 256
 * x 2 / 4 = 128, W_r = 32 x 2 / 4 = 16; f = 1. S = (128 / I(8)) / (128 /
 * I(16)) = I(16) / I(8) = 1 + (1 - R_I)^8 = 1.9926; larger blocks do no
 * better (96 threads: 21 resident, W_r 15.75, W_a 128.25; 128: 16
 * resident, W_r 16, W_a 128, equal: the smaller is said). */
START_TEST(thread_increase_tiny_blocks)
{
    const pcfix_launch l[] = {{K_CHASE, 1, 67584, 32, 22, 0}};
    gpuprof_an_db *db;
    gpuprof_an_advice *a = advise_with(l, 1, &db);
    uint32_t k = find_kernel(a, K_CHASE);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "blocks") == 67584);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "threads_per_block") == 32);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "warps_per_sm") == 32);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "max_warps_per_sm") == 64);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "sms_busy") == 132);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "sm_count") == 132);
    ck_assert_str_eq(gpuprof_an_advice_kernel_limit(a, k), "blocks per SM");
    uint32_t s = sugg(a, k, "Thread Increase");
    ck_assert_uint_ne(s, UINT32_MAX);
    double ri = 90.0 / 97134.0, expect = 1 + pow(1 - ri, 8);
    ck_assert_msg(fabs(gpuprof_an_advice_speedup(a, k, s) - expect) < 1e-9,
                  "%.12f, expect %.12f", gpuprof_an_advice_speedup(a, k, s),
                  expect);
    ck_assert(fabs(expect - issue_rate(ri, 16) / issue_rate(ri, 8)) < 1e-12);
    ck_assert_str_eq(gpuprof_an_advice_kind(a, k, s), "parallelism");
    ck_assert(gpuprof_an_advice_support(a, k, s) == 97134);
    ck_assert_int_eq(gpuprof_an_advice_confident(a, k, s), 1);
    ck_assert_msg(strstr(gpuprof_an_advice_hint(a, k, s),
                         "blocks of 64 threads (33792 blocks, 32 resident "
                         "per SM) instead of 32 threads"),
                  "%s", gpuprof_an_advice_hint(a, k, s));
    ck_assert_uint_eq(sugg(a, k, "Block Increase"), UINT32_MAX);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_kernel_note(a, k),
                                 "launch: 67584 blocks of 32 threads, 22 "
                                 "registers per thread, 0 bytes of shared "
                                 "memory per block (1 launch): 32 "
                                 "of 64 warps resident per SM (limited by "
                                 "blocks per SM), blocks on 132 of 132 SMs"));
    /* the other kernels: no launch recorded, no parallelism advice */
    uint32_t f = find_kernel(a, K_FP64);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_kernel_note(a, f),
                                 "no launch configuration recorded"));
    ck_assert(isnan(gpuprof_an_advice_kernel_value(a, f, "warps_per_sm")));
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* Block Increase, two kernels with fewer blocks than the 132 SMs.
 *
 * bank_conflict's samples (20492, 2316 issued: R_I = 2316 / 20492) as 66
 * blocks of 1024 threads (32 warps; 32 registers, 4096 bytes shared): one
 * block an SM (2 could be: by warps and registers), W_r = W_a = 32 / 4 =
 * 8. Split into blocks of ceil(66 x 32 / 132) = 16 warps: 132 blocks of
 * 512 threads, one an SM, W_r = W_a = 4; f = 1 (4 warps a scheduler
 * still). S = (8 / I(8)) / (4 / I(4)) = 2 I(4) / I(8) = 2 / (1 + (1 -
 * R_I)^4) = 1.2354.
 *
 * divergent's samples (68000, 4592 issued; F = not_selected 14682 + mio
 * 6902 + math pipe 340 = 21924) as 33 blocks of 256 threads (8 warps, 16
 * registers): W_r = W_a = 8 / 4 = 2. Blocks of ceil(33 x 8 / 132) = 2
 * warps: 132 blocks of 64 threads, W_r = W_a = max(1, 2 / 4) = 1: one
 * warp a scheduler where there were two, so f = T / (T - F) (no warp
 * waits for another). S = (2 / I(2)) / (1 / I(1)) x f = 2 / (2 - R_I) x
 * 68000 / (68000 - 21924) = 1.5274. Neither is limited by blocks per SM:
 * no Thread Increase. */
START_TEST(block_increase_few_blocks)
{
    const pcfix_launch l[] = {{K_BANK, 3, 66, 1024, 32, 4096},
                              {K_DIV, 1, 33, 256, 16, 0}};
    gpuprof_an_db *db;
    gpuprof_an_advice *a = advise_with(l, 2, &db);
    uint32_t k = find_kernel(a, K_BANK);
    uint32_t s = sugg(a, k, "Block Increase");
    ck_assert_uint_ne(s, UINT32_MAX);
    double ri = 2316.0 / 20492.0, expect = 2 / (1 + pow(1 - ri, 4));
    ck_assert(fabs(expect - 2 * issue_rate(ri, 4) / issue_rate(ri, 8)) < 1e-12);
    ck_assert_msg(fabs(gpuprof_an_advice_speedup(a, k, s) - expect) < 1e-9,
                  "%.12f, expect %.12f", gpuprof_an_advice_speedup(a, k, s),
                  expect);
    ck_assert_msg(strstr(gpuprof_an_advice_hint(a, k, s),
                         "only 66 of the SMs have work (one block each): "
                         "split the same threads into 132 blocks of 512 "
                         "threads"),
                  "%s", gpuprof_an_advice_hint(a, k, s));
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "launches") == 3);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "sms_busy") == 66);
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "warps_per_sm") == 32);
    ck_assert_str_eq(gpuprof_an_advice_kernel_limit(a, k), "warps per SM");
    ck_assert_uint_eq(sugg(a, k, "Thread Increase"), UINT32_MAX);
    k = find_kernel(a, K_DIV);
    s = sugg(a, k, "Block Increase");
    ck_assert_uint_ne(s, UINT32_MAX);
    ri = 4592.0 / 68000.0;
    expect = 2 / (2 - ri) * 68000.0 / (68000.0 - 21924.0);
    ck_assert(fabs(expect - 2 * issue_rate(ri, 1) / issue_rate(ri, 2) * 68000.0 /
                              (68000.0 - 21924.0)) < 1e-12);
    ck_assert_msg(fabs(gpuprof_an_advice_speedup(a, k, s) - expect) < 1e-9,
                  "%.12f, expect %.12f", gpuprof_an_advice_speedup(a, k, s),
                  expect);
    ck_assert_uint_eq(sugg(a, k, "Thread Increase"), UINT32_MAX);
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* Tiny blocks and fewer blocks than SMs: bank_conflict as Nsight Compute
 * launched it, 64 blocks of 32 threads (twice). 64 warps for 132 SMs of 4
 * schedulers: each busy scheduler has its one warp (W_r = W_a = 1).
 * Block Increase cannot split a one-warp block (w' = ceil(64 / 132) = 1:
 * the same launch, S = 1); Thread Increase (occupancy is limited by
 * blocks per SM: 32) makes fewer blocks of more warps, still one warp a
 * busy scheduler (w' = 2: 32 blocks, W_r = W_a = max(1, 2 / 4) = 1): S =
 * 1. Neither is suggested: the kernel has too little work, and the note
 * says how little. */
START_TEST(too_little_work)
{
    const pcfix_launch l[] = {{K_BANK, 2, 64, 32, 32, 4096}};
    gpuprof_an_db *db;
    gpuprof_an_advice *a = advise_with(l, 1, &db);
    uint32_t k = find_kernel(a, K_BANK);
    ck_assert_uint_eq(sugg(a, k, "Block Increase"), UINT32_MAX);
    ck_assert_uint_eq(sugg(a, k, "Thread Increase"), UINT32_MAX);
    ck_assert_str_eq(gpuprof_an_advice_kernel_limit(a, k), "blocks per SM");
    ck_assert(gpuprof_an_advice_kernel_value(a, k, "warps_per_sm") == 1);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_kernel_note(a, k),
                                 "1 of 64 warps resident per SM (limited by "
                                 "blocks per SM), blocks on 64 of 132 SMs"));
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* Samples after an EXIT (an_sass_exit.c) never reach the next function:
 * divergent's 32 at 0xb00, the sqrt slow path's entry (0 executions: it
 * has no other sample) are all the EXIT's, so there is no Fast Math and
 * no slow path among its calling contexts; calls' 140 drain stalls at fib's
 * entry (fib ran) are the EXIT's, the rest stays fib's; chase's 164,
 * bank_conflict's 4, barrier_wait's 40 and fp64's 28 drain stalls just
 * after their EXITs too (Nsight Compute files them there). */
START_TEST(samples_after_exit_advice)
{
    use_fixture_nvdisasm();
    gpuprof_an_db *db = database();
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_OK);
    static const struct {
        const char *k;
        double moved;
    } w[] = {{K_DIV, 32},  {K_CALLS, 140}, {K_CHASE, 164},
             {K_BANK, 4},  {K_BAR, 40},    {K_FP64, 28}};
    for (size_t i = 0; i < 6; i++) {
        uint32_t k = find_kernel(a, w[i].k);
        ck_assert_msg(gpuprof_an_advice_kernel_value(a, k,
                                                     "after_exit_samples") ==
                          w[i].moved,
                      "%s: %g", w[i].k,
                      gpuprof_an_advice_kernel_value(a, k,
                                                     "after_exit_samples"));
    }
    uint32_t k = find_kernel(a, K_DIV);
    ck_assert_uint_eq(sugg(a, k, "Fast Math"), UINT32_MAX);
    for (uint32_t c = 0; c < gpuprof_an_advice_context_count(a, k); c++)
        ck_assert_ptr_null(strstr(gpuprof_an_advice_context_name(a, k, c),
                                  "sqrt"));
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_kernel_note(a, k),
                                 "32 samples filed just after an EXIT are "
                                 "the EXIT's"));
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* A kernel sampled once (chase's pointer-chasing load, one long
 * scoreboard stall): every suggestion rests on one sample, none is
 * confident, and the report says so. */
START_TEST(one_sample_is_not_confident)
{
    use_fixture_nvdisasm();
    char d[] = "caseXXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(d));
    ck_assert_int_eq(chdir(d), 0);
    ck_assert_int_eq(mkdir("m", 0755), 0);
    ck_assert_int_eq(mkdir("m/binaries", 0755), 0);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cp %s m/binaries/%s.cubin", CUBIN, PCFIX_HASH);
    ck_assert_int_eq(system(cmd), 0);
    tp_builder *b = tp_new("h100", 7, 0);
    tp_clear_metrics(b);
    uint32_t ms = tp_metric(b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR);
    uint32_t ml = tp_metric(b, "gpu.pc.latency_samples", GPUPROF_IO_UNIT_COUNT,
                            GPUPROF_IO_KIND_INSTR);
    uint32_t mr = tp_metric(b, "gpu.pc.stall.long_scoreboard",
                            GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR);
    uint32_t bin = tp_gpu_module(b, "binaries/" PCFIX_HASH ".cubin");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t op = tp_gpu_op(b, tp_region(b, 0, "main", 0, 0, 0), 1);
    uint32_t i = tp_gpu_instr(b, tp_kernel(b, op, K_CHASE, bin), bin, 0x180);
    tp_node_value(b, i, ms, 1);
    tp_node_value(b, i, ml, 1);
    tp_node_value(b, i, mr, 1);
    ck_assert_int_eq(tp_write(b, "m/h100-r0-p7.gpuprof", 1), 0);
    tp_free(b);
    gpuprof_an_advice a = {0};
    ck_assert_int_eq(gpuprof__adv_gather_file("m/h100-r0-p7.gpuprof", &a),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof__adv_analyze(&a), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_advice_kernel_count(&a), 1);
    ck_assert_uint_ge(gpuprof_an_advice_count(&a, 0), 1);
    for (uint32_t s = 0; s < gpuprof_an_advice_count(&a, 0); s++) {
        ck_assert_int_eq(gpuprof_an_advice_confident(&a, 0, s), 0);
        ck_assert(gpuprof_an_advice_support(&a, 0, s) <= 1);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(gpuprof_an_advice_print(&a, f, 0, 0), GPUPROF_OK);
    fclose(f);
    ck_assert_msg(strstr(text, "[low support: the estimate rests on fewer "
                               "than 10 samples]"),
                  "%s", text);
    free(text);
    for (uint32_t k = 0; k < a.nk; k++) {
        gpuprof__adv_kernel_clear(&a.k[k]);
        free(a.k[k].name), free(a.k[k].binary), free(a.k[k].pc);
    }
    free(a.k);
}
END_TEST

/* The database names its profiles by absolute path: advise works from
 * any working directory (the measurement was analyzed as "m", relative). */
START_TEST(advise_from_elsewhere)
{
    use_fixture_nvdisasm();
    measurement();
    gpuprof_an_analysis *an;
    ck_assert_int_eq(gpuprof_an_analysis_new(&an), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(an, "m"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(an, "db"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(an), GPUPROF_OK);
    gpuprof_an_analysis_free(an);
    char cwd[2048], dbdir[2100];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    snprintf(dbdir, sizeof(dbdir), "%s/db", cwd);
    ck_assert_int_eq(mkdir("elsewhere", 0755), 0);
    ck_assert_int_eq(chdir("elsewhere"), 0);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(dbdir, &db), GPUPROF_OK);
    char want_file[2200];
    snprintf(want_file, sizeof(want_file), "%s/m/h100-r0-p7.gpuprof", cwd);
    ck_assert_str_eq(gpuprof_an_db_profile_file(db, 0), want_file);
    gpuprof_an_advice *a;
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_OK);
    ck_assert_str_eq(gpuprof_an_advice_note(a), "");
    ck_assert_int_eq(gpuprof_an_advice_kernel_detailed(a, 0), 1);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_advice_kernel_binary(a, 0), cwd));
    gpuprof_an_advice_free(a);
    gpuprof_an_db_close(db);
}
END_TEST

/* Bad arguments, a database without PC samples, a profile gone. */
START_TEST(bad_input)
{
    use_fixture_nvdisasm();
    gpuprof_an_db *db = database();
    gpuprof_an_advice *a = (void *)1;
    ck_assert_int_eq(gpuprof_an_db_advise(NULL, 0, &a), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_db_advise(db, 1, &a), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_an_advice_print(NULL, stdout, 0, 0),
                     GPUPROF_E_INVALID);
    ck_assert_ptr_null(gpuprof_an_advice_name(NULL, 0, 0));
    ck_assert_uint_eq(gpuprof_an_advice_kernel_count(NULL), 0);
    ck_assert_int_eq(unlink("m/h100-r0-p7.gpuprof"), 0);
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_E_IO);
    ck_assert_ptr_null(a);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "h100-r0-p7.gpuprof"));
    gpuprof_an_db_close(db);
    /* a database without PC samples */
    ck_assert_int_eq(mkdir("plain", 0755), 0);
    tp_builder *b = tp_new("h", 1, 0);
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    tp_region(b, 0, "main", 1, 10, 10);
    ck_assert_int_eq(tp_write(b, "plain/h-r0-p1.gpuprof", 1), 0);
    tp_free(b);
    gpuprof_an_analysis *an;
    ck_assert_int_eq(gpuprof_an_analysis_new(&an), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(an, "plain"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(an, "pdb"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(an), GPUPROF_OK);
    gpuprof_an_analysis_free(an);
    ck_assert_int_eq(gpuprof_an_db_open("pdb", &db), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_advise(db, 0, &a), GPUPROF_E_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "PC samples"));
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"blame_pointer_chase", blame_pointer_chase, 60},
        {"blame_barrier_and_return", blame_barrier_and_return, 60},
        {"blame_shared_and_fp64", blame_shared_and_fp64, 60},
        {"recursion_is_one_scc", recursion_is_one_scc, 60},
        {"mutual_recursion", mutual_recursion, 30},
        {"top_advice_per_kernel", top_advice_per_kernel, 60},
        {"kernel_level_without_nvdisasm", kernel_level_without_nvdisasm, 60},
        {"bad_input", bad_input, 60},
        {"advise_from_elsewhere", advise_from_elsewhere, 60},
        {"occupancy_matches_ncu", occupancy_matches_ncu, 30},
        {"thread_increase_tiny_blocks", thread_increase_tiny_blocks, 60},
        {"block_increase_few_blocks", block_increase_few_blocks, 60},
        {"too_little_work", too_little_work, 60},
        {"samples_after_exit_advice", samples_after_exit_advice, 60},
        {"one_sample_is_not_confident", one_sample_is_not_confident, 60},
    };
    return RUN_SUITE("an_advise", cases);
}
