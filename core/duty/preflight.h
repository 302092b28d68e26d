/*
 * preflight.h - `twiced -t --connect`: whether a configuration can work, asked
 * of the servers themselves: PostgreSQL accepts the dsn, and every queue and
 * dead-letter queue answers with the credentials twiced would use. What the
 * workers wait for before they are ready (worker/ready.c), on demand.
 */
#ifndef TWICE_PREFLIGHT_H
#define TWICE_PREFLIGHT_H

struct config;
struct diag;

/* Add one "FILE:LINE: what is wrong" per server that does not answer to d;
 * returns how many were added. */
int preflight_connect(const struct config *c, struct diag *d);

#endif
