/*
 * an_internal.h - what the files of libgpuprof-analysis share: the profile
 * object (a validated lib/io profile plus display names), the per-thread
 * last error, and number formatting for the text views.
 */
#ifndef GPUPROF_AN_INTERNAL_H
#define GPUPROF_AN_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>

#include "gpuprof_analysis.h"
#include "io/io.h"

struct gpuprof_an_profile {
    gpuprof__io_profile *io;
    char *path;
    char *names; /* display names of non-region nodes, NUL-separated */
    uint32_t
        *name_off; /* per absolute node: offset into names, or UINT32_MAX */
};

/* A merged report (an_report.c builds it, an_report_view.c reads it). */
typedef struct mnode {
    char *name;
    uint32_t parent, depth, flags;
    uint32_t threads, last_thread;    /* contributing threads; the last one */
    uint32_t processes, last_profile; /* likewise for profiles (processes) */
    uint64_t visits, incl, excl;
    uint64_t incl_max;    /* the largest inclusive time of one thread */
    uint64_t thread_incl; /* last_thread's inclusive time so far */
} mnode;

typedef struct proc_id { /* who wrote a profile: counted at the end */
    char *host;
    uint32_t pid;
} proc_id;

typedef struct counter {
    char *name;
    uint64_t value;
} counter;

struct gpuprof_an_report {
    mnode *n;
    uint32_t count, cap;
    uint32_t *slots, mask; /* (parent, name) -> index + 1; while merging */
    uint32_t profiles, threads, processes, hosts;
    proc_id *procs; /* one per profile while merging; freed by ordering */
    uint32_t procs_cap;
    uint64_t first_rt, last_rt;
    counter *counters;
    uint32_t ncounters;
};

/* Records the calling thread's last error; returns st. */
gpuprof_status gpuprof__an_fail(gpuprof_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The status of a lib/io return code, the error recorded naming the file. */
gpuprof_status gpuprof__an_io_status(int rc, const char *path,
                                     const char *err);
/* What a directory holds, so that an error can name a wrong kind of input:
 * an analysis database (meta.db), a measurement directory (a profile or a
 * trace file), or neither. */
enum {
    GPUPROF__AN_DIR_OTHER = 0,
    GPUPROF__AN_DIR_DATABASE = 1,
    GPUPROF__AN_DIR_MEASUREMENTS = 2
};
int gpuprof__an_dir_kind(const char *dir);
/* Opens and validates a profile file (the message names the file). */
gpuprof_status gpuprof__an_load(const char *path, gpuprof__io_profile **out);
/* "12.345 ms": a duration with three significant decimals. */
void gpuprof__an_fmt_ns(char *buf, size_t size, uint64_t ns);
/* Looks a metric up by name; UINT32_MAX when absent. */
uint32_t gpuprof__an_metric(const gpuprof__io_profile *p, const char *name);
/* The value of metric m at absolute node i, 0 when absent. */
uint64_t gpuprof__an_value(const gpuprof__io_profile *p, uint32_t i,
                           uint32_t m);

/* Function names of CPU frames from ELF symbol tables (an_elfsym.c): a
 * cache of per-module tables, NULL when empty. The name of the function
 * containing `offset` (a return address: offset - 1 is looked up) in the
 * module at `path`, and *delta = offset - its start; NULL when unknown. */
typedef struct gpuprof__an_symtab gpuprof__an_symtab;
const char *gpuprof__an_symbolize(gpuprof__an_symtab **cache, const char *path,
                                  uint64_t offset, uint64_t *delta);
void gpuprof__an_symtab_free(gpuprof__an_symtab *cache);
/* The display name of a GPU operation kind ("kernel launch", "copy h2d"). */
const char *gpuprof__an_op_name(uint32_t kind);
/* The readable form of an Itanium-mangled C++ name (malloc'd: free it), or
 * NULL when `name` is not mangled or cannot be demangled (an_demangle.c;
 * GPUPROF_DEMANGLE=0 turns it off). Any thread. */
char *gpuprof__an_demangle(const char *name);
/* FNV-1a of a name, seeded with its parent: merged trees' child lookup. */
uint64_t gpuprof__an_hkey(uint32_t parent, const char *s);
/* The profile files (*.gpuprof) of `dir`, sorted (an_report.c). */
char **gpuprof__an_list_dir(const char *dir, uint32_t *n, gpuprof_status *st);

/* Writers of the exports (an_common.c). A JSON string: quotes,
 * backslashes and control characters escaped, bytes that are not valid
 * UTF-8 replaced by U+FFFD. A CSV field (RFC 4180): quoted when it holds a
 * comma, quote or line break, quotes doubled, invalid UTF-8 replaced
 * likewise. A number as the shortest text that reads back as the same
 * double (integers without a point), `nonfinite` for NaN and infinities
 * ("null" in JSON, "" in CSV); gpuprof__an_fmt_num formats into buf (at
 * least 32 bytes). */
void gpuprof__an_json_str(FILE *f, const char *s);
void gpuprof__an_csv_str(FILE *f, const char *s);
void gpuprof__an_num(FILE *f, double v, const char *nonfinite);
void gpuprof__an_fmt_num(char *buf, size_t size, double v);
/* `name` in at most `width` bytes (at least 16) for a text column: as it
 * is when it fits, else its head, "..." and its tail, which keeps the
 * " (module)" or " (file:line)" that ends a frame's name; never cut inside
 * a UTF-8 character. buf has room for width + 1 bytes. */
void gpuprof__an_fit(const char *name, size_t width, char *buf, size_t size);
/* A context's name for the exports: its display name as a view with
 * `flags` shows it (gpuprof__an_db_label), or "<context N>" (written into
 * buf) when that is empty (a region named ""), so every node has a name
 * Hatchet and folded stacks can show. */
const char *gpuprof__an_context_label(const gpuprof_an_db *db, uint32_t c,
                                      uint32_t flags, char *buf, size_t size);

/* Derived metrics (an_derive.c): a formula over a database's metrics,
 * compiled (names resolved to metric ids per variant; errors recorded with
 * the offending offset) and evaluated with a fetch of each operand. */
typedef struct gpuprof__an_formula gpuprof__an_formula;
typedef double (*gpuprof__an_fetch_fn)(void *arg, uint32_t metric);
gpuprof_status gpuprof__an_formula_compile(const gpuprof_an_db *db,
                                           const char *name, const char *text,
                                           gpuprof__an_formula **out);
void gpuprof__an_formula_free(gpuprof__an_formula *f);
const char *gpuprof__an_formula_name(const gpuprof__an_formula *f);
gpuprof_an_unit gpuprof__an_formula_unit(const gpuprof__an_formula *f);
/* 1 when only + and - combine the operands (a share of the whole means
 * something), else 0. */
int gpuprof__an_formula_additive(const gpuprof__an_formula *f);
/* 1 when metric m's values add up over contexts and profiles (a measured
 * sum, or a derived metric of + and - over such ones). */
int gpuprof__an_db_additive(const gpuprof_an_db *db, uint32_t m);
/* The formula of a derived metric, NULL for a measured one. */
const gpuprof__an_formula *gpuprof__an_db_formula(const gpuprof_an_db *db,
                                                  uint32_t m);
/* Metric ids below this are measured, the others derived (an_db.c). */
uint32_t gpuprof__an_db_measured(const gpuprof_an_db *db);
/* A context's rows, from cct.db alone (an_db.c): after _start(c), each
 * _next gives the next profile with any measured value at c, in ascending
 * order, and every measured metric's value there in
 * values[0 .. gpuprof__an_db_measured) (0 where it has none); false at the
 * end. The context's values are read once, a row costs O(metrics). One
 * cursor per thread; NULL from _new when out of memory. */
typedef struct gpuprof__an_rows gpuprof__an_rows;
gpuprof__an_rows *gpuprof__an_rows_new(const gpuprof_an_db *db);
void gpuprof__an_rows_start(gpuprof__an_rows *r, uint32_t c);
bool gpuprof__an_rows_next(gpuprof__an_rows *r, uint32_t *profile,
                           double *values);
void gpuprof__an_rows_free(gpuprof__an_rows *r);
/* How a measured metric combines (GPUPROF_IO_SUM, _MIN, _MAX). */
int gpuprof__an_db_combine(const gpuprof_an_db *db, uint32_t m);
/* How views and exports show metric m (its backend's flags, doc/ANALYSIS.md
 * "Metric flags"): _mean_of gives the count metric (the same variant) of
 * an odd sum with one, whose values are shown as the mean value / count,
 * else UINT32_MAX; _no_incl whether its inclusive values mean nothing
 * (shown as "-" or left out, never sorted by). */
uint32_t gpuprof__an_db_mean_of(const gpuprof_an_db *db, uint32_t m);
bool gpuprof__an_db_no_incl(const gpuprof_an_db *db, uint32_t m);
/* Whether metric m was measured inclusive (GPUPROF_AN_METRIC_NO_EXCLUSIVE:
 * its exclusive values are shown as "-" or left out). */
bool gpuprof__an_db_no_excl(const gpuprof_an_db *db, uint32_t m);
/* Format 5: meta.db's device attribute records (DB_DEVICE_REC bytes each,
 * checked), *n of them; a string of meta.db ("" out of range). */
const uint8_t *gpuprof__an_db_devattrs(const gpuprof_an_db *db, uint32_t *n);
const char *gpuprof__an_db_str(const gpuprof_an_db *db, uint64_t off);
/* Context c's name as meta.db holds it (a kernel's symbol, mangled), NULL
 * out of range. */
const char *gpuprof__an_db_context_raw(const gpuprof_an_db *db, uint32_t c);
/* value / count, the mean of an odd sum: 0 for nothing, NaN for a value
 * without a count. */
double gpuprof__an_mean(double value, double count);
double gpuprof__an_formula_eval(const gpuprof__an_formula *f, unsigned variant,
                                gpuprof__an_fetch_fn fetch, void *arg);
/* Distinct metrics one formula may name (per variant): every user of
 * gpuprof__an_formula_operands sizes its buffers by it, and compiling a
 * formula that names more fails (GPUPROF_E_LIMIT). */
#define GPUPROF__AN_MAX_OPERANDS 64
/* The distinct operands of a variant, at most max; how many. */
uint32_t gpuprof__an_formula_operands(const gpuprof__an_formula *f,
                                      unsigned variant, uint32_t *m,
                                      uint32_t max);

/* ---- Source structure of CPU frames from DWARF (an_dwarf.c, libdw) ----
 * A cache of opened modules, NULL when empty; one thread at a time (callers
 * serialize). Each module is opened once, with its separate debug file
 * where there is one; a module that failed is remembered and not retried.
 *
 * gpuprof__an_dwarf_lookup expands the frame (`path`, `offset` from the
 * module's load address, a return address: offset - 1 is looked up) into
 * at most `max` levels in `out`, outermost first:
 *   level 0      the out-of-line function containing the address;
 *   level i > 0  the i-th function inlined there;
 *   file:line    at each level but the last, where that level calls (inlines)
 *                the next; at the last level, the address's own line. When
 *                the chain is longer than `max`, the outermost `max` levels
 *                are given (the last one's line is then a call site too).
 * One level with function NULL when the address has a line but no function
 * (assembly). Names are linkage names where the DWARF has them (C++:
 * mangled), else plain names. Strings are owned by the cache and valid until
 * gpuprof__an_dwarf_free. Returns the number of levels; 0 when the module or
 * the address has no usable DWARF (the caller falls back to ELF symbols,
 * gpuprof__an_symbolize) and for missing, stripped, damaged or foreign
 * files: never prints, never fails otherwise. */
typedef struct gpuprof__an_dwarf gpuprof__an_dwarf;
typedef struct gpuprof__an_srclevel {
    const char *function; /* NULL: unknown */
    const char *file;     /* source file path; NULL: unknown */
    uint32_t line;        /* 0: unknown */
} gpuprof__an_srclevel;
uint32_t gpuprof__an_dwarf_lookup(gpuprof__an_dwarf **cache, const char *path,
                                  uint64_t offset, gpuprof__an_srclevel *out,
                                  uint32_t max);
void gpuprof__an_dwarf_free(gpuprof__an_dwarf *cache);

/* ---- Source lines of GPU instructions (an_gpudwarf.c, libelf + libdw) ----
 * A cache of opened cubins (CUDA ELF), NULL when empty; one thread at a
 * time. Each cubin is read once (a failure is remembered, not retried).
 *
 * gpuprof__an_cubin_lookup gives the source of the instruction at `offset`
 * bytes from the start of function `fn` (its symbol name, as CUPTI's PC
 * sampling names it: mangled) in the cubin at `path`, from the cubin's line
 * table (`nvcc -lineinfo` or -G), as at most `max` levels, outermost first,
 * like gpuprof__an_dwarf_lookup: level 0 is `fn` itself with the line
 * where it calls (inlines) level 1, or the instruction's own line; levels
 * i > 0 are the functions inlined there (NVIDIA's inlining records in the
 * line table), the last with the instruction's line. Strings are owned by
 * the cache. Returns the number of levels; 0 when the file is missing, not
 * a 64-bit cubin, damaged, has no line table, no function `fn`, or no line
 * for the offset; never prints. */
typedef struct gpuprof__an_cubin gpuprof__an_cubin;
uint32_t gpuprof__an_cubin_lookup(gpuprof__an_cubin **cache, const char *path,
                                  const char *fn, uint64_t offset,
                                  gpuprof__an_srclevel *out, uint32_t max);
void gpuprof__an_cubin_free(gpuprof__an_cubin *cache);

/* trace.db's stream i: its records as stored (an_db.h), *n of them; NULL
 * when there is no such stream (an_db.c; analysis/cpath reads dependency
 * notes this way). */
const uint8_t *gpuprof__an_db_trace_raw(const gpuprof_an_db *db, uint32_t i,
                                        uint64_t *n);
/* The runtime's frames (an_runtime.h) as a view or export with `flags`
 * shows them: _up is c's nearest ancestor shown (its parent with
 * GPUPROF_AN_RUNTIME_FRAMES), _hidden whether c is left out, _label its
 * name ("<thread root>" for a thread's start; may be empty: see
 * gpuprof__an_context_label). */
uint32_t gpuprof__an_db_up(const gpuprof_an_db *db, uint32_t c,
                           uint32_t flags);
bool gpuprof__an_db_hidden(const gpuprof_an_db *db, uint32_t c,
                           uint32_t flags);
const char *gpuprof__an_db_label(const gpuprof_an_db *db, uint32_t c,
                                 uint32_t flags);
/* The directory the database was opened from. */
const char *gpuprof__an_db_dir(const gpuprof_an_db *db);

/* Python frames (an_pyframe.c): whether a CPU frame's module path is a
 * Python function's ("py:<qualname>:<file>", lib/core/pyframes.c), and its
 * display name "qualname (file:line)" (offset = line) into buf; false when
 * the module is not one. */
bool gpuprof__an_is_pyframe(const char *module);
bool gpuprof__an_pyframe(const char *module, uint64_t line, char *buf,
                         size_t size);

#endif /* GPUPROF_AN_INTERNAL_H */
