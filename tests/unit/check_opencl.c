/*
 * check_opencl.c - the OpenCL backend on a real runtime (PoCL on the CPU):
 * exact launch, copy and byte counts per context; kernel times against wall
 * time; crafted programs with known answers for CPU_IDLE, CPU_IDLE_CAUSE
 * and GPU_IDLE_CAUSE; each detector on its positive and negative case; a
 * program that dlopens libOpenCL; no layer = unavailable, program unchanged.
 *
 * Without an OpenCL platform (no ICD installed) every case passes after
 * saying so: `make check` installs PoCL, so this only happens elsewhere.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/busy.h"
#include "support/readback.h"
#include "support/suite.h"

/* PoCL and LLVM keep caches for the life of the process. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl\nleak:libLLVM\nleak:libOpenCL\nleak:libclang\n"
           "leak:libhwloc\nleak:pocl\n";
}

static char outdir[512], layer[PATH_MAX];
static cl_platform_id P;
static cl_device_id D;
static cl_context C;
static cl_command_queue Q;
static int have_opencl = -1;
static int want_trace; /* the next start records traces */
static int read_env;   /* the next start reads GPUPROF_* variables */

static const char *src =
    "__kernel void k_add(__global float *a, __global const float *b)\n"
    "{ size_t i = get_global_id(0); a[i] += b[i]; }\n"
    "__kernel void k_spin(__global float *a, int n)\n"
    "{ size_t i = get_global_id(0); float x = a[i];\n"
    "  for (int k = 0; k < n; k++) x = x * 0.999f + 0.001f;\n"
    "  a[i] = x; }\n";

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Measurement with the opencl backend only, given this layer; returns the
 * backend's status, its reason in why[]. */
static gpuprof_status start_with_layer(const char *path, char *why,
                                       size_t wsize)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/cl.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    setenv("GPUPROF_OPENCL_LAYER", path, 1);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = read_env ? 0 : GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "opencl";
    o.signals = 0;
    o.trace = want_trace;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    why[0] = '\0';
    return gpuprof_backend_status("opencl", why, wsize);
}

/* The layer beside us: the backend must be active. */
static void start_measuring(void)
{
    char why[200];
    ck_assert_msg(start_with_layer(layer, why, sizeof(why)) == GPUPROF_OK,
                  "opencl backend: %s", why);
}

static void open_device(cl_command_queue_properties qp)
{
    cl_int rc;
    ck_assert_int_eq(clGetPlatformIDs(1, &P, NULL), CL_SUCCESS);
    ck_assert_int_eq(clGetDeviceIDs(P, CL_DEVICE_TYPE_ALL, 1, &D, NULL),
                     CL_SUCCESS);
    C = clCreateContext(NULL, 1, &D, NULL, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, qp, 0};
    Q = clCreateCommandQueueWithProperties(C, D, props, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
}

static cl_program build_in(cl_context c)
{
    cl_int rc;
    cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    ck_assert_int_eq(clBuildProgram(p, 1, &D, "", NULL, NULL), CL_SUCCESS);
    return p;
}

static cl_kernel kernel(cl_program p, const char *name)
{
    cl_int rc;
    cl_kernel k = clCreateKernel(p, name, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    return k;
}

static cl_mem buffer(size_t bytes)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(C, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    return m;
}

#define SKIP_WITHOUT_OPENCL()                                                  \
    do {                                                                       \
        if (!have_opencl) {                                                    \
            fprintf(stderr, "no OpenCL platform: skipped\n");                  \
            return;                                                            \
        }                                                                      \
    } while (0)

/* (The profile is read back through support/readback.h: rb_sum.) */

/* ---- counts, bytes, times -------------------------------------------- */
START_TEST(exact_counts_and_bytes)
{
    SKIP_WITHOUT_OPENCL();
    start_measuring();
    open_device(0);
    cl_program prog = build_in(C);
    cl_kernel k = kernel(prog, "k_add");
    enum { N = 4096 };
    static float h[N];
    cl_mem a = buffer(sizeof(h)), b = buffer(sizeof(h));
    uint64_t t0 = now_ns();
    gpuprof_region_begin("upload");
    ck_assert_int_eq(clEnqueueWriteBuffer(Q, a, CL_FALSE, 0, sizeof(h), h, 0,
                                          NULL, NULL), CL_SUCCESS);
    cl_event mine;
    ck_assert_int_eq(clEnqueueWriteBuffer(Q, b, CL_FALSE, 0, sizeof(h), h, 0,
                                          NULL, &mine), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueFillBuffer(Q, b, &(float){1.0f}, sizeof(float),
                                         0, 1024, 0, NULL, NULL), CL_SUCCESS);
    gpuprof_region_end("upload");
    gpuprof_region_begin("compute");
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(b), &b);
    size_t g = N, l = 64;
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, &l, 0, NULL,
                                                NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(Q, a, CL_TRUE, 0, 2048, h, 0, NULL,
                                         NULL), CL_SUCCESS);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    gpuprof_region_end("compute");
    uint64_t wall = now_ns() - t0;
    /* The program's own event is still valid, once: ours was separate. */
    cl_int st = 0;
    ck_assert_int_eq(clGetEventInfo(mine, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                    sizeof(st), &st, NULL), CL_SUCCESS);
    ck_assert_int_eq(st, CL_COMPLETE);
    ck_assert_int_eq(clReleaseEvent(mine), CL_SUCCESS);

    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_H2D, NULL,
                             "upload"), 2);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_H2D, NULL,
                             "upload"), 2 * sizeof(h));
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_MEMSET, NULL,
                             "upload"), 1);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_MEMSET, NULL,
                             "upload"), 1024);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_add", "compute"), 7);
    ck_assert_uint_eq(rb_sum(p, "gpu.work_items", 0, "k_add", "compute"),
                      7 * N);
    ck_assert_uint_eq(rb_sum(p, "gpu.group_size", 0, "k_add", "compute"),
                      7 * 64);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_add", "upload"), 0);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_COPY_D2H, NULL,
                             "compute"), 1);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_COPY_D2H, NULL,
                             "compute"), 2048);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_SYNC, NULL,
                             "compute"), 1);
    uint64_t kt = rb_sum(p, "gpu.time", 0, "k_add", "compute");
    ck_assert_uint_gt(kt, 0);
    ck_assert_uint_lt(kt, wall);
    ck_assert_uint_gt(rb_sum(p, "api.time", GPUPROF_OP_BUILD, NULL, NULL), 0);
    ck_assert_uint_eq(rb_counter(p, "records.dropped"), 0);
    ck_assert_uint_eq(rb_counter(p, "records.unattributed"), 0);
    /* The device its queue ran on, described once, as the runtime says. */
    cl_uint units = 0;
    size_t group = 0;
    cl_ulong local = 0;
    clGetDeviceInfo(D, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units,
                    NULL);
    clGetDeviceInfo(D, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(group), &group,
                    NULL);
    clGetDeviceInfo(D, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local, NULL);
    ck_assert_uint_eq(rb_device(p, "opencl", 0, "sm_count"), units);
    ck_assert_uint_eq(rb_device(p, "opencl", 0, "max_threads_per_block"), group);
    ck_assert_uint_eq(rb_device(p, "opencl", 0, "shared_bytes_per_block"), local);
    ck_assert_uint_ne(rb_device(p, "opencl", 0, "name"), UINT64_MAX);
    ck_assert_uint_eq(p->devattr_count, 4);
    gpuprof__io_profile_free(p);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- blame ------------------------------------------------------------ */
START_TEST(long_kernel_behind_finish_gets_cpu_idle_cause)
{
    SKIP_WITHOUT_OPENCL();
    start_measuring();
    open_device(0);
    cl_program prog = build_in(C);
    cl_kernel k = kernel(prog, "k_spin");
    cl_mem a = buffer(4096 * sizeof(float));
    int iters = 200000;
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(int), &iters);
    size_t g = 4096;
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS); /* build and setup done */
    gpuprof_region_begin("wait");
    ck_assert_int_eq(clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL,
                                            NULL), CL_SUCCESS);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    gpuprof_region_end("wait");
    gpuprof__io_profile *p = rb_flush_and_load();
    uint64_t idle = rb_sum(p, "blame.cpu_idle", GPUPROF_OP_SYNC, NULL, "wait");
    uint64_t cause = rb_sum(p, "blame.cpu_idle_cause", 0, "k_spin", "wait");
    uint64_t kt = rb_sum(p, "gpu.time", 0, "k_spin", "wait");
    ck_assert_uint_gt(kt, 5000000); /* the kernel ran for a while */
    ck_assert_uint_gt(idle, kt / 2);  /* and the thread waited for it */
    /* The only command running during the wait takes all of it. */
    ck_assert_uint_eq(cause, idle);
    /* Nothing else in the region is blamed. */
    ck_assert_uint_eq(rb_sum(p, "blame.cpu_idle_cause", 0, NULL, "wait"), 0);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(cpu_phase_with_idle_device_gets_gpu_idle_cause)
{
    SKIP_WITHOUT_OPENCL();
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    start_measuring();
    open_device(0);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    gpuprof_region_begin("cpu only");
    volatile double x = busy_cpu(200000000); /* 200 ms of CPU */
    (void)x;
    gpuprof_region_end("cpu only");
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS); /* drains the samples */
    gpuprof__io_profile *p = rb_flush_and_load();
    const char *m = "blame.gpu_idle_cause";
    uint64_t in_region = 0, in_busy = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        uint64_t v = rb_val(p, i, m);
        if (!v || !rb_under_region(p, i, "cpu only"))
            continue;
        in_region += v;
        /* Is busy_cpu on this sample's path? */
        const gpuprof__io_thread *th = &p->threads[0];
        for (uint32_t r = i - th->first_node; r; r = p->nodes[th->first_node + r].parent) {
            const gpuprof__io_node *n = &p->nodes[th->first_node + r];
            if (n->kind != GPUPROF_IO_NODE_FRAME)
                continue;
            const gpuprof__io_module *mod = &p->modules[n->key_a];
            Dl_info di;
            if (dladdr((void *)(uintptr_t)(mod->base + n->key_b), &di) &&
                di.dli_sname && !strcmp(di.dli_sname, "busy_cpu")) {
                in_busy += v;
                break;
            }
        }
    }
    /* 2 ms samples of CPU time: 200 ms give about 100 of them. */
    ck_assert_uint_ge(in_region, 120000000);
    ck_assert_uint_le(in_region, 260000000);
    ck_assert_uint_ge(in_busy, in_region * 9 / 10);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST


/* GPU_IDLE_CAUSE samples 60 frames deep (a sample keeps 40): each goes
 * beneath the region's <truncated> node, counted, and none stands as a
 * root of its own (the recursion's frame directly beneath the region). */
static volatile int deep_sink;

void deep_cpu(int n); /* global: dladdr names it */
__attribute__((noinline)) void deep_cpu(int n)
{
    if (n > 0)
        deep_cpu(n - 1);
    else
        deep_sink += (int)busy_cpu(100000000); /* 100 ms of CPU */
    deep_sink++; /* no tail call */
}

static const char *frame_symbol(const gpuprof__io_profile *p,
                                const gpuprof__io_node *n)
{
    const gpuprof__io_module *mod = &p->modules[n->key_a];
    Dl_info di;
    if (dladdr((void *)(uintptr_t)(mod->base + n->key_b), &di) && di.dli_sname)
        return di.dli_sname;
    return "";
}

START_TEST(deep_samples_beneath_truncated)
{
    SKIP_WITHOUT_OPENCL();
#if defined(__SANITIZE_THREAD__)
    fprintf(stderr, "TSan build: no unwinding in signal handlers, skipped\n");
    return;
#endif
    start_measuring();
    open_device(0);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    gpuprof_region_begin("deep cpu");
    deep_cpu(200); /* deeper than GP_MAX_FRAMES (128) */
    gpuprof_region_end("deep cpu");
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS); /* drains the samples */
    gpuprof__io_profile *p = rb_flush_and_load();
    const gpuprof__io_thread *th = &p->threads[0];
    uint32_t r = UINT32_MAX, cut = UINT32_MAX;
    for (uint32_t i = 1; i < th->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + i];
        if (n->kind == GPUPROF_IO_NODE_REGION &&
            !strcmp(gpuprof__io_str(p, n->key_a), "deep cpu"))
            r = i;
    }
    ck_assert_uint_ne(r, UINT32_MAX);
    for (uint32_t i = r + 1; i < th->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[th->first_node + i];
        if (n->parent != r || n->kind != GPUPROF_IO_NODE_FRAME)
            continue;
        ck_assert_msg(strcmp(frame_symbol(p, n), "deep_cpu") != 0,
                      "a cut path stands beside the whole ones");
        if (!strcmp(gpuprof__io_str(p, p->modules[n->key_a].path),
                    "<truncated>"))
            cut = i;
    }
    ck_assert_uint_ne(cut, UINT32_MAX);
    const char *m = "blame.gpu_idle_cause";
    uint64_t in_region = 0, in_cut = 0;
    for (uint32_t i = r + 1; i < th->node_count; i++) {
        uint64_t v = rb_val(p, th->first_node + i, m);
        uint32_t a = i;
        while (a && a != r && a != cut)
            a = p->nodes[th->first_node + a].parent;
        in_region += a ? v : 0;
        in_cut += a == cut ? v : 0;
    }
    ck_assert_uint_ge(in_region, 50000000);
    ck_assert_uint_ge(in_cut, in_region * 9 / 10);
    uint64_t cuts = rb_counter(p, "callpaths.truncated");
    ck_assert_uint_ge(cuts, 1);
    ck_assert_uint_le(cuts, in_cut / 2000000); /* a sample is >= 1 period */
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST


/* Saving a program's binaries is the library's own work (PoCL compiles
 * every kernel to hand them out): its time is gpuprof.self_ns, and no
 * GPU_IDLE_CAUSE sample of it lands on the program's call paths: the
 * samples beneath the region around clCreateKernel cover at most its time
 * outside that work (plus two periods of slack for timer granularity). */
START_TEST(binaries_are_the_librarys_time)
{
    SKIP_WITHOUT_OPENCL();
    start_measuring();
    open_device(0);
    /* A source of its own (PoCL's cache misses): the binaries are made
     * now, as on a program's first measured run. */
    char own[1024];
    snprintf(own, sizeof(own), "/* %ld %llu */\n%s", (long)getpid(),
             (unsigned long long)now_ns(), src);
    const char *srcs[1] = {own};
    cl_int rc;
    cl_program prog = clCreateProgramWithSource(C, 1, srcs, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    ck_assert_int_eq(clBuildProgram(prog, 1, &D, "", NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    uint64_t before = 0, self = 0;
    ck_assert_int_eq(gpuprof_stat_get("gpuprof.self_ns", &before), GPUPROF_OK);
    gpuprof_region_begin("create");
    uint64_t t0 = now_ns();
    cl_kernel k = kernel(prog, "k_add");
    uint64_t t1 = now_ns();
    gpuprof_region_end("create");
    ck_assert_int_eq(gpuprof_stat_get("gpuprof.self_ns", &self), GPUPROF_OK);
    self -= before;
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS); /* drains the samples */
    gpuprof__io_profile *p = rb_flush_and_load();
    uint64_t idle = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        if (rb_under_region(p, i, "create"))
            idle += rb_val(p, i, "blame.gpu_idle_cause");
    fprintf(stderr, "create %.1f ms, of it the library's %.1f ms; "
            "GPU_IDLE_CAUSE beneath it %.1f ms\n", (t1 - t0) / 1e6,
            self / 1e6, idle / 1e6);
    ck_assert_uint_gt(self, 0);
    ck_assert_uint_le(self, t1 - t0);
    ck_assert_uint_le(idle, (t1 - t0) - self + 2 * 2000000u);
    gpuprof__io_profile_free(p);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- detectors: each on its crafted case, silent on its negative ------ */
START_TEST(detectors_fire_and_stay_silent)
{
    SKIP_WITHOUT_OPENCL();
    start_measuring();
    open_device(0); /* in-order */
    cl_int rc;
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES,
                                 CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    gpuprof_region_begin("ooo queue");
    cl_command_queue q2 = clCreateCommandQueueWithProperties(C, D, ooo, &rc);
    gpuprof_region_end("ooo queue");
    ck_assert_int_eq(rc, CL_SUCCESS);

    gpuprof_region_begin("jit");
    cl_program prog = build_in(C);
    gpuprof_region_end("jit");
    /* The same program from its binary: no JIT. */
    size_t bsize = 0;
    ck_assert_int_eq(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES,
                                      sizeof(bsize), &bsize, NULL), CL_SUCCESS);
    unsigned char *bin = malloc(bsize);
    ck_assert_int_eq(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bin),
                                      &bin, NULL), CL_SUCCESS);
    gpuprof_region_begin("aot");
    cl_program prog2 = clCreateProgramWithBinary(
        C, 1, &D, &bsize, (const unsigned char **)&bin, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    ck_assert_int_eq(clBuildProgram(prog2, 1, &D, "", NULL, NULL), CL_SUCCESS);
    gpuprof_region_end("aot");
    free(bin);

    cl_kernel k = kernel(prog, "k_add");
    enum { N = 1024 };
    static float h[N], fresh[N];
    cl_mem a = buffer(sizeof(h)), b = buffer(sizeof(h));
    size_t g = N;
    gpuprof_region_begin("distinct");
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(b), &b);
    clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    gpuprof_region_end("distinct");
    gpuprof_region_begin("aliased");
    clSetKernelArg(k, 1, sizeof(a), &a);
    clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    gpuprof_region_end("aliased");

    gpuprof_region_begin("round trip");
    clEnqueueReadBuffer(Q, a, CL_TRUE, 0, sizeof(h), h, 0, NULL, NULL);
    clEnqueueWriteBuffer(Q, b, CL_TRUE, 0, sizeof(h), h, 0, NULL, NULL);
    gpuprof_region_end("round trip");
    gpuprof_region_begin("fresh data");
    clEnqueueWriteBuffer(Q, b, CL_TRUE, 0, sizeof(fresh), fresh, 0, NULL, NULL);
    gpuprof_region_end("fresh data");

    /* The same kernel in a second context. */
    gpuprof_region_begin("one context");
    clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    gpuprof_region_end("one context");
    cl_context c2 = clCreateContext(NULL, 1, &D, NULL, NULL, &rc);
    cl_command_queue q3 = clCreateCommandQueueWithProperties(c2, D, NULL, &rc);
    cl_program p3 = build_in(c2);
    cl_kernel k3 = kernel(p3, "k_add");
    cl_mem a3 = clCreateBuffer(c2, CL_MEM_READ_WRITE, sizeof(h), NULL, &rc);
    clSetKernelArg(k3, 0, sizeof(a3), &a3);
    clSetKernelArg(k3, 1, sizeof(a3), &a3);
    gpuprof_region_begin("second context");
    clEnqueueNDRangeKernel(q3, k3, 1, NULL, &g, NULL, 0, NULL, NULL);
    gpuprof_region_end("second context");
    clFinish(q3);
    clFinish(Q);

    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "detect.inorder_queue", 0, NULL, NULL), 2);
    ck_assert_uint_eq(rb_sum(p, "detect.inorder_queue", 0, NULL, "ooo queue"),
                      0);
    ck_assert_uint_eq(rb_sum(p, "detect.jit_single_device", 0, NULL, "jit"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.jit_single_device", 0, NULL, "aot"), 0);
    ck_assert_uint_eq(rb_sum(p, "detect.args_not_aliased", 0, NULL,
                             "distinct"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.args_not_aliased", 0, NULL, "aliased"),
                      0);
    ck_assert_uint_eq(rb_sum(p, "detect.output_as_input", 0, NULL,
                             "round trip"), 1);
    ck_assert_uint_eq(rb_sum(p, "detect.output_as_input", 0, NULL,
                             "fresh data"), 0);
    ck_assert_uint_eq(rb_sum(p, "detect.kernel_multi_context", 0, NULL,
                             "one context"), 0);
    ck_assert_uint_eq(rb_sum(p, "detect.kernel_multi_context", 0, NULL,
                             "second context"), 1);
    gpuprof__io_profile_free(p);
    clReleaseMemObject(a3);
    clReleaseKernel(k3);
    clReleaseProgram(p3);
    clReleaseCommandQueue(q3);
    clReleaseCommandQueue(q2);
    clReleaseContext(c2);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    /* Finalized: devices unused (PoCL's one device was used) is 0. */
    p = rb_load();
    ck_assert_uint_eq(rb_sum(p, "detect.devices_unused", 0, NULL, NULL), 0);
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, "k_add", NULL), 4);
    gpuprof__io_profile_free(p);
}
END_TEST

/* ---- a program that dlopens libOpenCL is measured --------------------- */
typedef cl_int (*get_platforms_fn)(cl_uint, cl_platform_id *, cl_uint *);

START_TEST(dlopened_opencl_is_measured)
{
    SKIP_WITHOUT_OPENCL();
    start_measuring();
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(h);
    get_platforms_fn gp = (get_platforms_fn)dlsym(h, "clGetPlatformIDs");
    cl_int (*gd)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *,
                 cl_uint *) = (cl_int (*)(cl_platform_id, cl_device_type,
                                          cl_uint, cl_device_id *,
                                          cl_uint *))dlsym(h, "clGetDeviceIDs");
    cl_context (*cc)(const cl_context_properties *, cl_uint,
                     const cl_device_id *,
                     void(CL_CALLBACK *)(const char *, const void *, size_t,
                                         void *),
                     void *, cl_int *) =
        (cl_context(*)(const cl_context_properties *, cl_uint,
                       const cl_device_id *,
                       void(CL_CALLBACK *)(const char *, const void *, size_t,
                                           void *),
                       void *, cl_int *))dlsym(h, "clCreateContext");
    cl_command_queue (*cq)(cl_context, cl_device_id,
                           const cl_queue_properties *, cl_int *) =
        (cl_command_queue(*)(cl_context, cl_device_id,
                             const cl_queue_properties *, cl_int *))
            dlsym(h, "clCreateCommandQueueWithProperties");
    cl_int (*fill)(cl_command_queue, cl_mem, const void *, size_t, size_t,
                   size_t, cl_uint, const cl_event *, cl_event *) =
        (cl_int(*)(cl_command_queue, cl_mem, const void *, size_t, size_t,
                   size_t, cl_uint, const cl_event *, cl_event *))
            dlsym(h, "clEnqueueFillBuffer");
    cl_mem (*cb)(cl_context, cl_mem_flags, size_t, void *, cl_int *) =
        (cl_mem(*)(cl_context, cl_mem_flags, size_t, void *, cl_int *))
            dlsym(h, "clCreateBuffer");
    cl_int (*fin)(cl_command_queue) =
        (cl_int(*)(cl_command_queue))dlsym(h, "clFinish");
    ck_assert(gp && gd && cc && cq && fill && cb && fin);
    cl_platform_id pl;
    cl_device_id dev;
    cl_int rc;
    ck_assert_int_eq(gp(1, &pl, NULL), CL_SUCCESS);
    ck_assert_int_eq(gd(pl, CL_DEVICE_TYPE_ALL, 1, &dev, NULL), CL_SUCCESS);
    cl_context c = cc(NULL, 1, &dev, NULL, NULL, &rc);
    cl_command_queue q = cq(c, dev, NULL, &rc);
    cl_mem m = cb(c, CL_MEM_READ_WRITE, 4096, NULL, &rc);
    float zero = 0;
    gpuprof_region_begin("dl");
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(fill(q, m, &zero, sizeof(zero), 0, 4096, 0, NULL,
                              NULL), CL_SUCCESS);
    ck_assert_int_eq(fin(q), CL_SUCCESS);
    gpuprof_region_end("dl");
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", GPUPROF_OP_MEMSET, NULL, "dl"), 5);
    ck_assert_uint_eq(rb_sum(p, "gpu.bytes", GPUPROF_OP_MEMSET, NULL, "dl"),
                      5 * 4096);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- GPU binaries and traces per queue -------------------------------- */
/* The program's binary for D, as the runtime gives it. */
static unsigned char *program_binary(cl_program p, size_t *size)
{
    ck_assert_int_eq(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES,
                                      sizeof(*size), size, NULL), CL_SUCCESS);
    ck_assert_uint_gt(*size, 0);
    unsigned char *b = malloc(*size);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(b), &b,
                                      NULL), CL_SUCCESS);
    return b;
}

static void launch_n(cl_command_queue q, cl_kernel k, cl_mem a, int n)
{
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(a), &a);
    size_t g = 64;
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0,
                                                NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);
}

START_TEST(binaries_saved_once_and_traced_per_queue)
{
    SKIP_WITHOUT_OPENCL();
    want_trace = 1;
    start_measuring();
    want_trace = 0;
    open_device(0);
    cl_int rc;
    cl_context c2 = clCreateContext(NULL, 1, &D, NULL, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    cl_command_queue q2 = clCreateCommandQueueWithProperties(c2, D, NULL, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    /* One source built in two contexts (one binary), another source. */
    cl_program p1 = build_in(C), p2 = build_in(c2);
    const char *osrc = "__kernel void k_other(__global float *a,\n"
                       "  __global float *b) { a[get_global_id(0)] = 2.0f; }\n";
    cl_program p3 = clCreateProgramWithSource(C, 1, &osrc, NULL, &rc);
    ck_assert_int_eq(clBuildProgram(p3, 1, &D, "", NULL, NULL), CL_SUCCESS);
    cl_kernel k1 = kernel(p1, "k_add"), k2 = kernel(p2, "k_add"),
              k3 = kernel(p3, "k_other");
    cl_mem a = buffer(64 * sizeof(float));
    cl_mem b = clCreateBuffer(c2, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL,
                              &rc);
    launch_n(Q, k1, a, 3);
    launch_n(Q, k3, a, 2);
    launch_n(q2, k2, b, 4);
    size_t bsize;
    unsigned char *bin = program_binary(p1, &bsize);
    char prof[1024], trace[1024], err[256];
    ck_assert_int_eq(gpuprof_output_path(prof, sizeof(prof)), GPUPROF_OK);
    snprintf(trace, sizeof(trace), "%.*s.gptrace",
             (int)(strrchr(prof, '.') - prof), prof);
    clReleaseKernel(k1);
    clReleaseKernel(k2);
    clReleaseKernel(k3);
    clReleaseProgram(p1);
    clReleaseProgram(p2);
    clReleaseProgram(p3);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q2);
    clReleaseContext(c2);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);

    gpuprof__io_profile *p = NULL;
    ck_assert_msg(!gpuprof__io_read_file(prof, &p, err, sizeof(err)), "%s",
                  err);
    uint32_t gpu_modules = 0, m_add = UINT32_MAX, m_other = UINT32_MAX;
    uint64_t launches = 0;
    for (uint32_t i = 0; i < p->module_count; i++)
        gpu_modules += !!(p->modules[i].flags & GPUPROF_IO_MODULE_GPU);
    ck_assert_uint_eq(gpu_modules, 2);
    ck_assert_uint_eq(rb_counter(p, "gpu.binaries"), 2);
    ck_assert_uint_eq(rb_counter(p, "gpu.binaries_failed"), 0);
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (n->kind != GPUPROF_IO_NODE_KERNEL)
            continue;
        ck_assert_uint_lt(n->key_b, p->module_count);
        ck_assert(p->modules[n->key_b].flags & GPUPROF_IO_MODULE_GPU);
        uint32_t *m = !strcmp(gpuprof__io_str(p, n->key_a), "k_add")
                          ? &m_add
                          : &m_other;
        ck_assert(*m == UINT32_MAX || *m == n->key_b); /* both contexts */
        *m = (uint32_t)n->key_b;
        launches += rb_val(p, i, "gpu.count");
    }
    ck_assert_uint_eq(launches, 9);
    ck_assert_uint_ne(m_add, UINT32_MAX);
    ck_assert_uint_ne(m_other, UINT32_MAX);
    ck_assert_uint_ne(m_add, m_other);
    /* The saved file is the runtime's binary, byte for byte. */
    char path[1200];
    const char *rel = gpuprof__io_str(p, p->modules[m_add].path);
    ck_assert_int_eq(strncmp(rel, "binaries/", 9), 0);
    ck_assert_uint_eq(p->modules[m_add].size, bsize);
    snprintf(path, sizeof(path), "%s/%s", outdir, rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    unsigned char *got = malloc(bsize + 1);
    ck_assert_uint_eq(fread(got, 1, bsize + 1, f), bsize);
    fclose(f);
    ck_assert_int_eq(memcmp(got, bin, bsize), 0);
    free(got);
    free(bin);
    gpuprof__io_profile_free(p);

    /* Traces: one GPU stream per queue, each launch once, in order. */
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    ck_assert_uint_eq(t->ignored_bytes, 0);
    gpuprof__io_trace_sort(t);
    uint64_t per[2] = {0, 0};
    uint32_t gpu_streams = 0;
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *st = &t->streams[i];
        if (!st->gpu || !st->count)
            continue;
        ck_assert_uint_lt(gpu_streams, 2);
        per[gpu_streams++] = st->count;
        for (uint64_t j = 0; j < st->count; j++) {
            ck_assert_uint_ge(st->recs[j].end_ns, st->recs[j].start_ns);
            if (j)
                ck_assert_uint_ge(st->recs[j].start_ns,
                                  st->recs[j - 1].end_ns); /* in order */
        }
    }
    ck_assert_uint_eq(gpu_streams, 2);
    ck_assert_uint_eq(per[0] + per[1], 9);
    ck_assert((per[0] == 5 && per[1] == 4) || (per[0] == 4 && per[1] == 5));
    gpuprof__io_trace_free(t);
}
END_TEST

/* GPUPROF_GPU_BINARIES=0: nothing read or saved, kernels name no binary. */
START_TEST(binaries_off)
{
    SKIP_WITHOUT_OPENCL();
    setenv("GPUPROF_GPU_BINARIES", "0", 1);
    read_env = 1;
    start_measuring();
    read_env = 0;
    unsetenv("GPUPROF_GPU_BINARIES");
    open_device(0);
    cl_program prog = build_in(C);
    cl_kernel k = kernel(prog, "k_add");
    cl_mem a = buffer(64 * sizeof(float));
    launch_n(Q, k, a, 2);
    gpuprof__io_profile *p = rb_flush_and_load();
    uint64_t launches = 0;
    for (uint32_t i = 0; i < p->node_count; i++)
        if (p->nodes[i].kind == GPUPROF_IO_NODE_KERNEL) {
            ck_assert_uint_eq(p->nodes[i].key_b, 0xFFFFFFFFu);
            launches += rb_val(p, i, "gpu.count");
        }
    ck_assert_uint_eq(launches, 2);
    for (uint32_t i = 0; i < p->module_count; i++)
        ck_assert(!(p->modules[i].flags & GPUPROF_IO_MODULE_GPU));
    ck_assert_uint_eq(rb_counter(p, "gpu.binaries"), 0);
    gpuprof__io_profile_free(p);
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/binaries", outdir);
    ck_assert_int_ne(access(dir, F_OK), 0);
    clReleaseMemObject(a);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- no layer: unavailable, the program runs unchanged ---------------- */
START_TEST(no_layer_is_unavailable_and_changes_nothing)
{
    SKIP_WITHOUT_OPENCL();
    unsetenv("OPENCL_LAYERS");
    char why[200];
    ck_assert_int_eq(start_with_layer("/nonexistent/libgpuprof-cl-layer.so",
                                      why, sizeof(why)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(why, "layer"));
    ck_assert_ptr_null(getenv("OPENCL_LAYERS"));
    open_device(0);
    cl_program prog = build_in(C);
    cl_kernel k = kernel(prog, "k_add");
    static float h[256];
    for (int i = 0; i < 256; i++)
        h[i] = (float)i;
    cl_mem a = buffer(sizeof(h));
    clEnqueueWriteBuffer(Q, a, CL_TRUE, 0, sizeof(h), h, 0, NULL, NULL);
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(a), &a);
    size_t g = 256;
    ck_assert_int_eq(clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL,
                                            NULL), CL_SUCCESS);
    clEnqueueReadBuffer(Q, a, CL_TRUE, 0, sizeof(h), h, 0, NULL, NULL);
    ck_assert(h[3] == 6.0f && h[255] == 510.0f);
    gpuprof__io_profile *p = rb_flush_and_load();
    ck_assert_uint_eq(rb_sum(p, "gpu.count", 0, NULL, NULL), 0);
    gpuprof__io_profile_free(p);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* ---- dependency notes for the trace analysis (trace format 1.3) --------
 * A kernel with an event wait list (a stream wait for the first kernel's
 * command), clWaitForEvents of both events (two event waits naming the
 * two commands), a blocking read (a blocking launch) and clFinish (a
 * queue wait): five notes, all flagged OpenCL, targets the commands'
 * correlation ids. */
START_TEST(dependency_notes)
{
    SKIP_WITHOUT_OPENCL();
    want_trace = 1;
    start_measuring();
    want_trace = 0;
    open_device(0);
    cl_program prog = build_in(C);
    cl_kernel k = kernel(prog, "k_add");
    cl_mem a = buffer(64 * sizeof(float));
    clSetKernelArg(k, 0, sizeof(a), &a);
    clSetKernelArg(k, 1, sizeof(a), &a);
    size_t g = 64;
    cl_event e1, e2;
    ck_assert_int_eq(clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 0, NULL,
                                            &e1), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueNDRangeKernel(Q, k, 1, NULL, &g, NULL, 1, &e1,
                                            &e2), CL_SUCCESS);
    cl_event both[2] = {e1, e2};
    ck_assert_int_eq(clWaitForEvents(2, both), CL_SUCCESS);
    float host[64];
    ck_assert_int_eq(clEnqueueReadBuffer(Q, a, CL_TRUE, 0, sizeof(host), host,
                                         0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clFinish(Q), CL_SUCCESS);
    clReleaseEvent(e1);
    clReleaseEvent(e2);
    char prof[1024], trace[1024], err[256];
    ck_assert_int_eq(gpuprof_output_path(prof, sizeof(prof)), GPUPROF_OK);
    snprintf(trace, sizeof(trace), "%.*s.gptrace",
             (int)(strrchr(prof, '.') - prof), prof);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseMemObject(a);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    gpuprof__io_trace_sort(t);
    ck_assert_uint_ge(t->minor, 3); /* notes since 1.3 */
    ck_assert_uint_eq(t->dep_stream_count, 1);
    const gpuprof__io_trace_stream *ds = &t->deps[0], *ops = NULL;
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        if (t->ops[i].id == ds->id)
            ops = &t->ops[i];
    ck_assert_ptr_nonnull(ops);
    /* The kernel commands: the first two operations after the build. */
    uint64_t k1 = 0, k2 = 0;
    uint32_t n[9] = {0};
    for (uint64_t i = 0; i < ds->count; i++) {
        const gpuprof__io_trace_rec *r = &ds->recs[i];
        uint32_t what = GPUPROF_IO_DEP_WHAT(r->context);
        ck_assert_uint_lt(what, 9);
        n[what]++;
        ck_assert(GPUPROF_IO_DEP_FLAGS(r->context) & 0x8u); /* OpenCL */
        if (what == 7) { /* the wait list: names the first kernel */
            k2 = r->corr;
            k1 = r->end_ns;
        }
    }
    ck_assert_uint_eq(ds->count, 5);
    ck_assert_uint_eq(n[7], 1); /* STREAM_WAIT */
    ck_assert_uint_eq(n[3], 2); /* SYNC_EVENT */
    ck_assert_uint_eq(n[8], 1); /* LAUNCH (blocking) */
    ck_assert_uint_eq(n[2], 1); /* SYNC_STREAM (clFinish) */
    ck_assert_uint_ne(k1, 0);
    ck_assert_uint_ne(k1, k2);
    bool saw1 = false, saw2 = false;
    for (uint64_t i = 0; i < ops->count; i++) {
        saw1 = saw1 || ops->recs[i].corr == k1;
        saw2 = saw2 || ops->recs[i].corr == k2;
    }
    ck_assert(saw1 && saw2); /* both are operations of the trace */
    for (uint64_t i = 0; i < ds->count; i++) {
        const gpuprof__io_trace_rec *r = &ds->recs[i];
        if (GPUPROF_IO_DEP_WHAT(r->context) == 3) /* names k1, then k2 */
            ck_assert(r->end_ns == k1 || r->end_ns == k2);
        if (GPUPROF_IO_DEP_WHAT(r->context) == 8)
            ck_assert_uint_eq(GPUPROF_IO_DEP_FLAGS(r->context), 0x2u | 0x8u);
    }
    gpuprof__io_trace_free(t);
}
END_TEST

/* ---- unusable settings: one line each at the default level ------------ */
static char said[8][512];
static int nsaid;

static void catch_line(gpuprof_log_level level, const char *msg, void *user)
{
    (void)user;
    ck_assert_int_le(level, GPUPROF_LOG_ERROR); /* the default level */
    if (nsaid < 8)
        snprintf(said[nsaid], sizeof(said[0]), "%s", msg);
    nsaid++;
}

/* With this layer and backend list (the default log level), exactly one
 * line, naming `part`; the backend is unavailable. */
static void layer_said_once(const char *path, const char *backends,
                            const char *part)
{
    nsaid = 0;
    ck_assert_int_eq(gpuprof_set_log(catch_line, NULL, -1), GPUPROF_OK);
    setenv("GPUPROF_OPENCL_LAYER", path, 1);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = backends;
    o.signals = 0;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("opencl", NULL, 0),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_msg(nsaid == 1, "%d lines, first: %s", nsaid,
                  nsaid ? said[0] : "");
    ck_assert_msg(strstr(said[0], part), "no '%s' in: %s", part, said[0]);
    ck_assert_msg(strstr(said[0], "not measured"), "%s", said[0]);
}

static void fresh_outdir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/cl.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
}

/* Missing: asked for by name, and tried by "auto". */
START_TEST(missing_layer_named_is_said)
{
    SKIP_WITHOUT_OPENCL();
    fresh_outdir();
    layer_said_once("/nonexistent/layer.so", "opencl",
                    "GPUPROF_OPENCL_LAYER=/nonexistent/layer.so");
}
END_TEST

START_TEST(missing_layer_auto_is_said)
{
    SKIP_WITHOUT_OPENCL();
    fresh_outdir();
    layer_said_once("/nonexistent/layer.so", "auto",
                    "GPUPROF_OPENCL_LAYER=/nonexistent/layer.so");
}
END_TEST

/* There, but not a library. */
START_TEST(unloadable_layer_is_said)
{
    SKIP_WITHOUT_OPENCL();
    fresh_outdir();
    char junk[600];
    snprintf(junk, sizeof(junk), "%s/junk.so", outdir);
    FILE *f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a library\n", f);
    fclose(f);
    char part[700];
    snprintf(part, sizeof(part), "GPUPROF_OPENCL_LAYER=%s", junk);
    layer_said_once(junk, "auto", part);
}
END_TEST

/* GPUPROF_IDLE_PERIOD_US: not a number is one line, the default used; a
 * good value no line. */
static void idle_period(const char *value, int lines)
{
    ck_assert_int_eq(gpuprof_set_log(catch_line, NULL, -1), GPUPROF_OK);
    setenv("GPUPROF_IDLE_PERIOD_US", value, 1);
    start_measuring();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_msg(nsaid == lines, "%d lines, first: %s", nsaid,
                  nsaid ? said[0] : "");
}

START_TEST(bad_idle_period_is_said)
{
    SKIP_WITHOUT_OPENCL();
    idle_period("abc", 1);
    ck_assert_ptr_nonnull(strstr(said[0], "GPUPROF_IDLE_PERIOD_US=abc"));
    ck_assert_ptr_nonnull(strstr(said[0], "using 2000"));
}
END_TEST

START_TEST(good_idle_period_is_quiet)
{
    SKIP_WITHOUT_OPENCL();
    idle_period("500", 0);
}
END_TEST

int main(int argc, char **argv)
{
    (void)argc;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    (void)argv;
    snprintf(layer, sizeof(layer), "%s/../lib/libgpuprof-cl-layer.so",
             dirname(exe));
    const char *tmp = getenv("TMPDIR");
    char cache[PATH_MAX];
    snprintf(cache, sizeof(cache), "%s/pocl-cache", tmp ? tmp : "/tmp");
    setenv("POCL_CACHE_DIR", cache, 0);
    /* Is there a platform at all? Asked in a child: the loader reads
     * OPENCL_LAYERS once per process, and each test sets it up itself. */
    have_opencl = 0;
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        /* The layer is built with this suite: never a reason to skip. */
        have_opencl = access("/etc/OpenCL/vendors", R_OK) == 0;
    }
    const test_case cases[] = {
        {"exact_counts_and_bytes", exact_counts_and_bytes, 120},
        {"cpu_idle_cause", long_kernel_behind_finish_gets_cpu_idle_cause, 120},
        {"gpu_idle_cause", cpu_phase_with_idle_device_gets_gpu_idle_cause, 120},
        {"deep_samples_beneath_truncated", deep_samples_beneath_truncated, 120},
        {"binaries_are_the_librarys_time", binaries_are_the_librarys_time, 120},
        {"detectors", detectors_fire_and_stay_silent, 180},
        {"dlopen", dlopened_opencl_is_measured, 120},
        {"binaries_traces", binaries_saved_once_and_traced_per_queue, 120},
        {"binaries_off", binaries_off, 120},
        {"no_layer", no_layer_is_unavailable_and_changes_nothing, 120},
        {"dependency_notes", dependency_notes, 120},
        {"missing_layer_named_is_said", missing_layer_named_is_said, 60},
        {"missing_layer_auto_is_said", missing_layer_auto_is_said, 60},
        {"unloadable_layer_is_said", unloadable_layer_is_said, 60},
        {"bad_idle_period_is_said", bad_idle_period_is_said, 60},
        {"good_idle_period_is_quiet", good_idle_period_is_quiet, 60},
    };
    return RUN_SUITE("opencl", cases);
}
