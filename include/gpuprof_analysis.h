/*
 * gpuprof_analysis.h - the public interface of libgpuprof-analysis.
 *
 * libgpuprof-analysis reads what libgpuprof measured. Sites call it from
 * their own post-processing programs; the `gpuprof` command is built on it
 * and on nothing else. This first slice opens one profile file (one process:
 * every thread's calling context tree, metrics and counters) and merges a
 * measurement directory into one region tree. Later releases add databases,
 * views, blame and exports; what is here will not change (doc/ABI.md).
 *
 * Conventions: prefix gpuprof_an_; status codes are gpuprof_status from
 * gpuprof.h; objects are opaque and owned by the caller between _open and
 * _close; strings returned belong to the object and live as long as it.
 * Objects may be used from several threads at once for reading (no function
 * below modifies an open object). gpuprof_an_last_error() is per thread.
 * Compiles as C99 and as C++.
 */
#ifndef GPUPROF_ANALYSIS_H
#define GPUPROF_ANALYSIS_H

#include <stdint.h>
#include <stdio.h>

#include "gpuprof.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GPUPROF_BUILDING_LIBRARY) && defined(__GNUC__)
#define GPUPROF_AN_API __attribute__((visibility("default")))
#else
#define GPUPROF_AN_API
#endif

/* The message of the calling thread's last failing call, naming the file
 * and what is wrong with it; "" if none. Since 0.1. */
GPUPROF_AN_API const char *gpuprof_an_last_error(void);

/* ------------------------------------------------------------------------ */
/* One profile file                                                          */
/* ------------------------------------------------------------------------ */

typedef struct gpuprof_an_profile gpuprof_an_profile;

/* Node kinds and flags, as stored in files (pinned values). */
typedef enum gpuprof_an_node_kind {
    GPUPROF_AN_NODE_ROOT = 0,
    GPUPROF_AN_NODE_REGION = 1,
    GPUPROF_AN_NODE_FRAME = 2,
    GPUPROF_AN_NODE_GPU_OP = 3,
    GPUPROF_AN_NODE_KERNEL = 4,
    GPUPROF_AN_NODE_GPU_INSTR = 5,
    /* Program structure of CPU frames and GPU instructions (analysis
     * databases only): */
    GPUPROF_AN_NODE_FUNCTION = 6, /* the out-of-line function of a frame */
    GPUPROF_AN_NODE_INLINE = 7,   /* a function inlined there */
    GPUPROF_AN_NODE_LINE = 8,     /* a source line: a call site, or where
                                     the frame (instruction) itself is */
    /* A device function in a GPU calling context rebuilt beneath its
     * kernel from PC samples (database format 4; since 0.1): */
    GPUPROF_AN_NODE_GPU_FUNCTION = 9,
    GPUPROF_AN_NODE_LOOP = 10 /* a loop in it ("loop at kernel.cu:12") */
} gpuprof_an_node_kind;
#define GPUPROF_AN_NODE_OPEN 0x01u       /* region open when written */
#define GPUPROF_AN_NODE_UNBALANCED 0x02u /* closed by a mismatched end */
#define GPUPROF_AN_THREAD_MAIN 0x01u
#define GPUPROF_AN_THREAD_EXITED 0x02u
#define GPUPROF_AN_THREAD_MERGED 0x04u  /* exited threads beyond the kept ones \
                                         */
#define GPUPROF_AN_PROFILE_FINAL 0x01u  /* written by gpuprof_finalize */
#define GPUPROF_AN_PROFILE_FORKED 0x02u /* the process was a fork child */

typedef enum gpuprof_an_unit {
    GPUPROF_AN_UNIT_COUNT = 0,
    GPUPROF_AN_UNIT_NS = 1,
    GPUPROF_AN_UNIT_BYTES = 2
} gpuprof_an_unit;

/* Reads and validates a profile file. GPUPROF_E_IO when it cannot be read,
 * GPUPROF_E_CORRUPT when damaged or truncated, GPUPROF_E_VERSION for a
 * format this library does not read, GPUPROF_E_NOMEM; the message
 * (gpuprof_an_last_error) names the file. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_profile_open(const char *path,
                                                      gpuprof_an_profile **out);
/* Releases a profile; NULL is allowed. Since 0.1. */
GPUPROF_AN_API void gpuprof_an_profile_close(gpuprof_an_profile *p);

/* Identity of the measured process. Since 0.1. */
GPUPROF_AN_API const char *gpuprof_an_profile_host(const gpuprof_an_profile *p);
GPUPROF_AN_API const char *gpuprof_an_profile_exe(const gpuprof_an_profile *p);
GPUPROF_AN_API const char *
gpuprof_an_profile_cmdline(const gpuprof_an_profile *p);
GPUPROF_AN_API uint32_t gpuprof_an_profile_pid(const gpuprof_an_profile *p);
GPUPROF_AN_API int32_t
gpuprof_an_profile_rank(const gpuprof_an_profile *p); /* -1: unknown */
GPUPROF_AN_API uint64_t
gpuprof_an_profile_generation(const gpuprof_an_profile *p);
GPUPROF_AN_API uint32_t gpuprof_an_profile_flags(const gpuprof_an_profile *p);
/* Measurement start and the time of writing, CLOCK_MONOTONIC ns of the
 * measured host; the start in CLOCK_REALTIME ns. */
GPUPROF_AN_API uint64_t
gpuprof_an_profile_start_ns(const gpuprof_an_profile *p);
GPUPROF_AN_API uint64_t gpuprof_an_profile_end_ns(const gpuprof_an_profile *p);
GPUPROF_AN_API uint64_t
gpuprof_an_profile_start_realtime_ns(const gpuprof_an_profile *p);

/* Metrics: indices 0 .. count-1. Out-of-range indices give NULL / 0. */
GPUPROF_AN_API uint32_t gpuprof_an_metric_count(const gpuprof_an_profile *p);
GPUPROF_AN_API const char *gpuprof_an_metric_name(const gpuprof_an_profile *p,
                                                  uint32_t m);
GPUPROF_AN_API const char *
gpuprof_an_metric_description(const gpuprof_an_profile *p, uint32_t m);
GPUPROF_AN_API gpuprof_an_unit
gpuprof_an_metric_unit(const gpuprof_an_profile *p, uint32_t m);
/* The index of the metric named `name` in *m; GPUPROF_E_NOTFOUND. */
GPUPROF_AN_API gpuprof_status gpuprof_an_metric_find(
    const gpuprof_an_profile *p, const char *name, uint32_t *m);

/* Threads: indices 0 .. count-1, in order of creation. */
GPUPROF_AN_API uint32_t gpuprof_an_thread_count(const gpuprof_an_profile *p);
GPUPROF_AN_API uint64_t gpuprof_an_thread_tid(const gpuprof_an_profile *p,
                                              uint32_t t);
GPUPROF_AN_API const char *gpuprof_an_thread_name(const gpuprof_an_profile *p,
                                                  uint32_t t);
GPUPROF_AN_API uint32_t gpuprof_an_thread_flags(const gpuprof_an_profile *p,
                                                uint32_t t);
/* A thread's CCT: nodes 0 .. count-1; node 0 is the root; a parent always
 * has a smaller index than its children. */
GPUPROF_AN_API uint32_t gpuprof_an_node_count(const gpuprof_an_profile *p,
                                              uint32_t t);
/* The parent of node n (UINT32_MAX for the root). */
GPUPROF_AN_API uint32_t gpuprof_an_node_parent(const gpuprof_an_profile *p,
                                               uint32_t t, uint32_t n);
GPUPROF_AN_API gpuprof_an_node_kind
gpuprof_an_node_kind_of(const gpuprof_an_profile *p, uint32_t t, uint32_t n);
GPUPROF_AN_API uint32_t gpuprof_an_node_flags(const gpuprof_an_profile *p,
                                              uint32_t t, uint32_t n);
/* A readable name: the region's name, "root", or a description of other
 * kinds of node. Never NULL for a valid node. */
GPUPROF_AN_API const char *gpuprof_an_node_name(const gpuprof_an_profile *p,
                                                uint32_t t, uint32_t n);
/* The value of metric m at node n (0 when the node has none). */
GPUPROF_AN_API uint64_t gpuprof_an_node_value(const gpuprof_an_profile *p,
                                              uint32_t t, uint32_t n,
                                              uint32_t m);

/* Counters written with the profile ("regions.unbalanced", ...). */
GPUPROF_AN_API uint32_t gpuprof_an_counter_count(const gpuprof_an_profile *p);
GPUPROF_AN_API const char *gpuprof_an_counter_name(const gpuprof_an_profile *p,
                                                   uint32_t i);
GPUPROF_AN_API uint64_t gpuprof_an_counter_value(const gpuprof_an_profile *p,
                                                 uint32_t i);

/* Prints the profile as `gpuprof dump` does: identity, non-zero counters,
 * then each thread's tree indented two spaces per level with its non-zero
 * metrics. `flags` must be 0. GPUPROF_E_IO if writing fails. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_profile_print(
    const gpuprof_an_profile *p, FILE *out, uint32_t flags);

/* Prints a trace file (<profile name>.gptrace, written with GPUPROF_TRACE=1)
 * as `gpuprof dump` does: its streams (GPU streams and CPU threads) with
 * record counts, busy time and span, the first records of each sorted by
 * start (times relative to the stream's first record, contexts as thread
 * sequence number and node), and how many bytes at the end were torn or
 * damaged and ignored. `flags` must be 0. GPUPROF_E_CORRUPT / _VERSION /
 * _IO naming the file. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_trace_print(const char *path,
                                                     FILE *out,
                                                     uint32_t flags);

/* Writes the traces (*.gptrace, written with GPUPROF_TRACE=1) of the
 * measurement directories dirs[0..ndirs) to `out` as one Chrome Trace
 * Event JSON object ({"traceEvents":[...], "displayTimeUnit":"ns", ...}),
 * which ui.perfetto.dev and chrome://tracing open. Each trace is a process
 * (named "HOST pid PID rank RANK"); each CPU thread a track (tid: its OS
 * tid; named "NAME (tid TID)") with its regions and the API calls of its
 * GPU operations as complete events; each GPU stream a track of its own
 * ("GPU D stream S"; tid 0x40000000 + k). A flow (ph "s"/"f", cat
 * "launch") joins each launch to every device record with its correlation
 * id. Names come from the profile beside each trace (region names,
 * operation kinds, kernel names; "node N" without a profile). Times are
 * microseconds (three decimals: ns) from the earliest record of all
 * inputs; processes on another host than the first input's are moved onto
 * its clock by the hosts' realtime offsets. Written as it is read: one
 * trace and its profile in memory at a time.
 * A trace with a torn or damaged tail loses that part: one line saying so
 * goes to `notes` (NULL: nowhere), as does a trace without a profile.
 * Errors, naming the file or directory: GPUPROF_E_CORRUPT (a damaged trace
 * header or profile), GPUPROF_E_VERSION, GPUPROF_E_IO (a directory or file
 * that cannot be read, or writing failed), GPUPROF_E_NOTFOUND (a directory
 * without traces), GPUPROF_E_NOMEM, GPUPROF_E_INVALID (NULL arguments,
 * ndirs 0, flags not 0). After an error `out` holds an unterminated
 * object. Any thread may call it, also concurrently. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_export_chrome(
    const char *const *dirs, uint32_t ndirs, FILE *out, FILE *notes,
    uint32_t flags);

/* ------------------------------------------------------------------------ */
/* A measurement directory merged into one region tree                      */
/* ------------------------------------------------------------------------ */

typedef struct gpuprof_an_report gpuprof_an_report;

/* Reads every profile (*.gpuprof, names not starting with '.', which are
 * the writers' temporaries) in `dir` and merges the region trees of all
 * threads of all processes: a region is identified by the path of region
 * names from the top; nodes that are not regions (call paths, GPU
 * operations) count towards their nearest enclosing region. Visits,
 * inclusive and exclusive times are summed; node flags are OR-ed. Metrics
 * are looked up by name ("region.visits", "region.time.incl",
 * "region.time.excl"). On success *out is a new report the caller
 * releases with gpuprof_an_report_close. Errors (*out set to NULL): a
 * damaged file fails the whole call with GPUPROF_E_CORRUPT naming the file
 * (nothing is skipped silently), GPUPROF_E_VERSION for a format this
 * library does not read; a directory without profiles gives
 * GPUPROF_E_NOTFOUND; one that cannot be read GPUPROF_E_IO;
 * GPUPROF_E_NOMEM; NULL arguments GPUPROF_E_INVALID. Any thread may call
 * it, also concurrently. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_report_open(const char *dir,
                                                     gpuprof_an_report **out);
/* Releases a report and every string it returned; NULL is allowed. Not
 * concurrently with other calls on the same report. Since 0.1. */
GPUPROF_AN_API void gpuprof_an_report_close(gpuprof_an_report *r);

/* How many profile files were merged, how many threads they hold, and how
 * many distinct processes (host, pid) and hosts wrote them. A process
 * writes one file, so processes = profiles unless a directory mixes runs
 * that reused a pid. Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_report_profile_count(const gpuprof_an_report *r);
GPUPROF_AN_API uint32_t
gpuprof_an_report_thread_count(const gpuprof_an_report *r);
GPUPROF_AN_API uint32_t
gpuprof_an_report_process_count(const gpuprof_an_report *r);
GPUPROF_AN_API uint32_t
gpuprof_an_report_host_count(const gpuprof_an_report *r);
/* Wall time from the earliest start to the latest write, in ns. */
GPUPROF_AN_API uint64_t gpuprof_an_report_wall_ns(const gpuprof_an_report *r);
/* A counter summed over all profiles (0 when no profile has it). */
GPUPROF_AN_API uint64_t gpuprof_an_report_counter(const gpuprof_an_report *r,
                                                  const char *name);

/* The merged tree in depth-first order: node 0 is the root (the whole run:
 * its name is "<program>", its inclusive time the sum of the top-level
 * regions'); siblings are ordered by inclusive time, largest first, then by
 * name (bytewise), so the order does not depend on the order of files or
 * threads. Accessors given an index >= the node count return 0, NULL, or
 * UINT32_MAX for a parent. Visits and times are sums over every thread of
 * every process. Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_count(const gpuprof_an_report *r);
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_parent(const gpuprof_an_report *r, uint32_t n);
GPUPROF_AN_API uint32_t gpuprof_an_report_node_depth(const gpuprof_an_report *r,
                                                     uint32_t n);
GPUPROF_AN_API const char *
gpuprof_an_report_node_name(const gpuprof_an_report *r, uint32_t n);
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_visits(const gpuprof_an_report *r, uint32_t n);
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_incl_ns(const gpuprof_an_report *r, uint32_t n);
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_excl_ns(const gpuprof_an_report *r, uint32_t n);
/* GPUPROF_AN_NODE_* flags of any thread, OR-ed. */
GPUPROF_AN_API uint32_t gpuprof_an_report_node_flags(const gpuprof_an_report *r,
                                                     uint32_t n);
/* How many threads (of all processes) entered this region. */
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_threads(const gpuprof_an_report *r, uint32_t n);
/* How many profiles (processes) have a thread that entered this region.
 * Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_report_node_processes(const gpuprof_an_report *r, uint32_t n);
/* The largest inclusive time one thread spent at this path; with the
 * mean (incl / threads) it measures load imbalance. Since 0.1. */
GPUPROF_AN_API uint64_t
gpuprof_an_report_node_incl_max_ns(const gpuprof_an_report *r, uint32_t n);
/* The node at path "a/b/c" (region names joined by '/') in *n;
 * GPUPROF_E_NOTFOUND. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_report_find(const gpuprof_an_report *r,
                                                     const char *path,
                                                     uint32_t *n);

/* Prints the report as `gpuprof report` does. `flags` must be 0.
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_report_print(const gpuprof_an_report *r, FILE *out, uint32_t flags);

/* Prints the second part of `gpuprof report DIR`: every thread of every
 * profile in `dir` merged into one tree of regions -> CPU frames (function
 * names from the modules' ELF symbol tables or their separate debug
 * files, else module+offset) -> GPU operation placeholders -> kernels,
 * with the inclusive operation count, device time, bytes and share of all
 * device time of each node, largest device time first; only nodes beneath
 * which the GPU did something are printed, and of those only the ones
 * with at least `min_share` (0..1) of the run's whole in some column
 * (count, device time, bytes, API time, CPU_IDLE, CPU_IDLE_CAUSE,
 * GPU_IDLE_CAUSE); a closing line says how many were left out. The
 * runtime's frames at the top of call paths are left out as in a
 * database's views (GPUPROF_AN_CONTEXT_RUNTIME; "<thread root>" for a
 * thread's start) unless `flags` has GPUPROF_AN_RUNTIME_FRAMES. Lines are
 * at most 200 bytes: a longer name keeps its head and its "(module)".
 * Prints nothing when the profiles hold no GPU metrics. Errors name the
 * file, as gpuprof_an_report_open. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_gpu_print_ex(const char *dir,
                                                      FILE *out,
                                                      double min_share,
                                                      uint32_t flags);
/* The threshold `gpuprof report DIR` applies by default: 1 % (as a
 * database's views). */
#define GPUPROF_AN_REPORT_THRESHOLD 0.01
/* gpuprof_an_gpu_print_ex with GPUPROF_AN_REPORT_THRESHOLD; `flags` must
 * be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_gpu_print(const char *dir, FILE *out,
                                                   uint32_t flags);

/* ---- Aggregation into an analysis database (seed 000 §6) ---------------
 * Many profiles -- every thread of every process of one or more runs of a
 * program -- become one database: a unified calling context tree, every
 * profile's inclusive and exclusive values (profile-major: profile.db) and
 * the same values context-major (cct.db), and statistics over profiles
 * (doc/FORMATS.md, "Analysis database"). The database's bytes do not
 * depend on the thread count.
 *
 *   gpuprof_an_analysis *a;
 *   gpuprof_an_analysis_new(&a);
 *   gpuprof_an_analysis_add_input(a, "gpuprof-measurements");
 *   gpuprof_an_analysis_set_output(a, "gpuprof-database");
 *   gpuprof_an_analysis_set_threads(a, 8);
 *   gpuprof_an_analysis_run(a);   // errors name the damaged file
 *   gpuprof_an_analysis_free(a);
 */
typedef struct gpuprof_an_analysis gpuprof_an_analysis;

/* Called on the thread that runs the analysis at the start (done 0), after
 * each round (with a memory budget) and at the end (done == total) of each
 * phase: "load" (files read and unified), "values" (profiles), "transpose"
 * (contexts), "write". */
typedef void (*gpuprof_an_progress_fn)(const char *phase, uint64_t done,
                                       uint64_t total, void *user);

/* A new analysis: no inputs, one thread. Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_new(gpuprof_an_analysis **out);
/* Adds a measurement directory; several directories (runs) merge.
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_add_input(gpuprof_an_analysis *a, const char *dir);
/* Threads used to read profiles and compute values (1..1024; default 1).
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_threads(gpuprof_an_analysis *a, unsigned threads);
/* Program structure (on by default): each CPU frame whose module's DWARF
 * describes it (the module itself, a separate debug file beside it or under
 * /usr/lib/debug) becomes its function, the functions inlined there and
 * the source line of each call site: contexts of kinds
 * GPUPROF_AN_NODE_FUNCTION, _INLINE and _LINE, the frame's children
 * beneath its last line; frames without DWARF stay frames, named from ELF
 * symbols. Likewise each GPU instruction whose cubin (under the
 * measurement directory's binaries/) has a line table (nvcc -lineinfo)
 * becomes its source line beneath its kernel, with the functions inlined
 * there; the others stay instructions. When nvdisasm can list the cubin
 * (GPUPROF_NVDISASM, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH) and the
 * instructions carry gpu.pc.samples, the kernel's GPU calling contexts
 * are rebuilt too: device functions (GPUPROF_AN_NODE_GPU_FUNCTION)
 * beneath the lines of their calls and loops (GPUPROF_AN_NODE_LOOP), each
 * instruction's values split among its call paths (doc/ANALYSIS.md).
 * 0 turns it off (faster; frames and
 * instructions by address). Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_structure(gpuprof_an_analysis *a, int on);
/* The smallest memory budget (16 MiB). */
#define GPUPROF_AN_MIN_MEMORY (16u << 20)
/* The default memory budget: a quarter of the memory the process may take
 * when the run starts (MemAvailable, or what its control group leaves when
 * that is less), at least GPUPROF_AN_MIN_MEMORY. */
#define GPUPROF_AN_MEMORY_AUTO UINT64_MAX
/* A memory budget in bytes: the process's peak resident memory while the
 * analysis runs stays within it (work that does not fit is done in rounds:
 * files read twice, contexts in ranges, values read back from
 * profile.db; a budget that holds everything costs nothing);
 * GPUPROF_AN_MEMORY_AUTO (the default): a share of the memory available;
 * 0: no budget, everything in memory at once. The database is the same
 * bytes either way. GPUPROF_E_INVALID below GPUPROF_AN_MIN_MEMORY;
 * gpuprof_an_analysis_run fails with GPUPROF_E_LIMIT, saying how much is
 * needed, when the calling context tree and tables alone do not fit.
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_memory(gpuprof_an_analysis *a, uint64_t bytes);
/* The memory budget a run of `a` works within, in bytes (0: none): after
 * gpuprof_an_analysis_run, the one it used; before, the one it would use
 * now. With the default, *available (when not NULL) is the memory
 * available it is a share of (0 when that is not known: then there is no
 * budget); else 0. The database's analysis.txt says it too. Since 0.1. */
GPUPROF_AN_API uint64_t gpuprof_an_analysis_memory(const gpuprof_an_analysis *a,
                                                   uint64_t *available);
/* The database directory (created; its files are replaced). Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_output(gpuprof_an_analysis *a, const char *db_dir);
/* A progress callback (NULL: none). Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_progress(gpuprof_an_analysis *a,
                                 gpuprof_an_progress_fn fn, void *user);
/* Called with a one-line message, naming the file, for what the analysis
 * uses only in part: a damaged or empty trace (the bytes it ignores, as
 * `gpuprof dump` says them), a trace stream of a thread its profile does
 * not hold; once, PC samples of GPU binaries that stay instruction lines
 * because nvdisasm was not found (a note). On the thread that runs the analysis (each rank's, with
 * several). NULL: none. Since 0.1. */
typedef void (*gpuprof_an_warning_fn)(const char *message, void *user);
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_warnings(gpuprof_an_analysis *a,
                                 gpuprof_an_warning_fn fn, void *user);
/* Strict (0: off, the default): a trace that cannot be used whole -- a
 * damaged or empty one, or one with a thread its profile does not hold --
 * stops the run with GPUPROF_E_CORRUPT, naming it, instead of being used
 * in part with a warning (and counted in the database,
 * gpuprof_an_db_trace_ignored). Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_strict(gpuprof_an_analysis *a, int on);
/* Runs it. On error nothing of the database is half-written: each file is
 * replaced atomically and meta.db, written last, names the run the others
 * belong to; a failed run leaves an earlier database in the directory as
 * it was. Every file carries the identity of the analysis that wrote it:
 * a reader refuses files of two analyses, naming the file. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_run(gpuprof_an_analysis *a);
GPUPROF_AN_API void gpuprof_an_analysis_free(gpuprof_an_analysis *a);

/* ---- Reading a database ------------------------------------------------- */
typedef struct gpuprof_an_db gpuprof_an_db;

/* Every measured metric is two database metrics. */
typedef enum gpuprof_an_variant {
    GPUPROF_AN_INCLUSIVE = 0, /* the context and everything beneath it */
    GPUPROF_AN_EXCLUSIVE = 1  /* the context's own value, as measured */
} gpuprof_an_variant;

/* Statistics of one (context, metric) over the profiles where the value is
 * non-zero; COUNT is how many (so the mean over all P profiles is
 * SUM / P); STD is the population standard deviation, COV = STD / MEAN. */
typedef enum gpuprof_an_stat {
    GPUPROF_AN_STAT_COUNT = 0,
    GPUPROF_AN_STAT_SUM = 1,
    GPUPROF_AN_STAT_MIN = 2,
    GPUPROF_AN_STAT_MEAN = 3,
    GPUPROF_AN_STAT_MAX = 4,
    GPUPROF_AN_STAT_STD = 5,
    GPUPROF_AN_STAT_COV = 6
} gpuprof_an_stat;

/* Opens a database; every file is checked (checksums, sizes, indices) and
 * a damaged or mismatched one refused with its name. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_open(const char *db_dir,
                                                 gpuprof_an_db **out);
GPUPROF_AN_API void gpuprof_an_db_close(gpuprof_an_db *db);

/* Contexts: 0 is the root (parent UINT32_MAX); parents precede children.
 * Names: region names, "function+0xNN (module)" for CPU frames (or
 * "module+0xoffset"), "<kernel launch>" for placeholders, "kernel NAME"
 * for kernels (the binary they came from, whose name is its content hash
 * and so differs between runs, is gpuprof_an_db_context_binary). Since
 * 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_db_context_count(const gpuprof_an_db *db);
GPUPROF_AN_API uint32_t gpuprof_an_db_context_parent(const gpuprof_an_db *db,
                                                     uint32_t c);
GPUPROF_AN_API gpuprof_an_node_kind
gpuprof_an_db_context_kind(const gpuprof_an_db *db, uint32_t c);
GPUPROF_AN_API const char *gpuprof_an_db_context_name(const gpuprof_an_db *db,
                                                      uint32_t c);
/* A kernel context's GPU binary, as the measurement directory names it
 * ("binaries/HASH.clbin"); NULL for other contexts and kernels without
 * one. Owned by the database. Since 0.1. */
GPUPROF_AN_API const char *
gpuprof_an_db_context_binary(const gpuprof_an_db *db, uint32_t c);
/* Context flags. RUNTIME: a frame of the runtime's start at the top of a
 * call path -- the C library starting the program (_start,
 * __libc_start_main, ...) or a thread (clone, start_thread, ...), or a
 * Python interpreter's frames above its first Python frame -- recognized
 * by function and load module (unnamed frames of the C library too). The
 * views and exports leave such contexts out unless given
 * GPUPROF_AN_RUNTIME_FRAMES (their children then hang beneath the nearest
 * context shown); they never have a value of their own (a runtime frame
 * that has one is not flagged), so every sum stays the same. THREAD_ROOT:
 * the outermost frame of a thread's start, shown as "<thread root>"
 * unless GPUPROF_AN_RUNTIME_FRAMES. Since 0.1. */
#define GPUPROF_AN_CONTEXT_RUNTIME 0x1u
#define GPUPROF_AN_CONTEXT_THREAD_ROOT 0x2u
GPUPROF_AN_API uint32_t gpuprof_an_db_context_flags(const gpuprof_an_db *db,
                                                    uint32_t c);
/* A flag every view and export of a database takes (and `gpuprof report
 * DIR`'s gpuprof_an_gpu_print_ex): show the runtime's frames as measured
 * (GPUPROF_AN_CONTEXT_RUNTIME). Since 0.1. */
#define GPUPROF_AN_RUNTIME_FRAMES 0x100u

/* Metrics: 2 * (measured metrics); inclusive and exclusive alternate. */
GPUPROF_AN_API uint32_t gpuprof_an_db_metric_count(const gpuprof_an_db *db);
GPUPROF_AN_API const char *gpuprof_an_db_metric_name(const gpuprof_an_db *db,
                                                     uint32_t m);
GPUPROF_AN_API gpuprof_an_variant
gpuprof_an_db_metric_variant(const gpuprof_an_db *db, uint32_t m);
GPUPROF_AN_API gpuprof_an_unit
gpuprof_an_db_metric_unit(const gpuprof_an_db *db, uint32_t m);
GPUPROF_AN_API gpuprof_status gpuprof_an_db_metric_find(
    const gpuprof_an_db *db, const char *name, gpuprof_an_variant v,
    uint32_t *m);
/* A metric's descriptor flags, as its backend registered them
 * (gpuprof_be_metric_register; 0 in databases of format 3 and for
 * derived metrics). GPUPROF_AN_METRIC_ODD: an odd sum, whose mean over its
 * count metric (gpuprof_an_db_metric_count_metric: the id of the same
 * variant) is what means something; GPUPROF_AN_METRIC_NO_INCLUSIVE: its
 * inclusive values (a subtree's sum) mean nothing. Since 0.1. */
#define GPUPROF_AN_METRIC_ODD 0x1u
#define GPUPROF_AN_METRIC_NO_INCLUSIVE 0x2u
/* A metric measured inclusive already (region.time.incl: a region's time
 * holds its child regions'), on both variants: its exclusive variant is
 * the values as measured, which are not exclusive ones (views show "-",
 * exports leave them out); its inclusive variant is not the sum the
 * aggregation stored, which would count a nested region again in every
 * enclosing one, but a context's own measured value where it has one,
 * else the sum over its children, per profile (every accessor gives these:
 * value, context values, statistics). Since 0.1. */
#define GPUPROF_AN_METRIC_NO_EXCLUSIVE 0x4u
GPUPROF_AN_API uint32_t gpuprof_an_db_metric_flags(const gpuprof_an_db *db,
                                                   uint32_t m);
/* An odd sum's count metric into *count; GPUPROF_E_NOTFOUND when m is no
 * odd sum with one (or its profiles did not hold the count metric),
 * GPUPROF_E_INVALID for no metric m. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_metric_count_metric(
    const gpuprof_an_db *db, uint32_t m, uint32_t *count);
/* The database's format (3: without GPU calling contexts and metric
 * flags, which every reader reads; 4; 5: with devices). Since 0.1. */
GPUPROF_AN_API unsigned gpuprof_an_db_format(const gpuprof_an_db *db);

/* Devices: what each process's devices can hold, as the backends that
 * measured them described them (profile section DEVICES, doc/FORMATS.md;
 * databases of format 5, none in older ones): one device per process, API
 * ("cuda", "levelzero", "opencl") and device number, in input order. Its
 * attributes by name ("sm_count", "max_threads_per_sm", "registers_per_sm",
 * "shared_bytes_per_sm", "name", ...: doc/FORMATS.md lists them). Any
 * thread. Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_db_device_count(const gpuprof_an_db *db);
/* Device d's process (its first database profile; UINT32_MAX unknown), API
 * (NULL: no device d) and number within its API (as trace streams number
 * devices). */
GPUPROF_AN_API uint32_t gpuprof_an_db_device_profile(const gpuprof_an_db *db,
                                                     uint32_t d);
GPUPROF_AN_API const char *gpuprof_an_db_device_api(const gpuprof_an_db *db,
                                                    uint32_t d);
GPUPROF_AN_API uint32_t gpuprof_an_db_device_number(const gpuprof_an_db *db,
                                                    uint32_t d);
/* The name of device d's attribute i (NULL past the last). */
GPUPROF_AN_API const char *gpuprof_an_db_device_key(const gpuprof_an_db *db,
                                                    uint32_t d, uint32_t i);
/* Device d's attribute `key`: 1 with its number in *value (0 for a string)
 * and its string in *text (NULL for a number; owned by db), 0 when the
 * device has no such attribute. value and text may be NULL. */
GPUPROF_AN_API int gpuprof_an_db_device_attr(const gpuprof_an_db *db,
                                             uint32_t d, const char *key,
                                             uint64_t *value,
                                             const char **text);

/* Profiles: one per thread of each process (the merged exited threads of a
 * process are one profile, flag GPUPROF_AN_THREAD_MERGED), in input order.
 * Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_db_profile_count(const gpuprof_an_db *db);
GPUPROF_AN_API const char *gpuprof_an_db_profile_host(const gpuprof_an_db *db,
                                                      uint32_t p);
GPUPROF_AN_API uint32_t gpuprof_an_db_profile_pid(const gpuprof_an_db *db,
                                                  uint32_t p);
GPUPROF_AN_API int32_t gpuprof_an_db_profile_rank(const gpuprof_an_db *db,
                                                  uint32_t p);
GPUPROF_AN_API uint64_t gpuprof_an_db_profile_tid(const gpuprof_an_db *db,
                                                  uint32_t p);
GPUPROF_AN_API const char *
gpuprof_an_db_profile_thread_name(const gpuprof_an_db *db, uint32_t p);
GPUPROF_AN_API uint32_t gpuprof_an_db_profile_flags(const gpuprof_an_db *db,
                                                    uint32_t p);
/* The profile file it came from. */
GPUPROF_AN_API const char *gpuprof_an_db_profile_file(const gpuprof_an_db *db,
                                                      uint32_t p);

/* The value of metric m at context c in profile p (profile.db; 0 when none
 * or out of range). Since 0.1. */
GPUPROF_AN_API double gpuprof_an_db_value(const gpuprof_an_db *db,
                                          uint32_t p, uint32_t c, uint32_t m);
/* Every profile's value of metric m at context c (cct.db), by ascending
 * profile: fills up to `max` pairs (either array may be NULL) and returns
 * how many there are. Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_db_context_values(
    const gpuprof_an_db *db, uint32_t c, uint32_t m, uint32_t *profiles,
    double *values, uint32_t max);
/* A statistic of metric m at context c over profiles (0 when none).
 * Since 0.1. */
GPUPROF_AN_API double gpuprof_an_db_stat(const gpuprof_an_db *db, uint32_t c,
                                         uint32_t m, gpuprof_an_stat which);

/* The top-down view of `metric` (a measured metric's name): every context
 * whose inclusive sum over profiles is at least `min_share` (0..1) of the
 * whole, beneath its parent, largest first, with its inclusive sum, share
 * and exclusive sum. `flags` must be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_topdown(
    const gpuprof_an_db *db, FILE *out, const char *metric, double min_share,
    uint32_t flags);
/* Folded stacks of `metric` for flame graphs: one line per context with a
 * non-zero exclusive sum over profiles, "root-most;...;context value"
 * (whole paths at any depth; a context whose name is empty is "<context
 * N>"); the lines re-sum to the whole. `flags` must be 0.
 * GPUPROF_E_INVALID for a metric flagged GPUPROF_AN_METRIC_ODD or
 * GPUPROF_AN_METRIC_NO_INCLUSIVE (a flame graph sums it over subtrees).
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_folded(
    const gpuprof_an_db *db, FILE *out, const char *metric, uint32_t flags);

/* The trace database (trace.db, written when the measurements hold traces,
 * GPUPROF_TRACE=1): every stream of every process, its records sorted by
 * start time (then end), with database contexts. Times are the process's
 * CLOCK_MONOTONIC ns; add realtime_offset_ns for CLOCK_REALTIME. */
typedef enum gpuprof_an_trace_kind {
    GPUPROF_AN_TRACE_REGIONS = 0, /* a CPU thread's closed regions */
    GPUPROF_AN_TRACE_OPS = 1,     /* a CPU thread's GPU API calls */
    GPUPROF_AN_TRACE_GPU = 2,     /* a GPU stream's device work */
    GPUPROF_AN_TRACE_DEPS = 3,    /* a CPU thread's dependency notes (trace
                                     format 1.3): what its GPU API calls
                                     wait for or mark; records hold start_ns
                                     (the call's start), end_ns (the target
                                     correlation id), correlation (the
                                     call's) and context (the note: what |
                                     flags << 8 | device << 16); doc/
                                     FORMATS.md. Since 0.1. */
    GPUPROF_AN_TRACE_MPI = 4,     /* a CPU thread's MPI calls (trace format
                                     1.4, libgpuprof-pmpi.so): 64 bytes a
                                     call, two records each; doc/
                                     FORMATS.md has the layout (the
                                     critical path across ranks reads
                                     them). Since 0.1. */
    GPUPROF_AN_TRACE_HOST = 5,    /* a CPU thread's host synchronization
                                     (trace format 1.5: thread create and
                                     join, barriers, contended locks,
                                     condition variables, OpenMP): 64
                                     bytes a record, two records each;
                                     doc/FORMATS.md has the layout (the
                                     critical path follows them). Since
                                     0.1. */
    GPUPROF_AN_TRACE_SAMPLES = 6  /* a CPU thread's samples (trace format
                                     1.5, GPUPROF_CPU_SAMPLING): start_ns =
                                     end_ns the sample's time, correlation
                                     its value (ns of cpu.time, cpu.wall,
                                     ...), context where it was taken.
                                     Since 0.1. */
} gpuprof_an_trace_kind;

typedef struct gpuprof_an_trace_stream {
    gpuprof_an_trace_kind kind;
    uint32_t profile; /* the CPU thread's profile; UINT32_MAX: GPU */
    uint32_t process; /* the first profile of its process */
    uint32_t device, stream; /* GPU streams; 0 for CPU threads */
    int64_t realtime_offset_ns;
    uint64_t records;
} gpuprof_an_trace_stream;

typedef struct gpuprof_an_trace_record {
    uint64_t start_ns, end_ns;
    uint64_t correlation; /* joins a launch (OPS) to its device work (GPU);
                             0 when none */
    uint32_t context;     /* UINT32_MAX when unknown */
} gpuprof_an_trace_record;

/* What the analysis could not use of the traces (meta.db): traces that
 * were damaged or empty, trace streams left out (their thread is not in
 * the profile) and the bytes ignored; any pointer may be NULL. (Records
 * of threads summed into the "exited threads (merged)" profile are that
 * profile's; from a trace older than format 1.2 their context is
 * UINT32_MAX: their trees were merged away.) Since 0.1. */
GPUPROF_AN_API void gpuprof_an_db_trace_ignored(const gpuprof_an_db *db,
                                                uint32_t *damaged_traces,
                                                uint32_t *streams_left_out,
                                                uint64_t *bytes);
/* Streams in trace.db (0 without one). Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_db_trace_stream_count(const gpuprof_an_db *db);
/* Stream i. GPUPROF_E_INVALID when there is none. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_trace_stream(
    const gpuprof_an_db *db, uint32_t i, gpuprof_an_trace_stream *out);
/* Up to `max` records of stream i from record `first`, in time order;
 * how many. Since 0.1. */
GPUPROF_AN_API uint64_t gpuprof_an_db_trace_records(
    const gpuprof_an_db *db, uint32_t i, uint64_t first,
    gpuprof_an_trace_record *out, uint64_t max);

/* What trace.db holds: per stream its kind, process, thread or GPU stream,
 * record count, busy time and span, and its records counted by context,
 * most first. `flags` must be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_trace(
    const gpuprof_an_db *db, FILE *out, uint32_t flags);

/* Writes trace.db as an OTF2 archive (Vampir, otf2-print) in directory
 * `dir`: dir/traces.otf2 is the file to open. Hosts are system tree nodes;
 * each process a location group (and each of its GPUs an accelerator
 * group); each CPU thread a location with its regions and GPU API calls,
 * each GPU stream one with its kernels, copies and other device work, all
 * as enter/leave events; names from the database's contexts. A traced
 * run's CPU samples (cpu.time, else cpu.wall) are calling-context samples
 * on their thread's location, each in its procedure's calling context
 * beneath its callers'. Times are ns
 * of CLOCK_MONOTONIC of the host that booted first (other hosts' moved
 * onto it by their realtime offsets); the clock properties give the date.
 * Every event carries the attribute "critical_path" (uint8) once the
 * critical path is computed. `dir` must be absent, an empty directory or
 * an earlier export (replaced); the archive is written beside it, read
 * back whole and only then renamed into place, so a failed export (a full
 * disk included) leaves nothing. Records that overlap their enclosing one
 * without nesting are cut to nest: one line says how many to `notes`
 * (NULL: nowhere). Errors: GPUPROF_E_NOTFOUND (no trace.db),
 * GPUPROF_E_UNAVAILABLE (built without OTF2 support, or libotf2 cannot be
 * loaded; the message says which), GPUPROF_E_EXISTS (`dir` is something
 * else), GPUPROF_E_IO, GPUPROF_E_NOMEM, GPUPROF_E_INVALID (NULL arguments,
 * flags not 0). Not concurrently with gpuprof_an_db_derive on the same
 * database. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_otf2(
    const gpuprof_an_db *db, const char *dir, FILE *notes, uint32_t flags);

/* Views of chosen metrics. TOPDOWN: the calling context tree. BOTTOMUP:
 * each procedure (a frame's function without the call site's offset, or a
 * region's, operation's or kernel's name) with what was spent in it, then
 * beneath it its callers, nearest first, each with what was spent in the
 * procedure when called along that chain. FLAT: each procedure once. Only
 * a procedure's outermost instances add to its inclusive value (recursion
 * is not counted twice). */
typedef enum gpuprof_an_view {
    GPUPROF_AN_VIEW_TOPDOWN = 0,
    GPUPROF_AN_VIEW_BOTTOMUP = 1,
    GPUPROF_AN_VIEW_FLAT = 2
} gpuprof_an_view;
#define GPUPROF_AN_VIEW_SORT_EXCLUSIVE 0x01u /* sort and cut by exclusive */

/* Prints a view of 1..16 metrics (measured or derived names): per row
 * each metric's inclusive sum over profiles, share of the whole and
 * exclusive sum, then the name indented by depth; rows sorted by the first
 * metric's inclusive (or exclusive, GPUPROF_AN_VIEW_SORT_EXCLUSIVE) sum,
 * largest first, those under `min_share` (0..1) of the whole left out with
 * what lies beneath them; `max_depth` levels (0: all). Metrics their
 * backend flagged (gpuprof_an_db_metric_flags): an odd sum's values are
 * its means over its count metric (the row's value / the row's count,
 * each variant over its own), with no share; a metric without meaningful
 * inclusive values shows "-" for them, with no share, and when it is the
 * first, rows are sorted by exclusive values (a row is still left out when
 * nothing beneath it has a value); the threshold applies to neither.
 * Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_view(
    const gpuprof_an_db *db, FILE *out, gpuprof_an_view view,
    const char *const *metrics, uint32_t nmetrics, double min_share,
    uint32_t max_depth, uint32_t flags);
/* The thread-centric view: context `c`'s inclusive and exclusive values of
 * `metric` in every profile that has one (host, rank, pid, tid, thread),
 * then the statistics over them (flagged metrics as in
 * gpuprof_an_db_print_view: an odd sum's values and statistic are its
 * means; without meaningful inclusive values "-", the profiles with an
 * exclusive value and their statistics). `flags` must be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_print_profiles(
    const gpuprof_an_db *db, FILE *out, uint32_t c, const char *metric,
    uint32_t flags);

/* The database for Python (doc/ANALYSIS.md): Hatchet's literal format,
 * hatchet.GraphFrame.from_literal(json.load(f)): a list holding the root,
 * each node {"frame": {"name", "type", "context"}, "metrics": {...},
 * "children": [...]}, every context once, children in context order. Per
 * metric M (measured and derived) the fields "M" and "M (inc)": the
 * exclusive and inclusive sum over profiles (gpuprof_an_db_stat SUM), then
 * "M (min)", "M (mean)", "M (max)" and "M (min) (inc)", "M (mean) (inc)",
 * "M (max) (inc)": the statistics of each variant over the profiles with a
 * non-zero value there (gpuprof_an_db_stat MIN, MEAN, MAX; 0 where none
 * has one). A metric flagged GPUPROF_AN_METRIC_ODD gives its means over
 * its count metric instead (a context's sum over the count's, and the
 * statistics of the profiles' means); one flagged
 * GPUPROF_AN_METRIC_NO_INCLUSIVE has no "(inc)" fields. A context whose
 * name is empty is named "<context N>". Numbers are the shortest text that reads back as the same double;
 * strings are valid UTF-8. The tree is walked without recursion (any
 * depth), in O(contexts x metrics) time plus one pass over each context's
 * values when there are derived metrics. `flags` must be 0. Errors:
 * GPUPROF_E_INVALID (NULL arguments, flags), GPUPROF_E_NOMEM,
 * GPUPROF_E_IO (writing failed; `out` then holds part of it). Any thread
 * may call it, also concurrently on one database (not with
 * gpuprof_an_db_derive). Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_hatchet(
    const gpuprof_an_db *db, FILE *out, uint32_t flags);
/* Flag of the Hatchet exports: the statistics fields too ("M (min)", ...,
 * marked by their suffix; Hatchet's squash() would re-sum them, so they
 * are left out by default). Since 0.1. */
#define GPUPROF_AN_HATCHET_STATS 0x01u
/* As gpuprof_an_db_export_hatchet, for a choice of metrics: only those
 * named in metrics[0..nmetrics) (measured or derived; all when nmetrics is
 * 0), and in any case only metrics with a non-zero value somewhere. Frames
 * are {"name", "type"} alone, so that the nodes of two runs match
 * (GraphFrame subtraction); a kernel's name leaves out its binary, which
 * is the node's "binary" field instead. Without GPUPROF_AN_HATCHET_STATS
 * each metric M has the two fields "M" and "M (inc)". GPUPROF_E_NOTFOUND
 * for an unknown metric. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_hatchet_metrics(
    const gpuprof_an_db *db, FILE *out, const char *const *metrics,
    uint32_t nmetrics, uint32_t flags);
/* A CSV table (RFC 4180) for pandas.read_csv: a header, then one row per
 * (context, profile) where the profile has a value of a measured metric,
 * by context, then profile: context, parent (empty for the root), kind,
 * name ("<context N>" when empty), profile, host, rank, pid, tid, thread,
 * then per metric M the row's exclusive and inclusive value ("M", "M
 * (inc)") and the context's statistics over profiles as in
 * gpuprof_an_db_export_hatchet ("M (min)", "M (mean)", "M (max)", "M (min)
 * (inc)", "M (mean) (inc)", "M (max) (inc)"; the same on each row of a
 * context; flagged metrics as there: odd sums as the profile's mean, no
 * "(inc)" columns without meaningful inclusive values). Fields holding a
 * comma, quote or line break are quoted. Each
 * context's values are read once from cct.db (twice with derived
 * metrics): the time is O(values + rows x metrics), not O(contexts x
 * profiles). `flags`, errors and threads as for
 * gpuprof_an_db_export_hatchet. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_table(
    const gpuprof_an_db *db, FILE *out, uint32_t flags);
/* Flag of gpuprof_an_db_export_table: the long form instead, the header
 * "context,profile,metric,value" and one row per non-zero value, by
 * context, then profile, then metric; per metric M the exclusive value is
 * named "M", the inclusive one "M (inc)". Without it, metrics that no row
 * has a non-zero value of are left out of the table. Since 0.1. */
#define GPUPROF_AN_TABLE_LONG 0x01u

/* Adds a derived metric (seed 000 §7.1) to an open database: `formula`
 * over metric names with + - * /, unary minus, numbers and parentheses,
 * e.g. "(gpu.time - blame.cpu_idle) / gpu.time", and the functions
 * max(a, b), min(a, b) and whole(M) (M's inclusive sum over profiles at
 * the program root: "M / whole(M)" is a share of the run); a name with
 * other characters than letters, digits, '_' and '.' goes in double quotes.
 * Division by zero gives 0. It gets two metric ids (inclusive and
 * exclusive, each computed from its operands' same variant) after the
 * existing ones, found by name like a measured metric, and every query
 * and view takes it: gpuprof_an_db_value evaluates the formula at one
 * (profile, context); gpuprof_an_db_context_values gives its non-zero
 * values where an operand has one; gpuprof_an_db_stat SUM is the formula
 * over the operands' sums (a ratio of totals), the other statistics are
 * over its per-profile values. Its unit is the operands' when they share
 * one and only + and - combine them, else a count. Later formulas may use
 * it. Numbers are decimal; names are at most 255 bytes; parentheses and
 * unary minuses nest at most 64 deep. GPUPROF_E_INVALID for a syntax
 * error or a name taken, GPUPROF_E_NOTFOUND for an unknown metric; the
 * message names the formula, what is wrong and its byte offset ("formula
 * 'a +': a metric name, number or '(' expected at offset 3"). Not
 * concurrently with other calls on the same database. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_derive(gpuprof_an_db *db,
                                                   const char *name,
                                                   const char *formula);
/* Adds the importance metrics of seed 001 as derived metrics, from what
 * the database measures (a term whose metric is missing is left out):
 *   cpu_importance      max(CPU_TIME - GPU_API_TIME, 0) / EXECUTION_TIME:
 *                       CPU_TIME = region.time.excl rolled up (inclusive):
 *                       the wall time of the regions in the subtree, each
 *                       counted once (there is no CPU-time sampling; the
 *                       roll-up of region.time.incl would count a nested
 *                       region again in every enclosing one),
 *                       GPU_API_TIME = api.time (operations the host did:
 *                       waits, builds), EXECUTION_TIME =
 *                       whole(region.time.excl), all threads' region time;
 *   gpu_api_importance  (gpu.time + api.time) / their whole: each GPU
 *                       operation's share (device time, or host time for
 *                       the host-done ones); in the flat view, per
 *                       operation kind (kernel launch, copies, syncs).
 * GPUPROF_E_NOTFOUND when the database has none of those metrics; adding
 * them twice adds nothing. `flags` must be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_importance(gpuprof_an_db *db,
                                                           uint32_t flags);

/* Adds the PC-sampling metrics of seed 001 as derived metrics:
 *   gpu.pc.issue_rate    (gpu.pc.samples - gpu.pc.latency_samples) /
 *                        gpu.pc.samples: the share of samples in which the
 *                        scheduler issued (0 where a context has none);
 *   gpu.pc.sample_share  gpu.pc.samples / whole(gpu.pc.samples).
 * GPUPROF_E_NOTFOUND when the database holds no PC samples (none measured:
 * GPUPROF_CUPTI_PC_SAMPLING); adding them twice adds nothing. `flags` must
 * be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_pc_metrics(gpuprof_an_db *db,
                                                           uint32_t flags);

/* ---- why the program waits (seed 004; doc/ANALYSIS.md "Wait states and
 * the critical path") ----------------------------------------------------
 * From trace.db (GPUPROF_TRACE=1; dependency notes since trace format 1.3)
 * each process's event dependency graph: its CPU threads (CPU work between
 * GPU API calls, split where the innermost region changes, and the calls)
 * and its GPU streams (device work), with program order, launches,
 * blocking and polling synchronization, stream waits for events and the
 * legacy default stream. On it: wait states with their blame, GPU
 * idleness blame, the critical path and a projection with chosen
 * activities faster. The processes of an MPI run whose traces hold MPI
 * calls (libgpuprof-pmpi.so, trace format 1.4) are one entry: their
 * graphs joined by their messages and collectives, so its path, waits and
 * projection cross ranks. */
typedef struct gpuprof_an_cpath gpuprof_an_cpath;

/* Builds the analysis of every process in db's trace.db; `fn` (NULL:
 * none) is called per process ("cpath", done, total). db must outlive it.
 * GPUPROF_E_NOTFOUND without trace.db, GPUPROF_E_CORRUPT naming the
 * process when the trace contradicts itself (a note naming a call it does
 * not hold, a cycle): never a wrong path. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_new(const gpuprof_an_db *db,
                                                   gpuprof_an_progress_fn fn,
                                                   void *user,
                                                   gpuprof_an_cpath **out);
GPUPROF_AN_API void gpuprof_an_cpath_free(gpuprof_an_cpath *cp);
/* Processes analysed (an MPI run's ranks count once); process i's first
 * database profile (an MPI run's: its first rank's). Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_cpath_process_count(const gpuprof_an_cpath *cp);
GPUPROF_AN_API uint32_t gpuprof_an_cpath_process(const gpuprof_an_cpath *cp,
                                                 uint32_t i);
/* The MPI ranks entry i joins (0: not an MPI run). Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_cpath_rank_count(const gpuprof_an_cpath *cp, uint32_t i);
/* The MPI records entry i's joining left out (doc/ANALYSIS.md "Across MPI
 * ranks": sends and receives that pair with none, records on unknown
 * communicators, postings never seen completing, completions without
 * their posting): their edges are missing, the rest is joined. Returns how
 * many (0: none, or not an MPI run); why (NULL: not wanted) gets the
 * counts by reason in words, NUL-terminated, cut to size. Since 0.1. */
GPUPROF_AN_API uint64_t gpuprof_an_cpath_mpi_left_out(
    const gpuprof_an_cpath *cp, uint32_t i, char *why, size_t size);

/* Wait-state patterns (seed 004 §3). The OpenCL counterparts count under
 * the same kind: clFinish and clWaitForEvents as BLAME_KERNEL or
 * BLAME_SYNC, an event wait list as STREAM_WAIT. The host threads' (trace
 * format 1.5: pthreads, OpenMP; doc/ANALYSIS.md "Host threads") are
 * blamed on what the late thread ran meanwhile. */
typedef enum gpuprof_an_wait_kind {
    GPUPROF_AN_WAIT_BLAME_KERNEL = 0, /* a blocking wait for device work */
    GPUPROF_AN_WAIT_BLAME_SYNC = 1,   /* a late synchronization */
    GPUPROF_AN_WAIT_EVENT_QUERY = 2,  /* polling an event */
    GPUPROF_AN_WAIT_STREAM_QUERY = 3, /* polling a stream */
    GPUPROF_AN_WAIT_NULL_STREAM = 4,  /* the legacy default stream */
    GPUPROF_AN_WAIT_STREAM_WAIT = 5,  /* a stream waiting for an event */
    GPUPROF_AN_WAIT_LATE_SENDER = 6,  /* MPI: a receive before its send */
    GPUPROF_AN_WAIT_LATE_RECEIVER = 7, /* MPI: a blocking send before its
                                          receive was posted */
    GPUPROF_AN_WAIT_AT_COLLECTIVE = 8, /* MPI: a collective's member before
                                          the last one */
    GPUPROF_AN_WAIT_AT_JOIN = 9,       /* a join (pthread_join, OpenMP
                                          taskwait) before the thread or
                                          task ended */
    GPUPROF_AN_WAIT_AT_BARRIER = 10,   /* a barrier member (pthreads,
                                          OpenMP) before the last one */
    GPUPROF_AN_WAIT_LOCK_CONTENTION = 11, /* a mutex held by another
                                             thread */
    GPUPROF_AN_WAIT_AT_CONDITION = 12, /* a condition wait before its
                                          signal */
    GPUPROF_AN_WAIT_AT_FORK = 13,      /* an OpenMP worker idle before its
                                          parallel region forked */
    GPUPROF_AN_WAIT_KINDS = 14
} gpuprof_an_wait_kind;
/* Its name ("BlameKernel", ...). Since 0.1. */
GPUPROF_AN_API const char *gpuprof_an_wait_kind_name(gpuprof_an_wait_kind k);

typedef struct gpuprof_an_wait_totals {
    uint64_t count[GPUPROF_AN_WAIT_KINDS];
    uint64_t ns[GPUPROF_AN_WAIT_KINDS];
    uint64_t opencl[GPUPROF_AN_WAIT_KINDS]; /* of count: OpenCL calls */
} gpuprof_an_wait_totals;
/* Process i's wait states by kind. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_waits(
    const gpuprof_an_cpath *cp, uint32_t i, gpuprof_an_wait_totals *out);

typedef enum gpuprof_an_activity_kind {
    GPUPROF_AN_ACTIVITY_CPU = 0,  /* CPU work (between GPU API calls) */
    GPUPROF_AN_ACTIVITY_CALL = 1, /* a GPU API call */
    GPUPROF_AN_ACTIVITY_GPU = 2,  /* device work on a stream */
    GPUPROF_AN_ACTIVITY_MPI = 3,  /* an MPI call */
    GPUPROF_AN_ACTIVITY_HOST = 4  /* host synchronization: a join, a
                                     barrier, a blocked lock, a condition
                                     wait, OpenMP's; or a moment such as a
                                     thread's start or an unlock (no
                                     length) */
} gpuprof_an_activity_kind;

/* One activity on the critical path, in time order. */
typedef struct gpuprof_an_path_step {
    gpuprof_an_activity_kind kind;
    uint32_t context; /* database context */
    uint32_t profile; /* the thread's (device work: the launching thread's;
                         UINT32_MAX unknown) */
    uint32_t device, stream; /* device work */
    uint64_t start_ns, end_ns; /* the activity (projected times in a
                                  projection) */
    uint64_t path_ns;          /* its part of the path */
    uint64_t path_from_ns;     /* where that part begins */
    int32_t rank;              /* the MPI rank it ran on; -1: none */
    uint32_t mpi_op;           /* an MPI call: what it did first
                                  (gpuprof_mpi_op of gpuprof_backend.h);
                                  host synchronization: its op (doc/
                                  FORMATS.md HOST_RECORDS: 4 join, 5
                                  barrier, 6 lock, ...) | its flags << 8
                                  (1: OpenMP); else 0 */
    int32_t peer;              /* ... and with whom (a rank; -1 none) */
} gpuprof_an_path_step;

/* Process i's critical path: its length (ns) and its steps. Since 0.1. */
GPUPROF_AN_API uint64_t gpuprof_an_cpath_length(const gpuprof_an_cpath *cp,
                                                uint32_t i);
GPUPROF_AN_API uint64_t gpuprof_an_cpath_steps(const gpuprof_an_cpath *cp,
                                               uint32_t i, uint64_t first,
                                               gpuprof_an_path_step *out,
                                               uint64_t max);
/* Process i's run time: first record to last (ns). Since 0.1. */
GPUPROF_AN_API uint64_t gpuprof_an_cpath_run_ns(const gpuprof_an_cpath *cp,
                                                uint32_t i);
/* A step's name: the kernel (device work), the operation (a call), the
 * region (CPU work), the MPI function (an MPI call), the host
 * synchronization and its region ("pthread_join in simulate"). CPU work
 * that CPU samples saw (a traced run with GPUPROF_CPU_SAMPLING) is named
 * by the procedure most of them were in, in its region: "relax (app) in
 * solve", or "relax (app)" outside any region. Since 0.1. */
GPUPROF_AN_API const char *gpuprof_an_cpath_step_name(
    const gpuprof_an_cpath *cp, const gpuprof_an_path_step *s, char *buf,
    size_t size);

/* A procedure CPU samples saw in a step (gpuprof_an_cpath_step_samples). */
typedef struct gpuprof_an_sampled {
    uint32_t context; /* the function, inlined function or frame they were
                         in (a database context) */
    uint32_t samples; /* sample records */
    uint64_t ns;      /* their time: cpu.time, else cpu.wall */
} gpuprof_an_sampled;

/* The procedures the CPU samples of a CPU step's thread saw during its part
 * of the path (cpu.time samples, else cpu.wall ones), the most time first:
 * up to max into out; returns how many there are (0: not CPU work, no
 * samples there, or a run traced without CPU samples). What `report
 * --critical-path` prints beneath each such step. The measured path's
 * steps only: a projection's steps have replayed times, which the samples'
 * times do not follow. The samples are read once with the analysis, so a
 * call costs a binary search and the samples of the step. Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_cpath_step_samples(
    const gpuprof_an_cpath *cp, const gpuprof_an_path_step *s,
    gpuprof_an_sampled *out, uint32_t max);

/* Adds to db (the one cp was built on) four metrics, ns per context and
 * profile like measured ones, so every view and export shows them:
 *   wait.time       waiting time of the contexts that waited;
 *   wait.blame      the waiting time each context caused;
 *   gpu.idle_blame  GPU idleness blamed on what the CPU threads ran;
 *   cpath.time      time on the critical path.
 * Adding them twice adds nothing. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_cpath_metrics(
    gpuprof_an_db *db, const gpuprof_an_cpath *cp);

/* The projection: replays each process with the activities the rules
 * name made faster ("kernel:NAME=F", "region:NAME=F", "context:ID=F": F
 * times faster) and returns the result as an analysis of its own (its run
 * time and critical path are the projected ones; its waits are the
 * measured ones). *touched (may be NULL): activities the rules matched.
 * Kernels that ran at once on one device either overlap freely or share
 * the device (gpuprof_an_device_model; doc/ANALYSIS.md "Devices in the
 * projection"): decided per device from the trace, or by a rule
 * "device:auto", "device:free" or "device:shared". Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_project(
    const gpuprof_an_cpath *cp, const char *const *rules, uint32_t nrules,
    uint64_t *touched, gpuprof_an_cpath **out);

/* How a projection treated the kernels of one device of one process. */
typedef struct gpuprof_an_device_model {
    uint32_t process, device; /* the device's process (profile id), number */
    uint32_t kernels;         /* kernels measured on it */
    uint32_t evidence;        /* kernels (contexts) measured both alone and
                                 mostly beside others */
    double slowdown;          /* their median duration beside others over
                                 alone (0: no evidence) */
    uint32_t rounds;          /* shared: replays until durations settled
                                 (64: still moving by over 1 us) */
    uint8_t filled;           /* every kernel whose launch size is known
                                 launched as many work-groups as the device
                                 holds at once (what decides without
                                 evidence) */
    uint8_t shared;           /* 1: kernels running at once shared the
                                 device's speed equally; 0: each ran at its
                                 measured speed (free overlap) */
    uint8_t forced;           /* a device: rule decided, not the trace */
} gpuprof_an_device_model;

/* A projection's device models, up to max into out (may be NULL); returns
 * how many there are (0: not a projection, or no kernels). Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_cpath_device_models(
    const gpuprof_an_cpath *cp, gpuprof_an_device_model *out, uint32_t max);

/* Reports: wait states by kind and the contexts they blame most; the
 * critical path, one line per activity with its name and share; a
 * projection against the measured run. `flags` must be 0. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_waits(
    const gpuprof_an_cpath *cp, FILE *out, uint32_t flags);
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_path(
    const gpuprof_an_cpath *cp, FILE *out, uint32_t flags);
GPUPROF_AN_API gpuprof_status gpuprof_an_cpath_print_projection(
    const gpuprof_an_cpath *measured, const gpuprof_an_cpath *projected,
    FILE *out, uint32_t flags);

/* ---- Advice for GPU kernels (seed 003: GPA) --------------------------------
 * From the PC samples of each kernel (GPUPROF_CUPTI_PC_SAMPLING), read
 * from the profile files the database was made from, and the kernel's
 * code (nvdisasm on the cubin saved under the measurement's binaries/:
 * $GPUPROF_NVDISASM, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH): stalls
 * blamed on the instructions that caused them, then optimizations ranked
 * by estimated speedup, each with a hint and its hotspots (source line,
 * loop, function), and the kernel's reconstructed GPU calling contexts
 * (device functions, recursion as one node, samples apportioned to call
 * sites); from each kernel's launches and its device's limits (profile
 * section DEVICES), GPA's parallelism optimizers (Block Increase, Thread
 * Increase, from occupancy). doc/ANALYSIS.md says how. Without nvdisasm
 * the advice is per kernel, from the stall reasons that name their cause,
 * and gpuprof_an_advice_note says so. With a trace,
 * gpuprof_an_advice_project ranks every suggestion by what the whole run
 * would gain. */
typedef struct gpuprof_an_advice gpuprof_an_advice;

/* Computes the advice for every kernel of `db` with PC samples. `flags`
 * must be 0. GPUPROF_E_INVALID (NULL arguments, flags), GPUPROF_E_NOTFOUND
 * when no kernel has PC samples, GPUPROF_E_IO/GPUPROF_E_CORRUPT when a
 * profile file the database names cannot be read (the message names it),
 * GPUPROF_E_NOMEM. Not concurrently with gpuprof_an_db_derive on the same
 * database. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_advise(const gpuprof_an_db *db,
                                                   uint32_t flags,
                                                   gpuprof_an_advice **out);
/* Releases advice; NULL is allowed. Since 0.1. */
GPUPROF_AN_API void gpuprof_an_advice_free(gpuprof_an_advice *a);
/* What the analysis lacked ("" when nothing: e.g. nvdisasm not found).
 * Since 0.1. */
GPUPROF_AN_API const char *
gpuprof_an_advice_note(const gpuprof_an_advice *a);
/* Kernels, by descending samples: symbol name (mangled), cubin path,
 * PC samples, and whether the advice is per instruction (1) or per kernel
 * only (0). Out-of-range indices give NULL / 0. Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_advice_kernel_count(const gpuprof_an_advice *a);
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_name(const gpuprof_an_advice *a, uint32_t k);
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_binary(const gpuprof_an_advice *a, uint32_t k);
GPUPROF_AN_API double
gpuprof_an_advice_kernel_samples(const gpuprof_an_advice *a, uint32_t k);
GPUPROF_AN_API int
gpuprof_an_advice_kernel_detailed(const gpuprof_an_advice *a, uint32_t k);
/* What kernel k's advice lacked or did, one sentence after another
 * separated by "; " ("" when nothing): its launch and occupancy, samples
 * filed after an EXIT and credited to it, stall reasons not advised on
 * without the code, why there is no parallelism advice. NULL out of range.
 * Since 0.1. */
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_note(const gpuprof_an_advice *a, uint32_t k);
/* A number of kernel k, by name (NAN when unknown or out of range):
 * "samples", "latency_samples", "after_exit_samples" (filed after an EXIT,
 * credited to it), "launches", and as means over the launches "blocks",
 * "threads_per_block", "registers" (per thread), "shared_bytes" (per
 * block); of its device "sm_count"; its occupancy "warps_per_sm" (resident
 * at once), "max_warps_per_sm", "sms_busy" (SMs its blocks reach); after
 * gpuprof_an_advice_project "path_share" (its device work's share of the
 * critical path). Since 0.1. */
GPUPROF_AN_API double gpuprof_an_advice_kernel_value(const gpuprof_an_advice *a,
                                                     uint32_t k,
                                                     const char *what);
/* What limits kernel k's occupancy: "warps per SM", "registers", "shared
 * memory", "blocks per SM" or "nothing" (unknown). Since 0.1. */
GPUPROF_AN_API const char *
gpuprof_an_advice_kernel_limit(const gpuprof_an_advice *a, uint32_t k);
/* Suggestions of kernel k: the confident ones first (resting on at least
 * 10 samples), each group by descending estimated speedup: optimizer
 * name (seed 003 Table 2, "Warp Balance", "Thread Increase"), kind
 * ("stall elimination", "latency hiding", "parallelism"), estimated
 * speedup (>1), matched samples (0 for parallelism), hint.
 * Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_advice_count(const gpuprof_an_advice *a, uint32_t k);
GPUPROF_AN_API const char *
gpuprof_an_advice_name(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API const char *
gpuprof_an_advice_kind(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API double
gpuprof_an_advice_speedup(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API double
gpuprof_an_advice_matched(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API const char *
gpuprof_an_advice_hint(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
/* The samples suggestion s's estimate rests on (the matched ones; the
 * kernel's for parallelism), and whether that is enough for a confident
 * estimate (1: at least 10; below, one sample more or less moves it by
 * over 30 %). Since 0.1. */
GPUPROF_AN_API double
gpuprof_an_advice_support(const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API int
gpuprof_an_advice_confident(const gpuprof_an_advice *a, uint32_t k,
                            uint32_t s);
/* After gpuprof_an_advice_project: the share of the whole run (0..1) the
 * projection saves with kernel k that much faster; NAN when not projected.
 * Since 0.1. */
GPUPROF_AN_API double
gpuprof_an_advice_run_gain(const gpuprof_an_advice *a, uint32_t k,
                           uint32_t s);
/* Hotspots of suggestion s (at most 3, most matched samples first):
 * the instruction's offset in the kernel's section, its source
 * ("kernels.cu:12", "f.cu:3 [inlined g(int)]"), loop ("loop at
 * kernels.cu:11" or ""), function (demangled), instruction text, and the
 * samples matched there. Since 0.1. */
GPUPROF_AN_API uint32_t gpuprof_an_advice_hotspot_count(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s);
GPUPROF_AN_API uint64_t gpuprof_an_advice_hotspot_offset(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_source(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_loop(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_function(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
GPUPROF_AN_API const char *gpuprof_an_advice_hotspot_instruction(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
GPUPROF_AN_API double gpuprof_an_advice_hotspot_samples(
    const gpuprof_an_advice *a, uint32_t k, uint32_t s, uint32_t h);
/* The reconstructed GPU calling context tree of kernel k (seed 000
 * §6.3): node 0 is the kernel, parents precede children; each node's
 * function (demangled; a recursive cycle is one node, flagged), parent
 * (UINT32_MAX for the kernel) and inclusive samples apportioned
 * gprof-style. Empty when the kernel calls no device function. Since 0.1. */
GPUPROF_AN_API uint32_t
gpuprof_an_advice_context_count(const gpuprof_an_advice *a, uint32_t k);
GPUPROF_AN_API uint32_t gpuprof_an_advice_context_parent(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c);
GPUPROF_AN_API const char *gpuprof_an_advice_context_name(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c);
GPUPROF_AN_API double gpuprof_an_advice_context_samples(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c);
GPUPROF_AN_API int gpuprof_an_advice_context_recursive(
    const gpuprof_an_advice *a, uint32_t k, uint32_t c);
/* Ranks the suggestions of every kernel together by what the whole run
 * would gain: each of each kernel's `top` best suggestions (0: all) is
 * projected on `cp` (gpuprof_an_cpath_project with the kernel's contexts
 * made as many times faster as estimated), giving its run gain
 * (gpuprof_an_advice_run_gain) and the kernel's share of the critical
 * path ("path_share"). `db` is the database both were made from; `flags`
 * must be 0. Without it (no trace) suggestions rank per kernel, kernels by
 * samples. Not thread-safe on the same advice. Since 0.1. */
GPUPROF_AN_API gpuprof_status
gpuprof_an_advice_project(gpuprof_an_advice *a, const gpuprof_an_db *db,
                          const gpuprof_an_cpath *cp, uint32_t top,
                          uint32_t flags);
/* The i-th suggestion of that ranking, best first (confident ones first,
 * then by run gain, then estimated speedup): 1 with its kernel *k and
 * suggestion *s, 0 past the last or before gpuprof_an_advice_project.
 * Since 0.1. */
GPUPROF_AN_API int gpuprof_an_advice_ranked(const gpuprof_an_advice *a,
                                            uint32_t i, uint32_t *k,
                                            uint32_t *s);
/* The advice as text: with a whole-program ranking its `top` best
 * suggestions across kernels (0: all) with what the run would gain, then
 * per kernel its `top` best suggestions with hints and hotspots, notes and
 * calling contexts; without one, a line saying the suggestions rank per
 * kernel. `flags` must be 0. GPUPROF_E_IO when writing fails. Since 0.1. */
GPUPROF_AN_API gpuprof_status gpuprof_an_advice_print(
    const gpuprof_an_advice *a, FILE *out, uint32_t top, uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* GPUPROF_ANALYSIS_H */
