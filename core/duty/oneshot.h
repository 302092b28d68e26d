/*
 * oneshot.h - the one-shot checks of the store and SQS, as the probe child
 * runs them once a configuration's plugins passed (plugin/probe.c): the
 * start's (storecheck_start), a reload's (storecheck_reload) and `twiced -t
 * --connect`'s (preflight_connect). The master asks for one with a request
 * (a memfd: which check, and for a reload the running store) and reads the
 * child's problem lines, so that it runs no PostgreSQL or SQS code itself.
 * Not the checks: storecheck.h and preflight.h.
 */
#ifndef TWICE_ONESHOT_H
#define TWICE_ONESHOT_H

#include <stdio.h>

struct config;
struct idem_identity;

/* The request's fields, NUL-terminated strings in this order (oneshot.c
 * writes them, oneshot_child.c reads them). */
enum oneshot_field {
    ONESHOT_F_KIND,
    ONESHOT_F_GEN,
    ONESHOT_F_KNOWN, /* "1": the running identity follows */
    ONESHOT_F_CLUSTER,
    ONESHOT_F_DATABASE,
    ONESHOT_F_TABLE_OID,
    ONESHOT_F_TABLE,
    ONESHOT_F_WAS_DSN,
    ONESHOT_F_WAS_TABLE,
    ONESHOT_F_COUNT
};

enum oneshot_kind {
    ONESHOT_START = 1, /* storecheck_start: a store problem is retried, not a config error */
    ONESHOT_RELOAD,    /* storecheck_reload against the running store */
    ONESHOT_CONNECT    /* preflight_connect: twiced -t --connect */
};

/*
 * The request for the child, as a memfd (close-on-exec; the caller closes
 * it), or -1 with errno. For ONESHOT_RELOAD: was is the running
 * configuration (its dsn and table; the memfd holds the dsn, a secret, as
 * the configuration's memfd does), running what the health check learned of
 * its store (NULL: nothing yet) and gen the running generation's id; they
 * are ignored for the other kinds (was may be NULL).
 */
int oneshot_request_fd(enum oneshot_kind kind, const struct config *was,
                       const struct idem_identity *running, int gen);

/* How long (seconds) the child's check of kind for c may take: its own
 * bounds (STORECHECK_MS for each store it asks, preflight's per call) and
 * a margin; past it, the check is judged as hanging. */
int oneshot_timeout(enum oneshot_kind kind, const struct config *c);

/*
 * In the probe child: run the check that req (the request's len bytes, as
 * the child read them before it loaded any plugin) asks for on c (the
 * configuration the plugins were checked with) and print one line per
 * problem (FILE:LINE: ...) to out. 1 when the check refuses c (or req is
 * not a request, said on out), else 0. Its store checks are not cut short
 * by a signal: the master kills the child at a stop.
 */
int oneshot_child(const struct config *c, const char *req, size_t len, FILE *out);

#endif
