/*
 * cupti_pcs.c - PC sampling with CUPTI's PC sampling API (cupti_pcsampling.h,
 * CUDA 12/13), an option: GPUPROF_CUPTI_PC_SAMPLING=1 (or =N, a sampling
 * period of 2^N cycles, 5..31), GPUPROF_CUPTI_PC_SAMPLING_MODE=serialized
 * (the default: kernels run one at a time, each PC record names its
 * launch) or continuous (kernels run as they would; records are given to
 * their function's latest launch, cupti_pcs_submit.c).
 *
 * The call sequence, per CUDA context, before its first kernel (when it
 * is created, or at its first launch when it was created before us):
 * cuptiPCSamplingEnable; the stall reasons (count, then indices and names:
 * each name is mapped onto our metrics); one cuptiPCSamplingSetConfiguration-
 * Attribute with every attribute we rely on set explicitly -- all stall
 * reasons selected by their indices, the collection mode, start/stop
 * control off (sampling runs from configuration on; with it on, nothing
 * is sampled until cuptiPCSamplingStart), parsed output, the sampling
 * period, and the sampling data buffer.
 *
 * Two buffers per context. The one named in the configuration belongs to
 * CUPTI: it stages the records of each finished range (serialized: every
 * kernel) until cuptiPCSamplingGetData copies them out, and it receives the
 * last records at cuptiPCSamplingDisable. We never write it after
 * configuring it, and we read it once, after Disable. GetData fills our
 * second buffer, drained until CUPTI has nothing more. (The first version
 * passed the configured buffer to GetData too and cleared its counts
 * before each call: every range CUPTI staged there was thrown away, and
 * every collection came back empty.)
 *
 * Collection: serialized, after each launch returns (the kernel has run;
 * on the launching thread, which also began the operation); continuous,
 * after launches at most every GP_CU_PCS_EVERY_NS per context; both at
 * flush and when a context goes away.
 */
#include <cupti_pcsampling.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"

#define PCS_MAX_CTX 16
#define PCS_PCS 4096 /* PC records per buffer */

typedef struct pcs_buf {
    CUpti_PCSamplingData d;
    CUpti_PCSamplingPCData *pcs;
    CUpti_PCSamplingStallReason *stalls;
} pcs_buf;

typedef struct pcs_ctx {
    CUcontext ctx;
    bool failed;    /* could not start here: not tried again */
    size_t nreasons;
    uint32_t *idx;  /* the stall reason indices, selected in the config */
    uint32_t *map;  /* stall reason index -> metric (| latency) */
    size_t nmap;
    pcs_buf cfg;    /* CUPTI's: named in the configuration */
    pcs_buf get;    /* ours: GetData's */
    uint64_t last_ns;
} pcs_ctx;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pcs_ctx ctxs[PCS_MAX_CTX];
static unsigned nctx;
static _Atomic int mode; /* enum gp_pcs_mode */
static uint32_t period;  /* 2^period cycles; 0: CUPTI's default */
static gp_pcs_api api;
static const gp_pcs_api *test_api;
static struct {
    uint64_t samples, records, dropped, nonuser, unattributed, hwfull, errors;
} tot;

/* ---- settings ------------------------------------------------------------ */
void gpuprof__cupti_pcs_test_api(const gp_pcs_api *a)
{
    test_api = a;
}

enum gp_pcs_mode gpuprof__cupti_pcs_mode(void)
{
    return (enum gp_pcs_mode)gp_load_acquire(&mode);
}

static bool parse_period(const char *v, uint32_t *out)
{
    char *end;
    long p = strtol(v, &end, 10);
    if (*end || (p != 1 && (p < 5 || p > 31))) {
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "cupti: GPUPROF_CUPTI_PC_SAMPLING=%s: "
                       "want 0, 1 or a period exponent 5..31; PC sampling off",
                       v);
        return false;
    }
    *out = p == 1 ? 0 : (uint32_t)p;
    return true;
}

static enum gp_pcs_mode parse_mode(void)
{
    const char *v = getenv("GPUPROF_CUPTI_PC_SAMPLING_MODE");
    if (!v || !*v || !strcmp(v, "serialized"))
        return GP_PCS_SERIALIZED;
    if (!strcmp(v, "continuous"))
        return GP_PCS_CONTINUOUS;
    gpuprof_be_log(GPUPROF_LOG_WARN,
                   "cupti: GPUPROF_CUPTI_PC_SAMPLING_MODE=%s: want serialized "
                   "or continuous; PC sampling off",
                   v);
    return GP_PCS_OFF;
}

static bool resolve(void)
{
    if (test_api) {
        api = *test_api;
        return true;
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
    return api.Enable && api.Disable && api.GetNumStallReasons &&
           api.GetStallReasons && api.SetConfig && api.GetData;
}

bool gpuprof__cupti_pcs_wanted(void)
{
    const char *v = getenv("GPUPROF_CUPTI_PC_SAMPLING");
    if (!v || !*v || !strcmp(v, "0"))
        return false;
    uint32_t p;
    enum gp_pcs_mode m = parse_mode();
    if (!parse_period(v, &p) || m == GP_PCS_OFF)
        return false;
    if (!resolve()) {
        gpuprof_be_log(GPUPROF_LOG_WARN, "cupti: this libcupti has no PC "
                                         "sampling API; PC sampling off");
        return false;
    }
    period = p;
    memset(&tot, 0, sizeof(tot));
    gpuprof__cupti_pcs_hold_on(m == GP_PCS_CONTINUOUS);
    gp_store_release(&mode, (int)m);
    return true;
}

/* ---- one context ----------------------------------------------------------
 */
static bool buf_alloc(pcs_buf *b, size_t nreasons)
{
    b->pcs = calloc(PCS_PCS, sizeof(*b->pcs));
    b->stalls = calloc((size_t)PCS_PCS * (nreasons ? nreasons : 1),
                       sizeof(*b->stalls));
    if (!b->pcs || !b->stalls)
        return false;
    for (size_t i = 0; i < PCS_PCS; i++) {
        b->pcs[i].size = sizeof(CUpti_PCSamplingPCData);
        b->pcs[i].stallReason = b->stalls + i * nreasons;
    }
    b->d.size = sizeof(CUpti_PCSamplingData);
    b->d.collectNumPcs = PCS_PCS;
    b->d.pPcData = b->pcs;
    return true;
}

static void ctx_free(pcs_ctx *c)
{
    free(c->idx);
    free(c->map);
    free(c->cfg.pcs);
    free(c->cfg.stalls);
    free(c->get.pcs);
    free(c->get.stalls);
    memset(c, 0, sizeof(*c));
}

/* The stall reasons: indices (kept: the configuration selects them) and
 * index -> metric (indices need not be dense). */
static CUptiResult reasons_load(pcs_ctx *c)
{
    CUpti_PCSamplingGetNumStallReasonsParams np = {
        CUpti_PCSamplingGetNumStallReasonsParamsSize, NULL, c->ctx,
        &c->nreasons};
    CUptiResult r = api.GetNumStallReasons(&np);
    if (r != CUPTI_SUCCESS)
        return r;
    if (!c->nreasons)
        return CUPTI_ERROR_NOT_SUPPORTED;
    c->idx = calloc(c->nreasons, sizeof(uint32_t));
    char **names = calloc(c->nreasons, sizeof(char *));
    bool ok = c->idx && names;
    for (size_t i = 0; ok && i < c->nreasons; i++)
        ok = (names[i] = calloc(1, CUPTI_STALL_REASON_STRING_SIZE)) != NULL;
    CUpti_PCSamplingGetStallReasonsParams sp = {
        CUpti_PCSamplingGetStallReasonsParamsSize,
        NULL,
        c->ctx,
        c->nreasons,
        c->idx,
        names};
    r = ok ? api.GetStallReasons(&sp) : CUPTI_ERROR_OUT_OF_MEMORY;
    uint32_t maxidx = 0;
    for (size_t i = 0; r == CUPTI_SUCCESS && i < c->nreasons; i++)
        maxidx = c->idx[i] > maxidx ? c->idx[i] : maxidx;
    if (r == CUPTI_SUCCESS) {
        c->nmap = (size_t)maxidx + 1;
        c->map = calloc(c->nmap, sizeof(uint32_t));
        if (!c->map)
            r = CUPTI_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; r == CUPTI_SUCCESS && i < c->nreasons; i++) {
        names[i][CUPTI_STALL_REASON_STRING_SIZE - 1] = 0;
        c->map[c->idx[i]] = gpuprof__cupti_stall_metric(names[i]);
    }
    for (size_t i = 0; names && i < c->nreasons; i++)
        free(names[i]);
    free(names);
    return r;
}

static const char *attr_name(CUpti_PCSamplingConfigurationAttributeType t)
{
    switch (t) {
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
        return "stall reasons";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
        return "collection mode";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
        return "start/stop control";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT:
        return "output data format";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
        return "sampling period";
    case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
        return "sampling data buffer";
    default:
        return "an attribute";
    }
}

/* One call with every attribute; on failure *what names the first one
 * CUPTI refused. */
static CUptiResult configure(pcs_ctx *c, const char **what)
{
    CUpti_PCSamplingConfigurationInfo cfg[6];
    memset(cfg, 0, sizeof(cfg));
    unsigned n = 0;
    cfg[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    cfg[n].attributeData.stallReasonData.stallReasonCount = c->nreasons;
    cfg[n++].attributeData.stallReasonData.pStallReasonIndex = c->idx;
    cfg[n].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    cfg[n++].attributeData.collectionModeData.collectionMode =
        gpuprof__cupti_pcs_mode() == GP_PCS_CONTINUOUS
            ? CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS
            : CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    cfg[n].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
    cfg[n++].attributeData.enableStartStopControlData.enableStartStopControl =
        0;
    cfg[n].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    cfg[n++].attributeData.outputDataFormatData.outputDataFormat =
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    if (period) {
        cfg[n].attributeType =
            CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
        cfg[n++].attributeData.samplingPeriodData.samplingPeriod = period;
    }
    cfg[n].attributeType =
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    cfg[n++].attributeData.samplingDataBufferData.samplingDataBuffer =
        &c->cfg.d;
    CUpti_PCSamplingConfigurationInfoParams cp = {
        CUpti_PCSamplingConfigurationInfoParamsSize, NULL, c->ctx, n, cfg};
    CUptiResult r = api.SetConfig(&cp);
    *what = "the configuration";
    for (unsigned i = 0; r != CUPTI_SUCCESS && i < n; i++)
        if (cfg[i].attributeStatus != CUPTI_SUCCESS) {
            *what = attr_name(cfg[i].attributeType);
            break;
        }
    return r;
}

static void disable(CUcontext ctx)
{
    CUpti_PCSamplingDisableParams dp = {CUpti_PCSamplingDisableParamsSize,
                                        NULL, ctx};
    api.Disable(&dp);
}

/* Enables and configures PC sampling in ctx; under mu. */
static void start_locked(CUcontext ctx)
{
    for (unsigned i = 0; i < nctx; i++)
        if (ctxs[i].ctx == ctx)
            return; /* on already, or refused */
    if (nctx == PCS_MAX_CTX) {
        gpuprof_be_log(GPUPROF_LOG_WARN,
                       "cupti: PC sampling in %d contexts at "
                       "most",
                       PCS_MAX_CTX);
        return;
    }
    pcs_ctx *c = &ctxs[nctx++];
    c->ctx = ctx;
    const char *step = "cuptiPCSamplingEnable";
    CUpti_PCSamplingEnableParams en = {CUpti_PCSamplingEnableParamsSize, NULL,
                                       ctx};
    CUptiResult r = api.Enable(&en);
    bool enabled = r == CUPTI_SUCCESS;
    if (enabled) {
        step = "the stall reasons";
        r = reasons_load(c);
    }
    if (r == CUPTI_SUCCESS && (!buf_alloc(&c->cfg, c->nreasons) ||
                               !buf_alloc(&c->get, c->nreasons)))
        r = CUPTI_ERROR_OUT_OF_MEMORY;
    if (r == CUPTI_SUCCESS)
        r = configure(c, &step);
    if (r == CUPTI_SUCCESS) {
        c->last_ns = gpuprof_be_now_ns();
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "cupti: PC sampling on in a context (%s, period %s%u), "
                       "%zu stall reasons",
                       gpuprof__cupti_pcs_mode() == GP_PCS_CONTINUOUS
                           ? "continuous"
                           : "kernel-serialized",
                       period ? "2^" : "CUPTI's default ", period ? period : 0,
                       c->nreasons);
        return;
    }
    char e[96];
    gpuprof_be_log(GPUPROF_LOG_WARN,
                   "cupti: PC sampling could not start in a context (%s): %s",
                   step, gpuprof__cupti_err(r, e, sizeof(e)));
    if (enabled)
        disable(ctx);
    ctx_free(c);
    c->ctx = ctx;
    c->failed = true;
}

void gpuprof__cupti_pcs_context(CUcontext ctx)
{
    if (!gpuprof__cupti_pcs_mode())
        return;
    pthread_mutex_lock(&mu);
    start_locked(ctx);
    pthread_mutex_unlock(&mu);
}

/* ---- collection ---------------------------------------------------------- */
static void take(pcs_ctx *c, const CUpti_PCSamplingData *d)
{
    tot.samples += d->totalSamples;
    tot.dropped += d->droppedSamples;
    tot.nonuser += d->nonUsrKernelsTotalSamples;
    tot.records += d->totalNumPcs;
    gpuprof__cupti_pcs_submit(d, c->map, c->nmap, &tot.unattributed);
}

/* Copies out what CUPTI has for one context until it has no more (none
 * remaining, nothing staged in the configured buffer, or the staged count
 * no longer falls); under mu. */
static void drain_locked(pcs_ctx *c)
{
    for (int round = 0; round < 256; round++) {
        CUpti_PCSamplingData *g = &c->get.d;
        size_t staged = c->cfg.d.totalNumPcs;
        g->totalNumPcs = g->remainingNumPcs = 0;
        g->totalSamples = g->droppedSamples = g->nonUsrKernelsTotalSamples = 0;
        g->hardwareBufferFull = 0;
        CUpti_PCSamplingGetDataParams gp = {CUpti_PCSamplingGetDataParamsSize,
                                            NULL, c->ctx, g};
        CUptiResult r = api.GetData(&gp);
        if ((r == CUPTI_ERROR_OUT_OF_MEMORY || g->hardwareBufferFull) &&
            !tot.hwfull++)
            gpuprof_be_log(GPUPROF_LOG_WARN,
                           "cupti: PC sampling's hardware buffer was full: "
                           "samples were lost (a longer period, "
                           "GPUPROF_CUPTI_PC_SAMPLING=N, samples less)");
        if (r != CUPTI_SUCCESS) {
            tot.errors += r != CUPTI_ERROR_OUT_OF_MEMORY;
            return;
        }
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "cupti: PC GetData: range %llu, %llu samples, %zu PCs, "
                       "%zu remaining, %zu staged",
                       (unsigned long long)g->rangeId,
                       (unsigned long long)g->totalSamples, g->totalNumPcs,
                       g->remainingNumPcs, c->cfg.d.totalNumPcs);
        take(c, g);
        if (g->remainingNumPcs)
            continue;
        if (!c->cfg.d.totalNumPcs || c->cfg.d.totalNumPcs >= staged)
            return;
    }
}

void gpuprof__cupti_pcs_collect(CUcontext ctx, bool force)
{
    enum gp_pcs_mode m = gpuprof__cupti_pcs_mode();
    if (!m)
        return;
    uint64_t now = gpuprof_be_now_ns();
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++) {
        pcs_ctx *c = &ctxs[i];
        if (c->failed || (ctx && c->ctx != ctx))
            continue;
        if (!force && m == GP_PCS_CONTINUOUS &&
            now - c->last_ns < GP_CU_PCS_EVERY_NS)
            continue;
        c->last_ns = now;
        drain_locked(c);
    }
    pthread_mutex_unlock(&mu);
    if (m == GP_PCS_CONTINUOUS)
        gpuprof__cupti_pcs_release(false);
}

void gpuprof__cupti_pcs_launch(CUcontext ctx, const char *name, uint64_t corr)
{
    enum gp_pcs_mode m = gpuprof__cupti_pcs_mode();
    if (!m)
        return;
    static __thread CUcontext seen; /* this thread's last context */
    if (ctx && ctx != seen) {
        pthread_mutex_lock(&mu);
        start_locked(ctx);
        pthread_mutex_unlock(&mu);
        seen = ctx;
    }
    if (m == GP_PCS_CONTINUOUS)
        gpuprof__cupti_pcs_note_launch(name, corr);
}

/* Drains, disables, and takes what Disable left in the configured buffer
 * (records of a range it ended; not what the drain saw staged already);
 * under mu. */
static void stop_locked(pcs_ctx *c)
{
    if (c->failed)
        return;
    drain_locked(c);
    size_t staged = c->cfg.d.totalNumPcs;
    uint64_t range = c->cfg.d.rangeId;
    disable(c->ctx);
    const CUpti_PCSamplingData *d = &c->cfg.d;
    if (d->totalNumPcs && d->totalNumPcs <= PCS_PCS &&
        (!staged || d->rangeId != range))
        take(c, d);
}

void gpuprof__cupti_pcs_context_gone(CUcontext ctx)
{
    if (!gpuprof__cupti_pcs_mode())
        return;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++) {
        if (ctxs[i].ctx != ctx)
            continue;
        stop_locked(&ctxs[i]);
        ctx_free(&ctxs[i]);
        ctxs[i] = ctxs[--nctx];
        memset(&ctxs[nctx], 0, sizeof(ctxs[nctx]));
        break;
    }
    pthread_mutex_unlock(&mu);
}

static enum gp_pcs_mode ran; /* the mode fini ended, for done */

void gpuprof__cupti_pcs_fini(void)
{
    enum gp_pcs_mode m = gpuprof__cupti_pcs_mode();
    if (!m)
        return;
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < nctx; i++) {
        stop_locked(&ctxs[i]);
        ctx_free(&ctxs[i]);
    }
    nctx = 0;
    ran = m;
    gp_store_release(&mode, GP_PCS_OFF);
    pthread_mutex_unlock(&mu);
}

void gpuprof__cupti_pcs_done(void)
{
    if (!ran)
        return;
    gpuprof__cupti_pcs_hold_on(false);
    uint64_t held, unheld;
    gpuprof__cupti_pcs_forget(true, &held, &unheld);
    gp_cupti_counts k;
    gpuprof__cupti_counts(&k);
    int lvl = !tot.samples && k.kernels ? GPUPROF_LOG_WARN : GPUPROF_LOG_INFO;
    gpuprof_be_log(
        lvl,
        "cupti: PC sampling (%s): %llu samples in %llu PC records "
        "over %llu kernels; %llu dropped by the hardware, %llu in "
        "NVIDIA's kernels, %llu of launches not known; %llu "
        "launches held, %llu not; %llu GetData errors",
        ran == GP_PCS_CONTINUOUS ? "continuous" : "kernel-serialized",
        (unsigned long long)tot.samples, (unsigned long long)tot.records,
        (unsigned long long)k.kernels, (unsigned long long)tot.dropped,
        (unsigned long long)tot.nonuser, (unsigned long long)tot.unattributed,
        (unsigned long long)held, (unsigned long long)unheld,
        (unsigned long long)tot.errors);
    ran = GP_PCS_OFF;
}
