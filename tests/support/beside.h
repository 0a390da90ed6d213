/*
 * beside.h - a library built beside the test binary, opened and one of its
 * functions found (the unwinding suites' fixture libraries). Header only;
 * define _GNU_SOURCE before any include.
 */
#ifndef GPUPROF_TEST_BESIDE_H
#define GPUPROF_TEST_BESIDE_H

#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

/* dlopen of `name` in the test binary's directory; *fn its symbol `sym`.
 * The handle (the test fails when either cannot be had). */
static inline void *tb_open_beside(const char *name, const char *sym,
                                   void **fn)
{
    char exe[PATH_MAX], lib[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    snprintf(lib, sizeof(lib), "%s/%s", dirname(exe), name);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", lib, dlerror());
    *fn = dlsym(h, sym);
    ck_assert_ptr_nonnull(*fn);
    return h;
}

#endif
