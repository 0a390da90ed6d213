/*
 * check_core.c - white-box tests of lib/core: the CCT, regions with exact
 * times (a fake clock), open and unbalanced regions, thread exit, handles,
 * depth overflow, fork, periodic flush, and flushes racing with measuring
 * threads (run under TSan by `make check`). Each test reads the profile back
 * through lib/io and asserts exact values.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/io.h"
#include "support/readback.h"
#include "support/suite.h"

static char outdir[512];

static int keep_threads = GPUPROF_UNSET;

static void start(int paused, int64_t period)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/core.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.start_paused = paused;
    o.flush_period_ms = period;
    o.backends = "none";
    o.cpu_sampling = "off"; /* threads counted exactly */
    o.keep_threads = keep_threads;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
}





/* The absolute node index of region path "a/b/c" in thread ti. */
static uint32_t find(const gpuprof__io_profile *p, uint32_t ti, const char *path)
{
    const gpuprof__io_thread *t = &p->threads[ti];
    uint32_t cur = 0; /* relative */
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save, *tok = strtok_r(buf, "/", &save); tok;
         tok = strtok_r(NULL, "/", &save)) {
        uint32_t next = GPUPROF_IO_NONE;
        for (uint32_t i = 1; i < t->node_count; i++) {
            const gpuprof__io_node *n = &p->nodes[t->first_node + i];
            if (n->parent == cur && n->kind == GPUPROF_IO_NODE_REGION &&
                !strcmp(gpuprof__io_str(p, n->key_a), tok))
                next = i;
        }
        ck_assert_msg(next != GPUPROF_IO_NONE, "no region %s in %s", tok, path);
        cur = next;
    }
    return t->first_node + cur;
}

static uint32_t thread_index(const gpuprof__io_profile *p, uint32_t flag)
{
    for (uint32_t i = 0; i < p->thread_count; i++)
        if (p->threads[i].flags & flag)
            return i;
    ck_abort_msg("no thread with flag %u", flag);
    return 0;
}

static void at(uint64_t ns) { gpuprof__clock_fake_set(ns); }

START_TEST(cct_children)
{
    gp_cct t;
    ck_assert(gpuprof__cct_init(&t));
    ck_assert_uint_eq(gp_load_relaxed(&t.count), 1);
    uint32_t a = gpuprof__cct_child(&t, 0, GPUPROF_IO_NODE_REGION, 7, 0, 0);
    uint32_t b = gpuprof__cct_child(&t, a, GPUPROF_IO_NODE_FRAME, 1, 99, UINT32_MAX);
    ck_assert_uint_eq(a, 1);
    ck_assert_uint_eq(b, 2);
    ck_assert_uint_eq(gpuprof__cct_child(&t, 0, GPUPROF_IO_NODE_REGION, 7, 0, 0), a);
    ck_assert_uint_eq(gpuprof__cct_child(&t, a, GPUPROF_IO_NODE_FRAME, 1, 99, 0), b);
    /* Same key under another parent, or another kind: new nodes. */
    ck_assert_uint_eq(gpuprof__cct_child(&t, b, GPUPROF_IO_NODE_REGION, 7, 0, 0), 3);
    ck_assert_uint_eq(gpuprof__cct_child(&t, 0, GPUPROF_IO_NODE_GPU_OP, 7, 0, UINT32_MAX), 4);
    /* Thousands of nodes across chunks and table growth keep their index. */
    for (uint32_t i = 0; i < 20000; i++)
        ck_assert_uint_eq(gpuprof__cct_child(&t, 1, GPUPROF_IO_NODE_FRAME, 2, i, UINT32_MAX), 5 + i);
    for (uint32_t i = 0; i < 20000; i += 997)
        ck_assert_uint_eq(gpuprof__cct_child(&t, 1, GPUPROF_IO_NODE_FRAME, 2, i, UINT32_MAX), 5 + i);
    gp_node *n = gp_cct_node(gp_load_relaxed(&t.dir), 5 + 12345);
    ck_assert_uint_eq(n->parent, 1);
    ck_assert_uint_eq(n->key_b, 12345);
    ck_assert_ptr_null(gp_load_relaxed(&n->blocks));
    ck_assert_ptr_nonnull(gpuprof__cct_block(&t, 5 + 12345, GPUPROF_IO_KIND_REGION));
    gpuprof__cct_destroy(&t);
}
END_TEST

START_TEST(region_exact_times)
{
    at(1000);
    start(0, 0);
    ck_assert_int_eq(gpuprof_region_begin("A"), GPUPROF_OK);
    at(1100);
    ck_assert_int_eq(gpuprof_region_begin("B"), GPUPROF_OK);
    at(1400);
    ck_assert_int_eq(gpuprof_region_end("B"), GPUPROF_OK);
    at(1500);
    ck_assert_int_eq(gpuprof_region_begin("B"), GPUPROF_OK);
    at(1600);
    ck_assert_int_eq(gpuprof_region_end("B"), GPUPROF_OK);
    at(2000);
    ck_assert_int_eq(gpuprof_region_end("A"), GPUPROF_OK);
    at(2500);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->thread_count, 1);
    ck_assert(p->flags & GPUPROF_IO_PROFILE_FINAL);
    ck_assert_uint_eq(p->start_ns, 1000);
    ck_assert_uint_eq(p->end_ns, 2500);
    uint32_t a = find(p, 0, "A"), b = find(p, 0, "A/B");
    ck_assert_uint_eq(rb_val(p, a, "region.visits"), 1);
    ck_assert_uint_eq(rb_val(p, a, "region.time.incl"), 1000);
    ck_assert_uint_eq(rb_val(p, a, "region.time.excl"), 600);
    ck_assert_uint_eq(rb_val(p, b, "region.visits"), 2);
    ck_assert_uint_eq(rb_val(p, b, "region.time.incl"), 400);
    ck_assert_uint_eq(rb_val(p, b, "region.time.excl"), 400);
    ck_assert_uint_eq(p->nodes[a].flags, 0);
    ck_assert_uint_eq(p->threads[0].node_count, 3); /* root, A, B */
    ck_assert_uint_eq(p->nodes[0].value_count, 0);  /* sparse: nothing */
    ck_assert_uint_eq(rb_counter(p, "regions.entered"), 3);
    gpuprof__io_profile_free(p);
}
END_TEST

START_TEST(open_regions_in_flush_and_finalize)
{
    at(0);
    start(0, 0);
    gpuprof_region_begin("outer");
    at(100);
    gpuprof_region_begin("inner");
    at(150);
    gpuprof_region_end("inner");
    at(200);
    gpuprof_region_begin("inner");
    at(500);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    uint32_t o = find(p, 0, "outer"), i = find(p, 0, "outer/inner");
    ck_assert_uint_eq(p->generation, 1);
    ck_assert(!(p->flags & GPUPROF_IO_PROFILE_FINAL));
    ck_assert_uint_eq(rb_val(p, o, "region.time.incl"), 500);
    ck_assert_uint_eq(rb_val(p, o, "region.time.excl"), 500 - 50 - 300);
    ck_assert_uint_eq(rb_val(p, i, "region.time.incl"), 50 + 300);
    ck_assert_uint_eq(rb_val(p, i, "region.time.excl"), 350);
    ck_assert(p->nodes[o].flags & GPUPROF_IO_NODE_OPEN);
    ck_assert(p->nodes[i].flags & GPUPROF_IO_NODE_OPEN);
    gpuprof__io_profile_free(p);
    /* The flush changed nothing live: closing now gives the full times. */
    at(700);
    gpuprof_region_end("inner");
    at(1000);
    gpuprof_region_end("outer");
    gpuprof_region_begin("left_open");
    at(1100);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    p = rb_load();
    o = find(p, 0, "outer");
    i = find(p, 0, "outer/inner");
    ck_assert_uint_eq(p->generation, 2);
    ck_assert_uint_eq(rb_val(p, o, "region.time.incl"), 1000);
    ck_assert_uint_eq(rb_val(p, i, "region.time.incl"), 550);
    ck_assert_uint_eq(rb_val(p, o, "region.time.excl"), 450);
    ck_assert_uint_eq(p->nodes[o].flags, 0);
    uint32_t l = find(p, 0, "left_open");
    ck_assert_uint_eq(p->nodes[l].flags, GPUPROF_IO_NODE_OPEN);
    ck_assert_uint_eq(rb_val(p, l, "region.time.incl"), 100);
    ck_assert_uint_eq(rb_counter(p, "regions.open_at_finalize"), 1);
    gpuprof__io_profile_free(p);
}
END_TEST

START_TEST(unbalanced_end)
{
    at(0);
    start(0, 0);
    gpuprof_region_begin("A");
    gpuprof_region_begin("B");
    gpuprof_region_begin("C");
    at(10);
    ck_assert_int_eq(gpuprof_region_end("nope"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("A"), GPUPROF_E_UNBALANCED);
    ck_assert_int_eq(gpuprof_region_end("A"), GPUPROF_E_UNBALANCED);
    uint64_t v;
    ck_assert_int_eq(gpuprof_stat_get("regions.unbalanced", &v), GPUPROF_OK);
    ck_assert_uint_eq(v, 3);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->nodes[find(p, 0, "A")].flags, 0);
    ck_assert_uint_eq(p->nodes[find(p, 0, "A/B")].flags, GPUPROF_IO_NODE_UNBALANCED);
    ck_assert_uint_eq(p->nodes[find(p, 0, "A/B/C")].flags, GPUPROF_IO_NODE_UNBALANCED);
    ck_assert_uint_eq(rb_val(p, find(p, 0, "A/B/C"), "region.time.incl"), 10);
    ck_assert_uint_eq(rb_val(p, find(p, 0, "A"), "region.time.incl"), 10);
    ck_assert_uint_eq(rb_val(p, find(p, 0, "A"), "region.time.excl"), 0);
    ck_assert_uint_eq(rb_counter(p, "regions.open_at_finalize"), 0);
    gpuprof__io_profile_free(p);
}
END_TEST

static void *worker(void *arg)
{
    gpuprof_thread_set_name((const char *)arg);
    for (int i = 0; i < 5; i++) {
        gpuprof_region_begin("work");
        gpuprof_region_begin("step");
        gpuprof_region_end("step");
        gpuprof_region_end("work");
    }
    gpuprof_region_begin("never_closed");
    return NULL;
}

START_TEST(thread_exit_keeps_data)
{
    at(0);
    start(0, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, worker, (void *)"w1"), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    gpuprof_region_begin("main_work");
    gpuprof_region_end("main_work");
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->thread_count, 2);
    uint32_t w = thread_index(p, GPUPROF_IO_THREAD_EXITED);
    uint32_t m = thread_index(p, GPUPROF_IO_THREAD_MAIN);
    ck_assert_uint_ne(w, m);
    ck_assert_str_eq(gpuprof__io_str(p, p->threads[w].name), "w1");
    ck_assert_uint_eq(rb_val(p, find(p, w, "work"), "region.visits"), 5);
    ck_assert_uint_eq(rb_val(p, find(p, w, "work/step"), "region.visits"), 5);
    uint32_t nc = find(p, w, "never_closed");
    ck_assert_uint_eq(p->nodes[nc].flags, GPUPROF_IO_NODE_OPEN);
    ck_assert_uint_eq(rb_val(p, find(p, m, "main_work"), "region.visits"), 1);
    ck_assert_uint_eq(rb_counter(p, "threads.exited"), 1);
    ck_assert_uint_eq(rb_counter(p, "regions.open_at_thread_exit"), 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Beyond keep_threads, exited threads are summed into one merged profile
 * and their states freed; nothing they measured is lost. Flushes run at the
 * same time (TSan). */
static void *flush_loop(void *arg)
{
    for (int i = 0; i < 30 && !gp_load_acquire((_Atomic int *)arg); i++)
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    return NULL;
}

START_TEST(exited_threads_merge)
{
    keep_threads = 2;
    at(0);
    start(0, 0);
    _Atomic int stop = 0;
    pthread_t f, th;
    ck_assert_int_eq(pthread_create(&f, NULL, flush_loop, &stop), 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(pthread_create(&th, NULL, worker, (void *)"w"), 0);
        ck_assert_int_eq(pthread_join(th, NULL), 0);
    }
    gp_store_release(&stop, 1);
    pthread_join(f, NULL);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->thread_count, 3); /* 2 kept + 1 merged */
    uint32_t m = thread_index(p, GPUPROF_IO_THREAD_MERGED);
    ck_assert_str_eq(gpuprof__io_str(p, p->threads[m].name), "exited threads (merged)");
    ck_assert_uint_eq(rb_val(p, find(p, m, "work"), "region.visits"), 4 * 5);
    ck_assert_uint_eq(rb_val(p, find(p, m, "work/step"), "region.visits"), 4 * 5);
    ck_assert_uint_eq(p->nodes[find(p, m, "never_closed")].flags, GPUPROF_IO_NODE_OPEN);
    uint64_t visits = 0;
    for (uint32_t t = 0; t < p->thread_count; t++)
        visits += rb_val(p, find(p, t, "work"), "region.visits");
    ck_assert_uint_eq(visits, 6 * 5);
    ck_assert_uint_eq(rb_counter(p, "threads.exited"), 6);
    ck_assert_uint_eq(rb_counter(p, "regions.entered"), 6 * 11);
    gpuprof__io_profile_free(p);
}
END_TEST

START_TEST(handles_and_names_share_nodes)
{
    at(0);
    start(0, 0);
    gpuprof_region h, h2;
    ck_assert_int_eq(gpuprof_region_register("hot", &h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_register("hot", &h2), GPUPROF_OK);
    ck_assert_uint_eq(h, h2);
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(gpuprof_region_begin_handle(h), GPUPROF_OK);
        ck_assert_int_eq(gpuprof_region_end(i % 2 ? "hot" : "hot"), GPUPROF_OK);
    }
    ck_assert_int_eq(gpuprof_region_begin("hot"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end_handle(h), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin_handle(0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_region_end_handle(123456), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->threads[0].node_count, 2);
    ck_assert_uint_eq(rb_val(p, find(p, 0, "hot"), "region.visits"), 1001);
    gpuprof__io_profile_free(p);
}
END_TEST

START_TEST(depth_overflow)
{
    at(0);
    start(0, 0);
    char name[16];
    for (int i = 0; i < GP_MAX_DEPTH + 44; i++) {
        snprintf(name, sizeof(name), "d%d", i);
        gpuprof_status want = i < GP_MAX_DEPTH ? GPUPROF_OK : GPUPROF_E_LIMIT;
        ck_assert_int_eq(gpuprof_region_begin(name), want);
    }
    for (int i = GP_MAX_DEPTH + 44; i-- > 0;) {
        snprintf(name, sizeof(name), "d%d", i);
        ck_assert_int_eq(gpuprof_region_end(name), GPUPROF_OK);
    }
    uint64_t v;
    gpuprof_stat_get("regions.depth_exceeded", &v);
    ck_assert_uint_eq(v, 44);
    gpuprof_stat_get("regions.unbalanced", &v);
    ck_assert_uint_eq(v, 0);
    gpuprof_stat_get("cct.nodes", &v);
    ck_assert_uint_eq(v, GP_MAX_DEPTH + 1);
}
END_TEST

START_TEST(fork_child_writes_own_file)
{
    at(0);
    start(0, 0);
    gpuprof_region_begin("parent_only");
    gpuprof_region_end("parent_only");
    gpuprof_region_begin("spanning");
    at(100);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        at(150);
        int ok = gpuprof_region_begin("child") == GPUPROF_OK &&
                 gpuprof_region_end("child") == GPUPROF_OK &&
                 gpuprof_region_end("spanning") == GPUPROF_OK &&
                 gpuprof_finalize() == GPUPROF_OK;
        _exit(ok ? 0 : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[1024], err[256];
    gpuprof__io_profile *c = NULL;
    char cpath[1200];
    gpuprof_output_path(path, sizeof(path));
    char *dash = strrchr(path, '-');
    ck_assert_ptr_nonnull(dash);
    snprintf(cpath, sizeof(cpath), "%.*s-p%d.gpuprof", (int)(dash - path), path,
             (int)pid);
    ck_assert_msg(gpuprof__io_read_file(cpath, &c, err, sizeof(err)) == 0,
                  "%s: %s", cpath, err);
    ck_assert(c->flags & GPUPROF_IO_PROFILE_FORKED);
    ck_assert_uint_eq(c->pid, (uint32_t)pid);
    ck_assert_uint_eq(c->thread_count, 1);
    /* The parent's visits are not counted again in the child. */
    ck_assert_uint_eq(rb_val(c, find(c, 0, "parent_only"), "region.visits"), 0);
    ck_assert_uint_eq(rb_val(c, find(c, 0, "spanning/child"), "region.visits"), 1);
    ck_assert_uint_eq(rb_val(c, find(c, 0, "spanning"), "region.time.incl"), 50);
    gpuprof__io_profile_free(c);
    at(300);
    gpuprof_region_end("spanning");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_val(p, find(p, 0, "spanning"), "region.time.incl"), 300);
    ck_assert(!(p->flags & GPUPROF_IO_PROFILE_FORKED));
    gpuprof__io_profile_free(p);
}
END_TEST

START_TEST(periodic_flush)
{
    start(0, 10);
    gpuprof_region_begin("long");
    usleep(200 * 1000);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_ge(p->generation, 2);
    ck_assert(p->nodes[find(p, 0, "long")].flags & GPUPROF_IO_NODE_OPEN);
    gpuprof__io_profile_free(p);
    gpuprof_region_end("long");
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

/* A flush that lost the race with finalize must not replace the final
 * generation (it would drop the FINAL flag). */
START_TEST(final_generation_is_last)
{
    start(0, 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof__write_profile(false), GPUPROF_E_STATE);
    gpuprof__io_profile *p = rb_load();
    ck_assert(p->flags & GPUPROF_IO_PROFILE_FINAL);
    ck_assert_uint_eq(p->generation, 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* A relative output directory is resolved at init: a later chdir does not
 * move the profile. */
START_TEST(relative_dir_survives_chdir)
{
    char base[512], cwd[1024], path[1024];
    snprintf(base, sizeof(base), "%s/rel.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(base));
    ck_assert_int_eq(chdir(base), 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = "out";
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_output_path(path, sizeof(path)), GPUPROF_OK);
    ck_assert_int_eq(strncmp(path, cwd, strlen(cwd)), 0);
    ck_assert_int_eq(access(path, R_OK), 0);
}
END_TEST

/* SIGTERM with the default action: the final profile is written, then the
 * process dies of the signal as it would have. A program's own handler is
 * left alone; GPUPROF_SIGNALS=0 leaves the signal alone. */
static volatile sig_atomic_t own_handler_ran;
static void own_handler(int sig) { (void)sig; own_handler_ran = 1; }

static pid_t child_with_term(int signals, int own)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid)
        return pid;
    alarm(20);
    /* Check's test process forwards SIGTERM to its group: start from the
     * default action, as a plain program does. */
    signal(SIGTERM, own ? own_handler : SIG_DFL);
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.signals = signals;
    if (gpuprof_init(&o) != GPUPROF_OK || gpuprof_region_begin("work") != GPUPROF_OK)
        _exit(2);
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 2000 && !own_handler_ran; i++)
        usleep(1000); /* the service thread finalizes, then re-sends */
    exit(own_handler_ran ? 42 : 3);
}

static gpuprof__io_profile *child_profile(pid_t pid)
{
    char path[1024], host[256], err[256];
    gethostname(host, sizeof(host));
    snprintf(path, sizeof(path), "%s/%s-rx-p%d.gpuprof", outdir, host, (int)pid);
    gpuprof__io_profile *p = NULL;
    if (gpuprof__io_read_file(path, &p, err, sizeof(err)) != 0)
        return NULL;
    return p;
}

START_TEST(sigterm_writes_final_profile)
{
    /* This process never initializes: each child is a fresh program. */
    snprintf(outdir, sizeof(outdir), "%s/term.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    int status;
    pid_t pid = child_with_term(1, 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    gpuprof__io_profile *p = child_profile(pid);
    ck_assert_ptr_nonnull(p);
    ck_assert(p->flags & GPUPROF_IO_PROFILE_FINAL);
    ck_assert_uint_eq(p->nodes[find(p, 0, "work")].flags, GPUPROF_IO_NODE_OPEN);
    gpuprof__io_profile_free(p);
    /* The program's own handler runs instead; exit writes the profile. */
    pid = child_with_term(1, 1);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 42, "status %d", status);
    p = child_profile(pid);
    ck_assert_ptr_nonnull(p);
    gpuprof__io_profile_free(p);
    /* Signals off: the default action, no profile. */
    pid = child_with_term(0, 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    ck_assert_ptr_null(child_profile(pid));
}
END_TEST

START_TEST(paused_records_nothing)
{
    start(1, 0);
    ck_assert_int_eq(gpuprof_region_begin("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("x"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_begin("y"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_region_end("y"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->threads[0].node_count, 2);
    ck_assert_uint_eq(rb_counter(p, "regions.entered"), 1);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Threads measure while another thread flushes: every flush must read a
 * consistent file, and the final counts must be exact. */
#define STRESS_THREADS 4
static int stress_iters = 20000;

static void *stress_worker(void *arg)
{
    (void)arg;
    gpuprof_region h;
    gpuprof_region_register("h", &h);
    for (int i = 0; i < stress_iters; i++) {
        gpuprof_region_begin("outer");
        char name[16];
        snprintf(name, sizeof(name), "n%d", i % 37);
        gpuprof_region_begin(name);
        gpuprof_region_begin_handle(h);
        gpuprof_region_end_handle(h);
        gpuprof_region_end(name);
        gpuprof_region_end("outer");
    }
    return NULL;
}

START_TEST(flush_while_measuring)
{
    const char *s = getenv("GPUPROF_STRESS");
    if (s && !strcmp(s, "long"))
        stress_iters = 400000;
    start(0, 0);
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, stress_worker, NULL), 0);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
        gpuprof__io_profile *p = rb_load();
        gpuprof__io_profile_free(p);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(p->thread_count, STRESS_THREADS);
    uint64_t visits = 0;
    for (uint32_t t = 0; t < p->thread_count; t++) {
        visits += rb_val(p, find(p, t, "outer"), "region.visits");
        ck_assert_uint_eq(rb_val(p, find(p, t, "outer/n5/h"), "region.visits"),
                          stress_iters / 37 + (5 < stress_iters % 37));
    }
    ck_assert_uint_eq(visits, (uint64_t)STRESS_THREADS * stress_iters);
    ck_assert_uint_eq(rb_counter(p, "regions.unbalanced"), 0);
    gpuprof__io_profile_free(p);
}
END_TEST

/* Stale temporaries: those a dead process of this host left (the library's
 * own pattern, the profile's pid twice) go; a live process's, another
 * host's, a mismatched or foreign name and a profile stay; no probe is
 * left behind. */
static void touch(const char *dir, const char *name)
{
    char p[2048];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

static int exists(const char *dir, const char *name)
{
    char p[2048];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

START_TEST(stale_temporaries_removed)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof(outdir), "%s/core.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert_int_gt(dead, 0);
    waitpid(dead, NULL, 0);
    long d = (long)dead, live = (long)getppid();
    enum { N = 9 };
    char names[N][128];
    const int gone[N] = {1, 1, 1, 0, 0, 0, 0, 0, 0};
    snprintf(names[0], 128, ".h1-r0-p%ld.gpuprof.tmp.%ld.0", d, d);
    snprintf(names[1], 128, ".h1-rx-p%ld.gpuprof.tmp.%ld.17", d, d);
    snprintf(names[2], 128, ".h1-probe-p%ld.gpuprof.tmp.%ld.0", d, d);
    snprintf(names[3], 128, ".h1-r0-p%ld.gpuprof.tmp.%ld.0", live, live);
    snprintf(names[4], 128, ".h2-r0-p%ld.gpuprof.tmp.%ld.0", d, d);
    snprintf(names[5], 128, ".h1-r0-p%ld.gpuprof.tmp.%ld.0", d + 1, d);
    snprintf(names[6], 128, ".h1-r0-p%ld.gpuprof.tmp.%ld.0x", d, d);
    snprintf(names[7], 128, "h1-r0-p%ld.gpuprof", d);
    snprintf(names[8], 128, ".h1-r0-p%ld.gptrace.tmp.%ld.0", d, d);
    for (int i = 0; i < N; i++)
        touch(outdir, names[i]);
    gpuprof__outdir_check(outdir, "h1");
    for (int i = 0; i < N; i++)
        ck_assert_msg(exists(outdir, names[i]) == !gone[i], "%s %s", names[i],
                      gone[i] ? "stays" : "is gone");
    DIR *dir = opendir(outdir);
    ck_assert_ptr_nonnull(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        n += e->d_name[0] != '.' || strstr(e->d_name, ".tmp.") != NULL;
    closedir(dir);
    ck_assert_int_eq(n, N - 3); /* no probe */
}
END_TEST

/* Forks made inside the library's own work or a runtime call that starts
 * helpers (a compiler's linker) are helpers: their copy of the library
 * goes quiet, and its exit writes no profile; a fork outside both brackets
 * still writes its own (fork_child_writes_own_file). */
static int profiles_in(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        n += l > 8 && !strcmp(e->d_name + l - 8, ".gpuprof");
    }
    closedir(d);
    return n;
}

static void helper_fork(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuprof_region_begin("helper"); /* not measured */
        gpuprof_region_end("helper");
        /* What the exit handler would do: finalize (refused, nothing
         * written). _exit: LeakSanitizer may hang in a fork child. */
        _exit(gpuprof_flush() == GPUPROF_E_STATE &&
                      gpuprof_finalize() == GPUPROF_E_STATE
                  ? 0
                  : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(helper_forks_write_nothing)
{
    start(0, 0);
    gpuprof__self_begin();
    helper_fork();
    gpuprof__self_end();
    gpuprof__helpers_begin();
    helper_fork();
    gpuprof__helpers_end();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(profiles_in(outdir), 1); /* this process's only */
    gpuprof__io_profile *p = rb_load();
    ck_assert_uint_eq(rb_counter(p, "regions.entered"), 0);
    gpuprof__io_profile_free(p);
}
END_TEST

/* A helper the runtime starts by spawn + exec that initializes libgpuprof
 * again (a preload shim): started inside a bracket or while device work is
 * in flight, its gpuprof_init
 * declines (tests/sim/outdir_prog exits 2) and it writes nothing; started
 * outside, it is measured (exit 0, its own profile). */
static int run_prog(const char *dir)
{
    char exe[1024], prog[1100];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(prog, sizeof(prog), "%s/outdir_prog", exe);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        setenv("GPUPROF_OUTPUT", dir, 1);
        setenv("GPUPROF_BACKENDS", "sim", 1);
        execl(prog, prog, "3", (char *)NULL);
        _exit(127);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

START_TEST(exec_helpers_not_measured)
{
    start(0, 0);
    char sub[700];
    snprintf(sub, sizeof(sub), "%s/children", outdir);
    gpuprof__helpers_begin();
    ck_assert_int_eq(run_prog(sub), 2);
    gpuprof__helpers_end();
    gpuprof__self_begin();
    ck_assert_int_eq(run_prog(sub), 2);
    gpuprof__self_end();
    gpuprof__helpers_busy(2); /* device work in flight */
    ck_assert_int_eq(run_prog(sub), 2);
    gpuprof__helpers_busy(-2);
    ck_assert_int_eq(access(sub, F_OK), -1); /* not even its directory */
    ck_assert_int_eq(run_prog(sub), 0);
    ck_assert_int_eq(profiles_in(sub), 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"cct", cct_children, 30},
        {"region_times", region_exact_times, 10},
        {"open_regions", open_regions_in_flush_and_finalize, 10},
        {"unbalanced", unbalanced_end, 10},
        {"thread_exit", thread_exit_keeps_data, 10},
        {"exited_threads_merge", exited_threads_merge, 60},
        {"handles", handles_and_names_share_nodes, 10},
        {"depth", depth_overflow, 10},
        {"fork", fork_child_writes_own_file, 20},
        {"periodic_flush", periodic_flush, 20},
        {"paused", paused_records_nothing, 10},
        {"final_is_last", final_generation_is_last, 10},
        {"relative_dir", relative_dir_survives_chdir, 10},
        {"sigterm", sigterm_writes_final_profile, 60},
        {"flush_while_measuring", flush_while_measuring, 240},
        {"stale_temporaries", stale_temporaries_removed, 10},
        {"helper_forks", helper_forks_write_nothing, 20},
        {"exec_helpers", exec_helpers_not_measured, 30},
    };
    return RUN_SUITE("core", cases);
}
