/*
 * log.c - status strings, the per-thread last error, and the log callback.
 *
 * The library never prints on its own: messages go to the callback the
 * program installed, or, by default, to standard error through write(2)
 * (never stdio, which may be locked or redirected by the program) when
 * their level is at or below $GPUPROF_LOG (default: errors only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/internal.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static gpuprof_log_fn log_fn;
static void *log_user;
static _Atomic int log_level = -1; /* -1: not decided yet, read the env */
static __thread char last_error[512];

GPUPROF_API unsigned gpuprof_version(void) { return GPUPROF_VERSION_NUMBER; }

GPUPROF_API const char *gpuprof_version_string(void)
{
    return GPUPROF_VERSION_STRING;
}

GPUPROF_API const char *gpuprof_strerror(gpuprof_status st)
{
    switch (st) {
    case GPUPROF_OK: return "success";
    case GPUPROF_E_INVALID: return "invalid argument";
    case GPUPROF_E_STATE: return "call not valid in this state (not initialized or finalized)";
    case GPUPROF_E_NOMEM: return "out of memory";
    case GPUPROF_E_IO: return "input/output error";
    case GPUPROF_E_UNBALANCED: return "region end does not match the open region";
    case GPUPROF_E_NOTFOUND: return "not found";
    case GPUPROF_E_UNAVAILABLE: return "backend unavailable";
    case GPUPROF_E_VERSION: return "unsupported version or struct size";
    case GPUPROF_E_CORRUPT: return "damaged or truncated file";
    case GPUPROF_E_EXISTS: return "already exists or already initialized";
    case GPUPROF_E_LIMIT: return "limit reached";
    case GPUPROF_E_INTERNAL: return "internal error";
    }
    return "unknown status";
}

GPUPROF_API const char *gpuprof_last_error(void) { return last_error; }

int gpuprof__log_parse_level(const char *s)
{
    static const char *const names[] = {"off", "error", "warn", "info", "debug"};
    if (!s || !*s)
        return -1;
    for (int i = 0; i < 5; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
        return s[0] - '0';
    return -1;
}

static int level_now(void)
{
    int l = gp_load_relaxed(&log_level);
    if (l < 0) {
        l = gpuprof__log_parse_level(getenv("GPUPROF_LOG"));
        if (l < 0)
            l = GPUPROF_LOG_ERROR;
        gp_store_relaxed(&log_level, l);
    }
    return l;
}

void gpuprof__log_set_level_default(int level)
{
    if (level >= 0)
        gp_store_relaxed(&log_level, level);
}

GPUPROF_API gpuprof_status gpuprof_set_log(gpuprof_log_fn fn, void *user,
                                           int level)
{
    if (level > GPUPROF_LOG_DEBUG)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_set_log: level %d out of range", level);
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
    if (level >= 0)
        gp_store_relaxed(&log_level, level);
    return GPUPROF_OK;
}

static void emit(int level, const char *msg)
{
    pthread_mutex_lock(&log_lock);
    gpuprof_log_fn fn = log_fn;
    void *user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (fn) {
        fn((gpuprof_log_level)level, msg, user);
        return;
    }
    char line[600];
    int n = snprintf(line, sizeof(line), "gpuprof: %s\n", msg);
    if (n > (int)sizeof(line) - 1)
        n = (int)sizeof(line) - 1;
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w; /* nothing sensible to do when stderr is gone */
}

__attribute__((format(printf, 2, 0))) static void vlog(int level,
                                                       const char *fmt,
                                                       va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    emit(level, msg);
}

void gpuprof__log(int level, const char *fmt, ...)
{
    if (level > level_now())
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void gpuprof__log_v(int level, const char *fmt, va_list ap)
{
    if (level <= level_now())
        vlog(level, fmt, ap);
}

gpuprof_status gpuprof__fail(gpuprof_status st, int level, const char *fmt,
                             ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    if (level <= level_now())
        emit(level, last_error);
    return st;
}
