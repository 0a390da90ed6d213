/*
 * examples/levelzero/vadd.c - the smallest Level Zero program measured by
 * libgpuprof: c = a + b on the first GPU, a known number of times.
 *
 * Copy from here: call gpuprof_init first thing in main, before zeInit
 * (the levelzero backend observes the calls through the loader's tracing
 * layer, which must be enabled before zeInit), put user regions around the
 * phases you care about, and call gpuprof_finalize after the last GPU work
 * has finished.
 *
 *   build:  cc -O2 -g vadd.c -lgpuprof -lze_loader
 *           clang-15 -cl-std=CL2.0 -target spir64 -O2 -emit-llvm -c vadd.cl -o
 * vadd.bc llvm-spirv-15 vadd.bc -o vadd.spv run:    ./a.out [vadd.spv]
 * (default: vadd.spv beside the program) gpuprof report
 * gpuprof-a.out-measurements
 *
 * What it does: copies a and b to device memory, launches vadd LAUNCHES
 * times on one regular command list (each launch signals a kernel-timestamp
 * event), copies c back, runs the list on a command queue and waits on the
 * last copy's event. It prints each launch's device time from the kernel
 * timestamps (32-bit, so the difference is taken modulo 2^validBits, and
 * converted with the device's timer frequency).
 *
 * On a real GPU it checks c against a + b and exits 1 if any element is
 * wrong. On the test tree's fake driver (tests/fakeze, device name
 * "fakeze ...") kernels take time but compute nothing, so the check is
 * skipped and says so ("RESULT unchecked"); copies are real there.
 *
 * Lines it prints (for people and for tests):
 *   BACKEND levelzero active | unavailable <why> | absent | off
 *   DEVICE <name>
 *   KERNEL vadd launches <n> device_ns <ns of each, comma separated>
 *   RESULT ok | wrong <index> <got> <want> | unchecked (fake driver)
 */
#include <gpuprof.h>
#include <level_zero/ze_api.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N (1u << 20)
#define LAUNCHES 4

#define ZE(call)                                                               \
    do {                                                                       \
        ze_result_t r_ = (call);                                               \
        if (r_ != ZE_RESULT_SUCCESS) {                                         \
            fprintf(stderr, "vadd: %s failed: 0x%x\n", #call, (unsigned)r_);   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* Whether the levelzero backend measures this run, in one line. */
static void print_backend(void)
{
    char why[256] = "";
    gpuprof_status st = gpuprof_backend_status("levelzero", why, sizeof why);
    if (st == GPUPROF_OK)
        printf("BACKEND levelzero active\n");
    else if (st == GPUPROF_E_UNAVAILABLE)
        printf("BACKEND levelzero unavailable %s\n", why);
    else if (st == GPUPROF_E_NOTFOUND)
        printf("BACKEND levelzero absent\n");
    else
        printf("BACKEND levelzero off\n");
}

/* The whole file; NULL (and a message) if it cannot be read. */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return NULL;
    }
    unsigned char *buf = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len)) != NULL &&
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf == NULL)
        fprintf(stderr, "vadd: cannot read %s\n", path);
    *size = (size_t)len;
    return buf;
}

/* The first GPU of the first driver that has one. */
static void find_gpu(ze_driver_handle_t *drv, ze_device_handle_t *dev)
{
    uint32_t nd = 0;
    ZE(zeDriverGet(&nd, NULL));
    ze_driver_handle_t drivers[8];
    nd = nd > 8 ? 8 : nd;
    ZE(zeDriverGet(&nd, drivers));
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t n = 1;
        if (zeDeviceGet(drivers[i], &n, dev) == ZE_RESULT_SUCCESS && n == 1) {
            *drv = drivers[i];
            return;
        }
    }
    fprintf(stderr, "vadd: no Level Zero device\n");
    exit(2);
}

static ze_kernel_handle_t load_kernel(ze_context_handle_t ctx,
                                      ze_device_handle_t dev,
                                      const char *spv_path)
{
    size_t size;
    unsigned char *spv = read_file(spv_path, &size);
    if (spv == NULL)
        exit(2);
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_IL_SPIRV,
                           .inputSize = size,
                           .pInputModule = spv};
    ze_module_handle_t module;
    ze_module_build_log_handle_t log;
    ze_result_t r = zeModuleCreate(ctx, dev, &md, &module, &log);
    if (r != ZE_RESULT_SUCCESS) {
        char text[4096] = "";
        size_t len = sizeof text;
        zeModuleBuildLogGetString(log, &len, text);
        fprintf(stderr, "vadd: zeModuleCreate: 0x%x\n%s\n", (unsigned)r, text);
        exit(1);
    }
    zeModuleBuildLogDestroy(log);
    free(spv);
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = "vadd"};
    ze_kernel_handle_t kernel;
    ZE(zeKernelCreate(module, &kd, &kernel));
    return kernel;
}

struct buffers {
    float *a, *b, *c;   /* host */
    void *da, *db, *dc; /* device */
};

static void alloc_buffers(ze_context_handle_t ctx, ze_device_handle_t dev,
                          struct buffers *m)
{
    ze_host_mem_alloc_desc_t hd = {.stype =
                                       ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_device_mem_alloc_desc_t dd = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    size_t bytes = N * sizeof(float);
    ZE(zeMemAllocHost(ctx, &hd, bytes, 64, (void **)&m->a));
    ZE(zeMemAllocHost(ctx, &hd, bytes, 64, (void **)&m->b));
    ZE(zeMemAllocHost(ctx, &hd, bytes, 64, (void **)&m->c));
    ZE(zeMemAllocDevice(ctx, &dd, bytes, 64, dev, &m->da));
    ZE(zeMemAllocDevice(ctx, &dd, bytes, 64, dev, &m->db));
    ZE(zeMemAllocDevice(ctx, &dd, bytes, 64, dev, &m->dc));
    for (uint32_t i = 0; i < N; i++) {
        m->a[i] = (float)i;
        m->b[i] = 2.0f * (float)i;
        m->c[i] = -1.0f;
    }
}

/* Records: a, b to the device; LAUNCHES kernels, each signalling
 * events[i]; c back, signalling events[LAUNCHES]. Barriers order them. */
static void record(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                   const struct buffers *m, ze_event_handle_t *events)
{
    size_t bytes = N * sizeof(float);
    uint32_t gx, gy, gz;
    uint32_t n = N;
    ZE(zeKernelSuggestGroupSize(kernel, N, 1, 1, &gx, &gy, &gz));
    ZE(zeKernelSetGroupSize(kernel, gx, 1, 1));
    ZE(zeKernelSetArgumentValue(kernel, 0, sizeof m->da, &m->da));
    ZE(zeKernelSetArgumentValue(kernel, 1, sizeof m->db, &m->db));
    ZE(zeKernelSetArgumentValue(kernel, 2, sizeof m->dc, &m->dc));
    ZE(zeKernelSetArgumentValue(kernel, 3, sizeof n, &n));
    ze_group_count_t groups = {N / gx, 1, 1};
    ZE(zeCommandListAppendMemoryCopy(list, m->da, m->a, bytes, NULL, 0, NULL));
    ZE(zeCommandListAppendMemoryCopy(list, m->db, m->b, bytes, NULL, 0, NULL));
    ZE(zeCommandListAppendBarrier(list, NULL, 0, NULL));
    for (int i = 0; i < LAUNCHES; i++) {
        ZE(zeCommandListAppendLaunchKernel(list, kernel, &groups, events[i], 0,
                                           NULL));
        ZE(zeCommandListAppendBarrier(list, NULL, 0, NULL));
    }
    ZE(zeCommandListAppendMemoryCopy(list, m->c, m->dc, bytes, events[LAUNCHES],
                                     0, NULL));
    ZE(zeCommandListClose(list));
}

/* Device time of one kernel from its timestamps: the counters have
 * kernelTimestampValidBits bits and wrap, so the difference is taken
 * modulo 2^bits; ticks -> ns with the timer frequency (cycles/s). */
static uint64_t kernel_ns(ze_event_handle_t ev, const ze_device_properties_t *p)
{
    ze_kernel_timestamp_result_t ts;
    ZE(zeEventQueryKernelTimestamp(ev, &ts));
    uint64_t mask = p->kernelTimestampValidBits >= 64
                        ? UINT64_MAX
                        : (1ull << p->kernelTimestampValidBits) - 1;
    uint64_t ticks = (ts.global.kernelEnd - ts.global.kernelStart) & mask;
    return (uint64_t)((double)ticks * 1e9 / (double)p->timerResolution + 0.5);
}

static int check_result(const struct buffers *m, bool fake)
{
    if (fake) {
        printf("RESULT unchecked (fake driver: kernels compute nothing)\n");
        return 0;
    }
    for (uint32_t i = 0; i < N; i++) {
        float want = m->a[i] + m->b[i];
        if (m->c[i] != want) {
            printf("RESULT wrong %u %g %g\n", i, (double)m->c[i], (double)want);
            return 1;
        }
    }
    printf("RESULT ok\n");
    return 0;
}

static void default_spv(char *path, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(path, size, "%s/vadd.spv", n > 0 ? dirname(exe) : ".");
}

int main(int argc, char **argv)
{
    gpuprof_status st = gpuprof_init(NULL);
    if (st != GPUPROF_OK)
        fprintf(stderr, "vadd: measuring off: %s\n", gpuprof_strerror(st));
    print_backend();
    char spv_path[PATH_MAX];
    if (argc > 1)
        snprintf(spv_path, sizeof spv_path, "%s", argv[1]);
    else
        default_spv(spv_path, sizeof spv_path);

    gpuprof_region_begin("setup");
    ze_result_t r = zeInit(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        fprintf(stderr, "vadd: zeInit: 0x%x (no Level Zero GPU driver)\n",
                (unsigned)r);
        gpuprof_finalize();
        return 2;
    }
    ze_driver_handle_t drv;
    ze_device_handle_t dev;
    find_gpu(&drv, &dev);
    ze_device_properties_t props = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2};
    ZE(zeDeviceGetProperties(dev, &props));
    printf("DEVICE %s\n", props.name);
    bool fake = strncmp(props.name, "fakeze", 6) == 0;
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_context_handle_t ctx;
    ZE(zeContextCreate(drv, &cd, &ctx));
    ze_kernel_handle_t kernel = load_kernel(ctx, dev, spv_path);
    struct buffers m;
    alloc_buffers(ctx, dev, &m);
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP |
                                        ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = LAUNCHES + 1};
    ze_event_pool_handle_t pool;
    ZE(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
    ze_event_handle_t events[LAUNCHES + 1];
    for (uint32_t i = 0; i <= LAUNCHES; i++) {
        ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                              .index = i,
                              .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                              .wait = ZE_EVENT_SCOPE_FLAG_HOST};
        ZE(zeEventCreate(pool, &ed, &events[i]));
    }
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_queue_handle_t queue;
    ZE(zeCommandQueueCreate(ctx, dev, &qd, &queue));
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    ze_command_list_handle_t list;
    ZE(zeCommandListCreate(ctx, dev, &ld, &list));
    gpuprof_region_end("setup");

    gpuprof_region_begin("vadd");
    record(list, kernel, &m, events);
    ZE(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
    ZE(zeEventHostSynchronize(events[LAUNCHES], UINT64_MAX));
    gpuprof_region_end("vadd");

    printf("KERNEL vadd launches %d device_ns", LAUNCHES);
    for (int i = 0; i < LAUNCHES; i++)
        printf("%s%llu", i ? "," : " ",
               (unsigned long long)kernel_ns(events[i], &props));
    printf("\n");
    int rc = check_result(&m, fake);

    zeCommandListDestroy(list);
    zeCommandQueueDestroy(queue);
    for (uint32_t i = 0; i <= LAUNCHES; i++)
        zeEventDestroy(events[i]);
    zeEventPoolDestroy(pool);
    void *all[] = {m.a, m.b, m.c, m.da, m.db, m.dc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        zeMemFree(ctx, all[i]);
    zeKernelDestroy(kernel);
    zeContextDestroy(ctx);
    gpuprof_finalize();
    return rc;
}
