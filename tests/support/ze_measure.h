/*
 * ze_measure.h - what the Level Zero backend's suites (check_levelzero,
 * check_levelzero_lists) share on top of ze_fixture.h: gpuprof started
 * before the program's zeInit, the program's calls made from functions of
 * their own (launch_here, copy_here, execute_here: the call paths the
 * cases look for), and the trace read back and held against the fake
 * driver's own account (FAKEZE_TRACE). Needs the library and the loader.
 */
#ifndef GPUPROF_TEST_ZE_MEASURE_H
#define GPUPROF_TEST_ZE_MEASURE_H

#include "gpuprof.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/ze_fixture.h"

/* The measurement's output directory, its profile's path (zm_case with a
 * trace) and whether the next start records a trace. */
extern char zm_outdir[512], zm_prof_path[1024];
extern int zm_want_trace;

/* gpuprof_init with the levelzero backend only, into a fresh zm_outdir;
 * the backend's status and reason. */
gpuprof_status zm_start_gpuprof(char *why, size_t wsize);
/* gpuprof first (the backend must be available), then the program's own
 * zeInit and zf_open. */
void zm_start(void);
/* A case's setup: the fake's knobs, its kernels' times (FAKEZE_KERNELS,
 * e.g. "k_a=1000000"; NULL: the defaults), a trace or not, then
 * zm_start; with a trace, zm_prof_path is the profile's path. */
void zm_case(const char *kernels, int trace);

/* Two native modules' bytes (binaries saved by content). */
extern const uint8_t zm_native_a[38], zm_native_b[29];
/* A kernel of that name in a new module of zm_native_a. */
ze_kernel_handle_t zm_kernel_a(const char *name);
/* An event of the program's (a pool without timestamps: made in *pool). */
ze_event_handle_t zm_app_event(ze_event_pool_handle_t *pool);
/* n bytes of device memory. */
void *zm_dev_mem(size_t n);
/* A regular list on group 0 of k launched n times, closed. */
ze_command_list_handle_t zm_list_of(ze_kernel_handle_t k, int n);
/* A fence on q. */
ze_fence_handle_t zm_fence(ze_command_queue_handle_t q);

/* The program's calls, each from a function of its own (exported: the
 * call paths end there). */
void launch_here(ze_command_list_handle_t l, ze_kernel_handle_t k,
                 ze_event_handle_t ev);
void copy_here(ze_command_list_handle_t l, void *dst, const void *src,
               size_t n);
void execute_here(ze_command_queue_handle_t q, ze_command_list_handle_t l,
                  ze_fence_handle_t f);

/* Every GPU-operation placeholder of `kind` is called from `fn`, and
 * there is one at least. */
void zm_all_called_from(const gpuprof__io_profile *p, uint32_t kind,
                        const char *fn);

/* This measurement's trace, sorted (after gpuprof_finalize). */
gpuprof__io_trace *zm_load_trace(void);
/* How many dependency notes of each kind (n[0..8]) the trace holds. */
void zm_dep_counts(const gpuprof__io_trace *t, uint32_t n[9]);

/* The end of a case that holds the trace against the driver's account:
 * the clocks' offset (*raw2mono), gpuprof_finalize, the driver's ops read
 * into ops[max]; how many. */
size_t zm_finish_and_read(zf_op *ops, size_t max, int64_t *raw2mono);
/* The GPU trace's records on engine ordinal.index against the driver's
 * kernels and copies there but the [skip_from, skip_to)th (unmeasured),
 * one to one in order: durations exact, start and end within 20 us of the
 * driver's account. Returns how many matched. */
uint64_t zm_match_first(const gpuprof__io_trace *t, const zf_op *ops,
                        size_t nops, unsigned ordinal, unsigned index,
                        int64_t raw2mono, uint64_t skip_from, uint64_t skip_to);
/* Loads the trace and asserts that all of engine ordinal.index's records
 * match the driver's (zm_match_first, nothing skipped), `want` of them. */
void zm_expect_engine(const zf_op *ops, size_t nops, unsigned ordinal,
                      unsigned index, int64_t raw2mono, uint64_t want);
/* Of the driver's ops: how many of `kind` (engine any), their ticks. */
size_t zm_count_ops(const zf_op *ops, size_t nops, const char *kind,
                    uint64_t *ticks);

#endif
