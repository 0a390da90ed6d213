/*
 * an_metadb.c - writing meta.db (an_db.h): the unified tree's strings,
 * metrics (each measured one twice: inclusive, exclusive), profiles and
 * contexts, the devices' attributes (format 5), and what the traces
 * could not give. Written whole and put in
 * place last: a reader checks that the other files agree with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agg/an_tree.h"
#include "../base/an_buf.h"
#include "../base/an_internal.h"
#include "an_dbwrite.h"
#include "an_metadb.h"

typedef gpuprof__an_buf buf;
#define reserve gpuprof__an_reserve

static void meta_metrics(buf *b, const an_tree *t, unsigned major)
{
    for (uint32_t m = 0; m < 2 * t->nm; m++) {
        const gmetric *g = &t->m[m / 2];
        uint8_t *q = reserve(b, db_metric_rec(major));
        if (!q)
            return;
        db_put32(q, g->name);
        db_put32(q + 4, g->desc);
        q[8] = g->unit;
        q[9] = g->combine;
        q[10] = g->kind;
        q[11] = (uint8_t)(m % 2);
        if (major < 4)
            continue;
        db_put32(q + 12, g->flags);
        db_put32(q + 16, g->count ? 2 * (g->count - 1) + m % 2 : UINT32_MAX);
    }
}

static void meta_profiles(buf *b, const an_tree *t)
{
    for (uint32_t i = 0; i < t->np; i++) {
        const gprof *p = &t->p[i];
        uint8_t *q = reserve(b, DB_PROFILE_REC);
        if (!q)
            return;
        db_put32(q, p->host);
        db_put32(q + 4, p->tname);
        db_put32(q + 8, p->file);
        db_put32(q + 12, p->pid);
        db_put32(q + 16, (uint32_t)p->rank);
        db_put32(q + 20, p->flags);
        db_put64(q + 24, p->tid);
    }
}

static void meta_contexts(buf *b, const an_tree *t)
{
    for (uint32_t i = 0; i < t->nc; i++) {
        const gctx *c = &t->c[i];
        uint8_t *q = reserve(b, DB_CONTEXT_REC);
        if (!q)
            return;
        db_put32(q, c->parent);
        q[4] = c->kind;
        db_put32(q + 8, c->name);
        db_put32(q + 12, c->aux);
        db_put64(q + 16, c->key);
    }
}

/* Format 5: the files' device attributes, each with its file's first
 * profile (profiles and attributes both come in file order). */
static void meta_devices(buf *b, const an_tree *t)
{
    uint8_t *q = reserve(b, 4);
    if (!q)
        return;
    db_put32(q, t->nd);
    uint32_t p = 0;
    for (uint32_t i = 0; i < t->nd; i++) {
        const gdev *d = &t->d[i];
        while (p < t->np && t->p[p].src < d->src)
            p++;
        if (!(q = reserve(b, DB_DEVICE_REC)))
            return;
        db_put32(q, p < t->np && t->p[p].src == d->src ? p : UINT32_MAX);
        db_put32(q + 4, d->api);
        db_put32(q + 8, d->device);
        db_put32(q + 12, d->key);
        db_put32(q + 16, d->type);
        db_put32(q + 20, 0);
        db_put64(q + 24, d->value);
    }
}

gpuprof_status gpuprof__an_metadb_write(const char *dir, const an_tree *t,
                                        const gpuprof__an_meta_traces *tr,
                                        uint64_t ident, unsigned major)
{
    buf b = {0};
    uint64_t ssize;
    const char *sdata = gpuprof__io_strtab_data(t->st, &ssize);
    reserve(&b, DB_HEADER);
    uint8_t *q = reserve(&b, DB_META_COUNTS);
    if (q) {
        db_put32(q, (uint32_t)ssize);
        db_put32(q + 4, 2 * t->nm);
        db_put32(q + 8, t->np);
        db_put32(q + 12, t->nc);
        db_put32(q + 16, tr->damaged);
        db_put32(q + 20, tr->dropped);
        db_put64(q + 24, tr->ignored);
    }
    if ((q = reserve(&b, ssize)))
        memcpy(q, sdata, ssize);
    meta_metrics(&b, t, major);
    meta_profiles(&b, t);
    meta_contexts(&b, t);
    if (major >= 5)
        meta_devices(&b, t);
    if (b.nomem) {
        free(b.d);
        return gpuprof__an_fail(GPUPROF_E_NOMEM, "out of memory");
    }
    gpuprof__an_db_header(
        b.d, DB_META_MAGIC,
        gpuprof__io_crc32c(0, b.d + DB_HEADER, b.n - DB_HEADER),
        b.n - DB_HEADER, t->nc, t->np, ident, major);
    char path[4200], err[256];
    snprintf(path, sizeof(path), "%s/meta.db", dir);
    gpuprof_status st = GPUPROF_OK;
    if (gpuprof__io_write_replace(path, b.d, b.n, false, err, sizeof(err)))
        st = gpuprof__an_fail(GPUPROF_E_IO, "%s: %s", path, err);
    free(b.d);
    return st;
}
