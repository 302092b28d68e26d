/*
 * dlqmon.h - the master's DLQ monitor: a thread that, every
 * alerts.dlq_check_interval seconds, reads the depth of each queue's DLQ
 * (the twice_dlq_depth gauge), reads the dead letters workers recorded in
 * shared memory, and sends the notices the rule of alert.h calls for, to
 * the log and the configured sinks. It needs nothing but the configuration
 * (no metrics listener, no other process). Not the delivery: alert_sink.c.
 */
#ifndef TWICE_DLQMON_H
#define TWICE_DLQMON_H

#include <stddef.h>
#include <stdint.h>

struct alert_pending;
struct alert_rule;
struct config;
struct dlqmon;

/*
 * What a stopped monitor leaves to the next one: what the rule knows about
 * each DLQ (so a reload does not re-announce a DLQ that was already
 * non-empty), which dead letters were reported, and notices not yet
 * delivered. The caller owns it: zeroed before the first start, emptied
 * with dlqmon_carry_clear at the end. Its fields are dlqmon.c's.
 */
struct dlqmon_carry {
    int valid; /* a monitor was stopped: the rest means something */
    uint64_t cursor;
    char **dlq_urls; /* parallel to rules */
    struct alert_rule *rules;
    size_t n;
    struct alert_pending *pending;
};

/*
 * Start monitoring the queues of c (everything needed is copied: c may be
 * freed afterwards), carrying on from what the previous monitor left in
 * carry (its undelivered notices move to the new monitor). Call after
 * shm_create. Never fails the caller: returns NULL only when it cannot
 * start (logged), and dlqmon_stop(NULL, carry) is a no-op.
 *
 * On reload call dlqmon_stop(old, carry) then dlqmon_start(new, carry).
 */
struct dlqmon *dlqmon_start(const struct config *c, struct dlqmon_carry *carry);

/* Stop promptly (an SQS call or delivery in progress is abandoned), leave
 * what the next monitor needs in carry, and free. Only the thread that
 * starts and stops monitors calls these. */
void dlqmon_stop(struct dlqmon *m, struct dlqmon_carry *carry);
/* Tell its thread to stop, without waiting (relay_ask_stop says why): its
 * alert sender runs on, so notices posted until dlqmon_stop (the pause
 * watch's, stopped first) are still carried. */
void dlqmon_ask_stop(struct dlqmon *m);

/* Free what carry holds and zero it. */
void dlqmon_carry_clear(struct dlqmon_carry *carry);

/* Log a notice made elsewhere (a queue paused or resumed: pausewatch.c) and
 * queue it (copied) for the sinks. Any thread; m may be NULL (logged only). */
struct alert_notice;
void dlqmon_post(struct dlqmon *m, const struct alert_notice *n);

#endif
