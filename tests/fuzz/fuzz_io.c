/*
 * fuzz_io.c - fuzz target for the profile reader (lib/io).
 *
 * libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Ilib
 *               tests/fuzz/fuzz_io.c $(ls lib/io/[a-z]*.c) -lzstd -o fuzz_io
 *             ./fuzz_io tests/fuzz/corpus/io
 * Replay (what `make check` runs, any compiler): build with
 * -DGPUPROF_FUZZ_REPLAY and pass corpus directories or files; every input
 * must be decoded or rejected without a crash or a sanitizer report, and a
 * decoded profile must encode again (the reader only accepts what the
 * writer could have written).
 */
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "io/io.h"
#include "io/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const uint8_t *data, size_t size)
{
    gpuprof__io_profile *p = NULL;
    char err[256];
    if (gpuprof__io_decode(data, size, &p, err, sizeof(err)) == 0) {
        uint8_t *buf = NULL;
        size_t n = 0;
        if (gpuprof__io_encode(p, 0, &buf, &n, err, sizeof(err)) != 0)
            __builtin_trap(); /* accepted but not writable: a reader bug */
        free(buf);
    }
    gpuprof__io_profile_free(p);
}

/* Checksums stop a mutating fuzzer at the door; a copy with every checksum
 * (and the file size) repaired lets it reach the parser and the structural
 * checks behind them. */
static void repair(uint8_t *b, size_t size)
{
    if (size < HDR_SIZE)
        return;
    put64(b + 16, size);
    uint64_t n = get32(b + 24);
    if (n <= 64 && HDR_SIZE + n * ENTRY_SIZE <= size) {
        for (uint64_t i = 0; i < n; i++) {
            uint8_t *e = b + HDR_SIZE + i * ENTRY_SIZE;
            uint64_t off = get64(e + 8), len = get64(e + 16);
            if (off <= size && len <= size - off)
                put32(e + 32, gpuprof__io_crc32c(0, b + off, len));
        }
        put32(b + 40, gpuprof__io_crc32c(0, b + HDR_SIZE, n * ENTRY_SIZE));
    }
    put32(b + HDR_CRC_AT, gpuprof__io_crc32c(0, b, HDR_CRC_AT));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    repair(copy, size);
    decode(copy, size);
    free(copy);
    return 0;
}

#ifdef GPUPROF_FUZZ_REPLAY
#include <dirent.h>
#include <stdio.h>
#include <string.h>
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
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    /* An exact-size copy so ASan sees any read past the end. */
    uint8_t *exact = malloc(len ? len : 1);
    if (len)
        memcpy(exact, buf, len);
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
