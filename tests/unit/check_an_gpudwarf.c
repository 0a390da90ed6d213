/*
 * check_an_gpudwarf.c - source lines of GPU instructions from cubins
 * (an_gpudwarf.c) and GPU_INSTR nodes in the database (agg/an_frames.c).
 *
 * tests/unit/fixtures/gpu_lines.cu is built beside this program as nvcc
 * makes a cubin (ET_EXEC) and with -rdc (ET_REL); tests/support/
 * cubin-lines.sh wrote, beside each, the line of every address range as
 * binutils' readelf decodes it. Every instruction of every function must
 * get exactly that line; the inlined functions and call sites must be the
 * ones the source's markers name. Then a measurement directory holding the
 * cubin under binaries/ and a profile with kernel and GPU instruction
 * nodes is analyzed: the instructions become the kernel's source lines
 * (merged by line), the inlined functions and their call sites, with the
 * values known; what has no line stays an instruction; `gpuprof analyze`
 * and `gpuprof report` show the lines. Without nvcc the cases that need a
 * cubin say so and pass.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analysis/base/an_internal.h"
#include "gpuprof_analysis.h"
#include "support/mkprofile.h"
#include "support/files.h"
#include "support/suite.h"

/* ---- the fixtures ---------------------------------------------------- */
typedef struct range { /* a row of cubin-lines.sh */
    char fn[128], file[256];
    uint64_t lo, hi;
    uint32_t line;
} range;

typedef struct truth {
    char cubin[4096];
    range *r;
    size_t n;
} truth;

/* The path of `name` beside this program. */
static void beside(char *out, size_t n, const char *name)
{
    char exe[4096] = {0};
    ck_assert(readlink("/proc/self/exe", exe, sizeof(exe) - 1) > 0);
    snprintf(out, n, "%s/%s", dirname(exe), name);
}

/* Loads gpu_lines<variant>.cubin's truth; false (the case is skipped, as
 * it says) when nvcc did not build it. */
static bool load_truth(const char *variant, truth *t)
{
    char name[64], lines[4200];
    snprintf(name, sizeof(name), "gpu_lines%s.cubin", variant);
    beside(t->cubin, sizeof(t->cubin), name);
    snprintf(lines, sizeof(lines), "%.*s.lines",
             (int)(strlen(t->cubin) - strlen(".cubin")), t->cubin);
    if (access(t->cubin, R_OK) != 0) {
        fprintf(stderr,
                "check_an_gpudwarf: no %s (nvcc missing): case "
                "skipped\n",
                t->cubin);
        return false;
    }
    FILE *f = fopen(lines, "r");
    ck_assert_msg(f, "%s: not built", lines);
    size_t cap = 0;
    t->r = NULL;
    t->n = 0;
    range x;
    while (fscanf(f, "%127s %" SCNu64 " %" SCNu64 " %255s %" SCNu32, x.fn,
                  &x.lo, &x.hi, x.file, &x.line) == 5) {
        if (t->n == cap) {
            cap = cap ? 2 * cap : 64;
            ck_assert_ptr_nonnull(t->r = realloc(t->r, cap * sizeof(*t->r)));
        }
        t->r[t->n++] = x;
    }
    fclose(f);
    ck_assert_uint_gt(t->n, 40);
    return true;
}

static const char *base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

/* The lines of the fixture's source carrying each marker. */
typedef struct marks {
    bool inner[128], helper[128];
    uint32_t helper_call, conv_call, both_call, apart;
} marks;

static void read_marks(const char *src, marks *m)
{
    memset(m, 0, sizeof(*m));
    FILE *f = fopen(src, "r");
    ck_assert_msg(f, "%s: the source the line table names", src);
    char buf[512];
    for (uint32_t l = 1; l < 128 && fgets(buf, sizeof(buf), f); l++) {
        m->inner[l] = strstr(buf, "// GL_INNER") != NULL;
        m->helper[l] = strstr(buf, "// GL_HELPER") != NULL;
        if (strstr(buf, "GL_HELPER_CALL"))
            m->helper_call = l;
        if (strstr(buf, "// GL_CONV_CALL"))
            m->conv_call = l;
        if (strstr(buf, "// GL_BOTH_CALL"))
            m->both_call = l;
        if (strstr(buf, "// GL_APART"))
            m->apart = l;
    }
    fclose(f);
    ck_assert(m->helper_call && m->conv_call && m->both_call && m->apart);
}

/* ---- lookups ----------------------------------------------------------- */

/* Every instruction (16 bytes on sm_90) of every function: the line
 * readelf gives; the first level is the function itself. Past its end:
 * nothing. */
static void lines_as_readelf(const char *variant)
{
    truth t;
    if (!load_truth(variant, &t))
        return;
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel lv[8];
    size_t checked = 0;
    for (size_t i = 0; i < t.n; i++) {
        const range *x = &t.r[i];
        for (uint64_t off = x->lo; off < x->hi; off += 16, checked++) {
            uint32_t n =
                gpuprof__an_cubin_lookup(&c, t.cubin, x->fn, off, lv, 8);
            ck_assert_msg(n >= 1, "%s+%#" PRIx64 ": no line", x->fn, off);
            ck_assert_str_eq(lv[0].function, x->fn);
            ck_assert_str_eq(base(lv[n - 1].file), x->file);
            ck_assert_msg(lv[n - 1].line == x->line,
                          "%s+%#" PRIx64 ": line %u, not %u", x->fn, off,
                          lv[n - 1].line, x->line);
        }
        if (i + 1 == t.n || strcmp(t.r[i + 1].fn, x->fn)) { /* its end */
            ck_assert_uint_eq(
                gpuprof__an_cubin_lookup(&c, t.cubin, x->fn, x->hi, lv, 8), 0);
            ck_assert_uint_eq(
                gpuprof__an_cubin_lookup(&c, t.cubin, x->fn, 1u << 20, lv, 8),
                0);
        }
    }
    ck_assert_uint_gt(checked, 200);
    ck_assert_uint_eq(
        gpuprof__an_cubin_lookup(&c, t.cubin, "no_such_kernel", 0, lv, 8), 0);
    gpuprof__an_cubin_free(c);
    free(t.r);
}

START_TEST(exec_lines_as_readelf)
{
    lines_as_readelf("");
}
END_TEST

START_TEST(rdc_lines_as_readelf)
{
    lines_as_readelf("_rdc");
}
END_TEST

/* The levels expected of an instruction of `fn` whose own line is `line`
 * (the markers say where it was inlined from); how many. */
static uint32_t expected(const marks *m, const char *fn, uint32_t line,
                         gpuprof__an_srclevel *want)
{
    uint32_t n = 0;
    bool conv = !strcmp(fn, "gl_conv"), both = !strcmp(fn, "gl_both");
    want[n++] = (gpuprof__an_srclevel){fn, NULL, line};
    if (conv && (m->helper[line] || m->inner[line])) {
        want[0].line = m->conv_call;
        want[n++] = (gpuprof__an_srclevel){"_Z9gl_helperPKfii", NULL, line};
    }
    if (conv && m->inner[line])
        want[1].line = m->helper_call;
    if (both && m->inner[line])
        want[0].line = m->both_call;
    if ((conv || both) && m->inner[line])
        want[n++] = (gpuprof__an_srclevel){"_Z8gl_innerf", NULL, line};
    return n;
}

/* The inlined functions and their call sites, as the markers say; each
 * depth (kernel only, one and two functions inlined) is seen. */
static void inlining_as_the_source(const char *variant)
{
    truth t;
    if (!load_truth(variant, &t))
        return;
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel lv[8], want[8];
    marks m;
    ck_assert_uint_ge(
        gpuprof__an_cubin_lookup(&c, t.cubin, t.r[0].fn, 0, lv, 8), 1);
    read_marks(lv[0].file, &m);
    unsigned seen[4] = {0};
    for (size_t i = 0; i < t.n; i++) {
        const range *x = &t.r[i];
        for (uint64_t off = x->lo; off < x->hi; off += 16) {
            uint32_t n =
                gpuprof__an_cubin_lookup(&c, t.cubin, x->fn, off, lv, 8);
            uint32_t w = expected(&m, x->fn, x->line, want);
            ck_assert_msg(n == w, "%s+%#" PRIx64 ": %u levels, not %u", x->fn,
                          off, n, w);
            for (uint32_t k = 0; k < n; k++) {
                ck_assert_str_eq(lv[k].function, want[k].function);
                ck_assert_msg(lv[k].line == want[k].line,
                              "%s+%#" PRIx64 " level %u: line %u, not %u",
                              x->fn, off, k, lv[k].line, want[k].line);
                ck_assert_str_eq(base(lv[k].file), "gpu_lines.cu");
            }
            seen[n]++;
        }
    }
    ck_assert(seen[1] && seen[2] && seen[3]);
    gpuprof__an_cubin_free(c);
    free(t.r);
}

START_TEST(exec_inlining_as_the_source)
{
    inlining_as_the_source("");
}
END_TEST

START_TEST(rdc_inlining_as_the_source)
{
    inlining_as_the_source("_rdc");
}
END_TEST

/* A chain longer than `max`: its outermost levels. */
START_TEST(outermost_levels)
{
    truth t;
    if (!load_truth("", &t))
        return;
    marks m;
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel lv[3];
    const range *x = NULL;
    for (size_t i = 0; i < t.n && !x; i++)
        if (!strcmp(t.r[i].fn, "gl_conv") && t.r[i].line < 128) {
            ck_assert_uint_ge(
                gpuprof__an_cubin_lookup(&c, t.cubin, "gl_conv", 0, lv, 3), 1);
            read_marks(lv[0].file, &m);
            if (m.inner[t.r[i].line])
                x = &t.r[i];
        }
    ck_assert_ptr_nonnull(x);
    ck_assert_uint_eq(
        gpuprof__an_cubin_lookup(&c, t.cubin, "gl_conv", x->lo, lv, 3), 3);
    ck_assert_uint_eq(
        gpuprof__an_cubin_lookup(&c, t.cubin, "gl_conv", x->lo, lv, 2), 2);
    ck_assert_str_eq(lv[1].function, "_Z9gl_helperPKfii");
    ck_assert_uint_eq(lv[1].line, m.helper_call); /* a call site now */
    gpuprof__an_cubin_free(c);
    free(t.r);
}
END_TEST

/* The symbol of gl_apart in the nvcc cubin: "$gl_both$_Z8gl_apartf" in
 * gl_both's section; its value and size (libelf). */
static void apart_symbol(const char *cubin, uint64_t *value, uint64_t *size)
{
    elf_version(EV_CURRENT);
    int fd = open(cubin, O_RDONLY);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    ck_assert(fd >= 0 && e);
    bool found = false;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        Elf_Data *d = elf_getdata(s, NULL);
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB || !d)
            continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym y;
            const char *name;
            if (gelf_getsym(d, (int)i, &y) &&
                (name = elf_strptr(e, sh.sh_link, y.st_name)) &&
                !strcmp(name, "$gl_both$_Z8gl_apartf")) {
                *value = y.st_value;
                *size = y.st_size;
                found = true;
            }
        }
    }
    elf_end(e);
    close(fd);
    ck_assert(found);
}

/* A device function kept out of line, named by itself (as PC sampling may
 * name it): found through its "$kernel$name" symbol, with the lines of its
 * place in the kernel. */
START_TEST(out_of_line_function)
{
    truth t;
    if (!load_truth("", &t))
        return;
    uint64_t v = 0, size = 0;
    apart_symbol(t.cubin, &v, &size);
    ck_assert_uint_gt(size, 0);
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel a[4], b[4];
    marks m;
    ck_assert_uint_eq(
        gpuprof__an_cubin_lookup(&c, t.cubin, "_Z8gl_apartf", 0, a, 4), 1);
    read_marks(a[0].file, &m);
    for (uint64_t off = 0; off < size; off += 16) {
        uint32_t n =
            gpuprof__an_cubin_lookup(&c, t.cubin, "_Z8gl_apartf", off, a, 4);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(a[0].function, "_Z8gl_apartf");
        ck_assert_uint_eq(
            gpuprof__an_cubin_lookup(&c, t.cubin, "gl_both", v + off, b, 4), 1);
        ck_assert_uint_eq(a[0].line, b[0].line);
        ck_assert_uint_eq(a[0].line, m.apart);
        ck_assert_str_eq(a[0].file, b[0].file);
    }
    ck_assert_uint_eq(
        gpuprof__an_cubin_lookup(&c, t.cubin, "_Z8gl_apartf", size, a, 4), 0);
    gpuprof__an_cubin_free(c);
    free(t.r);
}
END_TEST

/* ---- files that are not (whole) cubins ------------------------------- */
static void tmpdir(char *dir, size_t n)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, n, "%s/gpudwarf.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Little-endian fields of an ELF64 image, read by hand. */
static uint64_t get(const unsigned char *p, size_t at, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[at + i];
    return v;
}

/* The section header named `name` in the image; *nm, its name there. */
static unsigned char *section(unsigned char *img, size_t size, const char *name,
                              char **nm)
{
    uint64_t shoff = get(img, 0x28, 8), es = get(img, 0x3A, 2),
             n = get(img, 0x3C, 2), str = get(img, 0x3E, 2);
    ck_assert(shoff + n * es <= size && es == 64 && str < n);
    uint64_t names = get(img, shoff + str * es + 0x18, 8);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *sh = img + shoff + i * es;
        uint64_t at = names + get(sh, 0, 4);
        if (at < size && !strcmp((char *)img + at, name)) {
            *nm = (char *)img + at;
            return sh;
        }
    }
    ck_abort_msg("no section %s", name);
    return NULL;
}

static void put(unsigned char *p, size_t at, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[at + i] = (unsigned char)(v >> (8 * i));
}

/* The cubin as a linker that gave each code section an address of its own
 * would leave it: code section i at i << 16, its symbols moved with it, the
 * line table's addresses resolved, its relocations gone. */
static void link_in_place(unsigned char *img, size_t size)
{
    uint64_t shoff = get(img, 0x28, 8), n = get(img, 0x3C, 2);
    char *nm;
    unsigned char *line = section(img, size, ".debug_line", &nm),
                  *rela = section(img, size, ".rela.debug_line", &nm),
                  *sym = section(img, size, ".symtab", &nm);
    for (uint64_t i = 1; i < n; i++)
        if (get(img + shoff + i * 64, 8, 8) & SHF_EXECINSTR)
            put(img + shoff + i * 64, 0x10, i << 16, 8);
    uint64_t so = get(sym, 0x18, 8), ss = get(sym, 0x20, 8);
    for (uint64_t j = 0; j < ss / 24; j++) {
        unsigned char *y = img + so + j * 24;
        uint64_t ndx = get(y, 6, 2);
        if (ndx && ndx < n && get(img + shoff + ndx * 64, 8, 8) & SHF_EXECINSTR)
            put(y, 8, get(y, 8, 8) + (ndx << 16), 8);
    }
    uint64_t ro = get(rela, 0x18, 8), rs = get(rela, 0x20, 8),
             lo = get(line, 0x18, 8);
    for (uint64_t j = 0; j < rs / 24; j++) {
        const unsigned char *r = img + ro + j * 24;
        uint64_t y = get(r, 8, 8) >> 32;
        put(img, lo + get(r, 0, 8),
            get(img + so + y * 24, 8, 8) + get(r, 16, 8), 8);
    }
    memset(rela + 4, 0, 4); /* SHT_NULL */
}

static uint32_t lookup_fresh(const char *path, const char *fn, uint64_t off)
{
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel lv[8];
    uint32_t n = gpuprof__an_cubin_lookup(&c, path, fn, off, lv, 8);
    gpuprof__an_cubin_free(c);
    return n;
}

/* Missing, foreign, damaged and garbage files: no levels, nothing printed,
 * no crash; a file that failed is not tried again by the same cache. */
START_TEST(bad_files_give_nothing)
{
    char dir[512], p[1024], err[1024];
    truth t;
    bool have = load_truth("", &t);
    tmpdir(dir, sizeof(dir));
    /* Whatever happens below must not print: stderr goes to a file. */
    snprintf(err, sizeof(err), "%s/stderr", dir);
    tf_muted quiet = tf_mute(err);

    ck_assert_uint_eq(lookup_fresh("/nonexistent/x.cubin", "k", 0), 0);
    ck_assert_uint_eq(lookup_fresh(dir, "k", 0), 0);
    ck_assert_uint_eq(lookup_fresh("/proc/self/status", "k", 0), 0);
    ck_assert_uint_eq(lookup_fresh("/proc/self/exe", "main", 0), 0); /* x86 */
    if (have) {
        unsigned char *img;
        size_t size = tf_slurp(t.cubin, &img);
        snprintf(p, sizeof(p), "%s/damaged.cubin", dir);
        for (size_t k = 0; k <= 64; k++) { /* every truncation: no crash */
            tf_spill(p, img, size * k / 64);
            uint32_t n = lookup_fresh(p, "gl_conv", 0x6d0);
            ck_assert_uint_le(n, 3);
            if (k == 64)
                ck_assert_uint_eq(n, 3);
        }
        for (size_t i = 64; i < size; i += 7) /* garbage here and there */
            img[i] = (unsigned char)(i * 131 + 7);
        tf_spill(p, img, size);
        ck_assert_uint_le(lookup_fresh(p, "gl_conv", 0x6d0), 3);
        memset(img, 0x5A, size); /* garbage throughout */
        tf_spill(p, img, size);
        ck_assert_uint_eq(lookup_fresh(p, "gl_conv", 0x6d0), 0);
        /* Without its line table; without the relocations of its line
         * table (every kernel's lines at address 0: nothing, rather than
         * lines of another kernel). */
        free(img);
        size = tf_slurp(t.cubin, &img);
        snprintf(p, sizeof(p), "%s/nolines.cubin", dir);
        char *nm;
        section(img, size, ".debug_line", &nm);
        nm[strlen(nm) - 1] = 'x';
        tf_spill(p, img, size); /* ".debug_line" is now ".debug_linx" */
        ck_assert_uint_eq(lookup_fresh(p, "gl_conv", 0x6d0), 0);
        free(img);
        size = tf_slurp(t.cubin, &img);
        snprintf(p, sizeof(p), "%s/norel.cubin", dir);
        memset(section(img, size, ".rela.debug_line", &nm) + 4, 0, 4);
        /* sh_type is SHT_NULL now */
        tf_spill(p, img, size);
        for (size_t i = 0; i < t.n; i++)
            ck_assert_uint_eq(lookup_fresh(p, t.r[i].fn, t.r[i].lo), 0);
        /* Not retried: the file appears after it failed. */
        snprintf(p, sizeof(p), "%s/late.cubin", dir);
        gpuprof__an_cubin *c = NULL;
        gpuprof__an_srclevel lv[4];
        ck_assert_uint_eq(
            gpuprof__an_cubin_lookup(&c, p, "gl_conv", 0x6d0, lv, 4), 0);
        free(img);
        size = tf_slurp(t.cubin, &img);
        tf_spill(p, img, size);
        free(img);
        ck_assert_uint_eq(
            gpuprof__an_cubin_lookup(&c, p, "gl_conv", 0x6d0, lv, 4), 0);
        gpuprof__an_cubin_free(c);
        ck_assert_uint_eq(lookup_fresh(p, "gl_conv", 0x6d0), 3);
        free(t.r);
    }
    tf_unmute(quiet);
}
END_TEST

/* A cubin whose line table holds its sections' own addresses (no
 * relocations): the same answers. */
START_TEST(linked_cubin)
{
    truth t;
    if (!load_truth("", &t))
        return;
    char dir[512], p[1024];
    tmpdir(dir, sizeof(dir));
    snprintf(p, sizeof(p), "%s/linked.cubin", dir);
    unsigned char *img;
    size_t size = tf_slurp(t.cubin, &img);
    link_in_place(img, size);
    tf_spill(p, img, size);
    free(img);
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel a[8], b[8];
    for (size_t i = 0; i < t.n; i++) {
        const range *x = &t.r[i];
        for (uint64_t off = x->lo; off < x->hi; off += 16) {
            uint32_t n =
                gpuprof__an_cubin_lookup(&c, t.cubin, x->fn, off, a, 8);
            ck_assert_uint_ge(n, 1);
            ck_assert_uint_eq(gpuprof__an_cubin_lookup(&c, p, x->fn, off, b, 8),
                              n);
            for (uint32_t k = 0; k < n; k++) {
                ck_assert_str_eq(a[k].function, b[k].function);
                ck_assert_str_eq(a[k].file, b[k].file);
                ck_assert_uint_eq(a[k].line, b[k].line);
            }
        }
    }
    gpuprof__an_cubin_free(c);
    free(t.r);
}
END_TEST

/* ---- the database ------------------------------------------------------ */
#define HASH "0123456789abcdef0123456789abcdef"

/* Offsets in gl_conv: two rows of one line of the kernel itself, and an
 * instruction of gl_inner inlined into gl_helper inlined there. */
typedef struct picks {
    uint64_t a, b, inl;
    uint32_t line; /* of a and b */
    marks m;
} picks;

static void pick(const truth *t, picks *k)
{
    gpuprof__an_cubin *c = NULL;
    gpuprof__an_srclevel lv[4];
    ck_assert_uint_ge(
        gpuprof__an_cubin_lookup(&c, t->cubin, "gl_conv", 0, lv, 4), 1);
    read_marks(lv[0].file, &k->m);
    gpuprof__an_cubin_free(c);
    bool pair = false, inl = false;
    for (size_t i = 0; i < t->n; i++) {
        const range *x = &t->r[i];
        if (strcmp(x->fn, "gl_conv") || x->line >= 128)
            continue;
        if (!inl && k->m.inner[x->line]) {
            k->inl = x->lo;
            inl = true;
        }
        for (size_t j = i + 1; !pair && j < t->n; j++)
            if (!strcmp(t->r[j].fn, "gl_conv") && t->r[j].line == x->line &&
                !k->m.helper[x->line] && !k->m.inner[x->line]) {
                k->a = x->lo;
                k->b = t->r[j].lo;
                k->line = x->line;
                pair = true;
            }
    }
    ck_assert(pair && inl);
}

/* main: app > <kernel launch> > kernel gl_conv (its cubin) > instructions
 *   a: 5, b: 7 (one line), inl: 11, 0x100000 (no line): 13;
 *   kernel gl_axpy [a cubin that is not there] > instruction 0x10: 17
 * worker: app > <kernel launch> > kernel gl_conv > a: 19 */
static void write_measurement(const char *dir, const truth *t, const picks *k)
{
    char path[1200];
    snprintf(path, sizeof(path), "%s/binaries", dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/binaries/" HASH ".cubin", dir);
    unsigned char *img;
    size_t size = tf_slurp(t->cubin, &img);
    tf_spill(path, img, size);
    free(img);
    tp_builder *b = tp_new("gpuhost", 42, 0);
    uint32_t bin = tp_gpu_module(b, "binaries/" HASH ".cubin"),
             gone = tp_gpu_module(
                 b, "binaries/ffffffffffffffffffffffffffffffff.cubin");
    tp_thread(b, "main", GPUPROF_IO_THREAD_MAIN);
    uint32_t op = tp_gpu_op(b, tp_region(b, 0, "app", 1, 100, 100), 1);
    uint32_t kc = tp_kernel(b, op, "gl_conv", bin);
    tp_gpu_instr(b, kc, bin, k->a);
    tp_value(b, TP_VISITS, 5);
    tp_gpu_instr(b, kc, bin, k->b);
    tp_value(b, TP_VISITS, 7);
    tp_gpu_instr(b, kc, bin, k->inl);
    tp_value(b, TP_VISITS, 11);
    tp_gpu_instr(b, kc, bin, 0x100000);
    tp_value(b, TP_VISITS, 13);
    tp_gpu_instr(b, tp_kernel(b, op, "gl_axpy", gone), gone, 0x10);
    tp_value(b, TP_VISITS, 17);
    tp_thread(b, "worker", 0);
    op = tp_gpu_op(b, tp_region(b, 0, "app", 1, 50, 50), 1);
    tp_gpu_instr(b, tp_kernel(b, op, "gl_conv", bin), bin, k->a);
    tp_value(b, TP_VISITS, 19);
    snprintf(path, sizeof(path), "%s/gpuhost-r0-p42.gpuprof", dir);
    ck_assert_int_eq(tp_write(b, path, 1), 0);
    tp_free(b);
}

static void analyze(const char *in, const char *out, int structure)
{
    gpuprof_an_analysis *a;
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, in), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, out), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_structure(a, structure),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(a), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
}

/* The child of `parent` named `name`; UINT32_MAX when none. */
static uint32_t child(const gpuprof_an_db *db, uint32_t parent,
                      gpuprof_an_node_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static uint32_t child(const gpuprof_an_db *db, uint32_t parent,
                      gpuprof_an_node_kind kind, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    uint32_t found = UINT32_MAX;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        if (gpuprof_an_db_context_parent(db, c) == parent &&
            gpuprof_an_db_context_kind(db, c) == kind &&
            !strcmp(gpuprof_an_db_context_name(db, c), name)) {
            ck_assert_msg(found == UINT32_MAX, "two contexts %s", name);
            found = c;
        }
    ck_assert_msg(found != UINT32_MAX, "no context %s beneath %u", name,
                  parent);
    return found;
}

static uint32_t children(const gpuprof_an_db *db, uint32_t parent)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        n += gpuprof_an_db_context_parent(db, c) == parent;
    return n;
}

/* Inclusive and exclusive visits at context c in profile p. */
static void visits(const gpuprof_an_db *db, uint32_t p, uint32_t c, double incl,
                   double excl)
{
    uint32_t mi, me;
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "region.visits",
                                               GPUPROF_AN_INCLUSIVE, &mi),
                     GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_db_metric_find(db, "region.visits",
                                               GPUPROF_AN_EXCLUSIVE, &me),
                     GPUPROF_OK);
    ck_assert_msg(gpuprof_an_db_value(db, p, c, mi) == incl &&
                      gpuprof_an_db_value(db, p, c, me) == excl,
                  "%s in profile %u: %g/%g, not %g/%g",
                  gpuprof_an_db_context_name(db, c), p,
                  gpuprof_an_db_value(db, p, c, mi),
                  gpuprof_an_db_value(db, p, c, me), incl, excl);
}

/* The kernel contexts of gl_conv and gl_axpy beneath app > launch. */
static void kernels(const gpuprof_an_db *db, uint32_t *conv, uint32_t *axpy)
{
    uint32_t app = child(db, 0, GPUPROF_AN_NODE_REGION, "app");
    uint32_t op = child(db, app, GPUPROF_AN_NODE_GPU_OP, "<kernel launch>");
    *conv = child(db, op, GPUPROF_AN_NODE_KERNEL, "kernel gl_conv");
    *axpy = child(db, op, GPUPROF_AN_NODE_KERNEL, "kernel gl_axpy");
    ck_assert_str_eq(gpuprof_an_db_context_binary(db, *conv),
                     "binaries/" HASH ".cubin"); /* a field of its own */
    ck_assert_str_eq(gpuprof_an_db_context_binary(db, *axpy),
                     "binaries/ffffffffffffffffffffffffffffffff.cubin");
}

START_TEST(database_lines)
{
    truth t;
    if (!load_truth("", &t))
        return;
    picks k;
    pick(&t, &k);
    char dir[512], in[700], out[700];
    tmpdir(dir, sizeof(dir));
    snprintf(in, sizeof(in), "%s/measurements", dir);
    snprintf(out, sizeof(out), "%s/db", dir);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    write_measurement(in, &t, &k);
    analyze(in, out, 1);
    gpuprof_an_db *db;
    ck_assert_int_eq(gpuprof_an_db_open(out, &db), GPUPROF_OK);
    ck_assert_uint_eq(gpuprof_an_db_profile_count(db), 2);
    uint32_t conv, axpy;
    kernels(db, &conv, &axpy);
    /* a and b: one line beneath the kernel, in both threads. */
    uint32_t line =
        child(db, conv, GPUPROF_AN_NODE_LINE, "gpu_lines.cu:%u", k.line);
    visits(db, 0, line, 12, 12);
    visits(db, 1, line, 19, 19);
    /* inl: the call of gl_helper, gl_helper, its call of gl_inner, gl_inner
     * and its line; the subtree's value on each, its own on the last. */
    uint32_t call =
        child(db, conv, GPUPROF_AN_NODE_LINE, "gpu_lines.cu:%u", k.m.conv_call);
    uint32_t helper = child(db, call, GPUPROF_AN_NODE_INLINE,
                            "[inlined] gl_helper(float const*, int, int) (" HASH ".cubin)");
    uint32_t hcall = child(db, helper, GPUPROF_AN_NODE_LINE, "gpu_lines.cu:%u",
                           k.m.helper_call);
    uint32_t inner = child(db, hcall, GPUPROF_AN_NODE_INLINE,
                           "[inlined] gl_inner(float) (" HASH ".cubin)");
    uint32_t body = UINT32_MAX;
    for (uint32_t l = 1; l < 128; l++)
        if (k.m.inner[l])
            body = child(db, inner, GPUPROF_AN_NODE_LINE, "gpu_lines.cu:%u", l);
    ck_assert_uint_eq(children(db, inner), 1);
    visits(db, 0, call, 11, 0);
    visits(db, 0, helper, 11, 0);
    visits(db, 0, hcall, 11, 0);
    visits(db, 0, inner, 11, 0);
    visits(db, 0, body, 11, 11);
    ck_assert_uint_eq(children(db, body), 0);
    /* No line: the instruction stays; so does one whose cubin is gone. */
    uint32_t far =
        child(db, conv, GPUPROF_AN_NODE_GPU_INSTR, HASH ".cubin+0x100000");
    visits(db, 0, far, 13, 13);
    ck_assert_uint_eq(children(db, conv), 3);
    visits(db, 0, conv, 36, 0);
    visits(db, 1, conv, 19, 0);
    uint32_t gone = child(db, axpy, GPUPROF_AN_NODE_GPU_INSTR,
                          "ffffffffffffffffffffffffffffffff.cubin+0x10");
    visits(db, 0, gone, 17, 17);
    gpuprof_an_db_close(db);

    /* Without structure: instructions by address. */
    analyze(in, out, 0);
    ck_assert_int_eq(gpuprof_an_db_open(out, &db), GPUPROF_OK);
    kernels(db, &conv, &axpy);
    ck_assert_uint_eq(children(db, conv), 4);
    visits(db, 0,
           child(db, conv, GPUPROF_AN_NODE_GPU_INSTR, HASH ".cubin+0x%" PRIx64,
                 k.a),
           5, 5);
    visits(db, 1,
           child(db, conv, GPUPROF_AN_NODE_GPU_INSTR, HASH ".cubin+0x%" PRIx64,
                 k.a),
           19, 19);
    for (uint32_t c = 0; c < gpuprof_an_db_context_count(db); c++)
        ck_assert_int_lt(gpuprof_an_db_context_kind(db, c),
                         GPUPROF_AN_NODE_FUNCTION);
    gpuprof_an_db_close(db);
    free(t.r);
}
END_TEST

/* The command, as a user runs it: `gpuprof analyze` then `gpuprof report`
 * shows the kernel's lines. */
START_TEST(command_shows_lines)
{
    truth t;
    if (!load_truth("", &t))
        return;
    picks k;
    pick(&t, &k);
    char dir[512], in[700], out[700], g[4200], cmd[16384];
    beside(g, sizeof(g), "../bin/gpuprof");
    ck_assert_msg(access(g, X_OK) == 0, "%s: not built", g);
    tmpdir(dir, sizeof(dir));
    snprintf(in, sizeof(in), "%s/measurements", dir);
    snprintf(out, sizeof(out), "%s/db", dir);
    ck_assert_int_eq(mkdir(in, 0755), 0);
    write_measurement(in, &t, &k);
    snprintf(cmd, sizeof(cmd),
             "'%s' analyze -o '%s' '%s' >/dev/null && "
             "'%s' report --threshold 0 --metric region.visits '%s'",
             g, out, in, g, out);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    char buf[1024], want[3][128];
    snprintf(want[0], sizeof(want[0]), "  gpu_lines.cu:%u", k.line);
    snprintf(want[1], sizeof(want[1]), "  gpu_lines.cu:%u", k.m.conv_call);
    snprintf(want[2], sizeof(want[2]), "[inlined] gl_inner(float) (%s.cubin)",
             HASH);
    bool seen[3] = {false};
    while (fgets(buf, sizeof(buf), f)) {
        for (int i = 0; i < 3; i++)
            seen[i] = seen[i] || strstr(buf, want[i]);
    }
    ck_assert_int_eq(pclose(f), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(seen[i], "the report shows no \"%s\"", want[i]);
    free(t.r);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"exec_lines_as_readelf", exec_lines_as_readelf, 30},
        {"rdc_lines_as_readelf", rdc_lines_as_readelf, 30},
        {"exec_inlining_as_the_source", exec_inlining_as_the_source, 30},
        {"rdc_inlining_as_the_source", rdc_inlining_as_the_source, 30},
        {"outermost_levels", outermost_levels, 30},
        {"out_of_line_function", out_of_line_function, 30},
        {"bad_files_give_nothing", bad_files_give_nothing, 60},
        {"linked_cubin", linked_cubin, 30},
        {"database_lines", database_lines, 60},
        {"command_shows_lines", command_shows_lines, 60},
    };
    return RUN_SUITE("an_gpudwarf", cases);
}
