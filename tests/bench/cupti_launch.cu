/*
 * cupti_launch.cu - what the CUPTI backend adds to a kernel launch on a
 * real GPU: cudaLaunchKernel of an empty kernel from a 30-deep call stack,
 * timed in processes measured by libgpuprof (GPUPROF_BACKENDS=cupti), in
 * processes of the same program that are not (GPUPROF_BACKENDS=none: the
 * library initialized, no backend), and in processes where a minimal CUPTI
 * tool is attached instead (`--floor`: what any tool must do -- a launch
 * callback that notes the correlation id, and kernel activity records
 * walked as they come; no unwinding, no attribution). The program runs
 * itself again as `cupti_launch --child|--floor`, alternating, PROCS times
 * each. A child times ROUNDS rounds of N launches (the launch calls only;
 * the device catches up between rounds, so the queue never fills) and
 * reports the median per launch. Figures:
 *
 *   cupti_launch_overhead_ns     what measuring adds per launch call: the
 *                                median over pairs of processes of
 *                                measured - unmeasured (the hook's unwind
 *                                of 30 frames, CUPTI's callback and record)
 *   cupti_launch_floor_ns        what the minimal tool adds, the same way:
 *                                the part of the overhead no tool avoids
 *   cupti_launch_unmeasured_ns   one launch call unmeasured (the CUDA
 *                                runtime and driver alone: the baseline)
 *   cupti_launch_overhead_ratio  median measured / median unmeasured
 *
 * PC sampling (`--work` children): WORK launches of a kernel that runs
 * about 50 us, then a device synchronization, timed whole, in processes
 * measured with GPUPROF_CUPTI_PC_SAMPLING=1 in each mode and in processes
 * measured without it:
 *
 *   pc_sampling_overhead_ratio_serialized   median sampled / unsampled
 *   pc_sampling_overhead_ratio_continuous   (goal: <= 3 x)
 *
 * Built by nvcc against the public API and CUPTI's headers (libcupti is
 * dlopened by the floor child, as libgpuprof does; make bench, when nvcc is
 * found). Without a CUDA device, or when the backend is not active, it
 * prints one "# cupti_launch: ..., skipped" line and exits 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <cupti.h>
#include <gpuprof.h>

#include "bench/bench.h"

#define DEPTH 30
#define N 1000
#define ROUNDS 21
#define PROCS 5
#define WORK 200      /* PC sampling: launches of busy per process */
#define WORK_PROCS 3

__global__ void empty_kernel(void) {}

static int launch_errors;

/* N launches from `d` frames deeper; ns per launch call. */
__attribute__((noinline)) static double launches_at(int d)
{
    if (d > 0) {
        double r = launches_at(d - 1);
        __asm__ volatile("" ::: "memory"); /* no tail call: the frames stay */
        return r;
    }
    void *args[1] = {NULL};
    double t0 = bench_now_s();
    for (int i = 0; i < N; i++)
        launch_errors += cudaLaunchKernel((const void *)empty_kernel, dim3(1),
                                          dim3(1), args, 0, 0) != cudaSuccess;
    double t1 = bench_now_s();
    return (t1 - t0) * 1e9 / N;
}

/* About 50 us of arithmetic per launch on one wave of a large grid. */
__global__ void busy(float *x, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (float)threadIdx.x;
    for (int r = 0; r < reps; r++)
        v = v * 0.9999f + 0.0001f;
    x[i] = v;
}

/* libgpuprof as GPUPROF_* says; false (and an INACTIVE line) when the
 * backend it was asked for is not active. */
static bool measured(void)
{
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        printf("INACTIVE gpuprof_init: %s\n", gpuprof_last_error());
        return false;
    }
    const char *want = getenv("GPUPROF_BACKENDS");
    char why[256] = "";
    if (want && strcmp(want, "cupti") == 0 &&
        gpuprof_backend_status("cupti", why, sizeof(why)) != GPUPROF_OK) {
        printf("INACTIVE %s\n", why[0] ? why : "not built into libgpuprof");
        return false;
    }
    return true;
}

/* ---- the minimal CUPTI tool (--floor) ---------------------------------- */
static struct {
    decltype(&cuptiSubscribe) Subscribe;
    decltype(&cuptiEnableCallback) EnableCallback;
    decltype(&cuptiActivityRegisterCallbacks) RegisterCallbacks;
    decltype(&cuptiActivityEnable) Enable;
    decltype(&cuptiActivityGetNextRecord) GetNextRecord;
    decltype(&cuptiActivityFlushAll) FlushAll;
} cu;
static volatile uint32_t last_corr;
static uint64_t kernel_records;

static void CUPTIAPI floor_callback(void *user, CUpti_CallbackDomain dom,
                                    CUpti_CallbackId id, const void *data)
{
    (void)user, (void)dom, (void)id;
    const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
    if (cb->callbackSite == CUPTI_API_ENTER)
        last_corr = cb->correlationId; /* what a tool keeps of a launch */
}

static void CUPTIAPI floor_request(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 1 << 20;
    *buf = (uint8_t *)aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI floor_complete(CUcontext ctx, uint32_t stream,
                                    uint8_t *buf, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (cu.GetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
        kernel_records += rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    free(buf);
}

static void *open_cupti(void)
{
    void *h = dlopen("libcupti.so", RTLD_NOW);
    const char *home = getenv("CUDA_HOME");
    const char *sub[] = {"extras/CUPTI/lib64", "lib64"};
    char path[4096];
    for (int i = 0; !h && i < 4; i++) {
        snprintf(path, sizeof(path), "%s/%s/libcupti.so",
                 i < 2 ? (home ? home : "/usr/local/cuda") : "/usr/local/cuda",
                 sub[i % 2]);
        h = dlopen(path, RTLD_NOW);
    }
    return h;
}

/* Attaches the minimal tool; false (and an INACTIVE line) when it cannot. */
static bool floor_tool(void)
{
    void *h = open_cupti();
    if (!h) {
        printf("INACTIVE no libcupti.so for the floor tool\n");
        return false;
    }
    *(void **)&cu.Subscribe = dlsym(h, "cuptiSubscribe");
    *(void **)&cu.EnableCallback = dlsym(h, "cuptiEnableCallback");
    *(void **)&cu.RegisterCallbacks = dlsym(h, "cuptiActivityRegisterCallbacks");
    *(void **)&cu.Enable = dlsym(h, "cuptiActivityEnable");
    *(void **)&cu.GetNextRecord = dlsym(h, "cuptiActivityGetNextRecord");
    *(void **)&cu.FlushAll = dlsym(h, "cuptiActivityFlushAll");
    CUpti_SubscriberHandle sub;
    if (!cu.Subscribe || !cu.EnableCallback || !cu.RegisterCallbacks ||
        !cu.Enable || !cu.GetNextRecord || !cu.FlushAll ||
        cu.Subscribe(&sub, floor_callback, NULL) != CUPTI_SUCCESS ||
        cu.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) !=
            CUPTI_SUCCESS ||
        cu.RegisterCallbacks(floor_request, floor_complete) != CUPTI_SUCCESS ||
        cu.Enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        printf("INACTIVE the floor tool could not attach to CUPTI\n");
        return false;
    }
    return true;
}

/* --work: WORK launches of busy and a synchronization, timed whole; prints
 * "NS <ns>". */
static int work_child(void)
{
    if (!measured())
        return 0;
    float *x;
    int blocks = 1024, threads = 256;
    if (cudaMalloc(&x, sizeof(float) * blocks * threads) != cudaSuccess)
        return 1;
    busy<<<blocks, threads>>>(x, 20000); /* warm: the module loads */
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    double t0 = bench_now_s();
    for (int i = 0; i < WORK; i++)
        busy<<<blocks, threads>>>(x, 20000);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    printf("NS %.0f\n", (bench_now_s() - t0) * 1e9);
    cudaFree(x);
    gpuprof_finalize();
    return 0;
}

/* One measured, unmeasured or floor process: prints "NS <median ns per
 * launch>", or "INACTIVE <why>" when what it was asked for is not there. */
static int child(bool floor)
{
    if (floor ? !floor_tool() : !measured())
        return 0;
    if (cudaFree(0) != cudaSuccess) /* the context, before timing */
        return 1;
    launches_at(DEPTH); /* warm: the module loads on the first launch */
    cudaDeviceSynchronize();
    double ns[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        ns[r] = launches_at(DEPTH);
        if (cudaDeviceSynchronize() != cudaSuccess || launch_errors)
            return 1;
    }
    printf("NS %.1f\n", bench_median(ns, ROUNDS));
    if (floor)
        cu.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    else
        gpuprof_finalize();
    return 0;
}

/* Runs `exe mode` with GPUPROF_BACKENDS=backends and, when pcs is not
 * NULL, PC sampling in that mode; its figure in *ns, or its reason in why
 * (returns 1) or a failure (returns -1). */
static int run_as(const char *exe, const char *mode, const char *backends,
                  const char *pcs, double *ns, char *why, size_t why_size)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("GPUPROF_BACKENDS", backends, 1);
        if (pcs) {
            setenv("GPUPROF_CUPTI_PC_SAMPLING", "1", 1);
            setenv("GPUPROF_CUPTI_PC_SAMPLING_MODE", pcs, 1);
        }
        execl(exe, exe, mode, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[512] = "";
    FILE *f = fdopen(fd[0], "r");
    if (!f || !fgets(line, sizeof(line), f))
        line[0] = '\0';
    if (f)
        fclose(f);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "INACTIVE ", 9) == 0) {
        snprintf(why, why_size, "%s", line + 9);
        return 1;
    }
    return sscanf(line, "NS %lf", ns) == 1 ? 0 : -1;
}

static int run_child(const char *exe, const char *backends, double *ns,
                     char *why, size_t why_size)
{
    return run_as(exe, "--child", backends, NULL, ns, why, why_size);
}

/* The PC sampling figures; 0, or a child's failure. */
static int pcs_bench(const char *exe)
{
    double off[WORK_PROCS], ser[WORK_PROCS], con[WORK_PROCS];
    char why[512];
    int st = 0;
    for (int p = 0; p < WORK_PROCS && st == 0; p++) {
        st = run_as(exe, "--work", "cupti", NULL, &off[p], why, sizeof(why));
        if (st == 0)
            st = run_as(exe, "--work", "cupti", "serialized", &ser[p], why,
                        sizeof(why));
        if (st == 0)
            st = run_as(exe, "--work", "cupti", "continuous", &con[p], why,
                        sizeof(why));
    }
    if (st == 1) {
        printf("# pc_sampling: %s, skipped\n", why);
        return 0;
    }
    if (st != 0)
        return st;
    double m = bench_median(off, WORK_PROCS);
    printf("# pc_sampling: %d launches of busy, %.2f ms unsampled\n", WORK,
           m / 1e6);
    printf("BENCH pc_sampling_overhead_ratio_serialized %.2f x\n",
           bench_median(ser, WORK_PROCS) / m);
    printf("BENCH pc_sampling_overhead_ratio_continuous %.2f x\n",
           bench_median(con, WORK_PROCS) / m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child(false);
    if (argc > 1 && strcmp(argv[1], "--floor") == 0)
        return child(true);
    if (argc > 1 && strcmp(argv[1], "--work") == 0)
        return work_child();
    int devices = 0;
    cudaError_t rc = cudaGetDeviceCount(&devices);
    if (rc != cudaSuccess || devices == 0) {
        printf("# cupti_launch: no CUDA device (%s), skipped\n",
               rc != cudaSuccess ? cudaGetErrorString(rc) : "none found");
        return 0;
    }
    char exe[4096], outdir[] = "/tmp/gpuprof-bench-cupti.XXXXXX";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0 || !mkdtemp(outdir))
        return 1;
    exe[n] = '\0';
    setenv("GPUPROF_OUTPUT", outdir, 1);
    double on[PROCS], off[PROCS], fl[PROCS], diff[PROCS], fdiff[PROCS];
    char why[512]; /* a child's line, less its first word */
    int st = 0, fst = 0;
    for (int p = 0; p < PROCS && st == 0; p++) {
        st = run_child(exe, "cupti", &on[p], why, sizeof(why));
        if (st == 0)
            st = run_child(exe, "none", &off[p], why, sizeof(why));
        if (st == 0 && fst == 0)
            fst = run_as(exe, "--floor", "none", NULL, &fl[p], why,
                         sizeof(why));
        if (st == 0) {
            diff[p] = on[p] - off[p];
            fdiff[p] = fl[p] - off[p];
        }
    }
    if (st == 0)
        st = pcs_bench(exe);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cupti_launch: could not remove %s\n", outdir);
    if (st == 1) {
        printf("# cupti_launch: backend cupti not active (%s), skipped\n", why);
        return 0;
    }
    if (st != 0) {
        fprintf(stderr, "cupti_launch: a child process failed\n");
        return 1;
    }
    double d = bench_median(diff, PROCS), m_on = bench_median(on, PROCS),
           m_off = bench_median(off, PROCS);
    printf("BENCH cupti_launch_overhead_ns %.0f ns\n", d < 0 ? 0 : d);
    if (fst == 0) {
        double f = bench_median(fdiff, PROCS);
        printf("BENCH cupti_launch_floor_ns %.0f ns\n", f < 0 ? 0 : f);
    } else {
        printf("# cupti_launch_floor_ns: %s, skipped\n",
               fst == 1 ? why : "the floor child failed");
    }
    printf("BENCH cupti_launch_unmeasured_ns %.0f ns\n", m_off);
    printf("BENCH cupti_launch_overhead_ratio %.2f x\n", m_on / m_off);
    return 0;
}
