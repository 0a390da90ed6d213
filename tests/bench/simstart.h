/*
 * simstart.h - how bench_sim and bench_hook start measuring: the sim
 * backend delivering in batches of 4,096 (a CUPTI buffer holds thousands:
 * its thread wakes, and takes the queue's lock, rarely), into a fresh
 * directory under /tmp, tracing as asked (chosen at init: the traced
 * figures run in a second process).
 */
#ifndef GPUPROF_BENCH_SIMSTART_H
#define GPUPROF_BENCH_SIMSTART_H

#include <stdbool.h>
#include <stdlib.h>

#include "backends/sim/sim.h"
#include "gpuprof.h"

/* dir: a mkdtemp template, filled in. false: no directory or no init. */
static inline bool bench_sim_start(char *dir, bool traced)
{
    if (!mkdtemp(dir))
        return false;
    gp_sim_config sc = {4, 4096, 1, 1000, false, false};
    gpuprof__sim_register(&sc);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = dir;
    o.backends = "sim";
    o.signals = 0;
    o.trace = traced;
    return gpuprof_init(&o) == GPUPROF_OK;
}

#endif
