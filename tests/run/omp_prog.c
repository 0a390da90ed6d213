/*
 * omp_prog.c - an OpenMP program (clang -fopenmp, LLVM's libomp) whose wait
 * states and critical path are computed by hand, for
 * tests/scripts/host-deps.sh; linked with -lgpuprof (GP_LINKED: regions
 * named) or plain for `gpuprof run`. U = 1 ms (HOST_MS=N: N ms); work is
 * slept in the named region (work.h).
 *
 *   main "serial" 1 U; region 1 with 2 threads: thread 0 "light" 1 U,
 *   thread 1 "heavy" 4 U, an explicit barrier (thread 0 waits 3 U,
 *   blamed on "heavy"), then thread 0 "heavy2" 3 U, thread 1 "light2"
 *   1 U, the implicit barrier (thread 1 waits 2 U, blamed on "heavy2");
 *   main "between" 2 U (the worker idles: WaitAtFork ~2 U, blamed on
 *   "between"); region 2: thread 0 "last0" 1 U, thread 1 "last1" 2 U
 *   (thread 0 waits 1 U at the implicit barrier, blamed on "last1"; a
 *   worker's wait at the end of the last region would not be seen: LLVM
 *   tells it only when the next region begins). WaitAtBarrier x3 ~6 U,
 *   WaitAtFork x1 ~2 U. Path: serial, heavy, heavy2, between, last1: ~12
 *   U, through both threads, crossing three times.
 */
#include <omp.h>
#include <stdio.h>

#include "work.h"

int main(void)
{
    set_unit();
#ifdef GP_LINKED
    if (gpuprof_init(NULL) != GPUPROF_OK)
        fprintf(stderr, "omp_prog: %s\n", gpuprof_last_error());
#endif
    work("serial", 1);
#pragma omp parallel num_threads(2)
    {
        int id = omp_get_thread_num();
        work(id ? "heavy" : "light", id ? 4 : 1);
#pragma omp barrier
        work(id ? "light2" : "heavy2", id ? 1 : 3);
    }
    work("between", 2);
#pragma omp parallel num_threads(2)
    {
        int id = omp_get_thread_num();
        work(id ? "last1" : "last0", id ? 2 : 1);
    }
    printf("omp_prog: %d threads\n", omp_get_max_threads());
    return 0;
}
