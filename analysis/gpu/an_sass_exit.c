/*
 * an_sass_exit.c - samples that belong to an EXIT but sit after it
 * (an_sass.h). The hardware files the stalls of warps that already
 * exited -- waiting for their stores to drain -- at the address after
 * their EXIT. When the kernel's code ends there, that address is the
 * entry of whatever function the listing puts next, often a math slow
 * path the kernel never called: on the H100 fixture, the 32 samples at
 * 0xb00 of `divergent` sit on the first instruction of
 * __cuda_sm20_sqrt_rn_f32_slowpath, which Nsight Compute counts 0
 * executions of, and `calls` has 140 drain samples on the entry of fib,
 * which it does call. So:
 *
 *  - drain samples at the instruction just after an EXIT (predicated or
 *    not) are the EXIT's;
 *  - every sample of an instruction just after an unpredicated EXIT,
 *    where another function begins, is the EXIT's when that function has
 *    no other sampled instruction: code that ran would have been sampled
 *    beyond its first instruction.
 */
#include <string.h>

#include "an_sass.h"

uint32_t gpuprof__sass_exit_before(const gpuprof__sass_bin *b, uint32_t i)
{
    if (i == 0 || i >= b->ninsn)
        return SASS_NONE;
    const sass_insn *e = &b->insn[i - 1];
    if (e->cls != SC_EXIT || strncmp(e->op, "EXIT", 4) ||
        e->offset >= b->insn[i].offset ||
        strcmp(b->func[e->func].section, b->func[b->insn[i].func].section))
        return SASS_NONE;
    return i - 1;
}

uint32_t gpuprof__sass_exit_owner(const gpuprof__sass_bin *b, uint32_t i,
                                  const double *samples, uint32_t first,
                                  uint32_t n)
{
    uint32_t e = gpuprof__sass_exit_before(b, i);
    if (e == SASS_NONE || b->insn[e].pred >= 0 ||
        b->insn[e].func == b->insn[i].func)
        return SASS_NONE;
    const sass_func *f = &b->func[b->insn[i].func];
    if (b->insn[i].offset != f->start)
        return SASS_NONE;
    for (uint32_t k = f->first; k < f->first + f->count; k++)
        if (k != i && k >= first && k - first < n && samples[k - first] > 0)
            return SASS_NONE; /* it ran: its samples are its own */
    return e;
}
