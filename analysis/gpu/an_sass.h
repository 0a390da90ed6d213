/*
 * an_sass.h - static analysis of NVIDIA GPU code (SASS) for the advisor:
 * what an_sass_parse.c (nvdisasm's listing: functions, instructions,
 * source lines), an_sass_insn.c (one instruction: opcode, operands,
 * registers read and written), an_sass_cfg.c (basic blocks, control flow
 * graph, dominators), an_sass_loop.c (natural loops, distances),
 * an_sass_du.c (register and predicate def-use over the CFG),
 * an_sass_cg.c (device call graph, Tarjan's SCCs, gprof-style GPU calling
 * contexts), an_blame.c (instruction stall blame, seed 003 §3.2) and
 * an_advise*.c (optimizers and estimated speedups, seed 003 §3.3-3.4)
 * share. One cubin is one gpuprof__sass_bin; everything in it is plain
 * arrays indexed by number, freed with the bin.
 *
 * Registers are numbered in one space so that def-use and blame treat
 * them alike: R0..R254, P0..P6, UR0..UR62, UP0..UP6 and the convergence
 * barriers B0..B15 (RZ, PT, URZ, UPT are constants and never appear).
 */
#ifndef GPUPROF_AN_SASS_H
#define GPUPROF_AN_SASS_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_analysis.h"

enum {
    SASS_R0 = 0,    /* R0..R254 */
    SASS_P0 = 256,  /* P0..P6 */
    SASS_UR0 = 264, /* UR0..UR62 */
    SASS_UP0 = 328, /* UP0..UP6 */
    SASS_B0 = 336,  /* B0..B15 */
    SASS_NREG = 352
};
#define SASS_NONE UINT32_MAX

/* What an instruction is, for the CFG and the optimizers' rules. */
typedef enum sass_class {
    SC_ALU = 0,     /* fixed-latency arithmetic, moves, compares */
    SC_FP64 = 1,    /* DFMA, DADD, DMUL, ...: the FP64 pipe */
    SC_SFU = 2,     /* MUFU: the transcendental unit (variable latency) */
    SC_GLOBAL = 3,  /* LDG, STG, ATOMG, RED, LDGSTS */
    SC_LOCAL = 4,   /* LDL, STL */
    SC_SHARED = 5,  /* LDS, STS, ATOMS, LDSM */
    SC_GENERIC = 6, /* LD, ST, ATOM: generic addresses */
    SC_CONST = 7,   /* LDC: constant bank load (variable latency) */
    SC_TEX = 8,     /* TEX, TLD, SULD, ...: texture and surface */
    SC_SYNC = 9,    /* BAR, MEMBAR, DEPBAR, WARPSYNC, BSYNC, SYNCS */
    SC_BRANCH = 10, /* BRA, BRX, JMP, JMX, BREAK */
    SC_CALL = 11,   /* CALL */
    SC_RET = 12,    /* RET */
    SC_EXIT = 13,   /* EXIT, KILL */
    SC_SPECIAL = 14 /* S2R, CS2R, S2UR: special registers (variable) */
} sass_class;

typedef struct sass_insn {
    uint32_t offset;    /* bytes from the start of its section */
    uint32_t line;      /* source line (nvdisasm -g), 0: none */
    const char *file;   /* source file, NULL: none (owned by the bin) */
    const char *text;   /* the instruction as listed, without offset */
    char op[32];        /* opcode with modifiers, "IMAD.WIDE" */
    uint32_t target;    /* branch or call target offset, SASS_NONE */
    uint16_t def[8], use[24];
    uint8_t ndef, nuse;
    int16_t pred;       /* guard register (SASS_P0+k, SASS_UP0+k), -1 */
    bool pred_neg;      /* @!P */
    uint8_t cls;        /* sass_class */
    bool indirect;      /* its address is a register (not a constant) */
    bool label;         /* a label names it: a block starts here */
    uint32_t func;      /* index of its function */
    uint32_t block;     /* index of its block in the function, SASS_NONE
                           when unreachable (not in the CFG) */
} sass_insn;

typedef struct sass_block {
    uint32_t first, last; /* instruction indices (bin-wide), inclusive */
    uint32_t *succ, nsucc, *pred, npred;
    uint32_t idom;        /* immediate dominator (block index), entry: self */
    uint32_t loop;        /* innermost loop holding it, SASS_NONE */
    uint32_t rpo;         /* reverse postorder number */
} sass_block;

typedef struct sass_loop {
    uint32_t header;      /* block */
    uint32_t parent;      /* enclosing loop, SASS_NONE */
    uint32_t depth;       /* 1: outermost */
    uint32_t nblocks;     /* blocks in the body (header included) */
    uint8_t *in;          /* per block of the function: in the body */
} sass_loop;

typedef struct sass_func {
    const char *name;      /* symbol: "_Z5chasePKiPii", "$K$_Z4leaff" */
    const char *section;   /* its kernel's name (section .text.<kernel>) */
    uint32_t start, end;   /* offsets in the section, [start, end) */
    uint32_t first, count; /* instructions */
    bool kernel;           /* an entry point (.global) */
    sass_block *blocks;    /* block 0 is the entry */
    uint32_t nblocks;
    uint32_t nedges;       /* intra-procedural edges */
    sass_loop *loops;      /* outer loops before their inner ones */
    uint32_t nloops;
} sass_func;

typedef struct sass_jump { /* a target of an indirect branch (BRX, JMX) */
    uint32_t insn, offset;  /* as its BRANCH_TARGETS comment lists them */
} sass_jump;

typedef struct gpuprof__sass_bin {
    sass_insn *insn;
    uint32_t ninsn;
    sass_jump *jump;
    uint32_t njump;
    sass_func *func;
    uint32_t nfunc;
    uint32_t *by_name; /* function indices sorted by name */
    char *strings; /* the listing's text, owned */
} gpuprof__sass_bin;

/* ---- an_sass_parse.c ----------------------------------------------------
 * The nvdisasm to run: $GPUPROF_NVDISASM, else $CUDA_HOME/bin/nvdisasm,
 * /usr/local/cuda/bin/nvdisasm, then PATH; false when none is found
 * (`why` says where it looked). */
bool gpuprof__sass_find_nvdisasm(char *out, size_t size, char *why,
                                 size_t why_size);
/* Runs `nvdisasm -g -gi -hex CUBIN` and parses its listing; builds every
 * function's CFG, loops and def-use. GPUPROF_E_NOTFOUND without nvdisasm,
 * GPUPROF_E_IO when it fails, GPUPROF_E_CORRUPT for a listing without code;
 * the message says which. */
gpuprof_status gpuprof__sass_open(const char *cubin, gpuprof__sass_bin **out);
/* Parses a listing held in memory (takes `text`, malloc'd, in all cases). */
gpuprof_status gpuprof__sass_parse(char *text, gpuprof__sass_bin **out);
void gpuprof__sass_free(gpuprof__sass_bin *b);
/* The function named `name` (symbol), SASS_NONE. */
uint32_t gpuprof__sass_func_find(const gpuprof__sass_bin *b, const char *name);
/* The instruction at `offset` of the section of kernel `kernel`; SASS_NONE. */
uint32_t gpuprof__sass_insn_at(const gpuprof__sass_bin *b, const char *kernel,
                               uint32_t offset);
/* an_sass_exit.c: samples filed after an EXIT. The EXIT just before
 * instruction i in its section (any predicate: its warps' drain stalls
 * sit at i), SASS_NONE. And the EXIT that owns every sample of i: i
 * follows an unpredicated EXIT and begins another function that has no
 * other sampled instruction (`samples`: per instruction first .. first +
 * n - 1 of the bin), SASS_NONE. */
uint32_t gpuprof__sass_exit_before(const gpuprof__sass_bin *b, uint32_t i);
uint32_t gpuprof__sass_exit_owner(const gpuprof__sass_bin *b, uint32_t i,
                                  const double *samples, uint32_t first,
                                  uint32_t n);
/* an_sass_insn.c: reads one listed instruction ("[@[!]P] OPCODE
 * operands", modified in place) into `in`; its target's name (a label or
 * function) into tname, "" when none. */
void gpuprof__sass_parse_insn(sass_insn *in, char *text, char *tname,
                              size_t tsize);
/* Whether instruction i reads (writes) register r. */
bool gpuprof__sass_reads(const sass_insn *i, uint32_t r);
bool gpuprof__sass_writes(const sass_insn *i, uint32_t r);
/* A register's name ("R12", "P0", "UR4", "B6") into buf. */
const char *gpuprof__sass_reg_name(uint32_t r, char *buf, size_t size);

/* ---- an_sass_cfg.c ------------------------------------------------------ */
/* Blocks (split at labels, after branches, calls, returns and exits), the
 * edges between them, reachable blocks only (nvdisasm's -bbcfg does the
 * same), dominators and natural loops. GPUPROF_E_NOMEM. */
gpuprof_status gpuprof__sass_cfg(gpuprof__sass_bin *b, uint32_t f);
/* Natural loops of f's CFG (an_sass_loop.c; gpuprof__sass_cfg calls it). */
gpuprof_status gpuprof__sass_loops(sass_func *f);
/* Whether block a dominates block d of function f. */
bool gpuprof__sass_dominates(const sass_func *f, uint32_t a, uint32_t d);
/* The fewest instructions issued on a path from just after instruction
 * `from` to just before `to` (both in function f; the CFG's edges, around
 * loops); UINT32_MAX when `to` cannot be reached. */
uint32_t gpuprof__sass_distance(const gpuprof__sass_bin *b, uint32_t from,
                                uint32_t to);

/* ---- an_sass_du.c --------------------------------------------------------
 * Reaching definitions over each function's CFG: for every instruction
 * and every register it reads, the instructions whose writes may reach it.
 * A predicated write does not kill earlier ones (GPA §3.2.1: slicing goes
 * on past it until the predicates cover every path). */
typedef struct gpuprof__sass_du gpuprof__sass_du;
gpuprof_status gpuprof__sass_du_new(const gpuprof__sass_bin *b, uint32_t f,
                                    gpuprof__sass_du **out);
void gpuprof__sass_du_free(gpuprof__sass_du *du);
/* The definitions of register r reaching instruction i (bin-wide
 * indices): up to max into out, returns how many there are. */
uint32_t gpuprof__sass_du_defs(const gpuprof__sass_du *du, uint32_t i,
                               uint32_t r, uint32_t *out, uint32_t max);

/* ---- an_sass_cg.c ------------------------------------------------------- */
typedef struct sass_callsite {
    uint32_t insn;   /* the CALL */
    uint32_t caller; /* function */
    uint32_t callee; /* function, SASS_NONE: not resolved (indirect) */
    double weight;   /* call count from samples (seed 000 §6.3 step 1-2) */
} sass_callsite;

typedef struct gpuprof__sass_cg {
    sass_callsite *site;
    uint32_t nsite;
    uint32_t *scc;   /* per function: its SCC's number */
    uint32_t nscc;
    uint32_t *scc_size; /* per SCC: functions in it */
} gpuprof__sass_cg;

/* The call graph of the functions of one kernel's section, with call-site
 * weights from `samples` (per instruction of the bin, NULL: static) and
 * Tarjan's strongly connected components. */
gpuprof_status gpuprof__sass_cg_new(const gpuprof__sass_bin *b,
                                    const char *kernel, const double *samples,
                                    gpuprof__sass_cg **out);
void gpuprof__sass_cg_free(gpuprof__sass_cg *cg);

/* A node of a reconstructed GPU calling context tree: a function (or an
 * SCC, by its first function) reached through call site `site` of its
 * parent; `samples` apportioned gprof-style. */
typedef struct sass_cct {
    uint32_t parent;  /* node, SASS_NONE for the kernel */
    uint32_t func;    /* function (an SCC's representative) */
    uint32_t site;    /* call site index in cg, SASS_NONE for the kernel */
    bool scc;         /* stands for a recursive SCC */
    double self;      /* samples of the function(s), apportioned */
    double total;     /* with everything beneath */
} sass_cct;
/* Builds the tree beneath `kernel` from per-function samples `fsamples`;
 * *n nodes, parents before children. */
gpuprof_status gpuprof__sass_cct(const gpuprof__sass_bin *b,
                                 const gpuprof__sass_cg *cg,
                                 uint32_t kernel, const double *fsamples,
                                 sass_cct **out, uint32_t *n);

/* A node of the GPU calling context tree by call site (the database's):
 * SCC `scc` reached through call site `site` of its parent; `share` is
 * the fraction of the SCC's samples that are this node's (gprof's
 * assumption: every call costs the same). Parents before children. */
typedef struct sass_path {
    uint32_t parent; /* node, SASS_NONE for the kernel */
    uint32_t scc;    /* the SCC of cg */
    uint32_t site;   /* call site in cg, SASS_NONE for the kernel */
    double share;
} sass_path;
/* The tree beneath `kernel`, one child per call site of positive weight,
 * at most `max` nodes (the rest of the samples stay with the kernel). */
gpuprof_status gpuprof__sass_paths(const gpuprof__sass_cg *cg, uint32_t kernel,
                                   uint32_t max, sass_path **out, uint32_t *n);
/* Whether SCC `scc` is recursion: several functions, or one calling
 * itself. */
bool gpuprof__sass_recursive(const gpuprof__sass_cg *cg, uint32_t scc);

/* ---- an_blame.c ----------------------------------------------------------
 * Stall reasons, as the CUPTI backend names its gpu.pc.stall.* metrics. */
typedef enum sass_reason {
    SR_SELECTED = 0, SR_NOT_SELECTED, SR_BARRIER, SR_BRANCH_RESOLVING,
    SR_DISPATCH, SR_DRAIN, SR_IMC_MISS, SR_LG_THROTTLE, SR_LONG_SB,
    SR_MATH, SR_MEMBAR, SR_MIO, SR_MISC, SR_NO_INST, SR_SHORT_SB,
    SR_SLEEPING, SR_TEX, SR_WAIT, SR_OTHER,
    SR_COUNT
} sass_reason;
extern const char *const gpuprof__sass_reason_name[SR_COUNT];

/* The samples of one kernel's section (its function and the device
 * functions in its section: instructions first .. first + n - 1 of the
 * bin) and where blame puts them. */
typedef struct gpuprof__blame {
    uint32_t first, n;
    double *stall;  /* n x SR_COUNT: samples per reason at each instruction */
    double *lat;    /* n: latency samples (no warp issued) */
    double *cause;  /* n x SR_COUNT: stalls blamed on each instruction */
    double total, latency; /* T and the latency samples of the kernel */
} gpuprof__blame;

/* The section of kernel `kernel` with zeroed arrays. */
gpuprof_status gpuprof__blame_new(const gpuprof__sass_bin *b,
                                  const char *kernel, gpuprof__blame **out);
void gpuprof__blame_free(gpuprof__blame *bl);
/* Blames every stall (seed 003 §3.2.1, sampling mode): fills `cause`. */
gpuprof_status gpuprof__blame_run(const gpuprof__sass_bin *b,
                                  gpuprof__blame *bl);

#endif /* GPUPROF_AN_SASS_H */
