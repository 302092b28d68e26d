/*
 * atomics.h - the only state threads share without a mutex, as C11 atomics:
 * a flag one thread raises to ask the others to stop (drain, give up, cancel
 * a call), and an int one thread sets now and then while others read it (the
 * log level). Not for signal handlers (they set a volatile sig_atomic_t) nor
 * for the shared-memory region between processes (shm.h has its own layout).
 */
#ifndef TWICE_ATOMICS_H
#define TWICE_ATOMICS_H

#include <stdatomic.h>
#include <stddef.h>

/* A flag, down when zeroed (= {0}, calloc). Raising it releases what
 * the raiser wrote before; a reader that sees it up acquires that. It is
 * never lowered: a stopped thing stays stopped. */
struct flag {
    atomic_int up;
};

static inline void
flag_raise(struct flag *f)
{
    atomic_store_explicit(&f->up, 1, memory_order_release);
}

/* Nonzero once raised; NULL is a flag nobody can raise. */
static inline int
flag_is_up(const struct flag *f)
{
    return f != NULL && atomic_load_explicit(&f->up, memory_order_acquire);
}

/* An int read without a lock while another thread may set it. A reader
 * sees the old or the new value, never a torn one; nothing else is
 * ordered by it. Initialize it as {value}. */
struct shared_int {
    atomic_int v;
};

static inline void
shared_int_set(struct shared_int *s, int value)
{
    atomic_store_explicit(&s->v, value, memory_order_relaxed);
}

static inline int
shared_int_get(const struct shared_int *s)
{
    return atomic_load_explicit(&s->v, memory_order_relaxed);
}

#endif
