/*
 * config.c - twice.conf (libconfig syntax) read, validated and copied into
 * struct config, with every problem reported as "FILE:LINE: message".
 * Not for loading plugins or checking their own settings: loader.c does that.
 */
#include "config.h"

#include "buf.h"
#include "listen.h"
#include "sqs_limits.h"

#include <libconfig.h>
#include <libpq-fe.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <twice/plugin.h>

/* Validation state: where problems go and how many there were. */
struct ctx {
    const char *file; /* the configuration's path: for settings without a file of their own */
    const char *dir;  /* its directory, absolute: @include and plugin_dir are relative to it */
    struct diag *d;
    int errors;
};

/* How messages name a group: "unknown setting 'x' in OWNER", "PFXname: ...". */
struct scope {
    char owner[160]; /* "queue 'jobs'", "log"; "" at the top level */
    char pfx[176];   /* "queue 'jobs': ", "log."; "" at the top level */
};

#define NO_MAX INT_MAX /* a range with only a lower bound */

static const struct scope top_scope = {"", ""};

static const char *const top_keys[] = {
    "workers", "plugin_dir",  "drain_timeout", "user",    "max_message_bytes", "log",
    "aws",     "idempotency", "alerts",        "metrics", "plugins",           "queues",
    NULL};
static const char *const log_keys[] = {"level", "format", "file", NULL};
static const char *const aws_keys[] = {"region", "endpoint", "profile", "ca_file", NULL};
static const char *const idem_keys[] = {
    "dsn",           "table", "retention", "on_conflict", "lease_margin", "janitor_interval",
    "janitor_batch", NULL};
static const char *const alerts_keys[] = {"dlq_check_interval", "repeat_after", "webhook", "smtp",
                                          NULL};
static const char *const webhook_keys[] = {"url", "header", "timeout", NULL};
static const char *const smtp_keys[] = {"url",      "from",    "to", "username",
                                        "password", "timeout", NULL};
static const char *const metrics_keys[] = {"listen", NULL};
static const char *const plugin_keys[] = {"name", "path", "settings", NULL};
static const char *const queue_keys[] = {
    "name",        "url",       "dlq_url",    "plugin",    "route_by",           "routes",
    "concurrency", "receivers", "batch_size", "wait_time", "visibility_timeout", "max_attempts",
    "backoff",     NULL};
static const char *const route_keys[] = {"value", "plugin", NULL};
static const char *const backoff_keys[] = {"base", "cap", NULL};

/* Add "FILE:LINE: msg". sfile is libconfig's name of an @include'd file
 * (as written, relative to the include directory), or NULL for the main
 * configuration, which is named as the caller named it. */
static void
path_of(struct ctx *x, const char *sfile, struct buf *path)
{
    if (sfile == NULL) {
        buf_puts(path, x->file);
    } else if (sfile[0] == '/') {
        buf_puts(path, sfile);
    } else {
        buf_printf(path, "%s/%s", x->dir, sfile);
    }
}

static void
add_line(struct ctx *x, const char *sfile, int line, const char *msg)
{
    struct buf path = BUF_INIT;
    path_of(x, sfile, &path);
    diag_add(x->d, buf_str(&path), line, "%s", msg);
    buf_free(&path);
    x->errors++;
}

/* The file a setting was read from, named as problems name it, for checks
 * made later (a plugin's settings, a reload); owned, NULL on ENOMEM. */
static char *
source_path(struct ctx *x, const config_setting_t *s)
{
    struct buf path = BUF_INIT;
    path_of(x, config_setting_source_file(s), &path);
    return buf_steal(&path);
}

/* Record one problem at s's file and line (the bare file when s is NULL or
 * the root). Messages never contain secret values, only their names. */
static void __attribute__((format(printf, 3, 4)))
problem(struct ctx *x, const config_setting_t *s, const char *fmt, ...)
{
    struct buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    add_line(x, s != NULL ? config_setting_source_file(s) : NULL,
             s != NULL ? config_setting_source_line(s) : 0, buf_str(&b));
    buf_free(&b);
}

/* snprintf that may cut: scope texts are labels, a cut one still reads. */
static void __attribute__((format(printf, 3, 4)))
fmt_into(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

static void __attribute__((format(printf, 2, 3)))
scope_entry(struct scope *sc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->owner, sizeof(sc->owner), fmt, ap);
    va_end(ap);
    fmt_into(sc->pfx, sizeof(sc->pfx), "%s: ", sc->owner);
}

static void
scope_group(struct scope *sc, const char *name)
{
    fmt_into(sc->owner, sizeof(sc->owner), "%s", name);
    fmt_into(sc->pfx, sizeof(sc->pfx), "%s.", name);
}

static const char *
kind_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP:
        return "a group";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        return "an integer";
    case CONFIG_TYPE_FLOAT:
        return "a float";
    case CONFIG_TYPE_STRING:
        return "a string";
    case CONFIG_TYPE_BOOL:
        return "a boolean";
    case CONFIG_TYPE_ARRAY:
        return "an array";
    case CONFIG_TYPE_LIST:
        return "a list";
    default:
        return "nothing";
    }
}

/* A user-written value made safe to quote in a one-line message: control
 * bytes become '?', and long values are cut. Returns out. */
static const char *
shown(const char *s, char out[static 64])
{
    size_t i = 0;
    for (; s[i] != '\0' && i < 56; i++) {
        unsigned char ch = (unsigned char) s[i];
        out[i] = (ch < 0x20 || ch == 0x7f) ? '?' : (char) ch;
    }
    if (s[i] != '\0') {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
    return out;
}

/* The closest candidate offered so far within two edits (and fewer edits
 * than the candidate has bytes, so "ab" does not suggest "to"). */
struct suggest {
    const char *name;
    const char *best;
    int dist;
};

static void
suggest_offer(struct suggest *sg, const char *cand)
{
    if (cand == NULL || strcmp(cand, sg->name) == 0) {
        return;
    }
    int dist = diag_edit_distance(sg->name, cand, 0);
    if (dist <= 2 && (size_t) dist < strlen(cand) && dist < sg->dist) {
        sg->best = cand;
        sg->dist = dist;
    }
}

static int
is_key(const char *const *keys, const char *name)
{
    for (; *keys != NULL; keys++) {
        if (strcmp(*keys, name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Every member of grp that is not one of keys is an error: a typo must
 * never be silently ignored. */
static void
check_unknown(struct ctx *x, const config_setting_t *grp, const char *const *keys,
              const struct scope *sc)
{
    int n = config_setting_length(grp);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(grp, (unsigned) i);
        const char *name = config_setting_name(s);
        if (name == NULL || is_key(keys, name)) {
            continue;
        }
        struct suggest sg = {name, NULL, 3};
        for (const char *const *k = keys; *k != NULL; k++) {
            suggest_offer(&sg, *k);
        }
        problem(x, s, "unknown setting '%s'%s%s%s%s%s", name, sc->owner[0] ? " in " : "",
                sc->owner, sg.best ? " (did you mean '" : "", sg.best ? sg.best : "",
                sg.best ? "'?)" : "");
    }
}

/* The member `name` of grp if it has the wanted type (an integer may be
 * written as a 64-bit one; an empty array "[]" is an empty list). NULL when
 * grp is NULL, the member is absent, or it is mistyped (reported). */
static config_setting_t *
member(struct ctx *x, const config_setting_t *grp, const struct scope *sc, const char *name,
       int type)
{
    if (grp == NULL) {
        return NULL;
    }
    config_setting_t *s = config_setting_get_member(grp, name);
    if (s == NULL) {
        return NULL;
    }
    int t = config_setting_type(s);
    if (t == type || (type == CONFIG_TYPE_INT && t == CONFIG_TYPE_INT64) ||
        (type == CONFIG_TYPE_LIST && t == CONFIG_TYPE_ARRAY && config_setting_length(s) == 0)) {
        return s;
    }
    problem(x, s, "%s%s: expected %s, got %s", sc->pfx, name, kind_name(type), kind_name(t));
    return NULL;
}

/* Set *out from an integer member within lo-hi; *out keeps its default
 * when the member is absent or wrong. Returns the member when it was used. */
static config_setting_t *
get_int(struct ctx *x, const config_setting_t *grp, const struct scope *sc, const char *name,
        int *out, int lo, int hi)
{
    config_setting_t *s = member(x, grp, sc, name, CONFIG_TYPE_INT);
    if (s == NULL) {
        return NULL;
    }
    long long v = config_setting_get_int64(s);
    if (v < lo || v > hi) {
        if (hi == NO_MAX) {
            problem(x, s, "%s%s: %lld is out of range (must be at least %d)", sc->pfx, name, v,
                    lo);
        } else {
            problem(x, s, "%s%s: %lld is out of range (%d-%d)", sc->pfx, name, v, lo, hi);
        }
        return NULL;
    }
    *out = (int) v;
    return s;
}

/* Replace *out (freed; it may hold a default) with a copy of a string
 * member. Returns the member, or NULL when absent, mistyped or out of memory. */
static config_setting_t *
get_str(struct ctx *x, const config_setting_t *grp, const struct scope *sc, const char *name,
        char **out)
{
    config_setting_t *s = member(x, grp, sc, name, CONFIG_TYPE_STRING);
    if (s == NULL) {
        return NULL;
    }
    char *v = strdup(config_setting_get_string(s));
    if (v == NULL) {
        problem(x, s, "out of memory");
        return NULL;
    }
    free(*out);
    *out = v;
    return s;
}

/* An optional string where "" means "not set" (stored as NULL). */
static config_setting_t *
get_opt_str(struct ctx *x, const config_setting_t *grp, const struct scope *sc, const char *name,
            char **out)
{
    config_setting_t *s = get_str(x, grp, sc, name, out);
    if (s != NULL && (*out)[0] == '\0') {
        free(*out);
        *out = NULL;
    }
    return s;
}

/* Report a required member that is missing; at is where to point (the
 * group, or the root when the whole group is missing). 0 if present. */
static int
require(struct ctx *x, const config_setting_t *grp, const config_setting_t *at,
        const struct scope *sc, const char *name)
{
    if (grp != NULL && config_setting_get_member(grp, name) != NULL) {
        return 0;
    }
    problem(x, at, "%s: missing required setting '%s'", sc->owner, name);
    return -1;
}

/* A required, non-empty string. 0 when *out was set. */
static int
get_required_str(struct ctx *x, const config_setting_t *grp, const config_setting_t *at,
                 const struct scope *sc, const char *name, char **out)
{
    if (require(x, grp, at, sc, name) != 0) {
        return -1;
    }
    config_setting_t *s = get_str(x, grp, sc, name, out);
    if (s == NULL) {
        return -1;
    }
    if ((*out)[0] == '\0') {
        problem(x, s, "%s%s: must not be empty", sc->pfx, name);
        return -1;
    }
    return 0;
}

static int
has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int
has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* An http:// or https:// URL with something after the scheme. The value is
 * never quoted: webhook URLs often carry a token. */
static void
check_http_url(struct ctx *x, const config_setting_t *s, const struct scope *sc, const char *name,
               const char *url)
{
    if ((has_prefix(url, "http://") && url[7] != '\0') ||
        (has_prefix(url, "https://") && url[8] != '\0')) {
        return;
    }
    problem(x, s, "%s%s: must start with http:// or https://", sc->pfx, name);
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

static char *
join_path(const char *dir, const char *path)
{
    struct buf b = BUF_INIT;
    if (path[0] == '/') {
        buf_puts(&b, path);
    } else {
        buf_printf(&b, "%s%s%s", dir, has_suffix(dir, "/") ? "" : "/", path);
    }
    return buf_steal(&b);
}

/* The directory of the configuration file, made absolute, so that a
 * relative plugin_dir means the same whatever the process's working
 * directory later is. Caller frees; NULL when out of memory. */
static char *
config_dir(const char *file)
{
    const char *slash = strrchr(file, '/');
    struct buf b = BUF_INIT;
    if (file[0] != '/') {
        char *cwd = get_current_dir_name();
        buf_puts(&b, cwd != NULL ? cwd : ".");
        free(cwd);
        if (slash != NULL) {
            buf_putc(&b, '/');
        }
    }
    if (slash == file) {
        buf_putc(&b, '/');
    } else if (slash != NULL) {
        buf_append(&b, file, (size_t) (slash - file));
    }
    return buf_steal(&b);
}

static void
parse_top(struct ctx *x, const config_setting_t *root, struct config *c)
{
    int mmb = (int) c->max_message_bytes;

    get_int(x, root, &top_scope, "workers", &c->workers, 1, 256);
    get_int(x, root, &top_scope, "drain_timeout", &c->drain_timeout, 0, 3600);
    const config_setting_t *m =
        get_int(x, root, &top_scope, "max_message_bytes", &mmb, 1024, SQS_MESSAGE_MAX_BYTES);
    if (m != NULL) {
        c->max_message_bytes = mmb;
    }
    config_setting_t *s = get_str(x, root, &top_scope, "user", &c->user);
    c->user_line = s != NULL ? config_setting_source_line(s) : 0;
    c->user_file = s != NULL ? source_path(x, s) : NULL;
    if (s != NULL && c->user[0] == '\0') {
        problem(x, s, "user: must not be empty (leave it out to keep the invoking user)");
    }
    s = get_str(x, root, &top_scope, "plugin_dir", &c->plugin_dir);
    if (s != NULL && c->plugin_dir[0] == '\0') {
        problem(x, s, "plugin_dir: must not be empty");
    } else if (s != NULL && c->plugin_dir[0] != '/') {
        char *abs = join_path(x->dir, c->plugin_dir);
        if (abs == NULL) {
            problem(x, s, "out of memory");
        } else {
            free(c->plugin_dir);
            c->plugin_dir = abs;
        }
    }
}

static void
parse_log(struct ctx *x, const config_setting_t *root, struct config *c)
{
    struct scope sc;
    char tmp[64];
    char *v = NULL;
    config_setting_t *g = member(x, root, &top_scope, "log", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "log");
    check_unknown(x, g, log_keys, &sc);
    config_setting_t *s = get_str(x, g, &sc, "level", &v);
    if (s != NULL && log_parse_level(v, &c->log.level) != 0) {
        problem(x, s, "log.level: unknown level '%s' (use error, warn, info or debug)",
                shown(v, tmp));
    }
    s = get_str(x, g, &sc, "format", &v);
    if (s != NULL && log_parse_format(v, &c->log.format) != 0) {
        problem(x, s, "log.format: unknown format '%s' (use text or json)", shown(v, tmp));
    }
    free(v);
    get_opt_str(x, g, &sc, "file", &c->log.file);
}

static void
parse_aws(struct ctx *x, const config_setting_t *root, struct config *c)
{
    struct scope sc;
    config_setting_t *g = member(x, root, &top_scope, "aws", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "aws");
    check_unknown(x, g, aws_keys, &sc);
    get_opt_str(x, g, &sc, "region", &c->aws.region);
    config_setting_t *s = get_opt_str(x, g, &sc, "endpoint", &c->aws.endpoint);
    if (s != NULL && c->aws.endpoint != NULL) {
        check_http_url(x, s, &sc, "endpoint", c->aws.endpoint);
    }
    get_opt_str(x, g, &sc, "profile", &c->aws.profile);
    get_opt_str(x, g, &sc, "ca_file", &c->aws.ca_file);
}

/* libpq's own parser, so a malformed DSN is caught by `twiced -t`, not by the
 * first worker. Its message is not shown: it can quote the DSN, password
 * included. */
static void
check_dsn(struct ctx *x, const config_setting_t *g, const char *dsn)
{
    if (dsn == NULL) {
        return;
    }
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(dsn, &msg);
    if (opts == NULL) {
        problem(x, config_setting_get_member(g, "dsn"),
                "idempotency.dsn: not a valid libpq connection string or URI (the value is "
                "not shown: it may hold a password)");
    }
    PQconninfoFree(opts);
    PQfreemem(msg);
}

static void
parse_idempotency(struct ctx *x, const config_setting_t *root, struct config *c)
{
    struct scope sc;
    char tmp[64];
    char *v = NULL;
    config_setting_t *g = member(x, root, &top_scope, "idempotency", CONFIG_TYPE_GROUP);
    scope_group(&sc, "idempotency");
    if (g == NULL) {
        if (config_setting_get_member(root, "idempotency") == NULL) {
            require(x, NULL, root, &sc, "dsn");
        }
        return;
    }
    check_unknown(x, g, idem_keys, &sc);
    get_required_str(x, g, g, &sc, "dsn", &c->idempotency.dsn);
    check_dsn(x, g, c->idempotency.dsn);
    config_setting_t *s = get_str(x, g, &sc, "table", &c->idempotency.table);
    if (s != NULL &&
        (c->idempotency.table[0] == '\0' || strlen(c->idempotency.table) > CONFIG_MAX_TABLE_LEN)) {
        problem(x, s,
                "idempotency.table: must be 1-%d bytes long (twice's index names add "
                "up to 12 bytes, within PostgreSQL's 63)",
                CONFIG_MAX_TABLE_LEN);
    }
    get_int(x, g, &sc, "retention", &c->idempotency.retention, 60, NO_MAX);
    s = get_str(x, g, &sc, "on_conflict", &v);
    if (s != NULL && strcmp(v, "skip") == 0) {
        c->idempotency.on_conflict = CONFIG_CONFLICT_SKIP;
    } else if (s != NULL && strcmp(v, "reject") == 0) {
        c->idempotency.on_conflict = CONFIG_CONFLICT_REJECT;
    } else if (s != NULL) {
        problem(x, s, "idempotency.on_conflict: unknown value '%s' (use skip or reject)",
                shown(v, tmp));
    }
    free(v);
    get_int(x, g, &sc, "lease_margin", &c->idempotency.lease_margin, 0, 300);
    get_int(x, g, &sc, "janitor_interval", &c->idempotency.janitor_interval, 1, NO_MAX);
    get_int(x, g, &sc, "janitor_batch", &c->idempotency.janitor_batch, 1, 100000);
}

static void
parse_webhook(struct ctx *x, const config_setting_t *alerts, struct config_webhook *w)
{
    struct scope sc = {"alerts", "alerts."};
    config_setting_t *g = member(x, alerts, &sc, "webhook", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "alerts.webhook");
    check_unknown(x, g, webhook_keys, &sc);
    if (get_required_str(x, g, g, &sc, "url", &w->url) == 0) {
        check_http_url(x, config_setting_get_member(g, "url"), &sc, "url", w->url);
    }
    config_setting_t *s = get_opt_str(x, g, &sc, "header", &w->header);
    if (s != NULL && w->header != NULL &&
        (strchr(w->header, ':') == NULL || w->header[0] == ':' || strpbrk(w->header, "\r\n"))) {
        problem(x, s, "alerts.webhook.header: must read 'Name: value' on one line");
    }
    get_int(x, g, &sc, "timeout", &w->timeout, 1, 300);
}

/* smtp.to: one address as a string, or a list or array of them. */
static void
parse_smtp_to(struct ctx *x, const config_setting_t *g, struct config_smtp *m)
{
    config_setting_t *s = config_setting_get_member(g, "to");
    int t = config_setting_type(s), n = 1;
    if (t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY) {
        n = config_setting_length(s);
    } else if (t != CONFIG_TYPE_STRING) {
        problem(x, s, "alerts.smtp.to: expected a string or a list of strings, got %s",
                kind_name(t));
        return;
    }
    if (n == 0) {
        problem(x, s, "alerts.smtp.to: needs at least one address");
        return;
    }
    m->to = calloc((size_t) n, sizeof(*m->to));
    if (m->to == NULL) {
        problem(x, s, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = t == CONFIG_TYPE_STRING ? s : config_setting_get_elem(s, i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING || config_setting_get_string(e)[0] == 0) {
            problem(x, e, "alerts.smtp.to: entry %d must be a non-empty string", i + 1);
            continue;
        }
        if ((m->to[m->nto] = strdup(config_setting_get_string(e))) == NULL) {
            problem(x, e, "out of memory");
            continue;
        }
        m->nto++;
    }
}

static void
parse_smtp(struct ctx *x, const config_setting_t *alerts, struct config_smtp *m)
{
    struct scope sc = {"alerts", "alerts."};
    config_setting_t *g = member(x, alerts, &sc, "smtp", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "alerts.smtp");
    check_unknown(x, g, smtp_keys, &sc);
    if (get_required_str(x, g, g, &sc, "url", &m->url) == 0 && !has_prefix(m->url, "smtp://") &&
        !has_prefix(m->url, "smtps://")) {
        problem(x, config_setting_get_member(g, "url"),
                "alerts.smtp.url: must start with smtp:// or smtps://");
    }
    get_required_str(x, g, g, &sc, "from", &m->from);
    if (require(x, g, g, &sc, "to") == 0) {
        parse_smtp_to(x, g, m);
    }
    get_opt_str(x, g, &sc, "username", &m->username);
    get_opt_str(x, g, &sc, "password", &m->password);
    get_int(x, g, &sc, "timeout", &m->timeout, 1, 300);
}

static void
parse_alerts(struct ctx *x, const config_setting_t *root, struct config *c)
{
    struct scope sc;
    config_setting_t *g = member(x, root, &top_scope, "alerts", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "alerts");
    check_unknown(x, g, alerts_keys, &sc);
    get_int(x, g, &sc, "dlq_check_interval", &c->alerts.dlq_check_interval, 1, NO_MAX);
    get_int(x, g, &sc, "repeat_after", &c->alerts.repeat_after, 0, NO_MAX);
    parse_webhook(x, g, &c->alerts.webhook);
    parse_smtp(x, g, &c->alerts.smtp);
}

static void
parse_metrics(struct ctx *x, const config_setting_t *root, struct config *c)
{
    struct scope sc;
    config_setting_t *g = member(x, root, &top_scope, "metrics", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    scope_group(&sc, "metrics");
    check_unknown(x, g, metrics_keys, &sc);
    config_setting_t *s = get_opt_str(x, g, &sc, "listen", &c->metrics.listen);
    struct sockaddr_storage ss;
    char why[160];
    if (s != NULL && c->metrics.listen != NULL &&
        listen_parse(c->metrics.listen, &ss, why, sizeof(why)) != 0) {
        problem(x, s, "metrics.listen: %s, or \"\" to disable", why);
    }
}

/* One scalar of a plugin's settings group, kept as text for the loader. */
static void
parse_setting(struct ctx *x, const config_setting_t *s, const struct scope *sc,
              struct config_kv *kv)
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
        problem(x, s, "%ssettings value '%s' must be a string, integer or boolean, got %s",
                sc->pfx, config_setting_name(s), kind_name(config_setting_type(s)));
        return;
    }
    kv->name = strdup(config_setting_name(s));
    kv->value = buf_steal(&b);
    kv->line = config_setting_source_line(s);
    kv->file = source_path(x, s);
    if (kv->name == NULL || kv->value == NULL || kv->file == NULL) {
        problem(x, s, "out of memory");
    }
}

static void
parse_plugin_settings(struct ctx *x, const config_setting_t *e, const struct scope *sc,
                      struct config_plugin *p)
{
    config_setting_t *g = member(x, e, sc, "settings", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    p->settings_line = config_setting_source_line(g);
    free(p->settings_file);
    p->settings_file = source_path(x, g);
    int n = config_setting_length(g);
    if (n == 0) {
        return;
    }
    p->settings = calloc((size_t) n, sizeof(*p->settings));
    if (p->settings == NULL) {
        problem(x, g, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        struct config_kv *kv = &p->settings[p->nsettings];
        parse_setting(x, config_setting_get_elem(g, (unsigned) i), sc, kv);
        if (kv->name != NULL || kv->value != NULL || kv->file != NULL) {
            p->nsettings++; /* kept even half-built, so config_free frees it */
        }
    }
}

/* Resolve the plugin's path against plugin_dir and make sure the file is
 * there: a typo must show in `twiced -t`, not when a worker starts. */
static void
parse_plugin_path(struct ctx *x, const config_setting_t *e, const struct scope *sc,
                  const struct config *c, struct config_plugin *p)
{
    char *raw = NULL;
    struct stat st;
    if (get_required_str(x, e, e, sc, "path", &raw) != 0) {
        free(raw);
        return;
    }
    const config_setting_t *s = config_setting_get_member(e, "path");
    p->path = join_path(c->plugin_dir, raw);
    free(raw);
    if (p->path == NULL) {
        problem(x, s, "out of memory");
        return;
    }
    int rc = stat(p->path, &st), err = errno;
    if (rc == 0 && S_ISREG(st.st_mode)) {
        return;
    }
    /* Quoted in full but escaped: a control byte must not break the line. */
    struct buf path = BUF_INIT;
    log_escape(&path, p->path, strlen(p->path));
    problem(x, s, "%s%s: %s", sc->pfx, buf_str(&path),
            rc != 0 ? strerror(err) : "not a regular file");
    buf_free(&path);
}

static void
parse_plugin(struct ctx *x, struct config *c, const config_setting_t *e, int idx)
{
    struct config_plugin *p = &c->plugins[c->nplugins++];
    struct scope sc;
    char tmp[64];
    p->line = p->settings_line = config_setting_source_line(e);
    p->file = source_path(x, e);
    p->settings_file = source_path(x, e);
    scope_entry(&sc, "plugin %d", idx);
    if (get_required_str(x, e, e, &sc, "name", &p->name) == 0) {
        const config_setting_t *s = config_setting_get_member(e, "name");
        if (!name_ok(p->name)) {
            problem(x, s, "%sname '%s' may only use letters, digits, '_', '.' and '-'", sc.pfx,
                    shown(p->name, tmp));
        } else {
            scope_entry(&sc, "plugin '%s'", p->name);
        }
        for (size_t i = 0; i + 1 < c->nplugins; i++) {
            if (c->plugins[i].name != NULL && strcmp(c->plugins[i].name, p->name) == 0) {
                problem(x, s, "duplicate plugin name '%s' (first at line %d)", shown(p->name, tmp),
                        c->plugins[i].line);
                break;
            }
        }
    }
    check_unknown(x, e, plugin_keys, &sc);
    parse_plugin_path(x, e, &sc, c, p);
    parse_plugin_settings(x, e, &sc, p);
}

static void
parse_plugins(struct ctx *x, const config_setting_t *root, struct config *c)
{
    config_setting_t *list = member(x, root, &top_scope, "plugins", CONFIG_TYPE_LIST);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (n == 0) {
        return;
    }
    c->plugins = calloc((size_t) n, sizeof(*c->plugins));
    if (c->plugins == NULL) {
        problem(x, list, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned) i);
        if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
            problem(x, e, "plugins: entry %d: expected a group, got %s", i + 1,
                    kind_name(config_setting_type(e)));
            continue;
        }
        parse_plugin(x, c, e, i + 1);
    }
}

/* A plugin named by a queue or a route must be configured. */
static void
check_plugin_ref(struct ctx *x, const struct config *c, const config_setting_t *s,
                 const struct scope *sc, const char *name)
{
    char tmp[64], best[64];
    if (config_find_plugin(c, name) != NULL) {
        return;
    }
    struct suggest sg = {name, NULL, 3};
    for (size_t i = 0; i < c->nplugins; i++) {
        suggest_offer(&sg, c->plugins[i].name);
    }
    problem(x, s, "%splugin '%s' is not configured%s%s%s", sc->pfx, shown(name, tmp),
            sg.best ? " (did you mean '" : "", sg.best ? shown(sg.best, best) : "",
            sg.best ? "'?)" : "");
}

/* route_by: a dotted JSON body path ("user.id") or "attr:Name". */
static int
route_by_ok(const char *s)
{
    if (has_prefix(s, "attr:")) {
        return s[5] != '\0';
    }
    if (s[0] == '\0' || s[0] == '.' || has_suffix(s, ".") || strstr(s, "..") != NULL) {
        return 0;
    }
    return 1;
}

static void
parse_route(struct ctx *x, const struct config *c, const config_setting_t *e,
            const struct scope *qsc, struct config_queue *q)
{
    struct config_route *r = &q->routes[q->nroutes++];
    struct scope sc;
    char tmp[64];
    r->line = config_setting_source_line(e);
    fmt_into(sc.owner, sizeof(sc.owner), "route %zu of %s", q->nroutes, qsc->owner);
    fmt_into(sc.pfx, sizeof(sc.pfx), "%sroute %zu: ", qsc->pfx, q->nroutes);
    check_unknown(x, e, route_keys, &sc);
    if (get_required_str(x, e, e, &sc, "value", &r->value) == 0) {
        for (size_t i = 0; i + 1 < q->nroutes; i++) {
            if (q->routes[i].value != NULL && strcmp(q->routes[i].value, r->value) == 0) {
                problem(x, config_setting_get_member(e, "value"),
                        "%sduplicate route value '%s' (first at line %d)", qsc->pfx,
                        shown(r->value, tmp), q->routes[i].line);
                break;
            }
        }
    }
    if (get_required_str(x, e, e, &sc, "plugin", &r->plugin) == 0) {
        check_plugin_ref(x, c, config_setting_get_member(e, "plugin"), qsc, r->plugin);
    }
}

static void
parse_routes(struct ctx *x, const struct config *c, const config_setting_t *e,
             const struct scope *sc, struct config_queue *q)
{
    char tmp[64];
    config_setting_t *s = get_str(x, e, sc, "route_by", &q->route_by);
    if (s != NULL && !route_by_ok(q->route_by)) {
        problem(x, s, "%sroute_by '%s' must be a body path like \"a.b\" or \"attr:Name\"", sc->pfx,
                shown(q->route_by, tmp));
    }
    config_setting_t *list = member(x, e, sc, "routes", CONFIG_TYPE_LIST);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (list != NULL && n == 0) {
        problem(x, list, "%sroutes: needs at least one route", sc->pfx);
    }
    if (n == 0) {
        return;
    }
    q->routes = calloc((size_t) n, sizeof(*q->routes));
    if (q->routes == NULL) {
        problem(x, list, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *r = config_setting_get_elem(list, (unsigned) i);
        if (config_setting_type(r) != CONFIG_TYPE_GROUP) {
            problem(x, r, "%sroutes: entry %d: expected a group, got %s", sc->pfx, i + 1,
                    kind_name(config_setting_type(r)));
            continue;
        }
        parse_route(x, c, r, sc, q);
    }
}

/* Exactly one of `plugin` and `route_by` + `routes`. */
static void
parse_handler(struct ctx *x, const struct config *c, const config_setting_t *e,
              const struct scope *sc, struct config_queue *q)
{
    int has_plugin = config_setting_get_member(e, "plugin") != NULL;
    int has_by = config_setting_get_member(e, "route_by") != NULL;
    int has_routes = config_setting_get_member(e, "routes") != NULL;
    if (has_plugin && (has_by || has_routes)) {
        problem(x, e, "%sset either 'plugin' or 'route_by' with 'routes', not both", sc->pfx);
    } else if (!has_plugin && !has_by && !has_routes) {
        problem(x, e, "%smissing 'plugin' (or 'route_by' with 'routes')", sc->pfx);
    } else if (has_by != has_routes) {
        problem(x, e, "%s'%s' needs '%s'", sc->pfx, has_by ? "route_by" : "routes",
                has_by ? "routes" : "route_by");
    }
    config_setting_t *s = get_str(x, e, sc, "plugin", &q->plugin);
    if (s != NULL) {
        check_plugin_ref(x, c, s, sc, q->plugin);
    }
    if (has_by || has_routes) {
        parse_routes(x, c, e, sc, q);
    }
}

/* url and dlq_url: both required, http(s), distinct, and a FIFO queue's
 * DLQ is a FIFO queue, a standard queue's a standard one (SQS's rule). */
static void
parse_queue_urls(struct ctx *x, const config_setting_t *e, const struct scope *sc,
                 struct config_queue *q)
{
    int ok = 1;
    if (get_required_str(x, e, e, sc, "url", &q->url) == 0) {
        check_http_url(x, config_setting_get_member(e, "url"), sc, "url", q->url);
        q->fifo = has_suffix(q->url, ".fifo");
    } else {
        ok = 0;
    }
    if (get_required_str(x, e, e, sc, "dlq_url", &q->dlq_url) == 0) {
        check_http_url(x, config_setting_get_member(e, "dlq_url"), sc, "dlq_url", q->dlq_url);
    } else {
        ok = 0;
    }
    if (!ok) {
        return;
    }
    const config_setting_t *s = config_setting_get_member(e, "dlq_url");
    if (strcmp(q->url, q->dlq_url) == 0) {
        problem(x, s, "%sdlq_url: must be another queue than url", sc->pfx);
    } else if (q->fifo && !has_suffix(q->dlq_url, ".fifo")) {
        problem(x, s, "%sdlq_url: must be a FIFO queue (ending in .fifo) like url", sc->pfx);
    } else if (!q->fifo && has_suffix(q->dlq_url, ".fifo")) {
        problem(x, s, "%sdlq_url: must be a standard queue like url, not a FIFO queue", sc->pfx);
    }
}

static void
parse_backoff(struct ctx *x, const config_setting_t *e, const struct scope *qsc,
              struct config_queue *q)
{
    struct scope sc;
    config_setting_t *g = member(x, e, qsc, "backoff", CONFIG_TYPE_GROUP);
    if (g == NULL) {
        return;
    }
    fmt_into(sc.owner, sizeof(sc.owner), "the backoff of %s", qsc->owner);
    fmt_into(sc.pfx, sizeof(sc.pfx), "%sbackoff.", qsc->pfx);
    check_unknown(x, g, backoff_keys, &sc);
    config_setting_t *b = get_int(x, g, &sc, "base", &q->backoff_base, 0, NO_MAX);
    config_setting_t *cp = get_int(x, g, &sc, "cap", &q->backoff_cap, 0, NO_MAX);
    if (q->backoff_cap < q->backoff_base) {
        problem(x,
                cp != NULL  ? cp
                : b != NULL ? b
                            : g,
                "%sbackoff.cap (%d) must be at least backoff.base (%d)", qsc->pfx, q->backoff_cap,
                q->backoff_base);
    }
}

static void
parse_queue_name(struct ctx *x, const struct config *c, const config_setting_t *e,
                 struct scope *sc, struct config_queue *q)
{
    char tmp[64];
    if (get_required_str(x, e, e, sc, "name", &q->name) != 0) {
        return;
    }
    const config_setting_t *s = config_setting_get_member(e, "name");
    if (!name_ok(q->name)) {
        problem(x, s, "%sname '%s' may only use letters, digits, '_', '.' and '-'", sc->pfx,
                shown(q->name, tmp));
        return;
    }
    for (size_t i = 0; i + 1 < c->nqueues; i++) {
        if (c->queues[i].name != NULL && strcmp(c->queues[i].name, q->name) == 0) {
            problem(x, s, "duplicate queue name '%s' (first at line %d)", q->name,
                    c->queues[i].line);
            break;
        }
    }
    scope_entry(sc, "queue '%s'", q->name);
}

static void
parse_queue(struct ctx *x, struct config *c, const config_setting_t *e, int idx)
{
    struct config_queue *q = &c->queues[c->nqueues++];
    struct scope sc;
    q->line = config_setting_source_line(e);
    q->concurrency = 8;
    q->receivers = 1;
    q->batch_size = SQS_RECEIVE_MAX;
    q->wait_time = SQS_WAIT_TIME_MAX;
    q->visibility_timeout = 30;
    q->max_attempts = 5;
    q->backoff_base = 2;
    q->backoff_cap = 300;
    scope_entry(&sc, "queue %d", idx);
    parse_queue_name(x, c, e, &sc, q);
    check_unknown(x, e, queue_keys, &sc);
    parse_queue_urls(x, e, &sc, q);
    parse_handler(x, c, e, &sc, q);
    get_int(x, e, &sc, "concurrency", &q->concurrency, 1, 1024);
    get_int(x, e, &sc, "receivers", &q->receivers, 1, 64);
    get_int(x, e, &sc, "batch_size", &q->batch_size, 1, SQS_RECEIVE_MAX);
    get_int(x, e, &sc, "wait_time", &q->wait_time, 0, SQS_WAIT_TIME_MAX);
    get_int(x, e, &sc, "visibility_timeout", &q->visibility_timeout, 1, SQS_VISIBILITY_MAX);
    get_int(x, e, &sc, "max_attempts", &q->max_attempts, 1, 1000);
    parse_backoff(x, e, &sc, q);
}

static void
parse_queues(struct ctx *x, const config_setting_t *root, struct config *c)
{
    config_setting_t *list = member(x, root, &top_scope, "queues", CONFIG_TYPE_LIST);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (n == 0) {
        if (list != NULL || config_setting_get_member(root, "queues") == NULL) {
            problem(x, list != NULL ? list : root, "queues: at least one queue is required");
        }
        return;
    }
    c->queues = calloc((size_t) n, sizeof(*c->queues));
    if (c->queues == NULL) {
        problem(x, list, "out of memory");
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned) i);
        if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
            problem(x, e, "queues: entry %d: expected a group, got %s", i + 1,
                    kind_name(config_setting_type(e)));
            continue;
        }
        parse_queue(x, c, e, i + 1);
    }
}

/* The defaults written in config.h and etc/twice.conf. */
static int
set_defaults(struct config *c, const char *file)
{
    c->workers = 2;
    c->drain_timeout = 30;
    c->max_message_bytes = SQS_MESSAGE_MAX_BYTES;
    c->log.level = TWICE_LOG_INFO;
    c->log.format = LOG_FORMAT_TEXT;
    c->idempotency.retention = 7 * 24 * 3600;
    c->idempotency.on_conflict = CONFIG_CONFLICT_SKIP;
    c->idempotency.lease_margin = 5;
    c->idempotency.janitor_interval = 60;
    c->idempotency.janitor_batch = 1000;
    c->alerts.dlq_check_interval = 60;
    c->alerts.repeat_after = 3600;
    c->alerts.webhook.timeout = 10;
    c->alerts.smtp.timeout = 30;
    c->file = strdup(file);
    c->plugin_dir = strdup(TWICE_DEFAULT_PLUGIN_DIR);
    c->idempotency.table = strdup(CONFIG_DEFAULT_TABLE);
    return c->file && c->plugin_dir && c->idempotency.table ? 0 : -1;
}

/* libconfig's own error: a syntax error, a duplicate setting, a missing
 * @include file. Its "file" is NULL for the main text. */
static void
report_parse_error(struct ctx *x, const config_t *cf)
{
    const char *text = config_error_text(cf) ? config_error_text(cf) : "unknown error";
    struct buf b = BUF_INIT;
    buf_puts(&b, "syntax error");
    if (strcmp(text, "syntax error") != 0) {
        buf_printf(&b, ": %s", text);
    }
    add_line(x, config_error_file(cf), config_error_line(cf), buf_str(&b));
    buf_free(&b);
}

/* Parse file (or text, named file) into cf; 0, or -1 with the problem added.
 * The main file is read through a stream so that reading it and passing
 * its text give the same settings and the same messages. */
static int
read_config(struct ctx *x, config_t *cf, const char *file, const char *text)
{
    int rc;
    if (text != NULL) {
        rc = config_read_string(cf, text);
    } else {
        FILE *fp = fopen(file, "r");
        if (fp == NULL) {
            char msg[256];
            snprintf(msg, sizeof(msg), "cannot read the configuration: %s", strerror(errno));
            add_line(x, NULL, 0, msg);
            return -1;
        }
        rc = config_read(cf, fp);
        fclose(fp);
    }
    if (rc != CONFIG_TRUE) {
        report_parse_error(x, cf);
        return -1;
    }
    return 0;
}

int
config_load(const char *file, const char *text, struct config **out, struct diag *d)
{
    struct ctx x = {file != NULL ? file : "(configuration)", NULL, d, 0};
    struct config *c = calloc(1, sizeof(*c));
    char *dir = config_dir(x.file);
    x.dir = dir;
    config_t cf;
    config_init(&cf);
    *out = NULL;
    if (c == NULL || dir == NULL || set_defaults(c, x.file) != 0) {
        diag_add(d, x.file, 0, "out of memory");
        x.errors++;
        goto done;
    }
    config_set_include_dir(&cf, dir);
    if (read_config(&x, &cf, x.file, text) != 0) {
        goto done;
    }
    const config_setting_t *root = config_root_setting(&cf);
    check_unknown(&x, root, top_keys, &top_scope);
    parse_top(&x, root, c);
    parse_log(&x, root, c);
    parse_aws(&x, root, c);
    parse_idempotency(&x, root, c);
    parse_alerts(&x, root, c);
    parse_metrics(&x, root, c);
    parse_plugins(&x, root, c);
    parse_queues(&x, root, c);
done:
    config_destroy(&cf);
    free(dir);
    if (x.errors > 0) {
        config_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static void
free_plugin(struct config_plugin *p)
{
    free(p->name);
    free(p->path);
    free(p->file);
    free(p->settings_file);
    for (size_t j = 0; j < p->nsettings; j++) {
        free(p->settings[j].name);
        free(p->settings[j].file);
        buf_free_secret(p->settings[j].value); /* API keys live here too */
    }
    free(p->settings);
}

static void
free_queue(struct config_queue *q)
{
    free(q->name);
    free(q->url);
    free(q->dlq_url);
    free(q->plugin);
    free(q->route_by);
    for (size_t j = 0; j < q->nroutes; j++) {
        free(q->routes[j].value);
        free(q->routes[j].plugin);
    }
    free(q->routes);
}

void
config_free(struct config *c)
{
    if (c == NULL) {
        return;
    }
    free(c->file);
    free(c->plugin_dir);
    free(c->user);
    free(c->user_file);
    free(c->log.file);
    free(c->aws.region);
    free(c->aws.endpoint);
    free(c->aws.profile);
    free(c->aws.ca_file);
    buf_free_secret(c->idempotency.dsn);
    free(c->idempotency.table);
    buf_free_secret(c->alerts.webhook.url); /* chat webhook URLs carry a token */
    buf_free_secret(c->alerts.webhook.header);
    buf_free_secret(c->alerts.smtp.url); /* may hold user:password@ */
    free(c->alerts.smtp.from);
    for (size_t i = 0; i < c->alerts.smtp.nto; i++) {
        free(c->alerts.smtp.to[i]);
    }
    free(c->alerts.smtp.to);
    free(c->alerts.smtp.username);
    buf_free_secret(c->alerts.smtp.password);
    free(c->metrics.listen);
    for (size_t i = 0; i < c->nplugins; i++) {
        free_plugin(&c->plugins[i]);
    }
    free(c->plugins);
    for (size_t i = 0; i < c->nqueues; i++) {
        free_queue(&c->queues[i]);
    }
    free(c->queues);
    free(c);
}

const struct config_plugin *
config_find_plugin(const struct config *c, const char *name)
{
    for (size_t i = 0; c != NULL && name != NULL && i < c->nplugins; i++) {
        if (c->plugins[i].name != NULL && strcmp(c->plugins[i].name, name) == 0) {
            return &c->plugins[i];
        }
    }
    return NULL;
}

const struct config_queue *
config_find_queue(const struct config *c, const char *name)
{
    for (size_t i = 0; c != NULL && name != NULL && i < c->nqueues; i++) {
        if (c->queues[i].name != NULL && strcmp(c->queues[i].name, name) == 0) {
            return &c->queues[i];
        }
    }
    return NULL;
}

int
config_restart_needed(const struct config *old, const struct config *new_, struct diag *d)
{
    const char *was = old->user, *now = new_->user;
    if (was == now || (was != NULL && now != NULL && strcmp(was, now) == 0)) {
        return 0;
    }
    if (was != NULL) {
        diag_add(d, new_->user_file != NULL ? new_->user_file : new_->file, new_->user_line,
                 "user: changing it needs a restart (reload keeps '%s')", was);
    } else {
        diag_add(d, new_->user_file != NULL ? new_->user_file : new_->file, new_->user_line,
                 "user: changing it needs a restart (reload keeps the current user)");
    }
    return 1;
}
