/*
 * fileopen.h - opening a file that someone else names (a configuration, an
 * AWS credentials file, a token file, the log file) without waiting on it.
 * Not a reader or writer: each caller reads, bounds or writes what it opened.
 */
#ifndef TWICE_FILEOPEN_H
#define TWICE_FILEOPEN_H

#include <sys/types.h>

/*
 * Open path read-only and close-on-exec, never waiting: a named pipe nobody
 * writes to would block open() for ever (and the master or a worker with
 * it). O_NONBLOCK is cleared once the file is open, so a pipe that is written
 * to is still read whole, in order, and a pipe with no writer reads as empty.
 * Returns the descriptor (the caller's), or -1 with errno.
 */
int fileopen_read(const char *path);

/*
 * Open path for appending (created with mode), close-on-exec, never waiting:
 * a named pipe no process reads would block open() for ever, so it fails at
 * once with ENXIO instead. Once open, writes block as usual (O_NONBLOCK is
 * cleared). With nofollow, a symbolic link at path fails with ELOOP
 * (O_NOFOLLOW: checked and opened in one step, no race). Returns the
 * descriptor (the caller's), or -1 with errno.
 */
int fileopen_append(const char *path, mode_t mode, int nofollow);

/*
 * Open /dev/null on standard input, output or error where whoever started
 * this process closed them (`twiced -d >&-`, a supervisor that closes them),
 * before anything else is opened: otherwise the next file opened takes the
 * number, and what is printed or logged goes into it (a configuration
 * snapshot, a PostgreSQL or SQS connection). Called first by twiced's
 * master (and -t, -s).
 */
void fileopen_std_fds(void);

#endif
