/*
 * cut.h - how much of a plugin's text twice keeps, and how it says it cut
 * the rest: a dead letter's detail (JOB_ERROR_MAX bytes, then "...") and a
 * log line's message (the line fits LOG_LINE_MAX, the message ending
 * " [... N bytes cut]"). In text/ so that twiced and the SDK's mock host
 * cut by the same rule, and a plugin's test sees what production keeps.
 */
#ifndef TWICE_CUT_H
#define TWICE_CUT_H

#include <stddef.h>

struct buf;

/* Bytes of a dead letter's detail kept (then "..."): twice-error and its
 * log line. */
#define JOB_ERROR_MAX 1024

/* The longest log line, its newline included: PIPE_BUF, what a pipe takes in
 * one piece. A longer write may be split while the pipe is full and another
 * process's line land in its middle, leaving the rest of a message (a body a
 * plugin logs) at the start of a line of its own, where it could pass for a
 * line of twiced's. */
#define LOG_LINE_MAX 4096

/* Cut b to its first JOB_ERROR_MAX bytes, between characters, and end it
 * with "..."; b is left alone when it is not longer. */
void cut_error(struct buf *b);

/* Whether the line made with this message fits (1) or not (0). */
typedef int (*cut_fits_fn)(const char *message, void *ctx);

/* The message of a line that does not fit LOG_LINE_MAX: the longest start
 * of text (whole UTF-8 characters) that, followed by " [... N bytes cut]",
 * still fits, into out (reset first); the note alone when no start does.
 * fits formats the line around a candidate: escapes lengthen characters by
 * different factors, so the start is found by bisection, a dozen formats at
 * most for a line that is rare. 0, or -1 when out failed (out of memory). */
int cut_message(const char *text, cut_fits_fn fits, void *ctx, struct buf *out);

#endif
