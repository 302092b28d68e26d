/*
 * jobnames.c - a generation's queue and plugin names for naming its workers'
 * jobs (see jobnames.h): one allocation, reference counted by the master's
 * main thread alone.
 */
#include "jobnames.h"

#include "config.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jobnames {
    int holds;
    uint32_t check; /* shm_names_of the configuration */
    size_t nqueues, nplugins;
    char (*name)[CONFIG_MAX_NAME + 1]; /* the queues' names, then the plugins' */
};

struct jobnames *
jobnames_new(const struct config *c)
{
    struct jobnames *n = calloc(1, sizeof(*n));
    size_t total = c->nqueues + c->nplugins;
    if (n == NULL || (n->name = calloc(total ? total : 1, sizeof(*n->name))) == NULL) {
        free(n);
        return NULL;
    }
    n->holds = 1;
    n->check = shm_names_of(c);
    n->nqueues = c->nqueues;
    n->nplugins = c->nplugins;
    for (size_t i = 0; i < c->nqueues; i++) {
        snprintf(n->name[i], sizeof(n->name[i]), "%s", c->queues[i].name);
    }
    for (size_t i = 0; i < c->nplugins; i++) {
        snprintf(n->name[c->nqueues + i], sizeof(n->name[0]), "%s", c->plugins[i].name);
    }
    return n;
}

struct jobnames *
jobnames_hold(struct jobnames *n)
{
    if (n != NULL) {
        n->holds++;
    }
    return n;
}

void
jobnames_drop(struct jobnames *n)
{
    if (n != NULL && --n->holds == 0) {
        free(n->name);
        free(n);
    }
}

int
jobnames_get(const struct jobnames *n, int queue, int plugin, uint32_t check,
             const char **queue_name, const char **plugin_name)
{
    *queue_name = *plugin_name = "?";
    if (n == NULL || check != n->check || queue < 0 || (size_t) queue >= n->nqueues ||
        plugin < 0 || (size_t) plugin >= n->nplugins) {
        return 0;
    }
    *queue_name = n->name[queue];
    *plugin_name = n->name[n->nqueues + (size_t) plugin];
    return 1;
}

int
jobnames_has(const struct jobnames *n, const char *name, int plugin)
{
    if (n == NULL) {
        return 0;
    }
    size_t from = plugin ? n->nqueues : 0, to = plugin ? n->nqueues + n->nplugins : n->nqueues;
    for (size_t i = from; i < to; i++) {
        if (strcmp(n->name[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

int
jobnames_checks(const struct jobnames *n, uint32_t check)
{
    return n != NULL && n->check == check;
}
