/*
 * dlqcarry.h - what a stopping DLQ monitor leaves to the next one, as a
 * fixed-size record in the shared region (shm.h's dlq_carry), so that the
 * next monitor may run in another process: the cursor into the dead-letter
 * ring, each DLQ's alert rule state by DLQ URL, and the notices its alert
 * sender had not delivered, per sink. Not what these mean (duty/dlqmon.c,
 * duty/alert_sink.c): a notice is opaque bytes here.
 *
 * One writer at a time (the monitor that stops: dlqcarry_begin, the puts,
 * dlqcarry_end), then one reader (the monitor that starts after it:
 * dlqcarry_open, the gets, dlqcarry_clear). The state is written first and
 * last, so a writer that dies in between leaves a record the reader knows
 * is torn (DLQCARRY_TORN) and drops: the next monitor starts fresh.
 */
#ifndef TWICE_DLQCARRY_H
#define TWICE_DLQCARRY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The layout's version: a reader of another version's record (a binary
 * replaced on disk between two generations) drops it. Bump it with any
 * change of the structs below or of the notice they carry (duty/alert.h's
 * struct alert_notice, whose size is checked besides). */
#define DLQCARRY_VERSION 1

#define DLQCARRY_RULES        CONFIG_MAX_ENTRIES /* a queue list's entries: one rule each */
#define DLQCARRY_URL          256  /* bytes of a DLQ URL kept (with its hash and length) */
#define DLQCARRY_SINKS        2    /* sinks a notice may wait for (duty/alert_sink.c's) */
#define DLQCARRY_PER_SINK     32   /* undelivered notices carried per sink: the newest */
#define DLQCARRY_NOTICE_BYTES 5632 /* room for one notice (struct alert_notice: 5,416) */

/* What the alert rule knows about one DLQ (duty/alert.h's struct alert_rule). */
struct dlqcarry_rule {
    uint64_t url_hash;      /* FNV-1a of the whole URL: with url_len, the key of */
    uint32_t url_len;       /* a URL longer than url keeps */
    char url[DLQCARRY_URL]; /* the URL, cut to fit */
    int64_t depth;
    int64_t last_sent;
};

/* A notice one sink has not taken yet. */
struct dlqcarry_notice {
    int64_t due_ms; /* CLOCK_MONOTONIC ms of the writer's next try (any process's clock) */
    int32_t attempts;
    unsigned char notice[DLQCARRY_NOTICE_BYTES];
};

/* A sink's notices, a ring: the oldest at first, dropped for a newer when full. */
struct dlqcarry_sink {
    uint32_t first, count;
    struct dlqcarry_notice slot[DLQCARRY_PER_SINK];
};

/* Written in this order; the reader touches the pages of what was written. */
struct dlqcarry {
    int state;            /* atomic: 0 empty, 1 being written, 2 written */
    uint32_t version;     /* DLQCARRY_VERSION of the writer */
    uint32_t notice_size; /* the writer's size of a notice */
    uint32_t nrules;
    uint64_t cursor; /* dead letters of the ring (shm_dlq_read) already read */
    struct dlqcarry_rule rules[DLQCARRY_RULES];
    struct dlqcarry_sink sinks[DLQCARRY_SINKS];
};

/* ---- the writer ---- */

/* Start a record over whatever r held: the cursor, no rules, no notices;
 * notices will be notice_size bytes. */
void dlqcarry_begin(struct dlqcarry *r, uint64_t cursor, size_t notice_size);
/* Add the rule state of the DLQ at url, after those put before. 0, or -1
 * when the record has DLQCARRY_RULES already. */
int dlqcarry_put_rule(struct dlqcarry *r, const char *url, int64_t depth, int64_t last_sent);
/* Add a notice (notice_size bytes, copied) for sink, after its others. 0;
 * 1 when the sink had DLQCARRY_PER_SINK already and its oldest was dropped
 * for it (the caller says so); -1 for a sink out of range. */
int dlqcarry_put_notice(struct dlqcarry *r, int sink, int attempts, int64_t due_ms,
                        const void *notice);
/* The record is whole: the next dlqcarry_open may take it. */
void dlqcarry_end(struct dlqcarry *r);

/* ---- the reader ---- */

enum dlqcarry_found {
    DLQCARRY_NONE = 0,  /* nothing was left: a first start, or cleared */
    DLQCARRY_OK,        /* a whole record of this version: read it, then clear it */
    DLQCARRY_TORN,      /* its writer stopped in the middle: dropped */
    DLQCARRY_OTHER_KIND /* another version's, or not one this reader can trust: dropped */
};

/* What r holds for a reader whose notices are notice_size bytes. Anything
 * but DLQCARRY_OK leaves r cleared (the caller says why it starts fresh). */
enum dlqcarry_found dlqcarry_open(struct dlqcarry *r, size_t notice_size);
/* The cursor of an open record. */
uint64_t dlqcarry_cursor(const struct dlqcarry *r);
/* The rule state put last for url: 1 (*depth and *last_sent set), or 0. */
int dlqcarry_get_rule(const struct dlqcarry *r, const char *url, int64_t *depth,
                      int64_t *last_sent);
/* How many notices wait for sink (0 out of range), and the k-th, oldest first. */
size_t dlqcarry_notices(const struct dlqcarry *r, int sink);
const struct dlqcarry_notice *dlqcarry_notice_at(const struct dlqcarry *r, int sink, size_t k);

/* Empty r, and give back the memory of the pages it used when it is in the
 * shared region (untouched again, they cost no process RSS). */
void dlqcarry_clear(struct dlqcarry *r);

#endif
