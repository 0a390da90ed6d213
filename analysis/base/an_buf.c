/*
 * an_buf.c - the growable array, the byte buffer and its reader
 * (an_buf.h). Integers are little-endian, as in every file the analysis
 * writes (db/an_db.h).
 */
#include <stdlib.h>
#include <string.h>

#include "../db/an_db.h"
#include "an_buf.h"

bool gpuprof__an_grow(void **arr, uint32_t *cap, uint32_t n, size_t el)
{
    if (n < *cap)
        return true;
    uint32_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, (size_t)c * el);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

uint8_t *gpuprof__an_reserve(gpuprof__an_buf *b, size_t n)
{
    if (b->nomem)
        return NULL;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *d = realloc(b->d, cap);
        if (!d) {
            b->nomem = true;
            return NULL;
        }
        b->d = d;
        b->cap = cap;
    }
    uint8_t *p = b->d + b->n;
    memset(p, 0, n);
    b->n += n;
    return p;
}

void gpuprof__an_put_u32(gpuprof__an_buf *b, uint32_t v)
{
    uint8_t *q = gpuprof__an_reserve(b, 4);
    if (q)
        db_put32(q, v);
}

void gpuprof__an_put_u64(gpuprof__an_buf *b, uint64_t v)
{
    uint8_t *q = gpuprof__an_reserve(b, 8);
    if (q)
        db_put64(q, v);
}

void gpuprof__an_put_bytes(gpuprof__an_buf *b, const void *p, uint64_t n)
{
    uint8_t *q = n ? gpuprof__an_reserve(b, n) : NULL;
    if (q)
        memcpy(q, p, n);
}

const uint8_t *gpuprof__an_get_bytes(gpuprof__an_rdr *d, uint64_t n)
{
    if (d->bad || n > d->n - d->at) {
        d->bad = true;
        return NULL;
    }
    d->at += n;
    return d->p + d->at - n;
}

uint32_t gpuprof__an_get_u32(gpuprof__an_rdr *d)
{
    const uint8_t *q = gpuprof__an_get_bytes(d, 4);
    return q ? db_get32(q) : 0;
}

uint64_t gpuprof__an_get_u64(gpuprof__an_rdr *d)
{
    const uint8_t *q = gpuprof__an_get_bytes(d, 8);
    return q ? db_get64(q) : 0;
}
