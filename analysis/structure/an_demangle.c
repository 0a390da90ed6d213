/*
 * an_demangle.c - C++ names made readable: kernels, functions and inlined
 * functions of C++ and CUDA programs carry Itanium-mangled names
 * (_Z10scale_biasPfiffi). libstdc++'s __cxa_demangle, which every system
 * with a C++ program has, is looked up at first use with dlopen -- the
 * analysis library never links libstdc++ -- and without it (or with
 * GPUPROF_DEMANGLE=0) names stay as they were.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *out, size_t *len,
                                 int *status);

static cxa_demangle_fn demangler;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
    const char *off = getenv("GPUPROF_DEMANGLE");
    if (off && (!strcmp(off, "0") || !strcmp(off, "no") || !strcmp(off, "off")))
        return;
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        *(void **)&demangler = dlsym(h, "__cxa_demangle");
    /* h stays open: the function is used until exit. */
}

char *gpuprof__an_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    pthread_once(&once, find_demangler);
    if (!demangler)
        return NULL;
    int status = -1;
    char *out = demangler(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}
