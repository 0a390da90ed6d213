/*
 * an_dbdev.c - the devices of a format 5 database (include/
 * gpuprof_analysis.h, "Devices"): meta.db holds each input file's device
 * attributes as its backends described them (profile section DEVICES),
 * one record per attribute, the records of one device together. A device
 * is a run of records with one (process, api, device number); nothing is
 * indexed: databases hold a few devices per process, and these calls are
 * made once per report.
 */
#include <string.h>

#include "../base/an_internal.h"
#include "an_db.h"

#define REC(i) (recs + (size_t)(i) * DB_DEVICE_REC)

/* Whether records a and b belong to one device. */
static bool same_device(const uint8_t *a, const uint8_t *b)
{
    return db_get32(a) == db_get32(b) && db_get32(a + 4) == db_get32(b + 4) &&
           db_get32(a + 8) == db_get32(b + 8);
}

/* Device d's records: [*first, *end); false when there is no device d. */
static bool device_run(const gpuprof_an_db *db, uint32_t d, uint32_t *first,
                       uint32_t *end)
{
    uint32_t n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    uint32_t i = 0;
    for (uint32_t k = 0; i < n; k++) {
        uint32_t j = i + 1;
        while (j < n && same_device(REC(i), REC(j)))
            j++;
        if (k == d) {
            *first = i;
            *end = j;
            return true;
        }
        i = j;
    }
    return false;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_device_count(const gpuprof_an_db *db)
{
    uint32_t n, count = 0;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    for (uint32_t i = 0; i < n; i++)
        count += !i || !same_device(REC(i - 1), REC(i));
    return count;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_device_profile(const gpuprof_an_db *db,
                                                     uint32_t d)
{
    uint32_t a, b, n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    return device_run(db, d, &a, &b) ? db_get32(REC(a)) : UINT32_MAX;
}

GPUPROF_AN_API const char *gpuprof_an_db_device_api(const gpuprof_an_db *db,
                                                    uint32_t d)
{
    uint32_t a, b, n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    return device_run(db, d, &a, &b) ? gpuprof__an_db_str(db, db_get32(REC(a) + 4))
                                     : NULL;
}

GPUPROF_AN_API uint32_t gpuprof_an_db_device_number(const gpuprof_an_db *db,
                                                    uint32_t d)
{
    uint32_t a, b, n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    return device_run(db, d, &a, &b) ? db_get32(REC(a) + 8) : UINT32_MAX;
}

GPUPROF_AN_API const char *gpuprof_an_db_device_key(const gpuprof_an_db *db,
                                                    uint32_t d, uint32_t i)
{
    uint32_t a, b, n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    if (!device_run(db, d, &a, &b) || i >= b - a)
        return NULL;
    return gpuprof__an_db_str(db, db_get32(REC(a + i) + 12));
}

GPUPROF_AN_API int gpuprof_an_db_device_attr(const gpuprof_an_db *db,
                                             uint32_t d, const char *key,
                                             uint64_t *value,
                                             const char **text)
{
    uint32_t a, b, n;
    const uint8_t *recs = gpuprof__an_db_devattrs(db, &n);
    if (!key || !device_run(db, d, &a, &b))
        return 0;
    for (uint32_t i = a; i < b; i++) {
        const uint8_t *r = REC(i);
        if (strcmp(gpuprof__an_db_str(db, db_get32(r + 12)), key))
            continue;
        bool str = db_get32(r + 16) == GPUPROF_IO_ATTR_STR;
        if (value)
            *value = str ? 0 : db_get64(r + 24);
        if (text)
            *text = str ? gpuprof__an_db_str(db, db_get64(r + 24)) : NULL;
        return 1;
    }
    return 0;
}
