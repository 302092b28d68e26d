/*
 * notify.c - the sd_notify protocol (see notify.h), spoken directly: one datagram to the
 * AF_UNIX socket in $NOTIFY_SOCKET. Not libsystemd, which brought five more libraries
 * (libgcrypt, liblzma, liblz4...) and 0.85-0.9 MB of RSS into every twiced process; the
 * protocol is stable and sd_notify(3), NOTES, recommends implementing it directly.
 * Failures are ignored on purpose: systemd not listening must never stop the worker.
 */
#include "notify.h"

#include "cnum.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Sends msg (len bytes) to $NOTIFY_SOCKET, as sd_notify(0, msg) does: unset
 * means not under systemd; only an absolute path or an abstract name ("@"
 * for the leading NUL byte) is valid, anything else is ignored. The
 * variable stays set (sd_notify's unset_environment 0): the workers inherit
 * it as they always did. The sender's credentials travel with an AF_UNIX
 * datagram by themselves. */
static void
notify_send(const char *msg, size_t len)
{
    const char *name = getenv("NOTIFY_SOCKET");
    if (name == NULL || (name[0] != '/' && name[0] != '@') || name[1] == '\0') {
        return;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    /* A path needs its terminating NUL in sun_path; an abstract name is
     * exactly n bytes long and may fill it. */
    if (n > sizeof(addr.sun_path) - (name[0] == '/')) {
        return;
    }
    memcpy(addr.sun_path, name, n);
    if (addr.sun_path[0] == '@') {
        addr.sun_path[0] = '\0';
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    /* The exact length: an abstract name's trailing zero bytes would be
     * part of the name. */
    socklen_t alen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n);
    (void) sendto(fd, msg, len, MSG_NOSIGNAL, (const struct sockaddr *) &addr, alen);
    close(fd);
}

/* Formats the message into a fixed buffer and sends it. Every message ends
 * with its STATUS= line, so a status too long for the buffer is cut there
 * and the message stays well-formed (systemd shows the cut status). */
static void notify_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
notify_printf(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = cnum_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    notify_send(msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1);
}

void
notify_ready(const char *status)
{
    notify_printf("READY=1\nSTATUS=%s", status);
}

void
notify_reloading(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* MONOTONIC_USEC lets newer systemd (253+) match RELOADING=1 to the reload. */
    notify_printf("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
                  (unsigned long long) ts.tv_sec * 1000000ull +
                      (unsigned long long) ts.tv_nsec / 1000);
}

void
notify_stopping(void)
{
    notify_printf("STOPPING=1\nSTATUS=stopping: draining in-flight jobs");
}
