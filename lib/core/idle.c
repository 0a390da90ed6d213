/*
 * idle.c - GPU_IDLE_CAUSE (seed 002 §IV.A), for every backend: CPU code
 * that ran while no kernel was in flight on any device.
 *
 * Kernels in flight: the core counts each KERNEL operation from its
 * gpuprof__op_begin to its final activity (gpu.c), or, for a backend that
 * learns of completion before it submits (OpenCL's event callback), to its
 * gpuprof__gpu_done(); a launch that failed is given back the same way.
 *
 * Each thread that begins an operation gets a timer on its own CPU-time
 * clock that sends it SIGPROF every period of CPU time it uses
 * (GPUPROF_IDLE_PERIOD_US, default 2000; 0 turns this off). The handler does
 * only what is safe there: when no kernel is in flight it captures the
 * interrupted call path and the innermost open region into the thread's own
 * ring (no lock, no allocation). The thread drains its ring when it next
 * begins or ends an operation -- the owner is the single writer of its
 * region tree -- adding one period of blame.gpu_idle_cause to each sampled
 * path. Samples a thread takes after its last operation and before it exits
 * are not drained (counted in nothing; documented).
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

#include "core/gpu.h"
#include "core/internal.h"
#include "core/unwind.h"
#include "io/io.h"

#define RING 512         /* ~1 s of CPU at the default period */
#define SAMPLE_FRAMES 40
#define NOVER 8          /* regions of samples taken with the ring full */

typedef struct sample {
    int n;
    int skip;         /* frames of ours at the top: handler, trampoline */
    void *until;      /* or: the first frame kept is this return address */
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
    _Atomic uint32_t over_any; /* some over_count may be set */
    sample s[RING];
} ring;

static __thread ring *tls_ring __attribute__((tls_model("initial-exec")));
static __thread unsigned tls_gen __attribute__((tls_model("initial-exec")));
static _Atomic unsigned gen;  /* measurements (gpuprof_init) so far */
static _Atomic int armed;     /* threads may start timers */
static _Atomic int sampling;
static uint64_t period_ns;
static long period_us = 2000; /* 0: off */
static pthread_mutex_t rings_mu = PTHREAD_MUTEX_INITIALIZER;
static ring *rings;
static bool handler_installed;
/* Kernels in flight, all devices: launched - done. A launch adds to its
 * thread's own counter (a plain store: no read-modify-write, no line shared
 * with a completing thread), completing threads (a runtime's, the
 * simulator's) to one shared counter; the handler sums. Threads beyond
 * NSLOTS share one counter (an atomic add). A `done` with no launch counted
 * (a backend's mistake, or an operation of an earlier measurement) makes
 * the difference negative: read as none in flight. */
#define NSLOTS 4096
typedef struct counter {
    _Alignas(64) _Atomic uint64_t v;
    char pad[64 - sizeof(uint64_t)];
} counter;
static counter slots[NSLOTS]; /* bss: pages touched as threads come */
static _Atomic uint32_t nslots;
static counter shared_launched, done_c;

_Atomic uint64_t *gpuprof__gpu_busy_slot(void)
{
    uint32_t i = atomic_fetch_add_explicit(&nslots, 1, memory_order_relaxed);
    if (i >= NSLOTS) {
        atomic_store_explicit(&nslots, NSLOTS, memory_order_relaxed);
        return NULL;
    }
    return &slots[i].v;
}

void gpuprof__gpu_busy(_Atomic uint64_t *slot)
{
    if (slot) /* its owner is the only writer */
        atomic_store_explicit(
            slot, atomic_load_explicit(slot, memory_order_relaxed) + 1,
            memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&shared_launched.v, 1, memory_order_relaxed);
}

void gpuprof__gpu_done(void)
{
    atomic_fetch_add_explicit(&done_c.v, 1, memory_order_relaxed);
}

static uint64_t launched_total(void)
{
    uint32_t n = atomic_load_explicit(&nslots, memory_order_relaxed);
    uint64_t l = atomic_load_explicit(&shared_launched.v, memory_order_relaxed);
    for (uint32_t i = 0; i < n && i < NSLOTS; i++)
        l += atomic_load_explicit(&slots[i].v, memory_order_relaxed);
    return l;
}

uint64_t gpuprof__gpu_busy_count(void)
{
    /* done first: every done counted follows its launch. */
    uint64_t d = atomic_load_explicit(&done_c.v, memory_order_relaxed);
    uint64_t l = launched_total();
    return (int64_t)(l - d) > 0 ? l - d : 0;
}

/* One sample of the calling thread into its ring; `skip`: our frames on
 * top of the stack. Async-signal-safe. */
static inline __attribute__((always_inline)) void take(ring *r,
                                                       uint32_t periods,
                                                       int skip, void *until)
{
    uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    gp_thread *th = gpuprof__tls_self;
    uint32_t d = th ? gp_load_relaxed(&th->depth) : 0;
    uint32_t region = d && d <= GP_MAX_DEPTH
                          ? gp_load_relaxed(&th->stack[d - 1].node)
                          : 0;
    if (h - t < RING) {
        sample *s = &r->s[h % RING];
        s->region = region;
        s->periods = periods;
        s->skip = skip;
        s->until = until;
        s->n = gpuprof__backtrace_in_signal(s->ip, SAMPLE_FRAMES);
        if (s->n > 0)
            atomic_store_explicit(&r->head, h + 1, memory_order_release);
        return;
    }
    /* The owner only reads and zeroes counts: region slots are claimed
     * here, once, with region + 1 (0: free). */
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
            atomic_store_explicit(&r->over_any, 1, memory_order_relaxed);
            break;
        }
    }
}

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
     * gpuprof.self_ns, never the program's. Frames: [0] this handler,
     * [1] the signal trampoline. */
    if (r && gp_load_relaxed(&sampling) && !gpuprof__in_self() &&
        gpuprof__gpu_busy_count() == 0)
        take(r, periods, 2, NULL);
    errno = e;
}

/* Owner: the samples taken since the last drain, into its region tree. */
static void drain_slow(void)
{
    ring *r = tls_ring;
    if (!r)
        return;
    uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    gp_thread *th = gpuprof__tls_self;
    atomic_store_explicit(&r->over_any, 0, memory_order_relaxed);
    for (int i = 0; th && i < NOVER; i++) {
        uint64_t c = atomic_load_explicit(&r->over_count[i],
                                          memory_order_relaxed);
        uint32_t reg = atomic_load_explicit(&r->over_region[i],
                                            memory_order_relaxed);
        if (!c || !reg || reg - 1 >= gp_load_relaxed(&th->cct.count))
            continue;
        atomic_fetch_sub_explicit(&r->over_count[i], c, memory_order_relaxed);
        gp_mblock *b = gpuprof__cct_block(&th->cct, reg - 1,
                                          GPUPROF_IO_KIND_CPU);
        if (b)
            gp_owner_add(&b->v[GP_M_GPU_IDLE_CAUSE - b->first_metric],
                         c * period_ns);
    }
    if (t == h)
        return;
    for (; th && t != h; t++) {
        const sample *s = &r->s[t % RING];
        int skip = s->skip;
        for (int i = 0; s->until && i < s->n; i++)
            if (s->ip[i] == s->until) {
                skip = i;
                break;
            }
        uint32_t unknown = 0;
        if (s->n <= skip || s->region >= gp_load_relaxed(&th->cct.count))
            continue;
        uint32_t leaf = gpuprof__callpath_ips(&th->cct, s->region,
                                              s->ip + skip, s->n - skip,
                                              s->n == SAMPLE_FRAMES, &unknown);
        gp_mblock *b = leaf == GP_CCT_NONE
                           ? NULL
                           : gpuprof__cct_block(&th->cct, leaf,
                                                GPUPROF_IO_KIND_CPU);
        if (b)
            gp_owner_add(&b->v[GP_M_GPU_IDLE_CAUSE - b->first_metric],
                         s->periods * period_ns);
        else
            gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
    }
    atomic_store_explicit(&r->tail, h, memory_order_release);
}


/* GPUPROF_IDLE_PERIOD_US, read once at gpuprof_init: a value that is
 * not a number of microseconds says so and the default is used; one under
 * 100 is raised to 100. */
static void idle_config(void)
{
    const char *env = getenv("GPUPROF_IDLE_PERIOD_US");
    period_us = 2000;
    if (!env || !*env)
        return;
    char *end;
    errno = 0;
    long us = strtol(env, &end, 10);
    if (errno || end == env || *end || us < 0 || us > 60000000) {
        gpuprof__setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                 "microseconds in 0..60000000, 0: off",
                                 "2000");
        return;
    }
    if (us > 0 && us < 100) {
        gpuprof__setting_ignored("GPUPROF_IDLE_PERIOD_US", env,
                                 "at least 100, or 0: off", "100");
        us = 100;
    }
    period_us = us;
}

/* Once per process: our SIGPROF handler, unless the program has its own.
 * Under rings_mu. */
static bool install_handler(void)
{
    if (handler_installed)
        return true;
    struct sigaction old, sa;
    if (sigaction(SIGPROF, NULL, &old) != 0 ||
        (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL) ||
        ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction != on_prof)) {
        gpuprof__log(GPUPROF_LOG_WARN, "the program handles SIGPROF: "
                     "GPU_IDLE_CAUSE is not measured");
        return false;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_prof;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (sigaction(SIGPROF, &sa, NULL) != 0)
        return false;
    /* Stays installed: a signal may still be pending after the timers are
     * gone, and SIGPROF's default action ends the process. */
    handler_installed = true;
    return true;
}

/* gpuprof_init: the period, and a new measurement for every thread's
 * timer. Sampling starts at the first thread that begins an operation. */
void gpuprof__idle_init(void)
{
    idle_config();
    /* Kernels an earlier measurement left in flight are not this one's. */
    atomic_store_explicit(&done_c.v, launched_total(), memory_order_relaxed);
    gp_store_release(&armed, 0);
    if (period_us <= 0)
        return;
    if (gpuprof__backtrace_in_signal(NULL, 0) < 0) {
        gpuprof__log(GPUPROF_LOG_DEBUG, "GPU_IDLE_CAUSE off: this build "
                     "cannot unwind in a signal handler");
        return;
    }
    period_ns = (uint64_t)period_us * 1000u;
    atomic_fetch_add_explicit(&gen, 1, memory_order_relaxed);
    gp_store_release(&armed, 1);
}

/* The calling thread's timer, once per measurement; the first thread's
 * call installs the handler. */
void gpuprof__idle_thread(void)
{
    unsigned g = atomic_load_explicit(&gen, memory_order_relaxed);
    if (tls_gen == g || !gp_load_acquire(&armed))
        return;
    tls_gen = g;
    pthread_mutex_lock(&rings_mu);
    bool ok = gp_load_relaxed(&armed) && install_handler();
    if (ok)
        gp_store_release(&sampling, 1);
    else
        gp_store_release(&armed, 0);
    pthread_mutex_unlock(&rings_mu);
    ring *r = ok ? calloc(1, sizeof(*r)) : NULL;
    if (!r)
        return;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = gettid(); /* sigev_notify_thread_id */
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &r->timer) != 0) {
        gpuprof__log(GPUPROF_LOG_DEBUG, "no CPU-time timer for "
                     "GPU_IDLE_CAUSE: %s", strerror(errno));
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

/* Owner: cheap when there is nothing to drain. */
void gpuprof__idle_drain(void)
{
    ring *r = tls_ring;
    if (r && (atomic_load_explicit(&r->head, memory_order_relaxed) !=
                  atomic_load_explicit(&r->tail, memory_order_relaxed) ||
              atomic_load_explicit(&r->over_any, memory_order_relaxed)))
        drain_slow();
}

/* Test and benchmark hook: one sample of the caller's call path, exactly
 * as the handler takes it (when no kernel is in flight), then attributed
 * by the next drain. */
__attribute__((noinline)) void gpuprof__idle_sample_now(void)
{
    ring *r = tls_ring;
    /* Our frames on top depend on inlining: the path starts at the
     * return address into our caller. */
    if (r && gpuprof__gpu_busy_count() == 0)
        take(r, 1, 1, __builtin_return_address(0));
    __asm__ volatile("" ::: "memory"); /* keep this frame */
}

uint64_t gpuprof__idle_period_ns(void)
{
    return gp_load_acquire(&armed) ? period_ns : 0;
}

void gpuprof__idle_stop(void)
{
    gp_store_release(&armed, 0);
    gp_store_release(&sampling, 0);
    drain_slow();
    pthread_mutex_lock(&rings_mu);
    for (ring *r = rings; r; r = r->next)
        timer_delete(r->timer);
    /* The rings stay: a handler may still be running on another thread. */
    pthread_mutex_unlock(&rings_mu);
}
