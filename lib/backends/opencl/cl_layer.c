/*
 * cl_layer.c - libgpuprof-cl-layer.so, the OpenCL ICD layer of libgpuprof.
 *
 * The ICD loader (ocl-icd >= 2.3, the Khronos loader) loads the libraries
 * named in OPENCL_LAYERS when a program first calls OpenCL, and puts each
 * layer's dispatch table in front of the runtime's. gpuprof_init points
 * OPENCL_LAYERS here; this file only finds the measuring library already in
 * the process (gpuprof_layer_dispatch, looked up, not linked: the layer
 * never loads a second, uninitialized copy) and hands it the table. Without
 * it, or when the OpenCL backend is not active, every call passes through
 * untouched. The backend itself is lib/backends/opencl/opencl.c.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#define CL_TARGET_OPENCL_VERSION 300
#include <dlfcn.h>
#include <string.h>

#include <CL/cl_icd.h>
#include <CL/cl_layer.h>

#define LAYER_API __attribute__((visibility("default")))

typedef const void *(*dispatch_fn)(const char *, const void *, unsigned,
                                   unsigned *);

static struct _cl_icd_dispatch passthrough;

LAYER_API cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                            size_t param_value_size,
                                            void *param_value,
                                            size_t *param_value_size_ret)
{
    static const char name[] = "libgpuprof OpenCL measurement layer";
    const void *src;
    size_t n;
    cl_layer_api_version v = CL_LAYER_API_VERSION_100;
    switch (param_name) {
    case CL_LAYER_API_VERSION:
        src = &v;
        n = sizeof(v);
        break;
    case CL_LAYER_NAME:
        src = name;
        n = sizeof(name);
        break;
    default:
        return CL_INVALID_VALUE;
    }
    if (param_value) {
        if (param_value_size < n)
            return CL_INVALID_VALUE;
        memcpy(param_value, src, n);
    }
    if (param_value_size_ret)
        *param_value_size_ret = n;
    return CL_SUCCESS;
}

LAYER_API cl_int CL_API_CALL clInitLayer(
    cl_uint num_entries, const struct _cl_icd_dispatch *target_dispatch,
    cl_uint *num_entries_ret, const struct _cl_icd_dispatch **layer_dispatch)
{
    if (!target_dispatch || !num_entries_ret || !layer_dispatch)
        return CL_INVALID_VALUE;
    dispatch_fn fn = (dispatch_fn)dlsym(RTLD_DEFAULT, "gpuprof_layer_dispatch");
    unsigned out = 0;
    const void *t = fn ? fn("opencl", target_dispatch, num_entries, &out)
                       : NULL;
    if (t) {
        *layer_dispatch = t;
        *num_entries_ret = out;
        return CL_SUCCESS;
    }
    /* Not measuring: the runtime's own entries, unchanged. */
    size_t n = num_entries * sizeof(void *);
    if (n > sizeof(passthrough))
        n = sizeof(passthrough);
    memcpy(&passthrough, target_dispatch, n);
    *layer_dispatch = &passthrough;
    *num_entries_ret = (cl_uint)(n / sizeof(void *));
    return CL_SUCCESS;
}
