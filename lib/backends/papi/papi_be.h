/*
 * papi_be.h - what the files of the PAPI backend share (seed 000 §4.3;
 * doc/BACKENDS.md, "PAPI").
 *
 * The backend counts the events GPUPROF_PAPI_EVENTS names on every
 * application thread, one PAPI event set per thread (one per PAPI
 * component the events come from), and gives each interval between two
 * changes of the thread's calling context to the node it ran in: the
 * innermost open region, or, inside a GPU API call of any backend, the
 * call's calling context. The core tells it of those changes through the
 * thread observer of gpuprof_backend.h; a region's values are its
 * exclusive counts, the analysis rolls them up into inclusive ones.
 *
 * libpapi is dlopened (never linked): papi.h gives the types and constants,
 * and every call goes through `gpuprof__pp`, the table filled at probe.
 *   papi.c         the backend: loading PAPI, the life cycle, components
 *   papi_events.c  the event list: parsing, checking, metric registration
 *   papi_thread.c  per thread: event sets, reads, attribution, the observer,
 *                  overflow samples (GPUPROF_PAPI_SAMPLING)
 */
#ifndef GPUPROF_PAPI_BE_H
#define GPUPROF_PAPI_BE_H

#include <papi.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_backend.h"

/* At most this many events (PAPI_read of 7 takes ~0.5 us here) and event
 * sets (PAPI components) per thread. */
#define PP_MAX_EVENTS 16
#define PP_MAX_SETS 4
#define PP_NAME_MAX 128

/* The part of libpapi we call (the prototypes are papi.h's). */
typedef struct pp_api {
    void *lib;
    __typeof__(PAPI_library_init) *library_init;
    __typeof__(PAPI_thread_init) *thread_init;
    __typeof__(PAPI_register_thread) *register_thread;
    __typeof__(PAPI_unregister_thread) *unregister_thread;
    __typeof__(PAPI_set_debug) *set_debug;
    __typeof__(PAPI_strerror) *strerror;
    __typeof__(PAPI_event_name_to_code) *name_to_code;
    __typeof__(PAPI_get_event_info) *event_info;
    __typeof__(PAPI_get_event_component) *event_component;
    __typeof__(PAPI_num_components) *num_components;
    __typeof__(PAPI_get_component_info) *component_info;
    __typeof__(PAPI_create_eventset) *create_eventset;
    __typeof__(PAPI_add_event) *add_event;
    __typeof__(PAPI_remove_event) *remove_event;
    __typeof__(PAPI_start) *start;
    __typeof__(PAPI_stop) *stop;
    __typeof__(PAPI_read) *read;
    __typeof__(PAPI_cleanup_eventset) *cleanup_eventset;
    __typeof__(PAPI_destroy_eventset) *destroy_eventset;
    /* Overflow sampling (GPUPROF_PAPI_SAMPLING); NULL when libpapi has
     * them not (then sampling is off). */
    __typeof__(PAPI_overflow) *overflow;
    __typeof__(PAPI_get_overflow_event_index) *overflow_index;
} pp_api;
extern pp_api gpuprof__pp;

/* One event that is counted. */
typedef struct pp_event {
    char name[PP_NAME_MAX]; /* as GPUPROF_PAPI_EVENTS spells it */
    int code;               /* PAPI's event code */
    int set;                /* its event set (index in pp_sets.comp) */
    int slot;               /* its place in that set's values */
    uint32_t metric;        /* the metric registered for it (UINT32_MAX:
                               not counted, only sampled) */
    bool counted;           /* named in GPUPROF_PAPI_EVENTS */
    long long threshold;    /* overflow sampling every this many events
                               (GPUPROF_PAPI_SAMPLING); 0: none */
    uint32_t sample_metric; /* its samples' metric ("<metric>.sampled") */
} pp_event;

/* The events counted on every thread and the event sets they make. Set at
 * probe and init, read-only while measuring. */
typedef struct pp_plan {
    pp_event ev[PP_MAX_EVENTS];
    int nev;
    int comp[PP_MAX_SETS]; /* PAPI component of each event set */
    int set_n[PP_MAX_SETS]; /* events in each */
    int nsets;
    int nsampled; /* events with a threshold */
} pp_plan;
extern pp_plan gpuprof__pp_plan;

/* papi_events.c. Reads GPUPROF_PAPI_EVENTS (`list`) and
 * GPUPROF_PAPI_SAMPLING (`sampling`: EVENT@THRESHOLD,...; either may be
 * NULL) into the plan, keeping the events this PAPI can count on the
 * calling thread (each one that cannot, and each sampling entry that cannot
 * be used, is one error line naming it). A sampled event not in `list` is
 * in the plan too, sampled and not counted. false: no event is left (the
 * reason in `why`). */
bool gpuprof__pp_events_plan(const char *list, const char *sampling,
                             char *why, size_t why_size);
/* Registers one metric per counted event (name, unit, sum) and one per
 * sampled event (its name and ".sampled"); an event whose metric cannot be
 * registered is one error line and is neither counted nor sampled.
 * false: none is left. */
bool gpuprof__pp_events_register(void);
/* The metric name of an event: "papi." and the name in [a-z0-9_.]
 * (PAPI_L1_DCM -> papi.l1_dcm, perf::TASK-CLOCK -> papi.perf.task_clock). */
void gpuprof__pp_metric_name(const char *event, char *out, size_t size);
/* PAPI's message for a status (never NULL). */
const char *gpuprof__pp_err(int rc);

/* papi_thread.c. The observer the backend installs; counting is skipped
 * while `gpuprof__pp_on` is 0. */
extern const gpuprof_observer gpuprof__pp_observer;
extern _Atomic int gpuprof__pp_on;
/* Gives the calling thread's counts since its last read to where they
 * belong (its state, if it has one) and starts a new interval there. */
void gpuprof__pp_thread_settle(void);
/* Counts read before a pause are never given to a node after it: each
 * thread drops the interval that spans a new generation. */
void gpuprof__pp_new_generation(void);
/* The calling thread's event sets and state go (PAPI_unregister_thread). */
void gpuprof__pp_thread_release(void);
/* The calling thread counts (and samples) from now, if it does not yet:
 * sampling reaches threads that never change their calling context (the
 * thread of init; others through the observer's thread_start). */
void gpuprof__pp_thread_begin(void);

#endif /* GPUPROF_PAPI_BE_H */
