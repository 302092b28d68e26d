/*
 * mockapi.h - the twice_api table the mock host hands to plugins, and the
 * "current mock" that log lines without a job are captured into.
 */
#ifndef TWICE_MOCKAPI_H
#define TWICE_MOCKAPI_H

#include <twice/plugin.h>

struct mock_attr;
struct twice_job;
struct twice_mock;

/* The API table handed to init() (static, lives forever). */
const twice_api *mockapi_table(void);

/* The mock whose plugin code runs on this thread (for log lines without a
 * job); set around every call into the plugin, NULL after it. */
void mockapi_set_current(struct twice_mock *m);

/* The job whose handle() or derive_key() runs on this thread, set around
 * the call (NULL after it): the only job the table's job functions take,
 * as in twiced. Any other (kept from an earlier run, freed by now, or used
 * from a thread of the plugin's own) is refused by one pointer compare,
 * never read: the function's "none" answer, counted for
 * twice_mock_refused and said once per function per mock. */
void mockapi_set_job(const struct twice_job *j);

/* m is about to be freed: a refusal said later on a thread that runs no
 * plugin call no longer goes to m's log. */
void mockapi_forget(struct twice_mock *m);

/* The host's own error text for j (printf-style), outside the plugin's
 * call too: what api->error() sets, without its check of the job. */
void mockapi_job_error(struct twice_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* derive_key() runs on this thread (1) or not (0): api->field then hands
 * numbers in the form keys spell them, as the daemon does. */
void mockapi_set_deriving(int on);

/* The attribute name of j that api->attr() and {attr:Name} read: a name
 * given twice is its last, as in twiced; NULL when there is none. */
const struct mock_attr *mockapi_attr(const struct twice_job *j, const char *name);

#endif
