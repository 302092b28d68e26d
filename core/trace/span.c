/*
 * span.c - making, filling and freeing job spans (see span.h). Ids come
 * from the kernel's random source, never from the backoff generator: trace
 * ids must not repeat across processes and hosts.
 */
#include "span.h"

#include "utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int64_t
span_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
span_mono_to_unix(const struct span *s, const struct timespec *mono)
{
    int64_t d = (int64_t) (mono->tv_sec - s->start_mono.tv_sec) * 1000000000 +
                (mono->tv_nsec - s->start_mono.tv_nsec);
    return s->start_ns + d;
}

/* n random bytes, not all zero (an all-zero id is invalid). 0 or -1. */
static int
random_id(uint8_t *out, size_t n)
{
    for (int tries = 0; tries < 4; tries++) {
        size_t got = 0;
        while (got < n) {
            ssize_t r = getrandom(out + got, n - got, 0);
            if (r < 0 && errno != EINTR) {
                return -1;
            }
            got += r > 0 ? (size_t) r : 0;
        }
        for (size_t i = 0; i < n; i++) {
            if (out[i] != 0) {
                return 0;
            }
        }
    }
    return -1;
}

struct span *
span_new(const struct tracectx *parent, const struct tracectx *link)
{
    struct span *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    if (parent != NULL) {
        memcpy(s->ctx.trace_id, parent->trace_id, sizeof(s->ctx.trace_id));
        memcpy(s->parent_id, parent->span_id, sizeof(s->parent_id));
        s->has_parent = 1;
        s->ctx.flags = parent->flags & TRACECTX_SAMPLED;
    } else {
        s->ctx.flags = TRACECTX_SAMPLED;
    }
    if ((parent == NULL && random_id(s->ctx.trace_id, sizeof(s->ctx.trace_id)) != 0) ||
        random_id(s->ctx.span_id, sizeof(s->ctx.span_id)) != 0) {
        free(s);
        return NULL;
    }
    if (link != NULL) {
        s->link = *link;
        s->has_link = 1;
    }
    tracectx_format_traceparent(&s->ctx, s->traceparent);
    clock_gettime(CLOCK_MONOTONIC, &s->start_mono);
    s->start_ns = span_now_ns();
    return s;
}

void
span_free(struct span *s)
{
    free(s);
}

void
span_copy(char *dst, size_t cap, const char *text)
{
    size_t n = text != NULL ? strlen(text) : 0;
    if (n >= cap) {
        n = utf8_cut(text, cap - 1);
    }
    if (n > 0) {
        memcpy(dst, text, n);
    }
    dst[n] = '\0';
}

void
span_event(struct span *s, int64_t at_ns, const char *name, const char *key, const char *value)
{
    if (s->nevents == SPAN_EVENTS) {
        s->events_dropped++;
        return;
    }
    int i = s->nevents++;
    struct span_event e = {.at_ns = at_ns != 0 ? at_ns : span_now_ns(), .name = name, .key = key};
    span_copy(e.value, sizeof(e.value), value);
    for (; i > 0 && s->events[i - 1].at_ns > e.at_ns; i--) {
        s->events[i] = s->events[i - 1]; /* kept in time order: a moment may be told late */
    }
    s->events[i] = e;
}
