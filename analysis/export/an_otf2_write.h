/*
 * an_otf2_write.h - the state of one OTF2 export, shared by its files:
 * an_export_otf2.c (entry, names and regions), an_otf2_plan.c (hosts,
 * location groups and locations from trace.db's streams), an_otf2_events.c
 * (the events per location, then the definitions), an_otf2_verify.c (the
 * archive read back) and an_otf2_dir.c (the temporary directory renamed
 * into place). Only with GPUPROF_HAVE_OTF2.
 */
#ifndef GPUPROF_AN_OTF2_WRITE_H
#define GPUPROF_AN_OTF2_WRITE_H

#include "../base/an_internal.h"
#include "../db/an_samples.h"
#include "an_otf2.h"

#ifdef GPUPROF_HAVE_OTF2

/* Strings numbered in order of first appearance; "" is always 0. */
typedef struct gpuprof__an_ox_interner {
    gpuprof__io_strtab *t;
    uint32_t *off; /* per id: offset in t (ascending) */
    uint32_t n, cap;
} gpuprof__an_ox_interner;

typedef struct gpuprof__an_ox_region {
    uint32_t name, desc; /* string ids */
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} gpuprof__an_ox_region;

typedef struct gpuprof__an_ox_loc {
    uint32_t stream[2]; /* trace.db streams: a thread's regions and API
                           calls, or a GPU stream in [0]; UINT32_MAX none */
    uint32_t group, name;
    uint32_t host;
    uint32_t profile; /* a thread's; UINT32_MAX a GPU stream */
    bool gpu;
    uint64_t events;
    gpuprof__an_sample *smp; /* a thread's CPU samples (an_samples.h), by
                                time: calling-context sample events */
    uint32_t nsmp, cap_smp;
} gpuprof__an_ox_loc;

/* A calling context: a database context that samples saw, or an
 * ancestor of one (parent: its calling context, UINT32_MAX none). */
typedef struct gpuprof__an_ox_cctx {
    uint32_t region, parent, depth;
} gpuprof__an_ox_cctx;

typedef struct gpuprof__an_ox_group {
    uint32_t name, host;
    uint32_t creator;   /* an accelerator's process group; UINT32_MAX */
    uint32_t device;    /* accelerators */
    uint32_t first_acc; /* a process: its first accelerator group */
    uint32_t next_acc;  /* an accelerator: the process's next one */
    bool acc;
} gpuprof__an_ox_group;

typedef struct gpuprof__an_ox_host {
    uint32_t name;  /* string id */
    int64_t offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC of its first stream */
} gpuprof__an_ox_host;

typedef struct gpuprof__an_ox {
    const gpuprof__an_otf2_lib *L;
    const gpuprof_an_db *db;
    const gpuprof__an_cpath_marks *marks; /* NULL: not computed */
    uint32_t nc;                          /* contexts */
    gpuprof__an_ox_interner strings, rkeys;
    gpuprof__an_ox_region *regions;
    uint32_t nregions, cap_regions;
    uint32_t *kern, *kfirst, *klist; /* kernels beneath GPU operations */
    uint32_t *reg; /* per (context, side): region + 1, 0: not yet */
    gpuprof__an_ox_loc *locs;
    uint32_t nlocs;
    gpuprof__an_ox_group *groups;
    uint32_t ngroups;
    gpuprof__an_ox_host *hosts;
    uint32_t nhosts;
    uint32_t *host_of_sid, cap_host_of_sid; /* host + 1 by its name's id */
    uint32_t *proc_group, *prof_loc;        /* per profile; UINT32_MAX */
    uint32_t sample_metric;                 /* UINT32_MAX: no samples */
    uint64_t period;      /* the interrupt generator's: the smallest
                             sample's value (ns) */
    uint64_t nsamples;    /* sample events written */
    uint32_t *cc;         /* per context (+ unknown): calling context + 1 */
    gpuprof__an_ox_cctx *cctx;
    uint32_t ncctx, cap_cctx;
    uint64_t tmin, tmax;                    /* of the events written */
    uint64_t clipped;                       /* records cut to nest */
    uint64_t ndefs;                         /* global definitions written */
    bool realtime;                          /* some host had an offset */
    int64_t base; /* the smallest host offset: timestamps are each host's
                     monotonic ns + (its offset - base) */
    OTF2_Paradigm gpu_paradigm;             /* of API calls and GPU work */
} gpuprof__an_ox;

gpuprof_status gpuprof__an_ox_intern(gpuprof__an_ox_interner *in, const char *s,
                                     uint32_t *id);
const char *gpuprof__an_ox_string(const gpuprof__an_ox_interner *in,
                                  uint32_t id);
void gpuprof__an_ox_interner_free(gpuprof__an_ox_interner *in);
/* The region of a record with context c (UINT32_MAX: unknown) on a
 * thread's location or (gpu) a GPU stream's. */
gpuprof_status gpuprof__an_ox_region_of(gpuprof__an_ox *x, uint32_t c, bool gpu,
                                        uint32_t *region);

/* The calling context of a sample at context c (UINT32_MAX: unknown),
 * its ancestors' made first (an_otf2_events.c). */
gpuprof_status gpuprof__an_ox_cctx_of(gpuprof__an_ox *x, uint32_t c,
                                      uint32_t *cctx);

/* Hosts, groups and locations from trace.db's streams, each thread's CPU
 * samples (an_otf2_plan.c). */
gpuprof_status gpuprof__an_ox_plan(gpuprof__an_ox *x);
/* The archive "traces" in directory `path` (an_otf2_events.c). */
gpuprof_status gpuprof__an_ox_write(gpuprof__an_ox *x, const char *path);

/* The archive in `path` read back: what was written must be there
 * (an_otf2_verify.c). */
gpuprof_status gpuprof__an_ox_verify(const gpuprof__an_ox *x, const char *path);

/* DIR's replacement (an_otf2_dir.c): _begin refuses a DIR that is neither
 * absent, an empty directory nor an earlier export, and makes the
 * temporary directory `tmp` beside it; _end(st) renames tmp to DIR when st
 * is GPUPROF_OK (an earlier export there removed), else removes tmp, and
 * returns the export's status. */
typedef struct gpuprof__an_otf2_dir {
    const char *path;
    char tmp[4200];
} gpuprof__an_otf2_dir;
gpuprof_status gpuprof__an_otf2_dir_begin(gpuprof__an_otf2_dir *d,
                                          const char *path);
gpuprof_status gpuprof__an_otf2_dir_end(gpuprof__an_otf2_dir *d,
                                        gpuprof_status st);

#endif /* GPUPROF_HAVE_OTF2 */
#endif /* GPUPROF_AN_OTF2_WRITE_H */
