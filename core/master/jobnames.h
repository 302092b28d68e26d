/*
 * jobnames.h - the queue and plugin names of a generation's configuration,
 * by index: what the job records of its workers in shared memory point at
 * (struct shm_job). The master keeps them for as long as one of those
 * workers lives, past the generation itself (a reload frees the old one
 * while its workers drain), so a crash is named whole whenever it comes.
 * Only the master's main thread uses them; not for the workers.
 */
#ifndef TWICE_JOBNAMES_H
#define TWICE_JOBNAMES_H

#include <stdint.h>

struct config;
struct jobnames;

/* A copy of c's queue and plugin names, held once (by the generation);
 * NULL when out of memory (deaths are then named without them). */
struct jobnames *jobnames_new(const struct config *c);
/* Hold n once more (a worker started with it); returns n (NULL: NULL). */
struct jobnames *jobnames_hold(struct jobnames *n);
/* Let go of one hold; the last one frees n. NULL: nothing. */
void jobnames_drop(struct jobnames *n);

/* The names of a job record's queue and plugin indices into *queue and
 * *plugin (pointing into n): 1 when both exist and check, the worker's
 * word for its configuration's names (struct shm_proc's names), is n's
 * own, else 0 with both "?": a record is the worker's word, never trusted
 * to index the master's memory. */
int jobnames_get(const struct jobnames *n, int queue, int plugin, uint32_t check,
                 const char **queue_name, const char **plugin_name);

/* Whether n (NULL: no) has a plugin (plugin) or queue named name, and
 * whether check (a worker's word, struct shm_proc's names) is n's own: for
 * freeing the metric series of names no live configuration has. */
int jobnames_has(const struct jobnames *n, const char *name, int plugin);
int jobnames_checks(const struct jobnames *n, uint32_t check);

#endif
