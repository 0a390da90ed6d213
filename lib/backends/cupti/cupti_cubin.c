/*
 * cupti_cubin.c - cubins: saved when a module loads, and the link from a
 * kernel to the cubin that defines it (cupti.h).
 *
 * A kernel record names its function but not its module, so each loaded
 * cubin's ELF symbol table is read once: every function it defines maps to
 * the cubin's module id (binary.c saved it by content hash). Kernel
 * records then find their binary by name; a small cache keyed by the
 * name's pointer (CUPTI hands the same pointer for a function every time)
 * spares most lookups the hashing.
 */
#include <elf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti.h"

/* ---- ELF64 function symbols ---------------------------------------------- */
static bool in_bounds(size_t off, size_t len, size_t size)
{
    return off <= size && len <= size - off;
}

bool gpuprof__cubin_functions(const void *data, size_t size,
                              void (*fn)(void *ctx, const char *name),
                              void *ctx)
{
    const uint8_t *p = data;
    if (!p || size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0 ||
        p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
        return false;
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof(eh));
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
        !in_bounds(eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
        return false;
    /* Two passes: validate every symbol table first, so a damaged cubin
     * calls fn for nothing. */
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh;
            memcpy(&sh, p + eh.e_shoff + (size_t)i * sizeof(sh), sizeof(sh));
            if (sh.sh_type != SHT_SYMTAB)
                continue;
            if (sh.sh_entsize != sizeof(Elf64_Sym) ||
                !in_bounds(sh.sh_offset, sh.sh_size, size) ||
                sh.sh_link >= eh.e_shnum)
                return false;
            Elf64_Shdr st;
            memcpy(&st, p + eh.e_shoff + (size_t)sh.sh_link * sizeof(st),
                   sizeof(st));
            if (!in_bounds(st.sh_offset, st.sh_size, size) || st.sh_size == 0 ||
                p[st.sh_offset + st.sh_size - 1] != '\0')
                return false;
            if (pass == 0)
                continue;
            size_t nsym = sh.sh_size / sizeof(Elf64_Sym);
            for (size_t k = 1; k < nsym; k++) {
                Elf64_Sym s;
                memcpy(&s, p + sh.sh_offset + k * sizeof(s), sizeof(s));
                if (ELF64_ST_TYPE(s.st_info) != STT_FUNC ||
                    s.st_shndx == SHN_UNDEF || s.st_name >= st.sh_size)
                    continue;
                const char *name = (const char *)p + st.sh_offset + s.st_name;
                if (*name)
                    fn(ctx, name);
            }
        }
    }
    return true;
}

/* ---- name -> binary ------------------------------------------------------ */
typedef struct fslot {
    uint64_t hash; /* 0: empty */
    char *name;
    uint32_t binary;
} fslot;

typedef struct pcache {
    const char *ptr;
    uint32_t binary;
    uint32_t gen;
} pcache;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fslot *tab;
static uint32_t tab_cap, tab_n;
static pcache cache[256];
static uint32_t gen = 1; /* a load may change answers: cache entries of an
                            older generation are stale */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h | 1;
}

static bool tab_grow(void)
{
    uint32_t cap = tab_cap ? tab_cap * 2 : 256;
    fslot *n = calloc(cap, sizeof(*n));
    if (!n)
        return false;
    for (uint32_t i = 0; i < tab_cap; i++) {
        if (!tab[i].hash)
            continue;
        uint32_t j = (uint32_t)tab[i].hash & (cap - 1);
        while (n[j].hash)
            j = (j + 1) & (cap - 1);
        n[j] = tab[i];
    }
    free(tab);
    tab = n;
    tab_cap = cap;
    return true;
}

static fslot *tab_find(const char *name, uint64_t h)
{
    if (!tab_n)
        return NULL;
    for (uint32_t i = (uint32_t)h & (tab_cap - 1);;
         i = (i + 1) & (tab_cap - 1)) {
        if (!tab[i].hash)
            return NULL;
        if (tab[i].hash == h && strcmp(tab[i].name, name) == 0)
            return &tab[i];
    }
}

typedef struct add_ctx {
    uint32_t binary;
    bool nomem;
} add_ctx;

/* Under mu. The latest module to define a name wins (a reloaded module). */
static void add_function(void *ctx, const char *name)
{
    add_ctx *c = ctx;
    uint64_t h = hash_str(name);
    fslot *s = tab_find(name, h);
    if (s) {
        s->binary = c->binary;
        return;
    }
    if ((tab_n + 1) * 2 > tab_cap && !tab_grow()) {
        c->nomem = true;
        return;
    }
    char *copy = strdup(name);
    if (!copy) {
        c->nomem = true;
        return;
    }
    uint32_t i = (uint32_t)h & (tab_cap - 1);
    while (tab[i].hash)
        i = (i + 1) & (tab_cap - 1);
    tab[i] = (fslot){h, copy, c->binary};
    tab_n++;
}

/* CRC -> binary: few modules, a short list (under mu). */
typedef struct crc_map {
    uint64_t crc;
    uint32_t binary;
} crc_map;
static crc_map *crcs;
static uint32_t ncrcs, capcrcs;

static void crc_add(const void *cubin, size_t size, uint32_t bin)
{
    if (!gpuprof__cu.GetCubinCrc)
        return;
    CUpti_GetCubinCrcParams p;
    memset(&p, 0, sizeof(p));
    p.size = CUpti_GetCubinCrcParamsSize;
    p.cubinSize = size;
    p.cubin = cubin;
    if (gpuprof__cu.GetCubinCrc(&p) != CUPTI_SUCCESS)
        return;
    for (uint32_t i = 0; i < ncrcs; i++)
        if (crcs[i].crc == p.cubinCrc) {
            crcs[i].binary = bin;
            return;
        }
    if (ncrcs == capcrcs) {
        uint32_t cap = capcrcs ? capcrcs * 2 : 16;
        crc_map *n = realloc(crcs, cap * sizeof(*n));
        if (!n)
            return;
        crcs = n;
        capcrcs = cap;
    }
    crcs[ncrcs++] = (crc_map){p.cubinCrc, bin};
}

uint32_t gpuprof__cupti_crc_binary(uint64_t crc)
{
    uint32_t bin = GPUPROF_NO_BINARY;
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < ncrcs; i++)
        if (crcs[i].crc == crc)
            bin = crcs[i].binary;
    pthread_mutex_unlock(&mu);
    return bin;
}

void gpuprof__cupti_module_loaded(const void *cubin, size_t size)
{
    if (!cubin || !size)
        return;
    uint32_t bin = gpuprof_be_gpu_binaries_wanted()
                       ? gpuprof_be_gpu_binary(cubin, size, "cubin")
                       : GPUPROF_NO_BINARY;
    if (bin == GPUPROF_NO_BINARY)
        return;
    pthread_mutex_lock(&mu);
    add_ctx c = {bin, false};
    bool elf = gpuprof__cubin_functions(cubin, size, add_function, &c);
    crc_add(cubin, size, bin);
    gen++;
    pthread_mutex_unlock(&mu);
    if (!elf)
        gpuprof_be_log(GPUPROF_LOG_DEBUG,
                       "cupti: a loaded module (%zu bytes) "
                       "is not an ELF cubin: its kernels name no binary",
                       size);
    if (c.nomem)
        gpuprof_be_log(GPUPROF_LOG_WARN, "cupti: out of memory mapping kernels "
                                         "to their cubin");
}

uint32_t gpuprof__cupti_kernel_binary(const char *name)
{
    uint32_t slot = (uint32_t)(((uintptr_t)name >> 3) * 0x9E3779B1u) >> 24;
    pthread_mutex_lock(&mu);
    uint32_t bin = GPUPROF_NO_BINARY;
    if (cache[slot].ptr == name && cache[slot].gen == gen) {
        bin = cache[slot].binary;
    } else {
        fslot *s = tab_find(name, hash_str(name));
        if (s)
            bin = s->binary;
        cache[slot] = (pcache){name, bin, gen};
    }
    pthread_mutex_unlock(&mu);
    return bin;
}

void gpuprof__cupti_cubins_reset(void)
{
    pthread_mutex_lock(&mu);
    for (uint32_t i = 0; i < tab_cap; i++)
        free(tab[i].name);
    free(tab);
    tab = NULL;
    tab_cap = tab_n = 0;
    free(crcs);
    crcs = NULL;
    ncrcs = capcrcs = 0;
    gen++;
    pthread_mutex_unlock(&mu);
}

/* ---- a statically linked CUDA runtime ------------------------------------
 * nvcc links cudart statically by default: its functions sit in the
 * program itself, between the user's call and libcuda, and would end every
 * call path. Its code is one long run of functions named cuda*, __cuda*
 * and libcudart_static_* in the program's symbol table: the longest such
 * run (in bytes, at least 16 functions) is the range to hide. */
typedef struct fsym {
    uint64_t lo, hi;
    bool cudart;
} fsym;

static int fsym_cmp(const void *a, const void *b)
{
    const fsym *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

static bool cudart_name(const char *n)
{
    return !strncmp(n, "libcudart_static_", 17) || !strncmp(n, "__cuda", 6) ||
           (!strncmp(n, "cuda", 4) && n[4] >= 'A' && n[4] <= 'Z');
}

bool gpuprof__cupti_cudart_range(const void *data, size_t size, uint64_t *lo,
                                 uint64_t *hi)
{
    const uint8_t *p = data;
    if (!p || size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0 ||
        p[EI_CLASS] != ELFCLASS64)
        return false;
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof(eh));
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_bounds(eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
        return false;
    fsym *v = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    for (unsigned i = 0; ok && i < eh.e_shnum; i++) {
        Elf64_Shdr sh, st;
        memcpy(&sh, p + eh.e_shoff + (size_t)i * sizeof(sh), sizeof(sh));
        if (sh.sh_type != SHT_SYMTAB)
            continue;
        if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum ||
            !in_bounds(sh.sh_offset, sh.sh_size, size))
            break;
        memcpy(&st, p + eh.e_shoff + (size_t)sh.sh_link * sizeof(st),
               sizeof(st));
        if (!in_bounds(st.sh_offset, st.sh_size, size))
            break;
        for (size_t k = 1; ok && k < sh.sh_size / sizeof(Elf64_Sym); k++) {
            Elf64_Sym s;
            memcpy(&s, p + sh.sh_offset + k * sizeof(s), sizeof(s));
            if (ELF64_ST_TYPE(s.st_info) != STT_FUNC ||
                s.st_shndx == SHN_UNDEF || !s.st_value ||
                s.st_name >= st.sh_size)
                continue;
            const char *name = (const char *)p + st.sh_offset + s.st_name;
            if (!memchr(name, '\0', st.sh_size - s.st_name))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                fsym *nv = realloc(v, cap * sizeof(*v));
                if (!nv) {
                    ok = false;
                    break;
                }
                v = nv;
            }
            v[n++] =
                (fsym){s.st_value, s.st_value + (s.st_size ? s.st_size : 1),
                       cudart_name(name)};
        }
    }
    uint64_t best_lo = 0, best_hi = 0;
    if (ok && n) {
        qsort(v, n, sizeof(*v), fsym_cmp);
        for (size_t i = 0, j; i<n; i = j> i ? j : i + 1) {
            if (!v[i].cudart) {
                j = i + 1;
                continue;
            }
            uint64_t end = v[i].hi;
            for (j = i; j < n && (v[j].cudart || v[j].lo == v[j - (j > i)].lo);
                 j++)
                if (v[j].cudart && v[j].hi > end)
                    end = v[j].hi;
            if (j - i >= 16 && end - v[i].lo > best_hi - best_lo) {
                best_lo = v[i].lo;
                best_hi = end;
            }
        }
    }
    free(v);
    if (best_hi <= best_lo)
        return false;
    *lo = best_lo;
    *hi = best_hi;
    return true;
}
