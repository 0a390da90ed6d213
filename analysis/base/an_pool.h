/*
 * an_pool.h - the analysis's parallel work: a fork-join loop over a small
 * thread pool, big zero-filled buffers whose pages are faulted in (and
 * given back) on the pool, and handing freed memory back to the system.
 * The aggregation (agg/) and the database writers (db/) run their passes
 * on it; a task gets the context its caller passes and an index, nothing
 * else.
 */
#ifndef GPUPROF_AN_POOL_H
#define GPUPROF_AN_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef void (*gpuprof__an_task_fn)(void *ctx, uint32_t i);

/* fn(ctx, i) for i in [0, n), on up to `threads` threads (the caller is
 * one of them; with 1, or when no thread starts, all on the caller). */
void gpuprof__an_parallel_for(unsigned threads, uint32_t n,
                              gpuprof__an_task_fn fn, void *ctx);

/* A zero-filled private mapping of `size` bytes whose pages are populated
 * on the pool, a slice per task (on a VM a fault costs microseconds, and
 * threads faulting one buffer contend); NULL when it cannot be mapped.
 * gpuprof__an_big_free drops its pages on the pool, then unmaps it (NULL:
 * nothing). */
void *gpuprof__an_big_alloc(unsigned threads, size_t size);
void gpuprof__an_big_free(unsigned threads, void *p, size_t size);

/* A big buffer reused from round to round: its pages are faulted in once
 * (on a VM a fresh page costs microseconds; one already there, nothing),
 * and a round that needs more replaces it with a larger one. Its bytes
 * are whatever the last round left: a user writes every byte it uses. */
typedef struct gpuprof__an_big {
    uint8_t *p;
    size_t cap;
} gpuprof__an_big;

/* At least `need` bytes at b->p; NULL when they cannot be mapped (b is
 * then empty). */
uint8_t *gpuprof__an_big_reserve(unsigned threads, gpuprof__an_big *b,
                                 size_t need);
void gpuprof__an_big_release(unsigned threads, gpuprof__an_big *b);

/* Freed memory back to the system (malloc_trim), one call at a time in
 * the process: a memory budget is resident memory. */
void gpuprof__an_trim(void);

#endif /* GPUPROF_AN_POOL_H */
