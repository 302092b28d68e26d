/*
 * pid1.h - twiced as a container's PID 1: the first process stays behind as
 * a minimal init that reaps orphans and passes signals to the master.
 */
#ifndef TWICE_PID1_H
#define TWICE_PID1_H

#include <stddef.h>

/*
 * When this process is PID 1, forks: the child returns 0 and goes on as the
 * master; this process stays as init (reaps every child that ends, passes
 * SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 and SIGWINCH to the
 * master) and exits with the master's status, never returning. Not PID 1:
 * returns 0 at once. -1 with err filled when the fork fails.
 */
int pid1_init_if_needed(char *err, size_t errlen);

#endif
