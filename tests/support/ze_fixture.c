/*
 * ze_fixture.c - the Level Zero objects and the fake driver's ground truth
 * the suites on tests/fakeze share (ze_fixture.h).
 */
#define _GNU_SOURCE
#include "ze_fixture.h"

#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char zf_driver_path[PATH_MAX], zf_trace_path[PATH_MAX];
ze_driver_handle_t zf_drv;
ze_device_handle_t zf_dev;
ze_context_handle_t zf_ctx;
const ze_group_count_t zf_groups = {4, 1, 1};

bool zf_find_driver(const char *exe)
{
    char dir[PATH_MAX];
    if (!realpath(exe, dir))
        return false;
    snprintf(zf_driver_path, sizeof(zf_driver_path), "%s/libfakeze.so",
             dirname(dir));
    return true;
}

void zf_knobs(const char *tag)
{
    setenv("ZE_ENABLE_ALT_DRIVERS", zf_driver_path, 1);
    const char *tmp = getenv("TMPDIR");
    snprintf(zf_trace_path, sizeof(zf_trace_path), "%s/%s-%d",
             tmp ? tmp : "/tmp", tag, (int)getpid());
    unlink(zf_trace_path);
    setenv("FAKEZE_TRACE", zf_trace_path, 1);
}

void zf_open(void)
{
    uint32_t n = 1;
    ZE_OK(zeDriverGet(&n, &zf_drv));
    ck_assert_uint_eq(n, 1);
    n = 1;
    ZE_OK(zeDeviceGet(zf_drv, &n, &zf_dev));
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ZE_OK(zeContextCreate(zf_drv, &cd, &zf_ctx));
}

ze_module_handle_t zf_module(const uint8_t *bytes, size_t n)
{
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE,
                           .inputSize = n,
                           .pInputModule = bytes};
    ze_module_handle_t m;
    ZE_OK(zeModuleCreate(zf_ctx, zf_dev, &md, &m, NULL));
    return m;
}

ze_kernel_handle_t zf_kernel_in(ze_module_handle_t m, const char *name)
{
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                           .pKernelName = name};
    ze_kernel_handle_t k;
    ZE_OK(zeKernelCreate(m, &kd, &k));
    ZE_OK(zeKernelSetGroupSize(k, 64, 1, 1));
    return k;
}

ze_command_list_handle_t zf_immediate_mode(uint32_t ordinal, uint32_t index,
                                           ze_command_queue_mode_t mode)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = mode};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreateImmediate(zf_ctx, zf_dev, &qd, &l));
    return l;
}

ze_command_list_handle_t zf_immediate(uint32_t ordinal, uint32_t index)
{
    return zf_immediate_mode(ordinal, index,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
}

ze_command_queue_handle_t zf_queue(uint32_t ordinal, uint32_t index)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .ordinal = ordinal,
                                  .index = index,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_queue_handle_t q;
    ZE_OK(zeCommandQueueCreate(zf_ctx, zf_dev, &qd, &q));
    return q;
}

ze_command_list_handle_t zf_regular(uint32_t ordinal)
{
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                                 .commandQueueGroupOrdinal = ordinal};
    ze_command_list_handle_t l;
    ZE_OK(zeCommandListCreate(zf_ctx, zf_dev, &ld, &l));
    return l;
}

size_t zf_read_ops(zf_op *ops, size_t max)
{
    FILE *f = fopen(zf_trace_path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = 0;
    char line[512];
    while (n < max && fgets(line, sizeof(line), f)) {
        zf_op *o = &ops[n];
        unsigned d;
        int got = sscanf(line,
                         "op=%15s dev=%u engine=%u.%u name=%63s bytes=%zu "
                         "src=%15s dst=%15s start=%" SCNu64 " end=%" SCNu64
                         " host_start=%" SCNu64 " host_end=%" SCNu64,
                         o->kind, &d, &o->ordinal, &o->index, o->name,
                         &o->bytes, o->src, o->dst, &o->start, &o->end,
                         &o->host_start, &o->host_end);
        ck_assert_int_eq(got, 12);
        n++;
    }
    fclose(f);
    return n;
}

int64_t zf_raw_to_mono(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    return ((int64_t)a.tv_sec - b.tv_sec) * 1000000000 +
           ((int64_t)a.tv_nsec - b.tv_nsec);
}
