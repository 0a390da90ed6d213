/* examples/levelzero/vadd.cl - the kernel of vadd.c, in OpenCL C. The
 * build turns it into SPIR-V (vadd.spv), which zeModuleCreate takes:
 *   clang-15 -cl-std=CL2.0 -target spir64 -O2 -emit-llvm -c vadd.cl -o vadd.bc
 *   llvm-spirv-15 vadd.bc -o vadd.spv */
__kernel void vadd(__global const float *a, __global const float *b, __global float *c,
                   uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
}
