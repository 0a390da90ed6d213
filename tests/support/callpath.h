/*
 * callpath.h - the Hatchet export's frames in tests: every frame carries a
 * "callpath" (an_export_hatchet.c), a hash that makes it unique in the
 * tree; tests that compare an export with text written by hand take them
 * out first, checking what they promise.
 */
#ifndef GPUPROF_TEST_CALLPATH_H
#define GPUPROF_TEST_CALLPATH_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int callpath_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

/* Removes every frame's "callpath" from an export, checking that each is
 * 16 hex digits and that no two are the same (Hatchet's literal reader
 * takes two equal frames anywhere in the tree for one node). Returns how
 * many there were. One pass, then a sort: exports of 20,000-deep trees. */
static inline uint32_t strip_callpaths(char *json)
{
    static const char key[] = ", \"callpath\": \"";
    size_t kl = strlen(key), n = 0, cap = 0;
    char (*seen)[16] = NULL;
    char *to = json;
    const char *bad = NULL; /* checked after the loop: a Check assertion
                               costs a write to its pipe */
    for (const char *from = json; *from;) {
        const char *at = strstr(from, key);
        size_t keep = at ? (size_t)(at - from) : strlen(from);
        memmove(to, from, keep);
        to += keep;
        if (!at)
            break;
        const char *v = at + kl;
        if (strspn(v, "0123456789abcdef") != 16 || v[16] != '"') {
            bad = v;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            seen = realloc(seen, cap * sizeof(*seen));
            ck_assert_ptr_nonnull(seen);
        }
        memcpy(seen[n++], v, 16);
        from = v + 17;
    }
    ck_assert_msg(!bad, "callpath %.20s", bad ? bad : "");
    *to = '\0';
    if (n)
        qsort(seen, n, sizeof(*seen), callpath_cmp);
    size_t twice = 0;
    for (size_t i = 1; i < n && !twice; i++)
        if (!memcmp(seen[i - 1], seen[i], 16))
            twice = i;
    ck_assert_msg(!twice, "callpath %.16s twice", twice ? seen[twice] : "");
    free(seen);
    return (uint32_t)n;
}

#endif
