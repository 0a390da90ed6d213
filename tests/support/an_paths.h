/*
 * an_paths.h - what the trace analysis suites share (check_an_cpath*.c):
 * a measurement directory analysed into a database, and a critical path
 * as text to compare with the one computed by hand. Header only; suites
 * linked with the analysis library include it.
 */
#ifndef GPUPROF_TEST_AN_PATHS_H
#define GPUPROF_TEST_AN_PATHS_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gpuprof_analysis.h"

/* Analyses `dir` into `dir`/db, whose path goes to dbdir (the test fails
 * if it cannot). */
static inline void ap_analyze(const char *dir, char *dbdir, size_t size)
{
    gpuprof_an_analysis *a;
    snprintf(dbdir, size, "%s/db", dir);
    ck_assert_int_eq(gpuprof_an_analysis_new(&a), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_add_input(a, dir), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_set_output(a, dbdir), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_an_analysis_run(a), GPUPROF_OK);
    gpuprof_an_analysis_free(a);
}

/* Process 0's path as "name:ns," steps, each name cut at " in " ("<kernel
 * launch> in R" is "<kernel launch>"); with `ranks`, "rank:name:ns," and
 * names whole. */
static inline void ap_path_text(const gpuprof_an_cpath *cp, int ranks,
                                char *out, size_t size)
{
    gpuprof_an_path_step s[64];
    uint64_t n = gpuprof_an_cpath_steps(cp, 0, 0, s, 64);
    size_t at = 0;
    out[0] = '\0';
    for (uint64_t i = 0; i < n && at < size; i++) {
        char name[128];
        gpuprof_an_cpath_step_name(cp, &s[i], name, sizeof(name));
        char *in = ranks ? NULL : strstr(name, " in ");
        if (in)
            *in = '\0';
        if (ranks)
            at += (size_t)snprintf(out + at, size - at, "%d:", s[i].rank);
        if (at < size)
            at += (size_t)snprintf(out + at, size - at, "%s:%llu,", name,
                                   (unsigned long long)s[i].path_ns);
    }
}

#endif /* GPUPROF_TEST_AN_PATHS_H */
