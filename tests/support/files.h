/*
 * files.h - whole files in and out, for the white-box suites (header
 * only). Reading fails the test only where the caller asks it to.
 */
#ifndef GPUPROF_TEST_FILES_H
#define GPUPROF_TEST_FILES_H

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The bytes of `path` (malloc'd; *size set), NULL when it cannot be
 * opened or read whole. A directory is not a file. */
static inline void *tf_read(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    void *b = NULL;
    if (n >= 0 && n < (1L << 40) && fseek(f, 0, SEEK_SET) == 0 &&
        (b = malloc(n ? (size_t)n : 1)) &&
        fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b)
        *size = (size_t)n;
    return b;
}

/* The same, failing the test when the file is not there. */
static inline size_t tf_slurp(const char *path, unsigned char **img)
{
    size_t n = 0;
    *img = tf_read(path, &n);
    ck_assert_msg(*img != NULL, "cannot read %s", path);
    return n;
}

/* Writes `n` bytes to `path` (created or replaced); the test fails if it
 * cannot. */
static inline void tf_spill(const char *path, const void *img, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(img, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Whatever runs between tf_mute and tf_unmute must not print: stderr goes
 * to `path` meanwhile, and the test fails if anything reached it. */
typedef struct tf_muted {
    int saved, fd;
} tf_muted;

static inline tf_muted tf_mute(const char *path)
{
    fflush(stderr);
    tf_muted m = {dup(2), open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)};
    ck_assert(m.saved >= 0 && m.fd >= 0 && dup2(m.fd, 2) == 2);
    return m;
}

static inline void tf_unmute(tf_muted m)
{
    fflush(stderr);
    ck_assert(dup2(m.saved, 2) == 2);
    struct stat sb;
    ck_assert(fstat(m.fd, &sb) == 0);
    ck_assert_msg(sb.st_size == 0, "%lld bytes on stderr",
                  (long long)sb.st_size);
    close(m.fd);
    close(m.saved);
}

/* Entries of a directory, "." and ".." aside (0 when it cannot be read). */
static inline int tf_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

#endif
