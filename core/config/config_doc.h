/*
 * config_doc.h - twice.conf(5)'s lists of settings, written from the
 * settings table at build time (twice-config-doc), so the manual cannot
 * drift from the code. Not the prose around them: that is the template,
 * packaging/man/twice.conf.5.in.
 */
#ifndef TWICE_CONFIG_DOC_H
#define TWICE_CONFIG_DOC_H

#include <stddef.h>
#include <stdio.h>

/*
 * Copy the template `in` to `out`, replacing:
 *   - each line `.\" @settings GROUP` by the entries (.TP) of the settings
 *     of GROUP ("top" for the top level, "log", "queues"...) and of its
 *     groups and lists that have no line of their own; in a list's section
 *     names are relative to it ("backoff.base" under queues), elsewhere
 *     full ("alerts.webhook.url");
 *   - @CONFIG_MAX_MIB@, @CONFIG_MAX_ENTRIES@, @CONFIG_MAX_SETTINGS@,
 *     @CONFIG_MAX_INCLUDES@ and @DIAG_MAX_LINES@ by those limits.
 * Every setting must land in exactly one section. Returns 0, or -1 with
 * the reason in err (an unknown group, a setting in no section, a line too
 * long, a write error).
 */
int config_doc_man(FILE *in, FILE *out, char *err, size_t errlen);

/* The name twice.conf(5) lists the setting at row path under: relative to
 * the list it is in when that list has its own section (section names the
 * list: "queues"), else the full path. Written into out. */
const char *config_doc_name(const char *path, const char *section, char *out, size_t cap);

#endif
