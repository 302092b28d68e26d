/*
 * pidfile.c - the master's pid file and `twiced -s` (see pidfile.h). The
 * lock is an OFD lock (fcntl F_OFD_SETLK): it belongs to the open file, so
 * it survives the fork of -d, is not lost when some other descriptor of the
 * file is closed, and can be tested (F_OFD_GETLK) without being taken.
 */
#include "pidfile.h"

#include "cnum.h"
#include "config.h"
#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pidfile {
    int fd;
    char *path;
};

static int
lock_op(int fd, int cmd, short type, struct flock *fl)
{
    memset(fl, 0, sizeof(*fl));
    fl->l_type = type;
    fl->l_whence = SEEK_SET; /* the whole file */
    return fcntl(fd, cmd, fl);
}

/* The pid written in fd, or -1. */
static pid_t
read_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    return end != buf && (*end == '\n' || *end == '\0') && pid > 0 && pid < 0x7fffffff
               ? (pid_t) pid
               : -1;
}

/* Lock fd; 0, 1 when another process holds it (err says who), -1 on errors. */
static int
take(int fd, const char *path, char *err, size_t errlen)
{
    struct flock fl;
    if (lock_op(fd, F_OFD_SETLK, F_WRLCK, &fl) == 0) {
        return 0;
    }
    if (errno != EAGAIN && errno != EACCES) {
        snprintf(err, errlen, "pid_file %s: lock: %s", path, cnum_strerror(errno));
        return -1;
    }
    pid_t pid = read_pid(fd);
    if (pid > 0) {
        snprintf(err, errlen, "twiced is already running as pid %d (pid file %s)", (int) pid,
                 path);
    } else {
        snprintf(err, errlen, "another twiced is starting with pid file %s", path);
    }
    return 1;
}

/* Why path cannot be opened (errno err): O_NOFOLLOW's ELOOP said plainly. */
static const char *
open_why(int err)
{
    return err == ELOOP ? "a symbolic link (twiced does not follow one here: set pid_file to "
                          "the file it points to)"
                        : cnum_strerror(err);
}

int
pidfile_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    size_t n = strlen(path);
    int why = 0;
    if (n > 0 && path[n - 1] == '/') {
        why = EISDIR;
    } else if (lstat(path, &st) != 0) {
        why = errno == ENOENT ? 0 : errno;
    } else if (S_ISDIR(st.st_mode)) {
        why = EISDIR;
    } else if (S_ISLNK(st.st_mode)) {
        why = ELOOP;
    }
    if (why != 0) {
        snprintf(err, errlen, "pid_file %s: %s", path, open_why(why));
        return -1;
    }
    return 0;
}

char *
pidfile_absolute(const char *path)
{
    char cwd[PATH_MAX];
    if (path[0] == '/') {
        return strdup(path);
    }
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
        return NULL;
    }
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *out = malloc(n);
    if (out != NULL) {
        snprintf(out, n, "%s/%s", cwd, path);
    }
    return out;
}

int
pidfile_acquire(const char *path, struct pidfile **out, char *err, size_t errlen)
{
    *out = NULL;
    /* A file the previous owner removes between our open and lock is not
     * the path any more: open it again (a few times at most). */
    for (int tries = 0; tries < 5; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "pid_file %s: %s", path, open_why(errno));
            return -1;
        }
        struct stat held, now;
        int rc = take(fd, path, err, errlen);
        if (rc != 0) {
            close(fd);
            return -1;
        }
        if (fstat(fd, &held) == 0 && stat(path, &now) == 0 && held.st_dev == now.st_dev &&
            held.st_ino == now.st_ino) {
            struct pidfile *p = calloc(1, sizeof(*p));
            /* Absolute: the master removes the file at exit, when -d has
             * changed the working directory. */
            if (p == NULL || (p->path = pidfile_absolute(path)) == NULL) {
                snprintf(err, errlen, "pid_file %s: %s", path, cnum_strerror(errno));
                free(p);
                close(fd);
                return -1;
            }
            p->fd = fd;
            *out = p;
            return 0;
        }
        close(fd);
    }
    snprintf(err, errlen, "pid_file %s keeps being replaced", path);
    return -1;
}

int
pidfile_write(struct pidfile *p, char *err, size_t errlen)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int) getpid());
    if (ftruncate(p->fd, 0) != 0 || pwrite(p->fd, buf, (size_t) n, 0) != n) {
        snprintf(err, errlen, "pid_file %s: %s", p->path, cnum_strerror(errno));
        return -1;
    }
    return 0;
}

void
pidfile_release(struct pidfile *p)
{
    if (p == NULL) {
        return;
    }
    unlink(p->path); /* while still locked: nobody takes it over half-removed */
    close(p->fd);
    free(p->path);
    free(p);
}

pid_t
pidfile_read_live(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "pid file %s: %s (is twiced running?)", path, cnum_strerror(errno));
        return -1;
    }
    struct flock fl;
    pid_t pid = -1;
    if (lock_op(fd, F_OFD_GETLK, F_WRLCK, &fl) != 0) {
        snprintf(err, errlen, "pid file %s: %s", path, cnum_strerror(errno));
    } else if (fl.l_type == F_UNLCK) {
        snprintf(err, errlen, "pid file %s is stale: no twiced holds it (is twiced running?)",
                 path);
    } else if ((pid = read_pid(fd)) < 0) {
        snprintf(err, errlen, "pid file %s does not hold a pid yet (twiced is starting?)", path);
    }
    close(fd);
    return pid;
}

char *
pidfile_configured(const char *config_path, const char *setting)
{
    const char *slash = strrchr(config_path, '/');
    if (setting[0] == '/' || slash == NULL) {
        return strdup(setting);
    }
    size_t dir = (size_t) (slash - config_path);
    size_t n = dir + strlen(setting) + 2;
    char *out = malloc(n);
    if (out != NULL) {
        snprintf(out, n, "%.*s/%s", (int) dir, config_path, setting);
    }
    return out;
}

/* The pid_file of the configuration at path, or NULL (and why on stderr). */
static char *
configured_pid_file(const char *path, const char *name)
{
    struct config *c = NULL;
    struct diag d = DIAG_INIT;
    char *pid_file = NULL;
    if (config_load(path, NULL, &c, &d) != 0) {
        for (size_t i = 0; i < d.n; i++) {
            fprintf(stderr, "%s\n", d.lines[i]);
        }
        diag_print_line(stderr,
                        "twiced: -s %s: cannot read pid_file from %s (problems above); give -p "
                        "FILE",
                        name, path);
    } else if (c->pid_file == NULL) {
        diag_print_line(stderr, "twiced: -s %s: %s sets no pid_file; give -p FILE", name, path);
    } else if ((pid_file = pidfile_configured(path, c->pid_file)) == NULL) {
        fprintf(stderr, "twiced: out of memory\n");
    }
    diag_free(&d);
    config_free(c);
    return pid_file;
}

int
pidfile_signal(const char *config_path, const char *pid_path, const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } names[] = {{"reload", SIGHUP}, {"stop", SIGTERM}, {"quit", SIGQUIT}, {"reopen", SIGUSR1}};
    int sig = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i].name) == 0) {
            sig = names[i].sig;
        }
    }
    if (sig == 0) {
        diag_print_line(stderr, "twiced: -s %s: the signals are reload, stop, quit and reopen",
                        name);
        return 2;
    }
    char err[512];
    char *configured = pid_path == NULL ? configured_pid_file(config_path, name) : NULL;
    if (pid_path == NULL && configured == NULL) {
        return 1;
    }
    pid_t pid = pidfile_read_live(pid_path != NULL ? pid_path : configured, err, sizeof(err));
    free(configured);
    if (pid < 0) {
        diag_print_line(stderr, "twiced: -s %s: %s", name, err);
        if (pid_path == NULL) { /* a reload does not move the pid file: say so */
            diag_print_line(stderr,
                            "twiced: -s %s: pid_file as %s sets it now; a change since twiced "
                            "started takes effect at its next start (give -p with the file it "
                            "uses)",
                            name, config_path);
        }
        return 1;
    }
    if (kill(pid, sig) != 0) {
        diag_print_line(stderr, "twiced: -s %s: pid %d: %s%s", name, (int) pid,
                        cnum_strerror(errno),
                        errno == EPERM ? " (run it as twiced's user or root)" : "");
        return 1;
    }
    return 0;
}
