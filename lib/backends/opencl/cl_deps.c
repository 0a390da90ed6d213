/*
 * cl_deps.c - the OpenCL backend's dependency notes for traces (trace
 * format 1.3; lib/core/gpu.h gpuprof_be_op_dep): clFinish waits for its
 * queue, clWaitForEvents for the commands that made its events, a command
 * with an event wait list waits (on the device) for those commands, and a
 * blocking enqueue returns when its own command has run. In-order queues
 * need no note: a queue is a stream, run in order.
 *
 * Events are named in traces by the correlation id of the command that
 * made them: a small table maps the program's events to it, filled when a
 * command is filed with the program's event. It is a cache: a collision
 * replaces the older entry and a lookup that misses notes nothing (a wait
 * the analysis does not see), never a wrong command; an event the program
 * released and the runtime reused for a user event could still name its
 * old command until an enqueue files it again.
 */
#include "backends/kit/evcache.h"
#include "backends/opencl/cl.h"

static gp_evcache events = GP_EVCACHE_INIT; /* kit/evcache.h */

void gpuprof__cl_deps_event(cl_event ev, uint64_t corr)
{
    if (corr && gpuprof_be_tracing())
        gp_evcache_put(&events, ev, corr, 0, 0);
}

static uint64_t corr_of(cl_event ev)
{
    gp_evrec e;
    return gp_evcache_get(&events, ev, &e) ? e.corr : 0;
}

static void queue_at(cl_command_queue q, uint32_t *device, uint32_t *stream)
{
    const cl_queue *cq = q ? gpuprof__cl_queue(q) : NULL;
    *device = cq && cq->dev ? cq->dev->index : 0;
    *stream = cq ? cq->id : 0;
}

void gpuprof__cl_deps_wait_list(uint64_t corr, cl_command_queue q, cl_uint n,
                                const cl_event *wl)
{
    if (!corr || !n || !wl || !gpuprof_be_tracing())
        return;
    uint32_t device, stream;
    queue_at(q, &device, &stream);
    for (cl_uint i = 0; i < n; i++) {
        uint64_t t = corr_of(wl[i]);
        if (t)
            gpuprof_be_op_dep(corr, GPUPROF_DEP_STREAM_WAIT, GPUPROF_DEP_OPENCL, device,
                            stream, t);
    }
}

void gpuprof__cl_deps_blocking(uint64_t corr, cl_command_queue q)
{
    if (!corr || !gpuprof_be_tracing())
        return;
    uint32_t device, stream;
    queue_at(q, &device, &stream);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_LAUNCH, GPUPROF_DEP_BLOCKING | GPUPROF_DEP_OPENCL,
                    device, stream, 0);
}

void gpuprof__cl_deps_finish(uint64_t corr, cl_command_queue q)
{
    if (!corr || !gpuprof_be_tracing())
        return;
    uint32_t device, stream;
    queue_at(q, &device, &stream);
    gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_STREAM, GPUPROF_DEP_OPENCL, device, stream,
                    0);
}

void gpuprof__cl_deps_wait_events(uint64_t corr, cl_uint n, const cl_event *l)
{
    if (!corr || !l || !gpuprof_be_tracing())
        return;
    for (cl_uint i = 0; i < n; i++) {
        uint64_t t = corr_of(l[i]);
        if (t)
            gpuprof_be_op_dep(corr, GPUPROF_DEP_SYNC_EVENT, GPUPROF_DEP_OPENCL, 0, 0, t);
    }
}
