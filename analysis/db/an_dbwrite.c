/*
 * an_dbwrite.c - one database file being written (an_dbwrite.h): open,
 * append planes, finish with the table and header, rename into place, and
 * the ranks' parts.
 */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/an_internal.h"
#include "../base/an_pool.h"
#include "an_dbwrite.h"
#include "io/io.h"

bool gpuprof__an_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        p += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return true;
}

bool gpuprof__an_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t g = pread(fd, p, n, (off_t)off);
        if (g < 0 && errno == EINTR)
            continue;
        if (g <= 0) {
            if (g == 0)
                errno = EIO;
            return false;
        }
        p += g, n -= (size_t)g, off += (uint64_t)g;
    }
    return true;
}

void gpuprof__an_db_header(uint8_t *h, const char *magic, uint32_t crc,
                           uint64_t body, uint32_t a, uint32_t c,
                           uint64_t ident, unsigned major)
{
    memcpy(h, magic, 8);
    db_put16(h + 8, (uint16_t)major);
    db_put16(h + 10, DB_MINOR);
    db_put64(h + 16, body);
    db_put32(h + 24, a);
    db_put32(h + 28, c);
    db_put64(h + 32, ident);
    crc =
        gpuprof__io_crc32c_combine(gpuprof__io_crc32c(0, h + 32, 8), crc, body);
    db_put32(h + 12, crc);
}

gpuprof_status gpuprof__an_dbfile_open(gpuprof__an_dbfile *f, const char *dir,
                                       const char *name, uint32_t planes,
                                       long pid0, bool peer)
{
    size_t n = strlen(dir) + strlen(name) + 64;
    f->fd = f->part = -1;
    f->path = malloc(n);
    f->tmp = malloc(n);
    f->tabsize = (uint64_t)planes * DB_PLANE_REF;
    f->tab = calloc(f->tabsize ? f->tabsize : 1, 1);
    f->origin = f->at = DB_HEADER + f->tabsize;
    if (!f->path || !f->tmp || !f->tab)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(f->path, n, "%s/%s", dir, name);
    snprintf(f->tmp, n, "%s/.%s.tmp-%ld", dir, name, pid0);
    f->peer = peer;
    if (f->peer)
        return GPUPROF_OK;
    f->fd = open(f->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", f->tmp,
                                strerror(errno));
    return GPUPROF_OK;
}

/* Writes of many megabytes go in pieces on the pool's threads: copying
 * into the page cache is the kernel's work, and it scales. */
#define PUT_PIECE (4u << 20)

typedef struct put { /* one write in pieces */
    int fd;
    const uint8_t *buf;
    uint64_t n, off;
    uint32_t *crc; /* per piece */
    _Atomic int err;
} put;

static void put_piece(void *ctx, uint32_t i)
{
    put *w = ctx;
    uint64_t at = (uint64_t)i * PUT_PIECE;
    uint64_t n = w->n - at < PUT_PIECE ? w->n - at : PUT_PIECE;
    w->crc[i] = gpuprof__io_crc32c(0, w->buf + at, n);
    if (!gpuprof__an_pwrite_all(w->fd, w->buf + at, n, w->off + at))
        w->err = errno ? errno : EIO;
}

/* n bytes in pieces; the pieces' checksums combined into f->crc in
 * order. An errno value, 0 when written, -1 when out of memory. */
static int put_pieces(gpuprof__an_dbfile *f, put *w, unsigned threads)
{
    uint32_t pieces = (uint32_t)((w->n + PUT_PIECE - 1) / PUT_PIECE);
    if (!(w->crc = malloc(pieces * sizeof(*w->crc))))
        return -1;
    gpuprof__an_parallel_for(threads, pieces, put_piece, w);
    for (uint32_t i = 0; i < pieces; i++) /* in order */
        f->crc = gpuprof__io_crc32c_combine(
            f->crc, w->crc[i],
            i + 1 < pieces ? PUT_PIECE : w->n - (uint64_t)i * PUT_PIECE);
    free(w->crc);
    return w->err;
}

gpuprof_status gpuprof__an_dbfile_put(gpuprof__an_dbfile *f, const uint8_t *buf,
                                      uint64_t n, unsigned threads)
{
    /* One rank of several: into its part, settled later (coll/). */
    put w = {.fd = f->part >= 0 ? f->part : f->fd,
             .buf = buf,
             .n = n,
             .off = f->part >= 0 ? f->at - f->origin : f->at};
    int err = 0;
    if (n > PUT_PIECE) {
        if ((err = put_pieces(f, &w, threads)) < 0)
            return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    } else if (n) {
        f->crc = gpuprof__io_crc32c(f->crc, buf, n);
        if (!gpuprof__an_pwrite_all(w.fd, buf, n, w.off))
            err = errno ? errno : EIO;
    }
    if (err)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->path,
                                strerror(err));
    f->at += n;
    return GPUPROF_OK;
}

/* The table, then the header with the checksum of the body: the table's,
 * combined with the planes' (accumulated as they were written). */
gpuprof_status gpuprof__an_dbfile_finish(gpuprof__an_dbfile *f,
                                         const char *magic, uint32_t a,
                                         uint32_t c, uint64_t ident,
                                         unsigned major)
{
    bool ok = gpuprof__an_pwrite_all(f->fd, f->tab, f->tabsize, DB_HEADER);
    uint32_t crc =
        gpuprof__io_crc32c_combine(gpuprof__io_crc32c(0, f->tab, f->tabsize),
                                   f->crc, f->at - DB_HEADER - f->tabsize);
    uint8_t h[DB_HEADER];
    gpuprof__an_db_header(h, magic, crc, f->at - DB_HEADER, a, c, ident, major);
    ok = ok && gpuprof__an_pwrite_all(f->fd, h, DB_HEADER, 0);
    int e = errno;
    if (close(f->fd) != 0 && ok)
        ok = false, e = errno;
    f->fd = -1;
    if (!ok)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot write: %s", f->path,
                                strerror(e));
    return GPUPROF_OK;
}

/* Into place. An earlier database's file is moved aside first and removed
 * once meta.db is written (_drop_aside), or put back if that fails: renaming
 * over it would make ext4 allocate every delayed block of the new file
 * inside rename (auto_da_alloc; 20 ms for 50 MB on our VMs) and free the
 * old file's pages there too, both on one thread. Aside, the allocation is
 * left to writeback and the old files are removed on the pool. A file
 * put where there was none is removed if the run fails (_free): a
 * failed run leaves the earlier database as it was, never a new file
 * beside it (trace.db beside an untraced database). */
gpuprof_status gpuprof__an_dbfile_rename(gpuprof__an_dbfile *f)
{
    size_t n = strlen(f->tmp) + 8;
    char *aside = malloc(n);
    if (!aside)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(aside, n, "%s.old", f->tmp);
    bool moved = rename(f->path, aside) == 0;
    if (rename(f->tmp, f->path) != 0) {
        int e = errno;
        if (moved)
            (void)rename(aside, f->path); /* the earlier one back */
        free(aside);
        return gpuprof__an_fail(GPUPROF_E_IO,
                                "%s: cannot rename into "
                                "place: %s",
                                f->path, strerror(e));
    }
    if (moved) {
        f->aside = aside;
    } else {
        free(aside);
        f->placed = true;
    }
    free(f->tmp);
    f->tmp = NULL;
    return GPUPROF_OK;
}

void gpuprof__an_dbfile_drop_aside(gpuprof__an_dbfile *f)
{
    unlink(f->aside);
    free(f->aside);
    f->aside = NULL;
}

void gpuprof__an_dbfile_free(gpuprof__an_dbfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->part >= 0)
        close(f->part);
    if (f->tmp && !f->peer) /* not renamed: the run failed */
        unlink(f->tmp);
    if (f->aside) /* the run failed after renaming: the earlier one back */
        (void)rename(f->aside, f->path);
    else if (f->placed) /* ... or none where there was none */
        (void)unlink(f->path);
    free(f->aside);
    free(f->tmp);
    free(f->path);
    free(f->tab);
}

/* ---- several ranks ------------------------------------------------------ */
gpuprof_status gpuprof__an_dbfile_join(gpuprof__an_dbfile *f, const char *dir,
                                       const char *name, long pid0, int rank)
{
    if (f->peer && (f->fd = open(f->tmp, O_RDWR | O_CLOEXEC)) < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot open: %s", f->tmp,
                                strerror(errno));
    if (rank == 0) /* its planes come first: in place, at the origin */
        return GPUPROF_OK;
    size_t n = strlen(dir) + strlen(name) + 64;
    char *p = malloc(n);
    if (!p)
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    snprintf(p, n, "%s/.%s.part-%ld-%d", dir, name, pid0, rank);
    f->part = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = errno;
    if (f->part >= 0)
        unlink(p);
    gpuprof_status st =
        f->part < 0 ? gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot create: %s", p,
                                       strerror(e))
                    : GPUPROF_OK;
    free(p);
    return st;
}

/* The shared file again, after the ranks' parts were copied in and it was
 * closed and the ranks agreed: what the others wrote is read from it
 * (close-to-open: a network file system writes back at close and revalidates
 * what it cached at open; a local one costs nothing). */
gpuprof_status gpuprof__an_dbfile_reopen(gpuprof__an_dbfile *f)
{
    if ((f->fd = open(f->tmp, O_RDWR | O_CLOEXEC)) < 0)
        return gpuprof__an_fail(GPUPROF_E_IO, "%s: cannot open: %s", f->tmp,
                                strerror(errno));
    return GPUPROF_OK;
}

bool gpuprof__an_copy_part(int from, int to, uint64_t n, uint64_t at)
{
    loff_t in = 0, out = (loff_t)at;
    while (n) { /* in the kernel where it can (same file system) */
        ssize_t c = copy_file_range(from, &in, to, &out,
                                    n < (1u << 30) ? n : (1u << 30), 0);
        if (c < 0 && errno == EINTR)
            continue;
        if (c <= 0)
            break;
        n -= (uint64_t)c;
    }
    enum { CHUNK = 4 << 20 };
    uint8_t *b = n ? malloc(CHUNK) : NULL;
    if (n && !b)
        return false;
    while (n) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        if (!gpuprof__an_pread_all(from, b, k, (uint64_t)in) ||
            !gpuprof__an_pwrite_all(to, b, k, (uint64_t)out)) {
            free(b);
            return false;
        }
        in += (loff_t)k, out += (loff_t)k, n -= k;
    }
    free(b);
    return true;
}
