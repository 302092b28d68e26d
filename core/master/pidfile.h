/*
 * pidfile.h - the master's pid file (pid_file, twiced -p) and `twiced -s`:
 * the nginx way of finding and signalling the master of an instance. The
 * master holds an open-file-description lock on the file for its whole
 * life, so a second twiced refuses a file in use and `twiced -s` tells a
 * live master from a stale file without trusting the pid alone.
 */
#ifndef TWICE_PIDFILE_H
#define TWICE_PIDFILE_H

#include <stddef.h>
#include <sys/types.h>

struct pidfile;

/*
 * Create or open path and lock it for this process and its children after a
 * fork (twiced -d locks before it detaches, so a refusal reaches the
 * terminal). -1 with err when another live twiced holds it ("twiced is
 * already running as pid 123 (pid file /run/twice/twiced.pid)") or it cannot
 * be written. 0 and *out otherwise.
 */
int pidfile_acquire(const char *path, struct pidfile **out, char *err, size_t errlen);

/*
 * twiced -t: -1 with err (as pidfile_acquire would say it) when path is one
 * the start certainly refuses: a directory (or a name ending in /), a
 * symbolic link (never followed), a path through a file. 0 otherwise, also
 * when it does not exist yet (systemd makes its directory at the start).
 * Creates, opens and locks nothing.
 */
int pidfile_check(const char *path, char *err, size_t errlen);

/* Write the calling process's pid into it. 0, or -1 with err. */
int pidfile_write(struct pidfile *p, char *err, size_t errlen);

/* Remove the file and let go of it (NULL: nothing). At the master's exit. */
void pidfile_release(struct pidfile *p);

/* path as an absolute path, a relative one taken from the working directory
 * now (twiced -p FILE, before twiced enters the configuration's directory).
 * malloc'd; NULL with errno when out of memory or the working directory
 * cannot be read. */
char *pidfile_absolute(const char *path);

/* The pid_file setting of the configuration at config_path as a path to
 * use: a relative one is taken from the configuration file's directory, as
 * plugin_dir is. malloc'd; NULL when out of memory. */
char *pidfile_configured(const char *config_path, const char *setting);

/* The pid of the live twiced holding path, or -1 with err (no such file; a
 * stale file nobody holds; not a pid). */
pid_t pidfile_read_live(const char *path, char *err, size_t errlen);

/*
 * `twiced -s NAME`: reload (SIGHUP), stop (SIGTERM: drain, give back what is
 * still running at drain_timeout, exit), quit (SIGQUIT: let every running
 * job finish, however long it takes, then exit) or reopen (SIGUSR1: open
 * log.file again after a rotation), sent to the master holding
 * pid_path, or (NULL) the pid_file that configuration config_path sets.
 * Returns the exit code (0 sent, 1 not, 2 unknown NAME) and prints why not
 * on stderr.
 */
int pidfile_signal(const char *config_path, const char *pid_path, const char *name);

#endif
