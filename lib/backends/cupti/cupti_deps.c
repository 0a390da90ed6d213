/*
 * cupti_deps.c - the CUPTI backend's dependency notes for traces (trace
 * format 1.3; include/gpuprof_backend.h gpuprof_be_op_dep), written at a call's API
 * enter, for the calls the backend already measures:
 *
 *   cudaDeviceSynchronize, cuCtxSynchronize    SYNC_DEVICE (the context's
 *                                              device)
 *   cudaStreamSynchronize, cuStreamSynchronize SYNC_STREAM (CUPTI's stream
 *                                              id, as activity records
 *                                              carry it; per-thread default
 *                                              stream for the _ptsz forms)
 *   cudaMemcpy and the driver's synchronous    LAUNCH | BLOCKING (the call
 *   copies (no "Async" in the name)            returns when its copy ran)
 *
 * Each callback id's role is found once from CUPTI's own callback name and
 * kept (relaxed atomics: any thread may find it first, all find the same).
 * A stream id CUPTI cannot give (no context) notes nothing: the analysis
 * sees no wait there, never a wrong one. Events (cudaEventRecord,
 * cudaStreamWaitEvent, queries) need calls the backend does not hook yet.
 */
#include <string.h>

#include "backends/cupti/cupti.h"

enum { R_UNKNOWN = 0, R_NONE, R_DEVICE, R_STREAM, R_STREAM_PT, R_COPY };

static _Atomic uint8_t role_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static _Atomic uint8_t role_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* A callback name's role ("cudaStreamSynchronize_v3020", "cuMemcpyDtoH_v2"). */
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
        return R_COPY;
    return R_NONE;
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

/* The stream a (cuda|cu)StreamSynchronize names: its first parameter in
 * both APIs' parameter structs. */
typedef struct stream_params {
    CUstream stream;
} stream_params;

void gpuprof__cupti_deps(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                         const CUpti_CallbackData *cb, uint64_t corr)
{
    if (!corr || !gpuprof_be_tracing())
        return;
    uint32_t role = role_of(dom, id);
    if (role == R_NONE)
        return;
    uint32_t dev = 0;
    if (cb->context && gpuprof__cu.GetDeviceId &&
        gpuprof__cu.GetDeviceId(cb->context, &dev) != CUPTI_SUCCESS)
        dev = 0;
    if (role == R_DEVICE) {
        gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_DEVICE, 0, dev, GPUPROF_DEP_ALL, 0);
    } else if (role == R_COPY) {
        gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH, GPUPROF_DEP_BLOCKING, dev, 0, 0);
    } else if (cb->functionParams && cb->context &&
               gpuprof__cu.GetStreamIdEx) {
        uint32_t sid;
        const stream_params *p = cb->functionParams;
        if (gpuprof__cu.GetStreamIdEx(cb->context, p->stream,
                                      role == R_STREAM_PT, &sid) ==
            CUPTI_SUCCESS)
            gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_STREAM, 0, dev, sid, 0);
    }
}
