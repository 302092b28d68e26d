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

#include "backoff.h"
#include "clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Tokens kept at most: each is a claim that lost its answer twice (or could
 * not reconnect after one) within a lease; past this the oldest makes room,
 * its keys left to their leases as before. */
#define LOST_MAX 64

/* A claim's token is a number of microseconds it takes off its processed_at
 * (idem.c, CLAIMED_AT): 1 to TOKEN_MAX. */
#define TOKEN_MAX 999999

struct idem_lost {
    pthread_mutex_t mu;
    int token[LOST_MAX];
    int64_t until_ms[LOST_MAX]; /* CLOCK_MONOTONIC: its keys' leases have ended; 0: free */
    int last;                   /* the token drawn last (idem_lost_token) */
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

/* Whether token is live in l at now; the caller holds l->mu. */
static int
has_locked(const struct idem_lost *l, int token, int64_t now)
{
    for (size_t i = 0; i < LOST_MAX; i++) {
        if (l->until_ms[i] > now && l->token[i] == token) {
            return 1;
        }
    }
    return 0;
}

/*
 * The worker's claims draw their tokens in turn, so that two that run at
 * once (two receivers) never share one: a claim naming a lost token takes
 * back only the keys of the claim that lost it, never a key another claim
 * of the worker holds for a job still running. A token comes round again
 * after TOKEN_MAX claims, long after any claim of the same turn has been
 * answered. Without a list (a store outside a worker): a random token.
 */
int
idem_lost_token(struct idem_lost *l)
{
    if (l == NULL) {
        return (int) (backoff_random() % TOKEN_MAX) + 1;
    }
    pthread_mutex_lock(&l->mu);
    int64_t now = clock_mono_ms();
    do { /* at most LOST_MAX are live: this ends */
        l->last = l->last % TOKEN_MAX + 1;
    } while (has_locked(l, l->last, now));
    int token = l->last;
    pthread_mutex_unlock(&l->mu);
    return token;
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
