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

/* derive_key() runs on this thread (1) or not (0): api->field then hands
 * numbers in the form keys spell them, as the daemon does. */
void mockapi_set_deriving(int on);

/* The attribute name of j that api->attr() and {attr:Name} read: a name
 * given twice is its last, as in twiced; NULL when there is none. */
const struct mock_attr *mockapi_attr(const struct twice_job *j, const char *name);

#endif
