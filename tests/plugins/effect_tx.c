/*
 * effect_tx.c - fixture: a transactional plugin whose effect is one row in
 * a table (setting `table`, default "effects"), written through the
 * host's connection inside the transaction that completes the key; setting
 * `init_sleep_ms` makes init (so a probe and a worker's start) that slow. The
 * body steers it: {"id":"k1", "sleep_ms":0, "fail_until":0, "reject":false,
 * "crash":false, "crash_until":0, "fail_midway":false, "fail_sleep_ms":0,
 * "retry_after":0, "reject_from":0, "crash_from":0}: attempts before
 * fail_until RETRY, after sleeping fail_sleep_ms and asking for retry_after
 * seconds when given; attempts from reject_from on REJECT, from crash_from
 * on crash (when given); crash_until crashes the worker while the attempt
 * is below it. "bad_sql": "syntax" runs a statement with a syntax error
 * (42601), "raise" calls the function effect_rule() the test created (its
 * RAISE: P0001), then answers DONE as a plugin that ignores the failure
 * would; "sql_reject": true answers REJECT when its insert fails (else
 * RETRY). Integration tests count rows per key: exactly one per distinct
 * key proves exactly-once.
 * Used by: test_alerts.py, test_attempts.py, test_breaker.py, test_claims.py, test_creds.py,
 * test_ctl.py, test_fifo.py, test_guard.py, test_hostile.py, test_limits.py, test_lifecycle.py,
 * test_metrics.py, test_operator.py, test_outbox.py, test_pause.py, test_pgbouncer.py,
 * test_plugin_perms.py, test_ready.py, test_reload.py, test_reload_load.py, test_secrets.py,
 * test_serial_chaos.py, test_serial_faults.py, test_sqs_faults.py, test_tls.py.
 */
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <twice/plugin.h>

#ifndef EFFECT_VERSION
#define EFFECT_VERSION "1"
#endif

static const twice_api *api;
static char table[64] = "effects";

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    const char *t = a->setting(s, "table");
    if (t != NULL) {
        snprintf(table, sizeof(table), "%s", t);
    }
    const char *ms = a->setting(s, "init_sleep_ms");
    long sleep_ms = ms != NULL ? atol(ms) : 0;
    if (sleep_ms > 0) {
        struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    *state = NULL;
    return 0;
}

static int
flag(const twice_job *job, const char *name)
{
    const char *v = api->field(job, name, NULL);
    return v != NULL && strcmp(v, "true") == 0;
}

static long
number(const twice_job *job, const char *name)
{
    const char *v = api->field(job, name, NULL);
    return v != NULL ? atol(v) : 0;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    long ms = number(job, "sleep_ms");
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    long crash_from = number(job, "crash_from");
    if (flag(job, "crash") || (crash_from > 0 && api->attempt(job) >= crash_from) ||
        api->attempt(job) < number(job, "crash_until")) {
        raise(SIGSEGV);
    }
    long reject_from = number(job, "reject_from");
    if (flag(job, "reject") || (reject_from > 0 && api->attempt(job) >= reject_from)) {
        api->error(job, "rejected on request of the message");
        return TWICE_REJECT;
    }
    if (api->attempt(job) < number(job, "fail_until")) {
        long fail_ms = number(job, "fail_sleep_ms");
        struct timespec ts = {fail_ms / 1000, (fail_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        if (number(job, "retry_after") > 0) {
            api->retry_after(job, (unsigned) number(job, "retry_after"));
        }
        api->error(job, "failing until attempt %ld", number(job, "fail_until"));
        return TWICE_RETRY;
    }
    const char *bad = api->field(job, "bad_sql", NULL);
    if (bad != NULL) {
        PQclear(
            PQexec(api->db(job), strcmp(bad, "raise") == 0 ? "SELECT effect_rule()" : "SELEC 1"));
        return TWICE_DONE; /* the failure ignored: the host must still tell */
    }
    char sql[256], attempt[16];
    snprintf(sql, sizeof(sql),
             "INSERT INTO %s (key, message_id, version, attempt) VALUES ($1, $2, $3, $4)", table);
    snprintf(attempt, sizeof(attempt), "%d", api->attempt(job));
    const char *params[4] = {api->key(job), api->message_id(job), EFFECT_VERSION, attempt};
    PGresult *r = PQexecParams(api->db(job), sql, 4, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) {
        api->error(job, "insert: %s", PQerrorMessage(api->db(job)));
    }
    PQclear(r);
    if (ok && flag(job, "fail_midway")) {
        api->error(job, "failing after the insert (must be rolled back)");
        return TWICE_RETRY;
    }
    return ok ? TWICE_DONE : flag(job, "sql_reject") ? TWICE_REJECT : TWICE_RETRY;
}

static const twice_setting settings[] = {
    {"table", TWICE_SETTING_STRING, 0, "effects", "table the effect rows go to"},
    {"init_sleep_ms", TWICE_SETTING_INT, 0, "0", "milliseconds init sleeps"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.flags = TWICE_FLAG_TRANSACTIONAL, .name = "effect-tx", .version = EFFECT_VERSION,
             .key_template = "effect:{id}", .settings = settings, .init = init, .handle = handle)
