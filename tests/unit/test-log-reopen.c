/*
 * test-log-reopen.c - where log lines go: log.file, log_reopen after a log
 * rotation moved the file away, and a reopen on reload while
 * other threads keep logging (the master's HTTP, janitor and alert threads
 * do): every line lands whole in the old file or the new one, none is lost;
 * and root not following a link others could plant at log.file.
 */
#include "check.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINES   20000
#define REOPENS 400

static char tmpdir[64];

/* Two log files of the test directory, fresh. */
struct two_logs {
    char a[128], b[128];
};

static void
two_logs(struct two_logs *t, const char *prefix)
{
    snprintf(t->a, sizeof(t->a), "%s/%s-a.log", tmpdir, prefix);
    snprintf(t->b, sizeof(t->b), "%s/%s-b.log", tmpdir, prefix);
}

/* Lines of file holding marker; -1 when it cannot be read. */
static long
count_lines(const char *file, const char *marker)
{
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        return -1;
    }
    char line[512];
    long n = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, marker) != NULL && line[strlen(line) - 1] == '\n';
    }
    fclose(f);
    return n;
}

static void
test_file_then_another(void)
{
    struct two_logs t;
    two_logs(&t, "switch");
    CHECK_INT(log_open(t.a), 0);
    log_info("first-line");
    CHECK_INT(log_open(t.b), 0);
    log_info("second-line");
    CHECK_INT(log_open("/nonexistent/dir/x.log"), -1);
    log_info("third-line"); /* the previous file stays in use */
    CHECK_INT(log_open(NULL), 0);
    log_debug("fourth-line"); /* stderr now (and below the level anyway) */
    CHECK_INT(count_lines(t.a, "first-line"), 1);
    CHECK_INT(count_lines(t.a, "second-line"), 0);
    CHECK_INT(count_lines(t.b, "second-line"), 1);
    CHECK_INT(count_lines(t.b, "third-line"), 1);
    CHECK_INT(count_lines(t.b, "fourth-line"), 0);
    unlink(t.a);
    unlink(t.b);
}

/* logrotate's create: the file is moved away, log_reopen makes a new one
 * by the same name; a reopen that cannot open it keeps the old one; on
 * stderr there is nothing to reopen; a file that could not be opened is
 * tried again. */
static void
test_reopen_by_name(void)
{
    struct two_logs t;
    two_logs(&t, "rotate");
    CHECK_INT(log_open(NULL), 0);
    CHECK(log_file() == NULL);
    CHECK_INT(log_reopen(), 0);
    CHECK_INT(log_open(t.a), 0);
    CHECK_STR(log_file(), t.a);
    log_info("before-rotation");
    CHECK_INT(rename(t.a, t.b), 0);
    log_info("moved-away"); /* still the open file, now named b */
    CHECK_INT(log_reopen(), 0);
    log_info("after-rotation");
    CHECK_INT(count_lines(t.b, "before-rotation"), 1);
    CHECK_INT(count_lines(t.b, "moved-away"), 1);
    CHECK_INT(count_lines(t.b, "after-rotation"), 0);
    CHECK_INT(count_lines(t.a, "after-rotation"), 1);
    CHECK_INT(unlink(t.a), 0);
    CHECK_INT(mkdir(t.a, 0700), 0); /* the name cannot be opened for writing */
    CHECK_INT(log_reopen(), -1);
    log_info("kept-old");
    CHECK_STR(log_file(), t.a);
    CHECK_INT(rmdir(t.a), 0);
    CHECK_INT(log_reopen(), 0); /* tried again, and now it opens */
    log_info("tried-again");
    CHECK_INT(count_lines(t.a, "tried-again"), 1);
    CHECK_INT(count_lines(t.a, "kept-old"), 0);
    /* A worker whose log.file could not be opened at its start (on stderr
     * so far) opens it on the first reopen after it became possible. */
    CHECK_INT(log_open(NULL), 0);
    CHECK_INT(unlink(t.a), 0);
    CHECK_INT(mkdir(t.a, 0700), 0);
    CHECK_INT(log_open(t.a), -1);
    CHECK_STR(log_file(), t.a);
    CHECK_INT(rmdir(t.a), 0);
    CHECK_INT(log_reopen(), 0);
    log_info("first-open");
    CHECK_INT(count_lines(t.a, "first-open"), 1);
    unlink(t.a);
    CHECK_INT(log_open(NULL), 0);
    CHECK(log_file() == NULL);
    unlink(t.b);
}

static void *
writer(void *arg)
{
    (void) arg;
    for (int i = 0; i < LINES; i++) {
        log_info("hammer-line %d", i);
    }
    return NULL;
}

static void
test_reopen_while_logging(void)
{
    struct two_logs t;
    two_logs(&t, "reopen");
    CHECK_INT(log_open(t.a), 0);
    pthread_t thread;
    CHECK_INT(pthread_create(&thread, NULL, writer, NULL), 0);
    for (int i = 0; i < REOPENS; i++) {
        CHECK_INT(log_open(i % 2 ? t.a : t.b), 0);
        usleep(50);
    }
    pthread_join(thread, NULL);
    CHECK_INT(log_open(NULL), 0);
    CHECK_INT(count_lines(t.a, "hammer-line") + count_lines(t.b, "hammer-line"), LINES);
    unlink(t.a);
    unlink(t.b);
}

/* log.file a named pipe (a log shipper's) whose reader is not running: open()
 * waited for a reader for ever, and the master with it on a reload (SIGTERM
 * unheard). It fails at once now, and the log stays where it was; once a
 * reader is there, lines go through the pipe. alarm: a hang fails the test. */
static void
test_pipe_without_reader(void)
{
    char fifo[128];
    snprintf(fifo, sizeof(fifo), "%s/shipper.fifo", tmpdir);
    CHECK_INT(mkfifo(fifo, 0600), 0);
    alarm(10);
    errno = 0;
    CHECK_INT(log_open(fifo), -1);
    CHECK_INT(errno, ENXIO);
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(reader >= 0);
    CHECK_INT(log_open(fifo), 0);
    log_info("through the pipe");
    char got[256] = "";
    CHECK(read(reader, got, sizeof(got) - 1) > 0);
    CHECK_CONTAINS(got, "through the pipe");
    alarm(0);
    CHECK_INT(log_open(NULL), 0);
    close(reader);
    unlink(fifo);
}

/* The directory rule alone: root follows a link only where root alone can
 * write (owner root, no group or other write bit). */
static void
test_dir_trusted(void)
{
    struct stat st = {.st_uid = 0, .st_mode = S_IFDIR | 0755};
    CHECK_INT(log_dir_trusted(&st), 1);
    st.st_mode = S_IFDIR | 0775; /* a group (adm, the workers') may plant links */
    CHECK_INT(log_dir_trusted(&st), 0);
    st.st_mode = S_IFDIR | 01777; /* /tmp */
    CHECK_INT(log_dir_trusted(&st), 0);
    st.st_mode = S_IFDIR | 0700;
    st.st_uid = 1000; /* the workers' own directory */
    CHECK_INT(log_dir_trusted(&st), 0);
}

/* Run as root with the workers' user allowed to write log.file's directory:
 * a link planted there (to a file root alone may write) is refused, by
 * log_open, log_reopen and log_can_open alike, and its target is neither
 * created nor written; the same link in a directory of root's alone (an
 * admin's deliberate one) is followed. Needs root: skipped otherwise. */
static void
test_symlink_in_open_dir(void)
{
    if (geteuid() != 0) {
        printf("test_symlink_in_open_dir: skipped, not root\n");
        return;
    }
    char open_dir[128], planted[160], target[160], admin[160];
    snprintf(open_dir, sizeof(open_dir), "%s/logs", tmpdir);
    snprintf(planted, sizeof(planted), "%s/twice.log", open_dir);
    snprintf(target, sizeof(target), "%s/root-only", tmpdir);
    snprintf(admin, sizeof(admin), "%s/admin.log", tmpdir);
    CHECK_INT(mkdir(open_dir, 0755), 0);
    CHECK_INT(chown(open_dir, 65534, 65534), 0); /* the workers' user owns it */
    CHECK_INT(symlink(target, planted), 0);
    errno = 0;
    CHECK_INT(log_open(planted), -1);
    CHECK_INT(errno, ELOOP);
    CHECK_CONTAINS(log_open_why(planted, ELOOP), "symbolic link");
    CHECK_INT(log_reopen(), -1);
    CHECK_INT(log_can_open(planted), -1);
    CHECK_INT(errno, ELOOP);
    CHECK(access(target, F_OK) != 0); /* not created */
    CHECK_INT(chown(open_dir, 0, 0), 0);
    CHECK_INT(chmod(open_dir, 0775), 0); /* root's, but a group may write */
    CHECK_INT(log_open(planted), -1);
    CHECK_INT(symlink(target, admin), 0); /* the mkdtemp directory: root's, 0700 */
    CHECK_INT(log_can_open(admin), 0);
    CHECK_INT(log_open(admin), 0);
    log_info("through the admin's link");
    CHECK_INT(log_open(NULL), 0);
    CHECK_INT(count_lines(target, "through the admin's link"), 1);
    unlink(admin);
    unlink(target);
    unlink(planted);
    rmdir(open_dir);
}

int
main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/twice-test-log-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    log_set_level(TWICE_LOG_INFO);
    test_file_then_another();
    test_reopen_by_name();
    test_reopen_while_logging();
    test_pipe_without_reader();
    test_dir_trusted();
    test_symlink_in_open_dir();
    rmdir(tmpdir);
    return check_done("test-log");
}
