/*
 * deadjob.h - what a host says when a plugin hands the API a job that is
 * not the one running on the calling thread (kept after handle() or
 * derive_key() returned, or used from a thread of the plugin's own): the
 * API functions that take a job, and the line that refuses such a call.
 * twiced (plugin/hostapi.c) and the SDK's mock host both say it from here,
 * so a plugin's unit test reads the words production logs. Not the check
 * (each host compares the job with its own thread's) nor when it is said.
 */
#ifndef TWICE_DEADJOB_H
#define TWICE_DEADJOB_H

#include <stddef.h>

/* The twice_api functions that take a job, in the table's order. */
enum deadjob_fn {
    DEADJOB_LOG,
    DEADJOB_BODY,
    DEADJOB_FIELD,
    DEADJOB_FIELD_JSON,
    DEADJOB_ATTR,
    DEADJOB_KEY,
    DEADJOB_ATTEMPT,
    DEADJOB_MESSAGE_ID,
    DEADJOB_GROUP_ID,
    DEADJOB_DB,
    DEADJOB_RETRY_AFTER,
    DEADJOB_ERROR,
    DEADJOB_TRACEPARENT,
    DEADJOB_QUEUE,
    DEADJOB_ATTR_NAME,
    DEADJOB_DOWNSTREAM,
    DEADJOB_SEND,
    DEADJOB_NFNS /* how many: not a function */
};

/* fn's name as the API table spells it ("field", "downstream_unavailable"),
 * or NULL for a value that is not one of them. A static string. */
const char *deadjob_fn_name(enum deadjob_fn fn);

/* fn's enum value for its name, or -1 for a name that is not one. */
int deadjob_fn_find(const char *name);

/*
 * The refusal of a call of fn, into out (cap bytes, NUL-terminated, cut if
 * it must be): "plugin 'P' called api->F() with a job that is not running
 * on its thread (...): refused; ...". plugin is the one whose call runs on
 * the thread, else (called_last nonzero: a plugin's own thread runs none)
 * the one called last, said so; NULL says "?". Its length as snprintf's.
 */
int deadjob_line(char *out, size_t cap, const char *plugin, int called_last, enum deadjob_fn fn);

#endif
