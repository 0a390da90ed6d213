/*
 * l0.h - the Level Zero backend's internals, shared by levelzero.c (the
 * loader, the tracer, the life cycle), l0_cmd.c (devices, clocks, our
 * timestamp events, commands and their completion), l0_harv.c (harvest
 * lists), l0_objs.c (objects) and l0_hooks.c (the tracing layer's
 * prologues and epilogues). doc/BACKENDS.md "Level Zero".
 *
 * How a command travels. The loader's tracing layer calls our prologue
 * before the driver and our epilogue after it, on the program's thread.
 * An append to an immediate command list is device work at once: the
 * prologue begins an operation (call path + placeholder), gives the call
 * a kernel-timestamp event of ours when the program passed none (the
 * layer hands the driver the argument as the prologue left it), and the
 * epilogue files an *instance* on the pending list. An append to a regular
 * list only records a *template* in the list (with its event); each
 * zeCommandQueueExecuteCommandLists turns the templates of the executed
 * lists into instances, under one operation per kind of work (kernels,
 * each copy direction, fills, barriers) in the execute's calling context.
 *
 * Level Zero has no completion callback: pending instances are settled
 * (their events queried, their kernel timestamps read, converted to the
 * process clock and submitted) after every host wait the program makes
 * (event, fence, queue), when the program queries an event or fence and
 * it is done, a few at each hook, and at flush and finalize.
 *
 * A list run again before its last run was read. A regular list keeps its
 * events from run to run, and the program may execute it many times before
 * one wait. Each of our events of a list knows the instance reading it
 * (l0_ev.inst). An execute that finds one still unread takes a *harvest*
 * (l0_harv.c: a command list of ours with host memory and a done event,
 * made once per (list, engine group) and reused when idle) and rewrites
 * the call's list array (the prologue's parameters are what the driver
 * gets; the array lives in the l0_exec until the epilogue) to run the
 * harvest right before the list: it waits for the unread run's events,
 * copies their kernel timestamps into its memory, resets them and signals
 * its done event. The unread run's instances then read that memory once
 * done is signalled (l0_inst.hv, .slot), and the new run's instances trust
 * their events only after it (l0_inst.after). The host never waits. The
 * harvest's query waits for the events it reads; assumed: the list after
 * it signals nothing before the harvest's resets ran, i.e. the engine runs
 * one execute's lists in array order, each to its end (Intel's driver and
 * the fake one do).
 * Where the driver cannot append the query (or memory runs out), the
 * execute waits on the host for that list's unread run only, counted in
 * gpu.tool_overhead_ns, with one warning.
 */
#ifndef GPUPROF_BACKENDS_LEVELZERO_L0_H
#define GPUPROF_BACKENDS_LEVELZERO_L0_H

#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/ze_api.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_backend.h"

/* The loader's entry points we call (dlsym'd; libze_loader is never
 * linked). Our own calls pass through the tracing layer too: a
 * thread-local guard (l0_inside) makes our callbacks ignore them. */
typedef struct l0_api {
    ze_result_t (*Init)(ze_init_flags_t);
    ze_result_t (*DriverGet)(uint32_t *, ze_driver_handle_t *);
    ze_result_t (*DeviceGet)(ze_driver_handle_t, uint32_t *,
                             ze_device_handle_t *);
    ze_result_t (*DeviceGetProperties)(ze_device_handle_t,
                                       ze_device_properties_t *);
    ze_result_t (*DeviceGetGlobalTimestamps)(ze_device_handle_t, uint64_t *,
                                             uint64_t *);
    ze_result_t (*EventPoolCreate)(ze_context_handle_t,
                                   const ze_event_pool_desc_t *, uint32_t,
                                   ze_device_handle_t *,
                                   ze_event_pool_handle_t *);
    ze_result_t (*EventPoolDestroy)(ze_event_pool_handle_t);
    ze_result_t (*EventCreate)(ze_event_pool_handle_t, const ze_event_desc_t *,
                               ze_event_handle_t *);
    ze_result_t (*EventDestroy)(ze_event_handle_t);
    ze_result_t (*EventQueryStatus)(ze_event_handle_t);
    ze_result_t (*EventHostSynchronize)(ze_event_handle_t, uint64_t);
    ze_result_t (*EventHostReset)(ze_event_handle_t);
    ze_result_t (*EventQueryKernelTimestamp)(ze_event_handle_t,
                                             ze_kernel_timestamp_result_t *);
    ze_result_t (*MemGetAllocProperties)(ze_context_handle_t, const void *,
                                         ze_memory_allocation_properties_t *,
                                         ze_device_handle_t *);
    ze_result_t (*ModuleGetNativeBinary)(ze_module_handle_t, size_t *,
                                         uint8_t *);
    ze_result_t (*TracerCreate)(const zel_tracer_desc_t *,
                                zel_tracer_handle_t *);
    ze_result_t (*TracerDestroy)(zel_tracer_handle_t);
    ze_result_t (*TracerSetPrologues)(zel_tracer_handle_t,
                                      zel_core_callbacks_t *);
    ze_result_t (*TracerSetEpilogues)(zel_tracer_handle_t,
                                      zel_core_callbacks_t *);
    ze_result_t (*TracerSetEnabled)(zel_tracer_handle_t, ze_bool_t);
    ze_result_t (*CommandListCreate)(ze_context_handle_t, ze_device_handle_t,
                                     const ze_command_list_desc_t *,
                                     ze_command_list_handle_t *);
    ze_result_t (*CommandListDestroy)(ze_command_list_handle_t);
    ze_result_t (*CommandListClose)(ze_command_list_handle_t);
    ze_result_t (*CommandListReset)(ze_command_list_handle_t);
    ze_result_t (*AppendQueryKernelTimestamps)(
        ze_command_list_handle_t, uint32_t, ze_event_handle_t *, void *,
        const size_t *, ze_event_handle_t, uint32_t, ze_event_handle_t *);
    ze_result_t (*AppendEventReset)(ze_command_list_handle_t,
                                    ze_event_handle_t);
    ze_result_t (*AppendBarrier)(ze_command_list_handle_t, ze_event_handle_t,
                                 uint32_t, ze_event_handle_t *);
    ze_result_t (*MemAllocHost)(ze_context_handle_t,
                                const ze_host_mem_alloc_desc_t *, size_t,
                                size_t, void **);
    ze_result_t (*MemFree)(ze_context_handle_t, void *);
    /* Optional (NULL when the loader lacks it). */
    ze_result_t (*DeviceGetComputeProperties)(ze_device_handle_t,
                                              ze_device_compute_properties_t *);
} l0_api;
extern l0_api gpuprof__l0;
#define Z gpuprof__l0

/* Set while we call the driver ourselves: our callbacks do nothing. */
extern __thread int gpuprof__l0_inside
    __attribute__((tls_model("initial-exec")));
#define L0_CALL(expr)                                                          \
    __extension__({                                                            \
        gpuprof__l0_inside++;                                                  \
        ze_result_t r_ = (expr);                                               \
        gpuprof__l0_inside--;                                                  \
        r_;                                                                    \
    })

/* Hooks record objects while the backend is started; they begin
 * operations only while the library measures. */
extern _Atomic int gpuprof__l0_on;
static inline bool l0_on(void)
{
    return atomic_load_explicit(&gpuprof__l0_on, memory_order_relaxed) &&
           !gpuprof__l0_inside;
}

/* A device and its timer. */
typedef struct l0_dev {
    ze_device_handle_t h;
    uint32_t index;
    uint64_t hz;    /* timer ticks per second */
    uint64_t kmask; /* kernel timestamps: 2^kernelTimestampValidBits - 1 */
    int clock;      /* host clock of zeDeviceGetGlobalTimestamps, -1: ours */
    bool used;
} l0_dev;

/* A context: our event pools and the free events in them. */
typedef struct l0_ctx l0_ctx;
typedef struct l0_ev {
    ze_event_handle_t h;
    l0_ctx *ctx;        /* NULL once its context is gone */
    struct l0_ev *next; /* free list */
    uint32_t refs;      /* a template + pending instances */
    struct l0_inst *inst; /* a list's event: the run reading it directly */
} l0_ev;

/* A command queue or an immediate list: where work runs (an engine). */
typedef struct l0_engine {
    l0_dev *dev;
    ze_context_handle_t ctx;
    uint32_t stream; /* ordinal << 8 | index */
    bool sync;       /* ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS */
} l0_engine;

/* A command appended to a regular list, run at each execute. Traces name
 * the first L0_WAITS events it waits for. */
#define L0_WAITS 4
typedef struct l0_tmpl {
    uint32_t kind;
    const char *name; /* kernels: interned */
    uint32_t binary;
    uint64_t bytes;
    uint64_t items, group;
    ze_event_handle_t ev;
    l0_ev *ours; /* our event (NULL: the program's) */
    uintptr_t ctx;
    const void *src; /* host-to-device copies: the host memory */
    /* Unmeasured runs that may still signal our event since it was last
     * reset on the host (2: two or more, or a reset pending on the
     * device): only at 1 does a signalled event say that run is done. */
    uint8_t dirty;
    uint32_t nwait;  /* events the command waits for (traces) */
    ze_event_handle_t wait[L0_WAITS];
} l0_tmpl;

/* One execute's operations, one per kind: the last instance of a kind is
 * the operation's final activity. */
typedef struct l0_harv l0_harv;
typedef struct l0_exec {
    uint32_t refs; /* instances pending, under l0_mu */
    uint64_t corr[GPUPROF_OP_KIND_COUNT];
    uint32_t left[GPUPROF_OP_KIND_COUNT];
    /* With harvests: the list array the driver gets (each harvest right
     * before the list whose previous run it reads), alive until the
     * execute's epilogue; the harvests, for a refused execute. */
    ze_command_list_handle_t *lists;
    uint32_t nlists, nharv;
    l0_harv **harv;
} l0_exec;

/* One piece of device work, from submission until its activity is
 * submitted. */
typedef struct l0_inst {
    struct l0_inst *next, *prev;
    uint64_t corr;
    uint32_t kind, device, stream;
    l0_dev *dev;
    const char *name;
    uint32_t binary;
    uint64_t bytes, items, group;
    ze_event_handle_t ev;
    l0_ev *ours;
    l0_exec *ex; /* NULL: an immediate append (its own operation) */
    l0_harv *hv;    /* harvested: read hv's buffer at `slot` once done */
    uint32_t slot;
    l0_harv *after; /* its event is this run's only once `after` is done */
    uint64_t start_ns, end_ns;
    int status; /* 0 read, < 0 lost */
} l0_inst;

/* ---- l0_cmd.c --------------------------------------------------------- */
extern pthread_mutex_t gpuprof__l0_mu;
l0_dev *gpuprof__l0_dev(ze_device_handle_t h);
void gpuprof__l0_engine_new(void *handle, ze_device_handle_t d,
                            const ze_command_queue_desc_t *desc, bool imm,
                            ze_context_handle_t ctx);
const l0_engine *gpuprof__l0_engine(void *handle); /* queue or imm list */
void gpuprof__l0_engine_forget(void *handle);
/* Regular lists: their context, their templates. */
void gpuprof__l0_list_new(ze_command_list_handle_t l, ze_context_handle_t c,
                          ze_device_handle_t d);
bool gpuprof__l0_is_regular(ze_command_list_handle_t l);
ze_context_handle_t gpuprof__l0_list_ctx(ze_command_list_handle_t l);
void gpuprof__l0_list_add(ze_command_list_handle_t l, const l0_tmpl *t);
void gpuprof__l0_list_reset(ze_command_list_handle_t l, bool destroy);
/* Our timestamp events, per context (NULL: none to be had). */
l0_ev *gpuprof__l0_ev_get(ze_context_handle_t ctx);
void gpuprof__l0_ev_put(l0_ev *e);
/* Pools created while tracing get timestamps: the flags to use. */
bool gpuprof__l0_pool_flags(ze_event_pool_flags_t *flags);
/* Kernels and modules. */
void gpuprof__l0_module_new(ze_module_handle_t m);
void gpuprof__l0_module_forget(ze_module_handle_t m);
void gpuprof__l0_kernel_new(ze_kernel_handle_t k, ze_module_handle_t m,
                            const char *name);
void gpuprof__l0_kernel_group(ze_kernel_handle_t k, uint64_t group);
void gpuprof__l0_kernel_forget(ze_kernel_handle_t k);
const char *gpuprof__l0_kernel(ze_kernel_handle_t k, uint32_t *binary,
                               uint64_t *group);
/* Copies: the kind of a copy from the memory types of its ends. */
uint32_t gpuprof__l0_copy_kind(ze_context_handle_t c, const void *dst,
                               const void *src);
/* Instances: an immediate append's (its own operation) ... */
void gpuprof__l0_file(const l0_tmpl *t, uint64_t corr, const l0_engine *e);
/* ... and an execute's, for the lists it runs (operations begun here);
 * NULL when nothing was filed. When the driver refused the call, its
 * instances are taken back (their operations closed). */
l0_exec *gpuprof__l0_execute(ze_command_queue_handle_t q, uint32_t n,
                             ze_command_list_handle_t *lists);
/* The first operation of an execute (for a wait inside it). */
uint64_t gpuprof__l0_exec_corr(const l0_exec *ex);
void gpuprof__l0_exec_failed(l0_exec *ex);
/* An execute while not measuring: a measured run of these lists still
 * unread is harvested first (the l0_exec then holds the list array the
 * driver gets; NULL: none); once the driver took it, our events of the
 * lists are dirty (signalled by a run nobody reads): reset before a
 * measured run uses them (on the host when one unmeasured run may signal
 * them and has, else by a harvest on the device). */
l0_exec *gpuprof__l0_execute_unmeasured(ze_command_queue_handle_t q,
                                        uint32_t n,
                                        ze_command_list_handle_t *lists);
void gpuprof__l0_mark_dirty(uint32_t n, ze_command_list_handle_t *lists);
void gpuprof__l0_exec_release(l0_exec *ex); /* the epilogue, on success */
/* Fences: the queue each belongs to. */
void gpuprof__l0_fence_new(ze_fence_handle_t f, ze_command_queue_handle_t q);
ze_command_queue_handle_t gpuprof__l0_fence_queue(ze_fence_handle_t f);
void gpuprof__l0_fence_forget(ze_fence_handle_t f);
/* A context going away: our pools in it go first. */
void gpuprof__l0_ctx_forget(ze_context_handle_t c);
/* The program's event -> the operation whose work signals it (traces). */
void gpuprof__l0_event_note(ze_event_handle_t ev, uint64_t corr);
uint64_t gpuprof__l0_event_corr(ze_event_handle_t ev);
/* Reads what is complete and submits it; max: at most this many queries
 * (0: all). */
void gpuprof__l0_settle(unsigned max);
/* A host wait [t0, now] as its SYNC operation's activity (blame). */
void gpuprof__l0_wait_done(uint64_t corr, uint64_t t0);
/* At finalize: what never completed is counted as dropped. */
void gpuprof__l0_drain(void);

/* Devices unused: of `present`, how many no queue or list was made on. */
uint32_t gpuprof__l0_devices_unused(const ze_device_handle_t *present,
                                    uint32_t n);

/* ---- l0_harv.c -------------------------------------------------------- */
/* A harvest: one command list of ours that, executed right before a
 * regular list whose previous run is still unread, copies that run's
 * kernel timestamps into host memory and resets the list's events. */
struct l0_harv {
    struct l0_harv *next, *prev;   /* all harvests, idle first (MU) */
    ze_command_list_handle_t list; /* whose runs it reads; NULL: orphan */
    ze_context_handle_t ctx;
    ze_device_handle_t dev;
    uint32_t ordinal;
    ze_command_list_handle_t h; /* closed; NULL once its context went */
    ze_kernel_timestamp_result_t *buf; /* host memory, cap results */
    l0_ev *done;                       /* signalled when it is done */
    uint32_t cap, n;
    ze_event_handle_t *evs; /* what it was built for: n of cap */
    uint32_t users;         /* instances reading it or waiting for it */
    bool taken;             /* held by an execute being prepared */
    bool inflight;          /* executed; its done event not seen since
                               (under MU; cleared by who sees it) */
    bool ran;               /* its done event needs a reset */
};
/* An idle harvest of `list` for the engine (made if none; outside MU);
 * NULL when the driver cannot give one. */
l0_harv *gpuprof__l0_harv_take(ze_command_list_handle_t list,
                               const l0_engine *e, ze_context_handle_t ctx,
                               uint32_t cap);
/* Under MU: (re)builds h for these events (a no-op when it has them). */
bool gpuprof__l0_harv_build(l0_harv *h, uint32_t n,
                            const ze_event_handle_t *evs);
/* Under MU: an execute is done with h (used: it runs, and is not taken
 * again before its done event was seen); a user lets go. */
void gpuprof__l0_harv_untake(l0_harv *h);
void gpuprof__l0_harv_unuse(l0_harv *h);
/* A list destroyed, a context going: their harvests go (when idle). */
void gpuprof__l0_harv_list_gone(ze_command_list_handle_t list);
void gpuprof__l0_harv_ctx_gone(ze_context_handle_t c);
/* Before an execute of these lists on e: a harvest (taken) for each list
 * whose last run is unread (or, measured, dirty), or that comes twice
 * (hv[l]; ex gets room for the array the driver will get); where none can
 * be had, the host waits for that list's unread run. Returns hv, NULL
 * when none is needed. */
l0_harv **gpuprof__l0_harv_for(l0_exec *ex, uint32_t n,
                               ze_command_list_handle_t *lists,
                               const l0_engine *e, l0_harv **hv,
                               bool measured);
/* Under MU: the unread run of the list whose templates are t moves to h,
 * built for its events and the dirty ones; false when none or h cannot be
 * built. `measured`: h goes before a measured run (else an unmeasured
 * one, which signals the events again after h reset them). */
bool gpuprof__l0_harv_switch(l0_harv *h, l0_tmpl *t, uint32_t nt,
                             bool measured);
/* l0_objs.c: a regular list's templates (under MU). */
const l0_tmpl *gpuprof__l0_list_tmpl(ze_command_list_handle_t l, uint32_t *n);
/* l0_objs.c: an owner of our event lets go, MU held. */
void gpuprof__l0_ev_put_locked(l0_ev *e);

/* ---- l0_hooks.c ------------------------------------------------------- */
/* The process's first context creation: its operation stays open until
 * finalize, which adds the devices no queue or list used (0: none). */
extern _Atomic uint64_t gpuprof__l0_first_ctx;
void gpuprof__l0_callbacks(zel_core_callbacks_t *pro,
                           zel_core_callbacks_t *epi);

#endif /* GPUPROF_BACKENDS_LEVELZERO_L0_H */
