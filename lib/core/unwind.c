/*
 * unwind.c - the load-module table and call-path capture (see unwind.h).
 */
#define _GNU_SOURCE
#include "core/unwind.h"

#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomics.h"
#include "core/internal.h"
#include "io/io.h"

/* Under ThreadSanitizer, libunwind's per-thread trace cache is freed by a
 * TSD destructor that takes a mutex after TSan has torn the exiting thread
 * down (it crashes), and glibc's backtrace() is libunwind's too once we link
 * it. TSan builds therefore walk the stack with libgcc's unwinder, looked up
 * in libgcc_s itself: slower, same frames (the first is the caller's). */
#if defined(__SANITIZE_THREAD__)
#include <dlfcn.h>
#include <unwind.h>

typedef _Unwind_Reason_Code (*gp_bt_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*gp_ip_fn)(struct _Unwind_Context *);
static gp_bt_fn tsan_bt;
static gp_ip_fn tsan_ip; /* libgcc's: libunwind's reads another layout */
static pthread_once_t tsan_bt_once = PTHREAD_ONCE_INIT;

static void tsan_bt_init(void)
{
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        tsan_ip = (gp_ip_fn)dlsym(h, "_Unwind_GetIP");
        tsan_bt = tsan_ip ? (gp_bt_fn)dlsym(h, "_Unwind_Backtrace") : NULL;
    }
}

typedef struct bt_state {
    void **buf;
    int n, max, skip;
} bt_state;

static _Unwind_Reason_Code bt_one(struct _Unwind_Context *c, void *arg)
{
    bt_state *s = arg;
    if (s->skip > 0) {
        s->skip--;
        return _URC_NO_REASON;
    }
    void *ip = (void *)tsan_ip(c);
    if (s->n >= s->max || !ip)
        return _URC_END_OF_STACK;
    s->buf[s->n++] = ip;
    return _URC_NO_REASON;
}

__attribute__((noinline)) static int gp_backtrace_tsan(void **buf, int max)
{
    pthread_once(&tsan_bt_once, tsan_bt_init);
    bt_state s = {buf, 0, max, 1}; /* skip this function's own frame */
    if (tsan_bt)
        tsan_bt(bt_one, &s);
    return s.n;
}
#define GP_BACKTRACE(buf, n) gp_backtrace_tsan((buf), (n))
#else
#define GP_BACKTRACE(buf, n) unw_backtrace((buf), (n))
#endif

#define MAX_MODULES 4096

typedef struct range {
    uintptr_t lo, hi;
    uint32_t id;
} range;

typedef struct table {
    struct table *prev; /* older tables: kept, readers may hold them */
    uint32_t n;
    range r[];
} table;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gp_module_info mods[MAX_MODULES];
static _Atomic uint32_t nmods;
static table *_Atomic current;

/* The id of (path, base), added with its size if new (published after the
 * entry is complete); UINT32_MAX when full. Under lock. */
static uint32_t module_id(const char *path, uint64_t base, uint64_t size,
                          uint32_t flags)
{
    uint32_t n = gp_load_relaxed(&nmods);
    for (uint32_t i = 0; i < n; i++)
        if (mods[i].base == base && strcmp(mods[i].path, path) == 0)
            return i;
    char *copy = n < MAX_MODULES ? strdup(path) : NULL;
    if (!copy)
        return UINT32_MAX;
    mods[n] = (gp_module_info){copy, base, size, flags};
    gp_store_release(&nmods, n + 1);
    return n;
}

typedef struct scan {
    range *r;
    uint32_t n, cap;
    char exe[PATH_MAX];
} scan;

static int collect(struct dl_phdr_info *info, size_t info_size, void *arg)
{
    (void)info_size;
    scan *sc = arg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
                                                             : sc->exe;
    uint64_t extent = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
            ph->p_vaddr + ph->p_memsz > extent)
            extent = ph->p_vaddr + ph->p_memsz;
    }
    if (extent == 0)
        return 0; /* nothing executable */
    uint32_t id = module_id(path, info->dlpi_addr, extent, 0);
    if (id == UINT32_MAX)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (sc->n == sc->cap) {
            uint32_t cap = sc->cap ? sc->cap * 2 : 64;
            range *r = realloc(sc->r, cap * sizeof(*r));
            if (!r)
                return 1;
            sc->r = r;
            sc->cap = cap;
        }
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        sc->r[sc->n++] = (range){lo, lo + ph->p_memsz, id};
    }
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

void gpuprof__modules_refresh(void)
{
    scan sc = {0};
    ssize_t n = readlink("/proc/self/exe", sc.exe, sizeof(sc.exe) - 1);
    if (n > 0)
        sc.exe[n] = '\0';
    else
        strcpy(sc.exe, "[executable]");
    pthread_mutex_lock(&lock);
    dl_iterate_phdr(collect, &sc);
    qsort(sc.r, sc.n, sizeof(*sc.r), by_lo);
    table *t = malloc(sizeof(*t) + sc.n * sizeof(range));
    if (t) {
        t->prev = gp_load_relaxed(&current);
        t->n = sc.n;
        if (sc.n)
            memcpy(t->r, sc.r, sc.n * sizeof(range));
        gp_store_release(&current, t);
    }
    pthread_mutex_unlock(&lock);
    free(sc.r);
}

uint32_t gpuprof__module_add(const char *path, uint32_t flags, uint64_t base,
                             uint64_t size)
{
    pthread_mutex_lock(&lock);
    uint32_t id = module_id(path, base, size, flags);
    pthread_mutex_unlock(&lock);
    return id;
}

static const range *search(const table *t, uintptr_t pc)
{
    uint32_t lo = 0, hi = t ? t->n : 0;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (pc < t->r[mid].lo)
            hi = mid;
        else if (pc >= t->r[mid].hi)
            lo = mid + 1;
        else
            return &t->r[mid];
    }
    return NULL;
}

bool gpuprof__module_find(uintptr_t pc, uint32_t *id, uint64_t *offset)
{
    const range *r = search(gp_load_acquire(&current), pc);
    if (!r) { /* a module loaded since the last scan? */
        gpuprof__modules_refresh();
        r = search(gp_load_acquire(&current), pc);
    }
    if (!r)
        return false;
    *id = r->id;
    *offset = pc - mods[r->id].base;
    return true;
}

uint32_t gpuprof__module_count(void) { return gp_load_acquire(&nmods); }

const gp_module_info *gpuprof__module(uint32_t id)
{
    return id < gp_load_acquire(&nmods) ? &mods[id] : NULL;
}

/* Hidden text ranges (gpuprof__unwind_hide): written once each, then read
 * by every hook; nhidden is published after the range. */
#define MAX_HIDDEN 8
typedef struct { _Atomic uintptr_t lo, hi; } hidden_range;
static hidden_range hidden[MAX_HIDDEN];
static _Atomic int nhidden;
static pthread_mutex_t hide_mu = PTHREAD_MUTEX_INITIALIZER;

/* Adds [lo, hi) to table `tab` of MAX_HIDDEN ranges, *n of them used (a
 * range already there or a full table: nothing). */
static void hide_add(hidden_range *tab, _Atomic int *count, uintptr_t lo,
                     uintptr_t hi)
{
    pthread_mutex_lock(&hide_mu);
    int n = gp_load_relaxed(count);
    bool dup = false;
    for (int i = 0; i < n; i++)
        dup |= gp_load_relaxed(&tab[i].lo) == lo;
    if (!dup && n < MAX_HIDDEN && lo < hi) {
        gp_store_relaxed(&tab[n].lo, lo);
        gp_store_relaxed(&tab[n].hi, hi);
        gp_store_release(count, n + 1);
    }
    pthread_mutex_unlock(&hide_mu);
}

void gpuprof__unwind_hide(uintptr_t lo, uintptr_t hi)
{
    hide_add(hidden, &nhidden, lo, hi);
}

/* Whether pc lies in one of the first n ranges of `tab`. */
static inline bool in_ranges(const hidden_range *tab, int n, uintptr_t pc)
{
    for (int i = 0; i < n; i++)
        if (pc >= gp_load_relaxed(&tab[i].lo) &&
            pc < gp_load_relaxed(&tab[i].hi))
            return true;
    return false;
}

/* `skip`, grown past innermost frames in hidden ranges. */
static inline int skip_hidden(void *const *buf, int n, int skip)
{
    int nh = gp_load_acquire(&nhidden);
    if (!nh)
        return skip;
    while (skip < n && in_ranges(hidden, nh, (uintptr_t)buf[skip]))
        skip++;
    return skip;
}

/* The library's own text (libgpuprof.so, the OpenCL layer), hidden from
 * every call path wherever it stands in it (gpuprof__unwind_hide_always). */
static hidden_range hidden_all[MAX_HIDDEN];
static _Atomic int nhidden_all;

void gpuprof__unwind_hide_always(uintptr_t lo, uintptr_t hi)
{
    hide_add(hidden_all, &nhidden_all, lo, hi);
}


/* Finds the module holding `arg` (an address) and hides its executable
 * segments always, unless it is the main program (a static link: the
 * library's text is the program's). */
static int hide_module_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t pc = (uintptr_t)arg;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && pc >= lo && pc < lo + ph->p_memsz;
    }
    if (!mine)
        return 0;
    if (info->dlpi_name && info->dlpi_name[0])
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
                gpuprof__unwind_hide_always(info->dlpi_addr + ph->p_vaddr,
                                            info->dlpi_addr + ph->p_vaddr +
                                                ph->p_memsz);
        }
    return 1;
}

void gpuprof__unwind_hide_module_of(const void *addr)
{
    dl_iterate_phdr(hide_module_of, (void *)addr);
}

/* Inserts the frames buf[n-1-j], j in [from, kept) (outermost first),
 * beneath `node`, leaving out the library's own; py (NULL: all native)
 * marks Python frames (pyframes.c). With a cache, records each frame's
 * address, Python key and node. */
static uint32_t insert_frames(gp_cct *t, uint32_t node, void *const *buf,
                              const uint64_t *py, int n, int from, int kept,
                              uint32_t *unknown, gp_path_cache *c)
{
    int nh = gp_load_acquire(&nhidden_all);
    for (int j = from; j < kept; j++) {
        void *ip = buf[n - 1 - j];
        uint64_t key = py ? py[n - 1 - j] : 0;
        uint32_t id = 0;
        uint64_t off = 0;
        bool keep = false;
        if (key) { /* a Python frame: (module, line) already */
            id = (uint32_t)(key >> 32) & 0x7fffffffu;
            off = (uint32_t)key;
            keep = true;
        } else if (nh && in_ranges(hidden_all, nh, (uintptr_t)ip)) {
            /* the library's own frame: the path goes on without it */
        } else if (!gpuprof__module_find((uintptr_t)ip, &id, &off)) {
            (*unknown)++;
        } else {
            keep = true;
        }
        if (keep) {
            node = gpuprof__cct_child(t, node, GPUPROF_IO_NODE_FRAME, id, off,
                                      UINT32_MAX);
            if (node == GP_CCT_NONE) {
                if (c)
                    c->n = j; /* keep what is right */
                return GP_CCT_NONE;
            }
        }
        if (c) {
            c->ip[j] = ip;
            c->py[j] = key;
            c->node[j] = node;
        }
    }
    if (c)
        c->n = kept;
    return node;
}

/* Set while this thread unwinds itself: a profiling signal then takes no
 * sample (libunwind is not reentrant on one thread). */
static __thread int unwinding __attribute__((tls_model("initial-exec")));

int gpuprof__backtrace_in_signal(void **buf, int max)
{
#if defined(__SANITIZE_THREAD__)
    (void)buf;
    (void)max;
    return -1; /* libgcc's unwinder takes the loader lock */
#else
    if (unwinding)
        return -1;
    return unw_backtrace(buf, max);
#endif
}

/* The module of the <truncated> node (no address maps to it). */
static uint32_t cut_module = UINT32_MAX;
static pthread_once_t cut_once = PTHREAD_ONCE_INIT;

static void cut_module_add(void)
{
    cut_module = gpuprof__module_add(GP_TRUNCATED_MODULE, 0, 0, 0);
}

/* Where a path cut at the depth limit goes: beneath the <truncated> node
 * of `parent` (counted), never beside the whole paths, whose outermost
 * frame it lacks. `parent` itself when that node cannot be made. */
static uint32_t cut_parent(gp_cct *t, uint32_t parent)
{
    gpuprof__stat_add(GP_STAT_CALLPATHS_TRUNCATED, 1);
    pthread_once(&cut_once, cut_module_add);
    if (cut_module == UINT32_MAX)
        return parent;
    uint32_t node = gpuprof__cct_child(t, parent, GPUPROF_IO_NODE_FRAME,
                                       cut_module, 0, UINT32_MAX);
    return node == GP_CCT_NONE ? parent : node;
}

uint32_t gpuprof__callpath_ips(gp_cct *t, uint32_t parent, void *const *ips,
                               int n, bool cut, uint32_t *unknown)
{
    if (n > 0 && cut)
        parent = cut_parent(t, parent);
    return n > 0 ? insert_frames(t, parent, ips, NULL, n, 0, n, unknown, NULL)
                 : parent;
}

/* The Python frames of path buf[skip..n) (pyframes.c) into out/py: their
 * count, with *cut when the path is longer than the buffer; -1 when the
 * path is used as it is. */
static int python_path(void *const *buf, int n, int skip, void **out,
                       uint64_t *py, bool *cut)
{
    if (n <= skip || !gpuprof__pyframes_active())
        return -1;
    bool more = false;
    int k = gpuprof__pyframes_expand(buf + skip, n - skip, out, py,
                                     GP_MAX_FRAMES, &more);
    *cut = *cut || more;
    return k;
}

uint32_t gpuprof__callpath(gp_cct *t, uint32_t parent, int skip,
                           uint32_t *unknown)
{
    void *buf[GP_MAX_FRAMES], *pbuf[GP_MAX_FRAMES];
    uint64_t py[GP_MAX_FRAMES];
    unwinding = 1;
    int n = GP_BACKTRACE(buf, GP_MAX_FRAMES);
    unwinding = 0;
    skip = skip_hidden(buf, n, skip);
    bool cut = n == GP_MAX_FRAMES;
    int k = python_path(buf, n, skip, pbuf, py, &cut);
    if (cut && (k >= 0 ? k : n - skip) > 0)
        parent = cut_parent(t, parent);
    if (k >= 0)
        return insert_frames(t, parent, pbuf, py, k, 0, k, unknown, NULL);
    return insert_frames(t, parent, buf, NULL, n, 0, n > skip ? n - skip : 0,
                         unknown, NULL);
}

__attribute__((noinline)) uint32_t
gpuprof__callpath_cached(gp_cct *t, uint32_t parent, int skip,
                         uint32_t *unknown, gp_path_cache *c)
{
    void *buf[GP_MAX_FRAMES], *pbuf[GP_MAX_FRAMES];
    uint64_t pyk[GP_MAX_FRAMES];
    unwinding = 1;
    int n = GP_BACKTRACE(buf, GP_MAX_FRAMES);
    unwinding = 0;
    skip = skip_hidden(buf, n, skip);
    bool cut = n == GP_MAX_FRAMES;
    int k = python_path(buf, n, skip, pbuf, pyk, &cut);
    void **ips = buf;
    const uint64_t *py = NULL;
    if (k >= 0) { /* the path with Python frames: skip is 0 in it */
        ips = pbuf;
        py = pyk;
        n = k;
        skip = 0;
    }
    int kept = n > skip ? n - skip : 0;
    if (cut && kept)
        parent = cut_parent(t, parent);
    const void *mods_now = gp_load_acquire(&current);
    int common = 0;
    if (c->tree == t && c->parent == parent && c->modules == mods_now)
        while (common < kept && common < c->n &&
               c->ip[common] == ips[n - 1 - common] &&
               c->py[common] == (py ? py[n - 1 - common] : 0))
            common++;
    else {
        c->tree = t;
        c->parent = parent;
        c->modules = mods_now;
    }
    uint32_t node = insert_frames(t, common ? c->node[common - 1] : parent,
                                  ips, py, n, common, kept, unknown, c);
    if (node == GP_CCT_NONE)
        return GP_CCT_NONE;
    if (c->modules != gp_load_acquire(&current))
        c->tree = NULL; /* a refresh happened meanwhile: start over next */
    return node;
}
