/*
 * an_sass_insn.c - one SASS instruction as nvdisasm lists it, read back
 * (an_sass.h): the guard (`@!P0`), the opcode with its modifiers, the
 * registers each operand reads or writes, the branch or call target's
 * name, and a class for the CFG and the optimizers.
 *
 * Operands are split at top-level commas. The leading ones an instruction
 * writes: none for stores, branches, barriers; two for the SETP family and
 * PLOP3 (a predicate pair); else the first, plus bare predicates right
 * after it (carry-outs: `IADD3 R4, P0, ...`). Widths: `.64`/`.128` on an
 * operand (`[R6.64]`) or on the opcode (the data of loads, moves and
 * stores), `.WIDE` (a 64-bit result and addend), FP64 opcodes (register
 * pairs), `desc[URn]` (a uniform pair); conversions with `.F64` take the
 * pair on their 64-bit side. RZ, PT, URZ and UPT are constants.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

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
void gpuprof__sass_parse_insn(sass_insn *in, char *text, char *tname,
                              size_t tsize)
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

