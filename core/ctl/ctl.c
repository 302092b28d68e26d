/*
 * ctl.c - the shared context of twicectl's subcommands (ctl.h): the
 * configuration, SQS and PostgreSQL connections made from it on first use,
 * option and error conventions, and output helpers (escaped cells, aligned
 * tables, JSON). Not any subcommand's own logic.
 */
#include "ctl.h"

#include "cnum.h"
#include "sqs_setup.h"

#include "buf.h"
#include "config.h"
#include "creds.h"
#include "diag.h"
#include "escape.h"
#include "idem.h"
#include "s3.h"
#include "sqs.h"
#include "sqsname.h"
#include "utf8.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* "twicectl: " and the message, escaped as a diagnostic line is: a path
 * (the -c FILE, the configuration's), a name or a server's text in it
 * cannot split the line or drive the terminal. */
static void
say_escaped(const char *prefix, const char *fmt, va_list ap)
{
    struct buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    diag_print_line(stderr, "twicectl: %s%s", prefix, b.failed ? "out of memory" : buf_str(&b));
    buf_free(&b);
}

int
ctl_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_escaped("", fmt, ap);
    va_end(ap);
    return CTL_FAIL;
}

int
ctl_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s: ", cmd);
    say_escaped(prefix, fmt, ap);
    fprintf(stderr, "see 'twicectl %s --help'\n", cmd);
    va_end(ap);
    return CTL_USAGE;
}

int
ctl_sqs_fail(const char *queue, const char *action, const struct sqs_error *e)
{
    char what[1024];
    sqs_error_describe(e, action, what, sizeof(what));
    int late = e->transport && strcmp(e->code, "Timeout") == 0;
    return ctl_fail("queue %s: %s%s", queue, what,
                    late ? "; --timeout SECONDS gives it longer" : "");
}

const struct config *
ctl_config(struct ctl *c)
{
    if (c->cfg != NULL) {
        return c->cfg;
    }
    const char *path = c->config_path != NULL ? c->config_path : TWICE_DEFAULT_CONFIG;
    struct diag d = DIAG_INIT;
    if (config_load(path, NULL, &c->cfg, &d) != 0) {
        for (size_t i = 0; i < d.n; i++) {
            fprintf(stderr, "%s\n", d.lines[i]);
        }
        ctl_fail("%s: the configuration has problems (listed above)%s", path,
                 c->config_path == NULL ? "; use -c FILE for another file" : "");
        c->cfg = NULL;
    }
    diag_free(&d);
    return c->cfg;
}

struct sqs_client *
ctl_sqs(struct ctl *c)
{
    if (c->sqs != NULL) {
        return c->sqs;
    }
    const struct config *cfg = ctl_config(c);
    if (cfg == NULL) {
        return NULL;
    }
    char err[512];
    c->endpoint = calloc(1, sizeof(*c->endpoint));
    if (c->endpoint == NULL) {
        ctl_fail("out of memory");
        return NULL;
    }
    if (sqs_setup(cfg, c->endpoint, &c->creds, err, sizeof(err)) != 0) {
        ctl_fail("%s", err);
        return NULL;
    }
    c->sqs = sqs_client_new(c->endpoint, c->creds);
    if (c->sqs == NULL) {
        ctl_fail("cannot set up the SQS client (out of memory?)");
        return NULL;
    }
    sqs_client_set_timeout(c->sqs,
                           c->timeout_ms > 0 ? c->timeout_ms : CTL_DEFAULT_TIMEOUT * 1000L);
    return c->sqs;
}

struct s3_client *
ctl_s3(struct ctl *c)
{
    char err[512];
    if (c->s3 != NULL || ctl_sqs(c) == NULL) {
        return c->s3;
    }
    if (s3_client_new(c->cfg->aws.s3_endpoint, c->endpoint->region, c->cfg->aws.ca_file, c->creds,
                      &c->s3, err, sizeof(err)) != 0) {
        ctl_fail("%s", err);
    }
    return c->s3;
}

struct idem_store *
ctl_store(struct ctl *c)
{
    if (c->store != NULL) {
        return c->store;
    }
    const struct config *cfg = ctl_config(c);
    if (cfg == NULL) {
        return NULL;
    }
    char err[1024], owner[128], host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(owner, sizeof(owner), "twicectl:%s:%d", host, (int) getpid());
    long limit = c->timeout_ms > 0 ? c->timeout_ms : CTL_DEFAULT_TIMEOUT * 1000L;
    if (idem_open_bounded(cfg->idempotency.dsn, cfg->idempotency.table, owner, limit, &c->store,
                          err, sizeof(err)) != 0) {
        ctl_fail("%s", err);
        idem_close(c->store);
        c->store = NULL;
    }
    return c->store;
}

/* What the table of suffix holds, for a message about it. */
static const char *
table_noun(const char *suffix)
{
    return strcmp(suffix, "_outbox") == 0  ? "outbox table"
           : strcmp(suffix, "_pause") == 0 ? "pause table"
                                           : "key table";
}

/* "no key table T in schema S of database D", escaped for a terminal. */
static void
missing_table(struct buf *out, const struct ctl *c, const char *suffix,
              const struct idem_place *at)
{
    struct buf table = BUF_INIT;
    buf_printf(&table, "%s%s", c->cfg->idempotency.table, suffix);
    buf_printf(out, "no %s ", table_noun(suffix));
    ctl_escape(out, buf_str(&table), table.len, 0);
    if (at->schema[0] != '\0') {
        buf_puts(out, " in schema ");
        ctl_escape(out, at->schema, strlen(at->schema), 0);
        buf_puts(out, " of database ");
        ctl_escape(out, at->database, strlen(at->database), 0);
    } else {
        buf_puts(out, " in database ");
        ctl_escape(out, at->database, strlen(at->database), 0);
        buf_puts(out, " (no schema of its search_path ");
        ctl_escape(out, at->search_path, strlen(at->search_path), 0);
        buf_puts(out, " exists)");
    }
    buf_free(&table);
}

/* Whether the table of suffix is there for cmd: 1, 0 (a missing table
 * described in *missing), -1 after printing why it cannot be known. */
static int
table_there(struct ctl *c, struct idem_store *s, const char *cmd, const char *suffix,
            struct buf *missing)
{
    struct idem_place at;
    char err[1024];
    int exists = idem_table_exists(s, suffix, &at, err, sizeof(err));
    if (exists < 0) {
        ctl_fail("%s: %s", cmd, err);
    } else if (exists == 0) {
        missing_table(missing, c, suffix, &at);
    }
    return exists;
}

struct idem_store *
ctl_store_table(struct ctl *c, const char *cmd, const char *suffix)
{
    struct idem_store *s = ctl_store(c);
    struct buf missing = BUF_INIT;
    int there = s != NULL ? table_there(c, s, cmd, suffix, &missing) : -1;
    if (there == 0) {
        ctl_fail("%s: %s: twiced creates it when it first starts; if twiced has run, check "
                 "idempotency.dsn (the database, and its search_path) and idempotency.table in %s",
                 cmd, buf_str(&missing), c->cfg->file);
    }
    buf_free(&missing);
    return there > 0 ? s : NULL;
}

struct idem_store *
ctl_store_ahead(struct ctl *c, const char *cmd)
{
    struct idem_store *s = ctl_store(c);
    struct buf missing = BUF_INIT;
    int there = s != NULL ? table_there(c, s, cmd, "", &missing) : -1;
    if (there == 0) {
        fprintf(stderr,
                "twicectl: %s: warning: %s: no twiced has run against this database yet; one "
                "started with %s will honour this, but if twiced has run, it reads another "
                "database (check idempotency.dsn and idempotency.table)\n",
                cmd, buf_str(&missing), c->cfg->file);
    }
    buf_free(&missing);
    return there >= 0 ? s : NULL;
}

const struct config_queue *
ctl_queue(struct ctl *c, const char *name_or_url, int dlq)
{
    const struct config *cfg = ctl_config(c);
    if (cfg == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < cfg->nqueues; i++) {
        const struct config_queue *q = &cfg->queues[i];
        /* a URL as the console or another SDK writes it is the same queue */
        if (strcmp(q->name, name_or_url) == 0 || sqs_queue_url_same(q->url, name_or_url) ||
            (dlq && sqs_queue_url_same(q->dlq_url, name_or_url))) {
            return q;
        }
    }
    struct buf names = BUF_INIT;
    for (size_t i = 0; i < cfg->nqueues; i++) {
        buf_printf(&names, "%s%s", i > 0 ? ", " : "", cfg->queues[i].name);
    }
    char shown[CTL_ARG_SIZE];
    ctl_fail("no queue named '%s'%s in %s (configured: %s)", ctl_arg(shown, name_or_url),
             dlq ? ", nor with that url or dlq_url," : " or with that url", cfg->file,
             names.len > 0 ? buf_str(&names) : "none");
    buf_free(&names);
    return NULL;
}

void
ctl_close(struct ctl *c)
{
    sqs_client_free(c->sqs);
    s3_client_free(c->s3);
    c->s3 = NULL;
    if (c->endpoint != NULL) {
        sqs_endpoint_free(c->endpoint);
        free(c->endpoint);
    }
    creds_chain_free(c->creds);
    idem_close(c->store);
    config_free(c->cfg);
    c->sqs = NULL;
    c->endpoint = NULL;
    c->creds = NULL;
    c->store = NULL;
    c->cfg = NULL;
}

int
ctl_option(struct ctl *c, const char *cmd, const char *help, int opt, int argc, char **argv)
{
    switch (opt) {
    case 'h':
        fputs(help, stdout);
        return CTL_OK;
    case 'c':
        c->config_path = optarg;
        return -1;
    case 'J':
        c->json = 1;
        return -1;
    case 'T': {
        long s = ctl_number(cmd, "--timeout", optarg, CTL_MAX_TIMEOUT);
        if (s < 0) {
            return CTL_USAGE;
        }
        c->timeout_ms = s * 1000L;
        return -1;
    }
    case ':': {
        char shown[CTL_ARG_SIZE];
        return ctl_usage_error(cmd, "%s needs a value", ctl_arg(shown, argv[optind - 1]));
    }
    default:
        if (optopt != 0) {
            return ctl_usage_error(cmd, "unknown option -%c", optopt);
        }
        char shown[CTL_ARG_SIZE];
        return ctl_usage_error(cmd, "unknown option %s",
                               optind - 1 < argc ? ctl_arg(shown, argv[optind - 1]) : "?");
    }
}

long
ctl_number(const char *cmd, const char *opt, const char *value, long max)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(value, &end, 10);
    if (errno != 0 || end == value || *end != '\0' || n < 1 || n > max) {
        char shown[CTL_ARG_SIZE];
        ctl_usage_error(cmd, "%s: expected a number from 1 to %ld, got '%s'", opt, max,
                        ctl_arg(shown, value));
        return -1;
    }
    return n;
}

/* For a terminal: quotes stay as they are (unlike escape_text), control
 * bytes, bidirectional controls, backslashes and bytes that are not UTF-8
 * are escaped. */
void
ctl_escape(struct buf *b, const char *s, size_t len, size_t max)
{
    const unsigned char *p = (const unsigned char *) s;
    size_t off = 0, chars = 0;
    while (off < len && (max == 0 || chars < max)) {
        size_t l = p[off] >= 0x80 ? utf8_seq_len(p + off, len - off) : 1;
        unsigned bidi = l > 1 ? escape_bidi_control(p + off, l) : 0;
        if (l == 2 && p[off] == 0xc2 && p[off + 1] < 0xa0) {
            buf_printf(b, "\\u%04x", p[off + 1]); /* C1 controls: a terminal acts on them */
        } else if (bidi != 0) {
            buf_printf(b, "\\u%04x", bidi);
        } else if (l > 1) {
            buf_append(b, p + off, l);
        } else if (p[off] == '\\') {
            buf_puts(b, "\\\\");
        } else if (p[off] == '\n') {
            buf_puts(b, "\\n");
        } else if (p[off] == '\t') {
            buf_puts(b, "\\t");
        } else if (p[off] == '\r') {
            buf_puts(b, "\\r");
        } else if (p[off] < 0x20 || p[off] >= 0x7f) {
            buf_printf(b, "\\x%02x", p[off]);
        } else {
            buf_putc(b, (char) p[off]);
        }
        off += l > 0 ? l : 1;
        chars++;
    }
    if (off < len) {
        buf_puts(b, "...");
    }
}

const char *
ctl_arg(char out[CTL_ARG_SIZE], const char *s)
{
    struct buf b = BUF_INIT;
    ctl_escape(&b, s, strlen(s), CTL_ARG_CHARS);
    snprintf(out, CTL_ARG_SIZE, "%s", b.failed ? "?" : buf_str(&b));
    buf_free(&b);
    return out;
}

int
ctl_print_json(json_t *v)
{
    if (v == NULL) {
        return ctl_fail("out of memory");
    }
    int rc = json_dumpf(v, stdout, JSON_INDENT(2)) == 0 && fputc('\n', stdout) != EOF ? CTL_OK
                                                                                      : CTL_FAIL;
    json_decref(v);
    if (rc != CTL_OK || fflush(stdout) != 0) {
        return ctl_fail("writing the output: %s", cnum_strerror(errno));
    }
    return CTL_OK;
}

void
ctl_time(long long t, char *out, size_t cap)
{
    if (t <= 0) {
        snprintf(out, cap, "-");
        return;
    }
    struct tm tm;
    time_t tt = (time_t) t;
    gmtime_r(&tt, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* ---- tables ---- */

struct ctl_table {
    size_t ncols;
    char **cells; /* row-major, headers first */
    size_t nrows;
    size_t cap;
    int failed;
};

struct ctl_table *
ctl_table_new(size_t ncols, const char *const *headers)
{
    struct ctl_table *t = calloc(1, sizeof(*t));
    if (t != NULL) {
        t->ncols = ncols;
        ctl_table_add(t, headers);
    }
    return t;
}

void
ctl_table_add(struct ctl_table *t, const char *const *cells)
{
    if (t == NULL || t->failed) {
        return;
    }
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, cap * t->ncols * sizeof(*grown));
        if (grown == NULL) {
            t->failed = 1;
            return;
        }
        t->cells = grown;
        t->cap = cap;
    }
    char **row = &t->cells[t->nrows * t->ncols];
    for (size_t i = 0; i < t->ncols; i++) {
        row[i] = strdup(cells[i] != NULL ? cells[i] : "-");
        t->failed |= row[i] == NULL;
    }
    t->nrows++;
}

/* Display width: UTF-8 characters (escaping left only printable ones). */
static size_t
width(const char *s)
{
    size_t w = 0;
    for (; *s != '\0'; s++) {
        w += ((unsigned char) *s & 0xc0) != 0x80;
    }
    return w;
}

int
ctl_table_print(struct ctl_table *t)
{
    if (t == NULL || t->failed) {
        for (size_t i = 0; t != NULL && i < t->nrows * t->ncols; i++) {
            free(t->cells[i]);
        }
        if (t != NULL) {
            free(t->cells);
            free(t);
        }
        return ctl_fail("out of memory");
    }
    size_t *w = calloc(t->ncols, sizeof(*w));
    for (size_t r = 0; w != NULL && r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            size_t cw = width(t->cells[r * t->ncols + i]);
            w[i] = cw > w[i] ? cw : w[i];
        }
    }
    for (size_t r = 0; w != NULL && r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            const char *cell = t->cells[r * t->ncols + i];
            int last = i + 1 == t->ncols;
            printf("%s%*s", cell, last ? 0 : (int) (w[i] - width(cell) + 2), "");
        }
        putchar('\n');
    }
    for (size_t i = 0; i < t->nrows * t->ncols; i++) {
        free(t->cells[i]);
    }
    free(t->cells);
    free(t);
    int rc = w != NULL && fflush(stdout) == 0 ? CTL_OK : ctl_fail("writing the output failed");
    free(w);
    return rc;
}

int
ctl_read_stdin(struct buf *b)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
        if (buf_append(b, chunk, n) != 0) {
            ctl_fail("reading the body: out of memory");
            return -1;
        }
    }
    if (ferror(stdin)) {
        ctl_fail("reading the body from standard input: %s", cnum_strerror(errno));
        return -1;
    }
    return 0;
}

int
ctl_parse_attr(char *arg, struct sqs_attr *a)
{
    char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg) {
        return -1;
    }
    *eq = '\0';
    memset(a, 0, sizeof(*a));
    a->name = arg;
    a->data_type = "String";
    a->string_value = eq + 1;
    return 0;
}
