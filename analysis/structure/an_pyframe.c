/*
 * an_pyframe.c - display names of Python frames.
 *
 * The library stores a Python function's frame (lib/core/pyframes.c) as a
 * CPU frame of a pseudo module named "py:<qualname>:<file>" whose offset
 * is the line. Every place that names CPU frames (gpuprof report on a
 * measurement directory, gpuprof dump, the database's context names and so
 * the views and exports) asks here first and shows "qualname (file:line)",
 * the file by its base name as for native modules; the structure pass
 * leaves these frames as they are (no DWARF to read).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../base/an_internal.h"

bool gpuprof__an_is_pyframe(const char *module)
{
    return module && strncmp(module, "py:", 3) == 0 && strchr(module + 3, ':');
}

bool gpuprof__an_pyframe(const char *module, uint64_t line, char *buf,
                         size_t size)
{
    if (!gpuprof__an_is_pyframe(module))
        return false;
    const char *name = module + 3, *file = strchr(name, ':') + 1;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (line)
        snprintf(buf, size, "%.*s (%s:%" PRIu64 ")", (int)(file - 1 - name),
                 name, base, line);
    else
        snprintf(buf, size, "%.*s (%s)", (int)(file - 1 - name), name, base);
    return true;
}
