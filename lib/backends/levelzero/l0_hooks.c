/*
 * l0_hooks.c - the tracing layer's prologues and epilogues (zelTracer*):
 * appends (kernels in all four launch forms, copies, fills, barriers),
 * executes, host waits (events, fences, queues), queries, and the objects
 * the backend must know (queues, lists, contexts, event pools, modules,
 * kernels, fences). Design: l0.h.
 *
 * A prologue runs before the driver, on the program's thread; what it
 * leaves in the call's parameters is what the driver gets (the layer
 * passes them by reference), which is how a command without a signal
 * event gets one of ours and how an event pool gets kernel timestamps.
 * One call's prologue and epilogue share a frame in thread-local storage
 * (the per-instance user data points at it; calls do not nest on a
 * thread: ours are ignored).
 */
#include <string.h>

#include "backends/levelzero/l0.h"

typedef struct frame {
    uint64_t corr, t0;
    l0_tmpl t;
    ze_command_list_handle_t list;
    const l0_engine *e; /* an immediate list's or a queue's */
    l0_exec *ex;
    ze_event_pool_desc_t pool;
    bool unmeasured; /* an execute while not measuring */
} frame;
static __thread frame tls_frame __attribute__((tls_model("initial-exec")));

#define PARAMS(type) type *p, ze_result_t r, void *ud, void **inst
#define UNUSED (void)r, (void)ud, (void)inst

static void close_note(uint64_t corr, uint32_t kind)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = kind;
    a.flags = GPUPROF_ACTIVITY_NOTE;
    gpuprof_be_activity_submit(&a, NULL);
}

/* The time a call blocked inside an operation that stays open (a
 * synchronous list or queue): CPU_IDLE on it (core blame.c). */
static void wait_note(uint64_t corr, uint64_t t0)
{
    uint64_t t1 = gpuprof_be_now_ns();
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_SYNC;
    a.flags =
        GPUPROF_ACTIVITY_NOTE | GPUPROF_ACTIVITY_WAIT | GPUPROF_ACTIVITY_MORE;
    a.start_ns = t0;
    a.end_ns = t1 > t0 ? t1 : t0 + 1;
    if (corr)
        gpuprof_be_activity_submit(&a, NULL);
}

/* ---- appends ----------------------------------------------------------- */
/* The list's frame, or NULL when the call is not ours to measure: an
 * unknown list, or an immediate list while not measuring. */
static frame *append_open(ze_command_list_handle_t l)
{
    if (!l0_on())
        return NULL;
    frame *f = &tls_frame;
    memset(&f->t, 0, sizeof(f->t));
    f->t.binary = GPUPROF_NO_BINARY;
    f->list = l;
    f->corr = 0;
    f->e = gpuprof__l0_engine(l);
    if (f->e) {
        if (!gpuprof_be_measuring())
            return NULL;
        f->t.ctx = (uintptr_t)f->e->ctx;
        return f;
    }
    ze_context_handle_t c = gpuprof__l0_list_ctx(l);
    f->t.ctx = (uintptr_t)c;
    return c ? f : NULL;
}

/* After the kind is known: the operation (immediate lists) and our event
 * when the program passed none. `skip`: our frames above the operation's
 * call path (this one and its callers up to the prologue), exact in a
 * static link too, where the library's text is the program's: the helpers
 * that begin operations are never inlined. */
__attribute__((noinline)) static frame *append_start(frame *f, uint32_t kind,
                                                     ze_event_handle_t *sig,
                                                     void **inst, unsigned skip)
{
    f->t.kind = kind;
    if (f->e) {
        gpuprof__l0_settle(4); /* a few earlier ones, cheaply */
        f->t0 = f->e->sync ? gpuprof_be_now_ns() : 0;
        f->corr = gpuprof_be_op_begin(kind, skip);
        if (!f->corr || f->corr == GPUPROF_CORR_PAUSED) {
            gpuprof_be_op_end(f->corr);
            return NULL;
        }
    }
    if (!*sig &&
        (f->t.ours = gpuprof__l0_ev_get((ze_context_handle_t)f->t.ctx)))
        *sig = f->t.ours->h;
    f->t.ev = *sig;
    *inst = f;
    return f;
}

static void append_deps(const frame *f, uint32_t nwait,
                        const ze_event_handle_t *waits)
{
    if (!gpuprof_be_tracing())
        return;
    uint32_t dev = f->e->dev->index, stream = f->e->stream;
    gpuprof_be_op_dep(f->corr, GPUPROF_DEP_LAUNCH,
                      f->e->sync ? GPUPROF_DEP_BLOCKING : 0, dev, stream, 0);
    for (uint32_t i = 0; waits && i < nwait; i++) {
        uint64_t t = gpuprof__l0_event_corr(waits[i]);
        if (t)
            gpuprof_be_op_dep(f->corr, GPUPROF_DEP_STREAM_WAIT, 0, dev, stream,
                              t);
    }
    if (!f->t.ours)
        gpuprof__l0_event_note(f->t.ev, f->corr);
}

static void append_end(void **inst, ze_result_t r, uint32_t nwait,
                       const ze_event_handle_t *waits)
{
    frame *f = *inst;
    if (!f)
        return;
    *inst = NULL;
    if (r != ZE_RESULT_SUCCESS) {
        if (f->t.ours)
            gpuprof__l0_ev_put(f->t.ours);
        if (f->e) { /* refused: no work, the operation is closed */
            close_note(f->corr, f->t.kind);
            gpuprof_be_op_end(f->corr);
        }
        return;
    }
    if (!f->e) {
        for (uint32_t i = 0; waits && i < nwait && i < L0_WAITS; i++)
            f->t.wait[f->t.nwait++] = waits[i];
        gpuprof__l0_list_add(f->list, &f->t);
        return;
    }
    append_deps(f, nwait, waits);
    if (f->e->sync) /* a synchronous list returned when its work was done */
        wait_note(f->corr, f->t0);
    gpuprof__l0_file(&f->t, f->corr, f->e);
    if (f->e->sync)
        gpuprof__l0_settle(0);
    gpuprof_be_op_end(f->corr);
}

/* Kernels: name, binary, sizes; the multi-context detector (immediate). */
static void kernel_facts(frame *f, ze_kernel_handle_t k,
                         const ze_group_count_t *g)
{
    uint64_t group = 0;
    f->t.name = gpuprof__l0_kernel(k, &f->t.binary, &group);
    f->t.group = group;
    f->t.items =
        g ? (uint64_t)g->groupCountX * g->groupCountY * g->groupCountZ * group
          : 0;
}

static void kernel_notes(const frame *f)
{
    if (f->e && f->t.name &&
        gpuprof_be_detect_kernel_context(f->t.name, f->t.ctx))
        gpuprof_be_detect_note(f->corr, GPUPROF_METRIC_DET_MULTI_CONTEXT, 1);
}

/* Every append's epilogue: the append's result, and the events its
 * command waits for. */
#define APPEND_EPI(Name, ptype)                                                \
    static void ZE_APICALL epi_##Name(PARAMS(ptype))                           \
    {                                                                          \
        (void)ud;                                                              \
        append_end(inst, r, *p->pnumWaitEvents, *p->pphWaitEvents);            \
    }

#define LAUNCH_HOOKS(Name, ptype, KERNEL, GROUPS)                              \
    static void ZE_APICALL pro_##Name(PARAMS(ptype))                           \
    {                                                                          \
        UNUSED;                                                                \
        *inst = NULL;                                                          \
        frame *f = append_open(*p->phCommandList);                             \
        if (!f)                                                                \
            return;                                                            \
        kernel_facts(f, KERNEL, GROUPS);                                       \
        if (append_start(f, GPUPROF_OP_KERNEL, p->phSignalEvent, inst, 2))     \
            kernel_notes(f);                                                   \
    }                                                                          \
    APPEND_EPI(Name, ptype)

LAUNCH_HOOKS(LaunchKernel, ze_command_list_append_launch_kernel_params_t,
             *p->phKernel, *p->ppLaunchFuncArgs)
LAUNCH_HOOKS(LaunchCooperativeKernel,
             ze_command_list_append_launch_cooperative_kernel_params_t,
             *p->phKernel, *p->ppLaunchFuncArgs)
/* Indirect launches: the group counts are in device memory (no sizes). */
LAUNCH_HOOKS(LaunchKernelIndirect,
             ze_command_list_append_launch_kernel_indirect_params_t,
             *p->phKernel, NULL)
/* Several kernels, one signal event: one operation named by the first. */
LAUNCH_HOOKS(LaunchMultipleKernelsIndirect,
             ze_command_list_append_launch_multiple_kernels_indirect_params_t,
             *p->pnumKernels && * p->pphKernels ? (*p->pphKernels)[0] : NULL,
             NULL)

/* Copies: the direction from the memory types of both ends. */
__attribute__((noinline)) static void
copy_pro(void **inst, ze_command_list_handle_t l, void *dst, const void *src,
         uint64_t bytes, ze_event_handle_t *sig)
{
    *inst = NULL;
    frame *f = append_open(l);
    if (!f)
        return;
    uint32_t kind =
        gpuprof__l0_copy_kind((ze_context_handle_t)f->t.ctx, dst, src);
    f->t.bytes = bytes;
    f->t.src = kind == GPUPROF_OP_COPY_H2D ? src : NULL;
    if (!append_start(f, kind, sig, inst, 3))
        return;
    if (kind == GPUPROF_OP_COPY_D2H)
        gpuprof_be_detect_readback(dst, bytes);
    if (f->e && kind == GPUPROF_OP_COPY_H2D &&
        gpuprof_be_detect_sent_again(src, bytes))
        gpuprof_be_detect_note(f->corr, GPUPROF_METRIC_DET_OUTPUT_AS_INPUT, 1);
}

static void ZE_APICALL
pro_MemoryCopy(PARAMS(ze_command_list_append_memory_copy_params_t))
{
    UNUSED;
    copy_pro(inst, *p->phCommandList, *p->pdstptr, *p->psrcptr, *p->psize,
             p->phSignalEvent);
    __asm__ volatile("" ::: "memory"); /* no tail call: the skip counts it */
}
APPEND_EPI(MemoryCopy, ze_command_list_append_memory_copy_params_t)

static uint64_t region_bytes(const ze_copy_region_t *g)
{
    return g ? (uint64_t)g->width * (g->height ? g->height : 1) *
                   (g->depth ? g->depth : 1)
             : 0;
}

static void ZE_APICALL
pro_MemoryCopyRegion(PARAMS(ze_command_list_append_memory_copy_region_params_t))
{
    UNUSED;
    copy_pro(inst, *p->phCommandList, *p->pdstptr, *p->psrcptr,
             region_bytes(*p->pdstRegion), p->phSignalEvent);
    __asm__ volatile("" ::: "memory");
}
APPEND_EPI(MemoryCopyRegion,
           ze_command_list_append_memory_copy_region_params_t)

static void ZE_APICALL pro_MemoryCopyFromContext(
    PARAMS(ze_command_list_append_memory_copy_from_context_params_t))
{
    UNUSED;
    copy_pro(inst, *p->phCommandList, *p->pdstptr, *p->psrcptr, *p->psize,
             p->phSignalEvent);
    __asm__ volatile("" ::: "memory"); /* no tail call: the skip counts it */
}
APPEND_EPI(MemoryCopyFromContext,
           ze_command_list_append_memory_copy_from_context_params_t)

static void ZE_APICALL
pro_MemoryFill(PARAMS(ze_command_list_append_memory_fill_params_t))
{
    UNUSED;
    *inst = NULL;
    frame *f = append_open(*p->phCommandList);
    if (!f)
        return;
    f->t.bytes = *p->psize;
    append_start(f, GPUPROF_OP_MEMSET, p->phSignalEvent, inst, 2);
    __asm__ volatile("" ::: "memory");
}
APPEND_EPI(MemoryFill, ze_command_list_append_memory_fill_params_t)

/* Barriers: an operation of their own (they may signal an event). */
#define BARRIER_HOOKS(Name, ptype)                                             \
    static void ZE_APICALL pro_##Name(PARAMS(ptype))                           \
    {                                                                          \
        UNUSED;                                                                \
        *inst = NULL;                                                          \
        frame *f = append_open(*p->phCommandList);                             \
        if (f)                                                                 \
            append_start(f, GPUPROF_OP_OTHER, p->phSignalEvent, inst, 2);      \
        __asm__ volatile("" ::: "memory");                                     \
    }                                                                          \
    APPEND_EPI(Name, ptype)

BARRIER_HOOKS(Barrier, ze_command_list_append_barrier_params_t)
BARRIER_HOOKS(RangesBarrier,
              ze_command_list_append_memory_ranges_barrier_params_t)

/* ---- executes ---------------------------------------------------------- */
static void ZE_APICALL
pro_Execute(PARAMS(ze_command_queue_execute_command_lists_params_t))
{
    UNUSED;
    *inst = NULL;
    if (!l0_on())
        return;
    frame *f = &tls_frame;
    f->e = gpuprof__l0_engine(*p->phCommandQueue);
    f->t0 = gpuprof_be_now_ns();
    f->unmeasured = !gpuprof_be_measuring();
    if (f->unmeasured) {
        f->ex = gpuprof__l0_execute_unmeasured(*p->phCommandQueue,
                                               *p->pnumCommandLists,
                                               *p->pphCommandLists);
        *inst = f; /* its lists' events are dirty once it ran */
    } else {
        gpuprof__l0_settle(4);
        f->ex = gpuprof__l0_execute(*p->phCommandQueue, *p->pnumCommandLists,
                                    *p->pphCommandLists);
    }
    if (f->ex && f->ex->lists) { /* harvests of unread runs go first */
        *p->pphCommandLists = f->ex->lists;
        *p->pnumCommandLists = f->ex->nlists;
    }
    if (f->ex)
        *inst = f;
}
static void ZE_APICALL
epi_Execute(PARAMS(ze_command_queue_execute_command_lists_params_t))
{
    (void)ud;
    frame *f = *inst;
    if (!f)
        return;
    *inst = NULL;
    if (r != ZE_RESULT_SUCCESS) {
        if (f->ex)
            gpuprof__l0_exec_failed(f->ex);
        return;
    }
    if (f->unmeasured) /* the lists as the driver got them */
        gpuprof__l0_mark_dirty(*p->pnumCommandLists, *p->pphCommandLists);
    else if (f->e && f->e->sync) { /* returned when the work was done */
        wait_note(gpuprof__l0_exec_corr(f->ex), f->t0);
        gpuprof__l0_settle(0);
    }
    gpuprof__l0_exec_release(f->ex);
}

/* ---- host waits and queries -------------------------------------------- */
/* A wait with a timeout is a SYNC operation; timeout 0 is a query. */
__attribute__((noinline)) static void wait_pro(void **inst, uint64_t timeout,
                                               uint32_t what,
                                               const l0_engine *e,
                                               uint64_t target)
{
    *inst = NULL;
    if (!timeout || !l0_on() || !gpuprof_be_measuring())
        return;
    frame *f = &tls_frame;
    f->corr = gpuprof_be_op_begin(GPUPROF_OP_SYNC, 2);
    if (!f->corr || f->corr == GPUPROF_CORR_PAUSED) {
        gpuprof_be_op_end(f->corr);
        return;
    }
    if (e)
        gpuprof_be_op_dep(f->corr, what, 0, e->dev->index, e->stream, 0);
    else if (target)
        gpuprof_be_op_dep(f->corr, what, 0, 0, 0, target);
    f->t0 = gpuprof_be_now_ns();
    *inst = f;
}

static void wait_epi(void **inst, ze_result_t r)
{
    frame *f = *inst;
    if (!f) {
        if (r == ZE_RESULT_SUCCESS && l0_on())
            gpuprof__l0_settle(0); /* a query said done */
        return;
    }
    *inst = NULL;
    gpuprof__l0_wait_done(f->corr, f->t0);
    gpuprof_be_op_end(f->corr);
}

static void ZE_APICALL pro_EventSync(PARAMS(ze_event_host_synchronize_params_t))
{
    UNUSED;
    uint64_t t = gpuprof_be_tracing() ? gpuprof__l0_event_corr(*p->phEvent) : 0;
    wait_pro(inst, *p->ptimeout, GPUPROF_DEP_SYNC_EVENT, NULL, t);
    __asm__ volatile("" ::: "memory");
}
static void ZE_APICALL epi_EventSync(PARAMS(ze_event_host_synchronize_params_t))
{
    (void)ud, (void)p;
    wait_epi(inst, r);
}

static void ZE_APICALL pro_FenceSync(PARAMS(ze_fence_host_synchronize_params_t))
{
    UNUSED;
    const l0_engine *e =
        gpuprof__l0_engine(gpuprof__l0_fence_queue(*p->phFence));
    wait_pro(inst, *p->ptimeout, GPUPROF_DEP_SYNC_STREAM, e, 0);
    __asm__ volatile("" ::: "memory");
}
static void ZE_APICALL epi_FenceSync(PARAMS(ze_fence_host_synchronize_params_t))
{
    (void)ud, (void)p;
    wait_epi(inst, r);
}

static void ZE_APICALL
pro_QueueSync(PARAMS(ze_command_queue_synchronize_params_t))
{
    UNUSED;
    wait_pro(inst, *p->ptimeout, GPUPROF_DEP_SYNC_STREAM,
             gpuprof__l0_engine(*p->phCommandQueue), 0);
    __asm__ volatile("" ::: "memory");
}
static void ZE_APICALL
epi_QueueSync(PARAMS(ze_command_queue_synchronize_params_t))
{
    (void)ud, (void)p;
    wait_epi(inst, r);
}

static void ZE_APICALL epi_EventQuery(PARAMS(ze_event_query_status_params_t))
{
    (void)ud, (void)p, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on())
        gpuprof__l0_settle(0);
}
static void ZE_APICALL epi_FenceQuery(PARAMS(ze_fence_query_status_params_t))
{
    (void)ud, (void)p, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on())
        gpuprof__l0_settle(0);
}

/* An event about to be reset or destroyed: read what it holds first. */
static void ZE_APICALL pro_EventReset(PARAMS(ze_event_host_reset_params_t))
{
    UNUSED, (void)p;
    if (l0_on())
        gpuprof__l0_settle(0);
}
static void ZE_APICALL pro_EventDestroy(PARAMS(ze_event_destroy_params_t))
{
    UNUSED, (void)p;
    if (l0_on())
        gpuprof__l0_settle(0);
}

/* ---- objects ----------------------------------------------------------- */
static void ZE_APICALL pro_PoolCreate(PARAMS(ze_event_pool_create_params_t))
{
    UNUSED;
    if (!l0_on() || !*p->pdesc)
        return;
    frame *f = &tls_frame;
    f->pool = **p->pdesc;
    if (gpuprof__l0_pool_flags(&f->pool.flags))
        *p->pdesc = &f->pool; /* the driver gets our copy */
}

static void ZE_APICALL epi_QueueCreate(PARAMS(ze_command_queue_create_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphCommandQueue)
        gpuprof__l0_engine_new(**p->pphCommandQueue, *p->phDevice, *p->pdesc,
                               false, *p->phContext);
}
static void ZE_APICALL
pro_QueueDestroy(PARAMS(ze_command_queue_destroy_params_t))
{
    UNUSED;
    if (!l0_on())
        return;
    gpuprof__l0_settle(0);
    gpuprof__l0_engine_forget(*p->phCommandQueue);
}

static void ZE_APICALL epi_ListCreate(PARAMS(ze_command_list_create_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphCommandList)
        gpuprof__l0_list_new(**p->pphCommandList, *p->phContext, *p->phDevice);
}
static void ZE_APICALL
epi_ListCreateImm(PARAMS(ze_command_list_create_immediate_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphCommandList)
        gpuprof__l0_engine_new(**p->pphCommandList, *p->phDevice, *p->paltdesc,
                               true, *p->phContext);
}
static void ZE_APICALL pro_ListDestroy(PARAMS(ze_command_list_destroy_params_t))
{
    UNUSED;
    if (!l0_on())
        return;
    gpuprof__l0_list_reset(*p->phCommandList, true);
    gpuprof__l0_engine_forget(*p->phCommandList);
}
static void ZE_APICALL pro_ListReset(PARAMS(ze_command_list_reset_params_t))
{
    UNUSED;
    if (l0_on())
        gpuprof__l0_list_reset(*p->phCommandList, false);
}

/* The first context: an operation (its creation's time), open until
 * finalize for the devices-unused detector (levelzero.c). */
_Atomic uint64_t gpuprof__l0_first_ctx;
static _Atomic int ctx_seen;

static void ZE_APICALL pro_ContextCreate(PARAMS(ze_context_create_params_t))
{
    UNUSED, (void)p;
    *inst = NULL;
    if (!l0_on() || !gpuprof_be_measuring() ||
        atomic_exchange_explicit(&ctx_seen, 1, memory_order_relaxed))
        return;
    frame *f = &tls_frame;
    f->corr = gpuprof_be_op_begin(GPUPROF_OP_OTHER, 1);
    if (!f->corr || f->corr == GPUPROF_CORR_PAUSED) {
        gpuprof_be_op_end(f->corr);
        return;
    }
    f->t0 = gpuprof_be_now_ns();
    *inst = f;
}
static void ZE_APICALL epi_ContextCreate(PARAMS(ze_context_create_params_t))
{
    (void)ud, (void)p;
    frame *f = *inst;
    if (!f)
        return;
    *inst = NULL;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = f->corr;
    a.kind = GPUPROF_OP_OTHER;
    a.flags = GPUPROF_ACTIVITY_HOST | GPUPROF_ACTIVITY_MORE;
    a.start_ns = f->t0;
    a.end_ns = gpuprof_be_now_ns();
    gpuprof_be_activity_submit(&a, NULL);
    if (r == ZE_RESULT_SUCCESS)
        atomic_store_explicit(&gpuprof__l0_first_ctx, f->corr,
                              memory_order_release);
    else
        close_note(f->corr, GPUPROF_OP_OTHER);
    gpuprof_be_op_end(f->corr);
}

static void ZE_APICALL pro_ContextDestroy(PARAMS(ze_context_destroy_params_t))
{
    UNUSED;
    if (!l0_on())
        return;
    gpuprof__l0_settle(0);
    gpuprof__l0_ctx_forget(*p->phContext);
}

static void ZE_APICALL epi_FenceCreate(PARAMS(ze_fence_create_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphFence)
        gpuprof__l0_fence_new(**p->pphFence, *p->phCommandQueue);
}
static void ZE_APICALL pro_FenceDestroy(PARAMS(ze_fence_destroy_params_t))
{
    UNUSED;
    if (l0_on())
        gpuprof__l0_fence_forget(*p->phFence);
}

/* Modules: a build (JIT from SPIR-V: the detector), the binary saved. */
static void ZE_APICALL pro_ModuleCreate(PARAMS(ze_module_create_params_t))
{
    UNUSED;
    *inst = NULL;
    if (!l0_on() || !gpuprof_be_measuring())
        return;
    frame *f = &tls_frame;
    f->corr = gpuprof_be_op_begin(GPUPROF_OP_BUILD, 1);
    if (!f->corr || f->corr == GPUPROF_CORR_PAUSED) {
        gpuprof_be_op_end(f->corr);
        return;
    }
    if (*p->pdesc && (*p->pdesc)->format == ZE_MODULE_FORMAT_IL_SPIRV)
        gpuprof_be_detect_note(f->corr, GPUPROF_METRIC_DET_JIT_SINGLE, 1);
    f->t0 = gpuprof_be_now_ns();
    *inst = f;
}
static void ZE_APICALL epi_ModuleCreate(PARAMS(ze_module_create_params_t))
{
    (void)ud;
    frame *f = *inst;
    uint64_t t1 = gpuprof_be_now_ns();
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphModule)
        gpuprof__l0_module_new(**p->pphModule);
    if (!f)
        return;
    *inst = NULL;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = f->corr;
    a.kind = GPUPROF_OP_BUILD;
    a.flags = GPUPROF_ACTIVITY_HOST;
    a.start_ns = f->t0;
    a.end_ns = t1 > f->t0 ? t1 : f->t0;
    gpuprof_be_activity_submit(&a, NULL);
    gpuprof_be_op_end(f->corr);
}
static void ZE_APICALL pro_ModuleDestroy(PARAMS(ze_module_destroy_params_t))
{
    UNUSED;
    if (l0_on())
        gpuprof__l0_module_forget(*p->phModule);
}

static void ZE_APICALL epi_KernelCreate(PARAMS(ze_kernel_create_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on() && *p->pphKernel && *p->pdesc)
        gpuprof__l0_kernel_new(**p->pphKernel, *p->phModule,
                               (*p->pdesc)->pKernelName);
}
static void ZE_APICALL pro_KernelDestroy(PARAMS(ze_kernel_destroy_params_t))
{
    UNUSED;
    if (l0_on())
        gpuprof__l0_kernel_forget(*p->phKernel);
}
static void ZE_APICALL epi_GroupSize(PARAMS(ze_kernel_set_group_size_params_t))
{
    (void)ud, (void)inst;
    if (r == ZE_RESULT_SUCCESS && l0_on())
        gpuprof__l0_kernel_group(*p->phKernel, (uint64_t)*p->pgroupSizeX *
                                                   *p->pgroupSizeY *
                                                   *p->pgroupSizeZ);
}

/* ---- the tables -------------------------------------------------------- */
void gpuprof__l0_callbacks(zel_core_callbacks_t *pro, zel_core_callbacks_t *epi)
{
    memset(pro, 0, sizeof(*pro));
    memset(epi, 0, sizeof(*epi));
#define BOTH(group, field, name)                                               \
    pro->group.field = pro_##name;                                             \
    epi->group.field = epi_##name
    BOTH(CommandList, pfnAppendLaunchKernelCb, LaunchKernel);
    BOTH(CommandList, pfnAppendLaunchCooperativeKernelCb,
         LaunchCooperativeKernel);
    BOTH(CommandList, pfnAppendLaunchKernelIndirectCb, LaunchKernelIndirect);
    BOTH(CommandList, pfnAppendLaunchMultipleKernelsIndirectCb,
         LaunchMultipleKernelsIndirect);
    BOTH(CommandList, pfnAppendMemoryCopyCb, MemoryCopy);
    BOTH(CommandList, pfnAppendMemoryCopyRegionCb, MemoryCopyRegion);
    BOTH(CommandList, pfnAppendMemoryCopyFromContextCb, MemoryCopyFromContext);
    BOTH(CommandList, pfnAppendMemoryFillCb, MemoryFill);
    BOTH(CommandList, pfnAppendBarrierCb, Barrier);
    BOTH(CommandList, pfnAppendMemoryRangesBarrierCb, RangesBarrier);
    BOTH(CommandQueue, pfnExecuteCommandListsCb, Execute);
    BOTH(CommandQueue, pfnSynchronizeCb, QueueSync);
    BOTH(Event, pfnHostSynchronizeCb, EventSync);
    BOTH(Fence, pfnHostSynchronizeCb, FenceSync);
    BOTH(Module, pfnCreateCb, ModuleCreate);
    BOTH(Context, pfnCreateCb, ContextCreate);
#undef BOTH
    epi->Event.pfnQueryStatusCb = epi_EventQuery;
    epi->Fence.pfnQueryStatusCb = epi_FenceQuery;
    pro->Event.pfnHostResetCb = pro_EventReset;
    pro->Event.pfnDestroyCb = pro_EventDestroy;
    pro->EventPool.pfnCreateCb = pro_PoolCreate;
    epi->CommandQueue.pfnCreateCb = epi_QueueCreate;
    pro->CommandQueue.pfnDestroyCb = pro_QueueDestroy;
    epi->CommandList.pfnCreateCb = epi_ListCreate;
    epi->CommandList.pfnCreateImmediateCb = epi_ListCreateImm;
    pro->CommandList.pfnDestroyCb = pro_ListDestroy;
    pro->CommandList.pfnResetCb = pro_ListReset;
    pro->Context.pfnDestroyCb = pro_ContextDestroy;
    epi->Fence.pfnCreateCb = epi_FenceCreate;
    pro->Fence.pfnDestroyCb = pro_FenceDestroy;
    pro->Module.pfnDestroyCb = pro_ModuleDestroy;
    epi->Kernel.pfnCreateCb = epi_KernelCreate;
    pro->Kernel.pfnDestroyCb = pro_KernelDestroy;
    epi->Kernel.pfnSetGroupSizeCb = epi_GroupSize;
}
