/*
 * an_coll.h - the aggregation on several processes ("ranks"): what the
 * library needs from them, as a table of collective operations, so that
 * libgpuprof-analysis itself never links MPI. `gpuprof-mpi`
 * (analysis/mpi/gpuprof_mpi.c, built with mpicc) fills the table with MPI
 * calls; tests/unit/check_an_ranks.c with threads of one process. The
 * single-process run (gpuprof_an_analysis_run) needs none of it.
 *
 * How the work is split (doc/ANALYSIS.md, "On several processes"): each
 * rank unifies a contiguous block of the input files; rank 0 merges the
 * ranks' trees, strings and metrics in rank order and broadcasts the
 * result, so every id is the one the single-process run gives; each rank
 * writes its profiles' profile.db planes, then transposes a range of
 * contexts read back from profile.db; every part lands in the one shared
 * file at an offset from an exclusive scan; rank 0 combines the
 * checksums, writes the tables and headers and renames the files into
 * place. The database is the same bytes as gpuprof_an_analysis_run's.
 *
 * Internal: not exported from the shared library. A program that uses it
 * links the library's objects (the Makefile's gpuprof-mpi rule).
 */
#ifndef GPUPROF_AN_COLL_H
#define GPUPROF_AN_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof_analysis.h"

typedef enum gpuprof__an_op {
    GPUPROF__AN_SUM = 0,
    GPUPROF__AN_MIN = 1,
    GPUPROF__AN_MAX = 2
} gpuprof__an_op;

/* Called on rank 0 for each rank's blob, in rank order (rank 0's own
 * included); the blob is valid during the call only. */
typedef void (*gpuprof__an_blob_fn)(void *arg, int rank, const void *blob,
                                    uint64_t size);

/* Every operation is collective: every rank calls it, in the same order,
 * from one thread of its own. Each returns 0, or non-zero when the
 * transport failed (the run then stops; MPI's own default handler
 * usually ends the job first). */
typedef struct gpuprof__an_coll {
    int rank, size; /* this process, and how many there are (>= 1) */
    void *ctx;      /* passed to every function */
    int (*barrier)(void *ctx);
    /* v[0..n) combined over the ranks by `op`, in place, on every rank. */
    int (*allreduce_u64)(void *ctx, uint64_t *v, size_t n, gpuprof__an_op op);
    /* v[i] replaced by the sum of v[i] over the lower ranks (0 on rank 0). */
    int (*exscan_u64)(void *ctx, uint64_t *v, size_t n);
    /* Rank 0 calls each(arg, k, blob of rank k, size) for k = 0, 1, ...;
     * the other ranks send theirs (each and arg unused there). */
    int (*gather)(void *ctx, const void *blob, uint64_t size,
                  gpuprof__an_blob_fn each, void *arg);
    /* Rank `root` sends *blob (*size bytes); every other rank receives a
     * copy in *blob (malloc'd, freed by the caller; NULL when size is 0). */
    int (*bcast)(void *ctx, int root, void **blob, uint64_t *size);
} gpuprof__an_coll;

/* gpuprof_an_analysis_run on rank c->rank of c->size: every rank calls it
 * with the same analysis settings (inputs, output, structure, memory; the
 * thread count may differ). Every rank returns the same status, and the
 * same message in gpuprof_an_last_error ("rank K: ..." naming the first
 * rank that failed) when it is not GPUPROF_OK; a failed run leaves no file
 * under the database's names. The inputs and output must be on a file
 * system every rank sees. c->size == 1 is gpuprof_an_analysis_run. */
gpuprof_status gpuprof__an_analysis_run_ranks(gpuprof_an_analysis *a,
                                              const gpuprof__an_coll *c);

/* Where this process's time went in the last run of `a` (several ranks
 * or one), step by step, in seconds of CLOCK_MONOTONIC: listing the
 * inputs, pass 1 (load), the ranks' trees merged (merge: gather, merge on
 * rank 0, broadcast), the files opened and pass 2 (values), its parts
 * settled (settle_values:
 * copies into the shared files, plane tables and counts reduced over the
 * ranks), pass 3 (transpose), its parts settled (settle_contexts), and
 * the tables, headers and renames (write, rank 0). A step's time includes
 * the agreement that ends it, so a rank waiting for a slower one counts
 * the wait. 0 for steps a run did not take. For benchmarks
 * (tests/bench/bench_analysis.c, through gpuprof-mpi's GPUPROF_MPI_PHASES). */
enum {
    GPUPROF__AN_PH_INPUTS,
    GPUPROF__AN_PH_LOAD,
    GPUPROF__AN_PH_MERGE,
    GPUPROF__AN_PH_VALUES,
    GPUPROF__AN_PH_SETTLE_VALUES,
    GPUPROF__AN_PH_TRANSPOSE,
    GPUPROF__AN_PH_SETTLE_CONTEXTS,
    GPUPROF__AN_PH_WRITE,
    GPUPROF__AN_PHASES
};
const char *gpuprof__an_phase_name(unsigned phase);
/* The default memory budget (GPUPROF_AN_MEMORY_AUTO) shared by the n ranks
 * of this node: each takes a quarter of the memory available / n. */
void gpuprof__an_analysis_set_node_ranks(gpuprof_an_analysis *a, unsigned n);
double gpuprof__an_phase_s(const gpuprof_an_analysis *a, unsigned phase);

#endif /* GPUPROF_AN_COLL_H */
