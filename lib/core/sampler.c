/*
 * sampler.c - per-thread sample rings, the signal that fills them, and the
 * drains that empty them into the threads' trees (sampler.h).
 *
 * The signal. One real-time signal, chosen when the first timer is armed:
 * the highest of SIGRTMAX-2 .. SIGRTMIN+4 whose action is still the
 * default, so a program's own handlers (SIGPROF, setitimer, its timers on
 * other signals) are never touched. Every timer carries a value of ours
 * (a per-process cookie and the source) and the handler takes nothing
 * else: a signal the program sends itself is ignored. SA_RESTART: an
 * interrupted system call resumes where the kernel allows (nanosleep,
 * poll and their kin return EINTR: doc/CORE.md). Should the program later
 * take the signal over, the sampler's thread sees it and stops sampling.
 *
 * The ring. Per armed thread, in a mapping of its own (64 KiB of words,
 * touched as used): a sample is five header words (frames, source,
 * expirations; region and metric; time; its value, for all its
 * expirations; the interrupted PC, where its path starts) and its return
 * addresses. A CPU sample's value is the time its timer's clock moved
 * since the thread's previous signal (since_last). The
 * handler is the only producer (head), the drain the only consumer (tail);
 * a sample that does not fit is counted on its region in a few slots, so
 * its time is kept without its path. A PAD word sends the reader back to
 * the start.
 *
 * Drains. Whoever holds drain_mu: the sampler's thread every 20 ms, a
 * flush, a thread at its exit. A live thread's tree is claimed with the
 * handshake of sampler.h; trace records of samples (GPUPROF_TRACE) go to
 * one trace stream whose producer is the holder of drain_mu.
 *
 * Lock order: drain_mu, then list_mu; both after G.flush_lock.
 */
#define _GNU_SOURCE
#include "core/sampler.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/trace.h"
#include "core/unwind.h"
#include "io/io.h"

#define RING_WORDS 8192u
#define HDR 5u
#define MAXF GP_MAX_FRAMES
#define PAD UINT64_MAX
#define NOVER 8
#define DRAIN_MS 20

typedef struct over_slot {
    _Atomic uint64_t key; /* (metric << 32 | region) + 1; 0: free */
    _Atomic uint64_t value, count;
} over_slot;

typedef struct sthread {
    _Atomic uint32_t head; /* words; the handler */
    _Atomic uint32_t tail; /* the drain */
    over_slot over[NOVER];
    _Atomic uint32_t over_any;
    _Atomic uint64_t lost; /* expirations of samples with no slot */
    _Atomic int taking; /* a take is under way (a nested one from another
                           signal gives up; a fork waits for it) */
    gp_thread *t;
    struct sthread *next, **pprev; /* the list (list_mu) */
    timer_t timer[GP_SRC_N];
    bool armed[GP_SRC_N];
    uint64_t last[GP_SRC_N]; /* a timer's clock at its previous signal */
    uint32_t leaf[GP_SRC_N];  /* where its last sample went (the drain) */
    uint64_t w[RING_WORDS];
} sthread;

static struct {
    uint64_t period_ns[GP_SRC_N];
    uint32_t metric[GP_SRC_N], count_metric[GP_SRC_N];
    bool (*want[GP_SRC_N])(void);
    _Atomic int on[GP_SRC_N];
} S;

static __thread sthread *tls_st __attribute__((tls_model("initial-exec")));
static int sig;            /* 0: not chosen yet */
static unsigned cookie;    /* sival_int >> 8 of our timers */
static pid_t self_pid;     /* sigqueue from this process: sample_now */
static bool gave_up;       /* no usable signal: no timers */
static _Atomic int taken_over; /* the program took our signal */
static _Atomic int forking;    /* a fork is under way: no new takes */
static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t drain_mu = PTHREAD_MUTEX_INITIALIZER;
static sthread *threads;
static _Atomic uint64_t ntimers;
static gp_trace_thread *trace_h; /* samples' trace stream (drain_mu) */
static bool trace_tried;
/* The sampler's thread. */
static pthread_mutex_t cv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;
static pthread_t drainer;
static bool drainer_on, drainer_stop;

_Atomic int gpuprof__guard_fence = 1;

static void cv_init(void) { gpuprof__cond_init_monotonic(&cv); }

void gpuprof__sampler_source(unsigned src, uint64_t period_ns,
                             uint32_t metric, uint32_t count_metric,
                             bool (*want)(void))
{
    if (src >= GP_SRC_N)
        return;
    S.period_ns[src] = period_ns;
    S.metric[src] = metric;
    S.count_metric[src] = count_metric;
    S.want[src] = want;
    gp_store_release(&S.on[src], period_ns != 0 || src == GP_SRC_BACKEND);
}

uint64_t gpuprof__sampler_period(unsigned src)
{
    return src < GP_SRC_N && gp_load_acquire(&S.on[src]) ? S.period_ns[src]
                                                          : 0;
}

static void set_period(timer_t t, uint64_t ns);

int gpuprof__sampler_signal(void) { return sig; }
uint64_t gpuprof__sampler_timers(void) { return gp_load_relaxed(&ntimers); }

/* ---- the handler ------------------------------------------------------- */
static inline uint64_t interrupted_pc(const void *uc)
{
#if defined(__x86_64__)
    return uc ? (uint64_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP]
              : 0;
#elif defined(__aarch64__)
    return uc ? (uint64_t)((const ucontext_t *)uc)->uc_mcontext.pc : 0;
#else
    (void)uc;
    return 0;
#endif
}

/* A sample that found no room: its value on its region, if a slot is
 * free or already its own (the handler alone writes keys). */
static void over(sthread *r, uint32_t region, uint32_t metric, uint64_t value,
                 uint32_t periods)
{
    uint64_t key = ((uint64_t)metric << 32 | region) + 1;
    for (int i = 0; i < NOVER; i++) {
        uint64_t cur = gp_load_relaxed(&r->over[i].key);
        if (!cur) {
            gp_store_relaxed(&r->over[i].key, key);
            cur = key;
        }
        if (cur == key) {
            gp_fetch_add_relaxed(&r->over[i].value, value);
            gp_fetch_add_relaxed(&r->over[i].count, periods);
            gp_store_relaxed(&r->over_any, 1);
            return;
        }
    }
    gp_fetch_add_relaxed(&r->lost, periods);
    gp_store_relaxed(&r->over_any, 1);
}

/* One sample of the calling thread into its ring: `value` is what it
 * stands for (all its expirations), `until` where its path starts (the
 * interrupted PC, or a return address). Async-signal-safe: plain stores
 * into memory only this thread writes. */
static inline __attribute__((always_inline)) bool
take(sthread *r, unsigned src, uint32_t metric, uint64_t value,
     uint32_t periods, uint64_t until)
{
    if (gp_load_relaxed(&r->taking))
        return false;
    /* A fork waits for takes under way (they may hold libunwind's locks,
     * which the child would inherit held) and none starts meanwhile: a
     * store and a load against the fork's, both sequentially consistent. */
    atomic_store_explicit(&r->taking, 1, memory_order_seq_cst);
    if (__builtin_expect(
            atomic_load_explicit(&forking, memory_order_seq_cst), 0)) {
        gp_store_relaxed(&r->taking, 0);
        return false;
    }
    gp_thread *th = gpuprof__tls_self;
    uint32_t d = th ? gp_load_relaxed(&th->depth) : 0;
    uint32_t region =
        d && d <= GP_MAX_DEPTH ? gp_load_relaxed(&th->stack[d - 1].node) : 0;
    uint32_t h = gp_load_relaxed(&r->head);
    uint32_t t = gp_load_acquire(&r->tail);
    uint32_t pos = h % RING_WORDS;
    uint32_t pad = RING_WORDS - pos < HDR + MAXF ? RING_WORDS - pos : 0;
    bool ok = (h - t) + pad + HDR + MAXF <= RING_WORDS;
    if (ok) {
        if (pad) {
            r->w[pos] = PAD;
            h += pad;
            pos = 0;
        }
        int n = gpuprof__backtrace_in_signal((void **)(void *)&r->w[pos + HDR],
                                             (int)MAXF);
        if (n < 0) /* not safe to unwind now: the region keeps the time */
            n = 0;
        r->w[pos] = (uint64_t)n | (uint64_t)src << 16 | (uint64_t)periods << 32;
        r->w[pos + 1] = (uint64_t)metric << 32 | region;
        r->w[pos + 2] = gp_ticks();
        r->w[pos + 3] = value;
        r->w[pos + 4] = until;
        gp_store_release(&r->head, h + HDR + (uint32_t)n);
    } else {
        over(r, region, metric, value, periods);
    }
    atomic_signal_fence(memory_order_seq_cst);
    gp_store_release(&r->taking, 0);
    return ok;
}

/* Does a sample of `src` count now? (the handler) */
static inline bool counts(unsigned src)
{
    return src < GP_SRC_N && gp_load_acquire(&S.on[src]) &&
           gp_mode() == GP_MODE_MEASURING && !gpuprof__in_self() &&
           (!S.want[src] || S.want[src]());
}

static clockid_t clock_of(unsigned src);

static inline uint64_t clock_now(unsigned src)
{
    struct timespec ts;
    clock_gettime(clock_of(src), &ts); /* async-signal-safe */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What a signal of timer `src` stands for. CPU samples (cputime,
 * realtime): the time of the timer's own clock since the thread's
 * previous signal, counted or not, so a sample weighs the time it saw
 * (the kernel checks CPU-time timers at ticks and, on a loaded machine,
 * folds expirations into overruns that come short: 42-49 of 50 periods
 * measured here). GPU_IDLE_CAUSE: its periods. */
static inline uint64_t since_last(sthread *r, unsigned src, uint32_t periods)
{
    if (src != GP_SRC_CPUTIME && src != GP_SRC_REALTIME)
        return S.period_ns[src] * periods;
    uint64_t now = clock_now(src), was = r->last[src];
    r->last[src] = now;
    return was && now > was ? now - was : S.period_ns[src] * periods;
}

static void on_signal(int signo, siginfo_t *si, void *uc)
{
    (void)signo;
    if (!si || (si->si_code != SI_TIMER &&
                !(si->si_code == SI_QUEUE && si->si_pid == self_pid)))
        return;
    unsigned v = (unsigned)si->si_value.sival_int;
    unsigned src = v & 0xFFu;
    if ((v >> 8) != cookie || src == GP_SRC_BACKEND)
        return;
    int e = errno;
    sthread *r = tls_st;
    if (r && src < GP_SRC_BACKEND) {
        uint32_t periods = 1;
        if (si->si_code == SI_TIMER && si->si_overrun > 0)
            periods += (uint32_t)si->si_overrun;
        uint64_t value = since_last(r, src, periods); /* taken or not */
        if (counts(src))
            take(r, src, S.metric[src], value, periods, interrupted_pc(uc));
    }
    errno = e;
}

bool gpuprof__sampler_take_backend(uint32_t metric, uint64_t value, void *uc)
{
    /* One load of tls_st: the thread's exit clears it before the ring
     * goes, and a handler on this thread runs to its end before. */
    sthread *r = tls_st;
    if (!r || !counts(GP_SRC_BACKEND))
        return false;
    return take(r, GP_SRC_BACKEND, metric, value, 1, interrupted_pc(uc));
}

__attribute__((noinline)) void gpuprof__sampler_sample_from(unsigned src,
                                                           const void *until)
{
    sthread *r = tls_st;
    if (r && counts(src) && src != GP_SRC_BACKEND)
        take(r, src, S.metric[src], S.period_ns[src], 1,
             (uint64_t)(uintptr_t)until);
    __asm__ volatile("" ::: "memory"); /* keep this frame */
}

void gpuprof__sampler_raise(unsigned src)
{
    union sigval v;
    v.sival_int = (int)(cookie << 8 | src);
    if (sig && tls_st)
        pthread_sigqueue(pthread_self(), sig, v);
}

/* ---- the signal -------------------------------------------------------- */
/* The first real-time signal from the top whose action is the default;
 * installs our handler on it. Under list_mu. */
static bool choose_signal(void)
{
    if (sig || gave_up)
        return sig != 0;
    self_pid = getpid();
    cookie = ((unsigned)self_pid * 2654435761u ^ (unsigned)gp_mono_ns()) &
             0xFFFFFFu;
    for (int s = SIGRTMAX - 2; s >= SIGRTMIN + 4; s--) {
        struct sigaction old, sa;
        if (sigaction(s, NULL, &old) != 0 ||
            (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        if (sigaction(s, &sa, NULL) != 0)
            continue;
        /* Stays installed: a signal may be pending after its timer is
         * gone, and a real-time signal's default action ends the process. */
        sig = s;
        /* The owner's side of the handshake is then two plain stores and
         * a load (sampler.h); without membarrier, fences on both sides. */
        gp_store_relaxed(&gpuprof__guard_fence,
                         syscall(SYS_membarrier,
                                 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0,
                                 0) != 0);
        gpuprof__log(GPUPROF_LOG_DEBUG, "samples: signal %d%s", s,
                     gp_load_relaxed(&gpuprof__guard_fence)
                         ? " (no membarrier)"
                         : "");
        return true;
    }
    gave_up = true;
    gpuprof__log(GPUPROF_LOG_WARN, "no free real-time signal: CPU samples "
                 "and GPU_IDLE_CAUSE are not measured");
    return false;
}

/* Stops sampling for good when the program installed its own action on
 * our signal: its handler must not get our timers' signals. */
static void check_signal(void)
{
    struct sigaction cur;
    if (!sig || gp_load_relaxed(&taken_over) || sigaction(sig, NULL, &cur) ||
        ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal))
        return;
    gp_store_relaxed(&taken_over, 1);
    gpuprof__log(GPUPROF_LOG_WARN, "the program took over signal %d, which "
                 "the sampler's timers send: samples stop here", sig);
    for (unsigned s = 0; s < GP_SRC_N; s++)
        gp_store_release(&S.on[s], 0);
    pthread_mutex_lock(&list_mu);
    for (sthread *r = threads; r; r = r->next)
        for (unsigned s = 0; s < GP_SRC_N; s++)
            if (r->armed[s])
                set_period(r->timer[s], 0);
    pthread_mutex_unlock(&list_mu);
}

/* ---- rings and timers -------------------------------------------------- */
static void *drain_main(void *arg);

/* The sampler's thread, if it is not running. Under list_mu. Never in a
 * fork child (as the monitor, monitor.c): a process forked with threads may
 * start none safely (ThreadSanitizer dies at it); its samples reach the
 * profile at its flushes and at its exit. */
static void drainer_start(void)
{
    if (drainer_on || G.forked)
        return;
    pthread_once(&cv_once, cv_init);
    drainer_stop = false;
    drainer_on = gpuprof__spawn(&drainer, drain_main, NULL) == 0;
    if (!drainer_on)
        gpuprof__log(GPUPROF_LOG_WARN, "cannot start the sampler's thread: "
                     "samples reach the profile at flushes only");
}

/* The calling thread's ring, made on first use (its own mapping). */
static sthread *ring_of(gp_thread *t)
{
    if (tls_st)
        return tls_st;
    sthread *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    r->t = t;
    pthread_mutex_lock(&list_mu);
    r->next = threads;
    r->pprev = &threads;
    if (threads)
        threads->pprev = &r->next;
    threads = r;
    drainer_start();
    pthread_mutex_unlock(&list_mu);
    tls_st = r; /* before its first timer */
    return r;
}

bool gpuprof__sampler_backend_thread(gp_thread *t)
{
    return t && ring_of(t) != NULL;
}

static void unlink_ring(sthread *r)
{
    *r->pprev = r->next;
    if (r->next)
        r->next->pprev = r->pprev;
}

/* A timer that expires every `ns` from now (0: disarmed). */
static void set_period(timer_t t, uint64_t ns)
{
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(ns % 1000000000u);
    its.it_value = its.it_interval;
    timer_settime(t, 0, &its, NULL);
}

static clockid_t clock_of(unsigned src)
{
    return src == GP_SRC_REALTIME ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
}

bool gpuprof__sampler_arm(gp_thread *t, unsigned src)
{
    if (src >= GP_SRC_BACKEND || !t || !gp_load_acquire(&S.on[src]) ||
        gp_load_relaxed(&taken_over) || (tls_st && tls_st->armed[src]))
        return tls_st && src < GP_SRC_N && tls_st->armed[src];
    pthread_mutex_lock(&list_mu);
    bool have = choose_signal();
    pthread_mutex_unlock(&list_mu);
    if (!have)
        return false;
    sthread *r = ring_of(t);
    if (!r)
        return false;
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_value.sival_int = (int)(cookie << 8 | src);
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(clock_of(src), &sev, &r->timer[src]) != 0) {
        gpuprof__log(GPUPROF_LOG_DEBUG, "no timer for samples: %s",
                     strerror(errno));
        return false;
    }
    gp_fetch_add_relaxed(&ntimers, 1);
    r->armed[src] = true;
    r->last[src] = clock_now(src);
    set_period(r->timer[src], S.period_ns[src]);
    return true;
}

void gpuprof__sampler_thread_timers(bool on)
{
    sthread *r = tls_st;
    for (unsigned s = 0; r && s < GP_SRC_BACKEND; s++)
        if (r->armed[s]) {
            if (on) /* the time paused is no sample's */
                r->last[s] = clock_now(s);
            set_period(r->timer[s], on ? S.period_ns[s] : 0);
        }
}

static void disarm(sthread *r)
{
    for (unsigned s = 0; s < GP_SRC_N; s++)
        if (r->armed[s]) {
            timer_delete(r->timer[s]);
            r->armed[s] = false;
            gp_fetch_add_relaxed(&ntimers, (uint64_t)-1);
        }
}

/* ---- drains ------------------------------------------------------------ */
/* Adds v to metric m of node `node` of t's tree (the drain holds it). */
static void add(gp_thread *t, uint32_t node, uint32_t m, uint64_t v)
{
    if (m == UINT32_MAX || !v)
        return;
    gp_mblock *b = gpuprof__cct_block(&t->cct, node, gpuprof__metric_block(m));
    if (b)
        gpuprof__metric_merge(&b->v[m - b->first_metric], m, v);
    else
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
}

/* The count metric of a sample's metric (its source's), or none. */
static uint32_t count_of(unsigned src, uint32_t metric)
{
    return src < GP_SRC_BACKEND && S.metric[src] == metric
               ? S.count_metric[src]
               : UINT32_MAX;
}

/* Where a sample's own path starts in ips[0..n): at `until` when it is
 * there, else after the signal trampoline's two frames. */
static int path_start(void *const *ips, int n, uint64_t until)
{
    for (int i = 0; until && i < n; i++)
        if ((uint64_t)(uintptr_t)ips[i] == until)
            return i;
    return n < 2 ? n : 2;
}

/* One sample into t's tree (and the trace). */
static void attribute(sthread *r, const uint64_t *s)
{
    gp_thread *t = r->t;
    int n = (int)(s[0] & 0xFFFF);
    unsigned src = (unsigned)(s[0] >> 16 & 0xFF);
    uint32_t periods = (uint32_t)(s[0] >> 32), metric = (uint32_t)(s[1] >> 32);
    uint32_t region = (uint32_t)s[1];
    uint64_t total = s[3];
    void *ips[MAXF];
    memcpy(ips, s + HDR, (size_t)n * sizeof(void *));
    if (region >= gp_load_relaxed(&t->cct.count))
        region = 0;
    int from = path_start(ips, n, s[4]);
    uint32_t unknown = 0, leaf = region;
    if (n > from)
        leaf = gpuprof__callpath_ips(&t->cct, region, ips + from, n - from,
                                     n == (int)MAXF, &unknown);
    if (leaf == GP_CCT_NONE) {
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
        return;
    }
    add(t, leaf, metric, total);
    add(t, leaf, count_of(src, metric), periods);
    if (src < GP_SRC_N)
        r->leaf[src] = leaf;
    if (trace_h)
        gpuprof__trace_sample(trace_h, s[2], (uint64_t)t->seq << 32 | leaf,
                              total, metric);
}

/* Everything in r's ring and slots into its tree; the caller holds
 * drain_mu and the tree (its owner, or a claim). */
static void drain_ring(sthread *r)
{
    gp_thread *t = r->t;
    if (gp_load_relaxed(&r->over_any)) {
        gp_store_relaxed(&r->over_any, 0);
        for (int i = 0; i < NOVER; i++) {
            uint64_t key = gp_load_relaxed(&r->over[i].key);
            uint64_t v = gp_load_relaxed(&r->over[i].value);
            uint64_t c = gp_load_relaxed(&r->over[i].count);
            if (!key || (!v && !c))
                continue;
            atomic_fetch_sub_explicit(&r->over[i].value, v,
                                      memory_order_relaxed);
            atomic_fetch_sub_explicit(&r->over[i].count, c,
                                      memory_order_relaxed);
            uint32_t region = (uint32_t)(key - 1), m = (uint32_t)((key - 1) >> 32);
            if (region >= gp_load_relaxed(&t->cct.count))
                region = 0;
            add(t, region, m, v);
            for (unsigned s = 0; s < GP_SRC_N; s++)
                if (S.metric[s] == m)
                    add(t, region, S.count_metric[s], c);
        }
        uint64_t lost = gp_load_relaxed(&r->lost);
        if (lost) {
            atomic_fetch_sub_explicit(&r->lost, lost, memory_order_relaxed);
            gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, lost);
        }
    }
    uint32_t tl = gp_load_relaxed(&r->tail);
    uint32_t h = gp_load_acquire(&r->head);
    while (tl != h) {
        uint32_t pos = tl % RING_WORDS;
        if (r->w[pos] == PAD) {
            tl += RING_WORDS - pos;
            continue;
        }
        attribute(r, &r->w[pos]);
        tl += HDR + (uint32_t)(r->w[pos] & 0xFFFF);
    }
    gp_store_release(&r->tail, h);
}

static bool pending(sthread *r)
{
    return gp_load_relaxed(&r->head) != gp_load_relaxed(&r->tail) ||
           gp_load_relaxed(&r->over_any);
}

/* The drainer's side of the handshake, for every thread claimed. false:
 * membarrier failed after it was registered (never seen): no drain this
 * time, and the owners fence from now on. */
static bool claim_barrier(void)
{
    gp_fence_seq_cst();
#if !defined(__SANITIZE_THREAD__)
    if (!gp_load_relaxed(&gpuprof__guard_fence) &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        gp_store_relaxed(&gpuprof__guard_fence, 1);
        return false;
    }
#endif
    return true;
}

/* Every live thread's pending samples, each thread's tree claimed (one
 * barrier for all); a thread inside a span waits for a later drain. Under
 * drain_mu and list_mu. */
static void drain_claimed(void)
{
    bool any = false;
    if (!trace_tried && gpuprof__trace_on()) {
        trace_tried = true;
        trace_h = gpuprof__trace_samples_open();
    }
    for (sthread *r = threads; r; r = r->next)
        if (pending(r)) {
            atomic_store_explicit(&r->t->cct_claim, 1, memory_order_seq_cst);
            any = true;
        }
    if (!any)
        return;
    bool ok = claim_barrier();
    for (sthread *r = threads; r; r = r->next) {
        gp_thread *t = r->t;
        if (!gp_load_relaxed(&t->cct_claim))
            continue;
        if (ok && !atomic_load_explicit(&t->cct_busy, memory_order_seq_cst))
            drain_ring(r);
        atomic_store_explicit(&t->cct_claim, 0, memory_order_seq_cst);
    }
}

void gpuprof__sampler_drain_all(void)
{
    pthread_mutex_lock(&drain_mu);
    pthread_mutex_lock(&list_mu);
    drain_claimed();
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_unlock(&drain_mu);
}

void gpuprof__cct_wait(gp_thread *t)
{
    do {
        gp_store_release(&t->cct_busy, 0);
        while (gp_load_acquire(&t->cct_claim))
            sched_yield(); /* a drain of this tree: microseconds */
#if defined(__SANITIZE_THREAD__)
        atomic_store_explicit(&t->cct_busy, 1, memory_order_seq_cst);
    } while (atomic_load_explicit(&t->cct_claim, memory_order_seq_cst));
#else
        gp_store_relaxed(&t->cct_busy, 1);
        gp_fence_seq_cst();
    } while (gp_load_acquire(&t->cct_claim));
#endif
}

static void *drain_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cv_mu);
    while (!drainer_stop) {
        struct timespec ts;
        gpuprof__deadline(&ts, DRAIN_MS * 1000000u);
        pthread_cond_timedwait(&cv, &cv_mu, &ts);
        if (drainer_stop)
            break;
        pthread_mutex_unlock(&cv_mu);
        check_signal();
        gpuprof__sampler_drain_all();
        pthread_mutex_lock(&cv_mu);
    }
    pthread_mutex_unlock(&cv_mu);
    return NULL;
}

/* A thread at its exit: the CPU time since its last signal (a loaded
 * machine delivers them late and in bunches, and a signal pending now is
 * dropped with the thread) goes where its last sample went: the work it
 * was last seen doing. No sample at all: its root. Traced, as a sample of
 * its own at the exit's time. */
static void exit_tail(sthread *r)
{
    for (unsigned src = GP_SRC_CPUTIME; src <= GP_SRC_REALTIME; src++) {
        if (!r->last[src] || gp_mode() != GP_MODE_MEASURING)
            continue;
        uint64_t now = clock_now(src), v = now > r->last[src] ? now - r->last[src] : 0;
        uint32_t leaf = r->leaf[src] < gp_load_relaxed(&r->t->cct.count)
                            ? r->leaf[src]
                            : 0;
        add(r->t, leaf, S.metric[src], v);
        if (v && trace_h)
            gpuprof__trace_sample(trace_h, gp_ticks(),
                                  (uint64_t)r->t->seq << 32 | leaf, v,
                                  S.metric[src]);
    }
}

void gpuprof__sampler_thread_exit(gp_thread *t)
{
    sthread *r = tls_st;
    if (!r || r->t != t)
        return;
    if (sig) { /* a pending signal is dropped with the thread */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }
    pthread_mutex_lock(&drain_mu);
    pthread_mutex_lock(&list_mu);
    disarm(r);
    unlink_ring(r);
    pthread_mutex_unlock(&list_mu);
    tls_st = NULL;
    if (!trace_tried && gpuprof__trace_on()) {
        trace_tried = true;
        trace_h = gpuprof__trace_samples_open();
    }
    drain_ring(r); /* its own tree: nobody else reaches it now */
    exit_tail(r);
    pthread_mutex_unlock(&drain_mu);
    munmap(r, sizeof(*r));
}

void gpuprof__sampler_finish_self(void)
{
    sthread *r = tls_st;
    if (!r)
        return;
    pthread_mutex_lock(&drain_mu);
    if (!trace_tried && gpuprof__trace_on()) {
        trace_tried = true;
        trace_h = gpuprof__trace_samples_open();
    }
    drain_ring(r); /* its own tree, by its owner; no other drain runs */
    exit_tail(r);  /* still measuring: the time since its last signal */
    for (unsigned s = GP_SRC_CPUTIME; s <= GP_SRC_REALTIME; s++)
        if (r->last[s])
            r->last[s] = clock_now(s); /* a later signal: only what follows */
    pthread_mutex_unlock(&drain_mu);
}

void gpuprof__sampler_stop(void)
{
    for (unsigned s = 0; s < GP_SRC_N; s++)
        gp_store_release(&S.on[s], 0);
    pthread_mutex_lock(&list_mu);
    bool was = drainer_on;
    drainer_on = false;
    pthread_mutex_unlock(&list_mu);
    if (was) {
        pthread_mutex_lock(&cv_mu);
        drainer_stop = true;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&cv_mu);
        pthread_join(drainer, NULL);
    }
    pthread_mutex_lock(&drain_mu);
    pthread_mutex_lock(&list_mu);
    for (sthread *r = threads; r; r = r->next)
        disarm(r);
    /* The rings stay until their threads exit: a pending signal may still
     * run the handler, which now takes nothing. */
    drain_claimed();
    trace_h = NULL; /* the trace stops after the final profile */
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_unlock(&drain_mu);
}

/* ---- fork -------------------------------------------------------------- */
void gpuprof__sampler_atfork_prepare(void)
{
    pthread_mutex_lock(&drain_mu);
    pthread_mutex_lock(&list_mu);
    /* No sample under way at the fork: a handler unwinding on another
     * thread may hold libunwind's locks, and the child, whose own handler
     * unwinds, would wait on them for ever. New takes give up (forking)
     * and those under way end within microseconds (bounded wait). */
    atomic_store_explicit(&forking, 1, memory_order_seq_cst);
    for (sthread *r = threads; r; r = r->next)
        for (int i = 0; i < 100000 && atomic_load_explicit(
                                          &r->taking, memory_order_seq_cst);
             i++)
            sched_yield();
}

void gpuprof__sampler_atfork_parent(void)
{
    gp_store_relaxed(&forking, 0);
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_unlock(&drain_mu);
}

void gpuprof__sampler_atfork_child(void)
{
    gp_store_relaxed(&forking, 0);
    sthread *self = tls_st;
    bool was[GP_SRC_N] = {false};
    /* Other threads are gone: their rings with them. */
    for (sthread *r = threads, *next; r; r = next) {
        next = r->next;
        if (r != self)
            munmap(r, sizeof(*r));
    }
    threads = NULL;
    drainer_on = false;
    trace_h = NULL; /* the parent's trace is the parent's */
    trace_tried = true;
    gp_store_relaxed(&ntimers, 0);
    self_pid = getpid();
    pthread_mutex_init(&cv_mu, NULL); /* the sampler's thread is gone */
    gpuprof__cond_init_monotonic(&cv);
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_unlock(&drain_mu);
    if (!self)
        return;
    gp_thread *t = self->t;
    for (unsigned s = 0; s < GP_SRC_N; s++)
        was[s] = self->armed[s]; /* timers are not inherited */
    munmap(self, sizeof(*self));
    tls_st = NULL;
    if (gp_mode() != GP_MODE_MEASURING && gp_mode() != GP_MODE_PAUSED)
        return; /* a runtime's helper (self.c): nothing measured */
    for (unsigned s = 0; s < GP_SRC_BACKEND; s++)
        if (was[s])
            gpuprof__sampler_arm(t, s);
}
