/*
 * diag.h - a list of problems, each one line, for commands that report
 * everything wrong at once (`twiced -t`, a refused reload) rather than
 * stopping at the first. Lines read "FILE:LINE: message".
 */
#ifndef TWICE_DIAG_H
#define TWICE_DIAG_H

#include <stddef.h>

struct diag {
    char **lines;
    size_t n;
    size_t cap;
};

#define DIAG_INIT                                                                                 \
    {                                                                                             \
        NULL, 0, 0                                                                                \
    }

/* Add "FILE:LINE: message" ("FILE: message" when line is 0, the bare message
 * when file is NULL). Allocation failures drop the line silently: a
 * diagnostic list is best effort, the caller still fails. */
void diag_add(struct diag *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void diag_free(struct diag *d);

#endif
