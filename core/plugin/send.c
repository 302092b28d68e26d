/*
 * send.c - api->send()'s staging (send.h): resolve the queue by its name in
 * twice.conf or its URL, check the message as SQS would (text/sendcheck.c)
 * and copy it for the outbox. No I/O.
 */
#include "send.h"

#include "config.h"
#include "outbox.h"
#include "sendcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The URL of the queue twice.conf names name, or NULL (sendcheck_resolve's
 * lookup; ctx is the config). Borrowed. */
static const char *
configured_url(const void *ctx, const char *name)
{
    const struct config *c = ctx;
    for (size_t i = 0; c != NULL && i < c->nqueues; i++) {
        if (strcmp(c->queues[i].name, name) == 0) {
            return c->queues[i].url;
        }
    }
    return NULL;
}

int
send_prepare(const struct config *c, const char *key, size_t idx, const char *queue,
             const char *body, size_t len, int delay, const char *group_id,
             const char *const *attrs, struct outbox_msg *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof(*out));
    const char *url = sendcheck_resolve(queue, body, configured_url, c, why, whylen);
    if (url == NULL) {
        return -1;
    }
    size_t n = len == (size_t) -1 ? strlen(body) : len;
    char detail[400];
    int rc = sendcheck_message(url, key, idx, body, n, delay, group_id, attrs, &out->attrs, detail,
                               sizeof(detail));
    out->queue = rc == 0 ? strdup(queue) : NULL;
    out->url = rc == 0 ? strdup(url) : NULL;
    out->body = rc == 0 ? strndup(body, n) : NULL;
    out->group_id = rc == 0 && group_id != NULL ? strdup(group_id) : NULL;
    out->delay = delay;
    if (rc == 0 && (out->queue == NULL || out->url == NULL || out->body == NULL ||
                    (group_id != NULL && out->group_id == NULL))) {
        snprintf(detail, sizeof(detail), "out of memory");
        rc = -1;
    }
    if (rc != 0) {
        outbox_msg_clear(out);
        snprintf(why, whylen, "send to queue %.200s: %s", queue, detail);
    }
    return rc;
}
