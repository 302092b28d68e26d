/*
 * ctl.h - what every twicectl subcommand shares: the parsed global options,
 * the configuration (loaded on first use, the same file twiced reads), and
 * SQS and PostgreSQL connections made from it. Each subcommand lives in its
 * own file (ctl_send.c, ctl_dlq.c, ctl_key.c, ctl_plugin.c, ctl_status.c,
 * ctl_whoami.c) and returns an exit code: 0 success, 1 operational failure
 * (after printing why on stderr), 2 usage error.
 */
#ifndef TWICE_CTL_H
#define TWICE_CTL_H

#include <stdio.h>

struct config;
struct config_queue;
struct creds_chain;
struct idem_store;
struct sqs_client;
struct sqs_endpoint;

#define CTL_OK 0
#define CTL_FAIL 1
#define CTL_USAGE 2

struct ctl {
    const char *config_path; /* -c FILE, else the default */
    int json;                /* --json: machine-readable output where offered */
    struct config *cfg;      /* NULL until ctl_config() */
    struct sqs_endpoint *endpoint;
    struct creds_chain *creds;
    struct sqs_client *sqs;
    struct idem_store *store;
};

/* The configuration; on failure prints every problem (FILE:LINE: ...) and
 * returns NULL. */
const struct config *ctl_config(struct ctl *c);
/* An SQS client / idempotency store for the configuration, or NULL after
 * printing why. */
struct sqs_client *ctl_sqs(struct ctl *c);
struct idem_store *ctl_store(struct ctl *c);
/* A configured queue by name, or by URL; NULL after printing why. A DLQ's
 * name or URL finds the queue it belongs to when dlq is nonzero. */
const struct config_queue *ctl_queue(struct ctl *c, const char *name_or_url, int dlq);
/* Free everything the context holds. */
void ctl_close(struct ctl *c);

/* Print "twicectl: " and the message to stderr; returns CTL_FAIL. */
int ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a usage error (and "see twicectl CMD --help"); returns CTL_USAGE. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Subcommands: argv[0] is the subcommand's name. */
int ctl_send(struct ctl *c, int argc, char **argv);
int ctl_dlq(struct ctl *c, int argc, char **argv);
int ctl_key(struct ctl *c, int argc, char **argv);
int ctl_plugin(struct ctl *c, int argc, char **argv);
int ctl_status(struct ctl *c, int argc, char **argv);
int ctl_whoami(struct ctl *c, int argc, char **argv);

#endif
