/*
 * master.h - the supervising process of twiced (see master.c).
 */
#ifndef TWICE_MASTER_H
#define TWICE_MASTER_H

/* Run until stopped; returns the exit code (0 after a clean drain).
 * detach (may be NULL: stay in the foreground) runs once the configuration
 * is known to be good and before anything starts, so that `twiced -d`
 * reports a bad configuration on the terminal it was started from. */
int master_run(const char *config_path, int (*detach)(void));

/* `twiced -t`: check the configuration and, in a child, every plugin;
 * print each problem as FILE:LINE: message; 0 when there are none. */
int master_check(const char *config_path);

#endif
