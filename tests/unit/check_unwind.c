/*
 * check_unwind.c - CPU call paths: the module table (the executable, libc,
 * a library loaded later with dlopen) and call-path capture into a CCT,
 * checked against the addresses of known, non-inlined functions; and what
 * the hook's path cache must keep right: recursion, inlined code, signal
 * frames, a library closed and another opened at its address. The suite
 * links the dlclose interposition (lib/core/dl.c) as libgpuprof.so has it:
 * which closes it sees, and what a close it does not see means.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <iconv.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/unwind.h"
#include "io/io.h"
#include "support/beside.h"
#include "support/suite.h"

static uint32_t unknown;

__attribute__((noinline)) uint32_t level3(gp_cct *t, uint32_t parent);
__attribute__((noinline)) uint32_t level2(gp_cct *t, uint32_t parent);
__attribute__((noinline)) uint32_t level1(gp_cct *t, uint32_t parent);

uint32_t level3(gp_cct *t, uint32_t parent)
{
    uint32_t n = gpuprof__callpath(t, parent, 1, &unknown);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return n;
}
uint32_t level2(gp_cct *t, uint32_t parent)
{
    uint32_t n = level3(t, parent);
    __asm__ volatile("" ::: "memory");
    return n;
}
uint32_t level1(gp_cct *t, uint32_t parent)
{
    uint32_t n = level2(t, parent);
    __asm__ volatile("" ::: "memory");
    return n;
}

/* One call site, however often it is called. */
__attribute__((noinline)) static uint32_t site(gp_cct *t)
{
    uint32_t n = level1(t, 0);
    __asm__ volatile("" ::: "memory");
    return n;
}

static uintptr_t frame_pc(gp_cct *t, uint32_t node)
{
    gp_node *n = gp_cct_node(gp_load_relaxed(&t->dir), node);
    ck_assert_uint_eq(n->kind, GPUPROF_IO_NODE_FRAME);
    const gp_module_info *m = gpuprof__module(n->key_a);
    ck_assert_ptr_nonnull(m);
    return (uintptr_t)(m->base + n->key_b);
}

static void assert_in(uintptr_t pc, void *fn)
{
    uintptr_t f = (uintptr_t)fn;
    ck_assert_msg(pc > f && pc < f + 256, "return address %#lx not in function at %#lx",
                  (unsigned long)pc, (unsigned long)f);
}

/* Two call sites of the cached capture in one function. */
uint32_t cached_at(gp_cct *t, gp_path_cache *c, int which);
__attribute__((noinline)) uint32_t cached_at(gp_cct *t, gp_path_cache *c,
                                             int which)
{
    uint32_t r;
    if (which) {
        r = gpuprof__callpath_cached(t, 0, 1, &unknown, c);
        __asm__ volatile("nop" ::: "memory"); /* two distinct call sites */
    } else {
        __asm__ volatile("nop; nop" ::: "memory");
        r = gpuprof__callpath_cached(t, 0, 1, &unknown, c);
    }
    __asm__ volatile("" ::: "memory");
    return r;
}

START_TEST(callpath_cache)
{
    gp_cct t;
    ck_assert(gpuprof__cct_init(&t));
    gp_path_cache c;
    memset(&c, 0, sizeof(c));
    /* One call site in a loop (volatile: not unrolled): same caller frames. */
    static const int which[4] = {0, 0, 1, 0};
    uint32_t got[4], count[4];
    for (volatile int i = 0; i < 4; i++) {
        got[i] = cached_at(&t, &c, which[i]);
        count[i] = gp_load_relaxed(&t.count);
    }
    uint32_t a = got[0], b = got[2];
    ck_assert_uint_eq(got[1], a); /* same path: nothing inserted */
    ck_assert_uint_eq(count[1], count[0]);
    ck_assert_uint_ne(b, a); /* another site: one new frame */
    ck_assert_uint_eq(count[2], count[0] + 1);
    const gp_cct_dir *d = gp_load_relaxed(&t.dir);
    ck_assert_uint_eq(gp_cct_node(d, a)->parent, gp_cct_node(d, b)->parent);
    ck_assert_uint_eq(got[3], a); /* back: found, not new */
    ck_assert_uint_eq(count[3], count[2]);
    /* A different parent starts over beneath it, same shape. */
    uint32_t r = gpuprof__cct_child(&t, 0, GPUPROF_IO_NODE_REGION, 7, 0,
                                    UINT32_MAX);
    uint32_t before = gp_load_relaxed(&t.count);
    uint32_t e = gpuprof__callpath_cached(&t, r, 0, &unknown, &c);
    ck_assert_uint_gt(gp_load_relaxed(&t.count), before);
    ck_assert_uint_ne(e, a);
    ck_assert_uint_eq(unknown, 0);
    gpuprof__cct_destroy(&t);
}
END_TEST

START_TEST(module_table)
{
    uint32_t id, id2;
    uint64_t off;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    ck_assert(gpuprof__module_find((uintptr_t)level1, &id, &off));
    ck_assert_str_eq(gpuprof__module(id)->path, exe);
    ck_assert_uint_eq(gpuprof__module(id)->base + off, (uintptr_t)level1);
    /* A shared library (libc; a sanitizer's runtime when it intercepts). */
    ck_assert(gpuprof__module_find((uintptr_t)strlen, &id2, &off));
    ck_assert_uint_ne(id, id2);
    ck_assert_ptr_nonnull(strstr(gpuprof__module(id2)->path, ".so"));
    ck_assert(!gpuprof__module_find(16, &id, &off));
    /* A library loaded later is found on the first miss. */
    char lib[PATH_MAX + 64];
    snprintf(lib, sizeof(lib), "%s/../lib/libgpuprof-analysis.so.0", dirname(exe));
    uint32_t before = gpuprof__module_count();
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", lib, dlerror());
    void *sym = dlsym(h, "gpuprof_an_report_open");
    ck_assert_ptr_nonnull(sym);
    ck_assert(gpuprof__module_find((uintptr_t)sym, &id, &off));
    ck_assert_uint_gt(gpuprof__module_count(), before);
    ck_assert_ptr_nonnull(strstr(gpuprof__module(id)->path, "libgpuprof-analysis"));
    /* Ids are stable across refreshes. */
    gpuprof__modules_refresh();
    ck_assert(gpuprof__module_find((uintptr_t)sym, &id2, &off));
    ck_assert_uint_eq(id, id2);
}
END_TEST

START_TEST(callpath_into_cct)
{
    gp_cct t;
    ck_assert(gpuprof__cct_init(&t));
    uint32_t got[2], counts[2];
    for (volatile int i = 0; i < 2; i++) { /* volatile: not unrolled */
        got[i] = site(&t);
        counts[i] = gp_load_relaxed(&t.count);
    }
    uint32_t a = got[0];
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_eq(unknown, 0);
    /* The innermost frame is the call in level3 (skip=1 dropped the one in
     * gpuprof__callpath), then the calls in level2 and level1. */
    gp_cct_dir *d = gp_load_relaxed(&t.dir);
    uint32_t n3 = a, n2 = gp_cct_node(d, n3)->parent, n1 = gp_cct_node(d, n2)->parent;
    assert_in(frame_pc(&t, n3), (void *)level3);
    assert_in(frame_pc(&t, n2), (void *)level2);
    assert_in(frame_pc(&t, n1), (void *)level1);
    /* The same path again adds nothing; a different call site differs. */
    ck_assert_uint_eq(got[1], a);
    ck_assert_uint_eq(counts[1], counts[0]);
    uint32_t b = level2(&t, 0);
    ck_assert_uint_ne(b, a);
    /* Beneath another parent (a region), a new copy of the path. */
    uint32_t r = gpuprof__cct_child(&t, 0, GPUPROF_IO_NODE_REGION, 1, 0, UINT32_MAX);
    uint32_t c = level1(&t, r);
    ck_assert_uint_ne(c, a);
    uint32_t up = c;
    while (gp_cct_node(d = gp_load_relaxed(&t.dir), up)->parent != r)
        up = gp_cct_node(d, up)->parent;
    ck_assert_uint_eq(gp_cct_node(d, up)->kind, GPUPROF_IO_NODE_FRAME);
    gpuprof__cct_destroy(&t);
}
END_TEST

/* ---- what the hook's path cache must still get right ------------------
 * Every case captures each path twice from one call site: through a path
 * cache (what gpuprof__op_begin does) into one tree and with nothing cached
 * into another, and asserts both say the same frames, root to leaf. */

/* The (module, offset) frames from `leaf` up to the root: their count. */
static int path_of(gp_cct *t, uint32_t leaf, uint32_t *mod, uint64_t *off,
                   int max)
{
    const gp_cct_dir *d = gp_load_relaxed(&t->dir);
    int n = 0;
    for (uint32_t i = leaf; i != 0 && n < max; i = gp_cct_node(d, i)->parent) {
        ck_assert_uint_eq(gp_cct_node(d, i)->kind, GPUPROF_IO_NODE_FRAME);
        mod[n] = gp_cct_node(d, i)->key_a;
        off[n++] = gp_cct_node(d, i)->key_b;
    }
    return n;
}

static void assert_same_path(gp_cct *a, uint32_t la, gp_cct *b, uint32_t lb)
{
    uint32_t ma[GP_MAX_FRAMES], mb[GP_MAX_FRAMES];
    uint64_t oa[GP_MAX_FRAMES], ob[GP_MAX_FRAMES];
    int na = path_of(a, la, ma, oa, GP_MAX_FRAMES);
    int nb = path_of(b, lb, mb, ob, GP_MAX_FRAMES);
    ck_assert_int_eq(na, nb);
    for (int i = 0; i < na; i++) {
        ck_assert_uint_eq(ma[i], mb[i]);
        ck_assert_uint_eq(oa[i], ob[i]);
    }
}

/* Frames of the path from `leaf` in function fn (an exported symbol of
 * this program: -rdynamic; the symbol that holds the address is fn). */
static int frames_in(gp_cct *t, uint32_t leaf, void *fn)
{
    uint32_t mod[GP_MAX_FRAMES];
    uint64_t off[GP_MAX_FRAMES];
    int n = path_of(t, leaf, mod, off, GP_MAX_FRAMES), k = 0;
    for (int i = 0; i < n; i++) {
        uintptr_t pc = (uintptr_t)(gpuprof__module(mod[i])->base + off[i]);
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        /* a return address is past the call: pc - 1 is inside it */
        if (dladdr1((void *)(pc - 1), &info, (void **)&sym, RTLD_DL_SYMENT) &&
            sym && info.dli_saddr == fn && pc - 1 < (uintptr_t)fn + sym->st_size)
            k++;
    }
    return k;
}

typedef struct two {
    gp_cct cached, plain;
    gp_path_cache c;
    uint32_t leaf, leaf_plain;
} two;

static void two_init(two *w)
{
    memset(w, 0, sizeof(*w));
    ck_assert(gpuprof__cct_init(&w->cached));
    ck_assert(gpuprof__cct_init(&w->plain));
}

static void two_free(two *w)
{
    gpuprof__cct_destroy(&w->cached);
    gpuprof__cct_destroy(&w->plain);
}

/* Both captures; skip 2 drops this function too, so the innermost frame
 * is the one call site in its caller. */
void capture2(two *w);
__attribute__((noinline)) void capture2(two *w)
{
    w->leaf = gpuprof__callpath_cached(&w->cached, 0, 2, &unknown, &w->c);
    w->leaf_plain = gpuprof__callpath(&w->plain, 0, 2, &unknown);
    __asm__ volatile("" ::: "memory");
}

void recurse(two *w, int d);
__attribute__((noinline)) void recurse(two *w, int d)
{
    if (d > 0)
        recurse(w, d - 1);
    else
        capture2(w);
    __asm__ volatile("" ::: "memory"); /* no tail call: a frame each */
}

START_TEST(recursion_paths)
{
    two w;
    two_init(&w);
    static const int depth[] = {3, 5, 3, 3, 4, 1, 5};
    uint32_t at3 = 0;
    for (int i = 0; i < (int)(sizeof(depth) / sizeof(depth[0])); i++) {
        recurse(&w, depth[i]);
        assert_same_path(&w.cached, w.leaf, &w.plain, w.leaf_plain);
        /* one frame per activation: the bottom one calls capture2 */
        ck_assert_int_eq(frames_in(&w.cached, w.leaf, (void *)recurse),
                         depth[i] + 1);
        if (depth[i] == 3 && !at3)
            at3 = w.leaf;
        else if (depth[i] == 3) /* the same path: the same node */
            ck_assert_uint_eq(w.leaf, at3);
    }
    ck_assert_uint_eq(unknown, 0);
    two_free(&w);
}
END_TEST

/* Inlined code has no frame of its own: its return address is its host's,
 * and the analysis names the inlined function from DWARF. */
static inline __attribute__((always_inline)) void inlined_capture(two *w)
{
    __asm__ volatile("nop" ::: "memory"); /* not merged with the other */
    capture2(w);
}

void hosts_inlined(two *w, int which);
__attribute__((noinline)) void hosts_inlined(two *w, int which)
{
    if (which)
        inlined_capture(w);
    else
        capture2(w);
    __asm__ volatile("" ::: "memory");
}

START_TEST(inlined_paths)
{
    two w;
    two_init(&w);
    uint32_t leaf[4];
    for (int i = 0; i < 4; i++) {
        hosts_inlined(&w, i & 1);
        leaf[i] = w.leaf;
        assert_same_path(&w.cached, w.leaf, &w.plain, w.leaf_plain);
        ck_assert_int_eq(frames_in(&w.cached, w.leaf, (void *)hosts_inlined),
                         1);
    }
    const gp_cct_dir *d = gp_load_relaxed(&w.cached.dir);
    ck_assert_uint_ne(leaf[0], leaf[1]); /* two call sites in one frame */
    ck_assert_uint_eq(gp_cct_node(d, leaf[0])->parent,
                      gp_cct_node(d, leaf[1])->parent);
    ck_assert_uint_eq(leaf[2], leaf[0]);
    ck_assert_uint_eq(leaf[3], leaf[1]);
    two_free(&w);
}
END_TEST

/* A path through a signal frame: the handler, the kernel's return
 * trampoline, then the interrupted code. A capture is not
 * async-signal-safe in general (it may build the module table), so the
 * handler only unwinds, into a buffer, with the table built beforehand;
 * the path is inserted after it returns, through the path cache and with
 * nothing cached. */
static void *sig_buf[GP_MAX_FRAMES];
static volatile int sig_n; /* written by the handler */

void on_usr1(int sig);
void on_usr1(int sig)
{
    (void)sig;
    sig_n = gpuprof__unwind_capture(sig_buf, GP_MAX_FRAMES);
    __asm__ volatile("" ::: "memory"); /* no tail call */
}

void interrupted(int which);
__attribute__((noinline)) void interrupted(int which)
{
    if (which) {
        raise(SIGUSR1);
        __asm__ volatile("nop" ::: "memory"); /* two call sites */
    } else {
        __asm__ volatile("nop; nop" ::: "memory");
        raise(SIGUSR1);
    }
    __asm__ volatile("" ::: "memory");
}

START_TEST(signal_frame_paths)
{
    two w;
    two_init(&w);
    /* Warm: the module table built, the unwinder loaded. */
    sig_n = gpuprof__unwind_capture(sig_buf, GP_MAX_FRAMES);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
    static const int which[] = {0, 0, 1, 0, 1};
    uint32_t leaf[5];
    for (int i = 0; i < 5; i++) {
        sig_n = 0;
        interrupted(which[i]);
        ck_assert_int_gt(sig_n, 2);
        /* sig_buf[0] is the capture's own frame */
        w.leaf = gpuprof__callpath_insert(&w.cached, 0, sig_buf, sig_n, 1,
                                          &unknown, &w.c);
        w.leaf_plain = gpuprof__callpath_ips(&w.plain, 0, sig_buf + 1,
                                             sig_n - 1, false, &unknown);
        leaf[i] = w.leaf;
        assert_same_path(&w.cached, w.leaf, &w.plain, w.leaf_plain);
        ck_assert_int_eq(frames_in(&w.cached, w.leaf, (void *)interrupted),
                         1);
        ck_assert_int_eq(frames_in(&w.cached, w.leaf, (void *)on_usr1), 1);
    }
    sigaction(SIGUSR1, &old, NULL);
    ck_assert_uint_eq(leaf[1], leaf[0]);
    ck_assert_uint_ne(leaf[2], leaf[0]); /* raised from another site */
    ck_assert_uint_eq(leaf[3], leaf[0]);
    ck_assert_uint_eq(leaf[4], leaf[2]);
    ck_assert_uint_eq(unknown, 0);
    two_free(&w);
}
END_TEST

/* The module of the frame in unwind_lib_call (the fixture library). */
static uint32_t lib_module(two *w, void *fn)
{
    uint32_t mod[GP_MAX_FRAMES];
    uint64_t off[GP_MAX_FRAMES];
    int n = path_of(&w->cached, w->leaf, mod, off, GP_MAX_FRAMES);
    for (int i = 0; i < n; i++) {
        uintptr_t pc = (uintptr_t)(gpuprof__module(mod[i])->base + off[i]);
        if (pc > (uintptr_t)fn && pc < (uintptr_t)fn + 64)
            return mod[i];
    }
    ck_abort_msg("no frame in the fixture library");
    return 0;
}

typedef unsigned (*lib_call_fn)(unsigned (*)(void *), void *);

__attribute__((noinline)) static unsigned from_lib(void *arg)
{
    capture2(arg);
    __asm__ volatile("" ::: "memory");
    return 0;
}

static void *open_fixture(const char *name, lib_call_fn *fn)
{
    return tb_open_beside(name, "unwind_lib_call", (void **)fn);
}

/* The fixture library a opened and a path through it captured twice (the
 * second from the cache): its handle, function and module. */
static void *open_a_captured(two *w, lib_call_fn *fa, uint32_t *ma)
{
    void *h = open_fixture("unwind_lib_a.so", fa);
    (*fa)(from_lib, w);
    *ma = lib_module(w, (void *)*fa);
    ck_assert_ptr_nonnull(strstr(gpuprof__module(*ma)->path, "unwind_lib_a.so"));
    (*fa)(from_lib, w); /* cached now */
    return h;
}

/* Library b opened after a was closed; says so when it is not at a's
 * address (the case then tests less). */
static void *open_b_after(const char *tcase, lib_call_fn fa, lib_call_fn *fb)
{
    void *h = open_fixture("unwind_lib_b.so", fb);
    if ((void *)*fb != (void *)fa)
        fprintf(stderr, "SKIP %s: the second library was loaded at another "
                        "address\n", tcase);
    return h;
}

START_TEST(dlclose_invalidates_cache)
{
    two w;
    two_init(&w);
    lib_call_fn fa, fb;
    uint32_t ma;
    void *h = open_a_captured(&w, &fa, &ma);
    uint64_t closes = gpuprof__loader_closes();
    ck_assert_int_eq(dlclose(h), 0);
    ck_assert_uint_eq(gpuprof__loader_closes(), closes + 1); /* seen */
    h = open_b_after("dlclose_invalidates_cache", fa, &fb);
    /* Same address, same bytes, same return addresses: only the loader
     * knows the code there is another library's now. */
    fb(from_lib, &w);
    assert_same_path(&w.cached, w.leaf, &w.plain, w.leaf_plain);
    uint32_t mb = lib_module(&w, (void *)fb);
    ck_assert_uint_ne(mb, ma);
    ck_assert_ptr_nonnull(strstr(gpuprof__module(mb)->path, "unwind_lib_b.so"));
    uint32_t id;
    uint64_t off;
    ck_assert(gpuprof__module_find((uintptr_t)fb, &id, &off));
    ck_assert_uint_eq(id, mb);
    dlclose(h);
    ck_assert_uint_eq(unknown, 0);
    two_free(&w);
}
END_TEST

/* The loader's count of objects unloaded (dlpi_subs). */
static int subs_of(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_subs;
    return 1;
}

static unsigned long long loader_subs(void)
{
    unsigned long long subs = 0;
    dl_iterate_phdr(subs_of, &subs);
    return subs;
}

/* The C library's own dlclose, which bypasses any interposition. */
typedef int (*close_fn)(void *);
static close_fn libc_dlclose(void)
{
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(libc);
    close_fn f = (close_fn)dlsym(libc, "dlclose");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_ne((void *)f, (void *)dlclose); /* ours: the program's */
    f(libc);
    return f;
}

/* The closer fixture opened with `flags`, and its function. */
static void *open_closer(int flags, close_fn *fn)
{
    char exe[PATH_MAX], lib[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    snprintf(lib, sizeof(lib), "%s/unwind_closer.so", dirname(exe));
    void *h = dlopen(lib, flags);
    ck_assert_msg(h != NULL, "dlopen %s: %s", lib, dlerror());
    *(void **)fn = dlsym(h, "unwind_closer_close");
    ck_assert_ptr_nonnull(*(void **)fn);
    return h;
}

/* One close, by `how`, of the fixture library (loaded by nothing else):
 * does the interposition see it, and did the loader count an unload? */
static void close_seen(close_fn how, bool seen)
{
    lib_call_fn fn;
    void *h = open_fixture("unwind_lib_a.so", &fn);
    uint64_t closes = gpuprof__loader_closes();
    unsigned long long subs = loader_subs();
    ck_assert_int_eq(how(h), 0);
    ck_assert_uint_eq(gpuprof__loader_closes(), closes + (seen ? 1 : 0));
    ck_assert_uint_gt(loader_subs(), subs);
}

START_TEST(dlclose_seen)
{
    /* The suite's dlclose is the process's (exported, first in lookup
     * order), as libgpuprof.so's is in a program linked with it. */
    ck_assert(gpuprof__loader_interposed());
    close_seen(dlclose, true); /* the program's own call */
    close_fn lib_close;
    void *closer = open_closer(RTLD_NOW | RTLD_LOCAL, &lib_close);
    close_seen(lib_close, true); /* a library's call */
    dlclose(closer);
    /* Closes that bypass symbol lookup: the C library's own function
     * through a pointer, ... */
    close_seen(libc_dlclose(), false);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* ... a library bound with RTLD_DEEPBIND (its own scope, the C
     * library, first; the sanitizers refuse such libraries), ... */
    closer = open_closer(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND, &lib_close);
    close_seen(lib_close, false);
    dlclose(closer);
#endif
    /* ... and the C library's own closes: iconv unloads a conversion
     * module once others were released a few times after it. */
    static const char *const sets[] = {"ISO-8859-2", "ISO-8859-5", "KOI8-R",
                                       "CP1251", "ISO-8859-7", "EUC-JP"};
    uint64_t closes = gpuprof__loader_closes();
    unsigned long long subs = loader_subs();
    int opened = 0;
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 6; i++) {
            iconv_t cd = iconv_open("UTF-8", sets[i]);
            if (cd != (iconv_t)-1) {
                iconv_close(cd);
                opened++;
            }
        }
    if (opened == 0 || loader_subs() == subs)
        fprintf(stderr, "SKIP dlclose_seen: no iconv module was unloaded "
                        "(%d opened)\n", opened);
    ck_assert_uint_eq(gpuprof__loader_closes(), closes);
}
END_TEST

/* A close the interposition does not see, then another library at the
 * closed one's address: captures use the stale table until the thread
 * asks the loader itself, at most GP_LOADER_RECHECK checks later (each
 * capture2 makes two). */
START_TEST(dlclose_bypassed)
{
    two w;
    two_init(&w);
    lib_call_fn fa, fb;
    uint32_t ma;
    void *h = open_a_captured(&w, &fa, &ma);
    uint64_t closes = gpuprof__loader_closes();
    ck_assert_int_eq(libc_dlclose()(h), 0);
    ck_assert_uint_eq(gpuprof__loader_closes(), closes);
    h = open_b_after("dlclose_bypassed", fa, &fb);
    int stale = 0;
    for (;;) {
        fb(from_lib, &w);
        if (lib_module(&w, (void *)fb) != ma)
            break;
        stale++;
        ck_assert_int_le(2 * stale, GP_LOADER_RECHECK);
    }
    assert_same_path(&w.cached, w.leaf, &w.plain, w.leaf_plain);
    ck_assert_ptr_nonnull(
        strstr(gpuprof__module(lib_module(&w, (void *)fb))->path,
               "unwind_lib_b.so"));
    fprintf(stderr, "NOTE dlclose_bypassed: %d capture pairs named the "
                    "closed library before the thread asked the loader\n",
            stale);
    dlclose(h);
    ck_assert_uint_eq(unknown, 0);
    two_free(&w);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"modules", module_table, 30},
        {"callpath", callpath_into_cct, 30},
        {"callpath_cache", callpath_cache, 30},
        {"recursion", recursion_paths, 30},
        {"inlined", inlined_paths, 30},
        {"signal_frame", signal_frame_paths, 30},
        {"dlclose", dlclose_invalidates_cache, 30},
        {"dlclose_seen", dlclose_seen, 30},
        {"dlclose_bypassed", dlclose_bypassed, 30},
    };
    return RUN_SUITE("unwind", cases);
}
