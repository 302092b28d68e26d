/*
 * config_parse.c - reading a parsed libconfig tree by the settings table:
 * types, ranges, required and unknown settings, defaults, lists of entries,
 * and freeing what the rows hold. Every setting is handled the same way;
 * what is special about one is its row's check (config_check.c).
 */
#include "config_parse.h"

#include "cnum.h"
#include "config_table.h"

#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* snprintf that may cut: scope texts are labels, a cut one still reads. */
static void __attribute__((format(printf, 3, 4)))
fmt_into(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

/* Whether row r is a member of group path. */
static int
in_group(const struct config_row *r, const char *path)
{
    return strcmp(r->group, path) == 0;
}

/* The path of the group a GROUP or LIST row opens. */
static const char *
sub_path(const struct config_row *r, char out[static 128])
{
    return config_row_path(r, out, 128);
}

/* Every member of grp that no row of group path names is an error: a typo
 * must never be silently ignored. */
static void
check_unknown(struct config_at *at, const char *path)
{
    int n = config_setting_length(at->s);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(at->s, (unsigned) i);
        const char *name = config_setting_name(s);
        const struct config_row *r = config_rows;
        while (name != NULL && r->name != NULL && !(in_group(r, path) && !strcmp(r->name, name))) {
            r++;
        }
        if (name == NULL || r->name != NULL) {
            continue;
        }
        struct config_suggest sg = CONFIG_SUGGEST_INIT(name);
        for (r = config_rows; r->name != NULL; r++) {
            if (in_group(r, path)) {
                config_suggest_offer(&sg, r->name);
            }
        }
        const char *owner = at->sc->owner;
        config_problem(at->x, s, "unknown setting '%s'%s%s%s%s%s", name, owner[0] ? " in " : "",
                       owner, sg.best ? " (did you mean '" : "", sg.best ? sg.best : "",
                       sg.best ? "'?)" : "");
    }
}

/* The setting if it has the wanted type (an integer may be written as a
 * 64-bit one; an empty array "[]" is an empty list); NULL when mistyped
 * (reported). */
static config_setting_t *
typed(struct config_at *at, int type)
{
    int t = config_setting_type(at->s);
    if (t == type || (type == CONFIG_TYPE_INT && t == CONFIG_TYPE_INT64) ||
        (type == CONFIG_TYPE_LIST && t == CONFIG_TYPE_ARRAY &&
         config_setting_length(at->s) == 0)) {
        return at->s;
    }
    config_problem(at->x, at->s, "%s%s: expected %s, got %s", at->sc->pfx, at->row->name,
                   config_kind_name(type), config_kind_name(t));
    return NULL;
}

static void
store_int(void *field, size_t size, long long v)
{
    if (size == sizeof(long) && size != sizeof(int)) {
        *(long *) field = (long) v;
    } else {
        *(int *) field = (int) v;
    }
}

static void
free_str(const struct config_row *r, char *s)
{
    if (r->flags & CONFIG_SECRET) {
        buf_free_secret(s);
    } else {
        free(s);
    }
}

static int
parse_int(struct config_at *at)
{
    const struct config_row *r = at->row;
    if (typed(at, CONFIG_TYPE_INT) == NULL) {
        return -1;
    }
    long long v = config_setting_get_int64(at->s);
    /* a row without a maximum still has its field's: an int keeps 32 bits */
    long long hi = r->field.size == sizeof(int) && r->hi > INT_MAX ? INT_MAX : r->hi;
    if (v < r->lo || v > hi) {
        if (hi == CONFIG_NO_MAX) {
            config_problem(at->x, at->s, "%s%s: %lld is out of range (must be at least %lld)",
                           at->sc->pfx, r->name, v, r->lo);
        } else {
            config_problem(at->x, at->s, "%s%s: %lld is out of range (%lld-%lld)", at->sc->pfx,
                           r->name, v, r->lo, hi);
        }
        return -1;
    }
    store_int(config_field(at), r->field.size, v);
    return 0;
}

/* "512M" into *out bytes: digits, then at most one of K, M, G (either case,
 * 1024-based). 0, or -1 when it is not that or does not fit 63 bits. */
static int
size_read(const char *s, long long *out)
{
    long long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (LLONG_MAX - (*p - '0')) / 10) {
            return -1;
        }
        v = v * 10 + (*p - '0');
    }
    const char *units = "KkMmGg";
    const char *u = *p != '\0' ? strchr(units, *p) : NULL;
    int shift = u != NULL ? 10 * (1 + (int) (u - units) / 2) : 0;
    if (p == s || (*p != '\0' && (u == NULL || p[1] != '\0')) || v > (LLONG_MAX >> shift)) {
        return -1;
    }
    *out = v << shift;
    return 0;
}

/* An amount of memory: an integer of bytes or a string such as "512M"; 0
 * (none) or within the row's range. */
static int
parse_size(struct config_at *at)
{
    const struct config_row *r = at->row;
    int t = config_setting_type(at->s);
    long long v = 0;
    char shown[64];
    if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64) {
        v = config_setting_get_int64(at->s);
    } else if (t != CONFIG_TYPE_STRING) {
        config_problem(at->x, at->s, "%s%s: expected a size (\"512M\") or an integer, got %s",
                       at->sc->pfx, r->name, config_kind_name(t));
        return -1;
    } else if (size_read(config_setting_get_string(at->s), &v) != 0) {
        config_problem(
            at->x, at->s, "%s%s: '%s' is not a size (bytes, or a number with K, M or G: \"512M\")",
            at->sc->pfx, r->name, config_shown(config_setting_get_string(at->s), shown));
        return -1;
    }
    if (v != 0 && (v < r->lo || v > r->hi)) {
        config_problem(at->x, at->s, "%s%s: %lld bytes is out of range (0, or %lldM-%lldG)",
                       at->sc->pfx, r->name, v, r->lo >> 20, r->hi >> 30);
        return -1;
    }
    store_int(config_field(at), r->field.size, v);
    return 0;
}

static int
parse_bool(struct config_at *at)
{
    if (typed(at, CONFIG_TYPE_BOOL) == NULL) {
        return -1;
    }
    store_int(config_field(at), at->row->field.size, config_setting_get_bool(at->s) != 0);
    return 0;
}

/* A string replaces the default; "" is refused, or stored as NULL (unset). */
static int
parse_str(struct config_at *at)
{
    const struct config_row *r = at->row;
    char **field = config_field(at);
    if (typed(at, CONFIG_TYPE_STRING) == NULL) {
        return -1;
    }
    const char *v = config_setting_get_string(at->s);
    char *copy = v[0] == '\0' && (r->flags & CONFIG_UNSET) ? NULL : strdup(v);
    if (copy == NULL && v[0] != '\0') {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    free_str(r, *field);
    *field = copy;
    if (v[0] == '\0' && (r->flags & (CONFIG_REQUIRED | CONFIG_NONEMPTY))) {
        config_problem(at->x, at->s, "%s%s: must not be empty", at->sc->pfx, r->name);
        return -1;
    }
    return 0;
}

/* "error, warn, info or debug" */
static void
choices_text(const struct config_choice *ch, struct buf *b)
{
    for (size_t i = 0; ch[i].name != NULL; i++) {
        buf_printf(b, "%s%s", i == 0 ? "" : ch[i + 1].name == NULL ? " or " : ", ", ch[i].name);
    }
}

static int
parse_enum(struct config_at *at)
{
    const struct config_row *r = at->row;
    char tmp[64];
    if (typed(at, CONFIG_TYPE_STRING) == NULL) {
        return -1;
    }
    const char *v = config_setting_get_string(at->s);
    for (const struct config_choice *ch = r->choices; ch->name != NULL; ch++) {
        if (strcmp(v, ch->name) == 0) {
            store_int(config_field(at), r->field.size, ch->value);
            return 0;
        }
    }
    struct buf use = BUF_INIT;
    choices_text(r->choices, &use);
    config_problem(at->x, at->s, "%s%s: unknown %s '%s' (use %s)", at->sc->pfx, r->name, r->noun,
                   config_shown(v, tmp), buf_str(&use));
    buf_free(&use);
    return -1;
}

/* One string, or a list or an array of them: stored as an array. */
static int
parse_strlist(struct config_at *at)
{
    const struct config_row *r = at->row;
    int t = config_setting_type(at->s), n = 1;
    if (t == CONFIG_TYPE_LIST || t == CONFIG_TYPE_ARRAY) {
        n = config_setting_length(at->s);
    } else if (t != CONFIG_TYPE_STRING) {
        config_problem(at->x, at->s, "%s%s: expected a string or a list of strings, got %s",
                       at->sc->pfx, r->name, config_kind_name(t));
        return -1;
    }
    if (n == 0) {
        config_problem(at->x, at->s, "%s%s: needs at least one %s", at->sc->pfx, r->name, r->noun);
        return -1;
    }
    char ***arr = config_field(at);
    size_t *count = (size_t *) ((char *) at->base + r->count_offset);
    if ((*arr = calloc((size_t) n, sizeof(**arr))) == NULL) {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *e =
            t == CONFIG_TYPE_STRING ? at->s : config_setting_get_elem(at->s, (unsigned) i);
        if (config_setting_type(e) != CONFIG_TYPE_STRING || config_setting_get_string(e)[0] == 0) {
            config_problem(at->x, e, "%s%s: entry %d must be a non-empty string", at->sc->pfx,
                           r->name, i + 1);
            bad = -1;
        } else if (((*arr)[*count] = strdup(config_setting_get_string(e))) == NULL) {
            config_problem(at->x, e, "out of memory");
            bad = -1;
        } else {
            (*count)++;
        }
    }
    return bad;
}

/* The scope of group `name` inside scope in: "alerts.webhook" under
 * "alerts", "the backoff of queue 'jobs'" under an entry. */
static void
group_scope(const struct config_scope *in, const char *name, struct config_scope *out)
{
    memset(out, 0, sizeof(*out));
    if (in->entry) {
        fmt_into(out->owner, sizeof(out->owner), "the %s of %s", name, in->owner);
        fmt_into(out->pfx, sizeof(out->pfx), "%s%s.", in->pfx, name);
    } else {
        fmt_into(out->owner, sizeof(out->owner), "%s%s%s", in->owner, in->owner[0] ? "." : "",
                 name);
        fmt_into(out->pfx, sizeof(out->pfx), "%s.", out->owner);
    }
}

static int
parse_group(struct config_at *at)
{
    char path[128];
    struct config_scope sc;
    if (typed(at, CONFIG_TYPE_GROUP) == NULL) {
        return -1;
    }
    group_scope(at->sc, at->row->name, &sc);
    struct config_at in = *at;
    in.grp = at->s;
    in.sc = &sc;
    config_parse_members(&in, sub_path(at->row, path));
    return 0;
}

/* The scope of a list's entry: "queue 3" at the top level (its position),
 * "route 2 of queue 'jobs'" inside an entry (its count so far). */
static void
entry_scope(const struct config_at *at, int pos, size_t count, struct config_scope *out)
{
    const struct config_scope *in = at->sc;
    memset(out, 0, sizeof(*out));
    out->entry = 1;
    out->noun = at->row->noun;
    if (in->entry) {
        fmt_into(out->owner, sizeof(out->owner), "%s %zu of %s", at->row->noun, count, in->owner);
        fmt_into(out->pfx, sizeof(out->pfx), "%s%s %zu: ", in->pfx, at->row->noun, count);
    } else {
        fmt_into(out->owner, sizeof(out->owner), "%s %d", at->row->noun, pos);
        fmt_into(out->pfx, sizeof(out->pfx), "%s: ", out->owner);
    }
}

static void
parse_entry(struct config_at *at, const config_setting_t *e, int pos, void *entry, size_t n)
{
    const struct config_row *r = at->row;
    char path[128];
    struct config_scope sc;
    entry_scope(at, pos, n, &sc);
    struct config_at in = {at->x,  at->c, NULL,    (config_setting_t *) e, e, &sc,
                           at->sc, entry, at->base};
    if (config_defaults(sub_path(r, path), entry) != 0) {
        config_problem(at->x, e, "out of memory");
        return;
    }
    if (r->entry_begin != NULL) {
        r->entry_begin(&in);
    }
    config_parse_members(&in, path);
    if (r->entry_check != NULL) {
        r->entry_check(&in);
    }
}

static int
parse_list(struct config_at *at)
{
    const struct config_row *r = at->row;
    if (typed(at, CONFIG_TYPE_LIST) == NULL) {
        return -1;
    }
    int n = config_setting_length(at->s);
    if (n == 0) {
        return 0;
    }
    char **arr = config_field(at);
    size_t *count = (size_t *) ((char *) at->base + r->count_offset);
    if ((*arr = calloc((size_t) n, r->entry_size)) == NULL) {
        config_problem(at->x, at->s, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(at->s, (unsigned) i);
        if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
            config_problem(at->x, e, "%s%s: entry %d: expected a group, got %s", at->sc->pfx,
                           r->name, i + 1, config_kind_name(config_setting_type(e)));
            continue;
        }
        void *entry = *arr + *count * r->entry_size;
        (*count)++; /* counted first: config_free frees an entry however far it got */
        parse_entry(at, e, i + 1, entry, *count);
    }
    return 0;
}

/* A setting that is not there: report it if required (for a group, the
 * required settings it would hold, at the group around it). */
static void
parse_absent(struct config_at *at)
{
    const struct config_row *r = at->row;
    char path[128];
    if ((r->flags & CONFIG_REQUIRED) && r->kind == CONFIG_GROUP) {
        struct config_scope sc;
        group_scope(at->sc, r->name, &sc);
        sub_path(r, path);
        for (const struct config_row *m = config_rows; m->name != NULL; m++) {
            if (in_group(m, path) && (m->flags & CONFIG_REQUIRED)) {
                config_problem(at->x, at->grp, "%s: missing required setting '%s'", sc.owner,
                               m->name);
            }
        }
    } else if (r->flags & CONFIG_REQUIRED) {
        config_problem(at->x, at->grp, "%s: missing required setting '%s'", at->sc->owner,
                       r->name);
    }
    if ((r->flags & CONFIG_ABSENT) && r->check != NULL) {
        r->check(at);
    }
}

/* Read one row's setting of group at->grp into at->base. 0 when it was
 * there, well formed and passed its check. */
static int
parse_row(const struct config_at *in, const struct config_row *r)
{
    struct config_at at = *in;
    at.row = r;
    at.s = config_setting_get_member(in->grp, r->name);
    if (at.s == NULL) {
        parse_absent(&at);
        return -1;
    }
    int rc = -1;
    switch (r->kind) {
    case CONFIG_INT:
        rc = parse_int(&at);
        break;
    case CONFIG_STR:
        rc = parse_str(&at);
        if (rc == 0 && *(char **) config_field(&at) == NULL) {
            return 0; /* "" for not set: nothing to check */
        }
        break;
    case CONFIG_ENUM:
        rc = parse_enum(&at);
        break;
    case CONFIG_BOOL:
        rc = parse_bool(&at);
        break;
    case CONFIG_SIZE:
        rc = parse_size(&at);
        break;
    case CONFIG_STRLIST:
        rc = parse_strlist(&at);
        break;
    case CONFIG_GROUP:
        rc = parse_group(&at);
        break;
    case CONFIG_LIST:
        rc = parse_list(&at);
        break;
    case CONFIG_CUSTOM:
        r->parse(&at);
        return 0;
    }
    if (rc == 0 && r->check != NULL) {
        rc = r->check(&at);
    }
    return rc;
}

void
config_parse_members(struct config_at *at, const char *path)
{
    const struct config_row *r;
    for (r = config_rows; r->name != NULL; r++) {
        if (in_group(r, path) && (r->flags & CONFIG_NAME) && parse_row(at, r) == 0) {
            /* its check passed: a name of letters, digits, '_', '.' and '-' */
            char *name = *(char **) ((char *) at->base + r->field.offset);
            fmt_into(at->sc->owner, sizeof(at->sc->owner), "%s '%s'", at->sc->noun, name);
            fmt_into(at->sc->pfx, sizeof(at->sc->pfx), "%s: ", at->sc->owner);
        }
    }
    check_unknown(at, path);
    for (r = config_rows; r->name != NULL; r++) {
        if (in_group(r, path) && !(r->flags & CONFIG_NAME)) {
            parse_row(at, r);
        }
    }
}

int
config_defaults(const char *path, void *base)
{
    char sub[128];
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        if (!in_group(r, path)) {
            continue;
        }
        void *field = (char *) base + r->field.offset;
        if (r->kind == CONFIG_INT || r->kind == CONFIG_ENUM || r->kind == CONFIG_BOOL ||
            r->kind == CONFIG_SIZE) {
            store_int(field, r->field.size, r->def);
        } else if (r->kind == CONFIG_STR && r->def_str != NULL) {
            if ((*(char **) field = strdup(r->def_str)) == NULL) {
                return -1;
            }
        } else if (r->kind == CONFIG_GROUP && config_defaults(sub_path(r, sub), base) != 0) {
            return -1;
        }
    }
    return 0;
}

void
config_free_fields(const char *path, void *base)
{
    char sub[128];
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        if (!in_group(r, path)) {
            continue;
        }
        void *field = (char *) base + r->field.offset;
        size_t *count = (size_t *) ((char *) base + r->count_offset);
        if (r->kind == CONFIG_STR) {
            free_str(r, *(char **) field);
        } else if (r->kind == CONFIG_STRLIST) {
            for (size_t i = 0; i < *count; i++) {
                free_str(r, (*(char ***) field)[i]);
            }
            free(*(char ***) field);
        } else if (r->kind == CONFIG_GROUP) {
            config_free_fields(sub_path(r, sub), base);
        } else if (r->kind == CONFIG_LIST) {
            char *arr = *(char **) field;
            for (size_t i = 0; i < *count; i++) {
                config_free_fields(sub_path(r, sub), arr + i * r->entry_size);
                if (r->free != NULL) {
                    r->free(arr + i * r->entry_size);
                }
            }
            free(arr);
        } else if (r->kind == CONFIG_CUSTOM) {
            r->free(base);
        }
    }
}
