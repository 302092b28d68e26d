/*
 * fdguard.c - the sentinel of fdguard.h: one descriptor whose inode is
 * noted when it is opened, so that a close of every descriptor above 2 by
 * a plugin is seen at the next check, even when its number was taken again
 * meanwhile. Not what happens then: the caller says it, the owners of
 * descriptors remake theirs when fdguard_epoch moves.
 */
#include "fdguard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>

static pthread_mutex_t guard_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int guard_fd = -1;
static atomic_ullong guard_dev; /* the sentinel's, changed only under guard_mu */
static atomic_ullong guard_ino;
static atomic_uint guard_epoch;
static void (*guard_hook)(void);
/* fdguard_keep's handles, under guard_mu. */
#define GUARD_KEPT_MAX 64
static void *guard_kept[GUARD_KEPT_MAX];
static size_t guard_nkept;

void
fdguard_note(struct fdguard_id *id, int fd)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        *id = FDGUARD_ID_NONE;
        return;
    }
    id->fd = fd;
    id->dev = (unsigned long long) st.st_dev;
    id->ino = (unsigned long long) st.st_ino;
}

int
fdguard_same(const struct fdguard_id *id, int fd)
{
    struct stat st;
    return id->fd >= 0 && fd == id->fd && fstat(fd, &st) == 0 &&
           (unsigned long long) st.st_dev == id->dev && (unsigned long long) st.st_ino == id->ino;
}

void
fdguard_keep(void *p)
{
    pthread_mutex_lock(&guard_mu);
    if (p != NULL && guard_nkept < GUARD_KEPT_MAX) {
        guard_kept[guard_nkept++] = p;
    }
    pthread_mutex_unlock(&guard_mu);
}

void
fdguard_on_closed(void (*fn)(void))
{
    guard_hook = fn;
}

/* Open the sentinel and note its inode; guard_mu held. 0, or -1. */
static int
guard_make(void)
{
    int fd = memfd_create("twice-fdguard", MFD_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        atomic_store(&guard_fd, -1);
        return -1;
    }
    atomic_store(&guard_dev, (unsigned long long) st.st_dev);
    atomic_store(&guard_ino, (unsigned long long) st.st_ino);
    atomic_store(&guard_fd, fd);
    return 0;
}

int
fdguard_open(void)
{
    pthread_mutex_lock(&guard_mu);
    int rc = atomic_load(&guard_fd) >= 0 ? 0 : guard_make();
    pthread_mutex_unlock(&guard_mu);
    return rc;
}

/* Whether fd is still the sentinel (false also while another thread makes a
 * new one: the caller looks again under guard_mu). */
static int
guard_intact(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (unsigned long long) st.st_dev == atomic_load(&guard_dev) &&
           (unsigned long long) st.st_ino == atomic_load(&guard_ino);
}

int
fdguard_check(void)
{
    int fd = atomic_load(&guard_fd);
    if (fd < 0 || guard_intact(fd)) {
        return 0; /* the path of every call: one fstat, no lock */
    }
    pthread_mutex_lock(&guard_mu);
    fd = atomic_load(&guard_fd);
    int gone = fd >= 0 && !guard_intact(fd);
    if (gone) {
        /* Its number is not closed: it may be another's by now. */
        atomic_fetch_add(&guard_epoch, 1);
        int saved = errno;
        (void) guard_make();
        errno = saved;
    }
    pthread_mutex_unlock(&guard_mu);
    if (gone && guard_hook != NULL) {
        guard_hook();
    }
    return gone;
}

unsigned
fdguard_epoch(void)
{
    return atomic_load_explicit(&guard_epoch, memory_order_acquire);
}
