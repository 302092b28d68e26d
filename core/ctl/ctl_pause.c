/*
 * ctl_pause.c - `twicectl pause QUEUE [--for DURATION] [--reason TEXT]` and
 * `twicectl resume QUEUE`: write a queue's pause to the table every twiced
 * host sharing the idempotency database reads (idem/pause.h), and the pause
 * column of `twicectl status`. Not the hosts' reaction: duty/pausewatch.c.
 */
#include "config.h"
#include "ctl.h"
#include "idem.h"
#include "pause.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pause_help[] =
    "usage: twicectl pause QUEUE [--for DURATION] [--reason TEXT]\n"
    "\n"
    "Stop every twiced host that shares the idempotency database from receiving\n"
    "from QUEUE (a configured queue's name or url), within a few seconds. Jobs\n"
    "already running finish; messages stay in the queue. The pause survives\n"
    "restarts and reloads. --for ends it by itself after DURATION: seconds, or\n"
    "numbers with units s, m, h, d (90s, 15m, 1h30m, 2d). --reason is shown by\n"
    "`twicectl status`, in the alerts and as the reason label of\n"
    "twice_queue_paused (default: manual). Pausing a paused queue replaces its\n"
    "pause. Exit code 1 when the queue is not configured or the database fails.\n";

static const char resume_help[] =
    "usage: twicectl resume QUEUE\n"
    "\n"
    "Let every host receive from QUEUE again (also a queue its circuit breaker\n"
    "paused). Exit code 1 when the queue is not configured, was not paused, or\n"
    "the database fails.\n";

long
ctl_parse_duration(const char *text)
{
    static const struct {
        char unit;
        long seconds;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    const long max = 366L * 86400;
    long total = 0;
    const char *p = text;
    if (p == NULL || *p == '\0') {
        return -1;
    }
    while (*p != '\0') {
        if (!isdigit((unsigned char) *p)) {
            return -1;
        }
        errno = 0;
        char *end = NULL;
        long v = strtol(p, &end, 10);
        long mult = *end == '\0' && p == text ? 1 : 0; /* a bare number: seconds */
        for (size_t i = 0; mult == 0 && i < sizeof(units) / sizeof(units[0]); i++) {
            mult = *end == units[i].unit ? units[i].seconds : 0;
        }
        if (errno != 0 || mult == 0 || v > (max - total) / mult) {
            return -1;
        }
        total += v * mult;
        p = mult > 1 || *end == 's' ? end + 1 : end;
    }
    return total > 0 ? total : -1;
}

/* The store with its pause table, or NULL after printing why; warns when
 * no twiced has run against the database (ctl_store_ahead). */
static struct idem_store *
pause_store(struct ctl *c, const char *cmd)
{
    char err[512];
    struct idem_store *s = ctl_store_ahead(c, cmd);
    if (s != NULL && idem_pause_migrate(s, err, sizeof(err)) != 0) {
        ctl_fail("%s", err);
        return NULL;
    }
    return s;
}

/* Options shared by pause and resume; the queue's config, or NULL with
 * *rc set. */
static const struct config_queue *
parse(struct ctl *c, const char *cmd, const char *help, int argc, char **argv, long *seconds,
      const char **reason, int *rc)
{
    static const struct option longopts[] = {
        {"for", 1, NULL, 'f'}, {"reason", 1, NULL, 'r'}, CTL_LONG_OPTIONS};
    int opt;
    char shown[CTL_ARG_SIZE];
    *rc = CTL_OK;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (seconds != NULL && opt == 'f') {
            if ((*seconds = ctl_parse_duration(optarg)) < 0) {
                *rc = ctl_usage_error(cmd,
                                      "--for: '%s' is not a duration (seconds, or numbers "
                                      "with s, m, h, d: 90s, 15m, 1h30m, 2d; at most 366d)",
                                      ctl_arg(shown, optarg));
                return NULL;
            }
        } else if (reason != NULL && opt == 'r') {
            *reason = optarg;
        } else if (opt == 'f' || opt == 'r') { /* pause's, given to resume: named, not its value */
            *rc = ctl_usage_error(cmd, "unknown option %s", opt == 'f' ? "--for" : "--reason");
            return NULL;
        } else if ((*rc = ctl_option(c, cmd, help, opt, argc, argv)) >= 0) {
            return NULL;
        }
    }
    if (argc - optind != 1) {
        *rc = ctl_usage_error(cmd, argc - optind < 1 ? "which queue?" : "one queue at a time");
        return NULL;
    }
    const struct config_queue *q = ctl_queue(c, argv[optind], 0);
    if (q != NULL && strlen(q->name) >= PAUSE_QUEUE_MAX) {
        ctl_fail("queue %.40s...: names of %d bytes and more cannot be paused", q->name,
                 PAUSE_QUEUE_MAX);
        q = NULL;
    }
    *rc = q == NULL ? CTL_FAIL : CTL_OK;
    return q;
}

int
ctl_pause(struct ctl *c, int argc, char **argv)
{
    long seconds = 0;
    const char *reason = NULL;
    int rc;
    const struct config_queue *q =
        parse(c, "pause", pause_help, argc, argv, &seconds, &reason, &rc);
    if (q == NULL) {
        return rc;
    }
    if (reason != NULL && (strlen(reason) >= PAUSE_REASON_MAX || strcmp(reason, "breaker") == 0)) {
        return ctl_usage_error("pause",
                               "--reason: at most %d bytes, and not 'breaker' (the "
                               "circuit breaker's)",
                               PAUSE_REASON_MAX - 1);
    }
    char err[512];
    struct idem_store *s = pause_store(c, "pause");
    if (s == NULL) {
        return CTL_FAIL;
    }
    if (idem_pause_set(s, q->name, reason, seconds, err, sizeof(err)) != 0) {
        return ctl_fail("%s", err);
    }
    if (seconds > 0) {
        printf("queue %s paused for %lds; hosts stop receiving within a few seconds\n", q->name,
               seconds);
    } else {
        printf("queue %s paused until `twicectl resume %s`; hosts stop receiving within a few "
               "seconds\n",
               q->name, q->name);
    }
    return CTL_OK;
}

int
ctl_resume(struct ctl *c, int argc, char **argv)
{
    int rc;
    const struct config_queue *q = parse(c, "resume", resume_help, argc, argv, NULL, NULL, &rc);
    if (q == NULL) {
        return rc;
    }
    char err[512];
    struct idem_store *s = pause_store(c, "resume");
    if (s == NULL) {
        return CTL_FAIL;
    }
    int n = idem_pause_resume(s, q->name, err, sizeof(err));
    if (n < 0) {
        return ctl_fail("%s", err);
    }
    if (n == 0) {
        return ctl_fail("queue %s is not paused", q->name);
    }
    printf("queue %s resumed; hosts receive again within a few seconds\n", q->name);
    return CTL_OK;
}

void
ctl_pause_describe(const struct pause_row *r, char *out, size_t cap)
{
    char until[40] = "";
    if (r == NULL || r->resumed || (!r->breaker && r->until > 0 && r->until <= r->now)) {
        snprintf(out, cap, "-");
        return;
    }
    if (r->until > 0) {
        ctl_time(r->until, until, sizeof(until));
    }
    if (r->breaker) {
        snprintf(out, cap, "breaker (%s%s)", r->until > r->now ? "probe after " : "probing",
                 r->until > r->now ? until : "");
    } else {
        snprintf(out, cap, "%s%s%s", r->reason, until[0] ? " until " : "", until);
    }
}
