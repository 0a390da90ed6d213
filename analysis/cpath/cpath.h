/*
 * cpath.h - why the program waits (seed 004, CASITA; seed 000 §7.2): the
 * event dependency graph of each process, built from trace.db, its wait
 * states, GPU idleness blame, the critical path and its projection.
 * Internal to libgpuprof-analysis; the public face is gpuprof_an_cpath_*
 * (api.c).
 *
 * The rooms, each with its own context and no shared hidden state:
 *   graph.c    one process's activities (CPU work between API calls, API
 *              calls, device work per stream) as start and end nodes, and
 *              the edges between them: program order on each thread and
 *              stream, launches, blocking and polling synchronization,
 *              stream waits for events, the legacy default stream; plus
 *              the list of dependencies the wait-state rules read
 *   path.c     node times (replayed in topological order), the binding
 *              edge of each node and the critical path walked back from
 *              the process's last node
 *   waits.c    wait states and blame from the dependencies (seed 004 §3)
 *   idle.c     GPU idleness blame (seed 000 §7.2)
 *   project.c  speedup rules and the replay with chosen activities faster
 *   table.c    metrics these add to an open database
 *   api.c      the public functions and the metrics
 *   report.c   the reports (gpuprof report --waits, --critical-path,
 *              gpuprof project)
 */
#ifndef GPUPROF_AN_CPATH_H
#define GPUPROF_AN_CPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_analysis.h"

#define CP_NONE UINT32_MAX

/* What an activity is. */
enum { CP_WORK = 0, CP_CALL = 1, CP_GPU = 2 };

/* Dependency note kinds and flags as the trace has them (lib/core/gpu.h
 * GP_DEP_*; doc/FORMATS.md). */
enum {
    CP_SYNC_DEVICE = 1,
    CP_SYNC_STREAM = 2,
    CP_SYNC_EVENT = 3,
    CP_QUERY_STREAM = 4,
    CP_QUERY_EVENT = 5,
    CP_EVENT_RECORD = 6,
    CP_STREAM_WAIT = 7,
    CP_LAUNCH = 8
};
#define CP_F_READY 0x1u
#define CP_F_BLOCKING 0x2u
#define CP_F_NULL 0x4u
#define CP_F_OPENCL 0x8u
#define CP_ALL_STREAMS 0x7FFFFFFFu

typedef struct cp_act {
    uint64_t start, end; /* as measured */
    uint64_t corr;       /* calls and device work; 0 for CPU work */
    uint32_t lane;
    uint32_t context;    /* database context (CP_NONE: unknown) */
    uint32_t profile;    /* the thread's profile (device work: the launching
                            thread's; CP_NONE when unknown) */
    uint32_t call;       /* device work: its launch call, else CP_NONE */
    uint32_t note;       /* calls: first note in graph.note, else CP_NONE */
    uint16_t nnotes;
    uint8_t kind;        /* CP_WORK, CP_CALL, CP_GPU */
    uint8_t pad;
} cp_act;

typedef struct cp_lane {
    uint8_t gpu;
    uint32_t profile;  /* CPU: the thread's profile; GPU: CP_NONE */
    uint32_t device, stream;
    uint32_t first, n; /* its activities: act[first .. first + n) */
} cp_lane;

/* A dependency note joined to its call. */
typedef struct cp_note {
    uint32_t call; /* the activity */
    uint8_t what, flags;
    uint16_t device;
    uint32_t stream;
    uint64_t target; /* correlation id, 0 none */
} cp_note;

/* An edge into node dst (nodes: 2 * act for its start, + 1 for its end).
 * 8 bytes: graphs have millions. Its weight (ns at least between them) is
 * no field: path.c works it out from the measured times where needed. */
typedef struct cp_edge {
    uint32_t src : 29;
    uint32_t kind : 3;
    uint32_t dst;
} cp_edge;
#define CP_MAX_NODES (1u << 29)
enum {
    CP_E_OWN = 0,    /* an activity's start to its end */
    CP_E_ORDER = 1,  /* the previous activity on the lane */
    CP_E_LAUNCH = 2, /* a launch call's start to its device work's start */
    CP_E_SYNC = 3,   /* device work's end to a blocking wait's end */
    CP_E_QUERY = 4,  /* device work's end to a ready query's end */
    CP_E_POLL = 5,   /* device work's end to a ready query's start, when
                        failed queries of the same target preceded it */
    CP_E_STREAM = 6, /* an event's device work to a stream's next work */
    CP_E_NULL = 7    /* legacy default stream serialization */
};

/* What the wait-state rules read: `waiter` depended on `cause`. */
typedef struct cp_dep {
    uint32_t waiter, cause;
    uint8_t type; /* CP_E_SYNC, CP_E_QUERY, CP_E_POLL (waiter: a failed
                     query), CP_E_STREAM, CP_E_NULL */
    uint8_t flags; /* the note's */
} cp_dep;

typedef struct cp_graph {
    uint32_t process; /* its first profile */
    cp_act *act;
    uint32_t nact;
    cp_lane *lane;
    uint32_t nlane;
    cp_note *note;
    uint32_t nnote;
    cp_edge *edge; /* sorted by dst after cp_graph_build */
    uint64_t nedge, capedge;
    uint32_t *in; /* per node: its first edge in `edge`; [2 * nact] = nedge
                     (edges < 4G: graph.c) */
    cp_dep *dep;
    uint64_t ndep, capdep;
} cp_graph;

/* graph.c: the graph of process `process` (a profile id that is some
 * stream's process). GPUPROF_E_CORRUPT naming what is wrong when the
 * trace contradicts itself (a note without its call, an activity ending
 * before it starts). */
gpuprof_status cp_graph_build(const gpuprof_an_db *db, uint32_t process,
                              cp_graph *g);
void cp_graph_free(cp_graph *g);
/* The processes trace.db holds, ascending; how many (at most max). */
uint32_t cp_processes(const gpuprof_an_db *db, uint32_t *out, uint32_t max);

/* graph.c: a thread's regions (trace.db REGIONS records, which nest) swept
 * forward in time for the innermost one at each moment. */
typedef struct cp_region {
    uint64_t start, end;
    uint32_t context; /* 0: unknown */
    uint32_t rec;     /* its record in the stream */
} cp_region;
typedef struct cp_rsweep {
    cp_region *r; /* by start, the enclosing one first */
    uint64_t n, next;
    uint32_t *stack; /* the regions open at the time swept to */
    uint32_t depth;
} cp_rsweep;
/* Loads n raw records; GPUPROF_E_NOMEM. */
gpuprof_status cp_regions_load(const uint8_t *raw, uint64_t n, cp_rsweep *s);
/* Moves to time t (never backwards): the innermost region open at t is
 * r[stack[depth - 1]] when depth is not 0. */
void cp_sweep_to(cp_rsweep *s, uint64_t t);
/* The first time after the one swept to and before e where the innermost
 * region changes (e when none). */
uint64_t cp_sweep_next(const cp_rsweep *s, uint64_t e);
void cp_rsweep_free(cp_rsweep *s);

/* path.c: times and the critical path. */
typedef struct cp_times {
    int64_t *t;        /* per node */
    uint32_t *bind;    /* per node: its binding edge, UINT32_MAX none */
    uint64_t last;     /* the node that ends last */
} cp_times;
typedef struct cp_step {
    uint32_t act;
    int64_t from, to; /* the part of it on the path */
} cp_step;
/* Replays the graph: node times with durations scaled by `scale` (per
 * activity, NULL: 1); measured times when scale is NULL. GPUPROF_E_CORRUPT
 * when the graph has a cycle. */
gpuprof_status cp_replay(const cp_graph *g, const double *scale, cp_times *tm);
void cp_times_free(cp_times *tm);
/* The critical path, last step first reversed into time order; *n steps
 * (malloc'd). Each activity's time on the path also in on_path[act] when
 * not NULL. */
gpuprof_status cp_path(const cp_graph *g, const cp_times *tm, cp_step **out,
                       uint64_t *n, int64_t *on_path);

/* waits.c: wait states. */
enum {
    CP_W_BLAME_KERNEL = 0,
    CP_W_BLAME_SYNC = 1,
    CP_W_EVENT_QUERY = 2,
    CP_W_STREAM_QUERY = 3,
    CP_W_NULL_STREAM = 4,
    CP_W_STREAM_WAIT = 5,
    CP_W_KINDS = 6
};
typedef struct cp_wait {
    uint32_t waiter, cause; /* activities: who waited, who is blamed */
    uint8_t kind;           /* CP_W_* */
    uint8_t opencl;         /* the OpenCL counterpart */
    uint8_t part;           /* more blame of the wait before it (not counted
                               again) */
    uint64_t ns;
} cp_wait;
gpuprof_status cp_waits(const cp_graph *g, cp_wait **out, uint64_t *n);

/* idle.c: per activity, the GPU idleness blamed on it (ns, fractional). */
gpuprof_status cp_idle(const cp_graph *g, double *blame);

/* project.c: speedup rules "kind:NAME=F[,kind:NAME=F]..." with kind
 * kernel, region or context (a database context id); scale per activity
 * (1 untouched) into scale[0 .. g->nact). */
typedef struct cp_rule {
    uint8_t kind; /* 0 kernel, 1 region, 2 context */
    char *name;
    uint32_t context;
    double factor;
} cp_rule;
gpuprof_status cp_rules_parse(const char *text, cp_rule **out, uint32_t *n);
void cp_rules_free(cp_rule *r, uint32_t n);
/* How many activities the rules touched. */
uint64_t cp_rules_apply(const gpuprof_an_db *db, const cp_graph *g,
                        const cp_rule *r, uint32_t n, double *scale);

/* api.c, for report.c: the database an analysis reads, and process i's
 * blame: cb(arg, name of the blamed activity, ns) per wait state. */
const gpuprof_an_db *gpuprof__an_cpath_db(const gpuprof_an_cpath *cp);
void gpuprof__an_cpath_blames(const gpuprof_an_cpath *cp, uint32_t i,
                              void (*cb)(void *arg, const char *name,
                                         uint64_t ns),
                              void *arg);

/* api.c, for the OTF2 export (analysis/export/an_otf2_cpath.c): the
 * analysis with each process's graph and critical path only (no wait
 * states, no idleness blame: it must not be given to the functions that
 * report those); process i's graph and its path, *n steps in time order. */
gpuprof_status gpuprof__an_cpath_new_path(const gpuprof_an_db *db,
                                          gpuprof_an_cpath **out);
const cp_graph *gpuprof__an_cpath_path(const gpuprof_an_cpath *cp, uint32_t i,
                                       const cp_step **steps, uint64_t *n);

#endif /* GPUPROF_AN_CPATH_H */
