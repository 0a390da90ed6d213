/*
 * fp_sets.c - the fake libpapi's life cycle, threads and event sets
 * (fakepapi.h, README.md).
 *
 * An event set holds events of one component; PAPI_start binds it to the
 * calling thread and takes each event's value as its zero; PAPI_read and
 * PAPI_stop give the values since. The fake is stricter than PAPI where a
 * caller's mistake would otherwise go unseen: a set read or stopped by a
 * thread other than the one that started it, an event of another
 * component, a set changed while running or destroyed while not empty,
 * each get an error code and change nothing.
 *
 * Sets live in a fixed table (no reallocation under a reading thread);
 * creating and destroying take a mutex, a read touches only its own set.
 * Knob: FAKEPAPI_VERSION=MAJOR.MINOR makes PAPI_library_init report that
 * version instead of the one the caller asks for.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakepapi.h"

#define MAX_SETS 4096
#define MAX_EVENTS FP_MAX_EVENTS
#define MAX_THREADS 1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fp_set sets[MAX_SETS];
static unsigned long threads[MAX_THREADS];
static int nthreads, initialized;
static unsigned long (*thread_id)(void);

FP_API int PAPI_library_init(int version)
{
    int maj = 0, min = 0;
    const char *v = getenv("FAKEPAPI_VERSION");
    fp_knobs();
    if (v && sscanf(v, "%d.%d", &maj, &min) == 2)
        return PAPI_VERSION_NUMBER(maj, min, 0, 0);
    if (version != PAPI_VER_CURRENT)
        return PAPI_EINVAL;
    initialized = 1;
    return PAPI_VER_CURRENT;
}

FP_API int PAPI_thread_init(unsigned long (*id_fn)(void))
{
    if (!initialized)
        return PAPI_ENOINIT;
    thread_id = id_fn;
    return id_fn ? PAPI_OK : PAPI_EINVAL;
}

static unsigned long self_id(void)
{
    return thread_id ? thread_id() : (unsigned long)pthread_self();
}

FP_API int PAPI_register_thread(void)
{
    unsigned long id = self_id();
    int rc = PAPI_OK, i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < nthreads && threads[i] != id; i++)
        ;
    if (i == nthreads && nthreads < MAX_THREADS)
        threads[nthreads++] = id;
    else if (i == nthreads)
        rc = PAPI_ENOMEM;
    pthread_mutex_unlock(&mu);
    return initialized ? rc : PAPI_ENOINIT;
}

FP_API int PAPI_unregister_thread(void)
{
    unsigned long id = self_id();
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nthreads; i++)
        if (threads[i] == id)
            threads[i] = threads[--nthreads];
    pthread_mutex_unlock(&mu);
    return PAPI_OK;
}

FP_API int PAPI_list_threads(unsigned long *tids, int *number)
{
    if (!number)
        return PAPI_EINVAL;
    pthread_mutex_lock(&mu);
    for (int i = 0; tids && i < nthreads && i < *number; i++)
        tids[i] = threads[i];
    *number = nthreads;
    pthread_mutex_unlock(&mu);
    return PAPI_OK;
}

/* ---- event sets ------------------------------------------------------- */
/* The set of a handle, NULL when it is none. */
static fp_set *set_of(int es)
{
    return es >= 0 && es < MAX_SETS && sets[es].used ? &sets[es] : NULL;
}

fp_set *fp_set_of(int es) { return set_of(es); }

FP_API int PAPI_create_eventset(int *es)
{
    if (!initialized)
        return PAPI_ENOINIT;
    if (!es || *es != PAPI_NULL)
        return PAPI_EINVAL;
    int rc = PAPI_ENOMEM;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_SETS; i++)
        if (!sets[i].used) {
            memset(&sets[i], 0, sizeof(sets[i]));
            sets[i].used = 1;
            sets[i].comp = -1;
            *es = i;
            rc = PAPI_OK;
            break;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}

FP_API int PAPI_add_event(int es, int code)
{
    fp_set *s = set_of(es);
    const fp_event *e = fp_event_of(code);
    if (!s)
        return PAPI_EINVAL;
    if (!e)
        return PAPI_ENOEVNT;
    if (s->running)
        return PAPI_EISRUN;
    if (s->comp >= 0 && s->comp != e->comp)
        return PAPI_ECMP; /* one component per set */
    for (int i = 0; i < s->n; i++)
        if (s->ev[i] == e)
            return PAPI_ECNFLCT;
    if (e->add_rc != PAPI_OK)
        return e->add_rc;
    if (s->n == MAX_EVENTS)
        return PAPI_ECNFLCT;
    s->ev[s->n++] = e;
    s->comp = e->comp;
    return PAPI_OK;
}

FP_API int PAPI_remove_event(int es, int code)
{
    fp_set *s = set_of(es);
    if (!s)
        return PAPI_EINVAL;
    if (s->running)
        return PAPI_EISRUN;
    for (int i = 0; i < s->n; i++)
        if (s->ev[i]->code == code) {
            memmove(&s->ev[i], &s->ev[i + 1],
                    sizeof(s->ev[0]) * (size_t)(s->n - i - 1));
            memmove(&s->threshold[i], &s->threshold[i + 1],
                    sizeof(s->threshold[0]) * (size_t)(s->n - i - 1));
            s->threshold[s->n - 1] = 0;
            if (--s->n == 0)
                s->comp = -1;
            return PAPI_OK;
        }
    return PAPI_EINVAL;
}

FP_API int PAPI_start(int es)
{
    fp_set *s = set_of(es);
    if (!s || !s->n)
        return PAPI_EINVAL;
    if (s->running)
        return PAPI_EISRUN;
    for (int i = 0; i < s->n; i++)
        if (s->ev[i]->start_rc != PAPI_OK)
            return s->ev[i]->start_rc;
    for (int i = 0; i < s->n; i++)
        s->zero[i] = fp_value(s->ev[i]);
    s->reads = 0;
    s->owner = pthread_self();
    s->running = 1;
    fp_overflow_started(es);
    return PAPI_OK;
}

/* The values since PAPI_start, by the thread that started the set. */
static int values(fp_set *s, long long *v, int is_read)
{
    if (!s)
        return PAPI_EINVAL;
    if (!s->running)
        return PAPI_ENOTRUN;
    if (!pthread_equal(s->owner, pthread_self()))
        return PAPI_EINVAL; /* counts another thread's work: refused */
    if (is_read)
        s->reads++;
    for (int i = 0; v && i < s->n; i++)
        v[i] = s->ev[i]->src == FP_READS ? s->reads
                                          : fp_value(s->ev[i]) - s->zero[i];
    return PAPI_OK;
}

FP_API int PAPI_read(int es, long long *v)
{
    return v ? values(set_of(es), v, 1) : PAPI_EINVAL;
}

FP_API int PAPI_stop(int es, long long *v)
{
    fp_set *s = set_of(es);
    int rc = values(s, v, 0);
    if (rc == PAPI_OK) {
        fp_overflow_stopped(es);
        s->running = 0;
    }
    return rc;
}

FP_API int PAPI_cleanup_eventset(int es)
{
    fp_set *s = set_of(es);
    if (!s)
        return PAPI_EINVAL;
    if (s->running)
        return PAPI_EISRUN;
    s->n = 0;
    s->comp = -1;
    memset(s->threshold, 0, sizeof(s->threshold)); /* overflows off */
    s->handler = NULL;
    return PAPI_OK;
}

FP_API int PAPI_destroy_eventset(int *es)
{
    fp_set *s = es ? set_of(*es) : NULL;
    if (!s || s->n)
        return PAPI_EINVAL;
    if (s->running)
        return PAPI_EISRUN;
    pthread_mutex_lock(&mu);
    s->used = 0;
    pthread_mutex_unlock(&mu);
    *es = PAPI_NULL;
    return PAPI_OK;
}
