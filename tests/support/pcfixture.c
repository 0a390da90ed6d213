/*
 * pcfixture.c - see pcfixture.h. Reads ncu-samples.txt ("KERNEL OFFSET
 * SAMPLES NOT_ISSUED reason=count ...") and writes the profile through
 * the test builder (mkprofile.h).
 */
#define _GNU_SOURCE
#include "pcfixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mkprofile.h"

static const char *const REASONS[] = {
    "selected", "not_selected", "barrier", "branch_resolving",
    "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions",
    "short_scoreboard", "sleeping", "tex_throttle", "wait", NULL};

static int copy(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[1 << 14];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
    if (in)
        fclose(in);
    if (out && fclose(out))
        rc = -1;
    return rc;
}

typedef struct state {
    tp_builder *b;
    uint32_t m_samples, m_latency, m_reason[32], bin, op;
    uint32_t m_launch[5]; /* gpu.count ... gpu.shared_bytes */
    char kernel[128];
    uint32_t kernel_node;
    const pcfix_launch *l;
    size_t nl;
} state;

static const char *const LAUNCH[] = {"gpu.count", "gpu.work_items",
                                     "gpu.group_size", "gpu.registers",
                                     "gpu.shared_bytes"};

/* A new kernel node: its launches, when the caller gave them. */
static void launches(state *s, const char *kernel)
{
    for (size_t i = 0; i < s->nl; i++) {
        const pcfix_launch *l = &s->l[i];
        if (strcmp(l->kernel, kernel))
            continue;
        uint64_t v[5] = {l->launches, l->launches * l->blocks * l->threads,
                         l->launches * l->threads, l->launches * l->registers,
                         l->launches * l->shared};
        for (int m = 0; m < 5; m++)
            if (v[m])
                tp_node_value(s->b, s->kernel_node, s->m_launch[m], v[m]);
    }
}

static void h100(tp_builder *b)
{
    static const struct {
        const char *key;
        uint64_t v;
    } a[] = {{"compute_major", 9},
             {"sm_count", 132},
             {"warp_size", 32},
             {"max_threads_per_block", 1024},
             {"max_threads_per_sm", 2048},
             {"max_blocks_per_sm", 32},
             {"registers_per_sm", 65536},
             {"registers_per_block", 65536},
             {"shared_bytes_per_sm", 233472},
             {"shared_bytes_per_block", 232448},
             {"shared_bytes_reserved", 1024}};
    tp_device_attr(b, "cuda", 0, "name", "NVIDIA H100 80GB HBM3", 0);
    for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
        tp_device_attr(b, "cuda", 0, a[i].key, NULL, a[i].v);
}

static void metrics(state *s)
{
    char name[96];
    tp_clear_metrics(s->b);
    s->m_samples = tp_metric(s->b, "gpu.pc.samples", GPUPROF_IO_UNIT_COUNT,
                             GPUPROF_IO_KIND_INSTR);
    s->m_latency = tp_metric(s->b, "gpu.pc.latency_samples",
                             GPUPROF_IO_UNIT_COUNT, GPUPROF_IO_KIND_INSTR);
    for (int r = 0; REASONS[r]; r++) {
        snprintf(name, sizeof(name), "gpu.pc.stall.%s", REASONS[r]);
        s->m_reason[r] = tp_metric(s->b, name, GPUPROF_IO_UNIT_COUNT,
                                   GPUPROF_IO_KIND_INSTR);
    }
    for (int m = 0; s->nl && m < 5; m++)
        s->m_launch[m] = tp_metric(s->b, LAUNCH[m], GPUPROF_IO_UNIT_COUNT,
                                   GPUPROF_IO_KIND_GPU);
}

/* One line of ncu-samples.txt: its instruction node and values. */
static int line(state *s, char *l, unsigned scale)
{
    char kernel[128];
    unsigned long long off, samples, lat;
    int used;
    if (sscanf(l, "%127s %llx %llu %llu%n", kernel, &off, &samples, &lat,
               &used) != 4)
        return -1;
    if (strcmp(kernel, s->kernel)) {
        snprintf(s->kernel, sizeof(s->kernel), "%s", kernel);
        s->kernel_node = tp_kernel(s->b, s->op, kernel, s->bin);
        launches(s, kernel);
    }
    uint32_t n = tp_gpu_instr(s->b, s->kernel_node, s->bin, off);
    tp_node_value(s->b, n, s->m_samples, samples * scale);
    tp_node_value(s->b, n, s->m_latency, lat * scale);
    for (char *t = strtok(l + used, " \n"); t; t = strtok(NULL, " \n")) {
        char *eq = strchr(t, '=');
        int r = 0;
        if (!eq)
            return -1;
        *eq = '\0';
        while (REASONS[r] && strcmp(REASONS[r], t))
            r++;
        if (!REASONS[r])
            return -1;
        tp_node_value(s->b, n, s->m_reason[r],
                      strtoull(eq + 1, NULL, 10) * scale);
    }
    return 0;
}

int pcfix_write(const char *fixtures, const char *dir, unsigned scale)
{
    return pcfix_write_launches(fixtures, dir, scale, NULL, 0, 0);
}

int pcfix_write_launches(const char *fixtures, const char *dir,
                         unsigned scale, const pcfix_launch *l, size_t nl,
                         int with_h100)
{
    char path[4096], to[4096];
    snprintf(path, sizeof(path), "%s/binaries", dir);
    if ((mkdir(dir, 0755) && access(dir, W_OK)) || mkdir(path, 0755))
        return fprintf(stderr, "pcfix: cannot make %s\n", path), -1;
    snprintf(path, sizeof(path), "%s/kernels.sm_90.cubin", fixtures);
    snprintf(to, sizeof(to), "%s/binaries/" PCFIX_HASH ".cubin", dir);
    if (copy(path, to))
        return fprintf(stderr, "pcfix: cannot copy %s\n", path), -1;
    snprintf(path, sizeof(path), "%s/ncu-samples.txt", fixtures);
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "pcfix: no %s\n", path), -1;
    state s = {.b = tp_new("h100", 7, 0), .l = l, .nl = nl};
    metrics(&s);
    if (with_h100)
        h100(s.b);
    s.bin = tp_gpu_module(s.b, "binaries/" PCFIX_HASH ".cubin");
    tp_thread(s.b, "main", GPUPROF_IO_THREAD_MAIN);
    s.op = tp_gpu_op(s.b, tp_region(s.b, 0, "main", 0, 0, 0), 1);
    char buf[4096];
    int rc = 0;
    while (!rc && fgets(buf, sizeof(buf), f))
        rc = line(&s, buf, scale);
    fclose(f);
    snprintf(path, sizeof(path), "%s/h100-r0-p7.gpuprof", dir);
    if (!rc)
        rc = tp_write(s.b, path, 1);
    tp_free(s.b);
    if (rc)
        fprintf(stderr, "pcfix: cannot write %s\n", path);
    return rc ? -1 : 0;
}
