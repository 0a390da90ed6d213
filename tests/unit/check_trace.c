/*
 * check_trace.c - tracing end to end (GPUPROF_TRACE): with 1 and 3 tracing
 * threads, every simulated activity is in the trace exactly once on its
 * stream with its exact duration, and its context names the placeholder of
 * the launching thread in the profile; every closed region is a CPU record
 * whose context is the region's node; streams sorted by start do not
 * overlap (each stream runs in order on the simulator's clock); a flush makes
 * everything so far readable while the run goes on. Operation records: each
 * launch is one record on its thread (its placeholder, its correlation id),
 * and each device record finds exactly its launch by correlation id, also
 * for graph launches (several device records, one launch) spread over
 * several streams. MPI events (gpuprof_be_mpi_event, two channel items
 * each): every field back as given, per thread, across chunks; invalid
 * ones refused and not recorded.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/sim/sim.h"
#include "gpuprof_backend.h"
#include "core/internal.h"
#include "core/trace.h"
#include "io/io.h"
#include "io/trace.h"
#include "support/suite.h"

enum { T = 3, N = 200, S = 3 };
static char outdir[512];

static void start(int tthreads)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/trace.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gp_sim_config sc = {S, 32, 3, 300, false, false};
    ck_assert_int_eq(gpuprof__sim_register(&sc), GPUPROF_OK);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "sim";
    o.cpu_sampling = "off"; /* threads counted exactly */
    o.signals = 0;
    o.trace = 1;
    o.trace_threads = tthreads;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert(gpuprof__trace_on());
}

static void paths(char *prof, char *trace, size_t n)
{
    ck_assert_int_eq(gpuprof_output_path(prof, n), GPUPROF_OK);
    snprintf(trace, n, "%s", prof);
    char *dot = strrchr(trace, '.');
    ck_assert_ptr_nonnull(dot);
    strcpy(dot, ".gptrace");
}

static uint64_t dur(int k, int i) { return 100 + (uint64_t)(k * N + i); }

static void *worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < N; i++) {
        gpuprof_region_begin("step");
        gpuprof__sim_kernel((unsigned)(i % S), "tk", dur(k, i));
        gpuprof_region_end("step");
    }
    return NULL;
}

static void run_and_check(int tthreads)
{
    start(tthreads);
    pthread_t th[T];
    for (int k = 0; k < T; k++)
        pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
    for (int k = 0; k < T; k++)
        pthread_join(th[k], NULL);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    char prof[1024], trace[1024], err[256];
    paths(prof, trace, sizeof(prof));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = NULL;
    ck_assert_msg(!gpuprof__io_read_file(prof, &p, err, sizeof(err)), "%s", err);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    ck_assert_uint_eq(t->ignored_bytes, 0);
    gpuprof__io_trace_sort(t);
    /* Every duration once, on GPU streams; no overlap within a stream. */
    uint64_t want = 0, got = 0, gpu_recs = 0, cpu_recs = 0;
    for (int k = 0; k < T; k++)
        for (int i = 0; i < N; i++)
            want += dur(k, i);
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *s = &t->streams[i];
        for (uint64_t j = 0; j < s->count; j++) {
            const gpuprof__io_trace_rec *r = &s->recs[j];
            ck_assert_uint_ge(r->end_ns, r->start_ns);
            uint32_t seq = (uint32_t)(r->context >> 32);
            uint32_t node = (uint32_t)r->context;
            /* The context's thread, through the THREAD chunks, by tid. */
            const gpuprof__io_thread *pt = NULL;
            for (uint32_t a = 0; a < t->thread_count; a++)
                if (t->threads[a].seq == seq)
                    for (uint32_t b = 0; b < p->thread_count; b++)
                        if (p->threads[b].tid == t->threads[a].tid)
                            pt = &p->threads[b];
            ck_assert_ptr_nonnull(pt);
            ck_assert_uint_lt(node, pt->node_count);
            const gpuprof__io_node *n = &p->nodes[pt->first_node + node];
            if (s->gpu) {
                got += r->end_ns - r->start_ns;
                gpu_recs++;
                ck_assert_int_eq(n->kind, GPUPROF_IO_NODE_GPU_OP);
                ck_assert_uint_eq(n->key_a, GPUPROF_OP_KERNEL);
                if (j)
                    ck_assert_uint_ge(r->start_ns, s->recs[j - 1].end_ns);
            } else {
                cpu_recs++;
                ck_assert_int_eq(n->kind, GPUPROF_IO_NODE_REGION);
                ck_assert_str_eq(gpuprof__io_str(p, n->key_a), "step");
            }
        }
    }
    ck_assert_uint_eq(gpu_recs, T * N);
    ck_assert_uint_eq(got, want);
    ck_assert_uint_eq(cpu_recs, T * N);
    ck_assert_uint_eq(t->thread_count, T + 1); /* and main (its sync) */
    ck_assert_uint_eq(gpuprof__trace_dropped(), 0);
    gpuprof__io_trace_free(t);
    gpuprof__io_profile_free(p);
}

START_TEST(one_tracing_thread) { run_and_check(1); }
END_TEST

START_TEST(three_tracing_threads) { run_and_check(3); }
END_TEST

/* A flush makes everything so far readable while tracing goes on. */
START_TEST(flush_mid_run)
{
    start(2);
    for (int i = 0; i < 50; i++) {
        gpuprof_region_begin("a");
        gpuprof__sim_kernel(0, "k", 10);
        gpuprof_region_end("a");
    }
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    char prof[1024], trace[1024], err[256];
    paths(prof, trace, sizeof(prof));
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    uint64_t gpu = 0, cpu = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        *(t->streams[i].gpu ? &gpu : &cpu) += t->streams[i].count;
    ck_assert_uint_eq(gpu, 50);
    ck_assert_uint_eq(cpu, 50);
    gpuprof__io_trace_free(t);
    gpuprof_region_begin("b");
    gpuprof_region_end("b");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    cpu = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        cpu += t->streams[i].gpu ? 0 : t->streams[i].count;
    ck_assert_uint_eq(cpu, 51);
    gpuprof__io_trace_free(t);
}
END_TEST

/* A thread's launches: kernels on its own stream, and graph launches of
 * two kernels on the next stream (GPUPROF_ACTIVITY_MORE), beneath a region. */
enum { L = 40 };
static void *launcher(void *arg)
{
    int k = (int)(intptr_t)arg;
    const char *names[2] = {"ga", "gb"};
    for (int i = 0; i < L; i++) {
        gpuprof_region_begin("launches");
        if (i % 4 == 3) {
            const uint64_t d[2] = {50, 60};
            gpuprof__sim_graph((unsigned)(k + 1) % S, 2, names, d);
        } else {
            gpuprof__sim_kernel((unsigned)k % S, "lk", 10 + (uint64_t)i);
        }
        gpuprof_region_end("launches");
    }
    return NULL;
}

static int corr_cmp(const void *a, const void *b)
{
    const gpuprof__io_trace_rec *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

START_TEST(launches_match_by_correlation)
{
    start(2);
    pthread_t th[T];
    for (int k = 0; k < T; k++)
        pthread_create(&th[k], NULL, launcher, (void *)(intptr_t)k);
    for (int k = 0; k < T; k++)
        pthread_join(th[k], NULL);
    ck_assert_int_eq(gpuprof__sim_sync(), GPUPROF_OK);
    char prof[1024], trace[1024], err[256];
    paths(prof, trace, sizeof(prof));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    ck_assert_uint_eq(t->minor, GPUPROF_IO_TRACE_MINOR);
    /* Every operation record: all launches, then main's sync; unique ids. */
    uint64_t nops = 0;
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        nops += t->ops[i].count;
    ck_assert_uint_eq(nops, T * L + 1);
    gpuprof__io_trace_rec *ops = malloc(nops * sizeof(*ops));
    ck_assert_ptr_nonnull(ops);
    uint64_t k = 0;
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        for (uint64_t j = 0; j < t->ops[i].count; j++) {
            const gpuprof__io_trace_rec *r = &t->ops[i].recs[j];
            ck_assert_uint_ne(r->corr, 0);
            ck_assert_uint_eq(r->context >> 32, t->ops[i].id);
            ck_assert_uint_le(r->start_ns, r->end_ns);
            ops[k++] = *r;
        }
    qsort(ops, nops, sizeof(*ops), corr_cmp);
    for (uint64_t i = 1; i < nops; i++)
        ck_assert_uint_ne(ops[i].corr, ops[i - 1].corr);
    /* Every device record finds its launch: same thread and placeholder,
     * launched before it started; each launch ran 1 (kernel) or 2 (graph)
     * device records, the sync none. */
    uint32_t *ran = calloc(nops, sizeof(*ran));
    uint64_t dev = 0, graphs = 0;
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *s = &t->streams[i];
        if (!s->gpu)
            continue;
        for (uint64_t j = 0; j < s->count; j++) {
            const gpuprof__io_trace_rec *r = &s->recs[j];
            gpuprof__io_trace_rec *o =
                bsearch(r, ops, nops, sizeof(*ops), corr_cmp);
            ck_assert_ptr_nonnull(o);
            ck_assert_uint_eq(o->context, r->context);
            ck_assert_uint_ge(r->start_ns, o->start_ns);
            ran[o - ops]++;
            dev++;
            graphs += r->end_ns - r->start_ns >= 50;
        }
    }
    ck_assert_uint_eq(dev, T * (L - L / 4) + T * (L / 4) * 2);
    ck_assert_uint_eq(graphs, T * (L / 4) * 2);
    uint64_t ones = 0, twos = 0, zeros = 0;
    for (uint64_t i = 0; i < nops; i++)
        *(ran[i] == 0 ? &zeros : ran[i] == 1 ? &ones : &twos) += 1;
    ck_assert_uint_eq(zeros, 1);
    ck_assert_uint_eq(ones, T * (L - L / 4));
    ck_assert_uint_eq(twos, T * (L / 4));
    ck_assert_uint_eq(gpuprof__trace_dropped(), 0);
    free(ran);
    free(ops);
    gpuprof__io_trace_free(t);
}
END_TEST

/* Streams opened while the tracing threads write: each of W threads opens
 * its stream (its first region), then a flush writes every stream's THREAD
 * chunk (tid, name) before any record of it arrived. The threads tell the
 * flusher through relaxed atomics only (and open their regions by handle,
 * taking no lock), so nothing but the stream's own
 * publication orders its fields before the tracing thread reads them: the
 * TSan build reports a race if they are set after the stream is linked.
 * (The flush is the trace's alone: a profile flush would read the threads'
 * trees, which they publish after their streams.) */
enum { W = 200 };
static atomic_uint opened, flushed;
static gpuprof_region open_region; /* a handle: no lock on the way */

static void nap(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

static void *opener(void *arg)
{
    char name[32];
    snprintf(name, sizeof(name), "w%d", (int)(intptr_t)arg);
    gpuprof_thread_set_name(name);
    gpuprof_region_begin_handle(open_region); /* its state and stream */
    atomic_fetch_add_explicit(&opened, 1, memory_order_relaxed);
    while (!atomic_load_explicit(&flushed, memory_order_relaxed))
        nap();
    gpuprof_region_end_handle(open_region);
    return NULL;
}

START_TEST(streams_opened_while_flushing)
{
    start(3);
    ck_assert_int_eq(gpuprof_region_register("open", &open_region),
                     GPUPROF_OK);
    static pthread_t th[W];
    for (int k = 0; k < W; k++)
        ck_assert_int_eq(
            pthread_create(&th[k], NULL, opener, (void *)(intptr_t)k), 0);
    while (atomic_load_explicit(&opened, memory_order_relaxed) < W)
        nap();
    gpuprof__trace_flush(); /* the trace only: no profile read */
    atomic_store_explicit(&flushed, 1, memory_order_relaxed);
    for (int k = 0; k < W; k++)
        pthread_join(th[k], NULL);
    char prof[1024], trace[1024], err[256];
    paths(prof, trace, sizeof(prof));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = NULL;
    ck_assert_msg(!gpuprof__io_read_file(prof, &p, err, sizeof(err)), "%s", err);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    /* Every worker's THREAD chunk: its name, and the tid the profile has
     * for that name; one region record each. */
    ck_assert_uint_eq(t->thread_count, W); /* main has no state */
    static int seen[W];
    for (uint32_t a = 0; a < t->thread_count; a++) {
        int k = -1;
        if (sscanf(t->threads[a].name, "w%d", &k) != 1)
            continue;
        ck_assert(k >= 0 && k < W && !seen[k]);
        seen[k] = 1;
        int found = 0;
        for (uint32_t b = 0; b < p->thread_count; b++)
            if (p->threads[b].tid == t->threads[a].tid) {
                ck_assert_str_eq(gpuprof__io_str(p, p->threads[b].name),
                                 t->threads[a].name);
                found++;
            }
        ck_assert_int_eq(found, 1);
    }
    for (int k = 0; k < W; k++)
        ck_assert_int_eq(seen[k], 1);
    uint64_t cpu = 0;
    for (uint32_t i = 0; i < t->stream_count; i++)
        cpu += t->streams[i].gpu ? 0 : t->streams[i].count;
    ck_assert_uint_eq(cpu, W);
    ck_assert_uint_eq(gpuprof__trace_dropped(), 0);
    gpuprof__io_trace_free(t);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Thread k's MPI event i: fields that say who it is. */
enum { M = 1500 }; /* more than one chunk's worth (1024) */
static gpuprof_mpi_event mpi_ev(int k, int i)
{
    gpuprof_mpi_event e = GPUPROF_MPI_EVENT_INIT;
    static const uint32_t ops[] = {GPUPROF_MPI_SEND, GPUPROF_MPI_ISEND,
                                   GPUPROF_MPI_WAIT, GPUPROF_MPI_BARRIER};
    e.op = ops[i % 4];
    e.comm = i % 7 == 0 ? 0xFFFFFFFFu : (uint32_t)k;
    e.peer = i % 5 == 0 ? -1 : i;
    e.tag = i % 3 == 0 ? -1 : 3 * i;
    e.bytes = 7ull * (uint64_t)i + ((uint64_t)k << 40);
    e.request = e.op == GPUPROF_MPI_ISEND || e.op == GPUPROF_MPI_WAIT
                    ? (uint64_t)i + 1
                    : 0;
    e.aux = (uint64_t)i << 32 | (uint32_t)k;
    e.start_ns = 1000000ull * (uint64_t)k + 10ull * (uint64_t)i;
    e.end_ns = e.start_ns + 5;
    return e;
}

static void *mpi_thread(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < M; i++) {
        gpuprof_mpi_event e = mpi_ev(k, i);
        ck_assert_int_eq(gpuprof_be_mpi_event(&e), GPUPROF_OK);
        if (i % 100 == 0) { /* regions between: other items on the channel */
            gpuprof_region_begin("r");
            gpuprof_region_end("r");
        }
    }
    return NULL;
}

START_TEST(mpi_events)
{
    start(2);
    gpuprof_mpi_event bad[5];
    for (int j = 0; j < 5; j++)
        bad[j] = mpi_ev(0, 1); /* an ISEND */
    bad[0].op = 0;
    bad[1].op = GPUPROF_MPI_OP_LAST + 1;
    bad[2].end_ns = bad[2].start_ns - 1;
    bad[3].request = 0;
    bad[4].size = sizeof(gpuprof_mpi_event) - 8;
    for (int j = 0; j < 5; j++)
        ck_assert_int_eq(gpuprof_be_mpi_event(&bad[j]), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_be_mpi_event(NULL), GPUPROF_E_INVALID);
    pthread_t th[2];
    for (int k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, mpi_thread, (void *)(intptr_t)(k + 1));
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    char prof[1024], trace[1024], err[256];
    paths(prof, trace, sizeof(prof));
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    ck_assert_uint_eq(t->minor, 5);
    ck_assert_uint_eq(t->mpi_count, 2); /* the main thread recorded none */
    for (uint32_t m = 0; m < t->mpi_count; m++) {
        const gpuprof__io_trace_mpi *x = &t->mpi[m];
        ck_assert_uint_eq(x->count, M);
        int k = (int)(x->recs[0].aux & 0xFFFFFFFFu);
        ck_assert(k == 1 || k == 2);
        for (int i = 0; i < M; i++) {
            gpuprof_mpi_event e = mpi_ev(k, i);
            const gpuprof__io_mpi_rec *r = &x->recs[i];
            ck_assert_uint_eq(r->start_ns, e.start_ns);
            ck_assert_uint_eq(r->end_ns, e.end_ns);
            ck_assert_uint_eq(r->bytes, e.bytes);
            ck_assert_uint_eq(r->request, e.request);
            ck_assert_uint_eq(r->aux, e.aux);
            ck_assert_uint_eq(r->comm, e.comm);
            ck_assert_int_eq(r->peer, e.peer);
            ck_assert_int_eq(r->tag, e.tag);
            ck_assert_uint_eq(r->op, e.op);
            ck_assert_uint_eq(r->flags, 0);
        }
    }
    gpuprof__io_trace_free(t);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"mpi_events", mpi_events, 60},
        {"one_tracing_thread", one_tracing_thread, 60},
        {"three_tracing_threads", three_tracing_threads, 60},
        {"flush_mid_run", flush_mid_run, 60},
        {"launches_match_by_correlation", launches_match_by_correlation, 60},
        {"streams_opened_while_flushing", streams_opened_while_flushing, 120},
    };
    return RUN_SUITE("trace", cases);
}
