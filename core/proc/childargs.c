/*
 * childargs.c - the command line between the master and its children (see
 * childargs.h). The format is private to one twiced binary: the master
 * only ever execs itself.
 */
#include "childargs.h"

#include "buf.h"
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* "5,6,7": the plugin fds as one argument, or NULL when out of memory. */
static char *
fd_list(const int *fds, size_t n)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_printf(&b, "%s%d", i > 0 ? "," : "", fds[i]);
    }
    return b.failed ? (buf_free(&b), NULL) : buf_steal(&b);
}

int
childargs_build(const struct childargs *a, struct childargs_argv *out)
{
    int n = 0, s = 0;
    char **argv = out->argv;
    out->fds = NULL;
    argv[n++] = "twiced";
    argv[n++] = a->mode == CHILD_WORKER ? "--worker" : "--probe";
#define NUM(flag, v)                                                                              \
    do {                                                                                          \
        snprintf(out->num[s], sizeof(out->num[s]), "%d", (int) (v));                              \
        argv[n++] = flag;                                                                         \
        argv[n++] = out->num[s++];                                                                \
    } while (0)
    NUM("--config-fd", a->config_fd);
    NUM("--shm-fd", a->shm_fd);
    NUM("--ctl-fd", a->ctl_fd);
    NUM("--slot", a->slot);
    NUM("--generation", a->generation);
    NUM("--master-pid", a->master_pid);
    argv[n++] = "--config-path";
    argv[n++] = (char *) a->config_path;
    argv[n++] = "--instance";
    argv[n++] = (char *) a->instance;
    if (a->mode == CHILD_PROBE && a->check_fd >= 0) {
        NUM("--check-fd", a->check_fd);
    }
    if (a->nplugin_fds > 0) {
        if ((out->fds = fd_list(a->plugin_fds, a->nplugin_fds)) == NULL) {
            return -1;
        }
        argv[n++] = "--plugin-fds";
        argv[n++] = out->fds;
    }
#undef NUM
    argv[n] = NULL;
    return 0;
}

void
childargs_argv_free(struct childargs_argv *out)
{
    free(out->fds);
    out->fds = NULL;
}

/* Parse "5,6,7" into a new array; -1 is a plugin file the master could not
 * open (the probe skips it: the master has said why). 0, or -1 when it is
 * not such a list. */
static int
parse_fds(const char *v, struct childargs *out)
{
    size_t n = 1;
    for (const char *p = v; *p != '\0'; p++) {
        n += *p == ',';
    }
    int *fds = calloc(n, sizeof(*fds));
    if (fds == NULL) {
        return -1;
    }
    const char *p = v;
    for (size_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long fd = strtol(p, &end, 10);
        if (errno != 0 || end == p || fd < -1 || fd > 0x7fffffff ||
            (*end != ',' && *end != '\0')) {
            free(fds);
            return -1;
        }
        fds[i] = (int) fd;
        p = end + 1;
    }
    free((void *) out->plugin_fds);
    out->plugin_fds = fds;
    out->nplugin_fds = n;
    return 0;
}

void
childargs_release(struct childargs *a)
{
    free((void *) a->plugin_fds);
    a->plugin_fds = NULL;
    a->nplugin_fds = 0;
}

static int
parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < -1 || v > 0x7fffffff) {
        return -1;
    }
    *out = (int) v;
    return 0;
}

static int
parse_args(int argc, char **argv, struct childargs *out, char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--worker") == 0 || strcmp(a, "--probe") == 0) {
            out->mode = a[2] == 'w' ? CHILD_WORKER : CHILD_PROBE;
            continue;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        }
        const char *v = argv[++i];
        int n = 0;
        if (strcmp(a, "--config-path") == 0) {
            out->config_path = v;
            continue;
        }
        if (strcmp(a, "--instance") == 0) {
            out->instance = v;
            continue;
        }
        if (strcmp(a, "--plugin-fds") == 0) {
            if (parse_fds(v, out) != 0) {
                snprintf(err, errlen, "%s: bad descriptor list %s", a, v);
                return -1;
            }
            continue;
        }
        if (parse_int(v, &n) != 0) {
            snprintf(err, errlen, "%s: bad number %s", a, v);
            return -1;
        }
        if (strcmp(a, "--config-fd") == 0) {
            out->config_fd = n;
        } else if (strcmp(a, "--shm-fd") == 0) {
            out->shm_fd = n;
        } else if (strcmp(a, "--ctl-fd") == 0) {
            out->ctl_fd = n;
        } else if (strcmp(a, "--slot") == 0) {
            out->slot = n;
        } else if (strcmp(a, "--generation") == 0) {
            out->generation = n;
        } else if (strcmp(a, "--master-pid") == 0) {
            out->master_pid = (pid_t) n;
        } else if (strcmp(a, "--check-fd") == 0) {
            out->check_fd = n;
        } else {
            snprintf(err, errlen, "unknown option %s", a);
            return -1;
        }
    }
    if (out->mode == 0 || out->config_fd < 0 || out->config_path == NULL ||
        out->instance == NULL) {
        snprintf(err, errlen, "internal command line incomplete (this mode is for twiced itself)");
        return -1;
    }
    return 0;
}

int
childargs_parse(int argc, char **argv, struct childargs *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->config_fd = out->shm_fd = out->ctl_fd = out->check_fd = -1;
    if (parse_args(argc, argv, out, err, errlen) != 0) {
        childargs_release(out);
        return -1;
    }
    return 0;
}

int
childargs_load_config(const struct childargs *a, struct config **out, char *err, size_t errlen)
{
    struct diag d = DIAG_INIT;
    char *text = NULL;
    size_t len = 0;
    int rc = config_text_read(a->config_fd, a->config_path, &text, &len, &d);
    close(a->config_fd);
    if (rc == 0) {
        rc = config_load(a->config_path, text, out, &d);
    }
    buf_free_secret(text); /* the DSN, passwords and webhook tokens */
    if (rc != 0) {
        snprintf(err, errlen, "%s%s", d.n > 0 ? d.lines[0] : "invalid configuration",
                 d.n > 1 ? " (and more problems)" : "");
    }
    diag_free(&d);
    return rc;
}

void
childargs_owner(char *out, size_t cap, pid_t pid, int gen, const char *instance)
{
    char host[64] = "localhost";
    if (gethostname(host, sizeof(host) - 1) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    host[sizeof(host) - 1] = '\0';
    snprintf(out, cap, "%s:%d:g%d:%s", host, (int) pid, gen, instance);
}

void
childargs_instance(char *out, size_t cap)
{
    unsigned char r[8] = {0};
    if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r)) {
        unsigned long long t = (unsigned long long) time(NULL) ^ (unsigned long long) getpid();
        memcpy(r, &t, sizeof(r));
    }
    size_t n = 0;
    for (size_t i = 0; i < sizeof(r) && n + 2 < cap; i++) {
        n += (size_t) snprintf(out + n, cap - n, "%02x", r[i]);
    }
}

int
childargs_memfd(const char *text, size_t len)
{
    int fd = memfd_create("twice-config", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        off += (size_t) n;
    }
    return fd;
}
