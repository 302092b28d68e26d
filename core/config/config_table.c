/*
 * config_table.c - every setting of twice.conf, one row each: the one place
 * a setting is written. Its type, range and default are checked and set by
 * config_parse.c, listed in twice.conf(5) by config_doc.c, and compared
 * with etc/twice.conf by tests/unit/test-config-docs.c. How to add one:
 * see the end of the table.
 */
#include "config_check.h"
#include "config_table.h"

#include "config.h"
#include "sqs_limits.h"

#include <stdio.h>
#include <string.h>

#define FIELD(type, f)                                                                            \
    {                                                                                             \
        offsetof(type, f), sizeof(((type *) 0)->f)                                                \
    }
#define C(f)           FIELD(struct config, f)        /* the top level and its groups */
#define P(f)           FIELD(struct config_plugin, f) /* an entry of plugins */
#define Q(f)           FIELD(struct config_queue, f)  /* an entry of queues */
#define R(f)           FIELD(struct config_route, f)  /* an entry of a queue's routes */
#define COUNT(type, f) .count_offset = offsetof(type, f)

/* A row: its group, name, kind and field; then what the kind needs. */
#define ROW(grp, nm, knd, fld) .group = (grp), .name = (nm), .kind = (knd), .field = fld

static const struct config_choice levels[] = {{"error", TWICE_LOG_ERROR},
                                              {"warn", TWICE_LOG_WARN},
                                              {"info", TWICE_LOG_INFO},
                                              {"debug", TWICE_LOG_DEBUG},
                                              {NULL, 0}};
static const struct config_choice formats[] = {
    {"text", LOG_FORMAT_TEXT}, {"json", LOG_FORMAT_JSON}, {NULL, 0}};
static const struct config_choice exporters[] = {
    {"none", CONFIG_TRACING_NONE}, {"otlp", CONFIG_TRACING_OTLP}, {NULL, 0}};
static const struct config_choice envelopes[] = {{"none", CONFIG_ENVELOPE_NONE},
                                                 {"sns", CONFIG_ENVELOPE_SNS},
                                                 {"eventbridge", CONFIG_ENVELOPE_EVENTBRIDGE},
                                                 {"auto", CONFIG_ENVELOPE_AUTO},
                                                 {NULL, 0}};
static const struct config_choice conflicts[] = {
    {"skip", CONFIG_CONFLICT_SKIP}, {"reject", CONFIG_CONFLICT_REJECT}, {NULL, 0}};

const struct config_row config_rows[] = {
    /* The top level. */
    {ROW("", "workers", CONFIG_INT, C(workers)), .lo = 1, .hi = 256, .def = 2,
     .doc = "Worker processes. Each loads the plugins, polls every queue and holds one "
            "PostgreSQL connection."},
    {ROW("", "plugin_dir", CONFIG_STR, C(plugin_dir)), .flags = CONFIG_NONEMPTY,
     .def_str = TWICE_DEFAULT_PLUGIN_DIR, .check = config_check_rel_path,
     .doc_default = "the bundled plugins' directory",
     .doc = "Where plugin paths without a leading / are looked up; a relative plugin_dir is "
            "taken from the configuration file's directory."},
    {ROW("", "drain_timeout", CONFIG_INT, C(drain_timeout)), .lo = 0, .hi = 3600, .def = 30,
     .doc = "Seconds a stop or reload waits for in-flight jobs; jobs still running then are "
            "handed back to SQS (visibility 0). Keep it above the slowest normal job, and below "
            "the systemd unit's TimeoutStopSec."},
    {ROW("", "user", CONFIG_STR, C(user)), .check = config_check_user,
     .doc_default = "not set, so the invoking user (the systemd unit runs twiced as twice)",
     .doc = "Run the workers as this user when started as root. Changing it needs a restart: "
            "a reload keeps the old user."},
    {ROW("", "ready_timeout", CONFIG_INT, C(ready_timeout)), .lo = 1, .hi = 3600, .def = 60,
     .doc = "Seconds a generation of workers has to get ready: connected to PostgreSQL (the "
            "table created or migrated) and every queue and dead-letter queue answered "
            "GetQueueAttributes. At start, twiced then exits 1 with the reason (systemctl start "
            "fails; keep it below TimeoutStartSec); on reload, the running generation stays. "
            "Each plugin's init() gets as long: in the check of twiced -t, a start and a reload "
            "(at least 5 s; longer is refused as hanging), and in every worker, one started in "
            "another's place too (it exits, the log naming the plugin, and the master starts "
            "another)."},
    {ROW("", "pid_file", CONFIG_STR, C(pid_file)), .flags = CONFIG_UNSET,
     .check = config_check_pid_file, .doc_default = "none (twiced -p FILE overrides it)",
     .doc = "The master writes its pid here (also with -d) and removes it when it exits; a "
            "second twiced refuses a pid file a running one holds. twiced -s reload|stop|quit "
            "signals the master it names. A relative path is taken from the configuration "
            "file's directory. A symbolic link there is not followed: twiced -t and the start "
            "refuse one, and a directory. Changing it needs a restart."},
    {ROW("", "max_message_bytes", CONFIG_INT, C(max_message_bytes)), .lo = 1024,
     .hi = SQS_MESSAGE_MAX_BYTES, .def = SQS_MESSAGE_MAX_BYTES,
     .doc = "Largest message body handled, in bytes. Larger bodies go to the dead-letter queue "
            "with the reason too-large."},
    {ROW("", "max_payload_bytes", CONFIG_INT, C(max_payload_bytes)), .lo = 0, .hi = 2147483647LL,
     .def = 64L << 20,
     .doc = "Largest payload fetched from S3 for a message in the Extended Client format (a "
            "PayloadS3Pointer body), in bytes: its size is read with HEAD first and nothing past "
            "this is ever read; a larger one goes to the dead-letter queue as payload-too-large. "
            "Each receiver holds up to batch_size of them at once. 0: pointers are not followed "
            "(bad-payload-pointer)."},
    {ROW("", "worker_max_rss", CONFIG_SIZE, C(worker_max_rss)), .lo = 1LL << 20,
     .hi = 1024LL << 30, .def = 0,
     .doc = "Resident memory (RSS) past which a worker is recycled: it stops receiving, "
            "finishes and acknowledges the jobs it holds (as a reload's old generation does, "
            "within drain_timeout), and exits, while the master starts another in its place at "
            "once. No job is counted as an attempt or dead-lettered for it. For plugins whose "
            "memory only grows (a library that leaks, a cache without a bound), instead of "
            "the out-of-memory killer, whose kill counts an attempt against every job the "
            "worker was running. Each worker reads its RSS about once a second; one already "
            "past the limit once ready is not recycled (a warning says so). 0: no limit."},
    {ROW("", "worker_max_jobs", CONFIG_INT, C(worker_max_jobs)), .lo = 0, .hi = 2147483647LL,
     .def = 0,
     .doc = "Handler runs after which a worker is recycled as worker_max_rss recycles it, "
            "each worker drawing its own count within 10% of this, so that workers started "
            "together are not recycled together. For plugins whose growth is easier to bound "
            "by jobs than by memory. 0: never."},
    {ROW("", "log", CONFIG_GROUP, C(log)), .doc = "Logging: one line per event."},
    {ROW("", "aws", CONFIG_GROUP, C(aws)),
     .doc = "Where SQS is. Credentials are never written here: see twiced(8)."},
    {ROW("", "idempotency", CONFIG_GROUP, C(idempotency)), .flags = CONFIG_REQUIRED,
     .doc = "The idempotency store in PostgreSQL: one row per job key."},
    {ROW("", "alerts", CONFIG_GROUP, C(alerts)), .doc = "Alerts on dead-lettered messages."},
    {ROW("", "metrics", CONFIG_GROUP, C(metrics)),
     .doc = "Metrics and health over HTTP (Prometheus text format)."},
    {ROW("", "tracing", CONFIG_GROUP, C(tracing)),
     .doc = "OpenTelemetry spans, one per job, exported over OTLP/HTTP with JSON encoding."},
    {ROW("", "plugins", CONFIG_LIST, C(plugins)), COUNT(struct config, nplugins),
     .entry_size = sizeof(struct config_plugin), .noun = "plugin",
     .entry_begin = config_plugin_begin, .free = config_plugin_free,
     .doc = "The plugins: a list of groups, one per plugin instance."},
    {ROW("", "queues", CONFIG_LIST, C(queues)), COUNT(struct config, nqueues),
     .entry_size = sizeof(struct config_queue), .noun = "queue", .lo = 1, .flags = CONFIG_ABSENT,
     .check = config_check_queues, .entry_begin = config_queue_begin,
     .entry_check = config_queue_check, .free = config_queue_free,
     .doc = "The queues: a list of groups, at least one."},

    {ROW("log", "level", CONFIG_ENUM, C(log.level)), .choices = levels, .noun = "level",
     .def = TWICE_LOG_INFO, .doc = "What is logged; debug logs every message received."},
    {ROW("log", "format", CONFIG_ENUM, C(log.format)), .choices = formats, .noun = "format",
     .def = LOG_FORMAT_TEXT, .doc = "text for people, json for log shippers."},
    {ROW("log", "file", CONFIG_STR, C(log.file)), .flags = CONFIG_UNSET,
     .check = config_check_log_file, .doc_default = "standard error (under systemd, the journal)",
     .doc = "Append to this file instead of standard error. A relative path is taken from the "
            "configuration file's directory. twiced does not start when it cannot open it (twiced "
            "-t checks it); a reload that cannot logs to standard error. A named pipe (a log "
            "shipper's) needs its reader running: twiced never waits for one, and neither "
            "twiced -t nor the start accept a pipe that no process reads (-t opens it for "
            "writing for a moment, writing nothing). twiced -s reopen (SIGUSR1) opens it "
            "again after "
            "logrotate moved it away (twiced(8), LOG ROTATION). When it refuses lines (a full "
            "disk), each process says so once on standard error, and counts the lost lines in "
            "it once it takes lines again. The master runs as root when user is set: it does not "
            "follow a symbolic link at this name when the file's directory is one users other "
            "than root can write (not owned by root, or group or world writable), as the "
            "workers' user could plant one there and have root append to any file; twiced -t "
            "and the start refuse such a link, naming it. A link in a directory of root's "
            "alone is followed."},

    {ROW("aws", "region", CONFIG_STR, C(aws.region)), .flags = CONFIG_UNSET,
     .check = config_check_region,
     .doc_default = "AWS_REGION, then AWS_DEFAULT_REGION, then the profile's region",
     .doc = "The AWS region of the queues: lowercase letters, digits and -, as us-east-1 or "
            "us-gov-west-1 (with an emulator's endpoint, the name it answers to, such as "
            "local). A region from the environment or the profile is held to the same rule "
            "(twiced -t names the variable, or the file and section)."},
    {ROW("aws", "endpoint", CONFIG_STR, C(aws.endpoint)), .flags = CONFIG_UNSET,
     .check = config_check_sqs_endpoint,
     .doc_default = "AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, then AWS's regional endpoint",
     .doc = "SQS endpoint URL, for an emulator or a VPC endpoint: http:// or https://, a host "
            "and an optional port (1-65535), in printable ASCII without spaces; a path but no "
            "query."},
    {ROW("aws", "s3_endpoint", CONFIG_STR, C(aws.s3_endpoint)), .flags = CONFIG_UNSET,
     .check = config_check_s3_endpoint,
     .doc_default = "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS's regional endpoint",
     .doc = "S3 endpoint URL for payloads kept in S3: http[s]://host[:port] only (no path or "
            "query), addressed path-style (ENDPOINT/bucket/key); AWS's own endpoint is "
            "addressed virtual-hosted."},
    {ROW("aws", "profile", CONFIG_STR, C(aws.profile)), .flags = CONFIG_UNSET,
     .doc_default = "AWS_PROFILE, then \"default\"",
     .doc = "Profile of the shared config and credentials files."},
    {ROW("aws", "ca_file", CONFIG_STR, C(aws.ca_file)), .flags = CONFIG_UNSET,
     .check = config_check_ca_file, .doc_default = "the system CA store",
     .doc = "CA bundle for TLS. A relative path is taken from the configuration file's "
            "directory."},

    {ROW("idempotency", "dsn", CONFIG_STR, C(idempotency.dsn)),
     .flags = CONFIG_REQUIRED | CONFIG_SECRET, .check = config_check_dsn,
     .doc = "A libpq connection string or URI. It may hold a password, so it is never logged; "
            "prefer ~/.pgpass or PGPASSWORD. Without Kerberos, gssencmode=disable saves each "
            "process the 0.6 MB that libpq's default (prefer) spends setting Kerberos up on "
            "every TCP connection. A reload may change it to reach the same database another "
            "way (another host or port of the cluster, a promoted replica, a new password or "
            "sslmode); one that reaches another database, cluster or keys table, or does not "
            "connect, is refused (the running jobs' keys stay where they are): restart twiced "
            "to move the keys. Each reload checks what the dsn reaches, also when it is written "
            "as before (a service file or a host name may have changed). A dsn that reaches a "
            "standby in recovery (read-only) is refused at a reload and at the start: point it "
            "at the primary. Unless the dsn sets them, twice connects with connect_timeout=10, "
            "keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3 and "
            "tcp_user_timeout=25000 (milliseconds): a connection to a host that has gone is "
            "ended within about 25 s, whether it is idle or a statement's bytes go "
            "unacknowledged. A server that keeps its connections open and stops answering "
            "(frozen) is not detected so: a worker gives a statement up unanswered, a "
            "receiver's claim after a third of the queue's visibility_timeout (2 to 30 s; its "
            "messages go back to the queue), the others after 30 s; twicectl and twiced -t "
            "--connect give up after connect_timeout."},
    {ROW("idempotency", "table", CONFIG_STR, C(idempotency.table)), .lo = 1,
     .hi = CONFIG_MAX_TABLE_LEN, .def_str = CONFIG_DEFAULT_TABLE, .check = config_check_table,
     .doc = "The table of keys, quoted as one identifier. twiced creates it, or migrates a "
            "classic (idempotency_key, processed_at) table in place. A reload that changes it "
            "is refused (the running jobs' keys are in the old table): restart twiced."},
    {ROW("idempotency", "retention", CONFIG_INT, C(idempotency.retention)), .lo = 60,
     .hi = CONFIG_NO_MAX, .def = 7 * 24 * 3600,
     .doc = "Seconds a completed key is kept (7 days by default); a duplicate arriving later "
            "runs again. A retried job's key (released, crashed or interrupted: it holds the "
            "runs counted so far) whose message does not come back within this time is removed "
            "too: keep it longer than the longest backoff."},
    {ROW("idempotency", "on_conflict", CONFIG_ENUM, C(idempotency.on_conflict)),
     .choices = conflicts, .noun = "value", .def = CONFIG_CONFLICT_SKIP,
     .doc = "A message whose key completed with a different body: skip deletes it as a "
            "duplicate, reject sends it to the dead-letter queue (reason payload-conflict)."},
    {ROW("idempotency", "lease_margin", CONFIG_INT, C(idempotency.lease_margin)), .lo = 0,
     .hi = 300, .def = 5, .doc = "Seconds a claim outlives the message's visibility timeout."},
    {ROW("idempotency", "janitor_interval", CONFIG_INT, C(idempotency.janitor_interval)), .lo = 1,
     .hi = CONFIG_NO_MAX, .def = 60,
     .doc = "Seconds between passes of the janitor that deletes expired keys."},
    {ROW("idempotency", "janitor_batch", CONFIG_INT, C(idempotency.janitor_batch)), .lo = 1,
     .hi = 100000, .def = 1000,
     .doc = "Rows the janitor deletes per statement; smaller batches hold locks for less time."},

    {ROW("alerts", "dlq_check_interval", CONFIG_INT, C(alerts.dlq_check_interval)), .lo = 1,
     .hi = CONFIG_NO_MAX, .def = 60, .doc = "Seconds between checks of the dead-letter queues."},
    {ROW("alerts", "repeat_after", CONFIG_INT, C(alerts.repeat_after)), .lo = 0,
     .hi = CONFIG_NO_MAX, .def = 3600,
     .doc = "Seconds before a dead-letter queue that still holds messages is announced again; "
            "0 turns repeats off."},
    {ROW("alerts", "webhook", CONFIG_GROUP, C(alerts.webhook)), .doc_default = "no webhook",
     .doc = "POST each notice as JSON to an HTTP endpoint."},
    {ROW("alerts", "smtp", CONFIG_GROUP, C(alerts.smtp)), .doc_default = "no email",
     .doc = "Mail each notice as plain text; the first line is the subject."},

    {ROW("alerts.webhook", "url", CONFIG_STR, C(alerts.webhook.url)),
     .flags = CONFIG_REQUIRED | CONFIG_SECRET, .check = config_check_http_url,
     .doc = "Where notices go: http:// or https://, a host and an optional port (1-65535), in "
            "printable ASCII without spaces. Logs name only its scheme, host and port."},
    {ROW("alerts.webhook", "header", CONFIG_STR, C(alerts.webhook.header)),
     .flags = CONFIG_UNSET | CONFIG_SECRET, .check = config_check_header, .doc_default = "none",
     .doc = "One extra header, \"Name: value\"; a secret, never logged."},
    {ROW("alerts.webhook", "timeout", CONFIG_INT, C(alerts.webhook.timeout)), .lo = 1, .hi = 300,
     .def = 10, .doc = "Seconds for one delivery."},

    {ROW("alerts.smtp", "url", CONFIG_STR, C(alerts.smtp.url)),
     .flags = CONFIG_REQUIRED | CONFIG_SECRET, .check = config_check_smtp_url,
     .doc = "smtp:// (upgraded with STARTTLS when the server offers it) or smtps:// (TLS from "
            "the start), a host and an optional port (1-65535), in printable ASCII without "
            "spaces."},
    {ROW("alerts.smtp", "from", CONFIG_STR, C(alerts.smtp.from)), .flags = CONFIG_REQUIRED,
     .check = config_check_mail_from,
     .doc = "The sender's address, local@domain in ASCII, without a display name or <>."},
    {ROW("alerts.smtp", "to", CONFIG_STRLIST, C(alerts.smtp.to)), .flags = CONFIG_REQUIRED,
     COUNT(struct config, alerts.smtp.nto), .noun = "address", .check = config_check_mail_to,
     .doc = "The recipients: one address or a list of them, each as from (several in one "
            "string, \"a@x, b@y\", are refused)."},
    {ROW("alerts.smtp", "username", CONFIG_STR, C(alerts.smtp.username)), .flags = CONFIG_UNSET,
     .doc_default = "none", .doc = "The login's user name."},
    {ROW("alerts.smtp", "password", CONFIG_STR, C(alerts.smtp.password)),
     .flags = CONFIG_UNSET | CONFIG_SECRET, .doc_default = "none",
     .doc = "The login's password, a secret never logged. With a user name or password, an "
            "smtp:// server other than loopback must offer STARTTLS or the mail is not sent."},
    {ROW("alerts.smtp", "timeout", CONFIG_INT, C(alerts.smtp.timeout)), .lo = 1, .hi = 300,
     .def = 30, .doc = "Seconds for one mail."},

    {ROW("metrics", "listen", CONFIG_STR, C(metrics.listen)), .flags = CONFIG_UNSET,
     .check = config_check_listen, .doc_default = "\"\": no listener",
     .doc = "\"IP:port\", \"[IPv6]:port\" or \":port\" (every IPv4 interface; names are not "
            "resolved) for /metrics, /healthz and /readyz. It has no authentication: keep it on "
            "loopback or a private interface."},
    {ROW("metrics", "queue_stats_interval", CONFIG_INT, C(metrics.queue_stats_interval)), .lo = 0,
     .hi = 86400, .def = 15,
     .doc = "Seconds between readings of each queue's message counts (one GetQueueAttributes per "
            "queue, by the master) for twice_queue_messages and twice_queue_oldest_age_seconds "
            "(when nothing was received in the interval, 0 if the queue is known empty, else the "
            "last age grown); 0 turns them off. Nothing is read without a listener."},
    {ROW("metrics", "p99_interval", CONFIG_INT, C(metrics.p99_interval)), .lo = 1, .hi = 3600,
     .def = 10,
     .doc = "Seconds between the worker's readings of each queue and plugin's p99 handler "
            "duration (over its last 1024 runs, once it has 20): published as "
            "twice_handler_p99_seconds and compared with the queue's visibility_timeout, "
            "whose advice is logged at most once an hour per queue and plugin. Read whether "
            "or not there is a listener."},

    {ROW("tracing", "exporter", CONFIG_ENUM, C(tracing.exporter)), .choices = exporters,
     .noun = "exporter", .def = CONFIG_TRACING_NONE,
     .doc = "otlp makes a span per job and exports it; none (the default) makes none. Plugins "
            "still get a message's incoming traceparent."},
    {ROW("tracing", "endpoint", CONFIG_STR, C(tracing.endpoint)), .flags = CONFIG_UNSET,
     .check = config_check_http_url,
     .doc_default = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then OTEL_EXPORTER_OTLP_ENDPOINT with "
                    "/v1/traces, then http://localhost:4318/v1/traces",
     .doc = "The collector's OTLP/HTTP traces URL, used as it is: http:// or https://, a "
            "host and an optional port (1-65535), in printable ASCII without spaces."},
    {ROW("tracing", "service_name", CONFIG_STR, C(tracing.service_name)), .flags = CONFIG_UNSET,
     .doc_default = "OTEL_SERVICE_NAME, then service.name in OTEL_RESOURCE_ATTRIBUTES, then "
                    "\"twiced\"",
     .doc = "The service.name resource attribute of every span."},
    {ROW("tracing", "buffer_spans", CONFIG_INT, C(tracing.buffer_spans)), .lo = 1, .hi = 1000000,
     .def = 2048,
     .doc = "Finished spans waiting for export, at most; more are dropped and counted in "
            "twice_spans_dropped_total, so a slow collector never holds a job up."},
    {ROW("tracing", "batch_spans", CONFIG_INT, C(tracing.batch_spans)), .lo = 1, .hi = 10000,
     .def = 512, .doc = "Spans per export request."},
    {ROW("tracing", "export_interval_ms", CONFIG_INT, C(tracing.export_interval_ms)), .lo = 10,
     .hi = 600000, .def = 5000, .doc = "Milliseconds a partial batch waits before it is sent."},
    {ROW("tracing", "export_timeout", CONFIG_INT, C(tracing.export_timeout)), .lo = 1, .hi = 300,
     .def = 10,
     .doc = "Seconds for one export request; a batch that fails or times out is dropped and "
            "counted."},

    /* An entry of plugins. */
    {ROW("plugins", "name", CONFIG_STR, P(name)), .flags = CONFIG_REQUIRED | CONFIG_NAME,
     .check = config_check_plugin_name,
     .doc = "What queues and routes refer to: letters, digits, _ . and -; at most 80 bytes."},
    {ROW("plugins", "path", CONFIG_STR, P(path)), .flags = CONFIG_REQUIRED,
     .check = config_check_plugin_path,
     .doc = "A file name in plugin_dir, or an absolute path. The file and its directory must "
            "not be writable by others than root and the user twiced runs as."},
    {ROW("plugins", "settings", CONFIG_CUSTOM, P(settings)), .parse = config_parse_plugin_settings,
     .free = config_free_plugin_settings, .doc_type = "A group of strings, integers and booleans",
     .doc_default = "none",
     .doc = "The plugin's own settings, checked against what it declares (twicectl plugin "
            "check lists them): unknown ones, wrong types and missing required ones are errors."},
    {ROW("plugins", "rate_limit", CONFIG_GROUP, P(rate_per_second)), .flags = CONFIG_ABSENT,
     .check = config_check_plugin_rate,
     .doc = "A limit on the jobs this plugin starts, shared by every queue that uses it, every "
            "worker and every twiced host on the same idempotency database: "
            "{ per_second = 14; burst = 14; } for a provider that allows 14 requests a "
            "second. Jobs waiting for a token are not attempts: they stay in flight (the "
            "heartbeat keeps them) and receiving slows down to what can start. Tokens are "
            "leased from PostgreSQL (table <table>_rate_limits) a tenth of a second's worth "
            "at a time and spent from shared memory; twice_rate_limited_seconds_total{limit} "
            "counts the waiting."},
    {ROW("plugins.rate_limit", "per_second", CONFIG_INT, P(rate_per_second)), .lo = 1,
     .hi = 1000000, .def = 1, .doc_default = "none: required in rate_limit",
     .doc = "Jobs started per second, at most, over all hosts."},
    {ROW("plugins.rate_limit", "burst", CONFIG_INT, P(rate_burst)), .lo = 1, .hi = 1000000,
     .def = 1, .doc_default = "per_second",
     .doc = "How many may start at once after a quiet spell (the bucket's size)."},

    /* An entry of queues. */
    {ROW("queues", "name", CONFIG_STR, Q(name)), .flags = CONFIG_REQUIRED | CONFIG_NAME,
     .check = config_check_queue_name,
     .doc = "Short name for logs and metrics: letters, digits, _ . and -; at most 80 bytes "
            "(as an SQS queue name)."},
    {ROW("queues", "url", CONFIG_STR, Q(url)), .flags = CONFIG_REQUIRED,
     .check = config_check_queue_url,
     .doc =
         "The SQS queue URL: http:// or https://, a host and an optional port (1-65535), "
         "in printable ASCII without spaces, no query, and a path ending in the queue's name "
         "(1-80 of A-Z a-z 0-9 _ -). A URL ending in .fifo is a FIFO queue. One entry per queue: "
         "route_by sends its messages to several plugins."},
    {ROW("queues", "dlq_url", CONFIG_STR, Q(dlq_url)), .flags = CONFIG_REQUIRED,
     .check = config_check_queue_dlq_url,
     .doc = "Where rejected and exhausted messages go, with the reason as message attributes: "
            "a queue URL as url. A FIFO queue needs a FIFO dead-letter queue. Not the queue's "
            "own url, nor one whose dead letters come back here through other entries; an "
            "entry that polls another's dead-letter queue (a redrive handler) gets a warning "
            "from twiced -t and at the start."},
    {ROW("queues", "plugin", CONFIG_STR, Q(plugin)), .check = config_check_queue_plugin,
     .doc_default = "none: route_by and routes instead",
     .doc = "The plugin that handles every message of the queue."},
    {ROW("queues", "route_by", CONFIG_STR, Q(route_by)), .check = config_check_route_by,
     .doc_default = "none: plugin instead",
     .doc = "Pick the plugin per message by a JSON body path (\"type\", \"meta.kind\") or a "
            "message attribute (\"attr:Type\": a name SQS takes, 1-256 of A-Z a-z 0-9 _ - "
            "., no leading, trailing or doubled period, not starting with AWS. or Amazon.)."},
    {ROW("queues", "routes", CONFIG_LIST, Q(routes)), COUNT(struct config_queue, nroutes),
     .entry_size = sizeof(struct config_route), .noun = "route", .lo = 1,
     .check = config_check_routes, .entry_begin = config_route_begin,
     .doc = "With route_by: a list of { value = \"v\"; plugin = \"p\"; }, at least one."},
    {ROW("queues", "key", CONFIG_STR, Q(key)), .check = config_check_queue_key,
     .doc_default = "the plugin's key template",
     .doc = "The key template of this queue's messages, overriding the plugin's (whatever "
            "route they take): \"invoice:{detail.invoiceId}\". Fields as in twice-plugin(3): "
            "{a.b} a JSON body path, {attr:Name} a message attribute, {msg:group} the "
            "message group id, {msg:NAME} a field of the envelope; twicectl key derive shows "
            "the key a message gets."},
    {ROW("queues", "envelope", CONFIG_ENUM, Q(envelope)), .choices = envelopes, .noun = "envelope",
     .def = CONFIG_ENVELOPE_NONE,
     .doc = "What wraps the jobs of this queue. sns: an SNS notification (a subscription "
            "without raw message delivery): the job is its Message, its MessageAttributes are "
            "message attributes, and key templates may use {msg:sns_message_id}, {msg:topic} "
            "and {msg:subject}. eventbridge: an EventBridge event: the job is its detail, with "
            "{msg:detail_type}, {msg:source} and {msg:event_id}. auto: either, recognised by "
            "their fields (Type Notification, TopicArn and Message; detail-type, source and "
            "detail), and any other body as it is. A message that does not match goes to "
            "the dead-letter queue as bad-envelope; the dead-letter queue always gets the "
            "original body."},
    {ROW("queues", "delete_payload", CONFIG_BOOL, Q(delete_payload)), .def = 0,
     .doc = "Delete a payload kept in S3 (the object a PayloadS3Pointer body names) once its "
            "job is done and its message deleted, or its message deleted as a duplicate. Needs "
            "payload_bucket (pointers to other buckets are then refused), so that a message "
            "cannot make twice delete an object elsewhere. A "
            "late redelivery of that message then goes to the dead-letter queue as "
            "payload-missing. Not for payloads that several queues share (an SNS topic "
            "fanning one pointer out): the first queue done would delete it for all."},
    {ROW("queues", "payload_bucket", CONFIG_STR, Q(payload_bucket)), .flags = CONFIG_UNSET,
     .doc = "The S3 bucket of this queue's payloads: twicectl send puts bodies larger than "
            "max_message_bytes there, sending a PayloadS3Pointer instead (as the Extended Client "
            "libraries do), and a pointer to any other bucket goes to the dead-letter queue as "
            "payload-denied without being read. Not set: a pointer may name any bucket the "
            "credentials can read."},
    {ROW("queues", "concurrency", CONFIG_INT, Q(concurrency)), .lo = 1, .hi = 1024, .def = 8,
     .doc = "Handler threads per worker process; every queue's together at most 1024 (each "
            "worker runs every queue)."},
    {ROW("queues", "max_inflight", CONFIG_INT, Q(max_inflight)), .lo = 1, .hi = 8192, .def = 8,
     .flags = CONFIG_ABSENT, .check = config_check_max_inflight, .doc_default = "concurrency",
     .doc = "The most messages a worker process holds at once: received and not yet deleted, "
            "given back or dead-lettered. Above concurrency, the extra messages wait for a "
            "handler thread (kept hidden by the heartbeat) or for the acknowledger, so that "
            "receives and claims stay full when handlers are fast. At least concurrency."},
    {ROW("queues", "receivers", CONFIG_INT, Q(receivers)), .lo = 1, .hi = 64, .def = 1,
     .doc = "Receive loops per worker process. More of them keep a busy queue fed while claims "
            "commit (about one per 10-20 of max_inflight)."},
    {ROW("queues", "batch_size", CONFIG_INT, Q(batch_size)), .lo = 1, .hi = SQS_RECEIVE_MAX,
     .def = SQS_RECEIVE_MAX, .doc = "Messages per receive."},
    {ROW("queues", "receives_per_claim", CONFIG_INT, Q(receives_per_claim)), .lo = 1,
     .hi = RECEIVES_PER_CLAIM_MAX, .def = 1,
     .doc = "Receives gathered into one claim: after a receive that filled its slots, a "
            "receiver asks again at once (without a long poll) while slots are free, and "
            "claims what it got in one statement. Fewer, larger claims cost PostgreSQL less "
            "per message; each receive gathered delays the first batch by one SQS round "
            "trip. Pair it with max_inflight. 1 on FIFO queues."},
    {ROW("queues", "wait_time", CONFIG_INT, Q(wait_time)), .lo = 0, .hi = SQS_WAIT_TIME_MAX,
     .def = SQS_WAIT_TIME_MAX,
     .doc = "Long-poll seconds. 0 makes short polls, which SQS answers at once; a receiver "
            "whose short poll got nothing waits 1 s before the next (SQS bills each one)."},
    {ROW("queues", "visibility_timeout", CONFIG_INT, Q(visibility_timeout)), .lo = 1,
     .hi = SQS_VISIBILITY_MAX, .def = 30,
     .doc = "Seconds. A job running longer is kept hidden by a heartbeat, which extends the "
            "visibility and the key's lease at half this (earlier under 5 s, so that the "
            "extension lands before the message is visible again; under 4 s it looks every "
            "quarter of it, 0.25 s at the least); the key's lease lasts this plus lease_margin."},
    {ROW("queues", "max_attempts", CONFIG_INT, Q(max_attempts)), .lo = 1, .hi = 1000, .def = 5,
     .doc = "Handler runs before the dead-letter queue (max-attempts; worker-crashed when the "
            "last run crashed its worker). An attempt is a run, counted with the key in "
            "PostgreSQL when it ends: deliveries twice causes itself (a duplicate hidden behind "
            "a live lease, messages a reload or drain gives back, a claim that failed because "
            "the database was down) are not attempts; a run that crashed its worker counts, "
            "the jobs it took down with it do not."},
    {ROW("queues", "max_receives", CONFIG_INT, Q(max_receives)), .lo = 1, .hi = 1000000, .def = 50,
     .flags = CONFIG_ABSENT, .check = config_check_max_receives,
     .doc_default = "10 * max_attempts",
     .doc = "The backstop for a message that can never finish, such as one whose host dies "
            "each time it runs (no run is ever recorded): received more times than this (SQS's "
            "ApproximateReceiveCount) without finishing, it goes to the dead-letter queue as "
            "max-receives. At least max_attempts."},
    {ROW("queues", "backoff", CONFIG_GROUP, Q(backoff_base)), .check = config_check_backoff,
     .doc = "The delay of a RETRY, unless the plugin asks for one (retry_after): full jitter "
            "with a 1 s floor, a whole number of seconds drawn uniformly from 0 to min(cap, "
            "base * 2^(attempt-1)), then raised to at least 1. A duplicate that meets another "
            "job's live lease is hidden for 2^(receives-1) seconds instead (1 on its first "
            "delivery, doubling with each), never past the end of that lease plus 2 seconds. "
            "A message whose own data fails its claim waits the RETRY backoff, its receives "
            "counted as attempts."},
    {ROW("queues.backoff", "base", CONFIG_INT, Q(backoff_base)), .lo = 0, .hi = CONFIG_NO_MAX,
     .def = 2, .doc = "Seconds."},
    {ROW("queues.backoff", "cap", CONFIG_INT, Q(backoff_cap)), .lo = 0, .hi = CONFIG_NO_MAX,
     .def = 300, .doc = "Seconds, at least base."},
    {ROW("queues", "rate_limit", CONFIG_GROUP, Q(rate_per_second)), .flags = CONFIG_ABSENT,
     .check = config_check_queue_rate,
     .doc = "A limit on the jobs this queue starts, as a plugin's rate_limit: "
            "{ per_second = 20; burst = 5; }. When both are set, both apply: a job takes a "
            "token of each at the same moment, when both have one, and holds neither while it "
            "waits for the other, so no token is spent on a job that has not started and the "
            "jobs that wait for the scarcer limit do not use up the other's: the queue's jobs "
            "start at most at its rate, those of the plugin at most at the plugin's."},
    {ROW("queues.rate_limit", "per_second", CONFIG_INT, Q(rate_per_second)), .lo = 1,
     .hi = 1000000, .def = 1, .doc_default = "none: required in rate_limit",
     .doc = "Jobs started per second, at most, over all hosts."},
    {ROW("queues.rate_limit", "burst", CONFIG_INT, Q(rate_burst)), .lo = 1, .hi = 1000000,
     .def = 1, .doc_default = "per_second",
     .doc = "How many may start at once after a quiet spell (the bucket's size)."},
    {ROW("queues", "timeout", CONFIG_INT, Q(timeout)), .lo = 0, .hi = 43200, .def = 0,
     .doc_default = "0: none",
     .doc = "Seconds a handler run may take. A run past it is logged with its key and plugin and "
            "counts as a failed attempt: its key is released and the message retried after the "
            "backoff (at least timeout_grace + 2 s), or dead-lettered as timeout when it was the "
            "last attempt. It is a transient failure for the queue's breaker: while the breaker "
            "is open it is given back without counting an attempt. The heartbeat stops extending "
            "it. A thread cannot be stopped safely, so a "
            "handler still running timeout_grace seconds later has its worker replaced: a new "
            "worker starts at once and the old one drains (its other jobs finish or are given "
            "back, not counted). A transactional handler is not cut short at timeout, its "
            "transaction holds its key: its worker is replaced after the grace, and that run "
            "counts as one that crashed its worker."},
    {ROW("queues", "timeout_grace", CONFIG_INT, Q(timeout_grace)), .lo = 0, .hi = 3600, .def = 10,
     .doc = "Seconds a handler may still run past timeout before its worker is replaced."},
    {ROW("queues", "ack_tries", CONFIG_INT, Q(ack_tries)), .lo = 2, .hi = 30, .def = 8,
     .doc = "Tries of each step that acknowledges a finished job (its dead letter, its key's "
            "completion or release, its delete or visibility change) before the worker gives it "
            "up and leaves the message to come back after its visibility timeout, where its "
            "key's state decides what happens to it. The tries are 1, 2, 3, then 4 s apart: the "
            "default spans about 22 s of an SQS or PostgreSQL outage. A finished job whose "
            "completion cannot be written because PostgreSQL is unreachable is tried for as long "
            "as the worker runs, whatever this says."},

    {ROW("queues", "breaker", CONFIG_GROUP, Q(breaker_failures)),
     .doc = "A circuit breaker (off unless this group is given): when `failures` transient "
            "failures (RETRY, the plugin saying its downstream is unavailable, or a run past the "
            "queue's timeout) happen within "
            "`window` seconds on one host, the queue is paused on every host (reason breaker) "
            "for `cooldown` seconds; jobs received but not started are given back uncounted, "
            "and a RETRY or a run past the timeout while it is open is given back without "
            "counting an attempt, so an "
            "outage sends nothing to the dead-letter queue. After the cooldown `probes` jobs "
            "run: a success resumes the queue, a failure opens it again for twice the cooldown, "
            "at most `cooldown_max` seconds. A host without this group still pauses when another "
            "host's breaker opens the queue, and may run the probe (one job)."},
    {ROW("queues.breaker", "failures", CONFIG_INT, Q(breaker_failures)), .lo = 0, .hi = 1000000,
     .def = 0, .flags = CONFIG_REQUIRED, .check = config_check_breaker,
     .doc = "Transient failures that open the breaker, at least 1; required in the group."},
    {ROW("queues.breaker", "window", CONFIG_INT, Q(breaker_window)), .lo = 1, .hi = 86400,
     .def = 30, .doc = "Seconds over which the failures are counted."},
    {ROW("queues.breaker", "cooldown", CONFIG_INT, Q(breaker_cooldown)), .lo = 1, .hi = 43200,
     .def = 60, .doc = "Seconds the breaker stays open before a probe."},
    {ROW("queues.breaker", "cooldown_max", CONFIG_INT, Q(breaker_cap)), .lo = 1, .hi = 43200,
     .def = 600,
     .doc = "The longest cooldown, seconds (never below cooldown): after failed probes, and "
            "when a downstream's Retry-After asks for a longer one than cooldown (the cap "
            "wins; a probe then finds out whether it is back)."},
    {ROW("queues.breaker", "probes", CONFIG_INT, Q(breaker_probes)), .lo = 1, .hi = 100, .def = 1,
     .doc = "Jobs run as probes after a cooldown; the first outcome decides."},

    /* An entry of a queue's routes. */
    {ROW("queues.routes", "value", CONFIG_STR, R(value)), .flags = CONFIG_REQUIRED,
     .check = config_check_route_value, .doc = "A value of route_by."},
    {ROW("queues.routes", "plugin", CONFIG_STR, R(plugin)), .flags = CONFIG_REQUIRED,
     .check = config_check_route_plugin, .doc = "The plugin of the messages with that value."},

    {.name = NULL},
};

/*
 * Adding a setting (these rows are the only list of settings there is):
 *   1. Its field in config.h: in struct config, or struct config_queue for a
 *      per-queue setting (config_plugin, config_route); an int or a long for
 *      an integer, a long for an amount of memory (CONFIG_SIZE: "512M"), an
 *      int for a choice, a char * for a string (the table frees it; nothing
 *      to add to config_free).
 *   2. Its row above, in its group, where twice.conf(5) should list it:
 *        {ROW("queues", "wait_time", CONFIG_INT, Q(wait_time)), .lo = 0, .hi = 20,
 *         .def = 20, .doc = "Long-poll seconds."},
 *      A string: CONFIG_STR with .def_str (or none), .flags CONFIG_UNSET when
 *      "" means not set, CONFIG_SECRET for a password or a token,
 *      CONFIG_REQUIRED. A choice: CONFIG_ENUM, .choices and .noun. A new group:
 *      a CONFIG_GROUP row, then rows whose group is its path. What a type and
 *      a range cannot say: a config_check_fn in config_check.c (declared in
 *      config_check.h, reporting with config_problem), named in .check.
 *   3. Its description, range and default in etc/twice.conf, set or commented
 *      out ("#name = value;") inside its group: ctest unit/test-config-docs
 *      fails until the table, etc/twice.conf and twice.conf(5) name the same
 *      settings. twice.conf(5) needs nothing: the build writes its entry
 *      from the row (doc, type, range, default).
 *   4. A test of what it does; test-config.c for a check of its own.
 */

const char *
config_row_path(const struct config_row *r, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", r->group, r->group[0] ? "." : "", r->name);
    return out;
}

const struct config_row *
config_row_find(const char *path)
{
    char p[128];
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        if (strcmp(config_row_path(r, p, sizeof(p)), path) == 0) {
            return r;
        }
    }
    return NULL;
}
