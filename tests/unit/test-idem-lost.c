/*
 * test-idem-lost.c - the tokens of claims whose answers were lost
 * (idem_lost.c): what a worker's later claims name so as to take the keys
 * back. Each noted token is listed and known until its lease (and a second)
 * has passed; when the list is full the token that ends first makes room; the
 * text of a full list of the longest tokens fits its buffer as a PostgreSQL
 * int[] literal; a worker without a list names none.
 */
#include "check.h"
#include "idem.h"
#include "idem_internal.h"

#include <stdio.h>
#include <time.h>

#define FULL 64 /* LOST_MAX */

int
main(void)
{
    char text[IDEM_LOST_TEXT];
    idem_lost_text(NULL, text);
    CHECK_STR(text, "{}");
    CHECK_INT(idem_lost_has(NULL, 7), 0);
    idem_lost_note(NULL, 7, 30); /* nothing to note in */

    struct idem_lost *l = idem_lost_new();
    CHECK(l != NULL);
    idem_lost_text(l, text);
    CHECK_STR(text, "{}");

    idem_lost_note(l, 123, 0); /* ends in a second */
    idem_lost_note(l, 45, 60);
    CHECK_INT(idem_lost_has(l, 123), 1);
    CHECK_INT(idem_lost_has(l, 45), 1);
    CHECK_INT(idem_lost_has(l, 46), 0);
    idem_lost_text(l, text);
    CHECK_STR(text, "{123,45}");

    struct timespec pause = {1, 200 * 1000000L};
    nanosleep(&pause, NULL);
    CHECK_INT(idem_lost_has(l, 123), 0);
    idem_lost_text(l, text);
    CHECK_STR(text, "{45}");
    idem_lost_free(l);

    /* Full of six-digit tokens: all listed, the text within its buffer. */
    l = idem_lost_new();
    for (int i = 0; i < FULL; i++) {
        idem_lost_note(l, 999999 - i, 100 + i);
    }
    idem_lost_text(l, text);
    CHECK_INT(strlen(text), 2 + FULL * 6 + (FULL - 1));
    CHECK(strncmp(text, "{999999,999998,", 15) == 0);
    /* One more: the token whose lease ends first (999999) makes room. */
    idem_lost_note(l, 5, 500);
    CHECK_INT(idem_lost_has(l, 999999), 0);
    CHECK_INT(idem_lost_has(l, 5), 1);
    for (int i = 1; i < FULL; i++) {
        CHECK_INT(idem_lost_has(l, 999999 - i), 1);
    }
    idem_lost_free(l);
    idem_lost_free(NULL);
    return check_done("test-idem-lost");
}
