/*
 * sync.h - what the sync plugin's files share: the request (sync.c) and
 * what the endpoint's answer means (verdict.c). The connection pool, the
 * reading of answers and the URL template are http-common's. Internal to
 * the plugin (hidden visibility); not an SDK header.
 */
#ifndef SYNC_H
#define SYNC_H

#include "http_common.h"

#include <twice/plugin.h>

/* Bytes of a response body quoted in the error text. */
#define SYNC_ERROR_BODY 512

/* DONE for 2xx and 409, RETRY for 408/429/5xx (honouring Retry-After) and
 * anything unexpected, REJECT for other 4xx; the error says "HTTP <status>:
 * <body>". */
twice_status sync_verdict(const twice_api *api, twice_job *job, long status,
                          const struct http_answer *a);

#endif
