/*
 * hook_ir.c - the GPU API hook in instructions, for `make bench-ir`
 * (tests/bench/hook_ir.sh runs it under valgrind --tool=callgrind).
 *
 * Times on a shared 2-core machine move by tens of percent between runs;
 * instruction counts do not. Each seg_* function below runs one piece of
 * the hook K times, 30 frames deep (as bench_sim and bench_hook), and the
 * script collects instructions only inside each (callgrind's
 * --toggle-collect, on the calling thread alone), then divides by K:
 *
 *   seg_backtrace       libunwind's unw_backtrace alone (the baseline)
 *   seg_check           the loader check every capture makes first
 *                       (gpuprof__modules_check)
 *   seg_unwind          the check and the unwind (gpuprof__unwind_here)
 *   seg_path            the captured path through the thread's last-path
 *                       cache, the same path as the last
 *   seg_launch_repeat   a sim launch measured, one call site in a loop
 *   seg_launch_mixed    a sim launch measured, two call sites in turn
 *                       (of these two the script counts what
 *                       gpuprof__op_begin and _end run: the hook)
 *
 * Run alone (not under callgrind) it does the same work and says nothing:
 * the counts come from the script.
 */
#include <stdio.h>
#include <stdlib.h>

#include "backends/sim/sim.h"
#include "bench/simstart.h"
#include "core/internal.h"
#include "core/unwind.h"

#define DEPTH 30
#define K 2000

int unw_backtrace(void **buf, int size);

static gp_path_cache cache;
static void *buf[GP_MAX_FRAMES];
static int nbuf;
static volatile uint64_t sink;

__attribute__((noinline)) static void launch_at(int site)
{
    if (site)
        gpuprof__sim_kernel(1, "ir_kernel", 1000);
    else
        gpuprof__sim_kernel(1, "ir_kernel", 1000);
    __asm__ volatile("" ::: "memory");
}

typedef void (*op_fn)(int i);

static void op_backtrace(int i)
{
    (void)i;
    sink += (uint64_t)unw_backtrace(buf, GP_MAX_FRAMES);
}

static void op_check(int i)
{
    (void)i;
    sink += (uintptr_t)gpuprof__modules_check();
}

static void op_unwind(int i)
{
    (void)i;
    sink += (uint64_t)gpuprof__unwind_here(buf, GP_MAX_FRAMES);
}

static void op_path(int i)
{
    uint32_t unknown = 0;
    (void)i;
    sink += gpuprof__callpath_insert(&gpuprof__tls_self->cct, 0, buf, nbuf, 1,
                                     &unknown, &cache);
}

static void op_repeat(int i)
{
    (void)i;
    launch_at(0);
}

static void op_mixed(int i) { launch_at(i & 1); }

static __attribute__((always_inline)) inline void loop(op_fn op, int k)
{
    for (int i = 0; i < k; i++)
        op(i);
}

/* The segments the script collects in (their names are its interface). */
#define SEGMENT(name, op)                                                     \
    __attribute__((noinline)) void seg_##name(void);                          \
    void seg_##name(void) { loop(op, K); }
SEGMENT(backtrace, op_backtrace)
SEGMENT(check, op_check)
SEGMENT(unwind, op_unwind)
SEGMENT(path, op_path)
SEGMENT(launch_repeat, op_repeat)
SEGMENT(launch_mixed, op_mixed)

/* `op` warmed (caches, the path in the tree), then its segment, `d` frames
 * deeper. */
__attribute__((noinline)) static void at_depth(int d, op_fn op, void (*seg)(void))
{
    if (d > 0) {
        at_depth(d - 1, op, seg);
        __asm__ volatile("" ::: "memory");
        return;
    }
    if (op == op_path) /* this stack's path */
        nbuf = gpuprof__unwind_capture(buf, GP_MAX_FRAMES);
    loop(op, 64);
    seg();
}

int main(void)
{
    char dir[] = "/tmp/hook_ir.XXXXXX";
    if (!bench_sim_start(dir, false))
        return 1;
    static const struct {
        op_fn op;
        void (*seg)(void);
    } segs[] = {{op_backtrace, seg_backtrace}, {op_check, seg_check},
                {op_unwind, seg_unwind},       {op_repeat, seg_launch_repeat},
                {op_mixed, seg_launch_mixed},  {op_path, seg_path}};
    for (size_t s = 0; s < sizeof(segs) / sizeof(segs[0]); s++) {
        at_depth(DEPTH, segs[s].op, segs[s].seg);
        gpuprof__sim_sync();
    }
    gpuprof_finalize();
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
