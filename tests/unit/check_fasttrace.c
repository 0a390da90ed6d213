/*
 * check_fasttrace.c - the hook's own stack walk (lib/core/fasttrace.c)
 * against libunwind's unw_backtrace, frame for frame, on the stacks it
 * must get right: one function launching from several call sites, deep
 * and changing recursion, frames sized at run time (alloca: the frame
 * pointer gives the frame address), two callers of one layout returning
 * and calling again (the per-thread memo of the last walk must see the
 * difference), C library frames (qsort's callback), two threads at once,
 * paths deeper than the limit, a signal handler (its trampoline has no
 * simple rule: the walk declines and the hook takes libunwind's), and a
 * library closed and another opened at its address with another frame
 * size at the same return address (the rules must be forgotten). The
 * suite links the dlclose interposition as libgpuprof.so has it.
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "core/unwind.h"
#include "support/beside.h"
#include "support/suite.h"

#define MAXF GP_MAX_FRAMES

/* buf[0] in the helper, buf[1] its return address in `compare`: both
 * helpers give the same frames from buf[2] on. */
__attribute__((noinline)) static int ref_capture(void **buf, int max)
{
#if defined(__SANITIZE_THREAD__)
    int n = gpuprof__backtrace_tsan(buf, max); /* libgcc's, as TSan builds */
#else
    int n = unw_backtrace(buf, max);
#endif
    __asm__ volatile("" ::: "memory");
    return n;
}

/* libunwind step by step (no fast-trace cache): the reference where a
 * library was replaced at the same address. */
__attribute__((noinline)) static int step_capture(void **buf, int max)
{
    unw_context_t uc;
    unw_cursor_t c;
    int n = 0;
    unw_getcontext(&uc);
    if (unw_init_local(&c, &uc) != 0)
        return -1;
    do {
        unw_word_t ip = 0;
        unw_get_reg(&c, UNW_REG_IP, &ip);
        buf[n++] = (void *)ip;
    } while (n < max && unw_step(&c) > 0);
    __asm__ volatile("" ::: "memory");
    return n;
}

__attribute__((noinline)) static int fast_capture(void **buf, int max)
{
    gpuprof__unwinding++;
    int n = gpuprof__fast_trace(buf, max);
    gpuprof__unwinding--;
    __asm__ volatile("" ::: "memory");
    return n;
}

/* The reference: unw_step, not unw_backtrace (the dlclose case). Under
 * ThreadSanitizer libunwind is never the reference (its caches race and
 * its per-thread cache's destructor crashes there): libgcc's unwinder is,
 * as it is the hook's in those builds. */
static int stepped;

typedef struct result {
    int fast, ref, hook; /* frames; fast -1: it declined */
    int same, hook_same; /* fast (hook) == ref from frame 2 on */
} result;

/* The walk, libunwind's and the hook's (gpuprof__unwind_capture: the
 * walk, or libunwind when it declines) from here, compared. */
__attribute__((noinline)) static void compare(result *r, int max)
{
    void *f[MAXF], *u[MAXF], *h[MAXF];
    gpuprof__modules_check(); /* as every capture: a dlclose seen first */
    r->fast = fast_capture(f, max);
    r->ref = stepped ? step_capture(u, max) : ref_capture(u, max);
    r->hook = gpuprof__unwind_capture(h, max);
    r->same = r->fast == r->ref && r->fast > 2 &&
              !memcmp(f + 2, u + 2, (size_t)(r->ref - 2) * sizeof(void *));
    r->hook_same = r->hook == r->ref && r->hook > 2 &&
                   !memcmp(h + 2, u + 2, (size_t)(r->ref - 2) * sizeof(void *));
    __asm__ volatile("" ::: "memory");
}

static void expect_same(const result *r, const char *what, int i)
{
    ck_assert_msg(r->same, "%s #%d: walk %d frames, libunwind %d, differ",
                  what, i, r->fast, r->ref);
    ck_assert_msg(r->hook_same, "%s #%d: hook %d frames, libunwind %d",
                  what, i, r->hook, r->ref);
}

/* ---- stack shapes ------------------------------------------------------ */
typedef struct shape {
    int depth;  /* recursion frames */
    int site;   /* which of three call sites in `launch` */
    int grow;   /* alloca bytes in `sized` (0: not on the path) */
    int caller; /* 0: via_p1, 1: via_p2 (one layout, two functions) */
    int max;
    result r;
} shape;

void launch(shape *s);
__attribute__((noinline)) void launch(shape *s)
{
    switch (s->site) { /* three call sites in one frame */
    case 0: compare(&s->r, s->max); break;
    case 1: __asm__ volatile("nop" ::: "memory"); compare(&s->r, s->max); break;
    default: __asm__ volatile("nop; nop" ::: "memory"); compare(&s->r, s->max);
    }
    __asm__ volatile("" ::: "memory");
}

void recurse(shape *s, int d);
__attribute__((noinline)) void recurse(shape *s, int d)
{
    if (d > 0)
        recurse(s, d - 1);
    else
        launch(s);
    __asm__ volatile("" ::: "memory"); /* a frame each: no tail call */
}

void sized(shape *s);
__attribute__((noinline)) void sized(shape *s)
{
    volatile char *p = alloca((size_t)s->grow); /* frame address: rbp */
    p[0] = 1;
    recurse(s, s->depth);
    __asm__ volatile("" ::: "memory");
}

static void body(shape *s)
{
    if (s->grow)
        sized(s);
    else
        recurse(s, s->depth);
}

/* Two functions of one layout: a walk through one, then the other, meet
 * the same stack addresses with another return address above them. */
void via_p1(shape *s);
void via_p2(shape *s);
__attribute__((noinline)) void via_p1(shape *s)
{
    body(s);
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void via_p2(shape *s)
{
    body(s);
    __asm__ volatile("" ::: "memory");
}

static void run_shape(shape *s)
{
    if (s->caller)
        via_p2(s);
    else
        via_p1(s);
}

/* A walk of every shape in a fixed random order; each compared. */
static void shapes(unsigned seed, int rounds, const char *what)
{
    for (int i = 0; i < rounds; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned x = seed >> 8;
        shape s = {(int)(x % 40), (int)(x / 40 % 3),
                   x / 120 % 4 ? 0 : 16 + (int)(x / 480 % 8) * 48,
                   (int)(x / 3840 % 2), MAXF, {0, 0, 0, 0, 0}};
        run_shape(&s);
        expect_same(&s.r, what, i);
    }
}

START_TEST(shapes_match_libunwind)
{
    shapes(1, 2000, "shapes");
}
END_TEST

/* The memo's own cases, each twice in a row and then changed. */
START_TEST(memo_cases)
{
    static const shape cases[] = {
        {10, 0, 0, 0, MAXF, {0}}, {10, 0, 0, 0, MAXF, {0}}, /* repeat */
        {10, 1, 0, 0, MAXF, {0}}, {10, 2, 0, 0, MAXF, {0}}, /* sites */
        {10, 2, 0, 1, MAXF, {0}}, {10, 2, 0, 0, MAXF, {0}}, /* p2, p1 */
        {3, 0, 0, 0, MAXF, {0}},  {25, 0, 0, 0, MAXF, {0}}, /* depth */
        {25, 0, 64, 0, MAXF, {0}}, {25, 0, 64, 0, MAXF, {0}},
        {25, 0, 512, 0, MAXF, {0}}, {25, 0, 64, 1, MAXF, {0}},
        {5, 0, 0, 0, 12, {0}},    {5, 0, 0, 0, MAXF, {0}}, /* a limit */
        {200, 0, 0, 0, MAXF, {0}}, {200, 1, 0, 0, MAXF, {0}}, /* deeper */
        {5, 0, 0, 0, MAXF, {0}},
    };
    for (int i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
        shape s = cases[i];
        run_shape(&s);
        expect_same(&s.r, "memo case", i);
        if (s.max == MAXF && s.depth == 200)
            ck_assert_int_eq(s.r.fast, MAXF); /* cut at the limit */
        else if (s.max == 12)
            ck_assert_int_eq(s.r.fast, 12);
    }
}
END_TEST

static void *shapes_thread(void *arg)
{
    shapes((unsigned)(uintptr_t)arg, 1000, "thread");
    return NULL;
}

/* Each thread walks its own stack with its own memo. */
START_TEST(two_threads)
{
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, shapes_thread,
                                        (void *)(i + 7)), 0);
    shapes(3, 500, "main beside threads");
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
}
END_TEST

/* ---- the C library's frames: qsort calls back ------------------------- */
static result qsort_r_result;
static int cmp_calls;

static int by_value(const void *a, const void *b)
{
    if (cmp_calls++ == 3)
        compare(&qsort_r_result, MAXF);
    return *(const int *)a - *(const int *)b;
}

START_TEST(libc_callback)
{
    int v[64];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 64; i++)
            v[i] = (i * 37 + round) % 64;
        cmp_calls = 0;
        memset(&qsort_r_result, 0, sizeof(qsort_r_result));
        qsort(v, 64, sizeof(int), by_value);
        expect_same(&qsort_r_result, "qsort callback", round);
    }
}
END_TEST

/* ---- a signal handler --------------------------------------------------- */
static result sig_result;

static void on_usr1(int sig)
{
    (void)sig;
    compare(&sig_result, MAXF);
}

/* The trampoline has no simple rule: the walk declines (-1), the hook
 * takes libunwind's path through the signal frame. */
START_TEST(signal_handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
    for (int i = 0; i < 3; i++) {
        shape s = {5, 0, 0, 0, MAXF, {0}};
        run_shape(&s); /* a memo from an ordinary walk first */
        memset(&sig_result, 0, sizeof(sig_result));
        raise(SIGUSR1);
        ck_assert_int_eq(sig_result.fast, -1);
        ck_assert_msg(sig_result.hook_same, "signal #%d: hook %d, ref %d", i,
                      sig_result.hook, sig_result.ref);
    }
    sigaction(SIGUSR1, &old, NULL);
}
END_TEST

/* ---- a library closed, another at its address -------------------------- */
typedef unsigned (*frame_call_fn)(unsigned (*)(void *), void *);
static result lib_result;

__attribute__((noinline)) static unsigned from_lib(void *arg)
{
    (void)arg;
    compare(&lib_result, MAXF);
    __asm__ volatile("" ::: "memory");
    return 0;
}

static void *open_fixture(const char *name, frame_call_fn *fn)
{
    return tb_open_beside(name, "unwind_frame_call", (void **)fn);
}

START_TEST(dlclose_forgets_rules)
{
    frame_call_fn fa, fb;
    /* libunwind's fast trace keeps a's frame size for b here (4 frames of
     * 10), whatever unw_flush_cache says: step by step is the reference */
#if !defined(__SANITIZE_THREAD__)
    stepped = 1;
#endif
    void *ha = open_fixture("unwind_frame_a.so", &fa);
    for (int i = 0; i < 2; i++) { /* learned, then from the memo */
        fa(from_lib, NULL);
        expect_same(&lib_result, "library a", i);
    }
    ck_assert_int_eq(dlclose(ha), 0);
    void *hb = open_fixture("unwind_frame_b.so", &fb);
    if ((void *)fb != (void *)fa)
        fprintf(stderr, "SKIP dlclose_forgets_rules: the second library "
                        "was loaded at another address\n");
    for (int i = 0; i < 2; i++) {
        fb(from_lib, NULL);
        expect_same(&lib_result, "library b at a's address", i);
    }
    dlclose(hb);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"shapes_match_libunwind", shapes_match_libunwind, 120},
        {"memo_cases", memo_cases, 60},
        {"two_threads", two_threads, 120},
        {"libc_callback", libc_callback, 60},
        {"signal_handler", signal_handler, 60},
        {"dlclose_forgets_rules", dlclose_forgets_rules, 60},
    };
    return RUN_SUITE("fasttrace", cases);
}
