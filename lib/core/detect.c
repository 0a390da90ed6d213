/*
 * detect.c - what the inefficiency detectors of every backend share (seed
 * 002 §IV.B; doc/CORE.md "Detectors"). A backend knows the vendor's facts
 * (which call reads data back, which context a kernel runs in, what a
 * build compiled); the bookkeeping that turns them into findings, and how a
 * finding reaches the profile, are here:
 *
 *  - gpuprof__detect_note: a finding is a count of a detect.* metric on the
 *    operation where it fired (a note: no count, no time), so `gpuprof
 *    report` lists it with its calling context like any metric;
 *  - data read back then sent again (detect.output_as_input): host ranges
 *    that received device data (the last DET_READBACKS of them), and
 *    whether a host-to-device transfer sends from one of them;
 *  - a kernel used in several contexts (detect.kernel_multi_context): the
 *    contexts each kernel name was launched in (up to DET_CTX each).
 *
 * The launch->wait detector needs nothing from a backend: it lives with
 * the blame in blame.c. Any thread; one mutex, taken only by transfers and
 * launches that a backend checks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/gpu.h"
#include "core/internal.h"

#define DET_READBACKS 64
#define DET_CTX 4

static pthread_mutex_t det_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t lo, hi; } readback[DET_READBACKS];
static unsigned nreadback, readback_next;

typedef struct kctx {
    uint32_t name; /* intern id; 0: empty slot */
    uint32_t n;
    uintptr_t ctx[DET_CTX];
} kctx;
static kctx *ktab;
static uint32_t kcap, kused; /* kcap: a power of two */

void gpuprof__detect_note(uint64_t corr, uint8_t metric, uint64_t value)
{
    if (!corr || !value)
        return;
    gpuprof_activity a = GPUPROF_ACTIVITY_INIT;
    a.correlation = corr;
    a.kind = GPUPROF_OP_OTHER;
    a.flags = GP_ACT_NOTE | GPUPROF_ACTIVITY_MORE;
    gpuprof__activity_submit_x(&a, (uint32_t)GP_NO_BINARY, 1, &metric, &value);
}

void gpuprof__detect_readback(const void *ptr, size_t size)
{
    if (!ptr || !size)
        return;
    pthread_mutex_lock(&det_mu);
    readback[readback_next].lo = (uintptr_t)ptr;
    readback[readback_next].hi = (uintptr_t)ptr + size;
    readback_next = (readback_next + 1) % DET_READBACKS;
    if (nreadback < DET_READBACKS)
        nreadback++;
    pthread_mutex_unlock(&det_mu);
}

bool gpuprof__detect_sent_again(const void *ptr, size_t size)
{
    if (!ptr || !size)
        return false;
    uintptr_t lo = (uintptr_t)ptr, hi = lo + size;
    bool hit = false;
    pthread_mutex_lock(&det_mu);
    for (unsigned i = 0; i < nreadback && !hit; i++)
        hit = lo < readback[i].hi && readback[i].lo < hi;
    pthread_mutex_unlock(&det_mu);
    return hit;
}

/* Under det_mu: the slot of `name`, made when absent (NULL: no memory). */
static kctx *kslot(uint32_t name)
{
    if ((kused + 1) * 2 > kcap) {
        uint32_t cap = kcap ? kcap * 2 : 256;
        kctx *n = calloc(cap, sizeof(*n));
        if (!n)
            return NULL;
        for (uint32_t i = 0; i < kcap; i++) {
            if (!ktab[i].name)
                continue;
            uint32_t j = ktab[i].name * 0x9E3779B1u;
            while (n[j & (cap - 1)].name)
                j++;
            n[j & (cap - 1)] = ktab[i];
        }
        free(ktab);
        ktab = n;
        kcap = cap;
    }
    uint32_t j = name * 0x9E3779B1u;
    for (;; j++) {
        kctx *k = &ktab[j & (kcap - 1)];
        if (k->name == name)
            return k;
        if (!k->name) {
            k->name = name;
            kused++;
            return k;
        }
    }
}

bool gpuprof__detect_kernel_context(const char *name, uintptr_t ctx)
{
    if (!name || !*name)
        return false;
    size_t len;
    uint64_t h = gpuprof__hash_str(name, &len);
    uint32_t id = gpuprof__intern(name, len, h);
    if (!id)
        return false;
    pthread_mutex_lock(&det_mu);
    kctx *k = kslot(id);
    bool multi = false;
    if (k) {
        bool seen = false;
        for (uint32_t i = 0; i < k->n && !seen; i++)
            seen = k->ctx[i] == ctx;
        if (!seen && k->n < DET_CTX)
            k->ctx[k->n++] = ctx;
        multi = k->n > 1;
    }
    pthread_mutex_unlock(&det_mu);
    return multi;
}
