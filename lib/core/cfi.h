/*
 * cfi.h - the frame rule of a return address, read from its module's
 * .eh_frame (cfi.c), for the hook's stack walk (fasttrace.c).
 *
 * A rule is one 64-bit word: how the caller's frame address (CFA) follows
 * from rsp or rbp, where the caller's rbp was saved, or that the walk must
 * leave this frame to libunwind (FT_BAD). x86-64 only.
 */
#ifndef GPUPROF_CORE_CFI_H
#define GPUPROF_CORE_CFI_H

#include <stdint.h>

/* 0 is "not known" (a table's empty slot); FT_BAD: leave it to libunwind. */
#define FT_KNOWN (UINT64_C(1) << 0)
#define FT_BAD (UINT64_C(1) << 1)      /* no simple rule: libunwind's walk */
#define FT_CFA_RBP (UINT64_C(1) << 2)  /* CFA = rbp + off, else rsp + off */
#define FT_RBP_SAVED (UINT64_C(1) << 3) /* caller's rbp at CFA + rbp_off */
#define FT_LAST (UINT64_C(1) << 4)     /* return address undefined: outermost */
#define FT_RBP_OFF(r) ((int16_t)(uint16_t)((r) >> 16))
#define FT_CFA_OFF(r) ((int32_t)(uint32_t)((r) >> 32))
/* The rule at return address `ip` (the instruction before it is the call):
 * its module found with dl_iterate_phdr (the loader's lock: never in a
 * signal handler), its FDE through the module's PT_GNU_EH_FRAME search
 * table, the call-frame instructions run up to ip - 1. FT_KNOWN | FT_BAD
 * for anything but the simple rules above: no module or unwind
 * information, a signal frame, a DWARF expression, a CFA in another
 * register, a return address not at CFA - 8. Any thread. */
uint64_t gpuprof__cfi_rule(uintptr_t ip);

#endif /* GPUPROF_CORE_CFI_H */
