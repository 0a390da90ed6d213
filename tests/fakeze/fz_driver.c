/* tests/fakeze/fz_driver.c - the fake driver's face to the loader: the 53
 * Get...ProcAddrTable exports the 1.8 loader asks for at zeInit (each
 * fills its table with what the driver has, NULL elsewhere), zeInit (which
 * reads the knobs of README.md), the driver and its devices and their
 * properties, global timestamps, and contexts. */
#include "fakeze.h"

#include <errno.h>
#include <inttypes.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>
#include <stdlib.h>
#include <string.h>

struct fz_state fz = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* -------------------------------------------------------------- objects -- */

static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;
static void **objects;
static size_t n_objects, cap_objects;

void *fz_new(size_t size)
{
    void *p = calloc(1, size);
    if (p == NULL)
        return NULL;
    pthread_mutex_lock(&objects_lock);
    if (n_objects == cap_objects) {
        size_t cap = cap_objects ? 2 * cap_objects : 64;
        void **n = realloc(objects, cap * sizeof *n);
        if (n == NULL) {
            pthread_mutex_unlock(&objects_lock);
            free(p);
            return NULL;
        }
        objects = n;
        cap_objects = cap;
    }
    objects[n_objects++] = p;
    pthread_mutex_unlock(&objects_lock);
    return p;
}

void fz_delete(void *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&objects_lock);
    for (size_t i = n_objects; i-- > 0;) {
        if (objects[i] == p) {
            objects[i] = objects[--n_objects];
            break;
        }
    }
    pthread_mutex_unlock(&objects_lock);
    free(p);
}

/* ---------------------------------------------------------------- knobs -- */

static bool knob_u64(const char *var, uint64_t def, uint64_t *out)
{
    const char *s = getenv(var);
    if (s == NULL || *s == '\0') {
        *out = def;
        return true;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || *s == '-') {
        fprintf(stderr, "fakeze: %s=%s is not a number\n", var, s);
        return false;
    }
    *out = v;
    return true;
}

static bool knob_kernels(struct fz_knobs *k)
{
    const char *s = getenv("FAKEZE_KERNELS");
    if (s == NULL || *s == '\0')
        return true;
    for (const char *p = s; *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        char num[32];
        size_t nlen = eq ? len - (size_t)(eq + 1 - p) : 0;
        if (eq == NULL || eq == p || (size_t)(eq - p) >= FZ_NAME_MAX ||
            nlen == 0 || nlen >= sizeof num) {
            fprintf(stderr,
                    "fakeze: FAKEZE_KERNELS entry '%.*s' is not name=ns\n",
                    (int)len, p);
            return false;
        }
        memcpy(num, eq + 1, nlen);
        num[nlen] = '\0';
        char *end;
        unsigned long long ns = strtoull(num, &end, 0);
        if (*end != '\0' || num[0] == '-') {
            fprintf(stderr,
                    "fakeze: FAKEZE_KERNELS entry '%.*s' is not name=ns\n",
                    (int)len, p);
            return false;
        }
        struct fz_kernel_time *n =
            realloc(k->kernels, (k->n_kernels + 1) * sizeof *n);
        if (n == NULL)
            return false;
        k->kernels = n;
        memcpy(n[k->n_kernels].name, p, (size_t)(eq - p));
        n[k->n_kernels].name[eq - p] = '\0';
        n[k->n_kernels].ns = ns;
        k->n_kernels++;
        p += len + (comma ? 1 : 0);
    }
    return true;
}

static bool knob_clock(struct fz_knobs *k)
{
    const char *s = getenv("FAKEZE_HOST_CLOCK");
    k->clock = CLOCK_MONOTONIC_RAW;
    if (s == NULL || *s == '\0' || strcmp(s, "raw") == 0)
        return true;
    if (strcmp(s, "monotonic") == 0) {
        k->clock = CLOCK_MONOTONIC;
        return true;
    }
    fprintf(stderr,
            "fakeze: FAKEZE_HOST_CLOCK=%s is neither raw nor monotonic\n", s);
    return false;
}

static bool read_knobs(struct fz_knobs *k)
{
    uint64_t dev, bits, kbits, ce, cpe, res;
    bool ok =
        knob_u64("FAKEZE_DEVICES", 1, &dev) &&
        knob_u64("FAKEZE_TIMER_HZ", 12500000, &k->timer_hz) &&
        knob_u64("FAKEZE_TS_VALID_BITS", 64, &bits) &&
        knob_u64("FAKEZE_KERNEL_TS_VALID_BITS", 32, &kbits) &&
        knob_u64("FAKEZE_CONTEXT_TS_OFFSET", 1000, &k->context_ts_offset) &&
        knob_u64("FAKEZE_KERNEL_NS", 100000, &k->kernel_ns) &&
        knob_u64("FAKEZE_COPY_BPS", 10000000000ull, &k->copy_bps) &&
        knob_u64("FAKEZE_COPY_NS", 0, &k->copy_ns) &&
        knob_u64("FAKEZE_SUBMIT_NS", 0, &k->submit_ns) &&
        knob_u64("FAKEZE_COMPUTE_ENGINES", 2, &ce) &&
        knob_u64("FAKEZE_COPY_ENGINES", 1, &cpe) &&
        knob_u64("FAKEZE_INIT_RESULT", 0, &res) && knob_clock(k) &&
        knob_kernels(k);
    if (!ok)
        return false;
    if (dev < 1 || dev > FZ_MAX_DEVICES || k->timer_hz == 0 || bits < 1 ||
        bits > 64 || kbits < 1 || kbits > 64 || ce < 1 || ce > FZ_MAX_ENGINES ||
        cpe > FZ_MAX_ENGINES || k->copy_bps == 0) {
        fprintf(
            stderr,
            "fakeze: a knob is out of range (see tests/fakeze/README.md)\n");
        return false;
    }
    k->devices = (uint32_t)dev;
    k->ts_valid_bits = (uint32_t)bits;
    k->kernel_ts_valid_bits = (uint32_t)kbits;
    k->compute_engines = (uint32_t)ce;
    k->copy_engines = (uint32_t)cpe;
    k->init_result = (ze_result_t)res;
    uint64_t def_start = 0x700000000ull + (1ull << 32) - k->timer_hz / 5;
    return knob_u64("FAKEZE_TS_START", def_start, &k->ts_start);
}

static void setup_devices(void)
{
    for (uint32_t d = 0; d < fz.k.devices; d++) {
        struct _ze_device_handle_t *dev = &fz.devices[d];
        dev->id = d;
        for (uint32_t i = 0; i < FZ_MAX_ENGINES; i++) {
            dev->compute[i] =
                (struct fz_engine){.dev = dev, .ordinal = 0, .index = i};
            dev->copy[i] =
                (struct fz_engine){.dev = dev, .ordinal = 1, .index = i};
        }
    }
}

/* ----------------------------------------------------------------- init -- */

static ze_result_t fz_init(ze_init_flags_t flags)
{
    if (flags != 0 && !(flags & ZE_INIT_FLAG_GPU_ONLY))
        return ZE_RESULT_ERROR_UNINITIALIZED; /* a VPU-only request: no device
                                               */
    pthread_mutex_lock(&fz.lock);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!fz.initialised) {
        bool ok = read_knobs(&fz.k);
        if (!ok || fz.k.init_result != ZE_RESULT_SUCCESS) {
            /* The loader unloads a driver whose init fails: free all. */
            r = ok ? fz.k.init_result : ZE_RESULT_ERROR_INVALID_ARGUMENT;
            free(fz.k.kernels);
            fz.k.kernels = NULL;
            fz.k.n_kernels = 0;
        } else {
            fz.h0 = fz_now();
            setup_devices();
            const char *path = getenv("FAKEZE_TRACE");
            if (path != NULL && *path != '\0') {
                fz.trace = fopen(path, "a");
                if (fz.trace == NULL)
                    fprintf(stderr, "fakeze: cannot open FAKEZE_TRACE=%s: %s\n",
                            path, strerror(errno));
            }
            fz.initialised = true;
        }
    }
    pthread_mutex_unlock(&fz.lock);
    return r;
}

/* --------------------------------------------------------------- driver -- */

static ze_result_t driver_get(uint32_t *count, ze_driver_handle_t *drivers)
{
    if (count == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (!fz.initialised) {
        *count = 0;
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    if (*count == 0 || drivers == NULL) {
        *count = 1;
        return ZE_RESULT_SUCCESS;
    }
    *count = 1;
    drivers[0] = &fz.driver;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_api_version(ze_driver_handle_t d, ze_api_version_t *v)
{
    *v = ZE_API_VERSION_CURRENT;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_properties(ze_driver_handle_t d,
                                     ze_driver_properties_t *p)
{
    memset(p->uuid.id, 0, sizeof p->uuid.id);
    memcpy(p->uuid.id, "fakeze", 6);
    p->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_ipc(ze_driver_handle_t d,
                              ze_driver_ipc_properties_t *p)
{
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_extensions(ze_driver_handle_t d, uint32_t *count,
                                     ze_driver_extension_properties_t *p)
{
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_ext_function(ze_driver_handle_t d, const char *name,
                                       void **fn)
{
    *fn = NULL;
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

/* --------------------------------------------------------------- device -- */

static ze_result_t device_get(ze_driver_handle_t d, uint32_t *count,
                              ze_device_handle_t *devs)
{
    if (count == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*count == 0 || devs == NULL) {
        *count = fz.k.devices;
        return ZE_RESULT_SUCCESS;
    }
    if (*count > fz.k.devices)
        *count = fz.k.devices;
    for (uint32_t i = 0; i < *count; i++)
        devs[i] = &fz.devices[i];
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_sub_devices(ze_device_handle_t dev, uint32_t *count,
                                      ze_device_handle_t *subs)
{
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_properties(ze_device_handle_t dev,
                                     ze_device_properties_t *p)
{
    if (dev == NULL || p == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    bool hz = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = 0x8086;
    p->deviceId = 0xfa4e;
    p->flags = 0;
    p->subdeviceId = 0;
    p->coreClockRate = 1600;
    p->maxMemAllocSize = 1ull << 32;
    p->maxHardwareContexts = 64;
    p->maxCommandQueuePriority = 0;
    p->numThreadsPerEU = 8;
    p->physicalEUSimdWidth = 8;
    p->numEUsPerSubslice = 8;
    p->numSubslicesPerSlice = 4;
    p->numSlices = 1;
    p->timerResolution =
        hz ? fz.k.timer_hz
           : (1000000000ull + fz.k.timer_hz / 2) / fz.k.timer_hz;
    p->timestampValidBits = fz.k.ts_valid_bits;
    p->kernelTimestampValidBits = fz.k.kernel_ts_valid_bits;
    memset(&p->uuid, 0, sizeof p->uuid);
    memcpy(p->uuid.id, "fakeze-dev", 10);
    p->uuid.id[15] = (uint8_t)dev->id;
    snprintf(p->name, sizeof p->name, "fakeze GPU %" PRIu32, dev->id);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_compute(ze_device_handle_t dev,
                                  ze_device_compute_properties_t *p)
{
    p->maxTotalGroupSize = 1024;
    p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
    p->maxSharedLocalMemory = 65536;
    p->numSubGroupSizes = 2;
    memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
    p->subGroupSizes[0] = 16;
    p->subGroupSizes[1] = 32;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_module(ze_device_handle_t dev,
                                 ze_device_module_properties_t *p)
{
    p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
    p->flags = 0;
    p->fp16flags = p->fp32flags = p->fp64flags = 0;
    p->maxArgumentsSize = 2048;
    p->printfBufferSize = 0;
    memset(&p->nativeKernelSupported, 0, sizeof p->nativeKernelSupported);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_queue_groups(ze_device_handle_t dev, uint32_t *count,
                                       ze_command_queue_group_properties_t *p)
{
    uint32_t n = fz.k.copy_engines > 0 ? 2 : 1;
    if (*count == 0 || p == NULL) {
        *count = n;
        return ZE_RESULT_SUCCESS;
    }
    if (*count > n)
        *count = n;
    for (uint32_t i = 0; i < *count; i++) {
        p[i].flags =
            i == 0
                ? ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
                      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS |
                      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS
                : ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        p[i].maxMemoryFillPatternSize = FZ_PATTERN_MAX;
        p[i].numQueues = i == 0 ? fz.k.compute_engines : fz.k.copy_engines;
    }
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_memory(ze_device_handle_t dev, uint32_t *count,
                                 ze_device_memory_properties_t *p)
{
    if (*count == 0 || p == NULL) {
        *count = 1;
        return ZE_RESULT_SUCCESS;
    }
    *count = 1;
    p->flags = 0;
    p->maxClockRate = 1000;
    p->maxBusWidth = 64;
    p->totalSize = 1ull << 34;
    snprintf(p->name, sizeof p->name, "fakeze HBM");
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_memory_access(ze_device_handle_t dev,
                                        ze_device_memory_access_properties_t *p)
{
    ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
    p->hostAllocCapabilities = p->deviceAllocCapabilities = rw;
    p->sharedSingleDeviceAllocCapabilities =
        p->sharedCrossDeviceAllocCapabilities = rw;
    p->sharedSystemAllocCapabilities = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_cache(ze_device_handle_t dev, uint32_t *count,
                                ze_device_cache_properties_t *p)
{
    if (*count == 0 || p == NULL) {
        *count = 1;
        return ZE_RESULT_SUCCESS;
    }
    *count = 1;
    p->flags = 0;
    p->cacheSize = 1u << 20;
    return ZE_RESULT_SUCCESS;
}

/* No images, samplers or external memory: all zero ("not supported"). */
static ze_result_t device_image(ze_device_handle_t dev,
                                ze_device_image_properties_t *p)
{
    p->maxImageDims1D = p->maxImageDims2D = p->maxImageDims3D = 0;
    p->maxImageBufferSize = 0;
    p->maxImageArraySlices = p->maxSamplers = 0;
    p->maxReadImageArgs = p->maxWriteImageArgs = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t
device_external_memory(ze_device_handle_t dev,
                       ze_device_external_memory_properties_t *p)
{
    p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
    p->imageImportTypes = p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_p2p(ze_device_handle_t a, ze_device_handle_t b,
                              ze_device_p2p_properties_t *p)
{
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_can_access_peer(ze_device_handle_t a,
                                          ze_device_handle_t b, ze_bool_t *v)
{
    *v = a == b;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_status(ze_device_handle_t dev)
{
    return ZE_RESULT_SUCCESS;
}

static ze_result_t device_global_timestamps(ze_device_handle_t dev,
                                            uint64_t *host, uint64_t *device)
{
    if (dev == NULL || host == NULL || device == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint64_t now = fz_now();
    *host = now;
    *device = fz_tick_floor(now) & fz_mask(fz.k.ts_valid_bits);
    return ZE_RESULT_SUCCESS;
}

/* -------------------------------------------------------------- context -- */

static ze_result_t context_create(ze_driver_handle_t d,
                                  const ze_context_desc_t *desc,
                                  ze_context_handle_t *out)
{
    if (out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *out = fz_new(sizeof **out);
    return *out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

static ze_result_t context_create_ex(ze_driver_handle_t d,
                                     const ze_context_desc_t *desc, uint32_t n,
                                     ze_device_handle_t *devs,
                                     ze_context_handle_t *out)
{
    return context_create(d, desc, out);
}

static ze_result_t context_destroy(ze_context_handle_t c)
{
    fz_delete(c);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_status(ze_context_handle_t c)
{
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_barrier(ze_context_handle_t c,
                                   ze_device_handle_t dev)
{
    return ZE_RESULT_SUCCESS;
}

static ze_result_t context_resident(ze_context_handle_t c,
                                    ze_device_handle_t dev, void *p,
                                    size_t size)
{
    return ZE_RESULT_SUCCESS;
}

/* --------------------------------------------------------------- tables -- */

static ze_result_t check_version(ze_api_version_t v, const void *table)
{
    if (table == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(v) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT))
        return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    return ZE_RESULT_SUCCESS;
}

/* One export per table: checks the version, empties the table, fills what
 * the driver has. */
#define FZ_TABLE(getter, type, fill)                                           \
    ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, type *t);   \
    ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, type *t)    \
    {                                                                          \
        ze_result_t r = check_version(v, t);                                   \
        if (r != ZE_RESULT_SUCCESS)                                            \
            return r;                                                          \
        memset(t, 0, sizeof *t);                                               \
        fill;                                                                  \
        return ZE_RESULT_SUCCESS;                                              \
    }

static void fill_global(ze_global_dditable_t *t)
{
    t->pfnInit = fz_init;
}

static void fill_driver(ze_driver_dditable_t *t)
{
    t->pfnGet = driver_get;
    t->pfnGetApiVersion = driver_api_version;
    t->pfnGetProperties = driver_properties;
    t->pfnGetIpcProperties = driver_ipc;
    t->pfnGetExtensionProperties = driver_extensions;
    t->pfnGetExtensionFunctionAddress = driver_ext_function;
}

static void fill_device(ze_device_dditable_t *t)
{
    t->pfnGet = device_get;
    t->pfnGetSubDevices = device_sub_devices;
    t->pfnGetProperties = device_properties;
    t->pfnGetComputeProperties = device_compute;
    t->pfnGetModuleProperties = device_module;
    t->pfnGetCommandQueueGroupProperties = device_queue_groups;
    t->pfnGetMemoryProperties = device_memory;
    t->pfnGetMemoryAccessProperties = device_memory_access;
    t->pfnGetCacheProperties = device_cache;
    t->pfnGetImageProperties = device_image;
    t->pfnGetExternalMemoryProperties = device_external_memory;
    t->pfnGetP2PProperties = device_p2p;
    t->pfnCanAccessPeer = device_can_access_peer;
    t->pfnGetStatus = device_status;
    t->pfnGetGlobalTimestamps = device_global_timestamps;
}

static void fill_context(ze_context_dditable_t *t)
{
    t->pfnCreate = context_create;
    t->pfnCreateEx = context_create_ex;
    t->pfnDestroy = context_destroy;
    t->pfnGetStatus = context_status;
    t->pfnSystemBarrier = context_barrier;
    t->pfnMakeMemoryResident = context_resident;
    t->pfnEvictMemory = context_resident;
}

FZ_TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t, fill_global(t))
FZ_TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t, fill_driver(t))
FZ_TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t, fill_device(t))
FZ_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t, (void)0)
FZ_TABLE(zeGetContextProcAddrTable, ze_context_dditable_t, fill_context(t))
FZ_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t,
         fz_fill_command_queue(t))
FZ_TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t,
         fz_fill_command_list(t))
FZ_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t, (void)0)
FZ_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t, (void)0)
FZ_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t, fz_fill_fence(t))
FZ_TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t,
         fz_fill_event_pool(t))
FZ_TABLE(zeGetEventProcAddrTable, ze_event_dditable_t, fz_fill_event(t))
FZ_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t, (void)0)
FZ_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t, fz_fill_module(t))
FZ_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t,
         fz_fill_module_build_log(t))
FZ_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t, fz_fill_kernel(t))
FZ_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t, (void)0)
FZ_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t, (void)0)
FZ_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t, (void)0)
FZ_TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t, fz_fill_mem(t))
FZ_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t, (void)0)
FZ_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t,
         (void)0)
FZ_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t,
         (void)0)

/* Tools (zet) and sysman (zes): nothing, but the loader needs the exports. */
FZ_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t, (void)0)
FZ_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t, (void)0)
FZ_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t, (void)0)
FZ_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t, (void)0)
FZ_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t, (void)0)
FZ_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t, (void)0)
FZ_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t,
         (void)0)
FZ_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t, (void)0)
FZ_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t,
         (void)0)
FZ_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t,
         (void)0)
FZ_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t, (void)0)
FZ_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t, (void)0)
FZ_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t, (void)0)
FZ_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t, (void)0)
FZ_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t, (void)0)
FZ_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t, (void)0)
FZ_TABLE(zesGetPerformanceFactorProcAddrTable,
         zes_performance_factor_dditable_t, (void)0)
FZ_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t, (void)0)
FZ_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t, (void)0)
FZ_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t, (void)0)
FZ_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t, (void)0)
FZ_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t, (void)0)
FZ_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t, (void)0)
FZ_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t, (void)0)
FZ_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t, (void)0)
FZ_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t, (void)0)
FZ_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t, (void)0)
FZ_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t, (void)0)
FZ_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t, (void)0)
FZ_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t, (void)0)
