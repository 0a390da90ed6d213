/*
 * an_gpudwarf.c - source lines of GPU instructions from a cubin's DWARF
 * line table (libelf, and libdw's dwarf_next_lines: a cubin built with
 * `nvcc -lineinfo` has .debug_line but no .debug_info).
 *
 * A PC sample names its instruction by (function, offset from the
 * function's start). In a CUDA cubin (ET_EXEC since CUDA 12, ET_REL with
 * -rdc) every kernel has a section .text.<name> at address 0, and the line
 * table holds one sequence per section whose DW_LNE_set_address is
 * relocated against the function's symbol (.rela.debug_line): read as is,
 * every sequence starts at address 0 and libdw's sort by address mixes
 * them. So the file is read into memory and those relocations are applied
 * there first, with each section given a base of its own: k << 32 for the
 * k-th section met in the order the relocations appear in the line table,
 * so that libdw's sort by address keeps the sequences in program order.
 * That matters for inlining: NVIDIA's extension (DW_LNE_NVIDIA_inlined_call,
 * read by libdw 0.188 here) names a row's call site by its number within
 * the row's sequence, counted from 1 in program order (CUDA 13), while
 * libdw's dwarf_linecontext takes the number as an index among all rows of
 * the unit (right for a unit's first sequence only); the number is read
 * back from its answer and applied to the row's own sequence, and a call
 * site that does not come before the row in its sequence is not believed.
 * A cubin without such relocations is taken at its own addresses when its
 * code sections do not overlap (several at 0: no lines, rather than lines
 * of another function).
 *
 * Not thread-safe: one thread at a time per cache (callers serialize).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/an_internal.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif
#define R_CUDA_64 2u           /* S + A, 8 bytes */
#define MAX_CUBIN (1ull << 30) /* larger files are not read */
#define MAX_CHAIN 64           /* inlining deeper than this: damaged */

typedef struct cfunc {
    const char *name; /* in the ELF string table */
    uint64_t lo;      /* line-table address of its section's start */
    uint64_t addr;    /* ... and of its own first byte */
    uint64_t size;    /* 0: unknown */
} cfunc;

typedef struct crow {
    uint64_t addr;
    Dwarf_Lines *lines; /* its unit's rows */
    Dwarf_Line *line;
    uint32_t idx;   /* its index in lines (libdw's order) */
    uint32_t seq;   /* the index of its sequence's first row; */
    uint32_t order; /* over all units: the sort's tie-break */
    bool end;       /* end of a sequence: no line from here */
    bool inlining;  /* its unit's call sites can be believed */
} crow;

struct gpuprof__an_cubin {
    char *path;
    unsigned char *image; /* the file, relocated */
    Elf *elf;             /* NULL: unusable (never retried) */
    Dwarf *dw;
    cfunc *fn; /* sorted by name */
    size_t nfn;
    crow *row; /* sorted by address */
    size_t nrow;
    struct gpuprof__an_cubin *next;
};

/* ---- opening ------------------------------------------------------------ */
static unsigned char *slurp(const char *path, size_t *size)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    unsigned char *b = NULL;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (uint64_t)sb.st_size <= MAX_CUBIN && (b = malloc((size_t)sb.st_size))) {
        size_t n = 0;
        while (n < (size_t)sb.st_size) {
            ssize_t g = read(fd, b + n, (size_t)sb.st_size - n);
            if (g <= 0)
                break;
            n += (size_t)g;
        }
        if (n != (size_t)sb.st_size) {
            free(b);
            b = NULL;
        }
        *size = n;
    }
    close(fd);
    return b;
}

typedef struct reloc {
    uint64_t off;   /* in .debug_line */
    uint32_t shndx; /* the symbol's section */
    uint64_t value; /* symbol value within its section + addend */
} reloc;

static int by_off(const void *x, const void *y)
{
    const reloc *a = x, *b = y;
    return (a->off > b->off) - (a->off < b->off);
}

/* What the ELF says of a cubin: its sections' bases in the line table,
 * the line table's place in the image, the relocations. */
typedef struct layout {
    GElf_Ehdr eh;
    size_t nsec;
    uint64_t *base;
    bool *based; /* per section: it has a base (its lines can be found) */
    size_t line_idx, sym_idx, rel_idx; /* 0: none */
    bool implicit;                     /* SHT_REL: addends in place */
    reloc *rel;
    size_t nrel;
} layout;

/* A symbol's value within its section (ET_REL: st_value already is). */
static uint64_t in_section(const layout *l, Elf *e, const GElf_Sym *s)
{
    GElf_Shdr sh;
    if (l->eh.e_type == ET_REL ||
        !gelf_getshdr(elf_getscn(e, s->st_shndx), &sh))
        return s->st_value;
    return s->st_value - sh.sh_addr;
}

static bool sym_at(Elf *e, size_t symtab, size_t i, GElf_Sym *s)
{
    Elf_Data *d = elf_getdata(elf_getscn(e, symtab), NULL);
    return d && gelf_getsym(d, (int)i, s) && s->st_shndx != SHN_UNDEF &&
           s->st_shndx < SHN_LORESERVE;
}

/* The relocations of .debug_line (SHT_RELA or SHT_REL against the symbol
 * table), sorted by where they apply; false when unusable. */
static bool read_relocs(layout *l, Elf *e)
{
    Elf_Scn *scn = elf_getscn(e, l->rel_idx);
    GElf_Shdr sh;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !gelf_getshdr(scn, &sh) || sh.sh_entsize == 0)
        return false;
    size_t n = sh.sh_size / sh.sh_entsize;
    if (!(l->rel = calloc(n ? n : 1, sizeof(*l->rel))))
        return false;
    for (size_t i = 0; i < n; i++) {
        GElf_Rela ra;
        GElf_Rel rl;
        GElf_Sym s;
        if (sh.sh_type == SHT_RELA ? !gelf_getrela(d, (int)i, &ra)
                                   : !gelf_getrel(d, (int)i, &rl))
            return false;
        l->implicit = sh.sh_type == SHT_REL;
        if (l->implicit)
            ra = (GElf_Rela){rl.r_offset, rl.r_info, 0};
        if (GELF_R_TYPE(ra.r_info) != R_CUDA_64 ||
            !sym_at(e, l->sym_idx, GELF_R_SYM(ra.r_info), &s) ||
            s.st_shndx >= l->nsec)
            continue; /* its sequence keeps address 0: never found */
        l->rel[l->nrel++] =
            (reloc){ra.r_offset, s.st_shndx,
                    in_section(l, e, &s) + (uint64_t)ra.r_addend};
    }
    qsort(l->rel, l->nrel, sizeof(*l->rel), by_off);
    return true;
}

/* The sections, the line table and its relocations. */
static bool read_layout(layout *l, Elf *e)
{
    size_t shstr;
    if (!gelf_getehdr(e, &l->eh) || l->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        l->eh.e_ident[EI_DATA] != ELFDATA2LSB || l->eh.e_machine != EM_CUDA ||
        elf_getshdrnum(e, &l->nsec) != 0 || elf_getshdrstrndx(e, &shstr) != 0 ||
        !(l->base = calloc(l->nsec ? l->nsec : 1, sizeof(*l->base))) ||
        !(l->based = calloc(l->nsec ? l->nsec : 1, sizeof(*l->based))))
        return false;
    for (size_t i = 1; i < l->nsec; i++) {
        GElf_Shdr sh;
        if (!gelf_getshdr(elf_getscn(e, i), &sh))
            return false;
        const char *name = elf_strptr(e, shstr, sh.sh_name);
        if (name && !strcmp(name, ".debug_line"))
            l->line_idx = i;
        if (sh.sh_type == SHT_SYMTAB)
            l->sym_idx = i;
    }
    for (size_t i = 1; l->line_idx && i < l->nsec; i++) {
        GElf_Shdr sh;
        if (gelf_getshdr(elf_getscn(e, i), &sh) && sh.sh_info == l->line_idx &&
            (sh.sh_type == SHT_RELA || sh.sh_type == SHT_REL))
            l->rel_idx = i;
    }
    return l->line_idx && l->sym_idx && (!l->rel_idx || read_relocs(l, e));
}

/* Applies the relocations to the image, a base per section in the order
 * the line table first names it; false when one falls outside the table. */
static bool relocate(layout *l, Elf *e, unsigned char *image, size_t size)
{
    GElf_Shdr sh;
    if (!gelf_getshdr(elf_getscn(e, l->line_idx), &sh) ||
        sh.sh_type == SHT_NOBITS || sh.sh_offset > size ||
        sh.sh_size > size - sh.sh_offset)
        return false;
    uint64_t next = 1;
    for (size_t i = 0; i < l->nrel; i++) {
        reloc *r = &l->rel[i];
        if (r->off > sh.sh_size || sh.sh_size - r->off < 8)
            return false;
        if (!l->based[r->shndx]) {
            l->based[r->shndx] = true;
            l->base[r->shndx] = next++ << 32;
        }
        unsigned char *at = image + sh.sh_offset + r->off;
        uint64_t v = l->base[r->shndx] + r->value;
        for (int b = 0; l->implicit && b < 8; b++) /* little-endian, checked */
            v += (uint64_t)at[b] << (8 * b);
        for (int b = 0; b < 8; b++)
            at[b] = (unsigned char)(v >> (8 * b));
    }
    return true;
}

static int by_lo(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* Without relocations the line table holds the sections' own addresses:
 * usable when no two code sections overlap (else their sequences would). */
static bool own_addresses(layout *l, Elf *e)
{
    uint64_t(*r)[2] = calloc(l->nsec ? l->nsec : 1, sizeof(*r));
    size_t n = 0;
    bool ok = r != NULL;
    for (size_t i = 1; ok && i < l->nsec; i++) {
        GElf_Shdr sh;
        if (!gelf_getshdr(elf_getscn(e, i), &sh))
            ok = false;
        else if (sh.sh_flags & SHF_EXECINSTR && sh.sh_size) {
            l->based[i] = true;
            l->base[i] = sh.sh_addr;
            r[n][0] = sh.sh_addr;
            r[n++][1] = sh.sh_addr + sh.sh_size;
        }
    }
    if (ok)
        qsort(r, n, sizeof(*r), by_lo);
    for (size_t i = 1; ok && i < n; i++)
        ok = r[i][0] >= r[i - 1][1];
    free(r);
    return ok;
}

static int by_name(const void *x, const void *y)
{
    return strcmp(((const cfunc *)x)->name, ((const cfunc *)y)->name);
}

/* The functions of the symbol table whose section has a base. */
static bool read_functions(gpuprof__an_cubin *c, const layout *l)
{
    Elf_Scn *scn = elf_getscn(c->elf, l->sym_idx);
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize)
        return false;
    size_t n = sh.sh_size / sh.sh_entsize;
    if (!(c->fn = calloc(n ? n : 1, sizeof(*c->fn))))
        return false;
    for (size_t i = 1; i < n; i++) {
        GElf_Sym s;
        const char *name;
        if (!sym_at(c->elf, l->sym_idx, i, &s) ||
            GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx >= l->nsec ||
            !l->based[s.st_shndx] ||
            !(name = elf_strptr(c->elf, sh.sh_link, s.st_name)) || !*name)
            continue;
        uint64_t lo = l->base[s.st_shndx];
        c->fn[c->nfn++] =
            (cfunc){name, lo, lo + in_section(l, c->elf, &s), s.st_size};
    }
    qsort(c->fn, c->nfn, sizeof(*c->fn), by_name);
    return true;
}

static int by_addr(const void *x, const void *y)
{
    const crow *a = x, *b = y;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->end != b->end) /* a sequence's end precedes a start there */
        return a->end ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Every row of every line program, by address. A unit with rows that were
 * not relocated (a sequence that names no symbol) may be out of program
 * order after libdw's sort: its call sites are not used. */
static bool read_rows(gpuprof__an_cubin *c, bool relocated)
{
    Dwarf_Off off = 0, next;
    Dwarf_CU *cu = NULL;
    Dwarf_Lines *lines;
    size_t nlines, cap = 0;
    uint32_t order = 0;
    while (dwarf_next_lines(c->dw, off, &next, &cu, NULL, NULL, &lines,
                            &nlines) == 0 &&
           next > off && nlines < UINT32_MAX) {
        off = next;
        size_t first = c->nrow;
        bool inlining = true;
        uint32_t seq = 0;
        for (uint32_t i = 0; i < nlines; i++) {
            Dwarf_Line *ln = dwarf_onesrcline(lines, i);
            Dwarf_Addr a;
            bool end = false;
            if (!ln || dwarf_lineaddr(ln, &a) != 0 ||
                dwarf_lineendsequence(ln, &end) != 0)
                return false;
            if (relocated && a >> 32 == 0)
                inlining = false;
            else {
                if (c->nrow == cap) {
                    cap = cap ? 2 * cap : 256;
                    crow *g = realloc(c->row, cap * sizeof(*g));
                    if (!g)
                        return false;
                    c->row = g;
                }
                c->row[c->nrow++] =
                    (crow){a, lines, ln, i, seq, order++, end, true};
            }
            if (end)
                seq = i + 1;
        }
        for (size_t i = first; i < c->nrow; i++)
            c->row[i].inlining = inlining;
    }
    qsort(c->row, c->nrow, sizeof(*c->row), by_addr);
    return c->nrow > 0;
}


/* What an open cubin holds (not its path and link). */
static void release(gpuprof__an_cubin *c)
{
    if (c->dw)
        dwarf_end(c->dw);
    if (c->elf)
        elf_end(c->elf);
    free(c->image);
    free(c->fn);
    free(c->row);
}

/* Opens c->path; leaves c->elf NULL when the cubin has no usable lines. */
static void open_cubin(gpuprof__an_cubin *c)
{
    size_t size = 0;
    layout l = {0};
    if (!(c->image = slurp(c->path, &size)))
        return;
    elf_version(EV_CURRENT);
    Elf *e = elf_memory((char *)c->image, size);
    bool ok = e && elf_kind(e) == ELF_K_ELF && read_layout(&l, e);
    ok = ok &&
         (l.rel_idx ? relocate(&l, e, c->image, size) : own_addresses(&l, e));
    /* The image changed beneath the handle that read it: read it anew
     * (libelf hands out the line table's bytes only when asked). */
    if (e)
        elf_end(e);
    e = ok ? elf_memory((char *)c->image, size) : NULL;
    c->elf = e;
    ok = e && read_functions(c, &l) &&
         (c->dw = dwarf_begin_elf(e, DWARF_C_READ, NULL)) &&
         read_rows(c, l.rel_idx != 0);
    free(l.base);
    free(l.based);
    free(l.rel);
    if (ok)
        return;
    release(c);
    *c = (gpuprof__an_cubin){.path = c->path, .next = c->next};
}

/* The cache entry of `path`, opened on first use and moved to the front;
 * NULL only when out of memory. */
static gpuprof__an_cubin *cubin(gpuprof__an_cubin **cache, const char *path)
{
    gpuprof__an_cubin **p = cache;
    while (*p && strcmp((*p)->path, path))
        p = &(*p)->next;
    gpuprof__an_cubin *c = *p;
    if (c) {
        *p = c->next;
    } else {
        if (!(c = calloc(1, sizeof(*c))))
            return NULL;
        if (!(c->path = strdup(path))) {
            free(c);
            return NULL;
        }
        open_cubin(c);
    }
    c->next = *cache;
    *cache = c;
    return c;
}

/* ---- lookups ------------------------------------------------------------ */
/* The function `name`: its symbol, else the one symbol "$kernel$name" (a
 * device function kept out of line sits in its caller's section under such
 * a name); NULL when none or several. *plain is the name to show. */
static const cfunc *function(const gpuprof__an_cubin *c, const char *name,
                             const char **plain)
{
    cfunc key = {.name = name};
    const cfunc *f = bsearch(&key, c->fn, c->nfn, sizeof(*c->fn), by_name);
    if (f) {
        *plain = f->name;
        return f;
    }
    for (size_t i = 0; *name && i < c->nfn; i++) {
        const char *s = c->fn[i].name, *d = strrchr(s, '$');
        if (s[0] != '$' || d == s || strcmp(d + 1, name))
            continue;
        if (f)
            return NULL; /* ambiguous */
        f = &c->fn[i];
        *plain = d + 1;
    }
    return f;
}

/* libdw names file index 0 of a DWARF 4 line table "???": unknown. */
static void place(Dwarf_Line *l, gpuprof__an_srclevel *lv)
{
    int line = 0;
    const char *file = dwarf_linesrc(l, NULL, NULL);
    lv->file = file && strcmp(file, "???") ? file : NULL;
    lv->line = dwarf_lineno(l, &line) == 0 && line > 0 ? (uint32_t)line : 0;
}

/* The call site of row *idx of r's unit, which replaces it: 1; 0 when the
 * row is not inlined; -1 when its call site cannot be believed. The
 * number NVIDIA wrote is the index dwarf_linecontext chose, plus 1. */
static int caller(const crow *r, uint32_t *idx, Dwarf_Line **l)
{
    Dwarf_Line *ctx = dwarf_linecontext(r->lines, *l);
    if (!ctx)
        return 0;
    const char *b0 = (const char *)dwarf_onesrcline(r->lines, 0),
               *b1 = (const char *)dwarf_onesrcline(r->lines, 1);
    ptrdiff_t stride = b0 && b1 ? b1 - b0 : 0, d = (const char *)ctx - b0;
    if (!r->inlining || stride <= 0 || d < 0 || d % stride)
        return -1;
    uint64_t n = (uint64_t)(d / stride) + 1;
    if (n > *idx - r->seq) /* not before the row in its sequence */
        return -1;
    *idx = r->seq + (uint32_t)n - 1;
    *l = dwarf_onesrcline(r->lines, *idx);
    return *l ? 1 : -1;
}

uint32_t gpuprof__an_cubin_lookup(gpuprof__an_cubin **cache, const char *path,
                                  const char *fn, uint64_t offset,
                                  gpuprof__an_srclevel *out, uint32_t max)
{
    if (!cache || !path || !fn || !out || max == 0)
        return 0;
    gpuprof__an_cubin *c = cubin(cache, path);
    const char *plain;
    const cfunc *f = c && c->elf ? function(c, fn, &plain) : NULL;
    if (!f || (f->size && offset >= f->size) || offset >= 1ull << 31)
        return 0;
    uint64_t a = f->addr + offset;
    size_t lo = 0, hi = c->nrow; /* the last row at or before a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->row[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    const crow *r = lo ? &c->row[lo - 1] : NULL;
    if (!r || r->end || r->addr < f->lo)
        return 0;
    /* The row, then its call sites: innermost first. Each comes before
     * the last in its sequence, so the chain ends. */
    Dwarf_Line *chain[MAX_CHAIN];
    uint32_t k = 0, idx = r->idx;
    int more = 1;
    for (Dwarf_Line *l = r->line; more > 0; more = caller(r, &idx, &l)) {
        if (k == MAX_CHAIN)
            return 0;
        chain[k++] = l;
    }
    if (more < 0)
        k = 1; /* the line, without inlining we cannot believe */
    uint32_t n = k < max ? k : max;
    for (uint32_t i = 0; i < n; i++) { /* outermost first: chain[k - 1] */
        Dwarf_Line *l = chain[k - 1 - i];
        out[i].function = i ? dwarf_linefunctionname(c->dw, l) : plain;
        place(l, &out[i]);
    }
    return n;
}

void gpuprof__an_cubin_free(gpuprof__an_cubin *c)
{
    while (c) {
        gpuprof__an_cubin *next = c->next;
        release(c);
        free(c->path);
        free(c);
        c = next;
    }
}
