/*
 * cupti_pcs.c - PC sampling with CUPTI's PC sampling API (cupti_pcsampling.h,
 * CUDA 12/13), an option: GPUPROF_CUPTI_PC_SAMPLING=1 (or =N, a sampling
 * period of 2^N cycles, 5..31). It serializes kernels, so it is off by
 * default.
 *
 * Per CUDA context (when it is created): enable, learn the stall reasons
 * (index -> name; names differ by architecture, so each is mapped by name
 * onto our fixed metrics), configure kernel-serialized collection into a
 * buffer of ours. Samples are collected after each launch returns (on the
 * launching thread, which also began the operation: its records reach the
 * monitor in order), at flush and when a context goes away. Each sampled
 * instruction becomes activities of the launch's correlation with
 * GP_ACT_INSTR: a GPU_INSTR node (cubin, offset) beneath the kernel with
 * its samples per stall reason, all samples and latency samples (seed 001:
 * issue rate = (samples - latency) / samples).
 */
#include <cupti_pcsampling.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"
#include "core/gpu.h"
#include "core/internal.h"

/* ---- stall reason names ------------------------------------------------- */
static const struct {
    const char *name;
    uint8_t metric;
} reasons[] = {
    {"selected", GP_M_PC_STALL_SELECTED},
    {"not_selected", GP_M_PC_STALL_NOT_SELECTED},
    {"barrier", GP_M_PC_STALL_BARRIER},
    {"branch_resolving", GP_M_PC_STALL_BRANCH_RESOLVING},
    {"dispatch_stall", GP_M_PC_STALL_DISPATCH_STALL},
    {"drain", GP_M_PC_STALL_DRAIN},
    {"imc_miss", GP_M_PC_STALL_IMC_MISS},
    {"lg_throttle", GP_M_PC_STALL_LG_THROTTLE},
    {"long_scoreboard", GP_M_PC_STALL_LONG_SCOREBOARD},
    {"math_pipe_throttle", GP_M_PC_STALL_MATH_PIPE_THROTTLE},
    {"membar", GP_M_PC_STALL_MEMBAR},
    {"mio_throttle", GP_M_PC_STALL_MIO_THROTTLE},
    {"misc", GP_M_PC_STALL_MISC},
    {"no_instructions", GP_M_PC_STALL_NO_INSTRUCTIONS},
    {"short_scoreboard", GP_M_PC_STALL_SHORT_SCOREBOARD},
    {"sleeping", GP_M_PC_STALL_SLEEPING},
    {"tex_throttle", GP_M_PC_STALL_TEX_THROTTLE},
    {"wait", GP_M_PC_STALL_WAIT},
};

uint32_t gpuprof__cupti_stall_metric(const char *name)
{
    if (!name)
        return GP_M_PC_STALL_OTHER;
    const char *b = strstr(name, "issue_stalled_");
    b = b ? b + strlen("issue_stalled_") : name;
    /* "<reason>_not_issued": the same reason, and a latency sample. */
    size_t n = strlen(b);
    const char *ni = "_not_issued";
    bool latency = n > strlen(ni) && !strcmp(b + n - strlen(ni), ni);
    if (latency)
        n -= strlen(ni);
    uint32_t m = GP_M_PC_STALL_OTHER;
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (strlen(reasons[i].name) == n && !strncmp(b, reasons[i].name, n))
            m = reasons[i].metric;
    return m | (latency ? GP_CU_LATENCY : 0);
}

/* ---- submission ------------------------------------------------------------
 */
/* Values of one instruction, GP_XN at a time. */
typedef struct pc_batch {
    gpuprof_activity a;
    uint32_t binary;
    unsigned n;
    uint8_t xm[GP_XN];
    uint64_t xv[GP_XN];
} pc_batch;

static void batch_flush(pc_batch *b)
{
    if (!b->n)
        return;
    gpuprof__activity_submit_x(&b->a, b->binary, b->n, b->xm, b->xv);
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
    if (b->n == GP_XN)
        batch_flush(b);
    b->xm[b->n] = (uint8_t)metric;
    b->xv[b->n++] = v;
}

size_t gpuprof__cupti_pcs_submit(const CUpti_PCSamplingData *d,
                                 const uint32_t *map, size_t nmap,
                                 uint64_t *unattributed)
{
    size_t done = 0;
    for (size_t i = 0; i < d->totalNumPcs; i++) {
        const CUpti_PCSamplingPCData *pc = &d->pPcData[i];
        uint64_t corr;
        bool graph;
        if (!gpuprof__cupti_ring_find(pc->correlationId, &corr, &graph)) {
            uint64_t s = 0;
            for (size_t k = 0; k < pc->stallReasonCount; k++)
                s += pc->stallReason[k].samples;
            *unattributed += s;
            continue;
        }
        pc_batch b;
        memset(&b, 0, sizeof(b));
        b.a = (gpuprof_activity)GPUPROF_ACTIVITY_INIT;
        b.a.correlation = corr;
        b.a.kind = GPUPROF_OP_KERNEL;
        /* Values only: the kernel's own record counts it and closes it. */
        b.a.flags = GP_ACT_NOTE | GP_ACT_INSTR | GPUPROF_ACTIVITY_MORE;
        b.a.name = pc->functionName;
        b.a.bytes = pc->pcOffset;
        b.binary = gpuprof__cupti_crc_binary(pc->cubinCrc);
        uint64_t all = 0, lat = 0;
        for (size_t k = 0; k < pc->stallReasonCount; k++) {
            uint32_t idx = pc->stallReason[k].pcSamplingStallReasonIndex;
            uint32_t m = idx < nmap ? map[idx] : GP_M_PC_STALL_OTHER;
            uint64_t s = pc->stallReason[k].samples;
            if (m & GP_CU_LATENCY) {
                lat += s; /* a subset of its reason's samples */
                continue;
            }
            all += s;
            batch_add(&b, m, s);
        }
        batch_add(&b, GP_M_PC_SAMPLES, all);
        batch_add(&b, GP_M_PC_LATENCY, lat);
        batch_flush(&b);
        done++;
    }
    return done;
}

/* ---- per-context collection ---------------------------------------------- */
#define PCS_MAX_CTX 16
#define PCS_PCS 4096 /* PC records per collection buffer */

typedef struct pcs_ctx {
    CUcontext ctx;
    size_t nreasons;
    uint32_t *map;             /* stall reason index -> metric (| latency) */
    CUpti_PCSamplingData data; /* our collection buffer */
    CUpti_PCSamplingPCData *pcs;
    CUpti_PCSamplingStallReason *stalls;
} pcs_ctx;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pcs_ctx ctxs[PCS_MAX_CTX];
static unsigned nctx;
static bool on;
static uint32_t period; /* 2^period cycles; 0: CUPTI's default */
static uint64_t dropped_samples, unattributed_samples;

typedef struct pcs_api {
    __typeof__(cuptiPCSamplingEnable) *Enable;
    __typeof__(cuptiPCSamplingDisable) *Disable;
    __typeof__(cuptiPCSamplingGetNumStallReasons) *GetNumStallReasons;
    __typeof__(cuptiPCSamplingGetStallReasons) *GetStallReasons;
    __typeof__(cuptiPCSamplingSetConfigurationAttribute) *SetConfig;
    __typeof__(cuptiPCSamplingGetData) *GetData;
} pcs_api;
static pcs_api api;

bool gpuprof__cupti_pcs_wanted(void)
{
    const char *v = getenv("GPUPROF_CUPTI_PC_SAMPLING");
    if (!v || !*v || !strcmp(v, "0"))
        return false;
    char *end;
    long p = strtol(v, &end, 10);
    if (*end || (p != 1 && (p < 5 || p > 31))) {
        gpuprof__log(GPUPROF_LOG_WARN,
                     "cupti: GPUPROF_CUPTI_PC_SAMPLING=%s: "
                     "want 0, 1 or a period exponent 5..31; PC sampling off",
                     v);
        return false;
    }
    void *h = gpuprof__cu.lib;
    *(void **)&api.Enable = dlsym(h, "cuptiPCSamplingEnable");
    *(void **)&api.Disable = dlsym(h, "cuptiPCSamplingDisable");
    *(void **)&api.GetNumStallReasons =
        dlsym(h, "cuptiPCSamplingGetNumStallReasons");
    *(void **)&api.GetStallReasons = dlsym(h, "cuptiPCSamplingGetStallReasons");
    *(void **)&api.SetConfig =
        dlsym(h, "cuptiPCSamplingSetConfigurationAttribute");
    *(void **)&api.GetData = dlsym(h, "cuptiPCSamplingGetData");
    if (!api.Enable || !api.Disable || !api.GetNumStallReasons ||
        !api.GetStallReasons || !api.SetConfig || !api.GetData) {
        gpuprof__log(GPUPROF_LOG_WARN, "cupti: this libcupti has no PC "
                                       "sampling API; PC sampling off");
        return false;
    }
    period = p == 1 ? 0 : (uint32_t)p;
    on = true;
    return true;
}

static void ctx_free(pcs_ctx *c)
{
    free(c->map);
    free(c->pcs);
    free(c->stalls);
    memset(c, 0, sizeof(*c));
}

void gpuprof__cupti_pcs_context(CUcontext ctx)
{
    if (!on)
        return;
    pthread_mutex_lock(&mu);
    if (nctx == PCS_MAX_CTX) {
        pthread_mutex_unlock(&mu);
        gpuprof__log(GPUPROF_LOG_WARN,
                     "cupti: PC sampling in %d contexts at "
                     "most",
                     PCS_MAX_CTX);
        return;
    }
    pcs_ctx *c = &ctxs[nctx];
    char e[96];
    CUptiResult r;
    CUpti_PCSamplingEnableParams en = {CUpti_PCSamplingEnableParamsSize, NULL,
                                       ctx};
    if ((r = api.Enable(&en)) != CUPTI_SUCCESS)
        goto fail;
    CUpti_PCSamplingGetNumStallReasonsParams np = {
        CUpti_PCSamplingGetNumStallReasonsParamsSize, NULL, ctx, &c->nreasons};
    if ((r = api.GetNumStallReasons(&np)) != CUPTI_SUCCESS)
        goto fail;
    uint32_t *idx = calloc(c->nreasons, sizeof(uint32_t));
    char **names = calloc(c->nreasons, sizeof(char *));
    c->map = calloc(c->nreasons, sizeof(uint32_t));
    for (size_t i = 0; names && i < c->nreasons; i++)
        if (!(names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)))
            break;
    CUpti_PCSamplingGetStallReasonsParams sp = {
        CUpti_PCSamplingGetStallReasonsParamsSize,
        NULL,
        ctx,
        c->nreasons,
        idx,
        names};
    bool ok = idx && names && c->map &&
              (r = api.GetStallReasons(&sp)) == CUPTI_SUCCESS;
    size_t maxidx = 0;
    for (size_t i = 0; ok && i < c->nreasons; i++)
        if (idx[i] > maxidx)
            maxidx = idx[i];
    if (ok && maxidx >= c->nreasons) { /* indices are not dense: remap */
        uint32_t *m = calloc(maxidx + 1, sizeof(uint32_t));
        ok = m != NULL;
        if (ok) {
            free(c->map);
            c->map = m;
        }
    }
    for (size_t i = 0; ok && i < c->nreasons; i++)
        c->map[idx[i]] = gpuprof__cupti_stall_metric(names[i]);
    size_t nmap = ok ? (maxidx >= c->nreasons ? maxidx + 1 : c->nreasons) : 0;
    for (size_t i = 0; names && i < c->nreasons; i++)
        free(names[i]);
    free(names);
    free(idx);
    if (!ok)
        goto fail;
    c->pcs = calloc(PCS_PCS, sizeof(CUpti_PCSamplingPCData));
    c->stalls = calloc((size_t)PCS_PCS * c->nreasons,
                       sizeof(CUpti_PCSamplingStallReason));
    if (!c->pcs || !c->stalls) {
        r = CUPTI_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < PCS_PCS; i++) {
        c->pcs[i].size = sizeof(CUpti_PCSamplingPCData);
        c->pcs[i].stallReason = c->stalls + i * c->nreasons;
    }
    c->data.size = sizeof(CUpti_PCSamplingData);
    c->data.collectNumPcs = PCS_PCS;
    c->data.pPcData = c->pcs;
    CUpti_PCSamplingConfigurationInfo cfg[3];
    memset(cfg, 0, sizeof(cfg));
    unsigned ncfg = 0;
    cfg[ncfg].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    cfg[ncfg++].attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    cfg[ncfg].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    cfg[ncfg++].attributeData.samplingDataBufferData.samplingDataBuffer =
        &c->data;
    if (period) {
        cfg[ncfg].attributeType =
            CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
        cfg[ncfg++].attributeData.samplingPeriodData.samplingPeriod =
            period;
    }
    CUpti_PCSamplingConfigurationInfoParams cp = {
        CUpti_PCSamplingConfigurationInfoParamsSize, NULL, ctx, ncfg, cfg};
    if ((r = api.SetConfig(&cp)) != CUPTI_SUCCESS)
        goto fail;
    c->ctx = ctx;
    c->nreasons = nmap; /* now: entries of map */
    nctx++;
    pthread_mutex_unlock(&mu);
    gpuprof__log(GPUPROF_LOG_DEBUG,
                 "cupti: PC sampling on in a context, %zu "
                 "stall reasons",
                 nmap);
    return;
fail:
    ctx_free(c);
    pthread_mutex_unlock(&mu);
    gpuprof__log(GPUPROF_LOG_WARN,
                 "cupti: PC sampling could not start in a "
                 "context: %s",
                 gpuprof__cupti_err(r, e, sizeof(e)));
}

/* Drains what CUPTI collected for one context; under mu. */
static void collect_locked(pcs_ctx *c)
{
    for (int round = 0; round < 64; round++) {
        c->data.totalNumPcs = 0;
        c->data.remainingNumPcs = 0;
        CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize,
                                            NULL, c->ctx, &c->data};
        if (api.GetData(&gp) != CUPTI_SUCCESS)
            return;
        dropped_samples += c->data.droppedSamples;
        gpuprof__cupti_pcs_submit(&c->data, c->map, c->nreasons,
                                  &unattributed_samples);
        if (!c->data.remainingNumPcs)
            return;
    }
}

void gpuprof__cupti_pcs_collect(CUcontext ctx)
{
    if (!on)
        return;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++)
        if (!ctx || ctxs[i].ctx == ctx)
            collect_locked(&ctxs[i]);
    pthread_mutex_unlock(&mu);
}

void gpuprof__cupti_pcs_context_gone(CUcontext ctx)
{
    if (!on)
        return;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++) {
        if (ctxs[i].ctx != ctx)
            continue;
        collect_locked(&ctxs[i]);
        CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize,
                                            NULL, ctx};
        api.Disable(&dp);
        ctx_free(&ctxs[i]);
        ctxs[i] = ctxs[--nctx];
        memset(&ctxs[nctx], 0, sizeof(ctxs[nctx]));
        break;
    }
    pthread_mutex_unlock(&mu);
}

void gpuprof__cupti_pcs_fini(void)
{
    if (!on)
        return;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++) {
        collect_locked(&ctxs[i]);
        CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize,
                                            NULL, ctxs[i].ctx};
        api.Disable(&dp);
    }
    if (dropped_samples || unattributed_samples)
        gpuprof__log(GPUPROF_LOG_WARN,
                     "cupti: PC samples: %llu dropped by "
                     "the hardware buffer, %llu of launches not measured",
                     (unsigned long long)dropped_samples,
                     (unsigned long long)unattributed_samples);
    pthread_mutex_unlock(&mu);
}
