/*
 * config.c - gpuprof_options and GPUPROF_* environment variables.
 *
 * Precedence: a field the program set in gpuprof_options wins; a field left
 * NULL / GPUPROF_UNSET takes the environment variable; then the default.
 * GPUPROF_OPT_IGNORE_ENV skips the environment. A variable whose value
 * cannot be used says so in one line at the default log level (the
 * variable, its value, what it should be, what is used instead); so do the
 * backends' own variables (gpuprof__setting_ignored). The caller's struct is read
 * as min(its size, ours) bytes, so old programs keep working when fields
 * are appended (doc/ABI.md). A program's own init that joins a launcher's
 * measurement compares what it asked for with what runs
 * (gpuprof__config_join).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/internal.h"

static const char *env(const gpuprof_options *o, const char *name)
{
    if (o->flags & GPUPROF_OPT_IGNORE_ENV)
        return NULL;
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void gpuprof__setting_ignored(const char *var, const char *value,
                              const char *want, const char *instead)
{
    gpuprof__log(GPUPROF_LOG_ERROR, "ignoring %s=%s (%s); using %s", var,
                 value, want, instead);
}

/* Parses a non-negative integer or a boolean word; -1 when invalid. */
static int64_t parse_int(const char *s)
{
    if (strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0 ||
        strcasecmp(s, "true") == 0)
        return 1;
    if (strcasecmp(s, "no") == 0 || strcasecmp(s, "off") == 0 ||
        strcasecmp(s, "false") == 0)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0)
        return -1;
    return v;
}

/* Takes the option if set, else the variable, else the default. */
static gpuprof_status pick_int(const gpuprof_options *o, int64_t opt,
                               const char *var, int64_t def, int64_t max,
                               int64_t *out)
{
    const char *s;
    if (opt != GPUPROF_UNSET) {
        if (opt < 0 || opt > max)
            return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                                 "option for %s out of range: %lld", var,
                                 (long long)opt);
        *out = opt;
    } else if ((s = env(o, var))) {
        int64_t v = parse_int(s);
        if (v < 0 || v > max) {
            char want[64], instead[32];
            if (max == 1)
                snprintf(want, sizeof(want), "1/0, yes/no, on/off or "
                         "true/false");
            else
                snprintf(want, sizeof(want), "a number in 0..%lld",
                         (long long)max);
            snprintf(instead, sizeof(instead), "%lld", (long long)def);
            gpuprof__setting_ignored(var, s, want, instead);
            v = def;
        }
        *out = v;
    } else {
        *out = def;
    }
    return GPUPROF_OK;
}

/* The first usable rank variable; a malformed one before it says so. */
static int rank_from_env(const gpuprof_options *o)
{
    static const char *const vars[] = {"GPUPROF_RANK", "OMPI_COMM_WORLD_RANK",
                                       "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                                       "MV2_COMM_WORLD_RANK"};
    size_t nv = sizeof(vars) / sizeof(vars[0]), i;
    int rank = -1;
    for (i = 0; i < nv && rank < 0; i++) {
        const char *s = env(o, vars[i]);
        int64_t v = s && *s >= '0' && *s <= '9' ? parse_int(s) : -1;
        if (v >= 0 && v <= INT32_MAX)
            rank = (int)v;
    }
    for (size_t j = 0; j + (rank >= 0) < i; j++) {
        const char *s = env(o, vars[j]);
        if (!s)
            continue;
        char instead[64];
        if (rank >= 0)
            snprintf(instead, sizeof(instead), "rank %d from %s", rank,
                     vars[i - 1]);
        else
            snprintf(instead, sizeof(instead), "no rank");
        gpuprof__setting_ignored(vars[j], s, "a number in 0..2147483647",
                                 instead);
    }
    return rank;
}

static int log_level_from(const gpuprof_options *o)
{
    if (o->log_level != GPUPROF_UNSET)
        return o->log_level;
    const char *s = env(o, "GPUPROF_LOG");
    int l = gpuprof__log_parse_level(s);
    if (s && l < 0)
        gpuprof__setting_ignored("GPUPROF_LOG", s, "off, error, warn, info, "
                                 "debug or 0..4", "error");
    return l;
}

static int clock_from(const gpuprof_options *o)
{
    if (o->clock != GPUPROF_UNSET)
        return o->clock;
    const char *s = env(o, "GPUPROF_CLOCK");
    if (!s || strcasecmp(s, "auto") == 0)
        return 0;
    if (strcasecmp(s, "monotonic") == 0)
        return GP_CLOCK_MONOTONIC;
    if (strcasecmp(s, "tsc") == 0)
        return GP_CLOCK_TSC;
    gpuprof__setting_ignored("GPUPROF_CLOCK", s, "auto, monotonic or tsc",
                             "auto");
    return 0;
}

static void default_dir(char *buf, size_t size)
{
    char exe[4096];
    const char *base = "program";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        const char *slash = strrchr(exe, '/');
        base = slash ? slash + 1 : exe;
    }
    snprintf(buf, size, "gpuprof-%.200s-measurements", base);
}

static gpuprof_status strings(gp_config *c, const gpuprof_options *o)
{
    const char *s = o->output_dir ? o->output_dir : env(o, "GPUPROF_OUTPUT");
    if (s && strlen(s) >= sizeof(c->output_dir))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "output directory name too long");
    if (s && !*s)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "output directory name is empty");
    if (s)
        snprintf(c->output_dir, sizeof(c->output_dir), "%s", s);
    else
        default_dir(c->output_dir, sizeof(c->output_dir));
    if (o->backends && !*o->backends)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "backend list is empty (use \"none\")");
    s = o->backends ? o->backends : env(o, "GPUPROF_BACKENDS");
    c->backends_from_env = !o->backends && s;
    if (s && strlen(s) >= sizeof(c->backends))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "backend list too long");
    snprintf(c->backends, sizeof(c->backends), "%s", s ? s : "auto");
    return GPUPROF_OK;
}

gpuprof_status gpuprof__config_load(gp_config *c, const gpuprof_options *in)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    if (in) {
        /* 0.1 is the first version: every field up to `signals` is in it. */
        if (in->size < offsetof(gpuprof_options, signals) + sizeof(in->signals) ||
            in->size > (1u << 16))
            return gpuprof__fail(GPUPROF_E_VERSION, GPUPROF_LOG_ERROR,
                                 "gpuprof_options.size %zu not understood "
                                 "(this library: %zu)", in->size, sizeof(o));
        memcpy(&o, in, in->size < sizeof(o) ? in->size : sizeof(o));
    }
    memset(c, 0, sizeof(*c));
    /* A level the program chose applies to what is said below already. */
    if (o.log_level >= GPUPROF_LOG_OFF && o.log_level <= GPUPROF_LOG_DEBUG)
        gpuprof__log_set_level_default(o.log_level);
    int64_t v;
    gpuprof_status st;
    if ((st = strings(c, &o)))
        return st;
    if ((st = pick_int(&o, o.start_paused, "GPUPROF_START_PAUSED", 0, 1, &v)))
        return st;
    c->start_paused = v;
    if ((st = pick_int(&o, o.trace, "GPUPROF_TRACE", 0, 1, &v)))
        return st;
    c->trace = v;
    if (o.trace_threads == 0)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "option for GPUPROF_TRACE_THREADS out of range: 0 "
                             "(1..64)");
    if ((st = pick_int(&o, o.trace_threads, "GPUPROF_TRACE_THREADS", 1, 64, &v)))
        return st;
    if (v == 0) {
        gpuprof__setting_ignored("GPUPROF_TRACE_THREADS", "0", "1..64", "1");
        v = 1;
    }
    c->trace_threads = (int)v;
    if ((st = pick_int(&o, o.flush_period_ms, "GPUPROF_FLUSH_PERIOD_MS", 0,
                       INT64_C(1) << 40, &v)))
        return st;
    c->flush_period_ms = v;
    if ((st = pick_int(&o, o.keep_threads, "GPUPROF_KEEP_THREADS", 256,
                       INT32_MAX, &v)))
        return st;
    c->keep_threads = v;
    if ((st = pick_int(&o, o.signals, "GPUPROF_SIGNALS", 1, 1, &v)))
        return st;
    c->signals = v;
    if ((st = pick_int(&o, GPUPROF_UNSET, "GPUPROF_GPU_BINARIES", 1, 1, &v)))
        return st;
    c->gpu_binaries = v;
    if ((st = pick_int(&o, GPUPROF_UNSET, "GPUPROF_PYTHON_FRAMES", 1, 1, &v)))
        return st;
    c->python_frames = v;
    /* An older caller's struct ends before cpu_sampling: o keeps NULL. */
    const char *cs =
        o.cpu_sampling ? o.cpu_sampling : env(&o, "GPUPROF_CPU_SAMPLING");
    if (cs && strlen(cs) >= sizeof(c->cpu_sampling))
        gpuprof__setting_ignored("GPUPROF_CPU_SAMPLING", cs,
                                 "at most 127 characters", "the default");
    else if (cs) /* parsed by cpusample.c */
        snprintf(c->cpu_sampling, sizeof(c->cpu_sampling), "%s", cs);
    /* An older caller's struct ends before channel_items: o keeps UNSET. */
    int64_t items = o.channel_items;
    if ((st = pick_int(&o, items, "GPUPROF_CHANNEL_ITEMS", 1 << 20,
                       INT64_C(1) << 32, &v)))
        return st;
    if (v < 16) {
        if (items != GPUPROF_UNSET)
            return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                                 "option for GPUPROF_CHANNEL_ITEMS out of "
                                 "range: %lld (16..2^32)", (long long)v);
        char val[32];
        snprintf(val, sizeof(val), "%lld", (long long)v);
        gpuprof__setting_ignored("GPUPROF_CHANNEL_ITEMS", val, "16..2^32",
                                 "16");
        v = 16;
    }
    c->channel_items = v;
    c->log_level = log_level_from(&o);
    if (c->log_level > GPUPROF_LOG_DEBUG || c->log_level < -1)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "log level %d out of range", c->log_level);
    if (o.rank < GPUPROF_UNSET)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "rank %d out of range (>= 0, or GPUPROF_UNSET)",
                             (int)o.rank);
    c->rank = o.rank != GPUPROF_UNSET ? o.rank : rank_from_env(&o);
    c->clock = clock_from(&o);
    if (c->clock < 0 || c->clock > GP_CLOCK_TSC)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_ERROR,
                             "clock %d out of range", c->clock);
    return GPUPROF_OK;
}

/* One setting of a joining init that differs from the running one. */
static void cannot_apply(const char *var, const char *asked,
                         const char *running)
{
    gpuprof__log(GPUPROF_LOG_WARN, "gpuprof_init: joined a running "
                 "measurement: %s=%s cannot apply any more (in use: %s)", var,
                 asked, running);
}

static void differ_int(const char *var, int64_t asked, int64_t running)
{
    char a[32], r[32];
    if (asked == running)
        return;
    snprintf(a, sizeof(a), "%lld", (long long)asked);
    snprintf(r, sizeof(r), "%lld", (long long)running);
    cannot_apply(var, a, r);
}

void gpuprof__config_join(const gp_config *asked, const gp_config *running)
{
    /* The running directory was made absolute at its init; the asked one
     * is compared the same way when it exists (it is never created). */
    char abs[PATH_MAX];
    const char *dir = asked->output_dir;
    if (realpath(dir, abs))
        dir = abs;
    if (strcmp(dir, running->output_dir))
        cannot_apply("GPUPROF_OUTPUT", asked->output_dir, running->output_dir);
    if (strcmp(asked->backends, running->backends))
        cannot_apply("GPUPROF_BACKENDS", asked->backends, running->backends);
    differ_int("GPUPROF_TRACE", asked->trace, running->trace);
    differ_int("GPUPROF_TRACE_THREADS", asked->trace_threads,
               running->trace_threads);
    differ_int("GPUPROF_FLUSH_PERIOD_MS", asked->flush_period_ms,
               running->flush_period_ms);
    differ_int("GPUPROF_RANK", asked->rank, running->rank);
    differ_int("GPUPROF_CLOCK", asked->clock, running->clock);
    differ_int("GPUPROF_KEEP_THREADS", asked->keep_threads,
               running->keep_threads);
    differ_int("GPUPROF_SIGNALS", asked->signals, running->signals);
    differ_int("GPUPROF_CHANNEL_ITEMS", asked->channel_items,
               running->channel_items);
    differ_int("GPUPROF_GPU_BINARIES", asked->gpu_binaries,
               running->gpu_binaries);
    differ_int("GPUPROF_PYTHON_FRAMES", asked->python_frames,
               running->python_frames);
}
