/*
 * config_check.c - the special checks rows of the settings table name: URLs,
 * the DSN, the listen address, names and references between plugins,
 * queues and routes, and a plugin's own settings (kept as text for the
 * loader). Types, ranges and required settings are config_parse.c's.
 */
#include "config_check.h"

#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "config_ctx.h"
#include "escape.h"
#include "keytmpl.h"
#include "listen.h"
#include "mailaddr.h"
#include "regionname.h"
#include "s3name.h"
#include "sqsname.h"
#include "url.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <twice/plugin.h>

/* The string a STR row stored. */
static char *
str_of(const struct config_at *at)
{
    return *(char **) config_field(at);
}

int
config_check_rel_path(struct config_at *at)
{
    char **path = config_field(at);
    if (*path == NULL || (*path)[0] == '/') {
        return 0;
    }
    /* relative to the configuration's directory, whatever the process's
     * working directory later is (-d and systemd run from /) */
    char *abs = config_join_path(at->x->dir, *path);
    if (abs == NULL) {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    free(*path);
    *path = abs;
    return 0;
}

/* Where the setting at is written (its file, for @include, and line), kept
 * for a problem found after loading: twiced -t, a reload. */
static void
note_where(struct config_at *at, char **file, int *line)
{
    free(*file);
    *file = config_source_path(at->x, at->s);
    *line = config_setting_source_line(at->s);
}

int
config_check_user(struct config_at *at)
{
    note_where(at, &at->c->user_file, &at->c->user_line);
    if (at->c->user[0] == '\0') {
        config_problem(at->x, at->s,
                       "user: must not be empty (leave it out to keep the invoking user)");
        return -1;
    }
    return 0;
}

/* pid_file: where it is set, so that twiced -t can point at the line when
 * the start could not use it (the master resolves the path, as -p may
 * override it). */
int
config_check_pid_file(struct config_at *at)
{
    note_where(at, &at->c->pid_file_src, &at->c->pid_file_line);
    return 0;
}

/* aws.ca_file: absolute from the configuration's directory, and where it
 * is set, so that twiced -t can point at the line if it cannot be read. */
int
config_check_ca_file(struct config_at *at)
{
    note_where(at, &at->c->aws.ca_file_src, &at->c->aws.ca_file_line);
    return config_check_rel_path(at);
}

/* log.file: absolute from the configuration's directory, and where it is
 * set, so that twiced -t can point at the line if it cannot be written. */
int
config_check_log_file(struct config_at *at)
{
    note_where(at, &at->c->log.file_src, &at->c->log.file_line);
    return config_check_rel_path(at);
}

/* Report why (url_problem's or sqs_queue_url_problem's) at the setting, a
 * URL that is not `what`. The value is never quoted: webhook URLs often
 * carry a token. -1 when there was a problem. */
static int
url_report(struct config_at *at, const char *why, const char *what)
{
    if (why == NULL) {
        return 0;
    }
    if (strcmp(why, URL_SCHEME_PROBLEM) == 0 || strcmp(why, URL_SMTP_SCHEME_PROBLEM) == 0) {
        /* said alone, as before */
        config_problem(at->x, at->s, "%s%s: %s", at->sc->pfx, at->row->name, why);
    } else {
        config_problem(at->x, at->s, "%s%s: not %s: %s", at->sc->pfx, at->row->name, what, why);
    }
    return -1;
}

/* An http(s) URL of the shape url.h says: the alert webhook and the
 * tracing endpoint (queries allowed, they are used as they are). */
int
config_check_http_url(struct config_at *at)
{
    return url_report(at, url_problem(str_of(at), 0), "a usable URL");
}

/* aws.endpoint: paths are kept, but the client appends to it, so no query. */
int
config_check_sqs_endpoint(struct config_at *at)
{
    return url_report(at, url_problem(str_of(at), URL_NO_QUERY), "a usable endpoint URL");
}

/* aws.s3_endpoint: http[s]://host[:port] only, as the S3 client addresses
 * ENDPOINT/bucket/key and signs that path. */
int
config_check_s3_endpoint(struct config_at *at)
{
    return url_report(at, url_problem(str_of(at), URL_NO_QUERY | URL_NO_PATH),
                      "a usable S3 endpoint URL (http[s]://host[:port])");
}

/* aws.region: the shape of AWS's region names (regionname.h); "" leaves it
 * to the environment. A space or a capital would only fail at the first
 * signed request. */
int
config_check_region(struct config_at *at)
{
    const char *r = str_of(at);
    char tmp[64];
    if (r[0] == '\0' || regionname_ok(r)) {
        return 0;
    }
    config_problem(at->x, at->s, "aws.region: '%s' is not a region name (" REGIONNAME_RULE ")",
                   config_shown(r, tmp));
    return -1;
}

/* The dsn's judge (config_set_dsn_check); NULL: none installed. Set once,
 * before any configuration is loaded. */
static config_dsn_check_fn dsn_check;

void
config_set_dsn_check(config_dsn_check_fn fn)
{
    dsn_check = fn;
}

/* libpq's own parser, so a malformed DSN is caught by `twiced -t`, not by the
 * first worker. Its message is not shown: it can quote the DSN, password
 * included. */
int
config_check_dsn(struct config_at *at)
{
    note_where(at, &at->c->idempotency.dsn_src, &at->c->idempotency.dsn_line);
    if (dsn_check == NULL || dsn_check(str_of(at))) {
        return 0;
    }
    config_problem(at->x, at->s,
                   "idempotency.dsn: not a valid libpq connection string or URI (the value "
                   "is not shown: it may hold a password)");
    return -1;
}

int
config_check_table(struct config_at *at)
{
    note_where(at, &at->c->idempotency.table_src, &at->c->idempotency.table_line);
    size_t n = strlen(str_of(at));
    if (n >= (size_t) at->row->lo && n <= (size_t) at->row->hi) {
        return 0;
    }
    config_problem(at->x, at->s,
                   "idempotency.table: must be %lld-%lld bytes long (twice's index names add "
                   "up to 12 bytes, within PostgreSQL's 63)",
                   at->row->lo, at->row->hi);
    return -1;
}

int
config_check_header(struct config_at *at)
{
    const char *h = str_of(at);
    if (strchr(h, ':') != NULL && h[0] != ':' && strpbrk(h, "\r\n") == NULL) {
        return 0;
    }
    config_problem(at->x, at->s, "alerts.webhook.header: must read 'Name: value' on one line");
    return -1;
}

/* alerts.smtp.url: smtp:// or smtps://, and the shape of any URL (url.h). */
int
config_check_smtp_url(struct config_at *at)
{
    return url_report(at, url_problem(str_of(at), URL_SMTP), "a usable SMTP URL");
}

/* One address of alerts.smtp (e: its string setting; entry > 0: its place
 * in the to list), refused at its line when SMTP would refuse it, or when
 * it would put a line break into the SMTP session. */
static int
mail_addr(struct config_at *at, const config_setting_t *e, int entry)
{
    const char *addr = config_setting_get_string(e), *why = mailaddr_problem(addr);
    char tmp[64], pos[32] = "";
    if (why == NULL) {
        return 0;
    }
    if (entry > 0) {
        snprintf(pos, sizeof(pos), " entry %d", entry);
    }
    config_problem(at->x, e, "%s%s:%s \"%s\" is not an address SMTP takes: %s", at->sc->pfx,
                   at->row->name, pos, config_shown(addr, tmp), why);
    return -1;
}

int
config_check_mail_from(struct config_at *at)
{
    return mail_addr(at, at->s, 0);
}

int
config_check_mail_to(struct config_at *at)
{
    if (config_setting_type(at->s) == CONFIG_TYPE_STRING) {
        return mail_addr(at, at->s, 0);
    }
    int rc = 0;
    for (int i = 0; i < config_setting_length(at->s); i++) {
        rc |= mail_addr(at, config_setting_get_elem(at->s, (unsigned) i), i + 1);
    }
    return rc;
}

int
config_check_listen(struct config_at *at)
{
    struct sockaddr_storage ss;
    char why[160];
    if (listen_parse(str_of(at), &ss, why, sizeof(why)) == 0) {
        return 0;
    }
    config_problem(at->x, at->s, "metrics.listen: %s, or \"\" to disable", why);
    return -1;
}

/* The index of the queue of c that polls queue i's dead-letter queue, or
 * c->nqueues for none. */
static size_t
dlq_poller(const struct config *c, size_t i)
{
    const char *dlq = c->queues[i].dlq_url;
    for (size_t k = 0; dlq != NULL && k < c->nqueues; k++) {
        const char *url = c->queues[k].url;
        if (url != NULL && sqs_queue_url_same(url, dlq)) {
            return k;
        }
    }
    return c->nqueues;
}

/* Report the cycle that starts at queue i (its first in the file), whose
 * dead letters go to queue next. */
static void
report_cycle(struct config_at *at, size_t i, size_t next)
{
    const struct config *c = at->c;
    const config_setting_t *e = at->s != NULL ? config_setting_get_elem(at->s, (int) i) : NULL;
    const config_setting_t *s = e != NULL ? config_setting_get_member(e, "dlq_url") : NULL;
    const char *to = c->queues[next].name;
    config_problem(at->x, s != NULL ? s : at->s,
                   "queue '%s': dlq_url: its dead letters go round: it is the url of queue '%s', "
                   "whose dead letters come back here; end the chain at a queue no entry polls",
                   c->queues[i].name, to != NULL ? to : "?");
}

/* Queues whose dead letters go round: each one's dlq_url another's url,
 * back to the first (a's DLQ polled as b, b's as a). A message that fails
 * in all of them would be dead-lettered from one to the next for ever; a
 * queue that is its own DLQ is check_urls'. Reported once, at the dlq_url
 * of the cycle's first queue in the file. The pollers are found once
 * (n^2 comparisons, as config_check_queue_url's), then each walk is at
 * most n steps. -1 when there was one. */
static int
check_dlq_cycles(struct config_at *at)
{
    const struct config *c = at->c;
    size_t n = c->nqueues, *next = calloc(n > 0 ? n : 1, sizeof(*next));
    int found = 0;
    if (next == NULL) {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        next[i] = dlq_poller(c, i);
    }
    for (size_t i = 0; i < n; i++) {
        size_t p = next[i], first = i, steps = 0;
        for (; p < n && p != i && steps < n; p = next[p], steps++) {
            first = p < first ? p : first;
        }
        if (p == i && first == i && steps > 0 && c->queues[i].name != NULL) {
            report_cycle(at, i, next[i]);
            found = 1;
        }
    }
    free(next);
    return found ? -1 : 0;
}

/* Missing or empty (not mistyped: that was reported); dead letters that go
 * round; or more handler threads than a worker keeps a record of (each
 * worker runs every queue, and the master lays a crash at the message a
 * thread was running). */
int
config_check_queues(struct config_at *at)
{
    if (at->c->nqueues == 0 && (at->s == NULL || config_setting_length(at->s) == 0)) {
        config_problem(at->x, at->s != NULL ? at->s : at->grp,
                       "queues: at least one queue is required");
        return -1;
    }
    if (check_dlq_cycles(at) != 0) {
        return -1;
    }
    long threads = 0;
    for (size_t i = 0; i < at->c->nqueues; i++) {
        threads += at->c->queues[i].concurrency;
    }
    if (threads <= CONFIG_MAX_HANDLERS) {
        return 0;
    }
    config_problem(at->x, at->s != NULL ? at->s : at->grp,
                   "queues: their concurrency adds up to %ld handler threads in each worker; at "
                   "most %d (run more workers instead)",
                   threads, CONFIG_MAX_HANDLERS);
    return -1;
}

/* Names of queues and plugins appear in logs, metrics labels and messages. */
static int
name_ok(const char *s)
{
    if (s[0] == '\0') {
        return 0;
    }
    for (; *s != '\0'; s++) {
        if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-", *s) ==
            NULL) {
            return 0;
        }
    }
    return 1;
}

/* A queue's or a plugin's name: its characters and its length. Longer names
 * were cut where the processes share them (a dead letter then belonged to no
 * queue, and its alert lost it). 0, or -1 with the problem reported. */
static int
name_check(struct config_at *at, const char *name)
{
    char tmp[64];
    if (!name_ok(name)) {
        config_problem(at->x, at->s, "%sname '%s' may only use letters, digits, '_', '.' and '-'",
                       at->sc->pfx, config_shown(name, tmp));
        return -1;
    }
    if (strlen(name) > CONFIG_MAX_NAME) {
        config_problem(at->x, at->s, "%sname '%s' is %zu bytes long, at most %d", at->sc->pfx,
                       config_shown(name, tmp), strlen(name), CONFIG_MAX_NAME);
        return -1;
    }
    return 0;
}

void
config_plugin_begin(struct config_at *at)
{
    struct config_plugin *p = at->base;
    p->line = p->settings_line = config_setting_source_line(at->s);
    p->file = config_source_path(at->x, at->s);
    p->settings_file = config_source_path(at->x, at->s);
}

void
config_plugin_free(void *base)
{
    struct config_plugin *p = base;
    free(p->file);
    free(p->settings_file);
}

int
config_check_plugin_name(struct config_at *at)
{
    struct config_plugin *p = at->base;
    const struct config *c = at->c;
    char tmp[64];
    int ok = name_check(at, p->name) == 0;
    for (const struct config_plugin *o = c->plugins; o < p; o++) {
        if (o->name != NULL && strcmp(o->name, p->name) == 0) {
            config_problem(at->x, at->s, "duplicate plugin name '%s' (first at line %d)",
                           config_shown(p->name, tmp), o->line);
            break;
        }
    }
    return ok ? 0 : -1;
}

/* Resolve the plugin's path against plugin_dir and make sure the file is
 * there: a typo must show in `twiced -t`, not when a worker starts. */
int
config_check_plugin_path(struct config_at *at)
{
    struct config_plugin *p = at->base;
    struct stat st;
    char *path = config_join_path(at->c->plugin_dir, p->path);
    if (path == NULL) {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    free(p->path);
    p->path = path;
    int rc = stat(p->path, &st), err = errno;
    if (rc == 0 && S_ISREG(st.st_mode)) {
        return 0;
    }
    /* Quoted in full but escaped: a control byte must not break the line. */
    struct buf shown = BUF_INIT;
    escape_text(&shown, p->path, strlen(p->path));
    config_problem(at->x, at->s, "%s%s: %s", at->sc->pfx, buf_str(&shown),
                   rc != 0 ? cnum_strerror(err) : "not a regular file");
    buf_free(&shown);
    return -1;
}

/* One scalar of a plugin's settings group, kept as text for the loader. */
static void
parse_setting(struct config_at *at, const config_setting_t *s, struct config_kv *kv)
{
    struct buf b = BUF_INIT;
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_STRING:
        kv->type = TWICE_SETTING_STRING;
        buf_puts(&b, config_setting_get_string(s));
        break;
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        kv->type = TWICE_SETTING_INT;
        buf_printf(&b, "%lld", config_setting_get_int64(s));
        break;
    case CONFIG_TYPE_BOOL:
        kv->type = TWICE_SETTING_BOOL;
        buf_puts(&b, config_setting_get_bool(s) ? "true" : "false");
        break;
    default:
        config_problem(
            at->x, s, "%ssettings value '%s' must be a string, integer or boolean, got %s",
            at->sc->pfx, config_setting_name(s), config_kind_name(config_setting_type(s)));
        return;
    }
    kv->name = strdup(config_setting_name(s));
    kv->value = buf_steal(&b);
    kv->line = config_setting_source_line(s);
    kv->file = config_source_path(at->x, s);
    if (kv->name == NULL || kv->value == NULL || kv->file == NULL) {
        config_problem(at->x, s, "out of memory");
    }
}

/* settings: a group of the plugin's own settings, checked against its
 * declaration by the loader (in a child), so kept as written. */
void
config_parse_plugin_settings(struct config_at *at)
{
    struct config_plugin *p = at->base;
    config_setting_t *g = at->s;
    if (config_setting_type(g) != CONFIG_TYPE_GROUP) {
        config_problem(at->x, g, "%s%s: expected a group, got %s", at->sc->pfx, at->row->name,
                       config_kind_name(config_setting_type(g)));
        return;
    }
    p->settings_line = config_setting_source_line(g);
    free(p->settings_file);
    p->settings_file = config_source_path(at->x, g);
    int n = config_setting_length(g);
    if (n == 0) {
        return;
    }
    p->settings = calloc((size_t) n, sizeof(*p->settings));
    if (p->settings == NULL) {
        config_problem(at->x, g, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        struct config_kv *kv = &p->settings[p->nsettings];
        parse_setting(at, config_setting_get_elem(g, (unsigned) i), kv);
        if (kv->name != NULL || kv->value != NULL || kv->file != NULL) {
            p->nsettings++; /* kept even half-built, so config_free frees it */
        }
    }
}

void
config_free_plugin_settings(void *base)
{
    struct config_plugin *p = base;
    for (size_t j = 0; j < p->nsettings; j++) {
        free(p->settings[j].name);
        free(p->settings[j].file);
        buf_free_secret(p->settings[j].value); /* API keys live here too */
    }
    free(p->settings);
}

void
config_queue_begin(struct config_at *at)
{
    struct config_queue *q = at->base;
    q->line = config_setting_source_line(at->s);
    q->file = config_source_path(at->x, at->s);
}

void
config_queue_free(void *base)
{
    free(((struct config_queue *) base)->file);
}

/* A queue's key template compiles as a plugin's must (keytmpl.c says
 * what); the plugins it will be used with are loaded later, in a child. */
int
config_check_queue_key(struct config_at *at)
{
    struct config_queue *q = at->base;
    struct keytmpl *t = NULL;
    char why[256];
    q->key_line = config_setting_source_line(at->s);
    if (keytmpl_compile(q->key, &t, why, sizeof(why)) == 0) {
        keytmpl_free(t);
        return 0;
    }
    struct buf shown = BUF_INIT;
    escape_text(&shown, q->key, strnlen(q->key, 2 * TWICE_KEY_MAX));
    config_problem(at->x, at->s, "%skey \"%s\": %s", at->sc->pfx, buf_str(&shown), why);
    buf_free(&shown);
    return -1;
}

int
config_check_queue_name(struct config_at *at)
{
    struct config_queue *q = at->base;
    if (name_check(at, q->name) != 0) {
        return -1;
    }
    for (const struct config_queue *o = at->c->queues; o < q; o++) {
        if (o->name != NULL && strcmp(o->name, q->name) == 0) {
            config_problem(at->x, at->s, "duplicate queue name '%s' (first at line %d)", q->name,
                           o->line);
            break;
        }
    }
    return 0;
}

/* A queue's url or dlq_url: one SQS could answer (sqsname.c). A space or
 * a character that is not ASCII passed as http(s) before, and failed at the
 * first request (or the first dead letter). */
int
config_check_queue_dlq_url(struct config_at *at)
{
    return url_report(at, sqs_queue_url_problem(str_of(at)), "a possible SQS queue URL");
}

/* A queue's url: http(s), and not one an earlier entry polls already (its
 * messages would go to either entry's plugin at random, and pausing one
 * entry would leave the other polling). */
int
config_check_queue_url(struct config_at *at)
{
    struct config_queue *q = at->base;
    q->fifo = config_has_suffix(q->url, ".fifo");
    if (config_check_queue_dlq_url(at) != 0) {
        return -1;
    }
    for (const struct config_queue *o = at->c->queues; o < q; o++) {
        if (o->url != NULL && o->name != NULL && sqs_queue_url_same(o->url, q->url)) {
            config_problem(at->x, at->s,
                           "%surl: queue '%s' (line %d) polls it already; to send one queue's "
                           "messages to several plugins, use route_by and routes",
                           at->sc->pfx, o->name, o->line);
            return -1;
        }
    }
    return 0;
}

/* A plugin named by a queue or a route must be configured. */
static int
plugin_ref(struct config_at *at, const struct config_scope *sc, const char *name)
{
    char tmp[64], best[64];
    if (config_find_plugin(at->c, name) != NULL) {
        return 0;
    }
    struct config_suggest sg = CONFIG_SUGGEST_INIT(name);
    for (size_t i = 0; i < at->c->nplugins; i++) {
        config_suggest_offer(&sg, at->c->plugins[i].name);
    }
    config_problem(at->x, at->s, "%splugin '%s' is not configured%s%s%s", sc->pfx,
                   config_shown(name, tmp), sg.best ? " (did you mean '" : "",
                   sg.best ? config_shown(sg.best, best) : "", sg.best ? "'?)" : "");
    return -1;
}

int
config_check_queue_plugin(struct config_at *at)
{
    return plugin_ref(at, at->sc, str_of(at));
}

/* route_by: a dotted JSON body path ("user.id") or "attr:Name", Name one SQS
 * could deliver: with any other, every message would lack it and go to the
 * dead-letter queue. */
int
config_check_route_by(struct config_at *at)
{
    const char *s = str_of(at);
    char tmp[64];
    if (config_has_prefix(s, "attr:") && s[5] != '\0') {
        if (sqs_attr_name_ok(s + 5, strlen(s + 5))) {
            return 0;
        }
        config_problem(at->x, at->s,
                       "%sroute_by: \"%s\" is not a possible SQS message attribute name (%s)",
                       at->sc->pfx, config_shown(s + 5, tmp), SQS_ATTR_NAME_RULE);
        return -1;
    }
    if (!(s[0] == '\0' || config_has_prefix(s, "attr:") || s[0] == '.' ||
          config_has_suffix(s, ".") || strstr(s, ".."))) {
        return 0;
    }
    config_problem(at->x, at->s,
                   "%sroute_by '%s' must be a body path like \"a.b\" or \"attr:Name\"",
                   at->sc->pfx, config_shown(s, tmp));
    return -1;
}

int
config_check_routes(struct config_at *at)
{
    if (config_setting_length(at->s) > 0) {
        return 0;
    }
    config_problem(at->x, at->s, "%sroutes: needs at least one route", at->sc->pfx);
    return -1;
}

/* A member of backoff that was read as written (not mistyped or out of
 * range), to point at; NULL otherwise. */
static const config_setting_t *
backoff_member(const config_setting_t *g, const char *name, int value)
{
    const config_setting_t *m = config_setting_get_member(g, name);
    int t = m != NULL ? config_setting_type(m) : CONFIG_TYPE_NONE;
    if ((t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) && config_setting_get_int64(m) == value) {
        return m;
    }
    return NULL;
}

int
config_check_backoff(struct config_at *at)
{
    const struct config_queue *q = at->base;
    if (q->backoff_cap >= q->backoff_base) {
        return 0;
    }
    const config_setting_t *b = backoff_member(at->s, "base", q->backoff_base);
    const config_setting_t *cp = backoff_member(at->s, "cap", q->backoff_cap);
    config_problem(at->x,
                   cp != NULL  ? cp
                   : b != NULL ? b
                               : at->s,
                   "%sbackoff.cap (%d) must be at least backoff.base (%d)", at->sc->pfx,
                   q->backoff_cap, q->backoff_base);
    return -1;
}

/* An int setting whose default derives from a setting read before it (the
 * table's order) and that may not be set below that setting's value floor,
 * named floor_name. */
static int
check_derived_at_least(struct config_at *at, int dflt, int floor, const char *floor_name)
{
    int *v = config_field(at);
    if (at->s == NULL) {
        *v = dflt;
        return 0;
    }
    if (*v >= floor) {
        return 0;
    }
    config_problem(at->x, at->s, "%s%s (%d) must be at least %s (%d)", at->sc->pfx, at->row->name,
                   *v, floor_name, floor);
    return -1;
}

/* max_receives: 10 x max_attempts unless given (the row's .def is
 * max_attempts' default times ten), and never below max_attempts. */
int
config_check_max_receives(struct config_at *at)
{
    const struct config_queue *q = at->base;
    return check_derived_at_least(at, 10 * q->max_attempts, q->max_attempts, "max_attempts");
}

/* max_inflight: concurrency unless given, and never below it: a handler
 * thread would have nothing to run. */
int
config_check_max_inflight(struct config_at *at)
{
    const struct config_queue *q = at->base;
    return check_derived_at_least(at, q->concurrency, q->concurrency, "concurrency");
}

/* Exactly one of `plugin` and `route_by` + `routes`. */
static void
check_handler(struct config_at *at)
{
    int has_plugin = config_setting_get_member(at->s, "plugin") != NULL;
    int has_by = config_setting_get_member(at->s, "route_by") != NULL;
    int has_routes = config_setting_get_member(at->s, "routes") != NULL;
    const char *pfx = at->sc->pfx;
    if (has_plugin && (has_by || has_routes)) {
        config_problem(at->x, at->s, "%sset either 'plugin' or 'route_by' with 'routes', not both",
                       pfx);
    } else if (!has_plugin && !has_by && !has_routes) {
        config_problem(at->x, at->s, "%smissing 'plugin' (or 'route_by' with 'routes')", pfx);
    } else if (has_by != has_routes) {
        config_problem(at->x, at->s, "%s'%s' needs '%s'", pfx, has_by ? "route_by" : "routes",
                       has_by ? "routes" : "route_by");
    }
}

/* url and dlq_url (both read): distinct, and a FIFO queue's DLQ is a FIFO
 * queue, a standard queue's a standard one (SQS's rule). */
static void
check_urls(struct config_at *at)
{
    const struct config_queue *q = at->base;
    if (q->url == NULL || q->url[0] == '\0' || q->dlq_url == NULL || q->dlq_url[0] == '\0') {
        return;
    }
    const config_setting_t *s = config_setting_get_member(at->s, "dlq_url");
    const char *pfx = at->sc->pfx;
    if (sqs_queue_url_same(q->url, q->dlq_url)) {
        config_problem(at->x, s, "%sdlq_url: must be another queue than url", pfx);
    } else if (q->fifo && !config_has_suffix(q->dlq_url, ".fifo")) {
        config_problem(at->x, s, "%sdlq_url: must be a FIFO queue (ending in .fifo) like url",
                       pfx);
    } else if (!q->fifo && config_has_suffix(q->dlq_url, ".fifo")) {
        config_problem(at->x, s, "%sdlq_url: must be a standard queue like url, not a FIFO queue",
                       pfx);
    }
}

/* A FIFO queue's receive is one ordered unit (its receive attempt id, the
 * order of each group): receives are not gathered into one claim there. */
static void
check_fifo_claims(struct config_at *at)
{
    const struct config_queue *q = at->base;
    if (q->fifo && q->receives_per_claim > 1) {
        config_problem(at->x, config_setting_get_member(at->s, "receives_per_claim"),
                       "%sreceives_per_claim: must be 1 on a FIFO queue (each receive is "
                       "claimed in order)",
                       at->sc->pfx);
    }
}

/* A key that reads an envelope's {msg:NAME} field on a queue whose
 * envelope never has it would dead-letter every message. */
static void
check_key_fields(struct config_at *at)
{
    const struct config_queue *q = at->base;
    struct keytmpl *t = NULL;
    char why[256];
    if (q->key == NULL || keytmpl_compile(q->key, &t, why, sizeof(why)) != 0) {
        return; /* config_check_queue_key reported it */
    }
    unsigned used = keytmpl_msg_fields(t);
    keytmpl_free(t);
    unsigned sns =
        1u << KEYTMPL_MSG_SNS_MESSAGE_ID | 1u << KEYTMPL_MSG_TOPIC | 1u << KEYTMPL_MSG_SUBJECT;
    unsigned eb =
        1u << KEYTMPL_MSG_DETAIL_TYPE | 1u << KEYTMPL_MSG_SOURCE | 1u << KEYTMPL_MSG_EVENT_ID;
    int env = q->envelope;
    const char *need = NULL;
    if ((used & sns) && env != CONFIG_ENVELOPE_SNS && env != CONFIG_ENVELOPE_AUTO) {
        need = "an SNS notification's: set envelope = \"sns\"";
    } else if ((used & eb) && env != CONFIG_ENVELOPE_EVENTBRIDGE && env != CONFIG_ENVELOPE_AUTO) {
        need = "an EventBridge event's: set envelope = \"eventbridge\"";
    }
    if (need != NULL) {
        config_problem(at->x, config_setting_get_member(at->s, "key"),
                       "%skey reads a {msg:...} field that is only %s", at->sc->pfx, need);
    }
}

/* delete_payload deletes the object a message's pointer names: without
 * payload_bucket, that would be any object in any bucket twice may delete,
 * chosen by whoever can send to the queue. */
static void
check_delete_payload(struct config_at *at)
{
    const struct config_queue *q = at->base;
    if (q->delete_payload && q->payload_bucket == NULL) {
        config_problem(at->x, config_setting_get_member(at->s, "delete_payload"),
                       "%sdelete_payload needs payload_bucket: the bucket whose objects it may "
                       "delete (a message's pointer could name any other)",
                       at->sc->pfx);
    }
}

/* payload_bucket is compared with each pointer's bucket and is where twicectl
 * send puts large bodies: a name S3 refuses (capitals, '_') would send every
 * large message to the dead-letter queue as payload-denied. */
static void
check_payload_bucket(struct config_at *at)
{
    const struct config_queue *q = at->base;
    char tmp[64];
    if (q->payload_bucket != NULL && !s3_valid_bucket(q->payload_bucket)) {
        config_problem(at->x, config_setting_get_member(at->s, "payload_bucket"),
                       "%spayload_bucket '%s' is not a name S3 takes (3-63 characters of "
                       "a-z 0-9 . -, starting and ending with a letter or digit)",
                       at->sc->pfx, config_shown(q->payload_bucket, tmp));
    }
}

/* The line of entry g's member name, 0 when it is not there. */
static int
member_line(const config_setting_t *g, const char *name)
{
    const config_setting_t *m = config_setting_get_member(g, name);
    return m != NULL ? config_setting_source_line(m) : 0;
}

int
config_queue_check(struct config_at *at)
{
    struct config_queue *q = at->base;
    q->url_line = member_line(at->s, "url");
    q->dlq_url_line = member_line(at->s, "dlq_url");
    check_handler(at);
    check_urls(at);
    check_fifo_claims(at);
    check_payload_bucket(at);
    check_key_fields(at);
    check_delete_payload(at);
    return 0;
}

void
config_route_begin(struct config_at *at)
{
    ((struct config_route *) at->base)->line = config_setting_source_line(at->s);
}

int
config_check_route_value(struct config_at *at)
{
    const struct config_queue *q = at->parent_base;
    const struct config_route *r = at->base;
    char tmp[64];
    for (const struct config_route *o = q->routes; o < r; o++) {
        if (o->value != NULL && strcmp(o->value, r->value) == 0) {
            config_problem(at->x, at->s, "%sduplicate route value '%s' (first at line %d)",
                           at->parent->pfx, config_shown(r->value, tmp), o->line);
            return -1;
        }
    }
    return 0;
}

int
config_check_route_plugin(struct config_at *at)
{
    return plugin_ref(at, at->parent, str_of(at));
}

/* A rate_limit group: absent, no limit (per_second 0); present, per_second is
 * required in it, and burst defaults to per_second. Its rows' own defaults (1)
 * only keep their ranges. */
static int
check_rate(struct config_at *at, int *per_second, int *burst)
{
    if (at->s == NULL) {
        *per_second = 0;
        *burst = 0;
        return 0;
    }
    if (config_setting_get_member(at->s, "per_second") == NULL) {
        config_problem(at->x, at->s,
                       "%srate_limit: per_second is required (jobs per second, 1 or more)",
                       at->sc->pfx);
        return -1;
    }
    if (config_setting_get_member(at->s, "burst") == NULL) {
        *burst = *per_second;
    }
    return 0;
}

int
config_check_plugin_rate(struct config_at *at)
{
    struct config_plugin *p = at->base;
    return check_rate(at, &p->rate_per_second, &p->rate_burst);
}

int
config_check_queue_rate(struct config_at *at)
{
    struct config_queue *q = at->base;
    return check_rate(at, &q->rate_per_second, &q->rate_burst);
}

int
config_check_breaker(struct config_at *at)
{
    const struct config_queue *q = at->base;
    if (at->s == NULL || q->breaker_failures >= 1) {
        return 0;
    }
    config_problem(at->x, at->s,
                   "%sbreaker.failures must be at least 1 (leave the breaker group out to turn "
                   "it off)",
                   at->sc->pfx);
    return -1;
}
