/*
 * fileopen.c - open a named file without waiting on it, and /dev/null on
 * closed standard descriptors (fileopen.h). Not a reader and not a
 * permission check: the callers do those.
 */
#include "fileopen.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* fd with O_NONBLOCK cleared: fd, or -1 (closed) with errno. */
static int
blocking(int fd)
{
    int fl = fd < 0 ? -1 : fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        errno = e;
        return -1;
    }
    return fd;
}

int
fileopen_read(const char *path)
{
    return blocking(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
}

int
fileopen_append(const char *path, mode_t mode, int nofollow)
{
    int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK;
    return blocking(open(path, flags | (nofollow ? O_NOFOLLOW : 0), mode));
}

void
fileopen_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (null >= 0 && null != fd) { /* the lowest free number: fd itself */
                dup2(null, fd);
                close(null);
            }
        }
    }
}
