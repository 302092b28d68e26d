/*
 * hostapi.h - the host side of the plugin ABI: the function table handed to
 * every plugin, and the only places core calls into plugin code (init,
 * derive_key, handle, fini). Calls are bracketed so that a plugin's log
 * lines without a job still carry the plugin's name.
 */
#ifndef TWICE_HOSTAPI_H
#define TWICE_HOSTAPI_H

#include <stddef.h>

#include <twice/plugin.h>

struct plugin_instance;
struct twice_job;
struct buf;

/* Call init() with the plugin's configured settings (and the declared
 * defaults). 0, or -1 with err ("plugin 'x': init failed: " and the last
 * error, else warning, the plugin logged while in init()). */
int hostapi_init(struct plugin_instance *p, char *err, size_t errlen);
/* Call fini() if init() succeeded. */
void hostapi_fini(struct plugin_instance *p);

/* Derive the job's key with the plugin's derive_key() or template, into
 * out. Returns 0, or -1 with j's DLQ verdict set (reason and detail). */
int hostapi_derive_key(const struct plugin_instance *p, struct twice_job *j, struct buf *out);

/* Run handle(); an out-of-range answer counts as TWICE_RETRY with an error. */
twice_status hostapi_handle(const struct plugin_instance *p, struct twice_job *j);

#endif
