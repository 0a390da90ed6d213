/* tests/fakeze/fz_memory.c - what the fake driver hands out to be named in
 * commands: memory (host memory standing in for host, device and shared
 * allocations, remembered so zeMemGetAllocProperties can tell a copy's
 * direction), modules (any bytes, kept for zeModuleGetNativeBinary; a
 * SPIR-V module's OpEntryPoint names are its kernels) and kernels. */
#include "fakeze.h"

#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- memory -- */

struct fz_alloc {
    void *base;
    size_t size;
    ze_memory_type_t type;
    uint64_t id;
    struct fz_alloc *next;
};

static struct fz_alloc *allocs; /* fz.lock */

static ze_result_t mem_alloc(size_t size, size_t align, ze_memory_type_t type,
                             void **out)
{
    if (out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0)
        return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (align == 0)
        align = 64;
    if (align & (align - 1))
        return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    if (align < sizeof(void *))
        align = sizeof(void *);
    struct fz_alloc *a = calloc(1, sizeof *a);
    if (a == NULL || posix_memalign(&a->base, align, size) != 0) {
        free(a);
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    }
    a->size = size;
    a->type = type;
    pthread_mutex_lock(&fz.lock);
    a->id = ++fz.next_id;
    a->next = allocs;
    allocs = a;
    pthread_mutex_unlock(&fz.lock);
    *out = a->base;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_alloc_shared(ze_context_handle_t c,
                                    const ze_device_mem_alloc_desc_t *dd,
                                    const ze_host_mem_alloc_desc_t *hd,
                                    size_t size, size_t align,
                                    ze_device_handle_t dev, void **out)
{
    return mem_alloc(size, align, ZE_MEMORY_TYPE_SHARED, out);
}

static ze_result_t mem_alloc_device(ze_context_handle_t c,
                                    const ze_device_mem_alloc_desc_t *d,
                                    size_t size, size_t align,
                                    ze_device_handle_t dev, void **out)
{
    return mem_alloc(size, align, ZE_MEMORY_TYPE_DEVICE, out);
}

static ze_result_t mem_alloc_host(ze_context_handle_t c,
                                  const ze_host_mem_alloc_desc_t *d,
                                  size_t size, size_t align, void **out)
{
    return mem_alloc(size, align, ZE_MEMORY_TYPE_HOST, out);
}

/* The allocation holding p; fz.lock held. */
static struct fz_alloc *find(const void *p)
{
    for (struct fz_alloc *a = allocs; a != NULL; a = a->next)
        if ((const char *)p >= (const char *)a->base &&
            (const char *)p < (const char *)a->base + a->size)
            return a;
    return NULL;
}

const char *fz_mem_kind(const void *p)
{
    struct fz_alloc *a = find(p);
    if (a == NULL)
        return "system";
    return a->type == ZE_MEMORY_TYPE_HOST     ? "host"
           : a->type == ZE_MEMORY_TYPE_DEVICE ? "device"
                                              : "shared";
}

static ze_result_t mem_free(ze_context_handle_t c, void *p)
{
    if (p == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pthread_mutex_lock(&fz.lock);
    struct fz_alloc **pp = &allocs;
    while (*pp != NULL && (*pp)->base != p)
        pp = &(*pp)->next;
    struct fz_alloc *a = *pp;
    if (a != NULL)
        *pp = a->next;
    pthread_mutex_unlock(&fz.lock);
    if (a == NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    free(a->base);
    free(a);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_properties(ze_context_handle_t c, const void *p,
                                  ze_memory_allocation_properties_t *props,
                                  ze_device_handle_t *dev)
{
    if (props == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    pthread_mutex_lock(&fz.lock);
    struct fz_alloc *a = find(p);
    props->type = a ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
    props->id = a ? a->id : 0;
    props->pageSize = a ? 4096 : 0;
    pthread_mutex_unlock(&fz.lock);
    if (dev != NULL)
        *dev = a && a->type != ZE_MEMORY_TYPE_HOST ? &fz.devices[0] : NULL;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_range(ze_context_handle_t c, const void *p, void **base,
                             size_t *size)
{
    pthread_mutex_lock(&fz.lock);
    struct fz_alloc *a = find(p);
    if (a != NULL) {
        if (base != NULL)
            *base = a->base;
        if (size != NULL)
            *size = a->size;
    }
    pthread_mutex_unlock(&fz.lock);
    return a ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_UNKNOWN;
}

void fz_fill_mem(ze_mem_dditable_t *t)
{
    t->pfnAllocShared = mem_alloc_shared;
    t->pfnAllocDevice = mem_alloc_device;
    t->pfnAllocHost = mem_alloc_host;
    t->pfnFree = mem_free;
    t->pfnGetAllocProperties = mem_properties;
    t->pfnGetAddressRange = mem_range;
}

/* --------------------------------------------------------------- module -- */

/* Adds the OpEntryPoint names of a SPIR-V module (words in host order, the
 * magic checked by the caller). Returns false on a malformed module. */
static bool spirv_entry_points(struct _ze_module_handle_t *m, const uint32_t *w,
                               size_t n)
{
    for (size_t i = 5; i < n;) {
        uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
        if (count == 0 || i + count > n)
            return false;
        if (op == 15 && count > 3) { /* OpEntryPoint model id "name" ... */
            const char *name = (const char *)&w[i + 3];
            size_t max = (count - 3) * 4;
            size_t len = strnlen(name, max);
            char **names = realloc(m->kernel_names,
                                   (m->n_kernel_names + 1) * sizeof *names);
            if (len == max || names == NULL)
                return false;
            m->kernel_names = names;
            names[m->n_kernel_names] = strndup(name, len);
            if (names[m->n_kernel_names] == NULL)
                return false;
            m->n_kernel_names++;
        }
        i += count;
    }
    return true;
}

static void module_free(struct _ze_module_handle_t *m)
{
    for (uint32_t i = 0; i < m->n_kernel_names; i++)
        free(m->kernel_names[i]);
    free(m->kernel_names);
    free(m->bytes);
    fz_delete(m);
}

static ze_result_t module_create(ze_context_handle_t c, ze_device_handle_t dev,
                                 const ze_module_desc_t *desc,
                                 ze_module_handle_t *out,
                                 ze_module_build_log_handle_t *log)
{
    if (desc == NULL || out == NULL || desc->pInputModule == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->inputSize == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    struct _ze_module_handle_t *m = fz_new(sizeof *m);
    if (m == NULL || (m->bytes = malloc(desc->inputSize)) == NULL) {
        fz_delete(m);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    m->dev = dev;
    m->size = desc->inputSize;
    memcpy(m->bytes, desc->pInputModule, m->size);
    uint32_t magic = 0;
    if (m->size >= 20 && m->size % 4 == 0)
        memcpy(&magic, m->bytes, 4);
    if (magic == 0x07230203) {
        uint32_t *words = malloc(m->size);
        bool ok = words != NULL;
        if (ok) {
            memcpy(words, m->bytes, m->size);
            ok = spirv_entry_points(m, words, m->size / 4);
        }
        free(words);
        if (!ok) {
            module_free(m);
            return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
        }
    }
    if (log != NULL)
        *log = fz_new(sizeof **log);
    *out = m;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_destroy(ze_module_handle_t m)
{
    if (m == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    module_free(m);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_native_binary(ze_module_handle_t m, size_t *size,
                                        uint8_t *out)
{
    if (m == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (size == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (out != NULL)
        memcpy(out, m->bytes, *size < m->size ? *size : m->size);
    *size = m->size;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_kernel_names(ze_module_handle_t m, uint32_t *count,
                                       const char **names)
{
    if (m == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (*count == 0 || names == NULL) {
        *count = m->n_kernel_names;
        return ZE_RESULT_SUCCESS;
    }
    if (*count > m->n_kernel_names)
        *count = m->n_kernel_names;
    for (uint32_t i = 0; i < *count; i++)
        names[i] = m->kernel_names[i];
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_properties(ze_module_handle_t m,
                                     ze_module_properties_t *p)
{
    p->flags = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t module_dynamic_link(uint32_t n, ze_module_handle_t *m,
                                       ze_module_build_log_handle_t *log)
{
    if (log != NULL)
        *log = fz_new(sizeof **log);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t log_destroy(ze_module_build_log_handle_t log)
{
    fz_delete(log);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t log_string(ze_module_build_log_handle_t log, size_t *size,
                              char *out)
{
    if (out != NULL && *size > 0)
        out[0] = '\0';
    *size = 1;
    return ZE_RESULT_SUCCESS;
}

void fz_fill_module(ze_module_dditable_t *t)
{
    t->pfnCreate = module_create;
    t->pfnDestroy = module_destroy;
    t->pfnDynamicLink = module_dynamic_link;
    t->pfnGetNativeBinary = module_native_binary;
    t->pfnGetKernelNames = module_kernel_names;
    t->pfnGetProperties = module_properties;
}

void fz_fill_module_build_log(ze_module_build_log_dditable_t *t)
{
    t->pfnDestroy = log_destroy;
    t->pfnGetString = log_string;
}

/* --------------------------------------------------------------- kernel -- */

static ze_result_t kernel_create(ze_module_handle_t m,
                                 const ze_kernel_desc_t *desc,
                                 ze_kernel_handle_t *out)
{
    if (m == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == NULL || desc->pKernelName == NULL || out == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (strlen(desc->pKernelName) >= FZ_NAME_MAX)
        return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    bool known = m->kernel_names == NULL;
    for (uint32_t i = 0; i < m->n_kernel_names; i++)
        known = known || strcmp(m->kernel_names[i], desc->pKernelName) == 0;
    if (!known)
        return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    struct _ze_kernel_handle_t *k = fz_new(sizeof *k);
    if (k == NULL)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    k->module = m;
    strcpy(k->name, desc->pKernelName);
    k->group[0] = k->group[1] = k->group[2] = 1;
    *out = k;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_destroy(ze_kernel_handle_t k)
{
    fz_delete(k);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_group_size(ze_kernel_handle_t k, uint32_t x,
                                     uint32_t y, uint32_t z)
{
    if (k == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (x == 0 || y == 0 || z == 0 || (uint64_t)x * y * z > 1024)
        return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    k->group[0] = x;
    k->group[1] = y;
    k->group[2] = z;
    return ZE_RESULT_SUCCESS;
}

static uint32_t suggest(uint32_t n)
{
    uint32_t g = 256;
    while (g > 1 && n % g != 0)
        g /= 2;
    return g;
}

static ze_result_t kernel_suggest(ze_kernel_handle_t k, uint32_t x, uint32_t y,
                                  uint32_t z, uint32_t *gx, uint32_t *gy,
                                  uint32_t *gz)
{
    *gx = suggest(x);
    *gy = 1;
    *gz = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_max_coop(ze_kernel_handle_t k, uint32_t *count)
{
    *count = 64;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_arg(ze_kernel_handle_t k, uint32_t index, size_t size,
                              const void *v)
{
    return k ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

static ze_result_t kernel_indirect(ze_kernel_handle_t k,
                                   ze_kernel_indirect_access_flags_t f)
{
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_get_indirect(ze_kernel_handle_t k,
                                       ze_kernel_indirect_access_flags_t *f)
{
    *f = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_source_attributes(ze_kernel_handle_t k,
                                            uint32_t *size, char **s)
{
    static char none[] = "";
    if (s != NULL && *size > 0)
        *s = none;
    *size = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_cache_config(ze_kernel_handle_t k,
                                       ze_cache_config_flags_t f)
{
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_properties(ze_kernel_handle_t k,
                                     ze_kernel_properties_t *p)
{
    if (k == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    p->numKernelArgs = 0;
    p->requiredGroupSizeX = p->requiredGroupSizeY = p->requiredGroupSizeZ = 0;
    p->requiredNumSubGroups = p->requiredSubgroupSize = 0;
    p->maxSubgroupSize = 32;
    p->maxNumSubgroups = 64;
    p->localMemSize = p->privateMemSize = p->spillMemSize = 0;
    memset(&p->uuid, 0, sizeof p->uuid);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_name(ze_kernel_handle_t k, size_t *size, char *name)
{
    if (k == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    size_t len = strlen(k->name) + 1;
    if (name != NULL && *size > 0) {
        size_t n = *size < len ? *size : len;
        memcpy(name, k->name, n);
        name[n - 1] = '\0';
    }
    *size = len;
    return ZE_RESULT_SUCCESS;
}

void fz_fill_kernel(ze_kernel_dditable_t *t)
{
    t->pfnCreate = kernel_create;
    t->pfnDestroy = kernel_destroy;
    t->pfnSetCacheConfig = kernel_cache_config;
    t->pfnSetGroupSize = kernel_group_size;
    t->pfnSuggestGroupSize = kernel_suggest;
    t->pfnSuggestMaxCooperativeGroupCount = kernel_max_coop;
    t->pfnSetArgumentValue = kernel_arg;
    t->pfnSetIndirectAccess = kernel_indirect;
    t->pfnGetIndirectAccess = kernel_get_indirect;
    t->pfnGetSourceAttributes = kernel_source_attributes;
    t->pfnGetProperties = kernel_properties;
    t->pfnGetName = kernel_name;
}

uint64_t fz_kernel_ns(const char *name)
{
    for (size_t i = 0; i < fz.k.n_kernels; i++)
        if (strcmp(fz.k.kernels[i].name, name) == 0)
            return fz.k.kernels[i].ns;
    return fz.k.kernel_ns;
}
