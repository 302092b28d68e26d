/*
 * test_receiver.h - a plugin test's side of scripts/http-receiver.py (started
 * with test_server.h): script its answers for a path prefix, read back the
 * requests it recorded there, their headers and the TCP connections they
 * came on, and that a plugin keeps its connections alive. Header-only test
 * helper, libcurl and jansson; not part of any plugin. CHECKs come from
 * check.h, included first.
 * Used by: plugins/sync/tests/test-sync.c, plugins/http/tests/test-http.c.
 */
#ifndef PLUGIN_TEST_RECEIVER_H
#define PLUGIN_TEST_RECEIVER_H

#include "test_plugin.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* The receiver's base URL, "http://127.0.0.1:PORT"; set by the test. */
static char receiver_base[64];

static inline size_t
receiver_collect(char *buf, size_t size, size_t n, void *arg)
{
    return fwrite(buf, size, n, (FILE *) arg);
}

/* GET (body NULL) or POST body to the receiver; the answer, malloc'd. */
static inline char *
receiver_call(const char *path, const char *body)
{
    char url[256], *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    snprintf(url, sizeof(url), "%s%s", receiver_base, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, receiver_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    if (body != NULL) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    }
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    fclose(f);
    return out;
}

/* The requests recorded under a prefix (a JSON array, owned). */
static inline json_t *
receiver_requests(const char *prefix)
{
    char path[128];
    snprintf(path, sizeof(path), "/_requests/%s", prefix);
    char *text = receiver_call(path, NULL);
    json_t *list = json_loads(text != NULL ? text : "", 0, NULL);
    free(text);
    return list != NULL ? list : json_array();
}

/* A field of request i ("method", "path", "body"...), or "(missing)". */
static inline const char *
req_str(json_t *list, size_t i, const char *field)
{
    const char *v = json_string_value(json_object_get(json_array_get(list, i), field));
    return v != NULL ? v : "(missing)";
}

/* A header of request i by its lower-case name, or "(missing)". */
static inline const char *
req_header(json_t *list, size_t i, const char *name)
{
    json_t *h = json_object_get(json_array_get(list, i), "headers");
    const char *v = json_string_value(json_object_get(h, name));
    return v != NULL ? v : "(missing)";
}

/* Script the answers under prefix (the receiver's JSON script). */
static inline void
receiver_script(const char *prefix, const char *spec)
{
    char path[128];
    snprintf(path, sizeof(path), "/_control/%s", prefix);
    free(receiver_call(path, spec));
}

/* How many TCP connections the requests under prefix came on; the
 * number of requests in *nrequests. */
static inline size_t
receiver_connections(const char *prefix, size_t *nrequests)
{
    json_t *r = receiver_requests(prefix), *seen = json_object();
    char conn[32];
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_int_t n = json_integer_value(json_object_get(json_array_get(r, i), "conn"));
        snprintf(conn, sizeof(conn), "%lld", (long long) n);
        json_object_set_new(seen, conn, json_true());
    }
    size_t count = json_object_size(seen);
    *nrequests = json_array_size(r);
    json_decref(seen);
    json_decref(r);
    return count;
}

/*
 * Kept-alive connections, not one per job: 5 jobs one after another (body
 * writes each, given the prefix "conn1") come on one connection; 5 jobs on
 * each of 4 threads at once ("connN") on at most 4. name labels the
 * figures printed.
 */
static inline void
receiver_check_reuse(twice_mock *m, plugin_body_fn body, const char *name)
{
    size_t nreq, nconn;
    CHECK_INT(plugin_run_threads(m, 1, 5, body, "conn1"), 0);
    nconn = receiver_connections("conn1", &nreq);
    fprintf(stderr, "%s: %zu jobs from one thread: %zu connection(s)\n", name, nreq, nconn);
    CHECK_INT(nreq, 5);
    CHECK_INT(nconn, 1);
    CHECK_INT(plugin_run_threads(m, 4, 5, body, "connN"), 0);
    nconn = receiver_connections("connN", &nreq);
    fprintf(stderr, "%s: %zu jobs from 4 threads: %zu connection(s)\n", name, nreq, nconn);
    CHECK_INT(nreq, 20);
    CHECK(nconn >= 1 && nconn <= 4);
}

#endif
