/*
 * an_sass_parse.c - NVIDIA GPU code as nvdisasm lists it, turned into
 * functions and instructions (an_sass.h).
 *
 * `nvdisasm -g -gi -hex CUBIN` prints every code section (.text.<kernel>)
 * with its symbols (a kernel, then the device functions kept out of line
 * in its section, `$<kernel>$<name>`), labels (`.L_x_N:`, every branch and
 * BSSY target), source lines (`//## File "f.cu", line N`, with -gi also
 * `inlined at`), and one line per instruction: its offset in a comment,
 * `@!P0 LDG.E R0, desc[UR36][R6.64] ;`, and its encoding. This file runs
 * nvdisasm and walks the listing: sections, functions, labels, lines; each
 * instruction's text is read by an_sass_insn.c; branch and call targets
 * are resolved by name (labels within their section, functions anywhere,
 * the targets an indirect branch's BRANCH_TARGETS comment lists). The
 * listing is parsed in place; its lines are the instructions' text. Then
 * each function gets its CFG and loops (an_sass_cfg.c). No nvdisasm:
 * GPUPROF_E_NOTFOUND, and the caller says what is missing.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../base/an_buf.h"
#include "../base/an_internal.h"
#include "an_sass.h"

extern char **environ;

#define MAX_LISTING (1ull << 31)
#define DEAD (UINT32_MAX - 1) /* a label after a section's last instruction */

/* ---- finding and running nvdisasm ---------------------------------------- */
static bool runnable(const char *p) { return access(p, X_OK) == 0; }

bool gpuprof__sass_find_nvdisasm(char *out, size_t size, char *why,
                                 size_t why_size)
{
    const char *env = getenv("GPUPROF_NVDISASM"), *cuda = getenv("CUDA_HOME");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        if (runnable(out))
            return true;
        snprintf(why, why_size, "GPUPROF_NVDISASM=%s is not executable", env);
        return false;
    }
    if (cuda && *cuda) {
        snprintf(out, size, "%s/bin/nvdisasm", cuda);
        if (runnable(out))
            return true;
    }
    snprintf(out, size, "/usr/local/cuda/bin/nvdisasm");
    if (runnable(out))
        return true;
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(out, size, "%.*s/nvdisasm", (int)n, p);
        if (n && runnable(out))
            return true;
        p = e ? e + 1 : NULL;
    }
    snprintf(why, why_size,
             "nvdisasm not found (GPUPROF_NVDISASM, $CUDA_HOME/bin, "
             "/usr/local/cuda/bin, PATH)");
    return false;
}

/* Reads everything the child writes to `fd`. */
static char *drain(int fd, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    *len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = cap < MAX_LISTING ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

/* The first line of what the child wrote to `fd` (a temporary file),
 * "no message" when nothing. */
static void first_line(int fd, char *out, size_t size)
{
    ssize_t n = pread(fd, out, size - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0])
        snprintf(out, size, "no message");
}

/* Why the listing failed: how nvdisasm ended and what it said. */
static void failed(const char *tool, const char *cubin, int status, int err,
                   bool empty)
{
    char msg[512], how[64];
    first_line(err, msg, sizeof(msg));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && empty)
        snprintf(how, sizeof(how), "printed nothing");
    else if (WIFEXITED(status))
        snprintf(how, sizeof(how), "exited with status %d",
                 WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "was killed by signal %d",
                 WTERMSIG(status));
    else
        snprintf(how, sizeof(how), "ended (wait status %d)", status);
    gpuprof__an_fail(GPUPROF_E_IO, "%s -g -gi -hex %s %s: %s", tool, cubin,
                     how, msg);
}

/* `nvdisasm -g -gi -hex cubin`'s standard output, or NULL (message set:
 * its exit status and the first line of its standard error). */
static char *run_nvdisasm(const char *tool, const char *cubin)
{
    int fds[2];
    FILE *errf = tmpfile();
    if (!errf)
        return gpuprof__an_fail(GPUPROF_E_IO, "tmpfile: %s", strerror(errno)),
               NULL;
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fclose(errf);
        return gpuprof__an_fail(GPUPROF_E_IO, "pipe: %s", strerror(errno)),
               NULL;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), 2);
    char *argv[] = {(char *)tool, "-g", "-gi", "-hex", (char *)cubin, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        fclose(errf);
        gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", tool, strerror(rc));
        return NULL;
    }
    size_t len;
    char *text = drain(fds[0], &len);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !text || !len) {
        free(text);
        failed(tool, cubin, status, fileno(errf), !text || !len);
        text = NULL;
    }
    fclose(errf);
    return text;
}

gpuprof_status gpuprof__sass_open(const char *cubin, gpuprof__sass_bin **out)
{
    char tool[4096], why[512];
    *out = NULL;
    if (!gpuprof__sass_find_nvdisasm(tool, sizeof(tool), why, sizeof(why)))
        return gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s", why);
    if (access(cubin, R_OK) != 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", cubin, strerror(errno));
    char *text = run_nvdisasm(tool, cubin);
    if (!text)
        return GPUPROF_E_IO;
    gpuprof_status st = gpuprof__sass_parse(text, out);
    if (st == GPUPROF_E_CORRUPT)
        gpuprof__an_fail(st, "%s: nvdisasm listed no code", cubin);
    return st;
}

/* ---- the listing ------------------------------------------------------------ */
typedef struct label {
    const char *name;
    uint32_t sect, insn;
} label;

typedef struct parser {
    gpuprof__sass_bin *b;
    uint32_t cap_insn, cap_func, nlabel, cap_label;
    label *labels;
    char **tgt;       /* per instruction: its target's name, NULL */
    label *jt;        /* indirect branches' targets: name, insn */
    uint32_t njt, cap_jt;
    uint32_t sect;    /* sections seen; the current one is sect - 1 */
    const char *sect_name, *global, *file;
    uint32_t line, pending; /* labels waiting for the next instruction */
    bool in_text;
} parser;

/* Closes the function being read: its extent and instruction count. */
static void end_func(parser *ps)
{
    gpuprof__sass_bin *b = ps->b;
    if (!b->nfunc)
        return;
    sass_func *f = &b->func[b->nfunc - 1];
    if (f->count || f->first > b->ninsn)
        return;
    f->count = b->ninsn - f->first;
    if (f->count) {
        const sass_insn *l = &b->insn[b->ninsn - 1];
        f->start = b->insn[f->first].offset;
        f->end = l->offset + (f->count > 1 ? l->offset - l[-1].offset : 16);
    }
}

static bool new_func(parser *ps, const char *name)
{
    end_func(ps);
    gpuprof__sass_bin *b = ps->b;
    if (!gpuprof__an_grow((void **)&b->func, &ps->cap_func, b->nfunc, sizeof(*b->func)))
        return false;
    sass_func *f = &b->func[b->nfunc++];
    memset(f, 0, sizeof(*f));
    f->name = name;
    f->section = ps->sect_name;
    f->first = b->ninsn;
    f->kernel = ps->global && !strcmp(ps->global, name);
    return true;
}

/* BRX R6 -0x930 (*"BRANCH_TARGETS .L_x_79,.L_x_80"*): the labels an
 * indirect branch may go to, as nvdisasm lists them. */
static bool jump_targets(parser *ps, const char *text, uint32_t insn)
{
    const char *t = strstr(text, "BRANCH_TARGETS ");
    if (!t)
        return true;
    for (t += 15; *t == '.';) {
        size_t n = strcspn(t, ",\"*) ");
        if (!gpuprof__an_grow((void **)&ps->jt, &ps->cap_jt, ps->njt, sizeof(*ps->jt)))
            return false;
        char *name = strndup(t, n);
        if (!name)
            return false;
        ps->jt[ps->njt++] = (label){name, 0, insn};
        t += n;
        t += *t == ',';
    }
    return true;
}

static bool add_insn(parser *ps, uint32_t offset, char *text)
{
    gpuprof__sass_bin *b = ps->b;
    uint32_t cap = ps->cap_insn;
    if (!b->nfunc && !new_func(ps, ps->sect_name))
        return false;
    if (!gpuprof__an_grow((void **)&b->insn, &ps->cap_insn, b->ninsn, sizeof(*b->insn)))
        return false;
    if (cap != ps->cap_insn) {
        char **nt = realloc(ps->tgt, (size_t)ps->cap_insn * sizeof(*nt));
        if (!nt)
            return false;
        ps->tgt = nt;
    }
    sass_insn *in = &b->insn[b->ninsn];
    memset(in, 0, sizeof(*in));
    in->offset = offset;
    in->file = ps->file;
    in->line = ps->line;
    in->func = b->nfunc - 1;
    in->label = ps->pending > 0;
    ps->pending = 0;
    char tname[256];
    gpuprof__sass_parse_insn(in, text, tname, sizeof(tname));
    ps->tgt[b->ninsn] = tname[0] ? strdup(tname) : NULL;
    if (tname[0] && !ps->tgt[b->ninsn])
        return false;
    for (uint32_t k = ps->nlabel; k-- > 0 && ps->labels[k].insn == SASS_NONE;)
        ps->labels[k].insn = b->ninsn;
    b->ninsn++;
    return jump_targets(ps, in->text, b->ninsn - 1);
}

static bool add_label(parser *ps, const char *name)
{
    if (!gpuprof__an_grow((void **)&ps->labels, &ps->cap_label, ps->nlabel,
              sizeof(*ps->labels)))
        return false;
    ps->labels[ps->nlabel++] = (label){name, ps->sect - 1, SASS_NONE};
    ps->pending++;
    return true;
}

/* `//--- .text.NAME ---` starts a code section; any other header ends it. */
static void section(parser *ps, char *s)
{
    end_func(ps);
    ps->pending = 0;
    for (uint32_t k = ps->nlabel; k-- > 0 && ps->labels[k].insn == SASS_NONE;)
        ps->labels[k].insn = DEAD; /* at the end of a section: no code */
    char *t = strstr(s, " .text.");
    ps->in_text = t != NULL;
    if (!t)
        return;
    t += 7;
    t[strcspn(t, " ")] = '\0';
    ps->sect_name = t;
    ps->sect++;
    ps->global = NULL;
    ps->file = NULL;
    ps->line = 0;
}

/* `//## File "f.cu", line 12` (and `inlined at ...`, which is left). */
static void source(parser *ps, char *s)
{
    char *f = s + strlen("//## File \""), *q = strchr(f, '"');
    if (!q)
        return;
    *q = '\0';
    ps->file = f;
    char *l = strstr(q + 1, "line ");
    ps->line = l ? (uint32_t)strtoul(l + 5, NULL, 10) : 0;
}

static bool one_line(parser *ps, char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!strncmp(s, "//----", 6)) {
        section(ps, s);
        return true;
    }
    if (!ps->in_text)
        return true;
    if (!strncmp(s, "//## File \"", 11)) {
        source(ps, s);
        return true;
    }
    if (!strncmp(s, ".global", 7)) {
        char *n = s + 7 + strspn(s + 7, " \t");
        n[strcspn(n, " \t")] = '\0';
        ps->global = n;
        return true;
    }
    if (s[0] == '/' && s[1] == '*' && isxdigit((unsigned char)s[2])) {
        char *e = strstr(s, "*/");
        if (!e)
            return true;
        uint32_t off = (uint32_t)strtoul(s + 2, NULL, 16);
        char *text = e + 2, *enc = strstr(text, "/* 0x");
        if (enc)
            *enc = '\0';
        return add_insn(ps, off, text);
    }
    size_t n = strlen(s);
    if (n > 1 && s[n - 1] == ':' && !strpbrk(s, " \t")) {
        s[n - 1] = '\0';
        if (!strncmp(s, ".L", 2))
            return add_label(ps, s);
        if (!strncmp(s, ".text.", 6))
            return true;
        return new_func(ps, s);
    }
    return true;
}

static int func_cmp(const void *x, const void *y, void *bin)
{
    const gpuprof__sass_bin *b = bin;
    return strcmp(b->func[*(const uint32_t *)x].name,
                  b->func[*(const uint32_t *)y].name);
}

/* The functions sorted by name, for gpuprof__sass_func_find. */
static bool index_funcs(gpuprof__sass_bin *b)
{
    b->by_name = malloc((b->nfunc + 1) * sizeof(*b->by_name));
    if (!b->by_name)
        return false;
    for (uint32_t f = 0; f < b->nfunc; f++)
        b->by_name[f] = f;
    if (b->nfunc > 1)
        qsort_r(b->by_name, b->nfunc, sizeof(*b->by_name), func_cmp, b);
    return true;
}

static int label_cmp(const void *x, const void *y)
{
    return strcmp(((const label *)x)->name, ((const label *)y)->name);
}

/* The instruction label `name` of the section of instruction i names;
 * SASS_NONE. Labels are sorted by name (resolve); a name may recur in
 * other sections. */
static uint32_t label_at(const parser *ps, const char *name, uint32_t i)
{
    const gpuprof__sass_bin *b = ps->b;
    uint32_t lo = 0, hi = ps->nlabel;
    while (lo < hi) { /* the first label not before name */
        uint32_t mid = lo + (hi - lo) / 2;
        if (strcmp(ps->labels[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < ps->nlabel && !strcmp(ps->labels[lo].name, name); lo++)
        if (ps->labels[lo].insn < b->ninsn &&
            !strcmp(b->func[b->insn[ps->labels[lo].insn].func].section,
                    b->func[b->insn[i].func].section))
            return ps->labels[lo].insn;
    return SASS_NONE;
}

/* Targets by name: labels of the same section, functions anywhere; then
 * the targets indirect branches list. */
static bool resolve(parser *ps)
{
    gpuprof__sass_bin *b = ps->b;
    if (ps->nlabel > 1)
        qsort(ps->labels, ps->nlabel, sizeof(*ps->labels), label_cmp);
    for (uint32_t i = 0; i < b->ninsn; i++) {
        const char *t = ps->tgt[i];
        uint32_t at = SASS_NONE;
        if (t && !strncmp(t, ".L", 2)) {
            at = label_at(ps, t, i);
        } else if (t) {
            uint32_t f = gpuprof__sass_func_find(b, t);
            if (f != SASS_NONE && b->func[f].count)
                at = b->func[f].first;
        }
        if (at != SASS_NONE)
            b->insn[i].target = b->insn[at].offset;
    }
    if (ps->njt && !(b->jump = malloc(ps->njt * sizeof(*b->jump))))
        return false;
    for (uint32_t j = 0; j < ps->njt; j++) {
        uint32_t at = label_at(ps, ps->jt[j].name, ps->jt[j].insn);
        if (at != SASS_NONE)
            b->jump[b->njump++] = (sass_jump){ps->jt[j].insn, b->insn[at].offset};
    }
    return true;
}

static void parser_free(parser *ps)
{
    for (uint32_t j = 0; j < ps->njt; j++)
        free((char *)ps->jt[j].name);
    free(ps->jt);
    for (uint32_t i = 0; ps->tgt && i < ps->b->ninsn; i++)
        free(ps->tgt[i]);
    free(ps->tgt);
    free(ps->labels);
}

gpuprof_status gpuprof__sass_parse(char *text, gpuprof__sass_bin **out)
{
    *out = NULL;
    gpuprof__sass_bin *b = calloc(1, sizeof(*b));
    if (!b) {
        free(text);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    b->strings = text;
    parser ps = {.b = b};
    bool ok = true;
    for (char *s = text, *nl; ok && s && *s; s = nl) {
        nl = strchr(s, '\n');
        if (nl)
            *nl++ = '\0';
        ok = one_line(&ps, s);
    }
    end_func(&ps);
    if (ok)
        ok = index_funcs(b) && resolve(&ps);
    parser_free(&ps);
    gpuprof_status st = !ok ? GPUPROF_E_NOMEM
                        : !b->ninsn ? GPUPROF_E_CORRUPT
                                    : GPUPROF_OK;
    for (uint32_t f = 0; st == GPUPROF_OK && f < b->nfunc; f++)
        st = gpuprof__sass_cfg(b, f);
    if (st != GPUPROF_OK) {
        gpuprof__sass_free(b);
        return st == GPUPROF_E_NOMEM ? gpuprof__an_fail(st, "out of memory")
                                     : gpuprof__an_fail(st, "no code listed");
    }
    *out = b;
    return GPUPROF_OK;
}

void gpuprof__sass_free(gpuprof__sass_bin *b)
{
    if (!b)
        return;
    for (uint32_t f = 0; f < b->nfunc; f++) {
        sass_func *fn = &b->func[f];
        for (uint32_t k = 0; k < fn->nblocks; k++) {
            free(fn->blocks[k].succ);
            free(fn->blocks[k].pred);
        }
        for (uint32_t k = 0; k < fn->nloops; k++)
            free(fn->loops[k].in);
        free(fn->blocks);
        free(fn->loops);
    }
    free(b->func);
    free(b->insn);
    free(b->jump);
    free(b->by_name);
    free(b->strings);
    free(b);
}

uint32_t gpuprof__sass_func_find(const gpuprof__sass_bin *b, const char *name)
{
    uint32_t lo = 0, hi = b->by_name ? b->nfunc : 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(b->func[b->by_name[mid]].name, name);
        if (!c)
            return b->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SASS_NONE;
}

uint32_t gpuprof__sass_insn_at(const gpuprof__sass_bin *b, const char *kernel,
                               uint32_t offset)
{
    uint32_t k = gpuprof__sass_func_find(b, kernel);
    if (k == SASS_NONE)
        return SASS_NONE;
    offset += b->func[k].start; /* a device function: from its start */
    for (uint32_t f = 0; f < b->nfunc; f++) {
        const sass_func *fn = &b->func[f];
        if (strcmp(fn->section, b->func[k].section) || offset < fn->start ||
            offset >= fn->end)
            continue;
        uint32_t lo = fn->first, hi = fn->first + fn->count;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (b->insn[mid].offset < offset)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < fn->first + fn->count && b->insn[lo].offset == offset
                   ? lo
                   : SASS_NONE;
    }
    return SASS_NONE;
}
