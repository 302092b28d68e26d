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
#define CRASH  IDEM_CRASHED
#define INTER  IDEM_INTERRUPTED
#define COMPL  IDEM_COMPLETED
#define BUSY   IDEM_BUSY
#define WARN   TWICE_LOG_WARN
#define INFO   TWICE_LOG_INFO
#define QUIET  (-1) /* nothing logged */
#define F(x)   LIFECYCLE_##x

/* Queues: max_attempts, max_receives, backoff_base, backoff_cap, fifo,
 * reject_conflicts, timeout, timeout_grace. */
static const struct lifecycle_queue STD = {5, 50, 2, 300, 0, 0, 0, 0};  /* skip conflicts */
static const struct lifecycle_queue REJ = {5, 50, 2, 300, 0, 1, 0, 0};  /* reject conflicts */
static const struct lifecycle_queue FIFO = {5, 50, 2, 300, 1, 0, 0, 0}; /* retries in place */
static const struct lifecycle_queue LONG = {20, 200, 2, 300,
                                            0,  0,   0, 0}; /* room to reach the cap */
static const struct lifecycle_queue BIG = {5, 50, 40000, 100000, 0, 0, 0, 0}; /* past SQS's 12 h */
static const struct lifecycle_queue ZERO = {5, 50, 0, 0, 0, 0, 0, 0};         /* a zero backoff */
static const struct lifecycle_queue ONE = {1, 1, 2, 300, 0, 0, 0, 0}; /* max_receives = 1 */

static const char *const CRASHED = "taking over: the previous run crashed its worker (counted "
                                   "against this job)";
static const char *const CUT = "taking over: the previous run was cut short when its worker went "
                               "away (another job crashed it, or it stopped); not counted "
                               "against this job";
static const char *const LAPSED = "taking over: the previous holder's lease expired before it "
                                  "recorded its run (its worker hung or lost the database); that "
                                  "run is not counted";

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

/* After the claim. Every row's queue allows 5 attempts and 50 receives. */
struct claim_row {
    const char *name;
    const struct lifecycle_queue *q;
    enum idem_state state;
    int attempts; /* the key's runs counted so far */
    int receives; /* ApproximateReceiveCount */
    double lease; /* BUSY: seconds left on the holder's lease */
    enum payload payload;
    const char *stored_id;
    struct expect want;
    int attempt;        /* the run's number when it runs, else 0 */
    int runs;           /* a dead letter's twice-attempts */
    const char *detail; /* with a log line too: the dead letter's detail */
    const char *dup;    /* skipped duplicate counted, of this kind */
    int conflict;       /* payload conflict counted */
};

/* clang-format off */
static const struct claim_row claim_rows[] = {
/*   name                          queue state att rcv lease payload stored
 *   -> action delay reason level text / detail, attempt, runs, detail, dup, conflict */
    {"first delivery",              &STD, CLAIM, 0, 1, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, 1, 0, NULL, NULL, 0},
    {"released after 4 runs",       &STD, CLAIM, 4, 5, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, 5, 0, NULL, NULL, 0},
    /* Deliveries twice hid, gave back or could not claim are no attempts. */
    {"received 40 times, never ran", &STD, CLAIM, 0, 40, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, 1, 0, NULL, NULL, 0},
    {"released at max receives",    &STD, CLAIM, 2, 50, 0, SAME, "",
     {RUN, 0, NULL, QUIET, NULL}, 3, 0, NULL, NULL, 0},
    /* The backstop: received too often without finishing, whatever the count
     * (runs never recorded, a count the janitor removed). */
    {"released past max receives",  &STD, CLAIM, 2, 51, 0, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 51 times (max_receives 50) without finishing "
      "(attempts counted: 2)"}, 0, 2, NULL, NULL, 0},
    {"new key past max receives",   &STD, CLAIM, 0, 1000, 0, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 1000 times (max_receives 50) without "
      "finishing (attempts counted: 0)"}, 0, 0, NULL, NULL, 0},
    {"runs == max (max lowered)",   &STD, CLAIM, 5, 6, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "5 attempts already (max_attempts 5)"}, 0, 5, NULL, NULL, 0},
    {"one run, max_attempts 1",     &ONE, CLAIM, 1, 1, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "1 attempt already (max_attempts 1)"}, 0, 1, NULL, NULL, 0},
    {"crashed, max_attempts 1",     &ONE, CRASH, 1, 1, 0, SAME, "",
     {DLQ, 0, "worker-crashed", QUIET, "1 attempt, the last one crashed its worker "
      "(max_attempts 1)"}, 0, 1, NULL, NULL, 0},
    {"crashed once",                &STD, CRASH, 1, 2, 0, SAME, "",
     {RUN, 0, NULL, WARN, CRASHED}, 2, 0, NULL, NULL, 0},
    {"crashed, runs == max - 1",    &STD, CRASH, 4, 9, 0, SAME, "",
     {RUN, 0, NULL, WARN, CRASHED}, 5, 0, NULL, NULL, 0},
    {"crashed, runs == max: DLQ",   &STD, CRASH, 5, 5, 0, SAME, "",
     {DLQ, 0, "worker-crashed", QUIET, "5 attempts, the last one crashed its worker "
      "(max_attempts 5)"}, 0, 5, NULL, NULL, 0},
    {"crashed past max receives",   &STD, CRASH, 2, 99, 0, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 99 times (max_receives 50) without finishing "
      "(attempts counted: 2)"}, 0, 2, NULL, NULL, 0},
    {"interrupted, never counted",  &STD, INTER, 0, 3, 0, SAME, "",
     {RUN, 0, NULL, WARN, CUT}, 1, 0, NULL, NULL, 0},
    {"interrupted past max receives", &STD, INTER, 1, 500, 0, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 500 times (max_receives 50) without "
      "finishing (attempts counted: 1)"}, 0, 1, NULL, NULL, 0},
    /* No crash recorded: the reason says what happened, never worker-crashed. */
    {"interrupted, runs == max",    &STD, INTER, 5, 6, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "5 attempts already (max_attempts 5)"}, 0, 5, NULL, NULL, 0},
    {"lease lapsed",                &STD, TAKEN, 1, 3, 0, SAME, "",
     {RUN, 0, NULL, WARN, LAPSED}, 2, 0, NULL, NULL, 0},
    {"lease lapsed, runs == max",   &STD, TAKEN, 5, 6, 0, SAME, "",
     {DLQ, 0, "max-attempts", QUIET, "5 attempts already (max_attempts 5)"}, 0, 5, NULL, NULL, 0},
    {"lease lapsed at max receives", &STD, TAKEN, 1, 50, 0, SAME, "",
     {RUN, 0, NULL, WARN, LAPSED}, 2, 0, NULL, NULL, 0},
    {"lease lapsed past max receives", &STD, TAKEN, 1, 51, 0, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 51 times (max_receives 50) without finishing "
      "(attempts counted: 1); the last holder's lease expired before it recorded its run"},
     0, 1, NULL, NULL, 0},
    {"duplicate",                   &STD, COMPL, 1, 1, 0, SAME, "m-1",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message m-1; deleting"},
     0, 0, NULL, "completed", 0},
    {"duplicate past max: deleted", &REJ, COMPL, 1, 99, 0, SAME, "m-1",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message m-1; deleting"},
     0, 0, NULL, "completed", 0},
    {"duplicate of a migrated row", &REJ, COMPL, 1, 1, 0, UNKNOWN, "",
     {DEL, 0, NULL, INFO, "duplicate: key completed by message (migrated); deleting"},
     0, 0, NULL, "completed", 0},
    {"conflict, on_conflict skip",  &STD, COMPL, 1, 1, 0, OTHER, "m-1",
     {DEL, 0, NULL, WARN, "payload conflict: key completed by message m-1 with a different "
      "payload; skipping"}, 0, 0, NULL, "completed", 1},
    {"conflict, on_conflict reject", &REJ, COMPL, 1, 1, 0, OTHER, "m-1",
     {DLQ, 0, "payload-conflict", WARN, "payload conflict: key completed by message m-1 "
      "with a different payload; rejecting to the DLQ"},
     0, 0, "key k was completed by message m-1 with a different payload", NULL, 1},
    /* A live lease: hidden 2^(receives-1) s, never past the lease's end + 2 s. */
    {"busy, first meeting: 1 s",    &STD, BUSY, 1, 1, 10.7, SAME, "m-2",
     {HIDE, 1, NULL, INFO, "key held by a live lease (message m-2): hidden for 1s"},
     0, 0, NULL, "lease", 0},
    {"busy, second meeting: 2 s",   &STD, BUSY, 1, 2, 10.7, SAME, "m-2",
     {HIDE, 2, NULL, INFO, "key held by a live lease (message m-2): hidden for 2s"},
     0, 0, NULL, "lease", 0},
    {"busy, fourth meeting: 8 s",   &STD, BUSY, 1, 4, 10.7, SAME, "m-2",
     {HIDE, 8, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, capped by the lease",   &STD, BUSY, 1, 5, 10.7, SAME, "m-2",
     {HIDE, 12, NULL, INFO, "key held by a live lease (message m-2): hidden for 12s"},
     0, 0, NULL, "lease", 0},
    {"busy, holder unknown",        &STD, BUSY, 1, 1, 3, SAME, "",
     {HIDE, 1, NULL, INFO, "key held by a live lease (message ?): hidden for 1s"},
     0, 0, NULL, "lease", 0},
    {"busy at max receives: hidden", &STD, BUSY, 1, 50, 3, SAME, "m-2",
     {HIDE, 5, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy past max receives: DLQ", &STD, BUSY, 3, 51, 3, SAME, "m-2",
     {DLQ, 0, "max-receives", QUIET, "received 51 times (max_receives 50) while its key "
      "stayed held by message m-2"}, 0, 0, NULL, NULL, 0},
    {"busy, max_receives 1",        &ONE, BUSY, 0, 2, 3, SAME, "",
     {DLQ, 0, "max-receives", QUIET, "received 2 times (max_receives 1) while its key "
      "stayed held by message ?"}, 0, 0, NULL, NULL, 0},
    {"busy, lease 0",               &STD, BUSY, 1, 5, 0, SAME, "m-2",
     {HIDE, 2, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease -0.5",            &STD, BUSY, 1, 5, -0.5, SAME, "m-2",
     {HIDE, 2, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease -1.5",            &STD, BUSY, 1, 5, -1.5, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease -100",            &STD, BUSY, 1, 5, -100, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease 100, receives 17", &LONG, BUSY, 1, 17, 100, SAME, "m-2",
     {HIDE, 102, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease 43198",           &LONG, BUSY, 1, 17, 43198, SAME, "m-2",
     {HIDE, 43200, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease 43199, rcv 16",   &LONG, BUSY, 1, 16, 43199, SAME, "m-2",
     {HIDE, 32768, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease 1e300, rcv 199",  &LONG, BUSY, 1, 199, 1e300, SAME, "m-2",
     {HIDE, 43200, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease -1e300",          &STD, BUSY, 1, 3, -1e300, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, lease NaN",             &STD, BUSY, 1, 3, NAN, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy, receives 0 (unknown)",  &STD, BUSY, 1, 0, 10, SAME, "m-2",
     {HIDE, 1, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
    {"busy on a FIFO queue",        &FIFO, BUSY, 1, 3, 10, SAME, "m-2",
     {HIDE, 4, NULL, INFO, NULL}, 0, 0, NULL, "lease", 0},
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
        CHECK_INT(v.attempt, r->attempt);
        CHECK_INT(v.runs, r->runs);
        CHECK_INT(v.counted, 0);
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
     {RETRY, 0, NULL, INFO, "retry in 0s (attempt 1 of 5, the plugin's retry_after): x"}, 0},
    {"retry_after 60",                &STD, TWICE_RETRY, 1, 60, "x", 2,
     {RETRY, 60, NULL, INFO, "retry in 60s (attempt 1 of 5, the plugin's retry_after): x"}, 0},
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
        CHECK_INT(v.counted, v.action == RETRY); /* a retried run counts */
        CHECK_INT(v.runs, v.action == DLQ ? r->attempt : 0);
        CHECK_INT(v.attempt, 0);
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
    int counted; /* the release records the run as an attempt */
};

/* clang-format off */
static const struct failure_row failure_rows[] = {
/*   name                          failure             wait error   -> action delay reason level,
 *   counted */
    {"FIFO group blocked",         F(GROUP_BLOCKED),      0, NULL, {RETURN, 0, NULL, QUIET, NULL},
     0},
    {"transaction begin failed",   F(TX_BEGIN_FAILED),    0, NULL, {RETURN, 5, NULL, QUIET, NULL},
     0},
    {"lease lost before start",    F(LEASE_LOST),         0, NULL, {RUN, 0, NULL, WARN,
     "lease lost before the handler started; leaving the message to its new holder"}, 0},
    {"lease lost before completion", F(COMPLETE_LOST),    0, NULL, {RUN, 0, NULL, WARN,
     "lease lost before completion: another worker took the key over; leaving the message "
     "to it"}, 0},
    {"store lost at commit",       F(COMMIT_LOST),        0, "server closed the connection",
     {RETURN, 5, NULL, WARN, "commit failed with the connection (server closed the "
      "connection); giving the message back"}, 0},
    {"store lost, no error",       F(COMMIT_LOST),        0, NULL, {RETURN, 5, NULL, WARN,
     "commit failed with the connection (); giving the message back"}, 0},
    {"store lost in a tx run",     F(TX_LOST),            0, "insert: server closed the connection",
     {RETURN, 5, NULL, WARN, "transaction lost with the connection (insert: server closed the "
      "connection); giving the message back (not counted)"}, 0},
    {"draining",                   F(DRAINING),           0, NULL, {RETURN, 0, NULL, QUIET, NULL},
     0},
    {"drain in a FIFO wait",       F(DRAIN_IN_BACKOFF),   7, NULL, {RETURN, 7, NULL, QUIET, NULL},
     1},
    {"drain in a wait, none left", F(DRAIN_IN_BACKOFF),  -3, NULL, {RETURN, 0, NULL, QUIET, NULL},
     1},
    {"drain in a huge wait",       F(DRAIN_IN_BACKOFF), 99999, NULL,
     {RETURN, 43200, NULL, QUIET, NULL}, 1},
    {"drain deadline",             F(DRAIN_DEADLINE),     0, NULL, {RETURN, 0, NULL, QUIET, NULL},
     0},
    {"drain deadline, tx job",     F(DRAIN_DEADLINE_TX),  0, NULL, {RETURN, 3, NULL, QUIET, NULL},
     0},
    {"breaker open before start",  F(BREAKER_OPEN),      42, NULL, {RETURN, 42, NULL, INFO,
     "the queue's breaker is open: given back for 42s before it ran (not counted)"}, 0},
    {"breaker open, none left",    F(BREAKER_OPEN),       0, NULL, {RETURN, 1, NULL, INFO,
     "the queue's breaker is open: given back for 1s before it ran (not counted)"}, 0},
    {"breaker open, huge cooldown", F(BREAKER_OPEN),  99999, NULL, {RETURN, 43200, NULL, INFO,
     NULL}, 0},
    {"paused while received",      F(PAUSED),             0, NULL, {RETURN, 0, NULL, QUIET, NULL},
     0},
    {"paused, a wait given",       F(PAUSED),             3, NULL, {RETURN, 3, NULL, QUIET, NULL},
     0},
    {"claim refused by the store", F(CLAIM_STORE),        0, "claim (table t): permission "
     "denied for table t", {RETURN, 0, NULL, QUIET, NULL}, 0},
    {"DLQ refused the letter",     F(DLQ_REFUSED),        0, "(rejected) the dead letter is 9 "
     "bytes", {RETURN, 3600, NULL, TWICE_LOG_ERROR, "the dead-letter queue refused the dead "
     "letter: (rejected) the dead letter is 9 bytes; giving the message back for 3600s instead "
     "of retrying now"}, 0},
    {"DLQ kept failing the letter", F(DLQ_UNAVAILABLE),  0, "(rejected) SendMessage: "
     "InternalFailure", {RETURN, 300, NULL, TWICE_LOG_ERROR, "the dead-letter queue could not "
     "take the dead letter for now: (rejected) SendMessage: InternalFailure; giving the message "
     "back for 300s, its key released with its runs"}, 0},
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
        CHECK_INT(v.counted, r->counted);
        CHECK_INT(v.attempt + v.runs, 0);
    }
}

/* A completion that found its key no longer ours: done only when an earlier
 * completion of the job lost its answer and the key reads completed by its
 * message (that completion committed); else the lease was lost. */
static void
test_complete_missed(void)
{
    static const struct {
        const char *name;
        int answer_lost, completed_by_it;
        struct expect want;
    } rows[] = {
        {"answer lost, completed by it",
         1,
         1,
         {JOB_ACT_COMPLETE, 0, NULL, INFO,
          "the completion's answer was lost with the connection, and the key reads completed "
          "by this message: done"}},
        {"answer lost, not completed by it",
         1,
         0,
         {RUN, 0, NULL, WARN,
          "lease lost before completion: another worker took the key over; leaving the "
          "message to it"}},
        {"no answer lost, completed by it",
         0,
         1,
         {RUN, 0, NULL, WARN,
          "lease lost before completion: another worker took the key over; leaving the "
          "message to it"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        enum job_action got =
            lifecycle_on_complete_missed(rows[i].answer_lost, rows[i].completed_by_it, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        CHECK(v.duplicate == NULL && !v.conflict && !v.in_place && !v.counted);
    }
}

/* A transactional COMMIT that lost its connection: done when the key reads
 * completed by the job's message, else given back as the store's fault. */
static void
test_commit_unknown(void)
{
    struct lifecycle_verdict v;
    enum job_action got = lifecycle_on_commit_unknown(1, "connection lost during COMMIT", &v);
    struct expect done = {JOB_ACT_COMPLETE, 0, NULL, INFO,
                          "the commit's answer was lost with the connection, and the key reads "
                          "completed by this message: done"};
    check_verdict("COMMIT landed", got, &v, &done);
    got = lifecycle_on_commit_unknown(0, "connection lost during COMMIT", &v);
    struct expect back = {JOB_ACT_RETURN, 5, NULL, WARN,
                          "commit failed with the connection (connection lost during COMMIT); "
                          "giving the message back"};
    check_verdict("COMMIT not landed", got, &v, &back);
    CHECK_INT(v.counted, 0);
}

/* A DONE job whose completion could not be written before its worker must
 * exit: deleted anyway when it staged nothing (its effect happened; left, it
 * would come back and run again once its lease lapsed), and when it staged
 * follow-ups that SQS took, sent straight to it (they cannot be in the
 * outbox: no COMMIT of it went out); left when sending them failed (the job
 * runs again and stages them anew), and, without sending them, when a COMMIT
 * of its completion got no answer (they may be in the outbox: sent directly
 * too, they would go twice). */
static void
test_stop_unwritten(void)
{
    static const char deleted[] =
        "its effect happened, so its message is deleted; its key stays in progress, not "
        "completed, until its lease lapses (or the master frees it as interrupted): a "
        "message sent again with this key after that would run again";
    static const struct {
        const char *name;
        struct lifecycle_unwritten u;
        int sends; /* lifecycle_stop_sends */
        struct expect want;
    } rows[] = {
        {"nothing staged",
         {0, 0, 0, "idempotency store unreachable", NULL},
         0,
         {DEL, 0, NULL, WARN,
          "stopping before its completion could be written (idempotency store unreachable): "
          "its effect happened, so its message is deleted; its key stays in progress, not "
          "completed, until its lease lapses (or the master frees it as interrupted): a "
          "message sent again with this key after that would run again"}},
        {"nothing staged, no error text",
         {0, 0, 0, NULL, NULL},
         0,
         {DEL, 0, NULL, WARN,
          "stopping before its completion could be written (): its effect happened, so its "
          "message is deleted; its key stays in progress, not completed, until its lease "
          "lapses (or the master frees it as interrupted): a message sent again with this key "
          "after that would run again"}},
        {"nothing staged, a COMMIT unanswered",
         {0, 1, 0, "server closed the connection unexpectedly", NULL},
         0,
         {DEL, 0, NULL, WARN,
          "stopping before its completion could be written (server closed the connection "
          "unexpectedly): its effect happened, so its message is deleted; its key stays in "
          "progress, not completed, until its lease lapses (or the master frees it as "
          "interrupted): a message sent again with this key after that would run again"}},
        {"one follow-up staged, sent",
         {1, 0, 0, "idempotency store unreachable", NULL},
         1,
         {DEL, 0, NULL, WARN,
          "sent its 1 follow-up message directly to SQS (the outbox could not take them), "
          "stopping before its completion could be written (idempotency store unreachable): "
          "its effect happened, so its message is deleted; its key stays in progress, not "
          "completed, until its lease lapses (or the master frees it as interrupted): a "
          "message sent again with this key after that would run again"}},
        {"follow-ups staged, sent",
         {3, 0, 0, "idempotency store unreachable", NULL},
         1,
         {DEL, 0, NULL, WARN,
          "sent its 3 follow-up messages directly to SQS (the outbox could not take them), "
          "stopping before its completion could be written (idempotency store unreachable): "
          "its effect happened, so its message is deleted; its key stays in progress, not "
          "completed, until its lease lapses (or the master frees it as interrupted): a "
          "message sent again with this key after that would run again"}},
        {"follow-ups staged, a send failed",
         {2, 0, 1, "idempotency store unreachable",
          "queue https://sqs/1/gone: SendMessageBatch: QueueDoesNotExist: no such queue"},
         1,
         {RUN, 0, NULL, WARN,
          "stopping before its completion could be written, sending its 2 follow-up messages "
          "directly to SQS failed (queue https://sqs/1/gone: SendMessageBatch: "
          "QueueDoesNotExist: no such queue), so its message is left: it comes back after its "
          "visibility timeout and, once its lease lapses, runs again (its follow-ups then go "
          "through the outbox, with the same twice-outbox-id)"}},
        {"one follow-up staged, a send failed, no error text",
         {1, 0, 1, NULL, NULL},
         1,
         {RUN, 0, NULL, WARN,
          "stopping before its completion could be written, sending its 1 follow-up message "
          "directly to SQS failed (), so its message is left: it comes back after its "
          "visibility timeout and, once its lease lapses, runs again (its follow-ups then go "
          "through the outbox, with the same twice-outbox-id)"}},
        {"follow-ups staged, a COMMIT unanswered",
         {2, 1, 0, "server closed the connection unexpectedly", NULL},
         0,
         {RUN, 0, NULL, WARN,
          "stopping before its completion could be written (server closed the connection "
          "unexpectedly): a COMMIT of it got no answer, so its 2 follow-up messages may be in "
          "the outbox; its message is left: a duplicate when it comes back if that COMMIT "
          "took, else it runs again once its lease lapses"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        const struct lifecycle_unwritten *u = &rows[i].u;
        CHECK_INT(lifecycle_stop_sends(u->staged, u->outbox_unsure), rows[i].sends);
        enum job_action got = lifecycle_on_stop_unwritten(u, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        CHECK(v.duplicate == NULL && !v.conflict && !v.in_place && !v.counted);
        CHECK_INT(v.attempt + v.runs, 0);
        if (got == DEL) {
            CHECK_CONTAINS(v.log.after, deleted);
        }
    }
}

/* A DONE job's completion that failed while the worker runs: tried again for
 * as long as the store is unreachable, within the 12 h SQS can keep its message
 * hidden; given up (its message then comes back) after an SQL error. */
static void
test_completion_waits(void)
{
    CHECK_INT(lifecycle_completion_waits(1, 0.0), 1);
    CHECK_INT(lifecycle_completion_waits(1, 25.0), 1);   /* past the acker's tries */
    CHECK_INT(lifecycle_completion_waits(1, 3600.0), 1); /* a long outage */
    CHECK_INT(lifecycle_completion_waits(1, 43199.0), 1);
    CHECK_INT(lifecycle_completion_waits(1, 43200.0), 0); /* SQS shows it again anyway */
    CHECK_INT(lifecycle_completion_waits(0, 0.0), 0);     /* an SQL error */
    CHECK_INT(lifecycle_completion_waits(0, 25.0), 0);
}

/* A claim that failed through the message's own data: given back for the
 * RETRY backoff (full jitter over min(cap, base * 2^(receives-1)), at least
 * 1 s), never counted; dead-lettered only past max_receives, with the
 * store's error. */
static void
test_claim_failed(void)
{
    static const struct {
        const char *name;
        const struct lifecycle_queue *q;
        int receives;
        uint64_t random;
        const char *error;
        struct expect want;
    } rows[] = {
        {"first receive, no wait drawn", &STD, 1, 0, "boom", {RETURN, 1, NULL, QUIET, NULL}},
        {"first receive, the most", &STD, 1, 2, "boom", {RETURN, 2, NULL, QUIET, NULL}},
        {"third receive, the most", &STD, 3, 8, "boom", {RETURN, 8, NULL, QUIET, NULL}},
        {"third receive, jitter", &STD, 3, 9 + 5, "boom", {RETURN, 5, NULL, QUIET, NULL}},
        {"past max_attempts", &STD, 6, 63, "boom", {RETURN, 63, NULL, QUIET, NULL}},
        {"at max_receives, capped", &STD, 50, 300, "boom", {RETURN, 300, NULL, QUIET, NULL}},
        {"a zero backoff", &ZERO, 4, 7, "boom", {RETURN, 1, NULL, QUIET, NULL}},
        {"past SQS's 12 h",
         &BIG,
         5,
         99999,
         "boom",
         {RETURN, LIFECYCLE_MAX_DELAY, NULL, QUIET, NULL}},
        {"past max_receives",
         &STD,
         51,
         5,
         "permission denied for table t",
         {DLQ, 0, "max-receives", QUIET,
          "received 51 times (max_receives 50) and its claim failed: permission denied for "
          "table t"}},
        {"no error text",
         &ONE,
         2,
         5,
         NULL,
         {DLQ, 0, "max-receives", QUIET,
          "received 2 times (max_receives 1) and its claim failed: "}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_claim_failed(rows[i].q, rows[i].receives,
                                                        rows[i].random, rows[i].error, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        CHECK_INT(v.counted + v.runs + v.attempt, 0);
    }
}

/* A transactional job's completion the store refused on a live connection
 * (lifecycle_on_commit_refused): its work rolled back with it, so given back
 * for the RETRY backoff of its receives, never counted, whatever its attempt
 * (the last one too: it is not dead-lettered for it), the store's error in
 * the warning. */
static void
test_commit_refused(void)
{
    static const struct {
        const char *name;
        int receives, attempt;
        uint64_t random;
        const char *error;
        struct expect want;
    } rows[] = {
        {"first receive",
         1,
         1,
         2,
         "tx complete: canceling statement due to statement timeout",
         {RETURN, 2, NULL, WARN,
          "the store refused its completion (tx complete: canceling statement due to statement "
          "timeout): its work was rolled back with it; given back for 2s, attempt 1 not "
          "counted"}},
        {"third receive, jitter", 3, 1, 9 + 5, "x", {RETURN, 5, NULL, WARN, NULL}},
        {"the last attempt", 4, 5, 7, "x", {RETURN, 7, NULL, WARN, NULL}},
        {"capped", 40, 2, 300, "x", {RETURN, 300, NULL, WARN, NULL}},
        {"no error text",
         1,
         2,
         0,
         NULL,
         {RETURN, 1, NULL, WARN,
          "the store refused its completion (): its work was rolled back with it; given back "
          "for 1s, attempt 2 not counted"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        enum job_action got = lifecycle_on_commit_refused(&STD, rows[i].receives, rows[i].attempt,
                                                          rows[i].random, rows[i].error, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        CHECK_INT(v.counted + v.runs + v.attempt + v.in_place, 0);
    }
}

/* A transactional run that answered RETRY or REJECT after a statement of the
 * plugin's failed through the store's fault and aborted its transaction
 * (lifecycle_on_store_aborted): nothing it did landed, so the run is the
 * store's: given back for the RETRY backoff of its receives, never counted nor
 * dead-lettered, whatever its attempt (the last one too) or its answer, the
 * statement's SQLSTATE and message and the plugin's answer in the warning. */
static void
test_store_aborted(void)
{
    static const struct {
        const char *name;
        twice_status status;
        int receives, attempt;
        uint64_t random;
        const char *error;
        struct expect want;
    } rows[] = {
        {"a RETRY",
         TWICE_RETRY,
         1,
         1,
         2,
         "SQLSTATE 57014: canceling statement due to statement timeout",
         {RETURN, 2, NULL, WARN,
          "a statement of the plugin failed through the store's fault (SQLSTATE 57014: "
          "canceling statement due to statement timeout), aborting its transaction, so its "
          "RETRY is not the job's: given back for 2s, attempt 1 not counted"}},
        {"a REJECT, not dead-lettered",
         TWICE_REJECT,
         2,
         3,
         0,
         "SQLSTATE 25006: cannot execute INSERT in a read-only transaction",
         {RETURN, 1, NULL, WARN,
          "a statement of the plugin failed through the store's fault (SQLSTATE 25006: cannot "
          "execute INSERT in a read-only transaction), aborting its transaction, so its REJECT "
          "is not the job's: given back for 1s, attempt 3 not counted"}},
        {"the last attempt, not dead-lettered",
         TWICE_RETRY,
         4,
         5,
         7,
         "x",
         {RETURN, 7, NULL, WARN, NULL}},
        {"third receive, jitter", TWICE_RETRY, 3, 1, 9 + 5, "x", {RETURN, 5, NULL, WARN, NULL}},
        {"capped", TWICE_RETRY, 40, 2, 300, "x", {RETURN, 300, NULL, WARN, NULL}},
        {"no error text",
         TWICE_RETRY,
         1,
         2,
         0,
         NULL,
         {RETURN, 1, NULL, WARN,
          "a statement of the plugin failed through the store's fault (), aborting its "
          "transaction, so its RETRY is not the job's: given back for 1s, attempt 2 not "
          "counted"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        enum job_action got =
            lifecycle_on_store_aborted(&STD, rows[i].status, rows[i].receives, rows[i].attempt,
                                       rows[i].random, rows[i].error, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        CHECK_INT(v.counted + v.runs + v.attempt + v.in_place, 0);
    }
    /* the same run on the last attempt, answered by the plugin alone: dead-lettered */
    struct lifecycle_run run = {.status = TWICE_RETRY, .attempt = 5, .retry_after = -1};
    struct lifecycle_verdict v;
    CHECK_INT(lifecycle_on_handled(&STD, &run, &v), DLQ);
}

/* A claim's answer limit: a third of the visibility timeout, at least 2 s (a
 * queue of a few seconds), at most the acker's 30 s (the default queue's is 10 s). */
static void
test_answer_ms(void)
{
    CHECK_INT(lifecycle_answer_ms(1), LIFECYCLE_ANSWER_MIN_MS);
    CHECK_INT(lifecycle_answer_ms(6), 2000);
    CHECK_INT(lifecycle_answer_ms(30), 10000);
    CHECK_INT(lifecycle_answer_ms(90), 30000);
    CHECK_INT(lifecycle_answer_ms(43200), LIFECYCLE_ANSWER_MAX_MS);
}

/* A run past the queue's timeout (timeout 5 s, grace 10 s unless said): retried
 * after the backoff but never before the grace + 2 s have passed, counted, never in
 * place; dead-lettered as "timeout" on the last attempt. */
static void
test_timeout(void)
{
    static const struct lifecycle_queue TMO = {3, 30, 2, 300, 0, 0, 5, 10};
    static const struct lifecycle_queue TMO_FIFO = {3, 30, 2, 300, 1, 0, 5, 10};
    static const struct lifecycle_queue TMO_SLOW = {3, 30, 100, 300, 0, 0, 5, 10};
    static const struct lifecycle_queue TMO_NOGRACE = {3, 30, 2, 300, 0, 0, 5, 0};
    static const struct lifecycle_queue TMO_ONE = {1, 10, 2, 300, 0, 0, 60, 10};
    static const struct {
        const char *name;
        const struct lifecycle_queue *q;
        int attempt;
        int open; /* the breaker's cooldown left, 0: closed */
        uint64_t random;
        struct expect want;
    } rows[] = {
        {"first attempt: at least the grace + 2",
         &TMO,
         1,
         0,
         2,
         {RETRY, 12, NULL, WARN, "ran past its timeout (5s) on attempt 1 of 3: retry in 12s"}},
        {"FIFO: through SQS, not in place",
         &TMO_FIFO,
         2,
         0,
         0,
         {RETRY, 12, NULL, WARN, "ran past its timeout (5s) on attempt 2 of 3: retry in 12s"}},
        {"backoff longer than the grace",
         &TMO_SLOW,
         2,
         0,
         150,
         {RETRY, 150, NULL, WARN, "ran past its timeout (5s) on attempt 2 of 3: retry in 150s"}},
        {"no grace: 2 s",
         &TMO_NOGRACE,
         1,
         0,
         0,
         {RETRY, 2, NULL, WARN, "ran past its timeout (5s) on attempt 1 of 3: retry in 2s"}},
        {"last attempt",
         &TMO,
         3,
         0,
         7,
         {DLQ, 0, "timeout", WARN, "ran past its timeout (5s) on attempt 3 of 3: dead-lettering"}},
        {"past the last attempt",
         &TMO,
         4,
         0,
         7,
         {DLQ, 0, "timeout", WARN, "ran past its timeout (5s) on attempt 4 of 3: dead-lettering"}},
        {"max_attempts 1",
         &TMO_ONE,
         1,
         0,
         7,
         {DLQ, 0, "timeout", WARN,
          "ran past its timeout (60s) on attempt 1 of 1: dead-lettering"}},
        {"breaker open: given back for the cooldown left, not counted",
         &TMO,
         1,
         30,
         2,
         {RETURN, 30, NULL, WARN,
          "ran past its timeout (5s) on attempt 1: the queue's breaker is open: given back for "
          "30s, attempt 1 not counted"}},
        {"breaker open on the last attempt: not dead-lettered",
         &TMO,
         3,
         30,
         7,
         {RETURN, 30, NULL, WARN,
          "ran past its timeout (5s) on attempt 3: the queue's breaker is open: given back for "
          "30s, attempt 3 not counted"}},
        {"breaker open, a cooldown shorter than the grace: the grace + 2",
         &TMO,
         2,
         3,
         7,
         {RETURN, 12, NULL, WARN,
          "ran past its timeout (5s) on attempt 2: the queue's breaker is open: given back for "
          "12s, attempt 2 not counted"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_verdict v;
        enum job_action got =
            lifecycle_on_timeout(rows[i].q, rows[i].attempt, rows[i].open, rows[i].random, &v);
        check_verdict(rows[i].name, got, &v, &rows[i].want);
        int before = check_failures;
        CHECK_INT(v.in_place, 0);
        CHECK_INT(v.counted, v.action == RETRY);
        CHECK_INT(v.runs, v.action == DLQ ? rows[i].attempt : 0);
        if (v.action == DLQ) {
            char detail[512];
            text_join(&v.detail, detail, sizeof(detail));
            char want[128];
            snprintf(want, sizeof(want), "attempt %d of %d ran past its timeout (%ds)",
                     rows[i].attempt, rows[i].q->max_attempts, rows[i].q->timeout);
            CHECK_STR(detail, want);
        }
        if (check_failures != before) {
            fprintf(stderr, "  in row \"%s\"\n", rows[i].name);
        }
    }
}

/* An unbounded plugin error is carried whole, never cut to a buffer. */
static void
test_long_error_is_not_cut(void)
{
    static char error[5000];
    memset(error, 'e', sizeof(error) - 1);
    struct lifecycle_run run = {TWICE_RETRY, 5, -1, error, 0, 0, 0};
    struct lifecycle_verdict v;
    CHECK_INT(lifecycle_on_handled(&STD, &run, &v), DLQ);
    CHECK(v.detail.arg == error);
    run.attempt = 1;
    CHECK_INT(lifecycle_on_handled(&STD, &run, &v), RETRY);
    CHECK(v.log.arg == error);
}

/* A RETRY while the queue's breaker is open is an outage, not the job's
 * failure: given back for the cooldown left, never counted, never
 * dead-lettered, whatever its attempt (issue 16.2). DONE and REJECT are not
 * affected. */
static void
test_breaker_open_runs(void)
{
    static const struct {
        const char *name;
        int status, attempt, retry_after, open_delay;
        struct expect want;
    } rows[] = {
        {"retry, first attempt",
         TWICE_RETRY,
         1,
         -1,
         30,
         {RETURN, 30, NULL, INFO,
          "the queue's breaker is open: given back for 30s, attempt 1 not counted: x"}},
        {"retry, the last attempt", TWICE_RETRY, 5, -1, 30, {RETURN, 30, NULL, INFO, NULL}},
        {"retry past max", TWICE_RETRY, 9, -1, 30, {RETURN, 30, NULL, INFO, NULL}},
        {"retry_after is not the wait", TWICE_RETRY, 1, 5, 30, {RETURN, 30, NULL, INFO, NULL}},
        {"cooldown left 0: 1 s", TWICE_RETRY, 1, -1, 0, {RETURN, 1, NULL, INFO, NULL}},
        {"huge cooldown", TWICE_RETRY, 1, -1, 99999, {RETURN, 43200, NULL, INFO, NULL}},
        {"unknown status", 7, 5, -1, 10, {RETURN, 10, NULL, INFO, NULL}},
        {"done", TWICE_DONE, 5, -1, 30, {DONE, 0, NULL, QUIET, NULL}},
        {"reject", TWICE_REJECT, 1, -1, 30, {DLQ, 0, "rejected", QUIET, "x"}},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct lifecycle_run run = {
            .status = (twice_status) rows[i].status,
            .attempt = rows[i].attempt,
            .retry_after = rows[i].retry_after,
            .error = "x",
            .random = 1,
            .breaker_open = 1,
            .open_delay = rows[i].open_delay,
        };
        struct lifecycle_verdict v;
        check_verdict(rows[i].name, lifecycle_on_handled(&STD, &run, &v), &v, &rows[i].want);
        CHECK_INT(v.counted, 0);
        CHECK_INT(v.in_place, 0);
        CHECK_INT(v.runs, v.action == DLQ ? rows[i].attempt : 0);
    }
    /* On a FIFO queue too: given back, not retried in place. */
    struct lifecycle_run run = {.status = TWICE_RETRY,
                                .attempt = 5,
                                .retry_after = -1,
                                .breaker_open = 1,
                                .open_delay = 20};
    struct lifecycle_verdict v;
    CHECK_INT(lifecycle_on_handled(&FIFO, &run, &v), RETURN);
    CHECK_INT(v.delay, 20);
    CHECK_INT(v.in_place + v.counted, 0);
}

int
main(void)
{
    test_claim_table();
    test_run_table();
    test_leader_table();
    test_failure_table();
    test_complete_missed();
    test_commit_unknown();
    test_stop_unwritten();
    test_completion_waits();
    test_breaker_open_runs();
    test_claim_failed();
    test_commit_refused();
    test_store_aborted();
    test_answer_ms();
    test_long_error_is_not_cut();
    test_timeout();
    return check_done("test-lifecycle");
}
