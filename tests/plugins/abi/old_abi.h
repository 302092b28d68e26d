/*
 * old_abi.h - the shared body of the old_abi_* fixtures, compiled against
 * whichever old plugin header (plugin-1.X.h) the fixture included first: a
 * handler that appends "NAME KEY QUEUE" to the file in its `file` setting,
 * and a descriptor handed to the host from the very end of a page whose
 * next page is unmapped, so that a host reading one byte past the size the
 * plugin was built with crashes instead of reading whatever lies there.
 * Used by: old_abi_1_0.c, old_abi_1_1.c, old_abi_1_2.c.
 */
#ifndef TWICE_FIXTURE_OLD_ABI_H
#define TWICE_FIXTURE_OLD_ABI_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const twice_api *api;
static char path[512];

static int
init(const twice_api *a, const twice_settings *s, void **state)
{
    const char *file = a->setting(s, "file");
    api = a;
    snprintf(path, sizeof(path), "%s", file != NULL ? file : "");
    *state = NULL;
    return 0;
}

/* The queue's name where the host's table has queue() (1.1), else "-". */
static const char *
queue_of(const twice_job *job)
{
#ifdef TWICE_API_HAS
#if TWICE_ABI_MINOR >= 1
    if (TWICE_API_HAS(api, queue)) {
        return api->queue(job);
    }
#endif
#endif
    (void) job;
    return "-";
}

static twice_status
handle(void *state, twice_job *job)
{
    char line[1024];
    (void) state;
    int n = snprintf(line, sizeof(line), "%s %s %s\n", OLD_ABI_NAME, api->key(job), queue_of(job));
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || n < 0 || (size_t) n >= sizeof(line) || write(fd, line, (size_t) n) != n) {
        api->error(job, "cannot append to %s", path);
        if (fd >= 0) {
            close(fd);
        }
        return TWICE_RETRY;
    }
    close(fd);
    return TWICE_DONE;
}

/* d (size bytes) copied to the end of a read-only page followed by a
 * PROT_NONE page; made once, kept for the process's life. */
static const twice_plugin *
guarded(const void *d, size_t size)
{
    static const twice_plugin *copy;
    long page = sysconf(_SC_PAGESIZE);

    if (copy == NULL && page > 0 && size <= (size_t) page) {
        char *m = mmap(NULL, 2 * (size_t) page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            memcpy(m + page - size, d, size);
            mprotect(m, (size_t) page, PROT_READ);
            mprotect(m + page, (size_t) page, PROT_NONE);
            copy = (const twice_plugin *) (const void *) (m + page - size);
        }
    }
    return copy;
}

#endif
