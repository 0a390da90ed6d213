/*
 * cupti_deps.c - the CUPTI backend's dependency notes for traces (trace
 * format 1.3; include/gpuprof_backend.h gpuprof_be_op_dep), for the calls
 * the backend measures, runtime and driver forms alike:
 *
 *   cudaDeviceSynchronize, cuCtxSynchronize    SYNC_DEVICE (the context's
 *                                              device)
 *   cudaStreamSynchronize, cuStreamSynchronize SYNC_STREAM (CUPTI's stream
 *                                              id, as activity records
 *                                              carry it; per-thread default
 *                                              stream for the _ptsz forms)
 *   cudaMemcpy and the driver's synchronous    LAUNCH | BLOCKING (the call
 *   copies (no "Async" in the name)            returns when its copy ran),
 *                                              | NULL but in the per-thread
 *                                              forms (the legacy default
 *                                              stream runs them)
 *   cudaEventRecord(WithFlags), cuEventRecord  EVENT_RECORD on its stream
 *   cudaStreamWaitEvent, cuStreamWaitEvent     STREAM_WAIT: the stream's
 *                                              later work waits for the
 *                                              event's record
 *   cudaEventSynchronize, cuEventSynchronize   SYNC_EVENT (the record)
 *   cudaEventQuery, cuEventQuery               QUERY_EVENT, READY when it
 *                                              returned success
 *   cudaStreamQuery, cuStreamQuery             QUERY_STREAM, likewise
 *   cudaLaunchKernel, cudaLaunchCooperative-   LAUNCH | NULL when the
 *   Kernel, cuLaunchKernel, cuLaunchCooper-    launch goes to the legacy
 *   ativeKernel, cudaMemcpyAsync,              default stream (below);
 *   cudaMemsetAsync                            other launches note nothing
 *
 * The legacy default stream. A launch's stream parameter NULL or
 * cudaStreamLegacy / CU_STREAM_LEGACY (0x1) names it, unless the call is
 * a per-thread default stream form (the _ptsz / _ptds API ids a program
 * built with --default-stream per-thread calls): there NULL is the
 * thread's own stream. cudaStreamPerThread / CU_STREAM_PER_THREAD (0x2)
 * and created streams are not it. Its work serializes with every other
 * blocking stream of the device; the analysis (analysis/cpath) makes that
 * the NullStream wait.
 *
 * Notes are written at the API enter, a query's at its exit (its answer is
 * the call's return value: success is "done", cudaErrorNotReady /
 * CUDA_ERROR_NOT_READY is not; another error notes nothing). Event records,
 * stream waits and queries are measured only when traces are written
 * (cupti.c, GP_CU_TRACED): they exist for these notes.
 *
 * An event is named in traces by the correlation id of its latest record
 * (the analysis finds its device work from that record's EVENT_RECORD
 * note): a small table maps the program's events to it, with the record's
 * device and stream. As in the OpenCL backend (cl_deps.c) it is a cache: a
 * collision replaces the older entry and a lookup that misses notes
 * nothing (a wait the analysis does not see), never a wrong record; an
 * event destroyed and created again at the same address names its old
 * record until it is recorded again.
 *
 * Each callback id's role is found once from CUPTI's own callback name and
 * kept (relaxed atomics: any thread may find it first, all find the same).
 * A stream CUPTI cannot name (no context) notes nothing: the analysis sees
 * no wait there, never a wrong one.
 */
#include <pthread.h>
#include <string.h>

#include "backends/cupti/cupti.h"
#include "backends/kit/evcache.h"

enum {
    R_UNKNOWN = 0,
    R_NONE = 1,
    R_DEVICE = 2,
    R_STREAM = 3,
    R_STREAM_PT = 4,
    R_COPY = 5,
    R_EVENT_RECORD = 6,
    R_STREAM_WAIT = 7,
    R_EVENT_SYNC = 8,
    R_EVENT_QUERY = 9,
    R_STREAM_QUERY = 10,
    R_LAUNCH_KERNEL = 11, /* the stream after a function and two dim3 (the
                             runtime) or after eight 32-bit values (the
                             driver) */
    R_LAUNCH_COPY = 12,   /* cudaMemcpyAsync: the fifth parameter */
    R_LAUNCH_SET = 13     /* cudaMemsetAsync: the fourth */
};
#define R_PT 0x40u /* with the event, copy and launch roles: a per-thread
                      default stream form */

static _Atomic uint8_t role_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static _Atomic uint8_t role_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* The event roles, | R_PT for the _ptsz forms; R_NONE for others. */
static uint32_t event_role(const char *b, bool pt)
{
    uint32_t r = starts(b, "EventRecord")       ? R_EVENT_RECORD
                 : starts(b, "StreamWaitEvent") ? R_STREAM_WAIT
                 : starts(b, "EventSynchronize") ? R_EVENT_SYNC
                 : starts(b, "EventQuery")       ? R_EVENT_QUERY
                 : starts(b, "StreamQuery")      ? R_STREAM_QUERY
                                                 : R_NONE;
    return r != R_NONE && pt ? r | R_PT : r;
}

/* The launch roles (runtime and driver names alike), | R_PT for the
 * per-thread forms; R_NONE for others (the Ex, MultiDevice and 2D/3D forms
 * lay their parameters out otherwise: they note nothing). */
static uint32_t launch_role(const char *b, bool rt, bool pt)
{
    size_t n = strcspn(b, "_");
    uint32_t r = R_NONE;
    if ((n == 12 && starts(b, "LaunchKernel")) ||
        (n == 23 && starts(b, "LaunchCooperativeKernel")))
        r = R_LAUNCH_KERNEL;
    else if (rt && n == 11 && starts(b, "MemcpyAsync"))
        r = R_LAUNCH_COPY;
    else if (rt && n == 11 && starts(b, "MemsetAsync"))
        r = R_LAUNCH_SET;
    return r != R_NONE && pt ? r | R_PT : r;
}

/* A callback name's role ("cudaStreamSynchronize_v3020", "cuMemcpyDtoH_v2",
 * "cuEventRecord_ptsz"). */
uint32_t gpuprof__cupti_dep_role(const char *name);
uint32_t gpuprof__cupti_dep_role(const char *name)
{
    if (!name)
        return R_NONE;
    bool rt = starts(name, "cuda");
    const char *b = name + (rt ? 4 : 2);
    bool pt = strstr(b, "_ptsz") != NULL || strstr(b, "_ptds") != NULL;
    if (starts(b, "DeviceSynchronize") || starts(b, "CtxSynchronize"))
        return R_DEVICE;
    if (starts(b, "StreamSynchronize"))
        return pt ? R_STREAM_PT : R_STREAM;
    if (starts(b, "Memcpy") && !strstr(b, "Async") && !strstr(b, "Peer") &&
        !strstr(b, "ToSymbol") && !strstr(b, "FromSymbol") &&
        !strstr(b, "2D") && !strstr(b, "3D") && !strstr(b, "Array"))
        return pt ? R_COPY | R_PT : R_COPY;
    uint32_t r = launch_role(b, rt, pt);
    return r != R_NONE ? r : event_role(b, pt);
}

static uint32_t role_of(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    bool rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (id >= (rt ? CUPTI_RUNTIME_TRACE_CBID_SIZE : CUPTI_DRIVER_TRACE_CBID_SIZE))
        return R_NONE;
    _Atomic uint8_t *slot = rt ? &role_rt[id] : &role_drv[id];
    uint8_t r = gp_load_relaxed(slot);
    if (r != R_UNKNOWN)
        return r;
    const char *name = NULL;
    if (gpuprof__cu.GetCallbackName(dom, id, &name) != CUPTI_SUCCESS)
        name = NULL;
    r = (uint8_t)gpuprof__cupti_dep_role(name);
    gp_store_relaxed(slot, r);
    return r;
}

/* ---- events: the latest record of each (lib/backends/kit/evcache.h) --- */
static gp_evcache events = GP_EVCACHE_INIT;

/* For the offline tests: forget every event. */
void gpuprof__cupti_deps_reset(void);
void gpuprof__cupti_deps_reset(void)
{
    gp_evcache_clear(&events);
}

/* ---- the calls' parameters ------------------------------------------------
 * As generated_cuda_runtime_api_meta.h and generated_cuda_meta.h lay them
 * out (identical in both APIs and their _ptsz forms): a stream
 * synchronization or query and an event synchronization or query take one
 * handle; an event record (event, stream); a stream wait (stream, event). */
typedef struct one_param {
    void *handle;
} one_param;
typedef struct record_params {
    void *event;
    CUstream stream;
} record_params;
typedef struct wait_params {
    CUstream stream;
    void *event;
} wait_params;
typedef struct dim3_param {
    unsigned x, y, z;
} dim3_param;
typedef struct rt_launch_params { /* cudaLaunch(Cooperative)Kernel */
    const void *func;
    dim3_param grid, block;
    void **args;
    size_t shared;
    CUstream stream;
} rt_launch_params;
typedef struct drv_launch_params { /* cuLaunch(Cooperative)Kernel */
    void *f;
    unsigned grid[3], block[3], shared;
    CUstream stream;
} drv_launch_params;
typedef struct copy_params { /* cudaMemcpyAsync */
    void *dst;
    const void *src;
    size_t count;
    int kind;
    CUstream stream;
} copy_params;
typedef struct set_params { /* cudaMemsetAsync */
    void *ptr;
    int value;
    size_t count;
    CUstream stream;
} set_params;

/* CUPTI's id of `stream` in the call's context; false when it cannot say. */
static bool stream_id(const CUpti_CallbackData *cb, CUstream stream, bool pt,
                      uint32_t *sid)
{
    return cb->context && gpuprof__cu.GetStreamIdEx &&
           gpuprof__cu.GetStreamIdEx(cb->context, stream, pt, sid) ==
               CUPTI_SUCCESS;
}

static void event_notes(uint32_t role, const CUpti_CallbackData *cb,
                        uint32_t dev, uint64_t corr)
{
    bool pt = (role & R_PT) != 0;
    uint32_t sid;
    gp_evrec e;
    role &= ~R_PT;
    if (role == R_EVENT_RECORD) {
        const record_params *p = cb->functionParams;
        if (p->event && stream_id(cb, p->stream, pt, &sid)) {
            gpuprof_be_op_dep(corr, GPUPROF_DEP_EVENT_RECORD, 0, dev, sid, 0);
            gp_evcache_put(&events, p->event, corr, dev, sid);
        }
    } else if (role == R_STREAM_WAIT) {
        const wait_params *p = cb->functionParams;
        if (gp_evcache_get(&events, p->event, &e) &&
            stream_id(cb, p->stream, pt, &sid))
            gpuprof_be_op_dep(corr, GPUPROF_DEP_STREAM_WAIT, 0, dev, sid,
                              e.corr);
    } else if (role == R_EVENT_SYNC) {
        const one_param *p = cb->functionParams;
        if (gp_evcache_get(&events, p->handle, &e))
            gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_EVENT, 0, e.device,
                              e.stream, e.corr);
    }
}

/* A launch's stream parameter; whether it is the legacy default stream
 * (pt: a per-thread default stream form of the call). */
static bool legacy_stream(CUpti_CallbackDomain dom, uint32_t role,
                          const void *params, bool pt)
{
    CUstream s;
    if (role == R_LAUNCH_COPY)
        s = ((const copy_params *)params)->stream;
    else if (role == R_LAUNCH_SET)
        s = ((const set_params *)params)->stream;
    else if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        s = ((const rt_launch_params *)params)->stream;
    else
        s = ((const drv_launch_params *)params)->stream;
    return s == CU_STREAM_LEGACY || (!s && !pt);
}

/* A launch onto the legacy default stream: LAUNCH | NULL on its id. */
static void launch_note(CUpti_CallbackDomain dom, uint32_t role,
                        const CUpti_CallbackData *cb, uint32_t dev,
                        uint64_t corr)
{
    bool pt = (role & R_PT) != 0;
    uint32_t sid;
    if (legacy_stream(dom, role & ~R_PT, cb->functionParams, pt) &&
        stream_id(cb, NULL, 0, &sid))
        gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH, GPUPROF_DEP_NULL, dev, sid,
                          0);
}

void gpuprof__cupti_deps(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                         const CUpti_CallbackData *cb, uint64_t corr)
{
    if (!corr || !gpuprof_be_tracing())
        return;
    uint32_t role = role_of(dom, id);
    if (role == R_NONE || (role & ~R_PT) == R_EVENT_QUERY ||
        (role & ~R_PT) == R_STREAM_QUERY)
        return; /* queries: at their exit */
    uint32_t dev = 0;
    if (cb->context && gpuprof__cu.GetDeviceId &&
        gpuprof__cu.GetDeviceId(cb->context, &dev) != CUPTI_SUCCESS)
        dev = 0;
    uint32_t sid;
    if (role == R_DEVICE) {
        gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_DEVICE, 0, dev, GPUPROF_DEP_ALL, 0);
    } else if ((role & ~R_PT) == R_COPY) {
        bool legacy = !(role & R_PT);
        if (!legacy || !stream_id(cb, NULL, 0, &sid))
            sid = 0;
        gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH,
                          GPUPROF_DEP_BLOCKING | (legacy ? GPUPROF_DEP_NULL : 0),
                          dev, sid, 0);
    } else if (!cb->functionParams) {
        return;
    } else if (role == R_STREAM || role == R_STREAM_PT) {
        const one_param *p = cb->functionParams;
        if (stream_id(cb, p->handle, role == R_STREAM_PT, &sid))
            gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_STREAM, 0, dev, sid, 0);
    } else if ((role & ~R_PT) >= R_LAUNCH_KERNEL) {
        launch_note(dom, role, cb, dev, corr);
    } else {
        event_notes(role, cb, dev, corr);
    }
}

void gpuprof__cupti_deps_exit(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                              const CUpti_CallbackData *cb, uint64_t corr)
{
    if (!corr || !cb->functionParams || !cb->functionReturnValue ||
        !gpuprof_be_tracing())
        return;
    uint32_t role = role_of(dom, id);
    bool pt = (role & R_PT) != 0;
    role &= ~R_PT;
    if (role != R_EVENT_QUERY && role != R_STREAM_QUERY)
        return;
    int ret = *(const int *)cb->functionReturnValue;
    if (ret != 0 && ret != (dom == CUPTI_CB_DOMAIN_RUNTIME_API
                                ? (int)cudaErrorNotReady
                                : (int)CUDA_ERROR_NOT_READY))
        return; /* the call failed: it answered nothing */
    uint32_t flags = ret == 0 ? GPUPROF_DEP_READY : 0, dev = 0, sid;
    const one_param *p = cb->functionParams;
    gp_evrec e;
    if (role == R_EVENT_QUERY) {
        if (gp_evcache_get(&events, p->handle, &e))
            gpuprof_be_op_dep(corr, GPUPROF_DEP_QUERY_EVENT, flags, e.device,
                              e.stream, e.corr);
        return;
    }
    if (cb->context && gpuprof__cu.GetDeviceId &&
        gpuprof__cu.GetDeviceId(cb->context, &dev) != CUPTI_SUCCESS)
        dev = 0;
    if (stream_id(cb, p->handle, pt, &sid))
        gpuprof_be_op_dep(corr, GPUPROF_DEP_QUERY_STREAM, flags, dev, sid, 0);
}
