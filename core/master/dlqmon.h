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
struct dlqmon;

/*
 * Start monitoring the queues of c (everything needed is copied: c may be
 * freed afterwards). Call after shm_create. Never fails the caller: returns
 * NULL only when it cannot start (logged), and dlqmon_stop(NULL) is a no-op.
 *
 * On reload call dlqmon_stop(old) then dlqmon_start(new): what the rule
 * knows about each DLQ (so a reload does not re-announce a DLQ that was
 * already non-empty), which dead letters were reported, and notices not
 * yet delivered carry over from the stopped monitor to the next one.
 */
struct dlqmon *dlqmon_start(const struct config *c);

/* Log a notice made elsewhere (a queue paused or resumed: pausewatch.c) and
 * queue it (copied) for the sinks. Any thread; m may be NULL (logged only). */
struct alert_notice;
void dlqmon_post(struct dlqmon *m, const struct alert_notice *n);

/* Stop promptly (an SQS call or delivery in progress is abandoned) and
 * free. Only the thread that starts and stops monitors calls these. */
void dlqmon_stop(struct dlqmon *m);

#endif
