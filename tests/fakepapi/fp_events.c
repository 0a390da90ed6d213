/*
 * fp_events.c - the fake libpapi's components and events, where their
 * values come from, and its messages (fakepapi.h, README.md).
 *
 * Two components are active: perf_event, with the two software events the
 * tests of real PAPI use (perf::TASK-CLOCK: the thread's CPU time;
 * perf::PAGE-FAULTS: its page faults, both from the kernel, so a program
 * that never heard of the fake gets values) and the preset PAPI_TOT_INS,
 * which PAPI knows but cannot count here; and "fake", whose events are
 * exact: fake::WORK and fake::BYTES count what the thread scripted with
 * fakepapi_add, fake::READS the reads of its event set (one per interval
 * the backend gives away), and fake::REFUSED joins a set that then refuses
 * to start (as the kernel refuses some events PAPI accepted).
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "fakepapi.h"

enum { C_PERF, C_FAKE, C_CUDA };

static const fp_event events[] = {
    {"perf::TASK-CLOCK", PAPI_NATIVE_MASK | 0, C_PERF, FP_CPU_NS, PAPI_OK,
     PAPI_OK, "", "the thread's CPU time (fake)"},
    {"perf::PAGE-FAULTS", PAPI_NATIVE_MASK | 1, C_PERF, FP_FAULTS, PAPI_OK,
     PAPI_OK, "", "the thread's page faults (fake)"},
    {"PAPI_TOT_INS", PAPI_TOT_INS, C_PERF, FP_NONE, PAPI_ENOEVNT, PAPI_OK, "",
     "Instructions completed"},
    {"fake::WORK", PAPI_NATIVE_MASK | 2, C_FAKE, FP_SCRIPT0, PAPI_OK, PAPI_OK,
     "", "work the thread scripted"},
    {"fake::BYTES", PAPI_NATIVE_MASK | 3, C_FAKE, FP_SCRIPT1, PAPI_OK, PAPI_OK,
     "bytes", "bytes the thread scripted"},
    {"fake::READS", PAPI_NATIVE_MASK | 4, C_FAKE, FP_READS, PAPI_OK, PAPI_OK,
     "", "reads of the event set"},
    {"fake::REFUSED", PAPI_NATIVE_MASK | 5, C_FAKE, FP_NONE, PAPI_OK,
     PAPI_ECNFLCT, "", "accepted, never started"},
};
#define NEVENTS (int)(sizeof(events) / sizeof(events[0]))

static PAPI_component_info_t comps[3];
static int ncomps;
static __thread long long scripted[2];

static void comp_set(int c, const char *name, const char *reason)
{
    PAPI_component_info_t *ci = &comps[c];
    memset(ci, 0, sizeof(*ci));
    strncpy(ci->name, name, sizeof(ci->name) - 1);
    strncpy(ci->short_name, name, sizeof(ci->short_name) - 1);
    ci->CmpIdx = c;
    ci->initialized = 1;
    if (reason) {
        ci->disabled = PAPI_ECMP;
        strncpy(ci->disabled_reason, reason, sizeof(ci->disabled_reason) - 1);
    }
}

void fp_knobs(void)
{
    const char *cuda = getenv("FAKEPAPI_CUDA_DISABLED");
    comp_set(C_PERF, "perf_event", NULL);
    comp_set(C_FAKE, "fake", NULL);
    ncomps = 2;
    if (cuda && *cuda)
        comp_set(ncomps++, "cuda", cuda);
}

const fp_event *fp_event_of(int code)
{
    for (int i = 0; i < NEVENTS; i++)
        if (events[i].code == code)
            return &events[i];
    return NULL;
}

long long fp_value(const fp_event *e)
{
    struct timespec ts;
    struct rusage ru;
    switch (e->src) {
    case FP_CPU_NS:
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    case FP_FAULTS:
        getrusage(RUSAGE_THREAD, &ru);
        return ru.ru_minflt + ru.ru_majflt;
    case FP_SCRIPT0:
        return scripted[0];
    case FP_SCRIPT1:
        return scripted[1];
    default:
        return 0; /* FP_READS: the set counts; FP_NONE never runs */
    }
}

int fp_components(void) { return ncomps; }

const PAPI_component_info_t *fp_component(int c)
{
    return c >= 0 && c < ncomps ? &comps[c] : NULL;
}

FP_API int fakepapi_add(const char *event, long long n)
{
    if (!strcmp(event, "fake::WORK"))
        scripted[0] += n;
    else if (!strcmp(event, "fake::BYTES"))
        scripted[1] += n;
    else
        return -1;
    fp_overflow_scripted(); /* thresholds crossed: overflows, now */
    return 0;
}

/* ---- PAPI's calls ------------------------------------------------------- */
FP_API int PAPI_event_name_to_code(const char *in, int *out)
{
    for (int i = 0; in && out && i < NEVENTS; i++)
        if (!strcmp(events[i].name, in)) {
            *out = events[i].code;
            return PAPI_OK;
        }
    return PAPI_ENOEVNT;
}

FP_API int PAPI_get_event_info(int code, PAPI_event_info_t *info)
{
    const fp_event *e = fp_event_of(code);
    if (!e || !info)
        return PAPI_ENOEVNT;
    memset(info, 0, sizeof(*info));
    info->event_code = (unsigned)code;
    strncpy(info->symbol, e->name, sizeof(info->symbol) - 1);
    strncpy(info->short_descr, e->descr, sizeof(info->short_descr) - 1);
    strncpy(info->units, e->units, sizeof(info->units) - 1);
    info->component_index = e->comp;
    return PAPI_OK;
}

FP_API int PAPI_get_event_component(int code)
{
    const fp_event *e = fp_event_of(code);
    return e ? e->comp : PAPI_ENOEVNT;
}

FP_API int PAPI_num_components(void) { return ncomps; }

FP_API const PAPI_component_info_t *PAPI_get_component_info(int cidx)
{
    return fp_component(cidx);
}

FP_API int PAPI_set_debug(int level) { return level >= 0 ? PAPI_OK : PAPI_EINVAL; }

FP_API char *PAPI_strerror(int rc)
{
    static const struct {
        int rc;
        const char *s;
    } msg[] = {
        {PAPI_OK, "No error"},
        {PAPI_EINVAL, "Invalid argument"},
        {PAPI_ENOMEM, "Out of memory"},
        {PAPI_ECMP, "Not supported by the component"},
        {PAPI_ENOEVNT, "Event does not exist"},
        {PAPI_ECNFLCT, "Event conflicts with the event set (fake)"},
        {PAPI_ENOTRUN, "Event set is not running"},
        {PAPI_EISRUN, "Event set is running"},
        {PAPI_ENOINIT, "PAPI is not initialized"},
    };
    for (size_t i = 0; i < sizeof(msg) / sizeof(msg[0]); i++)
        if (msg[i].rc == rc)
            return (char *)msg[i].s;
    return NULL;
}
