/*
 * an_runtime.c - which frames are the runtime's (an_runtime.h).
 *
 * A frame is recognized by its function's name and its load module, never
 * by a source line or an offset, which change with every build of the C
 * library: glibc starts a program with _start -> __libc_start_main(_impl)
 * -> __libc_start_call_main -> main and a thread with __clone3 (__clone)
 * -> start_thread -> the thread's function; musl with _start -> _start_c
 * -> __libc_start_main -> libc_start_main_stage2 -> main and __clone ->
 * start (start_c11). Without the C library's symbols (no libc6-dbg) the
 * static ones have no name: an unnamed frame of the C library or of the
 * dynamic loader at the top of a path can only be start code, so it counts
 * as the runtime's too. A CPython program's native frames from main down
 * to the first Python frame are the interpreter starting it
 * (Py_BytesMain, ..., PyEval_EvalCode), and hidden as well, but only
 * where a Python frame follows: an interpreter's path without one (its
 * own initialization, a native extension's thread) keeps them.
 *
 * Only the leading run of a path is the runtime's: exit() called from
 * __libc_start_call_main, or a libc function the program calls, stays. A
 * path cut at its depth limit hangs beneath a <truncated> frame; what
 * follows it leads that path, but an unnamed C library frame there may be
 * any of its functions (the cut was anywhere), so only named start frames
 * count.
 */
#include "an_runtime.h"

#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The C library and the dynamic loader, by the module's base name: glibc
 * (libc.so.6, libc-2.31.so, libpthread before 2.34, ld-linux-*.so.2) and
 * musl (ld-musl-*.so.1, its libc.so). */
static bool clib(const char *b)
{
    static const char *const p[] = {"libc.so",     "libc-",   "libpthread",
                                    "ld-linux",    "ld-musl", "libc.musl",
                                    "ld.so",       "ld64.so", "ld-2."};
    for (size_t i = 0; i < sizeof(p) / sizeof(*p); i++)
        if (starts(b, p[i]))
            return true;
    return false;
}

static bool interpreter(const char *b)
{
    return starts(b, "python") || starts(b, "libpython");
}

/* `name` equals `want` up to a compiler's suffix (".isra.0",
 * ".constprop.0", "@plt"). */
static bool is(const char *name, const char *want)
{
    size_t n = strlen(want);
    return !strncmp(name, want, n) &&
           (!name[n] || name[n] == '.' || name[n] == '@');
}

static bool one_of(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (is(name, *list))
            return true;
    return false;
}

/* Names that are the runtime's in any module (distinctive enough), and
 * generic ones that are only in the C library. */
static const char *const program_any[] = {
    "_start", "__libc_start_main", "__libc_start_main_impl",
    "__libc_start_main_alias_2", "__libc_start_call_main", "__libc_csu_init",
    "_dl_start_user", "_dl_start", NULL};
static const char *const program_clib[] = {
    "_start_c", "libc_start_main_stage2", "libc_start_init", "_dl_init",
    "call_init", NULL};
static const char *const thread_any[] = {"__clone", "__clone3",
                                         "__clone_internal", "start_thread",
                                         NULL};
static const char *const thread_clib[] = {"clone", "clone3", "start",
                                          "start_c11", "thread_start", NULL};

gpuprof__an_rt_what gpuprof__an_rt_classify(const char *module,
                                            const char *function)
{
    if (!module)
        return GPUPROF__AN_RT_NO;
    if (gpuprof__an_is_pyframe(module))
        return GPUPROF__AN_RT_PYTHON;
    if (!strcmp(module, "<truncated>"))
        return GPUPROF__AN_RT_CUT;
    const char *b = strrchr(module, '/');
    b = b ? b + 1 : module;
    bool c = clib(b);
    if (!function || !*function)
        return c                ? GPUPROF__AN_RT_LIBC
               : interpreter(b) ? GPUPROF__AN_RT_INTERP
                                : GPUPROF__AN_RT_NO;
    if (!strncmp(function, "__GI_", 5)) /* glibc's internal alias */
        function += 5;
    if (one_of(function, program_any) || (c && one_of(function, program_clib)))
        return GPUPROF__AN_RT_PROGRAM;
    if (one_of(function, thread_any) || (c && one_of(function, thread_clib)))
        return GPUPROF__AN_RT_THREAD;
    return interpreter(b) ? GPUPROF__AN_RT_INTERP : GPUPROF__AN_RT_NO;
}

/* Per node: the class of the frame it belongs to (an INNER node's is its
 * FRAME's), and whether a Python frame follows through the interpreter's
 * frames only. */
enum { PY_BELOW = 0x10, MEMBER = 0x20, KEEP = 0x40 };

/* A node of a frame (a <truncated> frame is none: a path starts below). */
static bool frame_level(const gpuprof__an_rt_node *n, uint32_t i)
{
    return i != UINT32_MAX && n[i].level != GPUPROF__AN_RT_OTHER &&
           !(n[i].level == GPUPROF__AN_RT_FRAME &&
             n[i].what == GPUPROF__AN_RT_CUT);
}

int gpuprof__an_rt_mark(const gpuprof__an_rt_node *n, uint32_t count,
                        uint8_t *flags)
{
    memset(flags, 0, count);
    uint8_t *what = malloc(count ? count : 1); /* the frame's class */
    if (!what)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t p = n[i].parent;
        what[i] = n[i].level == GPUPROF__AN_RT_FRAME   ? n[i].what
                  : n[i].level == GPUPROF__AN_RT_INNER && frame_level(n, p)
                      ? what[p]
                      : GPUPROF__AN_RT_NO;
    }
    /* Children before parents: a Python frame below, through the
     * interpreter's frames only. */
    for (uint32_t i = count; i-- > 0;) {
        if (what[i] == GPUPROF__AN_RT_PYTHON)
            flags[i] |= PY_BELOW;
        uint32_t p = n[i].parent;
        if ((flags[i] & PY_BELOW) && p != UINT32_MAX &&
            what[p] == GPUPROF__AN_RT_INTERP)
            flags[p] |= PY_BELOW;
    }
    /* Parents first: the leading runs, and where a thread's begins. */
    for (uint32_t i = 0; i < count; i++) {
        uint32_t p = n[i].parent;
        bool in_run = frame_level(n, p) && (flags[p] & MEMBER);
        if (n[i].level == GPUPROF__AN_RT_INNER) {
            if (in_run)
                flags[i] |= MEMBER;
            continue;
        }
        if (!frame_level(n, i) || (frame_level(n, p) && !in_run))
            continue; /* not the lead of a path */
        uint8_t w = what[i];
        bool cut = p != UINT32_MAX && n[p].level == GPUPROF__AN_RT_FRAME &&
                   n[p].what == GPUPROF__AN_RT_CUT;
        if (w == GPUPROF__AN_RT_PROGRAM || w == GPUPROF__AN_RT_THREAD ||
            (w == GPUPROF__AN_RT_LIBC && !cut) ||
            (w == GPUPROF__AN_RT_INTERP && (flags[i] & PY_BELOW))) {
            flags[i] |= MEMBER;
            if (!in_run &&
                (w == GPUPROF__AN_RT_THREAD || w == GPUPROF__AN_RT_LIBC))
                flags[i] |= GPUPROF__AN_RT_THREAD_ROOT;
        }
    }
    /* Children before parents: a runtime frame with a value of its own
     * stays, and so does the rest of its frame above it. */
    for (uint32_t i = count; i-- > 0;) {
        if ((flags[i] & MEMBER) && n[i].own)
            flags[i] |= KEEP;
        uint32_t p = n[i].parent;
        if ((flags[i] & KEEP) && n[i].level == GPUPROF__AN_RT_INNER &&
            frame_level(n, p))
            flags[p] |= KEEP;
    }
    for (uint32_t i = 0; i < count; i++) {
        bool hide = (flags[i] & MEMBER) && !(flags[i] & KEEP) &&
                    !(flags[i] & GPUPROF__AN_RT_THREAD_ROOT);
        flags[i] = (uint8_t)((flags[i] & GPUPROF__AN_RT_THREAD_ROOT) |
                             (hide ? GPUPROF__AN_RT_HIDDEN : 0));
    }
    free(what);
    return 0;
}
