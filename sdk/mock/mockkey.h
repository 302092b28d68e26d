/*
 * mockkey.h - a fake job's idempotency key, derived by the daemon's own
 * code (core/text/keytmpl.c, carried inside libtwice-mock.a).
 */
#ifndef TWICE_MOCKKEY_H
#define TWICE_MOCKKEY_H

#include <stddef.h>

#include <twice/plugin.h>

struct keytmpl;
struct twice_job;
struct twice_mock;

/* The descriptor's key_setting, NULL before ABI 1.1 (as the loader reads
 * it). */
const char *mockkey_setting(const twice_plugin *d);

/* For a plugin with a key_setting: compile the setting's given value (or
 * its declared default) into m->tmpl, as the host's loader does. 0 (also
 * when neither is there), or -1 with m->error. */
int mockkey_compile_setting(struct twice_mock *m);

/* Derive j's key with its mock's queue key, else the plugin's template,
 * else its derive_key(), as the host does: 0 and j->key, or -1 with
 * j->error and j->reason set. */
int mockkey_derive(struct twice_job *j);

#endif
