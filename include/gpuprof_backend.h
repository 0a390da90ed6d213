/*
 * gpuprof_backend.h - the public, ABI-stable interface for measurement
 * backends: everything a backend of libgpuprof may call.
 *
 * A backend (the built-in sim, OpenCL and CUPTI ones, or a third party's)
 * is a gpuprof_backend vtable (declared in gpuprof.h, registered with
 * gpuprof_backend_register) plus hooks that report what the program asks of
 * a GPU runtime through the calls below: operations (the calling context of
 * an API call), activities (what the device did, with extra metric values),
 * GPU binaries, modules hidden from call paths, metrics of its own, CPU-time
 * samples, counters, log lines and a dispatch table for an interception
 * layer. The built-in backends include only this header (and gpuprof.h,
 * which it includes); `make check` fails when a file under lib/backends/
 * includes anything of lib/ outside its own folder. doc/BACKENDS.md is the
 * guide; the rules of doc/ABI.md apply as to gpuprof.h: size-field structs
 * with _INIT macros, pinned enumerator values, GPUPROF_API on every
 * function, "Since" notes, every function in lib/libgpuprof.map.
 *
 * Threads: unless a function says otherwise, any thread may call it at any
 * time; none prints, aborts or exits. Nothing here is for applications.
 */
#ifndef GPUPROF_BACKEND_H
#define GPUPROF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gpuprof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Operations                                                                */
/* ------------------------------------------------------------------------ */

/* The correlation gpuprof_be_op_begin returns while measurement is paused:
 * no calling context was recorded; pass it on like any other (activities
 * carrying it are counted in "records.paused" and applied nowhere). */
#define GPUPROF_CORR_PAUSED UINT64_MAX

/* As gpuprof_op_begin (same frames dropped, same nesting), except that
 * while measurement is paused it returns GPUPROF_CORR_PAUSED rather than 0,
 * so a runtime that delivers its records later is not counted as losing
 * them. Calling thread only. Since 0.1. */
GPUPROF_API uint64_t gpuprof_be_op_begin(gpuprof_op_kind kind,
                                         unsigned skip_frames);
/* Closes it (0 and GPUPROF_CORR_PAUSED are accepted and do nothing).
 * Calling thread only. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_op_end(uint64_t correlation);

/* Dependency notes for traces (doc/FORMATS.md, DEP_RECORDS, trace format
 * 1.3): what the operation `correlation`, open on the calling thread, waits
 * for or marks, so the analysis can build the run's event dependency graph
 * (wait states, critical path). `what` is a gpuprof_dep_what, `flags`
 * GPUPROF_DEP_* bits; `stream` is GPUPROF_DEP_ALL for every stream of
 * `device`; `target` is the correlation id of the operation whose device
 * work an event stands for (an event record, an OpenCL command), 0 for
 * none. Several notes per operation are allowed (a wait for several
 * events). Nothing is recorded unless tracing is on and `correlation` is
 * the open operation. Calling thread only, wait-free. Since 0.1. */
typedef enum gpuprof_dep_what {
    GPUPROF_DEP_SYNC_DEVICE = 1,  /* blocks until every stream is done */
    GPUPROF_DEP_SYNC_STREAM = 2,  /* blocks until `stream` is done */
    GPUPROF_DEP_SYNC_EVENT = 3,   /* blocks until event `target` is done */
    GPUPROF_DEP_QUERY_STREAM = 4, /* asks whether `stream` is done */
    GPUPROF_DEP_QUERY_EVENT = 5,  /* asks whether event `target` is done */
    GPUPROF_DEP_EVENT_RECORD = 6, /* this operation is an event on `stream` */
    GPUPROF_DEP_STREAM_WAIT = 7,  /* `stream`'s later work waits for `target` */
    GPUPROF_DEP_LAUNCH = 8        /* this operation's work goes to `stream` */
} gpuprof_dep_what;
#define GPUPROF_DEP_READY 0x1u    /* a query: the answer was "done" */
#define GPUPROF_DEP_BLOCKING 0x2u /* a launch returning when its work ended */
#define GPUPROF_DEP_NULL 0x4u     /* a launch onto a legacy default stream */
#define GPUPROF_DEP_OPENCL 0x8u   /* an OpenCL call (clFinish, wait lists) */
#define GPUPROF_DEP_ALL 0x7FFFFFFFu
GPUPROF_API void gpuprof_be_op_dep(uint64_t correlation, uint32_t what,
                                   uint32_t flags, uint32_t device,
                                   uint32_t stream, uint64_t target);
/* MPI calls for traces (doc/FORMATS.md, MPI_RECORDS, trace format 1.4),
 * from an MPI interposition layer (lib/pmpi/, libgpuprof-pmpi.so): each
 * call of the calling thread as it ended, so the analysis can join the
 * ranks' event dependency graphs by their messages and collectives
 * (critical path across ranks, MPI wait states). Ranks are MPI_COMM_WORLD
 * ranks; `comm` an id the layer gives each communicator, the same on every
 * member (0: MPI_COMM_WORLD); times CLOCK_MONOTONIC ns. A call that
 * completes several things (MPI_Waitall, MPI_Sendrecv) is several events
 * with the same times. Since 0.1. */
typedef enum gpuprof_mpi_op {
    GPUPROF_MPI_INIT = 1,      /* MPI_Init: peer = own rank, aux = world
                                  size */
    GPUPROF_MPI_SEND = 2,      /* a blocking send to peer (tag, bytes) */
    GPUPROF_MPI_RECV = 3,      /* a blocking receive: the message's source,
                                  tag and bytes */
    GPUPROF_MPI_ISEND = 4,     /* a nonblocking send posted (request) */
    GPUPROF_MPI_IRECV = 5,     /* a nonblocking receive posted (request;
                                  peer and tag as asked, -1: any) */
    GPUPROF_MPI_WAIT = 6,      /* `request` completed (MPI_Wait*, Test*);
                                  a receive's: the message's source, tag
                                  and bytes; aux: 1 << 32 | the tests that
                                  found it not done before, when a test
                                  completed it */
    GPUPROF_MPI_BARRIER = 7,   /* collectives: peer = root (-1: none), */
    GPUPROF_MPI_BCAST = 8,     /* bytes = this rank's send (or receive) */
    GPUPROF_MPI_REDUCE = 9,    /* buffer, aux = size << 32 | the lowest */
    GPUPROF_MPI_ALLREDUCE = 10, /* member's rank */
    GPUPROF_MPI_GATHER = 11,
    GPUPROF_MPI_ALLGATHER = 12,
    GPUPROF_MPI_ALLTOALL = 13,
    GPUPROF_MPI_COMM = 14,     /* a communicator made (comm: its id; peer:
                                  its parent's id; aux as collectives) */
    GPUPROF_MPI_FINALIZE = 15,
    GPUPROF_MPI_SCATTER = 16,
    /* Appended during 0.1 (pinned; an analysis that predates them
     * refuses them as unknown kinds): */
    GPUPROF_MPI_REQUEST_FREE = 17, /* MPI_Request_free of an active
                                      request (request): its completion is
                                      never seen */
    GPUPROF_MPI_PROBE = 18,    /* MPI_Probe, an MPI_Iprobe that found a
                                  message: its source, tag and bytes (not
                                  matched: the receive is) */
    GPUPROF_MPI_IBARRIER = 19, /* nonblocking collectives posted (request; */
    GPUPROF_MPI_IBCAST = 20,   /* otherwise as their blocking twins): the */
    GPUPROF_MPI_IREDUCE = 21,  /* WAIT of the request completes them */
    GPUPROF_MPI_IALLREDUCE = 22,
    GPUPROF_MPI_IGATHER = 23,
    GPUPROF_MPI_IALLGATHER = 24,
    GPUPROF_MPI_IALLTOALL = 25,
    GPUPROF_MPI_ISCATTER = 26,
    GPUPROF_MPI_GATHERV = 27,  /* more blocking collectives, as the others */
    GPUPROF_MPI_SCATTERV = 28,
    GPUPROF_MPI_ALLGATHERV = 29,
    GPUPROF_MPI_ALLTOALLV = 30,
    GPUPROF_MPI_REDUCE_SCATTER = 31,
    GPUPROF_MPI_REDUCE_SCATTER_BLOCK = 32,
    GPUPROF_MPI_SCAN = 33,     /* scans: tag = the caller's rank in comm */
    GPUPROF_MPI_EXSCAN = 34,
    GPUPROF_MPI_OP_LAST = 34
} gpuprof_mpi_op;
typedef struct gpuprof_mpi_event {
    size_t size;      /* sizeof(gpuprof_mpi_event) */
    uint32_t op;      /* gpuprof_mpi_op */
    uint32_t comm;    /* the communicator's id */
    int32_t peer;     /* a world rank; -1: none */
    int32_t tag;      /* -1: none */
    uint64_t bytes;   /* message bytes */
    uint64_t request; /* ISEND, IRECV, WAIT, REQUEST_FREE, IBARRIER ..
                         ISCATTER: the request's id, never 0 */
    uint64_t aux;     /* as the op says, else 0 */
    uint64_t start_ns, end_ns; /* the call, CLOCK_MONOTONIC */
} gpuprof_mpi_event;
#define GPUPROF_MPI_EVENT_INIT                                                  \
    {                                                                           \
        sizeof(gpuprof_mpi_event), 0u, 0u, -1, -1, 0u, 0u, 0u, 0u, 0u          \
    }
/* Records one event on the calling thread's trace (nothing, GPUPROF_OK,
 * unless tracing is on). GPUPROF_E_INVALID for an unknown op, an end
 * before the start, a request missing where the op needs one, or a size
 * that does not hold every field. Calling thread, wait-free. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_mpi_event(const gpuprof_mpi_event *e);

/* Says that the calling thread is the backend's own (a simulated device's,
 * a completion thread it started): what it does is not the program's, and
 * the host layer records none of its synchronization (doc/CORE.md "Host
 * threads"). Call it first thing on that thread; it lasts the thread's
 * life. Threads a runtime starts need no call (their calls come from the
 * runtime's code). Calling thread only, async-signal-safe. Since 0.1. */
GPUPROF_API void gpuprof_be_own_thread(void);

/* Are traces being written (GPUPROF_TRACE=1)? A backend may skip the work
 * of finding what a call waits for when they are not. Since 0.1. */
GPUPROF_API int gpuprof_be_tracing(void);

/* Is the library measuring now (initialized, not paused, not finalized)?
 * One load: cheap enough for every hook. Since 0.1. */
GPUPROF_API int gpuprof_be_measuring(void);
/* Is this process a fork child of a measured process (where threads the
 * backend started in the parent no longer exist)? Since 0.1. */
GPUPROF_API int gpuprof_be_forked(void);

/* ------------------------------------------------------------------------ */
/* Activities with extra values                                              */
/* ------------------------------------------------------------------------ */

/* More gpuprof_activity.flags bits that only gpuprof_be_activity_submit
 * accepts (pinned). NOTE: extra metric values for the operation, not a
 * device activity (no count, time, bytes or trace record); with
 * GPUPROF_ACTIVITY_MORE the operation stays open, without it this closes
 * it. HOST: the operation ran on the host (a build, a wait): no trace record
 * on a device stream. INSTR: values of GPU-instruction metrics (PC samples)
 * for one instruction of the kernel `name` in `binary`; `bytes` carries the
 * instruction's offset in the binary; always with NOTE. */
#define GPUPROF_ACTIVITY_NOTE 0x80000000u
#define GPUPROF_ACTIVITY_HOST 0x40000000u
#define GPUPROF_ACTIVITY_INSTR 0x20000000u
/* WAIT: [start_ns, end_ns] is a time the calling thread was blocked waiting
 * for the device, inside the operation (a blocking transfer or map): with
 * NOTE and GPUPROF_ACTIVITY_MORE. Every activity of kind GPUPROF_OP_SYNC
 * that is not a note is such a wait already. The core adds its length as
 * blame.cpu_idle and splits it over the device work that ran meanwhile
 * (blame.cpu_idle_cause; doc/CORE.md "Blame and detectors"). DONE: the
 * kernel this activity belongs to has already left the count of kernels in
 * flight (gpuprof_be_gpu_done). Since 0.1. */
#define GPUPROF_ACTIVITY_WAIT 0x10000000u
#define GPUPROF_ACTIVITY_DONE 0x08000000u

/* No GPU binary known (gpuprof_activity_extra.binary, gpuprof_be_gpu_binary
 * failing). */
#define GPUPROF_NO_BINARY 0xFFFFFFFFu
/* Extra values one activity may carry. */
#define GPUPROF_EXTRA_MAX 4

/* What an activity carries beyond gpuprof_activity. Fill with
 * GPUPROF_ACTIVITY_EXTRA_INIT. `metric` ids are built-in ones
 * (gpuprof_metric_id) or ids gpuprof_be_metric_register returned. */
typedef struct gpuprof_activity_extra {
    size_t size;     /* sizeof(gpuprof_activity_extra) */
    uint32_t binary; /* the kernel's GPU binary (gpuprof_be_gpu_binary) */
    uint32_t count;  /* values used, at most GPUPROF_EXTRA_MAX */
    uint32_t metric[GPUPROF_EXTRA_MAX];
    uint64_t value[GPUPROF_EXTRA_MAX];
} gpuprof_activity_extra;

#define GPUPROF_ACTIVITY_EXTRA_INIT                                            \
    {                                                                          \
        sizeof(gpuprof_activity_extra), GPUPROF_NO_BINARY, 0u,                 \
            {0u, 0u, 0u, 0u},                                                  \
        {                                                                      \
            0u, 0u, 0u, 0u                                                     \
        }                                                                      \
    }

/* gpuprof_activity_submit with the flags above and `extra` (may be NULL).
 * GPUPROF_E_INVALID for a bad struct, a count over GPUPROF_EXTRA_MAX or a
 * metric id no backend registered; otherwise as gpuprof_activity_submit.
 * Any thread; wait-free after a thread's first call. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_activity_submit(
    const gpuprof_activity *a, const gpuprof_activity_extra *extra);

/* Makes the calling thread patient (on != 0): when its channel to the
 * monitor is full, submissions run monitor rounds and retry instead of
 * dropping. Only for a runtime's own thread that delivers records in bursts,
 * never an application thread. Calling thread only. Since 0.1. */
GPUPROF_API void gpuprof_be_patient(int on);

/* ------------------------------------------------------------------------ */
/* GPU binaries, hidden code                                                 */
/* ------------------------------------------------------------------------ */

/* Saves a GPU binary once per content (<output dir>/binaries/<hash>.<ext>)
 * and returns its module id for gpuprof_activity_extra.binary, or
 * GPUPROF_NO_BINARY when it could not be saved (counted, warned once).
 * Slow (a file write): call it where the runtime is slow anyway.
 * Since 0.1. */
GPUPROF_API uint32_t gpuprof_be_gpu_binary(const void *data, size_t size,
                                           const char *ext);
/* 0 when GPUPROF_GPU_BINARIES=0: then do not even read binaries. Since 0.1. */
GPUPROF_API int gpuprof_be_gpu_binaries_wanted(void);

/* Flags of gpuprof_be_hide (pinned). LOADER: [lo, hi) is a runtime's
 * loader or wrapper: its innermost frames of a call path, however many, are
 * dropped after the skipped ones. ALWAYS: its frames are dropped wherever
 * they stand (an interception layer's own code). */
#define GPUPROF_HIDE_LOADER 0x1u
#define GPUPROF_HIDE_ALWAYS 0x2u
/* Hides the text [lo, hi) from call paths, as `flags` says (exactly one of
 * the two); GPUPROF_E_INVALID for an empty range or other flags. At most 8
 * ranges of each kind are kept (the same range twice counts once); later
 * ones are ignored. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_hide(uintptr_t lo, uintptr_t hi,
                                           uint32_t flags);

/* ------------------------------------------------------------------------ */
/* Metrics                                                                   */
/* ------------------------------------------------------------------------ */

/* Ids of the built-in metrics a backend may give values to (pinned: they
 * are the metric ids of every profile). GPU kind: on operations. INSTR
 * kind: on GPU instructions (GPUPROF_ACTIVITY_INSTR). CPU kind: on CPU call
 * paths (gpuprof_be_sample_add). */
typedef enum gpuprof_metric_id {
    GPUPROF_METRIC_GPU_WORK_ITEMS = 6,
    GPUPROF_METRIC_GPU_GROUP_SIZE = 7,
    GPUPROF_METRIC_CPU_IDLE = 8,
    GPUPROF_METRIC_CPU_IDLE_CAUSE = 9,
    GPUPROF_METRIC_DET_JIT_SINGLE = 10,
    GPUPROF_METRIC_DET_OUTPUT_AS_INPUT = 11,
    GPUPROF_METRIC_DET_ARGS_NOT_ALIASED = 12,
    GPUPROF_METRIC_DET_MULTI_CONTEXT = 13,
    GPUPROF_METRIC_DET_INORDER_QUEUE = 14,
    GPUPROF_METRIC_DET_DEVICES_UNUSED = 15,
    GPUPROF_METRIC_GPU_REGISTERS = 17,
    GPUPROF_METRIC_GPU_SHARED_MEM = 18,
    GPUPROF_METRIC_GPU_IDLE_CAUSE = 19, /* CPU kind */
    GPUPROF_METRIC_PC_SAMPLES = 20,     /* INSTR kind, through 40 */
    GPUPROF_METRIC_PC_LATENCY = 21,
    GPUPROF_METRIC_PC_STALL_SELECTED = 22,
    GPUPROF_METRIC_PC_STALL_NOT_SELECTED = 23,
    GPUPROF_METRIC_PC_STALL_BARRIER = 24,
    GPUPROF_METRIC_PC_STALL_BRANCH_RESOLVING = 25,
    GPUPROF_METRIC_PC_STALL_DISPATCH_STALL = 26,
    GPUPROF_METRIC_PC_STALL_DRAIN = 27,
    GPUPROF_METRIC_PC_STALL_IMC_MISS = 28,
    GPUPROF_METRIC_PC_STALL_LG_THROTTLE = 29,
    GPUPROF_METRIC_PC_STALL_LONG_SCOREBOARD = 30,
    GPUPROF_METRIC_PC_STALL_MATH_PIPE_THROTTLE = 31,
    GPUPROF_METRIC_PC_STALL_MEMBAR = 32,
    GPUPROF_METRIC_PC_STALL_MIO_THROTTLE = 33,
    GPUPROF_METRIC_PC_STALL_MISC = 34,
    GPUPROF_METRIC_PC_STALL_NO_INSTRUCTIONS = 35,
    GPUPROF_METRIC_PC_STALL_SHORT_SCOREBOARD = 36,
    GPUPROF_METRIC_PC_STALL_SLEEPING = 37,
    GPUPROF_METRIC_PC_STALL_TEX_THROTTLE = 38,
    GPUPROF_METRIC_PC_STALL_WAIT = 39,
    GPUPROF_METRIC_PC_STALL_OTHER = 40,
    /* CPU kind, since 0.1 (GPUPROF_CPU_SAMPLING): CPU time (each sample's
     * since the thread's previous one) and timer expirations of cputime
     * samples, wall time and expirations of realtime samples. */
    GPUPROF_METRIC_CPU_TIME = 41,
    GPUPROF_METRIC_CPU_SAMPLES = 42,
    GPUPROF_METRIC_CPU_WALL = 43,
    GPUPROF_METRIC_CPU_WALL_SAMPLES = 44
} gpuprof_metric_id;

/* Metrics a backend registers at run time (a counter library's events, a
 * vendor's activity fields). Units, combinations and attachments are
 * pinned values. */
typedef enum gpuprof_metric_unit {
    GPUPROF_METRIC_UNIT_COUNT = 0,
    GPUPROF_METRIC_UNIT_NS = 1,
    GPUPROF_METRIC_UNIT_BYTES = 2
} gpuprof_metric_unit;
/* How values combine, over the values one context gets, over threads and
 * processes, and into a subtree's inclusive value. SUM: they add up.
 * ODD_SUM: they add up, but what means something is the mean over the
 * metric `count_metric` names (registers per thread summed over launches,
 * divided by launches). MAX: the largest value. */
typedef enum gpuprof_metric_combine {
    GPUPROF_METRIC_SUM = 0,
    GPUPROF_METRIC_ODD_SUM = 1,
    GPUPROF_METRIC_MAX = 2
} gpuprof_metric_combine;
/* Where values go. GPU_OPS: on GPU operations, through
 * gpuprof_be_activity_submit's extra values (kernels and other operations,
 * like gpu.time). CPU_PATHS: on call paths and regions of the calling
 * thread, through gpuprof_be_sample_add (counters of CPU code). */
typedef enum gpuprof_metric_attach {
    GPUPROF_METRIC_ON_GPU_OPS = 1,
    GPUPROF_METRIC_ON_CPU_PATHS = 2
} gpuprof_metric_attach;
/* gpuprof_metric_desc.flags: a subtree's combined (inclusive) value means
 * nothing for this metric (a peak of a rate): views show exclusive
 * values. */
#define GPUPROF_METRIC_NO_INCLUSIVE 0x1u

/* A metric to register. Fill with GPUPROF_METRIC_DESC_INIT; strings are
 * copied. */
typedef struct gpuprof_metric_desc {
    size_t size;             /* sizeof(gpuprof_metric_desc) */
    const char *name;        /* 1-63 bytes of [a-z0-9_.], e.g. "papi.l1_dcm" */
    const char *description; /* one line; NULL: none (at most 255 bytes kept) */
    uint32_t unit;           /* gpuprof_metric_unit */
    uint32_t combine;        /* gpuprof_metric_combine */
    uint32_t attach;         /* gpuprof_metric_attach */
    uint32_t flags;          /* GPUPROF_METRIC_NO_INCLUSIVE */
    const char *count_metric; /* ODD_SUM only (then required): the metric
                                 counting the summands, e.g. "gpu.count" */
} gpuprof_metric_desc;

#define GPUPROF_METRIC_DESC_INIT                                               \
    {                                                                          \
        sizeof(gpuprof_metric_desc), NULL, NULL, GPUPROF_METRIC_UNIT_COUNT,    \
            GPUPROF_METRIC_SUM, GPUPROF_METRIC_ON_GPU_OPS, 0u, NULL            \
    }

/* Registers a metric and stores its id in *id (for
 * gpuprof_activity_extra.metric or gpuprof_be_sample_add). Any time, before
 * or after gpuprof_init; ids are process-wide and stay valid. Registering
 * the same name again with the same descriptor gives the same id (a backend
 * initialized again). GPUPROF_E_INVALID for a bad descriptor (the reason in
 * gpuprof_last_error), GPUPROF_E_EXISTS when the name is a built-in metric
 * or was registered with another descriptor, GPUPROF_E_LIMIT past 32
 * registered metrics. Profiles carry each metric's descriptor; the analysis
 * shows it like a built-in one. Since 0.1. */
GPUPROF_API gpuprof_status
gpuprof_be_metric_register(const gpuprof_metric_desc *desc, uint32_t *id);

/* ------------------------------------------------------------------------ */
/* CPU-time samples                                                          */
/* ------------------------------------------------------------------------ */

/* For a profiling signal handler (async-signal-safe). The innermost open
 * region of the interrupted thread (0: none), to hand back to
 * gpuprof_be_sample_add. Since 0.1. */
GPUPROF_API uint32_t gpuprof_be_sample_region(void);
/* The interrupted thread's return addresses, innermost first (the handler
 * and the signal trampoline included), or -1 when unwinding is not safe now.
 * Since 0.1. */
GPUPROF_API int gpuprof_be_backtrace_in_signal(void **ip, int max);
/* Is the calling thread inside the library's own work (its time is not the
 * program's: skip the sample)? Async-signal-safe. Since 0.1. */
GPUPROF_API int gpuprof_be_in_self(void);
/* Adds `value` of metric `metric` (GPUPROF_METRIC_GPU_IDLE_CAUSE, or one
 * registered with GPUPROF_METRIC_ON_CPU_PATHS) to the calling thread's call
 * path `ip[0..n)` (innermost first) beneath `region` (from
 * gpuprof_be_sample_region on this thread), or to the region itself when
 * n is 0. `truncated`: the path was cut (its outermost frames are unknown).
 * Only the thread the sample was taken on, outside signal handlers.
 * GPUPROF_E_INVALID for a region or metric that does not fit, GPUPROF_E_NOMEM
 * when the call path could not be recorded (counted in "records.dropped").
 * Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_sample_add(uint32_t region,
                                                 void *const *ip, int n,
                                                 int truncated, uint32_t metric,
                                                 uint64_t value);
/* Samples a backend takes in a signal handler of its own (a hardware
 * counter's overflow: PAPI_overflow) go the way of the library's own CPU
 * samples (cpu.time): gpuprof_be_sample_thread makes the calling thread
 * ready for them (call it on each thread before arming what signals it;
 * not in a signal handler), then gpuprof_be_sample_take, in the handler,
 * records one sample: `value` of `metric` (registered with
 * GPUPROF_METRIC_ON_CPU_PATHS) at the interrupted thread's full call path
 * beneath its innermost open region, with its time in the trace when
 * tracing. `ucontext`: the handler's third argument, where the path starts
 * (NULL: after the signal frame). Samples reach the calling context tree
 * at the next drain (20 ms, a flush, the thread's exit).
 * gpuprof_be_sample_thread: GPUPROF_E_STATE before init or after finalize,
 * GPUPROF_E_NOMEM. gpuprof_be_sample_take is async-signal-safe and answers
 * 1 when the sample was taken, 0 when not (paused, inside the library's own
 * code, a bad metric, no gpuprof_be_sample_thread on this thread, or a full
 * ring: then the value is kept on the region without its path). Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_sample_thread(void);
GPUPROF_API int gpuprof_be_sample_take(uint32_t metric, uint64_t value,
                                       void *ucontext);

/* ------------------------------------------------------------------------ */
/* Observing application threads                                            */
/* ------------------------------------------------------------------------ */

/* For a backend that measures the application threads themselves (a
 * counter library: PAPI): what happens on a thread, told on that thread,
 * synchronously. Node ids are those gpuprof_be_sample_add takes on the
 * calling thread (0: its root, outside every region). Fill with
 * GPUPROF_OBSERVER_INIT; NULL callbacks are skipped. Callbacks sit on the
 * region path: they must be short, must not begin or end regions or
 * operations, and may call gpuprof_be_sample_add, gpuprof_be_sample_region
 * and gpuprof_be_measuring.
 *  region: the thread's innermost open region changes from `from` to `to`.
 *          A begin (while measuring): `to` is the new region, `from` its
 *          parent, told before the region takes its start time. An end (also
 *          each region an unbalanced end closes, and those still open when
 *          the thread exits, whatever the mode): `from` is the region
 *          closed, told after it took its end time.
 *  op_begin: an operation begins on the thread (gpuprof_op_begin or
 *          gpuprof_be_op_begin of any backend, while measuring; nested
 *          begins are not told): `region` is the innermost open region,
 *          `context` the node of the operation's calling context (the
 *          innermost frame of its call path beneath `region`; its
 *          placeholder hangs beneath that node).
 *  op_end: that operation ends (its gpuprof_op_end / gpuprof_be_op_end).
 *  thread_exit: the thread exits (after its open regions were closed and
 *          told); gpuprof_be_sample_add still works in it. Not told for a
 *          thread that never used the library, nor for the thread that
 *          returns from main.
 *  thread_start: the library has just made the state of a thread, told
 *          on it whatever the mode: at its start through lib/host's
 *          pthread_create (before it runs the program's code), else at its
 *          first call into the library; for a backend that measures
 *          threads that never call the library (a counter's overflow
 *          samples). Not told for threads whose state existed before the
 *          observer was installed (the thread of init among them: the
 *          backend starts that one itself). A struct without this field
 *          (an older size) is accepted. */
typedef struct gpuprof_observer {
    size_t size; /* sizeof(gpuprof_observer) */
    void *user;
    void (*region)(void *user, uint32_t from, uint32_t to);
    void (*op_begin)(void *user, uint32_t region, uint32_t context);
    void (*op_end)(void *user);
    void (*thread_exit)(void *user);
    void (*thread_start)(void *user); /* since 0.1: see above */
} gpuprof_observer;

#define GPUPROF_OBSERVER_INIT                                                  \
    {                                                                          \
        sizeof(gpuprof_observer), NULL, NULL, NULL, NULL, NULL, NULL           \
    }

/* Installs `obs` (copied) as the observer of application threads, or
 * removes the one installed (`obs` NULL). `flags` must be 0. One observer
 * at a time: GPUPROF_E_EXISTS when another is installed; GPUPROF_E_INVALID
 * for a bad struct or flags; GPUPROF_E_LIMIT after 8 installations in a
 * process. After a removal, callbacks already running on other threads may
 * still finish: their code must stay loaded. A backend installs it in
 * `init` and removes it in `fini`. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_observe(const gpuprof_observer *obs,
                                              uint32_t flags);

/* ------------------------------------------------------------------------ */
/* Devices (doc/BACKENDS.md, "Devices")                                      */
/* ------------------------------------------------------------------------ */

/* What a device can hold at once, as its runtime reports it: the GPU
 * advice computes kernels' occupancy from it (doc/ANALYSIS.md). A field the
 * runtime does not give stays 0. Fill with GPUPROF_DEVICE_INFO_INIT; fields
 * are only ever appended (the core reads min(size, its own size)). */
typedef struct gpuprof_device_info {
    size_t size;          /* sizeof(gpuprof_device_info) */
    const char *api;      /* "cuda", "levelzero", "opencl", ...: the
                             numbering `device` belongs to (copied) */
    uint32_t device;      /* as gpuprof_activity.device */
    const char *name;     /* the device's name (copied), NULL: none */
    uint32_t compute_major, compute_minor; /* NVIDIA compute capability */
    uint32_t sm_count;    /* multiprocessors (SMs, compute units, ...) */
    uint32_t warp_size;   /* threads a warp (SIMD width, subgroup) runs */
    uint32_t max_threads_per_block; /* the largest block (work-group) */
    uint32_t max_threads_per_sm;    /* threads resident on one SM at once */
    uint32_t max_blocks_per_sm;     /* blocks resident on one SM at once */
    uint32_t registers_per_sm;      /* 32-bit registers of one SM */
    uint32_t registers_per_block;   /* the most one block may have */
    uint64_t shared_bytes_per_sm;   /* shared (local) memory of one SM */
    uint64_t shared_bytes_per_block; /* the most one block may have */
    uint64_t shared_bytes_reserved;  /* per block, taken by the driver */
} gpuprof_device_info;

#define GPUPROF_DEVICE_INFO_INIT                                               \
    {                                                                          \
        sizeof(gpuprof_device_info), NULL, 0u, NULL, 0u, 0u, 0u, 0u, 0u, 0u,   \
            0u, 0u, 0u, 0u, 0u, 0u                                             \
    }

/* Records what device `d->device` of `d->api` is, for the profile
 * (section DEVICES, doc/FORMATS.md): at most 64 devices per process;
 * describing one again replaces what was said. GPUPROF_E_INVALID for a bad
 * struct or no api, GPUPROF_E_LIMIT past 64 devices. Any thread; takes a
 * lock (call it where the runtime is slow anyway: at context creation or
 * flush). Since 0.1. */
GPUPROF_API gpuprof_status
gpuprof_be_device_describe(const gpuprof_device_info *d);

/* ------------------------------------------------------------------------ */
/* Blame and detectors (doc/CORE.md, "Blame and detectors")                  */
/* ------------------------------------------------------------------------ */

/* Kernels in flight (GPU_IDLE_CAUSE: CPU time sampled while there are none):
 * a GPUPROF_OP_KERNEL operation counts from gpuprof_be_op_begin to its
 * final activity. A backend that learns of a kernel's end before it submits
 * (a completion callback), or whose final activity comes much later, calls
 * this then and flags the kernel's activities GPUPROF_ACTIVITY_DONE; a
 * launch the runtime refused (no activity will come) calls it too. Any
 * thread; async-signal-safe. Since 0.1. */
GPUPROF_API void gpuprof_be_gpu_done(void);
/* A detector's finding: `value` of metric `metric` (a detect.* id of
 * gpuprof_metric_id, or a registered one) on operation `correlation` (a
 * note; the operation stays open). Any thread. Since 0.1. */
GPUPROF_API void gpuprof_be_detect_note(uint64_t correlation, uint32_t metric,
                                        uint64_t value);
/* Data read back from the device into host memory [ptr, ptr + size). */
GPUPROF_API void gpuprof_be_detect_readback(const void *ptr, size_t size);
/* Does a host-to-device transfer from [ptr, ptr + size) send data read back
 * before (then note GPUPROF_METRIC_DET_OUTPUT_AS_INPUT)? 1 or 0. */
GPUPROF_API int gpuprof_be_detect_sent_again(const void *ptr, size_t size);
/* A launch of kernel `name` in context `context` (any number naming it):
 * 1 once the name has been launched in more than one context (then note
 * GPUPROF_METRIC_DET_MULTI_CONTEXT). Since 0.1. */
GPUPROF_API int gpuprof_be_detect_kernel_context(const char *name,
                                                 uintptr_t context);

/* ------------------------------------------------------------------------ */
/* Time, log, counters, the library's own work                               */
/* ------------------------------------------------------------------------ */

/* The process clock: CLOCK_MONOTONIC nanoseconds, the time base of
 * gpuprof_activity. Since 0.1. */
GPUPROF_API uint64_t gpuprof_be_now_ns(void);
/* A device timestamp in process-clock nanoseconds, given the offset
 * (host - device, in ns) the backend measured; never below 0. */
static inline uint64_t gpuprof_be_clock_to_host(uint64_t device_ns,
                                                int64_t offset_ns)
{
    int64_t v = (int64_t)device_ns + offset_ns;
    return v > 0 ? (uint64_t)v : 0u;
}

/* One log line through the program's log callback (gpuprof_set_log), at
 * `level`; printf-style. Since 0.1. */
GPUPROF_API void gpuprof_be_log(gpuprof_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The one line for an unusable setting of the backend: names the variable,
 * its value, what a value should be and what is used instead. Since 0.1. */
GPUPROF_API void gpuprof_be_setting_ignored(const char *var, const char *value,
                                            const char *want,
                                            const char *instead);

/* Counters a backend adds to (gpuprof_stat_get names; pinned values). */
typedef enum gpuprof_counter {
    GPUPROF_COUNTER_RECORDS_DROPPED = 1,      /* "records.dropped" */
    GPUPROF_COUNTER_RECORDS_UNATTRIBUTED = 2, /* "records.unattributed" */
    GPUPROF_COUNTER_GPU_TOOL_OVERHEAD_NS = 3  /* "gpu.tool_overhead_ns" */
} gpuprof_counter;
/* Adds `delta` to a counter; GPUPROF_E_INVALID for an unknown one.
 * Wait-free. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_count(gpuprof_counter counter,
                                            uint64_t delta);

/* Brackets work the library does for the program on the calling thread
 * (reading binaries, settling records): its time is gpuprof.self_ns and
 * samples skip it. Nestable. Since 0.1. */
GPUPROF_API void gpuprof_be_self_begin(void);
GPUPROF_API void gpuprof_be_self_end(void);
/* Brackets a runtime call that may start helper processes (a compiler's
 * linker): a fork meanwhile is the runtime's helper, never measured as the
 * program. Since 0.1. */
GPUPROF_API void gpuprof_be_helpers_begin(void);
GPUPROF_API void gpuprof_be_helpers_end(void);
/* Device work in flight, +1 / -1 (a runtime may start its compiler's
 * helpers for it): children started meanwhile are helpers too.
 * Since 0.1. */
GPUPROF_API void gpuprof_be_helpers_busy(int64_t delta);

/* ------------------------------------------------------------------------ */
/* Interception layers                                                       */
/* ------------------------------------------------------------------------ */

/* What gpuprof_layer_dispatch calls for `api`: returns the table the layer
 * gives its loader (hooks where the backend measures, `target`'s entries
 * elsewhere) with its entry count in *out_entries, or NULL (pass through). */
typedef const void *(*gpuprof_layer_fn)(const void *target, unsigned entries,
                                        unsigned *out_entries);
/* Makes `fn` the one that answers gpuprof_layer_dispatch(api, ...) (`api`
 * is kept, not copied; NULL `fn` removes it). A backend calls it when it
 * registers; `fn` returns NULL while the backend is not active (the layer
 * then passes every call through). GPUPROF_E_EXISTS when another function
 * has `api`, GPUPROF_E_LIMIT past 8 APIs. Since 0.1. */
GPUPROF_API gpuprof_status gpuprof_be_layer_register(const char *api,
                                                     gpuprof_layer_fn fn);

#ifdef __cplusplus
}
#endif

#endif /* GPUPROF_BACKEND_H */
