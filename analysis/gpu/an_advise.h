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
    char *hint;
    adv_hot hot[3];
    uint32_t nhot;
} adv_sugg;

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
    adv_sugg *sugg;
    uint32_t nsugg;
    adv_ctx *ctx;
    uint32_t nctx;
    bool instruction_level; /* nvdisasm's listing was used */
} adv_kernel;

struct gpuprof_an_advice {
    adv_kernel *k;
    uint32_t nk, cap;
    char note[1024]; /* what is missing, "" */
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

#endif /* GPUPROF_AN_ADVISE_H */
