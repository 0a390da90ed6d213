/*
 * preload.c - libgpuprof-preload.so, what `gpuprof run` puts in LD_PRELOAD.
 *
 * A program that never calls libgpuprof is measured by loading this small
 * library into it before its own code runs: its constructor calls
 * gpuprof_init(NULL), so every setting comes from the GPUPROF_* variables
 * that `gpuprof run` set from its options, and the library finalizes as it
 * always does (its atexit handler, SIGTERM/SIGINT, fork children). The
 * OpenCL backend points OPENCL_LAYERS at its layer during that init, before
 * the program's first OpenCL call, so an unmodified OpenCL program is seen
 * through the ICD loader.
 *
 * `gpuprof run` preloads libgpuprof.so too, ahead of the C library, so that
 * the pthread functions it defines (lib/host) see the program's threads
 * wait for each other.
 *
 * Children: unless GPUPROF_FOLLOW_CHILDREN is 1, the constructor takes this
 * library (and the preloaded libgpuprof.so) out of LD_PRELOAD first, so a
 * program this one execs (a compiler
 * that PoCL starts, a shell command) runs unmeasured and writes nothing. A
 * fork child that does not exec is the same process image and is measured
 * as the library always measures fork children. OPENCL_LAYERS stays: the
 * ICD loader of this process reads it lazily, at the first OpenCL call, and
 * in a child without libgpuprof the layer passes every call through.
 *
 * Nothing here prints: the library's log (GPUPROF_LOG) says what fails.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "gpuprof.h"

#define SELF "libgpuprof-preload.so"
#define LIB "libgpuprof.so" /* and .so.N, .so.N.M.P */

/* Whether one LD_PRELOAD entry (len bytes at e) names this library or
 * libgpuprof.so. */
static int is_self(const char *e, size_t len)
{
    size_t n = sizeof(SELF) - 1;
    if (len >= n && memcmp(e + len - n, SELF, n) == 0 &&
        (len == n || e[len - n - 1] == '/'))
        return 1;
    const char *base = e + len;
    while (base > e && base[-1] != '/')
        base--;
    n = sizeof(LIB) - 1;
    return (size_t)(e + len - base) >= n && memcmp(base, LIB, n) == 0 &&
           (base[n] == '.' || base + n == e + len);
}

/* LD_PRELOAD without this library (entries are separated by ':' or ' ');
 * unset when nothing else is left. */
static void drop_self(void)
{
    const char *cur = getenv("LD_PRELOAD");
    if (!cur)
        return;
    size_t size = strlen(cur) + 1;
    char *keep = malloc(size);
    if (!keep)
        return;
    size_t used = 0;
    for (const char *p = cur; *p;) {
        size_t len = strcspn(p, ": ");
        if (len && !is_self(p, len)) {
            if (used)
                keep[used++] = ':';
            memcpy(keep + used, p, len);
            used += len;
        }
        p += len;
        p += *p != '\0';
    }
    keep[used] = '\0';
    if (used)
        setenv("LD_PRELOAD", keep, 1);
    else
        unsetenv("LD_PRELOAD");
    free(keep);
}

__attribute__((constructor)) static void gpuprof_preload_init(void)
{
    const char *follow = getenv("GPUPROF_FOLLOW_CHILDREN");
    if (!follow || strcmp(follow, "1") != 0)
        drop_self();
    (void)gpuprof_init(NULL);
}
