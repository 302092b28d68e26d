/*
 * test-childargs.c - the configuration snapshot a generation's workers
 * read: every worker gets the whole text, even when they start together
 * and read the one memfd they share at the same time (a worker that read
 * half a configuration failed a reload with "missing required setting");
 * and the command line that hands a child its descriptors, plugin files
 * included, read back as it was written.
 */
#include "check.h"
#include "buf.h"
#include "childargs.h"
#include "config.h"
#include "diag.h"
#include "config.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define READERS 8
#define ROUNDS  50
#define TEXT    (256 * 1024)

/* A child: read the snapshot ROUNDS times; exit 0 when every read was whole. */
static int
reader(int fd, const char *want)
{
    for (int i = 0; i < ROUNDS; i++) {
        size_t len = 0;
        char *got = NULL;
        struct diag d = DIAG_INIT;
        int rc = config_text_read(fd, "snapshot", &got, &len, &d);
        int ok = rc == 0 && len == TEXT && memcmp(got, want, TEXT) == 0;
        free(got);
        diag_free(&d);
        if (!ok) {
            return 1;
        }
    }
    return 0;
}

/* build, then parse: the same descriptors (a -1 among them), slot and
 * strings come back. */
static void
round_trip(void)
{
    int fds[] = {7, -1, 9}; /* -1: a file the master could not open */
    struct childargs a = {
        CHILD_WORKER, 5, "/etc/twice/twice.conf", 6, 8, 3, 4, 1234, "abcd", fds, 3, 11};
    struct childargs_argv args;
    CHECK_INT(childargs_build(&a, &args), 0);
    int argc = 0;
    while (args.argv[argc] != NULL) {
        argc++;
    }
    CHECK(argc < CHILDARGS_MAX);
    struct childargs b;
    char err[128] = "";
    CHECK_INT(childargs_parse(argc, args.argv, &b, err, sizeof(err)), 0);
    CHECK_INT(b.mode, CHILD_WORKER);
    CHECK_INT(b.config_fd, 5);
    CHECK_INT(b.shm_fd, 6);
    CHECK_INT(b.ctl_fd, 8);
    CHECK_INT(b.slot, 3);
    CHECK_INT(b.generation, 4);
    CHECK_INT(b.master_pid, 1234);
    CHECK(strcmp(b.config_path, "/etc/twice/twice.conf") == 0);
    CHECK(strcmp(b.instance, "abcd") == 0);
    CHECK_INT(b.nplugin_fds, 3);
    for (size_t i = 0; i < 3 && i < b.nplugin_fds; i++) {
        CHECK_INT(b.plugin_fds[i], fds[i]);
    }
    CHECK_INT(b.check_fd, -1); /* a worker is given no check */
    childargs_release(&b);
    childargs_argv_free(&args);

    char *bad[] = {"twiced",        "--worker", "--config-fd", "5",
                   "--config-path", "/x",       "--instance",  "i",
                   "--plugin-fds",  "5,,6",     NULL};
    CHECK_INT(childargs_parse(10, bad, &b, err, sizeof(err)), -1);
    CHECK(strstr(err, "bad descriptor list 5,,6") != NULL);
    bad[9] = "5,-2";
    CHECK_INT(childargs_parse(10, bad, &b, err, sizeof(err)), -1);
    CHECK(strstr(err, "bad descriptor list 5,-2") != NULL);
}

/* A probe's request of a store or SQS check (its memfd) comes back, and
 * a probe without one has -1. */
static void
probe_round_trip(void)
{
    for (int fd = -1; fd <= 11; fd += 12) {
        struct childargs a = {CHILD_PROBE, 5, "/x.conf", -1, -1, 0, 0, 1234, "probe", NULL, 0, fd};
        struct childargs_argv args;
        CHECK_INT(childargs_build(&a, &args), 0);
        int argc = 0;
        while (args.argv[argc] != NULL) {
            argc++;
        }
        CHECK(argc < CHILDARGS_MAX);
        struct childargs b;
        char err[128] = "";
        CHECK_INT(childargs_parse(argc, args.argv, &b, err, sizeof(err)), 0);
        CHECK_INT(b.mode, CHILD_PROBE);
        CHECK_INT(b.check_fd, fd);
        childargs_release(&b);
        childargs_argv_free(&args);
    }
}

int
main(void)
{
    round_trip();
    probe_round_trip();
    char *text = malloc(TEXT + 1);
    CHECK(text != NULL);
    for (size_t i = 0; i < TEXT; i++) {
        text[i] = (char) ('a' + i % 26);
    }
    text[TEXT] = '\0';
    int fd = childargs_memfd(text, TEXT);
    CHECK(fd >= 0);

    pid_t pids[READERS];
    for (int i = 0; i < READERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            _exit(reader(fd, text));
        }
    }
    int whole = 0;
    for (int i = 0; i < READERS; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        whole += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    CHECK_INT(whole, READERS);

    size_t len = 0;
    char *again = NULL;
    struct diag d = DIAG_INIT;
    CHECK_INT(config_text_read(fd, "snapshot", &again, &len, &d), 0);
    diag_free(&d);
    CHECK_INT(len, TEXT);
    CHECK(again != NULL && strcmp(again, text) == 0);
    free(again);
    close(fd);
    free(text);
    return check_done("test-childargs");
}
