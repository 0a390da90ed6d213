/*
 * service.c - the library's one background thread: periodic flushes, and a
 * last profile when the process is told to terminate.
 *
 * The thread sleeps in poll() on a pipe, for the flush period (or forever
 * when there is none). Two things wake it: a byte from gpuprof_finalize
 * (stop), or a byte from our SIGTERM/SIGINT handler, which does the only
 * async-signal-safe thing there is to do (write(2) the signal number). The
 * thread then finalizes, the work a signal handler may not do (it locks and
 * allocates), restores the default action and re-sends the signal to the
 * process, which ends as it would have without us, with its profile
 * written. If another thread is finalizing at that moment, the signal is
 * left pending and that finalize re-sends it once the profile is written. Handlers are installed only where the program left the default
 * action, so a program that handles its own signals keeps them; they are
 * removed at finalize. The thread blocks every signal, so it never runs a
 * handler of the program's.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

static int pipefd[2] = {-1, -1};
static pthread_t svc;
static bool running;
static const int sigs[] = {SIGTERM, SIGINT};
static bool installed[2];
static _Atomic int pending_sig; /* a signal whose delivery waits on finalize */

static void on_signal(int sig)
{
    int e = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(pipefd[1], &b, 1);
    (void)w; /* a full pipe already holds a wake-up */
    errno = e;
}

static void install_handlers(void)
{
    for (int i = 0; i < 2; i++) {
        struct sigaction old, sa;
        installed[i] = false;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue; /* the program handles it (or ignores it): leave it */
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        installed[i] = sigaction(sigs[i], &sa, NULL) == 0;
    }
}

/* Puts back the default action where we installed ours. */
static void remove_handlers(void)
{
    for (int i = 0; i < 2; i++) {
        struct sigaction cur;
        if (!installed[i] || sigaction(sigs[i], NULL, &cur) != 0)
            continue;
        if (cur.sa_handler == on_signal) /* not replaced by the program */
            signal(sigs[i], SIG_DFL);
        installed[i] = false;
    }
}

static void resend(int sig)
{
    signal(sig, SIG_DFL);
    kill(getpid(), sig); /* to the process: a thread that accepts it */
}

static void terminate(int sig)
{
    gpuprof__log(GPUPROF_LOG_INFO, "signal %d: writing the final profile", sig);
    gp_store_release(&pending_sig, sig);
    /* Finalizes and re-sends the signal under init_lock; when another
     * thread is finalizing, that finalize re-sends it. */
    (void)gpuprof__finalize_for_signal();
}

void gpuprof__service_deliver_pending(void)
{
    int sig = gp_exchange_acq_rel(&pending_sig, 0);
    if (sig)
        resend(sig);
}

static void *service(void *arg)
{
    (void)arg;
    int64_t ms = G.cfg.flush_period_ms;
    int timeout = ms <= 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms;
    for (;;) {
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
        int rc = poll(&p, 1, timeout);
        if (rc == 0) {
            gpuprof__backends_call(GP_BE_FLUSH);
            gpuprof__write_profile(false);
            continue;
        }
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        unsigned char b;
        if (read(pipefd[0], &b, 1) != 1)
            continue;
        if (b != 0)
            terminate(b);
        break; /* stopped, or finalized by a signal */
    }
    return NULL;
}

static bool make_pipe(void)
{
    for (int i = 0; i < 2; i++)
        if (pipefd[i] >= 0)
            close(pipefd[i]);
    pipefd[0] = pipefd[1] = -1;
    return pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) == 0;
}

void gpuprof__service_start(void)
{
    bool signals = G.cfg.signals;
    if (G.cfg.flush_period_ms <= 0 && !signals)
        return;
    if (!make_pipe()) {
        gpuprof__log(GPUPROF_LOG_WARN, "cannot create the service pipe: %s; "
                     "no periodic flushes, no profile on SIGTERM", strerror(errno));
        return;
    }
    running = gpuprof__spawn(&svc, service, NULL) == 0;
    if (!running) {
        gpuprof__log(GPUPROF_LOG_WARN, "cannot start the service thread; "
                     "no periodic flushes, no profile on SIGTERM");
        return;
    }
    if (signals)
        install_handlers();
}

void gpuprof__service_stop(void)
{
    remove_handlers();
    if (!running)
        return;
    running = false;
    if (pthread_equal(pthread_self(), svc))
        return; /* finalize from the thread itself: it ends by itself */
    unsigned char stop = 0;
    while (write(pipefd[1], &stop, 1) < 0 && errno == EINTR)
        ;
    pthread_join(svc, NULL);
}

void gpuprof__service_atfork_child(void)
{
    /* The thread stayed in the parent. Starting one here is not safe after
     * a fork of a multi-threaded process (only async-signal-safe calls are,
     * until exec), so the child goes without: its profile is written at
     * exit or by gpuprof_flush. Its inherited handlers would write to a
     * pipe nobody reads, so they go too: SIGTERM ends the child as usual. */
    running = false;
    remove_handlers();
    for (int i = 0; i < 2; i++)
        if (pipefd[i] >= 0)
            close(pipefd[i]);
    pipefd[0] = pipefd[1] = -1;
}
