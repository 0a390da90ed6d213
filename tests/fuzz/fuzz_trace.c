/*
 * fuzz_trace.c - fuzz target for the trace reader (lib/io/trace.c).
 *
 * libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ilib
 *               tests/fuzz/fuzz_trace.c $(ls lib/io/[a-z]*.c) -lzstd \
 *               -o fuzz_trace
 *             ./fuzz_trace tests/fuzz/corpus/trace
 * Replay (what `make check` runs): -DGPUPROF_FUZZ_REPLAY; every input must
 * be read (its readable part) or refused without a crash or a sanitizer
 * report, and what was read must sort. A copy with the header's and every
 * chunk's checksum repaired lets mutations reach the chunk parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void read_one(const uint8_t *data, size_t size)
{
    gpuprof__io_trace *t = NULL;
    char err[256];
    if (gpuprof__io_trace_decode(data, size, &t, err, sizeof(err)) == 0) {
        gpuprof__io_trace_sort(t);
        for (uint32_t i = 0; i < t->stream_count; i++)
            for (uint64_t k = 1; k < t->streams[i].count; k++)
                if (t->streams[i].recs[k].start_ns <
                    t->streams[i].recs[k - 1].start_ns)
                    __builtin_trap(); /* sorted is sorted */
        for (uint32_t i = 0; i < t->host_count; i++)
            for (uint64_t k = 1; k < t->host[i].count; k++)
                if (t->host[i].recs[k].start_ns <
                    t->host[i].recs[k - 1].start_ns)
                    __builtin_trap();
    }
    gpuprof__io_trace_free(t);
}

static void repair(uint8_t *b, size_t size)
{
    if (size < 32)
        return;
    put32(b + 28, gpuprof__io_crc32c(0, b, 28));
    for (size_t off = 32; off + 32 <= size;) {
        uint32_t payload = get32(b + off + 20);
        if (payload > size - off - 32)
            break;
        uint32_t crc = gpuprof__io_crc32c(0, b + off, 28);
        put32(b + off + 28, gpuprof__io_crc32c(crc, b + off + 32, payload));
        off += 32 + (size_t)payload;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_one(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    repair(copy, size);
    read_one(copy, size);
    free(copy);
    return 0;
}

#ifdef GPUPROF_FUZZ_REPLAY
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    uint8_t chunk[65536];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    /* An exact-size copy so ASan sees any read past the end. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact && len)
        memcpy(exact, buf, len);
    if (exact)
        LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0)
            return 2;
        if (!S_ISDIR(sb.st_mode)) {
            files += replay_file(argv[i]) == 0;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            char path[4096];
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            files += replay_file(path) == 0;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;
}
#endif
