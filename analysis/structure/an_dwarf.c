/*
 * an_dwarf.c - program structure for CPU frames from DWARF (elfutils libdw):
 * (module path, offset from its load address) -> the out-of-line function
 * containing the address, the chain of functions inlined into it there, and
 * the source file:line at each level. Where a module or an address has no
 * usable DWARF the answer is "nothing" and callers fall back to the ELF
 * symbol names of an_elfsym.c.
 *
 * Each module is opened once, as its own offline Dwfl session, and kept open
 * until the cache is freed: the strings handed out point into libdw's data.
 * dwfl_standard_find_debuginfo looks for the DWARF in the file itself, then
 * through .gnu_debuglink beside it and by build ID under /usr/lib/debug (and
 * debuginfod when DEBUGINFOD_URLS is set). A module that cannot be used is
 * remembered as such and not retried.
 *
 * Offsets are ELF addresses (see an_elfsym.c: offset = runtime address -
 * dlpi_addr). Dwfl places an offline ET_DYN module at an address of its own
 * choosing; its bias maps ELF addresses into Dwfl's space, and is 0 for a
 * non-PIE executable, so the address looked up is always offset + bias.
 *
 * Not thread-safe: one thread at a time per cache (callers serialize).
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/an_internal.h"

struct gpuprof__an_dwarf {
    char *path;
    Dwfl *dwfl;       /* NULL: the module is unusable (never retried) */
    Dwfl_Module *mod; /* owned by dwfl */
    Dwarf_Addr bias;  /* Dwfl address = ELF address + bias */
    struct gpuprof__an_dwarf *next;
};

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* Opens m->path with its DWARF; leaves m->dwfl NULL when that fails. Only
 * regular files (a FIFO would block the open) of type ET_EXEC or ET_DYN
 * (for which load offsets mean something) are accepted. */
static void open_module(gpuprof__an_dwarf *m)
{
    struct stat sb;
    if (stat(m->path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return;
    Dwfl *d = dwfl_begin(&callbacks);
    if (!d)
        return;
    dwfl_report_begin(d);
    Dwfl_Module *mod = dwfl_report_offline(d, m->path, m->path, -1);
    Dwarf_Addr bias = 0, dbias;
    Elf *elf = NULL;
    GElf_Ehdr eh;
    if (dwfl_report_end(d, NULL, NULL) == 0 && mod &&
        (elf = dwfl_module_getelf(mod, &bias)) && gelf_getehdr(elf, &eh) &&
        (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) &&
        dwfl_module_getdwarf(mod, &dbias)) {
        m->dwfl = d;
        m->mod = mod;
        m->bias = bias;
        return;
    }
    dwfl_end(d); /* nothing kept of a module that failed but its name */
}

/* The cache entry of `path`, opened on first use and moved to the front of
 * the list (frames of one module tend to come together); NULL only when out
 * of memory. */
static gpuprof__an_dwarf *module(gpuprof__an_dwarf **cache, const char *path)
{
    gpuprof__an_dwarf **p = cache;
    while (*p && strcmp((*p)->path, path))
        p = &(*p)->next;
    gpuprof__an_dwarf *m = *p;
    if (m) {
        *p = m->next;
    } else {
        if (!(m = calloc(1, sizeof(*m))))
            return NULL;
        if (!(m->path = strdup(path))) {
            free(m);
            return NULL;
        }
        open_module(m);
    }
    m->next = *cache;
    *cache = m;
    return m;
}

/* libdw names file index 0 of a DWARF 4 line table "???": unknown. */
static const char *known(const char *file)
{
    return file && strcmp(file, "???") ? file : NULL;
}

static const char *function_name(Dwarf_Die *f)
{
    /* The linkage name where there is one (C++): unique, and the name the
     * ELF symbol table uses; then the plain name. dwarf_attr_integrate
     * follows DW_AT_abstract_origin and DW_AT_specification, which is where
     * inlined instances and out-of-line copies keep their names. */
    static const int attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name,
                                DW_AT_name};
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        Dwarf_Attribute a;
        const char *s = dwarf_formstring(dwarf_attr_integrate(f, attrs[i], &a));
        if (s && *s)
            return s;
    }
    return NULL;
}

/* The call site of an inlined instance: DW_AT_call_file (an index into its
 * CU's line-table file list) and DW_AT_call_line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, gpuprof__an_srclevel *lv)
{
    Dwarf_Attribute a;
    Dwarf_Word v;
    Dwarf_Files *files;
    size_t nfiles;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &a), &v) == 0 &&
        v <= UINT32_MAX)
        lv->line = (uint32_t)v;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &a), &v) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && v < nfiles)
        lv->file = known(dwarf_filesrc(files, v, NULL, NULL));
}

/* The line-table row of the address itself. */
static void own_line(Dwfl_Module *mod, Dwarf_Addr pc, gpuprof__an_srclevel *lv)
{
    Dwfl_Line *l = dwfl_module_getsrc(mod, pc);
    int line = 0;
    if (l)
        lv->file = known(dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL));
    lv->line = line > 0 ? (uint32_t)line : 0;
}

/* The DIEs of the functions containing pc, innermost first, ending with the
 * out-of-line function (DW_TAG_subprogram); their count, 0 when none.
 * dwarf_getscopes finds the innermost scope, but above an inlined instance
 * it continues with the scopes of the inlined function's definition, not of
 * its caller; dwarf_getscopes_die gives the chain of DIEs physically
 * containing that scope, which is the chain of callers we want. *fn is
 * malloc'd (or NULL). */
static int functions(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **fn)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, pc, &scopes);
    Dwarf_Die inner = {0};
    if (n > 0)
        inner = scopes[0];
    free(scopes);
    scopes = NULL;
    if (n <= 0 || (n = dwarf_getscopes_die(&inner, &scopes)) <= 0) {
        free(scopes);
        *fn = NULL;
        return 0;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
            scopes[k++] = scopes[i];
        if (tag == DW_TAG_subprogram)
            break; /* nothing outside the real function is a caller */
    }
    *fn = scopes;
    return k;
}

uint32_t gpuprof__an_dwarf_lookup(gpuprof__an_dwarf **cache, const char *path,
                                  uint64_t offset, gpuprof__an_srclevel *out,
                                  uint32_t max)
{
    if (!cache || !path || !out || max == 0)
        return 0;
    gpuprof__an_dwarf *m = module(cache, path);
    if (!m || !m->dwfl)
        return 0;
    /* A return address follows its call: look up the byte before it. */
    Dwarf_Addr pc = (offset ? offset - 1 : 0) + m->bias, cubias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, pc, &cubias);
    Dwarf_Die *fn = NULL;
    int k = cu ? functions(cu, pc - cubias, &fn) : 0;
    uint32_t n = (uint32_t)k < max ? (uint32_t)k : max;
    for (uint32_t i = 0; i < n; i++) { /* outermost first: fn[k - 1] */
        out[i] = (gpuprof__an_srclevel){function_name(&fn[k - 1 - i]), NULL, 0};
        if (i + 1 < (uint32_t)k) /* where level i calls level i + 1 */
            call_site(cu, &fn[k - 2 - i], &out[i]);
        else
            own_line(m->mod, pc, &out[i]);
    }
    free(fn);
    /* No function known (assembly): perhaps a line. Only inside the CU's
     * own ranges: Dwfl may pick a CU for an address between CUs (crt code
     * without DWARF) and give the last row before it. */
    if (k == 0 && cu && dwarf_haspc(cu, pc - cubias) > 0) {
        out[0] = (gpuprof__an_srclevel){NULL, NULL, 0};
        own_line(m->mod, pc, &out[0]);
        n = out[0].file || out[0].line ? 1 : 0;
    }
    return n;
}

void gpuprof__an_dwarf_free(gpuprof__an_dwarf *m)
{
    while (m) {
        gpuprof__an_dwarf *next = m->next;
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->path);
        free(m);
        m = next;
    }
}
