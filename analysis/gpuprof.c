/*
 * gpuprof.c - the `gpuprof` command: what a user runs on a measurement.
 *
 *   gpuprof dump FILE     one profile: identity, counters, every thread's tree
 *                         (a .gptrace file: its streams and records)
 *   gpuprof report DIR    the region tree of a whole run, summed over threads
 *                         and processes, then the GPU operations beneath
 *                         regions and call paths
 *
 * Built only on the public libgpuprof-analysis API (gpuprof_analysis.h), as
 * a site's own scripts would be. Errors are one line on stderr naming the
 * file and what is wrong; exit status 1 for bad input, 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "gpuprof_analysis.h"

static int usage(FILE *out, int rc)
{
    fprintf(out, "usage: gpuprof dump FILE     print one profile as a tree "
                 "(or a .gptrace trace)\n"
                 "       gpuprof report DIR    print the region tree of a "
                 "measurement directory\n"
                 "       gpuprof --version\n");
    return rc;
}

static int fail(void)
{
    fprintf(stderr, "gpuprof: %s\n", gpuprof_an_last_error());
    return 1;
}

static int dump(const char *path)
{
    size_t n = strlen(path);
    if (n > 8 && !strcmp(path + n - 8, ".gptrace"))
        return gpuprof_an_trace_print(path, stdout, 0) == GPUPROF_OK ? 0
                                                                     : fail();
    gpuprof_an_profile *p;
    if (gpuprof_an_profile_open(path, &p) != GPUPROF_OK)
        return fail();
    gpuprof_status st = gpuprof_an_profile_print(p, stdout, 0);
    gpuprof_an_profile_close(p);
    return st == GPUPROF_OK ? 0 : fail();
}

static int report(const char *dir)
{
    gpuprof_an_report *r;
    if (gpuprof_an_report_open(dir, &r) != GPUPROF_OK)
        return fail();
    printf("gpuprof report %s\n", dir);
    gpuprof_status st = gpuprof_an_report_print(r, stdout, 0);
    gpuprof_an_report_close(r);
    if (st == GPUPROF_OK) /* GPU operations beneath their call paths */
        st = gpuprof_an_gpu_print(dir, stdout, 0);
    return st == GPUPROF_OK ? 0 : fail();
}

int main(int argc, char **argv)
{
    if (argc == 2 &&
        (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("gpuprof %s\n", GPUPROF_VERSION_STRING);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
                      !strcmp(argv[1], "-h")))
        return usage(stdout, 0);
    if (argc == 3 && !strcmp(argv[1], "dump"))
        return dump(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "report"))
        return report(argv[2]);
    return usage(stderr, 2);
}
