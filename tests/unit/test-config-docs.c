/*
 * test-config-docs.c - the settings table, etc/twice.conf and twice.conf(5)
 * as built name exactly the same settings (a setting added in one place
 * only fails here), the table's rows are consistent (defaults in range,
 * fields inside their structs), and twiced --help, twicectl --help, the man
 * pages and the systemd unit print one default configuration path, this
 * build's; the unit provides the log.file's directory twice.conf suggests,
 * does not restart a start the configuration refused, and checks the file
 * before a reload. Not for what the settings do (test-config.c).
 */
#include "check.h"
#include "config.h"
#include "config_doc.h"
#include "config_table.h"
#include "diag.h"
#include "master.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 256

struct names {
    char path[MAX_NAMES][128];
    int line[MAX_NAMES];
    size_t n;
};

/* A whole file, or NULL (reported). Caller frees. */
static char *
slurp(const char *dir_env, const char *fallback, const char *rel)
{
    const char *dir = getenv(dir_env);
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : fallback, rel);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *text = calloc(1, 1 << 20);
    if (text != NULL) {
        size_t n = fread(text, 1, (1 << 20) - 1, fp);
        text[n] = '\0';
    }
    fclose(fp);
    return text;
}

static int
has_name(const struct names *ns, const char *path)
{
    for (size_t i = 0; i < ns->n; i++) {
        if (strcmp(ns->path[i], path) == 0) {
            return 1;
        }
    }
    return 0;
}

static void
add_name(struct names *ns, const char *path, int line)
{
    if (!has_name(ns, path) && ns->n < MAX_NAMES) {
        snprintf(ns->path[ns->n], sizeof(ns->path[0]), "%s", path);
        ns->line[ns->n++] = line;
    }
}

/* Whether the row at path is a plugin's own settings (not twice's). */
static int
free_form(const char *path)
{
    const struct config_row *r = config_row_find(path);
    return r != NULL && r->kind == CONFIG_CUSTOM;
}

/* A line of etc/twice.conf that holds settings: any line but a comment, and
 * a commented-out example ("#user = ...;", "#};", "#, {"). NULL: prose. */
static const char *
setting_text(const char *line)
{
    while (*line == ' ') {
        line++;
    }
    if (*line != '#') {
        return line;
    }
    for (line++; *line == ' '; line++) {
    }
    if (strchr("{}),", *line) != NULL && *line != '\0') {
        return line;
    }
    const char *p = line;
    while (isalnum((unsigned char) *p) || *p == '_') {
        p++;
    }
    while (*p == ' ') {
        p++;
    }
    return p > line && *p == '=' ? line : NULL;
}

/* Every setting etc/twice.conf writes, set or commented out, as a path
 * ("alerts.smtp.to"); a plugin's own settings are not twice's. */
static void
reference_names(const char *text, struct names *ns)
{
    char stack[16][64], name[64] = "", path[128];
    int depth = 0, line = 0;
    for (const char *l = text; *l != '\0'; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
        line++;
        const char *p = setting_text(l);
        for (; p != NULL && *p != '\0' && *p != '\n' && *p != '#'; p++) {
            if (*p == '"') {
                for (p++; *p != '"' && *p != '\0' && *p != '\n'; p += *p == '\\' ? 2 : 1) {
                }
            } else if (isalpha((unsigned char) *p) || *p == '_') {
                size_t n = 0;
                while ((isalnum((unsigned char) p[n]) || p[n] == '_') && n + 1 < sizeof(name)) {
                    n++;
                }
                snprintf(name, sizeof(name), "%.*s", (int) n, p);
                p += n - 1;
            } else if (*p == '=' && name[0] != '\0') {
                path[0] = '\0';
                for (int i = 0; i < depth; i++) {
                    if (stack[i][0] != '\0') {
                        strcat(strcat(path, path[0] ? "." : ""), stack[i]);
                    }
                }
                int inside = free_form(path);
                strcat(strcat(path, path[0] ? "." : ""), name);
                if (!inside) {
                    add_name(ns, path, line);
                }
            } else if ((*p == '{' || *p == '(') && depth < 16) {
                snprintf(stack[depth++], sizeof(stack[0]), "%s", name);
                name[0] = '\0';
            } else if ((*p == '}' || *p == ')') && depth > 0) {
                depth--;
            } else if (*p == ';' || *p == ',') {
                name[0] = '\0';
            }
        }
    }
}

/* Every row, by path; a plugin's own settings are one setting. */
static void
table_names(struct names *ns)
{
    char path[128];
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        add_name(ns, config_row_path(r, path, sizeof(path)), 0);
    }
}

static void
test_reference_conf(void)
{
    struct names etc = {0}, table = {0};
    char *text = slurp("TWICE_SOURCE_DIR", "../..", "etc/twice.conf");
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    reference_names(text, &etc);
    table_names(&table);
    CHECK(table.n > 40);
    for (size_t i = 0; i < table.n; i++) {
        if (!has_name(&etc, table.path[i])) {
            fprintf(stderr, "etc/twice.conf: no '%s' (set or commented out)\n", table.path[i]);
            CHECK(has_name(&etc, table.path[i]));
        }
    }
    for (size_t i = 0; i < etc.n; i++) {
        if (!has_name(&table, etc.path[i])) {
            fprintf(stderr, "etc/twice.conf:%d: '%s' is no setting of the table\n", etc.line[i],
                    etc.path[i]);
            CHECK(has_name(&table, etc.path[i]));
        }
    }
    CHECK_INT(etc.n, table.n);
    /* the limits it documents are the code's */
    char limits[4][64];
    snprintf(limits[0], 64, "larger than %d MiB", CONFIG_MAX_BYTES / (1024 * 1024));
    snprintf(limits[1], 64, "more than %d settings in a group", CONFIG_MAX_ENTRIES);
    snprintf(limits[2], 64, "more than %d settings in all", CONFIG_MAX_SETTINGS);
    snprintf(limits[3], 64, "more than %d @include", CONFIG_MAX_INCLUDES);
    for (int i = 0; i < 4; i++) {
        if (strstr(text, limits[i]) == NULL) {
            fprintf(stderr, "etc/twice.conf does not say '%s'\n", limits[i]);
            CHECK(0);
        }
    }
    free(text);
}

/* How twice.conf(5) lists a row: top-level groups and lists are sections
 * of their own ("QUEUES"), not entries; a setting inside a list's entry is
 * listed in the list's section, by its path inside the list ("backoff.base");
 * every other one by its full path, in any section. */
static int
man_entry_of(const struct config_row *r, char *section, char *name, size_t cap)
{
    char path[128], list[64];
    config_row_path(r, path, sizeof(path));
    if (r->group[0] == '\0' && (r->kind == CONFIG_GROUP || r->kind == CONFIG_LIST)) {
        return 0;
    }
    snprintf(list, sizeof(list), "%.*s", (int) strcspn(path, "."), path);
    const struct config_row *top = config_row_find(list);
    section[0] = '\0';
    if (top != NULL && top->kind == CONFIG_LIST && strcmp(list, path) != 0) {
        for (size_t i = 0; list[i] != '\0' && i + 1 < cap; i++) {
            section[i] = (char) toupper((unsigned char) list[i]);
            section[i + 1] = '\0';
        }
    }
    config_doc_name(path, section[0] ? list : "", name, cap);
    return 1;
}

static void
test_man_page(void)
{
    char *page = slurp("TWICE_BUILD_DIR", "../../build", "packaging/man/twice.conf.5");
    CHECK(page != NULL);
    if (page == NULL) {
        return;
    }
    /* the entries of the page: ".TP" then ".B name", and their sections */
    struct names found = {0};
    char section[64] = "";
    for (const char *l = page; l != NULL && *l != '\0';
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, ".SH ", 4) == 0) {
            snprintf(section, sizeof(section), "%.*s", (int) strcspn(l + 4, "\n"), l + 4);
        } else if (strncmp(l, ".TP\n.B ", 7) == 0) {
            char entry[128];
            snprintf(entry, sizeof(entry), "%s/%.*s", section, (int) strcspn(l + 7, "\n"), l + 7);
            add_name(&found, entry, 0);
            CHECK(found.n < MAX_NAMES);
        }
    }
    size_t want = 0;
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        char sec[64], name[128], path[128], entry[256];
        if (!man_entry_of(r, sec, name, sizeof(name))) {
            char title[64];
            snprintf(title, sizeof(title), "\n.SH %s\n", r->name);
            for (char *c = title; *c; c++) {
                *c = (char) toupper((unsigned char) *c);
            }
            CHECK_CONTAINS(page, title);
            continue;
        }
        want++;
        int ok = 0;
        for (size_t i = 0; i < found.n && !ok; i++) {
            const char *slash = strchr(found.path[i], '/');
            snprintf(entry, sizeof(entry), "%s/%s", sec, name);
            ok = sec[0] ? strcmp(found.path[i], entry) == 0 : strcmp(slash + 1, name) == 0;
        }
        if (!ok) {
            fprintf(stderr, "twice.conf(5): no entry for %s (as '%s'%s%s)\n",
                    config_row_path(r, path, sizeof(path)), name, sec[0] ? " in " : "", sec);
        }
        CHECK(ok);
    }
    CHECK_INT(found.n, want); /* and no entry that is no setting */
    free(page);
}

/* Offsets inside the struct of the row's group, defaults inside ranges. */
static void
test_rows(void)
{
    char path[128], parent[128];
    for (const struct config_row *r = config_rows; r->name != NULL; r++) {
        config_row_path(r, path, sizeof(path));
        size_t size = strncmp(path, "queues.routes.", 14) == 0 ? sizeof(struct config_route)
                      : strncmp(path, "queues.", 7) == 0       ? sizeof(struct config_queue)
                      : strncmp(path, "plugins.", 8) == 0      ? sizeof(struct config_plugin)
                                                               : sizeof(struct config);
        CHECK(r->field.offset + r->field.size <= size);
        CHECK(r->doc != NULL && r->doc[0] != '\0' && strchr(r->doc, '\n') == NULL);
        const struct config_row *g = config_row_find(r->group);
        CHECK(r->group[0] == '\0' ||
              (g != NULL && (g->kind == CONFIG_GROUP || g->kind == CONFIG_LIST)));
        for (const struct config_row *o = config_rows; o < r; o++) {
            if (strcmp(config_row_path(o, parent, sizeof(parent)), path) == 0) {
                fprintf(stderr, "two rows for %s\n", path);
                CHECK(0);
            }
        }
        if (r->kind == CONFIG_INT) {
            CHECK(r->def >= r->lo && r->def <= r->hi);
            CHECK(r->field.size == sizeof(int) || r->field.size == sizeof(long));
        } else if (r->kind == CONFIG_ENUM) {
            int found = 0;
            for (const struct config_choice *ch = r->choices; ch->name != NULL; ch++) {
                found |= ch->value == r->def;
            }
            CHECK(found && r->noun != NULL && r->field.size == sizeof(int));
        } else if (r->kind == CONFIG_STR && r->def_str != NULL && r->hi > 0) {
            CHECK(strlen(r->def_str) >= (size_t) r->lo && strlen(r->def_str) <= (size_t) r->hi);
        } else if (r->kind == CONFIG_LIST) {
            CHECK(r->entry_size > 0 && r->noun != NULL);
        } else if (r->kind == CONFIG_SIZE) {
            CHECK(r->def == 0 && r->lo > 0 && r->hi >= r->lo && r->field.size == sizeof(long));
        } else if (r->kind == CONFIG_CUSTOM) {
            CHECK(r->parse != NULL && r->free != NULL && r->doc_type != NULL);
        }
    }
}

/* The output of a command (at most 64 KiB); caller frees. */
static char *
run(const char *cmd)
{
    char *out = calloc(1, 65536);
    FILE *p = popen(cmd, "r");
    if (p != NULL && out != NULL) {
        size_t n = fread(out, 1, 65535, p);
        out[n] = '\0';
    }
    if (p != NULL) {
        pclose(p);
    }
    return out;
}

/* One default configuration path, this build's, everywhere (a source build
 * printed /usr/local/etc/... while the docs said /etc/...). */
static void
test_default_path(void)
{
    const char *bin = getenv("TWICE_BIN_DIR") ? getenv("TWICE_BIN_DIR") : "../../build/bin";
    char cmd[1024], want[512];
    snprintf(cmd, sizeof(cmd), "%s/twiced --help", bin);
    char *out = run(cmd);
    snprintf(want, sizeof(want), "(default %s)", TWICE_DEFAULT_CONFIG);
    CHECK_CONTAINS(out, want);
    free(out);
    snprintf(cmd, sizeof(cmd), "%s/twicectl --help", bin);
    out = run(cmd);
    snprintf(want, sizeof(want), "default %s)", TWICE_DEFAULT_CONFIG);
    CHECK_CONTAINS(out, want);
    free(out);
    static const char *const built[] = {"packaging/man/twiced.8", "packaging/man/twicectl.1",
                                        "packaging/man/twice.conf.5", "packaging/twice.service"};
    for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
        char *text = slurp("TWICE_BUILD_DIR", "../../build", built[i]);
        CHECK(text != NULL);
        if (text == NULL) {
            continue;
        }
        CHECK_CONTAINS(text, TWICE_DEFAULT_CONFIG);
        /* and no other: blank this one out, no configuration path is left */
        size_t n = strlen(TWICE_DEFAULT_CONFIG);
        for (char *p = strstr(text, TWICE_DEFAULT_CONFIG); p;
             p = strstr(p, TWICE_DEFAULT_CONFIG)) {
            memset(p, '_', n);
        }
        if (strstr(text, "/twice/twice.conf") != NULL) {
            fprintf(stderr, "%s names another configuration file than %s\n", built[i],
                    TWICE_DEFAULT_CONFIG);
            CHECK(0);
        }
        free(text);
    }
}

/* The log.file etc/twice.conf suggests works under the packaged unit: its
 * directory is the unit's LogsDirectory (created for User=twice, writable
 * under ProtectSystem=strict; without it twiced did not start: "No such
 * file or directory", then "Read-only file system"), and the logrotate
 * stanza the packages install rotates it. */
static void
test_suggested_log_file(void)
{
    char *conf = slurp("TWICE_SOURCE_DIR", "../..", "etc/twice.conf");
    char *unit = slurp("TWICE_SOURCE_DIR", "../..", "etc/twice.service");
    char *rotate = slurp("TWICE_SOURCE_DIR", "../..", "etc/twice.logrotate");
    const char *file = conf != NULL ? strstr(conf, "#file = \"/var/log/") : NULL;
    CHECK(file != NULL && unit != NULL && rotate != NULL);
    if (file != NULL && unit != NULL && rotate != NULL) {
        char dir[128], want[160];
        const char *start = file + strlen("#file = \"/var/log/");
        const char *slash = strchr(start, '/');
        CHECK(slash != NULL && slash - start < 64);
        snprintf(dir, sizeof(dir), "%.*s", slash != NULL ? (int) (slash - start) : 0, start);
        snprintf(want, sizeof(want), "\nLogsDirectory=%s\n", dir);
        CHECK_CONTAINS(unit, want);
        snprintf(want, sizeof(want), "/var/log/%s/*.log {", dir);
        CHECK_CONTAINS(rotate, want);
    }
    free(conf);
    free(unit);
    free(rotate);
}

/* The packaged unit does not restart twiced after a start the configuration
 * or a plugin refused (exit MASTER_EXIT_CONFIG), which Restart=on-failure
 * did every RestartSec for ever, and a reload checks the file ExecStart
 * runs before it signals the master (ExecReload= lines run in order and
 * stop at the first that fails): a broken file fails systemctl reload,
 * where the SIGHUP alone reported success. */
static void
test_unit_restart_and_reload(void)
{
    char *unit = slurp("TWICE_SOURCE_DIR", "../..", "etc/twice.service");
    CHECK(unit != NULL);
    if (unit == NULL) {
        return;
    }
    char want[64];
    snprintf(want, sizeof(want), "\nRestartPreventExitStatus=%d\n", MASTER_EXIT_CONFIG);
    CHECK_CONTAINS(unit, want);
    CHECK_CONTAINS(unit, "\nRestart=on-failure\n");
    CHECK_CONTAINS(unit, "\nExecStart=/usr/sbin/twiced -f -c /etc/twice/twice.conf\n");
    CHECK_CONTAINS(unit, "\nExecReload=/usr/sbin/twiced -t -c /etc/twice/twice.conf\n"
                         "ExecReload=/bin/kill -HUP $MAINPID\n");
    free(unit);
}

int
main(void)
{
    test_rows();
    test_reference_conf();
    test_man_page();
    test_default_path();
    test_suggested_log_file();
    test_unit_restart_and_reload();
    return check_done("test-config-docs");
}
