/*
 * binary.c - GPU binaries (OpenCL program binaries, cubins, Level Zero
 * modules): each distinct content is saved once under
 * <output dir>/binaries/<hash>.<ext>, named by a 128-bit hash of its bytes,
 * and registered in the module table (flag GPUPROF_IO_MODULE_GPU) so that
 * kernel and instruction nodes can name it by module index (DESIGN §3,
 * doc/FORMATS.md). Several processes of one run share the directory: a
 * file already there with the right size is taken as saved, and writes are
 * atomic (temporary file + rename), so two ranks saving the same binary at
 * once leave one whole file.
 *
 * Called from hooks on application threads when a program is built or a
 * module loaded: rare, and already slow in the runtime.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/gpu.h"
#include "core/internal.h"
#include "core/unwind.h"
#include "io/io.h"

/* Binaries seen by this process: hash -> module id. Few (one per program
 * and device), so a short list. */
typedef struct seen {
    uint64_t h[2];
    uint32_t id;
} seen;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static seen *known;
static uint32_t nknown, capknown;
static bool warned;

static inline uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static inline void mix(uint64_t h[2], uint64_t w)
{
    h[0] = rotl(h[0] ^ (w * 0x87c37b91114253d5ull), 31) * 0x4cf5ad432745937full;
    h[1] = (rotl(h[1] + w, 27) ^ h[0]) * 0x9e3779b97f4a7c15ull + 0x52dce729u;
}

/* Two 64-bit lanes over 8-byte words, the tail zero-padded, the length
 * mixed in last. Content names, not security: nothing adversarial. */
void gpuprof__hash128(const void *data, size_t size, uint64_t out[2])
{
    const uint8_t *p = data;
    uint64_t h[2] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull}, w;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        memcpy(&w, p + i, 8);
        mix(h, w);
    }
    if (i < size) {
        w = 0;
        memcpy(&w, p + i, size - i);
        mix(h, w);
    }
    mix(h, (uint64_t)size);
    out[0] = fmix(h[0] ^ rotl(h[1], 17));
    out[1] = fmix(h[1] + h[0]);
}

static uint32_t known_id(const uint64_t h[2])
{
    for (uint32_t i = 0; i < nknown; i++)
        if (known[i].h[0] == h[0] && known[i].h[1] == h[1])
            return known[i].id;
    return GP_NO_BINARY;
}

/* Writes the file unless it is there already; 0 or an errno value. */
static int save(const char *dir, const char *rel, const void *data,
                size_t size, char *err, size_t es)
{
    char path[sizeof(G.cfg.output_dir) + 128];
    struct stat st;
    snprintf(path, sizeof(path), "%s/binaries", dir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, es, "cannot create %s: %s", path, strerror(errno));
        return errno;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    if (stat(path, &st) == 0 && (uint64_t)st.st_size == size)
        return 0;
    char why[256];
    if (gpuprof__io_write_atomic(path, data, size, why, sizeof(why))) {
        snprintf(err, es, "%s: %s", path, why);
        return EIO;
    }
    return 0;
}

bool gpuprof__gpu_binaries_wanted(void) { return G.cfg.gpu_binaries; }

/* gpuprof__gpu_binary's work: the hash, the table, the file. */
static uint32_t save_binary(const void *data, size_t size, const char *ext)
{
    uint64_t h[2];
    gpuprof__hash128(data, size, h);
    pthread_mutex_lock(&mu);
    uint32_t id = known_id(h);
    if (id != GP_NO_BINARY) {
        pthread_mutex_unlock(&mu);
        return id;
    }
    char rel[96], err[sizeof(G.cfg.output_dir) + 512];
    snprintf(rel, sizeof(rel), "binaries/%016llx%016llx.%s",
             (unsigned long long)h[0], (unsigned long long)h[1],
             ext && *ext ? ext : "bin");
    int e = save(G.cfg.output_dir, rel, data, size, err, sizeof(err));
    if (!e)
        id = gpuprof__module_add(rel, GPUPROF_IO_MODULE_GPU, 0, size);
    if (id != GP_NO_BINARY && nknown == capknown) {
        uint32_t cap = capknown ? capknown * 2 : 16;
        seen *n = realloc(known, cap * sizeof(*n));
        if (n) {
            known = n;
            capknown = cap;
        }
    }
    if (id != GP_NO_BINARY && nknown < capknown)
        known[nknown++] = (seen){{h[0], h[1]}, id};
    bool say = id == GP_NO_BINARY && !warned;
    if (say)
        warned = true;
    pthread_mutex_unlock(&mu);
    if (id == GP_NO_BINARY) {
        gpuprof__stat_add(GP_STAT_GPU_BINARIES_FAILED, 1);
        if (say) /* once: the measurement goes on without it */
            gpuprof__log(GPUPROF_LOG_WARN,
                         "GPU binary not saved (kernels will name no "
                         "binary): %s",
                         e ? err : "module table full or out of memory");
    }
    else
        gpuprof__stat_add(GP_STAT_GPU_BINARIES, 1);
    return id;
}

uint32_t gpuprof__gpu_binary(const void *data, size_t size, const char *ext)
{
    if (!data || !size || !G.cfg.gpu_binaries)
        return GP_NO_BINARY;
    gpuprof__self_begin(); /* hashing and writing: the library's work */
    uint32_t id = save_binary(data, size, ext);
    gpuprof__self_end();
    return id;
}
