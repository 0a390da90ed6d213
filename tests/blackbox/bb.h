/*
 * bb.h - helpers the black-box suites share. Like the suites, it uses only
 * the public header, the C library and Check, and compiles as C99 and C++.
 * Include it after the suite's feature-test macro and system headers.
 */
#ifndef GPUPROF_TEST_BB_H
#define GPUPROF_TEST_BB_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuprof.h>

/* A counter by name; the test fails if there is no such counter. */
static inline uint64_t stat_of(const char *name)
{
    uint64_t v = 0xdeadbeefu;
    ck_assert_msg(gpuprof_stat_get(name, &v) == GPUPROF_OK, "stat %s", name);
    return v;
}

/* Entries of `dir` matching `pattern`; names starting with '.' (temporary
 * files) are counted in *hidden instead. -1 if the directory is missing. */
static inline int count_in(const char *dir, const char *pattern, int *hidden)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0, h = 0;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (e->d_name[0] == '.')
            h++;
        else if (fnmatch(pattern, e->d_name, 0) == 0)
            n++;
    }
    closedir(d);
    if (hidden)
        *hidden = h;
    return n;
}

static inline void sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Runs a suite in fork mode: the exit status of a suite's main. */
static inline int bb_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
