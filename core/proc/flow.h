/*
 * flow.h - what the processes of one host share about the flow of each
 * queue, in the shared region (shm.h): whether it may be received from (the
 * master publishes the pause table of PostgreSQL here every ~2 s, so no
 * worker asks the database per batch), the circuit breaker's failure window
 * counted by every worker, a worker's request to open the breaker, and the
 * probe jobs after a cooldown. Not the pause table (idem/pause.c) nor the
 * breaker's decisions (worker/breaker.c).
 *
 * The state itself is struct flow_region in shm.h.
 * Without a mapped region (tools, unit tests) every queue flows.
 */
#ifndef TWICE_FLOW_H
#define TWICE_FLOW_H

#include <stdint.h>

/* A queue's state as the master last read it from PostgreSQL. */
enum flow_mode {
    FLOW_RUN = 0, /* receive */
    FLOW_PAUSED,  /* an operator paused it: no receives; running jobs finish */
    FLOW_OPEN,    /* its breaker is open: no receives, jobs not started go back */
    FLOW_PROBING  /* the breaker's cooldown is over: only probe jobs run */
};

/* The queue's current mode on this host, now (unix s): FLOW_OPEN while a
 * worker's trip is not yet published; FLOW_PAUSED before the master has read
 * the table once (nothing is received before the pause state is known). */
enum flow_mode flow_mode(const char *queue, int64_t now);
/* When an open breaker's cooldown ends (unix s), 0 when unknown. */
int64_t flow_open_until(const char *queue);

/* Count a transient failure at now in a window of `window` seconds; the
 * failures counted in the window, this one included. */
int flow_failure(const char *queue, int window, int64_t now);
/* Open the breaker on this host until now + cooldown and ask the master to
 * record it; 1 when this call opened it (0: already open). */
int flow_trip(const char *queue, int cooldown, int64_t now);

/* Probes: take one (1) or none left (0); give back one not used. */
int flow_probe_take(const char *queue);
void flow_probe_give_back(const char *queue);
/* The probe's outcome (worker). */
void flow_probe_done(const char *queue, int ok);

/* Master: publish a queue's mode (an open or probing breaker, opened here
 * or on another host, clears this host's failure window); take a worker's
 * trip request (its cooldown, 0 none) and probe outcome (0 none, 1 ok, 2
 * failed); grant probes; say the table has been read. */
void flow_publish(const char *queue, enum flow_mode mode, int64_t until);
int flow_take_trip(const char *queue);
int flow_take_probe_result(const char *queue);
void flow_grant_probes(const char *queue, int n);
void flow_set_loaded(void);

#endif
