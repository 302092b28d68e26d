/*
 * plugdecl.h - what a plugin's descriptor must declare beyond the ABI load
 * rule: a valid name, known flags, a handle(), a settings declaration a
 * configuration can use and exactly one key source that works. Pure (libc
 * and yajl); the daemon's loader (plugin/loader.c) and the SDK's mock host
 * share it, so a plugin the mock accepts is one twiced loads. Not the load
 * rule itself (magic, versions, size) nor the settings a configuration
 * gives, except the one part of the load rule both must also agree on:
 * how large a descriptor of each minor is at least (plugdecl_min_size).
 */
#ifndef TWICE_PLUGDECL_H
#define TWICE_PLUGDECL_H

#include <stddef.h>
#include <twice/plugin.h>

struct keytmpl;

/* The longest plugin and setting name. */
#define PLUGDECL_NAME_MAX 64

/* The smallest descriptor of ABI minor `minor` (not newer than the
 * header's): the end of its last field. Minors only append, so a plugin
 * whose size covers its minor's fields has every one of them. */
size_t plugdecl_min_size(unsigned minor);

/* The key setting of a descriptor that passed the load rule: its 1.1
 * field, NULL for a 1.0 descriptor (which has no such field). */
const char *plugdecl_key_setting(const twice_plugin *d);

/*
 * Check d's fields (d passed the load rule). 0 with *tmpl the compiled
 * key_template (the caller's; NULL for derive_key and key_setting), or -1
 * with err saying what is wrong, without the file's name: "plugin name
 * \"Hello\" is not 1-64 characters of [a-z0-9_-]", "setting 'x' has a
 * default that is not of its type". Plugin text in err is escaped.
 */
int plugdecl_check(const twice_plugin *d, struct keytmpl **tmpl, char *err, size_t errlen);

#endif
