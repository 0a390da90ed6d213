/*
 * unwind.c - the load-module table and call-path capture (see unwind.h).
 */
#define _GNU_SOURCE
#include "core/unwind.h"

#include <elf.h>
#define UNW_LOCAL_ONLY /* libunwind.so: the local address space only */
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

__attribute__((noinline)) int gpuprof__backtrace_tsan(void **buf, int max)
{
    pthread_once(&tsan_bt_once, tsan_bt_init);
    bt_state s = {buf, 0, max, 1}; /* skip this function's own frame */
    if (tsan_bt)
        tsan_bt(bt_one, &s);
    return s.n;
}
#endif

#define MAX_MODULES 4096

/* Non-zero while this thread unwinds itself, or holds the dynamic loader's
 * lock (dl_iterate_phdr, dlsym): a profiling signal then takes no sample.
 * libunwind is not reentrant on one thread, and on a miss in its own cache
 * unw_backtrace takes the loader's lock, which would never come free. */
__thread int gpuprof__unwinding __attribute__((tls_model("initial-exec")));
#define unwinding gpuprof__unwinding

void gpuprof__loader_lock_begin(void) { unwinding++; }
void gpuprof__loader_lock_end(void) { unwinding--; }

typedef struct range {
    uintptr_t lo, hi;
    uint32_t id;
} range;

typedef struct table {
    struct table *prev; /* older tables: kept, readers may hold them */
    uint64_t adds, subs; /* the loader's counters it was built at */
    uint32_t n;
    range r[];
} table;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gp_module_info mods[MAX_MODULES];
static _Atomic uint32_t nmods;
static table *_Atomic current;
/* The loader's load count at the last capture (pyframes.c looks for an
 * interpreter again when it moves). */
static _Atomic uint64_t loader_adds;

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
    uint64_t adds, subs;
    char exe[PATH_MAX];
} scan;

/* glibc counts the objects it has loaded and unloaded (dlpi_adds, dlpi_subs,
 * the same in every entry); an older loader reports neither: 0. */
static bool has_counts(size_t info_size)
{
    return info_size >= offsetof(struct dl_phdr_info, dlpi_subs) +
                            sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

static int collect(struct dl_phdr_info *info, size_t info_size, void *arg)
{
    scan *sc = arg;
    if (has_counts(info_size)) {
        sc->adds = info->dlpi_adds;
        sc->subs = info->dlpi_subs;
    }
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

typedef struct loader_counts {
    uint64_t adds, subs;
    bool known; /* false: this loader keeps no counters */
} loader_counts;

static int first_counts(struct dl_phdr_info *info, size_t info_size,
                        void *arg)
{
    loader_counts *lc = arg;
    if ((lc->known = has_counts(info_size))) {
        lc->adds = info->dlpi_adds;
        lc->subs = info->dlpi_subs;
    }
    return 1; /* the first entry says it all */
}

/* The loader's counters now: one dl_iterate_phdr that stops at the first
 * entry (~17 ns here: the loader's lock taken and given back). Keeps the
 * load count for pyframes.c. */
static loader_counts counts_now(void)
{
    loader_counts lc = {0, 0, false};
    unwinding++;
    dl_iterate_phdr(first_counts, &lc);
    unwinding--;
    if (gp_load_relaxed(&loader_adds) != lc.adds)
        gp_store_relaxed(&loader_adds, lc.adds);
    return lc;
}

/* A new range table from the loader's list; with `seen`, only when the
 * current one was built at other counters (threads that saw the same
 * dlopen or dlclose make one table, not one each). */
static void refresh(const loader_counts *seen)
{
    scan sc = {0};
    ssize_t n = readlink("/proc/self/exe", sc.exe, sizeof(sc.exe) - 1);
    if (n > 0)
        sc.exe[n] = '\0';
    else
        strcpy(sc.exe, "[executable]");
    pthread_mutex_lock(&lock);
    table *old = gp_load_relaxed(&current);
    if (seen && seen->known && old && old->adds == seen->adds &&
        old->subs == seen->subs) {
        pthread_mutex_unlock(&lock);
        return;
    }
    unwinding++;
    dl_iterate_phdr(collect, &sc);
    unwinding--;
    qsort(sc.r, sc.n, sizeof(*sc.r), by_lo);
    table *t = malloc(sizeof(*t) + sc.n * sizeof(range));
    if (t) {
        t->prev = old;
        t->adds = sc.adds;
        t->subs = sc.subs;
        t->n = sc.n;
        if (sc.n)
            memcpy(t->r, sc.r, sc.n * sizeof(range));
        /* A library was unloaded: libunwind's cache may hold its rules
         * for addresses that now hold another library's code. Flushed
         * before the table is published, so a capture that finds the new
         * table (acquire) also finds the cache flushed. */
        if (old && t->subs != old->subs) {
            unw_flush_cache(unw_local_addr_space, 0, 0);
            gpuprof__fast_trace_flush();
        }
        gp_store_release(&current, t);
    }
    pthread_mutex_unlock(&lock);
    free(sc.r);
}

void gpuprof__modules_refresh(void) { refresh(NULL); }

/* ---- has the loader unloaded anything since the table was made? ------
 * Every capture asks before it unwinds: after dlclose, then dlopen at the
 * same address, the table's ranges and libunwind's cache would describe
 * the closed library's code, which no lookup miss reveals (the frames on
 * the capturing stack were loaded before the capture and stay mapped, so
 * a table that is current then knows their libraries). Asking the loader
 * (its unload count, dlpi_subs) takes its global lock, so a capture asks
 * only when it must:
 *
 * - dlclose, interposed (dl.c, in libgpuprof.so), moves `word`: +1 while
 *   a close runs, then its generation in the high bits once it returned
 *   (the close done and the count given back in one step, with release);
 * - `verified` is the word at which the loader's unload count was last
 *   found equal to the table's, with no close running (it only grows);
 * - a capture whose word (acquire) equals it asks nobody; one that differs
 *   asks the loader, rebuilds the table if a library went, and raises it.
 *
 * If dlclose unmapped a library and dlopen mapped another at its address
 * before a capture (the capture can only run that code after the dlopen),
 * the close's first step happened before the unmapping, hence before the
 * capture's load: the capture sees a word with a close running or a newer
 * generation, never `verified`. A close that bypasses the interposition
 * (the C library's own, for iconv's modules and NSS; a library bound with
 * RTLD_DEEPBIND; a pointer taken with dlsym) moves nothing: each thread
 * also asks at its first capture and then once every GP_LOADER_RECHECK
 * captures, and a lookup miss asks too, so the table it uses is at most
 * that many of its captures old. Where the interposition is not the
 * process's dlclose (the static archive; libgpuprof.so dlopened with
 * RTLD_LOCAL, or after the C library in lookup order; another dlclose
 * ahead of ours), `verified` is never set and every capture asks. */
#define CLOSING_BITS 24 /* closes running at once: far fewer than 2^24 */
#define CLOSING_MASK ((UINT64_C(1) << CLOSING_BITS) - 1)
static struct {
    _Atomic uint64_t word;
    _Atomic uint64_t verified; /* UINT64_MAX: never */
    _Atomic bool interposed;
} L GP_ALIGNED_CACHELINE = {0, UINT64_MAX, false};
/* Captures this thread may still make before it asks the loader itself. */
static __thread uint32_t checks_left __attribute__((tls_model("initial-exec")));

void gpuprof__loader_close_begin(void) { gp_fetch_add_relaxed(&L.word, 1); }
void gpuprof__loader_close_end(void)
{
    gp_fetch_add_release(&L.word, (UINT64_C(1) << CLOSING_BITS) - 1);
}
void gpuprof__loader_set_interposed(bool on)
{
    gp_store_release(&L.interposed, on);
}
bool gpuprof__loader_interposed(void) { return gp_load_acquire(&L.interposed); }
uint64_t gpuprof__loader_closes(void)
{
    return gp_load_acquire(&L.word) >> CLOSING_BITS;
}

static void verified_raise(uint64_t w)
{
    uint64_t old = gp_load_relaxed(&L.verified);
    while ((old == UINT64_MAX || old < w) &&
           !gp_cas_weak_release(&L.verified, &old, w))
        ;
}

/* The check's slow path: ask the loader, rebuild the table when a library
 * went since it was made (refresh flushes libunwind's cache), and record
 * `w` as verified when no close was running and the interposition sees
 * every other close. */
__attribute__((noinline)) static const table *table_verify(uint64_t w)
{
    checks_left = GP_LOADER_RECHECK;
    loader_counts lc = counts_now();
    const table *t = gp_load_acquire(&current);
    if (!t || (lc.known && t->subs != lc.subs)) {
        refresh(&lc);
        t = gp_load_acquire(&current);
    }
    if (t && lc.known && t->subs == lc.subs && !(w & CLOSING_MASK) &&
        gp_load_relaxed(&L.interposed))
        verified_raise(w);
    return t;
}

const void *gpuprof__modules_check(void)
{
    uint64_t w = gp_load_acquire(&L.word);
    if (__builtin_expect(checks_left != 0, 1) &&
        __builtin_expect(w == gp_load_acquire(&L.verified), 1)) {
        checks_left--;
        return gp_load_acquire(&current);
    }
    return table_verify(w);
}

static inline const table *table_now(void)
{
    return gpuprof__modules_check();
}

uint64_t gpuprof__loader_adds(void) { return gp_load_relaxed(&loader_adds); }

/* gpuprof__unwind_here declares it: a header without libunwind.h. */
_Static_assert(sizeof(unw_word_t) == sizeof(void *), "unw_backtrace's words");

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

/* The module of pc in *tab; on a miss, *tab becomes a table rebuilt when
 * the loader has loaded or unloaded anything since *tab was made (a pc in
 * no library, such as generated code, costs no rebuild each time). */
static bool find_in(const table **tab, uintptr_t pc, uint32_t *id,
                    uint64_t *offset)
{
    const range *r = search(*tab, pc);
    if (!r) {
        loader_counts lc = counts_now();
        if (!*tab || !lc.known || (*tab)->adds != lc.adds ||
            (*tab)->subs != lc.subs) {
            refresh(&lc);
            *tab = gp_load_acquire(&current);
            r = search(*tab, pc);
        }
    }
    if (!r)
        return false;
    *id = r->id;
    *offset = pc - mods[r->id].base;
    return true;
}

bool gpuprof__module_find(uintptr_t pc, uint32_t *id, uint64_t *offset)
{
    const table *t = gp_load_acquire(&current);
    return find_in(&t, pc, id, offset);
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
    unwinding++;
    dl_iterate_phdr(hide_module_of, (void *)addr);
    unwinding--;
}

/* Inserts the frames buf[n-1-j], j in [from, kept) (outermost first),
 * beneath `node`, leaving out the library's own; py (NULL: all native)
 * marks Python frames (pyframes.c). Modules come from *tab (replaced when a
 * miss rebuilds it). With a cache, records each frame's address, Python
 * key and node. */
static uint32_t insert_frames(gp_cct *t, uint32_t node, void *const *buf,
                              const uint64_t *py, int n, int from, int kept,
                              const table **tab, uint32_t *unknown,
                              gp_path_cache *c)
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
        } else if (!find_in(tab, (uintptr_t)ip, &id, &off)) {
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
            c->ip[GP_MAX_FRAMES - 1 - j] = ip;
            c->py[GP_MAX_FRAMES - 1 - j] = key;
            c->node[j] = node;
        }
    }
    if (c)
        c->n = kept;
    return node;
}

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

__attribute__((noinline)) int gpuprof__unwind_capture(void **buf, int max)
{
    int n = gpuprof__unwind_here(buf, max);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return n;
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

/* How many frames, from the outermost, the words before a_end and those
 * before b_end share (a_end[-1] and b_end[-1] are the outermost), at most
 * `most`. A loop's launches share all of them: one memcmp (the C
 * library's, in vector registers) says so; else eight at a time while they
 * agree (one test of the eight words' differences or'ed together), then
 * one at a time. */
static inline int common_outer(void *const *a_end, void *const *b_end,
                               int most)
{
    if (most > 0 && memcmp(a_end - most, b_end - most,
                           (size_t)most * sizeof(void *)) == 0)
        return most;
    int j = 0;
    while (j + 8 <= most) {
        void *const *a = a_end - j - 8, *const *b = b_end - j - 8;
        uintptr_t d = 0;
        for (int k = 0; k < 8; k++)
            d |= (uintptr_t)a[k] ^ (uintptr_t)b[k];
        if (d)
            break;
        j += 8;
    }
    while (j < most && a_end[-j - 1] == b_end[-j - 1])
        j++;
    return j;
}

/* Frames ips[n-1-j], j in [0, kept) (outermost first), beneath `parent`
 * (its <truncated> node when `cut`), through `c` when not NULL: the
 * frames the last path shares are not looked up again. */
static uint32_t insert_path(gp_cct *t, uint32_t parent, void *const *ips,
                            const uint64_t *py, int n, int kept, bool cut,
                            bool checked, uint32_t *unknown, gp_path_cache *c)
{
    const table *tab = checked ? gp_load_acquire(&current) : table_now();
    if (cut && kept)
        parent = cut_parent(t, parent);
    if (!c)
        return insert_frames(t, parent, ips, py, n, 0, kept, &tab, unknown,
                             NULL);
    /* The last path is valid for the same tree, parent, module table and
     * hidden ranges: the same address then makes the same node. */
    int nh = gp_load_acquire(&nhidden_all);
    int common = 0, most = kept < c->n ? kept : c->n;
    if (c->tree != t || c->parent != parent || c->modules != tab ||
        c->hidden != nh) {
        c->tree = t;
        c->parent = parent;
        c->modules = tab;
        c->hidden = nh;
        c->n = 0;
        c->op_leaf = GP_CCT_NONE;
    } else if (!py && !c->python) { /* native paths: addresses say it all */
        common = common_outer(ips + n, c->ip + GP_MAX_FRAMES, most);
    } else {
        const uint64_t *cpy = c->py + GP_MAX_FRAMES;
        while (common < most &&
               c->ip[GP_MAX_FRAMES - 1 - common] == ips[n - 1 - common] &&
               cpy[-1 - common] == (py ? py[n - 1 - common] : 0))
            common++;
    }
    c->python = py != NULL;
    uint32_t node = insert_frames(t, common ? c->node[common - 1] : parent,
                                  ips, py, n, common, kept, &tab, unknown, c);
    if (c->modules != tab)
        c->tree = NULL; /* rebuilt meanwhile: start over next time */
    return node;
}

uint32_t gpuprof__callpath_ips(gp_cct *t, uint32_t parent, void *const *ips,
                               int n, bool cut, uint32_t *unknown)
{
    return n > 0 ? insert_path(t, parent, ips, NULL, n, n, cut, false, unknown,
                               NULL)
                 : parent;
}

uint32_t gpuprof__callpath_insert(gp_cct *t, uint32_t parent, void *const *buf,
                                  int n, int skip, uint32_t *unknown,
                                  gp_path_cache *c)
{
    void *pbuf[GP_MAX_FRAMES];
    uint64_t pyk[GP_MAX_FRAMES];
    skip = skip_hidden(buf, n, skip);
    bool cut = n == GP_MAX_FRAMES;
    if (n > skip && gpuprof__pyframes_active()) {
        bool more = false;
        int k = gpuprof__pyframes_expand(buf + skip, n - skip, pbuf, pyk,
                                         GP_MAX_FRAMES, &more);
        if (k >= 0) /* the path with Python frames: nothing to skip in it */
            return insert_path(t, parent, pbuf, pyk, k, k, cut || more, true,
                               unknown, c);
    }
    return insert_path(t, parent, buf, NULL, n, n > skip ? n - skip : 0, cut,
                       true, unknown, c);
}

/* The body of the two captures below, inlined into each so that each has
 * its frame. Frames: [0] gpuprof__unwind_capture, [1] the capture (skip
 * counts from here, as when it unwound itself). */
static inline __attribute__((always_inline)) uint32_t
capture(gp_cct *t, uint32_t parent, int skip, uint32_t *unknown,
        gp_path_cache *c)
{
    void *buf[GP_MAX_FRAMES];
    int n = gpuprof__unwind_capture(buf, GP_MAX_FRAMES);
    return gpuprof__callpath_insert(t, parent, buf, n, skip + 1, unknown, c);
}

__attribute__((noinline)) uint32_t
gpuprof__callpath(gp_cct *t, uint32_t parent, int skip, uint32_t *unknown)
{
    uint32_t node = capture(t, parent, skip, unknown, NULL);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return node;
}

__attribute__((noinline)) uint32_t
gpuprof__callpath_cached(gp_cct *t, uint32_t parent, int skip,
                         uint32_t *unknown, gp_path_cache *c)
{
    uint32_t node = capture(t, parent, skip, unknown, c);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return node;
}
