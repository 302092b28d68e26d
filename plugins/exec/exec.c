/*
 * exec.c - the exec plugin: hand each job to a long-lived handler program
 * written in any language (`python3 handler.py`), one line of JSON each way
 * over its stdin and stdout, and turn its answer into DONE, RETRY or
 * REJECT. A handler that dies, overruns the time limit or answers garbage
 * is killed, restarted after a growing delay, and the job retried. Settings,
 * init/fini, describe() and handle() are here; the protocol is
 * protocol.c's, the processes pool.c's and proc.c's. twice-exec(7) is the
 * handler author's documentation.
 */
#include "exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <twice/plugin.h>

/* Read-only after init but the pool (its own lock). All owned. */
struct exec_plugin {
    const twice_api *api;
    struct exec_cmd cmd;
    struct exec_limit limit; /* seconds a job may take; more for a new process */
    struct exec_pool pool;
};

/* The integer settings, checked (INT settings with defaults: never NULL).
 * 0, or -1 with r. */
static int
read_numbers(const twice_api *api, const twice_settings *set, struct exec_limit *limit,
             int *processes, struct setting_refusal *r)
{
    long t = strtol(api->setting(set, "timeout"), NULL, 10);
    long s = strtol(api->setting(set, "start_timeout"), NULL, 10);
    long n = strtol(api->setting(set, "processes"), NULL, 10);
    if (t < 1 || t > 86400) {
        return setting_refuse(r, "timeout", "must be 1-86400 seconds");
    }
    if (s < 0 || s > 3600) {
        return setting_refuse(r, "start_timeout", "must be 0-3600 seconds");
    }
    if (n < 0 || n > 1024) {
        return setting_refuse(r, "processes", "must be 0 (one per running job) to 1024");
    }
    limit->timeout = (int) t;
    limit->start = (int) s;
    *processes = (int) n;
    return 0;
}

static int
exec_init(const twice_api *api, const twice_settings *set, void **state)
{
    struct exec_plugin *x = calloc(1, sizeof(*x));
    struct setting_refusal r = {NULL, "out of memory"};
    char err[512];
    int processes = 0, rc = -1;
    if (x != NULL) {
        x->api = api;
        rc = read_numbers(api, set, &x->limit, &processes, &r);
    }
    if (rc == 0) {
        rc = exec_cmd_parse(&x->cmd, api->setting(set, "command"), api->setting(set, "env"),
                            api->setting(set, "pass_env"), api->setting(set, "directory"), &r);
    }
    if (rc == 0 && exec_pool_start(&x->pool, api, &x->cmd, processes, err, sizeof(err)) != 0) {
        exec_cmd_free(&x->cmd);
        rc = setting_refuse(&r, NULL, "%s", err);
    }
    if (rc != 0) {
        setting_refusal_report(api, set, &r); /* at the blamed setting's line */
        free(x);
        return -1;
    }
    *state = x;
    return 0;
}

static void
exec_fini(void *state)
{
    struct exec_plugin *x = state;
    exec_pool_stop(&x->pool); /* every process ended and reaped */
    exec_cmd_free(&x->cmd);
    free(x);
}

/* The handler's answer as the job's fate. */
static twice_status
verdict(const struct exec_plugin *x, twice_job *job, const struct exec_answer *a)
{
    if (a->error[0] != '\0') {
        x->api->error(job, "%s", a->error);
    } else if (a->status != TWICE_DONE) {
        x->api->error(job, "the handler answered %s",
                      a->status == TWICE_RETRY ? "retry" : "reject");
    }
    if (a->status == TWICE_RETRY && a->retry_after >= 0) {
        x->api->retry_after(job, (unsigned) a->retry_after);
    }
    return a->status;
}

static twice_status
exec_handle(void *state, twice_job *job)
{
    struct exec_plugin *x = state;
    char why[1024];
    size_t len = 0;
    const char *bad = NULL;
    char *req = exec_request(x->api, job, &len, &bad);
    if (req == NULL) {
        x->api->error(job, "%s", bad);
        return strcmp(bad, "out of memory") == 0 ? TWICE_RETRY : TWICE_REJECT;
    }
    struct exec_answer a;
    int rc = -2;
    /* A job that never reached its process (out of step, or ended without
     * reading it) is not the job's fault: one more, on another. A process
     * that had done jobs may have been caught between its answer and its
     * exit (a handler that exits after each job: every idle one may be
     * such); a new one that ends unread cannot start, and gets one more. */
    for (int tries = 0, fresh = 0; rc == -2 && fresh < 2 && tries < 8; tries++) {
        struct exec_slot *slot = exec_pool_take(&x->pool, why, sizeof(why));
        if (slot == NULL) {
            rc = -1;
            break;
        }
        fresh += exec_slot_proc(slot)->answered == 0;
        rc = exec_exchange(x->api, job, exec_slot_proc(slot), req, len, x->limit, &a, why,
                           sizeof(why));
        exec_pool_give(&x->pool, slot, rc != 0);
    }
    free(req);
    if (rc != 0) {
        x->api->error(job, "%s", why);
        return TWICE_RETRY;
    }
    return verdict(x, job, &a);
}

/* For `twicectl plugin check`: what runs and how answers map. The command,
 * its environment and directory are checked as init checks them (the
 * program found, its #! interpreter), without starting it. */
static int
exec_describe(const twice_api *api, const twice_settings *set, char *buf, size_t cap)
{
    struct exec_limit limit;
    struct exec_cmd cmd;
    struct setting_refusal r = {NULL, "out of memory"};
    int processes;
    if (read_numbers(api, set, &limit, &processes, &r) != 0 ||
        exec_cmd_parse(&cmd, api->setting(set, "command"), api->setting(set, "env"),
                       api->setting(set, "pass_env"), api->setting(set, "directory"), &r) != 0) {
        setting_refusal_text(&r, buf, cap); /* "setting 'timeout': must be ..." */
        return -1;
    }
    char procs[64];
    snprintf(procs, sizeof(procs),
             processes > 0 ? "at most %d processes" : "one process per running job", processes);
    snprintf(buf, cap,
             "run %.200s (no shell; the program: %.200s), %s, each kept for many jobs\n"
             "per job one JSON line to its stdin: key, body, message_id, attempt, queue, "
             "attributes\n"
             "its answer line {\"status\":\"done\"}: DONE (echo \"message_id\" to name the "
             "job answered: a stray line of another job is never taken for it)\n"
             "{\"status\":\"retry\",\"error\":...,\"retry_after\":N}: RETRY (after N s when "
             "given)\n"
             "{\"status\":\"reject\",\"error\":...}: REJECT, dead letter with the error\n"
             "no answer within %d s (%d s more for a new process's first job), death, "
             "garbage: RETRY, the process restarted with backoff\n"
             "its stderr: the log, line by line, with the job's context",
             api->setting(set, "command"), cmd.program, procs, limit.timeout, limit.start);
    exec_cmd_free(&cmd);
    return 0;
}

static const twice_setting exec_settings[] = {
    {"command", TWICE_SETTING_STRING, 1, NULL,
     "the handler program and its arguments: words (\"python3 -u /srv/handler.py\") or a JSON "
     "array of strings; no shell"},
    {"key", TWICE_SETTING_STRING, 0, NULL,
     "key template, e.g. invoice:{invoiceId}; needed unless every queue using the plugin "
     "sets key"},
    {"directory", TWICE_SETTING_STRING, 0, NULL,
     "its working directory (default: the configuration file's, where twiced works)"},
    {"env", TWICE_SETTING_STRING, 0, NULL,
     "its environment: NAME=value words, or a JSON object of strings"},
    {"pass_env", TWICE_SETTING_STRING, 0, "PATH LANG LC_ALL TZ",
     "names of twiced's environment variables it also gets (nothing else is inherited)"},
    {"timeout", TWICE_SETTING_INT, 0, "60",
     "seconds a job may take before the handler is killed and the job retried (1-86400)"},
    {"start_timeout", TWICE_SETTING_INT, 0, "30",
     "seconds more a new handler process may take to answer its first job: its start "
     "(interpreter, imports) is not the job's (0-3600)"},
    {"processes", TWICE_SETTING_INT, 0, "0",
     "most handler processes at once; 0: one per running job (the queues' concurrency)"},
    {NULL, TWICE_SETTING_STRING, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "exec", .version = "1.1.0", .key_setting = "key", .settings = exec_settings,
             .init = exec_init, .handle = exec_handle, .fini = exec_fini,
             .describe = exec_describe)
