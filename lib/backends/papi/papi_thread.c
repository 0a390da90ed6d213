/*
 * papi_thread.c - the PAPI backend on each application thread: its event
 * sets, its reads, and where each interval's counts go.
 *
 * A thread starts counting at the first change of its calling context the
 * core tells the observer (a region begin or end, a GPU API call of any
 * backend): PAPI_register_thread, one event set per PAPI component of the
 * plan (one for CPU events), PAPI_start. From then on every change reads
 * the counters once and gives the counts since the previous read to the
 * node the thread was in -- its innermost open region, or the calling
 * context of the GPU API call it was inside -- with gpuprof_be_sample_add:
 * a region gets its exclusive counts, the analysis sums subtrees into
 * inclusive ones. At thread exit the last interval is given and the thread
 * leaves PAPI (event sets destroyed, PAPI_unregister_thread).
 *
 * With GPUPROF_PAPI_SAMPLING, the sampled events' sets are armed with
 * PAPI_overflow before they start, and every thread starts at once (the
 * observer's thread_start): each overflow is one sample of the interrupted
 * call path, `threshold` events of the event's ".sampled" metric, taken
 * through gpuprof_be_sample_take like the library's own CPU samples.
 *
 * Only the owning thread touches its state (no locks); a pause starts a new
 * generation, and an interval read across generations is dropped, so
 * nothing counted while paused reaches the profile. Counts of a thread
 * after its last change are given at its next change, at its exit, or, for
 * the thread that flushes, pauses or finalizes, then.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "papi_be.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

typedef struct pp_thread {
    int es[PP_MAX_SETS];          /* its event sets, as the plan's */
    long long last[PP_MAX_EVENTS]; /* each event's value at the last read */
    uint32_t cur;                 /* the node the counts since belong to */
    uint32_t gen;                 /* the generation of the last read */
    int nsets;                    /* event sets created */
} pp_thread;

static __thread pp_thread *self __attribute__((tls_model("initial-exec")));
/* A thread whose counting could not start, or that left PAPI: never
 * tried again. */
static pp_thread failed_mark;
static _Atomic uint32_t generation;
static _Atomic int warned_failed, warned_fork, warned_overflow;
_Atomic int gpuprof__pp_on;

#define PL gpuprof__pp_plan

void gpuprof__pp_new_generation(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}

/* Every planned event's current value into now[] (false: a read failed). */
static bool read_all(const pp_thread *t, long long *now)
{
    long long v[PP_MAX_SETS][PP_MAX_EVENTS];
    for (int s = 0; s < t->nsets; s++)
        if (unlikely(gpuprof__pp.read(t->es[s], v[s]) != PAPI_OK))
            return false;
    for (int i = 0; i < PL.nev; i++)
        now[i] = v[PL.ev[i].set][PL.ev[i].slot];
    return true;
}

/* Ends the interval: its counts go to t->cur (unless a pause came between),
 * and the next one belongs to `next`. A failed read drops the interval. */
static void advance(pp_thread *t, uint32_t next)
{
    long long now[PP_MAX_EVENTS];
    uint32_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    if (likely(read_all(t, now))) {
        for (int i = 0; gen == t->gen && i < PL.nev; i++)
            if (now[i] > t->last[i] && PL.ev[i].metric != UINT32_MAX)
                gpuprof_be_sample_add(t->cur, NULL, 0, 0, PL.ev[i].metric,
                                      (uint64_t)(now[i] - t->last[i]));
        memcpy(t->last, now, sizeof(long long) * (size_t)PL.nev);
        t->gen = gen;
    } else
        t->gen = gen - 1; /* the next interval starts at the next read */
    t->cur = next;
}

/* One overflow of an event set of the calling thread (PAPI's handler, in
 * PAPI's signal handler): a sample of each sampled event the vector names,
 * `threshold` events at the interrupted call path. Async-signal-safe: reads
 * the plan (read-only while measuring) and this thread's own state. */
static void on_overflow(int es, void *address, long long vector, void *uc)
{
    (void)address;
    pp_thread *t = self;
    if (!t || t == &failed_mark || gpuprof_be_forked())
        return;
    int s = 0;
    while (s < t->nsets && t->es[s] != es)
        s++;
    if (s == t->nsets)
        return;
    int n = 0, which = -1;
    for (int i = 0; i < PL.nev; i++)
        if (PL.ev[i].set == s && PL.ev[i].threshold) {
            n++;
            which = i;
        }
    if (n == 1) { /* the common case: the vector needs no decoding */
        gpuprof_be_sample_take(PL.ev[which].sample_metric,
                               (uint64_t)PL.ev[which].threshold, uc);
        return;
    }
    int idx[PP_MAX_EVENTS], got = PP_MAX_EVENTS;
    if (n == 0 || gpuprof__pp.overflow_index(es, vector, idx, &got) != PAPI_OK)
        return;
    for (int k = 0; k < got; k++)
        for (int i = 0; i < PL.nev; i++)
            if (PL.ev[i].set == s && PL.ev[i].slot == idx[k] &&
                PL.ev[i].threshold)
                gpuprof_be_sample_take(PL.ev[i].sample_metric,
                                       (uint64_t)PL.ev[i].threshold, uc);
}

/* Arms overflow sampling of set s's sampled events (stopped set). An event
 * PAPI refuses is said once and only counted. */
static void overflow_arm(pp_thread *t, int s)
{
    for (int i = 0; i < PL.nev; i++) {
        const pp_event *e = &PL.ev[i];
        if (e->set != s || !e->threshold)
            continue;
        int rc = e->threshold > 0x7fffffffLL
                     ? PAPI_EINVAL /* PAPI takes an int */
                     : gpuprof__pp.overflow(t->es[s], e->code,
                                            (int)e->threshold, 0, on_overflow);
        if (rc != PAPI_OK && !atomic_exchange(&warned_overflow, 1))
            gpuprof_be_log(GPUPROF_LOG_WARN,
                           "papi: %s cannot be sampled on overflow here (%s); "
                           "it is %s",
                           e->name,
                           e->threshold > 0x7fffffffLL
                               ? "thresholds above 2147483647 are not taken"
                               : gpuprof__pp_err(rc),
                           e->counted ? "counted only" : "not measured");
    }
}

/* Destroys the event sets of t and leaves PAPI. */
static void teardown(pp_thread *t)
{
    long long v[PP_MAX_EVENTS];
    for (int s = 0; s < t->nsets; s++) {
        gpuprof__pp.stop(t->es[s], v);
        for (int i = 0; PL.nsampled && i < PL.nev; i++)
            if (PL.ev[i].set == s && PL.ev[i].threshold)
                gpuprof__pp.overflow(t->es[s], PL.ev[i].code, 0, 0, NULL);
        gpuprof__pp.cleanup_eventset(t->es[s]);
        gpuprof__pp.destroy_eventset(&t->es[s]);
    }
    t->nsets = 0;
    gpuprof__pp.unregister_thread();
}

/* Creates and starts the calling thread's event sets; PAPI's status. */
static int sets_start(pp_thread *t)
{
    int rc = gpuprof__pp.register_thread();
    for (int s = 0; rc == PAPI_OK && s < PL.nsets; s++) {
        t->es[s] = PAPI_NULL;
        if ((rc = gpuprof__pp.create_eventset(&t->es[s])) != PAPI_OK)
            break;
        t->nsets = s + 1;
        for (int slot = 0; rc == PAPI_OK && slot < PL.set_n[s]; slot++)
            for (int i = 0; i < PL.nev; i++)
                if (PL.ev[i].set == s && PL.ev[i].slot == slot)
                    rc = gpuprof__pp.add_event(t->es[s], PL.ev[i].code);
        if (rc == PAPI_OK && PL.nsampled)
            overflow_arm(t, s);
        if (rc == PAPI_OK)
            rc = gpuprof__pp.start(t->es[s]);
    }
    return rc;
}

__attribute__((cold, noinline)) static pp_thread *thread_start(void)
{
    pp_thread *t = calloc(1, sizeof(*t));
    /* Set first: its overflows find it from their first, and the core
     * telling thread_start while gpuprof_be_sample_thread makes this
     * thread's state finds it started. */
    self = t;
    if (t && PL.nsampled && gpuprof_be_sample_thread() != GPUPROF_OK &&
        !atomic_exchange(&warned_overflow, 1))
        gpuprof_be_log(GPUPROF_LOG_WARN, "papi: a thread cannot keep "
                       "samples (%s); it is counted only",
                       gpuprof_last_error());
    int rc = t ? sets_start(t) : PAPI_ENOMEM;
    if (rc == PAPI_OK && read_all(t, t->last)) {
        t->gen = atomic_load_explicit(&generation, memory_order_acquire);
        t->cur = gpuprof_be_sample_region();
        return t;
    }
    self = &failed_mark; /* before its sets go */
    if (t) {
        teardown(t);
        free(t);
    }
    if (!atomic_exchange(&warned_failed, 1))
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "papi: counting could not start on a thread (%s); "
                       "its regions get no papi values",
                       rc == PAPI_OK ? "PAPI_read failed" : gpuprof__pp_err(rc));
    return NULL;
}

/* The calling thread's state when it counts now (NULL: it does not). */
static inline pp_thread *live(void)
{
    if (unlikely(!atomic_load_explicit(&gpuprof__pp_on, memory_order_relaxed)))
        return NULL;
    if (unlikely(gpuprof_be_forked())) {
        /* The event sets count the parent's threads: none here. */
        if (!atomic_exchange(&warned_fork, 1))
            gpuprof_be_log(GPUPROF_LOG_INFO,
                           "papi: counters are not read in a fork child");
        return NULL;
    }
    pp_thread *t = self;
    if (likely(t != NULL))
        return t == &failed_mark ? NULL : t;
    return thread_start();
}

static void on_region(void *user, uint32_t from, uint32_t to)
{
    (void)user;
    (void)from; /* t->cur: the same node, or the call it was inside */
    pp_thread *t = live();
    if (t)
        advance(t, to);
}

static void on_op_begin(void *user, uint32_t region, uint32_t context)
{
    (void)user;
    (void)region;
    pp_thread *t = live();
    if (t)
        advance(t, context);
}

static void on_op_end(void *user)
{
    (void)user;
    pp_thread *t = live();
    if (t)
        advance(t, gpuprof_be_sample_region());
}

static void on_thread_exit(void *user)
{
    (void)user;
    pp_thread *t = self;
    if (!t || t == &failed_mark || gpuprof_be_forked())
        return;
    advance(t, 0);
    gpuprof__pp_thread_release();
}

/* A new thread: with overflow sampling, it counts and samples from its
 * start, whether or not it ever calls the library. */
static void on_thread_start(void *user)
{
    (void)user;
    if (PL.nsampled)
        (void)live();
}

const gpuprof_observer gpuprof__pp_observer = {
    sizeof(gpuprof_observer), NULL, on_region, on_op_begin, on_op_end,
    on_thread_exit, on_thread_start};

void gpuprof__pp_thread_begin(void) { (void)live(); }

void gpuprof__pp_thread_settle(void)
{
    pp_thread *t = self;
    if (t && t != &failed_mark && !gpuprof_be_forked())
        advance(t, t->cur);
}

void gpuprof__pp_thread_release(void)
{
    pp_thread *t = self;
    if (!t || t == &failed_mark || gpuprof_be_forked())
        return;
    self = &failed_mark; /* its overflows from now on find nothing */
    teardown(t);
    free(t);
}
