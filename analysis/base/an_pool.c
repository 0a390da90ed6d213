/*
 * an_pool.c - the fork-join loop, big buffers and trimming (an_pool.h).
 *
 * The output files and the transposed values of an aggregation are
 * megabytes written once: their pages are populated before the threads
 * fill them, POPULATE_SLICE bytes per task, so that zeroing them -- the
 * kernel's work, tens of milliseconds for 100 MB -- scales with the
 * threads (MAP_POPULATE did it on one). Freeing them is the kernel's work
 * too: slice by slice (MADV_DONTNEED holds the address space's lock
 * shared; munmap alone would free them all on one thread). A pass that
 * goes in rounds keeps one such buffer for all of them (gpuprof__an_big):
 * faulting fresh pages in every round would cost more than the work.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "an_pool.h"

#define POPULATE_SLICE (4u << 20)

typedef struct pool {
    gpuprof__an_task_fn fn;
    void *ctx;
    uint32_t n;
    _Atomic uint32_t next;
} pool;

static void *pool_worker(void *arg)
{
    pool *p = arg;
    for (uint32_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        p->fn(p->ctx, i);
    return NULL;
}

void gpuprof__an_parallel_for(unsigned threads, uint32_t n,
                              gpuprof__an_task_fn fn, void *ctx)
{
    pool p = {fn, ctx, n, 0};
    unsigned t = threads > 1 ? threads - 1 : 0;
    if (t > n)
        t = n;
    pthread_t *th = t ? calloc(t, sizeof(*th)) : NULL;
    unsigned started = 0;
    for (unsigned i = 0; th && i < t; i++)
        if (pthread_create(&th[i], NULL, pool_worker, &p) == 0)
            started++;
        else
            break;
    pool_worker(&p);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
}

typedef struct pages { /* a big buffer whose pages are being handled */
    uint8_t *buf;
    size_t size;
    bool drop; /* freeing: the pages go, the mapping after */
} pages;

static void pages_slice(void *ctx, uint32_t i)
{
    const pages *g = ctx;
    uint8_t *p = g->buf + (size_t)i * POPULATE_SLICE;
    size_t n = g->size - (size_t)i * POPULATE_SLICE;
    if (n > POPULATE_SLICE)
        n = POPULATE_SLICE;
    if (g->drop) {
        madvise(p, n, MADV_DONTNEED);
        return;
    }
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, n, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t k = 0; k < n; k += 4096) /* kernels before 5.14 */
        ((volatile uint8_t *)p)[k] = 0;
}

static void pages_all(unsigned threads, void *p, size_t size, bool drop)
{
    pages g = {p, size, drop};
    gpuprof__an_parallel_for(
        threads, (uint32_t)((size + POPULATE_SLICE - 1) / POPULATE_SLICE),
        pages_slice, &g);
}

void *gpuprof__an_big_alloc(unsigned threads, size_t size)
{
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    pages_all(threads, p, size, false);
    return p;
}

void gpuprof__an_big_free(unsigned threads, void *p, size_t size)
{
    if (!p)
        return;
    pages_all(threads, p, size, true);
    munmap(p, size ? size : 1);
}

uint8_t *gpuprof__an_big_reserve(unsigned threads, gpuprof__an_big *b,
                                 size_t need)
{
    if (b->p && need <= b->cap)
        return b->p;
    gpuprof__an_big_release(threads, b);
    if ((b->p = gpuprof__an_big_alloc(threads, need)))
        b->cap = need;
    return b->p;
}

void gpuprof__an_big_release(unsigned threads, gpuprof__an_big *b)
{
    gpuprof__an_big_free(threads, b->p, b->cap);
    *b = (gpuprof__an_big){0};
}

/* One call at a time: where glibc's allocator has not been used yet --
 * under ASan -- the first malloc_trim initializes it, and two threads
 * doing that at once (analyses may run on several threads, as ranks do in
 * check_an_ranks) both take the main arena, whose count of attached
 * threads then drops below zero at their exit (glibc aborts:
 * "a->attached_threads > 0"). */
void gpuprof__an_trim(void)
{
#ifdef __GLIBC__
    static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&one);
    malloc_trim(0);
    pthread_mutex_unlock(&one);
#endif
}
