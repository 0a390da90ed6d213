/*
 * mkprofile.c - the hand-made profile builder for tests (mkprofile.h).
 * Tests only: it aborts the test (through a failed allocation check in
 * the caller) rather than handling out-of-memory gracefully.
 */
#include "mkprofile.h"

#include <stdlib.h>
#include <string.h>

struct tp_builder {
    gpuprof__io_profile p;
    gpuprof__io_strtab *st;
    uint32_t cur; /* current thread */
    uint32_t cap_nodes, cap_threads, cap_counters, cap_modules, cap_devattrs;
    uint64_t cap_values;
    /* values per node are appended in node order, so a node's values must
     * be added before the next node is created (tp_ratio on the last node) */
};

#define GROW(arr, count, cap)                                                  \
    do {                                                                       \
        if ((count) >= (cap)) {                                                \
            (cap) = (cap) ? (cap)*2 : 16;                                      \
            (arr) = realloc((arr), (size_t)(cap) * sizeof(*(arr)));            \
        }                                                                      \
    } while (0)

tp_builder *tp_new(const char *host, uint32_t pid, int32_t rank)
{
    tp_builder *b = calloc(1, sizeof(*b));
    b->st = gpuprof__io_strtab_new();
    b->p.host = gpuprof__io_strtab_add(b->st, host);
    b->p.exe = gpuprof__io_strtab_add(b->st, "/usr/bin/testprog");
    b->p.cmdline = gpuprof__io_strtab_add(b->st, "testprog --size 10");
    b->p.pid = pid;
    b->p.rank = rank;
    b->p.generation = 1;
    b->p.flags = GPUPROF_IO_PROFILE_FINAL;
    b->p.start_ns = 1000;
    b->p.end_ns = 1000 + 1000000000ull;
    b->p.start_realtime_ns = 1700000000000000000ull;
    static const char *const names[] = {"region.visits", "region.time.incl",
                                        "region.time.excl", "test.ratio"};
    b->p.metrics = calloc(4, sizeof(*b->p.metrics));
    for (uint32_t i = 0; i < 4; i++)
        b->p.metrics[i] = (gpuprof__io_metric){
            gpuprof__io_strtab_add(b->st, names[i]),
            gpuprof__io_strtab_add(b->st, "a metric"),
            i == 3 ? GPUPROF_IO_F64 : GPUPROF_IO_U64,
            GPUPROF_IO_SUM,
            i == 0 || i == 3 ? GPUPROF_IO_UNIT_COUNT : GPUPROF_IO_UNIT_NS,
            GPUPROF_IO_KIND_REGION, 0, 0};
    b->p.metric_count = 4;
    return b;
}

static uint32_t add_node(tp_builder *b, uint32_t parent, uint8_t kind,
                         uint32_t key_a)
{
    GROW(b->p.nodes, b->p.node_count, b->cap_nodes);
    gpuprof__io_node *n = &b->p.nodes[b->p.node_count++];
    memset(n, 0, sizeof(*n));
    n->parent = parent;
    n->kind = kind;
    n->key_a = key_a;
    n->first_value = (uint32_t)b->p.value_count;
    gpuprof__io_thread *t = &b->p.threads[b->cur];
    return t->node_count++;
}

static void add_value(tp_builder *b, uint32_t metric, uint64_t bits)
{
    if (!bits)
        return;
    GROW(b->p.values, b->p.value_count, b->cap_values);
    b->p.values[b->p.value_count++] = (gpuprof__io_value){metric, bits};
    b->p.nodes[b->p.node_count - 1].value_count++;
}

void tp_value(tp_builder *b, uint32_t metric, uint64_t bits)
{
    add_value(b, metric, bits);
}

uint32_t tp_metric(tp_builder *b, const char *name, uint8_t unit, uint8_t kind)
{
    uint32_t n = b->p.metric_count;
    b->p.metrics = realloc(b->p.metrics, (n + 1) * sizeof(*b->p.metrics));
    b->p.metrics[n] =
        (gpuprof__io_metric){gpuprof__io_strtab_add(b->st, name),
                             gpuprof__io_strtab_add(b->st, "a test metric"),
                             GPUPROF_IO_U64,
                             GPUPROF_IO_SUM,
                             unit,
                             kind, 0, 0};
    b->p.metric_count = n + 1;
    return n;
}

void tp_metric_ext(tp_builder *b, uint32_t metric, uint8_t combine,
                   uint32_t flags, const char *count_metric)
{
    gpuprof__io_metric *m = &b->p.metrics[metric];
    m->combine = combine;
    m->flags = flags;
    m->count_name = count_metric ? gpuprof__io_strtab_add(b->st, count_metric)
                                 : 0;
}

void tp_clear_metrics(tp_builder *b)
{
    b->p.metric_count = 0;
}

void tp_node_value(tp_builder *b, uint32_t node, uint32_t metric, uint64_t bits)
{
    uint32_t abs = b->p.threads[b->cur].first_node + node;
    gpuprof__io_node *n = &b->p.nodes[abs];
    uint64_t at = n->first_value, end = at + n->value_count;
    while (at < end && b->p.values[at].metric < metric)
        at++;
    if (at < end && b->p.values[at].metric == metric) {
        b->p.values[at].bits += bits;
        return;
    }
    if (!bits)
        return;
    GROW(b->p.values, b->p.value_count, b->cap_values);
    memmove(&b->p.values[at + 1], &b->p.values[at],
            (size_t)(b->p.value_count - at) * sizeof(*b->p.values));
    b->p.values[at] = (gpuprof__io_value){metric, bits};
    b->p.value_count++;
    b->p.nodes[abs].value_count++;
    for (uint32_t i = abs + 1; i < b->p.node_count; i++)
        b->p.nodes[i].first_value++;
}

uint32_t tp_thread(tp_builder *b, const char *name, uint32_t flags)
{
    GROW(b->p.threads, b->p.thread_count, b->cap_threads);
    b->cur = b->p.thread_count++;
    b->p.threads[b->cur] =
        (gpuprof__io_thread){.tid = 100 + b->cur,
                             .name = gpuprof__io_strtab_add(b->st, name),
                             .flags = flags,
                             .first_node = b->p.node_count,
                             .node_count = 0,
                             .start_ns = 2000,
                             .end_ns = 3000};
    add_node(b, GPUPROF_IO_NONE, GPUPROF_IO_NODE_ROOT, 0);
    return b->cur;
}

uint32_t tp_region(tp_builder *b, uint32_t parent, const char *name,
                   uint64_t visits, uint64_t incl, uint64_t excl)
{
    uint32_t n = add_node(b, parent, GPUPROF_IO_NODE_REGION,
                          gpuprof__io_strtab_add(b->st, name));
    add_value(b, TP_VISITS, visits);
    add_value(b, TP_INCL, incl);
    add_value(b, TP_EXCL, excl);
    return n;
}

uint32_t tp_module(tp_builder *b, const char *path)
{
    GROW(b->p.modules, b->p.module_count, b->cap_modules);
    b->p.modules[b->p.module_count] =
        (gpuprof__io_module){.path = gpuprof__io_strtab_add(b->st, path),
                             .base = 0x400000,
                             .size = 0x10000};
    return b->p.module_count++;
}

uint32_t tp_gpu_module(tp_builder *b, const char *path)
{
    uint32_t m = tp_module(b, path);
    b->p.modules[m] = (gpuprof__io_module){.path = b->p.modules[m].path,
                                           .flags = GPUPROF_IO_MODULE_GPU,
                                           .size = 0x1000};
    return m;
}

static uint32_t add_keyed(tp_builder *b, uint32_t parent, uint8_t kind,
                          uint32_t key_a, uint64_t key_b)
{
    uint32_t n = add_node(b, parent, kind, key_a);
    b->p.nodes[b->p.node_count - 1].key_b = key_b;
    return n;
}

uint32_t tp_frame(tp_builder *b, uint32_t parent, uint32_t module,
                  uint64_t offset)
{
    return add_keyed(b, parent, GPUPROF_IO_NODE_FRAME, module, offset);
}

uint32_t tp_kernel(tp_builder *b, uint32_t parent, const char *name,
                   uint32_t binary)
{
    return add_keyed(b, parent, GPUPROF_IO_NODE_KERNEL,
                     gpuprof__io_strtab_add(b->st, name), binary);
}

uint32_t tp_gpu_op(tp_builder *b, uint32_t parent, uint32_t op_kind)
{
    return add_keyed(b, parent, GPUPROF_IO_NODE_GPU_OP, op_kind, 0);
}

uint32_t tp_gpu_instr(tp_builder *b, uint32_t parent, uint32_t binary,
                      uint64_t offset)
{
    return add_keyed(b, parent, GPUPROF_IO_NODE_GPU_INSTR, binary, offset);
}

void tp_flags(tp_builder *b, uint32_t node, uint8_t flags)
{
    b->p.nodes[b->p.threads[b->cur].first_node + node].flags = flags;
}

void tp_ratio(tp_builder *b, uint32_t node, double v)
{
    (void)node; /* must be the last node added */
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    add_value(b, TP_RATIO, bits);
}

void tp_counter(tp_builder *b, const char *name, uint64_t value)
{
    GROW(b->p.counters, b->p.counter_count, b->cap_counters);
    b->p.counters[b->p.counter_count++] =
        (gpuprof__io_counter){gpuprof__io_strtab_add(b->st, name), value};
}

void tp_device_attr(tp_builder *b, const char *api, uint32_t device,
                    const char *key, const char *text, uint64_t value)
{
    GROW(b->p.devattrs, b->p.devattr_count, b->cap_devattrs);
    b->p.devattrs[b->p.devattr_count++] = (gpuprof__io_device_attr){
        gpuprof__io_strtab_add(b->st, api), device,
        gpuprof__io_strtab_add(b->st, key),
        text ? GPUPROF_IO_ATTR_STR : GPUPROF_IO_ATTR_U64,
        text ? gpuprof__io_strtab_add(b->st, text) : value};
}

void tp_reverse_metrics(tp_builder *b)
{
    uint32_t n = b->p.metric_count;
    for (uint32_t i = 0; i < n / 2; i++) {
        gpuprof__io_metric m = b->p.metrics[i];
        b->p.metrics[i] = b->p.metrics[n - 1 - i];
        b->p.metrics[n - 1 - i] = m;
    }
    for (uint64_t v = 0; v < b->p.value_count; v++)
        b->p.values[v].metric = n - 1 - b->p.values[v].metric;
}

void tp_times(tp_builder *b, uint64_t start_ns, uint64_t end_ns,
              uint64_t realtime_ns, uint64_t generation, uint32_t flags)
{
    b->p.start_ns = start_ns;
    b->p.end_ns = end_ns;
    b->p.start_realtime_ns = realtime_ns;
    b->p.generation = generation;
    b->p.flags = flags;
}

const gpuprof__io_profile *tp_profile(tp_builder *b)
{
    uint64_t size;
    b->p.strings = (char *)gpuprof__io_strtab_data(b->st, &size);
    b->p.strings_size = size;
    return &b->p;
}

int tp_write(tp_builder *b, const char *path, int level)
{
    uint8_t *buf;
    size_t size;
    char err[256];
    int rc =
        gpuprof__io_encode(tp_profile(b), level, &buf, &size, err, sizeof(err));
    if (rc)
        return rc;
    rc = gpuprof__io_write_atomic(path, buf, size, err, sizeof(err));
    free(buf);
    return rc;
}

void tp_free(tp_builder *b)
{
    free(b->p.metrics);
    free(b->p.threads);
    free(b->p.nodes);
    free(b->p.values);
    free(b->p.counters);
    free(b->p.devattrs);
    free(b->p.modules);
    gpuprof__io_strtab_free(b->st);
    free(b);
}
