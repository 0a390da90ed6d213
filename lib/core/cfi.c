/*
 * cfi.c - the frame rule of a return address from its module's .eh_frame
 * (cfi.h), the subset of DWARF call-frame information (DWARF 4 §6.4, and
 * the LSB's .eh_frame/.eh_frame_hdr encodings) that GCC and Clang emit for
 * ordinary x86-64 code. Everything is read in memory (the loaded
 * PT_GNU_EH_FRAME segment and the .eh_frame it indexes): no file is
 * opened. Anything outside that subset gives FT_BAD, never a guess.
 */
#define _GNU_SOURCE
#include "core/cfi.h"

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

enum {
    PE_OMIT = 0xff, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
    PE_UDATA8 = 0x04, PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b,
    PE_SDATA8 = 0x0c, PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80,
};
enum { R_RBP = 6, R_RSP = 7, R_RA = 16 };

typedef struct rd {
    const uint8_t *p, *end;
    bool bad;
} rd;

static uint64_t uleb(rd *r)
{
    uint64_t v = 0;
    for (unsigned sh = 0; r->p < r->end; sh += 7) {
        uint8_t b = *r->p++;
        if (sh < 64)
            v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static int64_t sleb(rd *r)
{
    uint64_t v = 0;
    unsigned sh = 0;
    uint8_t b = 0x80;
    while (r->p < r->end && (b & 0x80)) {
        b = *r->p++;
        if (sh < 64)
            v |= (uint64_t)(b & 0x7f) << sh;
        sh += 7;
    }
    if (b & 0x80)
        r->bad = true;
    else if (sh < 64 && (b & 0x40))
        v |= ~UINT64_C(0) << sh;
    return (int64_t)v;
}

static uint64_t fixed(rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, n); /* little-endian */
    r->p += n;
    return v;
}

/* A pointer in encoding `enc`; `data` is the base of DW_EH_PE_datarel (the
 * search table's start). Indirect pointers are not followed (only a
 * personality routine's, which the walk never needs). */
static uintptr_t encoded(rd *r, uint8_t enc, uintptr_t data)
{
    uintptr_t at = (uintptr_t)r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = fixed(r, 8); break;
    case PE_ULEB: v = uleb(r); break;
    case PE_UDATA2: v = fixed(r, 2); break;
    case PE_UDATA4: v = fixed(r, 4); break;
    case PE_UDATA8: case PE_SDATA8: v = fixed(r, 8); break;
    case PE_SLEB: v = (uint64_t)sleb(r); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
    default: r->bad = true; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case PE_PCREL: v += at; break;
    case PE_DATAREL: v += data; break;
    default: r->bad = true;
    }
    return (uintptr_t)v;
}

/* The rules of the three registers the walk follows, and the CFA's. */
typedef enum { RU_SAME, RU_UNDEF, RU_OFFSET, RU_OTHER } rule_kind;
typedef struct regs {
    int cfa_reg; /* -1: a DWARF expression */
    int64_t cfa_off;
    rule_kind kind[2]; /* [0] rbp, [1] the return address */
    int64_t off[2];
} regs;

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    bool aug_z, signal;
    const uint8_t *ins, *ins_end;
} cie;

static bool cie_read(const uint8_t *p, cie *c)
{
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu)
        return false; /* a terminator, or 64-bit DWARF */
    rd r = {p + 4, p + 4 + len, false};
    if (fixed(&r, 4) != 0)
        return false; /* not a CIE */
    uint8_t version = (uint8_t)fixed(&r, 1);
    const char *aug = (const char *)r.p;
    size_t alen = strnlen(aug, (size_t)(r.end - r.p));
    r.p += alen + 1;
    if (strstr(aug, "eh") || r.p > r.end)
        return false;
    c->code_align = uleb(&r);
    c->data_align = sleb(&r);
    if (version != 1 && version != 3)
        return false;
    if (version == 1)
        (void)fixed(&r, 1);
    else
        (void)uleb(&r);
    c->fde_enc = 0;
    c->aug_z = aug[0] == 'z';
    c->signal = false;
    const uint8_t *aug_end = NULL;
    if (c->aug_z) {
        uint64_t n = uleb(&r);
        aug_end = r.p + n;
    }
    for (size_t i = c->aug_z; i < alen && !r.bad; i++) {
        if (aug[i] == 'R')
            c->fde_enc = (uint8_t)fixed(&r, 1);
        else if (aug[i] == 'L')
            (void)fixed(&r, 1);
        else if (aug[i] == 'P')
            (void)encoded(&r, (uint8_t)fixed(&r, 1) & 0x0f, 0); /* skipped */
        else if (aug[i] == 'S')
            c->signal = true;
        else if (!c->aug_z)
            return false; /* an augmentation we cannot skip */
    }
    if (aug_end)
        r.p = aug_end;
    c->ins = r.p;
    c->ins_end = r.end;
    return !r.bad && r.p <= r.end;
}

static void set_reg(regs *s, uint64_t reg, rule_kind k, int64_t off)
{
    int i = reg == R_RBP ? 0 : reg == R_RA ? 1 : -1;
    if (i >= 0) {
        s->kind[i] = k;
        s->off[i] = off;
    } else if (reg == R_RSP && k != RU_SAME) {
        s->cfa_reg = -1; /* rsp restored otherwise than as the CFA */
    }
}

static void restore_reg(regs *s, const regs *init, uint64_t reg)
{
    int i = reg == R_RBP ? 0 : reg == R_RA ? 1 : -1;
    if (i >= 0) {
        s->kind[i] = init->kind[i];
        s->off[i] = init->off[i];
    }
}

#define STATE_DEPTH 8

/* Runs the instructions in [p, end) up to the row of `pc` (loc is where
 * they start; NULL init: the CIE's own). false: an instruction the walk
 * cannot follow. */
static bool run_cfi(const uint8_t *p, const uint8_t *end, const cie *c,
                    uintptr_t loc, uintptr_t pc, regs *s, const regs *init)
{
    regs stack[STATE_DEPTH];
    int depth = 0;
    rd r = {p, end, false};
    while (r.p < r.end && !r.bad) {
        uint8_t op = *r.p++;
        uint64_t reg, delta = 0;
        switch (op & 0xc0) {
        case 0x40: delta = op & 0x3f; goto advance;
        case 0x80:
            set_reg(s, op & 0x3f, RU_OFFSET, (int64_t)uleb(&r) * c->data_align);
            continue;
        case 0xc0:
            if (init)
                restore_reg(s, init, op & 0x3f);
            continue;
        }
        switch (op) {
        case 0x00: continue; /* nop */
        case 0x02: delta = fixed(&r, 1); goto advance;
        case 0x03: delta = fixed(&r, 2); goto advance;
        case 0x04: delta = fixed(&r, 4); goto advance;
        case 0x05: reg = uleb(&r);
            set_reg(s, reg, RU_OFFSET, (int64_t)uleb(&r) * c->data_align);
            continue;
        case 0x06: reg = uleb(&r);
            if (init)
                restore_reg(s, init, reg);
            continue;
        case 0x07: set_reg(s, uleb(&r), RU_UNDEF, 0); continue;
        case 0x08: set_reg(s, uleb(&r), RU_SAME, 0); continue;
        case 0x09: reg = uleb(&r); (void)uleb(&r);
            set_reg(s, reg, RU_OTHER, 0);
            continue;
        case 0x0a:
            if (depth == STATE_DEPTH)
                return false;
            stack[depth++] = *s;
            continue;
        case 0x0b:
            if (depth == 0)
                return false;
            *s = stack[--depth];
            continue;
        case 0x0c: s->cfa_reg = (int)uleb(&r); s->cfa_off = (int64_t)uleb(&r);
            continue;
        case 0x0d: s->cfa_reg = (int)uleb(&r); continue;
        case 0x0e: s->cfa_off = (int64_t)uleb(&r); continue;
        case 0x0f: s->cfa_reg = -1; r.p += uleb(&r); continue;
        case 0x10: case 0x16: reg = uleb(&r);
            set_reg(s, reg, RU_OTHER, 0);
            r.p += uleb(&r);
            continue;
        case 0x11: reg = uleb(&r);
            set_reg(s, reg, RU_OFFSET, sleb(&r) * c->data_align);
            continue;
        case 0x12: s->cfa_reg = (int)uleb(&r);
            s->cfa_off = sleb(&r) * c->data_align;
            continue;
        case 0x13: s->cfa_off = sleb(&r) * c->data_align; continue;
        case 0x14: case 0x15: reg = uleb(&r); (void)uleb(&r);
            set_reg(s, reg, RU_OTHER, 0);
            continue;
        case 0x2e: (void)uleb(&r); continue; /* GNU_args_size */
        case 0x2f: reg = uleb(&r);
            set_reg(s, reg, RU_OFFSET, -(int64_t)uleb(&r) * c->data_align);
            continue;
        default: return false; /* set_loc and the unknown */
        }
    advance:
        loc += delta * c->code_align;
        if (loc > pc)
            return true;
    }
    return !r.bad;
}

/* The rule word of the row of `pc` in the FDE at `fde`; FT_BAD when the
 * walk cannot follow it, 0 when pc is not in it. */
static uint64_t fde_rule(const uint8_t *fde, uintptr_t pc, uintptr_t data)
{
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (len == 0 || len == 0xffffffffu || cie_off == 0)
        return FT_KNOWN | FT_BAD;
    cie c;
    if (!cie_read(fde + 4 - cie_off, &c) || c.signal)
        return FT_KNOWN | FT_BAD;
    rd r = {fde + 8, fde + 4 + len, false};
    uintptr_t start = encoded(&r, c.fde_enc, data);
    uintptr_t range = encoded(&r, c.fde_enc & 0x0f, 0);
    if (c.aug_z)
        r.p += uleb(&r);
    if (r.bad || r.p > r.end || pc < start || pc - start >= range)
        return 0;
    regs init = {-1, 0, {RU_SAME, RU_SAME}, {0, 0}};
    if (!run_cfi(c.ins, c.ins_end, &c, 0, UINTPTR_MAX, &init, NULL))
        return FT_KNOWN | FT_BAD;
    regs s = init;
    if (!run_cfi(r.p, r.end, &c, start, pc, &s, &init))
        return FT_KNOWN | FT_BAD;
    uint64_t w = FT_KNOWN;
    if ((s.cfa_reg != R_RSP && s.cfa_reg != R_RBP) || s.cfa_off < INT32_MIN ||
        s.cfa_off > INT32_MAX)
        return FT_KNOWN | FT_BAD;
    if (s.kind[1] == RU_UNDEF)
        w |= FT_LAST;
    else if (s.kind[1] != RU_OFFSET || s.off[1] != -8)
        return FT_KNOWN | FT_BAD;
    if (s.kind[0] == RU_OFFSET && s.off[0] >= INT16_MIN && s.off[0] <= INT16_MAX)
        w |= FT_RBP_SAVED | (uint64_t)(uint16_t)(int16_t)s.off[0] << 16;
    else if (s.kind[0] != RU_SAME)
        return FT_KNOWN | FT_BAD;
    if (s.cfa_reg == R_RBP)
        w |= FT_CFA_RBP;
    return w | (uint64_t)(uint32_t)(int32_t)s.cfa_off << 32;
}

/* The FDE covering pc through a module's .eh_frame_hdr search table
 * (sorted (start, FDE) pairs, datarel sdata4: what GNU ld, gold and lld
 * write); NULL when it has none for pc. */
static const uint8_t *fde_find(const uint8_t *hdr, uintptr_t pc)
{
    if (hdr[0] != 1 || hdr[3] != (PE_DATAREL | PE_SDATA4) ||
        hdr[2] == PE_OMIT)
        return NULL;
    rd r = {hdr + 4, hdr + 4 + 16, false};
    (void)encoded(&r, hdr[1], (uintptr_t)hdr);
    uint64_t count = encoded(&r, hdr[2], (uintptr_t)hdr);
    if (r.bad || count == 0)
        return NULL;
    const int32_t *tab = (const int32_t *)(const void *)r.p;
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) { /* the last entry starting at or before pc */
        uint64_t mid = (lo + hi) / 2;
        if ((uintptr_t)hdr + (intptr_t)tab[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)hdr + (intptr_t)tab[2 * lo] > pc)
        return NULL;
    return hdr + (intptr_t)tab[2 * lo + 1];
}

typedef struct lookup {
    uintptr_t pc;
    const uint8_t *hdr; /* the module's .eh_frame_hdr */
    bool found;         /* pc is in a module */
} lookup;

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    lookup *lk = arg;
    const uint8_t *hdr = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && lk->pc >= lo && lk->pc < lo + ph->p_memsz)
            lk->found = true;
        else if (ph->p_type == PT_GNU_EH_FRAME)
            hdr = (const uint8_t *)lo;
    }
    if (lk->found)
        lk->hdr = hdr;
    return lk->found;
}

uint64_t gpuprof__cfi_rule(uintptr_t ip)
{
    lookup lk = {ip - 1, NULL, false}; /* the call, not what follows it */
    dl_iterate_phdr(find_module, &lk);
    const uint8_t *fde = lk.hdr ? fde_find(lk.hdr, ip - 1) : NULL;
    uint64_t rule = fde ? fde_rule(fde, ip - 1, (uintptr_t)lk.hdr) : 0;
    return rule ? rule : FT_KNOWN | FT_BAD; /* no unwind information */
}
