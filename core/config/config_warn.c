/*
 * config_warn.c - what a valid configuration does that the operator should
 * hear about, as warnings (config_warnings in config.h). Not for problems:
 * those refuse the file and are config_check.c's.
 */
#include "config.h"

#include "sqsname.h"

/* Queue q polls the dead-letter queue of another queue: its plugin gets that
 * queue's dead letters. A redrive handler does that on purpose; a url copied
 * from the wrong line does it by mistake, and nothing else would say so. */
static size_t
warn_dlq_consumer(const struct config *c, const struct config_queue *q, struct diag *w)
{
    for (size_t i = 0; i < c->nqueues; i++) {
        const struct config_queue *o = &c->queues[i];
        if (o == q || o->dlq_url == NULL || !sqs_queue_url_same(q->url, o->dlq_url)) {
            continue;
        }
        diag_add(w, q->file != NULL ? q->file : c->file, q->url_line > 0 ? q->url_line : q->line,
                 "queue '%s': url is the dlq_url of queue '%s' (line %d): twiced will run "
                 "'%s's dead letters through this queue's plugin; right for a redrive handler, "
                 "otherwise set url to another queue",
                 q->name, o->name, o->dlq_url_line > 0 ? o->dlq_url_line : o->line, o->name);
        return 1;
    }
    return 0;
}

size_t
config_warnings(const struct config *c, struct diag *w)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nqueues; i++) {
        if (c->queues[i].url != NULL) {
            n += warn_dlq_consumer(c, &c->queues[i], w);
        }
    }
    return n;
}
