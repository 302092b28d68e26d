/*
 * proctitle.c - process titles (see proctitle.h). Linux has no call to set
 * what ps shows: it shows the memory that held argv (and, once that is used
 * up, the environment after it), so twiced writes its title there, as nginx
 * and PostgreSQL do, after copying what was there to the heap.
 */
#include "proctitle.h"

#include "cnum.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern char **environ;

static char *area;      /* where argv[0] was: the title goes here */
static size_t area_len; /* argv and environment strings, if they lie end to end */

/* The strings of v that lie end to end from *end on move to the heap; *end
 * advances past them. Returns 0, or -1 when out of memory. */
static int
move_strings(char **v, size_t n, char **end)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(v[i]) + 1;
        int adjacent = v[i] == *end;
        char *copy = strdup(v[i]);
        if (copy == NULL) {
            return -1;
        }
        if (adjacent) {
            *end += len;
        }
        v[i] = copy;
    }
    return 0;
}

void
proctitle_init(int argc, char **argv)
{
    size_t nenv = 0;
    while (environ != NULL && environ[nenv] != NULL) {
        nenv++;
    }
    char **env = calloc(nenv + 1, sizeof(*env));
    if (argc < 1 || env == NULL) {
        free(env);
        return;
    }
    memcpy(env, environ, nenv * sizeof(*env));
    char *start = argv[0], *end = argv[0];
    if (move_strings(argv, (size_t) argc, &end) != 0 || move_strings(env, nenv, &end) != 0) {
        return; /* what moved stays valid: only the title is lost */
    }
    environ = env;
    area = start;
    area_len = (size_t) (end - start);
}

void
proctitle_set(const char *fmt, ...)
{
    prctl(PR_SET_NAME, "twiced", 0, 0, 0); /* workers are exec'd as twiced-worker */
    if (area == NULL || area_len < 2) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = cnum_vsnprintf(area, area_len, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t) n + 1 < area_len ? (size_t) n + 1 : area_len;
    memset(area + used, 0, area_len - used);
}
