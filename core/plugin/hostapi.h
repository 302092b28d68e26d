/*
 * hostapi.h - the host side of the plugin ABI: the function table handed to
 * every plugin, and the only places core calls into plugin code (init,
 * derive_key, handle, fini). Calls are bracketed so that a plugin's log
 * lines without a job still carry the plugin's name, and so that a copy of
 * the process the plugin forked and returned in is said and ended there.
 */
#ifndef TWICE_HOSTAPI_H
#define TWICE_HOSTAPI_H

#include <stddef.h>

#include <twice/plugin.h>

struct config_plugin;
struct keytmpl;
struct loaded_plugin;
struct plugin_instance;
struct twice_job;
struct buf;

/* Call init() with the plugin's configured settings (and the declared
 * defaults). 0, or -1 with err, one line starting with FILE:LINE: the
 * setting init() blamed with api->setting_error() ("plugin 'x': setting
 * 'y': why", at the setting's line), else "plugin 'x': init failed: " and
 * the last error, else warning, it logged (at the plugin's entry).
 * conf_file: the file to name when the configuration names none. */
int hostapi_init(struct plugin_instance *p, const char *conf_file, char *err, size_t errlen);
/* A close of twiced's descriptors found (fdguard.h) is said, naming the
 * plugin called last, and fn called then (on the thread that found it): the
 * worker asks itself to reopen its log file. Set once, before any plugin
 * call; until then nothing is said. */
void hostapi_on_descriptors_closed(void (*fn)(void));
/* Call fini() if init() succeeded. */
void hostapi_fini(struct plugin_instance *p);

/* Derive the job's key into out from the first there is of: the queue's
 * key template queue_key (NULL when the queue sets none), the plugin's
 * template (key_template or its key setting's value), its derive_key()
 * (keying.h names them). Returns 0, or -1 with j's DLQ verdict set
 * (reason and detail). */
int hostapi_derive_key(const struct plugin_instance *p, const struct keytmpl *queue_key,
                       struct twice_job *j, struct buf *out);

/* The plugin's describe() text for its configured settings cp (defaults
 * for the rest), into buf (cap bytes, NUL-terminated). 1 when it has
 * something to say, 0 when it has no describe(), -1 when describe() found
 * the settings unusable (buf says why). */
int hostapi_describe(const struct loaded_plugin *lp, const struct config_plugin *cp, char *buf,
                     size_t cap);

/* Run handle(); an out-of-range answer counts as TWICE_RETRY with an error,
 * DONE after a refused api->send() as TWICE_REJECT. The messages the run
 * staged stay on j (j->outbox) only when it returns TWICE_DONE. */
twice_status hostapi_handle(const struct plugin_instance *p, struct twice_job *j);

#endif
