/*
 * bench_channel.c - the SPSC channel between two threads.
 *
 *   channel_items_per_s   one producer thread pushing 16-byte items as fast
 *                         as it can, one consumer thread draining in
 *                         batches and pausing briefly after a small batch
 *                         (as the monitor sleeps between rounds); items
 *                         delivered per second (a full channel makes the
 *                         producer retry)
 *   channel_roundtrip_ns  ping-pong: A pushes to B, B pushes back; the time
 *                         of one round trip (two hand-overs between cores)
 * Medians of 5 runs.
 */
#include <pthread.h>
#include <stdio.h>

#include "bench/bench.h"
#include "core/channel.h"

#define ITEMS 20000000ull
#define TRIPS 200000
#define REPS 5

typedef struct msg {
    uint64_t seq, payload;
} msg;

static gp_chan_spsc a2b, b2a;

static void *produce(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < ITEMS; i++) {
        msg *m;
        while (!(m = gpuprof__chan_reserve(&a2b)))
            ;
        *m = (msg){i, i * 7};
        gpuprof__chan_commit(&a2b);
    }
    return NULL;
}

static void sum(void *ctx, const void *p)
{
    *(uint64_t *)ctx += ((const msg *)p)->payload;
}

static double throughput(void)
{
    gpuprof__chan_init(&a2b, sizeof(msg), 1 << 12, 1 << 12);
    pthread_t th;
    double t0 = bench_now_s();
    pthread_create(&th, NULL, produce, NULL);
    uint64_t got = 0, total = 0;
    while (got < ITEMS) {
        size_t n = gpuprof__chan_drain(&a2b, sum, &total, 0);
        got += n;
        /* Like the monitor, which sleeps between rounds: after a small
         * batch, let items accumulate instead of pulling the producer's
         * index line across cores once every few items. */
        if (n < 1024)
            for (int i = 0; i < 256; i++)
                __builtin_ia32_pause();
    }
    double t = bench_now_s() - t0;
    pthread_join(th, NULL);
    gpuprof__chan_destroy(&a2b);
    return (double)ITEMS / t + (double)(total & 0); /* total keeps the work */
}

static void *echo(void *arg)
{
    (void)arg;
    msg m;
    for (int i = 0; i < TRIPS; i++) {
        while (!gpuprof__chan_pop(&a2b, &m))
            ;
        gpuprof__chan_push(&b2a, &m);
    }
    return NULL;
}

static double roundtrip(void)
{
    gpuprof__chan_init(&a2b, sizeof(msg), 16, 16);
    gpuprof__chan_init(&b2a, sizeof(msg), 16, 16);
    pthread_t th;
    pthread_create(&th, NULL, echo, NULL);
    double t0 = bench_now_s();
    msg m = {0, 0};
    for (int i = 0; i < TRIPS; i++) {
        m.seq = (uint64_t)i;
        gpuprof__chan_push(&a2b, &m);
        while (!gpuprof__chan_pop(&b2a, &m))
            ;
    }
    double t = bench_now_s() - t0;
    pthread_join(th, NULL);
    gpuprof__chan_destroy(&a2b);
    gpuprof__chan_destroy(&b2a);
    return t * 1e9 / TRIPS;
}

int main(void)
{
    double tp[REPS], rt[REPS];
    for (int i = 0; i < REPS; i++) {
        tp[i] = throughput();
        rt[i] = roundtrip();
    }
    printf("BENCH channel_items_per_s %.3g items/s\n", bench_median(tp, REPS));
    printf("BENCH channel_roundtrip_ns %.0f ns\n", bench_median(rt, REPS));
    return 0;
}
