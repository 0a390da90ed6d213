/*
 * cupti.c - the CUPTI backend: loading libcupti, registration, API and
 * resource callbacks, the activity buffer pool (cupti.h; doc/BACKENDS.md).
 *
 * Hooks. Every runtime and driver API that launches, copies, sets,
 * allocates, frees or waits is classified once by its name and only those
 * callbacks are enabled. At API enter the outermost call of a thread
 * begins one operation (one unwind: the runtime's nested driver call joins
 * it) and notes its CUPTI correlation id -> our correlation in the ring;
 * the nested call's id is noted too, since records carry either. At the
 * outermost exit the operation ends; allocations and frees, which produce
 * no device record, are closed there with their time in the call. When
 * traces are written, event records, stream waits for events and queries
 * are operations too (closed at exit likewise), for their dependency notes
 * (cupti_deps.c).
 *
 * Records. CUPTI asks for buffers (a bounded pool: when it is spent CUPTI
 * drops records and says how many, and we count them) and hands them back
 * full on its own thread; cupti_act.c decodes them.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cupti/cupti.h"
#include "gen/features.h" /* GPUPROF_CUDA_HOME */

#ifndef GPUPROF_CUDA_HOME
#define GPUPROF_CUDA_HOME "/usr/local/cuda"
#endif

gp_cupti_api gpuprof__cu;

static bool registered;
static _Atomic int cu_on; /* hooks begin operations */
static CUpti_SubscriberHandle subscriber;
static bool subscribed, activities_on, pcs_on;

/* ---- loading ------------------------------------------------------------ */
const char *gpuprof__cupti_err(CUptiResult r, char *buf, size_t size)
{
    const char *s = NULL;
    if (!gpuprof__cu.GetResultString ||
        gpuprof__cu.GetResultString(r, &s) != CUPTI_SUCCESS)
        s = NULL;
    snprintf(buf, size, "%s (%d)", s ? s : "CUPTI error", (int)r);
    return buf;
}

static void *open_lib(char *tried, size_t tsize)
{
    const char *env = getenv("GPUPROF_CUPTI_LIBRARY");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(tried, tsize, "GPUPROF_CUPTI_LIBRARY=%s: %s", env,
                     dlerror());
        return h;
    }
    const char *home = getenv("CUDA_HOME");
    const char *homes[] = {home && *home ? home : NULL, GPUPROF_CUDA_HOME};
    void *h = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    for (int i = 0; !h && i < 2; i++) {
        if (!homes[i])
            continue;
        const char *sub[] = {"extras/CUPTI/lib64", "lib64",
                             "targets/x86_64-linux/lib"};
        for (int j = 0; !h && j < 3; j++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s/libcupti.so", homes[i], sub[j]);
            h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (!h)
        snprintf(tried, tsize,
                 "no libcupti.so (looked in the loader's path, "
                 "$CUDA_HOME and %s; GPUPROF_CUPTI_LIBRARY names one)",
                 GPUPROF_CUDA_HOME);
    return h;
}

#define SYM(field, name, required)                                             \
    do {                                                                       \
        *(void **)&gpuprof__cu.field = dlsym(h, name);                         \
        if (!gpuprof__cu.field && (required)) {                                \
            snprintf(reason, rsize, "libcupti has no %s", name);               \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

bool gpuprof__cupti_load(char *reason, size_t rsize)
{
    if (gpuprof__cu.lib)
        return true;
    void *h = open_lib(reason, rsize);
    if (!h)
        return false;
    SYM(GetVersion, "cuptiGetVersion", true);
    SYM(GetResultString, "cuptiGetResultString", true);
    SYM(Subscribe, "cuptiSubscribe", true);
    SYM(Unsubscribe, "cuptiUnsubscribe", true);
    SYM(EnableCallback, "cuptiEnableCallback", true);
    SYM(EnableDomain, "cuptiEnableDomain", true);
    SYM(GetCallbackName, "cuptiGetCallbackName", true);
    SYM(ActivityEnable, "cuptiActivityEnable", true);
    SYM(ActivityDisable, "cuptiActivityDisable", true);
    SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks", true);
    SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord", true);
    SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords",
        true);
    SYM(ActivityFlushAll, "cuptiActivityFlushAll", true);
    SYM(GetTimestamp, "cuptiGetTimestamp", true);
    SYM(RegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback",
        false);
    SYM(EnableAllSyncRecords, "cuptiActivityEnableAllSyncRecords", false);
    SYM(Finalize, "cuptiFinalize", false);
    SYM(GetCubinCrc, "cuptiGetCubinCrc", false);
    SYM(GetDeviceId, "cuptiGetDeviceId", false);
    SYM(GetStreamIdEx, "cuptiGetStreamIdEx", false);
    uint32_t v = 0;
    if (gpuprof__cu.GetVersion(&v) != CUPTI_SUCCESS || v < CUPTI_API_VERSION) {
        /* Its records would have older layouts than we decode. */
        snprintf(reason, rsize,
                 "libcupti API version %u is older than the "
                 "%u this build decodes (built against CUDA at %s)",
                 v, (unsigned)CUPTI_API_VERSION, GPUPROF_CUDA_HOME);
        goto fail;
    }
    gpuprof__cu.lib = h;
    return true;
fail:
    dlclose(h);
    memset(&gpuprof__cu, 0, sizeof(gpuprof__cu));
    return false;
}

/* ---- classification ----------------------------------------------------- */
static bool starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static uint32_t copy_dir(const char *b)
{
    if (strstr(b, "HtoD") || strstr(b, "HtoA") || strstr(b, "ToSymbol"))
        return GPUPROF_OP_COPY_H2D;
    if (strstr(b, "DtoH") || strstr(b, "AtoH") || strstr(b, "FromSymbol"))
        return GPUPROF_OP_COPY_D2H;
    if (strstr(b, "DtoD") || strstr(b, "AtoA") || strstr(b, "AtoD") ||
        strstr(b, "DtoA") || strstr(b, "Peer") || strstr(b, "ArrayToArray"))
        return GPUPROF_OP_COPY_D2D;
    return GPUPROF_OP_COPY_OTHER;
}

uint32_t gpuprof__cupti_classify_name(const char *n)
{
    if (!n)
        return 0;
    bool rt = starts(n, "cuda");
    if (!rt && !starts(n, "cu"))
        return 0;
    const char *b = n + (rt ? 4 : 2);
    if (starts(b, "LaunchHostFunc"))
        return 0; /* a host function on a stream: no device work */
    if (starts(b, "GraphLaunch"))
        return GPUPROF_OP_KERNEL | GP_CU_GRAPH;
    if (starts(b, "Launch"))
        return GPUPROF_OP_KERNEL;
    if (starts(b, "Memcpy"))
        return copy_dir(b);
    if (starts(b, "Memset"))
        return GPUPROF_OP_MEMSET;
    if (rt ? starts(b, "Malloc") || starts(b, "HostAlloc")
           : starts(b, "MemAlloc") || starts(b, "MemHostAlloc"))
        return GPUPROF_OP_ALLOC | GP_CU_HOSTDONE;
    if (rt ? starts(b, "Free") : starts(b, "MemFree"))
        return GPUPROF_OP_FREE | GP_CU_HOSTDONE;
    if (strstr(b, "Synchronize"))
        return GPUPROF_OP_SYNC;
    /* For the trace analysis only: what the dependency notes need. */
    if (starts(b, "EventRecord") || starts(b, "StreamWaitEvent") ||
        starts(b, "EventQuery") || starts(b, "StreamQuery"))
        return GPUPROF_OP_OTHER | GP_CU_HOSTDONE | GP_CU_TRACED;
    /* Modules loaded from memory: JIT time when the image is PTX
     * (cupti_detect.c), closed at exit with the time in the call. */
    if (!rt && (starts(b, "ModuleLoadData") || starts(b, "LibraryLoadData")))
        return GPUPROF_OP_BUILD | GP_CU_HOSTDONE;
    return 0;
}

static uint16_t cls_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint16_t cls_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];

/* Classifies every callback id of both API domains and enables ours;
 * the number enabled. */
static unsigned classify_all(bool enable)
{
    unsigned n = 0;
    for (uint32_t d = 0; d < 2; d++) {
        CUpti_CallbackDomain dom =
            d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
        uint16_t *cls = d ? cls_drv : cls_rt;
        uint32_t size =
            d ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
        for (uint32_t id = 1; id < size; id++) {
            const char *name = NULL;
            if (gpuprof__cu.GetCallbackName(dom, id, &name) != CUPTI_SUCCESS)
                continue;
            cls[id] = (uint16_t)gpuprof__cupti_classify_name(name);
            if ((cls[id] & GP_CU_TRACED) && !gpuprof_be_tracing())
                cls[id] = 0;
            if (!cls[id])
                continue;
            if (enable && gpuprof__cu.EnableCallback(1, subscriber, dom, id) !=
                              CUPTI_SUCCESS)
                cls[id] = 0;
            else
                n++;
        }
    }
    return n;
}

/* ---- hiding the runtime's frames ----------------------------------------
 * A call path ends at the user's call: frames in libcupti, libcuda and a
 * shared libcudart are dropped (gpuprof_be_hide). A statically linked
 * cudart lives in the program itself and keeps its few frames. */
static int hide_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    if (!base || !(starts(base, "libcupti.so") || starts(base, "libcuda.so") ||
                   starts(base, "libcudart.so")))
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
            continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + p->p_memsz > hi)
            hi = a + p->p_memsz;
    }
    if (lo < hi)
        gpuprof_be_hide(lo, hi, GPUPROF_HIDE_LOADER);
    return 0;
}

static _Atomic int cuda_hidden;

static int main_base(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(uintptr_t *)arg = info->dlpi_addr; /* the first object: the program */
    return 1;
}

/* nvcc's default, cudart linked into the program: its code is hidden like
 * a shared libcudart's (found once, from the program's symbol table). */
static void find_static_cudart(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat sb;
    void *m = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    uint64_t lo, hi;
    if (gpuprof__cupti_cudart_range(m, (size_t)sb.st_size, &lo, &hi)) {
        uintptr_t base = 0;
        dl_iterate_phdr(main_base, &base);
        gpuprof_be_hide(base + lo, base + hi, GPUPROF_HIDE_LOADER);
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "cupti: a static CUDA runtime in the "
                       "program (%llu KiB of code) is hidden from call paths",
                       (unsigned long long)((hi - lo) >> 10));
    }
    munmap(m, (size_t)sb.st_size);
}

/* Hides the runtime's code, then says so: a hook that sees cuda_hidden set
 * finds every range published (each thread that sees it clear does the
 * work itself; the static runtime's range is computed once). */
static void hide_runtime(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_static_cudart);
    dl_iterate_phdr(hide_one, NULL);
    gp_store_release(&cuda_hidden, 1);
}

/* ---- API callbacks --------------------------------------------------------
 */
typedef struct cu_tls {
    uint32_t depth; /* API callbacks entered, not yet exited */
    uint32_t cls;
    uint64_t corr;  /* the open operation, 0: none */
    uint64_t t0;    /* HOSTDONE operations: process clock at enter */
    uint64_t bytes; /* allocations: the size asked for */
} cu_tls;

static __thread cu_tls tls __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t api_failed; /* calls that returned an error */

/* The parameters we read, as laid out in generated_cuda_meta.h and
 * generated_cuda_runtime_api_meta.h (which do not compile as C on their
 * own): every allocation we size starts (pointer to the result, size);
 * cudaMemcpy and cudaMemcpyAsync start (dst, src, count, kind). */
typedef struct alloc_params {
    void *result;
    size_t size;
} alloc_params;

typedef struct memcpy_params {
    void *dst;
    const void *src;
    size_t count;
    enum cudaMemcpyKind kind;
} memcpy_params;

/* The size an allocation asks for, where its parameters say. */
static uint64_t alloc_bytes(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                            const void *params)
{
    if (!params)
        return 0;
    bool sized;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        sized = id == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020 ||
                id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020 ||
                id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000 ||
                id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020 ||
                id == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020;
    else
        sized = id == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 ||
                id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2 ||
                id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged ||
                id == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync;
    return sized ? ((const alloc_params *)params)->size : 0;
}

/* cudaMemcpy and cudaMemcpyAsync say their direction in an argument. */
static uint32_t copy_kind_arg(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                              const void *params, uint32_t kind)
{
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API || !params ||
        (id != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 &&
         id != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000 &&
         id != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 &&
         id != CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000))
        return kind;
    enum cudaMemcpyKind k = ((const memcpy_params *)params)->kind;
    return k == cudaMemcpyHostToDevice     ? GPUPROF_OP_COPY_H2D
           : k == cudaMemcpyDeviceToHost   ? GPUPROF_OP_COPY_D2H
           : k == cudaMemcpyDeviceToDevice ? GPUPROF_OP_COPY_D2D
                                           : GPUPROF_OP_COPY_OTHER;
}

__attribute__((noinline)) static void api_enter(CUpti_CallbackDomain dom,
                                                CUpti_CallbackId id,
                                                const CUpti_CallbackData *cb,
                                                uint32_t cls)
{
    if (tls.depth++) {
        /* The runtime's driver call (or any nested one) joins the open
         * operation: its records may carry its own id. */
        if (tls.corr) {
            gpuprof__cupti_ring_note(cb->correlationId, tls.corr,
                                     (tls.cls & GP_CU_GRAPH) != 0);
            if (pcs_on && cls == GPUPROF_OP_KERNEL &&
                tls.cls == GPUPROF_OP_KERNEL)
                gpuprof__cupti_pcs_launch(cb->context, cb->symbolName,
                                          tls.corr);
            if ((tls.cls & GP_CU_HOSTDONE) && !tls.bytes)
                tls.bytes = alloc_bytes(dom, id, cb->functionParams);
        }
        return;
    }
    tls.corr = 0;
    if (!gp_load_relaxed(&cu_on))
        return;
    if (__builtin_expect(!gp_load_acquire(&cuda_hidden), 0))
        hide_runtime(); /* libcuda is loaded by now */
    uint32_t kind = cls & GP_CU_KIND_MASK;
    if (kind == GPUPROF_OP_COPY_OTHER)
        kind = copy_kind_arg(dom, id, cb->functionParams, kind);
    /* Frames: skip this function and on_callback; CUPTI's and the
     * runtime's beyond them are hidden. */
    uint64_t corr = gpuprof_be_op_begin(kind, 2);
    if (!corr)
        return;
    tls.corr = corr;
    tls.cls = cls;
    tls.bytes = 0;
    gpuprof__cupti_detect_enter(dom, id, cb->functionParams, corr);
    if (cls & GP_CU_HOSTDONE) {
        tls.t0 = gpuprof_be_now_ns();
        tls.bytes = alloc_bytes(dom, id, cb->functionParams);
    }
    gpuprof__cupti_ring_note(cb->correlationId, corr, (cls & GP_CU_GRAPH) != 0);
    gpuprof__cupti_deps(dom, id, cb, corr); /* traces: what it waits for */
    /* PC sampling is on in the context before the kernel runs. */
    if (pcs_on && cls == GPUPROF_OP_KERNEL)
        gpuprof__cupti_pcs_launch(cb->context, cb->symbolName, corr);
}

__attribute__((noinline)) static void api_exit(CUpti_CallbackDomain dom,
                                               CUpti_CallbackId id,
                                               const CUpti_CallbackData *cb)
{
    if (tls.depth == 0 || --tls.depth != 0 || !tls.corr)
        return;
    uint64_t corr = tls.corr;
    tls.corr = 0;
    if (tls.cls & GP_CU_TRACED) /* a query's answer, before it ends */
        gpuprof__cupti_deps_exit(dom, id, cb, corr);
    /* A call that failed launched nothing: no record will close its
     * operation, so close it here (the monitor's entry would stay); an
     * allocation that failed allocated nothing. */
    bool failed =
        cb->functionReturnValue && *(const int *)cb->functionReturnValue != 0;
    if (failed)
        tls.bytes = 0;
    if (!(tls.cls & GP_CU_HOSTDONE) && failed) {
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = corr;
        a.kind = tls.cls & GP_CU_KIND_MASK;
        a.flags = GPUPROF_ACTIVITY_NOTE;
        be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
        gp_fetch_add_relaxed(&api_failed, 1);
        gpuprof_be_op_end(corr);
        return;
    }
    /* PC sampling: kernel-serialized, the launch has run: its samples go
     * before the operation ends, from the thread that began it;
     * continuous, what CUPTI decoded so far (now and then). */
    if ((tls.cls & GP_CU_KIND_MASK) == GPUPROF_OP_KERNEL && pcs_on)
        gpuprof__cupti_pcs_collect(cb->context, false);
    if (tls.cls & GP_CU_HOSTDONE) {
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = corr;
        a.kind = tls.cls & GP_CU_KIND_MASK;
        a.flags = GPUPROF_ACTIVITY_HOST;
        a.start_ns = tls.t0;
        a.end_ns = gpuprof_be_now_ns();
        a.bytes = tls.bytes;
        be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
    }
    gpuprof_be_op_end(corr);
    gpuprof__cupti_devices_first_call(); /* detect.devices_unused */
}

static void resource(CUpti_CallbackId id, const CUpti_ResourceData *rd)
{
    switch (id) {
    case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
        const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
        if (m && m->pCubin && m->cubinSize)
            gpuprof__cupti_module_loaded(m->pCubin, m->cubinSize);
        break;
    }
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
        /* Its records go with it: collect them now. */
        if (pcs_on)
            gpuprof__cupti_pcs_context_gone(rd->context);
        if (activities_on)
            gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        break;
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
        if (pcs_on)
            gpuprof__cupti_pcs_context(rd->context);
        gpuprof__cupti_context_device(rd->context);
        hide_runtime();
        break;
    case CUPTI_CBID_RESOURCE_CU_INIT_FINISHED:
        hide_runtime();
        break;
    default:
        break;
    }
}

__attribute__((noinline)) static void CUPTIAPI on_callback(
    void *user, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void *data)
{
    (void)user;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API ||
        dom == CUPTI_CB_DOMAIN_DRIVER_API) {
        uint32_t cls =
            dom == CUPTI_CB_DOMAIN_RUNTIME_API
                ? (id < CUPTI_RUNTIME_TRACE_CBID_SIZE ? cls_rt[id] : 0)
                : (id < CUPTI_DRIVER_TRACE_CBID_SIZE ? cls_drv[id] : 0);
        if (!cls)
            return;
        const CUpti_CallbackData *cb = data;
        if (cb->callbackSite == CUPTI_API_ENTER)
            api_enter(dom, id, cb, cls);
        else
            api_exit(dom, id, cb);
        __asm__ volatile("" ::: "memory"); /* keep this frame */
    } else if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
        resource(id, data);
    }
}

/* ---- buffers ---------------------------------------------------------------
 */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t **pool_free;
static uint32_t pool_nfree, pool_nalloc, pool_max;
static size_t pool_size;
static uint64_t pool_refused; /* requests refused: the pool was spent */

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size,
                                   size_t *max_records)
{
    *max_records = 0;
    uint8_t *b = NULL;
    pthread_mutex_lock(&pool_mu);
    if (pool_nfree) {
        b = pool_free[--pool_nfree];
    } else if (pool_nalloc < pool_max) {
        b = aligned_alloc(8, pool_size);
        if (b)
            pool_nalloc++;
    }
    if (!b)
        pool_refused++;
    pthread_mutex_unlock(&pool_mu);
    /* No buffer: CUPTI drops records and counts them for the next one. */
    *buffer = b;
    *size = b ? pool_size : 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream,
                                   uint8_t *buffer, size_t size, size_t valid)
{
    (void)size;
    if (buffer && valid)
        gpuprof__cupti_decode(buffer, valid);
    size_t dropped = 0;
    if (gpuprof__cu.ActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
            CUPTI_SUCCESS &&
        dropped)
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, dropped);
    if (!buffer)
        return;
    pthread_mutex_lock(&pool_mu);
    pool_free[pool_nfree++] = buffer;
    pthread_mutex_unlock(&pool_mu);
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo,
                        uint64_t hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || x < lo || x > hi) {
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "cupti: %s=%s is not a number in "
                       "[%llu, %llu]; using %llu",
                       name, v, (unsigned long long)lo, (unsigned long long)hi,
                       (unsigned long long)def);
        return def;
    }
    return x;
}

/* ---- clock ------------------------------------------------------------------
 */
static uint64_t CUPTIAPI process_clock(void)
{
    return gpuprof_be_now_ns();
}

/* Without a timestamp callback: the offset from CUPTI's clock to ours,
 * from the tightest of a few bracketing reads. */
static int64_t clock_offset(void)
{
    int64_t best = 0;
    uint64_t width = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t a = gpuprof_be_now_ns(), c = 0;
        if (gpuprof__cu.GetTimestamp(&c) != CUPTI_SUCCESS)
            return 0;
        uint64_t b = gpuprof_be_now_ns();
        if (b - a < width) {
            width = b - a;
            best = (int64_t)(a + (b - a) / 2) - (int64_t)c;
        }
    }
    return best;
}

/* ---- the vtable ---------------------------------------------------------- */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_OVERHEAD,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
static bool kind_on[NKINDS];

/* CUPTI works through the driver, which it loads as libcuda.so.1. Where
 * there is none (the GPU-less nodes of a cluster whose programs all link
 * libgpuprof) libcupti is not loaded at all: its tens of megabytes, its
 * thread-local storage and its start-up cost stay out of the process. The
 * handle is kept: CUPTI loads the same library anyway. */
static bool driver_present(void)
{
    static void *drv;
    if (!drv)
        drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    return drv != NULL;
}

gpuprof_status gpuprof__cupti_subscribe(char *reason, size_t rsize)
{
    if (subscribed)
        return GPUPROF_OK;
    CUptiResult r = gpuprof__cu.Subscribe(&subscriber, on_callback, NULL);
    if (r != CUPTI_SUCCESS) {
        char e[96];
        gpuprof__cupti_err(r, e, sizeof(e));
        snprintf(reason, rsize, "cuptiSubscribe: %s: %s", e,
                 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                     ? "another CUPTI tool (nsys, ncu, a profiler) is attached"
                 : driver_present()
                     ? "the CUDA driver is there but no usable GPU"
                     : "no CUDA driver (libcuda.so.1 not found)");
        return GPUPROF_E_UNAVAILABLE;
    }
    subscribed = true;
    return GPUPROF_OK;
}

static gpuprof_status cu_probe(void *user, char *reason, size_t rsize)
{
    (void)user;
    if (!subscribed && !driver_present()) {
        snprintf(reason, rsize,
                 "no CUDA driver (libcuda.so.1 not found); libcupti not "
                 "loaded");
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!gpuprof__cupti_load(reason, rsize))
        return GPUPROF_E_UNAVAILABLE;
    return gpuprof__cupti_subscribe(reason, rsize);
}

/* Activity records off (every kind we turned on), all of them in. */
static void activities_off(void)
{
    if (activities_on)
        gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (size_t i = 0; i < NKINDS; i++)
        if (kind_on[i])
            gpuprof__cu.ActivityDisable(kinds[i]);
    if (activities_on)
        gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    memset(kind_on, 0, sizeof(kind_on));
    activities_on = false;
}

/* The subscription goes: another tool (or a later init) can attach. */
static void unsubscribe(void)
{
    if (subscribed) {
        gpuprof__cu.Unsubscribe(subscriber);
        subscribed = false;
    }
}

static gpuprof_status enable_activities(void)
{
    char e[96];
    CUptiResult r =
        gpuprof__cu.ActivityRegisterCallbacks(buf_requested, buf_completed);
    if (r != CUPTI_SUCCESS) {
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "cupti: cuptiActivityRegisterCallbacks:"
                       " %s",
                       gpuprof__cupti_err(r, e, sizeof(e)));
        return GPUPROF_E_UNAVAILABLE;
    }
    for (size_t i = 0; i < NKINDS; i++) {
        r = gpuprof__cu.ActivityEnable(kinds[i]);
        if (r != CUPTI_SUCCESS &&
            kinds[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            r = gpuprof__cu.ActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL);
        kind_on[i] = r == CUPTI_SUCCESS;
        if (!kind_on[i])
            gpuprof_be_log(i == 0 ? GPUPROF_LOG_WARN : GPUPROF_LOG_DEBUG,
                           "cupti: activity kind %d not enabled: %s",
                           (int)kinds[i], gpuprof__cupti_err(r, e, sizeof(e)));
    }
    return kind_on[0] ? GPUPROF_OK : GPUPROF_E_UNAVAILABLE;
}

static gpuprof_status init_steps(void)
{
    unsigned n = classify_all(true);
    if (!n) {
        gpuprof_be_log(GPUPROF_LOG_WARN, "cupti: no API callback could be "
                                         "enabled");
        return GPUPROF_E_UNAVAILABLE;
    }
    gpuprof__cu.EnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    hide_runtime();
    if (gpuprof__cu.RegisterTimestampCallback &&
        gpuprof__cu.RegisterTimestampCallback(process_clock) == CUPTI_SUCCESS)
        gpuprof__cupti_set_clock_offset(0);
    else
        gpuprof__cupti_set_clock_offset(clock_offset());
    /* The pool outlives a finalize (CUPTI may still hold buffers): a
     * later init keeps it and its sizes. */
    if (!pool_free) {
        pool_size =
            (size_t)env_u64("GPUPROF_CUPTI_BUFFER_KB", 1024, 16, 1 << 20) << 10;
        pool_max = (uint32_t)env_u64("GPUPROF_CUPTI_BUFFERS", 32, 2, 4096);
        pool_free = calloc(pool_max, sizeof(*pool_free));
        if (!pool_free)
            return GPUPROF_E_NOMEM;
    }
    gpuprof_status st = enable_activities();
    if (st != GPUPROF_OK)
        return st;
    if (gpuprof__cu.EnableAllSyncRecords)
        gpuprof__cu.EnableAllSyncRecords(
            0); /* no records of unfinished queries */
    activities_on = true;
    pcs_on = gpuprof__cupti_pcs_wanted();
    gpuprof_be_log(GPUPROF_LOG_DEBUG,
                   "cupti: %u API callbacks, buffers %zu "
                   "KiB x %u",
                   n, pool_size >> 10, pool_max);
    return GPUPROF_OK;
}

/* A failed init leaves nothing behind: no activity kind on, no
 * subscription (it would lock other CUPTI tools out). */
static gpuprof_status cu_init(void *user)
{
    (void)user;
    gpuprof_status st = init_steps();
    if (st != GPUPROF_OK) {
        activities_off();
        unsubscribe();
    }
    return st;
}

static gpuprof_status cu_start(void *user)
{
    (void)user;
    gp_store_release(&cu_on, 1);
    return GPUPROF_OK;
}

static gpuprof_status cu_stop(void *user)
{
    (void)user;
    gp_store_release(&cu_on, 0);
    return GPUPROF_OK;
}

static gpuprof_status cu_flush(void *user)
{
    (void)user;
    /* Serialized PC samples name their launch: they go first. Continuous
     * ones are given by function name: the records go first (a graph's
     * kernels are known by theirs), and the launches held for samples
     * end after them. */
    bool cont = pcs_on && gpuprof__cupti_pcs_mode() == GP_PCS_CONTINUOUS;
    if (activities_on && cont)
        gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (pcs_on)
        gpuprof__cupti_pcs_collect(NULL, true);
    if (activities_on)
        gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (cont)
        gpuprof__cupti_pcs_release(true);
    gpuprof__cupti_devices_describe_used(); /* contexts made before init */
    return GPUPROF_OK;
}

static void cu_fini(void *user)
{
    (void)user;
    gp_store_release(&cu_on, 0);
    if (activities_on && pcs_on &&
        gpuprof__cupti_pcs_mode() == GP_PCS_CONTINUOUS)
        gpuprof__cu.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (pcs_on)
        gpuprof__cupti_pcs_fini();
    activities_off();
    if (pcs_on)
        gpuprof__cupti_pcs_done();
    /* Every record is in: graph launches end here, and the devices that
     * ran nothing are known. */
    gpuprof__cupti_graphs_close();
    gpuprof__cupti_devices_report(-1);
    gpuprof__cupti_devices_describe_used();
    unsubscribe();
    pthread_mutex_lock(&pool_mu);
    if (pool_refused)
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "cupti: the record buffer pool (%u x "
                       "%zu KiB) was spent %llu times: records were dropped "
                       "(GPUPROF_CUPTI_BUFFERS, GPUPROF_CUPTI_BUFFER_KB)",
                       pool_max, pool_size >> 10,
                       (unsigned long long)pool_refused);
    pthread_mutex_unlock(&pool_mu);
    /* The pool stays: CUPTI may still hold buffers it has not returned. */
}

void gpuprof__backend_cupti_register(void);
void gpuprof__backend_cupti_register(void)
{
    if (registered)
        return;
    registered = true;
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "cupti";
    b.caps = GPUPROF_BACKEND_CAP_ASYNC | GPUPROF_BACKEND_CAP_TRACE;
    b.probe = cu_probe;
    b.init = cu_init;
    b.start = cu_start;
    b.stop = cu_stop;
    b.flush = cu_flush;
    b.fini = cu_fini;
    gpuprof_backend_register(&b, 0);
}

/* For the offline tests: the classification without a subscriber. */
unsigned gpuprof__cupti_classify_all(void);
unsigned gpuprof__cupti_classify_all(void)
{
    return classify_all(false);
}

uint32_t gpuprof__cupti_class_of(int driver, uint32_t id);
uint32_t gpuprof__cupti_class_of(int driver, uint32_t id)
{
    if (driver)
        return id < CUPTI_DRIVER_TRACE_CBID_SIZE ? cls_drv[id] : 0;
    return id < CUPTI_RUNTIME_TRACE_CBID_SIZE ? cls_rt[id] : 0;
}

/* For the offline tests: the hooks as CUPTI would call them, and the
 * switch start/stop turn. */
void gpuprof__cupti_test_callback(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                  const void *data);
void gpuprof__cupti_test_callback(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                  const void *data)
{
    on_callback(NULL, dom, id, data);
    __asm__ volatile("" ::: "memory"); /* keep this frame */
}

void gpuprof__cupti_test_on(int on);
void gpuprof__cupti_test_on(int on)
{
    gp_store_release(&cu_on, on);
}

uint64_t gpuprof__cupti_api_failed(void);
uint64_t gpuprof__cupti_api_failed(void)
{
    return gp_load_relaxed(&api_failed);
}

/* For the offline tests: init as if the probe had subscribed (with
 * whatever entry points gpuprof__cu holds), and whether a subscription is
 * left. */
gpuprof_status gpuprof__cupti_test_init(void);
gpuprof_status gpuprof__cupti_test_init(void)
{
    subscribed = true;
    return cu_init(NULL);
}

int gpuprof__cupti_test_subscribed(void);
int gpuprof__cupti_test_subscribed(void)
{
    return subscribed;
}
