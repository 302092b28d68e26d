/*
 * rogue.c - fixture: a handler plugin that misbehaves on request, as a
 * careless or hostile team's plugin would. Key "rogue:{id}"; the body's
 * "do" says what handle() does before it returns DONE (or its own status):
 *   "exit0", "_exit3", "_exit0"   end the worker process mid-job
 *   "fork"                        fork() and return DONE in both processes
 *   "close012", "closeall"        close fds 0-2, or every fd above 2
 *   "signals"                     own SIGTERM, SIGCHLD and SIGPIPE handlers
 *   "blockall"                    block every signal on its thread
 *   "keep"                        a thread of its own reads the job, its key
 *                                 and body 300 ms after handle() returned
 *   "null"                        host functions with NULL arguments
 *   "huge"                        host functions with huge arguments
 *   "status"                      returns 7, not a twice_status
 *   "leak"                        keeps 8 MiB per job, touched
 * Setting `init`: "sleep" (init() takes 30 s), "block" (it never returns),
 * "block-if:PATH" (it never returns while PATH exists),
 * "locale" (setlocale de_DE and setenv TZ), or "" (nothing).
 * Used by: test_rogue.py.
 */
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <twice/plugin.h>

static const twice_api *api;

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    *state = NULL;
    const char *mode = a->setting(s, "init");
    if (mode != NULL && strcmp(mode, "sleep") == 0) {
        sleep_ms(30000);
    } else if (mode != NULL && strcmp(mode, "block") == 0) {
        for (;;) {
            pause();
        }
    } else if (mode != NULL && strncmp(mode, "block-if:", 9) == 0) {
        while (access(mode + 9, F_OK) == 0) {
            sleep_ms(100);
        }
    } else if (mode != NULL && strcmp(mode, "locale") == 0) {
        setlocale(LC_ALL, "de_DE.UTF-8");
        setenv("TZ", "Europe/Berlin", 1);
    }
    return 0;
}

static void
on_signal(int sig)
{
    (void) sig;
}

/* What a thread of the plugin's own does with a job it should not have kept. */
struct kept {
    const twice_job *job;
    const char *key, *body;
};

static void *
late_reader(void *arg)
{
    struct kept *k = arg;
    sleep_ms(300);
    api->log(k->job, TWICE_LOG_INFO, "late: key %s body %.20s attempt %d", api->key(k->job),
             api->body(k->job, NULL), api->attempt(k->job));
    api->log(NULL, TWICE_LOG_INFO, "late: kept key %.40s body %.20s", k->key, k->body);
    free(k);
    return NULL;
}

static void
keep_job(twice_job *job)
{
    struct kept *k = malloc(sizeof(*k));
    pthread_t t;
    if (k == NULL) {
        return;
    }
    *k = (struct kept){job, api->key(job), api->body(job, NULL)};
    if (pthread_create(&t, NULL, late_reader, k) == 0) {
        pthread_detach(t);
    } else {
        free(k);
    }
}

static void
null_args(twice_job *job)
{
    api->log(job, TWICE_LOG_INFO, NULL);
    api->attr(job, NULL, NULL);
    api->field(job, NULL, NULL);
    api->field_json(job, NULL, NULL);
    api->attr_name(job, SIZE_MAX);
    api->send(job, NULL, NULL, 0, 0, NULL, NULL);
    api->error(job, NULL);
}

static void
huge_args(twice_job *job)
{
    api->retry_after(job, UINT_MAX);
    api->downstream_unavailable(job, UINT_MAX);
    api->log(job, (twice_log_level) 1000, "level 1000");
    size_t n = 64u << 20;
    char *big = malloc(n + 1);
    if (big != NULL) {
        memset(big, 'x', n);
        big[n] = '\0';
        api->log(job, TWICE_LOG_INFO, "%s", big);
        api->error(job, "%s", big);
        api->send(job, "nowhere", big, SIZE_MAX, INT_MAX, big, NULL);
        free(big);
    }
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *what = api->field(job, "do", NULL);
    what = what != NULL ? what : "";
    if (strcmp(what, "exit0") == 0) {
        exit(0);
    } else if (strcmp(what, "_exit3") == 0) {
        _exit(3);
    } else if (strcmp(what, "_exit0") == 0) {
        _exit(0);
    } else if (strcmp(what, "fork") == 0) {
        fork();
    } else if (strcmp(what, "close012") == 0) {
        close(0);
        close(1);
        close(2);
    } else if (strcmp(what, "closeall") == 0) {
        for (int fd = 3; fd < 4096; fd++) {
            close(fd);
        }
    } else if (strcmp(what, "signals") == 0) {
        signal(SIGTERM, on_signal);
        signal(SIGCHLD, on_signal);
        signal(SIGPIPE, on_signal);
    } else if (strcmp(what, "blockall") == 0) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
    } else if (strcmp(what, "keep") == 0) {
        keep_job(job);
    } else if (strcmp(what, "null") == 0) {
        null_args(job);
    } else if (strcmp(what, "huge") == 0) {
        huge_args(job);
        return TWICE_RETRY;
    } else if (strcmp(what, "status") == 0) {
        return (twice_status) 7;
    } else if (strcmp(what, "leak") == 0) {
        size_t n = 8u << 20;
        char *p = malloc(n);
        if (p != NULL) {
            memset(p, 1, n);
        }
    }
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"init", TWICE_SETTING_STRING, 0, "", "what init() does wrong"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "rogue", .version = "1", .key_template = "rogue:{id}",
             .settings = settings, .init = init, .handle = handle)
