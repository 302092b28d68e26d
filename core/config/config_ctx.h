/*
 * config_ctx.h - inside the config layer: what the reading of a file
 * (config_parse.c), the special checks (config_check.c) and the checks of
 * the text (config_text.c) share: where problems go, how messages name a
 * setting and quote a value, and the setting being read. Not for other
 * layers: they see config.h only.
 */
#ifndef TWICE_CONFIG_CTX_H
#define TWICE_CONFIG_CTX_H

#include "buf.h"
#include "config_row.h"
#include "diag.h"

#include <libconfig.h>

struct config;

/* Validation state: where problems go and how many there were. */
struct config_ctx {
    const char *file; /* the configuration's path: for settings without a file of their own */
    const char *dir;  /* its directory, absolute: @include and plugin_dir are relative to it */
    struct diag *d;
    int errors;
};

/* How messages name a group: "unknown setting 'x' in OWNER", "PFXname: ...". */
struct config_scope {
    char owner[160];  /* "queue 'jobs'", "log"; "" at the top level */
    char pfx[176];    /* "queue 'jobs': ", "log."; "" at the top level */
    int entry;        /* an entry of a list: its groups are "the backoff of OWNER" */
    const char *noun; /* an entry: "queue", for "queue 'jobs'" once its name is known */
};

/* One setting being read or checked, and everything around it. */
struct config_at {
    struct config_ctx *x;
    struct config *c;                  /* the configuration being built */
    const struct config_row *row;      /* NULL for a list entry as a whole */
    config_setting_t *s;               /* the setting (the entry's group); NULL when absent */
    const config_setting_t *grp;       /* the group s is (or would be) in */
    struct config_scope *sc;           /* how messages name grp */
    const struct config_scope *parent; /* the enclosing entry's scope (a route's queue) */
    void *base;                        /* the struct the row's field is in */
    void *parent_base;                 /* the enclosing list entry (a route's queue), or NULL */
};

/* The row's field in at->base. */
void *config_field(const struct config_at *at);

/* Record "FILE:LINE: message" at s's file and line (the bare file when s is
 * NULL or the root). Messages never quote a secret value, only its name. */
void config_problem(struct config_ctx *x, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same at a file libconfig names (NULL: the main one) and a line. */
void config_problem_at(struct config_ctx *x, const char *sfile, int line, const char *msg);
/* The path problems give the file of an @include name (or the main file). */
void config_path_of(struct config_ctx *x, const char *sfile, struct buf *path);
/* The file a setting was read from, named as problems name it; owned, NULL
 * on ENOMEM. */
char *config_source_path(struct config_ctx *x, const config_setting_t *s);

/* The most bytes of a value config_shown writes before "...". */
#define CONFIG_SHOWN_MAX 56

/* A user-written value made safe to quote in a one-line message: escaped as
 * escape_text does (control bytes, C1 controls such as U+0085 NEL and U+009B
 * CSI, U+2028/U+2029 and bytes that are not UTF-8: a name can neither break
 * the FILE:LINE line nor drive a terminal), and cut whole characters after
 * CONFIG_SHOWN_MAX bytes with "...". Returns out. */
const char *config_shown(const char *s, char out[static 64]);
/* "an integer", "a group"... for a libconfig type. */
const char *config_kind_name(int type);
/* For "did you mean": the closest candidate offered so far within two
 * edits (and fewer edits than the candidate has bytes, so "ab" does not
 * suggest "to"); the first of equals wins. */
struct config_suggest {
    const char *name;
    const char *best;
    int dist;
};
#define CONFIG_SUGGEST_INIT(n)                                                                    \
    {                                                                                             \
        (n), NULL, 3                                                                              \
    }
void config_suggest_offer(struct config_suggest *sg, const char *cand);

/* dir joined with path (path itself when absolute). Caller frees. */
char *config_join_path(const char *dir, const char *path);
int config_has_prefix(const char *s, const char *prefix);
int config_has_suffix(const char *s, const char *suffix);

#endif
