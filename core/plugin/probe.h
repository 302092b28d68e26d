/*
 * probe.h - checking a configuration's plugins in a child process, and then
 * the store or SQS as the caller asks: what `twiced -t`, the start and a
 * reload run before anything changes.
 */
#ifndef TWICE_PROBE_H
#define TWICE_PROBE_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

struct config;
struct diag;

/* The child's exit code when every plugin passed and the check of the
 * store or SQS refused (1: a plugin's problem, or the configuration's). */
#define PROBE_EXIT_REFUSED 3

/* Progress line before the check of the store or SQS: what the child says
 * after it is the check's (probe_child.c writes it, probe.c reads it, as
 * its "#plugin NAME LINE FILE" lines). */
#define PROBE_CHECK_LINE "#check"

/*
 * A check of the store or SQS that the child runs once every plugin passed
 * (duty/oneshot.h: the start's, a reload's, `twiced -t --connect`'s), so
 * that the master runs no PostgreSQL or SQS code for it. Its problems are
 * kept apart from the plugins': the caller decides what they mean (a store
 * problem at the start is retried, not a configuration error).
 */
enum probe_check_result {
    PROBE_CHECK_NOT_RUN = 0, /* not asked, or a plugin (or the configuration) had a problem */
    PROBE_CHECK_PASSED,
    PROBE_CHECK_REFUSED, /* its problems (or that it crashed or hung) in d */
    PROBE_CHECK_CUT      /* a stop signal came while it ran */
};

struct probe_check {
    int fd;         /* the request (a memfd the child reads; the caller's), -1: no check */
    int timeout;    /* seconds it may take (oneshot_timeout) */
    struct diag *d; /* its problems */
    enum probe_check_result result;
};

/* In the child: run the check the request req (len bytes) asks for on c,
 * print one line per problem to out; 1 when it refuses (oneshot_child). */
typedef int (*probe_check_fn)(const struct config *c, const char *req, size_t len, FILE *out);

/* The child (twiced --probe): prints one line per problem; exit code.
 * check runs a requested check of the store or SQS (NULL: none can be). */
int probe_main(int argc, char **argv, probe_check_fn check);

/* The parent: check the plugins of configuration `text` (read from path) in
 * a child, loading each from plugin_fds[i] (loader_file_open; -1: skipped,
 * its problem is known already); its problem lines, a crash or a hang
 * (timeout seconds for one plugin's check; said at half that, 10 s at
 * most, while it runs) are added to d. 0 when there were none, else -1.
 * stop_on (NULL: none): signals the caller keeps blocked; once one of them
 * is pending the check is cut short (the child killed and reaped; what it
 * said until then stays in d) and 1 is returned, the signal still pending
 * for the caller: a stop while twiced starts does not wait for a slow
 * plugin's init. check (NULL: none): when every plugin passed and every
 * file could be opened, the child runs it, given check->timeout (said at
 * no plugin when slow); check->result says how it went (a stop while it
 * ran: PROBE_CHECK_CUT and 1), its problems in check->d, not in d. */
int probe_run(const char *path, const char *text, size_t len, const int *plugin_fds, size_t nfds,
              int timeout, struct probe_check *check, const sigset_t *stop_on, struct diag *d);

#endif
