/*
 * cl_hooks.c - the OpenCL calls the layer intercepts (seed 002 §III).
 *
 * Every call that does device work or waits for it begins an operation on
 * the calling thread (call path + placeholder), goes on to the runtime
 * through the target table, and files a command whose event completes it
 * (cl.h). Hooks keep the object tables (queues, kernels, buffers) whether or
 * not measurement is running; they measure only while it is. Profiling is
 * forced on at queue creation. When the program passes no event, we make
 * one and release it; the program's own events are retained once and
 * released once, after their completion was read.
 *
 * Each hook calls gpuprof_be_op_begin itself with skip 1 (its own frame);
 * the loader's frames are hidden (opencl.c), so the innermost frame of a
 * call path is the program's call.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/cl.h"

/* ---- the common shape of an enqueue ----------------------------------- */
typedef struct enq {
    uint64_t corr;
    cl_queue *q;
    cl_cmd *c; /* &cmd while measuring, else NULL */
    cl_wait w;
    bool waiting; /* a blocking call */
    cl_event own;
    cl_event *user_ev;
    cl_cmd cmd;
} enq;

/* After gpuprof_be_op_begin: the command, our event if the program passed
 * none, the wait of a blocking call. Returns the event pointer to pass. */
static cl_event *enq_prepare(enq *e, uint32_t kind, cl_command_queue q,
                             cl_event *ev, bool blocking)
{
    e->q = NULL;
    e->c = NULL;
    e->waiting = false;
    e->own = NULL;
    e->user_ev = ev;
    if (!e->corr)
        return ev;
    e->q = gpuprof__cl_queue(q);
    e->c = &e->cmd;
    gpuprof__cl_cmd_init(e->c, e->corr, kind, e->q);
    if (blocking) {
        e->w = gpuprof__cl_wait_begin();
        e->waiting = true;
        gpuprof__cl_deps_blocking(e->corr, q);
    }
    return ev ? ev : &e->own;
}

static void enq_finish(enq *e, cl_int rc)
{
    cl_cmd *filed = NULL;
    if (e->c) {
        cl_event ev = e->user_ev ? *e->user_ev : e->own;
        if (rc == CL_SUCCESS && ev && e->user_ev)
            gpuprof__cl_deps_event(ev, e->corr); /* before filing: it may
                                                    complete and be gone */
        if (rc == CL_SUCCESS && ev)
            filed = gpuprof__cl_cmd_file(e->c, ev, !e->user_ev);
        else if (e->own && !e->user_ev)
            T.clReleaseEvent(e->own);
        if (!filed && e->c->kind == GPUPROF_OP_KERNEL)
            gpuprof_be_gpu_done(); /* no activity will end it (core idle.c) */
    }
    if (e->waiting)
        gpuprof__cl_wait_end(e->w, e->corr, filed != NULL);
    else
        gpuprof__cl_settle(false);
    gpuprof_be_op_end(e->corr);
}

#define BEGIN(kind) gpuprof_be_op_begin((kind), 1)
#define MEASURING() gpuprof__cl_measuring()

static uint64_t region_bytes(const size_t *region)
{
    return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

static uint64_t image_bytes(cl_mem img, const size_t *region)
{
    size_t el = 0;
    if (T.clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof(el), &el, NULL) !=
        CL_SUCCESS)
        el = 0;
    return region_bytes(region) * el;
}

static uint64_t mem_size(cl_mem m)
{
    size_t n = 0;
    if (T.clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof(n), &n, NULL) != CL_SUCCESS)
        n = 0;
    return n;
}

/* ---- kernels ---------------------------------------------------------- */
/* A launch's name, sizes and detector notes. */
static void kernel_launch(enq *e, cl_kernel k, uint64_t items, uint64_t group)
{
    bool not_aliased, multi;
    e->c->name = gpuprof__cl_kernel_launch(k, e->q, &e->c->binary,
                                           &not_aliased, &multi);
    e->c->work_items = items;
    e->c->group_size = group;
    if (not_aliased)
        gpuprof_be_detect_note(e->corr, GPUPROF_METRIC_DET_ARGS_NOT_ALIASED, 1);
    if (multi)
        gpuprof_be_detect_note(e->corr, GPUPROF_METRIC_DET_MULTI_CONTEXT, 1);
}
static cl_int CL_API_CALL h_EnqueueNDRangeKernel(
    cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
    const size_t *gws, const size_t *lws, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_KERNEL)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_KERNEL, q, ev, false);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c) {
        uint64_t items = gws && dim ? 1 : 0, group = lws && dim ? 1 : 0;
        for (cl_uint i = 0; i < dim && gws; i++)
            items *= gws[i];
        for (cl_uint i = 0; i < dim && lws; i++)
            group *= lws[i];
        kernel_launch(&e, k, items, group);
    }
    cl_int rc = T.clEnqueueNDRangeKernel(q, k, dim, off, gws, lws, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueTask(cl_command_queue q, cl_kernel k,
                                        cl_uint n, const cl_event *wl,
                                        cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueTask(q, k, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_KERNEL)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_KERNEL, q, ev, false);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c)
        kernel_launch(&e, k, 1, 1);
    cl_int rc = T.clEnqueueTask(q, k, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

/* ---- buffers ---------------------------------------------------------- */
static cl_int CL_API_CALL h_EnqueueReadBuffer(cl_command_queue q, cl_mem b,
                                              cl_bool blocking, size_t off,
                                              size_t size, void *ptr,
                                              cl_uint n, const cl_event *wl,
                                              cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueReadBuffer(q, b, blocking, off, size, ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2H)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2H, q, ev, blocking);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueReadBuffer(q, b, blocking, off, size, ptr, n, wl,
                                      pev);
    if (rc == CL_SUCCESS)
        gpuprof__cl_note_readback(ptr, size, b);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueWriteBuffer(cl_command_queue q, cl_mem b,
                                               cl_bool blocking, size_t off,
                                               size_t size, const void *ptr,
                                               cl_uint n, const cl_event *wl,
                                               cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueWriteBuffer(q, b, blocking, off, size, ptr, n, wl,
                                      ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_H2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_H2D, q, ev, blocking);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c) {
        e.c->bytes = size;
        if (gpuprof_be_detect_sent_again(ptr, size))
            gpuprof_be_detect_note(e.corr, GPUPROF_METRIC_DET_OUTPUT_AS_INPUT, 1);
    }
    cl_int rc = T.clEnqueueWriteBuffer(q, b, blocking, off, size, ptr, n, wl,
                                       pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueCopyBuffer(cl_command_queue q, cl_mem src,
                                              cl_mem dst, size_t so,
                                              size_t dof, size_t size,
                                              cl_uint n, const cl_event *wl,
                                              cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueCopyBuffer(q, src, dst, so, dof, size, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2D, q, ev, false);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueCopyBuffer(q, src, dst, so, dof, size, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueReadBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *bo,
    const size_t *ho, const size_t *region, size_t brp, size_t bsp, size_t hrp,
    size_t hsp, void *ptr, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueReadBufferRect(q, b, blocking, bo, ho, region, brp,
                                         bsp, hrp, hsp, ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2H)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2H, q, ev, blocking);
    if (e.c)
        e.c->bytes = region_bytes(region);
    cl_int rc = T.clEnqueueReadBufferRect(q, b, blocking, bo, ho, region, brp,
                                          bsp, hrp, hsp, ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueWriteBufferRect(
    cl_command_queue q, cl_mem b, cl_bool blocking, const size_t *bo,
    const size_t *ho, const size_t *region, size_t brp, size_t bsp, size_t hrp,
    size_t hsp, const void *ptr, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueWriteBufferRect(q, b, blocking, bo, ho, region, brp,
                                          bsp, hrp, hsp, ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_H2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_H2D, q, ev, blocking);
    if (e.c)
        e.c->bytes = region_bytes(region);
    cl_int rc = T.clEnqueueWriteBufferRect(q, b, blocking, bo, ho, region, brp,
                                           bsp, hrp, hsp, ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueCopyBufferRect(
    cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so,
    const size_t *dof, const size_t *region, size_t srp, size_t ssp,
    size_t drp, size_t dsp, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueCopyBufferRect(q, src, dst, so, dof, region, srp, ssp,
                                         drp, dsp, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2D, q, ev, false);
    if (e.c)
        e.c->bytes = region_bytes(region);
    cl_int rc = T.clEnqueueCopyBufferRect(q, src, dst, so, dof, region, srp,
                                          ssp, drp, dsp, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueFillBuffer(cl_command_queue q, cl_mem b,
                                              const void *pattern, size_t ps,
                                              size_t off, size_t size,
                                              cl_uint n, const cl_event *wl,
                                              cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueFillBuffer(q, b, pattern, ps, off, size, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_MEMSET)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MEMSET, q, ev, false);
    gpuprof__cl_deps_wait_list(e.corr, q, n, wl);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueFillBuffer(q, b, pattern, ps, off, size, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static void *CL_API_CALL h_EnqueueMapBuffer(cl_command_queue q, cl_mem b,
                                            cl_bool blocking, cl_map_flags f,
                                            size_t off, size_t size, cl_uint n,
                                            const cl_event *wl, cl_event *ev,
                                            cl_int *err)
{
    if (!MEASURING())
        return T.clEnqueueMapBuffer(q, b, blocking, f, off, size, n, wl, ev,
                                    err);
    enq e = {.corr = BEGIN(GPUPROF_OP_MAP)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MAP, q, ev, blocking);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = CL_SUCCESS;
    void *p = T.clEnqueueMapBuffer(q, b, blocking, f, off, size, n, wl, pev,
                                   &rc);
    if (err)
        *err = rc;
    enq_finish(&e, rc);
    return p;
}

static cl_int CL_API_CALL h_EnqueueUnmapMemObject(cl_command_queue q, cl_mem m,
                                                  void *ptr, cl_uint n,
                                                  const cl_event *wl,
                                                  cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueUnmapMemObject(q, m, ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_UNMAP)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_UNMAP, q, ev, false);
    cl_int rc = T.clEnqueueUnmapMemObject(q, m, ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueMigrateMemObjects(
    cl_command_queue q, cl_uint nm, const cl_mem *mems,
    cl_mem_migration_flags f, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueMigrateMemObjects(q, nm, mems, f, n, wl, ev);
    uint32_t kind = (f & CL_MIGRATE_MEM_OBJECT_HOST) ? GPUPROF_OP_COPY_D2H
                                                     : GPUPROF_OP_COPY_H2D;
    enq e = {.corr = BEGIN(kind)};
    cl_event *pev = enq_prepare(&e, kind, q, ev, false);
    if (e.c && !(f & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED))
        for (cl_uint i = 0; mems && i < nm; i++)
            e.c->bytes += mem_size(mems[i]);
    cl_int rc = T.clEnqueueMigrateMemObjects(q, nm, mems, f, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

/* ---- images ----------------------------------------------------------- */
static cl_int CL_API_CALL h_EnqueueReadImage(
    cl_command_queue q, cl_mem img, cl_bool blocking, const size_t *origin,
    const size_t *region, size_t rp, size_t sp, void *ptr, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueReadImage(q, img, blocking, origin, region, rp, sp,
                                    ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2H)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2H, q, ev, blocking);
    if (e.c)
        e.c->bytes = image_bytes(img, region);
    cl_int rc = T.clEnqueueReadImage(q, img, blocking, origin, region, rp, sp,
                                     ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueWriteImage(
    cl_command_queue q, cl_mem img, cl_bool blocking, const size_t *origin,
    const size_t *region, size_t rp, size_t sp, const void *ptr, cl_uint n,
    const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueWriteImage(q, img, blocking, origin, region, rp, sp,
                                     ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_H2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_H2D, q, ev, blocking);
    if (e.c)
        e.c->bytes = image_bytes(img, region);
    cl_int rc = T.clEnqueueWriteImage(q, img, blocking, origin, region, rp, sp,
                                      ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueCopyImage(cl_command_queue q, cl_mem src,
                                             cl_mem dst, const size_t *so,
                                             const size_t *dof,
                                             const size_t *region, cl_uint n,
                                             const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueCopyImage(q, src, dst, so, dof, region, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2D, q, ev, false);
    if (e.c)
        e.c->bytes = image_bytes(src, region);
    cl_int rc = T.clEnqueueCopyImage(q, src, dst, so, dof, region, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueCopyImageToBuffer(
    cl_command_queue q, cl_mem src, cl_mem dst, const size_t *so,
    const size_t *region, size_t doff, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueCopyImageToBuffer(q, src, dst, so, region, doff, n,
                                            wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2D, q, ev, false);
    if (e.c)
        e.c->bytes = image_bytes(src, region);
    cl_int rc = T.clEnqueueCopyImageToBuffer(q, src, dst, so, region, doff, n,
                                             wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueCopyBufferToImage(
    cl_command_queue q, cl_mem src, cl_mem dst, size_t soff,
    const size_t *dof, const size_t *region, cl_uint n, const cl_event *wl,
    cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueCopyBufferToImage(q, src, dst, soff, dof, region, n,
                                            wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_D2D)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_D2D, q, ev, false);
    if (e.c)
        e.c->bytes = image_bytes(dst, region);
    cl_int rc = T.clEnqueueCopyBufferToImage(q, src, dst, soff, dof, region, n,
                                             wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueFillImage(cl_command_queue q, cl_mem img,
                                             const void *color,
                                             const size_t *origin,
                                             const size_t *region, cl_uint n,
                                             const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueFillImage(q, img, color, origin, region, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_MEMSET)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MEMSET, q, ev, false);
    if (e.c)
        e.c->bytes = image_bytes(img, region);
    cl_int rc = T.clEnqueueFillImage(q, img, color, origin, region, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static void *CL_API_CALL h_EnqueueMapImage(
    cl_command_queue q, cl_mem img, cl_bool blocking, cl_map_flags f,
    const size_t *origin, const size_t *region, size_t *rp, size_t *sp,
    cl_uint n, const cl_event *wl, cl_event *ev, cl_int *err)
{
    if (!MEASURING())
        return T.clEnqueueMapImage(q, img, blocking, f, origin, region, rp, sp,
                                   n, wl, ev, err);
    enq e = {.corr = BEGIN(GPUPROF_OP_MAP)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MAP, q, ev, blocking);
    if (e.c)
        e.c->bytes = image_bytes(img, region);
    cl_int rc = CL_SUCCESS;
    void *p = T.clEnqueueMapImage(q, img, blocking, f, origin, region, rp, sp,
                                  n, wl, pev, &rc);
    if (err)
        *err = rc;
    enq_finish(&e, rc);
    return p;
}

/* ---- SVM -------------------------------------------------------------- */
static cl_int CL_API_CALL h_EnqueueSVMMemcpy(cl_command_queue q,
                                             cl_bool blocking, void *dst,
                                             const void *src, size_t size,
                                             cl_uint n, const cl_event *wl,
                                             cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMMemcpy(q, blocking, dst, src, size, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_COPY_OTHER)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_COPY_OTHER, q, ev, blocking);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueSVMMemcpy(q, blocking, dst, src, size, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueSVMMemFill(cl_command_queue q, void *ptr,
                                              const void *pattern, size_t ps,
                                              size_t size, cl_uint n,
                                              const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMMemFill(q, ptr, pattern, ps, size, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_MEMSET)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MEMSET, q, ev, false);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueSVMMemFill(q, ptr, pattern, ps, size, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueSVMMap(cl_command_queue q, cl_bool blocking,
                                          cl_map_flags f, void *ptr,
                                          size_t size, cl_uint n,
                                          const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMMap(q, blocking, f, ptr, size, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_MAP)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_MAP, q, ev, blocking);
    if (e.c)
        e.c->bytes = size;
    cl_int rc = T.clEnqueueSVMMap(q, blocking, f, ptr, size, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueSVMUnmap(cl_command_queue q, void *ptr,
                                            cl_uint n, const cl_event *wl,
                                            cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMUnmap(q, ptr, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_UNMAP)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_UNMAP, q, ev, false);
    cl_int rc = T.clEnqueueSVMUnmap(q, ptr, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueSVMFree(
    cl_command_queue q, cl_uint np, void *ptrs[],
    void(CL_CALLBACK *fn)(cl_command_queue, cl_uint, void *[], void *),
    void *user, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMFree(q, np, ptrs, fn, user, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_FREE)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_FREE, q, ev, false);
    cl_int rc = T.clEnqueueSVMFree(q, np, ptrs, fn, user, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueSVMMigrateMem(
    cl_command_queue q, cl_uint np, const void **ptrs, const size_t *sizes,
    cl_mem_migration_flags f, cl_uint n, const cl_event *wl, cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueSVMMigrateMem(q, np, ptrs, sizes, f, n, wl, ev);
    uint32_t kind = (f & CL_MIGRATE_MEM_OBJECT_HOST) ? GPUPROF_OP_COPY_D2H
                                                     : GPUPROF_OP_COPY_H2D;
    enq e = {.corr = BEGIN(kind)};
    cl_event *pev = enq_prepare(&e, kind, q, ev, false);
    if (e.c && sizes)
        for (cl_uint i = 0; i < np; i++)
            e.c->bytes += sizes[i];
    cl_int rc = T.clEnqueueSVMMigrateMem(q, np, ptrs, sizes, f, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

/* ---- markers and barriers --------------------------------------------- */
static cl_int CL_API_CALL h_EnqueueMarkerWithWaitList(cl_command_queue q,
                                                      cl_uint n,
                                                      const cl_event *wl,
                                                      cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueMarkerWithWaitList(q, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_OTHER)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_OTHER, q, ev, false);
    cl_int rc = T.clEnqueueMarkerWithWaitList(q, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueBarrierWithWaitList(cl_command_queue q,
                                                       cl_uint n,
                                                       const cl_event *wl,
                                                       cl_event *ev)
{
    if (!MEASURING())
        return T.clEnqueueBarrierWithWaitList(q, n, wl, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_OTHER)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_OTHER, q, ev, false);
    cl_int rc = T.clEnqueueBarrierWithWaitList(q, n, wl, pev);
    enq_finish(&e, rc);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueMarker(cl_command_queue q, cl_event *ev)
{
    if (!MEASURING() || !ev)
        return T.clEnqueueMarker(q, ev);
    enq e = {.corr = BEGIN(GPUPROF_OP_OTHER)};
    cl_event *pev = enq_prepare(&e, GPUPROF_OP_OTHER, q, ev, false);
    cl_int rc = T.clEnqueueMarker(q, pev);
    enq_finish(&e, rc);
    return rc;
}

/* Commands without an event: the call path and a zero-length operation. */
static cl_int CL_API_CALL h_EnqueueBarrier(cl_command_queue q)
{
    if (!MEASURING())
        return T.clEnqueueBarrier(q);
    uint64_t corr = BEGIN(GPUPROF_OP_OTHER);
    uint64_t t0 = gpuprof_be_now_ns();
    cl_int rc = T.clEnqueueBarrier(q);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_OTHER, t0, t0, 0, 0, NULL, NULL);
    gpuprof_be_op_end(corr);
    return rc;
}

static cl_int CL_API_CALL h_EnqueueWaitForEvents(cl_command_queue q,
                                                 cl_uint n, const cl_event *l)
{
    if (!MEASURING())
        return T.clEnqueueWaitForEvents(q, n, l);
    uint64_t corr = BEGIN(GPUPROF_OP_OTHER);
    uint64_t t0 = gpuprof_be_now_ns();
    cl_int rc = T.clEnqueueWaitForEvents(q, n, l);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_OTHER, t0, t0, 0, 0, NULL, NULL);
    gpuprof_be_op_end(corr);
    return rc;
}

/* ---- waits ------------------------------------------------------------ */
static cl_int CL_API_CALL h_Finish(cl_command_queue q)
{
    if (!MEASURING())
        return T.clFinish(q);
    uint64_t corr = BEGIN(GPUPROF_OP_SYNC);
    cl_wait w = gpuprof__cl_wait_begin();
    gpuprof__cl_deps_finish(corr, q);
    cl_int rc = T.clFinish(q);
    gpuprof__cl_wait_end(w, corr, false);
    gpuprof_be_op_end(corr);
    return rc;
}

static cl_int CL_API_CALL h_WaitForEvents(cl_uint n, const cl_event *l)
{
    if (!MEASURING())
        return T.clWaitForEvents(n, l);
    uint64_t corr = BEGIN(GPUPROF_OP_SYNC);
    cl_wait w = gpuprof__cl_wait_begin();
    gpuprof__cl_deps_wait_events(corr, n, l);
    cl_int rc = T.clWaitForEvents(n, l);
    gpuprof__cl_wait_end(w, corr, false);
    gpuprof_be_op_end(corr);
    return rc;
}

/* ---- programs: JIT time, the single-device detector -------------------- */
/* A build may start the compiler's helper processes (PoCL runs a linker):
 * forks meanwhile are not the measured program (core self.c). */
#define HELPERS(call)                                                          \
    __extension__({                                                            \
        gpuprof_be_helpers_begin();                                            \
        __typeof__(call) r_ = (call);                                          \
        gpuprof_be_helpers_end();                                              \
        r_;                                                                    \
    })

static cl_int CL_API_CALL h_BuildProgram(
    cl_program p, cl_uint nd, const cl_device_id *d, const char *opts,
    void(CL_CALLBACK *fn)(cl_program, void *), void *user)
{
    gpuprof__cl_program_forget(p); /* rebuilt: new binaries */
    if (!MEASURING())
        return HELPERS(T.clBuildProgram(p, nd, d, opts, fn, user));
    uint64_t corr = BEGIN(GPUPROF_OP_BUILD);
    uint64_t t0 = gpuprof_be_now_ns();
    cl_int rc = HELPERS(T.clBuildProgram(p, nd, d, opts, fn, user));
    uint64_t t1 = gpuprof_be_now_ns();
    if (rc == CL_SUCCESS)
        gpuprof__cl_build_done(p, nd, corr);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_BUILD, t0, t1, 0, 0, NULL, NULL);
    gpuprof_be_op_end(corr);
    return rc;
}

static cl_int CL_API_CALL h_CompileProgram(
    cl_program p, cl_uint nd, const cl_device_id *d, const char *opts,
    cl_uint nh, const cl_program *hdrs, const char **names,
    void(CL_CALLBACK *fn)(cl_program, void *), void *user)
{
    gpuprof__cl_program_forget(p);
    if (!MEASURING())
        return HELPERS(T.clCompileProgram(p, nd, d, opts, nh, hdrs, names, fn, user));
    uint64_t corr = BEGIN(GPUPROF_OP_BUILD);
    uint64_t t0 = gpuprof_be_now_ns();
    cl_int rc = HELPERS(T.clCompileProgram(p, nd, d, opts, nh, hdrs, names, fn, user));
    uint64_t t1 = gpuprof_be_now_ns();
    if (rc == CL_SUCCESS)
        gpuprof__cl_build_done(p, nd, corr);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_BUILD, t0, t1, 0, 0, NULL, NULL);
    gpuprof_be_op_end(corr);
    return rc;
}

static cl_program CL_API_CALL h_LinkProgram(
    cl_context ctx, cl_uint nd, const cl_device_id *d, const char *opts,
    cl_uint np, const cl_program *progs,
    void(CL_CALLBACK *fn)(cl_program, void *), void *user, cl_int *err)
{
    cl_program p;
    if (!MEASURING()) {
        p = HELPERS(T.clLinkProgram(ctx, nd, d, opts, np, progs, fn, user, err));
        if (p) /* a new program where a released one may have been */
            gpuprof__cl_program_forget(p);
        return p;
    }
    uint64_t corr = BEGIN(GPUPROF_OP_BUILD);
    uint64_t t0 = gpuprof_be_now_ns();
    p = HELPERS(T.clLinkProgram(ctx, nd, d, opts, np, progs, fn, user, err));
    uint64_t t1 = gpuprof_be_now_ns();
    if (p)
        gpuprof__cl_program_forget(p);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_BUILD, t0, t1, 0, 0, NULL, NULL);
    gpuprof_be_op_end(corr);
    return p;
}

/* ---- contexts and queues ---------------------------------------------- */
static void context_made(cl_context c, uint64_t corr, uint64_t t0)
{
    uint64_t t1 = gpuprof_be_now_ns();
    bool first = c && gpuprof__cl_context_new(c, corr);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_OTHER, t0, t1,
                        first ? GPUPROF_ACTIVITY_MORE : 0, 0, NULL, NULL);
}

static cl_context CL_API_CALL h_CreateContext(
    const cl_context_properties *props, cl_uint nd, const cl_device_id *d,
    void(CL_CALLBACK *fn)(const char *, const void *, size_t, void *),
    void *user, cl_int *err)
{
    uint64_t corr = MEASURING() ? BEGIN(GPUPROF_OP_OTHER) : 0;
    uint64_t t0 = gpuprof_be_now_ns();
    cl_context c = T.clCreateContext(props, nd, d, fn, user, err);
    if (c && corr)
        context_made(c, corr, t0);
    else if (c)
        gpuprof__cl_context_new(c, 0);
    gpuprof_be_op_end(corr);
    return c;
}

static cl_context CL_API_CALL h_CreateContextFromType(
    const cl_context_properties *props, cl_device_type type,
    void(CL_CALLBACK *fn)(const char *, const void *, size_t, void *),
    void *user, cl_int *err)
{
    uint64_t corr = MEASURING() ? BEGIN(GPUPROF_OP_OTHER) : 0;
    uint64_t t0 = gpuprof_be_now_ns();
    cl_context c = T.clCreateContextFromType(props, type, fn, user, err);
    if (c && corr)
        context_made(c, corr, t0);
    else if (c)
        gpuprof__cl_context_new(c, 0);
    gpuprof_be_op_end(corr);
    return c;
}

static void queue_made(cl_command_queue q, cl_context ctx, cl_device_id d,
                       cl_command_queue_properties p, uint64_t corr,
                       uint64_t t0)
{
    if (!q)
        return;
    bool in_order = !(p & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    gpuprof__cl_queue_new(q, ctx, d, in_order, corr);
    gpuprof__cl_host_activity(corr, GPUPROF_OP_OTHER, t0, gpuprof_be_now_ns(),
                              0, 0, NULL, NULL);
}

static cl_command_queue CL_API_CALL h_CreateCommandQueue(
    cl_context ctx, cl_device_id d, cl_command_queue_properties p, cl_int *err)
{
    uint64_t corr = MEASURING() ? BEGIN(GPUPROF_OP_OTHER) : 0;
    uint64_t t0 = gpuprof_be_now_ns();
    cl_command_queue q = T.clCreateCommandQueue(
        ctx, d, p | CL_QUEUE_PROFILING_ENABLE, err);
    queue_made(q, ctx, d, p, corr, t0);
    gpuprof_be_op_end(corr);
    return q;
}

#define MAX_QPROPS 64
static cl_command_queue CL_API_CALL h_CreateCommandQueueWithProperties(
    cl_context ctx, cl_device_id d, const cl_queue_properties *props,
    cl_int *err)
{
    /* The same list with CL_QUEUE_PROFILING_ENABLE in CL_QUEUE_PROPERTIES. */
    cl_queue_properties mine[2 * MAX_QPROPS + 3];
    cl_command_queue_properties p = 0;
    int n = 0, at = -1;
    for (; props && props[n] && n < 2 * MAX_QPROPS; n += 2) {
        mine[n] = props[n];
        mine[n + 1] = props[n + 1];
        if (props[n] == CL_QUEUE_PROPERTIES) {
            at = n + 1;
            p = (cl_command_queue_properties)props[n + 1];
        }
    }
    if (props && props[n]) { /* longer than we copy: leave it alone */
        return T.clCreateCommandQueueWithProperties(ctx, d, props, err);
    }
    if (at < 0) {
        mine[n++] = CL_QUEUE_PROPERTIES;
        at = n++;
    }
    mine[at] = (cl_queue_properties)(p | CL_QUEUE_PROFILING_ENABLE);
    mine[n] = 0;
    uint64_t corr = MEASURING() ? BEGIN(GPUPROF_OP_OTHER) : 0;
    uint64_t t0 = gpuprof_be_now_ns();
    cl_command_queue q = T.clCreateCommandQueueWithProperties(ctx, d, mine, err);
    queue_made(q, ctx, d, p, corr, t0);
    gpuprof_be_op_end(corr);
    return q;
}

static cl_int CL_API_CALL h_ReleaseCommandQueue(cl_command_queue q)
{
    cl_uint refs = 0;
    if (T.clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof(refs),
                                &refs, NULL) != CL_SUCCESS)
        refs = 0;
    cl_int rc = T.clReleaseCommandQueue(q);
    if (rc == CL_SUCCESS && refs == 1)
        gpuprof__cl_queue_forget(q);
    return rc;
}

/* ---- kernels and buffers: names, arguments, extents -------------------- */
static cl_kernel CL_API_CALL h_CreateKernel(cl_program p, const char *name,
                                            cl_int *err)
{
    cl_kernel k = T.clCreateKernel(p, name, err);
    if (k) {
        gpuprof__cl_program_binaries(p);
        gpuprof__cl_kern_new(k);
    }
    return k;
}

static cl_int CL_API_CALL h_CreateKernelsInProgram(cl_program p, cl_uint n,
                                                   cl_kernel *ks,
                                                   cl_uint *ret)
{
    cl_uint got = 0;
    cl_int rc = T.clCreateKernelsInProgram(p, n, ks, &got);
    if (ret)
        *ret = got;
    if (rc == CL_SUCCESS && ks && got)
        gpuprof__cl_program_binaries(p);
    for (cl_uint i = 0; rc == CL_SUCCESS && ks && i < got && i < n; i++)
        gpuprof__cl_kern_new(ks[i]);
    return rc;
}

static cl_int CL_API_CALL h_ReleaseKernel(cl_kernel k)
{
    cl_uint refs = 0;
    if (T.clGetKernelInfo(k, CL_KERNEL_REFERENCE_COUNT, sizeof(refs), &refs,
                          NULL) != CL_SUCCESS)
        refs = 0;
    cl_int rc = T.clReleaseKernel(k);
    if (rc == CL_SUCCESS && refs == 1)
        gpuprof__cl_kern_forget(k);
    return rc;
}

static cl_int CL_API_CALL h_ReleaseProgram(cl_program p)
{
    cl_uint refs = 0;
    if (T.clGetProgramInfo(p, CL_PROGRAM_REFERENCE_COUNT, sizeof(refs), &refs,
                           NULL) != CL_SUCCESS)
        refs = 0;
    cl_int rc = T.clReleaseProgram(p);
    if (rc == CL_SUCCESS && refs == 1)
        gpuprof__cl_program_forget(p);
    return rc;
}

static cl_int CL_API_CALL h_SetKernelArg(cl_kernel k, cl_uint i, size_t size,
                                         const void *value)
{
    cl_int rc = T.clSetKernelArg(k, i, size, value);
    if (rc == CL_SUCCESS)
        gpuprof__cl_kern_set_arg(k, i, size, value, false);
    return rc;
}

static cl_int CL_API_CALL h_SetKernelArgSVMPointer(cl_kernel k, cl_uint i,
                                                   const void *ptr)
{
    cl_int rc = T.clSetKernelArgSVMPointer(k, i, ptr);
    if (rc == CL_SUCCESS)
        gpuprof__cl_kern_set_arg(k, i, sizeof(ptr), &ptr, true);
    return rc;
}

static cl_mem CL_API_CALL h_CreateBuffer(cl_context ctx, cl_mem_flags f,
                                         size_t size, void *host, cl_int *err)
{
    cl_mem m = T.clCreateBuffer(ctx, f, size, host, err);
    if (m)
        gpuprof__cl_mem_new(m);
    return m;
}

static cl_mem CL_API_CALL h_CreateSubBuffer(cl_mem b, cl_mem_flags f,
                                            cl_buffer_create_type t,
                                            const void *info, cl_int *err)
{
    cl_mem m = T.clCreateSubBuffer(b, f, t, info, err);
    if (m)
        gpuprof__cl_mem_new(m);
    return m;
}

static cl_int CL_API_CALL h_ReleaseMemObject(cl_mem m)
{
    cl_uint refs = 0;
    if (T.clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof(refs), &refs,
                             NULL) != CL_SUCCESS)
        refs = 0;
    cl_int rc = T.clReleaseMemObject(m);
    if (rc == CL_SUCCESS && refs == 1)
        gpuprof__cl_mem_forget(m);
    return rc;
}

/* ---- the table -------------------------------------------------------- */
void gpuprof__cl_hooks_install(struct _cl_icd_dispatch *h)
{
/* A hook only where the runtime has the entry: a NULL entry stays NULL. */
#define HOOK(fn)                                                               \
    do {                                                                       \
        if (T.cl##fn)                                                          \
            h->cl##fn = h_##fn;                                                \
    } while (0)
    HOOK(EnqueueNDRangeKernel);
    HOOK(EnqueueTask);
    HOOK(EnqueueReadBuffer);
    HOOK(EnqueueWriteBuffer);
    HOOK(EnqueueCopyBuffer);
    HOOK(EnqueueReadBufferRect);
    HOOK(EnqueueWriteBufferRect);
    HOOK(EnqueueCopyBufferRect);
    HOOK(EnqueueFillBuffer);
    HOOK(EnqueueMapBuffer);
    HOOK(EnqueueUnmapMemObject);
    HOOK(EnqueueMigrateMemObjects);
    HOOK(EnqueueReadImage);
    HOOK(EnqueueWriteImage);
    HOOK(EnqueueCopyImage);
    HOOK(EnqueueCopyImageToBuffer);
    HOOK(EnqueueCopyBufferToImage);
    HOOK(EnqueueFillImage);
    HOOK(EnqueueMapImage);
    HOOK(EnqueueSVMMemcpy);
    HOOK(EnqueueSVMMemFill);
    HOOK(EnqueueSVMMap);
    HOOK(EnqueueSVMUnmap);
    HOOK(EnqueueSVMFree);
    HOOK(EnqueueSVMMigrateMem);
    HOOK(EnqueueMarkerWithWaitList);
    HOOK(EnqueueBarrierWithWaitList);
    HOOK(EnqueueMarker);
    HOOK(EnqueueBarrier);
    HOOK(EnqueueWaitForEvents);
    HOOK(Finish);
    HOOK(WaitForEvents);
    HOOK(BuildProgram);
    HOOK(CompileProgram);
    HOOK(LinkProgram);
    HOOK(CreateContext);
    HOOK(CreateContextFromType);
    HOOK(CreateCommandQueue);
    HOOK(CreateCommandQueueWithProperties);
    HOOK(ReleaseCommandQueue);
    HOOK(CreateKernel);
    HOOK(CreateKernelsInProgram);
    HOOK(ReleaseProgram);
    HOOK(ReleaseKernel);
    HOOK(SetKernelArg);
    HOOK(SetKernelArgSVMPointer);
    HOOK(CreateBuffer);
    HOOK(CreateSubBuffer);
    HOOK(ReleaseMemObject);
#undef HOOK
}
