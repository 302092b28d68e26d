/*
 * mocklog.h - the mock host's captured log lines: a growing list a mock
 * (lines without a job) or a fake job owns. Not a logger: nothing is
 * written anywhere unless the mock echoes (mockapi.c).
 */
#ifndef TWICE_MOCKLOG_H
#define TWICE_MOCKLOG_H

#include <stddef.h>

#include <twice/plugin.h>

struct mock_line {
    twice_log_level level;
    char *text; /* owned */
};

/* A growing list of captured lines; owns every text. Zeroed is empty. */
struct mock_log {
    struct mock_line *lines;
    size_t n, cap;
};

/* Append a copy of text; 0 or -1 (out of memory, nothing added). */
int mocklog_add(struct mock_log *log, twice_log_level level, const char *text);

/* Free every line and empty the list. */
void mocklog_clear(struct mock_log *log);

#endif
