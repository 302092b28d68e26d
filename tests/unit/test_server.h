/*
 * test_server.h - start one of the project's test servers (a scripts/ Python file, with
 * Debian's /usr/bin/python3) privately for this test: on a free loopback
 * port, ready once it printed its "listening" line; stopped with SIGTERM.
 * Header-only test helper; not part of any plugin.
 * Used by: plugins/sync/tests/test-sync.c, plugins/welcome-email/tests/test-welcome-email.c,
 * plugins/http/tests/test-http.c.
 */
#ifndef PLUGIN_TEST_SERVER_H
#define PLUGIN_TEST_SERVER_H

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct test_server {
    pid_t pid;
    int port;
    int out; /* the read end of its stdout, kept open while it runs */
};

/* A port the kernel just handed out (free now; the server may still lose
 * a race for it, which server_start answers by trying again). */
static inline int
server_free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *) &sa, &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

/* Run /usr/bin/python3 SCRIPT --port P EXTRA... and wait (10 s at most)
 * for a stdout line containing "listening". 0, or -1 after 3 tries. */
static inline int
server_start(struct test_server *s, const char *script, const char *extra1, const char *extra2)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        int fds[2];
        char port[16], line[512];
        s->port = server_free_port();
        snprintf(port, sizeof(port), "%d", s->port);
        if (s->port < 0 || pipe(fds) != 0) {
            return -1;
        }
        s->pid = fork();
        if (s->pid == 0) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
            execl("/usr/bin/python3", "python3", script, "--port", port, extra1, extra2,
                  (char *) NULL);
            _exit(127);
        }
        close(fds[1]);
        /* Read until the "listening" line (a loaded machine may take a while to
         * start Python), then keep the pipe open: closing it early would kill
         * the server with SIGPIPE on its next line of output. */
        size_t used = 0;
        line[0] = '\0';
        struct pollfd pfd = {fds[0], POLLIN, 0};
        while (s->pid > 0 && used < sizeof(line) - 1 && strstr(line, "listening") == NULL &&
               poll(&pfd, 1, 30000) == 1) {
            ssize_t n = read(fds[0], line + used, sizeof(line) - 1 - used);
            if (n <= 0) {
                break;
            }
            used += (size_t) n;
            line[used] = '\0';
        }
        if (s->pid > 0 && strstr(line, "listening") != NULL) {
            s->out = fds[0];
            return 0;
        }
        close(fds[0]);
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
        }
        fprintf(stderr, "server %s on port %d did not start: %s\n", script, s->port, line);
    }
    return -1;
}

static inline void
server_stop(struct test_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        close(s->out);
    }
}

#endif
