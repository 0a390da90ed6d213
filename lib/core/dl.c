/*
 * dl.c - dlclose interposed, so that a call-path capture need not ask the
 * dynamic loader whether a library went away (unwind.c, "has the loader
 * unloaded anything"): asking takes the loader's global lock on every GPU
 * launch; with this, a capture loads one word.
 *
 * libgpuprof.so exports `dlclose` without a version (lib/exports.txt;
 * doc/ABI.md), so that it stands in for the C library's whatever version a
 * caller was linked against, wherever libgpuprof.so comes before the C
 * library in the lookup order: a program linked with -lgpuprof, or one that
 * preloads it. Ours tells the check a close begins, calls the C library's
 * (the next definition in the lookup order), and tells it the close ended.
 * Only dlclose: dlopen and dlmopen pick the caller's namespace and its
 * RUNPATH from their return address, which a wrapper would change, and a
 * load never makes the table wrong (a new library's addresses are a lookup
 * miss, which asks the loader).
 *
 * This file is in libgpuprof.so only, not in the static archive (a static
 * link then asks the loader at every capture, as before): the archive
 * defines gpuprof_ names alone. At load, a constructor asks the lookup
 * order whose dlclose the process has; when it is not ours (libgpuprof.so
 * dlopened with RTLD_LOCAL, or loaded after the C library; another
 * interposer ahead of us that does not pass the call on) the check keeps
 * asking the loader at every capture.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <stddef.h>

#include "core/atomics.h"
#include "core/unwind.h"

typedef int (*close_fn)(void *);
static _Atomic(close_fn) real_close;

static int dl_close(void *handle);

/* The dlclose our own stands in front of: the next one in the lookup
 * order, or the C library's own when nothing comes after us (we were
 * called through a handle of libgpuprof.so without being the process's). */
static close_fn real(void)
{
    close_fn f = gp_load_acquire(&real_close);
    if (f)
        return f;
    gpuprof__loader_lock_begin(); /* dlsym takes the loader's lock */
    f = (close_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!f || f == dl_close) {
        void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
        f = libc ? (close_fn)dlsym(libc, "dlclose") : NULL;
        if (f && f != dl_close)
            f(libc); /* NOLOAD took a reference: give it back */
        else
            f = NULL;
    }
    gpuprof__loader_lock_end();
    if (f)
        gp_store_release(&real_close, f);
    return f;
}

/* The close is bracketed for the check, and as a call that takes the
 * loader's lock: a profiling signal meanwhile takes no sample (its
 * unwinder may take that lock too). */
static int dl_close(void *handle)
{
    close_fn f = real();
    if (!f)
        return -1; /* no C library dlclose found: cannot happen in practice */
    gpuprof__loader_close_begin();
    gpuprof__loader_lock_begin();
    int rc = f(handle);
    gpuprof__loader_lock_end();
    gpuprof__loader_close_end();
    return rc;
}

/* The exported name; dl_close is its address inside this library, which no
 * other definition ahead in the lookup order can stand in for. */
extern __typeof(dl_close) dlclose
    __attribute__((alias("dl_close"), visibility("default")));

__attribute__((constructor)) static void dl_detect(void)
{
    (void)real();
    gpuprof__loader_lock_begin();
    void *f = dlsym(RTLD_DEFAULT, "dlclose");
    gpuprof__loader_lock_end();
    gpuprof__loader_set_interposed(f == (void *)dl_close);
}
