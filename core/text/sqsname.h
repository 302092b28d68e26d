/*
 * sqsname.h - SQS's rules for the names a configuration or a plugin writes,
 * pure text: a message attribute name (what route_by = "attr:Name" and a key
 * template's {attr:Name} read, and what send() stages) and a queue URL's
 * shape, so that a name SQS could never deliver is caught by twiced -t at
 * its line instead of dead-lettering every message. Not the client (sqs/).
 */
#ifndef TWICE_SQSNAME_H
#define TWICE_SQSNAME_H

#include <stddef.h>

/* What sqs_attr_name_ok() wants, for a message. */
#define SQS_ATTR_NAME_RULE                                                                        \
    "1-256 of A-Z a-z 0-9 _ - ., no leading, trailing or doubled '.', not starting with AWS. "    \
    "or Amazon."

/* 1 when SQS takes name[0..n) as a message attribute name (SQS_ATTR_NAME_RULE). */
int sqs_attr_name_ok(const char *name, size_t n);

/* Why url cannot be a queue URL ("has no host"), or NULL when it could be:
 * an http(s) URL (url.h's url_problem) without a query, whose path ends in
 * a queue name (SQS's queue URLs are ASCII: an account id and a queue name
 * of A-Z a-z 0-9 _ -, with .fifo for a FIFO queue). */
const char *sqs_queue_url_problem(const char *url);

/*
 * 1 when the queue URLs a and b (both passing sqs_queue_url_problem) name the
 * same queue as far as their text tells: the scheme and host compared without
 * case, a default port (:80 for http, :443 for https) as if left out, AWS's
 * legacy host REGION.queue.amazonaws.com (queue.amazonaws.com: us-east-1) as
 * sqs.REGION.amazonaws.com, and the path exactly (queue names have case).
 */
int sqs_queue_url_same(const char *a, const char *b);

#endif
