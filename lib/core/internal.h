/*
 * internal.h - what the files of lib/core share.
 *
 * The core keeps one global state (struct gp_global) and one state per
 * application thread (struct gp_thread). Only the owning thread writes its
 * thread state and its calling context tree; a flush on any thread reads
 * them at the same time without locks. That works because everything a
 * reader can reach is append-only with stable addresses (see cct.h) and
 * every field that changes after publication is an atomic that the owner
 * stores with relaxed order. A thread state is freed only after its thread
 * exited, when it is merged (thread.c): unlinked under G.lock and freed
 * under G.flush_lock; flushes hold flush_lock, counter reads hold lock.
 *
 * Lock order, outermost first: init_lock, backend_lock, flush_lock, lock,
 * intern lock, log lock. Hot paths (regions) take none of them.
 */
#ifndef GPUPROF_CORE_INTERNAL_H
#define GPUPROF_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuprof.h"
#include "core/atomics.h"
#include "core/cct.h"
#include "core/clock.h"

/* ---- Modes: one relaxed load tells a hook whether to record. ---------- */
enum gp_mode {
    GP_MODE_UNINIT = 0,
    GP_MODE_MEASURING = 1,
    GP_MODE_PAUSED = 2,
    GP_MODE_FINALIZED = 3
};

/* ---- Configuration (config.c) ----------------------------------------- */
typedef struct gp_config {
    char output_dir[4096];
    char backends[256];
    bool backends_from_env; /* the list came from GPUPROF_BACKENDS */
    bool start_paused;
    bool trace;
    int trace_threads;
    int64_t flush_period_ms;
    int log_level;
    int rank; /* -1 unknown */
    int clock;
    int64_t keep_threads; /* exited threads kept apart; later ones merged */
    bool signals;         /* final profile on SIGTERM/SIGINT */
    int64_t channel_items; /* records a channel holds before it drops */
    bool gpu_binaries;     /* save GPU binaries (GPUPROF_GPU_BINARIES) */
    bool python_frames;    /* GPUPROF_PYTHON_FRAMES (pyframes.c) */
    char cpu_sampling[128]; /* GPUPROF_CPU_SAMPLING ("": the default) */
} gp_config;

gpuprof_status gpuprof__config_load(gp_config *cfg, const gpuprof_options *o);
/* A program's init joining a launcher's measurement (GPUPROF_OPT_JOINABLE):
 * every setting `asked` that differs from `running` is logged at WARN as
 * one that cannot apply any more. start_paused and the log level are not
 * compared: the joining init applies them. */
void gpuprof__config_join(const gp_config *asked, const gp_config *running);
/* An unusable setting: one line at the default (error) level naming the
 * variable, its value, what a value should be and what is used instead. */
void gpuprof__setting_ignored(const char *var, const char *value,
                              const char *want, const char *instead);

/* ---- Errors and logging (log.c) --------------------------------------- */
/* Records the calling thread's last error, logs it at `level` and returns
 * `st`; the message is printf-style. */
gpuprof_status gpuprof__fail(gpuprof_status st, int level, const char *fmt,
                             ...) __attribute__((format(printf, 3, 4)));
void gpuprof__log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gpuprof__log_v(int level, const char *fmt, va_list ap);
void gpuprof__log_set_level_default(int level);
int gpuprof__log_parse_level(const char *s);

/* ---- Region name interning (intern.c) --------------------------------- */
/* Process-wide table of region names; id 0 is invalid. Thread-safe. */
uint32_t gpuprof__intern(const char *name, size_t len, uint64_t hash);
/* The name of an id (NULL when out of range). Thread-safe, lock-free. */
const char *gpuprof__intern_name(uint32_t id);
/* ---- Devices (devices.c) ---------------------------------------------- */
struct gpuprof__io_device_attr;
/* The described devices as profile records (*out malloc'd; strings through
 * str(ctx, s)); the record count. */
uint32_t gpuprof__devices_attrs(struct gpuprof__io_device_attr **out,
                                uint32_t (*str)(void *, const char *),
                                void *ctx);
void gpuprof__devices_atfork_prepare(void);
void gpuprof__devices_atfork_parent(void);
void gpuprof__devices_atfork_child(void);

void gpuprof__intern_atfork_prepare(void);
void gpuprof__intern_atfork_parent(void);
void gpuprof__intern_atfork_child(void);
/* A fast hash of a NUL-terminated string, 8 bytes a step; *len receives
 * strlen. Inline: it is on the region hot path. */
static inline uint64_t gpuprof__hash_str(const char *s, size_t *len)
{
    size_t n = __builtin_strlen(s);
    *len = n;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        __builtin_memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    unsigned shift = 0;
    if (n >= 4) {
        uint32_t x;
        __builtin_memcpy(&x, s, 4);
        w = x, s += 4, n -= 4, shift = 32;
    }
    if (n >= 2) {
        uint16_t x;
        __builtin_memcpy(&x, s, 2);
        w |= (uint64_t)x << shift, s += 2, n -= 2, shift += 16;
    }
    if (n)
        w |= (uint64_t)(unsigned char)*s << shift;
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 29);
}

/* ---- Stats (stats.c) -------------------------------------------------- */
enum gp_stat {
    GP_STAT_REGIONS_UNBALANCED,
    GP_STAT_REGIONS_OPEN_AT_FINALIZE,
    GP_STAT_REGIONS_OPEN_AT_THREAD_EXIT,
    GP_STAT_REGIONS_DEPTH_EXCEEDED,
    GP_STAT_REGIONS_ENTERED, /* per thread, summed */
    GP_STAT_THREADS_CREATED,
    GP_STAT_THREADS_EXITED,
    GP_STAT_FLUSH_COUNT,
    GP_STAT_FLUSH_ERRORS,
    GP_STAT_RECORDS_DROPPED,
    GP_STAT_RECORDS_UNATTRIBUTED,
    GP_STAT_BACKENDS_ACTIVE,
    GP_STAT_CCT_NODES, /* per thread, summed */
    GP_STAT_MEMORY_BYTES, /* per thread, summed */
    GP_STAT_GPU_OPS,        /* per thread, summed */
    GP_STAT_GPU_ACTIVITIES, /* attributed by the monitor */
    GP_STAT_GPU_BINARIES,   /* distinct GPU binaries saved or found saved */
    GP_STAT_GPU_BINARIES_FAILED, /* GPU binaries that could not be saved */
    GP_STAT_GPU_TOOL_OVERHEAD_NS, /* a runtime's measurement overhead as it
                                     reports it (CUPTI overhead records) */
    GP_STAT_RECORDS_PAUSED, /* records of work launched while paused */
    GP_STAT_CALLPATHS_TRUNCATED, /* call paths cut at the depth limit */
    GP_STAT_SELF_NS, /* wall time of the library's own work (self.c) */
    GP_STAT_COUNT
};
void gpuprof__stat_add(enum gp_stat s, uint64_t v);
uint64_t gpuprof__stat_read(enum gp_stat s);
const char *gpuprof__stat_name(enum gp_stat s);
void gpuprof__stats_reset(void);

/* ---- Threads (thread.c) ----------------------------------------------- */
#define GP_MAX_DEPTH 256

/* One open region. Written by the owner, read by flushes (atomics). */
typedef struct gp_frame {
    _Atomic uint32_t node;
    _Atomic uint64_t start;       /* ticks */
    _Atomic uint64_t child_ticks; /* closed children's inclusive ticks */
    gp_mblock *blk;   /* owner-only: the node's region block */
    const char *name; /* owner-only: the interned name (unique per id) */
} gp_frame;

typedef struct gp_thread {
    /* Hot, owner-only or owner-written: first cache lines. */
    gp_cct cct;
    /* The owner's guarded spans over its tree (core/sampler.h): a drain on
     * another thread takes the tree only while cct_busy is 0. */
    _Atomic uint32_t cct_busy;  /* owner: a span is open */
    _Atomic uint32_t cct_claim; /* a drainer holds the tree */
    uint32_t cct_depth;         /* owner-only: spans open (they nest) */
    _Atomic uint32_t depth;   /* open frames in stack[] */
    uint32_t overflow;        /* begins beyond GP_MAX_DEPTH not recorded */
    _Atomic uint64_t entered; /* region begins */
    struct gp_gpu *_Atomic gpu; /* GPU state, from the first operation */
    struct gp_trace_thread *trace; /* region trace producer (tracing on) */
    gp_frame stack[GP_MAX_DEPTH];

    /* Cold. */
    struct gp_thread *next_all; /* global list, under G.lock */
    struct gp_thread *next_deferred; /* exited, to merge (G.flush_lock) */
    uint64_t tid;
    uint32_t seq;              /* creation order */
    _Atomic uint32_t flags;    /* GPUPROF_IO_THREAD_* */
    uint64_t start_ticks;
    _Atomic uint64_t end_ticks; /* 0 while alive */
    char name[64];              /* under G.lock */
} gp_thread;

/* The calling thread's state, created on first use (NULL when out of
 * memory: the caller records nothing and returns GPUPROF_E_NOMEM). */
static inline gp_thread *gpuprof__thread_get(void);
gp_thread *gpuprof__thread_create(void);
extern GP_HIDDEN __thread gp_thread *gpuprof__tls_self
    __attribute__((tls_model("initial-exec")));
static inline gp_thread *gpuprof__thread_get(void)
{
    gp_thread *t = gpuprof__tls_self;
    return __builtin_expect(t != NULL, 1) ? t : gpuprof__thread_create();
}
/* Closes the calling thread's frames [i, depth) at `now` (ticks); frames
 * above i get `flags` (GPUPROF_IO_NODE_*) on their nodes. */
void gpuprof__region_close_from(gp_thread *t, uint32_t i, uint64_t now,
                                uint8_t flags);
void gpuprof__thread_startup(void); /* from init: the key, the main thread */
/* Thread-start hooks: the one place where the core registers an
 * application thread (gpuprof__thread_create: its state made, on its
 * first call into the library, or at its very start when lib/host saw it
 * created with pthread_create) calls each hook on that thread, once, after
 * the state is set. For what must begin with each thread (per-thread
 * sampling timers; the host layer's START record). At most
 * GP_THREAD_HOOKS, added from init (under init_lock), never removed;
 * threads registered before a hook was added are not called back (walk
 * G.threads for those). A hook runs on a thread of the program: it must
 * not block, and may call gpuprof__thread_get (the state is set). false:
 * no room. */
#define GP_THREAD_HOOKS 4
typedef void (*gp_thread_hook)(gp_thread *t);
bool gpuprof__thread_hook_add(gp_thread_hook fn);
/* A new thread's start (lib/host's trampoline): registers it now, when
 * something wants every thread from its start (tracing, or a thread-start
 * hook); else leaves it to its first call into the library. Returns its
 * state or NULL. */
gp_thread *gpuprof__thread_started(void);
/* Merges exited GPU threads beyond keep_threads that the monitor is done
 * with into the merged state and frees them. Under G.flush_lock. */
void gpuprof__threads_merge_gpu(void);
/* Fork child: drop every thread but the caller, zero its metrics. */
void gpuprof__thread_atfork_child(uint64_t now_ticks);

/* ---- The library's own threads (sys.c) -------------------------------- */
/* pthread_create with every signal blocked in the new thread; 0 or errno.
 * The new thread is one of the library's own (gpuprof__own_thread), and
 * lib/host does not see it created. */
int gpuprof__spawn(pthread_t *t, void *(*fn)(void *), void *arg);
/* Is the calling thread the library's own (gpuprof__spawn) or a backend's
 * (gpuprof_be_own_thread)? What it does is not the program's: lib/host
 * records nothing of it. One TLS load. */
extern GP_HIDDEN __thread bool gpuprof__own_thread
    __attribute__((tls_model("initial-exec")));
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
void gpuprof__cond_init_monotonic(pthread_cond_t *c);
/* *ts = CLOCK_MONOTONIC now + ns: a deadline for those waits. */
void gpuprof__deadline(struct timespec *ts, uint64_t ns);

/* ---- Metrics (metrics.c) ---------------------------------------------- */
typedef struct gp_metric_def {
    const char *name;
    const char *description;
    uint8_t type, combine, unit, kind; /* GPUPROF_IO_* values */
    bool ticks;                        /* stored as ticks, written as ns */
    uint8_t ext_flags;        /* GPUPROF_IO_METRIC_* (METRIC_EXT section) */
    const char *count_metric; /* odd sums: the metric counting summands */
} gp_metric_def;

/* Metric ids of the built-in region kind (block layout of GP_KIND_REGION). */
enum { GP_M_REGION_VISITS = 0, GP_M_REGION_INCL = 1, GP_M_REGION_EXCL = 2 };
/* Metric ids of the GPU kind (block layout of GPUPROF_IO_KIND_GPU). */
enum {
    GP_M_GPU_COUNT = 3,
    GP_M_GPU_TIME = 4,
    GP_M_GPU_BYTES = 5,
    GP_M_GPU_WORK_ITEMS = 6,      /* kernels: global work items, summed */
    GP_M_GPU_GROUP_SIZE = 7,      /* kernels: work-group size, summed */
    GP_M_CPU_IDLE = 8,            /* syncs: time the thread waited */
    GP_M_CPU_IDLE_CAUSE = 9,      /* device work: waits blamed on it */
    GP_M_DET_JIT_SINGLE = 10,     /* the six detectors (seed 002 IV.B) */
    GP_M_DET_OUTPUT_AS_INPUT = 11,
    GP_M_DET_ARGS_NOT_ALIASED = 12,
    GP_M_DET_MULTI_CONTEXT = 13,
    GP_M_DET_INORDER_QUEUE = 14,
    GP_M_DET_DEVICES_UNUSED = 15,
    GP_M_API_TIME = 16,           /* host-side operations: time in the call */
    GP_M_GPU_REGISTERS = 17,      /* kernels: registers per thread, summed */
    GP_M_GPU_SHARED_MEM = 18,     /* kernels: shared memory per block, summed */
    GP_M_GPU_LAST = 18
};
/* Metric ids of the CPU kind (on region-CCT frames). */
enum { GP_M_GPU_IDLE_CAUSE = 19 };
/* Metric ids of the GPU instruction kind (PC samples on GPU_INSTR nodes):
 * all samples, latency samples (no warp of the scheduler issued), and the
 * samples of each stall reason (seed 000 §4.2, seed 001). */
enum {
    GP_M_PC_SAMPLES = 20,
    GP_M_PC_LATENCY = 21,
    GP_M_PC_STALL_SELECTED = 22,
    GP_M_PC_STALL_NOT_SELECTED = 23,
    GP_M_PC_STALL_BARRIER = 24,
    GP_M_PC_STALL_BRANCH_RESOLVING = 25,
    GP_M_PC_STALL_DISPATCH_STALL = 26,
    GP_M_PC_STALL_DRAIN = 27,
    GP_M_PC_STALL_IMC_MISS = 28,
    GP_M_PC_STALL_LG_THROTTLE = 29,
    GP_M_PC_STALL_LONG_SCOREBOARD = 30,
    GP_M_PC_STALL_MATH_PIPE_THROTTLE = 31,
    GP_M_PC_STALL_MEMBAR = 32,
    GP_M_PC_STALL_MIO_THROTTLE = 33,
    GP_M_PC_STALL_MISC = 34,
    GP_M_PC_STALL_NO_INSTRUCTIONS = 35,
    GP_M_PC_STALL_SHORT_SCOREBOARD = 36,
    GP_M_PC_STALL_SLEEPING = 37,
    GP_M_PC_STALL_TEX_THROTTLE = 38,
    GP_M_PC_STALL_WAIT = 39,
    GP_M_PC_STALL_OTHER = 40,
    GP_M_PC_LAST = 40
};
/* Metric ids of CPU samples (GPUPROF_CPU_SAMPLING, core/sampler.h): file
 * kind CPU, on call paths, in a block of their own (GP_BLOCK_SAMPLE) since
 * they follow the instruction metrics. */
enum {
    GP_M_CPU_TIME = 41,         /* cputime samples: their CPU time */
    GP_M_CPU_SAMPLES = 42,      /* cputime samples: timer expirations */
    GP_M_CPU_WALL = 43,         /* realtime samples: their wall time */
    GP_M_CPU_WALL_SAMPLES = 44, /* realtime samples: timer expirations */
    GP_M_CPU_LAST = 44,
    GP_BLOCK_SAMPLE = 9
};

/* Metrics backends register at run time (gpuprof_be_metric_register): ids
 * GP_M_REG_FIRST.. (at most GP_REG_MAX), values in blocks of the internal
 * kind GP_BLOCK_REG (never written to files: each metric's file kind says
 * where it attaches). */
enum { GP_M_REG_FIRST = GP_M_CPU_LAST + 1, GP_REG_MAX = 32,
       GP_REG_NAME_MAX = 63, GP_BLOCK_REG = 8 };
struct gpuprof_metric_desc;
gpuprof_status gpuprof__metric_register(const struct gpuprof_metric_desc *d,
                                        uint32_t *id);
/* The block kind metric `id` sits in. */
uint32_t gpuprof__metric_block(uint32_t id);
/* Combines `v` into a value of metric `id` by its rule (sum or max); the
 * caller owns *to. */
void gpuprof__metric_merge(_Atomic uint64_t *to, uint32_t id, uint64_t v);

uint32_t gpuprof__metric_count(void);
const gp_metric_def *gpuprof__metric(uint32_t id);
/* First metric id and count of a metric kind's block. */
void gpuprof__metric_kind_range(uint32_t kind, uint32_t *first,
                                uint32_t *count);

/* ---- Backends (backend.c) --------------------------------------------- */
/* Built-in backends register themselves once, before the first init. */
void gpuprof__builtin_backends_register(void);
void gpuprof__backends_init(void);   /* probe+init the selected ones */
void gpuprof__backends_call(int what); /* GP_BE_START/STOP/FLUSH/FINI */
enum { GP_BE_START = 1, GP_BE_STOP = 2, GP_BE_FLUSH = 3, GP_BE_FINI = 4 };
void gpuprof__backends_atfork_prepare(void);
void gpuprof__backends_atfork_parent(void);
void gpuprof__backends_atfork_child(void);

/* ---- The observer of application threads (be_api.c) ------------------ */
/* What gpuprof_be_observe installed (NULL: none): one load on the region
 * and operation paths; the calls are out of line (include/gpuprof_backend.h
 * says when each is made). */
struct gpuprof_observer;
extern GP_HIDDEN const struct gpuprof_observer *_Atomic gpuprof__observer;
void gpuprof__observe_region(const struct gpuprof_observer *o, uint32_t from,
                             uint32_t to);
void gpuprof__observe_op_begin(const struct gpuprof_observer *o,
                               uint32_t region, uint32_t context);
void gpuprof__observe_op_end(const struct gpuprof_observer *o);
void gpuprof__observe_thread_exit(void);

/* ---- Service thread (service.c) --------------------------------------- */
/* Starts the background thread (periodic flushes, termination signals)
 * when the configuration asks for either; from init. */
void gpuprof__service_start(void);
/* Stops it and restores signal actions; from finalize (also on the thread
 * itself). */
void gpuprof__service_stop(void);
/* In a fork child: no service thread, no handlers. */
void gpuprof__service_atfork_child(void);
/* Re-sends a termination signal that arrived while another thread was
 * finalizing (after that finalize wrote the profile). */
void gpuprof__service_deliver_pending(void);
/* From the service thread: finalize for a signal, unless a finalize is
 * already under way elsewhere (false: that one delivers the signal). */
bool gpuprof__finalize_for_signal(void);

/* ---- Profiles (snapshot.c) -------------------------------------------- */
/* Writes a new generation of the profile; `final` closes open regions in
 * the written copy and flags the file final. */
gpuprof_status gpuprof__write_profile(bool final);
/* mkdir -p `dir`; GPUPROF_E_IO with the reason recorded on failure. */
gpuprof_status gpuprof__make_dir(const char *dir);

/* ---- The library's own work (self.c) ---------------------------------- */
/* Brackets the library's own work on the calling thread (nestable): its
 * time is gpuprof.self_ns, samplers skip it (gpuprof__in_self). */
void gpuprof__self_begin(void);
void gpuprof__self_end(void);
bool gpuprof__in_self(void); /* async-signal-safe */
/* Brackets a runtime call that may start helper processes (a compiler's
 * linker): a fork meanwhile is the runtime's helper, not the program. */
void gpuprof__helpers_begin(void);
void gpuprof__helpers_end(void);
/* In a fork child: was the fork made inside either bracket? */
bool gpuprof__fork_is_helper(void);
/* After init: share the brackets' count with children (GPUPROF_HELPERS);
 * at init: was this process started by a measured parent inside one? */
void gpuprof__helpers_export(void);
bool gpuprof__started_as_helper(void);
void gpuprof__helpers_atfork_child(void);
/* Device work in flight, +1 / -1 (a runtime may start its compiler's
 * helpers for it): children started meanwhile are helpers too. */
void gpuprof__helpers_busy(int64_t delta);

/* ---- The output directory at init (outdir.c) -------------------------- */
/* Removes temporaries that dead processes of this host left in `dir` and
 * says at once (one error line) when no file can be created there. */
void gpuprof__outdir_check(const char *dir, const char *host);

/* ---- Global state (gpuprof.c) ----------------------------------------- */
typedef struct gp_global {
    _Atomic int mode GP_ALIGNED_CACHELINE; /* enum gp_mode, read by hooks */
    char pad_[GP_CACHELINE - sizeof(int)];
    pthread_mutex_t lock;       /* threads list, config, path */
    pthread_mutex_t flush_lock; /* one writer of the profile at a time */
    gp_config cfg;
    gp_thread *threads; /* every thread state ever, newest first */
    uint32_t thread_seq;
    uint64_t generation;
    uint64_t start_ticks;
    uint64_t start_realtime_ns;
    bool forked;
    bool final_written; /* under flush_lock: nothing may replace it */
    char host[256];
    char exe[4096];
    char cmdline[4096];
    char path[4096 + 512]; /* the profile file of this process */
} gp_global;

extern GP_HIDDEN gp_global gpuprof__g;
#define G gpuprof__g

static inline int gp_mode(void) { return gp_load_relaxed(&G.mode); }
/* Builds G.path from the directory, host, rank and pid; under G.lock. */
void gpuprof__make_path(void);

#endif /* GPUPROF_CORE_INTERNAL_H */
