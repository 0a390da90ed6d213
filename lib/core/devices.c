/*
 * devices.c - what the process's devices can hold (gpuprof_be_device_describe
 * in include/gpuprof_backend.h): backends describe each device they see,
 * the core keeps the last description per (api, device) and every flush
 * writes them as the profile's DEVICES section (lib/io, doc/FORMATS.md),
 * one attribute per record, zero fields left out. The GPU advice computes
 * occupancy from them (analysis/gpu).
 *
 * Rare calls (one per device, at context creation or flush): one mutex,
 * held across the fork so that the child never inherits it locked.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "gpuprof_backend.h"
#include "io/io.h"

#define MAX_DEVICES 64

typedef struct dev {
    char api[32], name[256];
    gpuprof_device_info info; /* api and name point at the copies above */
} dev;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static dev devs[MAX_DEVICES];
static uint32_t ndevs;

GPUPROF_API gpuprof_status
gpuprof_be_device_describe(const gpuprof_device_info *d)
{
    if (!d || d->size < offsetof(gpuprof_device_info, name) + sizeof(char *) ||
        !d->api || !d->api[0])
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_be_device_describe: invalid arguments");
    gpuprof_device_info in = GPUPROF_DEVICE_INFO_INIT;
    size_t n = d->size < sizeof(in) ? d->size : sizeof(in);
    memcpy(&in, d, n);
    in.size = sizeof(in);
    pthread_mutex_lock(&mu);
    uint32_t i = 0;
    while (i < ndevs && (devs[i].info.device != in.device ||
                         strncmp(devs[i].api, in.api, sizeof(devs[i].api) - 1)))
        i++;
    gpuprof_status st = GPUPROF_OK;
    if (i == MAX_DEVICES) {
        st = GPUPROF_E_LIMIT;
    } else {
        dev *v = &devs[i];
        snprintf(v->api, sizeof(v->api), "%s", in.api);
        snprintf(v->name, sizeof(v->name), "%s", in.name ? in.name : "");
        v->info = in;
        v->info.api = v->api;
        v->info.name = v->name;
        if (i == ndevs)
            ndevs++;
    }
    pthread_mutex_unlock(&mu);
    if (st != GPUPROF_OK)
        return gpuprof__fail(st, GPUPROF_LOG_WARN,
                             "gpuprof_be_device_describe: more than %d "
                             "devices; %s device %u not recorded",
                             MAX_DEVICES, in.api, in.device);
    return GPUPROF_OK;
}

/* The numeric fields, by the names the profile gives them. */
typedef struct field {
    const char *key;
    size_t at;
    bool wide; /* uint64_t, else uint32_t */
} field;

#define U32(k) {#k, offsetof(gpuprof_device_info, k), false}
#define U64(k) {#k, offsetof(gpuprof_device_info, k), true}
static const field FIELDS[] = {
    U32(compute_major),         U32(compute_minor),
    U32(sm_count),              U32(warp_size),
    U32(max_threads_per_block), U32(max_threads_per_sm),
    U32(max_blocks_per_sm),     U32(registers_per_sm),
    U32(registers_per_block),   U64(shared_bytes_per_sm),
    U64(shared_bytes_per_block), U64(shared_bytes_reserved),
};
#define NFIELDS (sizeof(FIELDS) / sizeof(FIELDS[0]))

static uint64_t field_value(const gpuprof_device_info *d, const field *f)
{
    const char *p = (const char *)d + f->at;
    if (f->wide) {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Appends one record; false when out of room. */
static bool put(gpuprof__io_device_attr *out, uint32_t *n, uint32_t cap,
                gpuprof__io_device_attr a)
{
    if (*n == cap)
        return false;
    out[(*n)++] = a;
    return true;
}

uint32_t gpuprof__devices_attrs(gpuprof__io_device_attr **out,
                                uint32_t (*str)(void *, const char *),
                                void *ctx)
{
    *out = NULL;
    pthread_mutex_lock(&mu);
    uint32_t cap = ndevs * (uint32_t)(NFIELDS + 1), n = 0;
    gpuprof__io_device_attr *a = cap ? calloc(cap, sizeof(*a)) : NULL;
    for (uint32_t i = 0; a && i < ndevs; i++) {
        const gpuprof_device_info *d = &devs[i].info;
        uint32_t api = str(ctx, d->api);
        if (d->name[0])
            put(a, &n, cap,
                (gpuprof__io_device_attr){api, d->device, str(ctx, "name"),
                                          GPUPROF_IO_ATTR_STR,
                                          str(ctx, d->name)});
        for (size_t f = 0; f < NFIELDS; f++) {
            uint64_t v = field_value(d, &FIELDS[f]);
            if (v)
                put(a, &n, cap,
                    (gpuprof__io_device_attr){api, d->device,
                                              str(ctx, FIELDS[f].key),
                                              GPUPROF_IO_ATTR_U64, v});
        }
    }
    pthread_mutex_unlock(&mu);
    *out = a;
    return a ? n : 0;
}

void gpuprof__devices_atfork_prepare(void)
{
    pthread_mutex_lock(&mu);
}

void gpuprof__devices_atfork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

void gpuprof__devices_atfork_child(void)
{
    pthread_mutex_unlock(&mu); /* the devices are the parent's: kept */
}
