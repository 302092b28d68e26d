/*
 * spawn.h - starting a child of the master: fork, then in the child only
 * async-signal-safe calls (clear close-on-exec on the fds it is given,
 * drop privileges, reset the signal mask) and exec of twiced-worker, the
 * executable of workers and probes, with the child's command line. twiced
 * itself links neither libcurl, libpq nor OpenSSL; twiced-worker does.
 */
#ifndef TWICE_SPAWN_H
#define TWICE_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct childargs;

/* Who workers run as; uid -1: do not change. Resolved before any fork. */
struct spawn_user {
    uid_t uid;
    gid_t gid;
    char name[64];
};

/* Look a user up (getpwnam). 0, or -1 with err. */
int spawn_resolve_user(const char *name, struct spawn_user *out, char *err, size_t errlen);

/* The children's executable: next to twiced's own file (a build tree), or
 * in the directory the packages install it to. */
#define SPAWN_WORKER_NAME "twiced-worker"

/* Open the children's executable and keep it (once; later calls return 0):
 * from the directory of twiced's own file, else from installed (may be
 * NULL). Call before the master changes directory, since the path twiced
 * was run by may be relative. 0, or -1 with err (not there, not a regular
 * executable file, or writable by group or others). */
int spawn_open_worker(const char *installed, char *err, size_t errlen);

/*
 * Start a child (spawn_open_worker first). stdout_fd (or -1) becomes its standard
 * output. user may be NULL. Returns the pid, or -1 with err.
 */
pid_t spawn_child(const struct childargs *a, int stdout_fd, const struct spawn_user *user,
                  char *err, size_t errlen);

#endif
