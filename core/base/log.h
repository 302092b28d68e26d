/*
 * log.h - one line per event, as text or JSON, filtered by level.
 *
 * Every line is written with a single write(2) of at most LOG_LINE_MAX
 * bytes (a longer message is cut, saying how much), so lines from the
 * master, workers and threads never interleave, also on a pipe or the
 * journal's socket. Any bytes in messages and fields
 * are escaped (escape.h): control characters and invalid UTF-8 can never
 * break a line.
 * This module never sees secrets: callers must not pass them.
 */
#ifndef TWICE_LOG_H
#define TWICE_LOG_H

#include <stdarg.h>
#include <sys/stat.h>

#include "cut.h"

#include <twice/plugin.h> /* twice_log_level: one set of levels for host and plugins */

enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON = 1 };

/* LOG_LINE_MAX, the longest line: cut.h, shared with the mock host. */

/* The context a job's lines carry. Any field may be NULL (attempt 0: none). */
struct log_job {
    const char *queue;
    const char *message_id;
    const char *plugin;
    const char *key;
    int attempt;
};

/* Parse "error"/"warn"/"info"/"debug" and "text"/"json". 0 or -1. */
int log_parse_level(const char *s, twice_log_level *out);
int log_parse_format(const char *s, enum log_format *out);
const char *log_level_name(twice_log_level level);

/* Send lines to `path` (opened for append; NULL or "" for stderr). Returns 0,
 * or -1 with errno set; the previous destination stays in use on failure.
 * Run as root, a symbolic link at path is not followed (ELOOP) when its
 * directory is one others can write (log_dir_trusted): whoever can write
 * there, the workers' user included, could otherwise plant a link and have
 * root append to, or create, any file. */
int log_open(const char *path);
/* Whether root may follow a symbolic link in the directory st describes:
 * owned by root and writable by no group or others (the rule of the
 * kernel's protected_symlinks, for the one file root opens by a name
 * others could plant). 1 or 0; pure, for the tests. */
int log_dir_trusted(const struct stat *st);
/* Open again, by its path, the file log_open was last asked for: after
 * logrotate moved it away (its `create` mode), lines go to a new file of
 * that name; a file that could not be opened before is tried again. 0
 * (also when lines go to stderr), or -1 with errno set and the previous
 * destination still in use. */
int log_reopen(void);
/* Whether log_open(path) would succeed, asked without creating anything: an
 * existing file must be writable, else its directory must let this user
 * create it; a named pipe must have a reader (it is opened for writing for
 * a moment, writing nothing). 0, or -1 with errno set (what log_open would
 * fail with). */
int log_can_open(const char *path);
/* Why log_open(path) or log_can_open(path) failed with err, for a person:
 * strerror's text, but a named pipe without a reader (ENXIO, which reads
 * "No such device or address") and a symbolic link root does not follow
 * (ELOOP, see log_open) are called that. Static text. */
const char *log_open_why(const char *path, int err);
/* The file log_open was last asked for, NULL for stderr. */
const char *log_file(void);
void log_set_level(twice_log_level level);
void log_set_format(enum log_format format);
/* The process's role in every line: "master", "worker", "probe", "twicectl". */
void log_set_role(const char *role);
int log_enabled(twice_log_level level);

void log_msg(twice_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_job(twice_log_level level, const struct log_job *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vjob(twice_log_level level, const struct log_job *job, const char *fmt, va_list ap);
/* The line log_job would write now, for log_write_built to write later
 * from a process that may take no lock and allocate nothing: a fork()ed
 * copy of a threaded process, where a lock another thread held at the fork
 * (malloc's, the time zone's) is held for ever. NULL when the level is off
 * or memory ran out; the caller frees it. */
char *log_build_job(twice_log_level level, const struct log_job *job, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Write a line from log_build_job where log lines go, with fstat() and
 * write() only: async-signal-safe. */
void log_write_built(const char *line);

#define log_error(...) log_msg(TWICE_LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(TWICE_LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(TWICE_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(TWICE_LOG_DEBUG, __VA_ARGS__)

#endif
