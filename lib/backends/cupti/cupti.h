/*
 * cupti.h - the CUPTI backend (NVIDIA GPUs): internal interface between
 * its files. The design is in doc/BACKENDS.md ("CUPTI").
 *
 *  app thread, CUPTI API callback (enter) --> gpuprof_be_op_begin (one unwind
 *      per user call; the runtime's nested driver call joins it), and the
 *      CUPTI correlation id -> our correlation in the ring below
 *  CUPTI's buffer thread: activity records --> cupti_act.c decodes them
 *      with the real cuptiActivityGetNextRecord, looks the correlation up
 *      in the ring and submits them (gpuprof_be_activity_submit)
 *  module loads (resource callback) --> cubins saved by content hash,
 *      their kernels' names --> binary ids (cupti_cubin.c)
 *
 * libcupti is never linked: cupti.c dlopens it and fills `gpuprof__cu`, a table
 * of the entry points we call. Everything compiles against the CUDA 13
 * headers (CUDA_HOME); an older libcupti at run time is refused (its
 * record layouts differ).
 */
#ifndef GPUPROF_BACKENDS_CUPTI_CUPTI_H
#define GPUPROF_BACKENDS_CUPTI_CUPTI_H

#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "gpuprof_backend.h"

#include "backends/kit/atomics.h"
#include "backends/kit/submit.h"

/* The CUPTI entry points we use (cupti.c, gpuprof__cupti_load). */
typedef struct gp_cupti_api {
    void *lib;
    __typeof__(cuptiGetVersion) *GetVersion;
    __typeof__(cuptiGetResultString) *GetResultString;
    __typeof__(cuptiSubscribe) *Subscribe;
    __typeof__(cuptiUnsubscribe) *Unsubscribe;
    __typeof__(cuptiEnableCallback) *EnableCallback;
    __typeof__(cuptiEnableDomain) *EnableDomain;
    __typeof__(cuptiGetCallbackName) *GetCallbackName;
    __typeof__(cuptiActivityEnable) *ActivityEnable;
    __typeof__(cuptiActivityDisable) *ActivityDisable;
    __typeof__(cuptiActivityRegisterCallbacks) *ActivityRegisterCallbacks;
    __typeof__(cuptiActivityGetNextRecord) *ActivityGetNextRecord;
    __typeof__(cuptiActivityGetNumDroppedRecords) *ActivityGetNumDroppedRecords;
    __typeof__(cuptiActivityFlushAll) *ActivityFlushAll;
    __typeof__(cuptiGetTimestamp) *GetTimestamp;
    /* Optional (NULL when this libcupti lacks them). */
    __typeof__(cuptiActivityRegisterTimestampCallback)
        *RegisterTimestampCallback;
    __typeof__(cuptiActivityEnableAllSyncRecords) *EnableAllSyncRecords;
    __typeof__(cuptiFinalize) *Finalize;
    __typeof__(cuptiGetCubinCrc) *GetCubinCrc;
    __typeof__(cuptiGetDeviceId) *GetDeviceId;
    __typeof__(cuptiGetStreamIdEx) *GetStreamIdEx;
} gp_cupti_api;

extern gp_cupti_api gpuprof__cu;

/* Loads libcupti (GPUPROF_CUPTI_LIBRARY, else libcupti.so in the loader's
 * path, $CUDA_HOME and the build's CUDA) and resolves gpuprof__cu. false with a
 * one-line reason when it cannot. Idempotent; any thread (under the
 * backend lock). */
bool gpuprof__cupti_load(char *reason, size_t rsize);

/* cuptiSubscribe once (the probe's second half, after the driver was found
 * and libcupti loaded); GPUPROF_E_UNAVAILABLE with a one-line reason naming
 * CUPTI's error and its likely cause. Under the backend lock. */
gpuprof_status gpuprof__cupti_subscribe(char *reason, size_t rsize);

/* Dependency notes for traces at a measured call's API enter
 * (cupti_deps.c): device, stream and event synchronizations, synchronous
 * copies, event records, stream waits for events; and at its exit, before
 * its operation ends, the queries with their answer. `corr` is the call's
 * open operation. */
void gpuprof__cupti_deps(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                         const CUpti_CallbackData *cb, uint64_t corr);
void gpuprof__cupti_deps_exit(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                              const CUpti_CallbackData *cb, uint64_t corr);

/* "CUPTI_ERROR_UNKNOWN (999)" for an error code. */
const char *gpuprof__cupti_err(CUptiResult r, char *buf, size_t size);

/* ---- API classification (cupti.c) ---------------------------------------
 * Every runtime and driver callback id is classified once by its name:
 * the op kind it begins (0: not ours) and flags. */
#define GP_CU_GRAPH 0x100u    /* a graph launch: its kernels share its id */
#define GP_CU_HOSTDONE 0x200u /* closed at API exit with api.time (allocs) */
#define GP_CU_TRACED 0x400u   /* measured only when traces are written: event
                                 records, stream waits, queries (their
                                 dependency notes, cupti_deps.c) */
#define GP_CU_KIND_MASK 0xffu
uint32_t gpuprof__cupti_classify_name(const char *name);
/* cupti_detect.c: the detectors' facts from an API call's parameters, at
 * its enter (operation `corr` begun); is a module image PTX text? */
void gpuprof__cupti_detect_enter(CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                 const void *params, uint64_t corr);
bool gpuprof__cupti_is_ptx(const void *image);
/* detect.devices_unused: a record ran on device `dev`; after the first
 * measured call's operation ended; at finalize with the devices present
 * (-1: ask the driver). */
void gpuprof__cupti_device_used(uint32_t dev);
void gpuprof__cupti_devices_first_call(void);
void gpuprof__cupti_devices_report(int present);
/* The devices records named so far (bit d: device d). */
uint64_t gpuprof__cupti_devices_used(void);

/* ---- devices described (cupti_devices.c) --------------------------------
 * Each device's limits from the driver (cuDeviceGetAttribute), given to
 * gpuprof_be_device_describe once: for the device of a context created
 * (resource callback), and at flush for devices records named that were
 * not described yet. A test installs a driver of its own (NULL: the
 * program's libcuda again, and nothing described yet). */
typedef struct gp_cu_driver {
    CUresult (*Get)(CUdevice *dev, int ordinal);
    CUresult (*GetAttribute)(int *value, CUdevice_attribute a, CUdevice dev);
    CUresult (*GetName)(char *name, int len, CUdevice dev);
} gp_cu_driver;
void gpuprof__cupti_devices_test_driver(const gp_cu_driver *d);
void gpuprof__cupti_device_describe(uint32_t ordinal);
void gpuprof__cupti_context_device(CUcontext ctx);
void gpuprof__cupti_devices_describe_used(void);

/* ---- the correlation ring (cupti_act.c) ---------------------------------
 * CUPTI correlation id -> our correlation, written at API enter on the
 * application thread, read when records are decoded on CUPTI's thread.
 * Slot = id mod the ring size; a seqlock-checked tag holds the full id,
 * so a slot reused by a later call is a miss (counted unattributed), never
 * a wrong attribution. */
#define GP_CU_RING_BITS 18
void gpuprof__cupti_ring_note(uint32_t cupti_id, uint64_t corr, bool graph);
bool gpuprof__cupti_ring_find(uint32_t cupti_id, uint64_t *corr, bool *graph);
void gpuprof__cupti_ring_reset(void);

/* ---- records (cupti_act.c) ---------------------------------------------- */
/* Decodes `valid` bytes of activity records and submits them. Returns the
 * number of records read. Any thread; serialized inside. */
size_t gpuprof__cupti_decode(uint8_t *buf, size_t valid);
/* Device timestamps -> process clock: ns + offset (0 when CUPTI takes its
 * timestamps from our clock). */
void gpuprof__cupti_set_clock_offset(int64_t offset_ns);
/* Closes the graph launches still open: a final empty activity for each
 * (from flush at finalize, and when too many are open). */
void gpuprof__cupti_graphs_close(void);
/* Counters of what decoding saw (tests, stats). */
typedef struct gp_cupti_counts {
    uint64_t records, kernels, copies, memsets, syncs, overhead_ns,
        unattributed, unknown_kinds, graph_closed;
} gp_cupti_counts;
void gpuprof__cupti_counts(gp_cupti_counts *out);
void gpuprof__cupti_counts_reset(void);

/* ---- cubins (cupti_cubin.c) --------------------------------------------- */
/* Saves a loaded module's cubin (by content hash) and maps each function
 * it defines to the binary's module id. Any thread. */
void gpuprof__cupti_module_loaded(const void *cubin, size_t size);
/* The binary id of the cubin that defines kernel `name`, GPUPROF_NO_BINARY when
 * none is known. Any thread. */
uint32_t gpuprof__cupti_kernel_binary(const char *name);
/* Calls fn for each function symbol an ELF cubin defines; false when the
 * bytes are not a well-formed ELF64 (nothing is called then). */
bool gpuprof__cubin_functions(const void *data, size_t size,
                              void (*fn)(void *ctx, const char *name),
                              void *ctx);
void gpuprof__cupti_cubins_reset(void);
/* The code of a statically linked CUDA runtime in an ELF file (the
 * program's symbol table): [*lo, *hi) as link-time addresses; false when
 * it has none (or no symbol table). */
bool gpuprof__cupti_cudart_range(const void *elf, size_t size, uint64_t *lo,
                                 uint64_t *hi);
/* The binary id of the cubin with CUPTI's CRC `crc` (PC samples name their
 * cubin so), GPUPROF_NO_BINARY when none. */
uint32_t gpuprof__cupti_crc_binary(uint64_t crc);

/* ---- PC sampling (cupti_pcs.c, cupti_pcs_submit.c) ----------------------
 * GPUPROF_CUPTI_PC_SAMPLING=1|N (period 2^N cycles) turns it on;
 * GPUPROF_CUPTI_PC_SAMPLING_MODE=serialized (default) | continuous. */
#define GP_CU_LATENCY 0x10000u /* a stall reason's "_not_issued" twin */
/* Our metric for a CUPTI stall reason name, | GP_CU_LATENCY for the
 * "<reason>_not_issued" names. */
uint32_t gpuprof__cupti_stall_metric(const char *name);

/* The PC sampling entry points (resolved from libcupti; a test installs
 * its own with gpuprof__cupti_pcs_test_api before gpuprof__cupti_pcs_wanted). */
typedef struct gp_pcs_api {
    __typeof__(cuptiPCSamplingEnable) *Enable;
    __typeof__(cuptiPCSamplingDisable) *Disable;
    __typeof__(cuptiPCSamplingGetNumStallReasons) *GetNumStallReasons;
    __typeof__(cuptiPCSamplingGetStallReasons) *GetStallReasons;
    __typeof__(cuptiPCSamplingSetConfigurationAttribute) *SetConfig;
    __typeof__(cuptiPCSamplingGetData) *GetData;
} gp_pcs_api;
void gpuprof__cupti_pcs_test_api(const gp_pcs_api *api); /* NULL: dlsym */

enum gp_pcs_mode { GP_PCS_OFF = 0, GP_PCS_SERIALIZED, GP_PCS_CONTINUOUS };
/* GPUPROF_CUPTI_PC_SAMPLING asks for it and this libcupti has the API
 * (resolves it); from init. false, with one log line, for a malformed
 * setting. */
bool gpuprof__cupti_pcs_wanted(void);
/* The mode collection runs in (GP_PCS_OFF until wanted). Any thread. */
enum gp_pcs_mode gpuprof__cupti_pcs_mode(void);
/* A context was created / is going away (resource callbacks). Enable and
 * configure happen once per context, before its first kernel. */
void gpuprof__cupti_pcs_context(CUcontext ctx);
void gpuprof__cupti_pcs_context_gone(CUcontext ctx);
/* A kernel launch is about to run in `ctx` (API enter, outermost call or
 * its nested driver call): enables the context if its creation was
 * missed (created before init), and in continuous mode notes the launch
 * of function `name` as corr. */
void gpuprof__cupti_pcs_launch(CUcontext ctx, const char *name, uint64_t corr);
/* Takes what CUPTI collected in `ctx` (NULL: every context) and submits
 * it; after launches (continuous: at most every GP_CU_PCS_EVERY_NS per
 * context unless `force`), at flush. */
void gpuprof__cupti_pcs_collect(CUcontext ctx, bool force);
/* fini: drains and disables every context, collection off; done (after
 * the last activity records are in): the held launches end, and one line
 * sums up what was collected (a warning when kernels ran and no sample
 * came). */
void gpuprof__cupti_pcs_fini(void);
void gpuprof__cupti_pcs_done(void);
#define GP_CU_PCS_EVERY_NS 20000000ull

/* Submits one collection: every PC record whose launch is known (the
 * others' samples are added to *unattributed); `map` turns stall reason
 * indices (< nmap) into metrics. The number of PCs submitted. */
size_t gpuprof__cupti_pcs_submit(const CUpti_PCSamplingData *d,
                                 const uint32_t *map, size_t nmap,
                                 uint64_t *unattributed);

/* Continuous mode's launches held open (cupti_pcs_submit.c): at most
 * GP_CU_HELD_MAX. hold_on: note launches from now on (or not). held: the
 * kernel record of corr must carry GPUPROF_ACTIVITY_MORE; record_in: it
 * was submitted. release: closes the held launches whose record is in
 * and that a later launch of their function replaced (all: every one
 * whose record is in); the number closed. forget: drops every entry,
 * closing those still held when `close` (after the last records: fini);
 * the launches closed since the last forget, and those that could not be
 * held. */
#define GP_CU_HELD_MAX 1024
void gpuprof__cupti_pcs_hold_on(bool on);
void gpuprof__cupti_pcs_note_launch(const char *name, uint64_t corr);
/* A graph launch's kernel `name` came (its record): samples of the
 * function go to the graph launch, which cupti_act.c closes. */
void gpuprof__cupti_pcs_note_graph_kernel(const char *name, uint64_t corr);
bool gpuprof__cupti_pcs_held(uint64_t corr);
void gpuprof__cupti_pcs_record_in(uint64_t corr);
unsigned gpuprof__cupti_pcs_release(bool all);
void gpuprof__cupti_pcs_forget(bool close, uint64_t *closed,
                               uint64_t *refused);

#endif /* GPUPROF_BACKENDS_CUPTI_CUPTI_H */
