/*
 * ze_fixture.h - the Level Zero objects every suite on the fake driver
 * (tests/fakeze) starts from: the driver's knobs (ZE_ENABLE_ALT_DRIVERS,
 * FAKEZE_TRACE), one driver, device and context, modules and kernels,
 * lists and queues, and the driver's own account of what ran (the
 * FAKEZE_TRACE file) read back. Level Zero and Check only (no gpuprof):
 * check_fakeze links it with the loader; check_levelzero* with
 * ze_measure.c on top. Kept out of TEST_HELPER_OBJS (tests/tests.mk), as
 * it needs the loader.
 */
#ifndef GPUPROF_TEST_ZE_FIXTURE_H
#define GPUPROF_TEST_ZE_FIXTURE_H

#include <check.h>
#include <level_zero/ze_api.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZE_OK(call) ck_assert_int_eq((call), ZE_RESULT_SUCCESS)

/* libfakeze.so beside the suite (zf_find_driver), this case's
 * FAKEZE_TRACE file (zf_knobs), and the objects zf_open made. */
extern char zf_driver_path[PATH_MAX], zf_trace_path[PATH_MAX];
extern ze_driver_handle_t zf_drv;
extern ze_device_handle_t zf_dev;
extern ze_context_handle_t zf_ctx;

/* Sets zf_driver_path to libfakeze.so in the directory of the program
 * `exe` (argv[0] or /proc/self/exe); false if that cannot be resolved. */
bool zf_find_driver(const char *exe);
/* The knobs every case starts from: the fake driver through
 * ZE_ENABLE_ALT_DRIVERS, a fresh FAKEZE_TRACE file named `tag`-<pid> in
 * $TMPDIR. A case adds its own knobs before zeInit. */
void zf_knobs(const char *tag);
/* After zeInit: the one driver, its first device, a context. */
void zf_open(void);

/* A native module of these bytes; a kernel in it (group size 64). */
ze_module_handle_t zf_module(const uint8_t *bytes, size_t n);
ze_kernel_handle_t zf_kernel_in(ze_module_handle_t m, const char *name);
/* Immediate lists (asynchronous, or in `mode`), queues and regular lists
 * on engine ordinal.index (regular lists: on group `ordinal`). */
ze_command_list_handle_t zf_immediate(uint32_t ordinal, uint32_t index);
ze_command_list_handle_t zf_immediate_mode(uint32_t ordinal, uint32_t index,
                                           ze_command_queue_mode_t mode);
ze_command_queue_handle_t zf_queue(uint32_t ordinal, uint32_t index);
ze_command_list_handle_t zf_regular(uint32_t ordinal);

/* The 4 x 1 x 1 groups every launch uses. */
extern const ze_group_count_t zf_groups;

/* One FAKEZE_TRACE line: an operation as the driver ran it (device ticks
 * and CLOCK_MONOTONIC_RAW host times). */
typedef struct zf_op {
    char kind[16], name[64], src[16], dst[16];
    unsigned ordinal, index;
    size_t bytes;
    uint64_t start, end, host_start, host_end;
} zf_op;

/* Every FAKEZE_TRACE line (at most max); how many. */
size_t zf_read_ops(zf_op *ops, size_t max);
/* CLOCK_MONOTONIC_RAW (the fake's host clock) -> CLOCK_MONOTONIC. */
int64_t zf_raw_to_mono(void);

#endif
