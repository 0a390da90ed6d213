/*
 * examples/opencl/jacobi.c - heat diffusion on two metal plates, solved with
 * OpenCL by two host threads, measured by libgpuprof.
 *
 * Each thread owns a plate: it sets up its device (its own context and
 * in-order queue, the program built from source), uploads the plate, runs
 * Jacobi sweeps, checks convergence every few sweeps with a reduction kernel
 * whose partial sums it reads back. The two plates touch along an edge, and
 * a heater under them alternates: each round, the plate it heats needs all
 * the sweeps to settle and the other a quarter of them; between rounds each
 * thread reads its plate back, the two trade their shared edge at a barrier,
 * and each sends its plate back. After both threads are done, the main
 * thread analyses the plates on the CPU while the device sits idle.
 *
 * The program is written the way many real ones are, on purpose: a context
 * per thread (kernels compiled twice), in-order queues, a plate read back
 * and uploaded again, a JIT build for a single device, and a load that
 * moves between the threads from round to round (each thread is busy as
 * long as the other over the run; who holds the run up changes at each
 * barrier). `make demo` runs it and `gpuprof report` names each of these,
 * with the time they cost; with a trace (GPUPROF_TRACE=1), `gpuprof report
 * --critical-path` follows the heated plate from round to round through
 * the barrier, and `gpuprof project --speedup kernel:jacobi=2` what a
 * kernel twice as fast would give.
 *
 *   build:  cc -O2 jacobi.c -lgpuprof -lOpenCL -lpthread -lm
 *   run:    ./jacobi [size] [sweeps] [work]   (defaults: 256 600 1)
 *
 * `work` is the relaxation steps each point takes per sweep: a knob that
 * scales the jacobi kernel's arithmetic and nothing else (the same
 * launches, copies and host work), for experiments such as checking a
 * projection of the kernel made faster against a run with less work.
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
    "                     int n, int work, float damp)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) {\n"
    "        out[y * n + x] = in[y * n + x];\n"
    "        return;\n"
    "    }\n"
    "    float avg = 0.25f * (in[y * n + x - 1] + in[y * n + x + 1] +\n"
    "                         in[(y - 1) * n + x] + in[(y + 1) * n + x]);\n"
    "    float v = in[y * n + x];\n"
    "    for (int k = 0; k < work; k++) /* damp 0: v = avg at once */\n"
    "        v = avg + (v - avg) * damp;\n"
    "    out[y * n + x] = v;\n"
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
    int id, n, sweeps, work;
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel jacobi, residual;
    cl_mem a, b, partial;
    float *host, *sums;
    double residual_norm;
    int ready, ok; /* its device set up; its plate solved */
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
    float damp = 0.0f; /* a kernel argument: no compiler folds the steps */
    clSetKernelArg(p->jacobi, 0, sizeof(cl_mem), &in);
    clSetKernelArg(p->jacobi, 1, sizeof(cl_mem), &out);
    clSetKernelArg(p->jacobi, 2, sizeof(int), &p->n);
    clSetKernelArg(p->jacobi, 3, sizeof(int), &p->work);
    clSetKernelArg(p->jacobi, 4, sizeof(float), &damp);
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

/* The plates touch: plate 0's bottom edge is plate 1's top edge. Between
 * rounds each thread leaves its side of it here (round r in edge[r % 2]:
 * a thread that runs ahead into the next exchange writes the other half),
 * meets the other at the barrier, and takes the average of both sides. */
#define ROUNDS 2
static pthread_barrier_t exchange;
static float *edge[2][2]; /* [round % 2][plate]: n values */

/* One round of plate p: relax, then (but after the last) trade the edge.
 * A plate without a device still trades, so the other is not left at the
 * barrier. */
static void solve_round(plate *p, int round, size_t bytes)
{
    /* The heater under plate (round % 2): it needs every sweep to settle. */
    if (p->ready)
        relax(p, round % 2 == p->id ? p->sweeps : p->sweeps / 4);
    if (round + 1 == ROUNDS)
        return;
    gpuprof_region_begin("restart");
    if (p->ready)
        clEnqueueReadBuffer(p->q, p->a, CL_TRUE, 0, bytes, p->host, 0, NULL,
                            NULL);
    int n = p->n, mine = p->id ? 0 : n - 1; /* the row on the shared edge */
    float *side = edge[round % 2][p->id], *other = edge[round % 2][!p->id];
    memcpy(side, p->host + (size_t)mine * n, (size_t)n * sizeof(float));
    pthread_barrier_wait(&exchange);
    for (int x = 1; x < n - 1; x++)
        p->host[(size_t)mine * n + x] = 0.5f * (side[x] + other[x]);
    if (p->ready)
        clEnqueueWriteBuffer(p->q, p->a, CL_FALSE, 0, bytes, p->host, 0,
                             NULL, NULL);
    gpuprof_region_end("restart");
}

static void *solve(void *arg)
{
    plate *p = arg;
    char name[32];
    snprintf(name, sizeof(name), "plate %d", p->id);
    gpuprof_thread_set_name(name);
    gpuprof_region_begin("solve");
    size_t bytes = (size_t)p->n * p->n * sizeof(float);
    p->ready = setup_device(p);
    initial_plate(p->host, p->n, 100.0f + 50.0f * p->id);
    if (p->ready)
        clEnqueueWriteBuffer(p->q, p->a, CL_FALSE, 0, bytes, p->host, 0, NULL,
                             NULL);
    for (int round = 0; round < ROUNDS; round++)
        solve_round(p, round, bytes);
    if (p->ready)
        clEnqueueReadBuffer(p->q, p->a, CL_TRUE, 0, bytes, p->host, 0, NULL,
                            NULL);
    p->ok = p->ready;
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
    int work = argc > 3 ? atoi(argv[3]) : 1;
    if (n < 64 || n % 64 || sweeps < 8 || work < 1) {
        fprintf(stderr, "usage: jacobi [size: a multiple of 64] [sweeps >= 8] "
                        "[work >= 1]\n");
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
        p[i].work = work;
        p[i].platform = platform;
        p[i].device = device;
        p[i].host = malloc((size_t)n * n * sizeof(float));
        p[i].sums = malloc((size_t)n * n / GROUP * sizeof(float));
        edge[0][i] = malloc((size_t)n * sizeof(float));
        edge[1][i] = malloc((size_t)n * sizeof(float));
        if (!p[i].host || !p[i].sums || !edge[0][i] || !edge[1][i]) {
            fprintf(stderr, "jacobi: out of memory\n");
            return 1;
        }
    }
    gpuprof_region_begin("simulate");
    pthread_barrier_init(&exchange, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, solve, &p[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    gpuprof_region_end("simulate");

    gpuprof_region_begin("postprocess");
    double hot = analyse_plates(p, 2);
    gpuprof_region_end("postprocess");

    int ok = p[0].ok && p[1].ok;
    printf("jacobi: %dx%d plates, %d rounds of %d+%d sweeps (work %d) on %s: "
           "residual %.3g / %.3g, %.0f hot cells\n", n, n, ROUNDS, sweeps,
           sweeps / 4, work, dname, p[0].residual_norm, p[1].residual_norm,
           hot);
    pthread_barrier_destroy(&exchange);
    for (int i = 0; i < 2; i++) {
        release(&p[i]);
        free(edge[0][i]);
        free(edge[1][i]);
    }
    gpuprof_finalize();
    return ok ? 0 : 1;
}
