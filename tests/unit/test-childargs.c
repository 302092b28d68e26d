/*
 * test-childargs.c - the configuration snapshot a generation's workers
 * read: every worker gets the whole text, even when they start together
 * and read the one memfd they share at the same time (a worker that read
 * half a configuration failed a reload with "missing required setting").
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

int
main(void)
{
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
