/*
 * plugdecl.c - a plugin descriptor's fields judged as twiced judges them
 * (plugdecl.h): the daemon's loader and the SDK's mock host call this one
 * function, so the two never disagree on what loads.
 */
#include "plugdecl.h"

#include "ascii.h"
#include "buf.h"
#include "escape.h"
#include "keytmpl.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *) 0)->field))

/* The smallest descriptor of each minor. A new minor adds one line here. */
#define MIN_SIZE_1_0 FIELD_END(twice_plugin, derive_key)
#define MIN_SIZE_1_1 FIELD_END(twice_plugin, describe)
#define MIN_SIZE_1_2 MIN_SIZE_1_1 /* 1.2 added to the host's table only */
static const size_t min_size[] = {MIN_SIZE_1_0, MIN_SIZE_1_1, MIN_SIZE_1_2};

_Static_assert(sizeof(min_size) / sizeof(min_size[0]) == TWICE_ABI_MINOR + 1,
               "min_size needs one entry per ABI minor");
_Static_assert(MIN_SIZE_1_1 == sizeof(twice_plugin), "the 1.1 descriptor ends with describe");

size_t
plugdecl_min_size(unsigned minor)
{
    return min_size[minor <= TWICE_ABI_MINOR ? minor : TWICE_ABI_MINOR];
}

const char *
plugdecl_key_setting(const twice_plugin *d)
{
    return d->abi_minor >= 1 ? d->key_setting : NULL;
}

/* Plugin-supplied text, escaped and cut short, for an error message. */
static const char *
shown(struct buf *b, const char *s)
{
    buf_reset(b);
    escape_text(b, s, strnlen(s, PLUGDECL_NAME_MAX));
    return b->failed ? "?" : buf_str(b);
}

static int
valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PLUGDECL_NAME_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!ascii_islower((unsigned char) s[i]) && !(s[i] >= '0' && s[i] <= '9') && s[i] != '_' &&
            s[i] != '-') {
            return 0;
        }
    }
    return 1;
}

/* Does a declared default read as its type? */
static int
valid_default(const twice_setting *s)
{
    char *end;

    if (s->default_value == NULL || s->type == TWICE_SETTING_STRING) {
        return 1;
    }
    if (s->type == TWICE_SETTING_BOOL) {
        return strcmp(s->default_value, "true") == 0 || strcmp(s->default_value, "false") == 0;
    }
    errno = 0;
    (void) strtoll(s->default_value, &end, 10);
    return errno == 0 && end != s->default_value && *end == '\0';
}

/* What is wrong with the i-th declared setting s, or NULL. */
static const char *
setting_fault(const twice_setting *decl, size_t i)
{
    const twice_setting *s = &decl[i];
    if (i >= 256) {
        return "more than 256 settings (is the array's NULL-name terminator missing?)";
    }
    if (!ascii_isalpha((unsigned char) s->name[0]) || strlen(s->name) > PLUGDECL_NAME_MAX ||
        strspn(s->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_-") != strlen(s->name)) {
        return "is not a valid setting name";
    }
    if (s->type != TWICE_SETTING_STRING && s->type != TWICE_SETTING_INT &&
        s->type != TWICE_SETTING_BOOL) {
        return "has an unknown type";
    }
    if (!valid_default(s)) {
        return "has a default that is not of its type";
    }
    if (s->required && s->default_value != NULL) {
        return "is required and has a default (the default could never apply)";
    }
    for (size_t j = 0; j < i; j++) {
        if (strcmp(decl[j].name, s->name) == 0) {
            return "is declared twice";
        }
    }
    return NULL;
}

/*
 * The settings declaration: names a configuration can spell (libconfig
 * names: a letter, then letters, digits, '_' or '-'), known types, no
 * duplicates, defaults of the declared type, no default on a required one
 * (it could never apply). Capped at 256 entries, so a missing terminator
 * fails instead of wandering through memory for long.
 */
static int
check_settings_decl(const twice_setting *decl, struct buf *tmp, char *err, size_t errlen)
{
    for (size_t i = 0; decl != NULL && decl[i].name != NULL; i++) {
        const char *why = setting_fault(decl, i);
        if (why != NULL) {
            snprintf(err, errlen, "setting '%s' %s", shown(tmp, decl[i].name), why);
            return -1;
        }
    }
    return 0;
}

/* A template of the plugin's (its key_template, or its key setting's
 * default) compiled, or err "WHAT \"TEXT\": why". */
static int
compile_template(const char *what, const char *text, struct keytmpl **tmpl, struct buf *tmp,
                 char *err, size_t errlen)
{
    char why[256];
    if (keytmpl_compile(text, tmpl, why, sizeof(why)) == 0) {
        return 0;
    }
    buf_reset(tmp);
    escape_text(tmp, text, strnlen(text, 2 * TWICE_KEY_MAX));
    snprintf(err, errlen, "%s \"%s\": %s", what, buf_str(tmp), why);
    return -1;
}

/* key_setting names a declared string setting; its default, if any, is a
 * template that compiles (a bad default is the plugin's bug, not the
 * configuration's). */
static int
check_key_setting(const twice_plugin *d, const char *name, struct buf *tmp, char *err,
                  size_t errlen)
{
    const twice_setting *s = NULL;
    for (size_t i = 0; d->settings != NULL && d->settings[i].name != NULL && s == NULL; i++) {
        s = strcmp(d->settings[i].name, name) == 0 ? &d->settings[i] : NULL;
    }
    if (s == NULL || s->type != TWICE_SETTING_STRING) {
        snprintf(err, errlen, "key_setting '%s' is not one of its declared string settings",
                 shown(tmp, name));
        return -1;
    }
    struct keytmpl *t = NULL;
    char what[128];
    snprintf(what, sizeof(what), "the default of key setting '%s'", s->name);
    if (s->default_value != NULL &&
        compile_template(what, s->default_value, &t, tmp, err, errlen) != 0) {
        return -1;
    }
    keytmpl_free(t);
    return 0;
}

/* The key: exactly one of a template that compiles, derive_key and a
 * key_setting naming a string setting. */
static int
check_key(const twice_plugin *d, struct keytmpl **tmpl, struct buf *tmp, char *err, size_t errlen)
{
    const char *setting = plugdecl_key_setting(d);
    int n = (d->key_template != NULL) + (d->derive_key != NULL) + (setting != NULL);

    if (n != 1) {
        snprintf(err, errlen,
                 n > 1 ? "set exactly one of key_template, derive_key and key_setting"
                       : "descriptor sets none of key_template, derive_key and key_setting");
        return -1;
    }
    if (setting != NULL) {
        return check_key_setting(d, setting, tmp, err, errlen);
    }
    if (d->derive_key != NULL) {
        return 0;
    }
    return compile_template("key_template", d->key_template, tmpl, tmp, err, errlen);
}

int
plugdecl_check(const twice_plugin *d, struct keytmpl **tmpl, char *err, size_t errlen)
{
    struct buf tmp = BUF_INIT;
    int rc = -1;

    *tmpl = NULL;
    if (d->name == NULL || !valid_name(d->name)) {
        snprintf(err, errlen, "plugin name \"%s\" is not 1-%d characters of [a-z0-9_-]",
                 d->name != NULL ? shown(&tmp, d->name) : "", PLUGDECL_NAME_MAX);
    } else if ((d->flags & ~(uint32_t) TWICE_FLAG_TRANSACTIONAL) != 0) {
        snprintf(err, errlen, "unknown flags 0x%x in the descriptor",
                 (unsigned) (d->flags & ~(uint32_t) TWICE_FLAG_TRANSACTIONAL));
    } else if (d->handle == NULL) {
        snprintf(err, errlen, "descriptor has no handle function");
    } else if (check_settings_decl(d->settings, &tmp, err, errlen) == 0 &&
               check_key(d, tmpl, &tmp, err, errlen) == 0) {
        rc = 0;
    }
    if (rc != 0) {
        keytmpl_free(*tmpl);
        *tmpl = NULL;
    }
    buf_free(&tmp);
    return rc;
}
