/*
 * file.c - putting profile bytes on disk atomically, and reading them back.
 *
 * A profile appears under its final name only when complete: the bytes go to
 * a temporary file in the same directory (".<name>.tmp.<pid>.<n>"), which is
 * fsync'ed and renamed over the final name, then the directory is fsync'ed.
 * Readers therefore see the previous generation or the new one, never a
 * mixture; a crash leaves at worst a stray temporary, which readers skip
 * (its name starts with a dot).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"

static _Atomic unsigned tmp_counter;

static int write_all(int fd, const uint8_t *buf, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, buf, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        buf += n;
        size -= (size_t)n;
    }
    return 0;
}

static void split(const char *path, char *dir, size_t dsize, char *base,
                  size_t bsize)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dsize, ".");
        snprintf(base, bsize, "%s", path);
    } else {
        snprintf(dir, dsize, "%.*s", slash == path ? 1 : (int)(slash - path),
                 path);
        snprintf(base, bsize, "%s", slash + 1);
    }
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse it */
        close(fd);
    }
}

/* 0, or why `path` cannot name a file we write (its buffers are fixed). */
static int check_path(const char *path, size_t dsize, size_t bsize)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (*base == '\0')
        return slash ? EISDIR : ENOENT;
    if (strlen(path) >= dsize || strlen(base) + 40 >= bsize)
        return ENAMETOOLONG;
    return 0;
}

/* Messages name the step, never `path` itself: callers put the file name in
 * front (io.h). */
int gpuprof__io_write_atomic(const char *path, const uint8_t *buf, size_t size,
                             char *err, size_t es)
{
    return gpuprof__io_write_replace(path, buf, size, true, err, es);
}

int gpuprof__io_write_replace(const char *path, const uint8_t *buf,
                              size_t size, bool durable, char *err, size_t es)
{
    char dir[4096], base[1024], tmp[4096 + 1100];
    int e = check_path(path, sizeof(dir), sizeof(base));
    if (e) {
        snprintf(err, es, "cannot write: %s", strerror(e));
        return GPUPROF_IO_ERR_IO;
    }
    split(path, dir, sizeof(dir), base, sizeof(base));
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%ld.%u", dir, base, (long)getpid(),
             atomic_fetch_add(&tmp_counter, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, es, "cannot create a temporary file: %s",
                 strerror(errno));
        return GPUPROF_IO_ERR_IO;
    }
    e = write_all(fd, buf, size);
    const char *what = "write";
    if (!e && durable && fsync(fd) != 0)
        e = errno, what = "fsync";
    if (close(fd) != 0 && !e)
        e = errno, what = "close";
    if (!e && rename(tmp, path) != 0)
        e = errno, what = "rename";
    if (e) {
        unlink(tmp);
        snprintf(err, es, "%s failed: %s", what, strerror(e));
        return GPUPROF_IO_ERR_IO;
    }
    if (durable)
        sync_dir(dir);
    return 0;
}

/* Reads the whole of fd (a regular file of `size` bytes by fstat) into a new
 * buffer; 0 or an errno value. A file that shrinks meanwhile gives fewer
 * bytes, which the decoder reports as truncated. */
static int slurp(int fd, size_t size, uint8_t **out, size_t *got)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return ENOMEM;
    *got = 0;
    while (*got < size) {
        ssize_t n = read(fd, buf + *got, size - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            return e;
        }
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    *out = buf;
    return 0;
}

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(const struct stat *sb)
{
    if (S_ISFIFO(sb->st_mode))
        return "a FIFO";
    if (S_ISDIR(sb->st_mode))
        return "a directory";
    if (S_ISCHR(sb->st_mode) || S_ISBLK(sb->st_mode))
        return "a device";
    if (S_ISSOCK(sb->st_mode))
        return "a socket";
    return "of another kind";
}

int gpuprof__io_read_whole(const char *path, uint8_t **buf, size_t *size,
                           char *err, size_t es)
{
    *buf = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a
     * writer; what is not a regular file is refused before any read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, es, "cannot open: %s", strerror(errno));
        return GPUPROF_IO_ERR_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        snprintf(err, es, "cannot stat: %s", strerror(errno));
        close(fd);
        return GPUPROF_IO_ERR_IO;
    }
    if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > SIZE_MAX / 2) {
        if (S_ISREG(sb.st_mode))
            snprintf(err, es, "too large (%llu bytes)",
                     (unsigned long long)sb.st_size);
        else
            snprintf(err, es, "not a regular file (%s)", file_kind(&sb));
        close(fd);
        return GPUPROF_IO_ERR_IO;
    }
    int e = slurp(fd, (size_t)sb.st_size, buf, size);
    close(fd);
    if (e) {
        snprintf(err, es, "cannot read: %s", strerror(e));
        return e == ENOMEM ? GPUPROF_IO_ERR_NOMEM : GPUPROF_IO_ERR_IO;
    }
    return 0;
}

int gpuprof__io_read_file(const char *path, gpuprof__io_profile **out,
                          char *err, size_t es)
{
    *out = NULL;
    uint8_t *buf;
    size_t got;
    int rc = gpuprof__io_read_whole(path, &buf, &got, err, es);
    if (rc)
        return rc;
    rc = gpuprof__io_decode(buf, got, out, err, es);
    free(buf);
    return rc;
}
