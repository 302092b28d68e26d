/*
 * registry.c - the in-flight registry (see registry.h): a doubly linked
 * list through the jobs themselves, under one mutex.
 */
#include "registry.h"

#include "job.h"

void
registry_init(struct registry *r)
{
    pthread_mutex_init(&r->mu, NULL);
    r->head = NULL;
}

void
registry_destroy(struct registry *r)
{
    pthread_mutex_destroy(&r->mu);
}

void
registry_add(struct registry *r, struct twice_job *j)
{
    pthread_mutex_lock(&r->mu);
    j->tracked = 1;
    j->reg_prev = NULL;
    j->reg_next = r->head;
    if (r->head != NULL) {
        r->head->reg_prev = j;
    }
    r->head = j;
    pthread_mutex_unlock(&r->mu);
}

void
registry_remove(struct registry *r, struct twice_job *j)
{
    pthread_mutex_lock(&r->mu);
    if (j->tracked) {
        if (j->reg_prev != NULL) {
            j->reg_prev->reg_next = j->reg_next;
        } else {
            r->head = j->reg_next;
        }
        if (j->reg_next != NULL) {
            j->reg_next->reg_prev = j->reg_prev;
        }
        j->tracked = 0;
        j->reg_prev = j->reg_next = NULL;
    }
    pthread_mutex_unlock(&r->mu);
}

size_t
registry_snapshot(struct registry *r, struct twice_job **out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (struct twice_job *j = r->head; j != NULL && n < max; j = j->reg_next) {
        out[n++] = j;
    }
    pthread_mutex_unlock(&r->mu);
    return n;
}
