/*
 * test-idem-lost.c - the tokens of claims whose answers were lost
 * (idem_lost.c): what a worker's later claims name so as to take the keys
 * back. Each noted token is listed and known until its lease (and a second)
 * has passed; when the list is full the token that ends first makes room; the
 * text of a full list of the longest tokens fits its buffer as a PostgreSQL
 * int[] literal; a worker without a list names none. A worker's claims draw
 * their tokens in turn: two drawn at once (two receivers) are never the same,
 * a live lost token is never drawn, and the turn comes round after 999999.
 */
#include "check.h"
#include "idem.h"
#include "idem_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define FULL  64 /* LOST_MAX */
#define DRAWS 20000

/* Whether token is listed among l's live ones (the text later claims send). */
static int
listed(struct idem_lost *l, int token)
{
    char text[IDEM_LOST_TEXT], want[16];
    idem_lost_text(l, text);
    text[0] = ',';
    text[strlen(text) - 1] = ',';
    snprintf(want, sizeof(want), ",%d,", token);
    return strstr(text, want) != NULL;
}

struct drawer {
    struct idem_lost *l;
    int got[DRAWS];
};

static void *
draw(void *arg)
{
    struct drawer *d = arg;
    for (int i = 0; i < DRAWS; i++) {
        d->got[i] = idem_lost_token(d->l);
    }
    return NULL;
}

/* Two receivers' claims drawing at once: no token twice. */
static void
check_concurrent_draws(void)
{
    struct idem_lost *l = idem_lost_new();
    static struct drawer d[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        d[i].l = l;
        CHECK_INT(pthread_create(&th[i], NULL, draw, &d[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
    }
    static unsigned char seen[2 * DRAWS + 1];
    int twice = 0;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < DRAWS; j++) {
            int t = d[i].got[j];
            CHECK(t >= 1 && t <= 2 * DRAWS);
            twice += seen[t]++ != 0;
        }
    }
    CHECK_INT(twice, 0);
    idem_lost_free(l);
}

/* In turn, past the live lost tokens, round again after 999999. */
static void
check_turn(void)
{
    struct idem_lost *l = idem_lost_new();
    CHECK_INT(idem_lost_token(l), 1);
    CHECK_INT(idem_lost_token(l), 2);
    idem_lost_note(l, 3, 600);
    idem_lost_note(l, 4, 600);
    CHECK_INT(idem_lost_token(l), 5);
    int t = 0;
    for (int i = 6; i <= 999999; i++) {
        t = idem_lost_token(l);
    }
    CHECK_INT(t, 999999);
    CHECK_INT(idem_lost_token(l), 1);
    CHECK_INT(idem_lost_token(l), 2);
    CHECK_INT(idem_lost_token(l), 5); /* 3 and 4 are still lost */
    idem_lost_free(l);

    int in_range = 1; /* a store outside a worker: random, in range */
    for (int i = 0; i < 1000; i++) {
        t = idem_lost_token(NULL);
        in_range &= t >= 1 && t <= 999999;
    }
    CHECK_INT(in_range, 1);
}

int
main(void)
{
    char text[IDEM_LOST_TEXT];
    idem_lost_text(NULL, text);
    CHECK_STR(text, "{}");
    CHECK_INT(listed(NULL, 7), 0);
    idem_lost_note(NULL, 7, 30); /* nothing to note in */

    struct idem_lost *l = idem_lost_new();
    CHECK(l != NULL);
    idem_lost_text(l, text);
    CHECK_STR(text, "{}");

    idem_lost_note(l, 123, 0); /* ends in a second */
    idem_lost_note(l, 45, 60);
    CHECK_INT(listed(l, 123), 1);
    CHECK_INT(listed(l, 45), 1);
    CHECK_INT(listed(l, 46), 0);
    idem_lost_text(l, text);
    CHECK_STR(text, "{123,45}");

    struct timespec pause = {1, 200 * 1000000L};
    nanosleep(&pause, NULL);
    CHECK_INT(listed(l, 123), 0);
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
    CHECK_INT(listed(l, 999999), 0);
    CHECK_INT(listed(l, 5), 1);
    for (int i = 1; i < FULL; i++) {
        CHECK_INT(listed(l, 999999 - i), 1);
    }
    idem_lost_free(l);
    idem_lost_free(NULL);

    check_turn();
    check_concurrent_draws();
    return check_done("test-idem-lost");
}
