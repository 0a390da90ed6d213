/*
 * region.c - gpuprof_region_begin/end: the hottest path of the library.
 *
 * A begin costs one mode load, one TLS load, a string hash, one probe of
 * the thread's (parent, name) cache, a strcmp to confirm it, a clock read
 * and a push; an end costs a strcmp, a clock read and three single-writer
 * adds. No locks and no shared writes: the thread's CCT is its own (cct.h).
 * Visits are counted at begin, times at end; exclusive time is inclusive
 * time minus the inclusive time of closed child regions, kept per frame.
 * Anything unusual (first use of a name, mismatch, depth overflow, wrong
 * state) leaves through a cold function; a first use writes the tree
 * inside a guarded span (core/sampler.h), so a sample drain on another
 * thread never writes it meanwhile. An observer of the thread
 * (gpuprof_be_observe: a counter backend) costs one load while none is
 * installed; when one is, each change of the innermost region is told to
 * it.
 */
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/trace.h"
#include "io/io.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

__attribute__((cold, noinline)) static gpuprof_status outside(void)
{
    return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_DEBUG,
                         "region call outside gpuprof_init..gpuprof_finalize");
}

/* While paused a region call costs this: one load and two compares. */
#define CHECK_MODE()                                                            \
    do {                                                                        \
        int m_ = gp_mode();                                                     \
        if (unlikely(m_ != GP_MODE_MEASURING))                                  \
            return m_ == GP_MODE_PAUSED ? GPUPROF_OK : outside();               \
    } while (0)

__attribute__((cold, noinline)) static gpuprof_status bad_name(void)
{
    return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                         "region name is NULL or empty");
}

__attribute__((cold, noinline)) static gpuprof_status no_thread(void)
{
    return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                         "out of memory creating the thread's state");
}

__attribute__((cold, noinline)) static gpuprof_status too_deep(gp_thread *t)
{
    t->overflow++;
    gpuprof__stat_add(GP_STAT_REGIONS_DEPTH_EXCEEDED, 1);
    return gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_WARN,
                         "regions nested deeper than %d are not recorded",
                         GP_MAX_DEPTH);
}

static inline void push(gp_thread *t, uint32_t d, uint32_t node,
                        gp_mblock *blk, const char *name)
{
    const struct gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
    if (unlikely(o != NULL))
        gpuprof__observe_region(
            o, d ? gp_load_relaxed(&t->stack[d - 1].node) : 0, node);
    gp_frame *f = &t->stack[d];
    gp_store_relaxed(&f->node, node);
    gp_store_relaxed(&f->child_ticks, 0);
    f->blk = blk;
    f->name = name;
    gp_owner_add(&blk->v[GP_M_REGION_VISITS - blk->first_metric], 1);
    gp_owner_add(&t->entered, 1);
    gp_store_relaxed(&f->start, gp_ticks());
    gp_store_release(&t->depth, d + 1);
    gp_gpu *g = gp_load_relaxed(&t->gpu);
    if (unlikely(g != NULL))
        gpuprof__gpu_poll(g); /* apply what the monitor forwarded */
}

void gpuprof__region_close_from(gp_thread *t, uint32_t i, uint64_t now,
                                uint8_t flags)
{
    uint32_t d = gp_load_relaxed(&t->depth);
    while (d > i) {
        gp_frame *f = &t->stack[--d];
        uint64_t start = gp_load_relaxed(&f->start);
        uint64_t dur = now > start ? now - start : 0; /* never negative */
        uint64_t child = gp_load_relaxed(&f->child_ticks);
        gp_mblock *b = f->blk;
        gp_owner_add(&b->v[GP_M_REGION_INCL - b->first_metric], dur);
        gp_owner_add(&b->v[GP_M_REGION_EXCL - b->first_metric],
                     dur > child ? dur - child : 0);
        if (d > 0)
            gp_owner_add(&t->stack[d - 1].child_ticks, dur);
        if (flags) {
            gp_node *n = gp_cct_node(gp_load_relaxed(&t->cct.dir),
                                     gp_load_relaxed(&f->node));
            atomic_fetch_or_explicit(&n->flags, flags, memory_order_relaxed);
        }
        if (unlikely(t->trace != NULL))
            gpuprof__trace_region(t->trace, start, now,
                                  gp_load_relaxed(&f->node));
        gp_store_release(&t->depth, d);
        const struct gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
        if (unlikely(o != NULL))
            gpuprof__observe_region(
                o, gp_load_relaxed(&f->node),
                d ? gp_load_relaxed(&t->stack[d - 1].node) : 0);
    }
    gp_gpu *g = gp_load_relaxed(&t->gpu);
    if (unlikely(g != NULL))
        gpuprof__gpu_poll(g);
}

/* The calling thread, its depth and the node of its innermost open region
 * (the root when none), or why a region cannot be opened now. */
static inline gpuprof_status where(gp_thread **tp, uint32_t *dp,
                                   uint32_t *parent)
{
    gp_thread *t = gpuprof__thread_get();
    if (unlikely(!t))
        return no_thread();
    uint32_t d = gp_load_relaxed(&t->depth);
    if (unlikely(d >= GP_MAX_DEPTH))
        return too_deep(t);
    *tp = t;
    *dp = d;
    *parent = d ? gp_load_relaxed(&t->stack[d - 1].node) : 0;
    return GPUPROF_OK;
}

/* First use of `name` beneath `parent` in this thread. */
__attribute__((noinline)) static gpuprof_status
begin_slow(gp_thread *t, uint32_t d, uint32_t parent, const char *name,
           size_t len, uint64_t h, bool cache)
{
    uint32_t id = gpuprof__intern(name, len, h);
    if (!id)
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                             "out of memory interning region '%s'", name);
    gpuprof__cct_enter(t); /* a sample drain waits (core/sampler.h) */
    uint32_t node = gpuprof__cct_child(&t->cct, parent, GPUPROF_IO_NODE_REGION,
                                       id, 0, GPUPROF_IO_KIND_REGION);
    gp_mblock *blk = node == GP_CCT_NONE ? NULL : gp_cct_blocks(&t->cct, node);
    const char *interned = gpuprof__intern_name(id);
    if (blk && cache)
        gpuprof__cct_name_put(&t->cct, parent, h, node, interned, blk);
    gpuprof__cct_leave(t);
    if (node == GP_CCT_NONE)
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                             "out of memory adding region '%s'", name);
    push(t, d, node, blk, interned);
    return GPUPROF_OK;
}

GPUPROF_API gpuprof_status gpuprof_region_begin(const char *name)
{
    CHECK_MODE();
    if (unlikely(!name || !*name))
        return bad_name();
    gp_thread *t = NULL;
    uint32_t d = 0, parent = 0;
    gpuprof_status st = where(&t, &d, &parent);
    if (unlikely(st != GPUPROF_OK))
        return st;
    size_t len;
    uint64_t h = gpuprof__hash_str(name, &len);
    const gp_name_slot *s = gpuprof__cct_name_find(&t->cct, parent, h);
    if (likely(s && strcmp(s->name, name) == 0)) {
        push(t, d, s->node, s->blk, s->name);
        return GPUPROF_OK;
    }
    return begin_slow(t, d, parent, name, len, h, s == NULL);
}

/* An end that does not name the innermost open region: if it names an
 * outer one, close everything down to it (inner ones flagged); otherwise
 * change nothing. Either way it is counted and reported. */
__attribute__((cold, noinline)) static gpuprof_status
end_mismatch(gp_thread *t, const char *name, const char *interned)
{
    uint32_t d = t ? gp_load_relaxed(&t->depth) : 0;
    gpuprof__stat_add(GP_STAT_REGIONS_UNBALANCED, 1);
    for (uint32_t i = d; i-- > 0;) {
        const char *n = t->stack[i].name;
        if (interned ? n == interned : strcmp(n, name) == 0) {
            uint64_t now = gp_ticks();
            gpuprof__region_close_from(t, i + 1, now, GPUPROF_IO_NODE_UNBALANCED);
            gpuprof__region_close_from(t, i, now, 0);
            return gpuprof__fail(GPUPROF_E_UNBALANCED, GPUPROF_LOG_WARN,
                                 "region end '%s' closed %u inner region(s) "
                                 "still open", n, d - i - 1);
        }
    }
    if (!name)
        name = interned ? interned : "(unknown handle)";
    return gpuprof__fail(GPUPROF_E_UNBALANCED, GPUPROF_LOG_WARN,
                         "region end '%s' matches no open region%s%s%s", name,
                         d ? " (innermost is '" : "",
                         d ? t->stack[d - 1].name : "", d ? "')" : "");
}

/* Ends beyond the depth limit match begins that were not recorded. */
static inline bool swallow_overflow(gp_thread *t)
{
    if (likely(t->overflow == 0))
        return false;
    t->overflow--;
    return true;
}

GPUPROF_API gpuprof_status gpuprof_region_end(const char *name)
{
    CHECK_MODE();
    if (unlikely(!name || !*name))
        return bad_name();
    gp_thread *t = gpuprof__tls_self;
    uint32_t d = t ? gp_load_relaxed(&t->depth) : 0;
    if (t && swallow_overflow(t))
        return GPUPROF_OK;
    if (likely(d > 0 && strcmp(t->stack[d - 1].name, name) == 0)) {
        gpuprof__region_close_from(t, d - 1, gp_ticks(), 0);
        return GPUPROF_OK;
    }
    return end_mismatch(t, name, NULL);
}

GPUPROF_API gpuprof_status gpuprof_region_register(const char *name,
                                                   gpuprof_region *out)
{
    if (!name || !*name || !out)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_region_register: NULL or empty argument");
    size_t len;
    uint64_t h = gpuprof__hash_str(name, &len);
    uint32_t id = gpuprof__intern(name, len, h);
    if (!id)
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                             "out of memory registering region '%s'", name);
    *out = id;
    return GPUPROF_OK;
}

__attribute__((cold, noinline)) static gpuprof_status bad_handle(uint32_t id)
{
    return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                         "region handle %u was never registered", id);
}

GPUPROF_API gpuprof_status gpuprof_region_begin_handle(gpuprof_region id)
{
    CHECK_MODE();
    const char *name = gpuprof__intern_name(id);
    if (unlikely(!name))
        return bad_handle(id);
    gp_thread *t = NULL;
    uint32_t d = 0, parent = 0;
    gpuprof_status st = where(&t, &d, &parent);
    if (unlikely(st != GPUPROF_OK))
        return st;
    gpuprof__cct_enter(t);
    uint32_t node = gpuprof__cct_child(&t->cct, parent, GPUPROF_IO_NODE_REGION,
                                       id, 0, GPUPROF_IO_KIND_REGION);
    gpuprof__cct_leave(t);
    if (unlikely(node == GP_CCT_NONE))
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                             "out of memory adding region '%s'", name);
    push(t, d, node, gp_cct_blocks(&t->cct, node), name);
    return GPUPROF_OK;
}

GPUPROF_API gpuprof_status gpuprof_region_end_handle(gpuprof_region id)
{
    CHECK_MODE();
    const char *name = gpuprof__intern_name(id);
    if (unlikely(!name))
        return bad_handle(id);
    gp_thread *t = gpuprof__tls_self;
    uint32_t d = t ? gp_load_relaxed(&t->depth) : 0;
    if (t && swallow_overflow(t))
        return GPUPROF_OK;
    if (likely(d > 0 && t->stack[d - 1].name == name)) {
        gpuprof__region_close_from(t, d - 1, gp_ticks(), 0);
        return GPUPROF_OK;
    }
    return end_mismatch(t, NULL, name);
}
