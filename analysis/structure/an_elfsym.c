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
 *
 * A module shipped without .symtab (Debian strips libraries to .dynsym,
 * where the C library's static functions such as start_thread have no
 * name) takes the .symtab of its separate debug file when there is one
 * (libc6-dbg and the -dbgsym packages): by build ID under
 * /usr/lib/debug/.build-id, else by .gnu_debuglink beside the module, in
 * its .debug/ or under /usr/lib/debug. Its addresses are the module's. So
 * a report names the frames a database's views name from DWARF.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/an_internal.h"

typedef struct sym {
    uint64_t lo, hi;
    const char *name; /* into the table's string copy */
    int rank;         /* of names for the same code: lower is preferred */
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
    if (x->lo != y->lo)
        return (x->lo > y->lo) - (x->lo < y->lo);
    if (x->hi != y->hi)
        return (x->hi > y->hi) - (x->hi < y->hi);
    if (x->rank != y->rank)
        return x->rank - y->rank;
    /* Among equals, the C library's own name (__clone3, not its alias
     * clone3), then the shorter (__libc_start_main_impl, not
     * __libc_start_main_alias_2). */
    bool ux = !strncmp(x->name, "__", 2), uy = !strncmp(y->name, "__", 2);
    if (ux != uy)
        return ux ? -1 : 1;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    return lx != ly ? (lx > ly) - (lx < ly) : strcmp(x->name, y->name);
}

/* Of several names for the same code, the one a person knows (and DWARF
 * gives): a global before a weak before a local one, but a versioned
 * alias ("__libc_start_main@@GLIBC_2.34" for __libc_start_main_impl)
 * after them, and glibc's internal aliases (__GI___clone3 for __clone3)
 * last. */
static int name_rank(const char *name, unsigned bind)
{
    int r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
    return r + (strchr(name, '@') ? 3 : 0) + (strncmp(name, "__GI_", 5) ? 0 : 6);
}

/* Where a module's separate debug file may be: by build ID, then by
 * debug link; "" when the module names none. */
typedef struct debug_ref {
    char build_id[2 * 64 + 1]; /* hex */
    char link[256];            /* .gnu_debuglink's file name */
} debug_ref;

/* Section i's header, checked to lie in the image; NULL when it does not. */
static bool section(const uint8_t *m, size_t size, const Elf64_Ehdr *eh,
                    uint16_t i, Elf64_Shdr *h)
{
    memcpy(h, m + eh->e_shoff + (size_t)i * sizeof(*h), sizeof(*h));
    return h->sh_type == SHT_NOBITS ||
           (h->sh_offset <= size && h->sh_size <= size - h->sh_offset);
}

/* Section i's name (NULL when it has none in the image). */
static const char *section_name(const uint8_t *m, size_t size,
                                const Elf64_Ehdr *eh, const Elf64_Shdr *h)
{
    Elf64_Shdr names;
    if (eh->e_shstrndx >= eh->e_shnum ||
        !section(m, size, eh, eh->e_shstrndx, &names) ||
        names.sh_type == SHT_NOBITS || h->sh_name >= names.sh_size ||
        !memchr(m + names.sh_offset + h->sh_name, '\0',
                names.sh_size - h->sh_name))
        return NULL;
    return (const char *)m + names.sh_offset + h->sh_name;
}

/* The build ID note and the debug link of an image, into r. */
static void debug_refs(const uint8_t *m, size_t size, const Elf64_Ehdr *eh,
                       debug_ref *r)
{
    for (uint16_t i = 0; i < eh->e_shnum; i++) {
        Elf64_Shdr h;
        if (!section(m, size, eh, i, &h) || h.sh_type == SHT_NOBITS)
            continue;
        const uint8_t *d = m + h.sh_offset;
        const char *name = section_name(m, size, eh, &h);
        if (h.sh_type == SHT_NOTE && h.sh_size >= 16) {
            uint32_t nn, dn, type;
            memcpy(&nn, d, 4), memcpy(&dn, d + 4, 4), memcpy(&type, d + 8, 4);
            uint64_t desc = 12 + (((uint64_t)nn + 3) & ~3ull);
            if (type == NT_GNU_BUILD_ID && nn == 4 && !memcmp(d + 12, "GNU", 4) &&
                dn && dn <= 64 && desc + dn <= h.sh_size)
                for (uint32_t k = 0; k < dn; k++)
                    snprintf(r->build_id + 2 * k, 3, "%02x", d[desc + k]);
        } else if (name && !strcmp(name, ".gnu_debuglink") &&
                   memchr(d, '\0', h.sh_size) &&
                   strlen((const char *)d) < sizeof(r->link) &&
                   !strchr((const char *)d, '/')) {
            snprintf(r->link, sizeof(r->link), "%s", (const char *)d);
        }
    }
}

/* Fills t from an ELF image's .symtab (`dynsym`: else its .dynsym); leaves
 * it empty on anything unexpected. Without .symtab, r gets where a debug
 * file may be. */
static void parse(gpuprof__an_symtab *t, const uint8_t *m, size_t size,
                  bool dynsym, debug_ref *r)
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
         want = want == SHT_SYMTAB && dynsym ? SHT_DYNSYM : 0) {
        for (uint16_t i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr h;
            memcpy(&h, m + eh.e_shoff + (size_t)i * sizeof(h), sizeof(h));
            if (h.sh_type == (uint32_t)want && h.sh_entsize == sizeof(Elf64_Sym)) {
                sh = (const Elf64_Shdr *)(m + eh.e_shoff + (size_t)i * sizeof(h));
                break;
            }
        }
        if (!sh && want == SHT_SYMTAB && r)
            debug_refs(m, size, &eh, r);
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
    free(t->strs); /* an earlier file's, without functions */
    free(t->s);
    t->n = 0;
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
                             t->strs + s.st_name,
                             name_rank(t->strs + s.st_name,
                                       ELF64_ST_BIND(s.st_info))};
    }
    qsort(t->s, t->n, sizeof(*t->s), by_lo);
    size_t k = 0; /* one name per range of code: the preferred one */
    for (size_t i = 0; i < t->n; i++)
        if (!k || t->s[i].lo != t->s[k - 1].lo || t->s[i].hi != t->s[k - 1].hi)
            t->s[k++] = t->s[i];
    t->n = k;
}

/* Parses the file at `path` into t (see parse); false when it cannot be
 * read. */
static bool parse_file(gpuprof__an_symtab *t, const char *path, bool dynsym,
                       debug_ref *r)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait */
    struct stat sb;
    bool ok = false;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
        sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            parse(t, m, (size_t)sb.st_size, dynsym, r);
            munmap(m, (size_t)sb.st_size);
            ok = true;
        }
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

/* The .symtab of the module's separate debug file, when one is found. */
static void from_debug_file(gpuprof__an_symtab *t, const char *path,
                            const debug_ref *r)
{
    char p[4400], dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    for (int i = 0; i < 4 && !t->n; i++) {
        if (i == 0 && strlen(r->build_id) > 2)
            snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug",
                     r->build_id, r->build_id + 2);
        else if (i == 1 && *r->link)
            snprintf(p, sizeof(p), "%s/%s", dir, r->link);
        else if (i == 2 && *r->link)
            snprintf(p, sizeof(p), "%s/.debug/%s", dir, r->link);
        else if (i == 3 && *r->link && dir[0] == '/')
            snprintf(p, sizeof(p), "/usr/lib/debug%s/%s", dir, r->link);
        else
            continue;
        if (strcmp(p, path))
            parse_file(t, p, false, NULL);
    }
}

static gpuprof__an_symtab *load(const char *path)
{
    gpuprof__an_symtab *t = calloc(1, sizeof(*t));
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return NULL;
    }
    debug_ref r = {"", ""};
    if (parse_file(t, path, false, &r) && !t->n) {
        from_debug_file(t, path, &r);
        if (!t->n) /* no debug file: the module's .dynsym */
            parse_file(t, path, true, NULL);
    }
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
