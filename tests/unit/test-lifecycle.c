/*
 * test-lifecycle.c - the decision table of a message's life (lifecycle.h), row
 * by row: each table below is the policy for one moment (after the claim, after
 * the handler, behind a leader, after a failure that is not the job's fault),
 * one line per case, with the exact texts the worker logs and dead-letters.
 * Not a test of the I/O around it (the integration tests drive that).
 */
#include "check.h"

#include "lifecycle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* Short names, so that a row fits on a line. */
#define RUN    JOB_ACT_NONE /* claim: run the handler; failure: leave the message alone */
#define DONE   JOB_ACT_COMPLETE
#define DEL    JOB_ACT_DELETE
#define RETRY  JOB_ACT_RETRY
#define DLQ    JOB_ACT_DEADLETTER
#define HIDE   JOB_ACT_HIDE
#define RETURN JOB_ACT_RETURN
#define CLAIM  IDEM_CLAIMED
#define TAKEN  IDEM_TAKEN_OVER
#define COMPL  IDEM_COMPLETED
#define BUSY   IDEM_BUSY
#define WARN   TWICE_LOG_WARN
#define INFO   TWICE_LOG_INFO
#define QUIET  (-1) /* nothing logged */
#define F(x)   LIFECYCLE_##x

/* Queues: max_attempts, backoff_base, backoff_cap, fifo, reject_conflicts. */
static const struct lifecycle_queue STD = {5, 2, 300, 0, 0};        /* skip conflicts */
static const struct lifecycle_queue REJ = {5, 2, 300, 0, 1};        /* reject conflicts */
static const struct lifecycle_queue FIFO = {5, 2, 300, 1, 0};       /* retries in place */
static const struct lifecycle_queue LONG = {20, 2, 300, 0, 0};      /* room to reach the cap */
static const struct lifecycle_queue BIG = {5, 40000, 100000, 0, 0}; /* past SQS's 12 h */
static const struct lifecycle_queue ZERO = {5, 0, 0, 0, 0};         /* a zero backoff */

static const char *const SPARED = "taking over: the previous attempt was cut short when another "
                                  "job crashed its worker (not counted against this one)";
static const char *const CULPRIT = "taking over: the previous attempt's lease expired (its "
                                   "worker died or hung, or could not release the key)";

/* The stored payload of a completed key, against this message's. */
enum payload { SAME, OTHER, UNKNOWN };

/* What every table checks of a verdict. */
struct expect {
    enum job_action action;
    int delay;
    const char *reason; /* DLQ reason, NULL when not dead-lettered */
    int level;          /* of the log line, QUIET when none */
    const char *text;   /* the log line, else the dead letter's detail; NULL: none */
};

static void
text_join(const struct lifecycle_text *t, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s", t->before, t->arg, t->after);
}

/* Check v against e; failures name the row. */
static void
check_verdict(const char *row, enum job_action got, const struct lifecycle_verdict *v,
              const struct expect *e)
{
    int before = check_failures;
    char log[1024], detail[1024];
    text_join(&v->log, log, sizeof(log));
    text_join(&v->detail, detail, sizeof(detail));
    CHECK_INT(got, v->action);
    CHECK_INT(v->action, e->action);
    CHECK_INT(v->delay, e->delay);
    CHECK(v->delay >= 0 && v->delay <= LIFECYCLE_MAX_DELAY);
    if (e->reason != NULL) {
        CHECK_STR(v->reason, e->reason);
    } else {
        CHECK(v->reason == NULL);
        CHECK_STR(detail, "");
    }
    CHECK_INT(v->has_log, e->level != QUIET);
    if (e->level != QUIET) {
        CHECK_INT(v->log_level, e->level);
    } else {
        CHECK_STR(log, "");
    }
    if (e->text != NULL) {
        CHECK_STR(v->has_log ? log : detail, e->text);
    }
    if (check_failures != before) {
        fprintf(stderr, "  in row \"%s\"\n", row);
    }
}

/* After the claim. Every row's queue allows 5 attempts. */
struct claim_row {
    const char *name;
    const struct lifecycle_queue *q;
    enum idem_state state;
    int attempts; /* the row's, crash bystanders' taken back */
    int receives; /* ApproximateReceiveCount */
    double lease; /* BUSY: seconds left on the holder's lease */
    enum payload payload;
    const char *stored_id;
    struct expect want;
    const char *detail; /* with a log line too: the dead letter's detail */
    const char *dup;    /* skipped duplicate counted, of this kind */
    int conflict;       /* payload conflict counted */
};

/* clang-format off */
static const struct claim_row claim_rows[] = {
/*   name                          queue state att rcv lease payload stored
 *   -> action delay reason level text / detail, dup, conflict */
    {"first delivery",              &STD, CLAIM, 1, 1, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, NULL, NULL, 0},
    {"receives == max: runs",       &STD, CLAIM, 5, 5, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, NULL, NULL, 0},
    {"receives == max + 1: DLQ",    &STD, CLAIM, 6, 6, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "received 6 times (max_attempts 5)"}, NULL, NULL, 0},
    {"receives far past max: DLQ",  &STD, CLAIM, 1, 1000, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "received 1000 times (max_attempts 5)"}, NULL, NULL, 0},
    {"bystander, attempts 1",       &STD, TAKEN, 1, 2, 0, SAME, "",
     {RUN, 0, NULL, WARN, SPARED}, NULL, NULL, 0},
    {"bystander, attempts 0",       &STD, TAKEN, 0, 3, 0, SAME, "",
     {RUN, 0, NULL, WARN, SPARED}, NULL, NULL, 0},
    {"bystander past max: spared",  &STD, TAKEN, 1, 9, 0, SAME, "",
     {RUN, 0, NULL, WARN, SPARED}, NULL, NULL, 0},
    {"culprit, attempts 2",         &STD, TAKEN, 2, 2, 0, SAME, "",
     {RUN, 0, NULL, WARN, CULPRIT}, NULL, NULL, 0},
    {"culprit, receives == max",    &STD, TAKEN, 5, 5, 0, SAME, "",
     {RUN, 0, NULL, WARN, CULPRIT}, NULL, NULL, 0},
    {"culprit, receives == max + 1", &STD, TAKEN, 2, 6, 0, SAME, "",
     {DLQ, 0, "worker-crashed", QUIET, "received 6 times (max_attempts 5); the last "
      "attempt's worker died or hung while running it"}, NULL, NULL, 0},
    {"duplicate",                   &STD, COMPL, 1, 1, 0, SAME, "m-1",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message m-1; deleting"},
     NULL, "completed", 0},
    {"duplicate past max: deleted", &REJ, COMPL, 1, 99, 0, SAME, "m-1",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message m-1; deleting"},
     NULL, "completed", 0},
    {"duplicate of a migrated row", &REJ, COMPL, 1, 1, 0, UNKNOWN, "",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message (migrated); deleting"},
     NULL, "completed", 0},
    {"conflict, on_conflict skip",  &STD, COMPL, 1, 1, 0, OTHER, "m-1",
     {DEL, 0, NULL, WARN, "payload conflict: key completed by message m-1 with a different "
      "payload; skipping"}, NULL, "completed", 1},
    {"conflict, on_conflict reject", &REJ, COMPL, 1, 1, 0, OTHER, "m-1",
     {DLQ, 0, "payload-conflict", WARN, "payload conflict: key completed by message m-1 "
      "with a different payload; rejecting to the DLQ"},
     "key k was completed by message m-1 with a different payload", NULL, 1},
    {"busy",                        &STD, BUSY, 1, 1, 10.7, SAME, "m-2",
     {HIDE, 12, NULL, INFO, "key held by a live lease (message m-2): hidden for 12s"},
     NULL, "lease", 0},
    {"busy, holder unknown",        &STD, BUSY, 1, 1, 3, SAME, "",
     {HIDE, 5, NULL, INFO, "key held by a live lease (message ?): hidden for 5s"},
     NULL, "lease", 0},
    {"busy past max: hidden",       &STD, BUSY, 1, 50, 3, SAME, "m-2",
     {HIDE, 5, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease 0",               &STD, BUSY, 1, 1, 0, SAME, "m-2",
     {HIDE, 2, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease -0.5",            &STD, BUSY, 1, 1, -0.5, SAME, "m-2",
     {HIDE, 2, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease -1.5",            &STD, BUSY, 1, 1, -1.5, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease -100",            &STD, BUSY, 1, 1, -100, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease 43198",           &STD, BUSY, 1, 1, 43198, SAME, "m-2",
     {HIDE, 43200, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease 43199",           &STD, BUSY, 1, 1, 43199, SAME, "m-2",
     {HIDE, 43200, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease 1e300",           &STD, BUSY, 1, 1, 1e300, SAME, "m-2",
     {HIDE, 43200, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease -1e300",          &STD, BUSY, 1, 1, -1e300, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy, lease NaN",             &STD, BUSY, 1, 1, NAN, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, NULL, "lease", 0},
    {"busy on a FIFO queue",        &FIFO, BUSY, 1, 1, 10, SAME, "m-2",
     {HIDE, 12, NULL, INFO, NULL}, NULL, "lease", 0},
};
/* clang-format on */

static void
test_claim_table(void)
{
    static const unsigned char mine[32] = {1}, other[32] = {2};
    for (size_t i = 0; i < sizeof(claim_rows) / sizeof(claim_rows[0]); i++) {
        const struct claim_row *r = &claim_rows[i];
        struct lifecycle_claim c = {
            .state = r->state,
            .attempts = r->attempts,
            .receives = r->receives,
            .lease_left = r->lease,
            .key = "k",
            .sha256 = mine,
            .stored_sha256 = r->payload == UNKNOWN ? NULL
                             : r->payload == SAME  ? mine
                                                   : other,
            .stored_message_id = r->stored_id,
        };
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_claim(r->q, &c, &v);
        check_verdict(r->name, got, &v, &r->want);
        int before = check_failures;
        if (r->detail != NULL) {
            char detail[1024];
            text_join(&v.detail, detail, sizeof(detail));
            CHECK_STR(detail, r->detail);
        }
        if (r->dup != NULL) {
            CHECK_STR(v.duplicate, r->dup);
        } else {
            CHECK(v.duplicate == NULL);
        }
        CHECK_INT(v.conflict, r->conflict);
        CHECK_INT(v.in_place, 0);
        if (check_failures != before) {
            fprintf(stderr, "  in row \"%s\"\n", r->name);
        }
    }
}

/* After the handler. random is the jitter's draw: the delay is random modulo
 * (ceiling + 1), ceiling = min(cap, base * 2^(attempt-1)) (2, 4, 8, 16 on STD). */
struct run_row {
    const char *name;
    const struct lifecycle_queue *q;
    int status;
    int attempt;
    int retry_after;
    const char *error;
    uint64_t random;
    struct expect want;
    int in_place;
};

/* clang-format off */
static const struct run_row run_rows[] = {
/*   name                            queue status attempt retry_after error random
 *   -> action delay reason level text, in_place */
    {"done",                          &STD, TWICE_DONE, 1, -1, NULL, 0,
     {DONE, 0, NULL, QUIET, NULL}, 0},
    {"done past max",                 &STD, TWICE_DONE, 9, -1, NULL, 0,
     {DONE, 0, NULL, QUIET, NULL}, 0},
    {"reject with an error",          &STD, TWICE_REJECT, 1, -1, "bad input", 0,
     {DLQ, 0, "rejected", QUIET, "bad input"}, 0},
    {"reject without an error",       &STD, TWICE_REJECT, 1, -1, NULL, 0,
     {DLQ, 0, "rejected", QUIET, "rejected by the plugin"}, 0},
    {"reject with an empty error",    &STD, TWICE_REJECT, 1, -1, "", 0,
     {DLQ, 0, "rejected", QUIET, ""}, 0},
    {"reject at max",                 &STD, TWICE_REJECT, 5, -1, "no", 0,
     {DLQ, 0, "rejected", QUIET, "no"}, 0},
    {"retry, first attempt",          &STD, TWICE_RETRY, 1, -1, "timeout", 2,
     {RETRY, 2, NULL, INFO, "retry in 2s (attempt 1 of 5, backoff ceiling 2s): timeout"}, 0},
    {"retry, jitter drew 0: 1 s",     &STD, TWICE_RETRY, 1, -1, NULL, 0,
     {RETRY, 1, NULL, INFO, "retry in 1s (attempt 1 of 5, backoff ceiling 2s): "
      "the plugin asked to retry"}, 0},
    {"retry, empty error",            &STD, TWICE_RETRY, 2, -1, "", 3,
     {RETRY, 3, NULL, INFO, "retry in 3s (attempt 2 of 5, backoff ceiling 4s): "
      "the plugin asked to retry"}, 0},
    {"retry, draw wraps the ceiling", &STD, TWICE_RETRY, 3, -1, "x", 13,
     {RETRY, 4, NULL, INFO, "retry in 4s (attempt 3 of 5, backoff ceiling 8s): x"}, 0},
    {"retry, attempt == max - 1",     &STD, TWICE_RETRY, 4, -1, "x", 16,
     {RETRY, 16, NULL, INFO, "retry in 16s (attempt 4 of 5, backoff ceiling 16s): x"}, 0},
    {"retry, attempt == max: DLQ",    &STD, TWICE_RETRY, 5, -1, "timeout", 0,
     {DLQ, 0, "max-attempts", QUIET, "attempt 5 of 5 failed: timeout"}, 0},
    {"retry, attempt == max + 1: DLQ", &STD, TWICE_RETRY, 6, -1, NULL, 0,
     {DLQ, 0, "max-attempts", QUIET, "attempt 6 of 5 failed: the plugin asked to retry"}, 0},
    {"retry at max, retry_after set", &STD, TWICE_RETRY, 5, 60, "x", 0,
     {DLQ, 0, "max-attempts", QUIET, "attempt 5 of 5 failed: x"}, 0},
    {"retry_after 0",                 &STD, TWICE_RETRY, 1, 0, "x", 2,
     {RETRY, 0, NULL, INFO, "retry in 0s (attempt 1 of 5, backoff ceiling 2s): x"}, 0},
    {"retry_after 60",                &STD, TWICE_RETRY, 1, 60, "x", 2,
     {RETRY, 60, NULL, INFO, "retry in 60s (attempt 1 of 5, backoff ceiling 2s): x"}, 0},
    {"retry_after 43200",             &STD, TWICE_RETRY, 1, 43200, "x", 2,
     {RETRY, 43200, NULL, INFO, NULL}, 0},
    {"retry_after > 43200",           &STD, TWICE_RETRY, 1, 99999, "x", 2,
     {RETRY, 43200, NULL, INFO, NULL}, 0},
    {"backoff at its cap",            &LONG, TWICE_RETRY, 10, -1, "x", 300,
     {RETRY, 300, NULL, INFO, "retry in 300s (attempt 10 of 20, backoff ceiling 300s): x"}, 0},
    {"backoff past its cap wraps",    &LONG, TWICE_RETRY, 19, -1, "x", 301,
     {RETRY, 1, NULL, INFO, "retry in 1s (attempt 19 of 20, backoff ceiling 300s): x"}, 0},
    {"backoff past 43200 is cut",     &BIG, TWICE_RETRY, 2, -1, "x", 79999,
     {RETRY, 43200, NULL, INFO, "retry in 43200s (attempt 2 of 5, backoff ceiling 80000s): x"},
     0},
    {"backoff under 43200",           &BIG, TWICE_RETRY, 2, -1, "x", 43199,
     {RETRY, 43199, NULL, INFO, NULL}, 0},
    {"zero backoff waits 1 s",        &ZERO, TWICE_RETRY, 1, -1, "x", 12345,
     {RETRY, 1, NULL, INFO, "retry in 1s (attempt 1 of 5, backoff ceiling 0s): x"}, 0},
    {"unknown status counts as retry", &STD, 7, 1, -1, "x", 1,
     {RETRY, 1, NULL, INFO, NULL}, 0},
    {"FIFO retry: in place",          &FIFO, TWICE_RETRY, 1, -1, "x", 2,
     {RETRY, 2, NULL, INFO, "retry in 2s (attempt 1 of 5, backoff ceiling 2s): x"}, 1},
    {"FIFO retry_after 0: in place",  &FIFO, TWICE_RETRY, 4, 0, "x", 2,
     {RETRY, 0, NULL, INFO, NULL}, 1},
    {"FIFO retry at max: DLQ",        &FIFO, TWICE_RETRY, 5, -1, "x", 2,
     {DLQ, 0, "max-attempts", QUIET, "attempt 5 of 5 failed: x"}, 0},
    {"FIFO done",                     &FIFO, TWICE_DONE, 3, -1, NULL, 0,
     {DONE, 0, NULL, QUIET, NULL}, 0},
    {"FIFO reject",                   &FIFO, TWICE_REJECT, 1, -1, "no", 0,
     {DLQ, 0, "rejected", QUIET, "no"}, 0},
};
/* clang-format on */

static void
test_run_table(void)
{
    for (size_t i = 0; i < sizeof(run_rows) / sizeof(run_rows[0]); i++) {
        const struct run_row *r = &run_rows[i];
        struct lifecycle_run run = {
            .status = (twice_status) r->status,
            .attempt = r->attempt,
            .retry_after = r->retry_after,
            .error = r->error,
            .random = r->random,
        };
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_handled(r->q, &run, &v);
        check_verdict(r->name, got, &v, &r->want);
        int before = check_failures;
        CHECK_INT(v.in_place, r->in_place);
        CHECK(v.duplicate == NULL && !v.conflict);
        if (check_failures != before) {
            fprintf(stderr, "  in row \"%s\"\n", r->name);
        }
    }
}

/* A duplicate within the batch, behind its leader. */
struct leader_row {
    const char *name;
    int key_completed;
    enum job_action action;
    int delay;
    struct expect want;
    const char *dup;
};

/* clang-format off */
static const struct leader_row leader_rows[] = {
/*   name                          completed action delay -> action delay reason level text, dup */
    {"leader completed its key",   1, DONE,   0,  {DEL, 0, NULL, INFO,
     "duplicate of m-1 in the same batch: deleted"}, "completed"},
    {"leader retried",             0, RETRY,  7,  {HIDE, 7, NULL, QUIET, NULL}, NULL},
    {"leader retried, 0 s",        0, RETRY,  0,  {HIDE, 0, NULL, QUIET, NULL}, NULL},
    {"leader hidden (busy)",       0, HIDE,   12, {HIDE, 12, NULL, QUIET, NULL}, NULL},
    {"leader given back",          0, RETURN, 5,  {HIDE, 0, NULL, QUIET, NULL}, NULL},
    {"leader dead-lettered",       0, DLQ,    0,  {HIDE, 0, NULL, QUIET, NULL}, NULL},
    {"leader done, key not completed", 0, DONE, 0, {HIDE, 0, NULL, QUIET, NULL}, NULL},
    {"leader's acks given up",     0, RUN,    9,  {HIDE, 0, NULL, QUIET, NULL}, NULL},
};
/* clang-format on */

static void
test_leader_table(void)
{
    for (size_t i = 0; i < sizeof(leader_rows) / sizeof(leader_rows[0]); i++) {
        const struct leader_row *r = &leader_rows[i];
        struct lifecycle_leader l = {r->key_completed, r->action, r->delay, "m-1"};
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_leader(&l, &v);
        check_verdict(r->name, got, &v, &r->want);
        int before = check_failures;
        if (r->dup != NULL) {
            CHECK_STR(v.duplicate, r->dup);
        } else {
            CHECK(v.duplicate == NULL);
        }
        if (check_failures != before) {
            fprintf(stderr, "  in row \"%s\"\n", r->name);
        }
    }
}

/* Failures that are not the job's fault: given back, never counted. */
struct failure_row {
    const char *name;
    enum lifecycle_failure failure;
    int wait_left;
    const char *error;
    struct expect want;
};

/* clang-format off */
static const struct failure_row failure_rows[] = {
/*   name                          failure             wait error   -> action delay reason level */
    {"claim failed",               F(CLAIM_FAILED),       0, NULL, {RETURN, 0, NULL, QUIET, NULL}},
    {"FIFO group blocked",         F(GROUP_BLOCKED),      0, NULL, {RETURN, 0, NULL, QUIET, NULL}},
    {"transaction begin failed",   F(TX_BEGIN_FAILED),    0, NULL, {RETURN, 5, NULL, QUIET, NULL}},
    {"lease lost before start",    F(LEASE_LOST),         0, NULL, {RUN, 0, NULL, WARN,
     "lease lost before the handler started; leaving the message to its new holder"}},
    {"store lost at commit",       F(COMMIT_LOST),        0, "server closed the connection",
     {RETURN, 5, NULL, WARN, "commit failed with the connection (server closed the "
      "connection); giving the message back"}},
    {"store lost, no error",       F(COMMIT_LOST),        0, NULL, {RETURN, 5, NULL, WARN,
     "commit failed with the connection (); giving the message back"}},
    {"draining",                   F(DRAINING),           0, NULL, {RETURN, 0, NULL, QUIET, NULL}},
    {"drain in a FIFO wait",       F(DRAIN_IN_BACKOFF),   7, NULL, {RETURN, 7, NULL, QUIET, NULL}},
    {"drain in a wait, none left", F(DRAIN_IN_BACKOFF),  -3, NULL, {RETURN, 0, NULL, QUIET, NULL}},
    {"drain in a huge wait",       F(DRAIN_IN_BACKOFF), 99999, NULL,
     {RETURN, 43200, NULL, QUIET, NULL}},
    {"drain deadline",             F(DRAIN_DEADLINE),     0, NULL, {RETURN, 0, NULL, QUIET, NULL}},
    {"drain deadline, tx job",     F(DRAIN_DEADLINE_TX),  0, NULL, {RETURN, 3, NULL, QUIET, NULL}},
};
/* clang-format on */

static void
test_failure_table(void)
{
    for (size_t i = 0; i < sizeof(failure_rows) / sizeof(failure_rows[0]); i++) {
        const struct failure_row *r = &failure_rows[i];
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_failure(r->failure, r->wait_left, r->error, &v);
        check_verdict(r->name, got, &v, &r->want);
        CHECK(v.duplicate == NULL && !v.conflict && !v.in_place);
    }
}

/* An unbounded plugin error is carried whole, never cut to a buffer. */
static void
test_long_error_is_not_cut(void)
{
    static char error[5000];
    memset(error, 'e', sizeof(error) - 1);
    struct lifecycle_run run = {TWICE_RETRY, 5, -1, error, 0};
    struct lifecycle_verdict v;
    CHECK_INT(lifecycle_on_handled(&STD, &run, &v), DLQ);
    CHECK(v.detail.arg == error);
    run.attempt = 1;
    CHECK_INT(lifecycle_on_handled(&STD, &run, &v), RETRY);
    CHECK(v.log.arg == error);
}

int
main(void)
{
    test_claim_table();
    test_run_table();
    test_leader_table();
    test_failure_table();
    test_long_error_is_not_cut();
    return check_done("test-lifecycle");
}
