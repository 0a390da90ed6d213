/*
 * an_occupancy.c - how many blocks of a kernel one SM holds at once
 * (an_advise.h), by NVIDIA's documented occupancy rules (the CUDA
 * occupancy calculator, cuda_occupancy.h): the least of four limits.
 *
 *  - warps: the SM's threads over the block's warps (threads rounded up
 *    to whole warps);
 *  - blocks: the SM's most resident blocks;
 *  - registers: a warp's registers are rounded up to the allocation unit
 *    (256); each of the SM's sub-partitions (its warp schedulers) holds
 *    as many warps as its quarter of the register file allows; a block
 *    whose registers exceed the block limit cannot run;
 *  - shared memory: the block's static and dynamic shared memory plus
 *    what the driver reserves per block, rounded up to the allocation
 *    unit (128 bytes from compute capability 8, 256 before), into the
 *    SM's shared memory (the largest carveout: the driver picks one that
 *    fits).
 *
 * The device's limits come from its runtime (DEVICES); what the runtime
 * does not say (the allocation units, the sub-partitions) follows from the
 * compute capability. A limit the device did not describe is no limit.
 * Checked against Nsight Compute's "Waves Per SM" of the six fixture
 * kernels (check_an_advise).
 */
#include <string.h>

#include "an_advise.h"

const char *const gpuprof__adv_limit_name[ADV_LIMIT_NONE + 1] = {
    "warps per SM", "registers", "shared memory", "blocks per SM", "nothing"};

typedef struct key_field {
    const char *key;
    size_t at;
    bool wide;
} key_field;

#define F32(k, f) {k, offsetof(adv_device, f), false}
#define F64(k, f) {k, offsetof(adv_device, f), true}
static const key_field KEYS[] = {
    F32("compute_major", cc_major),
    F32("compute_minor", cc_minor),
    F32("sm_count", sms),
    F32("warp_size", warp),
    F32("max_threads_per_block", max_threads_block),
    F32("max_threads_per_sm", max_threads_sm),
    F32("max_blocks_per_sm", max_blocks_sm),
    F32("registers_per_sm", regs_sm),
    F32("registers_per_block", regs_block),
    F64("shared_bytes_per_sm", smem_sm),
    F64("shared_bytes_per_block", smem_block),
    F64("shared_bytes_reserved", smem_reserved),
};

void gpuprof__adv_device_set(adv_device *d, const char *key, uint64_t v)
{
    for (size_t i = 0; i < sizeof(KEYS) / sizeof(KEYS[0]); i++) {
        if (strcmp(KEYS[i].key, key))
            continue;
        char *at = (char *)d + KEYS[i].at;
        if (KEYS[i].wide) {
            memcpy(at, &v, sizeof(v));
        } else {
            uint32_t x = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            memcpy(at, &x, sizeof(x));
        }
        d->known = true;
        return;
    }
}

uint32_t gpuprof__adv_schedulers(const adv_device *d)
{
    return d->cc_major == 6 && d->cc_minor == 0 ? 2 : 4;
}

static uint32_t up(uint64_t x, uint64_t unit)
{
    uint64_t v = (x + unit - 1) / unit * unit;
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The registers' limit on blocks per SM (UINT32_MAX: none). */
static uint32_t by_registers(const adv_device *d, uint32_t warps,
                             uint32_t regs)
{
    if (!regs || !d->regs_sm)
        return UINT32_MAX;
    uint32_t k = gpuprof__adv_schedulers(d);
    uint32_t per_warp = up((uint64_t)regs * (d->warp ? d->warp : 32), 256);
    uint32_t max_regs = d->cc_major >= 7 || !d->cc_major ? 256 : 255;
    /* The block's registers: as allocated, and as the hardware checks
     * them (its warps rounded up to whole sets of sub-partitions). */
    if (regs > max_regs ||
        (d->regs_block &&
         (uint64_t)per_warp * up(warps, k) > d->regs_block))
        return 0;
    uint32_t per_partition = d->regs_sm / k / per_warp;
    return per_partition * k / warps;
}

/* Shared memory's limit on blocks per SM (UINT32_MAX: none). */
static uint32_t by_shared(const adv_device *d, uint64_t shared)
{
    if (!d->smem_sm)
        return UINT32_MAX;
    uint64_t need = shared + d->smem_reserved;
    if (!need)
        return UINT32_MAX;
    need = up(need, d->cc_major >= 8 || !d->cc_major ? 128 : 256);
    if (d->smem_block && shared > d->smem_block)
        return 0;
    uint64_t n = d->smem_sm / need;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t gpuprof__adv_blocks_per_sm(const adv_device *d, uint32_t threads,
                                    uint32_t regs, uint64_t shared,
                                    adv_limit *limit)
{
    uint32_t warp = d->warp ? d->warp : 32;
    uint32_t warps = (threads + warp - 1) / warp;
    uint32_t lim[ADV_LIMIT_NONE] = {UINT32_MAX, UINT32_MAX, UINT32_MAX,
                                    UINT32_MAX};
    if (!warps || (d->max_threads_block && threads > d->max_threads_block)) {
        *limit = ADV_LIMIT_WARPS;
        return 0;
    }
    if (d->max_threads_sm)
        lim[ADV_LIMIT_WARPS] = d->max_threads_sm / warp / warps;
    lim[ADV_LIMIT_REGISTERS] = by_registers(d, warps, regs);
    lim[ADV_LIMIT_SHARED] = by_shared(d, shared);
    if (d->max_blocks_sm)
        lim[ADV_LIMIT_BLOCKS] = d->max_blocks_sm;
    *limit = ADV_LIMIT_NONE;
    uint32_t best = UINT32_MAX;
    for (int i = 0; i < ADV_LIMIT_NONE; i++)
        if (lim[i] < best) { /* ties: the first (warps before blocks) */
            best = lim[i];
            *limit = (adv_limit)i;
        }
    return best;
}
