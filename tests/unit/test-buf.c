/*
 * test-buf.c - the growable buffer's appends: printf output that fits the
 * free space, that needs the buffer to grow (formatted a second time), and
 * that ends exactly at its edge; buf_cat's lists; the NUL after every append;
 * integers in decimal without printf, as printf writes them.
 */
#include "check.h"

#include "buf.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* printf of every length around the first chunk (64 bytes) and its doubling,
 * appended after a prefix: the same text as snprintf makes. */
static void
test_printf_lengths(void)
{
    char pad[300], want[400];

    memset(pad, 'x', sizeof(pad) - 1);
    pad[sizeof(pad) - 1] = '\0';
    for (int prefix = 0; prefix < 3; prefix++) {
        for (int n = 0; n < 260; n++) {
            struct buf b = BUF_INIT;
            for (int i = 0; i < prefix; i++) {
                buf_puts(&b, "ab");
            }
            CHECK_INT(buf_printf(&b, "%.*s|%d", n, pad, n), 0);
            snprintf(want, sizeof(want), "%.*s%.*s|%d", 2 * prefix, "ababab", n, pad, n);
            CHECK_STR(buf_str(&b), want);
            CHECK_INT((int) b.len, (int) strlen(want));
            CHECK(b.len < b.cap);
            buf_free(&b);
        }
    }
}

static void
test_cat(void)
{
    struct buf b = BUF_INIT;
    char big[200];

    CHECK_INT(buf_cat(&b, NULL), 0);
    CHECK_STR(buf_str(&b), "");
    CHECK_INT(buf_cat(&b, "Host: ", "h:1", "", "/x", NULL), 0);
    CHECK_STR(buf_str(&b), "Host: h:1/x");
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_INT(buf_cat(&b, big, "!", NULL), 0);
    CHECK_INT((int) b.len, 11 + 199 + 1);
    CHECK(b.data[b.len - 1] == '!' && b.data[b.len] == '\0');
    buf_free(&b);
}

/* buf_int_text and buf_put_int against snprintf's "%lld": small numbers,
 * powers of ten around them, and both ends of the range. */
static void
test_ints(void)
{
    long long vals[] = {0,         1,         -1,           9,          10,         -10,
                        99,        100,       12345,        -987654321, 2147483647, -2147483648LL,
                        LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        char want[32], got[BUF_INT_MAX];
        int n = snprintf(want, sizeof(want), "%lld", vals[i]);
        CHECK_INT((long long) buf_int_text(got, vals[i]), n);
        CHECK_STR(got, want);
    }
    for (long long v = -1100; v <= 1100; v++) {
        char want[32], got[BUF_INT_MAX];
        snprintf(want, sizeof(want), "%lld", v);
        buf_int_text(got, v);
        CHECK_STR(got, want);
    }
    struct buf b = BUF_INIT;
    buf_puts(&b, "{");
    buf_put_int(&b, -3);
    buf_puts(&b, ",");
    buf_put_int(&b, LLONG_MAX);
    buf_puts(&b, "}");
    CHECK_STR(buf_str(&b), "{-3,9223372036854775807}");
    buf_free(&b);
}

int
main(void)
{
    test_printf_lengths();
    test_cat();
    test_ints();
    return check_done("test-buf");
}
