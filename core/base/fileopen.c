/*
 * fileopen.c - open a named file without waiting on it (fileopen.h). Not a
 * reader and not a permission check: the callers do those.
 */
#include "fileopen.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int
fileopen_read(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
