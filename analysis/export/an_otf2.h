/*
 * an_otf2.h - the OTF2 export's internals (an_export_otf2.c writes the
 * archive, an_otf2_lib.c finds libotf2 at run time).
 *
 * libotf2 is dlopened, never linked, as libgpuprof loads the vendor
 * runtimes: libgpuprof-analysis and `gpuprof` run where libotf2 is not
 * installed, and only the OTF2 export then says it cannot be done. It is
 * compiled against the installed headers (GPUPROF_HAVE_OTF2, OTF2 3.0 or
 * later, in the build's gen/features.h), and each pointer below has the type of the
 * header's declaration, so every call is type checked as if linked.
 *
 * Critical-path membership: once the critical path is known, every event
 * of the archive carries the attribute "critical_path" (uint8, 1 on the
 * path, 0 off it), and those on it also "critical_path_ns" (uint64: the
 * record's time on the path; a region's is the part of the path spent in
 * it while it was the innermost one); a CPU sample carries
 * "critical_path" alone: 1 when its thread's CPU work at its time is on
 * the path. gpuprof__an_otf2_cpath
 * (an_otf2_cpath.c) is the one place that asks for it: when trace.db holds
 * no dependency notes, or the analysis refuses the trace, both attributes
 * are defined in the archive, no event carries them, and the export says
 * why in its notes.
 */
#ifndef GPUPROF_AN_OTF2_H
#define GPUPROF_AN_OTF2_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gen/features.h" /* GPUPROF_HAVE_OTF2 */
#include "gpuprof_analysis.h"

/* Critical-path membership of trace.db's records: on_path(arg, stream,
 * record, &ns) is 1 when record `record` of trace.db stream `stream` lies
 * on the critical path, its time on the path in ns, else 0 (ns untouched);
 * release(arg) (may be NULL) frees arg. sample_on_path(arg, profile, t)
 * (may be NULL: samples carry no attribute) is 1 when CPU work of thread
 * `profile` at time t (trace.db's clock) lies on the path, else 0. */
typedef struct gpuprof__an_cpath_marks {
    int (*on_path)(void *arg, uint32_t stream, uint64_t record, uint64_t *ns);
    void (*release)(void *arg);
    void *arg;
    int (*sample_on_path)(void *arg, uint32_t profile, uint64_t t);
} gpuprof__an_cpath_marks;

/* The critical path of db's traces as marks; false when it is not computed
 * (then the events carry no critical_path attribute), with the reason in
 * why[size]. */
bool gpuprof__an_otf2_cpath(const gpuprof_an_db *db,
                            gpuprof__an_cpath_marks *out, char *why,
                            size_t size);

/* gpuprof_an_db_export_otf2 with the marks given (NULL: none), so tests
 * can see the attribute written. */
gpuprof_status gpuprof__an_export_otf2(const gpuprof_an_db *db, const char *dir,
                                       FILE *notes,
                                       const gpuprof__an_cpath_marks *marks);

#ifdef GPUPROF_HAVE_OTF2
#include <otf2/otf2.h>

/* The libotf2 entry points the export calls (writer, then the reader
 * that checks what was written). */
#define GPUPROF_AN_OTF2_FUNCS(X)                                               \
    X(OTF2_Archive_Open)                                                       \
    X(OTF2_Archive_Close)                                                      \
    X(OTF2_Archive_SetFlushCallbacks)                                          \
    X(OTF2_Archive_SetSerialCollectiveCallbacks)                               \
    X(OTF2_Archive_SetCreator)                                                 \
    X(OTF2_Archive_SetDescription)                                             \
    X(OTF2_Archive_OpenEvtFiles)                                               \
    X(OTF2_Archive_CloseEvtFiles)                                              \
    X(OTF2_Archive_GetEvtWriter)                                               \
    X(OTF2_Archive_CloseEvtWriter)                                             \
    X(OTF2_Archive_OpenDefFiles)                                               \
    X(OTF2_Archive_CloseDefFiles)                                              \
    X(OTF2_Archive_GetDefWriter)                                               \
    X(OTF2_Archive_CloseDefWriter)                                             \
    X(OTF2_Archive_GetGlobalDefWriter)                                         \
    X(OTF2_Archive_CloseGlobalDefWriter)                                       \
    X(OTF2_EvtWriter_Enter)                                                    \
    X(OTF2_EvtWriter_Leave)                                                    \
    X(OTF2_EvtWriter_CallingContextSample)                                     \
    X(OTF2_AttributeList_New)                                                  \
    X(OTF2_AttributeList_Delete)                                               \
    X(OTF2_AttributeList_AddUint8)                                             \
    X(OTF2_AttributeList_AddUint64)                                            \
    X(OTF2_GlobalDefWriter_WriteClockProperties)                               \
    X(OTF2_GlobalDefWriter_WriteString)                                        \
    X(OTF2_GlobalDefWriter_WriteAttribute)                                     \
    X(OTF2_GlobalDefWriter_WriteSystemTreeNode)                                \
    X(OTF2_GlobalDefWriter_WriteLocationGroup)                                 \
    X(OTF2_GlobalDefWriter_WriteLocation)                                      \
    X(OTF2_GlobalDefWriter_WriteRegion)                                        \
    X(OTF2_GlobalDefWriter_WriteCallingContext)                                \
    X(OTF2_GlobalDefWriter_WriteInterruptGenerator)                            \
    X(OTF2_Error_GetDescription)                                               \
    X(OTF2_Error_RegisterCallback)                                             \
    X(OTF2_Reader_Open)                                                        \
    X(OTF2_Reader_Close)                                                       \
    X(OTF2_Reader_SetSerialCollectiveCallbacks)                                \
    X(OTF2_Reader_GetNumberOfLocations)                                        \
    X(OTF2_Reader_GetNumberOfGlobalDefinitions)                                \
    X(OTF2_Reader_GetGlobalDefReader)                                          \
    X(OTF2_Reader_ReadAllGlobalDefinitions)                                    \
    X(OTF2_Reader_CloseGlobalDefReader)                                        \
    X(OTF2_Reader_SelectLocation)                                              \
    X(OTF2_Reader_OpenDefFiles)                                                \
    X(OTF2_Reader_OpenEvtFiles)                                                \
    X(OTF2_Reader_CloseDefFiles)                                               \
    X(OTF2_Reader_CloseEvtFiles)                                               \
    X(OTF2_Reader_GetDefReader)                                                \
    X(OTF2_Reader_GetEvtReader)                                                \
    X(OTF2_Reader_ReadAllLocalDefinitions)                                     \
    X(OTF2_Reader_ReadAllLocalEvents)                                          \
    X(OTF2_Reader_CloseDefReader)                                              \
    X(OTF2_Reader_CloseEvtReader)

typedef struct gpuprof__an_otf2_lib {
#define GPUPROF_AN_OTF2_PTR(f) __typeof__(f) *f;
    GPUPROF_AN_OTF2_FUNCS(GPUPROF_AN_OTF2_PTR)
#undef GPUPROF_AN_OTF2_PTR
} gpuprof__an_otf2_lib;

/* libotf2, loaded at first use (any thread); NULL when it cannot be, the
 * error recorded (gpuprof_an_last_error) says why. Its own error messages
 * never reach stderr: the calling thread's last one is kept for
 * gpuprof__an_otf2_lib_message. */
const gpuprof__an_otf2_lib *gpuprof__an_otf2_lib_get(void);
/* libotf2's last error message on this thread ("" when none). */
const char *gpuprof__an_otf2_lib_message(void);
#endif

#endif /* GPUPROF_AN_OTF2_H */
