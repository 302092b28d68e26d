/*
 * rogue.c - fixture: a handler plugin that misbehaves against the process
 * it runs in, as a careless team's plugin would. Key "rogue:{id}"; the
 * body's "do" says what handle() does: "fork" (fork() and return DONE in
 * both processes), "fork-tz" (the same, while a thread of the plugin calls
 * tzset() in a loop: the time zone lock, which every localtime_r() and
 * gmtime_r() takes, is held in the copy for ever), "_exit0" (_exit(0) mid-job), "closefds" (close
 * every descriptor from 3 to 1024, as a daemonising library or a careless closefrom(3) would),
 * "keep" (keep the job and, from a thread of its own, call api->field() and api->log() on it 200
 * ms after handle() returned); anything else returns DONE. Setting `init`: "block-if:PATH" makes
 * init() wait for as long as PATH exists (a server it waits for that never comes). Used by:
 * test_rogue.py.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <twice/plugin.h>

static const twice_api *api;

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    *state = NULL;
    const char *mode = a->setting(s, "init");
    if (mode != NULL && strncmp(mode, "block-if:", 9) == 0) {
        while (access(mode + 9, F_OK) == 0) {
            struct timespec tick = {0, 100 * 1000000L};
            nanosleep(&tick, NULL);
        }
    }
    return 0;
}

/* "fork-tz": what holds the time zone lock while handle() forks. */
static atomic_int tz_stop;

static void *
tz_spin(void *arg)
{
    (void) arg;
    while (!atomic_load(&tz_stop)) {
        tzset();
    }
    return NULL;
}

/* fork() while tz_spin runs: the lock is held at the fork nearly always. */
static void
fork_in_tzset(void)
{
    pthread_t t;
    atomic_store(&tz_stop, 0);
    if (pthread_create(&t, NULL, tz_spin, NULL) != 0) {
        return;
    }
    struct timespec spin = {0, 5 * 1000000L};
    nanosleep(&spin, NULL);
    if (fork() != 0) { /* the copy has no tz_spin thread to stop */
        atomic_store(&tz_stop, 1);
        pthread_join(t, NULL);
    }
}

/* "keep": the job handle used after handle() returned, from another thread. */
static void *
use_kept_job(void *arg)
{
    twice_job *job = arg;
    struct timespec later = {0, 200 * 1000000L};
    nanosleep(&later, NULL);
    const char *id = api->field(job, "id", NULL);
    api->log(job, TWICE_LOG_INFO, "kept job's id: %s", id != NULL ? id : "(refused)");
    return NULL;
}

static twice_status
handle(void *state, twice_job *job)
{
    (void) state;
    const char *what = api->field(job, "do", NULL);
    if (what != NULL && strcmp(what, "fork") == 0) {
        fork(); /* and no exec or _exit in the child */
    } else if (what != NULL && strcmp(what, "fork-tz") == 0) {
        fork_in_tzset();
    } else if (what != NULL && strcmp(what, "_exit0") == 0) {
        _exit(0);
    } else if (what != NULL && strcmp(what, "keep") == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, use_kept_job, job) == 0) {
            pthread_detach(t);
        }
    } else if (what != NULL && strcmp(what, "closefds") == 0) {
        for (int fd = 3; fd <= 1024; fd++) {
            close(fd);
        }
    }
    return TWICE_DONE;
}

static const twice_setting settings[] = {
    {"init", TWICE_SETTING_STRING, 0, "", "what init() does wrong"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "rogue", .version = "1", .key_template = "rogue:{id}", .settings = settings,
             .init = init, .handle = handle)
