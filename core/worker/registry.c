/*
 * registry.c - the in-flight registry (see registry.h): a doubly linked
 * list through the jobs themselves, under one mutex.
 */
#include "registry.h"

#include "job.h"

#include <stdlib.h>

void
registry_init(struct registry *r)
{
    pthread_mutex_init(&r->mu, NULL);
    r->head = NULL;
    r->count = 0;
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
    r->count++;
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
        r->count--;
    }
    pthread_mutex_unlock(&r->mu);
}

int
registry_snapshot(struct registry *r, struct twice_job ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&r->mu);
    if (r->count > 0) {
        *out = malloc(2 * r->count * sizeof(**out));
        if (*out == NULL) {
            pthread_mutex_unlock(&r->mu);
            return -1;
        }
        for (struct twice_job *j = r->head; j != NULL; j = j->reg_next) {
            (*out)[(*n)++] = j;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return 0;
}
