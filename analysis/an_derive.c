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
 * a name holding other characters is written in double quotes. Division by
 * zero gives 0 (a context without the divisor has no ratio), so results
 * stay finite.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

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
    int err;             /* 1 once an error is recorded */
    int units;           /* -1 none yet, else the operands' common unit */
    int mixed, multiply; /* units differ; * / max min whole used */
} parser;

static void perr(parser *p, const char *what)
{
    if (!p->err)
        gpuprof__an_fail(GPUPROF_E_INVALID, "formula '%s': %s at offset %d",
                         p->s, what, (int)(p->at - p->s));
    p->err = 1;
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

static void expr(parser *p);

static void primary(parser *p)
{
    skip(p);
    char name[256];
    size_t n = 0;
    if (*p->at == '(') {
        p->at++;
        expr(p);
        skip(p);
        if (*p->at != ')')
            return perr(p, "')' expected");
        p->at++;
        return;
    }
    if (isdigit((unsigned char)*p->at) || *p->at == '.') {
        char *end;
        double v = strtod(p->at, &end);
        if (end == p->at || !isfinite(v))
            return perr(p, "bad number");
        p->at = end;
        return emit(p, (fop){F_NUM, v, {0, 0}});
    }
    if (*p->at == '"') {
        for (p->at++; *p->at && *p->at != '"'; p->at++)
            if (n + 1 < sizeof(name))
                name[n++] = *p->at;
        if (*p->at != '"')
            return perr(p, "unterminated name");
        p->at++;
    } else {
        for (; isalnum((unsigned char)*p->at) || *p->at == '_' ||
               *p->at == '.';
             p->at++)
            if (n + 1 < sizeof(name))
                name[n++] = *p->at;
    }
    name[n] = '\0';
    if (!n)
        return perr(p, "a metric name, number or '(' expected");
    skip(p);
    if (*p->at == '(' && (!strcmp(name, "max") || !strcmp(name, "min"))) {
        p->at++;
        expr(p);
        skip(p);
        if (*p->at != ',')
            return perr(p, "',' expected: max and min take two arguments");
        p->at++;
        expr(p);
        skip(p);
        if (*p->at != ')')
            return perr(p, "')' expected");
        p->at++;
        p->multiply = 1; /* not additive */
        return emit(p, (fop){(uint8_t)(name[1] == 'a' ? F_MAX : F_MIN), 0,
                             {0, 0}});
    }
    if (*p->at == '(' && !strcmp(name, "whole")) {
        const char *arg = ++p->at;
        while (*p->at && *p->at != ')')
            p->at++;
        if (*p->at != ')')
            return perr(p, "')' expected");
        char m[256];
        size_t k = (size_t)(p->at - arg);
        while (k && isspace((unsigned char)arg[k - 1]))
            k--;
        while (k && isspace((unsigned char)*arg))
            arg++, k--;
        if (k >= 2 && arg[0] == '"' && arg[k - 1] == '"')
            arg++, k -= 2;
        snprintf(m, sizeof(m), "%.*s", (int)k, arg);
        p->at++;
        uint32_t id;
        if (gpuprof_an_db_metric_find(p->db, m, GPUPROF_AN_INCLUSIVE, &id) !=
            GPUPROF_OK) {
            if (!p->err)
                gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                 "formula '%s': no metric named '%s'", p->s, m);
            p->err = 1;
            return;
        }
        p->multiply = 1; /* a constant: not additive */
        return emit(p, (fop){F_NUM,
                             gpuprof_an_db_stat(p->db, 0, id,
                                                GPUPROF_AN_STAT_SUM),
                             {0, 0}});
    }
    if (*p->at == '(')
        return perr(p, "unknown function (max, min, whole)");
    fop op = {F_REF, 0, {0, 0}};
    if (gpuprof_an_db_metric_find(p->db, name, GPUPROF_AN_INCLUSIVE,
                                  &op.m[0]) != GPUPROF_OK ||
        gpuprof_an_db_metric_find(p->db, name, GPUPROF_AN_EXCLUSIVE,
                                  &op.m[1]) != GPUPROF_OK) {
        if (!p->err)
            gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                             "formula '%s': no metric named '%s'", p->s, name);
        p->err = 1;
        return;
    }
    int u = (int)gpuprof_an_db_metric_unit(p->db, op.m[0]);
    if (p->units >= 0 && p->units != u)
        p->mixed = 1;
    p->units = u;
    emit(p, op);
}

static void unary(parser *p)
{
    skip(p);
    if (*p->at == '-') {
        p->at++;
        unary(p);
        return emit(p, (fop){F_NEG, 0, {0, 0}});
    }
    primary(p);
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
    parser p = {db, text, text, f, 0, -1, 0, 0};
    expr(&p);
    skip(&p);
    if (!p.err && *p.at)
        perr(&p, "unexpected character");
    /* The stack depth, for evaluation without bounds checks. */
    int d = 0, most = 0;
    for (uint32_t i = 0; !p.err && i < f->n; i++) {
        d += f->code[i].kind <= F_REF   ? 1
             : f->code[i].kind == F_NEG ? 0
                                        : -1;
        most = d > most ? d : most;
    }
    if (p.err) {
        gpuprof_status st = strstr(gpuprof_an_last_error(), "no metric named")
                                ? GPUPROF_E_NOTFOUND
                                : GPUPROF_E_INVALID;
        gpuprof__an_formula_free(f);
        return st;
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
 * EXECUTION_TIME, which is max(CPU_TIME - GPU_API_TIME, 0) / EXECUTION_TIME:
 * with CPU_TIME the time inside regions (region.time.incl: wall time, we do
 * not sample CPU time), GPU_API_TIME the time threads spent in operations
 * done on the host (api.time: waits, builds) and EXECUTION_TIME the whole
 * run's region time. GPU_API_IMPORTANCE = GPU_API_TIME / SUM(GPU_API_TIME)
 * with GPU_API_TIME = gpu.time + api.time: each operation's device time, or
 * host time for those done on the host, over all of it. A term whose
 * metric the database lacks is left out. */
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
    bool region = has(db, "region.time.incl"), api = has(db, "api.time"),
         gpu = has(db, "gpu.time");
    int added = 0;
    gpuprof_status st = GPUPROF_OK;
    if (region && !has(db, "cpu_importance")) {
        st = gpuprof_an_db_derive(
            db, "cpu_importance",
            api ? "max(region.time.incl - api.time, 0) / "
                  "whole(region.time.incl)"
                : "max(region.time.incl, 0) / whole(region.time.incl)");
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
    if (st == GPUPROF_OK && !added && !has(db, "cpu_importance"))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND,
                                "%s: importance metrics need region.time.incl"
                                ", gpu.time or api.time",
                                gpuprof_an_db_metric_count(db)
                                    ? "this database"
                                    : "an empty database");
    return st;
}
