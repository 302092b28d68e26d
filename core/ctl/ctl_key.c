/*
 * ctl_key.c - `twicectl key show|list|forget`: finding an idempotency
 * record and removing the bad one, so its message can run again. Reads and
 * deletes through idem.h only; never creates or migrates the table. `key
 * derive` (designing keys, no database) is ctl_derive.c's.
 */
#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "idem.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_DEFAULT_MAX 100
#define LIST_MAX         1000000
#define KEY_CHARS        60

static const char key_help[] =
    "usage: twicectl key show KEY [--json]\n"
    "       twicectl key list [--prefix P] [--state STATE] [--max N] [--json]\n"
    "       twicectl key forget KEY --yes\n"
    "       twicectl key derive --queue Q [--attr NAME=VALUE]... [--group G] [BODY | -]\n"
    "\n"
    "See and remove idempotency records (the table idempotency.table); derive\n"
    "shows the key a message would get.\n"
    "'twicectl key COMMAND --help' tells more.\n";

static const char show_help[] =
    "usage: twicectl key show KEY [--json]\n"
    "\n"
    "Show one idempotency record: state, owner and lease (in progress), the message\n"
    "that claimed or completed it, payload hash, attempts (handler runs counted) and\n"
    "times. Exit code 1 when there is no such key.\n";

static const char list_help[] =
    "usage: twicectl key list [--prefix P] [--state STATE] [--max N] [--json]\n"
    "\n"
    "List idempotency records ordered by key: those starting with P (literally: %\n"
    "and _ are not wildcards), in the given state; at most N (default 100).\n"
    "States: in_progress (a job holds the key), released (retried: its attempts are\n"
    "kept for the next run), crashed (its last run crashed its worker), interrupted\n"
    "(its run was cut short when its worker went away), completed.\n";

static const char forget_help[] =
    "usage: twicectl key forget KEY --yes\n"
    "\n"
    "Delete the record of KEY, so the next message with that key runs its job\n"
    "again, from attempt 1. Forgetting a key in progress lets a second copy of its\n"
    "job run while the first may still be running. Exit code 1 when there is no\n"
    "such key.\n";

static const char *
table_name(struct ctl *c)
{
    return c->cfg != NULL ? c->cfg->idempotency.table : "?";
}

static json_t *
record_json(const struct idem_record *r)
{
    char lease[32], created[32], processed[32];
    ctl_time(r->lease_until, lease, sizeof(lease));
    ctl_time(r->created_at, created, sizeof(created));
    ctl_time(r->processed_at, processed, sizeof(processed));
    return json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:i,s:s?,s:s,s:s?}", "key", r->key, "state",
                     r->state, "owner", r->owner, "message_id", r->message_id, "payload_sha256",
                     r->sha256_hex[0] ? r->sha256_hex : NULL, "attempts", r->attempts,
                     "lease_until", r->lease_until ? lease : NULL, "created_at", created,
                     "processed_at", strcmp(r->state, "in_progress") != 0 ? processed : NULL);
}

/* s escaped for the terminal in b (reset first): keys and owners come from
 * messages and operators, and must not move the cursor or reorder a line. */
static const char *
esc(struct buf *b, const char *s)
{
    buf_reset(b);
    ctl_escape(b, s, strlen(s), 0);
    return buf_str(b);
}

/* One line per field, values escaped (keys and ids come from messages). */
static void
print_record(const struct idem_record *r)
{
    char t[32];
    struct buf b = BUF_INIT;
    ctl_escape(&b, r->key, strlen(r->key), 0);
    printf("key:            %s\n", buf_str(&b));
    printf("state:          %s\n", r->state);
    buf_reset(&b);
    ctl_escape(&b, r->message_id ? r->message_id : "-", r->message_id ? strlen(r->message_id) : 1,
               0);
    printf("message id:     %s\n", buf_str(&b));
    if (r->owner != NULL) {
        buf_reset(&b);
        ctl_escape(&b, r->owner, strlen(r->owner), 0);
        ctl_time(r->lease_until, t, sizeof(t));
        printf("owner:          %s\nlease until:    %s\n", buf_str(&b), t);
    }
    printf("attempts:       %d%s\n", r->attempts,
           strcmp(r->state, "in_progress") == 0 ? " (and the run in progress)" : "");
    printf("payload sha256: %s\n", r->sha256_hex[0] ? r->sha256_hex : "-");
    ctl_time(r->created_at, t, sizeof(t));
    printf("created:        %s\n", t);
    if (strcmp(r->state, "in_progress") != 0) {
        ctl_time(r->processed_at, t, sizeof(t));
        printf("%-16s%s\n", strcmp(r->state, "completed") == 0 ? "completed:" : "since:", t);
    }
    buf_free(&b);
}

/* Options of show and forget: one KEY, and --yes for forget. */
static int
one_key(struct ctl *c, int argc, char **argv, const char *cmd, const char *help, int *yes)
{
    static const struct option longopts[] = {{"yes", 0, NULL, 'y'}, CTL_LONG_OPTIONS};
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'y' && yes == NULL) {
            return ctl_usage_error(cmd, "unknown option --yes");
        } else if (opt == 'y') {
            *yes = 1;
        } else if ((rc = ctl_option(c, cmd, help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc - optind != 1) {
        return ctl_usage_error(cmd, "expected one KEY");
    }
    return -1;
}

static int
key_show(struct ctl *c, int argc, char **argv)
{
    int rc = one_key(c, argc, argv, "key show", show_help, NULL);
    if (rc >= 0) {
        return rc;
    }
    struct idem_store *s = ctl_store_table(c, "key show", "");
    struct idem_record r;
    char err[1024];
    if (s == NULL) {
        return CTL_FAIL;
    }
    int found = idem_key_show(s, argv[optind], &r, err, sizeof(err));
    if (found < 0) {
        return ctl_fail("%s", err);
    }
    if (found == 0) { /* the argument, not a key: cut as any repeated one */
        char shown[CTL_ARG_SIZE];
        return ctl_fail("key show: no key '%s' in table %s", ctl_arg(shown, argv[optind]),
                        table_name(c));
    }
    if (c->json) {
        rc = ctl_print_json(record_json(&r));
    } else {
        print_record(&r);
        rc = CTL_OK;
    }
    idem_record_clear(&r);
    return rc;
}

static int
print_list(const struct idem_record *r, size_t n)
{
    static const char *const head[] = {"KEY", "STATE", "ATTEMPTS", "MESSAGE ID", "UPDATED"};
    struct ctl_table *t = ctl_table_new(5, head);
    for (size_t i = 0; i < n; i++) {
        struct buf key = BUF_INIT, mid = BUF_INIT;
        char attempts[16], when[32];
        ctl_escape(&key, r[i].key, strlen(r[i].key), KEY_CHARS);
        if (r[i].message_id != NULL) {
            ctl_escape(&mid, r[i].message_id, strlen(r[i].message_id), 0);
        }
        snprintf(attempts, sizeof(attempts), "%d", r[i].attempts);
        ctl_time(strcmp(r[i].state, "in_progress") != 0 ? r[i].processed_at : r[i].created_at,
                 when, sizeof(when));
        const char *row[] = {buf_str(&key), r[i].state, attempts,
                             r[i].message_id ? buf_str(&mid) : "-", when};
        ctl_table_add(t, row);
        buf_free(&key);
        buf_free(&mid);
    }
    return ctl_table_print(t);
}

static int
key_list(struct ctl *c, int argc, char **argv)
{
    static const struct option longopts[] = {{"prefix", 1, NULL, 'p'},
                                             {"state", 1, NULL, 's'},
                                             {"max", 1, NULL, 'm'},
                                             CTL_LONG_OPTIONS};
    const char *prefix = NULL, *state = NULL;
    long max = LIST_DEFAULT_MAX;
    int opt, rc;
    char shown[CTL_ARG_SIZE];
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'p') {
            prefix = optarg;
        } else if (opt == 's') {
            state = optarg;
            if (!idem_state_name_ok(state)) {
                return ctl_usage_error("key list",
                                       "--state: in_progress, released, crashed, interrupted or "
                                       "completed, not '%s'",
                                       ctl_arg(shown, state));
            }
        } else if (opt == 'm') {
            if ((max = ctl_number("key list", "--max", optarg, LIST_MAX)) < 0) {
                return CTL_USAGE;
            }
        } else if ((rc = ctl_option(c, "key list", list_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc != optind) {
        return ctl_usage_error("key list", "unexpected argument '%s'",
                               ctl_arg(shown, argv[optind]));
    }
    struct idem_store *s = ctl_store_table(c, "key list", "");
    struct idem_record *r = NULL;
    size_t n = 0;
    char err[1024];
    if (s == NULL) {
        return CTL_FAIL;
    }
    if (idem_key_list(s, prefix, state, (int) max, &r, &n, err, sizeof(err)) != 0) {
        return ctl_fail("%s", err);
    }
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; arr != NULL && i < n; i++) {
            json_array_append_new(arr, record_json(&r[i]));
        }
        rc = ctl_print_json(arr);
    } else {
        rc = print_list(r, n);
        if (rc == CTL_OK && n == (size_t) max) {
            fprintf(stderr, "twicectl: showing the first %ld keys; --max N shows more\n", max);
        }
    }
    idem_records_free(r, n);
    return rc;
}

/* `key forget` reads the record before deleting it (to warn about a key in
 * progress): an error of that read names the command the operator ran,
 * "forget key (table t): ...", like an error of the delete. */
static int
forget_fail(const char *err)
{
    static const char show[] = "show key";
    if (strncmp(err, show, sizeof(show) - 1) == 0) {
        return ctl_fail("forget key%s", err + sizeof(show) - 1);
    }
    return ctl_fail("forget key: %s", err);
}

static int
key_forget(struct ctl *c, int argc, char **argv)
{
    int yes = 0;
    int rc = one_key(c, argc, argv, "key forget", forget_help, &yes);
    if (rc >= 0) {
        return rc;
    }
    const char *key = argv[optind];
    struct buf b = BUF_INIT, o = BUF_INIT;
    char shown[CTL_ARG_SIZE];
    if (!yes) {
        return ctl_usage_error("key forget", "this lets the job of '%s' run again; add --yes",
                               ctl_arg(shown, key));
    }
    struct idem_store *s = ctl_store_table(c, "key forget", "");
    struct idem_record r;
    char err[1024];
    if (s == NULL) {
        return CTL_FAIL;
    }
    int found = idem_key_show(s, key, &r, err, sizeof(err));
    if (found < 0) {
        return forget_fail(err);
    }
    if (found > 0 && strcmp(r.state, "in_progress") == 0) {
        fprintf(stderr,
                "twicectl: warning: key '%s' was in progress (owner %s): its job may "
                "still be running\n",
                esc(&b, key), r.owner != NULL ? esc(&o, r.owner) : "?");
    }
    if (found > 0) {
        idem_record_clear(&r);
    }
    int deleted = idem_key_forget(s, key, err, sizeof(err));
    if (deleted < 0) {
        rc = ctl_fail("%s", err);
    } else if (deleted == 0) {
        rc = ctl_fail("key forget: no key '%s' in table %s", ctl_arg(shown, key), table_name(c));
    } else {
        printf("forgot key %s: the next message with this key runs its job again\n", esc(&b, key));
        rc = CTL_OK;
    }
    buf_free(&b);
    buf_free(&o);
    return rc;
}

int
ctl_key(struct ctl *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(key_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CTL_USAGE : CTL_OK;
    }
    optind = 0;
    if (strcmp(argv[1], "show") == 0) {
        return key_show(c, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "list") == 0) {
        return key_list(c, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "forget") == 0) {
        return key_forget(c, argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "derive") == 0) {
        return ctl_key_derive(c, argc - 1, argv + 1);
    }
    char shown[CTL_ARG_SIZE];
    return ctl_usage_error("key", "no key command '%s' (show, list, forget, derive)",
                           ctl_arg(shown, argv[1]));
}
