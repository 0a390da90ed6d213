/*
 * an_runtime.h - the runtime's frames at the top of every call path: how
 * the C library starts a program (_start, __libc_start_main, ...) and a
 * thread (clone, start_thread, ...), and how an interpreter reaches its
 * first Python frame. They are measured and kept like every frame; the
 * views and exports hide them unless asked (GPUPROF_AN_RUNTIME_FRAMES), so
 * that a tree reads "<program root> -> main" and "<thread root> -> the
 * thread's function", as HPCToolkit's do.
 *
 * One place decides, for every tree the analysis shows: the database's
 * contexts (an_db.c, at open) and the merged tree of `gpuprof report DIR`
 * (views/an_gpu.c) describe their nodes as gpuprof__an_rt_node and get
 * each node's flags from gpuprof__an_rt_mark.
 */
#ifndef GPUPROF_AN_RUNTIME_H
#define GPUPROF_AN_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

/* What one frame is, from its load module and its function's name (NULL
 * or "" when it has none). */
typedef enum gpuprof__an_rt_what {
    GPUPROF__AN_RT_NO = 0,      /* the program's own code, or a library's */
    GPUPROF__AN_RT_PROGRAM = 1, /* the C runtime starting the program */
    GPUPROF__AN_RT_THREAD = 2,  /* the C library starting a thread */
    GPUPROF__AN_RT_LIBC = 3,    /* a frame of the C library or the dynamic
                                   loader without a name (no symbols) */
    GPUPROF__AN_RT_INTERP = 4,  /* a frame of a Python interpreter's own
                                   code (python3.x, libpython3.x.so) */
    GPUPROF__AN_RT_PYTHON = 5,  /* a Python function's frame */
    GPUPROF__AN_RT_CUT = 6      /* the <truncated> frame above a path cut
                                   at its depth limit (lib/core/unwind.h) */
} gpuprof__an_rt_what;

gpuprof__an_rt_what gpuprof__an_rt_classify(const char *module,
                                            const char *function);

/* A node's place in a frame: OTHER for the root, regions, GPU operations
 * and what lies beneath them; FRAME for a node that starts a frame (a CPU
 * frame, or the out-of-line function of one expanded by the structure
 * pass); INNER for the rest of an expanded frame (inlined functions and
 * source lines), which belongs to the FRAME above it. */
enum { GPUPROF__AN_RT_OTHER = 0, GPUPROF__AN_RT_FRAME = 1,
       GPUPROF__AN_RT_INNER = 2 };

typedef struct gpuprof__an_rt_node {
    uint32_t parent; /* UINT32_MAX for a root; parents precede children */
    uint8_t level;   /* GPUPROF__AN_RT_OTHER, _FRAME, _INNER */
    uint8_t what;    /* gpuprof__an_rt_what of a FRAME node (else ignored) */
    uint8_t own;     /* the node has a value of its own (exclusive) */
} gpuprof__an_rt_node;

/* Flags of a node (the values of GPUPROF_AN_CONTEXT_RUNTIME and
 * GPUPROF_AN_CONTEXT_THREAD_ROOT): HIDDEN, a runtime frame that views
 * leave out; THREAD_ROOT, the outermost frame of a thread's start, which
 * they name "<thread root>". */
#define GPUPROF__AN_RT_HIDDEN 0x1u
#define GPUPROF__AN_RT_THREAD_ROOT 0x2u

/* Marks n[0..count): a frame is the runtime's when it leads a call path
 * (its parent is no frame, or is the runtime's itself) and is a program or
 * thread start, an unnamed frame of the C library, or an interpreter's
 * frame with only interpreter frames between it and a Python frame. A
 * run of them that begins with a thread start keeps its first frame as
 * the thread root; the others are hidden, unless they have a value of
 * their own (then they stay, with the rest of their frame, so that hiding
 * loses nothing). flags[i] gets GPUPROF__AN_RT_* bits. -1 when out of
 * memory (flags then all 0), else 0. */
int gpuprof__an_rt_mark(const gpuprof__an_rt_node *n, uint32_t count,
                        uint8_t *flags);

/* The nearest ancestor of node i that is shown (not HIDDEN; UINT32_MAX:
 * none), given the nodes' parents and flags. */
static inline uint32_t gpuprof__an_rt_up(const gpuprof__an_rt_node *n,
                                         const uint8_t *flags, uint32_t i)
{
    uint32_t p = n[i].parent;
    while (p != UINT32_MAX && (flags[p] & GPUPROF__AN_RT_HIDDEN))
        p = n[p].parent;
    return p;
}

#endif /* GPUPROF_AN_RUNTIME_H */
