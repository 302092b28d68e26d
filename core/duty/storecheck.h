/*
 * storecheck.h - whether a reload's idempotency.dsn still reaches the keys
 * the running generation uses. Another host, port, password or sslmode of
 * the same cluster is a failover or a rotation and is taken;
 * another database, cluster or schema would start the new generation on
 * other keys while the old one drains, so a message already handled could
 * run again: refused, as a move of idempotency.table is.
 */
#ifndef TWICE_STORECHECK_H
#define TWICE_STORECHECK_H

struct config;
struct diag;
struct idem_identity;

/* How long one store's check may take, its connect included (ms): a check,
 * not a wait; a server that does not answer in that time is judged as one
 * that cannot be reached. A reload's check may ask two stores. */
#define STORECHECK_MS 5000

/*
 * 0 when now's dsn reaches the keys was's does; else 1 with one "FILE:LINE:
 * idempotency.dsn: ..." in d. The running store's identity is running (what
 * the health check of was's store learned, storehealth_identity; NULL: nothing
 * yet), else asked now; each store's check, its connect included, is given
 * up after 5 s (it runs in the probe child, oneshot.h, which the master's
 * loop waits for), and at once
 * when stop_asked (may be NULL) says a stop signal came. A changed dsn that
 * does not connect or answer in that time (a server or pooler that takes
 * the connection and says nothing), or whose running store was never seen
 * and is unreachable now, is refused too: the reload cannot tell, and can be
 * asked again once the store answers. A dsn written as before is checked as well
 * (a service file or a host name may have changed what it reaches), but
 * only when both sides can be known: a store that is down does not refuse
 * it. A dsn that reaches a server that takes no writes (idem_takes_writes:
 * a standby in recovery, or default_transaction_read_only on for the
 * server, database or role), or a key table its role may not write claims
 * into (idem_claim_allowed: named with the GRANT that gives it), is refused
 * at once, written as before or not, as the start and `twiced -t --connect`
 * refuse it: no generation could get ready on it. gen is the running
 * generation, for the message.
 */
int storecheck_reload(const struct config *was, const struct config *now,
                      const struct idem_identity *running, int gen, int (*stop_asked)(void),
                      struct diag *d);

/*
 * At the first start: 1 with one "FILE:LINE: idempotency.dsn: ..." in d when
 * c's dsn reaches a standby in recovery, or a server whose transactions take
 * no writes (default_transaction_read_only on for it, the database or the
 * role), or a key table its role may not write claims into (idem_claim_allowed:
 * a missing grant, named with the GRANT that gives it), whose workers could
 * never claim (twiced does not start); else 0, also when the store does
 * not answer within 5 s, its connect included (the workers wait for it, bounded by ready_timeout),
 * or a stop signal came (stop_asked, may be NULL: the check is given up at once).
 */
int storecheck_start(const struct config *c, int (*stop_asked)(void), struct diag *d);

#endif
