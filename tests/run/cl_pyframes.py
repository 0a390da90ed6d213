"""Python frames above GPU work (tests/scripts/python-frames.sh): on the
default OpenCL device, through ctypes (the declarations of cl_ctypes.py),
main() calls Trainer.step() from two lines; each step calls launch() three
times, which enqueues the kernel `twice`. The lines marked `# at: NAME`
are the ones the test expects in the calling contexts. Exits 0; 3 when
OpenCL fails."""
import ctypes
import sys

from cl_ctypes import SRC, cl, err, sz, vp


def launch(q, k, n):
    return cl.clEnqueueNDRangeKernel(q, k, 1, None, ctypes.byref(n), None,  # at: launch
                                     0, None, None)


class Trainer:
    def __init__(self, q, k):
        self.q, self.k, self.n = q, k, sz(1024)

    def step(self):
        for _ in range(3):
            if launch(self.q, self.k, self.n):  # at: step
                return 3
        return 0


def setup():
    plat, dev = vp(), vp()
    if cl.clGetPlatformIDs(1, ctypes.byref(plat), None) or \
            cl.clGetDeviceIDs(plat, 1, 1, ctypes.byref(dev), None):
        return None
    ctx = cl.clCreateContext(None, 1, ctypes.byref(dev), None, None,
                             ctypes.byref(err))
    q = cl.clCreateCommandQueue(ctx, dev, 0, ctypes.byref(err))
    src = ctypes.c_char_p(SRC)
    prog = cl.clCreateProgramWithSource(ctx, 1, ctypes.byref(src), None,
                                        ctypes.byref(err))
    if err.value or cl.clBuildProgram(prog, 1, ctypes.byref(dev), b"", None,
                                      None):
        return None
    k = cl.clCreateKernel(prog, b"twice", ctypes.byref(err))
    buf = cl.clCreateBuffer(ctx, 1, 1024 * 4, None, ctypes.byref(err))
    mem = vp(buf)
    cl.clSetKernelArg(k, 0, ctypes.sizeof(mem), ctypes.byref(mem))
    return q, k


def main():
    qk = setup()
    if not qk:
        return 3
    t = Trainer(*qk)
    if t.step():  # at: main1
        return 3
    if t.step():  # at: main2
        return 3
    cl.clFinish(qk[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())  # at: module
