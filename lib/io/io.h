/*
 * io.h - the measurement format, shared by libgpuprof (writer) and
 * libgpuprof-analysis (reader).
 *
 * One profile file per process holds every thread's calling context tree
 * (CCT) with its metrics. In memory a profile is a set of flat arrays that
 * mirror the file's sections one to one; doc/FORMATS.md specifies every
 * byte. The writer (core) fills a gpuprof__io_profile and calls
 * gpuprof__io_encode / gpuprof__io_write_atomic; the reader decodes a buffer
 * or a file into a freshly allocated profile after validating every offset,
 * size, count and checksum, so that code above this layer may trust what it
 * gets (every index is in range, every string is NUL-terminated).
 *
 * Internal: symbols carry the gpuprof__ prefix and are not exported.
 */
#ifndef GPUPROF_IO_H
#define GPUPROF_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GPUPROF_IO_MAGIC "GPUPROF\0" /* 8 bytes at offset 0 */
#define GPUPROF_IO_VERSION_MAJOR 1   /* readers reject other majors */
#define GPUPROF_IO_VERSION_MINOR 3   /* readers accept any minor */
#define GPUPROF_IO_NONE UINT32_MAX   /* "no index": a root's parent */
#define GPUPROF_IO_SUFFIX ".gpuprof" /* profile file name suffix */
#define GPUPROF_IO_DEFAULT_LEVEL 1   /* zstd level of the writer (bench_io) */

/* Node kinds (DESIGN §4). Pinned values: they are stored in files. */
enum gpuprof__io_node_kind {
    GPUPROF_IO_NODE_ROOT = 0,      /* one per thread, node 0 of the thread */
    GPUPROF_IO_NODE_REGION = 1,    /* key_a = string offset of the name */
    GPUPROF_IO_NODE_FRAME = 2,     /* key_a = module index, key_b = offset */
    GPUPROF_IO_NODE_GPU_OP = 3,    /* placeholder: key_a = op kind */
    GPUPROF_IO_NODE_KERNEL = 4,    /* key_a = string offset of kernel name,
                                      key_b = GPU binary index */
    GPUPROF_IO_NODE_GPU_INSTR = 5, /* key_a = GPU binary index, key_b = offset */
    GPUPROF_IO_NODE_KIND_COUNT = 6
};

/* Node flags (pinned bits). */
#define GPUPROF_IO_NODE_OPEN 0x01u       /* region open when written */
#define GPUPROF_IO_NODE_UNBALANCED 0x02u /* closed by a mismatched end */

/* Metric value types and how values combine (pinned). */
enum gpuprof__io_metric_type { GPUPROF_IO_U64 = 0, GPUPROF_IO_F64 = 1 };
enum gpuprof__io_combine {
    GPUPROF_IO_SUM = 0,
    GPUPROF_IO_MIN = 1,
    GPUPROF_IO_MAX = 2
};
/* Units (pinned). */
enum gpuprof__io_unit {
    GPUPROF_IO_UNIT_COUNT = 0,
    GPUPROF_IO_UNIT_NS = 1,
    GPUPROF_IO_UNIT_BYTES = 2
};
/* Metric kinds: groups of metrics a node carries together (pinned). */
enum gpuprof__io_metric_kind {
    GPUPROF_IO_KIND_REGION = 0,
    GPUPROF_IO_KIND_GPU = 1,
    GPUPROF_IO_KIND_CPU = 2,
    GPUPROF_IO_KIND_INSTR = 3 /* GPU instructions: PC samples (format 1.1) */
};

/* Thread flags (pinned bits). */
#define GPUPROF_IO_THREAD_MAIN 0x01u   /* the thread that called gpuprof_init */
#define GPUPROF_IO_THREAD_EXITED 0x02u /* exited before this generation */
#define GPUPROF_IO_THREAD_MERGED 0x04u /* the sum of exited threads */

/* Module flags (pinned bits). */
#define GPUPROF_IO_MODULE_GPU 0x01u /* a GPU binary: path is relative to the
                                       measurement directory
                                       ("binaries/<hash>.<ext>"), base is
                                       0, size its length in bytes */

/* Profile flags (pinned bits). */
#define GPUPROF_IO_PROFILE_FINAL 0x01u /* written by gpuprof_finalize */
#define GPUPROF_IO_PROFILE_FORKED 0x02u /* process is a fork child */

/* All string fields below are byte offsets into `strings`; offset 0 is the
 * empty string (strings[0] == '\0' always). */
typedef struct gpuprof__io_metric {
    uint32_t name;
    uint32_t description;
    uint8_t type;    /* gpuprof__io_metric_type */
    uint8_t combine; /* gpuprof__io_combine */
    uint8_t unit;    /* gpuprof__io_unit */
    uint8_t kind;    /* gpuprof__io_metric_kind */
    /* Format 1.2 (section METRIC_EXT; 0 in older files): */
    uint32_t flags;      /* GPUPROF_IO_METRIC_* */
    uint32_t count_name; /* ODD: string offset of the metric counting the
                            summands (the mean is this / that); else 0 */
} gpuprof__io_metric;

/* Metric flags (pinned bits; format 1.2). ODD: a sum whose mean over its
 * count metric is what means something (registers summed over launches).
 * NO_INCLUSIVE: a subtree's combined value means nothing (show exclusive
 * values only). */
#define GPUPROF_IO_METRIC_ODD 0x1u
#define GPUPROF_IO_METRIC_NO_INCLUSIVE 0x2u
#define GPUPROF_IO_METRIC_FLAGS 0x3u /* every bit this format knows */

typedef struct gpuprof__io_module { /* a CPU load module or a GPU binary */
    uint32_t path;
    uint32_t flags;
    uint64_t base;
    uint64_t size;
} gpuprof__io_module;

typedef struct gpuprof__io_thread {
    uint64_t tid;        /* OS thread id */
    uint32_t name;       /* string offset */
    uint32_t flags;      /* GPUPROF_IO_THREAD_* */
    uint32_t first_node; /* this thread's nodes: [first_node, +node_count) */
    uint32_t node_count; /* >= 1: node first_node is its ROOT */
    uint64_t start_ns;   /* first seen, process clock */
    uint64_t end_ns;     /* exit or write time */
} gpuprof__io_thread;

/* A CCT node. `parent` is relative to the thread (0 = the thread's root,
 * GPUPROF_IO_NONE only for the root) and is smaller than the node's own
 * index within the thread: parents come first. A node's values are
 * values[first_value .. first_value + value_count) -- CSR style; the file
 * stores only value_count, first_value is its running sum. */
typedef struct gpuprof__io_node {
    uint32_t parent;
    uint8_t kind;  /* gpuprof__io_node_kind */
    uint8_t flags; /* GPUPROF_IO_NODE_* */
    uint16_t value_count;
    uint32_t key_a;
    uint32_t first_value;
    uint64_t key_b;
} gpuprof__io_node;

typedef struct gpuprof__io_value { /* one non-zero metric value */
    uint32_t metric; /* index into metrics */
    uint64_t bits;   /* u64, or the IEEE-754 bits of an f64 */
} gpuprof__io_value;

typedef struct gpuprof__io_counter { /* a stats counter at write time */
    uint32_t name;
    uint64_t value;
} gpuprof__io_counter;

/* An attribute of a device (format 1.3, section DEVICES): what the
 * backend of `api` ("cuda", "levelzero", "opencl", ...) learned about the
 * device its activities number `device`, under a name (doc/FORMATS.md
 * lists them: "sm_count", "max_threads_per_sm", ...), as a number or a
 * string. */
typedef struct gpuprof__io_device_attr {
    uint32_t api;    /* string offset */
    uint32_t device; /* as gpuprof_activity.device */
    uint32_t key;    /* string offset, not "" */
    uint32_t type;   /* GPUPROF_IO_ATTR_* */
    uint64_t value;  /* a number, or a string offset (GPUPROF_IO_ATTR_STR) */
} gpuprof__io_device_attr;

/* Device attribute value types (pinned). */
enum gpuprof__io_attr_type { GPUPROF_IO_ATTR_U64 = 0, GPUPROF_IO_ATTR_STR = 1 };

typedef struct gpuprof__io_profile {
    /* identity */
    uint32_t host;    /* string offsets */
    uint32_t exe;
    uint32_t cmdline; /* arguments separated by spaces */
    uint32_t pid;
    int32_t rank;     /* -1 when unknown */
    uint32_t flags;   /* GPUPROF_IO_PROFILE_* */
    uint64_t generation;       /* 1, 2, ... per flush of this process */
    uint64_t start_ns;         /* init time, process clock (CLOCK_MONOTONIC) */
    uint64_t end_ns;           /* write time, process clock */
    uint64_t start_realtime_ns;/* CLOCK_REALTIME at start_ns */

    char *strings;
    uint64_t strings_size; /* bytes, including the final NUL */

    gpuprof__io_metric *metrics;
    uint32_t metric_count;
    gpuprof__io_module *modules;
    uint32_t module_count;
    gpuprof__io_thread *threads;
    uint32_t thread_count;
    gpuprof__io_node *nodes;
    uint32_t node_count;
    gpuprof__io_value *values;
    uint64_t value_count;
    gpuprof__io_counter *counters;
    uint32_t counter_count;
    /* Format 1.3 (section DEVICES; none in older files). */
    gpuprof__io_device_attr *devattrs;
    uint32_t devattr_count;
    /* Reader side: the file's format minor version (a newer file's content
     * this reader cannot interpret is refused naming both versions); the
     * writer ignores it. */
    uint16_t format_minor;
} gpuprof__io_profile;

/* ---- String table builder (writer side) --------------------------------
 * Interns strings into one growing buffer; equal strings get one offset.
 * Offset 0 is "". Not thread-safe: one builder per writer. */
typedef struct gpuprof__io_strtab gpuprof__io_strtab;
gpuprof__io_strtab *gpuprof__io_strtab_new(void);
/* Returns the offset of `s`, or UINT32_MAX when out of memory. */
uint32_t gpuprof__io_strtab_add(gpuprof__io_strtab *t, const char *s);
/* The buffer and its size; owned by the builder. */
const char *gpuprof__io_strtab_data(const gpuprof__io_strtab *t,
                                    uint64_t *size);
void gpuprof__io_strtab_free(gpuprof__io_strtab *t);

/* ---- Encoding and decoding ---------------------------------------------
 * Errors return a negative errno-style code or one of these, and write a
 * one-line English message (without the file name) into err[0..errsize). */
enum gpuprof__io_err {
    GPUPROF_IO_OK = 0,
    GPUPROF_IO_ERR_NOMEM = -1,
    GPUPROF_IO_ERR_IO = -2,      /* open/read/write/fsync/rename failed */
    GPUPROF_IO_ERR_FORMAT = -3,  /* not a profile, or damaged */
    GPUPROF_IO_ERR_VERSION = -4, /* a major version this reader lacks, or
                                    a newer minor's content it cannot read */
    GPUPROF_IO_ERR_INVALID = -5  /* the in-memory profile is inconsistent */
};

/* Serializes `p` (which must be consistent: every index in range) into a
 * malloc'ed buffer *out of *out_size bytes. Sections are zstd-compressed at
 * `level` (0 = stored raw). */
int gpuprof__io_encode(const gpuprof__io_profile *p, int level, uint8_t **out,
                       size_t *out_size, char *err, size_t errsize);

/* Validates and decodes `buf`. On success *out is a new profile to release
 * with gpuprof__io_profile_free. Never reads outside buf[0..size). */
int gpuprof__io_decode(const uint8_t *buf, size_t size,
                       gpuprof__io_profile **out, char *err, size_t errsize);

/* Writes `buf` to `path` atomically: a temporary file in the same directory,
 * write, fsync, rename over `path`, fsync of the directory. On failure the
 * previous file at `path` is untouched and the temporary is removed. */
int gpuprof__io_write_atomic(const char *path, const uint8_t *buf, size_t size,
                             char *err, size_t errsize);
/* The same; without the two fsyncs when !durable (files that can be made
 * again, like an analysis database: a crash may lose them, never leave
 * half of one). */
int gpuprof__io_write_replace(const char *path, const uint8_t *buf,
                              size_t size, bool durable, char *err,
                              size_t errsize);

/* Reads the whole regular file at `path` into a new buffer (*buf, to free;
 * a file that shrinks meanwhile gives fewer bytes). */
int gpuprof__io_read_whole(const char *path, uint8_t **buf, size_t *size,
                           char *err, size_t errsize);

/* Reads and decodes the file at `path`. */
int gpuprof__io_read_file(const char *path, gpuprof__io_profile **out,
                          char *err, size_t errsize);

void gpuprof__io_profile_free(gpuprof__io_profile *p);

/* CRC-32C (Castagnoli) of buf, continuing from `crc` (start with 0). */
uint32_t gpuprof__io_crc32c(uint32_t crc, const void *buf, size_t size);
/* The CRC-32C of A || B from crc(A), crc(B) and B's length. */
uint32_t gpuprof__io_crc32c_combine(uint32_t crc_a, uint32_t crc_b,
                                    uint64_t len_b);
/* The same in software only (tests compare the two). */
uint32_t gpuprof__io_crc32c_sw(uint32_t crc, const void *buf, size_t size);

/* The string at offset `off` (validated profiles only). */
static inline const char *gpuprof__io_str(const gpuprof__io_profile *p,
                                          uint32_t off)
{
    return p->strings + off;
}

#endif /* GPUPROF_IO_H */
