/*
 * fakepapi.h - a fake libpapi for the test tree (README.md beside this
 * file): the part of PAPI 7's interface the PAPI backend dlopens, with
 * counts that are known exactly, so the backend's attribution is tested on
 * any machine, with or without a PMU.
 *
 * Loaded through GPUPROF_PAPI_LIBRARY=$(B)/tests/libfakepapi.so. Tests
 * script the counts of the calling thread through fakepapi_add (found with
 * dlsym in the library the backend loaded). The files:
 *   fp_events.c   components, events, their values, messages, knobs
 *   fp_sets.c     the life cycle, threads, event sets, reads
 *   fp_overflow.c PAPI_overflow: scripted events and the thread's CPU time
 */
#ifndef GPUPROF_FAKEPAPI_H
#define GPUPROF_FAKEPAPI_H

#include <papi.h>
#include <pthread.h>
#include <time.h>

#define FP_API __attribute__((visibility("default")))

/* Adds n to the calling thread's count of a scripted event ("fake::WORK",
 * "fake::BYTES"); 0, or -1 for any other name. Every thread has its own
 * counts, starting at 0. */
FP_API int fakepapi_add(const char *event, long long n);

/* ---- between the two files (hidden) ----------------------------------- */
/* Where an event's values come from. */
typedef enum fp_source {
    FP_CPU_NS,  /* the calling thread's CPU time, ns */
    FP_FAULTS,  /* the calling thread's page faults (getrusage) */
    FP_SCRIPT0, /* fakepapi_add: fake::WORK */
    FP_SCRIPT1, /* fakepapi_add: fake::BYTES */
    FP_READS,   /* PAPI_read calls on its event set since PAPI_start */
    FP_NONE     /* never counted (refused at add or at start) */
} fp_source;

typedef struct fp_event {
    const char *name;
    int code;
    int comp;       /* its component's index */
    fp_source src;
    int add_rc;     /* PAPI_add_event's answer (PAPI_OK: accepted) */
    int start_rc;   /* PAPI_start's, with it in the set */
    const char *units;
    const char *descr;
} fp_event;

/* The event of a code, or NULL. */
const fp_event *fp_event_of(int code);
/* The calling thread's current count of a counting event. */
long long fp_value(const fp_event *e);
/* Components: perf_event and fake, then cuda when FAKEPAPI_CUDA_DISABLED
 * is set (disabled, for that reason). */
int fp_components(void);
const PAPI_component_info_t *fp_component(int c);
/* Reads the knobs (at PAPI_library_init). */
void fp_knobs(void);

/* An event set (fp_sets.c). */
#define FP_MAX_EVENTS 16
typedef struct fp_set {
    int used, running, comp, n;
    pthread_t owner;
    const fp_event *ev[FP_MAX_EVENTS];
    long long zero[FP_MAX_EVENTS];
    long long reads;
    /* PAPI_overflow (fp_overflow.c): each event's threshold (0: none), the
     * value of its next overflow, a CPU-time timer for perf::TASK-CLOCK. */
    long long threshold[FP_MAX_EVENTS], next[FP_MAX_EVENTS];
    PAPI_overflow_handler_t handler;
    timer_t timer[FP_MAX_EVENTS];
    int timed[FP_MAX_EVENTS];
} fp_set;
/* The set of a handle, NULL when it is none. */
fp_set *fp_set_of(int es);
/* fp_overflow.c: a set starts or stops running on the calling thread (its
 * overflows armed or disarmed); the calling thread's scripted counts moved
 * (each threshold crossed is one overflow, now). */
void fp_overflow_started(int es);
void fp_overflow_stopped(int es);
void fp_overflow_scripted(void);

#endif
