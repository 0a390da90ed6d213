/*
 * tests/run/cpu_burn.c - threads that burn known CPU time in known
 * functions, for tests/scripts/cpu-samples.sh (CPU samples, doc/CORE.md
 * "CPU samples"). Plain C: measured by `gpuprof run`, no call into the
 * library.
 *
 *   cpu_burn burn        main burns 300 ms in burn_main; a thread it
 *                        starts burns 150 ms in burn_thread; main joins it
 *   cpu_burn ownsig      the same with a SIGPROF handler and an
 *                        ITIMER_PROF timer of the program's own: it must
 *                        keep receiving its signals (printed: "own signals
 *                        N", N > 0) and be measured all the same
 *   cpu_burn threads N   N threads made and joined one after another, each
 *                        burning 1 ms; then prints how many POSIX timers
 *                        the process still holds (/proc/self/timers):
 *                        "timers left N"
 *   cpu_burn fork        burns 100 ms, forks; the child burns 200 ms in
 *                        burn_child and exits; the parent waits
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static unsigned long long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull +
           (unsigned long long)ts.tv_nsec;
}

/* ns of this thread's CPU time, spent here (not inlined: the function
 * names the samples). */
__attribute__((noinline)) static void spin(unsigned long long ns)
{
    double x = 1;
    unsigned long long end = cpu_ns() + ns;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
    } while (cpu_ns() < end);
    sink += x;
}

/* Global, so that the report names them whatever the optimization. */
void burn_main(void), burn_thread(void), burn_child(void), burn_short(void);
__attribute__((noinline)) void burn_main(void) { spin(300000000ull); }
__attribute__((noinline)) void burn_thread(void) { spin(150000000ull); }
__attribute__((noinline)) void burn_child(void) { spin(200000000ull); }
__attribute__((noinline)) void burn_short(void) { spin(1000000ull); }

static void *thread_main(void *arg)
{
    (void)arg;
    burn_thread();
    return NULL;
}

static void *short_main(void *arg)
{
    (void)arg;
    burn_short();
    return NULL;
}

static volatile sig_atomic_t own_signals;
static void on_prof(int sig)
{
    (void)sig;
    own_signals++;
}

static int burn(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL))
        return 1;
    burn_main();
    return pthread_join(t, NULL) ? 1 : 0;
}

static int timers_left(void)
{
    FILE *f = fopen("/proc/self/timers", "r");
    if (!f)
        return -1;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof(line), f))
        n += !strncmp(line, "ID:", 3);
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "burn";
    if (!strcmp(what, "burn"))
        return burn();
    if (!strcmp(what, "ownsig")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_prof;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        struct itimerval it = {{0, 2000}, {0, 2000}}; /* 2 ms of CPU */
        if (sigaction(SIGPROF, &sa, NULL) || setitimer(ITIMER_PROF, &it, NULL))
            return 1;
        int rc = burn();
        struct itimerval off;
        memset(&off, 0, sizeof(off));
        setitimer(ITIMER_PROF, &off, NULL);
        printf("own signals %d\n", (int)own_signals);
        return rc;
    }
    if (!strcmp(what, "threads")) {
        int n = argc > 2 ? atoi(argv[2]) : 1000;
        for (int i = 0; i < n; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, short_main, NULL) ||
                pthread_join(t, NULL))
                return 1;
        }
        printf("timers left %d\n", timers_left());
        return 0;
    }
    if (!strcmp(what, "fork")) {
        spin(100000000ull);
        pid_t pid = fork();
        if (pid == 0) {
            burn_child();
            exit(0); /* not _exit: the child's profile is written at exit */
        }
        int st;
        return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
                       WEXITSTATUS(st) == 0
                   ? 0
                   : 1;
    }
    fprintf(stderr, "usage: cpu_burn burn|ownsig|threads N|fork\n");
    return 2;
}
