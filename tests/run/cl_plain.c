/*
 * cl_plain.c - an OpenCL program that never calls libgpuprof, for `gpuprof
 * run` (tests/scripts/gpuprof-run.sh): on the default device it launches
 * the kernel `scale` 5 times and `shift` 3 times, reads the result back,
 * maps the buffer once and unmaps it, checks the result and exits 0 (3
 * when OpenCL fails, 4 on a wrong result).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>

static const char *src =
    "__kernel void scale(__global float *a) { a[get_global_id(0)] *= 2.0f; }\n"
    "__kernel void shift(__global float *a) { a[get_global_id(0)] += 1.0f; }\n";

#define N 256

static int run(cl_context ctx, cl_device_id dev, cl_command_queue q)
{
    float a[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)i;
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err || clBuildProgram(p, 1, &dev, "", NULL, NULL))
        return 3;
    cl_kernel scale = clCreateKernel(p, "scale", &err);
    cl_kernel shift = clCreateKernel(p, "shift", &err);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(a), a, &err);
    if (err)
        return 3;
    clSetKernelArg(scale, 0, sizeof(m), &m);
    clSetKernelArg(shift, 0, sizeof(m), &m);
    size_t global = N;
    for (int k = 0; k < 5; k++)
        err |= clEnqueueNDRangeKernel(q, scale, 1, NULL, &global, NULL, 0,
                                      NULL, NULL);
    for (int k = 0; k < 3; k++)
        err |= clEnqueueNDRangeKernel(q, shift, 1, NULL, &global, NULL, 0,
                                      NULL, NULL);
    err |= clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof(a), a, 0, NULL, NULL);
    cl_int merr;
    float *mp = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ, 0, sizeof(a), 0,
                                  NULL, NULL, &merr);
    if (merr || !mp || mp[1] != a[1])
        return 3;
    err |= clEnqueueUnmapMemObject(q, m, mp, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(m);
    clReleaseKernel(scale);
    clReleaseKernel(shift);
    clReleaseProgram(p);
    if (err)
        return 3;
    for (int i = 0; i < N; i++)
        if (a[i] != (float)i * 32.0f + 3.0f)
            return 4;
    return 0;
}

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    if (clGetPlatformIDs(1, &plat, NULL) ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_DEFAULT, 1, &dev, NULL))
        return 3;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err)
        return 3;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    if (err)
        return 3;
    int rc = run(ctx, dev, q);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("cl_plain: %s\n", rc ? "failed" : "ok");
    return rc;
}
