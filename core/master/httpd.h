/*
 * httpd.h - the master's HTTP endpoints on metrics.listen (libmicrohttpd):
 *   GET /metrics  Prometheus text format
 *   GET /healthz  200 while the master runs
 *   GET /readyz   200 when a current generation of workers is ready, the
 *                 idempotency store answers the master's health check and
 *                 every queue received successfully within its last two
 *                 long polls; 503 with a one-line reason otherwise
 * It serves from its own thread and reads only the shared metrics region
 * and what httpd_set_queues / httpd_set_ready / httpd_set_store copied in.
 */
#ifndef TWICE_HTTPD_H
#define TWICE_HTTPD_H

#include <stddef.h>
#include <sys/socket.h>

struct config;
struct httpd;

/* Start, restart (listen address changed) or stop (no address) the server
 * for configuration c. *h is NULL when off. 0; or, when the address cannot
 * be listened on, err (saying where the endpoints are now) and -1 when they
 * are off (*h NULL), 1 when they stay on the address they had. */
int httpd_apply(struct httpd **h, const struct config *c, char *err, size_t errlen);

/* The queues /readyz judges: those of the running generation's
 * configuration c (copied), not of one a reload is still starting. 0, or
 * -1 when out of memory (the list before stays). */
int httpd_set_queues(struct httpd *h, const struct config *c);

/* Whether the current generation has all its workers ready, and if not,
 * why ("" when nobody said; copied). */
void httpd_set_ready(struct httpd *h, int ready, const char *why);

/* Why the idempotency store is not healthy ("": it is; copied). */
void httpd_set_store(struct httpd *h, const char *why);

void httpd_stop(struct httpd *h);

/* The /readyz decision, exposed for tests: 1 ready, 0 not (reason set).
 * failing[i]: why queue i has not received since its last successful
 * receive, one clause ("ReceiveMessage fails: CODE", "the idempotency store
 * refuses its claims (SQLSTATE S)"), or NULL / "" (none, or not known). */
int httpd_readiness(int workers_ready, const char *workers_why, const char *store_why,
                    const char *const *queues, const int *wait_times, const double *last_receive,
                    const char *const *failing, size_t n, double now, char *reason, size_t cap);

#endif
