/*
 * check_channel.c - the SPSC channel: order, recycling without allocation,
 * the full and empty edges, growth up to the bound, drops counted exactly,
 * batched drains, and a producer/consumer stress run (under TSan in
 * `make check`; longer with GPUPROF_STRESS=long).
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/channel.h"
#include "support/suite.h"

typedef struct item {
    uint64_t seq;
    uint64_t payload[3];
} item;

static item make(uint64_t seq) { return (item){seq, {seq * 3, seq ^ 0xABCDEF, ~seq}}; }

static void check_item(const item *it, uint64_t seq)
{
    ck_assert_uint_eq(it->seq, seq);
    ck_assert_uint_eq(it->payload[0], seq * 3);
    ck_assert_uint_eq(it->payload[1], seq ^ 0xABCDEF);
    ck_assert_uint_eq(it->payload[2], ~seq);
}

START_TEST(order_and_recycling)
{
    gp_chan_spsc c;
    ck_assert(gpuprof__chan_init(&c, sizeof(item), 4, 4));
    ck_assert(gpuprof__chan_empty(&c));
    item it, x;
    for (uint64_t i = 0; i < 3; i++) {
        it = make(i);
        ck_assert(gpuprof__chan_push(&c, &it));
    }
    ck_assert(!gpuprof__chan_empty(&c));
    for (uint64_t i = 0; i < 3; i++) {
        ck_assert(gpuprof__chan_pop(&c, &x));
        check_item(&x, i);
    }
    ck_assert(!gpuprof__chan_pop(&c, &x));
    /* 10,000 items through 4 slots: the same ring, never a new segment. */
    gp_chan_seg *first = c.pseg;
    for (uint64_t i = 0; i < 10000; i++) {
        it = make(i);
        ck_assert(gpuprof__chan_push(&c, &it));
        if (i % 3 == 2)
            for (uint64_t k = i - 2; k <= i; k++) {
                ck_assert(gpuprof__chan_pop(&c, &x));
                check_item(&x, k);
            }
    }
    ck_assert_ptr_eq(c.pseg, first);
    ck_assert_uint_eq(c.capacity, 4);
    ck_assert_uint_eq(gpuprof__chan_dropped(&c), 0);
    gpuprof__chan_destroy(&c);
}
END_TEST

START_TEST(full_edge_drops)
{
    gp_chan_spsc c;
    ck_assert(gpuprof__chan_init(&c, sizeof(item), 8, 8));
    item it, x;
    for (uint64_t i = 0; i < 8; i++) {
        it = make(i);
        ck_assert(gpuprof__chan_push(&c, &it));
    }
    it = make(8);
    ck_assert(!gpuprof__chan_push(&c, &it));
    ck_assert(!gpuprof__chan_push(&c, &it));
    ck_assert_uint_eq(gpuprof__chan_dropped(&c), 2);
    ck_assert(gpuprof__chan_pop(&c, &x));
    check_item(&x, 0);
    it = make(100);
    ck_assert(gpuprof__chan_push(&c, &it)); /* the freed slot is reused */
    for (uint64_t i = 1; i < 8; i++) {
        ck_assert(gpuprof__chan_pop(&c, &x));
        check_item(&x, i);
    }
    ck_assert(gpuprof__chan_pop(&c, &x));
    check_item(&x, 100);
    ck_assert(gpuprof__chan_empty(&c));
    gpuprof__chan_destroy(&c);
}
END_TEST

START_TEST(grows_to_bound)
{
    gp_chan_spsc c;
    ck_assert(gpuprof__chan_init(&c, sizeof(item), 2, 64));
    item it, x;
    for (uint64_t i = 0; i < 64; i++) {
        it = make(i);
        ck_assert_msg(gpuprof__chan_push(&c, &it), "push %llu", (unsigned long long)i);
    }
    it = make(64);
    ck_assert(!gpuprof__chan_push(&c, &it));
    ck_assert_uint_eq(gpuprof__chan_dropped(&c), 1);
    ck_assert_uint_eq(c.capacity, 64);
    for (uint64_t i = 0; i < 64; i++) {
        ck_assert(gpuprof__chan_pop(&c, &x));
        check_item(&x, i);
    }
    ck_assert(gpuprof__chan_empty(&c));
    /* Every segment but the last was handed back. */
    ck_assert_uint_eq(c.capacity - gp_load_relaxed(&c.released), c.cseg->mask + 1);
    ck_assert_ptr_eq(c.cseg, c.pseg);
    gpuprof__chan_destroy(&c);
}
END_TEST

static void count(void *ctx, const void *p)
{
    uint64_t *next = ctx;
    check_item(p, (*next)++);
}

START_TEST(drain_in_batches)
{
    gp_chan_spsc c;
    ck_assert(gpuprof__chan_init(&c, sizeof(item), 4, 0)); /* unbounded */
    for (uint64_t i = 0; i < 1000; i++) {
        item it = make(i);
        ck_assert(gpuprof__chan_push(&c, &it));
    }
    uint64_t next = 0;
    ck_assert_uint_eq(gpuprof__chan_drain(&c, count, &next, 10), 10);
    ck_assert_uint_eq(next, 10);
    ck_assert_uint_eq(gpuprof__chan_drain(&c, count, &next, 0), 990);
    ck_assert_uint_eq(next, 1000);
    ck_assert_uint_eq(gpuprof__chan_drain(&c, count, &next, 0), 0);
    ck_assert_uint_eq(gpuprof__chan_dropped(&c), 0);
    gpuprof__chan_destroy(&c);
}
END_TEST

typedef struct stress {
    gp_chan_spsc c;
    uint64_t n;
    _Atomic int done;
} stress;

static void *producer(void *arg)
{
    stress *s = arg;
    for (uint64_t i = 0; i < s->n; i++) {
        item it = make(i);
        gpuprof__chan_push(&s->c, &it); /* a full channel drops: counted */
    }
    gp_store_release(&s->done, 1);
    return NULL;
}

static void run_stress(uint64_t max_items)
{
    const char *env = getenv("GPUPROF_STRESS");
    stress s;
    s.n = env && !strcmp(env, "long") ? 20000000 : 300000;
    atomic_init(&s.done, 0);
    ck_assert(gpuprof__chan_init(&s.c, sizeof(item), 16, max_items));
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, producer, &s), 0);
    uint64_t got = 0, last = 0;
    item x;
    for (;;) {
        int finished = gp_load_acquire(&s.done);
        while (gpuprof__chan_pop(&s.c, &x)) {
            ck_assert(got == 0 || x.seq > last); /* order, even with drops */
            check_item(&x, x.seq);
            last = x.seq;
            got++;
        }
        if (finished)
            break;
    }
    pthread_join(th, NULL);
    ck_assert_uint_eq(got + gpuprof__chan_dropped(&s.c), s.n);
    if (!max_items)
        ck_assert_uint_eq(got, s.n);
    gpuprof__chan_destroy(&s.c);
}

START_TEST(stress_unbounded) { run_stress(0); }
END_TEST
START_TEST(stress_bounded) { run_stress(64); }
END_TEST

int main(void)
{
    const test_case cases[] = {
        {"order_and_recycling", order_and_recycling, 300},
        {"full_edge", full_edge_drops, 300},
        {"grows_to_bound", grows_to_bound, 300},
        {"drain", drain_in_batches, 300},
        {"stress_unbounded", stress_unbounded, 300},
        {"stress_bounded", stress_bounded, 300},
    };
    return RUN_SUITE("channel", cases);
}
