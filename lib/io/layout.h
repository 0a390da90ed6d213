/*
 * layout.h - byte layout of the profile file (doc/FORMATS.md), shared by
 * encode.c and decode.c: sizes, section types, little-endian accessors.
 */
#ifndef GPUPROF_IO_LAYOUT_H
#define GPUPROF_IO_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HDR_SIZE 64u
#define HDR_CRC_AT 60u
#define ENTRY_SIZE 40u
#define META_SIZE 56u
#define METRIC_SIZE 12u
#define MODULE_SIZE 24u
#define THREAD_SIZE 40u
#define NODE_SIZE 20u
#define COUNTER_SIZE 16u
#define METRIC_EXT_SIZE 12u
#define DEVICE_SIZE 24u
#define MAX_RAW (UINT64_C(1) << 32) /* 4 GiB per section */
/* A zstd section may expand at most MAX_RATIO times its stored size plus
 * RATIO_SLACK: a small file cannot make the reader allocate much. */
#define MAX_RATIO 1024u
#define RATIO_SLACK (UINT64_C(1) << 20)

enum sec_type {
    SEC_META = 1,
    SEC_STRINGS = 2,
    SEC_METRICS = 3,
    SEC_MODULES = 4,
    SEC_THREADS = 5,
    SEC_NODES = 6,
    SEC_VALUES = 7,
    SEC_COUNTERS = 8,
    SEC_METRIC_EXT = 9, /* format 1.2, optional: how metrics combine */
    SEC_DEVICES = 10,   /* format 1.3, optional: devices' attributes */
    SEC_REQUIRED = 8,   /* types 1..8 are required (format 1.0) */
    SEC_KNOWN = 10      /* types this reader reads; later ones are skipped */
};

enum sec_encoding { ENC_RAW = 0, ENC_ZSTD = 1 };

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

struct gpuprof__io_profile;
/* Validates every index, offset and count of an in-memory profile: the
 * decoder runs it on what it read, the encoder on what it is asked to
 * write. 0 or GPUPROF_IO_ERR_FORMAT with a message. */
int gpuprof__io_check(const struct gpuprof__io_profile *p, char *err,
                      size_t errsize);

#endif /* GPUPROF_IO_LAYOUT_H */
