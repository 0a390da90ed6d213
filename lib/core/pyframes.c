/*
 * pyframes.c - Python frames in CPU call paths (unwind.h,
 * gpuprof__pyframes_expand).
 *
 * A GPU operation launched from Python has, on the native stack, one frame
 * of the interpreter's `_PyEval_EvalFrameDefault` per activation of the
 * interpreter loop; each activation runs one or more Python functions
 * (3.11 calls Python from Python without a new native frame). Where a call
 * path holds such a frame, we put the Python functions it is running in
 * its place, innermost first, read from the calling thread's own frame
 * chain: the thread is inside our hook, so its chain cannot change under
 * us, and nothing else is called that could allocate or take the GIL.
 *
 * The interpreter is looked for at the first call path, and again at the
 * first call path after the loader loaded anything (an interpreter
 * dlopened later: gpuprof__loader_adds), until it is found; a program
 * without Python pays one compare per path for this. It is found by the address
 * range of `_PyEval_EvalFrameDefault` (dynamic symbol and its size: Debian
 * links libpython statically into the python3.11 executable, which exports
 * it; a shared libpython does too), `Py_Version` (3.11 exactly: the layouts
 * below are 3.11's, checked against its headers by tests/unit) and
 * `PyGILState_GetThisThreadState` (the thread's state from thread-local
 * storage, valid while ctypes has released the GIL). Anything else: off,
 * one info line when an interpreter of another version is there, and a
 * path costs one range compare per frame.
 *
 * A Python frame is stored as a CCT frame node of a pseudo module named
 * "py:<qualname>:<file>" (GP_PY_MODULE_PREFIX; base 0, size 0) with the
 * line as its offset: files, reports and the analysis need nothing new to
 * carry it, and the analysis names it "qualname (file:line)". Module ids
 * and lines are cached per (code object, instruction) in a small table
 * per thread, so a loop's repeated launches look nothing up twice.
 *
 * Every object read is checked first (its type pointer against
 * PyCode_Type / PyUnicode_Type / PyBytes_Type, lengths bounded, chain depth
 * bounded), so a layout we misjudged turns the frames off rather than
 * reading far.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomics.h"
#include "core/internal.h"
#include "core/unwind.h"

#include "core/pyframes_layout.h"

#define PY_311 0x030b0000u
#define MAX_PY_DEPTH 4096 /* frames walked at most: a loop guard */

typedef void *(*tstate_fn)(void);

static struct {
    pthread_mutex_t mu;   /* one search at a time */
    _Atomic bool enabled; /* the setting (GPUPROF_PYTHON_FRAMES) */
    _Atomic bool on;      /* found, 3.11: the fields below are set */
    _Atomic uint64_t looked; /* loader_adds + 1 at the last search; 0: none */
    bool said;            /* the version line was logged */
    uintptr_t lo, hi;     /* _PyEval_EvalFrameDefault's text */
    tstate_fn tstate;
    const void *code_type, *str_type, *bytes_type;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .enabled = true};

/* Frees a thread's cache of code objects (frame_key) at its exit. */
static pthread_key_t cache_key;
static bool cache_key_ok;

void gpuprof__pyframes_enable(bool on) { gp_store_relaxed(&P.enabled, on); }

/* The [lo, hi) of a function symbol; false when absent. */
static bool symbol_range(void *addr, uintptr_t *lo, uintptr_t *hi)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!addr || !dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) ||
        !sym || !sym->st_size)
        return false;
    *lo = (uintptr_t)addr;
    *hi = *lo + sym->st_size;
    return true;
}

/* Under P.mu: looks for a CPython 3.11 interpreter among the loaded
 * objects; turns P.on on when it is there. */
static void find_interpreter(void)
{
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    const unsigned long *ver = dlsym(RTLD_DEFAULT, "Py_Version");
    if (!eval)
        return; /* not a Python program (yet) */
    if (!ver || (*ver & 0xffff0000u) != PY_311 || sizeof(void *) != 8) {
        if (!P.said)
            gpuprof__log(GPUPROF_LOG_INFO,
                         "python frames: off (CPython %lx; this build reads "
                         "3.11's frames, 64-bit)", ver ? *ver : 0ul);
        P.said = true;
        return;
    }
    P.tstate = (tstate_fn)dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    P.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    P.str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    P.bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
    if (!P.tstate || !P.code_type || !P.str_type || !P.bytes_type ||
        !symbol_range(eval, &P.lo, &P.hi)) {
        if (!P.said)
            gpuprof__log(GPUPROF_LOG_INFO, "python frames: off (the "
                         "interpreter's symbols were not found)");
        P.said = true;
        return;
    }
    cache_key_ok = pthread_key_create(&cache_key, free) == 0;
    gp_store_release(&P.on, true);
    gpuprof__log(GPUPROF_LOG_INFO, "python frames: on (CPython %lx)", *ver);
}

/* Searches once per count of loaded objects: a dlopen since the last
 * search (of libpython, or a module linking it) may have brought one. */
static bool look_again(uint64_t adds)
{
    pthread_mutex_lock(&P.mu);
    if (gp_load_relaxed(&P.looked) != adds + 1 &&
        !gp_load_relaxed(&P.on)) {
        gpuprof__loader_lock_begin(); /* dlsym, dladdr */
        find_interpreter();
        gpuprof__loader_lock_end();
        gp_store_release(&P.looked, adds + 1);
    }
    pthread_mutex_unlock(&P.mu);
    return gp_load_acquire(&P.on);
}

bool gpuprof__pyframes_active(void)
{
    if (!gp_load_relaxed(&P.enabled))
        return false;
    if (gp_load_acquire(&P.on))
        return true;
    uint64_t adds = gpuprof__loader_adds();
    return gp_load_relaxed(&P.looked) == adds + 1 ? false : look_again(adds);
}

#define AT(p, off, type) (*(type const *)((const char *)(p) + (off)))

/* The text of a str object (compact ASCII, or compact with its UTF-8 made
 * already) into buf; false when it is neither. */
static bool str_text(const void *s, char *buf, size_t size)
{
    if (!s || AT(s, OB_TYPE, const void *) != P.str_type)
        return false;
    uint32_t state = AT(s, STR_STATE, uint32_t);
    int64_t n = AT(s, STR_LENGTH, int64_t);
    const char *data;
    if ((state & 0x60) == 0x60) { /* compact and ascii */
        data = (const char *)s + STR_ASCII_DATA;
    } else if ((state & 0x20) && AT(s, STR_UTF8, const char *)) {
        data = AT(s, STR_UTF8, const char *);
        n = AT(s, STR_UTF8_LENGTH, int64_t);
    } else {
        return false;
    }
    if (n < 0 || (uint64_t)n >= size)
        n = (int64_t)size - 1;
    memcpy(buf, data, (size_t)n);
    buf[n] = '\0';
    return true;
}

static uint32_t varint(const uint8_t **p, const uint8_t *end)
{
    uint32_t v = 0;
    for (int shift = 0; *p < end && shift < 32; shift += 6) {
        uint8_t b = *(*p)++;
        v |= (uint32_t)(b & 63) << shift;
        if (!(b & 64))
            break;
    }
    return v;
}

static int32_t svarint(const uint8_t **p, const uint8_t *end)
{
    uint32_t v = varint(p, end);
    return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

uint32_t gpuprof__py_line(const uint8_t *p, int64_t size, int32_t first,
                          uint64_t at)
{
    const uint8_t *end = p + (size > 0 ? size : 0);
    int32_t line = first;
    uint64_t start = 0;
    while (p < end) {
        uint8_t b = *p++;
        int kind = (b >> 3) & 15;
        uint64_t len = (b & 7) + 1u;
        if (kind == 14) { /* long: line delta, end line, two columns */
            line += svarint(&p, end);
            varint(&p, end);
            varint(&p, end);
            varint(&p, end);
        } else if (kind == 13) { /* no column */
            line += svarint(&p, end);
        } else if (kind >= 10 && kind <= 12) { /* one line, two columns */
            line += kind - 10;
            p += 2;
        } else if (kind < 10) { /* short: one column byte */
            p += 1;
        }
        if (at < start + len)
            return kind == 15 || line <= 0 ? 0 : (uint32_t)line;
        start += len;
    }
    return 0;
}

/* The line of instruction `at` (code units from the start) of `code`. */
static uint32_t code_line(const void *code, uint64_t at)
{
    const void *lt = AT(code, CO_LINETABLE, const void *);
    if (!lt || AT(lt, OB_TYPE, const void *) != P.bytes_type)
        return 0;
    return gpuprof__py_line((const uint8_t *)lt + BYTES_DATA,
                            AT(lt, VAR_SIZE, int64_t),
                            AT(code, CO_FIRSTLINENO, int32_t), at);
}

/* (code, instruction) -> (module, line): a two-way set-associative cache
 * per thread (no lock on the hot path; a miss takes the module table's),
 * allocated at the thread's first Python frame and freed at its exit: only
 * a pointer in thread-local storage, so the library still loads with
 * dlopen (static TLS is scarce). */
#define PY_SETS 256
typedef struct py_slot {
    const void *code;
    uint64_t at;
    const void *qualname, *filename; /* a code object reused: a miss */
    uint32_t module, line;
} py_slot;
typedef struct py_cache {
    py_slot way[PY_SETS][2];
    uint8_t next[PY_SETS]; /* the way to replace */
} py_cache;
static __thread py_cache *tls_cache __attribute__((tls_model("initial-exec")));
static py_cache *thread_cache(void)
{
    if (tls_cache || !cache_key_ok)
        return tls_cache;
    tls_cache = calloc(1, sizeof(*tls_cache));
    if (tls_cache && pthread_setspecific(cache_key, tls_cache)) {
        free(tls_cache);
        tls_cache = NULL;
    }
    return tls_cache;
}

/* The module and line of a frame running `code` at `at`; false when the
 * code object cannot be read or the module table is full. */
static bool frame_key(const void *code, uint64_t at, uint32_t *module,
                      uint32_t *line)
{
    const void *qn = AT(code, CO_QUALNAME, const void *),
               *fn = AT(code, CO_FILENAME, const void *);
    uint64_t h = ((uint64_t)(uintptr_t)code + at) * 0x9E3779B97F4A7C15ull;
    uint32_t set = (uint32_t)(h >> 56);
    py_cache *c = thread_cache();
    for (int w = 0; c && w < 2; w++) {
        const py_slot *s = &c->way[set][w];
        if (s->code == code && s->at == at && s->qualname == qn &&
            s->filename == fn) {
            *module = s->module;
            *line = s->line;
            return true;
        }
    }
    char name[256], file[1024], path[1400];
    if (!str_text(qn, name, sizeof(name)) ||
        !str_text(fn, file, sizeof(file)))
        return false;
    snprintf(path, sizeof(path), "%s%s:%s", GP_PY_MODULE_PREFIX, name, file);
    *module = gpuprof__module_add(path, 0, 0, 0);
    *line = code_line(code, at);
    if (*module == UINT32_MAX)
        return false;
    if (c) {
        c->way[set][c->next[set]] = (py_slot){code, at, qn, fn, *module, *line};
        c->next[set] ^= 1;
    }
    return true;
}

/* Emits the Python frames of one interpreter activation, innermost first,
 * from *f on; *f becomes the next activation's innermost frame. Returns
 * the count written, -1 when the chain cannot be read. */
static int activation(const void **f, void **out, uint64_t *py, int cap)
{
    int k = 0;
    for (int depth = 0; *f && depth < MAX_PY_DEPTH; depth++) {
        const void *fr = *f, *code = AT(fr, FR_CODE, const void *);
        if (!code || AT(code, OB_TYPE, const void *) != P.code_type)
            return -1;
        const char *first = (const char *)code + CO_CODE,
                   *instr = AT(fr, FR_PREV_INSTR, const char *);
        bool entry = AT(fr, FR_IS_ENTRY, bool);
        *f = AT(fr, FR_PREVIOUS, const void *);
        uint32_t module, line;
        /* A frame not started yet (prev_instr before its first
         * instruction) has no line to show: left out. */
        if (instr >= first && k < cap &&
            frame_key(code, (uint64_t)(instr - first) / 2, &module, &line)) {
            out[k] = (void *)code;
            py[k++] = GP_PY_FRAME | (uint64_t)module << 32 | line;
        }
        if (entry)
            break;
    }
    return k;
}

int gpuprof__pyframes_expand(void *const *buf, int n, void **out,
                             uint64_t *py, int cap, bool *cut)
{
    int i = 0;
    while (i < n && !((uintptr_t)buf[i] > P.lo && (uintptr_t)buf[i] <= P.hi))
        i++;
    if (i == n)
        return -1; /* no interpreter frame: the path as it is */
    void *ts = P.tstate();
    const void *cf = ts ? AT(ts, TS_CFRAME, const void *) : NULL;
    const void *f = cf ? AT(cf, CF_CURRENT, const void *) : NULL;
    if (!f)
        return -1;
    int k = 0;
    *cut = false;
    for (i = 0; i < n; i++) {
        uintptr_t pc = (uintptr_t)buf[i];
        if (k == cap) {
            *cut = true;
            break;
        }
        int m = f && pc > P.lo && pc <= P.hi
                    ? activation(&f, out + k, py + k, cap - k)
                    : -2;
        if (m == -1)
            return -1; /* unreadable: the native path instead */
        if (m >= 0) {
            k += m;
            continue;
        }
        out[k] = buf[i];
        py[k++] = 0;
    }
    return k;
}
