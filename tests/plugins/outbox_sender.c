/*
 * outbox_sender.c - fixture: a plugin (not transactional) that stages
 * follow-up messages with api->send() and then answers as its body says:
 * {"id":"k1", "to":"queue name or URL", "n":3, "then":"done|retry|reject",
 * "big":0, "group":"g", "pad":0, "sleep_ms":0}: n messages {"from":"<key>","i":<i>} to
 * `to` (with group as the FIFO group, and an attribute "pad" of `pad` bytes
 * when pad > 0), one more of `big` bytes when big > 0, then sleep_ms, then
 * DONE, RETRY or REJECT. A refused send() is logged and the job goes on,
 * so tests see that the host still fails it.
 * Used by: test_guard.py, test_outbox.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <twice/plugin.h>

static const twice_api *api;

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    (void) s;
    api = a;
    *state = NULL;
    if (!TWICE_API_HAS(a, send)) {
        a->log(NULL, TWICE_LOG_ERROR, "the host has no send()");
        return -1;
    }
    return 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *to = api->field(job, "to", NULL);
    const char *n = api->field(job, "n", NULL);
    const char *then = api->field(job, "then", NULL);
    const char *big = api->field(job, "big", NULL);
    const char *group = api->field(job, "group", NULL);
    const char *pad = api->field(job, "pad", NULL);
    size_t padlen = pad != NULL ? (size_t) atol(pad) : 0;
    char *padding = padlen > 0 ? malloc(padlen + 1) : NULL;
    if (padding != NULL) {
        memset(padding, 'y', padlen);
        padding[padlen] = '\0';
    }
    const char *const attrs[] = {"origin", "outbox-sender", padding != NULL ? "pad" : NULL,
                                 padding, NULL};
    for (long i = 0; i < (n != NULL ? atol(n) : 0); i++) {
        char body[700];
        snprintf(body, sizeof(body), "{\"from\":\"%s\",\"i\":%ld}", api->key(job), i);
        if (api->send(job, to, body, (size_t) -1, 0, group, attrs) != 0) {
            api->log(job, TWICE_LOG_WARN, "send %ld refused", i);
        }
    }
    free(padding);
    if (big != NULL && atol(big) > 0) {
        size_t len = (size_t) atol(big);
        char *b = malloc(len);
        if (b != NULL) {
            memset(b, 'x', len);
            if (api->send(job, to, b, len, 0, group, NULL) != 0) {
                api->log(job, TWICE_LOG_WARN, "big send refused");
            }
            free(b);
        }
    }
    const char *sleep_ms = api->field(job, "sleep_ms", NULL);
    long ms = sleep_ms != NULL ? atol(sleep_ms) : 0;
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (then != NULL && strcmp(then, "retry") == 0) {
        api->error(job, "retry on request of the message");
        return TWICE_RETRY;
    }
    if (then != NULL && strcmp(then, "reject") == 0) {
        api->error(job, "rejected on request of the message");
        return TWICE_REJECT;
    }
    return TWICE_DONE;
}

TWICE_PLUGIN(.name = "outbox-sender", .version = "1", .key_template = "send:{id}", .init = init,
             .handle = handle)
