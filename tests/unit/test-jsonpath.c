/*
 * test-jsonpath.c - the strict body parser (jsondoc.c on jsonparse.c),
 * dotted paths, and the two texts of a scalar (a key's, a plugin's). Not a
 * test of yajl itself: only of what twice relies on from it and adds to it.
 */
#include "check.h"

#include "buf.h"
#include "jsondoc.h"
#include "jsonpath.h"

#include <stdlib.h>

static struct jsondoc *
parse(const char *text)
{
    char err[256];
    struct jsondoc *d = jsondoc_parse(text, strlen(text), err, sizeof(err));
    if (d == NULL) {
        fprintf(stderr, "parse failed: %s\n", err);
    }
    return d;
}

/* The key text (key = 1) or field text (0) of the value at path, or "<fail>". */
static char *
text_at(const struct jsondoc *d, const char *path, int key)
{
    struct buf b = BUF_INIT;
    const struct jsondoc_value *v = jsonpath_get(d, path);
    if ((key ? jsonpath_key_text(v, &b) : jsonpath_field_text(v, &b)) != 0) {
        buf_free(&b);
        return strdup("<fail>");
    }
    return buf_steal(&b);
}

#define CHECK_TEXT(d, path, key, want)                                                            \
    do {                                                                                          \
        char *got_ = text_at(d, path, key);                                                       \
        CHECK_STR(got_, want);                                                                    \
        free(got_);                                                                               \
    } while (0)

/* The original text of the value at path, or "<none>". */
static char *
raw_at(const struct jsondoc *d, const char *path)
{
    const struct jsondoc_value *v = jsonpath_get(d, path);
    size_t n;
    const char *s = v != NULL ? jsondoc_raw(d, v, &n) : NULL;
    return s != NULL ? strndup(s, n) : strdup("<none>");
}

#define CHECK_RAW(d, path, want)                                                                  \
    do {                                                                                          \
        char *got_ = raw_at(d, path);                                                             \
        CHECK_STR(got_, want);                                                                    \
        free(got_);                                                                               \
    } while (0)

static int
type_at(const struct jsondoc *d, const char *path)
{
    const struct jsondoc_value *v = jsonpath_get(d, path);
    return v != NULL ? v->type : -1;
}

static void
test_get(void)
{
    struct jsondoc *d = parse("{\"a\":{\"b\":\"x\"},\"items\":[{\"id\":7},{\"id\":\"s\"}],"
                              "\"0\":\"zero\",\"n\":null,\"s\":\"str\",\"e\":{\"\":1}}");
    CHECK(d != NULL);
    CHECK(jsonpath_get(d, "") == &d->v[0]);
    CHECK_TEXT(d, "a.b", 1, "x");
    CHECK_TEXT(d, "items.0.id", 1, "7");
    CHECK_TEXT(d, "items.1.id", 1, "s");
    CHECK_TEXT(d, "0", 1, "zero"); /* digits name a key of an object */
    CHECK_INT(type_at(d, "a"), JSONDOC_OBJECT);
    CHECK_INT(type_at(d, "items"), JSONDOC_ARRAY);
    CHECK_INT(type_at(d, "n"), JSONDOC_NULL);
    CHECK(jsonpath_get(d, "missing") == NULL);
    CHECK(jsonpath_get(d, "a.c") == NULL);
    CHECK(jsonpath_get(d, "items.2") == NULL);                       /* past the end */
    CHECK(jsonpath_get(d, "items.01") == NULL);                      /* no leading zeros */
    CHECK(jsonpath_get(d, "items.-1") == NULL);                      /* no negatives */
    CHECK(jsonpath_get(d, "items.+1") == NULL);                      /* no signs */
    CHECK(jsonpath_get(d, "items.x") == NULL);                       /* a key of an array */
    CHECK(jsonpath_get(d, "items.99999999999999999999999") == NULL); /* overflow */
    CHECK(jsonpath_get(d, "s.0") == NULL);                           /* into a string */
    CHECK(jsonpath_get(d, "a.b.c") == NULL);                         /* past a scalar */
    CHECK(jsonpath_get(d, "a..b") == NULL);
    CHECK(jsonpath_get(d, ".a") == NULL);
    CHECK(jsonpath_get(d, "a.") == NULL);
    CHECK(jsonpath_get(d, "e.") == NULL); /* even though "" is a key of e */
    CHECK(jsonpath_get(NULL, "a") == NULL);
    CHECK(jsonpath_get(d, NULL) == NULL);
    jsondoc_free(d);

    /* Siblings after deep values are found (each value knows where it ends). */
    d = parse("[[1,[2,[3]]],{\"x\":{\"y\":[4]}},\"last\"]");
    CHECK_TEXT(d, "2", 1, "last");
    CHECK_TEXT(d, "1.x.y.0", 1, "4");
    CHECK_TEXT(d, "0.1.1.0", 1, "3");
    jsondoc_free(d);
}

/* RFC 8259 leaves a repeated name to the reader: twice reads the last one,
 * at every depth, and keeps counting members as written. */
static void
test_repeated_names(void)
{
    struct jsondoc *d = parse("{\"id\":1,\"o\":{\"k\":\"a\",\"k\":{\"z\":0},\"k\":\"c\"},\"id\":2,"
                              "\"arr\":[{\"v\":1,\"v\":[9]}]}");
    CHECK(d != NULL);
    CHECK_TEXT(d, "id", 1, "2");
    CHECK_TEXT(d, "o.k", 1, "c");
    CHECK(jsonpath_get(d, "o.k.z") == NULL); /* the middle one is not seen */
    CHECK_INT(type_at(d, "arr.0.v"), JSONDOC_ARRAY);
    CHECK_TEXT(d, "arr.0.v.0", 1, "9");
    CHECK_INT(d->v[0].count, 4);
    jsondoc_free(d);
}

static void
test_scalar_text(void)
{
    struct jsondoc *d =
        parse("{\"s\":\"h\\u00e9llo\",\"i\":-42,\"big\":9223372036854775807,"
              "\"min\":-9223372036854775808,\"r1\":0.1,\"r2\":1.0,\"r3\":2.5,\"r4\":1e300,"
              "\"r5\":0.30000000000000004,\"r6\":-0.0,\"r7\":123456789.125,\"r8\":1e-7,"
              "\"t\":true,\"f\":false,\"n\":null,\"o\":{},\"a\":[],\"p\":19.99,\"z\":-0}");
    CHECK(d != NULL);
    /* the key's text (pinned further in test-key-texts) */
    CHECK_TEXT(d, "s", 1, "h\xc3\xa9llo");
    CHECK_TEXT(d, "i", 1, "-42");
    CHECK_TEXT(d, "big", 1, "9223372036854775807");
    CHECK_TEXT(d, "min", 1, "-9223372036854775808");
    CHECK_TEXT(d, "r1", 1, "0.1");
    CHECK_TEXT(d, "r2", 1, "1");
    CHECK_TEXT(d, "r3", 1, "2.5");
    CHECK_TEXT(d, "r4", 1, "1e+300");
    CHECK_TEXT(d, "r5", 1, "0.30000000000000004");
    CHECK_TEXT(d, "r6", 1, "-0");
    CHECK_TEXT(d, "r7", 1, "123456789.125");
    CHECK_TEXT(d, "r8", 1, "1e-07");
    CHECK_TEXT(d, "z", 1, "0");
    CHECK_TEXT(d, "t", 1, "true");
    CHECK_TEXT(d, "f", 1, "false");
    CHECK_TEXT(d, "n", 1, "<fail>");
    CHECK_TEXT(d, "o", 1, "<fail>");
    CHECK_TEXT(d, "a", 1, "<fail>");
    CHECK_TEXT(d, "absent", 1, "<fail>");
    /* a plugin's text: numbers exactly as written */
    CHECK_TEXT(d, "s", 0, "h\xc3\xa9llo");
    CHECK_TEXT(d, "p", 0, "19.99");
    CHECK_TEXT(d, "r1", 0, "0.1");
    CHECK_TEXT(d, "r2", 0, "1.0");
    CHECK_TEXT(d, "r4", 0, "1e300");
    CHECK_TEXT(d, "r6", 0, "-0.0");
    CHECK_TEXT(d, "r8", 0, "1e-7");
    CHECK_TEXT(d, "z", 0, "-0");
    CHECK_TEXT(d, "t", 0, "true");
    CHECK_TEXT(d, "o", 0, "<fail>");

    /* Nothing is appended on failure; success appends after what is there. */
    struct buf b = BUF_INIT;
    buf_puts(&b, "k:");
    CHECK_INT(jsonpath_key_text(jsonpath_get(d, "o"), &b), -1);
    CHECK_STR(buf_str(&b), "k:");
    CHECK_INT(jsonpath_key_text(jsonpath_get(d, "i"), &b), 0);
    CHECK_STR(buf_str(&b), "k:-42");
    buf_free(&b);
    jsondoc_free(d);
}

/* Numbers past 64 bits and past the double range are JSON: kept as text. */
static void
test_big_numbers(void)
{
    struct jsondoc *d = parse("{\"u64\":18446744073709551616,\"neg\":-18446744073709551617,"
                              "\"huge\":123456789012345678901234567890123456789,"
                              "\"over\":1e400,\"nover\":-1.5E+999,\"under\":1e-400,"
                              "\"nines\":9223372036854775808}");
    CHECK(d != NULL);
    CHECK_TEXT(d, "u64", 1, "18446744073709551616");
    CHECK_TEXT(d, "u64", 0, "18446744073709551616");
    CHECK_TEXT(d, "neg", 1, "-18446744073709551617");
    CHECK_TEXT(d, "huge", 1, "123456789012345678901234567890123456789");
    CHECK_TEXT(d, "nines", 1, "9223372036854775808"); /* one past int64 */
    CHECK_TEXT(d, "over", 1, "1e400");
    CHECK_TEXT(d, "nover", 1, "-1.5E+999");
    CHECK_TEXT(d, "under", 1, "0"); /* as it always was: strtod's underflow */
    CHECK_TEXT(d, "under", 0, "1e-400");
    jsondoc_free(d);

    /* A bare big integer is a body too. */
    d = parse(" 340282366920938463463374607431768211456 ");
    CHECK_TEXT(d, "", 1, "340282366920938463463374607431768211456");
    CHECK_RAW(d, "", "340282366920938463463374607431768211456");
    jsondoc_free(d);
}

/* "\u0000" is a character like any other inside a string. */
static void
test_nul_in_strings(void)
{
    struct jsondoc *d = parse("{\"a\":\"x\\u0000y\",\"n\\u0000m\":1,\"e\":\"\\u0000\"}");
    CHECK(d != NULL);
    const struct jsondoc_value *v = jsonpath_get(d, "a");
    CHECK(v != NULL && v->len == 3 && memcmp(v->str, "x\0y", 3) == 0);
    struct buf b = BUF_INIT;
    CHECK_INT(jsonpath_field_text(v, &b), 0);
    CHECK_INT(b.len, 3);
    CHECK(memcmp(b.data, "x\0y", 4) == 0);
    buf_free(&b);
    CHECK_RAW(d, "a", "\"x\\u0000y\"");
    CHECK(jsonpath_get(d, "n") == NULL); /* a path stops at the NUL: no such name */
    CHECK_INT(d->v[0].count, 3);
    jsondoc_free(d);
}

/* A value's original text: what a plugin forwards with field_json. */
static void
test_raw_text(void)
{
    struct jsondoc *d = parse("  {\"data\" : {\"price\":19.99, \"rate\":0.1,\"n\":[1.50,2E3,-0]},"
                              "\"s\":\"caf\\u00e9\\n\",\"t\":true,\"x\":null}\n");
    CHECK(d != NULL);
    CHECK_RAW(d, "data", "{\"price\":19.99, \"rate\":0.1,\"n\":[1.50,2E3,-0]}");
    CHECK_RAW(d, "data.price", "19.99");
    CHECK_RAW(d, "data.rate", "0.1");
    CHECK_RAW(d, "data.n", "[1.50,2E3,-0]");
    CHECK_RAW(d, "data.n.1", "2E3");
    CHECK_RAW(d, "s", "\"caf\\u00e9\\n\"");
    CHECK_RAW(d, "t", "true");
    CHECK_RAW(d, "x", "null");
    CHECK_RAW(d, "",
              "{\"data\" : {\"price\":19.99, \"rate\":0.1,\"n\":[1.50,2E3,-0]},"
              "\"s\":\"caf\\u00e9\\n\",\"t\":true,\"x\":null}");
    jsondoc_free(d);
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
    struct jsondoc *d = jsondoc_parse(body, len, err, sizeof(err));
    CHECK(d == NULL);
    CHECK_CONTAINS(err, want);
    CHECK(strncmp(err, "line ", 5) == 0);
    CHECK(printable(err)); /* nothing of the input comes back */
    jsondoc_free(d);
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
test_parse_refused(void)
{
    char err[256] = "";

    /* Exact form of the error: line and column first. */
    struct jsondoc *d = jsondoc_parse("{\"a\":1,}", 8, err, sizeof(err));
    CHECK(d == NULL);
    CHECK_STR(err, "line 1 column 9: parse error: invalid object key (must be a string)");
    d = jsondoc_parse("{\n  \"a\": tru\n}", 14, err, sizeof(err));
    CHECK(d == NULL);
    CHECK_CONTAINS(err, "line 2 column");

    check_refused("{\"a\":\"x\xff\"}", 9, "invalid bytes in UTF8 string");
    check_refused("{\"a\":\"\xc3\x28\"}", 10, "invalid bytes in UTF8 string");
    check_refused("{\"a\":\"\xc0\xaf\"}", 10, "not valid UTF-8");         /* overlong */
    check_refused("{\"a\":\"\xed\xa0\x80\"}", 11, "not valid UTF-8");     /* a surrogate */
    check_refused("{\"a\":\"\xf4\x90\x80\x80\"}", 12, "not valid UTF-8"); /* past U+10FFFF */
    check_refused("{\"a\":\"\\ud800\"}", 14, "half a surrogate pair");
    check_refused("{\"a\":\"\\ud800x\"}", 15, "half a surrogate pair");
    check_refused("{\"a\":\"\\ud800\\u0041\"}", 20, "half a surrogate pair");
    check_refused("{\"a\":\"\\ud800\\ud800\"}", 20, "half a surrogate pair");
    check_refused("{\"\\ud800\":1}", 12, "half a surrogate pair"); /* names too */
    check_refused("{\"a\":\"\\udc00\"}", 14, "lone surrogate");
    check_refused("{\"a\":\"x\0y\"}", 11, "invalid character inside string");
    check_refused("{\"a\":\"\x01\"}", 8, "invalid character inside string");
    check_refused("{\"a\":1}\0", 8, "trailing garbage");
    check_refused("{\"a\":1}{}", 9, "trailing garbage");
    check_refused("{\v\"a\":1}", 8, "\\v or \\f");
    check_refused("\f1", 2, "\\v or \\f");
    check_refused("/* c */ 1", 9, "comment");
    check_refused("[1 2]", 5, "parse error");
    check_refused("[1,]", 4, "parse error");
    check_refused("01", 2, "trailing garbage");
    check_refused("1.", 2, "malformed number");
    check_refused("-", 1, "malformed number");
    check_refused("NaN", 3, "invalid");
    check_refused("", 0, "premature EOF");
    check_refused(NULL, 0, "premature EOF");
    check_refused("[", 1, "premature EOF");
    check_refused("\x01\x02\x1b[31m", 7, "invalid char");
    check_refused("not json", 8, "invalid");

    /* Deep nesting fails cleanly at 2049 levels, objects or arrays. */
    char *deep = nested(10000, '[', ']');
    check_refused(deep, strlen(deep), "maximum parsing depth (2048)");
    free(deep);
    struct buf obj = BUF_INIT;
    for (size_t i = 0; i < 2049; i++) {
        buf_puts(&obj, "{\"a\":");
    }
    buf_puts(&obj, "1");
    for (size_t i = 0; i < 2049; i++) {
        buf_putc(&obj, '}');
    }
    check_refused(buf_str(&obj), obj.len, "maximum parsing depth");
    buf_free(&obj);
    deep = nested(2048, '[', ']');
    d = jsondoc_parse(deep, strlen(deep), err, sizeof(err));
    CHECK(d != NULL);
    jsondoc_free(d);
    free(deep);

    /* A tiny err buffer is truncated, never overrun. */
    char small[8];
    d = jsondoc_parse("nope", 4, small, sizeof(small));
    CHECK(d == NULL);
    CHECK_STR(small, "line 1 ");
}

static void
test_parse_accepted(void)
{
    char err[256] = "";
    /* A bare scalar is JSON (with no fields). */
    struct jsondoc *d = jsondoc_parse("42", 2, err, sizeof(err));
    CHECK(d != NULL && d->v[0].type == JSONDOC_NUMBER);
    CHECK(jsonpath_get(d, "a") == NULL);
    jsondoc_free(d);
    d = parse("\"\\ud83d\\ude00 \\u00e9 \\\\ud800 ?\"");
    CHECK_TEXT(d, "", 1, "\xf0\x9f\x98\x80 \xc3\xa9 \\ud800 ?");
    jsondoc_free(d);
    d = parse(" \t\r\n[] \n");
    CHECK(d != NULL && d->v[0].type == JSONDOC_ARRAY && d->v[0].count == 0);
    jsondoc_free(d);
}

int
main(void)
{
    test_get();
    test_repeated_names();
    test_scalar_text();
    test_big_numbers();
    test_nul_in_strings();
    test_raw_text();
    test_parse_refused();
    test_parse_accepted();
    return check_done("test-jsonpath");
}
