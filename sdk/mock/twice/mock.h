/*
 * twice/mock.h - a small mock host for unit-testing a twice handler plugin
 * without the daemon, PostgreSQL or SQS. It is not the host: it never
 * retries, dead-letters, deletes or opens a transaction; the test decides.
 *
 * A test creates a mock for a plugin (its descriptor, or a .so path), sets
 * settings, calls init, builds fake jobs from a JSON body and the message's
 * metadata, runs them through the plugin and asserts on what came back:
 *
 *     twice_mock *m = twice_mock_open("./welcome_email.so", err, sizeof(err));
 *     twice_mock_set(m, "smtp_url", "smtp://127.0.0.1:2525");
 *     if (twice_mock_init(m) != 0) fail(twice_mock_error(m));
 *     twice_mock_job *j = twice_mock_job_new(m, "{\"candidateId\":42,...}");
 *     twice_status st = twice_mock_run(j);
 *     ... twice_mock_job_key(j), twice_mock_job_error(j),
 *         twice_mock_job_retry_after(j), twice_mock_job_log_text(j, 0, &lvl)
 *     twice_mock_job_free(j);
 *     twice_mock_free(m);               (calls fini, closes the .so)
 *
 * The API table handed to the plugin implements every twice_api function
 * with the semantics plugin.h documents (traceparent() is NULL: the mock
 * has no trace context), and derives keys from the queue's key
 * (twice_mock_queue_key), else the plugin's key template or key setting
 * ({a.b}, {attr:Name}, {msg:group}, "{{", "}}"), else its derive_key(), by
 * the host's own code (compiled into the mock's library): the same key, or
 * the same refusal and reason, as twiced.
 *
 * Log lines are captured as twiced writes a plugin's message: control
 * bytes as \n, \t, \r or \xNN, invalid UTF-8 as \xNN, C1 and
 * bidirectional controls as \uNNNN; quotes, backslashes and valid UTF-8
 * kept. So a line a test matches is the line the log shows. (twiced cuts
 * a line past 4 KB, with its prefix; the mock keeps the text whole.)
 *
 * Settings are readable (api->setting) only inside init(), as in twiced,
 * where a plugin's settings live only for init() and describe(): read
 * later, the mock answers NULL and logs an error, as twiced does.
 *
 * A job is valid only during the plugin's handle() or derive_key(), on the
 * thread that runs it (twice/plugin.h), and the mock holds the plugin to
 * that as twiced does: a job-taking API function called with any other
 * job (a twice_job kept in a static and used in a later run, or used from
 * a thread the plugin started) is refused without being read, with the
 * function's "none" answer (NULL; "" for key, message_id and queue; 0 for
 * attempt; -1 for send; nothing done for error, retry_after and
 * downstream_unavailable; log writes the line without the job). The first
 * refusal of each function is an error line of the mock's log
 * (twice_mock_log_text) in twiced's words, "plugin 'x' called api->field()
 * with a job that is not running on its thread ...", and every one is
 * counted (twice_mock_refused), so a test can assert its plugin keeps the
 * rule. The test's own calls (twice_mock_job_*) are not API calls: they
 * read a job at any time until it is freed.
 *
 * Ownership: every string the mock returns is owned by the mock or the job
 * and lives until the object is freed (or, for a job's results, until the
 * next twice_mock_run of that job). Strings passed in are copied.
 *
 * Threads: one mock may run different jobs on different threads at once
 * (that is how handle() is called for real); a single job and the mock's
 * set/init/free calls belong to one thread at a time.
 */
#ifndef TWICE_MOCK_H
#define TWICE_MOCK_H

#include <stddef.h>

#include <twice/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct twice_mock twice_mock;
typedef struct twice_mock_job twice_mock_job;

/* A mock host for a descriptor linked into the test (pass
 * twice_plugin_entry()). The descriptor is checked as twiced's loader
 * checks it (the same code): the load rule, its name, flags, settings
 * declaration and key source; NULL when it fails (the reason is written
 * on stderr, "twice-mock: twice_mock_new: ..."; twice_mock_open returns
 * it for a .so) or out of memory. */
twice_mock *twice_mock_new(const twice_plugin *plugin);

/* A mock host for a plugin file: dlopen(path), the entry point, the load
 * rule (magic, major, minor, size, a key template that compiles). NULL
 * with err on failure. The library stays open until twice_mock_free. */
twice_mock *twice_mock_open(const char *path, char *err, size_t errlen);

/* Call fini() when init() succeeded, close the library, free everything.
 * Every job of this mock must be freed before. NULL is fine. */
void twice_mock_free(twice_mock *m);

/* The descriptor under test (borrowed from the plugin). */
const twice_plugin *twice_mock_plugin(const twice_mock *m);

/* Give a setting as text, as twice.conf would ("10", "true", "x@y").
 * Before twice_mock_init. A second call for a name replaces the value.
 * 0, or -1 when out of memory. */
int twice_mock_set(twice_mock *m, const char *name, const char *value);

/* Check the settings against the plugin's declaration as the host does
 * (unknown names, wrong types, missing required ones; a key setting's
 * template must compile), then call init().
 * Returns 0, or nonzero with twice_mock_error() saying why (init's own
 * reasons are in its log lines). */
int twice_mock_init(twice_mock *m);

/* The queue's own key template, as `key` in a queue of twice.conf: it
 * overrides the plugin's key_template, key setting or derive_key() for
 * every job of this mock, as the host does. NULL removes it. 0, or -1
 * with twice_mock_error() saying why (a template that does not compile,
 * in the host's words). */
int twice_mock_queue_key(twice_mock *m, const char *tmpl);

/* A queue api->send() may name, as a queue `name` and `url` of twice.conf.
 * Without it only URLs are accepted, as the host refuses unknown names
 * (in the host's words: "send: queue \"x\" is not a queue of twice.conf ...").
 * Strings copied. 0, or -1 when out of memory. */
int twice_mock_queue(twice_mock *m, const char *name, const char *url);

/* Why the last twice_mock_init failed ("" when it did not), in twiced's
 * words less its FILE:LINE: with the plugin's api->setting_error(),
 * "plugin 'x': setting 'y': why" (the host says it after the line of
 * twice.conf that sets y); else "plugin 'x': init failed: " and the last
 * error (else warning) line init() logged, or "... (returned N and logged
 * no reason)". */
const char *twice_mock_error(const twice_mock *m);

/* Log lines written without a job (in init, fini, or with job NULL, or
 * with a job refused: see the top of this file) and the mock's own
 * refusal lines, in the order said.
 * twice_mock_log_text returns NULL past the end; level may be NULL. */
size_t twice_mock_log_count(const twice_mock *m);
const char *twice_mock_log_text(const twice_mock *m, size_t i, twice_log_level *level);

/* How many API calls with a job not running on the calling thread this
 * mock refused (see the top of this file), since twice_mock_new: of the
 * function fn ("field", "log", "send", ... as the twice_api member is
 * named), or of all of them with fn NULL; 0 for a name that is not a
 * job-taking function. A refusal on a thread that runs no plugin call (one
 * of the plugin's own) is counted by the mock whose plugin was called
 * last, as twiced names "the plugin called last". Thread-safe. */
size_t twice_mock_refused(const twice_mock *m, const char *fn);

/* Echo every captured log line to stderr as well (for debugging a test);
 * also on when the environment has TWICE_MOCK_ECHO=1. */
void twice_mock_echo(twice_mock *m, int on);

/* A fake job with this body (copied; need not be JSON: field() is then
 * NULL). Defaults: attempt 1, message id "mock-message-<n>", no group id,
 * no attributes, no database connection. NULL when out of memory. */
twice_mock_job *twice_mock_job_new(twice_mock *m, const char *body);
void twice_mock_job_free(twice_mock_job *j);

/* A message attribute. type is "String", "Number" (or a custom subtype
 * such as "Number.int") or "Binary"; NULL means "String". Binary ones are
 * invisible to attr() and refused in keys, as in the host. A name given
 * again is read as its last, by attr() and {attr:Name}, as in the host.
 * 0 or -1. */
int twice_mock_job_attr(twice_mock_job *j, const char *name, const char *type, const char *value);
int twice_mock_job_message_id(twice_mock_job *j, const char *message_id);
/* The queue name api->queue() returns (default "", as the host answers
 * without a configured name). */
int twice_mock_job_queue(twice_mock_job *j, const char *queue);
/* The FIFO MessageGroupId; NULL for a standard queue. */
int twice_mock_job_group(twice_mock_job *j, const char *group_id);
/* What api->attempt() says in handle() (in derive_key() it is 0, as in
 * twiced: the key is not claimed yet). */
void twice_mock_job_attempt(twice_mock_job *j, int attempt);
/* What api->traceparent() returns, as twiced with tracing on would: the
 * job's span context, a W3C traceparent value (checked as twiced checks
 * one: -1 when it is not valid). Without it, api->traceparent() acts as
 * with tracing off: the job's valid `traceparent` attribute, else NULL. */
int twice_mock_job_traceparent(twice_mock_job *j, const char *traceparent);
/* A PGconn * for a plugin flagged TWICE_FLAG_TRANSACTIONAL (what api->db
 * returns; NULL for other plugins, as in the host). The mock opens no
 * transaction: BEGIN before and COMMIT/ROLLBACK after are the test's. */
void twice_mock_job_db(twice_mock_job *j, void *pgconn);

/*
 * Derive the job's key (template or derive_key), then call handle(), as
 * the host does. Returns handle()'s status (an out-of-range one counts as
 * TWICE_RETRY with an error, as in the host), or TWICE_REJECT without
 * calling handle() when the message has no valid key: the host would
 * dead-letter it; twice_mock_job_key() is then NULL and the error says
 * why ("missing key field candidateId"). Needs a successful init (or a
 * plugin without init). Clears the previous run's results and log lines.
 */
twice_status twice_mock_run(twice_mock_job *j);

/* Results of the last run. The key, or NULL when none was derived. */
const char *twice_mock_job_key(const twice_mock_job *j);
/* The reason code the host would dead-letter the message with after this
 * run: "missing-key-field", "bad-key-field", "key-too-long" or
 * "invalid-json" when no key could be derived (the error then says why, in
 * the host's words), "rejected" when handle() returned TWICE_REJECT; NULL
 * otherwise (a TWICE_RETRY is dead-lettered only past max_attempts, which
 * the mock does not count). A static string. */
const char *twice_mock_job_reason(const twice_mock_job *j);
/* The last api->error() text, or NULL when none was given. When the job
 * is dead-lettered (TWICE_REJECT), what the host keeps of it as the dead
 * letter's detail (its log line): the first 1024 bytes, cut between
 * characters, then "..."; its twice-error attribute carries the same. */
const char *twice_mock_job_error(const twice_mock_job *j);
/* What api->retry_after() asked for (capped at 43200), or -1. */
int twice_mock_job_retry_after(const twice_mock_job *j);
/* The seconds api->downstream_unavailable() was called with (capped at
 * 43200), or -1 when it was not called. */
int twice_mock_job_downstream_unavailable(const twice_mock_job *j);
/* Whether handle() was called (0 when the key could not be derived). */
int twice_mock_job_handled(const twice_mock_job *j);
/* The messages the last run staged with api->send() that the host would
 * send: none unless it returned TWICE_DONE (the host drops what a RETRY or
 * REJECT staged). send() refuses, at the call, what the host refuses
 * (unknown queue names, bodies over 1 MiB, ...), by the host's own checks;
 * the job then counts as TWICE_REJECT. Message i's body (NULL past the
 * end) and, through the non-NULL pointers, its queue URL, FIFO group id
 * (NULL), delay and attributes as a JSON array ["name","value",...]
 * (NULL). Its twice-outbox-id will be "<key>#<i>". */
size_t twice_mock_job_sent_count(const twice_mock_job *j);
const char *twice_mock_job_sent(const twice_mock_job *j, size_t i, const char **url,
                                const char **group_id, int *delay, const char **attrs_json);

/* Log lines written with this job: the message as the host's line carries
 * it, escaped, and a message too long for a 4096-byte line with its fields
 * cut to fit, ending " [... N bytes cut]". */
size_t twice_mock_job_log_count(const twice_mock_job *j);
const char *twice_mock_job_log_text(const twice_mock_job *j, size_t i, twice_log_level *level);

/*
 * The key template expansion on its own: expand tmpl for a job's body,
 * attributes and group id into buf (NUL-terminated, at most cap bytes with
 * the NUL). Returns the key's length, or -1 with a reason in err ("missing
 * key field candidateId", "column 3: unterminated field").
 */
int twice_mock_expand_key(const twice_mock_job *j, const char *tmpl, char *buf, size_t cap,
                          char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* TWICE_MOCK_H */
