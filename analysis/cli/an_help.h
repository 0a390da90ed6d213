/*
 * an_help.h - what the `gpuprof` command says about its own use: the
 * overview (`gpuprof help`, `gpuprof --help`), each command's usage
 * (`gpuprof help CMD`, `gpuprof CMD --help`: stdout, exit 0), and the
 * two-line usage error (what is wrong, then "try 'gpuprof CMD --help'":
 * stderr, exit 2). `gpuprof run`'s own text is run_help (an_run.h), beside
 * its options. Header only, included by analysis/cli/gpuprof.c.
 *
 * Exit status of every command but run, as the texts say: 0 done; 1 the
 * input cannot be used or answers nothing (missing, damaged, of the wrong
 * kind, an unknown metric or context, a speedup that matches nothing) or
 * the output cannot be written; 2 bad usage.
 */
#ifndef GPUPROF_ANALYSIS_AN_HELP_H
#define GPUPROF_ANALYSIS_AN_HELP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "an_cli.h"
#include "an_run.h"

#define CLI_EXIT_STATUS                                                        \
    "Exit status: 0 done; 1 the input cannot be used or answers nothing "    \
    "(missing,\n"                                                              \
    "damaged or of the wrong kind, an unknown metric or context, a speedup "  \
    "that\n"                                                                   \
    "matches nothing) or the output cannot be written; 2 bad usage.\n"

/* One command: its synopsis (the overview lists them all) and what its
 * options mean (its own --help adds them). */
typedef struct cli_help {
    const char *name, *synopsis, *details;
} cli_help;

static const cli_help cli_helps[] = {
    {"dump",
     "gpuprof dump FILE     print one profile as a tree (or a .gptrace trace)\n",
     "FILE: a profile (.gpuprof: identity, counters, every thread's tree) or "
     "a trace\n(.gptrace: its streams and records) of a measurement "
     "directory.\n"},
    {"report",
     "gpuprof report DIR    print the region tree of a measurement directory\n"
     "gpuprof report [--view top-down|bottom-up|flat] [--metric NAME]...\n"
     "               [--derive NAME=FORMULA]... [--importance] [--pc] "
     "[--sort exclusive]\n"
     "               [--depth N] [--threshold PCT] [--context ID | --trace] "
     "DB\n"
     "                      a view of an analysis database\n"
     "gpuprof report --waits|--critical-path [--cpath-metrics] DB\n"
     "                      wait states, or the critical path, of trace.db\n",
     "DIR: a measurement directory: the region tree summed over threads and\n"
     "processes, then the GPU operations beneath regions and call paths.\n"
     "DB: an analysis database (gpuprof analyze -o DB DIR):\n"
     "  --view VIEW          top-down (default), bottom-up or flat\n"
     "  --metric NAME        a metric to show, repeatable (default: gpu.time, "
     "else\n"
     "                       region time, whichever has data)\n"
     "  --derive NAME=FORMULA  a derived metric, e.g. 'per=gpu.time / "
     "gpu.count'\n"
     "  --importance         CPU_IMPORTANCE and GPU_API_IMPORTANCE beside it\n"
     "  --pc                 PC-sampling metrics (samples, latency, issue "
     "rate)\n"
     "  --sort exclusive     siblings by exclusive value (default: "
     "inclusive)\n"
     "  --depth N            at most N levels below the root (0: all)\n"
     "  --threshold PCT      contexts under PCT % of the whole left out "
     "(default 1)\n"
     "  --context ID         one context's values in every profile\n"
     "  --trace              the streams trace.db holds\n"
     "  --waits              wait states and their blame (a traced run)\n"
     "  --critical-path      the critical path, one line per activity\n"
     "  --cpath-metrics      wait.time, wait.blame, gpu.idle_blame and "
     "cpath.time\n"
     "                       as metrics of any view\n"},
    {"export",
     "gpuprof export --folded [--metric NAME] [--derive NAME=FORMULA]...\n"
     "               [--importance] [-o FILE] DB\n"
     "                      folded stacks (flame graphs) of a database\n"
     "gpuprof export --hatchet [--metric NAME]... [--stats] | --table "
     "[--long]\n"
     "               [--derive NAME=FORMULA]... [--importance] [-o FILE] DB\n"
     "                      JSON for Hatchet, or CSV for pandas (every "
     "metric)\n"
     "gpuprof export --chrome [-o FILE] DIR...\n"
     "                      traces of measurement directories as JSON for\n"
     "                      ui.perfetto.dev\n"
     "gpuprof export --otf2 -o DIR DB\n"
     "                      trace.db as an OTF2 archive (Vampir): "
     "DIR/traces.otf2\n",
     "  --folded             one metric per call path, for flamegraph.pl or "
     "speedscope\n"
     "  --hatchet            JSON for hatchet.GraphFrame.from_literal; "
     "--stats adds\n"
     "                       each metric's min, mean and max over profiles\n"
     "  --table              CSV for pandas.read_csv, every metric; --long: "
     "one row\n"
     "                       per value\n"
     "  --chrome             Chrome Trace Event JSON of the traces "
     "(*.gptrace) in\n"
     "                       measurement directories (gpuprof run --trace)\n"
     "  --otf2               trace.db of a database made from a traced run\n"
     "  -o FILE              write FILE, replaced only once complete "
     "(default: stdout)\n"
     "  --metric, --derive, --importance, --cpath-metrics: as for report\n"},
    {"analyze",
     "gpuprof analyze [-j N] [--memory SIZE] [--no-structure] [--strict] "
     "[-v] [-o DB] DIR...\n"
     "                      aggregate measurements into an analysis "
     "database\n",
     "DIR: measurement directories; several runs merge into one database.\n"
     "  -o DB                the database directory (default: "
     "DIR-database)\n"
     "  -j N                 threads (default: one per CPU this process may "
     "use)\n"
     "  --memory SIZE        a memory budget such as 512M or 4G (at least "
     "16M; 0: none;\n"
     "                       default: a quarter of the memory available)\n"
     "  -v                   say the budget before the run\n"
     "  --no-structure       no functions, lines and loops from the "
     "binaries' DWARF\n"
     "  --strict             refuse a damaged trace (default: use it up to "
     "the damage)\n"
     "Started by mpirun on several ranks, it runs gpuprof-mpi beside it, "
     "which\ndivides the work.\n"},
    {"project",
     "gpuprof project --speedup KIND:NAME=F [--speedup ...]... "
     "[--devices MODEL] DB\n"
     "                      the run with kernels, regions or contexts F x "
     "faster\n",
     "DB: a database of a traced run (gpuprof run --trace). Prints the "
     "projected run\ntime and the new critical path.\n"
     "  --speedup kernel:NAME=F   a kernel, named as the reports name it\n"
     "  --speedup region:NAME=F   a region\n"
     "  --speedup context:ID=F    a context (its id in gpuprof report "
     "--context)\n"
     "  --devices MODEL      kernels that ran at once on a device: auto "
     "(the trace\n"
     "                       decides, the default), free (each at its "
     "measured speed)\n"
     "                       or shared (they share the device's speed)\n"
     "A speedup that matches no activity of the trace is an error (exit "
     "1).\n"},
    {"advise",
     "gpuprof advise [--top N] DB\n"
     "                      GPU kernels: optimizations ranked by estimated\n"
     "                      speedup, from PC samples (needs nvdisasm)\n",
     "DB: a database of a run with PC sampling (gpuprof run --pc-sampling).\n"
     "  --top N              suggestions per kernel (default 5, 0: all)\n"},
    {"run", NULL, NULL}, /* run_help */
    {"help",
     "gpuprof help [COMMAND]\n"
     "                      this overview, or COMMAND's usage (also: "
     "gpuprof\n"
     "                      COMMAND --help)\n",
     ""},
    {"version", "gpuprof --version\n", ""},
};

/* Synopsis lines, the first after "usage: ", the others indented as
 * much (*lead says which comes next). */
static void cli_synopsis(FILE *out, const char *s, const char **lead)
{
    for (const char *line = s; *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(out, "%s%.*s\n", *lead, (int)n, line);
        *lead = "       ";
        line += n + (line[n] == '\n');
    }
}

/* The usage of every command; to stdout with 0 (asked for), or to stderr
 * with 2 (no command given). */
static int cli_overview(FILE *out, int rc)
{
    const char *lead = "usage: ";
    for (size_t k = 0; k < sizeof(cli_helps) / sizeof(cli_helps[0]); k++) {
        const char *s = cli_helps[k].synopsis;
        if (!s) { /* run: its first two lines, from run_help's text */
            s = "gpuprof run [-o DIR] [--trace] [--mpi] [--backends LIST] "
                "[--pc-sampling[=N]]\n"
                "            [--cpu[=SPEC]] [--follow-children] [--log LEVEL] "
                "[--flush-period MS] [--] PROGRAM [ARGS...]\n"
                "                      measure a program that never calls "
                "libgpuprof\n";
        }
        cli_synopsis(out, s, &lead);
    }
    fputs("\n" CLI_EXIT_STATUS
          "gpuprof run exits with the program's own status "
          "(gpuprof run --help).\n",
          out);
    return rc;
}

/* `gpuprof help CMD`, `gpuprof CMD --help`: CMD's usage on stdout, 0;
 * -1 when there is no such command. */
static int cli_command_help(const char *cmd)
{
    for (size_t k = 0; k < sizeof(cli_helps) / sizeof(cli_helps[0]); k++) {
        const cli_help *h = &cli_helps[k];
        if (strcmp(cmd, h->name))
            continue;
        if (!h->synopsis)
            return run_help(stdout, 0);
        const char *lead = "usage: ";
        cli_synopsis(stdout, h->synopsis, &lead);
        fputs(h->details, stdout);
        fputs(CLI_EXIT_STATUS, stdout);
        return 0;
    }
    return -1;
}

/* The command a usage error points to ("report", "export", ...). */
static const char *cli_command = "";

/* A usage error: one line saying what is wrong, one saying where to read
 * more; exit status 2. */
static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cli_vusage("gpuprof: ", cli_command, fmt, ap);
    va_end(ap);
    return rc;
}

#endif /* GPUPROF_ANALYSIS_AN_HELP_H */
