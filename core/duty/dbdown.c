/*
 * dbdown.c - one log line when a master thread's database connection fails
 * and one when it is back (dbdown.h).
 */
#include "dbdown.h"

#include "log.h"
#include "metrics.h"

int
dbdown_note(int *down, int rc, const char *who, const char *op, const char *err, const char *hint)
{
    if (rc != 0) {
        metrics_count(MET_PG_ERRORS, op, NULL, NULL, 1);
        if (!*down) {
            log_warn("%s: %s (%s)", who, err, hint);
        }
        *down = 1;
    } else if (*down) {
        log_info("%s: database reachable again", who);
        *down = 0;
    }
    return rc;
}
