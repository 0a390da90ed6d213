/*
 * ze_pipeline.c - a Level Zero program as users write them, that never
 * calls libgpuprof, for `gpuprof run` (tests/scripts/levelzero-pipeline.sh,
 * on the fake driver of tests/fakeze).
 *
 * It finds a compute and a copy-only command-queue group
 * (zeDeviceGetCommandQueueGroupProperties), makes three immediate command
 * lists (two compute engines and the copy engine) and, ITER times: the copy
 * engine copies the input in once the host opens a gate event
 * (zeEventHostSignal), kernel `produce` on compute engine 0 waits for the
 * copy, kernel `consume` on compute engine 1 waits for `produce`, the copy
 * engine copies the result out after `consume`; the host waits for the
 * last event, checks the bytes and resets the events. Then a regular list
 * of two `step` kernels runs STEPS times on a queue before one
 * zeCommandQueueSynchronize. Exit 0; 3 when Level Zero fails, 4 on wrong
 * bytes. Kernels are native bytes (the fake driver runs any name).
 */
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITER 10
#define STEPS 25
#define BYTES 65536

#define OK(x)                                                                  \
    do {                                                                       \
        ze_result_t r_ = (x);                                                  \
        if (r_ != ZE_RESULT_SUCCESS) {                                         \
            fprintf(stderr, "ze_pipeline: %s: 0x%x\n", #x, (unsigned)r_);     \
            exit(3);                                                           \
        }                                                                      \
    } while (0)

static ze_context_handle_t ctx;
static ze_device_handle_t dev;
static const ze_group_count_t one = {1, 1, 1};

/* The ordinals of a compute group and of a copy-only group (the compute
 * one when the device has none). */
static void groups(uint32_t *compute, uint32_t *copy)
{
    uint32_t n = 0;
    OK(zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL));
    ze_command_queue_group_properties_t *g = calloc(n, sizeof(*g));
    for (uint32_t i = 0; i < n; i++)
        g[i].stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    OK(zeDeviceGetCommandQueueGroupProperties(dev, &n, g));
    *compute = *copy = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        ze_command_queue_group_property_flags_t f = g[i].flags;
        if ((f & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) &&
            *compute == UINT32_MAX)
            *compute = i;
        else if ((f & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY) &&
                 !(f & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) &&
                 *copy == UINT32_MAX)
            *copy = i;
    }
    free(g);
    if (*compute == UINT32_MAX)
        exit(3);
    if (*copy == UINT32_MAX)
        *copy = *compute;
}

static ze_command_list_handle_t immediate(uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_list_handle_t l;
    OK(zeCommandListCreateImmediate(ctx, dev, &qd, &l));
    return l;
}

static ze_kernel_handle_t kernel(ze_module_handle_t m, const char *name)
{
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = name};
    ze_kernel_handle_t k;
    OK(zeKernelCreate(m, &kd, &k));
    OK(zeKernelSetGroupSize(k, 64, 1, 1));
    return k;
}

/* The pipeline: ITER rounds over three engines, chained by events. */
static int pipeline(ze_module_handle_t m, uint32_t compute, uint32_t copy)
{
    ze_command_list_handle_t a = immediate(compute, 0),
                             b = immediate(compute, 1), c = immediate(copy, 0);
    ze_kernel_handle_t produce = kernel(m, "produce"),
                       consume = kernel(m, "consume");
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = 5};
    ze_event_pool_handle_t pool;
    OK(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
    ze_event_handle_t ev[5]; /* gate, in, produced, consumed, out */
    for (uint32_t i = 0; i < 5; i++) {
        ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                              .index = i,
                              .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                              .wait = ZE_EVENT_SCOPE_FLAG_HOST};
        OK(zeEventCreate(pool, &ed, &ev[i]));
    }
    ze_host_mem_alloc_desc_t hd = {.stype =
                                       ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_device_mem_alloc_desc_t dd = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    unsigned char *in, *out = malloc(BYTES);
    void *d;
    OK(zeMemAllocHost(ctx, &hd, BYTES, 64, (void **)&in));
    OK(zeMemAllocDevice(ctx, &dd, BYTES, 64, dev, &d));
    for (int it = 0; it < ITER; it++) {
        memset(in, it + 1, BYTES);
        OK(zeCommandListAppendMemoryCopy(c, d, in, BYTES, ev[1], 1, &ev[0]));
        OK(zeCommandListAppendLaunchKernel(a, produce, &one, ev[2], 1, &ev[1]));
        OK(zeCommandListAppendLaunchKernel(b, consume, &one, ev[3], 1, &ev[2]));
        OK(zeCommandListAppendMemoryCopy(c, out, d, BYTES, ev[4], 1, &ev[3]));
        OK(zeEventHostSignal(ev[0]));
        OK(zeEventHostSynchronize(ev[4], UINT64_MAX));
        for (int i = 0; i < BYTES; i++)
            if (out[i] != (unsigned char)(it + 1))
                return 4;
        for (int i = 0; i < 5; i++)
            OK(zeEventHostReset(ev[i]));
    }
    free(out);
    OK(zeMemFree(ctx, in));
    OK(zeMemFree(ctx, d));
    return 0;
}

/* A regular list of two kernels run STEPS times before one wait. */
static void steps(ze_module_handle_t m, uint32_t compute)
{
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                                 .commandQueueGroupOrdinal = compute};
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = compute};
    ze_command_list_handle_t l;
    ze_command_queue_handle_t q;
    ze_kernel_handle_t k = kernel(m, "step");
    OK(zeCommandListCreate(ctx, dev, &ld, &l));
    OK(zeCommandQueueCreate(ctx, dev, &qd, &q));
    OK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
    OK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
    OK(zeCommandListClose(l));
    for (int i = 0; i < STEPS; i++)
        OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
    OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    OK(zeCommandListDestroy(l));
    OK(zeCommandQueueDestroy(q));
}

int main(void)
{
    ze_driver_handle_t drv;
    uint32_t n = 1;
    OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    OK(zeDriverGet(&n, &drv));
    n = 1;
    OK(zeDeviceGet(drv, &n, &dev));
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    OK(zeContextCreate(drv, &cd, &ctx));
    static const uint8_t bin[] = "ze_pipeline kernels (native)";
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE,
                           .inputSize = sizeof(bin),
                           .pInputModule = bin};
    ze_module_handle_t m;
    OK(zeModuleCreate(ctx, dev, &md, &m, NULL));
    uint32_t compute, copy;
    groups(&compute, &copy);
    int rc = pipeline(m, compute, copy);
    if (rc == 0)
        steps(m, compute);
    OK(zeContextDestroy(ctx));
    return rc;
}
