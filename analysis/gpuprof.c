/*
 * gpuprof.c - the `gpuprof` command: what a user runs on a measurement.
 *
 *   gpuprof dump FILE     one profile: identity, counters, every thread's tree
 *                         (a .gptrace file: its streams and records)
 *   gpuprof report DIR    the region tree of a whole run, summed over threads
 *                         and processes, then the GPU operations beneath
 *                         regions and call paths
 *   gpuprof report [--metric NAME] [--threshold PCT] DB
 *                         the top-down view of an analysis database
 *   gpuprof export --folded [--metric NAME] DB
 *                         folded stacks for flame graphs
 *   gpuprof export --chrome [-o FILE] DIR...
 *                         traces as Chrome Trace Event JSON (Perfetto)
 *   gpuprof analyze [-j N] [-o DB] DIR...
 *                         aggregate measurement directories (several runs
 *                         merge) into an analysis database (default:
 *                         DIR-database); a progress line on a terminal
 *
 * Built only on the public libgpuprof-analysis API (gpuprof_analysis.h), as
 * a site's own scripts would be. Errors are one line on stderr naming the
 * file and what is wrong; exit status 1 for bad input, 2 for bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"

static int usage(FILE *out, int rc)
{
    fprintf(out, "usage: gpuprof dump FILE     print one profile as a tree "
                 "(or a .gptrace trace)\n"
                 "       gpuprof report DIR    print the region tree of a "
                 "measurement directory\n"
                 "       gpuprof report [--metric NAME] [--threshold PCT] DB\n"
                 "                             top-down view of an analysis "
                 "database\n"
                 "       gpuprof export --folded [--metric NAME] DB\n"
                 "                             folded stacks (flame graphs) "
                 "of a database\n"
                 "       gpuprof export --chrome [-o FILE] DIR...\n"
                 "                             traces (GPUPROF_TRACE=1) as "
                 "JSON for ui.perfetto.dev\n"
                 "       gpuprof analyze [-j N] [-o DB] DIR...\n"
                 "                             aggregate measurements into "
                 "an analysis database\n"
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

static int is_database(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/meta.db", dir);
    return access(p, F_OK) == 0;
}

/* The metric a database view shows when none is named. */
static const char *default_metric(const gpuprof_an_db *db)
{
    static const char *const pref[] = {"gpu.time", "region.time.excl"};
    uint32_t m;
    for (int i = 0; i < 2; i++)
        if (gpuprof_an_db_metric_find(db, pref[i], GPUPROF_AN_INCLUSIVE, &m) ==
            GPUPROF_OK)
            return pref[i];
    return gpuprof_an_db_metric_count(db) ? gpuprof_an_db_metric_name(db, 0)
                                          : NULL;
}

/* report/export on a database: [--metric NAME] [--threshold PCT] DB. */
static int db_view(int argc, char **argv, int first, int folded)
{
    const char *metric = NULL;
    double threshold = 1.0;
    int i = first;
    for (; i + 1 < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--metric")) {
            metric = argv[++i];
        } else if (!strcmp(argv[i], "--threshold") && !folded) {
            char *end;
            threshold = strtod(argv[++i], &end);
            if (*end || threshold < 0 || threshold > 100) {
                fprintf(stderr, "gpuprof: --threshold wants 0..100\n");
                return 2;
            }
        } else {
            return usage(stderr, 2);
        }
    }
    if (i != argc - 1)
        return usage(stderr, 2);
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(argv[i], &db) != GPUPROF_OK)
        return fail();
    if (!metric && !(metric = default_metric(db))) {
        gpuprof_an_db_close(db);
        fprintf(stderr, "gpuprof: %s: no metrics\n", argv[i]);
        return 1;
    }
    gpuprof_status st =
        folded ? gpuprof_an_db_print_folded(db, stdout, metric, 0)
               : gpuprof_an_db_print_topdown(db, stdout, metric,
                                             threshold / 100, 0);
    gpuprof_an_db_close(db);
    return st == GPUPROF_OK ? 0 : fail();
}

/* export --chrome [-o FILE] DIR...: to FILE (replaced only when the
 * export succeeds) or stdout. */
static int chrome(int argc, char **argv)
{
    const char *path = NULL;
    int i = 3;
    if (i + 1 < argc && !strcmp(argv[i], "-o")) {
        path = argv[i + 1];
        i += 2;
    }
    if (i == argc)
        return usage(stderr, 2);
    char tmp[4200];
    FILE *out = stdout;
    if (path) {
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        if (!(out = fopen(tmp, "w"))) {
            fprintf(stderr, "gpuprof: %s: %s\n", tmp, strerror(errno));
            return 1;
        }
    }
    gpuprof_status st = gpuprof_an_export_chrome(
        (const char *const *)(argv + i), (uint32_t)(argc - i), out, stderr, 0);
    if (path) {
        if (fclose(out) != 0 && st == GPUPROF_OK) {
            fprintf(stderr, "gpuprof: %s: %s\n", tmp, strerror(errno));
            remove(tmp);
            return 1;
        }
        if (st != GPUPROF_OK || rename(tmp, path) != 0) {
            if (st == GPUPROF_OK)
                fprintf(stderr, "gpuprof: %s: %s\n", path, strerror(errno));
            remove(tmp);
            return st == GPUPROF_OK ? 1 : fail();
        }
    }
    return st == GPUPROF_OK ? 0 : fail();
}

static void show_progress(const char *phase, uint64_t done, uint64_t total,
                          void *user)
{
    (void)user;
    fprintf(stderr, "\rgpuprof analyze: %-9s %llu/%llu   ", phase,
            (unsigned long long)done, (unsigned long long)total);
    if (!strcmp(phase, "write") && done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

static int analyze(int argc, char **argv)
{
    unsigned threads = 1;
    const char *out = NULL;
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-j") && i + 1 < argc) {
            char *end;
            long j = strtol(argv[++i], &end, 10);
            if (*end || j < 1 || j > 1024) {
                fprintf(stderr, "gpuprof: -j wants 1..1024\n");
                return 2;
            }
            threads = (unsigned)j;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else {
            return usage(stderr, 2);
        }
    }
    if (i == argc)
        return usage(stderr, 2);
    char def[4200];
    if (!out) {
        size_t n = strlen(argv[i]);
        while (n > 1 && argv[i][n - 1] == '/')
            n--;
        snprintf(def, sizeof(def), "%.*s-database", (int)n, argv[i]);
        out = def;
    }
    gpuprof_an_analysis *a;
    if (gpuprof_an_analysis_new(&a) != GPUPROF_OK)
        return fail();
    gpuprof_status st = gpuprof_an_analysis_set_output(a, out);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_threads(a, threads);
    for (; st == GPUPROF_OK && i < argc; i++)
        st = gpuprof_an_analysis_add_input(a, argv[i]);
    if (st == GPUPROF_OK && isatty(2))
        st = gpuprof_an_analysis_set_progress(a, show_progress, NULL);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    if (st != GPUPROF_OK) {
        if (isatty(2))
            fputc('\n', stderr);
        return fail();
    }
    printf("gpuprof: database written to %s\n", out);
    return 0;
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
    if (argc == 3 && !strcmp(argv[1], "report") && !is_database(argv[2]))
        return report(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "report"))
        return db_view(argc, argv, 2, 0);
    if (argc >= 4 && !strcmp(argv[1], "export") &&
        !strcmp(argv[2], "--folded"))
        return db_view(argc, argv, 3, 1);
    if (argc >= 4 && !strcmp(argv[1], "export") &&
        !strcmp(argv[2], "--chrome"))
        return chrome(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "analyze"))
        return analyze(argc, argv);
    return usage(stderr, 2);
}
