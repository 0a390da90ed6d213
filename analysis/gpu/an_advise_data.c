/*
 * an_advise_data.c - the PC samples the advisor works from: per kernel
 * (symbol and cubin), per instruction offset, the samples, the latency
 * samples and the samples of each stall reason, summed over every thread
 * of every profile.
 *
 * A database keeps GPU instructions by source line (or by address with
 * --no-structure), and the instruction-level analysis needs offsets: so
 * the samples are read from the profile files the database names
 * (gpuprof_an_db_profile_file), where each is a GPU_INSTR node (cubin,
 * offset) beneath its KERNEL node, with gpu.pc.samples,
 * gpu.pc.latency_samples and gpu.pc.stall.<reason> (doc/BACKENDS.md). A
 * cubin's path is relative to its measurement directory (the profile's),
 * as for an_gpudwarf.c. Samples whose cubin was unknown stay on the
 * kernel node: they count for the kernel (offset UINT64_MAX).
 */
#include <stdlib.h>
#include <string.h>

#include "an_advise.h"
#include "../base/an_internal.h"

typedef struct metrics {
    uint32_t samples, latency, reason[SR_COUNT];
    uint32_t launches, threads, block, registers, shared;
} metrics;

static void find_metrics(const gpuprof__io_profile *p, metrics *m)
{
    char name[128];
    m->launches = gpuprof__an_metric(p, "gpu.count");
    m->threads = gpuprof__an_metric(p, "gpu.work_items");
    m->block = gpuprof__an_metric(p, "gpu.group_size");
    m->registers = gpuprof__an_metric(p, "gpu.registers");
    m->shared = gpuprof__an_metric(p, "gpu.shared_bytes");
    m->samples = gpuprof__an_metric(p, "gpu.pc.samples");
    m->latency = gpuprof__an_metric(p, "gpu.pc.latency_samples");
    for (unsigned r = 0; r < SR_COUNT; r++) {
        snprintf(name, sizeof(name), "gpu.pc.stall.%s",
                 gpuprof__sass_reason_name[r]);
        m->reason[r] = gpuprof__an_metric(p, name);
    }
}

static double val(const gpuprof__io_profile *p, uint32_t i, uint32_t m)
{
    return m == UINT32_MAX ? 0 : (double)gpuprof__an_value(p, i, m);
}

static adv_kernel *kernel_of(gpuprof_an_advice *a, const char *name,
                             const char *binary)
{
    for (uint32_t k = 0; k < a->nk; k++)
        if (!strcmp(a->k[k].name, name) && !strcmp(a->k[k].binary, binary))
            return &a->k[k];
    if (a->nk == a->cap) {
        uint32_t nc = a->cap ? a->cap * 2 : 8;
        adv_kernel *nk = realloc(a->k, nc * sizeof(*nk));
        if (!nk)
            return NULL;
        a->k = nk;
        a->cap = nc;
    }
    adv_kernel *k = &a->k[a->nk];
    memset(k, 0, sizeof(*k));
    k->name = strdup(name);
    k->binary = strdup(binary);
    if (!k->name || !k->binary) {
        free(k->name), free(k->binary);
        return NULL;
    }
    a->nk++;
    return k;
}

static adv_pc *pc_of(adv_kernel *k, uint64_t offset)
{
    for (uint32_t i = k->npc; i-- > 0;) /* nodes of one kernel are near */
        if (k->pc[i].offset == offset)
            return &k->pc[i];
    if (k->npc == k->cap) {
        uint32_t nc = k->cap ? k->cap * 2 : 64;
        adv_pc *np = realloc(k->pc, nc * sizeof(*np));
        if (!np)
            return NULL;
        k->pc = np;
        k->cap = nc;
    }
    adv_pc *pc = &k->pc[k->npc++];
    memset(pc, 0, sizeof(*pc));
    pc->offset = offset;
    return pc;
}

/* The cubin's path: relative to the profile's directory. */
static void binary_path(char *out, size_t size, const char *profile,
                        const char *bin)
{
    const char *slash = strrchr(profile, '/');
    if (bin[0] == '/' || !slash)
        snprintf(out, size, "%s", bin);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - profile), profile, bin);
}

/* The profile's first CUDA device (DEVICES), and whether it describes
 * CUDA devices of other limits too. The kernels' records name their
 * device, the profile's kernel nodes do not: the first stands for all. */
static bool first_device(const gpuprof__io_profile *p, adv_device *d)
{
    adv_device other = {0};
    uint32_t dev = UINT32_MAX;
    bool differ = false;
    memset(d, 0, sizeof(*d));
    for (uint32_t i = 0; i < p->devattr_count; i++) {
        const gpuprof__io_device_attr *x = &p->devattrs[i];
        if (x->type != GPUPROF_IO_ATTR_U64 ||
            strcmp(gpuprof__io_str(p, x->api), "cuda"))
            continue;
        if (dev == UINT32_MAX)
            dev = x->device;
        gpuprof__adv_device_set(x->device == dev ? d : &other,
                                gpuprof__io_str(p, x->key), x->value);
        differ |= x->device != dev;
    }
    other.known = d->known; /* differ in limits, not in being described */
    return differ && memcmp(&other, d, sizeof(other)) != 0;
}

/* The kernel of node `kernel` (with its binary `mod`). */
static adv_kernel *kernel_at(gpuprof_an_advice *a, const char *path,
                             const gpuprof__io_profile *p,
                             const gpuprof__io_node *kernel, uint32_t mod)
{
    char bin[4200];
    binary_path(bin, sizeof(bin), path,
                mod < p->module_count ? gpuprof__io_str(p, p->modules[mod].path)
                                      : "");
    return kernel_of(a, gpuprof__io_str(p, kernel->key_a), bin);
}

/* Kernel node i's launches: added to its kernel's, the device it ran on
 * (as far as the profile says) with them. */
static gpuprof_status launches(gpuprof_an_advice *a, const char *path,
                               const gpuprof__io_profile *p, const metrics *m,
                               uint32_t i, const adv_device *dev, bool differ)
{
    const gpuprof__io_node *nd = &p->nodes[i];
    double n = val(p, i, m->launches);
    if (n <= 0)
        return GPUPROF_OK;
    adv_kernel *k = kernel_at(a, path, p, nd, (uint32_t)nd->key_b);
    if (!k)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    k->launch.launches += n;
    k->launch.threads += val(p, i, m->threads);
    k->launch.block += val(p, i, m->block);
    k->launch.registers += val(p, i, m->registers);
    k->launch.shared += val(p, i, m->shared);
    if (!k->dev.known) {
        k->dev = *dev;
        k->devs_differ = differ;
    } else if (dev->known && memcmp(dev, &k->dev, sizeof(*dev))) {
        k->devs_differ = true;
    }
    return GPUPROF_OK;
}

/* Node i (absolute) of profile p: a sampled instruction or kernel. */
static gpuprof_status take(gpuprof_an_advice *a, const char *path,
                           const gpuprof__io_profile *p, const metrics *m,
                           uint32_t i, const gpuprof__io_node *kernel)
{
    const gpuprof__io_node *nd = &p->nodes[i];
    double samples = val(p, i, m->samples);
    if (samples <= 0)
        return GPUPROF_OK;
    uint32_t mod = nd->kind == GPUPROF_IO_NODE_GPU_INSTR ? nd->key_a
                                                         : (uint32_t)kernel->key_b;
    adv_kernel *k = kernel_at(a, path, p, kernel, mod);
    adv_pc *pc = k ? pc_of(k, nd->kind == GPUPROF_IO_NODE_GPU_INSTR
                                  ? nd->key_b
                                  : UINT64_MAX)
                   : NULL;
    if (!pc)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    pc->samples += samples;
    pc->latency += val(p, i, m->latency);
    for (unsigned r = 0; r < SR_COUNT; r++)
        pc->v[r] += val(p, i, m->reason[r]);
    return GPUPROF_OK;
}

gpuprof_status gpuprof__adv_gather_file(const char *path,
                                        gpuprof_an_advice *a)
{
    gpuprof__io_profile *p;
    gpuprof_status st = gpuprof__an_load(path, &p);
    if (st != GPUPROF_OK)
        return st;
    metrics m;
    find_metrics(p, &m);
    adv_device dev;
    bool differ = first_device(p, &dev);
    for (uint32_t t = 0; st == GPUPROF_OK && m.samples != UINT32_MAX &&
                         t < p->thread_count;
         t++) {
        const gpuprof__io_thread *th = &p->threads[t];
        for (uint32_t r = 1; st == GPUPROF_OK && r < th->node_count; r++) {
            uint32_t i = th->first_node + r;
            const gpuprof__io_node *nd = &p->nodes[i];
            if (nd->kind == GPUPROF_IO_NODE_KERNEL &&
                (st = launches(a, path, p, &m, i, &dev, differ)) == GPUPROF_OK)
                st = take(a, path, p, &m, i, nd);
            else if (nd->kind == GPUPROF_IO_NODE_GPU_INSTR &&
                     p->nodes[th->first_node + nd->parent].kind ==
                         GPUPROF_IO_NODE_KERNEL)
                st = take(a, path, p, &m, i,
                          &p->nodes[th->first_node + nd->parent]);
        }
    }
    gpuprof__io_profile_free(p);
    return st;
}

/* Kernels that were launched but never sampled are not advised on. */
void gpuprof__adv_sampled_only(gpuprof_an_advice *a)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < a->nk; k++) {
        if (a->k[k].npc) {
            a->k[n++] = a->k[k];
            continue;
        }
        free(a->k[k].name);
        free(a->k[k].binary);
        free(a->k[k].pc);
    }
    a->nk = n;
}

gpuprof_status gpuprof__adv_gather(const gpuprof_an_db *db,
                                   gpuprof_an_advice *a)
{
    uint32_t n = gpuprof_an_db_profile_count(db);
    for (uint32_t i = 0; i < n; i++) {
        const char *f = gpuprof_an_db_profile_file(db, i);
        bool seen = false; /* one file holds every thread of a process */
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = !strcmp(gpuprof_an_db_profile_file(db, j), f);
        if (seen)
            continue;
        gpuprof_status st = gpuprof__adv_gather_file(f, a);
        if (st != GPUPROF_OK) {
            char why[1024];
            snprintf(why, sizeof(why), "%s", gpuprof_an_last_error());
            return gpuprof__an_fail(st,
                                    "%s (the advice reads PC samples from "
                                    "the profiles the database was made "
                                    "from, at the paths analyze was given)",
                                    why);
        }
    }
    return GPUPROF_OK;
}
