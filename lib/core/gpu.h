/*
 * gpu.h - the asynchronous pipeline: operations, activities, the monitor
 * (DESIGN §3; seed 000 §4.1, seed 002 §III).
 *
 *  app thread --op record-->  [its source channel] --\
 *  runtime thread --activity--> [its source channel] --+--> monitor
 *  monitor --(activity, placeholder)--> [the app thread's activity channel]
 *  app thread (or whoever holds its gpu lock) --> its GPU subtree
 *
 * Sources. Every thread that talks to the monitor (an application thread
 * that begins operations, a runtime thread that submits activities) owns one
 * source: a single-producer channel of gp_rec, registered on first use in a
 * lock-free table the monitor scans. Records of one source arrive in order.
 *
 * The monitor (monitor.c) is whoever holds the monitor lock: its own thread
 * every few hundred microseconds to 20 ms (adaptive), or a flushing thread
 * that needs every activity in before it writes. It keeps a table from
 * correlation id to (thread, placeholder), forwards each activity to the
 * thread's activity channel, counts unknown correlations, and for threads
 * that have exited applies the activity itself.
 *
 * Attribution. A thread's GPU metrics live in its own GPU subtree (gp_gpu.
 * tree), apart from its region CCT: mirror nodes keyed by the placeholder's
 * index in the region CCT, kernels beneath them. Only the holder of
 * gp_gpu.mu writes it -- the owner at its hooks and region boundaries (with
 * trylock: it never waits), a flush before writing, the monitor for threads
 * that exited -- and a flush reads it like any CCT. The region CCT keeps its
 * single lock-free writer, and activities that arrive while the owner is
 * blocked, or after it exited, still reach the profile.
 */
#ifndef GPUPROF_CORE_GPU_H
#define GPUPROF_CORE_GPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuprof.h"
#include "core/cct.h"
#include "core/channel.h"
#include "core/unwind.h"

struct gp_thread;

enum gp_rec_type { GP_REC_OP = 1, GP_REC_ACT = 2 };

struct gp_gpu;

/* Extra metric values an activity may carry (gpuprof__activity_submit_x). */
#define GP_XN 4
/* Internal activity flags. NOTE: extra metric values for the operation,
 * not a device activity (no count, time, bytes or trace record); with
 * GPUPROF_ACTIVITY_MORE the operation stays open, without it this closes
 * it. HOST: the operation ran on the host (a build, a wait): no trace
 * record on a device stream. */
#define GP_ACT_NOTE 0x80000000u
#define GP_ACT_HOST 0x40000000u
/* INSTR: PC samples of one instruction of the kernel `name` in `binary`:
 * `bytes` carries the instruction's offset in the binary, the extra values
 * are metrics of the GPU instruction kind, added to a GPU_INSTR node
 * beneath the kernel's. Always with NOTE (it counts no operation). */
#define GP_ACT_INSTR 0x20000000u
/* WAIT: the record's [start, end] is a time the thread was blocked waiting
 * for the device (blame.c): CPU_IDLE on the operation, and blame for the
 * device work that ran meanwhile. Set by gpu.c on every SYNC activity; a
 * backend sets it (with NOTE | GPUPROF_ACTIVITY_MORE) for the wait inside a
 * blocking transfer or map. */
#define GP_ACT_WAIT 0x10000000u
/* detect.launch_wait: the fewest consecutive launch->wait pairs reported. */
#define GP_LAUNCH_WAIT_MIN 100

/* What a source carries to the monitor. Two cache lines, an operation's
 * fields all in the first: an operation record writes (and the monitor's
 * core gives back) one line, not two. */
typedef struct gp_rec {
    _Alignas(GP_CACHELINE) uint32_t type; /* gp_rec_type */
    uint32_t kind;  /* gpuprof_op_kind */
    uint64_t corr;
    struct gp_gpu *gpu; /* OP: the thread that began it */
    uint32_t node;      /* OP: its placeholder in that thread's CCT */
    uint32_t name;      /* ACT: interned kernel name, 0 when none */
    uint32_t flags;     /* ACT: GPUPROF_ACTIVITY_* */
    uint32_t device, stream;
    uint64_t start_ns, end_ns, bytes;
    uint32_t binary;    /* ACT: GPU binary module id, GP_NO_BINARY */
    uint8_t nx;         /* ACT: extra metric values (built-in backends) */
    uint8_t xm[GP_XN];  /* their metric ids (GPU kind) */
    uint64_t xv[GP_XN];
} gp_rec;
_Static_assert(offsetof(gp_rec, node) + sizeof(uint32_t) <= GP_CACHELINE &&
                   sizeof(gp_rec) == 2 * GP_CACHELINE,
               "an operation's fields in the record's first line");

/* What the monitor hands to a thread. */
typedef struct gp_act {
    uint32_t node; /* placeholder in the thread's CCT */
    uint32_t kind;
    uint32_t name;
    uint32_t binary; /* module id of the kernel's GPU binary, GP_NO_BINARY */
    uint64_t dur_ns;
    uint64_t bytes;
    uint32_t flags;
    uint8_t nx;
    uint8_t xm[GP_XN];
    uint64_t xv[GP_XN];
} gp_act;

typedef struct gp_src {
    gp_chan_spsc ch;         /* producer: the owner; consumer: the monitor */
    _Atomic int closed;      /* the owner exited: drain, then free */
    uint32_t slot;           /* index in the source table */
} gp_src;

/* The fields fall in three groups of their own cache lines: the monitor
 * writes its group for every record it reads, the owner writes its group
 * at every launch, and neither line moves between their cores because of
 * the other's writes (they did, at a cost of a third of the hook). */
typedef struct gp_gpu {
    gp_chan_spsc act;        /* producer: the monitor; consumer: under mu */
    pthread_mutex_t mu;      /* consumer of act, writer of tree */
    gp_cct tree;             /* the GPU subtree (see above) */
    struct gp_thread *thread;
    _Atomic int gone;           /* the owner exited */
    /* written by the monitor */
    _Atomic uint64_t forwarded GP_ALIGNED_CACHELINE; /* items pushed to act */
    uint64_t mon_mark;          /* monitor-only: last round it was touched */
    uint64_t mon_seen;          /* monitor-only: operation records seen */
    uint64_t mon_open;          /* monitor-only: its correlation entries */
    uint64_t mon_refs;          /* monitor-only: blame.c's references */
    uint32_t lw_node;           /* monitor-only: launch->wait run (blame.c) */
    uint64_t lw_launches, lw_run, lw_reported;
    /* written by the owner */
    _Atomic uint64_t applied GP_ALIGNED_CACHELINE; /* under mu: taken from
                                                      act */
    _Atomic uint64_t ops;       /* owner: operations begun (stats) */
    uint64_t next_seq;
    uint32_t depth;          /* nested gpuprof_op_begin */
    uint64_t open_corr;
    _Atomic uint64_t *busy_slot; /* kernels launched (idle.c), or NULL */
    uint64_t open_ticks;     /* tracing: when the open operation began */
    uint32_t open_node;      /* tracing: its placeholder (0: not traced) */
    gp_path_cache path;      /* the last call path (unwind.h) */
} gp_gpu;

/* KERNEL nodes' key_b when no GPU binary is known. */
#define GP_NO_BINARY 0xFFFFFFFFull

/* ---- binary.c ------------------------------------------------------- */
/* Saves a GPU binary once per content (<output dir>/binaries/<32 hex
 * digits>.<ext>) and registers it as a GPU module; its module id, or
 * GP_NO_BINARY when it could not be saved (counted, warned once). Any
 * thread; slow (a file write): call it where the runtime is slow anyway. */
uint32_t gpuprof__gpu_binary(const void *data, size_t size, const char *ext);
/* false when GPUPROF_GPU_BINARIES=0: backends then skip reading binaries
 * (on PoCL, reading a program's binaries compiles all its kernels). */
bool gpuprof__gpu_binaries_wanted(void);
/* The 128-bit content hash that names binaries. */
void gpuprof__hash128(const void *data, size_t size, uint64_t out[2]);

/* Correlation ids: the thread's sequence number + 1 in the high 24 bits,
 * a per-thread counter in the low 40. Never 0. */
#define GP_CORR_SEQ_BITS 40

/* An operation begun while measurement is paused (GPUPROF_START_PAUSED
 * before gpuprof_start, or after gpuprof_stop): no calling context is
 * recorded, but a runtime may still deliver its records later, after a
 * start. A built-in backend passes this correlation on like any other;
 * each activity that carries it is counted records.paused (not
 * records.unattributed: nothing is wrong) and applied nowhere. The public
 * gpuprof_op_begin returns 0 instead. */
#define GP_CORR_PAUSED UINT64_MAX

/* ---- gpu.c ---------------------------------------------------------- */
/* The record of operation `corr` (kind, begun by `g`, placeholder `node`)
 * onto the thread's source channel; false when it is full (dropped). Part
 * of gpuprof__op_begin, apart so bench_hook times the code it runs. */
static inline bool gpuprof__op_record(gp_chan_spsc *ch, uint32_t kind,
                                      uint64_t corr, struct gp_gpu *g,
                                      uint32_t node)
{
    gp_rec *r = gpuprof__chan_reserve(ch);
    if (__builtin_expect(!r, 0))
        return false;
    /* The monitor reads nothing else of an operation's record. */
    r->type = GP_REC_OP;
    r->kind = kind;
    r->corr = corr;
    r->gpu = g;
    r->node = node;
    gpuprof__chan_commit(ch);
    return true;
}
/* Begins an operation for the calling thread: the call path beneath the
 * innermost open region, dropping `skip` frames above the caller of this
 * function, then a placeholder of `kind`. See gpuprof_op_begin; while
 * paused, GP_CORR_PAUSED. */
uint64_t gpuprof__op_begin(uint32_t kind, unsigned skip);
gpuprof_status gpuprof__op_end(uint64_t corr);
/* Dependency notes for traces (doc/FORMATS.md, DEP_RECORDS): what the
 * operation `corr`, open on the calling thread, waits for or marks.
 * `stream` is GP_DEP_ALL for every stream of `device`; `target` is the
 * correlation id of the operation whose device work an event stands for
 * (an event record, or an OpenCL command), 0 for none. Several notes per
 * operation are allowed (a wait for several events). Nothing is recorded
 * unless tracing is on and `corr` is the open operation. Owner only,
 * wait-free. */
enum {
    GP_DEP_SYNC_DEVICE = 1,  /* blocks until every stream is done */
    GP_DEP_SYNC_STREAM = 2,  /* blocks until `stream` is done */
    GP_DEP_SYNC_EVENT = 3,   /* blocks until event `target` is done */
    GP_DEP_QUERY_STREAM = 4, /* asks whether `stream` is done */
    GP_DEP_QUERY_EVENT = 5,  /* asks whether event `target` is done */
    GP_DEP_EVENT_RECORD = 6, /* this operation is an event on `stream` */
    GP_DEP_STREAM_WAIT = 7,  /* `stream`'s later work waits for `target` */
    GP_DEP_LAUNCH = 8        /* this operation's work goes to `stream` */
};
#define GP_DEP_READY 0x1u    /* a query: the answer was "done" */
#define GP_DEP_BLOCKING 0x2u /* a launch: the call returns when its work has
                                ended (a blocking copy) */
#define GP_DEP_NULL 0x4u     /* a launch: onto the legacy default stream,
                                serialized with every other stream */
#define GP_DEP_OPENCL 0x8u   /* an OpenCL call (clFinish, clWaitForEvents,
                                an event wait list) */
#define GP_DEP_ALL 0x7FFFFFFFu
void gpuprof__op_dep(uint64_t corr, uint32_t what, uint32_t flags,
                     uint32_t device, uint32_t stream, uint64_t target);
/* gpuprof_activity_submit for the built-in backends: also the kernel's GPU
 * binary (a module id from gpuprof__gpu_binary, or GP_NO_BINARY), `nx`
 * (<= GP_XN) extra values `xv` of GPU-kind metrics `xm`, and the flags
 * GP_ACT_NOTE and GP_ACT_HOST. */
gpuprof_status gpuprof__activity_submit_x(const gpuprof_activity *a,
                                          uint32_t binary, unsigned nx,
                                          const uint8_t *xm,
                                          const uint64_t *xv);
/* Makes the calling thread patient: when its channel to the monitor is
 * full, gpuprof__activity_submit_x runs monitor rounds and retries instead
 * of dropping (a runtime's own thread that delivers records in bursts,
 * never an application thread). */
void gpuprof__activity_patient(bool on);
/* Applies what the monitor forwarded to `g`, if nobody else is (trylock):
 * the owner's hook and region boundaries, once GP_APPLY_BATCH activities
 * wait. Batches, because each apply takes the lock and reads lines the
 * monitor wrote on another core; what waits is applied at the next batch,
 * a profile write (snapshot.c applies every thread's) or the thread's exit:
 * nothing is lost. */
#define GP_APPLY_BATCH 32
void gpuprof__gpu_poll_slow(gp_gpu *g);
static inline void gpuprof__gpu_poll(gp_gpu *g)
{
    if (__builtin_expect(gp_load_relaxed(&g->forwarded) -
                                 gp_load_relaxed(&g->applied) >=
                             GP_APPLY_BATCH,
                         0))
        gpuprof__gpu_poll_slow(g);
}
/* Applies everything forwarded to `g` (waits for its lock). */
void gpuprof__gpu_apply(gp_gpu *g);
/* A GPU state for a thread state that no thread owns (the merged state of
 * exited threads); NULL when out of memory. */
gp_gpu *gpuprof__gpu_attach(struct gp_thread *t);
/* Frees a GPU state nobody can reach any more (thread.c, after a merge). */
void gpuprof__gpu_destroy(gp_gpu *g);
/* From the thread-exit destructor of g's owner. */
void gpuprof__gpu_thread_exit(gp_gpu *g);
/* From gpuprof_init / finalize (before the final write, after it). */
void gpuprof__gpu_startup(void);
void gpuprof__gpu_stop_accepting(void);
/* Before a profile is written (flush_lock held): every activity submitted
 * so far is attributed and applied. */
void gpuprof__gpu_sync(void);
/* Fork: no monitor, no sources in the child; its own thread starts clean. */
void gpuprof__gpu_atfork_prepare(void);
void gpuprof__gpu_atfork_parent(void);
void gpuprof__gpu_atfork_child(struct gp_thread *self);

/* Source table, for the monitor. */
uint32_t gpuprof__src_count(void);
gp_src *gpuprof__src_at(uint32_t i);
void gpuprof__src_free(gp_src *s); /* monitor: a closed, drained source */

/* ---- monitor.c ------------------------------------------------------ */
/* Starts the monitor thread if it is not running (not in a fork child). */
void gpuprof__monitor_ensure(void);
/* One or more rounds under the monitor lock until every activity read so
 * far is resolved (attributed or counted unattributed). Any thread. */
void gpuprof__monitor_sync(void);
/* Runs the rounds that retire the entries of finished operations (their
 * grace for out-of-order siblings); before merging exited threads. */
void gpuprof__monitor_settle(void);
/* Of an exited thread's GPU state: has the monitor seen every operation it
 * began, retired them all, and has everything forwarded been applied? Then
 * nothing refers to it any more and it may be merged and freed. */
bool gpuprof__monitor_quiescent(gp_gpu *g);
/* Test hook: while held, the monitor thread runs no rounds (flushes
 * still do). */
void gpuprof__monitor_hold(bool hold);
/* Stops and joins the thread; later syncs run the rounds inline. */
void gpuprof__monitor_stop(void);
void gpuprof__monitor_atfork_prepare(void);
void gpuprof__monitor_atfork_parent(void);
void gpuprof__monitor_atfork_child(void);
/* Before a profile is written: every wait resolved, launch->wait runs
 * reported (blame.c). */
void gpuprof__monitor_blame_flush(void);
/* Monitor only (blame.c): hands `a` to g's thread like a matched activity
 * (not counted in gpu.activities). */
void gpuprof__monitor_push(gp_gpu *g, const gp_act *a);

/* ---- idle.c: GPU_IDLE_CAUSE ------------------------------------------ */
/* Kernels in flight: gpuprof__op_begin counts a KERNEL operation, its final
 * activity (without GP_ACT_DONE) ends it. A backend that learns of the
 * end earlier (a completion callback) calls gpuprof__gpu_done() then and
 * submits the activity with GP_ACT_DONE; a launch the runtime refused
 * (no activity will come) is ended with gpuprof__gpu_done() too. */
#define GP_ACT_DONE 0x08000000u
void gpuprof__gpu_done(void);
/* gpu.c: a thread's launch counter (claimed at its first operation; NULL:
 * the shared one), and a launch on it. */
_Atomic uint64_t *gpuprof__gpu_busy_slot(void);
void gpuprof__gpu_busy(_Atomic uint64_t *slot);
uint64_t gpuprof__gpu_busy_count(void);
/* gpuprof_init (GPUPROF_IDLE_PERIOD_US) and finalize (which stops the
 * sampler, core/sampler.h, for every source). */
void gpuprof__idle_init(void);
void gpuprof__idle_stop(void);
/* The calling thread's CPU-time timer (gpu.c: a thread's first
 * operation); its samples reach its tree at the sampler's drains. */
void gpuprof__idle_thread(void);
/* Tests and benchmarks: one sample of the caller's path, as the handler
 * takes it; the period a sample weighs (0: not sampling). */
void gpuprof__idle_sample_now(void);
uint64_t gpuprof__idle_period_ns(void);

/* ---- detect.c: the detectors' shared bookkeeping ---------------------- */
/* A finding: `value` of detect.* metric `metric` on operation `corr`. */
void gpuprof__detect_note(uint64_t corr, uint8_t metric, uint64_t value);
/* Data read back from the device into host memory [ptr, ptr + size). */
void gpuprof__detect_readback(const void *ptr, size_t size);
/* Does a host-to-device transfer from [ptr, ptr + size) send data read
 * back before (detect.output_as_input)? */
bool gpuprof__detect_sent_again(const void *ptr, size_t size);
/* A launch of kernel `name` in context `ctx`: true once the name has been
 * launched in more than one context (detect.kernel_multi_context). */
bool gpuprof__detect_kernel_context(const char *name, uintptr_t ctx);

/* ---- blame.c (monitor only, under its lock) ------------------------- */
/* An operation record read: its sequence numbers (0: none) to keep with
 * it in the correlation table. */
void gpuprof__blame_op(const gp_rec *r, uint64_t seq[2]);
/* An activity matched to (g, node) of the operation with `seq`, read in
 * `round`. */
void gpuprof__blame_act(gp_gpu *g, uint32_t node, const uint64_t seq[2],
                        const gp_rec *r, uint64_t round);
/* The end of a round at monitor clock `now` (force: resolve every wait). */
void gpuprof__blame_round(uint64_t round, uint64_t now, bool force);
void gpuprof__blame_flush(uint64_t now);
void gpuprof__blame_atfork_child(void);

#endif /* GPUPROF_CORE_GPU_H */
