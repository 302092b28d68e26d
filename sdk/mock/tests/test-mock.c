/*
 * test-mock.c - the SDK mock host, tested with a small plugin linked into
 * this test ("probe") and one loaded from a .so (tiny_plugin.c): settings
 * checks, init/fini, every API function's documented answer, key
 * templates and derive_key, captured logs, runs on several threads, and
 * a job used after its handle() returned or from another thread refused.
 */
#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/mock.h>

/* ---- the linked plugin ---- */

static const twice_api *api;
static int fini_called;

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    const char *count = a->setting(s, "count");
    if (strcmp(count, "0") == 0) {
        a->setting_error(s, "count", "must be at least %d", 1);
        return -1;
    }
    if (strcmp(count, "7") == 0) {
        a->setting_error(s, "loud", "ignored at %s", count); /* and init goes on */
    }
    if (strcmp(count, "8") == 0) {
        a->setting_error(s, "count", "bad\tvalue %s", "\xff"); /* escaped, as twiced says it */
        return -1;
    }
    if (strcmp(count, "9") == 0) { /* 500 e-acutes: cut between characters, marked */
        char long_why[1001];
        for (int i = 0; i < 500; i++) {
            memcpy(long_why + 2 * i, "\xc3\xa9", 2);
        }
        long_why[1000] = '\0';
        a->setting_error(s, "count", "%s", long_why);
        return -1;
    }
    if (strcmp(count, "-1") == 0) {
        a->setting_error(s, "counts", "a name the plugin does not declare");
        return -1;
    }
    const char *loud = a->setting(s, "loud");
    a->log(NULL, TWICE_LOG_INFO, "greeting=%s count=%s loud=%s", a->setting(s, "greeting"),
           a->setting(s, "count"), loud != NULL ? loud : "(null)");
    *state = (void *) "probe-state";
    return 0;
}

static void
fini(void *state)
{
    fini_called = state != NULL && strcmp(state, "probe-state") == 0;
}

static const char *const paths[] = {"s", "i",       "r",       "r2",     "t",    "f", "n",
                                    "o", "o.a.1.b", "missing", "o.a.01", "o..a", NULL};

static void
log_fields(twice_job *job)
{
    for (size_t i = 0; paths[i] != NULL; i++) {
        const char *v = api->field(job, paths[i], NULL);
        api->log(job, TWICE_LOG_DEBUG, "%s=%s", paths[i], v != NULL ? v : "(null)");
    }
    size_t len = 0;
    const char *o = api->field_json(job, "o", &len);
    api->log(job, TWICE_LOG_DEBUG, "json o=%s len=%zu", o, len);
    const char *attr = api->attr(job, "Tenant", NULL), *bin = api->attr(job, "Blob", NULL);
    const char *group = api->group_id(job);
    api->log(job, TWICE_LOG_INFO, "key=%s msg=%s attempt=%d tenant=%s blob=%s group=%s db=%s",
             api->key(job), api->message_id(job), api->attempt(job), attr ? attr : "(null)",
             bin ? bin : "(null)", group ? group : "(null)", api->db(job) ? "yes" : "no");
    const char *tp = TWICE_API_HAS(api, traceparent) ? api->traceparent(job) : "(no 1.1 host)";
    api->log(job, TWICE_LOG_INFO, "traceparent=%s", tp != NULL ? tp : "(null)");
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *action = api->field(job, "action", NULL);
    if (action == NULL) {
        return TWICE_DONE;
    }
    if (strcmp(action, "fields") == 0) {
        log_fields(job);
        return TWICE_DONE;
    }
    if (strcmp(action, "retry") == 0) {
        api->error(job, "first");
        api->error(job, "second %d", 2);
        api->retry_after(job, 99999);
        return TWICE_RETRY;
    }
    if (strcmp(action, "control") == 0) {
        api->log(job, TWICE_LOG_WARN, "tab\there\x01 bad\xff quote\" back\\ \xc3\xa9");
        api->log(NULL, TWICE_LOG_INFO, "line\nbreak\r");
        api->setting_error(NULL, "count", "too late"); /* no settings: as twiced says it */
        return TWICE_DONE;
    }
    if (strcmp(action, "reject") == 0) {
        api->error(job, "no such thing");
        return TWICE_REJECT;
    }
    if (strcmp(action, "long") == 0) { /* a body logged whole, an error quoting it */
        static char text[6001];
        memset(text, 'x', sizeof(text) - 1);
        memcpy(text + 1023, "\xc3\xa9", 2); /* spans JOB_ERROR_MAX's last byte */
        api->log(job, TWICE_LOG_INFO, "body %s", text);
        api->error(job, "%.2000s", text);
        const char *tenant = api->attr(job, "Tenant", NULL);
        api->log(job, TWICE_LOG_INFO, "tenant=%s", tenant != NULL ? tenant : "(null)");
        return strcmp(api->field(job, "id", NULL), "r") == 0 ? TWICE_REJECT : TWICE_RETRY;
    }
    return (twice_status) 7;
}

static const twice_setting settings[] = {
    {"greeting", TWICE_SETTING_STRING, 0, "hi", "what to say"},
    {"count", TWICE_SETTING_INT, 1, NULL, "how many"},
    {"loud", TWICE_SETTING_BOOL, 0, NULL, "shout"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "probe", .version = "1", .key_template = "probe:{id}", .settings = settings,
             .init = init, .handle = handle, .fini = fini)

/* ---- tests ---- */

static const char *
job_line(twice_mock_job *j, const char *prefix)
{
    for (size_t i = 0; i < twice_mock_job_log_count(j); i++) {
        const char *t = twice_mock_job_log_text(j, i, NULL);
        if (strncmp(t, prefix, strlen(prefix)) == 0) {
            return t;
        }
    }
    return "(no such line)";
}

static void
test_settings(void)
{
    twice_mock *m = twice_mock_new(twice_plugin_entry());
    CHECK(m != NULL);
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "missing required setting 'count'");
    twice_mock_set(m, "count", "many");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "setting 'count' must be an integer");
    twice_mock_set(m, "count", "3");
    twice_mock_set(m, "colour", "red");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "unknown setting 'colour'");
    twice_mock_free(m);

    /* api->setting_error: the host's words, the setting named */
    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "0");
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m), "plugin 'probe': setting 'count': must be at least 1");
    CHECK_INT(twice_mock_log_count(m), 0); /* said once, as the host does */
    twice_mock_free(m);
    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "8");
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m), "plugin 'probe': setting 'count': bad\\tvalue \\xff");
    twice_mock_free(m);
    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "9");
    CHECK(twice_mock_init(m) != 0);
    const char *e = twice_mock_error(m);
    CHECK(strlen(e) > 3 && strcmp(e + strlen(e) - 3, "...") == 0);
    CHECK(strstr(e, "\\x") == NULL); /* no half character shown as bytes */
    twice_mock_free(m);
    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "7");
    CHECK_INT(twice_mock_init(m), 0); /* blamed, yet init went on: a warning */
    twice_log_level level = TWICE_LOG_DEBUG;
    CHECK_STR(twice_mock_log_text(m, twice_mock_log_count(m) - 1, &level),
              "setting 'loud': ignored at 7");
    CHECK_INT(level, TWICE_LOG_WARN);
    twice_mock_free(m);
    fini_called = 0;
    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "-1");
    CHECK(twice_mock_init(m) != 0);
    CHECK_CONTAINS(twice_mock_error(m), "init failed (returned -1");
    CHECK_STR(twice_mock_log_text(m, twice_mock_log_count(m) - 1, NULL),
              "setting error for an undeclared setting 'counts': a name the plugin does not "
              "declare");
    twice_mock_free(m);
    CHECK(!fini_called); /* init never succeeded */

    m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "3");
    twice_mock_set(m, "loud", "yes");
    CHECK(twice_mock_init(m) != 0);
    twice_mock_set(m, "loud", "true");
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_STR(twice_mock_error(m), "");
    twice_log_level lvl = TWICE_LOG_DEBUG;
    CHECK_INT(twice_mock_log_count(m), 1);
    CHECK_STR(twice_mock_log_text(m, 0, &lvl), "greeting=hi count=3 loud=true");
    CHECK_INT(lvl, TWICE_LOG_INFO);
    CHECK(twice_mock_log_text(m, 1, NULL) == NULL);
    twice_mock_free(m);
    CHECK(fini_called);
}

static twice_mock *
ready_probe(void)
{
    twice_mock *m = twice_mock_new(twice_plugin_entry());
    twice_mock_set(m, "count", "1");
    CHECK_INT(twice_mock_init(m), 0);
    return m;
}

static void
test_fields(void)
{
    twice_mock *m = ready_probe();
    twice_mock_job *j = twice_mock_job_new(
        m, "{\"id\":42,\"action\":\"fields\",\"s\":\"text\",\"i\":-7,\"r\":1.0,\"r2\":0.1,"
           "\"t\":true,\"f\":false,\"n\":null,\"o\":{\"a\":[1,{\"b\":\"deep\"}]}}");
    twice_mock_job_attr(j, "Tenant", "Number.int", "17");
    twice_mock_job_attr(j, "Blob", "Binary", "xx");
    twice_mock_job_message_id(j, "m-1");
    twice_mock_job_attempt(j, 3);
    twice_mock_job_group(j, "g1");
    twice_mock_job_db(j, (void *) j); /* ignored: probe is not transactional */
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j), "probe:42");
    CHECK(twice_mock_job_handled(j));
    CHECK(twice_mock_job_error(j) == NULL);
    CHECK(twice_mock_job_reason(j) == NULL);
    CHECK_INT(twice_mock_job_retry_after(j), -1);
    /* numbers as the producer wrote them ("1.0" stays "1.0"; a key says "1") */
    const char *want[] = {"s=text",       "i=-7",           "r=1.0",         "r2=0.1",
                          "t=true",       "f=false",        "n=(null)",      "o=(null)",
                          "o.a.1.b=deep", "missing=(null)", "o.a.01=(null)", "o..a=(null)"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK_STR(twice_mock_job_log_text(j, i, NULL), want[i]);
    }
    CHECK_STR(job_line(j, "json o="), "json o={\"a\":[1,{\"b\":\"deep\"}]} len=22");
    CHECK_STR(job_line(j, "key="),
              "key=probe:42 msg=m-1 attempt=3 tenant=17 blob=(null) group=g1 db=no");
    twice_log_level lvl = TWICE_LOG_ERROR;
    twice_mock_job_log_text(j, 0, &lvl);
    CHECK_INT(lvl, TWICE_LOG_DEBUG);
    /* a second run starts from clean results */
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_INT(twice_mock_job_log_count(j), 15);
    twice_mock_job_free(j);
    twice_mock_free(m);
}

#define TP_A "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TP_B "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"

/* api->traceparent(): the message's valid traceparent (tracing off), or
 * the span context the test set (tracing on), as twiced gives them. */
static void
test_traceparent(void)
{
    twice_mock *m = ready_probe();
    const char *body = "{\"id\":1,\"action\":\"fields\"}";
    twice_mock_job *j = twice_mock_job_new(m, body);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(job_line(j, "traceparent="), "traceparent=(null)");
    twice_mock_job_free(j);

    j = twice_mock_job_new(m, body);
    twice_mock_job_attr(j, "traceparent", NULL, TP_A);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(job_line(j, "traceparent="), "traceparent=" TP_A);
    CHECK_INT(twice_mock_job_traceparent(j, TP_B), 0);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(job_line(j, "traceparent="), "traceparent=" TP_B);
    CHECK_INT(
        twice_mock_job_traceparent(j, "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
        -1);
    CHECK_INT(twice_mock_job_traceparent(j, NULL), -1);
    twice_mock_job_free(j);

    j = twice_mock_job_new(m, body);
    twice_mock_job_attr(j, "traceparent", NULL, TP_A " "); /* malformed: not passed on */
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(job_line(j, "traceparent="), "traceparent=(null)");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

static twice_status
run_body(twice_mock *m, const char *body, twice_mock_job **out)
{
    *out = twice_mock_job_new(m, body);
    return twice_mock_run(*out);
}

/* Log text is captured as twiced writes it (base/log.c, text/escape.c):
 * control bytes and invalid UTF-8 escaped, quotes, backslashes and valid
 * UTF-8 kept; so a test that matches a line matches production's. */
static void
test_log_escaped(void)
{
    twice_mock *m = ready_probe();
    size_t before = twice_mock_log_count(m);
    twice_mock_job *j;
    CHECK_INT(run_body(m, "{\"id\":\"a\",\"action\":\"control\"}", &j), TWICE_DONE);
    CHECK_INT(twice_mock_job_log_count(j), 1);
    CHECK_STR(twice_mock_job_log_text(j, 0, NULL),
              "tab\\there\\x01 bad\\xff quote\" back\\ \xc3\xa9");
    CHECK_INT(twice_mock_log_count(m), before + 2);
    CHECK_STR(twice_mock_log_text(m, before, NULL), "line\\nbreak\\r");
    CHECK_STR(twice_mock_log_text(m, before + 1, NULL),
              "api->setting_error(\"count\") outside init() and describe(): a plugin's settings "
              "are only valid there (copy what you keep)");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

static void
test_statuses(void)
{
    twice_mock *m = ready_probe();
    twice_mock_job *j;
    CHECK_INT(run_body(m, "{\"id\":\"a\",\"action\":\"retry\"}", &j), TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "second 2");
    CHECK_INT(twice_mock_job_retry_after(j), 43200);
    CHECK(twice_mock_job_reason(j) == NULL);
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "{\"id\":\"a\",\"action\":\"reject\"}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "no such thing");
    CHECK_STR(twice_mock_job_reason(j), "rejected");
    CHECK(twice_mock_job_handled(j));
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "{\"id\":\"a\",\"action\":\"odd\"}", &j), TWICE_RETRY);
    CHECK_STR(twice_mock_job_error(j), "handle() returned 7, not DONE, RETRY or REJECT");
    CHECK(twice_mock_job_reason(j) == NULL);
    twice_mock_job_free(j);

    /* no key: dead-lettered without calling handle() */
    CHECK_INT(run_body(m, "{\"action\":\"reject\"}", &j), TWICE_REJECT);
    CHECK(twice_mock_job_key(j) == NULL);
    CHECK(!twice_mock_job_handled(j));
    CHECK_STR(twice_mock_job_error(j), "missing key field id");
    CHECK_STR(twice_mock_job_reason(j), "missing-key-field");
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "{\"id\":null}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "missing key field id (null)");
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "{\"id\":{\"x\":1}}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "bad key field id: an object (need a string or number)");
    CHECK_STR(twice_mock_job_reason(j), "bad-key-field");
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "{\"id\":\"\"}", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "bad key field id: empty");
    twice_mock_job_free(j);
    CHECK_INT(run_body(m, "not json", &j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "key field id needs a JSON body: line 1 column 2: "
                                       "lexical error: invalid string in json text");
    CHECK_STR(twice_mock_job_reason(j), "invalid-json");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

static void
expect_key(twice_mock_job *j, const char *tmpl, const char *want_key, const char *want_err)
{
    char key[TWICE_KEY_MAX + 1], err[256] = "";
    int n = twice_mock_expand_key(j, tmpl, key, sizeof(key), err, sizeof(err));
    if (want_key != NULL) {
        CHECK_INT(n, (long long) strlen(want_key));
        CHECK_STR(n >= 0 ? key : err, want_key);
    } else {
        CHECK_INT(n, -1);
        CHECK_STR(err, want_err);
    }
}

static void
test_templates(void)
{
    twice_mock *m = ready_probe();
    twice_mock_job *j = twice_mock_job_new(m, "{\"o\":{\"a\":[1,{\"b\":\"deep\"}]},\"x\":2.5,"
                                              "\"t\":true,\"nl\":\"a\\nb\"}");
    twice_mock_job_attr(j, "Tenant", NULL, "acme");
    twice_mock_job_attr(j, "Blob", "Binary", "xx");
    expect_key(j, "{attr:Tenant}/{{x}}/{o.a.1.b}/{x}", "acme/{x}/deep/2.5", NULL);
    expect_key(j, "{msg:group}", NULL,
               "missing key field msg:group (the message has no group id)");
    twice_mock_job_group(j, "g1");
    expect_key(j, "k:{msg:group}", "k:g1", NULL);
    expect_key(j, "{attr:Blob}", NULL,
               "bad key field attr:Blob: a binary attribute (need String or Number)");
    expect_key(j, "{attr:Nope}", NULL, "missing key field attr:Nope");
    expect_key(j, "{t}", NULL, "bad key field t: a boolean (need a string or number)");
    expect_key(j, "{nl}", NULL, "bad key field nl: contains a control character");
    expect_key(j, "ab{}", NULL, "column 3: empty field {}");
    expect_key(j, "{attr:bad name}", NULL,
               "column 1: \"bad name\" is not a possible SQS message attribute name (1-256 of "
               "A-Z a-z 0-9 _ - ., no leading, trailing or doubled '.', not starting with AWS. "
               "or Amazon.)");
    expect_key(j, "a}b", NULL, "column 2: stray '}' (write '}}' for a literal brace)");
    expect_key(j, "a{b", NULL, "column 2: unterminated field");
    expect_key(j, "{msg:id}", NULL,
               "column 1: unknown message field {msg:id} (known: {msg:group}, "
               "{msg:sns_message_id}, {msg:topic}, {msg:subject}, "
               "{msg:detail_type}, {msg:source}, {msg:event_id})");
    expect_key(j, "constant", NULL,
               "column 1: no field: a constant key would make every message a duplicate "
               "(use {path}, {attr:Name} or {msg:group})");
    char big[700];
    memset(big, 'a', 600);
    strcpy(big + 600, "{x}");
    expect_key(j, big, NULL,
               "column 1: literal text of 600 bytes leaves no room in a 512-byte key");
    memset(big, 'a', 510);
    strcpy(big + 510, "{o.a.1.b}");
    expect_key(j, big, NULL, "key longer than 512 bytes at key field o.a.1.b");
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* The load rule includes the template, as the host's loader does. */
    twice_plugin bad = *twice_plugin_entry();
    bad.key_template = "probe:{id";
    CHECK(twice_mock_new(&bad) == NULL);
    bad.key_template = "probe";
    CHECK(twice_mock_new(&bad) == NULL);
    bad.key_template = "probe:{id}";
    m = twice_mock_new(&bad);
    CHECK(m != NULL);
    twice_mock_free(m);
}

static void
test_dlopen(void)
{
    char err[512] = "";
    CHECK(twice_mock_open("/nonexistent/x.so", err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.so: ");
    twice_mock *m = twice_mock_open(TINY_PLUGIN_PATH, err, sizeof(err));
    CHECK(m != NULL);
    if (m == NULL) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK_STR(twice_mock_plugin(m)->name, "tiny");
    twice_mock_job *j = twice_mock_job_new(m, "{}");
    CHECK_INT(twice_mock_run(j), TWICE_RETRY); /* before init */
    CHECK_CONTAINS(twice_mock_job_error(j), "before a successful twice_mock_init");
    CHECK_INT(twice_mock_init(m), 0);
    twice_log_level lvl = TWICE_LOG_ERROR;
    CHECK_STR(twice_mock_log_text(m, 0, &lvl), "tiny up");
    CHECK_INT(lvl, TWICE_LOG_DEBUG);
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "derive_key: no Tenant attribute");
    CHECK_STR(twice_mock_job_reason(j), "bad-key-field");
    twice_mock_job_free(j);
    /* derive_key's answer is checked as the host checks it */
    j = twice_mock_job_new(m, "{}");
    twice_mock_job_attr(j, "Tenant", "String", "ac\tme");
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "derive_key returned a control character");
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{}");
    twice_mock_job_attr(j, "Tenant", "String", "caf\xc3");
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    CHECK_STR(twice_mock_job_error(j), "derive_key returned bytes that are not UTF-8");
    CHECK_STR(twice_mock_job_reason(j), "bad-key-field");
    twice_mock_job_free(j);
    j = twice_mock_job_new(m, "{}");
    twice_mock_job_attr(j, "Tenant", "String", "acme");
    twice_mock_job_db(j, (void *) m);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j), "tiny:acme");
    CHECK_STR(twice_mock_job_log_text(j, 0, &lvl), "db=yes");
    CHECK_INT(lvl, TWICE_LOG_WARN);
    twice_mock_job_free(j);
    twice_mock_free(m);
}

struct worker {
    twice_mock *m;
    int id, ok;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    char body[64], want[64];
    snprintf(body, sizeof(body), "{\"id\":%d,\"action\":\"fields\"}", w->id);
    snprintf(want, sizeof(want), "probe:%d", w->id);
    for (int i = 0; i < 200; i++) {
        twice_mock_job *j = twice_mock_job_new(w->m, body);
        w->ok += twice_mock_run(j) == TWICE_DONE && strcmp(twice_mock_job_key(j), want) == 0;
        twice_mock_job_free(j);
    }
    return NULL;
}

static void
test_threads(void)
{
    twice_mock *m = ready_probe();
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){m, i, 0};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(w[i].ok, 200);
    }
    twice_mock_free(m);
}

/* ---- ABI 1.1: a key setting, a queue's key, queue(), attr_name(), traceparent() ---- */

static twice_status
handle_11(void *state, twice_job *job)
{
    (void) state;
    api->log(job, TWICE_LOG_INFO, "queue=%s first=%s second=%s third=%s trace=%s", api->queue(job),
             api->attr_name(job, 0), api->attr_name(job, 1),
             api->attr_name(job, 2) ? api->attr_name(job, 2) : "(null)",
             TWICE_API_HAS(api, traceparent) ? "yes" : "no");
    return TWICE_DONE;
}

static int
init_11(const twice_api *a, const twice_settings *s, void **state)
{
    (void) s;
    api = a;
    *state = NULL;
    return 0;
}

static const twice_setting settings_11[] = {
    {"key", TWICE_SETTING_STRING, 0, NULL, "the key template"},
    {NULL, 0, 0, NULL, NULL},
};

static const twice_plugin bridge = {.magic = TWICE_ABI_MAGIC,
                                    .abi_major = TWICE_ABI_MAJOR,
                                    .abi_minor = TWICE_ABI_MINOR,
                                    .size = sizeof(twice_plugin),
                                    .name = "bridge",
                                    .key_setting = "key",
                                    .settings = settings_11,
                                    .init = init_11,
                                    .handle = handle_11};

static void
test_key_setting(void)
{
    twice_mock *m = twice_mock_new(&bridge);
    CHECK(m != NULL);
    twice_mock_set(m, "key", "inv:{id");
    CHECK(twice_mock_init(m) != 0);
    CHECK_STR(twice_mock_error(m),
              "plugin 'bridge': setting 'key': key template \"inv:{id\": column 5: "
              "unterminated field");
    twice_mock_set(m, "key", "inv:{id}");
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":7,\"d\":{\"n\":\"x\"}}");
    twice_mock_job_attr(j, "A", NULL, "1");
    twice_mock_job_attr(j, "B", "Binary", "zz");
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j), "inv:7");
    CHECK_STR(job_line(j, "queue="), "queue= first=A second=B third=(null) trace=yes");
    twice_mock_job_queue(j, "orders");
    CHECK(twice_mock_queue_key(m, "q:{d.n") != 0);
    CHECK_CONTAINS(twice_mock_error(m), "column 3: unterminated field");
    CHECK_INT(twice_mock_queue_key(m, "q:{d.n}"), 0);
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j), "q:x");
    CHECK_CONTAINS(job_line(j, "queue="), "queue=orders ");
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* Neither the setting nor a queue key: no key, as the host refuses. */
    m = twice_mock_new(&bridge);
    CHECK_INT(twice_mock_init(m), 0);
    j = twice_mock_job_new(m, "{\"id\":7}");
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    CHECK(twice_mock_job_key(j) == NULL);
    CHECK_CONTAINS(twice_mock_job_error(j), "no key template: set the plugin's setting 'key'");
    twice_mock_job_free(j);
    twice_mock_free(m);

    twice_plugin both = bridge; /* a key_setting and a template: refused */
    both.key_template = "b:{id}";
    CHECK(twice_mock_new(&both) == NULL);
    twice_plugin undeclared = bridge;
    undeclared.key_setting = "nope";
    CHECK(twice_mock_new(&undeclared) == NULL);
}

/* Where the mock and twiced differed, a plugin's test passed on the mock
 * and not in production: a repeated attribute is its last (api->attr and
 * {attr:Name}), a dead letter's error keeps JOB_ERROR_MAX bytes then
 * "...", a log line is cut to twiced's 4096 bytes, and a job the test gave
 * no queue has the queue "" (the probe's queue= line: test_key_setting). */
static void
test_as_twiced(void)
{
    twice_mock *m = ready_probe();
    CHECK_STR(api->queue(NULL), ""); /* outside a job: "", not a crash */
    twice_mock_job *j = twice_mock_job_new(m, "{\"id\":\"r\",\"action\":\"long\"}");
    twice_mock_job_attr(j, "Tenant", NULL, "first");
    twice_mock_job_attr(j, "Tenant", NULL, "last");
    CHECK_INT(twice_mock_run(j), TWICE_REJECT);
    const char *err = twice_mock_job_error(j);
    CHECK_INT((long long) strlen(err), 1023 + 3); /* the e-acute is not split */
    CHECK_STR(err + 1019, "xxxx...");
    const char *line = job_line(j, "body ");
    CHECK(strlen(line) < 4096 - 60); /* room for twiced's time, pid and fields */
    CHECK(strlen(line) > 4096 - 200);
    CHECK_CONTAINS(line, "x [... ");
    CHECK_CONTAINS(line, " bytes cut]");
    CHECK_STR(job_line(j, "tenant="), "tenant=last");
    twice_mock_job_free(j);

    /* a retried job's error is the plugin's whole text: twiced logs it */
    j = twice_mock_job_new(m, "{\"id\":\"q\",\"action\":\"long\"}");
    CHECK_INT(twice_mock_run(j), TWICE_RETRY);
    CHECK_INT((long long) strlen(twice_mock_job_error(j)), 2000);
    twice_mock_job_free(j);
    twice_mock_free(m);

    /* a key from a repeated attribute: the last, as twiced's */
    m = twice_mock_new(&bridge);
    twice_mock_set(m, "key", "t:{attr:Tenant}");
    CHECK_INT(twice_mock_init(m), 0);
    j = twice_mock_job_new(m, "{}");
    twice_mock_job_attr(j, "Tenant", NULL, "first");
    twice_mock_job_attr(j, "Tenant", NULL, "last");
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j), "t:last");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

/* Descriptors twiced refuses, the mock refuses too (text/plugdecl.c is
 * both's): a plugin whose tests pass against the mock must load. */
static void
test_descriptor_fields(void)
{
    static const twice_setting bad_default[] = {{"timeout", TWICE_SETTING_INT, 0, "30s", "x"},
                                                {NULL, 0, 0, NULL, NULL}};
    static const twice_setting bad_name[] = {{"my setting", TWICE_SETTING_STRING, 0, NULL, "x"},
                                             {NULL, 0, 0, NULL, NULL}};
    static const twice_setting required_default[] = {
        {"url", TWICE_SETTING_STRING, 1, "http://x", "x"}, {NULL, 0, 0, NULL, NULL}};
    static const twice_setting twice_declared[] = {{"a", TWICE_SETTING_STRING, 0, NULL, "x"},
                                                   {"a", TWICE_SETTING_INT, 0, NULL, "x"},
                                                   {NULL, 0, 0, NULL, NULL}};
    static const twice_setting bad_key_default[] = {{"key", TWICE_SETTING_STRING, 0, "k:{a", "x"},
                                                    {NULL, 0, 0, NULL, NULL}};
    twice_plugin d = *twice_plugin_entry();
    d.name = "Probe";
    CHECK(twice_mock_new(&d) == NULL);
    d.name = NULL;
    CHECK(twice_mock_new(&d) == NULL);
    d = *twice_plugin_entry();
    d.flags = 0x10;
    CHECK(twice_mock_new(&d) == NULL);
    const twice_setting *const bad[] = {bad_default, bad_name, required_default, twice_declared};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        d = *twice_plugin_entry();
        d.settings = bad[i];
        CHECK(twice_mock_new(&d) == NULL);
    }
    twice_plugin b = bridge;
    b.settings = bad_key_default;
    CHECK(twice_mock_new(&b) == NULL);
    d = *twice_plugin_entry(); /* and the plugin as it is loads */
    twice_mock *m = twice_mock_new(&d);
    CHECK(m != NULL);
    twice_mock_free(m);
}

/* ---- a job kept past its handle(), or handed to a thread ---- */

static twice_job *kept; /* the "keep" run's job: freed before "use" runs */

/* Every API function that takes a job, called with job; what came back,
 * as one line, in out. */
static void
call_all(twice_job *job, char *out, size_t cap)
{
    size_t len = 99;
    const char *body = api->body(job, &len), *field = api->field(job, "id", NULL);
    const char *json = api->field_json(job, "", NULL), *attr = api->attr(job, "Tenant", NULL);
    const char *key = api->key(job);
    int attempt = api->attempt(job);
    const char *msg = api->message_id(job), *group = api->group_id(job);
    void *db = api->db(job);
    const char *tp = api->traceparent(job), *queue = api->queue(job);
    const char *name = api->attr_name(job, 0);
    api->retry_after(job, 5);
    api->downstream_unavailable(job, 5);
    api->error(job, "from call_all");
    int sent = api->send(job, "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "{}",
                         (size_t) -1, 0, NULL, NULL);
    api->log(job, TWICE_LOG_INFO, "said with the job");
    snprintf(out, cap,
             "body=%s len=%zu field=%s json=%s attr=%s key='%s' attempt=%d msg='%s' group=%s "
             "db=%s tp=%s queue='%s' attr_name=%s send=%d",
             body ? "(text)" : "(null)", len, field ? field : "(null)", json ? json : "(null)",
             attr ? attr : "(null)", key, attempt, msg, group ? group : "(null)",
             db ? "(db)" : "(null)", tp ? tp : "(null)", queue, name ? name : "(null)", sent);
}

struct call {
    twice_job *job;
    char out[512];
};

static void *
call_main(void *arg)
{
    struct call *c = arg;
    call_all(c->job, c->out, sizeof(c->out));
    return NULL;
}

/* "keep": keeps the job; "use": calls the API with the kept one; "thread":
 * with its own job, from a thread it starts (and joins); "well": with its
 * own job, as a plugin should. The answers are logged with the job. */
static twice_status
keeper_handle(void *state, twice_job *job)
{
    (void) state;
    const char *action = api->field(job, "action", NULL);
    struct call c = {job, ""};
    pthread_t t;
    if (strcmp(action, "keep") == 0) {
        kept = job;
        return TWICE_DONE;
    }
    if (strcmp(action, "use") == 0) {
        call_all(kept, c.out, sizeof(c.out));
    } else if (strcmp(action, "thread") == 0 && pthread_create(&t, NULL, call_main, &c) == 0) {
        pthread_join(t, NULL);
    } else {
        call_all(job, c.out, sizeof(c.out));
    }
    api->log(job, TWICE_LOG_INFO, "%s", c.out);
    return TWICE_DONE;
}

static const twice_plugin keeper = {.magic = TWICE_ABI_MAGIC,
                                    .abi_major = TWICE_ABI_MAJOR,
                                    .abi_minor = TWICE_ABI_MINOR,
                                    .size = sizeof(twice_plugin),
                                    .name = "keeper",
                                    .key_template = "keeper:{id}",
                                    .init = init_11,
                                    .handle = keeper_handle};

/* What every function answers a refused job (plugin.h's "none"). */
#define NONE_ANSWERS                                                                              \
    "body=(null) len=99 field=(null) json=(null) attr=(null) key='' attempt=0 msg='' "            \
    "group=(null) db=(null) tp=(null) queue='' attr_name=(null) send=-1"

/* The API functions in call_all's order, as the refusal lines name them. */
static const char *const called[] = {"body",        "field",
                                     "field_json",  "attr",
                                     "key",         "attempt",
                                     "message_id",  "group_id",
                                     "db",          "traceparent",
                                     "queue",       "attr_name",
                                     "retry_after", "downstream_unavailable",
                                     "error",       "send",
                                     "log"};
#define NCALLED (sizeof(called) / sizeof(called[0]))

/* m's log from line `from`: one refusal line per function of call_all, in
 * twiced's words (who: "'keeper'" or "'keeper' (the plugin called last)"),
 * then the line the plugin said with the refused job, without it. */
static void
expect_refusals(twice_mock *m, size_t from, const char *who)
{
    CHECK_INT(twice_mock_log_count(m), from + NCALLED + 1);
    for (size_t i = 0; i < NCALLED; i++) {
        char want[512];
        snprintf(want, sizeof(want),
                 "plugin %s called api->%s() with a job that is not running on its thread "
                 "(kept after handle() returned, or used from another thread): refused; a job "
                 "is valid only during handle() or derive_key(), on the thread that runs it "
                 "(said once)",
                 who, called[i]);
        twice_log_level level = TWICE_LOG_DEBUG;
        CHECK_STR(twice_mock_log_text(m, from + i, &level), want);
        CHECK_INT(level, TWICE_LOG_ERROR);
        CHECK_INT(twice_mock_refused(m, called[i]), 1);
    }
    CHECK_STR(twice_mock_log_text(m, from + NCALLED, NULL), "said with the job");
}

/* The mock refuses what twiced refuses: a job kept after handle() returned
 * (freed by then: ASan shows it is never read) and a job used from the
 * plugin's own thread get the "none" answers, a line per function and a
 * count; the run that made the calls is not touched. */
static void
test_job_rule(void)
{
    twice_mock *m = twice_mock_new(&keeper);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j;
    CHECK_INT(run_body(m, "{\"id\":1,\"action\":\"well\"}", &j), TWICE_DONE);
    CHECK_CONTAINS(job_line(j, "body="), "body=(text) len=24 field=1 json={\"id\":1,");
    CHECK_CONTAINS(job_line(j, "body="), " key='keeper:1' attempt=1 msg='mock-message-1' ");
    CHECK_CONTAINS(job_line(j, "body="), " send=0");
    CHECK_STR(job_line(j, "said "), "said with the job");
    CHECK_INT(twice_mock_refused(m, NULL), 0);
    CHECK_INT(twice_mock_log_count(m), 0);
    twice_mock_job_free(j);

    twice_mock_job *keep = twice_mock_job_new(m, "{\"id\":2,\"action\":\"keep\"}");
    CHECK_INT(twice_mock_run(keep), TWICE_DONE);
    j = twice_mock_job_new(m, "{\"id\":3,\"action\":\"use\"}");
    twice_mock_job_attr(j, "Tenant", NULL, "acme");
    twice_mock_job_free(keep); /* the plugin's kept pointer now points at freed memory */
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_STR(job_line(j, "body="), NONE_ANSWERS);
    CHECK(twice_mock_job_error(j) == NULL); /* error(), retry_after() & co. did nothing */
    CHECK_INT(twice_mock_job_retry_after(j), -1);
    CHECK_INT(twice_mock_job_downstream_unavailable(j), -1);
    CHECK_INT(twice_mock_job_sent_count(j), 0);
    CHECK_STR(twice_mock_job_key(j), "keeper:3"); /* the test's own reads work after the run */
    CHECK_INT(twice_mock_refused(m, NULL), NCALLED);
    CHECK_INT(twice_mock_refused(m, "setting"), 0); /* takes no job */
    expect_refusals(m, 0, "'keeper'");
    /* said once per function, each call counted */
    CHECK_INT(twice_mock_run(j), TWICE_DONE);
    CHECK_INT(twice_mock_refused(m, NULL), 2 * NCALLED);
    CHECK_INT(twice_mock_refused(m, "send"), 2);
    CHECK_INT(twice_mock_log_count(m), NCALLED + 2);
    twice_mock_job_free(j);
    twice_mock_free(m);

    m = twice_mock_new(&keeper);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK_INT(run_body(m, "{\"id\":4,\"action\":\"thread\"}", &j), TWICE_DONE);
    CHECK_STR(job_line(j, "body="), NONE_ANSWERS);
    CHECK(twice_mock_job_error(j) == NULL);
    CHECK_INT(twice_mock_refused(m, NULL), NCALLED);
    expect_refusals(m, 0, "'keeper' (the plugin called last)");
    twice_mock_job_free(j);
    twice_mock_free(m);
}

int
main(void)
{
    test_settings();
    test_fields();
    test_traceparent();
    test_log_escaped();
    test_statuses();
    test_templates();
    test_dlopen();
    test_threads();
    test_key_setting();
    test_descriptor_fields();
    test_as_twiced();
    test_job_rule();
    return check_done("test-mock");
}
