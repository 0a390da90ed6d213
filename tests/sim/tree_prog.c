/*
 * tree_prog.c - a program whose calling context trees are known exactly,
 * for tests/scripts/runtime-frames.sh: no regions, so every call path
 * starts where the C library started the program or the thread. main()
 * launches "k_main" (1000 ns) from main_work(); a thread runs worker(),
 * which launches "k_thread" (2000 ns) twice from thread_work(); main then
 * waits for the device (a sync). So the trees shown are
 *
 *   <program root> -> main -> main_work -> <kernel launch> -> kernel k_main
 *                          -> <sync>
 *   <thread root> -> worker -> thread_work -> <kernel launch>
 *                                           -> kernel k_thread
 *
 * with the C library's frames (_start, __libc_start_main, ...; clone,
 * start_thread) above main and worker when asked for. Built with -g -O2;
 * the lines marked "at:" are where the script expects the calls.
 */
#include <pthread.h>
#include <stdio.h>

#include "backends/sim/sim.h"

__attribute__((noinline)) static void main_work(void)
{
    gpuprof__sim_kernel(0, "k_main", 1000); /* at: main_work */
    __asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
}

__attribute__((noinline)) static void thread_work(void)
{
    gpuprof__sim_kernel(1, "k_thread", 2000); /* at: thread_work */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *worker(void *arg)
{
    (void)arg;
    thread_work(); /* at: worker */
    __asm__ volatile("" ::: "memory");
    return NULL;
}

int main(void)
{
    gpuprof__sim_register(NULL);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "tree_prog: %s\n", gpuprof_last_error());
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    main_work(); /* at: main */
    return gpuprof_finalize() == GPUPROF_OK ? 0 : 1;
}
