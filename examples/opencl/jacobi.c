/*
 * examples/opencl/jacobi.c - heat diffusion on two metal plates, solved with
 * OpenCL by two host threads, measured by libgpuprof.
 *
 * Each thread owns a plate: it sets up its device (its own context and
 * in-order queue, the program built from source), uploads the plate, runs
 * Jacobi sweeps, checks convergence every few sweeps with a reduction kernel
 * whose partial sums it reads back, then smooths the boundary on the host
 * and sends the plate back for a second round. After both threads are done,
 * the main thread analyses the plates on the CPU while the device sits idle.
 *
 * The program is written the way many real ones are, on purpose: a context
 * per thread (kernels compiled twice), in-order queues, a plate read back
 * and uploaded again, a JIT build for a single device. `make demo` runs it
 * and `gpuprof report` names each of these, with the time they cost.
 *
 *   build:  cc -O2 jacobi.c -lgpuprof -lOpenCL -lpthread -lm
 *   run:    ./jacobi [size] [sweeps]       (defaults: 256 600)
 *
 * JACOBI_UNMEASURED=1 skips gpuprof_init: the baseline `make bench` times
 * the measured program against.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <gpuprof.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program_source =
    "__kernel void jacobi(__global const float *in, __global float *out,\n"
    "                     int n)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) {\n"
    "        out[y * n + x] = in[y * n + x];\n"
    "        return;\n"
    "    }\n"
    "    out[y * n + x] = 0.25f * (in[y * n + x - 1] + in[y * n + x + 1] +\n"
    "                              in[(y - 1) * n + x] + in[(y + 1) * n + x]);\n"
    "}\n"
    "__kernel void residual(__global const float *a, __global const float *b,\n"
    "                       __global float *partial, __local float *scratch)\n"
    "{\n"
    "    size_t i = get_global_id(0), l = get_local_id(0);\n"
    "    float d = a[i] - b[i];\n"
    "    scratch[l] = d * d;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        if (l < s)\n"
    "            scratch[l] += scratch[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0)\n"
    "        partial[get_group_id(0)] = scratch[0];\n"
    "}\n";

#define GROUP 64
#define CHECK_EVERY 50

typedef struct plate {
    int id, n, sweeps;
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel jacobi, residual;
    cl_mem a, b, partial;
    float *host, *sums;
    double residual_norm;
    int ok;
} plate;

static int cl_ok(cl_int rc, const char *what, int id)
{
    if (rc == CL_SUCCESS)
        return 1;
    fprintf(stderr, "jacobi[%d]: %s failed: %d\n", id, what, rc);
    return 0;
}

/* A hot left edge, the rest at room temperature. */
static void initial_plate(float *t, int n, float hot)
{
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            t[y * n + x] = x == 0 ? hot : 20.0f;
}

static int setup_device(plate *p)
{
    cl_int rc;
    gpuprof_region_begin("setup device");
    p->ctx = clCreateContext(NULL, 1, &p->device, NULL, NULL, &rc);
    if (cl_ok(rc, "clCreateContext", p->id))
        p->q = clCreateCommandQueueWithProperties(p->ctx, p->device, NULL, &rc);
    if (p->q && cl_ok(rc, "clCreateCommandQueue", p->id))
        p->prog = clCreateProgramWithSource(p->ctx, 1, &program_source, NULL,
                                            &rc);
    if (p->prog)
        rc = clBuildProgram(p->prog, 1, &p->device, "-cl-fast-relaxed-math",
                            NULL, NULL);
    if (p->prog && cl_ok(rc, "clBuildProgram", p->id)) {
        p->jacobi = clCreateKernel(p->prog, "jacobi", &rc);
        p->residual = clCreateKernel(p->prog, "residual", &rc);
    }
    size_t bytes = (size_t)p->n * p->n * sizeof(float);
    if (p->jacobi && p->residual) {
        p->a = clCreateBuffer(p->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
        p->b = clCreateBuffer(p->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
        p->partial = clCreateBuffer(p->ctx, CL_MEM_WRITE_ONLY,
                                    bytes / GROUP, NULL, &rc);
    }
    gpuprof_region_end("setup device");
    return p->a && p->b && p->partial;
}

static void sweep(plate *p, cl_mem in, cl_mem out)
{
    size_t g[2] = {(size_t)p->n, (size_t)p->n}, l[2] = {16, 16};
    clSetKernelArg(p->jacobi, 0, sizeof(cl_mem), &in);
    clSetKernelArg(p->jacobi, 1, sizeof(cl_mem), &out);
    clSetKernelArg(p->jacobi, 2, sizeof(int), &p->n);
    clEnqueueNDRangeKernel(p->q, p->jacobi, 2, NULL, g, l, 0, NULL, NULL);
}

/* sqrt(sum (a-b)^2): partial sums on the device, the rest on the host. */
static double check_convergence(plate *p)
{
    size_t cells = (size_t)p->n * p->n, groups = cells / GROUP, l = GROUP;
    clSetKernelArg(p->residual, 0, sizeof(cl_mem), &p->a);
    clSetKernelArg(p->residual, 1, sizeof(cl_mem), &p->b);
    clSetKernelArg(p->residual, 2, sizeof(cl_mem), &p->partial);
    clSetKernelArg(p->residual, 3, GROUP * sizeof(float), NULL);
    clEnqueueNDRangeKernel(p->q, p->residual, 1, NULL, &cells, &l, 0, NULL,
                           NULL);
    clEnqueueReadBuffer(p->q, p->partial, CL_TRUE, 0, groups * sizeof(float),
                        p->sums, 0, NULL, NULL);
    double s = 0;
    for (size_t i = 0; i < groups; i++)
        s += p->sums[i];
    return sqrt(s);
}

static void relax(plate *p, int sweeps)
{
    gpuprof_region_begin("relax");
    for (int i = 0; i < sweeps; i += 2) {
        sweep(p, p->a, p->b);
        sweep(p, p->b, p->a);
        if ((i + 2) % CHECK_EVERY == 0)
            p->residual_norm = check_convergence(p);
    }
    clFinish(p->q);
    gpuprof_region_end("relax");
}

/* Insulate the bottom edge on the host: copy the row above it. */
static void smooth_boundary(plate *p)
{
    int n = p->n;
    for (int x = 1; x < n - 1; x++)
        p->host[(n - 1) * n + x] = p->host[(n - 2) * n + x];
}

static void *solve(void *arg)
{
    plate *p = arg;
    char name[32];
    snprintf(name, sizeof(name), "plate %d", p->id);
    gpuprof_thread_set_name(name);
    gpuprof_region_begin("solve");
    size_t bytes = (size_t)p->n * p->n * sizeof(float);
    if (!setup_device(p))
        goto out;
    initial_plate(p->host, p->n, 100.0f + 50.0f * p->id);
    clEnqueueWriteBuffer(p->q, p->a, CL_FALSE, 0, bytes, p->host, 0, NULL,
                         NULL);
    relax(p, p->sweeps);
    /* Round two: fetch, fix the boundary on the host, send it back. */
    gpuprof_region_begin("restart");
    clEnqueueReadBuffer(p->q, p->a, CL_TRUE, 0, bytes, p->host, 0, NULL, NULL);
    smooth_boundary(p);
    clEnqueueWriteBuffer(p->q, p->a, CL_FALSE, 0, bytes, p->host, 0, NULL,
                         NULL);
    gpuprof_region_end("restart");
    relax(p, p->sweeps / 2);
    clEnqueueReadBuffer(p->q, p->a, CL_TRUE, 0, bytes, p->host, 0, NULL, NULL);
    p->ok = 1;
out:
    gpuprof_region_end("solve");
    return NULL;
}

/* CPU-only post-processing: the device is idle all along. */
static double analyse_plates(plate *p, int np)
{
    double hot = 0;
    for (int pass = 0; pass < 40; pass++)
        for (int k = 0; k < np; k++) {
            int n = p[k].n;
            for (int i = 0; i < n * n; i++) {
                double t = p[k].host[i];
                hot += t > 60.0 ? sin(t) * sin(t) + cos(t) * cos(t) : 0.0;
            }
        }
    return hot / 40;
}

static void release(plate *p)
{
    if (p->a) clReleaseMemObject(p->a);
    if (p->b) clReleaseMemObject(p->b);
    if (p->partial) clReleaseMemObject(p->partial);
    if (p->jacobi) clReleaseKernel(p->jacobi);
    if (p->residual) clReleaseKernel(p->residual);
    if (p->prog) clReleaseProgram(p->prog);
    if (p->q) clReleaseCommandQueue(p->q);
    if (p->ctx) clReleaseContext(p->ctx);
    free(p->host);
    free(p->sums);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 256;
    int sweeps = argc > 2 ? atoi(argv[2]) : 600;
    if (n < 64 || n % 64 || sweeps < 2) {
        fprintf(stderr, "usage: jacobi [size: a multiple of 64] [sweeps >= 2]\n");
        return 2;
    }
    const char *off = getenv("JACOBI_UNMEASURED");
    gpuprof_status st = off && *off == '1' ? GPUPROF_OK : gpuprof_init(NULL);
    if (st != GPUPROF_OK)
        fprintf(stderr, "jacobi: measuring off: %s\n", gpuprof_strerror(st));

    gpuprof_region_begin("find device");
    cl_platform_id platform;
    cl_device_id device;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &platform, &np) != CL_SUCCESS || !np ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_DEFAULT, 1, &device, NULL) !=
            CL_SUCCESS) {
        fprintf(stderr, "jacobi: no OpenCL device\n");
        return 1;
    }
    char dname[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof(dname), dname, NULL);
    gpuprof_region_end("find device");

    plate p[2];
    pthread_t t[2];
    memset(p, 0, sizeof(p));
    for (int i = 0; i < 2; i++) {
        p[i].id = i;
        p[i].n = n;
        p[i].sweeps = sweeps;
        p[i].platform = platform;
        p[i].device = device;
        p[i].host = malloc((size_t)n * n * sizeof(float));
        p[i].sums = malloc((size_t)n * n / GROUP * sizeof(float));
        if (!p[i].host || !p[i].sums) {
            fprintf(stderr, "jacobi: out of memory\n");
            return 1;
        }
    }
    gpuprof_region_begin("simulate");
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, solve, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    gpuprof_region_end("simulate");

    gpuprof_region_begin("postprocess");
    double hot = analyse_plates(p, 2);
    gpuprof_region_end("postprocess");

    int ok = p[0].ok && p[1].ok;
    printf("jacobi: %dx%d plates, %d+%d sweeps on %s: residual %.3g / %.3g, "
           "%.0f hot cells\n", n, n, sweeps, sweeps / 2, dname,
           p[0].residual_norm, p[1].residual_norm, hot);
    for (int i = 0; i < 2; i++)
        release(&p[i]);
    gpuprof_finalize();
    return ok ? 0 : 1;
}
