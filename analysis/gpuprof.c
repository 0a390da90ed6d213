/*
 * gpuprof.c - the `gpuprof` command: what a user runs on a measurement.
 *
 *   gpuprof dump FILE     one profile: identity, counters, every thread's tree
 *                         (a .gptrace file: its streams and records)
 *   gpuprof report DIR    the region tree of a whole run, summed over threads
 *                         and processes, then the GPU operations beneath
 *                         regions and call paths
 *   gpuprof report [--view top-down|bottom-up|flat] [--metric NAME]...
 *                  [--derive NAME=FORMULA]... [--importance] [--pc]
 *                  [--sort exclusive] [--depth N] [--threshold PCT]
 *                  [--context ID | --trace] DB
 *                         a view of an analysis database; --context: one
 *                         context's values in every profile; --trace: what
 *                         trace.db holds
 *   gpuprof export --folded [--metric NAME] [--derive NAME=FORMULA]... DB
 *                         folded stacks for flame graphs
 *   gpuprof export --hatchet|--table [--derive NAME=FORMULA]... DB
 *                         JSON for hatchet.GraphFrame.from_literal, or a
 *                         CSV table for pandas.read_csv
 *   gpuprof export --chrome [-o FILE] DIR...
 *                         traces as Chrome Trace Event JSON (Perfetto)
 *   gpuprof analyze [-j N] [--memory SIZE] [--no-structure] [-o DB] DIR...
 *                         aggregate measurement directories (several runs
 *                         merge) into an analysis database (default:
 *                         DIR-database); a progress line on a terminal
 *
 * Built only on the public libgpuprof-analysis API (gpuprof_analysis.h), as
 * a site's own scripts would be. Errors are one line on stderr naming the
 * file and what is wrong; exit status 1 for bad input, 2 for bad usage.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
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
                 "       gpuprof report [--view top-down|bottom-up|flat] "
                 "[--metric NAME]...\n"
                 "                      [--derive NAME=FORMULA]... "
                 "[--importance] [--pc] [--sort exclusive]\n"
                 "                      [--depth N] [--threshold PCT] "
                 "[--context ID | --trace] DB\n"
                 "                             a view of an analysis "
                 "database (--context: one\n"
                 "                             context in every profile; "
                 "--trace: trace.db)\n"
                 "       gpuprof export --folded [--metric NAME] "
                 "[--derive NAME=FORMULA]... DB\n"
                 "                             folded stacks (flame graphs) "
                 "of a database\n"
                 "       gpuprof export --hatchet|--table "
                 "[--derive NAME=FORMULA]... DB\n"
                 "                             JSON for Hatchet, or CSV "
                 "for pandas\n"
                 "       gpuprof export --chrome [-o FILE] DIR...\n"
                 "                             traces (GPUPROF_TRACE=1) as "
                 "JSON for ui.perfetto.dev\n"
                 "       gpuprof analyze [-j N] [--memory SIZE] "
                 "[--no-structure] [-o DB] DIR...\n"
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

/* report/export on a database:
 *   report [--view top-down|bottom-up|flat] [--metric NAME]...
 *          [--derive NAME=FORMULA]... [--sort exclusive] [--depth N]
 *          [--threshold PCT] [--context ID] DB
 *   export --folded [--metric NAME] [--derive NAME=FORMULA]... DB
 *   export --hatchet|--table [--derive NAME=FORMULA]... [--importance] DB
 *   (mode: 0 report, 1 folded, 2 hatchet, 3 table) */
static int db_view(int argc, char **argv, int first, int mode)
{
    int folded = mode != 0; /* an export: the view options do not apply */
    const char *metric[16];
    const char *derive[16];
    uint32_t nmetric = 0, nderive = 0, depth = 0, flags = 0;
    long context = -1;
    int trace = 0, importance = 0, pc = 0;
    gpuprof_an_view view = GPUPROF_AN_VIEW_TOPDOWN;
    double threshold = 1.0;
    int i = first;
    for (; i + 1 < argc && argv[i][0] == '-'; i++) {
        const char *opt = argv[i], *arg = argv[i + 1];
        char *end;
        i++;
        if (!strcmp(opt, "--metric") && nmetric < 14 &&
            (!folded || !nmetric)) {
            metric[nmetric++] = arg;
        } else if (!strcmp(opt, "--derive") && nderive < 16) {
            derive[nderive++] = arg;
        } else if (!strcmp(opt, "--threshold") && !folded) {
            threshold = strtod(arg, &end);
            if (*end || threshold < 0 || threshold > 100) {
                fprintf(stderr, "gpuprof: --threshold wants 0..100\n");
                return 2;
            }
        } else if (!strcmp(opt, "--depth") && !folded) {
            long d = strtol(arg, &end, 10);
            if (*end || d < 0 || d > 100000) {
                fprintf(stderr, "gpuprof: --depth wants 0 (all) or more\n");
                return 2;
            }
            depth = (uint32_t)d;
        } else if (!strcmp(opt, "--context") && !folded) {
            context = strtol(arg, &end, 10);
            if (*end || context < 0) {
                fprintf(stderr, "gpuprof: --context wants a context id\n");
                return 2;
            }
        } else if (!strcmp(opt, "--sort") && !folded) {
            if (strcmp(arg, "exclusive") && strcmp(arg, "inclusive")) {
                fprintf(stderr, "gpuprof: --sort wants inclusive or "
                                "exclusive\n");
                return 2;
            }
            flags = strcmp(arg, "exclusive") ? 0
                                             : GPUPROF_AN_VIEW_SORT_EXCLUSIVE;
        } else if (!strcmp(opt, "--importance")) {
            importance = 1;
            i--; /* no argument */
        } else if (!strcmp(opt, "--pc")) {
            pc = 1;
            i--; /* no argument */
        } else if (!strcmp(opt, "--trace") && !folded) {
            trace = 1;
            i--; /* no argument */
        } else if (!strcmp(opt, "--view") && !folded) {
            if (!strcmp(arg, "top-down"))
                view = GPUPROF_AN_VIEW_TOPDOWN;
            else if (!strcmp(arg, "bottom-up"))
                view = GPUPROF_AN_VIEW_BOTTOMUP;
            else if (!strcmp(arg, "flat"))
                view = GPUPROF_AN_VIEW_FLAT;
            else {
                fprintf(stderr, "gpuprof: --view wants top-down, bottom-up "
                                "or flat\n");
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
    gpuprof_status st = GPUPROF_OK;
    for (uint32_t k = 0; k < nderive && st == GPUPROF_OK; k++) {
        char name[256];
        const char *eq = strchr(derive[k], '=');
        if (!eq || eq == derive[k] ||
            (size_t)(eq - derive[k]) >= sizeof(name)) {
            gpuprof_an_db_close(db);
            fprintf(stderr, "gpuprof: --derive wants NAME=FORMULA\n");
            return 2;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - derive[k]), derive[k]);
        st = gpuprof_an_db_derive(db, name, eq + 1);
    }
    if (st == GPUPROF_OK && importance)
        st = gpuprof_an_db_add_importance(db, 0);
    if (st == GPUPROF_OK && pc)
        st = gpuprof_an_db_add_pc_metrics(db, 0);
    bool named = nmetric > 0;
    if (st == GPUPROF_OK && !nmetric &&
        !(metric[nmetric++] = default_metric(db))) {
        gpuprof_an_db_close(db);
        fprintf(stderr, "gpuprof: %s: no metrics\n", argv[i]);
        return 1;
    }
    /* --importance / --pc without --metric: their metrics beside the
     * default one (--pc: PC samples first). */
    static const char *const imp[] = {"cpu_importance", "gpu_api_importance"};
    for (int k = 0; k < 2 && st == GPUPROF_OK && importance && !named; k++) {
        uint32_t m;
        if (gpuprof_an_db_metric_find(db, imp[k], GPUPROF_AN_INCLUSIVE, &m) ==
            GPUPROF_OK)
            metric[nmetric++] = imp[k];
    }
    if (st == GPUPROF_OK && pc && !named) {
        metric[0] = "gpu.pc.samples";
        static const char *const pcm[] = {"gpu.pc.latency_samples",
                                          "gpu.pc.issue_rate"};
        for (int k = 0; k < 2; k++) {
            uint32_t m;
            if (gpuprof_an_db_metric_find(db, pcm[k], GPUPROF_AN_INCLUSIVE,
                                          &m) == GPUPROF_OK)
                metric[nmetric++] = pcm[k];
        }
    }
    if (st == GPUPROF_OK && mode == 1)
        st = gpuprof_an_db_print_folded(db, stdout, metric[0], 0);
    else if (st == GPUPROF_OK && mode == 2)
        st = gpuprof_an_db_export_hatchet(db, stdout, 0);
    else if (st == GPUPROF_OK && mode == 3)
        st = gpuprof_an_db_export_table(db, stdout, 0);
    else if (st == GPUPROF_OK && trace)
        st = gpuprof_an_db_print_trace(db, stdout, 0);
    else if (st == GPUPROF_OK && context >= 0)
        st = gpuprof_an_db_print_profiles(db, stdout, (uint32_t)context,
                                          metric[0], 0);
    else if (st == GPUPROF_OK)
        st = gpuprof_an_db_print_view(db, stdout, view, metric, nmetric,
                                      threshold / 100, depth, flags);
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

/* "512M", "4G", "65536" (bytes), "100K"; binary multiples. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return false;
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    unsigned shift = u ? 10 * (unsigned)(u - units + 1) : 0;
    end += u != NULL;
    if (*end == 'i' && shift)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

static int analyze(int argc, char **argv)
{
    unsigned threads = 1;
    int structure = 1;
    uint64_t memory = 0;
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
        } else if (!strcmp(argv[i], "--no-structure")) {
            structure = 0;
        } else if (!strcmp(argv[i], "--memory") && i + 1 < argc) {
            if (!parse_size(argv[++i], &memory)) {
                fprintf(stderr, "gpuprof: --memory wants a size such as "
                                "512M or 4G\n");
                return 2;
            }
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
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_memory(a, memory);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_structure(a, structure);
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
        !strcmp(argv[2], "--hatchet"))
        return db_view(argc, argv, 3, 2);
    if (argc >= 4 && !strcmp(argv[1], "export") &&
        !strcmp(argv[2], "--table"))
        return db_view(argc, argv, 3, 3);
    if (argc >= 4 && !strcmp(argv[1], "export") &&
        !strcmp(argv[2], "--chrome"))
        return chrome(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "analyze"))
        return analyze(argc, argv);
    return usage(stderr, 2);
}
