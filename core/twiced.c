/*
 * twiced.c - the daemon's command line and its master (master/master.c:
 * supervision). Its children, workers (worker/process.c) and the probe
 * that checks plugins and the store (plugin/probe.c), are another
 * executable, twiced-worker.c, which the master execs: twiced links
 * neither libcurl, libpq nor OpenSSL, so the master stays small.
 */
#include "cnum.h"
#include "diag.h"
#include "fileopen.h"
#include "log.h"
#include "master.h"
#include "pid1.h"
#include "pidfile.h"
#include "proctitle.h"
#include "spawn.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <twice/plugin.h>

static void
usage(FILE *out)
{
    fprintf(out,
            "usage: twiced [-c FILE] [-p FILE] [-f | -d] [-t [--connect]] [-s "
            "reload|stop|quit|reopen]\n"
            "\n"
            "twice: an idempotent job worker for Amazon SQS. A master process supervises\n"
            "worker processes that long-poll SQS, guard every job with an idempotency key\n"
            "in PostgreSQL and run handler plugins.\n"
            "\n"
            "  -c, --config FILE  configuration file (default %s)\n"
            "  -t, --test         check the configuration and load every plugin it names\n"
            "                     (in a child process), print each problem as\n"
            "                     FILE:LINE: message, exit 0 when there are none, else 1\n"
            "      --connect      with -t: also connect to PostgreSQL and ask every queue\n"
            "                     and dead-letter queue for its attributes\n"
            "  -f, --foreground   run in the foreground (the default; for systemd)\n"
            "  -d, --daemon       detach from the terminal (logs go to log.file); exits 0\n"
            "                     once the workers are ready, 1 with the reason if not\n"
            "  -p, --pid-file FILE  the master's pid file (overrides pid_file)\n"
            "  -s, --signal SIGNAL  signal the running master named by the pid file and\n"
            "                     exit: reload (the configuration and plugins), stop\n"
            "                     (drain: running jobs get drain_timeout) or quit (let\n"
            "                     every running job finish, however long it takes) or\n"
            "                     reopen (log.file, after logrotate moved it away)\n"
            "  -V, --version      print the version and the plugin ABI\n"
            "  -h, --help         this text\n"
            "\n"
            "Signals to the master (process title \"twiced: master\"): HUP reloads the\n"
            "configuration and plugins without losing jobs; TERM or INT drains in-flight\n"
            "jobs and exits (a second one: at once); QUIT lets running jobs finish first;\n"
            "USR1 reopens log.file.\n",
            TWICE_DEFAULT_CONFIG);
}

/* The daemon's end of the pipe its foreground process waits on (-d). */
static int started_fd = -1;

/* The daemon's start is over: tell the foreground process (once). */
static void
report_started(int ok, const char *why)
{
    if (started_fd >= 0) {
        dprintf(started_fd, "%c%s", ok ? 'R' : 'F', ok ? "" : why);
        close(started_fd);
        started_fd = -1;
    }
}

/* The foreground process of -d: exit 0 once the daemon is ready, 1 (with
 * the reason) when its start failed or it died first. */
static int
wait_started(int fd, pid_t daemon)
{
    char buf[2048];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof(buf) - 1 && (got = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
        if (got < 0 && errno != EINTR) {
            break;
        }
        n += got > 0 ? (size_t) got : 0;
    }
    buf[n] = '\0';
    if (n > 0 && buf[0] == 'R') {
        return 0;
    }
    if (n > 0 && buf[0] == 'F') {
        diag_print_line(stderr, "twiced: not started: %s", buf + 1);
    } else {
        fprintf(stderr, "twiced: the daemon (pid %d) exited before it was ready (see log.file)\n",
                (int) daemon);
    }
    return 1;
}

/* twiced works in its configuration's directory, in front, with -d and
 * under systemd alike, so that a relative path in a plugin's settings (an
 * exec handler's command, a token file) means the same to twiced -t, to the
 * probe and to every worker. A relative -p FILE is kept from where twiced
 * was started. config is absolute (realpath). 0, or -1 after saying why. */
static int
enter_config_dir(const char *config, const char **pid_file, char **pid_abs)
{
    if (*pid_file != NULL) {
        if ((*pid_abs = pidfile_absolute(*pid_file)) == NULL) {
            diag_print_line(stderr, "twiced: -p %s: %s", *pid_file, cnum_strerror(errno));
            return -1;
        }
        *pid_file = *pid_abs;
    }
    const char *slash = strrchr(config, '/');
    char dir[4096];
    snprintf(dir, sizeof(dir), "%.*s", slash > config ? (int) (slash - config) : 1, config);
    if (chdir(dir) != 0) {
        diag_print_line(stderr, "twiced: cannot enter %s, the configuration's directory: %s", dir,
                        cnum_strerror(errno));
        return -1;
    }
    return 0;
}

/* Detach only when asked to (-d): under systemd twiced stays in front. The
 * foreground process stays until the daemon is ready or has given up, so
 * that its exit code says whether twiced started. */
static int
daemonize(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, "twiced: pipe: %s\n", cnum_strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "twiced: fork: %s\n", cnum_strerror(errno));
        return -1;
    }
    if (pid > 0) {
        /* This process only waits for the daemon's start: a stop signal (a
         * Ctrl-C) ends it as it always did, where the daemon holds its own
         * (master.c, hold_early) to stop cleanly. */
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGQUIT);
        sigprocmask(SIG_UNBLOCK, &stop, NULL);
        close(p[1]);
        _exit(wait_started(p[0], pid));
    }
    close(p[0]);
    started_fd = p[1];
    /* It stays in the configuration's directory (main), as in front. */
    if (setsid() < 0) {
        fprintf(stderr, "twiced: setsid: %s\n", cnum_strerror(errno));
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
    proctitle_init(argc, argv);
    fileopen_std_fds(); /* the master's children get theirs from spawn.c */
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"pid-file", required_argument, NULL, 'p'},
        {"connect", no_argument, NULL, 'C'},      {"signal", required_argument, NULL, 's'},
        {"test", no_argument, NULL, 't'},         {"foreground", no_argument, NULL, 'f'},
        {"daemon", no_argument, NULL, 'd'},       {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *config = TWICE_DEFAULT_CONFIG, *signal_name = NULL;
    struct master_opts opts = {NULL, NULL, NULL};
    int test = 0, detach = 0, connect = 0, c;
    while ((c = getopt_long(argc, argv, "c:p:s:tfdVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'p':
            opts.pid_file = optarg;
            break;
        case 's':
            signal_name = optarg;
            break;
        case 't':
            test = 1;
            break;
        case 'C':
            connect = 1;
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
    if (connect && !test) {
        fprintf(stderr, "twiced: --connect goes with -t\n");
        usage(stderr);
        return 2;
    }
    /* -t, -s and -d each do something else: one of them, never two
     * (-t -s reload used to send the reload without the test). */
    if ((test != 0) + (signal_name != NULL) + (detach != 0) > 1) {
        fprintf(stderr, "twiced: -t, -s and -d go alone: give one of them\n");
        usage(stderr);
        return 2;
    }
    if (optind < argc) {
        diag_print_line(stderr, "twiced: unexpected argument %s", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* An absolute path: children re-read it, and twiced changes directory. */
    char *abs = realpath(config, NULL), *pid_abs = NULL, err[PATH_MAX + 256];
    const char *path = abs != NULL ? abs : config;
    int rc;
    /* Before the directory changes: the path twiced was run by may be relative. */
    if (signal_name == NULL && spawn_open_worker(TWICE_WORKER_DIR, err, sizeof(err)) != 0) {
        diag_print_line(stderr, "twiced: %s", err);
        rc = 1;
    } else if (signal_name == NULL && abs != NULL &&
               enter_config_dir(abs, &opts.pid_file, &pid_abs) != 0) {
        rc = test ? 1 : MASTER_EXIT_CONFIG; /* a start: starting again meets it too */
    } else if (signal_name != NULL) {
        rc = pidfile_signal(path, opts.pid_file, signal_name);
    } else if (test) {
        log_set_role("twiced -t");
        rc = master_check(path, connect);
    } else if (pid1_init_if_needed(err, sizeof(err)) != 0) {
        diag_print_line(stderr, "twiced: %s", err);
        rc = 1;
    } else {
        opts.detach = detach ? daemonize : NULL;
        opts.started = report_started;
        rc = master_run(path, &opts);
    }
    free(pid_abs);
    free(abs);
    return rc;
}
