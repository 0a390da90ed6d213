/*
 * trace.h - traces written while the run goes (GPUPROF_TRACE=1; DESIGN §3
 * step 5).
 *
 * Three kinds of record, all (start, end, context, corr), and CPU samples
 * (one stream for every thread, gpuprof__trace_sample):
 *   - per GPU stream: what ran on the device, from the monitor thread, with
 *     the operation's correlation id;
 *   - per CPU thread: each closed region instance (corr 0), and each GPU
 *     operation's API call, from gpuprof_op_begin to the gpuprof_op_end
 *     that closes it (corr: its correlation id, never 0), both from the
 *     owning thread.
 * `context` is ((uint64_t)thread_seq << 32) | node: the node of that thread's
 * calling context tree (the operation's placeholder for GPU and operation
 * records, the region for region records); the trace file maps each
 * thread_seq to its OS tid and name. A device record and the operation
 * record with the same correlation id are the launch and what it ran
 * (several device records for one launch with GPUPROF_ACTIVITY_MORE).
 *
 * Producers push into single-producer/single-consumer channels (channel.h):
 * one per GPU stream (producer: the monitor, under its lock), one per CPU
 * thread (producer: that thread). `trace_threads` tracing threads drain them and append
 * checksummed chunks to the process's trace file, so memory stays bounded
 * and a killed process keeps every complete chunk. A record that arrives with
 * an earlier start than the one before it on its stream flags its chunk
 * out-of-order (readers sort). Times in the file are CLOCK_MONOTONIC ns (the
 * process clock); CPU records are taken in ticks and converted by the
 * tracing thread. doc/FORMATS.md specifies the file.
 */
#ifndef GPUPROF_CORE_TRACE_H
#define GPUPROF_CORE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gp_trace_thread gp_trace_thread; /* a CPU thread's producer */

/* The trace file sits beside the profile: <host>-r<rank>-p<pid>.gptrace. */
#define GP_TRACE_SUFFIX ".gptrace"

/* From gpuprof_init when tracing is on: creates `path` (truncating it),
 * starts `nthreads` tracing threads. Channels grow to `max_items` records,
 * beyond which records are dropped and counted (records.dropped and the
 * trace's own counter). false: tracing stays off, the reason is logged. */
bool gpuprof__trace_start(const char *path, int nthreads, uint64_t max_items);
/* The profile goes first: before each chunk the trace checks the free space
 * of its file system, and stops for good (records dropped, counted; one
 * error line) when the chunk would leave less than the reserve: twice the
 * last profile written (gpuprof__trace_reserve, from snapshot.c), at least
 * GP_TRACE_MIN_RESERVE. A failed write stops it too; either way the file
 * is cut back to its last whole chunk. */
#define GP_TRACE_MIN_RESERVE (1u << 20)
void gpuprof__trace_reserve(uint64_t profile_bytes);
/* When the profile still finds no room (a bigger profile than the reserve,
 * or another writer filled the disk): cuts the trace back by whole chunks,
 * the fewest that free at least `bytes`, and stops it; the records cut are
 * counted dropped (*records). Returns the bytes freed (0: nothing cut). */
uint64_t gpuprof__trace_make_room(uint64_t bytes, uint64_t *records);
/* Is tracing on? One relaxed load. */
bool gpuprof__trace_on(void);
/* Every record pushed before the call is in the file when it returns
 * (complete chunks; partial chunks are written as short chunks). From
 * gpuprof_flush and finalize, under G.flush_lock. */
void gpuprof__trace_flush(void);
/* From finalize: flush, stop the threads, close the file. Idempotent. */
void gpuprof__trace_stop(void);
/* Fork child: tracing off, no threads, the parent's file left alone. */
void gpuprof__trace_atfork_prepare(void);
void gpuprof__trace_atfork_parent(void);
void gpuprof__trace_atfork_child(void);

/* GPU records: whoever runs a monitor round (the monitor thread, or a
 * flushing thread), always under the monitor lock, which serializes the
 * producer side. Wait-free. */
void gpuprof__trace_gpu(uint32_t device, uint32_t stream, uint64_t start_ns,
                        uint64_t end_ns, uint64_t context, uint64_t corr);

/* CPU records. The owner opens its producer on first use (NULL when tracing
 * is off or out of memory: then it records nothing), pushes each closed
 * region, and closes it at thread exit (the tracing threads drain what is
 * left and free it). gpuprof__trace_op is the operation record: one push,
 * wait-free, from gpuprof__op_end (gpu.c) when the owner's producer is
 * open; the times are ticks (converted by the tracing thread). */
gp_trace_thread *gpuprof__trace_thread_open(uint32_t thread_seq, uint64_t tid,
                                            const char *name);
void gpuprof__trace_region(gp_trace_thread *h, uint64_t start_ticks,
                           uint64_t end_ticks, uint32_t node);
void gpuprof__trace_op(gp_trace_thread *h, uint64_t start_ticks,
                       uint64_t end_ticks, uint32_t node, uint64_t corr);
/* A dependency note of the operation open on the owner (io/trace.h
 * DEP_RECORDS): `info` from GPUPROF_IO_DEP_INFO, `target` a correlation
 * id or 0; start_ticks is the operation's begin. Wait-free, owner only. */
void gpuprof__trace_dep(gp_trace_thread *h, uint64_t start_ticks,
                        uint64_t info, uint64_t target, uint64_t corr);
/* An MPI call's record (io/trace.h MPI_RECORDS; times CLOCK_MONOTONIC
 * ns, not ticks): two channel items, the second of which completes it (a
 * half whose other half was dropped is dropped too). Wait-free, owner
 * only. */
struct gpuprof__io_mpi_rec;
void gpuprof__trace_mpi(gp_trace_thread *h,
                        const struct gpuprof__io_mpi_rec *r);
/* A host synchronization record of the owner (io/trace.h HOST_RECORDS,
 * lib/host/): op and flags GPUPROF_IO_HOST_*, times in ticks (a moment:
 * start = end). Two channel items like an MPI call's. Wait-free, owner
 * only. */
void gpuprof__trace_host(gp_trace_thread *h, uint32_t op, uint32_t flags,
                         uint64_t start_ticks, uint64_t end_ticks,
                         uint64_t object, uint64_t aux);
void gpuprof__trace_thread_close(gp_trace_thread *h);
/* CPU samples (core/sampler.h): one stream for every thread's samples,
 * written as SAMPLE_RECORDS chunks (io/trace.h); its producer is whoever
 * holds the sampler's drain lock. A record: the sample's time (ticks),
 * its context (thread_seq << 32 | node), its value and the metric it went
 * to (the profile's metric index). NULL when tracing is off. */
gp_trace_thread *gpuprof__trace_samples_open(void);
void gpuprof__trace_sample(gp_trace_thread *h, uint64_t ticks,
                           uint64_t context, uint64_t value, uint32_t metric);
/* A thread summed into the merged state (thread.c, under G.flush_lock):
 * where each of its n nodes went in the merged state's tree (map[i];
 * UINT32_MAX: nowhere), written as MERGED chunks so that its records keep
 * their contexts. Nothing when tracing is off. */
void gpuprof__trace_merged(uint32_t thread_seq, const uint32_t *map,
                           uint32_t n);

/* Records dropped so far (channels at their bound, write errors). */
uint64_t gpuprof__trace_dropped(void);

#endif /* GPUPROF_CORE_TRACE_H */
