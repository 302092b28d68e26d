/*
 * probe.h - checking a configuration's plugins in a child process: what
 * `twiced -t` and a reload run before anything changes.
 */
#ifndef TWICE_PROBE_H
#define TWICE_PROBE_H

#include <signal.h>
#include <stddef.h>

struct diag;

/* The child (twiced --probe): prints one line per problem; exit code. */
int probe_main(int argc, char **argv);

/* The parent: check the plugins of configuration `text` (read from path) in
 * a child, loading each from plugin_fds[i] (loader_file_open; -1: skipped,
 * its problem is known already); its problem lines, a crash or a hang
 * (timeout seconds for one plugin's check; said at half that, 10 s at
 * most, while it runs) are added to d. 0 when there were none, else -1.
 * stop_on (NULL: none): signals the caller keeps blocked; once one of them
 * is pending the check is cut short (the child killed and reaped; what it
 * said until then stays in d) and 1 is returned, the signal still pending
 * for the caller: a stop while twiced starts does not wait for a slow
 * plugin's init. */
int probe_run(const char *path, const char *text, size_t len, const int *plugin_fds, size_t nfds,
              int timeout, const sigset_t *stop_on, struct diag *d);

#endif
