/*
 * ctl.h - what every twicectl subcommand shares: the parsed global options,
 * the configuration (loaded on first use, the same file twiced reads), and
 * SQS and PostgreSQL connections made from it. Each subcommand lives in its
 * own file (ctl_send.c, ctl_dlq.c, ctl_key.c, ctl_derive.c, ctl_outbox.c, ctl_plugin.c,
 * ctl_status.c, ctl_whoami.c, ctl_pause.c) and returns an exit code: 0 success, 1 operational
 * failure (after printing why on stderr), 2 usage error.
 */
#ifndef TWICE_CTL_H
#define TWICE_CTL_H

#include <stddef.h>
#include <stdio.h>

#include "sqs.h"
#include "sqs_limits.h"

struct buf;
struct config;
struct config_queue;
struct creds_chain;
struct idem_store;
struct sqs_client;
struct sqs_endpoint;
struct sqs_error;
struct sqs_message;
struct json_t;

#define CTL_OK    0
#define CTL_FAIL  1
#define CTL_USAGE 2

struct s3_client;

struct ctl {
    const char *config_path; /* -c FILE, else the default */
    int json;                /* --json: machine-readable output where offered */
    long timeout_ms;         /* --timeout: the limit of each SQS call and PostgreSQL answer */
    struct config *cfg;      /* NULL until ctl_config() */
    struct sqs_endpoint *endpoint;
    struct creds_chain *creds;
    struct sqs_client *sqs;
    struct s3_client *s3;
    struct idem_store *store;
};

/* The configuration; on failure prints every problem (FILE:LINE: ...) and
 * returns NULL. */
const struct config *ctl_config(struct ctl *c);
/* An SQS client / idempotency store for the configuration, or NULL after
 * printing why. The store's connect and each of its statements are given up
 * when PostgreSQL does not answer within --timeout (idem_open_bounded): the
 * command fails saying so. */
struct sqs_client *ctl_sqs(struct ctl *c);
struct idem_store *ctl_store(struct ctl *c);
/* The store for subcommand cmd that reads one of twice's tables (suffix ""
 * the keys, "_outbox" the outbox): NULL, after printing which table is
 * missing, in which schema and database, and what to do, when it is not
 * there (twiced never ran against it, or the configuration names another
 * database), or after printing why the store cannot be opened. */
struct idem_store *ctl_store_table(struct ctl *c, const char *cmd, const char *suffix);
/* The store for subcommand cmd that writes what a twiced not started yet
 * will read (pause, resume): a warning when the key table is missing, as
 * that is a database no twiced has run against yet, or the wrong one. NULL
 * after printing why the store cannot be used. */
struct idem_store *ctl_store_ahead(struct ctl *c, const char *cmd);
/* An S3 client (aws.s3_endpoint, the SQS region and credentials), or NULL
 * after printing why. */
struct s3_client *ctl_s3(struct ctl *c);
/* A configured queue by name, or by URL; NULL after printing why. A DLQ's
 * name or URL finds the queue it belongs to when dlq is nonzero. */
const struct config_queue *ctl_queue(struct ctl *c, const char *name_or_url, int dlq);
/* Free everything the context holds. */
void ctl_close(struct ctl *c);

/* Print "twicectl: " and the message to stderr; returns CTL_FAIL. */
int ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print a usage error (and "see twicectl CMD --help"); returns CTL_USAGE. */
int ctl_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "twicectl: queue NAME: ACTION: CODE: message (hint)" on stderr; returns
 * CTL_FAIL. A call that timed out names the endpoint and --timeout. */
int ctl_sqs_fail(const char *queue, const char *action, const struct sqs_error *e);

/*
 * Options. Every subcommand parses its own with getopt_long (opterr off,
 * optstring starting with ':') and passes what it does not know to
 * ctl_option: -c/--config FILE, --json and --timeout SECONDS are accepted
 * anywhere; 'h'
 * (--help) prints help (the subcommand's text) and returns CTL_OK; ':' and
 * '?' are usage errors. Returns -1 when the option was handled and parsing
 * goes on, else the exit code to return now.
 */
int ctl_option(struct ctl *c, const char *cmd, const char *help, int opt, int argc, char **argv);
/* The long options of ctl_option, to end a subcommand's table with. */
#define CTL_LONG_OPTIONS                                                                          \
    {"help", 0, NULL, 'h'}, {"config", 1, NULL, 'c'}, {"json", 0, NULL, 'J'},                     \
        {"timeout", 1, NULL, 'T'},                                                                \
    {                                                                                             \
        NULL, 0, NULL, 0                                                                          \
    }

/* The default of --timeout, and its largest value (seconds). */
#define CTL_DEFAULT_TIMEOUT 10
#define CTL_MAX_TIMEOUT     3600

/* A positive integer option value, or -1 after a usage message. */
long ctl_number(const char *cmd, const char *opt, const char *value, long max);

/* Append s (len bytes) for a terminal, on one line: control characters,
 * Unicode bidirectional controls, backslashes and bytes that are not UTF-8
 * escaped (\n, \\, \xNN, \u0085, \u202e), quotes kept; cut after max
 * characters with "..." (max 0: no cut). */
void ctl_escape(struct buf *b, const char *s, size_t len, size_t max);

/* The most characters of an argument an error message repeats, and the room
 * they take escaped (6 bytes for the widest escape, \u0085, and "..."). */
#define CTL_ARG_CHARS 200
#define CTL_ARG_SIZE  (6 * CTL_ARG_CHARS + 4)

/* An argument the user gave (a queue name, a message id, an option value),
 * escaped as ctl_escape does and cut after CTL_ARG_CHARS, for an error message
 * that repeats it: a name holding a newline or a terminal escape cannot fake or
 * drive the terminal, and a megabyte-long one is not printed whole. Written
 * into out (CTL_ARG_SIZE bytes, the caller's); returns out. */
const char *ctl_arg(char out[CTL_ARG_SIZE], const char *s);

/* Print v as indented JSON and a newline to stdout; takes v. CTL_OK, or
 * CTL_FAIL when v is NULL (out of memory) or stdout fails. */
int ctl_print_json(struct json_t *v);

/* A table printed with aligned columns; cells are copied as given (escape
 * them first). ctl_table_print prints and frees. */
struct ctl_table;
struct ctl_table *ctl_table_new(size_t ncols, const char *const *headers);
void ctl_table_add(struct ctl_table *t, const char *const *cells);
int ctl_table_print(struct ctl_table *t);

/* "2026-12-02 09:41:01Z", or "-" for 0. */
void ctl_time(long long t, char *out, size_t cap);

/*
 * The message `dlq redrive` sends for dead letter m: its body, its user
 * attributes (twice-packed-attributes unpacked, every other twice-*
 * attribute dropped), its FIFO group, and a deduplication id derived from
 * the dead letter's own id. Borrows from m; frees with ctl_redrive_free.
 * 0, or -1 with err (a packed attribute that does not parse, too many).
 */
#define CTL_MAX_ATTRS SQS_ATTRS_MAX
struct ctl_redrive {
    struct sqs_attr attrs[CTL_MAX_ATTRS]; /* names and values borrowed from m or packed */
    size_t nattrs;
    struct json_t *packed;                /* owned: twice-packed-attributes, parsed */
    unsigned char *binary[CTL_MAX_ATTRS]; /* owned: decoded packed Binary values */
    char dedup[160];
};
int ctl_redrive_build(const struct sqs_message *m, struct ctl_redrive *r, char *err,
                      size_t errlen);
void ctl_redrive_free(struct ctl_redrive *r);

/*
 * Run fn(arg) in a forked child whose standard output is a pipe (fn may
 * _exit with its own code; returning exits 0), and collect what it writes
 * into out until it closes the pipe or timeout seconds pass. The child's
 * wait status, or -1 when it overran (then killed) or could not start
 * (*failed then set, after printing why).
 */
int ctl_child(void (*fn)(void *arg), void *arg, int timeout, struct buf *out, int *failed);

/* All of standard input appended to b (a message body given as "-"). 0,
 * or -1 after printing why. */
int ctl_read_stdin(struct buf *b);
/* An --attr NAME=VALUE argument into a String attribute borrowing from arg
 * (split in place). 0, or -1 when it is not NAME=VALUE. */
int ctl_parse_attr(char *arg, struct sqs_attr *a);

/* Subcommands: argv[0] is the subcommand's name. */
int ctl_send(struct ctl *c, int argc, char **argv);
int ctl_dlq(struct ctl *c, int argc, char **argv);
int ctl_key(struct ctl *c, int argc, char **argv);
int ctl_key_derive(struct ctl *c, int argc, char **argv); /* `key derive` */
int ctl_outbox(struct ctl *c, int argc, char **argv);
int ctl_plugin(struct ctl *c, int argc, char **argv);
int ctl_status(struct ctl *c, int argc, char **argv);
int ctl_whoami(struct ctl *c, int argc, char **argv);
int ctl_pause(struct ctl *c, int argc, char **argv);
int ctl_resume(struct ctl *c, int argc, char **argv);

/* A --for DURATION: seconds, or numbers with units s, m, h, d ("1h30m");
 * the seconds (1 to 366 days), or -1 when it is not one. Pure. */
long ctl_parse_duration(const char *text);
/* A queue's pause for `twicectl status`: "-" when r is NULL or not paused
 * any more, "REASON [until TIME]", "breaker (probe after TIME)". */
struct pause_row;
void ctl_pause_describe(const struct pause_row *r, char *out, size_t cap);

#endif
