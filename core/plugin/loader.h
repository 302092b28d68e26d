/*
 * loader.h - loading handler plugins: dlopen, the ABI load rule, the
 * descriptor's sanity, its key template and its declared settings.
 *
 * Plugins are opened with RTLD_NOW|RTLD_LOCAL and never closed (no dlclose:
 * code may still run, and a new generation is a new process anyway). Only
 * worker and probe processes call this; the master never loads plugin code.
 * Refusals name the file and both ABI versions:
 * "x.so: built for ABI 2.3, host supports 1.0-1.0".
 */
#ifndef TWICE_LOADER_H
#define TWICE_LOADER_H

#include <stddef.h>

#include <twice/plugin.h>

struct config_plugin;
struct diag;
struct keytmpl;

/* Where a plugin's keys come from (a queue's own `key` overrides any). */
enum loader_key {
    LOADER_KEY_TEMPLATE, /* the descriptor's key_template */
    LOADER_KEY_SETTING,  /* the value of the setting the descriptor's key_setting names */
    LOADER_KEY_DERIVE,   /* the plugin's derive_key() */
    LOADER_KEY_NONE      /* key_setting's setting is not given: every queue must set `key` */
};

struct loaded_plugin {
    char *path;               /* as configured */
    const twice_plugin *desc; /* inside the plugin; valid forever (never dlclose'd) */
    enum loader_key key;      /* LOADER_KEY_NONE until loader_check_settings, with key_setting */
    struct keytmpl *tmpl;     /* the compiled key template; NULL with derive_key or none */
    const char *key_text;     /* its text: borrowed from the descriptor or the configuration */
    const char *key_file;     /* LOADER_KEY_SETTING: where the setting is written (borrowed), */
    int key_line;             /* or the declared default's plugin entry */
    void *state;              /* from init() */
    int initialized;
};

/*
 * Refuse a file that someone other than root or us could replace: the file
 * or any directory on its path writable by group or others (sticky
 * directories such as /tmp excepted, except the file's own), or owned by a
 * user other than root and our effective user. Symlinks are judged by the
 * directories that hold them as well as by their targets. 0, or -1 with err
 * ("plugin /x/y.so: directory /x is writable by others (chmod o-w /x)").
 */
int loader_check_path(const char *path, char *err, size_t errlen);

/*
 * loader_check_path, then open the file the path resolves to (read-only,
 * close-on-exec): the master does this when it makes a generation, and the
 * generation's probe and workers load the plugin from that descriptor
 * (loader_open_fd), so a worker respawned later runs the bytes its
 * generation checked, whatever is on disk by then. 0 and *fd (the caller's
 * to close), or -1 with err.
 */
int loader_file_open(const char *path, int *fd, char *err, size_t errlen);

/*
 * As loader_open, for a file opened by loader_file_open (path is the
 * configured one, for messages; its checks were done then). Maps the file by
 * its real path while that is still the same file, else the descriptor's own
 * bytes through /proc/self/fd; *replaced (may be NULL) is 1 in that case, so
 * the caller can say so. fd stays open (the caller's).
 */
int loader_open_fd(const char *path, int fd, struct loaded_plugin *out, int *replaced, char *err,
                   size_t errlen);

/*
 * Check the path, dlopen, find the entry point, apply the load rule, check
 * the descriptor (name, handle present, key_template compiles or derive_key
 * set). 0 and *out filled (loader_release frees what is ours), or -1 with
 * err starting with the file name.
 */
int loader_open(const char *path, struct loaded_plugin *out, char *err, size_t errlen);

/*
 * Check a configured plugin's settings against the descriptor's
 * declaration: unknown names, wrong types, missing required ones. Adds
 * "FILE:LINE: plugin 'NAME': ..." lines to d, FILE being where each
 * setting is written (file when cp does not say); returns the count added.
 * When all is well and the plugin has a key_setting, its value (or the
 * declared default) is compiled into p->tmpl, a bad template reported at
 * the setting's line; not given, p->key stays LOADER_KEY_NONE. p keeps
 * pointers into cp: cp must outlive it.
 */
int loader_check_settings(struct loaded_plugin *p, const struct config_plugin *cp,
                          const char *file, struct diag *d);

/* The descriptor's 1.1 fields, NULL for a plugin built for ABI 1.0 (whose
 * descriptor ends before them: they are never read there). */
const char *loader_key_setting(const twice_plugin *d);
typedef int (*loader_describe_fn)(const twice_api *, const twice_settings *, char *, size_t);
loader_describe_fn loader_describe(const twice_plugin *d);

/* "plugin template", "plugin setting 'key'", "derive_key", "none" (the
 * setting in the caller's buffer). */
const char *loader_key_source(const struct loaded_plugin *p, char *buf, size_t cap);

/* Our parts of a loaded plugin (not the mapping, which stays). */
void loader_release(struct loaded_plugin *p);

/* The host's supported ABI as "1.0-1.0" text and the load-rule decision,
 * exposed for unit tests: 0 when acceptable, else -1 with err. */
int loader_check_descriptor(const char *path, const twice_plugin *d, char *err, size_t errlen);

#endif
