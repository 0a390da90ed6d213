/*
 * thread.c - per-thread state: created on first use, handed to the process
 * when the thread exits, cleaned up in a fork child.
 *
 * The state is found through one initial-exec TLS pointer (a single load on
 * the hot path). A pthread key's destructor tells us when a thread exits:
 * the thread closes its own open regions (flagged) and marks itself exited;
 * the state stays on the global list, so everything it measured is written
 * by later flushes. Registering a thread (thread_create) runs the
 * thread-start hooks (internal.h) on it: the host layer's START record,
 * the CPU-sample timers (cpusample.c; its exit stops them). Past
 * GPUPROF_KEEP_THREADS exited threads, a state is summed into one merged
 * state, unlinked under G.lock and freed under G.flush_lock: flushes read
 * thread states under the one, counters under the other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/trace.h"
#include "io/io.h"

__thread gp_thread *gpuprof__tls_self __attribute__((tls_model("initial-exec")));
static __thread char pending_name[64]; /* a name set before the state exists */
static pthread_key_t exit_key;
/* Exited threads beyond G.cfg.keep_threads are summed into `merged`, so a
 * program that starts a thread per task keeps bounded memory and a
 * readable profile. Both under G.flush_lock (merging frees a thread state,
 * which must not happen while a flush reads it). */
static gp_thread *merged;
static int64_t exited_kept;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* Exited GPU threads waiting to be merged (under G.flush_lock). */
static gp_thread *deferred;
static bool key_ok;

static uint64_t os_tid(void) { return (uint64_t)syscall(SYS_gettid); }

/* Thread-start hooks (internal.h): added from init, read by every new
 * thread. */
static gp_thread_hook _Atomic hooks[GP_THREAD_HOOKS];
static _Atomic uint32_t nhooks;

bool gpuprof__thread_hook_add(gp_thread_hook fn)
{
    uint32_t n = gp_load_relaxed(&nhooks);
    for (uint32_t i = 0; i < n; i++)
        if (gp_load_relaxed(&hooks[i]) == fn)
            return true;
    if (n == GP_THREAD_HOOKS)
        return false;
    gp_store_relaxed(&hooks[n], fn);
    gp_store_release(&nhooks, n + 1); /* the hook before its count */
    return true;
}

static void run_hooks(gp_thread *t)
{
    uint32_t n = gp_load_acquire(&nhooks);
    for (uint32_t i = 0; i < n; i++)
        gp_load_relaxed(&hooks[i])(t);
}

gp_thread *gpuprof__thread_started(void)
{
    if (gp_mode() == GP_MODE_UNINIT || gp_mode() == GP_MODE_FINALIZED ||
        (!gpuprof__trace_on() && !gp_load_relaxed(&nhooks)))
        return gpuprof__tls_self;
    return gpuprof__thread_get();
}

static gp_thread *state_new(void);
static void unlink_thread(gp_thread *t);

/* The state every merged thread is summed into; under flush_lock. */
static gp_thread *merged_state(void)
{
    if (merged || !(merged = state_new()))
        return merged;
    atomic_init(&merged->flags,
                GPUPROF_IO_THREAD_EXITED | GPUPROF_IO_THREAD_MERGED);
    snprintf(merged->name, sizeof(merged->name), "exited threads (merged)");
    pthread_mutex_lock(&G.lock);
    merged->seq = G.thread_seq++;
    merged->next_all = G.threads;
    G.threads = merged;
    pthread_mutex_unlock(&G.lock);
    return merged;
}

/* Keeps an exited thread apart, or sums it into the merged state and frees
 * it once more than keep_threads have exited. */
static void retire(gp_thread *t)
{
    pthread_mutex_lock(&G.flush_lock);
    if (gp_load_relaxed(&t->gpu)) {
        /* GPU work may still arrive for it (the monitor holds pointers to
         * it and its placeholders): beyond keep_threads it is merged later,
         * once the monitor is done with it (gpuprof__threads_merge_gpu). */
        if (exited_kept < G.cfg.keep_threads)
            exited_kept++;
        else {
            t->next_deferred = deferred;
            deferred = t;
        }
        pthread_mutex_unlock(&G.flush_lock);
        return;
    }
    gp_thread *m = exited_kept >= G.cfg.keep_threads ? merged_state() : NULL;
    /* Traced: where its nodes go, for its records (trace.h). */
    uint32_t n = gp_load_relaxed(&t->cct.count);
    uint32_t *map = m && gpuprof__trace_on() ? malloc(n * sizeof(*map)) : NULL;
    bool ok = m && gpuprof__cct_merge_ex(&m->cct, &t->cct, map, NULL, 0);
    if (ok && map)
        gpuprof__trace_merged(t->seq, map, n);
    free(map);
    if (!ok) { /* kept apart */
        if (m) /* out of memory part way: some of it is in both */
            gpuprof__log(GPUPROF_LOG_ERROR, "out of memory merging an exited "
                         "thread; its profile is kept apart");
        exited_kept++;
        pthread_mutex_unlock(&G.flush_lock);
        return;
    }
    gp_store_relaxed(&m->entered, gp_load_relaxed(&m->entered) +
                                      gp_load_relaxed(&t->entered));
    gp_store_relaxed(&m->end_ticks, gp_load_relaxed(&t->end_ticks));
    unlink_thread(t);
    pthread_mutex_unlock(&G.flush_lock);
    gpuprof__cct_destroy(&t->cct);
    free(t);
}

/* Unlinks t from the list of every thread state (it has been merged). */
static void unlink_thread(gp_thread *t)
{
    pthread_mutex_lock(&G.lock);
    for (gp_thread **p = &G.threads; *p; p = &(*p)->next_all)
        if (*p == t) {
            *p = t->next_all;
            break;
        }
    pthread_mutex_unlock(&G.lock);
}

/* Sums t, an exited thread that used the GPU and that nothing refers to
 * any more, into the merged state: its region CCT, then its GPU subtree
 * with the mirrors' placeholder indices translated. false: kept apart. */
static bool merge_gpu_thread(gp_thread *t)
{
    gp_thread *m = merged_state();
    gp_gpu *g = gp_load_relaxed(&t->gpu);
    gp_gpu *mg = m ? gp_load_relaxed(&m->gpu) : NULL;
    if (m && !mg)
        mg = gpuprof__gpu_attach(m);
    uint32_t n = gp_load_relaxed(&t->cct.count);
    uint32_t *map = mg ? malloc(n * sizeof(*map)) : NULL;
    if (!map)
        return false;
    bool ok = gpuprof__cct_merge_ex(&m->cct, &t->cct, map, NULL, 0);
    if (ok) {
        pthread_mutex_lock(&mg->mu);
        ok = gpuprof__cct_merge_ex(&mg->tree, &g->tree, NULL, map, n);
        pthread_mutex_unlock(&mg->mu);
    }
    if (ok)
        gpuprof__trace_merged(t->seq, map, n);
    free(map);
    if (!ok) {
        gpuprof__log(GPUPROF_LOG_ERROR, "out of memory merging an exited "
                     "thread; its profile is kept apart");
        return false;
    }
    gp_store_relaxed(&m->entered, gp_load_relaxed(&m->entered) +
                                      gp_load_relaxed(&t->entered));
    gp_store_relaxed(&mg->ops, gp_load_relaxed(&mg->ops) +
                                   gp_load_relaxed(&g->ops));
    gp_store_relaxed(&m->end_ticks, gp_load_relaxed(&t->end_ticks));
    return true;
}

void gpuprof__threads_merge_gpu(void)
{
    if (!deferred)
        return;
    gpuprof__monitor_settle(); /* finished operations leave the table */
    for (gp_thread **p = &deferred; *p;) {
        gp_thread *t = *p;
        gp_gpu *g = gp_load_relaxed(&t->gpu);
        if (!gpuprof__monitor_quiescent(g)) {
            p = &t->next_deferred; /* work still in flight: later */
            continue;
        }
        *p = t->next_deferred;
        if (!merge_gpu_thread(t)) {
            exited_kept++;
            continue;
        }
        unlink_thread(t);
        gpuprof__gpu_destroy(g);
        gpuprof__cct_destroy(&t->cct);
        free(t);
    }
}

static void on_thread_exit(void *arg)
{
    gp_thread *t = arg;
    gpuprof__sampler_thread_exit(t); /* its timers, its last samples */
    uint32_t open = gp_load_relaxed(&t->depth);
    if (open) {
        gpuprof__region_close_from(t, 0, gp_ticks(), GPUPROF_IO_NODE_OPEN);
        gpuprof__stat_add(GP_STAT_REGIONS_OPEN_AT_THREAD_EXIT, open);
    }
    gpuprof__observe_thread_exit(); /* while its state is still ours */
    gp_store_relaxed(&t->end_ticks, gp_ticks());
    gp_gpu *g = gp_load_relaxed(&t->gpu);
    if (g)
        gpuprof__gpu_thread_exit(g);
    if (t->trace) {
        gpuprof__trace_thread_close(t->trace);
        t->trace = NULL;
    }
    atomic_fetch_or_explicit(&t->flags, GPUPROF_IO_THREAD_EXITED,
                             memory_order_release);
    gpuprof__stat_add(GP_STAT_THREADS_EXITED, 1);
    gpuprof__tls_self = NULL;
    retire(t);
}

static void make_key(void)
{
    key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

void gpuprof__thread_startup(void) { pthread_once(&key_once, make_key); }

static gp_thread *state_new(void)
{
    gp_thread *t;
    if (posix_memalign((void **)&t, GP_CACHELINE, sizeof(*t)))
        return NULL;
    memset(t, 0, sizeof(*t));
    if (!gpuprof__cct_init(&t->cct)) {
        free(t);
        return NULL;
    }
    t->start_ticks = gp_ticks();
    return t;
}

gp_thread *gpuprof__thread_create(void)
{
    gp_thread *t = state_new();
    if (!t)
        return NULL;
    t->tid = os_tid();
    uint32_t flags = t->tid == (uint64_t)getpid() ? GPUPROF_IO_THREAD_MAIN : 0;
    atomic_init(&t->flags, flags);
    memcpy(t->name, pending_name, sizeof(t->name));
    pthread_mutex_lock(&G.lock);
    t->seq = G.thread_seq++;
    t->next_all = G.threads;
    G.threads = t;
    pthread_mutex_unlock(&G.lock);
    if (gpuprof__trace_on())
        t->trace = gpuprof__trace_thread_open(t->seq, t->tid, t->name);
    gpuprof__stat_add(GP_STAT_THREADS_CREATED, 1);
    pthread_once(&key_once, make_key);
    if (key_ok)
        pthread_setspecific(exit_key, t);
    gpuprof__tls_self = t;
    run_hooks(t);
    return t;
}

GPUPROF_API gpuprof_status gpuprof_thread_set_name(const char *name)
{
    if (!name)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_thread_set_name: NULL name");
    gp_thread *t = gpuprof__tls_self;
    if (!t) {
        snprintf(pending_name, sizeof(pending_name), "%s", name);
        return GPUPROF_OK;
    }
    pthread_mutex_lock(&G.lock);
    snprintf(t->name, sizeof(t->name), "%s", name);
    pthread_mutex_unlock(&G.lock);
    return GPUPROF_OK;
}

/* Thread states inherited by a fork child: kept reachable, never freed. A
 * child that execs at once (system(), popen()) should not pay for freeing
 * the parent's trees, and those trees may have been mid-update in threads
 * that do not exist here. */
static gp_thread *inherited;

void gpuprof__thread_atfork_child(uint64_t now)
{
    gp_thread *self = gpuprof__tls_self, *t = G.threads;
    while (t) {
        gp_thread *next = t->next_all;
        if (t != self) {
            t->next_all = inherited;
            inherited = t;
        }
        t = next;
    }
    G.threads = self;
    G.thread_seq = self ? 1 : 0;
    merged = NULL;
    deferred = NULL;
    exited_kept = 0;
    if (!self)
        return;
    self->next_all = NULL;
    self->seq = 0;
    self->tid = os_tid();
    self->start_ticks = now;
    atomic_init(&self->flags, GPUPROF_IO_THREAD_MAIN);
    atomic_init(&self->entered, 0);
    gpuprof__cct_zero(&self->cct);
    self->trace = NULL; /* the parent's trace is the parent's */
    uint32_t depth = gp_load_relaxed(&self->depth);
    for (uint32_t i = 0; i < depth; i++) {
        gp_store_relaxed(&self->stack[i].start, now);
        gp_store_relaxed(&self->stack[i].child_ticks, 0);
    }
    gpuprof__stat_add(GP_STAT_THREADS_CREATED, 1);
}
