/*
 * comm.c - communicators and requests for the MPI wrappers (pmpi.h).
 *
 * Communicator ids: MPI_COMM_WORLD is 0, MPI_COMM_SELF 1; a communicator
 * made by MPI_Comm_dup, _split or _create gets the largest "next id" of
 * the parent's members (an MPI_Allreduce over the parent, which every
 * member of the parent takes part in), so all its members agree; the
 * disjoint communicators one split makes share that id and differ in
 * their leader (the lowest world rank), which every collective's event
 * carries. The id and the members' world ranks hang on the communicator
 * as an attribute. Communicators made otherwise (MPI_Cart_create, ...)
 * are unknown: their events carry id 0xFFFFFFFF and the analysis leaves
 * their messages unmatched.
 *
 * Requests: a table from MPI_Request handles to what was posted, under a
 * mutex (MPI_THREAD_MULTIPLE programs post from several threads).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmpi.h"

typedef struct comm_attr {
    gp_mpi_comm c;
    int *world; /* member i's world rank */
} comm_attr;

static int keyval = MPI_KEYVAL_INVALID;
static uint32_t next_id = 2;
static int world_rank;

static int free_attr(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    comm_attr *a = value;
    free(a->world);
    free(a);
    return MPI_SUCCESS;
}

void gp_mpi_comm_setup(void)
{
    if (keyval == MPI_KEYVAL_INVALID)
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_attr, &keyval,
                                NULL);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
}

static comm_attr *attr_of(MPI_Comm comm)
{
    void *v = NULL;
    int found = 0;
    if (keyval == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(comm, keyval, &v, &found) != MPI_SUCCESS || !found)
        return NULL;
    return v;
}

gp_mpi_comm gp_mpi_comm_of(MPI_Comm comm)
{
    int size = 0;
    if (comm == MPI_COMM_WORLD) {
        PMPI_Comm_size(comm, &size);
        return (gp_mpi_comm){0, size, 0};
    }
    if (comm == MPI_COMM_SELF)
        return (gp_mpi_comm){1, 1, world_rank};
    comm_attr *a = attr_of(comm);
    return a ? a->c : (gp_mpi_comm){UINT32_MAX, 0, -1};
}

int gp_mpi_world_rank(MPI_Comm comm, int r)
{
    if (r == MPI_PROC_NULL)
        return -1;
    if (r == MPI_ANY_SOURCE)
        return -2;
    if (comm == MPI_COMM_WORLD)
        return r;
    if (comm == MPI_COMM_SELF)
        return world_rank;
    comm_attr *a = attr_of(comm);
    return a && r >= 0 && r < a->c.size ? a->world[r] : r;
}

/* The members' world ranks, or NULL. */
static int *world_ranks(MPI_Comm comm, int size)
{
    MPI_Group g, w;
    int *in = malloc((size_t)size * sizeof(*in));
    int *out = malloc((size_t)size * sizeof(*out));
    if (!in || !out) {
        free(in);
        free(out);
        return NULL;
    }
    for (int i = 0; i < size; i++)
        in[i] = i;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    PMPI_Group_translate_ranks(g, size, in, w, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    free(in);
    return out;
}

void gp_mpi_comm_new(MPI_Comm parent, MPI_Comm *made)
{
    uint32_t mine = next_id, agreed = 0;
    if (PMPI_Allreduce(&mine, &agreed, 1, MPI_UNSIGNED, MPI_MAX, parent) !=
        MPI_SUCCESS)
        return;
    next_id = agreed + 1;
    if (!made || *made == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID)
        return;
    comm_attr *a = calloc(1, sizeof(*a));
    int size = 0;
    PMPI_Comm_size(*made, &size);
    if (!a || size <= 0 || !(a->world = world_ranks(*made, size))) {
        free(a);
        return;
    }
    int leader = a->world[0];
    for (int i = 1; i < size; i++)
        leader = a->world[i] < leader ? a->world[i] : leader;
    a->c = (gp_mpi_comm){agreed, size, leader};
    PMPI_Comm_set_attr(*made, keyval, a);
    uint64_t t = gp_mpi_now();
    gp_mpi_event(GPUPROF_MPI_COMM, agreed, (int)gp_mpi_comm_of(parent).id, -1,
                 0, 0, (uint64_t)(uint32_t)size << 32 | (uint32_t)leader, t,
                 t);
}

/* ---- requests ----------------------------------------------------------- */
typedef struct slot {
    uint64_t key; /* the handle's bits; 0 free */
    gp_mpi_req r;
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static slot *tab;
static uint64_t cap, used, ids;

static uint64_t key_of(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof(r) < sizeof(k) ? sizeof(r) : sizeof(k));
    return k ? k : 1; /* 0 marks a free slot */
}

static slot *find(uint64_t k)
{
    uint64_t h = (k * 0x9E3779B97F4A7C15ull) >> 20;
    while (tab[h & (cap - 1)].key && tab[h & (cap - 1)].key != k)
        h++;
    return &tab[h & (cap - 1)];
}

/* Doubles the table (its load stays under a half). */
static int grow(void)
{
    slot *old = tab;
    uint64_t oc = cap;
    cap = cap ? cap * 2 : 256;
    if (!(tab = calloc(cap, sizeof(*tab)))) {
        tab = old;
        cap = oc;
        return 0;
    }
    for (uint64_t i = 0; i < oc; i++)
        if (old[i].key)
            *find(old[i].key) = old[i];
    free(old);
    return 1;
}

uint64_t gp_mpi_req_add(MPI_Request r, uint32_t op, MPI_Comm comm)
{
    uint64_t id = 0;
    pthread_mutex_lock(&mu);
    if (2 * (used + 1) <= cap || grow()) {
        slot *s = find(key_of(r));
        used += !s->key;
        id = ++ids;
        *s = (slot){key_of(r), {id, op, comm}};
    }
    pthread_mutex_unlock(&mu);
    return id;
}

/* Backward-shift deletion keeps every probe chain whole. */
static void erase(slot *s)
{
    uint64_t i = (uint64_t)(s - tab);
    for (uint64_t j = (i + 1) & (cap - 1); tab[j].key; j = (j + 1) & (cap - 1)) {
        uint64_t home = ((tab[j].key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
        if (((j - home) & (cap - 1)) >= ((j - i) & (cap - 1))) {
            tab[i] = tab[j];
            i = j;
        }
    }
    tab[i].key = 0;
    used--;
}

int gp_mpi_req_take(MPI_Request r, gp_mpi_req *out)
{
    int found = 0;
    pthread_mutex_lock(&mu);
    if (cap) {
        slot *s = find(key_of(r));
        if (s->key) {
            *out = s->r;
            erase(s);
            found = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

/* ---- events --------------------------------------------------------------- */
uint64_t gp_mpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gp_mpi_event(uint32_t op, uint32_t comm, int peer, int tag,
                  uint64_t bytes, uint64_t request, uint64_t aux, uint64_t t0,
                  uint64_t t1)
{
    gpuprof_mpi_event e = GPUPROF_MPI_EVENT_INIT;
    e.op = op;
    e.comm = comm;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.request = request;
    e.aux = aux;
    e.start_ns = t0;
    e.end_ns = t1 < t0 ? t0 : t1;
    gpuprof_be_mpi_event(&e);
}

uint64_t gp_mpi_bytes(int count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}
