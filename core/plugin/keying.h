/*
 * keying.h - which plugin a message goes to and where its key comes from,
 * worked out the same way by the daemon's receivers and by `twicectl key
 * derive`: the size limit, the queue's route, and the key's source (the
 * queue's `key`, the plugin's key setting or template, its derive_key()).
 * One code path, so the tool never shows a key the daemon would not use.
 * Deriving the key itself is hostapi_derive_key's (it may call the plugin).
 */
#ifndef TWICE_KEYING_H
#define TWICE_KEYING_H

#include <stddef.h>

struct config;
struct config_queue;
struct diag;
struct keytmpl;
struct loaded_plugin;
struct s3_client;
struct twice_job;

/* keying_route's answers besides a route's index. */
#define KEYING_QUEUE_PLUGIN (-1) /* the queue has one plugin (`plugin`) */
#define KEYING_NO_ROUTE     (-2) /* the job's verdict is a dead letter */

/* A body larger than max bytes: 0, or -1 with j's verdict a dead letter
 * (too-large). */
int keying_check_size(struct twice_job *j, long max);

/* keying_shape's answers. */
#define KEYING_SHAPED 0    /* j->view is the body handlers see */
#define KEYING_DEAD   (-1) /* j's verdict is a dead letter */
#define KEYING_LATER  1    /* S3 failed for now (j->error says why): give it back */

/*
 * Unwrap the queue's envelope (bad-envelope), then follow an S3 payload
 * pointer (bad-payload-pointer, payload-too-large, payload-missing,
 * payload-denied; other S3 failures are KEYING_LATER), fetching at most
 * max_payload bytes with the client get_s3(arg) returns, asked only for a
 * pointer (NULL: KEYING_LATER).
 * Sets j->view (and j->env, j->payload, j->pointer). msg.body is left as
 * it came: the dead-letter queue gets it.
 */
typedef struct s3_client *keying_s3_fn(void *arg);
int keying_shape(struct twice_job *j, keying_s3_fn *get_s3, void *arg, long max_payload);

/* The route j takes on its queue (j->qcfg): KEYING_QUEUE_PLUGIN, the index
 * of the route in qcfg->routes whose value route_by finds, or
 * KEYING_NO_ROUTE with j's verdict a dead letter (invalid-json,
 * unknown-route). */
int keying_route(struct twice_job *j);
/* The name of the plugin that route (of keying_route) leads to. */
const char *keying_route_plugin(const struct config_queue *qc, int route);

/* Where the key of a message routed to lp on a queue comes from; the
 * queue's compiled `key` (NULL when it sets none) wins. */
enum keying_source {
    KEYING_QUEUE,    /* the queue's `key` */
    KEYING_SETTING,  /* the plugin's key setting (its value or default) */
    KEYING_TEMPLATE, /* the plugin's key_template */
    KEYING_DERIVE,   /* the plugin's derive_key() */
    KEYING_NONE      /* none: the configuration is refused (keying_check_queues) */
};
enum keying_source keying_source(const struct loaded_plugin *lp, const struct keytmpl *queue_key);
/* "queue key", "plugin setting", "plugin template", "derive_key", "none". */
const char *keying_source_name(enum keying_source s);

/* Compile qc's `key` into *out (NULL when it sets none). 0, or -1 with err
 * (the configuration was checked: only ENOMEM, in practice). */
int keying_queue_key(const struct config_queue *qc, struct keytmpl **out, char *err,
                     size_t errlen);

/*
 * The plugin configured as `name`, loaded as lp with its settings checked,
 * has no key of its own (a key setting that is not set): every queue that
 * uses it, directly or by a route, must set `key`. Adds "FILE:LINE: queue
 * 'Q': ..." for each that does not; returns the count added.
 */
int keying_check_queues(const struct config *c, const char *name, const struct loaded_plugin *lp,
                        struct diag *d);

#endif
