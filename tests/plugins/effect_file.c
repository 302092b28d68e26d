/*
 * effect_file.c - fixture: a non-transactional plugin whose effect is one
 * line "key message_id attempt" appended to a file (setting `file`), as an
 * outside effect such as an email would be. Body as for effect_tx, plus
 * "exit": true (exit(3) inside handle()) and "leak_kb": N (N KiB allocated,
 * written and never freed by each run, as a leaking library would).
 * Used by: test_attempts.py, test_basic.py, test_breaker.py, test_config.py, test_guard.py,
 * test_lifecycle.py, test_limits.py, test_operator.py, test_reload.py, test_shapes.py,
 * test_sqs_faults.py, test_tracing.py.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <twice/plugin.h>

static const twice_api *api;
static char path[512];
static void *leaked; /* leak_kb blocks, chained */

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    snprintf(path, sizeof(path), "%s", a->setting(s, "file"));
    *state = NULL;
    return 0;
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
    const char *crash = api->field(job, "crash", NULL);
    if (crash != NULL && strcmp(crash, "true") == 0) {
        raise(SIGSEGV);
    }
    const char *quit = api->field(job, "exit", NULL);
    if (quit != NULL && strcmp(quit, "true") == 0) {
        exit(3); /* a library that gives up on the whole process */
    }
    long leak = number(job, "leak_kb");
    if (leak > 0) {
        char *lost = malloc((size_t) leak * 1024);
        if (lost != NULL) {
            memset(lost, 1, (size_t) leak * 1024); /* resident, not just reserved */
            *(void **) lost = leaked;              /* kept, so no compiler drops it */
            leaked = lost;
        }
    }
    const char *reject = api->field(job, "reject", NULL);
    if (reject != NULL && strcmp(reject, "true") == 0) {
        api->error(job, "rejected on request of the message");
        return TWICE_REJECT;
    }
    if (api->attempt(job) < number(job, "fail_until")) {
        api->error(job, "failing until attempt %ld", number(job, "fail_until"));
        return TWICE_RETRY;
    }
    char line[1024];
    int n = snprintf(line, sizeof(line), "%s %s %d\n", api->key(job), api->message_id(job),
                     api->attempt(job));
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, (size_t) n) != n) {
        api->error(job, "cannot append to %s", path);
        if (fd >= 0) {
            close(fd);
        }
        return TWICE_RETRY;
    }
    close(fd);
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"file", TWICE_SETTING_STRING, 1, NULL, "file the effect lines are appended to"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "effect-file", .version = "1", .key_template = "effect:{id}",
             .settings = settings, .init = init, .handle = handle)
