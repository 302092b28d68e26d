/*
 * ctl_send.c - `twicectl send`: one message to a configured queue, for
 * tests and for producers written in shell. Prints the new MessageId. Not
 * a bulk loader: one SendMessage per call.
 */
#include "buf.h"
#include "config.h"
#include "ctl.h"
#include "payload.h"
#include "s3.h"
#include "sendcheck.h"
#include "sqs.h"
#include "sqs_limits.h"
#include "tracectx.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char send_help[] =
    "usage: twicectl send QUEUE [--attr NAME=VALUE]... [--traceparent TP] [--group G]\n"
    "                      [--dedup-id D] [--delay SECONDS] BODY|-\n"
    "\n"
    "Send BODY (or, with -, standard input) to QUEUE, a configured queue's name or\n"
    "url, and print the new message id. A body larger than max_message_bytes is put\n"
    "in S3 (the queue's payload_bucket) and sent as a pointer, as the AWS Extended\n"
    "Client libraries do.\n"
    "\n"
    "  --attr NAME=VALUE  a message attribute of type String (repeatable, at most 10)\n"
    "  --traceparent TP   a W3C trace context (00-<trace id>-<span id>-<flags>), sent\n"
    "                     as the traceparent attribute: the job's span becomes its child\n"
    "  --group G          the MessageGroupId (required on FIFO queues; on a standard\n"
    "                     queue, the group of fair queues)\n"
    "  --delay SECONDS    hide the message this long first (0-900; standard queues)\n"
    "  --dedup-id D       the MessageDeduplicationId (FIFO queues only; those without\n"
    "                     content-based deduplication need one)\n"
    "  --json             print {\"message_id\": ...}\n"
    "  -c FILE            the configuration (default: twiced's)\n";

/* Everything the options say; attrs borrow from argv. */
struct send_args {
    struct sqs_attr attrs[CTL_MAX_ATTRS];
    size_t nattrs;
    const char *group;
    const char *dedup;
    int delay; /* -1: the queue's own */
};

/* --traceparent: checked as twiced checks it, so a value twiced would
 * ignore is refused here, and added as the String attribute traceparent. */
static int
add_traceparent(struct send_args *a, char *value)
{
    struct tracectx c;
    const char *why = NULL;
    if (tracectx_parse_traceparent(value, strlen(value), &c, &why) != 0) {
        return ctl_usage_error("send", "--traceparent: not a W3C traceparent (%s): '%.100s'", why,
                               value);
    }
    for (size_t i = 0; i < a->nattrs; i++) {
        if (strcmp(a->attrs[i].name, "traceparent") == 0) {
            return ctl_usage_error("send", "traceparent given twice");
        }
    }
    if (a->nattrs == CTL_MAX_ATTRS) {
        return ctl_usage_error("send", "at most %d attributes", CTL_MAX_ATTRS);
    }
    a->attrs[a->nattrs++] =
        (struct sqs_attr){.name = "traceparent", .data_type = "String", .string_value = value};
    return -1;
}

static int
parse_args(struct ctl *c, int argc, char **argv, struct send_args *a)
{
    static const struct option longopts[] = {
        {"attr", 1, NULL, 'a'},        {"group", 1, NULL, 'g'}, {"dedup-id", 1, NULL, 'd'},
        {"traceparent", 1, NULL, 't'}, {"delay", 1, NULL, 'D'}, CTL_LONG_OPTIONS,
    };
    int opt, rc;
    char shown[CTL_ARG_SIZE];
    char *tp = NULL, *end;
    memset(a, 0, sizeof(*a));
    a->delay = -1;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (opt == 'a') {
            if (a->nattrs == CTL_MAX_ATTRS) {
                return ctl_usage_error("send", "at most %d attributes", CTL_MAX_ATTRS);
            }
            if (ctl_parse_attr(optarg, &a->attrs[a->nattrs++]) != 0) {
                return ctl_usage_error("send", "--attr: expected NAME=VALUE, got '%s'",
                                       ctl_arg(shown, optarg));
            }
            if (a->attrs[a->nattrs - 1].string_value[0] == '\0') {
                return ctl_usage_error("send", "--attr %s: SQS refuses an empty value",
                                       ctl_arg(shown, a->attrs[a->nattrs - 1].name));
            }
            if (sendcheck_twice_attr(a->attrs[a->nattrs - 1].name)) {
                return ctl_usage_error("send",
                                       "--attr %s: twice-* attributes are twice's own (a dead "
                                       "letter would replace it); twice-outbox-id is the one "
                                       "allowed",
                                       ctl_arg(shown, a->attrs[a->nattrs - 1].name));
            }
        } else if (opt == 't') {
            tp = optarg; /* checked once every --attr is known */
        } else if (opt == 'g') {
            a->group = optarg;
        } else if (opt == 'd') {
            a->dedup = optarg;
        } else if (opt == 'D') {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || v < 0 || v > SQS_DELAY_MAX) {
                return ctl_usage_error("send", "--delay: expected 0-%d seconds, got '%s'",
                                       SQS_DELAY_MAX, ctl_arg(shown, optarg));
            }
            a->delay = (int) v;
        } else if ((rc = ctl_option(c, "send", send_help, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (argc - optind != 2) {
        return ctl_usage_error("send", "expected QUEUE and BODY (or - for standard input)");
    }
    return tp != NULL ? add_traceparent(a, tp) : -1;
}

/* A random UUID (version 4) for an offloaded payload's key, into out[37]. */
static int
new_uuid(char out[37])
{
    unsigned char r[16];
    if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r)) {
        return -1;
    }
    r[6] = (unsigned char) ((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char) ((r[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
             r[14], r[15]);
    return 0;
}

/*
 * A body over the limit goes to S3: body becomes the pointer and a->attrs
 * gain ExtendedPayloadSize (size_text holds its value). CTL_OK, or
 * CTL_FAIL after printing why.
 */
static int
offload(struct ctl *c, const struct config_queue *q, struct send_args *a, struct buf *body,
        char size_text[24])
{
    char key[37];
    struct s3_error err;
    if (q->payload_bucket == NULL) {
        return ctl_fail("send: the body of %zu bytes exceeds max_message_bytes (%ld) and queue "
                        "%s has no payload_bucket to put it in",
                        body->len, c->cfg->max_message_bytes, q->name);
    }
    if (a->nattrs == CTL_MAX_ATTRS) {
        return ctl_fail("send: no room for the " PAYLOAD_SIZE_ATTR " attribute");
    }
    struct s3_client *s3 = ctl_s3(c);
    if (s3 == NULL) {
        return CTL_FAIL;
    }
    if (new_uuid(key) != 0) {
        return ctl_fail("send: no random numbers for the payload's key");
    }
    if (s3_put(s3, q->payload_bucket, key, body->data, body->len, &err) != 0) {
        return ctl_fail("send: putting the payload in S3 bucket %s: %s", q->payload_bucket,
                        err.message);
    }
    snprintf(size_text, 24, "%zu", body->len);
    a->attrs[a->nattrs++] = (struct sqs_attr){
        .name = PAYLOAD_SIZE_ATTR, .data_type = "Number", .string_value = size_text};
    buf_reset(body);
    return payload_pointer_write(body, q->payload_bucket, key) == 0
               ? CTL_OK
               : ctl_fail("send: out of memory");
}

int
ctl_send(struct ctl *c, int argc, char **argv)
{
    struct send_args a;
    int rc = parse_args(c, argc, argv, &a);
    if (rc >= 0) {
        return rc;
    }
    const char *body_arg = argv[optind + 1];
    const struct config_queue *q = ctl_queue(c, argv[optind], 0);
    if (q == NULL) {
        return CTL_FAIL;
    }
    /* The delay first: --group would not make it work. */
    if (q->fifo && a.delay >= 0) {
        return ctl_usage_error("send",
                               "queue %s is a FIFO queue: SQS takes no --delay per "
                               "message there (set the queue's DelaySeconds)",
                               q->name);
    }
    if (q->fifo && a.group == NULL) {
        return ctl_usage_error("send", "queue %s is a FIFO queue: --group is required", q->name);
    }
    /* SQS refuses MessageDeduplicationId on a standard queue
     * (InvalidParameterValue); the emulator takes it. */
    if (!q->fifo && a.dedup != NULL) {
        return ctl_usage_error("send",
                               "queue %s is a standard queue: --dedup-id is for FIFO queues "
                               "(SQS refuses a deduplication id here)",
                               q->name);
    }
    struct sqs_client *sqs = ctl_sqs(c);
    if (sqs == NULL) {
        return CTL_FAIL;
    }
    struct buf body = BUF_INIT;
    if (strcmp(body_arg, "-") == 0 ? ctl_read_stdin(&body) != 0 : buf_puts(&body, body_arg) != 0) {
        buf_free(&body);
        return CTL_FAIL;
    }
    if (body.len == 0) { /* SQS's MissingParameter, said here */
        buf_free(&body);
        return ctl_usage_error("send", "the body is empty: SQS refuses an empty message");
    }
    char size_text[24];
    if ((long) body.len > c->cfg->max_message_bytes &&
        offload(c, q, &a, &body, size_text) != CTL_OK) {
        buf_free(&body);
        return CTL_FAIL;
    }
    struct sqs_send_entry e = {
        .body = buf_str(&body),
        .body_len = body.len,
        .attrs = a.attrs,
        .nattrs = a.nattrs,
        .delay_seconds = a.delay,
        .group_id = a.group,
        .dedup_id = a.dedup,
    };
    char id[128] = "";
    struct sqs_error err;
    if (sqs_send(sqs, q->url, &e, id, sizeof(id), &err) != 0) {
        buf_free(&body);
        return ctl_sqs_fail(q->name, "SendMessage", &err);
    }
    buf_free(&body);
    if (c->json) {
        return ctl_print_json(json_pack("{s:s,s:s}", "queue", q->name, "message_id", id));
    }
    printf("%s\n", id);
    return fflush(stdout) == 0 ? CTL_OK : CTL_FAIL;
}
