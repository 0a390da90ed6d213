/*
 * sim_demo.c - a small "GPU application" on the simulated GPU, for
 * `make sim-demo` and tests/scripts/sim-report.sh: two host threads, each
 * with its own stream, a time-stepping loop of kernels and copies beneath
 * user regions and a few levels of calls, a graph launch and a sync. White-box:
 * it uses the sim backend's test API (lib/backends/sim/sim.h).
 *
 * Exact expectations (checked by the script): per thread 20 steps; each
 * step launches "stencil" (3000 ns) and "reduce" (1000 ns) from
 * compute_step() and copies 1 MiB device-to-host (2000 ns) from
 * exchange_halo(); setup() copies 8 MiB host-to-device (16000 ns) once and
 * runs the graph {"init_a" 500 ns, "init_b" 700 ns}.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/sim/sim.h"

#define STEPS 20

void setup(unsigned stream);
void compute_step(unsigned stream);
void exchange_halo(unsigned stream);
void timestep_loop(unsigned stream);

__attribute__((noinline)) void setup(unsigned stream)
{
    gpuprof_region_begin("setup");
    gpuprof__sim_copy(stream, GPUPROF_OP_COPY_H2D, 8u << 20, 16000);
    const char *names[2] = {"init_a", "init_b"};
    const uint64_t durs[2] = {500, 700};
    gpuprof__sim_graph(stream, 2, names, durs);
    gpuprof_region_end("setup");
}

__attribute__((noinline)) void compute_step(unsigned stream)
{
    gpuprof__sim_kernel(stream, "stencil", 3000);
    gpuprof__sim_kernel(stream, "reduce", 1000);
    /* Keep this frame: a call in tail position leaves no frame to unwind,
     * and its operations would show beneath the caller (true of every
     * unwinder; -fno-optimize-sibling-calls keeps them everywhere). */
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void exchange_halo(unsigned stream)
{
    gpuprof__sim_copy(stream, GPUPROF_OP_COPY_D2H, 1u << 20, 2000);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void timestep_loop(unsigned stream)
{
    gpuprof_region_begin("timesteps");
    for (int i = 0; i < STEPS; i++) {
        compute_step(stream);
        exchange_halo(stream);
    }
    gpuprof_region_end("timesteps");
}

static void *rank_thread(void *arg)
{
    unsigned stream = (unsigned)(uintptr_t)arg;
    char name[32];
    snprintf(name, sizeof(name), "host-%u", stream);
    gpuprof_thread_set_name(name);
    setup(stream);
    timestep_loop(stream);
    gpuprof__sim_sync();
    return NULL;
}

int main(void)
{
    gpuprof__sim_register(NULL);
    if (gpuprof_init(NULL) != GPUPROF_OK) {
        fprintf(stderr, "sim_demo: %s\n", gpuprof_last_error());
        return 1;
    }
    pthread_t th[2];
    for (unsigned i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, rank_thread, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    char path[4096];
    gpuprof_output_path(path, sizeof(path));
    gpuprof_status st = gpuprof_finalize();
    printf("sim_demo: wrote %s\n", path);
    return st == GPUPROF_OK ? 0 : 1;
}
