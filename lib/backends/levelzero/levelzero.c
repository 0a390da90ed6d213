/*
 * levelzero.c - the Level Zero backend: registration, the loader and its
 * tracing layer, the life cycle. Commands are in l0_cmd.c, objects in
 * l0_objs.c, the callbacks in l0_hooks.c; the design is in l0.h and
 * doc/BACKENDS.md "Level Zero".
 *
 * libze_loader is never linked: its entry points are dlsym'd. The loader
 * (1.8) loads its tracing layer only when ZE_ENABLE_TRACING_LAYER=1 is set
 * when zeInit runs, and a tracer can be made only after zeInit: so the
 * probe sets the variable (restoring it afterwards), calls zeInit(0)
 * itself -- the program's own zeInit then finds the loader initialized --
 * and makes the tracer. It first checks that a driver can be there at all
 * (ZE_ENABLE_ALT_DRIVERS, or Intel's GPU driver library), so a machine
 * without one never initializes Level Zero. A zeInit that ran before
 * gpuprof_init without the variable leaves no tracing layer: that is said
 * in the reason.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/levelzero/l0.h"

l0_api gpuprof__l0;
__thread int gpuprof__l0_inside __attribute__((tls_model("initial-exec")));
_Atomic int gpuprof__l0_on;
static bool registered, probed;
static zel_tracer_handle_t tracer;
static int tracer_user; /* pUserData must not be NULL */
static zel_core_callbacks_t pro_cbs, epi_cbs;
/* The devices of every driver, for the devices-unused detector. */
#define MAX_PRESENT 64
static ze_device_handle_t present[MAX_PRESENT];
static uint32_t npresent;

static const char *loader_name(void)
{
    const char *v = getenv("GPUPROF_LEVELZERO_LOADER");
    return v && *v ? v : "libze_loader.so.1";
}

/* ---- the loader's entry points ----------------------------------------- */
static bool resolve(void *h, char *reason, size_t rsize)
{
#define SYM(field, name)                                                       \
    do {                                                                       \
        *(void **)&Z.field = dlsym(h, name);                                   \
        if (!Z.field) {                                                        \
            snprintf(reason, rsize,                                            \
                     "%s has no %s (a Level Zero loader older "                \
                     "than 1.2?)",                                             \
                     loader_name(), name);                                     \
            return false;                                                      \
        }                                                                      \
    } while (0)
    SYM(Init, "zeInit");
    SYM(DriverGet, "zeDriverGet");
    SYM(DeviceGet, "zeDeviceGet");
    SYM(DeviceGetProperties, "zeDeviceGetProperties");
    SYM(DeviceGetGlobalTimestamps, "zeDeviceGetGlobalTimestamps");
    SYM(EventPoolCreate, "zeEventPoolCreate");
    SYM(EventPoolDestroy, "zeEventPoolDestroy");
    SYM(EventCreate, "zeEventCreate");
    SYM(EventDestroy, "zeEventDestroy");
    SYM(EventQueryStatus, "zeEventQueryStatus");
    SYM(EventHostSynchronize, "zeEventHostSynchronize");
    SYM(EventHostReset, "zeEventHostReset");
    SYM(EventQueryKernelTimestamp, "zeEventQueryKernelTimestamp");
    SYM(MemGetAllocProperties, "zeMemGetAllocProperties");
    SYM(ModuleGetNativeBinary, "zeModuleGetNativeBinary");
    SYM(TracerCreate, "zelTracerCreate");
    SYM(TracerDestroy, "zelTracerDestroy");
    SYM(TracerSetPrologues, "zelTracerSetPrologues");
    SYM(TracerSetEpilogues, "zelTracerSetEpilogues");
    SYM(TracerSetEnabled, "zelTracerSetEnabled");
    /* Harvest lists (l0_harv.c). */
    SYM(CommandListCreate, "zeCommandListCreate");
    SYM(CommandListDestroy, "zeCommandListDestroy");
    SYM(CommandListClose, "zeCommandListClose");
    SYM(CommandListReset, "zeCommandListReset");
    SYM(AppendQueryKernelTimestamps,
        "zeCommandListAppendQueryKernelTimestamps");
    SYM(AppendEventReset, "zeCommandListAppendEventReset");
    SYM(AppendBarrier, "zeCommandListAppendBarrier");
    SYM(MemAllocHost, "zeMemAllocHost");
    SYM(MemFree, "zeMemFree");
#undef SYM
    *(void **)&Z.DeviceGetComputeProperties =
        dlsym(h, "zeDeviceGetComputeProperties");
    return true;
}

/* Can a driver be there at all? The loader looks for Intel's GPU driver
 * by name, or for the files ZE_ENABLE_ALT_DRIVERS lists (and the null
 * driver when ZE_ENABLE_NULL_DRIVER is set). */
static bool driver_possible(char *reason, size_t rsize)
{
    const char *alt = getenv("ZE_ENABLE_ALT_DRIVERS");
    const char *null_drv = getenv("ZE_ENABLE_NULL_DRIVER");
    if ((alt && *alt) || (null_drv && *null_drv && strcmp(null_drv, "0")))
        return true;
    void *h = dlopen("libze_intel_gpu.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        return true;
    }
    snprintf(reason, rsize,
             "no Level Zero driver (libze_intel_gpu.so.1 not "
             "found, ZE_ENABLE_ALT_DRIVERS unset); zeInit not called");
    return false;
}

static const char *result_name(ze_result_t r)
{
    switch (r) {
    case ZE_RESULT_ERROR_UNINITIALIZED:
        return "ZE_RESULT_ERROR_UNINITIALIZED";
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
        return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case ZE_RESULT_ERROR_DEVICE_LOST:
        return "ZE_RESULT_ERROR_DEVICE_LOST";
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
        return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
    case ZE_RESULT_ERROR_UNKNOWN:
        return "ZE_RESULT_ERROR_UNKNOWN";
    default:
        return "error";
    }
}

/* zeInit with the tracing layer enabled; the variable is put back as it
 * was (the loader read it). */
static ze_result_t init_with_layer(void)
{
    const char *prev = getenv("ZE_ENABLE_TRACING_LAYER");
    char *saved = prev ? strdup(prev) : NULL;
    setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
    ze_result_t r = L0_CALL(Z.Init(0));
    if (saved)
        setenv("ZE_ENABLE_TRACING_LAYER", saved, 1);
    else
        unsetenv("ZE_ENABLE_TRACING_LAYER");
    free(saved);
    return r;
}

/* Frames of the loader and its tracing layer are hidden from call paths:
 * the innermost frame of an operation is the program's call. */
static int find_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    const char *n = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    n = n ? n + 1 : info->dlpi_name;
    if (!n || (strncmp(n, "libze_loader.so", 15) &&
               strncmp(n, "libze_tracing_layer.so", 22)))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            gpuprof_be_hide(info->dlpi_addr + ph->p_vaddr,
                            info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                            GPUPROF_HIDE_LOADER);
    }
    return 0;
}

static bool make_tracer(bool early, const char *prev_env, char *reason,
                        size_t rsize)
{
    zel_tracer_desc_t d = {ZEL_STRUCTURE_TYPE_TRACER_DESC, NULL, &tracer_user};
    ze_result_t r = L0_CALL(Z.TracerCreate(&d, &tracer));
    if (r != ZE_RESULT_SUCCESS) {
        tracer = NULL;
        if (early && !(prev_env && !strcmp(prev_env, "1")))
            snprintf(reason, rsize,
                     "zeInit ran before gpuprof_init without "
                     "ZE_ENABLE_TRACING_LAYER=1, so the loader has no tracing "
                     "layer (zelTracerCreate: 0x%x); call gpuprof_init before "
                     "the program's first zeInit, or set "
                     "ZE_ENABLE_TRACING_LAYER=1",
                     (unsigned)r);
        else
            snprintf(reason, rsize,
                     "zelTracerCreate: 0x%x (%s): the loader "
                     "did not load its tracing layer",
                     (unsigned)r, result_name(r));
        return false;
    }
    gpuprof__l0_callbacks(&pro_cbs, &epi_cbs);
    if (L0_CALL(Z.TracerSetPrologues(tracer, &pro_cbs)) != ZE_RESULT_SUCCESS ||
        L0_CALL(Z.TracerSetEpilogues(tracer, &epi_cbs)) != ZE_RESULT_SUCCESS ||
        L0_CALL(Z.TracerSetEnabled(tracer, 1)) != ZE_RESULT_SUCCESS) {
        L0_CALL(Z.TracerDestroy(tracer));
        tracer = NULL;
        snprintf(reason, rsize, "the tracer's callbacks could not be set");
        return false;
    }
    return true;
}

static void list_devices(void)
{
    ze_driver_handle_t drv[8];
    uint32_t nd = 8;
    npresent = 0;
    if (L0_CALL(Z.DriverGet(&nd, drv)) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < nd && i < 8; i++) {
        uint32_t n = MAX_PRESENT - npresent;
        if (n && L0_CALL(Z.DeviceGet(drv[i], &n, present + npresent)) ==
                     ZE_RESULT_SUCCESS)
            npresent += n;
    }
}

/* At finalize: devices present that no queue or list used, on the first
 * context's operation (which this closes). */
static void devices_unused_report(void)
{
    uint64_t corr = atomic_exchange_explicit(&gpuprof__l0_first_ctx, 0,
                                             memory_order_acq_rel);
    if (!corr)
        return;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_OTHER;
    a.flags = GPUPROF_ACTIVITY_NOTE;
    gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
    uint32_t unused = gpuprof__l0_devices_unused(present, npresent);
    if (unused) {
        x.count = 1;
        x.metric[0] = GPUPROF_METRIC_DET_DEVICES_UNUSED;
        x.value[0] = unused;
    }
    gpuprof_be_activity_submit(&a, &x);
}

/* ---- backend life cycle ------------------------------------------------ */
static gpuprof_status l0_probe(void *user, char *reason, size_t rsize)
{
    (void)user;
    if (probed && tracer)
        return GPUPROF_OK; /* measured again: the tracer is there */
    void *early = dlopen(loader_name(), RTLD_LAZY | RTLD_NOLOAD);
    if (early)
        dlclose(early);
    const char *penv = getenv("ZE_ENABLE_TRACING_LAYER");
    char prev_env[8];
    snprintf(prev_env, sizeof(prev_env), "%s", penv ? penv : "");
    /* The variable is set before the loader is loaded too: some loaders
     * read it when they load. */
    if (!early)
        setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
    void *h = dlopen(loader_name(), RTLD_NOW | RTLD_LOCAL);
    if (!early) {
        if (penv)
            setenv("ZE_ENABLE_TRACING_LAYER", prev_env, 1);
        else
            unsetenv("ZE_ENABLE_TRACING_LAYER");
    }
    if (!h) {
        snprintf(reason, rsize, "no Level Zero loader (%s): %s", loader_name(),
                 dlerror());
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!resolve(h, reason, rsize) || !driver_possible(reason, rsize))
        return GPUPROF_E_UNAVAILABLE; /* h stays: the loader unloads badly */
    void *layer = dlopen("libze_tracing_layer.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!layer) {
        snprintf(reason, rsize,
                 "no Level Zero tracing layer "
                 "(libze_tracing_layer.so.1): %s",
                 dlerror());
        return GPUPROF_E_UNAVAILABLE;
    }
    dlclose(layer);
    probed = true;
    ze_result_t r = init_with_layer();
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(reason, rsize,
                 "zeInit: 0x%x (%s): no usable Level Zero "
                 "driver",
                 (unsigned)r, result_name(r));
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!make_tracer(early != NULL, penv ? prev_env : NULL, reason, rsize))
        return GPUPROF_E_UNAVAILABLE;
    dl_iterate_phdr(find_loader, NULL);
    list_devices();
    if (early)
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "levelzero: the loader was loaded before gpuprof_init; "
                       "calls the program made before are not measured");
    return GPUPROF_OK;
}

static gpuprof_status l0_init(void *user)
{
    (void)user;
    return tracer ? GPUPROF_OK : GPUPROF_E_UNAVAILABLE;
}

static gpuprof_status l0_start(void *user)
{
    (void)user;
    atomic_store_explicit(&gpuprof__l0_on, 1, memory_order_release);
    return GPUPROF_OK;
}

/* Paused: objects are still tracked (a queue made while paused is
 * measured after gpuprof_start); operations are not begun. */
static gpuprof_status l0_stop(void *user)
{
    (void)user;
    if (tracer)
        gpuprof__l0_settle(0);
    return GPUPROF_OK;
}

static gpuprof_status l0_flush(void *user)
{
    (void)user;
    if (tracer)
        gpuprof__l0_settle(0);
    return GPUPROF_OK;
}

static void l0_fini(void *user)
{
    (void)user;
    atomic_store_explicit(&gpuprof__l0_on, 0, memory_order_release);
    if (tracer) {
        gpuprof__l0_drain();
        devices_unused_report();
    }
    /* The tracer stays enabled (the program may go on calling Level Zero;
     * the callbacks then do nothing): a measurement started again uses it.
     * Destroying it here could race with callbacks on other threads. */
}

void gpuprof__backend_levelzero_register(void);
void gpuprof__backend_levelzero_register(void)
{
    if (registered)
        return;
    registered = true;
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "levelzero";
    b.probe = l0_probe;
    b.init = l0_init;
    b.start = l0_start;
    b.stop = l0_stop;
    b.flush = l0_flush;
    b.fini = l0_fini;
    gpuprof_backend_register(&b, 0);
}
