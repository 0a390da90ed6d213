/*
 * cl.h - the OpenCL backend's internals, shared by opencl.c (state, clocks,
 * commands, blame, detectors, life cycle) and cl_hooks.c (the dispatch
 * table's hooks). Seed 002 §III-IV; doc/BACKENDS.md.
 *
 * How a command travels. A hook on the application thread begins an
 * operation (call path + placeholder, gpuprof_be_op_begin), calls the
 * runtime through the target dispatch table with an event (the program's,
 * which we retain, or one we make), and files a `cl_cmd` on the outstanding
 * list with a CL_COMPLETE callback. The callback (any runtime thread) only
 * reads the event's START/END and pushes the command on a lock-free stack: it takes no lock and never calls
 * back into us, so it cannot deadlock with a runtime lock. Application
 * threads (the next hook, a wait, a flush) settle: under cl_mu they take
 * the completed commands (converting their device times to the process
 * clock, one clock sample per batch) and submit them, releasing our event.
 * Waits are reported to the core, which blames them (core blame.c).
 */
#ifndef GPUPROF_BACKENDS_OPENCL_CL_H
#define GPUPROF_BACKENDS_OPENCL_CL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl_icd.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_backend.h"

#include "backends/kit/atomics.h"
#include "backends/kit/submit.h"

/* The runtime's table (calls go on through it) and ours. */
extern struct _cl_icd_dispatch gpuprof__cl_T;
extern struct _cl_icd_dispatch gpuprof__cl_H;
#define T gpuprof__cl_T

/* Are hooks measuring (backend started)? */
extern _Atomic int gpuprof__cl_on;
static inline bool gpuprof__cl_measuring(void)
{
    return gp_load_relaxed(&gpuprof__cl_on) && gpuprof_be_measuring();
}

/* One command on a device, from enqueue until its activity is submitted. */
typedef struct cl_cmd {
    struct cl_cmd *next, *prev;    /* pending or finished list, cl_mu */
    struct cl_cmd *_Atomic done;   /* completed stack link */
    cl_event ev;                   /* our reference */
    uint64_t corr;
    uint32_t kind, device, stream;
    struct cl_dev *dev;            /* its clock, for the callback */
    const char *name;              /* kernels: interned, never freed */
    uint32_t binary;               /* kernels: GPU binary module id */
    uint64_t bytes, work_items, group_size;
    uint64_t enq_ns;               /* host clock when enqueued */
    uint64_t start_ns, end_ns;     /* device clock from the callback;
                                      process clock once settled */
    int32_t status;                /* from the callback: < 0 failed */
} cl_cmd;

/* A device and how its clock maps to ours. */
typedef struct cl_dev {
    cl_device_id id;
    uint32_t index;
    _Atomic int clock;      /* host clock matching the device, -1: offset */
    _Atomic int64_t offset; /* process = device + offset (clock -1) */
    bool calibrated;        /* claimed by the thread that calibrates */
    bool used;
} cl_dev;

typedef struct cl_queue {
    cl_command_queue q;
    cl_context ctx;
    cl_dev *dev;
    uint32_t id;
} cl_queue;

/* A built program's binaries, one per device, saved as GPU modules. */
#define CL_MAX_BIN 8
typedef struct cl_bins {
    uint32_t n;
    cl_device_id dev[CL_MAX_BIN];
    uint32_t id[CL_MAX_BIN]; /* module id, GPUPROF_NO_BINARY when not saved */
} cl_bins;

#define CL_MAX_ARGS 64
typedef struct cl_kern {
    cl_kernel k;
    cl_context ctx;
    cl_bins bins;                 /* its program's, copied at creation */
    const char *name;             /* interned */
    uint32_t name_idx;
    cl_mem arg[CL_MAX_ARGS];      /* buffer arguments (NULL: other) */
    uint64_t svm_args;            /* bit i: argument i is an SVM pointer */
    bool dirty;                   /* arguments changed since the check */
    bool not_aliased;             /* the check's answer */
} cl_kern;

typedef struct cl_memobj {
    cl_mem m;
    cl_mem root;                  /* the buffer a sub-buffer lies in */
    uint64_t off, size;
    uintptr_t host;               /* CL_MEM_USE_HOST_PTR, else 0 */
    bool kernel_arg;              /* passed to a kernel at some launch */
} cl_memobj;

/* opencl.c: lookups (under cl_mu inside; the returned objects stay valid
 * until the runtime object is released: callers are the program's threads
 * using it). */
cl_queue *gpuprof__cl_queue(cl_command_queue q);

/* cl_deps.c: dependency notes for traces (trace format 1.3). */
void gpuprof__cl_deps_event(cl_event ev, uint64_t corr);
void gpuprof__cl_deps_wait_list(uint64_t corr, cl_command_queue q, cl_uint n,
                                const cl_event *wl);
void gpuprof__cl_deps_blocking(uint64_t corr, cl_command_queue q);
void gpuprof__cl_deps_finish(uint64_t corr, cl_command_queue q);
void gpuprof__cl_deps_wait_events(uint64_t corr, cl_uint n, const cl_event *l);
void gpuprof__cl_kern_new(cl_kernel k); /* at creation: name, context */
void gpuprof__cl_kern_forget(cl_kernel k);
void gpuprof__cl_kern_set_arg(cl_kernel k, cl_uint i, size_t size,
                        const void *value, bool svm);
void gpuprof__cl_mem_new(cl_mem m);
void gpuprof__cl_mem_forget(cl_mem m);
void gpuprof__cl_queue_new(cl_command_queue q, cl_context ctx, cl_device_id d,
                     bool in_order, uint64_t corr);
void gpuprof__cl_queue_forget(cl_command_queue q);
/* Records the context's devices; true for the process's first context
 * (whose operation stays open until finalize: devices unused). */
bool gpuprof__cl_context_new(cl_context ctx, uint64_t corr);
void gpuprof__cl_build_done(cl_program p, cl_uint ndev, uint64_t corr);
/* Programs: their binaries are saved when the first kernel is made from
 * them (a build may be asynchronous; a build or release forgets them). */
void gpuprof__cl_program_binaries(cl_program p);
void gpuprof__cl_program_forget(cl_program p);

/* Commands. A hook fills one on its stack (init, then name, bytes, ...)
 * and files it after the runtime accepted it with `ev`: filing copies it
 * into the outstanding list, retains `ev` unless it is `ours`, and sets
 * the completion callback. Returns the filed command, NULL when it could
 * not be filed (out of memory: counted as dropped; `ours` released). */
void gpuprof__cl_cmd_init(cl_cmd *c, uint64_t corr, uint32_t kind,
                          const cl_queue *q);
cl_cmd *gpuprof__cl_cmd_file(const cl_cmd *c, cl_event ev, bool ours);
/* Waits: begin before the runtime blocks, end after; `own`: the wait is
 * inside the operation's own command (a blocking transfer or map, filed),
 * reported as a note on it; else it is the operation's activity. The core
 * adds CPU_IDLE and blames the wait (core blame.c). */
typedef struct cl_wait {
    uint64_t t0;
} cl_wait;
cl_wait gpuprof__cl_wait_begin(void);
void gpuprof__cl_wait_end(cl_wait w, uint64_t corr, bool own);
/* Takes completed commands in and submits what is final (cheap when there
 * is nothing). */
void gpuprof__cl_settle(bool force);
/* Benchmarks (bench_opencl): waits for the completion callbacks still due
 * (up to 100 ms) and settles, so that a timed round's leftovers are its
 * own and not the next round's. Any thread. */
void gpuprof__cl_quiesce(void);

/* Detectors: the OpenCL facts; the bookkeeping and the notes on the
 * operation's placeholder are the core's (gpuprof_be_detect_*). A
 * read-back from a kernel's buffer into host memory: */
void gpuprof__cl_note_readback(const void *ptr, size_t size, cl_mem src);
/* A kernel launch on `q`: the kernel's interned name (NULL when unknown),
 * its GPU binary on q's device, and the two detectors' answers. */
const char *gpuprof__cl_kernel_launch(cl_kernel k, const cl_queue *q,
                                      uint32_t *binary, bool *not_aliased,
                                      bool *multi_ctx);
/* A host-side operation's activity (build, queue creation, wait). */
void gpuprof__cl_host_activity(uint64_t corr, uint32_t kind, uint64_t t0,
                               uint64_t t1, uint32_t flags, unsigned nx,
                               const uint32_t *xm, const uint64_t *xv);

/* cl_hooks.c */
void gpuprof__cl_hooks_install(struct _cl_icd_dispatch *h);

#endif /* GPUPROF_BACKENDS_OPENCL_CL_H */
