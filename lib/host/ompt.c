/*
 * ompt.c - the OpenMP tool (host.h): LLVM's libomp finds ompt_start_tool
 * (interpose.c) when it starts and calls us back at each parallel region,
 * implicit task, barrier, taskwait and task switch (OMPT, OpenMP 5.0 §4).
 * GCC's libgomp has no OMPT: host.c says so once.
 *
 * What becomes a record (HOST_RECORDS, flag OMP; io/trace.h):
 *   FORK      on the encountering thread as a region begins (object: the
 *             region's number, ours, from 1; aux: the team size asked);
 *   IDLE      on a worker, from its arrival at the barrier that ended its
 *             previous region (or its start) until its implicit task in
 *             the region begins: it waited for the fork;
 *   BARRIER   each member's implicit or explicit barrier (object: the
 *             region), unless the thread ran tasks while it waited (that
 *             time is work, not waiting: no record). A worker's implicit
 *             barrier begins with a BARRIER moment flagged ARRIVAL: the
 *             runtime says when the barrier that ends a region ended for a
 *             worker only when its next region begins (OpenMP 5.1 gives
 *             that end no region), so its arrival is recorded at once and
 *             the rest is IDLE; a barrier inside the region (worksharing)
 *             ends within it and gets its full record too;
 *   TASKWAIT  a taskwait (object: the waiting task's number), likewise;
 *   TASK_END  an explicit task completed (object: its parent's number).
 * The analysis joins them (doc/ANALYSIS.md "Host threads"). Region and
 * task numbers live in OMPT's per-region and per-task data words: a task's
 * holds its parent's number in the high half.
 *
 * The declarations below are the OMPT ABI's (the standard pins the
 * values), written here so that the tool builds without any OpenMP
 * installed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "host/host.h"
#include "io/trace.h"

typedef union ompt_data_t {
    uint64_t value;
    void *ptr;
} ompt_data_t;
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *name);
typedef void (*ompt_callback_t)(void);
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);
typedef int (*ompt_initialize_t)(ompt_function_lookup_t lookup,
                                 int initial_device_num,
                                 ompt_data_t *tool_data);
typedef void (*ompt_finalize_t)(ompt_data_t *tool_data);
struct ompt_start_tool_result_t {
    ompt_initialize_t initialize;
    ompt_finalize_t finalize;
    ompt_data_t tool_data;
};
enum { /* ompt_callbacks_t */
    CB_THREAD_BEGIN = 1,
    CB_THREAD_END = 2,
    CB_PARALLEL_BEGIN = 3,
    CB_TASK_CREATE = 5,
    CB_TASK_SCHEDULE = 6,
    CB_IMPLICIT_TASK = 7,
    CB_SYNC_REGION = 23
};
enum { SCOPE_BEGIN = 1, SCOPE_END = 2 };      /* ompt_scope_endpoint_t */
enum { THREAD_WORKER = 2 };                   /* ompt_thread_t */
enum { TASK_INITIAL = 0x1, TASK_EXPLICIT = 0x4 }; /* ompt_task_flag_t */
enum { TASK_COMPLETE = 1 };                   /* ompt_task_status_t */
enum {                                        /* ompt_sync_region_t */
    SYNC_BARRIER = 1,
    SYNC_BARRIER_IMPLICIT = 2,
    SYNC_BARRIER_EXPLICIT = 3,
    SYNC_BARRIER_IMPLEMENTATION = 4,
    SYNC_TASKWAIT = 5,
    SYNC_BARRIER_IMPLICIT_WORKSHARE = 8,
    SYNC_BARRIER_IMPLICIT_PARALLEL = 9
};

#define OMP GPUPROF_IO_HOST_OMP
#define DEPTH 8 /* nested regions and sync regions followed */

static _Atomic uint64_t numbers; /* regions and tasks */
static _Atomic int started;

/* The calling thread's place: the regions whose implicit tasks it runs,
 * its open sync regions, since when it idles, its task switches. */
typedef struct sync_open {
    uint64_t t0, object, switches;
    int kind;
} sync_open;
typedef struct omp_thread {
    uint64_t region[DEPTH];
    uint32_t nregion, nsync;
    sync_open sync[DEPTH];
    uint64_t idle_since, switches;
    uint64_t last_task; /* when it last switched tasks */
    unsigned int index; /* its number in the innermost team */
} omp_thread;
/* On the heap, one per thread the runtime calls us on (freed at its
 * end): only a pointer in static TLS, which a dlopened libgpuprof shares
 * with every other library. */
static __thread omp_thread *self_ __attribute__((tls_model("initial-exec")));

/* The calling thread's place; NULL when out of memory (then its callbacks
 * record nothing). */
static omp_thread *me(void)
{
    if (__builtin_expect(!self_, 0))
        self_ = calloc(1, sizeof(*self_));
    return self_;
}

static uint64_t number(void) { return gp_fetch_add_relaxed(&numbers, 1u) + 1u; }

/* A task's own number (the low half of its data word), made when it has
 * none (the initial task). */
static uint64_t task_number(ompt_data_t *task)
{
    if (!task)
        return 0;
    if (!(task->value & 0xFFFFFFFFu))
        task->value |= number() & 0xFFFFFFFFu;
    return task->value & 0xFFFFFFFFu;
}

static void on_thread_begin(int type, ompt_data_t *data)
{
    (void)data;
    omp_thread *s = me();
    if (s && type == THREAD_WORKER)
        s->idle_since = gp_ticks();
}

static void on_thread_end(ompt_data_t *data)
{
    (void)data;
    free(self_);
    self_ = NULL;
}

static void on_parallel_begin(ompt_data_t *task, const void *frame,
                              ompt_data_t *region, unsigned int requested,
                              int flags, const void *ra)
{
    (void)task, (void)frame, (void)flags, (void)ra;
    uint64_t now = gp_ticks();
    region->value = number();
    gpuprof__host_record(GPUPROF_IO_HOST_FORK, OMP, now, now, region->value,
                         requested);
}

static void on_implicit_task(int endpoint, ompt_data_t *region,
                             ompt_data_t *task, unsigned int actual,
                             unsigned int index, int flags)
{
    (void)actual;
    if (flags & TASK_INITIAL)
        return;
    uint64_t now = gp_ticks();
    omp_thread *s = me();
    if (!s)
        return;
    if (endpoint == SCOPE_BEGIN) {
        uint64_t r = region ? region->value : 0;
        if (s->nregion < DEPTH)
            s->region[s->nregion] = r;
        s->nregion++;
        s->index = index;
        task->value = number() & 0xFFFFFFFFu;
        if (index && s->idle_since && r)
            gpuprof__host_record(GPUPROF_IO_HOST_IDLE, OMP, s->idle_since,
                                 now, r, index);
        s->idle_since = 0;
    } else if (endpoint == SCOPE_END) {
        s->nregion -= s->nregion > 0;
        if (index && !s->idle_since) /* idle since its arrival, if known */
            s->idle_since = now;
    }
}

static bool is_implicit(int kind)
{
    return kind == SYNC_BARRIER_IMPLICIT ||
           kind == SYNC_BARRIER_IMPLICIT_WORKSHARE ||
           kind == SYNC_BARRIER_IMPLICIT_PARALLEL;
}

static bool is_barrier(int kind)
{
    return (kind >= SYNC_BARRIER && kind <= SYNC_BARRIER_IMPLEMENTATION) ||
           kind == SYNC_BARRIER_IMPLICIT_WORKSHARE ||
           kind == SYNC_BARRIER_IMPLICIT_PARALLEL;
}

static void on_sync_region(int kind, int endpoint, ompt_data_t *region,
                           ompt_data_t *task, const void *ra)
{
    (void)ra;
    omp_thread *s = me();
    if (!s || (!is_barrier(kind) && kind != SYNC_TASKWAIT))
        return;
    if (endpoint == SCOPE_BEGIN) {
        uint64_t r = region ? region->value
                     : s->nregion && s->nregion <= DEPTH
                         ? s->region[s->nregion - 1]
                         : 0;
        uint64_t now = gp_ticks();
        if (s->nsync < DEPTH)
            s->sync[s->nsync] = (sync_open){
                now, kind == SYNC_TASKWAIT ? task_number(task) : r,
                s->switches, kind};
        s->nsync++;
        if (s->index && r && is_implicit(kind)) /* a worker: see above */
            gpuprof__host_record(GPUPROF_IO_HOST_BARRIER,
                                 OMP | GPUPROF_IO_HOST_ARRIVAL, now, now, r,
                                 0);
        return;
    }
    if (endpoint != SCOPE_END || !s->nsync)
        return;
    if (--s->nsync >= DEPTH)
        return;
    const sync_open *o = &s->sync[s->nsync];
    if (s->index && !region && is_implicit(kind)) {
        /* the barrier that ended a worker's region, ended at the next
         * fork: idle since its arrival (or its last task) */
        s->idle_since = o->switches != s->switches ? s->last_task : o->t0;
        return;
    }
    /* A wait that ran tasks was work; a region we never saw begin has no
     * number (0): neither is recorded. */
    if (o->switches != s->switches || !o->object)
        return;
    gpuprof__host_record(o->kind == SYNC_TASKWAIT ? GPUPROF_IO_HOST_TASKWAIT
                                                  : GPUPROF_IO_HOST_BARRIER,
                         OMP, o->t0, gp_ticks(), o->object, 0);
}

static void on_task_create(ompt_data_t *parent, const void *frame,
                           ompt_data_t *task, int flags, int deps,
                           const void *ra)
{
    (void)frame, (void)deps, (void)ra;
    if (task && (flags & TASK_EXPLICIT))
        task->value = task_number(parent) << 32 | (number() & 0xFFFFFFFFu);
}

static void on_task_schedule(ompt_data_t *prior, int status,
                             ompt_data_t *next)
{
    (void)next;
    uint64_t now = gp_ticks();
    omp_thread *s = me();
    if (s) {
        s->switches++;
        s->last_task = now;
    }
    if (status != TASK_COMPLETE || !prior || !(prior->value >> 32))
        return;
    gpuprof__host_record(GPUPROF_IO_HOST_TASK_END, OMP, now, now,
                         prior->value >> 32, 0);
}

static int initialize(ompt_function_lookup_t lookup, int device,
                      ompt_data_t *data)
{
    (void)device, (void)data;
    ompt_set_callback_t set =
        (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set)
        return 0;
    set(CB_THREAD_BEGIN, (ompt_callback_t)on_thread_begin);
    set(CB_THREAD_END, (ompt_callback_t)on_thread_end);
    set(CB_PARALLEL_BEGIN, (ompt_callback_t)on_parallel_begin);
    set(CB_IMPLICIT_TASK, (ompt_callback_t)on_implicit_task);
    set(CB_SYNC_REGION, (ompt_callback_t)on_sync_region);
    set(CB_TASK_CREATE, (ompt_callback_t)on_task_create);
    set(CB_TASK_SCHEDULE, (ompt_callback_t)on_task_schedule);
    gp_store_release(&started, 1);
    return 1; /* keep the tool */
}

static void finalize(ompt_data_t *data) { (void)data; }

struct ompt_start_tool_result_t *gpuprof__ompt_tool(unsigned int version,
                                                    const char *runtime)
{
    (void)version, (void)runtime;
    static struct ompt_start_tool_result_t tool = {initialize, finalize,
                                                   {0}};
    const char *off = getenv("GPUPROF_OMPT");
    return off && !strcmp(off, "0") ? NULL : &tool;
}

bool gpuprof__ompt_started(void) { return gp_load_acquire(&started) != 0; }
