/*
 * an_run.h - `gpuprof run [options] [--] PROGRAM [ARGS...]`: measure a
 * program that never calls libgpuprof. Header only, included by the
 * command (analysis/cli/gpuprof.c), which it leaves by exec.
 *
 * The options become the GPUPROF_* variables the library reads at init
 * (README "Environment"); libgpuprof-preload.so, found beside the analysis
 * library this command runs with, goes first in LD_PRELOAD and calls
 * gpuprof_init from its constructor (lib/preload/preload.c). Then this
 * process execs PROGRAM: its pid, exit status, signals and standard streams
 * are the program's own; GPUPROF_RUN_PID names it, so the preload library
 * knows the process it was started for (a wrapper such as a shell passes
 * the library on to what it runs: lib/preload/preload.c). A program the
 * dynamic loader would not preload into (statically linked, set-user-ID)
 * is refused before the exec, saying why. Usage errors exit 2, a program
 * that cannot be run 126/127 (as a shell says).
 */
#ifndef GPUPROF_ANALYSIS_AN_RUN_H
#define GPUPROF_ANALYSIS_AN_RUN_H

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_cli.h"
#include "gpuprof_analysis.h"

/* `gpuprof run --help`: the usage on stdout. */
static int run_help(FILE *out, int rc)
{
    fputs("usage: gpuprof run [-o DIR] [--trace] [--mpi] [--backends LIST] "
          "[--pc-sampling[=N]]\n"
          "                   [--cpu[=SPEC]] [--follow-children] [--log LEVEL] "
          "[--flush-period MS] [--] PROGRAM [ARGS...]\n"
          "Measures PROGRAM, which need not call libgpuprof: it runs with "
          "libgpuprof-preload.so\nin LD_PRELOAD, the options below set "
          "as GPUPROF_* variables.\n"
          "  -o DIR              measurement directory (GPUPROF_OUTPUT; "
          "default:\n"
          "                      ./gpuprof-PROGRAM-measurements)\n"
          "  --trace             record traces (GPUPROF_TRACE=1)\n"
          "  --mpi               MPI calls in the traces too "
          "(libgpuprof-pmpi.so; implies --trace)\n"
          "  --backends LIST     auto, none, or names such as opencl,cupti "
          "(GPUPROF_BACKENDS)\n"
          "  --pc-sampling[=N]   CUPTI PC sampling, period 2^N cycles, "
          "N in 5..31\n"
          "  --cpu[=SPEC]        CPU samples (GPUPROF_CPU_SAMPLING): off, "
          "cputime@PERIOD\n"
          "                      and/or realtime@PERIOD (default "
          "cputime@10ms)\n"
          "  --follow-children   also measure the programs PROGRAM starts\n"
          "  --log LEVEL         off, error, warn, info or debug "
          "(GPUPROF_LOG)\n"
          "  --flush-period MS   write a profile every MS milliseconds "
          "(GPUPROF_FLUSH_PERIOD_MS)\n"
          "  -h, --help          this text\n"
          "Wrappers pass the measurement on: a shell or env running a script "
          "or a shim\n(pyenv's python3) is not measured, the program it "
          "execs or starts is; programs\nwhose output a shell reads, as in "
          "$(cmd), are not (doc/CORE.md \"gpuprof run\").\n"
          "Exit status: PROGRAM's own; 2 for bad usage, 126 when PROGRAM "
          "cannot be run,\n127 when it is not found, 1 when gpuprof run "
          "fails otherwise.\n",
          out);
    return rc;
}

/* A usage error: what is wrong in one line, then where to read more. */
static int run_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static int run_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cli_vusage("gpuprof run: ", "run", fmt, ap);
    va_end(ap);
    return rc;
}

/* GPUPROF_OUTPUT as an absolute name, so children that change directory
 * (with --follow-children) write beside their parent. */
static bool run_set_output(const char *dir)
{
    char cwd[PATH_MAX], abs[2 * PATH_MAX + 2];
    if (dir[0] == '/' || !getcwd(cwd, sizeof(cwd)))
        return setenv("GPUPROF_OUTPUT", dir, 1) == 0;
    snprintf(abs, sizeof(abs), "%s/%s", cwd, dir);
    return setenv("GPUPROF_OUTPUT", abs, 1) == 0;
}

/* --mpi: libgpuprof-pmpi.so preloaded too (MPI calls in the traces). */
static bool run_mpi;

/* One option at argv[*i]; 0 when taken, 2 after a usage message, -1
 * after the help text. */
static int run_option(int argc, char **argv, int *i)
{
    const char *opt = argv[*i];
    static const char *const with_arg[][2] = {
        {"-o", "GPUPROF_OUTPUT"},     {"--backends", "GPUPROF_BACKENDS"},
        {"--log", "GPUPROF_LOG"},     {"--flush-period", "GPUPROF_FLUSH_PERIOD_MS"}};
    for (size_t k = 0; k < sizeof(with_arg) / sizeof(with_arg[0]); k++) {
        if (strcmp(opt, with_arg[k][0]))
            continue;
        if (*i + 1 >= argc || !argv[*i + 1][0])
            return run_usage("%s wants a value", opt);
        const char *v = argv[++*i];
        if (k == 0)
            return run_set_output(v) ? 0 : 2;
        return setenv(with_arg[k][1], v, 1) ? 2 : 0;
    }
    if (!strcmp(opt, "--help") || !strcmp(opt, "-h"))
        return run_help(stdout, -1);
    if (!strcmp(opt, "--trace"))
        return setenv("GPUPROF_TRACE", "1", 1) ? 2 : 0;
    if (!strcmp(opt, "--mpi")) { /* MPI calls are trace events */
        run_mpi = true;
        return setenv("GPUPROF_TRACE", "1", 1) ? 2 : 0;
    }
    if (!strcmp(opt, "--follow-children"))
        return setenv("GPUPROF_FOLLOW_CHILDREN", "1", 1) ? 2 : 0;
    if (!strcmp(opt, "--cpu")) /* CPU samples: the default setting */
        return setenv("GPUPROF_CPU_SAMPLING", "on", 1) ? 2 : 0;
    if (!strncmp(opt, "--cpu=", 6)) { /* the library checks SPEC */
        if (!opt[6])
            return run_usage("%s: e.g. --cpu=cputime@5ms,realtime@20ms or "
                             "--cpu=off", opt);
        return setenv("GPUPROF_CPU_SAMPLING", opt + 6, 1) ? 2 : 0;
    }
    if (!strcmp(opt, "--pc-sampling"))
        return setenv("GPUPROF_CUPTI_PC_SAMPLING", "1", 1) ? 2 : 0;
    if (!strncmp(opt, "--pc-sampling=", 14)) {
        char *end;
        long n = strtol(opt + 14, &end, 10);
        if (end == opt + 14 || *end || n < 5 || n > 31)
            return run_usage("%s: the period is 5..31 (2^N cycles)", opt);
        return setenv("GPUPROF_CUPTI_PC_SAMPLING", opt + 14, 1) ? 2 : 0;
    }
    return run_usage("unknown option %s", opt);
}

/* PROGRAM as execvp finds it: a name with a slash as is, else the first
 * executable file of that name in PATH. False when there is none. */
static bool run_find(const char *prog, char *out, size_t size)
{
    if (strchr(prog, '/')) {
        snprintf(out, size, "%s", prog);
        return access(out, F_OK) == 0;
    }
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(out, size, "%.*s/%s", (int)(len ? len : 1), len ? p : ".",
                 prog);
        if (access(out, X_OK) == 0)
            return true;
        p += len + (p[len] == ':');
    }
    return false;
}

/* Whether the ELF file at fd has a program interpreter (is dynamically
 * linked); 1 yes, 0 no, -1 not a 64-bit or 32-bit ELF file. */
static int run_dynamic(int fd)
{
    Elf64_Ehdr e;
    if (pread(fd, &e, sizeof(e), 0) < (ssize_t)EI_NIDENT ||
        memcmp(e.e_ident, ELFMAG, SELFMAG))
        return -1;
    bool is64 = e.e_ident[EI_CLASS] == ELFCLASS64;
    uint64_t off = is64 ? e.e_phoff : ((Elf32_Ehdr *)&e)->e_phoff;
    unsigned n = is64 ? e.e_phnum : ((Elf32_Ehdr *)&e)->e_phnum;
    unsigned sz = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
    for (unsigned k = 0; k < n && k < 4096; k++) {
        uint32_t type;
        if (pread(fd, &type, sizeof(type), (off_t)(off + (uint64_t)k * sz)) !=
            sizeof(type))
            return 0;
        if (type == PT_INTERP)
            return 1;
    }
    return 0;
}

/* 0 when the loader will preload into PROGRAM (or it is a script, whose
 * interpreter is then measured); else a message and 2 (126/127 when it
 * cannot be run at all). */
static int run_check(const char *prog, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "gpuprof run: %s: %s\n", prog, strerror(errno));
        return errno == ENOENT ? 127 : 126;
    }
    if ((st.st_mode & S_ISUID && st.st_uid != geteuid()) ||
        (st.st_mode & S_ISGID && st.st_gid != getegid())) {
        fprintf(stderr, "gpuprof run: %s is set-user-ID or set-group-ID: "
                "the dynamic loader ignores LD_PRELOAD for it, so it cannot "
                "be measured this way (run a copy without the bit)\n", path);
        return 2;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* execvp says why */
    int dyn = run_dynamic(fd);
    close(fd);
    if (dyn == 0) {
        fprintf(stderr, "gpuprof run: %s is statically linked: nothing can "
                "be preloaded into it; link it with -lgpuprof and call "
                "gpuprof_init instead\n", path);
        return 2;
    }
    return 0;
}

/* A script's "#!INTERP [ARG]" line, as the kernel reads it (one optional
 * argument, the rest of the line); false when `path` is not a script. */
static bool run_shebang(const char *path, char *interp, size_t isz, char *arg,
                        size_t asz)
{
    char line[512];
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(line, sizeof(line), f) && line[0] == '#' && line[1] == '!';
    fclose(f);
    if (!ok)
        return false;
    char *p = line + 2, *e;
    p += strspn(p, " \t");
    e = p + strcspn(p, " \t\n");
    char *a = e + strspn(e, " \t");
    a[strcspn(a, "\n")] = '\0';
    for (size_t n = strlen(a); n && (a[n - 1] == ' ' || a[n - 1] == '\t');)
        a[--n] = '\0';
    *e = '\0';
    if (!*p || (size_t)snprintf(interp, isz, "%s", p) >= isz ||
        (size_t)snprintf(arg, asz, "%s", a) >= asz)
        return false;
    return true;
}

/* A script runs its interpreter, which is exec'd directly; that of
 * "#!/usr/bin/env NAME" is NAME from PATH (env, a wrapper, would only pass
 * the preload library on to it). *argv (argc
 * entries from argv[0]) becomes the interpreter's arguments, path its
 * file; up to 4 levels of scripts. Returns false when out of memory. */
static bool run_interpreter(char ***argv, int *argc, char *path, size_t psz)
{
    for (int level = 0; level < 4; level++) {
        char interp[PATH_MAX], arg[256], found[PATH_MAX];
        if (!run_shebang(path, interp, sizeof(interp), arg, sizeof(arg)))
            return true;
        const char *base = strrchr(interp, '/');
        base = base ? base + 1 : interp;
        bool env = !strcmp(base, "env") && arg[0] && arg[0] != '-' &&
                   !strchr(arg, ' ') && run_find(arg, found, sizeof(found));
        char **v = calloc((size_t)*argc + 3, sizeof(*v));
        char *script = strdup(path), *a0 = strdup(env ? arg : interp);
        char *a1 = !env && arg[0] ? strdup(arg) : NULL;
        if (!v || !script || !a0 || (!env && arg[0] && !a1)) {
            free(v), free(script), free(a0), free(a1);
            return false;
        }
        int n = 0;
        v[n++] = a0;
        if (a1)
            v[n++] = a1;
        v[n++] = script;
        for (int k = 1; k < *argc; k++)
            v[n++] = (*argv)[k];
        *argv = v; /* kept until the exec */
        *argc = n;
        snprintf(path, psz, "%s", env ? found : interp);
    }
    return true;
}

/* libgpuprof-preload.so beside the analysis library in use (build/lib, or
 * LIBDIR once installed); GPUPROF_PRELOAD_LIBRARY names another. */
static bool run_preload_path(char *out, size_t size)
{
    const char *env = getenv("GPUPROF_PRELOAD_LIBRARY");
    Dl_info di;
    if (env && *env)
        snprintf(out, size, "%s", env);
    else if (dladdr((void *)gpuprof_an_last_error, &di) && di.dli_fname &&
             strrchr(di.dli_fname, '/'))
        snprintf(out, size, "%.*s/libgpuprof-preload.so",
                 (int)(strrchr(di.dli_fname, '/') - di.dli_fname),
                 di.dli_fname);
    else
        return false;
    char real[PATH_MAX];
    if (realpath(out, real) && strlen(real) < size)
        memcpy(out, real, strlen(real) + 1);
    return access(out, R_OK) == 0;
}

/* LD_PRELOAD with the preload library first. */
static bool run_set_preload(const char *lib)
{
    const char *cur = getenv("LD_PRELOAD");
    if (!cur || !*cur)
        return setenv("LD_PRELOAD", lib, 1) == 0;
    size_t n = strlen(lib) + strlen(cur) + 2;
    char *v = malloc(n);
    if (!v)
        return false;
    snprintf(v, n, "%s:%s", lib, cur);
    bool ok = setenv("LD_PRELOAD", v, 1) == 0;
    free(v);
    return ok;
}

/* libgpuprof.so itself, beside the preload library, preloaded too: its
 * pthread functions (lib/host: joins, barriers, contended locks in the
 * trace) must come before the C library's, and as the preload library's
 * dependency it would be loaded after it. Absent: nothing (the program
 * runs without host-thread dependencies). */
static bool run_preload_self(const char *lib)
{
    char self[PATH_MAX + 32];
    snprintf(self, sizeof(self), "%.*s/libgpuprof.so.%d",
             (int)(strrchr(lib, '/') ? strrchr(lib, '/') - lib : 1),
             strrchr(lib, '/') ? lib : ".", GPUPROF_VERSION_MAJOR);
    return access(self, R_OK) != 0 || run_set_preload(self);
}

/* argv[1] is "run"; returns only when the program could not be started. */
static int run_program(int argc, char **argv)
{
    int i = 2, rc;
    unsetenv("GPUPROF_FOLLOW_CHILDREN");
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if ((rc = run_option(argc, argv, &i)) != 0)
            return rc < 0 ? 0 : rc;
    }
    if (i >= argc)
        return run_usage("%s", "no program to run");
    char path[PATH_MAX], lib[PATH_MAX];
    if (!run_find(argv[i], path, sizeof(path))) {
        fprintf(stderr, "gpuprof run: %s: command not found\n", argv[i]);
        return 127;
    }
    char **pargv = argv + i;
    int pargc = argc - i;
    if (!run_interpreter(&pargv, &pargc, path, sizeof(path))) {
        fprintf(stderr, "gpuprof run: out of memory\n");
        return 1;
    }
    if ((rc = run_check(pargv[0], path)) != 0)
        return rc;
    if (!run_preload_path(lib, sizeof(lib))) {
        fprintf(stderr, "gpuprof run: no preload library at %s (set "
                "GPUPROF_PRELOAD_LIBRARY)\n", lib);
        return 1;
    }
    const char *out = getenv("GPUPROF_OUTPUT");
    if (out && *out && *out != '/' && !run_set_output(out))
        return 1; /* absolute, for children that change directory */
    if (!out || !*out) { /* the library's default, for children too */
        const char *base = strrchr(path, '/');
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "gpuprof-%.200s-measurements",
                 base ? base + 1 : path);
        if (!run_set_output(dir))
            return 1;
    }
    if (run_mpi) { /* beside the preload library, after it */
        char pmpi[PATH_MAX + 32];
        snprintf(pmpi, sizeof(pmpi), "%.*s/libgpuprof-pmpi.so",
                 (int)(strrchr(lib, '/') ? strrchr(lib, '/') - lib : 1),
                 strrchr(lib, '/') ? lib : ".");
        if (access(pmpi, R_OK) != 0) {
            fprintf(stderr, "gpuprof run: --mpi: no %s (it is built when "
                    "mpicc is found)\n", pmpi);
            return 1;
        }
        if (!run_set_preload(pmpi))
            return 1;
    }
    char pid[32]; /* the process PROGRAM runs in: never a wrapper's helper */
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    if (!run_preload_self(lib))
        return 1;
    if (!run_set_preload(lib) || setenv("GPUPROF_RUN_PID", pid, 1) != 0)
        return 1;
    execv(path, pargv);
    fprintf(stderr, "gpuprof run: %s: %s\n", path, strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

#endif /* GPUPROF_ANALYSIS_AN_RUN_H */
