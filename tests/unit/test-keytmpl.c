/*
 * test-keytmpl.c - key templates: every form of the language, every compile
 * error with its column, every expansion result. Not a test of jsonpath.
 */
#include "check.h"

#include "buf.h"
#include "jsonpath.h"
#include "keytmpl.h"

#include <stdlib.h>
#include <string.h>

#include <twice/plugin.h>

/* Compile text; must fail with exactly want. */
static void
check_compile_error(const char *text, const char *want)
{
    struct keytmpl *t = (struct keytmpl *) 1;
    char err[256] = "";
    CHECK_INT(keytmpl_compile(text, &t, err, sizeof(err)), -1);
    CHECK(t == NULL);
    CHECK_STR(err, want);
}

static struct keytmpl *
compile(const char *text)
{
    struct keytmpl *t = NULL;
    char err[256] = "";
    if (keytmpl_compile(text, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "compile \"%s\": %s\n", text, err);
    }
    return t;
}

static void
test_compile_errors(void)
{
    check_compile_error("a:{id", "column 3: unterminated field");
    check_compile_error("{", "column 1: unterminated field");
    check_compile_error("a:{}", "column 3: empty field {}");
    check_compile_error("x{msg:x}",
                        "column 2: unknown message field {msg:x} "
                        "(known: {msg:group}, {msg:sns_message_id}, {msg:topic}, {msg:subject}, "
                        "{msg:detail_type}, {msg:source}, {msg:event_id})");
    check_compile_error("{msg:}",
                        "column 1: unknown message field {msg:} "
                        "(known: {msg:group}, {msg:sns_message_id}, {msg:topic}, {msg:subject}, "
                        "{msg:detail_type}, {msg:source}, {msg:event_id})");
    check_compile_error("{msg:groups}",
                        "column 1: unknown message field {msg:groups} "
                        "(known: {msg:group}, {msg:sns_message_id}, {msg:topic}, {msg:subject}, "
                        "{msg:detail_type}, {msg:source}, {msg:event_id})");
    check_compile_error("k:{attr:}", "column 3: empty attribute name in {attr:}");
    /* A name SQS refuses is on no message: every one would be dead-lettered. */
#define ATTR_RULE                                                                                 \
    " is not a possible SQS message attribute name (1-256 of A-Z a-z 0-9 _ - ., no leading, "     \
    "trailing or doubled '.', not starting with AWS. or Amazon.)"
    check_compile_error("k:{attr:bad name}", "column 3: \"bad name\"" ATTR_RULE);
    check_compile_error("{id}{attr:Aws.Trace}", "column 5: \"Aws.Trace\"" ATTR_RULE);
    check_compile_error("{attr:amazon.x}", "column 1: \"amazon.x\"" ATTR_RULE);
    check_compile_error("{attr:a..b}", "column 1: \"a..b\"" ATTR_RULE);
    check_compile_error("{attr:.a}", "column 1: \".a\"" ATTR_RULE);
    check_compile_error("{attr:a.}", "column 1: \"a.\"" ATTR_RULE);
    check_compile_error("{attr:a:b}", "column 1: \"a:b\"" ATTR_RULE);
#undef ATTR_RULE
    check_compile_error("a}b{id}", "column 2: stray '}' (write '}}' for a literal brace)");
    check_compile_error("{id}}", "column 5: stray '}' (write '}}' for a literal brace)");
    check_compile_error("{a{b}", "column 3: '{' inside a field (write '{{' outside fields)");
    check_compile_error("{a.{b}}", "column 4: '{' inside a field (write '{{' outside fields)");
    check_compile_error("{a..b}", "column 3: empty path component in {a..b}");
    check_compile_error("{.a}", "column 2: empty path component in {.a}");
    check_compile_error("{a.}", "column 3: empty path component in {a.}");
    check_compile_error("k\x01{id}", "column 2: control character 0x01 in template");
    check_compile_error("k:{i\td}", "column 5: control character 0x09 in template");

    const char *no_field = "column 1: no field: a constant key would make every message a "
                           "duplicate (use {path}, {attr:Name} or {msg:group})";
    check_compile_error("constant", no_field);
    check_compile_error("", no_field);
    check_compile_error("{{id}}", no_field);

    /* Columns count characters, not bytes. */
    check_compile_error("\xc3\xa9t\xc3\xa9:{id", "column 5: unterminated field");

    /* Literal text that alone fills a key. */
    char big[TWICE_KEY_MAX + 8];
    memset(big, 'x', TWICE_KEY_MAX);
    strcpy(big + TWICE_KEY_MAX, "{id}");
    check_compile_error(big, "column 1: literal text of 512 bytes leaves no room in a "
                             "512-byte key");
    big[TWICE_KEY_MAX - 1] = '\0';
    strcat(big, "{id}");
    struct keytmpl *t = compile(big);
    CHECK(t != NULL);
    keytmpl_free(t);

    /* A small err buffer is truncated, never overrun. */
    char small[10];
    struct keytmpl *t2 = NULL;
    CHECK_INT(keytmpl_compile("{", &t2, small, sizeof(small)), -1);
    CHECK_STR(small, "column 1:");
}

static void
test_needs_body(void)
{
    struct keytmpl *t = compile("welcome-email:{candidateId}");
    CHECK(t != NULL && keytmpl_needs_body(t));
    keytmpl_free(t);
    t = compile("{attr:Tenant}/{msg:group}");
    CHECK(t != NULL && !keytmpl_needs_body(t));
    keytmpl_free(t);
    t = compile("{attr:T}/{a.b}");
    CHECK(t != NULL && keytmpl_needs_body(t));
    keytmpl_free(t);
    keytmpl_free(NULL);
}

/* A message attribute, as the host's SQS messages hold them. */
struct attr {
    const char *name, *data_type, *string_value;
};

/* A message for expansions. */
struct msg {
    struct jsondoc *body;
    struct attr attrs[4];
    struct keytmpl_input in;
};

/* keytmpl's attribute lookup over a struct msg's attrs. */
static int
find_attr(const void *ctx, const char *name, struct keytmpl_attr *out)
{
    const struct msg *m = ctx;
    for (size_t i = 0; i < sizeof(m->attrs) / sizeof(m->attrs[0]); i++) {
        if (strcmp(m->attrs[i].name, name) == 0) {
            *out = (struct keytmpl_attr){m->attrs[i].data_type, m->attrs[i].string_value};
            return 0;
        }
    }
    return -1;
}

static void
msg_init(struct msg *m, const char *body)
{
    char err[256];

    memset(m, 0, sizeof(*m));
    m->body = jsondoc_parse(body, strlen(body), err, sizeof(err));
    m->attrs[0] = (struct attr){"Tenant", "String", "acme"};
    m->attrs[1] = (struct attr){"Count", "Number", "12"};
    m->attrs[2] = (struct attr){"Shard", "Number.int", "7"};
    m->attrs[3] = (struct attr){"Blob", "Binary", NULL};
    m->in.body = m->body;
    m->in.attr = find_attr;
    m->in.attr_ctx = m;
    m->in.group_id = "grp-1";
}

/* Expand tmpl against m after "pre|"; checks the result, err and output.
 * On failure the output must be back to "pre|". */
static void
check_expand(const char *tmpl, const struct msg *m, enum keytmpl_result want, const char *want_s)
{
    struct keytmpl *t = compile(tmpl);
    struct buf out = BUF_INIT;
    char err[512] = "";

    CHECK(t != NULL);
    if (t == NULL) {
        return;
    }
    buf_puts(&out, "pre|");
    enum keytmpl_result r = keytmpl_expand(t, &m->in, &out, err, sizeof(err));
    CHECK_INT(r, want);
    if (want == KEYTMPL_OK) {
        CHECK_STR(buf_str(&out) + 4, want_s);
    } else {
        CHECK_STR(err, want_s);
        CHECK_STR(buf_str(&out), "pre|");
    }
    CHECK(strncmp(buf_str(&out), "pre|", 4) == 0);
    buf_free(&out);
    keytmpl_free(t);
}

static void
test_expand_ok(void)
{
    struct msg m;
    msg_init(&m, "{\"candidateId\":\"c-42\",\"n\":17,\"r\":0.5,\"neg\":-3,"
                 "\"a\":{\"b\":\"deep\"},\"items\":[{\"id\":\"i0\"},{\"id\":9}],"
                 "\"u\":\"caf\\u00e9 \\u2603\",\"big\":9007199254740993}");
    CHECK(m.body != NULL);
    check_expand("welcome-email:{candidateId}", &m, KEYTMPL_OK, "welcome-email:c-42");
    check_expand("{n}/{r}/{neg}/{big}", &m, KEYTMPL_OK, "17/0.5/-3/9007199254740993");
    check_expand("{a.b}:{items.0.id}:{items.1.id}", &m, KEYTMPL_OK, "deep:i0:9");
    check_expand("{{x}}{candidateId}{{", &m, KEYTMPL_OK, "{x}c-42{");
    check_expand("}}{n}}}", &m, KEYTMPL_OK, "}17}");
    check_expand("{attr:Tenant}:{attr:Count}:{attr:Shard}", &m, KEYTMPL_OK, "acme:12:7");
    check_expand("{msg:group}#{candidateId}", &m, KEYTMPL_OK, "grp-1#c-42");
    check_expand("{u}", &m, KEYTMPL_OK, "caf\xc3\xa9 \xe2\x98\x83");
    jsondoc_free(m.body);

    /* Templates without body fields work on a body that is not JSON. */
    msg_init(&m, "plain text");
    CHECK(m.body == NULL);
    m.in.body_error = "line 1 column 1: invalid token near 'plain'";
    check_expand("{attr:Tenant}-{msg:group}", &m, KEYTMPL_OK, "acme-grp-1");
}

static void
test_expand_failures(void)
{
    struct msg m;
    msg_init(&m, "{\"id\":\"x\",\"nul\":null,\"obj\":{},\"arr\":[1],\"t\":true,\"f\":false,"
                 "\"empty\":\"\",\"nl\":\"a\\nb\",\"del\":\"a\\u007fb\",\"tab\":\"a\\tb\","
                 "\"esc\":\"\\u001b[31m\",\"hasnul\":\"a\\u0000b\",\"zero\":\"\\u0000\"}");
    CHECK(m.body != NULL);
    check_expand("k:{candidateId}", &m, KEYTMPL_MISSING, "missing key field candidateId");
    check_expand("k:{id.x}", &m, KEYTMPL_MISSING, "missing key field id.x");
    check_expand("k:{nul}", &m, KEYTMPL_MISSING, "missing key field nul (null)");
    check_expand("k:{attr:Nope}", &m, KEYTMPL_MISSING, "missing key field attr:Nope");
    check_expand("k:{attr:tenant}", &m, KEYTMPL_MISSING, "missing key field attr:tenant");
    check_expand("k:{obj}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field obj: an object (need a string or number)");
    check_expand("k:{arr}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field arr: an array (need a string or number)");
    check_expand("k:{t}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field t: a boolean (need a string or number)");
    check_expand("k:{f}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field f: a boolean (need a string or number)");
    check_expand("k:{empty}", &m, KEYTMPL_BAD_VALUE, "bad key field empty: empty");
    check_expand("k:{nl}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field nl: contains a control character");
    check_expand("k:{del}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field del: contains a control character");
    check_expand("k:{tab}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field tab: contains a control character");
    check_expand("k:{esc}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field esc: contains a control character");
    /* "\u0000" is valid in a body, never in a key: said plainly */
    check_expand("k:{hasnul}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field hasnul: contains a NUL character (\\u0000)");
    check_expand("k:{zero}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field zero: contains a NUL character (\\u0000)");
    check_expand("k:{attr:Blob}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field attr:Blob: a binary attribute (need String or Number)");
    /* The first failing field decides, after earlier fields were appended. */
    check_expand("{id}:{missing}:{obj}", &m, KEYTMPL_MISSING, "missing key field missing");

    m.attrs[0].string_value = "";
    check_expand("k:{attr:Tenant}", &m, KEYTMPL_BAD_VALUE, "bad key field attr:Tenant: empty");
    m.attrs[0].string_value = "a\rb";
    check_expand("k:{attr:Tenant}", &m, KEYTMPL_BAD_VALUE,
                 "bad key field attr:Tenant: contains a control character");
    m.in.group_id = NULL;
    check_expand("k:{msg:group}", &m, KEYTMPL_MISSING,
                 "missing key field msg:group (the message has no group id)");
    m.in.group_id = "";
    check_expand("k:{msg:group}", &m, KEYTMPL_BAD_VALUE, "bad key field msg:group: empty");
    jsondoc_free(m.body);

    /* A body that is a JSON string is most often a job encoded twice (an
     * SNS Message serialised once more): said, as is a scalar root. */
    msg_init(&m, "\"{\\\"id\\\":\\\"x\\\"}\"");
    CHECK(m.body != NULL);
    check_expand("k:{id}", &m, KEYTMPL_MISSING,
                 "missing key field id (the body is a JSON string, not an object: encoded "
                 "twice?)");
    jsondoc_free(m.body);
    msg_init(&m, "42");
    check_expand("k:{id}", &m, KEYTMPL_MISSING,
                 "missing key field id (the body is not a JSON object)");
    jsondoc_free(m.body);
    msg_init(&m, "[{\"id\":\"x\"}]");
    check_expand("k:{id}", &m, KEYTMPL_MISSING, "missing key field id");
    check_expand("k:{0.id}", &m, KEYTMPL_OK, "k:x");
    jsondoc_free(m.body);

    /* Body fields on a body that is not JSON: the parser's reason is kept. */
    msg_init(&m, "{oops");
    CHECK(m.body == NULL);
    m.in.body_error = "line 1 column 2: string or '}' expected near 'oops'";
    check_expand("{attr:Tenant}:{candidateId}", &m, KEYTMPL_NOT_JSON,
                 "key field candidateId needs a JSON body: line 1 column 2: string or '}' "
                 "expected near 'oops'");
    m.in.body_error = NULL;
    check_expand("{candidateId}", &m, KEYTMPL_NOT_JSON,
                 "key field candidateId needs a JSON body: the body is not JSON");
}

static void
test_expand_too_long(void)
{
    struct msg m;
    struct buf body = BUF_INIT;
    size_t huge = 8u << 20;

    /* "k:" (2 bytes) plus a 510-byte value is exactly TWICE_KEY_MAX. */
    buf_puts(&body, "{\"fit\":\"");
    for (int i = 0; i < TWICE_KEY_MAX - 2; i++) {
        buf_putc(&body, 'f');
    }
    buf_puts(&body, "\",\"over\":\"");
    for (int i = 0; i < TWICE_KEY_MAX - 1; i++) {
        buf_putc(&body, 'o');
    }
    buf_puts(&body, "\",\"huge\":\"");
    buf_reserve(&body, huge + 64);
    memset(body.data + body.len, 'h', huge);
    body.len += huge;
    body.data[body.len] = '\0';
    buf_puts(&body, "\",\"n\":123456}");
    msg_init(&m, buf_str(&body)); /* the document borrows the text: freed last */
    CHECK(m.body != NULL);

    struct keytmpl *t = compile("k:{fit}");
    struct buf out = BUF_INIT;
    char err[256];
    CHECK_INT(keytmpl_expand(t, &m.in, &out, err, sizeof(err)), KEYTMPL_OK);
    CHECK_INT(out.len, TWICE_KEY_MAX);
    buf_free(&out);
    keytmpl_free(t);

    check_expand("k:{over}", &m, KEYTMPL_TOO_LONG, "key longer than 512 bytes at key field over");
    check_expand("{fit}{n}", &m, KEYTMPL_TOO_LONG, "key longer than 512 bytes at key field n");
    check_expand("{fit}:::{attr:Tenant}", &m, KEYTMPL_TOO_LONG, "key longer than 512 bytes");
    check_expand("{fit}:{attr:Tenant}", &m, KEYTMPL_TOO_LONG,
                 "key longer than 512 bytes at key field attr:Tenant");

    /* A hostile 8 MiB field is refused without being copied: the output
     * buffer never grows anywhere near its size. */
    t = compile("k:{huge}");
    CHECK_INT(keytmpl_expand(t, &m.in, &out, err, sizeof(err)), KEYTMPL_TOO_LONG);
    CHECK_STR(err, "key longer than 512 bytes at key field huge");
    CHECK_INT(out.len, 0);
    CHECK(out.cap < 4 * TWICE_KEY_MAX);
    buf_free(&out);
    keytmpl_free(t);

    /* ... even when it also holds control characters. */
    char *s = malloc(huge + 1);
    memset(s, '\n', huge);
    s[huge] = '\0';
    m.attrs[0].string_value = s;
    check_expand("{attr:Tenant}", &m, KEYTMPL_TOO_LONG,
                 "key longer than 512 bytes at key field attr:Tenant");
    free(s);
    jsondoc_free(m.body);
    buf_free(&body);
}

static void
test_reasons(void)
{
    CHECK_STR(keytmpl_reason(KEYTMPL_OK), "");
    CHECK_STR(keytmpl_reason(KEYTMPL_NOT_JSON), "invalid-json");
    CHECK_STR(keytmpl_reason(KEYTMPL_MISSING), "missing-key-field");
    CHECK_STR(keytmpl_reason(KEYTMPL_BAD_VALUE), "bad-key-field");
    CHECK_STR(keytmpl_reason(KEYTMPL_TOO_LONG), "key-too-long");
}

int
main(void)
{
    test_compile_errors();
    test_needs_body();
    test_expand_ok();
    test_expand_failures();
    test_expand_too_long();
    test_reasons();
    return check_done("test-keytmpl");
}
