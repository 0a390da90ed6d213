/*
 * an_advise.h - the GPU advisor's pieces (seed 003): an_advise_data.c
 * gathers each kernel's PC samples per instruction from the profiles a
 * database was made from; an_advise.c blames stalls (an_blame.c), runs
 * the optimizers (their rules: an_advise_rules.c) and estimates their
 * speedups; an_advise_api.c is the public gpuprof_an_advice_* interface
 * and the text report.
 */
#ifndef GPUPROF_AN_ADVISE_H
#define GPUPROF_AN_ADVISE_H

#include "an_sass.h"


typedef struct adv_pc { /* one sampled instruction */
    uint64_t offset;
    double v[SR_COUNT], samples, latency;
} adv_pc;

typedef struct adv_hot { /* a hotspot of a suggestion */
    uint64_t offset;
    double samples;
    char *where;    /* "kernels.cu:12" (with inlining: "f.cu:3 [inlined g]") */
    char *loop;     /* "loop at kernels.cu:11", "" */
    char *function; /* demangled */
    char *insn;     /* the instruction's text */
} adv_hot;

typedef struct adv_sugg {
    const char *name, *kind; /* optimizer; "stall elimination", ... */
    double speedup, matched;
    double support;  /* the samples the estimate rests on */
    double run_gain; /* projected share of the run saved; NAN: none */
    char *hint;
    adv_hot hot[3];
    uint32_t nhot;
} adv_sugg;

/* Below this many samples an estimate is not confident: its relative
 * sampling error (1/sqrt(n) for n samples) is over 30 %, and a handful of
 * misfiled samples (drain stalls after an EXIT) would be all of it. */
#define ADV_MIN_SAMPLES 10.0

/* What a device can hold (profile section DEVICES); 0: not said. */
typedef struct adv_device {
    uint32_t cc_major, cc_minor, sms, warp, max_threads_block,
        max_threads_sm, max_blocks_sm, regs_sm, regs_block;
    uint64_t smem_sm, smem_block, smem_reserved;
    bool known; /* a CUDA device was described */
} adv_device;

typedef enum adv_limit {
    ADV_LIMIT_WARPS = 0, ADV_LIMIT_REGISTERS, ADV_LIMIT_SHARED,
    ADV_LIMIT_BLOCKS, ADV_LIMIT_NONE
} adv_limit;

/* A kernel's launches (sums over launches, as the CUPTI backend records
 * them on its kernel nodes). */
typedef struct adv_launch {
    double launches, threads, block, registers, shared;
} adv_launch;

typedef struct adv_ctx { /* a node of the GPU calling context tree */
    uint32_t parent;
    char *name;
    double samples; /* inclusive, apportioned */
    bool recursive;
} adv_ctx;

typedef struct adv_kernel {
    char *name, *binary; /* symbol; cubin path */
    adv_pc *pc;
    uint32_t npc, cap;
    double total, latency, unmapped;
    double after_exit; /* samples filed after an EXIT, credited to it */
    adv_launch launch;
    adv_device dev;
    bool devs_differ; /* its profiles described other devices too */
    double path_share; /* its share of the critical path; NAN: none */
    double occ_warps, occ_max; /* resident warps per SM, of the most */
    double sms_busy;           /* SMs its launches give blocks to */
    adv_limit occ_limit;
    char *note;        /* what is missing or was done, "" */
    adv_sugg *sugg;
    uint32_t nsugg;
    adv_ctx *ctx;
    uint32_t nctx;
    bool instruction_level; /* nvdisasm's listing was used */
} adv_kernel;

typedef struct adv_rank { /* a suggestion in the whole-program ranking */
    uint32_t k, s;
} adv_rank;

struct gpuprof_an_advice {
    adv_kernel *k;
    uint32_t nk, cap;
    char note[1024]; /* what is missing, "" */
    adv_rank *rank;  /* by projected run gain (analysis/rank); NULL: none */
    uint32_t nrank;
};

/* ---- an_advise_rules.c: the optimizers ---------------------------------- */
typedef struct adv_ctx_t { /* one kernel's analysis, for the rules */
    const gpuprof__sass_bin *b;
    const gpuprof__blame *bl;
    uint8_t *flag;  /* per instruction of the section: F_* */
    double latfrac; /* the kernel's share of latency samples */
} adv_ctx_t;

enum { F_CHAINED = 1, F_FRAME = 2, F_MATHFN = 4, F_REJOIN = 8 };

#define CAUSE(c, x, r) ((c)->bl->cause[(size_t)(x)*SR_COUNT + (r)])
#define STALL(c, x, r) ((c)->bl->stall[(size_t)(x)*SR_COUNT + (r)])
#define INSN(c, x) (&(c)->b->insn[(c)->bl->first + (x)])
#define STALL_OF(bl, x, r) ((bl)->stall[(size_t)(x)*SR_COUNT + (r)])

typedef enum { ELIM, HIDE, HIDE_LOOP } adv_estimator; /* eq. 3, 5, 6 */

typedef struct adv_optimizer {
    const char *name;
    adv_estimator est;
    double (*match)(const adv_ctx_t *c, uint32_t x); /* matched at x */
    bool calls; /* its hint names recursive functions */
    const char *hint;
} adv_optimizer;

extern const adv_optimizer gpuprof__adv_opt[];
extern const size_t gpuprof__adv_nopt;
/* Fills c->flag (what the rules need to know of each instruction). */
gpuprof_status gpuprof__adv_flags(adv_ctx_t *c);

/* an_advise_data.c: every kernel with PC samples in the profiles of db
 * (instructions by offset, samples summed over profiles). */
gpuprof_status gpuprof__adv_gather(const gpuprof_an_db *db,
                                   gpuprof_an_advice *a);
/* The same from one profile file (tests, benchmarks). */
gpuprof_status gpuprof__adv_gather_file(const char *path,
                                        gpuprof_an_advice *a);
/* Drops the kernels gathered for their launches only (no samples). */
void gpuprof__adv_sampled_only(gpuprof_an_advice *a);

/* an_advise.c: the suggestions of kernel k, its binary listed (`bin`,
 * NULL: kernel level only) and its samples blamed; source lines of
 * hotspots from the cubin's line table through `lines` (an_gpudwarf.c). */
struct gpuprof__an_cubin;
gpuprof_status gpuprof__adv_kernel(adv_kernel *k, const gpuprof__sass_bin *bin,
                                   struct gpuprof__an_cubin **lines);
/* an_advise_api.c: analyzes every kernel gathered into `a`. */
gpuprof_status gpuprof__adv_analyze(gpuprof_an_advice *a);
/* Frees what gpuprof__adv_kernel made. */
void gpuprof__adv_kernel_clear(adv_kernel *k);
/* Appends a sentence to k->note ("; " between); false out of memory. */
bool gpuprof__adv_note(adv_kernel *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Adds suggestion s (takes its strings); false out of memory. */
bool gpuprof__adv_add(adv_kernel *k, adv_sugg *s);

/* ---- an_occupancy.c: NVIDIA's occupancy rules --------------------------- */
/* Sets the field of `d` a DEVICES attribute names (unknown names: none). */
void gpuprof__adv_device_set(adv_device *d, const char *key, uint64_t v);
extern const char *const gpuprof__adv_limit_name[ADV_LIMIT_NONE + 1];
/* Blocks of `threads` threads, `regs` registers per thread and `shared`
 * bytes of shared memory one SM holds at once, and what limits them
 * (0: the block cannot run). */
uint32_t gpuprof__adv_blocks_per_sm(const adv_device *d, uint32_t threads,
                                    uint32_t regs, uint64_t shared,
                                    adv_limit *limit);
/* Warp schedulers per SM (the register file's sub-partitions). */
uint32_t gpuprof__adv_schedulers(const adv_device *d);

/* ---- an_advise_par.c: the parallelism optimizers ------------------------ */
/* Block Increase and Thread Increase for kernel k from its launches, its
 * device and its samples (their stall reasons); the launch and occupancy
 * said in k->note. */
gpuprof_status gpuprof__adv_parallelism(adv_kernel *k);

#endif /* GPUPROF_AN_ADVISE_H */
