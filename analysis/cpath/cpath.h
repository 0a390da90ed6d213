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
 *   path.c     node times (replayed depth first along input edges), and
 *              the critical path walked back from the process's last node
 *              along each node's binding edge
 *   waits.c    wait states and blame from the dependencies (seed 004 §3)
 *   idle.c     GPU idleness blame (seed 000 §7.2)
 *   project.c  speedup rules and the replay with chosen activities faster
 *   table.c    metrics these add to an open database
 *   api.c      the public functions and the metrics
 *   report.c   the reports (gpuprof report --waits, --critical-path,
 *              gpuprof project)
 *   host.c     host threads' dependencies (trace.db's host records:
 *              pthreads, OpenMP): create to start, exit to join, barrier
 *              arrivals, unlock to a blocked lock, signal to a condition
 *              wait, fork to an idle worker, a child task's end to a
 *              taskwait; their edges and wait states (WaitAtJoin,
 *              WaitAtBarrier, LockContention, WaitAtCondition, WaitAtFork)
 *   ranks.c,   the ranks of an MPI run (trace.db's MPI calls, from
 *   messages.c libgpuprof-pmpi.so): their graphs joined into one by
 *              message and collective edges, so the path crosses ranks
 *              (seed 004 §4.1, "hybrid EDG")
 *
 * Where the bytes go (tests/bench/bench_cpath.c: 575,001 trace.db records,
 * one thread on 4 streams: 775,001 activities, 1,550,002 nodes; massif
 * and the peak RSS; before -> after the memory work of issue 16):
 *   trace.db, read whole by the database   18.4 MB (32 bytes a record)
 *   activities (cp_act, 48 -> 40 bytes)   37.2 -> 31.0 MB (no correlation
 *                                          id: the build keeps its own)
 *   edges (16 -> 8 bytes, 1,818,746 ->    29.1 -> 2.1 MB (no weight:
 *     268,749: own and program-order       path.c works it out; own and
 *     edges implicit)                      program order implicit)
 *   edge index (per node 8 -> per          12.4 -> 3.1 MB
 *     activity 4 bytes)
 *   node times (8 bytes a node)            12.4 MB
 *   binding edges (4 bytes a node)          6.2 -> 0 (found again on the
 *                                          walk back)
 *   replay scratch: order, out-edge        32.1 -> 0.4 MB (depth first
 *     index and list, in-degrees, fill     along input edges, 2 bits a
 *     positions                            node and its stack)
 *   idleness blame (8 bytes an activity)    6.2 -> 3.6 MB (a cell for each
 *                                          of the 225,001 with blame)
 *   time on the path (8 bytes an act.)      6.2 -> 0 (summed by key as
 *                                          the walk goes)
 *   path steps (24 bytes)                  13.8 MB (575,001: the path runs
 *                                          through the host)
 *   notes (2.1), dependencies (1.5)         kept -> freed before the replay
 *   build scratch: call map 12.6 -> 6.3 (at most 2/3 full), launch times
 *     6.2 -> 1.6 (device work only), correlation ids 6.2 (out of cp_act;
 *     freed after the notes), last work 3.1; freed before the index is
 *     sorted (6.2 a node while sorting + 1.1, was 7.3 + the index)
 *   wait states 1.5 MB; strings none (names come from the database when
 *   reported); regions: one thread's at a time, while its lane is built.
 * Peak RSS 169 -> 99 MB (cpath_peak_rss_mb 294 -> 172 per million
 * records), at the walk back; about 14 MB of it is glibc heap left free by
 * the build's scratch (malloc_trim would return it; a library must not).
 */
#ifndef GPUPROF_AN_CPATH_H
#define GPUPROF_AN_CPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuprof_analysis.h"

#define CP_NONE UINT32_MAX

/* What an activity is. */
enum { CP_WORK = 0, CP_CALL = 1, CP_GPU = 2, CP_MPI = 3, CP_HOST = 4 };

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
    uint32_t lane;
    uint32_t context;    /* database context (CP_NONE: unknown) */
    uint32_t profile;    /* the thread's profile (device work: the launching
                            thread's; CP_NONE when unknown) */
    uint32_t call;       /* device work: its launch call, else CP_NONE */
    uint32_t note;       /* calls: first note in graph.note; MPI calls:
                            first record in graph.mpi; host records: its
                            one in graph.host; else CP_NONE */
    uint16_t nnotes;     /* ... and how many */
    uint8_t kind;        /* CP_WORK, CP_CALL, CP_GPU */
    uint8_t pad;
} cp_act;

typedef struct cp_lane {
    uint8_t gpu;
    int32_t rank;      /* MPI_COMM_WORLD rank of its process, -1 none */
    uint32_t process;  /* its process (a joined graph has several) */
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

/* One MPI event of an MPI call (the trace's MPI_RECORDS; gpuprof_mpi_op
 * in gpuprof_backend.h). */
typedef struct cp_mpi {
    uint64_t bytes, request, aux;
    uint32_t act; /* its call */
    uint32_t comm;
    int32_t peer, tag;
    uint8_t op;
} cp_mpi;
/* A host record (trace.db's host stream; io/trace.h GPUPROF_IO_HOST_*):
 * an activity of its thread's lane, a call or a moment (start = end). */
typedef struct cp_host {
    uint64_t object, aux;
    uint32_t act;
    uint8_t op, flags;
} cp_host;
enum {
    CP_H_CREATE = 1, CP_H_START = 2, CP_H_EXIT = 3, CP_H_JOIN = 4,
    CP_H_BARRIER = 5, CP_H_LOCK = 6, CP_H_UNLOCK = 7, CP_H_COND_WAIT = 8,
    CP_H_SIGNAL = 9, CP_H_FORK = 10, CP_H_IDLE = 11, CP_H_TASKWAIT = 12,
    CP_H_TASK_END = 13, CP_H_OPS = 14
};
#define CP_H_OMP 0x1u
#define CP_H_TIMEOUT 0x2u
#define CP_H_ARRIVAL 0x4u
/* Is a host op a wait (a call whose end depends on another thread)? */
static inline bool cp_host_waits(uint8_t op)
{
    return op == CP_H_JOIN || op == CP_H_BARRIER || op == CP_H_LOCK ||
           op == CP_H_COND_WAIT || op == CP_H_IDLE || op == CP_H_TASKWAIT;
}

enum {
    CP_MPI_INIT = 1, CP_MPI_SEND = 2, CP_MPI_RECV = 3, CP_MPI_ISEND = 4,
    CP_MPI_IRECV = 5, CP_MPI_WAIT = 6, CP_MPI_BARRIER = 7, CP_MPI_BCAST = 8,
    CP_MPI_REDUCE = 9, CP_MPI_ALLREDUCE = 10, CP_MPI_GATHER = 11,
    CP_MPI_ALLGATHER = 12, CP_MPI_ALLTOALL = 13, CP_MPI_COMM = 14,
    CP_MPI_FINALIZE = 15, CP_MPI_SCATTER = 16, CP_MPI_REQUEST_FREE = 17,
    CP_MPI_PROBE = 18, CP_MPI_IBARRIER = 19, CP_MPI_ISCATTER = 26,
    CP_MPI_GATHERV = 27, CP_MPI_SCAN = 33, CP_MPI_EXSCAN = 34, CP_MPI_OPS = 35
};

/* An edge into node dst (nodes: 2 * act for its start, + 1 for its end).
 * 8 bytes: graphs have millions. Its weight (ns at least between them) is
 * no field: path.c works it out from the measured times where needed. An
 * activity's own edge (start to end) and program order (the previous
 * activity of its lane to its start) are no edges either: every node v has
 * that one from v - 1, but a start of the first activity of a lane. */
typedef struct cp_edge {
    uint32_t src : 28;
    uint32_t kind : 4;
    uint32_t dst;
} cp_edge;
#define CP_MAX_NODES (1u << 28)
enum {
    CP_E_OWN = 0,    /* an activity's start to its end */
    CP_E_ORDER = 1,  /* the previous activity on the lane */
    CP_E_LAUNCH = 2, /* a launch call's start to its device work's start */
    CP_E_SYNC = 3,   /* device work's end to a blocking wait's end */
    CP_E_QUERY = 4,  /* device work's end to a ready query's end */
    CP_E_POLL = 5,   /* device work's end to a ready query's start, when
                        failed queries of the same target preceded it */
    CP_E_STREAM = 6, /* an event's device work to a stream's next work */
    CP_E_NULL = 7,   /* legacy default stream serialization */
    CP_E_MSG = 8,    /* a message: its send's start to its receive's end
                        (and a blocking send's end after its receive was
                        posted: the receive's start) */
    CP_E_COLL = 9,   /* a collective: a member's start to another's end */
    CP_E_HOST = 10,  /* host threads (host.c): what a host wait waited for
                        to its end: an exit, an unlock, a signal, a
                        fork, a child task's end, a barrier member's
                        arrival */
    CP_E_CREATE = 11, /* a thread's creation (the call's start) to its
                        start */
    CP_E_DEVICE = 12 /* device work that waited for its device: the end
                        of the work on another stream it started after
                        (device.c) to its start */
};
/* Dependency types of MPI waits (cp_dep.type; edges CP_E_MSG, CP_E_COLL). */
enum { CP_D_LATE_SENDER = 8, CP_D_LATE_RECEIVER = 10, CP_D_COLL = 9 };
static inline bool cp_dep_mpi(uint8_t type)
{
    return type >= CP_D_LATE_SENDER && type <= CP_D_LATE_RECEIVER;
}
/* ... and of host waits (edges CP_E_HOST): the waiter's cause is the
 * thread joined (its exit), the last to arrive at a barrier, the lock's
 * holder (its unlock), the signaller, the forking thread. */
enum { CP_D_JOIN = 16, CP_D_BARRIER = 17, CP_D_LOCK = 18, CP_D_COND = 19,
       CP_D_FORK = 20 };

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
    uint32_t *in; /* per activity: its first edge in `edge` (those into its
                     start, then those into its end); [nact] = nedge (edges
                     < 4G: graph.c) */
    cp_dep *dep;
    uint64_t ndep, capdep;
    cp_mpi *mpi; /* MPI calls' events, by call */
    uint32_t nmpi;
    cp_host *host; /* host records, by activity */
    uint32_t nhost;
    uint64_t host_left; /* host records inside another call of their
                           thread (a callback's): left out */
    uint32_t nranks; /* a joined graph (ranks.c): the ranks it holds */
} cp_graph;

/* graph.c: the graph of process `process` (a profile id that is some
 * stream's process). GPUPROF_E_CORRUPT naming what is wrong when the
 * trace contradicts itself (a note without its call, an activity ending
 * before it starts). */
gpuprof_status cp_graph_build(const gpuprof_an_db *db, uint32_t process,
                              cp_graph *g);
void cp_graph_free(cp_graph *g);
/* Frees what only the wait states read (notes, dependencies): after
 * cp_waits and cp_mpi_waits, before the replay. */
void cp_graph_drop_waits(cp_graph *g);
/* Edges sorted by their destination again, with each node's first (after
 * edges were added). */
gpuprof_status cp_graph_index(cp_graph *g);
/* Adds an edge (unindexed) and a dependency. */
gpuprof_status cp_edge_add(cp_graph *g, uint32_t src, uint32_t dst,
                           uint8_t kind);
gpuprof_status cp_dep_add(cp_graph *g, uint32_t waiter, uint32_t cause,
                          uint8_t type, uint8_t flags);
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
/* The critical path of tm (replayed with `scale`), walked back along each
 * node's binding edge (found again, not stored) and reversed into time
 * order; *n steps (malloc'd). Each edge's time as it is walked, to the
 * activity it counts for, also given to spent(arg, act, ns) when not
 * NULL (an activity's edges mostly one after another). */
gpuprof_status cp_path(const cp_graph *g, const cp_times *tm,
                       const double *scale, cp_step **out, uint64_t *n,
                       void (*spent)(void *arg, uint32_t act, int64_t ns),
                       void *arg);

/* waits.c: wait states. */
enum {
    CP_W_BLAME_KERNEL = 0,
    CP_W_BLAME_SYNC = 1,
    CP_W_EVENT_QUERY = 2,
    CP_W_STREAM_QUERY = 3,
    CP_W_NULL_STREAM = 4,
    CP_W_STREAM_WAIT = 5,
    CP_W_LATE_SENDER = 6,
    CP_W_LATE_RECEIVER = 7,
    CP_W_WAIT_COLL = 8,
    CP_W_AT_JOIN = 9,
    CP_W_AT_BARRIER = 10,
    CP_W_LOCK_CONTENTION = 11,
    CP_W_AT_CONDITION = 12,
    CP_W_AT_FORK = 13,
    CP_W_KINDS = 14
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
/* The MPI wait states of a joined graph, appended to *out (n of them). */
gpuprof_status cp_mpi_waits(const cp_graph *g, cp_wait **out, uint64_t *n);

/* host.c: the host threads' edges and dependencies of a built graph
 * (before it is indexed: cp_graph_build calls it); their wait states,
 * appended to *out (n of them); a host op's name ("pthread_join"). */
gpuprof_status cp_host_edges(cp_graph *g);
/* device.c: edges CP_E_DEVICE (graph.c calls it once the lanes' edges are
 * in). */
gpuprof_status cp_device_edges(cp_graph *g);
gpuprof_status cp_host_wait_states(const cp_graph *g, cp_wait **out,
                                   uint64_t *n);
const char *cp_host_name(uint8_t op, uint8_t flags);

/* ranks.c: the processes of trace.db that hold MPI calls, g[0 .. n), joined
 * into one graph *out (g's are freed, *waits and *idle, per graph, joined
 * alike); the messages and collectives matched, their edges and
 * dependencies added, the edges indexed; records that cannot be matched
 * left out, counted in out->left. GPUPROF_E_CORRUPT, naming it, when the
 * MPI records are damaged (a request posted twice, a collective some
 * members lack, two processes with one rank: ranks.c's opening comment):
 * then no path across ranks. */
/* MPI records the joining left out, by why (ranks.c's opening comment;
 * their edges are missing, the rest is joined). */
typedef struct cp_mpi_left {
    uint64_t unpaired; /* sends and receives of a (communicator, source,
                          destination, tag) whose counts differ */
    uint64_t unknown;  /* on communicators the wrappers do not know */
    uint64_t pending;  /* nonblocking postings never seen completing */
    uint64_t orphan;   /* completions or frees whose posting is missing */
} cp_mpi_left;
typedef struct cp_part {
    cp_graph g;
    cp_wait *w;
    uint64_t nw;
    double *idle;
    cp_mpi_left left; /* a joined graph's */
} cp_part;
gpuprof_status cp_join(const gpuprof_an_db *db, cp_part *parts, uint32_t n,
                       cp_part *out);
/* messages.c: an MPI op's function name ("MPI_Send"; "MPI" when unknown). */
const char *cp_mpi_name(uint32_t op);
/* Does graph g hold MPI calls? */
static inline bool cp_has_mpi(const cp_graph *g) { return g->nmpi > 0; }

/* idle.c: per activity, the GPU idleness blamed on it (ns, fractional). */
gpuprof_status cp_idle(const cp_graph *g, double *blame);

/* project.c: speedup rules "kind:NAME=F[,kind:NAME=F]..." with kind
 * kernel, region or context (a database context id); scale per activity
 * (1 untouched) into scale[0 .. g->nact). */
typedef struct cp_rule {
    uint8_t kind; /* 0 kernel, 1 region, 2 context, 3 device (the model:
                     context holds CP_DEV_*) */
    char *name;
    uint32_t context;
    double factor;
} cp_rule;
gpuprof_status cp_rules_parse(const char *text, cp_rule **out, uint32_t *n);
void cp_rules_free(cp_rule *r, uint32_t n);
/* How many activities the rules touched. */
uint64_t cp_rules_apply(const gpuprof_an_db *db, const cp_graph *g,
                        const cp_rule *r, uint32_t n, double *scale);

/* The devices' model the rules ask for (CP_DEV_AUTO when none does). */
int cp_rules_device_mode(const cp_rule *r, uint32_t n);

/* device.c: how kernels that ran at once share their device in the
 * projection (the file says how the model is chosen). */
enum { CP_DEV_AUTO = 0, CP_DEV_FREE = 1, CP_DEV_SHARED = 2 };
typedef gpuprof_an_device_model cp_devmodel;
/* What each activity is to the model: no kernel, or a kernel whose
 * launches fill its device (as many work-groups as it holds at once),
 * leave it room, or nobody knows. */
enum { CP_K_NONE = 0, CP_K_UNKNOWN = 1, CP_K_FILLS = 2, CP_K_ROOM = 3 };
/* For the kernels (kind, per activity: CP_K_*) of each device of g:
 * decides the model (mode CP_DEV_AUTO: from the measured timeline, else
 * from whether the kernels fill the device) and, where
 * kernels share a device, turns scale (the rules' factors of each
 * activity's own edge) into the factors that give the projected run's
 * kernels their shares; *out (malloc'd, *n entries): the devices'
 * models. */
gpuprof_status cp_device_project(const cp_graph *g, const uint8_t *kind,
                                 int mode, double *scale, cp_devmodel **out,
                                 uint32_t *n);

/* api.c, for report.c: the database an analysis reads, and process i's
 * blame: cb(arg, name of the blamed activity, ns) per wait state. */
const gpuprof_an_db *gpuprof__an_cpath_db(const gpuprof_an_cpath *cp);
/* Process i's host records left out (inside another call of their
 * thread: graph.c). */
uint64_t gpuprof__an_cpath_host_left(const gpuprof_an_cpath *cp, uint32_t i);
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
