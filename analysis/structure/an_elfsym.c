/*
 * an_elfsym.c - function names for CPU frames: (module path, offset from its
 * load address) -> "function+0xNN", from the module's ELF symbol table
 * (.symtab, else .dynsym). A small self-contained ELF64 reader: every offset
 * and size is checked against the file, so a missing, stripped, truncated or
 * foreign file only means no name (the caller shows module+offset).
 *
 * Offsets compare directly with st_value: for shared objects and PIE
 * executables both are relative to the load address, and a non-PIE
 * executable loads at 0 (dl_iterate_phdr's dlpi_addr), so offset = address.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/an_internal.h"

typedef struct sym {
    uint64_t lo, hi;
    const char *name; /* into the table's string copy */
} sym;

struct gpuprof__an_symtab {
    char *path;
    sym *s;
    size_t n;
    char *strs; /* a copy of the string table */
    struct gpuprof__an_symtab *next;
};

static int by_lo(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Fills t from an ELF image; leaves it empty on anything unexpected. */
static void parse(gpuprof__an_symtab *t, const uint8_t *m, size_t size)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG) ||
        m[EI_CLASS] != ELFCLASS64 || m[EI_DATA] != ELFDATA2LSB)
        return;
    Elf64_Ehdr eh;
    memcpy(&eh, m, sizeof(eh));
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
        (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
        return;
    const Elf64_Shdr *sh = NULL;
    for (int want = SHT_SYMTAB; want && !sh;
         want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
        for (uint16_t i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr h;
            memcpy(&h, m + eh.e_shoff + (size_t)i * sizeof(h), sizeof(h));
            if (h.sh_type == (uint32_t)want && h.sh_entsize == sizeof(Elf64_Sym)) {
                sh = (const Elf64_Shdr *)(m + eh.e_shoff + (size_t)i * sizeof(h));
                break;
            }
        }
    if (!sh)
        return;
    Elf64_Shdr syms, strs;
    memcpy(&syms, sh, sizeof(syms));
    if (syms.sh_link >= eh.e_shnum || syms.sh_offset > size ||
        syms.sh_size > size - syms.sh_offset)
        return;
    memcpy(&strs, m + eh.e_shoff + (size_t)syms.sh_link * sizeof(strs),
           sizeof(strs));
    if (strs.sh_type != SHT_STRTAB || strs.sh_offset > size ||
        strs.sh_size > size - strs.sh_offset || strs.sh_size == 0)
        return;
    size_t nsym = syms.sh_size / sizeof(Elf64_Sym);
    t->strs = malloc(strs.sh_size + 1);
    t->s = malloc((nsym ? nsym : 1) * sizeof(*t->s));
    if (!t->strs || !t->s)
        return;
    memcpy(t->strs, m + strs.sh_offset, strs.sh_size);
    t->strs[strs.sh_size] = '\0'; /* every name ends inside the copy */
    for (size_t i = 0; i < nsym; i++) {
        Elf64_Sym s;
        memcpy(&s, m + syms.sh_offset + i * sizeof(s), sizeof(s));
        unsigned type = ELF64_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !s.st_value ||
            !s.st_size || s.st_name >= strs.sh_size ||
            s.st_value + s.st_size < s.st_value)
            continue;
        t->s[t->n++] = (sym){s.st_value, s.st_value + s.st_size,
                             t->strs + s.st_name};
    }
    qsort(t->s, t->n, sizeof(*t->s), by_lo);
}

static gpuprof__an_symtab *load(const char *path)
{
    gpuprof__an_symtab *t = calloc(1, sizeof(*t));
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait */
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
        sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            parse(t, m, (size_t)sb.st_size);
            munmap(m, (size_t)sb.st_size);
        }
    }
    if (fd >= 0)
        close(fd);
    return t;
}

const char *gpuprof__an_symbolize(gpuprof__an_symtab **cache, const char *path,
                                  uint64_t offset, uint64_t *delta)
{
    gpuprof__an_symtab *t = *cache;
    while (t && strcmp(t->path, path))
        t = t->next;
    if (!t) {
        if (!(t = load(path)))
            return NULL;
        t->next = *cache;
        *cache = t;
    }
    /* A return address follows its call: look up the byte before it. */
    uint64_t at = offset ? offset - 1 : 0;
    size_t lo = 0, hi = t->n;
    while (lo < hi) { /* the last symbol starting at or before `at` */
        size_t mid = (lo + hi) / 2;
        if (t->s[mid].lo <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) { /* nested symbols: the innermost first */
        if (at < t->s[i].hi) {
            *delta = offset - t->s[i].lo;
            return t->s[i].name;
        }
        if (lo - i > 8)
            break;
    }
    return NULL;
}

void gpuprof__an_symtab_free(gpuprof__an_symtab *t)
{
    while (t) {
        gpuprof__an_symtab *next = t->next;
        free(t->path);
        free(t->s);
        free(t->strs);
        free(t);
        t = next;
    }
}
