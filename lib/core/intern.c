/*
 * intern.c - the process-wide table of region names.
 *
 * A region name is interned once per process and known by a small id
 * afterwards (handles are these ids). Inserting takes a mutex; reading a
 * name by id takes none: names live in chunks of pointers that never move,
 * and the count is published with release order after a name is stored.
 * Threads cache (parent, hash) -> node in their own CCT (cct.h), so this
 * table is only touched the first time a thread meets a name in a context.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define CHUNK_SHIFT 12
#define CHUNK (1u << CHUNK_SHIFT)
#define MAX_CHUNKS 1024 /* 4M names */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char **chunks[MAX_CHUNKS];
static _Atomic uint32_t count = 1; /* id 0 is never issued */
static struct slot { uint64_t hash; uint32_t id; } *tab;
static uint32_t tab_mask;

const char *gpuprof__intern_name(uint32_t id)
{
    if (id == 0 || id >= gp_load_acquire(&count))
        return NULL;
    return chunks[id >> CHUNK_SHIFT][id & (CHUNK - 1)];
}

static bool tab_grow(void)
{
    uint32_t mask = tab ? tab_mask * 2 + 1 : 1023;
    struct slot *n = calloc((size_t)mask + 1, sizeof(*n));
    if (!n)
        return false;
    for (uint32_t i = 0; tab && i <= tab_mask; i++) {
        if (!tab[i].id)
            continue;
        uint32_t j = (uint32_t)tab[i].hash;
        while (n[j & mask].id)
            j++;
        n[j & mask] = tab[i];
    }
    free(tab);
    tab = n;
    tab_mask = mask;
    return true;
}

/* Stores a copy of name as id `id`; under lock. */
static bool store(uint32_t id, const char *name, size_t len)
{
    uint32_t c = id >> CHUNK_SHIFT;
    if (c >= MAX_CHUNKS)
        return false;
    if (!chunks[c] && !(chunks[c] = calloc(CHUNK, sizeof(char *))))
        return false;
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    memcpy(copy, name, len + 1);
    chunks[c][id & (CHUNK - 1)] = copy;
    return true;
}

uint32_t gpuprof__intern(const char *name, size_t len, uint64_t hash)
{
    uint32_t id = 0;
    pthread_mutex_lock(&lock);
    uint32_t n = gp_load_relaxed(&count);
    if ((!tab || (n + 1) * 2 > tab_mask + 1) && !tab_grow())
        goto out;
    uint32_t j = (uint32_t)hash;
    for (;; j++) {
        struct slot *s = &tab[j & tab_mask];
        if (!s->id)
            break;
        if (s->hash == hash && strcmp(gpuprof__intern_name(s->id), name) == 0) {
            id = s->id;
            goto out;
        }
    }
    if (!store(n, name, len))
        goto out;
    tab[j & tab_mask] = (struct slot){hash, n};
    gp_store_release(&count, n + 1);
    id = n;
out:
    pthread_mutex_unlock(&lock);
    return id;
}

void gpuprof__intern_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void gpuprof__intern_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void gpuprof__intern_atfork_child(void) { pthread_mutex_unlock(&lock); }
