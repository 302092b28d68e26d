/*
 * probe.h - checking a configuration's plugins in a child process: what
 * `twiced -t` and a reload run before anything changes.
 */
#ifndef TWICE_PROBE_H
#define TWICE_PROBE_H

#include <stddef.h>

struct diag;

/* The child (twiced --probe): prints one line per problem; exit code. */
int probe_main(int argc, char **argv);

/* The parent: check the plugins of configuration `text` (read from path) in
 * a child, loading each from plugin_fds[i] (loader_file_open; -1: skipped,
 * its problem is known already); its problem lines, a crash or a hang
 * (timeout seconds) are added to d. 0 when there were none, else -1. */
int probe_run(const char *path, const char *text, size_t len, const int *plugin_fds, size_t nfds,
              int timeout, struct diag *d);

#endif
