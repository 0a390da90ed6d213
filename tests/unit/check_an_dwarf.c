/*
 * check_an_dwarf.c - source structure of CPU frames from DWARF. A fixture
 * (tests/unit/fixtures/dwarf_fixture.c, built with -O2 as DWARF 5 and as
 * DWARF 4) is dlopened and run; the return addresses it records are looked
 * up as (module path, offset from the load address), and the answer must be
 * exactly the functions, inlining and lines the fixture recorded; likewise
 * for a non-PIE executable built from it (offsets are addresses). A copy
 * whose DWARF lives in a separate file (.gnu_debuglink) answers the same;
 * stripped, truncated, garbage and missing files give 0 levels, print
 * nothing and never crash; a module that failed is not retried.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/base/an_internal.h"
#include "support/files.h"
#include "support/suite.h"

/* What the fixture recorded, and where it lies. */
typedef struct fixture {
    char path[4096];      /* the .so as dlopened */
    uint64_t off_inlined; /* leaf()'s return into outer() (through mid()) */
    uint64_t off_direct;  /* leaf()'s return into direct() */
    int line_mid, line_leaf, line_direct;
} fixture;

/* Loads dwarf_fixture<version>.so from beside this program and runs it. */
static void run_fixture(int version, fixture *f)
{
    char exe[4096] = {0};
    ck_assert(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
    snprintf(f->path, sizeof(f->path), "%s/dwarf_fixture%d.so", dirname(exe),
             version);
    void *h = dlopen(f->path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h, "dlopen %s: %s", f->path, dlerror());
    int (*outer)(int) = (int (*)(int))dlsym(h, "outer");
    int (*direct)(int) = (int (*)(int))dlsym(h, "direct");
    void **ret = dlsym(h, "dwf_ret");
    ck_assert(outer && direct && ret);
    ck_assert_int_eq(outer(1), 28); /* ((1 + 1) * 2 + 1) * 5 + 3 */
    void *r_inlined = *ret;
    ck_assert_int_eq(direct(1), 21);
    void *r_direct = *ret;
    /* The offset from the load address: link_map's l_addr = dlpi_addr. */
    Dl_info di;
    struct link_map *lm = NULL;
    ck_assert(dladdr1(r_inlined, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm);
    f->off_inlined = (uint64_t)((uintptr_t)r_inlined - lm->l_addr);
    f->off_direct = (uint64_t)((uintptr_t)r_direct - lm->l_addr);
    f->line_mid = *(int *)dlsym(h, "dwf_line_mid");
    f->line_leaf = *(int *)dlsym(h, "dwf_line_leaf");
    f->line_direct = *(int *)dlsym(h, "dwf_line_direct");
    ck_assert(f->line_mid > 0 && f->line_leaf > 0 && f->line_direct > 0);
    /* The module stays loaded: its addresses were handed out. */
}

static void assert_file(const char *file)
{
    static const char want[] = "/dwarf_fixture.c";
    ck_assert_ptr_nonnull(file);
    size_t n = strlen(file);
    ck_assert_msg(n >= strlen(want) && !strcmp(file + n - strlen(want), want),
                  "file %s", file);
}

/* outer() -> mid() inlined -> the call of leaf(): two levels. */
static void assert_inlined(gpuprof__an_dwarf **c, const char *path,
                           const fixture *f)
{
    gpuprof__an_srclevel lv[8];
    memset(lv, 0xA5, sizeof(lv));
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(c, path, f->off_inlined, lv, 8),
                      2);
    ck_assert_str_eq(lv[0].function, "outer");
    assert_file(lv[0].file);
    ck_assert_uint_eq(lv[0].line, (uint32_t)f->line_mid);
    ck_assert_str_eq(lv[1].function, "mid");
    assert_file(lv[1].file);
    ck_assert_uint_eq(lv[1].line, (uint32_t)f->line_leaf);
}

static void assert_direct(gpuprof__an_dwarf **c, const char *path,
                          const fixture *f)
{
    gpuprof__an_srclevel lv[8];
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(c, path, f->off_direct, lv, 8),
                      1);
    ck_assert_str_eq(lv[0].function, "direct");
    assert_file(lv[0].file);
    ck_assert_uint_eq(lv[0].line, (uint32_t)f->line_direct);
}

static void structure(int version)
{
    fixture f;
    run_fixture(version, &f);
    gpuprof__an_dwarf *c = NULL;
    assert_inlined(&c, f.path, &f);
    assert_direct(&c, f.path, &f);
    /* Cached: the same strings again, still valid after other lookups. */
    gpuprof__an_srclevel a[2], b[2];
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, f.path, f.off_inlined, a, 2),
                      2);
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, "/nonexistent/x", 1, b, 2),
                      0);
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, f.path, f.off_inlined, b, 2),
                      2);
    ck_assert_ptr_eq(a[0].function, b[0].function);
    ck_assert_ptr_eq(a[1].file, b[1].file);
    /* Room for one level: the outermost, its line the call of mid(). */
    gpuprof__an_srclevel one;
    ck_assert_uint_eq(
        gpuprof__an_dwarf_lookup(&c, f.path, f.off_inlined, &one, 1), 1);
    ck_assert_str_eq(one.function, "outer");
    ck_assert_uint_eq(one.line, (uint32_t)f.line_mid);
    ck_assert_uint_eq(
        gpuprof__an_dwarf_lookup(&c, f.path, f.off_inlined, &one, 0), 0);
    /* Addresses outside any code: nothing, no crash. */
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, f.path, 0, a, 2), 0);
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, f.path, UINT64_MAX, a, 2),
                      0);
    gpuprof__an_dwarf_free(c);
}

START_TEST(dwarf5_inlined_and_direct)
{
    structure(5);
}
END_TEST

START_TEST(dwarf4_inlined_and_direct)
{
    structure(4);
}
END_TEST

/* A non-PIE executable (ET_EXEC): the offset of a frame is its address. */
START_TEST(non_pie_executable)
{
    char exe[4096] = {0}, path[4200], cmd[4300];
    ck_assert(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
    snprintf(path, sizeof(path), "%s/dwarf_fixture_exec", dirname(exe));
    unsigned char eh[18];
    FILE *fp = fopen(path, "rb");
    ck_assert(fp && fread(eh, 1, sizeof(eh), fp) == sizeof(eh));
    fclose(fp);
    ck_assert_uint_eq(eh[16] | eh[17] << 8, 2); /* e_type ET_EXEC */
    snprintf(cmd, sizeof(cmd), "'%s'", path);
    void *inlined, *direct;
    fixture f;
    ck_assert_ptr_nonnull(fp = popen(cmd, "r"));
    ck_assert_int_eq(fscanf(fp, "%p %p %d %d %d", &inlined, &direct,
                            &f.line_mid, &f.line_leaf, &f.line_direct),
                     5);
    ck_assert_int_eq(pclose(fp), 0);
    f.off_inlined = (uint64_t)(uintptr_t)inlined;
    f.off_direct = (uint64_t)(uintptr_t)direct;
    gpuprof__an_dwarf *c = NULL;
    assert_inlined(&c, path, &f);
    assert_direct(&c, path, &f);
    gpuprof__an_dwarf_free(c);
}
END_TEST

/* ---- files made in a fresh directory ---- */

static void tmpdir(char *dir, size_t n)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, n, "%s/dwarf.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Runs a shell command (objcopy); its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

START_TEST(separate_debug_file)
{
    fixture f;
    run_fixture(5, &f);
    char dir[512], dbg[1024], bin[1024];
    tmpdir(dir, sizeof(dir));
    snprintf(dbg, sizeof(dbg), "%s/fixture.debug", dir);
    snprintf(bin, sizeof(bin), "%s/fixture.so", dir);
    ck_assert_int_eq(sh("objcopy --only-keep-debug '%s' '%s' && "
                        "objcopy --strip-debug --add-gnu-debuglink='%s' '%s' "
                        "'%s'",
                        f.path, dbg, dbg, f.path, bin),
                     0);
    gpuprof__an_dwarf *c = NULL;
    assert_inlined(&c, bin, &f);
    assert_direct(&c, bin, &f);
    gpuprof__an_dwarf_free(c);
}
END_TEST

static uint32_t lookup_fresh(const char *path, uint64_t off)
{
    gpuprof__an_dwarf *c = NULL;
    gpuprof__an_srclevel lv[8];
    uint32_t n = gpuprof__an_dwarf_lookup(&c, path, off, lv, 8);
    gpuprof__an_dwarf_free(c);
    return n;
}

START_TEST(bad_files_give_nothing)
{
    fixture f;
    run_fixture(5, &f);
    char dir[512], p[1024], err[1024];
    tmpdir(dir, sizeof(dir));
    /* Whatever happens below must not print: stderr goes to a file. */
    snprintf(err, sizeof(err), "%s/stderr", dir);
    tf_muted quiet = tf_mute(err);

    snprintf(p, sizeof(p), "%s/stripped.so", dir);
    ck_assert_int_eq(sh("objcopy --strip-debug '%s' '%s'", f.path, p), 0);
    ck_assert_uint_eq(lookup_fresh(p, f.off_inlined), 0);
    ck_assert_uint_eq(lookup_fresh("/nonexistent/lib.so", f.off_inlined), 0);
    ck_assert_uint_eq(lookup_fresh(dir, f.off_inlined), 0); /* a directory */
    ck_assert_uint_eq(lookup_fresh("/proc/self/status", 10), 0);
    unsigned char *img;
    size_t size = tf_slurp(f.path, &img);
    snprintf(p, sizeof(p), "%s/damaged.so", dir);
    for (size_t k = 0; k <= 64; k++) { /* every truncation: no crash */
        tf_spill(p, img, size * k / 64);
        uint32_t n = lookup_fresh(p, f.off_inlined);
        ck_assert_uint_le(n, 2);
        if (k == 64)
            ck_assert_uint_eq(n, 2);
    }
    for (size_t i = 0; i < size; i++) /* garbage after a valid ELF header */
        if (i >= 64)
            img[i] = (unsigned char)(i * 131 + 7);
    tf_spill(p, img, size);
    ck_assert_uint_le(lookup_fresh(p, f.off_inlined), 2);
    memset(img, 0x5A, size); /* garbage throughout */
    tf_spill(p, img, size);
    ck_assert_uint_eq(lookup_fresh(p, f.off_inlined), 0);
    free(img);

    tf_unmute(quiet);
}
END_TEST

START_TEST(failures_not_retried)
{
    fixture f;
    run_fixture(5, &f);
    char dir[512], p[1024];
    tmpdir(dir, sizeof(dir));
    snprintf(p, sizeof(p), "%s/late.so", dir);
    gpuprof__an_dwarf *c = NULL;
    gpuprof__an_srclevel lv[4];
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, p, f.off_inlined, lv, 4), 0);
    unsigned char *img;
    size_t size = tf_slurp(f.path, &img);
    tf_spill(p, img, size); /* the module appears after it failed */
    free(img);
    ck_assert_uint_eq(gpuprof__an_dwarf_lookup(&c, p, f.off_inlined, lv, 4), 0);
    gpuprof__an_dwarf_free(c);
    ck_assert_uint_eq(lookup_fresh(p, f.off_inlined), 2); /* a new cache */
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"dwarf5_inlined_and_direct", dwarf5_inlined_and_direct, 20},
        {"dwarf4_inlined_and_direct", dwarf4_inlined_and_direct, 20},
        {"non_pie_executable", non_pie_executable, 20},
        {"separate_debug_file", separate_debug_file, 30},
        {"bad_files_give_nothing", bad_files_give_nothing, 60},
        {"failures_not_retried", failures_not_retried, 20},
    };
    return RUN_SUITE("an_dwarf", cases);
}
