/*
 * papi_case.h - what the PAPI backend's suites share: check_papi (the
 * fake libpapi, exact counts, on every machine) and check_papi_real (the
 * real libpapi against the thread's CPU time, where it can count). Header
 * only, for suites linked with the core; define _GNU_SOURCE first.
 *
 * The aids are built beside the suites (tests/tests.mk): libfakepapi.so
 * (tests/fakepapi/) and papi_probe (tests/tools/papi_probe.c).
 */
#ifndef GPUPROF_TEST_PAPI_CASE_H
#define GPUPROF_TEST_PAPI_CASE_H

#include <check.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpuprof.h"
#include "io/io.h"
#include "support/nodes.h"
#include "support/readback.h"

/* ---- the log --------------------------------------------------------- */
static char pc_log[16384];
static pthread_mutex_t pc_log_mu = PTHREAD_MUTEX_INITIALIZER;

static inline void pc_capture(gpuprof_log_level level, const char *msg,
                              void *user)
{
    (void)level;
    (void)user;
    pthread_mutex_lock(&pc_log_mu);
    size_t n = strlen(pc_log);
    snprintf(pc_log + n, sizeof(pc_log) - n, "%s\n", msg);
    pthread_mutex_unlock(&pc_log_mu);
}

/* Lines of the log that contain `s`. */
static inline int pc_lines_with(const char *s)
{
    int n = 0;
    for (const char *p = pc_log; (p = strstr(p, s)); p++) {
        n++;
        p = strchr(p, '\n');
        if (!p)
            break;
    }
    return n;
}

/* ---- starting -------------------------------------------------------- */
/* `name` in the directory of this program (the aids are built there). */
static inline void pc_beside(const char *name, char *out, size_t size)
{
    char exe[PATH_MAX];
    ck_assert_ptr_nonnull(realpath("/proc/self/exe", exe));
    snprintf(out, size, "%s/%s", dirname(exe), name);
}

/* gpuprof_init with these backends and GPUPROF_PAPI_EVENTS (NULL: unset),
 * the log captured, the output in a new directory under $TMPDIR. */
static inline void pc_start(const char *backends, const char *events)
{
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/check_papi-XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    if (events)
        setenv("GPUPROF_PAPI_EVENTS", events, 1);
    else
        unsetenv("GPUPROF_PAPI_EVENTS");
    pc_log[0] = '\0';
    gpuprof_set_log(pc_capture, NULL, GPUPROF_LOG_INFO);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.output_dir = dir;
    o.backends = backends;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}

/* ---- reading back ---------------------------------------------------- */
static inline uint64_t pc_tid(void) { return (uint64_t)syscall(SYS_gettid); }

/* The profile's thread whose OS id is `tid`. */
static inline const gpuprof__io_thread *pc_thread(const gpuprof__io_profile *p,
                                                  uint64_t tid)
{
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[i];
    ck_abort_msg("no thread %llu in the profile", (unsigned long long)tid);
    return NULL;
}

/* The region `name` beneath absolute node `parent` of thread t. */
static inline uint32_t pc_region(const gpuprof__io_profile *p,
                                 const gpuprof__io_thread *t, uint32_t parent,
                                 const char *name)
{
    uint32_t n = rb_child(p, t, parent, GPUPROF_IO_NODE_REGION, 0, name);
    ck_assert_msg(n != UINT32_MAX, "no region %s", name);
    return n;
}

/* The sum of metric `m` over the subtree of absolute node `top`. */
static inline uint64_t pc_incl(const gpuprof__io_profile *p,
                               const gpuprof__io_thread *t, uint32_t top,
                               const char *m)
{
    uint64_t s = rb_val(p, top, m);
    for (uint32_t i = top + 1; i < t->first_node + t->node_count; i++)
        for (uint32_t a = i; a != t->first_node;
             a = t->first_node + p->nodes[a].parent)
            if (t->first_node + p->nodes[a].parent == top) {
                s += rb_val(p, i, m);
                break;
            }
    return s;
}

/* Flushes, and returns metric m of the calling thread's top region `name`
 * in what was written. */
static inline uint64_t pc_flushed(const char *name, const char *m)
{
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    const gpuprof__io_thread *t = pc_thread(p, pc_tid());
    uint64_t v = rb_val(p, pc_region(p, t, t->first_node, name), m);
    gpuprof__io_profile_free(p);
    return v;
}

/* The calling context of an operation: the FRAME node its placeholder of
 * `kind` hangs beneath, below region `r` (exactly one). */
static inline uint32_t pc_op_context(const gpuprof__io_profile *p,
                                     const gpuprof__io_thread *t, uint32_t r,
                                     uint32_t kind)
{
    uint32_t ph[4];
    ck_assert_uint_eq(
        rb_find_below(p, t, r, GPUPROF_IO_NODE_GPU_OP, kind, ph, 4), 1);
    return t->first_node + p->nodes[ph[0]].parent;
}

#endif
