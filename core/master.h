/*
 * master.h - the supervising process of twiced (see master.c).
 */
#ifndef TWICE_MASTER_H
#define TWICE_MASTER_H

/* Run until stopped; returns the exit code (0 after a clean drain). */
int master_run(const char *config_path);

/* `twiced -t`: check the configuration and, in a child, every plugin;
 * print each problem as FILE:LINE: message; 0 when there are none. */
int master_check(const char *config_path);

#endif
