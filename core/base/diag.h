/*
 * diag.h - a list of problems, each one line, for commands that report
 * everything wrong at once (`twiced -t`, a refused reload) rather than
 * stopping at the first. Lines read "FILE:LINE: message". Also the edit
 * distance behind their "did you mean" suggestions.
 */
#ifndef TWICE_DIAG_H
#define TWICE_DIAG_H

#include <stddef.h>
#include <stdio.h>

struct diag {
    char **lines;
    size_t n;
    size_t cap;
    size_t more; /* problems past DIAG_MAX_LINES, not kept */
};

#define DIAG_INIT                                                                                 \
    {                                                                                             \
        NULL, 0, 0, 0                                                                             \
    }

/* Problems kept: past them, the last line only says how many more there
 * were ("... 1234 more problems not shown"), so a broken generated file
 * does not flood a terminal or a journal. */
#define DIAG_MAX_LINES 50

/* Add "FILE:LINE: message" ("FILE: message" when line is 0, the bare message
 * when file is NULL), escaped as a log line's text is (escape_unquoted): a
 * file or directory name, a value or a plugin's text holding a newline, a
 * terminal escape or a bidirectional control cannot split the line or drive
 * the terminal it is printed on. Allocation failures drop the line
 * silently: a diagnostic list is best effort, the caller still fails. */
void diag_add(struct diag *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Print one line to f (a terminal, most likely: twiced -t, twiced -s, a
 * refused start) escaped as diag_add's lines are, and a newline: for the
 * messages outside a diagnostic list that repeat a path or a name. */
void diag_print_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How many problems were added, those not kept included. */
size_t diag_count(const struct diag *d);

void diag_free(struct diag *d);

/* For "did you mean": the optimal string alignment distance of a and b (a
 * swap of neighbours counts as one edit, so "smtp_ulr" is one away from
 * "smtp_url"), ignoring case when fold_case. Names longer than
 * DIAG_NAME_MAX bytes are never close: INT_MAX. */
#define DIAG_NAME_MAX 64
int diag_edit_distance(const char *a, const char *b, int fold_case);

#endif
