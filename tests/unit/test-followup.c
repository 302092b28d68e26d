/*
 * test-followup.c - a follow-up message as SQS counts it and the batches it
 * goes in (sqs/followup.h), which the outbox relay and a stopping worker's
 * acknowledger share. Not the sending: test_outbox.py and test_guard.py
 * drive that against the SQS emulator.
 */
#include "check.h"

#include "followup.h"
#include "sqs_limits.h"

#include <string.h>

/* What SQS counts: the body, and each attribute's name, type and value,
 * twice-outbox-id ("<key>#<idx>") included; attributes that cannot be read
 * count as a whole batch, so that message goes alone. */
static void
test_bytes(void)
{
    struct followup f = {
        .key = "send:k1", .idx = 12, .url = "https://sqs/1/q", .body = "{\"i\":0}", .body_len = 7};
    size_t id = strlen("twice-outbox-id") + strlen("String") + strlen("send:k1#12");
    CHECK_INT(followup_bytes(&f), 7 + id);
    f.attrs = "[\"origin\",\"outbox-sender\",\"pad\",\"yy\"]";
    CHECK_INT(followup_bytes(&f),
              7 + id + strlen("originStringoutbox-sender") + strlen("padStringyy"));
    f.attrs = "not json";
    CHECK_INT(followup_bytes(&f), SQS_MESSAGE_MAX_BYTES);
}

/* At most ten a batch, at most 1 MiB together, and one at least however
 * large it is. */
static void
test_batch_len(void)
{
    size_t small[12] = {100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100};
    CHECK_INT(followup_batch_len(small, 12), 10);
    CHECK_INT(followup_batch_len(small + 10, 2), 2);
    CHECK_INT(followup_batch_len(small, 0), 0);
    size_t big[3] = {600000, 500000, 1000};
    CHECK_INT(followup_batch_len(big, 3), 1);
    CHECK_INT(followup_batch_len(big + 1, 2), 2);
    size_t exact[2] = {SQS_MESSAGE_MAX_BYTES - 10, 10};
    CHECK_INT(followup_batch_len(exact, 2), 2);
    size_t over[2] = {SQS_MESSAGE_MAX_BYTES - 10, 11};
    CHECK_INT(followup_batch_len(over, 2), 1);
    size_t alone[2] = {SQS_MESSAGE_MAX_BYTES + 1, 1};
    CHECK_INT(followup_batch_len(alone, 2), 1);
}

int
main(void)
{
    test_bytes();
    test_batch_len();
    return check_done("test-followup");
}
