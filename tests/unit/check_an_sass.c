/*
 * check_an_sass.c - static analysis of a real sm_90 cubin's SASS
 * (an_sass_parse.c, an_sass_cfg.c, an_sass_loop.c, an_sass_du.c).
 *
 * tests/fixtures/gpu-sm90 holds what an H100 machine made from
 * kernels.cu (six kernels, see its README): the cubin, nvdisasm's listing
 * (-g -gi -hex) and its basic-block CFG (-bbcfg, DOT). No nvdisasm here:
 * GPUPROF_NVDISASM names the fixture's stand-in script, which prints the
 * listing only when run as the analysis runs nvdisasm on that cubin. The
 * CFG must be nvdisasm's, block by block and edge by edge; the loops,
 * registers and reaching definitions are the ones read off the listing.
 */
#define _GNU_SOURCE
#include <check.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analysis/base/an_internal.h"
#include "../../analysis/gpu/an_sass.h"
#include "support/suite.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures/gpu-sm90"
#endif
#define CUBIN FIXTURES "/kernels.sm_90.cubin"

static gpuprof__sass_bin *open_fixture(void)
{
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
    gpuprof__sass_bin *b = NULL;
    gpuprof_status st = gpuprof__sass_open(CUBIN, &b);
    ck_assert_msg(st == GPUPROF_OK, "open: %s", gpuprof_an_last_error());
    return b;
}

/* ---- nvdisasm's DOT ------------------------------------------------------ */
typedef struct dnode {
    char name[96], first[160];
    unsigned ninsn;
    bool call; /* ends in CALL */
} dnode;

typedef struct dfunc {
    char name[96];
    dnode node[64];
    unsigned nnode, edge[128][2], nedge, ncall;
    char from[160][96], to[160][96], port[160][16]; /* as read */
    unsigned nread;
} dfunc;

/* Unescapes DOT's "\ " and "\[" into buf. */
static void unescape(char *buf, size_t n, const char *s, const char *e)
{
    size_t k = 0;
    for (; s < e && k + 1 < n; s++)
        if (*s != '\\' || (s + 1 < e && (buf[k++] = *++s, false)))
            buf[k++] = *s;
    buf[k] = '\0';
}

/* Runs of blanks as one (the listing aligns BRX's comment). */
static void squeeze(char *buf, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (*s != ' ' || !k || buf[k - 1] != ' ')
            buf[k++] = *s;
    buf[k] = '\0';
}

static void read_label(dnode *d, const char *l)
{
    /* instructions are the "\ \ "-indented entries of the record */
    for (const char *p = strstr(l, "\\ \\ "); p; p = strstr(p + 1, "\\ \\ ")) {
        if (p[-1] != '>' && !(p[-2] == '\\' && p[-1] == 'l'))
            continue;
        const char *e = strstr(p, "\\l");
        if (!e)
            break;
        char text[160];
        unescape(text, sizeof(text), p + 4, e);
        size_t n = strlen(text);
        while (n && (text[n - 1] == ';' || text[n - 1] == ' '))
            text[--n] = '\0';
        if (!d->ninsn++)
            squeeze(d->first, sizeof(d->first), text);
        d->call = strncmp(text, "CALL", 4) == 0;
    }
}

static unsigned node_of(dfunc *f, const char *name)
{
    for (unsigned k = 0; k < f->nnode; k++)
        if (!strcmp(f->node[k].name, name))
            return k;
    ck_abort_msg("%s: no node %s", f->name, name);
    return 0;
}

static unsigned read_dot(dfunc *fs, unsigned max)
{
    FILE *p = popen("gzip -dc " FIXTURES "/kernels.sm_90.bbcfg.dot.gz", "r");
    ck_assert_ptr_nonnull(p);
    static char line[1 << 16];
    unsigned n = 0;
    dfunc *f = NULL;
    dnode *last = NULL;
    while (fgets(line, sizeof(line), p)) {
        char a[96], b[96], port[16];
        if (sscanf(line, "subgraph \"cluster_%95[^\"]\"", a) == 1) {
            ck_assert_uint_lt(n, max);
            f = &fs[n++];
            memset(f, 0, sizeof(*f));
            snprintf(f->name, sizeof(f->name), "%s", a);
        } else if (f && line[0] == '"' && !strchr(line, '>') &&
                   sscanf(line, "\"%95[^\"]\"", a) == 1) {
            ck_assert_uint_lt(f->nnode, 64);
            last = &f->node[f->nnode++];
            snprintf(last->name, sizeof(last->name), "%s", a);
        } else if (last && !strncmp(line, "[label=", 7)) {
            read_label(last, line);
        } else if (f && sscanf(line, "\"%95[^\"]\":%*[a-z0-9]:%15[a-z] -> \"%95[^\"]\"",
                               a, port, b) == 3) {
            ck_assert_uint_lt(f->nread, 160);
            snprintf(f->from[f->nread], 96, "%s", a);
            snprintf(f->to[f->nread], 96, "%s", b);
            snprintf(f->port[f->nread++], 16, "%s", port);
        }
    }
    pclose(p);
    for (unsigned i = 0; i < n; i++) /* edges may name later nodes */
        for (unsigned e = 0; e < fs[i].nread; e++) {
            dfunc *g = &fs[i];
            unsigned s = node_of(g, g->from[e]), t = node_of(g, g->to[e]);
            if (g->node[s].call && !strcmp(g->port[e], "e")) {
                g->ncall++; /* a call drawn to its callee's entry */
                continue;
            }
            ck_assert_uint_lt(g->nedge, 128);
            g->edge[g->nedge][0] = s;
            g->edge[g->nedge++][1] = t;
        }
    return n;
}

/* Every function: nvdisasm's blocks (in address order: size and first
 * instruction) and edges (calls aside: the CFG is intra-procedural). */
START_TEST(cfg_as_nvdisasm)
{
    static dfunc fs[16];
    unsigned nf = read_dot(fs, 16), blocks = 0, edges = 0, calls = 0;
    ck_assert_uint_eq(nf, 10);
    gpuprof__sass_bin *b = open_fixture();
    ck_assert_uint_eq(b->nfunc, 10);
    for (unsigned i = 0; i < nf; i++) {
        dfunc *d = &fs[i];
        uint32_t fi = gpuprof__sass_func_find(b, d->name);
        ck_assert_msg(fi != SASS_NONE, "no function %s", d->name);
        const sass_func *f = &b->func[fi];
        ck_assert_msg(f->nblocks == d->nnode, "%s: %u blocks, nvdisasm %u",
                      d->name, f->nblocks, d->nnode);
        for (unsigned k = 0; k < d->nnode; k++) {
            const sass_block *bl = &f->blocks[k];
            ck_assert_uint_eq(bl->last - bl->first + 1, d->node[k].ninsn);
            char mine[160];
            squeeze(mine, sizeof(mine), b->insn[bl->first].text);
            ck_assert_str_eq(mine, d->node[k].first);
        }
        ck_assert_msg(f->nedges == d->nedge, "%s: %u edges, nvdisasm %u",
                      d->name, f->nedges, d->nedge);
        for (unsigned e = 0; e < d->nedge; e++) {
            const sass_block *s = &f->blocks[d->edge[e][0]];
            bool found = false;
            for (uint32_t k = 0; k < s->nsucc; k++)
                found |= s->succ[k] == d->edge[e][1];
            ck_assert_msg(found, "%s: no edge %s -> %s", d->name,
                          d->node[d->edge[e][0]].name,
                          d->node[d->edge[e][1]].name);
        }
        blocks += d->nnode;
        edges += d->nedge;
        calls += d->ncall;
    }
    /* the fixture's totals, so that a DOT read wrongly cannot pass */
    ck_assert_uint_eq(blocks, 143);
    ck_assert_uint_eq(edges, 197);
    ck_assert_uint_eq(calls, 2); /* fib's two calls of itself */
    gpuprof__sass_free(b);
}
END_TEST

/* The loops of each function: headers (offsets), depth 1 (the kernels
 * have no nests; the compiler unrolled each source loop and left
 * remainder loops beside it), body sizes. */
typedef struct want_loop {
    const char *fn;
    uint32_t header[4], blocks[4], line;
} want_loop;

START_TEST(loops_of_each_kernel)
{
    static const want_loop want[] = {
        {"_Z5chasePKiPii", {0x170, 0x520, 0x610}, {1, 1, 1}, 0},
        {"_Z13bank_conflictPfi", {0x5e0, 0x840}, {1, 1}, 26},
        {"_Z9divergentPfii", {0x150, 0x8c0}, {45, 12}, 37},
        {"_Z5callsPfPii", {0}, {0}, 0},
        {"$_Z5callsPfPii$_Z3fibi", {0}, {0}, 0},
        {"$_Z5callsPfPii$_Z4leaff", {0}, {0}, 0},
        {"$_Z5callsPfPii$_Z6middlefi", {0x450, 0x520}, {5, 2}, 49},
        {"_Z12barrier_waitPfi", {0x1a0, 0x3d0, 0x470}, {1, 1, 1}, 66},
        {"_Z4fp64Pdi", {0x170, 0x440, 0x510}, {1, 1, 1}, 76},
    };
    gpuprof__sass_bin *b = open_fixture();
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const sass_func *f = &b->func[gpuprof__sass_func_find(b, want[i].fn)];
        uint32_t n = 0;
        while (n < 4 && want[i].blocks[n])
            n++;
        ck_assert_msg(f->nloops == n, "%s: %u loops", want[i].fn, f->nloops);
        for (uint32_t k = 0; k < n; k++) {
            const sass_loop *l = NULL;
            for (uint32_t j = 0; j < f->nloops; j++)
                if (b->insn[f->blocks[f->loops[j].header].first].offset ==
                    want[i].header[k])
                    l = &f->loops[j];
            ck_assert_msg(l, "%s: no loop at %#x", want[i].fn, want[i].header[k]);
            ck_assert_uint_eq(l->depth, 1);
            ck_assert_uint_eq(l->nblocks, want[i].blocks[k]);
            if (want[i].line)
                ck_assert_uint_eq(b->insn[f->blocks[l->header].first].line,
                                  want[i].line);
        }
    }
    /* chase: the pointer chase `p = next[p]` (line 12) is the unrolled
     * loop's body; its remainder loop's header is the `for` (line 11) */
    const sass_func *c = &b->func[gpuprof__sass_func_find(b, "_Z5chasePKiPii")];
    ck_assert_uint_eq(b->insn[c->blocks[c->loops[0].header].first].line, 12);
    gpuprof__sass_free(b);
}
END_TEST

static uint32_t at(const gpuprof__sass_bin *b, const char *k, uint32_t off)
{
    uint32_t i = gpuprof__sass_insn_at(b, k, off);
    ck_assert_msg(i != SASS_NONE, "%s+%#x", k, off);
    return i;
}

/* Operands: guards, widths (.64, .WIDE, desc[UR], FP64), stores, setp. */
START_TEST(registers_read_and_written)
{
    gpuprof__sass_bin *b = open_fixture();
    const char *k = "_Z5chasePKiPii";
    const sass_insn *in = &b->insn[at(b, k, 0x390)]; /* LDG.E R19, desc[UR4][R4.64] */
    ck_assert_str_eq(in->op, "LDG.E");
    ck_assert_uint_eq(in->cls, SC_GLOBAL);
    ck_assert(in->indirect);
    ck_assert(gpuprof__sass_writes(in, SASS_R0 + 19) && in->ndef == 1);
    ck_assert(gpuprof__sass_reads(in, SASS_R0 + 4) &&
              gpuprof__sass_reads(in, SASS_R0 + 5) &&
              gpuprof__sass_reads(in, SASS_UR0 + 4) &&
              gpuprof__sass_reads(in, SASS_UR0 + 5) && in->nuse == 4);
    in = &b->insn[at(b, k, 0x180)]; /* IMAD.WIDE R6, R19, 0x4, R4 */
    ck_assert(in->ndef == 2 && gpuprof__sass_writes(in, SASS_R0 + 7));
    ck_assert(in->nuse == 3 && gpuprof__sass_reads(in, SASS_R0 + 5));
    in = &b->insn[at(b, k, 0x3a0)]; /* @P1 BRA `(.L_x_74) */
    ck_assert(in->pred == SASS_P0 + 1 && !in->pred_neg);
    ck_assert_uint_eq(in->target, 0x170);
    in = &b->insn[at(b, k, 0x680)]; /* STG.E desc[UR4][R2.64], R19 */
    ck_assert(in->ndef == 0 && in->nuse == 5 &&
              gpuprof__sass_reads(in, SASS_R0 + 19));
    in = &b->insn[at(b, k, 0x500)]; /* ISETP.NE.OR P0, PT, R2, RZ, P0 */
    ck_assert(in->ndef == 1 && gpuprof__sass_writes(in, SASS_P0));
    ck_assert(in->nuse == 2 && gpuprof__sass_reads(in, SASS_P0));
    in = &b->insn[at(b, "_Z4fp64Pdi", 0x170 + 0x50)]; /* a DFMA: pairs */
    ck_assert_str_eq(in->op, "DFMA");
    ck_assert_uint_eq(in->cls, SC_FP64);
    ck_assert(in->ndef == 2 && in->nuse == 6);
    in = &b->insn[at(b, "_Z5callsPfPii", 0x1f0)]; /* BMOV.32.CLEAR R16, B6 */
    ck_assert(gpuprof__sass_writes(in, SASS_R0 + 16) &&
              gpuprof__sass_writes(in, SASS_B0 + 6));
    in = &b->insn[at(b, "_Z5callsPfPii", 0xa0)]; /* CALL middle */
    ck_assert_uint_eq(in->cls, SC_CALL);
    ck_assert_uint_eq(in->target, 0x3c0);
    ck_assert_str_eq(b->func[b->insn[at(b, "_Z5callsPfPii", 0x3c0)].func].name,
                     "$_Z5callsPfPii$_Z6middlefi");
    ck_assert_uint_eq(b->insn[at(b, k, 0x180)].line, 12);
    ck_assert_str_eq(b->insn[at(b, k, 0x180)].file,
                     "././fixtures//gpu-sm90/kernels.cu");
    ck_assert_uint_eq(gpuprof__sass_insn_at(b, k, 0x6a8), SASS_NONE);
    ck_assert_uint_eq(gpuprof__sass_insn_at(b, k, 0x780), SASS_NONE);
    ck_assert_uint_eq(gpuprof__sass_insn_at(b, "nope", 0), SASS_NONE);
    gpuprof__sass_free(b);
}
END_TEST

static void defs_are(const gpuprof__sass_bin *b, const gpuprof__sass_du *du,
                     const char *k, uint32_t use, uint32_t reg,
                     const uint32_t *want, uint32_t n)
{
    uint32_t got[16], m = gpuprof__sass_du_defs(du, at(b, k, use), reg, got, 16);
    ck_assert_msg(m == n, "%s+%#x: %u definitions, not %u", k, use, m, n);
    for (uint32_t i = 0; i < n; i++) {
        bool found = false;
        for (uint32_t j = 0; j < m; j++)
            found |= b->insn[got[j]].offset == want[i];
        ck_assert_msg(found, "%s+%#x: no definition at %#x", k, use, want[i]);
    }
}

/* Reaching definitions: across a loop's back edge, from several paths,
 * past predicated writes. */
START_TEST(reaching_definitions)
{
    gpuprof__sass_bin *b = open_fixture();
    const char *k = "_Z5chasePKiPii";
    gpuprof__sass_du *du;
    ck_assert_int_eq(gpuprof__sass_du_new(b, gpuprof__sass_func_find(b, k), &du),
                     GPUPROF_OK);
    /* the unrolled loop's first use of p: from before the loop (MOVs) or
     * from the last load of the previous iteration (back edge) */
    defs_are(b, du, k, 0x180, SASS_R0 + 19, (uint32_t[]){0x100, 0x390}, 2);
    /* inside the body: the load just before */
    defs_are(b, du, k, 0x1a0, SASS_R0 + 7, (uint32_t[]){0x190}, 1);
    /* the store of p: every way out of the loops (0x100 too: b3 -> b6 ->
     * b8 -> b10 -> the store passes no load, statically) */
    defs_are(b, du, k, 0x680, SASS_R0 + 19,
             (uint32_t[]){0x80, 0xb0, 0x100, 0x390, 0x4d0, 0x5c0, 0x640}, 7);
    /* the remainder loop's predicate: its own compare only */
    defs_are(b, du, k, 0x650, SASS_P0, (uint32_t[]){0x630}, 1);
    gpuprof__sass_du_free(du);
    /* a predicated write does not hide the one before it: divergent's
     * @P2 FADD R0 (0x1d0) and R0's earlier value both reach the next use */
    k = "_Z9divergentPfii";
    ck_assert_int_eq(gpuprof__sass_du_new(b, gpuprof__sass_func_find(b, k), &du),
                     GPUPROF_OK);
    uint32_t got[16], n = gpuprof__sass_du_defs(du, at(b, k, 0x2f0), SASS_B0 + 1,
                                                got, 16);
    ck_assert_uint_ge(n, 1); /* BSYNC B1: its BSSY */
    ck_assert_str_eq(b->insn[got[0]].op, "BSSY");
    gpuprof__sass_du_free(du);
    gpuprof__sass_free(b);
}
END_TEST

/* No nvdisasm: a clear message naming where it was looked for; a
 * listing without code is refused. */
START_TEST(without_nvdisasm)
{
    setenv("GPUPROF_NVDISASM", "/nonexistent/nvdisasm", 1);
    gpuprof__sass_bin *b = (void *)1;
    ck_assert_int_eq(gpuprof__sass_open(CUBIN, &b), GPUPROF_E_NOTFOUND);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "GPUPROF_NVDISASM"));
    setenv("GPUPROF_NVDISASM", "", 1);
    setenv("CUDA_HOME", "/nonexistent", 1);
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", "/nonexistent", 1);
    if (access("/usr/local/cuda/bin/nvdisasm", X_OK) != 0) {
        ck_assert_int_eq(gpuprof__sass_open(CUBIN, &b), GPUPROF_E_NOTFOUND);
        ck_assert_ptr_nonnull(strstr(gpuprof_an_last_error(), "not found"));
    }
    /* the stand-in refuses another file: nvdisasm failing is an error
     * that says how it ended and what it said */
    setenv("PATH", path, 1);
    free(path);
    setenv("GPUPROF_NVDISASM", FIXTURES "/nvdisasm", 1);
    ck_assert_int_eq(gpuprof__sass_open(FIXTURES "/kernels.cu", &b), GPUPROF_E_IO);
    ck_assert_msg(strstr(gpuprof_an_last_error(),
                         "kernels.cu exited with status 1: nvdisasm "
                         "(fixture): " FIXTURES "/kernels.cu is not the "
                         "fixture's cubin"),
                  "%s", gpuprof_an_last_error());
    /* killed, or silent and successful */
    char tool[] = "nvdisasmXXXXXX";
    int fd = mkstemp(tool);
    ck_assert_int_ge(fd, 0);
    const char *kill_self = "#!/bin/sh\nkill -9 $$\n";
    ck_assert_int_eq(write(fd, kill_self, strlen(kill_self)),
                     (ssize_t)strlen(kill_self));
    close(fd);
    ck_assert_int_eq(chmod(tool, 0755), 0);
    char abs[4200];
    ck_assert_ptr_nonnull(realpath(tool, abs));
    setenv("GPUPROF_NVDISASM", abs, 1);
    ck_assert_int_eq(gpuprof__sass_open(CUBIN, &b), GPUPROF_E_IO);
    ck_assert_msg(strstr(gpuprof_an_last_error(),
                         "was killed by signal 9: no message"),
                  "%s", gpuprof_an_last_error());
    FILE *f = fopen(tool, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    ck_assert_int_eq(gpuprof__sass_open(CUBIN, &b), GPUPROF_E_IO);
    ck_assert_msg(strstr(gpuprof_an_last_error(), "printed nothing"), "%s",
                  gpuprof_an_last_error());
    unlink(tool);
    ck_assert_int_eq(gpuprof__sass_parse(strdup("\t.target sm_90\n"), &b),
                     GPUPROF_E_CORRUPT);
}
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"cfg_as_nvdisasm", cfg_as_nvdisasm, 30},
        {"loops_of_each_kernel", loops_of_each_kernel, 30},
        {"registers_read_and_written", registers_read_and_written, 30},
        {"reaching_definitions", reaching_definitions, 30},
        {"without_nvdisasm", without_nvdisasm, 30},
    };
    return RUN_SUITE("an_sass", cases);
}
