/*
 * master.h - the supervising process of twiced (see master.c).
 */
#ifndef TWICE_MASTER_H
#define TWICE_MASTER_H

struct master_opts {
    /* Detach from the terminal (NULL: stay in the foreground): called once
     * the configuration and its plugins are known to be good and the pid file
     * is taken, before anything starts, so that `twiced -d` reports those
     * problems on the terminal it was started from. 0, or -1 to give up. */
    int (*detach)(void);
    /* Called once with how the start ended (NULL: not needed): ok 1 when the
     * first generation is ready, 0 and why when twiced gives up. `twiced -d`
     * exits its foreground process with it. */
    void (*started)(int ok, const char *why);
    /* twiced -p: the pid file, overriding pid_file; NULL: the configuration's. */
    const char *pid_file;
};

/*
 * A start refused for what `twiced -t` reports (the configuration, a plugin,
 * log.file, user, a pid_file that is a directory or a symbolic link, the AWS
 * settings of the environment) exits with this status, sysexits.h's
 * EX_CONFIG: starting again meets the same problem, so
 * twice.service does not restart it (RestartPreventExitStatus=78). What may
 * pass by itself exits 1 and is retried: the store or a queue not ready
 * within ready_timeout, a standby or read-only store, the pid file held by a
 * running twiced, a resource the system lacked.
 */
#define MASTER_EXIT_CONFIG 78

/* Run until stopped; returns the exit code (0 after a clean drain, 1 after
 * a failure, MASTER_EXIT_CONFIG when the configuration refused the start). */
int master_run(const char *config_path, const struct master_opts *o);

/* `twiced -t`: check the configuration and, in a child, every plugin;
 * with connect (--connect) also whether PostgreSQL and every queue and
 * dead-letter queue answer. Print each problem as FILE:LINE: message; 0 when
 * there are none. */
int master_check(const char *config_path, int connect);

#endif
