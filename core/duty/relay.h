/*
 * relay.h - the outbox relay: a thread of the master (one per host) that
 * sends the follow-up messages handlers staged (idem/outbox.h) to SQS with
 * SendMessageBatch soon after their transaction commits, and deletes them
 * once SQS accepted them. Woken by LISTEN/NOTIFY, so an idle relay costs no
 * statement but a poll every RELAY_POLL_MS; rows are claimed in batches
 * with FOR UPDATE SKIP LOCKED, so relays of several hosts share the work.
 * A message SQS refuses for good stays in the outbox as refused, counted,
 * and is reported through the DLQ alerts (reason outbox-refused).
 */
#ifndef TWICE_RELAY_H
#define TWICE_RELAY_H

struct config;
struct relay;

#define RELAY_BATCH     500  /* rows claimed per statement */
#define RELAY_LEASE     60   /* seconds a claim lasts (a relay that dies mid-send) */
#define RELAY_LINGER_MS 50   /* after a wake-up, gather more commits before claiming */
#define RELAY_POLL_MS   5000 /* claim without a wake-up this often (lapsed claims) */
#define RELAY_STATS_MS  1000 /* the outbox gauges are refreshed at most this often */
#define RELAY_BACKOFF   5    /* seconds before a message whose send failed for now is retried */
/* A cycle starts no SendMessageBatch after RELAY_SEND_MS, and each call (its
 * retries included) ends within RELAY_CALL_MS: the cycle records what SQS
 * said before its claim lapses, so another host's relay never claims and
 * sends again rows this one is still sending (a slow SQS). Not settings:
 * they are margins inside the claim, not an operator's trade-off (a shorter
 * window only splits a slow SQS's sends over more cycles), and they only
 * matter while SQS answers slowly. */
#define RELAY_SEND_MS   20000
#define RELAY_CALL_MS   20000

/* Start the relay for c (everything needed is copied), claiming rows as
 * owner (the process's lease owner: a janitor frees them once the process
 * is gone). Never fails the caller: NULL when it cannot start (logged);
 * relay_stop(NULL) is a no-op. On reload: relay_stop(old), then
 * relay_start(new). */
struct relay *relay_start(const struct config *c, const char *owner);
/* Stop (an SQS call in progress is abandoned: its rows are sent again
 * after their claim lapses) and free. */
void relay_stop(struct relay *r);
/* Tell the relay to stop without waiting for it (relay_stop then waits): the
 * master tells all its threads first, so that the graces they give a
 * statement of a server that stopped answering overlap (stopwait.h). NULL:
 * nothing. The same for health_ask_stop, pausewatch_ask_stop,
 * dlqmon_ask_stop and janitor_ask_stop. */
void relay_ask_stop(struct relay *r);

#endif
