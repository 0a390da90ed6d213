/*
 * self.c - the library's own work, kept apart from the program's.
 *
 * Some of what a backend does on an application thread is the library's
 * own doing, not the program's: saving a program's GPU binaries makes
 * PoCL compile every kernel (hundreds of ms after a warm cache) and write
 * files. Such work runs between gpuprof__self_begin and _end: its wall time
 * goes to the counter gpuprof.self_ns (outermost bracket only), and CPU
 * samplers (GPU_IDLE_CAUSE, cl_idle.c) take no sample meanwhile, so none of
 * it is blamed on the program's call paths.
 *
 * Helper processes: a runtime that compiles may start tools (a linker) by
 * fork + exec. A fork made while the forking thread is inside the library's
 * own work, or inside a runtime call a backend marked with
 * gpuprof__helpers_begin/_end (program builds), is such a helper, never
 * the measured program: the child's copy of the library goes quiet (no
 * profile at exit, nothing measured). Any other fork is measured as ever.
 * Both marks are per thread (a fork child has only the forking thread).
 */
#include "core/internal.h"

static __thread unsigned self_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned helper_depth
    __attribute__((tls_model("initial-exec")));
static __thread uint64_t self_t0 __attribute__((tls_model("initial-exec")));

void gpuprof__self_begin(void)
{
    if (self_depth++ == 0)
        self_t0 = gp_mono_ns();
}

void gpuprof__self_end(void)
{
    if (self_depth == 0)
        return;
    if (--self_depth == 0)
        gpuprof__stat_add(GP_STAT_SELF_NS, gp_mono_ns() - self_t0);
}

bool gpuprof__in_self(void) { return self_depth != 0; }

void gpuprof__helpers_begin(void) { helper_depth++; }

void gpuprof__helpers_end(void)
{
    if (helper_depth)
        helper_depth--;
}

bool gpuprof__fork_is_helper(void)
{
    return self_depth != 0 || helper_depth != 0;
}
