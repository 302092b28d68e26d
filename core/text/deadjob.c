/*
 * deadjob.c - the words a host refuses a job with that is not running on
 * the calling thread (deadjob.h): one table of names and one line, for
 * twiced and the mock host alike.
 */
#include "deadjob.h"

#include <stdio.h>
#include <string.h>

static const char *const fn_names[] = {
    "log",         "body",  "field",       "field_json",
    "attr",        "key",   "attempt",     "message_id",
    "group_id",    "db",    "retry_after", "error",
    "traceparent", "queue", "attr_name",   "downstream_unavailable",
    "send"};

_Static_assert(sizeof(fn_names) / sizeof(fn_names[0]) == DEADJOB_NFNS,
               "one name per enum deadjob_fn");
_Static_assert(DEADJOB_NFNS <= 32, "the hosts keep a bit per function in an unsigned");

const char *
deadjob_fn_name(enum deadjob_fn fn)
{
    return (unsigned) fn < DEADJOB_NFNS ? fn_names[fn] : NULL;
}

int
deadjob_fn_find(const char *name)
{
    for (int i = 0; name != NULL && i < DEADJOB_NFNS; i++) {
        if (strcmp(fn_names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

int
deadjob_line(char *out, size_t cap, const char *plugin, int called_last, enum deadjob_fn fn)
{
    const char *name = deadjob_fn_name(fn);
    return snprintf(out, cap,
                    "plugin '%s'%s called api->%s() with a job that is not running on its thread "
                    "(kept after handle() returned, or used from another thread): refused; a "
                    "job is valid only during handle() or derive_key(), on the thread that runs "
                    "it (said once)",
                    plugin != NULL ? plugin : "?", called_last ? " (the plugin called last)" : "",
                    name != NULL ? name : "?");
}
