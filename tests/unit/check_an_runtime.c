/*
 * check_an_runtime.c - the runtime's frames (analysis/db/an_runtime.c):
 * which frames are the C library starting a program or a thread, or an
 * interpreter starting its Python code, recognized by function name and
 * load module (with and without the C library's symbols, glibc and musl);
 * which of them a tree hides, which it keeps (a value of their own) and
 * which it shows as "<thread root>", on trees written by hand; and a
 * database of real frames (this program's main and a thread function, the
 * C library's __libc_start_main looked up in this process, a C library
 * without symbols) through every view and export, with and without
 * GPUPROF_AN_RUNTIME_FRAMES: exact trees, and every sum the same.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../analysis/db/an_runtime.h"
#include "gpuprof_analysis.h"
#include "support/callpath.h"
#include "support/mkprofile.h"
#include "support/suite.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define MUSL "/lib/ld-musl-x86_64.so.1"

START_TEST(classify)
{
    static const struct {
        const char *module, *fn;
        gpuprof__an_rt_what want;
    } c[] = {
        {LIBC, "__libc_start_main_impl", GPUPROF__AN_RT_PROGRAM},
        {LIBC, "__libc_start_main@@GLIBC_2.34", GPUPROF__AN_RT_PROGRAM},
        {LIBC, "__libc_start_call_main", GPUPROF__AN_RT_PROGRAM},
        {"/home/u/app", "_start", GPUPROF__AN_RT_PROGRAM},
        {LIBC, "__clone3", GPUPROF__AN_RT_THREAD},
        {LIBC, "__GI___clone3", GPUPROF__AN_RT_THREAD},
        {LIBC, "start_thread", GPUPROF__AN_RT_THREAD},
        {LIBC, "start_thread.constprop.0", GPUPROF__AN_RT_THREAD},
        {"/lib/x86_64-linux-gnu/libpthread.so.0", "start_thread",
         GPUPROF__AN_RT_THREAD},
        {"/lib/x86_64-linux-gnu/libc-2.31.so", "__libc_start_main",
         GPUPROF__AN_RT_PROGRAM},
        /* no symbols: any frame of the C library or the loader */
        {LIBC, NULL, GPUPROF__AN_RT_LIBC},
        {LIBC, "", GPUPROF__AN_RT_LIBC},
        {"/lib64/ld-linux-x86-64.so.2", NULL, GPUPROF__AN_RT_LIBC},
        /* musl */
        {MUSL, "libc_start_main_stage2", GPUPROF__AN_RT_PROGRAM},
        {MUSL, "_start_c", GPUPROF__AN_RT_PROGRAM},
        {MUSL, "start", GPUPROF__AN_RT_THREAD},
        {MUSL, "start_c11", GPUPROF__AN_RT_THREAD},
        /* the program's own functions, and the C library's it calls */
        {"/home/u/app", "start", GPUPROF__AN_RT_NO},
        {"/home/u/app", "main", GPUPROF__AN_RT_NO},
        {"/home/u/app", NULL, GPUPROF__AN_RT_NO},
        {LIBC, "exit", GPUPROF__AN_RT_NO},
        {LIBC, "memcpy", GPUPROF__AN_RT_NO},
        {"/usr/lib/libfoo.so", "call_init", GPUPROF__AN_RT_NO},
        /* interpreters, Python */
        {"/usr/bin/python3.11", "Py_BytesMain", GPUPROF__AN_RT_INTERP},
        {"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "PyEval_EvalCode",
         GPUPROF__AN_RT_INTERP},
        {"/usr/bin/python3.11", NULL, GPUPROF__AN_RT_INTERP}, /* stripped */
        {"py:Trainer.step:/x/train.py", NULL, GPUPROF__AN_RT_PYTHON},
        {"/usr/bin/python3.11", "_start", GPUPROF__AN_RT_PROGRAM},
        {"<truncated>", NULL, GPUPROF__AN_RT_CUT},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        ck_assert_msg(gpuprof__an_rt_classify(c[i].module, c[i].fn) ==
                          c[i].want,
                      "%s in %s: %d, want %d", c[i].fn ? c[i].fn : "(none)",
                      c[i].module,
                      gpuprof__an_rt_classify(c[i].module, c[i].fn),
                      c[i].want);
}
END_TEST

enum { O = GPUPROF__AN_RT_OTHER, F = GPUPROF__AN_RT_FRAME,
       I = GPUPROF__AN_RT_INNER };
enum { NO = GPUPROF__AN_RT_NO, PR = GPUPROF__AN_RT_PROGRAM,
       TH = GPUPROF__AN_RT_THREAD, LC = GPUPROF__AN_RT_LIBC,
       IN = GPUPROF__AN_RT_INTERP, PY = GPUPROF__AN_RT_PYTHON,
       CT = GPUPROF__AN_RT_CUT };
enum { H = GPUPROF__AN_RT_HIDDEN, T = GPUPROF__AN_RT_THREAD_ROOT };
#define NONE UINT32_MAX

static void expect_marks(const gpuprof__an_rt_node *n, uint32_t count,
                         const uint8_t *want, const uint32_t *up)
{
    uint8_t flags[64];
    ck_assert_int_eq(gpuprof__an_rt_mark(n, count, flags), 0);
    for (uint32_t i = 0; i < count; i++) {
        ck_assert_msg(flags[i] == want[i], "node %u: flags %u, want %u", i,
                      flags[i], want[i]);
        ck_assert_msg(gpuprof__an_rt_up(n, flags, i) == up[i],
                      "node %u: shown parent %u, want %u", i,
                      gpuprof__an_rt_up(n, flags, i), up[i]);
    }
}

/* CPU frames as measured (no program structure):
 *   0 root
 *   1   _start                 hidden
 *   2     __libc_start_main    hidden
 *   3       (libc, no name)    hidden
 *   4         main             shown beneath the root
 *   5           <op>
 *   6         exit             shown: not start code, beneath the root
 *   7           handler
 *   8   __clone3               the thread root
 *   9     start_thread         hidden
 *  10       worker             beneath the thread root
 *  11         (libc, no name)  shown: the program called it
 *  12   region
 *  13     (libc, no name)      a thread root beneath a region
 *  14       (libc, no name)    hidden
 *  15         fn
 * Paths cut at the depth limit, beneath the <truncated> frame:
 *  16   <truncated>            shown
 *  17     _start               hidden: a named start frame
 *  18       main
 *  19     (libc, no name)      shown: any function of the C library
 *  20       fn */
START_TEST(mark_frames)
{
    static const gpuprof__an_rt_node n[] = {
        {NONE, O, NO, 0}, {0, F, PR, 0},  {1, F, PR, 0},  {2, F, LC, 0},
        {3, F, NO, 0},    {4, O, NO, 1},  {3, F, NO, 0},  {6, F, NO, 0},
        {0, F, TH, 0},    {8, F, TH, 0},  {9, F, NO, 0},  {10, F, LC, 0},
        {0, O, NO, 0},    {12, F, LC, 0}, {13, F, LC, 0}, {14, F, NO, 0},
        {0, F, CT, 0},    {16, F, PR, 0}, {17, F, NO, 0}, {16, F, LC, 0},
        {19, F, NO, 0}};
    static const uint8_t want[] = {0, H, H, H, 0, 0, 0, 0, T, H, 0,
                                   0, 0, T, H, 0, 0, H, 0, 0, 0};
    static const uint32_t up[] = {NONE, 0,  0, 0,  0,  4,  0,
                                  6,    0,  8, 8,  10, 0,  12,
                                  13,   13, 0, 16, 16, 16, 19};
    expect_marks(n, 21, want, up);
}
END_TEST

/* Frames expanded by the structure pass (functions, inlined functions and
 * source lines): a line and an inlined function belong to the frame
 * above them, whatever their names.
 *   0 root
 *   1   __libc_start_main_impl   hidden
 *   2     libc-start.c:360       hidden with it
 *   3       [inlined] __libc_start_call_main   hidden
 *   4         libc_start_call_main.h:58        hidden
 *   5           main             beneath the root
 *   6             app.c:10
 *   7               [inlined] helper
 * A runtime frame with a value of its own stays, and its frame with it:
 *   8   __clone3                 the thread root
 *   9     clone3.S:81            hidden
 *  10       start_thread         kept: its line has a value
 *  11         pthread_create.c:442  (the value)
 *  12           worker */
START_TEST(mark_structure)
{
    static const gpuprof__an_rt_node n[] = {
        {NONE, O, NO, 0}, {0, F, PR, 0},  {1, I, NO, 0},  {2, I, NO, 0},
        {3, I, NO, 0},    {4, F, NO, 0},  {5, I, NO, 0},  {6, I, NO, 0},
        {0, F, TH, 0},    {8, I, NO, 0},  {9, F, TH, 0},  {10, I, NO, 1},
        {11, F, NO, 0}};
    static const uint8_t want[] = {0, H, H, H, H, 0, 0, 0, T, H, 0, 0, 0};
    static const uint32_t up[] = {NONE, 0, 0, 0, 0, 0, 5, 6, 0, 8, 8, 10, 11};
    expect_marks(n, 13, want, up);
}
END_TEST

/* A CPython program: the interpreter's frames from main down to the first
 * Python frame are hidden; its frames that lead to no Python frame stay,
 * and so do those beneath a Python frame.
 *   0 root
 *   1   _start                hidden
 *   2     main (python3.11)   hidden: a Python frame follows
 *   3       Py_RunMain        hidden
 *   4         PyEval_EvalCode hidden
 *   5           <module>      beneath the root
 *   6             launch
 *   7               _PyObject_MakeTpCall   shown (beneath Python)
 *   8       Py_InitializeFromConfig        shown: no Python beneath
 *   9   __clone3              the thread root of a Python thread
 *  10     pythread_wrapper    hidden
 *  11       run               (Python) */
START_TEST(mark_python)
{
    static const gpuprof__an_rt_node n[] = {
        {NONE, O, NO, 0}, {0, F, PR, 0}, {1, F, IN, 0}, {2, F, IN, 0},
        {3, F, IN, 0},    {4, F, PY, 0}, {5, F, PY, 0}, {6, F, IN, 0},
        {2, F, IN, 0},    {0, F, TH, 0}, {9, F, IN, 0}, {10, F, PY, 0}};
    static const uint8_t want[] = {0, H, H, H, H, 0, 0, 0, 0, T, H, 0};
    static const uint32_t up[] = {NONE, 0, 0, 0, 0, 0, 5, 6, 0, 0, 9, 9};
    expect_marks(n, 12, want, up);
}
END_TEST

/* ---- a database of real frames ------------------------------------------ */
static char tmp[512];

__attribute__((noinline)) static void *thread_fn(void *arg)
{
    __asm__ volatile("" ::: "memory");
    return arg;
}

/* The module of `fn` in this process and fn's offset in it. */
static const char *module_of(const void *fn, uint64_t *offset)
{
    Dl_info di;
    ck_assert_int_ne(dladdr(fn, &di), 0);
    ck_assert_ptr_nonnull(di.dli_fname);
    *offset = (uint64_t)((uintptr_t)fn - (uintptr_t)di.dli_fbase);
    return di.dli_fname;
}

/* One process, two threads:
 *   main thread: __libc_start_main+0x10 (this C library, named by its
 *     symbols) -> main+0x10 (this program) -> <kernel launch> -> kernel k
 *     (gpu.time 5, its binary b.clbin);
 *   a thread: a C library without symbols (+0x100, +0x200) -> thread_fn
 *     +0x1 -> <kernel launch> -> kernel k (gpu.time 7, the binary
 *     c.clbin), and a value of its own (gpu.time 2) on a third unnamed
 *     frame beneath the first: it stays shown. */
static gpuprof_an_db *real_db(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/anrt.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    uint64_t lsm, mo, to;
    void *start = dlsym(RTLD_DEFAULT, "__libc_start_main");
    ck_assert_ptr_nonnull(start);
    const char *libc = module_of(start, &lsm);
    extern int main(void);
    const char *exe = module_of((const void *)main, &mo);
    module_of((const void *)thread_fn, &to);
    tp_builder *b = tp_new("h", 9, -1);
    tp_clear_metrics(b);
    uint32_t gt = tp_metric(b, "gpu.time", GPUPROF_IO_UNIT_NS,
                            GPUPROF_IO_KIND_GPU);
    uint32_t ml = tp_module(b, libc), me = tp_module(b, exe),
             mx = tp_module(b, "/nonexistent/libc.so.6");
    uint32_t bb = tp_gpu_module(b, "binaries/b.clbin"),
             bc = tp_gpu_module(b, "binaries/c.clbin");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t f = tp_frame(b, 0, ml, lsm + 0x10);
    f = tp_frame(b, f, me, mo + 0x10);
    f = tp_gpu_op(b, f, GPUPROF_OP_KERNEL);
    tp_node_value(b, tp_kernel(b, f, "k", bb), gt, 5);
    tp_thread(b, "worker", 0);
    uint32_t c1 = tp_frame(b, 0, mx, 0x100);
    f = tp_frame(b, c1, mx, 0x200);
    f = tp_frame(b, f, me, to + 1); /* within its few bytes */
    f = tp_gpu_op(b, f, GPUPROF_OP_KERNEL);
    tp_node_value(b, tp_kernel(b, f, "k", bc), gt, 7);
    tp_node_value(b, tp_frame(b, c1, mx, 0x300), gt, 2);
    char in[600], db[600], path[700];
    snprintf(in, sizeof(in), "%s/run", tmp);
    snprintf(db, sizeof(db), "%s/db", tmp);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    snprintf(path, sizeof(path), "%s/p.gpuprof", in);
    ck_assert_int_eq(tp_write(b, path, 0), 0);
    tp_free(b);
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, db), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_structure(a, 0), GPUPROF_OK);
    ck_assert_msg(gpuprof_an_analysis_run(a) == GPUPROF_OK, "%s",
                  gpuprof_an_last_error());
    gpuprof_an_analysis_free(a);
    gpuprof_an_db *d;
    ck_assert_int_eq(gpuprof_an_db_open(db, &d), GPUPROF_OK);
    return d;
}

#define TEXT_OF(call)                                                          \
    ({                                                                         \
        char *text_ = NULL;                                                    \
        size_t len_ = 0;                                                       \
        FILE *out = open_memstream(&text_, &len_);                             \
        ck_assert_msg((call) == GPUPROF_OK, "%s", gpuprof_an_last_error());   \
        fclose(out);                                                           \
        text_;                                                                 \
    })

/* The context whose name starts with `prefix` (exactly one). */
static uint32_t named(const gpuprof_an_db *db, const char *prefix)
{
    uint32_t found = UINT32_MAX;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (!strncmp(gpuprof_an_db_context_name(db, c), prefix,
                     strlen(prefix))) {
            ck_assert_msg(found == UINT32_MAX, "two contexts %s", prefix);
            found = c;
        }
    ck_assert_msg(found != UINT32_MAX, "no context %s", prefix);
    return found;
}

/* Replaces each "+0x..." offset with "+" (they depend on the build). */
static char *no_offsets(char *s)
{
    char *to = s;
    for (const char *p = s; *p;) {
        if (p[0] == '+' && p[1] == '0' && p[2] == 'x') {
            *to++ = '+';
            for (p += 3; strchr("0123456789abcdef", *p) && *p; p++)
                ;
        } else {
            *to++ = *p++;
        }
    }
    *to = '\0';
    return s;
}

START_TEST(database_views_and_exports)
{
    gpuprof_an_db *db = real_db();
    const char *exe = strrchr(program_invocation_name, '/');
    exe = exe ? exe + 1 : program_invocation_name;
    uint32_t lsm = named(db, "__libc_start_main"), m = named(db, "main+");
    uint32_t c1 = named(db, "libc.so.6+0x100"),
             c2 = named(db, "libc.so.6+0x200"),
             c3 = named(db, "libc.so.6+0x300"), w = named(db, "thread_fn+");
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, lsm),
                      GPUPROF_AN_CONTEXT_RUNTIME);
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, m), 0);
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, c1),
                      GPUPROF_AN_CONTEXT_THREAD_ROOT);
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, c2),
                      GPUPROF_AN_CONTEXT_RUNTIME);
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, c3), 0); /* a value */
    ck_assert_uint_eq(gpuprof_an_db_context_flags(db, w), 0);
    /* Kernels: one name, two binaries, each a field of its own. */
    uint32_t k1 = gpuprof_an_db_context_count(db), k2 = k1;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (gpuprof_an_db_context_kind(db, c) == GPUPROF_AN_NODE_KERNEL) {
            ck_assert_str_eq(gpuprof_an_db_context_name(db, c), "kernel k");
            *(k1 == gpuprof_an_db_context_count(db) ? &k1 : &k2) = c;
        }
    ck_assert_str_eq(gpuprof_an_db_context_binary(db, k1), "binaries/b.clbin");
    ck_assert_str_eq(gpuprof_an_db_context_binary(db, k2), "binaries/c.clbin");

    const char *gt = "gpu.time";
    char want[2048];
    /* Folded stacks: the runtime's frames left out, the same whole. */
    char *t = no_offsets(TEXT_OF(gpuprof_an_db_print_folded(db, out, gt, 0)));
    snprintf(want, sizeof(want),
             "main+ (%s);<kernel launch>;kernel k 5\n"
             "<thread root>;thread_fn+ (%s);<kernel launch>;kernel k 7\n"
             "<thread root>;libc.so.6+ 2\n",
             exe, exe);
    ck_assert_str_eq(t, want);
    free(t);
    t = no_offsets(TEXT_OF(gpuprof_an_db_print_folded(
        db, out, gt, GPUPROF_AN_RUNTIME_FRAMES)));
    ck_assert_msg(strstr(t, "__libc_start_main") == t, "%s", t);
    snprintf(want, sizeof(want),
             " (libc.so.6);main+ (%s);<kernel launch>;kernel k 5\n"
             "libc.so.6+;libc.so.6+;thread_fn+ (%s);<kernel launch>;kernel k 7\n"
             "libc.so.6+;libc.so.6+ 2\n",
             exe, exe);
    ck_assert_msg(strstr(t, want), "%s", t);
    free(t);

    /* The top-down view: rows beneath their shown parents. */
    const char *ms[] = {gt};
    t = no_offsets(TEXT_OF(gpuprof_an_db_print_view(
        db, out, GPUPROF_AN_VIEW_TOPDOWN, ms, 1, 0, 0, 0)));
    char *rows = strchr(strchr(strchr(t, '\n') + 1, '\n') + 1, '\n') + 1;
    snprintf(want, sizeof(want),
             "          9 ns  64.29%%           0 ns  <thread root>\n"
             "          7 ns  50.00%%           0 ns    thread_fn+ (%s)\n"
             "          7 ns  50.00%%           0 ns      <kernel launch>\n"
             "          7 ns  50.00%%           7 ns        kernel k\n"
             "          2 ns  14.29%%           2 ns    libc.so.6+\n"
             "          5 ns  35.71%%           0 ns  main+ (%s)\n"
             "          5 ns  35.71%%           0 ns    <kernel launch>\n"
             "          5 ns  35.71%%           5 ns      kernel k\n",
             exe, exe);
    ck_assert_str_eq(rows, want);
    free(t);
    /* Flat: <thread root> is a procedure; the hidden frames none. */
    t = TEXT_OF(gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_FLAT, ms, 1,
                                         0, 0, 0));
    ck_assert_ptr_nonnull(strstr(t, "9 ns  64.29%           0 ns  <thread root>\n"));
    ck_assert_ptr_null(strstr(t, "__libc_start_main"));
    ck_assert_ptr_null(strstr(t, "libc.so.6+0x200"));
    free(t);
    t = TEXT_OF(gpuprof_an_db_print_view(db, out, GPUPROF_AN_VIEW_FLAT, ms, 1,
                                         0, 0, GPUPROF_AN_RUNTIME_FRAMES));
    ck_assert_ptr_nonnull(strstr(t, "__libc_start_main"));
    ck_assert_ptr_nonnull(strstr(t, "libc.so.6+0x200"));
    ck_assert_ptr_null(strstr(t, "<thread root>"));
    free(t);
    /* The thread-centric view names the path as the views show it. */
    t = no_offsets(TEXT_OF(gpuprof_an_db_print_profiles(db, out, k2, gt, 0)));
    snprintf(want, sizeof(want),
             "context %u: <thread root>;thread_fn+ (%s);<kernel launch>;"
             "kernel k\n",
             k2, exe);
    ck_assert_msg(!strncmp(t, want, strlen(want)), "%s", t);
    free(t);

    /* Hatchet: the shown tree, every node once; the same whole. */
    t = TEXT_OF(gpuprof_an_db_export_hatchet(db, out, 0));
    ck_assert_uint_eq(strip_callpaths(t), gpuprof_an_db_context_count(db) - 2);
    ck_assert_ptr_nonnull(strstr(
        t, "{\"frame\": {\"name\": \"<program root>\", \"type\": \"root\"}, "
           "\"metrics\": {\"time\": 0, \"time (inc)\": 14, \"gpu.time\": 0, "
           "\"gpu.time (inc)\": 14}, \"children\": [\n"
           " {\"frame\": {\"name\": \"main+0x10 ("));
    ck_assert_ptr_nonnull(strstr(
        t, "]}]}]},\n"
           " {\"frame\": {\"name\": \"<thread root>\", \"type\": \"frame\"}, "
           "\"metrics\": {\"time\": 0, \"time (inc)\": 9, \"gpu.time\": 0, "
           "\"gpu.time (inc)\": 9}, \"children\": [\n"
           "  {\"frame\": {\"name\": \"thread_fn+0x1 ("));
    ck_assert_ptr_nonnull(strstr(
        t, "{\"frame\": {\"name\": \"kernel k\", \"type\": \"kernel\"}, "
           "\"binary\": \"binaries/c.clbin\", \"metrics\": {\"time\": 7, "));
    ck_assert_ptr_null(strstr(t, "__libc_start_main"));
    free(t);
    t = TEXT_OF(gpuprof_an_db_export_hatchet(db, out,
                                             GPUPROF_AN_RUNTIME_FRAMES));
    ck_assert_uint_eq(strip_callpaths(t), gpuprof_an_db_context_count(db));
    ck_assert_ptr_nonnull(strstr(t, "__libc_start_main"));
    free(t);
    /* The table: no rows of hidden contexts; parents as shown. */
    t = TEXT_OF(gpuprof_an_db_export_table(db, out, 0));
    snprintf(want, sizeof(want), "\n%u,%u,frame,", w, c1);
    ck_assert_msg(strstr(t, want), "%s", t);
    snprintf(want, sizeof(want), "\n%u,", c2);
    ck_assert_ptr_null(strstr(t, want));
    snprintf(want, sizeof(want), "\n%u,0,frame,<thread root>,,1,", c1);
    ck_assert_msg(strstr(t, want), "%s", t);
    free(t);
    t = TEXT_OF(gpuprof_an_db_export_table(db, out, GPUPROF_AN_RUNTIME_FRAMES));
    snprintf(want, sizeof(want), "\n%u,%u,frame,", w, c2);
    ck_assert_msg(strstr(t, want), "%s", t);
    free(t);
    t = TEXT_OF(gpuprof_an_db_export_table(db, out, GPUPROF_AN_TABLE_LONG));
    snprintf(want, sizeof(want), "\n%u,", lsm);
    ck_assert_ptr_null(strstr(t, want));
    free(t);
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(gpuprof_an_db_export_table(db, null, 0x200),
                     GPUPROF_E_INVALID);
    fclose(null);
    gpuprof_an_db_close(db);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"classify", classify, 10},
        {"mark_frames", mark_frames, 10},
        {"mark_structure", mark_structure, 10},
        {"mark_python", mark_python, 10},
        {"database", database_views_and_exports, 60},
    };
    return RUN_SUITE("an_runtime", cases);
}
