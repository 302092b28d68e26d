/*
 * alert.h - notices about dead-letter queues: what they say (the webhook's
 * JSON document, the text a chat or a mail shows), when one is due (the
 * per-queue rise/repeat/resolve rule), and their delivery to the configured
 * sinks with retries (alert_sink.c). Not the polling of the DLQs: dlqmon.c.
 *
 * The rule, one notice per queue per check at most (README "DLQ alerts"):
 *   alert     the DLQ went from empty (or unknown, at start) to non-empty
 *   report    it grew further, or twice dead-lettered messages since the
 *             last check: sent at once, never held back by repeat_after
 *   repeat    still non-empty, nothing new for repeat_after seconds
 *   resolved  empty again
 * Every notice lists the dead letters twice sent since the last check.
 */
#ifndef TWICE_ALERT_H
#define TWICE_ALERT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum alert_kind {
    ALERT_NONE = 0,
    ALERT_ALERT,
    ALERT_REPORT,
    ALERT_REPEAT,
    ALERT_RESOLVED,
    ALERT_PAUSED, /* a queue was paused (by an operator or its breaker): pausewatch.c */
    ALERT_RESUMED /* and resumed */
};

/* "alert", "report", "repeat", "resolved", "paused", "resumed" ("none"). */
const char *alert_kind_name(enum alert_kind k);

#define ALERT_EXAMPLES 5  /* dead letters listed one by one per notice */
#define ALERT_COUNTS   16 /* distinct (reason, plugin) pairs counted per notice */

struct alert_letter {
    char message_id[128];
    char key[192];
    char reason[32];
    char plugin[CONFIG_MAX_NAME + 1];
    int64_t at; /* unix time */
};

struct alert_count {
    char reason[32];
    char plugin[CONFIG_MAX_NAME + 1];
    long n;
};

/* One notice about one queue's DLQ. Self-contained (no pointers), so it can
 * be copied into a delivery queue and outlive the configuration, and be
 * carried across a reload as bytes in the shared region (proc/dlqcarry.h:
 * a change of its layout bumps DLQCARRY_VERSION). */
struct alert_notice {
    enum alert_kind kind;
    char queue[CONFIG_MAX_NAME + 1];
    char dlq_url[512];
    long depth;    /* messages in the DLQ now; -1: unknown (the check failed) */
    long previous; /* at the previous check; -1: unknown */
    long letters;  /* dead letters twice sent since the previous check */
    long lost;     /* of those, how many were overwritten before being read */
    struct alert_count counts[ALERT_COUNTS];
    size_t ncounts;
    long other_counts; /* letters whose (reason, plugin) did not fit in counts */
    struct alert_letter examples[ALERT_EXAMPLES];
    size_t nexamples;
    char host[256];
    int64_t time;           /* unix time of the check */
    char pause_reason[200]; /* PAUSED: the operator's reason, or "breaker" */
    int64_t pause_until;    /* PAUSED: when it ends by itself (unix time), 0: not */
};

/* Start a notice about queue (copied, cut to fit). */
void alert_notice_init(struct alert_notice *n, const char *queue, const char *dlq_url,
                       const char *host, int64_t now);
/* Count one dead letter (any argument may be NULL); the first ALERT_EXAMPLES
 * are kept as examples. */
void alert_notice_add_letter(struct alert_notice *n, const char *reason, const char *plugin,
                             const char *message_id, const char *key, int64_t at);

/*
 * What an operator reads, one fact per line, first line a headline (the
 * mail's subject). Untrusted text (keys, ids) is escaped as log lines are;
 * slack nonzero also writes &, < and > as &amp; &lt; &gt; so a key cannot
 * mention @channel in Slack. Returns malloc'd text, or NULL on ENOMEM.
 */
char *alert_notice_text(const struct alert_notice *n, int slack);

/*
 * The webhook's JSON document (README "DLQ alerts"), compact:
 * {"kind","queue","dlq_url","dlq_depth","previous_depth","text",
 *  "dead_letters_total","dead_letters_lost","counts":[{reason,plugin,count}],
 *  "dead_letters":[{message_id,key,reason,plugin,time}],"host","time"}.
 * Depths are null when unknown; paused and resumed notices add "reason" and
 * "until" (null when the pause has no end). malloc'd, or NULL on ENOMEM.
 */
char *alert_notice_json(const struct alert_notice *n);

/* A whole plain-text mail (headers, blank line, body; CRLF line ends) from
 * `from` to every address of to. malloc'd, or NULL on ENOMEM. */
char *alert_notice_email(const struct alert_notice *n, const char *from, char *const *to,
                         size_t nto);

/* "2026-12-02T09:41:01Z" */
void alert_format_time(int64_t t, char *out, size_t cap);

/* ---- the rule ---- */

/* What the rule remembers about one DLQ between checks. */
struct alert_rule {
    long depth;        /* at the last successful check; -1 before the first */
    int64_t last_sent; /* when the last notice other than resolved went out; 0: none */
};

#define ALERT_RULE_INIT                                                                           \
    {                                                                                             \
        -1, 0                                                                                     \
    }

/*
 * One check of a DLQ: depth now (-1 when it could not be read), letters
 * twice sent since the previous check. Returns the notice due (ALERT_NONE
 * for none) and updates r. repeat_after 0 turns repeats off.
 */
enum alert_kind alert_rule_step(struct alert_rule *r, long depth, long letters, int64_t now,
                                int repeat_after);

/* ---- delivery (alert_sink.c) ---- */

struct alert_sender;
struct dlqcarry; /* proc/dlqcarry.h: notices not delivered yet, carried across a reload */

/*
 * Start the delivery thread for the sinks of c.alerts (copied). carried
 * (may be NULL; an open record, dlqcarry_open) holds the notices an earlier
 * sender had not delivered: those for a sink c still has are queued first,
 * with their attempts, and tried at once (a reload may have mended the
 * sink). Returns NULL when c configures no sink, or on failure (logged).
 */
struct alert_sender *alert_sender_start(const struct config *c, const struct dlqcarry *carried);

/* Queue n (copied) for every sink. Never blocks on delivery; when a sink's
 * queue is full its oldest waiting notice is dropped (logged). */
void alert_sender_post(struct alert_sender *s, const struct alert_notice *n);

/* Stop at once (a delivery in progress is abandoned) and free (s may be
 * NULL). What was not delivered is put in carry, a record being written
 * (dlqcarry_begin), for the next alert_sender_start: the newest
 * DLQCARRY_PER_SINK of each sink (the others dropped, logged); carry NULL:
 * dropped. */
void alert_sender_stop(struct alert_sender *s, struct dlqcarry *carry);

/* The delay before retry number `attempt` (1-based) of a failed delivery:
 * 1, 2, 4, ... seconds, at most ALERT_RETRY_CAP. */
#define ALERT_RETRY_CAP    300
#define ALERT_MAX_ATTEMPTS 12 /* then the notice is given up (logged as an error) */
int alert_retry_delay(int attempt);

/* "https://hooks.example.com" from a URL: scheme, host and port only, for
 * logs (paths and queries of webhook URLs are secrets, user info too). */
void alert_url_origin(const char *url, char *out, size_t cap);

/* 1 when mail to url must go through TLS (STARTTLS, else fail): credentials
 * over smtp:// to anything but loopback, so nobody on the path can strip
 * the upgrade and read the password. smtps:// is TLS throughout; without
 * credentials STARTTLS is used when offered. */
int alert_smtp_needs_tls(const char *url, int has_credentials);

#endif
