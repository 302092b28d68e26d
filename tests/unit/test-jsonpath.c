/*
 * test-jsonpath.c - dotted paths, scalar text and the strict body parser.
 * Not a test of jansson itself: only of what twice relies on from it.
 */
#include "check.h"

#include "buf.h"
#include "jsonpath.h"

#include <stdlib.h>

static json_t *
parse(const char *text)
{
    char err[256];
    json_t *v = jsonpath_parse_body(text, strlen(text), err, sizeof(err));
    if (v == NULL) {
        fprintf(stderr, "parse failed: %s\n", err);
    }
    return v;
}

/* The text jsonpath_scalar_text gives for the value at path, or "<fail>". */
static char *
text_at(const json_t *root, const char *path)
{
    struct buf b = BUF_INIT;
    if (jsonpath_scalar_text(jsonpath_get(root, path), &b) != 0) {
        buf_free(&b);
        return strdup("<fail>");
    }
    return buf_steal(&b);
}

#define CHECK_TEXT(root, path, want)                                                              \
    do {                                                                                          \
        char *got_ = text_at(root, path);                                                         \
        CHECK_STR(got_, want);                                                                    \
        free(got_);                                                                               \
    } while (0)

static void
test_get(void)
{
    json_t *root = parse("{\"a\":{\"b\":\"x\"},\"items\":[{\"id\":7},{\"id\":\"s\"}],"
                         "\"0\":\"zero\",\"n\":null,\"s\":\"str\",\"e\":{\"\":1}}");
    CHECK(root != NULL);
    CHECK(jsonpath_get(root, "") == root);
    CHECK_TEXT(root, "a.b", "x");
    CHECK_TEXT(root, "items.0.id", "7");
    CHECK_TEXT(root, "items.1.id", "s");
    CHECK_TEXT(root, "0", "zero"); /* digits name a key of an object */
    CHECK(json_is_object(jsonpath_get(root, "a")));
    CHECK(json_is_array(jsonpath_get(root, "items")));
    CHECK(json_is_null(jsonpath_get(root, "n")));
    CHECK(jsonpath_get(root, "missing") == NULL);
    CHECK(jsonpath_get(root, "a.c") == NULL);
    CHECK(jsonpath_get(root, "items.2") == NULL);                       /* past the end */
    CHECK(jsonpath_get(root, "items.01") == NULL);                      /* no leading zeros */
    CHECK(jsonpath_get(root, "items.-1") == NULL);                      /* no negatives */
    CHECK(jsonpath_get(root, "items.+1") == NULL);                      /* no signs */
    CHECK(jsonpath_get(root, "items.x") == NULL);                       /* a key of an array */
    CHECK(jsonpath_get(root, "items.99999999999999999999999") == NULL); /* overflow */
    CHECK(jsonpath_get(root, "s.0") == NULL);                           /* into a string */
    CHECK(jsonpath_get(root, "a.b.c") == NULL);                         /* past a scalar */
    CHECK(jsonpath_get(root, "a..b") == NULL);
    CHECK(jsonpath_get(root, ".a") == NULL);
    CHECK(jsonpath_get(root, "a.") == NULL);
    CHECK(jsonpath_get(root, "e.") == NULL); /* even though "" is a key of e */
    CHECK(jsonpath_get(NULL, "a") == NULL);
    CHECK(jsonpath_get(root, NULL) == NULL);
    json_decref(root);
}

static void
test_scalar_text(void)
{
    json_t *root =
        parse("{\"s\":\"h\\u00e9llo\",\"i\":-42,\"big\":9223372036854775807,"
              "\"min\":-9223372036854775808,\"r1\":0.1,\"r2\":1.0,\"r3\":2.5,\"r4\":1e300,"
              "\"r5\":0.30000000000000004,\"r6\":-0.0,\"r7\":123456789.125,\"r8\":1e-7,"
              "\"t\":true,\"f\":false,\"n\":null,\"o\":{},\"a\":[]}");
    CHECK(root != NULL);
    CHECK_TEXT(root, "s", "h\xc3\xa9llo");
    CHECK_TEXT(root, "i", "-42");
    CHECK_TEXT(root, "big", "9223372036854775807");
    CHECK_TEXT(root, "min", "-9223372036854775808");
    CHECK_TEXT(root, "r1", "0.1");
    CHECK_TEXT(root, "r2", "1");
    CHECK_TEXT(root, "r3", "2.5");
    CHECK_TEXT(root, "r4", "1e+300");
    CHECK_TEXT(root, "r5", "0.30000000000000004");
    CHECK_TEXT(root, "r6", "-0");
    CHECK_TEXT(root, "r7", "123456789.125");
    CHECK_TEXT(root, "r8", "1e-07");
    CHECK_TEXT(root, "t", "true");
    CHECK_TEXT(root, "f", "false");
    CHECK_TEXT(root, "n", "<fail>");
    CHECK_TEXT(root, "o", "<fail>");
    CHECK_TEXT(root, "a", "<fail>");
    CHECK_TEXT(root, "absent", "<fail>");

    /* Nothing is appended on failure; success appends after what is there. */
    struct buf b = BUF_INIT;
    buf_puts(&b, "k:");
    CHECK_INT(jsonpath_scalar_text(jsonpath_get(root, "o"), &b), -1);
    CHECK_STR(buf_str(&b), "k:");
    CHECK_INT(jsonpath_scalar_text(jsonpath_get(root, "i"), &b), 0);
    CHECK_STR(buf_str(&b), "k:-42");
    buf_free(&b);

    /* Every real reads back as the same double. */
    double samples[] = {1.0 / 3, 2.0 / 3, 1e-300, 5e-324, 1.7976931348623157e308, 100.0, 0.2};
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        json_t *r = json_real(samples[i]);
        struct buf t = BUF_INIT;
        CHECK_INT(jsonpath_scalar_text(r, &t), 0);
        CHECK(strtod(buf_str(&t), NULL) == samples[i]);
        buf_free(&t);
        json_decref(r);
    }
    json_decref(root);
}

static int
printable(const char *s)
{
    for (; *s != '\0'; s++) {
        if ((unsigned char) *s < 0x20 || (unsigned char) *s >= 0x7f) {
            return 0;
        }
    }
    return 1;
}

/* A parse that must fail; err must hold want. */
static void
check_refused(const char *body, size_t len, const char *want)
{
    char err[256] = "";
    json_t *v = jsonpath_parse_body(body, len, err, sizeof(err));
    CHECK(v == NULL);
    CHECK_CONTAINS(err, want);
    CHECK_CONTAINS(err, "line ");
    CHECK(printable(err)); /* the input's bytes come back escaped */
    json_decref(v);
}

static char *
nested(size_t depth, char open, char close)
{
    char *s = malloc(2 * depth + 1);
    memset(s, open, depth);
    memset(s + depth, close, depth);
    s[2 * depth] = '\0';
    return s;
}

static void
test_parse_body(void)
{
    char err[256] = "";
    json_t *v = jsonpath_parse_body("{\"a\":1}", 7, err, sizeof(err));
    CHECK(v != NULL);
    json_decref(v);

    /* Exact form of the error: line and column first. */
    v = jsonpath_parse_body("{\"a\":1,}", 8, err, sizeof(err));
    CHECK(v == NULL);
    CHECK_STR(err, "line 1 column 8: string or '}' expected near '}'");

    v = jsonpath_parse_body("{\n  \"a\": tru\n}", 14, err, sizeof(err));
    CHECK(v == NULL);
    CHECK_CONTAINS(err, "line 2 column");

    check_refused("{\"a\":1,\"a\":2}", 13, "duplicate object key");
    check_refused("{\"a\":\"x\xff\"}", 9, "unable to decode byte 0xff");
    check_refused("{\"a\":\"\xc3\x28\"}", 10, "unable to decode byte");
    check_refused("{\"a\":\"\\u0000\"}", 14, "\\u0000 is not allowed");
    check_refused("{\"a\":\"x\0y\"}", 11, "control character 0x0");
    check_refused("{\"a\":1}\0", 8, "end of file expected");
    check_refused("{\"a\":123456789012345678901234567890}", 36, "too big integer");
    check_refused("{\"a\":-123456789012345678901234567890}", 37, "too big negative integer");
    check_refused("{\"a\":1e400}", 11, "real number overflow");
    check_refused("", 0, "unexpected token");
    check_refused(NULL, 0, "unexpected token");
    check_refused("\x01\x02\x1b[31m", 7, "invalid token");
    check_refused("not json", 8, "invalid token");

    /* Deep nesting fails cleanly (no stack overflow) at 10,000 levels. */
    char *deep = nested(10000, '[', ']');
    check_refused(deep, strlen(deep), "maximum parsing depth");
    free(deep);
    size_t depth = 10000;
    struct buf obj = BUF_INIT;
    for (size_t i = 0; i < depth; i++) {
        buf_puts(&obj, "{\"a\":");
    }
    buf_puts(&obj, "1");
    for (size_t i = 0; i < depth; i++) {
        buf_putc(&obj, '}');
    }
    check_refused(buf_str(&obj), obj.len, "maximum parsing depth");
    buf_free(&obj);

    /* Moderate nesting still parses. */
    deep = nested(100, '[', ']');
    v = jsonpath_parse_body(deep, strlen(deep), err, sizeof(err));
    CHECK(v != NULL);
    json_decref(v);
    free(deep);

    /* A bare scalar is JSON (with no fields). */
    v = jsonpath_parse_body("42", 2, err, sizeof(err));
    CHECK(json_is_integer(v));
    CHECK(jsonpath_get(v, "a") == NULL);
    json_decref(v);

    /* A tiny err buffer is truncated, never overrun. */
    char small[8];
    v = jsonpath_parse_body("nope", 4, small, sizeof(small));
    CHECK(v == NULL);
    CHECK_STR(small, "line 1 ");
}

int
main(void)
{
    test_get();
    test_scalar_text();
    test_parse_body();
    return check_done("test-jsonpath");
}
