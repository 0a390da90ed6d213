/*
 * check_host.c - the host layer's shared parts (lib/host/host.c) and the
 * core's thread-start hook point, white-box (the pthread interposition
 * itself is libgpuprof.so's: tests/scripts/host-deps.sh runs programs
 * linked with it and preloaded):
 *   - host records reach the calling thread's trace with every field as
 *     given, per thread, across chunks; nothing without tracing;
 *   - a thread's begin and end (the trampoline's calls) record START with
 *     its creation number and EXIT, and register the thread at its start;
 *   - thread-start hooks run once on each thread the core registers, on
 *     that thread, and not for threads registered before they were added;
 *   - call sites: the runtimes by name (PoCL, CUDA, MPI, libomp, the C
 *     library, libgpuprof), the program and the C++ library are the
 *     program's; an address in this program is, one in the C library not;
 *   - the waiters' table counts per object.
 */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/trace.h"
#include "host/host.h"
#include "io/trace.h"
#include "support/suite.h"

static char outdir[512];

static void start(int trace)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/host.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = "none";
    o.signals = 0;
    o.trace = trace;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

/* Finalizes and reads the trace back. */
static gpuprof__io_trace *stop(void)
{
    char prof[1024], trace[1024], err[256];
    ck_assert_int_eq(gpuprof_output_path(prof, sizeof(prof)), GPUPROF_OK);
    snprintf(trace, sizeof(trace), "%s", prof);
    strcpy(strrchr(trace, '.'), ".gptrace");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    gpuprof__io_trace_sort(t);
    return t;
}

enum { H = 2500 }; /* more than two chunks' worth (1024) */

static void *recorder(void *arg)
{
    uint64_t k = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < H; i++) {
        uint64_t t0 = 1000000 * k + 10 * i; /* ticks are ns: monotonic */
        gpuprof__host_record(1 + (uint32_t)(i % 13), (uint32_t)(i % 4), t0,
                             t0 + (i % 3), 0x1000 * k + i, i ^ k);
        if (i % 100 == 0) { /* other items on the channel between */
            gpuprof_region_begin("r");
            gpuprof_region_end("r");
        }
    }
    return NULL;
}

START_TEST(records_exact)
{
    start(1);
    pthread_t th[2];
    for (uintptr_t k = 0; k < 2; k++)
        pthread_create(&th[k], NULL, recorder, (void *)(k + 1));
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    gpuprof__io_trace *t = stop();
    ck_assert_uint_eq(t->host_count, 2); /* main recorded none */
    for (uint32_t m = 0; m < 2; m++) {
        const gpuprof__io_trace_host *x = &t->host[m];
        ck_assert_uint_eq(x->count, H);
        uint64_t k = x->recs[0].object / 0x1000;
        ck_assert(k == 1 || k == 2);
        for (uint64_t i = 0; i < H; i++) {
            const gpuprof__io_host_rec *r = &x->recs[i];
            ck_assert_uint_eq(r->start_ns, 1000000 * k + 10 * i);
            ck_assert_uint_eq(r->end_ns, r->start_ns + i % 3);
            ck_assert_uint_eq(r->object, 0x1000 * k + i);
            ck_assert_uint_eq(r->aux, i ^ k);
            ck_assert_uint_eq(r->op, 1 + i % 13);
            ck_assert_uint_eq(r->flags, i % 4);
        }
    }
    gpuprof__io_trace_free(t);
}
END_TEST

START_TEST(nothing_untraced)
{
    start(0);
    ck_assert(!gpuprof__host_recording());
    gpuprof__host_record(GPUPROF_IO_HOST_JOIN, 0, 1, 2, 3, 4);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert(!gpuprof__host_recording());
}
END_TEST

/* Thread-start hooks and the trampoline's begin and end. */
static _Atomic int hooked;
static _Thread_local int hooked_here;
static void hook(gp_thread *t)
{
    ck_assert_ptr_eq(t, gpuprof__tls_self); /* on the thread, state set */
    atomic_fetch_add(&hooked, 1);
    hooked_here++;
}

static void *trampolined(void *arg)
{
    gpuprof__host_thread_begins((uint64_t)(uintptr_t)arg);
    ck_assert_ptr_nonnull(gpuprof__tls_self); /* registered at its start */
    ck_assert_int_eq(hooked_here, 1);
    gpuprof_region_begin("later"); /* no second registration */
    gpuprof_region_end("later");
    ck_assert_int_eq(hooked_here, 1);
    gpuprof__host_thread_ends();
    return NULL;
}

START_TEST(thread_start_hook)
{
    start(1);
    gpuprof_region_begin("main first"); /* main: registered before */
    gpuprof_region_end("main first");
    ck_assert(gpuprof__thread_hook_add(hook));
    ck_assert(gpuprof__thread_hook_add(hook)); /* once */
    pthread_t th[3];
    for (uintptr_t k = 0; k < 3; k++)
        pthread_create(&th[k], NULL, trampolined, (void *)(40 + k));
    for (int k = 0; k < 3; k++)
        pthread_join(th[k], NULL);
    ck_assert_int_eq(atomic_load(&hooked), 3); /* not main */
    gpuprof__io_trace *t = stop();
    ck_assert_uint_eq(t->host_count, 3);
    uint64_t seen = 0;
    for (uint32_t m = 0; m < 3; m++) {
        const gpuprof__io_trace_host *x = &t->host[m];
        ck_assert_uint_eq(x->count, 2);
        ck_assert_uint_eq(x->recs[0].op, GPUPROF_IO_HOST_START);
        ck_assert_uint_eq(x->recs[1].op, GPUPROF_IO_HOST_EXIT);
        ck_assert_uint_eq(x->recs[0].object, x->recs[1].object); /* its id */
        ck_assert_uint_eq(x->recs[0].start_ns, x->recs[0].end_ns);
        ck_assert_uint_le(x->recs[0].start_ns, x->recs[1].start_ns);
        seen |= 1ull << (x->recs[0].aux - 40);
    }
    ck_assert_uint_eq(seen, 7); /* creations 40, 41, 42 */
    gpuprof__io_trace_free(t);
}
END_TEST

START_TEST(call_sites)
{
    static const char *const runtime[] = {
        "/usr/lib/x86_64-linux-gnu/libpocl.so.2",
        "/usr/lib/x86_64-linux-gnu/pocl/libpocl-devices-pthread.so",
        "libcuda.so.1", "/usr/local/cuda/lib64/libcudart.so.13",
        "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
        "/usr/lib/llvm-14/lib/libomp.so.5", "libgomp.so.1",
        "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
        "build/lib/libgpuprof.so.0", "libOpenCL.so.1", "libze_loader.so.1",
        "/usr/lib/x86_64-linux-gnu/libtsan.so.2"};
    for (size_t i = 0; i < sizeof(runtime) / sizeof(*runtime); i++)
        ck_assert_msg(gpuprof__host_runtime_name(runtime[i]), "%s", runtime[i]);
    static const char *const program[] = {
        "", "/usr/bin/app", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/opt/app/libsolver.so", "/usr/lib/libpython3.11.so.1.0"};
    for (size_t i = 0; i < sizeof(program) / sizeof(*program); i++)
        ck_assert_msg(!gpuprof__host_runtime_name(program[i]), "%s",
                      program[i]);
    /* This program (twice: the second from the cache), and the C
     * library's own printf (not a sanitizer's stand-in). */
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    ck_assert_ptr_nonnull(libc);
    const void *pf = dlsym(libc, "printf");
    ck_assert_ptr_nonnull(pf);
    ck_assert(gpuprof__host_user_site((const void *)stop));
    ck_assert(gpuprof__host_user_site((const void *)stop));
    ck_assert(!gpuprof__host_user_site(pf));
    ck_assert(!gpuprof__host_user_site(pf));
    dlclose(libc);
}
END_TEST

START_TEST(waiters)
{
    int a, b;
    ck_assert(!gpuprof__host_waited(&a));
    gpuprof__host_wait_begin(&a);
    gpuprof__host_wait_begin(&a);
    ck_assert(gpuprof__host_waited(&a));
    ck_assert(gpuprof__host_slot(&a) == gpuprof__host_slot(&b) ||
              !gpuprof__host_waited(&b));
    gpuprof__host_wait_end(&a);
    ck_assert(gpuprof__host_waited(&a));
    gpuprof__host_wait_end(&a);
    ck_assert(!gpuprof__host_waited(&a));
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"records_exact", records_exact, 60},
        {"nothing_untraced", nothing_untraced, 30},
        {"thread_start_hook", thread_start_hook, 60},
        {"call_sites", call_sites, 30},
        {"waiters", waiters, 10},
    };
    return RUN_SUITE("host", cases);
}
