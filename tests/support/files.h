/*
 * files.h - whole files in and out, for the white-box suites (header
 * only). Reading fails the test only where the caller asks it to.
 */
#ifndef GPUPROF_TEST_FILES_H
#define GPUPROF_TEST_FILES_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
