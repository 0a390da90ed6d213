/*
 * an_otf2_dir.c - where an OTF2 export is written (an_export_otf2.c): into
 * a temporary directory beside DIR (".NAME.otf2-XXXXXX", so the rename is
 * atomic), renamed to DIR only when the whole archive is written; a failed
 * export removes it, and a reader never sees half an archive.
 *
 * DIR may be absent, an empty directory, or an earlier export (nothing but
 * traces.otf2, traces.def and traces/ holding *.evt and *.def files), which
 * is replaced; anything else is refused before a byte is written, so an
 * export never removes what it did not write.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_otf2_write.h"

#ifdef GPUPROF_HAVE_OTF2
static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && !strcmp(s + n - t, tail);
}

/* 1 when every entry of directory `path` but . and .. is allowed by
 * ok(path, name), 0 when one is not, -1 when it cannot be read. */
static int only(const char *path, bool (*ok)(const char *, const char *))
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent *e;
    int good = 1;
    while (good && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            good = ok(path, e->d_name);
    closedir(d);
    return good;
}

static bool kind_is(const char *dir, const char *name, mode_t type)
{
    char p[4400];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

static bool event_file(const char *dir, const char *name)
{
    return (ends_with(name, ".evt") || ends_with(name, ".def")) &&
           kind_is(dir, name, S_IFREG);
}

static bool archive_entry(const char *dir, const char *name)
{
    if (!strcmp(name, "traces.otf2") || !strcmp(name, "traces.def"))
        return kind_is(dir, name, S_IFREG);
    if (strcmp(name, "traces") || !kind_is(dir, name, S_IFDIR))
        return false;
    char p[4400];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return only(p, event_file) == 1;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a tree this export made (or checked to be an earlier one). */
static void remove_tree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

gpuprof_status gpuprof__an_otf2_dir_begin(gpuprof__an_otf2_dir *d,
                                          const char *path)
{
    d->path = path;
    d->tmp[0] = '\0';
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode) || only(path, archive_entry) != 1)
            return gpuprof__an_fail(GPUPROF_E_EXISTS,
                                    "%s: exists and is not an OTF2 export "
                                    "(only an empty directory or an earlier "
                                    "export is replaced)",
                                    path);
    } else if (errno != ENOENT) {
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", path, strerror(errno));
    }
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t base = n;
    while (base && path[base - 1] != '/')
        base--;
    if (snprintf(d->tmp, sizeof(d->tmp), "%.*s.%.*s.otf2-XXXXXX", (int)base,
                 path, (int)(n - base), path + base) >= (int)sizeof(d->tmp) - 8)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "%s: name too long", path);
    if (!mkdtemp(d->tmp)) {
        int e = errno;
        d->tmp[0] = '\0';
        return gpuprof__an_fail(GPUPROF_E_IO,
                                "%s: cannot create a directory "
                                "beside it: %s",
                                path, strerror(e));
    }
    mode_t mask = umask(0); /* mkdtemp makes 0700: the mode mkdir gives */
    umask(mask);
    chmod(d->tmp, 0777 & ~mask);
    return GPUPROF_OK;
}

gpuprof_status gpuprof__an_otf2_dir_end(gpuprof__an_otf2_dir *d,
                                        gpuprof_status st)
{
    if (st != GPUPROF_OK) {
        remove_tree(d->tmp);
        return st;
    }
    char aside[4300];
    snprintf(aside, sizeof(aside), "%s.old", d->tmp);
    struct stat sb; /* still what _begin found (nothing put there since)? */
    if (lstat(d->path, &sb) == 0 &&
        (!S_ISDIR(sb.st_mode) || only(d->path, archive_entry) != 1)) {
        remove_tree(d->tmp);
        return gpuprof__an_fail(GPUPROF_E_EXISTS,
                                "%s: changed during the "
                                "export; not replaced",
                                d->path);
    }
    bool had = rename(d->path, aside) == 0;
    if (!had && errno != ENOENT) {
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot replace it: %s",
                              d->path, strerror(errno));
    } else if (rename(d->tmp, d->path) != 0) {
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", d->path, strerror(errno));
        if (had)
            rename(aside, d->path); /* the earlier one back */
    }
    if (st != GPUPROF_OK)
        remove_tree(d->tmp);
    else if (had)
        remove_tree(aside);
    return st;
}
#endif /* GPUPROF_HAVE_OTF2 */
