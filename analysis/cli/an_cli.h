/*
 * an_cli.h - what `gpuprof analyze` and `gpuprof-mpi analyze` share: their
 * options and the analysis they make of them. Header only, on the public
 * API alone (gpuprof links the shared library, gpuprof-mpi its objects).
 */
#ifndef GPUPROF_ANALYSIS_AN_CLI_H
#define GPUPROF_ANALYSIS_AN_CLI_H

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuprof_analysis.h"

/* The CPUs this process may run on (its affinity: under mpirun's binding,
 * a rank's cores; in a batch job, the job's), 1..1024. */
static inline unsigned cli_cpus(void)
{
    long n = 0;
#ifdef CPU_COUNT
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof(s), &s) == 0)
        n = CPU_COUNT(&s);
#endif
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (unsigned)n;
}

/* The progress line on stderr (a terminal); user: the command's label,
 * such as "gpuprof analyze". */
static inline void cli_show_progress(const char *phase, uint64_t done,
                                     uint64_t total, void *user)
{
    fprintf(stderr, "\r%s: %-9s %llu/%llu   ", (const char *)user, phase,
            (unsigned long long)done, (unsigned long long)total);
    if (!strcmp(phase, "write") && done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* A warning of the analysis (a damaged trace, ...): one line on stderr;
 * user: the program's name. */
static inline void cli_show_warning(const char *msg, void *user)
{
    fprintf(stderr, "%s: %s\n", (const char *)user, msg);
}

/* A usage error of `gpuprof CMD` (CMD "" for none): "WHO" and the message
 * on one line, then where to read more; exit status 2. */
static inline int cli_vusage(const char *who, const char *cmd,
                             const char *fmt, va_list ap)
{
    fputs(who, stderr);
    vfprintf(stderr, fmt, ap);
    if (*cmd)
        fprintf(stderr, "\ntry 'gpuprof %s --help'\n", cmd);
    else
        fputs("\ntry 'gpuprof help'\n", stderr);
    return 2;
}

/* "512M", "4G", "65536" (bytes), "100K", "2GiB": binary multiples. */
static inline bool cli_parse_size(const char *s, uint64_t *out)
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

/* Options may follow operands (GNU style): argv[first..] is reordered in
 * place, stably, so that every option (an argument starting with '-',
 * with its value when its name is in `with_arg`, a NULL-ended list) comes
 * before the operands. "--" ends the options: it and what follows stay
 * where they are. An option that wants a value but comes last stays last,
 * after the operands, so that no operand is taken for its value. */
static inline void cli_permute(int argc, char **argv, int first,
                               const char *const *with_arg)
{
    int end = first;
    while (end < argc && strcmp(argv[end], "--"))
        end++;
    char **ops = malloc((size_t)(end - first + 1) * sizeof(*ops));
    if (!ops)
        return;
    int w = first, n = 0;
    char *dangling = NULL; /* the last option, wanting a value it lacks */
    for (int i = first; i < end; i++) {
        if (argv[i][0] != '-' || !argv[i][1]) {
            ops[n++] = argv[i];
            continue;
        }
        bool valued = false;
        for (const char *const *a = with_arg; *a && !valued; a++)
            valued = !strcmp(argv[i], *a);
        if (valued && i + 1 == end) {
            dangling = argv[i];
            continue;
        }
        argv[w++] = argv[i];
        if (valued)
            argv[w++] = argv[++i];
    }
    memcpy(argv + w, ops, (size_t)n * sizeof(*ops));
    if (dangling)
        argv[w + n] = dangling;
    free(ops);
}

/* analyze [-j N] [--memory SIZE] [--no-structure] [--strict] [-o DB] DIR...
 * -j: threads (-jN too); by default one per CPU the process may use.
 * --strict: a trace not used whole stops the run (else: a warning). */
typedef struct cli_analyze {
    unsigned threads;
    int structure, strict;
    const char *prog;
    uint64_t memory;
    const char *out; /* -o, else DIR-database of the first DIR */
    int first;       /* the first DIR in argv */
    char def[4200];
} cli_analyze;

/* Parses argv[2..] (argv[1] is "analyze"). 0 when good; 2 after a line
 * on stderr naming the bad value (when `say`); -1 for bad usage (a line
 * saying what is wrong when `say`), after which the caller points to the
 * usage. */
static inline int cli_analyze_parse(int argc, char **argv, const char *prog,
                                    bool say, cli_analyze *o)
{
    *o = (cli_analyze){.threads = cli_cpus(), .structure = 1, .prog = prog};
    static const char *const with_arg[] = {"-j", "-o", "--memory", NULL};
    cli_permute(argc, argv, 2, with_arg);
    int i = 2;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strncmp(argv[i], "-j", 2) && (argv[i][2] || i + 1 < argc)) {
            char *end; /* -j N or -jN */
            const char *v = argv[i][2] ? argv[i] + 2 : argv[++i];
            long j = strtol(v, &end, 10);
            if (end == v || *end || j < 1 || j > 1024) {
                if (say)
                    fprintf(stderr, "%s: -j wants 1..1024\n", prog);
                return 2;
            }
            o->threads = (unsigned)j;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            o->out = argv[++i];
        } else if (!strcmp(argv[i], "--no-structure")) {
            o->structure = 0;
        } else if (!strcmp(argv[i], "--strict")) {
            o->strict = 1;
        } else if (!strcmp(argv[i], "--memory") && i + 1 < argc) {
            if (!cli_parse_size(argv[++i], &o->memory)) {
                if (say)
                    fprintf(stderr, "%s: --memory wants a size such as 512M "
                                    "or 4G\n", prog);
                return 2;
            }
        } else {
            bool valued = !strcmp(argv[i], "-o") || !strcmp(argv[i], "-j") ||
                          !strcmp(argv[i], "--memory");
            if (say && valued)
                fprintf(stderr, "%s: %s wants a value\n", prog, argv[i]);
            else if (say)
                fprintf(stderr, "%s: analyze: unknown option %s\n", prog,
                        argv[i]);
            return -1;
        }
    }
    if (i == argc) {
        if (say)
            fprintf(stderr, "%s: analyze wants measurement directories\n",
                    prog);
        return -1;
    }
    o->first = i;
    if (!o->out) {
        size_t n = strlen(argv[i]);
        while (n > 1 && argv[i][n - 1] == '/')
            n--;
        snprintf(o->def, sizeof(o->def), "%.*s-database", (int)n, argv[i]);
        o->out = o->def;
    }
    return 0;
}

/* A new analysis with those options and inputs; on failure *a is NULL
 * (gpuprof_an_last_error says why). */
static inline gpuprof_status cli_analysis_new(const cli_analyze *o, int argc,
                                              char **argv,
                                              gpuprof_an_analysis **a)
{
    gpuprof_status st = gpuprof_an_analysis_new(a);
    if (st != GPUPROF_OK) {
        *a = NULL;
        return st;
    }
    st = gpuprof_an_analysis_set_output(*a, o->out);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_threads(*a, o->threads);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_memory(*a, o->memory);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_structure(*a, o->structure);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_strict(*a, o->strict);
    if (st == GPUPROF_OK)
        st = gpuprof_an_analysis_set_warnings(*a, cli_show_warning,
                                              (void *)o->prog);
    for (int i = o->first; st == GPUPROF_OK && i < argc; i++)
        st = gpuprof_an_analysis_add_input(*a, argv[i]);
    if (st != GPUPROF_OK) {
        gpuprof_an_analysis_free(*a);
        *a = NULL;
    }
    return st;
}

#endif /* GPUPROF_ANALYSIS_AN_CLI_H */
