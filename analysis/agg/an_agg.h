/*
 * an_agg.h - the aggregation's pieces (seed 000 §6.1-6.2; doc/ANALYSIS.md,
 * doc/FORMATS.md): measurement directories -> an analysis database.
 *
 * Three passes, each over arrays that depend only on the inputs, so the
 * database is the same bytes whatever the thread count, memory budget or
 * number of ranks:
 *   1. load and unify (an_unify.c; files read in parallel, unified
 *      serially in input order): metrics by name; every thread's nodes
 *      into one calling context tree (an_tree.h) keyed by (parent, kind,
 *      name, aux, key), module indices replaced by paths, so contexts mean
 *      the same in every process and run (several runs merge); CPU frames
 *      and GPU instructions expanded into their program structure
 *      (an_frames.c). A damaged file stops the run with a message naming
 *      it; nothing is written;
 *   2. values (an_values.c; parallel over profiles = threads): each node's
 *      own values (exclusive) and its subtree's (inclusive, combined by
 *      the metric's rule), as sparse rows sorted by context and metric,
 *      encoded as the profile's profile.db plane and counted per context;
 *      traces appended to trace.db (db/an_tracedb.c) meanwhile;
 *   3. transpose (an_transpose.c; parallel over ranges of contexts): every
 *      profile's entries of the range, ordered by metric, encoded as the
 *      contexts' cct.db planes with their statistics (stats.db).
 * Then the plane tables, checksums and headers; the files are renamed into
 * place, meta.db last (an_analysis.c, db/).
 *
 * Memory. Pass 2 goes in rounds of files and frees each round's decoded
 * files once their rows are made (the next round's rows reuse that
 * memory); pass 3 goes in ranges of contexts of a bounded number of
 * values; the output buffers of both are reused from round to round. What
 * the whole run keeps -- the unified tree, the strings, per context and
 * per profile a few words -- is counted against the memory budget first
 * (set_memory; by default a share of the memory available, an_memory.c);
 * then pass 1 holds decoded files for pass 2, and pass 2 keeps rows for
 * pass 3, while each takes at most half of what is left. Without a budget,
 * or with one that holds everything, every file is decoded once and
 * every row kept: the fastest way. With a tighter one, the files pass 1
 * let go are read again in pass 2, in rounds that fit (the bytes one file
 * costs are measured per file byte and the largest ratio seen is used,
 * the first round being one file), and pass 3 reads the rows it was not
 * left back from profile.db, in ranges whose values fit.
 *
 * On several ranks (coll/an_coll.h, `gpuprof-mpi`; coll/an_ranks*.c) each
 * rank does pass 1 for a block of files, rank 0 merges the ranks' trees in
 * rank order so that every id is the single-process run's, each rank does
 * pass 2 for its profiles and pass 3 for a range of contexts read back
 * from profile.db, its planes going to a part file of its own that is
 * then copied into place at an offset from an exclusive scan; rank 0
 * writes the tables and headers. The same bytes again.
 *
 * Statistics count only the profiles where a value is non-zero (the data
 * are sparse); `count` says how many, so the mean over all P profiles is
 * sum / P.
 *
 * `run` is what the steps of one aggregation share (an_analysis.c drives
 * them); the passes' parallel work takes contexts of its own (an_values.c,
 * an_transpose.c, the pool and the writers), never the run.
 */
#ifndef GPUPROF_AN_AGG_H
#define GPUPROF_AN_AGG_H

#include <stdbool.h>
#include <stdint.h>

#include "../base/an_internal.h"
#include "../coll/an_coll.h"
#include "../db/an_dbwrite.h"
#include "../db/an_tracedb.h"
#include "an_frames.h"
#include "an_gcct.h"
#include "an_tree.h"

struct gpuprof_an_analysis {
    char **inputs;
    uint32_t ninputs;
    unsigned threads;
    uint64_t memory; /* bytes; 0: no budget; GPUPROF_AN_MEMORY_AUTO */
    int structure;   /* expand CPU frames with DWARF */
    char *output;
    gpuprof_an_progress_fn progress;
    void *user;
    int strict; /* a trace not used whole stops the run */
    gpuprof_an_warning_fn warn;
    void *warn_user;
    double phase_s[GPUPROF__AN_PHASES]; /* the last run's (an_coll.h) */
    /* the last run's memory: its budget (0: none) and the memory available
     * a default one is a share of (0: set, or unknown) */
    uint64_t used_memory, available;
    unsigned node_ranks; /* ranks sharing this node's memory (0, 1: one) */
};

typedef struct src { /* one profile file */
    char *path;
    gpuprof__io_profile *io; /* while a pass holds it */
    gpuprof_status st;
    char *err;
    uint64_t fsize;           /* bytes on disk, when listed */
    uint64_t tsize;           /* its trace's bytes (0: none or empty) */
    uint32_t has_trace;       /* a .gptrace beside it (whatever it is) */
    uint64_t cost;            /* bytes of memory it took in the current pass */
    uint32_t *metric;         /* local metric -> global base metric */
    uint32_t *ctx;            /* absolute node -> context, while io is held */
    gsplits split;            /* nodes in several GPU calling contexts */
    uint32_t p0, np;          /* its profiles (threads) */
    uint32_t nodes, nmetrics; /* to see it unchanged in pass 2 */
    uint64_t held;            /* bytes of it held from pass 1 for pass 2 */
} src;

typedef struct entry { /* one non-zero value of a profile */
    uint32_t ctx;
    uint16_t metric; /* database metric: 2 * base + variant */
    double v;
} entry;

typedef struct row { /* a profile's entries, sorted by context, metric */
    entry *e;
    uint32_t n;
    uint32_t pairs; /* distinct contexts */
    uint64_t peak;  /* bytes its computation took at most */
    bool kept;      /* pass 2 left it for pass 3 (else read back) */
} row;

typedef gpuprof__an_dbfile dbfile;
enum { F_PMS, F_CMS, F_STATS };

typedef struct run {
    gpuprof_an_analysis *a;
    src *s;
    uint32_t ns;
    an_tree t;        /* the unified tree (pass 1, merged over ranks) */
    an_structure sx;  /* program structure looked up (pass 1) */
    row *rows;        /* per profile (pass 2; pass 3 reads them) */
    uint64_t budget;  /* 0, or the bytes rounds may use beside what stays */
    uint64_t held;    /* bytes of decoded files pass 1 held for pass 2 */
    uint64_t kept;    /* bytes of rows pass 2 left for pass 3 */
    bool tight;       /* the budget let something go: freed memory is
                         handed back after each round (else it is kept
                         for the next: fresh pages cost) */
    uint64_t *cstart; /* per context: values before it; [nc] = total */
    uint64_t *poff;   /* per profile: its profile.db plane's offset */
    dbfile f[3];      /* profile.db, cct.db, stats.db */
    gpuprof__an_tracedb tr; /* trace.db */
    dbfile info;            /* analysis.txt: how the database was made */
    /* how the budget shaped the run (analysis.txt): rounds of pass 1 and
     * 2, ranges of pass 3, files decoded twice, rows read back */
    uint32_t rounds[3], reread, readback;
    /* several ranks (an_coll.h); a single process is rank 0 of 1 */
    const gpuprof__an_coll *coll;
    int rank, nranks;
    uint32_t s_lo, s_hi;   /* this rank's files */
    uint32_t c_lo, c_hi;   /* this rank's contexts in pass 3 */
    uint32_t pr_lo, pr_hi; /* this rank's profiles, after the merge */
    long pid0;             /* rank 0's process id: temporary files' names */
    int blame;             /* the rank a failure is about (-1: the failing) */
    /* an earlier database's files, moved aside (gpuprof__an_dbfile_rename) */
    dbfile *aside[5];
    uint32_t naside;
    uint64_t ident; /* the database's identity (inputs, options) */
    unsigned major; /* the format written (db_format, an_analysis.c) */
    bool made_dir;  /* the output directory is this run's: removed, empty,
                       when the run fails */
} run;

/* ---- an_analysis.c ---- */
/* Seconds of CLOCK_MONOTONIC since t0 added to the phase's time; the
 * clock now (the next phase's t0). */
double gpuprof__an_phase_end(run *r, unsigned phase, double t0);
double gpuprof__an_now_s(void);
void gpuprof__an_progress(const run *r, const char *phase, uint64_t done,
                          uint64_t total);
/* The inputs' files listed (rank 0) and the identity computed. */
gpuprof_status gpuprof__an_collect_inputs(run *r);

/* ---- an_memory.c: the default budget ---- */
/* Bytes this process may take now: MemAvailable, or what its control
 * groups leave when less (GPUPROF_AN_SYSROOT prefixes the paths); 0 when
 * unknown. */
uint64_t gpuprof__an_memory_available(void);
/* The default budget for that much available memory shared by `ranks`
 * ranks (0, 1: one), 0: none. */
uint64_t gpuprof__an_default_budget(uint64_t available, unsigned ranks);
/* analysis.txt: how the database was made (threads, ranks, the budget
 * and what it made the run do), in r->info's temporary file. */
gpuprof_status gpuprof__an_info_write(run *r);

/* ---- an_unify.c: pass 1, and what pass 2 shares of it ---- */
gpuprof_status gpuprof__an_unify(run *r);
/* Files [i, j) read in parallel; the first that failed, in order. */
void gpuprof__an_load_files(run *r, uint32_t i, uint32_t j);
gpuprof_status gpuprof__an_first_error(const run *r, uint32_t i, uint32_t j);
/* File i's nodes mapped to contexts (again: read a second time, in pass 2,
 * where every context must already be there). */
gpuprof_status gpuprof__an_unify_file(run *r, uint32_t i, bool again);
/* Bytes a decoded profile holds. */
uint64_t gpuprof__an_io_bytes(const gpuprof__io_profile *p);
/* The file's decoding and node map freed. */
void gpuprof__an_src_release(src *s);
/* What the whole run keeps, in bytes: counted against the budget; the
 * room for a round beside it and what is held (at least 1 byte). */
uint64_t gpuprof__an_kept_bytes(const run *r);
uint64_t gpuprof__an_room(const run *r);
/* Whether `bytes` more may be held for a later pass (decoded files, rows)
 * beside what is held already: at most half of what the budget leaves
 * beside what the run keeps (always, without a budget). When not, the
 * run is tight from then on. */
bool gpuprof__an_may_hold(run *r, uint64_t bytes);
/* The end of the round that starts at file i (ratio: bytes of memory per
 * file byte, the largest seen; 0: none yet). */
uint32_t gpuprof__an_round_end(const run *r, uint32_t i, double ratio);

/* ---- an_values.c: pass 2 ---- */
gpuprof_status gpuprof__an_values(run *r);

/* ---- an_transpose.c: pass 3 ---- */
gpuprof_status gpuprof__an_transpose(run *r);

/* ---- coll/an_ranks.c, coll/an_ranks_tree.c: several ranks ---- */
/* The status every rank ends with (the first failing rank's); one
 * process: st. */
gpuprof_status gpuprof__an_agree(run *r, gpuprof_status st);
gpuprof_status gpuprof__an_transport_fail(void);
/* The inputs, listed by rank 0, and this rank's block of them. */
gpuprof_status gpuprof__an_inputs(run *r);
/* After pass 1: the merged tree on every rank. */
gpuprof_status gpuprof__an_merge(run *r, gpuprof_status st);
/* After pass 2 and pass 3: the ranks' parts in place. */
gpuprof_status gpuprof__an_settle_values(run *r, bool traced);
gpuprof_status gpuprof__an_settle_contexts(run *r);
/* Pass 3's contexts for this rank. */
void gpuprof__an_rank_contexts(run *r);
/* The i-th of n equal shares of `total`, rounded down. */
uint64_t gpuprof__an_share(uint64_t total, uint64_t i, uint64_t n);

#endif /* GPUPROF_AN_AGG_H */
