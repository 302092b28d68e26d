/*
 * test-mock-keys.c - the SDK's mock host derives the same key, or refuses
 * with the same reason and words, as the daemon, for every message and
 * template of one table: the daemon through hostapi_derive_key (the path
 * twiced's receiver takes), the mock through twice_mock_run and
 * twice_mock_expand_key. A few rows also say what the answer must be.
 * And a job kept past derive_key(): both refuse it, with the same answers
 * and the same words.
 */
#include "buf.h"
#include "check.h"
#include "config.h"
#include "hostapi.h"
#include "instance.h"
#include "job.h"
#include "keytmpl.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/mock.h>
#include <unistd.h>

struct attr {
    const char *name, *type, *value;
};

struct message {
    const char *name;  /* for a failure's output */
    char body[8192];   /* NUL-terminated */
    const char *group; /* NULL: a standard queue */
    struct attr attrs[8];
};

static struct message messages[32];
static size_t nmessages;

static struct message *
add_message(const char *name, const char *body, const char *group)
{
    struct message *m = &messages[nmessages++];
    m->name = name;
    snprintf(m->body, sizeof(m->body), "%s", body);
    m->group = group;
    return m;
}

/* A run of n copies of c, for long values (a static buffer per slot). */
static const char *
run_of(int slot, char c, size_t n)
{
    static char runs[4][1024]; /* n < 1024 */
    memset(runs[slot], c, n);
    runs[slot][n] = '\0';
    return runs[slot];
}

static void
make_messages(void)
{
    char body[8192];
    size_t n;
    struct message *m = add_message(
        "basic",
        "{\"id\":42,\"name\":\"Ana\",\"s\":\"text\",\"uni\":\"caf\xc3\xa9 \xe2\x98\x95\"}", NULL);
    m->attrs[0] = (struct attr){"Tenant", "String", "acme"};
    m->attrs[1] = (struct attr){"Count", "Number", "12"};
    m->attrs[2] = (struct attr){"Shard", "Number.int", "-7"};
    m->attrs[3] = (struct attr){"Blob", "Binary", "\x01\x02"};
    m->attrs[4] = (struct attr){"Ratio", "Number.float", "1.5e3"};
    m->attrs[5] = (struct attr){"Odd", "Foo", "x"};
    add_message(
        "numbers",
        "{\"neg\":-7,\"zero\":0,\"f\":0.1,\"one\":1.0,\"exp\":1e300,\"nexp\":-2.5e-8,"
        "\"big\":9007199254740993,\"min\":-9223372036854775808,\"third\":0.3333333333333333,"
        "\"negzero\":-0.0,\"ten\":1E1}",
        NULL);
    add_message(
        "nested",
        "{\"a\":{\"b\":{\"c\":\"deep\"}},\"items\":[{\"id\":\"i0\"},{\"id\":\"i1\"}],"
        "\"arr\":[1,2,3],\"o\":{\"x.y\":\"dotted\",\"\":\"empty-name\"},\"01\":\"zero-one\"}",
        NULL);
    add_message(
        "odd values",
        "{\"n\":null,\"o\":{},\"a\":[],\"t\":true,\"f\":false,\"e\":\"\",\"ctl\":\"a\\u0001b\","
        "\"nl\":\"a\\nb\",\"del\":\"a\\u007fb\",\"sep\":\"a\\u2028b\",\"c1\":\"a\\u009bb\","
        "\"sp\":\" \",\"q\":\"\\\"{x}\\\"\"}",
        NULL);
    m = add_message("fifo", "{\"id\":\"x\"}", "g-1");
    m->attrs[0] = (struct attr){"Tenant", "String", ""};
    m->attrs[1] = (struct attr){"Ctl", "String", "a\tb"};
    m = add_message("fifo, empty group", "{\"id\":\"x\"}", "");
    m->attrs[0] = (struct attr){"Tenant", "String", "acme"};
    m = add_message("fifo, control in group", "{\"id\":\"x\"}", "g\n1");
    m = add_message("not JSON", "not json", NULL);
    m->attrs[0] = (struct attr){"Tenant", "String", "acme"};
    add_message("truncated JSON", "{\"id\":", NULL);
    add_message("duplicate names", "{\"id\":1,\"id\":2}", NULL);
    add_message("bare number", "42", NULL);
    add_message("bare string", "\"str\"", NULL);
    add_message("empty body", "", NULL);
    add_message("not UTF-8", "{\"id\":\"\xff\xfe\"}", NULL);
    add_message("NUL escape", "{\"id\":\"a\\u0000b\"}", NULL);
    add_message("control byte", "\x01{\"id\":1}", NULL);
    add_message("real overflow", "{\"id\":1e400}", NULL);
    add_message("integer overflow", "{\"id\":18446744073709551616}", NULL);
    add_message("quote in error", "{\"id\":\"x\" \"y\"}", NULL);
    n = (size_t) snprintf(body, sizeof(body), "{\"long\":\"%s\",\"k500\":\"%s\",\"ctl_long\":\"",
                          run_of(0, 'a', 600), run_of(1, 'b', 500));
    for (int i = 0; i < 600; i++, n += 2) {
        memcpy(body + n, "\\n", 2); /* 600 escaped newlines: a long value of control bytes */
    }
    snprintf(body + n, sizeof(body) - n, "\"}");
    add_message("long values", body, NULL);
    snprintf(body, sizeof(body), "{\"nl_long\":\"%s\"}", run_of(3, 'x', 600));
    for (char *p = strstr(body, "xxx"); p != NULL && *p == 'x'; p++) {
        *p = '\x01'; /* raw control bytes: not JSON */
    }
    add_message("raw control bytes", body, NULL);
    m = add_message("long attribute", "{}", NULL);
    m->attrs[0] = (struct attr){"Tenant", "String", run_of(0, 'a', 600)};
    /* deeper than jansson parses (2048 levels) */
    memset(body, '[', 2100);
    memset(body + 2100, ']', 2100);
    body[4200] = '\0';
    add_message("too deep", body, NULL);
}

static const char *const templates[] = {
    /* body paths */
    "k:{id}", "{id}", "{name}/{id}", "{s}", "{uni}", "{missing}", "{neg}", "{zero}", "{f}",
    "{one}", "{exp}", "{nexp}", "{big}", "{min}", "{third}", "{negzero}", "{ten}", "{a.b.c}",
    "{a.b}", "{a}", "{a.b.c.d}", "{items.1.id}", "{items.01.id}", "{items.2.id}", "{arr.0}",
    "{arr.-1}", "{arr.+1}", "{arr.99999999999999999999999}", "{o.x.y}", "{01}", "{n}", "{o}",
    "{t}", "{e}", "{ctl}", "{nl}", "{del}", "{sep}", "{c1}", "{sp}", "{q}", "{long}", "x{k500}",
    "xxxxxxxxxxxxx{k500}", "{k500}{k500}", "{ctl_long}", "{nl_long}",
    /* attributes and the group */
    "{attr:Tenant}", "{attr:Count}", "{attr:Shard}", "{attr:Blob}", "{attr:Nope}", "{attr:Ratio}",
    "{attr:Odd}", "{attr:Ctl}", "{attr:tenant}", "{msg:group}", "{msg:group}/{id}",
    "{attr:Tenant}{msg:group}{id}", "{attr:Tenant}/{id}",
    /* braces */
    "{{{id}}}", "{{literal}}:{id}", "a}}b{id}", "{{id}}:{attr:Tenant}",
    /* templates that do not compile */
    "", "constant", "{{id}}", "{", "}", "a{b", "{}", "{attr:}", "{msg:id}", "{msg:}",
    "{msg:group:x}", "{.a}", "{a.}", "{a..b}", "{a{b}}", "{a\x01}", "k\n{id}", "k\x7f{id}",
    "{attr:Tenant", "\xc3\xa9\xc3\xa9}", "caf\xc3\xa9{", NULL};

/* ---- the plugin both hosts run ---- */

/* What fake_derive answers next (derive_key plugins). */
static struct {
    const char *bytes;
    int n;
    const char *error; /* given with api->error when n < 0 */
    const char *field; /* not NULL: answer api->field of this path instead */
    int attempt;       /* nonzero: answer "attempt=<api->attempt>" instead */
} answer;

/* The state is the host's API table, so derive_key can call api->error. */
static int
fake_init(const twice_api *api, const twice_settings *settings, void **state)
{
    (void) settings;
    *state = (void *) api;
    return 0;
}

static int
fake_derive(void *state, const twice_job *job, char *out, size_t cap)
{
    const twice_api *api = state;
    if (answer.attempt) {
        return snprintf(out, cap, "attempt=%d", api->attempt(job));
    }
    if (answer.field != NULL) {
        size_t len = 0;
        const char *v = api->field(job, answer.field, &len);
        if (v == NULL || len >= cap) {
            return -1;
        }
        memcpy(out, v, len);
        return (int) len;
    }
    size_t n = strlen(answer.bytes);
    memcpy(out, answer.bytes, n < cap ? n : cap);
    if (answer.n < 0 && answer.error != NULL) {
        api->error((twice_job *) job, "%s", answer.error);
    }
    return answer.n;
}

static twice_status
fake_handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

static twice_plugin
descriptor(const char *tmpl)
{
    twice_plugin d = {.magic = TWICE_ABI_MAGIC,
                      .abi_major = TWICE_ABI_MAJOR,
                      .abi_minor = TWICE_ABI_MINOR,
                      .size = (uint32_t) sizeof(twice_plugin),
                      .name = "agree",
                      .version = "1",
                      .init = fake_init,
                      .handle = fake_handle};
    if (tmpl != NULL) {
        d.key_template = tmpl;
    } else {
        d.derive_key = fake_derive;
    }
    return d;
}

/* ---- the daemon ---- */

/* "key K", "refused REASON: DETAIL" or "compile ERROR", malloc'd. */
static char *
outcome(const char *what, const char *reason, const char *text)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "%s %s%s%s", what, reason != NULL ? reason : "", reason != NULL ? ": " : "",
               text != NULL ? text : "(null)");
    return buf_steal(&b);
}

static char *
daemon_key(const char *tmpl, const struct message *msg)
{
    char err[512];
    twice_plugin d = descriptor(tmpl);
    struct plugin_instance p = {.name = "agree"};
    p.lp.desc = &d;
    if (tmpl != NULL && keytmpl_compile(tmpl, &p.lp.tmpl, err, sizeof(err)) != 0) {
        return outcome("compile", NULL, err);
    }
    CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), 0);

    struct sqs_attr attrs[8];
    size_t n = 0;
    for (; n < 8 && msg->attrs[n].name != NULL; n++) {
        const struct attr *a = &msg->attrs[n];
        int binary = strcmp(a->type, "Binary") == 0;
        attrs[n] = (struct sqs_attr){
            (char *) a->name, (char *) a->type, binary ? NULL : (char *) a->value,
            binary ? (unsigned char *) a->value : NULL, binary ? strlen(a->value) : 0};
    }
    struct twice_job j = {.retry_after = -1};
    j.msg.body = (char *) msg->body;
    j.msg.body_len = strlen(msg->body);
    j.msg.group_id = (char *) msg->group;
    j.msg.attrs = attrs;
    j.msg.nattrs = n;

    struct buf key = BUF_INIT;
    char *out = hostapi_derive_key(&p, NULL, &j, &key) == 0
                    ? outcome("key", NULL, buf_str(&key))
                    : outcome("refused", j.reason, j.error);
    buf_free(&key);
    jsondoc_free(j.body);
    arena_free(&j.scratch);
    free(j.error);
    keytmpl_free(p.lp.tmpl);
    return out;
}

/* ---- the mock ---- */

static twice_mock_job *
mock_job(twice_mock *m, const struct message *msg)
{
    twice_mock_job *j = twice_mock_job_new(m, msg->body);
    for (size_t i = 0; i < 8 && msg->attrs[i].name != NULL; i++) {
        CHECK_INT(
            twice_mock_job_attr(j, msg->attrs[i].name, msg->attrs[i].type, msg->attrs[i].value),
            0);
    }
    CHECK_INT(twice_mock_job_group(j, msg->group), 0);
    return j;
}

/* The template on its own (twice_mock_expand_key), with any plugin. */
static char *
mock_expand(twice_mock *any, const char *tmpl, const struct message *msg)
{
    char key[TWICE_KEY_MAX + 1], err[512] = "";
    twice_mock_job *j = mock_job(any, msg);
    int n = twice_mock_expand_key(j, tmpl, key, sizeof(key), err, sizeof(err));
    twice_mock_job_free(j);
    if (n >= 0) {
        CHECK_INT(n, (long long) strlen(key));
        return outcome("key", NULL, key);
    }
    /* no reason code here: a template's errors come from compiling or
     * expanding, told apart by the column */
    return outcome(strncmp(err, "column ", 7) == 0 ? "compile" : "refused", NULL, err);
}

static char *
mock_key(const char *tmpl, const struct message *msg)
{
    twice_plugin d = descriptor(tmpl);
    twice_mock *m = twice_mock_new(&d);
    if (m == NULL) {
        return NULL; /* refused at load: the caller asks twice_mock_expand_key why */
    }
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j = mock_job(m, msg);
    twice_status st = twice_mock_run(j);
    char *out;
    if (twice_mock_job_key(j) != NULL) {
        CHECK_INT(st, TWICE_DONE);
        CHECK(twice_mock_job_reason(j) == NULL);
        out = outcome("key", NULL, twice_mock_job_key(j));
    } else {
        CHECK_INT(st, TWICE_REJECT);
        CHECK(!twice_mock_job_handled(j));
        out = outcome("refused", twice_mock_job_reason(j), twice_mock_job_error(j));
    }
    twice_mock_job_free(j);
    twice_mock_free(m);
    return out;
}

/* ---- agreement ---- */

static int disagreements;

static void
report(const char *what, const char *tmpl, const struct message *msg, const char *a, const char *b)
{
    if (disagreements++ < 20) {
        fprintf(stderr, "%s: template \"%s\", message \"%s\":\n  daemon: %s\n  mock:   %s\n", what,
                tmpl != NULL ? tmpl : "(derive_key)", msg->name, a, b);
    }
}

/* The daemon's outcome for tmpl and msg, checked against both mock paths;
 * returned (malloc'd) for the expectations. */
static char *
agree(const char *tmpl, const struct message *msg, twice_mock *any)
{
    char *d = daemon_key(tmpl, msg);
    char *m = mock_key(tmpl, msg);
    char *e = mock_expand(any, tmpl, msg);
    if (m == NULL) { /* the mock refused the plugin: so must the daemon */
        m = strdup(e);
    }
    CHECK(d != NULL && m != NULL && e != NULL);
    if (strcmp(d, m) != 0) {
        report("twice_mock_run", tmpl, msg, d, m);
    }
    /* expand_key gives no reason code: compare what follows it */
    const char *detail = strncmp(d, "refused ", 8) == 0 ? strstr(d, ": ") + 2 : NULL;
    const char *edetail = strncmp(e, "refused ", 8) == 0 ? e + 8 : NULL;
    if (detail != NULL ? edetail == NULL || strcmp(detail, edetail) != 0 : strcmp(d, e) != 0) {
        report("twice_mock_expand_key", tmpl, msg, d, e);
    }
    free(m);
    free(e);
    return d;
}

static const struct message *
message_named(const char *name)
{
    for (size_t i = 0; i < nmessages; i++) {
        if (strcmp(messages[i].name, name) == 0) {
            return &messages[i];
        }
    }
    fprintf(stderr, "no message \"%s\" in the table\n", name);
    exit(2);
}

/* What some rows must give, so that agreeing on something wrong fails. */
static const struct {
    const char *tmpl, *message, *want;
} expected[] = {
    {"k:{id}", "basic", "key k:42"},
    {"{name}/{id}", "basic", "key Ana/42"},
    {"{uni}", "basic", "key caf\xc3\xa9 \xe2\x98\x95"},
    {"{neg}", "numbers", "key -7"},
    {"{f}", "numbers", "key 0.1"},
    {"{one}", "numbers", "key 1"},
    {"{exp}", "numbers", "key 1e+300"},
    {"{nexp}", "numbers", "key -2.5e-08"},
    {"{big}", "numbers", "key 9007199254740993"},
    {"{min}", "numbers", "key -9223372036854775808"},
    {"{items.1.id}", "nested", "key i1"},
    {"{items.01.id}", "nested", "refused missing-key-field: missing key field items.01.id"},
    {"{o.x.y}", "nested", "refused missing-key-field: missing key field o.x.y"},
    {"{n}", "odd values", "refused missing-key-field: missing key field n (null)"},
    {"{o}", "odd values",
     "refused bad-key-field: bad key field o: an object (need a string or number)"},
    {"{t}", "odd values",
     "refused bad-key-field: bad key field t: a boolean (need a string or number)"},
    {"{e}", "odd values", "refused bad-key-field: bad key field e: empty"},
    {"{ctl}", "odd values",
     "refused bad-key-field: bad key field ctl: contains a control character"},
    {"{q}", "odd values", "key \"{x}\""},
    {"{attr:Shard}", "basic", "key -7"},
    {"{attr:Blob}", "basic",
     "refused bad-key-field: bad key field attr:Blob: a binary attribute (need String or Number)"},
    {"{attr:Odd}", "basic",
     "refused bad-key-field: bad key field attr:Odd: a binary attribute (need String or Number)"},
    {"{attr:Tenant}", "fifo", "refused bad-key-field: bad key field attr:Tenant: empty"},
    {"{msg:group}/{id}", "fifo", "key g-1/x"},
    {"{msg:group}", "basic",
     "refused missing-key-field: missing key field msg:group (the message has no group id)"},
    {"{msg:group}", "fifo, empty group", "refused bad-key-field: bad key field msg:group: empty"},
    {"{attr:Tenant}", "not JSON", "key acme"},
    {"{attr:Tenant}/{id}", "not JSON",
     "refused invalid-json: key field id needs a JSON body: line 1 column 2: lexical error: "
     "invalid string in json text"},
    {"{id}", "bare number",
     "refused missing-key-field: missing key field id (the body is not a JSON object)"},
    /* RFC 8259 allows these three: a repeated name (the last wins), an
     * integer past 64 bits (its digits), "\u0000" (fine in a body, not in a key) */
    {"{id}", "duplicate names", "key 2"},
    {"{id}", "integer overflow", "key 18446744073709551616"},
    {"{id}", "real overflow", "key 1e400"},
    {"{id}", "NUL escape",
     "refused bad-key-field: bad key field id: contains a NUL character (\\u0000)"},
    {"{one}:{ten}:{negzero}", "numbers", "key 1:1e+01:-0"},
    {"{{{id}}}", "basic", "key {42}"},
    {"a}}b{id}", "basic", "key a}b42"},
    {"x{k500}", "long values", "key x" /* + 500 b, checked by length below */},
    {"xxxxxxxxxxxxx{k500}", "long values",
     "refused key-too-long: key longer than 512 bytes at key field k500"},
    {"{long}", "long values", "refused key-too-long: key longer than 512 bytes at key field long"},
    {"{attr:Tenant}", "long attribute",
     "refused key-too-long: key longer than 512 bytes at key field attr:Tenant"},
    {"constant", "basic",
     "compile column 1: no field: a constant key would make every message a duplicate (use "
     "{path}, {attr:Name} or {msg:group})"},
    {"a{b", "basic", "compile column 2: unterminated field"},
    {"{attr:}", "basic", "compile column 1: empty attribute name in {attr:}"},
    {"{a..b}", "basic", "compile column 3: empty path component in {a..b}"},
    {"k\n{id}", "basic", "compile column 2: control character 0x0a in template"},
    {"\xc3\xa9\xc3\xa9}", "basic", "compile column 3: stray '}' (write '}}' for a literal brace)"},
};

/* ---- derive_key ---- */

static const struct {
    const char *bytes;
    int n;
    const char *error, *want;
} answers[] = {
    {"welcome:42", 10, NULL, "key welcome:42"},
    {"caf\xc3\xa9", 5, NULL, "key caf\xc3\xa9"},
    {"", 0, NULL, "refused bad-key-field: derive_key returned 0 bytes (1-512 allowed)"},
    {"x", TWICE_KEY_MAX + 1, NULL,
     "refused key-too-long: derive_key returned 513 bytes (1-512 allowed)"},
    {"a\tb", 3, NULL, "refused bad-key-field: derive_key returned a control character"},
    {"a\x7f", 2, NULL, "refused bad-key-field: derive_key returned a control character"},
    {"bad-\xff", 5, NULL, "refused bad-key-field: derive_key returned bytes that are not UTF-8"},
    {"\xed\xa0\x80", 3, NULL,
     "refused bad-key-field: derive_key returned bytes that are not UTF-8"},
    {"", -1, NULL, "refused bad-key-field: derive_key: the plugin found no key"},
    {"", -1, "no Tenant attribute", "refused bad-key-field: derive_key: no Tenant attribute"},
};

/* In derive_key(), api->field hands numbers as keys spell them (so keys a
 * plugin builds from them never change); in handle() as written. */
static const struct {
    const char *path, *want;
} derived_fields[] = {
    {"one", "key 1"},      {"ten", "key 1e+01"},     {"negzero", "key -0"},
    {"exp", "key 1e+300"}, {"nexp", "key -2.5e-08"}, {"big", "key 9007199254740993"},
    {"zero", "key 0"},     {"f", "key 0.1"},
};

static void
test_derive_key(void)
{
    for (size_t i = 0; i < sizeof(derived_fields) / sizeof(derived_fields[0]); i++) {
        answer.field = derived_fields[i].path;
        char *d = daemon_key(NULL, message_named("numbers"));
        char *m = mock_key(NULL, message_named("numbers"));
        CHECK_STR(d, derived_fields[i].want);
        CHECK_STR(m, derived_fields[i].want);
        free(d);
        free(m);
    }
    answer.field = NULL;
    /* attempt() is 0 in derive_key: the key is not claimed yet (plugin.h) */
    answer.attempt = 1;
    char *da = daemon_key(NULL, &messages[0]);
    char *ma = mock_key(NULL, &messages[0]);
    CHECK_STR(da, "key attempt=0");
    CHECK_STR(ma, "key attempt=0");
    free(da);
    free(ma);
    answer.attempt = 0;
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        answer.bytes = answers[i].bytes;
        answer.n = answers[i].n;
        answer.error = answers[i].error;
        char *d = daemon_key(NULL, &messages[0]);
        char *m = mock_key(NULL, &messages[0]);
        CHECK_STR(d, answers[i].want);
        CHECK_STR(m, answers[i].want);
        free(d);
        free(m);
    }
}

/* A plugin that keeps its settings pointer past init() (plugin.h: valid
 * only during init and describe). The daemon's lives on hostapi_init's
 * stack: read later, it was a dead frame. Both hosts answer NULL then. */
static const twice_settings *kept_settings;
static const twice_api *kept_api;

static int
keeper_init(const twice_api *api, const twice_settings *settings, void **state)
{
    kept_settings = settings;
    kept_api = api;
    *state = NULL;
    const char *v = api->setting(settings, "greeting");
    return v != NULL && strcmp(v, "hi") == 0 ? 0 : -1;
}

static void
test_settings_after_init(void)
{
    static const twice_setting decl[] = {{"greeting", TWICE_SETTING_STRING, 0, NULL, "x"},
                                         {NULL, 0, 0, NULL, NULL}};
    twice_plugin d = descriptor("{id}");
    d.init = keeper_init;
    d.settings = decl;
    struct config_kv kv = {"greeting", "hi", TWICE_SETTING_STRING, 3, NULL};
    struct config_plugin cp = {.name = "agree", .settings = &kv, .nsettings = 1};
    struct plugin_instance p = {.name = "agree", .cfg = &cp};
    char err[512];
    p.lp.desc = &d;
    CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), 0);
    CHECK(kept_api->setting(kept_settings, "greeting") == NULL);
    kept_api->setting_error(kept_settings, "greeting", "too late"); /* said, not read */

    twice_mock *m = twice_mock_new(&d);
    CHECK(m != NULL);
    CHECK_INT(twice_mock_set(m, "greeting", "hi"), 0);
    CHECK_INT(twice_mock_init(m), 0);
    CHECK(kept_api->setting(kept_settings, "greeting") == NULL);
    twice_mock_free(m);
}

/* A plugin that keeps the job of its first derive_key() and, in the next,
 * calls every API function that takes a job with the kept one: what they
 * answered goes to kept_answers. */
static twice_job *kept_job;
static char kept_answers[512];

static int
kept_derive(void *state, const twice_job *job, char *out, size_t cap)
{
    const twice_api *api = state;
    twice_job *k = kept_job;
    if (k == NULL) {
        kept_job = (twice_job *) job;
        return snprintf(out, cap, "first");
    }
    size_t len = 99;
    const char *body = api->body(k, &len), *field = api->field(k, "id", NULL);
    const char *json = api->field_json(k, "", NULL), *attr = api->attr(k, "Tenant", NULL);
    const char *key = api->key(k);
    int attempt = api->attempt(k);
    const char *msg = api->message_id(k), *group = api->group_id(k);
    void *db = api->db(k);
    const char *tp = api->traceparent(k), *queue = api->queue(k);
    const char *name = api->attr_name(k, 0);
    api->retry_after(k, 5);
    api->downstream_unavailable(k, 5);
    api->error(k, "from the kept job");
    int sent = api->send(k, "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "{}",
                         (size_t) -1, 0, NULL, NULL);
    api->log(k, TWICE_LOG_INFO, "said with the kept job");
    snprintf(kept_answers, sizeof(kept_answers),
             "body=%s len=%zu field=%s json=%s attr=%s key='%s' attempt=%d msg='%s' group=%s "
             "db=%s tp=%s queue='%s' attr_name=%s send=%d",
             body ? body : "(null)", len, field ? field : "(null)", json ? json : "(null)",
             attr ? attr : "(null)", key, attempt, msg, group ? group : "(null)",
             db ? "(db)" : "(null)", tp ? tp : "(null)", queue, name ? name : "(null)", sent);
    return snprintf(out, cap, "second");
}

/* The daemon: two jobs through hostapi_derive_key; the kept one is still
 * in memory here, refused all the same (the pointer is compared). Its
 * log, with the refusal lines, goes to the file log_path. */
static void
daemon_kept(const char *log_path)
{
    twice_plugin d = descriptor(NULL);
    d.derive_key = kept_derive;
    d.flags = TWICE_FLAG_TRANSACTIONAL;
    struct plugin_instance p = {.name = "agree"};
    char err[512];
    p.lp.desc = &d;
    CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), 0);
    struct sqs_attr tenant = {(char *) "Tenant", (char *) "String", (char *) "acme", NULL, 0};
    struct twice_job j[2] = {{.retry_after = -1}, {.retry_after = -1}};
    for (int i = 0; i < 2; i++) {
        j[i].msg.body = (char *) "{\"id\":1}";
        j[i].msg.body_len = strlen(j[i].msg.body);
        j[i].msg.attrs = &tenant;
        j[i].msg.nattrs = 1;
    }
    struct buf key = BUF_INIT;
    kept_job = NULL;
    CHECK_INT(log_open(log_path), 0);
    CHECK_INT(hostapi_derive_key(&p, NULL, &j[0], &key), 0);
    CHECK_INT(hostapi_derive_key(&p, NULL, &j[1], &key), 0);
    CHECK_INT(log_open(NULL), 0);
    CHECK_STR(buf_str(&key), "firstsecond");
    for (int i = 0; i < 2; i++) { /* error(), retry_after() & co. did nothing */
        CHECK(j[i].error == NULL);
        CHECK_INT(j[i].retry_after, -1);
        CHECK_INT(j[i].downstream, 0);
        jsondoc_free(j[i].body);
        arena_free(&j[i].scratch);
    }
    buf_free(&key);
}

/* The mock: the kept job is freed before the next runs (ASan: not read).
 * The mock borrows d: it outlives the mock. */
static void
mock_kept(twice_plugin *d, twice_mock **out)
{
    *d = descriptor(NULL);
    d->derive_key = kept_derive;
    d->flags = TWICE_FLAG_TRANSACTIONAL;
    twice_mock *m = twice_mock_new(d);
    CHECK(m != NULL);
    CHECK_INT(twice_mock_init(m), 0);
    twice_mock_job *j[2];
    for (int i = 0; i < 2; i++) {
        j[i] = twice_mock_job_new(m, "{\"id\":1}");
        twice_mock_job_attr(j[i], "Tenant", NULL, "acme");
        twice_mock_job_db(j[i], (void *) m);
    }
    kept_job = NULL;
    CHECK_INT(twice_mock_run(j[0]), TWICE_DONE);
    twice_mock_job_free(j[0]);
    CHECK_INT(twice_mock_run(j[1]), TWICE_DONE);
    CHECK_STR(twice_mock_job_key(j[1]), "second");
    CHECK(twice_mock_job_error(j[1]) == NULL);
    CHECK_INT(twice_mock_job_retry_after(j[1]), -1);
    twice_mock_job_free(j[1]);
    *out = m;
}

/* Whether the file holds a line that ends with text (a log line's
 * message, after twiced's time, level and fields). */
static int
file_has_line(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int found = 0;
    size_t n = strlen(text);
    while (f != NULL && !found && fgets(line, sizeof(line), f) != NULL) {
        size_t len = strcspn(line, "\n");
        found = len >= n && memcmp(line + len - n, text, n) == 0;
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* A job used after its derive_key() returned: the daemon and the mock give
 * every function the same "none" answer and say each refusal in the same
 * words (text/deadjob.c), once per function. */
static void
test_kept_job(void)
{
    char path[] = "/tmp/test-mock-keys-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) {
        return;
    }
    close(fd);
    daemon_kept(path);
    char daemon_answers[sizeof(kept_answers)];
    memcpy(daemon_answers, kept_answers, sizeof(kept_answers));
    twice_plugin d;
    twice_mock *m;
    mock_kept(&d, &m);
    const char *none = "body=(null) len=99 field=(null) json=(null) attr=(null) key='' "
                       "attempt=0 msg='' group=(null) db=(null) tp=(null) queue='' "
                       "attr_name=(null) send=-1";
    CHECK_STR(daemon_answers, none);
    CHECK_STR(kept_answers, none);
    CHECK_INT(twice_mock_refused(m, NULL), 17);
    CHECK_INT(twice_mock_log_count(m), 18); /* a line per function, and the plugin's */
    for (size_t i = 0; i < twice_mock_log_count(m); i++) {
        const char *line = twice_mock_log_text(m, i, NULL);
        if (!file_has_line(path, line)) {
            fprintf(stderr, "test-mock-keys: the daemon's log has no line \"%s\"\n", line);
            CHECK(0);
        }
    }
    CHECK_CONTAINS(twice_mock_log_text(m, 0, NULL),
                   "plugin 'agree' called api->body() with a job that is not running on its "
                   "thread");
    twice_mock_free(m);
    unlink(path);
}

/* An init() that fails with a long error line (the euro sign, with a 'x'
 * before: a byte cut falls mid-character), or with none. */
static int
failing_init(const twice_api *api, const twice_settings *settings, void **state)
{
    (void) settings;
    (void) state;
    char text[1501];
    for (int i = 0; i < 500; i++) {
        memcpy(text + 3 * i, "\xe2\x82\xac", 3);
    }
    text[1500] = '\0';
    if (answer.n == 0) {
        api->log(NULL, TWICE_LOG_WARN, "a warning");
        api->log(NULL, TWICE_LOG_ERROR, "x%s", text);
        api->log(NULL, TWICE_LOG_INFO, "an info line, not the cause");
    }
    return -1;
}

/* The mock reports a failed init() in twiced's words (less FILE:LINE). */
static void
test_init_failure(void)
{
    twice_plugin d = descriptor("{id}");
    d.init = failing_init;
    struct config_plugin cp = {.name = "agree", .line = 3};
    struct plugin_instance p = {.name = "agree", .cfg = &cp};
    char err[2048];
    p.lp.desc = &d;
    for (answer.n = 0; answer.n < 2; answer.n++) {
        CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), -1);
        twice_mock *m = twice_mock_new(&d);
        CHECK(m != NULL);
        CHECK(twice_mock_init(m) != 0);
        CHECK(strncmp(err, "twice.conf:3: ", 14) == 0);
        CHECK_STR(twice_mock_error(m), err + 14);
        CHECK_CONTAINS(err, answer.n == 0 ? "init failed: x\xe2\x82\xac" : "logged no reason");
        twice_mock_free(m);
    }
    answer.n = 0;
}

int
main(void)
{
    make_messages();
    twice_plugin any_desc = descriptor("{id}");
    twice_mock *any = twice_mock_new(&any_desc);
    CHECK(any != NULL);

    size_t rows = 0;
    for (size_t t = 0; templates[t] != NULL; t++) {
        for (size_t i = 0; i < nmessages; i++, rows++) {
            free(agree(templates[t], &messages[i], any));
        }
    }
    CHECK_INT(disagreements, 0);
    printf("test-mock-keys: %zu templates x %zu messages, %d disagreements\n", rows / nmessages,
           nmessages, disagreements);

    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        char *got = agree(expected[i].tmpl, message_named(expected[i].message), any);
        if (strcmp(expected[i].tmpl, "x{k500}") == 0) {
            CHECK_INT(strlen(got), strlen("key x") + 500);
        } else {
            CHECK_STR(got, expected[i].want);
        }
        free(got);
    }
    test_derive_key();
    test_settings_after_init();
    test_kept_job();
    test_init_failure();
    twice_mock_free(any);
    return check_done("test-mock-keys");
}
