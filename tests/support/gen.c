/*
 * gen.c - synthetic measurements (gen.h).
 */
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkprofile.h"

static uint32_t rnd(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

uint32_t gen_path_find(const gen_truth *t, const char *path)
{
    if (!t->slot)
        return UINT32_MAX;
    for (uint32_t h = hash_str(path) & t->mask; t->slot[h];
         h = (h + 1) & t->mask)
        if (!strcmp(t->paths[t->slot[h] - 1], path))
            return t->slot[h] - 1;
    return UINT32_MAX;
}

static void rehash(gen_truth *t)
{
    uint32_t size = t->mask ? 2 * (t->mask + 1) : 1024;
    free(t->slot);
    t->slot = calloc(size, sizeof(*t->slot));
    t->mask = size - 1;
    for (uint32_t i = 0; i < t->npaths; i++) {
        uint32_t h = hash_str(t->paths[i]) & t->mask;
        while (t->slot[h])
            h = (h + 1) & t->mask;
        t->slot[h] = i + 1;
    }
}

static uint32_t path_id(gen_truth *t, const char *path)
{
    uint32_t i = gen_path_find(t, path);
    if (i != UINT32_MAX)
        return i;
    if (t->npaths == t->cap_paths) {
        t->cap_paths = t->cap_paths ? 2 * t->cap_paths : 64;
        t->paths = realloc(t->paths, t->cap_paths * sizeof(*t->paths));
    }
    t->paths[t->npaths++] = strdup(path);
    if (2 * t->npaths > t->mask)
        rehash(t);
    else {
        uint32_t h = hash_str(path) & t->mask;
        while (t->slot[h])
            h = (h + 1) & t->mask;
        t->slot[h] = t->npaths;
    }
    return t->npaths - 1;
}

static void add_val(gen_truth *t, uint32_t profile, uint32_t path,
                    uint32_t metric, double v)
{
    if (t->nvals == t->cap_vals) {
        t->cap_vals = t->cap_vals ? 2 * t->cap_vals : 256;
        t->vals = realloc(t->vals, t->cap_vals * sizeof(*t->vals));
    }
    t->vals[t->nvals++] = (gen_value){profile, path, metric, v};
}

typedef struct gctx {
    tp_builder *b;
    gen_truth *t;
    const gen_opts *o;
    uint32_t seed, profile;
    uint32_t mod[3], bin;
} gctx;

static const char *const regions[] = {"init", "solve", "step", "io"};
static const char *const kernels[] = {"saxpy", "dot", "stencil"};

/* Random values on the node just made: each metric present with
 * probability 1/2; counts and times small integers, the ratio a multiple
 * of 1/4 (exact in binary, so sums are exact). */
static void values(gctx *g, const char *path)
{
    uint32_t id = path_id(g->t, path);
    for (uint32_t m = TP_VISITS; m <= TP_RATIO; m++) {
        if (rnd(&g->seed) % 2)
            continue;
        uint32_t k = 1 + rnd(&g->seed) % 1000;
        if (m == TP_RATIO) {
            double d = k * 0.25;
            uint64_t bits;
            memcpy(&bits, &d, sizeof(d));
            tp_value(g->b, m, bits);
            add_val(g->t, g->profile, id, m, d);
        } else {
            tp_value(g->b, m, k);
            add_val(g->t, g->profile, id, m, k);
        }
    }
}

int gen_write(const char *dir, const gen_opts *o, gen_truth *t)
{
    for (uint32_t p = 0; p < o->procs; p++) {
        gctx g = {.t = t, .o = o, .seed = o->seed * 2654435761u + p + 1};
        if (!g.seed)
            g.seed = 1;
        g.b = tp_new(o->host ? o->host : "genhost", o->pid0 + p, (int32_t)p);
        for (uint32_t m = 0; m < 3; m++) {
            char mp[64];
            snprintf(mp, sizeof(mp), "/gen/libgen%u.so", m);
            g.mod[m] = tp_module(g.b, mp);
        }
        g.bin = tp_gpu_module(g.b, "binaries/gen.clbin");
        for (uint32_t th = 0; th < o->threads; th++) {
            char tn[32];
            snprintf(tn, sizeof(tn), "worker-%u", th);
            tp_thread(g.b, tn, th == 0 ? GPUPROF_IO_THREAD_MAIN : 0);
            g.profile = t->profiles++;
            /* Iterative random tree: a stack of (node, path, depth). The
             * shape comes from `ss`: shared by every thread when SPMD (a
             * skipped subtree is walked as a ghost, so the shape stays in
             * step), the thread's own otherwise; values from g.seed. */
            typedef struct item {
                uint32_t node, depth;
                int ghost;
                char path[2048];
            } item;
            uint32_t ss = o->spmd ? o->seed * 7919u + 1 : rnd(&g.seed) | 1;
            item *stack = malloc(4096 * sizeof(*stack));
            uint32_t sp = 0;
            stack[sp++] = (item){0, 0, 0, ""};
            while (sp) {
                item it = stack[--sp];
                if (it.depth >= o->depth)
                    continue;
                uint32_t n = rnd(&ss) % (o->fanout + 1);
                for (uint32_t i = 0; i < n && sp < 4096; i++) {
                    char name[256];
                    uint32_t node = 0, kind = rnd(&ss) % 3;
                    int ghost = it.ghost || (o->spmd && rnd(&g.seed) % 8 == 0);
                    if (it.depth == o->depth - 1 && kind == 2)
                        kind = 0; /* a launch needs a level for its kernel */
                    if (kind == 0) {
                        const char *r = regions[rnd(&ss) % 4];
                        if (!ghost)
                            node = tp_region(g.b, it.node, r, 0, 0, 0);
                        snprintf(name, sizeof(name), "%s", r);
                    } else if (kind == 1) {
                        uint32_t m = rnd(&ss) % 3;
                        uint64_t off = 0x10 * (1 + rnd(&ss) % 3);
                        if (!ghost)
                            node = tp_frame(g.b, it.node, g.mod[m], off);
                        snprintf(name, sizeof(name), "libgen%u.so+0x%llx", m,
                                 (unsigned long long)off);
                    } else {
                        char path[2048 + 32];
                        snprintf(path, sizeof(path), "%s%s<kernel launch>",
                                 it.path, it.path[0] ? GEN_SEP : "");
                        const char *k = kernels[rnd(&ss) % 3];
                        if (!ghost) {
                            node = tp_gpu_op(g.b, it.node, 1);
                            values(&g, path);
                            node = tp_kernel(g.b, node, k, g.bin);
                        }
                        snprintf(name, sizeof(name), "kernel %s", k);
                        item child = {node, it.depth + 1, ghost, ""};
                        if (snprintf(child.path, sizeof(child.path), "%.1800s" GEN_SEP "%s",
                                     path, name) >= (int)sizeof(child.path))
                            abort(); /* depth too large for the paths */
                        if (!ghost)
                            values(&g, child.path);
                        stack[sp++] = child;
                        continue;
                    }
                    item child = {node, it.depth + 1, ghost, ""};
                    if (snprintf(child.path, sizeof(child.path), "%.1700s%s%s",
                                 it.path, it.path[0] ? GEN_SEP : "",
                                 name) >= (int)sizeof(child.path))
                        abort(); /* depth too large for the paths */
                    if (!ghost)
                        values(&g, child.path);
                    stack[sp++] = child;
                }
            }
            free(stack);
        }
        char path[1024];
        snprintf(path, sizeof(path), "%s/gen-p%06u.gpuprof", dir, o->pid0 + p);
        int rc = tp_write(g.b, path, 1);
        tp_free(g.b);
        if (rc)
            return rc;
    }
    return 0;
}

void gen_truth_free(gen_truth *t)
{
    for (uint32_t i = 0; i < t->npaths; i++)
        free(t->paths[i]);
    free(t->paths);
    free(t->slot);
    free(t->vals);
    memset(t, 0, sizeof(*t));
}
