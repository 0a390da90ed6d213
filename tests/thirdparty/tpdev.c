/*
 * tpdev.c - a third-party backend, written as someone outside the project
 * would: only <gpuprof.h> and <gpuprof_backend.h> (compiled against
 * include/ alone, C99 -Wpedantic), linked with the shared library
 * (tests/scripts/thirdparty-backend.sh builds and checks it).
 *
 * The "device" runs kernels synchronously: each launch is an operation
 * (gpuprof_be_op_begin/_end) whose activity carries the values of two
 * metrics the backend registers, of different combinations: tpdev.occupancy
 * (an odd sum: its mean over gpu.count means something) and
 * tpdev.peak_bytes (a maximum, without inclusive values). A third,
 * tpdev.host_events, counts on CPU call paths (gpuprof_be_sample_add).
 * The program launches three kernels named "step" from one call site
 * (occupancy 10, 20, 30; peak 100, 300, 200; 1000 ns each) and one named
 * "other" from another (5; 250) inside region "solve", adds host events 5
 * and 7 to the region, and prints what it registered.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpuprof.h>
#include <gpuprof_backend.h>

static uint32_t m_occ, m_peak, m_host;
static int inits;

static gpuprof_status tp_probe(void *user, char *reason, size_t size)
{
    (void)user;
    (void)reason;
    (void)size;
    return GPUPROF_OK;
}

static gpuprof_status tp_init(void *user)
{
    (void)user;
    gpuprof_metric_desc d = GPUPROF_METRIC_DESC_INIT;
    d.name = "tpdev.occupancy";
    d.description = "tpdev: resident warps per launch, summed over launches";
    d.combine = GPUPROF_METRIC_ODD_SUM;
    d.count_metric = "gpu.count";
    gpuprof_status st = gpuprof_be_metric_register(&d, &m_occ);
    gpuprof_metric_desc e = GPUPROF_METRIC_DESC_INIT;
    e.name = "tpdev.peak_bytes";
    e.description = "tpdev: peak device memory of a launch";
    e.unit = GPUPROF_METRIC_UNIT_BYTES;
    e.combine = GPUPROF_METRIC_MAX;
    e.flags = GPUPROF_METRIC_NO_INCLUSIVE;
    if (st == GPUPROF_OK)
        st = gpuprof_be_metric_register(&e, &m_peak);
    gpuprof_metric_desc h = GPUPROF_METRIC_DESC_INIT;
    h.name = "tpdev.host_events";
    h.attach = GPUPROF_METRIC_ON_CPU_PATHS;
    if (st == GPUPROF_OK)
        st = gpuprof_be_metric_register(&h, &m_host);
    inits++;
    gpuprof_be_log(GPUPROF_LOG_INFO, "tpdev: metrics %u %u %u", m_occ, m_peak,
                   m_host);
    return st;
}

static void launch(const char *name, uint64_t occ, uint64_t peak)
{
    uint64_t corr = gpuprof_be_op_begin(GPUPROF_OP_KERNEL, 0);
    uint64_t t0 = gpuprof_be_now_ns();
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_KERNEL;
    a.start_ns = t0;
    a.end_ns = t0 + 1000;
    a.name = name;
    gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
    x.count = 2;
    x.metric[0] = m_occ, x.value[0] = occ;
    x.metric[1] = m_peak, x.value[1] = peak;
    if (corr && gpuprof_be_activity_submit(&a, &x) != GPUPROF_OK)
        fprintf(stderr, "submit: %s\n", gpuprof_last_error());
    gpuprof_be_op_end(corr);
}

int main(void)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "tpdev";
    b.probe = tp_probe;
    b.init = tp_init;
    if (gpuprof_backend_register(&b, 0) != GPUPROF_OK)
        return 1;
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.backends = "tpdev";
    if (gpuprof_init(&o) != GPUPROF_OK ||
        gpuprof_backend_status("tpdev", NULL, 0) != GPUPROF_OK || inits != 1)
        return 2;
    /* A clash and a bad descriptor are refused; the same again is fine. */
    gpuprof_metric_desc d = GPUPROF_METRIC_DESC_INIT;
    uint32_t id = 0;
    d.name = "gpu.time";
    if (gpuprof_be_metric_register(&d, &id) != GPUPROF_E_EXISTS)
        return 3;
    d.name = "tpdev.odd";
    d.combine = GPUPROF_METRIC_ODD_SUM; /* without its count metric */
    if (gpuprof_be_metric_register(&d, &id) != GPUPROF_E_INVALID)
        return 4;
    d.name = "tpdev.host_events";
    d.combine = GPUPROF_METRIC_SUM;
    d.attach = GPUPROF_METRIC_ON_CPU_PATHS;
    if (gpuprof_be_metric_register(&d, &id) != GPUPROF_OK || id != m_host)
        return 5;
    static const uint64_t occ[3] = {10, 20, 30}, peak[3] = {100, 300, 200};
    gpuprof_region_begin("solve");
    for (int i = 0; i < 3; i++) /* one call site: one kernel node */
        launch("step", occ[i], peak[i]);
    launch("other", 5, 250); /* another call site: another kernel node */
    uint32_t here = gpuprof_be_sample_region();
    if (gpuprof_be_sample_add(here, NULL, 0, 0, m_host, 5) != GPUPROF_OK ||
        gpuprof_be_sample_add(here, NULL, 0, 0, m_host, 7) != GPUPROF_OK ||
        gpuprof_be_sample_add(here, NULL, 0, 0, m_occ, 1) != GPUPROF_E_INVALID)
        return 6;
    gpuprof_region_end("solve");
    printf("metrics %u %u %u\n", m_occ, m_peak, m_host);
    return gpuprof_finalize() == GPUPROF_OK ? 0 : 7;
}
