/*
 * twice/plugin.h - the plugin ABI of twice, the idempotent SQS job worker.
 *
 * This is the only header a handler plugin includes. It depends on nothing
 * but <stddef.h> and <stdint.h>, and it is C99. A plugin is a shared object
 * exporting exactly one function, twice_plugin_entry(), which returns a
 * pointer to a constant descriptor. Write both with TWICE_PLUGIN(...):
 *
 *     #include <twice/plugin.h>
 *
 *     static twice_status
 *     handle(void *state, twice_job *job)
 *     {
 *         ...
 *         return TWICE_DONE;
 *     }
 *
 *     TWICE_PLUGIN(.name = "welcome-email", .version = "1.0.0",
 *                  .key_template = "welcome-email:{candidateId}",
 *                  .init = init, .handle = handle, .fini = fini)
 *
 * Build it out of tree with:
 *
 *     cc -shared -fPIC -fvisibility=hidden \
 *        $(pkg-config --cflags twice-plugin) -o x.so x.c
 *
 * Versioning. The descriptor starts with a magic cookie, the ABI major and
 * minor it was built against and its own size; those fields protect the
 * rest. The host loads a plugin when the magic is equal, the major is equal,
 * the plugin's minor is not newer than the host's, and the size is at least
 * the minimum for that minor. A refused plugin is named with both versions:
 * "x.so: built for ABI 2.3, host supports 1.0-1.4".
 *
 * Minors only ever append: fields at the end of struct twice_plugin and
 * functions at the end of struct twice_api. Nothing is removed, reordered or
 * retyped without a new major. A plugin that wants a function added in a
 * later minor tests for it with TWICE_API_HAS(api, fn).
 *
 * Ownership. Everything the host hands to a plugin (strings, the job, the
 * API table, the database connection) is borrowed: valid for the duration
 * of the call it was handed to, unless a function says otherwise, and never
 * freed by the plugin. Plugin state comes from init() and is freed by fini().
 * No allocator crosses the boundary: the plugin never frees host memory and
 * the host never frees plugin memory.
 *
 * Threads. handle() and derive_key() are called from several threads at
 * once (the queue's `concurrency`) with the same state; they must be
 * thread-safe. init() and fini() are called once, on one thread, with no
 * handle() running.
 *
 * Descriptors. A plugin closes only the descriptors it opened: the worker's
 * connections, log file and SQS clients share the process. One that closes
 * them all (a daemonising library, closefrom(3)) costs the worker its
 * connections, which it makes again, and is named in a warning.
 *
 * Locale. twiced never calls setlocale(): every call runs in the "C"
 * locale unless a plugin (or a library it uses) changes it. setlocale()
 * changes the whole worker process, every thread and every other plugin in
 * it; prefer uselocale() on your own thread. Whatever locale is in force,
 * the host's numbers stay the C locale's ('.' as the decimal point): keys,
 * the text log() and error() format ("%.1f" is "1.5"), /metrics, its
 * reading of settings and of PostgreSQL's answers. A plugin's own
 * snprintf and strtod follow the locale it set: settings are written the
 * C way ("1.5"), so read them with strtod_l() and a "C" newlocale() then.
 * The host's case-insensitive comparisons (header names, URL schemes, AWS
 * keys, settings) fold ASCII only; libc's strcasecmp() does not under
 * tr_TR.UTF-8 ('I' and 'i' differ), so a plugin comparing protocol text
 * beside such a locale folds 'A'..'Z' itself or uses strcasecmp_l().
 *
 * Changelog of ABI minors (newest last):
 *   1.0  2026-12-02  First stable ABI: descriptor (magic, major, minor,
 *                    size, flags, name, version, key_template, settings,
 *                    init, handle, fini, derive_key) and the host API table
 *                    (log, body, field, field_json, attr, key, attempt,
 *                    message_id, group_id, setting, db, retry_after, error).
 *   1.1  2026-12-02  Descriptor: key_setting (the key template is the value
 *                    of one of the plugin's settings) and describe (what a
 *                    plugin does with a job, for `twicectl plugin check`).
 *                    Host API: traceparent, queue, attr_name,
 *                    downstream_unavailable, send.
 *                    attempt() counts the handler's runs, not SQS
 *                    deliveries, and is 0 in derive_key (hosts of 1.0 too).
 *   1.2  2026-12-04  Host API: setting_error (a bad setting's value is
 *                    reported at its FILE:LINE in twice.conf). The
 *                    descriptor is 1.1's.
 */
#ifndef TWICE_PLUGIN_H
#define TWICE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "TWCE" as a little-endian 32-bit integer. */
#define TWICE_ABI_MAGIC 0x45435754u
#define TWICE_ABI_MAJOR 1
#define TWICE_ABI_MINOR 2

/* Symbol visibility: plugins build with -fvisibility=hidden; this makes the
 * entry point the one exported symbol. */
#if defined(__GNUC__) || defined(__clang__)
#define TWICE_EXPORT            __attribute__((visibility("default")))
#define TWICE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TWICE_EXPORT
#define TWICE_PRINTF(fmt, args)
#endif

/* The longest idempotency key the host accepts, in bytes, without the NUL. */
#define TWICE_KEY_MAX 512

/* A job: one received message being handled. Opaque; only the API table
 * reads it. Valid until handle() (or derive_key()) returns, on the thread
 * that runs it: a job kept and passed to the table later, or from another
 * thread, is refused (the function's "none" answer: NULL, "", 0, -1, or
 * nothing done; an error line names the function once) rather than read.
 * The SDK's mock host refuses it alike, so a plugin's unit test shows it. */
typedef struct twice_job twice_job;

/* A plugin instance's settings, read with api->setting() during init(). */
typedef struct twice_settings twice_settings;

/* What handle() decides. */
typedef enum twice_status {
    TWICE_DONE = 0,  /* success: the key is completed and the message deleted */
    TWICE_RETRY = 1, /* transient failure: release the key, back off, try again */
    TWICE_REJECT = 2 /* permanent failure: to the dead-letter queue now */
} twice_status;

typedef enum twice_log_level {
    TWICE_LOG_ERROR = 0,
    TWICE_LOG_WARN = 1,
    TWICE_LOG_INFO = 2,
    TWICE_LOG_DEBUG = 3
} twice_log_level;

/* Descriptor flags (the formatter would fold each comment into its macro). */
/* clang-format off */
#define TWICE_FLAG_TRANSACTIONAL 0x1u /* handle() runs inside the transaction that
                                         completes the key; api->db() works */
/* clang-format on */

/* The type of a declared setting. */
typedef enum twice_setting_type {
    TWICE_SETTING_STRING = 0,
    TWICE_SETTING_INT = 1,
    TWICE_SETTING_BOOL = 2
} twice_setting_type;

/* One setting a plugin accepts in its `settings` group in twice.conf. This
 * struct is frozen for ABI major 1 (arrays of it have no stride field). The
 * host refuses settings the plugin does not declare, values of the wrong
 * type and missing required ones, with FILE:LINE, before init() runs.
 * An array of these ends with an entry whose name is NULL. */
typedef struct twice_setting {
    const char *name;
    twice_setting_type type;
    int required;              /* nonzero: the setting must be given */
    const char *default_value; /* as text; NULL for none */
    const char *description;   /* one line, shown by `twicectl plugin check` */
} twice_setting;

/*
 * The host's function table, handed to init(). The plugin keeps the pointer
 * for its lifetime (the table outlives every call into the plugin). The
 * table starts with its own size and is append-only; test for a function
 * added after 1.0 with TWICE_API_HAS(api, fn).
 */
typedef struct twice_api {
    uint32_t size;      /* sizeof(struct twice_api) as the host built it */
    uint16_t abi_major; /* the host's ABI version */
    uint16_t abi_minor;

    /* --- 1.0 --- */

    /* Write one log line. job may be NULL (in init/fini); the host prefixes
     * the plugin's name and, with a job, its queue, message id, key and
     * attempt. The text is escaped by the host; any bytes are safe. It is
     * formatted in the C locale, whatever setlocale() a plugin called. */
    void (*log)(const twice_job *job, twice_log_level level, const char *fmt, ...)
        TWICE_PRINTF(3, 4);

    /* The message body, NUL-terminated (SQS bodies cannot contain NUL);
     * its length in *len when len is not NULL. Borrowed. On a queue with an
     * envelope (twice.conf(5)) it is the job inside: an SNS notification's
     * Message, an EventBridge event's detail; a payload kept in S3 (the
     * Extended Client's pointer) is fetched first and is the body (it may
     * hold NUL bytes: use *len). field, field_json, routes and key
     * templates read this same body. */
    const char *(*body)(const twice_job *job, size_t *len);

    /* A scalar field of the JSON body by dotted path ("a.b", "items.0.id"):
     * a string's text (which holds a NUL byte where the JSON said "\u0000":
     * use *len), a number exactly as the producer wrote it ("19.99", "1.0",
     * an integer of any length), "true"/"false". Inside derive_key() a
     * number comes as key templates spell it instead (1.0 gives "1"), so
     * keys built from it never change. An object member named twice: the
     * last one. NULL when the body is not JSON, the path is missing, or the
     * value is null, an object or an array. Borrowed until handle()
     * returns; NUL-terminated. */
    const char *(*field)(const twice_job *job, const char *path, size_t *len);

    /* Any field (object, array or scalar) as the producer wrote it: its
     * original JSON text, numbers and escapes untouched; "" path for the
     * whole body. NULL when missing. Borrowed until handle() returns. */
    const char *(*field_json)(const twice_job *job, const char *path, size_t *len);

    /* A message attribute's string value (String and Number types). NULL
     * when absent or binary. On a queue with an SNS envelope, the
     * notification's MessageAttributes too (they win over the SQS
     * message's own). A name given twice (SQS refuses that; an SNS
     * envelope's JSON may hold it): the last, as for a body's members.
     * Borrowed. */
    const char *(*attr)(const twice_job *job, const char *name, size_t *len);

    /* The job's idempotency key (at most TWICE_KEY_MAX bytes). Pass it on to
     * downstream systems as their idempotency key. Borrowed. */
    const char *(*key)(const twice_job *job);

    /* This run's number: 1 on the job's first run, then one more for each
     * run before it that twice counted (a RETRY, a run that crashed its
     * worker). Deliveries that the host caused itself (a duplicate hidden
     * behind a live lease, a message given back at a reload or drain, a
     * claim the database could not take) do not count, so it can be lower
     * than SQS's ApproximateReceiveCount. The run that reaches the queue's
     * max_attempts and returns TWICE_RETRY is dead-lettered. 0 outside
     * handle() (in derive_key, before the key is claimed). */
    int (*attempt)(const twice_job *job);

    /* The SQS MessageId. Borrowed. */
    const char *(*message_id)(const twice_job *job);

    /* The MessageGroupId: a FIFO queue's group, or on a standard queue
     * the group its producer gave for fairness (fair queues); NULL when
     * the message has none. Borrowed. */
    const char *(*group_id)(const twice_job *job);

    /* A setting's value as text (ints in decimal, bools "true"/"false"), the
     * declared default when not given, or NULL. Only valid during init()
     * and describe(); copy what you keep: later (in handle, fini) the
     * settings pointer is stale, and the host answers NULL with an error
     * line (setting_error too). */
    const char *(*setting)(const twice_settings *settings, const char *name);

    /* The worker's PostgreSQL connection (a libpq PGconn *) for plugins
     * flagged TWICE_FLAG_TRANSACTIONAL, inside the open transaction that
     * will also complete the job's key; NULL otherwise. Use it with
     * parameters only; never COMMIT, ROLLBACK or close it: returning DONE
     * commits, RETRY and REJECT roll back. A statement that fails through
     * the store's fault (a statement_timeout, a full disk, a revoked grant:
     * twice-plugin(3) has the list) and aborts the transaction makes the
     * run the store's: whatever handle() answers, the message is given back
     * and the attempt not counted. One that fails through the plugin's own
     * (its SQL, its data, a RAISE) is the job's: DONE after it is a failed
     * attempt whose error names the statement's SQLSTATE and message.
     * Borrowed until handle() returns. */
    void *(*db)(const twice_job *job);

    /* With TWICE_RETRY: wait this many seconds before the next attempt
     * instead of the queue's backoff (capped at 43200, SQS's limit). */
    void (*retry_after)(twice_job *job, unsigned seconds);

    /* Say why the job failed; recorded with RETRY and sent with the message
     * to the dead-letter queue with REJECT (as the twice-error attribute).
     * The last call wins. The host copies the text. */
    void (*error)(twice_job *job, const char *fmt, ...) TWICE_PRINTF(2, 3);

    /* --- 1.1 --- */

    /* The job's trace context as a W3C traceparent value
     * ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"), to send on
     * with the job's outgoing calls (an HTTP `traceparent` header, a
     * message attribute) so that their spans join the job's trace. With
     * tracing on, it names the job's own span (a child of the message's
     * traceparent when it had a valid one). With tracing off, it is the
     * message's own traceparent attribute when valid (passed on as version
     * 00: twice is then a transparent hop), else NULL. Borrowed until
     * handle() (or derive_key()) returns; same thread rules as the job.
     * Test with TWICE_API_HAS(api, traceparent): a 1.0 host has none. */
    const char *(*traceparent)(const twice_job *job);

    /* The name of the queue the job came from, as configured (`name` in
     * its queue group); "" outside a job (job NULL). Borrowed until
     * handle() returns. */
    const char *(*queue)(const twice_job *job);

    /* The name of the job's i-th message attribute (0-based, in the order
     * SQS gave them), or NULL past the last one: with attr(), a plugin can
     * pass every attribute on. Binary attributes are named too (attr() is
     * NULL for them); an SNS envelope's MessageAttributes follow the SQS
     * message's own. Borrowed until handle() returns. */
    const char *(*attr_name)(const twice_job *job, size_t i);

    /* The downstream this job needs (a mail relay, an API) is unavailable:
     * refused connections, an SMTP 421, an HTTP 503, a 429 with Retry-After.
     * Call it before returning TWICE_RETRY. It counts as a failure for the
     * queue's circuit breaker (breaker = { ... } in twice.conf), which after
     * enough of them pauses the queue on every host instead of spending the
     * attempts of every message on the outage; while the breaker is open a
     * RETRY is given back without counting an attempt. seconds: how long
     * the plugin expects the outage to last (a Retry-After), 0 when unknown;
     * the breaker's cooldown is at least that long (up to its cooldown_max),
     * and without a breaker it is the job's retry_after (when the plugin set
     * none). Thread-safe like
     * every function taking a job; only valid inside handle(). */
    void (*downstream_unavailable)(twice_job *job, unsigned seconds);

    /*
     * Stage a follow-up message, sent exactly when the job completes
     * (the transactional outbox; README "Follow-up messages"). The message
     * is written to the outbox table in the same transaction that completes
     * the job's key (for TWICE_FLAG_TRANSACTIONAL plugins, the one api->db()
     * is in) and sent to SQS by the host's relay soon after the commit. If
     * the job returns TWICE_RETRY or TWICE_REJECT, or its completion fails,
     * nothing staged is sent; the next run stages again. One exception: a
     * job that returned TWICE_DONE but whose completion the database could
     * not take before its worker had to stop (a stop or a reload while it
     * is unreachable) has its staged messages sent straight to SQS by the
     * worker, as the relay would send them, and its message deleted once
     * SQS took them all (else it runs again and stages them again).
     *
     * queue:  a queue's `name` in twice.conf, or a queue URL
     *         ("https://sqs.REGION.amazonaws.com/ACCOUNT/NAME").
     * body:   len bytes (len (size_t)-1: strlen), UTF-8, the characters SQS
     *         allows; at most 1048576 bytes (1 MiB, SQS's limit) with the
     *         attributes' names, types and values, twice-outbox-id's
     *         included ("twice-outbox-id", "String", "<key>#<index>").
     * delay_seconds: 0-900 (0: the queue's own); must be 0 on a FIFO queue.
     * group_id: the MessageGroupId, required on a FIFO queue (a URL ending
     *         in ".fifo"); NULL on a standard queue.
     * attrs:  NULL, or name, value, name, value, ..., NULL: at most 9
     *         String attributes (SQS allows 10; twice adds one); names
     *         starting with "twice-" are twice's own and refused.
     *
     * Every message gets the attribute twice-outbox-id, "<key>#<index>"
     * (the job's key and the number of this send() within the run, from
     * 0), the same on every run of the job and on every resend, and on a
     * FIFO queue a MessageDeduplicationId derived from it: use it as the
     * receiving queue's key ({attr:twice-outbox-id}) so a message the relay
     * sent twice (a crash between its send and its delete) has one effect.
     * It stays on the message if it is dead-lettered, and a redrive sends
     * it back with it, so a redriven follow-up keeps its key.
     *
     * Returns 0, or -1 when the message is refused at the call: a queue
     * name twice.conf does not have, a body or attributes that are too
     * large or not allowed, a FIFO queue without group_id. The reason is
     * then the job's error (as api->error()) and the job fails: returning
     * TWICE_DONE after a refused send() counts as TWICE_REJECT.
     *
     * Ownership: everything is copied before send() returns. Threads: call
     * it from handle() only, on the thread running that job (like every
     * function taking a job); jobs on other threads stage their own.
     */
    int (*send)(twice_job *job, const char *queue, const char *body, size_t len, int delay_seconds,
                const char *group_id, const char *const *attrs);

    /* --- 1.2 --- */

    /* In init(), before returning nonzero: the value of setting `name` (one
     * the plugin declares) cannot be used, and why, without repeating the
     * name: "must start with http:// or https://". The host reports it at
     * the line of twice.conf that sets it (the settings group's line when
     * the value is the declared default), as
     *   FILE:LINE: plugin 'NAME': setting 'name': why
     * so the operator is sent to the line to fix, not to the plugin entry.
     * The last call wins over earlier ones and over api->log() lines.
     * Outside init(), or with a name the plugin does not declare, it is
     * logged as an error without a line. The host copies the text. */
    void (*setting_error)(const twice_settings *settings, const char *name, const char *fmt, ...)
        TWICE_PRINTF(3, 4);
} twice_api;

/* Nonzero when the host's table has function fn and it is set. */
#define TWICE_API_HAS(api, fn)                                                                    \
    ((api)->size >= offsetof(twice_api, fn) + sizeof((api)->fn) && (api)->fn != NULL)

/*
 * The descriptor. Never fill it by hand: TWICE_PLUGIN() sets the version
 * fields. The host reads it by the plugin's `size`, never by its own sizeof.
 */
typedef struct twice_plugin {
    uint32_t magic;     /* TWICE_ABI_MAGIC */
    uint16_t abi_major; /* TWICE_ABI_MAJOR the plugin was built against */
    uint16_t abi_minor; /* TWICE_ABI_MINOR the plugin was built against */
    uint32_t size;      /* sizeof(struct twice_plugin) as the plugin built it */
    uint32_t flags;     /* TWICE_FLAG_* */

    /* --- 1.0 --- */
    const char *name;    /* short name, [a-z0-9_-]; shown in logs */
    const char *version; /* the plugin's own version, free text */

    /* How the idempotency key is derived from the message's intent, e.g.
     * "welcome-email:{candidateId}". {a.b} is a JSON body path (strings and
     * numbers), {attr:Name} a message attribute, {msg:group} the message
     * group id, {msg:NAME} a field of the queue's envelope (twice.conf(5):
     * envelope); "{{" and "}}" are literal braces. Never a random id: two messages
     * meaning the same action must collide. Set exactly one of
     * key_template, derive_key and key_setting (1.1). A queue's `key` in
     * twice.conf overrides whichever the plugin sets. */
    const char *key_template;

    /* The settings this plugin accepts (ends with a NULL name), or NULL for
     * none. */
    const twice_setting *settings;

    /* Optional. Called once per worker process before any handle(). Read
     * settings with api->setting(settings, name); store what you need in
     * *state (passed to every later call). Return 0, or nonzero after
     * logging why (the plugin then does not start and `twiced -t` fails). */
    int (*init)(const twice_api *api, const twice_settings *settings, void **state);

    /* Required. Do the job. See twice_status; say why with api->error(). */
    twice_status (*handle)(void *state, twice_job *job);

    /* Optional. Free what init() made. Called at a graceful worker exit. */
    void (*fini)(void *state);

    /* Optional, for keys a template cannot express. Write the key (without
     * a NUL terminator is fine) into buf, at most cap bytes, and return its
     * length; return -1 after api->error() when the message has no valid
     * key (the message goes to the dead-letter queue). Set exactly one of
     * key_template, derive_key and key_setting. */
    int (*derive_key)(void *state, const twice_job *job, char *buf, size_t cap);

    /* --- 1.1 --- */

    /* For plugins whose keys depend on the deployment (bridges such as the
     * bundled http and exec): the name of one of the plugin's declared
     * string settings whose value is the key template. The host compiles
     * it like key_template and reports a bad one at the setting's
     * FILE:LINE. Declare the setting not required, without a default, to
     * let every queue using the plugin set its own `key` instead (the host
     * then refuses a queue that does not). Set exactly one of
     * key_template, derive_key and key_setting. */
    const char *key_setting;

    /* Optional. Say in a few lines of text what the plugin does with a job
     * and how its outcomes map to DONE, RETRY and REJECT under these
     * settings (read with api->setting), for `twicectl plugin check`.
     * Write at most cap bytes, NUL included, into buf; return 0, or -1
     * when the settings are unusable (buf then says why). Called in a
     * throwaway process without init(): no effects, no connections. */
    int (*describe)(const twice_api *api, const twice_settings *settings, char *buf, size_t cap);
} twice_plugin;

/* The one exported function of a plugin. */
typedef const twice_plugin *(*twice_plugin_entry_fn)(void);
#define TWICE_PLUGIN_ENTRY "twice_plugin_entry"

/* Define the descriptor and the entry point. Arguments are designated
 * initializers for the fields after `flags` (and `.flags` itself). Kept
 * as written, one field a line: the formatter would stack it at the brace. */
/* clang-format off */
#define TWICE_PLUGIN(...)                                               \
    TWICE_DESCRIPTOR_BEGIN_                                             \
    static const twice_plugin twice_plugin_descriptor_ = {              \
        .magic = TWICE_ABI_MAGIC,                                       \
        .abi_major = TWICE_ABI_MAJOR,                                   \
        .abi_minor = TWICE_ABI_MINOR,                                   \
        .size = (uint32_t) sizeof(twice_plugin),                        \
        __VA_ARGS__};                                                   \
    TWICE_DESCRIPTOR_END_                                               \
    TWICE_EXTERN_C_ TWICE_EXPORT                                        \
    const twice_plugin *twice_plugin_entry(void);                       \
    TWICE_EXTERN_C_ TWICE_EXPORT                                        \
    const twice_plugin *twice_plugin_entry(void)                        \
    {                                                                   \
        return &twice_plugin_descriptor_;                               \
    }

/* In C++ (C++20 designated initializers; give the fields in the order of
 * the struct): the entry point keeps its C name, which the host looks up,
 * and the fields not given are zero, as in C, without -Wextra's warning. */
#if defined(__cplusplus)
#define TWICE_EXTERN_C_ extern "C"
#define TWICE_DESCRIPTOR_BEGIN_                                         \
    _Pragma("GCC diagnostic push")                                      \
    _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")
#define TWICE_DESCRIPTOR_END_ _Pragma("GCC diagnostic pop")
#else
#define TWICE_EXTERN_C_
#define TWICE_DESCRIPTOR_BEGIN_
#define TWICE_DESCRIPTOR_END_
#endif
/* clang-format on */

#ifdef __cplusplus
}
#endif

#endif /* TWICE_PLUGIN_H */
