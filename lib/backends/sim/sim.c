/*
 * sim.c - the simulated GPU (see sim.h).
 *
 * Launching threads append jobs to one queue under `mu` (this is a test
 * device; the measured part of a launch is gpuprof_op_begin/_end, which is
 * what a real hook costs). The simulator thread takes the queue, runs each
 * stream's jobs on its virtual clock, and submits the activities in batches
 * of `batch`, shuffled within each batch.
 */
#include "backends/sim/sim.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuprof_backend.h"

typedef struct job {
    uint64_t corr;
    uint32_t kind, stream, flags;
    uint64_t dur, bytes, launch_ns;
    const char *name;
    uint32_t ev; /* JOB_EVENT, JOB_WAIT: the event's index */
} job;

/* Jobs that are not device work (kind 0 on the queue): an event recorded
 * on a stream, a stream waiting for an event. */
#define JOB_EVENT 0x100u
#define JOB_WAIT 0x200u
#define MAX_EVENTS 65536u

/* Events (sim.h): when each is done on the virtual clock (the end of the
 * work before it on its stream), and its record operation's correlation
 * id (the target of later waits in traces). */
typedef struct sim_event {
    uint64_t done_ns, corr;
    uint32_t stream;
    bool recorded;
} sim_event;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv; /* on CLOCK_MONOTONIC, set up at init */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static gp_sim_config cfg;
static job *q;
static size_t nq, capq;
/* The queue the simulator thread ran last, handed back for the next swap:
 * launching allocates nothing in the steady state, and a launch costs the
 * same whether its jobs are measured (the simulator thread then takes
 * longer and the queue grows further) or not. */
static job *spare;
static size_t spare_cap;
static uint64_t launched, delivered, want; /* deliver up to `want` now */
static uint64_t *clock_of; /* per stream: when its last job ends */
static uint64_t null_end;  /* legacy default stream: when its last job ends */
static sim_event *evs;     /* under mu (done_ns: sim thread, read after
                              deliver_all) */
static uint32_t nev;
static bool active, stopping, hold;
static pthread_t thr;
static uint64_t rng;
static _Atomic uint64_t script_ns; /* gpuprof__sim_clock; 0: real clock */

static uint64_t host_now(void)
{
    uint64_t t = atomic_load_explicit(&script_ns, memory_order_relaxed);
    return t ? t : gpuprof_be_now_ns();
}

/* The simulator's thread takes no signal (the program's handlers never
 * run on it); its timed waits use CLOCK_MONOTONIC. */
static int spawn_quiet(pthread_t *t, void *(*fn)(void *))
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(t, NULL, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return e;
}

static void cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
}

static void deadline_in(struct timespec *ts, uint64_t ns)
{
    uint64_t t = gpuprof_be_now_ns() + ns;
    ts->tv_sec = (time_t)(t / 1000000000u);
    ts->tv_nsec = (long)(t % 1000000000u);
}

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* When job j starts on the virtual clock: after the work before it on its
 * stream, its launch, the event it waits for, and with a legacy default
 * stream (stream 0) after all earlier work there, or (on stream 0) after
 * all earlier work everywhere. Sim thread. */
static uint64_t job_start(const job *j)
{
    uint64_t start = clock_of[j->stream] > j->launch_ns ? clock_of[j->stream]
                                                         : j->launch_ns;
    if ((j->flags & JOB_WAIT) && evs[j->ev].done_ns > start)
        start = evs[j->ev].done_ns;
    if (cfg.null_stream && !(j->flags & (JOB_EVENT | JOB_WAIT))) {
        if (j->stream != 0 && null_end > start)
            start = null_end;
        for (unsigned k = 0; j->stream == 0 && k < cfg.streams; k++)
            start = clock_of[k] > start ? clock_of[k] : start;
    }
    return start;
}

/* Runs and submits jobs [0, n) (taken off the queue); sim thread only. */
static void run_jobs(job *jobs, size_t n)
{
    gpuprof_activity *acts = malloc((n ? n : 1) * sizeof(*acts));
    if (!acts) {
        gpuprof_be_log(GPUPROF_LOG_ERROR,
                       "sim: out of memory, %zu activities "
                       "lost",
                       n);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        job *j = &jobs[i];
        uint64_t start = job_start(j);
        clock_of[j->stream] = start + j->dur;
        if (cfg.null_stream && j->stream == 0 && !(j->flags & JOB_EVENT))
            null_end = start + j->dur;
        if (j->flags & (JOB_EVENT | JOB_WAIT)) {
            if (j->flags & JOB_EVENT)
                evs[j->ev].done_ns = start;
            continue;
        }
        if (!j->corr)
            continue; /* launched while not measuring */
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = j->corr;
        a.kind = j->kind;
        a.flags = j->flags & GPUPROF_ACTIVITY_MORE;
        a.stream = j->stream;
        a.start_ns = start;
        a.end_ns = start + j->dur;
        a.bytes = j->bytes;
        a.name = j->name;
        acts[m++] = a;
    }
    unsigned batch = cfg.batch;
    for (size_t b = 0; b < m; b += batch) {
        size_t e = b + batch < m ? b + batch : m;
        for (size_t i = e - 1; i > b; i--) { /* shuffle the batch */
            size_t k = b + next_rand() % (i - b + 1);
            gpuprof_activity t = acts[i];
            acts[i] = acts[k];
            acts[k] = t;
        }
        for (size_t i = b; i < e; i++)
            gpuprof_activity_submit(&acts[i]); /* drops are counted */
    }
    free(acts);
}

static void *sim_main(void *arg)
{
    gpuprof_be_own_thread(); /* the simulated device, not the program */
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        bool go = (want > delivered && nq) || (!hold && nq >= cfg.batch) ||
                  (stopping && nq);
        if (!go && stopping)
            break;
        if (!go) {
            struct timespec ts;
            deadline_in(&ts, (uint64_t)cfg.delay_us * 1000);
            if (pthread_cond_timedwait(&work_cv, &mu, &ts) != ETIMEDOUT ||
                hold || !nq)
                continue;
            /* a partial batch waited long enough: deliver it */
        }
        job *jobs = q;
        size_t n = nq, cap = capq;
        q = spare;
        capq = spare_cap;
        nq = 0;
        spare = NULL;
        spare_cap = 0;
        pthread_mutex_unlock(&mu);
        run_jobs(jobs, n);
        pthread_mutex_lock(&mu);
        if (spare)
            free(jobs);
        else {
            spare = jobs;
            spare_cap = cap;
        }
        delivered += n;
        pthread_cond_broadcast(&done_cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Delivers everything launched so far and waits for it. */
static void deliver_all(void)
{
    pthread_mutex_lock(&mu);
    uint64_t target = launched;
    if (want < target)
        want = target;
    pthread_cond_signal(&work_cv);
    while (active && delivered < target)
        pthread_cond_wait(&done_cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* ---- backend vtable ---------------------------------------------------- */
static gpuprof_status sim_probe(void *user, char *reason, size_t size)
{
    (void)user, (void)reason, (void)size;
    return GPUPROF_OK;
}

static void fork_child(void);
static void register_atfork(void)
{
    /* No prepare handler: taking `mu` there would order it before the
     * library's backend lock, against sim_init's order. */
    pthread_atfork(NULL, NULL, fork_child);
}

static void fork_child(void)
{
    /* The device thread did not survive: launches are refused here, and
     * the state it may have been changing is dropped (leaked). */
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&work_cv, NULL);
    pthread_cond_init(&done_cv, NULL);
    active = false;
    q = spare = NULL;
    nq = capq = spare_cap = 0;
}

static gpuprof_status sim_init(void *user)
{
    (void)user;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_atfork);
    cond_init_monotonic(&work_cv);
    pthread_mutex_lock(&mu);
    clock_of = calloc(cfg.streams, sizeof(*clock_of));
    if (!evs)
        evs = calloc(MAX_EVENTS, sizeof(*evs));
    nev = 0;
    null_end = 0;
    stopping = false;
    int e = clock_of && evs ? spawn_quiet(&thr, sim_main) : ENOMEM;
    active = e == 0;
    pthread_mutex_unlock(&mu);
    if (e) {
        free(clock_of);
        clock_of = NULL;
        return GPUPROF_E_NOMEM;
    }
    return GPUPROF_OK;
}

static gpuprof_status sim_flush(void *user)
{
    (void)user;
    deliver_all();
    return GPUPROF_OK;
}

static void sim_fini(void *user)
{
    (void)user;
    deliver_all();
    pthread_mutex_lock(&mu);
    if (!active) {
        pthread_mutex_unlock(&mu);
        return;
    }
    stopping = true;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thr, NULL);
    pthread_mutex_lock(&mu);
    active = false;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&mu);
}

gpuprof_status gpuprof__sim_register(const gp_sim_config *c)
{
    cfg = (gp_sim_config){4, 64, 1, 1000, false, false};
    if (c) {
        cfg.realtime = c->realtime;
        cfg.null_stream = c->null_stream;
        if (c->streams)
            cfg.streams = c->streams;
        if (c->batch)
            cfg.batch = c->batch;
        if (c->seed)
            cfg.seed = c->seed;
        if (c->delay_us)
            cfg.delay_us = c->delay_us;
    }
    rng = 0x9E3779B97F4A7C15ull ^ cfg.seed;
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "sim";
    b.caps = GPUPROF_BACKEND_CAP_ASYNC | GPUPROF_BACKEND_CAP_TRACE;
    b.probe = sim_probe;
    b.init = sim_init;
    b.flush = sim_flush;
    b.fini = sim_fini;
    return gpuprof_backend_register(&b, 0);
}

/* ---- launches ---------------------------------------------------------- */
static gpuprof_status enqueue(const job *js, size_t n)
{
    pthread_mutex_lock(&mu);
    if (!active || gpuprof_be_forked()) {
        pthread_mutex_unlock(&mu);
        return GPUPROF_E_STATE;
    }
    if (nq + n > capq) {
        size_t cap = capq ? capq * 2 : 1024;
        while (cap < nq + n)
            cap *= 2;
        job *nqp = realloc(q, cap * sizeof(*nqp));
        if (!nqp) {
            pthread_mutex_unlock(&mu);
            return GPUPROF_E_NOMEM;
        }
        q = nqp;
        capq = cap;
    }
    memcpy(q + nq, js, n * sizeof(*js));
    nq += n;
    launched += n;
    if (!hold && nq >= cfg.batch && nq - n < cfg.batch)
        pthread_cond_signal(&work_cv); /* once, when a batch fills */
    pthread_mutex_unlock(&mu);
    return GPUPROF_OK;
}

/* The legacy default stream's launches are noted in traces (with
 * cfg.null_stream, stream 0). */
static void note_launch(uint64_t corr, unsigned stream, uint32_t flags)
{
    if (cfg.null_stream && stream == 0)
        flags |= GPUPROF_DEP_NULL;
    if (flags)
        gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH, flags, 0, stream, 0);
}

/* The device work of operation `corr` (begun by the caller, whose frame
 * the call path keeps): queued on `stream` at the host's (scripted) time,
 * with its launch noted for traces (`dep`: GPUPROF_DEP_* flags). */
static gpuprof_status launch(uint64_t corr, uint32_t kind, unsigned stream,
                             uint64_t dur_ns, uint64_t bytes, const char *name,
                             uint32_t dep)
{
    job j = {corr, kind, stream, 0, dur_ns, bytes, host_now(), name, 0};
    note_launch(corr, stream, dep);
    return enqueue(&j, 1);
}

/* A copy or fill: the kinds gpuprof__sim_copy and _copy_sync take. */
static bool copy_kind(gpuprof_op_kind kind)
{
    return kind == GPUPROF_OP_MEMSET ||
           (kind >= GPUPROF_OP_COPY_H2D && kind <= GPUPROF_OP_COPY_OTHER);
}

/* Frames: gpuprof_be_op_begin drops itself and callpath; skip 1 more drops
 * the public sim function, so the innermost frame is its caller's. The
 * launch functions must keep their own frame (no tail calls into op_begin,
 * not inlined into callers): they are external and use the result. */
__attribute__((noinline)) gpuprof_status
gpuprof__sim_kernel(unsigned stream, const char *name, uint64_t dur_ns)
{
    if (stream >= cfg.streams || !name || !*name)
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 1);
    gpuprof_status st =
        launch(corr, GPUPROF_OP_KERNEL, stream, dur_ns, 0, name, 0);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_copy(unsigned stream, gpuprof_op_kind kind, uint64_t bytes,
                  uint64_t dur_ns)
{
    if (stream >= cfg.streams || !copy_kind(kind))
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(kind, 1);
    gpuprof_status st = launch(corr, kind, stream, dur_ns, bytes, NULL, 0);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_graph(unsigned stream, unsigned n, const char *const *names,
                   const uint64_t *dur_ns)
{
    if (stream >= cfg.streams || n == 0 || n > 4096 || !names || !dur_ns)
        return GPUPROF_E_INVALID;
    job *js = malloc(n * sizeof(*js));
    if (!js)
        return GPUPROF_E_NOMEM;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 1);
    uint64_t t = host_now();
    for (unsigned i = 0; i < n; i++)
        js[i] = (job){corr, GPUPROF_OP_KERNEL, stream,
                      i + 1 < n ? GPUPROF_ACTIVITY_MORE : 0, dur_ns[i], 0, t,
                      names[i], 0};
    note_launch(corr, stream, 0);
    gpuprof_status st = enqueue(js, n);
    gpuprof_be_op_end(corr);
    free(js);
    return st;
}

/* ---- synchronization (sim.h) -------------------------------------------- */

/* When the work a wait targets is done on the virtual clock: event `ev`
 * (UINT32_MAX: none), else `stream` (UINT32_MAX: every stream), once
 * everything launched so far has run. */
static gpuprof_status settle(unsigned stream, uint32_t ev, uint64_t *t)
{
    pthread_mutex_lock(&mu);
    bool ok = active;
    pthread_mutex_unlock(&mu);
    if (!ok)
        return GPUPROF_E_STATE;
    deliver_all();
    pthread_mutex_lock(&mu);
    uint64_t v = 0;
    if (ev != UINT32_MAX)
        v = evs[ev].done_ns;
    else
        for (unsigned k = 0; k < cfg.streams; k++)
            if ((stream == UINT32_MAX || k == stream) && clock_of[k] > v)
                v = clock_of[k];
    pthread_mutex_unlock(&mu);
    *t = v;
    return GPUPROF_OK;
}

/* With cfg.realtime the host waits until the virtual time t. */
static gpuprof_status wait_for(unsigned stream, uint32_t ev)
{
    uint64_t t;
    gpuprof_status st = settle(stream, ev, &t);
    if (st != GPUPROF_OK || !cfg.realtime)
        return st;
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    return GPUPROF_OK;
}

static bool event_ok(uint32_t ev)
{
    pthread_mutex_lock(&mu);
    bool ok = ev < nev && evs[ev].recorded;
    pthread_mutex_unlock(&mu);
    return ok;
}

__attribute__((noinline)) gpuprof_status gpuprof__sim_sync(void)
{
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_SYNC, 1);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_DEVICE, 0, 0, GPUPROF_DEP_ALL, 0);
    gpuprof_status st = wait_for(UINT32_MAX, UINT32_MAX);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status gpuprof__sim_stream_sync(
    unsigned stream)
{
    if (stream >= cfg.streams)
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_SYNC, 1);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_STREAM, 0, 0, stream, 0);
    gpuprof_status st = wait_for(stream, UINT32_MAX);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_copy_sync(unsigned stream, gpuprof_op_kind kind, uint64_t bytes,
                       uint64_t dur_ns)
{
    if (stream >= cfg.streams || !copy_kind(kind))
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(kind, 1);
    gpuprof_status st =
        launch(corr, kind, stream, dur_ns, bytes, NULL, GPUPROF_DEP_BLOCKING);
    if (st == GPUPROF_OK)
        st = wait_for(stream, UINT32_MAX);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_event_record(unsigned stream, uint32_t *event)
{
    if (stream >= cfg.streams || !event)
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_OTHER, 1);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_EVENT_RECORD, 0, 0, stream, 0);
    pthread_mutex_lock(&mu);
    uint32_t ev = nev < MAX_EVENTS && evs ? nev++ : UINT32_MAX;
    if (ev != UINT32_MAX)
        evs[ev] = (sim_event){0, corr, stream, true};
    pthread_mutex_unlock(&mu);
    gpuprof_status st = GPUPROF_E_LIMIT;
    if (ev != UINT32_MAX) {
        job j = {0, 0, stream, JOB_EVENT, 0, 0, host_now(), NULL, ev};
        st = enqueue(&j, 1);
    }
    gpuprof_be_op_end(corr);
    *event = ev;
    return st;
}

__attribute__((noinline)) gpuprof_status gpuprof__sim_event_sync(uint32_t ev)
{
    if (!event_ok(ev))
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_SYNC, 1);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_EVENT, 0, 0, evs[ev].stream,
                    evs[ev].corr);
    gpuprof_status st = wait_for(UINT32_MAX, ev);
    gpuprof_be_op_end(corr);
    return st;
}

/* A query: done when the virtual clock of the target has passed. */
__attribute__((noinline)) static gpuprof_status query(unsigned stream,
                                                    uint32_t ev, bool *done)
{
    uint32_t what = ev == UINT32_MAX ? GPUPROF_DEP_QUERY_STREAM : GPUPROF_DEP_QUERY_EVENT;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_OTHER, 2);
    uint64_t t = 0;
    gpuprof_status st = settle(stream, ev, &t);
    *done = st == GPUPROF_OK && (!cfg.realtime || gpuprof_be_now_ns() >= t);
    gpuprof_be_op_dep(corr, what, *done ? GPUPROF_DEP_READY : 0, 0,
                    ev == UINT32_MAX ? stream : evs[ev].stream,
                    ev == UINT32_MAX ? 0 : evs[ev].corr);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_stream_query(unsigned stream, bool *done)
{
    if (stream >= cfg.streams || !done)
        return GPUPROF_E_INVALID;
    gpuprof_status st = query(stream, UINT32_MAX, done);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_event_query(uint32_t ev, bool *done)
{
    if (!event_ok(ev) || !done)
        return GPUPROF_E_INVALID;
    gpuprof_status st = query(UINT32_MAX, ev, done);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_stream_wait_event(unsigned stream, uint32_t ev)
{
    if (stream >= cfg.streams || !event_ok(ev))
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_OTHER, 1);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_STREAM_WAIT, 0, 0, stream, evs[ev].corr);
    job j = {0, 0, stream, JOB_WAIT, 0, 0, host_now(), NULL, ev};
    gpuprof_status st = enqueue(&j, 1);
    gpuprof_be_op_end(corr);
    return st;
}

void gpuprof__sim_hold(bool h)
{
    pthread_mutex_lock(&mu);
    hold = h;
    pthread_cond_signal(&work_cv);
    pthread_mutex_unlock(&mu);
}


void gpuprof__sim_clock(uint64_t t_ns)
{
    atomic_store_explicit(&script_ns, t_ns, memory_order_relaxed);
}

__attribute__((noinline)) gpuprof_status gpuprof__sim_wait(uint64_t t0_ns,
                                                           uint64_t t1_ns)
{
    if (t1_ns < t0_ns)
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_SYNC, 1);
    pthread_mutex_lock(&mu);
    bool ok = active;
    pthread_mutex_unlock(&mu);
    if (ok)
        deliver_all();
    if (ok && corr) {
        gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
        a.correlation = corr;
        a.kind = GPUPROF_OP_SYNC;
        a.flags = GPUPROF_ACTIVITY_HOST; /* a SYNC: the core makes it a wait */
        a.start_ns = t0_ns;
        a.end_ns = t1_ns;
        gpuprof_be_activity_submit(&a, NULL);
    }
    gpuprof_be_op_end(corr);
    return ok ? GPUPROF_OK : GPUPROF_E_STATE;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_copy_host(unsigned stream, gpuprof_op_kind kind, const void *host,
                       uint64_t bytes, uint64_t dur_ns)
{
    if (stream >= cfg.streams ||
        (kind != GPUPROF_OP_COPY_H2D && kind != GPUPROF_OP_COPY_D2H))
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(kind, 1);
    if (kind == GPUPROF_OP_COPY_D2H)
        gpuprof_be_detect_readback(host, bytes);
    else if (gpuprof_be_detect_sent_again(host, bytes))
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_OUTPUT_AS_INPUT, 1);
    gpuprof_status st = launch(corr, kind, stream, dur_ns, bytes, NULL, 0);
    gpuprof_be_op_end(corr);
    return st;
}

__attribute__((noinline)) gpuprof_status
gpuprof__sim_kernel_in(unsigned stream, const char *name, uint32_t context,
                       uint64_t dur_ns)
{
    if (stream >= cfg.streams || !name || !*name)
        return GPUPROF_E_INVALID;
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 1);
    if (gpuprof_be_detect_kernel_context(name, context))
        gpuprof_be_detect_note(corr, GPUPROF_METRIC_DET_MULTI_CONTEXT, 1);
    gpuprof_status st =
        launch(corr, GPUPROF_OP_KERNEL, stream, dur_ns, 0, name, 0);
    gpuprof_be_op_end(corr);
    return st;
}
