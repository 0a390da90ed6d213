/*
 * an_dbwrite.h - writing one file of an analysis database (an_db.h):
 * a temporary file beside its final name, the planes appended (a write of
 * megabytes in pieces on the pool, its CRC-32C accumulated), the plane
 * table kept in memory until the end, then the table and the header, and
 * the rename into place that moves an earlier database's file aside until
 * the new database is complete (doc/ANALYSIS.md, "When a run fails").
 *
 * On several ranks (coll/) rank 0 makes the temporary file and the others
 * open it (gpuprof__an_dbfile_join); each rank but 0 writes its planes
 * into a part of its own, copied into the shared file at an offset the
 * ranks agree on (gpuprof__an_copy_part); rank 0's planes come first, so
 * it writes them in place.
 */
#ifndef GPUPROF_AN_DBWRITE_H
#define GPUPROF_AN_DBWRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "an_db.h"
#include "gpuprof_analysis.h"

typedef struct gpuprof__an_dbfile {
    int fd;
    char *tmp, *path;
    uint8_t *tab; /* DB_PLANE_REF per plane */
    uint64_t tabsize;
    uint64_t at;  /* where the next plane goes */
    uint32_t crc; /* of the planes written so far (CRC-32C) */
    /* Several ranks: a rank's planes go to a file of its own (`part`,
     * unlinked when made) until their place in the shared one is known;
     * `origin` is where the planes start. `peer`: rank 0 made `tmp`. */
    int part;
    uint64_t origin;
    bool peer;
    char *aside; /* the earlier database's file, moved aside (_rename) */
    bool placed; /* put in place where there was none: removed if the run
                    fails before meta.db is written (_free) */
} gpuprof__an_dbfile;

/* A file that is not open: what _free accepts before _open. */
#define GPUPROF_AN_DBFILE_CLOSED                                               \
    {                                                                          \
        .fd = -1, .part = -1                                                   \
    }

/* The temporary file for `name` in `dir` (".NAME.tmp-PID0") with a table
 * of `planes` plane references; a peer (a rank but 0) only names it. */
gpuprof_status gpuprof__an_dbfile_open(gpuprof__an_dbfile *f, const char *dir,
                                       const char *name, uint32_t planes,
                                       long pid0, bool peer);
/* Appends n bytes of planes (into the part, on a rank of several). */
gpuprof_status gpuprof__an_dbfile_put(gpuprof__an_dbfile *f, const uint8_t *buf,
                                      uint64_t n, unsigned threads);
/* The table, then the header with the body's checksum; closes the file. */
gpuprof_status gpuprof__an_dbfile_finish(gpuprof__an_dbfile *f,
                                         const char *magic, uint32_t a,
                                         uint32_t c, uint64_t ident,
                                         unsigned major);
/* Into place; an earlier file of that name is moved aside (f->aside set:
 * the caller drops it once the database is complete). */
gpuprof_status gpuprof__an_dbfile_rename(gpuprof__an_dbfile *f);
void gpuprof__an_dbfile_drop_aside(gpuprof__an_dbfile *f);
/* Closes and frees; a run that failed leaves what was there before. */
void gpuprof__an_dbfile_free(gpuprof__an_dbfile *f);

/* Several ranks: rank 0's temporary file opened by a peer, and a part of
 * this rank's own (unlinked at once; none on rank 0); the shared file
 * again after the parts were settled and it was closed (close-to-open
 * consistency). */
gpuprof_status gpuprof__an_dbfile_join(gpuprof__an_dbfile *f, const char *dir,
                                       const char *name, long pid0, int rank);
gpuprof_status gpuprof__an_dbfile_reopen(gpuprof__an_dbfile *f);
/* n bytes of `from` (from its start) into `to` at `at`. */
bool gpuprof__an_copy_part(int from, int to, uint64_t n, uint64_t at);

/* A header (DB_HEADER bytes) of format `major`; crc is the body's: the
 * header's checksum covers the identity (bytes 32..39) and then the body. */
void gpuprof__an_db_header(uint8_t *h, const char *magic, uint32_t crc,
                           uint64_t body, uint32_t a, uint32_t c,
                           uint64_t ident, unsigned major);
/* Whole reads and writes at an offset (EINTR retried; a short transfer
 * is EIO). */
bool gpuprof__an_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
bool gpuprof__an_pread_all(int fd, void *buf, size_t n, uint64_t off);

static inline void gpuprof__an_put_f64(uint8_t *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    db_put64(p, bits);
}

#endif /* GPUPROF_AN_DBWRITE_H */
