/*
 * mocklog.c - the captured log lines of mocklog.h. The caller locks when
 * several threads share one list (a mock's lines without a job).
 */
#include "mocklog.h"

#include <stdlib.h>
#include <string.h>

int
mocklog_add(struct mock_log *log, twice_log_level level, const char *text)
{
    if (log->n == log->cap) {
        size_t cap = log->cap != 0 ? log->cap * 2 : 16;
        struct mock_line *lines = realloc(log->lines, cap * sizeof(*lines));
        if (lines == NULL) {
            return -1;
        }
        log->lines = lines;
        log->cap = cap;
    }
    char *copy = strdup(text);
    if (copy == NULL) {
        return -1;
    }
    log->lines[log->n++] = (struct mock_line){level, copy};
    return 0;
}

void
mocklog_clear(struct mock_log *log)
{
    for (size_t i = 0; i < log->n; i++) {
        free(log->lines[i].text);
    }
    free(log->lines);
    memset(log, 0, sizeof(*log));
}
