/*
 * gen.h - synthetic measurements for the analysis tests and benchmarks:
 * P processes x T threads with random calling context trees and values,
 * written through lib/io (mkprofile.h), and the truth they encode: every
 * non-zero value as (profile, context path, metric, value), where the path
 * is the chain of context names as the database shows them, joined by
 * GEN_SEP ("solve", "libgen1.so+0x20", "<kernel launch>", "kernel saxpy":
 * the binary, binaries/gen.clbin, is not part of a kernel's name). Tests
 * compute what the
 * aggregation must give from these strings alone, independently of the
 * code under test.
 */
#ifndef GPUPROF_TEST_GEN_H
#define GPUPROF_TEST_GEN_H

#include <stdint.h>

#define GEN_SEP "\x1f" /* joins names in a path: no name contains it */

typedef struct gen_opts {
    uint32_t procs, threads; /* P x T profiles */
    uint32_t seed;
    uint32_t fanout;  /* children per node, at most */
    uint32_t depth;   /* levels below the root, at most */
    uint32_t pid0;    /* first process id (runs to merge use others) */
    int spmd;         /* every thread runs the same code: one tree shape
                         for all (each thread skips 1 in 8 subtrees), so
                         contexts are shared as in an SPMD program;
                         otherwise each thread's tree is its own */
    const char *host;
} gen_opts;

typedef struct gen_value {
    uint32_t profile; /* index in the order the database lists profiles:
                         files sorted by name, then threads */
    uint32_t path;    /* index into gen_truth.paths */
    uint32_t metric;  /* TP_* */
    double v;
} gen_value;

typedef struct gen_truth {
    char **paths; /* distinct context paths */
    uint32_t npaths, cap_paths;
    uint32_t *slot, mask; /* path hash: index + 1 */
    gen_value *vals; /* exclusive values, as written */
    uint32_t nvals, cap_vals;
    uint32_t profiles;
} gen_truth;

/* Writes o->procs files into `dir` and appends their truth to *t (zero it
 * first; profile numbers continue after t->profiles). 0 on success. */
int gen_write(const char *dir, const gen_opts *o, gen_truth *t);
void gen_truth_free(gen_truth *t);
/* The index of `path` in t->paths, UINT32_MAX when absent. */
uint32_t gen_path_find(const gen_truth *t, const char *path);

#endif
