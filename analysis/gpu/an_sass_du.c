/*
 * an_sass_du.c - register and predicate def-use of one GPU function
 * (an_sass.h): reaching definitions over its CFG.
 *
 * Every (instruction, register written) is a definition. A block's GEN is
 * its last unpredicated definition of each register plus every
 * predicated one after it; KILL is every other definition of a register
 * the block writes unpredicated. A predicated write kills nothing: when
 * its guard is false the earlier value survives, so the backward slice
 * of seed 003 §3.2.1 goes on past it "until the union of predicates
 * covers all conditions" (here: until an unpredicated write). IN and OUT
 * are bit sets over the definitions, iterated to a fixed point. The
 * definitions reaching a use are then IN of its block, walked forward to
 * the use. Calls define nothing here (the analysis is intra-procedural);
 * a value a callee returns has no definition in its caller.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "an_sass.h"

typedef struct def {
    uint32_t insn;
    uint16_t reg;
} def;

struct gpuprof__sass_du {
    const gpuprof__sass_bin *b;
    const sass_func *f;
    def *d;
    uint32_t nd, words;  /* definitions; 64-bit words per set */
    uint32_t *by_reg;    /* definitions sorted by register ... */
    uint32_t reg_at[SASS_NREG + 1]; /* ... each register's slice */
    uint64_t *in;        /* nblocks sets */
};

#define BIT(s, k) ((s)[(k) >> 6] >> ((k)&63) & 1u)
#define SET(s, k) ((s)[(k) >> 6] |= 1ull << ((k)&63))
#define CLR(s, k) ((s)[(k) >> 6] &= ~(1ull << ((k)&63)))

static gpuprof_status collect(gpuprof__sass_du *du)
{
    const sass_func *f = du->f;
    const gpuprof__sass_bin *b = du->b;
    uint32_t n = 0;
    for (uint32_t i = f->first; i < f->first + f->count; i++)
        n += b->insn[i].block != SASS_NONE ? b->insn[i].ndef : 0;
    du->d = malloc((n ? n : 1) * sizeof(*du->d));
    du->by_reg = malloc((n ? n : 1) * sizeof(*du->by_reg));
    if (!du->d || !du->by_reg)
        return GPUPROF_E_NOMEM;
    for (uint32_t i = f->first; i < f->first + f->count; i++)
        for (uint8_t k = 0; b->insn[i].block != SASS_NONE && k < b->insn[i].ndef;
             k++)
            du->d[du->nd++] = (def){i, b->insn[i].def[k]};
    memset(du->reg_at, 0, sizeof(du->reg_at));
    for (uint32_t k = 0; k < du->nd; k++)
        du->reg_at[du->d[k].reg + 1]++;
    for (uint32_t r = 0; r < SASS_NREG; r++)
        du->reg_at[r + 1] += du->reg_at[r];
    uint32_t fill[SASS_NREG];
    memcpy(fill, du->reg_at, sizeof(fill));
    for (uint32_t k = 0; k < du->nd; k++)
        du->by_reg[fill[du->d[k].reg]++] = k;
    du->words = (du->nd + 63) / 64 + 1;
    return GPUPROF_OK;
}

/* Applies instruction i to set s: its unpredicated writes kill the other
 * definitions of their registers; every write generates its own. `k0` is
 * the index of i's first definition. */
static void transfer(const gpuprof__sass_du *du, uint64_t *s, uint32_t k0)
{
    const sass_insn *in = &du->b->insn[du->d[k0].insn];
    for (uint8_t j = 0; j < in->ndef; j++) {
        uint32_t r = in->def[j];
        if (in->pred < 0)
            for (uint32_t x = du->reg_at[r]; x < du->reg_at[r + 1]; x++)
                CLR(s, du->by_reg[x]);
    }
    for (uint8_t j = 0; j < in->ndef; j++)
        SET(s, k0 + j);
}

/* OUT of block x from IN (into out). */
static void block_out(const gpuprof__sass_du *du, uint32_t x,
                      const uint32_t *first_def, uint64_t *out)
{
    const sass_block *bl = &du->f->blocks[x];
    memcpy(out, du->in + (size_t)x * du->words, du->words * 8);
    for (uint32_t i = bl->first; i <= bl->last; i++)
        if (du->b->insn[i].ndef)
            transfer(du, out, first_def[i - du->f->first]);
}

static gpuprof_status solve(gpuprof__sass_du *du)
{
    const sass_func *f = du->f;
    uint32_t nb = f->nblocks, w = du->words;
    du->in = calloc((size_t)nb * w + 1, 8);
    uint64_t *out = calloc((size_t)nb * w + 1, 8), *tmp = calloc(w, 8);
    uint32_t *first_def = malloc((f->count + 1) * sizeof(*first_def));
    if (!du->in || !out || !tmp || !first_def) {
        free(out), free(tmp), free(first_def);
        return GPUPROF_E_NOMEM;
    }
    for (uint32_t k = du->nd; k-- > 0;)
        first_def[du->d[k].insn - f->first] = k;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t x = 0; x < nb; x++) {
            uint64_t *in = du->in + (size_t)x * w;
            for (uint32_t p = 0; p < f->blocks[x].npred; p++)
                for (uint32_t j = 0; j < w; j++)
                    in[j] |= out[(size_t)f->blocks[x].pred[p] * w + j];
            block_out(du, x, first_def, tmp);
            if (memcmp(tmp, out + (size_t)x * w, w * 8)) {
                memcpy(out + (size_t)x * w, tmp, w * 8);
                changed = true;
            }
        }
    }
    free(out), free(tmp), free(first_def);
    return GPUPROF_OK;
}

gpuprof_status gpuprof__sass_du_new(const gpuprof__sass_bin *b, uint32_t f,
                                    gpuprof__sass_du **out)
{
    gpuprof__sass_du *du = calloc(1, sizeof(*du));
    *out = NULL;
    if (!du)
        return GPUPROF_E_NOMEM;
    du->b = b;
    du->f = &b->func[f];
    gpuprof_status st = collect(du);
    if (st == GPUPROF_OK && du->f->nblocks)
        st = solve(du);
    if (st != GPUPROF_OK) {
        gpuprof__sass_du_free(du);
        return gpuprof__an_fail(st, "out of memory");
    }
    *out = du;
    return GPUPROF_OK;
}

void gpuprof__sass_du_free(gpuprof__sass_du *du)
{
    if (!du)
        return;
    free(du->d);
    free(du->by_reg);
    free(du->in);
    free(du);
}

uint32_t gpuprof__sass_du_defs(const gpuprof__sass_du *du, uint32_t i,
                               uint32_t r, uint32_t *out, uint32_t max)
{
    const sass_insn *use = &du->b->insn[i];
    if (r >= SASS_NREG || use->block == SASS_NONE || use->func !=
                                                         (uint32_t)(du->f - du->b->func))
        return 0;
    const sass_block *bl = &du->f->blocks[use->block];
    const uint64_t *in = du->in + (size_t)use->block * du->words;
    /* the last unpredicated write before i in its block and the
     * predicated ones after it; without one, IN's definitions too */
    uint32_t n = 0, start = bl->first;
    bool from_in = true;
    for (uint32_t j = i; j-- > bl->first;)
        if (du->b->insn[j].pred < 0 && gpuprof__sass_writes(&du->b->insn[j], r)) {
            start = j;
            from_in = false;
            break;
        }
    for (uint32_t x = du->reg_at[r]; from_in && x < du->reg_at[r + 1]; x++)
        if (BIT(in, du->by_reg[x])) {
            if (n < max)
                out[n] = du->d[du->by_reg[x]].insn;
            n++;
        }
    for (uint32_t j = start; j < i; j++)
        if (gpuprof__sass_writes(&du->b->insn[j], r)) {
            if (n < max)
                out[n] = j;
            n++;
        }
    return n;
}
