/*
 * self.c - the library's own work, kept apart from the program's.
 *
 * Some of what a backend does on an application thread is the library's
 * own doing, not the program's: saving a program's GPU binaries makes
 * PoCL compile every kernel (hundreds of ms after a warm cache) and write
 * files. Such work runs between gpuprof__self_begin and _end: its wall time
 * goes to the counter gpuprof.self_ns (outermost bracket only), and CPU
 * samplers (GPU_IDLE_CAUSE, core idle.c) take no sample meanwhile, so none of
 * it is blamed on the program's call paths.
 *
 * Helper processes: a runtime that compiles may start tools (a linker) by
 * fork + exec. A fork made while the forking thread is inside the library's
 * own work, or inside a runtime call a backend marked with
 * gpuprof__helpers_begin/_end (program builds), is such a helper, never
 * the measured program: the child's copy of the library goes quiet (no
 * profile at exit, nothing measured). Any other fork is measured as ever.
 * Both marks are per thread (a fork child has only the forking thread).
 * A helper started with posix_spawn + exec that initializes libgpuprof
 * anew (a preload shim) learns it from a page it inherits (below).
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

static void page_enter(unsigned bit);
static void page_leave(unsigned bit);

static __thread unsigned self_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned helper_depth
    __attribute__((tls_model("initial-exec")));
static __thread uint64_t self_t0 __attribute__((tls_model("initial-exec")));
/* Which brackets this thread counted on the shared page (bit 0: its own
 * work, bit 1: helpers), so a leave never takes back what was not added. */
static __thread unsigned page_held __attribute__((tls_model("initial-exec")));

void gpuprof__self_begin(void)
{
    if (self_depth++ == 0) {
        self_t0 = gp_mono_ns();
        page_enter(1);
    }
}

void gpuprof__self_end(void)
{
    if (self_depth == 0)
        return;
    if (--self_depth == 0) {
        gpuprof__stat_add(GP_STAT_SELF_NS, gp_mono_ns() - self_t0);
        page_leave(1);
    }
}

bool gpuprof__in_self(void) { return self_depth != 0; }

void gpuprof__helpers_begin(void)
{
    if (helper_depth++ == 0)
        page_enter(2);
}

void gpuprof__helpers_end(void)
{
    if (helper_depth && --helper_depth == 0)
        page_leave(2);
}

bool gpuprof__fork_is_helper(void)
{
    return self_depth != 0 || helper_depth != 0;
}

/* ---- helpers that exec: told through an inherited shared page ---------
 * A helper the runtime starts with posix_spawn (no fork handler runs) and
 * that loads libgpuprof again (a preload shim that initializes it in every
 * process) must not measure either. The measured process shares one page
 * (a memfd its children inherit, named with its pid in GPUPROF_HELPERS)
 * holding how many of its threads are inside either bracket; a process
 * whose parent is that pid and whose init finds the count above zero was
 * started meanwhile: its gpuprof_init declines. So is one started while
 * device work of the parent is in flight (`busy`, kept by a backend whose
 * runtime compiles lazily when a command runs: PoCL links each kernel's
 * work-group function with `ld` on its device thread). Process-wide, so a
 * child another thread of the program starts meanwhile is not measured
 * either (documented). */
#define HELPERS_MAGIC 0x67706870u /* "gphp" */

typedef struct helpers_page {
    uint32_t magic;
    int32_t pid;
    _Atomic uint32_t open; /* threads inside a bracket now */
    _Atomic int64_t busy;  /* device work in flight (gpuprof__helpers_busy) */
} helpers_page;

static helpers_page *_Atomic page;

static void page_enter(unsigned bit)
{
    helpers_page *p = gp_load_acquire(&page);
    if (p) {
        atomic_fetch_add_explicit(&p->open, 1, memory_order_seq_cst);
        page_held |= bit;
    }
}

static void page_leave(unsigned bit)
{
    helpers_page *p = gp_load_acquire(&page);
    if (p && (page_held & bit))
        atomic_fetch_sub_explicit(&p->open, 1, memory_order_seq_cst);
    page_held &= ~bit;
}

void gpuprof__helpers_export(void)
{
    if (gp_load_relaxed(&page))
        return;
    int fd = memfd_create("gpuprof-helpers", 0); /* inherited on purpose */
    if (fd < 0)
        return;
    helpers_page *p = MAP_FAILED;
    if (ftruncate(fd, sizeof(*p)) == 0)
        p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return;
    }
    p->magic = HELPERS_MAGIC;
    p->pid = (int32_t)getpid();
    atomic_init(&p->open, 0);
    atomic_init(&p->busy, 0);
    char v[48];
    snprintf(v, sizeof(v), "%d:%ld", fd, (long)getpid());
    setenv("GPUPROF_HELPERS", v, 1);
    gp_store_release(&page, p);
}

void gpuprof__helpers_busy(int64_t delta)
{
    helpers_page *p = gp_load_relaxed(&page);
    if (p)
        atomic_fetch_add_explicit(&p->busy, delta, memory_order_relaxed);
}

void gpuprof__helpers_atfork_child(void)
{
    /* The page is the parent's: this child's brackets are its own. */
    gp_store_relaxed(&page, NULL);
}

bool gpuprof__started_as_helper(void)
{
    const char *v = getenv("GPUPROF_HELPERS");
    int fd;
    long pid;
    if (!v || sscanf(v, "%d:%ld", &fd, &pid) != 2 || fd < 0 ||
        pid != (long)getppid())
        return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(helpers_page))
        return false;
    helpers_page *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
                           MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return false;
    bool helper = p->magic == HELPERS_MAGIC && p->pid == (int32_t)pid &&
                  (atomic_load_explicit(&p->open, memory_order_seq_cst) > 0 ||
                   atomic_load_explicit(&p->busy, memory_order_relaxed) > 0);
    munmap(p, sizeof(*p));
    return helper;
}
