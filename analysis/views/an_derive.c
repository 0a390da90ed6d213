/*
 * an_derive.c - derived metrics (seed 000 §7.1): a formula over metrics of
 * a database, e.g. `(gpu.time - blame.cpu_idle) / gpu.time`, compiled once
 * into a small stack program and evaluated per (profile, context) or over
 * the sums of a context. Every name in the formula is a metric of the
 * database (measured, or derived earlier); a derived metric has an
 * inclusive and an exclusive variant, each evaluated from the operands'
 * same variant.
 *
 * Grammar: expr = term {(+|-) term}; term = unary {(*|/) unary};
 * unary = -unary | primary; primary = number | name | ( expr ) |
 * max(expr, expr) | min(expr, expr) | whole(name), where whole(M) is M's
 * inclusive sum over profiles at the program root (a constant: "the whole
 * run"), so `M / whole(M)` is a share.
 * Names are letters, digits, '_' and '.', not starting with a digit or '.';
 * a name holding other characters is written in double quotes (at most 255
 * bytes either way). Numbers are decimal ("2", "0.5", "1e-3"; no
 * hexadecimal, infinity or NaN) and may not run into a name ("2x").
 * Parentheses and unary minuses nest at most 64 deep (the parser recurses
 * per level). Every error names the formula, what is wrong and the byte
 * offset where it is. Division by zero gives 0 (a context without the
 * divisor has no ratio), so results stay finite.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"

enum { F_NUM, F_REF, F_ADD, F_SUB, F_MUL, F_DIV, F_NEG, F_MAX, F_MIN };

typedef struct fop {
    uint8_t kind;
    double num;    /* F_NUM */
    uint32_t m[2]; /* F_REF: the operand per variant (inclusive, exclusive) */
} fop;

#define MAX_CODE 256

struct gpuprof__an_formula {
    char *name;
    fop code[MAX_CODE];
    uint32_t n, depth; /* instructions; deepest stack */
    gpuprof_an_unit unit;
    int additive; /* only + and -: values add up like the operands' */
};

typedef struct parser {
    const gpuprof_an_db *db;
    const char *s, *at;
    gpuprof__an_formula *f;
    gpuprof_status err;  /* GPUPROF_OK until the first error is recorded */
    unsigned nest;       /* unary minuses and parentheses open */
    int units;           /* -1 none yet, else the operands' common unit */
    int mixed, multiply; /* units differ; * / max min whole used */
} parser;

/* Deepest nesting of parentheses and unary minuses: the parser recurses
 * once per level, and a formula comes from a command line. */
#define MAX_NEST 64
/* Longest metric name in a formula. */
#define MAX_NAME 255

/* Records the first error, pointing at `where` in the formula. */
static void perr_at(parser *p, gpuprof_status st, const char *where,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void perr_at(parser *p, gpuprof_status st, const char *where,
                    const char *fmt, ...)
{
    if (p->err)
        return;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    p->err = gpuprof__an_fail(st, "formula '%s': %s at offset %d", p->s, what,
                              (int)(where - p->s));
}

static void perr(parser *p, const char *what)
{
    perr_at(p, GPUPROF_E_INVALID, p->at, "%s", what);
}

static void emit(parser *p, fop op)
{
    if (p->f->n == MAX_CODE)
        return perr(p, "too long");
    p->f->code[p->f->n++] = op;
}

static void skip(parser *p)
{
    while (isspace((unsigned char)*p->at))
        p->at++;
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* A metric (or function) name at p->at, bare or in double quotes, into
 * name[MAX_NAME + 1]; false with an error recorded when there is none. */
static bool lex_name(parser *p, char *name)
{
    const char *start = p->at, *from = start, *end;
    if (*start == '"') {
        end = strchr(start + 1, '"');
        if (!end) {
            perr_at(p, GPUPROF_E_INVALID, start, "unterminated name");
            return false;
        }
        from = start + 1;
        p->at = end + 1;
    } else {
        if (!isalpha((unsigned char)*start) && *start != '_') {
            perr(p, "a metric name, number or '(' expected");
            return false;
        }
        for (end = start; name_char(*end); end++)
            ;
        p->at = end;
    }
    size_t n = (size_t)(end - from);
    if (n == 0 || n > MAX_NAME) {
        if (n)
            perr_at(p, GPUPROF_E_INVALID, start, "name longer than %d bytes",
                    MAX_NAME);
        else
            perr_at(p, GPUPROF_E_INVALID, start, "empty name");
        return false;
    }
    memcpy(name, from, n);
    name[n] = '\0';
    return true;
}

/* A decimal number (no hexadecimal, infinity or NaN), not run into a
 * name: "2x" is an error, not 2 times x. */
static void number(parser *p)
{
    char *end;
    double v = strtod(p->at, &end);
    bool hex = false;
    for (const char *q = p->at; q < end; q++)
        hex = hex || *q == 'x' || *q == 'X';
    if (end == p->at || hex || !isfinite(v) || name_char(*end))
        return perr(p, "bad number");
    p->at = end;
    emit(p, (fop){F_NUM, v, {0, 0}});
}

static void expr(parser *p);

/* max(a, b) and min(a, b), p->at after the '('. */
static void max_min(parser *p, uint8_t kind)
{
    expr(p);
    skip(p);
    if (p->err)
        return;
    if (*p->at != ',')
        return perr(p, "',' expected: max and min take two arguments");
    p->at++;
    expr(p);
    skip(p);
    if (p->err)
        return;
    if (*p->at == ',')
        return perr(p, "max and min take two arguments");
    if (*p->at != ')')
        return perr(p, "')' expected");
    p->at++;
    p->multiply = 1; /* not additive */
    emit(p, (fop){kind, 0, {0, 0}});
}

/* whole(M), p->at after the '(': M's inclusive sum at the root, a
 * constant. M is one metric name, bare or quoted. */
static void whole(parser *p)
{
    char m[MAX_NAME + 1];
    skip(p);
    const char *arg = p->at;
    if (*arg != '"' && *arg != '_' && !isalpha((unsigned char)*arg))
        return perr(p, "whole() takes one metric name");
    if (!lex_name(p, m))
        return;
    skip(p);
    if (*p->at != ')')
        return perr(p, "')' expected: whole() takes one metric name");
    p->at++;
    uint32_t id;
    if (gpuprof_an_db_metric_find(p->db, m, GPUPROF_AN_INCLUSIVE, &id) !=
        GPUPROF_OK)
        return perr_at(p, GPUPROF_E_NOTFOUND, arg, "no metric named '%s'", m);
    p->multiply = 1; /* a constant: not additive */
    emit(p, (fop){F_NUM,
                  gpuprof_an_db_stat(p->db, 0, id, GPUPROF_AN_STAT_SUM),
                  {0, 0}});
}

/* A metric by name: both variants' ids. */
static void reference(parser *p, const char *name, const char *at)
{
    fop op = {F_REF, 0, {0, 0}};
    if (gpuprof_an_db_metric_find(p->db, name, GPUPROF_AN_INCLUSIVE,
                                  &op.m[0]) != GPUPROF_OK ||
        gpuprof_an_db_metric_find(p->db, name, GPUPROF_AN_EXCLUSIVE,
                                  &op.m[1]) != GPUPROF_OK)
        return perr_at(p, GPUPROF_E_NOTFOUND, at, "no metric named '%s'", name);
    int u = (int)gpuprof_an_db_metric_unit(p->db, op.m[0]);
    if (p->units >= 0 && p->units != u)
        p->mixed = 1;
    p->units = u;
    emit(p, op);
}

static void primary(parser *p)
{
    skip(p);
    if (*p->at == '(') {
        p->at++;
        expr(p);
        skip(p);
        if (p->err)
            return;
        if (*p->at != ')')
            return perr(p, "')' expected");
        p->at++;
        return;
    }
    if (isdigit((unsigned char)*p->at) || *p->at == '.')
        return number(p);
    const char *at = p->at;
    bool quoted = *at == '"';
    char name[MAX_NAME + 1];
    if (!lex_name(p, name))
        return;
    skip(p);
    if (*p->at != '(' || quoted)
        return reference(p, name, at);
    p->at++;
    if (!strcmp(name, "max") || !strcmp(name, "min"))
        return max_min(p, (uint8_t)(name[1] == 'a' ? F_MAX : F_MIN));
    if (!strcmp(name, "whole"))
        return whole(p);
    perr_at(p, GPUPROF_E_INVALID, at, "unknown function '%s' (max, min, whole)",
            name);
}

static void unary(parser *p)
{
    if (++p->nest > MAX_NEST)
        return perr(p, "nested too deeply");
    skip(p);
    if (*p->at == '-') {
        p->at++;
        unary(p);
        emit(p, (fop){F_NEG, 0, {0, 0}});
    } else {
        primary(p);
    }
    p->nest--;
}

static void term(parser *p)
{
    unary(p);
    for (skip(p); !p->err && (*p->at == '*' || *p->at == '/'); skip(p)) {
        int k = *p->at++ == '*' ? F_MUL : F_DIV;
        unary(p);
        p->multiply = 1;
        emit(p, (fop){(uint8_t)k, 0, {0, 0}});
    }
}

static void expr(parser *p)
{
    term(p);
    for (skip(p); !p->err && (*p->at == '+' || *p->at == '-'); skip(p)) {
        int k = *p->at++ == '+' ? F_ADD : F_SUB;
        term(p);
        emit(p, (fop){(uint8_t)k, 0, {0, 0}});
    }
}

gpuprof_status gpuprof__an_formula_compile(const gpuprof_an_db *db,
                                           const char *name, const char *text,
                                           gpuprof__an_formula **out)
{
    *out = NULL;
    if (!name || !*name || !text)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "a derived metric needs a name and a formula");
    uint32_t m;
    if (gpuprof_an_db_metric_find(db, name, GPUPROF_AN_INCLUSIVE, &m) ==
        GPUPROF_OK)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "a metric named '%s' exists already", name);
    gpuprof__an_formula *f = calloc(1, sizeof(*f));
    if (!f || !(f->name = strdup(name))) {
        free(f);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    parser p = {db, text, text, f, GPUPROF_OK, 0, -1, 0, 0};
    expr(&p);
    skip(&p);
    if (!p.err && *p.at)
        perr_at(&p, GPUPROF_E_INVALID, p.at,
                isprint((unsigned char)*p.at) ? "unexpected '%c'"
                                              : "unexpected byte 0x%02x",
                (unsigned char)*p.at);
    /* The stack depth, for evaluation without bounds checks. */
    int d = 0, most = 0;
    for (uint32_t i = 0; !p.err && i < f->n; i++) {
        d += f->code[i].kind <= F_REF   ? 1
             : f->code[i].kind == F_NEG ? 0
                                        : -1;
        most = d > most ? d : most;
    }
    /* Every consumer evaluates from at most GPUPROF__AN_MAX_OPERANDS
     * operands' values: a formula naming more would lose the profiles where
     * only the others have values. */
    uint32_t ops[MAX_CODE];
    for (unsigned v = 0; !p.err && v < 2; v++) {
        uint32_t n = gpuprof__an_formula_operands(f, v, ops, MAX_CODE);
        if (n > GPUPROF__AN_MAX_OPERANDS)
            p.err = gpuprof__an_fail(GPUPROF_E_LIMIT,
                                     "formula '%s': names %u distinct "
                                     "metrics; at most %d may be combined",
                                     text, n, GPUPROF__AN_MAX_OPERANDS);
    }
    if (p.err) {
        gpuprof__an_formula_free(f);
        return p.err;
    }
    f->depth = (uint32_t)most;
    f->additive = !p.multiply;
    f->unit = p.multiply || p.mixed || p.units < 0 ? GPUPROF_AN_UNIT_COUNT
                                                   : (gpuprof_an_unit)p.units;
    *out = f;
    return GPUPROF_OK;
}

void gpuprof__an_formula_free(gpuprof__an_formula *f)
{
    if (f)
        free(f->name);
    free(f);
}

const char *gpuprof__an_formula_name(const gpuprof__an_formula *f)
{
    return f->name;
}

gpuprof_an_unit gpuprof__an_formula_unit(const gpuprof__an_formula *f)
{
    return f->unit;
}

int gpuprof__an_formula_additive(const gpuprof__an_formula *f)
{
    return f->additive;
}

double gpuprof__an_formula_eval(const gpuprof__an_formula *f, unsigned variant,
                                gpuprof__an_fetch_fn fetch, void *arg)
{
    double st[MAX_CODE];
    uint32_t sp = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        const fop *o = &f->code[i];
        switch (o->kind) {
        case F_NUM:
            st[sp++] = o->num;
            break;
        case F_REF:
            st[sp++] = fetch(arg, o->m[variant ? 1 : 0]);
            break;
        case F_NEG:
            st[sp - 1] = -st[sp - 1];
            break;
        default: {
            double b = st[--sp], a = st[sp - 1];
            st[sp - 1] = o->kind == F_ADD   ? a + b
                         : o->kind == F_SUB ? a - b
                         : o->kind == F_MUL ? a * b
                         : o->kind == F_MAX ? (a > b ? a : b)
                         : o->kind == F_MIN ? (a < b ? a : b)
                         : b != 0           ? a / b
                                            : 0;
        }
        }
    }
    return sp ? st[0] : 0;
}

uint32_t gpuprof__an_formula_operands(const gpuprof__an_formula *f,
                                      unsigned variant, uint32_t *m,
                                      uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        if (f->code[i].kind != F_REF)
            continue;
        uint32_t id = f->code[i].m[variant ? 1 : 0], k = 0;
        while (k < n && m[k] != id)
            k++;
        if (k == n && n < max)
            m[n++] = id;
    }
    return n;
}

/* ---- importance metrics (seed 001) ---------------------------------------
 * CPU_IMPORTANCE = max((CPU_TIME - GPU_API_TIME) / CPU_TIME, 0) x CPU_TIME /
 * EXECUTION_TIME, which is max(CPU_TIME - GPU_API_TIME, 0) / EXECUTION_TIME.
 *
 * CPU_TIME of a context is the wall time spent in its subtree (we do not
 * sample CPU time): the inclusive roll-up of region.time.excl, each
 * region's own time outside its child regions summed over the subtree.
 * Not region.time.incl: a region's value of it already holds its child
 * regions' time, so its roll-up counts a nested region once per enclosing
 * region (an outer region of 10 ms around an inner one of 6 ms rolls up to
 * 16 ms). GPU_API_TIME is api.time (operations the host did: waits,
 * builds), recorded once per operation on its own context, so its roll-up
 * counts each once; EXECUTION_TIME is whole(region.time.excl), the run's
 * region time over all threads.
 *
 * GPU_API_IMPORTANCE = GPU_API_TIME / SUM(GPU_API_TIME) with GPU_API_TIME
 * = gpu.time + api.time: each operation's device time, or host time for
 * those done on the host (an operation has one or the other, on one
 * context), over all of it. A term whose metric the database lacks is left
 * out. */
static bool has(const gpuprof_an_db *db, const char *name)
{
    uint32_t m;
    return gpuprof_an_db_metric_find(db, name, GPUPROF_AN_INCLUSIVE, &m) ==
           GPUPROF_OK;
}

GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_importance(gpuprof_an_db *db,
                                                           uint32_t flags)
{
    if (!db || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    bool region = has(db, "region.time.excl"), api = has(db, "api.time"),
         gpu = has(db, "gpu.time");
    int added = 0;
    gpuprof_status st = GPUPROF_OK;
    if (region && !has(db, "cpu_importance")) {
        st = gpuprof_an_db_derive(
            db, "cpu_importance",
            api ? "max(region.time.excl - api.time, 0) / "
                  "whole(region.time.excl)"
                : "region.time.excl / whole(region.time.excl)");
        added += st == GPUPROF_OK;
    }
    if (st == GPUPROF_OK && (gpu || api) && !has(db, "gpu_api_importance")) {
        st = gpuprof_an_db_derive(
            db, "gpu_api_importance",
            gpu && api ? "(gpu.time + api.time) / "
                         "(whole(gpu.time) + whole(api.time))"
            : gpu      ? "gpu.time / whole(gpu.time)"
                       : "api.time / whole(api.time)");
        added += st == GPUPROF_OK;
    }
    if (st == GPUPROF_OK && !added && !has(db, "cpu_importance") &&
        !has(db, "gpu_api_importance"))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "%s: importance metrics need region.time.excl"
                                ", gpu.time or api.time",
                                gpuprof_an_db_metric_count(db)
                                    ? "this database"
                                    : "an empty database");
    return st;
}

/* ---- PC sampling metrics (seed 001) ---------------------------------------
 * Of S samples of a context (gpu.pc.samples) S_L are latency samples (no
 * warp of the scheduler issued: gpu.pc.latency_samples); the issue rate is
 * (S - S_L) / S, and a context's share of all samples shows where the
 * kernels spend their time, instruction by instruction. */
GPUPROF_AN_API gpuprof_status gpuprof_an_db_add_pc_metrics(gpuprof_an_db *db,
                                                           uint32_t flags)
{
    if (!db || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID, "bad argument");
    uint32_t m;
    /* Every profile names the metric; only a run that sampled has any. */
    if (gpuprof_an_db_metric_find(db, "gpu.pc.samples", GPUPROF_AN_INCLUSIVE,
                                  &m) != GPUPROF_OK ||
        !(gpuprof_an_db_stat(db, 0, m, GPUPROF_AN_STAT_SUM) > 0))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "this database has no PC samples "
                                "(gpu.pc.samples: measure with "
                                "GPUPROF_CUPTI_PC_SAMPLING=1)");
    gpuprof_status st = GPUPROF_OK;
    if (has(db, "gpu.pc.latency_samples") && !has(db, "gpu.pc.issue_rate"))
        st = gpuprof_an_db_derive(
            db, "gpu.pc.issue_rate",
            "(gpu.pc.samples - gpu.pc.latency_samples) / gpu.pc.samples");
    if (st == GPUPROF_OK && !has(db, "gpu.pc.sample_share"))
        st = gpuprof_an_db_derive(db, "gpu.pc.sample_share",
                                  "gpu.pc.samples / whole(gpu.pc.samples)");
    return st;
}
