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

struct config;
struct dlqcarry;
struct dlqmon;

/*
 * What a stopped monitor leaves to the next one is a record in the shared
 * region (proc/dlqcarry.h, shm_dlq_carry()), so that the next may run in
 * another process: what the rule knows about each DLQ (so a reload does not
 * re-announce a DLQ that was already non-empty), which dead letters were
 * reported (the cursor into the ring), and notices not yet delivered (the
 * newest DLQCARRY_PER_SINK of each sink, with their attempts; the next
 * sender tries them at once). A monitor that stops writes it, the next one
 * that starts reads and clears it; a record its writer left half-written
 * (it died) is dropped, and the monitor starts fresh, as a first start
 * does, and logs why.
 */

/*
 * Start monitoring the queues of c (everything needed is copied: c may be
 * freed afterwards), carrying on from what the previous monitor left in
 * carry (NULL: nothing; its undelivered notices move to the new monitor).
 * Call after shm_create. Never fails the caller: returns NULL only when it
 * cannot start (logged; the record is then left for the next start), and
 * dlqmon_stop(NULL, carry) is a no-op.
 *
 * On reload call dlqmon_stop(old, carry) then dlqmon_start(new, carry).
 */
struct dlqmon *dlqmon_start(const struct config *c, struct dlqcarry *carry);

/* Stop promptly (an SQS call or delivery in progress is abandoned), leave
 * what the next monitor needs in carry (NULL: nothing is left), and free.
 * Only the thread that starts and stops monitors calls these. */
void dlqmon_stop(struct dlqmon *m, struct dlqcarry *carry);
/* Tell its thread to stop, without waiting (relay_ask_stop says why): its
 * alert sender runs on, so notices posted until dlqmon_stop (the pause
 * watch's, stopped first) are still carried. */
void dlqmon_ask_stop(struct dlqmon *m);

/* Empty carry (may be NULL): at the end, nothing is left to a next monitor. */
void dlqmon_carry_clear(struct dlqcarry *carry);

/* Log a notice made elsewhere (a queue paused or resumed: pausewatch.c) and
 * queue it (copied) for the sinks. Any thread; m may be NULL (logged only). */
struct alert_notice;
void dlqmon_post(struct dlqmon *m, const struct alert_notice *n);

#endif
