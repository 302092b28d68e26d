/*
 * ctl_outbox.c - `twicectl outbox list|retry|delete`: the follow-up
 * messages handlers staged with api->send() that are waiting for the relay,
 * or that SQS refused for good, and sending refused ones again or dropping
 * them. Through outbox.h
 * only; never creates the table and never sends itself (the relay does).
 */
#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "outbox.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_DEFAULT_MAX 100
#define LIST_MAX         1000000
#define OUTBOX_ID_MAX    (512 + 16) /* a key, '#', an index */

static const char outbox_help[] =
    "usage: twicectl outbox list [--state pending|refused] [--max N] [--json]\n"
    "       twicectl outbox retry (ID... | --all)\n"
    "       twicectl outbox delete (ID... | --all)\n"
    "\n"
    "The follow-up messages handlers staged with send(), in the table\n"
    "<idempotency.table>_outbox: pending (the relay sends them soon) or refused\n"
    "(SQS refused them for good, e.g. the queue does not exist; they are kept).\n"
    "'twicectl outbox COMMAND --help' tells more.\n";

static const char list_help[] =
    "usage: twicectl outbox list [--state pending|refused] [--max N] [--json]\n"
    "\n"
    "List outbox messages, oldest first: id, state, target queue, twice-outbox-id\n"
    "(source key#index), age, send tries and the last error; at most N (default\n"
    "100). Bodies are not shown.\n";

static const char retry_help[] =
    "usage: twicectl outbox retry (ID... | --all)\n"
    "\n"
    "Make refused messages (by id, or all of them) pending again: the relay sends\n"
    "them at once. Fix the cause first (create the queue, grant sqs:SendMessage).\n"
    "Their twice-outbox-id is unchanged, so a receiver keyed on it still runs each\n"
    "once.\n";

static const char delete_help[] =
    "usage: twicectl outbox delete (ID... | --all)\n"
    "\n"
    "Drop refused messages (by id, or all of them) that are not to be sent at\n"
    "all. Only refused messages: a pending one is the relay's, and an id that is\n"
    "not a refused message is reported and left alone.\n";

typedef int (*refused_fn)(struct idem_store *, const char *, const long long *, size_t, long *,
                          long long *, size_t *, char *, size_t);

/* One command on refused rows. */
struct refused_cmd {
    const char *name; /* "outbox retry" */
    const char *help;
    refused_fn apply;
    const char *done; /* "pending again" */
};

static const struct refused_cmd retry_cmd = {"outbox retry", retry_help, outbox_retry,
                                             "pending again"};
static const struct refused_cmd delete_cmd = {"outbox delete", delete_help, outbox_delete,
                                              "deleted"};

static json_t *
row_json(const struct outbox_row *r)
{
    char created[32], id[OUTBOX_ID_MAX];
    ctl_time(r->created_at, created, sizeof(created));
    snprintf(id, sizeof(id), "%s#%d", r->key, r->idx);
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s?,s:i,s:s?,s:s}", "id", (json_int_t) r->id,
                     "state", r->state, "queue", r->queue, "queue_url", r->url, "twice_outbox_id",
                     id, "source_queue", r->source_queue, "plugin", r->plugin, "group_id",
                     r->group_id, "tries", r->tries, "error", r->error, "created_at", created);
}

static int
print_rows(const struct outbox_row *rows, size_t n)
{
    static const char *const head[] = {"ID",      "STATE", "QUEUE", "OUTBOX ID",
                                       "CREATED", "TRIES", "ERROR"};
    struct ctl_table *t = ctl_table_new(7, head);
    for (size_t i = 0; t != NULL && i < n; i++) {
        const struct outbox_row *r = &rows[i];
        char id[32], tries[16], created[32], oid[OUTBOX_ID_MAX];
        struct buf q = BUF_INIT, o = BUF_INIT, e = BUF_INIT;
        snprintf(id, sizeof(id), "%lld", r->id);
        snprintf(tries, sizeof(tries), "%d", r->tries);
        snprintf(oid, sizeof(oid), "%s#%d", r->key, r->idx);
        ctl_time(r->created_at, created, sizeof(created));
        ctl_escape(&q, r->queue, strlen(r->queue), 40);
        ctl_escape(&o, oid, strlen(oid), 60);
        ctl_escape(&e, r->error != NULL ? r->error : "-", r->error ? strlen(r->error) : 1, 80);
        const char *cells[] = {id,      r->state, buf_str(&q), buf_str(&o),
                               created, tries,    buf_str(&e)};
        ctl_table_add(t, cells);
        buf_free(&q);
        buf_free(&o);
        buf_free(&e);
    }
    return t != NULL ? ctl_table_print(t) : ctl_fail("out of memory");
}

static int
outbox_list_cmd(struct ctl *c, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"state", 1, NULL, 's'}, {"max", 1, NULL, 'm'}, CTL_LONG_OPTIONS};
    const char *state = NULL;
    long max = LIST_DEFAULT_MAX;
    int opt, rc;
    char shown[CTL_ARG_SIZE];
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 's') {
            state = optarg;
            if (strcmp(state, "pending") != 0 && strcmp(state, "refused") != 0) {
                return ctl_usage_error("outbox list", "--state: pending or refused, not '%s'",
                                       ctl_arg(shown, state));
            }
        } else if (opt == 'm') {
            if ((max = ctl_number("outbox list", "--max", optarg, LIST_MAX)) < 0) {
                return CTL_USAGE;
            }
        } else if ((rc = ctl_option(c, "outbox list", list_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc != optind) {
        return ctl_usage_error("outbox list", "unexpected argument '%s'",
                               ctl_arg(shown, argv[optind]));
    }
    struct idem_store *s = ctl_store_table(c, "outbox list", "_outbox");
    struct outbox_row *rows = NULL;
    size_t n = 0;
    char err[1024];
    if (s == NULL) {
        return CTL_FAIL;
    }
    if (outbox_list(s, c->cfg->idempotency.table, state, (int) max, &rows, &n, err, sizeof(err)) !=
        0) {
        return ctl_fail("%s", err);
    }
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; arr != NULL && i < n; i++) {
            json_array_append_new(arr, row_json(&rows[i]));
        }
        rc = ctl_print_json(arr);
    } else {
        rc = print_rows(rows, n);
    }
    outbox_rows_free(rows, n);
    return rc;
}

/* `outbox retry|delete (ID... | --all)`. */
static int
outbox_refused_cmd(struct ctl *c, const struct refused_cmd *cmd, int argc, char **argv)
{
    static const struct option longopts[] = {{"all", 0, NULL, 'a'}, CTL_LONG_OPTIONS};
    int all = 0, opt, rc;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'a') {
            all = 1;
        } else if ((rc = ctl_option(c, cmd->name, cmd->help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    size_t n = (size_t) (argc - optind);
    if ((n == 0) == (all == 0)) {
        return ctl_usage_error(cmd->name, "give message ids or --all (not both)");
    }
    long long *ids = calloc(n ? n : 1, sizeof(*ids));
    if (ids == NULL) {
        return ctl_fail("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        long v = ctl_number(cmd->name, "ID", argv[optind + (int) i], 0x7fffffffffffffffL);
        if (v < 0) {
            free(ids);
            return CTL_USAGE;
        }
        ids[i] = v;
    }
    struct idem_store *s = ctl_store_table(c, cmd->name, "_outbox");
    long long *missing = calloc(n ? n : 1, sizeof(*missing));
    size_t nmissing = 0;
    long changed = 0;
    char err[1024];
    rc = s == NULL || missing == NULL
             ? -1
             : cmd->apply(s, c->cfg->idempotency.table, ids, n, &changed, n ? missing : NULL,
                          &nmissing, err, sizeof(err));
    free(ids);
    if (rc != 0) {
        rc = s == NULL ? CTL_FAIL : ctl_fail("%s", missing == NULL ? "out of memory" : err);
        free(missing);
        return rc;
    }
    printf("%ld refused message%s %s\n", changed, changed == 1 ? "" : "s", cmd->done);
    for (size_t i = 0; i < nmissing; i++) {
        fprintf(stderr,
                "twicectl: %s: message %lld is not a refused message (pending, or no such id)\n",
                cmd->name, missing[i]);
    }
    free(missing);
    return nmissing > 0 ? CTL_FAIL : CTL_OK;
}

int
ctl_outbox(struct ctl *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(outbox_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CTL_USAGE : CTL_OK;
    }
    optind = 0;
    if (strcmp(argv[1], "list") == 0) {
        return outbox_list_cmd(c, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "retry") == 0) {
        return outbox_refused_cmd(c, &retry_cmd, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "delete") == 0) {
        return outbox_refused_cmd(c, &delete_cmd, argc - 1, argv + 1);
    }
    char shown[CTL_ARG_SIZE];
    return ctl_usage_error("outbox", "no outbox command '%s' (list, retry, delete)",
                           ctl_arg(shown, argv[1]));
}
