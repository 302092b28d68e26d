/*
 * ctl_plugin.c - `twicectl plugin check FILE.so...`: does the host accept
 * these plugins with these settings, and what do they declare, where does
 * their key come from and how do they map outcomes (describe())? Each file
 * is loaded in a forked child (ctl_child.c), so a plugin that crashes or
 * hangs while loading cannot take twicectl with it. init() is not run:
 * `twiced -t` does that with the configured settings.
 */
#include "buf.h"
#include "cnum.h"
#include "config.h"
#include "ctl.h"
#include "diag.h"
#include "hostapi.h"
#include "loader.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <twice/plugin.h>

#define CHECK_TIMEOUT 30 /* seconds the child may take */
#define EXIT_REFUSED  10 /* the child's exit codes (not 1: sanitizers use it) */
#define EXIT_SETTINGS 11

static const char plugin_help[] =
    "usage: twicectl plugin check FILE.so [--settings NAME=VALUE]... [FILE.so [...]]...\n"
    "                             [--json]\n"
    "\n"
    "Load each FILE.so as twiced would, in a separate process, and show whether the\n"
    "host accepts it (file permissions, entry point, ABI load rule, descriptor)\n"
    "and what it declares: name, version, ABI, flags, its key (the template and\n"
    "where it comes from: the plugin's template, one of its settings, or\n"
    "derive_key), how it maps outcomes to DONE, RETRY and REJECT when it says\n"
    "(the http and exec plugins do), and its settings with types, defaults and\n"
    "descriptions. The settings given (--settings NAME=VALUE, or NAME=VALUE\n"
    "arguments; they belong to the FILE before them) are checked against the\n"
    "declaration: unknown names, wrong types, and required settings that are\n"
    "missing - also when none are given, so a plugin that twiced would refuse for\n"
    "want of a setting fails here too. init() is not run. Exit code 1 with the\n"
    "reason when any plugin is refused or a setting is wrong or missing. --json\n"
    "prints one object per file (an array when several files are checked).\n";

static const char *
type_name(twice_setting_type t)
{
    return t == TWICE_SETTING_INT ? "int" : t == TWICE_SETTING_BOOL ? "bool" : "string";
}

static const char *
esc(struct buf *b, const char *s)
{
    buf_reset(b);
    ctl_escape(b, s != NULL ? s : "-", s != NULL ? strlen(s) : 1, 0);
    return buf_str(b);
}

static void
print_settings(const twice_setting *s)
{
    if (s == NULL || s[0].name == NULL) {
        printf("settings:   none\n");
        return;
    }
    printf("settings:\n");
    static const char *const head[] = {"  NAME", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"};
    struct ctl_table *t = ctl_table_new(5, head);
    struct buf name = BUF_INIT, def = BUF_INIT, desc = BUF_INIT;
    for (size_t i = 0; s[i].name != NULL; i++) {
        buf_reset(&name);
        buf_puts(&name, "  ");
        ctl_escape(&name, s[i].name, strlen(s[i].name), 0);
        const char *row[] = {buf_str(&name), type_name(s[i].type), s[i].required ? "yes" : "no",
                             esc(&def, s[i].default_value), esc(&desc, s[i].description)};
        ctl_table_add(t, row);
    }
    ctl_table_print(t);
    buf_free(&name);
    buf_free(&def);
    buf_free(&desc);
}

/* What describe() said (desc: 1 something, 0 no describe, -1 refused),
 * one line each, indented. */
static void
print_mapping(const char *text, int desc)
{
    struct buf b = BUF_INIT;
    if (desc == 0) {
        printf("mapping:    not described (DONE, RETRY and REJECT as handle() returns them)\n");
        return;
    }
    printf("mapping:%s\n", desc < 0 ? " (the settings given do not describe one)" : "");
    while (*text != '\0') {
        size_t len = strcspn(text, "\n");
        buf_reset(&b);
        ctl_escape(&b, text, len, 0);
        printf("  %s\n", buf_str(&b));
        text += len + (text[len] == '\n');
    }
    buf_free(&b);
}

/* The key: its template (or derive_key) and where it comes from. */
static void
print_key(const struct loaded_plugin *p)
{
    struct buf b = BUF_INIT;
    char src[128];
    const char *source = loader_key_source(p, src, sizeof(src));
    if (p->key == LOADER_KEY_DERIVE) {
        printf("key:        derive_key() (computed by the plugin)\n");
    } else if (p->key == LOADER_KEY_NONE) {
        printf("key:        none: setting '%s' is not given, so every queue using the plugin "
               "must set key\n",
               esc(&b, loader_key_setting(p->desc)));
    } else {
        printf("key:        template %s (%s)\n", esc(&b, p->key_text), source);
    }
    printf("            (a queue's own key overrides it)\n");
    buf_free(&b);
}

static void
print_text(const char *path, const struct loaded_plugin *p, const char *mapping, int desc)
{
    const twice_plugin *d = p->desc;
    struct buf b = BUF_INIT;
    printf("file:       %s\n", esc(&b, path));
    printf("load rule:  accepted (built for ABI %u.%u; host supports %d.0-%d.%d)\n", d->abi_major,
           d->abi_minor, TWICE_ABI_MAJOR, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
    printf("name:       %s\n", esc(&b, d->name));
    printf("version:    %s\n", esc(&b, d->version));
    printf("descriptor: %u bytes\n", d->size);
    printf("flags:      %s\n", (d->flags & TWICE_FLAG_TRANSACTIONAL) ? "transactional" : "none");
    print_key(p);
    print_mapping(mapping, desc);
    printf("init/fini:  %s/%s\n", d->init ? "yes" : "no", d->fini ? "yes" : "no");
    print_settings(d->settings);
    buf_free(&b);
}

/* describe()'s lines as a JSON array (NULL when it gave none). */
static json_t *
mapping_json(const char *text, int desc)
{
    json_t *lines = desc != 0 ? json_array() : NULL;
    while (lines != NULL && *text != '\0') {
        size_t len = strcspn(text, "\n");
        json_array_append_new(lines, json_stringn(text, len));
        text += len + (text[len] == '\n');
    }
    return lines;
}

/* The JSON report; NULL when some text of the descriptor is not UTF-8. */
static json_t *
print_json(const char *path, const struct loaded_plugin *p, const char *mapping, int desc,
           const struct diag *problems)
{
    const twice_plugin *d = p->desc;
    char src[128];
    char abi[32], host[32];
    snprintf(abi, sizeof(abi), "%u.%u", d->abi_major, d->abi_minor);
    snprintf(host, sizeof(host), "%d.0-%d.%d", TWICE_ABI_MAJOR, TWICE_ABI_MAJOR, TWICE_ABI_MINOR);
    json_t *settings = json_array(), *probs = json_array();
    for (size_t i = 0; d->settings != NULL && d->settings[i].name != NULL; i++) {
        const twice_setting *s = &d->settings[i];
        json_t *o = json_pack("{s:s,s:s,s:b,s:s?,s:s?}", "name", s->name, "type",
                              type_name(s->type), "required", s->required != 0, "default",
                              s->default_value, "description", s->description);
        if (o == NULL || json_array_append_new(settings, o) != 0) {
            json_decref(settings);
            json_decref(probs);
            return NULL;
        }
    }
    for (size_t i = 0; i < problems->n; i++) {
        json_array_append_new(probs, json_string(problems->lines[i]));
    }
    return json_pack("{s:s,s:b,s:s?,s:s?,s:s,s:s,s:i,s:b,s:s?,s:s,s:s?,s:b,s:o*,s:b,s:b,s:o,s:o}",
                     "file", path, "accepted", 1, "name", d->name, "version", d->version, "abi",
                     abi, "host_abi", host, "descriptor_size", (int) d->size, "transactional",
                     (d->flags & TWICE_FLAG_TRANSACTIONAL) != 0, "key_template", p->key_text,
                     "key_source", loader_key_source(p, src, sizeof(src)), "key_setting",
                     loader_key_setting(d), "derive_key", d->derive_key != NULL, "mapping",
                     mapping_json(mapping, desc), "init", d->init != NULL, "fini", d->fini != NULL,
                     "settings", settings, "problems", probs);
}

/* The type a NAME=VALUE setting has when written as the declaration wants
 * it; otherwise string (and the loader says it should not be). */
static int
infer_type(const twice_setting *decl, const char *name, const char *value)
{
    for (size_t i = 0; decl != NULL && decl[i].name != NULL; i++) {
        if (strcmp(decl[i].name, name) != 0) {
            continue;
        }
        char *end = NULL;
        if (decl[i].type == TWICE_SETTING_INT) {
            errno = 0;
            strtoll(value, &end, 10);
            return end != value && *end == '\0' && errno == 0 ? TWICE_SETTING_INT
                                                              : TWICE_SETTING_STRING;
        }
        if (decl[i].type == TWICE_SETTING_BOOL) {
            return strcmp(value, "true") == 0 || strcmp(value, "false") == 0
                       ? TWICE_SETTING_BOOL
                       : TWICE_SETTING_STRING;
        }
    }
    return TWICE_SETTING_STRING;
}

/* NAME=VALUE settings (split in place) as the configuration would give
 * them, in s (n entries, borrowing from kv) and cp (borrowing s). */
static void
given_settings(const struct loaded_plugin *p, char **kv, size_t n, struct config_kv *s,
               struct config_plugin *cp)
{
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(kv[i], '=');
        *eq = '\0';
        s[i].name = kv[i];
        s[i].value = eq + 1;
        s[i].type = infer_type(p->desc->settings, s[i].name, s[i].value);
    }
    *cp = (struct config_plugin){
        .name = (char *) p->desc->name, .path = p->path, .settings = s, .nsettings = n};
}

#define MAPPING_MAX 4096 /* bytes of describe() text shown */

/* In the child, stdout being the pipe: the report, then _exit. */
static void
child(const char *path, char **kv, size_t n, int json)
{
    struct loaded_plugin p;
    struct config_plugin cp;
    struct config_kv *s = calloc(n ? n : 1, sizeof(*s));
    static char mapping[MAPPING_MAX];
    char err[1024];
    if (loader_open(path, &p, err, sizeof(err)) != 0 || s == NULL) {
        fputs(s == NULL ? "out of memory" : err, stdout);
        if (s != NULL && strchr(path, '/') == NULL && access(path, F_OK) != 0) {
            /* twiced takes a bare name from plugin_dir, which this check does not read */
            fputs(" (a FILE without '/' is looked for in the current directory; twiced looks "
                  "for it in plugin_dir: give the file's path)",
                  stdout);
        }
        fflush(stdout);
        _exit(EXIT_REFUSED);
    }
    struct diag d = DIAG_INIT;
    given_settings(&p, kv, n, s, &cp);
    loader_check_settings(&p, &cp, NULL, &d); /* none given: the required ones are missing */
    int desc = hostapi_describe(&p, &cp, mapping, sizeof(mapping));
    if (desc < 0 && diag_count(&d) == 0) {
        /* The plugin's own check of the settings given (init's, without
         * starting anything): a refusal is a problem, not just a note. */
        diag_add(&d, NULL, 0, "plugin '%s': %.*s", p.desc->name, (int) strcspn(mapping, "\n"),
                 mapping);
    }
    if (json) {
        json_t *v = print_json(path, &p, mapping, desc, &d);
        if (v == NULL) {
            printf("%s: the descriptor's text (name, version, key template or a setting) is "
                   "not valid UTF-8",
                   path);
            fflush(stdout);
            _exit(EXIT_REFUSED);
        }
        json_dumpf(v, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(v);
    } else {
        print_text(path, &p, mapping, desc);
        if (d.n == 0 && n > 0) {
            printf("settings check: %zu given, all accepted\n", n);
        } else if (d.n == 0) {
            printf("settings check: none given, none required\n");
        }
    }
    for (size_t i = 0; i < d.n; i++) {
        printf("#problem %s\n", d.lines[i]);
    }
    fflush(stdout);
    _exit(d.n > 0 ? EXIT_SETTINGS : 0);
}

/* Problems (lines marked by the child) go to stderr; the rest to stdout,
 * or into report when it is not NULL. The number of problems. */
static size_t
relay(const char *text, struct buf *report)
{
    size_t problems = 0;
    while (*text != '\0') {
        size_t len = strcspn(text, "\n");
        if (strncmp(text, "#problem ", 9) == 0) {
            fprintf(stderr, "twicectl: plugin check: %.*s\n", (int) len - 9, text + 9);
            problems++;
        } else if (report != NULL) {
            buf_printf(report, "%.*s\n", (int) len, text);
        } else {
            printf("%.*s\n", (int) len, text);
        }
        text += len + (text[len] == '\n');
    }
    return problems;
}

/* One file and the settings given for it (borrowed from argv). */
struct target {
    const char *path;
    char **kv;
    size_t n;
};

/* ctl_child's view of one check. */
struct check_job {
    const struct target *tg;
    int json;
};

static void
run_child(void *arg)
{
    const struct check_job *cj = arg;
    child(cj->tg->path, cj->tg->kv, cj->tg->n, cj->json);
}

/* A refused file's entry in the --json array of several files. */
static void
add_refused(json_t *all, const char *path, const char *why)
{
    json_array_append_new(
        all, json_pack("{s:s,s:b,s:[s]}", "file", path, "accepted", 0, "problems", why));
}

/*
 * Check one file in a child: its report on stdout (or, all non-NULL, as an
 * element of the --json array of several files), problems on stderr.
 */
static int
run_check(const struct target *tg, int json, json_t *all)
{
    const char *path = tg->path;
    struct buf out = BUF_INIT, report = BUF_INIT, why = BUF_INIT;
    struct check_job cj = {tg, json};
    int failed = 0, status = ctl_child(run_child, &cj, CHECK_TIMEOUT, &out, &failed);
    int rc = CTL_FAIL;
    if (failed) {
        /* printed already */
    } else if (status == -1) {
        buf_printf(&why, "%s: loading did not finish within %ds (a constructor that hangs?)", path,
                   CHECK_TIMEOUT);
    } else if (WIFSIGNALED(status)) {
        buf_printf(&why, "%s crashed the check with signal %d (%s)", path, WTERMSIG(status),
                   cnum_strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == EXIT_REFUSED) {
        buf_puts(&why, buf_str(&out));
    } else if (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == EXIT_SETTINGS) {
        size_t problems = relay(buf_str(&out), all != NULL ? &report : NULL);
        json_t *doc = all != NULL ? json_loads(buf_str(&report), 0, NULL) : NULL;
        if (doc != NULL) {
            json_array_append_new(all, doc);
        }
        rc = WEXITSTATUS(status) == 0 ? CTL_OK : CTL_FAIL;
        if (problems > 0 && tg->n == 0) {
            ctl_fail("plugin check: %s: no settings were given: name them with --settings "
                     "NAME=VALUE after the file",
                     path);
        }
    } else {
        buf_printf(&why, "%s: the check failed with exit code %d", path, WEXITSTATUS(status));
    }
    if (why.len > 0) {
        ctl_fail("plugin check: %s", buf_str(&why));
        if (all != NULL) {
            add_refused(all, path, buf_str(&why));
        }
    }
    buf_free(&out);
    buf_free(&report);
    buf_free(&why);
    return rc;
}

/* A NAME=VALUE argument rather than a file: '=' with a name before it that
 * is no path (a file called a=b.so is given as ./a=b.so). */
static int
is_setting(const char *arg)
{
    const char *eq = strchr(arg, '=');
    return eq != NULL && eq != arg && memchr(arg, '/', (size_t) (eq - arg)) == NULL;
}

/*
 * Parse FILE and setting arguments in order ('-' in the optstring keeps
 * it: non-options come back as 1) into tg[0..*ntg). A setting belongs to
 * the FILE before it; settings before the first FILE to that one (they
 * sit right before its own in kv). -1, or the exit code of a usage error.
 */
static int
parse_targets(struct ctl *c, int argc, char **argv, struct target *tg, char **kv, size_t *ntg)
{
    static const struct option longopts[] = {{"settings", 1, NULL, 's'}, CTL_LONG_OPTIONS};
    size_t nkv = 0, lead = 0;
    int opt, rc = -1;
    char shown[CTL_ARG_SIZE];
    *ntg = 0;
    while (rc < 0 && (opt = getopt_long(argc, argv, "-:c:h", longopts, NULL)) != -1) {
        if (opt == 's' || (opt == 1 && is_setting(optarg))) {
            if (!is_setting(optarg)) {
                return ctl_usage_error("plugin check", "settings are NAME=VALUE, not '%s'",
                                       ctl_arg(shown, optarg));
            }
            kv[nkv++] = optarg;
            *(*ntg == 0 ? &lead : &tg[*ntg - 1].n) += 1;
        } else if (opt == 1) {
            tg[*ntg] = (struct target){optarg, kv + nkv, 0};
            (*ntg)++;
        } else {
            rc = ctl_option(c, "plugin check", plugin_help, opt, argc, argv);
        }
    }
    if (rc < 0 && *ntg == 0) {
        rc = ctl_usage_error("plugin check", "expected FILE.so");
    }
    if (rc < 0) {
        tg[0].kv -= lead;
        tg[0].n += lead;
    }
    return rc;
}

static int
plugin_check(struct ctl *c, int argc, char **argv)
{
    char **kv = calloc((size_t) argc, sizeof(*kv));
    struct target *tg = calloc((size_t) argc, sizeof(*tg));
    size_t n = 0;
    int rc = kv == NULL || tg == NULL ? ctl_fail("out of memory")
                                      : parse_targets(c, argc, argv, tg, kv, &n);
    json_t *all = rc < 0 && c->json && n > 1 ? json_array() : NULL;
    if (rc < 0) {
        rc = CTL_OK;
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && !c->json) {
                putchar('\n');
            }
            if (run_check(&tg[i], c->json, all) != CTL_OK) {
                rc = CTL_FAIL;
            }
        }
    }
    if (all != NULL && ctl_print_json(all) != CTL_OK) {
        rc = CTL_FAIL;
    }
    free(kv);
    free(tg);
    return rc;
}

int
ctl_plugin(struct ctl *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(plugin_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CTL_USAGE : CTL_OK;
    }
    if (strcmp(argv[1], "check") != 0) {
        char shown[CTL_ARG_SIZE];
        return ctl_usage_error("plugin", "no plugin command '%s' (check)",
                               ctl_arg(shown, argv[1]));
    }
    optind = 0;
    return plugin_check(c, argc - 1, argv + 1);
}
