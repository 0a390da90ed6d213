"""An OpenCL program in Python through ctypes that never calls libgpuprof,
for `gpuprof run` (tests/scripts/gpuprof-run.sh): on the default device it
launches the kernel `twice` 7 times, then exits with status 5 (to check the
status is kept). Exits 3 when OpenCL fails."""
import ctypes
import sys

cl = ctypes.CDLL("libOpenCL.so.1")
vp, u32, sz = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t
err = ctypes.c_int32()
for name, res, args in (
        ("clGetPlatformIDs", ctypes.c_int32, [u32, ctypes.POINTER(vp), vp]),
        ("clGetDeviceIDs", ctypes.c_int32, [vp, ctypes.c_uint64, u32,
                                            ctypes.POINTER(vp), vp]),
        ("clCreateContext", vp, [vp, u32, ctypes.POINTER(vp), vp, vp,
                                 ctypes.POINTER(ctypes.c_int32)]),
        ("clCreateCommandQueue", vp, [vp, vp, ctypes.c_uint64,
                                      ctypes.POINTER(ctypes.c_int32)]),
        ("clCreateProgramWithSource", vp, [vp, u32,
                                           ctypes.POINTER(ctypes.c_char_p),
                                           vp, ctypes.POINTER(ctypes.c_int32)]),
        ("clBuildProgram", ctypes.c_int32, [vp, u32, ctypes.POINTER(vp),
                                            ctypes.c_char_p, vp, vp]),
        ("clCreateKernel", vp, [vp, ctypes.c_char_p,
                                ctypes.POINTER(ctypes.c_int32)]),
        ("clCreateBuffer", vp, [vp, ctypes.c_uint64, sz, vp,
                                ctypes.POINTER(ctypes.c_int32)]),
        ("clSetKernelArg", ctypes.c_int32, [vp, u32, sz, vp]),
        ("clEnqueueNDRangeKernel", ctypes.c_int32, [vp, vp, u32, vp,
                                                    ctypes.POINTER(sz), vp,
                                                    u32, vp, vp]),
        ("clFinish", ctypes.c_int32, [vp])):
    f = getattr(cl, name)
    f.restype, f.argtypes = res, args

SRC = b"__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }"


def main():
    plat, dev = vp(), vp()
    if cl.clGetPlatformIDs(1, ctypes.byref(plat), None) or \
            cl.clGetDeviceIDs(plat, 1, 1, ctypes.byref(dev), None):
        return 3
    ctx = cl.clCreateContext(None, 1, ctypes.byref(dev), None, None,
                             ctypes.byref(err))
    q = cl.clCreateCommandQueue(ctx, dev, 0, ctypes.byref(err))
    src = ctypes.c_char_p(SRC)
    prog = cl.clCreateProgramWithSource(ctx, 1, ctypes.byref(src), None,
                                        ctypes.byref(err))
    if err.value or cl.clBuildProgram(prog, 1, ctypes.byref(dev), b"", None,
                                      None):
        return 3
    k = cl.clCreateKernel(prog, b"twice", ctypes.byref(err))
    buf = cl.clCreateBuffer(ctx, 1, 1024 * 4, None, ctypes.byref(err))
    mem = vp(buf)
    cl.clSetKernelArg(k, 0, ctypes.sizeof(mem), ctypes.byref(mem))
    n = sz(1024)
    for _ in range(7):
        if cl.clEnqueueNDRangeKernel(q, k, 1, None, ctypes.byref(n), None, 0,
                                     None, None):
            return 3
    cl.clFinish(q)
    return 5


if __name__ == "__main__":
    sys.exit(main())
