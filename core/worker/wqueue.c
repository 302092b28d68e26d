/*
 * wqueue.c - a queue's list of jobs waiting for a handler, and its slots
 * (see worker.h). The receiver pushes and reserves, handlers pop (handler.c),
 * and whoever finishes a job releases its slot.
 */
#include "worker.h"

#include "job.h"

void
wqueue_push(struct wqueue *q, struct twice_job *j)
{
    pthread_mutex_lock(&q->mu);
    j->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = j;
    } else {
        q->head = j;
    }
    q->tail = j;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
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
