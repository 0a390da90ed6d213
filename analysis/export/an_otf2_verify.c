/*
 * an_otf2_verify.c - an OTF2 export read back before it is renamed into
 * place (an_export_otf2.c). libotf2 does not report every failed write:
 * the anchor file, for one, is flushed when closed and a full disk there
 * goes unsaid (tests/scripts/export-otf2-disk-full.sh found an empty
 * traces.otf2 in an export that "succeeded"). So the archive is opened
 * with libotf2's own reader, as Vampir would, and must give back the
 * locations, the global definitions and, per location, the number of
 * events written; anything less fails the export, which then leaves
 * nothing. The reader decodes without callbacks, one location at a time;
 * bench_otf2's figure includes it.
 */
#include <stdio.h>

#include "an_otf2_write.h"

#ifdef GPUPROF_HAVE_OTF2
static gpuprof_status short_archive(const char *what, uint64_t got,
                                    uint64_t want)
{
    const char *msg = gpuprof__an_otf2_lib_message();
    return gpuprof__an_fail(GPUPROF_E_IO,
                            "OTF2 export: the archive does not "
                            "read back whole (%s: %llu of %llu; a full "
                            "disk?)%s%s",
                            what, (unsigned long long)got,
                            (unsigned long long)want, *msg ? ": " : "", msg);
}

static gpuprof_status global_part(const gpuprof__an_ox *x, OTF2_Reader *r)
{
    const gpuprof__an_otf2_lib *L = x->L;
    uint64_t nloc = 0, ndef = 0, got = 0;
    if (L->OTF2_Reader_GetNumberOfLocations(r, &nloc) != OTF2_SUCCESS ||
        nloc != x->nlocs)
        return short_archive("locations", nloc, x->nlocs);
    if (L->OTF2_Reader_GetNumberOfGlobalDefinitions(r, &ndef) != OTF2_SUCCESS ||
        ndef != x->ndefs)
        return short_archive("definitions", ndef, x->ndefs);
    OTF2_GlobalDefReader *g = L->OTF2_Reader_GetGlobalDefReader(r);
    OTF2_ErrorCode rc = g ? L->OTF2_Reader_ReadAllGlobalDefinitions(r, g, &got)
                          : OTF2_ERROR_FILE_INTERACTION;
    if (g)
        L->OTF2_Reader_CloseGlobalDefReader(r, g);
    return rc == OTF2_SUCCESS && got == ndef
               ? GPUPROF_OK
               : short_archive("definitions read", got, ndef);
}

/* Location i's local definitions and events. */
static gpuprof_status location_part(const gpuprof__an_ox *x, OTF2_Reader *r,
                                    uint32_t i)
{
    const gpuprof__an_otf2_lib *L = x->L;
    uint64_t got = 0;
    OTF2_DefReader *d = L->OTF2_Reader_GetDefReader(r, i);
    OTF2_ErrorCode rc = d ? L->OTF2_Reader_ReadAllLocalDefinitions(r, d, &got)
                          : OTF2_ERROR_FILE_INTERACTION;
    if (d)
        L->OTF2_Reader_CloseDefReader(r, d);
    if (rc != OTF2_SUCCESS)
        return short_archive("a location's definitions", 0, 1);
    got = 0;
    OTF2_EvtReader *e = L->OTF2_Reader_GetEvtReader(r, i);
    rc = e ? L->OTF2_Reader_ReadAllLocalEvents(r, e, &got)
           : OTF2_ERROR_FILE_INTERACTION;
    if (e)
        L->OTF2_Reader_CloseEvtReader(r, e);
    return rc == OTF2_SUCCESS && got == x->locs[i].events
               ? GPUPROF_OK
               : short_archive("a location's events", got, x->locs[i].events);
}

gpuprof_status gpuprof__an_ox_verify(const gpuprof__an_ox *x, const char *path)
{
    const gpuprof__an_otf2_lib *L = x->L;
    char anchor[4400];
    snprintf(anchor, sizeof(anchor), "%s/traces.otf2", path);
    OTF2_Reader *r = L->OTF2_Reader_Open(anchor);
    if (!r)
        return short_archive("the anchor file", 0, 1);
    gpuprof_status st = GPUPROF_OK;
    if (L->OTF2_Reader_SetSerialCollectiveCallbacks(r) != OTF2_SUCCESS)
        st = short_archive("the anchor file", 0, 1);
    if (st == GPUPROF_OK)
        st = global_part(x, r);
    for (uint32_t i = 0; i < x->nlocs && st == GPUPROF_OK; i++)
        if (L->OTF2_Reader_SelectLocation(r, i) != OTF2_SUCCESS)
            st = short_archive("locations", i, x->nlocs);
    bool files = st == GPUPROF_OK &&
                 L->OTF2_Reader_OpenDefFiles(r) == OTF2_SUCCESS &&
                 L->OTF2_Reader_OpenEvtFiles(r) == OTF2_SUCCESS;
    if (st == GPUPROF_OK && !files)
        st = short_archive("the location files", 0, x->nlocs);
    for (uint32_t i = 0; i < x->nlocs && st == GPUPROF_OK; i++)
        st = location_part(x, r, i);
    if (files) {
        L->OTF2_Reader_CloseEvtFiles(r);
        L->OTF2_Reader_CloseDefFiles(r);
    }
    L->OTF2_Reader_Close(r);
    return st;
}
#endif /* GPUPROF_HAVE_OTF2 */
