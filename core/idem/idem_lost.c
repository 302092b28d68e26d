/*
 * idem_lost.c - the tokens of a worker's claims whose answers were lost
 * (idem.h, idem_lost_new): a claim statement that may have committed, sent
 * again and lost again, leaves its keys in progress under this worker with
 * no job running them. Its messages are given back; the worker's next claim
 * of them names these tokens, so that it takes the keys back at once instead
 * of waiting for their leases (sql_claim, OWN_ROW).
 */
#include "idem.h"
#include "idem_internal.h"

#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Tokens kept at most: each is a claim that lost its answer twice (or could
 * not reconnect after one) within a lease; past this the oldest makes room,
 * its keys left to their leases as before. */
#define LOST_MAX 64

struct idem_lost {
    pthread_mutex_t mu;
    int token[LOST_MAX];
    int64_t until_ms[LOST_MAX]; /* CLOCK_MONOTONIC: its keys' leases have ended; 0: free */
};

struct idem_lost *
idem_lost_new(void)
{
    struct idem_lost *l = calloc(1, sizeof(*l));
    if (l != NULL && pthread_mutex_init(&l->mu, NULL) != 0) {
        free(l);
        return NULL;
    }
    return l;
}

void
idem_lost_free(struct idem_lost *l)
{
    if (l == NULL) {
        return;
    }
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void
idem_lost_note(struct idem_lost *l, int token, int lease_s)
{
    if (l == NULL) {
        return;
    }
    int64_t now = clock_mono_ms();
    pthread_mutex_lock(&l->mu);
    size_t at = 0; /* a free or expired entry, else the one that ends first */
    for (size_t i = 0; i < LOST_MAX; i++) {
        if (l->until_ms[i] <= now) {
            at = i;
            break;
        }
        if (l->until_ms[i] < l->until_ms[at]) {
            at = i;
        }
    }
    l->token[at] = token;
    l->until_ms[at] = now + (int64_t) lease_s * 1000 + 1000;
    pthread_mutex_unlock(&l->mu);
}

int
idem_lost_has(struct idem_lost *l, int token)
{
    if (l == NULL) {
        return 0;
    }
    int64_t now = clock_mono_ms();
    int has = 0;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < LOST_MAX && !has; i++) {
        has = l->until_ms[i] > now && l->token[i] == token;
    }
    pthread_mutex_unlock(&l->mu);
    return has;
}

void
idem_lost_text(struct idem_lost *l, char out[IDEM_LOST_TEXT])
{
    size_t len = 0;
    out[len++] = '{';
    if (l != NULL) {
        int64_t now = clock_mono_ms();
        pthread_mutex_lock(&l->mu);
        for (size_t i = 0; i < LOST_MAX; i++) {
            if (l->until_ms[i] > now) {
                len += (size_t) snprintf(out + len, IDEM_LOST_TEXT - len, "%s%d",
                                         len > 1 ? "," : "", l->token[i]);
            }
        }
        pthread_mutex_unlock(&l->mu);
    }
    out[len++] = '}';
    out[len] = '\0';
}

void
idem_share_lost(struct idem_store *s, struct idem_lost *l)
{
    s->lost = l;
}
