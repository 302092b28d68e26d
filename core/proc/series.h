/*
 * series.h - the metric series table of the shared region (shm.h), for
 * metrics.c alone: a series found or made by (metric, process, labels),
 * dropped and freed, and the walks over the series that exist. What a metric
 * is, and the API the rest of twiced counts with, is metrics.h's.
 */
#ifndef TWICE_SERIES_H
#define TWICE_SERIES_H

#include "shm.h"

#include <stdint.h>

/* The series of metric m for proc (-1 unless a per-process gauge) and the
 * label values l1..l3 (NULL as "", each kept to what a slot holds), made
 * when absent if create; NULL when absent (and not made), the table is full
 * (counted and said once: series_unrecorded) or the region is not mapped.
 * one: m is a gauge of one series per first label (metrics_gauge_only),
 * whose series hash on that label alone. The pointer is the caller's to
 * update until its update is done, never kept (series_free_if). */
struct shm_series *series_find(int m, int one, int proc, const char *l1, const char *l2,
                               const char *l3, int create);

/* Whether a stored label value is want as the table would store it: cut as
 * series_find cuts it. */
int series_label_is(const char *stored, const char *want);

/* The labels and value of a one gauge's slot copied into out and *v as a
 * render reads them, while the gauge's writer may be giving the slot other
 * labels: 0 when the copy is of one series, else -1 (leave it out). */
int series_copy_labels(const struct shm_series *s, char out[3][SHM_LABEL], uint64_t *v);

/* A walk over the listed series (series_listed, series_ready_slot) by one of
 * the master's threads: no series is freed (series_free_if) until it ends. */
void series_walk_begin(void);
void series_walk_end(void);

/* How many slots were ever listed: the walk's bound (creation order). */
static inline int
series_listed(const struct shm_region *r)
{
    int n = __atomic_load_n(&r->series_listed, __ATOMIC_ACQUIRE);
    return n < SHM_SERIES ? n : SHM_SERIES;
}

/* The slot of the k-th listed series when it is ready; -1 while it is being
 * listed or written, and when it was dropped, freed or abandoned. */
static inline int
series_ready_slot(const struct shm_region *r, int k)
{
    int slot = __atomic_load_n(&r->series_order[k], __ATOMIC_ACQUIRE) - 1;
    return slot >= 0 && __atomic_load_n(&r->series[slot].state, __ATOMIC_ACQUIRE) == 2 ? slot : -1;
}

/* Master: the values of proc_slot's series (per-process gauges) set to 0. */
void series_forget_proc(int proc_slot);

/* Drop every ready series of m (process -1) with first label l1 but the one
 * of (l1, l2): metrics_gauge_only's, for m's single writer. */
void series_drop_siblings(int m, const char *l1, const char *l2);

/* Whether the ready or dropped series s is to be freed (series_free_if);
 * called under the table's lock, s's labels read with series_copy_labels. */
typedef int (*series_dead_fn)(void *arg, const struct shm_series *s);

/* Master: free every ready or dropped series dead() says is, and clear the
 * tombstones no probe chain needs: their slots take new series. Only series
 * no process can update any more. Returns how many were freed, or -1 (the
 * table's lock was not taken). */
int series_free_if(series_dead_fn dead, void *arg);

/* The slots in use: series made and not freed (dropped and abandoned ones
 * included, tombstones not); 0 before the region is mapped. A counter kept
 * where series are made and freed: no scan, nothing on the update path. */
int series_in_use(void);

/* Whether the warning of a table nearly full is due now, given in_use of
 * capacity slots: 1 when use passed 90% and *warned was 0 (which it sets);
 * *warned goes back to 0 once use fell below 80%. Pure. */
int series_use_alarm(int *warned, int in_use, int capacity);

#endif
