/*
 * check_unwind.c - CPU call paths: the module table (the executable, libc,
 * a library loaded later with dlopen) and call-path capture into a CCT,
 * checked against the addresses of known, non-inlined functions.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/unwind.h"
#include "io/io.h"
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

int main(void)
{
    const test_case cases[] = {
        {"modules", module_table, 30},
        {"callpath", callpath_into_cct, 30},
        {"callpath_cache", callpath_cache, 30},
    };
    return RUN_SUITE("unwind", cases);
}
