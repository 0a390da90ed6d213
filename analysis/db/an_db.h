/*
 * an_db.h - the analysis database (doc/FORMATS.md, "Analysis database"):
 * what the aggregation (agg/, with the writers an_dbwrite.c, an_tracedb.c
 * and an_metadb.c) writes and the reader (an_db.c) maps.
 *
 * A database is a directory of four files (five with trace.db, when the
 * measurements hold traces), each a 32-byte header followed by its body,
 * all integers little-endian:
 *
 *   meta.db     strings, metrics, profiles (identity), contexts (the
 *               unified calling context tree, parents first)
 *   profile.db  PMS: per profile, a plane of (context, start) pairs sorted
 *               by context and (metric, value) entries
 *   cct.db      CMS: per context, a plane of (metric, start) pairs sorted
 *               by metric and (profile, value) entries sorted by profile
 *   stats.db    per context, per metric: count, sum, min, mean, max,
 *               standard deviation, coefficient of variation
 *   trace.db    every trace stream's records sorted by time (below)
 *
 * Header: magic (8 bytes), u16 major, u16 minor, u32 CRC-32C of the
 * identity and the body, u64 body size, u32 count A, u32 count B (per
 * file: see the writers), u64 identity: the same in every file of one
 * analysis (a hash of its inputs and options), so files of two analyses
 * are never read together.
 */
#ifndef GPUPROF_AN_DB_H
#define GPUPROF_AN_DB_H

#include <stdint.h>

#define DB_MAJOR                                                               \
    5 /* 2: cct.db values with u16 profile ids; 3: identity;                   \
         4: GPU calling contexts, metric flags; 5: devices */
#define DB_MAJOR_OLDEST                                                        \
    3 /* the oldest this reader reads; the writer writes                       \
         it when the database needs nothing newer, so                          \
         its readers keep reading such databases */
#define DB_MINOR 0
#define DB_HEADER 40u /* ... u64 identity at 32 */

#define DB_META_MAGIC "GPDBMETA"
#define DB_PMS_MAGIC "GPDBPMS\0"
#define DB_CMS_MAGIC "GPDBCMS\0"
#define DB_STATS_MAGIC "GPDBSTAT"

/* meta.db body: u32 string bytes, u32 metric count, u32 profile count,
 * u32 context count, u32 damaged traces, u32 trace streams left out, u64
 * trace bytes ignored, then the strings (offset 0 is ""), then the
 * records. */
#define DB_META_COUNTS 32u
#define DB_METRIC_REC 12u  /* str name, str description, u8 unit,
                              u8 combine, u8 kind, u8 variant */
#define DB_METRIC_REC_4                                                        \
    20u                    /* format 4: then u32 flags (DB_METRIC_*), u32      \
                              the count metric of an odd sum (database id,     \
                              the same variant; UINT32_MAX: none) */
#define DB_METRIC_ODD 0x1u /* as GPUPROF_IO_METRIC_ODD */
#define DB_METRIC_NO_INCLUSIVE 0x2u /* as GPUPROF_IO_METRIC_NO_INCLUSIVE */
static inline unsigned db_metric_rec(unsigned major)
{
    return major >= 4 ? DB_METRIC_REC_4 : DB_METRIC_REC;
}
#define DB_PROFILE_REC 40u /* str host, str thread name, str source file,
                              u32 pid, i32 rank, u32 thread flags,
                              u64 tid, u64 reserved */
#define DB_CONTEXT_REC 24u /* u32 parent, u8 kind, 3 reserved, str name,
                              str aux, u64 key */
/* Format 5: after the contexts, u32 device attributes, then that many
 * records: u32 process (its file's first profile), str api, u32 device,
 * str key, u32 type (0 number, 1 string), u32 reserved (0), u64 value (a
 * number, or a str offset). The records of one file come together, in its
 * order. */
#define DB_DEVICE_REC 32u
/* Context kinds: the profile's node kinds (0..5), then program structure:
 * FUNCTION (name: function, aux: module path), INLINE (the same), LINE
 * (name: source file, key: line). */
#define DB_KIND_FUNCTION 6u
#define DB_KIND_INLINE 7u
#define DB_KIND_LINE 8u
/* Format 4: a device function in a GPU calling context (name: its symbol
 * without its kernel's `$kernel$`, aux: the cubin's path, key: 1 for a
 * recursive SCC, named by its first function, else 0). */
#define DB_KIND_GPU_FUNCTION 9u
/* Format 4: a loop (name: the source file of its header, aux: the GPU
 * binary's path, key: the header's line), beneath its function. */
#define DB_KIND_LOOP 10u
#define DB_KIND_COUNT_3 9u
#define DB_KIND_COUNT 11u

/* Metric variants: every measured metric gives two database metrics. */
#define DB_INCLUSIVE 0u
#define DB_EXCLUSIVE 1u

/* profile.db: table of u64 plane offset (from the file's start), u32
 * pairs, u32 values per profile; a plane: pairs of (u32 context, u32
 * start), then values of (u16 metric, f64 value), packed (10 bytes). */
#define DB_PLANE_REF 16u
#define DB_PMS_PAIR 8u
#define DB_PMS_VALUE 10u
/* cct.db: the same table per context; a plane: pairs of (u16 metric, u16
 * reserved, u32 start), then values of (profile, f64 value), packed: the
 * profile is a u16 in a database of at most 65,536 profiles (10 bytes a
 * value), a u32 in a larger one (12 bytes). */
#define DB_CMS_PAIR 8u
static inline unsigned db_cms_value(uint32_t nprofiles)
{
    return nprofiles <= 65536u ? 10u : 12u;
}
/* stats.db: the same table per context (values = 0); a plane: records of
 * u16 metric, u16 reserved, u32 count, then f64 sum, min, mean, max, std,
 * cov. */
#define DB_STATS_REC 56u

/* trace.db: every input trace's streams, records sorted by start (then
 * end): the records of all streams, then the table of streams at the end
 * (the header's count A = streams, B = profiles). A record: u64 start, u64
 * end, u64 correlation id (0: none), u32 context (UINT32_MAX: unknown), u32
 * reserved. A stream: u32 profile (the thread's; UINT32_MAX for a GPU
 * stream), u32 process (its file's first profile), u8 kind, 3 reserved,
 * u32 device, u32 stream (GPU), u32 reserved, i64 ns to add for
 * CLOCK_REALTIME, u64 offset of its first record, u64 records. */
#define DB_TRACE_MAGIC "GPDBTRAC"
#define DB_TRACE_REC 32u
#define DB_TRACE_STREAM 48u
#define DB_TRACE_REGIONS 0u /* a CPU thread's closed regions */
#define DB_TRACE_OPS 1u     /* a CPU thread's GPU API calls */
#define DB_TRACE_GPU 2u     /* a GPU stream's device work */
#define DB_TRACE_DEPS 3u    /* a CPU thread's dependency notes: u64 start of
                               the call, u64 target correlation id, u64 the
                               call's correlation id, u32 what | flags << 8
                               | device << 16, u32 stream (trace 1.2) */
#define DB_TRACE_MPI 4u     /* a CPU thread's MPI calls (trace 1.4): each
                               record 64 bytes, two 32-byte slots (the
                               stream's count is of slots), laid out as the
                               trace's MPI_RECORDS (doc/FORMATS.md) */
#define DB_TRACE_MPI_REC 64u
#define DB_TRACE_HOST 5u    /* a CPU thread's host synchronization (trace
                               1.5): each record 64 bytes, two slots (the
                               count is of slots): u64 start, u64 end, u64
                               object, u64 aux, u8 op, u8 flags, 30
                               reserved (the trace's HOST_RECORDS) */
#define DB_TRACE_HOST_REC 64u
#define DB_TRACE_SAMPLES 6u /* a CPU thread's samples (trace 1.5): u64 time,
                               u64 time, u64 value (what the sample added
                               to its metric), u32 context, u32 the
                               database metric it went to (its exclusive
                               variant; UINT32_MAX: unknown) */

/* Little-endian access (the format is little-endian on every host). */
static inline void db_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void db_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void db_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t db_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t db_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static inline uint64_t db_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#endif /* GPUPROF_AN_DB_H */
