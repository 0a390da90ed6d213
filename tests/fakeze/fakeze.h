/* tests/fakeze/fakeze.h - the inside of the fake Level Zero driver.
 *
 * libfakeze.so is a driver the real Level Zero loader loads through
 * ZE_ENABLE_ALT_DRIVERS (tests/fakeze/README.md is its specification: the
 * timing model and every knob). The Level Zero headers only declare the
 * handle structs (struct _ze_device_handle_t, ...), so the driver defines
 * them here: a handle is a pointer to one of these objects.
 *
 * One mutex (fz.lock) guards every object: a test driver needs correctness,
 * not scalability. Device work waits in per-engine FIFOs (struct fz_op) until
 * everything it waits for has a signal tick; fz_advance() then gives it start
 * and end ticks. Host waits poll those ticks against the host clock.
 *
 * Files: fz_driver.c (tables, init, driver, devices, contexts, knobs),
 * fz_memory.c (memory, modules, kernels), fz_cmdlist.c (lists, queues,
 * scheduling), fz_event.c (events, pools, fences, waits, the clock). */
#ifndef FAKEZE_H
#define FAKEZE_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define FZ_HIDDEN __attribute__((visibility("hidden")))
#define FZ_MAX_DEVICES 8
#define FZ_MAX_ENGINES 16 /* per group */
#define FZ_NAME_MAX 128
#define FZ_PATTERN_MAX 128

/* A per-kernel duration from FAKEZE_KERNELS. */
struct fz_kernel_time {
    char name[FZ_NAME_MAX];
    uint64_t ns;
};

/* The knobs, read once at zeInit (README: "Knobs"). */
struct fz_knobs {
    uint32_t devices;
    uint64_t timer_hz;
    uint64_t ts_start;
    uint32_t ts_valid_bits;
    uint32_t kernel_ts_valid_bits;
    uint64_t context_ts_offset;
    uint64_t kernel_ns;
    struct fz_kernel_time *kernels;
    size_t n_kernels;
    uint64_t copy_bps;
    uint64_t copy_ns;
    uint64_t submit_ns;
    uint32_t compute_engines;
    uint32_t copy_engines;
    clockid_t clock;
    ze_result_t init_result;
};

enum fz_op_kind {
    FZ_OP_KERNEL,
    FZ_OP_COPY,
    FZ_OP_FILL,
    FZ_OP_BARRIER,
    FZ_OP_SIGNAL,
    FZ_OP_WAIT,
    FZ_OP_RESET,
    FZ_OP_TIMESTAMP,
    FZ_OP_QUERY_TS,
};

/* One recorded command (a regular list keeps an array of them; an
 * immediate list submits each at once). Owns waits and events (copies). */
struct fz_cmd {
    enum fz_op_kind kind;
    char name[FZ_NAME_MAX]; /* kernel name */
    void *dst;              /* copy, fill, timestamp, query destination */
    const void *src;        /* copy source */
    size_t bytes;           /* copy / fill size */
    unsigned char pattern[FZ_PATTERN_MAX];
    size_t pattern_size;
    ze_event_handle_t signal;
    uint32_t n_waits;
    ze_event_handle_t *waits;  /* owned */
    uint32_t n_events;         /* query-timestamps / reset targets */
    ze_event_handle_t *events; /* owned */
    size_t *offsets;           /* query-timestamps offsets (owned) or NULL */
};

struct fz_queue_state;

/* A command on its engine, waiting to be scheduled. */
struct fz_op {
    struct fz_cmd cmd; /* a copy; waits/events owned by the op */
    uint64_t earliest; /* tick it may start at (submission) */
    struct fz_queue_state *queue;
    ze_fence_handle_t fence; /* signalled at the end of this op */
    uint64_t list_id;
    bool silent; /* no FAKEZE_TRACE line (a fence carrier) */
    struct fz_op *next;
};

struct fz_engine {
    struct _ze_device_handle_t *dev;
    uint32_t ordinal, index;
    uint64_t free_tick;        /* end of the last scheduled op */
    struct fz_op *head, *tail; /* not yet scheduled */
};

/* What a queue (or an immediate list) has submitted: for Synchronize. */
struct fz_queue_state {
    struct fz_engine *engine;
    uint64_t pending;  /* ops not yet scheduled */
    uint64_t last_end; /* end tick of the latest scheduled op */
    bool synchronous;
    uint64_t id;
};

struct _ze_driver_handle_t {
    int unused;
};

struct _ze_device_handle_t {
    uint32_t id;
    struct fz_engine compute[FZ_MAX_ENGINES];
    struct fz_engine copy[FZ_MAX_ENGINES];
};

struct _ze_context_handle_t {
    int unused;
};

struct _ze_module_handle_t {
    struct _ze_device_handle_t *dev;
    unsigned char *bytes;
    size_t size;
    char **kernel_names; /* SPIR-V entry points; NULL: any name */
    uint32_t n_kernel_names;
};

struct _ze_module_build_log_handle_t {
    int unused;
};

struct _ze_kernel_handle_t {
    struct _ze_module_handle_t *module;
    char name[FZ_NAME_MAX];
    uint32_t group[3];
};

struct _ze_command_list_handle_t {
    struct _ze_device_handle_t *dev;
    bool immediate;
    bool closed;
    uint32_t ordinal;
    struct fz_cmd *cmds;
    size_t n_cmds, cap_cmds;
    struct fz_queue_state q; /* immediate lists only */
    uint64_t id;
};

struct _ze_command_queue_handle_t {
    struct _ze_device_handle_t *dev;
    struct fz_queue_state q;
};

struct _ze_event_pool_handle_t {
    ze_event_pool_flags_t flags;
    uint32_t count;
};

/* A change of an event's state as the host sees it, at device tick `at`:
 * signalled (with the signalling op's start/end ticks) or reset. */
struct fz_sig {
    uint64_t at;
    bool on;
    uint64_t start, end;
};

struct _ze_event_handle_t {
    struct _ze_event_pool_handle_t *pool;
    uint32_t index;
    /* The device's order: the latest scheduled signal (waits, queries
     * appended to lists). */
    bool scheduled;      /* start/end known */
    uint64_t start, end; /* ticks */
    /* The host's view: the changes by tick; the last one at or before
     * now is the state (README "Events"). */
    struct fz_sig *hist;
    uint32_t nhist, caphist;
};

struct _ze_fence_handle_t {
    struct _ze_command_queue_handle_t *queue;
    bool scheduled;
    uint64_t end;
};

/* The driver's state. */
struct fz_state {
    pthread_mutex_t lock;
    bool initialised;
    struct fz_knobs k;
    uint64_t h0; /* host ns at zeInit */
    struct _ze_driver_handle_t driver;
    struct _ze_device_handle_t devices[FZ_MAX_DEVICES];
    FILE *trace;
    uint64_t next_id;
};

FZ_HIDDEN extern struct fz_state fz;

/* Handle objects (fz_driver.c): zeroed, and kept on a driver-wide list
 * until destroyed, as a real driver tracks them, so a program that exits
 * without destroying its handles leaks nothing (LeakSanitizer). */
FZ_HIDDEN void *fz_new(size_t size);
FZ_HIDDEN void fz_delete(void *p);

/* Clock (fz_event.c). */
FZ_HIDDEN uint64_t fz_now(void);
FZ_HIDDEN uint64_t fz_tick_floor(uint64_t host_ns);
FZ_HIDDEN uint64_t fz_tick_ceil(uint64_t host_ns);
FZ_HIDDEN uint64_t fz_host_of(uint64_t tick);
FZ_HIDDEN uint64_t fz_ticks_of_ns(uint64_t ns);
FZ_HIDDEN uint64_t fz_mask(uint32_t bits);
/* Waits (fz.lock not held) until ready(arg) says done; SUCCESS or
 * NOT_READY after timeout_ns. ready() runs under fz.lock and returns
 * whether the tick is known (and sets *end_tick). */
FZ_HIDDEN ze_result_t fz_wait(bool (*ready)(void *arg, uint64_t *end_tick),
                              void *arg, uint64_t timeout_ns);
FZ_HIDDEN bool fz_queue_ready(void *queue_state, uint64_t *end_tick);

/* Scheduling (fz_cmdlist.c); fz.lock held. */
FZ_HIDDEN void fz_advance(void);
FZ_HIDDEN void fz_cmd_free(struct fz_cmd *c);
FZ_HIDDEN void fz_queue_init(struct fz_queue_state *q, struct fz_engine *e,
                             bool sync);
FZ_HIDDEN struct fz_engine *fz_engine_of(struct _ze_device_handle_t *dev,
                                         uint32_t ordinal, uint32_t index);
FZ_HIDDEN uint64_t fz_kernel_ns(const char *name);
FZ_HIDDEN void fz_event_timestamp(ze_event_handle_t ev,
                                  ze_kernel_timestamp_result_t *out);
/* A change of the host's view of ev at tick `at` (fz.lock held). */
FZ_HIDDEN void fz_event_change(ze_event_handle_t ev, uint64_t at, bool on,
                               uint64_t start, uint64_t end);

/* Table fillers, one per file's objects. */
FZ_HIDDEN void fz_fill_mem(ze_mem_dditable_t *t);
FZ_HIDDEN void fz_fill_module(ze_module_dditable_t *t);
FZ_HIDDEN void fz_fill_module_build_log(ze_module_build_log_dditable_t *t);
FZ_HIDDEN void fz_fill_kernel(ze_kernel_dditable_t *t);
FZ_HIDDEN void fz_fill_command_list(ze_command_list_dditable_t *t);
FZ_HIDDEN void fz_fill_command_queue(ze_command_queue_dditable_t *t);
FZ_HIDDEN void fz_fill_event_pool(ze_event_pool_dditable_t *t);
FZ_HIDDEN void fz_fill_event(ze_event_dditable_t *t);
FZ_HIDDEN void fz_fill_fence(ze_fence_dditable_t *t);

/* Memory lookup for the trace (fz_memory.c); fz.lock held. */
FZ_HIDDEN const char *fz_mem_kind(const void *p);

#endif
