/*
 * signals.h - the signals a worker process acts on and who sent them: the
 * master asks a worker to stop (TERM: drain within drain_timeout) or to quit
 * (QUIT: finish every running job first); anyone else's signal is named in
 * the log, since stopping or reloading twiced is the master's business. USR1
 * reopens the log file (after logrotate moved it).
 */
#ifndef TWICE_SIGNALS_H
#define TWICE_SIGNALS_H

#include <signal.h>
#include <sys/types.h>

enum worker_ask {
    WORKER_IGNORE = 0, /* nothing (no signal, or a HUP) */
    WORKER_STOP,       /* TERM or INT: drain, give back what still runs at drain_timeout */
    WORKER_QUIT,       /* QUIT: drain without a deadline */
};

/* Wait for one of set (blocked in every thread) up to timeout_ms (-1: for
 * ever). Returns the signal with *si filled, or 0 when none came. */
int worker_signal_wait(const sigset_t *set, int timeout_ms, siginfo_t *si);

/*
 * What the signal in si asks of the worker in slot whose master is master.
 * A stop from anyone but the master is logged with the sender and recorded in
 * the shared process table (the master then starts another worker in its
 * place and says why); a HUP is logged and ignored. A USR1 reopens the log
 * file (log_reopen) and asks nothing more.
 */
enum worker_ask worker_signal_judge(const siginfo_t *si, int slot, pid_t master);

#endif
