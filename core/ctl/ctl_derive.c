/*
 * ctl_derive.c - `twicectl key derive`: the key a message would get on a
 * queue and where its template comes from, or why it would be
 * dead-lettered: a tool for designing keys. It walks the daemon's own path
 * (plugin/keying.c, hostapi_derive_key), so the key it prints is the key
 * twiced stores. Plugin code (loading, init, derive_key) runs only in a
 * child (ctl_child.c). Nothing is sent and nothing is stored.
 */
#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "ctl.h"
#include "diag.h"
#include "hostapi.h"
#include "instance.h"
#include "job.h"
#include "keying.h"
#include "keytmpl.h"
#include "loader.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DERIVE_TIMEOUT 30 /* seconds the child may take (init included) */

static const char derive_help[] =
    "usage: twicectl key derive --queue Q [--attr NAME=VALUE]... [--group G] [--json]\n"
    "                           [BODY | -]\n"
    "\n"
    "Print the idempotency key that a message with BODY (standard input with - or\n"
    "without BODY) and these attributes would get on queue Q, and how: the plugin\n"
    "it is routed to, the key template and where it comes from (the queue's key,\n"
    "a plugin setting, the plugin's template) or the plugin's derive_key(). A\n"
    "message that would be dead-lettered (too large, no route, no key field, not\n"
    "JSON, bad envelope...) prints the reason instead and exits 1. The queue's\n"
    "envelope is unwrapped and a payload kept in S3 is fetched, as twiced does.\n"
    "The plugin is loaded in a separate process, with its configured settings;\n"
    "init() runs only for a derive_key() plugin. Nothing is sent and nothing is\n"
    "stored.\n"
    "\n"
    "  --queue Q          a configured queue's name or url\n"
    "  --attr NAME=VALUE  a String message attribute ({attr:NAME}; repeatable)\n"
    "  --group G          the MessageGroupId ({msg:group}); required on FIFO queues\n"
    "  --json             print one object: queue, plugin, route, key or\n"
    "                     dead_letter {reason, detail}, template, source, where\n";

/* What the command is asked; attrs borrow from argv. */
struct derive_args {
    const char *queue;
    struct sqs_attr attrs[CTL_MAX_ATTRS];
    size_t nattrs;
    const char *group;
    const char *body; /* NULL or "-": standard input */
};

static int
parse_args(struct ctl *c, int argc, char **argv, struct derive_args *a)
{
    static const struct option longopts[] = {
        {"queue", 1, NULL, 'q'},
        {"attr", 1, NULL, 'a'},
        {"group", 1, NULL, 'g'},
        CTL_LONG_OPTIONS,
    };
    int opt, rc;
    char shown[CTL_ARG_SIZE];
    memset(a, 0, sizeof(*a));
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'q') {
            a->queue = optarg;
        } else if (opt == 'a' && a->nattrs == CTL_MAX_ATTRS) {
            return ctl_usage_error("key derive", "at most %d attributes", CTL_MAX_ATTRS);
        } else if (opt == 'a' && ctl_parse_attr(optarg, &a->attrs[a->nattrs++]) != 0) {
            return ctl_usage_error("key derive", "--attr: expected NAME=VALUE, got '%s'",
                                   ctl_arg(shown, optarg));
        } else if (opt == 'g') {
            a->group = optarg;
        } else if (opt != 'a' &&
                   (rc = ctl_option(c, "key derive", derive_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (a->queue == NULL) {
        return ctl_usage_error("key derive", "--queue Q is required");
    }
    if (argc - optind > 1) {
        return ctl_usage_error("key derive", "expected one BODY (or - for standard input)");
    }
    a->body = optind < argc ? argv[optind] : NULL;
    return -1;
}

/* A copy of s, or NULL for NULL; *failed set when out of memory. */
static char *
dup_or_null(const char *s, int *failed)
{
    char *d = s != NULL ? strdup(s) : NULL;
    *failed |= s != NULL && d == NULL;
    return d;
}

/* Free the strings of a message make_job built (no batch owns them, so
 * sqs_message_clear would not) and zero it. */
static void
free_message(struct sqs_message *m)
{
    for (size_t i = 0; m->attrs != NULL && i < m->nattrs; i++) {
        free(m->attrs[i].name);
        free(m->attrs[i].data_type);
        free(m->attrs[i].string_value);
    }
    free(m->attrs);
    free(m->body);
    free(m->message_id);
    free(m->group_id);
    memset(m, 0, sizeof(*m));
}

/* A job of make_job, its message's strings included. */
static void
free_job(struct twice_job *j)
{
    if (j != NULL) {
        free_message(&j->msg);
        job_free(j);
    }
}

/* The message as SQS would hand it to a receiver: its strings owned by the
 * job (free_job frees them). NULL when out of memory. */
static struct twice_job *
make_job(const struct config_queue *qc, const struct derive_args *a, struct buf *body)
{
    struct sqs_message m = {.receive_count = 1};
    int failed = 0;
    m.body_len = body->len;
    m.body = buf_steal(body);
    m.message_id = dup_or_null("twicectl-key-derive", &failed);
    m.group_id = dup_or_null(a->group, &failed);
    m.attrs = calloc(a->nattrs ? a->nattrs : 1, sizeof(*m.attrs));
    for (size_t i = 0; m.attrs != NULL && i < a->nattrs; i++, m.nattrs++) {
        m.attrs[i].name = dup_or_null(a->attrs[i].name, &failed);
        m.attrs[i].data_type = dup_or_null(a->attrs[i].data_type, &failed);
        m.attrs[i].string_value = dup_or_null(a->attrs[i].string_value, &failed);
    }
    struct twice_job *j = NULL;
    if (!failed && m.body != NULL && m.attrs != NULL) {
        j = job_new(NULL, qc, &m);
    }
    free_message(&m); /* zeroed by job_new when it took it */
    return j;
}

/* "FILE:LINE", or FILE alone when line is 0. */
static json_t *
where_json(const char *file, int line)
{
    if (file == NULL) {
        return json_null();
    }
    return line > 0 ? json_sprintf("%s:%d", file, line) : json_string(file);
}

/* The key of j (the plugin instance p, the queue's compiled key qt) or its
 * dead letter, added to r. */
static void
add_outcome(json_t *r, const struct plugin_instance *p, const struct keytmpl *qt,
            struct twice_job *j)
{
    struct buf key = BUF_INIT;
    if (hostapi_derive_key(p, qt, j, &key) == 0) {
        json_object_set_new(r, "key", json_stringn(buf_str(&key), key.len));
    } else {
        json_object_set_new(r, "dead_letter",
                            json_pack("{s:s,s:s?}", "reason", j->reason, "detail", j->error));
    }
    buf_free(&key);
}

/* The plugin's own key source, from its file and configured settings: an
 * error text in r, or the outcome. Runs in the child. */
static void
add_plugin_key(json_t *r, const struct config *cfg, const struct config_plugin *cp,
               struct twice_job *j)
{
    struct plugin_instance p = {.cfg = cp, .name = cp->name};
    struct diag d = DIAG_INIT;
    char err[1024], src[128];
    if (loader_open(cp->path, &p.lp, err, sizeof(err)) != 0) {
        json_object_set_new(r, "error", json_string(err));
        return;
    }
    if (loader_check_settings(&p.lp, cp, cfg->file, &d) > 0 ||
        keying_check_queues(cfg, cp->name, &p.lp, &d) > 0) {
        json_object_set_new(r, "error", json_string(d.n > 0 ? d.lines[0] : "bad settings"));
    } else {
        json_object_set_new(r, "source",
                            json_string(keying_source_name(keying_source(&p.lp, NULL))));
        json_object_set_new(r, "source_detail",
                            json_string(loader_key_source(&p.lp, src, sizeof(src))));
        json_object_set_new(r, "template",
                            p.lp.key_text != NULL ? json_string(p.lp.key_text) : json_null());
        json_object_set_new(r, "where",
                            p.lp.key == LOADER_KEY_SETTING
                                ? where_json(p.lp.key_file, p.lp.key_line)
                                : where_json(cp->path, 0));
        if (p.lp.key == LOADER_KEY_DERIVE && hostapi_init(&p, cfg->file, err, sizeof(err)) != 0) {
            json_object_set_new(r, "error", json_string(err));
        } else {
            add_outcome(r, &p, NULL, j);
            hostapi_fini(&p);
        }
    }
    diag_free(&d);
    loader_release(&p.lp);
}

/* The queue's own key: no plugin code needed. */
static void
add_queue_key(json_t *r, const struct config *cfg, const struct config_queue *qc,
              struct twice_job *j)
{
    struct plugin_instance p = {.name = keying_route_plugin(qc, KEYING_QUEUE_PLUGIN)};
    struct keytmpl *qt = NULL;
    char err[512];
    if (keying_queue_key(qc, &qt, err, sizeof(err)) != 0) {
        json_object_set_new(r, "error", json_string(err));
        return;
    }
    json_object_set_new(r, "source", json_string(keying_source_name(KEYING_QUEUE)));
    json_object_set_new(r, "source_detail", json_string("the queue's key"));
    json_object_set_new(r, "template", json_string(qc->key));
    json_object_set_new(r, "where",
                        where_json(qc->file != NULL ? qc->file : cfg->file, qc->key_line));
    add_outcome(r, &p, qt, j);
    keytmpl_free(qt);
}

/* What a derivation needs, in the parent and in the child. */
struct derive_run {
    const struct config *cfg;
    const struct config_queue *qc;
    struct twice_job *j;
    int route;
};

/* The report, as the --json output has it (NULL when out of memory). */
static json_t *
report(const struct derive_run *dr)
{
    const struct config_queue *qc = dr->qc;
    json_t *r = json_pack("{s:s}", "queue", qc->name);
    if (r == NULL || dr->route == KEYING_NO_ROUTE) {
        if (r != NULL) {
            json_object_set_new(
                r, "dead_letter",
                json_pack("{s:s,s:s?}", "reason", dr->j->reason, "detail", dr->j->error));
        }
        return r;
    }
    const char *plugin = keying_route_plugin(qc, dr->route);
    json_object_set_new(r, "plugin", json_string(plugin));
    json_object_set_new(r, "route",
                        dr->route == KEYING_QUEUE_PLUGIN
                            ? json_null()
                            : json_sprintf("%s = %s", qc->route_by, qc->routes[dr->route].value));
    if (qc->key != NULL) {
        add_queue_key(r, dr->cfg, qc, dr->j);
    } else {
        add_plugin_key(r, dr->cfg, config_find_plugin(dr->cfg, plugin), dr->j);
    }
    return r;
}

/* In the child: the report as JSON on standard output. It works in the
 * configuration's directory, as twiced does, so a relative path in a
 * plugin's settings means what it means to twiced. */
static void
child_report(void *arg)
{
    const struct derive_run *dr = arg;
    if (dr->cfg->dir != NULL && chdir(dr->cfg->dir) != 0) {
        fprintf(stderr, "twicectl: key derive: cannot enter %s: %s\n", dr->cfg->dir,
                cnum_strerror(errno));
        _exit(3);
    }
    json_t *r = report(arg);
    if (r == NULL || json_dumpf(r, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) != 0) {
        _exit(3);
    }
    json_decref(r);
}

/* The report made by a child; NULL after printing why. */
static json_t *
report_in_child(struct derive_run *dr)
{
    struct buf out = BUF_INIT;
    int failed = 0, status = ctl_child(child_report, dr, DERIVE_TIMEOUT, &out, &failed);
    json_t *r = NULL;
    if (failed) {
        /* printed */
    } else if (status == -1) {
        ctl_fail("key derive: the plugin did not finish within %ds", DERIVE_TIMEOUT);
    } else if (WIFSIGNALED(status)) {
        ctl_fail("key derive: the plugin crashed with signal %d (%s)", WTERMSIG(status),
                 cnum_strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) != 0 || (r = json_loads(buf_str(&out), 0, NULL)) == NULL) {
        ctl_fail("key derive: the check failed with exit code %d", WEXITSTATUS(status));
    }
    buf_free(&out);
    return r;
}

/* One "name: value" line, the value escaped for a terminal. */
static void
print_field(const char *name, const char *value)
{
    struct buf b = BUF_INIT;
    ctl_escape(&b, value, strlen(value), 0);
    printf("%-13s%s\n", name, buf_str(&b));
    buf_free(&b);
}

static const char *
member(const json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

static void
print_report(const json_t *r)
{
    const json_t *dl = json_object_get(r, "dead_letter");
    print_field("queue:", member(r, "queue"));
    if (member(r, "plugin") != NULL) {
        struct buf p = BUF_INIT;
        const char *route = member(r, "route");
        buf_printf(&p, "%s (%s%s)", member(r, "plugin"), route ? "route " : "the queue's plugin",
                   route ? route : "");
        print_field("plugin:", buf_str(&p));
        buf_free(&p);
    }
    if (member(r, "source") != NULL) {
        const char *tmpl = member(r, "template"), *where = member(r, "where");
        print_field("template:",
                    tmpl != NULL ? tmpl : "none: the plugin's derive_key() computes it");
        struct buf s = BUF_INIT;
        buf_printf(&s, "%s%s%s%s", member(r, "source_detail"), where ? " (" : "",
                   where ? where : "", where ? ")" : "");
        print_field("source:", buf_str(&s));
        buf_free(&s);
    }
    if (dl != NULL) {
        struct buf d = BUF_INIT;
        const char *detail = member(dl, "detail");
        buf_printf(&d, "%s%s%s", member(dl, "reason"), detail ? ": " : "", detail ? detail : "");
        print_field("dead letter:", buf_str(&d));
        buf_free(&d);
    } else {
        print_field("key:", member(r, "key"));
    }
}

/* S3, for a message whose payload is there (the daemon fetches it too). */
static struct s3_client *
derive_s3(void *arg)
{
    return ctl_s3(arg);
}

/* Report on the prepared job: unwrapped, fetched and routed here, keyed
 * here or in a child. */
static int
derive_and_print(struct ctl *c, struct derive_run *dr)
{
    json_t *r = NULL;
    int shaped = KEYING_DEAD;
    if (keying_check_size(dr->j, dr->cfg->max_message_bytes) == 0) {
        shaped = keying_shape(dr->j, derive_s3, c, dr->cfg->max_payload_bytes);
    }
    if (shaped == KEYING_LATER) {
        return ctl_fail("key derive: %s", dr->j->error);
    }
    dr->route = shaped == KEYING_SHAPED ? keying_route(dr->j) : KEYING_NO_ROUTE;
    if (dr->route == KEYING_NO_ROUTE || dr->qc->key != NULL) {
        r = report(dr);
    } else {
        r = report_in_child(dr);
    }
    if (r == NULL) {
        return CTL_FAIL;
    }
    if (member(r, "error") != NULL) {
        int rc = ctl_fail("key derive: %s", member(r, "error"));
        json_decref(r);
        return rc;
    }
    int dead = json_object_get(r, "dead_letter") != NULL;
    if (c->json) {
        return ctl_print_json(r) == CTL_OK && !dead ? CTL_OK : CTL_FAIL;
    }
    print_report(r);
    json_decref(r);
    return fflush(stdout) == 0 && !dead ? CTL_OK : CTL_FAIL;
}

int
ctl_key_derive(struct ctl *c, int argc, char **argv)
{
    struct derive_args a;
    int rc = parse_args(c, argc, argv, &a);
    if (rc >= 0) {
        return rc;
    }
    const struct config *cfg = ctl_config(c);
    const struct config_queue *qc = cfg != NULL ? ctl_queue(c, a.queue, 0) : NULL;
    if (qc == NULL) {
        return CTL_FAIL;
    }
    if (qc->fifo && a.group == NULL) {
        return ctl_usage_error("key derive", "queue %s is a FIFO queue: --group is required",
                               qc->name);
    }
    struct buf body = BUF_INIT;
    int from_stdin = a.body == NULL || strcmp(a.body, "-") == 0;
    if (from_stdin ? ctl_read_stdin(&body) != 0 : buf_puts(&body, a.body) != 0) {
        buf_free(&body);
        return CTL_FAIL;
    }
    struct derive_run dr = {cfg, qc, make_job(qc, &a, &body), KEYING_NO_ROUTE};
    buf_free(&body);
    if (dr.j == NULL) {
        return ctl_fail("key derive: out of memory");
    }
    rc = derive_and_print(c, &dr);
    free_job(dr.j);
    return rc;
}
