/*
 * noop.c - the benchmark's handler: it does nothing but count its calls, so
 * that a run measures the host (receive, claim, complete, delete) and can
 * prove that no key ran twice. Not a plugin to deploy, and not a test fixture.
 *
 * Each worker process counts in an atomic and, at fini, appends one line
 * "PID COUNT" to the file of the `count_file` setting (O_APPEND: workers do
 * not interleave). The benchmark adds the lines up and compares the sum with
 * the number of distinct keys.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <twice/plugin.h>

/* One instance per worker process: plugin state is this file's, not the
 * host's; init copies the setting, fini writes and frees it. */
struct noop {
    atomic_ulong calls;
    char *count_file;
};

static const twice_api *api;

static int
noop_init(const twice_api *a, const twice_settings *s, void **state)
{
    api = a;
    struct noop *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        a->log(NULL, TWICE_LOG_ERROR, "out of memory");
        return 1;
    }
    atomic_init(&n->calls, 0);
    n->count_file = strdup(a->setting(s, "count_file"));
    if (n->count_file == NULL) {
        a->log(NULL, TWICE_LOG_ERROR, "out of memory");
        free(n);
        return 1;
    }
    *state = n;
    return 0;
}

/* The whole cost of a job: one relaxed atomic increment. */
static twice_status
noop_handle(void *state, twice_job *job)
{
    struct noop *n = state;
    (void) job;
    atomic_fetch_add_explicit(&n->calls, 1, memory_order_relaxed);
    return TWICE_DONE;
}

/* Append "PID COUNT\n" in one write(2); a failure is logged, and the
 * benchmark then finds a line missing and fails the run. */
static void
noop_fini(void *state)
{
    struct noop *n = state;
    char line[64];
    int len = snprintf(line, sizeof(line), "%ld %lu\n", (long) getpid(),
                       atomic_load_explicit(&n->calls, memory_order_relaxed));
    int fd = open(n->count_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, line, (size_t) len) != len) {
        api->log(NULL, TWICE_LOG_ERROR, "cannot append the call count to %s", n->count_file);
    }
    if (fd >= 0) {
        close(fd);
    }
    free(n->count_file);
    free(n);
}

static const twice_setting noop_settings[] = {
    {"count_file", TWICE_SETTING_STRING, 1, NULL,
     "file each worker appends \"PID CALLS\" to when it stops"},
    {NULL, 0, 0, NULL, NULL},
};

TWICE_PLUGIN(.name = "noop", .version = "1", .key_template = "noop:{id}",
             .settings = noop_settings, .init = noop_init, .handle = noop_handle,
             .fini = noop_fini)
