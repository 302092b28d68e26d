/*
 * pausewatch.h - the master's watch over queue pauses: a thread that reads
 * the pause table (idem/pause.h) every PAUSEWATCH_READ_MS and publishes each
 * configured queue's state to the workers through shared memory (proc/
 * flow.h), so that no worker asks PostgreSQL per batch. It also carries the
 * workers' breaker trips and probe outcomes to the table, claims the probe
 * after a cooldown (one host wins it), sets twice_queue_paused, and sends
 * the "paused" and "resumed" alerts (one host each, through the DLQ
 * monitor's sinks). Not the breaker's counting: worker/breaker.c.
 */
#ifndef TWICE_PAUSEWATCH_H
#define TWICE_PAUSEWATCH_H

struct config;
struct dlqmon;
struct pausewatch;

#define PAUSEWATCH_READ_MS 2000 /* how often the table is read */
#define PAUSEWATCH_TICK_MS 200  /* how often workers' requests are looked at */

/* Start watching c's queues (copied) with alerts going through alerts (may
 * be NULL; it must outlive the watch). Call after shm_create. NULL when it
 * cannot start (logged): workers then receive nothing, as the pause state is
 * unknown. */
struct pausewatch *pausewatch_start(const struct config *c, struct dlqmon *alerts);

/* Stop promptly and free; NULL is a no-op. */
void pausewatch_stop(struct pausewatch *p);
/* Tell it to stop, without waiting (pausewatch_stop waits): relay_ask_stop
 * says why. Its alerts may still post until it is joined. */
void pausewatch_ask_stop(struct pausewatch *p);

#endif
