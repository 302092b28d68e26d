/*
 * mock_internal.h - what the mock host's files share: the mock, the fake
 * job behind twice_job, and the captured log. Not installed; a test sees
 * only twice/mock.h.
 */
#ifndef TWICE_MOCK_INTERNAL_H
#define TWICE_MOCK_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "twice/mock.h"

struct mock_line {
    twice_log_level level;
    char *text; /* owned */
};

/* A growing list of captured lines; owns every text. */
struct mock_log {
    struct mock_line *lines;
    size_t n, cap;
};

struct mock_kv {
    char *name, *value; /* owned */
};

/* What api->setting() reads: the mock's given settings, then defaults. */
struct twice_settings {
    const struct twice_mock *mock;
};

struct twice_mock {
    const twice_plugin *plugin; /* borrowed from the plugin (or its library) */
    void *lib;                  /* dlopen handle, or NULL for a linked plugin */
    struct mock_kv *settings;   /* owned, nsettings entries */
    size_t nsettings;
    struct twice_settings settings_view;
    void *state; /* the plugin's, from init() */
    int initialized;
    int echo;
    char error[512];
    pthread_mutex_t lock; /* guards log and next_id (jobs run on many threads) */
    struct mock_log log;  /* lines without a job */
    unsigned long next_id;
};

struct mock_attr {
    char *name, *type, *value; /* owned */
};

/* The fake job. twice_mock_job is this struct under another name. */
struct twice_job {
    struct twice_mock *mock;
    char *body; /* owned, NUL-terminated */
    size_t body_len;
    json_t *root; /* parsed body (owned), NULL when not JSON */
    struct mock_attr *attrs;
    size_t nattrs;
    char *message_id, *group_id; /* owned; group_id may be NULL */
    int attempt;
    void *db; /* borrowed PGconn */

    /* results of the last run */
    char *key, *error; /* owned, or NULL */
    int retry_after;
    int handled;
    struct mock_log log;
    char **kept; /* strings handed to the plugin by field()/field_json(); owned */
    size_t nkept, capkept;
};

/* Append a copy of text; 0 or -1 (out of memory). */
int twice_mock_log_add(struct mock_log *log, twice_log_level level, const char *text);
void twice_mock_log_clear(struct mock_log *log);

/* The API table handed to init() (static, lives forever). */
const twice_api *twice_mock_api(void);

/* The mock whose plugin code runs on this thread (for log lines without a
 * job); set around every call into the plugin. */
void twice_mock_set_current(struct twice_mock *m);

/* The value at a dotted path of root ("" is root), as the host reads body
 * paths; borrowed from root, NULL when missing. */
json_t *twice_mock_json_path(const json_t *root, const char *path, size_t len);

/* A scalar's text as api->field() gives it, malloc'd; NULL for null,
 * objects and arrays (or out of memory). */
char *twice_mock_scalar_text(const json_t *v);

#endif
