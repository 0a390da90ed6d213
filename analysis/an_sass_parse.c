/*
 * an_sass_parse.c - NVIDIA GPU code as nvdisasm lists it, turned into
 * functions and instructions (an_sass.h).
 *
 * `nvdisasm -g -gi -hex CUBIN` prints every code section (.text.<kernel>)
 * with its symbols (a kernel, then the device functions kept out of line
 * in its section, `$<kernel>$<name>`), labels (`.L_x_N:`, every branch and
 * BSSY target), source lines (`//## File "f.cu", line N`, with -gi also
 * `inlined at`), and one line per instruction: its offset in a comment,
 * `@!P0 LDG.E R0, desc[UR36][R6.64] ;`, and its encoding. We read the text back:
 * the guard, the opcode with its modifiers, the registers each operand
 * reads or writes (widths from .64/.128/.WIDE and FP64 opcodes), the
 * branch or call target, and a class for the CFG and the optimizers.
 * The listing is parsed in place; its lines are the instructions' text.
 * Then each function gets its CFG, loops (an_sass_cfg.c). No nvdisasm:
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

#include "an_internal.h"
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

/* `nvdisasm -g -gi -hex cubin`'s standard output, or NULL (message set). */
static char *run_nvdisasm(const char *tool, const char *cubin)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "pipe: %s", strerror(errno)),
               NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)tool, "-g", "-gi", "-hex", (char *)cubin, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
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
        gpuprof__an_fail(GPUPROF_E_IO, "%s -g -gi -hex %s failed (status %d)",
                         tool, cubin, status);
        return NULL;
    }
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

/* ---- registers -------------------------------------------------------------- */
const char *gpuprof__sass_reg_name(uint32_t r, char *buf, size_t size)
{
    if (r < SASS_P0)
        snprintf(buf, size, "R%u", r);
    else if (r < SASS_UR0)
        snprintf(buf, size, "P%u", r - SASS_P0);
    else if (r < SASS_UP0)
        snprintf(buf, size, "UR%u", r - SASS_UR0);
    else if (r < SASS_B0)
        snprintf(buf, size, "UP%u", r - SASS_UP0);
    else
        snprintf(buf, size, "B%u", r - SASS_B0);
    return buf;
}

/* The register named at s (length n), SASS_NONE for constants and other
 * words. */
static uint32_t reg_of(const char *s, size_t n)
{
    size_t l = 0;
    while (l < n && isupper((unsigned char)s[l]))
        l++;
    if (l == n || l == 0)
        return SASS_NONE;
    unsigned v = 0;
    for (size_t i = l; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return SASS_NONE;
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > 255)
            return SASS_NONE;
    }
    if (l == 1 && s[0] == 'R' && v < 255)
        return SASS_R0 + v;
    if (l == 1 && s[0] == 'P' && v < 7)
        return SASS_P0 + v;
    if (l == 2 && s[0] == 'U' && s[1] == 'R' && v < 63)
        return SASS_UR0 + v;
    if (l == 2 && s[0] == 'U' && s[1] == 'P' && v < 7)
        return SASS_UP0 + v;
    if (l == 1 && s[0] == 'B' && v < 16)
        return SASS_B0 + v;
    return SASS_NONE;
}

bool gpuprof__sass_reads(const sass_insn *i, uint32_t r)
{
    for (uint8_t k = 0; k < i->nuse; k++)
        if (i->use[k] == r)
            return true;
    return false;
}

bool gpuprof__sass_writes(const sass_insn *i, uint32_t r)
{
    for (uint8_t k = 0; k < i->ndef; k++)
        if (i->def[k] == r)
            return true;
    return false;
}

static void add_reg(sass_insn *in, uint32_t r, unsigned width, bool def)
{
    for (unsigned w = 0; w < width; w++) {
        uint32_t x = r + w;
        if (r < SASS_P0 && x >= 255)
            break; /* past R254: RZ */
        if (def && in->ndef < 8 && !gpuprof__sass_writes(in, x))
            in->def[in->ndef++] = (uint16_t)x;
        else if (!def && in->nuse < 24 && !gpuprof__sass_reads(in, x))
            in->use[in->nuse++] = (uint16_t)x;
    }
}

/* Every register named in operand [s, e): its width from a .64/.128
 * suffix (addresses, `desc[URn]` is a pair), else `width`. Returns how
 * many registers it named. */
static unsigned scan_operand(sass_insn *in, const char *s, const char *e,
                             unsigned width, bool def)
{
    unsigned found = 0;
    for (const char *p = s; p < e;) {
        if (!isupper((unsigned char)*p) ||
            (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            p++;
            continue;
        }
        const char *q = p;
        while (q < e && isalnum((unsigned char)*q))
            q++;
        uint32_t r = (q < e && *q == '_') ? SASS_NONE : reg_of(p, (size_t)(q - p));
        if (r != SASS_NONE) {
            unsigned w = width;
            if (q + 3 <= e && !strncmp(q, ".64", 3))
                w = 2;
            else if (q + 4 <= e && !strncmp(q, ".128", 4))
                w = 4;
            if (p >= s + 5 && !strncmp(p - 5, "desc[", 5))
                w = 2;
            if ((r >= SASS_P0 && r < SASS_UR0) || r >= SASS_UP0)
                w = 1; /* predicates and barriers are single */
            add_reg(in, r, w, def);
            found++;
        }
        p = q;
    }
    return found;
}

/* ---- instructions ------------------------------------------------------- */
static const char *const CLASS_OPS[][12] = {
    [SC_GLOBAL] = {"LDG", "STG", "ATOMG", "RED", "REDG", "LDGSTS", NULL},
    [SC_LOCAL] = {"LDL", "STL", NULL},
    [SC_SHARED] = {"LDS", "STS", "ATOMS", "LDSM", "STSM", NULL},
    [SC_GENERIC] = {"LD", "ST", "ATOM", "REDAS", NULL},
    [SC_CONST] = {"LDC", NULL},
    [SC_TEX] = {"TEX", "TLD", "TLD4", "TXQ", "TMML", "TXD", "SULD", "SUST",
                "SUATOM", "SURED", NULL},
    [SC_SYNC] = {"BAR", "MEMBAR", "DEPBAR", "WARPSYNC", "BSYNC", "SYNCS",
                 "ERRBAR", "LDGDEPBAR", "CCTL", "ARRIVES", NULL},
    [SC_BRANCH] = {"BRA", "BRX", "JMP", "JMX", "BREAK", NULL},
    [SC_CALL] = {"CALL", NULL},
    [SC_RET] = {"RET", NULL},
    [SC_EXIT] = {"EXIT", "KILL", NULL},
    [SC_SFU] = {"MUFU", NULL},
    [SC_SPECIAL] = {"S2R", "CS2R", "S2UR", NULL},
    [SC_FP64] = {"DFMA", "DADD", "DMUL", "DMNMX", "DSETP", "DSET", "F2F",
                 "I2F", "F2I", NULL},
};

static uint8_t classify(const char *base, const char *op)
{
    for (unsigned c = 1; c < sizeof(CLASS_OPS) / sizeof(CLASS_OPS[0]); c++)
        for (unsigned k = 0; CLASS_OPS[c][k]; k++)
            if (!strcmp(base, CLASS_OPS[c][k]))
                return (c == SC_FP64 && base[0] != 'D' && !strstr(op, ".F64"))
                           ? SC_ALU
                           : (uint8_t)c;
    return SC_ALU;
}

/* Instructions whose operands are all read (stores, branches, barriers). */
static bool no_defs(const char *base, uint8_t cls)
{
    static const char *const ops[] = {"ST",    "STG",  "STL",   "STS",
                                      "STSM",  "RED",  "REDG",  "REDAS",
                                      "BAR",   "NOP",  "MEMBAR", "DEPBAR",
                                      "ERRBAR", "CCTL", "YIELD", "BPT",
                                      "BSYNC", "WARPSYNC", "LDGSTS",
                                      "LDGDEPBAR", "SUST", "SURED", "ARRIVES",
                                      NULL};
    if (cls == SC_BRANCH || cls == SC_CALL || cls == SC_RET || cls == SC_EXIT)
        return true;
    for (unsigned k = 0; ops[k]; k++)
        if (!strcmp(base, ops[k]))
            return true;
    return false;
}

/* Splits the operands at top-level commas; returns how many (at most
 * max). The branch target `(label) is cut off into *target. */
static unsigned split(char *ops, char **start, char **end, unsigned max,
                      char **target)
{
    *target = NULL;
    char *t = strchr(ops, '`');
    if (t) {
        char *l = strchr(t, '('), *r = l ? strchr(l, ')') : NULL;
        if (l && r) {
            *r = '\0';
            *target = l + 1;
        }
        *t = '\0';
    }
    unsigned n = 0;
    char *p = ops;
    while (*p && n < max) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        int depth = 0;
        char *q = p;
        for (; *q && (depth || *q != ','); q++)
            depth += (*q == '[') - (*q == ']');
        start[n] = p;
        end[n] = q;
        while (end[n] > p && end[n][-1] == ' ')
            end[n]--;
        n++;
        p = q;
    }
    return n;
}

/* Width of the data an opcode moves: .64 / .128 modifiers. */
static unsigned op_width(const char *op)
{
    return strstr(op, ".128") ? 4 : strstr(op, ".64") ? 2 : 1;
}

static bool bare_pred(const char *s, const char *e)
{
    uint32_t r = reg_of(s, (size_t)(e - s));
    return (r >= SASS_P0 && r < SASS_UR0) || (e - s == 2 && !strncmp(s, "PT", 2));
}

/* How many leading operands an instruction writes. */
static unsigned def_count(const char *base, uint8_t cls, char **s, char **e,
                          unsigned n)
{
    if (no_defs(base, cls) || n == 0)
        return 0;
    size_t bl = strlen(base);
    if ((bl >= 4 && !strcmp(base + bl - 4, "SETP")) || strstr(base, "PLOP3"))
        return n < 2 ? n : 2;
    unsigned d = 1;
    if (!strncmp(base, "ATOM", 4) && bare_pred(s[0], e[0]))
        d = 2;
    while (d < n && bare_pred(s[d], e[d]))
        d++;
    return d;
}

static void operands(sass_insn *in, const char *base, char *ops, char **target)
{
    char *s[16], *e[16];
    unsigned n = split(ops, s, e, 16, target);
    unsigned d = def_count(base, in->cls, s, e, n), w = op_width(in->op);
    bool fp64 = in->cls == SC_FP64 && base[0] == 'D', wide = strstr(in->op,
                                                                 ".WIDE");
    for (unsigned k = 0; k < n; k++) {
        unsigned width = fp64 ? 2 : 1;
        if (k == 0 && k < d && (w > 1 || wide))
            width = wide ? 2 : w;
        if (wide && k == 3)
            width = 2;
        if (!d && k == n - 1 && k > 0 && in->cls != SC_BRANCH)
            width = w; /* a store's data */
        if (in->cls == SC_FP64 && base[0] != 'D') /* F2F.F64.F32 ... */
            width = (k < d) == (strncmp(in->op + strlen(base), ".F64", 4) == 0 &&
                                strcmp(base, "F2I") != 0)
                        ? 2
                        : 1;
        if (k < d)
            scan_operand(in, s[k], e[k], width, true);
        else if (scan_operand(in, s[k], e[k], width, false) &&
                 (in->cls >= SC_GLOBAL && in->cls <= SC_TEX) &&
                 memchr(s[k], '[', (size_t)(e[k] - s[k])) &&
                 in->cls != SC_CONST)
            in->indirect = true;
        /* BMOV.32.CLEAR Rn, Bm: the barrier is cleared (written) too */
        if (k == 1 && !strcmp(base, "BMOV") && strstr(in->op, ".CLEAR"))
            scan_operand(in, s[k], e[k], 1, true);
    }
}

/* Parses "[@[!]P] OPCODE operands" into `in`; the target's name (a label
 * or function) into tname ("" when none). */
static void parse_insn(sass_insn *in, char *text, char *tname, size_t tsize)
{
    while (*text == ' ')
        text++;
    char *end = text + strlen(text);
    while (end > text && (end[-1] == ' ' || end[-1] == ';'))
        *--end = '\0';
    in->text = text;
    in->pred = -1;
    in->target = SASS_NONE;
    char *p = text;
    if (*p == '@') {
        p++;
        in->pred_neg = *p == '!';
        p += in->pred_neg;
        char *q = p;
        while (isalnum((unsigned char)*q))
            q++;
        uint32_t r = reg_of(p, (size_t)(q - p));
        if (r != SASS_NONE)
            in->pred = (int16_t)r, in->use[in->nuse++] = (uint16_t)r;
        p = q;
        while (*p == ' ')
            p++;
    }
    size_t ol = strcspn(p, " ");
    snprintf(in->op, sizeof(in->op), "%.*s", (int)ol, p);
    char base[32];
    snprintf(base, sizeof(base), "%.*s", (int)strcspn(in->op, "."), in->op);
    in->cls = classify(base, in->op);
    char ops[512], *target;
    snprintf(ops, sizeof(ops), "%s", p + ol);
    operands(in, base, ops, &target);
    snprintf(tname, tsize, "%s", target ? target : "");
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

static bool grow(void **p, uint32_t *cap, uint32_t n, size_t size)
{
    if (n < *cap)
        return true;
    uint32_t nc = *cap ? *cap * 2 : 256;
    void *np = realloc(*p, (size_t)nc * size);
    if (!np)
        return false;
    *p = np;
    *cap = nc;
    return true;
}

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
    if (!grow((void **)&b->func, &ps->cap_func, b->nfunc, sizeof(*b->func)))
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
        if (!grow((void **)&ps->jt, &ps->cap_jt, ps->njt, sizeof(*ps->jt)))
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
    if (!grow((void **)&b->insn, &ps->cap_insn, b->ninsn, sizeof(*b->insn)))
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
    parse_insn(in, text, tname, sizeof(tname));
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
    if (!grow((void **)&ps->labels, &ps->cap_label, ps->nlabel,
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
