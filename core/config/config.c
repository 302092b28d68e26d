/*
 * config.c - questions about a loaded configuration: a plugin or a queue by
 * name, and what a reload cannot change. Reading one is config_load.c's.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

const struct config_plugin *
config_find_plugin(const struct config *c, const char *name)
{
    for (size_t i = 0; c != NULL && name != NULL && i < c->nplugins; i++) {
        if (c->plugins[i].name != NULL && strcmp(c->plugins[i].name, name) == 0) {
            return &c->plugins[i];
        }
    }
    return NULL;
}

void
config_queue_where(const struct config_queue *q, const char *setting, char *out, size_t cap)
{
    int line = strcmp(setting, "dlq_url") == 0 ? q->dlq_url_line
               : strcmp(setting, "url") == 0   ? q->url_line
                                               : 0;
    snprintf(out, cap, "%s of queue '%s' at %s:%d", setting, q->name != NULL ? q->name : "?",
             q->file != NULL ? q->file : "?", line > 0 ? line : q->line);
}

const struct config_queue *
config_find_queue(const struct config *c, const char *name)
{
    for (size_t i = 0; c != NULL && name != NULL && i < c->nqueues; i++) {
        if (c->queues[i].name != NULL && strcmp(c->queues[i].name, name) == 0) {
            return &c->queues[i];
        }
    }
    return NULL;
}

int
config_reload_refused(const struct config *old, const struct config *new_, struct diag *d)
{
    if (strcmp(old->idempotency.table, new_->idempotency.table) == 0) {
        return 0;
    }
    diag_add(d, new_->idempotency.table_src != NULL ? new_->idempotency.table_src : new_->file,
             new_->idempotency.table_line,
             "idempotency.table: a reload cannot move the keys from '%s' to '%s' (the running "
             "jobs' keys stay in the old table, so a message already handled could run again); "
             "restart twiced to change it",
             old->idempotency.table, new_->idempotency.table);
    return 1;
}

int
config_restart_needed(const struct config *old, const struct config *new_, struct diag *d)
{
    const char *was = old->user, *now = new_->user;
    if (was == now || (was != NULL && now != NULL && strcmp(was, now) == 0)) {
        return 0;
    }
    if (was != NULL) {
        diag_add(d, new_->user_file != NULL ? new_->user_file : new_->file, new_->user_line,
                 "user: changing it needs a restart (reload keeps '%s')", was);
    } else {
        diag_add(d, new_->user_file != NULL ? new_->user_file : new_->file, new_->user_line,
                 "user: changing it needs a restart (reload keeps the current user)");
    }
    return 1;
}
