/*
 * papi_events.c - the PAPI backend's event list: GPUPROF_PAPI_EVENTS read
 * into the plan every thread counts, each event checked on the probing
 * thread, and one metric registered per event.
 *
 * An event is kept when PAPI knows its name, it joins the event set of its
 * component after the events kept before it, and that set starts: PAPI
 * accepts some events into a set that the kernel then refuses to count
 * (perf_event_open fails at PAPI_start), so the check starts the set. Each
 * event dropped is one error line naming it and PAPI's reason; the others
 * are still counted. Metrics are named from the event ("papi." + the name
 * in [a-z0-9_.]), carry the exact event name in their description, and sum
 * (doc/BACKENDS.md, "PAPI").
 */
#include <stdio.h>
#include <string.h>

#include "papi_be.h"

pp_plan gpuprof__pp_plan;
#define P gpuprof__pp_plan

const char *gpuprof__pp_err(int rc)
{
    const char *s = gpuprof__pp.strerror ? gpuprof__pp.strerror(rc) : NULL;
    return s ? s : "unknown PAPI error";
}

void gpuprof__pp_metric_name(const char *event, char *out, size_t size)
{
    static const char head[] = "papi.";
    size_t n = 0, max = size && size - 1 < 63 ? size - 1 : 63;
    if (!strncmp(event, "PAPI_", 5))
        event += 5; /* a preset: PAPI_L1_DCM -> papi.l1_dcm */
    for (const char *h = head; *h && n < max; h++)
        out[n++] = *h;
    for (const char *p = event; *p && n < max; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        else if (c == ':' || c == '.' || c == '/')
            c = '.';
        else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '_';
        if (c == '.' && out[n - 1] == '.')
            continue; /* perf::X -> perf.x */
        out[n++] = c;
    }
    while (n > sizeof(head) - 1 && (out[n - 1] == '.' || out[n - 1] == '_'))
        n--;
    if (size)
        out[n < size ? n : size - 1] = '\0';
}

/* What PAPI says of a component name (a "cuda:::..." event's prefix), for
 * the line about an event PAPI does not know. */
static void component_hint(const char *event, char *out, size_t size)
{
    out[0] = '\0';
    const char *sep = strstr(event, ":::");
    if (!sep || sep == event || sep - event > 63)
        return;
    char comp[64];
    memcpy(comp, event, (size_t)(sep - event));
    comp[sep - event] = '\0';
    int n = gpuprof__pp.num_components();
    for (int c = 0; c < n; c++) {
        const PAPI_component_info_t *ci = gpuprof__pp.component_info(c);
        if (!ci || strcmp(ci->name, comp) != 0)
            continue;
        if (ci->disabled)
            snprintf(out, size, "; PAPI's %s component is disabled: %.200s",
                     comp,
                     ci->disabled_reason[0] ? ci->disabled_reason : "?");
        return;
    }
    snprintf(out, size, "; this PAPI has no %s component", comp);
}

/* The event set of component `comp` among the checking sets `es` (a new
 * one when it has none yet); -1 past PP_MAX_SETS or when PAPI refuses. */
static int set_of(int comp, int *es)
{
    for (int s = 0; s < P.nsets; s++)
        if (P.comp[s] == comp)
            return s;
    if (P.nsets == PP_MAX_SETS)
        return -1;
    es[P.nsets] = PAPI_NULL;
    if (gpuprof__pp.create_eventset(&es[P.nsets]) != PAPI_OK)
        return -1;
    P.comp[P.nsets] = comp;
    P.set_n[P.nsets] = 0;
    return P.nsets++;
}

/* Does `name` join the plan? 0 when it does, else PAPI's status (and, for
 * a component we cannot take, PAPI_ECMP). */
static int try_event(const char *name, int *es, int *code_out, int *set_out)
{
    int code = 0, rc = gpuprof__pp.name_to_code(name, &code);
    if (rc != PAPI_OK)
        return rc;
    int s = set_of(gpuprof__pp.event_component(code), es);
    if (s < 0)
        return PAPI_ECMP;
    if ((rc = gpuprof__pp.add_event(es[s], code)) != PAPI_OK)
        return rc;
    if ((rc = gpuprof__pp.start(es[s])) != PAPI_OK) {
        gpuprof__pp.remove_event(es[s], code);
        return rc;
    }
    long long v[PP_MAX_EVENTS];
    gpuprof__pp.stop(es[s], v);
    *code_out = code;
    *set_out = s;
    return PAPI_OK;
}

/* One line for an event that is not counted. */
static void dropped(const char *name, int rc, int known)
{
    char hint[320];
    if (!known) {
        component_hint(name, hint, sizeof(hint));
        gpuprof_be_log(GPUPROF_LOG_ERROR,
                       "papi: event %s is unknown to this PAPI (%s)%s; the "
                       "other events are counted",
                       name, gpuprof__pp_err(rc), hint);
    } else
        gpuprof_be_log(GPUPROF_LOG_ERROR,
                       "papi: event %s cannot be counted here (%s%s); the "
                       "other events are counted",
                       name, rc == PAPI_ECMP ? "more than 4 PAPI components"
                                             : gpuprof__pp_err(rc),
                       rc == PAPI_ECNFLCT ? ": with the events before it"
                                          : "");
}

/* Is `name` listed already, or does its metric name clash? 1: skip it. */
static int duplicate(const char *name)
{
    char m[64], o[64];
    gpuprof__pp_metric_name(name, m, sizeof(m));
    for (int i = 0; i < P.nev; i++) {
        gpuprof__pp_metric_name(P.ev[i].name, o, sizeof(o));
        if (!strcmp(P.ev[i].name, name) || !strcmp(m, o)) {
            gpuprof_be_log(GPUPROF_LOG_ERROR,
                           "papi: event %s is counted once, as %s (%s)", name,
                           o, P.ev[i].name);
            return 1;
        }
    }
    return 0;
}

/* Checks one event and, when it can be counted, appends it to the plan. */
static void plan_one(const char *name, int *es)
{
    int code = 0, set = 0, probe = 0;
    if (duplicate(name))
        return;
    int rc = try_event(name, es, &code, &set);
    if (rc != PAPI_OK) {
        dropped(name, rc, gpuprof__pp.name_to_code(name, &probe) == PAPI_OK);
        return;
    }
    pp_event *e = &P.ev[P.nev++];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->code = code;
    e->set = set;
    e->slot = P.set_n[set]++;
    e->metric = UINT32_MAX;
    e->sample_metric = UINT32_MAX;
    e->counted = true;
}

/* The planned event named `name`, or NULL. */
static pp_event *planned(const char *name)
{
    for (int i = 0; i < P.nev; i++)
        if (!strcmp(P.ev[i].name, name))
            return &P.ev[i];
    return NULL;
}

/* A threshold: digits with an optional k, M or G (x 1e3, 1e6, 1e9);
 * 0 when it is not one, or not within 1 .. 2^62. */
static long long threshold_of(const char *s)
{
    unsigned long long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (1ull << 62) / 10)
            return 0;
        v = v * 10 + (unsigned long long)(*p - '0');
    }
    unsigned long long mul = *p == 'k' ? 1000ull
                             : *p == 'M' ? 1000000ull
                             : *p == 'G' ? 1000000000ull
                                         : 1ull;
    if (mul != 1)
        p++;
    if (p == s || *p || !v || v > (1ull << 62) / mul)
        return 0;
    return (long long)(v * mul);
}

/* One entry of GPUPROF_PAPI_SAMPLING ("EVENT@THRESHOLD"): its event
 * planned (counted only when GPUPROF_PAPI_EVENTS names it) and sampled. */
static void plan_sampled(const char *entry, const char *setting, int *es)
{
    char name[PP_NAME_MAX];
    const char *at = strrchr(entry, '@');
    long long th = at ? threshold_of(at + 1) : 0;
    if (!at || at == entry || !th || (size_t)(at - entry) >= sizeof(name)) {
        gpuprof_be_setting_ignored("GPUPROF_PAPI_SAMPLING", setting,
                                   "EVENT@THRESHOLD,... (a PAPI event and "
                                   "how many of its events make one sample, "
                                   "e.g. PAPI_TOT_CYC@10M)",
                                   "the other entries");
        return;
    }
    snprintf(name, sizeof(name), "%.*s", (int)(at - entry), entry);
    pp_event *e = planned(name);
    if (!e) {
        int had = P.nev;
        if (P.nev == PP_MAX_EVENTS) {
            gpuprof_be_log(GPUPROF_LOG_ERROR,
                           "papi: event %s is not sampled: at most %d events "
                           "are counted and sampled",
                           name, PP_MAX_EVENTS);
            return;
        }
        plan_one(name, es);
        if (P.nev == had)
            return; /* said */
        e = &P.ev[had];
        e->counted = false;
    }
    if (e->threshold) {
        gpuprof_be_log(GPUPROF_LOG_ERROR,
                       "papi: event %s is sampled once, every %lld events",
                       name, e->threshold);
        return;
    }
    e->threshold = th;
    P.nsampled++;
}

/* Drops event sets no event was kept in (renumbering the others). */
static void compact_sets(void)
{
    int map[PP_MAX_SETS], n = 0;
    for (int s = 0; s < P.nsets; s++) {
        map[s] = P.set_n[s] ? n : -1;
        if (P.set_n[s]) {
            P.comp[n] = P.comp[s];
            P.set_n[n++] = P.set_n[s];
        }
    }
    for (int i = 0; i < P.nev; i++)
        P.ev[i].set = map[P.ev[i].set];
    P.nsets = n;
}

/* The next name of a comma-separated list, spaces trimmed, into `out`;
 * the rest of the list, or NULL at its end. *len: the name's length. */
static const char *next_name(const char *p, char *out, size_t size,
                             size_t *len)
{
    while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
    if (!*p)
        return NULL;
    size_t n = strcspn(p, ",");
    const char *rest = p + n;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    *len = n;
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
    return rest;
}

bool gpuprof__pp_events_plan(const char *list, const char *sampling,
                             char *why, size_t why_size)
{
    memset(&P, 0, sizeof(P));
    int es[PP_MAX_SETS];
    char name[PP_NAME_MAX];
    size_t len = 0;
    int named = 0;
    for (const char *p = list ? list : "";
         (p = next_name(p, name, sizeof(name), &len));) {
        if (len >= sizeof(name)) {
            gpuprof_be_log(GPUPROF_LOG_ERROR,
                           "papi: event %.*s... is longer than %d bytes; not "
                           "counted", 40, name, PP_NAME_MAX - 1);
            continue;
        }
        if (++named > PP_MAX_EVENTS) {
            char first[32];
            snprintf(first, sizeof(first), "the first %d", PP_MAX_EVENTS);
            gpuprof_be_setting_ignored("GPUPROF_PAPI_EVENTS", list,
                                       "at most 16 events", first);
            break;
        }
        plan_one(name, es);
    }
    int entries = 0;
    if (sampling && *sampling && !gpuprof__pp.overflow) {
        gpuprof_be_log(GPUPROF_LOG_ERROR,
                       "papi: this libpapi has no PAPI_overflow: "
                       "GPUPROF_PAPI_SAMPLING=%s is not used", sampling);
        sampling = NULL;
    }
    for (const char *p = sampling ? sampling : "";
         (p = next_name(p, name, sizeof(name), &len));) {
        entries++;
        if (len >= sizeof(name))
            gpuprof_be_setting_ignored("GPUPROF_PAPI_SAMPLING", sampling,
                                       "event names under 128 bytes",
                                       "the other entries");
        else
            plan_sampled(name, sampling, es);
    }
    for (int s = 0; s < P.nsets; s++) {
        gpuprof__pp.cleanup_eventset(es[s]);
        gpuprof__pp.destroy_eventset(&es[s]);
    }
    compact_sets();
    if (P.nev)
        return true;
    if (named || entries)
        snprintf(why, why_size,
                 "none of the events of %s%s%s%s%s can be counted (each is "
                 "said above)",
                 named ? "GPUPROF_PAPI_EVENTS=" : "", named ? list : "",
                 named && entries ? " and " : "",
                 entries ? "GPUPROF_PAPI_SAMPLING=" : "",
                 entries ? sampling : "");
    else
        snprintf(why, why_size,
                 "GPUPROF_PAPI_EVENTS=%s names no event (want a "
                 "comma-separated list of PAPI event names, e.g. "
                 "PAPI_TOT_INS,perf::TASK-CLOCK)",
                 list ? list : "");
    return false;
}

/* The unit of an event's counts: what PAPI says, and nanoseconds for the
 * perf clocks (which PAPI gives no unit). */
static uint32_t unit_of(const pp_event *e, const PAPI_event_info_t *info)
{
    const char *u = info ? info->units : "";
    if (!strcmp(u, "ns") || !strcmp(u, "nsec") || !strcmp(u, "nanoseconds"))
        return GPUPROF_METRIC_UNIT_NS;
    if (!strcmp(u, "B") || !strcmp(u, "bytes") || !strcmp(u, "Bytes"))
        return GPUPROF_METRIC_UNIT_BYTES;
    size_t n = strcspn(e->name + (strncmp(e->name, "perf::", 6) ? 0 : 6), ":");
    if (!strncmp(e->name, "perf::", 6) &&
        ((n == 10 && !strncmp(e->name + 6, "TASK-CLOCK", 10)) ||
         (n == 9 && !strncmp(e->name + 6, "CPU-CLOCK", 9))))
        return GPUPROF_METRIC_UNIT_NS;
    return GPUPROF_METRIC_UNIT_COUNT;
}

/* Registers one metric of event e: its counts, or (`sampled`) its
 * overflow samples; UINT32_MAX when it cannot be (said). */
static uint32_t register_one(const pp_event *e, const PAPI_event_info_t *info,
                             bool sampled)
{
    char metric[80], desc[320];
    gpuprof__pp_metric_name(e->name, metric, sampled ? 56 : 64);
    if (sampled) {
        size_t n = strlen(metric);
        snprintf(metric + n, sizeof(metric) - n, ".sampled");
        snprintf(desc, sizeof(desc),
                 "PAPI event %s, sampled: %lld events at the interrupted "
                 "call path per overflow%s%s",
                 e->name, e->threshold, info && info->short_descr[0] ? "; " : "",
                 info ? info->short_descr : "");
    } else
        snprintf(desc, sizeof(desc), "PAPI event %s%s%s", e->name,
                 info && info->short_descr[0] ? ": " : "",
                 info ? info->short_descr : "");
    gpuprof_metric_desc d = GPUPROF_METRIC_DESC_INIT;
    d.name = metric;
    d.description = desc;
    d.unit = unit_of(e, info);
    d.combine = GPUPROF_METRIC_SUM;
    d.attach = GPUPROF_METRIC_ON_CPU_PATHS;
    uint32_t id = UINT32_MAX;
    gpuprof_status st = gpuprof_be_metric_register(&d, &id);
    if (st == GPUPROF_OK)
        return id;
    gpuprof_be_log(GPUPROF_LOG_ERROR,
                   "papi: event %s: metric %s cannot be registered (%s); "
                   "not %s",
                   e->name, metric, gpuprof_strerror(st),
                   sampled ? "sampled" : "counted");
    return UINT32_MAX;
}

bool gpuprof__pp_events_register(void)
{
    static PAPI_event_info_t info; /* 10 KiB: not on an application stack */
    int kept = 0;
    for (int i = 0; i < P.nev; i++) {
        pp_event *e = &P.ev[i];
        int ok = gpuprof__pp.event_info(e->code, &info) == PAPI_OK;
        e->metric = e->counted ? register_one(e, ok ? &info : NULL, false)
                               : UINT32_MAX; /* counted, given to none */
        if (e->threshold) {
            e->sample_metric = register_one(e, ok ? &info : NULL, true);
            if (e->sample_metric == UINT32_MAX) {
                e->threshold = 0;
                P.nsampled--;
            }
        }
        kept += e->metric != UINT32_MAX || e->threshold;
    }
    return kept > 0;
}
