/*
 * unwind.h - CPU calling contexts: the load-module table and call-path
 * capture into a thread's CCT (DESIGN §3 step 1, seed 001 "Fast
 * Unwinding").
 *
 * A GPU API hook asks for the call path of the application thread that made
 * the call. We take it with our own walk (fasttrace.c: frame rules read
 * from .eh_frame and cached per return address; the frames a walk shares
 * with the thread's previous one are checked, not walked), falling back to
 * libunwind's unw_backtrace (its fast-trace cache: about 7-10 ns a frame;
 * a unw_step loop, 330-1000 ns a frame, never runs on a hot path) for any
 * path with a frame it cannot follow, and store each frame as (module id,
 * offset from the module's load address), so a path means the same thing in every
 * process and a file can be symbolized after the run. The module table comes
 * from dl_iterate_phdr and is rebuilt when a return address falls outside
 * every known module and the loader has loaded something since (a dlopen),
 * and before a capture when the loader has unloaded something since (a
 * dlclose: another library may now sit at the same addresses; libgpuprof.so
 * interposes dlclose so that a capture need not ask the loader, dl.c).
 *
 * Readers of the table take no lock: the current sorted range table is one
 * pointer loaded with acquire; a refresh builds a new table under a mutex
 * and publishes it; old tables stay allocated (refreshes are rare, after
 * dlopen) so a reader never sees freed memory. Module ids are stable for
 * the life of the process.
 */
#ifndef GPUPROF_CORE_UNWIND_H
#define GPUPROF_CORE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/atomics.h"
#include "core/cct.h"

#define GP_MAX_FRAMES 128 /* deeper paths are cut at the outermost frames */
/* A path cut at its depth limit has no outermost frames: it goes beneath a
 * frame node of this pseudo-module (offset 0) under its parent, counted in
 * callpaths.truncated, so it never stands beside the whole paths as a root
 * of its own. */
#define GP_TRUNCATED_MODULE "<truncated>"

typedef struct gp_module_info {
    const char *path; /* the executable's real path for the main program */
    uint64_t base;    /* load address (dlpi_addr) */
    uint64_t size;    /* extent of its executable segments from base */
    uint32_t flags;   /* GPUPROF_IO_MODULE_* (a GPU binary) */
} gp_module_info;

/* The module containing `pc` and the offset of pc in it; refreshes the
 * table once on a miss. false: no module contains pc. Any thread. */
bool gpuprof__module_find(uintptr_t pc, uint32_t *id, uint64_t *offset);
/* Modules known so far: ids 0 .. count-1. Any thread. */
uint32_t gpuprof__module_count(void);
const gp_module_info *gpuprof__module(uint32_t id);
/* Adds a module no address maps to (a GPU binary: `flags`
 * GPUPROF_IO_MODULE_GPU), or finds it when (path, base) is known; its id,
 * UINT32_MAX when the table is full or memory is short. Any thread. */
uint32_t gpuprof__module_add(const char *path, uint32_t flags, uint64_t base,
                             uint64_t size);
/* Forces a rescan (tests; after dlopen the table also refreshes itself). */
void gpuprof__modules_refresh(void);

/* Captures the calling thread's call path, drops the innermost `skip`
 * frames (the library's own), and inserts the rest beneath `parent` of the
 * owner's tree `t`, outermost frame first. Returns the node of the
 * innermost frame (`parent` when no frame could be taken), or GP_CCT_NONE
 * when out of memory. Frames whose address is in no module are counted in
 * *unknown and skipped. Owner thread only. */
uint32_t gpuprof__callpath(gp_cct *t, uint32_t parent, int skip,
                           uint32_t *unknown);

/* A thread's last call path: launches in a loop come from the same path,
 * and a hook then only unwinds and compares return addresses, outermost
 * first; only the frames past the common prefix are looked up and
 * inserted. Frame j (0 the outermost) has its address at
 * ip[GP_MAX_FRAMES - 1 - j], in the order of a capture's buffer, so that
 * the two compare as runs of words. The hook also keeps its last
 * placeholder: the node of an operation of kind op_kind beneath op_leaf.
 * Owner-only, like the tree it points into. */
typedef struct gp_path_cache {
    const gp_cct *tree;
    const void *modules; /* the module table it was built with */
    int hidden;          /* always-hidden ranges then */
    bool python;         /* py[] may hold Python frames */
    uint32_t parent;
    int n;                        /* frames below */
    uint32_t op_leaf, op_kind, op_node; /* op_leaf GP_CCT_NONE: none */
    void *ip[GP_MAX_FRAMES];
    uint64_t py[GP_MAX_FRAMES];   /* a Python frame's key; 0: native */
    uint32_t node[GP_MAX_FRAMES]; /* the node after frame j */
} gp_path_cache;

/* Hides the text [lo, hi) (an interception layer's loader, e.g.
 * libOpenCL) from call paths: after the `skip` frames, innermost frames in
 * a hidden range are dropped too, however many the loader adds (a tail
 * call adds none). At most 8 ranges; any thread. */
void gpuprof__unwind_hide(uintptr_t lo, uintptr_t hi);
/* Hides the text [lo, hi) from call paths wherever its frames stand (the
 * library's own: libgpuprof.so, the OpenCL layer): the path goes on
 * without them. At most 8 ranges; any thread. */
void gpuprof__unwind_hide_always(uintptr_t lo, uintptr_t hi);
/* Hides always the executable segments of the shared object holding
 * `addr`; nothing when that is the main program (a static link). */
void gpuprof__unwind_hide_module_of(const void *addr);

/* For a profiling signal handler: the interrupted thread's return
 * addresses (innermost first), or -1 when that is not safe now (the thread
 * is unwinding itself or is inside a bracket below, or this build's
 * unwinder is not signal-safe). */
int gpuprof__backtrace_in_signal(void **buf, int max);
/* Brackets the library's own calls that take the dynamic loader's lock
 * (dl_iterate_phdr, dlsym): unw_backtrace may take it too, so a profiling
 * signal meanwhile takes no sample. Nestable; the calling thread only. */
void gpuprof__loader_lock_begin(void);
void gpuprof__loader_lock_end(void);
/* Inserts captured addresses ips[0..n) (innermost first) beneath `parent`
 * of the owner's tree `t`; `cut`: the capture filled its buffer (beneath
 * <truncated>); as gpuprof__callpath otherwise. */
uint32_t gpuprof__callpath_ips(gp_cct *t, uint32_t parent, void *const *ips,
                               int n, bool cut, uint32_t *unknown);

/* As gpuprof__callpath, through `c` (zeroed before first use). */
uint32_t gpuprof__callpath_cached(gp_cct *t, uint32_t parent, int skip,
                                  uint32_t *unknown, gp_path_cache *c);

/* The two halves of a capture, for a caller that unwinds in one place and
 * inserts in another (the hook, gpu.c; a benchmark of each).
 * gpuprof__unwind_here: the loader check (gpuprof__modules_check), then
 * the calling thread's return addresses, innermost first, buf[0] in the
 * function it is inlined into; their count. gpuprof__unwind_capture: the
 * same out of line (buf[0] is its own frame). Not in a signal handler
 * (gpuprof__backtrace_in_signal is). */
extern GP_HIDDEN __thread int gpuprof__unwinding
    __attribute__((tls_model("initial-exec")));
int unw_backtrace(void **buf, int size); /* libunwind.h */
int gpuprof__backtrace_tsan(void **buf, int max);
/* fasttrace.c: the calling thread's return addresses as unw_backtrace
 * gives them (buf[0] in the caller), walked by x86-64 frame rules cached
 * per return address and read from the modules' .eh_frame (a hash lookup
 * and two or three loads a frame), the frames shared with the thread's
 * previous walk checked word by word instead (a load and a compare).
 * -1 when some frame's rule is not a simple one (a signal frame, a DWARF
 * expression, no unwind information): the caller then takes unw_backtrace.
 * Learning a new address's rule takes the loader's lock: not in a signal
 * handler. Any thread, inside gpuprof__unwinding's count (its memo is used
 * at depth 1 only). */
int gpuprof__fast_trace(void **buf, int max);
/* Forgets every rule (after a dlclose: unwind.c's table refresh). */
void gpuprof__fast_trace_flush(void);
/* Fork: its mutexes held across (prepare), released in parent and child. */
void gpuprof__fast_trace_atfork_prepare(void);
void gpuprof__fast_trace_atfork_release(void);
const void *gpuprof__modules_check(void);
static inline __attribute__((always_inline)) int
gpuprof__unwind_here(void **buf, int max)
{
    gpuprof__modules_check();
    gpuprof__unwinding++;
#if defined(__SANITIZE_THREAD__)
    int n = gpuprof__backtrace_tsan(buf, max);
#else
    int n = gpuprof__fast_trace(buf, max);
    if (__builtin_expect(n < 0, 0))
        n = unw_backtrace(buf, max);
#endif
    gpuprof__unwinding--;
    return n;
}
int gpuprof__unwind_capture(void **buf, int max);
/* gpuprof__callpath_insert: inserts buf[skip..n) (a capture of this
 * thread, taken just now by one of the above: Python frames are read from
 * the thread's live interpreter state) as gpuprof__callpath does, through
 * `c` when not NULL. Owner thread only. */
uint32_t gpuprof__callpath_insert(gp_cct *t, uint32_t parent, void *const *buf,
                                  int n, int skip, uint32_t *unknown,
                                  gp_path_cache *c);
/* gpuprof__modules_check, what every capture does first: makes sure no
 * library was unloaded since the module table was built, else rebuilds the
 * table and flushes libunwind's cache (the addresses may hold another
 * library's code now); returns the table (opaque). With dlclose interposed
 * (dl.c) a load and a compare: it asks the loader itself (one early-exit
 * dl_iterate_phdr, the loader's lock) only after a dlclose, at a thread's
 * first capture and every GP_LOADER_RECHECK captures after (closes that
 * bypass the interposition: unwind.c says which). Any thread, not in a
 * signal handler. */
#define GP_LOADER_RECHECK 64
/* The loader's count of objects loaded (dlpi_adds) when it was last asked
 * (a capture, a lookup miss): what pyframes.c watches to look for an
 * interpreter again. */
uint64_t gpuprof__loader_adds(void);
/* What the dlclose interposition (dl.c) tells the check: a close begins
 * (before the real one) and ends (after it); whether the process's dlclose
 * is ours, so that every close but those that bypass symbol lookup is
 * seen. Any thread; begin and end are async-signal-safe. */
void gpuprof__loader_close_begin(void);
void gpuprof__loader_close_end(void);
void gpuprof__loader_set_interposed(bool on);
bool gpuprof__loader_interposed(void);
/* Closes seen through the interposition so far (tests). */
uint64_t gpuprof__loader_closes(void);

/* ---- Python frames (pyframes.c) ----------------------------------------
 * A Python frame is a frame node of a pseudo module named
 * "py:<qualname>:<file>" whose offset is the line (doc/FORMATS.md). */
#define GP_PY_MODULE_PREFIX "py:"
#define GP_PY_FRAME (UINT64_C(1) << 63) /* py[]: (module << 32 | line) */
/* The setting GPUPROF_PYTHON_FRAMES (on unless turned off). Any thread. */
void gpuprof__pyframes_enable(bool on);
/* Whether paths get Python frames: enabled and a CPython 3.11 interpreter
 * found (looked for once, at the first call). Any thread. */
bool gpuprof__pyframes_active(void);
/* The calling thread's path buf[0..n) (innermost first) with each frame of
 * the interpreter loop replaced by the Python frames it runs, into
 * out/py[0..cap) (py[k] = GP_PY_FRAME | module << 32 | line, out[k] the
 * code object; py[k] = 0 and out[k] the address for a native frame).
 * Returns the count; -1 when the path has no interpreter frame or the
 * Python frames cannot be read (use buf as it is). *cut: cap was reached
 * before the outermost frame. Only after gpuprof__pyframes_active. */
int gpuprof__pyframes_expand(void *const *buf, int n, void **out,
                             uint64_t *py, int cap, bool *cut);
/* The line of the instruction `at` code units into a code object, from
 * its 3.11 location table p[0..size) and first line; 0 when it has none. */
uint32_t gpuprof__py_line(const uint8_t *p, int64_t size, int32_t first,
                          uint64_t at);

#endif /* GPUPROF_CORE_UNWIND_H */
