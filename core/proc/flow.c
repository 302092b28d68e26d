/*
 * flow.c - the per-queue flow state of flow.h in the shared region: slots
 * found by queue name, the failure window as time buckets, trips and probes
 * as atomic hand-offs between workers and the master.
 */
#include "flow.h"

#include "shm.h"

#include <stdio.h>
#include <string.h>

/* The slot of queue, claimed when absent; NULL without a region or when
 * the table is full. */
static struct flow_queue *
slot(const char *queue)
{
    struct shm_region *r = shm_region();
    if (r == NULL || queue == NULL) {
        return NULL;
    }
    for (int i = 0; i < FLOW_QUEUES; i++) {
        struct flow_queue *f = &r->flow.queues[i];
        int st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
        if (st == 0) {
            int expected = 0;
            if (__atomic_compare_exchange_n(&f->state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                snprintf(f->name, sizeof(f->name), "%s", queue);
                __atomic_store_n(&f->state, 2, __ATOMIC_RELEASE);
                return f;
            }
            st = expected;
        }
        if (st == 1) {
            st = shm_slot_state(&f->state);
        }
        if (st == 2 && strncmp(f->name, queue, sizeof(f->name) - 1) == 0) {
            return f;
        }
    }
    return NULL;
}

enum flow_mode
flow_mode(const char *queue, int64_t now)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return FLOW_RUN;
    }
    if (!__atomic_load_n(&r->flow.loaded, __ATOMIC_ACQUIRE)) {
        return FLOW_PAUSED;
    }
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return FLOW_RUN;
    }
    enum flow_mode m = (enum flow_mode) __atomic_load_n(&f->mode, __ATOMIC_ACQUIRE);
    if (m == FLOW_RUN && __atomic_load_n(&f->open_until, __ATOMIC_ACQUIRE) > now) {
        return FLOW_OPEN; /* tripped here; the master has not published it yet */
    }
    return m;
}

int64_t
flow_open_until(const char *queue)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return 0;
    }
    int64_t a = __atomic_load_n(&f->until, __ATOMIC_ACQUIRE);
    int64_t b = __atomic_load_n(&f->open_until, __ATOMIC_ACQUIRE);
    return a > b ? a : b;
}

int
flow_failure(const char *queue, int window, int64_t now)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL || window < 1) {
        return 0;
    }
    int64_t width = (window + FLOW_BUCKETS - 1) / FLOW_BUCKETS;
    int64_t cur = now / width, span = (window + width - 1) / width;
    int i = (int) (cur % FLOW_BUCKETS);
    int64_t at = __atomic_load_n(&f->bucket_at[i], __ATOMIC_ACQUIRE);
    if (at != cur && __atomic_compare_exchange_n(&f->bucket_at[i], &at, cur, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&f->bucket_n[i], 0, __ATOMIC_RELEASE);
    }
    __atomic_add_fetch(&f->bucket_n[i], 1, __ATOMIC_ACQ_REL);
    int total = 0;
    for (int b = 0; b < FLOW_BUCKETS; b++) {
        int64_t t = __atomic_load_n(&f->bucket_at[b], __ATOMIC_ACQUIRE);
        if (t <= cur && t > cur - span) {
            total += __atomic_load_n(&f->bucket_n[b], __ATOMIC_ACQUIRE);
        }
    }
    return total;
}

/* Forget the failures counted: the breaker opened, here or on another host,
 * so that once it closes counting starts afresh. */
static void
clear_window(struct flow_queue *f)
{
    for (int b = 0; b < FLOW_BUCKETS; b++) {
        __atomic_store_n(&f->bucket_n[b], 0, __ATOMIC_RELEASE);
    }
}

int
flow_trip(const char *queue, int cooldown, int64_t now)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return 0;
    }
    int64_t until = __atomic_load_n(&f->open_until, __ATOMIC_ACQUIRE);
    if (until > now || !__atomic_compare_exchange_n(&f->open_until, &until, now + cooldown, 0,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    clear_window(f);
    __atomic_store_n(&f->trip, cooldown > 0 ? cooldown : 1, __ATOMIC_RELEASE);
    return 1;
}

int
flow_probe_take(const char *queue)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return 0;
    }
    int n = __atomic_load_n(&f->probes, __ATOMIC_ACQUIRE);
    while (n > 0) {
        if (__atomic_compare_exchange_n(&f->probes, &n, n - 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            return 1;
        }
    }
    return 0;
}

void
flow_probe_give_back(const char *queue)
{
    struct flow_queue *f = slot(queue);
    if (f != NULL) {
        __atomic_add_fetch(&f->probes, 1, __ATOMIC_ACQ_REL);
    }
}

void
flow_probe_done(const char *queue, int ok)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return;
    }
    int none = 0; /* the first outcome decides */
    __atomic_compare_exchange_n(&f->probe_result, &none, ok ? 1 : 2, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

void
flow_publish(const char *queue, enum flow_mode mode, int64_t until)
{
    struct flow_queue *f = slot(queue);
    if (f == NULL) {
        return;
    }
    __atomic_store_n(&f->until, until, __ATOMIC_RELEASE);
    __atomic_store_n(&f->mode, (int) mode, __ATOMIC_RELEASE);
    if (mode == FLOW_OPEN || mode == FLOW_PROBING) {
        /* Opened by another host, maybe: the failures counted here are of
         * the same outage. Kept, they would open it again on the first
         * failure after a cooldown shorter than the window: a flap. */
        clear_window(f);
    }
    if ((mode == FLOW_RUN || mode == FLOW_PAUSED) &&
        __atomic_load_n(&f->trip, __ATOMIC_ACQUIRE) == 0) {
        /* Closed, or an operator's pause: a local trip is over (unless one
         * came after the master read the table), probes too. */
        __atomic_store_n(&f->open_until, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&f->probes, 0, __ATOMIC_RELEASE);
    }
}

int
flow_take_trip(const char *queue)
{
    struct flow_queue *f = slot(queue);
    return f != NULL ? __atomic_exchange_n(&f->trip, 0, __ATOMIC_ACQ_REL) : 0;
}

int
flow_take_probe_result(const char *queue)
{
    struct flow_queue *f = slot(queue);
    return f != NULL ? __atomic_exchange_n(&f->probe_result, 0, __ATOMIC_ACQ_REL) : 0;
}

void
flow_grant_probes(const char *queue, int n)
{
    struct flow_queue *f = slot(queue);
    if (f != NULL) {
        __atomic_store_n(&f->probes, n, __ATOMIC_RELEASE);
    }
}

void
flow_set_loaded(void)
{
    struct shm_region *r = shm_region();
    if (r != NULL) {
        __atomic_store_n(&r->flow.loaded, 1, __ATOMIC_RELEASE);
    }
}
