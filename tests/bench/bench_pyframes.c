/*
 * bench_pyframes.c - the cost of Python frames in a GPU operation's call
 * path (lib/core/pyframes.c), in an embedded CPython 3.11.
 *
 *   python_frames_cost_ns     per operation: a Python loop eight Python
 *                             functions deep calls, through ctypes (the GIL
 *                             released, as a launch through ctypes is), a C
 *                             function that takes its call path the way a
 *                             GPU hook does (gpuprof__callpath_cached into a
 *                             thread's CCT); the time per call with Python
 *                             frames on less the same with them off
 *                             (GPUPROF_PYTHON_FRAMES=0), the same run
 *   python_frames_off_op_ns   the same-run baseline: a call with them off
 *   python_frames_depth       Python frames in each path (checked: 9, the
 *                             eight functions and <module>)
 * Medians of 15 alternating runs of 20,000 calls each, in the thread's CPU
 * time.
 */
#include <Python.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "core/atomics.h"
#include "core/unwind.h"

#define N 20000
#define REPS 15

static gp_cct tree;
static gp_path_cache cache;
static uint32_t unknown, leaf;

static int op(void)
{
    leaf = gpuprof__callpath_cached(&tree, 0, 1, &unknown, &cache);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return 0;
}

/* This thread's CPU time: a shared machine's load does not move it. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run(bool on)
{
    gpuprof__pyframes_enable(on);
    double t0 = cpu_s();
    if (PyRun_SimpleString("f1(" "20000" ")"))
        return -1;
    return (cpu_s() - t0) * 1e9 / N;
}

/* Python frames between the root and `leaf`. */
static int py_depth(void)
{
    const gp_cct_dir *dir = gp_load_relaxed(&tree.dir);
    int d = 0;
    for (uint32_t n = leaf; n && n != GP_CCT_NONE;
         n = gp_cct_node(dir, n)->parent) {
        const gp_module_info *m = gpuprof__module(gp_cct_node(dir, n)->key_a);
        d += m && !strncmp(m->path, GP_PY_MODULE_PREFIX, 3);
    }
    return d;
}

int main(void)
{
    if (!gpuprof__cct_init(&tree))
        return 1;
    Py_Initialize();
    char setup[1024];
    snprintf(setup, sizeof(setup),
             "import ctypes\n"
             "op = ctypes.CFUNCTYPE(ctypes.c_int)(%llu)\n"
             "def f8(n):\n    for _ in range(n): op()\n"
             "def f7(n): f8(n)\ndef f6(n): f7(n)\ndef f5(n): f6(n)\n"
             "def f4(n): f5(n)\ndef f3(n): f4(n)\ndef f2(n): f3(n)\n"
             "def f1(n): f2(n)\n",
             (unsigned long long)(uintptr_t)op);
    if (PyRun_SimpleString(setup))
        return 1;
    run(true);
    if (!gpuprof__pyframes_active() || py_depth() != 9) {
        fprintf(stderr, "bench_pyframes: Python frames not taken (%d)\n",
                py_depth());
        return 1;
    }
    double on[REPS], off[REPS], diff[REPS];
    for (int i = 0; i < REPS; i++) {
        on[i] = run(true);
        off[i] = run(false);
        diff[i] = on[i] - off[i];
        if (getenv("BENCH_DEBUG"))
            fprintf(stderr, "%.0f %.0f\n", on[i], off[i]);
    }
    printf("BENCH python_frames_cost_ns %.1f ns\n", bench_median(diff, REPS));
    printf("BENCH python_frames_off_op_ns %.1f ns\n", bench_median(off, REPS));
    printf("BENCH python_frames_depth 9 frames\n");
    Py_FinalizeEx();
    gpuprof__cct_destroy(&tree);
    return 0;
}
