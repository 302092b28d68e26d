/*
 * mock_internal.h - the types the mock host's files share: the mock, the
 * fake job behind twice_job, their settings and attributes. Types only:
 * each file's functions are declared in its own header (mocklog.h,
 * mockapi.h, mockkey.h). Not installed; a test sees only twice/mock.h.
 */
#ifndef TWICE_MOCK_INTERNAL_H
#define TWICE_MOCK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "deadjob.h"
#include "jsonpath.h"
#include "mocklog.h"
#include "twice/mock.h"

struct keytmpl;

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
    struct keytmpl *tmpl;       /* the compiled key template (owned): key_template, or the
                                   key setting's value once init ran; NULL with derive_key */
    struct keytmpl *queue_tmpl; /* twice_mock_queue_key's (owned), or NULL */
    struct mock_kv *settings;   /* owned, nsettings entries */
    size_t nsettings;
    struct twice_settings settings_view;
    void *state; /* the plugin's, from init() */
    int initialized;
    int echo;
    char error[512];
    char setting_error[480]; /* init()'s api->setting_error(): "setting 'x': why" */
    char init_cause[400];    /* init()'s last error (else warning) line, as twiced keeps it */
    int init_cause_level;
    pthread_mutex_t lock; /* guards log, next_id and refused (jobs run on many threads) */
    struct mock_log log;  /* lines without a job */
    unsigned long next_id;
    /* Calls of each job function refused (a job not running on the calling
     * thread), and a bit per function whose refusal line was said. */
    unsigned long refused[DEADJOB_NFNS];
    unsigned refused_said;
    struct mock_kv *queues; /* twice_mock_queue's: name -> URL (owned) */
    size_t nqueues;
};

struct mock_attr {
    char *name, *type, *value; /* owned */
};

/* A message api->send() staged (all owned). */
struct mock_sent {
    char *url, *body, *group_id, *attrs_json;
    int delay;
};

/* The fake job. twice_mock_job is this struct under another name. */
struct twice_job {
    struct twice_mock *mock;
    char *body; /* owned, NUL-terminated */
    size_t body_len;
    struct jsondoc *root;                     /* parsed body (owned), NULL when not JSON */
    char body_error[JSONPATH_BODY_ERROR_LEN]; /* why it is not JSON, as the host says it */
    struct mock_attr *attrs;
    size_t nattrs;
    char *message_id, *group_id; /* owned; group_id may be NULL */
    char *queue;                 /* owned: what api->queue() says */
    int attempt;
    void *db;          /* borrowed PGconn */
    char *traceparent; /* owned: the span context set by the test, or NULL */

    /* results of the last run */
    char *key, *error;  /* owned, or NULL */
    const char *reason; /* static: the DLQ reason code the host would give, or NULL */
    int retry_after;
    int downstream_unavailable; /* its seconds, -1 when not called */
    int handled;
    struct mock_log log;
    struct mock_sent *sent; /* what send() staged in the last run (owned) */
    size_t nsent, capsent;
    int send_refused; /* a send() was refused: DONE counts as REJECT, as in the host */
    char **kept;      /* strings handed to the plugin by field()/field_json(); owned */
    size_t nkept, capkept;
};

#endif
