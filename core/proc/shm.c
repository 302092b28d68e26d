/*
 * shm.c - creating, mapping and the process table of the shared region
 * (see shm.h). Metrics series are managed by series.c.
 */
#include "shm.h"

#include "hash.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static struct shm_region *region;
static _Thread_local int thread_job = -1;

struct shm_region *
shm_region(void)
{
    return region;
}

struct dlqcarry *
shm_dlq_carry(void)
{
    return region != NULL ? &region->dlq_carry : NULL;
}

/* A lock of the region, process-shared and robust: a process that dies
 * holding it (a crash while it makes a series, a janitor's process dying
 * mid-way through the gone workers) leaves it to the next taker, not locked
 * for good. 0, or an errno value. */
static int
robust_init(pthread_mutex_t *mu)
{
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);
    if (rc == 0) {
        rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
        rc = rc != 0 ? rc : pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
        rc = rc != 0 ? rc : pthread_mutex_init(mu, &attr);
        pthread_mutexattr_destroy(&attr);
    }
    return rc;
}

int
shm_create(void)
{
    int fd = memfd_create("twice-shm", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (ftruncate(fd, (off_t) sizeof(struct shm_region)) != 0 || shm_attach(fd) != 0) {
        close(fd);
        return -1;
    }
    for (int i = 0; i < SHM_PROCS; i++) {
        region->procs[i].crashed_job = -1;
    }
    if (robust_init(&region->series_lock) != 0 || robust_init(&region->gone.consumer) != 0 ||
        robust_init(&region->storehealth.lock) != 0) {
        munmap(region, sizeof(struct shm_region));
        region = NULL;
        close(fd);
        return -1;
    }
    return fd;
}

int
shm_attach(int fd)
{
    void *p = mmap(NULL, sizeof(struct shm_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        return -1;
    }
    region = p;
    return 0;
}

/* src cut to cap - 1 bytes and NUL-terminated into dst, as snprintf("%s")
 * would: without printf, as run_handler does it for every job. */
static void
copy_field(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strnlen(src, cap - 1) : 0;
    memcpy(dst, src != NULL ? src : "", n);
    dst[n] = '\0';
}

int
shm_jobs_grow(int proc_slot, int n)
{
    if (region == NULL || proc_slot < 0 || proc_slot >= SHM_PROCS) {
        return 0;
    }
    if (n > SHM_JOBS) {
        return -1;
    }
    int *jobs = &region->procs[proc_slot].jobs;
    if (__atomic_load_n(jobs, __ATOMIC_ACQUIRE) < n) {
        __atomic_store_n(jobs, n, __ATOMIC_RELEASE); /* the worker's start: one writer */
    }
    return 0;
}

int
shm_jobs_count(int proc_slot)
{
    if (region == NULL || proc_slot < 0 || proc_slot >= SHM_PROCS) {
        return 0;
    }
    int n = __atomic_load_n(&region->procs[proc_slot].jobs, __ATOMIC_ACQUIRE);
    return n < 0 ? 0 : n > SHM_JOBS ? SHM_JOBS : n;
}

uint32_t
shm_names_of(const struct config *c)
{
    uint64_t h = HASH_FNV1A_INIT;
    for (size_t i = 0; i < c->nqueues; i++) {
        h = hash_fnv1a(hash_fnv1a(h, c->queues[i].name), "\t");
    }
    h = hash_fnv1a(h, "\n"); /* queues, then plugins */
    for (size_t i = 0; i < c->nplugins; i++) {
        h = hash_fnv1a(hash_fnv1a(h, c->plugins[i].name), "\t");
    }
    uint32_t v = (uint32_t) (h ^ (h >> 32));
    return v != 0 ? v : 1; /* 0: not said */
}

void
shm_proc_names(int proc_slot, uint32_t names)
{
    if (region != NULL && proc_slot >= 0 && proc_slot < SHM_PROCS) {
        __atomic_store_n(&region->procs[proc_slot].names, names, __ATOMIC_RELEASE);
    }
}

int
shm_job_begin(int proc_slot, int idx, int queue, int plugin, const char *message_id, int attempt)
{
    if (region == NULL || proc_slot < 0 || proc_slot >= SHM_PROCS || idx < 0 || idx >= SHM_JOBS) {
        return -1;
    }
    struct shm_job *j = &region->jobs[proc_slot].job[idx]; /* this thread's alone */
    __atomic_store_n(&j->used, 1, __ATOMIC_RELEASE);
    j->queue = queue;
    j->plugin = plugin;
    copy_field(j->message_id, sizeof(j->message_id), message_id);
    j->attempt = attempt;
    __atomic_store_n(&j->used, 2, __ATOMIC_RELEASE);
    thread_job = idx;
    return idx;
}

void
shm_job_end(int proc_slot, int idx)
{
    thread_job = -1;
    if (region == NULL || proc_slot < 0 || proc_slot >= SHM_PROCS || idx < 0) {
        return;
    }
    __atomic_store_n(&region->jobs[proc_slot].job[idx].used, 0, __ATOMIC_RELEASE);
}

void
shm_mark_crash(int proc_slot)
{
    if (region != NULL && proc_slot >= 0 && proc_slot < SHM_PROCS) {
        __atomic_store_n(&region->procs[proc_slot].crashed_job, thread_job, __ATOMIC_RELEASE);
    }
}

static struct shm_proc *
proc_at(int proc_slot)
{
    return region != NULL && proc_slot >= 0 && proc_slot < SHM_PROCS ? &region->procs[proc_slot]
                                                                     : NULL;
}

int
shm_thread_job(void)
{
    return thread_job;
}

void
shm_mark_job_crash(int proc_slot, int idx)
{
    struct shm_proc *p = proc_at(proc_slot);
    if (p != NULL && idx >= 0 && idx < SHM_JOBS) {
        __atomic_store_n(&p->crashed_job, idx, __ATOMIC_RELEASE);
    }
}

void
shm_ask_replace(int proc_slot, enum shm_replace why)
{
    struct shm_proc *p = proc_at(proc_slot);
    if (p != NULL) {
        __atomic_store_n(&p->replace, (int) why, __ATOMIC_RELEASE);
    }
}

enum shm_replace
shm_take_replace(int proc_slot)
{
    struct shm_proc *p = proc_at(proc_slot);
    return p != NULL ? (enum shm_replace) __atomic_exchange_n(&p->replace, 0, __ATOMIC_ACQ_REL)
                     : SHM_REPLACE_NONE;
}

void
shm_dlq_event(const char *queue, const char *plugin, const char *reason, const char *message_id,
              const char *key)
{
    if (region == NULL) {
        return;
    }
    uint64_t seq = __atomic_add_fetch(&region->dlq_next, 1, __ATOMIC_ACQ_REL);
    struct shm_dlq_event *e = &region->dlq[seq % SHM_DLQ_EVENTS];
    __atomic_store_n(&e->seq, 0, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_RELEASE); /* no field write is seen before the 0 */
    e->at = (int64_t) time(NULL);
    copy_field(e->queue, sizeof(e->queue), queue);
    copy_field(e->plugin, sizeof(e->plugin), plugin);
    copy_field(e->reason, sizeof(e->reason), reason);
    copy_field(e->message_id, sizeof(e->message_id), message_id);
    copy_field(e->key, sizeof(e->key), key);
    __atomic_store_n(&e->seq, seq, __ATOMIC_RELEASE);
}

size_t
shm_dlq_read(uint64_t *cursor, struct shm_dlq_event *out, size_t max, uint64_t *lost)
{
    size_t n = 0;
    if (lost != NULL) {
        *lost = 0;
    }
    if (region == NULL) {
        return 0;
    }
    uint64_t last = __atomic_load_n(&region->dlq_next, __ATOMIC_ACQUIRE);
    if (last > *cursor + SHM_DLQ_EVENTS) { /* the oldest were overwritten */
        if (lost != NULL) {
            *lost = last - SHM_DLQ_EVENTS - *cursor;
        }
        *cursor = last - SHM_DLQ_EVENTS;
    }
    while (*cursor < last && n < max) {
        uint64_t want = *cursor + 1;
        struct shm_dlq_event *e = &region->dlq[want % SHM_DLQ_EVENTS];
        if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != want) {
            break; /* still being written: read it next time */
        }
        out[n] = *e;
        __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copy is done before seq is read again */
        if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != want) {
            break; /* overwritten while copying */
        }
        n++;
        *cursor = want;
    }
    return n;
}

int
shm_slot_state(int *state)
{
    int st = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    for (long spins = 0; st == 1 && spins < 1000000L; spins++) {
        st = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    }
    if (st == 1) {
        /* Mark it abandoned, so nobody spins on it again; a writer that was
         * only slow still stores 2 over this and the slot becomes usable. */
        int expected = 1;
        __atomic_compare_exchange_n(state, &expected, SHM_SLOT_ABANDONED, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        st = expected == 1 ? SHM_SLOT_ABANDONED : expected;
    }
    return st;
}

/* Whether the named slot (its state and name) is key's, claiming it for key
 * when it is free. */
static int
named_slot(int *state, char *name, size_t cap, const char *key)
{
    int st = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        int expected = 0;
        if (__atomic_compare_exchange_n(state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            copy_field(name, cap, key);
            __atomic_store_n(state, 2, __ATOMIC_RELEASE);
            return 1;
        }
        st = expected;
    }
    if (st == 1) {
        st = shm_slot_state(state);
    }
    return st == 2 && strcmp(name, key) == 0;
}

/* The advice slot for key, claimed when absent; NULL when the table is full. */
static struct shm_advice *
advice_slot(const char *key)
{
    for (int i = 0; i < SHM_ADVICE; i++) {
        struct shm_advice *a = &region->advice[i];
        if (named_slot(&a->state, a->key, sizeof(a->key), key)) {
            return a;
        }
    }
    return NULL;
}

struct shm_limit *
shm_limit_slot(const char *name)
{
    for (int i = 0; region != NULL && i < SHM_LIMITS; i++) {
        struct shm_limit *l = &region->limits[i];
        if (named_slot(&l->state, l->name, sizeof(l->name), name)) {
            return l;
        }
    }
    return NULL;
}

int
shm_advice_due(const char *queue, const char *plugin, int64_t now, int every)
{
    if (region == NULL) {
        return 1;
    }
    char key[192];
    snprintf(key, sizeof(key), "%s\t%s", queue, plugin);
    struct shm_advice *a = advice_slot(key);
    if (a == NULL) {
        return 0;
    }
    int64_t last = __atomic_load_n(&a->last, __ATOMIC_ACQUIRE);
    if (last != 0 && now - last < every) {
        return 0;
    }
    return __atomic_compare_exchange_n(&a->last, &last, now, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}
