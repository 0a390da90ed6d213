/*
 * papi.c - the PAPI backend (name "papi"): hardware and software counters
 * of PAPI per region and per GPU API call, on every application thread
 * (seed 000 §4.3; doc/BACKENDS.md, "PAPI"). Loading libpapi, the life
 * cycle, and what PAPI's GPU components offer; the event list is
 * papi_events.c, the counting papi_thread.c.
 *
 * libpapi is dlopened (GPUPROF_PAPI_LIBRARY, else libpapi.so.7.0 and the
 * names after it), never linked. Probe reads GPUPROF_PAPI_EVENTS first:
 * without it the backend is unavailable and PAPI is never loaded, so
 * "auto" costs nothing. Probe then initializes PAPI with thread support
 * (PAPI_thread_init with pthread_self) and checks the events on the calling
 * thread; init registers their metrics and installs the thread observer.
 * A pause starts a new generation (papi_thread.c): what threads count while
 * paused is dropped. GPUPROF_PAPI_SAMPLING (EVENT@THRESHOLD,...) arms
 * PAPI_overflow on every thread from its start; each overflow is a sample
 * of the interrupted call path (papi_thread.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "papi_be.h"

pp_api gpuprof__pp;
static bool initialized; /* PAPI_library_init and PAPI_thread_init done */
static bool registered;

static unsigned long thread_id(void) { return (unsigned long)pthread_self(); }

/* Resolves every function of pp_api from `h`; the first one missing, or
 * NULL. */
static const char *resolve(void *h)
{
#define SYM(field, name)                                                       \
    if (!(*(void **)&gpuprof__pp.field = dlsym(h, name)))                      \
        return name;
    SYM(library_init, "PAPI_library_init")
    SYM(thread_init, "PAPI_thread_init")
    SYM(register_thread, "PAPI_register_thread")
    SYM(unregister_thread, "PAPI_unregister_thread")
    SYM(set_debug, "PAPI_set_debug")
    SYM(strerror, "PAPI_strerror")
    SYM(name_to_code, "PAPI_event_name_to_code")
    SYM(event_info, "PAPI_get_event_info")
    SYM(event_component, "PAPI_get_event_component")
    SYM(num_components, "PAPI_num_components")
    SYM(component_info, "PAPI_get_component_info")
    SYM(create_eventset, "PAPI_create_eventset")
    SYM(add_event, "PAPI_add_event")
    SYM(remove_event, "PAPI_remove_event")
    SYM(start, "PAPI_start")
    SYM(stop, "PAPI_stop")
    SYM(read, "PAPI_read")
    SYM(cleanup_eventset, "PAPI_cleanup_eventset")
    SYM(destroy_eventset, "PAPI_destroy_eventset")
#undef SYM
    /* optional: without them, no overflow sampling (said at plan) */
    *(void **)&gpuprof__pp.overflow = dlsym(h, "PAPI_overflow");
    *(void **)&gpuprof__pp.overflow_index =
        dlsym(h, "PAPI_get_overflow_event_index");
    if (!gpuprof__pp.overflow_index)
        gpuprof__pp.overflow = NULL;
    return NULL;
}

/* dlopens libpapi and resolves it; false with the reason in `why`. */
static bool load(char *why, size_t size)
{
    static const char *const names[] = {"libpapi.so.7.0", "libpapi.so.7",
                                        "libpapi.so"};
    const char *env = getenv("GPUPROF_PAPI_LIBRARY");
    void *h = NULL;
    if (env && *env)
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !h && !(env && *env) && i < 3; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, size, "%s%s cannot be loaded (%s)",
                 env && *env ? "GPUPROF_PAPI_LIBRARY=" : "",
                 env && *env ? env : "libpapi.so.7.0", e ? e : "?");
        return false;
    }
    const char *missing = resolve(h);
    if (missing) {
        snprintf(why, size, "%s has no %s", env && *env ? env : "libpapi",
                 missing);
        dlclose(h);
        return false;
    }
    gpuprof__pp.lib = h; /* never closed: threads may still be inside */
    return true;
}

/* PAPI_library_init and PAPI_thread_init, once per process. */
static bool papi_start(char *why, size_t size)
{
    if (initialized)
        return true;
    if (!gpuprof__pp.lib && !load(why, size))
        return false;
    int v = gpuprof__pp.library_init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) {
        if (v > 0)
            snprintf(why, size, "libpapi is version %d.%d, this build wants "
                     "%d.%d", PAPI_VERSION_MAJOR(v), PAPI_VERSION_MINOR(v),
                     PAPI_VERSION_MAJOR(PAPI_VERSION),
                     PAPI_VERSION_MINOR(PAPI_VERSION));
        else
            snprintf(why, size, "PAPI_library_init: %s", gpuprof__pp_err(v));
        return false;
    }
    gpuprof__pp.set_debug(PAPI_QUIET); /* PAPI prints nothing of its own */
    int rc = gpuprof__pp.thread_init(thread_id);
    if (rc != PAPI_OK) {
        snprintf(why, size, "PAPI_thread_init: %s", gpuprof__pp_err(rc));
        return false;
    }
    initialized = true;
    return true;
}

static gpuprof_status pp_probe(void *user, char *reason, size_t size)
{
    (void)user;
    const char *list = getenv("GPUPROF_PAPI_EVENTS");
    const char *sampling = getenv("GPUPROF_PAPI_SAMPLING");
    if ((!list || !*list) && (!sampling || !*sampling)) {
        snprintf(reason, size, "GPUPROF_PAPI_EVENTS is not set: no counters "
                 "to read (e.g. GPUPROF_PAPI_EVENTS=PAPI_TOT_INS,"
                 "perf::TASK-CLOCK; GPUPROF_PAPI_SAMPLING=PAPI_TOT_CYC@10M "
                 "samples on overflow)");
        return GPUPROF_E_UNAVAILABLE;
    }
    if (!papi_start(reason, size))
        return GPUPROF_E_UNAVAILABLE;
    if (!gpuprof__pp_events_plan(list, sampling, reason, size))
        return GPUPROF_E_INVALID; /* a setting that cannot be used */
    return GPUPROF_OK;
}

/* Appends "name (state)" of PAPI component `ci` to buf. */
static void component_add(char *buf, size_t size,
                          const PAPI_component_info_t *ci)
{
    size_t n = strlen(buf);
    if (n < size)
        snprintf(buf + n, size - n, "%s%.64s (%s%.160s)", n ? ", " : "",
                 ci->name,
                 ci->disabled ? "disabled: " : "active",
                 ci->disabled ? ci->disabled_reason : "");
}

/* One info line on PAPI's GPU components: the ones that count on the
 * device (cuda, rocm, intel_gpu), and the monitoring ones (nvml, rocm_smi)
 * when present. Their events are named in GPUPROF_PAPI_EVENTS like any. */
static void report_gpu_components(void)
{
    static const char *const gpu[] = {"cuda", "rocm", "intel_gpu", "nvml",
                                      "rocm_smi"};
    char have[512] = "", mon[512] = "";
    int n = gpuprof__pp.num_components();
    for (int c = 0; c < n; c++) {
        const PAPI_component_info_t *ci = gpuprof__pp.component_info(c);
        for (int k = 0; ci && k < 5; k++)
            if (!strcmp(ci->name, gpu[k]))
                component_add(k < 3 ? have : mon, sizeof(have), ci);
    }
    if (have[0])
        gpuprof_be_log(GPUPROF_LOG_INFO,
                       "papi: GPU components: %s%s%s; their events in "
                       "GPUPROF_PAPI_EVENTS are read per region and per GPU "
                       "API call (device-wide, kernels not serialized)",
                       have, mon[0] ? "; monitoring: " : "", mon);
    else
        gpuprof_be_log(GPUPROF_LOG_INFO,
                       "papi: this PAPI has no GPU component (cuda, rocm, "
                       "intel_gpu)%s%s: no GPU counters",
                       mon[0] ? "; monitoring: " : "", mon);
}

static gpuprof_status pp_init(void *user)
{
    (void)user;
    if (!gpuprof__pp_events_register())
        return GPUPROF_E_UNAVAILABLE;
    report_gpu_components();
    char list[1024] = "";
    int counted = 0;
    for (int i = 0; i < gpuprof__pp_plan.nev; i++) {
        size_t n = strlen(list);
        if (gpuprof__pp_plan.ev[i].metric != UINT32_MAX && n < sizeof(list))
            snprintf(list + n, sizeof(list) - n, "%s%s",
                     counted++ ? ", " : "", gpuprof__pp_plan.ev[i].name);
    }
    if (counted)
        gpuprof_be_log(GPUPROF_LOG_INFO,
                       "papi: counting %d event(s) on every thread, in %d "
                       "event set(s): %s",
                       counted, gpuprof__pp_plan.nsets, list);
    for (int i = 0; i < gpuprof__pp_plan.nev; i++)
        if (gpuprof__pp_plan.ev[i].threshold)
            gpuprof_be_log(GPUPROF_LOG_INFO,
                           "papi: sampling %s every %lld events on every "
                           "thread from its start (PAPI_overflow)",
                           gpuprof__pp_plan.ev[i].name,
                           gpuprof__pp_plan.ev[i].threshold);
    gpuprof__pp_new_generation();
    atomic_store(&gpuprof__pp_on, 1);
    /* thread_start only with sampling: it makes the core keep a state for
     * every new thread, which counting alone does not need */
    gpuprof_observer obs = gpuprof__pp_observer;
    if (!gpuprof__pp_plan.nsampled)
        obs.thread_start = NULL;
    gpuprof_status st = gpuprof_be_observe(&obs, 0);
    if (st != GPUPROF_OK)
        atomic_store(&gpuprof__pp_on, 0);
    else if (gpuprof__pp_plan.nsampled)
        gpuprof__pp_thread_begin(); /* the thread of init, sampled too */
    return st;
}

/* Resuming starts a new generation (the resuming thread counts again from
 * now: its paused interval is dropped at once); so does pausing, after the
 * pausing thread gave what it counted so far (also at finalize). */
static gpuprof_status pp_start(void *user)
{
    (void)user;
    gpuprof__pp_new_generation();
    gpuprof__pp_thread_settle();
    return GPUPROF_OK;
}

static gpuprof_status pp_stop(void *user)
{
    (void)user;
    gpuprof__pp_thread_settle();
    gpuprof__pp_new_generation();
    return GPUPROF_OK;
}

/* A flush writes what the flushing thread counted until now. */
static gpuprof_status pp_flush(void *user)
{
    (void)user;
    gpuprof__pp_thread_settle();
    return GPUPROF_OK;
}

/* Other threads keep their event sets until they exit (a thread still
 * inside a callback must find them); libpapi stays loaded. */
static void pp_fini(void *user)
{
    (void)user;
    gpuprof_be_observe(NULL, 0);
    atomic_store(&gpuprof__pp_on, 0);
    gpuprof__pp_thread_release();
}

void gpuprof__backend_papi_register(void);
void gpuprof__backend_papi_register(void)
{
    if (registered)
        return;
    registered = true;
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "papi";
    b.caps = GPUPROF_BACKEND_CAP_COUNTERS;
    b.probe = pp_probe;
    b.init = pp_init;
    b.start = pp_start;
    b.stop = pp_stop;
    b.flush = pp_flush;
    b.fini = pp_fini;
    gpuprof_backend_register(&b, 0);
}
