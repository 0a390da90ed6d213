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
 *   gpuprof export --folded [--metric NAME] [--derive NAME=FORMULA]...
 *                  [--importance] [-o FILE] DB
 *                         folded stacks for flame graphs
 *   gpuprof export --hatchet [--metric NAME]... [--stats] | --table [--long]
 *                  [--derive NAME=FORMULA]...
 *                  [--importance] [-o FILE] DB
 *                         JSON for hatchet.GraphFrame.from_literal, or a
 *                         CSV table for pandas.read_csv (every metric)
 *   gpuprof export --chrome [-o FILE] DIR...
 *                         traces as Chrome Trace Event JSON (Perfetto)
 *   gpuprof report --waits|--critical-path DB
 *                         wait states and their blame, or the critical path
 *                         (one line per activity, its name and share) of
 *                         trace.db (GPUPROF_TRACE=1); --cpath-metrics adds
 *                         their metrics (wait.time, wait.blame,
 *                         gpu.idle_blame, cpath.time) to any view or export
 *   gpuprof project --speedup KIND:NAME=F [--speedup ...]... DB
 *                         the run replayed with kernels, regions or
 *                         contexts F times faster: projected run time and
 *                         the new critical path
 *   gpuprof export --otf2 -o DIR DB
 *                         trace.db as an OTF2 archive (Vampir): DIR/traces.otf2
 *   gpuprof analyze [-j N] [--memory SIZE] [--no-structure] [--strict]
 *                   [-v] [-o DB] DIR...
 *                         aggregate measurement directories (several runs
 *                         merge) into an analysis database (default:
 *                         DIR-database); a progress line on a terminal;
 *                         within a memory budget (default: a quarter of
 *                         the memory available; --memory 0: none; -v
 *                         says it);
 *                         a damaged trace is used up to the damage, with
 *                         a warning (--strict: refused).
 *                         Started by mpirun on several ranks, it runs
 *                         gpuprof-mpi beside it, which divides the work.
 *   gpuprof run [-o DIR] [--trace] [--mpi] [--backends LIST] [--pc-sampling[=N]]
 *               [--follow-children] [--] PROGRAM [ARGS...]
 *                         measure a program that never calls libgpuprof
 *                         (an_run.h): it is exec'd with the preload library
 *
 *   gpuprof help [COMMAND], gpuprof COMMAND --help, gpuprof --version
 *
 * Built only on the public libgpuprof-analysis API (gpuprof_analysis.h), as
 * a site's own scripts would be. Errors are one line on stderr naming the
 * file and what is wrong (a measurement directory given for a database,
 * or the reverse, is named as such); exit status 1 for input that cannot
 * be used or answers nothing, 2 for bad usage: one line saying what is
 * wrong (an option that means nothing where it is given is named), then
 * "try 'gpuprof CMD --help'" (an_help.h). An export with -o FILE replaces
 * FILE only once it is complete.
 */
#define _GNU_SOURCE /* sched_getaffinity (an_cli.h) */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_cli.h"
#include "an_help.h"
#include "an_run.h"
#include "gpuprof_analysis.h"

static int fail(void)
{
    fprintf(stderr, "gpuprof: %s\n", gpuprof_an_last_error());
    return 1;
}

static int is_database(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/meta.db", dir);
    return access(p, F_OK) == 0;
}

static int dump(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "gpuprof: %s is %s; dump reads one profile (.gpuprof) "
                "or trace (.gptrace) file ('gpuprof report %s' shows %s)\n",
                path, is_database(path) ? "an analysis database" : "a directory",
                path, is_database(path) ? "a database" : "a whole run");
        return 1;
    }
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

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* report [--threshold PCT] [--runtime-frames] DIR (options anywhere) */
static int report(int argc, char **argv)
{
    double threshold = 100 * GPUPROF_AN_REPORT_THRESHOLD;
    uint32_t flags = 0;
    const char *dir = NULL;
    for (int i = 2; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--runtime-frames")) {
            flags |= GPUPROF_AN_RUNTIME_FRAMES;
        } else if (!strcmp(argv[i], "--threshold") && i + 1 < argc) {
            threshold = strtod(argv[++i], &end);
            if (*end || !(threshold >= 0 && threshold <= 100))
                return usage_error("--threshold wants 0..100");
        } else if (argv[i][0] == '-' || dir) {
            return usage_error("report: %s: a measurement directory's report "
                               "takes --threshold PCT and --runtime-frames",
                               argv[i]);
        } else {
            dir = argv[i];
        }
    }
    if (!dir)
        return usage_error("report wants a measurement directory or a "
                           "database");
    gpuprof_an_report *r;
    if (gpuprof_an_report_open(dir, &r) != GPUPROF_OK)
        return fail();
    printf("gpuprof report %s\n", dir);
    gpuprof_status st = gpuprof_an_report_print(r, stdout, 0);
    gpuprof_an_report_close(r);
    if (st == GPUPROF_OK) /* GPU operations beneath their call paths */
        st = gpuprof_an_gpu_print_ex(dir, stdout, threshold / 100, flags);
    return st == GPUPROF_OK ? 0 : fail();
}

/* Whether an argument after the command is a database (else a report is
 * of a measurement directory). */
static int any_database(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (argv[i][0] != '-' && is_database(argv[i]))
            return 1;
    return 0;
}

/* Whether report's arguments are those of a measurement directory's report
 * (one directory, --threshold PCT, --runtime-frames); any other option is a
 * database view's, whose errors then say what the directory is. */
static int dir_report_args(int argc, char **argv)
{
    int dirs = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--threshold"))
            i++;
        else if (!strcmp(argv[i], "--runtime-frames"))
            continue;
        else if (argv[i][0] == '-')
            return 0;
        else
            dirs++;
    }
    return dirs == 1;
}

/* The metric a database view shows when none is named: GPU time, else
 * region time, else the first metric, taking the first of them that has
 * data (a non-zero inclusive sum at the root); a database without any
 * data gets the first of them it has. */
static const char *default_metric(const gpuprof_an_db *db)
{
    static const char *const pref[] = {"gpu.time", "region.time.excl"};
    const char *first = NULL;
    uint32_t m, n = gpuprof_an_db_metric_count(db);
    for (uint32_t i = 0; i < 2 + n; i++) {
        const char *name = i < 2 ? pref[i] : gpuprof_an_db_metric_name(db, i - 2);
        if (gpuprof_an_db_metric_find(db, name, GPUPROF_AN_INCLUSIVE, &m) !=
            GPUPROF_OK)
            continue;
        first = first ? first : name;
        if (gpuprof_an_db_stat(db, 0, m, GPUPROF_AN_STAT_SUM) != 0)
            return name;
    }
    return first;
}

/* ---- output files ----------------------------------------------------------
 * -o FILE: the export is written to a temporary beside FILE (".NAME.XXXXXX"
 * in FILE's directory, so the rename is atomic) and renamed over FILE only
 * when all of it was written; otherwise the temporary is removed. FILE is
 * never half written, and a failed export leaves an existing FILE as it
 * was. Without -o: stdout. */
typedef struct output {
    const char *path; /* NULL: stdout */
    char tmp[4200];
    FILE *f;
} output;

static bool out_open(output *o, const char *path)
{
    o->path = path;
    o->f = stdout;
    if (!path)
        return true;
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.XXXXXX", dir, path,
                 path + dir) >= (int)sizeof(o->tmp)) {
        fprintf(stderr, "gpuprof: %s: name too long\n", path);
        return false;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fprintf(stderr, "gpuprof: %s: %s\n", path, strerror(errno));
        return false;
    }
    mode_t mask = umask(0); /* mkstemp makes 0600: the mode open gives */
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        fprintf(stderr, "gpuprof: %s: %s\n", o->tmp, strerror(errno));
        close(fd);
        remove(o->tmp);
        return false;
    }
    return true;
}

/* Ends the output of a command whose exit status so far is rc (0: the
 * export succeeded): FILE replaced, or the temporary removed. Returns the
 * exit status, 1 when writing failed. */
static int out_close(output *o, int rc)
{
    const char *name = o->path ? o->path : "stdout";
    bool ok = rc == 0;
    if ((o->path ? fclose(o->f) : fflush(o->f)) != 0 && ok) {
        fprintf(stderr, "gpuprof: %s: %s\n", name, strerror(errno));
        ok = false;
    }
    if (o->path && ok && rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "gpuprof: %s: %s\n", o->path, strerror(errno));
        ok = false;
    }
    if (o->path && !ok)
        remove(o->tmp);
    return ok ? 0 : rc ? rc : 1;
}

/* ---- report/export on a database --------------------------------------------
 *   report [--view top-down|bottom-up|flat] [--metric NAME]...
 *          [--derive NAME=FORMULA]... [--importance] [--pc] [--sort exclusive]
 *          [--depth N] [--threshold PCT] [--context ID | --trace] DB
 *   export --folded [--metric NAME] [--derive NAME=FORMULA]...
 *          [--importance] [-o FILE] DB
 *   export --hatchet|--table [--derive NAME=FORMULA]... [--importance]
 *          [-o FILE] DB
 * An option that means nothing where it is given is refused, naming it. */
enum { M_REPORT, M_FOLDED, M_HATCHET, M_TABLE };
static const char *const mode_name[] = {"report", "export --folded",
                                        "export --hatchet", "export --table"};

typedef struct vopts {
    const char *metric[16];
    const char *derive[16];
    uint32_t nmetric, nderive, depth, flags;
    long context;
    int trace, importance, pc, long_form, stats;
    uint32_t runtime; /* --runtime-frames: GPUPROF_AN_RUNTIME_FRAMES */
    int waits, cpath, cpath_metrics; /* trace analysis (analysis/cpath) */
    gpuprof_an_view view;
    double threshold;
    const char *out;       /* -o */
    const char *view_only; /* the first option only a report takes */
} vopts;

/* The options of views and exports that take a value. */
static const char *const view_with_arg[] = {
    "--metric", "--derive", "-o",   "--threshold", "--depth",
    "--context", "--sort",  "--view", NULL};

/* One option at argv[*i] (its argument after it); 2 on bad usage. */
static int view_option(vopts *o, char **argv, int *i)
{
    const char *opt = argv[*i], *arg = argv[*i + 1];
    char *end;
    if (!strcmp(opt, "--importance")) {
        o->importance = 1;
        return 0; /* no argument */
    }
    if (!strcmp(opt, "--pc")) {
        o->pc = 1;
        return 0; /* no argument */
    }
    if (!strcmp(opt, "--long")) {
        o->long_form = 1;
        return 0; /* no argument */
    }
    if (!strcmp(opt, "--stats")) {
        o->stats = 1;
        return 0; /* no argument */
    }
    if (!strcmp(opt, "--runtime-frames")) {
        o->runtime = GPUPROF_AN_RUNTIME_FRAMES;
        return 0; /* no argument */
    }
    if (!strcmp(opt, "--trace")) {
        o->trace = 1;
        o->view_only = o->view_only ? o->view_only : opt;
        return 0;
    }
    if (!strcmp(opt, "--waits") || !strcmp(opt, "--critical-path")) {
        *(opt[2] == 'w' ? &o->waits : &o->cpath) = 1;
        o->view_only = o->view_only ? o->view_only : opt;
        return 0;
    }
    if (!strcmp(opt, "--cpath-metrics")) {
        o->cpath_metrics = 1;
        return 0;
    }
    bool known = false;
    for (const char *const *a = view_with_arg; *a && !known; a++)
        known = !strcmp(opt, *a);
    if (!known)
        return usage_error("unknown option %s", opt);
    if (!arg)
        return usage_error("%s wants a value", opt);
    ++*i;
    if (!strcmp(opt, "--metric")) {
        if (o->nmetric == 14)
            return usage_error("at most 14 %ss", opt);
        o->metric[o->nmetric++] = arg;
        return 0;
    }
    if (!strcmp(opt, "--derive")) {
        if (o->nderive == 16)
            return usage_error("at most 16 %ss", opt);
        o->derive[o->nderive++] = arg;
        return 0;
    }
    if (!strcmp(opt, "-o")) {
        o->out = arg;
        return 0;
    }
    if (!o->view_only)
        o->view_only = opt;
    if (!strcmp(opt, "--threshold")) {
        o->threshold = strtod(arg, &end);
        if (*end || o->threshold < 0 || o->threshold > 100)
            return usage_error("%s wants 0..100", opt);
    } else if (!strcmp(opt, "--depth")) {
        long d = strtol(arg, &end, 10);
        if (*end || d < 0 || d > 100000)
            return usage_error("%s wants 0 (all) or more", opt);
        o->depth = (uint32_t)d;
    } else if (!strcmp(opt, "--context")) {
        o->context = strtol(arg, &end, 10);
        if (*end || o->context < 0)
            return usage_error("%s wants a context id", opt);
    } else if (!strcmp(opt, "--sort")) {
        if (strcmp(arg, "exclusive") && strcmp(arg, "inclusive"))
            return usage_error("%s wants inclusive or exclusive", opt);
        o->flags =
            strcmp(arg, "exclusive") ? 0 : GPUPROF_AN_VIEW_SORT_EXCLUSIVE;
    } else if (!strcmp(opt, "--view")) {
        if (!strcmp(arg, "top-down"))
            o->view = GPUPROF_AN_VIEW_TOPDOWN;
        else if (!strcmp(arg, "bottom-up"))
            o->view = GPUPROF_AN_VIEW_BOTTOMUP;
        else if (!strcmp(arg, "flat"))
            o->view = GPUPROF_AN_VIEW_FLAT;
        else
            return usage_error("%s wants top-down, bottom-up or flat", opt);
    }
    return 0;
}

/* The options that mean nothing in this mode, refused by name. */
static int view_check(const vopts *o, int mode)
{
    const char *m = mode_name[mode];
    if (mode != M_REPORT && o->view_only)
        return usage_error("%s: %s is an option of report views; it has no "
                           "meaning here",
                           m, o->view_only);
    if (mode != M_TABLE && o->long_form)
        return usage_error("%s: --long is an option of export --table", m);
    if (mode == M_REPORT && o->out)
        return usage_error("report: -o is an option of export; a report "
                           "goes to stdout");
    if (mode != M_HATCHET && o->stats)
        return usage_error("%s: --stats is an option of export --hatchet", m);
    if (mode == M_TABLE && o->nmetric)
        return usage_error("%s writes every metric: --metric has no meaning "
                           "here (--derive adds one)",
                           m);
    if (mode == M_FOLDED && o->nmetric > 1)
        return usage_error("%s writes one metric: give --metric once", m);
    if (o->trace && o->nmetric)
        return usage_error("report --trace lists trace.db's streams: "
                           "--metric has no meaning there");
    if (o->trace && o->context >= 0)
        return usage_error("report: --trace and --context exclude each "
                           "other");
    if (o->context >= 0 && o->nmetric > 1)
        return usage_error("report --context shows one metric: give "
                           "--metric once");
    if ((o->waits || o->cpath) && (o->trace || o->context >= 0 ||
                                   o->nmetric || o->waits + o->cpath > 1))
        return usage_error("report --waits and --critical-path stand alone: "
                           "no --trace, --context, --metric or each other");
    return 0;
}

/* The trace analysis for --waits, --critical-path and --cpath-metrics
 * (a progress line on a terminal); NULL with the error recorded. */
static gpuprof_an_cpath *cpath_of(gpuprof_an_db *db, gpuprof_status *st)
{
    gpuprof_an_cpath *cp = NULL;
    *st = gpuprof_an_cpath_new(db, isatty(2) ? cli_show_progress : NULL,
                               (void *)"gpuprof", &cp);
    if (isatty(2))
        fputc('\n', stderr);
    return cp;
}

/* --derive NAME=FORMULA..., --importance and --pc on an open database. */
static int view_derive(gpuprof_an_db *db, const vopts *o, gpuprof_status *st)
{
    for (uint32_t k = 0; k < o->nderive && *st == GPUPROF_OK; k++) {
        char name[256];
        const char *eq = strchr(o->derive[k], '=');
        if (!eq || eq == o->derive[k] ||
            (size_t)(eq - o->derive[k]) >= sizeof(name))
            return usage_error("--derive wants NAME=FORMULA");
        snprintf(name, sizeof(name), "%.*s", (int)(eq - o->derive[k]),
                 o->derive[k]);
        *st = gpuprof_an_db_derive(db, name, eq + 1);
    }
    if (*st == GPUPROF_OK && o->importance)
        *st = gpuprof_an_db_add_importance(db, 0);
    if (*st == GPUPROF_OK && o->pc)
        *st = gpuprof_an_db_add_pc_metrics(db, 0);
    return 0;
}

/* Frees the analysis when its report is done (or never made). */
static gpuprof_status cpath_report(gpuprof_an_cpath *cp, const vopts *o,
                                   FILE *out)
{
    gpuprof_status st = o->waits ? gpuprof_an_cpath_print_waits(cp, out, 0)
                                 : gpuprof_an_cpath_print_path(cp, out, 0);
    gpuprof_an_cpath_free(cp);
    return st;
}

static int db_view(int argc, char **argv, int first, int mode)
{
    vopts o = {
        .context = -1, .view = GPUPROF_AN_VIEW_TOPDOWN, .threshold = 1.0};
    cli_permute(argc, argv, first, view_with_arg);
    int i = first, rc;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if ((rc = view_option(&o, argv, &i)) != 0)
            return rc;
    }
    if (i == argc)
        return usage_error("%s wants an analysis database (gpuprof analyze "
                           "-o DB DIR makes one)", mode_name[mode]);
    if (i != argc - 1 && argv[argc - 1][0] == '-') /* left by cli_permute */
        return usage_error("%s wants a value", argv[argc - 1]);
    if (i != argc - 1)
        return usage_error("%s takes one database: %s is one too many",
                           mode_name[mode], argv[i + 1]);
    if ((rc = view_check(&o, mode)) != 0)
        return rc;
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(argv[i], &db) != GPUPROF_OK)
        return fail();
    uint32_t damaged, left_out;
    uint64_t ignored;
    gpuprof_an_db_trace_ignored(db, &damaged, &left_out, &ignored);
    if (damaged || left_out)
        fprintf(stderr, "gpuprof: %s: its traces were used in part: %" PRIu32
                " damaged or empty (%" PRIu64 " bytes ignored), %" PRIu32
                " streams left out (gpuprof analyze said which)\n",
                argv[i], damaged, ignored, left_out);
    gpuprof_status st = GPUPROF_OK;
    gpuprof_an_cpath *cp = NULL;
    if (o.waits || o.cpath || o.cpath_metrics)
        cp = cpath_of(db, &st);
    if (st == GPUPROF_OK && o.cpath_metrics)
        st = gpuprof_an_db_add_cpath_metrics(db, cp);
    if (!o.waits && !o.cpath) {
        gpuprof_an_cpath_free(cp);
        cp = NULL;
    }
    if ((rc = view_derive(db, &o, &st)) != 0) {
        gpuprof_an_cpath_free(cp);
        gpuprof_an_db_close(db);
        return rc;
    }
    bool named = o.nmetric > 0;
    if (st == GPUPROF_OK && !o.nmetric && mode <= M_FOLDED && !o.trace &&
        !cp &&
        !(o.metric[o.nmetric++] = default_metric(db))) {
        gpuprof_an_db_close(db);
        fprintf(stderr, "gpuprof: %s: no metrics\n", argv[i]);
        return 1;
    }
    /* --importance without --metric: its metrics beside the default one. */
    static const char *const imp[] = {"cpu_importance", "gpu_api_importance"};
    for (int k = 0; k < 2 && st == GPUPROF_OK && o.importance && !named &&
                    mode == M_REPORT;
         k++) {
        uint32_t m;
        if (gpuprof_an_db_metric_find(db, imp[k], GPUPROF_AN_INCLUSIVE, &m) ==
            GPUPROF_OK)
            o.metric[o.nmetric++] = imp[k];
    }
    /* --pc without --metric: PC samples first, then latency samples and
     * the issue rate. */
    if (st == GPUPROF_OK && o.pc && !named && mode == M_REPORT) {
        o.metric[0] = "gpu.pc.samples";
        static const char *const pcm[] = {"gpu.pc.latency_samples",
                                          "gpu.pc.issue_rate"};
        for (int k = 0; k < 2; k++) {
            uint32_t m;
            if (gpuprof_an_db_metric_find(db, pcm[k], GPUPROF_AN_INCLUSIVE,
                                          &m) == GPUPROF_OK)
                o.metric[o.nmetric++] = pcm[k];
        }
    }
    output out;
    bool opened = st == GPUPROF_OK;
    if (opened && !out_open(&out, o.out)) {
        gpuprof_an_cpath_free(cp);
        gpuprof_an_db_close(db);
        return 1;
    }
    if (cp) {
        gpuprof_status cst = cpath_report(cp, &o, out.f);
        st = st == GPUPROF_OK ? cst : st;
    } else if (st == GPUPROF_OK && mode == M_FOLDED)
        st = gpuprof_an_db_print_folded(db, out.f, o.metric[0], o.runtime);
    else if (st == GPUPROF_OK && mode == M_HATCHET)
        st = gpuprof_an_db_export_hatchet_metrics(
            db, out.f, o.metric, o.nmetric,
            (o.stats ? GPUPROF_AN_HATCHET_STATS : 0) | o.runtime);
    else if (st == GPUPROF_OK && mode == M_TABLE)
        st = gpuprof_an_db_export_table(
            db, out.f, (o.long_form ? GPUPROF_AN_TABLE_LONG : 0) | o.runtime);
    else if (st == GPUPROF_OK && o.trace)
        st = gpuprof_an_db_print_trace(db, out.f, 0);
    else if (st == GPUPROF_OK && o.context >= 0)
        st = gpuprof_an_db_print_profiles(db, out.f, (uint32_t)o.context,
                                          o.metric[0], o.runtime);
    else if (st == GPUPROF_OK)
        st = gpuprof_an_db_print_view(db, out.f, o.view, o.metric, o.nmetric,
                                      o.threshold / 100, o.depth,
                                      o.flags | o.runtime);
    gpuprof_an_db_close(db);
    rc = st == GPUPROF_OK ? 0 : fail();
    return opened ? out_close(&out, rc) : rc;
}

/* project's options: the rules, at most 64; 0, or 2 on bad usage. */
static int project_options(int argc, char **argv, const char **rules,
                           uint32_t *n, int *i)
{
    static const char *const with_arg[] = {"--speedup", "--devices", NULL};
    static char device_rule[32];
    cli_permute(argc, argv, 2, with_arg);
    for (*i = 2; *i < argc && argv[*i][0] == '-' && argv[*i][1]; *i += 2) {
        if (!strcmp(argv[*i], "--")) {
            ++*i;
            break;
        }
        if (!strcmp(argv[*i], "--devices")) {
            const char *m = *i + 1 < argc ? argv[*i + 1] : "";
            if (strcmp(m, "auto") && strcmp(m, "free") && strcmp(m, "shared"))
                return usage_error("--devices wants auto, free or shared");
            if (*n == 64)
                return usage_error("at most 64 --speedups");
            snprintf(device_rule, sizeof(device_rule), "device:%s", m);
            rules[(*n)++] = device_rule;
            continue;
        }
        if (strcmp(argv[*i], "--speedup"))
            return usage_error("unknown option %s", argv[*i]);
        if (*i + 1 == argc)
            return usage_error("--speedup wants KIND:NAME=F");
        if (*n == 64)
            return usage_error("at most 64 --speedups");
        rules[(*n)++] = argv[*i + 1];
    }
    if (!*n)
        return usage_error("project wants at least one --speedup "
                           "KIND:NAME=F");
    if (*i == argc)
        return usage_error("project wants an analysis database of a traced "
                           "run");
    if (*i != argc - 1)
        return usage_error("project takes one database: %s is one too many",
                           argv[*i + 1]);
    return 0;
}

/* The rules that match no activity of the trace, each named on stderr
 * (when some matched, each is tried alone to find those that did not):
 * their count, or -1 with the error recorded. */
static int project_unmatched(gpuprof_an_cpath *cp, const char **rules,
                             uint32_t n, uint64_t touched)
{
    int none = 0;
    for (uint32_t k = 0; k < n && (!touched || n > 1); k++) {
        if (!strncmp(rules[k], "device:", 7)) /* a model, no activity */
            continue;
        uint64_t t = 0;
        gpuprof_an_cpath *pj = NULL;
        if (touched && gpuprof_an_cpath_project(cp, rules + k, 1, &t, &pj) !=
                           GPUPROF_OK)
            return -1;
        gpuprof_an_cpath_free(pj);
        if (!t) {
            fprintf(stderr, "gpuprof: project: --speedup %s matches no "
                    "activity of the trace\n", rules[k]);
            none++;
        }
    }
    return none;
}

/* How the projection treated each device's kernels that ran at once. */
static void print_device_models(const gpuprof_an_cpath *pj)
{
    gpuprof_an_device_model m[64];
    uint32_t n = gpuprof_an_cpath_device_models(pj, m, 64);
    for (uint32_t j = 0; j < n && j < 64; j++) {
        printf("devices, process %u: device %u, %u kernel(s): %s", m[j].process,
               m[j].device, m[j].kernels,
               m[j].shared ? "kernels running at once share it"
                           : "kernels overlap freely");
        if (m[j].forced)
            printf(" (as asked)\n");
        else if (m[j].evidence)
            printf(" (%u kernel(s) measured alone and beside others took "
                   "%.2f times as long beside them)\n",
                   m[j].evidence, m[j].slowdown);
        else if (m[j].shared)
            printf(" (each launch fills it: as many work-groups as its "
                   "compute units hold)\n");
        else
            printf(" (no kernel measured both alone and beside others, no "
                   "launch known to fill it; --devices shared if they share "
                   "it)\n");
    }
}

/* project --speedup KIND:NAME=F [--speedup ...]... DB; exit status 1 when
 * a rule matches nothing (a misspelt name would project the run as
 * measured). */
static int project(int argc, char **argv)
{
    const char *rules[64];
    uint32_t n = 0;
    int i, rc = project_options(argc, argv, rules, &n, &i);
    if (rc)
        return rc;
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(argv[i], &db) != GPUPROF_OK)
        return fail();
    gpuprof_status st;
    gpuprof_an_cpath *cp = cpath_of(db, &st), *pj = NULL;
    uint64_t touched = 0;
    if (st == GPUPROF_OK)
        st = gpuprof_an_cpath_project(cp, rules, n, &touched, &pj);
    int none = st == GPUPROF_OK ? project_unmatched(cp, rules, n, touched) : 0;
    if (none < 0)
        st = GPUPROF_E_INTERNAL; /* the error is recorded */
    if (st == GPUPROF_OK && !none)
        st = gpuprof_an_cpath_print_projection(cp, pj, stdout, 0);
    if (st == GPUPROF_OK && !none)
        print_device_models(pj);
    gpuprof_an_cpath_free(pj);
    gpuprof_an_cpath_free(cp);
    gpuprof_an_db_close(db);
    return st != GPUPROF_OK ? fail() : none ? 1 : 0;
}

/* export --chrome [-o FILE] DIR...: to FILE (replaced only when the
 * export succeeds) or stdout. */
static int chrome(int argc, char **argv)
{
    const char *path = NULL;
    static const char *const with_arg[] = {"-o", NULL};
    cli_permute(argc, argv, 3, with_arg);
    int i = 3;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i += 2) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (strcmp(argv[i], "-o"))
            return usage_error("export --chrome: unknown option %s", argv[i]);
        if (i + 1 == argc)
            return usage_error("-o wants a file");
        path = argv[i + 1];
    }
    if (i == argc)
        return usage_error("export --chrome wants measurement directories "
                           "of a traced run");
    output out;
    if (!out_open(&out, path))
        return 1;
    gpuprof_status st =
        gpuprof_an_export_chrome((const char *const *)(argv + i),
                                 (uint32_t)(argc - i), out.f, stderr, 0);
    return out_close(&out, st == GPUPROF_OK ? 0 : fail());
}

/* export --otf2 -o DIR DB: the archive appears in DIR whole or not at all
 * (gpuprof_an_db_export_otf2). */
static int otf2(int argc, char **argv)
{
    static const char *const with_arg[] = {"-o", NULL};
    cli_permute(argc, argv, 3, with_arg);
    if (argc != 6 || strcmp(argv[3], "-o"))
        return usage_error("export --otf2 wants -o DIR and one database");
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(argv[5], &db) != GPUPROF_OK)
        return fail();
    uint32_t damaged, left_out;
    uint64_t ignored;
    gpuprof_an_db_trace_ignored(db, &damaged, &left_out, &ignored);
    if (damaged || left_out)
        fprintf(stderr, "gpuprof: %s: its traces were used in part: %" PRIu32
                " damaged or empty (%" PRIu64 " bytes ignored), %" PRIu32
                " streams left out (gpuprof analyze said which)\n",
                argv[5], damaged, ignored, left_out);
    gpuprof_status st = gpuprof_an_db_export_otf2(db, argv[4], stderr, 0);
    gpuprof_an_db_close(db);
    if (st != GPUPROF_OK)
        return fail();
    size_t n = strlen(argv[4]);
    while (n > 1 && argv[4][n - 1] == '/')
        n--;
    printf("gpuprof: OTF2 archive written to %.*s/traces.otf2\n", (int)n,
           argv[4]);
    return 0;
}

/* The number of processes of the MPI job this one was started in (by
 * mpirun, mpiexec or srun), 1 outside one. */
static long mpi_job_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "PMIX_SIZE", "MV2_COMM_WORLD_SIZE"};
    for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) {
        const char *v = getenv(vars[k]);
        char *end;
        long n = v && *v ? strtol(v, &end, 10) : 0;
        if (n > 1 && !*end)
            return n;
    }
    return 1;
}

/* `mpirun -np N gpuprof analyze ...`: the same command on N ranks is
 * gpuprof-mpi's job (it divides the work and writes the database once);
 * N copies of a single-process analyze would each write it. Replaces this
 * process with gpuprof-mpi beside it, or says why it cannot. */
static int analyze_on_ranks(long n, char **argv)
{
    char self[4096], mpi[4096 + 16];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(mpi, sizeof(mpi), "%s/gpuprof-mpi", self);
            if (access(mpi, X_OK) == 0) {
                argv[0] = mpi;
                execv(mpi, argv);
                fprintf(stderr, "gpuprof: analyze in an MPI job: cannot run "
                        "%s: %s\n", mpi, strerror(errno));
                return 1;
            }
        }
    }
    fprintf(stderr, "gpuprof: analyze runs in an MPI job of %ld processes, "
            "but there is no gpuprof-mpi beside this gpuprof (built without "
            "an MPI compiler): every process would write the database. Run "
            "gpuprof analyze as one process, or build with mpicc.\n", n);
    return 2;
}

static int analyze(int argc, char **argv)
{
    long ranks = mpi_job_size();
    if (ranks > 1)
        return analyze_on_ranks(ranks, argv);
    cli_analyze o;
    int rc = cli_analyze_parse(argc, argv, "gpuprof", true, &o);
    if (rc < 0) /* what is wrong was said */
        fputs("try 'gpuprof analyze --help'\n", stderr);
    if (rc)
        return 2;
    gpuprof_an_analysis *a;
    gpuprof_status st = cli_analysis_new(&o, argc, argv, &a);
    if (st == GPUPROF_OK && o.verbose)
        cli_say_memory(a, &o, 1);
    if (st == GPUPROF_OK && isatty(2))
        st = gpuprof_an_analysis_set_progress(a, cli_show_progress,
                                              (void *)"gpuprof analyze");
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_run(a);
    gpuprof_an_analysis_free(a);
    if (st != GPUPROF_OK) {
        if (isatty(2))
            fputc('\n', stderr);
        return fail();
    }
    printf("gpuprof: database written to %s\n", o.out);
    return 0;
}

/* With a trace: the suggestions ranked by what the whole run would gain
 * (gpuprof_an_advice_project); without, or when the trace cannot be
 * analysed (said), the advice ranks per kernel. */
static void rank_by_run(gpuprof_an_db *db, gpuprof_an_advice *a, uint32_t top)
{
    gpuprof_an_cpath *cp = NULL;
    gpuprof_status st = gpuprof_an_cpath_new(db, NULL, NULL, &cp);
    if (st == GPUPROF_OK)
        st = gpuprof_an_advice_project(a, db, cp, top, 0);
    if (st != GPUPROF_OK && st != GPUPROF_E_NOTFOUND)
        fprintf(stderr, "gpuprof: advise: no whole-program ranking: %s\n",
                gpuprof_an_last_error());
    gpuprof_an_cpath_free(cp);
}

/* gpuprof advise [--top N] DB: per GPU kernel, suggestions ranked by
 * estimated speedup (seed 003), `top` per kernel (default 5, 0: all), and
 * with a trace across kernels by the projected gain of the run. */
static int advise(int argc, char **argv)
{
    unsigned long top = 5;
    static const char *const with_arg[] = {"--top", NULL};
    cli_permute(argc, argv, 2, with_arg);
    int i = 2;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i += 2) {
        char *end;
        if (strcmp(argv[i], "--top"))
            return usage_error("unknown option %s", argv[i]);
        if (i + 1 == argc)
            return usage_error("--top wants 0 (all) or more");
        top = strtoul(argv[i + 1], &end, 10);
        if (!*argv[i + 1] || *end || top > UINT32_MAX)
            return usage_error("--top wants 0 (all) or more");
    }
    if (i == argc)
        return usage_error("advise wants an analysis database");
    if (i + 1 != argc)
        return usage_error("advise takes one database: %s is one too many",
                           argv[i + 1]);
    gpuprof_an_db *db;
    if (gpuprof_an_db_open(argv[i], &db) != GPUPROF_OK)
        return fail();
    gpuprof_an_advice *a;
    gpuprof_status st = gpuprof_an_db_advise(db, 0, &a);
    if (st == GPUPROF_OK) {
        rank_by_run(db, a, (uint32_t)top);
        st = gpuprof_an_advice_print(a, stdout, (uint32_t)top, 0);
        gpuprof_an_advice_free(a);
    }
    gpuprof_an_db_close(db);
    return st == GPUPROF_OK ? 0 : fail();
}

/* export FORMAT ...: the format may come anywhere among the options;
 * it is moved to argv[2]. */
static int export_cmd(int argc, char **argv)
{
    static const char *const formats[] = {"--folded", "--hatchet", "--table",
                                          "--chrome", "--otf2"};
    int at = 0;
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        for (size_t k = 0; k < 5; k++)
            if (!strcmp(argv[i], formats[k])) {
                if (at)
                    return usage_error("export: %s and %s exclude each other",
                                       argv[at], argv[i]);
                at = i;
            }
    if (!at)
        return usage_error("export wants a format: --folded, --hatchet, "
                           "--table, --chrome or --otf2");
    for (char *f = argv[at]; at > 2; at--)
        argv[at] = argv[at - 1], argv[at - 1] = f;
    if (!strcmp(argv[2], "--chrome"))
        return chrome(argc, argv);
    if (!strcmp(argv[2], "--otf2"))
        return otf2(argc, argv);
    return db_view(argc, argv, 3,
                   !strcmp(argv[2], "--folded")    ? M_FOLDED
                   : !strcmp(argv[2], "--hatchet") ? M_HATCHET
                                                   : M_TABLE);
}

/* report DIR (a measurement directory) or report [options] DB. */
static int report_cmd(int argc, char **argv)
{
    if (argc >= 3 && !any_database(argc, argv) && dir_report_args(argc, argv))
        return report(argc, argv);
    return db_view(argc, argv, 2, M_REPORT);
}

static int dump_cmd(int argc, char **argv)
{
    if (argc == 3 && argv[2][0] != '-')
        return dump(argv[2]);
    if (argc > 2 && argv[2][0] == '-' && strcmp(argv[2], "--"))
        return usage_error("unknown option %s", argv[2]);
    if (argc == 4 && !strcmp(argv[2], "--"))
        return dump(argv[3]);
    return usage_error("dump wants one profile (.gpuprof) or trace "
                       "(.gptrace) file");
}

static int version(void)
{
    printf("gpuprof %s\n", GPUPROF_VERSION_STRING);
    return 0;
}

/* gpuprof help [COMMAND]. */
static int help_cmd(int argc, char **argv)
{
    if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
        return cli_command_help("help");
    if (argc == 2)
        return cli_overview(stdout, 0);
    if (argc > 3)
        return usage_error("help takes one command");
    if (cli_command_help(argv[2]) == 0)
        return 0;
    cli_command = "";
    return usage_error("unknown command '%s'", argv[2]);
}

/* Whether argv[2..] asks for the command's usage (run: its own options
 * only, before PROGRAM, so run_program sees to it). */
static bool asks_help(int argc, char **argv)
{
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int argc, char **argv);
    } cmds[] = {{"dump", dump_cmd},       {"report", report_cmd},
                {"export", export_cmd},   {"analyze", analyze},
                {"project", project},     {"advise", advise},
                {"run", run_program},     {"help", help_cmd}};
    if (argc < 2)
        return cli_overview(stderr, 2);
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))
        return argc == 2 ? version()
                         : usage_error("--version takes no arguments");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return help_cmd(argc, argv);
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        if (strcmp(argv[1], cmds[k].name))
            continue;
        cli_command = cmds[k].name;
        if (strcmp(cmds[k].name, "run") && strcmp(cmds[k].name, "help") &&
            asks_help(argc, argv))
            return cli_command_help(cmds[k].name);
        return cmds[k].fn(argc, argv);
    }
    if (argv[1][0] == '-')
        return usage_error("unknown option %s", argv[1]);
    return usage_error("unknown command '%s'", argv[1]);
}
