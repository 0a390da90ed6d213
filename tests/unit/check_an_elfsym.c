/*
 * check_an_elfsym.c - function names for CPU frames: a function of this
 * very executable is named from its symbol table at its entry, inside it
 * and at its last byte (return-address semantics: offset - 1 is looked up);
 * a missing file, a non-ELF file, every truncation of the executable and
 * damaged section headers give no name and never crash.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/base/an_internal.h"
#include "support/suite.h"

int gp_elfsym_probe(int x);
__attribute__((noinline)) int gp_elfsym_probe(int x)
{
    return x * 3 + 1;
}

static uint64_t probe_offset(char *path, size_t n)
{
    Dl_info di;
    ck_assert(dladdr((void *)gp_elfsym_probe, &di));
    ck_assert(readlink("/proc/self/exe", path, n - 1) > 0);
    return (uint64_t)((uintptr_t)gp_elfsym_probe - (uintptr_t)di.dli_fbase);
}

START_TEST(names_own_function)
{
    char exe[4096] = {0};
    uint64_t off = probe_offset(exe, sizeof(exe)), d = 99;
    gpuprof__an_symtab *c = NULL;
    /* A return address one byte in: the call was at the entry. */
    const char *n = gpuprof__an_symbolize(&c, exe, off + 1, &d);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(n, "gp_elfsym_probe");
    ck_assert_uint_eq(d, 1);
    /* The entry itself belongs to whatever precedes it. */
    n = gpuprof__an_symbolize(&c, exe, off, &d);
    ck_assert(!n || strcmp(n, "gp_elfsym_probe") != 0);
    ck_assert_ptr_null(gpuprof__an_symbolize(&c, "/nonexistent/x", 10, &d));
    ck_assert_ptr_null(gpuprof__an_symbolize(&c, "/proc/self/status", 10, &d));
    gpuprof__an_symtab_free(c);
}
END_TEST

START_TEST(damaged_files)
{
    char exe[4096] = {0}, tmp[512];
    uint64_t off = probe_offset(exe, sizeof(exe)), d;
    int fd = open(exe, O_RDONLY);
    struct stat sb;
    ck_assert(fd >= 0 && fstat(fd, &sb) == 0);
    size_t size = (size_t)sb.st_size;
    unsigned char *img = malloc(size);
    ck_assert(read(fd, img, size) == (ssize_t)size);
    close(fd);
    const char *t = getenv("TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/elfsym.XXXXXX", t ? t : "/tmp");
    int out = mkstemp(tmp);
    ck_assert(out >= 0);
    /* Truncations at 64 points, then header fields set to garbage. */
    for (size_t k = 0; k <= 64; k++) {
        size_t cut = size * k / 64;
        ck_assert(ftruncate(out, 0) == 0);
        ck_assert(pwrite(out, img, cut, 0) == (ssize_t)cut);
        gpuprof__an_symtab *c = NULL;
        const char *n = gpuprof__an_symbolize(&c, tmp, off + 1, &d);
        if (k == 64)
            ck_assert_str_eq(n, "gp_elfsym_probe");
        gpuprof__an_symtab_free(c);
    }
    static const size_t fields[] = {0x28, 0x3a, 0x3c, 0x3e}; /* shoff, shentsize, shnum, shstrndx */
    for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
        unsigned char save[8];
        memcpy(save, img + fields[f], 8);
        memset(img + fields[f], 0xFF, fields[f] == 0x28 ? 8 : 2);
        ck_assert(ftruncate(out, 0) == 0);
        ck_assert(pwrite(out, img, size, 0) == (ssize_t)size);
        gpuprof__an_symtab *c = NULL;
        gpuprof__an_symbolize(&c, tmp, off + 1, &d); /* no crash */
        gpuprof__an_symtab_free(c);
        memcpy(img + fields[f], save, 8);
    }
    close(out);
    unlink(tmp);
    free(img);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"names_own_function", names_own_function, 10},
        {"damaged_files", damaged_files, 60},
    };
    return RUN_SUITE("an_elfsym", cases);
}
