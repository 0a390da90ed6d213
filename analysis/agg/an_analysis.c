/*
 * an_analysis.c - the aggregation's public API (gpuprof_an_analysis_*,
 * include/gpuprof_analysis.h) and one run of it (an_agg.h): the inputs
 * and the database's identity, the output checked before any work, the
 * passes in order with the ranks agreeing after each step that may fail,
 * and the end -- tables, headers, the files renamed into place, meta.db
 * last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/an_pool.h"
#include "../db/an_db.h"
#include "../db/an_metadb.h"
#include "an_agg.h"
#include "io/trace.h"

/* ---- the public API ---------------------------------------------------- */
GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_new(gpuprof_an_analysis **out)
{
    if (!out)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    (*out)->threads = 1;
    (*out)->structure = 1;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_add_input(gpuprof_an_analysis *a, const char *dir)
{
    if (!a || !dir)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    char **n = realloc(a->inputs, (a->ninputs + 1) * sizeof(*n));
    if (!n)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    a->inputs = n;
    if (!(n[a->ninputs] = strdup(dir)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    a->ninputs++;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_threads(gpuprof_an_analysis *a, unsigned threads)
{
    if (!a || threads == 0 || threads > 1024)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "threads must be 1..1024");
    a->threads = threads;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_structure(gpuprof_an_analysis *a, int on)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->structure = on != 0;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_memory(gpuprof_an_analysis *a, uint64_t bytes)
{
    if (!a || (bytes && bytes < GPUPROF_AN_MIN_MEMORY))
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "a memory budget is 0 (none) or at least "
                                "%u MiB",
                                GPUPROF_AN_MIN_MEMORY >> 20);
    a->memory = bytes;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_output(gpuprof_an_analysis *a, const char *db_dir)
{
    if (!a || !db_dir || !*db_dir)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "no output directory");
    char *d = strdup(db_dir);
    if (!d)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    free(a->output);
    a->output = d;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_set_progress(
    gpuprof_an_analysis *a, gpuprof_an_progress_fn fn, void *user)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->progress = fn;
    a->user = user;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_analysis_set_strict(gpuprof_an_analysis *a, int on)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->strict = on != 0;
    return GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_set_warnings(
    gpuprof_an_analysis *a, gpuprof_an_warning_fn fn, void *user)
{
    if (!a)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "NULL argument");
    a->warn = fn;
    a->warn_user = user;
    return GPUPROF_OK;
}

GPUPROF_AN_API void gpuprof_an_analysis_free(gpuprof_an_analysis *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->ninputs; i++)
        free(a->inputs[i]);
    free(a->inputs);
    free(a->output);
    free(a);
}

/* ---- the database's identity ----------------------------------------------
 * A 64-bit hash of what decides the database's bytes: the format, the
 * options that change them (program structure), and per input file its
 * path, its size and its first bytes -- a profile's 64-byte header holds
 * the checksum of its section table, which holds every section's, so it
 * stands for the whole content; a trace's header holds its process's pid
 * and start, its size how much was appended. Thread counts, budgets and
 * ranks change no byte and are not in it. Rank 0 computes it when it
 * lists the inputs. */
static uint64_t ident_mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) /* FNV-1a */
        h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static uint64_t ident_u64(uint64_t h, uint64_t v)
{
    uint8_t b[8];
    db_put64(b, v);
    return ident_mix(h, b, 8);
}

/* The first n bytes of a regular file into b (zeros when unreadable: the
 * run then fails on it, naming it). */
static void ident_head(const char *path, uint8_t *b, size_t n)
{
    memset(b, 0, n);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
        !gpuprof__an_pread_all(fd, b, n, 0))
        memset(b, 0, n); /* shorter: the header is all of it */
    close(fd);
}

static void ident_compute(run *r)
{
    uint64_t h = ident_mix(0xCBF29CE484222325ull, "gpuprof analysis", 16);
    h = ident_u64(h, (uint64_t)r->major << 16 | DB_MINOR);
    h = ident_u64(h,
                  (uint64_t)(r->a->structure != 0) | (uint64_t)r->t.gcct << 1);
    h = ident_u64(h, r->ns);
    for (uint32_t i = 0; i < r->ns; i++) {
        const src *s = &r->s[i];
        uint8_t head[64];
        char tp[4200];
        h = ident_u64(h, strlen(s->path));
        h = ident_mix(h, s->path, strlen(s->path));
        h = ident_u64(h, s->fsize);
        ident_head(s->path, head, sizeof(head));
        h = ident_mix(h, head, sizeof(head));
        h = ident_u64(h, (uint64_t)s->has_trace << 63 | s->tsize);
        if (s->has_trace && gpuprof__an_trace_path(s->path, tp, sizeof(tp))) {
            ident_head(tp, head, GPUPROF_IO_TRACE_HEADER);
            h = ident_mix(h, head, GPUPROF_IO_TRACE_HEADER);
        }
    }
    h ^= h >> 33; /* a finalizer: every input bit reaches every output bit */
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    r->ident = h ^ h >> 33;
}

gpuprof_status gpuprof__an_collect_inputs(run *r)
{
    for (uint32_t d = 0; d < r->a->ninputs; d++) {
        uint32_t n = 0;
        gpuprof_status st;
        char **files = gpuprof__an_list_dir(r->a->inputs[d], &n, &st);
        if (!files)
            return st;
        src *s = realloc(r->s, (r->ns + n + 1) * sizeof(*s));
        if (!s) {
            for (uint32_t i = 0; i < n; i++)
                free(files[i]);
            free(files);
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        }
        r->s = s;
        for (uint32_t i = 0; i < n; i++) {
            struct stat sb;
            char tp[4200];
            r->s[r->ns] = (src){
                .path = files[i],
                .fsize = stat(files[i], &sb) == 0 ? (uint64_t)sb.st_size : 0};
            if (gpuprof__an_trace_path(files[i], tp, sizeof(tp)) &&
                stat(tp, &sb) == 0) {
                r->s[r->ns].has_trace = 1; /* empty or odd: said later */
                r->s[r->ns].tsize =
                    S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
            }
            r->ns++;
        }
        free(files);
    }
    if (!r->ns)
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "no profiles (*.gpuprof) in the inputs");
    ident_compute(r);
    return GPUPROF_OK;
}

static void free_row(void *ctx, uint32_t p)
{
    row *rows = ctx;
    free(rows[p].e);
    rows[p].e = NULL;
}

static void run_free(run *r)
{
    for (uint32_t i = 0; i < r->ns; i++) {
        free(r->s[i].path);
        free(r->s[i].err);
        free(r->s[i].metric);
        gpuprof__an_src_release(&r->s[i]);
    }
    free(r->s);
    if (r->rows) /* on the pool: a heap trimmed as its blocks go is the
                    kernel's work (8 ms on one thread for the bench's) */
        gpuprof__an_parallel_for(r->a->threads, r->t.np, free_row, r->rows);
    free(r->rows);
    free(r->cstart);
    free(r->poff);
    gpuprof__an_tree_free(&r->t);
    gpuprof__an_structure_free(&r->sx);
    for (int i = 0; i < 3; i++)
        gpuprof__an_dbfile_free(&r->f[i]);
    gpuprof__an_dbfile_free(&r->tr.f);
    free(r->tr.tab);
}

/* ---- a run ----------------------------------------------------------- */
static const char *const phase_names[GPUPROF__AN_PHASES] = {
    "inputs",    "load",           "merge",           "values",
    "settle_values", "transpose", "settle_contexts", "write"};

const char *gpuprof__an_phase_name(unsigned phase)
{
    return phase < GPUPROF__AN_PHASES ? phase_names[phase] : NULL;
}

double gpuprof__an_phase_s(const gpuprof_an_analysis *a, unsigned phase)
{
    return a && phase < GPUPROF__AN_PHASES ? a->phase_s[phase] : 0;
}

double gpuprof__an_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double gpuprof__an_phase_end(run *r, unsigned phase, double t0)
{
    double now = gpuprof__an_now_s();
    r->a->phase_s[phase] += now - t0;
    return now;
}

void gpuprof__an_progress(const run *r, const char *phase, uint64_t done,
                          uint64_t total)
{
    if (r->a->progress)
        r->a->progress(phase, done, total, r->a->user);
}

/* Bytes the process needs beside the run's own (code, libraries, stacks):
 * what a budget must leave aside. */
#define BUDGET_BASE (8u << 20)

/* Without a trace.db of this run, an earlier run's goes aside like the
 * other files (removed once meta.db is written, put back if that fails). */
static gpuprof_status trace_db_aside(run *r)
{
    dbfile *f = &r->tr.f; /* unused: the earlier one goes aside */
    size_t n = strlen(r->a->output) + 64;
    if (!(f->path = malloc(n)) || !(f->aside = malloc(n)))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(f->path, n, "%s/trace.db", r->a->output);
    snprintf(f->aside, n, "%s/.trace.db.tmp-%ld.old", r->a->output, r->pid0);
    if (rename(f->path, f->aside) == 0) {
        r->aside[r->naside++] = f;
        return GPUPROF_OK;
    }
    int e = errno;
    free(f->aside);
    f->aside = NULL;
    if (e != ENOENT)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot remove: %s", f->path,
                                strerror(e));
    return GPUPROF_OK;
}

/* Into place; an earlier database's file aside, to be dropped at the
 * end. */
static gpuprof_status place(run *r, dbfile *f)
{
    gpuprof_status st = gpuprof__an_dbfile_rename(f);
    if (st == GPUPROF_OK && f->aside)
        r->aside[r->naside++] = f;
    return st;
}

static void drop_aside(void *ctx, uint32_t i)
{
    gpuprof__an_dbfile_drop_aside(((dbfile **)ctx)[i]);
}

/* The tables and headers of profile.db, cct.db, stats.db (and trace.db). */
static gpuprof_status finish_files(run *r, bool traced)
{
    const an_tree *t = &r->t;
    gpuprof_status st = gpuprof__an_dbfile_finish(
        &r->f[F_STATS], DB_STATS_MAGIC, t->nc, 2 * t->nm, r->ident, r->major);
    if (st == GPUPROF_OK)
        st = gpuprof__an_dbfile_finish(&r->f[F_CMS], DB_CMS_MAGIC, t->nc, t->np,
                                       r->ident, r->major);
    if (st == GPUPROF_OK)
        st = gpuprof__an_dbfile_finish(&r->f[F_PMS], DB_PMS_MAGIC, t->np, t->nc,
                                       r->ident, r->major);
    if (st == GPUPROF_OK && traced)
        st = gpuprof__an_tracedb_finish(&r->tr, t->np, r->ident, r->major);
    return st;
}

/* The format the database is written in: the oldest that holds what it
 * has (format 3 readers read every database without GPU calling contexts
 * or metric flags, format 4 readers every one without devices), and its
 * identity for that format. */
static void db_format(run *r)
{
    bool four = r->t.gcct;
    for (uint32_t m = 0; m < r->t.nm && !four; m++)
        four = r->t.m[m].flags != 0;
    unsigned major = r->t.nd ? 5 : four ? 4 : DB_MAJOR_OLDEST;
    if (major == r->major)
        return;
    r->major = major;
    ident_compute(r);
}

/* Rank 0, at the end: the tables and headers, the files renamed into
 * place, meta.db last. */
static gpuprof_status finish(run *r, bool traced)
{
    gpuprof__an_progress(r, "write", 0, 4);
    db_format(r);
    gpuprof_status st = finish_files(r, traced);
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++) /* stats, cct, profile */
        st = place(r, &r->f[2 - i]);
    if (st == GPUPROF_OK)
        st = traced ? place(r, &r->tr.f) : trace_db_aside(r);
    gpuprof__an_meta_traces mt = {r->tr.damaged, r->tr.dropped, r->tr.ignored};
    if (st == GPUPROF_OK) /* last: a reader checks the others agree */
        st = gpuprof__an_metadb_write(r->a->output, &r->t, &mt, r->ident,
                                      r->major);
    if (st == GPUPROF_OK) {
        gpuprof__an_parallel_for(r->a->threads, r->naside, drop_aside,
                                 r->aside);
        for (int i = 0; i < 3; i++)
            r->f[i].placed = false; /* the database's now */
        r->tr.f.placed = false;
        gpuprof__an_progress(r, "write", 4, 4);
    }
    return st;
}

/* Makes the output directory and the files (every rank joins rank 0's). */
static gpuprof_status open_files(run *r, bool traced)
{
    static const char *const names[] = {"profile.db", "cct.db", "stats.db"};
    const char *out = r->a->output;
    uint32_t planes[3] = {r->t.np, r->t.nc, r->t.nc};
    bool peer = r->rank != 0;
    gpuprof_status st = GPUPROF_OK;
    if (r->rank == 0 && mkdir(out, 0755) == 0)
        r->made_dir = true;
    else if (r->rank == 0 && errno != EEXIST)
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", out,
                              strerror(errno));
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++)
        st = gpuprof__an_dbfile_open(&r->f[i], out, names[i], planes[i],
                                     r->pid0, peer);
    if (st == GPUPROF_OK && traced)
        st = gpuprof__an_dbfile_open(&r->tr.f, out, "trace.db", 0, r->pid0,
                                     peer);
    if ((st = gpuprof__an_agree(r, st)) != GPUPROF_OK || r->nranks == 1)
        return st;
    for (int i = 0; i < 3 && st == GPUPROF_OK; i++)
        st = gpuprof__an_dbfile_join(&r->f[i], out, names[i], r->pid0, r->rank);
    if (st == GPUPROF_OK && traced)
        st = gpuprof__an_dbfile_join(&r->tr.f, out, "trace.db", r->pid0,
                                     r->rank);
    return gpuprof__an_agree(r, st);
}

/* Before any work: an output that can never be written is said at once,
 * not after minutes of reading (rank 0 looks, the ranks agree). */
static gpuprof_status output_usable(run *r)
{
    const char *out = r->a->output;
    struct stat st;
    if (r->rank != 0)
        return GPUPROF_OK;
    if (stat(out, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return gpuprof__an_fail(GPUPROF_E_IO,
                                    "%s: exists and is not a directory", out);
        if (access(out, W_OK | X_OK) != 0)
            return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", out,
                                    strerror(errno));
        return GPUPROF_OK;
    }
    if (errno != ENOENT)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", out, strerror(errno));
    size_t n = strlen(out); /* to be made: its parent must take it */
    char *parent = malloc(n + 2);
    if (!parent)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    memcpy(parent, out, n + 1);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash)
        strcpy(parent, ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    gpuprof_status r0 = GPUPROF_OK;
    if (access(parent, W_OK | X_OK) != 0)
        r0 = gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s: %s", out,
                              parent, strerror(errno));
    free(parent);
    return r0;
}

/* Bytes the process needs beside the run's own (code, libraries, stacks):
 * what a budget must leave aside. */
#define BUDGET_BASE (8u << 20)

/* The output checked, the inputs listed, pass 1 (merged over the ranks),
 * and the budget checked against what the run keeps. */
static gpuprof_status tree_steps(run *r)
{
    bool many = r->nranks > 1;
    double t = gpuprof__an_now_s();
    gpuprof_status st = gpuprof__an_agree(r, output_usable(r));
    if (st == GPUPROF_OK)
        st = gpuprof__an_inputs(r);
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_INPUTS, t);
    if (st != GPUPROF_OK)
        return st;
    if (!(r->t.st = gpuprof__io_strtab_new()) ||
        (many && !(r->t.mst = gpuprof__io_strtab_new())))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st == GPUPROF_OK)
        st = gpuprof__an_unify(r);
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_LOAD, t);
    if (many && (st = gpuprof__an_merge(r, st)) != GPUPROF_OK)
        return st;
    gpuprof__an_phase_end(r, GPUPROF__AN_PH_MERGE, t);
    if (st == GPUPROF_OK)
        st = gpuprof__an_gcct_metric(&r->t);
    uint64_t kept =
        st == GPUPROF_OK && r->budget ? gpuprof__an_kept_bytes(r) : 0;
    if (st == GPUPROF_OK && r->budget && kept >= r->budget)
        st = gpuprof__an_fail(
            GPUPROF_E_LIMIT,
            "a memory budget of %llu MiB is too small: the "
            "calling context tree and tables of these profiles take %llu MiB",
            (unsigned long long)(r->a->memory >> 20),
            (unsigned long long)((kept + BUDGET_BASE) >> 20) + 1);
    return gpuprof__an_agree(r, st);
}

/* Values per context (counted by pass 2, summed over the ranks) become
 * where each context's values start. */
static void cstart_prefix(run *r)
{
    for (uint32_t c = 0; c < r->t.nc; c++)
        r->cstart[c + 1] += r->cstart[c];
}

/* The passes, the ranks agreeing after each step that may fail. */
static gpuprof_status run_steps(run *r)
{
    bool many = r->nranks > 1;
    gpuprof_status st = tree_steps(r);
    if (st != GPUPROF_OK)
        return st;
    if (!many) /* several ranks: the merge said which are this rank's */
        r->pr_lo = 0, r->pr_hi = r->t.np;
    bool traced = false;
    for (uint32_t i = 0; i < r->ns; i++)
        traced = traced || r->s[i].has_trace;
    double t = gpuprof__an_now_s();
    if ((st = open_files(r, traced)) != GPUPROF_OK)
        return st;
    if ((st = gpuprof__an_agree(r, gpuprof__an_values(r))) != GPUPROF_OK)
        return st;
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_VALUES, t);
    if (many && (st = gpuprof__an_settle_values(r, traced)) != GPUPROF_OK)
        return st;
    cstart_prefix(r);
    if (many)
        gpuprof__an_rank_contexts(r);
    else
        r->c_lo = 0, r->c_hi = r->t.nc;
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_SETTLE_VALUES, t);
    if ((st = gpuprof__an_agree(r, gpuprof__an_transpose(r))) != GPUPROF_OK)
        return st;
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_TRANSPOSE, t);
    if (many && (st = gpuprof__an_settle_contexts(r)) != GPUPROF_OK)
        return st;
    t = gpuprof__an_phase_end(r, GPUPROF__AN_PH_SETTLE_CONTEXTS, t);
    st = gpuprof__an_agree(r, r->rank == 0 ? finish(r, traced) : GPUPROF_OK);
    gpuprof__an_phase_end(r, GPUPROF__AN_PH_WRITE, t);
    return st;
}

static gpuprof_status run_ranks(gpuprof_an_analysis *a,
                                const gpuprof__an_coll *c)
{
    if (!a || !a->ninputs || !a->output)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "an analysis needs inputs and an output");
    run r = {.a = a,
             .f = {GPUPROF_AN_DBFILE_CLOSED, GPUPROF_AN_DBFILE_CLOSED,
                   GPUPROF_AN_DBFILE_CLOSED},
             .tr = {.f = GPUPROF_AN_DBFILE_CLOSED,
                    .strict = a->strict,
                    .warn = a->warn,
                    .warn_user = a->warn_user,
                    .threads = a->threads},
             .sx = {.warn = a->warn, .warn_user = a->warn_user},
             .coll = c,
             .rank = c ? c->rank : 0,
             .major = DB_MAJOR_OLDEST,
             .nranks = c ? c->size : 1,
             .blame = -1};
    memset(a->phase_s, 0, sizeof(a->phase_s));
    r.budget = a->memory ? a->memory - BUDGET_BASE : 0;
    /* Without a budget pass 2's rows stay for pass 3; several ranks read
     * the other ranks' profiles back from profile.db. */
    r.keep_rows = !a->memory;
    gpuprof_status st = run_steps(&r);
    run_free(&r);
    if (st != GPUPROF_OK && r.made_dir)
        (void)rmdir(a->output); /* nothing written: no directory either */
    return st;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_analysis_run(gpuprof_an_analysis *a)
{
    return run_ranks(a, NULL);
}

gpuprof_status gpuprof__an_analysis_run_ranks(gpuprof_an_analysis *a,
                                              const gpuprof__an_coll *c)
{
    if (!c || c->size < 1 || c->rank < 0 || c->rank >= c->size)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad ranks");
    return run_ranks(a, c);
}
