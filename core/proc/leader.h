/*
 * leader.h - which worker runs the host's duties (duty/duties.h: the key
 * janitor, the store's health check, the pause watch, the DLQ monitor and
 * its alerts, the outbox relay), so that the master itself talks to neither
 * PostgreSQL nor SQS: one worker of the running generation, whichever takes
 * the place first, kept in the shared region (shm.h).
 *
 * The master says which generation runs (leader_set_generation: at the
 * start, and when a reload's generation takes over) and frees the place of
 * a worker that died holding it (leader_gone). A worker asks about once a
 * second (leader_poll) and, told to, starts the duties; when it is told to
 * stop them (its generation is no longer the running one) or stops itself,
 * it stops them first and then gives the place up (leader_release), so two
 * workers never run them at once. Without a mapped region nobody leads.
 */
#ifndef TWICE_LEADER_H
#define TWICE_LEADER_H

#include <sys/types.h>

/* Master: the generation whose workers may lead (0: none yet). */
void leader_set_generation(int gen);

/* Master: the worker pid exited; if it held the place, the place is free. */
void leader_gone(pid_t pid);

/* Worker self of generation gen: 1 when it is to run the duties (it held
 * the place, or took it now), 0 when not (when it held the place for an
 * older generation: stop the duties, then leader_release). */
int leader_poll(int gen, pid_t self);

/* Worker: its duties are stopped; give the place up if it holds it. */
void leader_release(pid_t self);

/* Who holds the place (0: nobody), for logs and tests. */
pid_t leader_holder(void);

#endif
