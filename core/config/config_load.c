/*
 * config_load.c - twice.conf read, checked against the settings table and
 * copied into struct config, with every problem reported as
 * "FILE:LINE: message"; and freed. The settings themselves are rows of
 * config_table.c; reading them is config_parse.c's, the text before
 * libconfig config_text.c's. Not for loading plugins or checking their own
 * settings: loader.c does that.
 */
#include "config.h"

#include "buf.h"
#include "config_dupname.h"
#include "config_parse.h"
#include "config_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory of the configuration file, made absolute, so that a
 * relative plugin_dir means the same whatever the process's working
 * directory later is. Caller frees; NULL when out of memory. */
static char *
config_dir(const char *file)
{
    const char *slash = strrchr(file, '/');
    struct buf b = BUF_INIT;
    if (file[0] != '/') {
        char *cwd = get_current_dir_name();
        buf_puts(&b, cwd != NULL ? cwd : ".");
        free(cwd);
        if (slash != NULL) {
            buf_putc(&b, '/');
        }
    }
    if (slash == file) {
        buf_putc(&b, '/');
    } else if (slash != NULL) {
        buf_append(&b, file, (size_t) (slash - file));
    }
    return buf_steal(&b);
}

/* The setting libconfig's "duplicate setting name" at sfile (NULL: text, the
 * main file's) and line means, into name: 1, or 0 when its line does not
 * tell (config_dupname.c). An @include file is read again for its line. */
static int
duplicate_name(struct config_ctx *x, const char *text, const char *sfile, int line, char *name,
               size_t size)
{
    if (sfile == NULL) {
        return config_dupname_at(text, line, name, size);
    }
    struct buf path = BUF_INIT;
    struct diag ignored = DIAG_INIT; /* the file was read a moment ago */
    char *inc = NULL;
    size_t len = 0;
    config_path_of(x, sfile, &path);
    int found = config_text_read_file(buf_str(&path), &inc, &len, &ignored) == 0 &&
                config_dupname_at(inc, line, name, size);
    buf_free(&path);
    diag_free(&ignored);
    buf_free_secret(inc); /* it may hold passwords, as the main text */
    return found;
}

/* libconfig's own error: a syntax error, a duplicate setting (named from
 * its line: libconfig does not), a missing @include file. Its "file" is
 * NULL for the main text. */
static void
report_parse_error(struct config_ctx *x, const config_t *cf, const char *main_text)
{
    const char *text = config_error_text(cf) ? config_error_text(cf) : "unknown error";
    const char *sfile = config_error_file(cf);
    int line = config_error_line(cf);
    char name[128];
    struct buf b = BUF_INIT;
    if (strcmp(text, "duplicate setting name") == 0 &&
        duplicate_name(x, main_text, sfile, line, name, sizeof(name))) {
        buf_printf(&b, "setting '%s' appears twice in its group (remove or rename one)", name);
    } else {
        buf_puts(&b, "syntax error");
        if (strcmp(text, "syntax error") != 0) {
            buf_printf(&b, ": %s", text);
        }
    }
    config_problem_at(x, sfile, line, buf_str(&b));
    buf_free(&b);
}

/* Check text, then parse it into cf: 0, or -1 with the problems added.
 * Reading a file and passing its text give the same settings and messages:
 * both go through the same reader and config_read_string. */
static int
parse_text(struct config_ctx *x, config_t *cf, const char *text)
{
    if (config_text_check(x, text, strlen(text)) > 0) {
        return -1;
    }
    if (config_read_string(cf, text) != CONFIG_TRUE) {
        report_parse_error(x, cf, text);
        return -1;
    }
    return 0;
}

/* A new configuration with every default set; NULL when out of memory. */
static struct config *
config_new(const char *file)
{
    struct config *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    if ((c->file = strdup(file)) == NULL || config_defaults("", c) != 0) {
        config_free(c);
        return NULL;
    }
    return c;
}

int
config_load(const char *file, const char *text, struct config **out, struct diag *d)
{
    struct config_ctx x = {file != NULL ? file : "(configuration)", NULL, d, 0};
    struct config *c = config_new(x.file);
    char *dir = config_dir(x.file), *read = NULL;
    size_t len = 0;
    x.dir = dir;
    config_t cf;
    config_init(&cf);
    *out = NULL;
    if (c == NULL || dir == NULL) {
        diag_add(d, x.file, 0, "out of memory");
        x.errors++;
        goto done;
    }
    config_set_include_dir(&cf, dir);
    if (text == NULL && config_text_read_file(x.file, &read, &len, d) != 0) {
        x.errors++;
        goto done;
    }
    if (parse_text(&x, &cf, text != NULL ? text : read) != 0) {
        goto done;
    }
    config_setting_t *root = config_root_setting(&cf);
    if (config_setting_length(root) == 0) {
        /* Not "missing dsn" and "no queue": most often a file caught while
         * an editor or a deployment wrote it, at a reload. */
        config_problem_at(&x, NULL, 0,
                          "no settings: the file is empty or holds only comments (was it being "
                          "written?)");
        goto done;
    }
    struct config_scope top = {"", "", 0, NULL};
    struct config_at at = {&x, c, NULL, root, root, &top, NULL, c, NULL};
    config_parse_members(&at, "");
    c->dir = dir;
    dir = NULL;
done:
    config_destroy(&cf);
    buf_free_secret(read);
    free(dir);
    if (x.errors > 0) {
        config_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void
config_free(struct config *c)
{
    if (c == NULL) {
        return;
    }
    config_free_fields("", c);
    free(c->file);
    free(c->dir);
    free(c->user_file);
    free(c->pid_file_src);
    free(c->aws.ca_file_src);
    free(c->log.file_src);
    free(c->idempotency.table_src);
    free(c->idempotency.dsn_src);
    free(c);
}
