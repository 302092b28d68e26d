/*
 * proctable.h - the master's table of its worker processes: one entry per
 * slot of the shared region, what the master knows of each (its generation,
 * whether it is ready, what it said it waits for), and the questions the
 * master asks of the table (how many are ready, why a generation is not).
 */
#ifndef TWICE_PROCTABLE_H
#define TWICE_PROCTABLE_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

struct jobnames;

struct proc {
    pid_t pid; /* 0: free */
    int gen;
    int index; /* its place in its generation */
    int ready;
    int ctl;       /* read end of its readiness pipe, -1 once ready */
    char *waiting; /* what it last said it waits for (malloc'd), NULL */
    int draining;  /* told to stop */
    time_t started;
    struct jobnames *names; /* its generation's names, held while it lives (jobnames.h) */
};

/* A slot free both here and in the shared region, or -1. */
int proc_free_slot(const struct proc *procs);

/* Signal every worker of generation gen (-1: all); mark them draining when
 * mark_draining. */
void proc_signal(struct proc *procs, int gen, int sig, int mark_draining);

/* Workers of generation gen (-1: all); with ready_only, the ready ones not draining. */
int proc_count(const struct proc *procs, int gen, int ready_only);

/*
 * Read what a starting worker wrote on its readiness pipe: "W<reason>\n"
 * lines while it waits for the store or a queue (kept in p->waiting), then
 * "R" once ready. The pipe is closed when it is ready or has gone.
 */
void proc_read_ready(struct proc *p);

/* Why generation gen (of nworkers) is not ready: what its workers wait for,
 * each reason once with the first worker that gave it, into out. */
void proc_not_ready_why(const struct proc *procs, int gen, int nworkers, char *out, size_t cap);

#endif
