/*
 * config_row.h - what one row of the settings table says about a setting:
 * its group, name, type, range, default, where it is stored, its special
 * check and its documentation. The rows are in config_table.c; reading a
 * file by them is config_parse.c's, writing twice.conf(5) config_doc.c's.
 */
#ifndef TWICE_CONFIG_ROW_H
#define TWICE_CONFIG_ROW_H

#include <limits.h>
#include <stddef.h>

enum config_kind {
    CONFIG_INT,     /* an integer in lo..hi, stored in an int or a long (by size) */
    CONFIG_STR,     /* a string, copied (char *) */
    CONFIG_ENUM,    /* one of `choices`, written as a string, stored in an int */
    CONFIG_STRLIST, /* one string or a list of them: char ** and a size_t count */
    CONFIG_GROUP,   /* a group whose members are the rows of group "PATH" */
    CONFIG_LIST,    /* a list of groups: an array of entry_size structs and a size_t count */
    CONFIG_CUSTOM,  /* read and freed by the row's parse and free functions */
    CONFIG_BOOL,    /* true or false, stored in an int (def: 0 or 1) */
    CONFIG_SIZE     /* bytes in a long: an integer or "512M" (K, M, G: 1024-based); 0 or lo..hi */
};

/* flags */
#define CONFIG_REQUIRED 0x01 /* "OWNER: missing required setting 'NAME'"; a string is not "" */
#define CONFIG_NONEMPTY 0x02 /* a string must not be "" */
#define CONFIG_UNSET    0x04 /* a string "" means not set: stored as NULL */
#define CONFIG_SECRET   0x08 /* never quoted in a message; wiped when freed */
#define CONFIG_NAME     0x10 /* names its list entry in messages ("queue 'jobs'"): read first */
#define CONFIG_ABSENT   0x20 /* check is called when the setting is absent too */

#define CONFIG_NO_MAX LLONG_MAX /* a range with only a lower bound */

/* A value of a CONFIG_ENUM setting; a list ends with a NULL name. */
struct config_choice {
    const char *name;
    int value;
};

/* Where a row's value lives: a field of the group's struct (struct config,
 * or the entry's struct inside a list). */
struct config_field {
    size_t offset;
    size_t size;
};

struct config_at; /* a setting being read or checked: config_ctx.h */

/* A row's special check, called once its value is stored (see CONFIG_ABSENT).
 * Returns 0, or -1 when it reported a problem. */
typedef int config_check_fn(struct config_at *at);
/* A CONFIG_CUSTOM row: read the setting (type included) into its field. */
typedef void config_parse_fn(struct config_at *at);
/* Free what a CONFIG_CUSTOM row or a list entry holds beyond its rows. */
typedef void config_free_fn(void *base);
/* A list entry before its rows are read (at->s is the entry's group). */
typedef void config_entry_fn(struct config_at *at);

struct config_row {
    const char *group; /* "" (top level), "log", "alerts.webhook", "queues" (in each entry) */
    const char *name;
    enum config_kind kind;
    unsigned flags;
    struct config_field field;
    long long lo, hi;    /* CONFIG_INT, CONFIG_SIZE: the range; CONFIG_STR: its length when
                            hi > 0 (for the row's check and the manual); CONFIG_LIST: lo, the
                            fewest entries */
    long long def;       /* CONFIG_INT, CONFIG_SIZE and CONFIG_ENUM: the default */
    const char *def_str; /* CONFIG_STR: the default (copied); NULL: not set */
    const struct config_choice *choices; /* CONFIG_ENUM */
    const char *noun;                    /* ENUM: "unknown NOUN 'x'"; STRLIST: "at least one NOUN";
                                            LIST of top-level entries: "NOUN 'name'" in messages */
    config_check_fn *check;
    config_parse_fn *parse; /* CONFIG_CUSTOM */
    config_free_fn *free;   /* CONFIG_CUSTOM; CONFIG_LIST: an entry's other fields */
    /* CONFIG_LIST and CONFIG_STRLIST */
    size_t count_offset;          /* the size_t count beside the array */
    size_t entry_size;            /* CONFIG_LIST */
    config_entry_fn *entry_begin; /* CONFIG_LIST: line numbers and such, before the rows */
    config_check_fn *entry_check; /* CONFIG_LIST: checks across an entry's rows, after them */
    const char *doc_type;         /* CONFIG_CUSTOM: its type in words */
    const char *doc_default;      /* the default in words, when it is not a literal */
    const char *doc;              /* one line for twice.conf(5) */
};

#endif
