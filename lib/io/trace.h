/*
 * trace.h - the trace file format (doc/FORMATS.md, "Trace files"): a file
 * header, then self-delimiting chunks appended while the run goes, each with
 * its own CRC-32C, so a process killed at any moment leaves every complete
 * chunk readable and its torn last chunk detectably incomplete.
 *
 * Internal to libgpuprof and libgpuprof-analysis (gpuprof__ prefix).
 */
#ifndef GPUPROF_IO_TRACE_H
#define GPUPROF_IO_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define GPUPROF_IO_TRACE_MAGIC "GPTRACE\0" /* 8 bytes at offset 0 */
#define GPUPROF_IO_TRACE_MAJOR 1
#define GPUPROF_IO_TRACE_MINOR 5 /* 1.1: CORR_RECORDS; 1.2: MERGED chunks;
                                    1.3: DEP_RECORDS; 1.4: MPI_RECORDS;
                                    1.5: SAMPLE_RECORDS, HOST_RECORDS */
#define GPUPROF_IO_TRACE_HEADER 32       /* file header bytes */
#define GPUPROF_IO_TRACE_CHUNK_HEADER 32 /* chunk header bytes */
#define GPUPROF_IO_TRACE_CHUNK_MAGIC 0x4B484354u /* "TCHK" little-endian */
#define GPUPROF_IO_TRACE_RECORD 24       /* u64 start, u64 end, u64 context */
#define GPUPROF_IO_TRACE_CORR_RECORD 32  /* ... and u64 correlation id */
#define GPUPROF_IO_TRACE_MPI_RECORD 64   /* MPI_RECORDS (below) */
#define GPUPROF_IO_TRACE_HOST_RECORD 40  /* HOST_RECORDS (below) */
#define GPUPROF_IO_TRACE_MAX_RECORDS 65536 /* per chunk */
#define GPUPROF_IO_TRACE_MAX_MERGED 16384  /* map entries per MERGED chunk */

/* Chunk types (pinned). CORR_RECORDS (since 1.1) carry each record's
 * correlation id: a GPU stream's device records (flag GPU), or a CPU
 * thread's operation records (the API call from gpuprof_op_begin to
 * gpuprof_op_end; no flag GPU). */
/* MERGED (since 1.2): a thread was summed into the profile's "exited
 * threads (merged)" state (GPUPROF_KEEP_THREADS); its nodes' indices in
 * that state's tree, from node `first` on, so its records keep their
 * contexts. */
enum {
    GPUPROF_IO_TRACE_RECORDS = 1,
    GPUPROF_IO_TRACE_THREAD = 2,
    GPUPROF_IO_TRACE_CORR_RECORDS = 3,
    GPUPROF_IO_TRACE_MERGED = 4,
    GPUPROF_IO_TRACE_DEP_RECORDS = 5, /* since 1.3: a CPU thread's
                                         dependency notes (below) */
    GPUPROF_IO_TRACE_MPI_RECORDS = 6, /* since 1.4: a CPU thread's MPI
                                         calls (below) */
    GPUPROF_IO_TRACE_SAMPLE_RECORDS = 7, /* since 1.5: CPU samples of any
                                           threads (below) */
    GPUPROF_IO_TRACE_HOST_RECORDS = 8 /* since 1.5: a CPU thread's host
                                         synchronization (below) */
};

/* SAMPLE_RECORDS (since 1.5): CPU samples (GPUPROF_CPU_SAMPLING,
 * GPU_IDLE_CAUSE, a backend's counter overflows), 32 bytes a record: u64
 * time (process clock ns: when the sample was taken), u64 value (what it
 * added to its metric: ns for timer samples), u64 context (thread_seq <<
 * 32 | node, as every record's), u32 metric (its index in the profile's
 * metric table), u32 reserved (0). Records of several threads share a
 * chunk; the reader gives each thread its own stream (`samples`), held in
 * gpuprof__io_trace_rec as start_ns = time, end_ns = value, context, corr
 * = metric. */

/* HOST_RECORDS (since 1.5): how a CPU thread synchronized with the
 * process's other threads (lib/host/: pthreads interposed, OpenMP through
 * OMPT), 40 bytes a record (doc/FORMATS.md has the layout and what each op
 * means). A call (CREATE, JOIN, BARRIER, LOCK, COND_WAIT, IDLE, TASKWAIT)
 * has its start and end; a moment (START, EXIT, UNLOCK, SIGNAL, FORK,
 * TASK_END) has start = end. Ops are pinned, new ones appended. */
enum {
    GPUPROF_IO_HOST_CREATE = 1,    /* made thread `object` (aux: creation) */
    GPUPROF_IO_HOST_START = 2,     /* this thread began (object: its id, aux:
                                      its creation) */
    GPUPROF_IO_HOST_EXIT = 3,      /* this thread ends (object: its id) */
    GPUPROF_IO_HOST_JOIN = 4,      /* waited for thread `object` to end */
    GPUPROF_IO_HOST_BARRIER = 5,   /* waited at barrier `object` */
    GPUPROF_IO_HOST_LOCK = 6,      /* blocked acquiring lock `object` */
    GPUPROF_IO_HOST_UNLOCK = 7,    /* released `object` while one waited */
    GPUPROF_IO_HOST_COND_WAIT = 8, /* waited on condition `object` (aux:
                                      its mutex) */
    GPUPROF_IO_HOST_SIGNAL = 9,    /* signalled `object` while one waited
                                      (aux 1: broadcast) */
    GPUPROF_IO_HOST_FORK = 10,     /* OpenMP: forked parallel region
                                      `object` (aux: its team's size) */
    GPUPROF_IO_HOST_IDLE = 11,     /* OpenMP: a worker idle until it began
                                      its part of region `object` */
    GPUPROF_IO_HOST_TASKWAIT = 12, /* OpenMP: task `object` waited for its
                                      children */
    GPUPROF_IO_HOST_TASK_END = 13, /* OpenMP: a child of task `object`
                                      ended */
    GPUPROF_IO_HOST_OPS = 14       /* one past the last */
};
#define GPUPROF_IO_HOST_OMP 0x1u     /* flag: from OMPT */
#define GPUPROF_IO_HOST_TIMEOUT 0x2u /* flag: a timed wait that timed out */
#define GPUPROF_IO_HOST_ARRIVAL 0x4u /* flag: a BARRIER moment, an OpenMP
                                        worker's arrival at an implicit
                                        barrier (its end, if any, comes as
                                        a full BARRIER record, or as the
                                        IDLE that follows) */
typedef struct gpuprof__io_host_rec {
    uint64_t start_ns, end_ns;
    uint64_t object; /* the thread, lock, condition, barrier, region, task */
    uint64_t aux;
    uint8_t op, flags;
} gpuprof__io_host_rec;

/* A thread's host records (thread_seq `id`), in the order they came. */
typedef struct gpuprof__io_trace_host {
    uint32_t id;
    gpuprof__io_host_rec *recs;
    uint64_t count;
    uint64_t cap_;
} gpuprof__io_trace_host;

/* MPI_RECORDS (since 1.4): what a CPU thread's MPI calls did, from
 * gpuprof_be_mpi_event (the PMPI library, lib/pmpi/), 64 bytes a record
 * (doc/FORMATS.md has the layout and the meaning of each op). Several
 * records with the same start and end are one call (MPI_Waitall, one per
 * request it completed; MPI_Sendrecv, its send and its receive). */
typedef struct gpuprof__io_mpi_rec {
    uint64_t start_ns, end_ns;
    uint64_t bytes;
    uint64_t request; /* nonblocking calls and their completions; 0 none */
    uint64_t aux;     /* collectives: size << 32 | leader; INIT: world size */
    uint32_t comm;
    int32_t peer, tag;
    uint8_t op, flags;
} gpuprof__io_mpi_rec;

/* A thread's MPI records (thread_seq `id`), in the order they came. */
typedef struct gpuprof__io_trace_mpi {
    uint32_t id;
    gpuprof__io_mpi_rec *recs;
    uint64_t count;
    uint64_t cap_;
} gpuprof__io_trace_mpi;

/* DEP_RECORDS (since 1.3): what an operation of a CPU thread waits for or
 * marks, from gpuprof__op_dep, 32 bytes a record, held in a
 * gpuprof__io_trace_rec as: start_ns = the operation's API call start,
 * end_ns = the target (the correlation id of the operation whose device
 * work an event stands for, 0 for none), context = the note
 * (GPUPROF_IO_DEP_INFO), corr = the operation's correlation id. */
#define GPUPROF_IO_DEP_INFO(what, flags, device, stream)                      \
    ((uint64_t)(uint8_t)(what) | (uint64_t)(uint8_t)(flags) << 8 |            \
     (uint64_t)(uint16_t)(device) << 16 |                                     \
     (uint64_t)((stream) & 0x7FFFFFFFu) << 32 | 1ull << 63)
#define GPUPROF_IO_DEP_WHAT(info) ((uint32_t)((info) & 0xFF))
#define GPUPROF_IO_DEP_FLAGS(info) ((uint32_t)((info) >> 8 & 0xFF))
#define GPUPROF_IO_DEP_DEVICE(info) ((uint32_t)((info) >> 16 & 0xFFFF))
#define GPUPROF_IO_DEP_STREAM(info) ((uint32_t)((info) >> 32 & 0x7FFFFFFF))
#define GPUPROF_IO_DEP_ALL 0x7FFFFFFFu /* stream: every stream of the device */
/* Chunk flags (pinned bits). */
#define GPUPROF_IO_TRACE_GPU 0x1u          /* a GPU stream's records */
#define GPUPROF_IO_TRACE_OUT_OF_ORDER 0x2u /* a record starts before the one
                                              before it on its stream */

/* corr: the correlation id (CORR_RECORDS), 0 for RECORDS chunks. */
typedef struct gpuprof__io_trace_rec {
    uint64_t start_ns, end_ns, context, corr;
} gpuprof__io_trace_rec;

/* One stream: a GPU (device, stream) or a CPU thread (its thread_seq): a
 * thread's regions in `streams`, its operations in `ops`. */
typedef struct gpuprof__io_trace_stream {
    uint32_t gpu; /* 1: GPU stream, 0: CPU thread */
    uint32_t device;
    uint32_t id; /* GPU: stream index; CPU: thread_seq */
    uint32_t out_of_order; /* 1 when any of its chunks was flagged */
    gpuprof__io_trace_rec *recs;
    uint64_t count;
    uint64_t cap_; /* reader-internal: allocated records */
} gpuprof__io_trace_stream;

typedef struct gpuprof__io_trace_thread {
    uint32_t seq;
    uint64_t tid;
    char name[64];
} gpuprof__io_trace_thread;

/* One MERGED chunk: node first + i of thread `seq` is node map[i] of the
 * merged state (UINT32_MAX: none). */
typedef struct gpuprof__io_trace_merge {
    uint32_t seq, first, count;
    uint32_t *map;
} gpuprof__io_trace_merge;

typedef struct gpuprof__io_trace {
    uint32_t pid;
    uint32_t minor;
    uint64_t start_realtime_ns;
    gpuprof__io_trace_stream *streams;
    uint32_t stream_count;
    gpuprof__io_trace_stream *ops; /* CPU threads' operation records (gpu 0,
                                      id: thread_seq) */
    uint32_t op_stream_count;
    gpuprof__io_trace_stream *deps; /* CPU threads' dependency notes (1.2;
                                       gpu 0, id: thread_seq) */
    uint32_t dep_stream_count;
    gpuprof__io_trace_mpi *mpi; /* CPU threads' MPI calls (1.4) */
    uint32_t mpi_count;
    gpuprof__io_trace_host *host; /* CPU threads' host records (1.5) */
    uint32_t host_count;
    gpuprof__io_trace_stream *samples; /* CPU threads' samples (1.5; gpu
                                          0, id: thread_seq) */
    uint32_t sample_stream_count;
    gpuprof__io_trace_thread *threads;
    uint32_t thread_count;
    gpuprof__io_trace_merge *merges; /* MERGED chunks, in file order */
    uint32_t merge_count;
    uint64_t chunks;        /* valid chunks read */
    uint64_t ignored_bytes; /* from the first invalid chunk to the end */
    char ignored_why[128];  /* why reading stopped there ("" when none) */
} gpuprof__io_trace;

/* Writer side: the file header, into out[0..GPUPROF_IO_TRACE_HEADER). */
void gpuprof__io_trace_header(uint8_t *out, uint32_t pid,
                              uint64_t start_realtime_ns);
/* A RECORDS chunk of n records (n <= GPUPROF_IO_TRACE_MAX_RECORDS) into
 * out, which holds GPUPROF_IO_TRACE_CHUNK_HEADER + n * RECORD bytes;
 * returns the bytes written. */
size_t gpuprof__io_trace_records(uint8_t *out, uint32_t flags, uint32_t device,
                                 uint32_t id, const gpuprof__io_trace_rec *r,
                                 uint32_t n);
/* A CORR_RECORDS chunk (r[i].corr is written too): out holds
 * GPUPROF_IO_TRACE_CHUNK_HEADER + n * CORR_RECORD bytes. */
size_t gpuprof__io_trace_corr_records(uint8_t *out, uint32_t flags,
                                      uint32_t device, uint32_t id,
                                      const gpuprof__io_trace_rec *r,
                                      uint32_t n);
/* A DEP_RECORDS chunk of a CPU thread's notes (layout as CORR_RECORDS). */
size_t gpuprof__io_trace_dep_records(uint8_t *out, uint32_t flags,
                                     uint32_t id,
                                     const gpuprof__io_trace_rec *r,
                                     uint32_t n);
/* An MPI_RECORDS chunk of a CPU thread's MPI calls: out holds
 * CHUNK_HEADER + n * MPI_RECORD bytes. */
size_t gpuprof__io_trace_mpi_records(uint8_t *out, uint32_t id,
                                     const gpuprof__io_mpi_rec *r, uint32_t n);
/* A HOST_RECORDS chunk of a CPU thread's host records: out holds
 * CHUNK_HEADER + n * HOST_RECORD bytes. */
size_t gpuprof__io_trace_host_records(uint8_t *out, uint32_t id,
                                      const gpuprof__io_host_rec *r,
                                      uint32_t n);
/* A SAMPLE_RECORDS chunk of n samples (r[i] as the reader gives them:
 * start_ns the time, end_ns the value, corr the metric): out holds
 * CHUNK_HEADER + n * CORR_RECORD bytes. */
size_t gpuprof__io_trace_sample_records(uint8_t *out,
                                        const gpuprof__io_trace_rec *r,
                                        uint32_t n);
/* A THREAD chunk (at most CHUNK_HEADER + 16 + 64 bytes); returns bytes. */
size_t gpuprof__io_trace_thread_chunk(uint8_t *out, uint32_t seq, uint64_t tid,
                                      const char *name);

/* A MERGED chunk of n entries (n <= GPUPROF_IO_TRACE_MAX_MERGED): thread
 * seq's nodes first .. first + n - 1 are the merged state's map[0..n);
 * out holds CHUNK_HEADER + 8 + 4 * n bytes. Returns the bytes. */
size_t gpuprof__io_trace_merged_chunk(uint8_t *out, uint32_t seq,
                                      uint32_t first, const uint32_t *map,
                                      uint32_t n);
/* Where thread seq's node went when the thread was merged: the merged
 * state's node; UINT32_MAX when the trace says nothing of it. */
uint32_t gpuprof__io_trace_merged_node(const gpuprof__io_trace *t,
                                       uint32_t seq, uint32_t node);

/* Reads and validates a whole trace. A bad file header is an error
 * (GPUPROF_IO_ERR_FORMAT / _VERSION with a message); a chunk that is torn
 * or damaged ends the readable part: it and everything after are counted
 * in ignored_bytes with the reason, and what came before is returned.
 * Never reads outside buf[0..size). */
int gpuprof__io_trace_decode(const uint8_t *buf, size_t size,
                             gpuprof__io_trace **out, char *err,
                             size_t errsize);
int gpuprof__io_trace_read_file(const char *path, gpuprof__io_trace **out,
                                char *err, size_t errsize);
/* Sorts every stream's records (and every op stream's, every sample
 * stream's) by start, then end, then context, then correlation id; MPI
 * records by start, then end (the records of one call keep their order);
 * host records by start, then end, then op. */
void gpuprof__io_trace_sort(gpuprof__io_trace *t);
void gpuprof__io_trace_free(gpuprof__io_trace *t);

#endif /* GPUPROF_IO_TRACE_H */
