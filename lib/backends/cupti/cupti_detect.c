/*
 * cupti_detect.c - the CUDA facts behind the detectors (seed 002 §IV.B;
 * doc/BACKENDS.md, CUPTI "Detectors"). At an API call's enter, from its
 * parameters, this says what the core's detectors (core detect.c) need:
 *
 *  - a module loaded from PTX text (cuModuleLoadData, cuModuleLoadDataEx,
 *    cuLibraryLoadData given PTX, not a cubin or fatbin): JIT-compiled at
 *    run time where an ahead-of-time cubin would do: detect.jit_single_device;
 *  - data read back then sent again: a device-to-host copy's host range
 *    (cudaMemcpy*, cuMemcpyDtoH*) is remembered, and a host-to-device copy
 *    sending from such a range is detect.output_as_input;
 *  - a launch on the legacy default stream (cudaLaunchKernel or
 *    cuLaunchKernel with stream 0 or cudaStreamLegacy, not the per-thread
 *    variants): the work serializes with every other stream of the
 *    context: detect.inorder_queue.
 *
 * A kernel used in several contexts is seen in its activity record
 * (cupti_act.c). Devices never used: the first measured CUDA call of the
 * process also begins an operation of its own (kind OTHER, on the call's
 * path) that stays open until finalize, when it gets the count of devices
 * present (cuDeviceGetCount) that no kernel, copy or memset record named:
 * detect.devices_unused. The parameter layouts mirror generated_cuda_meta.h and
 * generated_cuda_runtime_api_meta.h (which do not compile as C on their
 * own).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <string.h>

#include "backends/cupti/cupti.h"

typedef struct load_params {     /* cuModuleLoadData(Ex), cuLibraryLoadData */
    void *result;
    const void *image;
} load_params;

typedef struct rt_copy_params {  /* cudaMemcpy, cudaMemcpyAsync */
    void *dst;
    const void *src;
    size_t count;
    enum cudaMemcpyKind kind;
} rt_copy_params;

typedef struct htod_params {     /* cuMemcpyHtoD(Async)_v2 */
    unsigned long long dst;
    const void *src;
    size_t count;
} htod_params;

typedef struct dtoh_params {     /* cuMemcpyDtoH(Async)_v2 */
    void *dst;
    unsigned long long src;
    size_t count;
} dtoh_params;

typedef struct rt_launch_params { /* cudaLaunchKernel_v7000 */
    const void *func;
    dim3 grid, block;
    void **args;
    size_t shared;
    cudaStream_t stream;
} rt_launch_params;

typedef struct drv_launch_params { /* cuLaunchKernel */
    void *f;
    unsigned gx, gy, gz, bx, by, bz, shared;
    void *stream;
} drv_launch_params;

/* PTX is text: a comment, a directive or white space first; a cubin is
 * ELF (0x7f 'E'), a fatbin starts with its magic. */
bool gpuprof__cupti_is_ptx(const void *image)
{
    const unsigned char *c = image;
    return c && (c[0] == '/' || c[0] == '.' || c[0] == ' ' || c[0] == '\t' ||
                 c[0] == '\n' || c[0] == '\r');
}

static void copy(uint64_t corr, uint32_t dir, const void *host, size_t n)
{
    if (dir == GPUPROF_OP_COPY_D2H)
        gpuprof_be_detect_readback(host, n);
    else if (dir == GPUPROF_OP_COPY_H2D && gpuprof_be_detect_sent_again(host, n))
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_OUTPUT_AS_INPUT, 1);
}

static bool legacy(const void *stream)
{
    return stream == NULL || stream == (const void *)cudaStreamLegacy;
}

static void runtime(CUpti_CallbackId id, const void *p, uint64_t corr)
{
    switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
        const rt_copy_params *c = p;
        if (c->kind == cudaMemcpyDeviceToHost)
            copy(corr, GPUPROF_OP_COPY_D2H, c->dst, c->count);
        else if (c->kind == cudaMemcpyHostToDevice)
            copy(corr, GPUPROF_OP_COPY_H2D, c->src, c->count);
        break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        if (legacy(((const rt_launch_params *)p)->stream))
            gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_INORDER_QUEUE, 1);
        break;
    default:
        break;
    }
}

static void driver(CUpti_CallbackId id, const void *p, uint64_t corr)
{
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
        if (gpuprof__cupti_is_ptx(((const load_params *)p)->image))
            gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_JIT_SINGLE, 1);
        break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2: {
        const htod_params *c = p;
        copy(corr, GPUPROF_OP_COPY_H2D, c->src, c->count);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2: {
        const dtoh_params *c = p;
        copy(corr, GPUPROF_OP_COPY_D2H, c->dst, c->count);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        if (legacy(((const drv_launch_params *)p)->stream))
            gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_INORDER_QUEUE, 1);
        break;
    default:
        break;
    }
}

void gpuprof__cupti_detect_enter(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                 const void *params, uint64_t corr)
{
    if (!params || !corr)
        return;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        runtime(id, params, corr);
    else if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
        driver(id, params, corr);
}

/* ---- devices never used ------------------------------------------------- */
static _Atomic uint64_t devs_used; /* bit d: device d ran something */
static _Atomic uint64_t devs_corr; /* the open operation, 0: none yet */
static _Atomic int devs_claimed;

void gpuprof__cupti_device_used(uint32_t dev)
{
    if (dev < 64)
        atomic_fetch_or_explicit(&devs_used, 1ull << dev,
                                 memory_order_relaxed);
}

uint64_t gpuprof__cupti_devices_used(void)
{
    return atomic_load_explicit(&devs_used, memory_order_relaxed);
}

/* After the outermost call's operation ended: the first one also begins
 * the devices' operation on the same call path. */
__attribute__((noinline)) void gpuprof__cupti_devices_first_call(void)
{
    if (atomic_load_explicit(&devs_claimed, memory_order_relaxed))
        return;
    int zero = 0;
    if (!atomic_compare_exchange_strong(&devs_claimed, &zero, 1))
        return;
    /* Frames: this function, api_exit and on_callback (none inlined). */
    uint64_t c = gpuprof_be_op_begin(GPUPROF_OP_OTHER, 3);
    __asm__ volatile("" ::: "memory"); /* keep this frame */
    if (c == GPUPROF_CORR_PAUSED)
        c = 0;
    gpuprof_be_op_end(c);
    atomic_store_explicit(&devs_corr, c, memory_order_release);
}

/* At finalize (or a test's): `present` devices (-1: ask the driver). */
void gpuprof__cupti_devices_report(int present)
{
    uint64_t corr = atomic_exchange(&devs_corr, 0);
    if (!corr)
        return;
    if (present < 0) {
        int (*count)(int *) =
            (int (*)(int *))dlsym(RTLD_DEFAULT, "cuDeviceGetCount");
        int n = 0;
        present = count && count(&n) == 0 ? n : 0;
    }
    uint64_t used = atomic_load_explicit(&devs_used, memory_order_relaxed);
    uint64_t unused = 0;
    for (int d = 0; d < present && d < 64; d++)
        unused += !(used >> d & 1);
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_OTHER;
    a.flags = GPUPROF_ACTIVITY_NOTE; /* final: closes the operation */
    gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
    x.count = unused ? 1 : 0;
    x.metric[0] = GPUPROF_METRIC_DET_DEVICES_UNUSED;
    x.value[0] = unused;
    gpuprof_be_activity_submit(&a, &x);
}
