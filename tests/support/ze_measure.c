/*
 * ze_measure.c - gpuprof on the fake Level Zero driver, for the Level Zero
 * backend's suites (ze_measure.h).
 */
#define _GNU_SOURCE
#include "ze_measure.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char zm_outdir[512], zm_prof_path[1024];
int zm_want_trace;
const uint8_t zm_native_a[38] = "module A: native bytes the fake keeps";
const uint8_t zm_native_b[29] = "module B: other native bytes";

/* The cases leave the fake driver's objects to the process's end. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfakeze\nleak:libze_loader\nleak:libze_tracing_layer\n";
}

gpuprof_status zm_start_gpuprof(char *why, size_t wsize)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(zm_outdir, sizeof(zm_outdir), "%s/l0.XXXXXX", tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(zm_outdir));
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = zm_outdir;
    o.backends = "levelzero";
    o.signals = 0;
    o.trace = zm_want_trace;
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    why[0] = '\0';
    return gpuprof_backend_status("levelzero", why, wsize);
}

void zm_start(void)
{
    char why[300];
    ck_assert_msg(zm_start_gpuprof(why, sizeof(why)) == GPUPROF_OK,
                  "levelzero backend: %s", why);
    ZE_OK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
    zf_open();
}

void zm_case(const char *kernels, int trace)
{
    zf_knobs("l0-ops");
    if (kernels)
        setenv("FAKEZE_KERNELS", kernels, 1);
    zm_want_trace = trace;
    zm_start();
    if (trace)
        ck_assert_int_eq(
            gpuprof_output_path(zm_prof_path, sizeof(zm_prof_path)),
            GPUPROF_OK);
}

ze_kernel_handle_t zm_kernel_a(const char *name)
{
    return zf_kernel_in(zf_module(zm_native_a, sizeof(zm_native_a)), name);
}

ze_event_handle_t zm_app_event(ze_event_pool_handle_t *pool)
{
    ze_event_pool_desc_t pd = {
        .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, .flags = 0, .count = 4};
    ZE_OK(zeEventPoolCreate(zf_ctx, &pd, 1, &zf_dev, pool));
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                          .index = 0,
                          .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e;
    ZE_OK(zeEventCreate(*pool, &ed, &e));
    return e;
}

void *zm_dev_mem(size_t n)
{
    ze_device_mem_alloc_desc_t d = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;
    ZE_OK(zeMemAllocDevice(zf_ctx, &d, n, 64, zf_dev, &p));
    return p;
}

ze_command_list_handle_t zm_list_of(ze_kernel_handle_t k, int n)
{
    ze_command_list_handle_t l = zf_regular(0);
    for (int i = 0; i < n; i++)
        launch_here(l, k, NULL);
    ZE_OK(zeCommandListClose(l));
    return l;
}

ze_fence_handle_t zm_fence(ze_command_queue_handle_t q)
{
    ze_fence_desc_t fd = {.stype = ZE_STRUCTURE_TYPE_FENCE_DESC};
    ze_fence_handle_t f;
    ZE_OK(zeFenceCreate(q, &fd, &f));
    return f;
}

__attribute__((noinline)) void launch_here(ze_command_list_handle_t l,
                                           ze_kernel_handle_t k,
                                           ze_event_handle_t ev)
{
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &zf_groups, ev, 0, NULL));
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void copy_here(ze_command_list_handle_t l, void *dst,
                                         const void *src, size_t n)
{
    ZE_OK(zeCommandListAppendMemoryCopy(l, dst, src, n, NULL, 0, NULL));
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void execute_here(ze_command_queue_handle_t q,
                                            ze_command_list_handle_t l,
                                            ze_fence_handle_t f)
{
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    __asm__ volatile("" ::: "memory");
}

/* The function of the frame right above placeholder i (the innermost
 * frame of its call path). */
static const char *caller_of(const gpuprof__io_profile *p, uint32_t i)
{
    const gpuprof__io_thread *th = NULL;
    for (uint32_t t = 0; t < p->thread_count && !th; t++)
        if (i >= p->threads[t].first_node &&
            i < p->threads[t].first_node + p->threads[t].node_count)
            th = &p->threads[t];
    uint32_t par = p->nodes[i].parent;
    const gpuprof__io_node *n = &p->nodes[th->first_node + par];
    if (n->kind != GPUPROF_IO_NODE_FRAME)
        return "(not a frame)";
    const gpuprof__io_module *mod = &p->modules[n->key_a];
    Dl_info di;
    if (dladdr((void *)(uintptr_t)(mod->base + n->key_b), &di) && di.dli_sname)
        return di.dli_sname;
    static char buf[512];
    snprintf(buf, sizeof(buf), "(unknown: %s+0x%llx)",
             gpuprof__io_str(p, mod->path), (unsigned long long)n->key_b);
    return buf;
}

void zm_all_called_from(const gpuprof__io_profile *p, uint32_t kind,
                        const char *fn)
{
    int seen = 0;
    for (uint32_t i = 0; i < p->node_count; i++) {
        const gpuprof__io_node *n = &p->nodes[i];
        if (n->kind != GPUPROF_IO_NODE_GPU_OP || n->key_a != kind)
            continue;
        ck_assert_msg(!strcmp(caller_of(p, i), fn), "kind %u called from %s",
                      kind, caller_of(p, i));
        seen++;
    }
    ck_assert_int_gt(seen, 0);
}

gpuprof__io_trace *zm_load_trace(void)
{
    char trace[1100], err[256];
    snprintf(trace, sizeof(trace), "%.*s.gptrace",
             (int)(strrchr(zm_prof_path, '.') - zm_prof_path), zm_prof_path);
    gpuprof__io_trace *t = NULL;
    ck_assert_msg(!gpuprof__io_trace_read_file(trace, &t, err, sizeof(err)),
                  "%s", err);
    gpuprof__io_trace_sort(t);
    return t;
}

void zm_dep_counts(const gpuprof__io_trace *t, uint32_t n[9])
{
    memset(n, 0, 9 * sizeof(n[0]));
    for (uint32_t s = 0; s < t->dep_stream_count; s++)
        for (uint64_t i = 0; i < t->deps[s].count; i++) {
            uint32_t what = GPUPROF_IO_DEP_WHAT(t->deps[s].recs[i].context);
            ck_assert_uint_lt(what, 9);
            n[what]++;
        }
}

size_t zm_finish_and_read(zf_op *ops, size_t max, int64_t *raw2mono)
{
    *raw2mono = zf_raw_to_mono();
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    return zf_read_ops(ops, max);
}

/* The GPU stream of engine ordinal.index (the test fails without one). */
static const gpuprof__io_trace_stream *
engine_stream(const gpuprof__io_trace *t, unsigned ordinal, unsigned index)
{
    const gpuprof__io_trace_stream *st = NULL;
    for (uint32_t i = 0; i < t->stream_count; i++)
        if (t->streams[i].gpu && t->streams[i].id == (ordinal << 8 | index))
            st = &t->streams[i];
    ck_assert_ptr_nonnull(st);
    return st;
}

uint64_t zm_match_first(const gpuprof__io_trace *t, const zf_op *ops,
                        size_t nops, unsigned ordinal, unsigned index,
                        int64_t raw2mono, uint64_t skip_from, uint64_t skip_to)
{
    const gpuprof__io_trace_stream *st = engine_stream(t, ordinal, index);
    uint64_t k = 0, seen = 0;
    for (size_t i = 0; i < nops; i++) {
        const zf_op *o = &ops[i];
        if (o->ordinal != ordinal || o->index != index ||
            (strcmp(o->kind, "kernel") && strcmp(o->kind, "copy")))
            continue;
        if (seen++ >= skip_from && seen <= skip_to)
            continue;
        ck_assert_uint_lt(k, st->count);
        const gpuprof__io_trace_rec *r = &st->recs[k++];
        int64_t ws = (int64_t)o->host_start + raw2mono,
                we = (int64_t)o->host_end + raw2mono;
        ck_assert_uint_eq(r->end_ns - r->start_ns, (o->end - o->start) * 80);
        ck_assert_msg(llabs((int64_t)r->start_ns - ws) < 20000 &&
                          llabs((int64_t)r->end_ns - we) < 20000,
                      "op %llu: %llu..%llu, driver %lld..%lld",
                      (unsigned long long)k, (unsigned long long)r->start_ns,
                      (unsigned long long)r->end_ns, (long long)ws,
                      (long long)we);
    }
    ck_assert_uint_eq(k, st->count);
    return k;
}

void zm_expect_engine(const zf_op *ops, size_t nops, unsigned ordinal,
                      unsigned index, int64_t raw2mono, uint64_t want)
{
    gpuprof__io_trace *t = zm_load_trace();
    ck_assert_uint_eq(zm_match_first(t, ops, nops, ordinal, index, raw2mono,
                                     UINT64_MAX, UINT64_MAX),
                      want);
    gpuprof__io_trace_free(t);
}

size_t zm_count_ops(const zf_op *ops, size_t nops, const char *kind,
                    uint64_t *ticks)
{
    size_t c = 0;
    *ticks = 0;
    for (size_t i = 0; i < nops; i++)
        if (!strcmp(ops[i].kind, kind)) {
            c++;
            *ticks += ops[i].end - ops[i].start;
        }
    return c;
}
