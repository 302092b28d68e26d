/*
 * config.h - twice.conf (libconfig syntax) parsed and validated into one
 * immutable struct config.
 *
 * Every problem is reported as "FILE:LINE: what is wrong" into a diag list,
 * all of them at once; unknown settings are errors, so a typo is never
 * silently ignored. This module does not load plugins: a plugin's own
 * settings are kept as text with their line numbers and checked against the
 * plugin's declaration by the loader (in a child process).
 *
 * Every setting is one row of config_table.c (name, type, range, default,
 * where it is stored, documentation): the parser, the defaults, config_free
 * and twice.conf(5) are derived from it. etc/twice.conf is the annotated
 * reference of every option and default.
 */
#ifndef TWICE_CONFIG_H
#define TWICE_CONFIG_H

#include <stddef.h>

#include "diag.h"
#include "log.h"

/* idempotency.table: its default, and its longest name. The store's index
 * name appends "_janitor_idx" (12 bytes) to the table name and must stay
 * within PostgreSQL's 63-byte identifiers, or it would be truncated. */
#define CONFIG_DEFAULT_TABLE "twice_idempotency"
#define CONFIG_MAX_TABLE_LEN 51

/* What twice reads at most. A configuration is text written by people: these
 * bounds refuse a runaway file (a zero-filled disk, /dev/zero, a generated
 * file gone wrong) at once rather than parse it for minutes. libconfig checks
 * every new setting against all of its group's, so a group's size is bounded
 * too. twice.conf(5) and etc/twice.conf document them. */
#define CONFIG_MAX_BYTES    (4 * 1024 * 1024) /* the file with its @include files */
#define CONFIG_MAX_ENTRIES  1000              /* settings in one group, entries in one list */
#define CONFIG_MAX_SETTINGS 10000             /* settings in all, @include files included */
#define CONFIG_MAX_INCLUDES 100               /* @include directives followed in all */
/* Handler threads of one worker: every queue's concurrency, added up. */
#define CONFIG_MAX_HANDLERS 1024
/* Bytes of a queue's or a plugin's name: SQS's own limit for a queue name, so
 * a queue can be named after its SQS queue. Names are kept whole where the
 * processes share them (dead letters for alerts, metric labels, rate-limit
 * buckets), which have room for this many, and in the master's line for a
 * crashed worker's job (a job record keeps indices: proc/shm.h). */
#define CONFIG_MAX_NAME     80

enum config_on_conflict {
    CONFIG_CONFLICT_SKIP = 0,  /* completed key, other payload: delete as a duplicate */
    CONFIG_CONFLICT_REJECT = 1 /* ... send it to the DLQ with reason payload-conflict */
};

enum config_tracing {
    CONFIG_TRACING_NONE = 0, /* no spans are made or exported */
    CONFIG_TRACING_OTLP = 1  /* spans per job, exported over OTLP/HTTP (JSON) */
};

/* A queue's `envelope`: what wraps its jobs (plugin/envelope.h unwraps). */
enum config_envelope {
    CONFIG_ENVELOPE_NONE = 0,    /* the body is the job */
    CONFIG_ENVELOPE_SNS,         /* an SNS notification: the job is its Message */
    CONFIG_ENVELOPE_EVENTBRIDGE, /* an EventBridge event: the job is its detail */
    CONFIG_ENVELOPE_AUTO         /* either, recognised; anything else as it is */
};

/* One entry of a plugin's `settings` group, as written. */
struct config_kv {
    char *name;
    char *value; /* ints in decimal, bools "true"/"false", strings as is */
    int type;    /* a twice_setting_type: the type written in the file */
    int line;
    char *file; /* the file it is written in (an @include'd one, or the main) */
};

struct config_plugin {
    char *name;
    char *path; /* as resolved: absolute, or relative paths taken from plugin_dir */
    struct config_kv *settings;
    size_t nsettings;
    int line;            /* line of the plugin's entry */
    int settings_line;   /* line of its settings group (the entry's line if none) */
    char *file;          /* the file of the entry (an @include'd one, or the main) */
    char *settings_file; /* the file of its settings group */
    int rate_per_second; /* rate_limit: jobs started per second, all hosts; 0: none */
    int rate_burst;      /* rate_limit: the bucket's size (default per_second) */
};

struct config_route {
    char *value;  /* the value of route_by that selects this route */
    char *plugin; /* a plugin name from `plugins` */
    int line;
};

/* The most receives a receiver gathers into one claim (receives_per_claim). */
#define RECEIVES_PER_CLAIM_MAX 10

struct config_queue {
    char *name;     /* short name for logs and metrics */
    char *url;      /* required */
    char *dlq_url;  /* required: where REJECTs and exhausted jobs go */
    char *plugin;   /* the queue's plugin, or NULL with route_by/routes */
    char *route_by; /* a JSON body path, or "attr:Name"; NULL with plugin */
    struct config_route *routes;
    size_t nroutes;
    int concurrency;        /* handler threads per worker process (default 8) */
    int max_inflight;       /* messages a worker holds at once (default concurrency) */
    int receivers;          /* receive loops per worker process (default 1) */
    int batch_size;         /* 1-10 (default 10) */
    int receives_per_claim; /* full batches gathered into one claim (default 1) */
    int wait_time;          /* long poll seconds 0-20 (default 20) */
    int visibility_timeout; /* seconds (default 30); lease = this + lease_margin */
    int max_attempts;       /* handler runs before the DLQ (default 5) */
    int max_receives;       /* receives of a message that cannot run, before the DLQ
                               (default 10 x max_attempts; >= max_attempts) */
    int backoff_base;       /* RETRY delay base, seconds (default 2) */
    int backoff_cap;        /* RETRY delay cap, seconds (default 300) */
    int timeout;            /* a run's time limit, seconds; 0: none (default) */
    int timeout_grace;      /* seconds past timeout before the worker is replaced (default 10) */
    int ack_tries;          /* tries of an acknowledging step before it is given up (8) */
    int rate_per_second;    /* rate_limit: jobs started per second, all hosts; 0: none */
    int rate_burst;         /* rate_limit: the bucket's size (default per_second) */
    int fifo;               /* the url ends in ".fifo" */
    char *key;              /* the queue's key template (overrides the plugin's), or NULL */
    int envelope;           /* enum config_envelope (default none) */
    int delete_payload;     /* delete a payload kept in S3 once its job is done */
    char *payload_bucket;   /* twicectl send: where bodies over the limit go, or NULL */
    int key_line;           /* where key is written, 0 when not set */
    int url_line;           /* where url is written (in file), 0 when not read */
    int dlq_url_line;       /* where dlq_url is written (in file), 0 when not read */

    /* The circuit breaker (worker/breaker.c); failures 0: off. */
    int breaker_failures; /* transient failures that open it */
    int breaker_window;   /* seconds the failures are counted over */
    int breaker_cooldown; /* seconds open before a probe */
    int breaker_cap;      /* the doubled cooldown's cap, seconds */
    int breaker_probes;   /* probe jobs after a cooldown */

    int line;
    char *file; /* the file of the entry (an @include'd one, or the main) */
};

struct config_webhook {
    char *url;    /* NULL: no webhook sink */
    char *header; /* optional extra header "Name: value" (a secret: never logged) */
    int timeout;  /* seconds (default 10) */
};

struct config_smtp {
    char *url; /* smtp:// or smtps://; NULL: no email sink */
    char *from;
    char **to; /* at least one */
    size_t nto;
    char *username; /* optional */
    char *password; /* optional; a secret: never logged */
    int timeout;    /* seconds (default 30) */
};

struct config {
    char *file; /* the path the configuration was read from */
    char *dir;  /* its directory, absolute: relative paths in it are taken from there */

    int workers;            /* worker processes (default 2) */
    char *plugin_dir;       /* default TWICE_DEFAULT_PLUGIN_DIR */
    int drain_timeout;      /* seconds to finish in-flight jobs on stop/reload (default 30) */
    char *user;             /* run workers as this user (needs a restart to change); NULL */
    char *pid_file;         /* the master's pid file; NULL: none (-p overrides it) */
    char *pid_file_src;     /* where it is set (NULL when not set) */
    int pid_file_line;      /* its line, 0 when not set */
    int ready_timeout;      /* seconds a generation has to get ready (default 60) */
    char *user_file;        /* where it is set (NULL when not set) */
    int user_line;          /* its line, 0 when not set */
    long max_message_bytes; /* larger bodies go to the DLQ as too-large (default 1 MiB) */
    long max_payload_bytes; /* largest payload fetched from S3 (default 64 MiB; 0: none) */
    long worker_max_rss;    /* resident bytes past which a worker is recycled (0: no limit) */
    int worker_max_jobs;    /* handler runs after which a worker is recycled, ±10% (0: none) */

    struct {
        twice_log_level level;  /* default info */
        enum log_format format; /* default text */
        char *file;             /* NULL: stderr */
        char *file_src;         /* where file is set (NULL when not set) */
        int file_line;          /* its line, 0 when not set */
    } log;

    struct {
        char *region;      /* NULL: AWS_REGION, AWS_DEFAULT_REGION, then the profile */
        char *endpoint;    /* NULL: AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, then AWS's */
        char *s3_endpoint; /* NULL: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS's */
        char *profile;     /* NULL: AWS_PROFILE or "default" */
        char *ca_file;     /* NULL: the system CA store */
        char *ca_file_src; /* where it is set (NULL when not set) */
        int ca_file_line;  /* its line, 0 when not set */
    } aws;

    struct {
        char *dsn;       /* required; a secret when it holds a password: never logged */
        char *dsn_src;   /* where dsn is set */
        int dsn_line;    /* its line */
        char *table;     /* default "twice_idempotency"; quoted as an identifier */
        char *table_src; /* where table is set (NULL when not set) */
        int table_line;  /* its line, 0 when not set */
        int retention;   /* seconds completed keys are kept (default 7 days) */
        enum config_on_conflict on_conflict;
        int lease_margin;     /* seconds added to the visibility timeout (default 5) */
        int janitor_interval; /* seconds between janitor passes (default 60) */
        int janitor_batch;    /* rows deleted per statement (default 1000) */
    } idempotency;

    struct {
        int dlq_check_interval; /* seconds (default 60) */
        int repeat_after;       /* seconds (default 3600) */
        struct config_webhook webhook;
        struct config_smtp smtp;
    } alerts;

    struct {
        char *listen;             /* "127.0.0.1:9464"-style; NULL or "" disables */
        int queue_stats_interval; /* seconds between queue gauge refreshes, 0: off (15) */
        int p99_interval;         /* seconds between p99s and the advice (10) */
    } metrics;

    struct {
        enum config_tracing exporter; /* default none: no spans */
        char *endpoint;         /* NULL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then ..._ENDPOINT */
        char *service_name;     /* NULL: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, "twiced" */
        int buffer_spans;       /* finished spans waiting for export, at most (default 2048) */
        int batch_spans;        /* spans per export request (default 512) */
        int export_interval_ms; /* a partial batch waits at most this (default 5000) */
        int export_timeout;     /* seconds for one export request (default 10) */
    } tracing;

    struct config_plugin *plugins;
    size_t nplugins;
    struct config_queue *queues;
    size_t nqueues;
};

/*
 * Parse and validate. `text` is the file's contents when the caller already
 * read them with config_text_read* (the master, and a worker parsing the
 * snapshot the master validated), or NULL to read `file`. Relative @include
 * paths are taken from file's directory. Returns 0 and *out (owned by the
 * caller, free with config_free), or -1 with every problem added to d.
 */
int config_load(const char *file, const char *text, struct config **out, struct diag *d);

/*
 * How config_load judges idempotency.dsn's syntax: libpq's own parser, which
 * this layer does not link (a process that never connects, a lean master,
 * need not load libpq to read its configuration). Each program that links
 * libpq installs it before it loads a configuration (idem_dsn_parses); with
 * none installed a dsn is not judged here, and a bad one is found where it
 * is parsed to connect. fn: 1 when dsn parses, else 0.
 */
typedef int (*config_dsn_check_fn)(const char *dsn);
void config_set_dsn_check(config_dsn_check_fn fn);

/*
 * The one reader of a configuration's text, for the master (the file), the
 * workers and probes (the master's snapshot, a memfd) and twicectl. Reads
 * fd from offset 0 without moving a shared offset (pread; a pipe is read in
 * order). Refuses more than CONFIG_MAX_BYTES ("NAME: larger than 4 MiB ...")
 * and a NUL byte anywhere ("NAME:LINE: ... NUL byte ..."): libconfig would
 * silently stop at it. Returns 0 with *text (NUL-terminated, owned by the
 * caller; it may hold secrets: free with buf_free_secret) and *len, or -1
 * with the problem added to d.
 */
int config_text_read(int fd, const char *name, char **text, size_t *len, struct diag *d);
/* The same for a file (opened here), named as path in problems; a named
 * pipe nobody writes to is refused at once, never waited for. */
int config_text_read_file(const char *path, char **text, size_t *len, struct diag *d);

void config_free(struct config *c);

const struct config_plugin *config_find_plugin(const struct config *c, const char *name);
const struct config_queue *config_find_queue(const struct config *c, const char *name);
/* "SETTING of queue 'NAME' at FILE:LINE" for setting url or dlq_url (the
 * entry's line for another), for a message that says which line to fix. */
void config_queue_where(const struct config_queue *q, const char *setting, char *out, size_t cap);

/*
 * What a configuration accepts but the operator should hear about (today: a
 * queue whose url is another queue's dlq_url, so twiced consumes that
 * queue's dead letters: right for a redrive handler, a mistake otherwise).
 * Adds one "FILE:LINE: message" per warning to w and returns how many;
 * twiced -t prints them and the start logs them, neither fails for them.
 */
size_t config_warnings(const struct config *c, struct diag *w);

/*
 * Settings a running master cannot change on reload (today: user). Adds one
 * line per such difference to d ("user: changing it needs a restart") and
 * returns how many there were.
 */
int config_restart_needed(const struct config *old, const struct config *new_, struct diag *d);

/*
 * Settings a reload must not change at all (today: idempotency.table): the
 * old generation's jobs finish under the old table while the new one would
 * claim in another, so neither would see the other's keys and a message
 * already handled could run again. Adds one problem per difference to d
 * and returns how many; a reload with any is refused.
 */
int config_reload_refused(const struct config *old, const struct config *new_, struct diag *d);

#endif
