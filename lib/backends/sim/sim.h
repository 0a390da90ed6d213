/*
 * sim.h - the simulated GPU: a backend for tests and benchmarks (not part of
 * the public API; only white-box programs that link the library's objects
 * use it).
 *
 * The simulator implements the public backend vtable like any backend. Test
 * programs "launch" kernels, copies and memsets of given durations onto
 * numbered streams; each launch goes through gpuprof_op_begin/_end exactly as
 * a real runtime hook would (call path, placeholder, correlation id). The
 * work "runs" on the simulator's own thread: each stream executes its
 * operations in launch order on a virtual clock (an operation starts when
 * the previous one on its stream ended, or at its launch, whichever is
 * later), and the resulting activities are submitted through
 * gpuprof_activity_submit in batches, shuffled within each batch, so the
 * monitor sees them out of order and from a foreign thread. Durations and
 * byte counts are exactly what was asked for, which makes every test exact.
 */
#ifndef GPUPROF_SIM_H
#define GPUPROF_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuprof.h"

typedef struct gp_sim_config {
    unsigned streams;  /* streams per device (default 4) */
    unsigned batch;    /* activities delivered per batch (default 64) */
    unsigned seed;     /* of the shuffle within a batch (default 1) */
    unsigned delay_us; /* a partial batch waits at most this (default 1000) */
    bool realtime;     /* waits last until the virtual clock has passed what
                          they wait for, queries answer by it (default: the
                          host never waits for the device) */
    bool null_stream;  /* stream 0 is a legacy default stream: serialized
                          with every other stream (default: independent) */
} gp_sim_config;

/* Registers the "sim" backend (before or after gpuprof_init; once per
 * process). `cfg` may be NULL (defaults). */
gpuprof_status gpuprof__sim_register(const gp_sim_config *cfg);

/* Launches, from the calling thread. The innermost frame of the recorded
 * call path is the caller's. GPUPROF_E_STATE when the backend is not
 * active, GPUPROF_E_INVALID for a bad stream or kind. */
gpuprof_status gpuprof__sim_kernel(unsigned stream, const char *name,
                                   uint64_t dur_ns);
/* kind: GPUPROF_OP_COPY_* or GPUPROF_OP_MEMSET. */
gpuprof_status gpuprof__sim_copy(unsigned stream, gpuprof_op_kind kind,
                                 uint64_t bytes, uint64_t dur_ns);
/* A graph launch: n kernels sharing one correlation id (one placeholder). */
gpuprof_status gpuprof__sim_graph(unsigned stream, unsigned n,
                                  const char *const *names,
                                  const uint64_t *dur_ns);
/* Waits until every operation launched before the call (by any thread) has
 * been delivered; recorded as a GPUPROF_OP_SYNC operation. */
gpuprof_status gpuprof__sim_sync(void);
/* The detectors' facts (core detect.c), as a vendor backend reports them:
 * a copy between the device and host memory [host, host + bytes) (a
 * device-to-host copy is remembered as read back; a host-to-device copy
 * from such memory is detect.output_as_input), and a kernel launched in
 * `context` (a name launched in two contexts is
 * detect.kernel_multi_context). */
gpuprof_status gpuprof__sim_copy_host(unsigned stream, gpuprof_op_kind kind,
                                      const void *host, uint64_t bytes,
                                      uint64_t dur_ns);
gpuprof_status gpuprof__sim_kernel_in(unsigned stream, const char *name,
                                      uint32_t context, uint64_t dur_ns);
/* Scripted time (tests of blame, core blame.c): while `t_ns` is not 0,
 * launches take it as their host time (the virtual clock their work may
 * start from) instead of the real clock. */
void gpuprof__sim_clock(uint64_t t_ns);
/* A scripted host wait: a GPUPROF_OP_SYNC operation whose activity says the
 * thread waited over [t0_ns, t1_ns] (process clock); delivers everything
 * launched before it first. */
gpuprof_status gpuprof__sim_wait(uint64_t t0_ns, uint64_t t1_ns);
/* Synchronization, noted in traces (dependency records, trace format 1.3).
 * With cfg.realtime the host really waits: until the virtual end of what
 * it waits for (a stream's work launched so far, every stream's, an
 * event's), and queries answer "done" once that time has passed; without
 * it every wait returns once delivered and queries answer done.
 * Events are numbered from 0 (at most 65,536 per init); an event is done
 * when the work launched before it on its stream is. A stream's work
 * launched after gpuprof__sim_stream_wait_event starts after the event. */
gpuprof_status gpuprof__sim_stream_sync(unsigned stream);
/* A blocking copy: returns when the copy has run. */
gpuprof_status gpuprof__sim_copy_sync(unsigned stream, gpuprof_op_kind kind,
                                      uint64_t bytes, uint64_t dur_ns);
gpuprof_status gpuprof__sim_event_record(unsigned stream, uint32_t *event);
gpuprof_status gpuprof__sim_event_sync(uint32_t event);
gpuprof_status gpuprof__sim_event_query(uint32_t event, bool *done);
gpuprof_status gpuprof__sim_stream_query(unsigned stream, bool *done);
gpuprof_status gpuprof__sim_stream_wait_event(unsigned stream,
                                              uint32_t event);
/* Test hook: hold deliveries (launches accumulate) until released; sync
 * and flush still deliver. */
void gpuprof__sim_hold(bool hold);

#endif /* GPUPROF_SIM_H */
