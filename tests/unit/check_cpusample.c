/*
 * check_cpusample.c - CPU samples (GPUPROF_CPU_SAMPLING, core/sampler.c,
 * core/cpusample.c) measured through the library and read back: counts
 * and times against the thread's own CPU clock within a bound derived
 * from the period, samples beneath the region that was open, wall-clock
 * samples of a blocked thread, a program's own SIGPROF handler and
 * ITIMER_PROF still served, timers of 1000 threads all deleted, a forked
 * child's timer, nothing while paused, and the trace's sample records
 * inside their thread's lifetime.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/sampler.h"
#include "io/trace.h"
#include "support/busy.h"
#include "support/readback.h"
#include "support/suite.h"

static char outdir[512];

static void start(const char *setting, int trace)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/cpus.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "none";
    o.signals = 0;
    o.trace = trace;
    o.cpu_sampling = setting;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Metric m summed over thread ti's nodes; beneath_region: only nodes
 * beneath a region of that name. */
static uint64_t sum(const gpuprof__io_profile *p, uint32_t ti, const char *m,
                    const char *beneath_region)
{
    const gpuprof__io_thread *t = &p->threads[ti];
    uint64_t s = 0;
    for (uint32_t i = 0; i < t->node_count; i++) {
        bool in = !beneath_region;
        for (uint32_t a = i; !in && a != 0 && a < t->node_count;
             a = p->nodes[t->first_node + a].parent) {
            const gpuprof__io_node *n = &p->nodes[t->first_node + a];
            in = n->kind == GPUPROF_IO_NODE_REGION &&
                 !strcmp(gpuprof__io_str(p, n->key_a), beneath_region);
        }
        if (in)
            s += rb_val(p, t->first_node + i, m);
    }
    return s;
}

static uint64_t sum_all(const gpuprof__io_profile *p, const char *m)
{
    uint64_t s = 0;
    for (uint32_t ti = 0; ti < p->thread_count; ti++)
        s += sum(p, ti, m, NULL);
    return s;
}

/* The profile's thread whose OS id is tid. */
static uint32_t thread_of(const gpuprof__io_profile *p, uint64_t tid)
{
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].tid == tid)
            return i;
    ck_abort_msg("no thread %llu", (unsigned long long)tid);
    return 0;
}

static uint64_t my_tid(void) { return (uint64_t)syscall(SYS_gettid); }

/* A thread that burns 300 ms of CPU in region "burn" at cputime@5ms: its
 * samples' values (each the CPU time since the one before) add up to its
 * CPU time used while armed, but what came after its last (a period, and
 * the delivery); its expirations to no more; every sample taken in the
 * region sits beneath it. */
START_TEST(cputime_counts_and_regions)
{
    enum { PERIOD = 5000000, BURN = 300000000 };
    start("cputime@5ms", 0);
    uint64_t c0 = thread_cpu_ns();
    gpuprof_region_begin("burn");
    busy_cpu(BURN);
    gpuprof_region_end("burn");
    uint64_t used = thread_cpu_ns() - c0;
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    uint32_t ti = thread_of(p, my_tid());
    uint64_t n = sum(p, ti, "cpu.samples", NULL);
    uint64_t ns = sum(p, ti, "cpu.time", NULL);
    /* each sample weighs the CPU time since the one before: the total is
     * the thread's, but the time after its last sample (under a period
     * and its delivery), and the expirations at most that */
    ck_assert_msg(ns + 2 * PERIOD >= used && ns <= used + PERIOD,
                  "cpu.time %llu for %llu ns", (unsigned long long)ns,
                  (unsigned long long)used);
    ck_assert_msg(n * PERIOD <= used + 2 * PERIOD && n >= 1,
                  "%llu samples for %llu ns", (unsigned long long)n,
                  (unsigned long long)used);
    uint64_t in = sum(p, ti, "cpu.time", "burn");
    ck_assert_uint_ge(in + 2 * PERIOD, BURN);
    ck_assert_uint_le(in, ns);
    ck_assert_uint_le(sum(p, ti, "cpu.samples", "burn"), n);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Finalize counts the time since the finalizing thread's last signal:
 * 250 ms burned at cputime@100ms make two or three samples, and the rest
 * (up to a period) goes where the last one went, beneath the region. */
START_TEST(finalize_counts_last_interval)
{
    enum { PERIOD = 100000000, BURN = 250000000 };
    start("cputime@100ms", 0);
    uint64_t c0 = thread_cpu_ns();
    gpuprof_region_begin("burn");
    busy_cpu(BURN);
    uint64_t used = thread_cpu_ns() - c0;
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK); /* region still open */
    gpuprof__io_profile *p = rb_load();
    uint32_t ti = thread_of(p, my_tid());
    uint64_t in = sum(p, ti, "cpu.time", "burn");
    uint64_t ns = sum(p, ti, "cpu.time", NULL);
    /* the whole burn, less a tick at most (4 ms at 250 Hz), and no more
     * than the CPU time up to finalize */
    ck_assert_msg(in + 5000000 >= used, "cpu.time %llu in the region for "
                  "%llu ns burned", (unsigned long long)in,
                  (unsigned long long)used);
    ck_assert_uint_le(ns, used + PERIOD / 10);
    ck_assert_uint_ge(sum(p, ti, "cpu.samples", "burn"), 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* A thread blocked 300 ms in nanosleep at realtime@5ms: wall-clock
 * samples keep coming (about 60), while CPU-time samples barely do. The
 * region's samples are at most its wall time in periods, plus one for the
 * expiry pending at its start and one for a late delivery's overrun (a
 * loaded machine sleeps longer than asked: the bound is what it took). */
START_TEST(realtime_sees_blocked_thread)
{
    start("realtime@5ms,cputime@5ms", 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    gpuprof_region_begin("sleep");
    struct timespec ts = {0, 300000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
    gpuprof_region_end("sleep");
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t took = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
                    (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    uint32_t ti = thread_of(p, my_tid());
    uint64_t w = sum(p, ti, "cpu.wall_samples", "sleep");
    ck_assert_uint_ge(w, 40); /* 60 expected; scheduling delays merge */
    ck_assert_uint_le(w, took / 5000000 + 2);
    /* wall time since each previous sample: the sleep's, within the
     * period before its first sample and after its last */
    uint64_t wall = sum(p, ti, "cpu.wall", "sleep");
    ck_assert_msg(wall <= took + 5000000ull && wall + 10000000ull >= took,
                  "cpu.wall %llu in a %llu ns sleep",
                  (unsigned long long)wall, (unsigned long long)took);
    ck_assert_uint_le(sum(p, ti, "cpu.samples", "sleep"), 2);
    gpuprof__io_profile_free(p);
}
END_TEST

/* The program's own SIGPROF handler and ITIMER_PROF: its signal stays its
 * own (ours is another), its handler runs as often as it would alone, and
 * the thread is still sampled. */
static volatile sig_atomic_t prof_hits;
static void on_prof(int sig) { (void)sig; prof_hits++; }

START_TEST(own_sigprof_and_itimer)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    ck_assert_int_eq(sigaction(SIGPROF, &sa, NULL), 0);
    start("cputime@5ms", 0);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    ck_assert_int_eq(setitimer(ITIMER_PROF, &it, NULL), 0);
    busy_cpu(200000000);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    ck_assert_int_ne(gpuprof__sampler_signal(), SIGPROF);
    struct sigaction now;
    sigaction(SIGPROF, NULL, &now);
    ck_assert_ptr_eq((void *)now.sa_handler, (void *)on_prof);
    /* 20 expected at 10 ms; a loaded machine merges pending SIGPROFs */
    ck_assert_int_ge(prof_hits, 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_ge(sum(p, thread_of(p, my_tid()), "cpu.samples", NULL),
                      30); /* 40 expected */
    gpuprof__io_profile_free(p);
}
END_TEST

/* 1000 threads, each known to the library (a region), created and joined
 * in turn: every exiting thread deletes its timers, so the process holds
 * the main thread's only, and none after finalize. */
static void *one_region(void *arg)
{
    (void)arg;
    gpuprof_region_begin("t");
    gpuprof_region_end("t");
    return NULL;
}

START_TEST(thousand_threads_no_timer_leak)
{
    start("cputime@5ms,realtime@50ms", 0);
    uint64_t base = gpuprof__sampler_timers();
    ck_assert_uint_eq(base, 2); /* this thread's two */
    for (int i = 0; i < 1000; i++) {
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, one_region, NULL), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
    }
    ck_assert_uint_eq(gpuprof__sampler_timers(), base);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof__sampler_timers(), 0);
}
END_TEST

/* POSIX timers are not inherited: a forked child arms its own and its
 * samples reach its own profile. */
START_TEST(fork_child_rearms)
{
    start("cputime@5ms", 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int rc = gpuprof__sampler_timers() == 1 ? 0 : 1;
        busy_cpu(100000000);
        gpuprof_finalize();
        char path[1024], err[256];
        gpuprof__io_profile *p = NULL;
        if (!rc && (gpuprof_output_path(path, sizeof(path)) != GPUPROF_OK ||
                    gpuprof__io_read_file(path, &p, err, sizeof(err))))
            rc = 2;
        if (!rc && sum_all(p, "cpu.samples") < 1) /* 20 expected */
            rc = 3;
        _exit(rc);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* Paused (gpuprof_stop) nothing is sampled; started again, it is. */
START_TEST(stop_start)
{
    start("cputime@5ms", 0);
    gpuprof_stop();
    gpuprof_region_begin("paused");
    busy_cpu(100000000);
    gpuprof_region_end("paused");
    gpuprof_start();
    gpuprof_region_begin("running");
    busy_cpu(100000000);
    gpuprof_region_end("running");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    uint32_t ti = thread_of(p, my_tid());
    ck_assert_uint_ge(sum(p, ti, "cpu.samples", "running"), 10);
    uint64_t all = sum(p, ti, "cpu.samples", NULL);
    ck_assert_uint_le(all - sum(p, ti, "cpu.samples", "running"), 2);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Traced, each sample is a SAMPLE_RECORDS record of its thread, its time
 * inside the thread's lifetime (the profile's first seen .. exit), its
 * value the CPU time since the one before, its metric cpu.time's, its
 * context a node of that
 * thread; their values add up to no more than the profile's cpu.time
 * of it (a tracing thread that lags drops records, counted). */
static _Atomic uint64_t worker_tid;
static void *traced_worker(void *arg)
{
    (void)arg;
    atomic_store(&worker_tid, my_tid());
    gpuprof_region_begin("w");
    busy_cpu(100000000);
    gpuprof_region_end("w");
    return NULL;
}

static uint32_t trace_seq(const gpuprof__io_trace *t, uint64_t tid)
{
    for (uint32_t i = 0; i < t->thread_count; i++)
        if (t->threads[i].tid == tid)
            return t->threads[i].seq;
    ck_abort_msg("no traced thread %llu", (unsigned long long)tid);
    return 0;
}

START_TEST(trace_records_in_lifetime)
{
    start("cputime@2ms", 1);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, traced_worker, NULL), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    char prof[1024], trace[1024], err[256];
    ck_assert_int_eq(gpuprof_output_path(prof, sizeof(prof)), GPUPROF_OK);
    snprintf(trace, sizeof(trace), "%s", prof);
    strcpy(strrchr(trace, '.'), ".gptrace");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = NULL;
    ck_assert_msg(!gpuprof__io_read_file(prof, &p, err, sizeof(err)), "%s",
                  err);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    gpuprof__io_trace_sort(t);
    uint32_t ti = thread_of(p, atomic_load(&worker_tid));
    uint32_t seq = trace_seq(t, atomic_load(&worker_tid));
    const gpuprof__io_thread *pt = &p->threads[ti];
    uint32_t metric = rb_metric(p, "cpu.time");
    uint64_t ns = sum(p, ti, "cpu.time", NULL), seen = 0, value = 0;
    for (uint32_t s = 0; s < t->sample_stream_count; s++) {
        const gpuprof__io_trace_stream *st = &t->samples[s];
        for (uint64_t k = 0; k < st->count; k++) {
            const gpuprof__io_trace_rec *r = &st->recs[k];
            if ((uint32_t)(r->context >> 32) != seq)
                continue;
            ck_assert_uint_eq(st->id, seq);
            ck_assert_uint_eq(r->corr, metric);
            /* the CPU time since the thread's previous sample */
            ck_assert_uint_gt(r->end_ns, 0);
            value += r->end_ns;
            ck_assert_uint_lt((uint32_t)r->context, pt->node_count);
            ck_assert_uint_ge(r->start_ns, pt->start_ns);
            ck_assert_uint_le(r->start_ns, pt->end_ns);
            seen++;
        }
    }
    ck_assert_uint_gt(seen, 0);
    /* The burn in the profile, all of it: each sample weighs the CPU time
     * since the one before, and the time after the last goes where that
     * one went at the thread's exit (counting expirations came 10-26 ms
     * short here on a loaded machine: the kernel delivers CPU-time
     * signals late and in bunches, and drops the one pending at exit). */
    ck_assert_uint_ge(ns, 100000000);
    ck_assert_uint_le(ns, 120000000);
    ck_assert_uint_ge(sum(p, ti, "cpu.time", "w"), 100000000);
    ck_assert_uint_le(value, ns); /* a loaded tracer may drop records */
    gpuprof__io_trace_free(t);
    gpuprof__io_profile_free(p);
}
END_TEST

/* A typo is one clear warning and the default, never a failed init. */
START_TEST(bad_setting_keeps_default)
{
    start("cputime@5parsecs", 0);
    ck_assert_uint_eq(gpuprof__sampler_period(GP_SRC_CPUTIME), 10000000);
    ck_assert_uint_eq(gpuprof__sampler_period(GP_SRC_REALTIME), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(setting_off)
{
    start("off", 0);
    ck_assert_uint_eq(gpuprof__sampler_period(GP_SRC_CPUTIME), 0);
    ck_assert_uint_eq(gpuprof__sampler_timers(), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

START_TEST(setting_both)
{
    start("realtime@250us,cputime@1s", 0);
    ck_assert_uint_eq(gpuprof__sampler_period(GP_SRC_CPUTIME), 1000000000);
    ck_assert_uint_eq(gpuprof__sampler_period(GP_SRC_REALTIME), 250000);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"cputime_counts_and_regions", cputime_counts_and_regions, 120},
        {"finalize_counts_last_interval", finalize_counts_last_interval,
         60},
        {"realtime_sees_blocked_thread", realtime_sees_blocked_thread, 120},
        {"own_sigprof_and_itimer", own_sigprof_and_itimer, 120},
        {"thousand_threads_no_timer_leak", thousand_threads_no_timer_leak,
         300},
        {"fork_child_rearms", fork_child_rearms, 120},
        {"stop_start", stop_start, 120},
        {"trace_records_in_lifetime", trace_records_in_lifetime, 120},
        {"bad_setting_keeps_default", bad_setting_keeps_default, 120},
        {"setting_off", setting_off, 60},
        {"setting_both", setting_both, 60},
    };
    return RUN_SUITE("cpusample", cases);
}
