/*
 * awsconfig.c - reading one profile out of the AWS shared credentials and
 * config files (awsconfig.h). Not a credential provider (creds.c is) and
 * not a writer: the files belong to the user and the AWS CLI.
 */
#include "awsconfig.h"

#include "ascii.h"
#include "buf.h"
#include "fileopen.h"
#include "url.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct awsconfig_entry {
    char *key; /* lower case */
    char *value;
};

struct awsconfig_section {
    struct awsconfig_entry *entries;
    size_t n, cap;
};

const char *
awsconfig_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

/* HOME, else the password database's entry: services started without a
 * HOME still find their user's files. A new string, or NULL (errno). */
static char *
home_dir(void)
{
    const char *home = awsconfig_env("HOME");
    struct passwd pw, *res = NULL;
    char pwbuf[4096];

    if (home != NULL) {
        return strdup(home);
    }
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) != 0 || res == NULL ||
        pw.pw_dir == NULL || *pw.pw_dir == '\0') {
        errno = ENOENT;
        return NULL;
    }
    return strdup(pw.pw_dir);
}

/* home + "/" + rest, or NULL with errno. */
static char *
under_home(const char *rest)
{
    char *home = home_dir(), *path = NULL;

    if (home != NULL && asprintf(&path, "%s/%s", home, rest) < 0) {
        path = NULL;
        errno = ENOMEM;
    }
    free(home);
    return path;
}

char *
awsconfig_path(enum awsconfig_kind kind, const char **shown)
{
    const char *var =
        kind == AWSCONFIG_CREDENTIALS ? "AWS_SHARED_CREDENTIALS_FILE" : "AWS_CONFIG_FILE";
    const char *dflt = kind == AWSCONFIG_CREDENTIALS ? "~/.aws/credentials" : "~/.aws/config";
    const char *path = awsconfig_env(var);

    if (path == NULL) {
        path = dflt;
    }
    if (shown != NULL) {
        *shown = path;
    }
    if (strncmp(path, "~/", 2) == 0) {
        return under_home(path + 2);
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        errno = ENOMEM;
    }
    return copy;
}

const char *
awsconfig_profile_name(const char *profile)
{
    const char *env = awsconfig_env("AWS_PROFILE");

    if (profile != NULL && *profile != '\0') {
        return profile;
    }
    return env != NULL ? env : "default";
}

void
awsconfig_section_free(struct awsconfig_section *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        free(s->entries[i].key);
        buf_free_secret(s->entries[i].value);
    }
    free(s->entries);
    free(s);
}

const char *
awsconfig_get(const struct awsconfig_section *s, const char *key)
{
    for (size_t i = s != NULL ? s->n : 0; i-- > 0;) {
        if (ascii_strcasecmp(s->entries[i].key, key) == 0) {
            return s->entries[i].value;
        }
    }
    return NULL;
}

/* Set key (n bytes, stored lower case) to value (vn bytes), replacing an
 * earlier value: the last one in the file wins. 0 or -1 (ENOMEM). */
static int
section_set(struct awsconfig_section *s, const char *key, size_t n, const char *value, size_t vn)
{
    char *k = strndup(key, n), *v = strndup(value, vn);

    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -1;
    }
    for (char *p = k; *p; p++) {
        *p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    }
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->entries[i].key, k) == 0) {
            buf_free_secret(s->entries[i].value);
            free(k);
            s->entries[i].value = v;
            return 0;
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct awsconfig_entry *e = realloc(s->entries, cap * sizeof(*e));
        if (e == NULL) {
            free(k);
            free(v);
            return -1;
        }
        s->entries = e;
        s->cap = cap;
    }
    s->entries[s->n].key = k;
    s->entries[s->n++].value = v;
    return 0;
}

static int
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Narrow [*p, *p + *n) to drop blanks at both ends. */
static void
trim(const char **p, size_t *n)
{
    while (*n > 0 && is_blank(**p)) {
        (*p)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*p)[*n - 1])) {
        (*n)--;
    }
}

/* Whether the header between the brackets names profile's section. */
static int
header_matches(const char *h, size_t n, enum awsconfig_kind kind, const char *profile)
{
    size_t plen = strlen(profile);

    trim(&h, &n);
    if (kind == AWSCONFIG_CREDENTIALS) {
        return n == plen && memcmp(h, profile, n) == 0;
    }
    if (n == 7 && memcmp(h, "default", 7) == 0) {
        return strcmp(profile, "default") == 0;
    }
    if (n > 8 && memcmp(h, "profile", 7) == 0 && is_blank(h[7])) {
        h += 8;
        n -= 8;
        trim(&h, &n);
        return n == plen && memcmp(h, profile, n) == 0;
    }
    return 0;
}

struct parse_state {
    enum awsconfig_kind kind;
    const char *profile;
    struct awsconfig_section *out;
    int in_section; /* the current section is the profile's */
    int in_value;   /* a key was seen: indented lines continue it */
    int found;
};

/* One line (NUL-terminated, no '\n'). 0, or -1 on ENOMEM. */
static int
parse_line(struct parse_state *st, const char *line)
{
    const char *p = line;
    size_t n = strlen(line);

    trim(&p, &n);
    if (n == 0 || *p == '#' || *p == ';') {
        return 0;
    }
    if (p != line && st->in_value) {
        return 0; /* continuation of a nested value such as "s3 =" */
    }
    if (*p == '[') {
        const char *close = memchr(p, ']', n);
        st->in_section = close != NULL &&
                         header_matches(p + 1, (size_t) (close - p - 1), st->kind, st->profile);
        st->found |= st->in_section;
        st->in_value = 0;
        return 0;
    }
    const char *eq = memchr(p, '=', n);
    if (eq == NULL) {
        return 0; /* not a key = value line: botocore refuses the file, we skip it */
    }
    st->in_value = 1;
    if (!st->in_section) {
        return 0;
    }
    const char *k = p, *v = eq + 1;
    size_t kn = (size_t) (eq - p), vn = (size_t) (p + n - v);
    trim(&k, &kn);
    trim(&v, &vn);
    return section_set(st->out, k, kn, v, vn);
}

/* Read from fd until the end, or until more than max bytes came; 0 or -1
 * (errno; EFBIG for too much). text has room for max + 1 bytes. */
static int
read_upto(int fd, char *text, size_t max, size_t *got)
{
    *got = 0;
    for (;;) {
        ssize_t n = read(fd, text + *got, max + 1 - *got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            return 0;
        }
        *got += (size_t) n;
        if (*got > max) {
            errno = EFBIG;
            return -1;
        }
    }
}

char *
awsconfig_read_file(const char *path, size_t max, size_t *len)
{
    struct stat st;
    char *text = NULL;
    size_t got = 0;
    int fd = fileopen_read(path); /* a FIFO with no writer: never waited for */

    if (fd < 0) {
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        goto fail;
    }
    if (S_ISDIR(st.st_mode) || (uintmax_t) st.st_size > max) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EFBIG;
        goto fail;
    }
    if ((text = malloc(max + 2)) == NULL || read_upto(fd, text, max, &got) != 0) {
        goto fail;
    }
    close(fd);
    text[got] = '\0';
    *len = got;
    return text;
fail:;
    int saved = errno;
    if (text != NULL) {
        explicit_bzero(text, got);
    }
    free(text);
    close(fd);
    errno = saved;
    return NULL;
}

enum awsconfig_status
awsconfig_read_profile(const char *path, enum awsconfig_kind kind, const char *profile,
                       struct awsconfig_section **out)
{
    struct parse_state st = {kind, profile, NULL, 0, 0, 0};
    enum awsconfig_status rc = AWSCONFIG_ERROR;
    size_t len = 0;
    char *text = awsconfig_read_file(path, AWSCONFIG_MAX_FILE, &len);

    *out = NULL;
    if (text == NULL) {
        return errno == ENOENT || errno == ENOTDIR ? AWSCONFIG_NO_FILE : AWSCONFIG_ERROR;
    }
    st.out = calloc(1, sizeof(*st.out));
    if (st.out == NULL) {
        errno = ENOMEM;
        goto out;
    }
    for (char *line = text; line != NULL;) {
        char *next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (parse_line(&st, line) != 0) {
            errno = ENOMEM;
            goto out;
        }
        line = next;
    }
    rc = st.found ? AWSCONFIG_OK : AWSCONFIG_NO_SECTION;
    if (st.found) {
        *out = st.out;
        st.out = NULL;
    }
out:
    awsconfig_section_free(st.out);
    explicit_bzero(text, len);
    free(text);
    return rc;
}

int
awsconfig_profile_value(const char *profile, const char *key, char **out)
{
    struct awsconfig_section *s = NULL;
    char *path = awsconfig_path(AWSCONFIG_CONFIG, NULL);
    int rc = -1;

    *out = NULL;
    if (path == NULL) {
        return errno == ENOENT ? 0 : -1; /* no home directory: no file */
    }
    switch (awsconfig_read_profile(path, AWSCONFIG_CONFIG, awsconfig_profile_name(profile), &s)) {
    case AWSCONFIG_OK: {
        const char *v = awsconfig_get(s, key);
        rc = v != NULL && *v != '\0' ? 1 : 0;
        if (rc == 1 && (*out = strdup(v)) == NULL) {
            errno = ENOMEM;
            rc = -1;
        }
        break;
    }
    case AWSCONFIG_NO_FILE:
    case AWSCONFIG_NO_SECTION:
        rc = 0;
        break;
    case AWSCONFIG_ERROR:
        rc = -1;
        break;
    }
    awsconfig_section_free(s);
    free(path);
    return rc;
}

const char *
awsconfig_endpoint_env(const char *service, const char **name)
{
    static __thread char var[64];
    const char *ignore = awsconfig_env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    const char *url = NULL;
    *name = NULL;
    if (ignore == NULL || ascii_strcasecmp(ignore, "true") != 0) {
        snprintf(var, sizeof(var), "AWS_ENDPOINT_URL_%s", service);
        for (char *p = var; *p != '\0'; p++) {
            *p = (char) ascii_toupper((unsigned char) *p);
        }
        *name = var;
        if ((url = awsconfig_env(var)) == NULL) {
            url = awsconfig_env(*name = "AWS_ENDPOINT_URL");
        }
    }
    return url;
}

char *
awsconfig_service_url(const char *service, const char *region)
{
    const char *name, *url = awsconfig_endpoint_env(service, &name);
    char *out = NULL;

    if (url != NULL) {
        out = strdup(url);
    } else if (region == NULL) {
        if (asprintf(&out, "https://%s.amazonaws.com", service) < 0) {
            out = NULL;
        }
    } else if (asprintf(&out, "https://%s.%s.amazonaws.com%s", service, region,
                        strncmp(region, "cn-", 3) == 0 ? ".cn" : "") < 0) {
        out = NULL;
    }
    return out;
}

char *
awsconfig_sts_url(const char *region, char *why, size_t whylen)
{
    const char *name, *v = awsconfig_endpoint_env("sts", &name), *bad;
    if (v != NULL && (bad = url_problem(v, URL_NO_QUERY)) != NULL) {
        snprintf(why, whylen, "%s: not a usable STS endpoint URL: %s", name, bad);
        return NULL;
    }
    char *url = awsconfig_service_url("sts", region);
    if (url == NULL) {
        snprintf(why, whylen, "out of memory");
    }
    return url;
}
