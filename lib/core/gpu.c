/*
 * gpu.c - operations and activities: what backends call (gpuprof_op_begin/
 * _end, gpuprof_activity_submit), the per-thread GPU state, sources, and how
 * forwarded activities become metrics in a thread's GPU subtree. The design
 * is in gpu.h; the monitor is monitor.c.
 */
#include <stdlib.h>
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/trace.h"
#include "core/unwind.h"
#include "io/io.h"
#include "io/trace.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Between init and the start of the final write: sources accept records. */
static _Atomic int accepting;

/* ---- sources ----------------------------------------------------------
 * A fixed table of pointers the monitor scans without a lock; slots of
 * sources that closed are reused (under reg_mu, taken only when a thread
 * registers and when the monitor frees a source). */
#define MAX_SRCS 65536u
#define NAME_CACHE 64u

typedef struct src_tls {
    gp_src *src;
    struct { const char *ptr; uint32_t id; } names[NAME_CACHE];
} src_tls;

static gp_src *_Atomic srcs[MAX_SRCS];
static _Atomic uint32_t nsrcs; /* high-water mark of used slots */
static uint32_t free_slots[MAX_SRCS], nfree;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t src_key;
static pthread_once_t src_once = PTHREAD_ONCE_INIT;
static bool src_key_ok;
static __thread src_tls *tls_src __attribute__((tls_model("initial-exec")));
static __thread bool tls_patient;

void gpuprof__activity_patient(bool on) { tls_patient = on; }

uint32_t gpuprof__src_count(void) { return gp_load_acquire(&nsrcs); }
gp_src *gpuprof__src_at(uint32_t i) { return gp_load_acquire(&srcs[i]); }

static void src_close(void *arg)
{
    src_tls *st = arg;
    tls_src = NULL; /* runs on the exiting thread itself */
    if (st->src)
        gp_store_release(&st->src->closed, 1);
    free(st);
}

static void src_make_key(void)
{
    src_key_ok = pthread_key_create(&src_key, src_close) == 0;
}

void gpuprof__src_free(gp_src *s)
{
    gpuprof__chan_destroy(&s->ch);
    pthread_mutex_lock(&reg_mu);
    gp_store_relaxed(&srcs[s->slot], NULL);
    free_slots[nfree++] = s->slot;
    pthread_mutex_unlock(&reg_mu);
    free(s);
}

__attribute__((noinline)) static src_tls *src_register(void)
{
    if (!gp_load_acquire(&accepting))
        return NULL;
    src_tls *st = calloc(1, sizeof(*st));
    gp_src *s;
    if (!st || posix_memalign((void **)&s, GP_CACHELINE, sizeof(*s))) {
        free(st);
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    if (!gpuprof__chan_init(&s->ch, sizeof(gp_rec), 256,
                            (uint64_t)G.cfg.channel_items)) {
        free(s);
        free(st);
        return NULL;
    }
    pthread_mutex_lock(&reg_mu);
    uint32_t n = gp_load_relaxed(&nsrcs);
    bool ok = nfree > 0 || n < MAX_SRCS;
    if (ok) {
        s->slot = nfree ? free_slots[--nfree] : n;
        gp_store_release(&srcs[s->slot], s);
        if (s->slot == n)
            gp_store_release(&nsrcs, n + 1);
    }
    pthread_mutex_unlock(&reg_mu);
    if (!ok) {
        gpuprof__chan_destroy(&s->ch);
        free(s);
        free(st);
        gpuprof__log(GPUPROF_LOG_ERROR, "more than %u threads report GPU "
                     "work at once; this one is not measured", MAX_SRCS);
        return NULL;
    }
    st->src = s;
    pthread_once(&src_once, src_make_key);
    if (src_key_ok)
        pthread_setspecific(src_key, st);
    tls_src = st;
    gpuprof__monitor_ensure();
    return st;
}

static inline src_tls *src_tls_self(void)
{
    src_tls *st = tls_src;
    return likely(st != NULL) ? st : src_register();
}

/* The intern id of a kernel name, through a per-thread cache keyed by the
 * name's address (runtimes hand the same pointer for the same kernel). */
static uint32_t kernel_name(src_tls *st, const char *name)
{
    uintptr_t k = (uintptr_t)name;
    unsigned i = (unsigned)((k >> 4) ^ (k >> 12)) & (NAME_CACHE - 1);
    if (st->names[i].ptr == name) {
        const char *have = gpuprof__intern_name(st->names[i].id);
        if (have && strcmp(have, name) == 0)
            return st->names[i].id;
    }
    size_t len;
    uint64_t h = gpuprof__hash_str(name, &len);
    uint32_t id = gpuprof__intern(name, len, h);
    if (id) {
        st->names[i].ptr = name;
        st->names[i].id = id;
    }
    return id;
}

/* ---- life cycle ------------------------------------------------------- */
static gp_gpu *gpu_create(gp_thread *t);
void gpuprof__gpu_startup(void) { gp_store_release(&accepting, 1); }
void gpuprof__gpu_stop_accepting(void) { gp_store_release(&accepting, 0); }

gp_gpu *gpuprof__gpu_attach(gp_thread *t) { return gpu_create(t); }

void gpuprof__gpu_destroy(gp_gpu *g)
{
    gpuprof__chan_destroy(&g->act);
    gpuprof__cct_destroy(&g->tree);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static gp_gpu *gpu_create(gp_thread *t)
{
    gp_gpu *g;
    if (posix_memalign((void **)&g, GP_CACHELINE, sizeof(*g)))
        return NULL;
    memset(g, 0, sizeof(*g));
    if (!gpuprof__chan_init(&g->act, sizeof(gp_act), 64,
                            (uint64_t)G.cfg.channel_items)) {
        free(g);
        return NULL;
    }
    if (!gpuprof__cct_init(&g->tree)) {
        gpuprof__chan_destroy(&g->act);
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->thread = t;
    gp_store_release(&t->gpu, g);
    return g;
}

/* ---- attribution (under g->mu) --------------------------------------- */
typedef struct apply_ctx {
    gp_gpu *g;
    uint64_t n;
    /* The last activity's node and block: a loop's activities come for one
     * placeholder and kernel in a row (nodes and blocks never move while
     * the thread's GPU lock is held). key_node GP_CCT_NONE: none yet. */
    uint32_t key_node, key_name, key_binary, at;
    gp_mblock *b;
} apply_ctx;

/* An activity's extra values on node `at`: GPU-kind built-ins into its
 * GPU block `b`, metrics backends registered for GPU operations into its
 * registered block, each by its rule (sum or max). false: out of memory. */
static bool add_extras(gp_cct *tree, uint32_t at, gp_mblock *b, const gp_act *a)
{
    gp_mblock *rb = NULL;
    for (unsigned i = 0; i < a->nx && i < GP_XN; i++) {
        uint32_t id = a->xm[i];
        if (id >= GP_M_GPU_COUNT && id <= GP_M_GPU_LAST) {
            gp_owner_add(&b->v[id - b->first_metric], a->xv[i]);
            continue;
        }
        const gp_metric_def *m =
            id >= GP_M_REG_FIRST ? gpuprof__metric(id) : NULL;
        if (!m || m->kind != GPUPROF_IO_KIND_GPU)
            continue; /* submit accepts no other: nothing to do */
        if (!rb && !(rb = gpuprof__cct_block(tree, at, GP_BLOCK_REG)))
            return false;
        gpuprof__metric_merge(&rb->v[id - rb->first_metric], id, a->xv[i]);
    }
    return true;
}

/* An activity's metrics on the node and block `at`, `b` (kind GPU). */
static bool apply_values(gp_cct *tree, uint32_t at, gp_mblock *b,
                         const gp_act *a)
{
    if (!(a->flags & GP_ACT_NOTE)) {
        gp_owner_add(&b->v[GP_M_GPU_COUNT - b->first_metric], 1);
        gp_owner_add(&b->v[(a->flags & GP_ACT_HOST ? GP_M_API_TIME
                                                   : GP_M_GPU_TIME) -
                           b->first_metric],
                     a->dur_ns);
        gp_owner_add(&b->v[GP_M_GPU_BYTES - b->first_metric], a->bytes);
    }
    return add_extras(tree, at, b, a);
}

static void apply_one(void *ctx, const void *item)
{
    apply_ctx *c = ctx;
    const gp_act *a = item;
    gp_cct *tree = &c->g->tree;
    c->n++;
    if (a->node == c->key_node && a->name == c->key_name &&
        a->binary == c->key_binary && !(a->flags & GP_ACT_INSTR)) {
        if (!apply_values(tree, c->at, c->b, a))
            gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
        return;
    }
    uint32_t m = gpuprof__cct_child(tree, 0, GPUPROF_IO_NODE_GPU_OP, a->node,
                                    0, GPUPROF_IO_KIND_GPU);
    if (m == GP_CCT_NONE)
        goto nomem;
    uint32_t at = m;
    if (a->name &&
        (at = gpuprof__cct_child(tree, m, GPUPROF_IO_NODE_KERNEL, a->name,
                                 a->binary, GPUPROF_IO_KIND_GPU)) ==
            GP_CCT_NONE)
        goto nomem;
    if (a->flags & GP_ACT_INSTR) {
        /* Without its binary an offset means nothing: the samples stay
         * on the kernel. */
        uint32_t in = a->binary == (uint32_t)GP_NO_BINARY
                          ? at
                          : gpuprof__cct_child(tree, at,
                                               GPUPROF_IO_NODE_GPU_INSTR,
                                               a->binary, a->bytes,
                                               GPUPROF_IO_KIND_INSTR);
        gp_mblock *ib = in == GP_CCT_NONE
                            ? NULL
                            : gpuprof__cct_block(tree, in, GPUPROF_IO_KIND_INSTR);
        if (!ib)
            goto nomem;
        for (unsigned i = 0; i < a->nx && i < GP_XN; i++)
            if (a->xm[i] >= GP_M_PC_SAMPLES && a->xm[i] <= GP_M_PC_LAST)
                gp_owner_add(&ib->v[a->xm[i] - ib->first_metric], a->xv[i]);
        return;
    }
    gp_mblock *b = gpuprof__cct_block(tree, at, GPUPROF_IO_KIND_GPU);
    if (!b)
        goto nomem;
    c->key_node = a->node;
    c->key_name = a->name;
    c->key_binary = a->binary;
    c->at = at;
    c->b = b;
    if (apply_values(tree, at, b, a))
        return;
nomem:
    gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
}

static void apply_locked(gp_gpu *g)
{
    apply_ctx c = {g, 0, GP_CCT_NONE, 0, 0, 0, NULL};
    gpuprof__chan_drain(&g->act, apply_one, &c, 0);
    if (c.n)
        gp_store_release(&g->applied, gp_load_relaxed(&g->applied) + c.n);
}

void gpuprof__gpu_poll_slow(gp_gpu *g)
{
    if (pthread_mutex_trylock(&g->mu) != 0)
        return; /* a flush or the monitor is at it: never wait */
    apply_locked(g);
    pthread_mutex_unlock(&g->mu);
}

void gpuprof__gpu_apply(gp_gpu *g)
{
    pthread_mutex_lock(&g->mu);
    apply_locked(g);
    pthread_mutex_unlock(&g->mu);
}

void gpuprof__gpu_thread_exit(gp_gpu *g)
{
    /* Dekker with the monitor (monitor.c, forward): it pushes, fences,
     * then reads `gone`; we store `gone`, fence, then drain. Whatever it
     * pushed is drained here or by the monitor itself. */
    atomic_store_explicit(&g->gone, 1, memory_order_relaxed);
    gp_fence_seq_cst();
    gpuprof__gpu_apply(g);
}

/* ---- operations ------------------------------------------------------- */
__attribute__((cold, noinline)) static uint64_t op_dropped(void)
{
    gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
    return 0;
}

/* The operation's placeholder beneath `leaf`: the last one again when the
 * path and kind are the last launch's (the node of a kind beneath a node
 * never changes; the path cache forgets it with its path). */
static inline uint32_t placeholder(gp_thread *t, gp_path_cache *c,
                                   uint32_t leaf, uint32_t kind)
{
    if (c->op_leaf == leaf && c->op_kind == kind)
        return c->op_node;
    uint32_t ph = gpuprof__cct_child(&t->cct, leaf, GPUPROF_IO_NODE_GPU_OP,
                                     kind, 0, UINT32_MAX);
    if (ph != GP_CCT_NONE) {
        c->op_leaf = leaf;
        c->op_kind = kind;
        c->op_node = ph;
    }
    return ph;
}

__attribute__((noinline)) uint64_t gpuprof__op_begin(uint32_t kind,
                                                     unsigned skip)
{
    /* Nesting first, whatever the mode: a runtime calling its driver gets
     * the open operation, and its end must find the depth it left. */
    gp_thread *t = gpuprof__tls_self;
    gp_gpu *g = t ? gp_load_relaxed(&t->gpu) : NULL;
    if (g && g->depth) {
        g->depth++;
        return g->open_corr;
    }
    int mode = gp_mode();
    if (mode != GP_MODE_MEASURING || kind == 0 ||
        kind >= GPUPROF_OP_KIND_COUNT)
        return mode == GP_MODE_PAUSED && kind ? GP_CORR_PAUSED : 0;
    if (unlikely(!t) && !(t = gpuprof__thread_get()))
        return 0;
    /* Tracing: the API call starts here (its record is pushed at the end). */
    uint64_t t0 = unlikely(t->trace != NULL) ? gp_ticks() : 0;
    if (unlikely(!g)) {
        if (!(g = gpu_create(t)))
            return 0;
        gpuprof__idle_thread(); /* GPU_IDLE_CAUSE samples (idle.c) */
        g->busy_slot = gpuprof__gpu_busy_slot();
    }
    src_tls *st = src_tls_self();
    if (unlikely(!st))
        return 0;
    gpuprof__gpu_poll(g);
    uint32_t d = gp_load_relaxed(&t->depth);
    uint32_t parent = d ? gp_load_relaxed(&t->stack[d - 1].node) : 0;
    uint32_t unknown = 0, ph = GP_CCT_NONE;
    void *buf[GP_MAX_FRAMES];
    int n = gpuprof__unwind_here(buf, GP_MAX_FRAMES);
    gpuprof__cct_enter(t); /* a sample drain waits (core/sampler.h) */
    /* Frames: [0] this function, [1] ours (the public entry). */
    uint32_t leaf = gpuprof__callpath_insert(&t->cct, parent, buf, n,
                                             1 + (int)skip, &unknown, &g->path);
    if (likely(leaf != GP_CCT_NONE))
        ph = placeholder(t, &g->path, leaf, kind);
    gpuprof__cct_leave(t);
    if (unlikely(ph == GP_CCT_NONE))
        return op_dropped();
    uint64_t corr = ((uint64_t)(t->seq + 1) << GP_CORR_SEQ_BITS) |
                    (++g->next_seq & ((1ull << GP_CORR_SEQ_BITS) - 1));
    if (unlikely(!gpuprof__op_record(&st->src->ch, kind, corr, g, ph)))
        return op_dropped();
    gp_owner_add(&g->ops, 1);
    if (kind == GPUPROF_OP_KERNEL)
        gpuprof__gpu_busy(g->busy_slot); /* until its final activity */
    g->depth = 1;
    g->open_corr = corr;
    g->open_ticks = t0;
    g->open_node = t->trace != NULL ? ph : 0; /* 0: nothing to record */
    const struct gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
    if (unlikely(o != NULL))
        gpuprof__observe_op_begin(o, parent, leaf);
    return corr;
}

gpuprof_status gpuprof__op_end(uint64_t corr)
{
    if (corr == 0 || corr == GP_CORR_PAUSED)
        return GPUPROF_OK;
    gp_thread *t = gpuprof__tls_self;
    gp_gpu *g = t ? gp_load_relaxed(&t->gpu) : NULL;
    if (!g || g->depth == 0 || g->open_corr != corr)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_op_end: %llu is not the operation open "
                             "on this thread", (unsigned long long)corr);
    if (--g->depth == 0) {
        g->open_corr = 0;
        if (unlikely(t->trace != NULL) && g->open_node)
            gpuprof__trace_op(t->trace, g->open_ticks, gp_ticks(), g->open_node,
                              corr);
        const struct gpuprof_observer *o = gp_load_acquire(&gpuprof__observer);
        if (unlikely(o != NULL))
            gpuprof__observe_op_end(o);
    }
    gpuprof__gpu_poll(g);
    return GPUPROF_OK;
}

void gpuprof__op_dep(uint64_t corr, uint32_t what, uint32_t flags,
                     uint32_t device, uint32_t stream, uint64_t target)
{
    gp_thread *t = gpuprof__tls_self;
    gp_gpu *g = t ? gp_load_relaxed(&t->gpu) : NULL;
    if (corr == 0 || what >= 0xF0 /* MPI items' (trace.c) */ || !g ||
        g->depth == 0 || g->open_corr != corr ||
        !g->open_node || likely(t->trace == NULL))
        return;
    gpuprof__trace_dep(t->trace, g->open_ticks,
                       GPUPROF_IO_DEP_INFO(what, flags, device, stream),
                       target, corr);
}

GPUPROF_API uint64_t gpuprof_op_begin(gpuprof_op_kind kind,
                                      unsigned skip_frames)
{
    uint64_t c = gpuprof__op_begin((uint32_t)kind, skip_frames + 1);
    __asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
    return c == GP_CORR_PAUSED ? 0 : c;
}

GPUPROF_API gpuprof_status gpuprof_op_end(uint64_t correlation)
{
    return gpuprof__op_end(correlation);
}

/* ---- activities ------------------------------------------------------- */
gpuprof_status gpuprof__activity_submit_x(const gpuprof_activity *a,
                                          uint32_t binary, unsigned nx,
                                          const uint8_t *xm,
                                          const uint64_t *xv)
{
    if (unlikely(!a || a->size < offsetof(gpuprof_activity, name) +
                                     sizeof(a->name) ||
                 a->correlation == 0 || a->kind == 0 ||
                 a->kind >= GPUPROF_OP_KIND_COUNT || a->end_ns < a->start_ns))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_activity_submit: invalid activity");
    if (unlikely(!gp_load_relaxed(&accepting)))
        return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_DEBUG,
                             "gpuprof_activity_submit: not measuring");
    if (unlikely(a->correlation == GP_CORR_PAUSED)) { /* launched paused */
        gpuprof__stat_add(GP_STAT_RECORDS_PAUSED, 1);
        return GPUPROF_OK;
    }
    /* A kernel's final activity: no longer in flight (idle.c), whether or
     * not it can be recorded. */
    if (a->kind == GPUPROF_OP_KERNEL &&
        !(a->flags & (GP_ACT_DONE | GPUPROF_ACTIVITY_MORE)))
        gpuprof__gpu_done();
    src_tls *st = src_tls_self();
    if (unlikely(!st))
        return gpuprof__fail(GPUPROF_E_NOMEM, GPUPROF_LOG_ERROR,
                             "gpuprof_activity_submit: no channel for this "
                             "thread");
    uint32_t name = a->name && *a->name ? kernel_name(st, a->name) : 0;
    gp_rec *r = gpuprof__chan_reserve(&st->src->ch);
    /* A patient thread (a runtime's buffer thread) has the monitor empty
     * its channel rather than drop: it may wait, an application may not. */
    for (int i = 0; unlikely(!r) && tls_patient && i < 8; i++) {
        gpuprof__monitor_sync();
        r = gpuprof__chan_reserve(&st->src->ch);
    }
    if (unlikely(!r)) {
        gpuprof__stat_add(GP_STAT_RECORDS_DROPPED, 1);
        return GPUPROF_E_LIMIT;
    }
    r->type = GP_REC_ACT;
    r->kind = a->kind;
    r->corr = a->correlation;
    r->gpu = NULL;
    r->node = 0;
    r->name = name;
    r->flags = a->flags;
    r->device = a->device;
    r->stream = a->stream;
    r->start_ns = a->start_ns;
    r->end_ns = a->end_ns;
    r->bytes = a->bytes;
    r->binary = binary;
    r->nx = (uint8_t)(nx < GP_XN ? nx : GP_XN);
    for (unsigned i = 0; i < r->nx; i++) {
        r->xm[i] = xm[i];
        r->xv[i] = xv[i];
    }
    /* A host wait (every SYNC activity, or a backend's wait note): its
     * time is CPU_IDLE, and the monitor blames it (blame.c). */
    if (a->kind == GPUPROF_OP_SYNC && !(a->flags & GP_ACT_NOTE))
        r->flags |= GP_ACT_WAIT;
    if ((r->flags & GP_ACT_WAIT) && r->nx < GP_XN) {
        r->xm[r->nx] = GP_M_CPU_IDLE;
        r->xv[r->nx++] = a->end_ns - a->start_ns;
    }
    gpuprof__chan_commit(&st->src->ch);
    return GPUPROF_OK;
}

GPUPROF_API gpuprof_status gpuprof_activity_submit(const gpuprof_activity *a)
{
    if (a && a->size >= offsetof(gpuprof_activity, name) + sizeof(a->name) &&
        (a->flags & ~GPUPROF_ACTIVITY_MORE))
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_activity_submit: unknown flags %#x",
                             a->flags);
    return gpuprof__activity_submit_x(a, (uint32_t)GP_NO_BINARY, 0, NULL,
                                      NULL);
}

/* ---- fork ------------------------------------------------------------- */
void gpuprof__gpu_atfork_prepare(void) { pthread_mutex_lock(&reg_mu); }
void gpuprof__gpu_atfork_parent(void) { pthread_mutex_unlock(&reg_mu); }

void gpuprof__gpu_atfork_child(gp_thread *self)
{
    /* The parent's sources, channels and monitor stay behind (leaked, like
     * the parent's other threads); the child measures no GPU work: its
     * runtimes' threads did not survive the fork either. */
    pthread_mutex_unlock(&reg_mu); /* taken by the prepare handler */
    for (uint32_t i = 0; i < gp_load_relaxed(&nsrcs); i++)
        gp_store_relaxed(&srcs[i], NULL);
    gp_store_relaxed(&nsrcs, 0);
    nfree = 0;
    tls_src = NULL;
    if (src_key_ok)
        pthread_setspecific(src_key, NULL);
    gp_store_relaxed(&accepting, 0);
    gp_gpu *g = self ? gp_load_relaxed(&self->gpu) : NULL;
    if (g) {
        pthread_mutex_init(&g->mu, NULL);
        gpuprof__chan_init(&g->act, sizeof(gp_act), 64,
                           (uint64_t)G.cfg.channel_items);
        gpuprof__cct_zero(&g->tree);
        gp_store_relaxed(&g->forwarded, 0);
        gp_store_relaxed(&g->applied, 0);
        gp_store_relaxed(&g->ops, 0);
        gp_store_relaxed(&g->gone, 0);
        memset(&g->path, 0, sizeof(g->path));
        g->depth = 0;
        g->open_corr = 0;
        g->open_node = 0;
    }
}
