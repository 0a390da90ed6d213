/*
 * opencl.c - the OpenCL backend: registration, the ICD layer's attach,
 * device clocks, commands and their completion, the waits and detector
 * facts the core's blame and detectors need (seed 002 §IV; core blame.c,
 * idle.c, detect.c). Hooks are in cl_hooks.c; the design is in cl.h and
 * doc/BACKENDS.md.
 *
 * libOpenCL is never linked: every call goes through the target dispatch
 * table the loader gives the layer. gpuprof_init (probe) points
 * OPENCL_LAYERS at libgpuprof-cl-layer.so beside libgpuprof.so before the
 * program's first OpenCL call; the loader then loads it, also for a program
 * that dlopens libOpenCL.
 */
#define _GNU_SOURCE /* dladdr, dl_iterate_phdr */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/kit/ptrmap.h"
#include "backends/opencl/cl.h"

struct _cl_icd_dispatch gpuprof__cl_T;
struct _cl_icd_dispatch gpuprof__cl_H;
_Atomic int gpuprof__cl_on;
static _Atomic int attached;
static bool registered, initialized;
static char layer_path[4096];

/* Everything below is under cl_mu unless it says otherwise. */
static pthread_mutex_t cl_mu = PTHREAD_MUTEX_INITIALIZER;

static gp_ptrmap queues, kernels, mems, devices, progs;

/* ---- kernel names (interned for the process) -------------------------- */
typedef struct kname {
    char *name;
} kname;
static kname *names;
static uint32_t nnames, names_cap;

static uint32_t name_intern(const char *s)
{
    for (uint32_t i = 0; i < nnames; i++)
        if (strcmp(names[i].name, s) == 0)
            return i;
    if (nnames == names_cap) {
        uint32_t cap = names_cap ? names_cap * 2 : 32;
        kname *n = realloc(names, cap * sizeof(*n));
        if (!n)
            return UINT32_MAX;
        names = n;
        names_cap = cap;
    }
    char *d = strdup(s);
    if (!d)
        return UINT32_MAX;
    memset(&names[nnames], 0, sizeof(names[0]));
    names[nnames].name = d;
    return nnames++;
}

/* ---- devices and their clocks ----------------------------------------- */
static uint32_t ndevices_seen;
static uint32_t nqueues_made;

static const clockid_t host_clocks[] = {CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC,
                                        CLOCK_REALTIME, CLOCK_BOOTTIME};
#define NHOST_CLOCKS 4

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static cl_dev *dev_get(cl_device_id d)
{
    cl_dev *v = gp_ptrmap_get(&devices, d);
    if (v)
        return v;
    if (!(v = calloc(1, sizeof(*v))))
        return NULL;
    v->id = d;
    v->index = ndevices_seen++;
    gp_store_relaxed(&v->clock, -1);
    if (!gp_ptrmap_put(&devices, d, v)) {
        free(v);
        return NULL;
    }
    return v;
}

/* Which host clock does the device count? A marker on the new, empty queue
 * is timed by both: the host clock whose readings bracket the marker's END
 * is the device's (PoCL: CLOCK_MONOTONIC_RAW); if none does, a fixed
 * offset from the bracket (a device with its own epoch; error: the
 * marker's round trip). Runs once per device, outside cl_mu. */
static void calibrate(cl_dev *v, cl_command_queue q)
{
    uint64_t before[NHOST_CLOCKS], after[NHOST_CLOCKS];
    cl_event e = NULL;
    for (int i = 0; i < NHOST_CLOCKS; i++)
        before[i] = clock_ns(host_clocks[i]);
    cl_int rc = T.clEnqueueMarkerWithWaitList
                    ? T.clEnqueueMarkerWithWaitList(q, 0, NULL, &e)
                    : CL_INVALID_OPERATION;
    cl_ulong end = 0;
    if (rc == CL_SUCCESS && T.clWaitForEvents(1, &e) == CL_SUCCESS)
        rc = T.clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END,
                                       sizeof(end), &end, NULL);
    else
        rc = CL_INVALID_EVENT;
    for (int i = NHOST_CLOCKS - 1; i >= 0; i--)
        after[i] = clock_ns(host_clocks[i]);
    if (e)
        T.clReleaseEvent(e);
    int clock = -1;
    int64_t offset = 0;
    const uint64_t slack = 1000000; /* 1 ms */
    if (rc == CL_SUCCESS && end) {
        for (int i = 0; i < NHOST_CLOCKS && clock < 0; i++)
            if (end + slack >= before[i] && end <= after[i] + slack)
                clock = i;
        if (clock < 0)
            offset = (int64_t)after[1] - (int64_t)end;
    }
    gp_store_relaxed(&v->offset, offset);
    gp_store_relaxed(&v->clock, clock);
    static const char *const cname[] = {"CLOCK_MONOTONIC_RAW",
                                        "CLOCK_MONOTONIC", "CLOCK_REALTIME",
                                        "CLOCK_BOOTTIME"};
    if (clock >= 0)
        gpuprof_be_log(GPUPROF_LOG_DEBUG, "opencl: device %u counts %s",
                       v->index, cname[clock]);
    else
        gpuprof_be_log(GPUPROF_LOG_DEBUG, "opencl: device %u: offset %lld ns%s",
                       v->index, (long long)offset,
                       rc == CL_SUCCESS ? "" : " (no marker timestamp)");
}

/* Device timestamps -> process clock (CLOCK_MONOTONIC), for a batch of
 * commands: each host clock's distance from the process clock is sampled
 * once per batch (clocks drift apart by parts per million: a batch's
 * spread does not matter), not per timestamp. */
typedef struct clock_map {
    int64_t delta[NHOST_CLOCKS];
    unsigned have; /* bit i: delta[i] sampled */
} clock_map;

static uint64_t to_process(clock_map *m, const cl_dev *v, uint64_t t)
{
    int clock = v ? gp_load_relaxed(&v->clock) : -1;
    if (clock == 1)
        return t;
    if (clock < 0)
        return (uint64_t)((int64_t)t + (v ? gp_load_relaxed(&v->offset) : 0));
    if (!(m->have & (1u << clock))) {
        m->delta[clock] = (int64_t)clock_ns(CLOCK_MONOTONIC) -
                          (int64_t)clock_ns(host_clocks[clock]);
        m->have |= 1u << clock;
    }
    return (uint64_t)((int64_t)t + m->delta[clock]);
}

/* ---- objects ---------------------------------------------------------- */
/* Queues change rarely: each thread keeps its last lookup, valid while no
 * queue has been forgotten since (a released queue's address may come
 * back as another queue). */
static _Atomic uint64_t queues_forgotten;
static __thread struct {
    cl_command_queue q;
    cl_queue *v;
    uint64_t forgotten;
} last_queue __attribute__((tls_model("initial-exec")));

cl_queue *gpuprof__cl_queue(cl_command_queue q)
{
    uint64_t f = gp_load_acquire(&queues_forgotten);
    if (last_queue.q == q && last_queue.forgotten == f && q)
        return last_queue.v;
    pthread_mutex_lock(&cl_mu);
    cl_queue *v = gp_ptrmap_get(&queues, q);
    pthread_mutex_unlock(&cl_mu);
    if (v) {
        last_queue.q = q;
        last_queue.v = v;
        last_queue.forgotten = f;
    }
    return v;
}

/* What the device can hold, for the profile (gpuprof_be_device_describe):
 * compute units stand for SMs, the work-group limit and local memory for
 * a block's. Once per device, with its first queue, outside cl_mu. */
static void describe(const cl_dev *v)
{
    char name[256] = "";
    cl_uint units = 0;
    size_t group = 0;
    cl_ulong local = 0;
    if (!T.clGetDeviceInfo)
        return;
    if (T.clGetDeviceInfo(v->id, CL_DEVICE_NAME, sizeof(name), name, NULL) !=
        CL_SUCCESS)
        name[0] = '\0';
    name[sizeof(name) - 1] = '\0';
    T.clGetDeviceInfo(v->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units),
                      &units, NULL);
    T.clGetDeviceInfo(v->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(group),
                      &group, NULL);
    T.clGetDeviceInfo(v->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local,
                      NULL);
    gpuprof_device_info d = GPUPROF_DEVICE_INFO_INIT;
    d.api = "opencl";
    d.device = v->index;
    d.name = name[0] ? name : NULL;
    d.sm_count = units;
    d.max_threads_per_block = group <= UINT32_MAX ? (uint32_t)group : 0;
    d.shared_bytes_per_block = local;
    gpuprof_be_device_describe(&d);
}

void gpuprof__cl_queue_new(cl_command_queue q, cl_context ctx, cl_device_id d,
                     bool in_order, uint64_t corr)
{
    cl_queue *v = calloc(1, sizeof(*v));
    if (!v)
        return;
    pthread_mutex_lock(&cl_mu);
    v->q = q;
    v->ctx = ctx;
    v->dev = dev_get(d);
    v->id = nqueues_made++;
    if (v->dev)
        v->dev->used = true;
    bool cal = v->dev && !v->dev->calibrated;
    if (cal)
        v->dev->calibrated = true; /* claimed: one thread calibrates */
    if (!gp_ptrmap_put(&queues, q, v)) {
        free(v);
        v = NULL;
    }
    pthread_mutex_unlock(&cl_mu);
    if (v && cal) {
        calibrate(v->dev, q);
        describe(v->dev);
    }
    if (in_order)
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_INORDER_QUEUE, 1);
}

void gpuprof__cl_queue_forget(cl_command_queue q)
{
    pthread_mutex_lock(&cl_mu);
    free(gp_ptrmap_del(&queues, q));
    gp_fetch_add_relaxed(&queues_forgotten, 1);
    pthread_mutex_unlock(&cl_mu);
}

static cl_kern *kern_new_locked(cl_kernel k)
{
    char buf[256], *name = buf;
    size_t n = 0;
    cl_context ctx = NULL;
    if (T.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &n) != CL_SUCCESS)
        n = 0;
    if (n > sizeof(buf) && !(name = malloc(n)))
        n = 0;
    if (!n || T.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, name, NULL) !=
                  CL_SUCCESS)
        snprintf(name = buf, sizeof(buf), "(unnamed kernel)");
    T.clGetKernelInfo(k, CL_KERNEL_CONTEXT, sizeof(ctx), &ctx, NULL);
    cl_program prog = NULL;
    T.clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof(prog), &prog, NULL);
    cl_kern *v = calloc(1, sizeof(*v));
    uint32_t idx = name_intern(name);
    if (name != buf)
        free(name);
    if (!v || idx == UINT32_MAX || !gp_ptrmap_put(&kernels, k, v)) {
        free(v);
        return NULL;
    }
    v->k = k;
    v->ctx = ctx;
    const cl_bins *b = prog ? gp_ptrmap_get(&progs, prog) : NULL;
    if (b)
        v->bins = *b;
    v->name_idx = idx;
    v->name = names[idx].name;
    v->dirty = true;
    return v;
}

void gpuprof__cl_kern_new(cl_kernel k)
{
    pthread_mutex_lock(&cl_mu);
    if (!gp_ptrmap_get(&kernels, k))
        kern_new_locked(k);
    pthread_mutex_unlock(&cl_mu);
}

void gpuprof__cl_kern_forget(cl_kernel k)
{
    pthread_mutex_lock(&cl_mu);
    free(gp_ptrmap_del(&kernels, k));
    pthread_mutex_unlock(&cl_mu);
}

void gpuprof__cl_kern_set_arg(cl_kernel k, cl_uint i, size_t size,
                        const void *value, bool svm)
{
    if (i >= CL_MAX_ARGS)
        return;
    pthread_mutex_lock(&cl_mu);
    cl_kern *v = gp_ptrmap_get(&kernels, k);
    if (!v)
        v = kern_new_locked(k);
    if (v) {
        cl_mem m = NULL;
        if (!svm && size == sizeof(cl_mem) && value) {
            memcpy(&m, value, sizeof(m));
            if (!gp_ptrmap_get(&mems, m))
                m = NULL; /* not a buffer we know: a scalar */
        }
        v->arg[i] = m;
        if (svm)
            v->svm_args |= 1ull << i;
        else
            v->svm_args &= ~(1ull << i);
        v->dirty = true;
    }
    pthread_mutex_unlock(&cl_mu);
}

void gpuprof__cl_mem_new(cl_mem m)
{
    cl_memobj *v = calloc(1, sizeof(*v));
    if (!v)
        return;
    cl_mem parent = NULL;
    size_t off = 0, size = 0;
    void *host = NULL;
    cl_mem_flags flags = 0;
    T.clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent),
                         &parent, NULL);
    T.clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof(off), &off, NULL);
    T.clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof(size), &size, NULL);
    T.clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(flags), &flags, NULL);
    if (flags & CL_MEM_USE_HOST_PTR)
        T.clGetMemObjectInfo(m, CL_MEM_HOST_PTR, sizeof(host), &host, NULL);
    v->m = m;
    v->root = parent ? parent : m;
    v->off = parent ? off : 0;
    v->size = size;
    v->host = (uintptr_t)host;
    pthread_mutex_lock(&cl_mu);
    if (!gp_ptrmap_put(&mems, m, v))
        free(v);
    pthread_mutex_unlock(&cl_mu);
}

void gpuprof__cl_mem_forget(cl_mem m)
{
    pthread_mutex_lock(&cl_mu);
    free(gp_ptrmap_del(&mems, m));
    /* A kernel still naming it gets NULL at its next check. */
    for (uint32_t i = 0; i < kernels.cap; i++) {
        cl_kern *k = kernels.val[i];
        if (!k)
            continue;
        for (int a = 0; a < CL_MAX_ARGS; a++)
            if (k->arg[a] == m) {
                k->arg[a] = NULL;
                k->dirty = true;
            }
    }
    pthread_mutex_unlock(&cl_mu);
}

/* ---- detectors -------------------------------------------------------- */
/* Do two buffer arguments overlap? */
static bool overlap_mem(const cl_memobj *a, const cl_memobj *b)
{
    if (a->m == b->m)
        return true;
    if (a->root == b->root)
        return a->off < b->off + b->size && b->off < a->off + a->size;
    if (a->host && b->host)
        return a->host < b->host + b->size && b->host < a->host + a->size;
    return false;
}

/* At a launch, under one lock: the kernel's interned name (NULL when it
 * cannot be known), whether its buffer arguments are free of aliasing (at
 * least two, no SVM pointer, no overlap; checked again only after an
 * argument changed, which also marks its buffers as kernel arguments), and
 * whether its name has been launched in more than one context. */
const char *gpuprof__cl_kernel_launch(cl_kernel k, const cl_queue *q,
                                      uint32_t *binary, bool *not_aliased,
                                      bool *multi_ctx)
{
    *binary = GPUPROF_NO_BINARY;
    pthread_mutex_lock(&cl_mu);
    cl_kern *v = gp_ptrmap_get(&kernels, k);
    if (!v && !(v = kern_new_locked(k))) {
        pthread_mutex_unlock(&cl_mu);
        *not_aliased = *multi_ctx = false;
        return NULL;
    }
    for (uint32_t i = 0; i < v->bins.n; i++)
        if (q && q->dev && v->bins.dev[i] == q->dev->id)
            *binary = v->bins.id[i];
    if (v->dirty) {
        cl_memobj *m[CL_MAX_ARGS];
        int n = 0;
        for (int i = 0; i < CL_MAX_ARGS; i++)
            if (v->arg[i] && (m[n] = gp_ptrmap_get(&mems, v->arg[i])))
                m[n++]->kernel_arg = true;
        bool ok = n >= 2 && !v->svm_args;
        for (int i = 0; ok && i < n; i++)
            for (int j = i + 1; ok && j < n; j++)
                ok = !overlap_mem(m[i], m[j]);
        v->not_aliased = ok;
        v->dirty = false;
    }
    cl_context ctx = q && q->ctx ? q->ctx : v->ctx;
    *not_aliased = v->not_aliased;
    const char *name = v->name;
    pthread_mutex_unlock(&cl_mu);
    /* Contexts per kernel name: core detect.c. */
    *multi_ctx = gpuprof_be_detect_kernel_context(name, (uintptr_t)ctx);
    return name;
}

/* Data read back from a kernel's buffer: the host range goes to the core's
 * detector (core detect.c), which the next host-to-device write checks. */
void gpuprof__cl_note_readback(const void *ptr, size_t size, cl_mem src)
{
    if (!ptr || !size)
        return;
    pthread_mutex_lock(&cl_mu);
    cl_memobj *m = gp_ptrmap_get(&mems, src);
    bool arg = m && m->kernel_arg;
    pthread_mutex_unlock(&cl_mu);
    if (arg)
        gpuprof_be_detect_readback(ptr, size);
}

/* Contexts: which devices exist, which are used. The first context's
 * operation stays open until finalize, when it gets the count of devices
 * no context used. */
static bool devices_listed;
static uint32_t ndev_present;
static cl_device_id *present;
static uint64_t first_ctx_corr;

static void list_devices(void)
{
    cl_uint np = 0;
    if (T.clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || !np)
        return;
    cl_platform_id *p = calloc(np, sizeof(*p));
    if (!p || T.clGetPlatformIDs(np, p, NULL) != CL_SUCCESS) {
        free(p);
        return;
    }
    for (cl_uint i = 0; i < np; i++) {
        cl_uint nd = 0;
        if (T.clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) !=
                CL_SUCCESS || !nd)
            continue;
        cl_device_id *d = realloc(present, (ndev_present + nd) * sizeof(*d));
        if (!d)
            break;
        present = d;
        if (T.clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, nd,
                             present + ndev_present, NULL) == CL_SUCCESS)
            ndev_present += nd;
    }
    free(p);
}

bool gpuprof__cl_context_new(cl_context ctx, uint64_t corr)
{
    cl_uint nd = 0;
    cl_device_id d[64];
    if (T.clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof(nd), &nd,
                           NULL) != CL_SUCCESS)
        nd = 0;
    if (nd > 64)
        nd = 64;
    if (nd && T.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, nd * sizeof(d[0]), d,
                                 NULL) != CL_SUCCESS)
        nd = 0;
    pthread_mutex_lock(&cl_mu);
    bool list = !devices_listed;
    devices_listed = true;
    pthread_mutex_unlock(&cl_mu);
    if (list)
        list_devices(); /* outside cl_mu: it calls the runtime */
    pthread_mutex_lock(&cl_mu);
    for (cl_uint i = 0; i < nd; i++) {
        cl_dev *v = dev_get(d[i]);
        if (v)
            v->used = true;
    }
    bool first = !first_ctx_corr && corr;
    if (first)
        first_ctx_corr = corr;
    pthread_mutex_unlock(&cl_mu);
    return first;
}

/* At finalize: devices present that no context used, on the first
 * context's operation (which this closes). */
static void devices_unused_report(void)
{
    pthread_mutex_lock(&cl_mu);
    uint64_t corr = first_ctx_corr, unused = 0;
    for (uint32_t i = 0; i < ndev_present; i++) {
        cl_dev *v = gp_ptrmap_get(&devices, present[i]);
        if (!v || !v->used)
            unused++;
    }
    first_ctx_corr = 0;
    pthread_mutex_unlock(&cl_mu);
    if (!corr)
        return;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_OTHER;
    a.flags = GPUPROF_ACTIVITY_NOTE;
    uint32_t m = GPUPROF_METRIC_DET_DEVICES_UNUSED;
    be_submit(&a, GPUPROF_NO_BINARY, unused ? 1 : 0, &m, &unused);
}

void gpuprof__cl_build_done(cl_program p, cl_uint ndev, uint64_t corr)
{
    size_t src = 0, il = 0;
    if (T.clGetProgramInfo(p, CL_PROGRAM_SOURCE, 0, NULL, &src) != CL_SUCCESS)
        src = 0;
    if (T.clGetProgramInfo && T.clGetProgramInfo(p, CL_PROGRAM_IL, 0, NULL,
                                                 &il) != CL_SUCCESS)
        il = 0;
    if (!ndev && T.clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof(ndev),
                                    &ndev, NULL) != CL_SUCCESS)
        ndev = 0;
    /* Compiled now, from source or IL, for one device: AOT would do. */
    if ((src > 1 || il > 0) && ndev == 1)
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_JIT_SINGLE, 1);
}

/* ---- program binaries -------------------------------------------------- */
/* Reads the program's binaries for its devices and saves each (core
 * binary.c: once per content). Outside cl_mu: the runtime calls and the
 * file writes are slow, and only this program's first kernel waits. */
static bool read_binaries(cl_program p, cl_bins *b)
{
    cl_uint nd = 0;
    if (T.clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof(nd), &nd,
                           NULL) != CL_SUCCESS ||
        nd == 0 || nd > 1024)
        return false;
    cl_device_id *dev = calloc(nd, sizeof(*dev));
    size_t *size = calloc(nd, sizeof(*size));
    unsigned char **buf = calloc(nd, sizeof(*buf));
    bool ok = dev && size && buf &&
              T.clGetProgramInfo(p, CL_PROGRAM_DEVICES, nd * sizeof(*dev), dev,
                                 NULL) == CL_SUCCESS &&
              T.clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES,
                                 nd * sizeof(*size), size,
                                 NULL) == CL_SUCCESS;
    for (cl_uint i = 0; ok && i < nd; i++)
        buf[i] = size[i] ? malloc(size[i]) : NULL; /* NULL: skipped */
    ok = ok && T.clGetProgramInfo(p, CL_PROGRAM_BINARIES, nd * sizeof(*buf),
                                  buf, NULL) == CL_SUCCESS;
    b->n = 0;
    for (cl_uint i = 0; ok && i < nd && b->n < CL_MAX_BIN; i++) {
        b->dev[b->n] = dev[i];
        b->id[b->n++] = buf[i] ? gpuprof_be_gpu_binary(buf[i], size[i], "clbin")
                               : GPUPROF_NO_BINARY;
    }
    for (cl_uint i = 0; buf && i < nd; i++)
        free(buf[i]);
    free(buf);
    free(size);
    free(dev);
    return ok;
}

void gpuprof__cl_program_binaries(cl_program p)
{
    if (!gpuprof_be_gpu_binaries_wanted())
        return;
    pthread_mutex_lock(&cl_mu);
    bool have = gp_ptrmap_get(&progs, p) != NULL;
    pthread_mutex_unlock(&cl_mu);
    cl_bins *b = have ? NULL : calloc(1, sizeof(*b));
    /* The library's own work: PoCL compiles every kernel to hand out a
     * binary (core self.c: gpuprof.self_ns, no GPU_IDLE_CAUSE samples). */
    gpuprof_be_self_begin();
    bool ok = b && read_binaries(p, b);
    gpuprof_be_self_end();
    if (!ok) {
        free(b);
        return;
    }
    pthread_mutex_lock(&cl_mu);
    if (!gp_ptrmap_get(&progs, p) && gp_ptrmap_put(&progs, p, b))
        b = NULL;
    pthread_mutex_unlock(&cl_mu);
    free(b); /* another thread was first */
}

void gpuprof__cl_program_forget(cl_program p)
{
    pthread_mutex_lock(&cl_mu);
    free(gp_ptrmap_del(&progs, p));
    pthread_mutex_unlock(&cl_mu);
}

void gpuprof__cl_host_activity(uint64_t corr, uint32_t kind, uint64_t t0,
                               uint64_t t1, uint32_t flags, unsigned nx,
                               const uint32_t *xm, const uint64_t *xv)
{
    if (!corr)
        return;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = kind;
    a.flags = flags | GPUPROF_ACTIVITY_HOST;
    a.start_ns = t0;
    a.end_ns = t1 < t0 ? t0 : t1;
    be_submit(&a, GPUPROF_NO_BINARY, nx, xm, xv);
}

/* ---- commands, waits and blame ---------------------------------------- */
/* Under cl_mu: commands filed and not complete, oldest enqueue first (so
 * the oldest is the head), and commands complete but not yet submitted
 * (a wait may still blame them). Settling touches only the second list. */
static cl_cmd pending = {.next = &pending, .prev = &pending};
static cl_cmd finished = {.next = &finished, .prev = &finished};

static void unlink_cmd(cl_cmd *c)
{
    c->prev->next = c->next;
    c->next->prev = c->prev;
}

static void link_after(cl_cmd *at, cl_cmd *c)
{
    c->prev = at;
    c->next = at->next;
    at->next->prev = c;
    at->next = c;
}
static cl_cmd *_Atomic done_stack;
static _Atomic uint64_t cmds_filed, cmds_called; /* callbacks still due */
static _Atomic int settle_wanted;

/* Filed commands come from a pool (under cl_mu) refilled by settling: an
 * enqueue then allocates nothing of ours. */
#define CMD_POOL_MAX 4096
static cl_cmd *cmd_pool; /* linked through ->next */
static uint32_t cmd_pool_n;

void gpuprof__cl_cmd_init(cl_cmd *c, uint64_t corr, uint32_t kind,
                          const cl_queue *q)
{
    memset(c, 0, sizeof(*c));
    c->corr = corr;
    c->kind = kind;
    c->dev = q ? q->dev : NULL;
    c->device = q && q->dev ? q->dev->index : 0;
    c->stream = q ? q->id : 0;
    c->binary = GPUPROF_NO_BINARY;
    c->enq_ns = gpuprof_be_now_ns();
    c->status = 1;
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *arg)
{
    cl_cmd *c = arg;
    cl_ulong s = 0, e = 0;
    if (status == CL_COMPLETE &&
        T.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(s),
                                  &s, NULL) == CL_SUCCESS &&
        T.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(e), &e,
                                  NULL) == CL_SUCCESS &&
        e >= s) {
        /* No lock here (see cl.h). Device clock: settling converts. */
        c->start_ns = s;
        c->end_ns = e;
        c->status = 0;
    } else {
        c->status = status < 0 ? status : -1;
    }
    if (c->kind == GPUPROF_OP_KERNEL) {
        gpuprof_be_gpu_done(); /* GPU_IDLE_CAUSE: in flight no more (core) */
        gpuprof_be_helpers_busy(-1);
    }
    cl_cmd *h = atomic_load_explicit(&done_stack, memory_order_relaxed);
    do
        atomic_store_explicit(&c->done, h, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(
        &done_stack, &h, c, memory_order_release, memory_order_relaxed));
    gp_store_relaxed(&settle_wanted, 1);
    atomic_fetch_add_explicit(&cmds_called, 1, memory_order_release);
}

cl_cmd *gpuprof__cl_cmd_file(const cl_cmd *tmpl, cl_event ev, bool ours)
{
    pthread_mutex_lock(&cl_mu);
    cl_cmd *c = cmd_pool;
    if (c) {
        cmd_pool = c->next;
        cmd_pool_n--;
    } else {
        pthread_mutex_unlock(&cl_mu);
        c = malloc(sizeof(*c));
        pthread_mutex_lock(&cl_mu);
    }
    if (!c) {
        pthread_mutex_unlock(&cl_mu);
        if (ours)
            T.clReleaseEvent(ev);
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
        return NULL;
    }
    *c = *tmpl;
    c->ev = ev;
    cl_cmd *at = pending.prev; /* threads file out of order only slightly */
    while (at != &pending && at->enq_ns > c->enq_ns)
        at = at->prev;
    link_after(at, c);
    pthread_mutex_unlock(&cl_mu);
    if (!ours)
        T.clRetainEvent(ev);
    if (c->kind == GPUPROF_OP_KERNEL) {
        /* PoCL compiles (and links, with `ld`) a kernel lazily when it
         * runs: children started meanwhile are its helpers (core self.c). */
        gpuprof_be_helpers_busy(1);
    }
    atomic_fetch_add_explicit(&cmds_filed, 1, memory_order_relaxed);
    if (T.clSetEventCallback(ev, CL_COMPLETE, on_complete, c) != CL_SUCCESS)
        on_complete(ev, -1, c); /* never measured; counted as dropped */
    return c;
}

cl_wait gpuprof__cl_wait_begin(void)
{
    return (cl_wait){gpuprof_be_now_ns()};
}

#define SUBMIT_BATCH 64

static void submit_cmd(cl_cmd *c)
{
    if (c->status != 0) {
        gpuprof_be_count(GPUPROF_COUNTER_RECORDS_DROPPED, 1);
        return;
    }
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = c->corr;
    a.kind = c->kind;
    a.flags = GPUPROF_ACTIVITY_DONE; /* its end went to the core at the callback */
    a.device = c->device;
    a.stream = c->stream;
    a.start_ns = c->start_ns;
    a.end_ns = c->end_ns;
    a.bytes = c->bytes;
    a.name = c->name;
    uint32_t xm[GPUPROF_EXTRA_MAX];
    uint64_t xv[GPUPROF_EXTRA_MAX];
    unsigned nx = 0;
    if (c->kind == GPUPROF_OP_KERNEL) {
        xm[nx] = GPUPROF_METRIC_GPU_WORK_ITEMS, xv[nx++] = c->work_items;
        xm[nx] = GPUPROF_METRIC_GPU_GROUP_SIZE, xv[nx++] = c->group_size;
    }
    be_submit(&a, c->kind == GPUPROF_OP_KERNEL ? c->binary : GPUPROF_NO_BINARY,
              nx, xm, xv);
}

void gpuprof__cl_settle(bool force)
{
    if (!force && !gp_load_relaxed(&settle_wanted))
        return;
    for (;;) {
        cl_cmd *out[SUBMIT_BATCH];
        int nout = 0;
        bool more = false;
        pthread_mutex_lock(&cl_mu);
        gp_store_relaxed(&settle_wanted, 0);
        /* The stack holds the newest first: each goes in before the one
         * taken before it, so `finished` stays in completion order. */
        cl_cmd *tail = finished.prev;
        clock_map cm = {.have = 0};
        for (cl_cmd *c = atomic_exchange_explicit(&done_stack, NULL,
                                                  memory_order_acquire),
                    *n;
             c; c = n) {
            n = atomic_load_explicit(&c->done, memory_order_relaxed);
            unlink_cmd(c);
            link_after(tail, c);
            if (c->status == 0) {
                c->start_ns = to_process(&cm, c->dev, c->start_ns);
                c->end_ns = to_process(&cm, c->dev, c->end_ns);
            }
        }
        /* Completed commands go at once: the core blames waits on them
         * whenever they arrive (core blame.c). */
        for (cl_cmd *c = finished.next, *n; c != &finished; c = n) {
            n = c->next;
            if (nout == SUBMIT_BATCH) {
                more = true;
                break;
            }
            unlink_cmd(c);
            out[nout++] = c;
        }
        pthread_mutex_unlock(&cl_mu);
        for (int i = 0; i < nout; i++) {
            submit_cmd(out[i]);
            T.clReleaseEvent(out[i]->ev);
        }
        if (nout) {
            pthread_mutex_lock(&cl_mu);
            for (int i = 0; i < nout; i++) {
                if (cmd_pool_n == CMD_POOL_MAX) {
                    free(out[i]);
                    continue;
                }
                out[i]->next = cmd_pool;
                cmd_pool = out[i];
                cmd_pool_n++;
            }
            pthread_mutex_unlock(&cl_mu);
        }
        if (!more)
            break;
    }
}

/* The wait is reported to the core (CPU_IDLE, blame): a clFinish or
 * clWaitForEvents as its SYNC operation's activity, the wait inside a
 * blocking transfer or map as a note on that operation. */
void gpuprof__cl_wait_end(cl_wait w, uint64_t corr, bool own)
{
    uint64_t t1 = gpuprof_be_now_ns();
    if (t1 <= w.t0)
        t1 = w.t0 + 1;
    if (corr)
        gpuprof__cl_host_activity(corr, GPUPROF_OP_SYNC, w.t0, t1,
                                  own ? GPUPROF_ACTIVITY_NOTE | GPUPROF_ACTIVITY_WAIT |
                                            GPUPROF_ACTIVITY_MORE
                                      : 0,
                                  0, NULL, NULL);
    gp_store_relaxed(&settle_wanted, 1);
    gpuprof__cl_settle(false);
}

/* ---- the layer's attach ----------------------------------------------- */
/* Frames of the ICD loader (libOpenCL) are hidden from call paths: the
 * innermost frame of a launch is the program's own call. Our layer's are
 * the library's own: hidden wherever they stand. */
static int find_loader(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *n = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    n = n ? n + 1 : info->dlpi_name;
    if (n && !strncmp(n, "libgpuprof-cl-layer.so", 22))
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
                gpuprof_be_hide(info->dlpi_addr + ph->p_vaddr,
                                info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
                                GPUPROF_HIDE_ALWAYS);
        }
    if (!n || strncmp(n, "libOpenCL.so", 12) != 0)
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

/* gpuprof_layer_dispatch("opencl", ...), through the core's layer table
 * (registered with the backend). */
static const void *cl_dispatch(const void *target, unsigned entries,
                               unsigned *out_entries)
{
    if (!initialized || !target)
        return NULL;
    size_t n = (size_t)entries * sizeof(void *);
    if (n > sizeof(T))
        n = sizeof(T);
    pthread_mutex_lock(&cl_mu);
    memset(&T, 0, sizeof(T));
    memcpy(&T, target, n);
    memcpy(&gpuprof__cl_H, &T, sizeof(T));
    gpuprof__cl_hooks_install(&gpuprof__cl_H);
    pthread_mutex_unlock(&cl_mu);
    dl_iterate_phdr(find_loader, NULL);
    gp_store_release(&attached, 1);
    *out_entries = (unsigned)(sizeof(gpuprof__cl_H) / sizeof(void *));
    gpuprof_be_log(GPUPROF_LOG_INFO, "opencl: layer attached (%u entries)",
                   entries);
    return &gpuprof__cl_H;
}

/* ---- backend life cycle ----------------------------------------------- */
/* The layer sits beside libgpuprof.so (build/lib, or LIBDIR once
 * installed); GPUPROF_OPENCL_LAYER names another. It must load and have
 * clInitLayer (it links nothing of ours: loading it here is harmless). */
static bool find_layer(char *reason, size_t rsize)
{
    const char *env = getenv("GPUPROF_OPENCL_LAYER");
    if (env && *env) {
        snprintf(layer_path, sizeof(layer_path), "%s", env);
    } else {
        Dl_info di;
        if (!dladdr((void *)find_layer, &di) || !di.dli_fname) {
            snprintf(reason, rsize, "cannot locate libgpuprof itself");
            return false;
        }
        const char *slash = strrchr(di.dli_fname, '/');
        int dl = slash ? (int)(slash - di.dli_fname) : 1;
        snprintf(layer_path, sizeof(layer_path), "%.*s/libgpuprof-cl-layer.so",
                 dl, slash ? di.dli_fname : ".");
    }
    const char *why = NULL;
    void *h = NULL;
    if (access(layer_path, R_OK) != 0)
        why = strerror(errno);
    else if (!(h = dlopen(layer_path, RTLD_LAZY | RTLD_LOCAL)))
        why = dlerror();
    else if (!dlsym(h, "clInitLayer"))
        why = "no clInitLayer: not an OpenCL layer";
    if (h)
        dlclose(h);
    if (!why)
        return true;
    if (env && *env)
        snprintf(reason, rsize, "ignoring GPUPROF_OPENCL_LAYER=%s (%.160s); "
                 "using no layer: OpenCL is not measured", env, why);
    else
        snprintf(reason, rsize, "no OpenCL layer at %s (%.160s); set "
                 "GPUPROF_OPENCL_LAYER; OpenCL is not measured", layer_path,
                 why);
    return false;
}

static bool any_icd(void)
{
    const char *v = getenv("OCL_ICD_VENDORS");
    if (v && *v)
        return true;
    DIR *d = opendir("/etc/OpenCL/vendors");
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        found = n > 4 && strcmp(e->d_name + n - 4, ".icd") == 0;
    }
    closedir(d);
    return found;
}

static gpuprof_status cl_probe(void *user, char *reason, size_t rsize)
{
    (void)user;
    void *h = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        snprintf(reason, rsize, "no OpenCL ICD loader (libOpenCL.so.1): %s",
                 dlerror());
        return GPUPROF_E_UNAVAILABLE;
    }
    bool loader_ok = dlsym(h, "clGetPlatformIDs") != NULL;
    dlclose(h);
    if (!loader_ok) {
        snprintf(reason, rsize, "libOpenCL.so.1 has no clGetPlatformIDs");
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!any_icd()) {
        snprintf(reason, rsize, "no OpenCL platform installed (no .icd in "
                 "/etc/OpenCL/vendors, OCL_ICD_VENDORS unset)");
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!find_layer(reason, rsize)) {
        /* GPUPROF_OPENCL_LAYER unusable: a setting, said at the default
         * log level; no layer beside a statically linked program: only
         * when the backend was asked for by name (backend.c). */
        const char *env = getenv("GPUPROF_OPENCL_LAYER");
        return env && *env ? GPUPROF_E_INVALID : GPUPROF_E_UNAVAILABLE;
    }
    return GPUPROF_OK;
}

static gpuprof_status cl_init(void *user)
{
    (void)user;
    /* The loader reads OPENCL_LAYERS once, at the program's first OpenCL
     * call: ours goes first in the list. */
    const char *cur = getenv("OPENCL_LAYERS");
    if (!cur || !*cur) {
        setenv("OPENCL_LAYERS", layer_path, 1);
    } else if (!strstr(cur, layer_path)) {
        size_t n = strlen(cur) + strlen(layer_path) + 2;
        char *v = malloc(n);
        if (!v)
            return GPUPROF_E_NOMEM;
        snprintf(v, n, "%s:%s", cur, layer_path);
        setenv("OPENCL_LAYERS", v, 1);
        free(v);
    }
    initialized = true;
    void *h = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "opencl: libOpenCL was loaded before "
                       "gpuprof_init; if the program already called OpenCL, "
                       "its calls are not measured");
    }
    return GPUPROF_OK;
}

static gpuprof_status cl_start(void *user)
{
    (void)user;
    gp_store_release(&gpuprof__cl_on, 1);
    return GPUPROF_OK;
}

static gpuprof_status cl_stop(void *user)
{
    (void)user;
    gp_store_release(&gpuprof__cl_on, 0);
    return GPUPROF_OK;
}

/* A command the program already waited for may have its callback still
 * on the way (the runtime runs it after marking the event complete): a
 * flush gives callbacks up to 100 ms, then writes what is there. */
static void callbacks_grace(void)
{
    uint64_t deadline = gpuprof_be_now_ns() + 100000000u;
    while (atomic_load_explicit(&cmds_called, memory_order_acquire) !=
               atomic_load_explicit(&cmds_filed, memory_order_relaxed) &&
           gpuprof_be_now_ns() < deadline) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

void gpuprof__cl_quiesce(void)
{
    if (gp_load_acquire(&attached)) {
        callbacks_grace();
        gpuprof__cl_settle(false);
    }
}

static gpuprof_status cl_flush(void *user)
{
    (void)user;
    if (gp_load_acquire(&attached))
        callbacks_grace();
    if (gp_load_acquire(&attached))
        gpuprof__cl_settle(!gpuprof_be_measuring());
    return GPUPROF_OK;
}

static void cl_fini(void *user)
{
    (void)user;
    gp_store_release(&gpuprof__cl_on, 0);
    if (!gp_load_acquire(&attached))
        return;
    gpuprof__cl_settle(true);
    devices_unused_report();
    /* Tables stay: the program may go on calling OpenCL through the
     * layer, which then passes everything through. */
}

void gpuprof__backend_opencl_register(void);
void gpuprof__backend_opencl_register(void)
{
    if (registered)
        return;
    registered = true;
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "opencl";
    b.probe = cl_probe;
    b.init = cl_init;
    b.start = cl_start;
    b.stop = cl_stop;
    b.flush = cl_flush;
    b.fini = cl_fini;
    if (gpuprof_backend_register(&b, 0) == GPUPROF_OK)
        gpuprof_be_layer_register("opencl", cl_dispatch);
}
