/*
 * span.h - one job's span as the tracer keeps it: its ids, its parent or
 * link, its times, the job's attributes and a few events. A span is made
 * by the thread that receives the job, owned by the job (one thread at a
 * time, like the job), and handed to the exporter when the job ends
 * (exporter.h), which encodes it (otlp.h) and frees it.
 */
#ifndef TWICE_SPAN_H
#define TWICE_SPAN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <twice/plugin.h>

#include "tracectx.h"

#define SPAN_EVENTS 8   /* events kept per span; later ones are counted, not kept */
#define SPAN_TEXT   128 /* bytes of a text attribute, NUL included (longer is cut) */

/* Something that happened to the job: "claimed", "retry", "dead_letter". */
struct span_event {
    int64_t at_ns;         /* unix time */
    const char *name;      /* static */
    const char *key;       /* static: the event's one attribute, or NULL */
    char value[SPAN_TEXT]; /* its value */
};

struct span {
    struct tracectx ctx; /* this span: its trace, its id, flags (sampled: exported) */
    uint8_t parent_id[8];
    int has_parent;       /* ctx's trace came with the message's traceparent */
    struct tracectx link; /* the X-Ray trace of AWSTraceHeader, linked */
    int has_link;
    char traceparent[TRACECTX_TRACEPARENT_LEN + 1]; /* ctx as W3C text, for plugins */
    int64_t start_ns, end_ns;                       /* unix time */
    struct timespec start_mono; /* CLOCK_MONOTONIC at start: places later moments */

    /* The job, written when it ends (and the queue when it starts). */
    char queue[SPAN_TEXT];
    char plugin[SPAN_TEXT];
    char message_id[SPAN_TEXT];
    char key[TWICE_KEY_MAX + 1];
    const char *outcome; /* static: "done", "retry", "duplicate", ... */
    int attempt;
    long long body_size;
    int error;                /* the status is ERROR, with status_message */
    char status_message[256]; /* why (the plugin's error, the DLQ reason) */

    struct span_event events[SPAN_EVENTS];
    int nevents;
    int events_dropped;
};

/*
 * A new span starting now, child of parent (NULL: the root of a new trace,
 * sampled) and linked to link (NULL: none). Its ids come from getrandom();
 * a child is sampled when its parent is. NULL when out of memory or no
 * random bytes could be had. Free with span_free (or give it to the
 * exporter).
 */
struct span *span_new(const struct tracectx *parent, const struct tracectx *link);
void span_free(struct span *s);

/* Add an event at unix time at_ns (0: now), in time order among the
 * others; key may be NULL, value is copied (cut to SPAN_TEXT - 1 bytes). */
void span_event(struct span *s, int64_t at_ns, const char *name, const char *key,
                const char *value);

/* The unix time of a CLOCK_MONOTONIC moment of this span's life. */
int64_t span_mono_to_unix(const struct span *s, const struct timespec *mono);

/* Now, in nanoseconds of unix time. */
int64_t span_now_ns(void);

/* Copy text into a span's field of cap bytes, cut at a UTF-8 character
 * boundary (the encoder needs valid UTF-8); NULL copies "". */
void span_copy(char *dst, size_t cap, const char *text);

#endif
