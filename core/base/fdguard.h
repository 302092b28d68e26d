/*
 * fdguard.h - telling that a plugin closed twiced's descriptors (a
 * daemonising library, a careless closefrom(3) in init() or handle()): a
 * sentinel descriptor of the process's own, checked when a descriptor is
 * found wrong (a store's socket, an HTTP transfer that failed or waits long)
 * rather than after each plugin call, which would cost a system call per
 * message; and an epoch the descriptors' owners compare to make theirs again.
 * Not the remaking itself: each owner does its own (http.c, the store).
 */
#ifndef TWICE_FDGUARD_H
#define TWICE_FDGUARD_H

/* Open the sentinel (a memfd: an inode no other descriptor has). Before the
 * first plugin call; until then fdguard_check says nothing. 0, or -1 with
 * errno. */
int fdguard_open(void);

/* Whether the sentinel was closed (or closed and its number given to
 * another file) since the last check: 1 the first time it is seen, once
 * per time it happened, the epoch then moved on, the sentinel opened again
 * and fdguard_on_closed's function called; 0 otherwise. One fstat;
 * thread-safe. */
int fdguard_check(void);

/* fn is called (on the thread that found it) each time fdguard_check finds
 * the descriptors closed: it says so and has what must be opened again
 * opened again. Set once, before any plugin call. */
void fdguard_on_closed(void (*fn)(void));

/* How many times the process's descriptors were found closed: a holder of
 * descriptors that noted an older epoch makes them again. One atomic load. */
unsigned fdguard_epoch(void);

/* Which file a descriptor number held when its owner noted it: what tells
 * the owner's own descriptor from that number closed under it (a plugin
 * that closes every descriptor) and perhaps given to another file since.
 * fd -1: none noted (FDGUARD_ID_NONE). */
struct fdguard_id {
    int fd;
    unsigned long long dev, ino;
};
#define FDGUARD_ID_NONE ((struct fdguard_id){-1, 0, 0})

/* Note which file fd is (one fstat); none (fd -1) when fd < 0 or fstat
 * fails. */
void fdguard_note(struct fdguard_id *id, int fd);

/* Whether fd is id's number and still the file noted there (one fstat); 0
 * when none was noted. */
int fdguard_same(const struct fdguard_id *id, int fd);

/* Keep p, a handle left alone because its descriptors were closed (a PGconn,
 * a curl handle: freeing it would close numbers that may be another's by
 * now): never freed, but reachable, so a leak checker does not report the
 * deliberate leak. Past a few dozen, p is just dropped. Thread-safe. */
void fdguard_keep(void *p);

#endif
