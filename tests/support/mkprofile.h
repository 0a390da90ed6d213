/*
 * mkprofile.h - build profiles by hand for tests, through lib/io only.
 *
 * A test describes threads and region trees with known values; the builder
 * produces the gpuprof__io_profile (and file) that libgpuprof would write,
 * so the reader, the analysis and the command can be checked against
 * numbers the test knows in advance.
 */
#ifndef GPUPROF_TEST_MKPROFILE_H
#define GPUPROF_TEST_MKPROFILE_H

#include <stdint.h>

#include "io/io.h"

/* Metric indices the builder's profiles have. */
enum { TP_VISITS = 0, TP_INCL = 1, TP_EXCL = 2, TP_RATIO = 3 /* f64 */ };

typedef struct tp_builder tp_builder;

tp_builder *tp_new(const char *host, uint32_t pid, int32_t rank);
/* Starts a new thread (its root is node 0); returns its index. */
uint32_t tp_thread(tp_builder *b, const char *name, uint32_t flags);
/* Adds a region beneath `parent` (relative to the current thread; 0 is the
 * root) and returns its relative index. Zero values are not stored. */
uint32_t tp_region(tp_builder *b, uint32_t parent, const char *name,
                   uint64_t visits, uint64_t incl, uint64_t excl);
/* Nodes that are not regions, beneath `parent` of the current thread; they
 * carry no values. A module (load module or GPU binary) is added once with
 * tp_module and referred to by the index it returns. */
uint32_t tp_module(tp_builder *b, const char *path);
/* A GPU binary (module flag GPUPROF_IO_MODULE_GPU). */
uint32_t tp_gpu_module(tp_builder *b, const char *path);
uint32_t tp_frame(tp_builder *b, uint32_t parent, uint32_t module,
                  uint64_t offset);
uint32_t tp_kernel(tp_builder *b, uint32_t parent, const char *name,
                   uint32_t binary);
uint32_t tp_gpu_op(tp_builder *b, uint32_t parent, uint32_t op_kind);
uint32_t tp_gpu_instr(tp_builder *b, uint32_t parent, uint32_t binary,
                      uint64_t offset);
void tp_flags(tp_builder *b, uint32_t node, uint8_t flags);
/* Adds a value of metric TP_* (raw bits; TP_RATIO is an f64) to the node
 * created last; values of one node in ascending metric order. */
void tp_value(tp_builder *b, uint32_t metric, uint64_t bits);
/* Adds a u64 sum metric named `name` (unit GPUPROF_IO_UNIT_*, kind
 * GPUPROF_IO_KIND_*) to the metric table; returns its index. Add metrics
 * before tp_reverse_metrics. */
uint32_t tp_metric(tp_builder *b, const char *name, uint8_t unit, uint8_t kind);
/* Format 1.2: how metric `metric` combines (GPUPROF_IO_SUM/_MAX), its
 * GPUPROF_IO_METRIC_* flags and, for an odd sum, its count metric's name
 * (NULL: none). */
void tp_metric_ext(tp_builder *b, uint32_t metric, uint8_t combine,
                   uint32_t flags, const char *count_metric);
/* Empties the metric table, so that the profile has only the metrics
 * added with tp_metric afterwards (indices from 0); before any value is
 * added, and tp_region's visits and times must then be 0. */
void tp_clear_metrics(tp_builder *b);
/* Adds `bits` to metric `metric` of node `node` (relative to the current
 * thread), at any time: the node's value of that metric is created or
 * increased, the node's values kept in ascending metric order. */
void tp_node_value(tp_builder *b, uint32_t node, uint32_t metric,
                   uint64_t bits);
/* Adds an f64 metric value to a node (for round trips). */
void tp_ratio(tp_builder *b, uint32_t node, double v);
void tp_counter(tp_builder *b, const char *name, uint64_t value);
/* Format 1.3: an attribute of device `device` of `api` (DEVICES): the
 * string `text`, or the number `value` when text is NULL. */
void tp_device_attr(tp_builder *b, const char *api, uint32_t device,
                    const char *key, const char *text, uint64_t value);
/* Reverses the order of the metric table (values follow), so readers are
 * seen to find metrics by name; TP_* indices no longer hold afterwards. */
void tp_reverse_metrics(tp_builder *b);
void tp_times(tp_builder *b, uint64_t start_ns, uint64_t end_ns,
              uint64_t realtime_ns, uint64_t generation, uint32_t flags);
/* The profile (owned by the builder; valid until tp_free). */
const gpuprof__io_profile *tp_profile(tp_builder *b);
/* Encodes at zstd `level` and writes atomically; 0 on success. */
int tp_write(tp_builder *b, const char *path, int level);
void tp_free(tp_builder *b);

#endif
