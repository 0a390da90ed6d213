/*
 * papi_probe.c - can the real libpapi of this machine count these events?
 * The tests of the PAPI backend against real PAPI (check_papi's cases on
 * the thread's CPU time, tests/scripts/papi.sh) run where it can and say
 * SKIP with the reason where it cannot: many VMs and containers have no
 * PMU, and then PAPI's perf_event component is disabled and knows not even
 * the kernel's software events.
 *
 *   papi_probe EVENT[@THRESHOLD][,EVENT...]
 *
 * prints "usable" and exits 0 when every event joins one event set that
 * starts on this thread (an event with @THRESHOLD armed for overflow
 * sampling first, as GPUPROF_PAPI_SAMPLING does); else prints one line
 * saying why and exits 1
 * (2: bad usage). Written for the tests; PAPI is dlopened as the backend
 * does (GPUPROF_PAPI_LIBRARY is not read: this asks about the real one).
 */
#include <dlfcn.h>
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct api {
    __typeof__(PAPI_library_init) *init;
    __typeof__(PAPI_set_debug) *debug;
    __typeof__(PAPI_strerror) *strerror;
    __typeof__(PAPI_event_name_to_code) *code;
    __typeof__(PAPI_num_components) *ncomp;
    __typeof__(PAPI_get_component_info) *comp;
    __typeof__(PAPI_create_eventset) *create;
    __typeof__(PAPI_add_event) *add;
    __typeof__(PAPI_start) *start;
    __typeof__(PAPI_stop) *stop;
    __typeof__(PAPI_overflow) *overflow;
} api;

static void on_overflow(int es, void *pc, long long vec, void *uc)
{
    (void)es, (void)pc, (void)vec, (void)uc;
}

static const char *err(const api *a, int rc)
{
    const char *s = a->strerror(rc);
    return s ? s : "unknown PAPI error";
}

/* Why PAPI does not know `ev`: its perf_event component's state. */
static void unknown(const api *a, const char *ev)
{
    for (int c = 0; c < a->ncomp(); c++) {
        const PAPI_component_info_t *ci = a->comp(c);
        if (ci && !strcmp(ci->name, "perf_event") && ci->disabled) {
            printf("PAPI's perf_event component is disabled (%s): %s is "
                   "unknown\n", ci->disabled_reason, ev);
            return;
        }
    }
    printf("PAPI does not know %s\n", ev);
}

static int probe(const api *a, const char *list)
{
    int v = a->init(PAPI_VER_CURRENT);
    if (v != PAPI_VER_CURRENT) {
        printf("PAPI_library_init: %s\n", v > 0 ? "another version" : err(a, v));
        return 1;
    }
    a->debug(PAPI_QUIET);
    int es = PAPI_NULL, rc = a->create(&es);
    if (rc != PAPI_OK) {
        printf("PAPI_create_eventset: %s\n", err(a, rc));
        return 1;
    }
    char buf[1024], *save = NULL;
    snprintf(buf, sizeof(buf), "%s", list);
    for (char *ev = strtok_r(buf, ",", &save); ev;
         ev = strtok_r(NULL, ",", &save)) {
        int code = 0, threshold = 0;
        char *at = strchr(ev, '@');
        if (at) {
            *at = '\0';
            threshold = atoi(at + 1);
        }
        if (a->code(ev, &code) != PAPI_OK) {
            unknown(a, ev);
            return 1;
        }
        if ((rc = a->add(es, code)) != PAPI_OK) {
            printf("%s cannot be counted: %s\n", ev, err(a, rc));
            return 1;
        }
        if (threshold > 0 &&
            (rc = a->overflow(es, code, threshold, 0, on_overflow)) !=
                PAPI_OK) {
            printf("%s cannot be sampled on overflow: %s\n", ev, err(a, rc));
            return 1;
        }
    }
    long long vals[64];
    if ((rc = a->start(es)) != PAPI_OK) {
        printf("%s cannot be started: %s\n", list, err(a, rc));
        return 1;
    }
    a->stop(es, vals);
    printf("usable\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: papi_probe EVENT[@THRESHOLD][,EVENT...]\n");
        return 2;
    }
    void *h = dlopen("libpapi.so.7.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("libpapi.so.7.0 cannot be loaded (%s)\n", dlerror());
        return 1;
    }
    api a;
#define SYM(f, name)                                                           \
    if (!(*(void **)&a.f = dlsym(h, name))) {                                  \
        printf("libpapi has no %s\n", name);                                   \
        return 1;                                                              \
    }
    SYM(init, "PAPI_library_init")
    SYM(debug, "PAPI_set_debug")
    SYM(strerror, "PAPI_strerror")
    SYM(code, "PAPI_event_name_to_code")
    SYM(ncomp, "PAPI_num_components")
    SYM(comp, "PAPI_get_component_info")
    SYM(create, "PAPI_create_eventset")
    SYM(add, "PAPI_add_event")
    SYM(start, "PAPI_start")
    SYM(stop, "PAPI_stop")
    SYM(overflow, "PAPI_overflow")
#undef SYM
    return probe(&a, argv[1]);
}
