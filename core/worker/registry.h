/*
 * registry.h - a worker's in-flight registry: every claimed job from its
 * claim until the acker finishes it, so that the heartbeat can extend its
 * visibility and lease and the drain deadline can give it back. The jobs
 * stay owned by whoever holds them; the registry only links them
 * (reg_prev/reg_next). Thread-safe: receivers add, the acker's thread
 * removes and reads.
 */
#ifndef TWICE_REGISTRY_H
#define TWICE_REGISTRY_H

#include <pthread.h>
#include <stddef.h>

struct twice_job;

struct registry {
    pthread_mutex_t mu;
    struct twice_job *head;
    size_t count; /* jobs linked */
};

void registry_init(struct registry *r);
void registry_destroy(struct registry *r);

void registry_add(struct registry *r, struct twice_job *j);
/* Unlink j if it is registered; nothing otherwise. */
void registry_remove(struct registry *r, struct twice_job *j);

/* Every registered job, in a new array of 2 * *n pointers that the caller
 * frees (the second half is scratch room for a selection of them; NULL when
 * none is registered). There is no fixed bound: a worker holds up to
 * max_inflight jobs per queue. Returns -1 when memory ran out. */
int registry_snapshot(struct registry *r, struct twice_job ***out, size_t *n);

#endif
