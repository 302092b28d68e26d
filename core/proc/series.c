/*
 * series.c - the metric series table of the shared region (shm.h): a series
 * found by open addressing on (metric, process, labels) without a lock, made
 * under the table's robust lock, dropped, freed and its tombstones cleared,
 * and the walks over the series that exist. What a metric is (its labels,
 * its kind, how it renders) is metrics.c's: this file knows slots only.
 */
#include "series.h"

#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

/* The master's threads walk the listed series (a scrape, /readyz,
 * metrics_gauge_only, metrics_forget_proc: series_walk_begin) under its read
 * side, and metrics_drop_unnamed frees series under its write side
 * (series_free_if): a walker that read a slot as ready reads it whole, as it
 * is neither freed nor given to another series before the walk ends
 * (take_over's relabelling of a one gauge's slot aside: series_copy_labels).
 * Per process: only the master walks and frees; workers only look up and
 * make series. */
static pthread_rwlock_t walk = PTHREAD_RWLOCK_INITIALIZER;

void
series_walk_begin(void)
{
    pthread_rwlock_rdlock(&walk);
}

void
series_walk_end(void)
{
    pthread_rwlock_unlock(&walk);
}

/* The bytes of label value v the shared region keeps: at most SHM_LABEL - 1,
 * and a value cut there loses the whole UTF-8 character the cut would split
 * (an operator's pause reason can be long and in any script): /metrics must
 * be valid UTF-8, or Prometheus drops the whole scrape. */
static size_t
label_kept(const char *v)
{
    size_t n = strnlen(v, SHM_LABEL - 1);
    /* Cut inside a character: back to its first byte (at most 3 steps; a
     * longer run of continuation bytes is no UTF-8, which rendering shows). */
    for (int k = 0; k < 3 && n > 0 && ((unsigned char) v[n] & 0xc0) == 0x80; k++) {
        n--;
    }
    return n;
}

/* A series' three label values as they are stored: NULL as "", each cut
 * as label_kept says. Measured once per look-up, for the hash and every
 * comparison the probe makes. */
struct labels {
    const char *v[3];
    size_t n[3];
};

static struct labels
labels_of(const char *l1, const char *l2, const char *l3)
{
    struct labels ls = {{l1 != NULL ? l1 : "", l2 != NULL ? l2 : "", l3 != NULL ? l3 : ""}, {0}};
    for (int i = 0; i < 3; i++) {
        ls.n[i] = label_kept(ls.v[i]);
    }
    return ls;
}

/* A one gauge's series (series_find) hash on their first label alone. */
static uint64_t
hash_series(int m, int one, int proc, const struct labels *ls)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t) (m * 31 + proc + 7);
    for (int i = 0; i < (one ? 1 : 3); i++) {
        /* As stored: labels that differ only past what is kept are one series. */
        for (size_t k = 0; k < ls->n[i]; k++) {
            h = (h ^ (unsigned char) ls->v[i][k]) * 1099511628211ull;
        }
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
}

int
series_label_is(const char *stored, const char *want)
{
    size_t n = label_kept(want);
    return memcmp(stored, want, n) == 0 && stored[n] == '\0';
}

static inline __attribute__((always_inline)) int
same_series(const struct shm_series *s, int m, int proc, const struct labels *ls)
{
    if (__atomic_load_n(&s->metric, __ATOMIC_RELAXED) != m ||
        __atomic_load_n(&s->proc, __ATOMIC_RELAXED) != proc) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        if (memcmp(s->labels[i], ls->v[i], ls->n[i]) != 0 || s->labels[i][ls->n[i]] != '\0') {
            return 0;
        }
    }
    return 1;
}

/* A series' labels written into its slot (state 1, its writer's alone).
 * Byte by byte as atomics: a render may read a one gauge's labels
 * while take_over rewrites them (series_copy_labels), and both sides are then
 * atomic accesses, which the thread sanitizer can check. A series is made
 * once, so the cost does not matter. */
static void
put_labels(struct shm_series *s, const struct labels *ls)
{
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < ls->n[i]; k++) {
            __atomic_store_n(&s->labels[i][k], ls->v[i][k], __ATOMIC_RELAXED);
        }
        __atomic_store_n(&s->labels[i][ls->n[i]], '\0', __ATOMIC_RELAXED);
    }
}

/* Acquire loads keep the second read of relabels after every byte's
 * (seqlock readers usually take a fence there, which the thread sanitizer
 * does not model). */
int
series_copy_labels(const struct shm_series *s, char out[3][SHM_LABEL], uint64_t *v)
{
    int seq = __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE);
    *v = __atomic_load_n(&s->value, __ATOMIC_ACQUIRE);
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < SHM_LABEL; k++) {
            out[i][k] = __atomic_load_n(&s->labels[i][k], __ATOMIC_ACQUIRE);
        }
        out[i][SHM_LABEL - 1] = '\0';
    }
    return (seq & 1) == 0 && __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE) == seq ? 0 : -1;
}

/* Whether s is a dropped series of m (a one gauge) for proc and l1,
 * whatever its other labels: a slot the series of ls may take over. */
static int
dropped_sibling(const struct shm_series *s, int st, int m, int one, int proc,
                const struct labels *ls)
{
    return one && st == SHM_SLOT_DROPPED && s->metric == m && s->proc == proc &&
           memcmp(s->labels[0], ls->v[0], ls->n[0]) == 0 && s->labels[0][ls->n[0]] == '\0';
}

/* Give the dropped slot s (dropped_sibling) the labels ls, at 0: 1, or 0
 * when it is no longer dropped. Only m's single writer calls this (the
 * contract of metrics_gauge_only); relabels is odd meanwhile, so that a
 * render that found the slot ready before it was dropped can tell. */
static int
take_over(struct shm_series *s, const struct labels *ls)
{
    int expected = SHM_SLOT_DROPPED;
    if (!__atomic_compare_exchange_n(&s->state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return 0;
    }
    __atomic_add_fetch(&s->relabels, 1, __ATOMIC_ACQ_REL);
    put_labels(s, ls);
    __atomic_store_n(&s->value, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->relabels, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
    return 1;
}

/* A new series found no slot: counted, and said once for the whole
 * instance (by the process that counted first). The table holds the series
 * of the names some live configuration has (metrics_drop_unnamed frees the
 * others once their generations are gone) and the dropped ones
 * metrics_gauge_only reuses: only that many series fill it. */
static void
table_full(struct shm_region *r)
{
    if (__atomic_fetch_add(&r->series_unrecorded, 1, __ATOMIC_RELAXED) == 0) {
        log_warn("metrics: the series table is full (%d series): updates of new series are "
                 "not recorded (twice_metric_series_unrecorded_total counts them): more series "
                 "are in use at once than it holds",
                 SHM_SERIES);
    }
}

/*
 * How the table is shared (every process maps it, none waits on a lookup):
 *
 * - A lookup of a series that exists takes no lock: it probes from the
 *   series' hash to its slot, past slots of other series, dropped ones and
 *   freed ones (SHM_SLOT_FREED, tombstones), and stops at the first slot
 *   never used (state 0): nothing is ever made past one. A freed slot goes
 *   back to 0 only where no chain to a series passes it (clear_tombstones),
 *   so freeing a series breaks no other's probe chain.
 * - Making a series and freeing series take series_lock. A maker probes the
 *   chain again under it and takes the first freed or never-used slot on it:
 *   with frees and other makes excluded, two processes making one series
 *   agree on that slot, so a series is never made twice.
 * - A freed slot is given to a new series while lookups may still be
 *   comparing its old labels: the maker holds relabels odd while it writes
 *   them, and a lookup counts a match only when relabels was even and the
 *   same around its comparison (lookup_match), so no torn mix of old and new
 *   labels is ever taken for a series.
 * - A series is freed only when no process can update it any more
 *   (series_free_if's contract): an updater holds a slot's pointer
 *   only between its lookup and its update, so no update lands in a slot
 *   after it was given to another series.
 */

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define METRICS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define METRICS_TSAN 1
#endif

/* relabels read again after a lookup compared a slot's labels, the compare
 * ordered before it. ThreadSanitizer does not model fences (GCC refuses
 * them under -fsanitize=thread): its builds read it with a read-modify-write
 * of 0, which orders the same reads, a store only those builds pay. */
static inline __attribute__((always_inline)) int
relabels_after(const struct shm_series *s)
{
#ifdef METRICS_TSAN
    return __atomic_fetch_add((int *) &s->relabels, 0, __ATOMIC_ACQ_REL);
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->relabels, __ATOMIC_RELAXED);
#endif
}

/* Whether s, read as ready, is the series (m, proc, ls): its labels compared
 * between two reads of relabels, which a maker giving the slot new labels
 * holds odd meanwhile (above). Plain reads of the labels: those of a ready
 * slot change only after it was freed, which this check catches. */
static inline __attribute__((always_inline)) int
lookup_match(const struct shm_series *s, int m, int proc, const struct labels *ls)
{
    int seq = __atomic_load_n(&s->relabels, __ATOMIC_ACQUIRE);
    if (!same_series(s, m, proc, ls)) {
        return 0;
    }
    return (seq & 1) == 0 && relabels_after(s) == seq;
}

/* probe, lookup_match and same_series are forced inline: they are every
 * update's path, and out of line (probe has two callers) they cost ~70
 * instructions more per update than the single loop they replaced (~520);
 * inline, ~18 (valgrind, 400,000 counts of 500 series). */

/* Where a probe chain ended: the first free or freed slot met (where the
 * series would be made), and the first dropped sibling (take_over). */
struct probe_end {
    struct shm_series *hole;
    struct shm_series *sibling;
};

/* The series (m, proc, ls) on its probe chain from h, or NULL when absent
 * (*end says where it would go). A series metrics_gauge_only dropped is
 * absent for a read, and ready again when create. */
static inline __attribute__((always_inline)) struct shm_series *
probe(struct shm_region *r, uint64_t h, int m, int one, int proc, const struct labels *ls,
      int create, struct probe_end *end)
{
    for (size_t i = 0; i < SHM_SERIES; i++) {
        struct shm_series *s = &r->series[(h + i) % SHM_SERIES];
        int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        if (st == 0 || st == SHM_SLOT_FREED) {
            end->hole = end->hole != NULL ? end->hole : s;
            if (st == 0) {
                return NULL; /* probing stops at the first slot never used: absent */
            }
            continue;
        }
        if (st == 1) { /* another process is writing its labels */
            st = shm_slot_state(&s->state);
        }
        if (st == 2 && lookup_match(s, m, proc, ls)) {
            return s;
        }
        if (st == SHM_SLOT_DROPPED && same_series(s, m, proc, ls)) {
            /* metrics_gauge_only dropped it: absent when read, back when set. */
            if (!create) {
                return NULL;
            }
            int expected = SHM_SLOT_DROPPED;
            if (__atomic_compare_exchange_n(&s->state, &expected, 2, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) ||
                expected == 2) {
                return s;
            }
            continue; /* freed meanwhile (metrics_drop_unnamed): not this series' any more */
        }
        if (end->sibling == NULL && create && dropped_sibling(s, st, m, one, proc, ls)) {
            end->sibling = s; /* taken over if the series turns out absent */
        }
    }
    return NULL;
}

/* series_lock, taken from a holder that died if need be (its half-made
 * slot, state 1, is marked abandoned by whoever meets it). 0, or -1. */
static int
lock_series(struct shm_region *r)
{
    int rc = pthread_mutex_lock(&r->series_lock);
    if (rc == EOWNERDEAD) {
        rc = pthread_mutex_consistent(&r->series_lock);
    }
    return rc == 0 ? 0 : -1;
}

/* The series (m, proc, ls) written into hole, a free or freed slot, under
 * series_lock. A slot used for the first time is listed; a freed one keeps
 * its place in the list. */
static struct shm_series *
make_series(struct shm_region *r, struct shm_series *hole, int m, int proc,
            const struct labels *ls)
{
    int was = __atomic_load_n(&hole->state, __ATOMIC_ACQUIRE);
    if (!__atomic_compare_exchange_n(&hole->state, &was, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return NULL; /* not possible under the lock; said as a full table */
    }
    __atomic_add_fetch(&r->series_used, 1, __ATOMIC_RELAXED); /* counted while state 1 too */
    /* Never made before: relabels still 0 (clear_tombstones may have set a
     * used slot's state back to 0, and it is listed already). */
    int fresh = __atomic_fetch_add(&hole->relabels, 1, __ATOMIC_ACQ_REL) == 0;
    __atomic_store_n(&hole->metric, m, __ATOMIC_RELAXED); /* a lookup may compare them */
    __atomic_store_n(&hole->proc, proc, __ATOMIC_RELAXED);
    put_labels(hole, ls);
    __atomic_store_n(&hole->value, 0, __ATOMIC_RELAXED); /* a name back: counters from 0 */
    __atomic_add_fetch(&hole->relabels, 1, __ATOMIC_ACQ_REL);
    if (fresh) {
        /* Listed before it is ready: a writer dying in between leaves a
         * listed slot that readers skip, never a ready one unlisted. */
        int k = __atomic_fetch_add(&r->series_listed, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&r->series_order[k], (int) (hole - r->series) + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&hole->state, 2, __ATOMIC_RELEASE);
    return hole;
}

/* An absent series made: probed again under series_lock (another process
 * may have made it, or freed slots, since), then a dropped sibling taken
 * over or the first hole of the chain taken. NULL when the table is full. */
static struct shm_series *
create_series(struct shm_region *r, uint64_t h, int m, int one, int proc, const struct labels *ls)
{
    if (lock_series(r) != 0) {
        table_full(r);
        return NULL;
    }
    struct probe_end end = {NULL, NULL};
    struct shm_series *s = probe(r, h, m, one, proc, ls, 1, &end);
    if (s == NULL && end.sibling != NULL && take_over(end.sibling, ls)) {
        s = end.sibling;
    }
    if (s == NULL && end.hole != NULL) {
        s = make_series(r, end.hole, m, proc, ls);
    }
    pthread_mutex_unlock(&r->series_lock);
    if (s == NULL) {
        table_full(r);
    }
    return s;
}

/* A new series of a one gauge takes over a dropped one of its first label
 * met on the way, so each of those holds at most two slots (the value shown
 * and the one before, dropped), however many values it shows over time.
 * A series that exists is found without a lock (How the table is shared). */
struct shm_series *
series_find(int m, int one, int proc, const char *l1, const char *l2, const char *l3, int create)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return NULL;
    }
    struct labels ls = labels_of(l1, l2, l3);
    uint64_t h = hash_series(m, one, proc, &ls);
    struct probe_end end = {NULL, NULL};
    struct shm_series *s = probe(r, h, m, one, proc, &ls, create, &end);
    if (s != NULL || !create) {
        return s;
    }
    if (end.sibling != NULL && take_over(end.sibling, &ls)) {
        return end.sibling; /* absent: it takes the dropped sibling's slot */
    }
    return create_series(r, h, m, one, proc, &ls);
}

void
series_forget_proc(int proc_slot)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return;
    }
    series_walk_begin();
    for (int k = 0, n = series_listed(r); k < n; k++) {
        int slot = series_ready_slot(r, k);
        if (slot >= 0 && r->series[slot].proc == proc_slot) {
            __atomic_store_n(&r->series[slot].value, 0, __ATOMIC_RELAXED); /* 0 and 0.0 alike */
        }
    }
    series_walk_end();
}

void
series_drop_siblings(int m, const char *l1, const char *l2)
{
    struct shm_region *r = shm_region();
    if (r == NULL) {
        return;
    }
    struct labels keep = labels_of(l1, l2, NULL);
    series_walk_begin();
    for (int k = 0, n = series_listed(r); k < n; k++) {
        int slot = series_ready_slot(r, k);
        struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        if (s != NULL && s->metric == m && s->proc == -1 &&
            series_label_is(s->labels[0], l1 != NULL ? l1 : "") && !same_series(s, m, -1, &keep)) {
            int expected = 2;
            __atomic_compare_exchange_n(&s->state, &expected, SHM_SLOT_DROPPED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        }
    }
    series_walk_end();
}

/* Freed slots no probe chain needs any more set back to never used, so
 * that lookups of absent series and makers stop early again after many
 * frees: a run of freed slots right before a slot never used is on no
 * chain that leads to a series (a series is made in the first hole of its
 * chain, so none lies past a slot never used), and is cleared backward from
 * that slot, so a lookup meets the 0 no later than it would have ended
 * anyway. Under series_lock. */
static void
clear_tombstones(struct shm_region *r)
{
    for (size_t i = 0; i < SHM_SERIES; i++) {
        if (__atomic_load_n(&r->series[i].state, __ATOMIC_ACQUIRE) != 0) {
            continue;
        }
        for (size_t k = 1; k < SHM_SERIES; k++) {
            int expected = SHM_SLOT_FREED;
            if (!__atomic_compare_exchange_n(&r->series[(i + SHM_SERIES - k) % SHM_SERIES].state,
                                             &expected, 0, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE)) {
                break;
            }
        }
    }
}

int
series_free_if(series_dead_fn dead, void *arg)
{
    struct shm_region *r = shm_region();
    int freed = 0;
    if (r == NULL) {
        return 0;
    }
    pthread_rwlock_wrlock(&walk); /* no walker reads a slot freed under it */
    if (lock_series(r) != 0) {    /* no series made meanwhile (How the table is shared) */
        pthread_rwlock_unlock(&walk);
        return -1;
    }
    for (int k = 0, n = series_listed(r); k < n; k++) {
        int slot = __atomic_load_n(&r->series_order[k], __ATOMIC_ACQUIRE) - 1;
        struct shm_series *s = slot >= 0 ? &r->series[slot] : NULL;
        int st = s != NULL ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : 0;
        if ((st == 2 || st == SHM_SLOT_DROPPED) && dead(arg, s) &&
            __atomic_compare_exchange_n(&s->state, &st, SHM_SLOT_FREED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            __atomic_sub_fetch(&r->series_used, 1, __ATOMIC_RELAXED);
            freed++;
        }
    }
    clear_tombstones(r);
    pthread_mutex_unlock(&r->series_lock);
    pthread_rwlock_unlock(&walk);
    return freed;
}

int
series_in_use(void)
{
    struct shm_region *r = shm_region();
    return r != NULL ? __atomic_load_n(&r->series_used, __ATOMIC_RELAXED) : 0;
}

/* Past 90%, a few more names fill the table (a queue's and plugin's
 * histograms alone take 35 slots); below 80% again before a second warning,
 * so that a use that hovers around the mark is said once, not at each pass. */
int
series_use_alarm(int *warned, int in_use, int capacity)
{
    long long used = in_use, cap = capacity;
    if (!*warned && used * 10 > cap * 9) {
        *warned = 1;
        return 1;
    }
    if (*warned && used * 10 < cap * 8) {
        *warned = 0;
    }
    return 0;
}
