/*
 * exec.h - what the exec plugin's files share. The plugin runs long-lived
 * handler programs (any language) and speaks one line of JSON each way per
 * job over their stdin and stdout (protocol.c); their stderr goes to the
 * log line by line (lines.c). command.c turns the settings into argv and
 * an environment, proc.c starts, kills and reaps one process, pool.c keeps
 * the processes and the supervisor thread that owns them between jobs,
 * exchange.c runs one job on one process, exec.c is the plugin. Internal
 * (hidden visibility); not an SDK header.
 */
#ifndef TWICE_EXEC_H
#define TWICE_EXEC_H

#include "settings_common.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <twice/plugin.h>

/* Bytes of a stderr line logged; the rest is cut and counted. Under the
 * host's 4096-byte log line, so the line with twiced's time and the job's
 * fields (a key of up to 512 bytes) still carries the count of what was
 * cut: at 4096 twiced cut the count off and said less than was dropped. */
#define EXEC_LINE_MAX     3072
#define EXEC_ANSWER_MAX   (64 * 1024) /* bytes of an answer line */
#define EXEC_SHOWN        120         /* bytes of a bad answer quoted in an error */
#define EXEC_END_GRACE_MS 1000        /* its stdout closed: how long it has to end */

/* ---- command.c: what to run ---- */

struct exec_cmd {
    char **argv;   /* owned, NULL-terminated; argv[0] as written */
    char *program; /* owned: argv[0] resolved (absolute, or relative to dir) */
    char **envp;   /* owned, NULL-terminated: pass_env's values and env */
    char *dir;     /* owned working directory, or NULL: twiced's */
};

/* From the settings command (words, or a JSON array of strings), env
 * (NAME=value words, or a JSON object), pass_env (names) and directory.
 * 0, or -1 with r (blaming the setting, or none when out of memory). */
int exec_cmd_parse(struct exec_cmd *c, const char *command, const char *env, const char *pass_env,
                   const char *dir, struct setting_refusal *r);
void exec_cmd_free(struct exec_cmd *c);

/* ---- lines.c: a stream of bytes into lines ---- */

struct exec_lines {
    char buf[EXEC_LINE_MAX + 1];
    size_t len;
    size_t cut; /* bytes of the current line dropped past EXEC_LINE_MAX */
};

/* Called with each complete line (NUL-terminated, without its newline;
 * control bytes made '?') and how many of its bytes were cut. */
typedef void (*exec_line_fn)(void *ctx, const char *line, size_t cut);

/* Feed n bytes; complete lines go to fn. flush: the end of the stream, a
 * partial line goes out too. */
void exec_lines_feed(struct exec_lines *l, const char *data, size_t n, exec_line_fn fn, void *ctx);
void exec_lines_flush(struct exec_lines *l, exec_line_fn fn, void *ctx);

/* ---- protocol.c: one line each way ---- */

/* The request line of a job, with its newline; malloc'd, or NULL with why
 * (the body is not UTF-8, out of memory). */
char *exec_request(const twice_api *api, const twice_job *job, size_t *len, const char **why);

struct exec_answer {
    twice_status status;
    char error[1024];     /* "" when none */
    long retry_after;     /* seconds, -1 when not given */
    int echoed;           /* it named the job it answers: message_id */
    char message_id[256]; /* echoed: that message id */
};

/* Parse an answer line (without its newline). 0, or -1 with why
 * ("answered ...: 'the line'", for the caller to put after "handler PID"):
 * not UTF-8, not JSON, not an object, no valid status, a member of the
 * wrong type (a message_id too: a string of at most 255 bytes). */
int exec_parse_answer(const char *line, size_t len, struct exec_answer *a, char *why, size_t cap);

/* Whether a can be the answer to the request of message message_id: it
 * echoed that id, or none (a handler that does not echo is trusted). */
int exec_answer_for(const struct exec_answer *a, const char *message_id);

/* Up to EXEC_SHOWN bytes of s, printable ASCII kept, the rest '?', "..."
 * when cut; into out (cap bytes, NUL included; a cap of 0 leaves it
 * untouched). */
void exec_shown(const char *s, size_t len, char *out, size_t cap);

/* ---- proc.c: one process ---- */

struct exec_proc {
    pid_t pid;               /* 0: no process */
    int io;                  /* our end of its stdin/stdout socket, -1 */
    int err;                 /* the read end of its stderr pipe, -1 */
    int pidfd;               /* readable once it has ended; -1 (a kernel without pidfds) */
    int guard;               /* the write end of its guard's pipe (EOF: kill the group); -1 */
    pid_t guard_pid;         /* the guard, in the handler's group; 0: none */
    struct exec_lines lines; /* its stderr, being split */
    unsigned long answered;  /* jobs it answered; 0: a new process, still starting */
};

/* Start c's program with stdin and stdout a socket to us and stderr a
 * pipe, in its own process group, killed if the calling thread ends
 * (PR_SET_PDEATHSIG: call it from the thread that outlives every job),
 * and with a guard in that group that kills the whole group (the helpers
 * the program started too) when the worker dies. 0, or -1 with err (exec
 * errors included: "cannot run /x: Permission denied"). */
int exec_proc_start(struct exec_proc *p, const struct exec_cmd *c, char *err, size_t errlen);

/* Whether the process has ended (not yet reaped): its pidfd is readable.
 * Its stdout says so too, but only once every process holding that socket
 * has closed it, and a child the handler started may hold it for good. */
int exec_proc_ended(const struct exec_proc *p);

/* Whether the process ends within ms milliseconds, left unreaped (for
 * exec_proc_kill's status): at EOF on its stdout, a handler that exited
 * is told from one that closed its stdout and went on running. */
int exec_proc_ends_within(const struct exec_proc *p, int ms);

/* Kill the process group (SIGKILL), reap the process and close our ends.
 * The wait status in *status when it is not NULL. */
void exec_proc_kill(struct exec_proc *p, int *status);

/* "exited with status 1", "was killed by signal 9 (Killed)". */
void exec_proc_describe_exit(int status, char *out, size_t cap);

/* ---- pool.c: the processes ---- */

struct exec_slot; /* pool.c's */

struct exec_pool {
    const twice_api *api;
    const struct exec_cmd *cmd;
    int max;                  /* most processes, 0: no limit */
    pthread_mutex_t mu;       /* guards the slots and stop */
    pthread_cond_t cv;        /* a slot changed state */
    struct exec_slot **slots; /* owned */
    size_t nslots;
    int wake[2];      /* a byte here wakes the supervisor */
    int stop;         /* fini: end every process, then the supervisor */
    pthread_t thread; /* the supervisor */
    int started;
};

/* 0, or -1 with err (no thread, no pipe). */
int exec_pool_start(struct exec_pool *p, const twice_api *api, const struct exec_cmd *cmd, int max,
                    char *err, size_t errlen);
/* End every process (EOF on stdin, SIGTERM, SIGKILL after a grace) and
 * the supervisor. No job may be running. */
void exec_pool_stop(struct exec_pool *p);

/* A process for one job (started, or restarted after the backoff of its
 * last failure, when none is idle): the slot, owned by the caller until
 * exec_pool_give. NULL with err when the program could not be started. */
struct exec_slot *exec_pool_take(struct exec_pool *p, char *err, size_t errlen);
/* Its process (owned by the taker). */
struct exec_proc *exec_slot_proc(struct exec_slot *s);
/* Back to the pool. failed: the process was killed (restart it after a
 * growing delay); else it answered and goes back to idle. */
void exec_pool_give(struct exec_pool *p, struct exec_slot *s, int failed);

/* ---- exchange.c: one job on one process ---- */

/* The time limit of one job: timeout seconds, plus start seconds when the
 * process has not answered a job yet (its interpreter's start and imports
 * are not the job's). */
struct exec_limit {
    int timeout;
    int start;
};

/* Send the request line req (len bytes, newline included), wait within
 * the limit for the answer line while logging stderr with the job's
 * context. 0 and *a (the process is killed when it wrote more than one
 * line that echoed this job's message id: p->pid is then 0); -1 with why
 * (the process died, overran, answered garbage, answered for another
 * message id, or wrote more than one line without an echo, and is
 * killed); -2 when the job never reached it: it had written output
 * before the request (out of step) or had ended, or it ended without
 * reading the request (a handler that exits after each job, caught between
 * its answer and its exit); killed, and the job may go to another. */
int exec_exchange(const twice_api *api, twice_job *job, struct exec_proc *p, const char *req,
                  size_t len, struct exec_limit limit, struct exec_answer *a, char *why,
                  size_t cap);

/* Log one stderr line of process pid with job's context (job NULL: none). */
void exec_log_stderr(const twice_api *api, const twice_job *job, pid_t pid, const char *line,
                     size_t cut);

#endif
