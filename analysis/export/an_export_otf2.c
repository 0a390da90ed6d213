/*
 * an_export_otf2.c - trace.db as an OTF2 archive (`gpuprof export --otf2
 * -o DIR DB`), which Vampir and otf2-print read: DIR/traces.otf2 (the
 * anchor file), DIR/traces.def (global definitions), DIR/traces/ (one
 * event file and one local definition file per location).
 *
 * What becomes what:
 *   host                 a system tree node (class "node") beneath one
 *                        "machine" root
 *   process              a location group of type PROCESS ("rank R (pid
 *                        P)", "pid P")
 *   GPU of a process     a location group of type ACCELERATOR ("GPU D of
 *                        pid P"), created by the process's group
 *   CPU thread           a CPU_THREAD location: its regions and its GPU
 *                        API calls (trace.db's REGIONS and OPS streams of
 *                        its profile, merged) as enter/leave pairs
 *   GPU stream           an ACCELERATOR_STREAM location: kernels, copies
 *                        and other device work as enter/leave pairs
 * Region names come from the database's contexts: user regions by name;
 * an API call by its operation and kernel ("kernel launch: stencil");
 * device work by its kernel (demangled, as the database names it, without
 * the binary, which goes into the description) or operation ("copy d2h").
 * GPU regions are of paradigm CUDA or OpenCL when every kernel binary is a
 * cubin or every one an OpenCL binary, else UNKNOWN.
 * Timestamps are nanoseconds of CLOCK_MONOTONIC, of the host that booted
 * first when there are several: the others' are moved onto it by the
 * difference of their CLOCK_REALTIME offsets (each host's offset is its
 * first process's: the processes of a host share its monotonic clock), so
 * a whole MPI run shares one clock, as in the Chrome export. The clock
 * properties give the date of the first event. Like Score-P's, the
 * timestamps stay far below 2^53, so readers that compute in doubles keep
 * every nanosecond (realtime nanoseconds, 1.8e18, would not).
 *
 * Per location, events must be in time order and enter/leave must nest:
 * records with the same start are entered longest first, and a record that
 * overlaps the one enclosing it without ending inside it (concurrent work
 * on one stream, a region left late) is cut at that one's end; how many
 * were cut goes to `notes`. Every event carries the "critical_path"
 * attribute, and those on the path "critical_path_ns", when the critical
 * path is known (an_otf2.h, an_otf2_cpath.c); when it is not, `notes` says
 * why.
 *
 * Memory: trace.db is the database's (read once, an_db.c); records are
 * taken from it in batches and written one location at a time. libotf2
 * keeps a location's encoded events (about 10 bytes each) until the
 * location is closed: flushing earlier would insert BUFFER_FLUSH events
 * into the trace.
 *
 * The archive is written into a temporary directory beside DIR, read back
 * (an_otf2_verify.c) and renamed to DIR at the end (an_otf2_dir.c); a
 * failed export leaves nothing behind.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_otf2.h"

static gpuprof_status no_traces(void)
{
    return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                            "OTF2 export: the database has no traces "
                            "(trace.db: analyze measurements made with "
                            "GPUPROF_TRACE=1)");
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_export_otf2(const gpuprof_an_db *db,
                                                        const char *dir,
                                                        FILE *notes,
                                                        uint32_t flags)
{
    if (!db || !dir || !*dir || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_db_export_otf2: bad argument");
    if (!gpuprof_an_db_trace_stream_count(db))
        return no_traces();
    gpuprof__an_cpath_marks m;
    memset(&m, 0, sizeof(m));
    char why[512] = "";
    bool have = gpuprof__an_otf2_cpath(db, &m, why, sizeof(why));
    gpuprof_status st =
        gpuprof__an_export_otf2(db, dir, notes, have ? &m : NULL);
    if (have && m.release)
        m.release(m.arg);
    if (st == GPUPROF_OK && !have && notes)
        fprintf(notes, "gpuprof: %s: no critical_path attributes: %s\n", dir,
                why);
    return st;
}

#ifndef GPUPROF_HAVE_OTF2
gpuprof_status gpuprof__an_export_otf2(const gpuprof_an_db *db, const char *dir,
                                       FILE *notes,
                                       const gpuprof__an_cpath_marks *marks)
{
    (void)db;
    (void)dir;
    (void)notes;
    (void)marks;
    return gpuprof__an_fail(GPUPROF_E_UNAVAILABLE,
                            "OTF2 export: this libgpuprof-analysis was built "
                            "without OTF2 support (install the OTF2 3.0 "
                            "headers -- Debian: libotf2-trace-dev -- and "
                            "rebuild)");
}
#else
#include "an_otf2_write.h"

#define MULTI (UINT32_MAX - 1) /* an operation with several kernels */

/* ---- strings and regions ------------------------------------------------ */
/* Interns s; *id is its index in order of first appearance ("" is 0).
 * New strings get ascending offsets, so an old one is found by binary
 * search over the offsets. */
gpuprof_status gpuprof__an_ox_intern(gpuprof__an_ox_interner *in, const char *s,
                                     uint32_t *id)
{
    if (!in->t) {
        in->t = gpuprof__io_strtab_new();
        in->off = malloc(256 * sizeof(*in->off));
        if (!in->t || !in->off)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        in->off[0] = 0;
        in->n = 1;
        in->cap = 256;
    }
    uint64_t before;
    gpuprof__io_strtab_data(in->t, &before);
    uint32_t off = gpuprof__io_strtab_add(in->t, s);
    if (off == UINT32_MAX)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (off < before) { /* seen before */
        uint32_t lo = 0, hi = in->n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (in->off[mid] < off)
                lo = mid + 1;
            else
                hi = mid;
        }
        *id = lo;
        return GPUPROF_OK;
    }
    if (in->n == in->cap) {
        uint32_t *o = realloc(in->off, 2 * (size_t)in->cap * sizeof(*o));
        if (!o)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        in->off = o;
        in->cap *= 2;
    }
    in->off[in->n] = off;
    *id = in->n++;
    return GPUPROF_OK;
}

const char *gpuprof__an_ox_string(const gpuprof__an_ox_interner *in,
                                  uint32_t id)
{
    uint64_t size;
    return gpuprof__io_strtab_data(in->t, &size) + in->off[id];
}

void gpuprof__an_ox_interner_free(gpuprof__an_ox_interner *in)
{
    gpuprof__io_strtab_free(in->t);
    free(in->off);
    memset(in, 0, sizeof(*in));
}

/* "kernel NAME [binary]" (the database's name of a kernel) as NAME. */
static void kernel_short(const char *name, char *buf, size_t size)
{
    if (!strncmp(name, "kernel ", 7))
        name += 7;
    const char *open = strrchr(name, '[');
    size_t n = strlen(name);
    if (open && open > name && open[-1] == ' ' && n && name[n - 1] == ']')
        n = (size_t)(open - name - 1);
    snprintf(buf, size, "%.*s", (int)n, name);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The kernels beneath GPU operation c, sorted, joined by " | " (a graph
 * launch, or a call site that launched several kernels: the record does
 * not say which). */
static void kernel_list(const gpuprof__an_ox *x, uint32_t c, char *buf,
                        size_t size)
{
    enum { MAX_NAMES = 32 };
    char names[MAX_NAMES][256];
    const char *p[MAX_NAMES];
    uint32_t n = 0;
    for (uint32_t k = x->kfirst[c]; k < x->kfirst[c + 1] && n < MAX_NAMES;
         k++, n++) {
        kernel_short(gpuprof_an_db_context_name(x->db, x->klist[k]), names[n],
                     sizeof(names[n]));
        p[n] = names[n];
    }
    qsort(p, n, sizeof(*p), by_str);
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t k = 0; k < n && len < size; k++)
        if (!k || strcmp(p[k], p[k - 1]))
            len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                    len ? " | " : "", p[k]);
}

typedef struct rdesc {
    char name[1024], desc[1024];
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} rdesc;

/* How a GPU operation context is named on a thread (the API call) and on
 * its stream (the device work). */
static void op_region(const gpuprof__an_ox *x, uint32_t c, bool gpu, rdesc *r)
{
    const char *name = gpuprof_an_db_context_name(x->db, c);
    char op[128], k[1024] = "";
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '<' && name[n - 1] == '>')
        snprintf(op, sizeof(op), "%.*s", (int)(n - 2), name + 1);
    else
        snprintf(op, sizeof(op), "%s", name);
    uint32_t kern = x->kern[c];
    if (kern < x->nc) {
        const char *bin = gpuprof_an_db_context_binary(x->db, kern);
        kernel_short(gpuprof_an_db_context_name(x->db, kern), k, sizeof(k));
        snprintf(r->desc, sizeof(r->desc), bin ? "%s [%s]" : "%s",
                 gpuprof_an_db_context_name(x->db, kern), bin);
    } else if (kern == MULTI) {
        kernel_list(x, c, k, sizeof(k));
    }
    r->paradigm = x->gpu_paradigm;
    if (!gpu) {
        r->role = OTF2_REGION_ROLE_WRAPPER;
        snprintf(r->name, sizeof(r->name), *k ? "%s: %s" : "%s", op, k);
    } else if (*k) {
        r->role = OTF2_REGION_ROLE_FUNCTION;
        snprintf(r->name, sizeof(r->name), "%s", k);
    } else {
        r->role = !strncmp(op, "copy", 4) ? OTF2_REGION_ROLE_DATA_TRANSFER
                                          : OTF2_REGION_ROLE_CODE;
        snprintf(r->name, sizeof(r->name), "%s", op);
    }
}

/* Regions are one per (role, name), numbered as first seen (the key's id
 * less one: key 0 is ""); the first context to name one describes it. */
static gpuprof_status new_region(gpuprof__an_ox *x, const rdesc *r,
                                 uint32_t *id)
{
    char key[1100];
    snprintf(key, sizeof(key), "%u\x1f%s", (unsigned)r->role, r->name);
    uint32_t k;
    gpuprof_status st = gpuprof__an_ox_intern(&x->rkeys, key, &k);
    if (st != GPUPROF_OK)
        return st;
    *id = k - 1;
    if (*id < x->nregions)
        return GPUPROF_OK;
    if (x->nregions == x->cap_regions) {
        uint32_t cap = x->cap_regions ? x->cap_regions * 2 : 64;
        gpuprof__an_ox_region *v = realloc(x->regions, cap * sizeof(*v));
        if (!v)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        x->regions = v;
        x->cap_regions = cap;
    }
    gpuprof__an_ox_region *g = &x->regions[x->nregions++];
    g->role = r->role;
    g->paradigm = r->paradigm;
    st = gpuprof__an_ox_intern(&x->strings, r->name, &g->name);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(&x->strings, r->desc, &g->desc);
    return st;
}

/* The region of a record with context c on a thread (gpu false) or a GPU
 * stream; decided once per (context, side). */
gpuprof_status gpuprof__an_ox_region_of(gpuprof__an_ox *x, uint32_t c, bool gpu,
                                        uint32_t *region)
{
    uint32_t *slot = &x->reg[(size_t)(c < x->nc ? c : x->nc) * 2 + gpu];
    if (*slot) {
        *region = *slot - 1;
        return GPUPROF_OK;
    }
    rdesc r;
    memset(&r, 0, sizeof(r));
    r.role = OTF2_REGION_ROLE_CODE;
    r.paradigm = OTF2_PARADIGM_USER;
    if (c >= x->nc) {
        snprintf(r.name, sizeof(r.name), "<unknown context>");
        r.role = OTF2_REGION_ROLE_UNKNOWN;
        r.paradigm = OTF2_PARADIGM_UNKNOWN;
    } else if (gpuprof_an_db_context_kind(x->db, c) == GPUPROF_AN_NODE_GPU_OP) {
        op_region(x, c, gpu, &r);
    } else {
        char label[48];
        snprintf(r.name, sizeof(r.name), "%s",
                 gpuprof__an_context_label(x->db, c, 0, label, sizeof(label)));
    }
    gpuprof_status st = new_region(x, &r, region);
    if (st == GPUPROF_OK)
        *slot = *region + 1;
    return st;
}

/* kern[c]: the kernel beneath GPU operation context c (UINT32_MAX: none,
 * MULTI: several, listed in klist[kfirst[c] .. kfirst[c + 1])). */
static gpuprof_status kernels(gpuprof__an_ox *x)
{
    uint32_t nc = x->nc;
    x->kern = malloc(((size_t)nc + 1) * sizeof(*x->kern));
    x->kfirst = calloc((size_t)nc + 2, sizeof(*x->kfirst));
    x->reg = calloc(((size_t)nc + 1) * 2, sizeof(*x->reg));
    if (!x->kern || !x->kfirst || !x->reg)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t c = 0; c <= nc; c++)
        x->kern[c] = UINT32_MAX;
    uint32_t nk = 0;
    for (uint32_t c = 1; c < nc; c++) {
        uint32_t p = gpuprof_an_db_context_parent(x->db, c);
        if (gpuprof_an_db_context_kind(x->db, c) != GPUPROF_AN_NODE_KERNEL ||
            p >= nc)
            continue;
        x->kern[p] = x->kern[p] == UINT32_MAX ? c : MULTI;
        x->kfirst[p + 1]++;
        nk++;
    }
    for (uint32_t c = 0; c <= nc; c++)
        x->kfirst[c + 1] += x->kfirst[c];
    x->klist = malloc((nk ? nk : 1) * sizeof(*x->klist));
    uint32_t *fill = malloc(((size_t)nc + 1) * sizeof(*fill));
    if (!x->klist || !fill) {
        free(fill);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    memcpy(fill, x->kfirst, ((size_t)nc + 1) * sizeof(*fill));
    for (uint32_t c = 1; c < nc; c++) {
        uint32_t p = gpuprof_an_db_context_parent(x->db, c);
        if (gpuprof_an_db_context_kind(x->db, c) == GPUPROF_AN_NODE_KERNEL &&
            p < nc)
            x->klist[fill[p]++] = c;
    }
    free(fill);
    return GPUPROF_OK;
}

/* The programming model of the GPU work, from the binaries its kernels
 * came from (gpuprof_an_db_context_binary: "binaries/HASH.EXT"):
 * CUDA for cubins, OpenCL for OpenCL program binaries, UNKNOWN when there
 * are none, both, or others (OTF2 3.0 has no Level Zero paradigm). */
static OTF2_Paradigm gpu_paradigm(const gpuprof__an_ox *x)
{
    bool cuda = false, cl = false, other = false;
    for (uint32_t c = 1; c < x->nc; c++) {
        if (gpuprof_an_db_context_kind(x->db, c) != GPUPROF_AN_NODE_KERNEL)
            continue;
        const char *n = gpuprof_an_db_context_binary(x->db, c);
        size_t len = n ? strlen(n) : 0;
        bool cu = len > 6 && !strcmp(n + len - 6, ".cubin");
        bool ocl = len > 6 && !strcmp(n + len - 6, ".clbin");
        cuda |= cu;
        cl |= ocl;
        other |= !cu && !ocl;
    }
    return cuda && !cl && !other   ? OTF2_PARADIGM_CUDA
           : cl && !cuda && !other ? OTF2_PARADIGM_OPENCL
                                   : OTF2_PARADIGM_UNKNOWN;
}

static void ox_free(gpuprof__an_ox *x)
{
    gpuprof__an_ox_interner_free(&x->strings);
    gpuprof__an_ox_interner_free(&x->rkeys);
    free(x->regions);
    free(x->kern);
    free(x->kfirst);
    free(x->klist);
    free(x->reg);
    for (uint32_t l = 0; x->locs && l < x->nlocs; l++)
        free(x->locs[l].smp);
    free(x->locs);
    free(x->cc);
    free(x->cctx);
    free(x->groups);
    free(x->hosts);
    free(x->host_of_sid);
    free(x->proc_group);
    free(x->prof_loc);
}

gpuprof_status gpuprof__an_export_otf2(const gpuprof_an_db *db, const char *dir,
                                       FILE *notes,
                                       const gpuprof__an_cpath_marks *marks)
{
    if (!db || !dir || !*dir)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_db_export_otf2: bad argument");
    if (!gpuprof_an_db_trace_stream_count(db))
        return no_traces();
    const gpuprof__an_otf2_lib *L = gpuprof__an_otf2_lib_get();
    if (!L)
        return GPUPROF_E_UNAVAILABLE;
    gpuprof__an_ox x;
    memset(&x, 0, sizeof(x));
    x.L = L;
    x.db = db;
    x.marks = marks;
    x.nc = gpuprof_an_db_context_count(db);
    gpuprof__an_otf2_dir d;
    gpuprof_status st = gpuprof__an_otf2_dir_begin(&d, dir);
    if (st == GPUPROF_OK) {
        st = kernels(&x);
        x.gpu_paradigm = gpu_paradigm(&x);
        if (st == GPUPROF_OK)
            st = gpuprof__an_ox_plan(&x);
        if (st == GPUPROF_OK)
            st = gpuprof__an_ox_write(&x, d.tmp);
        st = gpuprof__an_otf2_dir_end(&d, st);
    }
    if (st == GPUPROF_OK && x.clipped && notes)
        fprintf(notes,
                "gpuprof: %s: %" PRIu64 " record%s overlapped the one "
                "enclosing it on its thread or stream without ending inside "
                "it; cut at that one's end (OTF2 regions nest)\n",
                dir, x.clipped, x.clipped == 1 ? "" : "s");
    ox_free(&x);
    return st;
}
#endif                         /* GPUPROF_HAVE_OTF2 */
