/*
 * an_otf2_plan.c - who is who in an OTF2 export (an_export_otf2.c): from
 * trace.db's stream table alone, before any record is read, the hosts
 * (system tree nodes), per process a PROCESS location group and per GPU
 * device of it an ACCELERATOR group, and the locations: one per CPU
 * thread (its profile's regions and API call streams together) and one
 * per GPU stream, each with the exact number of events it will get (two
 * per record). Streams of other kinds (what later trace formats add
 * beside the activities, such as dependency notes) are not exported.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "an_otf2_write.h"

#ifdef GPUPROF_HAVE_OTF2
/* The host of process profile p, created at its first stream (whose
 * clock offset becomes the host's). */
static gpuprof_status host_of(gpuprof__an_ox *x, uint32_t p, int64_t offset,
                              uint32_t *host)
{
    uint32_t sid;
    const char *name = gpuprof_an_db_profile_host(x->db, p);
    gpuprof_status st =
        gpuprof__an_ox_intern(&x->strings, name && *name ? name : "host", &sid);
    if (st != GPUPROF_OK)
        return st;
    if (sid >= x->cap_host_of_sid) {
        uint32_t cap = sid * 2 + 64;
        uint32_t *v = realloc(x->host_of_sid, cap * sizeof(*v));
        if (!v)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
        memset(v + x->cap_host_of_sid, 0,
               (cap - x->cap_host_of_sid) * sizeof(*v));
        x->host_of_sid = v;
        x->cap_host_of_sid = cap;
    }
    if (!x->host_of_sid[sid]) {
        x->hosts[x->nhosts] = (gpuprof__an_ox_host){sid, offset};
        x->host_of_sid[sid] = ++x->nhosts;
        x->realtime |= offset != 0;
    }
    *host = x->host_of_sid[sid] - 1;
    return GPUPROF_OK;
}

static gpuprof_status new_group(gpuprof__an_ox *x, const char *name,
                                uint32_t host, uint32_t *g)
{
    gpuprof__an_ox_group *v = &x->groups[x->ngroups];
    memset(v, 0, sizeof(*v));
    v->host = host;
    v->creator = v->first_acc = v->next_acc = UINT32_MAX;
    *g = x->ngroups++;
    return gpuprof__an_ox_intern(&x->strings, name, &v->name);
}

/* The PROCESS group of process profile p ("rank R (pid P)", "pid P"). */
static gpuprof_status
process_group(gpuprof__an_ox *x, const gpuprof_an_trace_stream *s, uint32_t *g)
{
    uint32_t p = s->process;
    if (x->proc_group[p] != UINT32_MAX) {
        *g = x->proc_group[p];
        return GPUPROF_OK;
    }
    uint32_t host = 0;
    gpuprof_status st = host_of(x, p, s->realtime_offset_ns, &host);
    char name[64];
    int32_t rank = gpuprof_an_db_profile_rank(x->db, p);
    uint32_t pid = gpuprof_an_db_profile_pid(x->db, p);
    if (rank >= 0)
        snprintf(name, sizeof(name), "rank %" PRId32 " (pid %" PRIu32 ")", rank,
                 pid);
    else
        snprintf(name, sizeof(name), "pid %" PRIu32, pid);
    if (st == GPUPROF_OK)
        st = new_group(x, name, host, g);
    if (st == GPUPROF_OK)
        x->proc_group[p] = *g;
    return st;
}

/* The ACCELERATOR group of (process, device s->device). */
static gpuprof_status
device_group(gpuprof__an_ox *x, const gpuprof_an_trace_stream *s, uint32_t *g)
{
    uint32_t pg;
    gpuprof_status st = process_group(x, s, &pg);
    if (st != GPUPROF_OK)
        return st;
    for (uint32_t a = x->groups[pg].first_acc; a != UINT32_MAX;
         a = x->groups[a].next_acc)
        if (x->groups[a].device == s->device) {
            *g = a;
            return GPUPROF_OK;
        }
    char name[96];
    snprintf(name, sizeof(name), "GPU %" PRIu32 " of %s", s->device,
             gpuprof__an_ox_string(&x->strings, x->groups[pg].name));
    st = new_group(x, name, x->groups[pg].host, g);
    if (st != GPUPROF_OK)
        return st;
    gpuprof__an_ox_group *v = &x->groups[*g];
    v->acc = true;
    v->device = s->device;
    v->creator = pg;
    v->next_acc = x->groups[pg].first_acc;
    x->groups[pg].first_acc = *g;
    return GPUPROF_OK;
}

/* A CPU thread's name: "NAME (tid T)", NAME "main" or "thread" when it
 * has none. */
static void thread_name(const gpuprof__an_ox *x, uint32_t prof, char *buf,
                        size_t size)
{
    const char *n = gpuprof_an_db_profile_thread_name(x->db, prof);
    uint64_t tid = gpuprof_an_db_profile_tid(x->db, prof);
    if (!n || !*n)
        n = tid == gpuprof_an_db_profile_pid(x->db, prof) ? "main" : "thread";
    snprintf(buf, size, "%s (tid %" PRIu64 ")", n, tid);
}

/* A thread's samples make its location (a thread that ran neither
 * regions nor API calls has one for them alone); its events are added
 * once they are read (thread_samples). */
static gpuprof_status add_stream(gpuprof__an_ox *x, uint32_t i,
                                 const gpuprof_an_trace_stream *s)
{
    bool samples = s->kind == GPUPROF_AN_TRACE_SAMPLES &&
                   x->sample_metric != UINT32_MAX;
    if (s->kind != GPUPROF_AN_TRACE_REGIONS &&
        s->kind != GPUPROF_AN_TRACE_OPS && s->kind != GPUPROF_AN_TRACE_GPU &&
        !samples)
        return GPUPROF_OK; /* not activities (later kinds: notes) */
    bool gpu = s->kind == GPUPROF_AN_TRACE_GPU;
    unsigned side = s->kind == GPUPROF_AN_TRACE_OPS;
    uint32_t l = gpu ? UINT32_MAX : x->prof_loc[s->profile];
    if (l != UINT32_MAX && samples)
        return GPUPROF_OK;
    if (l != UINT32_MAX && x->locs[l].stream[side] == UINT32_MAX) {
        x->locs[l].stream[side] = i; /* the thread's other stream */
        x->locs[l].events += 2 * s->records;
        return GPUPROF_OK;
    }
    gpuprof__an_ox_loc *v = &x->locs[x->nlocs];
    memset(v, 0, sizeof(*v));
    v->stream[0] = v->stream[1] = UINT32_MAX;
    if (!samples)
        v->stream[side] = i;
    v->gpu = gpu;
    v->profile = gpu ? UINT32_MAX : s->profile;
    v->events = samples ? 0 : 2 * s->records;
    char name[160];
    gpuprof_status st =
        gpu ? device_group(x, s, &v->group) : process_group(x, s, &v->group);
    if (gpu)
        snprintf(name, sizeof(name), "GPU %" PRIu32 " stream %" PRIu32,
                 s->device, s->stream);
    else
        thread_name(x, s->profile, name, sizeof(name));
    if (st == GPUPROF_OK)
        st = gpuprof__an_ox_intern(&x->strings, name, &v->name);
    if (st == GPUPROF_OK)
        v->host = x->groups[v->group].host;
    if (!gpu && l == UINT32_MAX)
        x->prof_loc[s->profile] = x->nlocs;
    x->nlocs++;
    return st;
}

/* A thread's samples of the metric that names host code (cpu.time, else
 * cpu.wall), by time: one calling-context sample event each. */
static gpuprof_status thread_samples(gpuprof__an_ox *x, gpuprof__an_ox_loc *v)
{
    if (v->gpu || x->sample_metric == UINT32_MAX)
        return GPUPROF_OK;
    gpuprof_status st = gpuprof__an_db_samples_all(
        x->db, v->profile, x->sample_metric, &v->smp, &v->nsmp, &v->cap_smp);
    for (uint32_t k = 0; k < v->nsmp; k++)
        if (v->smp[k].value && (!x->period || v->smp[k].value < x->period))
            x->period = v->smp[k].value;
    v->events += v->nsmp;
    return st;
}

gpuprof_status gpuprof__an_ox_plan(gpuprof__an_ox *x)
{
    uint32_t ns = gpuprof_an_db_trace_stream_count(x->db);
    uint32_t np = gpuprof_an_db_profile_count(x->db);
    x->locs = malloc(ns * sizeof(*x->locs));
    x->groups = malloc(2 * (size_t)ns * sizeof(*x->groups));
    x->hosts = malloc(ns * sizeof(*x->hosts));
    x->proc_group = malloc((np ? np : 1) * sizeof(*x->proc_group));
    x->prof_loc = malloc((np ? np : 1) * sizeof(*x->prof_loc));
    if (!x->locs || !x->groups || !x->hosts || !x->proc_group || !x->prof_loc)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    for (uint32_t p = 0; p < np; p++)
        x->proc_group[p] = x->prof_loc[p] = UINT32_MAX;
    if (!gpuprof__an_db_sample_metric(x->db, &x->sample_metric))
        x->sample_metric = UINT32_MAX;
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t i = 0; i < ns && st == GPUPROF_OK; i++) {
        gpuprof_an_trace_stream s;
        st = gpuprof_an_db_trace_stream(x->db, i, &s);
        if (st == GPUPROF_OK)
            st = add_stream(x, i, &s);
    }
    for (uint32_t l = 0; l < x->nlocs && st == GPUPROF_OK; l++)
        st = thread_samples(x, &x->locs[l]);
    for (uint32_t h = 0; h < x->nhosts; h++)
        if (!h || x->hosts[h].offset < x->base)
            x->base = x->hosts[h].offset;
    return st;
}
#endif /* GPUPROF_HAVE_OTF2 */
