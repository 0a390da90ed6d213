/*
 * an_otf2_events.c - writing an OTF2 export's archive (an_export_otf2.c):
 * the events of each location in turn, then the local and the global
 * definitions, which name what the events referred to.
 *
 * A CPU thread's location merges two sorted trace.db streams (its regions
 * and its GPU API calls) as it reads them in batches. Records that start
 * together are entered longest first (an enclosing region before the call
 * inside it; trace.db sorts them shortest first), regions before calls.
 * A stack of open records gives the leaves: before a record is entered,
 * every open one that ended by its start is left, innermost first; a
 * record that would outlast the one enclosing it is cut at that one's end
 * (x->clipped). So timestamps never decrease on a location and enter and
 * leave nest, as OTF2 requires.
 *
 * A thread's CPU samples (trace.db's SAMPLES streams, the metric that
 * names host code: cpu.time, else cpu.wall) go between them as
 * calling-context sample events, each at its time once every record that
 * ended by then is left: what Vampir shows of the code running between
 * API calls and outside every region (the critical path's CPU steps that
 * `report --critical-path` names by the same samples). Their calling
 * contexts are the database's contexts (frames, functions, inlined
 * functions, regions; a source line or loop is the procedure it lies
 * in), each beneath its caller's, the outermost beneath none; one
 * interrupt generator (time, the smallest sample's ns as its period) took
 * them all. Every sample gives the whole depth of its context as its
 * unwind distance (nothing is said to be shared with the sample before
 * it). Once the critical path is known a sample carries critical_path:
 * 1 when its thread's CPU work at its time lies on the path.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../base/an_buf.h"
#include "an_otf2_write.h"

#ifdef GPUPROF_HAVE_OTF2
enum { BATCH = 4096 };

typedef struct cursor { /* one trace.db stream, read in batches */
    uint32_t stream;
    uint64_t next, count; /* next record's index; the stream's records */
    uint64_t at, got;     /* position in buf; records in buf */
    gpuprof_an_trace_record buf[BATCH];
} cursor;

typedef struct open_rec { /* a record entered, not yet left */
    uint64_t end;
    uint32_t region;
    int mark;   /* critical_path: 0, 1; -1 unknown */
    uint64_t ns; /* critical_path_ns when mark is 1 */
} open_rec;

typedef struct pending { /* a record about to be entered */
    gpuprof_an_trace_record r;
    uint32_t stream;
    uint64_t index;
    unsigned side; /* 0 regions (or GPU work), 1 API calls */
} pending;

typedef struct lw { /* one location being written */
    gpuprof__an_ox *x;
    OTF2_EvtWriter *w;
    OTF2_AttributeList *attrs;
    const gpuprof__an_ox_loc *loc;
    int64_t shift; /* onto the base clock (an_otf2_write.h) */
    cursor *c[2];
    open_rec *stack;
    uint32_t depth, cap;
    pending *run; /* records with one start */
    uint32_t nrun, cap_run;
    uint32_t smp; /* the location's next CPU sample */
} lw;

static gpuprof_status otf2_fail(const char *what, OTF2_ErrorCode rc,
                                const gpuprof__an_otf2_lib *L)
{
    const char *msg = gpuprof__an_otf2_lib_message();
    return gpuprof__an_fail(GPUPROF_E_IO, "OTF2 export: %s: %s%s%s", what,
                            L->OTF2_Error_GetDescription(rc), *msg ? ": " : "",
                            msg);
}

static bool cur_peek(const gpuprof__an_ox *x, cursor *c,
                     gpuprof_an_trace_record **r)
{
    if (!c || (c->at == c->got && c->next == c->count))
        return false;
    if (c->at == c->got) {
        c->got = gpuprof_an_db_trace_records(x->db, c->stream, c->next, c->buf,
                                             BATCH);
        c->at = 0;
        if (!c->got)
            return false;
    }
    *r = &c->buf[c->at];
    return true;
}

static uint64_t stamp(lw *l, uint64_t t)
{
    int64_t v = (int64_t)t + l->shift;
    uint64_t u = v > 0 ? (uint64_t)v : 0;
    if (u < l->x->tmin)
        l->x->tmin = u;
    if (u > l->x->tmax)
        l->x->tmax = u;
    return u;
}

/* The attributes of an event of record o (the writer empties the list). */
static OTF2_AttributeList *attrs(lw *l, const open_rec *o)
{
    if (o->mark < 0)
        return NULL;
    l->x->L->OTF2_AttributeList_AddUint8(l->attrs, 0, (uint8_t)o->mark);
    if (o->mark)
        l->x->L->OTF2_AttributeList_AddUint64(l->attrs, 1, o->ns);
    return l->attrs;
}

static gpuprof_status leave_until(lw *l, uint64_t t)
{
    const gpuprof__an_otf2_lib *L = l->x->L;
    while (l->depth && l->stack[l->depth - 1].end <= t) {
        open_rec *o = &l->stack[--l->depth];
        OTF2_ErrorCode rc = L->OTF2_EvtWriter_Leave(
            l->w, attrs(l, o), stamp(l, o->end), o->region);
        if (rc != OTF2_SUCCESS)
            return otf2_fail("writing an event", rc, L);
    }
    return GPUPROF_OK;
}

static gpuprof_status enter(lw *l, const pending *p)
{
    gpuprof__an_ox *x = l->x;
    gpuprof_status st = leave_until(l, p->r.start_ns);
    if (st != GPUPROF_OK)
        return st;
    open_rec o = {p->r.end_ns, 0, -1, 0};
    if (l->depth && o.end > l->stack[l->depth - 1].end) {
        o.end = l->stack[l->depth - 1].end; /* cut to nest */
        x->clipped++;
    }
    st = gpuprof__an_ox_region_of(x, p->r.context, l->loc->gpu, &o.region);
    if (st != GPUPROF_OK)
        return st;
    if (x->marks)
        o.mark = x->marks->on_path(x->marks->arg, p->stream, p->index, &o.ns)
                     ? 1
                     : 0;
    if (l->depth == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        open_rec *v = realloc(l->stack, cap * sizeof(*v));
        if (!v)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        l->stack = v;
        l->cap = cap;
    }
    l->stack[l->depth++] = o;
    OTF2_ErrorCode rc = x->L->OTF2_EvtWriter_Enter(
        l->w, attrs(l, &o), stamp(l, p->r.start_ns), o.region);
    return rc == OTF2_SUCCESS ? GPUPROF_OK
                              : otf2_fail("writing an event", rc, x->L);
}

/* Same start: the longer first, then regions before API calls, then as
 * trace.db has them. */
static int by_nesting(const void *a, const void *b)
{
    const pending *p = a, *q = b;
    if (p->r.end_ns != q->r.end_ns)
        return p->r.end_ns > q->r.end_ns ? -1 : 1;
    if (p->side != q->side)
        return p->side < q->side ? -1 : 1;
    return (p->index > q->index) - (p->index < q->index);
}

/* Takes every record starting at `t` from both cursors into l->run. */
static gpuprof_status take_run(lw *l, uint64_t t)
{
    l->nrun = 0;
    for (unsigned s = 0; s < 2; s++) {
        gpuprof_an_trace_record *r;
        while (cur_peek(l->x, l->c[s], &r) && r->start_ns == t) {
            if (l->nrun == l->cap_run) {
                uint32_t cap = l->cap_run ? l->cap_run * 2 : 16;
                pending *v = realloc(l->run, cap * sizeof(*v));
                if (!v)
                    return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
                l->run = v;
                l->cap_run = cap;
            }
            l->run[l->nrun++] =
                (pending){*r, l->c[s]->stream, l->c[s]->next, s};
            l->c[s]->at++;
            l->c[s]->next++;
        }
    }
    if (l->nrun > 1)
        qsort(l->run, l->nrun, sizeof(*l->run), by_nesting);
    return GPUPROF_OK;
}

/* A context as a calling context shows it: source lines and loops are
 * where in a procedure, not a procedure; they go to the one they lie in. */
static uint32_t shown(const gpuprof__an_ox *x, uint32_t c)
{
    while (c && c < x->nc) {
        gpuprof_an_node_kind k = gpuprof_an_db_context_kind(x->db, c);
        if (k != GPUPROF_AN_NODE_LINE && k != GPUPROF_AN_NODE_LOOP)
            break;
        c = gpuprof_an_db_context_parent(x->db, c);
    }
    return c;
}

gpuprof_status gpuprof__an_ox_cctx_of(gpuprof__an_ox *x, uint32_t c,
                                      uint32_t *cctx)
{
    c = shown(x, c);
    uint32_t k = c < x->nc ? c : x->nc; /* x->nc: unknown */
    if (!x->cc && !(x->cc = calloc((size_t)x->nc + 1, sizeof(*x->cc))))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (x->cc[k]) {
        *cctx = x->cc[k] - 1;
        return GPUPROF_OK;
    }
    /* The program root is no caller: a top-level procedure has none. */
    uint32_t parent = UINT32_MAX, depth = 1,
             pc = k && k < x->nc
                      ? shown(x, gpuprof_an_db_context_parent(x->db, k))
                      : UINT32_MAX;
    gpuprof_status st = GPUPROF_OK;
    if (pc && pc < x->nc) { /* depth of the tree: shallow recursion */
        st = gpuprof__an_ox_cctx_of(x, pc, &parent);
        depth += st == GPUPROF_OK ? x->cctx[parent].depth : 0;
    }
    uint32_t region;
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_region_of(x, c, false, &region);
    if (st == GPUPROF_OK && !GPUPROF_AN_GROW(x->cctx, x->ncctx, x->cap_cctx))
        st = gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    if (st != GPUPROF_OK)
        return st;
    x->cctx[x->ncctx] = (gpuprof__an_ox_cctx){region, parent, depth};
    *cctx = x->ncctx++;
    x->cc[k] = *cctx + 1;
    return GPUPROF_OK;
}

/* The location's CPU samples before time t (UINT64_MAX: all), each after
 * the records that ended by its time are left. */
static gpuprof_status samples_until(lw *l, uint64_t t)
{
    gpuprof__an_ox *x = l->x;
    gpuprof_status st = GPUPROF_OK;
    for (; l->smp < l->loc->nsmp && l->loc->smp[l->smp].t < t &&
           st == GPUPROF_OK;
         l->smp++) {
        const gpuprof__an_sample *v = &l->loc->smp[l->smp];
        uint32_t cc;
        st = leave_until(l, v->t);
        if (st == GPUPROF_OK)
            st = gpuprof__an_ox_cctx_of(x, v->context, &cc);
        if (st != GPUPROF_OK)
            break;
        OTF2_AttributeList *a = NULL;
        if (x->marks && x->marks->sample_on_path) {
            a = l->attrs;
            x->L->OTF2_AttributeList_AddUint8(
                a, 0,
                (uint8_t)!!x->marks->sample_on_path(x->marks->arg,
                                                    l->loc->profile, v->t));
        }
        OTF2_ErrorCode rc = x->L->OTF2_EvtWriter_CallingContextSample(
            l->w, a, stamp(l, v->t), cc, x->cctx[cc].depth, 0);
        if (rc != OTF2_SUCCESS)
            st = otf2_fail("writing an event", rc, x->L);
        x->nsamples++;
    }
    return st;
}

static gpuprof_status location_events(lw *l)
{
    gpuprof_status st = GPUPROF_OK;
    for (;;) {
        gpuprof_an_trace_record *a = NULL, *b = NULL;
        bool ha = cur_peek(l->x, l->c[0], &a), hb = cur_peek(l->x, l->c[1], &b);
        if (!ha && !hb)
            break;
        uint64_t t = !hb || (ha && a->start_ns <= b->start_ns) ? a->start_ns
                                                               : b->start_ns;
        st = samples_until(l, t);
        if (st == GPUPROF_OK)
            st = take_run(l, t);
        for (uint32_t i = 0; i < l->nrun && st == GPUPROF_OK; i++)
            st = enter(l, &l->run[i]);
        if (st != GPUPROF_OK)
            return st;
    }
    st = samples_until(l, UINT64_MAX);
    return st == GPUPROF_OK ? leave_until(l, UINT64_MAX) : st;
}

static gpuprof_status one_location(gpuprof__an_ox *x, OTF2_Archive *ar,
                                   uint32_t i, lw *l)
{
    const gpuprof__an_otf2_lib *L = x->L;
    const gpuprof__an_ox_loc *loc = &x->locs[i];
    l->loc = loc;
    l->shift = x->hosts[loc->host].offset - x->base;
    l->depth = 0;
    l->smp = 0;
    for (unsigned s = 0; s < 2; s++) {
        if (loc->stream[s] == UINT32_MAX) {
            l->c[s] = NULL;
            continue;
        }
        if (!l->c[s] && !(l->c[s] = malloc(sizeof(cursor))))
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        gpuprof_an_trace_stream ts;
        gpuprof_an_db_trace_stream(x->db, loc->stream[s], &ts);
        l->c[s]->stream = loc->stream[s];
        l->c[s]->count = ts.records;
        l->c[s]->next = l->c[s]->at = l->c[s]->got = 0;
    }
    l->w = L->OTF2_Archive_GetEvtWriter(ar, i);
    if (!l->w)
        return otf2_fail("opening an event file", OTF2_ERROR_FILE_INTERACTION,
                         L);
    gpuprof_status st = location_events(l);
    OTF2_ErrorCode rc = L->OTF2_Archive_CloseEvtWriter(ar, l->w);
    if (st == GPUPROF_OK && rc != OTF2_SUCCESS)
        st = otf2_fail("writing an event file", rc, L);
    return st;
}

static gpuprof_status all_events(gpuprof__an_ox *x, OTF2_Archive *ar)
{
    const gpuprof__an_otf2_lib *L = x->L;
    lw l;
    memset(&l, 0, sizeof(l));
    l.x = x;
    cursor *keep[2] = {NULL, NULL};
    if (!(l.attrs = L->OTF2_AttributeList_New()))
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    OTF2_ErrorCode rc = L->OTF2_Archive_OpenEvtFiles(ar);
    gpuprof_status st = rc == OTF2_SUCCESS
                            ? GPUPROF_OK
                            : otf2_fail("creating the event files", rc, L);
    for (uint32_t i = 0; i < x->nlocs && st == GPUPROF_OK; i++) {
        l.c[0] = keep[0];
        l.c[1] = keep[1];
        st = one_location(x, ar, i, &l);
        keep[0] = l.c[0] ? l.c[0] : keep[0];
        keep[1] = l.c[1] ? l.c[1] : keep[1];
    }
    rc = L->OTF2_Archive_CloseEvtFiles(ar);
    if (st == GPUPROF_OK && rc != OTF2_SUCCESS)
        st = otf2_fail("closing the event files", rc, L);
    free(keep[0]);
    free(keep[1]);
    free(l.stack);
    free(l.run);
    L->OTF2_AttributeList_Delete(l.attrs);
    return st;
}

/* ---- definitions -------------------------------------------------------- */
/* Empty local definition files, one per location, as readers expect. */
static gpuprof_status local_defs(gpuprof__an_ox *x, OTF2_Archive *ar)
{
    const gpuprof__an_otf2_lib *L = x->L;
    OTF2_ErrorCode rc = L->OTF2_Archive_OpenDefFiles(ar);
    for (uint32_t i = 0; i < x->nlocs && rc == OTF2_SUCCESS; i++) {
        OTF2_DefWriter *w = L->OTF2_Archive_GetDefWriter(ar, i);
        rc = w ? L->OTF2_Archive_CloseDefWriter(ar, w)
               : OTF2_ERROR_FILE_INTERACTION;
    }
    OTF2_ErrorCode rc2 = L->OTF2_Archive_CloseDefFiles(ar);
    if (rc == OTF2_SUCCESS)
        rc = rc2;
    return rc == OTF2_SUCCESS
               ? GPUPROF_OK
               : otf2_fail("writing the local definitions", rc, L);
}

/* Strings a definition below names, interned before any is written. */
typedef struct fixed_str {
    uint32_t machine, machine_class, node_class, attr, attr_desc;
    uint32_t attr_ns, attr_ns_desc, sampler;
} fixed_str;

static gpuprof_status fixed_strings(gpuprof__an_ox *x, fixed_str *f)
{
    gpuprof__an_ox_interner *in = &x->strings;
    gpuprof_status st = gpuprof__an_ox_intern(in, "machine", &f->machine);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in, "machine", &f->machine_class);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in, "node", &f->node_class);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in, "critical_path", &f->attr);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in,
                                   "1: the event's activity lies on the "
                                   "critical path, 0: it does not (gpuprof "
                                   "report --critical-path)",
                                   &f->attr_desc);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in, "critical_path_ns", &f->attr_ns);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(in,
                                   "ns of the critical path spent in the "
                                   "event's activity (a region: while it was "
                                   "the innermost one); only on events with "
                                   "critical_path 1",
                                   &f->attr_ns_desc);
    if (st == GPUPROF_OK && x->sample_metric != UINT32_MAX)
        st = gpuprof__an_ox_intern(
            in, gpuprof_an_db_metric_name(x->db, x->sample_metric),
            &f->sampler);
    return st;
}

/* System tree: node 0 the machine, node 1 + h host h. */
static OTF2_ErrorCode
tree_and_groups(gpuprof__an_ox *x, OTF2_GlobalDefWriter *g, const fixed_str *f)
{
    const gpuprof__an_otf2_lib *L = x->L;
    OTF2_ErrorCode rc = L->OTF2_GlobalDefWriter_WriteSystemTreeNode(
        g, 0, f->machine, f->machine_class, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (uint32_t h = 0; h < x->nhosts && rc == OTF2_SUCCESS; h++)
        rc = L->OTF2_GlobalDefWriter_WriteSystemTreeNode(
            g, 1 + h, x->hosts[h].name, f->node_class, 0);
    for (uint32_t i = 0; i < x->ngroups && rc == OTF2_SUCCESS; i++) {
        const gpuprof__an_ox_group *v = &x->groups[i];
        rc = L->OTF2_GlobalDefWriter_WriteLocationGroup(
            g, i, v->name,
            v->acc ? OTF2_LOCATION_GROUP_TYPE_ACCELERATOR
                   : OTF2_LOCATION_GROUP_TYPE_PROCESS,
            1 + v->host, v->acc ? v->creator : OTF2_UNDEFINED_LOCATION_GROUP);
    }
    for (uint32_t i = 0; i < x->nlocs && rc == OTF2_SUCCESS; i++) {
        const gpuprof__an_ox_loc *v = &x->locs[i];
        rc = L->OTF2_GlobalDefWriter_WriteLocation(
            g, i, v->name,
            v->gpu ? OTF2_LOCATION_TYPE_ACCELERATOR_STREAM
                   : OTF2_LOCATION_TYPE_CPU_THREAD,
            v->events, v->group);
    }
    return rc;
}

static gpuprof_status global_defs(gpuprof__an_ox *x, OTF2_Archive *ar)
{
    const gpuprof__an_otf2_lib *L = x->L;
    fixed_str f;
    gpuprof_status st = fixed_strings(x, &f);
    if (st != GPUPROF_OK)
        return st;
    OTF2_GlobalDefWriter *g = L->OTF2_Archive_GetGlobalDefWriter(ar);
    if (!g)
        return otf2_fail("writing the definitions", OTF2_ERROR_FILE_INTERACTION,
                         L);
    uint64_t t0 = x->tmin <= x->tmax ? x->tmin : 0;
    OTF2_ErrorCode rc = L->OTF2_GlobalDefWriter_WriteClockProperties(
        g, 1000000000u, t0, x->tmin <= x->tmax ? x->tmax - x->tmin : 0,
        x->realtime ? (uint64_t)((int64_t)t0 + x->base)
                    : OTF2_UNDEFINED_TIMESTAMP);
    for (uint32_t i = 0; i < x->strings.n && rc == OTF2_SUCCESS; i++)
        rc = L->OTF2_GlobalDefWriter_WriteString(
            g, i, gpuprof__an_ox_string(&x->strings, i));
    if (rc == OTF2_SUCCESS)
        rc = L->OTF2_GlobalDefWriter_WriteAttribute(g, 0, f.attr, f.attr_desc,
                                                    OTF2_TYPE_UINT8);
    if (rc == OTF2_SUCCESS)
        rc = L->OTF2_GlobalDefWriter_WriteAttribute(
            g, 1, f.attr_ns, f.attr_ns_desc, OTF2_TYPE_UINT64);
    if (rc == OTF2_SUCCESS)
        rc = tree_and_groups(x, g, &f);
    for (uint32_t i = 0; i < x->nregions && rc == OTF2_SUCCESS; i++) {
        const gpuprof__an_ox_region *r = &x->regions[i];
        rc = L->OTF2_GlobalDefWriter_WriteRegion(
            g, i, r->name, r->name, r->desc, r->role, r->paradigm,
            OTF2_REGION_FLAG_NONE, 0, 0, 0);
    }
    if (rc == OTF2_SUCCESS && x->nsamples)
        rc = L->OTF2_GlobalDefWriter_WriteInterruptGenerator(
            g, 0, f.sampler, OTF2_INTERRUPT_GENERATOR_MODE_TIME,
            OTF2_BASE_DECIMAL, -9, x->period);
    for (uint32_t i = 0; i < x->ncctx && rc == OTF2_SUCCESS; i++)
        rc = L->OTF2_GlobalDefWriter_WriteCallingContext(
            g, i, x->cctx[i].region, OTF2_UNDEFINED_SOURCE_CODE_LOCATION,
            x->cctx[i].parent == UINT32_MAX ? OTF2_UNDEFINED_CALLING_CONTEXT
                                            : x->cctx[i].parent);
    /* What the anchor file counts: clock properties, strings, the two
     * attributes, the tree, groups, locations, regions, the interrupt
     * generator and calling contexts of samples. */
    x->ndefs = 1 + (uint64_t)x->strings.n + 2 + 1 + x->nhosts + x->ngroups +
               x->nlocs + x->nregions + (x->nsamples ? 1 : 0) + x->ncctx;
    OTF2_ErrorCode rc2 = L->OTF2_Archive_CloseGlobalDefWriter(ar, g);
    if (rc == OTF2_SUCCESS)
        rc = rc2;
    return rc == OTF2_SUCCESS ? GPUPROF_OK
                              : otf2_fail("writing the definitions", rc, L);
}

/* ---- the archive -------------------------------------------------------- */
/* Every flush is allowed: without memory callbacks libotf2 flushes only
 * when a writer is closed, so no BUFFER_FLUSH event enters the trace. */
static OTF2_FlushType pre_flush(void *user, OTF2_FileType type,
                                OTF2_LocationRef loc, void *data, bool final)
{
    (void)user;
    (void)type;
    (void)loc;
    (void)data;
    (void) final;
    return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *user, OTF2_FileType type,
                                 OTF2_LocationRef loc)
{
    (void)user;
    (void)type;
    (void)loc;
    return 0;
}

static const OTF2_FlushCallbacks flush_cb = {pre_flush, post_flush};

gpuprof_status gpuprof__an_ox_write(gpuprof__an_ox *x, const char *path)
{
    const gpuprof__an_otf2_lib *L = x->L;
    OTF2_Archive *ar = L->OTF2_Archive_Open(
        path, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
        OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!ar)
        return otf2_fail("creating the archive", OTF2_ERROR_FILE_INTERACTION,
                         L);
    x->tmin = UINT64_MAX;
    x->tmax = 0;
    OTF2_ErrorCode rc = L->OTF2_Archive_SetFlushCallbacks(ar, &flush_cb, NULL);
    if (rc == OTF2_SUCCESS)
        rc = L->OTF2_Archive_SetSerialCollectiveCallbacks(ar);
    if (rc == OTF2_SUCCESS)
        rc = L->OTF2_Archive_SetCreator(ar, "gpuprof " GPUPROF_VERSION_STRING);
    if (rc == OTF2_SUCCESS)
        rc = L->OTF2_Archive_SetDescription(
            ar, "CPU threads and GPU streams of a gpuprof analysis database "
                "(trace.db)");
    gpuprof_status st = rc == OTF2_SUCCESS
                            ? GPUPROF_OK
                            : otf2_fail("creating the archive", rc, L);
    if (st == GPUPROF_OK)
        st = all_events(x, ar);
    if (st == GPUPROF_OK)
        st = local_defs(x, ar);
    if (st == GPUPROF_OK)
        st = global_defs(x, ar);
    rc = L->OTF2_Archive_Close(ar);
    if (st == GPUPROF_OK && rc != OTF2_SUCCESS)
        st = otf2_fail("closing the archive", rc, L);
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_verify(x, path);
    return st;
}
#endif /* GPUPROF_HAVE_OTF2 */
