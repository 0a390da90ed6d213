/*
 * suite.h - the one way our white-box Check programs run: a table of test
 * cases (name, test, timeout in seconds), one TCase each, fork mode, the
 * standard summary line, exit status 1 on any failure.
 */
#ifndef GPUPROF_TEST_SUITE_H
#define GPUPROF_TEST_SUITE_H

#include <check.h>
#include <stdlib.h>

typedef struct test_case {
    const char *name;
    const TTest *test;
    int timeout;
} test_case;

static inline int run_suite(const char *name, const test_case *cases, size_t n)
{
    Suite *s = suite_create(name);
    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, cases[i].timeout);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define RUN_SUITE(name, cases)                                                 \
    run_suite((name), (cases), sizeof(cases) / sizeof((cases)[0]))

#endif
