/*
 * snapshot.c - turning the live thread states into a profile file.
 *
 * A flush copies every thread's published CCT prefix into the flat arrays
 * of a gpuprof__io_profile (lib/io), converting tick metrics to nanoseconds
 * with one clock fit, adding the time of regions still open (flagged), and
 * hands the result to lib/io to encode and write atomically. It runs on the
 * flushing thread while the owners keep measuring: it only reads what cct.h
 * says a reader may read (count, then directory, with acquire order). One
 * flush at a time (G.flush_lock); each writes a new generation.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/sampler.h"
#include "core/trace.h"
#include "core/unwind.h"
#include "io/io.h"

/* An open frame's share of a flush: the time it has run so far. */
typedef struct open_add {
    uint32_t node;
    uint64_t incl, excl;
} open_add;

typedef struct snap {
    gpuprof__io_profile p;
    gpuprof__io_strtab *st;
    uint32_t node_cap, thread_cap;
    uint64_t value_cap;
    gp_clock_conv conv;
    uint64_t now;      /* ticks */
    bool final;
    uint64_t open_regions;
    uint32_t nmetrics; /* the metric table written (registered ones may
                          arrive meanwhile: their values wait a flush) */
    bool nomem;
} snap;

static bool grow(void **arr, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint64_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}

static uint32_t str(snap *s, const char *v)
{
    uint32_t off = gpuprof__io_strtab_add(s->st, v ? v : "");
    if (off == UINT32_MAX) {
        s->nomem = true;
        return 0;
    }
    return off;
}

/* Open frames of a live thread, outermost first (node indices ascend). */
static uint32_t open_frames(const gp_thread *t, uint32_t count, uint64_t now,
                            open_add *out)
{
    if (gp_load_acquire(&t->flags) & GPUPROF_IO_THREAD_EXITED)
        return 0;
    uint32_t d = gp_load_acquire(&t->depth), n = 0;
    uint64_t prev_incl = 0;
    for (uint32_t i = d; i-- > 0;) { /* innermost first, then reverse */
        const gp_frame *f = &t->stack[i];
        uint32_t node = gp_load_relaxed(&f->node);
        uint64_t start = gp_load_relaxed(&f->start);
        uint64_t child = gp_load_relaxed(&f->child_ticks);
        if (node == 0 || node >= count || start > now)
            continue; /* torn read of a frame being pushed: skip it */
        uint64_t incl = now - start, used = child + prev_incl;
        out[n++] = (open_add){node, incl, incl > used ? incl - used : 0};
        prev_incl = incl;
    }
    for (uint32_t i = 0; i < n / 2; i++) {
        open_add tmp = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = tmp;
    }
    return n;
}

static void add_value(snap *s, uint32_t metric, uint64_t v, uint16_t *count)
{
    if (v == 0)
        return;
    const gp_metric_def *m = gpuprof__metric(metric);
    if (!m || metric >= s->nmetrics) /* registered after the table */
        return;
    if (m->ticks)
        v = gp_conv_dur(&s->conv, v);
    if (v == 0 || *count == UINT16_MAX)
        return;
    if (!grow((void **)&s->p.values, &s->value_cap, s->p.value_count + 1,
              sizeof(*s->p.values))) {
        s->nomem = true;
        return;
    }
    s->p.values[s->p.value_count++] = (gpuprof__io_value){metric, v};
    (*count)++;
}

static void emit_values(snap *s, const gp_node *n, const open_add *open,
                        gpuprof__io_node *out)
{
    out->first_value = (uint32_t)s->p.value_count;
    for (gp_mblock *b = gp_load_acquire(&n->blocks); b;
         b = gp_load_acquire(&b->next)) {
        for (uint32_t k = 0; k < b->n; k++) {
            uint32_t m = b->first_metric + k;
            uint64_t v = gp_load_relaxed(&b->v[k]);
            if (open && m == GP_M_REGION_INCL)
                v += open->incl;
            else if (open && m == GP_M_REGION_EXCL)
                v += open->excl;
            add_value(s, m, v, &out->value_count);
        }
    }
}

/* The GPU subtree of a thread (gpu.h): mirror nodes (children of its root)
 * carry the metrics of the placeholder whose index in the region CCT is
 * their key_a; their children (kernels, ...) become children of that
 * placeholder in the file. Read before the region CCT, so that every
 * placeholder a mirror names is published in the count read after. */
typedef struct gpu_view {
    uint32_t count;
    const gp_cct_dir *dir;
    uint32_t *mirror_of; /* region node -> mirror (GP_CCT_NONE: none) */
} gpu_view;

static void gpu_view_open(const gp_thread *t, gpu_view *v)
{
    memset(v, 0, sizeof(*v));
    const gp_gpu *g = gp_load_acquire(&t->gpu);
    if (g) {
        v->count = gp_load_acquire(&g->tree.count);
        v->dir = gp_load_acquire(&g->tree.dir);
    }
}

/* After the region nodes of a thread (first .. first+count): its GPU
 * nodes other than mirrors; returns how many were added. */
static uint32_t emit_gpu_nodes(snap *s, const gpu_view *v, uint64_t first,
                               uint32_t count)
{
    if (v->count <= 1)
        return 0;
    uint32_t *out = malloc(v->count * sizeof(*out)); /* tree -> thread rel */
    if (!out) {
        s->nomem = true;
        return 0;
    }
    uint32_t added = 0;
    out[0] = GP_CCT_NONE;
    for (uint32_t j = 1; j < v->count && !s->nomem; j++) {
        const gp_node *n = gp_cct_node(v->dir, j);
        out[j] = GP_CCT_NONE;
        if (n->parent == 0) { /* a mirror: it stands for its placeholder */
            if (n->key_a < count && v->mirror_of[n->key_a] == j)
                out[j] = n->key_a;
            continue;
        }
        if (n->parent >= j || out[n->parent] == GP_CCT_NONE)
            continue;
        uint64_t at = first + count + added;
        uint64_t cap = s->node_cap;
        if (!grow((void **)&s->p.nodes, &cap, at + 1, sizeof(*s->p.nodes))) {
            s->nomem = true;
            break;
        }
        s->node_cap = (uint32_t)cap;
        gpuprof__io_node *o = &s->p.nodes[at];
        memset(o, 0, sizeof(*o));
        o->parent = out[n->parent];
        o->kind = n->kind;
        o->flags = gp_load_relaxed(&n->flags);
        o->key_a = n->key_a;
        o->key_b = n->key_b;
        if (n->kind == GPUPROF_IO_NODE_KERNEL)
            o->key_a = str(s, gpuprof__intern_name(n->key_a));
        emit_values(s, n, NULL, o);
        out[j] = count + added++;
    }
    free(out);
    return added;
}

static void emit_thread(snap *s, const gp_thread *t)
{
    gpu_view gv;
    gpu_view_open(t, &gv); /* the GPU subtree before the region CCT */
    uint32_t count = gp_load_acquire(&t->cct.count); /* count before dir */
    const gp_cct_dir *dir = gp_load_acquire(&t->cct.dir);
    if (gv.count > 1) {
        gv.mirror_of = malloc(count * sizeof(*gv.mirror_of));
        if (!gv.mirror_of) {
            s->nomem = true;
            return;
        }
        memset(gv.mirror_of, 0xFF, count * sizeof(*gv.mirror_of));
        for (uint32_t j = 1; j < gv.count; j++) {
            const gp_node *n = gp_cct_node(gv.dir, j);
            if (n->parent == 0 && n->key_a < count &&
                gp_cct_node(dir, n->key_a)->kind == GPUPROF_IO_NODE_GPU_OP)
                gv.mirror_of[n->key_a] = j;
        }
    }
    open_add open[GP_MAX_DEPTH];
    uint32_t nopen = open_frames(t, count, s->now, open), o = 0;
    s->open_regions += nopen;
    uint64_t first = s->p.node_count, cap = s->node_cap;
    if (!grow((void **)&s->p.nodes, &cap, first + count, sizeof(*s->p.nodes))) {
        s->nomem = true;
        return;
    }
    s->node_cap = (uint32_t)cap;
    for (uint32_t i = 0; i < count; i++) {
        const gp_node *n = gp_cct_node(dir, i);
        gpuprof__io_node *out = &s->p.nodes[first + i];
        memset(out, 0, sizeof(*out));
        out->parent = i == 0 ? GPUPROF_IO_NONE : n->parent;
        out->kind = n->kind;
        out->flags = gp_load_relaxed(&n->flags);
        out->key_a = n->key_a;
        out->key_b = n->key_b;
        if (n->kind == GPUPROF_IO_NODE_REGION)
            out->key_a = str(s, gpuprof__intern_name(n->key_a));
        const open_add *oa = o < nopen && open[o].node == i ? &open[o++] : NULL;
        if (oa)
            out->flags |= GPUPROF_IO_NODE_OPEN;
        if (gv.mirror_of && gv.mirror_of[i] != GP_CCT_NONE)
            emit_values(s, gp_cct_node(gv.dir, gv.mirror_of[i]), NULL, out);
        else
            emit_values(s, n, oa, out);
    }
    uint32_t extra = gv.mirror_of ? emit_gpu_nodes(s, &gv, first, count) : 0;
    free(gv.mirror_of);
    count += extra;
    s->p.node_count += count;
    uint32_t fl = gp_load_acquire(&t->flags);
    uint64_t end = (fl & GPUPROF_IO_THREAD_EXITED) ? gp_load_relaxed(&t->end_ticks)
                                                   : s->now;
    pthread_mutex_lock(&G.lock); /* gpuprof_thread_set_name writes it */
    uint32_t name = str(s, t->name);
    pthread_mutex_unlock(&G.lock);
    s->p.threads[s->p.thread_count++] = (gpuprof__io_thread){
        .tid = t->tid, .name = name, .flags = fl,
        .first_node = (uint32_t)first, .node_count = count,
        .start_ns = gp_conv_at(&s->conv, t->start_ticks),
        .end_ns = gp_conv_at(&s->conv, end)};
}

/* Every thread state, oldest first, copied under G.lock. */
static gp_thread **thread_list(uint32_t *n)
{
    pthread_mutex_lock(&G.lock);
    uint32_t c = 0;
    for (gp_thread *t = G.threads; t; t = t->next_all)
        c++;
    gp_thread **v = malloc((c ? c : 1) * sizeof(*v));
    if (v) {
        uint32_t i = c;
        for (gp_thread *t = G.threads; t; t = t->next_all)
            v[--i] = t;
    }
    pthread_mutex_unlock(&G.lock);
    *n = c;
    return v;
}

static uint32_t str_cb(void *s, const char *v)
{
    return str(s, v);
}

static void emit_tables(snap *s)
{
    uint32_t nm = s->nmetrics;
    s->p.metrics = calloc(nm, sizeof(*s->p.metrics));
    s->p.counters = calloc(GP_STAT_COUNT, sizeof(*s->p.counters));
    if (!s->p.metrics || !s->p.counters) {
        s->nomem = true;
        return;
    }
    for (uint32_t i = 0; i < nm; i++) {
        const gp_metric_def *m = gpuprof__metric(i);
        s->p.metrics[i] = (gpuprof__io_metric){
            str(s, m->name), str(s, m->description),
            m->type,         m->combine,
            m->unit,         m->kind,
            m->ext_flags,    m->count_metric ? str(s, m->count_metric) : 0};
    }
    s->p.metric_count = nm;
    /* Read after the threads: every module a frame node names is here. */
    uint32_t nmod = gpuprof__module_count();
    s->p.modules = calloc(nmod ? nmod : 1, sizeof(*s->p.modules));
    if (!s->p.modules) {
        s->nomem = true;
        return;
    }
    for (uint32_t i = 0; i < nmod; i++) {
        const gp_module_info *m = gpuprof__module(i);
        s->p.modules[i] = (gpuprof__io_module){str(s, m->path), m->flags,
                                               m->base, m->size};
    }
    s->p.module_count = nmod;
    if (s->final)
        gpuprof__stat_add(GP_STAT_REGIONS_OPEN_AT_FINALIZE, s->open_regions);
    for (int i = 0; i < GP_STAT_COUNT; i++)
        s->p.counters[i] = (gpuprof__io_counter){
            str(s, gpuprof__stat_name((enum gp_stat)i)),
            gpuprof__stat_read((enum gp_stat)i)};
    s->p.counter_count = GP_STAT_COUNT;
    s->p.devattr_count = gpuprof__devices_attrs(&s->p.devattrs, str_cb, s);
}

static void emit_identity(snap *s)
{
    pthread_mutex_lock(&G.lock);
    s->p.host = str(s, G.host);
    s->p.exe = str(s, G.exe);
    s->p.cmdline = str(s, G.cmdline);
    s->p.rank = G.cfg.rank;
    s->p.generation = ++G.generation;
    s->p.flags = (s->final ? GPUPROF_IO_PROFILE_FINAL : 0) |
                 (G.forked ? GPUPROF_IO_PROFILE_FORKED : 0);
    s->p.start_ns = gp_conv_at(&s->conv, G.start_ticks);
    s->p.start_realtime_ns = G.start_realtime_ns;
    pthread_mutex_unlock(&G.lock);
    s->p.pid = (uint32_t)getpid();
    s->p.end_ns = gp_conv_at(&s->conv, s->now);
}

static void snap_free(snap *s)
{
    free(s->p.metrics);
    free(s->p.modules);
    free(s->p.threads);
    free(s->p.nodes);
    free(s->p.values);
    free(s->p.counters);
    free(s->p.devattrs);
    gpuprof__io_strtab_free(s->st);
}

/* Builds the profile in *s; false when out of memory. */
static bool build(snap *s, bool final)
{
    memset(s, 0, sizeof(*s));
    s->final = final;
    s->st = gpuprof__io_strtab_new();
    gpuprof__clock_conv(&s->conv);
    s->now = gp_ticks();
    gpuprof__sampler_drain_all(); /* every CPU sample taken so far */
    /* Every activity submitted so far: attributed, then applied; exited
     * GPU threads beyond keep_threads that are done are merged. */
    gpuprof__monitor_sync();
    gpuprof__monitor_blame_flush();
    /* After the blame's flush: it may register detect.launch_wait. */
    s->nmetrics = gpuprof__metric_count();
    uint32_t nt;
    gp_thread **tv = thread_list(&nt);
    for (uint32_t i = 0; tv && i < nt; i++) {
        gp_gpu *g = gp_load_acquire(&tv[i]->gpu);
        if (g)
            gpuprof__gpu_apply(g);
    }
    free(tv);
    gpuprof__threads_merge_gpu();
    tv = thread_list(&nt);
    s->p.threads = calloc(nt ? nt : 1, sizeof(*s->p.threads));
    if (!s->st || !tv || !s->p.threads) {
        free(tv);
        return false;
    }
    emit_identity(s);
    for (uint32_t i = 0; i < nt && !s->nomem; i++)
        emit_thread(s, tv[i]);
    free(tv);
    emit_tables(s);
    s->p.strings = (char *)gpuprof__io_strtab_data(s->st, &s->p.strings_size);
    return !s->nomem;
}

/* mkdir -p; 0 or an errno. */
static int mkdir_p(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
        return ENAMETOOLONG;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST)
            return errno;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return errno;
    struct stat sb;
    if (stat(buf, &sb))
        return errno;
    return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
}

gpuprof_status gpuprof__make_dir(const char *dir)
{
    int e = mkdir_p(dir);
    if (e)
        return gpuprof__fail(GPUPROF_E_IO, GPUPROF_LOG_ERROR,
                             "cannot create output directory '%s': %s", dir,
                             strerror(e));
    return GPUPROF_OK;
}

/* Is there room for `size` bytes in `dir`? (true when it cannot tell) */
static bool dir_has_room(const char *dir, size_t size)
{
    struct statvfs v;
    return statvfs(dir, &v) != 0 || !v.f_blocks ||
           (uint64_t)v.f_bavail * v.f_frsize >= size + 65536u;
}

static int encode(snap *s, uint8_t **buf, size_t *size, char *err, size_t es)
{
    int rc = gpuprof__io_encode(&s->p, GPUPROF_IO_DEFAULT_LEVEL, buf, size,
                                err, es);
    if (rc)
        gpuprof__fail(rc == GPUPROF_IO_ERR_NOMEM ? GPUPROF_E_NOMEM
                                                 : GPUPROF_E_INTERNAL,
                      GPUPROF_LOG_ERROR, "cannot encode profile: %s", err);
    return rc;
}

/* The profile goes before the trace: when its file system is too full
 * for it, the trace is cut back by whole chunks (counted dropped, in this
 * profile too) and the profile encoded again. true: try the write again. */
static bool room_from_trace(snap *s, const char *dir, uint8_t **buf,
                            size_t *size, char *err, size_t es)
{
    uint64_t records = 0;
    if (dir_has_room(dir, *size) ||
        !gpuprof__trace_make_room(*size + 65536u, &records))
        return false;
    gpuprof__log(GPUPROF_LOG_ERROR, "no room for the profile in '%s': the "
                 "trace was cut back (%llu records dropped, counted)", dir,
                 (unsigned long long)records);
    s->p.counters[GP_STAT_RECORDS_DROPPED].value += records;
    free(*buf);
    *buf = NULL;
    return encode(s, buf, size, err, es) == 0;
}

static gpuprof_status encode_and_write(snap *s)
{
    char err[256], path[sizeof(G.path)], dir[sizeof(G.cfg.output_dir)];
    pthread_mutex_lock(&G.lock);
    memcpy(path, G.path, sizeof(path));
    memcpy(dir, G.cfg.output_dir, sizeof(dir));
    pthread_mutex_unlock(&G.lock);
    uint8_t *buf = NULL;
    size_t size = 0;
    int rc = encode(s, &buf, &size, err, sizeof(err));
    if (rc)
        return rc == GPUPROF_IO_ERR_NOMEM ? GPUPROF_E_NOMEM
                                          : GPUPROF_E_INTERNAL;
    gpuprof__trace_reserve(size); /* room kept for the next one */
    gpuprof_status st = gpuprof__make_dir(dir); /* it may have been removed */
    bool failed = st == GPUPROF_OK &&
                  gpuprof__io_write_atomic(path, buf, size, err, sizeof(err));
    if (failed && room_from_trace(s, dir, &buf, &size, err, sizeof(err)))
        failed = gpuprof__io_write_atomic(path, buf, size, err, sizeof(err));
    if (failed)
        st = gpuprof__fail(GPUPROF_E_IO, GPUPROF_LOG_ERROR,
                           "cannot write profile '%s': %s", path, err);
    free(buf);
    if (st == GPUPROF_OK)
        gpuprof__log(GPUPROF_LOG_INFO, "wrote %s (generation %llu, %zu bytes)",
                     path, (unsigned long long)s->p.generation, size);
    return st;
}

gpuprof_status gpuprof__write_profile(bool final)
{
    pthread_mutex_lock(&G.flush_lock);
    if (G.final_written) { /* a flush that raced with finalize lost */
        pthread_mutex_unlock(&G.flush_lock);
        return gpuprof__fail(GPUPROF_E_STATE, GPUPROF_LOG_DEBUG,
                             "gpuprof_flush: already finalized");
    }
    G.final_written = final;
    snap s;
    gpuprof_status st = GPUPROF_E_NOMEM;
    if (build(&s, final))
        st = encode_and_write(&s);
    else
        gpuprof__fail(st, GPUPROF_LOG_ERROR,
                      "out of memory while building the profile");
    snap_free(&s);
    if (gpuprof__trace_on())
        gpuprof__trace_flush(); /* the monitor forwarded its records above */
    gpuprof__stat_add(st == GPUPROF_OK ? GP_STAT_FLUSH_COUNT
                                       : GP_STAT_FLUSH_ERRORS, 1);
    pthread_mutex_unlock(&G.flush_lock);
    return st;
}
