/*
 * wqueue.c - a queue's list of jobs waiting for a handler, and its slots
 * (see worker.h). The receiver pushes and reserves, handlers pop (handler.c),
 * and whoever finishes a job releases its slot.
 */
#include "worker.h"

#include "job.h"

/* The jobs are appended under one lock and the handlers woken after it is
 * released: a handler woken while the receiver still held the lock would
 * only block on it again (a second futex wait and wake per job). */
void
wqueue_push(struct wqueue *q, struct twice_job **jobs, size_t n)
{
    if (n == 0) {
        return;
    }
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; i < n; i++) {
        jobs[i]->next = NULL;
        if (q->tail != NULL) {
            q->tail->next = jobs[i];
        } else {
            q->head = jobs[i];
        }
        q->tail = jobs[i];
    }
    pthread_mutex_unlock(&q->mu);
    for (size_t i = 0; i < n; i++) {
        pthread_cond_signal(&q->work_cv); /* returns at once when none waits */
    }
}

/* One waiting receiver is woken, not all of them: it takes what is free and
 * passes the wake-up on when some is left (reserve_slots). */
void
wqueue_release_slot(struct wqueue *q, int n)
{
    pthread_mutex_lock(&q->mu);
    q->inflight -= n;
    pthread_cond_signal(&q->space_cv);
    pthread_mutex_unlock(&q->mu);
}
