/*
 * an_export_chrome.c - traces as Chrome Trace Event JSON (`gpuprof export
 * --chrome`), which ui.perfetto.dev and chrome://tracing open.
 *
 * Every trace (*.gptrace) of the given measurement directories is one
 * process; its profile (the .gpuprof of the same name) names what the
 * records' contexts point at: regions, operation kinds, kernels. A CPU
 * thread is a track (its OS tid) holding its regions and its operations'
 * API calls as complete events; each GPU (device, stream) is a track of its
 * own (a pseudo tid). A flow arrow joins each launch to every device record
 * with its correlation id (format 1.1; 1.0 traces have none); both ends
 * lie at the start of their slices and share the slices' category "gpu"
 * (GPU operations on either side; regions are "region"), which is how
 * Chrome DevTools' trace engine binds flows, and Perfetto binds them to
 * the enclosing slice ("bp":"e"). A thread without a name whose tid is
 * the pid is named "main". Times are
 * microseconds from the earliest record of all inputs; processes on other
 * hosts than the first are shifted by the difference of their hosts'
 * CLOCK_REALTIME - CLOCK_MONOTONIC (from the profiles), so one file can
 * hold a whole MPI run.
 *
 * Two passes over the inputs: the first finds the earliest time and each
 * host's clock offset, the second writes. One trace and its profile are in
 * memory at a time; the JSON is written as it goes.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/an_internal.h"
#include "io/trace.h"

#define PSEUDO_CPU 0x20000000u /* tid of a thread without (unique) OS tid */
#define PSEUDO_GPU 0x40000000u /* tid of GPU track k: PSEUDO_GPU + k */
#define MULTI (UINT32_MAX - 1) /* a placeholder with several kernels */

typedef struct input {
    char *trace, *profile; /* profile NULL when absent */
    char *host;
    int64_t offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC of its host */
    int64_t shift;  /* added to its times: onto the first host's clock */
} input;

typedef struct out_t {
    FILE *f;
    bool first;     /* no event written yet */
    uint64_t t0;    /* the earliest record, shifted */
    uint64_t flows; /* flow ids given */
} out_t;

/* ---- JSON --------------------------------------------------------------- */
#define jstr gpuprof__an_json_str

/* Nanoseconds as microseconds with three decimals (exact). */
static void jus(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void ev_begin(out_t *o)
{
    fputs(o->first ? "\n" : ",\n", o->f);
    o->first = false;
}

/* A metadata event: NAME with args {KEY: string or number}. */
static void meta(out_t *o, uint32_t pid, uint32_t tid, const char *name,
                 const char *str, int64_t num)
{
    ev_begin(o);
    fprintf(o->f, "{\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
            ",\"name\":\"%s\",\"args\":{", pid, tid, name);
    if (str) {
        fputs("\"name\":", o->f);
        jstr(o->f, str);
    } else {
        fprintf(o->f, "\"sort_index\":%" PRId64, num);
    }
    fputs("}}", o->f);
}

static uint64_t rel(const out_t *o, const input *in, uint64_t t)
{
    int64_t v = (int64_t)t + in->shift - (int64_t)o->t0;
    return v > 0 ? (uint64_t)v : 0;
}

/* A complete event; `args` is JSON members or "". */
static void complete(out_t *o, const input *in, uint32_t pid, uint32_t tid,
                     const gpuprof__io_trace_rec *r, const char *cat,
                     const char *name, const char *args)
{
    ev_begin(o);
    fprintf(o->f, "{\"ph\":\"X\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
            ",\"ts\":", pid, tid);
    jus(o->f, rel(o, in, r->start_ns));
    fputs(",\"dur\":", o->f);
    jus(o->f, r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0);
    fprintf(o->f, ",\"cat\":\"%s\",\"name\":", cat);
    jstr(o->f, name);
    fprintf(o->f, ",\"args\":{%s}}", args);
}

static void flow(out_t *o, const char *ph, uint32_t pid, uint32_t tid,
                 uint64_t ts, uint64_t id)
{
    ev_begin(o);
    fprintf(o->f, "{\"ph\":\"%s\",\"bp\":\"e\",\"id\":%" PRIu64
            ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", ph, id, pid,
            tid);
    jus(o->f, ts);
    fputs(",\"cat\":\"gpu\",\"name\":\"launch\"}", o->f);
}

/* ---- inputs ------------------------------------------------------------- */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the traces of `dir` (sorted by name) to *v. */
static gpuprof_status list(const char *dir, input **v, uint32_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot read: %s", dir,
                                strerror(errno));
    char **names = NULL;
    uint32_t k = 0, cap = 0;
    gpuprof_status st = GPUPROF_OK;
    struct dirent *e;
    while (st == GPUPROF_OK && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 8 ||
            strcmp(e->d_name + len - 8, ".gptrace"))
            continue;
        if (k == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof(*nn));
            if (!nn) {
                st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
                break;
            }
            names = nn;
        }
        if (!(names[k++] = strdup(e->d_name)))
            st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    closedir(d);
    if (st == GPUPROF_OK && k == 0 &&
        gpuprof__an_dir_kind(dir) == GPUPROF__AN_DIR_DATABASE)
        st = gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s is an analysis "
                              "database; the Chrome export reads the "
                              "measurement directories it was made from "
                              "(their *.gptrace files)", dir);
    else if (st == GPUPROF_OK && k == 0)
        st = gpuprof__an_fail(GPUPROF_E_NOTFOUND, "%s: no traces (*.gptrace: "
                              "run the program with GPUPROF_TRACE=1)", dir);
    if (st == GPUPROF_OK && k)
        qsort(names, k, sizeof(*names), cmp_str);
    input *nv = st == GPUPROF_OK ? realloc(*v, (*n + k) * sizeof(**v)) : NULL;
    if (st == GPUPROF_OK && !nv)
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (nv)
        *v = nv;
    for (uint32_t i = 0; i < k; i++) {
        if (st == GPUPROF_OK && names[i]) {
            input *in = &(*v)[(*n)++];
            memset(in, 0, sizeof(*in));
            size_t dl = strlen(dir), nl = strlen(names[i]);
            in->trace = malloc(dl + nl + 2);
            in->profile = malloc(dl + nl + 2);
            if (!in->trace || !in->profile) {
                st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
            } else {
                sprintf(in->trace, "%s/%s", dir, names[i]);
                sprintf(in->profile, "%.*s.gpuprof",
                        (int)(dl + nl + 1 - 8), in->trace);
            }
        }
        free(names[i]);
    }
    free(names);
    return st;
}

static void inputs_free(input *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(v[i].trace);
        free(v[i].profile);
        free(v[i].host);
    }
    free(v);
}

/* Reads a trace (sorted) and its profile (NULL when there is none). */
static gpuprof_status load(input *in, gpuprof__io_trace **t,
                           gpuprof__io_profile **p)
{
    char err[256];
    *p = NULL;
    int rc = gpuprof__io_trace_read_file(in->trace, t, err, sizeof(err));
    if (rc)
        return gpuprof__an_io_status(rc, in->trace, err);
    gpuprof__io_trace_sort(*t);
    if (in->profile && access(in->profile, F_OK) != 0) {
        free(in->profile);
        in->profile = NULL;
    }
    if (!in->profile)
        return GPUPROF_OK;
    gpuprof_status st = gpuprof__an_load(in->profile, p);
    if (st != GPUPROF_OK) {
        gpuprof__io_trace_free(*t);
        *t = NULL;
    }
    return st;
}

static uint64_t earliest(const gpuprof__io_trace *t)
{
    uint64_t m = UINT64_MAX;
    for (uint32_t i = 0; i < t->stream_count; i++)
        if (t->streams[i].count && t->streams[i].recs[0].start_ns < m)
            m = t->streams[i].recs[0].start_ns;
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        if (t->ops[i].count && t->ops[i].recs[0].start_ns < m)
            m = t->ops[i].recs[0].start_ns;
    return m;
}

/* Pass one: each input's host and clock shift, and the earliest time. */
static gpuprof_status survey(input *v, uint32_t n, out_t *o)
{
    o->t0 = UINT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        gpuprof__io_trace *t;
        gpuprof__io_profile *p;
        gpuprof_status st = load(&v[i], &t, &p);
        if (st != GPUPROF_OK)
            return st;
        v[i].host = strdup(p ? gpuprof__io_str(p, p->host) : "");
        v[i].offset = p ? (int64_t)(p->start_realtime_ns - p->start_ns) : 0;
        v[i].shift = 0;
        for (uint32_t j = 0; j < i; j++) /* the first input of its host */
            if (v[i].host && v[j].host && !strcmp(v[i].host, v[j].host)) {
                v[i].offset = v[j].offset;
                break;
            }
        if (p && v[0].host && i) /* onto the first input's host's clock */
            v[i].shift = v[i].offset - v[0].offset;
        uint64_t m = earliest(t);
        int64_t at = (int64_t)m + v[i].shift;
        if (m != UINT64_MAX && (o->t0 == UINT64_MAX || at < (int64_t)o->t0))
            o->t0 = at > 0 ? (uint64_t)at : 0;
        gpuprof__io_trace_free(t);
        gpuprof__io_profile_free(p);
        if (!v[i].host)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    if (o->t0 == UINT64_MAX)
        o->t0 = 0;
    return GPUPROF_OK;
}

/* ---- one process -------------------------------------------------------- */
typedef struct proc {
    const input *in;
    const gpuprof__io_trace *t;
    const gpuprof__io_profile *p; /* may be NULL */
    uint32_t pid;                 /* in the JSON */
    uint32_t *jtid;               /* per trace thread: its track */
    uint32_t *pthread;            /* per trace thread: profile thread */
    uint32_t *kernel;             /* per profile node: its kernel child */
    char name[512];               /* scratch for names */
} proc;

typedef struct launch {
    uint64_t corr, start, end;
    uint32_t tid;
} launch;

static uint32_t thread_of(const proc *x, uint32_t seq)
{
    for (uint32_t i = 0; i < x->t->thread_count; i++)
        if (x->t->threads[i].seq == seq)
            return i;
    return UINT32_MAX;
}

static uint32_t track_of(const proc *x, uint32_t seq)
{
    uint32_t k = thread_of(x, seq);
    return k == UINT32_MAX ? PSEUDO_CPU + seq : x->jtid[k];
}

/* The profile node a context names (absolute), or UINT32_MAX. */
static uint32_t node_of(const proc *x, uint64_t context)
{
    uint32_t k = thread_of(x, (uint32_t)(context >> 32));
    if (!x->p || k == UINT32_MAX || x->pthread[k] == UINT32_MAX)
        return UINT32_MAX;
    const gpuprof__io_thread *th = &x->p->threads[x->pthread[k]];
    uint32_t node = (uint32_t)context;
    return node < th->node_count ? th->first_node + node : UINT32_MAX;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The kernel name(s) beneath placeholder `i` into x->name; false: none. */
static bool kernel_names(proc *x, uint32_t i)
{
    if (i == UINT32_MAX || x->kernel[i] == UINT32_MAX)
        return false;
    const gpuprof__io_profile *p = x->p;
    if (x->kernel[i] != MULTI) {
        snprintf(x->name, sizeof(x->name), "%s",
                 gpuprof__io_str(p, p->nodes[x->kernel[i]].key_a));
        return true;
    }
    /* A graph launch or a call site that launched several kernels: the
     * record does not say which; all of them, sorted by name (the tree's
     * child order depends on which completed first). */
    enum { MAX_NAMES = 64 };
    const char *names[MAX_NAMES];
    uint32_t nn = 0;
    for (uint32_t j = i + 1; j < p->node_count && nn < MAX_NAMES; j++) {
        const gpuprof__io_node *n = &p->nodes[j];
        if (n->kind != GPUPROF_IO_NODE_KERNEL || n->parent == GPUPROF_IO_NONE)
            continue;
        uint32_t t = 0; /* the thread of j: parents are thread-relative */
        while (t + 1 < p->thread_count && p->threads[t + 1].first_node <= j)
            t++;
        if (p->threads[t].first_node + n->parent == i)
            names[nn++] = gpuprof__io_str(p, n->key_a);
    }
    qsort(names, nn, sizeof(*names), by_str);
    size_t len = 0;
    x->name[0] = '\0';
    for (uint32_t k = 0; k < nn && len < sizeof(x->name); k++)
        if (!k || strcmp(names[k], names[k - 1]))
            len += (size_t)snprintf(x->name + len, sizeof(x->name) - len,
                                    "%s%s", len ? " | " : "", names[k]);
    return true;
}

/* Display name of the node a record's context names. */
static const char *name_of(proc *x, uint64_t context, bool device)
{
    uint32_t i = node_of(x, context);
    if (i == UINT32_MAX) {
        snprintf(x->name, sizeof(x->name), "node %" PRIu32, (uint32_t)context);
        return x->name;
    }
    const gpuprof__io_node *n = &x->p->nodes[i];
    if (n->kind == GPUPROF_IO_NODE_REGION)
        return gpuprof__io_str(x->p, n->key_a);
    if (n->kind != GPUPROF_IO_NODE_GPU_OP) {
        snprintf(x->name, sizeof(x->name), "node %" PRIu32, (uint32_t)context);
        return x->name;
    }
    const char *op = gpuprof__an_op_name(n->key_a);
    if (!kernel_names(x, i))
        return op;
    if (!device) { /* "kernel launch: NAME" */
        char k[sizeof(x->name)];
        snprintf(k, sizeof(k), "%s", x->name);
        snprintf(x->name, sizeof(x->name), "%.32s: %.400s", op, k);
    }
    return x->name;
}

static gpuprof_status proc_init(proc *x)
{
    const gpuprof__io_trace *t = x->t;
    const gpuprof__io_profile *p = x->p;
    size_t nt = t->thread_count ? t->thread_count : 1;
    x->jtid = malloc(nt * sizeof(*x->jtid));
    x->pthread = malloc(nt * sizeof(*x->pthread));
    x->kernel = malloc((p && p->node_count ? p->node_count : 1) *
                       sizeof(*x->kernel));
    if (!x->jtid || !x->pthread || !x->kernel)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t k = 0; k < t->thread_count; k++) {
        uint64_t tid = t->threads[k].tid;
        bool unique = tid && tid < PSEUDO_CPU;
        for (uint32_t j = 0; j < k && unique; j++)
            unique = t->threads[j].tid != tid;
        x->jtid[k] = unique ? (uint32_t)tid : PSEUDO_CPU + t->threads[k].seq;
        x->pthread[k] = UINT32_MAX;
        for (uint32_t j = 0; p && j < p->thread_count; j++)
            if (p->threads[j].tid == tid) {
                x->pthread[k] = j;
                break;
            }
    }
    for (uint32_t th = 0; p && th < p->thread_count; th++) {
        uint32_t f = p->threads[th].first_node;
        for (uint32_t r = 0; r < p->threads[th].node_count; r++)
            x->kernel[f + r] = UINT32_MAX;
        for (uint32_t r = 1; r < p->threads[th].node_count; r++) {
            const gpuprof__io_node *n = &p->nodes[f + r];
            if (n->kind != GPUPROF_IO_NODE_KERNEL)
                continue;
            uint32_t *k = &x->kernel[f + n->parent];
            *k = *k == UINT32_MAX ? f + r : MULTI;
        }
    }
    return GPUPROF_OK;
}

static int cmp_launch(const void *a, const void *b)
{
    const launch *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

/* The CPU tracks: names, regions, operations; *out: the launches by id. */
static gpuprof_status cpu_tracks(out_t *o, proc *x, launch **out,
                                 uint64_t *nout)
{
    const gpuprof__io_trace *t = x->t;
    for (uint32_t k = 0; k < t->thread_count; k++) {
        char nm[128];
        snprintf(nm, sizeof(nm), "%s (tid %" PRIu64 ")",
                 t->threads[k].name[0]        ? t->threads[k].name
                 : t->threads[k].tid == t->pid ? "main"
                                               : "thread",
                 t->threads[k].tid);
        meta(o, x->pid, x->jtid[k], "thread_name", nm, 0);
        meta(o, x->pid, x->jtid[k], "thread_sort_index", NULL,
             t->threads[k].seq);
    }
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *s = &t->streams[i];
        if (s->gpu)
            continue;
        uint32_t tid = track_of(x, s->id);
        for (uint64_t j = 0; j < s->count; j++)
            complete(o, x->in, x->pid, tid, &s->recs[j], "region",
                     name_of(x, s->recs[j].context, false), "");
    }
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->op_stream_count; i++)
        n += t->ops[i].count;
    launch *l = malloc((n ? n : 1) * sizeof(*l));
    if (!l)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    n = 0;
    for (uint32_t i = 0; i < t->op_stream_count; i++) {
        const gpuprof__io_trace_stream *s = &t->ops[i];
        uint32_t tid = track_of(x, s->id);
        for (uint64_t j = 0; j < s->count; j++) {
            const gpuprof__io_trace_rec *r = &s->recs[j];
            char args[48];
            snprintf(args, sizeof(args), "\"corr\":\"%#" PRIx64 "\"", r->corr);
            complete(o, x->in, x->pid, tid, r, "gpu",
                     name_of(x, r->context, false), args);
            l[n++] = (launch){r->corr, rel(o, x->in, r->start_ns),
                              rel(o, x->in, r->end_ns), tid};
        }
    }
    qsort(l, n, sizeof(*l), cmp_launch);
    *out = l;
    *nout = n;
    return GPUPROF_OK;
}

/* The GPU tracks, and a flow from each record's launch to it. */
static void gpu_tracks(out_t *o, proc *x, const launch *l, uint64_t nl)
{
    const gpuprof__io_trace *t = x->t;
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->stream_count; i++) {
        const gpuprof__io_trace_stream *s = &t->streams[i];
        if (!s->gpu)
            continue;
        uint32_t tid = PSEUDO_GPU + k++;
        char nm[64];
        snprintf(nm, sizeof(nm), "GPU %" PRIu32 " stream %" PRIu32, s->device,
                 s->id);
        meta(o, x->pid, tid, "thread_name", nm, 0);
        meta(o, x->pid, tid, "thread_sort_index", NULL,
             (int64_t)PSEUDO_GPU + s->device * 65536 + s->id);
        for (uint64_t j = 0; j < s->count; j++) {
            const gpuprof__io_trace_rec *r = &s->recs[j];
            char args[48] = "";
            if (r->corr)
                snprintf(args, sizeof(args), "\"corr\":\"%#" PRIx64 "\"",
                         r->corr);
            complete(o, x->in, x->pid, tid, r, "gpu",
                     name_of(x, r->context, true), args);
            launch key = {r->corr, 0, 0, 0};
            const launch *a = r->corr ? bsearch(&key, l, nl, sizeof(*l),
                                                cmp_launch)
                                      : NULL;
            if (!a)
                continue;
            /* Both ends at their slices' starts (same timestamp and
             * category: DevTools binds them so; Perfetto by enclosing). */
            uint64_t fts = rel(o, x->in, r->start_ns), sts = a->start;
            uint64_t id = ++o->flows;
            flow(o, "s", x->pid, a->tid, sts, id);
            flow(o, "f", x->pid, tid, fts, id);
        }
    }
}

static gpuprof_status process(out_t *o, input *in, uint32_t pid, FILE *notes)
{
    proc x;
    memset(&x, 0, sizeof(x));
    gpuprof__io_trace *t;
    gpuprof__io_profile *p;
    gpuprof_status st = load(in, &t, &p);
    if (st != GPUPROF_OK)
        return st;
    if (t->ignored_bytes && notes)
        fprintf(notes, "gpuprof: %s: the last %" PRIu64 " bytes are ignored "
                "(%s)\n", in->trace, t->ignored_bytes, t->ignored_why);
    if (!p && notes)
        fprintf(notes, "gpuprof: %s: no profile beside it; contexts are "
                "shown as node numbers\n", in->trace);
    x.in = in;
    x.t = t;
    x.p = p;
    x.pid = pid;
    char nm[600];
    if (p && p->rank >= 0)
        snprintf(nm, sizeof(nm), "%s pid %" PRIu32 " rank %" PRId32, in->host,
                 t->pid, p->rank);
    else
        snprintf(nm, sizeof(nm), "%s%spid %" PRIu32, in->host,
                 in->host[0] ? " " : "", t->pid);
    meta(o, pid, 0, "process_name", nm, 0);
    meta(o, pid, 0, "process_sort_index", NULL, pid);
    launch *l = NULL;
    uint64_t nl = 0;
    st = proc_init(&x);
    if (st == GPUPROF_OK)
        st = cpu_tracks(o, &x, &l, &nl);
    if (st == GPUPROF_OK)
        gpu_tracks(o, &x, l, nl);
    free(l);
    free(x.jtid);
    free(x.pthread);
    free(x.kernel);
    gpuprof__io_trace_free(t);
    gpuprof__io_profile_free(p);
    return st;
}

GPUPROF_AN_API gpuprof_status
gpuprof_an_export_chrome(const char *const *dirs, uint32_t ndirs, FILE *out,
                         FILE *notes, uint32_t flags)
{
    if (!dirs || !ndirs || !out || flags)
        return gpuprof__an_fail(GPUPROF_E_INVALID,
                                "gpuprof_an_export_chrome: bad argument");
    input *v = NULL;
    uint32_t n = 0;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < ndirs && st == GPUPROF_OK; i++)
        st = dirs[i] ? list(dirs[i], &v, &n)
                     : gpuprof__an_fail(GPUPROF_E_INVALID,
                                        "gpuprof_an_export_chrome: NULL dir");
    out_t o = {out, true, 0, 0};
    if (st == GPUPROF_OK)
        st = survey(v, n, &o);
    if (st == GPUPROF_OK) {
        fprintf(out, "{\"otherData\":{"
                "\"generator\":\"gpuprof %s\",\"origin_monotonic_ns\":\"%"
                PRIu64 "\"},\"traceEvents\":[", GPUPROF_VERSION_STRING, o.t0);
        for (uint32_t i = 0; i < n && st == GPUPROF_OK; i++)
            st = process(&o, &v[i], i + 1, notes);
        /* On an error the JSON stays unterminated: nobody takes a broken
         * export for a whole one. */
        if (st == GPUPROF_OK)
            fputs("\n]}\n", out);
    }
    inputs_free(v, n);
    if (st == GPUPROF_OK && (ferror(out) || fflush(out) != 0))
        st = gpuprof__an_fail(GPUPROF_E_IO, "cannot write the trace export");
    return st;
}
