/*
 * test-utf8.c - cutting text between characters (utf8.h): utf8_cut, which
 * every place that cuts text for a line or a record uses (log lines, a
 * job's error, a span's fields), and utf8_mark_cut, which marks the cut.
 */
#include "check.h"
#include "utf8.h"

#include <string.h>

/* A cut before a continuation byte backs up to the character's start; at
 * an ASCII byte or a character's first byte it stays. */
static void
test_cut(void)
{
    const char *s = "ab\xc3\xa9"
                    "c\xe2\x82\xac"; /* a b é c € */
    CHECK_INT(utf8_cut(s, 0), 0);
    CHECK_INT(utf8_cut(s, 2), 2); /* s[2] starts é */
    CHECK_INT(utf8_cut(s, 3), 2); /* s[3] continues é */
    CHECK_INT(utf8_cut(s, 4), 4); /* 'c' */
    CHECK_INT(utf8_cut(s, 6), 5); /* inside € */
    CHECK_INT(utf8_cut(s, 7), 5);
    CHECK_INT(utf8_cut(s, 8), 8);          /* the NUL: all of it */
    CHECK_INT(utf8_cut("\x80\x80", 1), 0); /* only continuation bytes: nothing */
}

/* text into s (cap bytes) as snprintf("%s") would, its answer returned
 * (without snprintf: GCC sees the truncation, which is the point here). */
static int
put(char *s, size_t cap, const char *text)
{
    size_t n = strlen(text), k = n < cap ? n : cap - 1;
    memcpy(s, text, k);
    s[k] = '\0';
    return (int) n;
}

/* A formatted text that did not fit is cut between characters and ends
 * "..."; one that fit is left alone. */
static void
test_mark_cut(void)
{
    char s[8];
    int n = put(s, sizeof(s), "abc");
    utf8_mark_cut(s, sizeof(s), n);
    CHECK_STR(s, "abc");
    n = put(s, sizeof(s), "abcdefghij");
    utf8_mark_cut(s, sizeof(s), n);
    CHECK_STR(s, "abcd...");
    n = put(s, sizeof(s),
            "abc\xe2\x82\xac"
            "def"); /* € at bytes 3-5 */
    utf8_mark_cut(s, sizeof(s), n);
    CHECK_STR(s, "abc...");
}

int
main(void)
{
    test_cut();
    test_mark_cut();
    return check_done("test-utf8");
}
