/*
 * gone.c - the queue of gone workers in the shared region (see gone.h): a
 * ring of owners and a ring of their culprits, both written by the master
 * alone (tail, written) and given back by the janitor alone (head), so
 * neither needs a lock to write; the janitors' lock only keeps two of them
 * from working on the same owner.
 */
#include "gone.h"

#include "childargs.h"

#include <errno.h>
#include <string.h>

_Static_assert(CHILDARGS_OWNER_MAX <= SHM_GONE_OWNER, "a lease owner fits an entry whole");
_Static_assert(sizeof(((struct shm_job *) 0)->message_id) ==
                   sizeof(((struct shm_gone_culprit *) 0)->message_id),
               "a culprit keeps its job record's message id whole");

/* src into dst[cap], cut and NUL-terminated. */
static void
copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The master's view of the culprit pool: records free for a new owner's. The
 * oldest record still needed is the first of the oldest queued owner (the
 * janitor may have removed more since head was read: fewer records seem
 * free, never more). */
static uint64_t
pool_free(const struct shm_gone_queue *q, uint64_t head, uint64_t tail)
{
    uint64_t oldest = head < tail ? q->gone[head % SHM_GONE].first : q->written;
    return SHM_GONE_CULPRITS - (q->written - oldest);
}

int
gone_push(const char *owner, int64_t gone_ms, const struct shm_job *const *jobs, size_t n)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return -1;
    }
    struct shm_gone_queue *q = &r->gone;
    uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED); /* the master's alone */
    if (tail - head >= SHM_GONE) {
        return -1;
    }
    uint64_t room = pool_free(q, head, tail);
    size_t kept = n < room ? n : (size_t) room;
    struct shm_gone *e = &q->gone[tail % SHM_GONE];
    copy_text(e->owner, sizeof(e->owner), owner);
    e->gone_ms = gone_ms;
    e->first = q->written;
    e->n = (uint32_t) kept;
    for (size_t i = 0; i < kept; i++) {
        struct shm_gone_culprit *c = &q->culprit[(e->first + i) % SHM_GONE_CULPRITS];
        c->attempt = jobs[i]->attempt;
        copy_text(c->message_id, sizeof(c->message_id), jobs[i]->message_id);
    }
    q->written += kept;
    /* The janitor reads none of the above before it sees the new tail. */
    __atomic_store_n(&q->tail, tail + 1, __ATOMIC_RELEASE);
    return (int) kept;
}

const struct shm_gone_culprit *
gone_culprit(const struct gone_owner *g, size_t i)
{
    return &shm_region()->gone.culprit[(g->entry->first + i) % SHM_GONE_CULPRITS];
}

int
gone_pending(void)
{
    struct shm_region *r = shm_region();
    return r != NULL && __atomic_load_n(&r->gone.head, __ATOMIC_ACQUIRE) !=
                            __atomic_load_n(&r->gone.tail, __ATOMIC_ACQUIRE);
}

/* The consumer lock without waiting: 0 held, 1 another janitor holds it. A
 * holder that died left its owner in the queue (head moves only after its
 * expiry), so the lock is simply made consistent and taken. */
static int
consumer_lock(struct shm_gone_queue *q)
{
    int rc = pthread_mutex_trylock(&q->consumer);
    if (rc == EOWNERDEAD) {
        rc = pthread_mutex_consistent(&q->consumer);
    }
    return rc == 0 ? 0 : 1;
}

int
gone_drain(int (*expire)(void *arg, const struct gone_owner *g), void *arg)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return 0;
    }
    struct shm_gone_queue *q = &r->gone;
    if (consumer_lock(q) != 0) {
        return 1;
    }
    int rc = 0;
    uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
    while (head != __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE)) {
        const struct shm_gone *e = &q->gone[head % SHM_GONE];
        char owner[SHM_GONE_OWNER]; /* NUL-terminated whatever the region holds */
        copy_text(owner, sizeof(owner), e->owner);
        struct gone_owner g = {owner, e->gone_ms,
                               e->n < SHM_GONE_CULPRITS ? e->n : SHM_GONE_CULPRITS, e};
        if (expire(arg, &g) != 0) {
            rc = -1;
            break;
        }
        /* Only now may the master write over the owner and its culprits. */
        __atomic_store_n(&q->head, ++head, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&q->consumer);
    return rc;
}
