/*
 * test-config.c - config_load on full, minimal and broken configurations:
 * every field, every default and the exact FILE:LINE of each message.
 * Not for plugin settings against a plugin's declaration (the loader's job).
 */
#include "check.h"
#include "config.h"
#include "idem.h"
#include "mailaddr.h"
#include "regionname.h"
#include "sqsname.h"
#include "url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];  /* holds the configurations and plugins/ */
static char plugdir[300]; /* tmpdir/plugins, with empty .so files */

static const char *const fake_plugins[] = {"welcome_email.so", "match_recompute.so", "sync.so",
                                           "a.so", NULL};

static char *
path_in(const char *dir, const char *name)
{
    static char p[4][512];
    static int next;
    char *out = p[next++ % 4];
    snprintf(out, sizeof(p[0]), "%s/%s", dir, name);
    return out;
}

static void
write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (fp != NULL) {
        fputs(text, fp);
        fclose(fp);
    }
}

/* A whole file from the source tree, or NULL. Caller frees. */
static char *
read_source(const char *rel)
{
    const char *src = getenv("TWICE_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src != NULL ? src : "../..", rel);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *text = calloc(1, 1 << 20);
    size_t n = text != NULL ? fread(text, 1, (1 << 20) - 1, fp) : 0;
    (void) n;
    fclose(fp);
    return text;
}

static void
setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/twice-test-config-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(plugdir, sizeof(plugdir), "%s/plugins", tmpdir);
    mkdir(plugdir, 0700);
    for (const char *const *p = fake_plugins; *p != NULL; p++) {
        write_file(path_in(plugdir, *p), "");
    }
}

static void
teardown(void)
{
    static const char *const confs[] = {
        "t.conf",     "full.conf", "syntax.conf", "include-main.conf", "include-queues.inc",
        "twice.conf", "old.conf",  NULL};
    for (const char *const *p = fake_plugins; *p != NULL; p++) {
        unlink(path_in(plugdir, *p));
    }
    for (const char *const *p = confs; *p != NULL; p++) {
        unlink(path_in(tmpdir, *p));
    }
    rmdir(plugdir);
    rmdir(tmpdir);
}

/* The 1-based line of the first occurrence of marker in text. */
static int
line_of(const char *text, const char *marker)
{
    const char *at = strstr(text, marker);
    int line = 1;
    if (at == NULL) {
        fprintf(stderr, "marker not found: %s\n", marker);
        return -1;
    }
    for (const char *p = text; p < at; p++) {
        line += *p == '\n';
    }
    return line;
}

/* Whether d holds exactly the line "file:line: msg". Prints d if not. */
static int
has(const struct diag *d, const char *file, int line, const char *msg)
{
    char want[1024];
    snprintf(want, sizeof(want), "%s:%d: %s", file, line, msg);
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->lines[i], want) == 0) {
            return 1;
        }
    }
    fprintf(stderr, "missing: %s\nhave:\n", want);
    for (size_t i = 0; i < d->n; i++) {
        fprintf(stderr, "  %s\n", d->lines[i]);
    }
    return 0;
}

static int
has_bare(const struct diag *d, const char *msg)
{
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->lines[i], msg) == 0) {
            return 1;
        }
    }
    fprintf(stderr, "missing: %s\n", msg);
    return 0;
}

/* Load text as tmpdir/t.conf; from the file when from_file, else as text. */
static int
load(const char *text, int from_file, struct config **c, struct diag *d)
{
    const char *file = path_in(tmpdir, "t.conf");
    write_file(file, text);
    return config_load(file, from_file ? NULL : text, c, d);
}

/* The smallest valid configuration around one queue's extra lines. */
#define MINIMAL_HEAD                                                                              \
    "idempotency = { dsn = \"dbname=twice\"; };\n"                                                \
    "plugin_dir = \"plugins\";\n"                                                                 \
    "plugins = ( { name = \"welcome-email\"; path = \"welcome_email.so\"; } );\n"

static void
check_full(const struct config *c, const char *file)
{
    CHECK_STR(c->file, file);
    CHECK_INT(c->workers, 4);
    CHECK_STR(c->plugin_dir, plugdir);
    CHECK_INT(c->drain_timeout, 45);
    CHECK_STR(c->user, "twice");
    CHECK_INT(c->max_message_bytes, 262144);
    CHECK_INT(c->log.level, TWICE_LOG_DEBUG);
    CHECK_INT(c->log.format, LOG_FORMAT_JSON);
    CHECK_STR(c->log.file, "/var/log/twice/twice.log");
    CHECK_STR(c->aws.region, "eu-west-1");
    CHECK_STR(c->aws.endpoint, "http://127.0.0.1:4566");
    CHECK_STR(c->aws.profile, "ops");
    CHECK_STR(c->aws.ca_file, "/etc/ssl/ca.pem");
    CHECK_STR(c->idempotency.dsn, "host=db.example.com dbname=twice password=hunter2");
    CHECK_STR(c->idempotency.table, "Job Keys");
    CHECK_INT(c->idempotency.retention, 86400);
    CHECK_INT(c->idempotency.on_conflict, CONFIG_CONFLICT_REJECT);
    CHECK_INT(c->idempotency.lease_margin, 10);
    CHECK_INT(c->idempotency.janitor_interval, 30);
    CHECK_INT(c->idempotency.janitor_batch, 500);
    CHECK_INT(c->alerts.dlq_check_interval, 15);
    CHECK_INT(c->alerts.repeat_after, 0);
    CHECK_STR(c->alerts.webhook.url, "https://hooks.example.com/T000/B000");
    CHECK_STR(c->alerts.webhook.header, "Authorization: Bearer s3cret");
    CHECK_INT(c->alerts.webhook.timeout, 5);
    CHECK_STR(c->alerts.smtp.url, "smtp://127.0.0.1:2525");
    CHECK_STR(c->alerts.smtp.from, "twice@example.com");
    CHECK_INT(c->alerts.smtp.nto, 2);
    if (c->alerts.smtp.nto == 2) {
        CHECK_STR(c->alerts.smtp.to[0], "ops@example.com");
        CHECK_STR(c->alerts.smtp.to[1], "oncall@example.com");
    }
    CHECK_STR(c->alerts.smtp.username, "mailer");
    CHECK_STR(c->alerts.smtp.password, "p4ssw0rd");
    CHECK_INT(c->alerts.smtp.timeout, 20);
    CHECK_STR(c->metrics.listen, "[::1]:9464");
    CHECK_INT(c->metrics.queue_stats_interval, 5);
    CHECK_INT(c->tracing.exporter, CONFIG_TRACING_OTLP);
    CHECK_STR(c->tracing.endpoint, "https://otel.example.com:4318/v1/traces");
    CHECK_STR(c->tracing.service_name, "jobs-worker");
    CHECK_INT(c->tracing.buffer_spans, 100);
    CHECK_INT(c->tracing.batch_spans, 50);
    CHECK_INT(c->tracing.export_interval_ms, 250);
    CHECK_INT(c->tracing.export_timeout, 3);
}

static void
check_full_plugins(const struct config *c, const char *text)
{
    CHECK_INT(c->nplugins, 3);
    if (c->nplugins != 3) {
        return;
    }
    const struct config_plugin *p = &c->plugins[0];
    CHECK_STR(p->name, "welcome-email");
    CHECK_STR(p->path, path_in(plugdir, "welcome_email.so"));
    CHECK_INT(p->line, line_of(text, "    {\n        name = \"welcome-email\""));
    CHECK_INT(p->settings_line, line_of(text, "settings = {\n            from"));
    CHECK_INT(p->nsettings, 4);
    if (p->nsettings == 4) {
        static const char *const names[] = {"from", "retries", "big", "dry_run"};
        static const char *const values[] = {"welcome@example.com", "3", "5000000000", "true"};
        static const int types[] = {TWICE_SETTING_STRING, TWICE_SETTING_INT, TWICE_SETTING_INT,
                                    TWICE_SETTING_BOOL};
        for (int i = 0; i < 4; i++) {
            CHECK_STR(p->settings[i].name, names[i]);
            CHECK_STR(p->settings[i].value, values[i]);
            CHECK_INT(p->settings[i].type, types[i]);
        }
        CHECK_INT(p->settings[2].line, line_of(text, "big = "));
    }
    CHECK_STR(c->plugins[1].path, path_in(plugdir, "match_recompute.so"));
    CHECK_INT(c->plugins[1].nsettings, 0);
    CHECK_INT(c->plugins[1].settings_line, c->plugins[1].line);
    CHECK_INT(c->plugins[2].nsettings, 0);
    CHECK(config_find_plugin(c, "sync") == &c->plugins[2]);
    CHECK(config_find_plugin(c, "nope") == NULL);
}

static void
check_full_queues(const struct config *c, const char *text)
{
    CHECK_INT(c->nqueues, 3);
    if (c->nqueues != 3) {
        return;
    }
    const struct config_queue *q = &c->queues[0];
    CHECK_STR(q->name, "welcome");
    CHECK_STR(q->url, "https://sqs.eu-west-1.amazonaws.com/123456789012/welcome");
    CHECK_STR(q->dlq_url, "https://sqs.eu-west-1.amazonaws.com/123456789012/welcome-dlq");
    CHECK_STR(q->plugin, "welcome-email");
    CHECK(q->route_by == NULL && q->nroutes == 0);
    CHECK_INT(q->concurrency, 16);
    CHECK_INT(q->max_inflight, 48);
    CHECK_INT(q->receives_per_claim, 3);
    CHECK_INT(q->batch_size, 5);
    CHECK_INT(q->wait_time, 0);
    CHECK_INT(q->visibility_timeout, 60);
    CHECK_INT(q->max_attempts, 3);
    CHECK_INT(q->max_receives, 40);
    CHECK_INT(q->backoff_base, 1);
    CHECK_INT(q->backoff_cap, 60);
    CHECK_INT(q->fifo, 0);
    CHECK_INT(q->line, line_of(text, "    {\n        name = \"welcome\""));
    q = &c->queues[1];
    CHECK(q->plugin == NULL);
    CHECK_STR(q->route_by, "attr:Type");
    CHECK_INT(q->nroutes, 2);
    if (q->nroutes == 2) {
        CHECK_STR(q->routes[0].value, "candidate.created");
        CHECK_STR(q->routes[0].plugin, "welcome-email");
        CHECK_STR(q->routes[1].value, "match.updated");
        CHECK_STR(q->routes[1].plugin, "match-recompute");
        CHECK_INT(q->routes[1].line, line_of(text, "{ value = \"match.updated\""));
    }
    CHECK_INT(q->concurrency, 8); /* the queue defaults, next to a queue that sets them */
    CHECK_INT(q->max_inflight, 8);
    CHECK_INT(q->receives_per_claim, 1);
    CHECK_INT(c->queues[2].fifo, 1);
    CHECK(config_find_queue(c, "sync.fifo") == &c->queues[2]);
    CHECK(config_find_queue(c, "sync") == NULL);
}

/* Every field of full.conf, read from the file and from its text. */
static void
test_full(void)
{
    char *text = read_source("tests/unit/data/config/full.conf");
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    const char *file = path_in(tmpdir, "full.conf");
    write_file(file, text);
    for (int from_text = 0; from_text <= 1; from_text++) {
        struct diag d = DIAG_INIT;
        struct config *c = NULL;
        CHECK_INT(config_load(file, from_text ? text : NULL, &c, &d), 0);
        CHECK_INT(d.n, 0);
        for (size_t i = 0; i < d.n; i++) {
            fprintf(stderr, "  %s\n", d.lines[i]);
        }
        if (c != NULL) {
            check_full(c, file);
            check_full_plugins(c, text);
            check_full_queues(c, text);
        }
        config_free(c);
        diag_free(&d);
    }
    free(text);
}

static void
test_defaults(void)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "idempotency = { dsn = \"dbname=twice\"; };\n"
             "plugins = ( { name = \"a\"; path = \"%s/a.so\"; } );\n"
             "queues = ( { name = \"q\"; url = \"http://127.0.0.1:9/0/q\";\n"
             "  dlq_url = \"http://127.0.0.1:9/0/q-dlq\"; plugin = \"a\"; } );\n",
             plugdir);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(load(text, 0, &c, &d), 0);
    CHECK_INT(d.n, 0);
    if (c == NULL) {
        diag_free(&d);
        return;
    }
    CHECK_INT(c->workers, 2);
    CHECK_STR(c->plugin_dir, TWICE_DEFAULT_PLUGIN_DIR);
    CHECK_INT(c->drain_timeout, 30);
    CHECK(c->user == NULL);
    CHECK_INT(c->max_message_bytes, 1048576);
    CHECK_INT(c->log.level, TWICE_LOG_INFO);
    CHECK_INT(c->log.format, LOG_FORMAT_TEXT);
    CHECK(c->log.file == NULL);
    CHECK(c->aws.region == NULL && c->aws.endpoint == NULL);
    CHECK(c->aws.profile == NULL && c->aws.ca_file == NULL);
    CHECK_STR(c->idempotency.table, "twice_idempotency");
    CHECK_INT(c->idempotency.retention, 604800);
    CHECK_INT(c->idempotency.on_conflict, CONFIG_CONFLICT_SKIP);
    CHECK_INT(c->idempotency.lease_margin, 5);
    CHECK_INT(c->idempotency.janitor_interval, 60);
    CHECK_INT(c->idempotency.janitor_batch, 1000);
    CHECK_INT(c->alerts.dlq_check_interval, 60);
    CHECK_INT(c->alerts.repeat_after, 3600);
    CHECK(c->alerts.webhook.url == NULL && c->alerts.webhook.header == NULL);
    CHECK_INT(c->alerts.webhook.timeout, 10);
    CHECK(c->alerts.smtp.url == NULL && c->alerts.smtp.nto == 0);
    CHECK_INT(c->alerts.smtp.timeout, 30);
    CHECK(c->metrics.listen == NULL);
    CHECK_INT(c->metrics.queue_stats_interval, 15);
    CHECK_INT(c->metrics.p99_interval, 10);
    CHECK_INT(c->tracing.exporter, CONFIG_TRACING_NONE); /* off unless asked for */
    CHECK(c->tracing.endpoint == NULL && c->tracing.service_name == NULL);
    CHECK_INT(c->tracing.buffer_spans, 2048);
    CHECK_INT(c->tracing.batch_spans, 512);
    CHECK_INT(c->tracing.export_interval_ms, 5000);
    CHECK_INT(c->tracing.export_timeout, 10);
    CHECK_STR(c->plugins[0].path, path_in(plugdir, "a.so")); /* absolute: kept */
    const struct config_queue *q = &c->queues[0];
    CHECK_INT(q->concurrency, 8);
    CHECK_INT(q->max_inflight, 8); /* concurrency's */
    CHECK_INT(q->receives_per_claim, 1);
    CHECK_INT(q->batch_size, 10);
    CHECK_INT(q->wait_time, 20);
    CHECK_INT(q->visibility_timeout, 30);
    CHECK_INT(q->max_attempts, 5);
    CHECK_INT(q->max_receives, 50);
    CHECK_INT(q->backoff_base, 2);
    CHECK_INT(q->backoff_cap, 300);
    CHECK_INT(q->timeout, 0); /* no time limit */
    CHECK_INT(q->timeout_grace, 10);
    CHECK_INT(q->ack_tries, 8);
    CHECK_INT(q->rate_per_second, 0); /* no rate limits */
    CHECK_INT(c->plugins[0].rate_per_second, 0);
    config_free(c);
    diag_free(&d);
}

/* rate_limit: burst defaults to per_second; both as given otherwise. */
static void
test_rate_limits(void)
{
    char text[1024];
    snprintf(text, sizeof(text),
             "idempotency = { dsn = \"dbname=twice\"; };\n"
             "plugins = ( { name = \"a\"; path = \"%s/a.so\";\n"
             "  rate_limit = { per_second = 14; }; } );\n"
             "queues = ( { name = \"q\"; url = \"http://127.0.0.1:9/0/q\";\n"
             "  dlq_url = \"http://127.0.0.1:9/0/q-dlq\"; plugin = \"a\";\n"
             "  rate_limit = { per_second = 20; burst = 5; }; timeout = 5; } );\n",
             plugdir);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(load(text, 0, &c, &d), 0);
    CHECK_INT(d.n, 0);
    if (c != NULL) {
        CHECK_INT(c->plugins[0].rate_per_second, 14);
        CHECK_INT(c->plugins[0].rate_burst, 14);
        CHECK_INT(c->queues[0].rate_per_second, 20);
        CHECK_INT(c->queues[0].rate_burst, 5);
        CHECK_INT(c->queues[0].timeout, 5);
    }
    config_free(c);
    diag_free(&d);
}

/* One configuration with many problems: every one is reported, each at
 * its own line, none quoting a secret, the same from the file and text. */
static const char errors_text[] =
    "workers = \"4\";\n"
    "drain_timeout = 4000;\n"
    "frobnicate = 1;\n"
    "plugin_dir = \"plugins\";\n"
    "log = { levle = \"debug\";\n"
    "  format = \"xml\"; };\n"
    "idempotency = { dsn = \"host=x password=hunter2\";\n"
    "  table = \"\";\n"
    "  on_conflict = \"drop\";\n"
    "  retention = 59; };\n"
    "alerts = {\n"
    "  webhook = { header = \"s3cret-without-colon\"; };\n"
    "  smtp = { url = \"http://mail\";\n"
    "    password = 5; };\n"
    "};\n"
    "metrics = { listen = \"127.0.0.1\"; };\n"
    "plugins = (\n"
    "  { name = \"welcome-email\"; path = \"welcome_email.so\";\n"
    "    settings = { ratio = 0.5;\n"
    "      nested = { a = 1; }; }; },\n"
    "  { name = \"welcome-email\"; path = \"missing.so\"; },\n"
    "  { name = \"x\"; }\n"
    ");\n"
    "queues = (\n"
    "  { name = \"jobs\"; dlq_url = \"http://h/0/jobs-dlq\";\n"
    "    plugin = \"welcom-email\";\n"
    "    visiblity_timeout = 30;\n"
    "    batch_size = 11; },\n"
    "  { name = \"jobs\"; url = \"http://h/0/j2\"; dlq_url = \"http://h/0/j2-dlq\";\n"
    "    plugin = \"welcome-email\"; },\n"
    "  { name = \"again\"; url = \"http://h/0/j2\"; dlq_url = \"http://h/0/j2-dlq\";\n"
    "    plugin = \"welcome-email\"; },\n"
    "  { name = \"f\"; url = \"https://h/0/f.fifo\";\n"
    "    dlq_url = \"https://h/0/f-dlq\"; plugin = \"welcome-email\";\n"
    "    backoff = { base = 10; cap = 5; }; },\n"
    "  { name = \"r\"; url = \"http://h/0/r\"; dlq_url = \"http://h/0/r-dlq\";\n"
    "    plugin = \"welcome-email\"; route_by = \"type\";\n"
    "    routes = ( { value = \"a\"; plugin = \"nope\"; } ); },\n"
    "  { name = \"bad name\";\n"
    "    url = \"ftp://h/0/x\"; dlq_url = \"http://h/0/x-dlq\"; }\n"
    ");\n";

struct want {
    const char *marker; /* the line is where this text first appears */
    const char *msg;
};

static const struct want errors_want[] = {
    {"workers =", "workers: expected an integer, got a string"},
    {"drain_timeout", "drain_timeout: 4000 is out of range (0-3600)"},
    {"frobnicate", "unknown setting 'frobnicate'"},
    {"levle", "unknown setting 'levle' in log (did you mean 'level'?)"},
    {"\"xml\"", "log.format: unknown format 'xml' (use text or json)"},
    {"table = \"\"", "idempotency.table: must be 1-51 bytes long (twice's index names add "
                     "up to 12 bytes, within PostgreSQL's 63)"},
    {"\"drop\"", "idempotency.on_conflict: unknown value 'drop' (use skip or reject)"},
    {"retention", "idempotency.retention: 59 is out of range (60-2147483647)"},
    {"webhook", "alerts.webhook: missing required setting 'url'"},
    {"webhook", "alerts.webhook.header: must read 'Name: value' on one line"},
    {"smtp =", "alerts.smtp.url: must start with smtp:// or smtps://"},
    {"smtp =", "alerts.smtp: missing required setting 'from'"},
    {"smtp =", "alerts.smtp: missing required setting 'to'"},
    {"password = 5", "alerts.smtp.password: expected a string, got an integer"},
    {"listen",
     "metrics.listen: must be \"IP:port\", \"[IPv6]:port\" or \":port\" with a port of 1-65535, "
     "or \"\" to disable"},
    {"ratio", "plugin 'welcome-email': settings value 'ratio' must be a string, integer or "
              "boolean, got a float"},
    {"nested", "plugin 'welcome-email': settings value 'nested' must be a string, integer or "
               "boolean, got a group"},
    {"missing.so", "duplicate plugin name 'welcome-email' (first at line 18)"},
    {"{ name = \"x\"", "plugin 'x': missing required setting 'path'"},
    {"{ name = \"jobs\"", "queue 'jobs': missing required setting 'url'"},
    {"welcom-email", "queue 'jobs': plugin 'welcom-email' is not configured (did you mean "
                     "'welcome-email'?)"},
    {"visiblity", "unknown setting 'visiblity_timeout' in queue 'jobs' (did you mean "
                  "'visibility_timeout'?)"},
    {"batch_size = 11", "queue 'jobs': batch_size: 11 is out of range (1-10)"},
    {"j2\"", "duplicate queue name 'jobs' (first at line 25)"},
    {"\"again\"", "queue 'again': url: queue 'jobs' (line 29) polls it already; to send one "
                  "queue's messages to several plugins, use route_by and routes"},
    {"f-dlq", "queue 'f': dlq_url: must be a FIFO queue (ending in .fifo) like url"},
    {"cap = 5", "queue 'f': backoff.cap (5) must be at least backoff.base (10)"},
    {"{ name = \"r\"", "queue 'r': set either 'plugin' or 'route_by' with 'routes', not both"},
    {"\"nope\"", "queue 'r': plugin 'nope' is not configured"},
    {"bad name", "queue 6: name 'bad name' may only use letters, digits, '_', '.' and '-'"},
    {"ftp:", "queue 6: url: must start with http:// or https://"},
    {"{ name = \"bad name\"", "queue 6: missing 'plugin' (or 'route_by' with 'routes')"},
};

static void
test_many_errors(void)
{
    const char *file = path_in(tmpdir, "t.conf");
    struct diag d1 = DIAG_INIT, d2 = DIAG_INIT;
    struct config *c = (struct config *) 1;
    size_t nwant = sizeof(errors_want) / sizeof(errors_want[0]);
    char msg[512];

    CHECK_INT(load(errors_text, 1, &c, &d1), -1);
    CHECK(c == NULL);
    for (size_t i = 0; i < nwant; i++) {
        CHECK(has(&d1, file, line_of(errors_text, errors_want[i].marker), errors_want[i].msg));
    }
    snprintf(msg, sizeof(msg), "plugin 'welcome-email': %s: No such file or directory",
             path_in(plugdir, "missing.so"));
    CHECK(has(&d1, file, line_of(errors_text, "missing.so"), msg));
    CHECK_INT(d1.n, nwant + 1);
    for (size_t i = 0; i < d1.n; i++) {
        CHECK(strstr(d1.lines[i], "hunter2") == NULL);
        CHECK(strstr(d1.lines[i], "s3cret") == NULL);
    }
    /* The same text passed in: the same lines, in the same order. */
    CHECK_INT(config_load(file, errors_text, &c, &d2), -1);
    CHECK_INT(d2.n, d1.n);
    for (size_t i = 0; i < d1.n && i < d2.n; i++) {
        CHECK_STR(d2.lines[i], d1.lines[i]);
    }
    diag_free(&d1);
    diag_free(&d2);
}

/* Load MINIMAL_HEAD plus extra; return the status and keep d's lines. */
static int
load_extra(const char *extra, struct diag *d, struct config **out)
{
    char text[4096];
    struct config *c = NULL;
    snprintf(text, sizeof(text), "%s%s", MINIMAL_HEAD, extra);
    int rc = load(text, 0, &c, d);
    if (out != NULL) {
        *out = c;
    } else {
        config_free(c);
    }
    return rc;
}

#define QUEUE_JOBS(extra)                                                                         \
    "queues = ( { name = \"jobs\"; url = \"http://127.0.0.1:9/0/jobs\";\n"                        \
    "  dlq_url = \"http://127.0.0.1:9/0/jobs-dlq\"; " extra " } );\n"

/* One problem, exactly: the message at the line of marker in the text. */
static void
expect_one(const char *extra, const char *marker, const char *msg)
{
    struct diag d = DIAG_INIT;
    char text[4096];
    snprintf(text, sizeof(text), "%s%s", MINIMAL_HEAD, extra);
    CHECK_INT(load_extra(extra, &d, NULL), -1);
    CHECK_INT(d.n, 1);
    for (size_t i = 0; d.n != 1 && i < d.n; i++) {
        fprintf(stderr, "  got: %s\n", d.lines[i]);
    }
    int ok = has(&d, path_in(tmpdir, "t.conf"), line_of(text, marker), msg);
    CHECK(ok);
    if (!ok && d.n == 1) {
        fprintf(stderr, "  got: %s\n", d.lines[0]);
    }
    diag_free(&d);
}

static void
expect_ok(const char *extra)
{
    struct diag d = DIAG_INIT;
    CHECK_INT(load_extra(extra, &d, NULL), 0);
    CHECK_INT(d.n, 0);
    for (size_t i = 0; i < d.n; i++) {
        fprintf(stderr, "  unexpected: %s\n", d.lines[i]);
    }
    diag_free(&d);
}

static void
test_single_errors(void)
{
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; wait_time = 21;"), "wait_time",
               "queue 'jobs': wait_time: 21 is out of range (0-20)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; visibility_timeout = 43201;"), "visibility",
               "queue 'jobs': visibility_timeout: 43201 is out of range (1-43200)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; concurrency = 0;"), "concurrency",
               "queue 'jobs': concurrency: 0 is out of range (1-1024)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; max_attempts = 1001;"), "max_attempts",
               "queue 'jobs': max_attempts: 1001 is out of range (1-1000)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; max_attempts = 3; max_receives = 2;"),
               "max_receives", "queue 'jobs': max_receives (2) must be at least max_attempts (3)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; max_receives = 0;"), "max_receives",
               "queue 'jobs': max_receives: 0 is out of range (1-1000000)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; ack_tries = 1;"), "ack_tries",
               "queue 'jobs': ack_tries: 1 is out of range (2-30)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; max_receives = \"9\";"), "max_receives",
               "queue 'jobs': max_receives: expected an integer, got a string");
    struct config *c = NULL;
    struct diag d = DIAG_INIT;
    CHECK_INT(load_extra(QUEUE_JOBS("plugin = \"welcome-email\"; max_attempts = 7;"
                                    " max_receives = 7;"),
                         &d, &c),
              0);
    CHECK(c != NULL && c->nqueues == 1 && c->queues[0].max_receives == 7);
    config_free(c);
    diag_free(&d);
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; concurrency = 16; max_inflight = 15;"),
               "max_inflight",
               "queue 'jobs': max_inflight (15) must be at least concurrency (16)");
    /* Every worker runs every queue: one record per handler thread (shm.h). */
#define TWO_QUEUES(c1, c2)                                                                        \
    "queues = ( { name = \"a\"; url = \"http://127.0.0.1:9/0/a\"; dlq_url = "                     \
    "\"http://127.0.0.1:9/0/"                                                                     \
    "a-dlq\";\n  plugin = \"welcome-email\"; concurrency = " c1 "; },\n"                          \
    "  { name = \"b\"; url = \"http://127.0.0.1:9/0/b\"; dlq_url = "                              \
    "\"http://127.0.0.1:9/0/b-dlq\";\n"                                                           \
    "  plugin = \"welcome-email\"; concurrency = " c2 "; } );\n"
    expect_ok(TWO_QUEUES("512", "512"));
    expect_one(TWO_QUEUES("600", "425"), "queues",
               "queues: their concurrency adds up to 1025 handler threads in each worker; at "
               "most 1024 (run more workers instead)");
#undef TWO_QUEUES
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; max_inflight = 8193;"), "max_inflight",
               "queue 'jobs': max_inflight: 8193 is out of range (1-8192)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; receives_per_claim = 11;"),
               "receives_per_claim",
               "queue 'jobs': receives_per_claim: 11 is out of range (1-10)");
    c = NULL;
    CHECK_INT(load_extra(QUEUE_JOBS("plugin = \"welcome-email\"; concurrency = 32;"), &d, &c), 0);
    CHECK(c != NULL && c->nqueues == 1 && c->queues[0].max_inflight == 32); /* follows it */
    config_free(c);
    diag_free(&d);
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; backoff = { base = -1; };"), "base",
               "queue 'jobs': backoff.base: -1 is out of range (0-2147483647)");
    /* A setting without a maximum still has its field's: 4294967298L used to be
     * stored as 2. */
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; backoff = { base = 4294967298L; };"),
               "base", "queue 'jobs': backoff.base: 4294967298 is out of range (0-2147483647)");
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\"; backoff = { base = 2147483647L; "
                         "cap = 2147483647; };"));
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; backoff = { bse = 1; };"), "bse",
               "unknown setting 'bse' in the backoff of queue 'jobs' (did you mean 'base'?)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; backoff = 3;"), "backoff",
               "queue 'jobs': backoff: expected a group, got an integer");
    /* Two edits away still gets a suggestion; three do not. */
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; visiblity_timout = 3;"), "visiblity_timout",
               "unknown setting 'visiblity_timout' in queue 'jobs' (did you mean "
               "'visibility_timeout'?)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; visiblty_timout = 3;"), "visiblty_timout",
               "unknown setting 'visiblty_timout' in queue 'jobs'");
    /* 64-bit integers are fine where they fit. */
    expect_ok("workers = 4L;\n" QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_one("workers = 5000000000L;\n" QUEUE_JOBS("plugin = \"welcome-email\";"), "workers",
               "workers: 5000000000 is out of range (1-256)");
    expect_one("max_message_bytes = 1023;\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "max_message", "max_message_bytes: 1023 is out of range (1024-1048576)");
    expect_one("idempotency2 = 1;\n" QUEUE_JOBS("plugin = \"welcome-email\";"), "idempotency2",
               "unknown setting 'idempotency2' (did you mean 'idempotency'?)");
}

/* worker_max_rss: bytes, or a number with K, M or G; 0 or 1M-1024G; refused
 * at its line otherwise. */
static void
test_worker_max_rss(void)
{
    static const struct {
        const char *text;
        long want;
    } ok[] = {{"worker_max_rss = \"512M\";\n", 512L << 20},
              {"worker_max_rss = \"2g\";\n", 2L << 30},
              {"worker_max_rss = \"65536k\";\n", 64L << 20},
              {"worker_max_rss = 1048576;\n", 1L << 20},
              {"worker_max_rss = 0;\n", 0},
              {"worker_max_rss = \"0\";\n", 0},
              {"", 0}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char text[512];
        struct diag d = DIAG_INIT;
        struct config *c = NULL;
        snprintf(text, sizeof(text), "%s%s", ok[i].text,
                 QUEUE_JOBS("plugin = \"welcome-email\";"));
        CHECK_INT(load_extra(text, &d, &c), 0);
        CHECK(c != NULL && c->worker_max_rss == ok[i].want);
        config_free(c);
        diag_free(&d);
    }
#define RSS_BAD(v, msg)                                                                           \
    expect_one("worker_max_rss = " v ";\n" QUEUE_JOBS("plugin = \"welcome-email\";"),             \
               "worker_max_rss", "worker_max_rss: " msg)
    RSS_BAD("\"512MB\"", "'512MB' is not a size (bytes, or a number with K, M or G: \"512M\")");
    RSS_BAD("\"M\"", "'M' is not a size (bytes, or a number with K, M or G: \"512M\")");
    RSS_BAD("\" 5M\"", "' 5M' is not a size (bytes, or a number with K, M or G: \"512M\")");
    RSS_BAD("\"99999999999999999999\"",
            "'99999999999999999999' is not a size (bytes, or a number with K, M or G: \"512M\")");
    RSS_BAD("512", "512 bytes is out of range (0, or 1M-1024G)");
    RSS_BAD("\"2048G\"", "2199023255552 bytes is out of range (0, or 1M-1024G)");
    RSS_BAD("-1", "-1 bytes is out of range (0, or 1M-1024G)");
    RSS_BAD("1.5", "expected a size (\"512M\") or an integer, got a float");
#undef RSS_BAD
}

static void
test_queue_rules(void)
{
    /* FIFO queues need a FIFO DLQ, standard ones a standard DLQ. */
    expect_ok("queues = ( { name = \"f\"; url = \"http://h/0/f.fifo\";\n"
              "  dlq_url = \"http://h/0/f-dlq.fifo\"; plugin = \"welcome-email\"; } );\n");
    expect_one("queues = ( { name = \"f\"; url = \"http://h/0/f.fifo\";\n"
               "  dlq_url = \"http://h/0/f-dlq.fifo\"; plugin = \"welcome-email\";\n"
               "  receives_per_claim = 2; } );\n",
               "receives_per_claim",
               "queue 'f': receives_per_claim: must be 1 on a FIFO queue (each receive is claimed "
               "in order)");
    expect_one("queues = ( { name = \"f\"; url = \"http://h/0/f.fifo\";\n"
               "  dlq_url = \"http://h/0/f-dlq\"; plugin = \"welcome-email\"; } );\n",
               "dlq_url", "queue 'f': dlq_url: must be a FIFO queue (ending in .fifo) like url");
    expect_one("queues = ( { name = \"s\"; url = \"http://h/0/s\";\n"
               "  dlq_url = \"http://h/0/s-dlq.fifo\"; plugin = \"welcome-email\"; } );\n",
               "dlq_url",
               "queue 's': dlq_url: must be a standard queue like url, not a FIFO queue");
    expect_one("queues = ( { name = \"s\"; url = \"http://h/0/s\";\n"
               "  plugin = \"welcome-email\"; } );\n",
               "{ name = \"s\"", "queue 's': missing required setting 'dlq_url'");
    expect_one("queues = ( { name = \"s\"; url = \"http://h/0/s\";\n"
               "  dlq_url = \"http://h/0/s\"; plugin = \"welcome-email\"; } );\n",
               "dlq_url", "queue 's': dlq_url: must be another queue than url");
    /* One queue written two ways is still one queue: the host's case, a
     * default port, AWS's legacy host. Each went through and both entries
     * polled it, its messages going to either entry's plugin. */
    static const char *const same[][2] = {
        {"https://sqs.eu-west-1.amazonaws.com/1/a", "HTTPS://SQS.EU-WEST-1.amazonaws.com/1/a"},
        {"https://sqs.eu-west-1.amazonaws.com/1/a", "https://sqs.eu-west-1.amazonaws.com:443/1/a"},
        {"http://h/1/a", "http://H:80/1/a"},
        {"https://sqs.eu-west-1.amazonaws.com/1/a", "https://eu-west-1.queue.amazonaws.com/1/a"},
        {"https://sqs.us-east-1.amazonaws.com/1/a", "https://queue.amazonaws.com/1/a"},
    };
    char text[1024];
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        snprintf(text, sizeof(text),
                 "queues = ( { name = \"a\"; url = \"%s\"; dlq_url = \"http://h/1/d\";\n"
                 "  plugin = \"welcome-email\"; },\n"
                 "  { name = \"b\"; url = \"%s\"; dlq_url = \"http://h/1/d\";\n"
                 "  plugin = \"welcome-email\"; } );\n",
                 same[i][0], same[i][1]);
        expect_one(text, "{ name = \"b\"",
                   "queue 'b': url: queue 'a' (line 4) polls it already; to send one queue's "
                   "messages to several plugins, use route_by and routes");
        snprintf(text, sizeof(text),
                 "queues = ( { name = \"s\"; url = \"%s\";\n"
                 "  dlq_url = \"%s\"; plugin = \"welcome-email\"; } );\n",
                 same[i][0], same[i][1]);
        expect_one(text, "dlq_url", "queue 's': dlq_url: must be another queue than url");
    }
    /* Other queues: another region, another port, a name in another case. */
    static const char *const other[][2] = {
        {"https://sqs.eu-west-1.amazonaws.com/1/a", "https://sqs.us-east-1.amazonaws.com/1/a"},
        {"http://h/1/a", "http://h:8080/1/a"},
        {"http://h:80/1/a", "https://h:80/1/a"},
        {"https://sqs.eu-west-1.amazonaws.com/1/a", "https://sqs.eu-west-1.amazonaws.com/1/A"},
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        snprintf(text, sizeof(text),
                 "queues = ( { name = \"s\"; url = \"%s\";\n"
                 "  dlq_url = \"%s\"; plugin = \"welcome-email\"; } );\n",
                 other[i][0], other[i][1]);
        expect_ok(text);
    }
    expect_one("queues = ( { url = \"http://h/0/s\";\n"
               "  dlq_url = \"http://h/0/s-dlq\"; plugin = \"welcome-email\"; } );\n",
               "{ url", "queue 1: missing required setting 'name'");
    expect_one("queues = ();\n", "queues", "queues: at least one queue is required");
    expect_one("queues = ( 1 );\n", "queues", "queues: entry 1: expected a group, got an integer");
    /* Routing. */
    expect_ok(QUEUE_JOBS("route_by = \"meta.kind\";\n"
                         "  routes = ( { value = \"a\"; plugin = \"welcome-email\"; } );"));
    expect_one(QUEUE_JOBS("route_by = \"meta..kind\";\n"
                          "  routes = ( { value = \"a\"; plugin = \"welcome-email\"; } );"),
               "route_by",
               "queue 'jobs': route_by 'meta..kind' must be a body path like \"a.b\" "
               "or \"attr:Name\"");
    expect_one(QUEUE_JOBS("route_by = \"attr:Type\";"), "{ name = \"jobs\"",
               "queue 'jobs': 'route_by' needs 'routes'");
    expect_one(QUEUE_JOBS("route_by = \"attr:Type\";\n"
                          "  routes = ( { value = \"a\"; plugin = \"welcome-email\"; },\n"
                          "    { value = \"a\"; plugin = \"welcome-email\"; } );"),
               "    { value", "queue 'jobs': duplicate route value 'a' (first at line 6)");
    expect_one(
        QUEUE_JOBS("route_by = \"attr:Type\";\n"
                   "  routes = ( { value = \"a\"; plugin = \"welcome-email\"; plugn = 1; } );"),
        "plugn",
        "unknown setting 'plugn' in route 1 of queue 'jobs' (did you mean "
        "'plugin'?)");
    /* Envelopes, and keys that read their fields. */
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\"; envelope = \"sns\";\n"
                         "  key = \"o:{msg:topic}:{id}\"; delete_payload = true;\n"
                         "  payload_bucket = \"orders-payloads\";"));
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\"; envelope = \"auto\";\n"
                         "  key = \"o:{msg:source}:{msg:sns_message_id}\";"));
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; envelope = \"sqs\";"), "envelope",
               "queue 'jobs': envelope: unknown envelope 'sqs' (use none, sns, eventbridge or "
               "auto)");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\";\n  key = \"o:{msg:detail_type}\";"),
               "key =",
               "queue 'jobs': key reads a {msg:...} field that is only an EventBridge event's: "
               "set envelope = \"eventbridge\"");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; envelope = \"eventbridge\";\n"
                          "  key = \"o:{msg:topic}\";"),
               "key =",
               "queue 'jobs': key reads a {msg:...} field that is only an SNS notification's: "
               "set envelope = \"sns\"");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; delete_payload = 1;"), "delete_payload",
               "queue 'jobs': delete_payload: expected a boolean, got an integer");
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\";\n  delete_payload = true;"),
               "delete_payload",
               "queue 'jobs': delete_payload needs payload_bucket: the bucket whose objects it "
               "may delete (a message's pointer could name any other)");
}

/* A queue that polls another queue's DLQ is accepted with a warning at its
 * url (a redrive handler does that on purpose); dead letters that would go
 * round between queues are refused at the dlq_url of the first. Both were
 * accepted silently. */
static void
test_dlq_chains(void)
{
    static const char redrive[] =
        "queues = ( { name = \"a\"; url = \"http://h/1/a\"; dlq_url = \"http://h/1/a-dlq\";\n"
        "  plugin = \"welcome-email\"; },\n"
        "  { name = \"redrive\"; url = \"http://H:80/1/a-dlq\";\n"
        "  dlq_url = \"http://h/1/r-dlq\"; plugin = \"welcome-email\"; } );\n";
    struct diag d = DIAG_INIT, w = DIAG_INIT;
    struct config *c = NULL;
    char text[4096];
    snprintf(text, sizeof(text), "%s%s", MINIMAL_HEAD, redrive);
    CHECK_INT(load_extra(redrive, &d, &c), 0);
    CHECK_INT(d.n, 0);
    CHECK(c != NULL);
    CHECK_INT(c != NULL ? (int) config_warnings(c, &w) : -1, 1);
    char msg[512];
    snprintf(msg, sizeof(msg),
             "queue 'redrive': url is the dlq_url of queue 'a' (line %d): twiced will run 'a's "
             "dead letters through this queue's plugin; right for a redrive handler, otherwise "
             "set url to another queue",
             line_of(text, "dlq_url = \"http://h/1/a-dlq"));
    CHECK(has(&w, path_in(tmpdir, "t.conf"), line_of(text, "url = \"http://H:80"), msg));
    /* The line of each URL, for the hints that name one (config_queue_where). */
    char where[512], want[600];
    if (c != NULL && c->nqueues == 2) {
        config_queue_where(&c->queues[1], "dlq_url", where, sizeof(where));
        snprintf(want, sizeof(want), "dlq_url of queue 'redrive' at %s:%d",
                 path_in(tmpdir, "t.conf"), line_of(text, "dlq_url = \"http://h/1/r-dlq"));
        CHECK_STR(where, want);
        config_queue_where(&c->queues[1], "url", where, sizeof(where));
        snprintf(want, sizeof(want), "url of queue 'redrive' at %s:%d", path_in(tmpdir, "t.conf"),
                 line_of(text, "url = \"http://H:80"));
        CHECK_STR(where, want);
    }
    config_free(c);
    diag_free(&w);
    diag_free(&d);
    /* No warning without such a queue; a DLQ shared by two queues is fine. */
    c = NULL;
    CHECK_INT(load_extra(QUEUE_JOBS("plugin = \"welcome-email\";"), &d, &c), 0);
    CHECK_INT(c != NULL ? (int) config_warnings(c, &w) : -1, 0);
    config_free(c);
    diag_free(&w);
    diag_free(&d);
    /* a's dead letters go to b, b's back to a. */
    expect_one("queues = ( { name = \"a\"; url = \"http://h/1/a\";\n"
               "  dlq_url = \"http://h/1/b\"; plugin = \"welcome-email\"; },\n"
               "  { name = \"b\"; url = \"http://h/1/b\"; dlq_url = \"http://h/1/a\";\n"
               "  plugin = \"welcome-email\"; } );\n",
               "dlq_url = \"http://h/1/b",
               "queue 'a': dlq_url: its dead letters go round: it is the url of queue 'b', "
               "whose dead letters come back here; end the chain at a queue no entry polls");
    /* Three queues round, in another order; and a chain that ends is fine. */
    expect_one("queues = ( { name = \"c\"; url = \"http://h/1/c\";\n"
               "  dlq_url = \"http://h/1/a\"; plugin = \"welcome-email\"; },\n"
               "  { name = \"a\"; url = \"http://h/1/a\"; dlq_url = \"http://h/1/b\";\n"
               "  plugin = \"welcome-email\"; },\n"
               "  { name = \"b\"; url = \"http://h/1/b\"; dlq_url = \"http://h/1/c\";\n"
               "  plugin = \"welcome-email\"; } );\n",
               "dlq_url = \"http://h/1/a",
               "queue 'c': dlq_url: its dead letters go round: it is the url of queue 'a', "
               "whose dead letters come back here; end the chain at a queue no entry polls");
    expect_ok("queues = ( { name = \"a\"; url = \"http://h/1/a\";\n"
              "  dlq_url = \"http://h/1/b\"; plugin = \"welcome-email\"; },\n"
              "  { name = \"b\"; url = \"http://h/1/b\"; dlq_url = \"http://h/1/c\";\n"
              "  plugin = \"welcome-email\"; } );\n");
}

/* alerts.smtp.from and .to go to the SMTP server as they are (MAIL FROM,
 * RCPT TO): a CR/LF in one was a second SMTP command in the session, a
 * display name, a list in one string or a missing '@' were refused by the
 * server at the first alert. Each is refused at its line. */
#define SMTP_HEAD(from, to)                                                                       \
    "alerts = { smtp = { url = \"smtp://127.0.0.1:25\"; from = \"" from "\";\n"                   \
    "  to = " to "; }; };\n" QUEUE_JOBS("plugin = \"welcome-email\";")
static void
test_mail_addresses(void)
{
    static const char *const ok[] = {
        "ops@example.com",
        "o.p+s-1@mail.example.co",
        "x@[192.0.2.1]",
        "!#$%&'*+/=?^_`{|}~@h",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        CHECK(mailaddr_problem(ok[i]) == NULL);
    }
    static const char *const bad[][2] = {
        {"ops@x.test\r\nRCPT TO:<evil@x.test>", "a control character (a CR or LF"},
        {"Ops <ops@x.test>", "an address only, without a name or <>"},
        {"<ops@x.test>", "an address only"},
        {"a@x.test, b@x.test", "one address per string"},
        {"a@x.test;b@x.test", "one address per string"},
        {"ops", "no '@'"},
        {"@x.test", "the part before '@'"},
        {"a..b@x.test", "the part before '@'"},
        {"\"a b\"@x.test", "one address per string"},
        {"\"ab\"@x.test", "a quoted local part"},
        {"ops@", "the domain after '@'"},
        {"ops@x..test", "the domain after '@'"},
        {"ops@x_y.test", "the domain after '@'"},
        {"ops@b\xc3\xbc"
         "ro.test",
         "not ASCII"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = mailaddr_problem(bad[i][0]);
        CHECK(why != NULL && strstr(why, bad[i][1]) == why);
        if (why == NULL || strstr(why, bad[i][1]) != why) {
            fprintf(stderr, "  %s: got %s\n", bad[i][0], why != NULL ? why : "(ok)");
        }
    }
    expect_ok(SMTP_HEAD("twice@example.com", "(\"ops@example.com\", \"oncall@example.com\")"));
    expect_one(SMTP_HEAD("twice@example.com", "\"ops@x.test\\r\\nRCPT TO:<evil@x.test>\""), "to =",
               "alerts.smtp.to: \"ops@x.test\\r\\nRCPT TO:<evil@x.test>\" is not an address SMTP "
               "takes: a control character (a CR or LF would end the SMTP command)");
    expect_one(SMTP_HEAD("twice@example.com", "[\"ops@x.test\",\n  \"a@x.test, b@x.test\"]"),
               "\"a@x.test,",
               "alerts.smtp.to: entry 2 \"a@x.test, b@x.test\" is not an address SMTP takes: "
               "one address per string: several recipients are a list, to = "
               "[\"a@example.com\", \"b@example.com\"]");
    expect_one(SMTP_HEAD("Twice <twice@x.test>", "\"ops@x.test\""), "from =",
               "alerts.smtp.from: \"Twice <twice@x.test>\" is not an address SMTP takes: an "
               "address only, without a name or <>: like alerts@example.com");
    expect_one(SMTP_HEAD("", "\"ops@x.test\""), "from =", "alerts.smtp.from: must not be empty");
    expect_one(SMTP_HEAD("twice@x.test", "\"\""),
               "to =", "alerts.smtp.to: entry 1 must be a non-empty string");
}

static void
test_plugin_rules(void)
{
    char extra[1024];
    /* A relative plugin_dir is taken from the configuration's directory:
     * MINIMAL_HEAD's "plugins" works whatever the working directory. */
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\";"));
    snprintf(extra, sizeof(extra), "plugins2 = 1;\n" QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_one(extra, "plugins2", "unknown setting 'plugins2' (did you mean 'plugins'?)");
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(
        load("idempotency = { dsn = \"dbname=x\"; };\n"
             "plugins = ( { name = \"p\"; path = \"p.so\"; } );\n" QUEUE_JOBS("plugin = \"p\";"),
             0, &c, &d),
        -1);
    char msg[512];
    snprintf(msg, sizeof(msg), "plugin 'p': %s/p.so: No such file or directory",
             TWICE_DEFAULT_PLUGIN_DIR);
    CHECK(has(&d, path_in(tmpdir, "t.conf"), 2, msg));
    CHECK_INT(d.n, 1);
    diag_free(&d);
}

/* Names up to SQS's 80 bytes for a queue name are taken whole; longer ones are
 * refused at their line. They were taken before and cut to 63 bytes where the
 * processes share them, so the dead letters of such a queue were lost to its
 * alerts ("no longer configured"). */
static void
test_name_lengths(void)
{
    char name[CONFIG_MAX_NAME + 2], extra[1024], msg[256];
    memset(name, 'q', CONFIG_MAX_NAME);
    name[CONFIG_MAX_NAME] = '\0';
    snprintf(extra, sizeof(extra),
             "queues = ( { name = \"%s\"; url = \"http://127.0.0.1:9/0/jobs\";\n"
             "  dlq_url = \"http://127.0.0.1:9/0/jobs-dlq\"; plugin = \"welcome-email\"; } );\n",
             name);
    expect_ok(extra);
    strcat(name, "q");
    snprintf(extra, sizeof(extra),
             "queues = ( { name = \"%s\"; url = \"http://127.0.0.1:9/0/jobs\";\n"
             "  dlq_url = \"http://127.0.0.1:9/0/jobs-dlq\"; plugin = \"welcome-email\"; } );\n",
             name);
    snprintf(msg, sizeof(msg), "queue 1: name '%.56s...' is 81 bytes long, at most 80", name);
    expect_one(extra, "queues", msg);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    snprintf(extra, sizeof(extra),
             "idempotency = { dsn = \"dbname=x\"; };\nplugin_dir = \"plugins\";\n"
             "plugins = ( { name = \"%s\"; path = \"welcome_email.so\"; } );\n"
             "queues = ( { name = \"jobs\"; url = \"http://127.0.0.1:9/0/jobs\";\n"
             "  dlq_url = \"http://127.0.0.1:9/0/jobs-dlq\"; plugin = \"%s\"; } );\n",
             name, name);
    CHECK_INT(load(extra, 0, &c, &d), -1);
    snprintf(msg, sizeof(msg), "plugin 1: name '%.56s...' is 81 bytes long, at most 80", name);
    CHECK(has(&d, path_in(tmpdir, "t.conf"), 3, msg));
    CHECK_INT(d.n, 1);
    diag_free(&d);
}

/* A payload_bucket S3 would refuse (capitals, '_') never matches a pointer's
 * bucket: every large message went to the dead-letter queue as
 * payload-denied, and twicectl send failed, while twiced -t said OK. */
static void
test_payload_bucket_name(void)
{
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\"; payload_bucket = \"my-payloads.2026\";"));
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\"; payload_bucket = \"My_Payloads\";"),
               "payload_bucket",
               "queue 'jobs': payload_bucket 'My_Payloads' is not a name S3 takes (3-63 "
               "characters of a-z 0-9 . -, starting and ending with a letter or digit)");
}

/* An attribute name SQS refuses is on no message: route_by or a key reading
 * it dead-lettered every message, while twiced -t said OK. */
#define ATTR_RULE                                                                                 \
    "1-256 of A-Z a-z 0-9 _ - ., no leading, trailing or doubled '.', not starting with AWS. or " \
    "Amazon."
#define SHOWN_A                                                                                   \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* CONFIG_SHOWN_MAX of them */
#define ROUTE_BY(by)                                                                              \
    QUEUE_JOBS("route_by = \"" by "\";\n"                                                         \
               "  routes = ( { value = \"a\"; plugin = \"welcome-email\"; } );")
static void
test_attr_names(void)
{
    expect_ok(ROUTE_BY("attr:Type"));
    expect_ok(ROUTE_BY("attr:my_type-v1.kind"));
    expect_ok(ROUTE_BY("attr:Amazonia.kind")); /* only "Amazon." is reserved */
    expect_one(ROUTE_BY("attr:bad name"), "route_by",
               "queue 'jobs': route_by: \"bad name\" is not a possible SQS message attribute "
               "name (" ATTR_RULE ")");
    const char *bad[] = {"attr:aws.type", "attr:AMAZON.type", "attr:.type", "attr:type.",
                         "attr:a..b",     "attr:t\xc3\xa9",   "attr:a/b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char extra[512], msg[512];
        snprintf(extra, sizeof(extra), ROUTE_BY("%s"), bad[i]);
        snprintf(msg, sizeof(msg),
                 "queue 'jobs': route_by: \"%s\" is not a possible SQS message attribute "
                 "name (" ATTR_RULE ")",
                 bad[i] + 5);
        expect_one(extra, "route_by", msg);
    }
    char longest[300] = "attr:";
    memset(longest + 5, 'a', 256);
    char extra[1024];
    snprintf(extra, sizeof(extra), ROUTE_BY("%s"), longest);
    expect_ok(extra);
    strcat(longest, "a"); /* 257 */
    snprintf(extra, sizeof(extra), ROUTE_BY("%s"), longest);
    expect_one(extra, "route_by",
               "queue 'jobs': route_by: \"" SHOWN_A "...\" is not a possible SQS message "
               "attribute name (" ATTR_RULE ")");
    /* A key template: the queue's (a plugin's is refused by the loader, and
     * by the SDK's mock host, with the same keytmpl.c). */
    expect_ok(QUEUE_JOBS("plugin = \"welcome-email\";\n  key = \"k:{attr:twice-outbox-id}\";"));
    expect_one(QUEUE_JOBS("plugin = \"welcome-email\";\n  key = \"k:{attr:bad name}\";"), "key =",
               "queue 'jobs': key \"k:{attr:bad name}\": column 3: \"bad name\" is not a "
               "possible SQS message attribute name (" ATTR_RULE ")");
}
#undef ROUTE_BY

/* A queue URL with a space or a character that is not ASCII, and a region
 * that is no region's name, passed twiced -t and failed at the first
 * request. Emulators' regions ("elasticmq", "local") stay valid. */
static void
test_urls_and_region(void)
{
    expect_ok(
        "aws = { region = \"us-gov-west-1\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_ok("aws = { region = \"elasticmq\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_ok("aws = { region = \"\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"));
    expect_one("aws = { region = \"us east 1\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "region",
               "aws.region: 'us east 1' is not a region name (lowercase letters, digits and '-', "
               "like us-east-1)");
    expect_one("aws = { region = \"US-EAST-1\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "region",
               "aws.region: 'US-EAST-1' is not a region name (lowercase letters, digits and '-', "
               "like us-east-1)");
#define URLS(url, dlq)                                                                            \
    "queues = ( { name = \"q\"; url = \"" url "\";\n"                                             \
    "  dlq_url = \"" dlq "\"; plugin = \"welcome-email\"; } );\n"
    expect_ok(URLS("https://sqs.eu-central-2.amazonaws.com/123456789012/q",
                   "http://[::1]:9324/000000000000/q-dlq"));
    expect_ok(URLS("http://user@localhost:4566/000000000000/q", "http://localhost/0/q-dlq"));
    expect_one(URLS("http://localhost:4566/000000000000/my queue", "http://h/0/d"),
               "url =", "queue 'q': url: not a possible SQS queue URL: contains a space");
    expect_one(URLS("http://h/0/q", "http://h/0/d\xc3\xa9"), "dlq_url",
               "queue 'q': dlq_url: not a possible SQS queue URL: contains a character that is "
               "not ASCII");
    expect_one(URLS("http:///0/q", "http://h/0/d"),
               "url =", "queue 'q': url: not a possible SQS queue URL: has no host");
    expect_one(URLS("http://h/0/q", "https://:443/0/d"), "dlq_url",
               "queue 'q': dlq_url: not a possible SQS queue URL: has no host");
    expect_one(URLS("sqs://h/0/q", "http://h/0/d"),
               "url =", "queue 'q': url: must start with http:// or https://");
    /* a queue URL ends in the queue's name, and has no port past 65535 */
    expect_ok(URLS("HTTPS://sqs.eu-west-1.amazonaws.com/1/q", "http://h:1/0/d"));
    expect_one(URLS("https://sqs.eu-west-1.amazonaws.com/123456789012/", "http://h/0/d"), "url =",
               "queue 'q': url: not a possible SQS queue URL: does not end in a queue name "
               "(/NAME: 1-80 of A-Z a-z 0-9 _ -, and .fifo for a FIFO queue)");
    expect_one(URLS("http://h/0/q", "http://localhost:4566"), "dlq_url",
               "queue 'q': dlq_url: not a possible SQS queue URL: does not end in a queue name "
               "(/NAME: 1-80 of A-Z a-z 0-9 _ -, and .fifo for a FIFO queue)");
    expect_one(URLS("http://h:0/0/q", "http://h/0/d"), "url =",
               "queue 'q': url: not a possible SQS queue URL: has a port that is not a number "
               "from 1 to 65535");
    expect_one(URLS("http://h/0/q?x=1", "http://h/0/d"), "url =",
               "queue 'q': url: not a possible SQS queue URL: has a query or fragment ('?' or "
               "'#')");
#undef URLS
}

/* Every URL setting has the queue URL's shape check (text/url.c), at its
 * line: a space, a character that is not ASCII, no host or a bad port passed
 * as http(s) before, and failed at the first request, alert or export. */
static void
test_url_settings(void)
{
    const char *q = QUEUE_JOBS("plugin = \"welcome-email\";");
    char extra[2048];
    static const struct {
        const char *setting, *value, *marker, *msg;
    } bad[] = {
        {"aws = { endpoint = \"%s\"; };", "http://localhost:4566 ", "endpoint",
         "aws.endpoint: not a usable endpoint URL: contains a space"},
        {"aws = { endpoint = \"%s\"; };", "http://:4566", "endpoint",
         "aws.endpoint: not a usable endpoint URL: has no host"},
        {"aws = { endpoint = \"%s\"; };", "http://h/?a=b", "endpoint",
         "aws.endpoint: not a usable endpoint URL: has a query or fragment ('?' or '#')"},
        {"aws = { s3_endpoint = \"%s\"; };", "http://h:9000/bucket", "s3_endpoint",
         "aws.s3_endpoint: not a usable S3 endpoint URL (http[s]://host[:port]): has a path "
         "after host[:port]"},
        {"aws = { s3_endpoint = \"%s\"; };", "http://h:port", "s3_endpoint",
         "aws.s3_endpoint: not a usable S3 endpoint URL (http[s]://host[:port]): has a port "
         "that is not a number from 1 to 65535"},
        {"alerts = { webhook = { url = \"%s\"; }; };", "https://hooks.example.com/t\xc3\xa9",
         "webhook",
         "alerts.webhook.url: not a usable URL: contains a character that is not "
         "ASCII"},
        {"alerts = { webhook = { url = \"%s\"; }; };", "https://[::1/hook", "webhook",
         "alerts.webhook.url: not a usable URL: has an IPv6 host without its closing ']'"},
        {"tracing = { endpoint = \"%s\"; };", "http://collector:4318\\x01/v1/traces", "endpoint",
         "tracing.endpoint: not a usable URL: contains a control character"},
        {"alerts = { smtp = { url = \"%s\"; from = \"a@b\"; to = \"c@d\"; }; };",
         "smtp://mail.example.com:2525 ", "smtp",
         "alerts.smtp.url: not a usable SMTP URL: "
         "contains a space"},
        {"alerts = { smtp = { url = \"%s\"; from = \"a@b\"; to = \"c@d\"; }; };", "smtps://:465",
         "smtp", "alerts.smtp.url: not a usable SMTP URL: has no host"},
        {"tracing = { endpoint = \"%s\"; };", "https:///v1/traces", "endpoint",
         "tracing.endpoint: not a usable URL: has no host"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[512];
        snprintf(line, sizeof(line), bad[i].setting, bad[i].value);
        snprintf(extra, sizeof(extra), "%s\n%s", line, q);
        expect_one(extra, bad[i].marker, bad[i].msg);
    }
    /* what the clients take stays taken */
    snprintf(extra, sizeof(extra),
             "aws = { endpoint = \"http://[::1]:4566/sqs/\"; s3_endpoint = \"https://s3.local/\"; "
             "};\nalerts = { webhook = { url = \"https://u:p@hooks.example.com/x?token=a#b\"; "
             "}; };\ntracing = { endpoint = \"http://127.0.0.1:4318/v1/traces?x=1\"; };\n%s",
             q);
    expect_ok(extra);
}

/* The pure URL shape check, case by case (text/url.c). */
static void
test_url_problem(void)
{
    CHECK(url_problem("http://h", 0) == NULL);
    CHECK(url_problem("https://user:p@ss@h:443/a?b#c", 0) == NULL);
    CHECK(url_problem("http://[2001:db8::1]:65535/", URL_NO_QUERY | URL_NO_PATH) == NULL);
    CHECK(url_problem("hTTp://h//", URL_NO_PATH) == NULL);
    CHECK_STR(url_problem("h", 0), URL_SCHEME_PROBLEM);
    CHECK_STR(url_problem("http://", 0), "has no host");
    CHECK_STR(url_problem("http://u@", 0), "has no host");
    CHECK_STR(url_problem("http://u@:80/", 0), "has no host");
    CHECK_STR(url_problem("http://h:", 0), "has a port that is not a number from 1 to 65535");
    CHECK_STR(url_problem("http://h:65536", 0), "has a port that is not a number from 1 to 65535");
    CHECK_STR(url_problem("http://h:-1", 0), "has a port that is not a number from 1 to 65535");
    CHECK_STR(url_problem("http://h:80:80", 0), "has a port that is not a number from 1 to 65535");
    CHECK_STR(url_problem("http://[::1]x", 0),
              "has something other than :port after its IPv6 host");
    CHECK_STR(url_problem("http://[]:1", 0), "has an IPv6 host without its closing ']'");
    CHECK_STR(url_problem("http://h/\x7f", 0), "contains a control character");
    CHECK_STR(url_problem("http://h/a#b", URL_NO_QUERY), "has a query or fragment ('?' or '#')");
    CHECK_STR(url_problem("http://h/a", URL_NO_PATH), "has a path after host[:port]");
    CHECK(url_problem("SMTPS://u:p@m:465", URL_SMTP) == NULL);
    CHECK_STR(url_problem("http://m", URL_SMTP), URL_SMTP_SCHEME_PROBLEM);
    CHECK_STR(url_problem("smtp://m", 0), URL_SCHEME_PROBLEM);
    CHECK_STR(url_problem("httpx://m", 0), URL_SCHEME_PROBLEM);
    CHECK(sqs_queue_url_problem("http://h/0/q.fifo") == NULL);
    CHECK(sqs_queue_url_problem("http://h/0/.fifo") != NULL);
    CHECK(sqs_queue_url_problem("http://h/0/q.fifo/") != NULL);
    CHECK(regionname_ok("us-gov-west-1") && regionname_ok("local"));
    CHECK(!regionname_ok("") && !regionname_ok("eu_west_1") && !regionname_ok("Eu-west-1"));
}

/* Paths twiced opens later (log.file, aws.ca_file) mean the same whatever the
 * working directory: -d and systemd run twiced from /, twicectl from anywhere. */
static void
test_relative_paths(void)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(load(MINIMAL_HEAD
                   "log = { file = \"logs/twiced.log\"; };\n"
                   "aws = { ca_file = \"ca.pem\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
                   0, &c, &d),
              0);
    CHECK_INT(d.n, 0);
    if (c != NULL) {
        CHECK_STR(c->log.file, path_in(tmpdir, "logs/twiced.log"));
        CHECK_STR(c->aws.ca_file, path_in(tmpdir, "ca.pem"));
    }
    config_free(c);
    c = NULL;
    diag_free(&d);
    CHECK_INT(load(MINIMAL_HEAD
                   "log = { file = \"/var/log/t.log\"; };\n"
                   "aws = { ca_file = \"\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
                   0, &c, &d),
              0);
    if (c != NULL) {
        CHECK_STR(c->log.file, "/var/log/t.log"); /* absolute: kept */
        CHECK(c->aws.ca_file == NULL);            /* "": not set */
    }
    config_free(c);
    diag_free(&d);
}

/* A data file copied into tmpdir; its path there (static buffer). */
static const char *
copy_data(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "tests/unit/data/config/%s", name);
    char *text = read_source(rel);
    CHECK(text != NULL);
    const char *path = path_in(tmpdir, name);
    write_file(path, text != NULL ? text : "");
    free(text);
    return path;
}

static void
test_syntax_errors(void)
{
    const char *file = copy_data("syntax.conf");
    char *text = read_source("tests/unit/data/config/syntax.conf");
    for (int from_text = 0; from_text <= 1; from_text++) {
        struct diag d = DIAG_INIT;
        struct config *c = NULL;
        CHECK_INT(config_load(file, from_text ? text : NULL, &c, &d), -1);
        CHECK(c == NULL);
        CHECK_INT(d.n, 1);
        CHECK(has(&d, file, 5, "syntax error"));
        diag_free(&d);
    }
    free(text);
    /* A duplicate setting is named (libconfig does not): at its line, alone
     * on it, twice on it, or inside a group. */
    expect_one("workers = 2;\nworkers = 3;\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "workers = 3",
               "setting 'workers' appears twice in its group (remove or rename one)");
    expect_one(
        "workers = 2; workers : 3; # workers = 4\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
        "workers = 2; workers",
        "setting 'workers' appears twice in its group (remove or rename one)");
    expect_one("aws = { region = \"eu-west-1\"; /* x = */ endpoint = \"a=b\"; region = \"x\"; "
               "};\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "aws = {", "setting 'region' appears twice in its group (remove or rename one)");
    /* A line that does not tell (two different names) keeps libconfig's words. */
    expect_one("workers = 2;\nlog = { level = \"info\"; }; workers = 3;\n" QUEUE_JOBS(
                   "plugin = \"welcome-email\";"),
               "log = {", "syntax error: duplicate setting name");
    /* In an @include file, named from that file's line. */
    char inc[512];
    snprintf(inc, sizeof(inc), "%s", path_in(tmpdir, "dup.inc"));
    write_file(inc, "# tuning\nworkers = 2;\nworkers = 4;\n");
    struct diag di = DIAG_INIT;
    CHECK_INT(load_extra("@include \"dup.inc\"\n" QUEUE_JOBS(""), &di, NULL), -1);
    CHECK_INT(di.n, 1);
    CHECK(has(&di, inc, 3, "setting 'workers' appears twice in its group (remove or rename one)"));
    diag_free(&di);
    /* An @include file that ends inside a comment, a string or a group:
     * libconfig read on into the main file, so the comment silently took
     * its next settings (here an unknown one) and the others were a
     * "syntax error" at a line of the main file. Named where they open. */
    static const char *const ends[][2] = {
        {"workers = 2; /* tuning\n", "a /* comment"},
        {"workers = 2;\nlog = { file = \"x\n", "a string"},
        {"workers = 2;\nlog = { level = \"info\";\n", "a group ('{')"},
    };
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        char want[256];
        write_file(inc, ends[i][0]);
        snprintf(want, sizeof(want),
                 "%s starts here and is not closed before the end of this @include file (each "
                 "@include file must hold whole settings)",
                 ends[i][1]);
        CHECK_INT(load_extra("@include \"dup.inc\"\nbogus = 1; /* */\n" QUEUE_JOBS(""), &di, NULL),
                  -1);
        CHECK_INT(di.n, 1);
        CHECK(has(&di, inc, i == 0 ? 1 : 2, want));
        diag_free(&di);
    }
    unlink(inc);
    /* An unreadable file is one line, without a line number. */
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    char msg[512];
    const char *missing = path_in(tmpdir, "nonexistent.conf");
    CHECK_INT(config_load(missing, NULL, &c, &d), -1);
    snprintf(msg, sizeof(msg), "%s: cannot read the configuration: No such file or directory",
             missing);
    CHECK(has_bare(&d, msg));
    CHECK_INT(d.n, 1);
    diag_free(&d);
}

/* Problems inside an @include'd file name that file and its own line. */
static void
test_include(void)
{
    const char *inc = copy_data("include-queues.inc");
    char incpath[512];
    snprintf(incpath, sizeof(incpath), "%s", inc);
    const char *main_file = copy_data("include-main.conf");
    char *text = read_source("tests/unit/data/config/include-main.conf");
    for (int from_text = 0; from_text <= 1; from_text++) {
        struct diag d = DIAG_INIT;
        struct config *c = NULL;
        CHECK_INT(config_load(main_file, from_text ? text : NULL, &c, &d), -1);
        CHECK_INT(d.n, 1);
        CHECK(has(&d, incpath, 8,
                  "unknown setting 'bacth_size' in queue 'jobs' (did you mean 'batch_size'?)"));
        diag_free(&d);
    }
    free(text);
}

/* A plugin's settings kept in an @include'd file (API keys apart, a common
 * layout) remember that file, so later checks of them name it. */
static void
test_include_plugin_settings(void)
{
    const char *inc = path_in(tmpdir, "keys.inc");
    const char *main_file = path_in(tmpdir, "keys-main.conf");
    char incpath[512], mainpath[512], text[2048];
    snprintf(incpath, sizeof(incpath), "%s", inc);
    snprintf(mainpath, sizeof(mainpath), "%s", main_file);
    write_file(incpath, "# keys\napi_key = \"k\";\n");
    snprintf(text, sizeof(text),
             "idempotency = { dsn = \"dbname=twice\"; };\n"
             "plugins = ( { name = \"a\"; path = \"%s\";\n"
             "  settings = {\n"
             "    url = \"x\";\n"
             "    @include \"keys.inc\"\n"
             "  }; } );\n" QUEUE_JOBS("plugin = \"a\";"),
             mainpath);
    write_file(mainpath, text);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(mainpath, NULL, &c, &d), 0);
    CHECK(c != NULL && c->nplugins == 1 && c->plugins[0].nsettings == 2);
    if (c != NULL && c->nplugins == 1 && c->plugins[0].nsettings == 2) {
        const struct config_plugin *p = &c->plugins[0];
        CHECK_STR(p->file, mainpath);
        CHECK_INT(p->line, 2);
        CHECK_STR(p->settings_file, mainpath);
        CHECK_STR(p->settings[0].name, "url");
        CHECK_STR(p->settings[0].file, mainpath);
        CHECK_INT(p->settings[0].line, 4);
        CHECK_STR(p->settings[1].name, "api_key");
        CHECK_STR(p->settings[1].file, incpath);
        CHECK_INT(p->settings[1].line, 2);
    }
    diag_free(&d);
    config_free(c);
}

static void
test_required(void)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    const char *file = path_in(tmpdir, "t.conf");
    char msg[512];
    /* An empty file (one caught while it was written, at a reload) or only
     * comments: said so, rather than "missing dsn" and "no queue". */
    static const char *const empty[] = {"", "\n\n  \t\n", "# all commented out\n/* x */\n"};
    for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
        CHECK_INT(load(empty[i], (int) i % 2, &c, &d), -1);
        CHECK_INT(d.n, 1);
        snprintf(msg, sizeof(msg),
                 "%s: no settings: the file is empty or holds only comments (was it being "
                 "written?)",
                 file);
        CHECK(has_bare(&d, msg));
        diag_free(&d);
    }
    CHECK_INT(load("workers = 2;\n", 0, &c, &d), -1);
    CHECK_INT(d.n, 2);
    snprintf(msg, sizeof(msg), "%s: idempotency: missing required setting 'dsn'", file);
    CHECK(has_bare(&d, msg));
    snprintf(msg, sizeof(msg), "%s: queues: at least one queue is required", file);
    CHECK(has_bare(&d, msg));
    diag_free(&d);
    const char *text = "idempotency = { table = \"t\"; };\n" QUEUE_JOBS("plugin = \"a\";");
    CHECK_INT(load(text, 0, &c, &d), -1);
    CHECK_INT(d.n, 2);
    CHECK(has(&d, file, 1, "idempotency: missing required setting 'dsn'"));
    CHECK(has(&d, file, line_of(text, "plugin ="), "queue 'jobs': plugin 'a' is not configured"));
    diag_free(&d);
}

static void
test_alerts_metrics(void)
{
    static const char *const good[] = {"0.0.0.0:9464", "127.0.0.1:1", ":80",
                                       "[::]:65535",   "[::1]:9464",  ""};
#define PORTS "must be \"IP:port\", \"[IPv6]:port\" or \":port\" with a port of 1-65535"
    static const char *const bad[][2] = {
        {"127.0.0.1", PORTS},
        {"[::1]9464", PORTS},
        {"1.2.3.4:0", PORTS},
        {"1.2.3.4:65536", PORTS},
        {"1.2.3.4:8x", PORTS},
        {"::1:80", "an IPv6 address goes in brackets: \"[::1]:9464\""},
        {"[::1:80", "an IPv6 address goes in brackets: \"[::1]:9464\""},
        {"[zz]:80", "zz is not an IPv6 address"},
        {"localhost:9464", "localhost is not an IP address (names are not resolved)"},
        /* fuzz-config: the host was quoted raw, a control byte split the line */
        {"127.0.0.1\\x02:9464", "127.0.0.1\\x02 is not an IP address (names are not resolved)"},
    };
    char extra[1024];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        snprintf(extra, sizeof(extra),
                 "metrics = { listen = \"%s\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
                 good[i]);
        expect_ok(extra);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(extra, sizeof(extra),
                 "metrics = { listen = \"%s\"; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
                 bad[i][0]);
        char msg[256];
        snprintf(msg, sizeof(msg), "metrics.listen: %s, or \"\" to disable", bad[i][1]);
        expect_one(extra, "listen", msg);
    }
    /* smtp.to may be one string. */
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(
        load_extra("alerts = { smtp = { url = \"smtps://m:465\"; from = \"a@b\";\n"
                   "  to = \"ops@example.com\"; }; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
                   &d, &c),
        0);
    if (c != NULL) {
        CHECK_INT(c->alerts.smtp.nto, 1);
        CHECK_STR(c->alerts.smtp.to[0], "ops@example.com");
        CHECK(c->alerts.smtp.password == NULL);
    }
    config_free(c);
    diag_free(&d);
    expect_one("alerts = { smtp = { url = \"smtp://m\"; from = \"a@b\"; to = ();\n"
               "  }; };\n" QUEUE_JOBS("plugin = \"welcome-email\";"),
               "to = ()", "alerts.smtp.to: needs at least one address");
    expect_one(
        "alerts = { webhook = { url = \"hooks.example.com/secret-token\"; }; };\n" QUEUE_JOBS(
            "plugin = \"welcome-email\";"),
        "webhook", "alerts.webhook.url: must start with http:// or https://");
}

/* Tracing settings are checked like the rest: a typo is an error, never tracing off. */
static void
test_tracing(void)
{
    const char *q = QUEUE_JOBS("plugin = \"welcome-email\";");
    char extra[1024];
    snprintf(extra, sizeof(extra), "tracing = { exporter = \"jaeger\"; };\n%s", q);
    expect_one(extra, "exporter",
               "tracing.exporter: unknown exporter 'jaeger' (use none or otlp)");
    snprintf(extra, sizeof(extra), "tracing = { endpoint = \"localhost:4318\"; };\n%s", q);
    expect_one(extra, "endpoint", "tracing.endpoint: must start with http:// or https://");
    snprintf(extra, sizeof(extra), "tracing = { buffer_spans = 0; };\n%s", q);
    expect_one(extra, "buffer_spans", "tracing.buffer_spans: 0 is out of range (1-1000000)");
    snprintf(extra, sizeof(extra), "tracing = { sample_rate = 1; };\n%s", q);
    expect_one(extra, "sample_rate", "unknown setting 'sample_rate' in tracing");
    snprintf(extra, sizeof(extra), "metrics = { queue_stats_interval = -1; };\n%s", q);
    expect_one(extra, "queue_stats", "metrics.queue_stats_interval: -1 is out of range (0-86400)");
    snprintf(extra, sizeof(extra), "metrics = { p99_interval = 0; };\n%s", q);
    expect_one(extra, "p99_interval", "metrics.p99_interval: 0 is out of range (1-3600)");
    snprintf(extra, sizeof(extra),
             "tracing = { exporter = \"otlp\"; endpoint = \"\"; };\n"
             "metrics = { queue_stats_interval = 0; };\n%s",
             q);
    expect_ok(extra);
}

static void
test_restart_needed(void)
{
    struct diag d = DIAG_INIT;
    struct config *a = NULL, *b = NULL, *n = NULL;
    CHECK_INT(load_extra("user = \"alice\";\n" QUEUE_JOBS("plugin = \"welcome-email\";"), &d, &a),
              0);
    CHECK_INT(load_extra("user = \"bob\";\n" QUEUE_JOBS("plugin = \"welcome-email\";"), &d, &b),
              0);
    CHECK_INT(load_extra(QUEUE_JOBS("plugin = \"welcome-email\";"), &d, &n), 0);
    CHECK_INT(d.n, 0);
    if (a == NULL || b == NULL || n == NULL) {
        goto out;
    }
    CHECK_INT(config_restart_needed(a, a, &d), 0);
    CHECK_INT(config_restart_needed(n, n, &d), 0);
    CHECK_INT(d.n, 0);
    CHECK_INT(config_restart_needed(a, b, &d), 1);
    CHECK_INT(d.n, 1);
    if (d.n == 1) {
        CHECK_CONTAINS(d.lines[0], "user: changing it needs a restart (reload keeps 'alice')");
        CHECK(strncmp(d.lines[0], b->file, strlen(b->file)) == 0);
    }
    CHECK_INT(config_restart_needed(n, a, &d), 1);
    CHECK_INT(config_restart_needed(a, n, &d), 1);
    CHECK_INT(d.n, 3);
out:
    config_free(a);
    config_free(b);
    config_free(n);
    diag_free(&d);
}

/* etc/twice.conf, the reference, loads cleanly once its bundled plugins
 * exist: the test appends a plugin_dir (the file leaves it at the default)
 * pointing at empty stand-ins. As shipped, the only problems allowed are
 * the three plugin files missing from the default plugin_dir. */
static void
test_reference_conf(void)
{
    char *text = read_source("etc/twice.conf");
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    const char *file = path_in(tmpdir, "twice.conf");
    size_t n = strlen(text);
    snprintf(text + n, (1 << 20) - n, "\nplugin_dir = \"%s\";\n", plugdir);
    write_file(file, text);
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(config_load(file, NULL, &c, &d), 0);
    CHECK_INT(d.n, 0);
    for (size_t i = 0; i < d.n; i++) {
        fprintf(stderr, "  %s\n", d.lines[i]);
    }
    if (c != NULL) {
        CHECK_INT(c->nplugins, 3);
        CHECK_INT(c->nqueues, 3);
        CHECK(config_find_queue(c, "welcome") != NULL);
        CHECK(config_find_queue(c, "matches") != NULL);
        CHECK(config_find_queue(c, "sync") != NULL && config_find_queue(c, "sync")->fifo);
        CHECK_STR(config_find_queue(c, "matches")->plugin, "match-recompute");
        CHECK_INT(c->workers, 2);
        CHECK_INT(c->idempotency.retention, 604800);
        CHECK(c->metrics.listen == NULL);
    }
    config_free(c);
    diag_free(&d);

    text[n] = '\0'; /* as shipped */
    write_file(file, text);
    CHECK_INT(config_load(file, NULL, &c, &d), d.n == 0 ? 0 : -1);
    for (size_t i = 0; i < d.n; i++) {
        CHECK_CONTAINS(d.lines[i], ": No such file or directory");
        CHECK_CONTAINS(d.lines[i], TWICE_DEFAULT_PLUGIN_DIR "/");
    }
    CHECK(d.n == 0 || d.n == 3);
    config_free(c);
    diag_free(&d);
    free(text);
}

/* A DSN libpq cannot parse is caught by the check, and never echoed. */
static void
test_malformed_dsn(void)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    CHECK_INT(load("idempotency = { dsn = \"host=db password=hunter2 broken\"; };\n" QUEUE_JOBS(
                       "plugin = \"welcome-email\";"),
                   0, &c, &d),
              -1);
    CHECK(has(&d, path_in(tmpdir, "t.conf"), 1,
              "idempotency.dsn: not a valid libpq connection string or URI (the value is not "
              "shown: it may hold a password)"));
    for (size_t i = 0; i < d.n; i++) {
        CHECK(strstr(d.lines[i], "hunter2") == NULL);
    }
    diag_free(&d);
#define BAD_DSN_CONF                                                                              \
    "idempotency = { dsn = \"host=db password=hunter2 broken\"; };\n"                             \
    "plugin_dir = \"plugins\";\n"                                                                 \
    "plugins = ( { name = \"welcome-email\"; path = \"welcome_email.so\"; } );\n" QUEUE_JOBS(     \
        "plugin = \"welcome-email\";")
    d = (struct diag) DIAG_INIT;
    CHECK_INT(load(BAD_DSN_CONF, 0, &c, &d), -1); /* that dsn is the only problem */
    CHECK_INT(d.n, 1);
    diag_free(&d);
    /* A program that installs no judge (one that never connects) reads the
     * configuration; its dsn is judged where it is parsed to connect. */
    config_set_dsn_check(NULL);
    d = (struct diag) DIAG_INIT;
    CHECK_INT(load(BAD_DSN_CONF, 0, &c, &d), 0);
    config_free(c);
    diag_free(&d);
#undef BAD_DSN_CONF
    config_set_dsn_check(idem_dsn_parses);
}

/*
 * Configurations users wrote for older versions keep working after an
 * upgrade: copies of test-config's full.conf (every setting of its day set)
 * and of etc/twice.conf as they were (tests/unit/data/config/old/), read by
 * today's reader next to a plugins/ directory, must give no problem at all.
 * A renamed or removed setting, a narrowed range or a dropped choice fails
 * here; if one is ever meant, the old name must still be read (with a
 * warning) or refused naming the new one, and this list says so.
 */
static void
test_older_confs(void)
{
    static const char *const olds[] = {"full-43d49e3.conf", "full-f21e5d1.conf",
                                       "twice-6e70ef3.conf", NULL};
    const char *file = path_in(tmpdir, "old.conf");
    for (const char *const *o = olds; *o != NULL; o++) {
        char source[256];
        snprintf(source, sizeof(source), "tests/unit/data/config/old/%s", *o);
        char *text = read_source(source);
        CHECK(text != NULL);
        if (text == NULL) {
            continue;
        }
        size_t n = strlen(text);
        if (strstr(text, "\nplugin_dir = ") == NULL) { /* the reference's is commented out */
            snprintf(text + n, (1 << 20) - n, "\nplugin_dir = \"%s\";\n", plugdir);
        }
        write_file(file, text);
        struct diag d = DIAG_INIT;
        struct config *c = NULL;
        CHECK_INT(config_load(file, NULL, &c, &d), 0);
        CHECK_INT(d.n, 0);
        for (size_t i = 0; i < d.n; i++) {
            fprintf(stderr, "  %s: %s\n", *o, d.lines[i]);
        }
        CHECK(c != NULL && c->nplugins == 3 && c->nqueues >= 3);
        config_free(c);
        diag_free(&d);
        free(text);
    }
}

int
main(void)
{
    config_set_dsn_check(idem_dsn_parses); /* as twiced and twicectl do */
    setup();
    test_full();
    test_defaults();
    test_rate_limits();
    test_many_errors();
    test_single_errors();
    test_worker_max_rss();
    test_queue_rules();
    test_dlq_chains();
    test_mail_addresses();
    test_plugin_rules();
    test_name_lengths();
    test_payload_bucket_name();
    test_attr_names();
    test_urls_and_region();
    test_url_settings();
    test_url_problem();
    test_relative_paths();
    test_syntax_errors();
    test_include();
    test_include_plugin_settings();
    test_required();
    test_alerts_metrics();
    test_tracing();
    test_restart_needed();
    test_reference_conf();
    test_older_confs();
    test_malformed_dsn();
    teardown();
    return check_done("test-config");
}
