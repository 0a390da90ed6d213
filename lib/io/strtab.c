/*
 * strtab.c - the string table builder used by the writer.
 *
 * Every name in a profile (host, metric, region, thread, counter) is stored
 * once in the STRINGS section and referred to by byte offset. Offset 0 is
 * the empty string. An open-addressing table of offsets finds duplicates.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

struct gpuprof__io_strtab {
    char *data;
    uint64_t size, cap;
    uint32_t *slots; /* offsets + 1; 0 = empty */
    uint32_t mask, used;
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
    return h;
}

gpuprof__io_strtab *gpuprof__io_strtab_new(void)
{
    gpuprof__io_strtab *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->cap = 4096;
    t->data = malloc(t->cap);
    t->mask = 1023;
    t->slots = calloc(t->mask + 1, sizeof(*t->slots));
    if (!t->data || !t->slots) {
        gpuprof__io_strtab_free(t);
        return NULL;
    }
    t->data[0] = '\0';
    t->size = 1;
    return t;
}

static int rehash(gpuprof__io_strtab *t)
{
    uint32_t mask = t->mask * 2 + 1;
    uint32_t *s = calloc((size_t)mask + 1, sizeof(*s));
    if (!s)
        return -1;
    for (uint32_t i = 0; i <= t->mask; i++) {
        if (!t->slots[i])
            continue;
        const char *str = t->data + t->slots[i] - 1;
        uint32_t j = (uint32_t)hash(str, strlen(str));
        while (s[j & mask])
            j++;
        s[j & mask] = t->slots[i];
    }
    free(t->slots);
    t->slots = s;
    t->mask = mask;
    return 0;
}

uint32_t gpuprof__io_strtab_add(gpuprof__io_strtab *t, const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return 0;
    if ((t->used + 1) * 2 > t->mask + 1 && rehash(t))
        return UINT32_MAX;
    uint32_t j = (uint32_t)hash(s, n);
    for (;; j++) {
        uint32_t off = t->slots[j & t->mask];
        if (!off)
            break;
        if (strcmp(t->data + off - 1, s) == 0)
            return off - 1;
    }
    if (t->size + n + 1 >= UINT32_MAX - 1)
        return UINT32_MAX;
    if (t->size + n + 1 > t->cap) {
        uint64_t cap = t->cap * 2;
        while (cap < t->size + n + 1)
            cap *= 2;
        char *d = realloc(t->data, cap);
        if (!d)
            return UINT32_MAX;
        t->data = d;
        t->cap = cap;
    }
    uint32_t off = (uint32_t)t->size;
    memcpy(t->data + off, s, n + 1);
    t->size += n + 1;
    t->slots[j & t->mask] = off + 1;
    t->used++;
    return off;
}

const char *gpuprof__io_strtab_data(const gpuprof__io_strtab *t, uint64_t *size)
{
    *size = t->size;
    return t->data;
}

void gpuprof__io_strtab_free(gpuprof__io_strtab *t)
{
    if (!t)
        return;
    free(t->data);
    free(t->slots);
    free(t);
}
