/*
 * http.h - a thin libcurl wrapper shared by the SQS client, the credential
 * providers and alert webhooks: one request at a time per client, the
 * connection kept alive between requests. Not an AWS client: no signing, no
 * retries, no JSON; callers decide what a status means. Not for SMTP:
 * alert_sink.c sends mail with a curl handle of its own.
 */
#ifndef TWICE_HTTP_H
#define TWICE_HTTP_H

#include "buf.h"

#include <stddef.h>

struct flag;

/* One request. Everything is borrowed for the duration of http_perform. */
struct http_request {
    const char *method;         /* "GET", "POST", "PUT", "DELETE"... */
    const char *url;            /* http:// or https:// only */
    const char *const *headers; /* "Name: value" strings, or NULL */
    size_t nheaders;
    const void *body; /* sent as is; NULL with body_len 0 for none */
    size_t body_len;
    long timeout_ms;           /* whole transfer; 0: no limit */
    long connect_timeout_ms;   /* 0: curl's default (300 s) */
    const struct flag *cancel; /* abort once raised, until a response byte arrives */
    long cancel_grace_ms;      /* an answer already arriving when cancel is raised may
                                  take this long more (ms) before it is aborted too
                                  (a trickle); 0: it runs to timeout_ms */
    size_t max_response;       /* abort when the body grows past this; 0: no limit */
    int no_proxy;              /* 1: never use a proxy, whatever the environment says */
};

struct http_header {
    char *name;
    char *value; /* trimmed */
};

/* The response: http_response_init before use, http_response_free after. */
struct http_response {
    long status; /* HTTP status of the final response */
    struct buf body;
    struct http_header *headers; /* of the final response (not of a 100 Continue) */
    size_t nheaders;
    size_t cap_headers;
    struct buf header_text; /* "name\0value\0" per header: what headers point into */
};

/* A transport failure: no HTTP response arrived. */
struct http_error {
    char code[32];     /* "CouldNotConnect", "Timeout", "Cancelled", "TooLarge",
                          "ProxyAuthRequired" (the proxy of the environment answered
                          CONNECT with 407), ... */
    char message[256]; /* curl's message, with the URL's host where curl gave it */
    int transient;     /* a later retry may succeed (not for Cancelled, TooLarge, TLS) */
};

/* How a Cancelled error's message starts when the answer had begun to arrive
 * (cancel_grace_ms ran out): a receive's messages in it stay hidden. */
#define HTTP_CANCELLED_MID_ANSWER "cancelled while its answer was still arriving"

struct http_client;

/*
 * A client with its own curl handle (so: one per thread). ca_file (copied;
 * NULL for the system store) is the CA bundle for https; certificates and
 * host names are always verified. NULL when curl cannot be set up.
 */
struct http_client *http_client_new(const char *ca_file);
void http_client_free(struct http_client *c);

void http_response_init(struct http_response *r);
/* Forget a response's contents but keep it usable (body memory is kept). */
void http_response_reset(struct http_response *r);
void http_response_free(struct http_response *r);

/*
 * Perform req. Returns 0 when any HTTP response arrived, whatever its
 * status (resp then holds it), or -1 on a transport error with *err filled.
 * resp is reset first.
 */
int http_perform(struct http_client *c, const struct http_request *req, struct http_response *resp,
                 struct http_error *err);

/* The value of the response header name (any case), or NULL. Borrowed from r. */
const char *http_response_header(const struct http_response *r, const char *name);

/* How many new connections this client has opened so far: a test of
 * connection reuse, and a metric. */
long http_client_connects(const struct http_client *c);

#endif
