/*
 * backend.c - the backend registry and its life cycle.
 *
 * Backends register a gpuprof_backend (the public, size-versioned vtable);
 * the built-in ones use exactly the same call. At init the selected ones are
 * probed, initialized and started; a backend whose runtime is missing says
 * why in one line and is skipped; nothing else changes. That line is at the
 * default (error) level when the backend was asked for by name or a setting
 * of its own is unusable; a name no backend has is said the same way. Callbacks run under
 * be_lock, one at a time, so a backend never sees two of its callbacks at
 * once.
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

#define MAX_BACKENDS 32

enum be_state { BE_REGISTERED, BE_ACTIVE, BE_UNAVAILABLE, BE_NOT_SELECTED,
                BE_FAILED, BE_FINISHED };

typedef struct be {
    gpuprof_backend b;
    enum be_state state;
    char reason[512];
} be;

static pthread_mutex_t be_lock = PTHREAD_MUTEX_INITIALIZER;
static be bes[MAX_BACKENDS];
static int nbes;

static bool valid_name(const char *n)
{
    size_t len = n ? strlen(n) : 0;
    if (len == 0 || len > 31)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
              n[i] == '_'))
            return false;
    return true;
}

/* Is `name` chosen by the configuration ("auto", "none" or a list)? */
static bool selected(const char *name)
{
    const char *list = G.cfg.backends;
    if (strcmp(list, "auto") == 0 || strcmp(list, "all") == 0)
        return true;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ", ");
        if (n == len && strncmp(p, name, n) == 0)
            return true;
        p += n;
        p += strspn(p, ", ");
    }
    return false;
}

/* A backend the list names explicitly, or whose probe says a setting is
 * unusable (GPUPROF_E_INVALID), is missed at the default log level. */
static int unavailable_level(gpuprof_status st)
{
    const char *list = G.cfg.backends;
    bool named = strcmp(list, "auto") != 0 && strcmp(list, "all") != 0;
    return named || st == GPUPROF_E_INVALID ? GPUPROF_LOG_ERROR
                                            : GPUPROF_LOG_WARN;
}

static void activate(be *e)
{
    if (!selected(e->b.name)) {
        e->state = BE_NOT_SELECTED;
        return;
    }
    e->reason[0] = '\0';
    gpuprof_status st = e->b.probe(e->b.user, e->reason, sizeof(e->reason));
    e->reason[sizeof(e->reason) - 1] = '\0';
    if (st != GPUPROF_OK) {
        if (!e->reason[0])
            snprintf(e->reason, sizeof(e->reason), "%s", gpuprof_strerror(st));
        e->state = BE_UNAVAILABLE;
        gpuprof__log(unavailable_level(st), "backend %s unavailable: %s",
                     e->b.name, e->reason);
        return;
    }
    if ((st = e->b.init(e->b.user)) != GPUPROF_OK) {
        snprintf(e->reason, sizeof(e->reason), "init failed: %s",
                 gpuprof_strerror(st));
        e->state = BE_FAILED;
        gpuprof__log(unavailable_level(st), "backend %s unavailable: %s",
                     e->b.name, e->reason);
        return;
    }
    e->state = BE_ACTIVE;
    gpuprof__stat_add(GP_STAT_BACKENDS_ACTIVE, 1);
    gpuprof__log(GPUPROF_LOG_INFO, "backend %s active", e->b.name);
    if (gp_mode() == GP_MODE_MEASURING && e->b.start)
        e->b.start(e->b.user);
}

/* Is `name` (n bytes) a registered backend? */
static bool known(const char *name, size_t n)
{
    for (int i = 0; i < nbes; i++)
        if (strlen(bes[i].b.name) == n && !strncmp(name, bes[i].b.name, n))
            return true;
    return false;
}

/* Appends `n` bytes of `name` to a ", "-separated list in buf. */
static void list_add(char *buf, size_t size, const char *name, size_t n)
{
    size_t len = strlen(buf);
    if (len < size)
        snprintf(buf + len, size - len, "%s%.*s", len ? ", " : "", (int)n,
                 name);
}

/* One line for a list that names a backend nobody registered: the names it
 * ignores, the backends known, and those used instead. */
static void check_list(void)
{
    const char *list = G.cfg.backends;
    if (!strcmp(list, "auto") || !strcmp(list, "all") || !strcmp(list, "none"))
        return;
    char bad[256] = "", used[256] = "", names[256] = "";
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ", ");
        if (n)
            list_add(known(p, n) ? used : bad, sizeof(bad), p, n);
        p += n;
        p += strspn(p, ", ");
    }
    if (!bad[0])
        return;
    for (int i = 0; i < nbes; i++)
        list_add(names, sizeof(names), bes[i].b.name, strlen(bes[i].b.name));
    gpuprof__log(GPUPROF_LOG_ERROR, "ignoring %s in %s=%s (not a backend; "
                 "known: %s); using %s", bad,
                 G.cfg.backends_from_env ? "GPUPROF_BACKENDS"
                                         : "gpuprof_options.backends",
                 list, names[0] ? names : "none", used[0] ? used : "none");
}

void gpuprof__backends_init(void)
{
    pthread_mutex_lock(&be_lock);
    check_list();
    for (int i = 0; i < nbes; i++)
        if (bes[i].state == BE_REGISTERED)
            activate(&bes[i]);
    pthread_mutex_unlock(&be_lock);
}

void gpuprof__backends_call(int what)
{
    pthread_mutex_lock(&be_lock);
    for (int i = 0; i < nbes; i++) {
        be *e = &bes[i];
        if (e->state != BE_ACTIVE)
            continue;
        gpuprof_status (*fn)(void *) = what == GP_BE_START ? e->b.start
                                       : what == GP_BE_STOP ? e->b.stop
                                       : what == GP_BE_FLUSH ? e->b.flush
                                                             : NULL;
        gpuprof_status st = fn ? fn(e->b.user) : GPUPROF_OK;
        if (st != GPUPROF_OK)
            gpuprof__log(GPUPROF_LOG_WARN, "backend %s: %s", e->b.name,
                         gpuprof_strerror(st));
        if (what == GP_BE_FINI) {
            if (e->b.fini)
                e->b.fini(e->b.user);
            e->state = BE_FINISHED;
            gpuprof__stat_add(GP_STAT_BACKENDS_ACTIVE, (uint64_t)-1);
        }
    }
    pthread_mutex_unlock(&be_lock);
}

static gpuprof_status check(const gpuprof_backend *b, uint32_t flags)
{
    if (!b)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_backend_register: NULL backend");
    if (b->size < offsetof(gpuprof_backend, fini) + sizeof(b->fini) ||
        b->size > (1u << 16) || b->abi_version != GPUPROF_BACKEND_ABI)
        return gpuprof__fail(GPUPROF_E_VERSION, GPUPROF_LOG_WARN,
                             "gpuprof_backend_register: size %zu / ABI %u not "
                             "supported (this library: %zu / %d)", b->size,
                             b->abi_version, sizeof(*b), GPUPROF_BACKEND_ABI);
    if (flags)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_backend_register: flags must be 0");
    if (!valid_name(b->name) || !b->probe || !b->init)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_WARN,
                             "gpuprof_backend_register: needs a name of "
                             "[a-z0-9_] (1-31 bytes), probe and init");
    return GPUPROF_OK;
}

GPUPROF_API gpuprof_status gpuprof_backend_register(const gpuprof_backend *b,
                                                    uint32_t flags)
{
    gpuprof_status st = check(b, flags);
    if (st)
        return st;
    pthread_mutex_lock(&be_lock);
    for (int i = 0; i < nbes; i++)
        if (strcmp(bes[i].b.name, b->name) == 0)
            st = gpuprof__fail(GPUPROF_E_EXISTS, GPUPROF_LOG_WARN,
                               "backend '%s' is already registered", b->name);
    if (!st && nbes == MAX_BACKENDS)
        st = gpuprof__fail(GPUPROF_E_LIMIT, GPUPROF_LOG_WARN,
                           "more than %d backends", MAX_BACKENDS);
    if (!st) {
        be *e = &bes[nbes++];
        memset(e, 0, sizeof(*e));
        memcpy(&e->b, b, b->size < sizeof(e->b) ? b->size : sizeof(e->b));
        e->state = BE_REGISTERED;
        int mode = gp_mode();
        if (mode == GP_MODE_MEASURING || mode == GP_MODE_PAUSED)
            activate(e);
    }
    pthread_mutex_unlock(&be_lock);
    return st;
}

GPUPROF_API gpuprof_status gpuprof_backend_status(const char *name,
                                                  char *reason,
                                                  size_t reason_size)
{
    if (!name)
        return gpuprof__fail(GPUPROF_E_INVALID, GPUPROF_LOG_DEBUG,
                             "gpuprof_backend_status: NULL name");
    gpuprof_status st = GPUPROF_E_NOTFOUND;
    pthread_mutex_lock(&be_lock);
    for (int i = 0; i < nbes; i++) {
        be *e = &bes[i];
        if (strcmp(e->b.name, name) != 0)
            continue;
        st = e->state == BE_ACTIVE ? GPUPROF_OK
             : e->state == BE_UNAVAILABLE || e->state == BE_FAILED
                 ? GPUPROF_E_UNAVAILABLE
                 : GPUPROF_E_STATE;
        if (st == GPUPROF_E_UNAVAILABLE && reason && reason_size)
            snprintf(reason, reason_size, "%s", e->reason);
    }
    pthread_mutex_unlock(&be_lock);
    return st;
}

void gpuprof__backends_atfork_prepare(void) { pthread_mutex_lock(&be_lock); }
void gpuprof__backends_atfork_parent(void) { pthread_mutex_unlock(&be_lock); }
void gpuprof__backends_atfork_child(void) { pthread_mutex_unlock(&be_lock); }

/* The built-in backends of this build: build/gen/backends.h, which the
 * Makefile writes with one GPUPROF_BUILTIN(name) line per backend folder it
 * compiles into the library; each folder defines
 * gpuprof__backend_<name>_register. The core names no backend itself. */
#define GPUPROF_BUILTIN(name) void gpuprof__backend_##name##_register(void);
#include "gen/backends.h"
#undef GPUPROF_BUILTIN

void gpuprof__builtin_backends_register(void)
{
#define GPUPROF_BUILTIN(name) gpuprof__backend_##name##_register();
#include "gen/backends.h"
#undef GPUPROF_BUILTIN
}
