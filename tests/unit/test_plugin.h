/*
 * test_plugin.h - what the bundled plugins' unit tests share around the SDK
 * mock host: the plugin file under test opened (the test stops when it
 * cannot be), an init that must fail with a given reason or refuse a given
 * setting's value (api->setting_error), one job run, and jobs run from
 * several threads at once as the host runs them. Header-only
 * test helper; CHECKs come from check.h, included first. Not part of any
 * plugin.
 * Used by: plugins/sync/tests/test-sync.c, plugins/http/tests/test-http.c,
 * plugins/exec/tests/test-exec.c.
 */
#ifndef PLUGIN_TEST_PLUGIN_H
#define PLUGIN_TEST_PLUGIN_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/mock.h>

/* A mock host for the plugin file at path; exits the test when refused. */
static inline twice_mock *
plugin_open(const char *path)
{
    char err[512];
    twice_mock *m = twice_mock_open(path, err, sizeof(err));
    if (m == NULL) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return m;
}

/* init must fail, its first log line (or the mock's reason) containing
 * want; m is freed. */
static inline void
expect_init_failure(twice_mock *m, const char *want)
{
    CHECK(twice_mock_init(m) != 0);
    const char *line = twice_mock_log_text(m, 0, NULL);
    CHECK_CONTAINS(line != NULL ? line : twice_mock_error(m), want);
    twice_mock_free(m);
}

/* init must refuse the value of setting name with api->setting_error (the
 * host says it at the line of twice.conf that sets name), its reason
 * starting with want; m is freed. */
static inline void
expect_setting_error(twice_mock *m, const char *name, const char *want)
{
    char head[256], got[256];
    CHECK(twice_mock_init(m) != 0);
    const char *err = twice_mock_error(m), *at = strstr(err, ": setting '");
    snprintf(head, sizeof(head), "setting '%s': %s", name, want);
    snprintf(got, sizeof(got), "%.*s", (int) strlen(head), at != NULL ? at + 2 : err);
    CHECK_STR(got, head);
    twice_mock_free(m);
}

/* Run a new job with body; the job (the caller frees it) in *out. */
static inline twice_status
plugin_run(twice_mock *m, const char *body, twice_mock_job **out)
{
    *out = twice_mock_job_new(m, body);
    return twice_mock_run(*out);
}

/* Writes the body of job i of thread t into buf (cap bytes). */
typedef void (*plugin_body_fn)(char *buf, size_t cap, const void *ctx, int t, int i);

struct plugin_thread {
    twice_mock *m;
    plugin_body_fn body;
    const void *ctx;
    int t, each, failures;
};

static inline void *
plugin_thread_run(void *arg)
{
    struct plugin_thread *pt = arg;
    char body[512];
    for (int i = 0; i < pt->each; i++) {
        twice_mock_job *j;
        pt->body(body, sizeof(body), pt->ctx, pt->t, i);
        pt->failures += plugin_run(pt->m, body, &j) != TWICE_DONE;
        twice_mock_job_free(j);
    }
    return NULL;
}

/* `each` jobs one after another on each of `threads` threads at once (at
 * most 16); the number that did not end DONE. */
static inline int
plugin_run_threads(twice_mock *m, int threads, int each, plugin_body_fn body, const void *ctx)
{
    pthread_t t[16];
    struct plugin_thread pt[16];
    int failures = 0;
    threads = threads > 16 ? 16 : threads;
    for (int i = 0; i < threads; i++) {
        pt[i] = (struct plugin_thread){m, body, ctx, i, each, 0};
        CHECK_INT(pthread_create(&t[i], NULL, plugin_thread_run, &pt[i]), 0);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        failures += pt[i].failures;
    }
    return failures;
}

#endif
