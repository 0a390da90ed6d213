/*
 * backends.c - black-box tests of the backend interface: registration
 * checks, selection (auto / none / list, option and environment), the
 * order and number of callbacks, status and reasons, late registration,
 * the 32-backend limit, and that callbacks never run concurrently.
 *
 * Every fake backend counts its callbacks in the struct its `user` points
 * to, which also checks that `user` is passed through. Only <gpuprof.h>
 * and the shared library; compiled as C99 (-Wpedantic -Werror) and as
 * C++11. Check forks every test: each starts with no backend registered
 * by the test and a library that was never initialized.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpuprof.h>

#include "bb.h"

/* ------------------------------------------------------------ helpers -- */

static char outdir[1024];

static void clear_env(void)
{
    unsetenv("GPUPROF_BACKENDS");
    unsetenv("GPUPROF_START_PAUSED");
    unsetenv("GPUPROF_FLUSH_PERIOD_MS");
}

static gpuprof_options opts_with(const char *backends)
{
    gpuprof_options o = GPUPROF_OPTIONS_INIT;
    const char *tmp = getenv("TMPDIR");
    clear_env();
    snprintf(outdir, sizeof(outdir), "%s/bbb.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    o.flags = GPUPROF_OPT_IGNORE_ENV;
    o.output_dir = outdir;
    o.backends = backends;
    return o;
}

static gpuprof_status init_with(const char *backends)
{
    gpuprof_options o = opts_with(backends);
    return gpuprof_init(&o);
}

static void sleep_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000L;
    ts.tv_nsec = (us % 1000000L) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One fake backend's record. `seq` numbers every callback of every fake
 * in call order, so the order of calls can be checked. */
struct fake {
    const char *name;
    gpuprof_status probe_result;
    const char *reason;
    gpuprof_status init_result;
    int probe, init, start, stop, flush, fini;
    int first_probe, first_init, first_start, last_stop, first_fini;
    size_t reason_size_seen;
    int reason_buf_null;
};
static int seq;
static int wrong_user; /* a callback got a `user` that is no struct fake */
static struct fake *fakes[64];
static int nfakes;

static struct fake *as_fake(void *user)
{
    int i;
    for (i = 0; i < nfakes; i++)
        if (fakes[i] == user)
            return fakes[i];
    wrong_user++;
    return NULL;
}

/* Callbacks are serialized by the library; the lock only detects when
 * they are not (see callbacks_never_concurrent). */
static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static int overlap, slow_callbacks;
static void cb_enter(void)
{
    if (pthread_mutex_trylock(&cb_mu) != 0) {
        pthread_mutex_lock(&cb_mu);
        overlap++; /* another callback was running */
    }
    if (slow_callbacks)
        sleep_us(200);
}
static void cb_leave(void)
{
    pthread_mutex_unlock(&cb_mu);
}

static gpuprof_status f_probe(void *user, char *reason, size_t reason_size)
{
    struct fake *f = as_fake(user);
    gpuprof_status r = GPUPROF_OK;
    cb_enter();
    if (f) {
        f->probe++;
        f->first_probe = f->first_probe ? f->first_probe : ++seq;
        f->reason_size_seen = reason_size;
        f->reason_buf_null = reason == NULL;
        r = f->probe_result;
        if (r != GPUPROF_OK && reason && reason_size)
            snprintf(reason, reason_size, "%s", f->reason ? f->reason : "");
    }
    cb_leave();
    return r;
}
static gpuprof_status f_init(void *user)
{
    struct fake *f = as_fake(user);
    gpuprof_status r = GPUPROF_OK;
    cb_enter();
    if (f) {
        f->init++;
        f->first_init = f->first_init ? f->first_init : ++seq;
        r = f->init_result;
    }
    cb_leave();
    return r;
}
static gpuprof_status f_start(void *user)
{
    struct fake *f = as_fake(user);
    cb_enter();
    if (f) {
        f->start++;
        f->first_start = f->first_start ? f->first_start : ++seq;
    }
    cb_leave();
    return GPUPROF_OK;
}
static gpuprof_status f_stop(void *user)
{
    struct fake *f = as_fake(user);
    cb_enter();
    if (f) {
        f->stop++;
        f->last_stop = ++seq;
    }
    cb_leave();
    return GPUPROF_OK;
}
static gpuprof_status f_flush(void *user)
{
    struct fake *f = as_fake(user);
    cb_enter();
    if (f)
        f->flush++;
    cb_leave();
    return GPUPROF_OK;
}
static void f_fini(void *user)
{
    struct fake *f = as_fake(user);
    cb_enter();
    if (f) {
        f->fini++;
        f->first_fini = f->first_fini ? f->first_fini : ++seq;
    }
    cb_leave();
}

static struct fake *new_fake(const char *name)
{
    struct fake *f = (struct fake *)calloc(1, sizeof(*f));
    ck_assert_ptr_nonnull(f);
    ck_assert_int_lt(nfakes, 64);
    f->name = name;
    f->probe_result = GPUPROF_OK;
    f->init_result = GPUPROF_OK;
    fakes[nfakes++] = f;
    return f;
}

static gpuprof_backend vtable(struct fake *f)
{
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = f->name;
    b.user = f;
    b.probe = f_probe;
    b.init = f_init;
    b.start = f_start;
    b.stop = f_stop;
    b.flush = f_flush;
    b.fini = f_fini;
    return b;
}

static gpuprof_status reg(struct fake *f)
{
    gpuprof_backend b = vtable(f);
    return gpuprof_backend_register(&b, 0);
}

static void assert_untouched(const struct fake *f)
{
    ck_assert_msg(f->probe + f->init + f->start + f->stop + f->flush + f->fini == 0,
                  "backend %s was called: probe %d init %d start %d stop %d flush %d fini %d",
                  f->name, f->probe, f->init, f->start, f->stop, f->flush, f->fini);
}

/* ---------------------------------------------------------- life cycle -- */

START_TEST(full_life_cycle)
{
    struct fake *f = new_fake("fake");
    char reason[32] = "unchanged";
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    assert_untouched(f); /* registering before init calls nothing */
    ck_assert_int_eq(gpuprof_backend_status("fake", NULL, 0), GPUPROF_E_STATE);
    ck_assert_int_eq(init_with("fake"), GPUPROF_OK);
    ck_assert_int_eq(f->probe, 1);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->start, 1); /* measuring begins at once */
    ck_assert_int_eq(f->stop, 0);
    ck_assert_int_eq(f->flush, 0);
    ck_assert_int_eq(f->fini, 0);
    ck_assert_int_lt(f->first_probe, f->first_init);
    ck_assert_int_lt(f->first_init, f->first_start);
    ck_assert_uint_gt(f->reason_size_seen, 0);
    ck_assert_int_eq(f->reason_buf_null, 0);
    ck_assert_int_eq(gpuprof_backend_status("fake", reason, sizeof(reason)), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("backends.active"), 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(f->stop, 1);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(f->start, 2);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(f->flush, 3);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(f->fini, 1);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->probe, 1);
    ck_assert_int_lt(f->last_stop, f->first_fini); /* recording stopped first */
    ck_assert_int_eq(wrong_user, 0);
    ck_assert_int_eq(overlap, 0);
}
END_TEST

START_TEST(start_paused_delays_start)
{
    struct fake *f = new_fake("paused");
    gpuprof_options o = opts_with("auto");
    o.start_paused = 1;
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->start, 0);
    ck_assert_int_eq(gpuprof_backend_status("paused", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(f->start, 1);
    ck_assert_int_eq(f->stop, 0);
}
END_TEST

/* start/stop are idempotent: a second call changes nothing for the
 * backend either. */
START_TEST(idempotent_start_stop)
{
    struct fake *f = new_fake("idem");
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(f->start, 1);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(f->start, 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(f->stop, 1);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(f->start, 2);
}
END_TEST

START_TEST(probe_fails)
{
    struct fake *ok = new_fake("ok");
    struct fake *absent = new_fake("absent");
    char reason[64];
    absent->probe_result = GPUPROF_E_UNAVAILABLE;
    absent->reason = "no device";
    ck_assert_int_eq(reg(ok), GPUPROF_OK);
    ck_assert_int_eq(reg(absent), GPUPROF_OK);
    ck_assert_int_eq(init_with("ok,absent"), GPUPROF_OK); /* does not fail init */
    ck_assert_int_eq(absent->probe, 1);
    ck_assert_int_eq(absent->init, 0);
    ck_assert_int_eq(absent->start, 0);
    ck_assert_int_eq(ok->init, 1);
    memset(reason, 'Z', sizeof(reason));
    ck_assert_int_eq(gpuprof_backend_status("absent", reason, sizeof(reason)),
                     GPUPROF_E_UNAVAILABLE);
    ck_assert_str_eq(reason, "no device");
    ck_assert_int_eq(gpuprof_backend_status("absent", NULL, 0), GPUPROF_E_UNAVAILABLE);
    ck_assert_int_eq(gpuprof_backend_status("ok", NULL, 0), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("backends.active"), 1);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(absent->probe, 1);
    ck_assert_int_eq(absent->init + absent->start + absent->stop + absent->flush + absent->fini, 0);
    ck_assert_int_eq(ok->fini, 1);
}
END_TEST

/* The reason is copied without overflowing a small buffer. */
START_TEST(reason_truncated_safely)
{
    struct fake *absent = new_fake("absent");
    char reason[8];
    absent->probe_result = GPUPROF_E_UNAVAILABLE;
    absent->reason = "no device present here";
    ck_assert_int_eq(reg(absent), GPUPROF_OK);
    ck_assert_int_eq(init_with("absent"), GPUPROF_OK);
    memset(reason, 'Z', sizeof(reason));
    ck_assert_int_eq(gpuprof_backend_status("absent", reason, 4), GPUPROF_E_UNAVAILABLE);
    ck_assert_ptr_nonnull(memchr(reason, '\0', 4));
    ck_assert_int_eq(strncmp(reason, "no device", strlen(reason)), 0);
    ck_assert_int_eq(reason[4], 'Z');
    ck_assert_int_eq(reason[7], 'Z');
}
END_TEST

/* A backend whose init fails does not fail gpuprof_init and is not
 * active; it is never started. */
START_TEST(init_fails)
{
    struct fake *f = new_fake("broken");
    f->init_result = GPUPROF_E_UNAVAILABLE;
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(init_with("broken"), GPUPROF_OK);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->start, 0);
    ck_assert_int_ne(gpuprof_backend_status("broken", NULL, 0), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("backends.active"), 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(f->flush, 0);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(f->stop, 0);
}
END_TEST

/* Only probe and init are required. */
START_TEST(null_optional_callbacks)
{
    struct fake *f = new_fake("minimal");
    gpuprof_backend b = GPUPROF_BACKEND_INIT;
    b.name = "minimal";
    b.user = f;
    b.probe = f_probe;
    b.init = f_init;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    ck_assert_int_eq(init_with("minimal"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("minimal", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(f->init, 1);
}
END_TEST

/* ------------------------------------------------------- registration -- */

START_TEST(registration_errors)
{
    struct fake *f = new_fake("good_name_1");
    gpuprof_backend b = vtable(f);
    static const char *const bad_names[] = {"", "Bad", "a-b", "a b", "x.y", "UPPER", "caf\xc3\xa9"};
    size_t i;
    ck_assert_int_eq(gpuprof_backend_register(NULL, 0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_register(&b, 1), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_register(&b, 0x80000000u), GPUPROF_E_INVALID);
    b.abi_version = 0;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.abi_version = GPUPROF_BACKEND_ABI + 1;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.abi_version = GPUPROF_BACKEND_ABI;
    b.size = 0;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.size = sizeof(size_t);
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.size = SIZE_MAX;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_VERSION);
    b.size = sizeof(b);
    b.name = NULL;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_INVALID);
    for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        b.name = bad_names[i];
        ck_assert_msg(gpuprof_backend_register(&b, 0) == GPUPROF_E_INVALID, "name '%s' accepted",
                      bad_names[i]);
    }
    b.name = "good_name_1";
    b.probe = NULL;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_INVALID);
    b.probe = f_probe;
    b.init = NULL;
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_status(NULL, NULL, 0), GPUPROF_E_INVALID);
    ck_assert_int_eq(gpuprof_backend_status("good_name_1", NULL, 0), GPUPROF_E_NOTFOUND);
    ck_assert_str_ne(gpuprof_last_error(), "");
    /* None of the refused registrations is ever called. */
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    assert_untouched(f);
}
END_TEST

START_TEST(duplicate_name)
{
    struct fake *a = new_fake("dup");
    struct fake *b = new_fake("dup");
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_E_EXISTS);
    ck_assert_str_ne(gpuprof_last_error(), "");
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(a->init, 1);
    assert_untouched(b);
    /* Also after init. */
    ck_assert_int_eq(reg(b), GPUPROF_E_EXISTS);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(a->fini, 1);
    assert_untouched(b);
}
END_TEST

/* The library copies the struct at registration. */
START_TEST(struct_is_copied)
{
    struct fake *f = new_fake("copied");
    struct fake *other = new_fake("other");
    gpuprof_backend b = vtable(f);
    static char name[16];
    strcpy(name, "copied");
    b.name = name; /* the name must stay valid: it does, unchanged */
    ck_assert_int_eq(gpuprof_backend_register(&b, 0), GPUPROF_OK);
    b.user = other;
    b.probe = NULL;
    b.init = NULL;
    b.size = 0;
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(f->probe, 1);
    ck_assert_int_eq(f->init, 1);
    assert_untouched(other);
}
END_TEST

/* doc/ABI.md: a newer caller's larger struct is read up to the library's
 * own size. */
START_TEST(future_struct_size)
{
    struct fake *f = new_fake("future");
    struct {
        gpuprof_backend b;
        void (*later_callback)(void *);
        unsigned char zero[16];
    } big;
    memset(&big, 0, sizeof(big));
    big.b = vtable(f);
    big.b.size = sizeof(big);
    ck_assert_int_eq(gpuprof_backend_register(&big.b, 0), GPUPROF_OK);
    ck_assert_int_eq(init_with("future"), GPUPROF_OK);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(gpuprof_backend_status("future", NULL, 0), GPUPROF_OK);
}
END_TEST

/* "GPUPROF_E_LIMIT past 32 backends" (built-in ones may count too);
 * refused registrations are never called. */
START_TEST(limit_of_32)
{
    static char names[40][16];
    struct fake *f[40];
    int i, ok = 0, first_fail = -1;
    gpuprof_status st;
    for (i = 0; i < 40; i++) {
        snprintf(names[i], sizeof(names[i]), "lim_%d", i);
        f[i] = new_fake(names[i]);
        st = reg(f[i]);
        if (st == GPUPROF_OK) {
            ck_assert_msg(first_fail < 0, "registration %d worked after one failed", i);
            ok++;
        } else {
            ck_assert_msg(st == GPUPROF_E_LIMIT, "registration %d: status %d", i, st);
            if (first_fail < 0)
                first_fail = i;
        }
    }
    ck_assert_int_le(ok, 32);
    ck_assert_int_ge(first_fail, 0);
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    for (i = 0; i < 40; i++) {
        if (i < ok) {
            ck_assert_int_eq(f[i]->probe, 1);
            ck_assert_int_eq(f[i]->init, 1);
            ck_assert_int_eq(gpuprof_backend_status(names[i], NULL, 0), GPUPROF_OK);
        } else {
            assert_untouched(f[i]);
            ck_assert_int_eq(gpuprof_backend_status(names[i], NULL, 0), GPUPROF_E_NOTFOUND);
        }
    }
    ck_assert_uint_ge(stat_of("backends.active"), (uint64_t)ok);
}
END_TEST

/* ---------------------------------------------------------- selection -- */

START_TEST(select_none)
{
    struct fake *f = new_fake("fake");
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(init_with("none"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("fake", NULL, 0), GPUPROF_E_STATE);
    ck_assert_uint_eq(stat_of("backends.active"), 0);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    assert_untouched(f);
}
END_TEST

START_TEST(select_list)
{
    struct fake *a = new_fake("alpha");
    struct fake *b = new_fake("beta");
    struct fake *c = new_fake("gamma");
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_OK);
    ck_assert_int_eq(reg(c), GPUPROF_OK);
    ck_assert_int_eq(init_with("gamma,alpha"), GPUPROF_OK);
    ck_assert_int_eq(a->init, 1);
    ck_assert_int_eq(c->init, 1);
    assert_untouched(b);
    ck_assert_int_eq(gpuprof_backend_status("beta", NULL, 0), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_backend_status("alpha", NULL, 0), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("gamma", NULL, 0), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("backends.active"), 2);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(a->fini, 1);
    ck_assert_int_eq(c->fini, 1);
    assert_untouched(b);
}
END_TEST

/* A name that is a prefix of a listed one is not selected. */
START_TEST(select_list_exact_names)
{
    struct fake *a = new_fake("cu");
    struct fake *b = new_fake("cupti_x");
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_OK);
    ck_assert_int_eq(init_with("cupti_x"), GPUPROF_OK);
    assert_untouched(a);
    ck_assert_int_eq(b->init, 1);
}
END_TEST

START_TEST(select_from_environment)
{
    struct fake *a = new_fake("alpha");
    struct fake *b = new_fake("beta");
    gpuprof_options o = opts_with(NULL);
    o.flags = 0;
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_OK);
    setenv("GPUPROF_BACKENDS", "beta", 1);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    assert_untouched(a);
    ck_assert_int_eq(b->init, 1);
}
END_TEST

/* IGNORE_ENV: the default, "auto", selects every backend. */
START_TEST(select_default_is_auto)
{
    struct fake *a = new_fake("alpha");
    struct fake *b = new_fake("beta");
    gpuprof_options o = opts_with(NULL);
    setenv("GPUPROF_BACKENDS", "none", 1);
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_init(&o), GPUPROF_OK);
    ck_assert_int_eq(a->init, 1);
    ck_assert_int_eq(b->init, 1);
}
END_TEST

/* ------------------------------------------------- late registration -- */

START_TEST(late_auto)
{
    struct fake *f = new_fake("late");
    uint64_t active;
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_backend_status("late", NULL, 0), GPUPROF_E_NOTFOUND);
    active = stat_of("backends.active"); /* built-in backends may be active */
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(f->probe, 1);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->start, 1);
    ck_assert_int_eq(gpuprof_backend_status("late", NULL, 0), GPUPROF_OK);
    ck_assert_uint_eq(stat_of("backends.active"), active + 1);
    ck_assert_int_eq(gpuprof_flush(), GPUPROF_OK);
    ck_assert_int_eq(f->flush, 1);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(f->fini, 1);
}
END_TEST

START_TEST(late_while_paused)
{
    struct fake *f = new_fake("late");
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_stop(), GPUPROF_OK);
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(f->init, 1);
    ck_assert_int_eq(f->start, 0); /* not recording while paused */
    ck_assert_int_eq(gpuprof_start(), GPUPROF_OK);
    ck_assert_int_eq(f->start, 1);
}
END_TEST

START_TEST(late_listed_and_unlisted)
{
    struct fake *in = new_fake("wanted");
    struct fake *out = new_fake("unwanted");
    ck_assert_int_eq(init_with("wanted"), GPUPROF_OK);
    ck_assert_int_eq(reg(out), GPUPROF_OK);
    ck_assert_int_eq(reg(in), GPUPROF_OK);
    ck_assert_int_eq(in->init, 1);
    assert_untouched(out);
    ck_assert_int_eq(gpuprof_backend_status("unwanted", NULL, 0), GPUPROF_E_STATE);
    ck_assert_int_eq(gpuprof_backend_status("wanted", NULL, 0), GPUPROF_OK);
}
END_TEST

START_TEST(late_none)
{
    struct fake *f = new_fake("late");
    ck_assert_int_eq(init_with("none"), GPUPROF_OK);
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    assert_untouched(f);
    ck_assert_int_eq(gpuprof_backend_status("late", NULL, 0), GPUPROF_E_STATE);
}
END_TEST

START_TEST(late_probe_fails)
{
    struct fake *f = new_fake("late");
    char reason[32];
    f->probe_result = GPUPROF_E_UNAVAILABLE;
    f->reason = "no runtime";
    ck_assert_int_eq(init_with("late"), GPUPROF_OK);
    ck_assert_int_eq(reg(f), GPUPROF_OK);
    ck_assert_int_eq(f->probe, 1);
    ck_assert_int_eq(f->init, 0);
    ck_assert_int_eq(gpuprof_backend_status("late", reason, sizeof(reason)), GPUPROF_E_UNAVAILABLE);
    ck_assert_str_eq(reason, "no runtime");
    ck_assert_uint_eq(stat_of("backends.active"), 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(f->fini, 0);
}
END_TEST

/* After finalize nothing is probed or started any more. */
START_TEST(after_finalize)
{
    struct fake *f = new_fake("afterwards");
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    reg(f); /* status not pinned by the header */
    assert_untouched(f);
    ck_assert_int_ne(gpuprof_backend_status("afterwards", NULL, 0), GPUPROF_OK);
}
END_TEST

/* ---------------------------------------------------------- threading -- */

static int run_flag = 1;
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static int running(void)
{
    int r;
    pthread_mutex_lock(&run_mu);
    r = run_flag;
    pthread_mutex_unlock(&run_mu);
    return r;
}

static void *flush_and_toggle(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 30 && running(); i++) {
        if (gpuprof_flush() != GPUPROF_OK)
            return (void *)1;
        if (gpuprof_stop() != GPUPROF_OK || gpuprof_start() != GPUPROF_OK)
            return (void *)2;
    }
    return NULL;
}

static void *register_late(void *arg)
{
    return (void *)(intptr_t)reg((struct fake *)arg);
}

/* "Callbacks are called ... one at a time ... never concurrently with
 * each other", whichever threads make the public calls. */
START_TEST(callbacks_never_concurrent)
{
    struct fake *a = new_fake("conc_a");
    struct fake *b = new_fake("conc_b");
    struct fake *late[2];
    pthread_t th[6];
    void *rv;
    int i;
    ck_assert_int_eq(reg(a), GPUPROF_OK);
    ck_assert_int_eq(reg(b), GPUPROF_OK);
    late[0] = new_fake("late_a");
    late[1] = new_fake("late_b");
    ck_assert_int_eq(init_with("auto"), GPUPROF_OK);
    slow_callbacks = 1;
    for (i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, flush_and_toggle, NULL), 0);
    for (i = 4; i < 6; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, register_late, late[i - 4]), 0);
    for (i = 0; i < 6; i++) {
        ck_assert_int_eq(pthread_join(th[i], &rv), 0);
        ck_assert_msg(rv == NULL, "thread %d: %ld", i, (long)(intptr_t)rv);
    }
    ck_assert_int_eq(overlap, 0);
    ck_assert_int_eq(late[0]->init, 1);
    ck_assert_int_eq(late[1]->init, 1);
    ck_assert_int_eq(a->flush, 4 * 30);
    ck_assert_int_eq(b->flush, 4 * 30);
    ck_assert_int_eq(wrong_user, 0);
    ck_assert_int_eq(gpuprof_finalize(), GPUPROF_OK);
    ck_assert_int_eq(a->fini, 1);
    ck_assert_int_eq(overlap, 0);
}
END_TEST

/* Program exits without finalize: the atexit handler still calls fini. */
static int fini_pipe = -1;
static void fini_says(void *user)
{
    (void)user;
    if (write(fini_pipe, "F", 1) != 1)
        _exit(98);
}

START_TEST(fini_at_exit)
{
    int fds[2], st;
    char buf[8];
    ssize_t n;
    pid_t pid;
    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuprof_backend b = GPUPROF_BACKEND_INIT;
        struct fake *f = new_fake("exiting");
        signal(SIGALRM, SIG_DFL);
        alarm(20);
        close(fds[0]);
        fini_pipe = fds[1];
        b.name = "exiting";
        b.user = f;
        b.probe = f_probe;
        b.init = f_init;
        b.fini = fini_says;
        if (gpuprof_backend_register(&b, 0) != GPUPROF_OK || init_with("auto") != GPUPROF_OK)
            _exit(3);
        exit(0);
    }
    close(fds[1]);
    n = read(fds[0], buf, sizeof(buf));
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(buf[0], 'F');
}
END_TEST

/* ------------------------------------------------------------- suite -- */

struct tc {
    const char *name;
    const TTest *test;
};

static Suite *backends_suite(void)
{
    const struct tc cases[] = {
        {"full_life_cycle", full_life_cycle},
        {"start_paused", start_paused_delays_start},
        {"idempotent", idempotent_start_stop},
        {"probe_fails", probe_fails},
        {"reason_truncated", reason_truncated_safely},
        {"init_fails", init_fails},
        {"null_callbacks", null_optional_callbacks},
        {"registration_errors", registration_errors},
        {"duplicate_name", duplicate_name},
        {"struct_copied", struct_is_copied},
        {"future_size", future_struct_size},
        {"limit_32", limit_of_32},
        {"select_none", select_none},
        {"select_list", select_list},
        {"select_exact", select_list_exact_names},
        {"select_env", select_from_environment},
        {"select_default", select_default_is_auto},
        {"late_auto", late_auto},
        {"late_paused", late_while_paused},
        {"late_listed", late_listed_and_unlisted},
        {"late_none", late_none},
        {"late_probe_fails", late_probe_fails},
        {"after_finalize", after_finalize},
        {"never_concurrent", callbacks_never_concurrent},
        {"fini_at_exit", fini_at_exit},
    };
    Suite *s = suite_create("backends");
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return bb_run(backends_suite());
}
