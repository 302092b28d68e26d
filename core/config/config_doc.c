/*
 * config_doc.c - twice.conf(5)'s lists of settings in troff, from the rows
 * of the settings table: name, description, type, range and default, as
 * config_parse.c applies them. Not the daemon's business: only the build
 * (twice-config-doc) and the tests call it.
 */
#include "config_doc.h"

#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "config_table.h"
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECTIONS 32
#define LINE_MAX_LEN 1024

/* What the template asks for, and which rows were written. */
struct doc {
    char sections[MAX_SECTIONS][64]; /* the groups of the @settings lines */
    size_t nsections;
    unsigned char *written; /* per row */
    char *err;
    size_t errlen;
};

static int __attribute__((format(printf, 2, 3))) doc_fail(struct doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cnum_vsnprintf(doc->err, doc->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* "top" is the top level's group, "". */
static const char *
group_of(const char *section)
{
    return strcmp(section, "top") == 0 ? "" : section;
}

static int
has_section(const struct doc *doc, const char *path)
{
    for (size_t i = 0; i < doc->nsections; i++) {
        if (strcmp(group_of(doc->sections[i]), path) == 0) {
            return 1;
        }
    }
    return 0;
}

const char *
config_doc_name(const char *path, const char *section, char *out, size_t cap)
{
    const struct config_row *list = config_row_find(section);
    size_t n = strlen(section);
    if (list != NULL && list->kind == CONFIG_LIST && strncmp(path, section, n) == 0 &&
        path[n] == '.') {
        path += n + 1;
    }
    snprintf(out, cap, "%s", path);
    return out;
}

/* Text for troff: a backslash is \e, a line never starts with a control
 * character, and each sentence starts a line (troff's sentence spacing). */
static void
troff_text(struct buf *b, const char *s)
{
    int bol = 1;
    for (char prev = '\0'; *s != '\0'; prev = *s++) {
        if (bol && (*s == '.' || *s == '\'')) {
            buf_puts(b, "\\&");
        }
        bol = 0;
        if (*s == '\\') {
            buf_puts(b, "\\e");
        } else if (*s == ' ' && prev == '.' && s[1] >= 'A' && s[1] <= 'Z') {
            buf_putc(b, '\n');
            bol = 1;
        } else {
            buf_putc(b, *s);
        }
    }
}

static void
put_range(struct buf *b, const struct config_row *r)
{
    if (r->kind == CONFIG_INT && r->hi == CONFIG_NO_MAX) {
        buf_printf(b, ", at least %lld", r->lo);
    } else if (r->kind == CONFIG_INT) {
        buf_printf(b, ", %lld\\(en%lld", r->lo, r->hi);
    } else if (r->kind == CONFIG_SIZE) {
        buf_printf(b, ", 0 or %lldM\\(en%lldG", r->lo >> 20, r->hi >> 30);
    } else if (r->kind == CONFIG_STR && r->hi > 0) {
        buf_printf(b, " of %lld\\(en%lld bytes", r->lo, r->hi);
    } else if (r->kind == CONFIG_LIST && r->lo > 0) {
        buf_printf(b, ", at least %lld", r->lo);
    }
}

/* "An integer, 1\(en256; default 2." and the like. */
static void
put_facts(struct buf *b, const struct config_row *r)
{
    static const char *const kinds[] = {[CONFIG_INT] = "An integer",
                                        [CONFIG_STR] = "A string",
                                        [CONFIG_STRLIST] = "A string or a list of strings",
                                        [CONFIG_GROUP] = "A group",
                                        [CONFIG_LIST] = "A list of groups",
                                        [CONFIG_BOOL] = "A boolean (true or false)",
                                        [CONFIG_SIZE] = "A size: bytes, or a number with K, M "
                                                        "or G (1024-based) such as 512M"};
    if (r->kind == CONFIG_ENUM) {
        buf_puts(b, "One of");
        for (const struct config_choice *ch = r->choices; ch->name != NULL; ch++) {
            buf_printf(b, "%s\\fB%s\\fR", ch == r->choices ? " " : ", ", ch->name);
        }
    } else {
        troff_text(b, r->kind == CONFIG_CUSTOM ? r->doc_type : kinds[r->kind]);
    }
    put_range(b, r);
    if (r->flags & CONFIG_REQUIRED) {
        buf_puts(b, "; required.");
        return;
    }
    const char *lit = NULL;
    char num[32];
    if (r->kind == CONFIG_INT || r->kind == CONFIG_SIZE) {
        snprintf(num, sizeof(num), "%lld", r->def);
        lit = num;
    } else if (r->kind == CONFIG_ENUM) {
        for (const struct config_choice *ch = r->choices; ch->name != NULL; ch++) {
            lit = ch->value == r->def ? ch->name : lit;
        }
    } else if (r->kind == CONFIG_BOOL) {
        lit = r->def ? "true" : "false";
    }
    if (lit == NULL && r->doc_default == NULL && r->def_str == NULL) {
        buf_puts(b, r->kind == CONFIG_STR ? "; default: not set." : ".");
        return;
    }
    buf_puts(b, "; default: ");
    if (r->doc_default != NULL) {
        troff_text(b, r->doc_default);
        buf_puts(b, r->def_str != NULL ? ", " : "");
    }
    if (r->def_str != NULL) {
        buf_puts(b, "\\(dq");
        troff_text(b, r->def_str);
        buf_puts(b, "\\(dq");
    } else if (lit != NULL && r->doc_default == NULL) {
        buf_printf(b, "\\fB%s\\fR", lit);
    }
    buf_puts(b, ".");
}

static int write_group(struct doc *doc, FILE *out, const char *path, const char *section);

static int
write_row(struct doc *doc, FILE *out, const struct config_row *r, const char *section)
{
    char path[128], name[128];
    struct buf b = BUF_INIT;
    config_row_path(r, path, sizeof(path));
    doc->written[r - config_rows]++;
    if ((r->kind == CONFIG_GROUP || r->kind == CONFIG_LIST) && has_section(doc, path)) {
        return 0; /* its own section lists it */
    }
    buf_printf(&b, ".TP\n.B %s\n", config_doc_name(path, section, name, sizeof(name)));
    troff_text(&b, r->doc);
    buf_putc(&b, '\n');
    put_facts(&b, r);
    buf_putc(&b, '\n');
    int rc = b.failed || fputs(buf_str(&b), out) == EOF ? -1 : 0;
    buf_free(&b);
    if (rc != 0) {
        return doc_fail(doc, "cannot write the entry of %s", path);
    }
    if (r->kind == CONFIG_GROUP || r->kind == CONFIG_LIST) {
        return write_group(doc, out, path, section);
    }
    return 0;
}

/* The rows of group path, in the table's order, and their groups' rows. */
static int
write_group(struct doc *doc, FILE *out, const char *path, const char *section)
{
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        if (strcmp(r->group, path) == 0 && write_row(doc, out, r, section) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The group of an "@settings GROUP" line, or NULL for any other line. */
static const char *
section_line(const char *line, char *out, size_t cap)
{
    static const char mark[] = ".\\\" @settings ";
    if (strncmp(line, mark, sizeof(mark) - 1) != 0) {
        return NULL;
    }
    const char *group = line + sizeof(mark) - 1;
    size_t len = strcspn(group, " \r\n");
    if (len >= cap) {
        return NULL;
    }
    memcpy(out, group, len);
    out[len] = '\0';
    return out;
}

/* @NAME@ placeholders: the limits of config.h and diag.h. */
static void
expand(struct buf *b, const char *line)
{
    static const struct {
        const char *name;
        long value;
    } vars[] = {{"@CONFIG_MAX_MIB@", CONFIG_MAX_BYTES / (1024 * 1024)},
                {"@CONFIG_MAX_ENTRIES@", CONFIG_MAX_ENTRIES},
                {"@CONFIG_MAX_SETTINGS@", CONFIG_MAX_SETTINGS},
                {"@CONFIG_MAX_INCLUDES@", CONFIG_MAX_INCLUDES},
                {"@DIAG_MAX_LINES@", DIAG_MAX_LINES}};
    while (*line != '\0') {
        size_t i = 0, n = sizeof(vars) / sizeof(vars[0]);
        while (i < n && strncmp(line, vars[i].name, strlen(vars[i].name)) != 0) {
            i++;
        }
        if (i < n) {
            buf_printf(b, "%ld", vars[i].value);
            line += strlen(vars[i].name);
        } else {
            buf_putc(b, *line++);
        }
    }
}

/* Every @settings line names a group, once. */
static int
read_sections(struct doc *doc, FILE *in)
{
    char line[LINE_MAX_LEN], name[64];
    while (fgets(line, sizeof(line), in) != NULL) {
        if (section_line(line, name, sizeof(name)) == NULL) {
            continue;
        }
        const struct config_row *g = config_row_find(name);
        if (strcmp(name, "top") != 0 &&
            (g == NULL || (g->kind != CONFIG_GROUP && g->kind != CONFIG_LIST))) {
            return doc_fail(doc, "@settings %s: no such group of settings", name);
        }
        if (has_section(doc, group_of(name)) || doc->nsections == MAX_SECTIONS) {
            return doc_fail(doc, "@settings %s: twice, or too many sections", name);
        }
        snprintf(doc->sections[doc->nsections++], sizeof(doc->sections[0]), "%s", name);
    }
    return ferror(in) ? doc_fail(doc, "cannot read the template") : 0;
}

static int
write_page(struct doc *doc, FILE *in, FILE *out)
{
    char line[LINE_MAX_LEN], name[64];
    struct buf b = BUF_INIT;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), in) != NULL) {
        if (strchr(line, '\n') == NULL && !feof(in)) {
            rc = doc_fail(doc, "a template line longer than %d bytes", LINE_MAX_LEN - 2);
        } else if (section_line(line, name, sizeof(name)) != NULL) {
            rc = write_group(doc, out, group_of(name), name);
        } else {
            buf_reset(&b);
            expand(&b, line);
            rc = fputs(buf_str(&b), out) == EOF ? doc_fail(doc, "cannot write the page") : 0;
        }
    }
    buf_free(&b);
    return rc;
}

int
config_doc_man(FILE *in, FILE *out, char *err, size_t errlen)
{
    size_t nrows = 0;
    while (config_rows[nrows].name != NULL) {
        nrows++;
    }
    struct doc doc = {.err = err, .errlen = errlen};
    doc.written = calloc(nrows + 1, 1);
    if (doc.written == NULL) {
        return doc_fail(&doc, "out of memory");
    }
    int rc = read_sections(&doc, in);
    if (rc == 0) {
        rewind(in);
        rc = write_page(&doc, in, out);
    }
    for (size_t i = 0; rc == 0 && i < nrows; i++) {
        char path[128];
        if (doc.written[i] != 1) {
            rc = doc_fail(&doc, "%s is in %s section: give its group a '.\\\" @settings' line",
                          config_row_path(&config_rows[i], path, sizeof(path)),
                          doc.written[i] == 0 ? "no" : "more than one");
        }
    }
    free(doc.written);
    return rc;
}
