/*
 * project.c - speedup rules for the projection (cpath.h; seed 004 §5).
 *
 * A rule is "kind:NAME=F": kernel:NAME (device work running kernel NAME),
 * region:NAME (CPU work in region NAME or a region nested in it) or
 * context:ID (any activity at database context ID or beneath it), made F
 * times faster (F > 0; below 1 is slower). Several rules multiply where
 * they meet. The name runs to the last '=', so kernel names with ':' or
 * '=' in them work. The replay (path.c) then scales those activities' own
 * edges; waits shrink or grow with what they wait for.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_internal.h"
#include "cpath.h"

static gpuprof_status bad(const char *text, const char *why)
{
    return gpuprof__an_fail(GPUPROF_E_INVALID,
                            "speedup '%s': %s (want kernel:NAME=F, "
                            "region:NAME=F or context:ID=F with F > 0)",
                            text, why);
}

/* "device:auto|free|shared": how kernels running at once share a device
 * (device.c). */
static gpuprof_status parse_device(const char *text, cp_rule *r)
{
    static const char *const models[] = {"auto", "free", "shared"};
    for (uint32_t m = 0; m < 3; m++)
        if (!strcmp(text + 7, models[m])) {
            r->kind = 3;
            r->context = m;
            r->factor = 1;
            r->name = strdup(models[m]);
            return r->name ? GPUPROF_OK
                           : gpuprof__an_fail(GPUPROF_E_NOMEM,
                                              "out of memory");
        }
    return gpuprof__an_fail(GPUPROF_E_INVALID,
                            "'%s': want device:auto, device:free or "
                            "device:shared",
                            text);
}

static gpuprof_status parse_one(const char *text, cp_rule *r)
{
    memset(r, 0, sizeof(*r));
    if (!strncmp(text, "device:", 7))
        return parse_device(text, r);
    const char *colon = strchr(text, ':'), *eq = strrchr(text, '=');
    if (!colon || !eq || eq < colon)
        return bad(text, "no kind or no factor");
    size_t kl = (size_t)(colon - text);
    if (kl == 6 && !strncmp(text, "kernel", 6))
        r->kind = 0;
    else if (kl == 6 && !strncmp(text, "region", 6))
        r->kind = 1;
    else if (kl == 7 && !strncmp(text, "context", 7))
        r->kind = 2;
    else
        return bad(text, "unknown kind");
    char *end;
    errno = 0;
    r->factor = strtod(eq + 1, &end);
    if (errno || end == eq + 1 || *end || !(r->factor > 0) ||
        !isfinite(r->factor))
        return bad(text, "bad factor");
    size_t nl = (size_t)(eq - colon - 1);
    if (!nl)
        return bad(text, "empty name");
    if (r->kind == 2) {
        unsigned long long id = strtoull(colon + 1, &end, 10);
        if (end != eq || id >= UINT32_MAX)
            return bad(text, "bad context id");
        r->context = (uint32_t)id;
    }
    r->name = strndup(colon + 1, nl);
    return r->name ? GPUPROF_OK
                   : gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
}

gpuprof_status cp_rules_parse(const char *text, cp_rule **out, uint32_t *n)
{
    cp_rule *r = realloc(*out, (*n + 1) * sizeof(*r));
    if (!r)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    *out = r;
    gpuprof_status st = parse_one(text, &r[*n]);
    if (st == GPUPROF_OK)
        (*n)++;
    return st;
}

int cp_rules_device_mode(const cp_rule *r, uint32_t n)
{
    int mode = CP_DEV_AUTO;
    for (uint32_t i = 0; i < n; i++)
        if (r[i].kind == 3)
            mode = (int)r[i].context; /* the last one says */
    return mode;
}

void cp_rules_free(cp_rule *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(r[i].name);
    free(r);
}

/* A kernel context's name without "kernel " and " [binary]". */
static bool kernel_is(const gpuprof_an_db *db, uint32_t c, const char *name)
{
    const char *s = gpuprof_an_db_context_name(db, c);
    if (!s || strncmp(s, "kernel ", 7))
        return false;
    s += 7;
    size_t n = strlen(name);
    return !strncmp(s, name, n) && (!s[n] || !strncmp(s + n, " [", 2));
}

/* Per context: whether rule r covers it (contexts list parents first). */
static void cover(const gpuprof_an_db *db, const cp_rule *r, uint8_t *on)
{
    uint32_t nc = gpuprof_an_db_context_count(db);
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t p = gpuprof_an_db_context_parent(db, c);
        gpuprof_an_node_kind k = gpuprof_an_db_context_kind(db, c);
        bool self = r->kind == 2   ? c == r->context
                    : r->kind == 1 ? k == GPUPROF_AN_NODE_REGION &&
                                         !strcmp(gpuprof_an_db_context_name(
                                                     db, c),
                                                 r->name)
                                   : false;
        on[c] = self || (p < c && on[p]);
    }
    if (r->kind != 0)
        return;
    for (uint32_t c = 0; c < nc; c++) /* placeholders that ran the kernel */
        if (gpuprof_an_db_context_kind(db, c) == GPUPROF_AN_NODE_KERNEL &&
            kernel_is(db, c, r->name) &&
            gpuprof_an_db_context_parent(db, c) < nc)
            on[gpuprof_an_db_context_parent(db, c)] = 1;
}

uint64_t cp_rules_apply(const gpuprof_an_db *db, const cp_graph *g,
                        const cp_rule *r, uint32_t n, double *scale)
{
    uint32_t nc = gpuprof_an_db_context_count(db);
    uint8_t *on = malloc(nc ? nc : 1);
    uint8_t *hit = calloc(g->nact ? g->nact : 1, 1);
    uint64_t touched = 0;
    for (uint32_t i = 0; i < g->nact; i++)
        scale[i] = 1.0;
    for (uint32_t k = 0; on && hit && k < n; k++) {
        cover(db, &r[k], on);
        for (uint32_t i = 0; i < g->nact; i++) {
            const cp_act *a = &g->act[i];
            bool fits = a->context < nc && on[a->context] &&
                        (r[k].kind == 2 ||
                         (r[k].kind == 1 && a->kind == CP_WORK) ||
                         (r[k].kind == 0 && a->kind == CP_GPU));
            if (fits) {
                scale[i] /= r[k].factor;
                hit[i] = 1;
            }
        }
    }
    for (uint32_t i = 0; hit && i < g->nact; i++)
        touched += hit[i];
    free(on);
    free(hit);
    return touched;
}
