/*
 * plain.c - a program that never calls libgpuprof, for `gpuprof run`
 * (tests/scripts/gpuprof-run.sh): it copies stdin to stdout, prints its
 * pid on stderr, optionally runs a child program (fork + exec, or fork
 * without exec), then exits with the status or the signal it is given.
 *
 *   plain EXIT            exit(EXIT)
 *   plain EXIT exec PROG  run PROG (fork + execvp), wait, then exit(EXIT)
 *   plain EXIT fork       fork a child that exits 0 without exec
 *   plain -SIG            raise(SIG)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
        fwrite(buf, 1, n, stdout);
    fprintf(stderr, "pid %d\n", (int)getpid());
    if (argc > 1 && argv[1][0] == '-') {
        fflush(NULL);
        raise(atoi(argv[1] + 1));
        return 99;
    }
    if (argc > 2) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            if (!strcmp(argv[2], "exec") && argc > 3)
                execvp(argv[3], argv + 3);
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    return argc > 1 ? atoi(argv[1]) : 0;
}
