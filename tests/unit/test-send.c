/*
 * test-send.c - api->send()'s checks at the call (text/sendcheck.c) and its
 * queue resolution (plugin/send.c), through the daemon's functions and the
 * SDK's mock host: the same refusals from both, nothing staged by a RETRY.
 */
#include "check.h"
#include "config.h"
#include "outbox.h"
#include "send.h"
#include "sendcheck.h"

#include <stdlib.h>
#include <string.h>
#include <twice/mock.h>

#define STD  "https://sqs.eu-west-1.amazonaws.com/1/jobs"
#define FIFO "https://sqs.eu-west-1.amazonaws.com/1/jobs.fifo"

/* The reason sendcheck gives, or "" when it accepts the message. */
static const char *
why_not(const char *url, const char *body, size_t len, int delay, const char *group,
        const char *const *attrs)
{
    static char why[400];
    char *json = NULL;
    why[0] = '\0';
    if (sendcheck_message(url, "k", 0, body, len, delay, group, attrs, &json, why, sizeof(why)) ==
        0) {
        CHECK_STR(why, "");
    }
    free(json);
    return why;
}

static void
test_checks(void)
{
    CHECK_STR(why_not(STD, "{}", 2, 0, NULL, NULL), "");
    CHECK_CONTAINS(why_not(STD, "", 0, 0, NULL, NULL), "empty");
    CHECK_CONTAINS(why_not(STD, "a\001b", 3, 0, NULL, NULL), "not text SQS takes");
    CHECK_CONTAINS(why_not(STD, "a\0b", 3, 0, NULL, NULL), "not text SQS takes");
    CHECK_CONTAINS(why_not(STD, "\xff", 1, 0, NULL, NULL), "not text SQS takes");
    CHECK_CONTAINS(why_not(STD, "\xef\xbf\xbf", 3, 0, NULL, NULL), "not text SQS takes");
    CHECK_STR(why_not(STD, "tab\tcr\rlf\n\xe2\x82\xac", 13, 0, NULL, NULL), "");
    CHECK_CONTAINS(why_not(STD, "{}", 2, 901, NULL, NULL), "0-900");
    CHECK_CONTAINS(why_not(STD, "{}", 2, -1, NULL, NULL), "0-900");
    CHECK_CONTAINS(why_not(FIFO, "{}", 2, 0, NULL, NULL), "needs a group id");
    CHECK_CONTAINS(why_not(FIFO, "{}", 2, 5, "g", NULL), "FIFO queues take no");
    CHECK_STR(why_not(FIFO, "{}", 2, 0, "g", NULL), "");
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, "bad group", NULL), "group id");
    const char *const ok[] = {"a", "1", "b.c", "2", NULL};
    CHECK_STR(why_not(STD, "{}", 2, 0, NULL, ok), "");
    const char *const reserved[] = {"twice-outbox-id", "x", NULL};
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, NULL, reserved), "not allowed");
    const char *const twices[] = {"twice-reason", "x", NULL};
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, NULL, twices), "not allowed");
    CHECK(sendcheck_twice_attr("twice-reason") && sendcheck_twice_attr("twice-"));
    CHECK(!sendcheck_twice_attr("twice-outbox-id") && !sendcheck_twice_attr("twicex"));
    const char *const aws[] = {"AWS.x", "x", NULL};
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, NULL, aws), "not allowed");
    const char *const empty[] = {"a", "", NULL};
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, NULL, empty), "missing or empty");
    const char *const ten[] = {"a0", "v",  "a1", "v",  "a2", "v",  "a3", "v",  "a4", "v", "a5",
                               "v",  "a6", "v",  "a7", "v",  "a8", "v",  "a9", "v",  NULL};
    CHECK_CONTAINS(why_not(STD, "{}", 2, 0, NULL, ten), "more than 9 attributes");
    /* 1 MiB is the limit with the attributes and twice-outbox-id */
    size_t n = SENDCHECK_MAX_BYTES;
    char *big = malloc(n + 1);
    memset(big, 'x', n + 1);
    CHECK_CONTAINS(why_not(STD, big, n + 1, 0, NULL, NULL), "over SQS's limit");
    CHECK_CONTAINS(why_not(STD, big, n, 0, NULL, NULL), "with its attributes");
    CHECK_STR(why_not(STD, big, n - 100, 0, NULL, NULL), "");
    /* to the byte, as SQS counts: the body, then "twice-outbox-id", "String"
     * and "k#0" (24 bytes) */
    CHECK_STR(why_not(STD, big, n - 24, 0, NULL, NULL), "");
    CHECK_CONTAINS(why_not(STD, big, n - 23, 0, NULL, NULL),
                   "the message is 1048577 bytes with its attributes");
    /* the index's digits count: "k#1000" is three bytes longer */
    char *json = NULL, why[400] = "";
    CHECK_INT(
        sendcheck_message(STD, "k", 999, big, n - 26, 0, NULL, NULL, &json, why, sizeof(why)), 0);
    CHECK_INT(
        sendcheck_message(STD, "k", 1000, big, n - 26, 0, NULL, NULL, &json, why, sizeof(why)),
        -1);
    CHECK_CONTAINS(why, "the message is 1048577 bytes");
    free(big);
}

static void
test_resolve(void)
{
    struct config_queue q[1] = {{.name = "jobs", .url = STD}};
    struct config c = {.queues = q, .nqueues = 1};
    struct outbox_msg m;
    char why[600];
    CHECK_INT(
        send_prepare(&c, "k", 0, "jobs", "{}", (size_t) -1, 0, NULL, NULL, &m, why, sizeof(why)),
        0);
    CHECK_STR(m.url, STD);
    CHECK_STR(m.queue, "jobs");
    CHECK_STR(m.body, "{}");
    outbox_msg_clear(&m);
    CHECK_INT(send_prepare(&c, "k", 0, FIFO, "{}", 2, 0, "g", NULL, &m, why, sizeof(why)), 0);
    CHECK_STR(m.url, FIFO);
    CHECK_STR(m.group_id, "g");
    outbox_msg_clear(&m);
    CHECK_INT(send_prepare(&c, "k", 0, "nope", "{}", 2, 0, NULL, NULL, &m, why, sizeof(why)), -1);
    CHECK_CONTAINS(why, "queue \"nope\" is not a queue of twice.conf");
    CHECK(m.url == NULL && m.body == NULL);
    CHECK_INT(send_prepare(&c, "k", 0, NULL, "{}", 2, 0, NULL, NULL, &m, why, sizeof(why)), -1);
}

/* A plugin sending what its body says, then DONE or RETRY. */
static const twice_api *api;

static int
p_init(const twice_api *a, const twice_settings *s, void **state)
{
    (void) s;
    (void) state;
    api = a;
    return 0;
}

static twice_status
p_handle(void *state, twice_job *job)
{
    (void) state;
    const char *to = api->field(job, "to", NULL);
    api->send(job, to, "{\"hi\":1}", (size_t) -1, 0, NULL, NULL);
    api->send(job, to, "{\"hi\":2}", (size_t) -1, 0, NULL, NULL);
    const char *then = api->field(job, "then", NULL);
    return then != NULL && strcmp(then, "retry") == 0 ? TWICE_RETRY : TWICE_DONE;
}

static const twice_plugin plugin = {.magic = TWICE_ABI_MAGIC,
                                    .abi_major = TWICE_ABI_MAJOR,
                                    .abi_minor = TWICE_ABI_MINOR,
                                    .size = sizeof(twice_plugin),
                                    .name = "sender",
                                    .version = "1",
                                    .key_template = "s:{id}",
                                    .init = p_init,
                                    .handle = p_handle};

static void
test_mock(void)
{
    twice_mock *m = twice_mock_new(&plugin);
    CHECK(m != NULL);
    CHECK_INT(twice_mock_queue(m, "notify", STD), 0);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":\"1\",\"to\":\"notify\"}");
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_INT(twice_mock_job_sent_count(j), 2);
    const char *url = NULL;
    CHECK_STR(twice_mock_job_sent(j, 1, &url, NULL, NULL, NULL), "{\"hi\":2}");
    CHECK_STR(url, STD);
    CHECK(twice_mock_job_sent(j, 2, NULL, NULL, NULL, NULL) == NULL);
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{\"id\":\"2\",\"to\":\"notify\",\"then\":\"retry\"}");
    CHECK_INT(twice_mock_run(j), TWICE_RETRY);
    CHECK_INT(twice_mock_job_sent_count(j), 0);
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{\"id\":\"3\",\"to\":\"elsewhere\"}");
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    /* twiced's words, whole (text/sendcheck.c resolves for both hosts) */
    CHECK_STR(twice_mock_job_error(j), "send: queue \"elsewhere\" is not a queue of twice.conf "
                                       "(name one of its queues, or give a queue URL)");
    CHECK_INT(twice_mock_job_sent_count(j), 0);
    twice_mock_job_free(j);
    twice_mock_free(m);
}

int
main(void)
{
    test_checks();
    test_resolve();
    test_mock();
    return check_done("send");
}
