/*
 * shm.h - the one shared memory region of a twiced instance: a table of
 * processes (what each worker is running right now, so the master can say
 * which message a crashed worker was on) and the metrics series. Created
 * by the master as a memfd before any worker exists, inherited by workers.
 * Every field written by more than one process is accessed atomically.
 */
#ifndef TWICE_SHM_H
#define TWICE_SHM_H

#include <stddef.h>
#include <stdint.h>

#define SHM_PROCS 600   /* worker slots: 2 generations of up to 256, reused */
#define SHM_JOBS 64     /* running jobs tracked per worker */
#define SHM_SERIES 8192 /* metric series */
#define SHM_LABEL 96    /* bytes per label value, NUL included */

struct shm_job {
    int used; /* atomic */
    char queue[64];
    char plugin[64];
    char message_id[128];
};

struct shm_proc {
    int pid;         /* atomic; 0 when the slot is free */
    int generation;
    int crashed_job; /* atomic: index of the job whose thread faulted, -1 */
    struct shm_job jobs[SHM_JOBS];
};

struct shm_series {
    int state;       /* atomic: 0 free, 1 being written, 2 ready */
    int metric;
    int proc;        /* per-process gauges: the process slot; -1 otherwise */
    char labels[3][SHM_LABEL];
    uint64_t value;  /* atomic: a counter, or a double's bits for gauges/sums */
};

struct shm_region {
    uint32_t magic;
    uint32_t size;
    struct shm_proc procs[SHM_PROCS];
    struct shm_series series[SHM_SERIES];
};

/* Master: create and map; returns the fd to pass to children, or -1. */
int shm_create(void);
/* Child: map an inherited fd. 0 or -1. */
int shm_attach(int fd);
/* The mapped region, or NULL before create/attach (everything then no-ops). */
struct shm_region *shm_region(void);

/* Worker: note a job running on this thread (returns its index or -1 when
 * the table is full), and its end. The index is kept per thread so a fatal
 * signal handler can name the job (shm_mark_crash). */
int shm_job_begin(int proc_slot, const char *queue, const char *plugin, const char *message_id);
void shm_job_end(int proc_slot, int idx);
/* Async-signal-safe: record that this thread's job crashed the process. */
void shm_mark_crash(int proc_slot);

#endif
