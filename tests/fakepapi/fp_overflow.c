/*
 * fp_overflow.c - the fake libpapi's PAPI_overflow (fakepapi.h, README.md).
 *
 * An event of a set may overflow every `threshold` of its counts, as
 * PAPI's overflow does: PAPI calls the handler from its own signal handler
 * with the interrupted context, so the fake does the same. The scripted
 * events (fake::WORK, fake::BYTES) overflow exactly: fakepapi_add raises
 * one signal on its own thread per threshold crossed since the set
 * started, before it returns, so a test knows each sample's count and call
 * path. perf::TASK-CLOCK overflows on a timer of the thread's CPU-time
 * clock every `threshold` ns (SIGEV_THREAD_ID), as PAPI's software
 * overflow does, one handler call per expiration (the kernel folds those
 * of a tick into one signal: its overrun). The signal is SIGRTMIN+2, PAPI's perf_event one; its
 * value names the set and the event, and anything else is ignored.
 *
 * Stricter than PAPI: a set must be stopped to change its overflows
 * (PAPI_EISRUN), the event must be in the set (PAPI_ENOEVNT), and events
 * that cannot overflow (fake::READS, perf::PAGE-FAULTS) are refused
 * (PAPI_ENOSUPP).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "fakepapi.h"

#define FP_SIG (SIGRTMIN + 2)
#define MINE 16

/* The calling thread's running sets with an overflow armed. */
static __thread int mine[MINE], nmine;
static pthread_mutex_t install_mu = PTHREAD_MUTEX_INITIALIZER;
static int installed;

static void *pc_of(const void *uc)
{
#if defined(__x86_64__)
    return uc ? (void *)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP]
              : NULL;
#elif defined(__aarch64__)
    return uc ? (void *)((const ucontext_t *)uc)->uc_mcontext.pc : NULL;
#else
    (void)uc;
    return NULL;
#endif
}

/* One overflow of event `i` of set `es` on this thread: PAPI's handler
 * with the interrupted context. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    if (!si || (si->si_code != SI_TIMER && si->si_code != SI_QUEUE))
        return;
    int e = errno;
    int es = si->si_value.sival_int >> 8, i = si->si_value.sival_int & 0xFF;
    fp_set *s = fp_set_of(es);
    /* A CPU-time timer's expirations the kernel folded into one signal
     * (it checks them at ticks) are overflows all the same. */
    int n = si->si_code == SI_TIMER && si->si_overrun > 0
                ? 1 + si->si_overrun
                : 1;
    for (int k = 0; k < n && s && s->running &&
                    pthread_equal(s->owner, pthread_self()) && i < s->n &&
                    s->threshold[i] && s->handler;
         k++)
        s->handler(es, pc_of(uc), 1LL << i, uc);
    errno = e;
}

static int install(void)
{
    pthread_mutex_lock(&install_mu);
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        installed = sigaction(FP_SIG, &sa, NULL) == 0;
    }
    pthread_mutex_unlock(&install_mu);
    return installed;
}

FP_API int PAPI_overflow(int es, int code, int threshold, int flags,
                         PAPI_overflow_handler_t handler)
{
    fp_set *s = fp_set_of(es);
    if (!s || threshold < 0 || flags != 0 || (threshold && !handler))
        return PAPI_EINVAL;
    if (s->running)
        return PAPI_EISRUN;
    int i = 0;
    while (i < s->n && s->ev[i]->code != code)
        i++;
    if (i == s->n)
        return PAPI_ENOEVNT;
    fp_source src = s->ev[i]->src;
    if (threshold && src != FP_SCRIPT0 && src != FP_SCRIPT1 &&
        src != FP_CPU_NS)
        return PAPI_ENOSUPP;
    if (threshold && !install())
        return PAPI_ESYS;
    s->threshold[i] = threshold;
    if (threshold)
        s->handler = handler;
    return PAPI_OK;
}

FP_API int PAPI_get_overflow_event_index(int es, long long vector, int *array,
                                         int *number)
{
    fp_set *s = fp_set_of(es);
    if (!s || !array || !number || *number <= 0 || !vector)
        return PAPI_EINVAL;
    int n = 0;
    for (int i = 0; i < s->n && n < *number; i++)
        if (vector & (1LL << i))
            array[n++] = i;
    *number = n;
    return PAPI_OK;
}

static void send_own(int es, int i)
{
    union sigval v;
    v.sival_int = es << 8 | i;
    pthread_sigqueue(pthread_self(), FP_SIG, v);
}

void fp_overflow_started(int es)
{
    fp_set *s = fp_set_of(es);
    int armed = 0;
    for (int i = 0; i < s->n; i++) {
        if (!s->threshold[i])
            continue;
        armed = 1;
        s->next[i] = s->threshold[i]; /* counts since start */
        if (s->ev[i]->src != FP_CPU_NS)
            continue;
        struct sigevent sev;
        memset(&sev, 0, sizeof(sev));
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = FP_SIG;
        sev.sigev_value.sival_int = es << 8 | i;
        sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
        s->timed[i] = timer_create(CLOCK_THREAD_CPUTIME_ID, &sev,
                                   &s->timer[i]) == 0;
        if (s->timed[i]) {
            struct itimerspec its;
            its.it_interval.tv_sec = s->threshold[i] / 1000000000LL;
            its.it_interval.tv_nsec = s->threshold[i] % 1000000000LL;
            its.it_value = its.it_interval;
            timer_settime(s->timer[i], 0, &its, NULL);
        }
    }
    if (armed && nmine < MINE)
        mine[nmine++] = es;
}

void fp_overflow_stopped(int es)
{
    fp_set *s = fp_set_of(es);
    for (int i = 0; i < s->n; i++)
        if (s->timed[i]) {
            timer_delete(s->timer[i]);
            s->timed[i] = 0;
        }
    for (int k = 0; k < nmine; k++)
        if (mine[k] == es)
            mine[k--] = mine[--nmine];
}

void fp_overflow_scripted(void)
{
    for (int k = 0; k < nmine; k++) {
        int es = mine[k];
        fp_set *s = fp_set_of(es);
        for (int i = 0; s && i < s->n; i++) {
            fp_source src = s->ev[i]->src;
            if (!s->threshold[i] || (src != FP_SCRIPT0 && src != FP_SCRIPT1))
                continue;
            long long since = fp_value(s->ev[i]) - s->zero[i];
            while (since >= s->next[i]) {
                s->next[i] += s->threshold[i];
                send_own(es, i); /* handled before it returns */
            }
        }
    }
}
