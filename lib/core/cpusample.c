/*
 * cpusample.c - CPU samples of every application thread (seed 000 §4.7):
 * the setting GPUPROF_CPU_SAMPLING and the timers each thread gets.
 *
 * The setting is a list of SOURCE@PERIOD separated by commas, each source
 * at most once, or "off":
 *   cputime@5ms    the thread's CPU-time clock: cpu.time, cpu.samples
 *   realtime@20ms  CLOCK_MONOTONIC: cpu.wall, cpu.wall_samples, blocked
 *                  threads included (their blocking call's path)
 * PERIOD is a number with ns, us, ms or s (no unit: ms), 100us..10s. "on"
 * is the default, CPU_SAMPLING_DEFAULT. A value that cannot be used says
 * so in one line and the default is used; everything else is measured as
 * ever.
 *
 * Which threads: a thread's timers are armed when the library learns of
 * it -- gpuprof__cpu_sampling_thread_start, called where its state is
 * made: at its start for threads a thread-start path reports (an interposed
 * pthread_create), else at its first call into the library (a region, a
 * GPU operation), and for the thread that calls gpuprof_init at init. A
 * thread that never calls the library and is not reported is not sampled.
 * The samples themselves are the sampler's (sampler.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"
#include "core/sampler.h"

/* Chosen by measured overhead (doc/CORE.md "CPU samples"). */
#define CPU_SAMPLING_DEFAULT "cputime@10ms"
#define MIN_PERIOD_NS 100000ull
#define MAX_PERIOD_NS 10000000000ull

/* One period, "5ms", into *ns; false when it is not one. */
static bool parse_period(const char *s, size_t len, uint64_t *ns)
{
    char buf[32];
    if (!len || len >= sizeof(buf))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    static const struct { const char *unit; double ns; } units[] = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1e6}};
    if (end == buf || !(v > 0))
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcmp(end, units[i].unit)) {
            double n = v * units[i].ns;
            if (n < (double)MIN_PERIOD_NS || n > (double)MAX_PERIOD_NS)
                return false;
            *ns = (uint64_t)(n + 0.5);
            return true;
        }
    return false;
}

/* The setting into per-source periods (0: off); false when it is not
 * one. */
static bool parse(const char *s, uint64_t period[GP_SRC_N])
{
    memset(period, 0, GP_SRC_N * sizeof(period[0]));
    if (!strcasecmp(s, "off") || !strcmp(s, "0") || !strcasecmp(s, "none"))
        return true;
    if (!strcasecmp(s, "on") || !strcmp(s, "1") || !strcasecmp(s, "default"))
        s = CPU_SAMPLING_DEFAULT;
    static const struct { const char *name; unsigned src; } srcs[] = {
        {"cputime", GP_SRC_CPUTIME}, {"realtime", GP_SRC_REALTIME}};
    while (*s) {
        size_t len = strcspn(s, ","), at = strcspn(s, "@");
        if (at >= len)
            return false;
        size_t k = 0;
        while (k < 2 && (strlen(srcs[k].name) != at ||
                         strncasecmp(s, srcs[k].name, at)))
            k++;
        if (k == 2 || period[srcs[k].src] ||
            !parse_period(s + at + 1, len - at - 1, &period[srcs[k].src]))
            return false;
        s += len;
        if (*s == ',' && !*++s)
            return false; /* a trailing comma */
    }
    return true;
}

void gpuprof__cpu_sampling_init(const char *setting)
{
    uint64_t period[GP_SRC_N];
    if (setting && *setting && !parse(setting, period)) {
        gpuprof__setting_ignored(
            "GPUPROF_CPU_SAMPLING", setting,
            "off, or cputime@PERIOD and/or realtime@PERIOD separated by a "
            "comma, PERIOD 100us..10s (e.g. cputime@5ms,realtime@20ms)",
            CPU_SAMPLING_DEFAULT);
        setting = NULL;
    }
    if (!setting || !*setting)
        parse(CPU_SAMPLING_DEFAULT, period);
    gpuprof__sampler_source(GP_SRC_CPUTIME, period[GP_SRC_CPUTIME],
                            GP_M_CPU_TIME, GP_M_CPU_SAMPLES, NULL);
    gpuprof__sampler_source(GP_SRC_REALTIME, period[GP_SRC_REALTIME],
                            GP_M_CPU_WALL, GP_M_CPU_WALL_SAMPLES, NULL);
    if (period[GP_SRC_CPUTIME] || period[GP_SRC_REALTIME])
        gpuprof__log(GPUPROF_LOG_DEBUG,
                     "CPU samples: cputime every %llu ns, realtime every "
                     "%llu ns (0: off)",
                     (unsigned long long)period[GP_SRC_CPUTIME],
                     (unsigned long long)period[GP_SRC_REALTIME]);
}

void gpuprof__cpu_sampling_thread_start(gp_thread *t)
{
    gpuprof__sampler_arm(t, GP_SRC_CPUTIME);
    gpuprof__sampler_arm(t, GP_SRC_REALTIME);
}
