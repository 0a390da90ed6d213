/*
 * cupti_pcs_submit.c - what PC sampling collected becomes activities
 * (cupti.h, "PC sampling"; cupti_pcs.c drives the collection).
 *
 * Stall reasons: CUPTI names them per architecture
 * ("smsp__pcsamp_warps_issue_stalled_<reason>[_not_issued]"); each name is
 * mapped once onto our fixed metrics, "_not_issued" twins as latency
 * samples (seed 001: issue rate = (samples - latency) / samples).
 *
 * Attribution. Kernel-serialized collection names the launch of every PC
 * record (its CUPTI correlation id -> ours through the ring). Continuous
 * collection does not (correlationId 0, cupti_pcsampling.h): kernels run
 * concurrently and their samples are decoded later, so a record is given
 * to the latest launch of its function (functionName), noted at launch.
 * Such launches are held open: their kernel record carries
 * GPUPROF_ACTIVITY_MORE, and they are closed (an empty final activity)
 * once their record is in and a later launch of the same function took
 * their place, or at flush. A kernel of a graph launch is noted when its
 * record comes (the graph launch stays open until cupti_act.c closes it).
 * A function launched from several call paths thus has its late samples
 * on its latest path: documented in doc/BACKENDS.md.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"

/* ---- stall reason names ------------------------------------------------- */
static const struct {
    const char *name;
    uint8_t metric;
} reasons[] = {
    {"selected", GPUPROF_METRIC_PC_STALL_SELECTED},
    {"not_selected", GPUPROF_METRIC_PC_STALL_NOT_SELECTED},
    {"barrier", GPUPROF_METRIC_PC_STALL_BARRIER},
    {"branch_resolving", GPUPROF_METRIC_PC_STALL_BRANCH_RESOLVING},
    {"dispatch_stall", GPUPROF_METRIC_PC_STALL_DISPATCH_STALL},
    {"drain", GPUPROF_METRIC_PC_STALL_DRAIN},
    {"imc_miss", GPUPROF_METRIC_PC_STALL_IMC_MISS},
    {"lg_throttle", GPUPROF_METRIC_PC_STALL_LG_THROTTLE},
    {"long_scoreboard", GPUPROF_METRIC_PC_STALL_LONG_SCOREBOARD},
    {"math_pipe_throttle", GPUPROF_METRIC_PC_STALL_MATH_PIPE_THROTTLE},
    {"membar", GPUPROF_METRIC_PC_STALL_MEMBAR},
    {"mio_throttle", GPUPROF_METRIC_PC_STALL_MIO_THROTTLE},
    {"misc", GPUPROF_METRIC_PC_STALL_MISC},
    {"no_instructions", GPUPROF_METRIC_PC_STALL_NO_INSTRUCTIONS},
    {"short_scoreboard", GPUPROF_METRIC_PC_STALL_SHORT_SCOREBOARD},
    {"sleeping", GPUPROF_METRIC_PC_STALL_SLEEPING},
    {"tex_throttle", GPUPROF_METRIC_PC_STALL_TEX_THROTTLE},
    {"wait", GPUPROF_METRIC_PC_STALL_WAIT},
};

uint32_t gpuprof__cupti_stall_metric(const char *name)
{
    if (!name)
        return GPUPROF_METRIC_PC_STALL_OTHER;
    const char *b = strstr(name, "issue_stalled_");
    b = b ? b + strlen("issue_stalled_") : name;
    /* "<reason>_not_issued": the same reason, and a latency sample. */
    size_t n = strlen(b);
    const char *ni = "_not_issued";
    bool latency = n > strlen(ni) && !strcmp(b + n - strlen(ni), ni);
    if (latency)
        n -= strlen(ni);
    uint32_t m = GPUPROF_METRIC_PC_STALL_OTHER;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strlen(reasons[i].name) == n && !strncmp(b, reasons[i].name, n))
            m = reasons[i].metric;
    return m | (latency ? GP_CU_LATENCY : 0);
}

/* ---- launches held open for continuous collection ----------------------- */
typedef struct held {
    uint64_t corr;
    uint64_t hash;  /* of name */
    char *name;     /* the function's (mangled) name, ours */
    bool latest;    /* the latest launch of its function */
    bool record_in; /* its kernel record was submitted (with MORE) */
    bool owned;     /* we close it (not: a graph launch, closed by
                       cupti_act.c when its kernels are all in) */
} held;

static pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;
static held tab[GP_CU_HELD_MAX];
static unsigned ntab;
static _Atomic int holding; /* continuous collection is on */
static uint64_t held_refused; /* launches not held: the table was full */
static uint64_t held_closed;  /* launches closed */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static void close_corr(uint64_t corr)
{
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_KERNEL;
    /* final: the launch ends here (its record already ended it in the
     * core's count of kernels in flight) */
    a.flags = GPUPROF_ACTIVITY_NOTE | GPUPROF_ACTIVITY_DONE;
    be_submit(&a, GPUPROF_NO_BINARY, 0, NULL, NULL);
}

/* Removes entry i (closing its launch when `close`); under hmu. */
static void drop_locked(unsigned i, bool close)
{
    if (close && tab[i].owned) {
        close_corr(tab[i].corr);
        held_closed++;
    }
    free(tab[i].name);
    tab[i] = tab[--ntab];
    memset(&tab[ntab], 0, sizeof(tab[ntab]));
}

void gpuprof__cupti_pcs_hold_on(bool on)
{
    gp_store_release(&holding, on ? 1 : 0);
}

static void note(const char *name, uint64_t corr, bool graph);

void gpuprof__cupti_pcs_note_launch(const char *name, uint64_t corr)
{
    note(name, corr, false);
}

void gpuprof__cupti_pcs_note_graph_kernel(const char *name, uint64_t corr)
{
    note(name, corr, true);
}

/* A launch of function `name` as the function's latest; a graph's kernel
 * (its record is in, the graph launch is open) is noted, not held. */
static void note(const char *name, uint64_t corr, bool graph)
{
    if (!name || !corr || !gp_load_acquire(&holding))
        return;
    uint64_t h = name_hash(name);
    pthread_mutex_lock(&hmu);
    unsigned i = 0;
    for (; i < ntab && tab[i].corr != corr; i++)
        ;
    if (i < ntab) { /* the runtime's call, then the driver's: its name */
        if (tab[i].hash == h && !strcmp(tab[i].name, name)) {
            pthread_mutex_unlock(&hmu);
            return;
        }
        drop_locked(i, false);
    }
    i = 0;
    /* Full: the oldest superseded launch whose record is in makes room. */
    while (ntab == GP_CU_HELD_MAX && i < ntab)
        if (!tab[i].latest && tab[i].record_in)
            drop_locked(i, true);
        else
            i++;
    char *copy = ntab < GP_CU_HELD_MAX ? strdup(name) : NULL;
    if (!copy) {
        held_refused++;
        pthread_mutex_unlock(&hmu);
        return;
    }
    for (i = 0; i < ntab; i++)
        if (tab[i].latest && tab[i].hash == h && !strcmp(tab[i].name, name))
            tab[i].latest = false;
    tab[ntab++] = (held){corr, h, copy, true, graph, !graph};
    pthread_mutex_unlock(&hmu);
}

bool gpuprof__cupti_pcs_held(uint64_t corr)
{
    if (!gp_load_acquire(&holding))
        return false;
    bool found = false;
    pthread_mutex_lock(&hmu);
    for (unsigned i = 0; i < ntab && !found; i++)
        found = tab[i].corr == corr && tab[i].owned;
    pthread_mutex_unlock(&hmu);
    return found;
}

void gpuprof__cupti_pcs_record_in(uint64_t corr)
{
    pthread_mutex_lock(&hmu);
    for (unsigned i = 0; i < ntab; i++)
        if (tab[i].corr == corr)
            tab[i].record_in = true;
    pthread_mutex_unlock(&hmu);
}

unsigned gpuprof__cupti_pcs_release(bool all)
{
    unsigned closed = 0;
    pthread_mutex_lock(&hmu);
    for (unsigned i = 0; i < ntab;) {
        if (tab[i].record_in && (all || !tab[i].latest)) {
            closed += tab[i].owned;
            drop_locked(i, true);
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&hmu);
    return closed;
}

void gpuprof__cupti_pcs_forget(bool close, uint64_t *closed,
                               uint64_t *refused)
{
    pthread_mutex_lock(&hmu);
    while (ntab)
        drop_locked(ntab - 1, close);
    *closed = held_closed;
    *refused = held_refused;
    held_closed = held_refused = 0;
    pthread_mutex_unlock(&hmu);
}

/* The latest launch of function `name`; 0 when none is held. */
static uint64_t latest_of(const char *name)
{
    if (!name)
        return 0;
    uint64_t h = name_hash(name), corr = 0;
    pthread_mutex_lock(&hmu);
    for (unsigned i = 0; i < ntab && !corr; i++)
        if (tab[i].latest && tab[i].hash == h && !strcmp(tab[i].name, name))
            corr = tab[i].corr;
    pthread_mutex_unlock(&hmu);
    return corr;
}

/* ---- submission ------------------------------------------------------------
 */
/* Values of one instruction, GPUPROF_EXTRA_MAX at a time. */
typedef struct pc_batch {
    gpuprof_activity a;
    uint32_t binary;
    unsigned n;
    uint32_t xm[GPUPROF_EXTRA_MAX];
    uint64_t xv[GPUPROF_EXTRA_MAX];
} pc_batch;

static void batch_flush(pc_batch *b)
{
    if (!b->n)
        return;
    be_submit(&b->a, b->binary, b->n, b->xm, b->xv);
    b->n = 0;
}

static void batch_add(pc_batch *b, uint32_t metric, uint64_t v)
{
    if (!v)
        return;
    for (unsigned i = 0; i < b->n; i++)
        if (b->xm[i] == metric) {
            b->xv[i] += v;
            return;
        }
    if (b->n == GPUPROF_EXTRA_MAX)
        batch_flush(b);
    b->xm[b->n] = metric;
    b->xv[b->n++] = v;
}

/* Our correlation for one PC record: its launch (serialized), else the
 * latest launch of its function (continuous); 0 when none is known. */
static uint64_t launch_of(const CUpti_PCSamplingPCData *pc)
{
    uint64_t corr;
    bool graph;
    if (pc->correlationId)
        return gpuprof__cupti_ring_find(pc->correlationId, &corr, &graph)
                   ? corr
                   : 0;
    return latest_of(pc->functionName);
}

static void submit_pc(const CUpti_PCSamplingPCData *pc, uint64_t corr,
                      const uint32_t *map, size_t nmap)
{
    pc_batch b;
    memset(&b, 0, sizeof(b));
    b.a = (gpuprof_activity)GPUPROF_ACTIVITY_INIT;
    b.a.correlation = corr;
    b.a.kind = GPUPROF_OP_KERNEL;
    /* Values only: the kernel's own record counts it (and closes it, or
     * the hold does). */
    b.a.flags =
        GPUPROF_ACTIVITY_NOTE | GPUPROF_ACTIVITY_INSTR | GPUPROF_ACTIVITY_MORE;
    b.a.name = pc->functionName;
    b.a.bytes = pc->pcOffset;
    b.binary = gpuprof__cupti_crc_binary(pc->cubinCrc);
    uint64_t all = 0, lat = 0;
    for (size_t k = 0; k < pc->stallReasonCount; k++) {
        uint32_t idx = pc->stallReason[k].pcSamplingStallReasonIndex;
        uint32_t m = idx < nmap ? map[idx] : GPUPROF_METRIC_PC_STALL_OTHER;
        uint64_t s = pc->stallReason[k].samples;
        if (m & GP_CU_LATENCY) {
            lat += s; /* a subset of its reason's samples */
            continue;
        }
        all += s;
        batch_add(&b, m, s);
    }
    batch_add(&b, GPUPROF_METRIC_PC_SAMPLES, all);
    batch_add(&b, GPUPROF_METRIC_PC_LATENCY, lat);
    batch_flush(&b);
}

size_t gpuprof__cupti_pcs_submit(const CUpti_PCSamplingData *d,
                                 const uint32_t *map, size_t nmap,
                                 uint64_t *unattributed)
{
    size_t done = 0;
    size_t n = d->pPcData ? d->totalNumPcs : 0;
    for (size_t i = 0; i < n; i++) {
        const CUpti_PCSamplingPCData *pc = &d->pPcData[i];
        uint64_t corr = launch_of(pc);
        if (!corr) {
            for (size_t k = 0; k < pc->stallReasonCount; k++)
                *unattributed += pc->stallReason[k].samples;
            continue;
        }
        submit_pc(pc, corr, map, nmap);
        done++;
    }
    return done;
}
