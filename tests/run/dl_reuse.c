/*
 * dl_reuse.c - a program linked with -lgpuprof (or given it in LD_PRELOAD)
 * that launches GPU work from a library, closes it, opens another library
 * at the same address and launches from there (tests/scripts/dlclose.sh):
 * its profile must put each launch beneath the library it came from, which
 * needs libgpuprof.so's dlclose (lib/core/dl.c) to be the process's.
 *
 *   dl_reuse DIR N   DIR holds unwind_lib_a.so and unwind_lib_b.so (the
 *                    same bytes under two names, tests/unit/fixtures);
 *                    N launches from each, each with one kernel activity
 *                    named after its library ("kernel_a", "kernel_b")
 * Prints "dlclose from <file>" (whose dlclose the process has) and "same
 * address" or "other address"; exits 0 when everything it called worked.
 * Settings come from the environment (GPUPROF_OUTPUT ...).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <gpuprof.h>

typedef unsigned (*lib_call_fn)(unsigned (*)(void *), void *);

static int failed;

/* One launch from the library's frame, and its activity. */
static unsigned launch(void *name)
{
    uint64_t corr = gpuprof_op_begin(GPUPROF_OP_KERNEL, 0);
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_KERNEL;
    a.start_ns = 1000;
    a.end_ns = 2000;
    a.name = (const char *)name;
    if (!corr || gpuprof_activity_submit(&a) != GPUPROF_OK ||
        gpuprof_op_end(corr) != GPUPROF_OK)
        failed = 1;
    return 0;
}

static void *open_lib(const char *dir, const char *name, lib_call_fn *fn)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dl_reuse: %s\n", dlerror());
        exit(1);
    }
    *(void **)fn = dlsym(h, "unwind_lib_call");
    return h;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int n = atoi(argv[2]);
    Dl_info info;
    void *close_fn = dlsym(RTLD_DEFAULT, "dlclose");
    printf("dlclose from %s\n",
           close_fn && dladdr(close_fn, &info) ? info.dli_fname : "?");
    if (gpuprof_init(NULL) != GPUPROF_OK)
        return 1;
    lib_call_fn fa, fb;
    void *h = open_lib(argv[1], "unwind_lib_a.so", &fa);
    for (int i = 0; i < n; i++)
        fa(launch, "kernel_a");
    if (dlclose(h) != 0)
        return 1;
    h = open_lib(argv[1], "unwind_lib_b.so", &fb);
    printf("%s address\n", (void *)fa == (void *)fb ? "same" : "other");
    for (int i = 0; i < n; i++)
        fb(launch, "kernel_b");
    dlclose(h);
    return gpuprof_finalize() == GPUPROF_OK && !failed ? 0 : 1;
}
