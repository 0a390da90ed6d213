/*
 * an_otf2_lib.c - libotf2 found at run time (an_otf2.h says why it is not
 * linked): dlopen by its SONAME -- Debian's libopen-trace-format2.so.10,
 * upstream's libotf2.so.10 -- or the file GPUPROF_OTF2_LIBRARY names, once
 * per process; every entry point of GPUPROF_AN_OTF2_FUNCS must be there.
 * The handle stays open until exit. Without OTF2 headers at build time
 * there is nothing to load (an_export_otf2.c says so).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_otf2.h"

#ifdef GPUPROF_HAVE_OTF2
static gpuprof__an_otf2_lib lib;
static const gpuprof__an_otf2_lib *loaded;
static char why[600];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The names tried, in order; GPUPROF_OTF2_LIBRARY alone when set. */
static const char *const sonames[] = {"libopen-trace-format2.so.10",
                                      "libotf2.so.10"};

static void *open_lib(void)
{
    const char *env = getenv("GPUPROF_OTF2_LIBRARY");
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            snprintf(why, sizeof(why), "GPUPROF_OTF2_LIBRARY=%s: %s", env,
                     dlerror());
        return h;
    }
    for (size_t i = 0; i < sizeof(sonames) / sizeof(sonames[0]); i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    snprintf(why, sizeof(why),
             "libotf2 is not installed (neither %s nor %s "
             "can be loaded; Debian: apt-get install libotf2-trace-dev)",
             sonames[0], sonames[1]);
    return NULL;
}

static __thread char message[512];

/* libotf2 prints its errors on stderr unless told otherwise; a library
 * never prints (STYLE.md): the message is kept for the error we return.
 * (The handler is libotf2's, process-wide: a program that uses libotf2
 * itself and then exports gets it too; it still sees every error code.) */
static OTF2_ErrorCode quiet(void *user, const char *file, uint64_t line,
                            const char *function, OTF2_ErrorCode code,
                            const char *fmt, va_list va)
{
    (void)user;
    (void)file;
    (void)line;
    (void)function;
    if (fmt)
        vsnprintf(message, sizeof(message), fmt, va);
    else
        message[0] = '\0';
    return code;
}

const char *gpuprof__an_otf2_lib_message(void)
{
    return message;
}

static void load(void)
{
    void *h = open_lib();
    if (!h)
        return;
#define GPUPROF_AN_OTF2_SYM(f)                                                 \
    if (!(*(void **)&lib.f = dlsym(h, #f))) {                                  \
        snprintf(why, sizeof(why),                                             \
                 "libotf2 lacks %s: OTF2 3.0 or later is "                     \
                 "needed",                                                     \
                 #f);                                                          \
        dlclose(h);                                                            \
        return;                                                                \
    }
    GPUPROF_AN_OTF2_FUNCS(GPUPROF_AN_OTF2_SYM)
#undef GPUPROF_AN_OTF2_SYM
    lib.OTF2_Error_RegisterCallback(quiet, NULL);
    loaded = &lib;
}

const gpuprof__an_otf2_lib *gpuprof__an_otf2_lib_get(void)
{
    pthread_once(&once, load);
    if (!loaded)
        gpuprof__an_fail(GPUPROF_E_UNAVAILABLE, "OTF2 export: %s", why);
    return loaded;
}
#endif
