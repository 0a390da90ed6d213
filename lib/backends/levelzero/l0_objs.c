/*
 * l0_objs.c - the Level Zero objects the backend keeps track of: devices
 * (timer frequency, kernel timestamp width, the host clock of their global
 * timestamps), engines (command queues and immediate lists: device and
 * stream), regular lists (context and templates), contexts (our
 * kernel-timestamp event pools), modules (their native binary, saved once
 * per content), kernels (name and binary), fences (their queue), and the
 * program's events (which operation signals them, for traces).
 *
 * Everything here is under gpuprof__l0_mu; tables are open-addressing hash
 * tables on runtime handles. Objects created before the tracer existed are
 * unknown: their calls pass through unmeasured.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/kit/ptrmap.h"
#include "backends/levelzero/l0.h"

pthread_mutex_t gpuprof__l0_mu = PTHREAD_MUTEX_INITIALIZER;
#define MU gpuprof__l0_mu

static gp_ptrmap devices, engines, lists, contexts, modules, kernels, fences, evcorr;

/* ---- devices ---------------------------------------------------------- */
static uint32_t ndevices;

static const clockid_t host_clocks[] = {CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC,
                                        CLOCK_REALTIME, CLOCK_BOOTTIME};

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What the device can hold, for the profile (gpuprof_be_device_describe):
 * a subslice (Xe-core) holds a work-group's shared local memory as an SM
 * holds a CUDA block's, so it stands for the SM. */
static void dev_limits(const l0_dev *v, const ze_device_properties_t *p)
{
    gpuprof_device_info d = GPUPROF_DEVICE_INFO_INIT;
    d.api = "levelzero";
    d.device = v->index;
    d.name = p->name[0] ? p->name : NULL;
    d.sm_count = p->numSlices * p->numSubslicesPerSlice;
    d.warp_size = p->physicalEUSimdWidth;
    d.max_threads_per_sm =
        p->numEUsPerSubslice * p->numThreadsPerEU * p->physicalEUSimdWidth;
    ze_device_compute_properties_t c = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    if (Z.DeviceGetComputeProperties &&
        L0_CALL(Z.DeviceGetComputeProperties(v->h, &c)) == ZE_RESULT_SUCCESS) {
        d.max_threads_per_block = c.maxTotalGroupSize;
        d.shared_bytes_per_block = c.maxSharedLocalMemory;
    }
    gpuprof_be_device_describe(&d);
}

/* The timer (ticks per second, kernel timestamp bits) and which host clock
 * zeDeviceGetGlobalTimestamps reads: the one whose readings bracket its
 * answer (Intel's driver: CLOCK_MONOTONIC_RAW). */
static void dev_describe(l0_dev *v)
{
    ze_device_properties_t p = {.stype =
                                    ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    v->hz = 0;
    if (L0_CALL(Z.DeviceGetProperties(v->h, &p)) == ZE_RESULT_SUCCESS)
        v->hz = p.timerResolution; /* 1.2: cycles per second */
    if (!v->hz) {
        ze_device_properties_t q = {.stype =
                                        ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        if (L0_CALL(Z.DeviceGetProperties(v->h, &q)) == ZE_RESULT_SUCCESS &&
            q.timerResolution) /* nanoseconds per tick */
            v->hz = 1000000000u / q.timerResolution;
        p = q;
    }
    if (!v->hz)
        v->hz = 1000000000u;
    dev_limits(v, &p);
    uint32_t bits = p.kernelTimestampValidBits;
    v->kmask = bits == 0 || bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
    uint64_t before[4], after[4], h = 0, d = 0;
    for (int i = 0; i < 4; i++)
        before[i] = clock_ns(host_clocks[i]);
    ze_result_t r = L0_CALL(Z.DeviceGetGlobalTimestamps(v->h, &h, &d));
    for (int i = 3; i >= 0; i--)
        after[i] = clock_ns(host_clocks[i]);
    v->clock = -1;
    for (int i = 0; r == ZE_RESULT_SUCCESS && i < 4 && v->clock < 0; i++)
        if (h >= before[i] && h <= after[i])
            v->clock = i;
    gpuprof_be_log(GPUPROF_LOG_DEBUG,
                   "levelzero: device %u: timer %llu Hz, kernel timestamps "
                   "%u bits, host clock %d",
                   v->index, (unsigned long long)v->hz, bits, v->clock);
}

l0_dev *gpuprof__l0_dev(ze_device_handle_t h)
{
    l0_dev *v = gp_ptrmap_get(&devices, h);
    if (v || !h)
        return v;
    if (!(v = calloc(1, sizeof(*v))))
        return NULL;
    v->h = h;
    v->index = ndevices++;
    dev_describe(v);
    if (!gp_ptrmap_put(&devices, h, v)) {
        free(v);
        return NULL;
    }
    return v;
}

uint32_t gpuprof__l0_devices_unused(const ze_device_handle_t *present,
                                    uint32_t n)
{
    uint32_t unused = 0;
    pthread_mutex_lock(&MU);
    for (uint32_t i = 0; i < n; i++) {
        const l0_dev *v = gp_ptrmap_get(&devices, present[i]);
        unused += !v || !v->used;
    }
    pthread_mutex_unlock(&MU);
    return unused;
}

/* ---- engines: command queues and immediate lists ---------------------- */
/* Each thread keeps its last lookup (hit or miss), valid while the
 * engines and lists have not changed since (a destroyed object's address
 * may come back as another). */
static _Atomic uint64_t objs_gen = 1;
static __thread struct {
    void *h;
    const l0_engine *e;
    uint64_t gen;
} last_engine __attribute__((tls_model("initial-exec")));

static void objs_changed(void)
{
    atomic_fetch_add_explicit(&objs_gen, 1, memory_order_release);
}

void gpuprof__l0_engine_new(void *handle, ze_device_handle_t d,
                            const ze_command_queue_desc_t *desc, bool imm,
                            ze_context_handle_t ctx)
{
    (void)imm;
    l0_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return;
    pthread_mutex_lock(&MU);
    e->dev = gpuprof__l0_dev(d);
    if (e->dev)
        e->dev->used = true;
    e->ctx = ctx;
    e->stream = desc ? (desc->ordinal << 8) | (desc->index & 0xffu) : 0;
    e->sync = desc && desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
    if (!e->dev || !gp_ptrmap_put(&engines, handle, e))
        free(e);
    objs_changed(); /* a miss cached for this address is stale */
    pthread_mutex_unlock(&MU);
}

const l0_engine *gpuprof__l0_engine(void *handle)
{
    uint64_t g = atomic_load_explicit(&objs_gen, memory_order_acquire);
    if (handle && last_engine.h == handle && last_engine.gen == g)
        return last_engine.e;
    pthread_mutex_lock(&MU);
    const l0_engine *e = gp_ptrmap_get(&engines, handle);
    pthread_mutex_unlock(&MU);
    last_engine.h = handle;
    last_engine.e = e;
    last_engine.gen = g;
    return e; /* freed only when the program destroys the object */
}

void gpuprof__l0_engine_forget(void *handle)
{
    pthread_mutex_lock(&MU);
    free(gp_ptrmap_del(&engines, handle));
    objs_changed();
    pthread_mutex_unlock(&MU);
}

/* ---- regular lists ---------------------------------------------------- */
typedef struct l0_list {
    ze_context_handle_t ctx;
    l0_tmpl *t;
    uint32_t n, cap;
} l0_list;

void gpuprof__l0_list_new(ze_command_list_handle_t l, ze_context_handle_t c,
                          ze_device_handle_t d)
{
    l0_list *v = calloc(1, sizeof(*v));
    if (!v)
        return;
    v->ctx = c;
    pthread_mutex_lock(&MU);
    l0_dev *dv = gpuprof__l0_dev(d);
    if (dv)
        dv->used = true;
    if (!gp_ptrmap_put(&lists, l, v))
        free(v);
    pthread_mutex_unlock(&MU);
}

bool gpuprof__l0_is_regular(ze_command_list_handle_t l)
{
    pthread_mutex_lock(&MU);
    bool r = gp_ptrmap_get(&lists, l) != NULL;
    pthread_mutex_unlock(&MU);
    return r;
}

ze_context_handle_t gpuprof__l0_list_ctx(ze_command_list_handle_t l)
{
    pthread_mutex_lock(&MU);
    const l0_list *v = gp_ptrmap_get(&lists, l);
    const l0_engine *e = v ? NULL : gp_ptrmap_get(&engines, l);
    ze_context_handle_t c = v ? v->ctx : e ? e->ctx : NULL;
    pthread_mutex_unlock(&MU);
    return c;
}

void gpuprof__l0_list_add(ze_command_list_handle_t l, const l0_tmpl *t)
{
    pthread_mutex_lock(&MU);
    l0_list *v = gp_ptrmap_get(&lists, l);
    bool ok = v != NULL;
    if (ok && v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 16;
        l0_tmpl *n = realloc(v->t, cap * sizeof(*n));
        ok = n != NULL;
        if (ok) {
            v->t = n;
            v->cap = cap;
        }
    }
    if (ok)
        v->t[v->n++] = *t;
    pthread_mutex_unlock(&MU);
    if (!ok) {
        if (t->ours)
            gpuprof__l0_ev_put(t->ours);
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
    }
}

/* The templates of `l` (under MU), for an execute. */
const l0_tmpl *gpuprof__l0_list_tmpl(ze_command_list_handle_t l, uint32_t *n)
{
    const l0_list *v = gp_ptrmap_get(&lists, l);
    *n = v ? v->n : 0;
    return v ? v->t : NULL;
}

void gpuprof__l0_list_reset(ze_command_list_handle_t l, bool destroy)
{
    pthread_mutex_lock(&MU);
    l0_list *v = destroy ? gp_ptrmap_del(&lists, l) : gp_ptrmap_get(&lists, l);
    l0_tmpl *t = v ? v->t : NULL;
    uint32_t n = v ? v->n : 0;
    if (v) {
        v->t = NULL;
        v->n = v->cap = 0;
    }
    pthread_mutex_unlock(&MU);
    for (uint32_t i = 0; i < n; i++)
        if (t[i].ours)
            gpuprof__l0_ev_put(t[i].ours);
    free(t);
    if (destroy) {
        gpuprof__l0_harv_list_gone(l);
        free(v);
    }
}

/* ---- our kernel-timestamp events, per context ------------------------- */
#define POOL_EVENTS 256u
#define MAX_POOLS 64
struct l0_ctx {
    ze_event_pool_handle_t pool[MAX_POOLS];
    l0_ev *evs[MAX_POOLS];
    uint32_t npools;
    l0_ev *free;
};

/* A new pool of POOL_EVENTS host-visible timestamp events (outside MU). */
static bool pool_add(ze_context_handle_t c, l0_ctx *x)
{
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                               ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                   ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
                               POOL_EVENTS};
    ze_event_pool_handle_t p = NULL;
    if (x->npools == MAX_POOLS ||
        L0_CALL(Z.EventPoolCreate(c, &pd, 0, NULL, &p)) != ZE_RESULT_SUCCESS)
        return false;
    l0_ev *ev = calloc(POOL_EVENTS, sizeof(*ev));
    uint32_t made = 0;
    for (uint32_t i = 0; ev && i < POOL_EVENTS; i++) {
        ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, i,
                              ZE_EVENT_SCOPE_FLAG_HOST,
                              ZE_EVENT_SCOPE_FLAG_HOST};
        if (L0_CALL(Z.EventCreate(p, &ed, &ev[i].h)) != ZE_RESULT_SUCCESS)
            break;
        made++;
    }
    if (!made) {
        free(ev);
        L0_CALL(Z.EventPoolDestroy(p));
        return false;
    }
    pthread_mutex_lock(&MU);
    x->pool[x->npools] = p;
    x->evs[x->npools++] = ev;
    for (uint32_t i = 0; i < made; i++) {
        ev[i].ctx = x;
        ev[i].next = x->free;
        x->free = &ev[i];
    }
    pthread_mutex_unlock(&MU);
    return true;
}

l0_ev *gpuprof__l0_ev_get(ze_context_handle_t c)
{
    if (!c)
        return NULL;
    for (int tries = 0; tries < 2; tries++) {
        pthread_mutex_lock(&MU);
        l0_ctx *x = gp_ptrmap_get(&contexts, c);
        if (!x && (x = calloc(1, sizeof(*x))) && !gp_ptrmap_put(&contexts, c, x)) {
            free(x);
            x = NULL;
        }
        l0_ev *e = x ? x->free : NULL;
        if (e) {
            x->free = e->next;
            e->next = NULL;
            e->refs = 1;
        }
        pthread_mutex_unlock(&MU);
        if (e || !x || !pool_add(c, x))
            return e;
    }
    return NULL;
}

/* An owner of our event `e` lets go; the last one resets it for reuse. */
void gpuprof__l0_ev_put(l0_ev *e)
{
    pthread_mutex_lock(&MU);
    bool last = e->refs && --e->refs == 0;
    ze_event_handle_t h = last && e->ctx ? e->h : NULL;
    pthread_mutex_unlock(&MU);
    if (!h)
        return;
    L0_CALL(Z.EventHostReset(h));
    pthread_mutex_lock(&MU);
    if (e->ctx && !e->refs) {
        e->inst = NULL;
        e->next = e->ctx->free;
        e->ctx->free = e;
    }
    pthread_mutex_unlock(&MU);
}

/* The same with MU held (the reset is then made under it). */
void gpuprof__l0_ev_put_locked(l0_ev *e)
{
    if (!e->refs || --e->refs || !e->ctx)
        return;
    L0_CALL(Z.EventHostReset(e->h));
    e->inst = NULL;
    e->next = e->ctx->free;
    e->ctx->free = e;
}

void gpuprof__l0_ctx_forget(ze_context_handle_t c)
{
    gpuprof__l0_harv_ctx_gone(c); /* its command lists, memory first */
    pthread_mutex_lock(&MU);
    l0_ctx *x = gp_ptrmap_del(&contexts, c);
    ze_event_handle_t *h =
        x ? calloc(x->npools * POOL_EVENTS, sizeof(*h)) : NULL;
    uint32_t nh = 0;
    for (uint32_t p = 0; x && p < x->npools; p++)
        for (uint32_t i = 0; i < POOL_EVENTS; i++) {
            l0_ev *e = &x->evs[p][i];
            if (h && e->h)
                h[nh++] = e->h;
            e->ctx = NULL; /* instances still holding it read nothing */
        }
    pthread_mutex_unlock(&MU);
    if (!x)
        return;
    for (uint32_t i = 0; i < nh; i++)
        L0_CALL(Z.EventDestroy(h[i]));
    for (uint32_t p = 0; p < x->npools; p++)
        L0_CALL(Z.EventPoolDestroy(x->pool[p]));
    free(h);
    free(x); /* x->evs stay: instances may still point into them */
}

bool gpuprof__l0_pool_flags(ze_event_pool_flags_t *flags)
{
    /* Bit 3 (kernel-mapped timestamps, Level Zero 1.6) excludes ours. */
    if (*flags & 0x8u)
        return false;
    ze_event_pool_flags_t want =
        ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
    if ((*flags & want) == want)
        return false;
    *flags |= want;
    return true;
}

/* ---- modules and kernels ---------------------------------------------- */
typedef struct l0_kern {
    const char *name;
    uint32_t binary;
    uint64_t group; /* work-items per group (zeKernelSetGroupSize) */
} l0_kern;

static char **names;
static uint32_t nnames, names_cap;

static const char *intern(const char *s)
{
    for (uint32_t i = 0; i < nnames; i++)
        if (!strcmp(names[i], s))
            return names[i];
    if (nnames == names_cap) {
        uint32_t cap = names_cap ? names_cap * 2 : 32;
        char **n = realloc(names, cap * sizeof(*n));
        if (!n)
            return NULL;
        names = n;
        names_cap = cap;
    }
    char *d = strdup(s);
    if (d)
        names[nnames++] = d;
    return d;
}

/* The module's native binary, saved once per content (outside MU: the
 * driver call and the file write are slow, and the program is in
 * zeModuleCreate anyway). */
void gpuprof__l0_module_new(ze_module_handle_t m)
{
    if (!gpuprof_be_gpu_binaries_wanted())
        return;
    gpuprof_be_self_begin();
    size_t size = 0;
    uint8_t *buf = NULL;
    uint32_t id = GPUPROF_NO_BINARY;
    if (L0_CALL(Z.ModuleGetNativeBinary(m, &size, NULL)) == ZE_RESULT_SUCCESS &&
        size && (buf = malloc(size)) &&
        L0_CALL(Z.ModuleGetNativeBinary(m, &size, buf)) == ZE_RESULT_SUCCESS)
        id = gpuprof_be_gpu_binary(buf, size, "zebin");
    free(buf);
    gpuprof_be_self_end();
    pthread_mutex_lock(&MU);
    gp_ptrmap_put(&modules, m, (void *)(uintptr_t)((uint64_t)id + 1));
    pthread_mutex_unlock(&MU);
}

void gpuprof__l0_module_forget(ze_module_handle_t m)
{
    pthread_mutex_lock(&MU);
    gp_ptrmap_del(&modules, m);
    pthread_mutex_unlock(&MU);
}

void gpuprof__l0_kernel_new(ze_kernel_handle_t k, ze_module_handle_t m,
                            const char *name)
{
    l0_kern *v = calloc(1, sizeof(*v));
    if (!v)
        return;
    pthread_mutex_lock(&MU);
    uintptr_t b = (uintptr_t)gp_ptrmap_get(&modules, m);
    v->binary = b ? (uint32_t)(b - 1) : GPUPROF_NO_BINARY;
    v->name = intern(name && *name ? name : "(unnamed kernel)");
    if (!v->name || !gp_ptrmap_put(&kernels, k, v))
        free(v);
    pthread_mutex_unlock(&MU);
}

void gpuprof__l0_kernel_forget(ze_kernel_handle_t k)
{
    pthread_mutex_lock(&MU);
    free(gp_ptrmap_del(&kernels, k));
    pthread_mutex_unlock(&MU);
}

void gpuprof__l0_kernel_group(ze_kernel_handle_t k, uint64_t group)
{
    pthread_mutex_lock(&MU);
    l0_kern *v = gp_ptrmap_get(&kernels, k);
    if (v)
        v->group = group;
    pthread_mutex_unlock(&MU);
}

const char *gpuprof__l0_kernel(ze_kernel_handle_t k, uint32_t *binary,
                               uint64_t *group)
{
    pthread_mutex_lock(&MU);
    const l0_kern *v = gp_ptrmap_get(&kernels, k);
    const char *n = v ? v->name : "(unknown kernel)";
    *binary = v ? v->binary : GPUPROF_NO_BINARY;
    *group = v ? v->group : 0;
    pthread_mutex_unlock(&MU);
    return n;
}

/* ---- copies ------------------------------------------------------------ */
/* Host memory: malloc'd (UNKNOWN) or zeMemAllocHost; device: device or
 * shared USM (shared memory lives on the device while kernels use it). */
static bool on_device(ze_context_handle_t c, const void *p)
{
    ze_memory_allocation_properties_t a = {
        .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    if (!c ||
        L0_CALL(Z.MemGetAllocProperties(c, p, &a, NULL)) != ZE_RESULT_SUCCESS)
        return false;
    return a.type == ZE_MEMORY_TYPE_DEVICE || a.type == ZE_MEMORY_TYPE_SHARED;
}

uint32_t gpuprof__l0_copy_kind(ze_context_handle_t c, const void *dst,
                               const void *src)
{
    bool d = on_device(c, dst), s = on_device(c, src);
    return s && d ? GPUPROF_OP_COPY_D2D
           : d    ? GPUPROF_OP_COPY_H2D
           : s    ? GPUPROF_OP_COPY_D2H
                  : GPUPROF_OP_COPY_OTHER;
}

/* ---- fences and the program's events ---------------------------------- */
void gpuprof__l0_fence_new(ze_fence_handle_t f, ze_command_queue_handle_t q)
{
    pthread_mutex_lock(&MU);
    gp_ptrmap_put(&fences, f, q);
    pthread_mutex_unlock(&MU);
}

ze_command_queue_handle_t gpuprof__l0_fence_queue(ze_fence_handle_t f)
{
    pthread_mutex_lock(&MU);
    ze_command_queue_handle_t q = gp_ptrmap_get(&fences, f);
    pthread_mutex_unlock(&MU);
    return q;
}

void gpuprof__l0_fence_forget(ze_fence_handle_t f)
{
    pthread_mutex_lock(&MU);
    gp_ptrmap_del(&fences, f);
    pthread_mutex_unlock(&MU);
}

/* Under a lock of their own: executes note them while holding MU. */
static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;

void gpuprof__l0_event_note(ze_event_handle_t ev, uint64_t corr)
{
    if (!ev || !corr || !gpuprof_be_tracing())
        return;
    pthread_mutex_lock(&ev_mu);
    gp_ptrmap_put(&evcorr, ev, (void *)(uintptr_t)corr);
    pthread_mutex_unlock(&ev_mu);
}

uint64_t gpuprof__l0_event_corr(ze_event_handle_t ev)
{
    pthread_mutex_lock(&ev_mu);
    uint64_t c = (uint64_t)(uintptr_t)gp_ptrmap_get(&evcorr, ev);
    pthread_mutex_unlock(&ev_mu);
    return c;
}
