/*
 * gpuprof.c - the life cycle: init, start/stop, flush, finalize, and what
 * keeps output readable when the program does not finish politely (atexit,
 * fork; periodic flushes and SIGTERM live in service.c).
 *
 * G.mode is the single word every hook loads; transitions happen under
 * init_lock. Periodic flushes and termination signals are service.c's. Finalize sets FINALIZED first, so hooks racing with it return
 * GPUPROF_E_STATE, then writes the final generation; thread states stay
 * allocated, so a late hook never touches freed memory. In a fork child the
 * atfork handler keeps only the forking thread, zeroes what the parent
 * measured (the parent writes that), and the child writes its own file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/unwind.h"
#include "core/trace.h"
#include "host/host.h"
#include "io/io.h"

gp_global gpuprof__g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* The running measurement was started by a launcher with
 * GPUPROF_OPT_JOINABLE and the program has not joined it yet; under
 * init_lock. */
static bool joinable;

/* ---- identity and paths ----------------------------------------------- */
static void read_identity(void)
{
    if (gethostname(G.host, sizeof(G.host) - 1) != 0 || !G.host[0])
        snprintf(G.host, sizeof(G.host), "localhost");
    for (char *p = G.host; *p; p++) /* keep file names portable */
        if (*p == '/' || *p == ' ')
            *p = '_';
    ssize_t n = readlink("/proc/self/exe", G.exe, sizeof(G.exe) - 1);
    G.exe[n > 0 ? n : 0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, G.cmdline, sizeof(G.cmdline) - 1) : 0;
    if (fd >= 0)
        close(fd);
    n = n > 0 ? n : 0;
    G.cmdline[n] = '\0';
    for (ssize_t i = 0; i + 1 < n; i++)
        if (G.cmdline[i] == '\0')
            G.cmdline[i] = ' ';
}

void gpuprof__make_path(void)
{
    char rank[16] = "x";
    if (G.cfg.rank >= 0)
        snprintf(rank, sizeof(rank), "%d", G.cfg.rank);
    snprintf(G.path, sizeof(G.path), "%s/%s-r%s-p%ld.gpuprof",
             G.cfg.output_dir, G.host, rank, (long)getpid());
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- fork ------------------------------------------------------------- */
static void fork_prepare(void)
{
    pthread_mutex_lock(&init_lock);
    gpuprof__backends_atfork_prepare();
    pthread_mutex_lock(&G.flush_lock);
    gpuprof__monitor_atfork_prepare();
    gpuprof__gpu_atfork_prepare();
    gpuprof__sampler_atfork_prepare(); /* before the trace's: a drain
                                          opens the samples' stream */
    gpuprof__trace_atfork_prepare();
    pthread_mutex_lock(&G.lock);
    gpuprof__intern_atfork_prepare();
    gpuprof__devices_atfork_prepare();
    gpuprof__fast_trace_atfork_prepare();
}

static void fork_parent(void)
{
    gpuprof__fast_trace_atfork_release();
    gpuprof__devices_atfork_parent();
    gpuprof__intern_atfork_parent();
    pthread_mutex_unlock(&G.lock);
    gpuprof__trace_atfork_parent();
    gpuprof__sampler_atfork_parent();
    gpuprof__gpu_atfork_parent();
    gpuprof__monitor_atfork_parent();
    pthread_mutex_unlock(&G.flush_lock);
    gpuprof__backends_atfork_parent();
    pthread_mutex_unlock(&init_lock);
}

static void fork_child(void)
{
    gpuprof__fast_trace_atfork_release();
    gpuprof__intern_atfork_child();
    gpuprof__devices_atfork_child();
    uint64_t now = gp_ticks();
    gpuprof__stats_reset();
    gpuprof__thread_atfork_child(now);
    G.forked = true;
    gpuprof__trace_atfork_child();
    gpuprof__gpu_atfork_child(gpuprof__tls_self);
    gpuprof__monitor_atfork_child();
    G.final_written = false;
    G.generation = 0;
    G.start_ticks = now;
    G.start_realtime_ns = realtime_ns();
    gpuprof__make_path();
    pthread_mutex_unlock(&G.lock);
    pthread_mutex_unlock(&G.flush_lock);
    gpuprof__backends_atfork_child();
    gpuprof__service_atfork_child();
    gpuprof__helpers_atfork_child();
    if (gpuprof__fork_is_helper()) {
        /* A runtime's helper (self.c), not the program: no measuring, and
         * no profile at exit. */
        G.final_written = true;
        gp_store_release(&G.mode, GP_MODE_FINALIZED);
    }
    gpuprof__sampler_atfork_child(); /* after the mode: a helper samples
                                        nothing */
    pthread_mutex_unlock(&init_lock);
}

static gpuprof_status finalize_locked(int mode);

/* Through init_lock even when the mode says finalized: a finalize for a
 * signal on the service thread sets the mode first and holds the lock while
 * it writes the profile and re-sends the signal. A program thread that
 * returned from our handler and reached exit() waits here for it, so the
 * process ends by the signal with its profile written, not by this exit
 * with a status of its own and no profile. */
static void at_exit(void)
{
    pthread_mutex_lock(&init_lock);
    int mode = gp_mode();
    if (mode == GP_MODE_MEASURING || mode == GP_MODE_PAUSED)
        finalize_locked(mode);
    pthread_mutex_unlock(&init_lock);
    gpuprof__service_deliver_pending();
}

static void register_once(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(at_exit);
    gpuprof__builtin_backends_register();
}

/* ---- public life cycle ------------------------------------------------ */
/* The program's own init after a launcher's (gpuprof_init in gpuprof.h
 * says what joining means): nothing is set up again; start_paused and the
 * log level apply, other settings that differ are said. Under init_lock. */
static gpuprof_status join_locked(const gpuprof_options *opts, int mode)
{
    gp_config asked;
    gpuprof_status st = gpuprof__config_load(&asked, opts);
    if (st)
        return st;
    joinable = false;
    gpuprof__log_set_level_default(asked.log_level);
    gpuprof__log(GPUPROF_LOG_INFO, "gpuprof_init: joined the measurement "
                 "its launcher started; profile: %s", G.path);
    gpuprof__config_join(&asked, &G.cfg);
    int to = asked.start_paused ? GP_MODE_PAUSED : GP_MODE_MEASURING;
    if (to != mode) {
        gp_store_release(&G.mode, to);
        gpuprof__backends_call(to == GP_MODE_PAUSED ? GP_BE_STOP : GP_BE_START);
        gpuprof__log(GPUPROF_LOG_INFO, "gpuprof_init: measurement %s, as "
                     "the program asked", to == GP_MODE_PAUSED ? "paused"
                                                               : "resumed");
    }
    return GPUPROF_OK;
}

static gpuprof_status init_locked(const gpuprof_options *opts)
{
    int mode = gp_mode();
    if ((mode == GP_MODE_MEASURING || mode == GP_MODE_PAUSED) && joinable)
        return join_locked(opts, mode);
    if (mode == GP_MODE_MEASURING || mode == GP_MODE_PAUSED)
        return gpuprof__fail(GPUPROF_E_EXISTS, GPUPROF_LOG_WARN,
                             "gpuprof_init: already initialized");
    if (mode == GP_MODE_FINALIZED)
        return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_WARN,
                             "gpuprof_init: measurement was finalized; a "
                             "process is measured once");
    if (gpuprof__started_as_helper()) /* a compiler's linker, say */
        return gpuprof__fail(GPUPROF_E_UNAVAILABLE, GPUPROF_LOG_INFO,
                             "gpuprof_init: this process was started by a "
                             "measured program's runtime while it built "
                             "kernels or the library saved binaries: not "
                             "measured");
    gp_config cfg;
    gpuprof_status st = gpuprof__config_load(&cfg, opts);
    if (st)
        return st;
    gpuprof__log_set_level_default(cfg.log_level);
    if ((st = gpuprof__make_dir(cfg.output_dir)))
        return st;
    /* Absolute, so a program that changes directory later still writes
     * where it was asked to at init. */
    char abs[PATH_MAX];
    if (realpath(cfg.output_dir, abs) && strlen(abs) < sizeof(cfg.output_dir))
        memcpy(cfg.output_dir, abs, strlen(abs) + 1);
    /* Tracing: "auto" reads CLOCK_MONOTONIC, the clock of device records,
     * so a launch and its kernel are ordered exactly (TSC ticks converted
     * with a fitted rate are tens of ns off it: NTP slews the monotonic
     * clock). GPUPROF_CLOCK=tsc still gets the TSC. */
    gpuprof__clock_setup(cfg.trace && cfg.clock == 0 ? GP_CLOCK_MONOTONIC
                                                     : cfg.clock);
    pthread_mutex_lock(&G.lock);
    G.cfg = cfg;
    read_identity();
    gpuprof__make_path();
    G.start_ticks = gp_ticks();
    G.start_realtime_ns = realtime_ns();
    pthread_mutex_unlock(&G.lock);
    gpuprof__outdir_check(cfg.output_dir, G.host); /* said now, not at exit */
    gpuprof__thread_startup();
    pthread_once(&once, register_once);
    if (cfg.trace) {
        char tpath[sizeof(G.path)];
        pthread_mutex_lock(&G.lock);
        memcpy(tpath, G.path, sizeof(tpath));
        pthread_mutex_unlock(&G.lock);
        size_t n = strlen(tpath), sl = strlen(GPUPROF_IO_SUFFIX);
        if (n > sl && n - sl + sizeof(GP_TRACE_SUFFIX) <= sizeof(tpath)) {
            memcpy(tpath + n - sl, GP_TRACE_SUFFIX, sizeof(GP_TRACE_SUFFIX));
            gpuprof__trace_start(tpath, cfg.trace_threads,
                                 (uint64_t)cfg.channel_items);
        }
    }
    gpuprof__gpu_startup();
    gp_store_release(&G.mode, cfg.start_paused ? GP_MODE_PAUSED
                                               : GP_MODE_MEASURING);
    gpuprof__helpers_export(); /* before any backend can build */
    /* libgpuprof.so's own frames (hooks) never stand in call paths. */
    gpuprof__unwind_hide_module_of((const void *)gpuprof_init);
    gpuprof__pyframes_enable(cfg.python_frames);
    gpuprof__idle_init();
    gpuprof__host_init();
    gpuprof__cpu_sampling_init(cfg.cpu_sampling);
    /* a backend's samples (gpuprof_be_sample_take): no timer of ours */
    gpuprof__sampler_source(GP_SRC_BACKEND, 0, UINT32_MAX, UINT32_MAX, NULL);
    if (gpuprof__sampler_period(GP_SRC_CPUTIME) ||
        gpuprof__sampler_period(GP_SRC_REALTIME)) {
        /* every thread from its start where lib/host sees it created */
        (void)gpuprof__thread_hook_add(gpuprof__cpu_sampling_thread_start);
        gp_thread *self = gpuprof__thread_get(); /* the thread of init */
        if (self)
            gpuprof__cpu_sampling_thread_start(self);
    }
    gpuprof__backends_init();
    gpuprof__service_start();
    joinable = opts && (opts->flags & GPUPROF_OPT_JOINABLE);
    gpuprof__log(GPUPROF_LOG_INFO, "measuring%s; profile: %s",
                 cfg.start_paused ? " (paused)" : "", G.path);
    return GPUPROF_OK;
}

GPUPROF_API gpuprof_status gpuprof_init(const gpuprof_options *opts)
{
    pthread_mutex_lock(&init_lock);
    gpuprof_status st = init_locked(opts);
    pthread_mutex_unlock(&init_lock);
    return st;
}

static gpuprof_status not_active(const char *fn)
{
    return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_DEBUG,
                         "%s: not initialized, or already finalized", fn);
}

static gpuprof_status switch_mode(int to, int be_call, const char *fn)
{
    pthread_mutex_lock(&init_lock);
    int mode = gp_mode();
    gpuprof_status st = GPUPROF_OK;
    if (mode != GP_MODE_MEASURING && mode != GP_MODE_PAUSED)
        st = not_active(fn);
    else if (mode != to) {
        gp_store_release(&G.mode, to);
        gpuprof__backends_call(be_call);
    }
    pthread_mutex_unlock(&init_lock);
    return st;
}

GPUPROF_API gpuprof_status gpuprof_start(void)
{
    return switch_mode(GP_MODE_MEASURING, GP_BE_START, "gpuprof_start");
}

GPUPROF_API gpuprof_status gpuprof_stop(void)
{
    return switch_mode(GP_MODE_PAUSED, GP_BE_STOP, "gpuprof_stop");
}

GPUPROF_API gpuprof_status gpuprof_flush(void)
{
    int mode = gp_mode();
    if (mode != GP_MODE_MEASURING && mode != GP_MODE_PAUSED)
        return not_active("gpuprof_flush");
    gpuprof__backends_call(GP_BE_FLUSH);
    return gpuprof__write_profile(false);
}

/* The work of finalize; under init_lock, measuring or paused. */
static gpuprof_status finalize_locked(int mode)
{
    if (mode == GP_MODE_MEASURING)
        gpuprof__sampler_finish_self(); /* its CPU time up to now */
    gp_store_release(&G.mode, GP_MODE_FINALIZED);
    gpuprof__service_stop();
    if (mode == GP_MODE_MEASURING)
        gpuprof__backends_call(GP_BE_STOP);
    gpuprof__backends_call(GP_BE_FLUSH);
    gpuprof__backends_call(GP_BE_FINI);
    gpuprof__idle_stop();
    /* What was submitted until now is in the final profile; later
     * submissions (a runtime thread still running) are refused. */
    gpuprof__gpu_stop_accepting();
    gpuprof_status st = gpuprof__write_profile(true);
    gpuprof__monitor_stop();
    gpuprof__trace_stop();
    return st;
}

GPUPROF_API gpuprof_status gpuprof_finalize(void)
{
    pthread_mutex_lock(&init_lock);
    int mode = gp_mode();
    if (mode != GP_MODE_MEASURING && mode != GP_MODE_PAUSED) {
        pthread_mutex_unlock(&init_lock);
        return not_active("gpuprof_finalize");
    }
    gpuprof_status st = finalize_locked(mode);
    pthread_mutex_unlock(&init_lock);
    gpuprof__service_deliver_pending(); /* a SIGTERM that met this finalize */
    return st;
}

bool gpuprof__finalize_for_signal(void)
{
    /* Never block: the thread holding init_lock may be a finalize that is
     * waiting for this very thread to end. */
    while (pthread_mutex_trylock(&init_lock) != 0) {
        if (gp_mode() == GP_MODE_FINALIZED)
            return false; /* that finalize delivers the signal */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    int mode = gp_mode();
    bool done = mode == GP_MODE_MEASURING || mode == GP_MODE_PAUSED;
    if (done) {
        finalize_locked(mode);
        /* Re-sent before init_lock is let go: a thread of the program that
         * returned from the handler and went on to exit() waits for the
         * lock in its own finalize (atexit), so the signal ends the process
         * before that thread can end it with an exit status of its own. */
        gpuprof__service_deliver_pending();
    }
    pthread_mutex_unlock(&init_lock);
    return done;
}

GPUPROF_API gpuprof_status gpuprof_output_path(char *buf, size_t size)
{
    if (!buf || !size)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_output_path: no buffer");
    if (gp_mode() == GP_MODE_UNINIT)
        return not_active("gpuprof_output_path");
    pthread_mutex_lock(&G.lock);
    size_t n = strlen(G.path);
    gpuprof_status st = GPUPROF_OK;
    if (n + 1 > size)
        st = gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_DEBUG,
                           "gpuprof_output_path: needs %zu bytes", n + 1);
    else
        memcpy(buf, G.path, n + 1);
    pthread_mutex_unlock(&G.lock);
    return st;
}
