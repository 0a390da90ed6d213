/*
 * submit.h - an activity submitted with extra metric values and its GPU
 * binary in one call, for the built-in backends (lib/backends/kit: shared,
 * header-only, public headers and the C library only).
 */
#ifndef GPUPROF_BE_KIT_SUBMIT_H
#define GPUPROF_BE_KIT_SUBMIT_H

#include <stdint.h>

#include "gpuprof_backend.h"

/* An activity with `nx` extra values of metrics `xm` and a GPU binary (the
 * values beyond GPUPROF_EXTRA_MAX are left out). */
static inline gpuprof_status be_submit(const gpuprof_activity *a,
                                       uint32_t binary, unsigned nx,
                                       const uint32_t *xm, const uint64_t *xv)
{
    gpuprof_activity_extra x = GPUPROF_ACTIVITY_EXTRA_INIT;
    x.binary = binary;
    x.count = nx < GPUPROF_EXTRA_MAX ? nx : GPUPROF_EXTRA_MAX;
    for (unsigned i = 0; i < x.count; i++)
        x.metric[i] = xm[i], x.value[i] = xv[i];
    return gpuprof_be_activity_submit(a, &x);
}

#endif
