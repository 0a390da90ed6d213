/*
 * cl_idle.c - GPU_IDLE_CAUSE (seed 002 §IV.A): CPU code that ran while no
 * kernel was running on any device.
 *
 * Each thread that calls OpenCL (and the thread that called gpuprof_init)
 * gets a timer on its own CPU-time clock that sends it SIGPROF every period
 * of CPU time it uses (GPUPROF_IDLE_PERIOD_US, default 2000; 0 turns this
 * off). The handler does only what is safe there: when no kernel is in
 * flight it captures the interrupted call path and the innermost open
 * region into the thread's own ring (no lock, no allocation). The thread
 * drains its ring at its next OpenCL call, wait or flush -- the owner is
 * the single writer of its region tree -- adding one period of
 * blame.gpu_idle_cause to each sampled path. Samples a thread takes after
 * its last OpenCL call and before it exits are not drained (counted in
 * nothing; documented).
 *
 * The signal: SIGPROF, only when the program left it at its default action
 * (a program that profiles itself keeps it); SA_RESTART, so interrupted
 * system calls resume. Timers count CPU time: a blocked thread is never
 * interrupted.
 */
#define _GNU_SOURCE /* gettid, sigev_notify_thread_id */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/opencl/cl.h"

#define RING 512         /* ~1 s of CPU at the default period */
#define SAMPLE_FRAMES 40
#define NOVER 8          /* regions of samples taken with the ring full */

typedef struct sample {
    int n;
    uint32_t region;
    uint32_t periods; /* 1 + the timer's overrun (CPU timers tick coarsely) */
    void *ip[SAMPLE_FRAMES];
} sample;

typedef struct ring {
    _Atomic uint32_t head; /* the handler */
    _Atomic uint32_t tail; /* the owner */
    timer_t timer;
    struct ring *next;
    /* Ring full: the handler still counts the sample, on its region only
     * (call path lost); the owner adds these at its next drain. */
    _Atomic uint32_t over_region[NOVER];
    _Atomic uint64_t over_count[NOVER];
    sample s[RING];
} ring;

static __thread ring *tls_ring __attribute__((tls_model("initial-exec")));
static __thread int tls_tried __attribute__((tls_model("initial-exec")));
static _Atomic int sampling;
static uint64_t period_ns;
static pthread_mutex_t rings_mu = PTHREAD_MUTEX_INITIALIZER;
static ring *rings;
static bool handler_installed;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int e = errno;
    uint32_t periods = 1 + (si && si->si_code == SI_TIMER && si->si_overrun > 0
                                ? (uint32_t)si->si_overrun
                                : 0u);
    ring *r = tls_ring;
    /* No sample of the library's own work (core self.c): its time is
     * gpuprof.self_ns, never the program's. */
    if (r && gp_load_relaxed(&sampling) && !gpuprof_be_in_self() &&
        gpuprof__opencl_kernels_running() == 0) {
        uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
        uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
        uint32_t region = gpuprof_be_sample_region();
        if (h - t < RING) {
            sample *s = &r->s[h % RING];
            s->region = region;
            s->periods = periods;
            s->n = gpuprof_be_backtrace_in_signal(s->ip, SAMPLE_FRAMES);
            if (s->n > 0)
                atomic_store_explicit(&r->head, h + 1, memory_order_release);
        } else {
            /* The owner only reads and zeroes counts: region slots are
             * claimed here, once, with region + 1 (0: free). */
            for (int i = 0; i < NOVER; i++) {
                uint32_t cur = atomic_load_explicit(&r->over_region[i],
                                                    memory_order_relaxed);
                if (!cur) {
                    atomic_store_explicit(&r->over_region[i], region + 1,
                                          memory_order_relaxed);
                    cur = region + 1;
                }
                if (cur == region + 1) {
                    atomic_fetch_add_explicit(&r->over_count[i], periods,
                                              memory_order_relaxed);
                    break;
                }
            }
        }
    }
    errno = e;
}

/* The calling thread's timer, once. */
void gpuprof__cl_idle_thread(void)
{
    if (tls_tried || !gp_load_relaxed(&sampling))
        return;
    tls_tried = 1;
    ring *r = calloc(1, sizeof(*r));
    if (!r)
        return;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = gettid(); /* sigev_notify_thread_id */
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &r->timer) != 0) {
        gpuprof_be_log(GPUPROF_LOG_DEBUG, "opencl: no CPU-time timer: %s",
                       strerror(errno));
        free(r);
        return;
    }
    pthread_mutex_lock(&rings_mu);
    r->next = rings;
    rings = r;
    pthread_mutex_unlock(&rings_mu);
    tls_ring = r; /* before the first expiry */
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(period_ns % 1000000000u);
    its.it_value = its.it_interval;
    timer_settime(r->timer, 0, &its, NULL);
}

/* Owner: the samples taken since the last drain, into its region tree. */
void gpuprof__cl_idle_drain(void)
{
    ring *r = tls_ring;
    if (!r)
        return;
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    for (int i = 0; i < NOVER; i++) {
        uint64_t c = atomic_load_explicit(&r->over_count[i],
                                          memory_order_relaxed);
        uint32_t reg = atomic_load_explicit(&r->over_region[i],
                                            memory_order_relaxed);
        if (!c || !reg)
            continue;
        atomic_fetch_sub_explicit(&r->over_count[i], c, memory_order_relaxed);
        gpuprof_be_sample_add(reg - 1, NULL, 0, 0,
                              GPUPROF_METRIC_GPU_IDLE_CAUSE, c * period_ns);
    }
    if (t == h)
        return;
    for (; t != h; t++) {
        const sample *s = &r->s[t % RING];
        /* Frames: [0] the handler, [1] the signal trampoline. A path that
         * cannot be recorded is counted in records.dropped by the core. */
        int skip = 2;
        if (s->n <= skip)
            continue;
        gpuprof_be_sample_add(
            s->region, s->ip + skip, s->n - skip, s->n == SAMPLE_FRAMES,
            GPUPROF_METRIC_GPU_IDLE_CAUSE, s->periods * period_ns);
    }
    atomic_store_explicit(&r->tail, h, memory_order_release);
}

static long period_us = 2000; /* 0: off */

/* GPUPROF_IDLE_PERIOD_US, read once at the backend's init: a value that is
 * not a number of microseconds says so and the default is used; one under
 * 100 is raised to 100. */
void gpuprof__cl_idle_config(void)
{
    const char *env = getenv("GPUPROF_IDLE_PERIOD_US");
    period_us = 2000;
    if (!env || !*env)
        return;
    char *end;
    errno = 0;
    long us = strtol(env, &end, 10);
    if (errno || end == env || *end || us < 0 || us > 60000000) {
        gpuprof_be_setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                   "microseconds in 0..60000000, 0: off",
                                   "2000");
        return;
    }
    if (us > 0 && us < 100) {
        gpuprof_be_setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                   "at least 100, or 0: off", "100");
        us = 100;
    }
    period_us = us;
}

void gpuprof__cl_idle_start(void)
{
    if (period_us <= 0)
        return;
    period_ns = (uint64_t)period_us * 1000u;
    if (gpuprof_be_backtrace_in_signal(NULL, 0) < 0) {
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "opencl: GPU_IDLE_CAUSE off: this "
                       "build cannot unwind in a signal handler");
        return;
    }
    if (!handler_installed) {
        struct sigaction old, sa;
        if (sigaction(SIGPROF, NULL, &old) != 0 ||
            (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL)) {
            gpuprof_be_log(GPUPROF_LOG_WARN,
                           "opencl: the program handles "
                           "SIGPROF: GPU_IDLE_CAUSE is not measured");
            return;
        }
        if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction != on_prof) {
            gpuprof_be_log(GPUPROF_LOG_WARN,
                           "opencl: the program handles "
                           "SIGPROF: GPU_IDLE_CAUSE is not measured");
            return;
        }
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_prof;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        if (sigaction(SIGPROF, &sa, NULL) != 0)
            return;
        /* Stays installed: a signal may still be pending after the timers
         * are gone, and SIGPROF's default action ends the process. */
        handler_installed = true;
    }
    gp_store_release(&sampling, 1);
    gpuprof__cl_idle_thread();
}

void gpuprof__cl_idle_stop(void)
{
    gp_store_release(&sampling, 0);
    gpuprof__cl_idle_drain();
    pthread_mutex_lock(&rings_mu);
    for (ring *r = rings; r; r = r->next)
        timer_delete(r->timer);
    /* The rings stay: a handler may still be running on another thread. */
    pthread_mutex_unlock(&rings_mu);
}
