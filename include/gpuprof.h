/*
 * gpuprof.h - the public, ABI-stable interface of libgpuprof.
 *
 * libgpuprof measures CPU+GPU applications from inside the process. A
 * program calls gpuprof_init() early in main(), brackets the phases it cares
 * about with gpuprof_region_begin()/gpuprof_region_end(), and runs as usual.
 * Each process writes one profile file into a measurement directory; the
 * `gpuprof` command and libgpuprof-analysis read them back.
 *
 * Contract (see doc/ABI.md): this header compiles as C99 and as C++. Every
 * function returns a gpuprof_status or a documented value; no function ever
 * prints, aborts or exits. Structures the caller fills start with a `size`
 * field and have an _INIT macro; fields are only ever appended. Enumerator
 * values are pinned and never reused. "Since" notes give the first release
 * that had each entry point.
 */
#ifndef GPUPROF_H
#define GPUPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define GPUPROF_VERSION_MAJOR 0
#define GPUPROF_VERSION_MINOR 1
#define GPUPROF_VERSION_PATCH 0
/* One number that orders releases: MAJOR*10000 + MINOR*100 + PATCH. */
#define GPUPROF_VERSION_NUMBER                                                  \
    (GPUPROF_VERSION_MAJOR * 10000 + GPUPROF_VERSION_MINOR * 100 +             \
     GPUPROF_VERSION_PATCH)
#define GPUPROF_STR_(x) #x
#define GPUPROF_STR(x) GPUPROF_STR_(x)
#define GPUPROF_VERSION_STRING                                                  \
    GPUPROF_STR(GPUPROF_VERSION_MAJOR)                                          \
    "." GPUPROF_STR(GPUPROF_VERSION_MINOR) "." GPUPROF_STR(GPUPROF_VERSION_PATCH)

#if defined(GPUPROF_BUILDING_LIBRARY) && defined(__GNUC__)
#define GPUPROF_API __attribute__((visibility("default")))
#else
#define GPUPROF_API
#endif

/* The version of the library the program runs with (GPUPROF_VERSION_NUMBER
 * of the build), which may be newer than the header it was compiled with.
 * Any thread, any time, async-signal-safe. Since 0.1. */
GPUPROF_API unsigned gpuprof_version(void);
/* The same as a string such as "0.1.0"; static storage, never NULL.
 * Any thread, any time, async-signal-safe. Since 0.1. */
GPUPROF_API const char *gpuprof_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/* Values are pinned: they never change and are never reused. */
typedef enum gpuprof_status {
    GPUPROF_OK = 0,
    GPUPROF_E_INVALID = 1,     /* an argument is NULL, empty or out of range */
    GPUPROF_E_STATE = 2,       /* wrong call order: not initialized, finalized */
    GPUPROF_E_NOMEM = 3,       /* an allocation failed; nothing was lost */
    GPUPROF_E_IO = 4,          /* a file could not be written or read */
    GPUPROF_E_UNBALANCED = 5,  /* region end does not match the open region */
    GPUPROF_E_NOTFOUND = 6,    /* no such name (stat, backend, region) */
    GPUPROF_E_UNAVAILABLE = 7, /* a backend's runtime or device is missing */
    GPUPROF_E_VERSION = 8,     /* unsupported struct size or ABI version */
    GPUPROF_E_CORRUPT = 9,     /* a file is damaged or truncated */
    GPUPROF_E_EXISTS = 10,     /* already initialized / already registered */
    GPUPROF_E_LIMIT = 11,      /* a configured or built-in limit was reached */
    GPUPROF_E_INTERNAL = 12    /* a bug in libgpuprof; please report it */
} gpuprof_status;

/* A short English description of a status; never NULL, static storage.
 * Unknown values give "unknown status". Any thread. Since 0.1. */
GPUPROF_API const char *gpuprof_strerror(gpuprof_status status);

/* The message of the last failing call made by the calling thread, with
 * details such as a file name, errno text or a vendor's error code; "" when
 * the thread has seen no error. The string belongs to the library and stays
 * valid until the thread's next libgpuprof call. Any thread. Since 0.1. */
GPUPROF_API const char *gpuprof_last_error(void);

/* ------------------------------------------------------------------------ */
/* Logging                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum gpuprof_log_level {
    GPUPROF_LOG_OFF = 0,
    GPUPROF_LOG_ERROR = 1, /* measurements could be lost (disk full, ...) */
    GPUPROF_LOG_WARN = 2,  /* something is degraded (backend unavailable) */
    GPUPROF_LOG_INFO = 3,  /* one line per important event (file written) */
    GPUPROF_LOG_DEBUG = 4
} gpuprof_log_level;

/* Receives every message at or below the configured level. `msg` is one line
 * without a trailing newline, valid only during the call. It may be called
 * from any thread, including threads of the library and of GPU runtimes, and
 * concurrently; it must not call back into libgpuprof. */
typedef void (*gpuprof_log_fn)(gpuprof_log_level level, const char *msg,
                               void *user);

/* Installs the log callback (NULL restores the default: lines prefixed with
 * "gpuprof: " written to standard error with write(2)) and the level (a
 * negative level keeps the current one, which defaults to $GPUPROF_LOG or
 * GPUPROF_LOG_ERROR). May be called before gpuprof_init and at any time after;
 * messages in flight may still reach the previous callback. Any thread.
 * Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_set_log(gpuprof_log_fn fn, void *user,
                                           int level);

/* ------------------------------------------------------------------------ */
/* Life cycle                                                                */
/* ------------------------------------------------------------------------ */

/* Tri-state for options: take the value from the environment (or default). */
#define GPUPROF_UNSET (-1)

/* Option flags (gpuprof_options.flags); pinned bit values. */
#define GPUPROF_OPT_IGNORE_ENV 0x1u /* do not read GPUPROF_* variables */
/* This init is made on the program's behalf by a launcher (the preload
 * library of `gpuprof run`): when the program later calls gpuprof_init
 * itself, that call joins this measurement (see gpuprof_init). Since 0.1. */
#define GPUPROF_OPT_JOINABLE 0x2u

/* Options for gpuprof_init. Fill with GPUPROF_OPTIONS_INIT, then set fields.
 * A field left NULL or GPUPROF_UNSET takes its value from the environment
 * variable named beside it, and from the built-in default when that is unset
 * too. Fields are only ever appended; `size` tells the library which ones
 * the caller knows. Strings are copied during gpuprof_init. */
typedef struct gpuprof_options {
    size_t size;            /* sizeof(gpuprof_options) */
    uint32_t flags;         /* GPUPROF_OPT_*; 0 by default */
    const char *output_dir; /* GPUPROF_OUTPUT: measurement directory */
    const char *backends;   /* GPUPROF_BACKENDS: "auto", "none", or a list */
    int32_t start_paused;   /* GPUPROF_START_PAUSED: 1 = begin stopped */
    int32_t trace;          /* GPUPROF_TRACE: 1 = record traces */
    int32_t trace_threads;  /* GPUPROF_TRACE_THREADS: tracing threads */
    int64_t flush_period_ms;/* GPUPROF_FLUSH_PERIOD_MS: 0 = only at the end */
    int32_t log_level;      /* GPUPROF_LOG: off|error|warn|info|debug or 0-4 */
    int32_t rank;           /* GPUPROF_RANK, else MPI launcher variables */
    int32_t clock;          /* GPUPROF_CLOCK: 0 = auto, 1 = monotonic, 2 = tsc */
    int32_t keep_threads;   /* GPUPROF_KEEP_THREADS: exited threads kept
                               apart (default 256); later ones are merged
                               into one "exited threads (merged)" profile */
    int32_t signals;        /* GPUPROF_SIGNALS: 1 (default) = on SIGTERM or
                               SIGINT, if the program left their default
                               action, write the final profile, then die of
                               the signal as before; 0 = never touch them */
    int64_t channel_items;  /* GPUPROF_CHANNEL_ITEMS: records one channel of
                               the GPU pipeline may hold while its consumer
                               lags (default 1048576, at least 16); beyond
                               it records are dropped and counted in
                               "records.dropped" -- the program never waits */
    const char *cpu_sampling; /* GPUPROF_CPU_SAMPLING: CPU samples of every
                               thread, "off" or SOURCE@PERIOD[,...] with
                               SOURCE cputime or realtime (e.g.
                               "cputime@5ms,realtime@20ms"; README);
                               since 0.1 */
} gpuprof_options;

#define GPUPROF_OPTIONS_INIT                                                    \
    {                                                                           \
        sizeof(gpuprof_options), 0u, NULL, NULL, GPUPROF_UNSET, GPUPROF_UNSET, \
            GPUPROF_UNSET, GPUPROF_UNSET, GPUPROF_UNSET, GPUPROF_UNSET,       \
            GPUPROF_UNSET, GPUPROF_UNSET, GPUPROF_UNSET, GPUPROF_UNSET, NULL   \
    }

/* Starts measurement of this process. `opts` may be NULL ("everything from
 * the environment"); it is only read during the call. Measuring begins at
 * once unless start_paused is set. The library registers an atexit handler
 * that calls gpuprof_finalize if the program does not.
 * Returns GPUPROF_E_EXISTS if already initialized, GPUPROF_E_STATE after
 * gpuprof_finalize (a process is measured once), GPUPROF_E_VERSION for a
 * struct size it does not understand, GPUPROF_E_INVALID for a bad value,
 * GPUPROF_E_IO when the output directory cannot be created. A backend that
 * is unavailable is logged and skipped; it does not fail init.
 * Joining: when a launcher initialized first with GPUPROF_OPT_JOINABLE (a
 * program run by `gpuprof run` that calls gpuprof_init itself), the
 * program's first init returns GPUPROF_OK and joins that measurement: the
 * same profile file in the same output directory, its regions and GPU
 * work measured there, its gpuprof_start/stop/flush/finalize acting on it.
 * Its options (and the environment) are read as init reads them and
 * compared with the running configuration: start_paused and log_level
 * apply (the measurement pauses or resumes, the level changes); every
 * other setting that differs cannot apply any more and is logged at
 * GPUPROF_LOG_WARN, naming it, the value asked and the value in use. Bad
 * options fail as they always do; a further init returns
 * GPUPROF_E_EXISTS.
 * Call once, from one thread, before or while other threads run.
 * Not async-signal-safe. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_init(const gpuprof_options *opts);

/* Resume / pause measurement. While paused, region calls cost a load and a
 * branch, and backends stop recording. Pausing inside a region and resuming
 * elsewhere can make region ends unbalanced (they are counted). Idempotent.
 * GPUPROF_E_STATE before init or after finalize. Any thread. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_start(void);
GPUPROF_API gpuprof_status gpuprof_stop(void);

/* Writes a new complete generation of this process's profile now: the file
 * appears atomically and replaces the previous generation, so a process
 * killed later leaves this one readable. Regions still open are included
 * with the time they have run so far, flagged as open. Blocks the calling
 * thread while writing; other threads keep running. GPUPROF_E_IO (details in
 * gpuprof_last_error) if the file cannot be written; measurements are kept
 * and the next flush tries again. Any thread. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_flush(void);

/* Stops measurement for good, closes regions still open (flagged in the
 * profile), writes the final generation and releases backends. Later calls
 * to any function return GPUPROF_E_STATE. Returns the status of the final
 * write. Any thread, once; called from atexit if the program does not.
 * Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_finalize(void);

/* The path of the profile file this process writes (valid after init; the
 * name changes in a child after fork). Copies at most `size` bytes including
 * the terminating NUL into `buf`. GPUPROF_E_LIMIT if it did not fit.
 * Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_output_path(char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Regions                                                                   */
/* ------------------------------------------------------------------------ */

/* Opens a region named `name` (copied on first use; any bytes up to the NUL)
 * beneath the calling thread's innermost open region. Regions nest; the
 * region tree is per thread and merged by the analysis. Counts a visit.
 * GPUPROF_E_INVALID for NULL or "", GPUPROF_E_STATE outside init..finalize
 * (nothing recorded), GPUPROF_OK while paused (nothing recorded).
 * Calling thread only; wait-free after the first use of a name in a context.
 * Not async-signal-safe. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_region_begin(const char *name);

/* Closes the innermost open region, which must be named `name`. If it is
 * not, GPUPROF_E_UNBALANCED is returned and `regions.unbalanced` counted: an
 * end naming an outer open region closes the inner ones too (they are
 * flagged); an end naming no open region changes nothing. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_region_end(const char *name);

/* A pre-registered region name for hot loops: no string hashing per call.
 * Handles are valid for the life of the process, may be registered before
 * gpuprof_init, and are shared by all threads. 0 is never a valid handle. */
typedef uint32_t gpuprof_region;

/* Registers `name` and stores its handle in *out. Registering the same name
 * again gives the same handle. Any thread, concurrently. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_region_register(const char *name,
                                                   gpuprof_region *out);
/* As gpuprof_region_begin / _end, with a handle. GPUPROF_E_INVALID for a
 * handle that was never returned by gpuprof_region_register. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_region_begin_handle(gpuprof_region region);
GPUPROF_API gpuprof_status gpuprof_region_end_handle(gpuprof_region region);

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

/* Names the calling thread in the profile (copied; at most 63 bytes kept).
 * Works before init too. Calling thread only. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_thread_set_name(const char *name);

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

/* Reads a counter by dotted name, e.g. "regions.unbalanced",
 * "records.dropped", "threads.created", "flush.count" (the full list is in
 * the README, and gpuprof_stat_name enumerates it). Values are process-wide
 * and monotonic within a process. GPUPROF_E_NOTFOUND for an unknown name.
 * Any thread, any time (before init: zeros). Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_stat_get(const char *name, uint64_t *value);

/* The name of counter number `index`, or NULL past the last one; static
 * storage. Since 0.1. */
GPUPROF_API const char *gpuprof_stat_name(size_t index);

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

#define GPUPROF_BACKEND_ABI 1

/* Capability flags (gpuprof_backend.caps); pinned bit values. */
#define GPUPROF_BACKEND_CAP_ASYNC 0x1u    /* completions arrive on other threads */
#define GPUPROF_BACKEND_CAP_TRACE 0x2u    /* can produce per-stream traces */
#define GPUPROF_BACKEND_CAP_COUNTERS 0x4u /* hardware counters */
#define GPUPROF_BACKEND_CAP_PC_SAMPLING 0x8u

/* A measurement backend. The built-in backends (sim, opencl, levelzero,
 * cupti, papi) use exactly this interface. Every callback receives `user`
 * and returns a gpuprof_status except fini. The library copies the struct
 * (min(size, its own size) bytes) at registration; `name` must stay valid
 * for the life of the process.
 *  probe: is the runtime present? On failure write a one-line reason into
 *         reason[0..reason_size) and return GPUPROF_E_UNAVAILABLE.
 *  init:  set up (called once, after probe succeeded, from gpuprof_init or
 *         from gpuprof_backend_register when already initialized).
 *  start/stop: resume/pause recording.  flush: push out buffered records
 *  (called at the start of every gpuprof_flush).  fini: release everything
 *  (called once from gpuprof_finalize). Callbacks are called from whatever
 *  thread made the public call, one at a time (under the library's backend
 *  lock, so they must not call gpuprof_backend_register/_status), never
 *  concurrently with each other. NULL callbacks are allowed except probe
 *  and init. */
typedef struct gpuprof_backend {
    size_t size;          /* sizeof(gpuprof_backend) */
    uint32_t abi_version; /* GPUPROF_BACKEND_ABI */
    uint32_t caps;        /* GPUPROF_BACKEND_CAP_* */
    const char *name;     /* short, [a-z0-9_]+, unique */
    void *user;
    gpuprof_status (*probe)(void *user, char *reason, size_t reason_size);
    gpuprof_status (*init)(void *user);
    gpuprof_status (*start)(void *user);
    gpuprof_status (*stop)(void *user);
    gpuprof_status (*flush)(void *user);
    void (*fini)(void *user);
} gpuprof_backend;

#define GPUPROF_BACKEND_INIT                                                    \
    {                                                                           \
        sizeof(gpuprof_backend), GPUPROF_BACKEND_ABI, 0u, NULL, NULL, NULL,    \
            NULL, NULL, NULL, NULL, NULL                                       \
    }

/* Registers a backend. Before gpuprof_init it joins the list init considers
 * (selected by GPUPROF_BACKENDS: "auto" = every registered backend whose
 * probe succeeds, "none", or a comma-separated list of names); after init it
 * is probed and started at once if selected. `flags` must be 0.
 * GPUPROF_E_EXISTS for a duplicate name, GPUPROF_E_VERSION for an unknown
 * ABI version or size, GPUPROF_E_LIMIT past 32 backends. If registration
 * fails, no callback of `backend` is ever called. Any thread. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_backend_register(
    const gpuprof_backend *backend, uint32_t flags);

/* The state of a backend by name: GPUPROF_OK when active,
 * GPUPROF_E_UNAVAILABLE (reason copied into `reason` when not NULL),
 * GPUPROF_E_NOTFOUND when no backend has that name, GPUPROF_E_STATE when it
 * is registered but not selected or not yet initialized. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_backend_status(const char *name,
                                                  char *reason,
                                                  size_t reason_size);

/* ------------------------------------------------------------------------ */
/* GPU operations: what a backend reports (the backend service API)         */
/* ------------------------------------------------------------------------ */

/* Kinds of GPU operation (pinned values; stored in profiles as the kind of a
 * placeholder node). */
typedef enum gpuprof_op_kind {
    GPUPROF_OP_KERNEL = 1,     /* a kernel launch (or a graph of kernels) */
    GPUPROF_OP_COPY_H2D = 2,   /* host to device copy */
    GPUPROF_OP_COPY_D2H = 3,   /* device to host copy */
    GPUPROF_OP_COPY_D2D = 4,   /* device to device copy, same or peer */
    GPUPROF_OP_COPY_OTHER = 5, /* host to host, unknown direction */
    GPUPROF_OP_MEMSET = 6,     /* memset / fill */
    GPUPROF_OP_ALLOC = 7,      /* device memory allocation */
    GPUPROF_OP_FREE = 8,       /* device memory release */
    GPUPROF_OP_SYNC = 9,       /* the host waits for the device */
    GPUPROF_OP_MAP = 10,       /* map of device memory (0.1: unmap too) */
    GPUPROF_OP_BUILD = 11,     /* program build, compile or link (JIT) */
    GPUPROF_OP_OTHER = 12,     /* marker, barrier, anything else */
    GPUPROF_OP_UNMAP = 13,     /* unmap of device memory mapped before */
    GPUPROF_OP_KIND_COUNT = 14
} gpuprof_op_kind;

/* Called by a backend's hook on the application thread that makes a GPU API
 * call, before the operation is handed to the runtime. Records the calling
 * thread's CPU call path (frames inside libgpuprof and the innermost
 * `skip_frames` frames beyond them are dropped: a runtime's own wrappers)
 * beneath its innermost open region, and beneath that a placeholder node of
 * `kind`; returns the correlation id to tag the operation with. The id is
 * never 0; 0 means nothing was recorded (not measuring, out of memory, or the
 * operation record was dropped: counted in "records.dropped"), and the
 * backend then reports no activity for it. While an operation is open on the
 * calling thread (a runtime API calling its driver API), a nested begin
 * records nothing and returns the open operation's id: one call path per user
 * call. Every begin that returned an id is closed by gpuprof_op_end with that
 * id. Wait-free except the first time a thread uses it (its channels) and
 * when a call path is new (tree growth). Since 0.1. */
GPUPROF_API uint64_t gpuprof_op_begin(gpuprof_op_kind kind,
                                      unsigned skip_frames);

/* Closes the operation opened by gpuprof_op_begin on this thread.
 * GPUPROF_E_INVALID when `correlation` is not the open one (nothing
 * changes), GPUPROF_OK otherwise (also for 0). Calling thread only.
 * Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_op_end(uint64_t correlation);

/* Activity flags (gpuprof_activity.flags); pinned bit values. */
#define GPUPROF_ACTIVITY_MORE 0x1u /* further activities will carry the same
                                      correlation (the kernels of a graph
                                      launch); the last one comes without */

/* What the device did for one operation. Times are CLOCK_MONOTONIC
 * nanoseconds of this host (the process clock); a backend converts device
 * timestamps before submitting. */
typedef struct gpuprof_activity {
    size_t size;          /* sizeof(gpuprof_activity) */
    uint64_t correlation; /* from gpuprof_op_begin */
    uint32_t kind;        /* gpuprof_op_kind of what ran (a graph launch's
                             copies are copies) */
    uint32_t flags;       /* GPUPROF_ACTIVITY_* */
    uint32_t device;      /* device index, backend-defined */
    uint32_t stream;      /* stream or queue index on that device */
    uint64_t start_ns;    /* when it started on the device */
    uint64_t end_ns;      /* when it finished (>= start_ns) */
    uint64_t bytes;       /* copies, memsets, allocations; 0 otherwise */
    const char *name;     /* kernel name (copied), NULL for other kinds */
} gpuprof_activity;

#define GPUPROF_ACTIVITY_INIT                                                   \
    {                                                                           \
        sizeof(gpuprof_activity), 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, NULL         \
    }

/* Hands one activity to the library, from any thread (a runtime's callback
 * thread, a completion thread, an application thread inside a wait). Each
 * calling thread gets its own channel to the monitor thread on its first
 * call; after that the call is wait-free and never blocks. The monitor
 * attributes the activity to the placeholder of its correlation, in the
 * profile of the thread that began the operation, even if that thread has
 * exited. GPUPROF_E_LIMIT when the channel is at its bound (the activity is
 * dropped and counted in "records.dropped"), GPUPROF_E_INVALID for a bad
 * struct, GPUPROF_E_STATE when no asynchronous measurement is running.
 * An unknown correlation is counted in "records.unattributed". Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_activity_submit(const gpuprof_activity *a);

/* For the interception layers installed with libgpuprof (the OpenCL ICD
 * layer, libgpuprof-cl-layer.so); applications never call it. Hands the
 * runtime's dispatch table `target` (`entries` function pointers) to the
 * built-in backend for `api` ("opencl") and returns the table the layer
 * gives its loader -- the backend's hooks where it measures, `target`'s
 * entries elsewhere -- with its entry count in *out_entries. NULL when that
 * backend is not active (not initialized, not selected, or `api` unknown):
 * the layer then passes every call through untouched. Since 0.1. */
GPUPROF_API const void *gpuprof_layer_dispatch(const char *api,
                                               const void *target,
                                               unsigned entries,
                                               unsigned *out_entries);

#ifdef __cplusplus
}
#endif

#endif /* GPUPROF_H */
