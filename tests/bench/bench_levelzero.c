/*
 * bench_levelzero.c - the cost of measuring Level Zero kernel appends, on
 * the real loader and tracing layer with the fake driver (tests/fakeze,
 * kernels of 1 ns, so the device never holds the host back).
 *
 * A round appends N kernel launches to an immediate command list from a
 * 30-deep stack, the last with the program's event, and waits for that
 * event: the per-append time covers the call and its completion (our
 * event, the call path, settling, submitting). Rounds alternate measuring
 * and paused (the layer still calls us; we return at once); the same
 * rounds run in a child process of this program that never calls
 * gpuprof_init (no tracing layer: the program as it is). Medians over
 * rounds:
 *
 *   l0_append_overhead_ns    measured minus unmeasured, per append
 *   l0_append_unmeasured_ns  one append and its completion, no gpuprof
 *   l0_append_ratio          measured / unmeasured
 *   l0_append_paused_ns      one append while paused (the layer's cost)
 *
 * A second kind of round executes a closed regular list of two kernels
 * (20 us each, so the runs pile up on the device and each execute finds
 * the previous run unread: the harvest path) E times on one queue from the
 * same stack, timing the executes only, then synchronizes the queue:
 *
 *   l0_execute_overhead_ns   measured minus unmeasured, per execute
 *   l0_execute_unmeasured_ns one execute, no gpuprof
 *   l0_execute_ratio         measured / unmeasured
 *
 * Without the fake driver (no Level Zero headers at build) it is not built.
 */
#define _GNU_SOURCE
#include <level_zero/ze_api.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "core/internal.h"

#define DEPTH 30
#define N 2000
#define REPS 15

static ze_context_handle_t ctx;
static ze_command_list_handle_t list;
static ze_kernel_handle_t kern;
static ze_event_handle_t done;
static ze_command_queue_handle_t queue;
static ze_command_list_handle_t reglist;
#define E 400
static const ze_group_count_t groups = {1, 1, 1};

__attribute__((noinline)) static double appends_at(int d)
{
    if (d > 0) {
        double r = appends_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    zeEventHostReset(done);
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++)
        zeCommandListAppendLaunchKernel(list, kern, &groups,
                                        i == N - 1 ? done : NULL, 0, NULL);
    zeEventHostSynchronize(done, UINT64_MAX);
    return (bench_now_s() - t0) * 1e9 / N;
}

__attribute__((noinline)) static double executes_at(int d)
{
    if (d > 0) {
        double r = executes_at(d - 1);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < E; i++)
        zeCommandQueueExecuteCommandLists(queue, 1, &reglist, NULL);
    double t = (bench_now_s() - t0) * 1e9 / E;
    zeCommandQueueSynchronize(queue, UINT64_MAX);
    return t;
}

/* The queue and the regular list of two 20 us kernels. */
static int open_regular(ze_device_handle_t dev, ze_module_handle_t m)
{
    ze_command_queue_desc_t qd = {.stype =
                                      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = "busy"};
    ze_kernel_handle_t k;
    if (zeCommandQueueCreate(ctx, dev, &qd, &queue) ||
        zeCommandListCreate(ctx, dev, &ld, &reglist) ||
        zeKernelCreate(m, &kd, &k))
        return -1;
    for (int i = 0; i < 2; i++)
        if (zeCommandListAppendLaunchKernel(reglist, k, &groups, NULL, 0,
                                            NULL))
            return -1;
    if (zeCommandListClose(reglist))
        return -1;
    executes_at(DEPTH); /* warm */
    return 0;
}

static int open_device(void)
{
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    uint32_t n = 1;
    if (zeInit(ZE_INIT_FLAG_GPU_ONLY) || zeDriverGet(&n, &drv) || !n)
        return -1;
    n = 1;
    if (zeDeviceGet(drv, &n, &dev) || !n)
        return -1;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_command_queue_desc_t qd = {.stype =
                                      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
    static const uint8_t bin[] = "bench module";
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE,
                           .inputSize = sizeof(bin),
                           .pInputModule = bin};
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = "nop"};
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = 1};
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
    ze_module_handle_t m;
    ze_event_pool_handle_t pool;
    if (zeContextCreate(drv, &cd, &ctx) ||
        zeCommandListCreateImmediate(ctx, dev, &qd, &list) ||
        zeModuleCreate(ctx, dev, &md, &m, NULL) ||
        zeKernelCreate(m, &kd, &kern) ||
        zeEventPoolCreate(ctx, &pd, 1, &dev, &pool) ||
        zeEventCreate(pool, &ed, &done) || open_regular(dev, m))
        return -1;
    appends_at(DEPTH); /* warm */
    return 0;
}

/* The child: the same rounds without gpuprof; prints its median. */
static int plain(void)
{
    if (open_device())
        return 1;
    double v[REPS], x[REPS];
    for (int r = 0; r < REPS; r++) {
        v[r] = appends_at(DEPTH);
        x[r] = executes_at(DEPTH);
    }
    printf("%.3f %.3f\n", bench_median(v, REPS), bench_median(x, REPS));
    return 0;
}

static double run_plain(const char *self, double *xbase)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "'%s' --plain", self);
    FILE *f = popen(cmd, "r");
    double v = -1;
    if (!f || fscanf(f, "%lf %lf", &v, xbase) != 2)
        v = -1;
    if (f)
        pclose(f);
    return v;
}

int main(int argc, char **argv)
{
    char exe[PATH_MAX], drv[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", exe);
    snprintf(drv, sizeof(drv), "%s/../tests/libfakeze.so", dirname(dir));
    setenv("ZE_ENABLE_ALT_DRIVERS", drv, 1);
    setenv("FAKEZE_KERNEL_NS", "1", 1);
    setenv("FAKEZE_KERNELS", "busy=20000", 1);
    unsetenv("FAKEZE_TRACE");
    if (argc > 1 && !strcmp(argv[1], "--plain"))
        return plain();
    double xbase = -1, base = run_plain(exe, &xbase);
    char outdir[] = "/tmp/gpuprof-bench-l0.XXXXXX";
    if (!mkdtemp(outdir))
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "levelzero";
    o.signals = 0;
    if (base <= 0 || gpuprof_init(&o) != GPUPROF_OK ||
        gpuprof_backend_status("levelzero", NULL, 0) != GPUPROF_OK ||
        open_device()) {
        printf("# bench_levelzero: no Level Zero backend or fake driver "
               "here, skipped\n");
        return 0;
    }
    double on[REPS], paused[REPS], xon[REPS];
    for (int r = 0; r < REPS; r++) {
        gpuprof_start();
        on[r] = appends_at(DEPTH);
        xon[r] = executes_at(DEPTH);
        gpuprof_stop();
        paused[r] = appends_at(DEPTH);
    }
    gpuprof_start();
    double m = bench_median(on, REPS);
    printf("BENCH l0_append_overhead_ns %.0f ns\n", m > base ? m - base : 0);
    printf("BENCH l0_append_unmeasured_ns %.0f ns\n", base);
    printf("BENCH l0_append_ratio %.2f x\n", m / base);
    printf("BENCH l0_append_paused_ns %.0f ns\n", bench_median(paused, REPS));
    double xm = bench_median(xon, REPS);
    printf("BENCH l0_execute_overhead_ns %.0f ns\n",
           xm > xbase ? xm - xbase : 0);
    printf("BENCH l0_execute_unmeasured_ns %.0f ns\n", xbase);
    printf("BENCH l0_execute_ratio %.2f x\n", xm / xbase);
    gpuprof_finalize();
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
    return system(cmd) == 0 ? 0 : 0;
}
