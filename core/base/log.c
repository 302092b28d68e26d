/*
 * log.c - the line logger of log.h. Global state is a few scalars set at
 * start-up or reload; a line is built in a local buffer and written once.
 */
#include "log.h"

#include "atomics.h"
#include "buf.h"
#include "cnum.h"
#include "cut.h"
#include "escape.h"
#include "fdguard.h"
#include "fileopen.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Where lines go: stderr, then the descriptor the first log.file was
 * opened on, for good; a reopen points that descriptor at the new file in
 * one step (dup3), so a thread writing a line never meets a closed or
 * reused one. */
static struct shared_int log_fd = {2};
/* Set on a reload while other threads log. */
static struct shared_int log_level = {TWICE_LOG_INFO};
static struct shared_int log_format = {LOG_FORMAT_TEXT};
static char log_role[32] = "twiced";
/* The file log_open was last asked for (opened or not), for log_reopen;
 * NULL for stderr. Only the thread that calls log_open (a process's main
 * thread) touches it. */
static char *log_path;
/* The file log_fd was pointed at last, when it is not stderr: a reopen
 * writes over log_fd only while it is still that file, not after a plugin
 * closed it (its number may be another's by now). Main thread only. */
static struct fdguard_id log_id = FDGUARD_ID_NONE;
/* The same file's identity for the threads that write lines (atomic), and
 * during a reopen that of the file it is being pointed at (dup3 swaps them
 * in one step, between the stores here): a line goes to log_fd only while
 * it is one of them. After a plugin closed twiced's descriptors its number
 * is the next open's (a thread's new connection to PostgreSQL, say), which
 * must not get log lines. */
static _Atomic unsigned long long log_file_dev, log_file_ino, log_next_dev, log_next_ino;
/* The file before the last reopen: a thread that looked at the descriptor
 * just before the swap still writes to a file of the log's. */
static _Atomic unsigned long long log_prev_dev, log_prev_ino;
/* Lines log.file refused (a full disk, an I/O error) since it last took
 * one: the first refusal is said once on stderr, the count once the file
 * takes lines again. */
static atomic_int log_lost;

/* This process's pid for the lines, read once: getpid() is a system call,
 * and the worker logs every duplicate at info. 0: not read yet; a forked
 * child clears it (the fork handler), so a line of the child has its own. */
static atomic_int log_pid_cache;
static pthread_once_t log_pid_once = PTHREAD_ONCE_INIT;

static void
log_pid_forked(void)
{
    atomic_store_explicit(&log_pid_cache, 0, memory_order_relaxed);
}

static void
log_pid_register(void)
{
    (void) pthread_atfork(NULL, NULL, log_pid_forked);
}

static int
log_pid(void)
{
    int pid = atomic_load_explicit(&log_pid_cache, memory_order_relaxed);
    if (pid == 0) {
        pthread_once(&log_pid_once, log_pid_register);
        pid = (int) getpid();
        atomic_store_explicit(&log_pid_cache, pid, memory_order_relaxed);
    }
    return pid;
}

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *
log_level_name(twice_log_level level)
{
    if ((int) level < 0 || (int) level > TWICE_LOG_DEBUG) {
        return "?";
    }
    return level_names[level];
}

int
log_parse_level(const char *s, twice_log_level *out)
{
    for (int i = 0; i <= TWICE_LOG_DEBUG; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (twice_log_level) i;
            return 0;
        }
    }
    return -1;
}

int
log_parse_format(const char *s, enum log_format *out)
{
    if (strcmp(s, "text") == 0) {
        *out = LOG_FORMAT_TEXT;
    } else if (strcmp(s, "json") == 0) {
        *out = LOG_FORMAT_JSON;
    } else {
        return -1;
    }
    return 0;
}

/* The directory of path, as a new string (the caller frees): "." for a
 * bare name, "/" for a file at the root. NULL when out of memory. */
static char *
parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/'); /* at path: "/" stays, for a file at the root */
    char *dir =
        slash == NULL ? strdup(".") : strndup(path, (size_t) (slash - path) + (slash == path));
    if (dir == NULL) {
        errno = ENOMEM;
    }
    return dir;
}

int
log_dir_trusted(const struct stat *st)
{
    return st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* Whether log_open must not follow a symbolic link at path: run as root,
 * with path's directory one others can write (or one that cannot be
 * looked at: refused rather than guessed). */
static int
log_nofollow(const char *path)
{
    if (geteuid() != 0) {
        return 0; /* a link leads only where this user could write anyway */
    }
    char *dir = parent_dir(path);
    struct stat st;
    int trusted = dir != NULL && stat(dir, &st) == 0 && log_dir_trusted(&st);
    free(dir);
    return !trusted;
}

/* log_id's file, for still_log_file. */
static void
note_log_file(void)
{
    atomic_store(&log_prev_dev, atomic_load(&log_file_dev));
    atomic_store(&log_prev_ino, atomic_load(&log_file_ino));
    atomic_store(&log_file_dev, log_id.dev);
    atomic_store(&log_file_ino, log_id.ino);
}

/* A reopen is about to point log_fd at fd's file (0: it is over). */
static void
note_next_file(int fd)
{
    struct stat st;
    int known = fd >= 0 && fstat(fd, &st) == 0;
    atomic_store(&log_next_dev, known ? (unsigned long long) st.st_dev : 0);
    atomic_store(&log_next_ino, known ? (unsigned long long) st.st_ino : 0);
}

/* Whether fd is still the file log_open pointed it at, the one before it
 * or the one a reopen is pointing it at: a file of the log's (one fstat).
 * Read in the reverse of the order a reopen writes them (next, then the
 * file and the one before it, then next cleared): a line whose fstat saw
 * the new file finds it in next or, once next is cleared, in the file; one
 * that saw the old finds it in the file or, once that moved on, in prev. */
static int
still_log_file(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return 0;
    }
    unsigned long long dev = (unsigned long long) st.st_dev, ino = (unsigned long long) st.st_ino;
    return (ino != 0 && dev == atomic_load(&log_next_dev) && ino == atomic_load(&log_next_ino)) ||
           (dev == atomic_load(&log_file_dev) && ino == atomic_load(&log_file_ino)) ||
           (ino != 0 && dev == atomic_load(&log_prev_dev) && ino == atomic_load(&log_prev_ino));
}

int
log_open(const char *path)
{
    int want = path != NULL && path[0] != '\0';
    char *copy = want ? strdup(path) : NULL;
    if (want && copy == NULL) {
        errno = ENOMEM;
        return -1;
    }
    free(log_path);
    log_path = copy; /* asked for, opened or not: log_reopen tries it again */
    int fd = 2;
    int cur = shared_int_get(&log_fd);
    int ours = cur != 2 && fdguard_same(&log_id, cur); /* before the new file can take it */
    /* never waits: a named pipe no process reads fails at once (ENXIO) */
    if (want && (fd = fileopen_append(path, 0640, log_nofollow(path))) < 0) {
        return -1;
    }
    if (cur == 2 || !ours) {
        /* cur (not stderr) is left alone: closed, or another's now */
        fdguard_note(&log_id, fd != 2 ? fd : -1);
        note_log_file();
        shared_int_set(&log_fd, fd);
        return 0;
    }
    note_next_file(fd); /* lines written while dup3 swaps the files go to either */
    int rc = dup3(fd, cur, O_CLOEXEC);
    int saved = errno;
    if (rc >= 0) { /* else cur is still the file noted before */
        fdguard_note(&log_id, fd != 2 ? cur : -1);
        note_log_file();
    }
    note_next_file(-1);
    if (fd != 2) {
        close(fd);
    }
    errno = saved;
    return rc < 0 ? -1 : 0;
}

/* Whether the named pipe at path has a reader: opened for writing without
 * waiting (ENXIO when no process reads it) and closed at once, writing
 * nothing; never created (no O_CREAT), should it be gone by now. 0, or -1
 * with errno. */
static int
pipe_has_reader(const char *path)
{
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    close(fd);
    return 0;
}

int
log_can_open(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && log_nofollow(path)) {
        errno = ELOOP; /* what log_open's O_NOFOLLOW answers */
        return -1;
    }
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return -1;
        }
        if (access(path, W_OK) != 0) {
            return -1;
        }
        return S_ISFIFO(st.st_mode) ? pipe_has_reader(path) : 0;
    }
    if (errno != ENOENT) {
        return -1;
    }
    /* Not there: open() would create it if its directory takes a new file. */
    char *dir = parent_dir(path);
    if (dir == NULL) {
        return -1;
    }
    int rc = access(dir, W_OK | X_OK);
    int saved = errno;
    free(dir);
    errno = saved;
    return rc;
}

int
log_reopen(void)
{
    if (log_path == NULL) {
        return 0;
    }
    char *path = strdup(log_path);
    if (path == NULL) {
        errno = ENOMEM;
        return -1;
    }
    int rc = log_open(path);
    int saved = errno;
    free(path);
    errno = saved;
    return rc;
}

const char *
log_open_why(const char *path, int err)
{
    struct stat st;
    if (err == ENXIO && path != NULL && stat(path, &st) == 0 && S_ISFIFO(st.st_mode)) {
        return "a named pipe that no process reads (start its reader first)";
    }
    if (err == ELOOP && path != NULL && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        return "a symbolic link in a directory users other than root can write, which root "
               "does not follow (set log.file to the link's target, or make the directory "
               "root's alone)";
    }
    return cnum_strerror(err);
}

const char *
log_file(void)
{
    return log_path;
}

void
log_set_level(twice_log_level level)
{
    shared_int_set(&log_level, (int) level);
}

void
log_set_format(enum log_format format)
{
    shared_int_set(&log_format, (int) format);
}

void
log_set_role(const char *role)
{
    snprintf(log_role, sizeof(log_role), "%s", role);
}

int
log_enabled(twice_log_level level)
{
    return (int) level <= shared_int_get(&log_level);
}

/* The line's UTC time, "2026-12-05T14:03:07.123Z", into out[40]. The text up
 * to the second is kept per thread and made again (gmtime_r, strftime) when
 * the second changes: a worker logging a line per duplicate writes many
 * lines a second. */
static void
timestamp(char out[40])
{
    static _Thread_local time_t second = -1;
    static _Thread_local char text[32];
    static _Thread_local size_t len;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (tv.tv_sec != second) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        len = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
        second = len > 0 ? tv.tv_sec : -1;
    }
    int ms = (int) (tv.tv_usec / 1000);
    memcpy(out, text, len);
    out[len] = '.';
    out[len + 1] = (char) ('0' + ms / 100);
    out[len + 2] = (char) ('0' + ms / 10 % 10);
    out[len + 3] = (char) ('0' + ms % 10);
    memcpy(out + len + 4, "Z", 2);
}

/* JSON values go through escape_text first so jansson always gets valid UTF-8
 * (invalid bytes become the visible text \xNN). */
static void
json_field(json_t *obj, const char *name, const char *value)
{
    if (value == NULL) {
        return;
    }
    struct buf clean = BUF_INIT;
    const unsigned char *p = (const unsigned char *) value;
    size_t n = strlen(value);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(p + i, n - i);
        if (len == 0) {
            buf_printf(&clean, "\\x%02x", p[i]);
            i++;
        } else {
            buf_append(&clean, p + i, len);
            i += len;
        }
    }
    json_object_set_new(obj, name, json_string(buf_str(&clean)));
    buf_free(&clean);
}

static void
format_json(struct buf *line, const char *ts, twice_log_level level, const struct log_job *job,
            const char *text)
{
    json_t *obj = json_object();
    if (obj == NULL) {
        return;
    }
    json_object_set_new(obj, "ts", json_string(ts));
    json_object_set_new(obj, "level", json_string(log_level_name(level)));
    json_field(obj, "role", log_role);
    json_object_set_new(obj, "pid", json_integer(log_pid()));
    if (job != NULL) {
        json_field(obj, "queue", job->queue);
        json_field(obj, "message_id", job->message_id);
        json_field(obj, "plugin", job->plugin);
        json_field(obj, "key", job->key);
        if (job->attempt > 0) {
            json_object_set_new(obj, "attempt", json_integer(job->attempt));
        }
    }
    json_field(obj, "msg", text);
    char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (s != NULL) {
        buf_puts(line, s);
        free(s);
    }
}

static void
format_text(struct buf *line, const char *ts, twice_log_level level, const struct log_job *job,
            const char *text)
{
    buf_cat(line, ts, " ", log_level_name(level), " ", log_role, "[", NULL);
    buf_put_int(line, log_pid());
    buf_putc(line, ']');
    if (job != NULL) {
        escape_field(line, "queue", job->queue);
        escape_field(line, "msg", job->message_id);
        escape_field(line, "plugin", job->plugin);
        escape_field(line, "key", job->key);
        if (job->attempt > 0) {
            buf_printf(line, " attempt=%d", job->attempt);
        }
    }
    /* The message runs to the end of the line, unquoted: quotes and
     * backslashes stay, so text that a caller escaped already (an error
     * quoting input) is shown as it is, not escaped a second time. */
    buf_puts(line, ": ");
    escape_unquoted(line, text, strlen(text));
}

/* Write all of p to fd; 0, or the errno of the write that failed. */
static int
write_all(int fd, const char *p, size_t left)
{
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return w < 0 ? errno : EIO;
        }
        p += w;
        left -= (size_t) w;
    }
    return 0;
}

static void
format_line(struct buf *line, const char *ts, twice_log_level level, const struct log_job *job,
            const char *text)
{
    buf_reset(line);
    if (shared_int_get(&log_format) == LOG_FORMAT_JSON) {
        format_json(line, ts, level, job, text);
    } else {
        format_text(line, ts, level, job, text);
    }
    buf_putc(line, '\n');
}

/* What cut_message asks: does the line with this message fit? */
struct fit_ctx {
    struct buf *line;
    const char *ts;
    twice_log_level level;
    const struct log_job *job;
};

static int
line_fits(const char *message, void *ctx)
{
    struct fit_ctx *f = ctx;
    format_line(f->line, f->ts, f->level, f->job, message);
    return !f->line->failed && f->line->len <= LOG_LINE_MAX;
}

/* The line again with text cut to fit LOG_LINE_MAX (cut.c's rule, which the
 * mock host follows too). A line whose fields alone are too long is left
 * with none of the text. */
static void
cut_line(struct buf *line, const char *ts, twice_log_level level, const struct log_job *job,
         const char *text)
{
    struct buf cut = BUF_INIT;
    struct fit_ctx f = {line, ts, level, job};
    int rc = cut_message(text, line_fits, &f, &cut);
    format_line(line, ts, level, job, rc != 0 ? "" : buf_str(&cut));
    buf_free(&cut);
}

/* One line as of now, cut to LOG_LINE_MAX (line->failed: out of memory). */
static void
build_line(struct buf *line, twice_log_level level, const struct log_job *job, const char *text)
{
    char ts[40];
    timestamp(ts);
    format_line(line, ts, level, job, text);
    if (line->len > LOG_LINE_MAX) {
        cut_line(line, ts, level, job, text);
    }
}

/* Format one line and write it to fd; 0, or the errno of the failure (ENOMEM
 * when the line could not be built). */
static int
emit(int fd, twice_log_level level, const struct log_job *job, const char *text)
{
    struct buf line = BUF_INIT;
    build_line(&line, level, job, text);
    int rc = line.failed ? ENOMEM : write_all(fd, line.data, line.len);
    buf_free(&line);
    return rc;
}

/* What log.file did with a line (rc: emit's answer): a first refusal is said
 * on stderr, so that a full disk is not a silent one; the lines lost are
 * counted and said in the file once it takes lines again. */
static void
file_outcome(int fd, int rc)
{
    char text[160];
    if (rc != 0 && rc != ENOMEM) {
        if (atomic_fetch_add(&log_lost, 1) == 0) {
            snprintf(text, sizeof(text),
                     "log.file: writing failed (%s): lines are lost until it works again",
                     cnum_strerror(rc));
            emit(2, TWICE_LOG_ERROR, NULL, text);
        }
    } else if (rc == 0 && atomic_load(&log_lost) > 0) {
        int lost = atomic_exchange(&log_lost, 0);
        if (lost > 0) {
            snprintf(text, sizeof(text), "log.file: writing again; %d line%s lost", lost,
                     lost == 1 ? " was" : "s were");
            emit(fd, TWICE_LOG_WARN, NULL, text);
        }
    }
}

void
log_vjob(twice_log_level level, const struct log_job *job, const char *fmt, va_list ap)
{
    if (!log_enabled(level)) {
        return;
    }
    int saved_errno = errno;
    struct buf text = BUF_INIT;
    buf_vprintf(&text, fmt, ap);
    int fd = shared_int_get(&log_fd);
    /* log.file's descriptor closed under it (a plugin closed twiced's), or
     * its number taken since by another file or socket: the line goes to
     * stderr until the file is opened again */
    int gone = fd != 2 && !still_log_file(fd);
    int rc = text.failed ? ENOMEM : emit(gone ? 2 : fd, level, job, buf_str(&text));
    if (fd != 2 && !gone && rc == EBADF) {
        emit(2, level, job, buf_str(&text));
    } else if (fd != 2 && !gone) {
        file_outcome(fd, rc);
    }
    buf_free(&text);
    errno = saved_errno;
}

void
log_job(twice_log_level level, const struct log_job *job, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vjob(level, job, fmt, ap);
    va_end(ap);
}

char *
log_build_job(twice_log_level level, const struct log_job *job, const char *fmt, ...)
{
    if (!log_enabled(level)) {
        return NULL;
    }
    int saved_errno = errno;
    struct buf text = BUF_INIT, line = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&text, fmt, ap);
    va_end(ap);
    char *built = NULL;
    if (!text.failed) {
        build_line(&line, level, job, buf_str(&text));
        built = buf_steal(&line); /* NULL, and line freed, when it failed */
    }
    buf_free(&text);
    errno = saved_errno;
    return built;
}

void
log_write_built(const char *line)
{
    int fd = shared_int_get(&log_fd);
    if (fd != 2 && !still_log_file(fd)) {
        fd = 2;
    }
    (void) write_all(fd, line, strlen(line));
}

void
log_msg(twice_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vjob(level, NULL, fmt, ap);
    va_end(ap);
}
