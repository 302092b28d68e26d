/*
 * pool.c - the pool of libcurl easy handles of the HTTP plugins: taken per
 * request, given back with their connections kept alive (http_common.h
 * says why a pool). Not the requests themselves.
 */
#include "http_common.h"

#include <stdlib.h>

int
http_pool_init(struct http_pool *p)
{
    p->idle = NULL;
    return pthread_mutex_init(&p->lock, NULL) == 0 ? 0 : -1;
}

void
http_pool_free(struct http_pool *p)
{
    while (p->idle != NULL) {
        struct http_handle *h = p->idle;
        p->idle = h->next;
        curl_easy_cleanup(h->curl);
        free(h);
    }
    pthread_mutex_destroy(&p->lock);
}

struct http_handle *
http_pool_take(struct http_pool *p)
{
    pthread_mutex_lock(&p->lock);
    struct http_handle *h = p->idle;
    if (h != NULL) {
        p->idle = h->next;
    }
    pthread_mutex_unlock(&p->lock);
    if (h != NULL) {
        return h;
    }
    if ((h = malloc(sizeof(*h))) == NULL) {
        return NULL;
    }
    if ((h->curl = curl_easy_init()) == NULL) {
        free(h);
        return NULL;
    }
    return h;
}

/* curl_easy_reset() puts every option back to its default (so the next
 * job starts as on a new handle) but keeps the open connections, the DNS
 * cache and the TLS sessions. */
void
http_pool_give(struct http_pool *p, struct http_handle *h)
{
    curl_easy_reset(h->curl);
    pthread_mutex_lock(&p->lock);
    h->next = p->idle;
    p->idle = h;
    pthread_mutex_unlock(&p->lock);
}
