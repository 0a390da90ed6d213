/*
 * busy.c - CPU work of a known length (busy.h).
 */
#include "busy.h"

#include <time.h>

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline, visibility("default"))) double busy_cpu(uint64_t ns)
{
    double x = 1;
    uint64_t end = thread_cpu_ns() + ns;
    do {
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    } while (thread_cpu_ns() < end);
    return x;
}
