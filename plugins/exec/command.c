/*
 * command.c - what the exec plugin runs, from its settings: the argv of
 * `command` (words split at blanks, or a JSON array of strings: no shell,
 * no quoting, no expansion), the program found once in PATH, and the
 * environment (the names in pass_env taken from twiced's, then `env`).
 * Nothing is inherited that is not asked for: twiced's environment may hold
 * AWS credentials and database passwords. Not starting processes (proc.c).
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLANKS       " \t\r\n"
#define MAX_WORDS    256
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* A growing NULL-terminated array of owned strings. */
struct strv {
    char **v;
    size_t n;
};

static int
strv_add(struct strv *s, char *owned)
{
    char **v = owned != NULL ? realloc(s->v, (s->n + 2) * sizeof(*v)) : NULL;
    if (v == NULL) {
        free(owned);
        return -1;
    }
    s->v = v;
    s->v[s->n++] = owned;
    s->v[s->n] = NULL;
    return 0;
}

static void
strv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++) {
        free(v[i]);
    }
    free(v);
}

/* "[...]" as a JSON array of strings, or blank-separated words. 0, or -1
 * with r. */
static int
parse_argv(struct strv *out, const char *command, struct setting_refusal *r)
{
    if (command[strspn(command, BLANKS)] == '[') {
        json_error_t je;
        json_t *a = json_loads(command, 0, &je);
        size_t i;
        json_t *w;
        int rc = 0;
        if (!json_is_array(a) || json_array_size(a) == 0) {
            rc = setting_refuse(r, "command", "not a JSON array of strings: %s",
                                a == NULL ? je.text : "empty or not an array");
        }
        json_array_foreach(a, i, w) /* none when a is not an array */
        {
            if (rc != 0) {
                break; /* the first refusal stands */
            }
            if (!json_is_string(w) || strlen(json_string_value(w)) != json_string_length(w)) {
                rc = setting_refuse(r, "command",
                                    "every element of the array must be a string without NUL");
            } else if (strv_add(out, strdup(json_string_value(w))) != 0) {
                rc = setting_refuse(r, NULL, "out of memory");
            }
        }
        json_decref(a);
        return rc;
    }
    for (const char *p = command + strspn(command, BLANKS); *p != '\0'; p += strspn(p, BLANKS)) {
        size_t n = strcspn(p, BLANKS);
        if (out->n >= MAX_WORDS) {
            return setting_refuse(r, "command", "more than %d words", MAX_WORDS);
        }
        if (strv_add(out, strndup(p, n)) != 0) {
            return setting_refuse(r, NULL, "out of memory");
        }
        p += n;
    }
    return out->n == 0 ? setting_refuse(r, "command", "must name a program to run") : 0;
}

static int
valid_env_name(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_", s[i]) ==
                NULL ||
            s[i] == '\0') {
            return 0;
        }
    }
    return 1;
}

/* NAME=value into out, replacing an earlier NAME. */
static int
env_set(struct strv *out, const char *name, size_t nlen, const char *value)
{
    char *entry = NULL;
    if (asprintf(&entry, "%.*s=%s", (int) nlen, name, value) < 0) {
        return -1;
    }
    for (size_t i = 0; i < out->n; i++) {
        if (strncmp(out->v[i], entry, nlen + 1) == 0) {
            free(out->v[i]);
            out->v[i] = entry;
            return 0;
        }
    }
    return strv_add(out, entry);
}

/* pass_env: names of twiced's variables, the set ones copied. 0, or -1
 * with r. */
static int
parse_pass_env(struct strv *out, const char *names, struct setting_refusal *r)
{
    for (const char *p = names + strspn(names, BLANKS); *p != '\0'; p += strspn(p, BLANKS)) {
        size_t n = strcspn(p, BLANKS);
        char name[256];
        if (!valid_env_name(p, n) || n >= sizeof(name)) {
            return setting_refuse(r, "pass_env", "'%.*s' is not a variable name",
                                  (int) (n > 64 ? 64 : n), p);
        }
        memcpy(name, p, n);
        name[n] = '\0';
        const char *v = getenv(name);
        if (v != NULL && env_set(out, name, n, v) != 0) {
            return setting_refuse(r, NULL, "out of memory");
        }
        p += n;
    }
    return 0;
}

/* env as a JSON object of strings. 0, or -1 with r. */
static int
parse_env_json(struct strv *out, const char *env, struct setting_refusal *r)
{
    json_error_t je;
    json_t *o = json_loads(env, 0, &je), *v;
    const char *name;
    int rc = 0;
    if (o == NULL) {
        /* jansson's text quotes the input near the error: a secret, maybe */
        rc = setting_refuse(r, "env",
                            "not a JSON object of strings: invalid JSON at character %d (the text "
                            "is not shown: values may be secrets)",
                            je.position);
    } else if (!json_is_object(o)) {
        rc = setting_refuse(r, "env", "not a JSON object of strings: not an object");
    }
    json_object_foreach(o, name, v) /* none when o is not an object */
    {
        if (rc != 0) {
            break; /* the first refusal stands */
        }
        if (!valid_env_name(name, strlen(name))) {
            rc = setting_refuse(r, "env", "'%.64s' is not a variable name", name);
        } else if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
            rc = setting_refuse(r, "env", "'%.64s' must be a string without NUL", name);
        } else if (env_set(out, name, strlen(name), json_string_value(v)) != 0) {
            rc = setting_refuse(r, NULL, "out of memory");
        }
    }
    json_decref(o);
    return rc;
}

/* env: {"NAME": "value"} or NAME=value words. 0, or -1 with r. */
static int
parse_env(struct strv *out, const char *env, struct setting_refusal *r)
{
    if (env[strspn(env, BLANKS)] == '{') {
        return parse_env_json(out, env, r);
    }
    int word = 0;
    for (const char *p = env + strspn(env, BLANKS); *p != '\0'; p += strspn(p, BLANKS)) {
        size_t n = strcspn(p, BLANKS), eq = strcspn(p, "=" BLANKS);
        word++;
        if (eq >= n) {
            /* not shown: it may be the rest of a value with blanks */
            return setting_refuse(r, "env",
                                  "word %d is not NAME=value (it is not shown: it may be part of "
                                  "a value; use a JSON object for values with blanks)",
                                  word);
        }
        if (!valid_env_name(p, eq)) {
            return setting_refuse(r, "env", "word %d: '%.*s' is not a variable name", word,
                                  (int) (eq > 64 ? 64 : eq), p);
        }
        char *value = strndup(p + eq + 1, n - eq - 1);
        int rc = value != NULL ? env_set(out, p, eq, value) : -1;
        free(value);
        if (rc != 0) {
            return setting_refuse(r, NULL, "out of memory");
        }
        p += n;
    }
    return 0;
}

/* The PATH entry of envp ("PATH=..."; NULL-terminated, or NULL), or NULL. */
static const char *
env_path(char *const *envp)
{
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
        if (strncmp(envp[i], "PATH=", 5) == 0) {
            return envp[i];
        }
    }
    return NULL;
}

/* A script's #! line names an interpreter the kernel can run: the check
 * twiced -t makes, where running it would fail every job with "No such
 * file or directory" for a file that is there. A file we cannot read, or a
 * relative interpreter, is left to the kernel. 0, or -1 with r. */
static int
check_interpreter(const char *file, struct setting_refusal *r)
{
    char head[256]; /* what the kernel reads of a script's first line */
    struct stat st;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof(head) - 1) : -1;
    if (fd >= 0) {
        close(fd);
    }
    if (n < 2 || head[0] != '#' || head[1] != '!') {
        return 0;
    }
    head[n] = '\0';
    char *interp = head + 2 + strspn(head + 2, " \t");
    size_t len = strcspn(interp, " \t\n");
    interp[len] = '\0';
    if (len > 0 && interp[len - 1] == '\r') {
        return setting_refuse(r, "command",
                              "%s: its #! line ends in a carriage return (saved with Windows line "
                              "ends?): no interpreter '%.*s\\r'",
                              file, (int) (len - 1 < 200 ? len - 1 : 200), interp);
    }
    errno = 0;
    if (interp[0] == '/' &&
        (stat(interp, &st) != 0 || !S_ISREG(st.st_mode) || access(interp, X_OK) != 0)) {
        return setting_refuse(r, "command", "%s: its interpreter %.200s (the #! line): %s", file,
                              interp, errno != 0 ? strerror(errno) : "not an executable file");
    }
    return 0;
}

/* The program to run: argv0 itself when it holds a '/' (relative to dir),
 * else the first executable file of that name in PATH (the handler's
 * own PATH when its environment has one). from says where that PATH came
 * from, for the operator: the program may be right and PATH or directory
 * wrong. 0, or -1 with r blaming command, which names the program. */
static int
find_program(struct exec_cmd *c, const char *from, struct setting_refusal *r)
{
    const char *argv0 = c->argv[0], *path = DEFAULT_PATH;
    char full[4096];
    struct stat st;
    if (strchr(argv0, '/') != NULL) {
        int in_dir = argv0[0] != '/' && c->dir != NULL;
        snprintf(full, sizeof(full), "%s%s%s", in_dir ? c->dir : "", in_dir ? "/" : "", argv0);
        errno = 0;
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode) || access(full, X_OK) != 0) {
            return setting_refuse(r, "command", "%s: %s%s", full,
                                  errno != 0 ? strerror(errno) : "not an executable file",
                                  in_dir ? " (relative to 'directory')" : "");
        }
        if (check_interpreter(full, r) != 0) {
            return -1;
        }
        c->program = strdup(argv0);
        return c->program != NULL ? 0 : setting_refuse(r, NULL, "out of memory");
    }
    const char *entry = env_path(c->envp);
    path = entry != NULL ? entry + 5 : path;
    int skipped = 0; /* relative directories of PATH, never searched */
    for (const char *p = path; *p != '\0'; p += *p == ':') {
        size_t n = strcspn(p, ":");
        snprintf(full, sizeof(full), "%.*s/%s", (int) n, n > 0 ? p : ".", argv0);
        p += n;
        skipped += full[0] != '/';
        if (full[0] == '/' && stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
            access(full, X_OK) == 0) {
            if (check_interpreter(full, r) != 0) {
                return -1;
            }
            c->program = strdup(full);
            return c->program != NULL ? 0 : setting_refuse(r, NULL, "out of memory");
        }
    }
    return setting_refuse(r, "command", "'%.64s' is not an executable file in PATH (%.200s; %s)%s",
                          argv0, path, from,
                          skipped ? "; its relative directories are not searched" : "");
}

/* directory, when set: a directory we may enter. 0, or -1 with r. */
static int
check_dir(struct exec_cmd *c, const char *dir, struct setting_refusal *r)
{
    struct stat st;
    if (dir == NULL) {
        return 0;
    }
    errno = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, X_OK) != 0) {
        return setting_refuse(r, "directory", "%s: %s", dir,
                              errno != 0 ? strerror(errno) : "not a directory");
    }
    c->dir = strdup(dir);
    return c->dir != NULL ? 0 : setting_refuse(r, NULL, "out of memory");
}

/* The handler's environment: pass_env's variables, then env's over them.
 * *from says where its PATH came from. 0, or -1 with r. */
static int
parse_environ(struct strv *envp, const char *pass_env, const char *env, const char **from,
              struct setting_refusal *r)
{
    if (parse_pass_env(envp, pass_env != NULL ? pass_env : "", r) != 0) {
        return -1;
    }
    const char *entry = env_path(envp->v);
    char *passed = entry != NULL ? strdup(entry) : NULL;
    if (entry != NULL && passed == NULL) {
        return setting_refuse(r, NULL, "out of memory");
    }
    int rc = parse_env(envp, env != NULL ? env : "", r);
    entry = env_path(envp->v);
    if (entry == NULL) {
        *from = "the default: PATH is neither in 'pass_env' nor set by 'env'";
    } else if (passed != NULL && strcmp(entry, passed) == 0) {
        *from = "twiced's own, passed by 'pass_env'";
    } else {
        *from = "set by 'env'";
    }
    free(passed);
    return rc;
}

int
exec_cmd_parse(struct exec_cmd *c, const char *command, const char *env, const char *pass_env,
               const char *dir, struct setting_refusal *r)
{
    struct strv argv = {NULL, 0}, envp = {NULL, 0};
    const char *from = NULL; /* where PATH came from */
    int rc = -1;
    memset(c, 0, sizeof(*c));
    if (command == NULL) {
        setting_refuse(r, "command", "is not set (the program to run)");
    } else if (parse_argv(&argv, command, r) == 0 &&
               parse_environ(&envp, pass_env, env, &from, r) == 0) {
        c->argv = argv.v;
        c->envp = envp.v != NULL ? envp.v : calloc(1, sizeof(char *));
        argv.v = envp.v = NULL;
        if (c->envp == NULL) {
            setting_refuse(r, NULL, "out of memory");
        } else if (check_dir(c, dir, r) == 0) {
            rc = find_program(c, from, r);
        }
    }
    strv_free(argv.v);
    strv_free(envp.v);
    if (rc != 0) {
        exec_cmd_free(c);
    }
    return rc;
}

void
exec_cmd_free(struct exec_cmd *c)
{
    strv_free(c->argv);
    strv_free(c->envp);
    free(c->program);
    free(c->dir);
    memset(c, 0, sizeof(*c));
}
