/*
 * fasttrace.c - the hook's own call-path walk: x86-64 frame rules cached by
 * return address (see unwind.h, gpuprof__fast_trace).
 *
 * libunwind's unw_backtrace costs about 95 instructions a frame here (its
 * cursor set-up, a per-thread hash, generic checks): 80 % of the GPU API
 * hook. Nearly every frame of a real program follows one of two simple
 * rules at a return address: the caller's frame address (CFA) is the stack
 * pointer or the frame pointer plus a constant, the return address lies at
 * CFA - 8, and the caller's frame pointer is either untouched or saved at
 * CFA plus a constant. We read that rule once per return address from the
 * module's .eh_frame (found through its PT_GNU_EH_FRAME search table, in
 * memory: no file is opened), keep it in a table keyed by the address, and
 * then walk a stack with two or three loads a frame.
 *
 * Anything else -- a signal frame, a rule given by a DWARF expression (PLT
 * stubs, the signal trampoline), a frame with no unwind information, a
 * 64-bit DWARF record, a frame address that does not move up the stack --
 * makes the whole walk return -1 and the caller takes libunwind's instead,
 * so a path is never guessed. The rules of an unloaded library may now be
 * wrong for another at the same address: the module table's refresh after
 * a dlclose (unwind.c) calls gpuprof__fast_trace_flush, as it flushes
 * libunwind's cache.
 *
 * The rule table is lock-free for readers: a slot's rule is stored before
 * its key (release) and neither changes while the table is current; a
 * flush publishes an empty table and keeps the old one allocated (a walk
 * may still read it; flushes follow dlclose, which is rare). Learning a
 * rule takes the loader's lock (dl_iterate_phdr) and a mutex: never in a
 * signal handler, which keeps libunwind (gpuprof__backtrace_in_signal).
 */
#define _GNU_SOURCE
#include "core/unwind.h"

#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomics.h"

#if defined(__x86_64__)
#define FT_SUPPORTED 1
#else
#define FT_SUPPORTED 0
#endif

/* ---- rules ---------------------------------------------------------------
 * One 64-bit word per return address: 0 is "not known"; FT_BAD says the
 * walk must leave it to libunwind. */
#define FT_KNOWN (UINT64_C(1) << 0)
#define FT_BAD (UINT64_C(1) << 1)      /* no simple rule: libunwind's walk */
#define FT_CFA_RBP (UINT64_C(1) << 2)  /* CFA = rbp + off, else rsp + off */
#define FT_RBP_SAVED (UINT64_C(1) << 3) /* caller's rbp at CFA + rbp_off */
#define FT_LAST (UINT64_C(1) << 4)     /* return address undefined: outermost */
#define FT_RBP_OFF(r) ((int16_t)(uint16_t)((r) >> 16))
#define FT_CFA_OFF(r) ((int32_t)(uint32_t)((r) >> 32))
/* A frame larger than this is taken as a sign of a wrong rule. */
#define FT_MAX_FRAME ((uintptr_t)1 << 26)

#define RT_BITS0 12 /* the first table: 4096 slots */
#define RT_BITS_MAX 20
#define RT_PROBES 8

typedef struct slot {
    _Atomic uintptr_t key; /* a return address; 0: free */
    _Atomic uint64_t rule;
} slot;

typedef struct rtab {
    struct rtab *prev; /* older tables: kept, walks may hold them */
    uint32_t bits;
    uint32_t used; /* under mu */
    slot *s;
} rtab;

static slot first_slots[1u << RT_BITS0];
static rtab first_table = {NULL, RT_BITS0, 0, first_slots};
static rtab *_Atomic table = &first_table;
static _Atomic bool disabled; /* a flush found no memory: libunwind only */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t slot_of(const rtab *t, uintptr_t ip)
{
    return (uint32_t)((ip * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->bits));
}

static inline uint64_t rule_find(const rtab *t, uintptr_t ip)
{
    uint32_t h = slot_of(t, ip), mask = (1u << t->bits) - 1;
    for (uint32_t i = 0; i < RT_PROBES; i++) {
        const slot *s = &t->s[(h + i) & mask];
        uintptr_t k = gp_load_acquire(&s->key);
        if (k == ip)
            return gp_load_relaxed(&s->rule);
        if (k == 0)
            return 0;
    }
    return 0;
}

/* Puts (ip, rule) into t (under mu, or t not yet published); false: no
 * room near ip's slot. */
static bool rule_put(rtab *t, uintptr_t ip, uint64_t rule)
{
    uint32_t h = slot_of(t, ip), mask = (1u << t->bits) - 1;
    for (uint32_t i = 0; i < RT_PROBES; i++) {
        slot *s = &t->s[(h + i) & mask];
        uintptr_t k = gp_load_relaxed(&s->key);
        if (k == ip)
            return true;
        if (k == 0) {
            gp_store_relaxed(&s->rule, rule);
            gp_store_release(&s->key, ip);
            t->used++;
            return true;
        }
    }
    return false;
}

/* A table of 2^bits slots holding old's rules (old NULL: empty), or NULL
 * without memory. Under mu. */
static rtab *table_new(const rtab *old, uint32_t bits)
{
    rtab *t = calloc(1, sizeof(*t));
    slot *sl = t ? calloc((size_t)1 << bits, sizeof(*sl)) : NULL;
    if (!sl) {
        free(t);
        return NULL;
    }
    t->bits = bits;
    t->s = sl;
    for (uint32_t i = 0; old && i < (1u << old->bits); i++) {
        uintptr_t k = gp_load_relaxed(&old->s[i].key);
        if (k)
            (void)rule_put(t, k, gp_load_relaxed(&old->s[i].rule));
    }
    return t;
}

/* Keeps `rule` for ip in table t if it is still the current one (a flush
 * meanwhile: the rule may come from a library since closed). A table half
 * full, or with no room near ip's slot, is replaced by one twice its size
 * (up to 2^20 slots; the old one stays allocated for the walks that hold
 * it); past that the rule is learned again next time. */
static void rule_keep(rtab *t, uintptr_t ip, uint64_t rule)
{
    pthread_mutex_lock(&mu);
    if (t == gp_load_relaxed(&table) &&
        (t->used >= (1u << t->bits) / 2 || !rule_put(t, ip, rule)) &&
        t->bits < RT_BITS_MAX) {
        rtab *g = table_new(t, t->bits + 1);
        if (g) {
            (void)rule_put(g, ip, rule);
            g->prev = t;
            gp_store_release(&table, g);
        }
    }
    pthread_mutex_unlock(&mu);
}

void gpuprof__fast_trace_flush(void)
{
    pthread_mutex_lock(&mu);
    rtab *cur = gp_load_relaxed(&table);
    rtab *fresh = table_new(NULL, cur->bits);
    if (fresh) {
        fresh->prev = cur;
        gp_store_release(&table, fresh);
    } else {
        gp_store_release(&disabled, true);
    }
    pthread_mutex_unlock(&mu);
}

/* ---- reading .eh_frame ---------------------------------------------------
 * The subset of DWARF call-frame information (DWARF 4 §6.4, and the LSB's
 * .eh_frame/.eh_frame_hdr encodings) that GCC and Clang emit for ordinary
 * x86-64 code. */
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

/* The rule at return address ip, read from its module and kept. */
__attribute__((noinline)) static uint64_t rule_learn(rtab *t, uintptr_t ip)
{
    lookup lk = {ip - 1, NULL, false}; /* the call, not what follows it */
    dl_iterate_phdr(find_module, &lk);
    const uint8_t *fde = lk.hdr ? fde_find(lk.hdr, ip - 1) : NULL;
    uint64_t rule = fde ? fde_rule(fde, ip - 1, (uintptr_t)lk.hdr) : 0;
    if (!rule)
        rule = FT_KNOWN | FT_BAD; /* no unwind information */
    rule_keep(t, ip, rule);
    return rule;
}

/* ---- the walk ------------------------------------------------------------
 * The walk is a function of its starting state (return address, stack and
 * frame pointers), the rules, and the stack words it reads: each frame's
 * return-address slot (CFA - 8) and, where a rule says so, its saved frame
 * pointer. Each thread remembers its last walk (the memo: every frame's
 * state and rule, outermost first). A new walk that reaches a frame whose
 * state equals a remembered one, under the same rule table, needs not walk
 * on: when every word the remembered walk read beyond that frame still
 * holds what it read, the rest is the same, and its return addresses are
 * copied. Each such word is one load and a compare, against a hash lookup
 * and the loads of a step: a loop launching from one call site, or from a
 * few call sites of one function, walks only the frames that differ. One
 * word that differs (the thread returned past that frame and called again)
 * and the walk goes on step by step, and is remembered instead. */
typedef struct ft_state {
    uintptr_t ip, rsp, rbp;
    uint64_t rule;
} ft_state;

typedef struct ft_memo {
    struct ft_memo *next, **pprev; /* every thread's (memo_mu) */
    const rtab *table; /* the rules it was walked with */
    int n;             /* frames; e[0] the outermost, e[n - 1] the innermost */
    uintptr_t end_cfa; /* the outermost read a 0 return address at end_cfa -
                          8 (0: its rule said it is the last) */
    ft_state e[GP_MAX_FRAMES];
} ft_memo;

static __thread ft_memo *memo __attribute__((tls_model("initial-exec")));
static pthread_key_t memo_key; /* frees a thread's memo at its exit */
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static bool memo_key_ok;
/* Every memo, so that the ones of threads alive at the process's exit (the
 * main thread's: its key destructors never run) are not leaks. */
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static ft_memo *memos;

static void memo_free(void *arg)
{
    ft_memo *m = arg;
    memo = NULL;
    pthread_mutex_lock(&memo_mu);
    *m->pprev = m->next;
    if (m->next)
        m->next->pprev = m->pprev;
    pthread_mutex_unlock(&memo_mu);
    free(m);
}

static void memo_key_make(void)
{
    memo_key_ok = pthread_key_create(&memo_key, memo_free) == 0;
}

/* The calling thread's memo, made on its first walk (NULL: none). */
__attribute__((noinline, cold)) static ft_memo *memo_new(void)
{
    pthread_once(&memo_once, memo_key_make);
    ft_memo *m = memo_key_ok ? calloc(1, sizeof(*m)) : NULL;
    if (m && pthread_setspecific(memo_key, m) != 0) {
        free(m);
        m = NULL;
    }
    if (m) {
        pthread_mutex_lock(&memo_mu);
        m->next = memos;
        m->pprev = &memos;
        if (memos)
            memos->pprev = &m->next;
        memos = m;
        pthread_mutex_unlock(&memo_mu);
    }
    return memo = m;
}

/* Do the words the memo's walk read beyond frame j (its frames j-1 .. 0,
 * and the end) still hold what it read? */
__attribute__((no_sanitize_address)) static bool
memo_holds(const ft_memo *m, int j)
{
    for (int k = j; k > 0; k--) {
        const ft_state *in = &m->e[k], *out = &m->e[k - 1];
        uintptr_t cfa = out->rsp;
        if (*(const uintptr_t *)(cfa - 8) != out->ip ||
            ((in->rule & FT_RBP_SAVED) &&
             *(const uintptr_t *)(cfa + FT_RBP_OFF(in->rule)) != out->rbp))
            return false;
    }
    return !m->end_cfa || *(const uintptr_t *)(m->end_cfa - 8) == 0;
}

/* Frame 0 is our caller's: this function keeps a frame pointer
 * (__builtin_frame_address), so its caller's frame pointer and return
 * address sit at fp[0] and fp[1], and the caller's stack pointer after the
 * return is fp + 2. Loads of the stack's saved words are not instrumented:
 * they read other frames' return-address and register slots, which the
 * address sanitizer has no reason to own. */
__attribute__((noinline, no_sanitize_address)) int
gpuprof__fast_trace(void **buf, int max)
{
    if (!FT_SUPPORTED || gp_load_relaxed(&disabled) || max <= 0)
        return -1;
    void **fp = __builtin_frame_address(0);
    uintptr_t rbp = (uintptr_t)fp[0], rsp = (uintptr_t)(fp + 2);
    uintptr_t ip = (uintptr_t)fp[1];
    rtab *t = gp_load_acquire(&table);
    /* The memo, unless this walk interrupted another on this thread (a
     * signal handler's hook: gpuprof__unwinding counts the nesting). */
    ft_memo *m = gpuprof__unwinding == 1 ? memo : NULL;
    if (__builtin_expect(!m, 0) && gpuprof__unwinding == 1)
        m = memo_new();
    int j = m && m->table == t ? m->n - 1 : -1;
    ft_state st[GP_MAX_FRAMES];
    int n = 0;
    uintptr_t end_cfa = 0;
    if (max > GP_MAX_FRAMES)
        max = GP_MAX_FRAMES;
    while (n < max && ip) {
        if (j >= 0) { /* a frame of the last walk at this stack address? */
            while (j >= 0 && m->e[j].rsp < rsp)
                j--;
            if (j >= 0 && m->e[j].rsp == rsp) {
                if (m->e[j].ip == ip && m->e[j].rbp == rbp &&
                    n + j + 1 <= max && memo_holds(m, j)) {
                    for (int k = j; k >= 0; k--)
                        buf[n + j - k] = (void *)m->e[k].ip;
                    for (int k = 0; k < n; k++) /* this walk's own frames */
                        m->e[j + n - k] = st[k];
                    m->n = j + 1 + n;
                    return j + 1 + n;
                }
                j = -1; /* it differs: walk on, remember this walk */
            }
        }
        buf[n] = (void *)ip;
        uint64_t r = rule_find(t, ip);
        if (__builtin_expect(!r, 0))
            r = rule_learn(t, ip);
        st[n] = (ft_state){ip, rsp, rbp, r};
        n++;
        if (r & (FT_BAD | FT_LAST)) {
            if (r & FT_BAD)
                return -1;
            break;
        }
        uintptr_t cfa = (r & FT_CFA_RBP ? rbp : rsp) + FT_CFA_OFF(r);
        if (cfa <= rsp || cfa - rsp > FT_MAX_FRAME || (cfa & 7))
            return -1;
        ip = *(const uintptr_t *)(cfa - 8);
        if (r & FT_RBP_SAVED)
            rbp = *(const uintptr_t *)(cfa + FT_RBP_OFF(r));
        rsp = cfa;
        if (!ip)
            end_cfa = cfa;
    }
    if (m) { /* remembered whole, or (cut at max) not at all */
        m->table = n < max || !ip ? t : NULL;
        m->n = n;
        m->end_cfa = end_cfa;
        for (int k = 0; k < n; k++)
            m->e[n - 1 - k] = st[k];
    }
    return n;
}
