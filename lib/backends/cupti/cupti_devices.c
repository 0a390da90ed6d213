/*
 * cupti_devices.c - what each CUDA device can hold at once, for the GPU
 * advice's occupancy (gpuprof_be_device_describe; doc/BACKENDS.md, CUPTI
 * "Devices"): SMs, warp size, threads, blocks, registers and shared
 * memory per SM and per block, the driver's reserved shared memory per
 * block, compute capability and name, from the driver's
 * cuDeviceGetAttribute (libcuda, already loaded by the program's CUDA).
 *
 * The driver rather than CUPTI's device activity record: the record is
 * only made for devices initialized after the kind was enabled (a program
 * that initialized CUDA before gpuprof_init would have none) and lacks the
 * reserved shared memory per block. A device is described once, when a
 * context is created on it (the application thread, inside CUDA, where
 * the runtime is slow anyway) or, for contexts made before the backend
 * started, at the first flush after a record named the device. Never on
 * the launch path.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/cupti/cupti.h"

static _Atomic uint64_t described; /* bit d: device d described */
static gp_cu_driver drv;           /* resolved or installed */
static _Atomic int drv_state;      /* 0 unresolved, 1 resolved, -1 none */

void gpuprof__cupti_devices_test_driver(const gp_cu_driver *d)
{
    if (d) {
        drv = *d;
        atomic_store(&drv_state, 1);
    } else {
        memset(&drv, 0, sizeof(drv));
        atomic_store(&drv_state, 0);
    }
    atomic_store(&described, 0);
}

/* The driver's entry points, from the libcuda the program loaded. */
static bool driver(void)
{
    int s = atomic_load(&drv_state);
    if (s)
        return s > 0;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) {
        *(void **)&drv.Get = dlsym(h, "cuDeviceGet");
        *(void **)&drv.GetAttribute = dlsym(h, "cuDeviceGetAttribute");
        *(void **)&drv.GetName = dlsym(h, "cuDeviceGetName");
    }
    bool ok = drv.Get && drv.GetAttribute;
    atomic_store(&drv_state, ok ? 1 : -1);
    return ok;
}

static uint32_t attr(CUdevice dev, CUdevice_attribute a)
{
    int v = 0;
    return drv.GetAttribute(&v, a, dev) == CUDA_SUCCESS && v > 0 ? (uint32_t)v
                                                                : 0;
}

void gpuprof__cupti_device_describe(uint32_t ordinal)
{
    if (ordinal >= 64 ||
        atomic_load_explicit(&described, memory_order_relaxed) >> ordinal & 1)
        return;
    CUdevice dev;
    if (!driver() || drv.Get(&dev, (int)ordinal) != CUDA_SUCCESS)
        return;
    if (atomic_fetch_or(&described, 1ull << ordinal) >> ordinal & 1)
        return; /* another thread got here first */
    char name[256] = "";
    if (!drv.GetName || drv.GetName(name, sizeof(name), dev) != CUDA_SUCCESS)
        name[0] = '\0';
    gpuprof_device_info d = GPUPROF_DEVICE_INFO_INIT;
    d.api = "cuda";
    d.device = ordinal;
    d.name = name[0] ? name : NULL;
    d.compute_major = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    d.compute_minor = attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    d.sm_count = attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    d.warp_size = attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    d.max_threads_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    d.max_threads_per_sm =
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    d.max_blocks_per_sm =
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    d.registers_per_sm =
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    d.registers_per_block = attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    d.shared_bytes_per_sm =
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    d.shared_bytes_per_block =
        attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    d.shared_bytes_reserved =
        attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    gpuprof_be_device_describe(&d);
}

void gpuprof__cupti_context_device(CUcontext ctx)
{
    uint32_t id = 0;
    if (ctx && gpuprof__cu.GetDeviceId &&
        gpuprof__cu.GetDeviceId(ctx, &id) == CUPTI_SUCCESS)
        gpuprof__cupti_device_describe(id);
}

void gpuprof__cupti_devices_describe_used(void)
{
    uint64_t todo = gpuprof__cupti_devices_used() &
                    ~atomic_load_explicit(&described, memory_order_relaxed);
    for (uint32_t d = 0; todo; d++, todo >>= 1)
        if (todo & 1)
            gpuprof__cupti_device_describe(d);
}
