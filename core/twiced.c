/*
 * twiced.c - the daemon's command line. What runs is in master/master.c
 * (supervision), worker/process.c (jobs) and plugin/probe.c (plugin
 * checks); the last two are started by the master re-executing this binary.
 */
#include "log.h"
#include "master.h"
#include "probe.h"
#include "process.h"
#include "version.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <twice/plugin.h>

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: twiced [-c FILE] [-f | -d] [-t]\n"
            "\n"
            "twice: an idempotent job worker for Amazon SQS. A master process supervises\n"
            "worker processes that long-poll SQS, guard every job with an idempotency key\n"
            "in PostgreSQL and run handler plugins.\n"
            "\n"
            "  -c, --config FILE  configuration file (default %s)\n"
            "  -t, --test         check the configuration and load every plugin it names\n"
            "                     (in a child process), print each problem as\n"
            "                     FILE:LINE: message, exit 0 when there are none, else 1\n"
            "  -f, --foreground   run in the foreground (the default; for systemd)\n"
            "  -d, --daemon       detach from the terminal (logs go to log.file)\n"
            "  -V, --version      print the version and the plugin ABI\n"
            "  -h, --help         this text\n"
            "\n"
            "Signals: HUP reloads the configuration and plugins without losing jobs;\n"
            "TERM or INT drains in-flight jobs and exits (a second one: at once).\n",
            TWICE_DEFAULT_CONFIG);
}

/* Detach only when asked to (-d): under systemd twiced stays in front. */
static int
daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("twiced: fork");
        return -1;
    }
    if (pid > 0) {
        _exit(0);
    }
    if (setsid() < 0 || chdir("/") != 0) {
        perror("twiced: setsid");
        return -1;
    }
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2) {
            close(fd);
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--worker") == 0) {
        return worker_main(argc, argv);
    }
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        return probe_main(argc, argv);
    }
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"test", no_argument, NULL, 't'},
        {"foreground", no_argument, NULL, 'f'},
        {"daemon", no_argument, NULL, 'd'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *config = TWICE_DEFAULT_CONFIG;
    int test = 0, detach = 0, c;
    while ((c = getopt_long(argc, argv, "c:tfdVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 't':
            test = 1;
            break;
        case 'f':
            detach = 0;
            break;
        case 'd':
            detach = 1;
            break;
        case 'V':
            printf("twiced %s (plugin ABI %d.%d)\n", TWICE_VERSION, TWICE_ABI_MAJOR,
                   TWICE_ABI_MINOR);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "twiced: unexpected argument %s\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* An absolute path: children re-read it, and -d changes directory. */
    char *abs = realpath(config, NULL);
    const char *path = abs != NULL ? abs : config;
    int rc;
    if (test) {
        log_set_role("twiced -t");
        rc = master_check(path);
    } else {
        rc = master_run(path, detach ? daemonize : NULL);
    }
    free(abs);
    return rc;
}
