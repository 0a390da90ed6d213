/*
 * host.c - what the host layer's rooms share (host.h): the decision to
 * record, the record itself, which call sites are the program's, and the
 * counts of threads blocked per object.
 *
 * A call site is the program's unless the object it lies in is a runtime
 * the library measures another way (OpenCL, CUDA, Level Zero, MPI, OpenMP:
 * their threads and locks implement dependencies their own records already
 * carry, and PoCL's worker threads would otherwise look like threads of
 * the program), the C library or the loader, or libgpuprof itself (its
 * monitor, tracing threads and locks). The C++ library is the program's:
 * std::thread and std::condition_variable call pthreads from it.
 */
#define _GNU_SOURCE
#include "host/host.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/internal.h"
#include "core/trace.h"
#include "io/trace.h"

_Atomic uint32_t gpuprof__host_waiters[GP_HOST_WAITERS];

/* interpose.c, when linked in (libgpuprof.so only): our pthread_create. */
extern const void *const gpuprof__host_own_create
    __attribute__((weak, visibility("hidden")));

static _Atomic uint64_t creations;

bool gpuprof__host_recording(void)
{
    return gp_mode() == GP_MODE_MEASURING && gpuprof__trace_on() &&
           !gpuprof__own_thread;
}

void gpuprof__host_record(uint32_t op, uint32_t flags, uint64_t t0,
                          uint64_t t1, uint64_t object, uint64_t aux)
{
    if (!gpuprof__host_recording())
        return;
    gp_thread *t = gpuprof__thread_get();
    if (t && t->trace)
        gpuprof__trace_host(t->trace, op, flags, t0, t1, object, aux);
}

uint64_t gpuprof__host_creation(void)
{
    return gp_fetch_add_relaxed(&creations, 1u) + 1u;
}

/* The start is taken before the thread is registered: registering it
 * (its state, its trace stream: tens of microseconds) is the thread's own
 * work, not the time its creation took. */
void gpuprof__host_thread_begins(uint64_t creation)
{
    uint64_t now = gp_ticks();
    gp_thread *t = gpuprof__thread_started();
    if (t && t->trace && gpuprof__host_recording())
        gpuprof__trace_host(t->trace, GPUPROF_IO_HOST_START, 0, now, now,
                            (uint64_t)pthread_self(), creation);
}

void gpuprof__host_thread_ends(void)
{
    gp_thread *t = gpuprof__tls_self;
    if (t && t->trace && gpuprof__host_recording()) {
        uint64_t now = gp_ticks();
        gpuprof__trace_host(t->trace, GPUPROF_IO_HOST_EXIT, 0, now, now,
                            (uint64_t)pthread_self(), 0);
    }
}

/* ---- call sites ---------------------------------------------------------- */
const char *const gpuprof__host_runtimes[] = {
    "libgpuprof", "libc.so", "libc-", "ld-linux", "libpthread",
    "libOpenCL", "libpocl", "libcuda", "libcudart", "libcupti", "libnvidia",
    "libnvrtc", "libze_", "libigc", "libigdrcl", "libmpi", "libopen-pal",
    "libopen-rte", "libpmix", "libucp", "libucs", "libuct", "libfabric",
    "libhwloc", "libevent", "libomp", "libiomp", "libgomp", "libtbb",
    "libtsan", /* ThreadSanitizer's interceptors stand between every
                  caller and us: no call is seen as the program's */
    NULL};

bool gpuprof__host_runtime_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 0; gpuprof__host_runtimes[i]; i++)
        if (!strncmp(base, gpuprof__host_runtimes[i],
                     strlen(gpuprof__host_runtimes[i])))
            return true;
    return false;
}

#define SITES 4 /* a program's own calls come from a few objects */
typedef struct site_cache {
    uintptr_t lo[SITES], hi[SITES]; /* executable segments seen, [lo, hi) */
    uint8_t user[SITES];
    uint32_t next;
} site_cache;
static __thread site_cache cache __attribute__((tls_model("initial-exec")));

typedef struct site_find {
    uintptr_t ra, lo, hi;
    const char *name;
    bool found;
} site_find;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    site_find *f = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && f->ra >= lo &&
            f->ra < hi) {
            *f = (site_find){f->ra, lo, hi, info->dlpi_name, true};
            return 1;
        }
    }
    return 0;
}

bool gpuprof__host_user_site(const void *ra)
{
    uintptr_t a = (uintptr_t)ra;
    site_cache *c = &cache;
    for (uint32_t i = 0; i < SITES; i++)
        if (a >= c->lo[i] && a < c->hi[i])
            return c->user[i];
    site_find f = {a, 0, 0, NULL, false};
    dl_iterate_phdr(find_object, &f);
    /* Code outside every object (a JIT's): the program's. The main
     * program's name is "". */
    bool user = !f.found || !f.name || !gpuprof__host_runtime_name(f.name);
    if (f.found) {
        uint32_t k = c->next++ % SITES;
        c->lo[k] = f.lo;
        c->hi[k] = f.hi;
        c->user[k] = user;
    }
    return user;
}

/* ---- init ---------------------------------------------------------------- */
void gpuprof__host_init(void)
{
    if (!gpuprof__trace_on())
        return;
    if (&gpuprof__host_own_create && gpuprof__host_own_create &&
        dlsym(RTLD_DEFAULT, "pthread_create") != gpuprof__host_own_create)
        gpuprof__log(GPUPROF_LOG_INFO,
                     "host threads: the program's pthread calls reach the C "
                     "library before libgpuprof (loaded late, or after "
                     "another library that defines them): thread joins, "
                     "barriers and contended locks are not in the trace "
                     "(link -lgpuprof, or measure with `gpuprof run`)");
    void *gomp = dlopen("libgomp.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (gomp) {
        gpuprof__log(GPUPROF_LOG_INFO,
                     "OpenMP: the program uses GCC's libgomp, which has no "
                     "OMPT interface: its parallel regions and barriers are "
                     "not in the trace (clang -fopenmp and LLVM's libomp "
                     "have it)");
        dlclose(gomp);
    }
}
