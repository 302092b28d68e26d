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

/* Run until stopped; returns the exit code (0 after a clean drain). */
int master_run(const char *config_path, const struct master_opts *o);

/* `twiced -t`: check the configuration and, in a child, every plugin;
 * with connect (--connect) also whether PostgreSQL and every queue and
 * dead-letter queue answer. Print each problem as FILE:LINE: message; 0 when
 * there are none. */
int master_check(const char *config_path, int connect);

#endif
