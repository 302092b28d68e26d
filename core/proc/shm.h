/*
 * shm.h - the one shared memory region of a twiced instance: a table of
 * processes (what each worker is running right now, so the master can say
 * which message a crashed worker was on), the metrics series, and what one
 * DLQ monitor leaves to the next. Created
 * by the master as a memfd before any worker exists, inherited by workers.
 * Every field written by more than one process is accessed atomically.
 */
#ifndef TWICE_SHM_H
#define TWICE_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dlqcarry.h"

/* The job table, SHM_PROCS * SHM_JOBS records for the largest configuration
 * allowed, is most of the region (88 of 92 MB): virtual only. A memfd's
 * shared mapping is not charged to the commit limit, and only the pages of
 * the records of handler threads that exist become resident. */
#define SHM_PROCS  600                 /* worker slots: 2 generations of up to 256, reused */
#define SHM_JOBS   CONFIG_MAX_HANDLERS /* a record per handler thread of a worker */
#define SHM_SERIES 8192                /* metric series */
#define SHM_LABEL  96                  /* bytes per label value, NUL included */

/* A running job. Its queue and plugin are indices into the configuration
 * of the worker's generation, which the master resolves from its own copy
 * of that configuration's names (master/jobnames.h): names whole (up to
 * CONFIG_MAX_NAME) for 8 bytes, where two 81-byte copies in each of the
 * SHM_PROCS * SHM_JOBS records would cost 22 MB more of the region. The
 * master uses them only when the worker's configuration has its names
 * (struct shm_proc's names). Every field is written before used turns 2,
 * so a crash mid-write leaves a record the master skips. */
struct shm_job {
    int used;    /* atomic: 0 free, 1 being written, 2 running */
    int attempt; /* the run's number (a FIFO retry in place counts on) */
    int queue;   /* index in the configuration's queues */
    int plugin;  /* index in the configuration's plugins */
    char message_id[128];
};

/* A worker process slot's flags. Dense (24 bytes a slot), apart from its
 * jobs: the master scans every slot, and with the jobs inline (then 17 KB a slot)
 * that scan made it touch, and keep resident, a page per slot (2.4 MB). */
struct shm_proc {
    int pid;         /* atomic; 0 when the slot is free */
    int jobs;        /* atomic: job records [0, jobs) in use: the worker's handler threads */
    int crashed_job; /* atomic: index of the job whose thread faulted, -1 */
    int replace;     /* atomic: enum shm_replace, why the worker asks to be replaced */
    int stopped_by;  /* atomic: pid that sent the worker a stop signal, not the master; 0 */
    uint32_t names;  /* atomic: shm_names_of the worker's configuration, 0 until it says: a
                        respawned worker read its @include files again, and they may have
                        changed, so the master names its jobs only when this is its own */
};

/* The jobs running in a worker slot, one record per handler thread (the
 * thread's index among the worker's): every running job is recorded, so a
 * crash is laid at the right message however many run. Pages touched only
 * by the records of threads that exist. */
struct shm_proc_jobs {
    struct shm_job job[SHM_JOBS];
};

struct shm_series {
    int state;    /* atomic: 0 free, 1 being written, 2 ready, SHM_SLOT_DROPPED, SHM_SLOT_FREED */
    int metric;   /* written before state turns 2, by the slot's creator under series_lock */
    int proc;     /* per-process gauges: the process slot; -1 otherwise */
    int relabels; /* atomic: odd while the slot takes new labels: a dropped slot given to
                     a sibling, or a freed one to a new series (series.c) */
    char labels[3][SHM_LABEL];
    uint64_t value; /* atomic: a counter, or a double's bits for gauges/sums */
};

#define SHM_DLQ_EVENTS 512 /* recent dead letters, for the master's alerts */

/* One message twice dead-lettered. seq is written last (atomically): an
 * entry whose seq is not the one a reader expects was overwritten or is
 * being written. */
struct shm_dlq_event {
    uint64_t seq;                    /* atomic; 0: never written */
    int64_t at;                      /* unix time */
    char queue[CONFIG_MAX_NAME + 1]; /* whole: the master finds the queue by it */
    char plugin[CONFIG_MAX_NAME + 1];
    char reason[32];
    char message_id[128];
    char key[192];
};

#define SHM_ADVICE 128 /* (queue, plugin) pairs with a visibility-timeout warning */

struct shm_advice {
    int64_t last;  /* atomic: unix time of the last warning; 0 none */
    char key[192]; /* "queue\tplugin"; set once under state */
    int state;     /* atomic: 0 free, 1 being written, 2 ready */
};

#define SHM_LIMITS 256 /* rate limits (a plugin's or a queue's rate_limit), ratelimit.h */

/* A host's share of one rate limit: tokens leased from PostgreSQL and not yet
 * spent, and who may lease more. Times are CLOCK_MONOTONIC milliseconds (one
 * clock for every process of the machine). */
struct shm_limit {
    int state;            /* atomic: 0 free, 1 being written, 2 ready */
    char name[SHM_LABEL]; /* "plugin:NAME" or "queue:NAME"; set once under state */
    long long tokens;     /* atomic */
    long long leasing;    /* atomic: a process leases until then; 0 none */
    long long next_lease; /* atomic: the bucket was empty, ask again from then */
};

/* The idempotency store's health as its check last saw it (storehealth.h
 * says how), under lock (process-shared, robust), held for a copy at a time
 * and waited for at most a moment: a holder stopped or dead leaves readers
 * knowing nothing, never waiting. */
#define SHM_STORE_WHY    512 /* bytes of the last failed check's reason */
#define SHM_STORE_ID_MAX 384 /* bytes of the identity learned (idem.h's, opaque here) */
struct storehealth_region {
    pthread_mutex_t lock;
    uint64_t store;        /* storehealth_key of what is checked; 0: nothing */
    int ok;                /* the last check's outcome */
    long long answered_ms; /* CLOCK_MONOTONIC ms (every process's) of the last answer */
    char why[SHM_STORE_WHY];
    size_t id_len; /* 0: no identity learned yet */
    unsigned char id[SHM_STORE_ID_MAX];
    int relearn; /* the identity is to be learned again (storehealth_relearn) */
};

/* Which worker runs the host's duties (leader.h says how): both atomic. */
struct leader_region {
    int gen;    /* the generation whose workers may lead; 0: none yet (the master's) */
    int holder; /* the pid of the worker that leads; 0: none */
};

/* Each queue's flow: pauses and circuit breakers (flow.h says how). */
#define FLOW_QUEUES  256 /* queues tracked (names, reused across reloads) */
#define FLOW_BUCKETS 60  /* the failure window, in this many buckets */

struct flow_queue {
    int state; /* atomic: 0 free, 1 being written, 2 ready (shm_slot_state) */
    char name[256];
    int mode;           /* atomic: enum flow_mode of flow.h (master) */
    int64_t until;      /* atomic: the end of an open breaker's cooldown, unix s */
    int64_t open_until; /* atomic: a worker of this host opened the breaker until */
    int trip;           /* atomic: > 0: a worker opened it for this cooldown (to the master) */
    int probes;         /* atomic: probe jobs this host may still start (master grants) */
    int probe_result;   /* atomic: 0 none, 1 the probe succeeded, 2 it failed */
    int64_t bucket_at[FLOW_BUCKETS]; /* atomic: the bucket's number (time / width) */
    int bucket_n[FLOW_BUCKETS];      /* atomic: failures in it */
};

struct flow_region {
    int loaded; /* atomic: the master has read the pause table once */
    struct flow_queue queues[FLOW_QUEUES];
};

/* Gone workers on their way to the janitor (gone.h says how): a queue of
 * owners, written by the master alone and read by one janitor at a time,
 * and a pool of their culprits. The culprits are a ring of their own, an
 * owner pointing at its run of them, so that most owners (a worker that
 * exited, or one whose crash is laid at one job) cost no culprit at all,
 * and the worst (one that died running every job of its SHM_JOBS) no more
 * than the pool holds: 256 owners and 512 culprits, 115 KB of the region,
 * where SHM_JOBS culprits in each owner would be 34 MB. */
#define SHM_GONE          256 /* gone workers waiting for the janitor (its queue held 256) */
#define SHM_GONE_CULPRITS 512 /* culprits of those */
#define SHM_GONE_OWNER    160 /* a lease owner, NUL included (CHILDARGS_OWNER_MAX) */

/* A job that crashed its worker: its run's number and message, as the job
 * record said (struct shm_job). */
struct shm_gone_culprit {
    int attempt;
    char message_id[128];
};

/* A gone worker. Written by the master before the queue's tail passes it. */
struct shm_gone {
    char owner[SHM_GONE_OWNER];
    int64_t gone_ms; /* clock_mono_ms() when the master reaped it */
    uint64_t first;  /* its culprits: pool records first .. first + n - 1, modulo the pool */
    uint32_t n;      /* culprits kept (those the pool had no room for are not counted) */
};

struct shm_gone_queue {
    uint64_t head;    /* atomic: owners done with (removed), by the janitor under consumer */
    uint64_t tail;    /* atomic: owners written, by the master */
    uint64_t written; /* culprits written, by the master (its alone) */
    /* Held (process-shared, robust) by the janitor working through the
     * queue: one at a time, though a reload's old and new janitors overlap.
     * The master never takes it. */
    pthread_mutex_t consumer;
    struct shm_gone gone[SHM_GONE];
    struct shm_gone_culprit culprit[SHM_GONE_CULPRITS];
};

struct shm_region {
    struct shm_proc procs[SHM_PROCS];
    struct shm_proc_jobs jobs[SHM_PROCS]; /* by the same slot */
    struct shm_series series[SHM_SERIES]; /* open addressing by hash */
    /* The series in the order they were made: series_listed (atomic) of
     * them, series_order[k] (atomic) the slot of the k-th plus 1, 0 while
     * being written. Whole-table walks (a scrape, a worker's exit) go through
     * it, so they touch the pages of the series that exist, not 2.5 MB. A
     * slot is listed once, the first time it is used: a freed slot given to
     * a new series keeps its place in the order. */
    int series_listed;
    int series_order[SHM_SERIES];
    /* Held (process-shared, robust) by whoever makes a series or frees
     * series: lookups of series that exist never take it (series.c). */
    pthread_mutex_t series_lock;
    uint64_t series_unrecorded; /* atomic: updates of a new series the full table had no
                                   slot for (twice_metric_series_unrecorded_total) */
    int series_used;            /* atomic, changed under series_lock: slots of series made
                                   and not freed (twice_metric_series), tombstones not */
    uint64_t dlq_next;          /* atomic: sequence number of the last event written */
    struct shm_dlq_event dlq[SHM_DLQ_EVENTS];
    struct shm_advice advice[SHM_ADVICE];
    struct shm_limit limits[SHM_LIMITS];
    struct flow_region flow;               /* queue pauses and breakers: flow.h */
    struct shm_gone_queue gone;            /* gone workers for the janitor: gone.h */
    struct storehealth_region storehealth; /* the store's health for /readyz: storehealth.h */
    struct leader_region leader;           /* who runs the host's duties: leader.h */
    /* What a stopped DLQ monitor leaves to the next (dlqcarry.h): 634 KiB,
     * resident only where a reload wrote it, and freed once read. */
    struct dlqcarry dlq_carry;
};

/* A slot's state (0 free, 1 being written, 2 ready) once its writer is
 * done: a few stores, so a short spin. A writer that died in between (a
 * crash in another thread) would leave 1 for good: after the spin the slot
 * is marked SHM_SLOT_ABANDONED, which callers skip instead of hanging. */
#define SHM_SLOT_ABANDONED 3
/* A series metrics_gauge_only dropped: neither rendered nor read, ready
 * again when it is set again, or given to the next new series of its
 * metric and first label (series.c), never to another's. */
#define SHM_SLOT_DROPPED   4
/* A series metrics_drop_unnamed freed (a queue or plugin no live
 * configuration names): a tombstone that lookups probe past and the next
 * new series on its probe chain takes (series.c). */
#define SHM_SLOT_FREED     5
int shm_slot_state(int *state);

/* Master: create and map; returns the fd to pass to children, or -1. */
int shm_create(void);
/* Child: map an inherited fd. 0 or -1. */
int shm_attach(int fd);
/* The mapped region, or NULL before create/attach (everything then no-ops). */
struct shm_region *shm_region(void);

/* The DLQ monitors' carried record (dlqcarry.h), or NULL without a region. */
struct dlqcarry *shm_dlq_carry(void);

/* Worker: handler threads [0, n) exist (their job records may be in use):
 * called before each thread starts. 0, or -1 when n exceeds SHM_JOBS. */
int shm_jobs_grow(int proc_slot, int n);
/* Master: how many job records of the slot its worker had (at most SHM_JOBS). */
int shm_jobs_count(int proc_slot);
/* The check value of a configuration's queue and plugin names, in order
 * (struct shm_proc's names): what job records' indices point at. */
uint32_t shm_names_of(const struct config *c);
/* Worker, at its start: its configuration's shm_names_of. */
void shm_proc_names(int proc_slot, uint32_t names);
/* Worker: note a job of the configuration's queue and plugin (their
 * indices) running on handler thread idx (< the shm_jobs_grow count) as run
 * number attempt, and its end. Returns idx, or -1 without a region. The
 * index is kept per thread so a fatal signal handler can name the job
 * (shm_mark_crash). */
int shm_job_begin(int proc_slot, int idx, int queue, int plugin, const char *message_id,
                  int attempt);
void shm_job_end(int proc_slot, int idx);
/* Async-signal-safe: record that this thread's job crashed the process. */
void shm_mark_crash(int proc_slot);
/* The index of the job this thread is running (shm_job_begin), or -1. */
int shm_thread_job(void);

/* Worker: the job at idx (shm_job_begin) is to count as having crashed the
 * process when it ends (a transactional handler past its time limit). */
void shm_mark_job_crash(int proc_slot, int idx);
/* Why a worker asks to be replaced (struct shm_proc's replace). */
enum shm_replace {
    SHM_REPLACE_NONE = 0,
    SHM_REPLACE_TIMEOUT = 1, /* a handler thread that cannot be stopped ran past its limit */
    SHM_REPLACE_RSS = 2,     /* recycled: its resident memory passed worker_max_rss */
    SHM_REPLACE_JOBS = 3     /* recycled: it ran its share of worker_max_jobs */
};
/* Worker: ask the master to start a replacement for this worker at once and
 * let it drain, as a reload drains the old generation: no job it holds is
 * counted against (it is not a crash).
 * Master: take such a request (its reason once per request, else NONE). */
void shm_ask_replace(int proc_slot, enum shm_replace why);
enum shm_replace shm_take_replace(int proc_slot);

/* Whether this process should give the (queue, plugin) warning now: 1 when
 * none was given in the last `every` seconds by any process (and records
 * now as given), else 0. Without a region: always 1. */
int shm_advice_due(const char *queue, const char *plugin, int64_t now, int every);

/* The rate limit's slot named name (ratelimit.c), claimed when absent; NULL
 * without a region or when the table is full. */
struct shm_limit *shm_limit_slot(const char *name);

/* Worker: record a dead letter twice sent (after the DLQ accepted it). */
void shm_dlq_event(const char *queue, const char *plugin, const char *reason,
                   const char *message_id, const char *key);

/*
 * Master: copy the events after *cursor (a sequence number; start at 0) into
 * out, oldest first, at most max; *cursor advances past what was read.
 * *lost (may be NULL) counts events overwritten before they were read.
 * Returns the number copied.
 */
size_t shm_dlq_read(uint64_t *cursor, struct shm_dlq_event *out, size_t max, uint64_t *lost);

#endif
