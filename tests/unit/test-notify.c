/*
 * test-notify.c - the datagrams notify.c sends to $NOTIFY_SOCKET: their exact
 * text, a status too long for the buffer, abstract names up to the full
 * sun_path, and values that must send nothing. Local sockets, no systemd.
 */
#include "check.h"

#include "notify.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A datagram socket bound to name ('@': abstract, with exactly strlen(name)
 * bytes of address), non-blocking; -1 if it cannot be bound. */
static int
receiver(const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    memcpy(a.sun_path, name, n);
    if (name[0] == '@') {
        a.sun_path[0] = '\0';
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *) &a,
                        (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n))) {
        close(fd);
        fd = -1;
    }
    CHECK(fd >= 0);
    return fd;
}

/* The next datagram as a string ("" when none is waiting). */
static const char *
next(int fd, char *buf, size_t cap)
{
    ssize_t n = recv(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static char dir[] = "/tmp/twice-test-notify-XXXXXX"; /* the working directory */

static void
test_path_and_exact_text(void)
{
    char buf[1024], path[128];
    snprintf(path, sizeof(path), "%s/notify.sock", dir);
    int fd = receiver(path);
    setenv("NOTIFY_SOCKET", path, 1);
    notify_ready("generation 1: 2/2 workers ready");
    CHECK_STR(next(fd, buf, sizeof(buf)), "READY=1\nSTATUS=generation 1: 2/2 workers ready");
    notify_stopping();
    CHECK_STR(next(fd, buf, sizeof(buf)), "STOPPING=1\nSTATUS=stopping: draining in-flight jobs");
    notify_reloading();
    CHECK(strncmp(next(fd, buf, sizeof(buf)), "RELOADING=1\nMONOTONIC_USEC=", 27) == 0);
    CHECK_CONTAINS(buf, "\nSTATUS=reloading");
    CHECK_STR(getenv("NOTIFY_SOCKET"), path); /* left set for the workers */
    close(fd);
    unlink(path);
}

/* A status longer than the message buffer: cut, still one READY=1 message. */
static void
test_long_status_is_cut(void)
{
    char buf[4096], status[2000], name[64];
    memset(status, 's', sizeof(status) - 1);
    status[sizeof(status) - 1] = '\0';
    snprintf(name, sizeof(name), "@twice-test-notify-%d", (int) getpid());
    int fd = receiver(name);
    setenv("NOTIFY_SOCKET", name, 1);
    notify_ready(status);
    next(fd, buf, sizeof(buf));
    CHECK(strncmp(buf, "READY=1\nSTATUS=sss", 18) == 0);
    CHECK_INT(strlen(buf), 511);
    CHECK_INT(strspn(buf + 15, "s"), 511 - 15);
    close(fd);
}

/* An abstract name may fill sun_path (108 bytes, no terminator); one more
 * byte, a relative path, bare '@' or '/': nothing is sent, nothing breaks. */
static void
test_name_limits(void)
{
    char buf[1024], name[sizeof(((struct sockaddr_un *) 0)->sun_path) + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    int pfx = snprintf(name, sizeof(name), "@twice-test-notify-%d-", (int) getpid());
    name[pfx] = 'n';               /* snprintf's terminator */
    name[sizeof(name) - 2] = '\0'; /* '@' and 107 bytes: the whole sun_path */
    int fd = receiver(name);
    setenv("NOTIFY_SOCKET", name, 1);
    notify_stopping();
    CHECK_CONTAINS(next(fd, buf, sizeof(buf)), "STOPPING=1");
    close(fd);
    name[sizeof(name) - 2] = 'n'; /* one byte too long */
    setenv("NOTIFY_SOCKET", name, 1);
    notify_stopping();

    fd = receiver("notify.sock");
    const char *bad[] = {"notify.sock", "./notify.sock", "", "@", "/", "vsock:2:1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("NOTIFY_SOCKET", bad[i], 1);
        notify_ready("bad");
        CHECK_STR(next(fd, buf, sizeof(buf)), "");
    }
    unsetenv("NOTIFY_SOCKET");
    notify_ready("unset");
    CHECK_STR(next(fd, buf, sizeof(buf)), "");
    close(fd);
    unlink("notify.sock");
}

int
main(void)
{
    if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
        perror("test-notify: temporary directory");
        return 1;
    }
    test_path_and_exact_text();
    test_long_status_is_cut();
    test_name_limits();
    rmdir(dir);
    return check_done("test-notify");
}
