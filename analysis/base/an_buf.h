/*
 * an_buf.h - the growable containers every room of the analysis uses, so
 * that there is one of each: an array that doubles (gpuprof__an_grow, the
 * GPROF_AN_GROW shorthand), a byte buffer that records running out of
 * memory once instead of at every append (gpuprof__an_buf), and a reader
 * of what the buffer's little-endian appends wrote (gpuprof__an_rdr: a
 * read past the end marks it bad and gives zeros). The ranks' messages
 * (coll/) and meta.db (db/) are built in such buffers.
 */
#ifndef GPUPROF_AN_BUF_H
#define GPUPROF_AN_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for element n in *arr of *cap elements of el bytes: the array
 * doubles (from 64) when n has reached *cap. false when out of memory
 * (the array is left as it was). */
bool gpuprof__an_grow(void **arr, uint32_t *cap, uint32_t n, size_t el);
#define GPUPROF_AN_GROW(arr, n, cap)                                           \
    ((n) < (cap) ||                                                            \
     gpuprof__an_grow((void **)&(arr), &(cap), (n), sizeof(*(arr))))

typedef struct gpuprof__an_buf {
    uint8_t *d;
    size_t n, cap;
    bool nomem; /* an append failed: d holds what came before it */
} gpuprof__an_buf;

/* n zeroed bytes appended; NULL (and b->nomem) when out of memory. */
uint8_t *gpuprof__an_reserve(gpuprof__an_buf *b, size_t n);
void gpuprof__an_put_u32(gpuprof__an_buf *b, uint32_t v);
void gpuprof__an_put_u64(gpuprof__an_buf *b, uint64_t v);
void gpuprof__an_put_bytes(gpuprof__an_buf *b, const void *p, uint64_t n);

typedef struct gpuprof__an_rdr { /* reads what gpuprof__an_put_* wrote */
    const uint8_t *p;
    uint64_t n, at;
    bool bad;
} gpuprof__an_rdr;

const uint8_t *gpuprof__an_get_bytes(gpuprof__an_rdr *d, uint64_t n);
uint32_t gpuprof__an_get_u32(gpuprof__an_rdr *d);
uint64_t gpuprof__an_get_u64(gpuprof__an_rdr *d);

#endif /* GPUPROF_AN_BUF_H */
