/*
 * fasttrace.c - the hook's own call-path walk: x86-64 frame rules cached by
 * return address (see unwind.h, gpuprof__fast_trace).
 *
 * libunwind's unw_backtrace costs about 95 instructions a frame here (its
 * cursor set-up, a per-thread hash, generic checks): 80 % of the GPU API
 * hook. Nearly every frame of a real program follows one of two simple
 * rules at a return address: the caller's frame address (CFA) is the stack
 * pointer or the frame pointer plus a constant, the return address lies at
 * CFA - 8, and the caller's frame pointer is either untouched or saved at
 * CFA plus a constant. We read that rule once per return address from the
 * module's .eh_frame (cfi.c), keep it in a table keyed by the address, and
 * then walk a stack with two or three loads a frame; the frames a walk
 * shares with the thread's previous one are compared, not walked (below).
 *
 * Anything else -- a signal frame, a rule given by a DWARF expression (PLT
 * stubs, the signal trampoline), a frame with no unwind information, a
 * 64-bit DWARF record, a frame address that does not move up the stack --
 * makes the whole walk return -1 and the caller takes libunwind's instead,
 * so a path is never guessed. The rules of an unloaded library may now be
 * wrong for another at the same address: the module table's refresh after
 * a dlclose (unwind.c) calls gpuprof__fast_trace_flush, as it flushes
 * libunwind's cache.
 *
 * The rule table is lock-free for readers: a slot's rule is stored before
 * its key (release) and neither changes while the table is current; a
 * flush publishes an empty table, a table half full is replaced by one
 * twice its size, and old ones stay allocated (a walk may still read
 * them; flushes follow dlclose, which is rare). Learning a
 * rule takes the loader's lock (dl_iterate_phdr) and a mutex: never in a
 * signal handler, which keeps libunwind (gpuprof__backtrace_in_signal).
 */
#define _GNU_SOURCE
#include "core/unwind.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomics.h"
#include "core/cfi.h"

#if defined(__x86_64__)
#define FT_SUPPORTED 1
#else
#define FT_SUPPORTED 0
#endif

/* A frame larger than this is taken as a sign of a wrong rule. */
#define FT_MAX_FRAME ((uintptr_t)1 << 26)

#define RT_BITS0 12 /* the first table: 4096 slots */
#define RT_BITS_MAX 20
#define RT_PROBES 8

typedef struct slot {
    _Atomic uintptr_t key; /* a return address; 0: free */
    _Atomic uint64_t rule;
} slot;

typedef struct rtab {
    struct rtab *prev; /* older tables: kept, walks may hold them */
    uint32_t bits;
    uint32_t used; /* under mu */
    slot *s;
} rtab;

static slot first_slots[1u << RT_BITS0];
static rtab first_table = {NULL, RT_BITS0, 0, first_slots};
static rtab *_Atomic table = &first_table;
static _Atomic bool disabled; /* a flush found no memory: libunwind only */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER; /* the memos */

static inline uint32_t slot_of(const rtab *t, uintptr_t ip)
{
    return (uint32_t)((ip * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->bits));
}

static inline uint64_t rule_find(const rtab *t, uintptr_t ip)
{
    uint32_t h = slot_of(t, ip), mask = (1u << t->bits) - 1;
    for (uint32_t i = 0; i < RT_PROBES; i++) {
        const slot *s = &t->s[(h + i) & mask];
        uintptr_t k = gp_load_acquire(&s->key);
        if (k == ip)
            return gp_load_relaxed(&s->rule);
        if (k == 0)
            return 0;
    }
    return 0;
}

/* Puts (ip, rule) into t (under mu, or t not yet published); false: no
 * room near ip's slot. */
static bool rule_put(rtab *t, uintptr_t ip, uint64_t rule)
{
    uint32_t h = slot_of(t, ip), mask = (1u << t->bits) - 1;
    for (uint32_t i = 0; i < RT_PROBES; i++) {
        slot *s = &t->s[(h + i) & mask];
        uintptr_t k = gp_load_relaxed(&s->key);
        if (k == ip)
            return true;
        if (k == 0) {
            gp_store_relaxed(&s->rule, rule);
            gp_store_release(&s->key, ip);
            t->used++;
            return true;
        }
    }
    return false;
}

/* A table of 2^bits slots holding old's rules (old NULL: empty), or NULL
 * without memory. Under mu. */
static rtab *table_new(const rtab *old, uint32_t bits)
{
    rtab *t = calloc(1, sizeof(*t));
    slot *sl = t ? calloc((size_t)1 << bits, sizeof(*sl)) : NULL;
    if (!sl) {
        free(t);
        return NULL;
    }
    t->bits = bits;
    t->s = sl;
    for (uint32_t i = 0; old && i < (1u << old->bits); i++) {
        uintptr_t k = gp_load_relaxed(&old->s[i].key);
        if (k)
            (void)rule_put(t, k, gp_load_relaxed(&old->s[i].rule));
    }
    return t;
}

/* Keeps `rule` for ip in table t if it is still the current one (a flush
 * meanwhile: the rule may come from a library since closed). A table half
 * full, or with no room near ip's slot, is replaced by one twice its size
 * (up to 2^20 slots; the old one stays allocated for the walks that hold
 * it); past that the rule is learned again next time. */
static void rule_keep(rtab *t, uintptr_t ip, uint64_t rule)
{
    pthread_mutex_lock(&mu);
    if (t == gp_load_relaxed(&table) &&
        (t->used >= (1u << t->bits) / 2 || !rule_put(t, ip, rule)) &&
        t->bits < RT_BITS_MAX) {
        rtab *g = table_new(t, t->bits + 1);
        if (g) {
            (void)rule_put(g, ip, rule);
            g->prev = t;
            gp_store_release(&table, g);
        }
    }
    pthread_mutex_unlock(&mu);
}

/* A fork while another thread learns a rule or makes its memo would leave
 * the child those mutexes held: the fork waits for them (gpuprof.c). */
void gpuprof__fast_trace_atfork_prepare(void)
{
    pthread_mutex_lock(&mu);
    pthread_mutex_lock(&memo_mu);
}

void gpuprof__fast_trace_atfork_release(void)
{
    pthread_mutex_unlock(&memo_mu);
    pthread_mutex_unlock(&mu);
}

void gpuprof__fast_trace_flush(void)
{
    pthread_mutex_lock(&mu);
    rtab *cur = gp_load_relaxed(&table);
    rtab *fresh = table_new(NULL, cur->bits);
    if (fresh) {
        fresh->prev = cur;
        gp_store_release(&table, fresh);
    } else {
        gp_store_release(&disabled, true);
    }
    pthread_mutex_unlock(&mu);
}

/* The rule at return address ip, read from its module (cfi.c) and kept. */
__attribute__((noinline)) static uint64_t rule_learn(rtab *t, uintptr_t ip)
{
    uint64_t rule = gpuprof__cfi_rule(ip);
    rule_keep(t, ip, rule);
    return rule;
}

/* ---- the walk ------------------------------------------------------------
 * The walk is a function of its starting state (return address, stack and
 * frame pointers), the rules, and the stack words it reads: each frame's
 * return-address slot (CFA - 8) and, where a rule says so, its saved frame
 * pointer. Each thread remembers its last walk (the memo: every frame's
 * state and rule, outermost first). A new walk that reaches a frame whose
 * state equals a remembered one, under the same rule table, needs not walk
 * on: when every word the remembered walk read beyond that frame still
 * holds what it read, the rest is the same, and its return addresses are
 * copied. Each such word is one load and a compare, against a hash lookup
 * and the loads of a step: a loop launching from one call site, or from a
 * few call sites of one function, walks only the frames that differ. One
 * word that differs (the thread returned past that frame and called again)
 * and the walk goes on step by step, and is remembered instead. */
typedef struct ft_state {
    uintptr_t ip, rsp, rbp;
    uint64_t rule;
} ft_state;

typedef struct ft_memo {
    struct ft_memo *next, **pprev; /* every thread's (memo_mu) */
    const rtab *table; /* the rules it was walked with */
    int n;             /* frames; e[0] the outermost, e[n - 1] the innermost */
    uintptr_t end_cfa; /* the outermost read a 0 return address at end_cfa -
                          8 (0: its rule said it is the last) */
    ft_state e[GP_MAX_FRAMES];
} ft_memo;

static __thread ft_memo *memo __attribute__((tls_model("initial-exec")));
static pthread_key_t memo_key; /* frees a thread's memo at its exit */
static pthread_once_t memo_once = PTHREAD_ONCE_INIT;
static bool memo_key_ok;
/* Every memo, so that the ones of threads alive at the process's exit (the
 * main thread's: its key destructors never run) are not leaks (memo_mu). */
static ft_memo *memos;

static void memo_free(void *arg)
{
    ft_memo *m = arg;
    memo = NULL;
    pthread_mutex_lock(&memo_mu);
    *m->pprev = m->next;
    if (m->next)
        m->next->pprev = m->pprev;
    pthread_mutex_unlock(&memo_mu);
    free(m);
}

static void memo_key_make(void)
{
    memo_key_ok = pthread_key_create(&memo_key, memo_free) == 0;
}

/* The calling thread's memo, made on its first walk (NULL: none). */
__attribute__((noinline, cold)) static ft_memo *memo_new(void)
{
    pthread_once(&memo_once, memo_key_make);
    ft_memo *m = memo_key_ok ? calloc(1, sizeof(*m)) : NULL;
    if (m && pthread_setspecific(memo_key, m) != 0) {
        free(m);
        m = NULL;
    }
    if (m) {
        pthread_mutex_lock(&memo_mu);
        m->next = memos;
        m->pprev = &memos;
        if (memos)
            memos->pprev = &m->next;
        memos = m;
        pthread_mutex_unlock(&memo_mu);
    }
    return memo = m;
}

/* Do the words the memo's walk read beyond frame j (its frames j-1 .. 0,
 * and the end) still hold what it read? */
__attribute__((no_sanitize_address)) static bool
memo_holds(const ft_memo *m, int j)
{
    for (int k = j; k > 0; k--) {
        const ft_state *in = &m->e[k], *out = &m->e[k - 1];
        uintptr_t cfa = out->rsp;
        if (*(const uintptr_t *)(cfa - 8) != out->ip ||
            ((in->rule & FT_RBP_SAVED) &&
             *(const uintptr_t *)(cfa + FT_RBP_OFF(in->rule)) != out->rbp))
            return false;
    }
    return !m->end_cfa || *(const uintptr_t *)(m->end_cfa - 8) == 0;
}

/* Frame 0 is our caller's: this function keeps a frame pointer
 * (__builtin_frame_address), so its caller's frame pointer and return
 * address sit at fp[0] and fp[1], and the caller's stack pointer after the
 * return is fp + 2. Loads of the stack's saved words are not instrumented:
 * they read other frames' return-address and register slots, which the
 * address sanitizer has no reason to own. */
__attribute__((noinline, no_sanitize_address)) int
gpuprof__fast_trace(void **buf, int max)
{
    if (!FT_SUPPORTED || gp_load_relaxed(&disabled) || max <= 0)
        return -1;
    void **fp = __builtin_frame_address(0);
    uintptr_t rbp = (uintptr_t)fp[0], rsp = (uintptr_t)(fp + 2);
    uintptr_t ip = (uintptr_t)fp[1];
    rtab *t = gp_load_acquire(&table);
    /* The memo, unless this walk interrupted another on this thread (a
     * signal handler's hook: gpuprof__unwinding counts the nesting). */
    ft_memo *m = gpuprof__unwinding == 1 ? memo : NULL;
    if (__builtin_expect(!m, 0) && gpuprof__unwinding == 1)
        m = memo_new();
    int j = m && m->table == t ? m->n - 1 : -1;
    ft_state st[GP_MAX_FRAMES];
    int n = 0;
    uintptr_t end_cfa = 0;
    if (max > GP_MAX_FRAMES)
        max = GP_MAX_FRAMES;
    while (n < max && ip) {
        if (j >= 0) { /* a frame of the last walk at this stack address? */
            while (j >= 0 && m->e[j].rsp < rsp)
                j--;
            if (j >= 0 && m->e[j].rsp == rsp) {
                if (m->e[j].ip == ip && m->e[j].rbp == rbp &&
                    n + j + 1 <= max && memo_holds(m, j)) {
                    for (int k = j; k >= 0; k--)
                        buf[n + j - k] = (void *)m->e[k].ip;
                    for (int k = 0; k < n; k++) /* this walk's own frames */
                        m->e[j + n - k] = st[k];
                    m->n = j + 1 + n;
                    return j + 1 + n;
                }
                j = -1; /* it differs: walk on, remember this walk */
            }
        }
        buf[n] = (void *)ip;
        uint64_t r = rule_find(t, ip);
        if (__builtin_expect(!r, 0))
            r = rule_learn(t, ip);
        st[n] = (ft_state){ip, rsp, rbp, r};
        n++;
        if (r & (FT_BAD | FT_LAST)) {
            if (r & FT_BAD)
                return -1;
            break;
        }
        uintptr_t cfa = (r & FT_CFA_RBP ? rbp : rsp) + FT_CFA_OFF(r);
        if (cfa <= rsp || cfa - rsp > FT_MAX_FRAME || (cfa & 7))
            return -1;
        ip = *(const uintptr_t *)(cfa - 8);
        if (r & FT_RBP_SAVED)
            rbp = *(const uintptr_t *)(cfa + FT_RBP_OFF(r));
        rsp = cfa;
        if (!ip)
            end_cfa = cfa;
    }
    if (m) { /* remembered whole, or (cut at max) not at all */
        m->table = n < max || !ip ? t : NULL;
        m->n = n;
        m->end_cfa = end_cfa;
        for (int k = 0; k < n; k++)
            m->e[n - 1 - k] = st[k];
    }
    return n;
}
