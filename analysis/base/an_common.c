/*
 * an_common.c - shared helpers of libgpuprof-analysis: last error, loading
 * a profile file with a message that names it, what kind of input a
 * directory is, metric lookup, formatting, and the writers of the exports:
 * JSON strings, CSV fields (RFC 4180, as pandas.read_csv reads them),
 * numbers, context labels.
 */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"

static __thread char last_error[1024];

GPUPROF_AN_API const char *gpuprof_an_last_error(void)
{
    return last_error;
}

gpuprof_status gpuprof__an_fail(gpuprof_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return st;
}

int gpuprof__an_dir_kind(const char *dir)
{
    char meta[4200];
    snprintf(meta, sizeof(meta), "%s/meta.db", dir);
    FILE *f = fopen(meta, "rb");
    if (f) {
        fclose(f);
        return GPUPROF__AN_DIR_DATABASE;
    }
    DIR *d = opendir(dir);
    if (!d)
        return GPUPROF__AN_DIR_OTHER;
    int kind = GPUPROF__AN_DIR_OTHER;
    for (struct dirent *e; kind == GPUPROF__AN_DIR_OTHER && (e = readdir(d));) {
        size_t n = strlen(e->d_name), sl = strlen(GPUPROF_IO_SUFFIX);
        if ((n > sl && !strcmp(e->d_name + n - sl, GPUPROF_IO_SUFFIX)) ||
            (n > 8 && !strcmp(e->d_name + n - 8, ".gptrace")))
            kind = GPUPROF__AN_DIR_MEASUREMENTS;
    }
    closedir(d);
    return kind;
}

gpuprof_status gpuprof__an_io_status(int rc, const char *path,
                                     const char *err)
{
    switch (rc) {
    case GPUPROF_IO_OK:
        return GPUPROF_OK;
    case GPUPROF_IO_ERR_NOMEM:
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "%s: %s", path, err);
    case GPUPROF_IO_ERR_IO:
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", path, err);
    case GPUPROF_IO_ERR_VERSION:
        return gpuprof__an_fail(GPUPROF_E_VERSION, "%s: %s", path, err);
    default:
        return gpuprof__an_fail(GPUPROF_E_CORRUPT, "%s: %s", path, err);
    }
}

gpuprof_status gpuprof__an_load(const char *path, gpuprof__io_profile **out)
{
    char err[512];
    int rc = gpuprof__io_read_file(path, out, err, sizeof(err));
    return gpuprof__an_io_status(rc, path, err);
}

void gpuprof__an_fmt_ns(char *buf, size_t size, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, size, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, size, "%.3f us", ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, size, "%.3f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.3f s", ns / 1e9);
}

uint32_t gpuprof__an_metric(const gpuprof__io_profile *p, const char *name)
{
    for (uint32_t i = 0; i < p->metric_count; i++)
        if (strcmp(gpuprof__io_str(p, p->metrics[i].name), name) == 0)
            return i;
    return UINT32_MAX;
}

uint64_t gpuprof__an_value(const gpuprof__io_profile *p, uint32_t i, uint32_t m)
{
    const gpuprof__io_node *n = &p->nodes[i];
    for (uint32_t k = 0; k < n->value_count; k++)
        if (p->values[n->first_value + k].metric == m)
            return p->values[n->first_value + k].bits;
    return 0;
}

const char *gpuprof__an_op_name(uint32_t kind)
{
    /* By gpuprof_op_kind (include/gpuprof.h; pinned values). */
    static const char *const names[] = {
        "operation", "kernel launch", "copy h2d", "copy d2h", "copy d2d",
        "copy",      "memset",        "alloc",    "free",     "sync",
        "map",       "build",         "other",    "unmap"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "operation";
}

uint64_t gpuprof__an_hkey(uint32_t parent, const char *s)
{
    uint64_t h = 0xCBF29CE484222325ull ^ parent;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
    return h;
}

/* ---- JSON strings ---------------------------------------------------- */
/* The length of the valid UTF-8 sequence at p (1..4), 0 when invalid. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 &&
                       (p[3] & 0xC0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* A JSON string: quotes, backslashes and control characters escaped, bytes
 * that are not valid UTF-8 replaced by U+FFFD. */
void gpuprof__an_json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    putc('"', f);
    while (*p) {
        /* A run that needs no escaping goes out in one write. */
        const unsigned char *run = p;
        size_t n;
        while (*p >= 0x20 && *p != '"' && *p != '\\' && (n = utf8_len(p)))
            p += n;
        if (p > run)
            fwrite(run, 1, (size_t)(p - run), f);
        if (!*p)
            break;
        if (*p == '"' || *p == '\\') {
            putc('\\', f);
            putc(*p, f);
        } else if (*p == '\n') {
            fputs("\\n", f);
        } else if (*p == '\t') {
            fputs("\\t", f);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputs("\\ufffd", f);
        }
        p++;
    }
    putc('"', f);
}

/* ---- CSV fields -------------------------------------------------------- */
/* A CSV field (RFC 4180): as it is, or in double quotes with quotes
 * doubled when it holds a comma, quote or line break; bytes that are not
 * valid UTF-8 replaced by U+FFFD (pandas reads UTF-8 and would stop). */
void gpuprof__an_csv_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    bool quote = strpbrk(s, ",\"\n\r") != NULL;
    if (quote)
        putc('"', f);
    while (*p) {
        const unsigned char *run = p;
        size_t n;
        while (*p && *p != '"' && (n = utf8_len(p)))
            p += n;
        if (p > run)
            fwrite(run, 1, (size_t)(p - run), f);
        if (!*p)
            break;
        if (*p == '"')
            fputs("\"\"", f);
        else
            fputs("\xef\xbf\xbd", f); /* not UTF-8 */
        p++;
    }
    if (quote)
        putc('"', f);
}

/* ---- names in columns of bounded width ----------------------------------- */
/* A UTF-8 character starts at s (not a continuation byte). */
static bool char_start(const char *s)
{
    return ((unsigned char)*s & 0xc0) != 0x80;
}

void gpuprof__an_fit(const char *name, size_t width, char *buf, size_t size)
{
    size_t n = strlen(name);
    if (width < 16)
        width = 16;
    if (n <= width || size < width + 1) {
        snprintf(buf, size, "%s", name);
        return;
    }
    /* Keep what tells the place: " (module)", " (file.c:42)" at the end,
     * when it leaves room for a head; else the last third. */
    const char *tail = strrchr(name, '(');
    if (!tail || tail == name || tail[-1] != ' ' ||
        (size_t)(name + n - tail) + 1 > width / 2)
        tail = name + n - width / 3;
    else
        tail--; /* the space before it */
    while (*tail && !char_start(tail))
        tail++;
    size_t t = (size_t)(name + n - tail), h = width - 3 - t;
    while (h > 0 && !char_start(name + h))
        h--;
    snprintf(buf, size, "%.*s...%s", (int)h, name, tail);
}

/* ---- numbers ----------------------------------------------------------- */
/* The shortest text that reads back as v: integers below 2^53 without a
 * decimal point, others with the fewest of 15..17 significant digits that
 * round-trip (0.1, not 0.10000000000000001). */
void gpuprof__an_fmt_num(char *buf, size_t size, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0 && size >= 20) {
        /* By hand: exports write millions of these, and printf's
         * floating-point path is most of their cost. No "-0". */
        char digits[20];
        uint64_t u = (uint64_t)fabs(v);
        size_t n = 0, k = 0;
        do
            digits[n++] = (char)('0' + u % 10);
        while (u /= 10);
        if (v < 0)
            buf[k++] = '-';
        while (n)
            buf[k++] = digits[--n];
        buf[k] = '\0';
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

void gpuprof__an_num(FILE *f, double v, const char *nonfinite)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs(nonfinite, f);
        return;
    }
    gpuprof__an_fmt_num(buf, sizeof(buf), v);
    fputs(buf, f);
}

/* ---- context labels ----------------------------------------------------- */
const char *gpuprof__an_context_label(const gpuprof_an_db *db, uint32_t c,
                                      uint32_t flags, char *buf, size_t size)
{
    const char *name = gpuprof__an_db_label(db, c, flags);
    if (name && *name)
        return name;
    snprintf(buf, size, "<context %" PRIu32 ">", c);
    return buf;
}
